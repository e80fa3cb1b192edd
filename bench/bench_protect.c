/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-bench: per-core cost and multi-core throughput of QUIC packet
 * protection through the engine, next to the bare OpenSSL EVP cost of the
 * same cryptography.
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
 *                ChaCha20 with the sample as counter||nonce) with one context
 *                (one thread only).
 * The engine's overhead is engine ns / EVP ns, printed per row.
 *
 * Method (printed at the start of every run as well):
 *  - keys, the table and its connections are set up once per (suite, size,
 *    connections) and shared by every thread count; packets are built and
 *    protected once into a pristine pool and checked to round-trip;
 *  - a timed pass processes a window of W = 8 bursts (256 packets); before
 *    each pass the window is restored from the pristine pool OUTSIDE the
 *    timer (memcpy; its cost is timed separately and reported, never
 *    subtracted or added); the timer brackets only the burst calls;
 *  - a repeat is a wall-clock window of --min-ms; its value is timed ns /
 *    packets. R repeats (default 7), median and min reported; the engine and
 *    EVP measurements of one row are interleaved repeat by repeat so slow
 *    drift on a shared machine hits both alike;
 *  - --threads T: T threads measure at once, thread i pinned to the i-th
 *    allowed CPU, each with its own quicoff_worker and its own connections
 *    (c % T == i, as RSS-by-DCID steering would give; at least one each), all
 *    on ONE table. Every window starts at a barrier and ends at a deadline
 *    shared by all threads. ns/packet per core = per-thread median, averaged;
 *    Mpps = per repeat the sum of the threads' rates, median over repeats;
 *    scaling = that / the 1-thread Mpps of the same run (T = 1 always runs);
 *  - with N connections, packets go to connections in a fixed random
 *    permutation; the pool then holds >= N packets (unprotect: each
 *    connection has its own DCID), so every connection is touched in turn;
 *    --active A sends packets to A of them only (the rest live but idle);
 *    connections are installed in random order, so active ones are scattered.
 *
 * Usage: quicoff-bench [--quick] [--json FILE] [--suite NAME[,NAME..]]
 *        [--size N[,N..]] [--connections N[,N..]] [--threads T[,T..]]
 *        [--active A] [--backend NAME] [--repeats R] [--min-ms MS]
 *        [--burst B] [--op protect|unprotect] [--no-baseline]
 */
#include "bench_util.h"
#include "quicoff/quicoff.h"

#include <getopt.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#define TAG_LEN QUICOFF_TAG_LEN
#define WINDOW_BURSTS 8
#define MAX_LIST 16
#define MAX_THREADS 64
/* Re-key a TX connection (outside the timer) before it can reach the AEAD
 * confidentiality limit: RFC 9001 §6.6, 2^23 for AES-GCM, ~2^21.5 for CCM. */
#define REKEY_AT (UINT32_C(1) << 20)

static int cpus[MAX_THREADS]; /* CPUs the process may use; thread i -> cpus[i % ncpus] */
static unsigned ncpus;

/* ------------------------------------------------------------------------ */
/* options                                                                   */

struct size_cfg {
    char label[24];   /* "64", "short-88" */
    unsigned payload; /* plaintext bytes, tag excluded */
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
    unsigned ops;               /* bit 0 protect, bit 1 unprotect */
    bool baseline;              /* bare OpenSSL rows */
    unsigned threads[MAX_LIST]; /* ascending, unique, always starts with 1 */
    unsigned nthreads;
    unsigned active; /* packets go to this many of the N connections; 0 = all */
};

/* The FPGA prototype's benchmark packet (docs/glossary.md): a short header
 * with a 20-byte DCID, 88 bytes in all:
 * 1 (first byte) + 20 (DCID) + 4 (PN) + 47 (payload) + 16 (tag). */
static const struct size_cfg short_88 = {"short-88", 47, 20, 4};

static struct size_cfg plain_size(unsigned payload)
{
    struct size_cfg s = {"", payload, 8, 4}; /* 8-byte DCID, 4-byte PN */
    snprintf(s.label, sizeof(s.label), "%u", payload);
    return s;
}

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: quicoff-bench [options]\n"
        "  --quick              3 repeats of 10 ms windows (whole default run < 30 s)\n"
        "  --json FILE          write one record per measurement to FILE\n"
        "  --suite LIST         aes-128-gcm,aes-256-gcm,aes-128-ccm,chacha20-poly1305 (default all)\n"
        "  --size LIST          payload bytes, e.g. 64,1400; 88 or short-88 = the FPGA prototype's\n"
        "                       88-byte packet (20-byte DCID, 47-byte payload). Default:\n"
        "                       short-88,64,128,256,512,1024,1400\n"
        "  --connections LIST   spread packets over N connections, e.g. 1,100000 (default 1)\n"
        "  --threads LIST       worker threads measured at once, e.g. 1,2 (default 1); thread i\n"
        "                       is pinned to the i-th allowed CPU and owns connections\n"
        "                       c %% T == i; all share one table. 1 is always measured (the\n"
        "                       reference for 'scale')\n"
        "  --active A           traffic on A of the N live connections (scattered over the\n"
        "                       table), the rest idle: table size without the working set\n"
        "                       (default: all N active)\n"
        "  --backend NAME       engine crypto backend (default auto)\n"
        "  --repeats R          repeats per measurement (default 7, quick 3)\n"
        "  --min-ms MS          wall-clock window per repeat (default 50, quick 10)\n"
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
    if (strcmp(v, "short-88") == 0 || strcmp(v, "88") == 0) {
        o->sizes[o->nsizes++] = short_88;
        return 0;
    }
    unsigned long n = strtoul(v, &end, 10);
    if (*end != '\0' || n == 0 || n > 16384) {
        fprintf(stderr, "bad size '%s' (1..16384, or short-88)\n", v);
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

static int add_threads(struct opts *o, const char *v)
{
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    if (*end != '\0' || n == 0 || n > MAX_THREADS || o->nthreads == MAX_LIST) {
        fprintf(stderr, "bad thread count '%s' (1..%d)\n", v, MAX_THREADS);
        return -1;
    }
    for (unsigned i = 0; i < o->nthreads; i++)
        if (o->threads[i] == n)
            return 0;
    unsigned i = o->nthreads++; /* insertion: keep the list ascending */
    for (; i > 0 && o->threads[i - 1] > n; i--)
        o->threads[i] = o->threads[i - 1];
    o->threads[i] = (unsigned)n;
    return 0;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct option lo[] = {
        {"quick", no_argument, 0, 'q'},
        {"json", required_argument, 0, 'j'},
        {"suite", required_argument, 0, 's'},
        {"size", required_argument, 0, 'z'},
        {"connections", required_argument, 0, 'c'},
        {"backend", required_argument, 0, 'b'},
        {"repeats", required_argument, 0, 'r'},
        {"min-ms", required_argument, 0, 'm'},
        {"burst", required_argument, 0, 'B'},
        {"help", no_argument, 0, 'h'},
        {"op", required_argument, 0, 'o'},
        {"no-baseline", no_argument, 0, 'N'},
        {"threads", required_argument, 0, 'T'},
        {"active", required_argument, 0, 'A'},
        {0, 0, 0, 0},
    };
    int repeats = 0, c;
    double min_ms = 0;

    memset(o, 0, sizeof(*o));
    o->burst = 32;
    o->ops = 3;
    o->baseline = true;
    while ((c = getopt_long(argc, argv, "qj:s:z:c:b:r:m:B:ho:NT:A:", lo, NULL)) != -1) {
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
        case 'T':
            if (for_each_item(optarg, add_threads, o))
                return -1;
            break;
        case 'A': {
            char *end;
            unsigned long n = strtoul(optarg, &end, 10);
            if (*end != '\0' || n == 0 || n > 10000000) {
                fprintf(stderr, "--active: 1..10000000\n");
                return -1;
            }
            o->active = (unsigned)n;
            break;
        }
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
        o->sizes[o->nsizes++] = short_88;
        for (size_t i = 0; i < sizeof(def) / sizeof(def[0]); i++)
            o->sizes[o->nsizes++] = plain_size(def[i]);
    }
    if (o->nconns == 0)
        o->conns[o->nconns++] = 1;
    if (o->nthreads == 0 || o->threads[0] != 1) { /* 1 thread: the reference for scaling */
        if (o->nthreads == MAX_LIST)
            o->nthreads--;
        memmove(o->threads + 1, o->threads, o->nthreads * sizeof(o->threads[0]));
        o->threads[0] = 1;
        o->nthreads++;
    }
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
    OSSL_PARAM p[2] = {OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, (void *)tag,
                                                         TAG_LEN),
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
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0) && evp_set_tag(c, tag) &&
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
    return EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0) && evp_set_tag(c, tag) &&
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
/* a scenario: one suite, one packet size, N connections, one shared table   */

