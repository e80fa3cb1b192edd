/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-GCM on AVX-512 + VAES + VPCLMULQDQ (src/gcm_vaes.c) and the burst
 * AEAD path of the pipeline (protect.c), against OpenSSL's EVP AES-GCM:
 *
 *  - seal_burst and seal: ciphertext and tag byte-identical to EVP, for
 *    random bursts of 1..32 packets mixing keys (one connection, several,
 *    a different one per packet), payload sizes 0..1500 and odd sizes, AAD
 *    lengths 0..300, both key sizes; no byte outside data and tag written;
 *  - every window and mask boundary: payload and AAD lengths around 16,
 *    48/49/64/65 (AAD in the last window or not), 240..273 (full windows),
 *    ~4 KB and 64 KB (the counter's low byte wraps), AAD up to 70001;
 *  - open_burst: forged packets (tag, data, AAD or nonce) anywhere in a
 *    burst give -1 for exactly those, with their bytes as received; the
 *    others open to the plaintext;
 *  - the engine: one burst of 32 packets mixing all four suites through
 *    quicoff_protect_burst on the default backend equals packet-by-packet
 *    protection on the OpenSSL backend, and quicoff_unprotect_burst with
 *    forged packets in the middle fails exactly those, bytes as received.
 *
 * Skipped (reported, not failed) on CPUs without the extensions.
 */
#include "crypto.h"
#include "test_packets.h"
#include "test_util.h"

#include <openssl/evp.h>

/* The reference: EVP AES-GCM with a 12-byte IV and a 16-byte tag. */
static void evp_seal(size_t key_len, const uint8_t *key, const uint8_t nonce[12],
                     const uint8_t *aad, size_t aad_len, const uint8_t *pt, size_t len,
                     uint8_t *ct, uint8_t tag[16])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    int good = c != NULL &&
               EVP_EncryptInit_ex(c, key_len == 16 ? EVP_aes_128_gcm() : EVP_aes_256_gcm(), NULL,
                                  key, nonce) == 1;
    for (size_t off = 0; good && off < aad_len; off += 16384) /* int lengths */
        good = EVP_EncryptUpdate(c, NULL, &n, aad + off,
                                 (int)(aad_len - off < 16384 ? aad_len - off : 16384)) == 1;
    if (good && len)
        good = EVP_EncryptUpdate(c, ct, &n, pt, (int)len) == 1;
    good = good && EVP_EncryptFinal_ex(c, ct + len, &n) == 1 &&
           EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(c);
    if (!good) {
        fprintf(stderr, "EVP AES-GCM failed\n");
        exit(2);
    }
}

static const qo_aead_algo_t *algo_of(size_t key_len)
{
    return key_len == 16 ? &qo_aes128gcm_vaes : &qo_aes256gcm_vaes;
}

/* ------------------------------------------------------------------------ */
/* Backend level                                                             */

#define MAXB 32
#define GUARD 64 /* bytes checked around every buffer: nothing written there */

/* One packet of a test burst: its own buffer aad | data | tag with guard
 * bytes around, at a random misalignment. */
struct tpkt {
    uint8_t *mem;
    size_t mem_len;
    uint8_t *aad, *data, *tag;
    size_t aad_len, len;
    unsigned key;
    uint8_t nonce[12];
    uint8_t *pt;              /* plaintext */
    uint8_t *ct, ref_tag[16]; /* EVP's output */
};

static void tpkt_new(struct tpkt *p, size_t aad_len, size_t len, unsigned key)
{
    size_t mis = test_rnd() % 64;
    p->mem_len = GUARD + mis + aad_len + len + 16 + GUARD;
    p->mem = test_xmalloc(p->mem_len);
    memset(p->mem, 0xa5, p->mem_len);
    p->aad = p->mem + GUARD + mis;
    p->data = p->aad + aad_len;
    p->tag = p->data + len;
    p->aad_len = aad_len;
    p->len = len;
    p->key = key;
    test_fill(p->nonce, 12);
    test_fill(p->aad, aad_len);
    p->pt = test_xmalloc(len);
    p->ct = test_xmalloc(len);
    test_fill(p->pt, len);
    memcpy(p->data, p->pt, len);
}

static void tpkt_free(struct tpkt *p)
{
    free(p->mem);
    free(p->pt);
    free(p->ct);
}

/* The guard bytes (before the AAD and after the tag) are untouched. */
static int guards_intact(const struct tpkt *p)
{
    for (const uint8_t *q = p->mem; q < p->aad; q++)
        if (*q != 0xa5)
            return 0;
    for (const uint8_t *q = p->tag + 16; q < p->mem + p->mem_len; q++)
        if (*q != 0xa5)
            return 0;
    return 1;
}

