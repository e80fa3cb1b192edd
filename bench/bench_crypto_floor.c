/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-bench-crypto-floor: what the crypto alone of one unprotected
 * (or protected) 1-RTT packet costs on this CPU, through the same backend
 * functions the engine calls (the AEAD's open_burst / seal_burst and the
 * header-protection mask_burst, 32 packets at a time), with nothing of the
 * engine around them: no parse, lookup, checks, PN decoding, nonce or
 * counters.  quicoff-bench's engine figure minus this floor is the engine's
 * own work per packet, the figure docs/benchmarks.md ("Small packets: the
 * engine around the crypto") follows.
 *
 * Packets are laid out as quicoff-bench's: first byte, DCID (8 B; short-88:
 * 20 B), 4-byte PN, payload, 16-byte tag. Per size and direction it prints
 * the median over R windows of the window's ns per packet (restoring the
 * packets between passes is outside the timer, as in quicoff-bench), or
 * with --min their minimum: on a CPU shared with other jobs a window that
 * was interrupted reads slow, and quicoff-bench prints its minimum beside
 * its median for the same reason, so engine work can be taken min - min.
 *
 * usage: quicoff-bench-crypto-floor [--suite NAME] [--repeats R] [--min-ms MS] [--min]
 */
#include "crypto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLOOR_BURST 32
#define FLOOR_PACKETS 256 /* one timed pass, as quicoff-bench's */

struct floor_size {
    const char *label;
    unsigned payload, dcid_len;
};

static const struct floor_size sizes[] = {{"64", 64, 8}, {"short-88", 47, 20}, {"1400", 1400, 8}};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *ctx_alloc(size_t size)
{
    void *p = aligned_alloc(64, (size + 63) / 64 * 64);
    if (!p) {
        perror("aligned_alloc");
        exit(1);
    }
    return p;
}

/* One size, one direction: the median of repeats windows' ns per packet. */
static double measure(const qo_aead_algo_t *aead, const qo_hp_algo_t *hp, void *aead_ctx,
                      void *hp_ctx, void *wstate, const struct floor_size *sz, int seal,
                      unsigned repeats, double min_ms, int minimum)
{
    unsigned hdr = 1 + sz->dcid_len + 4, len = hdr + sz->payload + QUICOFF_TAG_LEN;
    uint8_t *pristine = malloc((size_t)len * FLOOR_PACKETS),
            *pkt = malloc((size_t)len * FLOOR_PACKETS);
    static qo_aead_op_t ops[FLOOR_PACKETS];
    static const uint8_t *samples[FLOOR_PACKETS];
    static void *hp_ctxs[FLOOR_PACKETS];
    static uint8_t masks[FLOOR_BURST][5];
    static int result[FLOOR_BURST];
    if (!pristine || !pkt) {
        perror("malloc");
        exit(1);
    }
    for (unsigned i = 0; i < FLOOR_PACKETS; i++) {
        uint8_t *p = pristine + (size_t)i * len;
        for (unsigned k = 0; k < len; k++)
            p[k] = (uint8_t)(i * 31 + k);
        p[0] = 0x43;
        ops[i] = (qo_aead_op_t){.ctx = aead_ctx,
                                .aad = pkt + (size_t)i * len,
                                .aad_len = hdr,
                                .data = pkt + (size_t)i * len + hdr,
                                .len = sz->payload,
                                .tag = pkt + (size_t)i * len + hdr + sz->payload};
        memset(ops[i].nonce, 0, sizeof(ops[i].nonce));
        ops[i].nonce[11] = (uint8_t)i;
        ops[i].nonce[10] = (uint8_t)(i >> 8);
        samples[i] = pkt + (size_t)i * len + hdr; /* 4 bytes after the PN field */
        hp_ctxs[i] = hp_ctx;
    }
    /* open needs authentic packets: seal the pristine copies once */
    memcpy(pkt, pristine, (size_t)len * FLOOR_PACKETS);
    for (unsigned b = 0; b < FLOOR_PACKETS; b += FLOOR_BURST)
        aead->seal_burst(wstate, ops + b, FLOOR_BURST, result);
    memcpy(pristine, pkt, (size_t)len * FLOOR_PACKETS);

    double per_window[64];
    if (repeats > 64)
        repeats = 64;
    for (unsigned r = 0; r < repeats; r++) {
        double timed = 0, start = now_ns();
        unsigned long passes = 0;
        int bad = 0;
        do {
            memcpy(pkt, pristine, (size_t)len * FLOOR_PACKETS);
            double t0 = now_ns();
            for (unsigned b = 0; b < FLOOR_PACKETS; b += FLOOR_BURST) {
                hp->mask_burst(hp_ctxs + b, samples + b, masks, FLOOR_BURST);
                if (seal) {
                    aead->seal_burst(wstate, ops + b, FLOOR_BURST, result);
                } else {
                    aead->open_burst(wstate, ops + b, FLOOR_BURST, result);
                    for (unsigned k = 0; k < FLOOR_BURST; k++)
                        bad |= result[k];
                }
            }
            timed += now_ns() - t0;
            passes++;
        } while (now_ns() - start < min_ms * 1e6);
        if (bad) {
            fprintf(stderr, "open failed: the floor would not be the engine's work\n");
            exit(1);
        }
        per_window[r] = timed / ((double)passes * FLOOR_PACKETS);
    }
    qsort(per_window, repeats, sizeof(double), cmp_double);
    free(pristine);
    free(pkt);
    return per_window[minimum ? 0 : repeats / 2];
}

