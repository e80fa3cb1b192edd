/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host <-> offload protocol (docs/protocol.md): encode and decode of the
 * compat (seed 000) and v1 frames.  Pure functions over caller memory: no
 * allocation, no globals.  Every read is preceded by a check that the bytes
 * exist; no length from the wire is used before it is checked against the
 * buffer; decode errors leave no secret behind in the output.
 */
#include "quicoff/wire.h"

#include "crypto.h" /* qo_secure_zero */

#include <string.h>

/* ------------------------------------------------------------------------ */
/* Byte order                                                                */

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd64(const uint8_t *p)
{
    return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void wr64(uint8_t *p, uint64_t v)
{
    wr32(p, (uint32_t)(v >> 32));
    wr32(p + 4, (uint32_t)v);
}

/* ------------------------------------------------------------------------ */
/* A bounded writer: once it overflows, it writes nothing more.             */

struct wbuf {
    uint8_t *p;
    size_t cap;
    size_t len;
    bool overflow;
};

static uint8_t *wb_reserve(struct wbuf *w, size_t n)
{
    if (w->overflow || n > w->cap - w->len) {
        w->overflow = true;
        return NULL;
    }
    uint8_t *q = w->p + w->len;
    w->len += n;
    return q;
}

static void wb_put(struct wbuf *w, const void *src, size_t n)
{
    uint8_t *q = wb_reserve(w, n);
    if (q && n)
        memcpy(q, src, n);
}

static void wb_u8(struct wbuf *w, uint8_t v)
{
    wb_put(w, &v, 1);
}

static void wb_u16(struct wbuf *w, uint16_t v)
{
    uint8_t b[2];
    wr16(b, v);
    wb_put(w, b, 2);
}

static void wb_u32(struct wbuf *w, uint32_t v)
{
    uint8_t b[4];
    wr32(b, v);
    wb_put(w, b, 4);
}

static void wb_u64(struct wbuf *w, uint64_t v)
{
    uint8_t b[8];
    wr64(b, v);
    wb_put(w, b, 8);
}

static void tlv_hdr(struct wbuf *w, uint16_t type, size_t len)
{
    wb_u16(w, type);
    wb_u16(w, (uint16_t)len);
}

static void tlv_bytes(struct wbuf *w, uint16_t type, const uint8_t *v, size_t len)
{
    tlv_hdr(w, type, len);
    wb_put(w, v, len);
}

static void tlv_u8(struct wbuf *w, uint16_t type, uint8_t v)
{
    tlv_hdr(w, type, 1);
    wb_u8(w, v);
}

static void tlv_u32(struct wbuf *w, uint16_t type, uint32_t v)
{
    tlv_hdr(w, type, 4);
    wb_u32(w, v);
}

static void tlv_u64(struct wbuf *w, uint16_t type, uint64_t v)
{
    tlv_hdr(w, type, 8);
    wb_u64(w, v);
}

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

const char *quicoff_wire_kind_name(unsigned kind)
{
    switch (kind) {
    case QUICOFF_WIRE_NONE: return "none";
    case QUICOFF_WIRE_ADD: return "add";
    case QUICOFF_WIRE_UPDATE: return "update";
    case QUICOFF_WIRE_REMOVE: return "remove";
    case QUICOFF_WIRE_QUERY: return "query";
    case QUICOFF_WIRE_DATA_TO_OFFLOAD: return "data_to_offload";
    case QUICOFF_WIRE_ACK: return "ack";
    case QUICOFF_WIRE_STATS: return "stats";
    case QUICOFF_WIRE_EVENT: return "event";
    case QUICOFF_WIRE_DATA_TO_HOST: return "data_to_host";
    case QUICOFF_WIRE_COMPAT_PEER: return "compat_peer";
    case QUICOFF_WIRE_COMPAT_HOST: return "compat_host";
    case QUICOFF_WIRE_COMPAT_DATA: return "compat_data";
    default: return "unknown";
    }
}

const char *quicoff_wire_event_name(unsigned code)
{
    switch (code) {
    case QUICOFF_WIRE_EV_AUTH_FAILED: return "auth_failed";
    case QUICOFF_WIRE_EV_USAGE_LIMIT: return "usage_limit_reached";
    case QUICOFF_WIRE_EV_KEY_UPDATE: return "key_update";
    case QUICOFF_WIRE_EV_UNKNOWN_CONNECTION: return "unknown_connection";
    case QUICOFF_WIRE_EV_KEY_EXHAUSTED: return "key_exhausted";
    case QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE: return "key_phase_unavailable";
    case QUICOFF_WIRE_EV_TOO_BIG: return "too_big";
    default: return "unknown";
    }
}

static bool is_v1_signal(unsigned kind)
{
    switch (kind) {
    case QUICOFF_WIRE_ADD:
    case QUICOFF_WIRE_UPDATE:
    case QUICOFF_WIRE_REMOVE:
    case QUICOFF_WIRE_QUERY:
    case QUICOFF_WIRE_ACK:
    case QUICOFF_WIRE_STATS:
    case QUICOFF_WIRE_EVENT:
        return true;
    default:
        return false;
    }
}

static bool is_v1_data(unsigned kind)
{
    return kind == QUICOFF_WIRE_DATA_TO_OFFLOAD || kind == QUICOFF_WIRE_DATA_TO_HOST;
}

/* ------------------------------------------------------------------------ */
/* Message set-up and tear-down                                              */

void quicoff_wire_msg_init(struct quicoff_wire_msg *m, quicoff_wire_kind_t kind)
{
    if (!m)
        return;
    memset(m, 0, sizeof(*m));
    m->kind = (uint16_t)kind;
    m->version = (unsigned)kind >= 0x100 || kind == QUICOFF_WIRE_NONE ? 0 : QUICOFF_WIRE_VERSION;
    switch ((unsigned)kind) {
    case QUICOFF_WIRE_ADD:
        quicoff_conn_config_init(&m->u.add.cfg);
        break;
    case QUICOFF_WIRE_COMPAT_PEER:
        quicoff_conn_config_init(&m->u.add.cfg);
        m->direction = QUICOFF_DIR_RX;
        m->u.add.cfg.direction = QUICOFF_DIR_RX;
        m->u.add.cfg.nonce_layout = QUICOFF_NONCE_MULTIPATH_PATH_ID_LE;
        m->u.add.cfg.dcid_len = QUICOFF_WIRE_COMPAT_DCID_LEN;
        break;
    case QUICOFF_WIRE_COMPAT_HOST:
        quicoff_conn_config_init(&m->u.add.cfg);
        m->direction = QUICOFF_DIR_TX;
        m->u.add.cfg.direction = QUICOFF_DIR_TX;
        m->u.add.cfg.nonce_layout = QUICOFF_NONCE_MULTIPATH_PATH_ID_LE;
        break;
    case QUICOFF_WIRE_EVENT:
        m->index = QUICOFF_WIRE_INDEX_NONE;
        break;
    default:
        break;
    }
}

void quicoff_wire_msg_clear(struct quicoff_wire_msg *m)
{
    if (m)
        qo_secure_zero(m, sizeof(*m));
}

/* After a decode error: keep only the header (to answer with an ACK). */
static quicoff_status_t fail(struct quicoff_wire_msg *m, quicoff_status_t st)
{
    struct quicoff_wire_msg keep;
    memset(&keep, 0, sizeof(keep));
    keep.kind = m->kind;
    keep.version = m->version;
    keep.hdr_valid = m->hdr_valid;
    keep.flags = m->flags;
    keep.acked_kind = m->acked_kind;
    keep.request_id = m->request_id;
    keep.index = m->index;
    keep.direction = m->direction;
    keep.status = m->status;
    qo_secure_zero(m, sizeof(*m));
    *m = keep;
    return st;
}

const struct quicoff_conn_config *quicoff_wire_conn_config(struct quicoff_wire_msg *m)
{
    if (!m || (m->kind != QUICOFF_WIRE_ADD && m->kind != QUICOFF_WIRE_COMPAT_PEER &&
               m->kind != QUICOFF_WIRE_COMPAT_HOST))
        return NULL;
    struct quicoff_wire_conn *a = &m->u.add;
    a->cfg.secret = a->cfg.secret_len ? a->secret : NULL;
    return &a->cfg;
}

const struct quicoff_conn_update *quicoff_wire_conn_update(struct quicoff_wire_msg *m)
{
    if (!m || m->kind != QUICOFF_WIRE_UPDATE)
        return NULL;
    struct quicoff_wire_update *u = &m->u.update;
    u->upd.secret = u->upd.secret_len ? u->secret : NULL;
    return &u->upd;
}

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
    reply->flags = req ? (uint8_t)(req->flags & (QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE))
                       : 0;
}

