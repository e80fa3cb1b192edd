/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Crypto backend on intel-ipsec-mb (x86-64 with AES-NI), "ipsec-mb".
 *
 * Built only with QUICOFF_HAVE_IPSECMB (meson and the cffi build define it
 * when libIPSec_MB and its header are found); "auto" prefers it when the CPU
 * has AES-NI + PCLMULQDQ + SSE4.1 and the library initialises, and falls
 * back to OpenSSL otherwise (other CPUs, Arm).
 *
 * What runs where, and why (figures: docs/benchmarks.md, "ipsec-mb"):
 *
 *  - AES-128/256-GCM: on CPUs with AVX-512 + VAES + VPCLMULQDQ, gcm_vaes.c
 *    (qo_backend_ipsecmb_vaes below, same name, listed first by backend.c):
 *    about twice as fast per short packet, with seal_burst/open_burst.
 *    Elsewhere ipsec-mb's direct GCM API (IMB_AES*_GCM_ENC/DEC, one call per
 *    packet); the context IS the `struct gcm_key_data` (round keys + GHASH
 *    key powers, ~1 KiB), precomputed in setup: nothing per packet but the
 *    call.
 *  - ChaCha20-Poly1305: our own (chacha20_poly1305.c): the ChaCha20 blocks
 *    of a whole burst's packets in lanes across packets (16 on AVX-512, 8 on
 *    AVX2), Poly1305 per packet, eight at once in AVX-512 IFMA lanes (or
 *    AVX2 lanes).  ipsec-mb's job API did one packet at a time (its
 *    ChaCha20-Poly1305 jobs complete in submit), paying its set-up per
 *    packet.  Without AVX2 (portable lanes), packets from CP_LANES_MAX_LEN
 *    bytes still go to ipsec-mb's job API, which is faster there.  seal/open are
 *    bursts of one.
 *  - Jobs need an IMB_MGR that one thread owns: each quicoff_worker owns
 *    one (~200 KiB), made by worker_init when the worker is created and
 *    wiped and freed by worker_fini, and the bursts get it as wstate; so no
 *    packet allocates.  The AES-128-CCM bursts' jobs use it.
 *  - AES-128-CCM: AES-NI intrinsics here, not ipsec-mb's job API.  The job
 *    API runs CCM's CBC-MAC in its multi-buffer lanes, which for one packet
 *    means a submit + flush: ~310 ns for 64 bytes on AVX-512, slower than
 *    OpenSSL; and it refuses AAD over 46 bytes (3 blocks - the length
 *    field), which a long header with 20-byte CIDs already exceeds.  Here the
 *    CTR block of each step is computed alongside the CBC-MAC block, so the
 *    cost is the MAC chain: one AES per 16 bytes of B0, AAD and payload.
 *    seal_burst/open_burst run 8 packets at a time in lockstep (ccm_lanes:
 *    8 MAC chains + 8 keystream blocks per step, two lanes per VAES
 *    instruction where the CPU has VAES; ~3.7x the per-packet code at 512 B),
 *    and hand the packets from a crossover length up to the job API, all
 *    submitted before one flush.  The crossover
 *    depends on the CPU and on how many packets share the flush, so it is
 *    chosen per process (calibrated, or QUICOFF_CCM_JOB_MIN_LEN; see
 *    ccm_choose and quicoff_ccm_job_min_len()).
 *  - Header protection, AES: one AES-NI block over round keys expanded in
 *    setup (~4 ns, against ~20 ns for ipsec-mb's one-block CFB call);
 *    mask_burst keeps 8 blocks in flight.
 *  - Header protection, ChaCha20: chacha20.c (ipsec-mb 1.3 has no single-
 *    block ChaCha20 call); mask_burst computes 16 masks per AVX-512 pass.
 *
 * The global IMB_MGR is initialised once (init_mb_mgr_auto: the AVX-512
 * VAES/VPCLMULQDQ code where the CPU has it) and only read afterwards: the
 * direct GCM and key-expansion calls are plain functions
 * it points to and keep no state in it, so every thread may use it.  Jobs
 * never run on it.
 *
 * Open-failure contract: the AES opens decrypt in place in one pass, compare
 * the computed tag with the received one in constant time, and on a mismatch
 * run the same keystream over the data again (CTR is XOR with a keystream of
 * key and nonce only), so the bytes are exactly as received.  That keeps the
 * success path at one pass and off the scratch buffer; only forged packets
 * pay a second (keystream-only) pass.  ChaCha20-Poly1305 needs no restore:
 * Poly1305 reads the ciphertext, so the tag is checked before any byte is
 * decrypted.
 *
 * Contexts must be 16-byte aligned (GCM: 64); the table gives 64.  Setup
 * refuses a misaligned one.
 */
#include "crypto.h"

#ifdef QUICOFF_HAVE_IPSECMB

#include "chacha20.h"
#include "chacha20_poly1305.h"
#include "cpu_x86.h"

#include <immintrin.h>
#include <intel-ipsec-mb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* AES-NI + SSSE3/SSE4.1 code is compiled for those extensions only here;
 * available() makes sure the CPU has them before any of it runs. */
#define QO_AESNI __attribute__((target("aes,sse4.1")))
/* Two AES blocks per instruction (ymm); only where the CPU has them (gvaes). */
#define QO_VAES __attribute__((target("aes,sse4.1,avx2,vaes")))

/* ------------------------------------------------------------------------ */
/* Library state                                                             */

static IMB_MGR *gmgr; /* direct API + key expansion, read-only once set */
static IMB_ARCH garch;
static int gready;
static int gvaes; /* AVX2 + VAES: ccm_lanes_bulk_vaes (see ccm_lanes) */
static pthread_once_t gonce = PTHREAD_ONCE_INIT;

static int init_arch(IMB_MGR *m, IMB_ARCH arch)
{
    switch (arch) {
    case IMB_ARCH_AVX512:
        init_mb_mgr_avx512(m);
        break;
    case IMB_ARCH_AVX2:
        init_mb_mgr_avx2(m);
        break;
    case IMB_ARCH_AVX:
        init_mb_mgr_avx(m);
        break;
    case IMB_ARCH_SSE:
        init_mb_mgr_sse(m);
        break;
    default:
        return -1;
    }
    return imb_get_errno(m) == 0 ? 0 : -1;
}

static void global_init(void)
{
    IMB_MGR *m;

    __builtin_cpu_init();
    if (!__builtin_cpu_supports("aes") || !__builtin_cpu_supports("pclmul") ||
        !__builtin_cpu_supports("sse4.1"))
        return;
    if ((m = alloc_mb_mgr(0)) == NULL)
        return;
    init_mb_mgr_auto(m, &garch);
    /* IMB_ARCH_NOAESNI would be the library's AES emulation: not wanted. */
    if (imb_get_errno(m) != 0 || garch < IMB_ARCH_SSE || garch >= IMB_ARCH_NUM ||
        (m->features & IMB_FEATURE_AESNI) == 0) {
        free_mb_mgr(m);
        return;
    }
    gmgr = m;
    gvaes = qo_cpu_has_vaes_avx2();
    gready = 1;
}

static int ipsecmb_available(void)
{
    return pthread_once(&gonce, global_init) == 0 && gready;
}

/*
 * A job manager (~200 KiB) for one thread's jobs; NULL on failure.  Our own
 * allocation (imb_set_pointers_mb_mgr rather than alloc_mb_mgr) so that we
 * know its size and can wipe it: its lanes keep per-job state (CBC-MAC
 * blocks, Poly1305 state) derived from the keys of the last jobs.
 */
static IMB_MGR *job_mgr_new(void)
{
    void *mem;
    IMB_MGR *m;

    if (!ipsecmb_available() || posix_memalign(&mem, 64, imb_get_mb_mgr_size()) != 0)
        return NULL;
    m = imb_set_pointers_mb_mgr(mem, 0, 1);
    if (m != mem || init_arch(m, garch) != 0) { /* m == mem: job_mgr_free */
        free(mem);
        return NULL;
    }
    return m;
}

static void job_mgr_free(IMB_MGR *m)
{
    if (m == NULL)
        return;
    qo_secure_zero(m, imb_get_mb_mgr_size());
    free(m);
}

/* qo_backend_t.worker_init/fini: each worker owns a job manager, made when
 * the worker is created (control path), so no packet ever allocates one. */
static int ipsecmb_worker_init(void **state)
{
    return (*state = job_mgr_new()) != NULL ? 0 : -1;
}

static void ipsecmb_worker_fini(void *state)
{
    job_mgr_free(state);
}

/* Constant time: no branch or index depends on the bytes, only on the result. */
static inline int tag_equal(const uint8_t a[QUICOFF_TAG_LEN], const uint8_t b[QUICOFF_TAG_LEN])
{
    __m128i x = _mm_loadu_si128((const __m128i *)a), y = _mm_loadu_si128((const __m128i *)b);
    return _mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) == 0xffff;
}

static int aligned_to(const void *p, uintptr_t a)
{
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* ------------------------------------------------------------------------ */
/* AES-GCM: direct API                                                       */

static int gcm128_setup(void *ctx, const uint8_t *key)
{
    if (!ipsecmb_available() || !aligned_to(ctx, 64))
        return -1;
    IMB_AES128_GCM_PRE(gmgr, key, (struct gcm_key_data *)ctx);
    return 0;
}

static int gcm256_setup(void *ctx, const uint8_t *key)
{
    if (!ipsecmb_available() || !aligned_to(ctx, 64))
        return -1;
    IMB_AES256_GCM_PRE(gmgr, key, (struct gcm_key_data *)ctx);
    return 0;
}

static void gcm_dispose(void *ctx)
{
    qo_secure_zero(ctx, sizeof(struct gcm_key_data));
}

/*
 * The per-call gcm_context_data (counter, partial block, GHASH state) lives
 * on the stack.  It is not wiped per packet: what it holds about the key is
 * at most one keystream block of this packet, and the plaintext it covers is
 * in the caller's buffer anyway (OpenSSL keeps the same in its context).
 */
static int gcm128_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    struct gcm_context_data g;
    IMB_AES128_GCM_ENC(gmgr, (const struct gcm_key_data *)ctx, &g, data, data, len, nonce, aad,
                       aad_len, tag, QUICOFF_TAG_LEN);
    return 0;
}

