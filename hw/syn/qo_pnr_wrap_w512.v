// SPDX-License-Identifier: Apache-2.0
// qo_pnr_wrap_w512: the pin harness of hw/syn/qo_pnr_wrap.v for
// quicoff_rx_w512 (inputs from a shift register loaded through one pin,
// outputs registered and XOR-folded into one pin).
module qo_pnr_wrap_w512 (
    input  wire clk,
    input  wire rst,
    input  wire si,
    output reg  so
);
    localparam NI = 512 + 64 + 1 + 1 + 1 + 12 + 1 + 32 + 4 + 1 + 1 + 12 + 1 + 1;
    reg  [NI-1:0] sh;
    always @(posedge clk) sh <= {sh[NI-2:0], si};

    wire [511:0] m_tdata;
    wire [63:0]  m_tkeep;
    wire         m_tvalid, m_tlast, s_tready;
    wire [7:0]   m_tuser;
    wire         awready, wready, bvalid, arready, rvalid;
    wire [1:0]   bresp, rresp;
    wire [31:0]  rdata;
    quicoff_rx_w512 core (
        .clk(clk), .rst(rst),
        .s_axis_tdata(sh[511:0]), .s_axis_tkeep(sh[575:512]), .s_axis_tvalid(sh[576]),
        .s_axis_tready(s_tready), .s_axis_tlast(sh[577]),
        .m_axis_tdata(m_tdata), .m_axis_tkeep(m_tkeep), .m_axis_tvalid(m_tvalid),
        .m_axis_tready(sh[578]), .m_axis_tlast(m_tlast), .m_axis_tuser(m_tuser),
        .s_axil_awaddr(sh[590:579]), .s_axil_awvalid(sh[591]), .s_axil_awready(awready),
        .s_axil_wdata(sh[623:592]), .s_axil_wstrb(sh[627:624]), .s_axil_wvalid(sh[628]),
        .s_axil_wready(wready), .s_axil_bresp(bresp), .s_axil_bvalid(bvalid),
        .s_axil_bready(sh[629]), .s_axil_araddr(sh[641:630]), .s_axil_arvalid(sh[642]),
        .s_axil_arready(arready), .s_axil_rdata(rdata), .s_axil_rresp(rresp),
        .s_axil_rvalid(rvalid), .s_axil_rready(sh[643]));
    reg [627:0] o;
    always @(posedge clk) begin
        o  <= {m_tdata, m_tkeep, m_tvalid, m_tlast, m_tuser, s_tready, awready, wready,
               bvalid, arready, rvalid, bresp, rresp, rdata};
        so <= ^o;
    end
endmodule
