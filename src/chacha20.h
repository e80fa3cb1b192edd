/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ChaCha20 block function (RFC 8439 §2.3) for QUIC header protection
 * (RFC 9001 §5.4.4), without any library: one 64-byte block in portable C
 * (on x86-64: in four row vectors, SSSE3 or AVX-512VL), and multi-lane
 * versions (AVX-512: 16 masks per pass, AVX2: 8) that compute the masks of a
 * burst in parallel; cpuid picks at run time.
 *
 * Header protection needs exactly one block per packet and only its first
 * 5 bytes, with counter = sample[0..4) little-endian and nonce = sample[4..16).
 * Libraries (OpenSSL's EVP, ipsec-mb's job API) are built for streams and
 * pay more for the set-up of one block than for the block itself.
 */
#ifndef QUICOFF_CHACHA20_H
#define QUICOFF_CHACHA20_H

#include <stdint.h>

/* A ChaCha20 key as the eight little-endian words of RFC 8439 §2.3. */
struct qo_chacha20_key {
    uint32_t k[8];
};

void qo_chacha20_key_init(struct qo_chacha20_key *key, const uint8_t bytes[32]);

/* RFC 8439 §2.3: the 64-byte block for (key, counter, nonce). */
void qo_chacha20_block(const struct qo_chacha20_key *key, uint32_t counter,
                       const uint8_t nonce[12], uint8_t out[64]);

/* RFC 9001 §5.4.4: mask = ChaCha20(key, sample[0..4) LE, sample[4..16))[0..5). */
void qo_chacha20_hp_mask(const struct qo_chacha20_key *key, const uint8_t sample[16],
                         uint8_t mask[5]);

/* The masks of n samples, each with its own key: 16 (AVX-512F) or 8 (AVX2)
 * lanes at a time when the CPU has them, the portable block otherwise. */
void qo_chacha20_hp_masks(const struct qo_chacha20_key *const keys[],
                          const uint8_t *const samples[], uint8_t (*masks)[5], unsigned n);

/* Which implementation qo_chacha20_hp_masks uses: "avx512", "avx2" or "c". */
const char *qo_chacha20_hp_masks_impl(void);
/* For tests: use implementation `name` from now on (process-wide). 0 ok, -1
 * when this CPU/build lacks it. */
int qo_chacha20_hp_masks_use(const char *name);

#endif /* QUICOFF_CHACHA20_H */
