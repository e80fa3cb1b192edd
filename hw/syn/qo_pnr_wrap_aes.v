// SPDX-License-Identifier: Apache-2.0
// qo_pnr_wrap_aes: place-and-route harness for an AES pipeline alone
// (tools/hw.sh synth-aes): qo_aes_pipe, or qo_aes_deep with QO_AES_DEEP.
// Its 402 input bits come from a shift register loaded through one pin and
// its outputs are registered and XOR-folded into one pin, as in
// qo_pnr_wrap.v, so that no AES logic can be optimised away.
module qo_pnr_wrap_aes (
    input  wire clk,
    input  wire rst,
    input  wire si,
    output reg  so
);
    localparam NI = 1 + 128 + 256 + 1 + 16;
    reg [NI-1:0] sh;
    always @(posedge clk) sh <= {sh[NI-2:0], si};
    wire         ov, nv;
    wire [127:0] ob;
    wire [15:0]  ot, nt;
`ifdef QO_AES_DEEP
    qo_aes_deep #(.TAGW(16)) aes (
`else
    qo_aes_pipe #(.TAGW(16)) aes (
`endif
        .clk(clk), .rst(rst), .in_valid(sh[0]), .in_block(sh[128:1]), .in_key(sh[384:129]),
        .in_aes256(sh[385]), .in_tag(sh[401:386]), .out_valid(ov), .out_block(ob),
        .out_tag(ot), .next_valid(nv), .next_tag(nt));
    reg [161:0] o;
    always @(posedge clk) begin
        o  <= {ov, ob, ot, nv, nt};
        so <= ^o;
    end
endmodule
