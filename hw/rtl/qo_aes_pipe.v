// SPDX-License-Identifier: Apache-2.0
// qo_aes_pipe: fully pipelined AES-128/AES-256 encryption, one 128-bit block
// per clock, latency 15 clocks for both key sizes.
//
// Why key expansion in hardware, on the fly: every block carries its own raw
// key (256 bits; AES-128 uses the first 128) and the round keys are computed
// stage by stage next to the data. The key memory then holds 32 bytes per key
// instead of 240 expanded bytes (7.5x less block RAM for 2 key phases + HP key
// per entry), a key update is one write, and back-to-back blocks of different
// connections need no key-schedule stall. The price is 4 extra S-boxes per
// round (20 per stage instead of 16), shared by the two key sizes.
//
// Why one 15-stage pipeline for both sizes: AES-128 blocks pass stages 11..14
// unchanged, so the latency is the same for every block and results come out
// in issue order; the caller tags blocks with `in_tag` and gets them back.
//
// Why the stage registers sit after SubBytes: the 16 data S-boxes of a
// stage are then a ROM with a registered read, which is what block RAM is
// (ECP5 DP16KD: two 256 x 8 lookups per block, 8 per stage), instead of 16
// trees of ~160 LUT4. A stage computes the rest of the previous round
// (ShiftRows, MixColumns, AddRoundKey) and reads the S-boxes of its own;
// after the last stage ShiftRows and the last round key are applied to the
// output (one XOR level after the registers). AES-128 blocks leave round 10
// finished into `fin`, which carries them through stages 11..14. SBOX_BRAM
// picks the stages whose S-boxes go to block RAM (bit g-1 for stage g), and
// SBOX_BRAM_HALF those with half of them there; the others are the same
// registers with the S-boxes in logic. The 4 key-schedule
// S-boxes per stage stay in logic.
//
// Byte order: byte 0 of a block is bits [127:120] (FIPS-197 order).
module qo_aes_pipe #(
    parameter TAGW = 16,
    parameter [13:0] SBOX_BRAM = 14'h3fff,
    // stages with only their first 8 S-boxes (4 block RAMs) in block RAM:
    // a device's last few block RAMs need not wait for a whole stage's 8
    parameter [13:0] SBOX_BRAM_HALF = 14'h0000
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            in_valid,
    input  wire [127:0]    in_block,
    input  wire [255:0]    in_key,      // key bytes 0..31 at [255:0] MSB first
    input  wire            in_aes256,
    input  wire [TAGW-1:0] in_tag,
    output wire            out_valid,
    output wire [127:0]    out_block,
    output wire [TAGW-1:0] out_tag,
    // the block that leaves in the next clock (for a caller that reads a
    // block RAM for it: the read is registered)
    output wire            next_valid,
    output wire [TAGW-1:0] next_tag
);
`include "qo_sbox.vh"
`include "qo_sbox_tower.vh"

    // An S-box in logic. QO_SBOX_TOWER (set by tools/hw.sh for ECP5) picks the
    // tower-field inversion, the case table otherwise: on ECP5's LUT4 the
    // tower is the smaller one, on xc7's LUT6 the table (docs/hw.md
    // "A compact S-box"). Both are the same function, checked for all 256
    // inputs (tests/python/test_sbox_tower.py).
    function [7:0] sbox_logic;
        input [7:0] a;
`ifdef QO_SBOX_TOWER
        sbox_logic = qo_sbox_tower(a);
`else
        sbox_logic = qo_sbox(a);