static int gcm256_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    struct gcm_context_data g;
    IMB_AES256_GCM_ENC(gmgr, (const struct gcm_key_data *)ctx, &g, data, data, len, nonce, aad,
                       aad_len, tag, QUICOFF_TAG_LEN);
    return 0;
}

static int gcm128_open(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                       uint8_t *scratch)
{
    const struct gcm_key_data *k = ctx;
    struct gcm_context_data g;
    uint8_t computed[QUICOFF_TAG_LEN];

    (void)scratch;
    IMB_AES128_GCM_DEC(gmgr, k, &g, data, data, len, nonce, aad, aad_len, computed,
                       QUICOFF_TAG_LEN);
    if (tag_equal(computed, tag))
        return 0;
    /* Encrypting the plaintext with the same nonce gives back the ciphertext. */
    IMB_AES128_GCM_ENC(gmgr, k, &g, data, data, len, nonce, aad, aad_len, computed,
                       QUICOFF_TAG_LEN);
    return -1;
}

static int gcm256_open(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                       uint8_t *scratch)
{
    const struct gcm_key_data *k = ctx;
    struct gcm_context_data g;
    uint8_t computed[QUICOFF_TAG_LEN];

    (void)scratch;
    IMB_AES256_GCM_DEC(gmgr, k, &g, data, data, len, nonce, aad, aad_len, computed,
                       QUICOFF_TAG_LEN);
    if (tag_equal(computed, tag))
        return 0;
    IMB_AES256_GCM_ENC(gmgr, k, &g, data, data, len, nonce, aad, aad_len, computed,
                       QUICOFF_TAG_LEN);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* ChaCha20-Poly1305: our own lanes, or ipsec-mb's job API for long packets  */

/*
 * Where the lanes are the portable ones (no AVX2: one ChaCha20 block and one
 * Poly1305 at a time), ipsec-mb's own single-packet code is faster from
 * about this payload length.  Measured in the nearest case there was: the
 * AVX2 ChaCha20 lanes with scalar Poly1305, forced on the Zen 4 the figures
 * in docs/benchmarks.md come from, seal bursts of 32 cost 288 / 294 ns per
 * 192-byte packet (lanes / ipsec-mb jobs); the portable lanes are slower
 * still.  With AVX2 the lanes are as fast as ipsec-mb's AVX2 jobs at 1,400 B
 * and faster below (docs/benchmarks.md), so every packet takes them.
 */
#define CP_LANES_MAX_LEN 192

/* The context is the key as ChaCha20's eight words (chacha20_poly1305.h);
 * on x86 (little-endian) those are also the key's 32 bytes as ipsec-mb
 * takes them. */
static int cp_setup(void *ctx, const uint8_t *key)
{
    if (!ipsecmb_available())
        return -1;
    qo_chacha20_key_init(ctx, key);
    return 0;
}

static void cp_dispose(void *ctx)
{
    qo_secure_zero(ctx, sizeof(struct qo_chacha20_key));
}

static const uint8_t *cp_key_bytes(const void *ctx)
{
    return (const uint8_t *)((const struct qo_chacha20_key *)ctx)->k;
}

/* One ChaCha20-Poly1305 job, in place; the tag (computed over the
 * ciphertext either way) goes to tag_out. 0 ok. */
static int cp_job(IMB_MGR *m, const void *ctx, IMB_CIPHER_DIRECTION dir,
                  const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad, size_t aad_len,
                  uint8_t *data, size_t len, uint8_t *tag_out)
{
    IMB_JOB *j = IMB_GET_NEXT_JOB(m);

    j->cipher_mode = IMB_CIPHER_CHACHA20_POLY1305;
    j->hash_alg = IMB_AUTH_CHACHA20_POLY1305;
    j->cipher_direction = dir;
    j->chain_order = dir == IMB_DIR_ENCRYPT ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
    j->enc_keys = cp_key_bytes(ctx);
    j->dec_keys = cp_key_bytes(ctx);
    j->key_len_in_bytes = 32;
    j->src = data;
    j->dst = data;
    j->cipher_start_src_offset_in_bytes = 0;
    j->msg_len_to_cipher_in_bytes = len;
    j->hash_start_src_offset_in_bytes = 0;
    j->msg_len_to_hash_in_bytes = len;
    j->iv = nonce;
    j->iv_len_in_bytes = QUICOFF_IV_LEN;
    j->u.CHACHA20_POLY1305.aad = aad;
    j->u.CHACHA20_POLY1305.aad_len_in_bytes = aad_len;
    j->auth_tag_output = tag_out;
    j->auth_tag_output_len_in_bytes = QUICOFF_TAG_LEN;
    /* ChaCha20-Poly1305 jobs complete in submit; flush only as a safety net
     * (the manager is drained after every job, so what comes back is ours). */
    j = IMB_SUBMIT_JOB(m);
    if (j == NULL)
        j = IMB_FLUSH_JOB(m);
    return j != NULL && j->status == IMB_STATUS_COMPLETED ? 0 : -1;
}

/* One long packet through ipsec-mb: a job on the worker's manager, or
 * without one (m NULL) the direct API on the global manager's functions
 * (its per-call context on the stack, wiped). */
static int cp_seal_one(IMB_MGR *m, const qo_aead_op_t *o)
{
    struct chacha20_poly1305_context_data d;
    const uint8_t *k = cp_key_bytes(o->ctx);

    if (m != NULL)
        return cp_job(m, o->ctx, IMB_DIR_ENCRYPT, o->nonce, o->aad, o->aad_len, o->data, o->len,
                      o->tag);
    IMB_CHACHA20_POLY1305_INIT(gmgr, k, &d, o->nonce, o->aad, o->aad_len);
    IMB_CHACHA20_POLY1305_ENC_UPDATE(gmgr, k, &d, o->data, o->data, o->len);
    IMB_CHACHA20_POLY1305_ENC_FINALIZE(gmgr, &d, o->tag, QUICOFF_TAG_LEN);
    qo_secure_zero(&d, sizeof(d));
    return 0;
}

/* ipsec-mb decrypts as it authenticates: on a mismatch the same keystream
 * over the plaintext gives the ciphertext back, exactly as received. */
static int cp_open_one(IMB_MGR *m, const qo_aead_op_t *o)
{
    struct chacha20_poly1305_context_data d;
    const uint8_t *k = cp_key_bytes(o->ctx);
    uint8_t computed[QUICOFF_TAG_LEN];
    int r = 0;

    if (m != NULL) {
        /* A job fails only on its parameters, before touching data. */
        if (cp_job(m, o->ctx, IMB_DIR_DECRYPT, o->nonce, o->aad, o->aad_len, o->data, o->len,
                   computed) != 0)
            return -1;
        if (tag_equal(computed, o->tag))
            return 0;
        cp_job(m, o->ctx, IMB_DIR_ENCRYPT, o->nonce, o->aad, o->aad_len, o->data, o->len,
               computed);
        return -1;
    }
    IMB_CHACHA20_POLY1305_INIT(gmgr, k, &d, o->nonce, o->aad, o->aad_len);
    IMB_CHACHA20_POLY1305_DEC_UPDATE(gmgr, k, &d, o->data, o->data, o->len);
    IMB_CHACHA20_POLY1305_DEC_FINALIZE(gmgr, &d, computed, QUICOFF_TAG_LEN);
    if (!tag_equal(computed, o->tag)) {
        IMB_CHACHA20_POLY1305_INIT(gmgr, k, &d, o->nonce, o->aad, o->aad_len);
        IMB_CHACHA20_POLY1305_ENC_UPDATE(gmgr, k, &d, o->data, o->data, o->len);
        r = -1;
    }
    qo_secure_zero(&d, sizeof(d));
    return r;
}

/*
 * The bursts: every packet in the lanes when they are vector lanes
 * (qo_chacha20_poly1305_wide); otherwise the packets under CP_LANES_MAX_LEN
 * in the lanes (in
 * groups, so they still share passes) and the others one by one through
 * ipsec-mb.  Results land at each packet's own index either way.
 */
#define CP_GROUP 32

static void cp_burst(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[], int open)
{
    qo_aead_op_t lane_ops[CP_GROUP];
    unsigned idx[CP_GROUP];
    int lane_res[CP_GROUP];

    if (qo_chacha20_poly1305_wide()) {
        (open ? qo_chacha20_poly1305_open_burst : qo_chacha20_poly1305_seal_burst)(ops, n, result);
        return;
    }
    for (unsigned base = 0; base < n; base += CP_GROUP) {
        unsigned m = n - base < CP_GROUP ? n - base : CP_GROUP, k = 0;
        for (unsigned i = base; i < base + m; i++) {
            if (ops[i].len < CP_LANES_MAX_LEN) {
                lane_ops[k] = ops[i];
                idx[k++] = i;
            } else {
                result[i] = open ? cp_open_one(wstate, &ops[i]) : cp_seal_one(wstate, &ops[i]);
            }
        }
        (open ? qo_chacha20_poly1305_open_burst : qo_chacha20_poly1305_seal_burst)(lane_ops, k,
                                                                                   lane_res);
        for (unsigned i = 0; i < k; i++)
            result[idx[i]] = lane_res[i];
    }
}

static void cp_seal_burst(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[])
{
    cp_burst(wstate, ops, n, result, 0);
}

static void cp_open_burst(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[])
{
    cp_burst(wstate, ops, n, result, 1);
}

/* seal/open: a burst of one, without a worker (not the engine's path). */
static void cp_op(qo_aead_op_t *o, void *ctx, const uint8_t nonce[QUICOFF_IV_LEN],
                  const uint8_t *aad, size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    o->ctx = ctx;
    o->aad = aad;
    o->aad_len = aad_len;
    o->data = data;
    o->len = len;
    o->tag = tag;
    memcpy(o->nonce, nonce, QUICOFF_IV_LEN);
}

static int cp_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                   size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    qo_aead_op_t o;
    int r;

    cp_op(&o, ctx, nonce, aad, aad_len, data, len, tag);
    cp_burst(NULL, &o, 1, &r, 0);
    return r;
}

