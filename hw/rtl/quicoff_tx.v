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
// Same organisation and control port as quicoff_rx (store-and-forward, one
// frame at a time, raw keys expanded in the AES pipeline); TX entries are
// addressed by index (as the DPU prototype's TX table), so there is no hash table.
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
    localparam ST_OK = 4'd0, ST_AUTH = 4'd1, ST_UNKNOWN = 4'd2, ST_MALFORMED = 4'd3,
               ST_PASS = 4'd4, ST_KPU = 4'd5;
    localparam OT_NONE = 2'd0, OT_NEXT = 2'd1, OT_PREV = 2'd2;
    localparam K_HP = 2'd0, K_H = 2'd1, K_J0 = 2'd2, K_KS = 2'd3;

    // ------------------------------------------------------------------
    // helpers (bswap, popc, sum_words16, fold16 are shared)
    `include "qo_util.vh"

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
    reg [2:0]    cnt_inc;
    wire [162:0] r_cfg;            // the entry as read: {valid, aes256, fail_pass, key160}
    wire [255:0] r_hp;
    wire [351:0] r_k0, r_k1;       // {key256, iv96} of key phase 0 / 1
    wire [127:0] r_st;             // {lp_valid, largest62, first62, cur_phase, other2}
    wire [95:0]  r_cnt;
    wire         cmd_apply, rb_load;   // (from the FSM state, below)

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
        .counters(counters), .rb_load(rb_load), .rb_cnt(r_cnt), .rb_st(r_st),
        .ev_push(ev_push), .ev_idx(eidx));

    qo_entry_table #(.CAP(CAP), .EW(EW)) table_ (
        .clk(clk), .cmd_apply(cmd_apply), .cmd_op(cmd_op), .cmd_idx(cmd_idx[EW-1:0]),
        .stage(stage), .st_we(st_we), .cnt_we(cnt_we), .wr_idx(eidx), .st_wdata(st_wdata),
        .cnt_inc(cnt_inc), .rd_idx(eidx), .rd2_idx(eidx), .r2_k0(), .r2_k1(), .r2_st(), .r_cfg(r_cfg), .r_hp(r_hp), .r_k0(r_k0), .r_k1(r_k1),
        .r_st(r_st), .r_cnt(r_cnt));

    // ------------------------------------------------------------------
    reg [127:0]      ksbuf [0:MAXBEATS-1];

    localparam S_IN = 5'd0, S_CMD = 5'd1, S_P1 = 5'd2, S_P2 = 5'd3, S_P3 = 5'd4, S_P4 = 5'd5,
               S_ENT = 5'd9, S_ENT2 = 5'd10, S_SAMP = 5'd11, S_HPW = 5'd12, S_PN2 = 5'd14,
               S_ISSUE = 5'd15, S_DRAIN = 5'd16, S_GH = 5'd17, S_TAG = 5'd18, S_FIN = 5'd19,
               S_OUT = 5'd20, S_DROP = 5'd21, S_CS = 5'd22, S_HP = 5'd23;
    reg [4:0] state;
    assign cmd_apply = (state == S_CMD);
    assign rb_load = (state == S_ENT2) && rb_mode;
    wire [15:0]   wbeat;         // beats received of this frame
    wire          ovf;
    wire [15:0]   flen;          // frame length in bytes
    wire [1023:0] hdr;           // first 128 bytes of the frame
    reg [15:0] tx_idx;
    reg [61:0] tx_pn;

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
    reg [39:0]  mask;
    reg [2:0]   pn_len;
    reg         kp;
    reg         upd;             // this packet starts a key update
    reg         kpu;
    reg [15:0]  P, L, nblk, hlen;
    reg [95:0]  nonce;
    reg [255:0] pkey;
    reg [255:0] aad;             // plaintext header, frame byte order
    reg [127:0] Hr, ej0, Y, tagf, samp;
    reg [15:0]  iss, got, g;
    reg [31:0]  ct_sum;
    reg [15:0]  udpcs;
    reg [3:0]   status;
    reg         fr_mod;
    reg         kupd;
    reg [15:0]  k;
    reg [127:0] mask_j;
    integer ci, oi;    // one loop variable per always block (a shared one is a latch to Yosys)

    function [7:0] hb;
        input [15:0] i;
        hb = hdr[8*i[6:0] +: 8];
    endfunction
    wire [15:0] l4p8 = l4 + 16'd8;
    wire [7:0]  b_q  = hdr[8*l4p8[6:0] +: 8];

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
                K_H:  Hr   <= ao_blk;
                K_J0: ej0  <= ao_blk;
                K_KS: ksbuf[ao_tag[MW-1:0]] <= bswap(ao_blk);
            endcase
        end
    end

    reg  [127:0] gh_in;
    wire [127:0] gh_prod;
    qo_gf128_mul ghm (.a(Y ^ gh_in), .b(Hr), .p(gh_prod));

    reg  [15:0] ra;
    wire [127:0] win;
    wire [15:0] jj = g - ((hlen > 16) ? 16'd2 : 16'd1);
    wire [127:0] ks_j = ksbuf[jj[MW-1:0]];
    wire [255:0] ks01 = {ksbuf[1], ksbuf[0]};

    wire in_beat = s_axis_tvalid & s_axis_tready;
    assign s_axis_tready = (state == S_IN) && !(cmd_pending && wbeat == 0);

    integer i;
    reg [15:0]  rem, rel, tsum;
    reg [127:0] ctm;
    reg [31:0]  s32;
    reg [255:0] aw, mh;
    reg [127:0] kss;

    always @(posedge clk) begin
        a_v <= 1'b0;
        cmd_done <= 1'b0;
        ev_push <= 1'b0;
        st_we <= 1'b0;
        cnt_we <= 1'b0;
        if (rst) begin
            state  <= S_IN;
            rb_mode <= 0;
            status <= ST_PASS;
            fr_mod <= 0; kupd <= 0; upd <= 0;
            for (i = 0; i < 8; i = i + 1) cnt_g[i] <= 0;
        end else case (state)
        S_IN: begin
            if (cmd_pending && wbeat == 0 && !cmd_done)
                state <= S_CMD;
            else if (in_beat) begin
                if (wbeat == 0) begin                  // the descriptor rides on the first beat
                    tx_idx <= s_axis_tuser[15:0];
                    tx_pn  <= s_axis_tuser[77:16];
                end
                if (s_axis_tlast) begin
                    cnt_g[0] <= cnt_g[0] + 1;
                    state <= (ovf || wbeat >= MAXBEATS) ? S_DROP : S_P1;
                end
            end
        end
        S_DROP: begin
            cnt_g[7] <= cnt_g[7] + 1;
            state <= S_IN;
        end
        S_CMD: begin
            // commands 1, 2, 4, 6 are applied by the entry table in this clock
            eidx <= cmd_idx[EW-1:0];
            rb_mode <= (cmd_op == 4'd5);
            state <= (cmd_op == 4'd5) ? S_CS : S_IN;
            if (cmd_op != 4'd5) cmd_done <= 1'b1;
        end
        S_CS: state <= S_ENT;
        // -------- parse: qo_frame_parse takes one layer per clock
        S_P1: state <= S_P2;
        S_P2: state <= S_P3;
        S_P3: state <= S_P4;
        S_P4: begin
            eidx <= tx_idx[EW-1:0];
            if (p_pass || p_malf) begin
                status <= p_pass ? ST_PASS : ST_MALFORMED;
                fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else
                state <= S_ENT;
        end
        S_ENT: state <= S_ENT2;
        S_ENT2: begin
            if (rb_mode) begin
                rb_mode <= 1'b0;
                cmd_done <= 1'b1;
                state <= S_IN;
            end else if (!r_cfg[162] || tx_idx >= CAP) begin
                status <= ST_UNKNOWN; fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else if (pn_off + 16'd20 > udp_end) begin
                status <= ST_MALFORMED; fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else begin
                pn_len <= b_q[1:0] + 3'd1;     // plaintext first byte
                kp     <= b_q[2];
                state  <= S_PN2;
            end
        end
        S_PN2: begin
            kpu <= 1'b0;
            upd <= 1'b0;
            if (kp != r_st[2]) begin
                if (r_st[1:0] == OT_NEXT) upd <= 1'b1;   // the host starts a key update
                else                      kpu <= 1'b1;
            end
            pkey  <= kp ? r_k1[351:96] : r_k0[351:96];
            nonce <= (kp ? r_k1[95:0] : r_k0[95:0]) ^ {34'd0, tx_pn};
            P     <= pn_off + pn_len;
            L     <= udp_end - pn_off - pn_len - 16'd16;
            nblk  <= (udp_end - pn_off - pn_len - 16'd16 + 16'd15) >> 4;
            hlen  <= 16'd1 + cfg_dcid_len + pn_len;
            aw = hdr >> {q, 3'b000};
            for (i = 0; i < 32; i = i + 1)
                aad[8*i +: 8] <= (i < 1 + cfg_dcid_len + pn_len) ? aw[8*i +: 8] : 8'd0;
            iss   <= 0;
            state <= S_ISSUE;
        end
        S_ISSUE: begin
            if (kpu) begin
                status <= ST_KPU; fr_mod <= 1'b0; kupd <= 1'b0;
                state  <= S_FIN;
            end else begin
                a_v   <= 1'b1;
                a_key <= pkey;
                a_256 <= r_cfg[161];
                a_blk <= (iss == 0) ? 128'd0 : {nonce, 16'd0, iss};
                a_tag <= (iss == 0) ? {6'd0, K_H, 8'd0} : (iss == 1) ? {6'd0, K_J0, 8'd0} :
                         {6'd0, K_KS, iss[7:0] - 8'd2};
                iss   <= iss + 1;
                if (iss == nblk + 1) state <= S_DRAIN;
            end
        end
        S_DRAIN: if (got == nblk + 2) begin
            Y      <= 128'd0;
            g      <= 0;
            ct_sum <= 0;
            state  <= S_GH;
        end
        S_GH: begin
            Y <= gh_prod;
            g <= g + 1;
            if (g >= ((hlen > 16) ? 16'd2 : 16'd1) && g < ((hlen > 16) ? 16'd2 : 16'd1) + nblk)
                ct_sum <= ct_sum + sum_words16(ctm);
            if (g == ((hlen > 16) ? 16'd2 : 16'd1) + nblk) state <= S_TAG;
        end
        S_TAG: begin
            tagf  <= bswap(Y ^ ej0);
            state <= S_SAMP;
        end
        S_SAMP: begin
            // the HP sample: 16 bytes of ciphertext || tag from 4 - pn_len
            // bytes into the payload (RFC 9001 5.4.2); win = plaintext there
            kss = ks01 >> {3'd4 - pn_len, 3'b000};
            for (i = 0; i < 16; i = i + 1) begin
                rel = 16'd4 - pn_len + i;
                samp[8*i +: 8] = (rel < L) ? (win[8*i +: 8] ^ kss[8*i +: 8]) : tagf[8*(rel - L) +: 8];
            end
            a_v   <= 1'b1;
            a_blk <= bswap(samp);
            a_key <= r_hp;
            a_256 <= r_cfg[161];
            a_tag <= {6'd0, K_HP, 8'd0};
            state <= S_HP;
        end
        S_HP: state <= S_HPW;
        S_HPW: if (ao_v && ao_tag[9:8] == K_HP) begin
            status <= ST_OK;
            state  <= S_FIN;
        end
        S_FIN: begin
            kupd   <= 1'b0;
            fr_mod <= (status == ST_OK);
            if (status == ST_OK) begin
                cnt_we    <= 1'b1;
                cnt_inc   <= {1'b1, 1'b0, upd};
                if (upd) begin
                    st_we    <= 1'b1;
                    st_wdata <= {r_st[127:3], kp, OT_PREV};
                    kupd <= 1'b1;
                    ev_push <= 1'b1;
                end
                cnt_g[1] <= cnt_g[1] + 1;
            end else case (status)
                ST_UNKNOWN:   cnt_g[3] <= cnt_g[3] + 1;
                ST_MALFORMED: cnt_g[4] <= cnt_g[4] + 1;
                ST_PASS:      cnt_g[5] <= cnt_g[5] + 1;
                ST_KPU:       cnt_g[6] <= cnt_g[6] + 1;
                default: ;
            endcase
            // UDP checksum of the protected datagram: pseudo header, UDP header,
            // masked header, ciphertext, tag (each summed at its byte parity)
            mh = aad;
            mh[7:0] = aad[7:0] ^ (mask[39:32] & 8'h1f);
            for (i = 0; i < 4; i = i + 1)
                if (i < pn_len) mh[8*(1 + cfg_dcid_len + i) +: 8] = aad[8*(1 + cfg_dcid_len + i) +: 8] ^ mask[31 - 8*i -: 8];
            s32 = fold16(ct_sum);
            if (P[0]) s32 = {s32[7:0], s32[15:8]};
            tsum = fold16(sum_words16(tagf));   // (rem belongs to the combinational block)
            if ((P[0] ^ L[0]) == 1'b0) s32 = s32 + tsum;         // tag at an even offset
            else                       s32 = s32 + {tsum[7:0], tsum[15:8]};
            s32 = s32 + sum_words16(mh[127:0]) + sum_words16(mh[255:128])
                + {hb(l4), hb(l4 + 1)} + {hb(l4 + 2), hb(l4 + 3)} + 2 * udplen + 17;
            if (is4) begin
                for (i = 0; i < 4; i = i + 1)
                    s32 = s32 + {hb(l3 + 12 + 2*i), hb(l3 + 13 + 2*i)};
            end else begin
                for (i = 0; i < 16; i = i + 1)
                    s32 = s32 + {hb(l3 + 8 + 2*i), hb(l3 + 9 + 2*i)};
            end
            udpcs <= (is4 && {hb(l4 + 6), hb(l4 + 7)} == 16'd0) ? 16'd0 :
                     (~fold16(s32) == 16'd0) ? 16'hffff : ~fold16(s32);
            aad <= mh;         // the output header is the masked one
            k <= 0;
            state <= S_OUT;
        end
        S_OUT: if (m_axis_tready) begin
            k <= k + 1;
            if ({k[11:0], 4'b0} + 16'd16 >= flen) state <= S_IN;
        end
        default: state <= S_IN;
        endcase
    end

    always @(posedge clk)
        if (state == S_PN2) got <= 0;
        else if (ao_v && ao_tag[9:8] != K_HP) got <= got + 1;

    always @(posedge clk) begin
    end

    always @* begin
        ra     = 16'd0;
        gh_in  = 128'd0;
        ctm    = 128'd0;
        mask_j = 128'd0;
        rem    = L - {jj[11:0], 4'b0};
        for (ci = 0; ci < 16; ci = ci + 1) mask_j[8*ci +: 8] = (ci < rem) ? 8'hff : 8'h00;
        if (state == S_GH) begin
            if (g < ((hlen > 16) ? 16'd2 : 16'd1))
                gh_in = bswap(g[0] ? aad[255:128] : aad[127:0]);
            else if (g < ((hlen > 16) ? 16'd2 : 16'd1) + nblk) begin
                ra    = P + {jj[11:0], 4'b0};
                ctm   = (win ^ ks_j) & mask_j;        // ciphertext = plaintext ^ keystream
                gh_in = bswap(ctm);
            end else
                gh_in = {48'd0, hlen[12:0], 3'b000, 48'd0, L[12:0], 3'b000};
        end else if (state == S_SAMP)
            ra = pn_off + 16'd4;
    end

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
        .win_off(ra), .win(win), .win_b_off(16'd0), .win_b(), .beat_idx(k[MW-1:0]), .beat(obuf));
    reg  [127:0] odata;
    reg  [15:0]  bi;
    always @* begin
        odata = obuf;
        bi = 16'd0;
        oi = 0;
        if (fr_mod) begin
            for (oi = 0; oi < 16; oi = oi + 1) begin
                bi = ob + oi;
                if (bi >= P && bi < P + L)             odata[8*oi +: 8] = obuf[8*oi +: 8] ^ ksa[8*oi +: 8];
                if (bi >= P + L && bi < P + L + 16'd16) odata[8*oi +: 8] = tagf[8*(bi - P - L) +: 8];
                if (bi >= q && bi < P)                 odata[8*oi +: 8] = aad[8*(bi - q) +: 8];
                if (bi == l4 + 6)                      odata[8*oi +: 8] = udpcs[15:8];
                if (bi == l4 + 7)                      odata[8*oi +: 8] = udpcs[7:0];
            end
        end
    end
    wire        olast = (ob + 16'd16 >= flen);
    wire [15:0] orem  = flen - ob;
    genvar gi;
    generate for (gi = 0; gi < NB; gi = gi + 1) begin : keep
        assign m_axis_tkeep[gi] = !olast || (gi < orem);
    end endgenerate
    assign m_axis_tdata  = odata;
    assign m_axis_tvalid = (state == S_OUT);
    assign m_axis_tlast  = (state == S_OUT) && olast;
    assign m_axis_tuser  = {3'b000, kupd, status};
endmodule
