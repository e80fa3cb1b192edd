// SPDX-License-Identifier: Apache-2.0
// The long runs' testbench (Verilator, C++): streams the script gen_rx.py or
// gen_tx.py wrote (format: script.py) through quicoff_rx or quicoff_tx and
// compares every output frame byte for byte with its m_axis_tuser status and
// flags, at the simulator's own speed. The input has random tvalid gaps and
// the output random tready back-pressure (both from a seeded generator, so a
// failing run repeats).
//
// One source for both directions: Verilator names the model Vdut (--prefix);
// QO_LONG_TX=1 builds it for quicoff_tx, whose frames carry a descriptor on
// s_axis_tuser (80 bits) and whose m_axis_tuser has no second flag bit.
//
//   tb_long SCRIPT [SEED]   prints one JSON line; exit status 1 on any mismatch
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <deque>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "Vdut.h"
#include "verilated.h"

#ifndef QO_LONG_TX
#define QO_LONG_TX 0
#endif

namespace {

using Bytes = std::vector<uint8_t>;

Bytes from_hex(const std::string &h) {
    Bytes b(h.size() / 2);
    for (size_t i = 0; i < b.size(); i++) b[i] = std::stoi(h.substr(2 * i, 2), nullptr, 16);
    return b;
}

// m_axis_tuser bits compared: status [3:0]; RX flags [5:4] (key update, the
// next phase tried), TX [4] (key update)
constexpr unsigned kTuserMask = QO_LONG_TX ? 0x1F : 0x3F;

struct Expected {
    unsigned tuser;
    Bytes data;
};

struct Input {
    Bytes data;
    uint32_t tuser[3];  // TX: the descriptor, s_axis_tuser[79:0] in 32-bit words
};

// a hex number of up to 96 bits into little-endian 32-bit words
void hex_words(const std::string &h, uint32_t w[3]) {
    w[0] = w[1] = w[2] = 0;
    for (size_t i = 0; i < h.size() && i < 24; i++) {
        size_t bit = 4 * (h.size() - 1 - i);
        w[bit / 32] |= uint32_t(std::stoi(h.substr(i, 1), nullptr, 16)) << (bit % 32);
    }
}

struct Bench {
    Vdut *dut;
    std::mt19937_64 rng;
    uint64_t cycles = 0;
    std::deque<Input> in_q;          // frames not yet fully sent
    size_t in_off = 0;               // next byte of in_q.front()
    std::deque<Expected> exp_q;      // outputs still to come
    Bytes cur_out;                   // the output frame being received
    uint64_t compared = 0, mismatches = 0, extra = 0, in_frames = 0, beats_in = 0;

    explicit Bench(Vdut *d, uint64_t seed) : dut(d), rng(seed) {}

    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }

    void drive_input() {
        bool v = !in_q.empty() && !chance(0.2);
        dut->s_axis_tvalid = v;
        if (!v) return;
        const Bytes &f = in_q.front().data;
#if QO_LONG_TX
        for (int i = 0; i < 3; i++) dut->s_axis_tuser[i] = in_off == 0 ? in_q.front().tuser[i] : 0;
#endif
        size_t n = std::min<size_t>(16, f.size() - in_off);
        uint32_t w[4] = {0, 0, 0, 0};
        for (size_t i = 0; i < n; i++) w[i / 4] |= uint32_t(f[in_off + i]) << (8 * (i % 4));
        for (int i = 0; i < 4; i++) dut->s_axis_tdata[i] = w[i];
        dut->s_axis_tkeep = n == 16 ? 0xFFFF : (1u << n) - 1;
        dut->s_axis_tlast = in_off + n == f.size();
    }

    void mismatch(const char *what, const Expected *e, const Bytes &got, unsigned tuser) {
        mismatches++;
        if (mismatches > 5) return;
        std::fprintf(stderr, "mismatch (%s) at cycle %llu, output %llu: want tuser %x len %zu, got tuser %x len %zu\n",
                     what, (unsigned long long)cycles, (unsigned long long)compared, e ? e->tuser : 0,
                     e ? e->data.size() : 0, tuser, got.size());
    }

    // one clock: inputs set before the rising edge, handshakes taken on it
    void tick(bool allow_input) {
        if (allow_input) drive_input(); else dut->s_axis_tvalid = 0;
        dut->m_axis_tready = !chance(0.3);
        dut->clk = 0;
        dut->eval();
        bool in_take = dut->s_axis_tvalid && dut->s_axis_tready;
        bool out_take = dut->m_axis_tvalid && dut->m_axis_tready;
        Bytes beat;
        bool last = false;
        unsigned tuser = 0;
        if (out_take) {
            for (int i = 0; i < 16; i++)
                if (dut->m_axis_tkeep >> i & 1) beat.push_back(dut->m_axis_tdata[i / 4] >> (8 * (i % 4)));
            last = dut->m_axis_tlast;
            tuser = dut->m_axis_tuser & kTuserMask;
        }
        dut->clk = 1;
        dut->eval();
        cycles++;
        if (in_take) {
            beats_in++;
            size_t n = std::min<size_t>(16, in_q.front().data.size() - in_off);
            in_off += n;
            if (in_off == in_q.front().data.size()) { in_q.pop_front(); in_off = 0; in_frames++; }
        }
        if (out_take) {
            cur_out.insert(cur_out.end(), beat.begin(), beat.end());
            if (last) {
                if (exp_q.empty()) {
                    extra++;
                    mismatch("output nobody expected", nullptr, cur_out, tuser);
                } else {
                    Expected &e = exp_q.front();
                    if (e.data != cur_out || e.tuser != tuser) mismatch("bytes or status", &e, cur_out, tuser);
                    compared++;
                    exp_q.pop_front();
                }
                cur_out.clear();
            }
        }
    }

