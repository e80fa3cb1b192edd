/* SPDX-License-Identifier: Apache-2.0 */
/* QUIC header parsing up to the packet number (RFC 9000 §17), bounds-checked. */
#ifndef QUICOFF_PARSE_H
#define QUICOFF_PARSE_H

#include "quicoff/quicoff.h"

struct qo_header {
    uint8_t is_long;
    uint8_t level; /* quicoff_level_t */
    uint8_t dcid_len;
    uint8_t fixed_bit_clear; /* 0x40 of the first byte is 0: greased (RFC 9287) or garbage */
    uint32_t version;        /* long headers */
    uint32_t dcid_off;
    uint32_t pn_off;
    uint32_t end; /* one past the packet: pn_off + Length, or the buffer end */
};

/* Parses the header starting at off in buf[0..len). short_dcid_len: DCID
 * length of short headers. Returns OK, MALFORMED (bounds, lengths) or
 * UNSUPPORTED (Version Negotiation, Retry, unknown version; h->end is then
 * the buffer end). Sets h->end whenever the packet's extent is known. A clear
 * fixed bit is not refused here but reported in h->fixed_bit_clear: whether
 * it is allowed depends on the connection (RFC 9287), which the caller looks
 * up first. */
quicoff_status_t qo_parse_header(const uint8_t *buf, uint32_t len, uint32_t off,
                                 uint8_t short_dcid_len, struct qo_header *h);

/*
 * The short-header (and empty-buffer) part of qo_parse_header, inline: the
 * data path parses every 1-RTT packet with it without a call (qo_parse_any
 * below), and parse.c uses it for the same cases, so there is one parser.
 * The fixed bit (0x40) is not checked here: a peer that was told
 * grease_quic_bit (RFC 9287) may clear it, and only the packet's entry knows
 * whether that was allowed. Callers decide once the packet is identified
 * (protect.c), from h->fixed_bit_clear.
 */
static inline quicoff_status_t qo_parse_short_header(const uint8_t *buf, uint32_t len,
                                                     uint32_t off, uint8_t short_dcid_len,
                                                     struct qo_header *h)
{
    *h = (struct qo_header){.end = len};
    if (off >= len)
        return QUICOFF_MALFORMED;
    uint8_t first = buf[off]; /* short header: ? 1 S R R K P P */
    h->fixed_bit_clear = !(first & 0x40);
    h->level = QUICOFF_LEVEL_ONE_RTT;
    if ((uint64_t)off + 1 + short_dcid_len > len)
        return QUICOFF_MALFORMED; /* the DCID does not fit */
    h->dcid_len = short_dcid_len;
    h->dcid_off = off + 1;
    h->pn_off = off + 1 + short_dcid_len;
    return QUICOFF_OK;
}

/* qo_parse_header with the short header inline, the long one called. */
static inline quicoff_status_t qo_parse_any(const uint8_t *buf, uint32_t len, uint32_t off,
                                            uint8_t short_dcid_len, struct qo_header *h)
{
    if (off >= len || !(buf[off] & 0x80))
        return qo_parse_short_header(buf, len, off, short_dcid_len, h);
    return qo_parse_header(buf, len, off, short_dcid_len, h);
}

/* QUIC variable-length integer (RFC 9000 §16); returns bytes read, 0 on overrun. */
unsigned qo_varint_read(const uint8_t *p, const uint8_t *end, uint64_t *v);

#endif
