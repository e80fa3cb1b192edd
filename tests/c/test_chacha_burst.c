/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ChaCha20-Poly1305 over bursts (src/chacha20_poly1305.c: ChaCha20 blocks in
 * lanes across packets, Poly1305 per packet) against OpenSSL's
 * EVP_chacha20_poly1305, for every implementation of the lanes this CPU has
 * (AVX-512: 16 ChaCha20 lanes and Poly1305 in 8 IFMA lanes where the CPU has
 * IFMA; AVX2: 8 ChaCha20 lanes, scalar Poly1305; portable C), forced in
 * turn:
 *
 *  - RFC 8439 §2.8.2 (seal) and §A.5 (open), RFC 9001 A.5 (the short
 *    ChaCha20 packet: one byte of payload);
 *  - every payload length 0..300, then random ones up to 1,500, with random
 *    keys, nonces and AAD lengths 0..300: ciphertext and tag byte-identical to
 *    EVP, no byte outside data and tag written;
 *  - bursts of n = 1..33 packets (lanes partly filled, several passes, the
 *    chunk boundary at 32) mixing lengths and keys (one, a few, one per
 *    packet), sealed and opened in one call each;
 *  - AAD, data and tag in allocations of exactly their size (for ASan);
 *  - open_burst with tampered packets (tag, ciphertext, AAD or nonce) anywhere
 *    in a burst: -1 for exactly those, their bytes exactly as received; the
 *    others open to the plaintext;
 *  - the ipsec-mb backend's chacha20-poly1305 seal/open/seal_burst/
 *    open_burst where that backend is built and usable, with and without a
 *    worker's job manager: the same lanes, and under c (portable lanes) the
 *    long packets through ipsec-mb's job or direct API (restored on a
 *    forgery).
 */
#include "chacha20.h"
#include "chacha20_poly1305.h"
#include "crypto.h"
#include "poly1305.h"
#include "test_util.h"

#include <openssl/evp.h>

/* The reference: EVP ChaCha20-Poly1305, 12-byte nonce, 16-byte tag. */
static void evp_seal(const uint8_t key[32], const uint8_t nonce[12], const uint8_t *aad,
                     size_t aad_len, const uint8_t *pt, size_t len, uint8_t *ct, uint8_t tag[16])
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int n = 0;
    int good = c != NULL &&
               EVP_EncryptInit_ex(c, EVP_chacha20_poly1305(), NULL, key, nonce) == 1 &&
               (aad_len == 0 || EVP_EncryptUpdate(c, NULL, &n, aad, (int)aad_len) == 1) &&
               (len == 0 || EVP_EncryptUpdate(c, ct, &n, pt, (int)len) == 1) &&
               EVP_EncryptFinal_ex(c, ct + len, &n) == 1 &&
               EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(c);
    if (!good) {
        fprintf(stderr, "EVP ChaCha20-Poly1305 failed\n");
        exit(2);
    }
}

/* ------------------------------------------------------------------------ */
/* Known answers                                                             */

struct kat {
    const char *name, *key, *nonce, *aad, *pt, *ct_tag;
};

static const struct kat kats[] = {
    {"RFC 8439 2.8.2", "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
     "070000004041424344454647", "50515253c0c1c2c3c4c5c6c7",
     "4c616469657320616e642047656e746c656d656e206f662074686520636c617373206f66202739393a2049"
     "66204920636f756c64206f6666657220796f75206f6e6c79206f6e652074697020666f7220746865206675"
     "747572652c2073756e73637265656e20776f756c642062652069742e",
     "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d63dbea45e8ca9671282fafb"
     "69da92728b1a71de0a9e060b2905d6a5b67ecd3b3692ddbd7f2d778b8c9803aee328091b58fab324e4fad6"
     "75945585808b4831d7bc3ff4def08e4b7a9de576d26586cec64b6116"
     "1ae10b594f09e26a7e902ecbd0600691"},
    {"RFC 8439 A.5", "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0",
     "000000000102030405060708", "f33388860000000000004e91",
     "496e7465726e65742d4472616674732061726520647261667420646f63756d656e74732076616c69642066"
     "6f722061206d6178696d756d206f6620736978206d6f6e74687320616e64206d6179206265207570646174"
     "65642c207265706c616365642c206f72206f62736f6c65746564206279206f7468657220646f63756d656e"
     "747320617420616e792074696d652e20497420697320696e617070726f70726961746520746f2075736520"
     "496e7465726e65742d447261667473206173207265666572656e6365206d6174657269616c206f7220746f"
     "2063697465207468656d206f74686572207468616e206173202fe2809c776f726b20696e2070726f677265"
     "73732e2fe2809d",
     "64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb24c6cfc18755d43eea09ee9"
     "4e382d26b0bdb7b73c321b0100d4f03b7f355894cf332f830e710b97ce98c8a84abd0b948114ad176e008d"
     "33bd60f982b1ff37c8559797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4b9"
     "166c767b804d46a59b5216cde7a4e99040c5a40433225ee282a1b0a06c523eaf4534d7f83fa1155b004771"
     "8cbc546a0d072b04b3564eea1b422273f548271a0bb2316053fa76991955ebd63159434ecebb4e466dae5a"
     "1073a6727627097a1049e617d91d361094fa68f0ff77987130305beaba2eda04df997b714d6c6f2c29a6ad"
     "5cb4022b02709b"
     "eead9d67890cbb22392336fea1851f38"},
    /* RFC 9001 A.5: PN 654360564, header 4200bff4, payload one PING frame */
    {"RFC 9001 A.5", "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8",
     "e0459b3474bdd0e46d417eb0", "4200bff4", "01", "655e5cd55c41f69080575d7999c25a5bfb"},
};