static int cp_open(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                   size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag, uint8_t *scratch)
{
    qo_aead_op_t o;
    int r;

    (void)scratch;
    cp_op(&o, ctx, nonce, aad, aad_len, data, len, (uint8_t *)tag);
    cp_burst(NULL, &o, 1, &r, 1);
    return r;
}

/* ------------------------------------------------------------------------ */
/* AES-128 with AES-NI: key schedule, CCM, header protection                 */

struct aes_ctx {
    __m128i rk[15]; /* 11 used for AES-128, 15 for AES-256 */
};

static int aes_setup(struct aes_ctx *c, const uint8_t *key, size_t key_len)
{
    __m128i dec[15]; /* required by the call, not used */

    if (!ipsecmb_available() || !aligned_to(c, 16))
        return -1;
    if (key_len == 16)
        IMB_AES_KEYEXP_128(gmgr, key, c->rk, dec);
    else
        IMB_AES_KEYEXP_256(gmgr, key, c->rk, dec);
    qo_secure_zero(dec, sizeof(dec));
    return 0;
}

QO_AESNI static inline __m128i aes128_block(const __m128i *rk, __m128i b)
{
    b = _mm_xor_si128(b, rk[0]);
    for (int r = 1; r < 10; r++)
        b = _mm_aesenc_si128(b, rk[r]);
    return _mm_aesenclast_si128(b, rk[10]);
}

/* Two independent blocks, interleaved: as fast as one (AES latency-bound). */
QO_AESNI static inline void aes128_block2(const __m128i *rk, __m128i *a, __m128i *b)
{
    __m128i x = _mm_xor_si128(*a, rk[0]), y = _mm_xor_si128(*b, rk[0]);
    for (int r = 1; r < 10; r++) {
        x = _mm_aesenc_si128(x, rk[r]);
        y = _mm_aesenc_si128(y, rk[r]);
    }
    *a = _mm_aesenclast_si128(x, rk[10]);
    *b = _mm_aesenclast_si128(y, rk[10]);
}

/*
 * AES-128-CCM with a 12-byte nonce and a 16-byte tag (RFC 3610, SP 800-38C;
 * QUIC: RFC 9001 §5.3, TLS_AES_128_CCM_SHA256): L = 3, so the payload is
 * below 2^24 bytes.
 *   B0   = flags(Adata, M = 16, L = 3) || nonce || len (3 bytes BE)
 *   AAD  = len (2 bytes, or 0xfffe + 4 bytes) || aad, zero-padded to blocks
 *   MAC  = CBC-MAC over B0 || AAD || payload (zero-padded)
 *   A_i  = 0x02 || nonce || i (3 bytes BE); C = P ^ E(A_1..); tag = MAC ^ E(A_0)
 */
#define CCM_MAX_LEN ((size_t)1 << 24)

static void ccm_choose(void);
static pthread_once_t ccm_once = PTHREAD_ONCE_INIT; /* ccm_choose: the burst crossover */

static int ccm_setup(void *ctx, const uint8_t *key)
{
    if (aes_setup(ctx, key, 16) != 0)
        return -1;
    /* the burst crossover, once per process, here on the control path */
    pthread_once(&ccm_once, ccm_choose);
    return 0;
}

static void aes_dispose(void *ctx)
{
    qo_secure_zero(ctx, sizeof(struct aes_ctx));
}

/* Byte-reverses a block: the counter's big-endian bytes become a lane to add to. */
QO_AESNI static inline __m128i bswap128(__m128i x)
{
    return _mm_shuffle_epi8(x, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

/*
 * The first r bytes of src, zero-padded to a block (r < 16), read without
 * touching a byte past src[r - 1] and assembled in registers: building the
 * block in a stack buffer and loading it as a vector would stall on store
 * forwarding (~20 cycles), and these blocks sit on CCM's MAC chain.
 * Overlapping reads are ORed: the overlapping bytes are the same.
 */
static inline __m128i load_partial(const uint8_t *src, size_t r)
{
    uint64_t lo = 0, hi = 0;

    if (r >= 8) {
        memcpy(&lo, src, 8);
        if (r > 8) {
            memcpy(&hi, src + r - 8, 8);
            hi >>= 8 * (16 - r);
        }
    } else if (r >= 4) {
        uint32_t a, b;
        memcpy(&a, src, 4);
        memcpy(&b, src + r - 4, 4);
        lo = a | (uint64_t)b << (8 * (r - 4));
    } else if (r > 0) {
        lo = src[0] | (uint64_t)src[r / 2] << (8 * (r / 2)) |
             (uint64_t)src[r - 1] << (8 * (r - 1));
    }
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

static inline void store_partial(uint8_t *dst, __m128i x, size_t r)
{
    uint8_t b[16];
    _mm_storeu_si128((__m128i *)b, x);
    memcpy(dst, b, r);
}

/* B0 and A0 for (nonce, aad_len, len), in registers (see load_partial); the
 * counter blocks are built from a byte-reversed A0 (counter in the low 24
 * bits of lane 0) by adding i. */
QO_AESNI static inline void ccm_first_blocks(const uint8_t nonce[QUICOFF_IV_LEN], size_t aad_len,
                                             size_t len, __m128i *b0, __m128i *a0_rev)
{
    /* nonce in bytes 1..12; byte 0 = flags; bytes 13..15 = counter or length */
    __m128i n = _mm_slli_si128(load_partial(nonce, QUICOFF_IV_LEN), 1);
    int flags = (aad_len ? 0x40 : 0) | ((16 - 2) / 2) << 3 | (3 - 1);
    uint32_t len_be = (uint32_t)((len >> 16) & 0xff) << 8 | (uint32_t)((len >> 8) & 0xff) << 16 |
                      (uint32_t)(len & 0xff) << 24;

    *b0 = _mm_or_si128(n, _mm_set_epi32((int)len_be, 0, 0, flags));
    *a0_rev = bswap128(_mm_or_si128(n, _mm_set_epi32(0, 0, 0, 3 - 1)));
}

/* CBC-MAC over the encoded AAD (nothing when aad_len is 0). */
QO_AESNI static inline __m128i ccm_mac_aad(const __m128i *rk, __m128i mac, const uint8_t *aad,
                                           size_t aad_len)
{
    __m128i first;
    size_t take;

    if (aad_len == 0)
        return mac;
    /* The length field, then as much AAD as fits in the first block. */
    if (aad_len < 0xff00) {
        take = aad_len < 14 ? aad_len : 14;
        first = _mm_slli_si128(load_partial(aad, take), 2);
        first = _mm_or_si128(first,
                             _mm_cvtsi32_si128((int)((aad_len >> 8) | (aad_len & 0xff) << 8)));
    } else { /* QUIC headers never get here; kept for completeness (< 2^32) */
        uint32_t be = (uint32_t)aad_len;
        be = be >> 24 | (be >> 8 & 0xff00) | (be << 8 & 0xff0000) | be << 24;
        take = 10;
        first = _mm_slli_si128(load_partial(aad, take), 6);
        first = _mm_or_si128(first, _mm_set_epi64x(0, (long long)((uint64_t)be << 16 | 0xfeff)));
    }
    mac = aes128_block(rk, _mm_xor_si128(mac, first));
    aad += take;
    aad_len -= take;
    for (; aad_len >= 16; aad += 16, aad_len -= 16)
        mac = aes128_block(rk, _mm_xor_si128(mac, _mm_loadu_si128((const __m128i *)aad)));
    if (aad_len)
        mac = aes128_block(rk, _mm_xor_si128(mac, load_partial(aad, aad_len)));
    return mac;
}

QO_AESNI static int ccm_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                             size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    const __m128i *rk = ((const struct aes_ctx *)ctx)->rk;
    const __m128i one = _mm_set_epi32(0, 0, 0, 1);
    __m128i mac, s0, ctr_rev, ks, p;
    size_t off;

    if (len >= CCM_MAX_LEN || aad_len > UINT32_MAX)
        return -1;
    ccm_first_blocks(nonce, aad_len, len, &mac, &ctr_rev);
    s0 = bswap128(ctr_rev);
    aes128_block2(rk, &mac, &s0);
    mac = ccm_mac_aad(rk, mac, aad, aad_len);
    /* Each step: MAC block i and keystream block i side by side. */
    for (off = 0; len - off >= 16; off += 16) {
        p = _mm_loadu_si128((const __m128i *)(data + off));
        ctr_rev = _mm_add_epi32(ctr_rev, one);
        ks = bswap128(ctr_rev);
        mac = _mm_xor_si128(mac, p);
        aes128_block2(rk, &mac, &ks);
        _mm_storeu_si128((__m128i *)(data + off), _mm_xor_si128(p, ks));
    }
    if (off < len) {
        p = load_partial(data + off, len - off);
        ctr_rev = _mm_add_epi32(ctr_rev, one);
        ks = bswap128(ctr_rev);
        mac = _mm_xor_si128(mac, p);
        aes128_block2(rk, &mac, &ks);
        store_partial(data + off, _mm_xor_si128(p, ks), len - off);
    }
    _mm_storeu_si128((__m128i *)tag, _mm_xor_si128(mac, s0));
    return 0;
}

/* XORs the CCM keystream (A_1, A_2, ...) over data: decrypt = encrypt. */
QO_AESNI static void ccm_ctr(const __m128i *rk, __m128i ctr_rev, uint8_t *data, size_t len)
{
    const __m128i one = _mm_set_epi32(0, 0, 0, 1);
    size_t off;

    for (off = 0; off < len; off += 16) {
        ctr_rev = _mm_add_epi32(ctr_rev, one);
        __m128i ks = aes128_block(rk, bswap128(ctr_rev));
        if (len - off >= 16) {
            __m128i c = _mm_loadu_si128((const __m128i *)(data + off));
            _mm_storeu_si128((__m128i *)(data + off), _mm_xor_si128(c, ks));
        } else {
            store_partial(data + off, _mm_xor_si128(load_partial(data + off, len - off), ks),
                          len - off);
        }
    }
}

/*
 * Decrypts in place while computing the MAC over the plaintext: the
 * keystream block for step i + 1 is computed alongside the MAC block of step
 * i, so the MAC chain stays the only serial path.  On a mismatch the same
 * keystream is XORed over the data again.
 */
QO_AESNI static int ccm_open(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                             size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                             uint8_t *scratch)
{
    static const uint8_t keep_mask[32] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    const __m128i *rk = ((const struct aes_ctx *)ctx)->rk;
    const __m128i one = _mm_set_epi32(0, 0, 0, 1);
    __m128i mac, s0, ks, ctr0_rev, ctr_rev, p;
    uint8_t computed[QUICOFF_TAG_LEN];
    size_t off;

    (void)scratch;
    if (len >= CCM_MAX_LEN || aad_len > UINT32_MAX)
        return -1;
    ccm_first_blocks(nonce, aad_len, len, &mac, &ctr0_rev);
    ctr_rev = _mm_add_epi32(ctr0_rev, one);
    s0 = bswap128(ctr0_rev);
    ks = bswap128(ctr_rev); /* A_1 */
    aes128_block2(rk, &mac, &s0);
    mac = ccm_mac_aad(rk, mac, aad, aad_len);
    ks = aes128_block(rk, ks); /* overlaps with the AAD chain's tail */
    for (off = 0; len - off >= 16; off += 16) {
        p = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(data + off)), ks);
        _mm_storeu_si128((__m128i *)(data + off), p);
        ctr_rev = _mm_add_epi32(ctr_rev, one);
        ks = bswap128(ctr_rev);
        mac = _mm_xor_si128(mac, p);
        aes128_block2(rk, &mac, &ks);
    }
    if (off < len) {
        size_t r = len - off;
        p = _mm_xor_si128(load_partial(data + off, r), ks);
        store_partial(data + off, p, r);
        /* Only the r plaintext bytes enter the MAC, zero-padded. */
        p = _mm_and_si128(p, _mm_loadu_si128((const __m128i *)(keep_mask + 16 - r)));
        mac = aes128_block(rk, _mm_xor_si128(mac, p));
    }
    _mm_storeu_si128((__m128i *)computed, _mm_xor_si128(mac, s0));
    if (tag_equal(computed, tag))
        return 0;
    ccm_ctr(rk, ctr0_rev, data, len);
    return -1;
}

