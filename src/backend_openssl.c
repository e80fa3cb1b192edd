/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Portable crypto backend on OpenSSL 3 EVP.
 *
 * Each context owns one EVP_CIPHER_CTX keyed in setup; the per-packet path
 * only loads the nonce (EVP_CipherInit_ex with cipher and key NULL), so there
 * is no key expansion, no fetch and no allocation per packet.
 *
 * EVP_CIPHER objects are fetched explicitly once per process.  Passing the
 * legacy EVP_aes_128_gcm() & co. to EVP_CipherInit_ex instead makes OpenSSL 3
 * do an implicit fetch (a locked method-store lookup) in every setup, which
 * nearly doubles the setup cost (about 560 vs 300 ns for AES-128-GCM on
 * OpenSSL 3.0); the per-packet path is the same either way.
 */
#include "crypto.h"

#include <limits.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <pthread.h>
#include <string.h>

enum {
    CIPHER_AES_128_GCM,
    CIPHER_AES_256_GCM,
    CIPHER_AES_128_CCM,
    CIPHER_CHACHA20_POLY1305,
    CIPHER_AES_128_ECB,
    CIPHER_AES_256_ECB,
    CIPHER_CHACHA20,
    CIPHER_COUNT
};

static const char *const cipher_names[CIPHER_COUNT] = {
    [CIPHER_AES_128_GCM] = "AES-128-GCM", [CIPHER_AES_256_GCM] = "AES-256-GCM",
    [CIPHER_AES_128_CCM] = "AES-128-CCM", [CIPHER_CHACHA20_POLY1305] = "ChaCha20-Poly1305",
    [CIPHER_AES_128_ECB] = "AES-128-ECB", [CIPHER_AES_256_ECB] = "AES-256-ECB",
    [CIPHER_CHACHA20] = "ChaCha20",
};

/* Fetched once, kept for the life of the process (a handful of small
 * reference-counted objects); a cipher the providers lack stays NULL and its
 * setup fails. */
static EVP_CIPHER *ciphers[CIPHER_COUNT];
static pthread_once_t ciphers_once = PTHREAD_ONCE_INIT;

static void fetch_ciphers(void)
{
    for (int i = 0; i < CIPHER_COUNT; i++)
        ciphers[i] = EVP_CIPHER_fetch(NULL, cipher_names[i], NULL);
}

static const EVP_CIPHER *get_cipher(int id)
{
    if (pthread_once(&ciphers_once, fetch_ciphers) != 0)
        return NULL;
    return ciphers[id];
}

/* A new EVP context for cipher `id`, keyed with `key` in the encrypt direction. */
static EVP_CIPHER_CTX *new_keyed_ctx(int id, const uint8_t *key, int is_ccm)
{
    const EVP_CIPHER *cipher = get_cipher(id);
    EVP_CIPHER_CTX *c;

    if (cipher == NULL || key == NULL || (c = EVP_CIPHER_CTX_new()) == NULL)
        return NULL;
    if (!EVP_CipherInit_ex(c, cipher, NULL, NULL, NULL, 1))
        goto fail;
    /* CCM defaults to a 7-byte nonce and a 12-byte tag; QUIC uses 12 and 16.
     * Both must be set before the key (EVP's CCM rule). */
    if (is_ccm && (!EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_IVLEN, QUICOFF_IV_LEN, NULL) ||
                   !EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, QUICOFF_TAG_LEN, NULL)))
        goto fail;
    if (!EVP_CipherInit_ex(c, NULL, NULL, key, NULL, 1))
        goto fail;
    /* ECB: exactly one block per call, never buffer a block for padding. */
    if (EVP_CIPHER_get_mode(cipher) == EVP_CIPH_ECB_MODE && !EVP_CIPHER_CTX_set_padding(c, 0))
        goto fail;
    return c;
fail:
    EVP_CIPHER_CTX_free(c);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* AEAD                                                                      */

/*
 * Some providers fix the direction when the key is set (AES-CCM with AES-NI
 * picks its encrypt- or decrypt-block routine; AES-GCM on s390x sets the KMA
 * function code), so a context keyed for sealing cannot simply be switched to
 * opening.  Setup keys for sealing and keeps a copy of the key; the first
 * call in the other direction re-keys (no allocation).  An entry only ever
 * protects or only unprotects, so that happens at most once per key.
 */
struct ossl_aead_ctx {
    EVP_CIPHER_CTX *evp;
    int enc; /* direction evp is keyed for */
    uint8_t key[QUICOFF_MAX_KEY_LEN];
};