static void test_known_answers(void)
{
    for (size_t v = 0; v < sizeof(kats) / sizeof(kats[0]); v++) {
        const struct kat *k = &kats[v];
        uint8_t key[32], nonce[16] = {0}, aad[64], pt[512], ct[512 + 16], buf[512], tag[16];
        struct qo_chacha20_key ck;
        size_t aad_len, len, ct_len;
        int r = 7;

        hex_must(key, 32, k->key);
        hex_must(nonce, 12, k->nonce);
        aad_len = hex_decode(aad, sizeof(aad), k->aad);
        len = hex_decode(pt, sizeof(pt), k->pt);
        ct_len = hex_decode(ct, sizeof(ct), k->ct_tag);
        if (!ok(ct_len == len + 16, "%s: vector lengths", k->name))
            continue;
        /* the vector is OpenSSL's answer too */
        evp_seal(key, nonce, aad, aad_len, pt, len, buf, tag);
        ok(memcmp(buf, ct, len) == 0 && memcmp(tag, ct + len, 16) == 0, "%s: EVP agrees", k->name);

        qo_chacha20_key_init(&ck, key);
        qo_aead_op_t o = {
            .ctx = &ck, .aad = aad, .aad_len = aad_len, .data = buf, .len = len, .tag = tag};
        memcpy(o.nonce, nonce, 12);
        memcpy(buf, pt, len);
        qo_chacha20_poly1305_seal_burst(&o, 1, &r);
        ok(r == 0, "%s: seal", k->name);
        ok(memcmp(buf, ct, len) == 0, "%s: ciphertext", k->name);
        ok(memcmp(tag, ct + len, 16) == 0, "%s: tag", k->name);
        r = 7;
        qo_chacha20_poly1305_open_burst(&o, 1, &r);
        ok(r == 0 && memcmp(buf, pt, len) == 0, "%s: open", k->name);
        qo_secure_zero(&ck, sizeof(ck));
    }
}

/* ------------------------------------------------------------------------ */
/* Against EVP                                                               */

#define MAXB 33
#define GUARD 64 /* bytes around every packet: nothing may be written there */
#define NKEYS 4

/* One packet: its own buffer aad | data | tag with guards, misaligned at
 * random; the plaintext and EVP's output beside it. */
struct tpkt {
    uint8_t *mem;
    size_t mem_len;
    uint8_t *aad, *data, *tag;
    size_t aad_len, len;
    unsigned key;
    uint8_t nonce[16];
    uint8_t *pt, *ct, ref_tag[16];
};

static uint8_t raw_keys[NKEYS][32];
static struct qo_chacha20_key keys[NKEYS];

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
    memset(p->nonce, 0, sizeof(p->nonce));
    test_fill(p->nonce, 12);
    test_fill(p->aad, aad_len);
    p->pt = test_xmalloc(len);
    p->ct = test_xmalloc(len);
    test_fill(p->pt, len);
    memcpy(p->data, p->pt, len);
    evp_seal(raw_keys[key], p->nonce, p->aad, aad_len, p->pt, len, p->ct, p->ref_tag);
}

static void tpkt_free(struct tpkt *p)
{
    free(p->mem);
    free(p->pt);
    free(p->ct);
}

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

static qo_aead_op_t op_of(const struct tpkt *p, void *ctx)
{
    qo_aead_op_t o = {.ctx = ctx,
                      .aad = p->aad,
                      .aad_len = p->aad_len,
                      .data = p->data,
                      .len = p->len,
                      .tag = p->tag};
    memcpy(o.nonce, p->nonce, 16);
    return o;
}

