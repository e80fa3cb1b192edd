/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Key schedule and crypto backend tests: RFC 9001 Appendix A and RFC 9369
 * Appendix A vectors, known-answer tests for every AEAD, and the backend
 * contract (in-place seal/open, ciphertext left as received on failure).
 *
 * Vectors marked "computed with Python cryptography" have no RFC source; they
 * were produced once with pyca/cryptography (AESGCM, AESCCM(tag_length=16),
 * ChaCha20Poly1305, HKDFExpand with a hand-built HkdfLabel) and pasted here,
 * so the C code is checked against an independent implementation.
 */
#include "crypto.h"
#include "test_util.h"

#include <stdalign.h>

/* RFC 9001 A.1 / RFC 9369 A.1: the client's first Destination Connection ID */
static const char *const rfc_dcid = "8394c8f03e515708";

static uint8_t scratch[QO_SCRATCH_LEN];

/* Backend contexts live in caller memory of ctx_size bytes. */
typedef struct {
    alignas(max_align_t) uint8_t b[256];
} ctxbuf_t;

static const qo_backend_t *backend(void)
{
    return &qo_backend_openssl;
}

/* ------------------------------------------------------------------------ */

static void test_names(void)
{
    static const char *const want[QUICOFF_STATUS_COUNT] = {
        "ok",
        "unknown_connection",
        "auth_failed",
        "malformed",
        "key_phase_unavailable",
        "usage_limit_reached",
        "key_exhausted",
        "unsupported",
        "no_space",
        "invalid_argument",
        "exists",
        "table_full",
        "no_memory",
        "backend_unavailable",
    };
    int all = 1;

    for (int i = 0; i < QUICOFF_STATUS_COUNT; i++)
        all &= strcmp(quicoff_status_name((quicoff_status_t)i), want[i]) == 0;
    ok(all, "status names");
    ok(strcmp(quicoff_status_name(QUICOFF_STATUS_COUNT), "unknown") == 0, "status out of range");

    for (int i = 0; i < QUICOFF_SUITE_COUNT; i++) {
        const char *name = quicoff_suite_name((quicoff_suite_t)i);
        ok(quicoff_suite_from_name(name) == (quicoff_suite_t)i, "suite %s round trip", name);
    }
    ok(strcmp(quicoff_suite_name(QUICOFF_CHACHA20_POLY1305), "chacha20-poly1305") == 0,
       "chacha name");
    ok(quicoff_suite_from_name("aes-128-ocb") == QUICOFF_SUITE_COUNT, "unknown suite name");
    ok(quicoff_suite_from_name(NULL) == QUICOFF_SUITE_COUNT, "NULL suite name");

    ok(quicoff_suite_secret_len(QUICOFF_AES_128_GCM) == 32 &&
           quicoff_suite_secret_len(QUICOFF_AES_256_GCM) == 48 &&
           quicoff_suite_secret_len(QUICOFF_AES_128_CCM) == 32 &&
           quicoff_suite_secret_len(QUICOFF_CHACHA20_POLY1305) == 32,
       "secret lengths");
    ok(quicoff_suite_key_len(QUICOFF_AES_128_GCM) == 16 &&
           quicoff_suite_key_len(QUICOFF_AES_256_GCM) == 32 &&
           quicoff_suite_key_len(QUICOFF_AES_128_CCM) == 16 &&
           quicoff_suite_key_len(QUICOFF_CHACHA20_POLY1305) == 32,
       "key lengths");
    ok(quicoff_suite_key_len(QUICOFF_SUITE_COUNT) == 0, "key length of unknown suite");
}

