/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Backend against backend: every native backend (today "ipsec-mb", in its
 * two variants: with gcm_vaes.c's AES-GCM on CPUs that have VAES, and with
 * ipsec-mb's own) must give
 * exactly the bytes of the OpenSSL backend, which test_crypto.c checks
 * against RFC and independent vectors.
 *
 *  - every suite, payload sizes 0, 1, 15, 16, 17, 64, 1400, 1500 (and a few
 *    more for CCM's block handling), AAD lengths from 0 to 300 (CCM's AAD
 *    length field and ipsec-mb's 46-byte job limit on either side): seal is
 *    byte-identical (ciphertext and tag), each opens the other's output;
 *  - forged tag, ciphertext, AAD or nonce: open returns -1 and leaves every
 *    byte as received (data and tag);
 *  - header protection: 1000 random samples per algorithm give the same
 *    masks, and mask_burst (every implementation this CPU has, bursts of 1 to
 *    40 with a different key per packet) equals mask();
 *  - the ChaCha20 block function against OpenSSL's EVP_chacha20 and RFC 8439
 *    §2.3.2;
 *  - ChaCha20-Poly1305 on threads other than the one that set the key up:
 *    seal/open (no job manager), and seal_burst/open_burst on the thread's
 *    own job manager (the backend's worker_init, as a quicoff_worker owns
 *    it) and without one (NULL), forged tags restored, == OpenSSL.
 *
 * Without ipsec-mb in the build or on this CPU the ipsec-mb parts are
 * skipped (reported, not failed).
 */
#include "chacha20.h"
#include "crypto.h"
#include "test_util.h"

#include <openssl/evp.h>
#include <pthread.h>

static uint8_t scratch[QO_SCRATCH_LEN];

/* Deterministic xorshift so a failure reproduces. */
/* A context as the table gives one: 64-byte aligned, ctx_size rounded up. */
static void *ctx_new(size_t size)
{
    void *p = aligned_alloc(64, (size + 63) & ~(size_t)63);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

static const qo_backend_t *ossl, *native;

static const size_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 64, 255, 1400, 1500, 4097};
static const size_t aad_lens[] = {0, 1, 13, 14, 15, 25, 46, 47, 55, 300};

/* ------------------------------------------------------------------------ */

static void test_choice(void)
{
    ok(ossl != NULL, "openssl backend present");
#ifdef QUICOFF_HAVE_IPSECMB
    if (native == NULL) {
        ok(qo_backend_find("auto") == ossl, "ipsec-mb unavailable on this CPU: auto = openssl");
        return;
    }
    ok(strcmp(native->name, "ipsec-mb") == 0, "ipsec-mb by name");
    ok(qo_backend_find("auto") == native && qo_backend_find(NULL) == native,
       "auto prefers ipsec-mb");
#else
    ok(native == NULL && qo_backend_find("auto") == ossl,
       "built without ipsec-mb: auto = openssl");
#endif
    ok(qo_backend_find("no-such-backend") == NULL, "unknown name");
}

/* One (suite, size, aad) case: seal both ways, compare, cross-open, forge. */
static int aead_case(quicoff_suite_t suite, size_t len, size_t aad_len)
{
    const qo_aead_algo_t *a = ossl->aead[suite], *b = native->aead[suite];
    void *ca = ctx_new(a->ctx_size), *cb = ctx_new(b->ctx_size);
    uint8_t key[32], nonce[QUICOFF_IV_LEN],
        *aad = malloc(aad_len + 1), *pt = malloc(len + 1), *xa = malloc(len + 1),
        *xb = malloc(len + 1), *y = malloc(len + 1), *f = malloc(len + 1), tag_a[16], tag_b[16],
        tag_y[16];
    int good = 1;

    test_fill(key, sizeof(key));
    test_fill(nonce, sizeof(nonce));
    test_fill(aad, aad_len);
    test_fill(pt, len);
    memcpy(xa, pt, len);
    memcpy(xb, pt, len);
    if (a->setup(ca, key) != 0 || b->setup(cb, key) != 0)
        good = 0;
    good &= a->seal(ca, nonce, aad, aad_len, xa, len, tag_a) == 0;
    good &= b->seal(cb, nonce, aad, aad_len, xb, len, tag_b) == 0;
    good &= memcmp(xa, xb, len) == 0 && memcmp(tag_a, tag_b, 16) == 0;
    if (!good)
        printf("# %s len %zu aad %zu: seal differs: openssl %s|%s ipsec-mb %s|%s\n", a->name, len,
               aad_len, hex_str(xa, len < 32 ? len : 32), hex_str(tag_a, 16),
               hex_str(xb, len < 32 ? len : 32), hex_str(tag_b, 16));

    /* Cross open: native opens OpenSSL's output and vice versa. */
    memcpy(y, xa, len);
    good &= b->open(cb, nonce, aad, aad_len, y, len, tag_a, scratch) == 0 &&
            memcmp(y, pt, len) == 0;
    memcpy(y, xb, len);
    good &= a->open(ca, nonce, aad, aad_len, y, len, tag_b, scratch) == 0 &&
            memcmp(y, pt, len) == 0;

    /* Forgeries against both backends: -1, data and tag as received. */
    const qo_aead_algo_t *algos[2] = {a, b};
    void *ctxs[2] = {ca, cb};
    for (int k = 0; k < 2; k++) {
        uint8_t n2[QUICOFF_IV_LEN], *aad2 = malloc(aad_len + 1);
        memcpy(tag_y, tag_a, 16);
        tag_y[test_rnd() % 16] ^= (uint8_t)(1u << (test_rnd() % 8));
        memcpy(y, xa, len);
        good &= algos[k]->open(ctxs[k], nonce, aad, aad_len, y, len, tag_y, scratch) == -1 &&
                memcmp(y, xa, len) == 0;
        if (len > 0) {
            memcpy(y, xa, len);
            y[test_rnd() % len] ^= (uint8_t)(1u << (test_rnd() % 8));
            memcpy(f, y, len); /* the forged bytes, to compare with */
            memcpy(tag_y, tag_a, 16);
            good &= algos[k]->open(ctxs[k], nonce, aad, aad_len, y, len, tag_y, scratch) == -1 &&
                    memcmp(y, f, len) == 0 && memcmp(tag_y, tag_a, 16) == 0;
        }
        if (aad_len > 0) {
            memcpy(aad2, aad, aad_len);
            aad2[test_rnd() % aad_len] ^= 0x80;
            memcpy(y, xa, len);
            good &= algos[k]->open(ctxs[k], nonce, aad2, aad_len, y, len, tag_a, scratch) == -1 &&
                    memcmp(y, xa, len) == 0;
        }
        memcpy(n2, nonce, sizeof(n2));
        n2[test_rnd() % sizeof(n2)] ^= 1;
        memcpy(y, xa, len);
        good &= algos[k]->open(ctxs[k], n2, aad, aad_len, y, len, tag_a, scratch) == -1 &&
                memcmp(y, xa, len) == 0;
        /* and the genuine packet still opens after the failures */
        memcpy(y, xa, len);
        good &= algos[k]->open(ctxs[k], nonce, aad, aad_len, y, len, tag_a, scratch) == 0 &&
                memcmp(y, pt, len) == 0;
        free(aad2);
    }

    a->dispose(ca);
    b->dispose(cb);
    free(ca);
    free(cb);
    free(pt);
    free(xa);
    free(xb);
    free(y);
    free(f);
    free(aad);
    return good;
}

static void test_aead(void)
{
    if (native == NULL) {
        ok(1, "skipped: no native backend");
        return;
    }
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            int good = 1;
            for (size_t j = 0; j < sizeof(aad_lens) / sizeof(aad_lens[0]); j++)
                for (int rep = 0; rep < 3; rep++)
                    good &= aead_case((quicoff_suite_t)s, sizes[i], aad_lens[j]);
            ok(good, "%s len %zu: seal == openssl, cross open, forgeries -1 and unchanged",
               quicoff_suite_name((quicoff_suite_t)s), sizes[i]);
        }
    }
    /* CCM's longest: L = 3 allows < 2^24; QUIC's 64 KiB is far below. */
    ok(aead_case(QUICOFF_AES_128_CCM, 65535, 13), "aes-128-ccm len 65535");
    /* CCM's AAD length field: 2 bytes below 0xff00, 0xfffe + 4 bytes from there. */
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++)
        ok(aead_case((quicoff_suite_t)s, 100, 0xfeff) &&
               aead_case((quicoff_suite_t)s, 17, 0xff00) &&
               aead_case((quicoff_suite_t)s, 0, 70001),
           "%s: AAD 0xfeff, 0xff00, 70001 bytes", quicoff_suite_name((quicoff_suite_t)s));
}

