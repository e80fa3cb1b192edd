// SPDX-License-Identifier: Apache-2.0
// qo_gf128_mul: the GCM multiplication in GF(2^128), combinational, so that
// GHASH absorbs one 128-bit block per clock (Y <= (Y ^ X) * H).
// Written as NIST SP 800-38D Algorithm 1 over whole 128-bit vectors: V runs
// through H * x^i (a fixed XOR network of H, since the shift-and-reduce
// depends only on H's own bits) and Z is the XOR of the V_i selected by the
// bits of A. Synthesis flattens it into the same AND-XOR network as a
// carry-less product plus reduction; simulators evaluate 128 vector steps
// instead of 16,384 single-bit ones (Icarus runs the RX suite ~100x faster).
// Bit order is GCM's: [127] (the MSB of byte 0) is the coefficient of x^0.
module qo_gf128_mul (
    input  wire [127:0] a,
    input  wire [127:0] b,
    output reg  [127:0] p
);
    reg [127:0] v;
    integer i;
    always @* begin
        p = 128'd0;
        v = b;
        for (i = 127; i >= 0; i = i - 1) begin
            p = p ^ ({128{a[i]}} & v);
            v = {1'b0, v[127:1]} ^ ({128{v[0]}} & {8'he1, 120'd0});
        end
    end
endmodule
