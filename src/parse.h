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

/* QUIC variable-length integer (RFC 9000 §16); returns bytes read, 0 on overrun. */
unsigned qo_varint_read(const uint8_t *p, const uint8_t *end, uint64_t *v);

#endif
