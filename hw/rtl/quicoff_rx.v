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
// frame can leave before its last byte has been checked.
//
// Why a pipeline of frames: one frame at a time costs a frame its beats twice
// (in and out) plus two AES latencies (HP mask, then E(K, J0)) and the
// lookup, about 60 clocks for a 64-byte packet that has 7 beats. Here NS
// frame slots move in order through five stages that work on different
// frames at once, each its own small FSM with a slot pointer:
//   ingress  beats into the free slot (qo_frame_mem, shared by the slots)
//   front    parse, hash lookup, entry read; HP block and H = E(K, 0) of both
//            key slots into the AES pipeline (the phase bit is still masked)
//   back     unmask, PN decode and key choice; E(K, J0) and the keystream
//            into the AES pipeline while GHASH absorbs the AAD, the
//            ciphertext and the lengths, one block per clock
//   finish   tag check (once J0 and the last keystream block are out),
//            status, PN state and counter write-back, checksums
//   egress   the rewritten frame, one beat per clock
// AES results carry their slot in the tag; each keystream block is summed
// into its slot's plaintext checksum as it leaves the pipeline.
//
// Why speculation: the PN decode and key choice of a frame need the entry's
// state after every earlier frame of that entry, but an earlier frame's tag
// is checked an AES latency after its own decode. The back stage takes the
// state the nearest earlier in-flight frame of the same entry will write if
// it authenticates. When a frame fails authentication, the frames behind it
// in the back stage are decoded again (their AES results of the abandoned
// round are told apart by an epoch in the tag), so the output equals one
// frame at a time, bit for bit. Control commands wait for an empty pipeline.
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
    parameter MAXBEATS = 128,     // frame buffer: 2,048 bytes per slot
    // Frame slots (a power of two: pointers wrap). A 64-byte packet (7
    // beats) holds its slot about 65 clocks (its beats in and out, two AES
    // latencies, the stages), so one every 7 clocks needs 10 slots: 16.
    // 8 keeps one beat per clock from 88 bytes up (docs/hw.md, "Fewer
    // slots") in less area, which is what the place-and-route fallback uses.
    parameter NS       = 16
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
    // one clock per frame that egress passes over without sending (fail action
    // drop, or longer than the buffer), in output order: quicoff_rx_w512's
    // in-order merge needs to know that a frame will not come
    output wire              m_drop,
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
    localparam SW  = $clog2(NS);
    localparam TAGW = 3 + SW + 2 + 8;

    // statuses (m_axis_tuser[3:0]); the names match libquicoff's
    localparam ST_OK = 4'd0, ST_AUTH = 4'd1, ST_UNKNOWN = 4'd2, ST_MALFORMED = 4'd3,
               ST_PASS = 4'd4, ST_KPU = 4'd5;
    // "other" key slot state
    localparam OT_NONE = 2'd0, OT_NEXT = 2'd1, OT_PREV = 2'd2;
    // AES tag: {epoch (GCM blocks), slot, kind [9:8], block [7:0]}
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

    // The lookup hash: five xorshift32 rounds over the key, seeded
    // (rtl_driver.rtl_hash computes the same, to place entries).
    function [31:0] qo_hash_rounds;
        input [31:0]  seed;
        input [159:0] k;
        reg [31:0] h;
        integer i;
        begin
            h = seed;
            for (i = 0; i < 5; i = i + 1) h = xs32(h ^ k[159 - 32*i -: 32]);
            qo_hash_rounds = h;
        end
    endfunction

    // The rounds are XORs and shifts only, so every hash bit is the XOR of a
    // fixed set of the 192 seed and key bits: HASH_MASKS holds those sets
    // (bit j of mask b: does input bit j reach hash bit b), made at
    // elaboration from the rounds themselves. As masks, each bit is one
    // balanced XOR tree: 7 levels in synth_ecp5 of the hash alone, against
    // 16 for the five rounds in series, whose output (the lookup's bucket
    // address) was among the deepest paths of the core.
    function [32*192-1:0] hash_masks;
        input integer unused;
        reg [191:0] e;
        reg [31:0]  h;
        integer j, b;
        begin
            hash_masks = 0;
            for (j = 0; j < 192; j = j + 1) begin
                e = 192'd1 << j;
                h = qo_hash_rounds(e[191:160], e[159:0]);
                for (b = 0; b < 32; b = b + 1) hash_masks[192*b + j] = h[b];
            end
        end
    endfunction
    localparam [32*192-1:0] HASH_MASKS = hash_masks(0);

    function [31:0] qo_hash;
        input [31:0]  seed;
        input [159:0] k;
        integer b;
        begin
            for (b = 0; b < 32; b = b + 1) qo_hash[b] = ^({seed, k} & HASH_MASKS[192*b +: 192]);
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
    reg          rb_mode;          // F_ENT2 serves a counter read-back, not a frame
    reg [EW-1:0] eidx_f;           // the entry the front stage (or a command) reads
    reg          ev_push;          // registered: the event is wr_idx
    reg          st_we, cnt_we;    // a frame's PN state / counters, written the clock after T_FIN
    reg [EW-1:0] wr_idx;
    reg [127:0]  st_wdata;
    reg [2:0]    cnt_inc;
    wire [EW-1:0] rd1_idx, rd2_idx;
    wire [162:0] r_cfg;            // the entry as read: {valid, aes256, fail_pass, key160}
    wire [255:0] r_hp;
    wire [351:0] r_k;              // {key256, iv96} of key slot rd1_kp
    wire [95:0]  r_cnt;
    wire [351:0] r2_k;             // the back stage's read port: key slot rd2_kp
    wire         rd1_kp, rd2_kp;
    wire [127:0] r2_st;            // {lp_valid, largest62, first62, cur_phase, other2}: decode and read-back
    reg [29*WAYS-1:0] bkt [0:NBUCKET-1];  // lookup buckets: WAYS x {valid, fp12, idx16}
    wire         cmd_apply, rb_load;   // (from the front FSM, below)

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
        .counters(counters), .rb_load(rb_load), .rb_cnt(r_cnt), .rb_st(r2_st),
        .ev_push(ev_push), .ev_idx(wr_idx));

    qo_entry_table #(.CAP(CAP), .EW(EW)) table_ (
        .clk(clk), .cmd_apply(cmd_apply), .cmd_op(cmd_op), .cmd_idx(cmd_idx[EW-1:0]),
        .stage(stage), .st_we(st_we), .cnt_we(cnt_we), .wr_idx(wr_idx), .st_wdata(st_wdata),
        .cnt_inc(cnt_inc), .rd_idx(rd1_idx), .rd_kp(rd1_kp), .rd2_idx(rd2_idx), .rd2_kp(rd2_kp), .r2_k(r2_k),
        .r2_st(r2_st), .r_cfg(r_cfg), .r_hp(r_hp), .r_k(r_k),
        .r_cnt(r_cnt));

    // ------------------------------------------------------------------
    // slots: per-slot results of every stage (the beats: the shared memories below)
    reg [SW-1:0] is_, ps, fs, ds, bs, ts, os; // slot of ingress, parse, lookup, decode, GCM, finish, egress
    reg [NS-1:0] full, pdone, pok, fdone, ddone, bdone, tdone;
    reg [NS-1:0] drp;                      // longer than the buffer: dropped
    reg [NS-1:0] cand;                     // front found an entry: crypto to do
    reg [NS-1:0] mval, hval;               // HP mask / H of key slot 1 arrived
    reg [NS-1:0] infl;                     // back decoded it, finish not yet done
    reg [3:0]    pstat [0:NS-1];           // front's status when not a candidate
    reg [4:0]    dl_s  [0:NS-1];           // DCID length the frame was parsed with
    reg          is4_s [0:NS-1], is6_s [0:NS-1];
    reg [15:0]   l3_s [0:NS-1], l4_s [0:NS-1], q_s [0:NS-1], udpend_s [0:NS-1], udplen_s [0:NS-1],
                 pnoff_s [0:NS-1], iptot_s [0:NS-1];
    reg [EW-1:0] eidx_s [0:NS-1];
    reg [159:0]  lkey_s [0:NS-1];          // lookup key
    reg          a256_s [0:NS-1], fpass_s [0:NS-1];
    reg [39:0]   mask_s [0:NS-1];
    reg [127:0]  h0_s [0:NS-1], h1_s [0:NS-1], ej0_s [0:NS-1], yf_s [0:NS-1];
    reg [15:0]   got_s [0:NS-1];
    reg [31:0]   ptsum_s [0:NS-1];
    reg          kp_s [0:NS-1], kpu_s [0:NS-1];
    reg [1:0]    mode_s [0:NS-1];
    reg [61:0]   pn_s [0:NS-1];
    reg [15:0]   P_s [0:NS-1], L_s [0:NS-1], nblk_s [0:NS-1], hlen_s [0:NS-1];
    reg [255:0]  aad_s [0:NS-1];           // frame byte order, zero after hlen
    // header fields the later stages need, taken from the header window by
    // the parse stage (a slot keeps these instead of its first 128 bytes)
    reg [127:0]  samp_s [0:NS-1];          // the HP sample, frame byte order
    reg [7:0]    first_s [0:NS-1];         // the QUIC first byte, protected
    reg [31:0]   pnb_s [0:NS-1];           // the 4 bytes at the PN offset, protected, first at [31:24]
    reg [20:0]   psum_s [0:NS-1];          // UDP pseudo-header addresses + ports, 16-bit word sum
    reg [20:0]   ipsum_s [0:NS-1];         // IPv4 header words but the checksum, summed (the total length rewritten)
    reg [15:0]   hsum_s [0:NS-1];          // UDP checksum terms known at decode, folded (see "checksum terms")
    reg          zcs_s [0:NS-1];           // IPv4 with a UDP checksum of 0 (none)
    reg [127:0]  stn_s [0:NS-1];           // PN state after the frame, if it authenticates
    reg [3:0]    ost_s [0:NS-1];           // finish's results for egress
    reg          omod_s [0:NS-1], okupd_s [0:NS-1], oprev_s [0:NS-1], odrop_s [0:NS-1];
    reg [15:0]   olen_s [0:NS-1], ipcs_s [0:NS-1], udpcs_s [0:NS-1];
    reg [2:0]    epoch;
    // The UDP checksum's terms known at decode (the AAD's word sums, the
    // pseudo-header sum, the length and the constant) are summed over the
    // clocks after D_PN4 as a tree, four clocks (cs_v: one bit a stage), and
    // folded into hsum_s; finish then adds two folded 16-bit terms. The
    // partial sums are folded ones' complement, so the result is the one-sum
    // form's bit for bit (every total is positive and under 2^32).
    reg [3:0]    cs_v;
    reg [SW-1:0] cs_s [0:3];
    reg [255:0]  cs_aad;
    reg [4*18-1:0] cs_w;
    reg [22:0]   cs_m, cs_m2;
    reg [19:0]   cs_x;
    reg [23:0]   cs_y;
    reg [15:0]   ipt_q;                    // P_3: the rewritten IPv4 total length term
    // finish's operands, read at ts in T_IDLE (final by then: T_IDLE
    // leaves when the last keystream block, and so ptsum_s, is in)
    reg [15:0]   tf_pt, tf_h, tf_ip;
    reg [16:0]   tf_a;
    localparam B_IDLE = 3'd0, B_GCM = 3'd4;
    reg [2:0]   bst;
    // decode takes four clocks a frame (D_IDLE reads the entry; D_PN2 picks
    // the PN state; D_PN3 is RFC 9000 A.3; D_PN4 the key phase): as one
    // clock, the state pick, A.3 and the key-phase compares were the core's
    // deepest path (tools/hw.sh depth); a 64-byte packet's frame is 7 beats
    localparam D_IDLE = 2'd0, D_PN2 = 2'd1, D_PN3 = 2'd2, D_PN4 = 2'd3;
    reg [1:0]   dst;
    reg [127:0] stu_q;           // D_PN2's pick of the PN state
    reg [61:0]  cnd_q;           // D_PN3's decoded PN

    // per-slot frame state (beat count, length); the beats themselves are in
    // the shared block-RAM memories below, the header in qo_frame_hdr
    wire [NS*16-1:0]   wbeat_a, flen_a;
    wire [NS-1:0]      ovf_a;
    wire               in_beat = s_axis_tvalid & s_axis_tready;
    reg  [NS-1:0]      restart;
    genvar gsl;
    generate for (gsl = 0; gsl < NS; gsl = gsl + 1) begin : slot
        qo_frame_buf #(.DATA_W(DATA_W), .MAXBEATS(MAXBEATS)) fb (
            .clk(clk), .rst(rst), .restart(restart[gsl]), .in_beat(in_beat && is_ == gsl),
            .in_keep(s_axis_tkeep), .in_last(s_axis_tlast),
            .wbeat(wbeat_a[16*gsl +: 16]), .ovf(ovf_a[gsl]), .flen(flen_a[16*gsl +: 16]));
    end endgenerate
    wire [15:0]   wbeat_i = wbeat_a[16*is_ +: 16];

    // The frames' beats, shared by the slots, in block RAM (registered
    // reads: each reader gives the address of the next clock's window). One
    // copy per reader: GHASH (ciphertext, then the tag) and egress. (The
    // plaintext checksum beside the AES output had a third copy; it now
    // takes the ciphertext blocks GHASH read, from `ctb` below.)
    reg  [15:0]   ra_g, ra_o, ra_ks;        // next clock's offsets of those readers and the keystream's
    reg  [SW-1:0] rs_k, os_nx;              // next clock's slots of the checksum and egress readers
    wire [127:0]  win_g, obuf, ksa;
    wire          fm_we = in_beat && wbeat_i < MAXBEATS;
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) fm_g (
        .clk(clk), .we(fm_we), .w_slot(is_), .w_beat(wbeat_i[MW-1:0]), .w_data(s_axis_tdata),
        .r_slot(bs), .r_off(ra_g[MW+3:0]), .r_win(win_g));
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) fm_o (
        .clk(clk), .we(fm_we), .w_slot(is_), .w_beat(wbeat_i[MW-1:0]), .w_data(s_axis_tdata),
        .r_slot(os_nx), .r_off(ra_o[MW+3:0]), .r_win(obuf));
    wire [15:0]   flen_p = flen_a[16*ps +: 16];

    // Two header windows (a frame's first 128 bytes) by slot parity, and
    // the fields the parse stage keeps per slot instead (qo_frame_hdr): a
    // new frame waits at its first beat while the window it would fill is
    // still being parsed (hwin_busy: only frames shorter than 4 beats are
    // that fast).
    wire [1023:0] hdr_p;
    wire [63:0]   f_udph;
    wire [7:0]    f_first;
    wire [159:0]  f_dcid;
    wire [31:0]   f_pnb;
    wire [127:0]  f_samp;
    wire          f_zcs;
    wire [SW-1:0] is_m2 = is_ - 2'd2;
    wire          hwin_busy = full[is_m2] && !pdone[is_m2];

    // The IPv4 header sum's first level (parse state P_2, with l3 and vlan
    // of this frame; qo_frame_parse's ihl is not registered until P_3, so
    // the IHL nibble is read here as step 2 reads it, at l3). Word i of the
    // header (bytes l3 + 2i, l3 + 2i + 1) counts when i < 2 * IHL, except
    // word 1 (total length, rewritten at finish) and word 5 (the checksum):
    // the 28 candidates 0, 2, 3, 4, 6 .. 29, in groups of 4 summed as a tree.
    // l3 is 14 or 18 (no VLAN / one 802.1Q tag), so each word is a 2:1 mux
    // on vlan, not a shift of the window; l3 + 59 < 128 (no wrap).
    function [7*18-1:0] ipsum_groups;
        input [1023:0] h;
        input          v;
        reg   [3:0]    ih;
        reg   [28*16-1:0] w;
        integer        j, n;
        begin
            ih = v ? h[8*18 +: 4] : h[8*14 +: 4];
            n = 0;
            for (j = 0; j < 30; j = j + 1)
                if (j != 1 && j != 5) begin
                    w[16*n +: 16] = (j < 2 * ih) ? (v ? {h[8*(18 + 2*j) +: 8], h[8*(19 + 2*j) +: 8]}
                                             : {h[8*(14 + 2*j) +: 8], h[8*(15 + 2*j) +: 8]}) : 16'd0;
                    n = n + 1;
                end
            for (j = 0; j < 7; j = j + 1)
                ipsum_groups[18*j +: 18] = ({2'd0, w[16*(4*j) +: 16]} + {2'd0, w[16*(4*j + 1) +: 16]})
                                         + ({2'd0, w[16*(4*j + 2) +: 16]} + {2'd0, w[16*(4*j + 3) +: 16]});
        end
    endfunction
    // The UDP pseudo header's addresses, summed from P_2 as ipsum_groups is
    // (qo_frame_hdr's psum shifts the window by l3, which Yosys cannot bound
    // to 14 or 18: that sum into psum_s was the routed critical path). IPv4:
    // 4 words at l3 + 12; IPv6: 16 at l3 + 8. Groups of 4 here, the groups
    // and the ports in P_3, psum_s written from a register in P_4.
    function [4*18-1:0] paddr_groups;
        input [1023:0] h;
        input          v, v4;
        reg   [16*16-1:0] w;
        integer        j;
        begin
            // constant byte indices only: an index that depends on v4 is a
            // shifter of the whole window to Yosys (+1,000 LUT4)
            for (j = 0; j < 16; j = j + 1)
                if (j < 4)
                    w[16*j +: 16] = v4 ? (v ? {h[8*(30 + 2*j) +: 8], h[8*(31 + 2*j) +: 8]}
                                            : {h[8*(26 + 2*j) +: 8], h[8*(27 + 2*j) +: 8]})
                                       : (v ? {h[8*(26 + 2*j) +: 8], h[8*(27 + 2*j) +: 8]}
                                            : {h[8*(22 + 2*j) +: 8], h[8*(23 + 2*j) +: 8]});
                else
                    w[16*j +: 16] = v4 ? 16'd0
                                       : (v ? {h[8*(26 + 2*j) +: 8], h[8*(27 + 2*j) +: 8]}
                                            : {h[8*(22 + 2*j) +: 8], h[8*(23 + 2*j) +: 8]});
            for (j = 0; j < 4; j = j + 1)
                paddr_groups[18*j +: 18] = ({2'd0, w[16*(4*j) +: 16]} + {2'd0, w[16*(4*j + 1) +: 16]})
                                         + ({2'd0, w[16*(4*j + 2) +: 16]} + {2'd0, w[16*(4*j + 3) +: 16]});
        end
    endfunction
    reg [4*18-1:0] pa_g;           // P_2's 4 address group sums
    reg [20:0]     psum_q;         // P_3: addresses + ports
    reg [7*18-1:0] ips_g;          // P_2's 7 group sums (each <= 4 x 0xffff)
    reg [2*20-1:0] ips_h;          // P_3's 2 sums (groups 0-3, 4-6: each <= 16 x 0xffff)

    // Lane i of a beat is below n (i < n, n 16 bits): every lane when n >= 16,
    // else those below n[3:0]. One 16-bit test and a 4-input decode per lane,
    // where 16 separate 16-bit comparisons were a carry chain each.
    function [15:0] lanes_below;
        input [15:0] n;
        lanes_below = (|n[15:4]) ? 16'hffff : ~(16'hffff << n[3:0]);
    endfunction

    // ------------------------------------------------------------------
    // AES pipeline: HP masks, H, E(J0) and the keystream of every slot
    reg          a_v;
    reg [127:0]  a_blk;
    reg [255:0]  a_key;
    reg          a_256;
    reg [TAGW-1:0] a_tag;
    wire         ao_v;
    wire [127:0] ao_blk;
    wire [TAGW-1:0] ao_tag;
    wire [TAGW-1:0] an_tag;
    // the data S-boxes of all 14 AES stages in block RAM (112 DP16KD): with
    // the two frame memories and the keystream's (48), the entry table (40 at
    // CAP = 256, the PN state stored once), the lookup buckets (4) and the
    // checksum's ciphertext blocks (4) that is all of the LFE5UM-85F's 208
    // DP16KD
    qo_aes_pipe #(.TAGW(TAGW), .SBOX_BRAM(14'h3fff)) aes (
        .clk(clk), .rst(rst), .in_valid(a_v), .in_block(a_blk), .in_key(a_key),
        .in_aes256(a_256), .in_tag(a_tag), .out_valid(ao_v), .out_block(ao_blk), .out_tag(ao_tag),
        .next_valid(), .next_tag(an_tag));
    wire [SW-1:0] ao_s    = ao_tag[10 +: SW];
    wire [1:0]    ao_k    = ao_tag[9:8];
    // back-stage blocks of an abandoned decode are ignored
    wire          ao_live = ao_v && (ao_k == K_HP || ao_k == K_H || ao_tag[TAGW-1 -: 3] == epoch);
    wire [15:0]   kj      = {8'd0, ao_tag[7:0]};
    wire [15:0]   rem_k   = L_s[ao_s] - {kj[11:0], 4'b0};
    // the checksum's window is read a clock ahead, for the block leaving next
    wire [15:0]   kj_n    = {8'd0, an_tag[7:0]};
    reg  [127:0]  mask_k;
    wire [15:0]   lb_k = lanes_below(rem_k);
    integer ki, ci, oi;  // one loop variable per always block (a shared one is a latch to Yosys)
    always @* begin
        rs_k = an_tag[10 +: SW];
        for (ki = 0; ki < 16; ki = ki + 1) mask_k[8*ki +: 8] = lb_k[ki] ? 8'hff : 8'h00;
    end

    // keystream, payload block order, frame byte order (block RAM as the
    // frames; egress reads it beside the frame)
    qo_frame_mem #(.NS(NS), .MAXBEATS(MAXBEATS)) ksm (
        .clk(clk), .we(ao_live && ao_k == K_KS), .w_slot(ao_s), .w_beat(ao_tag[MW-1:0]),
        .w_data(bswap(ao_blk)), .r_slot(os_nx), .r_off(ra_ks[MW+3:0]), .r_win(ksa));

    // ------------------------------------------------------------------
    // parse stage (qo_frame_parse, one layer per clock), then the lookup
    // stage: bucket, fingerprint, entry, HP block and H of both key slots
    localparam P_IDLE = 3'd0, P_2 = 3'd2, P_3 = 3'd3, P_4 = 3'd4;
    reg [2:0] pst;
    wire p_go = (pst == P_IDLE) && full[ps] && !pdone[ps] && !drp[ps];   // parse step 1 in this clock
    localparam F_IDLE = 4'd0, F_FP = 4'd7, F_ENT = 4'd8, F_ENT2 = 4'd9, F_HP = 4'd10, F_H0 = 4'd11,
               F_H1 = 4'd12, F_CMD = 4'd13, F_CS = 4'd14;
    reg [3:0] fst;
    assign cmd_apply = (fst == F_CMD);
    assign rb_load = (fst == F_ENT2) && rb_mode;

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

    qo_frame_hdr #(.SAMPLE(1)) hf (
        .clk(clk), .we(in_beat), .w_beat(wbeat_i), .w_odd(is_[0]), .w_data(s_axis_tdata),
        .r_odd(ps[0]), .hdr(hdr_p), .is4(is4), .l3(l3), .l4(l4), .pn_off(pn_off),
        .dcid_len(cfg_dcid_len), .udph(f_udph), .qhdr(), .first(f_first), .dcid(f_dcid), .pnb(f_pnb),
        .samp(f_samp), .psum(), .zcs(f_zcs));
    reg [159:0] lkey;
    reg [159:0] lkey_f;          // the lookup slot's key, for F_ENT2's compare
    reg         short_f;         // its datagram too short for the PN and sample
    reg [31:0]  hsh;
    reg         fp_hit;
    reg [29*WAYS-1:0] r_cell_all;
    reg         fp_hit_c;
    reg [EW-1:0] fp_idx;
    integer wi;
    always @* begin              // the fingerprint match of the bucket just read
        fp_hit_c = 1'b0;
        fp_idx = eidx_f;
        for (wi = WAYS - 1; wi >= 0; wi = wi - 1)
            if (r_cell_all[29*wi + 28] && r_cell_all[29*wi + 16 +: 12] == hsh[31:20]) begin
                fp_hit_c = 1'b1;
                fp_idx = r_cell_all[29*wi +: EW];
            end
    end
    // the lookup stage's slot is hashed and its bucket read in every clock,
    // so a frame's fingerprint check is the clock after it becomes current
    wire [31:0] hsh_c = qo_hash(cfg_seed, lkey_s[fs]);
    always @(posedge clk) begin
        r_cell_all <= bkt[hsh_c[BW-1:0]];
        hsh <= hsh_c;
    end
    assign rd1_idx = (fst == F_FP) ? fp_idx : eidx_f;
    // H of key slot 0 is issued in F_H0, of slot 1 in F_H1: each is read the clock before
    assign rd1_kp  = (fst == F_H0);

    // ------------------------------------------------------------------
    // back stage: PN decode, keystream issue, GHASH
    reg [7:0]   first_u;
    reg [31:0]  pnb_u;           // unmasked PN bytes, left aligned
    reg [2:0]   pn_len;
    reg         kp;
    reg [95:0]  nonce, h_nonce;      // h_*: decode's hand-over to GCM, one frame
    reg [255:0] pkey, h_pkey;
    reg         b_a256, h_a256, h_full;
    reg [127:0] Y;
    reg [15:0]  iss, g;
    // The frame's constants, copied out of the slot arrays when the back
    // stage takes it, so that no slot multiplexer (nor the sums of them)
    // sits in front of the GHASH multiplier: that was the routed critical
    // path. The slot's H is sampled every clock with its "arrived" bit (H of
    // slot 1 may arrive after the take; both are written on the same edge).
    wire [15:0] nblk_b = nblk_s[bs];                        // for the take
    reg  [15:0] b_n, b_P, b_L, b_hl, b_last, b_rem;         // nblk, P, L, hlen, hblk + nblk, L - 16 j
    reg  [1:0]  b_hb;                                       // AAD blocks: 1 or 2
    reg  [255:0] b_aad;
    reg  [127:0] Hr;
    reg          hv;
    always @(posedge clk) begin
        Hr <= kp_s[bs] ? h1_s[bs] : h0_s[bs];
        hv <= hval[bs];
    end
    wire [15:0] hblk = {14'd0, b_hb};
    wire [15:0] jj = g - hblk;                              // ciphertext block of GHASH step g
    // The lookup stage's three blocks go first: the back stage's GHASH runs
    // on regardless and has a spare clock or two, while a late HP mask would
    // hold the next frame's back stage for a whole AES latency.
    wire f_issue = (fst == F_HP || fst == F_H0 || fst == F_H1);
    wire b_issue = (bst == B_GCM) && iss <= b_n && !f_issue;
    wire b_gh    = (bst == B_GCM) && g <= b_last && hv;    // H of slot 1 is the last to arrive
    wire g_take = (bst == B_IDLE) && ddone[bs] && !bdone[bs] && cand[bs] && !kpu_s[bs] && h_full;
    // read every clock: valid from D_PN2 (written only between frames); a
    // counter read-back (between frames, the pipeline empty) reads its entry's
    // PN state here too, so the table keeps one copy of it
    assign rd2_idx = rb_mode ? eidx_f : eidx_s[ds];
    // the key slot of the frame's key phase bit, unmasked as D_IDLE does
    assign rd2_kp  = first_s[ds][2] ^ mask_s[ds][34];
    reg  [127:0] gh_in;
    wire [127:0] gh_prod;
    // GHASH in two stages. The step of clock t (g, the window, the mask,
    // the AAD / lengths select: gh_in) is only prepared and registered (xg_*);
    // the multiply takes it at t + 1, so the multiplier starts from flip-flops
    // (Y, xg_d, Hr) and no longer from the frame memory's block-RAM output
    // through its byte shifter and the payload mask: that chain in front of
    // the GF(2^128) multiply was the routed critical path. Only the
    // recurrence Y <= (Y ^ X) * H must close in one clock; X is known a clock
    // ahead. The back FSM's clocks are unchanged: a frame's last multiply
    // runs in the clock the next frame is taken. A frame's first step
    // multiplies X alone (xg_first masks Y) instead of the take zeroing Y,
    // which that overlapping last multiply still writes. Hr is sampled from
    // bs each clock, so at t + 1 it is the H of the step prepared at t (the
    // step needed hv, so that H was written by then).
    reg  [127:0] xg_d;           // X of the step to multiply
    reg  [127:0] xg_tag;         // the received tag, for the frame's last step
    reg          xg_v, xg_first, xg_last;
    reg  [SW-1:0] xg_s;          // its slot
    qo_gf128_mul ghm (.a((xg_first ? 128'd0 : Y) ^ xg_d), .b(Hr), .p(gh_prod));
    reg  [127:0] mask_j, ctm;
    reg  [15:0]  lb_j;
    // the window of the next clock's step: its ciphertext block, or the tag
    // for the lengths step (the tag is folded into yf_s there, so finish
    // reads no frame byte)
    wire [15:0] jn = g + {15'd0, b_gh} - hblk;
    always @* begin
        ra_g   = (jn == b_n) ? b_P + b_L : b_P + {jn[11:0], 4'b0};
        gh_in  = 128'd0;
        ctm    = 128'd0;
        lb_j   = lanes_below(b_rem);
        for (ci = 0; ci < 16; ci = ci + 1) mask_j[8*ci +: 8] = lb_j[ci] ? 8'hff : 8'h00;
        if (g < hblk)
            gh_in = bswap(g[0] ? b_aad[255:128] : b_aad[127:0]);
        else if (g < b_last) begin
            ctm   = win_g & mask_j;
            gh_in = bswap(ctm);
        end else
            gh_in = {48'd0, b_hl[12:0], 3'b000, 48'd0, b_L[12:0], 3'b000};
    end

    // The ciphertext blocks for the plaintext checksum. GHASH reads every
    // ciphertext block of a frame (masked to the payload: ctm) a little
    // before the AES pipeline returns that block's keystream, so the checksum
    // takes them from here instead of a third copy of the frame memory (16
    // block RAMs and a byte shifter). A GCM session's blocks get consecutive
    // numbers from cb_next (its first in cbase_s, by slot, for the reader);
    // block j of the session is at (base + j) mod 128. 128 entries because
    // GHASH may run ahead of the keystream issue by up to a whole frame (the
    // front's AES blocks go first) and a frame has fewer than 128 blocks;
    // GHASH reads block j at least 2 clocks before the AES pipeline's next
    // output is block j (H of the frame's key came out earlier; the issue
    // starts with J0 and the pipeline takes 15 clocks), so the read finds it.
    reg  [6:0]    cb_next, cb_cur;
    reg  [6:0]    cbase_s [0:NS-1];
    (* ram_style = "block" *) reg [127:0] ctb [0:127];
    reg  [127:0]  ct_k;
    wire          ctb_we = b_gh && g >= hblk && g < b_last;
    wire [6:0]    ctb_wa = cb_cur + jj[6:0];            // (7-bit sums: the index wraps)
    wire [6:0]    ctb_ra = cbase_s[rs_k] + kj_n[6:0];
    always @(posedge clk) begin
        if (ctb_we) ctb[ctb_wa] <= ctm;
        ct_k <= ctb[ctb_ra];
    end

    // The PN state the back stage decodes against: the nearest earlier frame
    // of the same entry still in flight (its state if it authenticates), else
    // a write-back too recent for the table read, else the table.
    reg [127:0] wbh_d [0:3];     // the last write-backs, newest first
    reg [EW-1:0] wbh_i [0:3];
    reg [3:0]   wbh_v;
    reg [127:0] st_use;
    reg         st_found;
    integer si;
    reg [SW-1:0] sp;
    // The earlier slots are searched as a tree, not a chain of NS - 1
    // priority muxes (that chain was the core's deepest path): leaf e is
    // the slot e + 1 before ds, and each level keeps the nearer of a pair
    // that matches, so the pick is the chain's.
    reg [NS-1:0]  pf;
    reg [128*NS-1:0] pd;
    integer       pw;
    always @* begin
        for (si = 0; si < NS; si = si + 1) begin
            sp = ds - si[SW-1:0] - 1'b1;
            pf[si] = (si < NS - 1) && infl[sp] && eidx_s[sp] == eidx_s[ds];
            pd[128*si +: 128] = stn_s[sp];
        end
        for (pw = NS / 2; pw >= 1; pw = pw / 2)
            for (si = 0; si < pw; si = si + 1) begin
                pd[128*si +: 128] = pf[2*si] ? pd[256*si +: 128] : pd[256*si + 128 +: 128];
                pf[si] = pf[2*si] || pf[2*si + 1];
            end
        st_use = r2_st;
        for (si = 3; si >= 0; si = si - 1)
            if (wbh_v[si] && wbh_i[si] == eidx_s[ds]) st_use = wbh_d[si];
        st_found = pf[0];
        if (pf[0]) st_use = pd[127:0];
    end

    // ------------------------------------------------------------------
    // finish stage
    localparam T_IDLE = 2'd0, T_FIN = 2'd2;
    reg [1:0]   tst;
    reg         tag_ok;
    reg [3:0]   tstat;

    // ------------------------------------------------------------------
    // egress stage: sends slot os once finished, the next frame in the clock
    // after the last beat
    wire        ost = tdone[os] && !odrop_s[os];
    reg [15:0]  k, k_nx, kb_nx;

    // (a slot being freed is not written in the clock its buffer restarts)
    assign s_axis_tready = !full[is_] && !restart[is_] && !((cmd_pending || hwin_busy) && wbeat_i == 0);
    wire pipe_empty = (full == 0);

    integer i;
    reg [61:0]  expected, cnd, pwin, hwin;
    reg [31:0]  s32;
    reg [255:0] aw, aadn;
    reg [15:0]  tf_f;
    reg [15:0]  L_n, P_n;
    reg [1:0]   mode_n;
    reg         kpu_n;
    reg [127:0] stu;
    reg [SW-1:0] fl;

    always @(posedge clk) begin
        a_v <= 1'b0;
        cmd_done <= 1'b0;
        ev_push <= 1'b0;
        st_we <= 1'b0;
        cnt_we <= 1'b0;
        restart <= 0;
        wbh_v <= {wbh_v[2:0], 1'b0};
        cs_v <= {cs_v[2:0], 1'b0};
        wbh_d[1] <= wbh_d[0]; wbh_d[2] <= wbh_d[1]; wbh_d[3] <= wbh_d[2];
        wbh_i[1] <= wbh_i[0]; wbh_i[2] <= wbh_i[1]; wbh_i[3] <= wbh_i[2];
        // AES results into their slots
        if (ao_live) begin
            case (ao_k)
                K_HP: begin mask_s[ao_s] <= ao_blk[127:88]; mval[ao_s] <= 1'b1; end
                K_H:  if (ao_tag[0]) begin h1_s[ao_s] <= ao_blk; hval[ao_s] <= 1'b1; end
                      else h0_s[ao_s] <= ao_blk;
                K_J0: begin ej0_s[ao_s] <= ao_blk; got_s[ao_s] <= got_s[ao_s] + 1; end
                K_KS: begin
                    ptsum_s[ao_s] <= ptsum_s[ao_s] + sum_words16((ct_k ^ bswap(ao_blk)) & mask_k);
                    got_s[ao_s]   <= got_s[ao_s] + 1;
                end
            endcase
        end
        if (rst) begin
            is_ <= 0; ps <= 0; fs <= 0; ds <= 0; bs <= 0; ts <= 0; os <= 0;
            full <= 0; pdone <= 0; pok <= 0; fdone <= 0; ddone <= 0; bdone <= 0; tdone <= 0; infl <= 0;
            dst <= D_IDLE; h_full <= 1'b0; xg_v <= 1'b0;
            mval <= 0; hval <= 0; drp <= 0; cand <= 0; k <= 0;
            pst <= P_IDLE; fst <= F_IDLE; bst <= B_IDLE; tst <= T_IDLE;
            rb_mode <= 0;
            epoch <= 0;
            cb_next <= 0;
            wbh_v <= 0;
            cs_v <= 0;
            for (i = 0; i < 8; i = i + 1) cnt_g[i] <= 0;
        end else begin
            // ---------------- ingress
            if (in_beat && s_axis_tlast) begin
                cnt_g[0] <= cnt_g[0] + 1;
                full[is_] <= 1'b1;
                drp[is_]  <= ovf_a[is_] || wbeat_i >= MAXBEATS;
                is_ <= is_ + 1'b1;
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
            // The IPv4 header sum (ipsum_s) as a tree over the parse clocks,
            // not one chain of 28 adders in P_4 (that chain was the routed
            // critical path): P_2 sums groups of 4 words, P_3 the groups
            // into two, P_4 those two. Every partial sum is wide enough to be
            // exact, so the result is the chain's bit for bit.
            P_2: begin
                ips_g <= ipsum_groups(hdr_p, vlan);
                pa_g  <= paddr_groups(hdr_p, vlan, is4);
                pst <= P_3;
            end
            P_3: begin
                ipt_q <= (ihl != 0) ? iptot - 16'd16 : 16'd0;   // the total length, rewritten
                // l4 is known from here (parse step 2), so are the ports
                psum_q <= ({3'd0, pa_g[0*18 +: 18]} + {3'd0, pa_g[1*18 +: 18]})
                        + ({3'd0, pa_g[2*18 +: 18]} + {3'd0, pa_g[3*18 +: 18]})
                        + ({5'd0, f_udph[7:0], f_udph[15:8]} + {5'd0, f_udph[23:16], f_udph[31:24]});
                ips_h <= {{2'd0, ips_g[0*18 +: 18]} + {2'd0, ips_g[1*18 +: 18]}
                        + ({2'd0, ips_g[2*18 +: 18]} + {2'd0, ips_g[3*18 +: 18]}),
                          {2'd0, ips_g[4*18 +: 18]} + {2'd0, ips_g[5*18 +: 18]}
                        + {2'd0, ips_g[6*18 +: 18]}};
                pst <= P_4;
            end
            P_4: begin
                if (cfg_dcid_len != 0)
                    lkey = f_dcid;
                else if (is4) begin
                    aw = hdr_p >> {l3 + 16'd16, 3'b000};
                    lkey = {aw[7:0], aw[15:8], aw[23:16], aw[31:24], f_udph[23:16], f_udph[31:24], 112'd0};
                end else begin
                    aw = hdr_p >> {l3 + 16'd24, 3'b000};
                    for (i = 0; i < 16; i = i + 1) lkey[159 - 8*i -: 8] = aw[8*i +: 8];
                    lkey[31:0] = {f_udph[23:16], f_udph[31:24], 16'd0};
                end
                lkey_s[ps] <= lkey;
                // what lookup (HP sample), decode (first byte, PN bytes)
                // and finish (checksums) would otherwise read from the header
                samp_s[ps]  <= f_samp;
                pnb_s[ps]   <= f_pnb;
                first_s[ps] <= f_first;
                psum_s[ps]  <= psum_q;
                zcs_s[ps]   <= f_zcs;
                ipsum_s[ps] <= {1'b0, ips_h[20 +: 20]} + {1'b0, ips_h[0 +: 20]} + {5'd0, ipt_q};
                dl_s[ps] <= cfg_dcid_len;
                is4_s[ps] <= is4; is6_s[ps] <= is6;
                l3_s[ps] <= l3; l4_s[ps] <= l4; q_s[ps] <= q; udpend_s[ps] <= udp_end;
                udplen_s[ps] <= udplen; pnoff_s[ps] <= pn_off; iptot_s[ps] <= iptot;
                pstat[ps] <= p_pass ? ST_PASS : ST_MALFORMED;
                pok[ps] <= !(p_pass || p_malf);
                pdone[ps] <= 1'b1;
                ps <= ps + 1'b1;
                pst <= P_IDLE;
            end
            default: pst <= P_IDLE;
            endcase

            // ---------------- lookup
            case (fst)
            F_IDLE: begin
                // a command waits for an empty pipeline and a frame boundary
                // at the input, so it lands between two frames as before
                if (cmd_pending && !cmd_done && pipe_empty && wbeat_i == 0 && !st_we && !cnt_we)
                    fst <= F_CMD;
                else if (pdone[fs] && !fdone[fs]) begin
                    if (!pok[fs]) begin
                        cand[fs] <= 1'b0;
                        fdone[fs] <= 1'b1;
                        fs <= fs + 1'b1;
                    end else
                        fst <= F_FP;      // bucket read in this clock
                end
            end
            F_CMD: begin
                // commands 1, 2, 4, 6 are applied by the entry table in this clock;
                // the write-back history no longer speaks for the table
                wbh_v <= 4'd0;
                if (cmd_op == 4'd3)   // a whole lookup bucket
                    for (i = 0; i < WAYS; i = i + 1)
                        bkt[cmd_idx[BW-1:0]][29*i +: 29] <= {stage[32*(24 + i) + 31], stage[32*(24 + i) + 16 +: 12], stage[32*(24 + i) +: 16]};
                eidx_f <= cmd_idx[EW-1:0];
                rb_mode <= (cmd_op == 4'd5);
                fst <= (cmd_op == 4'd5) ? F_CS : F_IDLE;
                if (cmd_op != 4'd5) cmd_done <= 1'b1;
            end
            F_CS: fst <= F_ENT;   // read-back: entry memories are read one clock after eidx_f is set
            F_FP: begin              // the entry is read in this clock (rd_idx = fp_idx)
                fp_hit <= fp_hit_c;
                eidx_f <= fp_idx;
                // F_ENT2's operands other than the entry read, from registers
                // (fs does not move in between): the compare of the key slot
                // after the block-RAM read was the routed critical path
                lkey_f  <= lkey_s[fs];
                short_f <= pnoff_s[fs] + 16'd20 > udpend_s[fs];
                fst <= F_ENT2;
            end
            F_ENT: fst <= F_ENT2;     // entry read
            F_ENT2: begin
                if (rb_mode) begin                          // counter read-back
                    rb_mode <= 1'b0;
                    cmd_done <= 1'b1;
                    fst <= F_IDLE;
                end else if (!fp_hit || !r_cfg[162] || r_cfg[159:0] != lkey_f || short_f) begin
                    pstat[fs] <= (!fp_hit || !r_cfg[162] || r_cfg[159:0] != lkey_f) ? ST_UNKNOWN : ST_MALFORMED;
                    cand[fs] <= 1'b0;
                    fdone[fs] <= 1'b1;
                    fs <= fs + 1'b1;
                    fst <= F_IDLE;
                end else begin
                    eidx_s[fs]  <= eidx_f;
                    a256_s[fs]  <= r_cfg[161];
                    fpass_s[fs] <= r_cfg[160];
                    mval[fs] <= 1'b0;
                    hval[fs] <= 1'b0;
                    fst <= F_HP;
                end
            end
            // the HP block and H of both key slots (ahead of the back stage's blocks)
            F_HP: begin
                a_v   <= 1'b1;
                a_blk <= bswap(samp_s[fs]);
                a_key <= r_hp;
                a_256 <= a256_s[fs];
                a_tag <= {3'd0, fs, K_HP, 8'd0};
                fst <= F_H0;
            end
            F_H0, F_H1: begin
                a_v   <= 1'b1;
                a_blk <= 128'd0;
                a_key <= r_k[351:96];      // slot 0 in F_H0, slot 1 in F_H1 (rd1_kp)
                a_256 <= a256_s[fs];
                a_tag <= {3'd0, fs, K_H, 7'd0, fst == F_H1};
                if (fst == F_H1) begin
                    cand[fs] <= 1'b1;
                    fdone[fs] <= 1'b1;
                    fs <= fs + 1'b1;
                    fst <= F_IDLE;
                end else
                    fst <= F_H1;
            end
            default: fst <= F_IDLE;
            endcase

            // ---------------- decode: PN and key choice of slot ds
            case (dst)
            D_IDLE: if (fdone[ds] && !ddone[ds]) begin
                if (!cand[ds]) begin
                    ddone[ds] <= 1'b1;
                    ds <= ds + 1'b1;
                end else if (mval[ds] && (!h_full || g_take)) begin
                    // header protection off; the entry is read in this clock (rd2_idx)
                    first_u <= first_s[ds] ^ (mask_s[ds][39:32] & 8'h1f);
                    pn_len  <= ((first_s[ds] ^ mask_s[ds][39:32]) & 8'h03) + 3'd1;
                    kp      <= (first_s[ds] ^ mask_s[ds][39:32]) >> 2;
                    kp_s[ds] <= (first_s[ds] ^ mask_s[ds][39:32]) >> 2;
                    pnb_u   <= pnb_s[ds] ^ mask_s[ds][31:0];
                    dst <= D_PN2;
                end
            end
            D_PN2: begin
                stu_q <= st_use;
                dst <= D_PN3;
            end
            D_PN3: begin
                // RFC 9000 A.3 with the entry's largest PN
                stu = stu_q;
                expected = stu[127] ? stu[126:65] + 62'd1 : 62'd0;
                pwin = 62'd1 << {pn_len, 3'b000};
                hwin = pwin >> 1;
                cnd = (expected & ~(pwin - 62'd1)) | (pnb_u >> {3'd4 - pn_len, 3'b000});
                if (cnd + hwin <= expected && cnd < (62'h3fffffffffffffff - pwin + 62'd1))
                    cnd = cnd + pwin;
                else if (cnd > expected + hwin && cnd >= pwin)
                    cnd = cnd - pwin;
                pn_s[ds] <= cnd;
                cnd_q <= cnd;
                dst <= D_PN4;
            end
            D_PN4: begin
                stu = stu_q;
                cnd = cnd_q;
                // key phase (docs/design.md "Key phases")
                kpu_n  = 1'b0;
                mode_n = 2'd0;
                if (kp != stu[2]) begin
                    if (stu[1:0] == OT_NEXT && cnd >= stu[64:3])      mode_n = 2'd1;
                    else if (stu[1:0] == OT_PREV && cnd < stu[64:3])  mode_n = 2'd2;
                    else                                              kpu_n  = 1'b1;
                end
                kpu_s[ds]  <= kpu_n;
                mode_s[ds] <= mode_n;
                // the state this frame leaves if it authenticates
                stn_s[ds] <= kpu_n ? stu :
                             {1'b1, (stu[127] && stu[126:65] > cnd) ? stu[126:65] : cnd,
                              (mode_n == 2'd1) ? cnd : stu[64:3],
                              (mode_n == 2'd1) ? kp : stu[2],
                              (mode_n == 2'd1) ? OT_PREV : stu[1:0]};
                infl[ds] <= 1'b1;
                h_pkey  <= r2_k[351:96];   // key slot kp (rd2_kp in D_IDLE)
                h_nonce <= r2_k[95:0] ^ {34'd0, cnd};
                h_a256  <= a256_s[ds];
                h_full  <= !kpu_n;            // no keys to try: finish says so
                P_n = pnoff_s[ds] + pn_len;
                L_n = udpend_s[ds] - pnoff_s[ds] - pn_len - 16'd16;
                P_s[ds]    <= P_n;
                L_s[ds]    <= L_n;
                nblk_s[ds] <= (L_n + 16'd15) >> 4;
                hlen_s[ds] <= 16'd1 + dl_s[ds] + pn_len;
                // the DCID bytes are the lookup key's (a DCID length of 0 has none)
                for (i = 0; i < 32; i = i + 1)
                    aadn[8*i +: 8] = (i == 0) ? first_u :
                                     (i < 1 + dl_s[ds]) ? lkey_s[ds][159 - 8*((i + 19) % 20) -: 8] :
                                     (i < 1 + dl_s[ds] + pn_len) ? pnb_u[31 - 8*(i - 1 - dl_s[ds]) -: 8] : 8'd0;
                aad_s[ds] <= aadn;
                cs_aad  <= aadn;
                cs_s[0] <= ds;
                cs_v[0] <= 1'b1;
                got_s[ds]   <= 0;
                ptsum_s[ds] <= 0;
                ddone[ds] <= 1'b1;
                ds <= ds + 1'b1;
                dst <= D_IDLE;
            end
            endcase

            // ---------------- checksum terms of the slot decoded 1-4 clocks ago
            if (cs_v[0]) begin
                for (i = 0; i < 4; i = i + 1)
                    cs_w[18*i +: 18] <= ({2'd0, cs_aad[64*i +: 8], cs_aad[64*i + 8 +: 8]}
                                       + {2'd0, cs_aad[64*i + 16 +: 8], cs_aad[64*i + 24 +: 8]})
                                      + ({2'd0, cs_aad[64*i + 32 +: 8], cs_aad[64*i + 40 +: 8]}
                                       + {2'd0, cs_aad[64*i + 48 +: 8], cs_aad[64*i + 56 +: 8]});
                // psum + 2 * (udplen - 16) + 17
                cs_m <= {2'd0, psum_s[cs_s[0]]} + {6'd0, udplen_s[cs_s[0]], 1'b0} - 23'd15;
            end
            if (cs_v[1]) begin
                cs_x  <= ({2'd0, cs_w[0 +: 18]} + {2'd0, cs_w[18 +: 18]})
                       + ({2'd0, cs_w[36 +: 18]} + {2'd0, cs_w[54 +: 18]});
                cs_m2 <= cs_m;
            end
            if (cs_v[2])
                cs_y <= {4'd0, cs_x} + {1'd0, cs_m2};
            if (cs_v[3])
                hsum_s[cs_s[3]] <= fold16({8'd0, cs_y});
            cs_s[1] <= cs_s[0]; cs_s[2] <= cs_s[1]; cs_s[3] <= cs_s[2];

            // ---------------- GCM of slot bs
            case (bst)
            B_IDLE: if (ddone[bs] && !bdone[bs]) begin
                if (!cand[bs] || kpu_s[bs]) begin
                    bdone[bs] <= 1'b1;
                    bs <= bs + 1'b1;
                end else if (h_full) begin     // (g_take) the decoded frame's keys and nonce
                    h_full <= 1'b0;
                    pkey   <= h_pkey;
                    nonce  <= h_nonce;
                    b_a256 <= h_a256;
                    cb_cur <= cb_next;
                    cbase_s[bs] <= cb_next;
                    cb_next <= cb_next + nblk_b[6:0];
                    b_n    <= nblk_b;
                    b_P    <= P_s[bs];
                    b_L    <= L_s[bs];
                    b_rem  <= L_s[bs];
                    b_hl   <= hlen_s[bs];
                    b_hb   <= (hlen_s[bs] > 16) ? 2'd2 : 2'd1;
                    b_last <= nblk_b + ((hlen_s[bs] > 16) ? 16'd2 : 16'd1);
                    b_aad  <= aad_s[bs];
                    iss <= 0;
                    g   <= 0;
                    bst <= B_GCM;
                end
            end
            B_GCM: begin
                // E(K, J0) and the keystream enter the AES pipeline while
                // GHASH absorbs the AAD, the ciphertext and the lengths
                if (b_issue) begin
                    a_v   <= 1'b1;
                    a_key <= pkey;
                    a_256 <= b_a256;
                    a_blk <= {nonce, 16'd0, iss + 16'd1};
                    a_tag <= (iss == 0) ? {epoch, bs, K_J0, 8'd0} : {epoch, bs, K_KS, iss[7:0] - 8'd1};
                    iss   <= iss + 1;
                end
                if (b_gh) g <= g + 1;    // step g prepared (xg_*), multiplied next clock
                if (ctb_we) b_rem <= b_rem - 16'd16;
                // done when the last block is issued and the last GHASH step
                // prepared; bdone waits for that step's multiply (below)
                if ((iss > b_n || (b_issue && iss == b_n)) &&
                    (g > b_last || (b_gh && g == b_last))) begin
                    bs <= bs + 1'b1;
                    bst <= B_IDLE;
                end
            end
            default: bst <= B_IDLE;
            endcase

            // GHASH's second stage: the step prepared last clock. The frame
            // is done for finish when its last step (the lengths) has been
            // multiplied and folded with the tag into yf_s.
            xg_v <= b_gh;
            if (b_gh) begin
                xg_d     <= gh_in;
                xg_first <= (g == 0);
                xg_last  <= (g == b_last);
                xg_s     <= bs;
                xg_tag   <= bswap(win_g);    // the tag's window at the lengths step
            end
            if (xg_v) begin
                Y <= gh_prod;
                if (xg_last) begin
                    yf_s[xg_s]  <= gh_prod ^ xg_tag;   // GHASH ^ tag
                    bdone[xg_s] <= 1'b1;
                end
            end

            // ---------------- finish
            // (registered every clock; T_FIN uses what T_IDLE read)
            s32   = fold16(ptsum_s[ts]);
            tf_pt <= P_s[ts][0] ? {s32[7:0], s32[15:8]} : s32[15:0];
            tf_h  <= hsum_s[ts];
            tf_ip <= ~fold16({11'd0, ipsum_s[ts]});
            case (tst)
            T_IDLE: if (bdone[ts] && !tdone[ts]) begin
                if (!cand[ts] || kpu_s[ts]) begin
                    tstat <= drp[ts] ? ST_PASS : !cand[ts] ? pstat[ts] : ST_KPU;
                    tag_ok <= 1'b0;
                    tst <= T_FIN;
                end else if (got_s[ts] == nblk_s[ts] + 1) begin   // E(K, J0) and the keystream are out
                    tag_ok <= (yf_s[ts] == ej0_s[ts]);   // GHASH ^ received tag == E(K, J0)
                    tstat  <= ST_OK;
                    tst    <= T_FIN;
                end
            end
            T_FIN: begin
                okupd_s[ts] <= 1'b0;
                oprev_s[ts] <= 1'b0;
                odrop_s[ts] <= 1'b0;
                ost_s[ts]   <= (tstat == ST_OK && !tag_ok) ? ST_AUTH : tstat;
                omod_s[ts]  <= (tstat == ST_OK && tag_ok);
                infl[ts]    <= 1'b0;
                wr_idx      <= eidx_s[ts];
                if (drp[ts]) begin
                    odrop_s[ts] <= 1'b1;
                    cnt_g[7] <= cnt_g[7] + 1;
                end else if (tstat == ST_OK && tag_ok) begin
                    st_we    <= 1'b1;
                    st_wdata <= stn_s[ts];
                    wbh_v[0] <= 1'b1;
                    wbh_d[0] <= stn_s[ts];
                    wbh_i[0] <= eidx_s[ts];
                    cnt_we   <= 1'b1;
                    cnt_inc  <= {1'b1, 1'b0, mode_s[ts] == 2'd1};
                    if (mode_s[ts] == 2'd1) begin
                        okupd_s[ts] <= 1'b1;
                        ev_push <= 1'b1;
                    end
                    oprev_s[ts] <= (mode_s[ts] == 2'd2);
                    cnt_g[1] <= cnt_g[1] + 1;
                    olen_s[ts] <= udpend_s[ts] - 16'd16;
                end else begin
                    olen_s[ts] <= flen_a[16*ts +: 16];
                    if (tstat == ST_OK || tstat == ST_KPU) begin
                        cnt_we  <= 1'b1;
                        cnt_inc <= 3'b010;
                        if (!fpass_s[ts]) begin      // fail action: drop
                            odrop_s[ts] <= 1'b1;
                            cnt_g[7] <= cnt_g[7] + 1;
                        end
                    end
                    case (tstat)
                        ST_OK:        cnt_g[2] <= cnt_g[2] + 1;
                        ST_UNKNOWN:   cnt_g[3] <= cnt_g[3] + 1;
                        ST_MALFORMED: cnt_g[4] <= cnt_g[4] + 1;
                        ST_PASS:      cnt_g[5] <= cnt_g[5] + 1;
                        ST_KPU:       cnt_g[6] <= cnt_g[6] + 1;
                        default: ;
                    endcase
                end
                // checksums of the rewritten frame (used only when it is modified)
                // the plaintext's folded sum and hsum_s, added ones' complement
                // (the end-around carry picks the sum + 1)
                tf_a = {1'b0, tf_pt} + {1'b0, tf_h};
                tf_f = tf_a[16] ? tf_pt + tf_h + 16'd1 : tf_a[15:0];
                udpcs_s[ts] <= zcs_s[ts] ? 16'd0 :
                               (tf_f == 16'hffff) ? 16'hffff : ~tf_f;
                ipcs_s[ts] <= tf_ip;
                tdone[ts] <= 1'b1;
                ts <= ts + 1'b1;
                tst <= T_IDLE;
                // A failed frame leaves its entry's state as it was, not as
                // the frames behind it assumed: they are decoded again.
                if (tstat == ST_OK && !tag_ok) begin
                    for (i = 1; i < NS; i = i + 1) begin
                        fl = ts + i[SW-1:0];
                        if (!tdone[fl]) begin
                            ddone[fl] <= 1'b0;
                            bdone[fl] <= 1'b0;
                            infl[fl]  <= 1'b0;
                        end
                    end
                    ds <= ts + 1'b1;
                    dst <= D_IDLE;
                    bs <= ts + 1'b1;
                    bst <= B_IDLE;
                    h_full <= 1'b0;
                    // a step prepared for an abandoned frame is not multiplied
                    // (one multiplied in this clock has its bdone cleared above)
                    xg_v <= 1'b0;
                    epoch <= epoch + 1'b1;
                end
            end
            default: tst <= T_IDLE;
            endcase

            // ---------------- egress
            if (tdone[os]) begin
                if (odrop_s[os] || (m_axis_tready && {k[11:0], 4'b0} + 16'd16 >= olen_s[os])) begin
                    full[os] <= 1'b0; pdone[os] <= 1'b0; fdone[os] <= 1'b0; ddone[os] <= 1'b0; bdone[os] <= 1'b0;
                    tdone[os] <= 1'b0;
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
    always @* begin
        os_nx = os;
        k_nx  = k;
        if (rst) begin
            os_nx = 0;
            k_nx  = 0;
        end else if (tdone[os]) begin
            if (odrop_s[os] || (m_axis_tready && {k[11:0], 4'b0} + 16'd16 >= olen_s[os])) begin
                os_nx = os + 1'b1;
                k_nx  = 0;
            end else if (m_axis_tready)
                k_nx = k + 1;
        end
        ra_o  = {k_nx[11:0], 4'b0};
        kb_nx = k_nx - P_s[os_nx][15:4];
        ra_ks = {kb_nx[11:0], 4'b0} - P_s[os_nx][3:0];   // the keystream byte of the beat's first byte
    end
    wire [15:0]  P_o = P_s[os], L_o = L_s[os], q_o = q_s[os], l3_o = l3_s[os], l4_o = l4_s[os];
    wire [15:0]  iptot_o = iptot_s[os], udplen_o = udplen_s[os], olen_o = olen_s[os];
    wire [15:0]  ipcs_o = ipcs_s[os], udpcs_o = udpcs_s[os];
    wire [255:0] aad_o = aad_s[os];
    wire         is4_o = is4_s[os], is6_o = is6_s[os], fr_mod = omod_s[os];
    wire [15:0]  ob   = {k[11:0], 4'b0};
    // Byte {k, oi} of the frame. Every region bound and rewritten field
    // is compared once per beat (its beat number against k) and once per byte
    // lane (its low 4 bits against the constant oi), instead of a 16-bit adder
    // and comparators per lane: the same decisions in a fraction of the LUTs.
    // The equality targets keep the carry of their 32-bit sum (the byte
    // number is 16 bits), so a field past 64 KiB matches nothing, as before.
    wire [11:0]  kk   = k[11:0];
    wire [15:0]  E_o  = P_o + L_o;                  // payload end, 16 bits as the comparison it replaces
    wire         k_gtP = kk > P_o[15:4], k_eqP = kk == P_o[15:4];
    wire         k_ltE = kk < E_o[15:4], k_eqE = kk == E_o[15:4];
    wire         k_gtq = kk > q_o[15:4], k_eqq = kk == q_o[15:4];
    wire [16:0]  f_ip2 = l3_o + 17'd2,  f_ip3 = l3_o + 17'd3,  f_ip10 = l3_o + 17'd10, f_ip11 = l3_o + 17'd11;
    wire [16:0]  f_ip4 = l3_o + 17'd4,  f_ip5 = l3_o + 17'd5;
    wire [16:0]  f_u4  = l4_o + 17'd4,  f_u5  = l4_o + 17'd5,  f_u6   = l4_o + 17'd6,  f_u7   = l4_o + 17'd7;
    wire [15:0]  iptot_m = iptot_o - 16'd16, udplen_m = udplen_o - 16'd16;
    // the AAD bytes of this beat: lane oi shows AAD byte (bi - q) mod 32 (the
    // header before the payload is at most 25 bytes), so one rotation of the
    // 32 bytes by (16 k - q) mod 32 serves every lane
    wire [4:0]   aad_rot = {kk[0], 4'b0} - q_o[4:0];
    wire [511:0] aad_2x  = {aad_o, aad_o} >> {aad_rot, 3'b000};
    wire [127:0] aad_w   = aad_2x[127:0];
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
                if ((k_gtq || (k_eqq && oi >= q_o[3:0])) && !(k_gtP || (k_eqP && oi >= P_o[3:0])))
                    odata[8*oi +: 8] = aad_w[8*oi +: 8];
                if (is4_o && hit(f_ip2, kk, oi))  odata[8*oi +: 8] = iptot_m[15:8];
                if (is4_o && hit(f_ip3, kk, oi))  odata[8*oi +: 8] = iptot_m[7:0];
                if (is4_o && hit(f_ip10, kk, oi)) odata[8*oi +: 8] = ipcs_o[15:8];
                if (is4_o && hit(f_ip11, kk, oi)) odata[8*oi +: 8] = ipcs_o[7:0];
                if (is6_o && hit(f_ip4, kk, oi))  odata[8*oi +: 8] = iptot_m[15:8];
                if (is6_o && hit(f_ip5, kk, oi))  odata[8*oi +: 8] = iptot_m[7:0];
                if (hit(f_u4, kk, oi))            odata[8*oi +: 8] = udplen_m[15:8];
                if (hit(f_u5, kk, oi))            odata[8*oi +: 8] = udplen_m[7:0];
                if (hit(f_u6, kk, oi))            odata[8*oi +: 8] = udpcs_o[15:8];
                if (hit(f_u7, kk, oi))            odata[8*oi +: 8] = udpcs_o[7:0];
            end
        end
    end
    wire        olast = (ob + 16'd16 >= olen_o);
    wire [15:0] orem  = olen_o - ob;
    wire [15:0] lb_o  = lanes_below(orem);
    genvar gi;
    generate for (gi = 0; gi < NB; gi = gi + 1) begin : keep
        assign m_axis_tkeep[gi] = !olast || lb_o[gi];
    end endgenerate
    assign m_axis_tdata  = odata;
    assign m_axis_tvalid = ost;
    assign m_axis_tlast  = ost && olast;
    // tuser: [3:0] status, [4] key update (this frame made the next keys current),
    // [5] decrypted with the previous generation's keys, [7:6] 0
    assign m_axis_tuser  = {2'b00, oprev_s[os], okupd_s[os], ost_s[os]};
    assign m_drop        = tdone[os] && odrop_s[os];
endmodule
