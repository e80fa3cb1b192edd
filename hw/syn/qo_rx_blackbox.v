// SPDX-License-Identifier: Apache-2.0
// quicoff_rx and quicoff_tx (DATA_W = 128) as blackboxes: their ports only, for the synthesis
// of quicoff_rx_w512's and quicoff_tx_w512's own logic (dispatcher, gearboxes, FIFOs, merge,
// control-port fan-out). tools/hw.sh adds four times the core's own figures.
(* blackbox *)
module quicoff_rx (
    input  wire         clk, rst,
    input  wire [127:0] s_axis_tdata, input wire [15:0] s_axis_tkeep, input wire s_axis_tvalid,
    output wire         s_axis_tready, input wire s_axis_tlast,
    output wire [127:0] m_axis_tdata, output wire [15:0] m_axis_tkeep, output wire m_axis_tvalid,
    input  wire         m_axis_tready, output wire m_axis_tlast, output wire [7:0] m_axis_tuser,
    output wire         m_drop,
    input  wire [11:0]  s_axil_awaddr, input wire s_axil_awvalid, output wire s_axil_awready,
    input  wire [31:0]  s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output wire         s_axil_wready, output wire [1:0] s_axil_bresp, output wire s_axil_bvalid,
    input  wire         s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output wire         s_axil_arready, output wire [31:0] s_axil_rdata, output wire [1:0] s_axil_rresp,
    output wire         s_axil_rvalid, input wire s_axil_rready
);
endmodule

// quicoff_tx (DATA_W = 128) the same way, for quicoff_tx_w512
(* blackbox *)
module quicoff_tx (
    input  wire         clk, rst,
    input  wire [127:0] s_axis_tdata, input wire [15:0] s_axis_tkeep, input wire s_axis_tvalid,
    output wire         s_axis_tready, input wire s_axis_tlast, input wire [79:0] s_axis_tuser,
    output wire [127:0] m_axis_tdata, output wire [15:0] m_axis_tkeep, output wire m_axis_tvalid,
    input  wire         m_axis_tready, output wire m_axis_tlast, output wire [7:0] m_axis_tuser,
    input  wire [11:0]  s_axil_awaddr, input wire s_axil_awvalid, output wire s_axil_awready,
    input  wire [31:0]  s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output wire         s_axil_wready, output wire [1:0] s_axil_bresp, output wire s_axil_bvalid,
    input  wire         s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output wire         s_axil_arready, output wire [31:0] s_axil_rdata, output wire [1:0] s_axil_rresp,
    output wire         s_axil_rvalid, input wire s_axil_rready
);
endmodule