    void idle(int n) { for (int i = 0; i < n; i++) tick(false); }

    // AXI4-Lite, with the data path idle (control commands run between drains)
    void axil_write(uint32_t addr, uint32_t value) {
        dut->s_axil_awaddr = addr; dut->s_axil_awvalid = 1;
        dut->s_axil_wdata = value; dut->s_axil_wstrb = 0xF; dut->s_axil_wvalid = 1;
        dut->s_axil_bready = 1;
        bool aw = false, w = false, b = false;
        for (int guard = 0; !b; guard++) {
            if (guard > 1000) { std::fprintf(stderr, "AXI4-Lite write %x hangs\n", addr); std::exit(2); }
            dut->clk = 0; dut->eval();
            bool awt = dut->s_axil_awvalid && dut->s_axil_awready;
            bool wt = dut->s_axil_wvalid && dut->s_axil_wready;
            bool bt = dut->s_axil_bvalid && dut->s_axil_bready;
            dut->clk = 1; dut->eval(); cycles++;
            if (awt) { aw = true; dut->s_axil_awvalid = 0; }
            if (wt) { w = true; dut->s_axil_wvalid = 0; }
            if (bt && aw && w) b = true;
        }
        dut->s_axil_bready = 0;
    }

    uint32_t axil_read(uint32_t addr) {
        dut->s_axil_araddr = addr; dut->s_axil_arvalid = 1; dut->s_axil_rready = 1;
        for (int guard = 0;; guard++) {
            if (guard > 1000) { std::fprintf(stderr, "AXI4-Lite read %x hangs\n", addr); std::exit(2); }
            dut->clk = 0; dut->eval();
            bool art = dut->s_axil_arvalid && dut->s_axil_arready;
            bool rt = dut->s_axil_rvalid && dut->s_axil_rready;
            uint32_t v = dut->s_axil_rdata;
            dut->clk = 1; dut->eval(); cycles++;
            if (art) dut->s_axil_arvalid = 0;
            if (rt) { dut->s_axil_rready = 0; return v; }
        }
    }

    void drain() {
        uint64_t guard = 0;
        while (!in_q.empty() || !exp_q.empty()) {
            tick(true);
            if (++guard > 2000000) {
                std::fprintf(stderr, "drain: %zu frames never came out\n", exp_q.size());
                mismatches += exp_q.size();
                exp_q.clear(); in_q.clear(); in_off = 0;
                break;
            }
        }
        idle(50);  // a dropped frame that leaked would show up here
    }
};

}  // namespace

int main(int argc, char **argv) {
    if (argc < 2) { std::fprintf(stderr, "usage: tb_long SCRIPT [SEED]\n"); return 2; }
    Verilated::commandArgs(1, argv);
    auto *dut = new Vdut;
    Bench b(dut, argc > 2 ? std::strtoull(argv[2], nullptr, 0) : 1);
    dut->rst = 1;
    b.idle(5);
    dut->rst = 0;
    b.idle(2);
    std::ifstream in(argv[1]);
    std::string op, x, y;
    uint64_t polls = 0, writes = 0, reads = 0;
    std::string z;
    while (in >> op) {
        if (op == "I") {
            Input f{};
            if (QO_LONG_TX) { in >> y; hex_words(y, f.tuser); }
            in >> x;
            f.data = from_hex(x);
            b.in_q.push_back(std::move(f));
        }
        else if (op == "O") { in >> x >> y; b.exp_q.push_back({unsigned(std::stoul(x, nullptr, 16)), from_hex(y)}); }
        else if (op == "D") b.drain();
        else if (op == "W") { in >> x >> y; b.axil_write(std::stoul(x, nullptr, 16), std::stoul(y, nullptr, 16)); writes++; }
        else if (op == "P") { while (b.axil_read(0x00C) & 1) {} polls++; }
        else if (op == "R") {
            in >> x >> y >> z;
            uint32_t addr = std::stoul(x, nullptr, 16), want = std::stoul(y, nullptr, 16);
            uint32_t mask = std::stoul(z, nullptr, 16), got = b.axil_read(addr);
            reads++;
            if ((got & mask) != want) {
                b.mismatches++;
                std::fprintf(stderr, "read-back %x: want %x (mask %x), got %x\n", addr, want, mask, got);
            }
        }
        else { std::fprintf(stderr, "bad script op %s\n", op.c_str()); return 2; }
        // keep the input busy: run the clock while frames wait
        while (b.in_q.size() > 64) b.tick(true);
    }
    b.drain();
    std::printf("{\"input_frames\": %llu, \"frames\": %llu, \"mismatches\": %llu, \"extra_frames\": %llu, "
                "\"cycles\": %llu, \"input_beats\": %llu, \"control_writes\": %llu, \"readbacks_checked\": %llu}\n",
                (unsigned long long)b.in_frames, (unsigned long long)b.compared,
                (unsigned long long)b.mismatches, (unsigned long long)b.extra, (unsigned long long)b.cycles,
                (unsigned long long)b.beats_in, (unsigned long long)writes,
                (unsigned long long)reads);
    dut->final();
    delete dut;
    return b.mismatches ? 1 : 0;
}
