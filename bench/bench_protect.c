/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-bench: single-core cost of QUIC packet protection through the
 * engine, next to the bare OpenSSL EVP cost of the same cryptography.
 *
 * For every suite and payload size, in one run:
 *   quicoff      protect / unprotect through quicoff_protect_burst /
 *                quicoff_unprotect_burst (bursts of 32), 1-RTT short headers;
 *   openssl-evp  the bare AEAD: an EVP_CIPHER_CTX keyed once per connection,
 *                per packet: set IV, AAD = a header of the same length,
 *                encrypt (decrypt) in place + tag; the same call sequence the
 *                OpenSSL backend makes, without parsing, lookup, header
 *                protection, nonce building, counters;
 *   openssl-hp   the bare header-protection mask (AES-ECB of one block, or
 *                ChaCha20 with the sample as counter||nonce) with one context.
 * The engine's overhead is engine ns / EVP ns, printed per row.
 *
 * Method (printed at the start of every run as well):
 *  - keys and tables set up once per (suite, size, connections); packets are
 *    built and protected once into a pristine pool;
 *  - a timed pass processes a window of W = 8 bursts (256 packets); before
 *    each pass the window is restored from the pristine pool OUTSIDE the
 *    timer (memcpy; its cost is timed separately and reported, never
 *    subtracted or added); the timer brackets only the burst calls;
 *  - a repeat is as many passes as make >= --min-ms of timed work; its value
 *    is timed ns / packets. R repeats (default 7), median and min reported;
 *    the engine and EVP measurements of one row are interleaved repeat by
 *    repeat so slow drift on a shared machine hits both alike;
 *  - with N connections, packets go to connections in a fixed random
 *    permutation; the pool then holds >= N packets (unprotect: each
 *    connection has its own DCID), so every connection is touched in turn;
 *  - the calling thread is pinned to the CPU it started on.
 *
 * Usage: quicoff-bench [--quick] [--json FILE] [--suite NAME[,NAME..]]
 *        [--size N[,N..]] [--connections N[,N..]] [--backend NAME]
 *        [--repeats R] [--min-ms MS] [--burst B] [--op protect|unprotect]
 *        [--no-baseline]
 */
#include "bench_util.h"
#include "quicoff/quicoff.h"

#include <getopt.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <stdbool.h>

#define TAG_LEN QUICOFF_TAG_LEN
#define WINDOW_BURSTS 8
#define MAX_LIST 16
/* Re-key a TX connection (outside the timer) before it can reach the AEAD
 * confidentiality limit: RFC 9001 §6.6, 2^23 for AES-GCM, ~2^21.5 for CCM. */
#define REKEY_AT (UINT32_C(1) << 20)

/* ------------------------------------------------------------------------ */
/* options                                                                   */

struct size_cfg {
    char label[24];    /* "64", "seed002-88" */
    unsigned payload;  /* plaintext bytes, tag excluded */
    unsigned dcid_len;
    unsigned pn_len;
};

struct opts {
    unsigned repeats;
    double min_ms;
    bool quick;
    const char *json_path;
    const char *backend;
    unsigned burst;
    quicoff_suite_t suites[QUICOFF_SUITE_COUNT];
    unsigned nsuites;
    struct size_cfg sizes[MAX_LIST];
    unsigned nsizes;
    unsigned conns[MAX_LIST];
    unsigned nconns;
    unsigned ops;  /* bit 0 protect, bit 1 unprotect */
    bool baseline; /* bare OpenSSL rows */
};

/* Seed 002's packet: a short header with a 20-byte DCID, 88 bytes in all:
 * 1 (first byte) + 20 (DCID) + 4 (PN) + 47 (payload) + 16 (tag). */
static const struct size_cfg seed002 = {"seed002-88", 47, 20, 4};

static struct size_cfg plain_size(unsigned payload)
{
    struct size_cfg s = {"", payload, 8, 4}; /* 8-byte DCID, 4-byte PN */
    snprintf(s.label, sizeof(s.label), "%u", payload);
    return s;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: quicoff-bench [options]\n"
            "  --quick              3 repeats of >= 10 ms (whole default run < 30 s)\n"
            "  --json FILE          write one record per measurement to FILE\n"
            "  --suite LIST         aes-128-gcm,aes-256-gcm,aes-128-ccm,chacha20-poly1305 (default all)\n"
            "  --size LIST          payload bytes, e.g. 64,1400; 88 or seed002 = seed 002's 88-byte\n"
            "                       packet (20-byte DCID, 47-byte payload). Default:\n"
            "                       seed002,64,128,256,512,1024,1400\n"
            "  --connections LIST   spread packets over N connections, e.g. 1,100000 (default 1)\n"
            "  --backend NAME       engine crypto backend (default auto)\n"
            "  --repeats R          repeats per measurement (default 7, quick 3)\n"
            "  --min-ms MS          minimum timed work per repeat (default 50, quick 10)\n"
            "  --burst B            packets per burst call (default 32)\n"
            "  --op OP              protect, unprotect or both (default both)\n"
            "  --no-baseline        engine only, no bare OpenSSL rows (for profiling)\n");
}

/* Splits a comma list in place; calls fn on each item. */
static int for_each_item(char *list, int (*fn)(struct opts *, const char *), struct opts *o)
{
    for (char *save = NULL, *it = strtok_r(list, ",", &save); it; it = strtok_r(NULL, ",", &save))
        if (fn(o, it) != 0)
            return -1;
    return 0;
}

static int add_suite(struct opts *o, const char *name)
{
    if (strcmp(name, "all") == 0) {
        for (unsigned i = 0; i < QUICOFF_SUITE_COUNT; i++)
            o->suites[i] = (quicoff_suite_t)i;
        o->nsuites = QUICOFF_SUITE_COUNT;
        return 0;
    }
    quicoff_suite_t s = quicoff_suite_from_name(name);
    if (s == QUICOFF_SUITE_COUNT || o->nsuites == QUICOFF_SUITE_COUNT) {
        fprintf(stderr, "unknown suite '%s'\n", name);
        return -1;
    }
    o->suites[o->nsuites++] = s;
    return 0;
}