/*
 * Bursts: ipsec-mb's job API for the packets where it wins, all of the
 * burst's jobs submitted to the thread's manager before one flush, so its
 * multi-buffer CBC-MAC runs several packets in its lanes (a job alone costs
 * a submit + flush, see the header).  Per op the AES-NI code above instead
 * when the AAD is over the job API's 46 bytes, the payload is above
 * CCM_JOB_MAX_LEN or below the crossover, or the thread has no manager.
 * Those run while the submitted jobs wait for their lanes to fill.
 *
 * The crossover depends on how many packets share the flush and on the CPU.
 * A flush costs about the same however few jobs are in it, so the fewer the
 * jobs the longer a packet must be for them to win (ns/packet, seal_burst,
 * packets of one length; AMD EPYC with AVX-512, ipsec-mb 1.3):
 *
 *   payload   4 jobs   32 jobs | ccm_lanes (VAES)  per packet (ccm_seal)
 *      256      260      131   |       68                180
 *      512      321      156   |       97                360
 *     1024      448      216   |      156               ~730
 *     1400      576      251   |      202               ~980
 *
 * (ccm_lanes on AES-NI xmm only: 86, 141, 251, 334), so on this CPU the
 * calibration never picks the jobs; on one without VAES it may.
 * and on an Intel Xeon (AVX-512) 512 B: 4 jobs ~610, 8 ~490, 32 ~300, 1400
 * B: 32 ~290.  So there is one crossover per tier of eligible packets in the
 * window (4+, 8+, 16+, 32+: ccm_tier_len), chosen per CPU once per process
 * (ccm_choose, below); a window takes the largest tier t that has at least
 * t packets at or above its length; the others (and every packet of a
 * window that fills no tier) go to ccm_lanes, or ccm_seal/ccm_open when
 * they are under 96 bytes, their AAD is over 62 bytes or they are alone.
 *
 * The manager is drained before returning (as cp_job leaves it), so jobs
 * come back only from this call; user_data maps each to its op.  A job the
 * library refuses (IMB_STATUS_INVALID_ARGS) is rejected before it touches
 * the data: -1, data as given.  Open: ipsec-mb writes the computed tag, the
 * compare is tag_equal (constant time) and a mismatch XORs the CCM
 * keystream over the data again (ccm_ctr), as ccm_open does.
 */
#define CCM_JOB_MAX_AAD 46 /* 3 blocks of AAD, less the 2-byte length field */
/* The fallback crossover (every tier) when timing is unusable: what one
 * Intel CPU gave for windows of 4 or more. */
#ifndef QO_CCM_JOB_MIN_LEN
#define QO_CCM_JOB_MIN_LEN 640
#endif
#define CCM_JOB_MAX_LEN ((size_t)16383)
#define CCM_JOB_NEVER (CCM_JOB_MAX_LEN + 1)
#define CCM_BURST_WINDOW 64 /* ops per submit/flush round (computed tags on the stack) */
#define CCM_TIERS 4         /* windows with 4 << t (4, 8, 16, 32) or more eligible packets */

/* Per tier, the payload length from which a packet goes to the job API.
 * Read once per burst (relaxed: any values give the same bytes, only the
 * speed differs); written by ccm_choose and quicoff_ccm_set_job_min_len. */
static _Atomic size_t ccm_tier_len[CCM_TIERS] = {QO_CCM_JOB_MIN_LEN, QO_CCM_JOB_MIN_LEN,
                                                 QO_CCM_JOB_MIN_LEN, QO_CCM_JOB_MIN_LEN};

static inline int ccm_job_ok(const qo_aead_op_t *op)
{
    return op->aad_len <= CCM_JOB_MAX_AAD && op->len <= CCM_JOB_MAX_LEN;
}

/* The crossover for this window: the largest tier t with at least 4 << t
 * packets at or above its length; CCM_JOB_NEVER when no tier has enough. */
static size_t ccm_window_min_len(const qo_aead_op_t *w, unsigned wn,
                                 const size_t tier_len[CCM_TIERS])
{
    unsigned count[CCM_TIERS] = {0};
    for (unsigned i = 0; i < wn; i++)
        if (ccm_job_ok(&w[i]))
            for (unsigned t = 0; t < CCM_TIERS; t++)
                count[t] += w[i].len >= tier_len[t];
    for (unsigned t = CCM_TIERS; t-- > 0;)
        if (count[t] >= 4u << t)
            return tier_len[t];
    return CCM_JOB_NEVER;
}

QO_AESNI static void ccm_job_done(const qo_aead_op_t *ops, int result[], IMB_JOB *j, int seal,
                                  uint8_t (*computed)[QUICOFF_TAG_LEN])
{
    unsigned i = (unsigned)(uintptr_t)j->user_data;
    const qo_aead_op_t *op = &ops[i];
    __m128i b0, ctr0_rev;

    if (j->status != IMB_STATUS_COMPLETED) {
        result[i] = -1;
        return;
    }
    if (seal || tag_equal(computed[i], op->tag)) {
        result[i] = 0;
        return;
    }
    ccm_first_blocks(op->nonce, op->aad_len, op->len, &b0, &ctr0_rev);
    ccm_ctr(((const struct aes_ctx *)op->ctx)->rk, ctr0_rev, op->data, op->len);
    result[i] = -1;
}

/*
 * Several packets at once on AES-NI: CCM's CBC-MAC is one chain of AES per
 * 16 bytes, latency-bound (~40 cycles a block: ccm_seal keeps one CTR block
 * beside each MAC block and still leaves most of the AES units idle). Here
 * CCM_LANES packets advance in lockstep, one block each per step, so every
 * step has CCM_LANES MAC blocks and CCM_LANES keystream blocks in flight:
 * 2.5x (AES-NI) to 3.7x (VAES bulk loop) the throughput of ccm_seal/ccm_open
 * at 512 B, for any number of packets (no flush, unlike the job API; idle
 * lanes cost their share, so 4 packets take what 8 would), with the same
 * results.
 *
 * A lane's schedule (its packet: p MAC-only blocks B0 || encoded AAD, then nb
 * payload blocks, T = p + nb): at step s < p the MAC takes prefix[s]; at
 * p <= s < T the payload block k = s - p, XORed with its keystream (computed
 * the step before, so open's MAC never waits for it: it takes the plaintext
 * block, zero-padded); the keystream slot of step s computes block k + 1's,
 * and at s == T (MAC idle) A_0's, which makes the tag. A lane that finishes
 * takes the next packet, so mixed lengths keep the lanes busy. Open checks
 * the tag in constant time and, on a mismatch, XORs the keystream over the
 * data again (ccm_ctr), exactly as ccm_open does.
 */
#define CCM_LANES 8
#define CCM_LANE_MAX_AAD 62 /* prefix: B0 + at most 4 blocks of length field || AAD */
/* Shorter payloads have chains of a few blocks: the lanes' bookkeeping then
 * costs more than the overlap saves (in the engine, bursts of 32, AMD EPYC:
 * 64 B +35%, 80-96 B even, 128 B -15%, 256 B -40% against ccm_seal). */
#define CCM_LANE_MIN_LEN 96