static void test_backend_find(void)
{
    /* auto = the first available of ipsec-mb with VAES GCM, ipsec-mb (when
     * built), openssl */
    const qo_backend_t *best = &qo_backend_openssl;
#ifdef QUICOFF_HAVE_IPSECMB
    if (qo_backend_ipsecmb_vaes.available())
        best = &qo_backend_ipsecmb_vaes;
    else if (qo_backend_ipsecmb.available())
        best = &qo_backend_ipsecmb;
#endif
    ok(qo_backend_find(NULL) == best, "NULL -> %s", best->name);
    ok(qo_backend_find("auto") == best, "auto -> %s", best->name);
    ok(qo_backend_find("openssl") == &qo_backend_openssl, "openssl by name");
    ok(qo_backend_find("ipsec-mb-not-built") == NULL, "unknown name -> NULL");
    ok(strcmp(qo_backend_openssl.name, "openssl") == 0, "name");

    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        const qo_aead_algo_t *a = backend()->aead[s];
        const qo_hp_algo_t *h = backend()->hp[s];
        ok(a != NULL && h != NULL && a->suite == (quicoff_suite_t)s &&
               strcmp(a->name, quicoff_suite_name((quicoff_suite_t)s)) == 0 &&
               qo_suites[s].key_len == quicoff_suite_key_len((quicoff_suite_t)s) &&
               a->ctx_size <= sizeof(ctxbuf_t) && h->ctx_size <= sizeof(ctxbuf_t),
           "descriptors of %s", quicoff_suite_name((quicoff_suite_t)s));
    }
}

static void test_limits(void)
{
    /* RFC 9001 §6.6: one table for every backend */
    const struct qo_suite *a[QUICOFF_SUITE_COUNT];
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++)
        a[s] = &qo_suites[s];

    ok(a[QUICOFF_AES_128_GCM]->confidentiality_limit == (UINT64_C(1) << 23) &&
           a[QUICOFF_AES_128_GCM]->integrity_limit == (UINT64_C(1) << 52),
       "AES-128-GCM");
    ok(a[QUICOFF_AES_256_GCM]->confidentiality_limit == (UINT64_C(1) << 23) &&
           a[QUICOFF_AES_256_GCM]->integrity_limit == (UINT64_C(1) << 52),
       "AES-256-GCM");
    ok(a[QUICOFF_CHACHA20_POLY1305]->confidentiality_limit == (UINT64_C(1) << 62) &&
           a[QUICOFF_CHACHA20_POLY1305]->integrity_limit == (UINT64_C(1) << 36),
       "ChaCha20-Poly1305");
    ok(a[QUICOFF_AES_128_CCM]->confidentiality_limit == 2965820 &&
           a[QUICOFF_AES_128_CCM]->integrity_limit == 2965820,
       "AES-128-CCM 2^21.5");
}

/* ------------------------------------------------------------------------ */
/* Key schedule                                                               */

static void test_rfc9001_a1(void)
{
    static const uint8_t salt_v1[20] = {0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34,
                                        0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8,
                                        0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a};
    uint8_t dcid[8], initial[32], cs[32], ss[32];
    struct quicoff_packet_keys k;

    hex_must(dcid, sizeof(dcid), rfc_dcid);
    ok(qo_hkdf_extract_sha256(salt_v1, sizeof(salt_v1), dcid, 8, initial) == 0, "extract");
    ok_hex(initial, 32, "7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44",
           "initial_secret");

    ok(quicoff_derive_initial_secrets(dcid, 8, QUICOFF_VERSION_1, cs, ss) == QUICOFF_OK,
       "derive_initial_secrets");
    ok_hex(cs, 32, "c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea",
           "client_initial_secret");
    ok_hex(ss, 32, "3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b",
           "server_initial_secret");

    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, cs, 32, QUICOFF_VERSION_1, &k) ==
           QUICOFF_OK,
       "client keys");
    ok_hex(k.key, 16, "1f369613dd76d5467730efcbe3b1a22d", "client key");
    ok_hex(k.iv, 12, "fa044b2f42a3fd3b46fb255c", "client iv");
    ok_hex(k.hp, 16, "9f50449e04a0e810283a1e9933adedd2", "client hp");
    ok_hex(k.key + 16, 16, "00000000000000000000000000000000", "unused key bytes zero");

    /* Version 0 is the config default and means v1. */
    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, ss, 32, 0, &k) == QUICOFF_OK,
       "server keys (version 0)");
    ok_hex(k.key, 16, "cf3a5331653c364c88f0f379b6067e37", "server key");
    ok_hex(k.iv, 12, "0ac1493ca1905853b0bba03e", "server iv");
    ok_hex(k.hp, 16, "c206b8d9b9f0f37644430b490eeaa314", "server hp");
}