static int aead_setup(void *vctx, const uint8_t *key, int id, size_t key_len)
{
    struct ossl_aead_ctx *ctx = vctx;

    memset(ctx, 0, sizeof(*ctx));
    if ((ctx->evp = new_keyed_ctx(id, key, id == CIPHER_AES_128_CCM)) == NULL)
        return -1;
    ctx->enc = 1;
    memcpy(ctx->key, key, key_len);
    return 0;
}

/* Loads the nonce for one packet; re-keys only on a change of direction. */
static int load_nonce(struct ossl_aead_ctx *ctx, const uint8_t nonce[QUICOFF_IV_LEN], int enc)
{
    if (ctx->enc == enc)
        return EVP_CipherInit_ex(ctx->evp, NULL, NULL, NULL, nonce, enc);
    if (!EVP_CipherInit_ex(ctx->evp, NULL, NULL, ctx->key, nonce, enc))
        return 0;
    ctx->enc = enc;
    return 1;
}

static int setup_aes128gcm(void *ctx, const uint8_t *key)
{
    return aead_setup(ctx, key, CIPHER_AES_128_GCM, 16);
}
static int setup_aes256gcm(void *ctx, const uint8_t *key)
{
    return aead_setup(ctx, key, CIPHER_AES_256_GCM, 32);
}
static int setup_aes128ccm(void *ctx, const uint8_t *key)
{
    return aead_setup(ctx, key, CIPHER_AES_128_CCM, 16);
}
static int setup_chacha20poly1305(void *ctx, const uint8_t *key)
{
    return aead_setup(ctx, key, CIPHER_CHACHA20_POLY1305, 32);
}

static void aead_dispose(void *vctx)
{
    struct ossl_aead_ctx *ctx = vctx;

    /* The providers clear their key schedules when the context is freed;
     * the zeroing below takes care of our key copy. */
    EVP_CIPHER_CTX_free(ctx->evp);
    qo_secure_zero(ctx, sizeof(*ctx));
}

/* Tag in and out through the provider parameters directly: on OpenSSL 3.0
 * EVP_CIPHER_CTX_ctrl builds the same OSSL_PARAM and costs ~20 ns more per
 * packet (about 8% of a 64-byte AES-128-GCM seal). */
static int get_tag(EVP_CIPHER_CTX *c, uint8_t tag[QUICOFF_TAG_LEN])
{
    OSSL_PARAM p[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, tag, QUICOFF_TAG_LEN),
        OSSL_PARAM_construct_end(),
    };
    return EVP_CIPHER_CTX_get_params(c, p);
}

static int set_tag(EVP_CIPHER_CTX *c, const uint8_t tag[QUICOFF_TAG_LEN])
{
    /* The provider copies the tag; the cast is OSSL_PARAM's signature, not a write. */
    OSSL_PARAM p[2] = {
        OSSL_PARAM_construct_octet_string(OSSL_CIPHER_PARAM_AEAD_TAG, (void *)tag,
                                          QUICOFF_TAG_LEN),
        OSSL_PARAM_construct_end(),
    };
    return EVP_CIPHER_CTX_set_params(c, p);
}

/* QUIC packets are far below INT_MAX; EVP takes int lengths. */
static int lengths_ok(size_t aad_len, size_t len)
{
    return aad_len <= INT_MAX && len <= INT_MAX;
}

/* GCM and ChaCha20-Poly1305: stream AEADs, tag computed in Final. */
static int stream_seal(void *vctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    struct ossl_aead_ctx *ctx = vctx;
    EVP_CIPHER_CTX *c = ctx->evp;
    uint8_t fin[QUICOFF_TAG_LEN]; /* Final writes nothing for AEADs; EVP wants a buffer */
    int outl;

    if (!lengths_ok(aad_len, len) || !load_nonce(ctx, nonce, 1))
        return -1;
    if (aad_len != 0 && !EVP_CipherUpdate(c, NULL, &outl, aad, (int)aad_len))
        return -1;
    if (len != 0 && !EVP_CipherUpdate(c, data, &outl, data, (int)len))
        return -1;
    if (!EVP_CipherFinal_ex(c, fin, &outl) || !get_tag(c, tag))
        return -1;
    return 0;
}

/*
 * Decrypts in place and checks the tag in Final.  OpenSSL has already written
 * the plaintext over the ciphertext by then, so on a mismatch the ciphertext
 * is restored by running the same keystream over it again (CTR and ChaCha20
 * encryption is an XOR with a keystream that depends only on key and nonce).
 * This keeps the success path at one pass and off the scratch buffer; the
 * alternative, decrypting into scratch and copying on success, adds a memcpy
 * to every good packet (~10 ns at 1400 B, plus 64 KiB more cache footprint)
 * to save work only on forged ones.
 */
