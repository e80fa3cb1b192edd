/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared harness of the C peer programs of `quicoff bench` (ipsecmb_bare,
 * ngtcp2_bench): options, the packet pool, the timing loop, self-checks and
 * the JSON lines.  Header-only; each peer includes it once and provides a
 * `struct peer` with its setup/protect/unprotect functions.
 *
 * The method mirrors quicoff-bench (docs/benchmarks.md) so the figures are
 * comparable:
 *   - packets are 1-RTT short headers: first byte, DCID (8 bytes, 20 in the
 *     short-88 row), a 4-byte packet number, the payload, a 16-byte tag;
 *   - keys are set up once per row (one context per connection and
 *     direction); per packet the peer builds the nonce (IV xor PN), seals or
 *     opens in place with the header as AAD and, if it does header
 *     protection, computes and applies the HP mask;
 *   - a timed pass is 256 packets, handed to the peer as one burst array;
 *     before each pass the 256 packets are copied back from a pristine pool
 *     outside the timer;
 *   - a repeat is as many passes as make >= min-ms of timed work; the value
 *     is timed ns / packets; median, min and max over the repeats (after one
 *     warm-up repeat);
 *   - with N connections the packets of a pass go to connections in a fixed
 *     random order that visits every connection once per cycle.  All
 *     connections hold the same key bytes in separate contexts, so any
 *     packet opens under any connection's context while the memory traffic
 *     is that of N distinct key schedules.
 * Before timing each row checks: protect -> unprotect round-trips to the
 * original bytes, and a packet with a flipped tag byte is rejected.  At
 * start, each peer checks known answers for every suite it supports: RFC
 * 9001 A.3 (AES-128-GCM), A.5 (ChaCha20-Poly1305) and the A.3 packet under
 * AES-256-GCM and AES-128-CCM (expected bytes from pyca/cryptography).
 *
 * Output: one JSON object per line on stdout per suite/size/connections/op;
 * progress and errors on stderr.  Exit status 0, 1 if a check failed, 2 on
 * bad usage.
 */
#ifndef QUICOFF_PEER_HARNESS_H
#define QUICOFF_PEER_HARNESS_H

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { SUITE_AES128GCM, SUITE_AES256GCM, SUITE_AES128CCM, SUITE_CHACHA, SUITE_COUNT };

static const char *const suite_names[SUITE_COUNT] = {"aes-128-gcm", "aes-256-gcm", "aes-128-ccm",
                                                     "chacha20-poly1305"};
static const unsigned suite_key_len[SUITE_COUNT] = {16, 32, 16, 32};

#define TAG_LEN 16
#define IV_LEN 12
#define PASS_PKTS 256
#define MAX_PAYLOAD 16384

/* One packet of a burst: the buffer (header | payload | tag), its length,
 * the offset of the packet-number field (what a receiver learns from parsing
 * the header; the PN length comes from the first byte), the connection
 * whose keys to use, and the full packet number (protect: the number to
 * protect with; unprotect: the number the receiver expects next, used to
 * decode the truncated one). */
struct pkt {
    uint8_t *p;
    size_t len;
    size_t pn_off;
    uint32_t conn;
    uint64_t pn;
};

struct peer {
    const char *path;    /* "ipsecmb-bare", "ngtcp2-gnutls", ... */
    const char *backend; /* "intel-ipsec-mb 1.3.0", "gnutls 3.7.9", ... */
    int does_hp;         /* 1: header protection is part of each packet */
    /* NULL if the suite is supported, else why not */
    const char *(*unsupported)(int suite);
    /* keys of nconns connections, both directions; NULL on failure */
    void *(*setup)(int suite, unsigned nconns, const uint8_t *key, const uint8_t *iv,
                   const uint8_t *hp);
    void (*teardown)(void *st);
    /* return the number of packets that failed (0 = all good) */
    unsigned (*protect)(void *st, struct pkt *pk, unsigned n);
    unsigned (*unprotect)(void *st, struct pkt *pk, unsigned n);
};

/* ---- small helpers shared by the peers ---------------------------------- */

