// SPDX-License-Identifier: Apache-2.0
// quicoff_rx_w512: the DATA_W = 512 build of the receive path. Four 128-bit
// quicoff_rx cores behind one 512-bit AXI4-Stream, as multi-engine NIC crypto
// blocks and an ideal QUIC NIC ("RSS by DCID") do it: a frame goes to the
// core its connection hashes to, so every frame of one connection meets the
// same core (its PN state, key phase, key-update detection and counters stay
// exact there), and the frames leave in input order.
//
//   dispatch   the first two 512-bit beats (128 bytes: every header variant up
//              to the 20-byte DCID) are held; the lookup key's bytes (the DCID
//              of the table's length, or for a zero-length-CID table the
//              destination address + UDP port, as the core's lookup key) are
//              XOR-folded to 2 bits: the core. The table's DCID length is
//              snooped from the control port's write of 0x004. Frames that are
//              not short-header QUIC hash to whatever their bytes give: they
//              touch no entry (their counters are global ones, summed).
//   per core   a FIFO of 32 512-bit beats (a whole frame of <= 2,048 bytes) and
//              a 512 -> 128 gearbox in; a 128 -> 512 packer and a FIFO of 32
//              beats out; a FIFO of frame kinds (sent / dropped, in the core's
//              output order: quicoff_rx's m_drop marks a dropped frame).
//   merge      a FIFO of core numbers in input order; the output takes the next
//              frame from the core at its head (cut-through), or pops a dropped
//              frame's entry without output.
//   control    one AXI4-Lite port: writes go to all four cores (each holds the
//              whole table); reads of the global counters and of an entry's
//              counters are the four cores' sum, an entry's PN/phase words the
//              core whose words differ from the others' (only the core that
//              carries a connection changes its state: the other three keep
//              what the last command wrote, identical), key-update events are
//              taken from core 0, 1, 2, 3 in turn until one has one; busy is
//              any core's. The driver (rtl_driver) sees the 128-bit core's map.
//
// Throughput: up to 4 x 128 bits per clock when the traffic spreads over
// connections that hash to different cores; one connection alone gets one
// core's 128 bits per clock (as RSS does).

// first-word-fall-through FIFO (asynchronous read: LUT RAM / registers)
module qo_fifo #(parameter W = 8, AW = 5) (
    input  wire         clk, rst,
    input  wire         we, input wire [W-1:0] wd,
    input  wire         re, output wire [W-1:0] rd,
    output wire         empty, full
);
    reg [W-1:0] mem [0:(1<<AW)-1];
    reg [AW:0]  wp, rp;
    assign empty = (wp == rp);
    assign full  = (wp[AW] != rp[AW]) && (wp[AW-1:0] == rp[AW-1:0]);
    assign rd    = mem[rp[AW-1:0]];
    always @(posedge clk) begin
        if (rst) begin
            wp <= 0; rp <= 0;
        end else begin
            if (we) begin mem[wp[AW-1:0]] <= wd; wp <= wp + 1'b1; end
            if (re) rp <= rp + 1'b1;
        end
    end
endmodule

