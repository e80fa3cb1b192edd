/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Poly1305 (RFC 8439 §2.5) as ChaCha20-Poly1305 uses it (§2.8), without any
 * library: a packet's tag over AAD and ciphertext, in scalar code, or eight
 * packets' at once in the lanes of AVX-512 IFMA (52-bit multiply-add).
 *
 * The AEAD's input is AAD, zeros to a multiple of 16, ciphertext, zeros to a
 * multiple of 16, then the two lengths: every Poly1305 block is a whole
 * 16-byte block, so the partial-block rule of §2.5.1 never applies and the
 * accumulator is a plain loop over blocks.  Limbs of 44, 44 and 42 bits in
 * 64-bit words with 128-bit products (GCC/Clang's unsigned __int128): nine
 * multiplications per block.  A block's multiply-and-reduce is a chain of
 * dependent steps, so one packet at a time leaves the multipliers mostly
 * idle: the lanes version runs eight packets' chains side by side.
 */
#ifndef QUICOFF_POLY1305_H
#define QUICOFF_POLY1305_H

#include <stddef.h>
#include <stdint.h>

/* RFC 8439 §2.8: tag = Poly1305(otk, aad | pad16 | ct | pad16 | le64(aad_len) |
 * le64(ct_len)), otk the first 32 bytes of ChaCha20 block 0.  Constant time
 * in the key and the data (only the lengths choose branches). */
void qo_poly1305_aead_tag(const uint8_t otk[32], const uint8_t *aad, size_t aad_len,
                          const uint8_t *ct, size_t ct_len, uint8_t tag[16]);

/* One message of qo_poly1305_aead_tags(). */
struct qo_poly1305_msg {
    const uint8_t *otk; /* 32 bytes */
    const uint8_t *aad, *ct;
    size_t aad_len, ct_len;
    uint8_t *tag; /* 16 bytes out */
};

/* The implementations of qo_poly1305_aead_tags(): one message at a time, or
 * eight messages side by side, one per 64-bit lane, in AVX2 (radix 2^26,
 * two vectors of four lanes) or AVX-512 IFMA (radix 2^44, 52-bit
 * multiply-adds), so that eight multiply-and-reduce chains run in the time
 * of about one. */
enum qo_poly1305_impl { QO_POLY1305_SCALAR, QO_POLY1305_AVX2, QO_POLY1305_IFMA };

/* The tags of n messages, as n qo_poly1305_aead_tag() calls would give them,
 * by impl (which the caller checked with qo_poly1305_available()). */
void qo_poly1305_aead_tags(const struct qo_poly1305_msg *m, unsigned n,
                           enum qo_poly1305_impl impl);

/* 1 when this CPU (and build) has impl. */
int qo_poly1305_available(enum qo_poly1305_impl impl);

#endif /* QUICOFF_POLY1305_H */
