/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Protocol v1 (docs/protocol.md §4): the signaling header and its TLVs for
 * every message (ADD/UPDATE through config.c), the data header, and the ACK /
 * STATS replies a request is answered with.
 */
#include "v1.h"

#include "config.h"

void quicoff_wire_ack_for(const struct quicoff_wire_msg *req, quicoff_status_t st,
                          struct quicoff_wire_msg *ack)
{
    if (!ack)
        return;
    quicoff_wire_msg_init(ack, QUICOFF_WIRE_ACK);
    if (!req)
        return;
    ack->request_id = req->request_id;
    ack->index = req->index;
    /* a direction that is neither TX nor RX cannot be echoed: "none" */
    ack->direction = req->direction <= QUICOFF_DIR_RX ? req->direction
                                                      : QUICOFF_WIRE_DIRECTION_NONE;
    ack->acked_kind = req->kind <= 0xFF ? (uint8_t)req->kind : 0;
    ack->status = (uint8_t)st;
    if (req->has_eth) {
        ack->has_eth = true;
        memcpy(ack->eth.dst, req->eth.src, 6);
        memcpy(ack->eth.src, req->eth.dst, 6);
        ack->eth.has_vlan = req->eth.has_vlan;
        ack->eth.vlan_tci = req->eth.vlan_tci;
        ack->eth.ethertype = QUICOFF_WIRE_ETHERTYPE_SIGNAL;
    }
}

void quicoff_wire_stats_for(const struct quicoff_wire_msg *req, quicoff_status_t st,
                            struct quicoff_wire_msg *reply)
{
    if (!reply)
        return;
    quicoff_wire_ack_for(req, st, reply);
    reply->kind = QUICOFF_WIRE_STATS;
    reply->acked_kind = 0;
    reply->flags = req ? (uint8_t)(req->flags &
                                   (QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE))
                       : 0;
}

/* ------------------------------------------------------------------------ */
/* STATS and EVENT bodies                                                    */

static const size_t conn_stats_off[] = {
    offsetof(struct quicoff_conn_stats, packets),
    offsetof(struct quicoff_conn_stats, bytes),
    offsetof(struct quicoff_conn_stats, auth_failures),
    offsetof(struct quicoff_conn_stats, malformed),
    offsetof(struct quicoff_conn_stats, key_phase_unavailable),
    offsetof(struct quicoff_conn_stats, key_updates),
    offsetof(struct quicoff_conn_stats, key_generation),
    offsetof(struct quicoff_conn_stats, largest_pn),
    offsetof(struct quicoff_conn_stats, key_packets),
};
#define CONN_STATS_N (sizeof(conn_stats_off) / sizeof(conn_stats_off[0]))

static const size_t table_stats_off[] = {
    offsetof(struct quicoff_table_stats, rx_packets),
    offsetof(struct quicoff_table_stats, rx_bytes),
    offsetof(struct quicoff_table_stats, tx_packets),
    offsetof(struct quicoff_table_stats, tx_bytes),
    offsetof(struct quicoff_table_stats, auth_failures),
    offsetof(struct quicoff_table_stats, unknown_connection),
    offsetof(struct quicoff_table_stats, malformed),
    offsetof(struct quicoff_table_stats, key_phase_unavailable),
    offsetof(struct quicoff_table_stats, usage_limit_reached),
    offsetof(struct quicoff_table_stats, key_exhausted),
    offsetof(struct quicoff_table_stats, unsupported),
    offsetof(struct quicoff_table_stats, key_updates),
    offsetof(struct quicoff_table_stats, connections),
    offsetof(struct quicoff_table_stats, retired_pending),
};
#define TABLE_STATS_N (sizeof(table_stats_off) / sizeof(table_stats_off[0]))