// the lookup key's dispatch hash: bytes of the 128-byte head of a frame
module qo_w512_hash (
    input  wire [1023:0] w,        // byte i at [8*i +: 8]
    input  wire [4:0]    dcid_len,
    output wire [1:0]    lane
);
    function [7:0] B; input [1023:0] x; input integer i; B = x[8*i +: 8]; endfunction
    wire [15:0]  et   = {B(w, 12), B(w, 13)};
    wire         vlan = (et == 16'h8100);
    wire [15:0]  et2  = vlan ? {B(w, 16), B(w, 17)} : et;
    wire [1023:0] ip  = vlan ? (w >> 144) : (w >> 112);      // from the IP header
    wire         v6   = (et2 == 16'h86DD);
    wire [3:0]   ihl  = ip[3:0];
    wire [6:0]   l4o  = v6 ? 7'd40 : {1'b0, ihl, 2'b00};      // UDP header offset in ip
    wire [1023:0] udp = ip >> {l4o, 3'b000};
    wire [1023:0] q   = udp >> 64;                            // the QUIC first byte
    reg  [7:0]   x;
    integer i;
    always @* begin
        x = 8'd0;
        if (dcid_len != 0) begin
            for (i = 0; i < 20; i = i + 1)
                if (i < dcid_len) x = x ^ q[8*(i+1) +: 8];
        end else begin
            // the core's key for a zero-length-CID table: destination address + port
            x = udp[23:16] ^ udp[31:24];
            if (v6) begin
                for (i = 24; i < 40; i = i + 1) x = x ^ ip[8*i +: 8];
            end else begin
                for (i = 16; i < 20; i = i + 1) x = x ^ ip[8*i +: 8];
            end
        end
    end
    assign lane = x[1:0] ^ x[3:2] ^ x[5:4] ^ x[7:6];
endmodule

// one core's input: 512-bit beats in a FIFO, out 128 bits at a time (with
// the beat's user field: TX's descriptor, which the core takes at the first)
module qo_w512_in #(parameter UW = 1) (
    input  wire         clk, rst,
    input  wire         we, input wire [511:0] wdata, input wire [63:0] wkeep, input wire wlast,
    input  wire [UW-1:0] wuser,
    output wire         full,
    output wire [127:0] m_tdata, output wire [15:0] m_tkeep, output wire m_tvalid,
    input  wire         m_tready, output wire m_tlast, output wire [UW-1:0] m_tuser
);
    wire [UW+576:0] rd;
    wire         empty;
    reg  [1:0]   j;
    wire [63:0]  keep = rd[575:512];
    wire         lastw = (j == 2'd3) || !keep[16*(j + 1)];
    wire         pop   = !empty && m_tready && lastw;
    qo_fifo #(.W(UW + 577), .AW(5)) f (.clk(clk), .rst(rst), .we(we), .wd({wuser, wlast, wkeep, wdata}),
        .re(pop), .rd(rd), .empty(empty), .full(full));
    assign m_tdata  = rd[128*j +: 128];
    assign m_tkeep  = keep[16*j +: 16];
    assign m_tvalid = !empty;
    assign m_tlast  = rd[576] && lastw;
    assign m_tuser  = rd[UW+576:577];
    always @(posedge clk)
        if (rst) j <= 0;
        else if (!empty && m_tready) j <= lastw ? 2'd0 : j + 2'd1;
endmodule

// one core's output: 128-bit words packed into 512-bit beats in a FIFO; the
// kind of each frame (0 sent, 1 dropped) in the core's order in another
module qo_w512_out #(
    parameter KAW  = 7,
    parameter KEXT = 0                 // 1: kinds written through k_we / k_wd (TX), not from the core's output
) (
    input  wire         clk, rst,
    input  wire [127:0] s_tdata, input wire [15:0] s_tkeep, input wire s_tvalid,
    output wire         s_tready, input wire s_tlast, input wire [7:0] s_tuser,
    input  wire         s_drop,
    input  wire         k_we, input wire k_wd,
    output wire [511:0] m_tdata, output wire [63:0] m_tkeep, output wire m_tlast,
    output wire [7:0]   m_tuser, output wire m_tvalid, input wire m_pop,
    output wire         k_valid, output wire k_drop, input wire k_pop
);
    reg  [383:0] acc;
    reg  [47:0]  acck;
    reg  [1:0]   n;
    reg          mid;                 // inside a frame
    wire         full, empty, kfull, kempty;
    wire         fire = s_tvalid && s_tready;
    wire         wr   = fire && (n == 2'd3 || s_tlast);
    reg  [511:0] wd;
    reg  [63:0]  wk;
    integer i;
    always @* begin
        wd = 512'd0; wk = 64'd0;
        for (i = 0; i < 3; i = i + 1)
            if (i < n) begin wd[128*i +: 128] = acc[128*i +: 128]; wk[16*i +: 16] = acck[16*i +: 16]; end
        wd[128*n +: 128] = s_tdata;
        wk[16*n +: 16]   = s_tkeep;
    end
    assign s_tready = !full;
    wire [584:0] rd;
    qo_fifo #(.W(585), .AW(5)) f (.clk(clk), .rst(rst), .we(wr), .wd({s_tuser, s_tlast, wk, wd}),
        .re(m_pop), .rd(rd), .empty(empty), .full(full));
    assign m_tdata  = rd[511:0];
    assign m_tkeep  = rd[575:512];
    assign m_tlast  = rd[576];
    assign m_tuser  = rd[584:577];
    assign m_tvalid = !empty;
    // a frame's kind is queued at its first word (so that the merge can cut
    // through) or at the core's drop pulse; the two never share a clock
    wire kd;
    qo_fifo #(.W(1), .AW(KAW)) kf (.clk(clk), .rst(rst),
        .we(KEXT ? k_we : ((fire && !mid) || s_drop)), .wd(KEXT ? k_wd : s_drop),
        .re(k_pop), .rd(kd), .empty(kempty), .full(kfull));
    assign k_valid = !kempty;
    assign k_drop  = kd;
    always @(posedge clk) begin
        if (rst) begin
            n <= 0; mid <= 0;
        end else if (fire) begin
            mid <= !s_tlast;
            if (wr) n <= 0;
            else begin
                acc[128*n +: 128] <= s_tdata;
                acck[16*n +: 16]  <= s_tkeep;
                n <= n + 2'd1;
            end
        end
    end
