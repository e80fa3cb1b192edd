// SPDX-License-Identifier: Apache-2.0
// Helper functions both pipelines use, included inside a module body (after
// its NB localparam) because Verilog-2005 has no packages that Yosys,
// Icarus and Verilator all accept.

function [127:0] bswap;  // frame byte order (byte 0 at [7:0]) <-> AES order (byte 0 at [127:120])
    input [127:0] x;
    integer i;
    for (i = 0; i < 16; i = i + 1) bswap[8*i +: 8] = x[127 - 8*i -: 8];
endfunction

function [4:0] popc;     // bytes kept in a beat
    input [NB-1:0] m;
    integer i;
    begin
        popc = 0;
        for (i = 0; i < NB; i = i + 1) popc = popc + m[i];
    end
endfunction

function [31:0] sum_words16;   // 8 big-endian 16-bit words of a frame-order block
    input [127:0] b;
    integer i;
    begin
        sum_words16 = 0;
        for (i = 0; i < 8; i = i + 1)
            sum_words16 = sum_words16 + {b[16*i +: 8], b[16*i + 8 +: 8]};
    end
endfunction

function [15:0] fold16;  // ones' complement fold of a 32-bit sum
    input [31:0] s;
    reg [31:0] t;
    begin
        t = s[15:0] + s[31:16];
        t = t[15:0] + t[31:16];
        fold16 = t[15:0];
    end
endfunction
