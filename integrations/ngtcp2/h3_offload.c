/* SPDX-License-Identifier: Apache-2.0 */
/* The seam between ngtcp2 and quicoff (see h3_offload.h). */
#include "h3_offload.h"

#include <stdio.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "qo_bytes.h"

/* ngtcp2 0.12's encrypt/decrypt/hp_mask callbacks get no user data; the
 * server is single-threaded with one connection at a time. */
static struct qo_offload *current;

/* libquicoff in this process (defined at the end of this file) */
static const struct qo_backend inproc_backend;

void qo_offload_set_current(struct qo_offload *o)
{
    current = o;
}

int qo_offload_mode_from_name(const char *name)
{
    if (strcmp(name, "none") == 0)
        return QO_OFFLOAD_NONE;
    if (strcmp(name, "inproc") == 0)
        return QO_OFFLOAD_INPROC;
    if (strcmp(name, "dpdk") == 0)
        return QO_OFFLOAD_DPDK;
    return -1;
}

const char *qo_offload_mode_name(enum qo_offload_mode mode)
{
    switch (mode) {
    case QO_OFFLOAD_NONE:
        return "none";
    case QO_OFFLOAD_INPROC:
        return "inproc";
    case QO_OFFLOAD_DPDK:
        return "dpdk";
    }
    return "?";
}

int qo_offload_init(struct qo_offload *o, enum qo_offload_mode mode, uint8_t cid_len)
{
    memset(o, 0, sizeof(*o));
    o->mode = mode;
    o->tx = o->rx = QUICOFF_CONN_INVALID;
    o->last_tx_phase = o->last_rx_phase = -1;
    if (mode != QO_OFFLOAD_INPROC)
        return 0; /* none: no backend; dpdk: qo_dpdk_open() sets it */
    struct quicoff_table_config tc = {.capacity = 16, .local_cid_len = cid_len, .max_workers = 1};
    quicoff_status_t st;
    o->table = quicoff_table_create(&tc, &st);
    if (!o->table) {
        fprintf(stderr, "qo-h3-server: quicoff_table_create: %s\n", quicoff_status_name(st));
        return -1;
    }
    o->worker = quicoff_worker_create(o->table);
    if (!o->worker) {
        fprintf(stderr, "qo-h3-server: quicoff_worker_create failed\n");
        quicoff_table_destroy(o->table);
        o->table = NULL;
        return -1;
    }
    o->be = &inproc_backend;
    return 0;
}

void qo_offload_collect(struct qo_offload *o)
{
    if (o->be)
        o->be->collect(o);
}

static void inproc_collect(struct qo_offload *o)
{
    struct quicoff_table_stats ts;
    quicoff_table_stats(o->table, &ts);
    o->c.offload_tx_packets = ts.tx_packets;
    o->c.offload_rx_packets = ts.rx_packets;
}

static void inproc_remove(struct qo_offload *o)
{
    if (o->tx != QUICOFF_CONN_INVALID)
        quicoff_conn_remove(o->table, o->tx);
    if (o->rx != QUICOFF_CONN_INVALID)
        quicoff_conn_remove(o->table, o->rx);
    quicoff_table_reclaim(o->table);
    o->tx = o->rx = QUICOFF_CONN_INVALID;
}

void qo_offload_reset_conn(struct qo_offload *o)
{
    if (o->be)
        o->be->remove(o);
    o->active = false;
    o->generation = 0;
    memset(o->tx_iv, 0, sizeof(o->tx_iv));
    o->tx_hp_handle = o->rx_hp_handle = NULL;
    o->expect_tx_hp = false;
    o->last_tx_phase = o->last_rx_phase = -1;
}

static void inproc_free(struct qo_offload *o)
{
    if (o->worker)
        quicoff_worker_destroy(o->worker);
    if (o->table)
        quicoff_table_destroy(o->table);
    o->worker = NULL;
    o->table = NULL;
}

void qo_offload_free(struct qo_offload *o)
{
    qo_offload_reset_conn(o);
    if (o->be)
        o->be->free(o);
    o->be = NULL;
}

void qo_offload_fall_back(struct qo_offload *o)
{
    if (!o->active)
        return;
    o->active = false;
    o->c.fallbacks++;
    o->expect_tx_hp = false;
    o->tx_pending = false;
    if (o->be)
        o->be->remove(o);
}