static int stream_open(void *vctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                       uint8_t *scratch)
{
    struct ossl_aead_ctx *ctx = vctx;
    EVP_CIPHER_CTX *c = ctx->evp;
    uint8_t fin[QUICOFF_TAG_LEN];
    int outl;

    (void)scratch;
    if (!lengths_ok(aad_len, len) || !load_nonce(ctx, nonce, 0))
        return -1;
    if (!set_tag(c, tag))
        return -1;
    if (aad_len != 0 && !EVP_CipherUpdate(c, NULL, &outl, aad, (int)aad_len))
        return -1;
    /* Update only fails on argument checks, before writing anything, so
     * there is nothing to restore then. */
    if (len != 0 && !EVP_CipherUpdate(c, data, &outl, data, (int)len))
        return -1;
    if (EVP_CipherFinal_ex(c, fin, &outl) == 1)
        return 0;
    /* Same nonce, no AAD, no Final: just the keystream XOR, undoing the first pass. */
    if (len != 0 && EVP_CipherInit_ex(c, NULL, NULL, NULL, nonce, 0))
        EVP_CipherUpdate(c, data, &outl, data, (int)len);
    return -1;
}

/*
 * CCM: EVP needs the message length before the AAD, and on decryption the
 * tag before the data.  A single Update call must carry the whole message.
 */
static int ccm_seal(void *vctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                    size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    struct ossl_aead_ctx *ctx = vctx;
    EVP_CIPHER_CTX *c = ctx->evp;
    uint8_t fin[QUICOFF_TAG_LEN];
    int outl;

    if (!lengths_ok(aad_len, len) || !load_nonce(ctx, nonce, 1) ||
        !EVP_CipherUpdate(c, NULL, &outl, NULL, (int)len))
        return -1;
    if (aad_len != 0 && !EVP_CipherUpdate(c, NULL, &outl, aad, (int)aad_len))
        return -1;
    /* Even for len 0 the data call must happen: it computes the tag. A NULL
     * input would read as "set length", hence fin as a stand-in buffer. */
    if (!EVP_CipherUpdate(c, len ? data : fin, &outl, len ? data : fin, (int)len) ||
        !EVP_CipherFinal_ex(c, fin, &outl) || !get_tag(c, tag))
        return -1;
    return 0;
}

/*
 * OpenSSL's CCM wipes the output when the tag does not match, so it cannot
 * decrypt in place without losing the ciphertext: decrypt into scratch and
 * copy over only once the tag verified (the copy is ~1% of a CCM open).
 */
static int ccm_open(void *vctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                    size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                    uint8_t *scratch)
{
    struct ossl_aead_ctx *ctx = vctx;
    EVP_CIPHER_CTX *c = ctx->evp;
    uint8_t empty[1];
    int outl;

    if (scratch == NULL || len > QO_SCRATCH_LEN || aad_len > INT_MAX)
        return -1;
    if (!load_nonce(ctx, nonce, 0) || !set_tag(c, tag) ||
        !EVP_CipherUpdate(c, NULL, &outl, NULL, (int)len))
        return -1;
    if (aad_len != 0 && !EVP_CipherUpdate(c, NULL, &outl, aad, (int)aad_len))
        return -1;
    /* Fails (returns 0) exactly when the tag does not verify. */
    if (!EVP_CipherUpdate(c, scratch, &outl, len ? data : empty, (int)len))
        return -1;
    memcpy(data, scratch, len);
    return 0;
}

static const qo_aead_algo_t aes128gcm = {
    .name = "aes-128-gcm",
    .suite = QUICOFF_AES_128_GCM,
    .ctx_size = sizeof(struct ossl_aead_ctx),
    .setup = setup_aes128gcm,
    .dispose = aead_dispose,
    .seal = stream_seal,
    .open = stream_open,
};

static const qo_aead_algo_t aes256gcm = {
    .name = "aes-256-gcm",
    .suite = QUICOFF_AES_256_GCM,
    .ctx_size = sizeof(struct ossl_aead_ctx),
    .setup = setup_aes256gcm,
    .dispose = aead_dispose,
    .seal = stream_seal,
    .open = stream_open,
};

static const qo_aead_algo_t aes128ccm = {
    .name = "aes-128-ccm",
    .suite = QUICOFF_AES_128_CCM,
    .ctx_size = sizeof(struct ossl_aead_ctx),
    .setup = setup_aes128ccm,
    .dispose = aead_dispose,
    .seal = ccm_seal,
    .open = ccm_open,
};

