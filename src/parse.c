/* SPDX-License-Identifier: Apache-2.0 */
/*
 * QUIC header parsing (RFC 9000 §17.2, §17.3; RFC 9369 §3.2 for v2 long
 * header types), for the data path and, as quicoff_peek_header, for callers
 * that steer packets: one parser. Every read is bounds-checked against the
 * buffer: packet bytes come from the network.
 */
#include "parse.h"

#include "qo_bytes.h"

unsigned qo_varint_read(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p >= end)
        return 0;
    unsigned n = 1u << (p[0] >> 6);
    if ((size_t)(end - p) < n)
        return 0;
    uint64_t x = p[0] & 0x3f;
    for (unsigned i = 1; i < n; i++)
        x = (x << 8) | p[i];
    *v = x;
    return n;
}

/* Long-header packet type bits -> level; v1 and v2 assign them differently. */
static int long_type_level(uint32_t version, unsigned type)
{
    static const int8_t v1[4] = {QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
                                 QUICOFF_LEVEL_HANDSHAKE, -1 /* Retry */};
    static const int8_t v2[4] = {-1 /* Retry */, QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
                                 QUICOFF_LEVEL_HANDSHAKE};
    if (version == QUICOFF_VERSION_1)
        return v1[type];
    if (version == QUICOFF_VERSION_2)
        return v2[type];
    return -1;
}

quicoff_status_t qo_parse_header(const uint8_t *buf, uint32_t len, uint32_t off,
                                 uint8_t short_dcid_len, struct qo_header *h)
{
    /* every field defined, whatever the outcome: callers report level and
     * form of refused packets too */
    if (off >= len || !(buf[off] & 0x80)) /* short header, or nothing */
        return qo_parse_short_header(buf, len, off, short_dcid_len, h);
    *h = (struct qo_header){.end = len};
    const uint8_t *p = buf + off, *end = buf + len;
    uint8_t first = p[0];
    h->fixed_bit_clear = !(first & 0x40); /* judged by the caller: parse.h */

    /* long header: 1 1 T T x x x x | version | DCID len | DCID | SCID len | SCID */
    if ((size_t)(end - p) < 7)
        return QUICOFF_MALFORMED;
    uint32_t version = qo_load_be32(p + 1);
    h->is_long = 1;
    h->version = version;
    /* The DCID sits at the same place in every version (RFC 8999 §5.1), so it
     * is reported before the version is judged: a caller steering or handing
     * on an unsupported packet still finds it. The SCID length byte after it
     * must be there too for the packet to go on. */
    const uint8_t *q = p + 5;
    uint8_t dcid_len = *q++;
    bool dcid_fits = dcid_len <= QUICOFF_MAX_CID_LEN && (size_t)(end - q) >= dcid_len;
    if (dcid_fits) {
        h->dcid_len = dcid_len;
        h->dcid_off = (uint32_t)(q - buf);
    }
    if (version == 0)
        return QUICOFF_UNSUPPORTED; /* Version Negotiation: not protected */
    int level = long_type_level(version, (first >> 4) & 3);
    if (level < 0)
        return QUICOFF_UNSUPPORTED; /* Retry (integrity tag only) or unknown version */
    h->level = (uint8_t)level;
    if (!dcid_fits || (size_t)(end - q) < (size_t)dcid_len + 1)
        return QUICOFF_MALFORMED;
    q += dcid_len;
    uint8_t scid_len = *q++;
    if (scid_len > QUICOFF_MAX_CID_LEN || (size_t)(end - q) < scid_len)
        return QUICOFF_MALFORMED;
    q += scid_len;
    uint64_t v;
    unsigned n;
    if (level == QUICOFF_LEVEL_INITIAL) {
        if (!(n = qo_varint_read(q, end, &v)) || v > (uint64_t)(end - q - n))
            return QUICOFF_MALFORMED;
        q += n + v; /* token */
    }
    if (!(n = qo_varint_read(q, end, &v)))
        return QUICOFF_MALFORMED;
    q += n;
    h->pn_off = (uint32_t)(q - buf);
    if (v > (uint64_t)(end - q))
        return QUICOFF_MALFORMED; /* Length runs past the datagram */
    h->end = h->pn_off + (uint32_t)v;
    return QUICOFF_OK;
}

quicoff_status_t quicoff_peek_header(const uint8_t *data, uint32_t len, uint32_t offset,
                                     uint8_t short_dcid_len, struct quicoff_header_info *out)
{
    if (!out)
        return QUICOFF_INVALID_ARGUMENT;
    *out = (struct quicoff_header_info){0};
    if (!data || short_dcid_len > QUICOFF_MAX_CID_LEN)
        return QUICOFF_INVALID_ARGUMENT;
    struct qo_header h;
    quicoff_status_t st = qo_parse_header(data, len, offset, short_dcid_len, &h);
    if (offset >= len)
        return st;
    uint8_t first = data[offset];
    /* from the first byte itself: a long header too short for its version
     * is still a long header */
    out->long_header = first >> 7;
    out->fixed_bit = (first >> 6) & 1;
    out->long_type = out->long_header ? (first >> 4) & 3 : 0;
    out->version = h.version;
    out->dcid_len = h.dcid_len;
    out->dcid_off = h.dcid_off;
    if (st == QUICOFF_OK) {
        out->level = h.level;
        out->pn_off = h.pn_off;
        out->packet_end = h.end;
    }
    return st;
}
