/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ChaCha20-Poly1305 over bursts; see chacha20_poly1305.h.
 *
 * Why lanes across packets: one 64-byte packet needs two ChaCha20 blocks
 * (the Poly1305 key and one block of keystream), and a single block is a
 * 20-round dependency chain that leaves most of a vector unit idle; a
 * library call per packet (ipsec-mb's job API, OpenSSL's EVP) also pays its
 * set-up per packet.  Queuing every block of every packet and computing 16
 * (or 8) at a time keeps the lanes full whatever the packet lengths.
 *
 * Seal: all blocks of a chunk of packets (block 0 copied out as the
 * Poly1305 key, the others XORed into the data), then one Poly1305 per
 * packet over the ciphertext.  Open: block 0 of every packet first, the tags
 * over the ciphertext as received, and the keystream only for the packets
 * whose tag verified, so a forged packet's bytes are never touched.
 */
#include "chacha20_poly1305.h"

#include "chacha20.h"
#include "poly1305.h"

#include <stdint.h>

/* Packets per chunk: their Poly1305 keys (32 bytes each) stay on the stack
 * between the ChaCha20 passes and the tags.  (Chunks of 8 or 16, to keep a
 * chunk's ciphertext in L1 for Poly1305, were no faster.) */
#define CHUNK 32

/* Constant time: no branch or index depends on the bytes. */
static int tag_equal(const uint8_t a[QUICOFF_TAG_LEN], const uint8_t b[QUICOFF_TAG_LEN])
{
    uint8_t d = 0;
    for (int i = 0; i < QUICOFF_TAG_LEN; i++)
        d |= (uint8_t)(a[i] ^ b[i]);
    return ((unsigned)d - 1) >> 31; /* 1 when d == 0 */
}

/* Poly1305's lanes go with ChaCha20's, which tests force (avx512, avx2, c):
 * IFMA with the 16 AVX-512 lanes where the CPU has it, AVX2 with 8 or 16
 * lanes otherwise, one message at a time with the portable code. */
static enum qo_poly1305_impl poly_impl(const struct qo_chacha20_jobs *j)
{
    if (j->lanes == 16 && qo_poly1305_available(QO_POLY1305_IFMA))
        return QO_POLY1305_IFMA;
    if (j->lanes >= 8 && qo_poly1305_available(QO_POLY1305_AVX2))
        return QO_POLY1305_AVX2;
    return QO_POLY1305_SCALAR;
}

static void msg_of(struct qo_poly1305_msg *m, const qo_aead_op_t *o, const uint8_t *otk,
                   uint8_t *tag)
{
    m->otk = otk;
    m->aad = o->aad;
    m->aad_len = o->aad_len;
    m->ct = o->data;
    m->ct_len = o->len;
    m->tag = tag;
}

void qo_chacha20_poly1305_seal_burst(const qo_aead_op_t *ops, unsigned n, int result[])
{
    struct qo_chacha20_jobs j;
    struct qo_poly1305_msg msg[CHUNK];
    uint8_t otk[CHUNK][32];

    qo_chacha20_jobs_start(&j);
    for (unsigned base = 0; base < n; base += CHUNK) {
        unsigned m = n - base < CHUNK ? n - base : CHUNK;
        for (unsigned i = 0; i < m; i++) {
            const qo_aead_op_t *o = &ops[base + i];
            qo_chacha20_jobs_add(&j, o->ctx, o->nonce, otk[i], o->data, o->len);
            msg_of(&msg[i], o, otk[i], o->tag);
        }
        qo_chacha20_jobs_run(&j);
        qo_poly1305_aead_tags(msg, m, poly_impl(&j));
        for (unsigned i = 0; i < m; i++)
            result[base + i] = 0;
    }
    qo_chacha20_jobs_finish(&j);
    qo_secure_zero(otk, sizeof(otk));
}

void qo_chacha20_poly1305_open_burst(const qo_aead_op_t *ops, unsigned n, int result[])
{
    struct qo_chacha20_jobs j;
    struct qo_poly1305_msg msg[CHUNK];
    uint8_t otk[CHUNK][32], tag[CHUNK][QUICOFF_TAG_LEN];

    qo_chacha20_jobs_start(&j);
    for (unsigned base = 0; base < n; base += CHUNK) {
        unsigned m = n - base < CHUNK ? n - base : CHUNK;
        for (unsigned i = 0; i < m; i++) {
            const qo_aead_op_t *o = &ops[base + i];
            qo_chacha20_jobs_add(&j, o->ctx, o->nonce, otk[i], o->data, 0); /* block 0 */
            msg_of(&msg[i], o, otk[i], tag[i]);
        }
        qo_chacha20_jobs_run(&j);
        qo_poly1305_aead_tags(msg, m, poly_impl(&j));
        for (unsigned i = 0; i < m; i++) {
            const qo_aead_op_t *o = &ops[base + i];
            int ok = tag_equal(tag[i], o->tag);
            result[base + i] = ok ? 0 : -1;
            if (ok)
                qo_chacha20_jobs_add(&j, o->ctx, o->nonce, NULL, o->data, o->len);
        }
        qo_chacha20_jobs_run(&j);
    }
    qo_chacha20_jobs_finish(&j);
    qo_secure_zero(otk, sizeof(otk));
}

int qo_chacha20_poly1305_wide(void)
{
    return qo_chacha20_lanes() >= 8 &&
           (qo_poly1305_available(QO_POLY1305_IFMA) || qo_poly1305_available(QO_POLY1305_AVX2));
}
