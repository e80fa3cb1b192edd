/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Greasing the QUIC bit (RFC 9287): packets whose fixed bit (0x40 of the
 * first byte) is 0, as ngtcp2 sends them once grease_quic_bit was advertised.
 *
 * The oracle is OpenSSL, not our own protect: each greased packet is sealed
 * here with EVP (AEAD, RFC 9001 §5.3) and masked with EVP (header protection,
 * §5.4), and libquicoff must open it (RX) and produce the same bytes from the
 * same plaintext (TX) when the entry has grease_quic_bit on; with the flag
 * off both sides refuse it as MALFORMED, counted, bytes untouched. A clear
 * bit with a DCID no entry has is UNKNOWN_CONNECTION: it may be a greased
 * packet of a connection the host handles itself, which it must still get.
 */
#include "test_ossl.h"
#include "test_packets.h"
#include "test_util.h"

#include <openssl/evp.h>

#define S(st) quicoff_status_name(st)
#define CID_LEN 8
#define PAYLOAD_LEN 40
#define PN 0x1234

static const uint8_t dcid[CID_LEN] = {0xc1, 0x5e, 0x77, 0x02, 0x9a, 0x41, 0x10, 0xee};
static const uint8_t other_dcid[CID_LEN] = {0xc1, 0x5e, 0x77, 0x02, 0x9a, 0x41, 0x10, 0xef};
static const uint8_t scid[4] = {0x0b, 0x0c, 0x0d, 0x0e};

struct form {
    const char *name;
    int is_long;
    uint32_t version;
    quicoff_level_t level;
    quicoff_suite_t suite;
};

static const struct form forms[] = {
    {"1-RTT aes-128-gcm", 0, QUICOFF_VERSION_1, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM},
    {"1-RTT chacha20", 0, QUICOFF_VERSION_1, QUICOFF_LEVEL_ONE_RTT, QUICOFF_CHACHA20_POLY1305},
    {"Handshake v1 aes-256-gcm", 1, QUICOFF_VERSION_1, QUICOFF_LEVEL_HANDSHAKE,
     QUICOFF_AES_256_GCM},
    {"Handshake v2 aes-128-gcm", 1, QUICOFF_VERSION_2, QUICOFF_LEVEL_HANDSHAKE,
     QUICOFF_AES_128_GCM},
    {"0-RTT v1 aes-128-gcm", 1, QUICOFF_VERSION_1, QUICOFF_LEVEL_ZERO_RTT, QUICOFF_AES_128_GCM},
};

static const EVP_CIPHER *aead_cipher(quicoff_suite_t s)
{
    return s == QUICOFF_AES_256_GCM         ? EVP_aes_256_gcm()
           : s == QUICOFF_CHACHA20_POLY1305 ? EVP_chacha20_poly1305()
                                            : EVP_aes_128_gcm();
}

/* Protects plaintext buf[0, n) (header with PN in clear + payload) with
 * OpenSSL: tag at n, then header protection. Returns the packet length. */
static uint32_t ossl_protect(quicoff_suite_t suite, const struct quicoff_packet_keys *k,
                             uint8_t *buf, uint32_t n, uint32_t pn_off, unsigned pn_len,
                             uint64_t pn, int is_long)
{
    uint8_t nonce[QUICOFF_IV_LEN];
    memcpy(nonce, k->iv, QUICOFF_IV_LEN);
    for (int i = 0; i < 8; i++)
        nonce[QUICOFF_IV_LEN - 1 - i] ^= (uint8_t)(pn >> (8 * i));
    uint32_t hdr = pn_off + pn_len;
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int outl = 0;
    EVP_EncryptInit_ex(x, aead_cipher(suite), NULL, NULL, NULL);
    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, QUICOFF_IV_LEN, NULL);
    EVP_EncryptInit_ex(x, NULL, NULL, k->key, nonce);
    EVP_EncryptUpdate(x, NULL, &outl, buf, (int)hdr);
    EVP_EncryptUpdate(x, buf + hdr, &outl, buf + hdr, (int)(n - hdr));
    EVP_EncryptFinal_ex(x, buf + n, &outl);
    EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_GET_TAG, QUICOFF_TAG_LEN, buf + n);
    EVP_CIPHER_CTX_free(x);
    uint8_t mask[5];
    ossl_hp_mask(suite, k->hp, buf + pn_off + 4, mask);
    buf[0] ^= mask[0] & (is_long ? 0x0f : 0x1f);
    for (unsigned i = 0; i < pn_len; i++)
        buf[pn_off + i] ^= mask[1 + i];
    return n + QUICOFF_TAG_LEN;
}

