// SPDX-License-Identifier: Apache-2.0
// qo_gf128_mul: the GCM multiplication in GF(2^128) (NIST SP 800-38D 6.3),
// written as a carry-less 128x128 product followed by the reduction modulo
// x^128 + x^7 + x^2 + x + 1, so that synthesis sees balanced XOR trees
// instead of the 128-step shift-and-add chain of the specification.
// GCM's bit order: bit 0 of the block (the MSB of byte 0, here [127]) is the
// coefficient of x^0, so coefficients are read reversed.
module qo_gf128_mul (
    input  wire [127:0] a,
    input  wire [127:0] b,
    output wire [127:0] p
);
    reg [254:0] prod;
    reg [127:0] red;
    integer i, j, k;
    always @* begin
        prod = 255'd0;
        for (i = 0; i < 128; i = i + 1)
            for (j = 0; j < 128; j = j + 1)
                prod[i + j] = prod[i + j] ^ (a[127 - i] & b[127 - j]);
        // fold x^k (k >= 128) onto x^(k-128) * (x^7 + x^2 + x + 1); the terms
        // from k >= 249 land above 127 again and are folded by the same loop
        // because it runs from the top down.
        for (k = 254; k >= 128; k = k - 1)
            begin
                prod[k - 128] = prod[k - 128] ^ prod[k];
                prod[k - 127] = prod[k - 127] ^ prod[k];
                prod[k - 126] = prod[k - 126] ^ prod[k];
                prod[k - 121] = prod[k - 121] ^ prod[k];
            end
        for (k = 0; k < 128; k = k + 1)
            red[127 - k] = prod[k];
    end
    assign p = red;
endmodule
