/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ipsecmb_bare: the bare intel-ipsec-mb cost of the AEAD of a QUIC packet, a
 * peer of `quicoff bench`.  AEAD only (no header protection, no parsing), so
 * it is the floor under any QUIC stack built on intel-ipsec-mb.
 *
 *   - AES-128-GCM, AES-256-GCM: the direct GCM API (IMB_AES{128,256}_GCM_ENC
 *     and _DEC: one call per packet, key schedule and GHASH table precomputed
 *     once per connection and direction with IMB_AES*_GCM_PRE).
 *   - AES-128-CCM, ChaCha20-Poly1305: the job API (IMB_CIPHER_CCM /
 *     IMB_CIPHER_CHACHA20_POLY1305), a whole pass of packets submitted as
 *     jobs and then flushed, which is how a burst-oriented user drives the
 *     multi-buffer manager.
 * Per packet: the nonce (IV xor PN), seal or open in place with the header
 * as AAD; open compares the tag in constant time.
 * See peer_harness.h for the method and checks, docs/bench.md for context.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <intel-ipsec-mb.h>

#include "peer_harness.h"

struct conn_keys {
    struct gcm_key_data gcm; /* GCM: key schedule + GHASH powers (64-byte aligned) */
    uint8_t aes_exp[16 * 15] __attribute__((aligned(16))); /* CCM: encryption schedule */
    uint8_t raw[32] __attribute__((aligned(16)));          /* ChaCha20: the raw key */
};

struct state {
    int suite;
    unsigned nconns;
    uint8_t iv[IV_LEN];
    struct conn_keys *tx, *rx; /* one per connection and direction */
};

static IMB_MGR *mgr;
static char backend_name[64];

static const char *unsupported(int suite)
{
    (void)suite;
    return NULL; /* all four */
}

static void keys_init(struct conn_keys *k, int suite, const uint8_t *key)
{
    uint8_t dec_exp[16 * 15] __attribute__((aligned(16)));

    switch (suite) {
    case SUITE_AES128GCM:
        IMB_AES128_GCM_PRE(mgr, key, &k->gcm);
        break;
    case SUITE_AES256GCM:
        IMB_AES256_GCM_PRE(mgr, key, &k->gcm);
        break;
    case SUITE_AES128CCM:
        IMB_AES_KEYEXP_128(mgr, key, k->aes_exp, dec_exp);
        break;
    default:
        memcpy(k->raw, key, 32);
        break;
    }
}

static void *setup(int suite, unsigned nconns, const uint8_t *key, const uint8_t *iv,
                   const uint8_t *hp)
{
    struct state *st = xcalloc(1, sizeof *st);

    (void)hp;
    st->suite = suite;
    st->nconns = nconns;
    memcpy(st->iv, iv, IV_LEN);
    if (posix_memalign((void **)&st->tx, 64, sizeof(struct conn_keys) * nconns) ||
        posix_memalign((void **)&st->rx, 64, sizeof(struct conn_keys) * nconns)) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (unsigned c = 0; c < nconns; c++) {
        keys_init(&st->tx[c], suite, key);
        keys_init(&st->rx[c], suite, key);
    }
    return st;
}

static void teardown(void *p)
{
    struct state *st = p;

    if (!st)
        return;
    free(st->tx);
    free(st->rx);
    free(st);
}

/* Geometry of one packet: header length (through the PN), payload length. */
static inline void geometry(const struct pkt *k, size_t *hdr, size_t *plen)
{
    *hdr = k->pn_off + (k->p[0] & 3u) + 1;
    *plen = k->len - *hdr - TAG_LEN;
}

static inline uint64_t read_pn(const struct pkt *k, size_t hdr)
{
    uint64_t t = 0;

    for (size_t i = k->pn_off; i < hdr; i++)
        t = (t << 8) | k->p[i];
    return pn_decode(k->pn, t, (unsigned)(hdr - k->pn_off) * 8);
}

/* ---- GCM: direct API, one call per packet ------------------------------- */