/* The plaintext packet of a form, fixed bit cleared (greased) when asked. */
static uint32_t build_plain(const struct form *f, const uint8_t *cid, int greased, uint8_t *buf,
                            uint32_t *pn_off)
{
    uint8_t payload[PAYLOAD_LEN];
    for (int i = 0; i < PAYLOAD_LEN; i++)
        payload[i] = (uint8_t)(0xa0 ^ i * 7);
    struct tp_hdr h = {.is_long = f->is_long,
                       .version = f->version,
                       .level = f->level,
                       .dcid = cid,
                       .dcid_len = CID_LEN,
                       .scid = scid,
                       .scid_len = sizeof(scid),
                       .pn_len = 2,
                       .pn = PN,
                       .key_phase = 0};
    uint32_t n = (uint32_t)tp_build(buf, &h, payload, PAYLOAD_LEN, pn_off);
    if (greased)
        buf[0] &= (uint8_t)~0x40;
    return n;
}

struct env {
    struct quicoff_table *t;
    struct quicoff_worker *w;
    struct quicoff_packet_keys keys;
    quicoff_conn_t tx, rx;
};

static void env_open(struct env *e, const struct form *f, bool grease)
{
    struct quicoff_table_config tc = {.capacity = 8, .local_cid_len = CID_LEN};
    e->t = quicoff_table_create(&tc, NULL);
    e->w = quicoff_worker_create(e->t);
    tp_keys(77 + (uint32_t)f->suite, &e->keys);
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    ok(c.grease_quic_bit, "quicoff_conn_config_init turns grease_quic_bit on");
    c.level = f->level;
    c.suite = f->suite;
    c.version = f->version;
    c.dcid_len = CID_LEN;
    memcpy(c.dcid, dcid, CID_LEN);
    c.keys = e->keys;
    c.grease_quic_bit = grease;
    c.direction = QUICOFF_DIR_TX;
    quicoff_status_t a = quicoff_conn_add(e->t, &c, &e->tx);
    c.direction = QUICOFF_DIR_RX;
    quicoff_status_t b = quicoff_conn_add(e->t, &c, &e->rx);
    ok(a == QUICOFF_OK && b == QUICOFF_OK, "%s entries, grease_quic_bit %d (%s, %s)", f->name,
       grease, S(a), S(b));
}

static void env_close(struct env *e)
{
    quicoff_worker_destroy(e->w);
    quicoff_table_destroy(e->t);
}

/* Flag on: OpenSSL's greased packet opens; our protect of the greased
 * plaintext is OpenSSL's packet, byte for byte, the bit still 0. */
