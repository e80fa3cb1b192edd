/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The facts of each QUIC cipher suite that do not depend on who implements
 * it (suites.c): its name, key and secret lengths, and the RFC 9001 §6.6
 * usage limits. One table, read by the table, the key schedule and the
 * bindings; a backend's descriptors (crypto.h) hold only what is its own.
 */
#ifndef QUICOFF_SUITES_H
#define QUICOFF_SUITES_H

#include "quicoff/quicoff.h"

struct qo_suite {
    const char *name;   /* "aes-128-gcm": the interface's name, in C, Python and docs */
    uint8_t key_len;    /* AEAD key bytes; the header-protection key has the same length */
    uint8_t secret_len; /* TLS hash output bytes: 32 (SHA-256) or 48 (SHA-384) */
    /* RFC 9001 §6.6, in packets: protected with one key, and failed
     * authentications per connection. */
    uint64_t confidentiality_limit;
    uint64_t integrity_limit;
};

/* Indexed by quicoff_suite_t; check the index (< QUICOFF_SUITE_COUNT) first. */
extern const struct qo_suite qo_suites[QUICOFF_SUITE_COUNT];

#endif
