/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QUIC key schedule: RFC 9001 §5.1 (packet keys), §5.2 (Initial secrets),
 * §6.1 (key update) and the QUIC v2 salt and labels of RFC 9369 §3.3.
 *
 * Control path only: clarity over speed.  HKDF is OpenSSL's (EVP_KDF "HKDF"
 * in EXTRACT_ONLY / EXPAND_ONLY mode); only the TLS 1.3 HkdfLabel framing
 * (RFC 8446 §7.1) is built here.  Every intermediate secret is wiped before
 * return, on error paths too.
 */
#include "crypto.h"
#include "qo_bytes.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <string.h>

/* RFC 9001 §5.2 */
static const uint8_t initial_salt_v1[20] = {
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17,
    0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a,
};
/* RFC 9369 §3.3.1 */
static const uint8_t initial_salt_v2[20] = {
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93,
    0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9,
};

/* Labels differ between versions (RFC 9369 §3.3.2); everything else is shared. */
struct version_labels {
    const char *key, *iv, *hp, *ku;
    const uint8_t *salt;
};

static const struct version_labels labels_v1 = {
    "quic key", "quic iv", "quic hp", "quic ku", initial_salt_v1,
};
static const struct version_labels labels_v2 = {
    "quicv2 key", "quicv2 iv", "quicv2 hp", "quicv2 ku", initial_salt_v2,
};

/* Version 0 is the configuration default and means v1.  Unknown versions are
 * refused rather than guessed: a wrong label yields keys that silently fail
 * every packet. */
static const struct version_labels *labels_for(uint32_t version)
{
    if (version == 0 || version == QUICOFF_VERSION_1)
        return &labels_v1;
    if (version == QUICOFF_VERSION_2)
        return &labels_v2;
    return NULL;
}

static const char *digest_for(quicoff_suite_t suite)
{
    return suite == QUICOFF_AES_256_GCM ? "SHA384" : "SHA256";
}

/* One HKDF step.  mode is EVP_KDF_HKDF_MODE_EXTRACT_ONLY or _EXPAND_ONLY;
 * salt is used by extract, info by expand. */
static int hkdf(int mode, const char *digest, const uint8_t *key, size_t key_len,
                const uint8_t *salt, size_t salt_len, const uint8_t *info, size_t info_len,
                uint8_t *out, size_t out_len)
{
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
    EVP_KDF_CTX *kctx = kdf != NULL ? EVP_KDF_CTX_new(kdf) : NULL;
    /* OSSL_PARAM wants non-const pointers; OpenSSL copies and never writes them. */
    static const uint8_t empty[1];
    OSSL_PARAM params[5], *p = params;
    int ret = -1;

    if (kctx == NULL)
        goto out;
    *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)digest, 0);
    /* An empty DCID is a legal extract input; OpenSSL wants a non-NULL pointer. */
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)(key_len ? key : empty),
                                             key_len);
    if (mode == EVP_KDF_HKDF_MODE_EXTRACT_ONLY)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    else
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)info, info_len);
    *p = OSSL_PARAM_construct_end();

    if (EVP_KDF_derive(kctx, out, out_len, params) == 1)
        ret = 0;
out:
    EVP_KDF_CTX_free(kctx); /* clears the key copy it holds */
    EVP_KDF_free(kdf);
    return ret;
}

int qo_hkdf_extract_sha256(const uint8_t *salt, size_t salt_len, const uint8_t *ikm,
                           size_t ikm_len, uint8_t out[32])
{
    if (salt == NULL || (ikm == NULL && ikm_len != 0) || out == NULL)
        return -1;
    /* In HKDF-Extract the salt is the HMAC key and the IKM the message
     * (RFC 5869 §2.2); OpenSSL's parameters are named for that role swap. */
    return hkdf(EVP_KDF_HKDF_MODE_EXTRACT_ONLY, "SHA256", ikm, ikm_len, salt, salt_len, NULL, 0,
                out, 32);
}

int qo_hkdf_expand_label(quicoff_suite_t suite, const uint8_t *secret, size_t secret_len,
                         const char *label, uint8_t *out, size_t out_len)
{
    static const char prefix[] = "tls13 ";
    const size_t prefix_len = sizeof(prefix) - 1;
    /* struct { uint16 length; opaque label<7..255>; opaque context<0..255>; } */
    uint8_t info[2 + 1 + 255 + 1];
    size_t label_len, n = 0;

    if ((unsigned)suite >= QUICOFF_SUITE_COUNT || secret == NULL || secret_len == 0 ||
        label == NULL || out == NULL || out_len == 0 || out_len > 0xffff)
        return -1;
    label_len = strlen(label);
    if (prefix_len + label_len > 255)
        return -1;

    qo_store_be16(info + n, (uint16_t)out_len); /* HkdfLabel.length, RFC 8446 §7.1 */
    n += 2;
    info[n++] = (uint8_t)(prefix_len + label_len);
    memcpy(info + n, prefix, prefix_len);
    n += prefix_len;
    memcpy(info + n, label, label_len);
    n += label_len;
    info[n++] = 0; /* empty context: QUIC never uses one */

    return hkdf(EVP_KDF_HKDF_MODE_EXPAND_ONLY, digest_for(suite), secret, secret_len, NULL, 0,
                info, n, out, out_len);
}

