// SPDX-License-Identifier: Apache-2.0
// qo_frame_buf: the store-and-forward frame buffer quicoff_rx and quicoff_tx
// share. Both pipelines hold a whole frame before anything of it leaves (the
// UDP checksum sits before the bytes it covers; quicoff_rx.v says more).
//
// Write side: beats of the incoming AXI4-Stream; it counts them, keeps the
// first 128 bytes as a flat header window the parser reads in one clock,
// latches the frame length at tlast and flags a frame longer than MAXBEATS
// (its extra beats are not stored; the pipeline drops it). restart makes it
// ready for the next frame.
// Read side, asynchronous (LUT RAM): two 16-byte windows at any byte offsets
// (GHASH input, tag, HP sample; the second is a second read port) and one
// whole beat (the output stream). With STORE = 0 the beats are not kept here
// (quicoff_rx keeps them in one block-RAM qo_frame_mem shared by its slots)
// and the read ports give zeros; with HDR = 0 there is no header window
// (quicoff_rx keeps two for all its slots and the fields its stages need).
module qo_frame_buf #(
    parameter DATA_W   = 128,
    parameter STORE    = 1,
    parameter HDR      = 1,
    parameter MAXBEATS = 128,
    parameter NB       = DATA_W / 8,
    parameter MW       = $clog2(MAXBEATS)
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              restart,
    input  wire              in_beat,
    input  wire [DATA_W-1:0] in_data,
    input  wire [NB-1:0]     in_keep,
    input  wire              in_last,
    output reg  [15:0]       wbeat,     // beats received of this frame
    output reg               ovf,       // a beat did not fit
    output reg  [15:0]       flen,      // frame length in bytes (valid after tlast)
    output reg  [1023:0]     hdr,       // bytes 0..127, zero past the frame's end
    input  wire [15:0]       win_off,
    output wire [127:0]      win,
    input  wire [15:0]       win_b_off,   // a second window port
    output wire [127:0]      win_b,
    input  wire [MW-1:0]     beat_idx,
    output wire [DATA_W-1:0] beat
);
    `include "qo_util.vh"

    reg [DATA_W-1:0] fbuf [0:MAXBEATS-1];

    always @(posedge clk) begin
        if (rst || restart) begin
            wbeat <= 0;
            ovf   <= 0;
        end else if (in_beat) begin
            if (wbeat < MAXBEATS) begin
                if (STORE) fbuf[wbeat[MW-1:0]] <= in_data;
            end else
                ovf <= 1'b1;
            // the header window restarts at zero so that a short frame never
            // parses bytes of the frame before it
            if (!HDR) hdr <= 1024'd0;
            else if (wbeat == 0) hdr <= {896'd0, in_data};
            else if (wbeat < 8) hdr[wbeat[2:0]*128 +: 128] <= in_data;
            wbeat <= wbeat + 1;
            if (in_last) flen <= {wbeat[11:0], 4'b0} + popc(in_keep);
        end
    end

    generate if (STORE) begin : rd
        wire [MW-1:0] wb   = win_off[MW+3:4];
        wire [255:0]  win2 = {fbuf[wb + 1'b1], fbuf[wb]};
        assign win  = win2 >> {win_off[3:0], 3'b000};
        wire [MW-1:0] wbb   = win_b_off[MW+3:4];
        wire [255:0]  win2b = {fbuf[wbb + 1'b1], fbuf[wbb]};
        assign win_b = win2b >> {win_b_off[3:0], 3'b000};
        assign beat = fbuf[beat_idx];
    end else begin : nord
        assign win = 128'd0;
        assign win_b = 128'd0;
        assign beat = {DATA_W{1'b0}};
    end endgenerate
endmodule
