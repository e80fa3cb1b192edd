/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Poly1305 (RFC 8439 §2.5) as ChaCha20-Poly1305 uses it (§2.8), without any
 * library: one packet's tag over AAD and ciphertext, in scalar code.
 *
 * The AEAD's input is AAD, zeros to a multiple of 16, ciphertext, zeros to a
 * multiple of 16, then the two lengths: every Poly1305 block is a whole
 * 16-byte block, so the partial-block rule of §2.5.1 never applies and the
 * accumulator is a plain loop over blocks.  Limbs of 44, 44 and 42 bits in
 * 64-bit words with 128-bit products (GCC/Clang's unsigned __int128): nine
 * multiplications per block and no carries to chase, which for QUIC's short
 * packets costs less than setting up a vector implementation.
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

#endif /* QUICOFF_POLY1305_H */