quicoff_suite_t qo_offload_suite_of(int gnutls_cipher)
{
    switch (gnutls_cipher) {
    case GNUTLS_CIPHER_AES_128_GCM:
        return QUICOFF_AES_128_GCM;
    case GNUTLS_CIPHER_AES_256_GCM:
        return QUICOFF_AES_256_GCM;
    case GNUTLS_CIPHER_AES_128_CCM:
        return QUICOFF_AES_128_CCM;
    case GNUTLS_CIPHER_CHACHA20_POLY1305:
        return QUICOFF_CHACHA20_POLY1305;
    default:
        return QUICOFF_SUITE_COUNT;
    }
}

int qo_offload_install(struct qo_offload *o, int gnutls_cipher, uint32_t version,
                       const uint8_t *rx_secret, const uint8_t *tx_secret, size_t secret_len,
                       const uint8_t *tx_iv, const ngtcp2_cid *local_cid,
                       const ngtcp2_cid *peer_cid)
{
    if (!o->be)
        return 0;
    o->suite = qo_offload_suite_of(gnutls_cipher);
    o->version = version;
    o->generation = 0;
    memcpy(o->tx_iv[0], tx_iv, QUICOFF_IV_LEN);
    /* decided here, before ngtcp2 writes any 1-RTT packet: a refused
     * connection never goes through the null AEAD */
    if (o->suite == QUICOFF_SUITE_COUNT ||
        o->be->install(o, rx_secret, tx_secret, secret_len, local_cid, peer_cid) != 0) {
        o->c.offload_refused++;
        o->c.fallbacks++;
        return 0;
    }
    o->active = true;
    return 0;
}

static int inproc_install(struct qo_offload *o, const uint8_t *rx_secret, const uint8_t *tx_secret,
                          size_t secret_len, const ngtcp2_cid *local_cid,
                          const ngtcp2_cid *peer_cid)
{
    struct quicoff_conn_config cfg;
    quicoff_conn_config_init(&cfg);
    cfg.suite = o->suite;
    cfg.version = o->version;
    cfg.secret_len = secret_len;

    cfg.direction = QUICOFF_DIR_TX;
    cfg.secret = tx_secret;
    memcpy(cfg.dcid, peer_cid->data, peer_cid->datalen);
    cfg.dcid_len = (uint8_t)peer_cid->datalen;
    quicoff_status_t st = quicoff_conn_add(o->table, &cfg, &o->tx);
    if (st != QUICOFF_OK) {
        fprintf(stderr, "qo-h3-server: TX entry: %s\n", quicoff_status_name(st));
        return -1;
    }
    cfg.direction = QUICOFF_DIR_RX;
    cfg.secret = rx_secret;
    memcpy(cfg.dcid, local_cid->data, local_cid->datalen);
    cfg.dcid_len = (uint8_t)local_cid->datalen;
    st = quicoff_conn_add(o->table, &cfg, &o->rx);
    if (st != QUICOFF_OK) {
        fprintf(stderr, "qo-h3-server: RX entry: %s\n", quicoff_status_name(st));
        quicoff_conn_remove(o->table, o->tx);
        o->tx = QUICOFF_CONN_INVALID;
        return -1;
    }
    return 0;
}

static int inproc_update_keys(struct qo_offload *o, uint32_t gen, const uint8_t *rx_secret,
                              const uint8_t *tx_secret, size_t secret_len)
{
    struct quicoff_conn_update u = {.what = QUICOFF_UPDATE_KEYS, .key_generation = gen};
    u.secret = tx_secret;
    u.secret_len = secret_len;
    if (quicoff_conn_update(o->table, o->tx, &u) != QUICOFF_OK)
        return -1;
    u.secret = rx_secret;
    if (quicoff_conn_update(o->table, o->rx, &u) != QUICOFF_OK)
        return -1;
    return 0;
}