static inline void make_nonce(uint8_t nonce[IV_LEN], const uint8_t iv[IV_LEN], uint64_t pn)
{
    memcpy(nonce, iv, IV_LEN);
    for (int i = 0; i < 8; i++)
        nonce[IV_LEN - 1 - i] ^= (uint8_t)(pn >> (8 * i));
}

/* RFC 9000 A.3 */
static inline uint64_t pn_decode(uint64_t expected, uint64_t truncated, unsigned nbits)
{
    uint64_t win = (uint64_t)1 << nbits, hwin = win / 2, mask = win - 1;
    uint64_t cand = (expected & ~mask) | truncated;

    if (cand + hwin <= expected && cand < ((uint64_t)1 << 62) - win)
        return cand + win;
    if (cand > expected + hwin && cand >= win)
        return cand - win;
    return cand;
}

/* Apply a 5-byte header-protection mask (RFC 9001 5.4.1).  unmask: the first
 * byte is protected and the PN length is read after unmasking. */
static inline unsigned hp_apply(uint8_t *p, size_t pn_off, const uint8_t mask[5], int unmask)
{
    uint8_t bits = (p[0] & 0x80) ? 0x0f : 0x1f;
    unsigned pn_len;

    if (unmask) {
        p[0] ^= mask[0] & bits;
        pn_len = (p[0] & 3u) + 1;
    } else {
        pn_len = (p[0] & 3u) + 1;
        p[0] ^= mask[0] & bits;
    }
    for (unsigned i = 0; i < pn_len; i++)
        p[pn_off + i] ^= mask[1 + i];
    return pn_len;
}

/* Constant-time tag comparison; 0 if equal. */
static inline int tag_differs(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;

    for (int i = 0; i < TAG_LEN; i++)
        d |= a[i] ^ b[i];
    return d != 0;
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

static uint64_t prng_next(uint64_t *s)
{
    uint64_t x = *s;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);

    if (!p) {
        fprintf(stderr, "out of memory (%zu x %zu bytes)\n", n, sz);
        exit(1);
    }
    return p;
}

static int hex_decode(uint8_t *out, size_t cap, const char *hex)
{
    size_t n = strlen(hex) / 2;

    if (n > cap)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t)v;
    }
    return (int)n;
}

/* ---- options -------------------------------------------------------------- */

struct size_cfg {
    char label[24];
    unsigned payload, dcid_len;
};

struct opts {
    int suites[SUITE_COUNT];
    int nsuites;
    struct size_cfg sizes[32];
    int nsizes;
    unsigned conns[16];
    int nconns;
    int repeats;
    double min_ms;
    int protect, unprotect;
};

static void usage(const char *prog, const struct peer *pr)
{
    fprintf(stderr,
            "usage: %s [options]   (%s: %s)\n"
            "  --quick              3 repeats of >= 10 ms (default 7 of >= 50 ms)\n"
            "  --suite LIST         aes-128-gcm,aes-256-gcm,aes-128-ccm,chacha20-poly1305\n"
            "  --size LIST          payload bytes; 88 or short-88 = the 88-byte packet\n"
            "                       (20-byte DCID, 47-byte payload). Default:\n"
            "                       short-88,64,128,256,512,1024,1400\n"
            "  --connections LIST   spread packets over N connections (default 1)\n"
            "  --repeats R, --min-ms MS, --op protect|unprotect|both\n"
            "Prints one JSON object per line on stdout.\n",
            prog, pr->path, pr->does_hp ? "AEAD + header protection" : "AEAD only");
}