static void test_accepted(void)
{
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        const struct form *f = &forms[i];
        struct env e;
        env_open(&e, f, true);
        uint8_t plain[256], ref[256], mine[256];
        uint32_t pn_off;
        uint32_t n = build_plain(f, dcid, 1, plain, &pn_off);
        memcpy(ref, plain, n);
        uint32_t len = ossl_protect(f->suite, &e.keys, ref, n, pn_off, 2, PN, f->is_long);
        ok(!(ref[0] & 0x40), "%s: OpenSSL's packet has the fixed bit 0", f->name);

        memcpy(mine, plain, n);
        struct quicoff_result r;
        quicoff_status_t st = tp_protect(e.w, e.tx, mine, 0, n, sizeof(mine), PN, &r);
        ok(st == QUICOFF_OK && memcmp(mine, ref, len) == 0 && r.packet_end == len,
           "%s: TX protects the greased header as OpenSSL does (%s)", f->name, S(st));

        struct quicoff_table_stats t0, t1;
        quicoff_table_stats(e.t, &t0);
        memcpy(mine, ref, len);
        st = tp_unprotect(e.w, mine, 0, len, NULL, &r);
        quicoff_table_stats(e.t, &t1);
        ok(st == QUICOFF_OK && r.conn == e.rx && r.pn == PN && r.payload_len == PAYLOAD_LEN &&
               memcmp(mine, plain, n) == 0,
           "%s: RX opens the greased packet, header and payload as sent (%s)", f->name, S(st));
        ok(t1.rx_packets == t0.rx_packets + 1 && t1.malformed == t0.malformed &&
               t1.rx_bytes == t0.rx_bytes + PAYLOAD_LEN,
           "%s: counted as one good packet", f->name);

        /* The bit is authenticated, not ignored: clearing it on a packet
         * sent with it set breaks the tag (the first byte is AAD). */
        uint32_t n2 = build_plain(f, dcid, 0, plain, &pn_off);
        memcpy(ref, plain, n2);
        len = ossl_protect(f->suite, &e.keys, ref, n2, pn_off, 2, PN + 1, f->is_long);
        ref[0] &= (uint8_t)~0x40;
        memcpy(mine, ref, len);
        st = tp_unprotect(e.w, mine, 0, len, NULL, &r);
        ok(st == QUICOFF_AUTH_FAILED && memcmp(mine, ref, len) == 0,
           "%s: a fixed bit cleared in flight fails authentication (%s)", f->name, S(st));
        env_close(&e);
    }
}

/* Flag off: today's rule (RFC 9000 §17) on both sides, counted on the
 * connection the packet names; nothing changed in the bytes. */
static void test_refused(void)
{
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        const struct form *f = &forms[i];
        struct env e;
        env_open(&e, f, false);
        uint8_t plain[256], ref[256], mine[256];
        uint32_t pn_off;
        uint32_t n = build_plain(f, dcid, 1, plain, &pn_off);
        memcpy(ref, plain, n);
        uint32_t len = ossl_protect(f->suite, &e.keys, ref, n, pn_off, 2, PN, f->is_long);

        struct quicoff_table_stats t0, t1;
        struct quicoff_conn_stats c0, c1;
        quicoff_table_stats(e.t, &t0);
        quicoff_conn_stats(e.t, e.rx, &c0);
        struct quicoff_result r;
        memcpy(mine, ref, len);
        quicoff_status_t st = tp_unprotect(e.w, mine, 0, len, NULL, &r);
        quicoff_table_stats(e.t, &t1);
        quicoff_conn_stats(e.t, e.rx, &c1);
        ok(st == QUICOFF_MALFORMED && memcmp(mine, ref, len) == 0,
           "%s: RX without the flag: malformed, bytes as received (%s)", f->name, S(st));
        ok(t1.malformed == t0.malformed + 1 && t1.rx_packets == t0.rx_packets &&
               c1.malformed == c0.malformed + 1 && c1.packets == c0.packets && r.conn == e.rx,
           "%s: counted malformed, on the connection too", f->name);

        memcpy(mine, plain, n);
        memset(mine + n, 0x5c, sizeof(mine) - n);
        quicoff_table_stats(e.t, &t0);
        st = tp_protect(e.w, e.tx, mine, 0, n, sizeof(mine), PN, &r);
        quicoff_table_stats(e.t, &t1);
        int untouched = memcmp(mine, plain, n) == 0;
        for (size_t k = n; k < sizeof(mine); k++)
            untouched &= mine[k] == 0x5c;
        ok(st == QUICOFF_MALFORMED && untouched && t1.malformed == t0.malformed + 1 &&
               t1.tx_packets == t0.tx_packets,
           "%s: TX without the flag: malformed, left as the host wrote it (%s)", f->name, S(st));

        /* The same packet with the bit set is still fine: only the bit is refused. */
        n = build_plain(f, dcid, 0, plain, &pn_off);
        memcpy(ref, plain, n);
        len = ossl_protect(f->suite, &e.keys, ref, n, pn_off, 2, PN, f->is_long);
        st = tp_unprotect(e.w, ref, 0, len, NULL, &r);
        ok(st == QUICOFF_OK, "%s: fixed bit 1 still opens without the flag (%s)", f->name, S(st));
        env_close(&e);
    }
}