struct ccm_lane {
    __m128i mac, ks, ctr0_rev;
    __m128i prefix[5];
    const qo_aead_op_t *op; /* NULL: idle */
    unsigned idx, s, p, T;
};

static inline int ccm_lane_ok(const qo_aead_op_t *op)
{
    return op->aad_len <= CCM_LANE_MAX_AAD && op->len >= CCM_LANE_MIN_LEN && op->len < CCM_MAX_LEN;
}

/* B0 and the encoded AAD blocks (aad_len <= CCM_LANE_MAX_AAD). */
QO_AESNI static void ccm_lane_start(struct ccm_lane *l, const qo_aead_op_t *op, unsigned idx)
{
    const uint8_t *aad = op->aad;
    size_t aad_len = op->aad_len, take;
    unsigned p = 1;

    ccm_first_blocks(op->nonce, aad_len, op->len, &l->prefix[0], &l->ctr0_rev);
    if (aad_len) {
        take = aad_len < 14 ? aad_len : 14;
        l->prefix[p++] = _mm_or_si128(_mm_slli_si128(load_partial(aad, take), 2),
                                      _mm_cvtsi32_si128((int)((aad_len & 0xff) << 8)));
        for (aad += take, aad_len -= take; aad_len >= 16; aad += 16, aad_len -= 16)
            l->prefix[p++] = _mm_loadu_si128((const __m128i *)aad);
        if (aad_len)
            l->prefix[p++] = load_partial(aad, aad_len);
    }
    l->mac = _mm_setzero_si128();
    l->ks = _mm_setzero_si128();
    l->op = op;
    l->idx = idx;
    l->s = 0;
    l->p = p;
    l->T = p + (unsigned)((op->len + 15) / 16);
}

/* 2 * CCM_LANES independent AES-128 blocks, round by round: b[l] and
 * b[CCM_LANES + l] under lane l's round keys rk[l] (lanes may differ). */
QO_AESNI static inline void aes128_lanes(const __m128i *const rk[CCM_LANES],
                                         __m128i b[2 * CCM_LANES])
{
    for (int l = 0; l < CCM_LANES; l++) {
        b[l] = _mm_xor_si128(b[l], rk[l][0]);
        b[CCM_LANES + l] = _mm_xor_si128(b[CCM_LANES + l], rk[l][0]);
    }
    for (int r = 1; r < 10; r++)
        for (int l = 0; l < CCM_LANES; l++) {
            b[l] = _mm_aesenc_si128(b[l], rk[l][r]);
            b[CCM_LANES + l] = _mm_aesenc_si128(b[CCM_LANES + l], rk[l][r]);
        }
    for (int l = 0; l < CCM_LANES; l++) {
        b[l] = _mm_aesenclast_si128(b[l], rk[l][10]);
        b[CCM_LANES + l] = _mm_aesenclast_si128(b[CCM_LANES + l], rk[l][10]);
    }
}

/*
 * The bulk of the work: every busy lane in the middle of its payload, k
 * steps in a row of full blocks that are not the last one. The same
 * per-lane step as ccm_lanes' general case, without its decisions; an idle
 * lane (op NULL) reads and writes a junk block on the stack and keeps no
 * state. d[l]/stride[l]/ctr[l]: ccm_bulk_setup.
 */
struct ccm_bulk {
    uint8_t *d[CCM_LANES];
    size_t stride[CCM_LANES];
    __m128i ctr[CCM_LANES]; /* byte-reversed counter of the keystream block this step computes */
    uint8_t junk[16];
};

QO_AESNI static void ccm_bulk_setup(struct ccm_bulk *b, const struct ccm_lane lane[CCM_LANES])
{
    memset(b->junk, 0, sizeof(b->junk));
    for (unsigned l = 0; l < CCM_LANES; l++) {
        const struct ccm_lane *ln = &lane[l];
        if (ln->op == NULL) {
            b->d[l] = b->junk;
            b->stride[l] = 0;
            b->ctr[l] = _mm_setzero_si128();
            continue;
        }
        b->d[l] = ln->op->data + (size_t)(ln->s - ln->p) * 16;
        b->stride[l] = 16;
        /* the keystream this step computes: block s - p + 1, i.e. A_(s - p + 2) */
        b->ctr[l] = _mm_add_epi32(ln->ctr0_rev, _mm_cvtsi32_si128((int)(ln->s + 2 - ln->p)));
    }
}

QO_AESNI static void ccm_bulk_done(struct ccm_lane lane[CCM_LANES], unsigned k)
{
    for (unsigned l = 0; l < CCM_LANES; l++)
        if (lane[l].op != NULL)
            lane[l].s += k;
}

QO_AESNI static void ccm_lanes_bulk(struct ccm_lane lane[CCM_LANES],
                                    const __m128i *const rk[CCM_LANES], unsigned k, int seal)
{
    const __m128i one = _mm_set_epi32(0, 0, 0, 1);
    struct ccm_bulk bk;

    ccm_bulk_setup(&bk, lane);
    for (unsigned step = 0; step < k; step++) {
        __m128i b[2 * CCM_LANES];
        for (unsigned l = 0; l < CCM_LANES; l++) {
            __m128i blk = _mm_loadu_si128((const __m128i *)bk.d[l]);
            __m128i out = _mm_xor_si128(blk, lane[l].ks);
            _mm_storeu_si128((__m128i *)bk.d[l], out);
            bk.d[l] += bk.stride[l];
            b[l] = _mm_xor_si128(lane[l].mac, seal ? blk : out);
            b[CCM_LANES + l] = bswap128(bk.ctr[l]);
            bk.ctr[l] = _mm_add_epi32(bk.ctr[l], one);
        }
        aes128_lanes(rk, b);
        for (unsigned l = 0; l < CCM_LANES; l++) {
            lane[l].mac = b[l];
            lane[l].ks = b[CCM_LANES + l];
        }
    }
    ccm_bulk_done(lane, k);
}

/*
 * The same with VAES on ymm registers: lanes 2i and 2i + 1 share a register,
 * so a step is 4 MAC + 4 keystream instructions per round for 8 lanes (half
 * the instructions, and 8 independent chains to fill the AES units).
 */
QO_VAES static void ccm_lanes_bulk_vaes(struct ccm_lane lane[CCM_LANES],
                                        const __m128i *const rk[CCM_LANES], unsigned k, int seal)
{
    enum { PAIRS = CCM_LANES / 2 };
    const __m256i one = _mm256_set_epi32(0, 0, 0, 1, 0, 0, 0, 1);
    const __m256i rev = _mm256_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1,
                                        2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    __m256i rkp[PAIRS][11], mac[PAIRS], ks[PAIRS], ctr[PAIRS];
    struct ccm_bulk bk;

    ccm_bulk_setup(&bk, lane);
    for (unsigned q = 0; q < PAIRS; q++) {
        for (int r = 0; r < 11; r++)
            rkp[q][r] = _mm256_set_m128i(rk[2 * q + 1][r], rk[2 * q][r]);
        mac[q] = _mm256_set_m128i(lane[2 * q + 1].mac, lane[2 * q].mac);
        ks[q] = _mm256_set_m128i(lane[2 * q + 1].ks, lane[2 * q].ks);
        ctr[q] = _mm256_set_m128i(bk.ctr[2 * q + 1], bk.ctr[2 * q]);
    }
    for (unsigned step = 0; step < k; step++) {
        __m256i m[PAIRS], c[PAIRS];
        for (unsigned q = 0; q < PAIRS; q++) {
            uint8_t *lo = bk.d[2 * q], *hi = bk.d[2 * q + 1];
            __m256i blk = _mm256_loadu2_m128i((const __m128i *)hi, (const __m128i *)lo);
            __m256i out = _mm256_xor_si256(blk, ks[q]);
            _mm256_storeu2_m128i((__m128i *)hi, (__m128i *)lo, out);
            bk.d[2 * q] += bk.stride[2 * q];
            bk.d[2 * q + 1] += bk.stride[2 * q + 1];
            m[q] = _mm256_xor_si256(_mm256_xor_si256(mac[q], seal ? blk : out), rkp[q][0]);
            c[q] = _mm256_xor_si256(_mm256_shuffle_epi8(ctr[q], rev), rkp[q][0]);
            ctr[q] = _mm256_add_epi32(ctr[q], one);
        }
        for (int r = 1; r < 10; r++)
            for (unsigned q = 0; q < PAIRS; q++) {
                m[q] = _mm256_aesenc_epi128(m[q], rkp[q][r]);
                c[q] = _mm256_aesenc_epi128(c[q], rkp[q][r]);
            }
        for (unsigned q = 0; q < PAIRS; q++) {
            mac[q] = _mm256_aesenclast_epi128(m[q], rkp[q][10]);
            ks[q] = _mm256_aesenclast_epi128(c[q], rkp[q][10]);
        }
    }
    for (unsigned q = 0; q < PAIRS; q++) {
        lane[2 * q].mac = _mm256_castsi256_si128(mac[q]);
        lane[2 * q + 1].mac = _mm256_extracti128_si256(mac[q], 1);
        lane[2 * q].ks = _mm256_castsi256_si128(ks[q]);
        lane[2 * q + 1].ks = _mm256_extracti128_si256(ks[q], 1);
    }
    _mm256_zeroupper(); /* back to SSE code: no AVX-SSE transition penalty */
    ccm_bulk_done(lane, k);
}

/* Tests turn the VAES bulk off to cover the AES-NI one on a VAES CPU
 * (tests/c/test_ccm_burst.c declares it); returns whether it was in use. */
int qo_ipsecmb_ccm_vaes(int on);
static _Atomic int ccm_use_vaes = 1;

int qo_ipsecmb_ccm_vaes(int on)
{
    return atomic_exchange(&ccm_use_vaes, on) && gvaes;
}

/* ops w[idx[0..cnt)] (all ccm_lane_ok, cnt >= 1), results in r[idx[i]].
 * Each lane's blocks use its own op's round keys: mixed keys interleave too. */