int main(int argc, char **argv)
{
    quicoff_suite_t suite = QUICOFF_AES_128_GCM;
    unsigned repeats = 7;
    double min_ms = 20;
    int minimum = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) {
            suite = quicoff_suite_from_name(argv[++i]);
            if (suite == QUICOFF_SUITE_COUNT) {
                fprintf(stderr, "unknown suite %s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc) {
            repeats = (unsigned)atoi(argv[++i]);
        } else if (strcmp(argv[i], "--min-ms") == 0 && i + 1 < argc) {
            min_ms = atof(argv[++i]);
        } else if (strcmp(argv[i], "--min") == 0) {
            minimum = 1;
        } else {
            fprintf(stderr, "usage: %s [--suite NAME] [--repeats R] [--min-ms MS] [--min]\n",
                    argv[0]);
            return 2;
        }
    }
    if (repeats == 0)
        repeats = 1;
    const qo_backend_t *be = qo_backend_find("auto");
    const qo_aead_algo_t *aead = be ? be->aead[suite] : NULL;
    const qo_hp_algo_t *hp = be ? be->hp[suite] : NULL;
    if (!aead || !hp || !aead->seal_burst || !aead->open_burst || !hp->mask_burst) {
        fprintf(stderr,
                "skipped: backend %s has no burst calls for this suite: nothing to floor\n",
                be ? be->name : "(none)");
        return 0;
    }
    uint8_t key[32];
    for (unsigned i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(0xa0 + i);
    void *aead_ctx = ctx_alloc(aead->ctx_size), *hp_ctx = ctx_alloc(hp->ctx_size);
    void *wstate = NULL;
    if (aead->setup(aead_ctx, key) != 0 || hp->setup(hp_ctx, key) != 0 ||
        (be->worker_init && be->worker_init(&wstate) != 0)) {
        fprintf(stderr, "backend setup failed\n");
        return 1;
    }
    printf("backend %s, aead %s, hp %s: crypto alone (mask_burst + %s), ns per packet (%s of "
           "%u windows)\n",
           be->name, aead->name, hp->name, "open_burst / seal_burst",
           minimum ? "minimum" : "median", repeats);
    printf("%-9s %10s %10s\n", "size", "protect", "unprotect");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        double seal = measure(aead, hp, aead_ctx, hp_ctx, wstate, &sizes[s], 1, repeats, min_ms,
                              minimum);
        double open = measure(aead, hp, aead_ctx, hp_ctx, wstate, &sizes[s], 0, repeats, min_ms,
                              minimum);
        printf("%-9s %10.1f %10.1f\n", sizes[s].label, seal, open);
    }
    if (be->worker_fini)
        be->worker_fini(wstate);
    aead->dispose(aead_ctx);
    hp->dispose(hp_ctx);
    free(aead_ctx);
    free(hp_ctx);
    return 0;
}
