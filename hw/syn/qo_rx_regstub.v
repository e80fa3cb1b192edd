// SPDX-License-Identifier: Apache-2.0
// A stand-in for quicoff_rx in the place and route of quicoff_rx_w512's own
// logic: every output a register of its inputs, so that each path between
// the wrapper and a core starts or ends at a flip-flop, as it does at the
// real core's registered ports, and nothing of the wrapper is optimised away.
// It is not a model of the core (nextpnr cannot place a blackbox, and four
// real cores do not fit the device: one uses 72% of its LUTs).
module quicoff_rx (
    input  wire         clk, rst,
    input  wire [127:0] s_axis_tdata, input wire [15:0] s_axis_tkeep, input wire s_axis_tvalid,
    output reg          s_axis_tready, input wire s_axis_tlast,
    output reg  [127:0] m_axis_tdata, output reg [15:0] m_axis_tkeep, output reg m_axis_tvalid,
    input  wire         m_axis_tready, output reg m_axis_tlast, output reg [7:0] m_axis_tuser,
    output reg          m_drop,
    input  wire [11:0]  s_axil_awaddr, input wire s_axil_awvalid, output reg s_axil_awready,
    input  wire [31:0]  s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output reg          s_axil_wready, output reg [1:0] s_axil_bresp, output reg s_axil_bvalid,
    input  wire         s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output reg          s_axil_arready, output reg [31:0] s_axil_rdata, output reg [1:0] s_axil_rresp,
    output reg          s_axil_rvalid, input wire s_axil_rready
);
    always @(posedge clk) begin
        s_axis_tready  <= m_axis_tready;
        m_axis_tdata   <= s_axis_tdata;
        m_axis_tkeep   <= s_axis_tkeep;
        m_axis_tvalid  <= s_axis_tvalid;
        m_axis_tlast   <= s_axis_tlast;
        m_axis_tuser   <= s_axil_wdata[7:0] ^ {s_axil_wstrb, s_axil_awaddr[3:0]};
        m_drop         <= s_axis_tvalid & s_axis_tlast & ~s_axis_tkeep[15];
        s_axil_awready <= s_axil_awvalid & s_axil_wvalid;
        s_axil_wready  <= s_axil_awvalid & s_axil_wvalid;
        s_axil_bresp   <= 2'b00;
        s_axil_bvalid  <= s_axil_awvalid & ~s_axil_bready;
        s_axil_arready <= s_axil_arvalid;
        s_axil_rdata   <= s_axil_wdata ^ {20'd0, s_axil_araddr};
        s_axil_rresp   <= 2'b00;
        s_axil_rvalid  <= s_axil_arvalid & ~s_axil_rready;
    end
endmodule