enum kind {
    K_ENG_PROTECT,
    K_EVP_SEAL,
    K_ENG_UNPROTECT,
    K_EVP_OPEN,
    K_HP_PROTECT,
    K_HP_UNPROTECT,
    K_COUNT
};

/* What every thread shares: the table, the connections, the packet pool. */
struct scenario {
    quicoff_suite_t suite;
    struct size_cfg sz;
    unsigned n;  /* connections asked for (--connections) */
    unsigned na; /* of which active (get packets): --active, or n */
    unsigned nt; /* connections in the table: max(n, largest T) */
    unsigned burst;
    bool baseline; /* bare EVP contexts were set up */
    unsigned hdr_len, pkt_len, stride;
    unsigned W, P; /* packets per pass, packets in the pool */
    struct quicoff_table *t;
    struct quicoff_packet_keys *keys; /* per connection */
    quicoff_conn_t *tx, *rx;
    uint32_t *tx_used; /* packets protected since the last (re)key; lanes copy in/out */
    uint64_t rekeys;
    uint32_t *conn_of; /* pool packet -> connection */
    uint64_t *pn_of;
    uint8_t *nonce;                /* pool packet -> AEAD nonce (for the EVP baseline) */
    uint8_t *plain;                /* pristine plaintext packets */
    uint8_t *prot;                 /* pristine protected packets (engine output); with the
                            plaintext header they are what bare EVP opens */
    EVP_CIPHER_CTX **ectx, **dctx; /* per connection: seal, open */
    void **spacer;                 /* keeps the EVP contexts of neighbouring connections
                            (owned by different threads) off shared cache lines */
    double setup_s;
    long rss_mib;
};

/* One thread's share of a scenario for one thread count T: connections
 * c < max(na, T) with c % T == id (local index c / T), its own worker, its own
 * packets (the pool packets of its connections, in pool order). */
struct run_ctl;
struct lane {
    struct scenario *s;
    struct run_ctl *ctl;
    unsigned id, T;
    int cpu;
    bool pinned;
    struct quicoff_worker *w;
    unsigned nconn;    /* connections it owns */
    uint32_t *tx_used; /* per local connection */
    uint64_t rekeys;
    unsigned P;    /* positions in its pool (a multiple of W) */
    uint32_t *pkt; /* position -> pool packet */
    uint8_t *work; /* W packets, the timed pass works here */
    struct quicoff_pkt *pkts;
    struct quicoff_result *res;
    EVP_CIPHER_CTX *hpctx;
    unsigned win; /* first position of the current window */
    uint64_t pass;
    uint8_t sink;
    struct meas {
        double v[64];       /* ns/packet per repeat */
        double restore[64]; /* ns/packet of the (excluded) restore per repeat */
        unsigned n;
        uint64_t packets; /* timed packets in all repeats */
        bool failed;
        long csw; /* involuntary context switches during the timed repeats */
        double med, min, max, restore_med;
    } m[K_COUNT];
} __attribute__((aligned(64)));

struct run_ctl {
    struct scenario *s;
    const struct opts *o;
    const enum kind *kinds;
    unsigned nk, T;
    pthread_barrier_t bar;
    _Atomic uint64_t deadline;
    struct lane **lanes;
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
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
    if (s->t)
        quicoff_table_destroy(s->t);
    for (unsigned i = 0; i < s->nt; i++) {
        if (s->ectx)
            EVP_CIPHER_CTX_free(s->ectx[i]);
        if (s->dctx)
            EVP_CIPHER_CTX_free(s->dctx[i]);
        if (s->spacer)
            free(s->spacer[i]);
    }
    free(s->ectx);
    free(s->dctx);
    free(s->spacer);
    free(s->keys);
    free(s->tx);
    free(s->rx);
    free(s->tx_used);
    free(s->conn_of);
    free(s->pn_of);
    free(s->nonce);
    free(s->plain);
    free(s->prot);
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
    unsigned max_t = o->threads[o->nthreads - 1];
    uint64_t t_start = bench_now_ns();