/* ------------------------------------------------------------------------ */
/* Field helpers shared by decode and encode                                 */

/* The stats blocks: counters in struct order, by offset (not by layout). */
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

static bool key_len_ok(size_t n)
{
    return n == 16 || n == 32;
}

/* ------------------------------------------------------------------------ */
/* Compat decode (seed 000)                                                  */

/* One 256-bit compat key field -> key of klen bytes (§3.4 of the spec). */
static quicoff_status_t compat_key(const uint8_t field[32], size_t klen, uint8_t *out,
                                   bool *right_padded)
{
    if (klen == 32) {
        memcpy(out, field, 32);
        return QUICOFF_OK;
    }
    static const uint8_t zero[16];
    if (memcmp(field, zero, 16) == 0) { /* left-padded: the thesis's rule */
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

static quicoff_status_t decode_compat_signal(const uint8_t *p, size_t len,
                                             struct quicoff_wire_msg *m)
{
    bool peer = p[0] == 0;
    quicoff_wire_msg_init(m, peer ? QUICOFF_WIRE_COMPAT_PEER : QUICOFF_WIRE_COMPAT_HOST);
    if (len < (peer ? QUICOFF_WIRE_COMPAT_PEER_LEN : QUICOFF_WIRE_COMPAT_HOST_LEN))
        return fail(m, QUICOFF_MALFORMED);
    struct quicoff_wire_conn *a = &m->u.add;
    struct quicoff_conn_config *c = &a->cfg;
    m->index = rd16(p + 1);
    uint8_t algo = p[3];
    if (algo >= QUICOFF_SUITE_COUNT)
        return fail(m, QUICOFF_UNSUPPORTED);
    c->suite = (quicoff_suite_t)algo;
    size_t klen = quicoff_suite_key_len(c->suite);
    if (compat_key(p + 4, klen, c->keys.hp, &a->compat_right_padded) != QUICOFF_OK ||
        compat_key(p + 36, klen, c->keys.key, &a->compat_right_padded) != QUICOFF_OK)
        return fail(m, QUICOFF_INVALID_ARGUMENT);
    memcpy(c->keys.iv, p + 68, QUICOFF_IV_LEN);
    c->path_id = rd32(p + 80);
    if (peer) {
        memcpy(c->dcid, p + 84, QUICOFF_WIRE_COMPAT_DCID_LEN);
        c->dcid_len = QUICOFF_WIRE_COMPAT_DCID_LEN;
        uint64_t full_pn = rd64(p + 92);
        if (full_pn != UINT64_MAX && full_pn > QUICOFF_WIRE_PN_MAX)
            return fail(m, QUICOFF_INVALID_ARGUMENT);
        c->largest_pn = full_pn;
    } else {
        uint8_t n = p[84];
        if (n > QUICOFF_MAX_CID_LEN) {
            if (n % 8 || n < 24 || n > 8 * QUICOFF_MAX_CID_LEN)
                return fail(m, QUICOFF_INVALID_ARGUMENT);
            n /= 8;
            a->compat_dcid_len_bits = true;
        }
        c->dcid_len = n;
    }
    return QUICOFF_OK;
}

/* The compat data_pkt header rules (§3.5), shared by the full decoder and
 * quicoff_wire_data_hdr_read() so that the two cannot disagree.  d must be
 * zeroed by the caller; fields are filled as far as they were read, also on
 * error (the full decoder keeps the index for its caller). */
static inline quicoff_status_t read_compat_data_hdr(const uint8_t *p, size_t len,
                                                    struct quicoff_wire_data *d)
{
    if (len < QUICOFF_WIRE_COMPAT_DATA_HDR_LEN)
        return QUICOFF_MALFORMED;
    d->index = rd16(p);
    d->pn = rd64(p + 2);
    if (d->pn > QUICOFF_WIRE_PN_MAX)
        return QUICOFF_INVALID_ARGUMENT;
    /* No length field: the QUIC packet runs to the end of the frame. */
    if (len - QUICOFF_WIRE_COMPAT_DATA_HDR_LEN > UINT32_MAX)
        return QUICOFF_MALFORMED;
    d->payload = p + QUICOFF_WIRE_COMPAT_DATA_HDR_LEN;
    d->payload_len = (uint32_t)(len - QUICOFF_WIRE_COMPAT_DATA_HDR_LEN);
    return QUICOFF_OK;
}

static quicoff_status_t decode_compat_data(const uint8_t *p, size_t len,
                                           struct quicoff_wire_msg *m)
{
    quicoff_wire_msg_init(m, QUICOFF_WIRE_COMPAT_DATA);
    quicoff_status_t st = read_compat_data_hdr(p, len, &m->u.data);
    m->index = m->u.data.index;
    return st == QUICOFF_OK ? QUICOFF_OK : fail(m, st);
}

/* ------------------------------------------------------------------------ */
/* v1 TLVs: collect, then interpret                                          */

enum {
    B_SUITE = 1, B_LEVEL, B_QUIC_VERSION, B_DCID, B_LOCAL_ADDR, B_PATH_ID, B_NONCE_LAYOUT,
    B_FAIL_ACTION, B_LARGEST_PN, B_USAGE_THRESHOLD, B_KEY_GENERATION, B_PACKET_KEY, B_IV,
    B_HP_KEY, B_NEXT_PACKET_KEY, B_NEXT_IV, B_SECRET, B_ENCAP, B_ROLL_GENERATION, /* 19 */
    B_GREASE_QUIC_BIT, /* 20 = 0x0014 */
    B_CONN_STATS, B_TABLE_STATS, B_COUNT, B_PN, B_REMOTE_ADDR, B_DETAIL,
    B_MTU,
    B_N
};
#define BIT(b) (UINT32_C(1) << (b))

static int tlv_slot(uint16_t type)
{
    if (type >= QUICOFF_WIRE_T_SUITE && type <= QUICOFF_WIRE_T_GREASE_QUIC_BIT)
        return type; /* B_SUITE .. B_GREASE_QUIC_BIT are the type values */
    switch (type) {
    case QUICOFF_WIRE_T_CONN_STATS: return B_CONN_STATS;
    case QUICOFF_WIRE_T_TABLE_STATS: return B_TABLE_STATS;
    case QUICOFF_WIRE_T_COUNT: return B_COUNT;
    case QUICOFF_WIRE_T_PN: return B_PN;
    case QUICOFF_WIRE_T_REMOTE_ADDR: return B_REMOTE_ADDR;
    case QUICOFF_WIRE_T_DETAIL: return B_DETAIL;
    case QUICOFF_WIRE_T_MTU: return B_MTU;
    default: return -1;
    }
}

static const uint32_t allowed_add =
    BIT(B_SUITE) | BIT(B_LEVEL) | BIT(B_QUIC_VERSION) | BIT(B_DCID) | BIT(B_LOCAL_ADDR) |
    BIT(B_PATH_ID) | BIT(B_NONCE_LAYOUT) | BIT(B_FAIL_ACTION) | BIT(B_LARGEST_PN) |
    BIT(B_USAGE_THRESHOLD) | BIT(B_KEY_GENERATION) | BIT(B_PACKET_KEY) | BIT(B_IV) |
    BIT(B_HP_KEY) | BIT(B_NEXT_PACKET_KEY) | BIT(B_NEXT_IV) | BIT(B_SECRET) | BIT(B_ENCAP) |
    BIT(B_GREASE_QUIC_BIT);
static const uint32_t allowed_update =
    BIT(B_FAIL_ACTION) | BIT(B_LARGEST_PN) | BIT(B_USAGE_THRESHOLD) | BIT(B_KEY_GENERATION) |
    BIT(B_PACKET_KEY) | BIT(B_IV) | BIT(B_SECRET) | BIT(B_ENCAP) | BIT(B_ROLL_GENERATION);
static const uint32_t allowed_ack = BIT(B_DETAIL);
static const uint32_t allowed_stats = BIT(B_CONN_STATS) | BIT(B_TABLE_STATS) | BIT(B_DETAIL);
static const uint32_t allowed_event = BIT(B_COUNT) | BIT(B_PN) | BIT(B_KEY_GENERATION) |
                                      BIT(B_LEVEL) | BIT(B_DCID) | BIT(B_LOCAL_ADDR) |
                                      BIT(B_REMOTE_ADDR) | BIT(B_DETAIL) | BIT(B_MTU);

struct tlvs {
    uint32_t seen;
    const uint8_t *v[B_N];
    uint16_t n[B_N];
};

static quicoff_status_t collect_tlvs(const uint8_t *p, size_t len, uint32_t allowed,
                                     struct tlvs *t)
{
    memset(t, 0, sizeof(*t));
    size_t off = 0;
    while (off < len) {
        if (len - off < QUICOFF_WIRE_TLV_HDR_LEN)
            return QUICOFF_MALFORMED;
        uint16_t type = rd16(p + off);
        uint16_t n = rd16(p + off + 2);
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

static bool has(const struct tlvs *t, int b)
{
    return (t->seen & BIT(b)) != 0;
}

/* Fixed-size integer TLVs: a wrong size is malformed. */
static quicoff_status_t get_u8(const struct tlvs *t, int b, uint8_t *out)
{
    if (t->n[b] != 1)
        return QUICOFF_MALFORMED;
    *out = t->v[b][0];
    return QUICOFF_OK;
}

static quicoff_status_t get_u32(const struct tlvs *t, int b, uint32_t *out)
{
    if (t->n[b] != 4)
        return QUICOFF_MALFORMED;
    *out = rd32(t->v[b]);
    return QUICOFF_OK;
}

static quicoff_status_t get_u64(const struct tlvs *t, int b, uint64_t *out)
{
    if (t->n[b] != 8)
        return QUICOFF_MALFORMED;
    *out = rd64(t->v[b]);
    return QUICOFF_OK;
}

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        quicoff_status_t st_ = (expr);                                                            \
        if (st_ != QUICOFF_OK)                                                                    \
            return st_;                                                                           \
    } while (0)

static quicoff_status_t get_enum(const struct tlvs *t, int b, unsigned max, uint8_t *out)
{
    TRY(get_u8(t, b, out));
    return *out <= max ? QUICOFF_OK : QUICOFF_INVALID_ARGUMENT;
}

static quicoff_status_t get_addr(const struct tlvs *t, int b, struct quicoff_addr *a)
{
    const uint8_t *v = t->v[b];
    size_t n = t->n[b];
    if (n != 7 && n != 19)
        return QUICOFF_MALFORMED;
    if ((n == 7 && v[0] != 4) || (n == 19 && v[0] != 6))
        return QUICOFF_INVALID_ARGUMENT;
    memset(a, 0, sizeof(*a));
    a->family = v[0];
    a->port = rd16(v + 1);
    memcpy(a->ip, v + 3, n - 3);
    return QUICOFF_OK;
}

static quicoff_status_t get_dcid(const struct tlvs *t, uint8_t *dcid, uint8_t *dcid_len)
{
    if (t->n[B_DCID] > QUICOFF_MAX_CID_LEN)
        return QUICOFF_INVALID_ARGUMENT;
    if (t->n[B_DCID])
        memcpy(dcid, t->v[B_DCID], t->n[B_DCID]);
    *dcid_len = (uint8_t)t->n[B_DCID];
    return QUICOFF_OK;
}

static quicoff_status_t get_encap(const struct tlvs *t, struct quicoff_wire_encap *e)
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
    e->vlan_tci = rd16(v + 12);
    e->has_vlan = v[14] & 1;
    if (!e->has_vlan)
        e->vlan_tci = 0;
    e->family = v[15];
    e->ttl = v[16];
    e->tos = v[17];
    e->src_port = rd16(v + 18);
    e->dst_port = rd16(v + 20);
    size_t alen = e->family == 4 ? 4 : 16;
    memcpy(e->src_ip, v + 22, alen);
    memcpy(e->dst_ip, v + 22 + alen, alen);
    return QUICOFF_OK;
}

static quicoff_status_t get_pn(const struct tlvs *t, int b, bool none_ok, uint64_t *out)
{
    TRY(get_u64(t, b, out));
    if (*out > QUICOFF_WIRE_PN_MAX && !(none_ok && *out == UINT64_MAX))
        return QUICOFF_INVALID_ARGUMENT;
    return QUICOFF_OK;
}

/* A key TLV: 16 or 32 bytes (else malformed); must equal want when want != 0. */
static quicoff_status_t get_key(const struct tlvs *t, int b, size_t want, uint8_t *out)
{
    size_t n = t->n[b];
    if (!key_len_ok(n))
        return QUICOFF_MALFORMED;
    if (want && n != want)
        return QUICOFF_INVALID_ARGUMENT;
    memcpy(out, t->v[b], n);
    return QUICOFF_OK;
}

static quicoff_status_t get_iv(const struct tlvs *t, int b, uint8_t *out)
{
    if (t->n[b] != QUICOFF_IV_LEN)
        return QUICOFF_MALFORMED;
    memcpy(out, t->v[b], QUICOFF_IV_LEN);
    return QUICOFF_OK;
}

static quicoff_status_t get_secret(const struct tlvs *t, size_t want, uint8_t *out,
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

static quicoff_status_t interpret_add(const struct tlvs *t, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_conn *a = &m->u.add;
    struct quicoff_conn_config *c = &a->cfg;
    quicoff_conn_config_init(c);
    c->direction = (quicoff_direction_t)m->direction;
    uint8_t u8;

    if (!has(t, B_SUITE))
        return QUICOFF_MALFORMED;
    TRY(get_enum(t, B_SUITE, QUICOFF_SUITE_COUNT - 1, &u8));
    c->suite = (quicoff_suite_t)u8;
    if (has(t, B_LEVEL)) {
        TRY(get_enum(t, B_LEVEL, QUICOFF_LEVEL_COUNT - 1, &u8));
        c->level = (quicoff_level_t)u8;
    }
    if (has(t, B_QUIC_VERSION))
        TRY(get_u32(t, B_QUIC_VERSION, &c->version));
    if (has(t, B_DCID))
        TRY(get_dcid(t, c->dcid, &c->dcid_len));
    if (has(t, B_LOCAL_ADDR))
        TRY(get_addr(t, B_LOCAL_ADDR, &c->local_addr));
    if (has(t, B_PATH_ID))
        TRY(get_u32(t, B_PATH_ID, &c->path_id));
    if (has(t, B_NONCE_LAYOUT)) {
        TRY(get_enum(t, B_NONCE_LAYOUT, QUICOFF_NONCE_MULTIPATH_PATH_ID_LE, &u8));
        c->nonce_layout = (quicoff_nonce_layout_t)u8;
    }
    if (has(t, B_FAIL_ACTION)) {
        TRY(get_enum(t, B_FAIL_ACTION, QUICOFF_FAIL_PASS, &u8));
        c->fail_action = (quicoff_fail_action_t)u8;
    }
    if (has(t, B_LARGEST_PN))
        TRY(get_pn(t, B_LARGEST_PN, true, &c->largest_pn));
    if (has(t, B_USAGE_THRESHOLD))
        TRY(get_u64(t, B_USAGE_THRESHOLD, &c->usage_threshold));
    if (has(t, B_KEY_GENERATION))
        TRY(get_u32(t, B_KEY_GENERATION, &c->key_generation));

    size_t klen = quicoff_suite_key_len(c->suite);
    bool raw = has(t, B_PACKET_KEY) || has(t, B_IV) || has(t, B_HP_KEY);
    if (has(t, B_SECRET)) {
        if (raw)
            return QUICOFF_MALFORMED;
        size_t n = 0;
        TRY(get_secret(t, quicoff_suite_secret_len(c->suite), a->secret, &n));
        c->secret_len = n;
    } else {
        if (!has(t, B_PACKET_KEY) || !has(t, B_IV) || !has(t, B_HP_KEY))
            return QUICOFF_MALFORMED;
        TRY(get_key(t, B_PACKET_KEY, klen, c->keys.key));
        TRY(get_iv(t, B_IV, c->keys.iv));
        TRY(get_key(t, B_HP_KEY, klen, c->keys.hp));
    }
    if (has(t, B_NEXT_PACKET_KEY) != has(t, B_NEXT_IV))
        return QUICOFF_MALFORMED;
    if (has(t, B_NEXT_PACKET_KEY)) {
        TRY(get_key(t, B_NEXT_PACKET_KEY, klen, c->next_keys.key));
        TRY(get_iv(t, B_NEXT_IV, c->next_keys.iv));
        c->has_next_keys = true;
    }
    if (has(t, B_ENCAP)) {
        TRY(get_encap(t, &a->encap));
        a->has_encap = true;
    }
    /* absent: greasing accepted (quicoff_conn_config_init's default) */
    if (has(t, B_GREASE_QUIC_BIT)) {
        TRY(get_enum(t, B_GREASE_QUIC_BIT, 1, &u8));
        c->grease_quic_bit = u8 != 0;
    }
    return QUICOFF_OK;
}

static quicoff_status_t interpret_update(const struct tlvs *t, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_update *w = &m->u.update;
    struct quicoff_conn_update *u = &w->upd;
    uint8_t u8;

    bool keys = has(t, B_PACKET_KEY) || has(t, B_IV) || has(t, B_SECRET);
    if (keys != has(t, B_KEY_GENERATION))
        return QUICOFF_MALFORMED;
    if (keys) {
        TRY(get_u32(t, B_KEY_GENERATION, &u->key_generation));
        if (has(t, B_SECRET)) {
            if (has(t, B_PACKET_KEY) || has(t, B_IV))
                return QUICOFF_MALFORMED;
            size_t n = 0;
            TRY(get_secret(t, 0, w->secret, &n));
            u->secret_len = n;
        } else {
            if (!has(t, B_PACKET_KEY) || !has(t, B_IV))
                return QUICOFF_MALFORMED;
            TRY(get_key(t, B_PACKET_KEY, 0, u->keys.key));
            TRY(get_iv(t, B_IV, u->keys.iv));
            w->key_len = (uint8_t)t->n[B_PACKET_KEY];
        }
        u->what |= QUICOFF_UPDATE_KEYS;
    }
    bool roll = m->flags & QUICOFF_WIRE_UPDATE_ROLL;
    if (roll != has(t, B_ROLL_GENERATION))
        return QUICOFF_MALFORMED;
    if (roll) {
        TRY(get_u32(t, B_ROLL_GENERATION, &w->roll_generation));
        u->what |= QUICOFF_UPDATE_ROLL;
    }
    if (m->flags & QUICOFF_WIRE_UPDATE_DROP_OLD)
        u->what |= QUICOFF_UPDATE_DROP_OLD;
    if (has(t, B_LARGEST_PN)) {
        TRY(get_pn(t, B_LARGEST_PN, true, &u->largest_pn));
        u->what |= QUICOFF_UPDATE_LARGEST_PN;
    }
    if (has(t, B_FAIL_ACTION)) {
        TRY(get_enum(t, B_FAIL_ACTION, QUICOFF_FAIL_PASS, &u8));
        u->fail_action = (quicoff_fail_action_t)u8;
        u->what |= QUICOFF_UPDATE_FAIL_ACTION;
    }
    if (has(t, B_USAGE_THRESHOLD)) {
        TRY(get_u64(t, B_USAGE_THRESHOLD, &u->usage_threshold));
        u->what |= QUICOFF_UPDATE_THRESHOLD;
    }
    if (has(t, B_ENCAP)) {
        TRY(get_encap(t, &w->encap));
        w->has_encap = true;
    }
    return QUICOFF_OK;
}

static quicoff_status_t get_stats_block(const struct tlvs *t, int b, const size_t *offs,
                                        size_t nfields, void *dst)
{
    size_t n = t->n[b];
    if (n % 8)
        return QUICOFF_MALFORMED;
    size_t words = n / 8;
    for (size_t i = 0; i < nfields && i < words; i++) {
        uint64_t v = rd64(t->v[b] + 8 * i);
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
/* v1 decode                                                                 */

/* The v1 data header rules (§4.2), shared by the full decoder and
 * quicoff_wire_data_hdr_read() so that the two cannot disagree.  The order of
 * the checks is part of the contract (it decides the status of a frame with
 * two faults): length, then PN, then level.  What is not checked is ignored
 * on purpose: the reserved bytes of DATA_TO_OFFLOAD, bits 3-1 of byte 19, and
 * flag or status values this version does not define (reported as received:
 * a newer offload may set more result flags).  Data frames carry no TLVs.
 * d must be zeroed by the caller; fields are filled as far as they were read,
 * also on error. */
static inline quicoff_status_t read_v1_data_hdr(const uint8_t *p, size_t len, bool to_host,
                                                struct quicoff_wire_data *d)
{
    if (len < QUICOFF_WIRE_DATA_HDR_LEN)
        return QUICOFF_MALFORMED;
    d->flags = p[3];
    d->index = rd32(p + 4);
    d->pn = rd64(p + 8);
    uint16_t n = rd16(p + 16);
    if (n > len - QUICOFF_WIRE_DATA_HDR_LEN)
        return QUICOFF_MALFORMED;
    if (d->pn > QUICOFF_WIRE_PN_MAX)
        return QUICOFF_INVALID_ARGUMENT;
    if (to_host) {
        d->status = p[18];
        d->level = p[19] >> 4;
        d->key_phase = p[19] & 1;
        if (d->level >= QUICOFF_LEVEL_COUNT)
            return QUICOFF_INVALID_ARGUMENT;
    }
    d->payload = p + QUICOFF_WIRE_DATA_HDR_LEN;
    d->payload_len = n;
    return QUICOFF_OK;
}

static quicoff_status_t decode_v1_data(const uint8_t *p, size_t len, struct quicoff_wire_msg *m)
{
    struct quicoff_wire_data *d = &m->u.data;
    quicoff_status_t st = read_v1_data_hdr(p, len, m->kind == QUICOFF_WIRE_DATA_TO_HOST, d);
    /* kept by fail(): what was read of the header */
    m->flags = d->flags;
    m->index = d->index;
    m->status = d->status;
    if (st != QUICOFF_OK)
        return fail(m, st);
    m->hdr_valid = true;
    return QUICOFF_OK;
}

static quicoff_status_t decode_v1(const uint8_t *p, size_t len, struct quicoff_wire_msg *m)
{
    quicoff_wire_msg_init(m, QUICOFF_WIRE_NONE);
    if (len < 3)
        return fail(m, QUICOFF_MALFORMED);
    m->version = p[1];
    uint8_t type = p[2];
    m->kind = type;
    if (m->version == QUICOFF_WIRE_VERSION && is_v1_data(type))
        return decode_v1_data(p, len, m);
    if (len < QUICOFF_WIRE_SIGNAL_HDR_LEN)
        return fail(m, m->version == QUICOFF_WIRE_VERSION ? QUICOFF_MALFORMED
                                                          : QUICOFF_UNSUPPORTED);
    /* The 16-byte signaling header is the same in every version. */
    m->flags = p[3];
    m->request_id = rd32(p + 4);
    m->index = rd32(p + 8);
    m->direction = p[12];
    m->status = p[13];
    m->hdr_valid = true;
    if (m->version != QUICOFF_WIRE_VERSION || !is_v1_signal(type))
        return fail(m, QUICOFF_UNSUPPORTED);
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
        return fail(m, QUICOFF_INVALID_ARGUMENT);
    uint16_t tlv_len = rd16(p + 14);
    if (tlv_len > len - QUICOFF_WIRE_SIGNAL_HDR_LEN)
        return fail(m, QUICOFF_MALFORMED);

    uint32_t allowed = 0;
    switch (type) {
    case QUICOFF_WIRE_ADD: allowed = allowed_add; break;
    case QUICOFF_WIRE_UPDATE: allowed = allowed_update; break;
    case QUICOFF_WIRE_ACK: allowed = allowed_ack; break;
    case QUICOFF_WIRE_STATS: allowed = allowed_stats; break;
    case QUICOFF_WIRE_EVENT: allowed = allowed_event; break;
    default: allowed = 0; break; /* REMOVE, QUERY */
    }
    struct tlvs t;
    quicoff_status_t st = collect_tlvs(p + QUICOFF_WIRE_SIGNAL_HDR_LEN, tlv_len, allowed, &t);
    if (st != QUICOFF_OK)
        return fail(m, st);
    switch (type) {
    case QUICOFF_WIRE_ADD: st = interpret_add(&t, m); break;
    case QUICOFF_WIRE_UPDATE: st = interpret_update(&t, m); break;
    case QUICOFF_WIRE_STATS: st = interpret_stats(&t, m); break;
    case QUICOFF_WIRE_EVENT: st = interpret_event(&t, m); break;
    default: break;
    }
    if (st != QUICOFF_OK)
        return fail(m, st);
    if (has(&t, B_DETAIL)) {
        if (t.n[B_DETAIL] > QUICOFF_WIRE_DETAIL_MAX)
            return fail(m, QUICOFF_MALFORMED);
        m->detail = t.v[B_DETAIL];
        m->detail_len = t.n[B_DETAIL];
    }
    return QUICOFF_OK;
}

quicoff_status_t quicoff_wire_decode_payload(uint16_t ethertype, const uint8_t *p, size_t len,
                                             struct quicoff_wire_msg *m)
{
    if (!m)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_wire_msg_init(m, QUICOFF_WIRE_NONE);
    if (!p && len)
        return QUICOFF_INVALID_ARGUMENT;
    if (ethertype == QUICOFF_WIRE_ETHERTYPE_DATA)
        return decode_compat_data(p, len, m);
    if (ethertype != QUICOFF_WIRE_ETHERTYPE_SIGNAL)
        return QUICOFF_UNSUPPORTED;
    if (len < 1)
        return QUICOFF_MALFORMED;
    switch (p[0]) {
    case 0:
    case 1:
        return decode_compat_signal(p, len, m);
    case QUICOFF_WIRE_MAGIC:
        return decode_v1(p, len, m);
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
    uint16_t et = rd16(frame + off);
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
            eth.vlan_tci = rd16(frame + off);
        }
        et = rd16(frame + off + 2);
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
                                            quicoff_wire_kind_t *kind,
                                            struct quicoff_wire_data *d)
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
               p[0] == QUICOFF_WIRE_MAGIC && is_v1_data(p[2])) {
        /* The full decoder reports the Type byte as the kind even for a
         * version it does not speak, and rejects it whatever follows. */
        *kind = (quicoff_wire_kind_t)p[2];
        if (p[1] != QUICOFF_WIRE_VERSION)
            return QUICOFF_UNSUPPORTED;
        st = read_v1_data_hdr(p, len, p[2] == QUICOFF_WIRE_DATA_TO_HOST, d);
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

static void put_addr_tlv(struct wbuf *w, uint16_t type, const struct quicoff_addr *a)
{
    size_t alen = a->family == 4 ? 4 : 16;
    tlv_hdr(w, type, 3 + alen);
    wb_u8(w, a->family);
    wb_u16(w, a->port);
    wb_put(w, a->ip, alen);
}

static bool addr_ok(const struct quicoff_addr *a)
{
    return a->family == 4 || a->family == 6;
}

static quicoff_status_t put_encap_tlv(struct wbuf *w, const struct quicoff_wire_encap *e)
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

static quicoff_status_t put_add_tlvs(struct wbuf *w, const struct quicoff_wire_msg *m)
{
    const struct quicoff_wire_conn *a = &m->u.add;
    const struct quicoff_conn_config *c = &a->cfg;
    if ((unsigned)c->suite >= QUICOFF_SUITE_COUNT || (unsigned)c->level >= QUICOFF_LEVEL_COUNT ||
        c->dcid_len > QUICOFF_MAX_CID_LEN || (unsigned)c->nonce_layout > QUICOFF_NONCE_MULTIPATH_PATH_ID_LE ||
        (unsigned)c->fail_action > QUICOFF_FAIL_PASS ||
        (c->largest_pn > QUICOFF_WIRE_PN_MAX && c->largest_pn != UINT64_MAX) ||
        (c->local_addr.family != 0 && !addr_ok(&c->local_addr)))
        return QUICOFF_INVALID_ARGUMENT;
    size_t klen = quicoff_suite_key_len(c->suite);
    const uint8_t *secret = NULL;
    if (c->secret_len) {
        if (c->secret_len != quicoff_suite_secret_len(c->suite))
            return QUICOFF_INVALID_ARGUMENT;
        secret = c->secret ? c->secret : a->secret;
    }
    tlv_u8(w, QUICOFF_WIRE_T_SUITE, (uint8_t)c->suite);
    tlv_u8(w, QUICOFF_WIRE_T_LEVEL, (uint8_t)c->level);
    tlv_u32(w, QUICOFF_WIRE_T_QUIC_VERSION, c->version);
    tlv_bytes(w, QUICOFF_WIRE_T_DCID, c->dcid, c->dcid_len);
    if (c->local_addr.family)
        put_addr_tlv(w, QUICOFF_WIRE_T_LOCAL_ADDR, &c->local_addr);
    tlv_u32(w, QUICOFF_WIRE_T_PATH_ID, c->path_id);
    tlv_u8(w, QUICOFF_WIRE_T_NONCE_LAYOUT, (uint8_t)c->nonce_layout);
    tlv_u8(w, QUICOFF_WIRE_T_FAIL_ACTION, (uint8_t)c->fail_action);
    tlv_u64(w, QUICOFF_WIRE_T_LARGEST_PN, c->largest_pn);
    tlv_u64(w, QUICOFF_WIRE_T_USAGE_THRESHOLD, c->usage_threshold);
    tlv_u32(w, QUICOFF_WIRE_T_KEY_GENERATION, c->key_generation);
    if (!secret) {
        tlv_bytes(w, QUICOFF_WIRE_T_PACKET_KEY, c->keys.key, klen);
        tlv_bytes(w, QUICOFF_WIRE_T_IV, c->keys.iv, QUICOFF_IV_LEN);
        tlv_bytes(w, QUICOFF_WIRE_T_HP_KEY, c->keys.hp, klen);
    }
    if (c->has_next_keys) {
        tlv_bytes(w, QUICOFF_WIRE_T_NEXT_PACKET_KEY, c->next_keys.key, klen);
        tlv_bytes(w, QUICOFF_WIRE_T_NEXT_IV, c->next_keys.iv, QUICOFF_IV_LEN);
    }
    if (secret)
        tlv_bytes(w, QUICOFF_WIRE_T_SECRET, secret, c->secret_len);
    if (a->has_encap)
        TRY(put_encap_tlv(w, &a->encap));
    /* sent only when off: absent means on, and ADDs stay as they were */
    if (!c->grease_quic_bit)
        tlv_u8(w, QUICOFF_WIRE_T_GREASE_QUIC_BIT, 0);
    return QUICOFF_OK;
}

static const uint32_t update_known =
    QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_ROLL | QUICOFF_UPDATE_DROP_OLD |
    QUICOFF_UPDATE_LARGEST_PN | QUICOFF_UPDATE_FAIL_ACTION | QUICOFF_UPDATE_THRESHOLD;

static uint8_t update_flags(const struct quicoff_conn_update *u)
{
    return (uint8_t)(((u->what & QUICOFF_UPDATE_ROLL) ? QUICOFF_WIRE_UPDATE_ROLL : 0) |
                     ((u->what & QUICOFF_UPDATE_DROP_OLD) ? QUICOFF_WIRE_UPDATE_DROP_OLD : 0));
}

static quicoff_status_t put_update_tlvs(struct wbuf *w, const struct quicoff_wire_msg *m)
{
    const struct quicoff_wire_update *x = &m->u.update;
    const struct quicoff_conn_update *u = &x->upd;
    if ((u->what & ~update_known) ||
        ((u->what & QUICOFF_UPDATE_FAIL_ACTION) && (unsigned)u->fail_action > QUICOFF_FAIL_PASS) ||
        ((u->what & QUICOFF_UPDATE_LARGEST_PN) && u->largest_pn > QUICOFF_WIRE_PN_MAX &&
         u->largest_pn != UINT64_MAX))
        return QUICOFF_INVALID_ARGUMENT;
    const uint8_t *secret = NULL;
    if (u->what & QUICOFF_UPDATE_KEYS) {
        if (u->secret_len) {
            if (u->secret_len != 32 && u->secret_len != 48)
                return QUICOFF_INVALID_ARGUMENT;
            secret = u->secret ? u->secret : x->secret;
        } else if (!key_len_ok(x->key_len)) {
            return QUICOFF_INVALID_ARGUMENT;
        }
    }
    if (u->what & QUICOFF_UPDATE_FAIL_ACTION)
        tlv_u8(w, QUICOFF_WIRE_T_FAIL_ACTION, (uint8_t)u->fail_action);
    if (u->what & QUICOFF_UPDATE_LARGEST_PN)
        tlv_u64(w, QUICOFF_WIRE_T_LARGEST_PN, u->largest_pn);
    if (u->what & QUICOFF_UPDATE_THRESHOLD)
        tlv_u64(w, QUICOFF_WIRE_T_USAGE_THRESHOLD, u->usage_threshold);
    if (u->what & QUICOFF_UPDATE_KEYS) {
        tlv_u32(w, QUICOFF_WIRE_T_KEY_GENERATION, u->key_generation);
        if (!secret) {
            tlv_bytes(w, QUICOFF_WIRE_T_PACKET_KEY, u->keys.key, x->key_len);
            tlv_bytes(w, QUICOFF_WIRE_T_IV, u->keys.iv, QUICOFF_IV_LEN);
        } else {
            tlv_bytes(w, QUICOFF_WIRE_T_SECRET, secret, u->secret_len);
        }
    }
    if (x->has_encap)
        TRY(put_encap_tlv(w, &x->encap));
    if (u->what & QUICOFF_UPDATE_ROLL)
        tlv_u32(w, QUICOFF_WIRE_T_ROLL_GENERATION, x->roll_generation);
    return QUICOFF_OK;
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

static quicoff_status_t encode_v1_signal(const struct quicoff_wire_msg *m, struct wbuf *w)
{
    if (m->direction > QUICOFF_DIR_RX &&
        !(m->kind == QUICOFF_WIRE_ACK && m->direction == QUICOFF_WIRE_DIRECTION_NONE))
        return QUICOFF_INVALID_ARGUMENT;
    if (m->detail_len > QUICOFF_WIRE_DETAIL_MAX || (m->detail_len && !m->detail))
        return QUICOFF_INVALID_ARGUMENT;
    uint8_t byte3;
    switch (m->kind) {
    case QUICOFF_WIRE_ADD: byte3 = m->flags & QUICOFF_WIRE_ADD_REPLACE; break;
    case QUICOFF_WIRE_UPDATE: byte3 = update_flags(&m->u.update.upd); break;
    case QUICOFF_WIRE_QUERY:
    case QUICOFF_WIRE_STATS:
        byte3 = m->flags & (QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE);
        break;
    case QUICOFF_WIRE_ACK: byte3 = m->acked_kind; break;
    case QUICOFF_WIRE_EVENT: byte3 = m->u.event.code; break;
    default: byte3 = 0; break; /* REMOVE */
    }
    size_t start = w->len;
    put_signal_hdr(w, m, byte3);
    size_t tlv_start = w->len;
    quicoff_status_t st = QUICOFF_OK;
    switch (m->kind) {
    case QUICOFF_WIRE_ADD: st = put_add_tlvs(w, m); break;
    case QUICOFF_WIRE_UPDATE: st = put_update_tlvs(w, m); break;
    case QUICOFF_WIRE_STATS:
        if (m->u.stats.has_conn)
            put_stats_block(w, QUICOFF_WIRE_T_CONN_STATS, conn_stats_off, CONN_STATS_N,
                            &m->u.stats.conn);
        if (m->u.stats.has_table)
            put_stats_block(w, QUICOFF_WIRE_T_TABLE_STATS, table_stats_off, TABLE_STATS_N,
                            &m->u.stats.table);
        break;
    case QUICOFF_WIRE_EVENT: st = put_event_tlvs(w, m); break;
    default: break;
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
    wr16(w->p + start + 14, (uint16_t)tlv_len);
    return QUICOFF_OK;
}

size_t quicoff_wire_data_hdr_write(uint8_t *buf, size_t cap, quicoff_wire_kind_t kind,
                                   const struct quicoff_wire_data *d)
{
    if (!buf || !d || !is_v1_data(kind) || cap < QUICOFF_WIRE_DATA_HDR_LEN ||
        d->pn > QUICOFF_WIRE_PN_MAX || d->payload_len > UINT16_MAX)
        return 0;
    bool to_host = kind == QUICOFF_WIRE_DATA_TO_HOST;
    if (to_host && d->level >= QUICOFF_LEVEL_COUNT)
        return 0;
    buf[0] = QUICOFF_WIRE_MAGIC;
    buf[1] = QUICOFF_WIRE_VERSION;
    buf[2] = (uint8_t)kind;
    buf[3] = d->flags;
    wr32(buf + 4, d->index);
    wr64(buf + 8, d->pn);
    wr16(buf + 16, (uint16_t)d->payload_len);
    buf[18] = to_host ? d->status : 0;
    buf[19] = to_host ? (uint8_t)(d->level << 4 | (d->key_phase & 1)) : 0;
    return QUICOFF_WIRE_DATA_HDR_LEN;
}

size_t quicoff_wire_compat_data_hdr_write(uint8_t *buf, size_t cap, uint32_t index, uint64_t pn)
{
    if (!buf || cap < QUICOFF_WIRE_COMPAT_DATA_HDR_LEN || index > 0xFFFF ||
        pn > QUICOFF_WIRE_PN_MAX)
        return 0;
    wr16(buf, (uint16_t)index);
    wr64(buf + 2, pn);
    return QUICOFF_WIRE_COMPAT_DATA_HDR_LEN;
}

static quicoff_status_t encode_compat_signal(const struct quicoff_wire_msg *m, struct wbuf *w)
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
    wb_put(w, zero, 32 - klen); /* the thesis's padding: the key as a 256-bit number */
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

static quicoff_status_t encode_payload(const struct quicoff_wire_msg *m, struct wbuf *w,
                                       uint16_t *ethertype)
{
    *ethertype = QUICOFF_WIRE_ETHERTYPE_SIGNAL;
    if (is_v1_signal(m->kind))
        return encode_v1_signal(m, w);
    if (is_v1_data(m->kind) || m->kind == QUICOFF_WIRE_COMPAT_DATA) {
        const struct quicoff_wire_data *d = &m->u.data;
        bool compat = m->kind == QUICOFF_WIRE_COMPAT_DATA;
        if (compat)
            *ethertype = QUICOFF_WIRE_ETHERTYPE_DATA;
        size_t hl = compat ? QUICOFF_WIRE_COMPAT_DATA_HDR_LEN : QUICOFF_WIRE_DATA_HDR_LEN;
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
        return encode_compat_signal(m, w);
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
        wr16(buf + 12, QUICOFF_WIRE_ETHERTYPE_VLAN);
        wr16(buf + 14, m->eth.vlan_tci);
    }
    wr16(buf + hl - 2, et);
    if (out_len)
        *out_len = hl + n;
    return QUICOFF_OK;
}