static void op_of(qo_aead_op_t *op, const struct tpkt *p, void *const ctx[])
{
    memset(op, 0, sizeof(*op));
    op->ctx = ctx[p->key];
    op->aad = p->aad;
    op->data = p->data;
    op->tag = p->tag;
    op->aad_len = p->aad_len;
    op->len = p->len;
    memcpy(op->nonce, p->nonce, 12);
    /* bytes 12..15 of the nonce field must not matter */
    test_fill(op->nonce + 12, 4);
}

#define NKEYS 6

struct keyset {
    size_t key_len;
    uint8_t key[NKEYS][32];
    void *ctx[NKEYS];
};

static void keys_new(struct keyset *k, size_t key_len)
{
    const qo_aead_algo_t *a = algo_of(key_len);
    k->key_len = key_len;
    for (int i = 0; i < NKEYS; i++) {
        test_fill(k->key[i], 32);
        k->ctx[i] = aligned_alloc(64, (a->ctx_size + 63) & ~(size_t)63);
        if (k->ctx[i] == NULL || a->setup(k->ctx[i], k->key[i]) != 0) {
            fprintf(stderr, "gcm setup failed\n");
            exit(2);
        }
    }
}

static void keys_free(struct keyset *k)
{
    for (int i = 0; i < NKEYS; i++) {
        algo_of(k->key_len)->dispose(k->ctx[i]);
        free(k->ctx[i]);
    }
}

/*
 * One burst: seal_burst against EVP, then open_burst of the output with the
 * packets listed in `forge` altered (1: tag, 2: data, 3: AAD, 4: nonce).
 * Returns 1 when everything matched.
 */
static int burst_case(struct keyset *k, struct tpkt *p, unsigned n, const int forge[])
{
    const qo_aead_algo_t *a = algo_of(k->key_len);
    qo_aead_op_t op[MAXB] = {{0}};
    int res[MAXB], good = 1;

    for (unsigned i = 0; i < n; i++) {
        evp_seal(k->key_len, k->key[p[i].key], p[i].nonce, p[i].aad, p[i].aad_len, p[i].pt,
                 p[i].len, p[i].ct, p[i].ref_tag);
        op_of(&op[i], &p[i], k->ctx);
    }
    memset(res, 0x55, sizeof(res));
    a->seal_burst(NULL, op, n, res); /* gcm_vaes.c keeps no per-worker state */
    for (unsigned i = 0; i < n; i++) {
        int same = res[i] == 0 && memcmp(p[i].data, p[i].ct, p[i].len) == 0 &&
                   memcmp(p[i].tag, p[i].ref_tag, 16) == 0 && guards_intact(&p[i]);
        if (!same)
            printf("# %s burst %u pkt %u (aad %zu, len %zu, key %u): seal differs\n", a->name, n,
                   i, p[i].aad_len, p[i].len, p[i].key);
        good &= same;
    }

    /* Forge, then open the burst. */
    uint8_t *as_received[MAXB];
    for (unsigned i = 0; i < n; i++) {
        op_of(&op[i], &p[i], k->ctx);
        switch (forge[i]) {
        case 1:
            p[i].tag[test_rnd() % 16] ^= (uint8_t)(1u << (test_rnd() % 8));
            break;
        case 2: /* data; the AAD or the nonce when there is none */
        case 3:
        case 4:
            if (forge[i] == 2 && p[i].len)
                p[i].data[test_rnd() % p[i].len] ^= (uint8_t)(1u << (test_rnd() % 8));
            else if (forge[i] <= 3 && p[i].aad_len)
                p[i].aad[test_rnd() % p[i].aad_len] ^= (uint8_t)(1u << (test_rnd() % 8));
            else
                op[i].nonce[test_rnd() % 12] ^= (uint8_t)(1u << (test_rnd() % 8));
            break;
        default:
            break;
        }
        as_received[i] = test_xmalloc(p[i].len + 16);
        memcpy(as_received[i], p[i].data, p[i].len + 16);
    }
    memset(res, 0x55, sizeof(res));
    a->open_burst(NULL, op, n, res);
    for (unsigned i = 0; i < n; i++) {
        int same = forge[i] ? res[i] == -1 && memcmp(p[i].data, as_received[i], p[i].len + 16) == 0
                            : res[i] == 0 && memcmp(p[i].data, p[i].pt, p[i].len) == 0 &&
                                  memcmp(p[i].tag, p[i].ref_tag, 16) == 0;
        same &= guards_intact(&p[i]);
        if (!same)
            printf("# %s burst %u pkt %u (aad %zu, len %zu, forged %d): open result %d wrong\n",
                   a->name, n, i, p[i].aad_len, p[i].len, forge[i], res[i]);
        good &= same;
        free(as_received[i]);
    }
    return good;
}