    memset(s, 0, sizeof(*s));
    s->suite = suite;
    s->sz = *sz;
    s->n = nconns;
    s->na = o->active && o->active < nconns ? o->active : nconns;
    s->nt = nconns > max_t ? nconns : max_t;           /* every thread owns at least one */
    const unsigned np = s->na > max_t ? s->na : max_t; /* connections the pool covers */
    s->burst = o->burst;
    s->baseline = o->baseline;
    s->hdr_len = 1 + sz->dcid_len + sz->pn_len;
    s->pkt_len = s->hdr_len + sz->payload + TAG_LEN;
    s->stride = (s->pkt_len + 63) & ~63u; /* packets start on cache lines, like mbufs */
    s->W = o->burst * WINDOW_BURSTS;
    s->P = ((np > s->W ? np : s->W) + s->W - 1) / s->W * s->W;
    const unsigned nt = s->nt;

    struct quicoff_table_config tc = {
        .capacity = 2 * nt + 64,
        .local_cid_len = (uint8_t)sz->dcid_len,
        .max_workers = (uint16_t)(max_t + 2),
        .backend = o->backend,
    };
    s->t = quicoff_table_create(&tc, &st);
    if (!s->t) {
        fprintf(stderr, "quicoff_table_create: %s\n", quicoff_status_name(st));
        return -1;
    }
    /* The set-up worker (this thread): protects and checks the pool, then goes
     * away before the measuring threads start. */
    struct quicoff_worker *w = quicoff_worker_create(s->t);
    if (!w) {
        fprintf(stderr, "quicoff_worker_create failed\n");
        return -1;
    }

