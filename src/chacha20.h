/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ChaCha20 block function (RFC 8439 §2.3) for QUIC header protection
 * (RFC 9001 §5.4.4) and for the ChaCha20-Poly1305 AEAD's keystream, without
 * any library: one 64-byte block in portable C (on x86-64: in four row
 * vectors, SSSE3 or AVX-512VL), and multi-lane versions (AVX-512: 16 blocks
 * per pass, AVX2: 8) that compute the blocks of a burst's packets in
 * parallel, each lane with its own key, nonce and counter; cpuid picks at
 * run time.
 *
 * Header protection needs exactly one block per packet and only its first
 * 5 bytes, with counter = sample[0..4) little-endian and nonce = sample[4..16).
 * Libraries (OpenSSL's EVP, ipsec-mb's job API) are built for streams and
 * pay more for the set-up of one block than for the block itself.
 */
#ifndef QUICOFF_CHACHA20_H
#define QUICOFF_CHACHA20_H

#include <stddef.h>
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

/* Which implementation qo_chacha20_hp_masks and the block jobs below use:
 * "avx512", "avx2" or "c". */
const char *qo_chacha20_hp_masks_impl(void);
/* For tests: use implementation `name` from now on (process-wide), for the
 * masks and the block jobs alike. 0 ok, -1 when this CPU/build lacks it. */
int qo_chacha20_hp_masks_use(const char *name);

/*
 * Block jobs: the blocks of any number of packets, each block XORed into its
 * packet (or, block 0, copied out as the Poly1305 key), computed as many
 * lanes at a time as the CPU has.  The AEAD queues every block of a burst's
 * packets here, so that short packets fill the lanes as well as long ones
 * do.  A pass's lanes hold runs ("segments") of one packet's consecutive
 * blocks.
 */
#define QO_CHACHA20_LANES_MAX 16

struct qo_chacha20_seg {
    const struct qo_chacha20_key *key;
    const uint8_t *nonce; /* 12 bytes */
    uint8_t *otk;         /* block 0: its first 32 bytes are copied here */
    uint8_t *data;        /* block c >= 1 is XORed into data[64 (c - 1)..] */
    size_t len;           /* bytes of data */
    uint32_t counter;     /* the block in lane `first` */
    uint32_t first, lanes;
};

/* The caller's (on its stack): the queued segments, and room for the inputs
 * and a block between passes.  Holds key words and keystream until
 * qo_chacha20_jobs_finish() wipes it. */
struct qo_chacha20_jobs {
    uint32_t in[12][QO_CHACHA20_LANES_MAX] __attribute__((aligned(64)));
    uint8_t block[64] __attribute__((aligned(64)));
    struct qo_chacha20_seg seg[QO_CHACHA20_LANES_MAX];
    unsigned nseg;
    unsigned n;     /* lanes filled */
    unsigned lanes; /* a pass runs when this many are filled */
    int impl;
};

/* Lanes per pass of the implementation in use: 16, 8 or 1. */
unsigned qo_chacha20_lanes(void);

void qo_chacha20_jobs_start(struct qo_chacha20_jobs *j);
/* Queues a packet's blocks: block 0 into otk[0..32) when otk is not NULL,
 * then blocks 1..ceil(len / 64) XORed into data[0..len).  Runs passes as
 * lanes fill; the bytes are final after the next qo_chacha20_jobs_run(). */
void qo_chacha20_jobs_add(struct qo_chacha20_jobs *j, const struct qo_chacha20_key *key,
                          const uint8_t *nonce, uint8_t *otk, uint8_t *data, size_t len);
/* Runs what is queued now. */
void qo_chacha20_jobs_run(struct qo_chacha20_jobs *j);
/* Runs what is queued, then wipes *j. */
void qo_chacha20_jobs_finish(struct qo_chacha20_jobs *j);

#endif /* QUICOFF_CHACHA20_H */