static quicoff_status_t get_stats_block(const struct tlvs *t, int b, const size_t *offs,
                                        size_t nfields, void *dst)
{
    size_t n = t->n[b];
    if (n % 8)
        return QUICOFF_MALFORMED;
    size_t words = n / 8;
    for (size_t i = 0; i < nfields && i < words; i++) {
        uint64_t v = qo_load_be64(t->v[b] + 8 * i);
        memcpy((uint8_t *)dst + offs[i], &v, sizeof(v));
    }
    return QUICOFF_OK;
}

static quicoff_status_t interpret_stats(const struct tlvs *t, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_stats *s = &m->u.stats;
    if (has(t, B_CONN_STATS)) {
        TRY(get_stats_block(t, B_CONN_STATS, conn_stats_off, CONN_STATS_N, &s->conn));
        s->has_conn = true;
    }
    if (has(t, B_TABLE_STATS)) {
        TRY(get_stats_block(t, B_TABLE_STATS, table_stats_off, TABLE_STATS_N, &s->table));
        s->has_table = true;
    }
    return QUICOFF_OK;
}

static quicoff_status_t interpret_event(const struct tlvs *t, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_event *e = &m->u.event;
    if (has(t, B_COUNT)) {
        TRY(get_u64(t, B_COUNT, &e->count));
        e->has_count = true;
    }
    if (has(t, B_PN)) {
        TRY(get_pn(t, B_PN, false, &e->pn));
        e->has_pn = true;
    }
    if (has(t, B_KEY_GENERATION)) {
        TRY(get_u32(t, B_KEY_GENERATION, &e->key_generation));
        e->has_key_generation = true;
    }
    if (has(t, B_LEVEL)) {
        TRY(get_enum(t, B_LEVEL, QUICOFF_LEVEL_COUNT - 1, &e->level));
        e->has_level = true;
    }
    if (has(t, B_DCID)) {
        TRY(get_dcid(t, e->dcid, &e->dcid_len));
        e->has_dcid = true;
    }
    if (has(t, B_LOCAL_ADDR))
        TRY(get_addr(t, B_LOCAL_ADDR, &e->local_addr));
    if (has(t, B_REMOTE_ADDR))
        TRY(get_addr(t, B_REMOTE_ADDR, &e->remote_addr));
    if (has(t, B_MTU)) {
        TRY(get_u32(t, B_MTU, &e->mtu));
        e->has_mtu = true;
    }
    return QUICOFF_OK;
}

/* ------------------------------------------------------------------------ */
/* Decode                                                                    */

static quicoff_status_t decode_v1_data(const uint8_t *p, size_t len, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_data *d = &m->u.data;
    quicoff_status_t st = read_v1_data_hdr(p, len, (uint8_t)m->kind, d);
    /* kept by qo_wire_fail(): what was read of the header */
    m->flags = d->flags;
    m->index = d->index;
    m->status = d->status;
    if (st != QUICOFF_OK)
        return qo_wire_fail(m, st);
    m->hdr_valid = true;
    return QUICOFF_OK;
}