static void test_rfc9369_a1(void)
{
    uint8_t dcid[8], cs[32], ss[32];
    struct quicoff_packet_keys k;

    hex_must(dcid, sizeof(dcid), rfc_dcid);
    ok(quicoff_derive_initial_secrets(dcid, 8, QUICOFF_VERSION_2, cs, ss) == QUICOFF_OK,
       "derive_initial_secrets v2");
    ok_hex(cs, 32, "14ec9d6eb9fd7af83bf5a668bc17a7e283766aade7ecd0891f70f9ff7f4bf47b",
           "client_initial_secret");
    ok_hex(ss, 32, "0263db1782731bf4588e7e4d93b7463907cb8cd8200b5da55a8bd488eafc37c1",
           "server_initial_secret");

    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, cs, 32, QUICOFF_VERSION_2, &k) ==
           QUICOFF_OK,
       "client keys");
    ok_hex(k.key, 16, "8b1a0bc121284290a29e0971b5cd045d", "client key");
    ok_hex(k.iv, 12, "91f73e2351d8fa91660e909f", "client iv");
    ok_hex(k.hp, 16, "45b95e15235d6f45a6b19cbcb0294ba9", "client hp");

    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, ss, 32, QUICOFF_VERSION_2, &k) ==
           QUICOFF_OK,
       "server keys");
    ok_hex(k.key, 16, "82db637861d55e1d011f19ea71d5d2a7", "server key");
    ok_hex(k.iv, 12, "dd13c276499c0249d3310652", "server iv");
    ok_hex(k.hp, 16, "edf6d05c83121201b436e16877593c3a", "server hp");
}

/* RFC 9001 A.5 secret: keys, and the key update. */
#define A5_SECRET "9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b"

static void test_rfc9001_a5_keys(void)
{
    uint8_t secret[32], next[32];
    struct quicoff_packet_keys k;

    hex_must(secret, 32, A5_SECRET);
    ok(quicoff_derive_packet_keys(QUICOFF_CHACHA20_POLY1305, secret, 32, QUICOFF_VERSION_1, &k) ==
           QUICOFF_OK,
       "derive");
    ok_hex(k.key, 32, "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8", "key");
    ok_hex(k.iv, 12, "e0459b3474bdd0e44a41c144", "iv");
    ok_hex(k.hp, 32, "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4", "hp");

    /* "quic ku": computed with Python cryptography (HKDFExpand, SHA-256); it
     * equals the ku value that RFC 9001 A.5 prints as well. */
    ok(quicoff_derive_next_secret(QUICOFF_CHACHA20_POLY1305, secret, 32, QUICOFF_VERSION_1,
                                  next) == QUICOFF_OK,
       "next secret");
    ok_hex(next, 32, "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9",
           "quic ku");

    /* In place (next_secret == secret) must work: updates chain that way. */
    ok(quicoff_derive_next_secret(QUICOFF_CHACHA20_POLY1305, secret, 32, 0, secret) == QUICOFF_OK,
       "next secret in place");
    ok_hex(secret, 32, "1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9",
           "quic ku in place");

    /* "quicv2 ku": computed with Python cryptography. */
    hex_must(secret, 32, A5_SECRET);
    ok(quicoff_derive_next_secret(QUICOFF_CHACHA20_POLY1305, secret, 32, QUICOFF_VERSION_2,
                                  next) == QUICOFF_OK,
       "next secret v2");
    ok_hex(next, 32, "c69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88",
           "quicv2 ku");
}