int qo_offload_update_key(ngtcp2_conn *conn, uint8_t *rx_secret, uint8_t *tx_secret,
                          ngtcp2_crypto_aead_ctx *rx_aead_ctx, uint8_t *rx_iv,
                          ngtcp2_crypto_aead_ctx *tx_aead_ctx, uint8_t *tx_iv,
                          const uint8_t *current_rx_secret, const uint8_t *current_tx_secret,
                          size_t secretlen, void *user_data)
{
    /* ngtcp2 derives the next secrets and IVs (and AEAD contexts that the
     * null AEAD leaves unused in inproc): the offload takes the same secrets. */
    int rv = ngtcp2_crypto_update_key_cb(conn, rx_secret, tx_secret, rx_aead_ctx, rx_iv,
                                         tx_aead_ctx, tx_iv, current_rx_secret, current_tx_secret,
                                         secretlen, user_data);
    if (rv != 0)
        return rv;
    struct qo_offload *o = current;
    o->c.update_key_calls++;
    if (!o->active)
        return 0;
    uint32_t gen = o->generation + 1;
    /* ngtcp2's own contexts for generation gen exist whatever happens here:
     * an offload that cannot take them puts the connection back on them */
    memcpy(o->tx_iv[gen & 1], tx_iv, QUICOFF_IV_LEN);
    o->generation = gen;
    if (o->be->update_keys(o, gen, rx_secret, tx_secret, secretlen) != 0)
        qo_offload_fall_back(o);
    return 0;
}

/* A short header (form bit 0) is a 1-RTT packet; ngtcp2 hands the AEAD the
 * header with its protection removed, so the first byte is plaintext. */
static bool is_1rtt(const uint8_t *aad, size_t aadlen)
{
    return aadlen > 0 && !(aad[0] & 0x80);
}

static void count_phase(int *last, uint64_t *changes, const uint8_t *aad)
{
    int phase = (aad[0] >> 2) & 1;
    if (*last >= 0 && phase != *last)
        (*changes)++;
    *last = phase;
}

