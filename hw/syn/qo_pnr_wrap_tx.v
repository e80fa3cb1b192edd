// SPDX-License-Identifier: Apache-2.0
// qo_pnr_wrap_tx: synthesis harness for quicoff_tx on a real package, as
// qo_pnr_wrap is for quicoff_rx (the same reasons: ~500 ports, too many pins).
// Inputs come from a shift register loaded through one pin (TX's extra input
// is the 80-bit descriptor on s_axis_tuser), outputs are registered and
// XOR-folded into one pin, so no core logic can be optimised away.
module qo_pnr_wrap_tx (
    input  wire clk,
    input  wire rst,
    input  wire si,
    output reg  so
);
    localparam NI = 128 + 16 + 1 + 1 + 80 + 1 + 12 + 1 + 32 + 4 + 1 + 1 + 12 + 1 + 1;
    reg  [NI-1:0] sh;
    always @(posedge clk) sh <= {sh[NI-2:0], si};

    wire [127:0] m_tdata;
    wire [15:0]  m_tkeep;
    wire         m_tvalid, m_tlast, s_tready;
    wire [7:0]   m_tuser;
    wire         awready, wready, bvalid, arready, rvalid;
    wire [1:0]   bresp, rresp;
    wire [31:0]  rdata;
    quicoff_tx core (
        .clk(clk), .rst(rst),
        .s_axis_tdata(sh[127:0]), .s_axis_tkeep(sh[143:128]), .s_axis_tvalid(sh[144]),
        .s_axis_tready(s_tready), .s_axis_tlast(sh[145]), .s_axis_tuser(sh[225:146]),
        .m_axis_tdata(m_tdata), .m_axis_tkeep(m_tkeep), .m_axis_tvalid(m_tvalid),
        .m_axis_tready(sh[226]), .m_axis_tlast(m_tlast), .m_axis_tuser(m_tuser),
        .s_axil_awaddr(sh[238:227]), .s_axil_awvalid(sh[239]), .s_axil_awready(awready),
        .s_axil_wdata(sh[271:240]), .s_axil_wstrb(sh[275:272]), .s_axil_wvalid(sh[276]),
        .s_axil_wready(wready), .s_axil_bresp(bresp), .s_axil_bvalid(bvalid),
        .s_axil_bready(sh[277]), .s_axil_araddr(sh[289:278]), .s_axil_arvalid(sh[290]),
        .s_axil_arready(arready), .s_axil_rdata(rdata), .s_axil_rresp(rresp),
        .s_axil_rvalid(rvalid), .s_axil_rready(sh[291]));
    reg [195:0] o;
    always @(posedge clk) begin
        o  <= {m_tdata, m_tkeep, m_tvalid, m_tlast, m_tuser, s_tready, awready, wready,
               bvalid, arready, rvalid, bresp, rresp, rdata};
        so <= ^o;
    end
endmodule