QO_AESNI static void ccm_lanes(const qo_aead_op_t *w, const uint8_t idx[], unsigned cnt, int r[],
                               int seal)
{
    static const uint8_t keep_mask[32] = {
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    };
    struct ccm_lane lane[CCM_LANES];
    unsigned next = 0, active = 0;

    for (unsigned l = 0; l < CCM_LANES; l++) {
        lane[l].op = NULL;
        if (next < cnt) {
            ccm_lane_start(&lane[l], &w[idx[next]], idx[next]);
            next++;
            active++;
        }
    }
    /* an idle lane computes junk under some valid key schedule */
    const __m128i *rk_idle = ((const struct aes_ctx *)w[idx[0]].ctx)->rk;
    while (active) {
        __m128i b[2 * CCM_LANES]; /* b[l]: MAC block of lane l; b[CCM_LANES + l]: keystream */
        const __m128i *rk[CCM_LANES];

        /* k: steps every busy lane can take on full, not-last payload blocks */
        unsigned k = UINT32_MAX;
        for (unsigned l = 0; l < CCM_LANES; l++) {
            const struct ccm_lane *ln = &lane[l];
            if (ln->op == NULL) {
                rk[l] = rk_idle;
                continue;
            }
            unsigned run = ln->s >= ln->p && ln->s + 1 < ln->T ? ln->T - 1 - ln->s : 0;
            k = run < k ? run : k;
            rk[l] = ((const struct aes_ctx *)ln->op->ctx)->rk;
        }
        if (k >= 2) {
            if (gvaes && ccm_use_vaes)
                ccm_lanes_bulk_vaes(lane, rk, k, seal);
            else
                ccm_lanes_bulk(lane, rk, k, seal);
            continue;
        }

        for (unsigned l = 0; l < CCM_LANES; l++) {
            struct ccm_lane *ln = &lane[l];
            const qo_aead_op_t *op = ln->op;
            __m128i in = _mm_setzero_si128(), ctr = _mm_setzero_si128();

            rk[l] = op ? ((const struct aes_ctx *)op->ctx)->rk : rk_idle;
            if (op == NULL) {
                b[l] = in;
                b[CCM_LANES + l] = ctr;
                continue;
            }
            unsigned s = ln->s;
            if (s < ln->p) {
                in = ln->prefix[s];
            } else if (s < ln->T) {
                size_t off = (size_t)(s - ln->p) * 16, rem = op->len - off;
                uint8_t *d = op->data + off;
                if (rem >= 16) {
                    __m128i blk = _mm_loadu_si128((const __m128i *)d),
                            out = _mm_xor_si128(blk, ln->ks);
                    _mm_storeu_si128((__m128i *)d, out);
                    in = seal ? blk : out;
                } else {
                    __m128i blk = load_partial(d, rem), out = _mm_xor_si128(blk, ln->ks);
                    store_partial(d, out, rem);
                    /* only the rem plaintext bytes enter the MAC, zero-padded */
                    in = seal ? blk
                              : _mm_and_si128(out, _mm_loadu_si128(
                                                       (const __m128i *)(keep_mask + 16 - rem)));
                }
            }
            b[l] = _mm_xor_si128(ln->mac, in);
            /* keystream: block s - p + 1 (numbered from A_1) for the next step, A_0 at T */
            if (s + 1 >= ln->p && s + 1 < ln->T) /* 0 <= s - p + 1 < nb */
                ctr = bswap128(
                    _mm_add_epi32(ln->ctr0_rev, _mm_cvtsi32_si128((int)(s + 2 - ln->p))));
            else if (s == ln->T)
                ctr = bswap128(ln->ctr0_rev);
            b[CCM_LANES + l] = ctr;
        }
        aes128_lanes(rk, b);
        for (unsigned l = 0; l < CCM_LANES; l++) {
            struct ccm_lane *ln = &lane[l];
            const qo_aead_op_t *op = ln->op;
            if (op == NULL)
                continue;
            if (ln->s < ln->T) {
                ln->mac = b[l];
                ln->ks = b[CCM_LANES + l];
                ln->s++;
                continue;
            }
            /* s == T: b[CCM_LANES + l] is E(A_0) */
            __m128i t = _mm_xor_si128(ln->mac, b[CCM_LANES + l]);
            if (seal) {
                _mm_storeu_si128((__m128i *)op->tag, t);
                r[ln->idx] = 0;
            } else {
                uint8_t computed[QUICOFF_TAG_LEN];
                _mm_storeu_si128((__m128i *)computed, t);
                if (tag_equal(computed, op->tag)) {
                    r[ln->idx] = 0;
                } else {
                    ccm_ctr(((const struct aes_ctx *)op->ctx)->rk, ln->ctr0_rev, op->data,
                            op->len);
                    r[ln->idx] = -1;
                }
            }
            ln->op = NULL;
            active--;
            if (next < cnt) {
                ccm_lane_start(ln, &w[idx[next]], idx[next]);
                next++;
                active++;
            }
        }
    }
}

/* m: the worker's job manager (NULL: everything on AES-NI); tier_len: the
 * crossovers (the calibration passes all 0 or all "never" to time each path
 * alone). */
QO_AESNI static void ccm_burst_on(IMB_MGR *m, const size_t tier_len[CCM_TIERS],
                                  const qo_aead_op_t *ops, unsigned n, int result[], int seal)
{
    uint8_t computed[CCM_BURST_WINDOW][QUICOFF_TAG_LEN];

    for (unsigned base = 0; base < n; base += CCM_BURST_WINDOW) {
        const qo_aead_op_t *w = ops + base;
        int *r = result + base;
        unsigned wn = n - base < CCM_BURST_WINDOW ? n - base : CCM_BURST_WINDOW, jobs = 0;
        size_t min_len = m != NULL ? ccm_window_min_len(w, wn, tier_len) : CCM_JOB_NEVER;
        uint8_t lanes[CCM_BURST_WINDOW];
        unsigned nl = 0;
        IMB_JOB *j;

        for (unsigned i = 0; i < wn; i++) {
            const qo_aead_op_t *op = &w[i];
            const struct aes_ctx *c = op->ctx;

            if (op->len < min_len || !ccm_job_ok(op)) {
                if (ccm_lane_ok(op)) {
                    lanes[nl++] = (uint8_t)i; /* below, while the jobs fill their lanes */
                    continue;
                }
                r[i] = seal ? ccm_seal(op->ctx, op->nonce, op->aad, op->aad_len, op->data, op->len,
                                       op->tag)
                            : ccm_open(op->ctx, op->nonce, op->aad, op->aad_len, op->data, op->len,
                                       op->tag, NULL);
                continue;
            }
            jobs++;
            j = IMB_GET_NEXT_JOB(m);
            j->cipher_mode = IMB_CIPHER_CCM;
            j->hash_alg = IMB_AUTH_AES_CCM;
            j->cipher_direction = seal ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
            j->chain_order = seal ? IMB_ORDER_HASH_CIPHER : IMB_ORDER_CIPHER_HASH;
            j->enc_keys = c->rk;
            j->dec_keys = c->rk;
            j->key_len_in_bytes = 16;
            j->src = op->data;
            j->dst = op->data;
            j->cipher_start_src_offset_in_bytes = 0;
            j->msg_len_to_cipher_in_bytes = op->len;
            j->hash_start_src_offset_in_bytes = 0;
            j->msg_len_to_hash_in_bytes = op->len;
            j->iv = op->nonce;
            j->iv_len_in_bytes = QUICOFF_IV_LEN;
            j->u.CCM.aad = op->aad;
            j->u.CCM.aad_len_in_bytes = op->aad_len;
            j->auth_tag_output = seal ? op->tag : computed[i];
            j->auth_tag_output_len_in_bytes = QUICOFF_TAG_LEN;
            j->user_data = (void *)(uintptr_t)i;
            for (j = IMB_SUBMIT_JOB(m); j != NULL; j = IMB_GET_COMPLETED_JOB(m))
                ccm_job_done(w, r, j, seal, computed);
        }
        if (nl == 1) {
            const qo_aead_op_t *op = &w[lanes[0]];
            r[lanes[0]] = seal ? ccm_seal(op->ctx, op->nonce, op->aad, op->aad_len, op->data,
                                          op->len, op->tag)
                               : ccm_open(op->ctx, op->nonce, op->aad, op->aad_len, op->data,
                                          op->len, op->tag, NULL);
        } else if (nl > 1) {
            ccm_lanes(w, lanes, nl, r, seal);
        }
        if (jobs > 0)
            while ((j = IMB_FLUSH_JOB(m)) != NULL)
                ccm_job_done(w, r, j, seal, computed);
    }
}

/* wstate: the worker's job manager (worker_init), or NULL: AES-NI only. */
static void ccm_burst(IMB_MGR *m, const qo_aead_op_t *ops, unsigned n, int result[], int seal)
{
    size_t tier_len[CCM_TIERS];
    for (unsigned t = 0; t < CCM_TIERS; t++)
        tier_len[t] = atomic_load_explicit(&ccm_tier_len[t], memory_order_relaxed);
    ccm_burst_on(m, tier_len, ops, n, result, seal);
}

static void ccm_seal_burst(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[])
{
    ccm_burst(wstate, ops, n, result, 1);
}

static void ccm_open_burst(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[])
{
    ccm_burst(wstate, ops, n, result, 0);
}

/*
 * The crossovers, chosen once per process when the first AES-128-CCM key is
 * set up (ccm_setup: a control call), or by quicoff_ccm_job_min_len():
 *  1. QUICOFF_CCM_JOB_MIN_LEN from the environment, a decimal byte count
 *     for every tier (above CCM_JOB_MAX_LEN: never); anything else in it is
 *     ignored;
 *  2. else a calibration: each size of ccm_cal_sizes sealed and opened on
 *     AES-NI alone, and as bursts of 4, 8, 16 and 32 jobs (each tier repeated
 *     to 32 packets, so every timing covers the same work), interleaved,
 *     best of CCM_CAL_REPS (the minimum: an interruption only ever adds
 *     time). A tier's crossover is where its jobs win from there up to the
 *     largest size tried, placed between the two sizes around it by linear
 *     interpolation (both costs are close to linear in the length), rounded
 *     up to an AES block; a tier never has a smaller crossover than the next
 *     larger one. 2-5 ms; stopped after CCM_CAL_BUDGET_NS once two rounds
 *     are done (a loaded machine);
 *  3. else (no clock, no job manager, a failed op, times that do not grow
 *     with the length): QO_CCM_JOB_MIN_LEN, the same on every run.
 */