int qo_offload_encrypt(uint8_t *dest, const ngtcp2_crypto_aead *aead,
                       const ngtcp2_crypto_aead_ctx *aead_ctx, const uint8_t *plaintext,
                       size_t plaintextlen, const uint8_t *nonce, size_t noncelen,
                       const uint8_t *aad, size_t aadlen)
{
    struct qo_offload *o = current;
    if (!is_1rtt(aad, aadlen))
        return ngtcp2_crypto_encrypt_cb(dest, aead, aead_ctx, plaintext, plaintextlen, nonce,
                                        noncelen, aad, aadlen);
    o->c.stack_1rtt_sent++;
    count_phase(&o->last_tx_phase, &o->c.key_updates_sent, aad);
    if (!o->active) {
        o->c.host_1rtt_aead_calls++;
        return ngtcp2_crypto_encrypt_cb(dest, aead, aead_ctx, plaintext, plaintextlen, nonce,
                                        noncelen, aad, aadlen);
    }
    /* The null AEAD: plaintext and a placeholder tag, sealed later by
     * libquicoff. The full packet number is exactly nonce ^ IV (RFC 9001
     * §5.3) with the IV of the key phase the header carries. */
    if (noncelen != QUICOFF_IV_LEN)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    const uint8_t *iv = o->tx_iv[(aad[0] >> 2) & 1];
    uint8_t x[QUICOFF_IV_LEN];
    for (size_t i = 0; i < QUICOFF_IV_LEN; i++)
        x[i] = nonce[i] ^ iv[i];
    if (qo_load_be32(x) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE; /* not this phase's IV: never guess */
    memmove(dest, plaintext, plaintextlen);
    memset(dest + plaintextlen, 0, QUICOFF_TAG_LEN);
    o->tx_pending = true;
    o->tx_pn = qo_load_be64(x + 4);
    o->tx_aad = aad;
    o->expect_tx_hp = true;
    return 0;
}

int qo_offload_decrypt(uint8_t *dest, const ngtcp2_crypto_aead *aead,
                       const ngtcp2_crypto_aead_ctx *aead_ctx, const uint8_t *ciphertext,
                       size_t ciphertextlen, const uint8_t *nonce, size_t noncelen,
                       const uint8_t *aad, size_t aadlen)
{
    struct qo_offload *o = current;
    if (!is_1rtt(aad, aadlen))
        return ngtcp2_crypto_decrypt_cb(dest, aead, aead_ctx, ciphertext, ciphertextlen, nonce,
                                        noncelen, aad, aadlen);
    if (!o->active && !o->rx_short_begin) {
        o->c.host_1rtt_aead_calls++;
        int rv = ngtcp2_crypto_decrypt_cb(dest, aead, aead_ctx, ciphertext, ciphertextlen, nonce,
                                          noncelen, aad, aadlen);
        if (rv == 0) {
            o->c.stack_1rtt_received++;
            count_phase(&o->last_rx_phase, &o->c.key_updates_received, aad);
        }
        return rv;
    }
    /* libquicoff has opened this packet in place: ngtcp2's header must be
     * the one libquicoff unmasked, else ngtcp2 would read the frames under
     * another packet number. */
    if (ciphertextlen < QUICOFF_TAG_LEN || !o->rx_short_begin ||
        (size_t)(o->rx_short_end - o->rx_short_begin) < aadlen ||
        memcmp(aad, o->rx_short_begin, aadlen) != 0)
        return NGTCP2_ERR_DECRYPT;
    memmove(dest, ciphertext, ciphertextlen - QUICOFF_TAG_LEN);
    o->c.stack_1rtt_received++;
    count_phase(&o->last_rx_phase, &o->c.key_updates_received, aad);
    return 0;
}

int qo_offload_hp_mask(uint8_t *dest, const ngtcp2_crypto_cipher *hp,
                       const ngtcp2_crypto_cipher_ctx *hp_ctx, const uint8_t *sample)
{
    struct qo_offload *o = current;
    /* a packet the offload opened (dpdk: also after a fallback, while the
     * offload still holds the RX entry) has its header unmasked already */
    if (!o->active && o->rx_short_begin && sample >= o->rx_short_begin &&
        sample < o->rx_short_end) {
        memset(dest, 0, NGTCP2_HP_MASKLEN);
        return 0;
    }
    if (o->active) {
        /* TX: ngtcp2 masks a packet right after sealing it. RX: the sample
         * lies inside the 1-RTT packet libquicoff has unprotected. The two
         * 1-RTT contexts never change (RFC 9001 §6: no HP key update). */
        if (o->expect_tx_hp) {
            o->expect_tx_hp = false;
            o->tx_hp_handle = hp_ctx->native_handle;
            memset(dest, 0, NGTCP2_HP_MASKLEN);
            return 0;
        }
        if (o->rx_short_begin && sample >= o->rx_short_begin && sample < o->rx_short_end) {
            o->rx_hp_handle = hp_ctx->native_handle;
            memset(dest, 0, NGTCP2_HP_MASKLEN);
            return 0;
        }
        /* A 1-RTT packet ngtcp2 buffered before the keys were in
         * libquicoff: a zero mask, and the null decrypt refuses it since
         * its header is not the one libquicoff opened (the peer resends). */
        if (hp_ctx->native_handle == o->rx_hp_handle || hp_ctx->native_handle == o->tx_hp_handle) {
            memset(dest, 0, NGTCP2_HP_MASKLEN);
            return 0;
        }
    }
    return ngtcp2_crypto_hp_mask_cb(dest, hp, hp_ctx, sample);
}

void qo_offload_tx_begin(struct qo_offload *o)
{
    o->tx_pending = false;
    o->expect_tx_hp = false;
}

void qo_offload_tx_end(struct qo_offload *o, struct qo_tx_batch *b, uint8_t *buf, size_t len)
{
    unsigned i = b->n++;
    b->data[i] = buf;
    b->len[i] = len;
    b->has_1rtt[i] = false;
    b->ok[i] = true;
    if (!o->tx_pending)
        return;
    o->tx_pending = false;
    b->has_1rtt[i] = true;
    /* ngtcp2 seals in its output buffer: the AAD is the 1-RTT header there */
    if (o->tx_aad < buf || o->tx_aad >= buf + len) {
        b->ok[i] = false; /* cannot place it: never send it */
        return;
    }
    b->short_off[i] = (uint32_t)(o->tx_aad - buf);
    b->pn[i] = o->tx_pn;
}

void qo_offload_protect(struct qo_offload *o, struct qo_tx_batch *b)
{
    if (!o->be)
        return;
    if (!o->active) {
        /* fell back after ngtcp2 sealed some of these with the null AEAD:
         * they carry plaintext, so they are dropped (ngtcp2 resends the
         * frames in new packets under its own keys) */
        for (unsigned i = 0; i < b->n; i++) {
            if (b->has_1rtt[i] && b->ok[i]) {
                b->ok[i] = false;
                o->c.offload_tx_failures++;
            }
        }
        return;
    }
    o->be->protect(o, b);
}

static void inproc_protect(struct qo_offload *o, struct qo_tx_batch *b)
{
    struct quicoff_pkt pkts[QO_H3_BATCH];
    struct quicoff_result res[QO_H3_BATCH];
    unsigned idx[QO_H3_BATCH], n = 0;
    for (unsigned i = 0; i < b->n; i++) {
        if (!b->has_1rtt[i] || !b->ok[i])
            continue;
        /* a 1-RTT packet is the last in its datagram; the null AEAD put the
         * 16 placeholder bytes at its end */
        pkts[n] = (struct quicoff_pkt){.data = b->data[i],
                                       .end = (uint32_t)(b->len[i] - QUICOFF_TAG_LEN),
                                       .cap = (uint32_t)b->len[i],
                                       .offset = b->short_off[i],
                                       .conn = o->tx,
                                       .pn = b->pn[i]};
        idx[n++] = i;
    }
    if (n == 0)
        return;
    quicoff_protect_burst(o->worker, pkts, res, n);
    for (unsigned j = 0; j < n; j++) {
        if (!quicoff_status_ok(res[j].status)) {
            b->ok[idx[j]] = false;
            o->c.offload_tx_failures++;
        }
    }
}

/* Where the short-header packet of a datagram starts (after any coalesced
 * long-header packets), or UINT32_MAX when it has none. */
static uint32_t short_offset(const uint8_t *data, size_t len, uint8_t cid_len)
{
    uint32_t off = 0;
    while (off < len) {
        struct quicoff_header_info h;
        if (quicoff_peek_header(data, (uint32_t)len, off, cid_len, &h) != QUICOFF_OK)
            return UINT32_MAX;
        if (!h.long_header)
            return off;
        off = h.packet_end;
    }
    return UINT32_MAX;
}

void qo_offload_unprotect(struct qo_offload *o, uint8_t **data, size_t *len, unsigned n,
                          uint8_t cid_len)
{
    if (o->active && o->be->unprotect)
        o->be->unprotect(o, data, len, n, cid_len);
}

static void inproc_unprotect(struct qo_offload *o, uint8_t **data, size_t *len, unsigned n,
                             uint8_t cid_len)
{
    struct quicoff_pkt pkts[QO_H3_BATCH];
    struct quicoff_result res[QO_H3_BATCH];
    unsigned idx[QO_H3_BATCH], m = 0;
    for (unsigned i = 0; i < n && i < QO_H3_BATCH; i++) {
        uint32_t off = short_offset(data[i], len[i], cid_len);
        if (off == UINT32_MAX)
            continue;
        pkts[m] = (struct quicoff_pkt){.data = data[i], .end = (uint32_t)len[i], .offset = off};
        idx[m++] = i;
    }
    if (m == 0)
        return;
    quicoff_unprotect_burst(o->worker, pkts, res, m);
    for (unsigned j = 0; j < m; j++) {
        if (!quicoff_status_ok(res[j].status)) {
            /* ngtcp2 still reads the long-header packets before it */
            len[idx[j]] = pkts[j].offset;
            o->c.offload_rx_failures++;
        }
    }
}

void qo_offload_rx_begin(struct qo_offload *o, const uint8_t *data, size_t len, uint8_t cid_len)
{
    o->rx_short_begin = o->rx_short_end = NULL;
    if (!o->active || !o->be->unprotect)
        return;
    uint32_t off = short_offset(data, len, cid_len);
    if (off != UINT32_MAX) {
        o->rx_short_begin = data + off;
        o->rx_short_end = data + len;
    }
}

void qo_offload_rx_opened(struct qo_offload *o, const uint8_t *pkt, size_t len)
{
    o->rx_short_begin = pkt;
    o->rx_short_end = pkt + len;
}

void qo_offload_rx_end(struct qo_offload *o)
{
    o->rx_short_begin = o->rx_short_end = NULL;
}

static const struct qo_backend inproc_backend = {
    .install = inproc_install,
    .update_keys = inproc_update_keys,
    .protect = inproc_protect,
    .unprotect = inproc_unprotect,
    .remove = inproc_remove,
    .collect = inproc_collect,
    .free = inproc_free,
};