/* SHA-384 (AES-256-GCM): no RFC vector; computed with Python cryptography. */
static void test_sha384_schedule(void)
{
    uint8_t secret[48], next[48];
    struct quicoff_packet_keys k;

    for (int i = 0; i < 48; i++)
        secret[i] = (uint8_t)(0x40 + i);
    ok(quicoff_derive_packet_keys(QUICOFF_AES_256_GCM, secret, 48, QUICOFF_VERSION_1, &k) ==
           QUICOFF_OK,
       "derive");
    ok_hex(k.key, 32, "933ead778a57c8b8b4e30ae1a099abe7411627d77165ecd5e96edffeffeb3ca6", "key");
    ok_hex(k.iv, 12, "637076412b67690e6baa6de1", "iv");
    ok_hex(k.hp, 32, "3b928e71274f87500fc99f1543ef5c5267609cef32b6249666b41ffe0d7b089e", "hp");
    ok(quicoff_derive_next_secret(QUICOFF_AES_256_GCM, secret, 48, QUICOFF_VERSION_1, next) ==
           QUICOFF_OK,
       "next secret");
    ok_hex(next, 48,
           "9f85e8f9484e6112d790abfd30c858c4407b26bf9abe416e595907df88370d4d"
           "fc686f56a4bde0f95b34b66149266119",
           "quic ku (48 bytes)");
    ok(quicoff_derive_next_secret(QUICOFF_AES_256_GCM, secret, 48, QUICOFF_VERSION_2, next) ==
           QUICOFF_OK,
       "next secret v2");
    ok_hex(next, 48,
           "56e2be7f9f81cdd7e16d366283f32516bddc72bf359b2fc767f88e06d9b4e5f2"
           "21c52a634c7c74bccee55055727b8d62",
           "quicv2 ku (48 bytes)");
}

static void test_schedule_errors(void)
{
    uint8_t secret[48] = {1}, out[48], cs[32], ss[32];
    struct quicoff_packet_keys k;

    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, secret, 32, 2, &k) ==
           QUICOFF_INVALID_ARGUMENT,
       "unknown version refused");
    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, secret, 48, 1, &k) ==
           QUICOFF_INVALID_ARGUMENT,
       "secret length must match the suite hash");
    ok(quicoff_derive_packet_keys(QUICOFF_AES_256_GCM, secret, 32, 1, &k) ==
           QUICOFF_INVALID_ARGUMENT,
       "AES-256-GCM wants 48 bytes");
    ok(quicoff_derive_packet_keys(QUICOFF_SUITE_COUNT, secret, 32, 1, &k) ==
           QUICOFF_INVALID_ARGUMENT,
       "unknown suite");
    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, NULL, 32, 1, &k) ==
           QUICOFF_INVALID_ARGUMENT,
       "NULL secret");
    ok(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, secret, 32, 1, NULL) ==
           QUICOFF_INVALID_ARGUMENT,
       "NULL out");
    ok(quicoff_derive_next_secret(QUICOFF_AES_128_GCM, secret, 32, 0xff00001d, out) ==
           QUICOFF_INVALID_ARGUMENT,
       "next secret: unknown version");
    ok(quicoff_derive_initial_secrets(secret, 8, 0x709a50c4, cs, ss) == QUICOFF_INVALID_ARGUMENT,
       "initial: unknown version");
    ok(quicoff_derive_initial_secrets(secret, 21, 1, cs, ss) == QUICOFF_INVALID_ARGUMENT,
       "initial: DCID longer than 20");
    ok(qo_hkdf_expand_label(QUICOFF_AES_128_GCM, secret, 32, "quic key", out, 0) != 0,
       "expand_label: zero length");
}

/* A zero-length DCID happens: after a Retry the client takes the Retry's
 * (possibly empty) SCID as DCID and re-derives Initial keys from it (RFC 9000
 * §7.2, RFC 9001 §5.2). Computed with Python cryptography. */
static void test_empty_dcid(void)
{
    uint8_t cs[32], ss[32];

    ok(quicoff_derive_initial_secrets(NULL, 0, QUICOFF_VERSION_1, cs, ss) == QUICOFF_OK, "v1");
    ok_hex(cs, 32, "594cb3b06a53f6d6e1c3af415ec6b91a5b97c13c4f38d3008cd4c50c224a8288", "client");
    ok_hex(ss, 32, "7591ac17c195301605d46182d28dee299f1e8e929a75b361bdc99059961f53d8", "server");
    ok(quicoff_derive_initial_secrets(NULL, 0, QUICOFF_VERSION_2, cs, ss) == QUICOFF_OK, "v2");
    ok_hex(cs, 32, "2f0d97f3ef7948dbf3d2b5f2760972bc1320c6523bbcae097f5da3910ab97618", "client");
    ok_hex(ss, 32, "1f9dc7a5a89bbb0afa316ef9765c4fdb7e5d959c5799cdc292612a799efcf280", "server");
}