static int add_size(struct opts *o, const char *v)
{
    char *end;
    if (o->nsizes == MAX_LIST)
        return -1;
    if (strcmp(v, "seed002") == 0 || strcmp(v, "88") == 0) {
        o->sizes[o->nsizes++] = seed002;
        return 0;
    }
    unsigned long n = strtoul(v, &end, 10);
    if (*end != '\0' || n == 0 || n > 16384) {
        fprintf(stderr, "bad size '%s' (1..16384, or seed002)\n", v);
        return -1;
    }
    o->sizes[o->nsizes++] = plain_size((unsigned)n);
    return 0;
}

static int add_conns(struct opts *o, const char *v)
{
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (*end != '\0' || n == 0 || n > 10000000 || o->nconns == MAX_LIST) {
        fprintf(stderr, "bad connection count '%s' (1..10000000)\n", v);
        return -1;
    }
    o->conns[o->nconns++] = (unsigned)n;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"quick", no_argument, 0, 'q'},          {"json", required_argument, 0, 'j'},
        {"suite", required_argument, 0, 's'},    {"size", required_argument, 0, 'z'},
        {"connections", required_argument, 0, 'c'}, {"backend", required_argument, 0, 'b'},
        {"repeats", required_argument, 0, 'r'},  {"min-ms", required_argument, 0, 'm'},
        {"burst", required_argument, 0, 'B'},    {"help", no_argument, 0, 'h'},
        {"op", required_argument, 0, 'o'},       {"no-baseline", no_argument, 0, 'N'},
        {0, 0, 0, 0},
    };
    int repeats = 0, c;
    double min_ms = 0;

    memset(o, 0, sizeof(*o));
    o->burst = 32;
    o->ops = 3;
    o->baseline = true;
    while ((c = getopt_long(argc, argv, "qj:s:z:c:b:r:m:B:ho:N", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (strcmp(optarg, "protect") == 0)
                o->ops = 1;
            else if (strcmp(optarg, "unprotect") == 0)
                o->ops = 2;
            else if (strcmp(optarg, "both") == 0)
                o->ops = 3;
            else {
                fprintf(stderr, "--op: protect, unprotect or both\n");
                return -1;
            }
            break;
        case 'N':
            o->baseline = false;
            break;
        case 'q':
            o->quick = true;
            break;
        case 'j':
            o->json_path = optarg;
            break;
        case 's':
            if (for_each_item(optarg, add_suite, o))
                return -1;
            break;
        case 'z':
            if (for_each_item(optarg, add_size, o))
                return -1;
            break;
        case 'c':
            if (for_each_item(optarg, add_conns, o))
                return -1;
            break;
        case 'b':
            o->backend = optarg;
            break;
        case 'r':
            repeats = atoi(optarg);
            if (repeats < 1 || repeats > 64) {
                fprintf(stderr, "--repeats: 1..64\n");
                return -1;
            }
            break;
        case 'm':
            min_ms = atof(optarg);
            if (!(min_ms > 0 && min_ms <= 60000)) {
                fprintf(stderr, "--min-ms: > 0\n");
                return -1;
            }
            break;
        case 'B':
            o->burst = (unsigned)atoi(optarg);
            if (o->burst < 1 || o->burst > 256) {
                fprintf(stderr, "--burst: 1..256\n");
                return -1;
            }
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return -1;
    }
    o->repeats = repeats ? (unsigned)repeats : (o->quick ? 3 : 7);
    o->min_ms = min_ms > 0 ? min_ms : (o->quick ? 10 : 50);
    if (o->nsuites == 0)
        add_suite(o, "all");
    if (o->nsizes == 0) {
        static const unsigned def[] = {64, 128, 256, 512, 1024, 1400};
        o->sizes[o->nsizes++] = seed002;
        for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
            o->sizes[o->nsizes++] = plain_size(def[i]);
    }
    if (o->nconns == 0)
        o->conns[o->nconns++] = 1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* bare OpenSSL EVP: the baseline                                            */

static EVP_CIPHER *aead_cipher[QUICOFF_SUITE_COUNT], *hp_cipher[QUICOFF_SUITE_COUNT];

static const char *const aead_names[QUICOFF_SUITE_COUNT] = {"AES-128-GCM", "AES-256-GCM",
                                                            "AES-128-CCM", "ChaCha20-Poly1305"};
static const char *const hp_names[QUICOFF_SUITE_COUNT] = {"AES-128-ECB", "AES-256-ECB",
                                                          "AES-128-ECB", "ChaCha20"};

static int fetch_ciphers(void)
{
    for (int i = 0; i < QUICOFF_SUITE_COUNT; i++) {
        aead_cipher[i] = EVP_CIPHER_fetch(NULL, aead_names[i], NULL);
        hp_cipher[i] = EVP_CIPHER_fetch(NULL, hp_names[i], NULL);
        if (!aead_cipher[i] || !hp_cipher[i]) {
            fprintf(stderr, "OpenSSL lacks %s or %s\n", aead_names[i], hp_names[i]);
            return -1;
        }
    }
    return 0;
}

static bool is_ccm(quicoff_suite_t s)
{
    return s == QUICOFF_AES_128_CCM;
}

/* An AEAD context keyed once for one direction (enc 1 seal, 0 open): some
 * providers fix the direction with the key (AES-CCM with AES-NI), so the
 * baseline keeps one context per direction, as the engine keeps one entry. */
static EVP_CIPHER_CTX *evp_aead_new(quicoff_suite_t s, const uint8_t *key, int enc)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c || !EVP_CipherInit_ex(c, aead_cipher[s], NULL, NULL, NULL, enc))
        goto fail;
    if (is_ccm(s) && (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, QUICOFF_IV_LEN, NULL) ||
                      !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, TAG_LEN, NULL)))
        goto fail;
    if (!EVP_CipherInit_ex(c, NULL, NULL, key, NULL, enc))
        goto fail;
    return c;
fail:
    EVP_CIPHER_CTX_free(c);
    return NULL;
}