/* How the tests reach the AEAD: straight, or through a backend's table. */
struct path {
    const char *name;
    const qo_aead_algo_t *algo; /* NULL: chacha20_poly1305.h directly */
    void *wstate;               /* the bursts' worker state (a job manager) */
    void *ctx[NKEYS];
};

static void path_seal(const struct path *pa, qo_aead_op_t *ops, unsigned n, int res[], int one)
{
    if (pa->algo == NULL) {
        qo_chacha20_poly1305_seal_burst(ops, n, res);
    } else if (one) {
        for (unsigned i = 0; i < n; i++)
            res[i] = pa->algo->seal(ops[i].ctx, ops[i].nonce, ops[i].aad, ops[i].aad_len,
                                    ops[i].data, ops[i].len, ops[i].tag);
    } else {
        pa->algo->seal_burst(pa->wstate, ops, n, res);
    }
}

static uint8_t scratch[QO_SCRATCH_LEN];

static void path_open(const struct path *pa, qo_aead_op_t *ops, unsigned n, int res[], int one)
{
    if (pa->algo == NULL) {
        qo_chacha20_poly1305_open_burst(ops, n, res);
    } else if (one) {
        for (unsigned i = 0; i < n; i++)
            res[i] = pa->algo->open(ops[i].ctx, ops[i].nonce, ops[i].aad, ops[i].aad_len,
                                    ops[i].data, ops[i].len, ops[i].tag, scratch);
    } else {
        pa->algo->open_burst(pa->wstate, ops, n, res);
    }
}

/* Seals and opens a burst of n packets (one call each way, or packet by
 * packet with `one`), with `forge` of them tampered before the open.
 * Returns 1 when everything matched. */
static int run_burst(const struct path *pa, struct tpkt *p, unsigned n, unsigned forge, int one)
{
    qo_aead_op_t ops[MAXB];
    int res[MAXB], good = 1;
    int forged[MAXB] = {0};
    uint8_t *before[MAXB] = {0};

    for (unsigned i = 0; i < n; i++) {
        ops[i] = op_of(&p[i], pa->ctx[p[i].key]);
        res[i] = 7;
    }
    path_seal(pa, ops, n, res, one);
    for (unsigned i = 0; i < n; i++) {
        if (res[i] != 0 || memcmp(p[i].data, p[i].ct, p[i].len) != 0 ||
            memcmp(p[i].tag, p[i].ref_tag, 16) != 0 || !guards_intact(&p[i])) {
            fprintf(stderr, "#   seal differs: packet %u of %u, aad %zu, len %zu\n", i, n,
                    p[i].aad_len, p[i].len);
            good = 0;
        }
    }
    for (unsigned f = 0; f < forge; f++) {
        unsigned i = (unsigned)(test_rnd() % n);
        if (forged[i])
            continue;
        forged[i] = 1;
        /* what to tamper with: the tag, a ciphertext byte, an AAD byte or
         * the nonce (the first of those the packet has) */
        unsigned what = (unsigned)(test_rnd() % 4);
        if (what == 1 && p[i].len == 0)
            what = 2;
        if (what == 2 && p[i].aad_len == 0)
            what = 3;
        if (what == 0)
            p[i].tag[test_rnd() % 16] ^= (uint8_t)(1u << (test_rnd() % 8));
        else if (what == 1)
            p[i].data[test_rnd() % p[i].len] ^= 1;
        else if (what == 2)
            p[i].aad[test_rnd() % p[i].aad_len] ^= 0x80;
        else
            ops[i].nonce[test_rnd() % 12] ^= 0x10;
        before[i] = test_xmalloc(p[i].len);
        memcpy(before[i], p[i].data, p[i].len);
    }
    for (unsigned i = 0; i < n; i++)
        res[i] = 7;
    path_open(pa, ops, n, res, one);
    for (unsigned i = 0; i < n; i++) {
        int want = forged[i] ? -1 : 0;
        const uint8_t *bytes = forged[i] ? before[i] : p[i].pt;
        if (res[i] != want || memcmp(p[i].data, bytes, p[i].len) != 0 || !guards_intact(&p[i])) {
            fprintf(stderr,
                    "#   open differs: packet %u of %u (%s), aad %zu, len %zu, result %d\n", i, n,
                    forged[i] ? "forged" : "genuine", p[i].aad_len, p[i].len, res[i]);
            good = 0;
        }
        free(before[i]);
    }
    return good;
}

static const struct path *cur_path;