/* A payload length: mostly QUIC-like, sometimes any size up to 1500. */
static size_t pick_len(void)
{
    static const size_t common[] = {0,   1,   15,  16,  17,  20,   47,   48,   63,   64,  65,
                                    100, 200, 255, 256, 257, 1200, 1350, 1400, 1452, 1500};
    return test_rnd() % 2 ? common[test_rnd() % (sizeof(common) / sizeof(common[0]))]
                          : test_rnd() % 1501;
}

static size_t pick_aad(void)
{
    static const size_t common[] = {0, 1, 9, 13, 16, 21, 25, 33, 48, 49, 53, 64, 65, 80, 300};
    return test_rnd() % 2 ? common[test_rnd() % (sizeof(common) / sizeof(common[0]))]
                          : test_rnd() % 301;
}

static void test_random_bursts(void)
{
    for (size_t key_len = 16; key_len <= 32; key_len += 16) {
        struct keyset k;
        keys_new(&k, key_len);
        int good = 1, forged_total = 0;
        for (int round = 0; round < 300; round++) {
            unsigned n = 1 + (unsigned)(test_rnd() % MAXB);
            /* keys: one connection, a few, or a different one per packet */
            unsigned nk = round % 3 == 0 ? 1 : round % 3 == 1 ? 2 : NKEYS;
            struct tpkt p[MAXB];
            int forge[MAXB];
            for (unsigned i = 0; i < n; i++) {
                tpkt_new(&p[i], pick_aad(), pick_len(), (unsigned)(test_rnd() % nk));
                forge[i] = test_rnd() % 4 == 0 ? 1 + (int)(test_rnd() % 4) : 0;
                forged_total += forge[i] != 0;
            }
            good &= burst_case(&k, p, n, forge);
            for (unsigned i = 0; i < n; i++)
                tpkt_free(&p[i]);
        }
        ok(good,
           "aes-%zu-gcm: 300 random bursts of 1..32 (%d forged packets): seal == EVP, "
           "open_burst fails exactly the forged ones, bytes as received",
           key_len * 8, forged_total);
        keys_free(&k);
    }
}

/*
 * Key schedules computed per burst (the descriptor's expand): scratch
 * contexts, zeroed once and reused burst after burst as a worker would,
 * each burst's distinct keys expanded into them for the burst's longest
 * packet, then seal_burst / open_burst against EVP.  New keys every burst
 * (key updates: nothing of the previous key may survive), bursts of short
 * packets after long ones and the reverse (only the powers of H a short
 * packet needs are written; what a longer one left must not matter), 1..32
 * keys (groups of four lanes and a partial last group).
 */
static void test_expanded_bursts(void)
{
    for (size_t key_len = 16; key_len <= 32; key_len += 16) {
        const qo_aead_algo_t *a = algo_of(key_len);
        size_t csz = (a->ctx_size + 63) & ~(size_t)63;
        if (!ok(a->expand != NULL, "%s has expand", a->name))
            continue;
        uint8_t *scratch = aligned_alloc(64, csz * MAXB);
        memset(scratch, 0, csz * MAXB);
        int good = 1, same_bytes = 1;
        for (int round = 0; round < 200; round++) {
            struct keyset k = {.key_len = key_len};
            unsigned n = 1 + (unsigned)(test_rnd() % MAXB);
            unsigned nk = round % 4 == 0 ? 1 : round % 4 == 1 ? 5 : n < NKEYS ? n : NKEYS;
            /* short and long bursts alternate, in both orders */
            int shortb = (round / 2) % 2 == 0;
            for (unsigned i = 0; i < nk; i++) {
                test_fill(k.key[i], 32);
                k.ctx[i] = scratch + csz * i;
            }
            struct tpkt p[MAXB];
            int forge[MAXB];
            size_t max_aad = 0, max_len = 0;
            for (unsigned i = 0; i < n; i++) {
                size_t aad = shortb ? 9 + test_rnd() % 21 : pick_aad();
                size_t len = shortb ? test_rnd() % 80 : pick_len();
                tpkt_new(&p[i], aad, len, (unsigned)(test_rnd() % nk));
                forge[i] = test_rnd() % 5 == 0 ? 1 + (int)(test_rnd() % 4) : 0;
                max_aad = aad > max_aad ? aad : max_aad;
                max_len = len > max_len ? len : max_len;
            }
            const uint8_t *keyp[NKEYS];
            for (unsigned i = 0; i < nk; i++)
                keyp[i] = k.key[i];
            a->expand(k.ctx, keyp, nk, max_aad, max_len);
            /* the round keys are those of the full setup, byte for byte */
            for (unsigned i = 0; i < nk; i++) {
                _Alignas(64) uint8_t full[1024];
                if (a->ctx_size > sizeof(full) || a->setup(full, k.key[i]) != 0)
                    exit(2);
                same_bytes &= memcmp(full, k.ctx[i], (key_len == 16 ? 11 : 15) * 16) == 0;
                a->dispose(full);
            }
            good &= burst_case(&k, p, n, forge);
            for (unsigned i = 0; i < n; i++)
                tpkt_free(&p[i]);
        }
        ok(same_bytes, "%s: expanded round keys == setup's", a->name);
        ok(good,
           "%s: 200 bursts, new keys each, short and long packets alternating: seal == EVP, "
           "open_burst fails exactly the forged ones",
           a->name);
        qo_secure_zero(scratch, csz * MAXB);
        free(scratch);
    }
}