#define CCM_CAL_N 32
#define CCM_CAL_REPS 3
#define CCM_CAL_BUDGET_NS UINT64_C(20000000)
#define CCM_CAL_MAX_LEN 1400
static const size_t ccm_cal_sizes[] = {64, 128, 192, 256, 384, 512, 768, 1024, 1400};
#define CCM_CAL_NSIZES (sizeof(ccm_cal_sizes) / sizeof(ccm_cal_sizes[0]))

static const char *_Atomic ccm_job_min_len_how = "default";

static uint64_t mono_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* ns to seal and open CCM_CAL_N packets of len bytes, in bursts of n with
 * every tier at min_len; 0 if the clock or an op failed. */
static uint64_t ccm_cal_time(IMB_MGR *m, size_t min_len, qo_aead_op_t *ops, unsigned n, size_t len)
{
    const size_t tl[CCM_TIERS] = {min_len, min_len, min_len, min_len};
    int res[2][CCM_CAL_N];
    for (unsigned i = 0; i < CCM_CAL_N; i++)
        ops[i].len = len;
    uint64_t t0 = mono_ns();
    for (unsigned b = 0; b < CCM_CAL_N; b += n)
        ccm_burst_on(m, tl, ops + b, n, res[0] + b, 1);
    for (unsigned b = 0; b < CCM_CAL_N; b += n) /* opens what it sealed: tags verify */
        ccm_burst_on(m, tl, ops + b, n, res[1] + b, 0);
    uint64_t t1 = mono_ns();
    for (unsigned i = 0; i < CCM_CAL_N; i++)
        if (res[0][i] != 0 || res[1][i] != 0)
            return 0;
    return t0 != 0 && t1 > t0 ? t1 - t0 : 0;
}

/* One tier's crossover from the timings (same work on both sides). */
static size_t ccm_cal_decide(const uint64_t aesni[], const uint64_t job[])
{
    /* k: the first size from which the job API wins at every larger size */
    size_t k = CCM_CAL_NSIZES;
    while (k > 0 && job[k - 1] < aesni[k - 1])
        k--;
    if (k == CCM_CAL_NSIZES)
        return CCM_JOB_NEVER; /* never wins here */
    if (k == 0)
        return ccm_cal_sizes[0];
    double lo = (double)ccm_cal_sizes[k - 1], hi = (double)ccm_cal_sizes[k];
    double d_lo = (double)job[k - 1] - (double)aesni[k - 1]; /* >= 0: AES-NI wins */
    double d_hi = (double)aesni[k] - (double)job[k];         /* > 0: jobs win */
    size_t x = (size_t)(lo + (hi - lo) * d_lo / (d_lo + d_hi));
    x = (x + 15) & ~(size_t)15;
    if (x <= ccm_cal_sizes[k - 1])
        x = ccm_cal_sizes[k - 1] + 1;
    return x > ccm_cal_sizes[k] ? ccm_cal_sizes[k] : x;
}

/* Fills out[] and returns 1, or 0 when timing is unusable. */
QO_AESNI static int ccm_calibrate(size_t out[CCM_TIERS])
{
    static const uint8_t key[16] = {0x51, 0x55, 0x49, 0x43, 0x6f, 0x66, 0x66}; /* not a secret */
    static const uint8_t aad[13] = {0x40, 1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 1}; /* a short header */
    struct aes_ctx ctx;
    /* Its own job manager, freed at the end: the calibration runs once per
     * process on the control thread (the first CCM key), not on the data
     * path, so it allocates (this and buf) like any other key install. */
    IMB_MGR *m = job_mgr_new();
    uint8_t *buf;
    qo_aead_op_t ops[CCM_CAL_N];
    uint64_t aesni[CCM_CAL_NSIZES] = {0}, job[CCM_TIERS][CCM_CAL_NSIZES] = {{0}};
    int ok = 0;

    if (m == NULL || aes_setup(&ctx, key, 16) != 0) {
        job_mgr_free(m);
        return 0;
    }
    buf = calloc(CCM_CAL_N, CCM_CAL_MAX_LEN + QUICOFF_TAG_LEN);
    if (buf == NULL) {
        aes_dispose(&ctx);
        job_mgr_free(m);
        return 0;
    }
    for (unsigned i = 0; i < CCM_CAL_N; i++) {
        uint8_t *d = buf + (size_t)i * (CCM_CAL_MAX_LEN + QUICOFF_TAG_LEN);
        ops[i] = (qo_aead_op_t){.ctx = &ctx,
                                .aad = aad,
                                .aad_len = sizeof(aad),
                                .data = d,
                                .tag = d + CCM_CAL_MAX_LEN};
        ops[i].nonce[11] = (uint8_t)i;
    }
    uint64_t start = mono_ns();
    /* the first round warms caches, the job manager and the clock up: not kept */
    for (int rep = -1; rep < CCM_CAL_REPS; rep++) {
        for (size_t i = 0; i < CCM_CAL_NSIZES; i++) {
            uint64_t a = ccm_cal_time(m, CCM_JOB_NEVER, ops, CCM_CAL_N, ccm_cal_sizes[i]);
            if (a == 0)
                goto out;
            if (rep >= 0 && (aesni[i] == 0 || a < aesni[i]))
                aesni[i] = a;
            for (unsigned t = 0; t < CCM_TIERS; t++) {
                uint64_t j = ccm_cal_time(m, 0, ops, 4u << t, ccm_cal_sizes[i]);
                if (j == 0)
                    goto out;
                if (rep >= 0 && (job[t][i] == 0 || j < job[t][i]))
                    job[t][i] = j;
            }
        }
        if (rep >= 1 && mono_ns() - start > CCM_CAL_BUDGET_NS)
            break;
    }
    /* a clock that does not see more work take longer is not measuring it */
    if (aesni[CCM_CAL_NSIZES - 1] <= aesni[0])
        goto out;
    for (unsigned t = CCM_TIERS; t-- > 0;) {
        out[t] = ccm_cal_decide(aesni, job[t]);
        if (t + 1 < CCM_TIERS && out[t] < out[t + 1])
            out[t] = out[t + 1];
    }
    ok = 1;
out:
    aes_dispose(&ctx);
    job_mgr_free(m);
    free(buf);
    return ok;
}

/* QUICOFF_CCM_JOB_MIN_LEN: digits only, no sign, no overflow; 0 if not. */
static int ccm_env(size_t *out)
{
    const char *e = getenv("QUICOFF_CCM_JOB_MIN_LEN");
    size_t v = 0;
    if (e == NULL || *e == '\0')
        return 0;
    for (; *e; e++) {
        if (*e < '0' || *e > '9')
            return 0;
        v = v > CCM_JOB_MAX_LEN ? CCM_JOB_NEVER : v * 10 + (size_t)(*e - '0');
    }
    *out = v > CCM_JOB_MAX_LEN ? CCM_JOB_NEVER : v;
    return 1;
}

static void ccm_choose(void)
{
    size_t v[CCM_TIERS];
    const char *how = "environment";
    if (ccm_env(&v[0])) {
        for (unsigned t = 1; t < CCM_TIERS; t++)
            v[t] = v[0];
    } else if (ccm_calibrate(v)) {
        how = "calibrated";
    } else {
        for (unsigned t = 0; t < CCM_TIERS; t++)
            v[t] = QO_CCM_JOB_MIN_LEN;
        how = "default";
    }
    for (unsigned t = 0; t < CCM_TIERS; t++)
        atomic_store_explicit(&ccm_tier_len[t], v[t], memory_order_relaxed);
    atomic_store_explicit(&ccm_job_min_len_how, how, memory_order_release);
}

size_t quicoff_ccm_job_min_len(unsigned jobs, const char **how)
{
    if (!ipsecmb_available()) {
        if (how)
            *how = "unavailable";
        return 0;
    }
    pthread_once(&ccm_once, ccm_choose);
    if (how)
        *how = atomic_load_explicit(&ccm_job_min_len_how, memory_order_acquire);
    unsigned t = CCM_TIERS;
    while (t > 0 && jobs < 4u << (t - 1))
        t--;
    return t == 0 ? CCM_JOB_NEVER
                  : atomic_load_explicit(&ccm_tier_len[t - 1], memory_order_relaxed);
}

quicoff_status_t quicoff_ccm_set_job_min_len(size_t len)
{
    if (!ipsecmb_available())
        return QUICOFF_BACKEND_UNAVAILABLE;
    pthread_once(&ccm_once, ccm_choose); /* a later first key must not override it */
    if (len > CCM_JOB_MAX_LEN)
        len = CCM_JOB_NEVER;
    for (unsigned t = 0; t < CCM_TIERS; t++)
        atomic_store_explicit(&ccm_tier_len[t], len, memory_order_relaxed);
    atomic_store_explicit(&ccm_job_min_len_how, "set", memory_order_release);
    return QUICOFF_OK;
}

/* ------------------------------------------------------------------------ */
/* Header protection                                                         */

static int hp_aes128_setup(void *ctx, const uint8_t *key)
{
    return aes_setup(ctx, key, 16);
}

static int hp_aes256_setup(void *ctx, const uint8_t *key)
{
    return aes_setup(ctx, key, 32);
}

