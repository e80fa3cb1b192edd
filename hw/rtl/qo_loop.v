// SPDX-License-Identifier: Apache-2.0
// qo_loop: quicoff_tx feeding quicoff_rx, for the test "RX of what TX
// produced" in hardware (hw/tb/test_loop.py): each block keeps its own
// AXI4-Lite control port.
module qo_loop (
    input  wire         clk,
    input  wire         rst,
    input  wire [127:0] s_axis_tdata,
    input  wire [15:0]  s_axis_tkeep,
    input  wire         s_axis_tvalid,
    output wire         s_axis_tready,
    input  wire         s_axis_tlast,
    input  wire [79:0]  s_axis_tuser,
    output wire [127:0] m_axis_tdata,
    output wire [15:0]  m_axis_tkeep,
    output wire         m_axis_tvalid,
    input  wire         m_axis_tready,
    output wire         m_axis_tlast,
    output wire [7:0]   m_axis_tuser,
    output wire [7:0]   mid_tuser,      // TX status of the frame between the blocks
    input  wire [11:0]  txl_awaddr,  input wire txl_awvalid, output wire txl_awready,
    input  wire [31:0]  txl_wdata,   input wire [3:0] txl_wstrb, input wire txl_wvalid, output wire txl_wready,
    output wire [1:0]   txl_bresp,   output wire txl_bvalid, input wire txl_bready,
    input  wire [11:0]  txl_araddr,  input wire txl_arvalid, output wire txl_arready,
    output wire [31:0]  txl_rdata,   output wire [1:0] txl_rresp, output wire txl_rvalid, input wire txl_rready,
    input  wire [11:0]  rxl_awaddr,  input wire rxl_awvalid, output wire rxl_awready,
    input  wire [31:0]  rxl_wdata,   input wire [3:0] rxl_wstrb, input wire rxl_wvalid, output wire rxl_wready,
    output wire [1:0]   rxl_bresp,   output wire rxl_bvalid, input wire rxl_bready,
    input  wire [11:0]  rxl_araddr,  input wire rxl_arvalid, output wire rxl_arready,
    output wire [31:0]  rxl_rdata,   output wire [1:0] rxl_rresp, output wire rxl_rvalid, input wire rxl_rready
);
    wire [127:0] d; wire [15:0] k; wire v, r, l;
    quicoff_tx tx (
        .clk(clk), .rst(rst),
        .s_axis_tdata(s_axis_tdata), .s_axis_tkeep(s_axis_tkeep), .s_axis_tvalid(s_axis_tvalid),
        .s_axis_tready(s_axis_tready), .s_axis_tlast(s_axis_tlast), .s_axis_tuser(s_axis_tuser),
        .m_axis_tdata(d), .m_axis_tkeep(k), .m_axis_tvalid(v), .m_axis_tready(r), .m_axis_tlast(l),
        .m_axis_tuser(mid_tuser),
        .s_axil_awaddr(txl_awaddr), .s_axil_awvalid(txl_awvalid), .s_axil_awready(txl_awready),
        .s_axil_wdata(txl_wdata), .s_axil_wstrb(txl_wstrb), .s_axil_wvalid(txl_wvalid), .s_axil_wready(txl_wready),
        .s_axil_bresp(txl_bresp), .s_axil_bvalid(txl_bvalid), .s_axil_bready(txl_bready),
        .s_axil_araddr(txl_araddr), .s_axil_arvalid(txl_arvalid), .s_axil_arready(txl_arready),
        .s_axil_rdata(txl_rdata), .s_axil_rresp(txl_rresp), .s_axil_rvalid(txl_rvalid), .s_axil_rready(txl_rready));
    quicoff_rx rx (
        .clk(clk), .rst(rst),
        .s_axis_tdata(d), .s_axis_tkeep(k), .s_axis_tvalid(v), .s_axis_tready(r), .s_axis_tlast(l),
        .m_axis_tdata(m_axis_tdata), .m_axis_tkeep(m_axis_tkeep), .m_axis_tvalid(m_axis_tvalid),
        .m_axis_tready(m_axis_tready), .m_axis_tlast(m_axis_tlast), .m_axis_tuser(m_axis_tuser),
        .s_axil_awaddr(rxl_awaddr), .s_axil_awvalid(rxl_awvalid), .s_axil_awready(rxl_awready),
        .s_axil_wdata(rxl_wdata), .s_axil_wstrb(rxl_wstrb), .s_axil_wvalid(rxl_wvalid), .s_axil_wready(rxl_wready),
        .s_axil_bresp(rxl_bresp), .s_axil_bvalid(rxl_bvalid), .s_axil_bready(rxl_bready),
        .s_axil_araddr(rxl_araddr), .s_axil_arvalid(rxl_arvalid), .s_axil_arready(rxl_arready),
        .s_axil_rdata(rxl_rdata), .s_axil_rresp(rxl_rresp), .s_axil_rvalid(rxl_rvalid), .s_axil_rready(rxl_rready));
endmodule