/* AES-ECB, the header-protection cipher (RFC 9001 §5.4.3), from OpenSSL. */
static void evp_ecb(size_t key_len, const uint8_t *key, const uint8_t in[16], uint8_t out[16])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    int good = c != NULL &&
               EVP_EncryptInit_ex(c, key_len == 16 ? EVP_aes_128_ecb() : EVP_aes_256_ecb(), NULL,
                                  key, NULL) == 1 &&
               EVP_CIPHER_CTX_set_padding(c, 0) == 1 && EVP_EncryptUpdate(c, out, &n, in, 16) == 1;
    EVP_CIPHER_CTX_free(c);
    if (!good) {
        fprintf(stderr, "EVP AES-ECB failed\n");
        exit(2);
    }
}

/* The header-protection keys' round keys in lanes: with them, the
 * backend's AES header-protection masks are EVP's AES-ECB of the sample. */
static void test_hp_round_keys_lanes(void)
{
    const qo_backend_t *b = qo_backend_find("ipsec-mb");
    if (!b) {
        ok(1, "skipped: no ipsec-mb backend in this build");
        return;
    }
    for (size_t key_len = 16; key_len <= 32; key_len += 16) {
        const qo_hp_algo_t *hp = b->hp[key_len == 16 ? QUICOFF_AES_128_GCM : QUICOFF_AES_256_GCM];
        int good = 1;
        for (unsigned n = 1; n <= 9; n++) {
            _Alignas(64) uint8_t rk[9][15 * 16];
            uint8_t key[9][32];
            void *out[9];
            const uint8_t *keyp[9];
            for (unsigned i = 0; i < n; i++) {
                test_fill(key[i], 32);
                memset(rk[i], 0, sizeof(rk[i]));
                out[i] = rk[i];
                keyp[i] = key[i];
            }
            qo_aes_round_keys_lanes(out, keyp, n, key_len);
            for (unsigned i = 0; i < n; i++) {
                uint8_t sample[16], ref[16], mask[5];
                test_fill(sample, 16);
                evp_ecb(key_len, key[i], sample, ref);
                good &= hp->ctx_size <= sizeof(rk[i]) && hp->mask(rk[i], sample, mask) == 0 &&
                        memcmp(mask, ref, 5) == 0;
            }
        }
        ok(good, "aes-%zu: round keys of 1..9 keys in lanes give EVP's AES-ECB masks",
           key_len * 8);
    }
}