endmodule

// the control port of the four-core builds: one AXI4-Lite port in front of
// the cores' four (see the header: writes to all, reads combined)
module qo_w512_ctrl (
    input  wire         clk, rst,
    input  wire [11:0]  s_axil_awaddr, input wire s_axil_awvalid, output wire s_axil_awready,
    input  wire [31:0]  s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output wire         s_axil_wready, output reg [1:0] s_axil_bresp, output reg s_axil_bvalid,
    input  wire         s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output wire         s_axil_arready, output reg [31:0] s_axil_rdata, output reg [1:0] s_axil_rresp,
    output reg          s_axil_rvalid, input wire s_axil_rready,
    // the cores' ports (one address, data and strobe for all; wvalid = awvalid)
    output reg  [11:0]  c_awaddr, output reg [31:0] c_wdata, output reg [3:0] c_wstrb,
    output reg  [3:0]   c_awvalid, input wire [3:0] c_awready,
    input  wire [3:0]   c_bvalid, output reg [3:0] c_bready,
    output reg  [11:0]  c_araddr, output reg [3:0] c_arvalid, input wire [3:0] c_arready,
    input  wire [3:0]   c_rvalid, output reg [3:0] c_rready, input wire [127:0] c_rdata,
    output reg  [4:0]   dcid_len       // the table's DCID length, snooped from 0x004
);
    localparam N = 4;
    // writes: to all four, the response once all four answered
    localparam C_IDLE = 3'd0, C_W = 3'd1, C_R = 3'd3, C_RB = 3'd4, C_EV = 3'd5;
    reg [2:0]   cst;
    reg [N-1:0] got;
    reg [1:0]   evk;                   // the core an event read asks
    reg [31:0]  rv [0:N-1];
    wire        aw_take = (cst == C_IDLE) && s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid;
    wire        ar_take = (cst == C_IDLE) && !aw_take && s_axil_arvalid && !s_axil_rvalid;
    assign s_axil_awready = aw_take;
    assign s_axil_wready  = aw_take;
    assign s_axil_arready = ar_take;

    // how the four answers of a read become one
    wire [31:0] sum = rv[0] + rv[1] + rv[2] + rv[3];
    wire [31:0] odd = (rv[0] != rv[1]) ? ((rv[0] == rv[2]) ? rv[1] : rv[0])
                    : (rv[0] != rv[2]) ? rv[2] : rv[3];
    wire [31:0] any = rv[0] | rv[1] | rv[2] | rv[3];
    reg  [31:0] comb;
    always @* begin
        if ((c_araddr >= 12'h040 && c_araddr < 12'h060) || (c_araddr >= 12'h100 && c_araddr < 12'h10c))
            comb = sum;                // global counters; an entry's ok / auth failed / key updates
        else if (c_araddr >= 12'h10c && c_araddr < 12'h120)
            comb = odd;                // an entry's PN / phase state
        else if (c_araddr == 12'h00c)
            comb = any;                // a command pending in any core
        else
            comb = rv[0];
    end

    integer ci;
    always @(posedge clk) begin
        if (rst) begin
            cst <= C_IDLE; c_awvalid <= 0; c_arvalid <= 0; c_bready <= 0; c_rready <= 0;
            s_axil_bvalid <= 0; s_axil_rvalid <= 0; dcid_len <= 5'd8; got <= 0; evk <= 0;
        end else begin
            if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
            if (s_axil_rvalid && s_axil_rready) s_axil_rvalid <= 1'b0;
            case (cst)
            C_IDLE: begin
                if (aw_take) begin
                    c_awaddr <= s_axil_awaddr; c_wdata <= s_axil_wdata; c_wstrb <= s_axil_wstrb;
                    c_awvalid <= {N{1'b1}}; c_bready <= {N{1'b1}}; got <= 0;
                    if (s_axil_awaddr == 12'h004) dcid_len <= s_axil_wdata[4:0];
                    cst <= C_W;
                end else if (ar_take) begin
                    c_araddr <= s_axil_araddr; got <= 0;
                    if (s_axil_araddr == 12'h010) begin
                        evk <= 0; c_arvalid <= 4'b0001; cst <= C_EV;
                    end else begin
                        c_arvalid <= {N{1'b1}}; cst <= C_R;
                    end
                    c_rready <= {N{1'b1}};
                end
            end
            C_W: begin
                c_awvalid <= c_awvalid & ~c_awready;
                c_bready  <= c_bready & ~c_bvalid;
                if ((got | c_bvalid) == {N{1'b1}}) begin
                    s_axil_bvalid <= 1'b1; s_axil_bresp <= 2'b00; c_bready <= 0; cst <= C_IDLE;
                end
                got <= got | c_bvalid;
            end
            C_R: begin
                c_arvalid <= c_arvalid & ~c_arready;
                c_rready  <= c_rready & ~c_rvalid;
                for (ci = 0; ci < N; ci = ci + 1)
                    if (c_rvalid[ci] && c_rready[ci]) rv[ci] <= c_rdata[32*ci +: 32];
                got <= got | (c_rvalid & c_rready);
                if ((got | (c_rvalid & c_rready)) == {N{1'b1}}) cst <= C_RB;
            end
            C_RB: begin                // rv complete: answer
                s_axil_rvalid <= 1'b1; s_axil_rresp <= 2'b00; s_axil_rdata <= comb; c_rready <= 0;
                cst <= C_IDLE;
            end
            C_EV: begin                // the next key-update event: core evk, then the next
                c_arvalid <= c_arvalid & ~c_arready;
                if (c_rvalid[evk] && c_rready[evk]) begin
                    if (c_rdata[32*evk + 31] || evk == 2'd3) begin
                        s_axil_rvalid <= 1'b1; s_axil_rresp <= 2'b00; s_axil_rdata <= c_rdata[32*evk +: 32];
                        c_rready <= 0; cst <= C_IDLE;
                    end else begin
                        evk <= evk + 2'd1;
                        c_arvalid <= 4'b0001 << (evk + 2'd1);
                    end
                end
            end
            default: cst <= C_IDLE;
            endcase
        end
    end
endmodule

module quicoff_rx_w512 #(
    parameter CAP = 256, NBUCKET = 128, WAYS = 4, MAXBEATS = 128,
    parameter OAW = 7                  // frames in flight: 2^OAW (the order FIFO)
) (
    input  wire         clk, rst,
    input  wire [511:0] s_axis_tdata, input wire [63:0] s_axis_tkeep, input wire s_axis_tvalid,
    output wire         s_axis_tready, input wire s_axis_tlast,
    output wire [511:0] m_axis_tdata, output wire [63:0] m_axis_tkeep, output wire m_axis_tvalid,
    input  wire         m_axis_tready, output wire m_axis_tlast, output wire [7:0] m_axis_tuser,
    input  wire [11:0]  s_axil_awaddr, input wire s_axil_awvalid, output wire s_axil_awready,
    input  wire [31:0]  s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output wire         s_axil_wready, output wire [1:0] s_axil_bresp, output wire s_axil_bvalid,
    input  wire         s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output wire         s_axil_arready, output wire [31:0] s_axil_rdata, output wire [1:0] s_axil_rresp,
    output wire         s_axil_rvalid, input wire s_axil_rready
);
    localparam N = 4;
    wire [4:0] dcid_len;               // the table's DCID length, snooped from 0x004

    // ------------------------------------------------------------ dispatch
    // Three beats held, P2 (newest) to P0 (oldest, the one that leaves). A
    // frame's first beat moves from P1 to P0 only with its second beat in P2
    // (or being its frame's last), and its core, hashed from P1 and P2, is
    // registered beside it (lane0): the hash has a clock of its own, apart
    // from the decision to send a beat (the first place and route of the
    // wrapper, hash and decision in one clock, gave 39.45 MHz).
    reg  [511:0] d0, d1, d2;
    reg  [63:0]  k0, k1, k2;
    reg          v0, v1, v2, l0, l1, l2, f0, f1, f2;   // valid, last, first beat of a frame
    reg          in_first;
    reg  [1:0]   cur;                      // core of the frame being dispatched
    reg  [1:0]   lane0;                    // core of P0's frame, when P0 is its first beat
    wire [1:0]   lane;
    qo_w512_hash hsh (.w({d2, d1}), .dcid_len(dcid_len), .lane(lane));
    wire [N-1:0] in_full;
    wire         ord_full, ord_empty;
    wire [1:0]   tgt   = f0 ? lane0 : cur;
    wire         leave = v0 && !in_full[tgt] && !(f0 && ord_full);
    wire         adv0  = !v0 || leave;                      // P0 frees
    wire         take1 = adv0 && v1 && (!f1 || l1 || v2);   // P1 moves to P0
    wire         adv1  = !v1 || take1;
    wire         take2 = adv1 && v2;                        // P2 moves to P1
    wire         adv2  = !v2 || take2;
    assign s_axis_tready = adv2;
    wire         in_fire = s_axis_tvalid && s_axis_tready;
    always @(posedge clk) begin
        if (rst) begin
            v0 <= 0; v1 <= 0; v2 <= 0; in_first <= 1'b1; cur <= 0;
        end else begin
            if (in_fire) in_first <= s_axis_tlast;
            if (leave && f0) cur <= lane0;
            if (adv0) begin
                v0 <= take1;
                if (take1) begin d0 <= d1; k0 <= k1; l0 <= l1; f0 <= f1; lane0 <= lane; end
            end
            if (adv1) begin
                v1 <= take2;
                if (take2) begin d1 <= d2; k1 <= k2; l1 <= l2; f1 <= f2; end
            end
            if (adv2) begin
                v2 <= in_fire;
                if (in_fire) begin d2 <= s_axis_tdata; k2 <= s_axis_tkeep; l2 <= s_axis_tlast; f2 <= in_first; end
            end
        end
    end

    // the order FIFO: core numbers of the frames in input order
    wire [1:0] ord_c;
    wire       ord_pop;
    qo_fifo #(.W(2), .AW(OAW)) ord (.clk(clk), .rst(rst), .we(leave && f0), .wd(lane0),
        .re(ord_pop), .rd(ord_c), .empty(ord_empty), .full(ord_full));

    // ------------------------------------------------------------ cores
    wire [511:0] od [0:N-1];
    wire [63:0]  ok [0:N-1];
    wire [7:0]   ou [0:N-1];
    wire [N-1:0] ol, ov, kv, kdrop;
    wire [N-1:0] opop, kpop;
    // control port fan-out
    wire [N-1:0] c_awvalid, c_arvalid;
    wire [11:0]  c_awaddr, c_araddr;
    wire [31:0]  c_wdata;
    wire [3:0]   c_wstrb;
    wire [N-1:0] c_awready, c_bvalid, c_arready, c_rvalid;
    wire [N-1:0] c_bready, c_rready;
    wire [31:0]  c_rdata [0:N-1];

    genvar g;
    generate for (g = 0; g < N; g = g + 1) begin : core
        wire [127:0] id, cd; wire [15:0] ik, ck; wire iv, ir, il, cv, cr, cl, cdrop; wire [7:0] cu;
        wire [1:0] bresp, rresp; wire wready;
        qo_w512_in gin (.clk(clk), .rst(rst), .we(leave && tgt == g), .wdata(d0), .wkeep(k0), .wlast(l0),
            .wuser(1'b0), .full(in_full[g]), .m_tdata(id), .m_tkeep(ik), .m_tvalid(iv), .m_tready(ir),
            .m_tlast(il), .m_tuser());
`ifdef QO_CORE_STANDIN
        // synthesis of the wrapper's own logic (tools/hw.sh synth_w512): a
        // blackbox or registers in the core's place, without parameters
        // (Yosys re-derives a parameterised blackbox late and loses the
        // wrapper's other modules)
        quicoff_rx rx (
`else
        quicoff_rx #(.DATA_W(128), .CAP(CAP), .NBUCKET(NBUCKET), .WAYS(WAYS), .MAXBEATS(MAXBEATS)) rx (
`endif
            .clk(clk), .rst(rst),
            .s_axis_tdata(id), .s_axis_tkeep(ik), .s_axis_tvalid(iv), .s_axis_tready(ir), .s_axis_tlast(il),
            .m_axis_tdata(cd), .m_axis_tkeep(ck), .m_axis_tvalid(cv), .m_axis_tready(cr), .m_axis_tlast(cl),
            .m_axis_tuser(cu), .m_drop(cdrop),
            .s_axil_awaddr(c_awaddr), .s_axil_awvalid(c_awvalid[g]), .s_axil_awready(c_awready[g]),
            .s_axil_wdata(c_wdata), .s_axil_wstrb(c_wstrb), .s_axil_wvalid(c_awvalid[g]),
            .s_axil_wready(wready), .s_axil_bresp(bresp), .s_axil_bvalid(c_bvalid[g]),
            .s_axil_bready(c_bready[g]), .s_axil_araddr(c_araddr), .s_axil_arvalid(c_arvalid[g]),
            .s_axil_arready(c_arready[g]), .s_axil_rdata(c_rdata[g]), .s_axil_rresp(rresp),
            .s_axil_rvalid(c_rvalid[g]), .s_axil_rready(c_rready[g]));
        qo_w512_out #(.KAW(OAW)) gout (.clk(clk), .rst(rst),
            .s_tdata(cd), .s_tkeep(ck), .s_tvalid(cv), .s_tready(cr), .s_tlast(cl), .s_tuser(cu),
            .s_drop(cdrop), .k_we(1'b0), .k_wd(1'b0), .m_tdata(od[g]), .m_tkeep(ok[g]), .m_tlast(ol[g]), .m_tuser(ou[g]),
            .m_tvalid(ov[g]), .m_pop(opop[g]), .k_valid(kv[g]), .k_drop(kdrop[g]), .k_pop(kpop[g]));
    end endgenerate

    // ------------------------------------------------------------ in-order merge
    wire head_ok   = !ord_empty && kv[ord_c];
    wire head_drop = head_ok && kdrop[ord_c];
    assign m_axis_tvalid = head_ok && !kdrop[ord_c] && ov[ord_c];
    assign m_axis_tdata  = od[ord_c];
    assign m_axis_tkeep  = ok[ord_c];
    assign m_axis_tlast  = ol[ord_c];
    assign m_axis_tuser  = ou[ord_c];
    wire out_fire  = m_axis_tvalid && m_axis_tready;
    assign ord_pop = head_drop || (out_fire && ol[ord_c]);
    generate for (g = 0; g < N; g = g + 1) begin : pops
        assign opop[g] = out_fire && ord_c == g;
        assign kpop[g] = ord_pop && ord_c == g;
    end endgenerate

    // ------------------------------------------------------------ control port
    qo_w512_ctrl ctrl (.clk(clk), .rst(rst),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
        .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .c_awaddr(c_awaddr), .c_wdata(c_wdata), .c_wstrb(c_wstrb), .c_awvalid(c_awvalid),
        .c_awready(c_awready), .c_bvalid(c_bvalid), .c_bready(c_bready), .c_araddr(c_araddr),
        .c_arvalid(c_arvalid), .c_arready(c_arready), .c_rvalid(c_rvalid), .c_rready(c_rready),
        .c_rdata({c_rdata[3], c_rdata[2], c_rdata[1], c_rdata[0]}), .dcid_len(dcid_len));
endmodule

// quicoff_tx_w512: the same for TX. The descriptor on s_axis_tuser at a
// frame's first beat names the entry ([15:0]); the frame goes to the core
// that entry's index folds to (its eight bit pairs XORed), so every frame of
// one entry meets the same core (key phase and counters stay exact there).
// No beat is held: the core is known at the first beat. quicoff_tx drops
// only frames longer than its buffer (MAXBEATS words of 16 bytes), which the
// dispatcher counts itself, so a frame's kind is queued when its last beat
// is dispatched (a core's frames leave in the order they came in).
module quicoff_tx_w512 #(
    parameter CAP = 256, MAXBEATS = 128,
    parameter OAW = 7
) (
    input  wire         clk, rst,
    input  wire [511:0] s_axis_tdata, input wire [63:0] s_axis_tkeep, input wire s_axis_tvalid,
    output wire         s_axis_tready, input wire s_axis_tlast, input wire [79:0] s_axis_tuser,
    output wire [511:0] m_axis_tdata, output wire [63:0] m_axis_tkeep, output wire m_axis_tvalid,
    input  wire         m_axis_tready, output wire m_axis_tlast, output wire [7:0] m_axis_tuser,
    input  wire [11:0]  s_axil_awaddr, input wire s_axil_awvalid, output wire s_axil_awready,
    input  wire [31:0]  s_axil_wdata, input wire [3:0] s_axil_wstrb, input wire s_axil_wvalid,
    output wire         s_axil_wready, output wire [1:0] s_axil_bresp, output wire s_axil_bvalid,
    input  wire         s_axil_bready, input wire [11:0] s_axil_araddr, input wire s_axil_arvalid,
    output wire         s_axil_arready, output wire [31:0] s_axil_rdata, output wire [1:0] s_axil_rresp,
    output wire         s_axil_rvalid, input wire s_axil_rready
);
    localparam N = 4;
    // ------------------------------------------------------------ dispatch
    reg          in_first;
    reg  [1:0]   cur;
    reg  [12:0]  words;                // 16-byte words of the frame so far
    wire [15:0]  ei = s_axis_tuser[15:0];
    wire [1:0]   lane = ei[1:0] ^ ei[3:2] ^ ei[5:4] ^ ei[7:6] ^ ei[9:8] ^ ei[11:10] ^ ei[13:12] ^ ei[15:14];
    wire [N-1:0] in_full;
    wire         ord_full, ord_empty;
    wire [1:0]   tgt = in_first ? lane : cur;
    assign s_axis_tready = !in_full[tgt] && !(in_first && ord_full);
    wire         in_fire = s_axis_tvalid && s_axis_tready;
    wire [2:0]   bw = s_axis_tkeep[0] + s_axis_tkeep[16] + s_axis_tkeep[32] + s_axis_tkeep[48];
    wire [12:0]  wtot = (in_first ? 13'd0 : words) + bw;
    wire         too_long = (wtot > MAXBEATS);
    always @(posedge clk) begin
        if (rst) begin
            in_first <= 1'b1; cur <= 0; words <= 0;
        end else if (in_fire) begin
            in_first <= s_axis_tlast;
            if (in_first) cur <= lane;
            words <= wtot;
        end
    end
    wire [1:0] ord_c;
    wire       ord_pop;
    qo_fifo #(.W(2), .AW(OAW)) ord (.clk(clk), .rst(rst), .we(in_fire && in_first), .wd(lane),
        .re(ord_pop), .rd(ord_c), .empty(ord_empty), .full(ord_full));

    // ------------------------------------------------------------ cores
    wire [511:0] od [0:N-1];
    wire [63:0]  ok [0:N-1];
    wire [7:0]   ou [0:N-1];
    wire [N-1:0] ol, ov, kv, kdrop;
    wire [N-1:0] opop, kpop;
    wire [N-1:0] c_awvalid, c_arvalid, c_awready, c_bvalid, c_arready, c_rvalid, c_bready, c_rready;
    wire [11:0]  c_awaddr, c_araddr;
    wire [31:0]  c_wdata;
    wire [3:0]   c_wstrb;
    wire [127:0] c_rdata;
    genvar g;
    generate for (g = 0; g < N; g = g + 1) begin : core
        wire [127:0] id, cd; wire [15:0] ik, ck; wire iv, ir, il, cv, cr, cl; wire [7:0] cu;
        wire [79:0] iu; wire [1:0] bresp, rresp; wire wready;
        qo_w512_in #(.UW(80)) gin (.clk(clk), .rst(rst), .we(in_fire && tgt == g), .wdata(s_axis_tdata),
            .wkeep(s_axis_tkeep), .wlast(s_axis_tlast), .wuser(s_axis_tuser), .full(in_full[g]),
            .m_tdata(id), .m_tkeep(ik), .m_tvalid(iv), .m_tready(ir), .m_tlast(il), .m_tuser(iu));
`ifdef QO_CORE_STANDIN
        quicoff_tx tx (
`else
        quicoff_tx #(.DATA_W(128), .CAP(CAP), .MAXBEATS(MAXBEATS)) tx (
`endif
            .clk(clk), .rst(rst),
            .s_axis_tdata(id), .s_axis_tkeep(ik), .s_axis_tvalid(iv), .s_axis_tready(ir), .s_axis_tlast(il),
            .s_axis_tuser(iu),
            .m_axis_tdata(cd), .m_axis_tkeep(ck), .m_axis_tvalid(cv), .m_axis_tready(cr), .m_axis_tlast(cl),
            .m_axis_tuser(cu),
            .s_axil_awaddr(c_awaddr), .s_axil_awvalid(c_awvalid[g]), .s_axil_awready(c_awready[g]),
            .s_axil_wdata(c_wdata), .s_axil_wstrb(c_wstrb), .s_axil_wvalid(c_awvalid[g]),
            .s_axil_wready(wready), .s_axil_bresp(bresp), .s_axil_bvalid(c_bvalid[g]),
            .s_axil_bready(c_bready[g]), .s_axil_araddr(c_araddr), .s_axil_arvalid(c_arvalid[g]),
            .s_axil_arready(c_arready[g]), .s_axil_rdata(c_rdata[32*g +: 32]), .s_axil_rresp(rresp),
            .s_axil_rvalid(c_rvalid[g]), .s_axil_rready(c_rready[g]));
        qo_w512_out #(.KAW(OAW), .KEXT(1)) gout (.clk(clk), .rst(rst),
            .s_tdata(cd), .s_tkeep(ck), .s_tvalid(cv), .s_tready(cr), .s_tlast(cl), .s_tuser(cu),
            .s_drop(1'b0), .k_we(in_fire && s_axis_tlast && tgt == g), .k_wd(too_long),
            .m_tdata(od[g]), .m_tkeep(ok[g]), .m_tlast(ol[g]), .m_tuser(ou[g]),
            .m_tvalid(ov[g]), .m_pop(opop[g]), .k_valid(kv[g]), .k_drop(kdrop[g]), .k_pop(kpop[g]));
    end endgenerate

    // ------------------------------------------------------------ in-order merge
    wire head_ok   = !ord_empty && kv[ord_c];
    wire head_drop = head_ok && kdrop[ord_c];
    assign m_axis_tvalid = head_ok && !kdrop[ord_c] && ov[ord_c];
    assign m_axis_tdata  = od[ord_c];
    assign m_axis_tkeep  = ok[ord_c];
    assign m_axis_tlast  = ol[ord_c];
    assign m_axis_tuser  = ou[ord_c];
    wire out_fire  = m_axis_tvalid && m_axis_tready;
    assign ord_pop = head_drop || (out_fire && ol[ord_c]);
    generate for (g = 0; g < N; g = g + 1) begin : pops
        assign opop[g] = out_fire && ord_c == g;
        assign kpop[g] = ord_pop && ord_c == g;
    end endgenerate

    wire [4:0] dcid_len_unused;
    qo_w512_ctrl ctrl (.clk(clk), .rst(rst),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
        .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .c_awaddr(c_awaddr), .c_wdata(c_wdata), .c_wstrb(c_wstrb), .c_awvalid(c_awvalid),
        .c_awready(c_awready), .c_bvalid(c_bvalid), .c_bready(c_bready), .c_araddr(c_araddr),
        .c_arvalid(c_arvalid), .c_arready(c_arready), .c_rvalid(c_rvalid), .c_rready(c_rready),
        .c_rdata(c_rdata), .dcid_len(dcid_len_unused));
endmodule
