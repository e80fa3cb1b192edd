/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compat format (docs/protocol.md §3): decode and encode of
 * signaling_peer, signaling_host and data_pkt.  Fixed layouts, no TLVs.
 */
#include "compat.h"

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */

/* One 256-bit compat key field -> key of klen bytes (§3.4 of the spec). */
static quicoff_status_t compat_key(const uint8_t field[32], size_t klen, uint8_t *out,
                                   bool *right_padded)
{
    if (klen == 32) {
        memcpy(out, field, 32);
        return QUICOFF_OK;
    }
    static const uint8_t zero[16];
    if (memcmp(field, zero, 16) == 0) { /* left-padded: the prototype's rule */
        memcpy(out, field + 16, 16);
        return QUICOFF_OK;
    }
    if (memcmp(field + 16, zero, 16) == 0) { /* right-padded: the stored form */
        memcpy(out, field, 16);
        *right_padded = true;
        return QUICOFF_OK;
    }
    return QUICOFF_INVALID_ARGUMENT;
}

quicoff_status_t qo_wire_decode_compat_signal(const uint8_t *p, size_t len,
                                              struct quicoff_wire_msg *m)
{
    bool peer = p[0] == 0;
    quicoff_wire_msg_init(m, peer ? QUICOFF_WIRE_COMPAT_PEER : QUICOFF_WIRE_COMPAT_HOST);
    if (len < (peer ? QUICOFF_WIRE_COMPAT_PEER_LEN : QUICOFF_WIRE_COMPAT_HOST_LEN))
        return qo_wire_fail(m, QUICOFF_MALFORMED);
    struct quicoff_wire_conn *a = &m->u.add;
    struct quicoff_conn_config *c = &a->cfg;
    m->index = qo_load_be16(p + 1);
    uint8_t algo = p[3];
    if (algo >= QUICOFF_SUITE_COUNT)
        return qo_wire_fail(m, QUICOFF_UNSUPPORTED);
    c->suite = (quicoff_suite_t)algo;
    size_t klen = quicoff_suite_key_len(c->suite);
    if (compat_key(p + 4, klen, c->keys.hp, &a->compat_right_padded) != QUICOFF_OK ||
        compat_key(p + 36, klen, c->keys.key, &a->compat_right_padded) != QUICOFF_OK)
        return qo_wire_fail(m, QUICOFF_INVALID_ARGUMENT);
    memcpy(c->keys.iv, p + 68, QUICOFF_IV_LEN);
    c->path_id = qo_load_be32(p + 80);
    if (peer) {
        memcpy(c->dcid, p + 84, QUICOFF_WIRE_COMPAT_DCID_LEN);
        c->dcid_len = QUICOFF_WIRE_COMPAT_DCID_LEN;
        uint64_t full_pn = qo_load_be64(p + 92);
        if (full_pn != UINT64_MAX && full_pn > QUICOFF_WIRE_PN_MAX)
            return qo_wire_fail(m, QUICOFF_INVALID_ARGUMENT);
        c->largest_pn = full_pn;
    } else {
        uint8_t n = p[84];
        if (n > QUICOFF_MAX_CID_LEN) {
            if (n % 8 || n < 24 || n > 8 * QUICOFF_MAX_CID_LEN)
                return qo_wire_fail(m, QUICOFF_INVALID_ARGUMENT);
            n /= 8;
            a->compat_dcid_len_bits = true;
        }
        c->dcid_len = n;
    }
    return QUICOFF_OK;
}

quicoff_status_t qo_wire_decode_compat_data(const uint8_t *p, size_t len,
                                            struct quicoff_wire_msg *m)
{
    quicoff_wire_msg_init(m, QUICOFF_WIRE_COMPAT_DATA);
    quicoff_status_t st = read_compat_data_hdr(p, len, &m->u.data);
    m->index = m->u.data.index;
    return st == QUICOFF_OK ? QUICOFF_OK : qo_wire_fail(m, st);
}

size_t quicoff_wire_compat_data_hdr_write(uint8_t *buf, size_t cap, uint32_t index, uint64_t pn)
{
    if (!buf || cap < QUICOFF_WIRE_COMPAT_DATA_HDR_LEN || index > 0xFFFF ||
        pn > QUICOFF_WIRE_PN_MAX)
        return 0;
    qo_store_be16(buf, (uint16_t)index);
    qo_store_be64(buf + 2, pn);
    return QUICOFF_WIRE_COMPAT_DATA_HDR_LEN;
}

quicoff_status_t qo_wire_encode_compat_signal(const struct quicoff_wire_msg *m, struct wbuf *w)
{
    bool peer = m->kind == QUICOFF_WIRE_COMPAT_PEER;
    const struct quicoff_conn_config *c = &m->u.add.cfg;
    if (m->index > 0xFFFF || (unsigned)c->suite >= QUICOFF_SUITE_COUNT || c->secret_len ||
        (peer && c->dcid_len != QUICOFF_WIRE_COMPAT_DCID_LEN) ||
        (!peer && c->dcid_len > QUICOFF_MAX_CID_LEN) ||
        (peer && c->largest_pn > QUICOFF_WIRE_PN_MAX && c->largest_pn != UINT64_MAX))
        return QUICOFF_INVALID_ARGUMENT;
    size_t klen = quicoff_suite_key_len(c->suite);
    static const uint8_t zero[16];
    wb_u8(w, peer ? 0 : 1);
    wb_u16(w, (uint16_t)m->index);
    wb_u8(w, (uint8_t)c->suite);
    wb_put(w, zero, 32 - klen); /* the prototype's padding: the key as a 256-bit number */
    wb_put(w, c->keys.hp, klen);
    wb_put(w, zero, 32 - klen);
    wb_put(w, c->keys.key, klen);
    wb_put(w, c->keys.iv, QUICOFF_IV_LEN);
    wb_u32(w, c->path_id);
    if (peer) {
        wb_put(w, c->dcid, QUICOFF_WIRE_COMPAT_DCID_LEN);
        wb_u64(w, c->largest_pn);
    } else {
        wb_u8(w, c->dcid_len);
    }
    return w->overflow ? QUICOFF_NO_SPACE : QUICOFF_OK;
}