/* ------------------------------------------------------------------------ */

#define HP_KEYS 8
#define HP_SAMPLES 1000

static void test_hp(void)
{
    static const quicoff_suite_t hp_suites[] = {QUICOFF_AES_128_GCM, QUICOFF_AES_256_GCM,
                                                QUICOFF_CHACHA20_POLY1305};
    static const char *const impls[] = {"c", "avx2", "avx512"};

    if (native == NULL) {
        ok(1, "skipped: no native backend");
        return;
    }
    ok(native->hp[QUICOFF_AES_128_CCM] == native->hp[QUICOFF_AES_128_GCM], "CCM uses AES-128 HP");
    for (size_t s = 0; s < sizeof(hp_suites) / sizeof(hp_suites[0]); s++) {
        const qo_hp_algo_t *a = ossl->hp[hp_suites[s]], *b = native->hp[hp_suites[s]];
        void *ca[HP_KEYS], *cb[HP_KEYS];
        static uint8_t samples[HP_SAMPLES][16];
        static uint8_t want[HP_SAMPLES][5], got[HP_SAMPLES][5];
        void *bctx[HP_SAMPLES];
        const uint8_t *sp[HP_SAMPLES];
        int good = 1;

        ok(strcmp(a->name, b->name) == 0, "%s descriptor", b->name);
        for (int k = 0; k < HP_KEYS; k++) {
            uint8_t key[32];
            test_fill(key, sizeof(key));
            ca[k] = ctx_new(a->ctx_size);
            cb[k] = ctx_new(b->ctx_size);
            good &= a->setup(ca[k], key) == 0 && b->setup(cb[k], key) == 0;
        }
        for (int i = 0; i < HP_SAMPLES; i++) {
            int k = (int)(test_rnd() % HP_KEYS);
            test_fill(samples[i], 16);
            good &= a->mask(ca[k], samples[i], want[i]) == 0;
            good &= b->mask(cb[k], samples[i], got[i]) == 0;
            bctx[i] = cb[k];
            sp[i] = samples[i];
        }
        ok(good && memcmp(want, got, sizeof(want)) == 0, "%s: %d masks == openssl", b->name,
           HP_SAMPLES);

        ok(b->mask_burst != NULL, "%s has mask_burst", b->name);
        for (size_t m = 0; m < sizeof(impls) / sizeof(impls[0]) && b->mask_burst; m++) {
            int is_chacha = hp_suites[s] == QUICOFF_CHACHA20_POLY1305;
            if (is_chacha && qo_chacha20_hp_masks_use(impls[m]) != 0) {
                printf("# %s: no %s on this CPU, skipped\n", b->name, impls[m]);
                continue;
            }
            if (!is_chacha && m > 0)
                break; /* one AES-NI implementation */
            int bgood = 1;
            /* bursts of every size 1..40 over consecutive samples, then one big one */
            unsigned at = 0;
            memset(got, 0, sizeof(got));
            for (unsigned n = 1; n <= 40 && at + n <= HP_SAMPLES; at += n, n++)
                bgood &= b->mask_burst(bctx + at, sp + at, got + at, n) == 0;
            bgood &= b->mask_burst(bctx + at, sp + at, got + at, HP_SAMPLES - at) == 0;
            bgood &= b->mask_burst(bctx, sp, got, 0) == 0;
            ok(bgood && memcmp(want, got, sizeof(want)) == 0, "%s mask_burst (%s) == mask",
               b->name, is_chacha ? impls[m] : "aes-ni");
        }
        /* back to the best one */
        if (qo_chacha20_hp_masks_use("avx512") != 0 && qo_chacha20_hp_masks_use("avx2") != 0)
            qo_chacha20_hp_masks_use("c");
        for (int k = 0; k < HP_KEYS; k++) {
            a->dispose(ca[k]);
            b->dispose(cb[k]);
            free(ca[k]);
            free(cb[k]);
        }
    }
}