static unsigned gcm_burst(struct state *st, struct pkt *pk, unsigned n, int enc)
{
    struct gcm_context_data ctx;
    uint8_t nonce[IV_LEN], tag[TAG_LEN];
    unsigned bad = 0;
    size_t hdr, plen;

    for (unsigned i = 0; i < n; i++) {
        struct pkt *k = &pk[i];
        uint8_t *p = k->p;
        geometry(k, &hdr, &plen);
        if (enc) {
            const struct gcm_key_data *key = &st->tx[k->conn].gcm;
            make_nonce(nonce, st->iv, k->pn);
            if (st->suite == SUITE_AES128GCM)
                IMB_AES128_GCM_ENC(mgr, key, &ctx, p + hdr, p + hdr, plen, nonce, p, hdr,
                                   p + hdr + plen, TAG_LEN);
            else
                IMB_AES256_GCM_ENC(mgr, key, &ctx, p + hdr, p + hdr, plen, nonce, p, hdr,
                                   p + hdr + plen, TAG_LEN);
        } else {
            const struct gcm_key_data *key = &st->rx[k->conn].gcm;
            make_nonce(nonce, st->iv, read_pn(k, hdr));
            if (st->suite == SUITE_AES128GCM)
                IMB_AES128_GCM_DEC(mgr, key, &ctx, p + hdr, p + hdr, plen, nonce, p, hdr, tag,
                                   TAG_LEN);
            else
                IMB_AES256_GCM_DEC(mgr, key, &ctx, p + hdr, p + hdr, plen, nonce, p, hdr, tag,
                                   TAG_LEN);
            bad += (unsigned)tag_differs(tag, p + hdr + plen);
        }
    }
    return bad;
}

/* ---- CCM and ChaCha20-Poly1305: job API, submit the burst then flush ----- */

static uint8_t job_nonce[PASS_PKTS][IV_LEN];
static uint8_t job_tag[PASS_PKTS][TAG_LEN];

static unsigned job_done(IMB_JOB *job, int enc)
{
    struct pkt *k = job->user_data;
    uintptr_t i = (uintptr_t)job->user_data2;

    if (job->status != IMB_STATUS_COMPLETED)
        return 1;
    if (!enc) {
        size_t hdr, plen;
        geometry(k, &hdr, &plen);
        return (unsigned)tag_differs(job_tag[i], k->p + hdr + plen);
    }
    return 0;
}

static unsigned job_burst(struct state *st, struct pkt *pk, unsigned n, int enc)
{
    unsigned bad = 0, done = 0;
    size_t hdr, plen;
    IMB_JOB *job;

    for (unsigned i = 0; i < n; i++) {
        struct pkt *k = &pk[i];
        const struct conn_keys *key = enc ? &st->tx[k->conn] : &st->rx[k->conn];
        uint8_t *p = k->p;
        unsigned slot = i % PASS_PKTS;

        geometry(k, &hdr, &plen);
        make_nonce(job_nonce[slot], st->iv, enc ? k->pn : read_pn(k, hdr));
        job = IMB_GET_NEXT_JOB(mgr);
        job->cipher_direction = enc ? IMB_DIR_ENCRYPT : IMB_DIR_DECRYPT;
        job->src = p;
        job->dst = p + hdr;
        job->cipher_start_src_offset_in_bytes = hdr;
        job->msg_len_to_cipher_in_bytes = plen;
        job->hash_start_src_offset_in_bytes = hdr;
        job->msg_len_to_hash_in_bytes = plen;
        job->iv = job_nonce[slot];
        job->iv_len_in_bytes = IV_LEN;
        job->auth_tag_output = enc ? p + hdr + plen : job_tag[slot];
        job->auth_tag_output_len_in_bytes = TAG_LEN;
        job->user_data = k;
        job->user_data2 = (void *)(uintptr_t)slot;
        if (st->suite == SUITE_AES128CCM) {
            job->cipher_mode = IMB_CIPHER_CCM;
            job->hash_alg = IMB_AUTH_AES_CCM;
            job->chain_order = enc ? IMB_ORDER_HASH_CIPHER : IMB_ORDER_CIPHER_HASH;
            job->enc_keys = job->dec_keys = key->aes_exp;
            job->key_len_in_bytes = 16;
            job->u.CCM.aad = p;
            job->u.CCM.aad_len_in_bytes = hdr;
        } else {
            job->cipher_mode = IMB_CIPHER_CHACHA20_POLY1305;
            job->hash_alg = IMB_AUTH_CHACHA20_POLY1305;
            job->chain_order = enc ? IMB_ORDER_CIPHER_HASH : IMB_ORDER_HASH_CIPHER;
            job->enc_keys = job->dec_keys = key->raw;
            job->key_len_in_bytes = 32;
            job->u.CHACHA20_POLY1305.aad = p;
            job->u.CHACHA20_POLY1305.aad_len_in_bytes = hdr;
        }
        job = IMB_SUBMIT_JOB(mgr);
        while (job) {
            bad += job_done(job, enc);
            done++;
            job = IMB_GET_COMPLETED_JOB(mgr);
        }
    }
    while ((job = IMB_FLUSH_JOB(mgr)) != NULL) {
        bad += job_done(job, enc);
        done++;
    }
    return bad + (n - done);
}

