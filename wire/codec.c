/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The public entry points of the host <-> offload protocol
 * (quicoff/wire.h): a frame or payload is dispatched to the compat format
 * (compat.c) or to v1 (v1.c) by (EtherType, first byte) alone, with no
 * state; the Ethernet header and its tags are handled here.
 */
#include "compat.h"
#include "v1.h"

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */

quicoff_status_t quicoff_wire_decode_payload(uint16_t ethertype, const uint8_t *p, size_t len,
                                             struct quicoff_wire_msg *m)
{
    if (!m)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_wire_msg_init(m, QUICOFF_WIRE_NONE);
    if (!p && len)
        return QUICOFF_INVALID_ARGUMENT;
    if (ethertype == QUICOFF_WIRE_ETHERTYPE_DATA)
        return qo_wire_decode_compat_data(p, len, m);
    if (ethertype != QUICOFF_WIRE_ETHERTYPE_SIGNAL)
        return QUICOFF_UNSUPPORTED;
    if (len < 1)
        return QUICOFF_MALFORMED;
    switch (p[0]) {
    case 0:
    case 1:
        return qo_wire_decode_compat_signal(p, len, m);
    case QUICOFF_WIRE_MAGIC:
        return qo_wire_decode_v1(p, len, m);
    default:
        return QUICOFF_UNSUPPORTED;
    }
}

static bool is_tag_tpid(uint16_t et)
{
    return et == QUICOFF_WIRE_ETHERTYPE_VLAN || et == QUICOFF_WIRE_ETHERTYPE_QINQ ||
           et == 0x9100 || et == 0x9200 || et == 0x9300;
}

quicoff_status_t quicoff_wire_decode(const uint8_t *frame, size_t len, struct quicoff_wire_msg *m)
{
    if (!m)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_wire_msg_init(m, QUICOFF_WIRE_NONE);
    if (!frame && len)
        return QUICOFF_INVALID_ARGUMENT;
    if (len < QUICOFF_WIRE_ETH_LEN)
        return QUICOFF_MALFORMED;
    struct quicoff_wire_eth eth;
    memset(&eth, 0, sizeof(eth));
    memcpy(eth.dst, frame, 6);
    memcpy(eth.src, frame + 6, 6);
    size_t off = 12;
    uint16_t et = qo_load_be16(frame + off);
    off += 2;
    /* Up to two tags, whatever TPIDs (802.1Q, 802.1ad, the older QinQ
     * 0x9100/0x9200/0x9300, in any order: ports rewrite outer TPIDs); the
     * innermost 802.1Q tag is the VLAN an answer goes back on, S-tags are
     * skipped. A third tag leaves a TPID in `et`: malformed, like every
     * EtherType that is not ours. */
    for (int i = 0; i < 2 && is_tag_tpid(et); i++) {
        if (len - off < 4)
            return QUICOFF_MALFORMED;
        if (et == QUICOFF_WIRE_ETHERTYPE_VLAN) {
            eth.has_vlan = true;
            eth.vlan_tci = qo_load_be16(frame + off);
        }
        et = qo_load_be16(frame + off + 2);
        off += 4;
    }
    eth.ethertype = et;
    quicoff_status_t st = quicoff_wire_decode_payload(et, frame + off, len - off, m);
    m->has_eth = true;
    m->eth = eth;
    return st;
}

/* ------------------------------------------------------------------------ */
/* Data header reader (the data path's decode)                              */

quicoff_status_t quicoff_wire_data_hdr_read(uint16_t ethertype, const uint8_t *p, size_t len,
                                            quicoff_wire_kind_t *kind, struct quicoff_wire_data *d)
{
    if (kind)
        *kind = QUICOFF_WIRE_NONE;
    if (d)
        memset(d, 0, sizeof(*d));
    if (!kind || !d || (!p && len))
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st;
    if (ethertype == QUICOFF_WIRE_ETHERTYPE_DATA) {
        /* 0x88B6 carries only data_pkt: anything on it is a compat data frame */
        *kind = QUICOFF_WIRE_COMPAT_DATA;
        st = read_compat_data_hdr(p, len, d);
    } else if (ethertype == QUICOFF_WIRE_ETHERTYPE_SIGNAL && len >= 3 &&
               p[0] == QUICOFF_WIRE_MAGIC && qo_wire_is_v1_data(p[2])) {
        /* The full decoder reports the Type byte as the kind even for a
         * version it does not speak, and rejects it whatever follows. */
        *kind = (quicoff_wire_kind_t)p[2];
        if (p[1] != QUICOFF_WIRE_VERSION)
            return QUICOFF_UNSUPPORTED;
        st = read_v1_data_hdr(p, len, p[2], d);
    } else {
        /* Not a data frame (signaling, another EtherType, too short to say):
         * the full decoder's business. */
        return QUICOFF_UNSUPPORTED;
    }
    if (st != QUICOFF_OK)
        memset(d, 0, sizeof(*d)); /* as the full decoder's m->u.data after an error */
    return st;
}

