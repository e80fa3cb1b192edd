/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ChaCha20-Poly1305 (RFC 8439 §2.8) over a burst of packets, without any
 * library: the ChaCha20 blocks of all the burst's packets (block 0 of each,
 * whose first 32 bytes are its Poly1305 key, and the keystream blocks from
 * counter 1) run in lanes across packets (chacha20.h's block jobs: 16 lanes
 * on AVX-512, 8 on AVX2, one block at a time in portable C), and Poly1305
 * per packet in scalar code (poly1305.h).
 *
 * The arguments are those of the backend interface (crypto.h): ops[i].ctx is
 * a `struct qo_chacha20_key` (qo_chacha20_key_init of the 32-byte key).
 * Nothing allocates; key words, Poly1305 keys and keystream on the stack are
 * wiped before returning.
 */
#ifndef QUICOFF_CHACHA20_POLY1305_H
#define QUICOFF_CHACHA20_POLY1305_H

#include "crypto.h"

/* Each op's data encrypted in place and its tag written; result[i] = 0. */
void qo_chacha20_poly1305_seal_burst(const qo_aead_op_t *ops, unsigned n, int result[]);

/* Each op's tag checked (constant time) over AAD and ciphertext first; only
 * then is its data decrypted in place: result[i] = 0.  On a mismatch the
 * data is not touched: result[i] = -1. */
void qo_chacha20_poly1305_open_burst(const qo_aead_op_t *ops, unsigned n, int result[]);

/* 1 when the lanes beat a library's single-packet code at every length:
 * vector ChaCha20 lanes (16 AVX-512 or 8 AVX2) and Poly1305 lanes (IFMA or
 * AVX2).  Otherwise (portable C: one block and one Poly1305 at a time)
 * long packets are better off in the library's code (backend_ipsecmb.c). */
int qo_chacha20_poly1305_wide(void);

#endif /* QUICOFF_CHACHA20_POLY1305_H */