/* ------------------------------------------------------------------------ */
/* Header protection                                                          */

static int hp_mask(quicoff_suite_t suite, const uint8_t *key, const char *sample_hex,
                   uint8_t mask[5])
{
    const qo_hp_algo_t *h = backend()->hp[suite];
    ctxbuf_t ctx;
    uint8_t sample[16];
    int ret;

    hex_must(sample, 16, sample_hex);
    if (h->setup(ctx.b, key) != 0)
        return -1;
    ret = h->mask(ctx.b, sample, mask);
    h->dispose(ctx.b);
    return ret;
}

static void test_hp(void)
{
    uint8_t key[32], mask[5];

    /* RFC 9001 A.2: client Initial, client hp key from A.1 */
    hex_must(key, 16, "9f50449e04a0e810283a1e9933adedd2");
    ok(hp_mask(QUICOFF_AES_128_GCM, key, "d1b1c98dd7689fb8ec11d242b123dc9b", mask) == 0,
       "AES-128 mask");
    ok_hex(mask, 5, "437b9aec36", "RFC 9001 A.2 mask");
    /* CCM shares AES-128-ECB header protection. */
    ok(hp_mask(QUICOFF_AES_128_CCM, key, "d1b1c98dd7689fb8ec11d242b123dc9b", mask) == 0 &&
           memcmp(mask, "\x43\x7b\x9a\xec\x36", 5) == 0,
       "AES-128-CCM suite uses the same HP");

    /* RFC 9001 A.5: ChaCha20, sample = the packet's tag */
    hex_must(key, 32, "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4");
    ok(hp_mask(QUICOFF_CHACHA20_POLY1305, key, "5e5cd55c41f69080575d7999c25a5bfb", mask) == 0,
       "ChaCha20 mask");
    ok_hex(mask, 5, "aefefe7d03", "RFC 9001 A.5 mask");

    /* RFC 9369 A.5 sample and mask; the hp key ("quicv2 hp" from the A.5
     * secret) computed with Python cryptography. */
    hex_must(key, 32, "d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2");
    ok(hp_mask(QUICOFF_CHACHA20_POLY1305, key, "e7b6b932bc27d786f4bc2bb20f2162ba", mask) == 0,
       "ChaCha20 mask v2");
    ok_hex(mask, 5, "97580e32bf", "RFC 9369 A.5 mask");

    /* AES-256: computed with Python cryptography */
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(0x20 + i);
    ok(hp_mask(QUICOFF_AES_256_GCM, key, "707172737475767778797a7b7c7d7e7f", mask) == 0,
       "AES-256 mask");
    ok_hex(mask, 5, "df3e343945", "AES-256-ECB mask");
}

/* ------------------------------------------------------------------------ */
/* AEAD                                                                      */

/* The short-header packets of RFC 9001 A.5 and RFC 9369 A.5 exercise the AEAD
 * with real keys: PN 654360564, header 4200bff4, payload a single PING (01). */
static void chacha_packet(uint32_t version, const char *nonce_hex, const char *want_hex)
{
    const qo_aead_algo_t *a = backend()->aead[QUICOFF_CHACHA20_POLY1305];
    uint8_t secret[32], nonce[12], aad[4], pkt[17];
    struct quicoff_packet_keys k;
    uint64_t pn = 654360564;
    ctxbuf_t ctx;

    hex_must(secret, 32, A5_SECRET);
    hex_must(aad, 4, "4200bff4");
    if (!ok(quicoff_derive_packet_keys(QUICOFF_CHACHA20_POLY1305, secret, 32, version, &k) ==
                QUICOFF_OK,
            "derive") ||
        !ok(a->setup(ctx.b, k.key) == 0, "setup"))
        return;
    /* RFC 9001 §5.3: nonce = iv XOR left-padded packet number */
    memcpy(nonce, k.iv, 12);
    for (int i = 0; i < 8; i++)
        nonce[11 - i] ^= (uint8_t)(pn >> (8 * i));
    ok_hex(nonce, 12, nonce_hex, "nonce");

    pkt[0] = 0x01;
    ok(a->seal(ctx.b, nonce, aad, 4, pkt, 1, pkt + 1) == 0, "seal");
    ok_hex(pkt, 17, want_hex, "payload || tag");
    ok(a->open(ctx.b, nonce, aad, 4, pkt, 1, pkt + 1, scratch) == 0 && pkt[0] == 0x01, "open");
    a->dispose(ctx.b);
}