/* Jobs flushed every job_flush_every packets (IPSECMB_BARE_FLUSH_EVERY; the
 * whole pass by default): an engine that must return each burst of B
 * packets flushes every B, and a flush costs about the same however few
 * jobs it holds, so this is the bare cost at the engine's burst size
 * (bench/ccm_crossover.py compares both). The JSON "burst" stays the pass. */
static unsigned job_flush_every = PASS_PKTS;

static unsigned job_bursts(struct state *st, struct pkt *pk, unsigned n, int enc)
{
    unsigned bad = 0;

    for (unsigned i = 0; i < n; i += job_flush_every)
        bad += job_burst(st, pk + i, n - i < job_flush_every ? n - i : job_flush_every, enc);
    return bad;
}

static unsigned do_protect(void *p, struct pkt *pk, unsigned n)
{
    struct state *st = p;

    return st->suite <= SUITE_AES256GCM ? gcm_burst(st, pk, n, 1) : job_bursts(st, pk, n, 1);
}

static unsigned do_unprotect(void *p, struct pkt *pk, unsigned n)
{
    struct state *st = p;

    return st->suite <= SUITE_AES256GCM ? gcm_burst(st, pk, n, 0) : job_bursts(st, pk, n, 0);
}

int main(int argc, char **argv)
{
    static const char *arch_names[] = {"none", "no-aesni", "sse", "avx", "avx2", "avx512"};
    IMB_ARCH arch = IMB_ARCH_NONE;
    const char *every = getenv("IPSECMB_BARE_FLUSH_EVERY");
    struct peer pr = {"ipsecmb-bare", backend_name, 0,          unsupported,
                      setup,          teardown,     do_protect, do_unprotect};

    if (every != NULL) {
        long v = strtol(every, NULL, 10);
        if (v < 1 || v > PASS_PKTS) {
            fprintf(stderr, "ipsecmb-bare: IPSECMB_BARE_FLUSH_EVERY must be 1..%d\n", PASS_PKTS);
            return 2;
        }
        job_flush_every = (unsigned)v;
        fprintf(stderr, "ipsecmb-bare: CCM/ChaCha20 jobs flushed every %u packets\n",
                job_flush_every);
    }
    mgr = alloc_mb_mgr(0);
    if (!mgr) {
        fprintf(stderr, "ipsecmb-bare: alloc_mb_mgr failed\n");
        return 1;
    }
    init_mb_mgr_auto(mgr, &arch);
    if (imb_get_errno(mgr)) {
        fprintf(stderr, "ipsecmb-bare: init_mb_mgr_auto: %s\n",
                imb_get_strerror(imb_get_errno(mgr)));
        return 1;
    }
    snprintf(backend_name, sizeof backend_name, "intel-ipsec-mb %s %s", imb_get_version_str(),
             arch < IMB_ARCH_NUM ? arch_names[arch] : "?");
    int rc = peer_main(argc, argv, &pr);
    free_mb_mgr(mgr);
    return rc;
}