/* Every length 0..300 alone, then random lengths to 1,500 alone. */
static void test_lengths(void)
{
    int good = 1;
    for (size_t len = 0; len <= 1500; len += len < 300 ? 1 : 1 + test_rnd() % 40) {
        struct tpkt p;
        tpkt_new(&p, test_rnd() % 301, len, (unsigned)(test_rnd() % NKEYS));
        good &= run_burst(cur_path, &p, 1, 0, 0);
        tpkt_free(&p);
    }
    ok(good, "%s: lengths 0..300 and random to 1,500, AAD 0..300, seal and open", cur_path->name);
}

static size_t rnd_len(void)
{
    switch (test_rnd() % 4) {
    case 0:
        return test_rnd() % 64;
    case 1:
        return 60 + test_rnd() % 10; /* around one block */
    case 2:
        return test_rnd() % 300;
    default:
        return test_rnd() % 1501;
    }
}

/* Bursts of 1..33: lanes partly filled, several passes, a second chunk. */
static void test_bursts(void)
{
    int good = 1;
    for (int round = 0; round < 6; round++) {
        for (unsigned n = 1; n <= MAXB; n++) {
            struct tpkt p[MAXB];
            unsigned mode = (unsigned)(test_rnd() % 3); /* one key, a few, one per packet */
            for (unsigned i = 0; i < n; i++)
                tpkt_new(&p[i], test_rnd() % 64, rnd_len(),
                         mode == 0   ? 0
                         : mode == 1 ? (unsigned)(test_rnd() % 2)
                                     : i % NKEYS);
            good &= run_burst(cur_path, p, n, round % 2 ? 1 + (unsigned)(test_rnd() % 4) : 0, 0);
            for (unsigned i = 0; i < n; i++)
                tpkt_free(&p[i]);
        }
    }
    ok(good, "%s: bursts of 1..33, mixed lengths and keys, forged packets mid-burst",
       cur_path->name);
}

/* All the same length: every lane of a pass is a different packet's block
 * at the same offset (short) or one packet's blocks (long). */
static void test_uniform_bursts(void)
{
    static const size_t lens[] = {0,   1,   15,  16,  17,  31,  32,   33,   63,   64,   65,  127,
                                  128, 129, 255, 256, 511, 512, 1023, 1024, 1025, 1400, 1500};
    int good = 1;
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        for (unsigned n = 1; n <= MAXB; n += 1 + (unsigned)(test_rnd() % 5)) {
            struct tpkt p[MAXB];
            for (unsigned i = 0; i < n; i++)
                tpkt_new(&p[i], 1 + test_rnd() % 30, lens[k], (unsigned)(test_rnd() % NKEYS));
            good &= run_burst(cur_path, p, n, n / 3, 0);
            for (unsigned i = 0; i < n; i++)
                tpkt_free(&p[i]);
        }
    }
    ok(good, "%s: bursts of one length (0..1500), forged ones among them", cur_path->name);
}

/* The single-packet calls of a backend: a burst of one. */
static void test_single_calls(void)
{
    int good = 1;
    for (int round = 0; round < 40; round++) {
        struct tpkt p[4];
        for (unsigned i = 0; i < 4; i++)
            tpkt_new(&p[i], test_rnd() % 64, rnd_len(), (unsigned)(test_rnd() % NKEYS));
        good &= run_burst(cur_path, p, 4, round % 2 ? 2 : 0, 1);
        for (unsigned i = 0; i < 4; i++)
            tpkt_free(&p[i]);
    }
    ok(good, "%s: seal/open packet by packet, forged ones restored", cur_path->name);
}

/* AAD, data and tag each in an allocation of exactly its size, so that a
 * read or write past any of them is caught under AddressSanitizer (the
 * other tests' guard bytes catch only writes). */
static void test_exact_buffers(void)
{
    int good = 1;
    for (unsigned round = 0; round < 12; round++) {
        unsigned n = 1 + round * 3 % 33;
        qo_aead_op_t ops[MAXB];
        uint8_t *pt[MAXB];
        int res[MAXB];
        for (unsigned i = 0; i < n; i++) {
            size_t aad_len = test_rnd() % 80, len = rnd_len();
            uint8_t *aad = test_xmalloc(aad_len), *data = test_xmalloc(len),
                    *tag = test_xmalloc(16);
            test_fill(aad, aad_len);
            test_fill(data, len);
            pt[i] = test_xmalloc(len);
            memcpy(pt[i], data, len);
            ops[i] = (qo_aead_op_t){.ctx = cur_path->ctx[i % NKEYS],
                                    .aad = aad,
                                    .aad_len = aad_len,
                                    .data = data,
                                    .len = len,
                                    .tag = tag};
            test_fill(ops[i].nonce, 12);
        }
        path_seal(cur_path, ops, n, res, 0);
        if (n > 1)
            ops[n / 2].tag[0] ^= 1;
        path_open(cur_path, ops, n, res, 0);
        for (unsigned i = 0; i < n; i++) {
            int forged = n > 1 && i == n / 2;
            good &= res[i] == (forged ? -1 : 0);
            good &= forged || memcmp(ops[i].data, pt[i], ops[i].len) == 0;
            free((void *)ops[i].aad);
            free(ops[i].data);
            free(ops[i].tag);
            free(pt[i]);
        }
    }
    ok(good, "%s: AAD, data and tag in buffers of exactly their size", cur_path->name);
}