/* ------------------------------------------------------------------------ */

static void test_chacha20_block(void)
{
    /* RFC 8439 §2.3.2 */
    static const char *const rfc_key =
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    static const char *const rfc_nonce = "000000090000004a00000000";
    static const char *const rfc_out =
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e";
    uint8_t key[32], nonce[12], out[64], ref[64], zeros[64] = {0};
    struct qo_chacha20_key k;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    int good = 1, outl;

    hex_must(key, sizeof(key), rfc_key);
    hex_must(nonce, sizeof(nonce), rfc_nonce);
    qo_chacha20_key_init(&k, key);
    qo_chacha20_block(&k, 1, nonce, out);
    ok_hex(out, 64, rfc_out, "RFC 8439 2.3.2 block");

    for (int i = 0; i < 1000 && c != NULL; i++) {
        uint8_t iv[16];
        test_fill(key, sizeof(key));
        test_fill(iv, sizeof(iv));
        if (i == 0)
            memset(iv, 0xff, 4); /* counter 2^32 - 1 */
        qo_chacha20_key_init(&k, key);
        /* OpenSSL's 16-byte IV: 32-bit counter (little-endian) || nonce */
        good &= EVP_EncryptInit_ex(c, EVP_chacha20(), NULL, key, iv) == 1 &&
                EVP_EncryptUpdate(c, ref, &outl, zeros, 64) == 1;
        qo_chacha20_block(&k,
                          (uint32_t)iv[0] | (uint32_t)iv[1] << 8 | (uint32_t)iv[2] << 16 |
                              (uint32_t)iv[3] << 24,
                          iv + 4, out);
        good &= memcmp(out, ref, 64) == 0;
    }
    ok(c != NULL && good, "1000 random blocks == EVP_chacha20");

    /* The one-block HP mask in every implementation this CPU has. */
    static const char *const impls[] = {"c", "avx2", "avx512"};
    for (size_t m = 0; m < sizeof(impls) / sizeof(impls[0]) && c != NULL; m++) {
        if (qo_chacha20_hp_masks_use(impls[m]) != 0)
            continue;
        good = 1;
        for (int i = 0; i < 1000; i++) {
            uint8_t iv[16], mask[5];
            test_fill(key, sizeof(key));
            test_fill(iv, sizeof(iv));
            if (i == 0)
                memset(iv, 0xff, 4);
            qo_chacha20_key_init(&k, key);
            good &= EVP_EncryptInit_ex(c, EVP_chacha20(), NULL, key, iv) == 1 &&
                    EVP_EncryptUpdate(c, ref, &outl, zeros, 5) == 1;
            qo_chacha20_hp_mask(&k, iv, mask);
            good &= memcmp(mask, ref, 5) == 0;
        }
        ok(good, "1000 HP masks (%s) == EVP_chacha20", impls[m]);
    }
    if (qo_chacha20_hp_masks_use("avx512") != 0 && qo_chacha20_hp_masks_use("avx2") != 0)
        qo_chacha20_hp_masks_use("c");
    EVP_CIPHER_CTX_free(c);
}