static EVP_CIPHER_CTX *evp_hp_new(quicoff_suite_t s, const uint8_t *key)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c || !EVP_EncryptInit_ex(c, hp_cipher[s], NULL, key, NULL) ||
        !EVP_CIPHER_CTX_set_padding(c, 0)) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    return c;
}

/* The tag goes through OSSL_PARAM directly: on OpenSSL 3 this is what
 * EVP_CIPHER_CTX_ctrl(EVP_CTRL_AEAD_GET_TAG / SET_TAG) does underneath, minus
 * its translation layer (about 25 ns less per packet on OpenSSL 3.0), so the
 * baseline is the cheapest public-API sequence, not a handicapped one. */
static inline int evp_get_tag(EVP_CIPHER_CTX *c, uint8_t *tag)
{
    OSSL_PARAM p[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, TAG_LEN),
                       OSSL_PARAM_construct_end()};
    return EVP_CIPHER_CTX_get_params(c, p);
}

static inline int evp_set_tag(EVP_CIPHER_CTX *c, const uint8_t *tag)
{
    OSSL_PARAM p[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, (void *)tag, TAG_LEN),
        OSSL_PARAM_construct_end()};
    return EVP_CIPHER_CTX_set_params(c, p);
}

/* GCM, ChaCha20-Poly1305: IV, AAD, data, Final, tag. Returns 1 ok. */
static inline int evp_seal_stream(EVP_CIPHER_CTX *c, const uint8_t *nonce, const uint8_t *aad,
                                  int aad_len, uint8_t *data, int len, uint8_t *tag)
{
    uint8_t fin[TAG_LEN];
    int outl;
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 1) &&
           EVP_CipherUpdate(c, NULL, &outl, aad, aad_len) &&
           EVP_CipherUpdate(c, data, &outl, data, len) && EVP_CipherFinal_ex(c, fin, &outl) &&
           evp_get_tag(c, tag);
}

static inline int evp_open_stream(EVP_CIPHER_CTX *c, const uint8_t *nonce, const uint8_t *aad,
                                  int aad_len, uint8_t *data, int len, const uint8_t *tag)
{
    uint8_t fin[TAG_LEN];
    int outl;
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0) &&
           evp_set_tag(c, tag) &&
           EVP_CipherUpdate(c, NULL, &outl, aad, aad_len) &&
           EVP_CipherUpdate(c, data, &outl, data, len) && EVP_CipherFinal_ex(c, fin, &outl) == 1;
}

/* CCM: the message length first, then AAD, then the data in one call. */
static inline int evp_seal_ccm(EVP_CIPHER_CTX *c, const uint8_t *nonce, const uint8_t *aad,
                               int aad_len, uint8_t *data, int len, uint8_t *tag)
{
    uint8_t fin[TAG_LEN];
    int outl;
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 1) &&
           EVP_CipherUpdate(c, NULL, &outl, NULL, len) &&
           EVP_CipherUpdate(c, NULL, &outl, aad, aad_len) &&
           EVP_CipherUpdate(c, data, &outl, data, len) && EVP_CipherFinal_ex(c, fin, &outl) &&
           evp_get_tag(c, tag);
}

/* CCM decrypt in place; the data Update fails exactly when the tag does not verify. */
static inline int evp_open_ccm(EVP_CIPHER_CTX *c, const uint8_t *nonce, const uint8_t *aad,
                               int aad_len, uint8_t *data, int len, const uint8_t *tag)
{
    int outl;
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0) &&
           evp_set_tag(c, tag) &&
           EVP_CipherUpdate(c, NULL, &outl, NULL, len) &&
           EVP_CipherUpdate(c, NULL, &outl, aad, aad_len) &&
           EVP_CipherUpdate(c, data, &outl, data, len) > 0;
}

/* RFC 9001 §5.4.3 / §5.4.4: 5 mask bytes from the 16-byte sample. */
static inline int evp_hp_mask(EVP_CIPHER_CTX *c, bool chacha, const uint8_t *sample,
                              uint8_t mask[5])
{
    static const uint8_t zeros[5];
    uint8_t block[16];
    int outl;
    if (chacha)
        return EVP_CipherInit_ex(c, NULL, NULL, NULL, sample, 1) &&
               EVP_EncryptUpdate(c, mask, &outl, zeros, 5);
    if (!EVP_EncryptUpdate(c, block, &outl, sample, 16))
        return 0;
    memcpy(mask, block, 5);
    return 1;
}

/* ------------------------------------------------------------------------ */
/* a scenario: one suite, one packet size, N connections                     */

enum kind { K_ENG_PROTECT, K_EVP_SEAL, K_ENG_UNPROTECT, K_EVP_OPEN, K_HP_PROTECT, K_HP_UNPROTECT,
            K_COUNT };

struct scenario {
    quicoff_suite_t suite;
    struct size_cfg sz;
    unsigned n;          /* connections */
    unsigned burst;
    unsigned hdr_len, pkt_len, stride;
    unsigned W, P;       /* packets per pass, packets in the pool */
    struct quicoff_table *t;
    struct quicoff_worker *w;
    struct quicoff_packet_keys *keys; /* per connection */
    quicoff_conn_t *tx, *rx;
    uint32_t *tx_used;   /* packets protected since the last (re)key */
    uint64_t rekeys;
    uint32_t *conn_of;   /* pool packet -> connection */
    uint64_t *pn_of;
    uint8_t *nonce;      /* pool packet -> AEAD nonce (for the EVP baseline) */
    uint8_t *plain;      /* pristine plaintext packets */
    uint8_t *prot;       /* pristine protected packets (engine output) */
    uint8_t *evp_ct;     /* prot with the unmasked header: what bare EVP opens */
    uint8_t *work;       /* W packets, the timed pass works here */
    struct quicoff_pkt *pkts;
    struct quicoff_result *res;
    EVP_CIPHER_CTX **ectx, **dctx; /* per connection: seal, open */
    EVP_CIPHER_CTX *hpctx;
    unsigned win;        /* first pool packet of the current window */
    uint64_t pass;       /* passes so far (window position) */
    uint8_t sink;
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "out of memory (%zu x %zu bytes)\n", n, size);
        exit(1);
    }
    return p;
}

static uint8_t *xalloc_buf(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    memset(p, 0, bytes);
    return p;
}

