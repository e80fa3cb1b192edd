/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Crypto backend interface (internal).
 *
 * As picotls does it: constant algorithm descriptors (context size, function
 * pointers) per suite, and a context of ctx_size bytes that the caller owns
 * (the connection table embeds it in the entry).  A backend is a table of
 * descriptors; qo_backend_find() picks one at run time.  What a suite is
 * whoever implements it (key length, RFC 9001 §6.6 limits, name) is in the
 * one suite table, suites.h.
 *
 * Contracts every backend keeps:
 *  - seal/open work in place, never allocate on the per-packet path (what a
 *    thread needs of its own is made by worker_init, when its worker is);
 *  - open returns 0 on success; on tag mismatch returns -1 and leaves the data
 *    bytes exactly as they were (the caller may hand the packet on unchanged);
 *    the tag compare is constant time (the libraries' own);
 *  - a context is used by one thread at a time;
 *  - dispose zeroes everything secret in the context.
 */
#ifndef QUICOFF_CRYPTO_H
#define QUICOFF_CRYPTO_H

#include "quicoff/quicoff.h"
#include "suites.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Scratch given to open(): a backend that cannot decrypt in place without
 * destroying the ciphertext on failure (OpenSSL CCM cleanses its output)
 * decrypts there first. At least QO_SCRATCH_LEN bytes. */
#define QO_SCRATCH_LEN 65536

/* One packet of a seal_burst/open_burst call: the arguments of one
 * seal()/open() call (tag: written by seal, read by open).  The nonce is
 * bytes 0..11 of nonce[]; 16 so that a backend may load it as one vector
 * (bytes 12..15 are ignored). */
typedef struct qo_aead_op {
    void *ctx;
    const uint8_t *aad;
    uint8_t *data;
    uint8_t *tag;
    size_t aad_len, len;
    uint8_t nonce[16];
} qo_aead_op_t;

typedef struct qo_aead_algo {
    const char *name;      /* "aes-128-gcm", ...: for diagnostics */
    quicoff_suite_t suite; /* key length, limits: qo_suites[suite] (suites.h) */
    size_t ctx_size;       /* bytes of context */
    /* returns 0 ok, -1 failure (e.g. library refused) */
    int (*setup)(void *ctx, const uint8_t *key);
    void (*dispose)(void *ctx);
    /* data[0..len) encrypted in place; 16-byte tag written at tag. 0 ok. */
    int (*seal)(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad, size_t aad_len,
                uint8_t *data, size_t len, uint8_t *tag);
    /* data[0..len) decrypted in place if tag verifies. 0 ok, -1 auth failed
     * (data unchanged). scratch: QO_SCRATCH_LEN bytes the backend may use. */
    int (*open)(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad, size_t aad_len,
                uint8_t *data, size_t len, const uint8_t *tag, uint8_t *scratch);
    /* Optional, NULL when absent: n packets at once, op i under ops[i].ctx
     * (contexts of this algorithm; may differ or repeat), so a backend can
     * keep several packets in flight.  Same result as n seal()/open() calls
     * in order: result[i] is what seal()/open() would return for op i, with
     * their contracts (open: on -1 the data is as received).  A backend
     * that needs open()'s scratch has no open_burst.
     * wstate: the calling worker's state from the backend's worker_init, or
     * NULL (no worker_init, or a caller without a worker): the results are
     * the same either way, only the speed may differ. */
    void (*seal_burst)(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[]);
    void (*open_burst)(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[]);
    /* Optional, NULL when absent: the contexts of n keys at once (key i into
     * ctx[i], contexts of this algorithm, aligned as setup wants them),
     * complete only for packets of at most aad_len bytes of AAD and len of
     * data: a key schedule computed per burst instead of read from memory
     * (docs/benchmarks.md, "Key schedules computed per burst").  A context
     * must have been zeroed once before its first expand. */
    void (*expand)(void *const ctx[], const uint8_t *const key[], unsigned n, size_t aad_len,
                   size_t len);
} qo_aead_algo_t;

/*
 * A header-protection mask is read as byte 0 (the first byte's bits) and
 * bytes 1..4 as one 32-bit load (the PN field, protect.c's pn_mask).  Every
 * writer stores it the same way: a 5-byte memcpy compiles to a store of
 * bytes 0..3 and one of byte 4, and a load of bytes 1..4 that spans two
 * stores still in the store buffer cannot be forwarded from them, which
 * stalls the load until both reach the cache (docs/benchmarks.md, "Masks
 * stored as they are read").
 */
static inline void qo_hp_mask_put(uint8_t mask[5], uint8_t first, uint32_t pn_bytes_ne)
{
    mask[0] = first;
    memcpy(mask + 1, &pn_bytes_ne, 4);
}

/* Mask bytes 0..4 from a cipher's output block (AES-ECB: its first 5 bytes). */
static inline void qo_hp_mask_from_block(uint8_t mask[5], const uint8_t *block)
{
    uint32_t w;
    memcpy(&w, block + 1, 4);
    qo_hp_mask_put(mask, block[0], w);
}

/* A mask copied with the same two stores (and loads matching its writer's). */
static inline void qo_hp_mask_copy(uint8_t dst[5], const uint8_t src[5])
{
    qo_hp_mask_from_block(dst, src);
}

typedef struct qo_hp_algo {
    const char *name; /* "aes-128-ecb", "aes-256-ecb", "chacha20" */
    size_t ctx_size;  /* the key is the suite's key_len bytes (suites.h) */
    int (*setup)(void *ctx, const uint8_t *key);
    void (*dispose)(void *ctx);
    /* RFC 9001 §5.4.3/5.4.4: the 5-byte mask for one 16-byte sample. 0 ok. */
    int (*mask)(void *ctx, const uint8_t sample[QUICOFF_SAMPLE_LEN], uint8_t mask[5]);
    /* Optional, NULL when absent: the masks of n samples at once, sample i
     * under ctx[i] (contexts of this algorithm; may differ or repeat), so a
     * backend can keep several blocks in flight.  Same result as n mask()
     * calls. 0 ok. */
    int (*mask_burst)(void *const ctx[], const uint8_t *const samples[], uint8_t (*masks)[5],
                      unsigned n);
    /* Optional, NULL when absent: the contexts of n keys at once (key i into
     * ctx[i], aligned as setup wants them), as the AEAD's expand. */
    void (*expand)(void *const ctx[], const uint8_t *const key[], unsigned n);
} qo_hp_algo_t;

typedef struct qo_backend {
    const char *name;       /* "openssl", ... */
    int (*available)(void); /* 1 when usable on this CPU/build */
    const qo_aead_algo_t *aead[QUICOFF_SUITE_COUNT];
    const qo_hp_algo_t *hp[QUICOFF_SUITE_COUNT];
    /* Optional, NULL when absent (OpenSSL): per-thread state the bursts need
     * (ipsec-mb: a job manager), owned by a quicoff_worker so that the data
     * path never allocates.  worker_init runs in quicoff_worker_create (0 ok:
     * *state set; a failure fails the worker's creation), worker_fini in
     * quicoff_worker_destroy; the state is used by that worker's thread only
     * and handed to seal_burst/open_burst as wstate. */
    int (*worker_init)(void **state);
    void (*worker_fini)(void *state);
} qo_backend_t;

extern const qo_backend_t qo_backend_openssl;
extern const qo_backend_t qo_backend_ipsecmb; /* only with QUICOFF_HAVE_IPSECMB */
/* The same with AES-GCM from gcm_vaes.c: "ipsec-mb" on CPUs with AVX-512,
 * VAES and VPCLMULQDQ (only with QUICOFF_HAVE_IPSECMB). */
extern const qo_backend_t qo_backend_ipsecmb_vaes;

/* AES-GCM on AVX-512 + VAES + VPCLMULQDQ (gcm_vaes.c), with seal_burst and
 * open_burst.  Usable when qo_gcm_vaes_available() (x86-64 CPUs with those
 * extensions; always 0 elsewhere).  Contexts 64-byte aligned. */
extern const qo_aead_algo_t qo_aes128gcm_vaes, qo_aes256gcm_vaes;
int qo_gcm_vaes_available(void);
/* AES round keys rk[0..nr] of n keys of key_len bytes (16 or 32), four at a
 * time in zmm lanes, into rk[i] (16-byte aligned, 15 x 16 bytes: the layout
 * of the AES header-protection and GCM contexts' first member). Only when
 * qo_gcm_vaes_available(). */
void qo_aes_round_keys_lanes(void *const rk[], const uint8_t *const key[], unsigned n,
                             size_t key_len);

/* "auto" or NULL: the fastest available; otherwise by name. NULL if none. */
const qo_backend_t *qo_backend_find(const char *name);

/* HKDF (RFC 5869) with the suite's hash, and TLS 1.3 HKDF-Expand-Label
 * (RFC 8446 §7.1) with an empty context. 0 ok. Implemented on OpenSSL; used on
 * the control path only. */
int qo_hkdf_extract_sha256(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                           size_t ikm_len, uint8_t out[32]);
int qo_hkdf_expand_label(quicoff_suite_t suite, const uint8_t *secret, size_t secret_len,
                         const char *label, uint8_t *out, size_t out_len);

/* Wipes secrets in a way the compiler cannot remove. */
void qo_secure_zero(void *p, size_t n);
/* size zeroed bytes, cache-line aligned, on transparent huge pages where it
 * is large (util.c); free() releases it. For the table's slot array and index. */
void *qo_alloc_big_zeroed(size_t size);

#endif /* QUICOFF_CRYPTO_H */
