// SPDX-License-Identifier: Apache-2.0
// qo_frame_hdr: the header windows and the header fields quicoff_rx and
// quicoff_tx share (DATA_W = 128: 8 beats make the 128-byte window).
//
// Why: a 128-byte header window per frame slot (16 of them in flip-flops,
// each read through a 16:1 slot multiplexer by several stages) was a large
// part of the pipelined cores. Here there are two windows, by slot parity:
// the one the ingress slot fills and the one the parse stage reads. Parse
// takes 4 clocks a frame, so it has finished a slot before the slot two
// behind it starts; the caller holds a new frame's first beat otherwise
// (only frames shorter than 4 beats are that fast). In its last clock the
// parse stage keeps, per slot, the fields below instead of the window.
//
// The fields are combinational on the parse stage's window and the
// qo_frame_parse results of that frame. They come from one window at the
// UDP header (l4 is the IP header's offset, 14 or 18, plus 4 x IHL or 40:
// 2 mod 4 and below 128, so the shift is by l4[6:2] words), then short
// shifts by pn_off - l4 (9 + the DCID length, < 64), instead of a shifter
// of the whole window per field by offsets Yosys cannot bound.
module qo_frame_hdr #(
    parameter SAMPLE = 1                  // 1: the HP sample as it arrived (RX)
) (
    input  wire          clk,
    // ingress: a beat of the frame in slot w_odd's parity
    input  wire          we,
    input  wire [15:0]   w_beat,          // its beat number in the frame
    input  wire          w_odd,
    input  wire [127:0]  w_data,
    // the parse stage's window (bytes 0..127 of its frame, zero past a
    // short frame's last beat)
    input  wire          r_odd,
    output wire [1023:0] hdr,
    // the parse results of that frame
    input  wire          is4,
    input  wire [15:0]   l3,
    input  wire [15:0]   l4,
    input  wire [15:0]   pn_off,
    input  wire [4:0]    dcid_len,
    output wire [63:0]   udph,            // the UDP header, frame byte order
    output wire [255:0]  qhdr,            // 32 bytes from the QUIC first byte, frame byte order
    output wire [7:0]    first,           // the QUIC first byte
    output reg  [159:0]  dcid,            // the DCID, first byte at [159:152], zero past dcid_len
    output wire [31:0]   pnb,             // the 4 bytes at the PN offset, first at [31:24]
    output wire [127:0]  samp,            // the 16 bytes 4 after the PN offset, frame byte order (SAMPLE)
    output reg  [20:0]   psum,            // UDP pseudo-header addresses + ports, 16-bit word sum
    output wire          zcs              // IPv4 with a UDP checksum of 0 (none)
);
    reg [1023:0] hwin0, hwin1;
    always @(posedge clk)
        if (we && w_beat < 8) begin
            // a window restarts at zero so that a short frame never parses
            // bytes of the frame before it
            if (w_odd) begin
                if (w_beat == 0) hwin1 <= {896'd0, w_data};
                else hwin1[w_beat[2:0]*128 +: 128] <= w_data;
            end else begin
                if (w_beat == 0) hwin0 <= {896'd0, w_data};
                else hwin0[w_beat[2:0]*128 +: 128] <= w_data;
            end
        end
    assign hdr = r_odd ? hwin1 : hwin0;

    // byte k of uw is byte l4 + k of the frame, zero past the window
    localparam UWB = 8 + 1 + 31 + 4 + 16;        // up to the sample's end at the longest DCID
    wire [6:0]       l4_w   = {l4[6:2], 2'b10};
    wire [8*UWB-1:0] uw     = hdr >> {l4_w, 3'b000};
    wire [5:0]       pn_rel = pn_off[5:0] - l4[5:0];
    wire [8*UWB-1:0] uw_pn  = uw >> {pn_rel, 3'b000};

    assign udph  = uw[63:0];
    assign qhdr  = uw[8*8 +: 256];               // q = l4 + 8
    assign first = uw[8*8 +: 8];
    assign pnb   = {uw_pn[7:0], uw_pn[15:8], uw_pn[23:16], uw_pn[31:24]};
    assign zcs   = is4 && {uw[55:48], uw[63:56]} == 16'd0;
    generate if (SAMPLE) begin : sample
        wire [8*UWB-1:0] uw_s = uw >> {pn_rel + 6'd4, 3'b000};
        assign samp = uw_s[127:0];
    end else begin : nosample
        assign samp = 128'd0;
    end endgenerate

    // (window bytes by direct part-selects, not a function: @* does not see
    // the module variables a function reads)
    integer i;
    reg [31:0] s32;
    reg [15:0] ja, jb;
    always @* begin
        for (i = 0; i < 20; i = i + 1)            // q + 1 = l4 + 9
            dcid[159 - 8*i -: 8] = (i < dcid_len) ? uw[8*(9 + i) +: 8] : 8'd0;
        s32 = {uw[7:0], uw[15:8]} + {uw[23:16], uw[31:24]};
        if (is4) begin
            for (i = 0; i < 4; i = i + 1) begin
                ja = l3 + 12 + 2*i;
                jb = l3 + 13 + 2*i;
                s32 = s32 + {hdr[8*ja[6:0] +: 8], hdr[8*jb[6:0] +: 8]};
            end
        end else begin
            for (i = 0; i < 16; i = i + 1) begin
                ja = l3 + 8 + 2*i;
                jb = l3 + 9 + 2*i;
                s32 = s32 + {hdr[8*ja[6:0] +: 8], hdr[8*jb[6:0] +: 8]};
            end
        end
        psum = s32[20:0];
    end
endmodule
