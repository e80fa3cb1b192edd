/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared helpers for the data-path tests and the fuzz seed generator: build
 * plaintext QUIC packets (RFC 9000 §17.2, §17.3; RFC 9369 §3.2 long-header
 * types), make deterministic keys, and add table entries in one call.
 *
 * Header-only and independent of test_util.h, so fuzz/ can use it too.
 */
#ifndef QUICOFF_TEST_PACKETS_H
#define QUICOFF_TEST_PACKETS_H

#include "quicoff/quicoff.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tp_hdr {
    int is_long;
    uint32_t version;      /* long headers: QUICOFF_VERSION_1 or _2 */
    quicoff_level_t level; /* long headers: INITIAL, ZERO_RTT or HANDSHAKE */
    const uint8_t *dcid;
    uint8_t dcid_len;
    const uint8_t *scid; /* long headers */
    uint8_t scid_len;
    unsigned pn_len; /* 1..4 */
    uint64_t pn;
    unsigned key_phase; /* short headers */
    unsigned spin;      /* short headers */
};

/* The two long-header type bits of a level (RFC 9000 §17.2 / RFC 9369 §3.2). */
static inline unsigned tp_long_type(uint32_t version, quicoff_level_t level)
{
    static const unsigned v1[QUICOFF_LEVEL_COUNT] = {0, 0, 1, 2};
    static const unsigned v2[QUICOFF_LEVEL_COUNT] = {0, 1, 2, 3};
    return version == QUICOFF_VERSION_2 ? v2[level] : v1[level];
}

/* Writes header (PN in clear) + payload at buf and returns their length: the
 * `len` for quicoff_protect_burst (the tag goes after it). A long header's
 * Length (2-byte varint) counts PN, payload and the 16-byte tag. *pn_off
 * (optional) receives the PN offset relative to buf. */
static inline size_t tp_build(uint8_t *buf, const struct tp_hdr *h, const uint8_t *payload,
                              size_t payload_len, uint32_t *pn_off)
{
    size_t n = 0;
    unsigned pl = h->pn_len;

    if (h->is_long) {
        buf[n++] = (uint8_t)(0xc0 | tp_long_type(h->version, h->level) << 4 | (pl - 1));
        buf[n++] = (uint8_t)(h->version >> 24);
        buf[n++] = (uint8_t)(h->version >> 16);
        buf[n++] = (uint8_t)(h->version >> 8);
        buf[n++] = (uint8_t)h->version;
        buf[n++] = h->dcid_len;
        if (h->dcid_len)
            memcpy(buf + n, h->dcid, h->dcid_len);
        n += h->dcid_len;
        buf[n++] = h->scid_len;
        if (h->scid_len)
            memcpy(buf + n, h->scid, h->scid_len);
        n += h->scid_len;
        if (h->level == QUICOFF_LEVEL_INITIAL)
            buf[n++] = 0;                                   /* empty token */
        size_t length = pl + payload_len + QUICOFF_TAG_LEN; /* < 16384 in every test */
        buf[n++] = (uint8_t)(0x40 | (length >> 8));
        buf[n++] = (uint8_t)length;
    } else {
        buf[n++] = (uint8_t)(0x40 | (h->spin & 1) << 5 | (h->key_phase & 1) << 2 | (pl - 1));
        if (h->dcid_len)
            memcpy(buf + n, h->dcid, h->dcid_len);
        n += h->dcid_len;
    }
    if (pn_off)
        *pn_off = (uint32_t)n;
    for (unsigned i = 0; i < pl; i++)
        buf[n++] = (uint8_t)(h->pn >> (8 * (pl - 1 - i)));
    if (payload_len)
        memcpy(buf + n, payload, payload_len);
    return n + payload_len;
}

/* Deterministic key material: different seeds give different keys. */
static inline void tp_keys(uint32_t seed, struct quicoff_packet_keys *k)
{
    uint32_t x = seed * 2654435761u + 0x9e3779b9u;
    uint8_t *p = (uint8_t *)k;
    memset(k, 0, sizeof(*k));
    for (size_t i = 0; i < sizeof(*k); i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (uint8_t)(x >> 3);
    }
}

/* Deterministic connection ID of len bytes. */
static inline void tp_cid(uint32_t seed, uint8_t *cid, size_t len)
{
    uint32_t x = seed * 747796405u + 2891336453u;
    for (size_t i = 0; i < len; i++) {
        x = x * 1664525u + 1013904223u;
        cid[i] = (uint8_t)(x >> 24);
    }
}

/* One entry from raw keys; returns the status, handle in *out. */
static inline quicoff_status_t tp_add(struct quicoff_table *t, quicoff_direction_t dir,
                                      quicoff_level_t level, quicoff_suite_t suite,
                                      uint32_t version, const uint8_t *dcid, uint8_t dcid_len,
                                      const struct quicoff_packet_keys *keys, quicoff_conn_t *out)
{
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.direction = dir;
    c.level = level;
    c.suite = suite;
    c.version = version;
    c.dcid_len = dcid_len;
    if (dcid_len)
        memcpy(c.dcid, dcid, dcid_len);
    c.keys = *keys;
    return quicoff_conn_add(t, &c, out);
}

/* Protects one packet at buf[off, len) with the tag at len; cap = writable bytes. */
static inline quicoff_status_t tp_protect(struct quicoff_worker *w, quicoff_conn_t conn,
                                          uint8_t *buf, uint32_t off, uint32_t len, uint32_t cap,
                                          uint64_t pn, struct quicoff_result *r)
{
    struct quicoff_result tmp;
    struct quicoff_pkt p = {
        .data = buf, .end = len, .cap = cap, .offset = off, .conn = conn, .pn = pn};
    if (!r)
        r = &tmp;
    quicoff_protect_burst(w, &p, r, 1);
    return r->status;
}

/* Unprotects one packet at buf[off, len). */
static inline quicoff_status_t tp_unprotect(struct quicoff_worker *w, uint8_t *buf, uint32_t off,
                                            uint32_t len, const struct quicoff_addr *addr,
                                            struct quicoff_result *r)
{
    struct quicoff_result tmp;
    struct quicoff_pkt p = {
        .data = buf, .end = len, .cap = len, .offset = off, .local_addr = addr};
    if (!r)
        r = &tmp;
    quicoff_unprotect_burst(w, &p, r, 1);
    return r->status;
}

#endif /* QUICOFF_TEST_PACKETS_H */
