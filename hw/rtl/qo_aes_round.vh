// SPDX-License-Identifier: Apache-2.0
// What an AES pipeline computes around its S-boxes, included by qo_aes_deep.v:
// the S-box table (for ROM contents), the rest of a round after SubBytes, and
// the key schedule of a 256-bit key window cut where a register can sit.
// qo_aes_pipe.v keeps its own copies of the first two: changing that file
// would make the RX and TX cores' routed figures those of other RTL (hours of
// place and route each); it goes when the cores move to qo_aes_deep.
//
// Byte order: byte 0 of a block is bits [127:120] (FIPS-197 order).

// the S-box, entry i at [8i+7:8i]: ROM contents as one constant (Yosys fills
// a memory from it at once; evaluating an S-box function per entry is slow)
localparam [2047:0] QO_SBOX_TAB = 2048'h16bb54b00f2d99416842e6bf0d89a18cdf2855cee9871e9b948ed9691198f8e19e1dc186b95735610ef6034866b53e708a8bbd4b1f74dde8c6b4a61c2e2578ba08ae7a65eaf4566ca94ed58d6d37c8e779e4959162acd3c25c2406490a3a32e0db0b5ede14b8ee4688902a22dc4f816073195d643d7ea7c41744975fec130ccdd2f3ff1021dab6bcf5389d928f40a351a89f3c507f02f94585334d43fbaaefd0cf584c4a39becb6a5bb1fc20ed00d153842fe329b3d63b52a05a6e1b1a2c830975b227ebe28012079a059618c323c7041531d871f1e5a534ccf73f362693fdb7c072a49cafa2d4adf04759fa7dc982ca76abd7fe2b670130c56f6bf27b777c63;

function [7:0] qo_xtime;  // multiply by x in GF(2^8)
    input [7:0] b;
    qo_xtime = {b[6:0], 1'b0} ^ (b[7] ? 8'h1b : 8'h00);
endfunction

function [7:0] qo_rcon;
    input [3:0] i;
    case (i)
        4'd1: qo_rcon = 8'h01; 4'd2: qo_rcon = 8'h02; 4'd3: qo_rcon = 8'h04;
        4'd4: qo_rcon = 8'h08; 4'd5: qo_rcon = 8'h10; 4'd6: qo_rcon = 8'h20;
        4'd7: qo_rcon = 8'h40; 4'd8: qo_rcon = 8'h80; 4'd9: qo_rcon = 8'h1b;
        4'd10: qo_rcon = 8'h36; default: qo_rcon = 8'h00;
    endcase
endfunction

// The rest of a round after SubBytes: ShiftRows, MixColumns (unless final).
function [127:0] qo_round_rest;
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
                o[127 - 32*c      -: 8] = qo_xtime(t[4*c]) ^ qo_xtime(t[4*c+1]) ^ t[4*c+1] ^ t[4*c+2] ^ t[4*c+3];
                o[127 - 32*c - 8  -: 8] = t[4*c] ^ qo_xtime(t[4*c+1]) ^ qo_xtime(t[4*c+2]) ^ t[4*c+2] ^ t[4*c+3];
                o[127 - 32*c - 16 -: 8] = t[4*c] ^ t[4*c+1] ^ qo_xtime(t[4*c+2]) ^ qo_xtime(t[4*c+3]) ^ t[4*c+3];
                o[127 - 32*c - 24 -: 8] = qo_xtime(t[4*c]) ^ t[4*c] ^ t[4*c+1] ^ t[4*c+2] ^ qo_xtime(t[4*c+3]);
            end
        end
        qo_round_rest = o;
    end
endfunction

// The key schedule on a window of 256 bits (AES-128: {w[4r..4r+3], unused};
// AES-256: {w[4r..4r+7]}), leaving window r for window r+1, in three parts
// so that registers can sit between them: the word that goes through SubWord
// (chosen by the key size before the S-boxes, so one SubWord serves both
// sizes), the round constant to add after it, and the XOR chain.
function [31:0] qo_kw_subword_in;
    input [255:0] kw;
    input         a256;
    input [3:0]   r;
    begin
        if (!a256)
            qo_kw_subword_in = {kw[151:128], kw[159:152]};  // RotWord(w[4r+3])
        else if (r[0] == 1'b0)
            qo_kw_subword_in = {kw[23:0], kw[31:24]};       // RotWord(w[4r+7])
        else
            qo_kw_subword_in = kw[31:0];                    // w[4r+7]
    end
endfunction

function [31:0] qo_kw_rcon;
    input       a256;
    input [3:0] r;
    begin
        if (!a256)
            qo_kw_rcon = {qo_rcon(r + 4'd1), 24'h0};
        else if (r[0] == 1'b0)
            qo_kw_rcon = {qo_rcon(r[3:1] + 4'd1), 24'h0};
        else
            qo_kw_rcon = 32'h0;
    end
endfunction

function [255:0] qo_kw_chain;
    input [255:0] kw;
    input         a256;
    input [31:0]  temp;  // SubWord of qo_kw_subword_in, plus qo_kw_rcon
    reg [31:0] n0, n1, n2, n3;
    begin
        n0 = kw[255:224] ^ temp;
        n1 = kw[223:192] ^ n0;
        n2 = kw[191:160] ^ n1;
        n3 = kw[159:128] ^ n2;
        qo_kw_chain = a256 ? {kw[127:0], n0, n1, n2, n3} : {n0, n1, n2, n3, 128'h0};
    end
endfunction
