/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The helpers every v1 message shares, header-only (static inline: they are
 * small, and no internal symbol leaks from libquicoff-wire): a bounded writer
 * with the TLV writers, and the TLV collector with the typed getters.  Which
 * TLVs exist and which message accepts which comes from the one registry,
 * quicoff/wire_tlvs.h.
 */
#ifndef QO_WIRE_TLV_H
#define QO_WIRE_TLV_H

#include "quicoff/wire.h"
#include "qo_bytes.h"

#include <string.h>

#define TRY(expr)                      \
    do {                               \
        quicoff_status_t st_ = (expr); \
        if (st_ != QUICOFF_OK)         \
            return st_;                \
    } while (0)

/* ------------------------------------------------------------------------ */
/* A bounded writer: once it overflows, it writes nothing more.             */

struct wbuf {
    uint8_t *p;
    size_t cap;
    size_t len;
    bool overflow;
};

static inline uint8_t *wb_reserve(struct wbuf *w, size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = true;
        return NULL;
    }
    uint8_t *q = w->p + w->len;
    w->len += n;
    return q;
}

static inline void wb_put(struct wbuf *w, const void *src, size_t n)
{
    uint8_t *q = wb_reserve(w, n);
    if (q && n)
        memcpy(q, src, n);
}

static inline void wb_u8(struct wbuf *w, uint8_t v)
{
    wb_put(w, &v, 1);
}

static inline void wb_u16(struct wbuf *w, uint16_t v)
{
    uint8_t b[2];
    qo_store_be16(b, v);
    wb_put(w, b, 2);
}

static inline void wb_u32(struct wbuf *w, uint32_t v)
{
    uint8_t b[4];
    qo_store_be32(b, v);
    wb_put(w, b, 4);
}

static inline void wb_u64(struct wbuf *w, uint64_t v)
{
    uint8_t b[8];
    qo_store_be64(b, v);
    wb_put(w, b, 8);
}

static inline void tlv_hdr(struct wbuf *w, uint16_t type, size_t len)
{
    wb_u16(w, type);
    wb_u16(w, (uint16_t)len);
}

static inline void tlv_bytes(struct wbuf *w, uint16_t type, const uint8_t *v, size_t len)
{
    tlv_hdr(w, type, len);
    wb_put(w, v, len);
}

static inline void tlv_u8(struct wbuf *w, uint16_t type, uint8_t v)
{
    tlv_hdr(w, type, 1);
    wb_u8(w, v);
}

static inline void tlv_u32(struct wbuf *w, uint16_t type, uint32_t v)
{
    tlv_hdr(w, type, 4);
    wb_u32(w, v);
}

static inline void tlv_u64(struct wbuf *w, uint16_t type, uint64_t v)
{
    tlv_hdr(w, type, 8);
    wb_u64(w, v);
}

static inline void put_addr_tlv(struct wbuf *w, uint16_t type, const struct quicoff_addr *a)
{
    size_t alen = a->family == 4 ? 4 : 16;
    tlv_hdr(w, type, 3 + alen);
    wb_u8(w, a->family);
    wb_u16(w, a->port);
    wb_put(w, a->ip, alen);
}

static inline bool addr_ok(const struct quicoff_addr *a)
{
    return a->family == 4 || a->family == 6;
}

static inline quicoff_status_t put_encap_tlv(struct wbuf *w, const struct quicoff_wire_encap *e)
{
    if (e->family != 4 && e->family != 6)
        return QUICOFF_INVALID_ARGUMENT;
    size_t alen = e->family == 4 ? 4 : 16;
    tlv_hdr(w, QUICOFF_WIRE_T_ENCAP, 22 + 2 * alen);
    wb_put(w, e->dst_mac, 6);
    wb_put(w, e->src_mac, 6);
    wb_u16(w, e->has_vlan ? e->vlan_tci : 0);
    wb_u8(w, e->has_vlan ? 1 : 0);
    wb_u8(w, e->family);
    wb_u8(w, e->ttl);
    wb_u8(w, e->tos);
    wb_u16(w, e->src_port);
    wb_u16(w, e->dst_port);
    wb_put(w, e->src_ip, alen);
    wb_put(w, e->dst_ip, alen);
    return QUICOFF_OK;
}