quicoff_status_t qo_wire_decode_v1(const uint8_t *p, size_t len, struct quicoff_wire_msg *m)
{
    quicoff_wire_msg_init(m, QUICOFF_WIRE_NONE);
    if (len < 3)
        return qo_wire_fail(m, QUICOFF_MALFORMED);
    m->version = p[1];
    uint8_t type = p[2];
    m->kind = type;
    if (m->version == QUICOFF_WIRE_VERSION && qo_wire_is_v1_data(type))
        return decode_v1_data(p, len, m);
    if (len < QUICOFF_WIRE_SIGNAL_HDR_LEN)
        return qo_wire_fail(m, m->version == QUICOFF_WIRE_VERSION ? QUICOFF_MALFORMED
                                                                  : QUICOFF_UNSUPPORTED);
    /* The 16-byte signaling header is the same in every version. */
    m->flags = p[3];
    m->request_id = qo_load_be32(p + 4);
    m->index = qo_load_be32(p + 8);
    m->direction = p[12];
    m->status = p[13];
    m->hdr_valid = true;
    if (m->version != QUICOFF_WIRE_VERSION || !qo_wire_is_v1_signal(type))
        return qo_wire_fail(m, QUICOFF_UNSUPPORTED);
    switch (type) { /* byte 3 by type; undefined flag bits are ignored */
    case QUICOFF_WIRE_ACK:
        m->acked_kind = m->flags;
        m->flags = 0;
        break;
    case QUICOFF_WIRE_EVENT:
        m->u.event.code = m->flags;
        m->flags = 0;
        break;
    case QUICOFF_WIRE_ADD:
        m->flags &= QUICOFF_WIRE_ADD_REPLACE;
        break;
    case QUICOFF_WIRE_UPDATE:
        m->flags &= QUICOFF_WIRE_UPDATE_ROLL | QUICOFF_WIRE_UPDATE_DROP_OLD;
        break;
    case QUICOFF_WIRE_QUERY:
    case QUICOFF_WIRE_STATS:
        m->flags &= QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE;
        break;
    default:
        m->flags = 0;
        break;
    }
    if (m->direction > QUICOFF_DIR_RX &&
        !(type == QUICOFF_WIRE_ACK && m->direction == QUICOFF_WIRE_DIRECTION_NONE))
        return qo_wire_fail(m, QUICOFF_INVALID_ARGUMENT);
    uint16_t tlv_len = qo_load_be16(p + 14);
    if (tlv_len > len - QUICOFF_WIRE_SIGNAL_HDR_LEN)
        return qo_wire_fail(m, QUICOFF_MALFORMED);

    uint32_t allowed = 0;
    switch (type) {
    case QUICOFF_WIRE_ADD:
        allowed = tlv_allowed(QUICOFF_WIRE_IN_ADD);
        break;
    case QUICOFF_WIRE_UPDATE:
        allowed = tlv_allowed(QUICOFF_WIRE_IN_UPDATE);
        break;
    case QUICOFF_WIRE_ACK:
        allowed = tlv_allowed(QUICOFF_WIRE_IN_ACK);
        break;
    case QUICOFF_WIRE_STATS:
        allowed = tlv_allowed(QUICOFF_WIRE_IN_STATS);
        break;
    case QUICOFF_WIRE_EVENT:
        allowed = tlv_allowed(QUICOFF_WIRE_IN_EVENT);
        break;
    default:
        allowed = 0;
        break; /* REMOVE, QUERY */
    }
    struct tlvs t;
    quicoff_status_t st = collect_tlvs(p + QUICOFF_WIRE_SIGNAL_HDR_LEN, tlv_len, allowed, &t);
    if (st != QUICOFF_OK)
        return qo_wire_fail(m, st);
    switch (type) {
    case QUICOFF_WIRE_ADD:
        st = qo_wire_read_add(&t, m);
        break;
    case QUICOFF_WIRE_UPDATE:
        st = qo_wire_read_update(&t, m);
        break;
    case QUICOFF_WIRE_STATS:
        st = interpret_stats(&t, m);
        break;
    case QUICOFF_WIRE_EVENT:
        st = interpret_event(&t, m);
        break;
    default:
        break;
    }
    if (st != QUICOFF_OK)
        return qo_wire_fail(m, st);
    if (has(&t, B_DETAIL)) {
        if (t.n[B_DETAIL] > QUICOFF_WIRE_DETAIL_MAX)
            return qo_wire_fail(m, QUICOFF_MALFORMED);
        m->detail = t.v[B_DETAIL];
        m->detail_len = t.n[B_DETAIL];
    }
    return QUICOFF_OK;
}

/* ------------------------------------------------------------------------ */
/* Encode                                                                    */

