// SPDX-License-Identifier: Apache-2.0
// quicoff_rx: receive-side QUIC 1-RTT packet-protection removal on an
// AXI4-Stream of Ethernet frames (DATA_W = 128: 16 bytes per beat).
//
// What goes out, per frame, with the status on m_axis_tuser (held on every
// beat, meaningful at tlast):
//   OK                    header unmasked, payload in plaintext, tag removed,
//                         IPv4 total length + header checksum, IPv6 payload
//                         length, UDP length + checksum fixed; Ethernet padding
//                         after the UDP datagram dropped.
//   AUTH_FAILED /         the frame exactly as it arrived (never plaintext),
//   KEY_PHASE_UNAVAILABLE only when the entry's fail action is "pass";
//                         with "drop" the frame is not sent (counted).
//   UNKNOWN_CONNECTION,   the frame exactly as it arrived.
//   MALFORMED, PASSTHROUGH
//
// Why store-and-forward: the UDP checksum sits before the payload it covers
// and a frame that fails authentication must leave unchanged, so nothing of a
// frame can leave before its last byte has been checked. This version
// processes one frame at a time (receive, look up, header protection, GCM,
// send); inside a frame, H of both key slots rides behind the HP block and
// GHASH runs beside the keystream, so the frame's GCM costs its block count
// once plus the AES latency. Its cycle cost per frame is measured by the
// testbench and reported by tools/hw.sh (docs/hw.md), not assumed.
//
// Lookup (the FPGA prototype's hashed CAM): the 20-byte lookup key (DCID of the table's length,
// or destination address + UDP port when that length is 0, as the FPGA
// prototype's table did) is hashed with a per-table seed; the hash picks a bucket of WAYS cells
// {valid, 12-bit fingerprint, entry index}; the fingerprint match selects one
// entry whose full key is then compared. The host (python/quicoff/
// rtl_driver.py) places entries in buckets, so the hardware lookup has a
// fixed latency and no probing.
//
// Keys (as the FPGA prototype's key memory): two payload key slots per entry indexed by the
// key-phase bit, one header-protection key, raw (not expanded) keys: see
// qo_aes_pipe.v for why. Key phases follow libquicoff (docs/design.md): the
// slot of the other phase holds the next generation (tried for PN >= first
// PN of the current one; success makes it current and raises a key-update
// event) or the previous one (used for PN < first PN).
module quicoff_rx #(
    parameter DATA_W   = 128,
    parameter CAP      = 256,     // entries
    parameter NBUCKET  = 128,     // buckets of WAYS cells
    parameter WAYS     = 4,
    parameter MAXBEATS = 128      // frame buffer: 2,048 bytes
) (
    input  wire              clk,
    input  wire              rst,
    // frames in
    input  wire [DATA_W-1:0] s_axis_tdata,
    input  wire [DATA_W/8-1:0] s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    // frames out
    output wire [DATA_W-1:0] m_axis_tdata,
    output wire [DATA_W/8-1:0] m_axis_tkeep,
    output wire              m_axis_tvalid,
    input  wire              m_axis_tready,
    output wire              m_axis_tlast,
    output wire [7:0]        m_axis_tuser,
    // AXI4-Lite control port
    input  wire [11:0]       s_axil_awaddr,
    input  wire              s_axil_awvalid,
    output wire              s_axil_awready,
    input  wire [31:0]       s_axil_wdata,
    input  wire [3:0]        s_axil_wstrb,
    input  wire              s_axil_wvalid,
    output wire              s_axil_wready,
    output wire [1:0]        s_axil_bresp,
    output wire              s_axil_bvalid,
    input  wire              s_axil_bready,
    input  wire [11:0]       s_axil_araddr,
    input  wire              s_axil_arvalid,
    output wire              s_axil_arready,
    output wire [31:0]       s_axil_rdata,
    output wire [1:0]        s_axil_rresp,
    output wire              s_axil_rvalid,
    input  wire              s_axil_rready
);
    localparam NB  = DATA_W / 8;
    localparam BW  = $clog2(NBUCKET);
    localparam EW  = $clog2(CAP);
    localparam MW  = $clog2(MAXBEATS);

    // statuses (m_axis_tuser[3:0]); the names match libquicoff's
    localparam ST_OK = 4'd0, ST_AUTH = 4'd1, ST_UNKNOWN = 4'd2, ST_MALFORMED = 4'd3,
               ST_PASS = 4'd4, ST_KPU = 4'd5;
    // "other" key slot state
    localparam OT_NONE = 2'd0, OT_NEXT = 2'd1, OT_PREV = 2'd2;
    // AES result kinds (tag[9:8])
    localparam K_HP = 2'd0, K_H = 2'd1, K_J0 = 2'd2, K_KS = 2'd3;

    // ------------------------------------------------------------------
    // helpers (bswap, popc, sum_words16, fold16 are shared)
    `include "qo_util.vh"


    function [31:0] xs32;    // xorshift32 step: cheap in XORs, spreads every input bit
        input [31:0] x;
        reg [31:0] y;
        begin
            y = x ^ (x << 13);
            y = y ^ (y >> 17);
            xs32 = y ^ (y << 5);
        end
    endfunction

    function [31:0] qo_hash;
        input [31:0]  seed;
        input [159:0] k;
        reg [31:0] h;
        integer i;
        begin
            h = seed;
            for (i = 0; i < 5; i = i + 1) h = xs32(h ^ k[159 - 32*i -: 32]);
            qo_hash = h;
        end
    endfunction




    // ------------------------------------------------------------------
    // control port (AXI4-Lite registers, staging words, events) and entry memories
    wire [4:0]    cfg_dcid_len;
    wire [31:0]   cfg_seed;
    wire [1023:0] stage;
    wire          cmd_pending;
    wire [3:0]    cmd_op;
    wire [15:0]   cmd_idx;
    reg           cmd_done;
    reg  [31:0]   cnt_g [0:7];     // frames, ok, auth failed, unknown, malformed, passthrough, kpu, dropped
    wire [255:0]  counters;
    genvar gc;
    generate for (gc = 0; gc < 8; gc = gc + 1) begin : cnt_out
        assign counters[32*gc +: 32] = cnt_g[gc];
    end endgenerate
    reg          rb_mode;          // S_ENT2 serves a counter read-back, not a frame
    reg [EW-1:0] eidx;             // the entry this frame or command is about
    reg          ev_push;          // registered: the event is the frame's eidx
    reg          st_we, cnt_we;    // a frame's PN state / counters, written the clock after S_FIN
    reg [127:0]  st_wdata;
    reg [95:0]   cnt_wdata;
    wire [162:0] r_cfg;            // the entry as read: {valid, aes256, fail_pass, key160}
    wire [255:0] r_hp;
    wire [351:0] r_k0, r_k1;       // {key256, iv96} of key phase 0 / 1
    wire [127:0] r_st;             // {lp_valid, largest62, first62, cur_phase, other2}
    wire [95:0]  r_cnt;
    reg [29*WAYS-1:0] bkt [0:NBUCKET-1];  // lookup buckets: WAYS x {valid, fp12, idx16}
    wire         cmd_apply, rb_load;   // (from the FSM state, below)

    qo_ctrl_port #(.ID(32'h51_4f_52_58), .GEOMETRY({CAP[15:0], NBUCKET[7:0], WAYS[7:0]}), .EW(EW)) ctrl (
        .clk(clk), .rst(rst),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
        .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .cfg_dcid_len(cfg_dcid_len), .cfg_seed(cfg_seed), .stage(stage),
        .cmd_pending(cmd_pending), .cmd_op(cmd_op), .cmd_idx(cmd_idx), .cmd_done(cmd_done),
        .counters(counters), .rb_load(rb_load), .rb_cnt(r_cnt), .rb_st(r_st),
        .ev_push(ev_push), .ev_idx(eidx));

    qo_entry_table #(.CAP(CAP), .EW(EW)) table_ (
        .clk(clk), .cmd_apply(cmd_apply), .cmd_op(cmd_op), .cmd_idx(cmd_idx[EW-1:0]),
        .stage(stage), .st_we(st_we), .cnt_we(cnt_we), .wr_idx(eidx), .st_wdata(st_wdata),
        .cnt_wdata(cnt_wdata), .rd_idx(eidx), .r_cfg(r_cfg), .r_hp(r_hp), .r_k0(r_k0), .r_k1(r_k1),
        .r_st(r_st), .r_cnt(r_cnt));

    // ------------------------------------------------------------------
    // frame buffer, header window, keystream buffer
    reg [127:0]      ksbuf [0:MAXBEATS-1];   // keystream, payload block order, frame byte order

    localparam S_IN = 5'd0, S_CMD = 5'd1, S_P1 = 5'd2, S_P2 = 5'd3, S_P3 = 5'd4, S_P4 = 5'd5,
               S_HASH = 5'd6, S_BKT = 5'd7, S_FP = 5'd8, S_ENT = 5'd9, S_ENT2 = 5'd10,
               S_HP = 5'd11, S_HPW = 5'd12, S_PN = 5'd13, S_PN2 = 5'd14, S_ISSUE = 5'd15,
               S_DRAIN = 5'd16, S_TAG = 5'd18, S_FIN = 5'd19, S_OUT = 5'd20,
               S_DROP = 5'd21, S_CS = 5'd22;
    reg [4:0] state;
    assign cmd_apply = (state == S_CMD);
    assign rb_load = (state == S_ENT2) && rb_mode;
    wire [15:0]   wbeat;         // beats received of this frame
    wire          ovf;
    wire [15:0]   flen;          // frame length in bytes
    wire [1023:0] hdr;           // first 128 bytes of the frame


    // parse results
    wire        vlan, is4, is6;
    wire [15:0] l3, l4, q, ip_end, udp_end, udplen, pn_off;
    wire [3:0]  ihl;
    wire [15:0] iptot;
    wire        p_pass, p_malf;
    qo_frame_parse parse (
        .clk(clk), .step(state == S_P1 ? 2'd1 : state == S_P2 ? 2'd2 : state == S_P3 ? 2'd3 : 2'd0),
        .hdr(hdr), .flen(flen), .cfg_dcid_len(cfg_dcid_len),
        .vlan(vlan), .is4(is4), .is6(is6), .l3(l3), .l4(l4), .q(q), .ip_end(ip_end), .udp_end(udp_end),
        .udplen(udplen), .pn_off(pn_off), .ihl(ihl), .iptot(iptot), .p_pass(p_pass), .p_malf(p_malf));
    reg [159:0] lkey;
    reg [31:0] hsh;
    reg        fp_hit;
    reg [28:0]  r_cell;
    // header protection and PN
    reg [39:0]  mask;
    reg [7:0]   first_u;
    reg [31:0]  pnb_u;           // unmasked PN bytes, left aligned
    reg [2:0]   pn_len;
    reg         kp;
    reg [61:0]  pn;
    reg [1:0]   mode;            // 0 current, 1 next, 2 old
    reg         kpu;
    reg [15:0]  P, L, nblk, hlen;
    reg [95:0]  nonce;
    reg [255:0] pkey;
    reg [255:0] aad;             // frame byte order, zero after hlen
    // GCM
    reg [127:0] H0r, H1r, ej0, Y;   // H of key slot 0 and 1 (both computed beside the HP mask)
    reg [15:0]  iss, got, g;
    reg [31:0]  pt_sum;
    reg         tag_ok;
    reg [15:0]  ipcs, udpcs;
    // output
    reg [3:0]   status;
    reg         fr_mod;          // frame modified (OK)
    reg         kupd;
    reg [15:0]  olen, k;

    function [7:0] hb;   // header window byte
        input [15:0] i;
        hb = hdr[8*i[6:0] +: 8];
    endfunction

    reg  [29*WAYS-1:0] r_cell_all;
    reg  [127:0] mask_j;
    integer ci, oi, ki;  // one loop variable per always block (a shared one is a latch to Yosys)

    // AES pipeline: HP mask, H, E(J0) and the keystream all go through it
    reg          a_v;
    reg [127:0]  a_blk;
    reg [255:0]  a_key;
    reg          a_256;
    reg [15:0]   a_tag;
    wire         ao_v;
    wire [127:0] ao_blk;
    wire [15:0]  ao_tag;
    qo_aes_pipe #(.TAGW(16)) aes (
        .clk(clk), .rst(rst), .in_valid(a_v), .in_block(a_blk), .in_key(a_key),
        .in_aes256(a_256), .in_tag(a_tag), .out_valid(ao_v), .out_block(ao_blk), .out_tag(ao_tag));

    always @(posedge clk) begin
        if (ao_v) begin
            case (ao_tag[9:8])
                K_HP: mask <= ao_blk[127:88];
                K_H:  if (ao_tag[0]) H1r <= ao_blk; else H0r <= ao_blk;
                K_J0: ej0  <= ao_blk;
                K_KS: ksbuf[ao_tag[MW-1:0]] <= bswap(ao_blk);
            endcase
        end
    end

    // GHASH: one block per clock
    reg  [127:0] gh_in;
    wire [127:0] gh_prod;
    wire [127:0] Hr = kp ? H1r : H0r;
    qo_gf128_mul ghm (.a(Y ^ gh_in), .b(Hr), .p(gh_prod));

    // buffer reads (asynchronous: LUT RAM), two ports each
    reg  [15:0] ra;              // byte offset of a 16-byte window
    wire [127:0] win;
    wire [15:0] hblk = (hlen > 16) ? 16'd2 : 16'd1;       // AAD blocks
    wire [15:0] jj = g - hblk;                             // ciphertext block of GHASH step g
    // the plaintext's checksum is summed as each keystream block leaves the
    // AES pipeline (second window port: that block's ciphertext), so GHASH
    // over the ciphertext need not wait for the keystream
    wire [15:0]  kj    = {8'd0, ao_tag[7:0]};
    wire [15:0]  ra_k  = P + {kj[11:0], 4'b0};
    wire [15:0]  rem_k = L - {kj[11:0], 4'b0};
    wire [127:0] win_k;
    reg  [127:0] mask_k;
    always @* for (ki = 0; ki < 16; ki = ki + 1) mask_k[8*ki +: 8] = (ki < rem_k) ? 8'hff : 8'h00;

    // ------------------------------------------------------------------
    // the frame FSM
    wire in_beat = s_axis_tvalid & s_axis_tready;
    assign s_axis_tready = (state == S_IN) && !(cmd_pending && wbeat == 0);

    integer i;
    reg [61:0]  expected, cand, pwin, hwin;
    reg [15:0]  rem;
    reg [127:0] blk;
    reg [127:0] ctm;
    reg [31:0]  s32;
    reg [255:0] aw;

    always @(posedge clk) begin
        a_v <= 1'b0;
        cmd_done <= 1'b0;
        ev_push <= 1'b0;
        st_we <= 1'b0;
        cnt_we <= 1'b0;
        if (ao_v && ao_tag[9:8] == K_KS)
            pt_sum <= pt_sum + sum_words16((win_k ^ bswap(ao_blk)) & mask_k);
        if (rst) begin
            state  <= S_IN;
            rb_mode <= 0;
            status <= ST_PASS;
            tag_ok <= 0; fr_mod <= 0; kupd <= 0; mode <= 0;
            for (i = 0; i < 8; i = i + 1) cnt_g[i] <= 0;
        end else case (state)
        S_IN: begin
            if (cmd_pending && wbeat == 0 && !cmd_done)
                state <= S_CMD;
            else if (in_beat) begin
                if (s_axis_tlast) begin
                    cnt_g[0] <= cnt_g[0] + 1;
                    state <= (ovf || wbeat >= MAXBEATS) ? S_DROP : S_P1;
                end
            end
        end
        S_DROP: begin       // longer than the frame buffer: counted and dropped
            cnt_g[7] <= cnt_g[7] + 1;
            state <= S_IN;
        end
        S_CMD: begin
            // commands 1, 2, 4, 6 are applied by the entry table in this clock
            if (cmd_op == 4'd3)   // a whole lookup bucket
                for (i = 0; i < WAYS; i = i + 1)
                    bkt[cmd_idx[BW-1:0]][29*i +: 29] <= {stage[32*(24 + i) + 31], stage[32*(24 + i) + 16 +: 12], stage[32*(24 + i) +: 16]};
            eidx <= cmd_idx[EW-1:0];
            rb_mode <= (cmd_op == 4'd5);
            state <= (cmd_op == 4'd5) ? S_CS : S_IN;
            if (cmd_op != 4'd5) cmd_done <= 1'b1;
        end
        S_CS: state <= S_ENT;   // read-back: entry memories are read one clock after eidx is set
        // -------- parse: qo_frame_parse takes one layer per clock
        S_P1: state <= S_P2;
        S_P2: state <= S_P3;
        S_P3: state <= S_P4;
        S_P4: begin
            if (cfg_dcid_len != 0) begin
                aw = hdr >> {q + 16'd1, 3'b000};
                for (i = 0; i < 20; i = i + 1)
                    lkey[159 - 8*i -: 8] <= (i < cfg_dcid_len) ? aw[8*i +: 8] : 8'd0;
            end else if (is4) begin
                aw = hdr >> {l3 + 16'd16, 3'b000};
                lkey <= {aw[7:0], aw[15:8], aw[23:16], aw[31:24], hb(l4 + 2), hb(l4 + 3), 112'd0};
            end else begin
                aw = hdr >> {l3 + 16'd24, 3'b000};
                for (i = 0; i < 16; i = i + 1) lkey[159 - 8*i -: 8] <= aw[8*i +: 8];
                lkey[31:0] <= {hb(l4 + 2), hb(l4 + 3), 16'd0};
            end
            if (p_pass || p_malf) begin
                status <= p_pass ? ST_PASS : ST_MALFORMED;
                fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else
                state <= S_HASH;
        end
        S_HASH: begin
            hsh   <= qo_hash(cfg_seed, lkey);
            state <= S_BKT;
        end
        S_BKT: state <= S_FP;       // bucket read (registered below)
        S_FP: begin
            fp_hit <= 1'b0;
            for (i = WAYS - 1; i >= 0; i = i - 1)
                if (r_cell_all[29*i + 28] && r_cell_all[29*i + 16 +: 12] == hsh[31:20]) begin
                    fp_hit <= 1'b1;
                    eidx   <= r_cell_all[29*i +: EW];
                end
            state <= S_ENT;
        end
        S_ENT: state <= S_ENT2;     // entry read (registered below)
        S_ENT2: begin
            if (rb_mode) begin                          // counter read-back
                rb_mode <= 1'b0;
                cmd_done <= 1'b1;
                state <= S_IN;
            end else if (!fp_hit || !r_cfg[162] || r_cfg[159:0] != lkey) begin
                status <= ST_UNKNOWN; fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else if (pn_off + 16'd20 > udp_end) begin
                status <= ST_MALFORMED; fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else
                state <= S_HP;
        end
        S_HP: begin
            aw    = hdr >> {pn_off + 16'd4, 3'b000};
            a_v   <= 1'b1;
            a_blk <= bswap(aw[127:0]);
            a_key <= r_hp;
            a_256 <= r_cfg[161];
            a_tag <= {6'd0, K_HP, 8'd0};
            iss   <= 0;
            state <= S_HPW;
        end
        S_HPW: begin
            // H = E(K, 0) of both key slots follows the HP block into the
            // pipeline: the phase bit is still masked, and GHASH can then
            // start as soon as the packet number is decoded
            if (iss < 2) begin
                a_v   <= 1'b1;
                a_blk <= 128'd0;
                a_key <= iss[0] ? r_k1[351:96] : r_k0[351:96];
                a_256 <= r_cfg[161];
                a_tag <= {6'd0, K_H, 7'd0, iss[0]};
                iss   <= iss + 1;
            end
            if (ao_v && ao_tag[9:8] == K_HP) state <= S_PN;
        end
        S_PN: begin
            aw = hdr >> {pn_off, 3'b000};
            first_u <= hb(q) ^ (mask[39:32] & 8'h1f);
            pn_len  <= ((hb(q) ^ mask[39:32]) & 8'h03) + 3'd1;
            kp      <= (hb(q) ^ mask[39:32]) >> 2;
            pnb_u   <= {aw[7:0], aw[15:8], aw[23:16], aw[31:24]} ^ mask[31:0];
            state   <= S_PN2;
        end
        S_PN2: begin
            // RFC 9000 A.3 with the entry's largest PN
            expected = r_st[127] ? r_st[126:65] + 62'd1 : 62'd0;
            pwin = 62'd1 << {pn_len, 3'b000};
            hwin = pwin >> 1;
            cand = (expected & ~(pwin - 62'd1)) | (pnb_u >> {3'd4 - pn_len, 3'b000});
            if (cand + hwin <= expected && cand < (62'h3fffffffffffffff - pwin + 62'd1))
                cand = cand + pwin;
            else if (cand > expected + hwin && cand >= pwin)
                cand = cand - pwin;
            pn <= cand;
            // key phase (docs/design.md "Key phases")
            kpu  <= 1'b0;
            mode <= 2'd0;
            if (kp != r_st[2]) begin
                if (r_st[1:0] == OT_NEXT && cand >= r_st[64:3])      mode <= 2'd1;
                else if (r_st[1:0] == OT_PREV && cand < r_st[64:3])  mode <= 2'd2;
                else                                                 kpu  <= 1'b1;
            end
            pkey  <= kp ? r_k1[351:96] : r_k0[351:96];
            nonce <= (kp ? r_k1[95:0] : r_k0[95:0]) ^ {34'd0, cand};
            P     <= pn_off + pn_len;
            L     <= udp_end - pn_off - pn_len - 16'd16;
            nblk  <= (udp_end - pn_off - pn_len - 16'd16 + 16'd15) >> 4;
            hlen  <= 16'd1 + cfg_dcid_len + pn_len;
            aw = hdr >> {q, 3'b000};
            for (i = 0; i < 32; i = i + 1)
                aad[8*i +: 8] <= (i == 0) ? first_u :
                                 (i < 1 + cfg_dcid_len) ? aw[8*i +: 8] :
                                 (i < 1 + cfg_dcid_len + pn_len) ? pnb_u[31 - 8*(i - 1 - cfg_dcid_len) -: 8] : 8'd0;
            iss    <= 0;
            Y      <= 128'd0;
            g      <= 0;
            pt_sum <= 0;
            state  <= S_ISSUE;
        end
        S_ISSUE: begin
            // E(K, J0) and the keystream enter the AES pipeline while GHASH
            // absorbs the AAD, the ciphertext and the lengths, one block per
            // clock each; S_DRAIN waits for the last keystream block
            if (kpu) begin
                status <= ST_KPU; fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else begin
                if (iss <= nblk) begin
                    a_v   <= 1'b1;
                    a_key <= pkey;
                    a_256 <= r_cfg[161];
                    a_blk <= {nonce, 16'd0, iss + 16'd1};
                    a_tag <= (iss == 0) ? {6'd0, K_J0, 8'd0} : {6'd0, K_KS, iss[7:0] - 8'd1};
                    iss   <= iss + 1;
                end
                if (g <= hblk + nblk) begin
                    Y <= gh_prod;
                    g <= g + 1;
                end
                if (iss >= nblk && g >= hblk + nblk) state <= S_DRAIN;
            end
        end
        S_DRAIN: if (got == nblk + 1) state <= S_TAG;
        S_TAG: begin
            tag_ok <= (bswap(win) == (Y ^ ej0));
            state  <= S_FIN;
            status <= ST_OK;
        end
        S_FIN: begin
            // status, state write-back, counters, checksums
            kupd <= 1'b0;
            if (status == ST_OK && !tag_ok) status <= ST_AUTH;
            fr_mod <= (status == ST_OK && tag_ok);
            if (status == ST_OK && tag_ok) begin
                st_we     <= 1'b1;
                st_wdata  <= {1'b1, (r_st[127] && r_st[126:65] > pn) ? r_st[126:65] : pn,
                              (mode == 2'd1) ? pn : r_st[64:3],
                              (mode == 2'd1) ? kp : r_st[2],
                              (mode == 2'd1) ? OT_PREV : r_st[1:0]};
                cnt_we    <= 1'b1;
                cnt_wdata <= {r_cnt[95:64] + 32'd1, r_cnt[63:32], r_cnt[31:0] + (mode == 2'd1)};
                if (mode == 2'd1) begin
                    kupd <= 1'b1;
                    ev_push <= 1'b1;
                end
                cnt_g[1] <= cnt_g[1] + 1;
                olen <= udp_end - 16'd16;
            end else begin
                olen <= flen;
                if (status == ST_OK || status == ST_KPU) begin
                    cnt_we    <= 1'b1;
                    cnt_wdata <= {r_cnt[95:64], r_cnt[63:32] + 32'd1, r_cnt[31:0]};
                end
                case (status)
                    ST_OK:        cnt_g[2] <= cnt_g[2] + 1;
                    ST_UNKNOWN:   cnt_g[3] <= cnt_g[3] + 1;
                    ST_MALFORMED: cnt_g[4] <= cnt_g[4] + 1;
                    ST_PASS:      cnt_g[5] <= cnt_g[5] + 1;
                    ST_KPU:       cnt_g[6] <= cnt_g[6] + 1;
                    default: ;
                endcase
            end
            // checksums of the rewritten frame (used only when it is modified)
            s32 = fold16(pt_sum);
            if (P[0]) s32 = {s32[7:0], s32[15:8]};
            s32 = s32 + sum_words16(aad[127:0]) + sum_words16(aad[255:128])
                + {hb(l4), hb(l4 + 1)} + {hb(l4 + 2), hb(l4 + 3)} + 2 * (udplen - 16'd16) + 17;
            if (is4) begin
                for (i = 0; i < 4; i = i + 1)
                    s32 = s32 + {hb(l3 + 12 + 2*i), hb(l3 + 13 + 2*i)};
            end else begin
                for (i = 0; i < 16; i = i + 1)
                    s32 = s32 + {hb(l3 + 8 + 2*i), hb(l3 + 9 + 2*i)};
            end
            udpcs <= (is4 && {hb(l4 + 6), hb(l4 + 7)} == 16'd0) ? 16'd0 :
                     (~fold16(s32) == 16'd0) ? 16'hffff : ~fold16(s32);
            s32 = 0;
            for (i = 0; i < 30; i = i + 1)
                if (i < 2 * ihl && i != 5)
                    s32 = s32 + ((i == 1) ? iptot - 16'd16 : {hb(l3 + 2*i), hb(l3 + 2*i + 1)});
            ipcs <= ~fold16(s32);
            k <= 0;
            if ((status == ST_OK && !tag_ok) || status == ST_KPU)
                state <= r_cfg[160] ? S_OUT : S_IN;      // fail action: pass or drop
            else
                state <= S_OUT;
            if (((status == ST_OK && !tag_ok) || status == ST_KPU) && !r_cfg[160])
                cnt_g[7] <= cnt_g[7] + 1;
        end
        S_OUT: if (m_axis_tready) begin
            k <= k + 1;
            if ({k[11:0], 4'b0} + 16'd16 >= olen) state <= S_IN;
        end
        default: state <= S_IN;
        endcase
    end

    // AES results counted while draining
    always @(posedge clk)
        if (state == S_PN2) got <= 0;
        else if (ao_v && (ao_tag[9:8] == K_J0 || ao_tag[9:8] == K_KS)) got <= got + 1;

    // synchronous memory reads (block RAM)
    always @(posedge clk) begin
        r_cell_all <= bkt[hsh[BW-1:0]];
    end

    // window address and GHASH input, by state
    always @* begin
        ra     = 16'd0;
        gh_in  = 128'd0;
        ctm    = 128'd0;
        mask_j = 128'd0;
        rem    = L - {jj[11:0], 4'b0};
        for (ci = 0; ci < 16; ci = ci + 1) mask_j[8*ci +: 8] = (ci < rem) ? 8'hff : 8'h00;
        if (state == S_ISSUE) begin
            if (g < hblk)
                gh_in = bswap(g[0] ? aad[255:128] : aad[127:0]);
            else if (g < hblk + nblk) begin
                ra    = P + {jj[11:0], 4'b0};
                ctm   = win & mask_j;
                gh_in = bswap(ctm);
            end else
                gh_in = {48'd0, hlen[12:0], 3'b000, 48'd0, L[12:0], 3'b000};
        end else if (state == S_TAG)
            ra = P + L;
    end

    // ------------------------------------------------------------------
    // output beat k
    wire [15:0] ob   = {k[11:0], 4'b0};
    wire [15:0] kpb  = k - P[15:4];
    wire [255:0] ksc = {ksbuf[kpb[MW-1:0]], ksbuf[kpb[MW-1:0] - 1'b1]};
    wire [127:0] ksa = ksc >> {5'd16 - P[3:0], 3'b000};
    wire [127:0] obuf;
    qo_frame_buf #(.DATA_W(DATA_W), .MAXBEATS(MAXBEATS)) fb (
        .clk(clk), .rst(rst), .restart(state == S_FIN || state == S_DROP), .in_beat(in_beat),
        .in_data(s_axis_tdata), .in_keep(s_axis_tkeep), .in_last(s_axis_tlast),
        .wbeat(wbeat), .ovf(ovf), .flen(flen), .hdr(hdr),
        .win_off(ra), .win(win), .win_b_off(ra_k), .win_b(win_k), .beat_idx(k[MW-1:0]), .beat(obuf));
    reg  [127:0] odata;
    reg  [15:0]  bi;
    always @* begin
        odata = obuf;
        bi = 16'd0;
        oi = 0;
        if (fr_mod) begin
            for (oi = 0; oi < 16; oi = oi + 1) begin
                bi = ob + oi;
                if (bi >= P && bi < P + L) odata[8*oi +: 8] = obuf[8*oi +: 8] ^ ksa[8*oi +: 8];
                if (bi >= q && bi < P)     odata[8*oi +: 8] = aad[8*(bi - q) +: 8];
                if (is4 && bi == l3 + 2)   odata[8*oi +: 8] = (iptot - 16'd16) >> 8;
                if (is4 && bi == l3 + 3)   odata[8*oi +: 8] = (iptot - 16'd16);
                if (is4 && bi == l3 + 10)  odata[8*oi +: 8] = ipcs[15:8];
                if (is4 && bi == l3 + 11)  odata[8*oi +: 8] = ipcs[7:0];
                if (is6 && bi == l3 + 4)   odata[8*oi +: 8] = (iptot - 16'd16) >> 8;
                if (is6 && bi == l3 + 5)   odata[8*oi +: 8] = (iptot - 16'd16);
                if (bi == l4 + 4)          odata[8*oi +: 8] = (udplen - 16'd16) >> 8;
                if (bi == l4 + 5)          odata[8*oi +: 8] = (udplen - 16'd16);
                if (bi == l4 + 6)          odata[8*oi +: 8] = udpcs[15:8];
                if (bi == l4 + 7)          odata[8*oi +: 8] = udpcs[7:0];
            end
        end
    end
    wire        olast = (ob + 16'd16 >= olen);
    wire [15:0] orem  = olen - ob;
    genvar gi;
    generate for (gi = 0; gi < NB; gi = gi + 1) begin : keep
        assign m_axis_tkeep[gi] = !olast || (gi < orem);
    end endgenerate
    assign m_axis_tdata  = odata;
    assign m_axis_tvalid = (state == S_OUT);
    assign m_axis_tlast  = (state == S_OUT) && olast;
    // tuser: [3:0] status, [4] key update (this frame made the next keys current),
    // [5] decrypted with the previous generation's keys, [7:6] 0
    assign m_axis_tuser  = {2'b00, mode == 2'd2 && fr_mod, kupd, status};
endmodule