static void test_rfc_chacha_packets(void)
{
    chacha_packet(QUICOFF_VERSION_1, "e0459b3474bdd0e46d417eb0",
                  "655e5cd55c41f69080575d7999c25a5bfb");
    chacha_packet(QUICOFF_VERSION_2, "a6b5bc6ab7dafce328ff4a29",
                  "0ae7b6b932bc27d786f4bc2bb20f2162ba");
}

/* Known answers for each suite: key = 10 11 12 .., nonce = a0..ab,
 * AAD = c0..d3 (20 bytes), plaintext = 00..28 (41 bytes).
 * Computed with Python cryptography. */
static const char *const kat_ct[QUICOFF_SUITE_COUNT] = {
    [QUICOFF_AES_128_GCM] = "0788a27b6b9a74ca9b56bb4b857b35fc1cc60d426aac17404dad073103c9a48e"
                            "d0e9e0c9f67f9fcc57e26ff3722904b03fbaef79314540c7a8",
    [QUICOFF_AES_256_GCM] = "a9ce3df57a2a1a14d40401dc86088db47c36f16f74c513976e45826c117119b0"
                            "0dd61c0b4c316b50fc49310adf5ffed3af8ef5c9d5cedd7ca3",
    [QUICOFF_AES_128_CCM] = "fd6a04eafadc12823a64a0ae8df11fe4dec690cfbe9a80e92456dce4639ec3ae"
                            "1106c6c8686520f1accb723c52bc06d5d1a8202f1cd38eee30",
    [QUICOFF_CHACHA20_POLY1305] =
        "105dd85955e2c399f053c842e5d893934bae41aac80afaab9605c57345ea1c1d"
        "75d5edc1907f4e1e53616f03681279609311bb96096c93e564",
};
static const char *const kat_empty_tag[QUICOFF_SUITE_COUNT] = {
    [QUICOFF_AES_128_GCM] = "fe4161739b6ddbfd16f5aaea28335804",
    [QUICOFF_AES_256_GCM] = "635b4efe63c0dde07a9ead0bc848083f",
    [QUICOFF_AES_128_CCM] = "3677827e4dfb73b38d34244b77023105",
    [QUICOFF_CHACHA20_POLY1305] = "de5962b84981668d159f9c4e96480a24",
};

static void kat_inputs(uint8_t key[32], uint8_t nonce[12], uint8_t aad[20], uint8_t pt[41])
{
    for (int i = 0; i < 32; i++)
        key[i] = (uint8_t)(0x10 + i);
    for (int i = 0; i < 12; i++)
        nonce[i] = (uint8_t)(0xa0 + i);
    for (int i = 0; i < 20; i++)
        aad[i] = (uint8_t)(0xc0 + i);
    for (int i = 0; i < 41; i++)
        pt[i] = (uint8_t)i;
}

