// SPDX-License-Identifier: Apache-2.0
// qo_aes_deep: AES-128/AES-256 encryption, one 128-bit block per clock, three
// clocks a round: the AES pipeline for a clock of 100 MHz and more on the
// LFE5UM-85F, where qo_aes_pipe (one clock a round) routes at 59 MHz.
// Same ports and behaviour as qo_aes_pipe (keys expanded on the fly next to
// the data, a tag per block, AES-128 blocks carried through the AES-256
// rounds so that every block has the same latency), but LATENCY = 44 clocks
// instead of 15; no RX or TX core uses it yet (docs/hw.md, "What 100 MHz
// takes").
//
// Why three clocks a round, measured with the AES alone in a pin harness
// (nextpnr-ecp5, docs/hw.md): a round in one clock is the S-box block RAM's
// clock-to-out (5.6 ns without its output register), a route across the
// chip to the next stage's RAMs (the 8 RAMs of a stage sit in different
// block-RAM rows) and two LUT levels: 59 MHz. Two clocks, the S-box inputs
// registered: 73 MHz, the same clock-to-out and one long route. The RAMs'
// output registers on (qo_sbox_rom) and the key schedule's S-boxes in two
// halves: 79 MHz, now two long routes in one clock, RAM to logic to RAM.
// Three clocks (this module), each of those routes a clock of its own:
//   1. the S-box inputs into registers: the previous round's output
//      register through ShiftRows, MixColumns and the round key;
//      the key schedule's SubWord, first half (tower field: to the norm);
//   2. the RAMs take the address; SubWord, second half, and the round constant;
//   3. the RAMs' output registers; the key window's XOR chain.
// The S-boxes of the data are block RAMs in every round (112 DP16KD); the
// key schedule's 4 per round are logic, the tower-field form cut in two
// (qo_sbox_tower_halves.vh), so that no clock holds a whole S-box.
// The RAMs run every clock (no clock enable): a stage holds no state a
// later block depends on.
module qo_aes_deep #(
    parameter TAGW = 16
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
    // the block that leaves in the next clock
    output wire            next_valid,
    output wire [TAGW-1:0] next_tag
);
`include "qo_aes_round.vh"
`include "qo_sbox_tower.vh"
`include "qo_sbox_tower_halves.vh"
    localparam LATENCY = 1 + 3 * 14 + 1;

    function [47:0] subword_half1;
        input [31:0] w;
        subword_half1 = {qo_sbox_half1(w[31:24]), qo_sbox_half1(w[23:16]),
                         qo_sbox_half1(w[15:8]), qo_sbox_half1(w[7:0])};
    endfunction

    function [31:0] subword_half2;
        input [47:0] x;
        subword_half2 = {qo_sbox_half2(x[47:36]), qo_sbox_half2(x[35:24]),
                         qo_sbox_half2(x[23:12]), qo_sbox_half2(x[11:0])};
    endfunction

    // Per round g (1..14), by clock: sb_in, then the RAMs' address, then sb
    // (their output registers); beside them the key window kw[g-1] goes
    // through half1, half2 and the chain into kw[g].  v1, v2, v: a block is
    // in clock 1, 2, 3 of round g; a2 (AES-256) and tg (tag) move with it.
    reg [127:0]    st0;               // the whitened block
    wire [127:0]   sb     [1:14];     // round g's S-box outputs
    reg [127:0]    sb_in  [1:14];     // round g's S-box inputs
    reg [47:0]     half1  [1:14];
    reg [31:0]     temp   [1:14];     // SubWord + round constant
    reg [255:0]    kw1    [1:14], kw2 [1:14];
    reg [255:0]    kw     [0:14];
    reg            a2     [0:14], a21 [1:14], a22 [1:14];
    reg            v      [0:14], v1  [1:14], v2  [1:14];
    reg [TAGW-1:0] tg     [0:14], tg1 [1:14], tg2 [1:14];
    // an AES-128 block after round 10, carried three registers a round
    reg [127:0]    fin    [10:14], fin1 [11:14], fin2 [11:14];

    always @(posedge clk) begin
        v[0] <= in_valid & ~rst;
        st0 <= in_block ^ in_key[255:128];
        kw[0] <= in_key;
        a2[0] <= in_aes256;
        tg[0] <= in_tag;
    end

    genvar g;
    generate
        for (g = 1; g <= 14; g = g + 1) begin : stage
            // Rounds 11..14 run AES-256 blocks only: an AES-128 block left
            // round 10 into `fin`, and its key windows are never read again
            wire a256_1 = (g > 10) ? 1'b1 : a2[g-1];
            wire a256_2 = (g > 10) ? 1'b1 : a21[g];
            wire a256_3 = (g > 10) ? 1'b1 : a22[g];
            always @(posedge clk) begin  // clock 1
                v1[g] <= v[g-1] & ~rst;
                sb_in[g] <= (g == 1) ? st0 : qo_round_rest(sb[g-1], 1'b0) ^ kw[g-1][255:128];
                half1[g] <= subword_half1(qo_kw_subword_in(kw[g-1], a256_1, g - 1));
                kw1[g] <= kw[g-1];
                a21[g] <= a2[g-1];
                tg1[g] <= tg[g-1];
            end
            always @(posedge clk) begin  // clock 2 (the RAMs take sb_in)
                v2[g] <= v1[g] & ~rst;
                temp[g] <= subword_half2(half1[g]) ^ qo_kw_rcon(a256_2, g - 1);
                kw2[g] <= kw1[g];
                a22[g] <= a21[g];
                tg2[g] <= tg1[g];
            end
            always @(posedge clk) begin  // clock 3 (the RAMs' output registers)
                v[g] <= v2[g] & ~rst;
                kw[g] <= qo_kw_chain(kw2[g], a256_3, temp[g]);
                a2[g] <= a22[g];
                tg[g] <= tg2[g];
            end
            genvar c;
            for (c = 0; c < 16; c = c + 2) begin : sbox
                qo_sbox_rom rom (.clk(clk), .a(sb_in[g][8*c +: 8]), .b(sb_in[g][8*c + 8 +: 8]),
                                 .qa(sb[g][8*c +: 8]), .qb(sb[g][8*c + 8 +: 8]));
            end
            if (g == 10) begin : finish
                always @(posedge clk)
                    fin[10] <= qo_round_rest(sb[10], 1'b1) ^ kw[10][255:128];
            end else if (g > 10) begin : carry
                always @(posedge clk) begin
                    fin1[g] <= fin[g-1];
                    fin2[g] <= fin1[g];
                    fin[g] <= fin2[g];
                end
            end
        end
    endgenerate

    reg [127:0]    out_r;
    reg            out_v;
    reg [TAGW-1:0] out_t;
    always @(posedge clk) begin
        out_v <= v[14] & ~rst;
        out_t <= tg[14];
        // fin2[14]: the AES-128 block that entered with this AES-256 slot's
        // timing (fin[14] would be a clock late)
        out_r <= a2[14] ? qo_round_rest(sb[14], 1'b1) ^ kw[14][255:128] : fin2[14];
    end
    assign out_valid  = out_v;
    assign out_block  = out_r;
    assign out_tag    = out_t;
    assign next_valid = v[14];
    assign next_tag   = tg[14];
endmodule
