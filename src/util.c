/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names and sizes shared by the C library, the Python package and the docs.
 * The strings are part of the interface: keep them stable.
 */
#include "crypto.h"

#include <openssl/crypto.h>
#include <string.h>

static const char *const status_names[QUICOFF_STATUS_COUNT] = {
    [QUICOFF_OK] = "ok",
    [QUICOFF_UNKNOWN_CONNECTION] = "unknown_connection",
    [QUICOFF_AUTH_FAILED] = "auth_failed",
    [QUICOFF_MALFORMED] = "malformed",
    [QUICOFF_KEY_PHASE_UNAVAILABLE] = "key_phase_unavailable",
    [QUICOFF_USAGE_LIMIT_REACHED] = "usage_limit_reached",
    [QUICOFF_KEY_EXHAUSTED] = "key_exhausted",
    [QUICOFF_UNSUPPORTED] = "unsupported",
    [QUICOFF_NO_SPACE] = "no_space",
    [QUICOFF_INVALID_ARGUMENT] = "invalid_argument",
    [QUICOFF_EXISTS] = "exists",
    [QUICOFF_TABLE_FULL] = "table_full",
    [QUICOFF_NO_MEMORY] = "no_memory",
    [QUICOFF_BACKEND_UNAVAILABLE] = "backend_unavailable",
};

static const char *const suite_names[QUICOFF_SUITE_COUNT] = {
    [QUICOFF_AES_128_GCM] = "aes-128-gcm",
    [QUICOFF_AES_256_GCM] = "aes-256-gcm",
    [QUICOFF_AES_128_CCM] = "aes-128-ccm",
    [QUICOFF_CHACHA20_POLY1305] = "chacha20-poly1305",
};

const char *quicoff_status_name(quicoff_status_t s)
{
    /* The enum may hold any int (e.g. a value from Python): never index blindly. */
    if ((unsigned)s >= QUICOFF_STATUS_COUNT)
        return "unknown";
    return status_names[s];
}

const char *quicoff_suite_name(quicoff_suite_t s)
{
    if ((unsigned)s >= QUICOFF_SUITE_COUNT)
        return "unknown";
    return suite_names[s];
}

quicoff_suite_t quicoff_suite_from_name(const char *name)
{
    if (name == NULL)
        return QUICOFF_SUITE_COUNT;
    for (unsigned i = 0; i < QUICOFF_SUITE_COUNT; i++)
        if (strcmp(name, suite_names[i]) == 0)
            return (quicoff_suite_t)i;
    return QUICOFF_SUITE_COUNT;
}

size_t quicoff_suite_secret_len(quicoff_suite_t suite)
{
    switch (suite) {
    case QUICOFF_AES_256_GCM:
        return 48; /* TLS_AES_256_GCM_SHA384 */
    case QUICOFF_AES_128_GCM:
    case QUICOFF_AES_128_CCM:
    case QUICOFF_CHACHA20_POLY1305:
        return 32;
    default:
        return 0;
    }
}

size_t quicoff_suite_key_len(quicoff_suite_t suite)
{
    switch (suite) {
    case QUICOFF_AES_128_GCM:
    case QUICOFF_AES_128_CCM:
        return 16;
    case QUICOFF_AES_256_GCM:
    case QUICOFF_CHACHA20_POLY1305:
        return 32;
    default:
        return 0;
    }
}

void qo_secure_zero(void *p, size_t n)
{
    /* OPENSSL_cleanse writes through a volatile function pointer, so the
     * compiler cannot drop it as a dead store before free() or return. */
    if (p != NULL && n != 0)
        OPENSSL_cleanse(p, n);
}