static void scenario_free(struct scenario *s)
{
    if (s->w)
        quicoff_worker_destroy(s->w);
    if (s->t)
        quicoff_table_destroy(s->t);
    for (unsigned i = 0; i < s->n; i++) {
        if (s->ectx)
            EVP_CIPHER_CTX_free(s->ectx[i]);
        if (s->dctx)
            EVP_CIPHER_CTX_free(s->dctx[i]);
    }
    free(s->dctx);
    EVP_CIPHER_CTX_free(s->hpctx);
    free(s->ectx);
    free(s->keys);
    free(s->tx);
    free(s->rx);
    free(s->tx_used);
    free(s->conn_of);
    free(s->pn_of);
    free(s->nonce);
    free(s->plain);
    free(s->prot);
    free(s->evp_ct);
    free(s->work);
    free(s->pkts);
    free(s->res);
    memset(s, 0, sizeof(*s));
}

/* Writes one plaintext short-header packet: 0 1 0 0 0 K=0 P P | DCID | PN | payload | (tag room). */
static void build_packet(const struct scenario *s, uint8_t *p, const uint8_t *dcid, uint64_t pn,
                         uint64_t *rng)
{
    unsigned pl = s->sz.pn_len;
    p[0] = (uint8_t)(0x40 | (pl - 1));
    memcpy(p + 1, dcid, s->sz.dcid_len);
    for (unsigned i = 0; i < pl; i++)
        p[1 + s->sz.dcid_len + i] = (uint8_t)(pn >> (8 * (pl - 1 - i)));
    bench_fill(rng, p + s->hdr_len, s->sz.payload);
    memset(p + s->hdr_len + s->sz.payload, 0, TAG_LEN);
}

static void conn_dcid(const struct scenario *s, unsigned i, uint8_t *dcid)
{
    uint64_t st = UINT64_C(0xd1c1d) ^ ((uint64_t)i << 20);
    bench_fill(&st, dcid, s->sz.dcid_len);
    /* unique per connection whatever the random bytes say */
    for (unsigned k = 0; k < 4 && k < s->sz.dcid_len; k++)
        dcid[k] = (uint8_t)(i >> (8 * k));
}

