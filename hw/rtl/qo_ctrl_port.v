// SPDX-License-Identifier: Apache-2.0
// qo_ctrl_port: the AXI4-Lite control port quicoff_rx and quicoff_tx share
// (python/quicoff/rtl_driver.py documents the register map).
//
// It holds what the host writes (table-wide configuration, 32 staging words,
// one pending command) and what the host reads (global counters, the eight
// read-back words of a counter command, the key-update event queue). It does
// not touch the entry memories: the frame FSM of its pipeline applies a
// command between frames (cmd_pending -> cmd_done), so the entry memories
// keep one writer and a command never lands in the middle of a frame.
//
//   0x000 R  ID             0x040-0x05c R  global counters 0..7
//   0x004 RW DCID length    0x080-0x0fc W  staging words 0..31
//   0x008 W  hash seed      0x100-0x11c R  read-back words 0..7
//   0x00c RW command (W: op [3:0], index [31:16]; R: pending)
//   0x010 R  next key-update event ([31] valid, entry index below; reading pops it)
//   0x014 R  GEOMETRY
module qo_ctrl_port #(
    parameter [31:0] ID       = 32'h0,
    parameter [31:0] GEOMETRY = 32'h0,
    parameter        EW       = 8      // entry index bits
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [11:0]   s_axil_awaddr,
    input  wire          s_axil_awvalid,
    output wire          s_axil_awready,
    input  wire [31:0]   s_axil_wdata,
    input  wire [3:0]    s_axil_wstrb,
    input  wire          s_axil_wvalid,
    output wire          s_axil_wready,
    output reg  [1:0]    s_axil_bresp,
    output reg           s_axil_bvalid,
    input  wire          s_axil_bready,
    input  wire [11:0]   s_axil_araddr,
    input  wire          s_axil_arvalid,
    output wire          s_axil_arready,
    output reg  [31:0]   s_axil_rdata,
    output reg  [1:0]    s_axil_rresp,
    output reg           s_axil_rvalid,
    input  wire          s_axil_rready,
    // to the pipeline
    output reg  [4:0]    cfg_dcid_len,
    output reg  [31:0]   cfg_seed,
    output wire [1023:0] stage,          // staging word n at [32*n +: 32]
    output reg           cmd_pending,
    output reg  [3:0]    cmd_op,
    output reg  [15:0]   cmd_idx,
    input  wire          cmd_done,
    // from the pipeline
    input  wire [255:0]  counters,       // global counter n at [32*n +: 32]
    input  wire          rb_load,        // latch an entry's counters and PN/phase state
    input  wire [95:0]   rb_cnt,
    input  wire [127:0]  rb_st,
    input  wire          ev_push,        // an entry made its next keys current
    input  wire [EW-1:0] ev_idx
);
    reg [31:0]   stage_w [0:31];
    reg [31:0]   rb      [0:7];
    reg [EW-1:0] evq     [0:15];
    reg [3:0]    evq_wr, evq_rd;

    genvar gs;
    generate for (gs = 0; gs < 32; gs = gs + 1) begin : stage_out
        assign stage[32*gs +: 32] = stage_w[gs];
    end endgenerate

    wire aw_take = s_axil_awvalid & s_axil_wvalid & ~s_axil_bvalid;
    assign s_axil_awready = aw_take;
    assign s_axil_wready  = aw_take;
    assign s_axil_arready = ~s_axil_rvalid;
    wire ar_take = s_axil_arvalid & ~s_axil_rvalid;
    wire ev_pop  = ar_take && s_axil_araddr == 12'h010 && evq_rd != evq_wr;

    always @(posedge clk) begin
        if (rst) begin
            s_axil_bvalid <= 1'b0;
            s_axil_rvalid <= 1'b0;
            cmd_pending   <= 1'b0;
            cfg_dcid_len  <= 5'd8;
            cfg_seed      <= 32'h0;
            evq_rd        <= 4'd0;
        end else begin
            if (cmd_done) cmd_pending <= 1'b0;
            if (aw_take) begin
                s_axil_bvalid <= 1'b1;
                s_axil_bresp  <= 2'b00;
                if (s_axil_awaddr >= 12'h080 && s_axil_awaddr < 12'h100)
                    stage_w[s_axil_awaddr[6:2]] <= s_axil_wdata;
                else case (s_axil_awaddr)
                    12'h004: cfg_dcid_len <= s_axil_wdata[4:0];
                    12'h008: cfg_seed     <= s_axil_wdata;
                    12'h00c: if (!cmd_pending) begin
                                 cmd_pending <= 1'b1;
                                 cmd_op      <= s_axil_wdata[3:0];
                                 cmd_idx     <= s_axil_wdata[31:16];
                             end
                    default: ;
                endcase
            end else if (s_axil_bvalid && s_axil_bready)
                s_axil_bvalid <= 1'b0;
            if (ar_take) begin
                s_axil_rvalid <= 1'b1;
                s_axil_rresp  <= 2'b00;
                if (s_axil_araddr >= 12'h100 && s_axil_araddr < 12'h120)
                    s_axil_rdata <= rb[s_axil_araddr[4:2]];
                else if (s_axil_araddr >= 12'h040 && s_axil_araddr < 12'h060)
                    s_axil_rdata <= counters[32*s_axil_araddr[4:2] +: 32];
                else case (s_axil_araddr)
                    12'h000: s_axil_rdata <= ID;
                    12'h004: s_axil_rdata <= {27'd0, cfg_dcid_len};
                    12'h008: s_axil_rdata <= 32'h0;                      // the seed is write-only
                    12'h00c: s_axil_rdata <= {31'd0, cmd_pending};
                    12'h010: s_axil_rdata <= (evq_rd != evq_wr) ? {1'b1, 15'd0, {(16-EW){1'b0}}, evq[evq_rd]} : 32'd0;
                    12'h014: s_axil_rdata <= GEOMETRY;
                    default: s_axil_rdata <= 32'd0;
                endcase
                if (ev_pop) evq_rd <= evq_rd + 4'd1;
            end else if (s_axil_rvalid && s_axil_rready)
                s_axil_rvalid <= 1'b0;
        end
    end

    // key-update events: a full queue keeps its oldest 15 and loses the newest
    always @(posedge clk) begin
        if (rst)
            evq_wr <= 4'd0;
        else if (ev_push) begin
            evq[evq_wr] <= ev_idx;
            if (evq_wr + 4'd1 != evq_rd) evq_wr <= evq_wr + 4'd1;
        end
    end

    // read-back words of a counter command
    always @(posedge clk) begin
        if (rb_load) begin
            rb[0] <= rb_cnt[95:64]; rb[1] <= rb_cnt[63:32]; rb[2] <= rb_cnt[31:0];
            rb[3] <= {rb_st[127], 1'b0, rb_st[126:97]}; rb[4] <= rb_st[96:65];
            rb[5] <= {29'd0, rb_st[2], rb_st[1:0]};
            rb[6] <= {rb_st[64:35], 2'b00} >> 2; rb[7] <= rb_st[34:3];
        end
    end
endmodule