static void test_aead_kat(void)
{
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        const qo_aead_algo_t *a = backend()->aead[s];
        uint8_t key[32], nonce[12], aad[20], pt[41], buf[41 + 16], tag[16];
        ctxbuf_t ctx;

        kat_inputs(key, nonce, aad, pt);
        if (!ok(a->setup(ctx.b, key) == 0, "%s setup", a->name))
            continue;
        memcpy(buf, pt, 41);
        ok(a->seal(ctx.b, nonce, aad, 20, buf, 41, buf + 41) == 0, "%s seal", a->name);
        ok_hex(buf, sizeof(buf), kat_ct[s], a->name);
        ok(a->open(ctx.b, nonce, aad, 20, buf, 41, buf + 41, scratch) == 0 &&
               memcmp(buf, pt, 41) == 0,
           "%s open", a->name);

        /* An RX entry's context only ever opens: a fresh one must too. */
        ctxbuf_t rx;
        if (ok(a->setup(rx.b, key) == 0, "%s setup rx", a->name)) {
            hex_must(buf, sizeof(buf), kat_ct[s]);
            ok(a->open(rx.b, nonce, aad, 20, buf, 41, buf + 41, scratch) == 0 &&
                   memcmp(buf, pt, 41) == 0,
               "%s open on a fresh context", a->name);
            a->dispose(rx.b);
        }

        ok(a->seal(ctx.b, nonce, aad, 20, buf, 0, tag) == 0, "%s seal empty", a->name);
        ok_hex(tag, 16, kat_empty_tag[s], a->name);
        ok(a->open(ctx.b, nonce, aad, 20, buf, 0, tag, scratch) == 0, "%s open empty", a->name);
        tag[15] ^= 1;
        ok(a->open(ctx.b, nonce, aad, 20, buf, 0, tag, scratch) == -1, "%s open empty, bad tag",
           a->name);
        a->dispose(ctx.b);
    }
}

/* Deterministic filler so failures reproduce. */
static void fill(uint8_t *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

/*
 * For one suite and payload length: seal/open round trip, then every kind of
 * forgery (tag, ciphertext, AAD, nonce) must return -1 and leave the bytes
 * exactly as received, and the context must stay usable afterwards.
 */
static void aead_contract(const qo_aead_algo_t *a, size_t len)
{
    static uint8_t pt[1500], pkt[1500 + 16], received[1500 + 16];
    uint8_t key[32], nonce[12], aad[24];
    uint8_t *tag = pkt + len;
    ctxbuf_t ctx;
    int all_ok = 1;

    fill(key, sizeof(key), (uint32_t)len);
    fill(nonce, sizeof(nonce), (uint32_t)len + 1);
    fill(aad, sizeof(aad), (uint32_t)len + 2);
    fill(pt, len, (uint32_t)len + 3);
    if (!ok(a->setup(ctx.b, key) == 0, "%s setup", a->name))
        return;

    memcpy(pkt, pt, len);
    all_ok &= a->seal(ctx.b, nonce, aad, sizeof(aad), pkt, len, tag) == 0;
    all_ok &= len == 0 || memcmp(pkt, pt, len) != 0;
    memcpy(received, pkt, len + 16);
    all_ok &= a->open(ctx.b, nonce, aad, sizeof(aad), pkt, len, tag, scratch) == 0;
    all_ok &= memcmp(pkt, pt, len) == 0;
    ok(all_ok, "%s len %zu: round trip", a->name, len);

    /* Each forgery starts from the protected bytes as received. */
    struct {
        const char *what;
        uint8_t *byte; /* flipped in pkt, NULL for aad/nonce */
    } forgeries[] = {
        {"tag first byte", tag},
        {"tag last byte", tag + 15},
        {"ciphertext first byte", len ? pkt : NULL},
        {"ciphertext last byte", len ? pkt + len - 1 : NULL},
        {"aad", NULL},
        {"nonce", NULL},
    };
    for (size_t f = 0; f < sizeof(forgeries) / sizeof(forgeries[0]); f++) {
        uint8_t bad_aad[sizeof(aad)], bad_nonce[12];
        int is_aad = strcmp(forgeries[f].what, "aad") == 0;
        int is_nonce = strcmp(forgeries[f].what, "nonce") == 0;

        if (forgeries[f].byte == NULL && !is_aad && !is_nonce)
            continue; /* no ciphertext to flip at length 0 */
        memcpy(pkt, received, len + 16);
        memcpy(bad_aad, aad, sizeof(aad));
        memcpy(bad_nonce, nonce, sizeof(nonce));
        if (is_aad)
            bad_aad[3] ^= 0x40;
        else if (is_nonce)
            bad_nonce[11] ^= 1;
        else
            *forgeries[f].byte ^= 0x01;
        uint8_t forged[1500 + 16];
        memcpy(forged, pkt, len + 16);

        int r = a->open(ctx.b, bad_nonce, bad_aad, sizeof(aad), pkt, len, tag, scratch);
        ok(r == -1 && memcmp(pkt, forged, len + 16) == 0,
           "%s len %zu: bad %s -> -1, bytes unchanged", a->name, len, forgeries[f].what);
    }

    /* The context must still work after failures, in both directions. */
    memcpy(pkt, received, len + 16);
    all_ok = a->open(ctx.b, nonce, aad, sizeof(aad), pkt, len, tag, scratch) == 0 &&
             memcmp(pkt, pt, len) == 0;
    all_ok &= a->seal(ctx.b, nonce, aad, sizeof(aad), pkt, len, tag) == 0 &&
              memcmp(pkt, received, len + 16) == 0;
    ok(all_ok, "%s len %zu: context usable after failures", a->name, len);

    a->dispose(ctx.b);
    all_ok = 1;
    for (size_t i = 0; i < a->ctx_size; i++)
        all_ok &= ctx.b[i] == 0;
    ok(all_ok, "%s: dispose zeroes the context", a->name);
}

static void test_aead_contract(void)
{
    static const size_t lens[] = {0, 1, 15, 16, 17, 1500};

    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++)
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
            aead_contract(backend()->aead[s], lens[i]);
}

