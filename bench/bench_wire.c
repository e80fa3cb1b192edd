/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-bench-wire: what the data path pays per frame to read or write a
 * host <-> offload data header (docs/protocol.md §3.5, §4.2), full message
 * API against the header-only fast path:
 *
 *  - read a 1-RTT DATA_TO_OFFLOAD frame (20-byte header + a 1200-byte QUIC
 *    packet: 8-byte DCID, 2-byte PN), as quicoff-dpdk's TX worker does:
 *    quicoff_wire_decode_payload() vs quicoff_wire_data_hdr_read();
 *  - the same for a compat data_pkt on 0x88B6;
 *  - write the DATA_TO_HOST header in front of a 1200-byte packet, as the RX
 *    worker does: quicoff_wire_encode_payload() (header only: payload NULL)
 *    vs quicoff_wire_data_hdr_write().
 *
 * Each case cycles through 256 frames (different index, PN, length) in one
 * buffer, so the header bytes come from cache as they would from a burst just
 * received.  The two variants of a case run alternately, RUNS times each; the
 * figure is the median ns per frame (min and max beside it).  Pinned to the
 * first allowed CPU when it can be.
 *
 *   quicoff-bench-wire [--runs R] [--frames N]     (defaults 9, 2000000)
 */
#include "quicoff/wire.h"

#include "bench_util.h"

enum { RING = 256, QUIC_LEN = 1200, SLOT = 1280, MAX_RUNS = 64 };

static uint8_t frames[RING][SLOT];
static size_t frame_len[RING];
static volatile uint64_t sink; /* keeps every result live */

/* 1-RTT short header: 0x40 | PN length - 1, 8-byte DCID, 2-byte PN. */
static void quic_packet(uint8_t *q, uint64_t pn, uint64_t *rng)
{
    bench_fill(rng, q, QUIC_LEN);
    q[0] = 0x41;
    q[9] = (uint8_t)(pn >> 8);
    q[10] = (uint8_t)pn;
}

/* The ring of frames of one kind; returns the EtherType to read them with. */
static uint16_t make_frames(quicoff_wire_kind_t kind)
{
    uint64_t rng = 0x51c0ffee;
    static uint8_t q[QUIC_LEN];
    for (unsigned i = 0; i < RING; i++) {
        struct quicoff_wire_msg m;
        quicoff_wire_msg_init(&m, kind);
        uint64_t pn = 1000000 + i * 7;
        quic_packet(q, pn, &rng);
        m.u.data.index = m.index = kind == QUICOFF_WIRE_COMPAT_DATA ? i : i * 977;
        m.u.data.pn = pn;
        m.u.data.payload = q;
        m.u.data.payload_len = QUIC_LEN - (i % 64); /* lengths vary, as traffic does */
        uint16_t et = 0;
        if (quicoff_wire_encode_payload(&m, frames[i], SLOT, &frame_len[i], &et) != QUICOFF_OK) {
            fprintf(stderr, "quicoff-bench-wire: encode failed\n");
            exit(1);
        }
        if (i == RING - 1)
            return et;
    }
    return 0;
}

static double run_full_decode(uint16_t et, unsigned long n)
{
    uint64_t acc = 0, t0 = bench_now_ns();
    for (unsigned long k = 0; k < n; k++) {
        unsigned i = k % RING;
        struct quicoff_wire_msg m;
        if (quicoff_wire_decode_payload(et, frames[i], frame_len[i], &m) == QUICOFF_OK)
            acc += m.u.data.index ^ m.u.data.pn ^ (uint64_t)(m.u.data.payload - frames[i]) ^
                   m.u.data.payload_len ^ m.kind;
    }
    uint64_t t1 = bench_now_ns();
    sink += acc;
    return (double)(t1 - t0) / (double)n;
}

static double run_hdr_read(uint16_t et, unsigned long n)
{
    uint64_t acc = 0, t0 = bench_now_ns();
    for (unsigned long k = 0; k < n; k++) {
        unsigned i = k % RING;
        quicoff_wire_kind_t kind;
        struct quicoff_wire_data d;
        if (quicoff_wire_data_hdr_read(et, frames[i], frame_len[i], &kind, &d) == QUICOFF_OK)
            acc += d.index ^ d.pn ^ (uint64_t)(d.payload - frames[i]) ^ d.payload_len ^ kind;
    }
    uint64_t t1 = bench_now_ns();
    sink += acc;
    return (double)(t1 - t0) / (double)n;
}

/* What rx_path.c fills per packet before writing the header. */
static void to_host(unsigned i, struct quicoff_wire_data *d)
{
    memset(d, 0, sizeof(*d));
    d->index = i * 977;
    d->pn = 1000000 + i * 7;
    d->status = QUICOFF_OK;
    d->level = QUICOFF_LEVEL_ONE_RTT;
    d->key_phase = i & 1;
    d->payload_len = QUIC_LEN - (i % 64);
}