`endif
    endfunction

    function [31:0] subword;
        input [31:0] w;
        subword = {sbox_logic(w[31:24]), sbox_logic(w[23:16]), sbox_logic(w[15:8]), sbox_logic(w[7:0])};
    endfunction

    function [7:0] xt;  // multiply by x in GF(2^8)
        input [7:0] b;
        xt = {b[6:0], 1'b0} ^ (b[7] ? 8'h1b : 8'h00);
    endfunction

    function [7:0] rcon;
        input [3:0] i;
        case (i)
            4'd1: rcon = 8'h01; 4'd2: rcon = 8'h02; 4'd3: rcon = 8'h04;
            4'd4: rcon = 8'h08; 4'd5: rcon = 8'h10; 4'd6: rcon = 8'h20;
            4'd7: rcon = 8'h40; 4'd8: rcon = 8'h80; 4'd9: rcon = 8'h1b;
            4'd10: rcon = 8'h36; default: rcon = 8'h00;
        endcase
    endfunction

    // The rest of a round after SubBytes: ShiftRows, MixColumns (unless final).
    function [127:0] round_f;
        input [127:0] s;
        input         final_round;
        reg [7:0] b [0:15];
        reg [7:0] t [0:15];
        reg [127:0] o;
        integer c, r;
        begin
            for (c = 0; c < 16; c = c + 1)
                b[c] = s[127 - 8*c -: 8];
            // ShiftRows: out(row r, col c) = in(row r, col c+r); byte index = 4*col + row
            for (c = 0; c < 4; c = c + 1)
                for (r = 0; r < 4; r = r + 1)
                    t[4*c + r] = b[4*((c + r) % 4) + r];
            for (c = 0; c < 4; c = c + 1) begin
                if (final_round) begin
                    o[127 - 32*c -: 32] = {t[4*c], t[4*c+1], t[4*c+2], t[4*c+3]};
                end else begin
                    o[127 - 32*c      -: 8] = xt(t[4*c]) ^ xt(t[4*c+1]) ^ t[4*c+1] ^ t[4*c+2] ^ t[4*c+3];
                    o[127 - 32*c - 8  -: 8] = t[4*c] ^ xt(t[4*c+1]) ^ xt(t[4*c+2]) ^ t[4*c+2] ^ t[4*c+3];
                    o[127 - 32*c - 16 -: 8] = t[4*c] ^ t[4*c+1] ^ xt(t[4*c+2]) ^ xt(t[4*c+3]) ^ t[4*c+3];
                    o[127 - 32*c - 24 -: 8] = xt(t[4*c]) ^ t[4*c] ^ t[4*c+1] ^ t[4*c+2] ^ xt(t[4*c+3]);
                end
            end
            round_f = o;
        end
    endfunction

    // Key window after stage r-1 -> window for stage r (see header).
    // AES-128: window = {w[4r..4r+3], unused}; AES-256: {w[4r..4r+7]}.
    // The word that goes through SubWord is chosen before the S-boxes (the
    // 4th word, rotated, for AES-128; the 8th, rotated or not, for AES-256),
    // so a stage has 4 key-schedule S-boxes, not 4 per key size: the two
    // sizes' S-boxes were 4 more trees of ~160 LUT4 in each of 10 stages.
    function [255:0] next_kw;
        input [255:0] kw;
        input         a256;
        input [3:0]   r;      // index of the window being left (round r-1's window is kw)
        reg [31:0] sw_in, temp, n0, n1, n2, n3;
        begin
            if (!a256)
                sw_in = {kw[151:128], kw[159:152]};
            else if (r[0] == 1'b0)
                sw_in = {kw[23:0], kw[31:24]};
            else
                sw_in = kw[31:0];
            temp = subword(sw_in);
            if (!a256)
                temp = temp ^ {rcon(r + 4'd1), 24'h0};
            else if (r[0] == 1'b0)
                temp = temp ^ {rcon(r[3:1] + 4'd1), 24'h0};
            n0 = kw[255:224] ^ temp;
            n1 = kw[223:192] ^ n0;
            n2 = kw[191:160] ^ n1;
            n3 = kw[159:128] ^ n2;
            next_kw = a256 ? {kw[127:0], n0, n1, n2, n3} : {n0, n1, n2, n3, 128'h0};
        end
    endfunction

    // the S-box as one constant for the ROMs' contents (entry i at [8i+7:8i]):
    // Yosys fills a ROM from it at once, where evaluating qo_sbox() 256 times
    // per ROM in an initial block took it minutes
    localparam [2047:0] SBOX_TAB = 2048'h16bb54b00f2d99416842e6bf0d89a18cdf2855cee9871e9b948ed9691198f8e19e1dc186b95735610ef6034866b53e708a8bbd4b1f74dde8c6b4a61c2e2578ba08ae7a65eaf4566ca94ed58d6d37c8e779e4959162acd3c25c2406490a3a32e0db0b5ede14b8ee4688902a22dc4f816073195d643d7ea7c41744975fec130ccdd2f3ff1021dab6bcf5389d928f40a351a89f3c507f02f94585334d43fbaaefd0cf584c4a39becb6a5bb1fc20ed00d153842fe329b3d63b52a05a6e1b1a2c830975b227ebe28012079a059618c323c7041531d871f1e5a534ccf73f362693fdb7c072a49cafa2d4adf04759fa7dc982ca76abd7fe2b670130c56f6bf27b777c63;

    reg [127:0]    st  [0:14];     // st[0]: after whitening; st[g]: round g's S-box outputs
    reg [127:0]    fin [11:14];    // an AES-128 block after round 10
    reg [255:0]    kw  [0:14];
    reg            a2  [0:14];
    reg            vld [0:14];
    reg [TAGW-1:0] tg  [0:14];

    // stage 0: whitening with round key 0
    always @(posedge clk) begin
        vld[0] <= in_valid & ~rst;
        if (in_valid) begin
            st[0] <= in_block ^ in_key[255:128];
            kw[0] <= in_key;
            a2[0] <= in_aes256;
            tg[0] <= in_tag;
        end
    end

    genvar g;
    generate
        for (g = 1; g <= 14; g = g + 1) begin : stage
            // Stages 11..14 run AES-256 blocks only: an AES-128 block left
            // round 10 into `fin` and its key window is never read again, so
            // those stages expand the key as AES-256 whatever the block (no
            // key-size multiplexers, and stage 14's SubWord has no reader)
            wire [255:0] kwn   = next_kw(kw[g-1], (g > 10) ? 1'b1 : a2[g-1], g - 1);
            // the S-box inputs of round g: the whitened block, or round g-1
            // finished (its S-box outputs through ShiftRows, MixColumns and
            // its round key, kw[g-1]'s first half)
            wire [127:0] sin   = (g == 1) ? st[0] : round_f(st[g-1], 1'b0) ^ kw[g-1][255:128];
            // data moves only with a valid block: empty slots keep the
            // registers still (clock enables; it also saves power and makes
            // event-driven simulation of an idle pipeline free)
            always @(posedge clk) begin
                vld[g] <= vld[g-1] & ~rst;
                if (vld[g-1]) begin
                    kw[g] <= kwn;
                    a2[g] <= a2[g-1];
                    tg[g] <= tg[g-1];
                end
            end
            // SubBytes of round g: 256 x 8 ROMs with registered reads, two
            // reads each (a block RAM's two ports; Yosys's memory mapper also
            // fails on one ROM with 16 read ports)
            genvar c;
            for (c = 0; c < 16; c = c + 2) begin : sb
                if (SBOX_BRAM[g-1] || (SBOX_BRAM_HALF[g-1] && c < 8)) begin : bram
                    (* rom_style = "block" *) reg [7:0] rom [0:255];
                    integer i;
                    initial for (i = 0; i < 256; i = i + 1) rom[i] = SBOX_TAB[8*i +: 8];
                    always @(posedge clk)
                        if (vld[g-1]) begin
                            st[g][8*c +: 8]     <= rom[sin[8*c +: 8]];
                            st[g][8*c + 8 +: 8] <= rom[sin[8*c + 8 +: 8]];
                        end
                end else begin : logic_
                    always @(posedge clk)
                        if (vld[g-1]) begin
                            st[g][8*c +: 8]     <= sbox_logic(sin[8*c +: 8]);
                            st[g][8*c + 8 +: 8] <= sbox_logic(sin[8*c + 8 +: 8]);
                        end
                end
            end
            // AES-128 blocks are finished after round 10 and carried on
            if (g == 11) begin : finish
                always @(posedge clk)
                    if (vld[g-1]) fin[g] <= round_f(st[10], 1'b1) ^ kw[10][255:128];
            end else if (g > 11) begin : carry
                always @(posedge clk)
                    if (vld[g-1]) fin[g] <= fin[g-1];
            end
        end
    endgenerate

    assign out_valid = vld[14];
    assign out_block = a2[14] ? round_f(st[14], 1'b1) ^ kw[14][255:128] : fin[14];
    assign out_tag   = tg[14];
    assign next_valid = vld[13];
    assign next_tag   = tg[13];
endmodule