/* The secret must be exactly the suite's hash length: TLS traffic secrets
 * always are, and a mismatch means the caller mixed up suites. */
static int secret_ok(quicoff_suite_t suite, const uint8_t *secret, size_t secret_len)
{
    return (unsigned)suite < QUICOFF_SUITE_COUNT && secret != NULL &&
           secret_len == quicoff_suite_secret_len(suite);
}

quicoff_status_t quicoff_derive_packet_keys(quicoff_suite_t suite, const uint8_t *secret,
                                            size_t secret_len, uint32_t version,
                                            struct quicoff_packet_keys *out)
{
    const struct version_labels *l = labels_for(version);
    size_t key_len;

    if (out == NULL)
        return QUICOFF_INVALID_ARGUMENT;
    /* Unused key bytes stay zero, so entries compare and hash predictably. */
    memset(out, 0, sizeof(*out));
    if (l == NULL || !secret_ok(suite, secret, secret_len))
        return QUICOFF_INVALID_ARGUMENT;

    /* The HP key has the AEAD key's length for all four suites (RFC 9001 §5.4). */
    key_len = quicoff_suite_key_len(suite);
    if (qo_hkdf_expand_label(suite, secret, secret_len, l->key, out->key, key_len) != 0 ||
        qo_hkdf_expand_label(suite, secret, secret_len, l->iv, out->iv, QUICOFF_IV_LEN) != 0 ||
        qo_hkdf_expand_label(suite, secret, secret_len, l->hp, out->hp, key_len) != 0) {
        qo_secure_zero(out, sizeof(*out));
        return QUICOFF_BACKEND_UNAVAILABLE;
    }
    return QUICOFF_OK;
}

quicoff_status_t quicoff_derive_next_secret(quicoff_suite_t suite, const uint8_t *secret,
                                            size_t secret_len, uint32_t version,
                                            uint8_t *next_secret)
{
    const struct version_labels *l = labels_for(version);
    uint8_t tmp[QUICOFF_MAX_SECRET_LEN];

    if (l == NULL || next_secret == NULL || !secret_ok(suite, secret, secret_len))
        return QUICOFF_INVALID_ARGUMENT;
    /* Through tmp so that next_secret may alias secret (update in place). */
    if (qo_hkdf_expand_label(suite, secret, secret_len, l->ku, tmp, secret_len) != 0) {
        qo_secure_zero(tmp, sizeof(tmp));
        return QUICOFF_BACKEND_UNAVAILABLE;
    }
    memcpy(next_secret, tmp, secret_len);
    qo_secure_zero(tmp, sizeof(tmp));
    return QUICOFF_OK;
}

quicoff_status_t quicoff_derive_initial_secrets(const uint8_t *dcid, size_t dcid_len,
                                                uint32_t version, uint8_t client_secret[32],
                                                uint8_t server_secret[32])
{
    const struct version_labels *l = labels_for(version);
    uint8_t initial_secret[32];
    quicoff_status_t st = QUICOFF_OK;

    if (l == NULL || (dcid == NULL && dcid_len != 0) || dcid_len > QUICOFF_MAX_CID_LEN ||
        client_secret == NULL || server_secret == NULL)
        return QUICOFF_INVALID_ARGUMENT;

    /* Initial secrets always use SHA-256 (the AES-128-GCM suite's hash). */
    if (qo_hkdf_extract_sha256(l->salt, 20, dcid, dcid_len, initial_secret) != 0 ||
        qo_hkdf_expand_label(QUICOFF_AES_128_GCM, initial_secret, 32, "client in", client_secret,
                             32) != 0 ||
        qo_hkdf_expand_label(QUICOFF_AES_128_GCM, initial_secret, 32, "server in", server_secret,
                             32) != 0) {
        qo_secure_zero(client_secret, 32);
        qo_secure_zero(server_secret, 32);
        st = QUICOFF_BACKEND_UNAVAILABLE;
    }
    qo_secure_zero(initial_secret, sizeof(initial_secret));
    return st;
}