    size_t klen = quicoff_suite_key_len(suite);
    s->keys = xcalloc(nt, sizeof(*s->keys));
    s->tx = xcalloc(nt, sizeof(*s->tx));
    s->rx = xcalloc(nt, sizeof(*s->rx));
    s->tx_used = xcalloc(nt, sizeof(*s->tx_used));
    if (s->baseline) {
        s->ectx = xcalloc(nt, sizeof(*s->ectx));
        s->dctx = xcalloc(nt, sizeof(*s->dctx));
        s->spacer = xcalloc(nt, sizeof(*s->spacer));
    }
    for (unsigned i = 0; i < nt; i++) {
        bench_fill(&rng, s->keys[i].key, klen);
        bench_fill(&rng, s->keys[i].iv, QUICOFF_IV_LEN);
        bench_fill(&rng, s->keys[i].hp, klen);
    }
    /* Installed in a random order, so that the slots, keysets and contexts of
     * the active connections (the first na) are scattered over the table as
     * in a real server, not packed at its start. */
    uint32_t *order = xcalloc(nt, sizeof(*order));
    for (unsigned i = 0; i < nt; i++)
        order[i] = i;
    for (unsigned i = nt; i > 1; i--) {
        unsigned k = (unsigned)(bench_rand(&rng) % i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[k];
        order[k] = t;
    }
    for (unsigned k = 0; k < nt; k++) {
        const unsigned i = order[k];
        struct quicoff_conn_config cc;
        conn_dcid(s, i, dcid);

        quicoff_conn_config_init(&cc);
        cc.suite = suite;
        cc.direction = QUICOFF_DIR_TX;
        memcpy(cc.dcid, dcid, sz->dcid_len);
        cc.dcid_len = (uint8_t)sz->dcid_len;
        cc.keys = s->keys[i];
        if ((st = quicoff_conn_add(s->t, &cc, &s->tx[i])) != QUICOFF_OK) {
            fprintf(stderr, "quicoff_conn_add(TX %u): %s\n", i, quicoff_status_name(st));
            free(order);
            goto fail;
        }
        cc.direction = QUICOFF_DIR_RX;
        if ((st = quicoff_conn_add(s->t, &cc, &s->rx[i])) != QUICOFF_OK) {
            fprintf(stderr, "quicoff_conn_add(RX %u): %s\n", i, quicoff_status_name(st));
            free(order);
            goto fail;
        }
        if (s->baseline) {
            if (!(s->ectx[i] = evp_aead_new(suite, s->keys[i].key, 1)) ||
                !(s->dctx[i] = evp_aead_new(suite, s->keys[i].key, 0))) {
                fprintf(stderr, "EVP context setup failed\n");
                free(order);
                goto fail;
            }
            if (k < 64)
                s->spacer[i] = xcalloc(1, 256);
        }
    }
    free(order);

    /* packet -> connection: a fixed random permutation, repeated over the pool */
    uint32_t *perm = xcalloc(np, sizeof(*perm));
    for (unsigned i = 0; i < np; i++)
        perm[i] = i;
    for (unsigned i = np; i > 1; i--) {
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
    for (unsigned j = 0; j < s->P; j++) {
        unsigned c = perm[j % np];
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
    struct quicoff_pkt *pkts = xcalloc(s->W, sizeof(*pkts));
    struct quicoff_result *res = xcalloc(s->W, sizeof(*res));
    memcpy(s->prot, s->plain, (size_t)s->P * s->stride);
    for (unsigned base = 0; base < s->P; base += s->W) {
        for (unsigned j = 0; j < s->W; j++) {
            unsigned g = base + j;
            pkts[j] = (struct quicoff_pkt){.data = s->prot + (size_t)g * s->stride,
                                           .end = s->pkt_len - TAG_LEN,
                                           .cap = s->stride,
                                           .conn = s->tx[s->conn_of[g]],
                                           .pn = s->pn_of[g]};
            s->tx_used[s->conn_of[g]]++;
        }
        unsigned okn = quicoff_protect_burst(w, pkts, res, s->W);
        if (okn != s->W) {
            fprintf(stderr, "setup protect: %u of %u ok (first status %s)\n", okn, s->W,
                    quicoff_status_name(res[0].status));
            goto fail_pkts;
        }
    }

    /* Check once, untimed: the engine round-trips every pool packet, and the
     * bare EVP baseline computes exactly the ciphertext the engine produced
     * (so both do the same cryptographic work). */
    uint8_t *tmp = xalloc_buf((size_t)s->W * s->stride);
    for (unsigned base = 0; base < s->P; base += s->W) {
        memcpy(tmp, s->prot + (size_t)base * s->stride, (size_t)s->W * s->stride);
        for (unsigned j = 0; j < s->W; j++)
            pkts[j] = (struct quicoff_pkt){.data = tmp + (size_t)j * s->stride,
                                           .end = s->pkt_len,
                                           .cap = s->stride};
        unsigned okn = quicoff_unprotect_burst(w, pkts, res, s->W);
        bool same = okn == s->W;
        for (unsigned j = 0; same && j < s->W; j++)
            same = res[j].pn == s->pn_of[base + j] && res[j].payload_len == sz->payload &&
                   res[j].conn == s->rx[s->conn_of[base + j]] &&
                   memcmp(tmp + (size_t)j * s->stride, s->plain + (size_t)(base + j) * s->stride,
                          s->hdr_len + sz->payload) == 0;
        if (!same) {
            fprintf(stderr, "setup check: unprotect did not round-trip (%u of %u ok, status %s)\n",
                    okn, s->W, quicoff_status_name(res[0].status));
            goto fail_tmp;
        }
    }
    if (s->baseline) {
        memcpy(tmp, s->plain, s->stride);
        unsigned c0 = s->conn_of[0];
        int r = is_ccm(suite)
                    ? evp_seal_ccm(s->ectx[c0], s->nonce, tmp, (int)s->hdr_len, tmp + s->hdr_len,
                                   (int)sz->payload, tmp + s->hdr_len + sz->payload)
                    : evp_seal_stream(s->ectx[c0], s->nonce, tmp, (int)s->hdr_len,
                                      tmp + s->hdr_len, (int)sz->payload,
                                      tmp + s->hdr_len + sz->payload);
        if (!r || memcmp(tmp, s->plain, s->hdr_len) != 0 ||
            memcmp(tmp + s->hdr_len, s->prot + s->hdr_len, s->pkt_len - s->hdr_len) != 0) {
            fprintf(stderr, "setup check: bare EVP output differs from the engine's\n");
            goto fail_tmp;
        }
    }
    free(tmp);
    free(pkts);
    free(res);
    quicoff_worker_destroy(w);
    s->setup_s = (double)(bench_now_ns() - t_start) / 1e9;
    s->rss_mib = bench_rss_mib();
    return 0;
fail_tmp:
    free(tmp);
fail_pkts:
    free(pkts);
    free(res);
fail:
    quicoff_worker_destroy(w);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* lanes: one per thread                                                     */

static void lane_free(struct lane *l)
{
    if (!l)
        return;
    free(l->tx_used);
    free(l->pkt);
    free(l->work);
    free(l->pkts);
    free(l->res);
    free(l);
}

static struct lane *lane_build(struct scenario *s, unsigned id, unsigned T)
{
    struct lane *l = aligned_alloc(64, (sizeof(*l) + 63) & ~(size_t)63);
    if (!l) {
        fprintf(stderr, "out of memory (lane)\n");
        exit(1);
    }
    memset(l, 0, sizeof(*l));
    l->s = s;
    l->id = id;
    l->T = T;
    const unsigned used = s->na > T ? s->na : T; /* connections in use at this T */
    l->nconn = (used - id + T - 1) / T;
    l->tx_used = xcalloc(l->nconn, sizeof(*l->tx_used));
    for (unsigned k = 0; k < l->nconn; k++)
        l->tx_used[k] = s->tx_used[id + k * T];

    /* its pool: the pool packets of its connections, in pool order, repeated
     * up to a multiple of W (the pool covers every connection at least once) */
    unsigned cnt = 0;
    for (unsigned j = 0; j < s->P; j++)
        cnt += s->conn_of[j] < used && s->conn_of[j] % T == id;
    l->P = ((cnt > s->W ? cnt : s->W) + s->W - 1) / s->W * s->W;
    l->pkt = xcalloc(l->P, sizeof(*l->pkt));
    unsigned k = 0;
    for (unsigned j = 0; j < s->P; j++)
        if (s->conn_of[j] < used && s->conn_of[j] % T == id)
            l->pkt[k++] = j;
    for (; k < l->P; k++)
        l->pkt[k] = l->pkt[k - cnt];
    l->work = xalloc_buf((size_t)s->W * s->stride);
    l->pkts = xcalloc(s->W, sizeof(*l->pkts));
    l->res = xcalloc(s->W, sizeof(*l->res));
    return l;
}

/* Back on the main thread after the run: key usage and re-key counts. */
static void lane_sync(struct lane *l)
{
    for (unsigned k = 0; k < l->nconn; k++)
        l->s->tx_used[l->id + k * l->T] = l->tx_used[k];
    l->s->rekeys += l->rekeys;
    l->rekeys = 0;
}

/* Same keys, installed again: the key's usage count starts from zero. A
 * control call: serialised on the table mutex, fine from any thread. */
static void rekey(struct lane *l, unsigned c, unsigned lc)
{
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_KEYS;
    u.key_generation = 0;
    u.keys = l->s->keys[c];
    quicoff_status_t st = quicoff_conn_update(l->s->t, l->s->tx[c], &u);
    if (st != QUICOFF_OK) {
        fprintf(stderr, "re-key: %s\n", quicoff_status_name(st));
        exit(1);
    }
    l->tx_used[lc] = 0;
    l->rekeys++;
}

/* Untimed: bring the window back to its pristine state. */
static void restore(struct lane *l, enum kind k)
{
    const struct scenario *s = l->s;
    const unsigned W = s->W, stride = s->stride, len = s->pkt_len;
    l->win = (unsigned)((l->pass++ * W) % l->P);
    for (unsigned j = 0; j < W; j++) {
        const unsigned g = l->pkt[l->win + j];
        uint8_t *dst = l->work + (size_t)j * stride;
        const uint8_t *plain = s->plain + (size_t)g * stride, *prot = s->prot + (size_t)g * stride;
        switch (k) {
        case K_ENG_PROTECT: {
            const unsigned c = s->conn_of[g], lc = c / l->T;
            memcpy(dst, plain, len);
            if (++l->tx_used[lc] >= REKEY_AT)
                rekey(l, c, lc);
            l->pkts[j] = (struct quicoff_pkt){.data = dst,
                                              .end = len - TAG_LEN,
                                              .cap = stride,
                                              .conn = s->tx[c],
                                              .pn = s->pn_of[g]};
            break;
        }
        case K_ENG_UNPROTECT:
            memcpy(dst, prot, len);
            l->pkts[j] = (struct quicoff_pkt){.data = dst, .end = len, .cap = stride};
            break;
        case K_EVP_SEAL:
            memcpy(dst, plain, len);
            break;
        case K_EVP_OPEN: /* the engine's ciphertext under the unmasked header */
            memcpy(dst, prot, len);
            memcpy(dst, plain, s->hdr_len);
            break;
        case K_HP_PROTECT:
        case K_HP_UNPROTECT:
            memcpy(dst, prot, len); /* samples: protected payload bytes */
            break;
        default:
            break;
        }
    }
}

/* Timed: returns how many packets succeeded. */
static unsigned run(struct lane *l, enum kind k)
{
    const struct scenario *s = l->s;
    unsigned okn = 0;
    const unsigned W = s->W, B = s->burst, hl = s->hdr_len, pl = s->sz.payload;
    switch (k) {
    case K_ENG_PROTECT:
        for (unsigned b = 0; b < W; b += B)
            okn += quicoff_protect_burst(l->w, l->pkts + b, l->res + b, B);
        break;
    case K_ENG_UNPROTECT:
        for (unsigned b = 0; b < W; b += B)
            okn += quicoff_unprotect_burst(l->w, l->pkts + b, l->res + b, B);
        break;
    case K_EVP_SEAL:
        for (unsigned j = 0; j < W; j++) {
            uint8_t *p = l->work + (size_t)j * s->stride;
            unsigned g = l->pkt[l->win + j];
            EVP_CIPHER_CTX *c = s->ectx[s->conn_of[g]];
            const uint8_t *nc = s->nonce + (size_t)g * QUICOFF_IV_LEN;
            okn += is_ccm(s->suite)
                       ? evp_seal_ccm(c, nc, p, (int)hl, p + hl, (int)pl, p + hl + pl)
                       : evp_seal_stream(c, nc, p, (int)hl, p + hl, (int)pl, p + hl + pl);
        }
        break;
    case K_EVP_OPEN:
        for (unsigned j = 0; j < W; j++) {
            uint8_t *p = l->work + (size_t)j * s->stride;
            unsigned g = l->pkt[l->win + j];
            EVP_CIPHER_CTX *c = s->dctx[s->conn_of[g]];
            const uint8_t *nc = s->nonce + (size_t)g * QUICOFF_IV_LEN;
            okn += is_ccm(s->suite)
                       ? evp_open_ccm(c, nc, p, (int)hl, p + hl, (int)pl, p + hl + pl)
                       : evp_open_stream(c, nc, p, (int)hl, p + hl, (int)pl, p + hl + pl);
        }
        break;
    case K_HP_PROTECT:
    case K_HP_UNPROTECT: {
        bool chacha = s->suite == QUICOFF_CHACHA20_POLY1305;
        uint8_t mask[5], acc = 0;
        for (unsigned j = 0; j < W; j++) {
            const uint8_t *p = l->work + (size_t)j * s->stride;
            okn += evp_hp_mask(l->hpctx, chacha, p + 1 + s->sz.dcid_len + 4, mask);
            acc ^= mask[0];
        }
        l->sink ^= acc;
        break;
    }
    default:
        break;
    }
    return okn;
}

/* ------------------------------------------------------------------------ */
/* measurement                                                               */

/* One window of kind k: passes until the shared deadline (at least one). */
static int one_window(struct lane *l, enum kind k, uint64_t deadline, double *ns_per_pkt,
                      double *restore_per_pkt, uint64_t *packets)
{
    const unsigned W = l->s->W;
    uint64_t timed = 0, restored = 0, pk = 0, t2;
    do {
        uint64_t t0 = bench_now_ns();
        restore(l, k);
        uint64_t t1 = bench_now_ns();
        unsigned okn = run(l, k);
        t2 = bench_now_ns();
        if (okn != W) {
            const char *why = (k == K_ENG_PROTECT || k == K_ENG_UNPROTECT)
                                  ? quicoff_status_name(l->res[0].status)
                                  : "EVP call failed";
            fprintf(stderr, "error: thread %u: %u of %u packets failed (%s)\n", l->id, W - okn, W,
                    why);
            return -1;
        }
        restored += t1 - t0;
        timed += t2 - t1;
        pk += W;
    } while (t2 < deadline);
    *ns_per_pkt = (double)timed / (double)pk;
    *restore_per_pkt = (double)restored / (double)pk;
    *packets += pk;
    return 0;
}

/* Every thread calls this for every window, failed or not (the barrier
 * counts them all): the threads start together and share one deadline. */
static void window(struct lane *l, unsigned i, uint64_t dur, bool record)
{
    struct run_ctl *ctl = l->ctl;
    struct meas *m = &l->m[i];
    double ns, rs;
    uint64_t dummy = 0;

    if (pthread_barrier_wait(&ctl->bar) == PTHREAD_BARRIER_SERIAL_THREAD)
        atomic_store(&ctl->deadline, bench_now_ns() + dur);
    pthread_barrier_wait(&ctl->bar);
    const uint64_t deadline = atomic_load(&ctl->deadline);
    if (m->failed)
        return;
    long c0 = bench_invol_csw();
    if (!record) {
        if (one_window(l, ctl->kinds[i], deadline, &ns, &rs, &dummy) != 0)
            m->failed = true;
        return;
    }
    if (one_window(l, ctl->kinds[i], deadline, &m->v[m->n], &m->restore[m->n], &m->packets) != 0)
        m->failed = true;
    else
        m->n++;
    m->csw += bench_invol_csw() - c0;
}

static void *lane_main(void *arg)
{
    struct lane *l = arg;
    struct run_ctl *ctl = l->ctl;
    const struct scenario *s = l->s;
    const uint64_t target = (uint64_t)(ctl->o->min_ms * 1e6);
    char why[128];
    bool ok;

    l->pinned = l->cpu >= 0 && bench_pin_cpu(l->cpu, why, sizeof(why)) == 0;
    l->w = quicoff_worker_create(s->t);
    ok = l->w != NULL;
    for (unsigned i = 0; i < ctl->nk; i++)
        if (ctl->kinds[i] == K_HP_PROTECT || ctl->kinds[i] == K_HP_UNPROTECT) {
            if (!l->hpctx)
                l->hpctx = evp_hp_new(s->suite, s->keys[l->id].hp);
            ok = ok && l->hpctx;
        }
    if (!ok) {
        fprintf(stderr, "error: thread %u: worker or EVP context set-up failed\n", l->id);
        for (unsigned i = 0; i < ctl->nk; i++)
            l->m[i].failed = true;
    }
    /* warm-up, then repeat r of each kind in turn (interleaved) */
    for (unsigned i = 0; i < ctl->nk; i++)
        window(l, i, target / 2, false);
    for (unsigned r = 0; r < ctl->o->repeats; r++)
        for (unsigned i = 0; i < ctl->nk; i++)
            window(l, i, target, true);
    for (unsigned i = 0; i < ctl->nk; i++) {
        double mx;
        struct meas *m = &l->m[i];
        bench_stats(m->v, m->n, &m->med, &m->min, &m->max);
        bench_stats(m->restore, m->n, &m->restore_med, &mx, &mx);
    }
    quicoff_worker_destroy(l->w);
    l->w = NULL;
    EVP_CIPHER_CTX_free(l->hpctx);
    l->hpctx = NULL;
    return NULL;
}

/* Measures kinds[0..nk) on T threads at once; results in lanes[t]->m[i]. */
static int run_threads(struct scenario *s, struct lane **lanes, unsigned T, const enum kind *kinds,
                       unsigned nk, const struct opts *o)
{
    struct run_ctl ctl = {.s = s, .o = o, .kinds = kinds, .nk = nk, .T = T, .lanes = lanes};
    pthread_t tid[MAX_THREADS];
    unsigned started = 0;

    if (pthread_barrier_init(&ctl.bar, NULL, T) != 0)
        return -1;
    for (unsigned t = 0; t < T; t++) {
        lanes[t]->ctl = &ctl;
        memset(lanes[t]->m, 0, sizeof(lanes[t]->m));
    }
    for (unsigned t = 0; t < T; t++) {
        int e = pthread_create(&tid[t], NULL, lane_main, lanes[t]);
        if (e != 0) {
            /* the barrier would never open: nothing started can finish */
            fprintf(stderr, "pthread_create: %s\n", strerror(e));
            exit(1);
        }
        started++;
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&ctl.bar);
    for (unsigned t = 0; t < T; t++)
        lanes[t]->ctl = NULL;
    return 0;
}

/* One measurement over T threads. */
struct agg {
    unsigned T, n;
    bool failed, skipped;
    uint64_t packets;
    long csw;
    double ns, min, max; /* per core: per-thread median (min, max) over repeats, averaged */
    double mpps;         /* aggregate: per repeat the sum over threads, median over repeats */
    double restore;
    double lane_ns[MAX_THREADS];
    int cpu[MAX_THREADS];
};

static void aggregate(struct lane *const *lanes, unsigned T, unsigned i, struct agg *a)
{
    double sum[64];

    memset(a, 0, sizeof(*a));
    a->T = T;
    a->n = 64;
    for (unsigned t = 0; t < T; t++) {
        const struct meas *m = &lanes[t]->m[i];
        a->failed |= m->failed;
        a->n = m->n < a->n ? m->n : a->n;
        a->packets += m->packets;
        a->csw += m->csw;
        a->ns += m->med / T;
        a->min += m->min / T;
        a->max += m->max / T;
        a->restore += m->restore_med / T;
        a->lane_ns[t] = m->med;
        a->cpu[t] = lanes[t]->pinned ? lanes[t]->cpu : -1;
    }
    if (a->failed || a->n == 0) {
        a->failed = true;
        return;
    }
    if (T == 1) {
        a->mpps = 1e3 / a->ns;
        return;
    }
    for (unsigned r = 0; r < a->n; r++) {
        sum[r] = 0;
        for (unsigned t = 0; t < T; t++)
            sum[r] += 1e3 / lanes[t]->m[i].v[r];
    }
    double mn, mx;
    bench_stats(sum, a->n, &a->mpps, &mn, &mx);
}

/* ------------------------------------------------------------------------ */
/* output                                                                    */

static FILE *json;
static bool json_first = true;

static void json_record(const struct scenario *s, const struct opts *o, const char *path,
                        const char *backend, const char *op, const struct agg *a, unsigned payload,
                        double ratio, double scaling, const char *extra)
{
    if (!json)
        return;
    const unsigned T = a->T, used = s->na > T ? s->na : T;
    double mpps = a->failed ? 0 : a->mpps, gbps = mpps * payload * 8.0 / 1e3;
    fprintf(json,
            "%s    {\"path\": \"%s\", \"backend\": \"%s\", \"suite\": \"%s\", \"op\": \"%s\", "
            "\"label\": \"%s\", \"payload\": %u, \"packet_len\": %u, \"header_len\": %u, "
            "\"dcid_len\": %u, \"connections\": %u, \"threads\": %u, \"burst\": %u, "
            "\"repeats\": %u, \"min_ms_per_repeat\": %.1f, \"packets_timed\": %llu, "
            "\"ns_median\": %.3f, \"ns_min\": %.3f, \"ns_max\": %.3f, \"mpps\": %.4f, "
            "\"gbps\": %.4f, \"ratio_to_evp\": ",
            json_first ? "" : ",\n", path, backend, quicoff_suite_name(s->suite), op, s->sz.label,
            payload, s->pkt_len, s->hdr_len, s->sz.dcid_len, s->n, T,
            strcmp(path, "quicoff") == 0 ? s->burst : 1, a->n, o->min_ms,
            (unsigned long long)a->packets, a->ns, a->min, a->max, mpps, gbps);
    if (ratio > 0)
        fprintf(json, "%.4f", ratio);
    else
        fprintf(json, "null");
    fprintf(json, ", \"restore_ns_excluded\": %.3f, \"ctx_switches\": %ld, \"ok\": %s", a->restore,
            a->csw, a->failed ? "false" : "true");
    if (T > 1) {
        fprintf(json, ", \"scaling\": ");
        if (scaling > 0)
            fprintf(json, "%.4f", scaling);
        else
            fprintf(json, "null");
    }
    fprintf(json,
            ", \"active_connections\": %u, \"connections_per_thread\": %u, "
            "\"table_connections\": %u, \"cpus\": [",
            s->na, (used + T - 1) / T, s->nt);
    for (unsigned t = 0; t < T; t++)
        fprintf(json, "%s%d", t ? ", " : "", a->cpu[t]);
    fprintf(json, "], \"ns_per_thread\": [");
    for (unsigned t = 0; t < T; t++)
        fprintf(json, "%s%.3f", t ? ", " : "", a->lane_ns[t]);
    fprintf(json, "], \"setup_s\": %.2f, \"rss_mib\": %ld%s}", s->setup_s, s->rss_mib,
            extra ? extra : "");
    json_first = false;
}

static void print_header(void)
{
    printf("%-17s %-10s %6s %9s %3s %-9s | %17s %7s %7s %5s | %17s %5s %5s %6s | %7s %4s\n",
           "suite", "size", "pkt B", "conns", "thr", "op", "engine ns (min)", "Mpps", "Gbit/s",
           "scale", "bare EVP ns (min)", "scale", "ratio", "+ns", "restore", "csw");
}

static void fmt_ns(char *buf, size_t n, const struct agg *a)
{
    if (a->skipped)
        snprintf(buf, n, "-");
    else if (a->failed)
        snprintf(buf, n, "FAILED");
    else
        snprintf(buf, n, "%.1f (%.1f)", a->ns, a->min);
}

static void fmt_scale(char *buf, size_t n, double scale)
{
    if (scale > 0)
        snprintf(buf, n, "%.2fx", scale);
    else
        snprintf(buf, n, "-");
}

static void print_row(const struct scenario *s, const char *op, const struct agg *e,
                      const struct agg *v, double e_scale, double v_scale)
{
    char a[32], b[32], es[16], vs[16], cn[32];
    if (s->na < s->n)
        snprintf(cn, sizeof(cn), "%u/%u", s->na, s->n);
    else
        snprintf(cn, sizeof(cn), "%u", s->n);
    fmt_ns(a, sizeof(a), e);
    fmt_ns(b, sizeof(b), v);
    fmt_scale(es, sizeof(es), e_scale);
    fmt_scale(vs, sizeof(vs), v_scale);
    bool okk = !e->failed && !v->failed && !v->skipped && v->ns > 0;
    double mpps = e->failed ? 0 : e->mpps;
    printf("%-17s %-10s %6u %9s %3u %-9s | %17s %7.2f %7.2f %5s | %17s %5s %5.2f %6.1f | %7.1f "
           "%4ld\n",
           quicoff_suite_name(s->suite), s->sz.label, s->pkt_len, cn, e->T, op, a, mpps,
           mpps * s->sz.payload * 8.0 / 1e3, es, b, vs, okk ? e->ns / v->ns : 0,
           okk ? e->ns - v->ns : 0, e->restore, e->csw + (v->skipped ? 0 : v->csw));
    if (e->T > 1) {
        printf("%45s per thread ns (CPU):", "");
        for (unsigned t = 0; t < e->T; t++)
            printf(" %.1f (%d)", e->lane_ns[t], e->cpu[t]);
        if (!v->skipped) {
            printf(";  bare EVP:");
            for (unsigned t = 0; t < v->T; t++)
                printf(" %.1f", v->lane_ns[t]);
        }
        printf("\n");
    }
    fflush(stdout);
}

static int run_scenario(quicoff_suite_t suite, const struct size_cfg *sz, unsigned nconns,
                        const struct opts *o, bool with_hp, int *failures)
{
    struct scenario s;
    struct agg none, ag[K_COUNT];
    enum kind kinds[K_COUNT];
    unsigned nk = 0, idx[K_COUNT];
    double mpps1[K_COUNT] = {0}; /* the 1-thread figures of this run, for 'scale' */
    const bool do_p = o->ops & 1, do_u = o->ops & 2, base = o->baseline;

    memset(&none, 0, sizeof(none));
    none.failed = none.skipped = true;
    if (scenario_build(&s, suite, sz, nconns, o) != 0) {
        scenario_free(&s);
        (*failures)++;
        return -1;
    }
    if (s.nt > 1000)
        printf("  (set-up of %u TX + %u RX connections%s, pool of %u packets, checked: %.1f s; "
               "RSS %ld MiB)\n",
               s.nt, s.nt, base ? " + bare EVP contexts" : "", s.P, s.setup_s, s.rss_mib);
    if (s.na < s.n)
        printf("  (%u of the %u connections get packets; the others are live but idle)\n", s.na,
               s.n);

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
    const char *be = quicoff_table_backend(s.t);
    /* AES-128-CCM on ipsec-mb: where bursts switch to the job API is chosen
     * per CPU (calibrated when the first key was set up): shown with the rows */
    char ccm_extra[160] = "";
    if (suite == QUICOFF_AES_128_CCM && strcmp(be, "ipsec-mb") == 0) {
        const char *how = "?";
        size_t x = quicoff_ccm_job_min_len(s.burst, &how);
        printf("  (ipsec-mb AES-128-CCM: the job API from %zu B of payload in bursts of %u; "
               "4+/8+/16+/32+ jobs: %zu/%zu/%zu/%zu B; %s)\n",
               x, s.burst, quicoff_ccm_job_min_len(4, NULL), quicoff_ccm_job_min_len(8, NULL),
               quicoff_ccm_job_min_len(16, NULL), quicoff_ccm_job_min_len(32, NULL), how);
        snprintf(ccm_extra, sizeof(ccm_extra),
                 ", \"ccm_job_min_len\": %zu, \"ccm_job_min_len_how\": \"%s\", "
                 "\"ccm_job_min_len_tiers\": [%zu, %zu, %zu, %zu]",
                 x, how, quicoff_ccm_job_min_len(4, NULL), quicoff_ccm_job_min_len(8, NULL),
                 quicoff_ccm_job_min_len(16, NULL), quicoff_ccm_job_min_len(32, NULL));
    }
    for (unsigned ti = 0; ti < o->nthreads; ti++) {
        const unsigned T = o->threads[ti];
        struct lane *lanes[MAX_THREADS];
        for (unsigned t = 0; t < T; t++) {
            lanes[t] = lane_build(&s, t, T);
            lanes[t]->cpu = ncpus ? cpus[t % ncpus] : -1;
        }
        run_threads(&s, lanes, T, kinds, nk, o);
        for (unsigned i = 0; i < nk; i++) {
            aggregate(lanes, T, i, &ag[kinds[i]]);
            if (T == 1 && !ag[kinds[i]].failed)
                mpps1[kinds[i]] = ag[kinds[i]].mpps;
        }
        for (int op = 0; op < 2; op++) {
            if (!(op == 0 ? do_p : do_u))
                continue;
            const char *name = op == 0 ? "protect" : "unprotect";
            const enum kind ke = op == 0 ? K_ENG_PROTECT : K_ENG_UNPROTECT;
            const enum kind kv = op == 0 ? K_EVP_SEAL : K_EVP_OPEN;
            const struct agg *e = &ag[ke];
            const struct agg *v = base ? &ag[kv] : &none;
            double ratio = (!e->failed && !v->failed && v->ns > 0) ? e->ns / v->ns : 0;
            double es = (T > 1 && !e->failed && mpps1[ke] > 0) ? e->mpps / mpps1[ke] : 0;
            double vs = (T > 1 && base && !v->failed && mpps1[kv] > 0) ? v->mpps / mpps1[kv] : 0;
            print_row(&s, name, e, v, es, vs);
            json_record(&s, o, "quicoff", be, name, e, sz->payload, ratio, es, ccm_extra);
            *failures += e->failed;
            if (base) {
                json_record(&s, o, "openssl-evp", "openssl", name, v, sz->payload,
                            v->failed ? 0 : 1, vs, NULL);
                *failures += v->failed;
            }
        }

        if (T == 1 && with_hp && base) { /* the bare mask: one thread, one context */
            static const enum kind hp_kinds[] = {K_HP_PROTECT, K_HP_UNPROTECT};
            char extra[96];
            struct agg h[2];
            run_threads(&s, lanes, 1, hp_kinds, 2, o);
            aggregate(lanes, 1, 0, &h[0]);
            aggregate(lanes, 1, 1, &h[1]);
            printf("%-17s %-10s %6s %9u %3u %-9s | %17s %7s %7s %5s | %8.1f (%.1f) %19s | %7.1f "
                   "%4ld\n",
                   quicoff_suite_name(suite), "hp-mask", "-", 1u, 1u, hp_names[suite], "-", "", "",
                   "", h[0].ns, h[0].min, "", h[0].restore, h[0].csw);
            snprintf(extra, sizeof(extra), ", \"hp_cipher\": \"%s\", \"what\": \"hp-mask\"",
                     hp_names[suite]);
            /* one mask per packet on either side; measured separately for each op */
            unsigned saved_n = s.n, saved_na = s.na;
            struct size_cfg saved_sz = s.sz;
            s.n = s.na = 1;
            snprintf(s.sz.label, sizeof(s.sz.label), "hp-mask");
            json_record(&s, o, "openssl-hp", "openssl", "protect", &h[0], QUICOFF_SAMPLE_LEN, 0, 0,
                        extra);
            json_record(&s, o, "openssl-hp", "openssl", "unprotect", &h[1], QUICOFF_SAMPLE_LEN, 0,
                        0, extra);
            s.n = saved_n;
            s.na = saved_na;
            s.sz = saved_sz;
            *failures += h[0].failed + h[1].failed;
        }
        for (unsigned t = 0; t < T; t++) {
            lane_sync(lanes[t]);
            lane_free(lanes[t]);
        }
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
    char model[256], flags[256];

    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    ncpus = bench_allowed_cpus(cpus, MAX_THREADS);
    if (fetch_ciphers() != 0)
        return 1;
    bench_cpu_info(model, sizeof(model), flags, sizeof(flags));
    double clk = bench_clock_cost_ns();
    const char *ia32 = getenv("OPENSSL_ia32cap");
    unsigned max_t = o.threads[o.nthreads - 1];

    printf("quicoff-bench: QUIC packet protection, 1-RTT short headers, threads");
    for (unsigned i = 0; i < o.nthreads; i++)
        printf("%s%u", i ? "," : " ", o.threads[i]);
    printf("\ncpu:      %s\n", model);
    printf("flags:    %s  (! = absent)\n", flags);
    printf("openssl:  %s%s%s\n", OpenSSL_version(OPENSSL_VERSION),
           ia32 ? ", OPENSSL_ia32cap=" : "", ia32 ? ia32 : "");
    char load[64] = "?";
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (!fgets(load, sizeof(load), lf))
            snprintf(load, sizeof(load), "?");
        load[strcspn(load, "\n")] = '\0';
        fclose(lf);
    }
    printf("load:     %s (/proc/loadavg at start: other tasks on the machine)\n", load);
    if (ncpus) {
        printf("pinning:  thread i on CPU");
        for (unsigned t = 0; t < max_t; t++)
            printf("%s%d", t ? "," : " ", cpus[t % ncpus]);
        printf(" (sched_setaffinity; %u CPU%s allowed)%s\n", ncpus, ncpus == 1 ? "" : "s",
               max_t > ncpus ? "  WARNING: more threads than CPUs, they share CPUs" : "");
    } else {
        printf("pinning:  NOT pinned (sched_getaffinity failed)\n");
    }
    printf(
        "method:   %u repeats per measurement, each a wall-clock window of %.0f ms; median (min)\n"
        "          ns/packet. Timer (CLOCK_MONOTONIC, %.1f ns per read) brackets only the burst\n"
        "          calls of one pass of %u packets (%u bursts of %u); before each pass the\n"
        "          packets are restored from a pristine copy OUTSIDE the timer ('restore'\n"
        "          column: its ns/packet, excluded, not subtracted). Packet data is therefore\n"
        "          warm in cache. Engine and bare-EVP repeats are interleaved. Packets: 1-byte\n"
        "          first byte, DCID (8 B; short-88 row 20 B), 4-byte PN, payload, 16-byte tag.\n"
        "          ratio = engine ns / bare EVP ns (same AEAD, same header length as AAD);\n"
        "          +ns = engine ns - bare EVP ns (header protection + parsing + lookup +\n"
        "          nonce + counters + backend glue).\n"
        "threads:  thr = T threads measured at once (engine and bare EVP alike), one per CPU,\n"
        "          each with its own worker and connections (c %% T == thread; with fewer\n"
        "          connections than threads each thread gets one), ONE shared table. A window\n"
        "          starts for all threads at a barrier and ends at one deadline. ns = per core:\n"
        "          each thread's median over repeats, averaged over threads. Mpps, Gbit/s\n"
        "          (payload) = aggregate: per repeat the sum of the threads' rates, median over\n"
        "          repeats. scale = aggregate Mpps / the 1-thread Mpps of the same run.\n"
        "          csw = involuntary context switches during the row's timed repeats (all\n"
        "          threads, engine + EVP); non-zero means another task shared a CPU: noisy.\n",
        o.repeats, o.min_ms, clk, o.burst * WINDOW_BURSTS, WINDOW_BURSTS, o.burst);

    if (o.json_path) {
        json = fopen(o.json_path, "w");
        if (!json) {
            perror(o.json_path);
            return 1;
        }
        fprintf(json,
                "{\n  \"meta\": {\"tool\": \"quicoff-bench\", \"cpu\": \"%s\", \"flags\": \"%s\", "
                "\"openssl\": \"%s\", \"pinned_cpu\": %d, \"cpus_allowed\": %u, \"threads\": [",
                model, flags, OpenSSL_version(OPENSSL_VERSION), ncpus ? cpus[0] : -1, ncpus);
        for (unsigned i = 0; i < o.nthreads; i++)
            fprintf(json, "%s%u", i ? ", " : "", o.threads[i]);
        fprintf(json,
                "], \"repeats\": %u, \"min_ms_per_repeat\": %.1f, \"window\": \"wall-clock\", "
                "\"burst\": %u, \"window_packets\": %u, \"clock_read_ns\": %.2f, "
                "\"quick\": %s},\n  \"records\": [\n",
                o.repeats, o.min_ms, o.burst, o.burst * WINDOW_BURSTS, clk,
                o.quick ? "true" : "false");
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