/* A clear bit on a DCID without an entry: UNKNOWN_CONNECTION, as the same
 * packet with the bit set (a connection the host keeps for itself may grease
 * too, and gets what the offload does not know), not MALFORMED. */
static void test_unknown(void)
{
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        const struct form *f = &forms[i];
        struct env e;
        env_open(&e, f, true);
        uint8_t plain[256], pkt[256], copy[256];
        uint32_t pn_off;
        uint32_t n = build_plain(f, other_dcid, 1, plain, &pn_off);
        memcpy(pkt, plain, n);
        uint32_t len = ossl_protect(f->suite, &e.keys, pkt, n, pn_off, 2, PN, f->is_long);
        memcpy(copy, pkt, len);
        struct quicoff_table_stats t0, t1;
        quicoff_table_stats(e.t, &t0);
        struct quicoff_result r;
        quicoff_status_t st = tp_unprotect(e.w, pkt, 0, len, NULL, &r);
        quicoff_table_stats(e.t, &t1);
        ok(st == QUICOFF_UNKNOWN_CONNECTION && memcmp(pkt, copy, len) == 0 &&
               t1.unknown_connection == t0.unknown_connection + 1 && t1.malformed == t0.malformed,
           "%s: greased, unknown DCID: unknown_connection, counted, untouched (%s)", f->name,
           S(st));
        env_close(&e);
    }
}

/* The split API runs the same stages: a greased packet opens there too, and
 * is refused without the flag. */
static void test_split(void)
{
    const struct form *f = &forms[0];
    for (int grease = 0; grease <= 1; grease++) {
        struct env e;
        env_open(&e, f, grease);
        uint8_t plain[256], pkt[256];
        uint32_t pn_off;
        uint32_t n = build_plain(f, dcid, 1, plain, &pn_off);
        memcpy(pkt, plain, n);
        uint32_t len = ossl_protect(f->suite, &e.keys, pkt, n, pn_off, 2, PN, 0);
        struct quicoff_pkt p = {.data = pkt, .end = len, .cap = len};
        struct quicoff_result r;
        struct quicoff_aead_job j;
        unsigned pending = quicoff_unprotect_prepare(e.w, &p, &r, &j, 1);
        ok(pending == (unsigned)grease, "split, grease %d: %u job(s) pending", grease, pending);
        if (pending) {
            /* the caller's engine: OpenSSL, in place */
            EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
            int outl = 0;
            EVP_DecryptInit_ex(x, EVP_aes_128_gcm(), NULL, NULL, NULL);
            EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_IVLEN, QUICOFF_IV_LEN, NULL);
            EVP_DecryptInit_ex(x, NULL, NULL, j.key, j.nonce);
            EVP_DecryptUpdate(x, NULL, &outl, pkt + j.aad_off, (int)j.aad_len);
            EVP_DecryptUpdate(x, pkt + j.data_off, &outl, pkt + j.data_off, (int)j.data_len);
            EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_AEAD_SET_TAG, QUICOFF_TAG_LEN, pkt + j.tag_off);
            j.aead_status = EVP_DecryptFinal_ex(x, pkt, &outl) == 1 ? QUICOFF_OK
                                                                    : QUICOFF_AUTH_FAILED;
            EVP_CIPHER_CTX_free(x);
        }
        quicoff_unprotect_complete(e.w, &p, &r, &j, 1);
        quicoff_status_t want = grease ? QUICOFF_OK : QUICOFF_MALFORMED;
        ok(r.status == want && (!grease || memcmp(pkt, plain, n) == 0),
           "split, grease %d: %s (want %s)", grease, S(r.status), S(want));
        env_close(&e);
    }
}

int main(void)
{
    subtest("greased packets accepted with the flag", test_accepted);
    subtest("refused without the flag", test_refused);
    subtest("unknown DCID", test_unknown);
    subtest("split data path", test_split);
    return done_testing();
}