static void put_signal_hdr(struct wbuf *w, const struct quicoff_wire_msg *m, uint8_t byte3)
{
    wb_u8(w, QUICOFF_WIRE_MAGIC);
    wb_u8(w, QUICOFF_WIRE_VERSION);
    wb_u8(w, (uint8_t)m->kind);
    wb_u8(w, byte3);
    wb_u32(w, m->request_id);
    wb_u32(w, m->index);
    wb_u8(w, m->direction);
    wb_u8(w, m->status);
    wb_u16(w, 0); /* TLV length, patched */
}

static void put_stats_block(struct wbuf *w, uint16_t type, const size_t *offs, size_t n,
                            const void *src)
{
    tlv_hdr(w, type, 8 * n);
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        memcpy(&v, (const uint8_t *)src + offs[i], sizeof(v));
        wb_u64(w, v);
    }
}

static quicoff_status_t put_event_tlvs(struct wbuf *w, const struct quicoff_wire_msg *m)
{
    const struct quicoff_wire_event *e = &m->u.event;
    if ((e->has_level && e->level >= QUICOFF_LEVEL_COUNT) ||
        (e->has_dcid && e->dcid_len > QUICOFF_MAX_CID_LEN) ||
        (e->has_pn && e->pn > QUICOFF_WIRE_PN_MAX) ||
        (e->local_addr.family && !addr_ok(&e->local_addr)) ||
        (e->remote_addr.family && !addr_ok(&e->remote_addr)))
        return QUICOFF_INVALID_ARGUMENT;
    if (e->has_level)
        tlv_u8(w, QUICOFF_WIRE_T_LEVEL, e->level);
    if (e->has_dcid)
        tlv_bytes(w, QUICOFF_WIRE_T_DCID, e->dcid, e->dcid_len);
    if (e->local_addr.family)
        put_addr_tlv(w, QUICOFF_WIRE_T_LOCAL_ADDR, &e->local_addr);
    if (e->has_key_generation)
        tlv_u32(w, QUICOFF_WIRE_T_KEY_GENERATION, e->key_generation);
    if (e->has_count)
        tlv_u64(w, QUICOFF_WIRE_T_COUNT, e->count);
    if (e->has_pn)
        tlv_u64(w, QUICOFF_WIRE_T_PN, e->pn);
    if (e->remote_addr.family)
        put_addr_tlv(w, QUICOFF_WIRE_T_REMOTE_ADDR, &e->remote_addr);
    if (e->has_mtu)
        tlv_u32(w, QUICOFF_WIRE_T_MTU, e->mtu);
    return QUICOFF_OK;
}