/* ------------------------------------------------------------------------ */

struct thread_arg {
    const qo_aead_algo_t *algo;
    void *ctx;
    uint64_t seed;
    int good;
};

static void *chacha_thread(void *p)
{
    struct thread_arg *t = p;
    const qo_aead_algo_t *o = ossl->aead[QUICOFF_CHACHA20_POLY1305];
    static _Thread_local uint8_t buf[1500], ref[1500], s[QO_SCRATCH_LEN];
    uint8_t nonce[12] = {0}, tag[16], rtag[16], aad[20] = {1, 2, 3};
    uint8_t key[32];
    void *oc = ctx_new(o->ctx_size), *mgr = NULL;

    t->good = 1;
    memset(key, 0x42, sizeof(key));
    t->good &= o->setup(oc, key) == 0;
    t->good &= native->worker_init == NULL || native->worker_init(&mgr) == 0;
    for (int i = 0; i < 300; i++) {
        size_t len = (size_t)(t->seed * (i + 1)) % sizeof(buf);
        int how = i % 3; /* 0: seal/open, 1: bursts on mgr, 2: bursts without */
        int res = 12345;
        memcpy(nonce, &i, sizeof(i));
        memset(buf, i, len);
        memset(ref, i, len);
        qo_aead_op_t op = {.ctx = t->ctx,
                           .aad = aad,
                           .data = buf,
                           .tag = tag,
                           .aad_len = sizeof(aad),
                           .len = len};
        memcpy(op.nonce, nonce, sizeof(nonce));
        if (how == 0)
            res = t->algo->seal(t->ctx, nonce, aad, sizeof(aad), buf, len, tag);
        else
            t->algo->seal_burst(how == 1 ? mgr : NULL, &op, 1, &res);
        t->good &= res == 0;
        t->good &= o->seal(oc, nonce, aad, sizeof(aad), ref, len, rtag) == 0;
        t->good &= memcmp(buf, ref, len) == 0 && memcmp(tag, rtag, 16) == 0;
        if (i % 7 == 3)
            tag[i % 16] ^= 0x20; /* forged: -1, bytes as received */
        res = 12345;
        if (how == 0)
            res = t->algo->open(t->ctx, nonce, aad, sizeof(aad), buf, len, tag, s);
        else
            t->algo->open_burst(how == 1 ? mgr : NULL, &op, 1, &res);
        t->good &= i % 7 == 3 ? res == -1 && memcmp(buf, ref, len) == 0 : res == 0;
    }
    if (native->worker_fini)
        native->worker_fini(mgr);
    o->dispose(oc);
    free(oc);
    return NULL;
}