static double run_full_encode(unsigned long n)
{
    uint64_t acc = 0, t0 = bench_now_ns();
    for (unsigned long k = 0; k < n; k++) {
        unsigned i = k % RING;
        struct quicoff_wire_msg m;
        quicoff_wire_msg_init(&m, QUICOFF_WIRE_DATA_TO_HOST);
        to_host(i, &m.u.data);
        m.index = m.u.data.index;
        m.status = m.u.data.status;
        size_t len = 0;
        if (quicoff_wire_encode_payload(&m, frames[i], QUICOFF_WIRE_DATA_HDR_LEN, &len, NULL) ==
            QUICOFF_OK)
            acc += len ^ frames[i][7];
    }
    uint64_t t1 = bench_now_ns();
    sink += acc;
    return (double)(t1 - t0) / (double)n;
}

static double run_hdr_write(unsigned long n)
{
    uint64_t acc = 0, t0 = bench_now_ns();
    for (unsigned long k = 0; k < n; k++) {
        unsigned i = k % RING;
        struct quicoff_wire_data d;
        to_host(i, &d);
        acc += quicoff_wire_data_hdr_write(frames[i], QUICOFF_WIRE_DATA_HDR_LEN,
                                           QUICOFF_WIRE_DATA_TO_HOST, &d) ^
               frames[i][7];
    }
    uint64_t t1 = bench_now_ns();
    sink += acc;
    return (double)(t1 - t0) / (double)n;
}

enum variant { FULL_DECODE, HDR_READ, FULL_ENCODE, HDR_WRITE };

static double run(enum variant v, uint16_t et, unsigned long n)
{
    switch (v) {
    case FULL_DECODE:
        return run_full_decode(et, n);
    case HDR_READ:
        return run_hdr_read(et, n);
    case FULL_ENCODE:
        return run_full_encode(n);
    default:
        return run_hdr_write(n);
    }
}

/* One case: the two variants alternately, runs times each, after a warm-up. */
static void bench_case(const char *what, quicoff_wire_kind_t kind, enum variant a,
                       const char *a_name, enum variant b, const char *b_name, unsigned runs,
                       unsigned long n)
{
    uint16_t et = make_frames(kind);
    double va[MAX_RUNS], vb[MAX_RUNS];
    run(a, et, n / 4);
    run(b, et, n / 4);
    for (unsigned r = 0; r < runs; r++) {
        va[r] = run(a, et, n);
        vb[r] = run(b, et, n);
    }
    double ma, mina, maxa, mb, minb, maxb;
    bench_stats(va, runs, &ma, &mina, &maxa);
    bench_stats(vb, runs, &mb, &minb, &maxb);
    printf("%s\n", what);
    printf("  %-30s %7.2f ns/frame  (min %.2f, max %.2f)\n", a_name, ma, mina, maxa);
    printf("  %-30s %7.2f ns/frame  (min %.2f, max %.2f)  %.1fx\n", b_name, mb, minb, maxb,
           mb > 0 ? ma / mb : 0);
}

int main(int argc, char **argv)
{
    unsigned runs = 9;
    unsigned long n = 2000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            n = strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: quicoff-bench-wire [--runs R (1..%d)] [--frames N]\n",
                    MAX_RUNS);
            return 2;
        }
    }
    if (runs < 1 || runs > MAX_RUNS || n < 1) {
        fprintf(stderr, "quicoff-bench-wire: --runs 1..%d, --frames >= 1\n", MAX_RUNS);
        return 2;
    }
    int cpus[1];
    char why[128] = "";
    bool pinned = bench_allowed_cpus(cpus, 1) == 1 &&
                  bench_pin_cpu(cpus[0], why, sizeof(why)) == 0;
    char model[128], flags[256];
    bench_cpu_info(model, sizeof(model), flags, sizeof(flags));
    printf("quicoff-bench-wire: %s; %s; median of %u runs of %lu frames; "
           "sizeof(struct quicoff_wire_msg) = %zu, sizeof(struct quicoff_wire_data) = %zu\n",
           model, pinned ? "pinned" : "not pinned", runs, n, sizeof(struct quicoff_wire_msg),
           sizeof(struct quicoff_wire_data));
    bench_case("read v1 DATA_TO_OFFLOAD (1-RTT, 1200-byte QUIC packet), the TX worker's decode",
               QUICOFF_WIRE_DATA_TO_OFFLOAD, FULL_DECODE, "quicoff_wire_decode_payload", HDR_READ,
               "quicoff_wire_data_hdr_read", runs, n);
    bench_case("read compat data_pkt (0x88B6, 1200-byte QUIC packet)", QUICOFF_WIRE_COMPAT_DATA,
               FULL_DECODE, "quicoff_wire_decode_payload", HDR_READ, "quicoff_wire_data_hdr_read",
               runs, n);
    bench_case("write the DATA_TO_HOST header, the RX worker's encode", QUICOFF_WIRE_DATA_TO_HOST,
               FULL_ENCODE, "quicoff_wire_encode_payload", HDR_WRITE,
               "quicoff_wire_data_hdr_write", runs, n);
    return 0;
}