/* Every length pair in the lists, as bursts of one and of all of them. */
static void test_boundaries(void)
{
    static const size_t lens[] = {0,    1,    15,   16,   17,   31,  32,  33,   47,   48,
                                  49,   63,   64,   65,   127,  128, 129, 191,  192,  193,
                                  208,  224,  239,  240,  241,  255, 256, 257,  271,  272,
                                  273,  511,  512,  513,  767,  768, 769, 4000, 4064, 4080,
                                  4095, 4096, 4097, 4111, 4112, 8191};
    static const size_t aads[] = {0, 1, 15, 16, 17, 32, 47, 48, 49, 63, 64, 65, 100, 256, 257};
    for (size_t key_len = 16; key_len <= 32; key_len += 16) {
        struct keyset k;
        keys_new(&k, key_len);
        int good = 1;
        for (size_t a = 0; a < sizeof(aads) / sizeof(aads[0]); a++) {
            struct tpkt p[MAXB];
            int forge[MAXB] = {0}, nforge[MAXB];
            unsigned n = 0;
            for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
                struct tpkt one;
                int f = (int)(l % 5);
                tpkt_new(&one, aads[a], lens[l], (unsigned)(l % 3));
                good &= burst_case(&k, &one, 1, &f);
                tpkt_free(&one);
            }
            /* the same lengths in bursts of up to 32, every third one forged */
            for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
                tpkt_new(&p[n], aads[a], lens[l], (unsigned)(l % NKEYS));
                nforge[n] = l % 3 == 1 ? 1 + (int)(l % 4) : 0;
                forge[n] = nforge[n];
                if (++n == MAXB || l + 1 == sizeof(lens) / sizeof(lens[0])) {
                    good &= burst_case(&k, p, n, forge);
                    for (unsigned i = 0; i < n; i++)
                        tpkt_free(&p[i]);
                    n = 0;
                }
            }
        }
        ok(good, "aes-%zu-gcm: payload 0..8191 around every window/counter boundary x AAD 0..257",
           key_len * 8);

        /* Long ones: 64 KB payload (the counter's low byte wraps 16 times),
         * AAD of 0xfeff, 0xff00 and 70001 bytes. */
        static const size_t big[][2] = {
            {13, 65535}, {0xfeff, 100}, {0xff00, 17}, {70001, 0}, {70001, 1400}};
        good = 1;
        for (size_t b = 0; b < sizeof(big) / sizeof(big[0]); b++) {
            struct tpkt one;
            int f = b % 2 ? 2 : 0;
            tpkt_new(&one, big[b][0], big[b][1], 0);
            good &= burst_case(&k, &one, 1, &f);
            tpkt_free(&one);
        }
        ok(good, "aes-%zu-gcm: 64 KB payload, AAD 0xfeff / 0xff00 / 70001", key_len * 8);
        keys_free(&k);
    }
}

/* seal()/open(), one packet per call, agree with the bursts (same kernel,
 * other entry points: a 12-byte nonce array, not a 16-byte field). */
static void test_single_calls(void)
{
    int good = 1;
    for (size_t key_len = 16; key_len <= 32; key_len += 16) {
        const qo_aead_algo_t *a = algo_of(key_len);
        struct keyset k;
        keys_new(&k, key_len);
        for (int i = 0; i < 400; i++) {
            struct tpkt p;
            tpkt_new(&p, pick_aad(), pick_len(), (unsigned)(test_rnd() % NKEYS));
            evp_seal(key_len, k.key[p.key], p.nonce, p.aad, p.aad_len, p.pt, p.len, p.ct,
                     p.ref_tag);
            good &= a->seal(k.ctx[p.key], p.nonce, p.aad, p.aad_len, p.data, p.len, p.tag) == 0 &&
                    memcmp(p.data, p.ct, p.len) == 0 && memcmp(p.tag, p.ref_tag, 16) == 0;
            p.tag[i % 16] ^= 1;
            good &= a->open(k.ctx[p.key], p.nonce, p.aad, p.aad_len, p.data, p.len, p.tag, NULL) ==
                        -1 &&
                    memcmp(p.data, p.ct, p.len) == 0;
            p.tag[i % 16] ^= 1;
            good &= a->open(k.ctx[p.key], p.nonce, p.aad, p.aad_len, p.data, p.len, p.tag, NULL) ==
                        0 &&
                    memcmp(p.data, p.pt, p.len) == 0 && guards_intact(&p);
            tpkt_free(&p);
        }
        keys_free(&k);
    }
    ok(good, "seal/open per packet == EVP, forged tag -1 and unchanged");
}

/* ------------------------------------------------------------------------ */
/* Engine level                                                              */

#define EP 32
#define CID_LEN 8

struct engine {
    struct quicoff_table *t;
    struct quicoff_worker *w;
    quicoff_conn_t tx[QUICOFF_SUITE_COUNT][2]; /* two connections per suite */
};

static int engine_new(struct engine *e, const char *backend, uint32_t capacity)
{
    struct quicoff_table_config cfg = {.capacity = capacity,
                                       .local_cid_len = CID_LEN,
                                       .backend = backend};
    quicoff_status_t st;
    e->t = quicoff_table_create(&cfg, &st);
    if (e->t == NULL)
        return 0;
    e->w = quicoff_worker_create(e->t);
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        for (int c = 0; c < 2; c++) {
            struct quicoff_packet_keys keys;
            uint8_t cid[CID_LEN];
            quicoff_conn_t rx;
            tp_keys((uint32_t)(10 * s + c), &keys);
            tp_cid((uint32_t)(10 * s + c), cid, CID_LEN);
            if (tp_add(e->t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, (quicoff_suite_t)s, 0, cid,
                       CID_LEN, &keys, &e->tx[s][c]) != QUICOFF_OK ||
                tp_add(e->t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, (quicoff_suite_t)s, 0, cid,
                       CID_LEN, &keys, &rx) != QUICOFF_OK)
                return 0;
        }
    }
    return e->w != NULL;
}