static void test_threads(void)
{
    const qo_aead_algo_t *algo;
    struct thread_arg args[3];
    pthread_t th[3];
    uint8_t key[32];

    if (native == NULL) {
        ok(1, "skipped: no native backend");
        return;
    }
    algo = native->aead[QUICOFF_CHACHA20_POLY1305];
    memset(key, 0x42, sizeof(key));
    /* Contexts set up here, used on other threads (one each, as the table does). */
    for (int i = 0; i < 3; i++) {
        args[i].algo = algo;
        args[i].ctx = ctx_new(algo->ctx_size);
        args[i].seed = 7919 * (uint64_t)(i + 1);
        ok(algo->setup(args[i].ctx, key) == 0, "setup %d", i);
    }
    for (int i = 0; i < 3; i++)
        ok(pthread_create(&th[i], NULL, chacha_thread, &args[i]) == 0, "thread %d started", i);
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        ok(args[i].good, "thread %d: chacha20-poly1305 == openssl, opens", i);
        algo->dispose(args[i].ctx);
        free(args[i].ctx);
    }
}

int main(void)
{
    *test_rng() = 0x9e3779b97f4a7c15u; /* the data this test always had */
    ossl = qo_backend_find("openssl");
    native = qo_backend_find("ipsec-mb");
    if (native == NULL)
        printf("# ipsec-mb backend not available (build or CPU): its checks are skipped\n");
    subtest("backend choice", test_choice);
    subtest("aead", test_aead);
    subtest("header protection", test_hp);
    subtest("chacha20 block", test_chacha20_block);
    subtest("threads", test_threads);
#ifdef QUICOFF_HAVE_IPSECMB
    /* Where "ipsec-mb" is the variant with gcm_vaes.c's GCM, the plain one
     * (ipsec-mb's GCM, used on CPUs without VAES) gets the AEAD checks too. */
    if (native == &qo_backend_ipsecmb_vaes && qo_backend_ipsecmb.available()) {
        native = &qo_backend_ipsecmb;
        subtest("aead (ipsec-mb without VAES GCM)", test_aead);
    }
#endif
    return done_testing();
}