static const qo_aead_algo_t chacha20poly1305 = {
    .name = "chacha20-poly1305",
    .suite = QUICOFF_CHACHA20_POLY1305,
    .ctx_size = sizeof(struct ossl_aead_ctx),
    .setup = setup_chacha20poly1305,
    .dispose = aead_dispose,
    .seal = stream_seal,
    .open = stream_open,
};

/* ------------------------------------------------------------------------ */
/* Header protection (RFC 9001 §5.4)                                         */

struct ossl_hp_ctx {
    EVP_CIPHER_CTX *evp;
};

static int hp_setup(void *vctx, const uint8_t *key, int id)
{
    struct ossl_hp_ctx *ctx = vctx;

    ctx->evp = new_keyed_ctx(id, key, 0);
    return ctx->evp != NULL ? 0 : -1;
}

static int setup_hp_aes128(void *ctx, const uint8_t *key)
{
    return hp_setup(ctx, key, CIPHER_AES_128_ECB);
}
static int setup_hp_aes256(void *ctx, const uint8_t *key)
{
    return hp_setup(ctx, key, CIPHER_AES_256_ECB);
}
static int setup_hp_chacha20(void *ctx, const uint8_t *key)
{
    return hp_setup(ctx, key, CIPHER_CHACHA20);
}

static void hp_dispose(void *vctx)
{
    struct ossl_hp_ctx *ctx = vctx;

    EVP_CIPHER_CTX_free(ctx->evp);
    qo_secure_zero(ctx, sizeof(*ctx));
}

/* §5.4.3: mask = AES-ECB(hp_key, sample)[0..5) */
static int hp_aes_mask(void *vctx, const uint8_t sample[QUICOFF_SAMPLE_LEN], uint8_t mask[5])
{
    EVP_CIPHER_CTX *c = ((struct ossl_hp_ctx *)vctx)->evp;
    uint8_t block[16];
    int outl;

    if (!EVP_EncryptUpdate(c, block, &outl, sample, QUICOFF_SAMPLE_LEN) || outl != 16)
        return -1;
    qo_hp_mask_from_block(mask, block);
    return 0;
}

/* §5.4.4: counter = sample[0..4) little-endian, nonce = sample[4..16), mask =
 * ChaCha20(hp_key, counter, nonce, {0,0,0,0,0}).  OpenSSL's 16-byte ChaCha20
 * IV is exactly counter (little-endian) || nonce, so the sample is the IV. */
static int hp_chacha20_mask(void *vctx, const uint8_t sample[QUICOFF_SAMPLE_LEN], uint8_t mask[5])
{
    static const uint8_t zeros[5];
    EVP_CIPHER_CTX *c = ((struct ossl_hp_ctx *)vctx)->evp;
    int outl;

    if (!EVP_CipherInit_ex(c, NULL, NULL, NULL, sample, 1) ||
        !EVP_EncryptUpdate(c, mask, &outl, zeros, (int)sizeof(zeros)))
        return -1;
    return 0;
}

static const qo_hp_algo_t hp_aes128 = {
    .name = "aes-128-ecb",
    .ctx_size = sizeof(struct ossl_hp_ctx),
    .setup = setup_hp_aes128,
    .dispose = hp_dispose,
    .mask = hp_aes_mask,
};

static const qo_hp_algo_t hp_aes256 = {
    .name = "aes-256-ecb",
    .ctx_size = sizeof(struct ossl_hp_ctx),
    .setup = setup_hp_aes256,
    .dispose = hp_dispose,
    .mask = hp_aes_mask,
};

static const qo_hp_algo_t hp_chacha20 = {
    .name = "chacha20",
    .ctx_size = sizeof(struct ossl_hp_ctx),
    .setup = setup_hp_chacha20,
    .dispose = hp_dispose,
    .mask = hp_chacha20_mask,
};

/* ------------------------------------------------------------------------ */

/* Always usable: OpenSSL picks its own CPU-specific code at run time. */
static int openssl_available(void)
{
    return 1;
}

const qo_backend_t qo_backend_openssl = {
    .name = "openssl",
    .available = openssl_available,
    .aead =
        {
            [QUICOFF_AES_128_GCM] = &aes128gcm,
            [QUICOFF_AES_256_GCM] = &aes256gcm,
            [QUICOFF_AES_128_CCM] = &aes128ccm,
            [QUICOFF_CHACHA20_POLY1305] = &chacha20poly1305,
        },
    .hp =
        {
            [QUICOFF_AES_128_GCM] = &hp_aes128,
            [QUICOFF_AES_256_GCM] = &hp_aes256,
            [QUICOFF_AES_128_CCM] = &hp_aes128,
            [QUICOFF_CHACHA20_POLY1305] = &hp_chacha20,
        },
};
