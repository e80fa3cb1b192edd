/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ngtcp2_bench: ngtcp2's packet protection with its GnuTLS crypto backend
 * (Debian's libngtcp2-crypto-gnutls), a peer of `quicoff bench`.
 *
 * These are the calls ngtcp2 makes per packet once a connection's keys are
 * installed: ngtcp2_crypto_encrypt / ngtcp2_crypto_decrypt with an AEAD
 * context keyed once (ngtcp2_crypto_aead_ctx_{en,de}crypt_init:
 * gnutls_aead_cipher_init), and ngtcp2_crypto_hp_mask with a header-
 * protection cipher context (AES-{128,256}-CBC with a zero IV for the
 * one-block AES-ECB mask, ChaCha20 for ChaCha20-Poly1305: the ciphers
 * ngtcp2's GnuTLS backend picks in ngtcp2_crypto_ctx_tls).  The library does
 * not export its cipher-context constructor, so the HP context is created
 * with gnutls_cipher_init exactly as that constructor does.
 * Per packet: nonce (IV xor PN), seal/open in place with the header as AAD,
 * the HP mask from the sample, mask/unmask of the first byte and PN.
 * Not measured: ngtcp2_conn's packet building and frame parsing.
 * See peer_harness.h for the method and checks, docs/bench.md for context.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "peer_harness.h"

#ifndef NGTCP2_CRYPTO_VERSION
#define NGTCP2_CRYPTO_VERSION "?"
#endif

struct dir_keys {
    ngtcp2_crypto_aead_ctx aead;
    ngtcp2_crypto_cipher_ctx hp;
};

struct state {
    int suite;
    unsigned nconns;
    ngtcp2_crypto_aead aead;
    ngtcp2_crypto_cipher hp;
    uint8_t iv[IV_LEN];
    struct dir_keys *tx, *rx;
};

static char backend_name[96];

static const char *unsupported(int suite)
{
    (void)suite;
    return NULL;
}

static gnutls_cipher_algorithm_t aead_alg(int suite)
{
    switch (suite) {
    case SUITE_AES128GCM:
        return GNUTLS_CIPHER_AES_128_GCM;
    case SUITE_AES256GCM:
        return GNUTLS_CIPHER_AES_256_GCM;
    case SUITE_AES128CCM:
        return GNUTLS_CIPHER_AES_128_CCM;
    default:
        return GNUTLS_CIPHER_CHACHA20_POLY1305;
    }
}

static gnutls_cipher_algorithm_t hp_alg(int suite)
{
    switch (suite) {
    case SUITE_AES128GCM:
    case SUITE_AES128CCM:
        return GNUTLS_CIPHER_AES_128_CBC;
    case SUITE_AES256GCM:
        return GNUTLS_CIPHER_AES_256_CBC;
    default:
        return GNUTLS_CIPHER_CHACHA20_32;
    }
}

static int hp_ctx_init(ngtcp2_crypto_cipher_ctx *ctx, const ngtcp2_crypto_cipher *hp,
                       const uint8_t *key)
{
    gnutls_cipher_algorithm_t alg = (gnutls_cipher_algorithm_t)(intptr_t)hp->native_handle;
    gnutls_datum_t k = {(void *)key, (unsigned)gnutls_cipher_get_key_size(alg)};
    gnutls_cipher_hd_t hd;

    if (gnutls_cipher_init(&hd, alg, &k, NULL) != 0)
        return -1;
    ctx->native_handle = hd;
    return 0;
}

static void teardown(void *p)
{
    struct state *st = p;

    if (!st)
        return;
    for (unsigned c = 0; c < st->nconns; c++) {
        struct dir_keys *d[2] = {&st->tx[c], &st->rx[c]};
        for (int i = 0; i < 2; i++) {
            ngtcp2_crypto_aead_ctx_free(&d[i]->aead);
            if (d[i]->hp.native_handle)
                gnutls_cipher_deinit(d[i]->hp.native_handle);
        }
    }
    free(st->tx);
    free(st->rx);
    free(st);
}

static void *setup(int suite, unsigned nconns, const uint8_t *key, const uint8_t *iv,
                   const uint8_t *hp)
{
    struct state *st = xcalloc(1, sizeof *st);

    st->suite = suite;
    st->nconns = nconns;
    st->aead.native_handle = (void *)(intptr_t)aead_alg(suite);
    st->aead.max_overhead = gnutls_cipher_get_tag_size(aead_alg(suite));
    st->hp.native_handle = (void *)(intptr_t)hp_alg(suite);
    memcpy(st->iv, iv, IV_LEN);
    st->tx = xcalloc(nconns, sizeof *st->tx);
    st->rx = xcalloc(nconns, sizeof *st->rx);
    if (ngtcp2_crypto_aead_keylen(&st->aead) != suite_key_len[suite] ||
        st->aead.max_overhead != TAG_LEN) {
        fprintf(stderr, "ngtcp2-gnutls: unexpected key or tag length for %s\n",
                suite_names[suite]);
        teardown(st);
        return NULL;
    }
    for (unsigned c = 0; c < nconns; c++) {
        if (ngtcp2_crypto_aead_ctx_encrypt_init(&st->tx[c].aead, &st->aead, key, IV_LEN) ||
            ngtcp2_crypto_aead_ctx_decrypt_init(&st->rx[c].aead, &st->aead, key, IV_LEN) ||
            hp_ctx_init(&st->tx[c].hp, &st->hp, hp) || hp_ctx_init(&st->rx[c].hp, &st->hp, hp)) {
            fprintf(stderr, "ngtcp2-gnutls: context setup failed for %s\n", suite_names[suite]);
            st->nconns = c + 1;
            teardown(st);
            return NULL;
        }
    }
    return st;
}

static unsigned do_protect(void *p, struct pkt *pk, unsigned n)
{
    struct state *st = p;
    uint8_t nonce[IV_LEN], mask[NGTCP2_HP_SAMPLELEN];
    unsigned bad = 0;

    for (unsigned i = 0; i < n; i++) {
        struct pkt *k = &pk[i];
        const struct dir_keys *d = &st->tx[k->conn];
        uint8_t *pkt = k->p;
        size_t hdr = k->pn_off + (pkt[0] & 3u) + 1, plen = k->len - hdr - TAG_LEN;

        make_nonce(nonce, st->iv, k->pn);
        if (ngtcp2_crypto_encrypt(pkt + hdr, &st->aead, &d->aead, pkt + hdr, plen, nonce, IV_LEN,
                                  pkt, hdr) != 0 ||
            ngtcp2_crypto_hp_mask(mask, &st->hp, &d->hp, pkt + k->pn_off + 4) != 0) {
            bad++;
            continue;
        }
        hp_apply(pkt, k->pn_off, mask, 0);
    }
    return bad;
}

static unsigned do_unprotect(void *p, struct pkt *pk, unsigned n)
{
    struct state *st = p;
    uint8_t nonce[IV_LEN], mask[NGTCP2_HP_SAMPLELEN];
    unsigned bad = 0;

    for (unsigned i = 0; i < n; i++) {
        struct pkt *k = &pk[i];
        const struct dir_keys *d = &st->rx[k->conn];
        uint8_t *pkt = k->p;

        if (ngtcp2_crypto_hp_mask(mask, &st->hp, &d->hp, pkt + k->pn_off + 4) != 0) {
            bad++;
            continue;
        }
        unsigned pn_len = hp_apply(pkt, k->pn_off, mask, 1);
        size_t hdr = k->pn_off + pn_len, clen = k->len - hdr;
        uint64_t t = 0;
        for (size_t j = k->pn_off; j < hdr; j++)
            t = (t << 8) | pkt[j];
        make_nonce(nonce, st->iv, pn_decode(k->pn, t, pn_len * 8));
        if (ngtcp2_crypto_decrypt(pkt + hdr, &st->aead, &d->aead, pkt + hdr, clen, nonce, IV_LEN,
                                  pkt, hdr) != 0)
            bad++;
    }
    return bad;
}

int main(int argc, char **argv)
{
    struct peer pr = {"ngtcp2-gnutls", backend_name, 1,          unsupported,
                      setup,           teardown,     do_protect, do_unprotect};

    snprintf(backend_name, sizeof backend_name, "ngtcp2-crypto-gnutls %s, gnutls %s",
             NGTCP2_CRYPTO_VERSION, gnutls_check_version(NULL));
    return peer_main(argc, argv, &pr);
}