/* ------------------------------------------------------------------------ */
/* Encode                                                                    */

static quicoff_status_t encode_payload(const struct quicoff_wire_msg *m, struct wbuf *w,
                                       uint16_t *ethertype)
{
    *ethertype = QUICOFF_WIRE_ETHERTYPE_SIGNAL;
    if (qo_wire_is_v1_signal(m->kind))
        return qo_wire_encode_v1_signal(m, w);
    if (qo_wire_is_v1_data(m->kind) || m->kind == QUICOFF_WIRE_COMPAT_DATA) {
        const struct quicoff_wire_data *d = &m->u.data;
        bool compat = m->kind == QUICOFF_WIRE_COMPAT_DATA;
        if (compat)
            *ethertype = QUICOFF_WIRE_ETHERTYPE_DATA;
        size_t hl = compat                               ? QUICOFF_WIRE_COMPAT_DATA_HDR_LEN
                    : m->kind == QUICOFF_WIRE_DATA_TRAIN ? QUICOFF_WIRE_TRAIN_HDR_LEN
                                                         : QUICOFF_WIRE_DATA_HDR_LEN;
        if (d->payload_len > (compat ? UINT32_MAX : UINT16_MAX))
            return QUICOFF_INVALID_ARGUMENT;
        uint8_t *h = wb_reserve(w, hl);
        if (!h)
            return QUICOFF_NO_SPACE;
        size_t n = compat ? quicoff_wire_compat_data_hdr_write(h, hl, d->index, d->pn)
                          : quicoff_wire_data_hdr_write(h, hl, (quicoff_wire_kind_t)m->kind, d);
        if (n != hl)
            return QUICOFF_INVALID_ARGUMENT;
        if (d->payload)
            wb_put(w, d->payload, d->payload_len);
        return w->overflow ? QUICOFF_NO_SPACE : QUICOFF_OK;
    }
    if (m->kind == QUICOFF_WIRE_COMPAT_PEER || m->kind == QUICOFF_WIRE_COMPAT_HOST)
        return qo_wire_encode_compat_signal(m, w);
    return QUICOFF_INVALID_ARGUMENT;
}

quicoff_status_t quicoff_wire_encode_payload(const struct quicoff_wire_msg *m, uint8_t *buf,
                                             size_t cap, size_t *out_len, uint16_t *ethertype)
{
    if (out_len)
        *out_len = 0;
    if (!m || (!buf && cap))
        return QUICOFF_INVALID_ARGUMENT;
    struct wbuf w = {buf, cap, 0, false};
    uint16_t et;
    quicoff_status_t st = encode_payload(m, &w, &et);
    if (st == QUICOFF_OK && w.overflow)
        st = QUICOFF_NO_SPACE;
    if (st != QUICOFF_OK)
        return st;
    if (out_len)
        *out_len = w.len;
    if (ethertype)
        *ethertype = et;
    return QUICOFF_OK;
}

quicoff_status_t quicoff_wire_encode(const struct quicoff_wire_msg *m, uint8_t *buf, size_t cap,
                                     size_t *out_len)
{
    if (out_len)
        *out_len = 0;
    if (!m || (!buf && cap))
        return QUICOFF_INVALID_ARGUMENT;
    size_t hl = QUICOFF_WIRE_ETH_LEN + (m->eth.has_vlan ? 4 : 0);
    if (cap < hl)
        return QUICOFF_NO_SPACE;
    size_t n = 0;
    uint16_t et = 0;
    quicoff_status_t st = quicoff_wire_encode_payload(m, buf + hl, cap - hl, &n, &et);
    if (st != QUICOFF_OK)
        return st;
    memcpy(buf, m->eth.dst, 6);
    memcpy(buf + 6, m->eth.src, 6);
    if (m->eth.has_vlan) {
        qo_store_be16(buf + 12, QUICOFF_WIRE_ETHERTYPE_VLAN);
        qo_store_be16(buf + 14, m->eth.vlan_tci);
    }
    qo_store_be16(buf + hl - 2, et);
    if (out_len)
        *out_len = hl + n;
    return QUICOFF_OK;
}
