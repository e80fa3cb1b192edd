// SPDX-License-Identifier: Apache-2.0
// qo_pnr_wrap: place-and-route harness for quicoff_rx on a real package.
// The core has ~420 ports, more than the LFE5UM-85F's CABGA381 has pins, so
// its inputs come from a shift register loaded through one pin and its
// outputs are registered and XOR-folded into one pin. Every core input bit
// stays controllable and every output bit observable, so synthesis cannot
// remove core logic; the harness adds about one flip-flop per port bit,
// which tools/hw.sh reports as part of the ECP5 figures.
module qo_pnr_wrap (
    input  wire clk,
    input  wire rst,
    input  wire si,
    output reg  so
);
    localparam NI = 128 + 16 + 1 + 1 + 1 + 12 + 1 + 32 + 4 + 1 + 1 + 12 + 1 + 1;
    reg  [NI-1:0] sh;
    always @(posedge clk) sh <= {sh[NI-2:0], si};

    wire [127:0] m_tdata;
    wire [15:0]  m_tkeep;
    wire         m_tvalid, m_tlast, s_tready;
    wire [7:0]   m_tuser;
    wire         awready, wready, bvalid, arready, rvalid;
    wire [1:0]   bresp, rresp;
    wire [31:0]  rdata;
    quicoff_rx core (
        .clk(clk), .rst(rst),
        .s_axis_tdata(sh[127:0]), .s_axis_tkeep(sh[143:128]), .s_axis_tvalid(sh[144]),
        .s_axis_tready(s_tready), .s_axis_tlast(sh[145]),
        .m_axis_tdata(m_tdata), .m_axis_tkeep(m_tkeep), .m_axis_tvalid(m_tvalid),
        .m_axis_tready(sh[146]), .m_axis_tlast(m_tlast), .m_axis_tuser(m_tuser),
        .s_axil_awaddr(sh[158:147]), .s_axil_awvalid(sh[159]), .s_axil_awready(awready),
        .s_axil_wdata(sh[191:160]), .s_axil_wstrb(sh[195:192]), .s_axil_wvalid(sh[196]),
        .s_axil_wready(wready), .s_axil_bresp(bresp), .s_axil_bvalid(bvalid),
        .s_axil_bready(sh[197]), .s_axil_araddr(sh[209:198]), .s_axil_arvalid(sh[210]),
        .s_axil_arready(arready), .s_axil_rdata(rdata), .s_axil_rresp(rresp),
        .s_axil_rvalid(rvalid), .s_axil_rready(sh[211]));
    reg [197:0] o;
    always @(posedge clk) begin
        o  <= {m_tdata, m_tkeep, m_tvalid, m_tlast, m_tuser, s_tready, awready, wready,
               bvalid, arready, rvalid, bresp, rresp, rdata};
        so <= ^o;
    end
endmodule