static int scenario_build(struct scenario *s, quicoff_suite_t suite, const struct size_cfg *sz,
                          unsigned nconns, const struct opts *o)
{
    quicoff_status_t st;
    uint64_t rng = UINT64_C(0x5eed) ^ ((uint64_t)suite << 40) ^ ((uint64_t)sz->payload << 8);
    uint8_t dcid[QUICOFF_MAX_CID_LEN];

    memset(s, 0, sizeof(*s));
    s->suite = suite;
    s->sz = *sz;
    s->n = nconns;
    s->burst = o->burst;
    s->hdr_len = 1 + sz->dcid_len + sz->pn_len;
    s->pkt_len = s->hdr_len + sz->payload + TAG_LEN;
    s->stride = (s->pkt_len + 63) & ~63u; /* packets start on cache lines, like mbufs */
    s->W = o->burst * WINDOW_BURSTS;
    s->P = ((nconns > s->W ? nconns : s->W) + s->W - 1) / s->W * s->W;

    struct quicoff_table_config tc = {
        .capacity = 2 * nconns + 64,
        .local_cid_len = (uint8_t)sz->dcid_len,
        .max_workers = 4,
        .backend = o->backend,
    };
    s->t = quicoff_table_create(&tc, &st);
    if (!s->t) {
        fprintf(stderr, "quicoff_table_create: %s\n", quicoff_status_name(st));
        return -1;
    }
    s->w = quicoff_worker_create(s->t);
    if (!s->w) {
        fprintf(stderr, "quicoff_worker_create failed\n");
        return -1;
    }

    size_t klen = quicoff_suite_key_len(suite);
    s->keys = xcalloc(nconns, sizeof(*s->keys));
    s->tx = xcalloc(nconns, sizeof(*s->tx));
    s->rx = xcalloc(nconns, sizeof(*s->rx));
    s->tx_used = xcalloc(nconns, sizeof(*s->tx_used));
    s->ectx = xcalloc(nconns, sizeof(*s->ectx));
    s->dctx = xcalloc(nconns, sizeof(*s->dctx));
    for (unsigned i = 0; i < nconns; i++) {
        struct quicoff_conn_config cc;
        bench_fill(&rng, s->keys[i].key, klen);
        bench_fill(&rng, s->keys[i].iv, QUICOFF_IV_LEN);
        bench_fill(&rng, s->keys[i].hp, klen);
        conn_dcid(s, i, dcid);

        quicoff_conn_config_init(&cc);
        cc.suite = suite;
        cc.direction = QUICOFF_DIR_TX;
        memcpy(cc.dcid, dcid, sz->dcid_len);
        cc.dcid_len = (uint8_t)sz->dcid_len;
        cc.keys = s->keys[i];
        if ((st = quicoff_conn_add(s->t, &cc, &s->tx[i])) != QUICOFF_OK) {
            fprintf(stderr, "quicoff_conn_add(TX %u): %s\n", i, quicoff_status_name(st));
            return -1;
        }
        cc.direction = QUICOFF_DIR_RX;
        if ((st = quicoff_conn_add(s->t, &cc, &s->rx[i])) != QUICOFF_OK) {
            fprintf(stderr, "quicoff_conn_add(RX %u): %s\n", i, quicoff_status_name(st));
            return -1;
        }
        if (!(s->ectx[i] = evp_aead_new(suite, s->keys[i].key, 1)) ||
            !(s->dctx[i] = evp_aead_new(suite, s->keys[i].key, 0))) {
            fprintf(stderr, "EVP context setup failed\n");
            return -1;
        }
    }
    if (!(s->hpctx = evp_hp_new(suite, s->keys[0].hp))) {
        fprintf(stderr, "EVP header-protection context setup failed\n");
        return -1;
    }

    /* packet -> connection: a fixed random permutation, repeated over the pool */
    uint32_t *perm = xcalloc(nconns, sizeof(*perm));
    for (unsigned i = 0; i < nconns; i++)
        perm[i] = i;
    for (unsigned i = nconns; i > 1; i--) {
        unsigned k = (unsigned)(bench_rand(&rng) % i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[k];
        perm[k] = t;
    }
    s->conn_of = xcalloc(s->P, sizeof(*s->conn_of));
    s->pn_of = xcalloc(s->P, sizeof(*s->pn_of));
    s->nonce = xcalloc(s->P, QUICOFF_IV_LEN);
    s->plain = xalloc_buf((size_t)s->P * s->stride);
    s->prot = xalloc_buf((size_t)s->P * s->stride);
    s->evp_ct = xalloc_buf((size_t)s->P * s->stride);
    s->work = xalloc_buf((size_t)s->W * s->stride);
    s->pkts = xcalloc(s->W, sizeof(*s->pkts));
    s->res = xcalloc(s->W, sizeof(*s->res));
    for (unsigned j = 0; j < s->P; j++) {
        unsigned c = perm[j % nconns];
        uint64_t pn = 0x10000 + j; /* 4-byte encoding; RFC 9001 nonce = IV ^ PN */
        s->conn_of[j] = c;
        s->pn_of[j] = pn;
        conn_dcid(s, c, dcid);
        build_packet(s, s->plain + (size_t)j * s->stride, dcid, pn, &rng);
        uint8_t *nc = s->nonce + (size_t)j * QUICOFF_IV_LEN;
        memcpy(nc, s->keys[c].iv, QUICOFF_IV_LEN);
        for (int b = 0; b < 8; b++)
            nc[4 + b] ^= (uint8_t)(pn >> (56 - 8 * b));
    }
    free(perm);

    /* Pristine protected pool: the engine's own output. */
    memcpy(s->prot, s->plain, (size_t)s->P * s->stride);
    for (unsigned base = 0; base < s->P; base += s->W) {
        for (unsigned j = 0; j < s->W; j++) {
            unsigned g = base + j;
            s->pkts[j] = (struct quicoff_pkt){.data = s->prot + (size_t)g * s->stride,
                                              .len = s->pkt_len - TAG_LEN,
                                              .cap = s->stride,
                                              .conn = s->tx[s->conn_of[g]],
                                              .pn = s->pn_of[g]};
            s->tx_used[s->conn_of[g]]++;
        }
        unsigned okn = quicoff_protect_burst(s->w, s->pkts, s->res, s->W);
        if (okn != s->W) {
            fprintf(stderr, "setup protect: %u of %u ok (first status %s)\n", okn, s->W,
                    quicoff_status_name(s->res[0].status));
            return -1;
        }
    }
    memcpy(s->evp_ct, s->prot, (size_t)s->P * s->stride);
    for (unsigned j = 0; j < s->P; j++)
        memcpy(s->evp_ct + (size_t)j * s->stride, s->plain + (size_t)j * s->stride, s->hdr_len);

    /* Check once, untimed: the engine round-trips every pool packet, and the
     * bare EVP baseline computes exactly the ciphertext the engine produced
     * (so both do the same cryptographic work). */
    uint8_t *tmp = xalloc_buf((size_t)s->W * s->stride);
    for (unsigned base = 0; base < s->P; base += s->W) {
        memcpy(tmp, s->prot + (size_t)base * s->stride, (size_t)s->W * s->stride);
        for (unsigned j = 0; j < s->W; j++)
            s->pkts[j] = (struct quicoff_pkt){.data = tmp + (size_t)j * s->stride,
                                              .len = s->pkt_len, .cap = s->stride};
        unsigned okn = quicoff_unprotect_burst(s->w, s->pkts, s->res, s->W);
        bool same = okn == s->W;
        for (unsigned j = 0; same && j < s->W; j++)
            same = s->res[j].pn == s->pn_of[base + j] &&
                   s->res[j].payload_len == sz->payload &&
                   memcmp(tmp + (size_t)j * s->stride, s->plain + (size_t)(base + j) * s->stride,
                          s->hdr_len + sz->payload) == 0;
        if (!same) {
            fprintf(stderr, "setup check: unprotect did not round-trip (%u of %u ok, status %s)\n",
                    okn, s->W, quicoff_status_name(s->res[0].status));
            free(tmp);
            return -1;
        }
    }
    memcpy(tmp, s->plain, s->stride);
    unsigned c0 = s->conn_of[0];
    int r = is_ccm(suite) ? evp_seal_ccm(s->ectx[c0], s->nonce, tmp, (int)s->hdr_len,
                                         tmp + s->hdr_len, (int)sz->payload,
                                         tmp + s->hdr_len + sz->payload)
                          : evp_seal_stream(s->ectx[c0], s->nonce, tmp, (int)s->hdr_len,
                                            tmp + s->hdr_len, (int)sz->payload,
                                            tmp + s->hdr_len + sz->payload);
    if (!r || memcmp(tmp, s->evp_ct, s->pkt_len) != 0) {
        fprintf(stderr, "setup check: bare EVP output differs from the engine's\n");
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}

/* Same keys, installed again: the key's usage count starts from zero. */
static void rekey(struct scenario *s, unsigned c)
{
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_KEYS;
    u.key_generation = 0;
    u.keys = s->keys[c];
    quicoff_status_t st = quicoff_conn_update(s->t, s->tx[c], &u);
    if (st != QUICOFF_OK) {
        fprintf(stderr, "re-key: %s\n", quicoff_status_name(st));
        exit(1);
    }
    s->tx_used[c] = 0;
    s->rekeys++;
}

/* Untimed: bring the window back to its pristine state. */
static void restore(struct scenario *s, enum kind k)
{
    s->win = (unsigned)((s->pass++ * s->W) % s->P);
    const size_t bytes = (size_t)s->W * s->stride;
    const size_t from = (size_t)s->win * s->stride;
    switch (k) {
    case K_ENG_PROTECT:
        memcpy(s->work, s->plain + from, bytes);
        for (unsigned j = 0; j < s->W; j++) {
            unsigned g = s->win + j, c = s->conn_of[g];
            if (++s->tx_used[c] >= REKEY_AT)
                rekey(s, c);
            s->pkts[j] = (struct quicoff_pkt){.data = s->work + (size_t)j * s->stride,
                                              .len = s->pkt_len - TAG_LEN,
                                              .cap = s->stride,
                                              .conn = s->tx[c],
                                              .pn = s->pn_of[g]};
        }
        break;
    case K_ENG_UNPROTECT:
        memcpy(s->work, s->prot + from, bytes);
        for (unsigned j = 0; j < s->W; j++)
            s->pkts[j] = (struct quicoff_pkt){.data = s->work + (size_t)j * s->stride,
                                              .len = s->pkt_len, .cap = s->stride};
        break;
    case K_EVP_SEAL:
        memcpy(s->work, s->plain + from, bytes);
        break;
    case K_EVP_OPEN:
        memcpy(s->work, s->evp_ct + from, bytes);
        break;
    case K_HP_PROTECT:
    case K_HP_UNPROTECT:
        memcpy(s->work, s->prot + from, bytes); /* samples: protected payload bytes */
        break;
    default:
        break;
    }
}

/* Timed: returns how many packets succeeded. */
static unsigned run(struct scenario *s, enum kind k)
{
    unsigned okn = 0;
    const unsigned W = s->W, B = s->burst, hl = s->hdr_len, pl = s->sz.payload;
    switch (k) {
    case K_ENG_PROTECT:
        for (unsigned b = 0; b < W; b += B)
            okn += quicoff_protect_burst(s->w, s->pkts + b, s->res + b, B);
        break;
    case K_ENG_UNPROTECT:
        for (unsigned b = 0; b < W; b += B)
            okn += quicoff_unprotect_burst(s->w, s->pkts + b, s->res + b, B);
        break;
    case K_EVP_SEAL:
        for (unsigned j = 0; j < W; j++) {
            uint8_t *p = s->work + (size_t)j * s->stride;
            unsigned g = s->win + j;
            EVP_CIPHER_CTX *c = s->ectx[s->conn_of[g]];
            const uint8_t *nc = s->nonce + (size_t)g * QUICOFF_IV_LEN;
            okn += is_ccm(s->suite) ? evp_seal_ccm(c, nc, p, (int)hl, p + hl, (int)pl, p + hl + pl)
                                    : evp_seal_stream(c, nc, p, (int)hl, p + hl, (int)pl,
                                                      p + hl + pl);
        }
        break;
    case K_EVP_OPEN:
        for (unsigned j = 0; j < W; j++) {
            uint8_t *p = s->work + (size_t)j * s->stride;
            unsigned g = s->win + j;
            EVP_CIPHER_CTX *c = s->dctx[s->conn_of[g]];
            const uint8_t *nc = s->nonce + (size_t)g * QUICOFF_IV_LEN;
            okn += is_ccm(s->suite) ? evp_open_ccm(c, nc, p, (int)hl, p + hl, (int)pl, p + hl + pl)
                                    : evp_open_stream(c, nc, p, (int)hl, p + hl, (int)pl,
                                                      p + hl + pl);
        }
        break;
    case K_HP_PROTECT:
    case K_HP_UNPROTECT: {
        bool chacha = s->suite == QUICOFF_CHACHA20_POLY1305;
        uint8_t mask[5], acc = 0;
        for (unsigned j = 0; j < W; j++) {
            const uint8_t *p = s->work + (size_t)j * s->stride;
            okn += evp_hp_mask(s->hpctx, chacha, p + 1 + s->sz.dcid_len + 4, mask);
            acc ^= mask[0];
        }
        s->sink ^= acc;
        break;
    }
    default:
        break;
    }
    return okn;
}

/* ------------------------------------------------------------------------ */
/* measurement                                                               */

struct meas {
    double v[64];          /* ns/packet per repeat */
    double restore[64];    /* ns/packet of the (excluded) restore per repeat */
    unsigned n;
    uint64_t packets;      /* timed packets in all repeats */
    bool failed;
    bool skipped;          /* not measured (--no-baseline) */
    long csw;              /* involuntary context switches during the timed repeats */
    double med, min, max, restore_med;
};

/* One repeat of kind k: passes until >= target_ns of timed work. */
static int one_repeat(struct scenario *s, enum kind k, uint64_t target_ns, double *ns_per_pkt,
                      double *restore_per_pkt, uint64_t *packets)
{
    uint64_t timed = 0, restored = 0, pk = 0;
    do {
        uint64_t t0 = bench_now_ns();
        restore(s, k);
        uint64_t t1 = bench_now_ns();
        unsigned okn = run(s, k);
        uint64_t t2 = bench_now_ns();
        if (okn != s->W) {
            const char *why = (k == K_ENG_PROTECT || k == K_ENG_UNPROTECT)
                                  ? quicoff_status_name(s->res[0].status)
                                  : "EVP call failed";
            fprintf(stderr, "error: %u of %u packets failed (%s)\n", s->W - okn, s->W, why);
            return -1;
        }
        restored += t1 - t0;
        timed += t2 - t1;
        pk += s->W;
    } while (timed < target_ns);
    *ns_per_pkt = (double)timed / (double)pk;
    *restore_per_pkt = (double)restored / (double)pk;
    *packets += pk;
    return 0;
}

/* Measures kinds[0..nk) interleaved: warm-up, then repeat r of each kind in turn. */
static void measure(struct scenario *s, const enum kind *kinds, unsigned nk, const struct opts *o,
                    struct meas *m)
{
    uint64_t target = (uint64_t)(o->min_ms * 1e6);
    double ns, rs;
    uint64_t dummy = 0;

    for (unsigned i = 0; i < nk; i++) {
        memset(&m[i], 0, sizeof(m[i]));
        if (one_repeat(s, kinds[i], target / 2, &ns, &rs, &dummy) != 0)
            m[i].failed = true;
    }
    for (unsigned r = 0; r < o->repeats; r++)
        for (unsigned i = 0; i < nk; i++) {
            if (m[i].failed)
                continue;
            long c0 = bench_invol_csw();
            if (one_repeat(s, kinds[i], target, &m[i].v[r], &m[i].restore[r], &m[i].packets) != 0)
                m[i].failed = true;
            else
                m[i].n++;
            m[i].csw += bench_invol_csw() - c0;
        }
    for (unsigned i = 0; i < nk; i++) {
        double mx;
        bench_stats(m[i].v, m[i].n, &m[i].med, &m[i].min, &m[i].max);
        bench_stats(m[i].restore, m[i].n, &m[i].restore_med, &mx, &mx);
    }
}

/* ------------------------------------------------------------------------ */
/* output                                                                    */

static FILE *json;
static bool json_first = true;

static void json_record(const struct scenario *s, const struct opts *o, const char *path,
                        const char *backend, const char *op, const struct meas *m,
                        unsigned payload, double ratio, const char *extra)
{
    if (!json)
        return;
    double mpps = m->med > 0 ? 1e3 / m->med : 0, gbps = m->med > 0 ? payload * 8.0 / m->med : 0;
    fprintf(json,
            "%s    {\"path\": \"%s\", \"backend\": \"%s\", \"suite\": \"%s\", \"op\": \"%s\", "
            "\"label\": \"%s\", \"payload\": %u, \"packet_len\": %u, \"header_len\": %u, "
            "\"dcid_len\": %u, \"connections\": %u, \"threads\": 1, \"burst\": %u, "
            "\"repeats\": %u, \"min_ms_per_repeat\": %.1f, \"packets_timed\": %llu, "
            "\"ns_median\": %.3f, \"ns_min\": %.3f, \"ns_max\": %.3f, \"mpps\": %.4f, "
            "\"gbps\": %.4f, \"ratio_to_evp\": ",
            json_first ? "" : ",\n", path, backend, quicoff_suite_name(s->suite), op,
            s->sz.label, payload, s->pkt_len, s->hdr_len, s->sz.dcid_len, s->n,
            strcmp(path, "quicoff") == 0 ? s->burst : 1, m->n, o->min_ms,
            (unsigned long long)m->packets, m->med, m->min, m->max, mpps, gbps);
    if (ratio > 0)
        fprintf(json, "%.4f", ratio);
    else
        fprintf(json, "null");
    fprintf(json, ", \"restore_ns_excluded\": %.3f, \"ctx_switches\": %ld, \"ok\": %s%s}",
            m->restore_med, m->csw, m->failed ? "false" : "true", extra ? extra : "");
    json_first = false;
}

static void print_header(void)
{
    printf("%-17s %-10s %6s %7s %-9s | %17s %7s %7s | %17s %6s %6s | %7s %4s\n", "suite",
           "size", "pkt B", "conns", "op", "engine ns (min)", "Mpps", "Gbit/s",
           "bare EVP ns (min)", "ratio", "+ns", "restore", "csw");
}

static void print_row(const struct scenario *s, const char *op, const struct meas *e,
                      const struct meas *v)
{
    char a[32], b[32];
    if (e->failed)
        snprintf(a, sizeof(a), "FAILED");
    else
        snprintf(a, sizeof(a), "%.1f (%.1f)", e->med, e->min);
    if (v->skipped)
        snprintf(b, sizeof(b), "-");
    else if (v->failed)
        snprintf(b, sizeof(b), "FAILED");
    else
        snprintf(b, sizeof(b), "%.1f (%.1f)", v->med, v->min);
    bool okk = !e->failed && !v->failed && v->med > 0;
    printf("%-17s %-10s %6u %7u %-9s | %17s %7.2f %7.2f | %17s %6.2f %6.1f | %7.1f %4ld\n",
           quicoff_suite_name(s->suite), s->sz.label, s->pkt_len, s->n, op, a,
           e->med > 0 ? 1e3 / e->med : 0, e->med > 0 ? s->sz.payload * 8.0 / e->med : 0, b,
           okk ? e->med / v->med : 0, okk ? e->med - v->med : 0, e->restore_med,
           e->csw + (v->skipped ? 0 : v->csw));
    fflush(stdout);
}

static int run_scenario(quicoff_suite_t suite, const struct size_cfg *sz, unsigned nconns,
                        const struct opts *o, bool with_hp, int *failures)
{
    struct scenario s;
    struct meas m[K_COUNT], none;
    enum kind kinds[K_COUNT];
    unsigned nk = 0, idx[K_COUNT];
    const bool do_p = o->ops & 1, do_u = o->ops & 2, base = o->baseline;

    memset(&none, 0, sizeof(none));
    none.failed = none.skipped = true;
    uint64_t t0 = bench_now_ns();
    if (scenario_build(&s, suite, sz, nconns, o) != 0) {
        scenario_free(&s);
        (*failures)++;
        return -1;
    }
    double setup_s = (double)(bench_now_ns() - t0) / 1e9;
    if (nconns > 1000)
        printf("  (set-up of %u TX + %u RX connections, pools of %u packets: %.1f s)\n", nconns,
               nconns, s.P, setup_s);

    /* engine and baseline of one op interleaved repeat by repeat */
    if (do_p) {
        kinds[idx[K_ENG_PROTECT] = nk++] = K_ENG_PROTECT;
        if (base)
            kinds[idx[K_EVP_SEAL] = nk++] = K_EVP_SEAL;
    }
    if (do_u) {
        kinds[idx[K_ENG_UNPROTECT] = nk++] = K_ENG_UNPROTECT;
        if (base)
            kinds[idx[K_EVP_OPEN] = nk++] = K_EVP_OPEN;
    }
    measure(&s, kinds, nk, o, m);
    const char *be = quicoff_table_backend(s.t);
    for (int op = 0; op < 2; op++) {
        if (!(op == 0 ? do_p : do_u))
            continue;
        const char *name = op == 0 ? "protect" : "unprotect";
        const struct meas *e = &m[idx[op == 0 ? K_ENG_PROTECT : K_ENG_UNPROTECT]];
        const struct meas *v = base ? &m[idx[op == 0 ? K_EVP_SEAL : K_EVP_OPEN]] : &none;
        double ratio = (!e->failed && !v->failed && v->med > 0) ? e->med / v->med : 0;
        print_row(&s, name, e, v);
        json_record(&s, o, "quicoff", be, name, e, sz->payload, ratio, NULL);
        *failures += e->failed;
        if (base) {
            json_record(&s, o, "openssl-evp", "openssl", name, v, sz->payload, v->failed ? 0 : 1,
                        NULL);
            *failures += v->failed;
        }
    }

    if (with_hp && base) {
        static const enum kind hp_kinds[] = {K_HP_PROTECT, K_HP_UNPROTECT};
        char extra[96];
        struct meas *h = m + 4;
        measure(&s, hp_kinds, 2, o, h);
        printf("%-17s %-10s %6s %7u %-9s | %17s %7s %7s | %8.1f (%.1f) %13s | %7.1f %4ld\n",
               quicoff_suite_name(suite), "hp-mask", "-", 1u, hp_names[suite], "-", "", "",
               h[0].med, h[0].min, "", h[0].restore_med, h[0].csw);
        snprintf(extra, sizeof(extra), ", \"hp_cipher\": \"%s\", \"what\": \"hp-mask\"",
                 hp_names[suite]);
        /* one mask per packet on either side; measured separately for each op */
        unsigned saved_n = s.n;
        struct size_cfg saved_sz = s.sz;
        s.n = 1;
        snprintf(s.sz.label, sizeof(s.sz.label), "hp-mask");
        json_record(&s, o, "openssl-hp", "openssl", "protect", &h[0], QUICOFF_SAMPLE_LEN, 0,
                    extra);
        json_record(&s, o, "openssl-hp", "openssl", "unprotect", &h[1], QUICOFF_SAMPLE_LEN, 0,
                    extra);
        s.n = saved_n;
        s.sz = saved_sz;
        *failures += h[0].failed + h[1].failed;
    }
    if (s.rekeys)
        printf("  (%llu re-keys of TX connections outside the timer, to stay below the "
               "AEAD confidentiality limit)\n",
               (unsigned long long)s.rekeys);
    scenario_free(&s);
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o;
    char why[128], model[256], flags[256];

    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    int cpu = bench_pin_current_cpu(why, sizeof(why));
    if (fetch_ciphers() != 0)
        return 1;
    bench_cpu_info(model, sizeof(model), flags, sizeof(flags));
    double clk = bench_clock_cost_ns();
    const char *ia32 = getenv("OPENSSL_ia32cap");

    printf("quicoff-bench: QUIC packet protection, one core, 1-RTT short headers\n");
    printf("cpu:      %s\n", model);
    printf("flags:    %s  (! = absent)\n", flags);
    printf("openssl:  %s%s%s\n", OpenSSL_version(OPENSSL_VERSION), ia32 ? ", OPENSSL_ia32cap=" : "",
           ia32 ? ia32 : "");
    if (cpu >= 0)
        printf("pinning:  pinned to CPU %d (sched_setaffinity)\n", cpu);
    else
        printf("pinning:  NOT pinned (%s)\n", why);
    printf("method:   %u repeats of >= %.0f ms timed work per measurement; median (min) ns/packet.\n"
           "          Timer (CLOCK_MONOTONIC, %.1f ns per read) brackets only the burst calls of\n"
           "          one pass of %u packets (%u bursts of %u); before each pass the packets are\n"
           "          restored from a pristine copy OUTSIDE the timer ('restore' column: its\n"
           "          ns/packet, excluded, not subtracted). Packet data is therefore warm in cache.\n"
           "          Engine and bare-EVP repeats are interleaved. Packets: 1-byte first byte,\n"
           "          DCID (8 B; seed002 row 20 B), 4-byte PN, payload, 16-byte tag.\n"
           "          ratio = engine ns / bare EVP ns (same AEAD, same header length as AAD);\n"
           "          +ns = engine ns - bare EVP ns (header protection + parsing + lookup +\n"
           "          nonce + counters + backend glue). Mpps and Gbit/s (payload) from medians.\n"
           "          csw = involuntary context switches during the row's timed repeats (engine +\n"
           "          EVP); non-zero means another task shared the CPU: treat the row as noisy.\n",
           o.repeats, o.min_ms, clk, o.burst * WINDOW_BURSTS, WINDOW_BURSTS, o.burst);

    if (o.json_path) {
        json = fopen(o.json_path, "w");
        if (!json) {
            perror(o.json_path);
            return 1;
        }
        fprintf(json,
                "{\n  \"meta\": {\"tool\": \"quicoff-bench\", \"cpu\": \"%s\", \"flags\": \"%s\", "
                "\"openssl\": \"%s\", \"pinned_cpu\": %d, \"repeats\": %u, "
                "\"min_ms_per_repeat\": %.1f, \"burst\": %u, \"window_packets\": %u, "
                "\"clock_read_ns\": %.2f, \"quick\": %s},\n  \"records\": [\n",
                model, flags, OpenSSL_version(OPENSSL_VERSION), cpu, o.repeats, o.min_ms, o.burst,
                o.burst * WINDOW_BURSTS, clk, o.quick ? "true" : "false");
    }

    int failures = 0;
    long long steal0 = bench_steal_ticks();
    uint64_t t0 = bench_now_ns();
    printf("\n");
    print_header();
    for (unsigned si = 0; si < o.nsuites; si++) {
        bool hp_done = false;
        for (unsigned ci = 0; ci < o.nconns; ci++)
            for (unsigned zi = 0; zi < o.nsizes; zi++) {
                run_scenario(o.suites[si], &o.sizes[zi], o.conns[ci], &o, !hp_done, &failures);
                hp_done = true;
            }
    }
    long long steal1 = bench_steal_ticks();
    printf("\ntotal %.1f s; hypervisor steal during the run: %lld ticks (all CPUs)%s\n",
           (double)(bench_now_ns() - t0) / 1e9, steal0 >= 0 && steal1 >= 0 ? steal1 - steal0 : -1,
           failures ? "; SOME MEASUREMENTS FAILED" : "");

    if (json) {
        fprintf(json, "\n  ]\n}\n");
        fclose(json);
    }
    for (int i = 0; i < QUICOFF_SUITE_COUNT; i++) {
        EVP_CIPHER_free(aead_cipher[i]);
        EVP_CIPHER_free(hp_cipher[i]);
    }
    return failures ? 1 : 0;
}