static void run_paths(const char *impl)
{
    static char names[2][64];
    struct path direct = {.name = names[0]};
    snprintf(names[0], sizeof(names[0]), "%s lanes", impl);
    for (unsigned k = 0; k < NKEYS; k++)
        direct.ctx[k] = &keys[k];
    cur_path = &direct;
    subtest(names[0], test_lengths);
    subtest(names[0], test_bursts);
    subtest(names[0], test_uniform_bursts);
    subtest(names[0], test_exact_buffers);

#ifdef QUICOFF_HAVE_IPSECMB
    const qo_aead_algo_t *a = qo_backend_ipsecmb.aead[QUICOFF_CHACHA20_POLY1305];
    if (!qo_backend_ipsecmb.available()) {
        ok(1, "skipped: ipsec-mb backend not usable on this CPU");
        return;
    }
    struct path be = {.name = names[1], .algo = a};
    static uint8_t ctxmem[NKEYS][256] __attribute__((aligned(64)));
    snprintf(names[1], sizeof(names[1]), "%s ipsec-mb backend", impl);
    for (unsigned k = 0; k < NKEYS; k++) {
        ok(a->ctx_size <= sizeof(ctxmem[k]) && a->setup(ctxmem[k], raw_keys[k]) == 0, "setup");
        be.ctx[k] = ctxmem[k];
    }
    cur_path = &be;
    subtest(names[1], test_bursts);
    subtest(names[1], test_uniform_bursts);
    subtest(names[1], test_single_calls);
    /* the engine's way: bursts with the worker's job manager, which the
     * long packets use where the lanes are not the AVX-512 + IFMA ones */
    snprintf(names[1], sizeof(names[1]), "%s ipsec-mb backend, worker", impl);
    ok(qo_backend_ipsecmb.worker_init(&be.wstate) == 0, "worker state");
    subtest(names[1], test_bursts);
    subtest(names[1], test_uniform_bursts);
    subtest(names[1], test_exact_buffers);
    qo_backend_ipsecmb.worker_fini(be.wstate);
    for (unsigned k = 0; k < NKEYS; k++)
        a->dispose(ctxmem[k]);
#else
    ok(1, "skipped: built without intel-ipsec-mb, its backend not tested");
#endif
}

int main(void)
{
    *test_rng() = 0x9e3779b97f4a7c15u; /* the data this test always had */
    static const char *const impls[] = {"avx512", "avx2", "c"};

    for (unsigned k = 0; k < NKEYS; k++) {
        test_fill(raw_keys[k], 32);
        qo_chacha20_key_init(&keys[k], raw_keys[k]);
    }
    for (size_t m = 0; m < sizeof(impls) / sizeof(impls[0]); m++) {
        if (!impls[m]) /* never: it tells GCC under UBSan (-Wformat-overflow) */
            continue;
        if (qo_chacha20_hp_masks_use(impls[m]) != 0) {
            printf("# SKIPPED: %s lanes: this CPU/build lacks them\n", impls[m]);
            fprintf(stderr, "# SKIPPED: %s lanes: this CPU/build lacks them\n", impls[m]);
            continue;
        }
        ok(strcmp(qo_chacha20_hp_masks_impl(), impls[m]) == 0, "%s forced", impls[m]);
        if (strcmp(impls[m], "avx512") == 0 && !qo_poly1305_available(QO_POLY1305_IFMA)) {
            printf("# SKIPPED: Poly1305 in AVX-512 IFMA lanes: this CPU lacks IFMA "
                   "(avx512 runs the AVX2 Poly1305 lanes)\n");
            fprintf(stderr, "# SKIPPED: Poly1305 in AVX-512 IFMA lanes: CPU lacks IFMA\n");
        }
        subtest(impls[m], test_known_answers);
        run_paths(impls[m]);
    }
    return done_testing();
}
