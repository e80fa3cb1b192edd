/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-bench-memory-floor: what the memory system alone costs per packet
 * when every packet's entry is a cache miss (a million active connections,
 * docs/benchmarks.md), for the engine's layout and for layouts it could
 * have: no crypto, no parsing, only the loads.
 *
 * Each packet walks four levels, as unprotect does: its index cell (one
 * line), its slot, its keyset's hot lines, then the key schedules the
 * keyset leads to.  In most rows every level's address comes from the
 * entry's number, so no level waits for the one before; the "*-chased" rows
 * read each address from the level before (the slot's from the cell, the
 * keyset's from the slot, or with two levels both from the cell), as the
 * engine's pointers are. A burst of 32 packets asks for one level of all its
 * packets (prefetch, into the level the engine asks for: index.h, qo_prefetch_far)
 * before it reads that level for any, the engine's level-by-level prefetch
 * (protect.c), so the misses of a level overlap.
 * Connections are drawn uniformly at random from N (default 10^6); every
 * structure is on transparent huge pages, as the engine's are.
 *
 * The line counts per layout (64 B AES-128-GCM, short header) are the ones
 * docs/benchmarks.md reasons out: a layout's figure is the floor under
 * quicoff-bench's 10^6-active figure for an engine with that layout.
 *
 * The layouts "*-computed" also do the work such a layout needs: after
 * its loads, each burst's AES-128-GCM contexts (round keys, H and the
 * powers of H a packet of --size bytes needs) and AES-128
 * header-protection round keys are computed from the raw keys it read,
 * with the backend's own lane-wise expansion (gcm_vaes.c, four keys per
 * zmm), into per-burst scratch as a worker would (CPUs with VAES only).
 *
 * Before the layouts it measures the machine itself: the latency of a
 * dependent load at random in a working set the size of the keysets', and
 * the rows "one-line", "two-lines", "three-lines" give what each random
 * line a packet costs with the level passes (the slope a layout's line
 * count is worth on this machine); "merged-computed" is the floor of a
 * table whose slot and keyset hot parts (raw keys included) were one
 * 128-byte entry.
 *
 * usage: quicoff-bench-memory-floor [--connections N] [--repeats R] [--size BYTES] [--json FILE]
 */
#include "bench_util.h"
#include "crypto.h"
#include "index.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define BURST 32
#define HUGE_PAGE ((size_t)2 << 20)

struct layout {
    const char *name;
    const char *what;
    unsigned slot_lines, keyset_lines, schedule_lines;
    int compute;     /* expand the burst's key schedules from the raw keys read */
    int other_level; /* prefetch into the other level than the engine's (L2 on AMD, L1 elsewhere) */
    int chase;       /* each level's address read from the level before, as the engine's are */
    int keys_in_slot; /* compute from raw keys in the slot's second line (a merged hot entry) */
};

static const struct layout layouts[] = {
    {"engine", "today: slot 2 lines, keyset 3, HP round keys 3, GCM round keys and H powers 7", 2,
     3, 10, 0, 0, 0, 0},
    {"schedules-trimmed", "GCM context with nr beside the round keys: 6 GCM lines", 2, 3, 9, 0, 0,
     0, 0},
    {"compact-entry", "slot and keyset hot parts 1 and 2 lines, schedules as today", 1, 2, 10, 0,
     0, 0, 0},
    {"keys-on-the-fly", "raw keys in the keyset (5 lines), schedules expanded per packet", 2, 5, 0,
     0, 0, 0, 0},
    {"keys-on-the-fly-computed", "the same, and the schedules computed (AEAD + HP, lanes)", 2, 5,
     0, 1, 0, 0, 0},
    {"minimum", "index cell, 1 slot line, 2 keyset lines, nothing else", 1, 2, 0, 0, 0, 0, 0},
    /* what a table whose key schedules are computed per burst reads (protect.c) */
    {"engine-computed", "today, schedules computed: slot 2, keyset 3 (hot pair + the key line)", 2,
     3, 0, 1, 0, 0, 0},
    {"pair-computed", "the raw keys inside the keyset's hot pair: slot 2, keyset 2", 2, 2, 0, 1, 0,
     0, 0},
    {"line-computed", "that, and the slot's per-packet state in one line: slot 1, keyset 2", 1, 2,
     0, 1, 0, 0, 0},
    {"engine-computed-other-level",
     "engine-computed with the prefetches into the other level than the engine's", 2, 3, 0, 1, 1,
     0, 0},
    {"engine-computed-chased", "engine-computed, each level found through the one before", 2, 3, 0,
     1, 0, 1, 0},
    {"two-levels-chased", "the same with the keyset found from the cell (cell -> slot + keyset)",
     2, 3, 0, 1, 0, 2, 0},
    /* the machine: what one, two, three random lines a packet cost, the
     * slope a layout's line count is worth here */
    {"one-line", "the index cell alone: one random line a packet", 0, 0, 0, 0, 0, 0, 0},
    {"two-lines", "the index cell and one slot line", 1, 0, 0, 0, 0, 0, 0},
    {"three-lines", "the index cell and a 128-byte entry (slot and keyset hot parts merged)", 2, 0,
     0, 0, 0, 0, 0},
    {"merged-computed", "three-lines, the raw keys in the entry's second line, schedules computed",
     2, 0, 0, 1, 0, 0, 1},
};

