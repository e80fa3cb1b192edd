// SPDX-License-Identifier: Apache-2.0
// qo_gf128_mul: the GCM multiplication in GF(2^128), combinational, so that
// GHASH absorbs one 128-bit block per clock (Y <= (Y ^ X) * H).
// Bit order is GCM's: [127] (the MSB of byte 0) is the coefficient of x^0.
//
// A carry-less product by two levels of Karatsuba (128 = 2 x 64 = 4 x 32:
// nine 32 x 32 products instead of sixteen, 9,216 partial-product ANDs
// instead of 16,384, with the XOR trees shrinking alike), then the
// reduction by x^128 + x^7 + x^2 + x + 1. Why: the multiplier is one of the
// largest blocks of the RX core (9,852 xc7 LUTs as SP 800-38D Algorithm 1's
// full AND-XOR matrix). The loops are over whole vectors, so simulators take
// a few hundred vector steps per product, not 16,384 single-bit ones.
module qo_gf128_mul (
    input  wire [127:0] a,
    input  wire [127:0] b,
    output reg  [127:0] p
);
    function [63:0] clmul32;        // coefficient k at bit k
        input [31:0] x;
        input [31:0] y;
        integer i;
        begin
            clmul32 = 64'd0;
            for (i = 0; i < 32; i = i + 1)
                clmul32 = clmul32 ^ ({64{y[i]}} & ({32'd0, x} << i));
        end
    endfunction

    function [127:0] clmul64;
        input [63:0] x;
        input [63:0] y;
        reg [63:0] lo, hi, mid;
        begin
            lo  = clmul32(x[31:0], y[31:0]);
            hi  = clmul32(x[63:32], y[63:32]);
            mid = clmul32(x[31:0] ^ x[63:32], y[31:0] ^ y[63:32]) ^ lo ^ hi;
            clmul64 = {hi, lo} ^ {32'd0, mid, 32'd0};
        end
    endfunction

    function [127:0] rev128;        // GCM bit order <-> coefficient k at bit k
        input [127:0] v;
        integer i;
        for (i = 0; i < 128; i = i + 1) rev128[i] = v[127 - i];
    endfunction

    reg [127:0] ar, br, lo, hi, mid;
    reg [255:0] c;
    integer i;
    always @* begin
        ar  = rev128(a);
        br  = rev128(b);
        lo  = clmul64(ar[63:0], br[63:0]);
        hi  = clmul64(ar[127:64], br[127:64]);
        mid = clmul64(ar[63:0] ^ ar[127:64], br[63:0] ^ br[127:64]) ^ lo ^ hi;
        c   = {hi, lo} ^ {64'd0, mid, 64'd0};
        // x^i = x^(i-128) * (x^7 + x^2 + x + 1) for i >= 128, from the top
        // down (a reduced bit lands at most at i - 121)
        for (i = 254; i >= 128; i = i - 1)
            c = c ^ ({256{c[i]}} & ({248'd0, 8'h87} << (i - 128)));
        p = rev128(c[127:0]);
    end
endmodule
