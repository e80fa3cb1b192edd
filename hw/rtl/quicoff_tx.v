// SPDX-License-Identifier: Apache-2.0
// quicoff_tx: transmit-side QUIC 1-RTT packet protection on an AXI4-Stream of
// Ethernet frames (DATA_W = 128), the TX path of the ideal NIC design (docs/hw.md).
//
// In: the frame the host built (Ethernet / 802.1Q / IPv4 / IPv6 / UDP) with
// the plaintext short-header QUIC packet and 16 bytes of room for the tag at
// the end of the UDP datagram (counted in the UDP and IP lengths), and on
// s_axis_tuser at the first beat a descriptor as in QEO: [15:0] entry index,
// [79:16] the full packet number (the header carries its truncated form).
// Out: the same frame protected -- payload sealed with AES-GCM, tag written
// into the room, header protection applied (the sample is taken from the
// ciphertext, so the mask comes after the seal), UDP checksum
// fixed (an IPv4 checksum of 0 stays 0). m_axis_tuser[3:0]: ok, or the frame
// unchanged with unknown_connection (entry not valid), malformed (too short
// for the sample or the tag), passthrough (not UDP/QUIC short header) or
// key_phase_unavailable (the phase bit names a slot that holds neither the
// current generation nor the next one). [4]: this packet started a key update.
//
// Same organisation and control port as quicoff_rx (store-and-forward,
// frames in slots moving through stages that work on different frames at
// once, raw keys expanded in the AES pipeline); TX entries are addressed by
// index (as the DPU prototype's TX table), so there is no hash table. The
// stages: ingress (with the descriptor); parse; decode (entry, key phase,
// nonce); GCM issue (H, E(K, J0), keystream into the AES pipeline); GHASH
// over the ciphertext as the keystream comes out, with its checksum; seal
// (tag, HP sample from the ciphertext, HP block into the AES pipeline);
// finish (mask, counters, key-phase write-back, UDP checksum); egress.
// As in quicoff_rx, every slot's beats and keystream are in block-RAM
// qo_frame_mem memories shared by the slots (registered reads, one copy per
// reader), and a slot keeps the header fields its stages need
// (qo_frame_hdr), not its first 128 bytes.
// A key update the host starts (the next phase's slot used) changes the
// entry's state at decode, so the decode of a later frame of the same entry
// takes the state from the frame in flight; nothing is speculative, because
// a TX frame that passes decode is always protected.
module quicoff_tx #(
    parameter DATA_W   = 128,
    parameter CAP      = 256,
    parameter MAXBEATS = 128
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [DATA_W-1:0] s_axis_tdata,
    input  wire [DATA_W/8-1:0] s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    input  wire [79:0]       s_axis_tuser,
    output wire [DATA_W-1:0] m_axis_tdata,
    output wire [DATA_W/8-1:0] m_axis_tkeep,
    output wire              m_axis_tvalid,
    input  wire              m_axis_tready,
    output wire              m_axis_tlast,
    output wire [7:0]        m_axis_tuser,
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
    localparam EW  = $clog2(CAP);
    localparam MW  = $clog2(MAXBEATS);
    // Frame slots (a power of two: pointers wrap): a 64-byte packet holds its
    // slot about 70 clocks (its beats in and out, two AES latencies, the
    // stages), so one every 7 clocks needs more than 10.
    localparam NS  = 16;
    localparam SW  = 4;
    localparam TAGW = SW + 2 + 8;   // AES tag: {slot, kind [9:8], block [7:0]}
    localparam ST_OK = 4'd0, ST_AUTH = 4'd1, ST_UNKNOWN = 4'd2, ST_MALFORMED = 4'd3,
               ST_PASS = 4'd4, ST_KPU = 4'd5;
    localparam OT_NONE = 2'd0, OT_NEXT = 2'd1, OT_PREV = 2'd2;
    localparam K_HP = 2'd0, K_H = 2'd1, K_J0 = 2'd2, K_KS = 2'd3;

    // ------------------------------------------------------------------
    // helpers (bswap, popc, sum_words16, fold16 are shared)
    `include "qo_util.vh"

    // Lane i of a beat is below n (i < n, n 16 bits): every lane when n >= 16,
    // else those below n[3:0]. One 16-bit test and a 4-input decode per lane,
    // where 16 separate 16-bit comparisons were a carry chain each (as
    // quicoff_rx's).
    function [15:0] lanes_below;
        input [15:0] n;
        lanes_below = (|n[15:4]) ? 16'hffff : ~(16'hffff << n[3:0]);
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
    reg          rb_mode;          // C_ENT2 serves a counter read-back
    reg [EW-1:0] eidx_c;           // the entry a command is about
    reg          ev_push;          // registered: the event is wr_idx
    reg          st_we, cnt_we;    // a frame's PN state / counters, written the clock after finish
    reg [EW-1:0] wr_idx;
    reg [127:0]  st_wdata;
    reg [2:0]    cnt_inc;
    wire [EW-1:0] rd1_idx, rd2_idx;
    wire [162:0] r_cfg;            // the entry as read: {valid, aes256, fail_pass, key160}
    wire [255:0] r_hp;
    wire [351:0] r_k;              // {key256, iv96} of a key slot (unused: port 2 serves decode)
    wire [95:0]  r_cnt;
    wire [351:0] r2_k;             // {key256, iv96} of key slot rd2_kp
    wire         rd2_kp;
    wire [127:0] r2_st;            // {lp_valid, largest62, first62, cur_phase, other2}: decode and read-back
    wire         cmd_apply, rb_load;

    qo_ctrl_port #(.ID(32'h51_4f_54_58), .GEOMETRY({CAP[15:0], 16'd0}), .EW(EW)) ctrl (
        .clk(clk), .rst(rst),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
        .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
        .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
        .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .cfg_dcid_len(cfg_dcid_len), .cfg_seed(cfg_seed), .stage(stage),
        .cmd_pending(cmd_pending), .cmd_op(cmd_op), .cmd_idx(cmd_idx), .cmd_done(cmd_done),
        .counters(counters), .rb_load(rb_load), .rb_cnt(r_cnt), .rb_st(r2_st),
        .ev_push(ev_push), .ev_idx(wr_idx));

    qo_entry_table #(.CAP(CAP), .EW(EW)) table_ (
        .clk(clk), .cmd_apply(cmd_apply), .cmd_op(cmd_op), .cmd_idx(cmd_idx[EW-1:0]),
        .stage(stage), .st_we(st_we), .cnt_we(cnt_we), .wr_idx(wr_idx), .st_wdata(st_wdata),
        .cnt_inc(cnt_inc), .rd_idx(rd1_idx), .rd_kp(1'b0), .rd2_idx(rd2_idx), .rd2_kp(rd2_kp), .r2_k(r2_k),
        .r2_st(r2_st), .r_cfg(r_cfg), .r_hp(r_hp), .r_k(r_k),
        .r_cnt(r_cnt));

    // ------------------------------------------------------------------
    // slots
    reg [SW-1:0] is_, ps, ds, gs, hs, ss, ts, os; // ingress, parse, decode, GCM issue, GHASH, seal, finish, egress
    reg [NS-1:0] full, pdone, pok, ddone, gdone, hdone, sdone, tdone;
    reg [NS-1:0] drp, cand, infl, mval;
    reg [15:0]   tidx_s [0:NS-1];          // descriptor: entry index
    reg [61:0]   tpn_s [0:NS-1];           //             full packet number
    reg [3:0]    pstat [0:NS-1];
    reg [4:0]    dl_s  [0:NS-1];
    reg [15:0]   l4_s [0:NS-1], q_s [0:NS-1], udpend_s [0:NS-1], pnoff_s [0:NS-1];
    // header fields the later stages need, kept by the parse stage (a slot
    // keeps these instead of its first 128 bytes)
    reg [7:0]    first_s [0:NS-1];         // the QUIC first byte (plaintext)
    reg [31:0]   pnb_s [0:NS-1];           // the 4 bytes at the PN offset (plaintext), first at [31:24]
    reg          zcs_s [0:NS-1];           // IPv4 with a UDP checksum of 0 (none)
    reg [2:0]    pnl_s [0:NS-1];
    reg          kp_s [0:NS-1], upd_s [0:NS-1], a256_s [0:NS-1];
    reg [EW-1:0] eidx_s [0:NS-1];
    reg [255:0]  pkey_s [0:NS-1];
    reg [95:0]   nonce_s [0:NS-1];
    reg [15:0]   P_s [0:NS-1], L_s [0:NS-1], nblk_s [0:NS-1], hlen_s [0:NS-1];
    // The plaintext header, frame byte order, from parse: GHASH's AAD and
    // finish's checksum read it. Written by parse only (egress masks the
    // frame's own header bytes, so finish no longer writes the masked
    // header back), so it is LUT RAM, one copy per reader, where two
    // writers made it 4,096 flip-flops with a 2:1 multiplexer each and a
    // 256-bit 16:1 multiplexer per read.
    reg [255:0]  aad_s [0:NS-1];
    reg [255:0]  aad_p;
    reg [127:0]  stn_s [0:NS-1];           // the entry's state after this frame
    reg [127:0]  h_s [0:NS-1], ej0_s [0:NS-1], tagf_s [0:NS-1];
    reg [15:0]   got_s [0:NS-1];           // H, E(K, J0) and keystream blocks out of the AES pipeline
    reg [127:0]  csamp_s [0:NS-1];         // ciphertext from 4 - pn_len bytes into the payload (GHASH)
    reg [31:0]   ctsum_s [0:NS-1];
    // GHASH works on one frame at a time: its running ciphertext sum and
    // first sample part are registers, and each step writes the slot's
    // entry whole, so csamp_s and ctsum_s have one write port and no read
    // of their own (one LUT RAM each rather than a copy per read port, or
    // flip-flops for two writers)
    reg [127:0]  cs0;
    reg [31:0]   cts;
    reg [39:0]   mask_s [0:NS-1];
    reg [3:0]    ost_s [0:NS-1];
    reg          omod_s [0:NS-1], okupd_s [0:NS-1];
    reg [15:0]   udpcs_s [0:NS-1];
    // The UDP checksum is summed where its terms become known, so that
    // finish adds only the bytes header protection masks (it summed the
    // whole datagram's terms in one clock, TX's critical path):
    // - dsum_s, three clocks after parse: the DCID's words, the pseudo
    //   header (addresses, ports, protocol, length twice: the pseudo
    //   header's and the UDP header's);
    // - seal: + the ciphertext's and the tag's sums (csum_s), each placed at
    //   its byte parity by a shift by 8 (x * 256 is x byte-swapped modulo
    //   0xffff, so nothing is folded before finish);
    // - finish: + the masked first byte and PN bytes, folded a clock later.
    reg [21:0]   dsum_s [0:NS-1];
    reg [35:0]   csum_s [0:NS-1];

    // per-slot frame state (beat count, length); the beats themselves are in
    // the shared block-RAM memories below, the header in qo_frame_hdr
    wire [NS*16-1:0]   wbeat_a, flen_a;
    wire [NS-1:0]      ovf_a;
    wire               in_beat = s_axis_tvalid & s_axis_tready;
    reg  [NS-1:0]      restart;
    localparam H_IDLE = 1'b0, H_GH = 1'b1;
    reg                hst;
    genvar gsl;
    generate for (gsl = 0; gsl < NS; gsl = gsl + 1) begin : slot
        qo_frame_buf #(.DATA_W(DATA_W), .MAXBEATS(MAXBEATS)) fb (
            .clk(clk), .rst(rst), .restart(restart[gsl]), .in_beat(in_beat && is_ == gsl),
            .in_keep(s_axis_tkeep), .in_last(s_axis_tlast),
            .wbeat(wbeat_a[16*gsl +: 16]), .ovf(ovf_a[gsl]), .flen(flen_a[16*gsl +: 16]));
    end endgenerate
    wire [15:0]   wbeat_i = wbeat_a[16*is_ +: 16];
    wire [15:0]   flen_p = flen_a[16*ps +: 16];

    // The frames' beats, shared by the slots, in block RAM (registered
    // reads: each reader gives the address of the next clock's window). One
    // copy per reader: GHASH (the plaintext it XORs with the keystream) and
    // egress; the keystream likewise, one copy each.
    reg  [15:0]   ra_h, ra_hk, ra_o, ra_ks; // next clock's offsets: GHASH frame / keystream, egress frame / keystream
    reg  [SW-1:0] os_nx;                    // next clock's egress slot
    wire [127:0]  win_h, ks_hq, obuf, ksa;
    wire          fm_we = in_beat && wbeat_i < MAXBEATS;
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) fm_h (
        .clk(clk), .we(fm_we), .w_slot(is_), .w_beat(wbeat_i[MW-1:0]), .w_data(s_axis_tdata),
        .r_slot(hs), .r_off(ra_h[MW+3:0]), .r_win(win_h));
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) fm_o (
        .clk(clk), .we(fm_we), .w_slot(is_), .w_beat(wbeat_i[MW-1:0]), .w_data(s_axis_tdata),
        .r_slot(os_nx), .r_off(ra_o[MW+3:0]), .r_win(obuf));

    // Two header windows (a frame's first 128 bytes) by slot parity, and
    // the fields the parse stage keeps per slot instead (qo_frame_hdr): a
    // new frame waits at its first beat while the window it would fill is
    // still being parsed (hwin_busy: only frames shorter than 4 beats are
    // that fast).
    wire [1023:0] hdr_p;
    wire [255:0]  f_qhdr;
    wire [7:0]    f_first;
    wire [31:0]   f_pnb;
    wire [20:0]   f_psum;
    wire          f_zcs;
    wire [SW-1:0] is_m2 = is_ - 2'd2;
    wire          hwin_busy = full[is_m2] && !pdone[is_m2];

    // ------------------------------------------------------------------
    // AES pipeline
    reg          a_v;
    reg [127:0]  a_blk;
    reg [255:0]  a_key;
    reg          a_256;
    reg [TAGW-1:0] a_tag;
    wire         ao_v;
    wire [127:0] ao_blk;
    wire [TAGW-1:0] ao_tag;
    qo_aes_pipe #(.TAGW(TAGW)) aes (
        .clk(clk), .rst(rst), .in_valid(a_v), .in_block(a_blk), .in_key(a_key),
        .in_aes256(a_256), .in_tag(a_tag), .out_valid(ao_v), .out_block(ao_blk), .out_tag(ao_tag));
    wire [SW-1:0] ao_s = ao_tag[10 +: SW];
    wire [1:0]    ao_k = ao_tag[9:8];
    // keystream, payload block order, frame byte order (block RAM as the
    // frames): GHASH's copy and egress's
    wire          ks_we = ao_v && ao_k == K_KS;
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) ksm_h (
        .clk(clk), .we(ks_we), .w_slot(ao_s), .w_beat(ao_tag[MW-1:0]),
        .w_data(bswap(ao_blk)), .r_slot(hs), .r_off(ra_hk[MW+3:0]), .r_win(ks_hq));
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) ksm_o (
        .clk(clk), .we(ks_we), .w_slot(ao_s), .w_beat(ao_tag[MW-1:0]),
        .w_data(bswap(ao_blk)), .r_slot(os_nx), .r_off(ra_ks[MW+3:0]), .r_win(ksa));

    // ------------------------------------------------------------------
    // parse
    localparam P_IDLE = 3'd0, P_2 = 3'd2, P_3 = 3'd3, P_4 = 3'd4;
    reg [2:0] pst;
    wire p_go = (pst == P_IDLE) && full[ps] && !pdone[ps] && !drp[ps];
    wire        vlan, is4, is6;
    wire [15:0] l3, l4, q, ip_end, udp_end, udplen, pn_off;
    wire [3:0]  ihl;
    wire [15:0] iptot;
    wire        p_pass, p_malf;
    qo_frame_parse parse (
        .clk(clk), .step(p_go ? 2'd1 : pst == P_2 ? 2'd2 : pst == P_3 ? 2'd3 : 2'd0),
        .hdr(hdr_p), .flen(flen_p), .cfg_dcid_len(cfg_dcid_len),
        .vlan(vlan), .is4(is4), .is6(is6), .l3(l3), .l4(l4), .q(q), .ip_end(ip_end), .udp_end(udp_end),
        .udplen(udplen), .pn_off(pn_off), .ihl(ihl), .iptot(iptot), .p_pass(p_pass), .p_malf(p_malf));
    qo_frame_hdr #(.SAMPLE(0)) hf (
        .clk(clk), .we(in_beat), .w_beat(wbeat_i), .w_odd(is_[0]), .w_data(s_axis_tdata),
        .r_odd(ps[0]), .hdr(hdr_p), .is4(is4), .l3(l3), .l4(l4), .pn_off(pn_off),
        .dcid_len(cfg_dcid_len), .udph(), .qhdr(f_qhdr), .first(f_first), .dcid(), .pnb(f_pnb),
        .samp(), .psum(f_psum), .zcs(f_zcs));

    // ------------------------------------------------------------------
    // decode: entry (both ports read it while ds is current), key phase, nonce
    localparam D_IDLE = 2'd0, D_CHK = 2'd1, D_CMD = 2'd2, D_RB = 2'd3;
    reg [1:0]   dst;
    assign rd1_idx = (dst == D_CMD || dst == D_RB || rb_mode) ? eidx_c : tidx_s[ds][EW-1:0];
    // the decode stage's entry, or a read-back's (between frames): the
    // table keeps one copy of the PN state, read on this port only
    assign rd2_idx = rd1_idx;
    // the key slot of the plaintext first byte's key phase bit (D_CHK's kpn)
    assign rd2_kp = first_s[ds][2];
    assign cmd_apply = (dst == D_CMD);
    assign rb_load = (dst == D_RB) && rb_mode;

    // the entry's state as the frames before this one leave it: the nearest
    // earlier frame of the same entry still in flight, else a write-back
    // too recent for the table read, else the table. Only bits [2:0]
    // (cur_phase, other) can differ from the table's: TX changes no other
    // bit of the state (a frame's state is the state it read with [2:0]
    // set), and commands, which write the whole state, run with the
    // pipeline empty and clear the write-back history. So the search over
    // the slots in flight carries 3 bits, stn3_s, and the rest comes from
    // the table read (stn_s, read by finish only, stays in one LUT RAM
    // instead of one copy per slot the search reads).
    reg [2:0]    wbh_d [0:3];
    reg [EW-1:0] wbh_i [0:3];
    reg [3:0]    wbh_v;
    reg [2:0]    stn3_s [0:NS-1];
    reg [2:0]    st_lo;
    wire [127:0] st_use = {r2_st[127:3], st_lo};
    integer si;
    reg [SW-1:0] sp;
    always @* begin
        st_lo = r2_st[2:0];
        for (si = 3; si >= 0; si = si - 1)
            if (wbh_v[si] && wbh_i[si] == tidx_s[ds][EW-1:0]) st_lo = wbh_d[si];
        for (si = NS - 1; si >= 1; si = si - 1) begin
            sp = ds - si[SW-1:0];
            if (infl[sp] && eidx_s[sp] == tidx_s[ds][EW-1:0]) st_lo = stn3_s[sp];
        end
    end
    // the frame's state after it (D_CHK's updn: the host starts a key
    // update), written in D_CHK for every frame (only protected frames,
    // infl, are read), with one write enable (see GHASH's results below)
    wire         kpn_d  = first_s[ds][2];
    wire         updn_d = kpn_d != st_use[2] && st_use[1:0] == OT_NEXT;
    wire [127:0] stn_d  = updn_d ? {st_use[127:3], kpn_d, OT_PREV} : st_use;
    always @(posedge clk)
        if (!rst && dst == D_CHK) begin
            stn_s[ds]  <= stn_d;
            stn3_s[ds] <= stn_d[2:0];
        end

    // ------------------------------------------------------------------
    // GCM issue (slot gs): H, E(K, J0), keystream
    localparam S_IDLE = 1'b0, S_HP = 1'b1;
    reg         sst;
    localparam G_IDLE = 1'b0, G_ISS = 1'b1;
    reg         gst;
    reg [15:0]  iss;
    wire [15:0] nblk_g = nblk_s[gs];
    wire s_issue = (sst == S_HP);                       // the seal stage's HP block goes first
    wire g_issue = (gst == G_ISS) && !s_issue;

    // ------------------------------------------------------------------
    // GHASH (slot hs) over the ciphertext, as the keystream arrives
    reg [127:0] Y;
    reg [15:0]  g;
    // The frame's values GHASH reads in every step are held in flip-flops,
    // loaded as it takes slot hs (the slot's LUT-RAM entries are final by
    // then): read through hs, the blocks of the AAD (hblk) fed the next
    // step's frame-memory address, TX's critical path after routing (a LUT
    // RAM read, a compare, two adders). jc and the frame offset rac are
    // counted with g, and their successors (jn1, ran) kept beside them, so
    // that the address is a 2:1 choice by h_step.
    reg [15:0]  hblk, hbn, L_h, hlen_h;   // AAD blocks, AAD + ciphertext blocks, payload and header length
    reg [15:0]  jc, jn1, rac, ran;        // g - hblk, that + 1; P + 16 * (g - hblk), that + 16
    wire [15:0] jj = jc;
    wire [15:0] hblk_i = (hlen_s[hs] > 16) ? 16'd2 : 16'd1;   // the next frame's, at H_IDLE
    // step g may run once H is out and, for ciphertext block jj, its keystream
    // (results come in issue order: H, E(K, J0), keystream 0, 1, ...)
    wire h_ready = (g < hblk) ? (got_s[hs] >= 1) : (g < hbn) ? (got_s[hs] >= jj + 16'd3) : (got_s[hs] >= 2);
    wire h_step = (hst == H_GH) && h_ready;
    // The plaintext and keystream block of the next clock's step are read
    // now (registered reads). A keystream block that leaves the AES
    // pipeline in this clock is written as it is read, so the read gives
    // the old word: it is taken from the pipeline's output instead (GHASH
    // may step on a block in the clock after it arrives).
    wire [15:0] jn = h_step ? jn1 : jc;   // g + h_step - hblk
    reg         ksb_v;
    reg [127:0] ksb_d;
    always @(posedge clk) begin
        ksb_v <= ks_we && ao_s == hs && ao_tag[MW-1:0] == jn[MW-1:0];
        ksb_d <= bswap(ao_blk);
    end
    wire [127:0] ks_j = ksb_v ? ksb_d : ks_hq;
    reg  [127:0] gh_in, ctm, mask_j;
    reg  [15:0]  rem, lb_rem;
    wire [127:0] gh_prod;
    // GHASH in two stages, as quicoff_rx's: a step's X (gh_in: the frame
    // memory's window, the keystream, the payload mask, the AAD / lengths
    // select) is prepared and registered in the step's clock (xg_*) and
    // multiplied in the next, so the GF(2^128) multiplier starts from
    // flip-flops (Y, xg_d, Hr) rather than from the block-RAM outputs through
    // the XOR and the mask. Only Y <= (Y ^ X) * H is a recurrence; the cost
    // is a clock of latency (hdone a clock later). A frame's first step
    // multiplies X alone (xg_first masks Y): the previous frame's last
    // multiply may still be writing Y in the clock the next frame is taken.
    // Hr is h_s[hs] sampled every clock, so at t + 1 it is the H of the step
    // prepared at t (h_ready: that H had arrived).
    reg  [127:0]  xg_d, Hr;
    reg           xg_v, xg_first, xg_last;
    reg  [SW-1:0] xg_s;
    always @(posedge clk) Hr <= h_s[hs];
    qo_gf128_mul ghm (.a((xg_first ? 128'd0 : Y) ^ xg_d), .b(Hr), .p(gh_prod));
    integer ci, oi;
    always @* begin
        ra_h  = h_step ? ran : rac;      // P + 16 * jn
        ra_hk = {jn[11:0], 4'b0};
        gh_in = 128'd0;
        ctm   = 128'd0;
        rem   = L_h - {jj[11:0], 4'b0};
        lb_rem = lanes_below(rem);
        for (ci = 0; ci < 16; ci = ci + 1) mask_j[8*ci +: 8] = {8{lb_rem[ci]}};
        if (g < hblk)
            gh_in = bswap(g[0] ? aad_s[hs][255:128] : aad_s[hs][127:0]);
        else if (g < hbn) begin
            ctm   = (win_h ^ ks_j) & mask_j;   // ciphertext = plaintext ^ keystream
            gh_in = bswap(ctm);
        end else
            gh_in = {48'd0, hlen_h[12:0], 3'b000, 48'd0, L_h[12:0], 3'b000};
    end

    // GHASH's per-slot results are written in every clock of H_GH, with the
    // step's value (the one held when there is no step): the last write is
    // the frame's last step, and no other stage reads slot hs before
    // hdone. (A write under a condition inside a case branch of the main
    // block made Yosys map each of these LUT RAMs one bit per
    // TRELLIS_DPR16X4, four times the cells; a single write enable here
    // maps four bits per cell.)
    reg [31:0]  cts_nx;
    reg [127:0] cs_nx;
    always @* begin
        cts_nx = cts;
        cs_nx  = cs0;
        if (h_step && g >= hblk && g < hbn) begin
            cts_nx = cts + sum_words16(ctm);
            // the HP sample's ciphertext bytes, from 4 - pn_len into the
            // payload: within blocks 0 and 1 (bytes past the ciphertext
            // are the tag's, taken at seal)
            if (jj == 16'd0) cs_nx = ctm >> {3'd4 - pnl_s[hs], 3'b000};
            if (jj == 16'd1) cs_nx = cs0 | (ctm << {5'd12 + pnl_s[hs], 3'b000});
        end
    end
    always @(posedge clk)
        if (!rst && hst == H_GH) begin
            ctsum_s[hs] <= cts_nx;
            csamp_s[hs] <= cs_nx;
        end
    // the tag after every multiply of the slot (the last is the lengths
    // step's); E(K, J0) is out before keystream 0
    always @(posedge clk)
        if (!rst && xg_v)
            tagf_s[xg_s] <= bswap(gh_prod ^ ej0_s[xg_s]);

    // ------------------------------------------------------------------
    // seal (slot ss): the HP sample is 16 bytes of ciphertext || tag from
    // 4 - pn_len bytes into the payload (RFC 9001 5.4.2); the ciphertext
    // part was kept by GHASH as it passed (csamp_s)
    wire [15:0]  L_ss = L_s[ss];
    wire [2:0]   pnl_ss = pnl_s[ss];
    // Byte xi of the sample is payload byte rel = 4 - pn_len + xi: the
    // ciphertext's (csamp_s byte xi) while rel < L, else tag byte rel - L.
    // A frame that reaches seal has L >= 4 - pn_len (decode's length check),
    // so rel < L is xi < L + pn_len - 4, and rel - L < 16: tag byte
    // (xi + 4 - pn_len - L) mod 16, one rotation of the tag for every lane.
    wire [15:0]  samp_n   = L_ss + pnl_ss - 16'd4;
    wire [15:0]  samp_lb  = lanes_below(samp_n);
    wire [3:0]   samp_rot = 4'd4 - pnl_ss - L_ss[3:0];
    wire [255:0] samp_t2  = {tagf_s[ss], tagf_s[ss]} >> {samp_rot, 3'b000};
    reg  [127:0] samp;
    integer xi;
    always @* begin
        for (xi = 0; xi < 16; xi = xi + 1)
            samp[8*xi +: 8] = samp_lb[xi] ? csamp_s[ss][8*xi +: 8] : samp_t2[8*xi +: 8];
    end

    // the HP key of the seal stage's entry: port 1 serves decode, so the
    // seal stage keeps its own copy, read when the frame is decoded
    reg [255:0] hpk_s [0:NS-1];
    always @(posedge clk) if (dst == D_CHK) hpk_s[ds] <= r_hp;
    wire [255:0] r_hp_s = hpk_s[ss];

    // ------------------------------------------------------------------
    // UDP checksum terms (see dsum_s)
    // the sum of 8 big-endian 16-bit words as a tree of three adders deep
    function [18:0] sum8_tree;
        input [127:0] b;
        integer j;
        reg [16:0] w2 [0:3];
        begin
            for (j = 0; j < 4; j = j + 1)
                w2[j] = {1'b0, b[32*j +: 8], b[32*j + 8 +: 8]} + {1'b0, b[32*j + 16 +: 8], b[32*j + 24 +: 8]};
            sum8_tree = ({2'd0, w2[0]} + {2'd0, w2[1]}) + ({2'd0, w2[2]} + {2'd0, w2[3]});
        end
    endfunction
    // After parse: the DCID (header bytes 1 .. dcid_len, where the AAD's
    // first byte and PN bytes are zero), the pseudo header and the lengths,
    // in two clocks (dc_v: one bit a clock) while the frame goes on to decode.
    reg  [1:0]    dc_v;
    reg  [SW-1:0] dc_s [0:1];
    reg  [175:0]  dc_hdr;              // header bytes 0..21: the first byte and a 20-byte DCID
    reg  [20:0]   dc_psum;
    reg  [15:0]   dc_ulen;
    reg  [18:0]   dc_w0, dc_w1;
    reg  [21:0]   dc_m;          // < 2^21 + 2^17 + 17
    integer di;
    always @(posedge clk) begin
        dc_v <= rst ? 2'b00 : {dc_v[0], pst == P_4};
        dc_s[0] <= ps;
        dc_s[1] <= dc_s[0];
        for (di = 0; di < 22; di = di + 1)
            dc_hdr[8*di +: 8] <= (di >= 1 && di < 1 + cfg_dcid_len) ? f_qhdr[8*di +: 8] : 8'd0;
        dc_psum <= f_psum;
        dc_ulen <= udplen;
        dc_w0 <= sum8_tree(dc_hdr[127:0]);
        dc_w1 <= sum8_tree({80'd0, dc_hdr[175:128]});
        dc_m  <= {1'd0, dc_psum} + {5'd0, dc_ulen, 1'b0} + 22'd17;
        if (dc_v[1])
            dsum_s[dc_s[1]] <= ({3'd0, dc_w0} + {3'd0, dc_w1}) + dc_m;
    end
    // At seal: the tag's words (summed in S_IDLE, tws) and the ciphertext's
    // sum from GHASH, each at its parity in the datagram (the UDP header
    // is at an even offset of the frame: 14 or 18 + 20 + 4 x options or 40),
    // written in S_HP with one write enable.
    reg  [18:0] tws;
    wire [35:0] ct_sum  = P_s[ss][0] ? {4'd0, ctsum_s[ss]} << 8 : {4'd0, ctsum_s[ss]};
    wire [35:0] tag_sum = (P_s[ss][0] ^ L_s[ss][0]) ? {17'd0, tws} << 8 : {17'd0, tws};
    always @(posedge clk)
        if (!rst && sst == S_HP)
            csum_s[ss] <= ({14'd0, dsum_s[ss]} + ct_sum) + tag_sum;
    // At finish: the masked first byte (high byte of word 0) and the pn_len
    // masked PN bytes at header bytes 1 + dcid_len + i (i < pn_len): the
    // low byte of a word when dcid_len is even, the high byte when odd.
    wire [2:0]  pnl_t  = pnl_s[ts];
    wire [39:0] mask_t = mask_s[ts];
    wire [31:0] pn_keep = ~(32'hffffffff >> {pnl_t, 3'b000});
    wire [31:0] pnm    = (pnb_s[ts] ^ mask_t[31:0]) & pn_keep;
    wire [7:0]  fbm    = first_s[ts] ^ (mask_t[39:32] & 8'h1f);
    wire        dl_odd = dl_s[ts][0];
    wire [15:0] mt0 = dl_odd ? {fbm, 8'd0}      : {fbm, pnm[31:24]};
    wire [15:0] mt1 = dl_odd ? pnm[31:16]       : pnm[23:8];
    wire [15:0] mt2 = dl_odd ? pnm[15:0]        : {pnm[7:0], 8'd0};
    wire [17:0] masked_sum = ({2'd0, mt0} + {2'd0, mt1}) + {2'd0, mt2};
    // the fold and the complement, a clock after finish
    reg          fin_v, fin_z;
    reg [SW-1:0] fin_s;
    reg [35:0]   fin_sum;
    reg [17:0]   fo1;
    reg [16:0]   fo2;
    reg [15:0]   fo3;
    always @* begin
        fo1 = ({2'd0, fin_sum[15:0]} + {2'd0, fin_sum[31:16]}) + {14'd0, fin_sum[35:32]};
        fo2 = {1'b0, fo1[15:0]} + {15'd0, fo1[17:16]};
        fo3 = fo2[15:0] + {15'd0, fo2[16]};
    end
    always @(posedge clk)
        if (fin_v)
            udpcs_s[fin_s] <= fin_z ? 16'd0 : (~fo3 == 16'd0) ? 16'hffff : ~fo3;

    // ------------------------------------------------------------------
    // finish (slot ts) and egress (slot os)
    wire        ost = tdone[os];
    reg [15:0]  k;
    // (a slot being freed is not written in the clock its buffer restarts)
    assign s_axis_tready = !full[is_] && !restart[is_] && !((cmd_pending || hwin_busy) && wbeat_i == 0);
    wire pipe_empty = (full == 0);

    integer i;
    reg [15:0]  L_n;
    reg [2:0]   pnl;
    reg [7:0]   fb0;
    reg         kpn, updn, kpun;
    reg [127:0] stu;

    always @(posedge clk) begin
        a_v <= 1'b0;
        fin_v <= 1'b0;
        cmd_done <= 1'b0;
        ev_push <= 1'b0;
        st_we <= 1'b0;
        cnt_we <= 1'b0;
        restart <= 0;
        wbh_v <= {wbh_v[2:0], 1'b0};
        wbh_d[1] <= wbh_d[0]; wbh_d[2] <= wbh_d[1]; wbh_d[3] <= wbh_d[2];
        wbh_i[1] <= wbh_i[0]; wbh_i[2] <= wbh_i[1]; wbh_i[3] <= wbh_i[2];
        if (ao_v) begin
            case (ao_k)
                K_HP: begin mask_s[ao_s] <= ao_blk[127:88]; mval[ao_s] <= 1'b1; end
                K_H:  begin h_s[ao_s] <= ao_blk; got_s[ao_s] <= got_s[ao_s] + 1; end
                K_J0: begin ej0_s[ao_s] <= ao_blk; got_s[ao_s] <= got_s[ao_s] + 1; end
                K_KS: got_s[ao_s] <= got_s[ao_s] + 1;
            endcase
        end
        if (rst) begin
            is_ <= 0; ps <= 0; ds <= 0; gs <= 0; hs <= 0; ss <= 0; ts <= 0; os <= 0;
            full <= 0; pdone <= 0; pok <= 0; ddone <= 0; gdone <= 0; hdone <= 0; sdone <= 0;
            tdone <= 0; drp <= 0; cand <= 0; infl <= 0; mval <= 0; k <= 0; xg_v <= 0;
            pst <= P_IDLE; dst <= D_IDLE; gst <= G_IDLE; hst <= H_IDLE; sst <= S_IDLE;
            rb_mode <= 0;
            wbh_v <= 0;
            for (i = 0; i < 8; i = i + 1) cnt_g[i] <= 0;
        end else begin
            // ---------------- ingress: the descriptor rides on the first beat
            if (in_beat) begin
                if (wbeat_i == 0) begin
                    tidx_s[is_] <= s_axis_tuser[15:0];
                    tpn_s[is_]  <= s_axis_tuser[77:16];
                end
                if (s_axis_tlast) begin
                    cnt_g[0] <= cnt_g[0] + 1;
                    full[is_] <= 1'b1;
                    drp[is_]  <= ovf_a[is_] || wbeat_i >= MAXBEATS;
                    is_ <= is_ + 1'b1;
                end
            end

            // ---------------- parse
            case (pst)
            P_IDLE: if (full[ps] && !pdone[ps]) begin
                if (drp[ps]) begin
                    pok[ps] <= 1'b0;
                    pdone[ps] <= 1'b1;
                    ps <= ps + 1'b1;
                end else
                    pst <= P_2;
            end
            P_2: pst <= P_3;
            P_3: pst <= P_4;
            P_4: begin
                // what decode (first byte), GHASH (the AAD) and finish
                // (checksum) would otherwise read from the header
                first_s[ps] <= f_first;
                pnb_s[ps]   <= f_pnb;
                for (i = 0; i < 32; i = i + 1)       // the AAD: first byte, DCID, PN
                    aad_p[8*i +: 8] = (i < 1 + cfg_dcid_len + f_first[1:0] + 1) ? f_qhdr[8*i +: 8] : 8'd0;
                aad_s[ps] <= aad_p;
                zcs_s[ps]  <= f_zcs;
                dl_s[ps] <= cfg_dcid_len;
                l4_s[ps] <= l4; q_s[ps] <= q; udpend_s[ps] <= udp_end;
                pnoff_s[ps] <= pn_off;
                pstat[ps] <= p_pass ? ST_PASS : ST_MALFORMED;
                pok[ps] <= !(p_pass || p_malf);
                pdone[ps] <= 1'b1;
                ps <= ps + 1'b1;
                pst <= P_IDLE;
            end
            default: pst <= P_IDLE;
            endcase

            // ---------------- decode (and control commands, between frames)
            case (dst)
            D_IDLE: begin
                if (cmd_pending && !cmd_done && pipe_empty && wbeat_i == 0 && !st_we && !cnt_we) begin
                    eidx_c <= cmd_idx[EW-1:0];
                    dst <= D_CMD;
                end else if (pdone[ds] && !ddone[ds]) begin
                    if (!pok[ds]) begin
                        cand[ds] <= 1'b0;
                        ddone[ds] <= 1'b1;
                        ds <= ds + 1'b1;
                    end else
                        dst <= D_CHK;     // the entry is read in this clock
                end
            end
            D_CMD: begin
                // commands 1, 2, 4, 6 are applied by the entry table in this clock;
                // the write-back history no longer speaks for the table
                wbh_v <= 4'd0;
                rb_mode <= (cmd_op == 4'd5);
                if (cmd_op == 4'd5) dst <= D_RB;
                else begin
                    cmd_done <= 1'b1;
                    dst <= D_IDLE;
                end
            end
            D_RB: begin                   // counter read-back: the entry read is out now
                rb_mode <= 1'b0;
                cmd_done <= 1'b1;
                dst <= D_IDLE;
            end
            D_CHK: begin
                fb0  = first_s[ds];                // plaintext first byte
                pnl  = fb0[1:0] + 3'd1;
                kpn  = fb0[2];
                stu  = st_use;
                updn = 1'b0;
                kpun = 1'b0;
                if (kpn != stu[2]) begin
                    if (stu[1:0] == OT_NEXT) updn = 1'b1;   // the host starts a key update
                    else                     kpun = 1'b1;
                end
                eidx_s[ds] <= tidx_s[ds][EW-1:0];
                pnl_s[ds]  <= pnl;
                kp_s[ds]   <= kpn;
                upd_s[ds]  <= updn;
                a256_s[ds] <= r_cfg[161];
                if (!r_cfg[162] || tidx_s[ds] >= CAP) begin
                    pstat[ds] <= ST_UNKNOWN;
                    cand[ds] <= 1'b0;
                end else if (pnoff_s[ds] + 16'd20 > udpend_s[ds]) begin
                    pstat[ds] <= ST_MALFORMED;
                    cand[ds] <= 1'b0;
                end else if (kpun) begin
                    pstat[ds] <= ST_KPU;
                    cand[ds] <= 1'b0;
                end else begin
                    cand[ds] <= 1'b1;
                    infl[ds] <= 1'b1;
                end
                pkey_s[ds]  <= r2_k[351:96];   // key slot kpn (rd2_kp)
                nonce_s[ds] <= r2_k[95:0] ^ {34'd0, tpn_s[ds]};
                P_s[ds]     <= pnoff_s[ds] + pnl;
                L_n = udpend_s[ds] - pnoff_s[ds] - pnl - 16'd16;
                L_s[ds]     <= L_n;
                nblk_s[ds]  <= (L_n + 16'd15) >> 4;
                hlen_s[ds]  <= 16'd1 + dl_s[ds] + pnl;
                got_s[ds]   <= 0;
                mval[ds]    <= 1'b0;
                ddone[ds] <= 1'b1;
                ds <= ds + 1'b1;
                dst <= D_IDLE;
            end
            default: dst <= D_IDLE;
            endcase

            // ---------------- GCM issue
            case (gst)
            G_IDLE: if (ddone[gs] && !gdone[gs]) begin
                if (!cand[gs]) begin
                    gdone[gs] <= 1'b1;
                    gs <= gs + 1'b1;
                end else begin
                    iss <= 0;
                    gst <= G_ISS;
                end
            end
            G_ISS: if (g_issue) begin
                a_v   <= 1'b1;
                a_key <= pkey_s[gs];
                a_256 <= a256_s[gs];
                a_blk <= (iss == 0) ? 128'd0 : {nonce_s[gs], 16'd0, iss};
                a_tag <= (iss == 0) ? {gs, K_H, 8'd0} : (iss == 1) ? {gs, K_J0, 8'd0} :
                         {gs, K_KS, iss[7:0] - 8'd2};
                iss   <= iss + 1;
                if (iss == nblk_g + 1) begin
                    gdone[gs] <= 1'b1;
                    gs <= gs + 1'b1;
                    gst <= G_IDLE;
                end
            end
            default: gst <= G_IDLE;
            endcase

            // ---------------- GHASH
            case (hst)
            H_IDLE: if (gdone[hs] && !hdone[hs]) begin
                if (!cand[hs]) begin
                    hdone[hs] <= 1'b1;
                    hs <= hs + 1'b1;
                end else begin
                    g <= 0;
                    cts <= 32'd0;
                    hst <= H_GH;
                    hblk   <= hblk_i;
                    hbn    <= hblk_i + nblk_s[hs];
                    L_h    <= L_s[hs];
                    hlen_h <= hlen_s[hs];
                    jc     <= 16'd0 - hblk_i;
                    jn1    <= 16'd1 - hblk_i;
                    rac    <= P_s[hs] - {hblk_i[11:0], 4'b0};
                    ran    <= P_s[hs] - {hblk_i[11:0], 4'b0} + 16'd16;
                end
            end
            H_GH: if (h_step) begin
                g <= g + 1;
                jc  <= jn1;
                jn1 <= jn1 + 16'd1;
                rac <= ran;
                ran <= ran + 16'd16;
                cts <= cts_nx;        // (ctsum_s, csamp_s and tagf_s: above)
                cs0 <= cs_nx;
                if (g == hbn) begin   // the lengths step, prepared: hdone follows its multiply
                    hs <= hs + 1'b1;
                    hst <= H_IDLE;
                end
            end
            default: hst <= H_IDLE;
            endcase
            // GHASH's second stage: the multiply of the step prepared last clock
            xg_v <= h_step;
            if (h_step) begin
                xg_d     <= gh_in;
                xg_first <= (g == 0);
                xg_last  <= (g == hbn);
                xg_s     <= hs;
            end
            if (xg_v) begin
                Y <= gh_prod;
                if (xg_last) hdone[xg_s] <= 1'b1;
            end

            // ---------------- seal: HP block from the ciphertext sample
            case (sst)
            S_IDLE: if (hdone[ss] && !sdone[ss]) begin
                tws <= sum8_tree(tagf_s[ss]);
                if (!cand[ss]) begin
                    sdone[ss] <= 1'b1;
                    ss <= ss + 1'b1;
                end else
                    sst <= S_HP;
            end
            S_HP: begin
                a_v   <= 1'b1;
                a_blk <= bswap(samp);
                a_key <= r_hp_s;
                a_256 <= a256_s[ss];
                a_tag <= {ss, K_HP, 8'd0};
                sdone[ss] <= 1'b1;
                ss <= ss + 1'b1;
                sst <= S_IDLE;
            end
            default: sst <= S_IDLE;
            endcase

            // ---------------- finish
            if (sdone[ts] && !tdone[ts] && (!cand[ts] || mval[ts])) begin
                okupd_s[ts] <= 1'b0;
                omod_s[ts]  <= cand[ts] && !drp[ts];
                ost_s[ts]   <= cand[ts] ? ST_OK : pstat[ts];
                infl[ts]    <= 1'b0;
                wr_idx      <= eidx_s[ts];
                if (drp[ts]) begin
                    cnt_g[7] <= cnt_g[7] + 1;
                end else if (cand[ts]) begin
                    cnt_we  <= 1'b1;
                    cnt_inc <= {1'b1, 1'b0, upd_s[ts]};
                    if (upd_s[ts]) begin
                        st_we    <= 1'b1;
                        st_wdata <= stn_s[ts];
                        wbh_v[0] <= 1'b1;
                        wbh_d[0] <= stn_s[ts][2:0];
                        wbh_i[0] <= eidx_s[ts];
                        okupd_s[ts] <= 1'b1;
                        ev_push <= 1'b1;
                    end
                    cnt_g[1] <= cnt_g[1] + 1;
                end else case (pstat[ts])
                    ST_UNKNOWN:   cnt_g[3] <= cnt_g[3] + 1;
                    ST_MALFORMED: cnt_g[4] <= cnt_g[4] + 1;
                    ST_PASS:      cnt_g[5] <= cnt_g[5] + 1;
                    ST_KPU:       cnt_g[6] <= cnt_g[6] + 1;
                    default: ;
                endcase
                // the UDP checksum: the masked bytes onto csum_s (folded in the
                // next clock, which egress does not see: the checksum is in
                // beat 2 or later, two clocks after tdone at the earliest)
                fin_v   <= 1'b1;
                fin_s   <= ts;
                fin_z   <= zcs_s[ts];
                fin_sum <= csum_s[ts] + {20'd0, masked_sum};
                tdone[ts] <= 1'b1;
                ts <= ts + 1'b1;
            end

            // ---------------- egress (a dropped frame only frees its slot)
            if (tdone[os]) begin
                if (drp[os] || (m_axis_tready && {k[11:0], 4'b0} + 16'd16 >= flen_a[16*os +: 16])) begin
                    full[os] <= 1'b0; pdone[os] <= 1'b0; ddone[os] <= 1'b0; gdone[os] <= 1'b0;
                    hdone[os] <= 1'b0; sdone[os] <= 1'b0; tdone[os] <= 1'b0;
                    restart[os] <= 1'b1;
                    os <= os + 1'b1;
                    k  <= 0;
                end else if (m_axis_tready)
                    k <= k + 1;
            end
        end
    end


    // ------------------------------------------------------------------
    // output beat k of slot os. The memories are read a clock ahead: their
    // addresses are those of the slot and beat egress will be at next.
    reg [15:0] k_nx, kb_nx;
    always @* begin
        os_nx = os;
        k_nx  = k;
        if (rst) begin
            os_nx = 0;
            k_nx  = 0;
        end else if (tdone[os]) begin
            if (drp[os] || (m_axis_tready && {k[11:0], 4'b0} + 16'd16 >= flen_a[16*os +: 16])) begin
                os_nx = os + 1'b1;
                k_nx  = 0;
            end else if (m_axis_tready)
                k_nx = k + 1;
        end
        ra_o  = {k_nx[11:0], 4'b0};
        kb_nx = k_nx - P_s[os_nx][15:4];
        ra_ks = {kb_nx[11:0], 4'b0} - P_s[os_nx][3:0];   // the keystream byte of the beat's first byte
    end
    wire [15:0]  P_o = P_s[os], L_o = L_s[os], q_o = q_s[os], l4_o = l4_s[os], flen_o = flen_a[16*os +: 16];
    wire [15:0]  pnoff_o = pnoff_s[os];
    wire [2:0]   pnl_o = pnl_s[os];
    wire [39:0]  mask_o = mask_s[os];
    wire [15:0]  udpcs_o = udpcs_s[os];
    wire [127:0] tagf_o = tagf_s[os];
    wire         fr_mod = omod_s[os];
    wire [15:0]  ob   = {k[11:0], 4'b0};
    // Byte {k, oi} of the frame. Every region bound and rewritten field is
    // compared once per beat (its beat number against k) and once per byte
    // lane (its low 4 bits against the constant oi), as quicoff_rx's egress,
    // instead of a 16-bit adder and comparators per lane. The equality
    // targets keep the carry of their 32-bit sum (the byte number is 16
    // bits), so a field past 64 KiB matches nothing, as before.
    wire [11:0]  kk   = k[11:0];
    wire [15:0]  E_o  = P_o + L_o;                  // payload end (the tag's start), 16 bits as before
    wire [16:0]  Et_o = {1'b0, E_o} + 17'd16;       // the tag's end: past 64 KiB no byte is the tag's
    wire         k_gtP = kk > P_o[15:4], k_eqP = kk == P_o[15:4];
    wire         k_ltE = kk < E_o[15:4], k_eqE = kk == E_o[15:4];
    wire         k_eqT = kk == Et_o[15:4];
    // the tag's bytes: lane oi of a beat in the tag shows tag byte
    // (16 k + oi - E) mod 16, so one rotation by -E mod 16 serves every lane
    wire [3:0]   tag_rot = 4'd0 - E_o[3:0];
    wire [255:0] tag_2x  = {tagf_o, tagf_o} >> {tag_rot, 3'b000};
    wire [127:0] tag_w   = tag_2x[127:0];
    // The header's plaintext bytes are the frame's own (the AAD kept at
    // parse is bytes q.. of the frame), so egress masks the frame's bytes
    // where finish masked the AAD: the first byte's low 5 bits and the
    // pn_len bytes at pn_off.
    wire [16:0]  f_q   = {1'b0, q_o};
    wire [16:0]  f_pn0 = pnoff_o + 17'd0, f_pn1 = pnoff_o + 17'd1, f_pn2 = pnoff_o + 17'd2, f_pn3 = pnoff_o + 17'd3;
    wire [16:0]  f_u6  = l4_o + 17'd6,    f_u7  = l4_o + 17'd7;
    function hit;   // is byte (kk, lane) the 17-bit position f?
        input [16:0] f;
        input [11:0] kb;
        input [3:0]  lane;
        hit = !f[16] && kb == f[15:4] && lane == f[3:0];
    endfunction
    reg  [127:0] odata;
    always @* begin
        odata = obuf;
        oi = 0;          // (assigned on every path: a loop variable is a latch to Yosys otherwise)
        if (fr_mod) begin
            for (oi = 0; oi < 16; oi = oi + 1) begin
                if ((k_gtP || (k_eqP && oi >= P_o[3:0])) && (k_ltE || (k_eqE && oi < E_o[3:0])))
                    odata[8*oi +: 8] = obuf[8*oi +: 8] ^ ksa[8*oi +: 8];
                if (!Et_o[16] && ((k_eqE && oi >= E_o[3:0]) || (k_eqT && oi < E_o[3:0])))
                    odata[8*oi +: 8] = tag_w[8*oi +: 8];
                if (hit(f_q, kk, oi))                      odata[8*oi +: 8] = obuf[8*oi +: 8] ^ (mask_o[39:32] & 8'h1f);
                if (pnl_o > 3'd0 && hit(f_pn0, kk, oi))    odata[8*oi +: 8] = obuf[8*oi +: 8] ^ mask_o[31:24];
                if (pnl_o > 3'd1 && hit(f_pn1, kk, oi))    odata[8*oi +: 8] = obuf[8*oi +: 8] ^ mask_o[23:16];
                if (pnl_o > 3'd2 && hit(f_pn2, kk, oi))    odata[8*oi +: 8] = obuf[8*oi +: 8] ^ mask_o[15:8];
                if (pnl_o > 3'd3 && hit(f_pn3, kk, oi))    odata[8*oi +: 8] = obuf[8*oi +: 8] ^ mask_o[7:0];
                if (hit(f_u6, kk, oi))                     odata[8*oi +: 8] = udpcs_o[15:8];
                if (hit(f_u7, kk, oi))                     odata[8*oi +: 8] = udpcs_o[7:0];
            end
        end
    end
    wire        olast = (ob + 16'd16 >= flen_o);
    wire [15:0] orem  = flen_o - ob;
    wire [15:0] lb_o  = lanes_below(orem);
    genvar gi;
    generate for (gi = 0; gi < NB; gi = gi + 1) begin : keep
        assign m_axis_tkeep[gi] = !olast || lb_o[gi];
    end endgenerate
    assign m_axis_tdata  = odata;
    assign m_axis_tvalid = ost && !drp[os];
    assign m_axis_tlast  = ost && !drp[os] && olast;
    assign m_axis_tuser  = {3'b000, okupd_s[os], ost_s[os]};
endmodule