/* Many packets on one context with changing nonces, interleaving directions,
 * as a TX and an RX entry would see them. */
static void test_aead_sequence(void)
{
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        const qo_aead_algo_t *a = backend()->aead[s];
        uint8_t key[32], nonce[12], aad[16], pt[200], pkt[216];
        ctxbuf_t ctx;
        int all_ok = 1;

        fill(key, sizeof(key), 99);
        fill(aad, sizeof(aad), 98);
        if (a->setup(ctx.b, key) != 0) {
            ok(0, "%s setup", a->name);
            continue;
        }
        for (uint32_t pn = 0; pn < 300; pn++) {
            size_t len = pn % sizeof(pt);
            memset(nonce, 0, sizeof(nonce));
            nonce[8] = (uint8_t)(pn >> 24);
            nonce[9] = (uint8_t)(pn >> 16);
            nonce[10] = (uint8_t)(pn >> 8);
            nonce[11] = (uint8_t)pn;
            fill(pt, len, pn);
            memcpy(pkt, pt, len);
            all_ok &= a->seal(ctx.b, nonce, aad, sizeof(aad), pkt, len, pkt + len) == 0;
            if (pn % 7 == 0) {
                pkt[len] ^= 0x80; /* forged tag: must fail and not disturb the next packet */
                all_ok &= a->open(ctx.b, nonce, aad, sizeof(aad), pkt, len, pkt + len, scratch) ==
                          -1;
                pkt[len] ^= 0x80;
            }
            all_ok &= a->open(ctx.b, nonce, aad, sizeof(aad), pkt, len, pkt + len, scratch) == 0;
            all_ok &= memcmp(pkt, pt, len) == 0;
        }
        ok(all_ok, "%s: 300 packets, interleaved seal/open/forgeries", a->name);
        a->dispose(ctx.b);
    }
}

int main(void)
{
    subtest("names", test_names);
    subtest("backend_find", test_backend_find);
    subtest("usage limits (RFC 9001 6.6)", test_limits);
    subtest("RFC 9001 A.1 initial keys", test_rfc9001_a1);
    subtest("RFC 9369 A.1 v2 initial keys", test_rfc9369_a1);
    subtest("RFC 9001 A.5 ChaCha20 keys and key update", test_rfc9001_a5_keys);
    subtest("SHA-384 key schedule", test_sha384_schedule);
    subtest("key schedule errors", test_schedule_errors);
    subtest("empty DCID", test_empty_dcid);
    subtest("header protection masks", test_hp);
    subtest("RFC 9001/9369 A.5 ChaCha20-Poly1305 packets", test_rfc_chacha_packets);
    subtest("AEAD known answers", test_aead_kat);
    subtest("AEAD contract", test_aead_contract);
    subtest("AEAD packet sequence", test_aead_sequence);
    return done_testing();
}