/* §5.4.3: mask = AES-ECB(hp_key, sample)[0..5).  nr = 10 or 14 rounds. */
QO_AESNI static inline void aes_mask(const __m128i *rk, int nr, const uint8_t *sample,
                                     uint8_t mask[5])
{
    uint8_t out[16];
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)sample), rk[0]);
    for (int r = 1; r < nr; r++)
        b = _mm_aesenc_si128(b, rk[r]);
    _mm_storeu_si128((__m128i *)out, _mm_aesenclast_si128(b, rk[nr]));
    qo_hp_mask_from_block(mask, out);
}

QO_AESNI static int hp_aes128_mask(void *ctx, const uint8_t sample[QUICOFF_SAMPLE_LEN],
                                   uint8_t mask[5])
{
    aes_mask(((const struct aes_ctx *)ctx)->rk, 10, sample, mask);
    return 0;
}

QO_AESNI static int hp_aes256_mask(void *ctx, const uint8_t sample[QUICOFF_SAMPLE_LEN],
                                   uint8_t mask[5])
{
    aes_mask(((const struct aes_ctx *)ctx)->rk, 14, sample, mask);
    return 0;
}

/* Eight blocks in flight, each under its own key: AES-NI's latency (several
 * cycles per round) is hidden behind the other seven. */
#define HP_LANES 8

QO_AESNI static inline void aes_masks(void *const ctx[], const uint8_t *const samples[],
                                      uint8_t (*masks)[5], unsigned n, int nr)
{
    unsigned i = 0;

    for (; n - i >= HP_LANES; i += HP_LANES) {
        const __m128i *rk[HP_LANES];
        __m128i b[HP_LANES];
        uint8_t out[HP_LANES][16];
        for (int l = 0; l < HP_LANES; l++) {
            rk[l] = ((const struct aes_ctx *)ctx[i + l])->rk;
            b[l] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)samples[i + l]), rk[l][0]);
        }
        for (int r = 1; r < nr; r++)
            for (int l = 0; l < HP_LANES; l++)
                b[l] = _mm_aesenc_si128(b[l], rk[l][r]);
        for (int l = 0; l < HP_LANES; l++) {
            _mm_storeu_si128((__m128i *)out[l], _mm_aesenclast_si128(b[l], rk[l][nr]));
            qo_hp_mask_from_block(masks[i + l], out[l]);
        }
    }
    for (; i < n; i++)
        aes_mask(((const struct aes_ctx *)ctx[i])->rk, nr, samples[i], masks[i]);
}

QO_AESNI static int hp_aes128_mask_burst(void *const ctx[], const uint8_t *const samples[],
                                         uint8_t (*masks)[5], unsigned n)
{
    aes_masks(ctx, samples, masks, n, 10);
    return 0;
}

QO_AESNI static int hp_aes256_mask_burst(void *const ctx[], const uint8_t *const samples[],
                                         uint8_t (*masks)[5], unsigned n)
{
    aes_masks(ctx, samples, masks, n, 14);
    return 0;
}

static int hp_chacha20_setup(void *ctx, const uint8_t *key)
{
    qo_chacha20_key_init(ctx, key);
    return 0;
}

static void hp_chacha20_dispose(void *ctx)
{
    qo_secure_zero(ctx, sizeof(struct qo_chacha20_key));
}

static int hp_chacha20_mask(void *ctx, const uint8_t sample[QUICOFF_SAMPLE_LEN], uint8_t mask[5])
{
    qo_chacha20_hp_mask(ctx, sample, mask);
    return 0;
}

static int hp_chacha20_mask_burst(void *const ctx[], const uint8_t *const samples[],
                                  uint8_t (*masks)[5], unsigned n)
{
    /* The context is the key: the pointer arrays have the same layout. */
    qo_chacha20_hp_masks((const struct qo_chacha20_key *const *)ctx, samples, masks, n);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Descriptors                                                               */

static const qo_aead_algo_t aes128gcm = {
    .name = "aes-128-gcm",
    .suite = QUICOFF_AES_128_GCM,
    .ctx_size = sizeof(struct gcm_key_data),
    .setup = gcm128_setup,
    .dispose = gcm_dispose,
    .seal = gcm128_seal,
    .open = gcm128_open,
};

static const qo_aead_algo_t aes256gcm = {
    .name = "aes-256-gcm",
    .suite = QUICOFF_AES_256_GCM,
    .ctx_size = sizeof(struct gcm_key_data),
    .setup = gcm256_setup,
    .dispose = gcm_dispose,
    .seal = gcm256_seal,
    .open = gcm256_open,
};

static const qo_aead_algo_t aes128ccm = {
    .name = "aes-128-ccm",
    .suite = QUICOFF_AES_128_CCM,
    .ctx_size = sizeof(struct aes_ctx),
    .setup = ccm_setup,
    .dispose = aes_dispose,
    .seal = ccm_seal,
    .open = ccm_open,
    .seal_burst = ccm_seal_burst,
    .open_burst = ccm_open_burst,
};

static const qo_aead_algo_t chacha20poly1305 = {
    .name = "chacha20-poly1305",
    .suite = QUICOFF_CHACHA20_POLY1305,
    .ctx_size = sizeof(struct qo_chacha20_key),
    .setup = cp_setup,
    .dispose = cp_dispose,
    .seal = cp_seal,
    .open = cp_open,
    .seal_burst = cp_seal_burst,
    .open_burst = cp_open_burst,
};

static const qo_hp_algo_t hp_aes128 = {
    .name = "aes-128-ecb",
    .ctx_size = sizeof(struct aes_ctx),
    .setup = hp_aes128_setup,
    .dispose = aes_dispose,
    .mask = hp_aes128_mask,
    .mask_burst = hp_aes128_mask_burst,
};

static const qo_hp_algo_t hp_aes256 = {
    .name = "aes-256-ecb",
    .ctx_size = sizeof(struct aes_ctx),
    .setup = hp_aes256_setup,
    .dispose = aes_dispose,
    .mask = hp_aes256_mask,
    .mask_burst = hp_aes256_mask_burst,
};

static const qo_hp_algo_t hp_chacha20 = {
    .name = "chacha20",
    .ctx_size = sizeof(struct qo_chacha20_key),
    .setup = hp_chacha20_setup,
    .dispose = hp_chacha20_dispose,
    .mask = hp_chacha20_mask,
    .mask_burst = hp_chacha20_mask_burst,
};

const qo_backend_t qo_backend_ipsecmb = {
    .name = "ipsec-mb",
    .available = ipsecmb_available,
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
    .worker_init = ipsecmb_worker_init,
    .worker_fini = ipsecmb_worker_fini,
};

/* Header protection on the AES-NI code above, with the key schedules of a
 * burst's keys computed four to a zmm (gcm_vaes.c) for tables whose
 * schedules are not read from memory (protect.c). aes_ctx is the round
 * keys alone, the layout qo_aes_round_keys_lanes writes. */
static void hp_aes128_expand(void *const ctx[], const uint8_t *const key[], unsigned n)
{
    qo_aes_round_keys_lanes(ctx, key, n, 16);
}

static void hp_aes256_expand(void *const ctx[], const uint8_t *const key[], unsigned n)
{
    qo_aes_round_keys_lanes(ctx, key, n, 32);
}

static const qo_hp_algo_t hp_aes128_vaes = {
    .name = "aes-128-ecb",
    .ctx_size = sizeof(struct aes_ctx),
    .setup = hp_aes128_setup,
    .dispose = aes_dispose,
    .mask = hp_aes128_mask,
    .mask_burst = hp_aes128_mask_burst,
    .expand = hp_aes128_expand,
};

static const qo_hp_algo_t hp_aes256_vaes = {
    .name = "aes-256-ecb",
    .ctx_size = sizeof(struct aes_ctx),
    .setup = hp_aes256_setup,
    .dispose = aes_dispose,
    .mask = hp_aes256_mask,
    .mask_burst = hp_aes256_mask_burst,
    .expand = hp_aes256_expand,
};

/*
 * The same backend with AES-GCM from gcm_vaes.c, on CPUs with AVX-512 +
 * VAES + VPCLMULQDQ: about twice as fast per short packet as the direct API
 * above, with burst entry points, and without ipsec-mb 1.3's per-call store
 * to a process-global errno.  backend.c lists it first, under the same name,
 * so "auto" and "ipsec-mb" take it where the CPU has those extensions and
 * the plain one elsewhere.  (Header protection stays on the AES-NI code
 * above: a VAES mask_burst, four samples to a zmm, measured no faster.)
 */
static int ipsecmb_vaes_available(void)
{
    return ipsecmb_available() && qo_gcm_vaes_available();
}

const qo_backend_t qo_backend_ipsecmb_vaes = {
    .name = "ipsec-mb",
    .available = ipsecmb_vaes_available,
    .aead =
        {
            [QUICOFF_AES_128_GCM] = &qo_aes128gcm_vaes,
            [QUICOFF_AES_256_GCM] = &qo_aes256gcm_vaes,
            [QUICOFF_AES_128_CCM] = &aes128ccm,
            [QUICOFF_CHACHA20_POLY1305] = &chacha20poly1305,
        },
    .hp =
        {
            [QUICOFF_AES_128_GCM] = &hp_aes128_vaes,
            [QUICOFF_AES_256_GCM] = &hp_aes256_vaes,
            [QUICOFF_AES_128_CCM] = &hp_aes128_vaes,
            [QUICOFF_CHACHA20_POLY1305] = &hp_chacha20,
        },
    .worker_init = ipsecmb_worker_init,
    .worker_fini = ipsecmb_worker_fini,
};

#else
/* Without libIPSec_MB: no crossover to choose. */
size_t quicoff_ccm_job_min_len(unsigned jobs, const char **how)
{
    (void)jobs;
    if (how)
        *how = "unavailable";
    return 0;
}

quicoff_status_t quicoff_ccm_set_job_min_len(size_t len)
{
    (void)len;
    return QUICOFF_BACKEND_UNAVAILABLE;
}

int qo_ipsecmb_ccm_vaes(int on)
{
    (void)on;
    return 0;
}
#endif /* QUICOFF_HAVE_IPSECMB */