static void engine_free(struct engine *e)
{
    quicoff_worker_destroy(e->w);
    quicoff_table_destroy(e->t);
}

/* capacity of the table under test: a small one, and one big enough that
 * its bursts prefetch level by level (table.h, prefetch_levels) */
static uint32_t mixed_capacity = 64;

static void test_engine_mixed_burst(void)
{
    struct engine fast = {0}, ref = {0};
    int made = engine_new(&fast, "auto", mixed_capacity) && engine_new(&ref, "openssl", 64);
    if (!ok(made, "tables on auto (%s) and openssl", fast.t ? quicoff_table_backend(fast.t) : "-"))
        return;
    enum { CAP = 1600 };
    static uint8_t plain[EP][CAP], a[EP][CAP], b[EP][CAP], rx_in[EP][CAP];
    struct quicoff_pkt pa[EP], pb[EP];
    struct quicoff_result ra[EP], rb[EP];
    uint32_t len[EP];
    int suite[EP], forged[EP], good = 1;

    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < EP; i++) {
            suite[i] = (int)(test_rnd() % QUICOFF_SUITE_COUNT);
            int c = (int)(test_rnd() % 2);
            uint8_t cid[CID_LEN], payload[1400];
            size_t plen = 20 + test_rnd() % 1381;
            tp_cid((uint32_t)(10 * suite[i] + c), cid, CID_LEN);
            test_fill(payload, plen);
            struct tp_hdr h = {.dcid = cid,
                               .dcid_len = CID_LEN,
                               .pn_len = 4,
                               .pn = (uint64_t)round * EP + (uint64_t)i};
            len[i] = (uint32_t)tp_build(plain[i], &h, payload, plen, NULL);
            memcpy(a[i], plain[i], len[i]);
            memcpy(b[i], plain[i], len[i]);
            pa[i] = (struct quicoff_pkt){
                .data = a[i], .end = len[i], .cap = CAP, .conn = fast.tx[suite[i]][c], .pn = h.pn};
            pb[i] = (struct quicoff_pkt){
                .data = b[i], .end = len[i], .cap = CAP, .conn = ref.tx[suite[i]][c], .pn = h.pn};
        }
        /* The default backend in one burst; the reference one packet at a time. */
        good &= quicoff_protect_burst(fast.w, pa, ra, EP) == EP;
        for (int i = 0; i < EP; i++)
            good &= quicoff_protect_burst(ref.w, &pb[i], &rb[i], 1) == 1 &&
                    memcmp(a[i], b[i], len[i] + QUICOFF_TAG_LEN) == 0;

        /* Unprotect the burst with some packets forged in the middle. */
        for (int i = 0; i < EP; i++) {
            forged[i] = i > 0 && i < EP - 1 && test_rnd() % 5 == 0;
            /* past the header-protection sample (PN at 1 + CID_LEN, sample 4
             * bytes later, 16 long), so only the AEAD can notice */
            const uint32_t first = 1 + CID_LEN + 4 + QUICOFF_SAMPLE_LEN;
            if (forged[i])
                a[i][first + test_rnd() % (len[i] + QUICOFF_TAG_LEN - first)] ^= 0x10;
            memcpy(rx_in[i], a[i], len[i] + QUICOFF_TAG_LEN);
            pa[i] = (struct quicoff_pkt){.data = a[i],
                                         .end = len[i] + QUICOFF_TAG_LEN,
                                         .cap = CAP};
        }
        quicoff_unprotect_burst(fast.w, pa, ra, EP);
        for (int i = 0; i < EP; i++) {
            if (forged[i])
                good &= ra[i].status == QUICOFF_AUTH_FAILED &&
                        memcmp(a[i], rx_in[i], len[i] + QUICOFF_TAG_LEN) == 0;
            else
                good &= ra[i].status == QUICOFF_OK && memcmp(a[i], plain[i], len[i]) == 0;
        }
    }
    ok(good, "20 bursts of 32 mixing the 4 suites: protect == openssl packet by packet; "
             "forged packets mid-burst AUTH_FAILED with bytes as received, others OK");
    engine_free(&fast);
    engine_free(&ref);
}