/* ------------------------------------------------------------------------ */
/* Reading: collect the TLVs of a message, then interpret them              */

/* One slot per registered TLV, in registry order. */
enum tlv_slot {
#define QO_WIRE_SLOT(name, type, critical, kind, messages) B_##name,
    QUICOFF_WIRE_TLVS(QO_WIRE_SLOT)
#undef QO_WIRE_SLOT
        B_N
};
#define BIT(b) (UINT32_C(1) << (b))
_Static_assert(B_N <= 32, "a uint32_t mask holds one bit per TLV slot");

/* The registry's "critical" column must say what bit 15 of the type says. */
#define OPTIONAL_BIT 0
#define CRITICAL_BIT QUICOFF_WIRE_T_CRITICAL
#define QO_WIRE_CHECK_CRITICAL(name, type, critical, kind, messages)   \
    _Static_assert(((type)&QUICOFF_WIRE_T_CRITICAL) == critical##_BIT, \
                   #name ": the critical column disagrees with bit 15 of the type");
QUICOFF_WIRE_TLVS(QO_WIRE_CHECK_CRITICAL)
#undef QO_WIRE_CHECK_CRITICAL

static inline int tlv_slot(uint16_t type)
{
    switch (type) {
#define QO_WIRE_SLOT_CASE(name, type, critical, kind, messages) \
    case type:                                                  \
        return B_##name;
        QUICOFF_WIRE_TLVS(QO_WIRE_SLOT_CASE)
#undef QO_WIRE_SLOT_CASE
    default:
        return -1;
    }
}

/* The slots a message accepts: the registry's "messages" column for one of
 * QUICOFF_WIRE_IN_* (0: a message without TLVs, REMOVE and QUERY). */
static inline uint32_t tlv_allowed(unsigned in_message)
{
    uint32_t mask = 0;
#define QO_WIRE_ALLOWED(name, type, critical, kind, messages) \
    if ((messages)&in_message)                                \
        mask |= BIT(B_##name);
    QUICOFF_WIRE_TLVS(QO_WIRE_ALLOWED)
#undef QO_WIRE_ALLOWED
    return mask;
}

struct tlvs {
    uint32_t seen;
    const uint8_t *v[B_N];
    uint16_t n[B_N];
};

static inline quicoff_status_t collect_tlvs(const uint8_t *p, size_t len, uint32_t allowed,
                                            struct tlvs *t)
{
    memset(t, 0, sizeof(*t));
    size_t off = 0;
    while (off < len) {
        if (len - off < QUICOFF_WIRE_TLV_HDR_LEN)
            return QUICOFF_MALFORMED;
        uint16_t type = qo_load_be16(p + off);
        uint16_t n = qo_load_be16(p + off + 2);
        off += QUICOFF_WIRE_TLV_HDR_LEN;
        if (n > len - off)
            return QUICOFF_MALFORMED;
        int b = tlv_slot(type);
        if (b < 0) {
            if (type & QUICOFF_WIRE_T_CRITICAL)
                return QUICOFF_UNSUPPORTED;
        } else {
            if (!(allowed & BIT(b)) || (t->seen & BIT(b)))
                return QUICOFF_MALFORMED;
            t->seen |= BIT(b);
            t->v[b] = p + off;
            t->n[b] = n;
        }
        off += n;
    }
    return QUICOFF_OK;
}

static inline bool has(const struct tlvs *t, int b)
{
    return (t->seen & BIT(b)) != 0;
}

static inline quicoff_status_t get_u8(const struct tlvs *t, int b, uint8_t *out)
{
    if (t->n[b] != 1)
        return QUICOFF_MALFORMED;
    *out = t->v[b][0];
    return QUICOFF_OK;
}

static inline quicoff_status_t get_u32(const struct tlvs *t, int b, uint32_t *out)
{
    if (t->n[b] != 4)
        return QUICOFF_MALFORMED;
    *out = qo_load_be32(t->v[b]);
    return QUICOFF_OK;
}

static inline quicoff_status_t get_u64(const struct tlvs *t, int b, uint64_t *out)
{
    if (t->n[b] != 8)
        return QUICOFF_MALFORMED;
    *out = qo_load_be64(t->v[b]);
    return QUICOFF_OK;
}

static inline quicoff_status_t get_enum(const struct tlvs *t, int b, unsigned max, uint8_t *out)
{
    TRY(get_u8(t, b, out));
    return *out <= max ? QUICOFF_OK : QUICOFF_INVALID_ARGUMENT;
}

static inline quicoff_status_t get_addr(const struct tlvs *t, int b, struct quicoff_addr *a)
{
    const uint8_t *v = t->v[b];
    size_t n = t->n[b];
    if (n != 7 && n != 19)
        return QUICOFF_MALFORMED;
    if ((n == 7 && v[0] != 4) || (n == 19 && v[0] != 6))
        return QUICOFF_INVALID_ARGUMENT;
    memset(a, 0, sizeof(*a));
    a->family = v[0];
    a->port = qo_load_be16(v + 1);
    memcpy(a->ip, v + 3, n - 3);
    return QUICOFF_OK;
}

static inline quicoff_status_t get_dcid(const struct tlvs *t, uint8_t *dcid, uint8_t *dcid_len)
{
    if (t->n[B_DCID] > QUICOFF_MAX_CID_LEN)
        return QUICOFF_INVALID_ARGUMENT;
    if (t->n[B_DCID])
        memcpy(dcid, t->v[B_DCID], t->n[B_DCID]);
    *dcid_len = (uint8_t)t->n[B_DCID];
    return QUICOFF_OK;
}

static inline quicoff_status_t get_encap(const struct tlvs *t, struct quicoff_wire_encap *e)
{
    const uint8_t *v = t->v[B_ENCAP];
    size_t n = t->n[B_ENCAP];
    if (n != 30 && n != 54)
        return QUICOFF_MALFORMED;
    if ((n == 30 && v[15] != 4) || (n == 54 && v[15] != 6))
        return QUICOFF_INVALID_ARGUMENT;
    memset(e, 0, sizeof(*e));
    memcpy(e->dst_mac, v, 6);
    memcpy(e->src_mac, v + 6, 6);
    e->vlan_tci = qo_load_be16(v + 12);
    e->has_vlan = v[14] & 1;
    if (!e->has_vlan)
        e->vlan_tci = 0;
    e->family = v[15];
    e->ttl = v[16];
    e->tos = v[17];
    e->src_port = qo_load_be16(v + 18);
    e->dst_port = qo_load_be16(v + 20);
    size_t alen = e->family == 4 ? 4 : 16;
    memcpy(e->src_ip, v + 22, alen);
    memcpy(e->dst_ip, v + 22 + alen, alen);
    return QUICOFF_OK;
}

static inline quicoff_status_t get_pn(const struct tlvs *t, int b, bool none_ok, uint64_t *out)
{
    TRY(get_u64(t, b, out));
    if (*out > QUICOFF_WIRE_PN_MAX && !(none_ok && *out == UINT64_MAX))
        return QUICOFF_INVALID_ARGUMENT;
    return QUICOFF_OK;
}

static inline bool key_len_ok(size_t n)
{
    return n == 16 || n == 32;
}

/* A key TLV: 16 or 32 bytes (else malformed); must equal want when want != 0. */
static inline quicoff_status_t get_key(const struct tlvs *t, int b, size_t want, uint8_t *out)
{
    size_t n = t->n[b];
    if (!key_len_ok(n))
        return QUICOFF_MALFORMED;
    if (want && n != want)
        return QUICOFF_INVALID_ARGUMENT;
    memcpy(out, t->v[b], n);
    return QUICOFF_OK;
}

static inline quicoff_status_t get_iv(const struct tlvs *t, int b, uint8_t *out)
{
    if (t->n[b] != QUICOFF_IV_LEN)
        return QUICOFF_MALFORMED;
    memcpy(out, t->v[b], QUICOFF_IV_LEN);
    return QUICOFF_OK;
}

static inline quicoff_status_t get_secret(const struct tlvs *t, size_t want, uint8_t *out,
                                          size_t *out_len)
{
    size_t n = t->n[B_SECRET];
    if (n != 32 && n != 48)
        return QUICOFF_MALFORMED;
    if (want && n != want)
        return QUICOFF_INVALID_ARGUMENT;
    memcpy(out, t->v[B_SECRET], n);
    *out_len = n;
    return QUICOFF_OK;
}

#endif /* QO_WIRE_TLV_H */
