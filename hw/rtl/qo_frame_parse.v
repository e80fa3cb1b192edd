// SPDX-License-Identifier: Apache-2.0
// qo_frame_parse: the Ethernet / 802.1Q / IPv4 / IPv6 / UDP / QUIC short
// header parser quicoff_rx and quicoff_tx share. One layer per clock, driven
// by the pipeline's FSM through step (1, 2, 3 in consecutive clocks), on the
// frame buffer's flat 128-byte header window. Results hold until the next
// frame's step 1.
//
// p_pass: not ours (not IPv4/IPv6 UDP, a fragment, IP options shorter than
// legal, an empty datagram, a long header or no QUIC fixed bit): the frame
// leaves unchanged. p_malf: ours but inconsistent (lengths past the frame or
// the IP packet, too short for the DCID). Offsets are bytes from the frame
// start: l3 IP header, l4 UDP header, q QUIC first byte, pn_off the packet
// number (after the table's DCID length).
module qo_frame_parse (
    input  wire          clk,
    input  wire [1:0]    step,
    input  wire [1023:0] hdr,
    input  wire [15:0]   flen,
    input  wire [4:0]    cfg_dcid_len,
    output reg           vlan,
    output reg           is4,
    output reg           is6,
    output reg  [15:0]   l3,
    output reg  [15:0]   l4,
    output reg  [15:0]   q,
    output reg  [15:0]   ip_end,
    output reg  [15:0]   udp_end,
    output reg  [15:0]   udplen,
    output reg  [15:0]   pn_off,
    output reg  [3:0]    ihl,
    output reg  [15:0]   iptot,       // IPv4 total length, IPv6 payload length
    output reg           p_pass,
    output reg           p_malf
);
    function [7:0] hb;   // header window byte
        input [15:0] i;
        hb = hdr[8*i[6:0] +: 8];
    endfunction

    // direct part-selects, not hb(): a continuous assignment through a
    // function that reads a module variable is not re-evaluated when it changes
    wire [15:0] l4p8 = l4 + 16'd8;
    wire [7:0]  b_l3 = hdr[8*l3[6:0] +: 8];
    wire [7:0]  b_q  = hdr[8*l4p8[6:0] +: 8];
    wire [3:0]  hp_ver = b_l3[7:4];

    always @(posedge clk) begin
        if (step == 2'd1) begin   // Ethernet and 802.1Q
            vlan <= ({hb(12), hb(13)} == 16'h8100);
            l3   <= ({hb(12), hb(13)} == 16'h8100) ? 16'd18 : 16'd14;
            is4  <= ({hb(12), hb(13)} == 16'h8100) ? ({hb(16), hb(17)} == 16'h0800) : ({hb(12), hb(13)} == 16'h0800);
            is6  <= ({hb(12), hb(13)} == 16'h8100) ? ({hb(16), hb(17)} == 16'h86dd) : ({hb(12), hb(13)} == 16'h86dd);
        end
        if (step == 2'd2) begin   // IPv4 / IPv6
            p_pass <= 1'b0; p_malf <= 1'b0;
            ihl   <= hb(l3) & 8'h0f;
            iptot <= is6 ? {hb(l3 + 4), hb(l3 + 5)} : {hb(l3 + 2), hb(l3 + 3)};   // v6: payload length
            if (is4) begin
                l4     <= l3 + {b_l3[3:0], 2'b00};
                ip_end <= l3 + {hb(l3 + 2), hb(l3 + 3)};
                if (hp_ver != 4'd4 || b_l3[3:0] < 4'd5 || hb(l3 + 9) != 8'd17 ||
                    ({hb(l3 + 6), hb(l3 + 7)} & 16'h3fff) != 16'd0)
                    p_pass <= 1'b1;
                else if ({hb(l3 + 2), hb(l3 + 3)} < {b_l3[3:0], 2'b00} + 16'd8 ||
                         l3 + {hb(l3 + 2), hb(l3 + 3)} > flen)
                    p_malf <= 1'b1;
            end else if (is6) begin
                l4     <= l3 + 16'd40;
                ip_end <= l3 + 16'd40 + {hb(l3 + 4), hb(l3 + 5)};
                if (hp_ver != 4'd6 || hb(l3 + 6) != 8'd17)
                    p_pass <= 1'b1;
                else if (l3 + 16'd40 + {hb(l3 + 4), hb(l3 + 5)} > flen)
                    p_malf <= 1'b1;
            end else
                p_pass <= 1'b1;
        end
        if (step == 2'd3) begin   // UDP and the QUIC first byte
            udplen  <= {hb(l4 + 4), hb(l4 + 5)};
            udp_end <= l4 + {hb(l4 + 4), hb(l4 + 5)};
            q       <= l4 + 16'd8;
            pn_off  <= l4 + 16'd9 + cfg_dcid_len;
            if (!p_pass && !p_malf) begin
                if ({hb(l4 + 4), hb(l4 + 5)} < 16'd8 || l4 + {hb(l4 + 4), hb(l4 + 5)} > ip_end)
                    p_malf <= 1'b1;
                else if ({hb(l4 + 4), hb(l4 + 5)} == 16'd8 || b_q[7] || !b_q[6])
                    p_pass <= 1'b1;        // empty, long header or no QUIC bit: not ours
                else if ({hb(l4 + 4), hb(l4 + 5)} < 16'd9 + cfg_dcid_len)
                    p_malf <= 1'b1;        // too short for the DCID
            end
        end
    end
endmodule
