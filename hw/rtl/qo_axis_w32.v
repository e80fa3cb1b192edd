// SPDX-License-Identifier: Apache-2.0
// 32-bit AXI4-Stream width adapters, for the DATA_W = 32 build of
// quicoff_rx (quicoff_rx_w32): the FPGA prototype moved 32 bits per clock,
// so this build has its interface; the core keeps its 128-bit block path (one
// AES/GHASH block per beat), the adapters pack 4 beats into one and unpack.
// Frames are byte-contiguous: tkeep is all ones except on the last beat.

// 32 -> 128: four beats per word, the last word of a frame possibly partial.
module qo_axis_up32 (
    input  wire         clk, rst,
    input  wire [31:0]  s_tdata, input wire [3:0] s_tkeep, input wire s_tvalid,
    output wire         s_tready, input wire s_tlast,
    output reg  [127:0] m_tdata, output reg [15:0] m_tkeep, output reg m_tvalid,
    input  wire         m_tready, output reg m_tlast
);
    reg [1:0] n;                        // next lane
    assign s_tready = !m_tvalid || m_tready;
    always @(posedge clk) begin
        if (rst) begin
            n <= 0; m_tvalid <= 0;
        end else begin
            if (m_tvalid && m_tready) m_tvalid <= 1'b0;
            if (s_tvalid && s_tready) begin
                if (n == 0) begin m_tkeep <= 16'd0; m_tdata <= 128'd0; end
                m_tdata[32*n +: 32] <= s_tdata;
                if (n == 0) m_tkeep <= {12'd0, s_tkeep}; else m_tkeep[4*n +: 4] <= s_tkeep;
                n <= s_tlast ? 2'd0 : n + 2'd1;
                if (s_tlast || n == 3) begin
                    m_tvalid <= 1'b1;
                    m_tlast  <= s_tlast;
                end
            end
        end
    end
endmodule

// 128 -> 32: each word leaves as up to four beats (fewer at the end of a frame).
module qo_axis_dn32 #(parameter UW = 8) (
    input  wire         clk, rst,
    input  wire [127:0] s_tdata, input wire [15:0] s_tkeep, input wire s_tvalid,
    output wire         s_tready, input wire s_tlast, input wire [UW-1:0] s_tuser,
    output wire [31:0]  m_tdata, output wire [3:0] m_tkeep, output wire m_tvalid,
    input  wire         m_tready, output wire m_tlast, output wire [UW-1:0] m_tuser
);
    reg [1:0] n;
    wire last_lane = (n == 3) || !s_tkeep[4*(n + 1)];   // no bytes in the next lane
    assign m_tdata  = s_tdata[32*n +: 32];
    assign m_tkeep  = s_tkeep[4*n +: 4];
    assign m_tvalid = s_tvalid;
    assign m_tlast  = s_tlast && last_lane;
    assign m_tuser  = s_tuser;
    assign s_tready = m_tready && last_lane;
    always @(posedge clk)
        if (rst) n <= 0;
        else if (s_tvalid && m_tready) n <= last_lane ? 2'd0 : n + 2'd1;
endmodule

module quicoff_rx_w32 #(
    parameter CAP = 256, NBUCKET = 128, WAYS = 4, MAXBEATS = 128
) (
    input  wire        clk, rst,
    input  wire [31:0] s_axis_tdata, input wire [3:0] s_axis_tkeep, input wire s_axis_tvalid,
    output wire        s_axis_tready, input wire s_axis_tlast,
    output wire [31:0] m_axis_tdata, output wire [3:0] m_axis_tkeep, output wire m_axis_tvalid,
    input  wire        m_axis_tready, output wire m_axis_tlast, output wire [7:0] m_axis_tuser,
    input  wire [11:0] s_axil_awaddr, input wire s_axil_awvalid, output wire s_axil_awready,
    input  wire [31:0] s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output wire        s_axil_wready, output wire [1:0] s_axil_bresp, output wire s_axil_bvalid,
    input  wire        s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output wire        s_axil_arready, output wire [31:0] s_axil_rdata, output wire [1:0] s_axil_rresp,
    output wire        s_axil_rvalid, input wire s_axil_rready
);
    wire [127:0] id, od; wire [15:0] ik, ok; wire iv, ir, il, ov, orr, ol; wire [7:0] ou;
    qo_axis_up32 up (.clk(clk), .rst(rst), .s_tdata(s_axis_tdata), .s_tkeep(s_axis_tkeep),
        .s_tvalid(s_axis_tvalid), .s_tready(s_axis_tready), .s_tlast(s_axis_tlast),
        .m_tdata(id), .m_tkeep(ik), .m_tvalid(iv), .m_tready(ir), .m_tlast(il));
    quicoff_rx #(.DATA_W(128), .CAP(CAP), .NBUCKET(NBUCKET), .WAYS(WAYS), .MAXBEATS(MAXBEATS)) core (
        .clk(clk), .rst(rst),
        .s_axis_tdata(id), .s_axis_tkeep(ik), .s_axis_tvalid(iv), .s_axis_tready(ir), .s_axis_tlast(il),
        .m_axis_tdata(od), .m_axis_tkeep(ok), .m_axis_tvalid(ov), .m_axis_tready(orr), .m_axis_tlast(ol),
        .m_axis_tuser(ou),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
        .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready));
    qo_axis_dn32 #(.UW(8)) dn (.clk(clk), .rst(rst), .s_tdata(od), .s_tkeep(ok), .s_tvalid(ov),
        .s_tready(orr), .s_tlast(ol), .s_tuser(ou),
        .m_tdata(m_axis_tdata), .m_tkeep(m_axis_tkeep), .m_tvalid(m_axis_tvalid),
        .m_tready(m_axis_tready), .m_tlast(m_axis_tlast), .m_tuser(m_axis_tuser));
endmodule
