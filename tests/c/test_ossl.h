/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OpenSSL as the oracle for header protection: the tests that must not
 * trust libquicoff's own mask (test_badinput, test_grease) compute it here.
 * Header-only, as test_util.h and test_packets.h.
 */
#ifndef QUICOFF_TEST_OSSL_H
#define QUICOFF_TEST_OSSL_H

#include "quicoff/quicoff.h"

#include <stdint.h>
#include <string.h>

#include <openssl/evp.h>

/* The header-protection mask of a 16-byte sample (RFC 9001 §5.4.3 AES-ECB,
 * §5.4.4 ChaCha20), with OpenSSL EVP. */
static inline void ossl_hp_mask(quicoff_suite_t suite, const uint8_t *hp, const uint8_t sample[16],
                                uint8_t mask[5])
{
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    uint8_t out[32];
    int outl = 0;
    if (suite == QUICOFF_CHACHA20_POLY1305) {
        static const uint8_t zero[5];
        /* EVP's ChaCha20 IV is the 4-byte little-endian counter then the
         * 12-byte nonce: exactly the sample's layout */
        EVP_EncryptInit_ex(x, EVP_chacha20(), NULL, hp, sample);
        EVP_EncryptUpdate(x, out, &outl, zero, 5);
    } else {
        EVP_EncryptInit_ex(x, suite == QUICOFF_AES_256_GCM ? EVP_aes_256_ecb() : EVP_aes_128_ecb(),
                           NULL, hp, NULL);
        EVP_CIPHER_CTX_set_padding(x, 0);
        EVP_EncryptUpdate(x, out, &outl, sample, 16);
    }
    EVP_CIPHER_CTX_free(x);
    memcpy(mask, out, 5);
}

#endif