quicoff_status_t qo_wire_encode_v1_signal(const struct quicoff_wire_msg *m, struct wbuf *w)
{
    if (m->direction > QUICOFF_DIR_RX &&
        !(m->kind == QUICOFF_WIRE_ACK && m->direction == QUICOFF_WIRE_DIRECTION_NONE))
        return QUICOFF_INVALID_ARGUMENT;
    if (m->detail_len > QUICOFF_WIRE_DETAIL_MAX || (m->detail_len && !m->detail))
        return QUICOFF_INVALID_ARGUMENT;
    uint8_t byte3;
    switch (m->kind) {
    case QUICOFF_WIRE_ADD:
        byte3 = m->flags & QUICOFF_WIRE_ADD_REPLACE;
        break;
    case QUICOFF_WIRE_UPDATE:
        byte3 = qo_wire_update_flags(&m->u.update.upd);
        break;
    case QUICOFF_WIRE_QUERY:
    case QUICOFF_WIRE_STATS:
        byte3 = m->flags & (QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE);
        break;
    case QUICOFF_WIRE_ACK:
        byte3 = m->acked_kind;
        break;
    case QUICOFF_WIRE_EVENT:
        byte3 = m->u.event.code;
        break;
    default:
        byte3 = 0;
        break; /* REMOVE */
    }
    size_t start = w->len;
    put_signal_hdr(w, m, byte3);
    size_t tlv_start = w->len;
    quicoff_status_t st = QUICOFF_OK;
    switch (m->kind) {
    case QUICOFF_WIRE_ADD:
        st = qo_wire_put_add(w, m);
        break;
    case QUICOFF_WIRE_UPDATE:
        st = qo_wire_put_update(w, m);
        break;
    case QUICOFF_WIRE_STATS:
        if (m->u.stats.has_conn)
            put_stats_block(w, QUICOFF_WIRE_T_CONN_STATS, conn_stats_off, CONN_STATS_N,
                            &m->u.stats.conn);
        if (m->u.stats.has_table)
            put_stats_block(w, QUICOFF_WIRE_T_TABLE_STATS, table_stats_off, TABLE_STATS_N,
                            &m->u.stats.table);
        break;
    case QUICOFF_WIRE_EVENT:
        st = put_event_tlvs(w, m);
        break;
    default:
        break;
    }
    if (st != QUICOFF_OK)
        return st;
    bool detail_ok = m->kind == QUICOFF_WIRE_ACK || m->kind == QUICOFF_WIRE_STATS ||
                     m->kind == QUICOFF_WIRE_EVENT;
    if (m->detail_len) {
        if (!detail_ok)
            return QUICOFF_INVALID_ARGUMENT;
        tlv_bytes(w, QUICOFF_WIRE_T_DETAIL, m->detail, m->detail_len);
    }
    if (w->overflow)
        return QUICOFF_NO_SPACE;
    size_t tlv_len = w->len - tlv_start;
    if (tlv_len > UINT16_MAX)
        return QUICOFF_INVALID_ARGUMENT;
    qo_store_be16(w->p + start + 14, (uint16_t)tlv_len);
    return QUICOFF_OK;
}

size_t quicoff_wire_data_hdr_write(uint8_t *buf, size_t cap, quicoff_wire_kind_t kind,
                                   const struct quicoff_wire_data *d)
{
    bool train = kind == QUICOFF_WIRE_DATA_TRAIN;
    size_t hl = train ? QUICOFF_WIRE_TRAIN_HDR_LEN : QUICOFF_WIRE_DATA_HDR_LEN;
    if (!buf || !d || !qo_wire_is_v1_data(kind) || cap < hl || d->pn > QUICOFF_WIRE_PN_MAX ||
        d->payload_len > UINT16_MAX)
        return 0;
    bool to_host = kind == QUICOFF_WIRE_DATA_TO_HOST;
    if (to_host && d->level >= QUICOFF_LEVEL_COUNT)
        return 0;
    if (train &&
        qo_wire_train_check(d->pn, d->payload_len, d->segment_size, d->count) != QUICOFF_OK)
        return 0;
    buf[0] = QUICOFF_WIRE_MAGIC;
    buf[1] = QUICOFF_WIRE_VERSION;
    buf[2] = (uint8_t)kind;
    buf[3] = d->flags;
    qo_store_be32(buf + 4, d->index);
    qo_store_be64(buf + 8, d->pn);
    qo_store_be16(buf + 16, (uint16_t)d->payload_len);
    buf[18] = to_host ? d->status : 0;
    buf[19] = to_host ? (uint8_t)(d->level << 4 | (d->key_phase & 1)) : 0;
    if (train) {
        qo_store_be16(buf + 20, d->segment_size);
        qo_store_be16(buf + 22, d->count);
    }
    return hl;
}

const uint8_t *quicoff_wire_train_packet(const struct quicoff_wire_data *d, unsigned i,
                                         uint32_t *len)
{
    if (len)
        *len = 0;
    if (!d || !len || !d->payload || i >= d->count ||
        qo_wire_train_check(d->pn, d->payload_len, d->segment_size, d->count) != QUICOFF_OK)
        return NULL;
    uint32_t off = (uint32_t)i * d->segment_size;
    *len = d->payload_len - off < d->segment_size ? d->payload_len - off : d->segment_size;
    return d->payload + off;
}
