/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The suite table (suites.h) and the public accessors that read it. The
 * names are part of the interface: keep them stable.
 */
#include "suites.h"

#include <string.h>

/* RFC 9001 §6.6. AES-CCM's 2^21.5 is rounded down, for both limits;
 * ChaCha20-Poly1305 has no confidentiality limit: 2^62 is the whole
 * packet-number space. */
const struct qo_suite qo_suites[QUICOFF_SUITE_COUNT] = {
    [QUICOFF_AES_128_GCM] = {.name = "aes-128-gcm",
                             .key_len = 16,
                             .secret_len = 32,
                             .confidentiality_limit = UINT64_C(1) << 23,
                             .integrity_limit = UINT64_C(1) << 52},
    [QUICOFF_AES_256_GCM] = {.name = "aes-256-gcm",
                             .key_len = 32,
                             .secret_len = 48,
                             .confidentiality_limit = UINT64_C(1) << 23,
                             .integrity_limit = UINT64_C(1) << 52},
    [QUICOFF_AES_128_CCM] = {.name = "aes-128-ccm",
                             .key_len = 16,
                             .secret_len = 32,
                             .confidentiality_limit = UINT64_C(2965820),
                             .integrity_limit = UINT64_C(2965820)},
    [QUICOFF_CHACHA20_POLY1305] = {.name = "chacha20-poly1305",
                                   .key_len = 32,
                                   .secret_len = 32,
                                   .confidentiality_limit = UINT64_C(1) << 62,
                                   .integrity_limit = UINT64_C(1) << 36},
};

const char *quicoff_suite_name(quicoff_suite_t s)
{
    /* The enum may hold any int (e.g. a value from Python): never index blindly. */
    if ((unsigned)s >= QUICOFF_SUITE_COUNT)
        return "unknown";
    return qo_suites[s].name;
}

quicoff_suite_t quicoff_suite_from_name(const char *name)
{
    if (name == NULL)
        return QUICOFF_SUITE_COUNT;
    for (unsigned i = 0; i < QUICOFF_SUITE_COUNT; i++)
        if (strcmp(name, qo_suites[i].name) == 0)
            return (quicoff_suite_t)i;
    return QUICOFF_SUITE_COUNT;
}

size_t quicoff_suite_secret_len(quicoff_suite_t suite)
{
    return (unsigned)suite < QUICOFF_SUITE_COUNT ? qo_suites[suite].secret_len : 0;
}

size_t quicoff_suite_key_len(quicoff_suite_t suite)
{
    return (unsigned)suite < QUICOFF_SUITE_COUNT ? qo_suites[suite].key_len : 0;
}