/* Per-burst scratch of the computing layout: an AES-GCM context and an AES
 * round-key schedule per packet, zeroed once. */
struct scratch {
    _Alignas(64) uint8_t gcm[BURST][1024];
    _Alignas(64) uint8_t hp[BURST][15 * 16];
    size_t len;
};

/* The raw keys sit in the last of the keyset's kl hot lines, as the
 * engine's key line has them: the AEAD key, then the HP key 32 bytes on. */
static void compute_schedules(struct scratch *sc, const uint8_t *const ks[BURST], unsigned kl)
{
    void *g[BURST], *h[BURST];
    const uint8_t *ak[BURST], *hk[BURST];
    for (int i = 0; i < BURST; i++) {
        g[i] = sc->gcm[i];
        h[i] = sc->hp[i];
        ak[i] = ks[i] + (kl - 1) * 64;
        hk[i] = ks[i] + (kl - 1) * 64 + 32;
    }
    qo_aes128gcm_vaes.expand(g, ak, BURST, 13, sc->len); /* short header: 1 + 8 CID + 4 PN */
    qo_aes_round_keys_lanes(h, hk, BURST, 16);
}

static void *huge_zeroed(size_t size)
{
    size = (size + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = aligned_alloc(HUGE_PAGE, size);
    if (!p) {
        perror("aligned_alloc");
        exit(1);
    }
    (void)madvise(p, size, MADV_HUGEPAGE);
    memset(p, 1, size);
    return p;
}

static uint64_t rng = 0x9E3779B97F4A7C15u;

static inline uint32_t next_conn(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Into the level the engine's level passes ask for (index.h,
 * qo_prefetch_far: L1 on AMD cores, L2 on the others), or into the other
 * one for the row that shows what that choice is worth. */
static inline void prefetch_line(const uint8_t *p, int other_level)
{
    if (!other_level)
        qo_prefetch_far(p); /* the engine's own, so the rows follow its choice */
    else if (qo_far_prefetch_into_l1)
        __builtin_prefetch(p, 0, 2);
    else
        __builtin_prefetch(p, 0, 3);
}

static inline void prefetch_lines(const uint8_t *p, unsigned lines, int other_level)
{
    for (unsigned l = 0; l < lines; l++)
        prefetch_line(p + 64 * l, other_level);
}

static inline uint64_t read_lines(const uint8_t *p, unsigned lines)
{
    uint64_t s = 0;
    for (unsigned l = 0; l < lines; l++)
        s += p[64 * l];
    return s;
}

static inline uint32_t load_index(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

/* ns per load of a chain of dependent loads at random lines of buf (size
 * bytes): the machine's memory latency, TLB misses included, for a working
 * set the size of the keysets'. */
static double latency(uint8_t *buf, size_t size, uint64_t *sink)
{
    const size_t lines = size / 64, steps = 2000000;
    /* one cycle through every line (Sattolo's shuffle), each line's
     * successor written into it, so the walk never finds a line in cache */
    uint32_t *succ = malloc(lines * sizeof(*succ));
    if (!succ) {
        perror("malloc");
        exit(1);
    }
    for (size_t i = 0; i < lines; i++)
        succ[i] = (uint32_t)i;
    for (size_t i = lines - 1; i > 0; i--) {
        size_t j = next_conn((uint32_t)i), t = succ[i];
        succ[i] = succ[j];
        succ[j] = (uint32_t)t;
    }
    for (size_t i = 0; i < lines; i++) {
        uint64_t next = succ[i];
        memcpy(buf + i * 64 + 8, &next, sizeof(next));
    }
    free(succ);
    uint64_t at = 0, t0 = bench_now_ns();
    for (size_t k = 0; k < steps; k++)
        memcpy(&at, buf + at * 64 + 8, sizeof(at));
    uint64_t t1 = bench_now_ns();
    *sink += at;
    return (double)(t1 - t0) / (double)steps;
}

/* ns per packet of one window of at least min_ns. */
static double run(const struct layout *L, uint32_t n, uint8_t *cells, uint8_t *slots,
                  uint8_t *keysets, size_t keyset_size, struct scratch *sc, uint64_t min_ns,
                  uint64_t *sink)
{
    uint32_t idx[BURST], sl[BURST], kx[BURST];
    const uint8_t *ksp[BURST];
    uint64_t packets = 0, t0 = bench_now_ns(), t = t0, s = 0;
    while (t - t0 < min_ns) {
        for (int round = 0; round < 64; round++) {
            for (int i = 0; i < BURST; i++) {
                idx[i] = next_conn(n);
                prefetch_line(cells + (size_t)idx[i] * 2 * 64,
                              L->other_level); /* 2 cells per entry */
            }
            /* chase: the slot's index is in the cell (and with chase 2 the
             * keyset's too), the keyset's in the slot, as the engine's
             * pointers are; else both are the entry's own index */
            for (int i = 0; i < BURST; i++) {
                const uint8_t *cell = cells + (size_t)idx[i] * 2 * 64;
                s += cell[0];
                sl[i] = L->chase ? load_index(cell) : idx[i];
                kx[i] = L->chase == 2 ? load_index(cell + 4) : idx[i];
                prefetch_lines(slots + (size_t)sl[i] * 128, L->slot_lines, L->other_level);
                if (L->chase == 2)
                    prefetch_lines(keysets + (size_t)kx[i] * keyset_size, L->keyset_lines,
                                   L->other_level);
            }
            for (int i = 0; i < BURST; i++) {
                const uint8_t *slot = slots + (size_t)sl[i] * 128;
                s += read_lines(slot, L->slot_lines);
                if (L->chase == 1)
                    kx[i] = load_index(slot + 4);
                if (L->chase != 2)
                    prefetch_lines(keysets + (size_t)kx[i] * keyset_size, L->keyset_lines,
                                   L->other_level);
            }
            for (int i = 0; i < BURST; i++) {
                const uint8_t *ks = keysets + (size_t)kx[i] * keyset_size;
                s += read_lines(ks, L->keyset_lines);
                prefetch_lines(ks + 64 * L->keyset_lines, L->schedule_lines, L->other_level);
            }
            for (int i = 0; i < BURST; i++)
                s += read_lines(keysets + (size_t)kx[i] * keyset_size + 64 * L->keyset_lines,
                                L->schedule_lines);
            if (L->compute) {
                for (int i = 0; i < BURST; i++)
                    ksp[i] = L->keys_in_slot ? slots + (size_t)sl[i] * 128
                                             : keysets + (size_t)kx[i] * keyset_size;
                compute_schedules(sc, ksp, L->keys_in_slot ? 2 : L->keyset_lines);
                s += sc->gcm[BURST - 1][0] + sc->hp[BURST - 1][0];
            }
            packets += BURST;
        }
        t = bench_now_ns();
    }
    *sink += s;
    return (double)(t - t0) / (double)packets;
}

int main(int argc, char **argv)
{
    uint32_t n = 1000000;
    unsigned repeats = 7;
    const char *json = NULL;
    size_t size = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--connections") && i + 1 < argc)
            n = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--repeats") && i + 1 < argc)
            repeats = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = (size_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--json") && i + 1 < argc)
            json = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--connections N] [--repeats R] [--size BYTES] [--json FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    if (n == 0 || repeats == 0 || repeats > 64 || size > 65536) {
        fprintf(stderr, "connections >= 1, repeats 1..64, size <= 65536\n");
        return 2;
    }
    struct scratch *sc = aligned_alloc(64, sizeof(*sc));
    if (!sc) {
        perror("aligned_alloc");
        return 1;
    }
    memset(sc, 0, sizeof(*sc));
    sc->len = size;
    int can_compute = qo_gcm_vaes_available();
    const size_t keyset_size = 1664; /* an AES-128-GCM keyset of the engine */
    uint8_t *cells = huge_zeroed((size_t)n * 2 * 64);
    uint8_t *slots = huge_zeroed((size_t)n * 128);
    uint8_t *keysets = huge_zeroed((size_t)n * keyset_size);
    /* For the chased rows: entry i's slot and keyset at random places, their
     * indices in its cell (slot, keyset) and in its slot (keyset). */
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = next_conn(n), b = next_conn(n);
        memcpy(cells + (size_t)i * 2 * 64, &a, 4);
        memcpy(cells + (size_t)i * 2 * 64 + 4, &b, 4);
        memcpy(slots + (size_t)a * 128 + 4, &b, 4);
    }
    size_t nl = sizeof(layouts) / sizeof(layouts[0]);
    double v[sizeof(layouts) / sizeof(layouts[0])][64];
    uint64_t sink = 0;
    /* on a copy's worth of memory of its own, so the chase's writes leave
     * the layouts' data as it was */
    uint8_t *chain = huge_zeroed((size_t)n * keyset_size);
    double lat = latency(chain, (size_t)n * keyset_size, &sink);
    free(chain);
    for (unsigned r = 0; r < repeats; r++) /* interleaved: every layout in each round */
        for (size_t k = 0; k < nl; k++)
            v[k][r] = layouts[k].compute && !can_compute
                          ? 0
                          : run(&layouts[k], n, cells, slots, keysets, keyset_size, sc, 100000000,
                                &sink);
    FILE *jf = json ? fopen(json, "w") : NULL;
    if (json && !jf) {
        perror(json);
        free(cells);
        free(slots);
        free(keysets);
        return 1;
    }
    printf("%u connections, bursts of %d, %u interleaved rounds of 100 ms, %zu-byte packets; ns "
           "per packet\n",
           n, BURST, repeats, size);
    printf("memory latency: %.1f ns a dependent load at random in %.0f MiB (transparent huge "
           "pages)\n",
           lat, (double)n * keyset_size / (1 << 20));
    printf("prefetches into %s, as the engine's on this CPU (index.h, qo_prefetch_far)\n",
           qo_far_prefetch_into_l1 ? "L1" : "L2");
    printf("%-18s %5s %8s %8s %8s  %s\n", "layout", "lines", "median", "min", "max", "what");
    if (jf)
        fprintf(
            jf,
            "{\"tool\": \"quicoff-bench-memory-floor\", \"connections\": %u, \"burst\": %d, "
            "\"repeats\": %u, \"size\": %zu, \"latency_ns\": %.2f, \"prefetch_level\": \"%s\", "
            "\"layouts\": [",
            n, BURST, repeats, size, lat, qo_far_prefetch_into_l1 ? "L1" : "L2");
    for (size_t k = 0; k < nl; k++) {
        const struct layout *L = &layouts[k];
        unsigned lines = 1 + L->slot_lines + L->keyset_lines + L->schedule_lines;
        double med, min, max;
        if (L->compute && !can_compute) {
            printf("%-18s skipped: computing the schedules needs AVX-512 + VAES\n", L->name);
            continue;
        }
        bench_stats(v[k], repeats, &med, &min, &max);
        printf("%-18s %5u %8.1f %8.1f %8.1f  %s\n", L->name, lines, med, min, max, L->what);
        if (jf)
            fprintf(jf,
                    "%s{\"name\": \"%s\", \"lines\": %u, \"ns_median\": %.2f, \"ns_min\": %.2f, "
                    "\"ns_max\": %.2f}",
                    k ? ", " : "", L->name, lines, med, min, max);
    }
    if (jf) {
        fprintf(jf, "], \"checksum\": %llu}\n", (unsigned long long)sink);
        fclose(jf);
    }
    free(cells);
    free(slots);
    free(keysets);
    qo_secure_zero(sc, sizeof(*sc));
    free(sc);
    return 0;
}
