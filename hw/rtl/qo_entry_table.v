// SPDX-License-Identifier: Apache-2.0
// qo_entry_table: the per-entry memories quicoff_rx and quicoff_tx share
// (the FPGA prototype's connection and key tables) and the control commands that program them.
//
// Per entry: configuration {valid, aes256, fail_pass, 20-byte lookup key},
// the header-protection key, two payload key slots {key256, iv96} indexed by
// the key-phase bit, the PN/phase state {lp_valid, largest62, first62,
// cur_phase, other2} and counters {ok, auth_failed, key_updates}. Keys are
// stored raw, not expanded (qo_aes_pipe.v says why).
//
// Two writers, never in the same clock: cmd_apply (the pipeline's FSM is
// between frames) programs an entry from the staging words; st_we writes
// back a frame's PN state and cnt_we adds cnt_inc ({ok, auth_failed,
// key_update}, one bit each) to its counters. The counters are incremented
// in the table, not written from a value read earlier, because quicoff_rx
// has several frames in flight and two of them may share an entry. The
// reads of rd_idx and rd2_idx (a second port for the stage that decodes
// packet numbers while the lookup serves the next frame) are registered
// (block RAM), so their outputs are valid one clock later.
//
// Why the PN/phase state is read on rd2_idx only: a memory read on two ports
// is stored twice, and the second copy (4 DP16KD) served only the control
// port's read-back. Read-backs run between frames with the pipeline empty,
// when the decode stage does not read, so the cores point rd2_idx at the
// read-back's entry then and the state is stored once.
//
// Why both key slots are one memory, addressed {phase, entry}, and each port
// reads one slot chosen by rd_kp / rd2_kp: a 256-entry table fills only half
// the depth of a block RAM in its 36-bit-wide mode (512 x 36), and a memory
// read on two ports is stored twice. Two 352-bit slot memories read on two
// ports took 40 of the ECP5's DP16KD; one memory of twice the depth takes
// 20. Every reader wants one slot at a time (the key of the frame's phase;
// H of slot 0, then of slot 1), so it names the slot with the entry.
//
// Commands (python/quicoff/rtl_driver.py builds the staging words):
//   1 entry config + HP key + PN/phase state; counters reset
//   2 payload key + IV of one phase slot (staging word 11 bit 1 picks it)
//   4 remove (the entry becomes invalid)
//   6 PN/phase state only
// (3, the lookup bucket, is quicoff_rx's; 5, counter read-back, is a read.)
module qo_entry_table #(
    parameter CAP = 256,
    parameter EW  = 8
) (
    input  wire          clk,
    input  wire          cmd_apply,
    input  wire [3:0]    cmd_op,
    input  wire [EW-1:0] cmd_idx,
    input  wire [1023:0] stage,
    input  wire          st_we,
    input  wire          cnt_we,
    input  wire [EW-1:0] wr_idx,
    input  wire [127:0]  st_wdata,
    input  wire [2:0]    cnt_inc,
    input  wire [EW-1:0] rd_idx,
    input  wire          rd_kp,       // key slot read at rd_idx
    input  wire [EW-1:0] rd2_idx,
    input  wire          rd2_kp,      // key slot read at rd2_idx
    output reg  [351:0]  r2_k,        // {key256, iv96} of slot rd2_kp
    output reg  [127:0]  r2_st,
    output reg  [162:0]  r_cfg,
    output reg  [255:0]  r_hp,
    output reg  [351:0]  r_k,         // {key256, iv96} of slot rd_kp
    output reg  [95:0]   r_cnt
);
    // config and HP key in one memory: both are written by command 1 and
    // read at rd_idx only, and 163 + 256 bits fill 12 DP16KD of 36 bits where
    // two memories took 5 + 8 (the core's block RAM is at the device's 208)
    reg [418:0] e_ch  [0:CAP-1];     // {config, HP key}
    reg [351:0] e_k   [0:2*CAP-1];   // key slot p of entry i at {p, i}
    reg [127:0] e_st  [0:CAP-1];
    reg [95:0]  e_cnt [0:CAP-1];

    wire [31:0] sw [0:22];   // the staging words the commands use
    genvar gs;
    generate for (gs = 0; gs < 23; gs = gs + 1) begin : stage_words
        assign sw[gs] = stage[32*gs +: 32];
    end endgenerate

    wire [127:0] st_staged = {sw[18][31], sw[18][29:0], sw[19], sw[21][29:0], sw[22], sw[20][0], sw[20][2:1]};
    wire [351:0] key_staged = {sw[0], sw[1], sw[2], sw[3], sw[4], sw[5], sw[6], sw[7], sw[8], sw[9], sw[10]};

    always @(posedge clk) begin
        if (cmd_apply) begin
            case (cmd_op)
            4'd1: begin
                e_ch[cmd_idx] <= {sw[17][0], sw[17][8], sw[17][9], sw[12], sw[13], sw[14], sw[15], sw[16],
                                  key_staged[351:96]};
                e_st[cmd_idx]  <= st_staged;
                e_cnt[cmd_idx] <= 96'd0;
            end
            4'd2: e_k[{sw[11][1], cmd_idx}] <= key_staged;
            4'd4: e_ch[cmd_idx] <= 419'd0;    // invalid, and its HP key wiped
            4'd6: e_st[cmd_idx]  <= st_staged;
            default: ;
            endcase
        end else begin
            if (st_we)  e_st[wr_idx]  <= st_wdata;
            if (cnt_we) e_cnt[wr_idx] <= {e_cnt[wr_idx][95:64] + cnt_inc[2], e_cnt[wr_idx][63:32] + cnt_inc[1],
                                          e_cnt[wr_idx][31:0] + cnt_inc[0]};
        end
    end

    always @(posedge clk) begin
        {r_cfg, r_hp} <= e_ch[rd_idx];
        r_k   <= e_k[{rd_kp, rd_idx}];
        r_cnt <= e_cnt[rd_idx];
        r2_k  <= e_k[{rd2_kp, rd2_idx}];
        r2_st <= e_st[rd2_idx];
    end
endmodule