/*
 * A table big enough for the level-by-level stages, whose key schedules the
 * bursts compute from the raw keys (protect.c, qo_key_scratch) where the
 * backend can, against a small table on OpenSSL, with key updates: every
 * few bursts some connections get the next generation's keys (both
 * directions, new random keys, alternating phase slots, the old phase's
 * keys sometimes dropped first), and their packets of the next burst carry
 * the new key phase, so both key phase slots of a keyset are used and the
 * same scratch contexts hold ever new keys.  All four suites mixed in each
 * burst (AES-128/256-GCM computed, the others read); short and long
 * packets.  TX bytes == OpenSSL's; RX opens them, and fails forged ones.
 */
#define KU_CONNS 5 /* per suite */
static void test_engine_key_updates(void)
{
    struct quicoff_table_config fcfg = {.capacity = 8192,
                                        .local_cid_len = CID_LEN,
                                        .backend = "auto"};
    struct quicoff_table_config rcfg = {.capacity = 64,
                                        .local_cid_len = CID_LEN,
                                        .backend = "openssl"};
    quicoff_status_t st;
    struct quicoff_table *ft = quicoff_table_create(&fcfg, &st),
                         *rt = quicoff_table_create(&rcfg, &st);
    struct quicoff_worker *fw = ft ? quicoff_worker_create(ft) : NULL;
    struct quicoff_worker *rw = rt ? quicoff_worker_create(rt) : NULL;
    if (!ok(fw && rw, "tables on auto (%s) and openssl", ft ? quicoff_table_backend(ft) : "-"))
        return;
    enum { NC = QUICOFF_SUITE_COUNT * KU_CONNS, CAP = 1600 };
    quicoff_conn_t ftx[NC], frx[NC], rtx[NC];
    uint32_t gen[NC] = {0}, pending[NC] = {0};
    uint64_t next_pn[NC] = {0};
    uint8_t cid[NC][CID_LEN];
    int good = 1, updates = 0;
    for (int c = 0; c < NC; c++) {
        struct quicoff_packet_keys keys;
        quicoff_conn_t dummy;
        quicoff_suite_t suite = (quicoff_suite_t)(c / KU_CONNS);
        test_fill((uint8_t *)&keys, sizeof(keys));
        tp_cid((uint32_t)(1000 + c), cid[c], CID_LEN);
        good &= tp_add(ft, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, suite, 0, cid[c], CID_LEN, &keys,
                       &ftx[c]) == QUICOFF_OK &&
                tp_add(ft, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, suite, 0, cid[c], CID_LEN, &keys,
                       &frx[c]) == QUICOFF_OK &&
                tp_add(rt, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, suite, 0, cid[c], CID_LEN, &keys,
                       &rtx[c]) == QUICOFF_OK;
        (void)dummy;
    }
    static uint8_t plain[EP][CAP], a[EP][CAP], b[EP][CAP], rx_in[EP][CAP];
    struct quicoff_pkt pa[EP], pb[EP];
    struct quicoff_result ra[EP], rb[EP];
    uint32_t len[EP];
    int conn[EP], forged[EP];
    for (int round = 0; round < 60 && good; round++) {
        /* Next keys for some connections: their packets below carry the new phase. */
        for (int c = 0; c < NC; c++) {
            pending[c] = 0;
            if (round % 3 != 2 || test_rnd() % 3)
                continue;
            struct quicoff_conn_update u = {.what = QUICOFF_UPDATE_KEYS,
                                            .key_generation = gen[c] + 1};
            test_fill((uint8_t *)&u.keys, sizeof(u.keys));
            if (test_rnd() % 2) { /* drop the old phase's keys first, sometimes */
                struct quicoff_conn_update d = {.what = QUICOFF_UPDATE_DROP_OLD};
                quicoff_conn_update(ft, ftx[c], &d);
                quicoff_conn_update(ft, frx[c], &d);
                quicoff_conn_update(rt, rtx[c], &d);
            }
            good &= quicoff_conn_update(ft, ftx[c], &u) == QUICOFF_OK &&
                    quicoff_conn_update(ft, frx[c], &u) == QUICOFF_OK &&
                    quicoff_conn_update(rt, rtx[c], &u) == QUICOFF_OK;
            pending[c] = 1;
            updates++;
        }
        /* every connection given new keys sends in this burst: its first
         * packet starts the update (in order, as the model below assumes) */
        int forced = 0;
        for (int c = 0; c < NC && forced < EP; c++)
            if (pending[c])
                conn[forced++] = c;
        for (int i = forced; i < EP; i++)
            conn[i] = (int)(test_rnd() % NC);
        for (int i = 0; i < EP; i++) {
            int c = conn[i];
            uint8_t payload[1400];
            size_t plen = round % 2 ? 20 + test_rnd() % 60 : 20 + test_rnd() % 1381;
            test_fill(payload, plen);
            struct tp_hdr h = {.dcid = cid[c],
                               .dcid_len = CID_LEN,
                               .pn_len = 4,
                               .pn = next_pn[c]++,
                               .key_phase = (gen[c] + pending[c]) & 1};
            len[i] = (uint32_t)tp_build(plain[i], &h, payload, plen, NULL);
            memcpy(a[i], plain[i], len[i]);
            memcpy(b[i], plain[i], len[i]);
            pa[i] = (struct quicoff_pkt){
                .data = a[i], .end = len[i], .cap = CAP, .conn = ftx[c], .pn = h.pn};
            pb[i] = (struct quicoff_pkt){
                .data = b[i], .end = len[i], .cap = CAP, .conn = rtx[c], .pn = h.pn};
        }
        for (int c = 0; c < NC; c++)
            gen[c] += pending[c]; /* this burst's first packet of c starts the update */
        quicoff_protect_burst(fw, pa, ra, EP);
        for (int i = 0; i < EP; i++) {
            quicoff_protect_burst(rw, &pb[i], &rb[i], 1);
            int same = ra[i].status == rb[i].status && ra[i].status == QUICOFF_OK &&
                       memcmp(a[i], b[i], len[i] + QUICOFF_TAG_LEN) == 0;
            if (!same)
                printf("# round %d pkt %d conn %d (suite %d, gen %u): protect status %d / %d\n",
                       round, i, conn[i], conn[i] / KU_CONNS, gen[conn[i]], ra[i].status,
                       rb[i].status);
            good &= same;
        }
        for (int i = 0; i < EP; i++) {
            forged[i] = test_rnd() % 6 == 0;
            const uint32_t first = 1 + CID_LEN + 4 + QUICOFF_SAMPLE_LEN;
            if (forged[i])
                a[i][first + test_rnd() % (len[i] + QUICOFF_TAG_LEN - first)] ^= 0x04;
            memcpy(rx_in[i], a[i], len[i] + QUICOFF_TAG_LEN);
            pa[i] = (struct quicoff_pkt){.data = a[i],
                                         .end = len[i] + QUICOFF_TAG_LEN,
                                         .cap = CAP};
        }
        quicoff_unprotect_burst(fw, pa, ra, EP);
        for (int i = 0; i < EP; i++) {
            int same = forged[i]
                           ? ra[i].status == QUICOFF_AUTH_FAILED &&
                                 memcmp(a[i], rx_in[i], len[i] + QUICOFF_TAG_LEN) == 0
                           : ra[i].status == QUICOFF_OK && memcmp(a[i], plain[i], len[i]) == 0;
            if (!same)
                printf("# round %d pkt %d conn %d (suite %d): unprotect status %d, forged %d\n",
                       round, i, conn[i], conn[i] / KU_CONNS, ra[i].status, forged[i]);
            good &= same;
        }
    }
    ok(good && updates > 20,
       "60 bursts of 32, 4 suites, %d key updates: protect == openssl; unprotect opens them, "
       "forged ones AUTH_FAILED as received",
       updates);
    quicoff_worker_destroy(fw);
    quicoff_worker_destroy(rw);
    quicoff_table_destroy(ft);
    quicoff_table_destroy(rt);
}

int main(void)
{
    *test_rng() = 0x243f6a8885a308d3u; /* the data this test always had */
    if (!qo_gcm_vaes_available()) {
        ok(1, "skipped: this CPU lacks AVX-512/VAES/VPCLMULQDQ");
        subtest("engine mixed burst", test_engine_mixed_burst);
        return done_testing();
    }
    subtest("random bursts", test_random_bursts);
    subtest("boundaries", test_boundaries);
    subtest("single calls", test_single_calls);
    subtest("key schedules expanded per burst", test_expanded_bursts);
    subtest("header-protection round keys in lanes", test_hp_round_keys_lanes);
    subtest("engine mixed burst", test_engine_mixed_burst);
    mixed_capacity = 8192; /* 8192 x QO_CONN_FOOTPRINT > QO_PREFETCH_LEVELS_FOOTPRINT */
    subtest("engine mixed burst, table out of cache", test_engine_mixed_burst);
    subtest("engine key updates, table out of cache", test_engine_key_updates);
    return done_testing();
}