static int add_size(struct opts *o, const char *v)
{
    if (o->nsizes >= 32)
        return -1;
    struct size_cfg *s = &o->sizes[o->nsizes];
    if (strcmp(v, "88") == 0 || strcmp(v, "short-88") == 0) {
        snprintf(s->label, sizeof s->label, "short-88");
        s->payload = 47;
        s->dcid_len = 20;
    } else {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end || n < 20 || n > MAX_PAYLOAD) /* >= 20: room for the HP sample */
            return -1;
        snprintf(s->label, sizeof s->label, "%ld", n);
        s->payload = (unsigned)n;
        s->dcid_len = 8;
    }
    o->nsizes++;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o, const struct peer *pr)
{
    static const struct option lo[] = {{"quick", no_argument, 0, 'q'},
                                       {"suite", required_argument, 0, 's'},
                                       {"size", required_argument, 0, 'z'},
                                       {"connections", required_argument, 0, 'c'},
                                       {"repeats", required_argument, 0, 'r'},
                                       {"min-ms", required_argument, 0, 'm'},
                                       {"op", required_argument, 0, 'o'},
                                       {"help", no_argument, 0, 'h'},
                                       {0, 0, 0, 0}};
    int quick = 0, rep = 0, c;
    double ms = 0;
    char *list;

    memset(o, 0, sizeof *o);
    o->protect = o->unprotect = 1;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'q':
            quick = 1;
            break;
        case 's':
            list = strdup(optarg);
            for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
                int k;
                for (k = 0; k < SUITE_COUNT && strcmp(t, suite_names[k]); k++)
                    ;
                if (k == SUITE_COUNT || o->nsuites >= SUITE_COUNT) {
                    fprintf(stderr, "bad suite '%s'\n", t);
                    return -1;
                }
                o->suites[o->nsuites++] = k;
            }
            free(list);
            break;
        case 'z':
            list = strdup(optarg);
            for (char *t = strtok(list, ","); t; t = strtok(NULL, ","))
                if (add_size(o, t)) {
                    fprintf(stderr, "bad size '%s' (20..%d, or short-88)\n", t, MAX_PAYLOAD);
                    return -1;
                }
            free(list);
            break;
        case 'c':
            list = strdup(optarg);
            for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
                long n = strtol(t, NULL, 10);
                if (n < 1 || n > 100000000 || o->nconns >= 16) {
                    fprintf(stderr, "bad connections '%s'\n", t);
                    return -1;
                }
                o->conns[o->nconns++] = (unsigned)n;
            }
            free(list);
            break;
        case 'r':
            rep = atoi(optarg);
            break;
        case 'm':
            ms = atof(optarg);
            break;
        case 'o':
            o->protect = !strcmp(optarg, "protect") || !strcmp(optarg, "both");
            o->unprotect = !strcmp(optarg, "unprotect") || !strcmp(optarg, "both");
            if (!o->protect && !o->unprotect) {
                fprintf(stderr, "bad op '%s'\n", optarg);
                return -1;
            }
            break;
        case 'h':
            usage(argv[0], pr);
            exit(0);
        default:
            usage(argv[0], pr);
            return -1;
        }
    }
    if (optind < argc) {
        usage(argv[0], pr);
        return -1;
    }
    if (!o->nsuites)
        for (int k = 0; k < SUITE_COUNT; k++)
            o->suites[o->nsuites++] = k;
    if (!o->nsizes) {
        static const char *def[] = {"short-88", "64", "128", "256", "512", "1024", "1400"};
        for (unsigned i = 0; i < sizeof def / sizeof *def; i++)
            add_size(o, def[i]);
    }
    if (!o->nconns)
        o->conns[o->nconns++] = 1;
    o->repeats = rep > 0 ? rep : quick ? 3 : 7;
    if (o->repeats > 64)
        o->repeats = 64;
    o->min_ms = ms > 0 ? ms : quick ? 10 : 50;
    return 0;
}

/* ---- the packet pool ----------------------------------------------------- */

/* Writes a short-header packet: 0x43 (fixed bit, PN length 4), the DCID, the
 * 4-byte PN, then the payload.  Returns the header length. */
static size_t build_plain(uint8_t *p, const struct size_cfg *sz, uint64_t pn, uint64_t *rnd)
{
    size_t h = 0;

    p[h++] = 0x43;
    for (unsigned i = 0; i < sz->dcid_len; i++)
        p[h++] = (uint8_t)(0xd0 + i);
    for (int i = 3; i >= 0; i--)
        p[h++] = (uint8_t)(pn >> (8 * i));
    for (unsigned i = 0; i < sz->payload; i++)
        p[h + i] = (uint8_t)prng_next(rnd);
    memset(p + h + sz->payload, 0, TAG_LEN);
    return h;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static const char *peer_failure; /* set by a check, printed in the JSON */

/* Involuntary context switches so far: another task took the CPU. */
static long invol_csw(void)
{
    struct rusage ru;

    return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_nivcsw : 0;
}

static long row_csw = -1; /* of the measurement being printed, -1: none */

static void print_record(const struct peer *pr, int suite, const struct size_cfg *sz,
                         unsigned nconns, const char *op, const double *v, int n,
                         const char *status, const char *reason)
{
    size_t hdr = 1 + sz->dcid_len + 4;

    printf("{\"path\": \"%s\", \"backend\": \"%s\", \"suite\": \"%s\", \"op\": \"%s\", "
           "\"label\": \"%s\", \"payload\": %u, \"packet_len\": %zu, \"header_len\": %zu, "
           "\"dcid_len\": %u, \"connections\": %u, \"threads\": 1, \"burst\": %d, "
           "\"header_protection\": %s, ",
           pr->path, pr->backend, suite_names[suite], op, sz->label, sz->payload,
           hdr + sz->payload + TAG_LEN, hdr, sz->dcid_len, nconns, PASS_PKTS,
           pr->does_hp ? "true" : "false");
    if (v && n > 0) {
        double s[64];
        memcpy(s, v, sizeof(double) * (size_t)n);
        qsort(s, (size_t)n, sizeof(double), cmp_double);
        double med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        printf("\"repeats\": %d, \"ns_median\": %.2f, \"ns_min\": %.2f, \"ns_max\": %.2f, "
               "\"mpps\": %.4f, \"gbps\": %.4f, \"ctx_switches\": %ld, \"status\": \"ok\"}\n",
               n, med, s[0], s[n - 1], 1e3 / med, sz->payload * 8.0 / med, row_csw);
    } else {
        printf("\"status\": \"%s\", \"reason\": \"%s\"}\n", status, reason ? reason : "");
    }
    fflush(stdout);
}

/* ---- known answers (RFC 9001 Appendix A) --------------------------------- */

static const char *const a3_key = "cf3a5331653c364c88f0f379b6067e37";
static const char *const a3_iv = "0ac1493ca1905853b0bba03e";
static const char *const a3_hp = "c206b8d9b9f0f37644430b490eeaa314";
static const char *const a3_header = "c1000000010008f067a5502a4262b50040750001";
static const char *const a3_payload =
    "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00"
    "020304";
static const char *const a3_packet =
    "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb38cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee";
/* The A.3 packet under AES-256-GCM (key = A.5's key, HP key = A.5's HP key,
 * AES-256-ECB mask) and under AES-128-CCM (A.3's keys): no RFC gives these,
 * the expected bytes were computed with pyca/cryptography, an independent
 * implementation (AESGCM / AESCCM + AES-ECB). */
static const char *const a3_gcm256_packet =
    "c6000000010008f067a5502a4262b50040754062b44def9e1d21d4511617d682"
    "6580aaa94f3f9db3b7a9acb6b478d17ea241fce828bd2fdde4bd6e839b02fea6"
    "7fade0bdae4050de6b010f91c8d320c33a4b463877726913d0661a8c48139ade"
    "cf81a0bd15bafbfc7eee3edd2c455adb75ed9195faf1d3d1f61c63cc9ae31e00"
    "6e69155c166682";
static const char *const a3_ccm128_packet =
    "ca000000010008f067a5502a4262b50040754a85f9cf2cff5b3f5fa4f3a32aff"
    "2c364c43037badcfb480e2ee85f944404ca012f4c78f60f4adb57a8a1e4035a6"
    "23d59a759fbc33204ad236e30654489ccc3898c69d476cab6caa289489cabf30"
    "4ec35d1e6f82dc261123f7123ae291d502353d8c96188f1b87ae9cffd3b73adf"
    "bfccba85ee53c8";
static const char *const a5_key =
    "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8";
static const char *const a5_iv = "e0459b3474bdd0e44a41c144";
static const char *const a5_hp =
    "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4";
static const char *const a5_header = "4200bff4";
static const char *const a5_payload = "01";
static const char *const a5_packet = "4cfe4189655e5cd55c41f69080575d7999c25a5bfb";

/* Protect one known packet and compare it with the RFC's bytes (AEAD-only
 * peers: the bytes after the header, which header protection leaves alone),
 * then unprotect it back.  Returns 0 on success, -1 on mismatch, 1 if the
 * suite is unsupported. */
static int known_answer(const struct peer *pr, int suite, const char *key_hex, const char *iv_hex,
                        const char *hp_hex, const char *hdr_hex, const char *pl_hex,
                        const char *want_hex, uint64_t pn, const char *name)
{
    uint8_t key[32], iv[IV_LEN], hp[32], buf[256], plain[256], want[256];
    int kl, hl, pl, wl;
    void *st;
    struct pkt pk;

    if (pr->unsupported(suite))
        return 1;
    kl = hex_decode(key, sizeof key, key_hex);
    hex_decode(iv, sizeof iv, iv_hex);
    hex_decode(hp, sizeof hp, hp_hex);
    hl = hex_decode(buf, sizeof buf, hdr_hex);
    pl = hex_decode(buf + hl, sizeof buf - (size_t)hl, pl_hex);
    wl = hex_decode(want, sizeof want, want_hex);
    if (kl != (int)suite_key_len[suite] || wl != hl + pl + TAG_LEN) {
        fprintf(stderr, "%s: bad known-answer table for %s\n", pr->path, name);
        return -1;
    }
    memcpy(plain, buf, (size_t)(hl + pl));
    st = pr->setup(suite, 1, key, iv, hp);
    if (!st) {
        fprintf(stderr, "%s: setup failed for %s\n", pr->path, name);
        return -1;
    }
    pk = (struct pkt){buf, (size_t)wl, (size_t)hl - ((buf[0] & 3u) + 1), 0, pn};
    int bad = pr->protect(st, &pk, 1) != 0;
    size_t from = pr->does_hp ? 0 : (size_t)hl;
    if (!bad && memcmp(buf + from, want + from, (size_t)wl - from) != 0) {
        fprintf(stderr, "%s: %s: protected bytes differ from the RFC\n", pr->path, name);
        bad = 1;
    }
    pk.pn = pn; /* expected */
    if (!bad && (pr->unprotect(st, &pk, 1) != 0 || memcmp(buf, plain, (size_t)(hl + pl)))) {
        fprintf(stderr, "%s: %s: unprotect did not give the plaintext back\n", pr->path, name);
        bad = 1;
    }
    pr->teardown(st);
    if (!bad)
        fprintf(stderr, "%s: known answer ok: %s\n", pr->path, name);
    return bad ? -1 : 0;
}

/* ---- one row --------------------------------------------------------------- */

struct pool {
    uint8_t *plain, *prot, *work; /* PASS_PKTS packets each, stride bytes apart */
    size_t stride, len, hdr;
    struct pkt pk[PASS_PKTS];
    uint32_t *perm;
    unsigned nconns, cursor;
};

static void pool_assign(struct pool *pl)
{
    for (unsigned i = 0; i < PASS_PKTS; i++) {
        pl->pk[i].conn = pl->perm[pl->cursor];
        if (++pl->cursor == pl->nconns)
            pl->cursor = 0;
    }
}

/* One timed repeat: passes until >= min_ms of timed work; ns per packet. */
static double timed_repeat(const struct peer *pr, void *st, struct pool *pl, int protect,
                           double min_ms, unsigned *failures)
{
    uint64_t timed = 0, pkts = 0, goal = (uint64_t)(min_ms * 1e6);
    const uint8_t *src = protect ? pl->plain : pl->prot;

    do {
        memcpy(pl->work, src, pl->stride * PASS_PKTS); /* restore, untimed */
        pool_assign(pl);
        for (unsigned i = 0; i < PASS_PKTS; i++)
            pl->pk[i].pn = 1000 + i;
        uint64_t t0 = now_ns();
        unsigned f = protect ? pr->protect(st, pl->pk, PASS_PKTS)
                             : pr->unprotect(st, pl->pk, PASS_PKTS);
        uint64_t t1 = now_ns();
        *failures += f;
        timed += t1 - t0;
        pkts += PASS_PKTS;
    } while (timed < goal);
    return (double)timed / (double)pkts;
}

static int run_row(const struct peer *pr, const struct opts *o, int suite,
                   const struct size_cfg *sz, unsigned nconns)
{
    uint8_t key[32], iv[IV_LEN], hp[32];
    uint64_t rnd = 0x9e3779b97f4a7c15ull ^ ((uint64_t)suite << 32) ^ sz->payload;
    struct pool pl;
    void *st;
    int rc = 0;

    for (int i = 0; i < 32; i++) {
        key[i] = (uint8_t)(0x10 + i);
        hp[i] = (uint8_t)(0x30 + 3 * i);
    }
    for (int i = 0; i < IV_LEN; i++)
        iv[i] = (uint8_t)(0xa0 + i);

    memset(&pl, 0, sizeof pl);
    pl.hdr = 1 + sz->dcid_len + 4;
    pl.len = pl.hdr + sz->payload + TAG_LEN;
    pl.stride = (pl.len + 63) & ~(size_t)63;
    pl.plain = xcalloc(PASS_PKTS, pl.stride);
    pl.prot = xcalloc(PASS_PKTS, pl.stride);
    pl.work = xcalloc(PASS_PKTS, pl.stride);
    pl.nconns = nconns;
    pl.perm = xcalloc(nconns, sizeof *pl.perm);
    for (unsigned i = 0; i < nconns; i++)
        pl.perm[i] = i;
    for (unsigned i = nconns; i > 1; i--) { /* Fisher-Yates, fixed seed */
        unsigned k = (unsigned)(prng_next(&rnd) % i);
        uint32_t t = pl.perm[i - 1];
        pl.perm[i - 1] = pl.perm[k];
        pl.perm[k] = t;
    }
    for (unsigned i = 0; i < PASS_PKTS; i++) {
        build_plain(pl.plain + i * pl.stride, sz, 1000 + i, &rnd);
        pl.pk[i] = (struct pkt){pl.work + i * pl.stride, pl.len, 1 + sz->dcid_len, 0, 1000 + i};
    }

    fprintf(stderr, "%s: %s %s x%u connections: setting up keys\n", pr->path, suite_names[suite],
            sz->label, nconns);
    st = pr->setup(suite, nconns, key, iv, hp);
    if (!st) {
        print_record(pr, suite, sz, nconns, "protect", NULL, 0, "failed", "key setup failed");
        print_record(pr, suite, sz, nconns, "unprotect", NULL, 0, "failed", "key setup failed");
        rc = 1;
        goto out;
    }

    /* The protected pool: every pool packet protected under connection 0. */
    memcpy(pl.work, pl.plain, pl.stride * PASS_PKTS);
    for (unsigned i = 0; i < PASS_PKTS; i++)
        pl.pk[i].conn = 0;
    if (pr->protect(st, pl.pk, PASS_PKTS) != 0) {
        peer_failure = "protect of the pool failed";
        goto fail;
    }
    memcpy(pl.prot, pl.work, pl.stride * PASS_PKTS);
    if (memcmp(pl.prot + pl.hdr, pl.plain + pl.hdr, sz->payload) == 0) {
        peer_failure = "protect left the payload unchanged";
        goto fail;
    }
    /* Round trip: unprotect every packet under the last connection. */
    for (unsigned i = 0; i < PASS_PKTS; i++)
        pl.pk[i].conn = nconns - 1;
    if (pr->unprotect(st, pl.pk, PASS_PKTS) != 0) {
        peer_failure = "unprotect of the pool failed";
        goto fail;
    }
    for (unsigned i = 0; i < PASS_PKTS; i++)
        if (memcmp(pl.work + i * pl.stride, pl.plain + i * pl.stride, pl.len - TAG_LEN)) {
            peer_failure = "round trip gave different bytes";
            goto fail;
        }
    /* A flipped tag byte must be rejected. */
    memcpy(pl.work, pl.prot, pl.len);
    pl.work[pl.len - 1] ^= 0x01;
    if (pr->unprotect(st, pl.pk, 1) == 0) {
        peer_failure = "a packet with a corrupted tag was accepted";
        goto fail;
    }

    for (int op = 0; op < 2; op++) {
        int protect = op == 0;
        double v[64];
        unsigned failures = 0;

        if ((protect && !o->protect) || (!protect && !o->unprotect))
            continue;
        (void)timed_repeat(pr, st, &pl, protect, o->min_ms, &failures); /* warm-up */
        long csw0 = invol_csw();
        for (int r = 0; r < o->repeats; r++)
            v[r] = timed_repeat(pr, st, &pl, protect, o->min_ms, &failures);
        row_csw = invol_csw() - csw0;
        if (failures) {
            print_record(pr, suite, sz, nconns, protect ? "protect" : "unprotect", NULL, 0,
                         "failed", "packets failed during the timed passes");
            rc = 1;
            continue;
        }
        print_record(pr, suite, sz, nconns, protect ? "protect" : "unprotect", v, o->repeats, "ok",
                     NULL);
    }
    pr->teardown(st);
    goto out;
fail:
    fprintf(stderr, "%s: %s %s: CHECK FAILED: %s\n", pr->path, suite_names[suite], sz->label,
            peer_failure);
    print_record(pr, suite, sz, nconns, "protect", NULL, 0, "failed", peer_failure);
    print_record(pr, suite, sz, nconns, "unprotect", NULL, 0, "failed", peer_failure);
    pr->teardown(st);
    rc = 1;
out:
    free(pl.plain);
    free(pl.prot);
    free(pl.work);
    free(pl.perm);
    return rc;
}

static int peer_main(int argc, char **argv, const struct peer *pr)
{
    struct opts o;
    int rc = 0;
    cpu_set_t set;
    int cpu = sched_getcpu();

    if (parse_opts(argc, argv, &o, pr))
        return 2;
    if (cpu >= 0) { /* pin to the CPU we start on, like quicoff-bench */
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) == 0)
            fprintf(stderr, "%s: pinned to CPU %d\n", pr->path, cpu);
    }
    if (known_answer(pr, SUITE_AES128GCM, a3_key, a3_iv, a3_hp, a3_header, a3_payload, a3_packet,
                     1, "RFC 9001 A.3 (AES-128-GCM)") < 0)
        rc = 1;
    if (known_answer(pr, SUITE_AES256GCM, a5_key, a3_iv, a5_hp, a3_header, a3_payload,
                     a3_gcm256_packet, 1, "A.3 packet, AES-256-GCM") < 0)
        rc = 1;
    if (known_answer(pr, SUITE_AES128CCM, a3_key, a3_iv, a3_hp, a3_header, a3_payload,
                     a3_ccm128_packet, 1, "A.3 packet, AES-128-CCM") < 0)
        rc = 1;
    if (known_answer(pr, SUITE_CHACHA, a5_key, a5_iv, a5_hp, a5_header, a5_payload, a5_packet,
                     654360564, "RFC 9001 A.5 (ChaCha20-Poly1305)") < 0)
        rc = 1;
    for (int si = 0; si < o.nsuites; si++) {
        int suite = o.suites[si];
        const char *why = pr->unsupported(suite);
        for (int zi = 0; zi < o.nsizes; zi++)
            for (int ci = 0; ci < o.nconns; ci++) {
                if (why || rc) {
                    const char *st = why ? "unsupported" : "failed";
                    const char *r = why ? why : "known-answer check failed (see stderr)";
                    if (o.protect)
                        print_record(pr, suite, &o.sizes[zi], o.conns[ci], "protect", NULL, 0, st,
                                     r);
                    if (o.unprotect)
                        print_record(pr, suite, &o.sizes[zi], o.conns[ci], "unprotect", NULL, 0,
                                     st, r);
                    continue;
                }
                rc |= run_row(pr, &o, suite, &o.sizes[zi], o.conns[ci]);
            }
    }
    return rc;
}

#endif
