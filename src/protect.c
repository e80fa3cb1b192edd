/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path: protect and unprotect bursts of QUIC packets in place
 * (RFC 9001 §5: AEAD payload protection, header protection, nonce; §6: key
 * phases; §6.6: usage limits). Nothing here allocates, locks, logs or aborts:
 * every outcome is a status in the packet's result and a counter.
 */
#include "parse.h"
#include "table.h"

#include <string.h>

#define PN_MAX ((UINT64_C(1) << 62) - 1)

/* nonce = IV ^ (path part in bytes 0..3 | packet number, 64-bit big-endian, in 4..11) */
static inline void build_nonce(uint8_t nonce[QUICOFF_IV_LEN], const struct qo_keyset *ks,
                               const uint8_t iv[QUICOFF_IV_LEN], uint64_t pn)
{
    uint8_t pad[QUICOFF_IV_LEN] = {0};
    uint32_t path = ks->path_id;
    if (ks->nonce_layout == QUICOFF_NONCE_MULTIPATH) {
        pad[0] = (uint8_t)(path >> 24);
        pad[1] = (uint8_t)(path >> 16);
        pad[2] = (uint8_t)(path >> 8);
        pad[3] = (uint8_t)path;
    } else if (ks->nonce_layout == QUICOFF_NONCE_SEED000) {
        /* listing 4.5: htonl() then shifted out high byte first on a
         * little-endian CPU, so the path ID lands byte-reversed */
        pad[0] = (uint8_t)path;
        pad[1] = (uint8_t)(path >> 8);
        pad[2] = (uint8_t)(path >> 16);
        pad[3] = (uint8_t)(path >> 24);
    }
    for (int i = 0; i < 8; i++)
        pad[4 + i] = (uint8_t)(pn >> (56 - 8 * i));
    for (int i = 0; i < QUICOFF_IV_LEN; i++)
        nonce[i] = iv[i] ^ pad[i];
}

static inline uint8_t first_byte_mask(const struct qo_header *h)
{
    return h->is_long ? 0x0f : 0x1f; /* RFC 9001 §5.4.1 */
}

static inline void result_init(struct quicoff_result *r, const struct quicoff_pkt *p)
{
    memset(r, 0, sizeof(*r));
    r->hdr_off = p->offset;
    r->packet_end = p->len;
    r->conn = QUICOFF_CONN_INVALID;
}

/* Counts a failed outcome in the worker (and connection, if known). */
static void count_failure(struct quicoff_worker *w, struct qo_conn *c, quicoff_status_t st)
{
    switch (st) {
    case QUICOFF_UNKNOWN_CONNECTION:
        QO_ADD(w->c.unknown_connection, 1);
        break;
    case QUICOFF_AUTH_FAILED:
        QO_ADD(w->c.auth_failures, 1);
        if (c)
            QO_ADD(c->auth_failures, 1);
        break;
    case QUICOFF_MALFORMED:
    case QUICOFF_NO_SPACE:
        QO_ADD(w->c.malformed, 1);
        if (c)
            QO_ADD(c->malformed, 1);
        break;
    case QUICOFF_KEY_PHASE_UNAVAILABLE:
        QO_ADD(w->c.key_phase_unavailable, 1);
        if (c)
            QO_ADD(c->key_phase_unavailable, 1);
        break;
    case QUICOFF_KEY_EXHAUSTED:
        QO_ADD(w->c.key_exhausted, 1);
        break;
    case QUICOFF_UNSUPPORTED:
        QO_ADD(w->c.unsupported, 1);
        break;
    default:
        break;
    }
}

/*
 * Which key slot decrypts (RX) a packet with key phase bit kp, given the
 * current generation cur (RFC 9001 §6.3-6.5):
 *  slot holds cur       -> current keys
 *  slot holds cur + 1   -> next keys: a key update by the peer, if the packet
 *                          is newer than the current phase's first packet
 *  slot holds cur - 1   -> previous keys, only for packets older than the
 *                          current phase's first packet
 * Anything else: KEY_PHASE_UNAVAILABLE.
 */
enum { KEYS_CURRENT, KEYS_NEXT, KEYS_OLD, KEYS_NONE };

static int rx_key_choice(const struct qo_keyslot *s, uint32_t cur, uint64_t pn,
                         uint64_t gen_first_pn)
{
    if (!s->present)
        return KEYS_NONE;
    if (s->gen == cur)
        return KEYS_CURRENT;
    if (s->gen == cur + 1)
        return pn >= gen_first_pn ? KEYS_NEXT : KEYS_NONE;
    if (s->gen + 1 == cur)
        return pn < gen_first_pn ? KEYS_OLD : KEYS_NONE;
    return KEYS_NONE;
}

static void unprotect_one(struct quicoff_worker *w, struct quicoff_pkt *p,
                          struct quicoff_result *r)
{
    const struct quicoff_table *t = w->table;
    uint8_t *d = p->data;
    struct qo_header h;
    struct qo_conn *c = NULL;
    quicoff_status_t st;

    result_init(r, p);
    st = qo_parse_header(d, p->len, p->offset, t->local_cid_len, &h);
    r->packet_end = h.end;
    r->level = h.level;
    r->flags = h.is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
    if (st != QUICOFF_OK)
        goto fail;

    struct qo_keyset *ks;
    c = qo_table_lookup(t, h.level, d + h.dcid_off, h.dcid_len,
                        h.dcid_len ? NULL : p->local_addr, &ks);
    if (!c) {
        st = QUICOFF_UNKNOWN_CONNECTION;
        goto fail;
    }
    r->conn = qo_handle(c);
    if (QO_GET(c->auth_failures) >= ks->hard_limit) {
        st = QUICOFF_KEY_EXHAUSTED; /* integrity limit: the connection must close */
        goto fail;
    }
    /* The sample starts 4 bytes after the PN field (§5.4.2) and must fit
     * before the end of the packet. */
    if ((uint64_t)h.pn_off + 4 + QUICOFF_SAMPLE_LEN > h.end) {
        st = QUICOFF_MALFORMED;
        goto fail;
    }

    uint8_t mask[5];
    ks->hp->mask(ks->hp_ctx, d + h.pn_off + 4, mask);
    uint8_t first = d[p->offset] ^ (mask[0] & first_byte_mask(&h));
    unsigned pn_len = (first & 3) + 1;
    uint64_t truncated = 0;
    for (unsigned i = 0; i < pn_len; i++)
        truncated = (truncated << 8) | (uint8_t)(d[h.pn_off + i] ^ mask[1 + i]);
    uint64_t largest = QO_GET(c->largest_pn);
    uint64_t pn = quicoff_pn_decode(largest, truncated, pn_len * 8);

    unsigned kp = h.is_long ? 0 : (first >> 2) & 1;
    uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_acquire);
    const struct qo_keyslot *slot = &ks->phase[kp];
    int choice = rx_key_choice(slot, cur, pn, QO_GET(c->gen_first_pn));
    r->key_phase = (uint8_t)kp;
    r->pn_len = (uint8_t)pn_len;
    r->pn_off = h.pn_off;
    r->pn = pn;
    if (choice == KEYS_NONE) {
        st = QUICOFF_KEY_PHASE_UNAVAILABLE;
        goto fail;
    }

    /* The AAD is the header with protection removed: unmask in place. */
    uint8_t saved_first = d[p->offset];
    d[p->offset] = first;
    for (unsigned i = 0; i < pn_len; i++)
        d[h.pn_off + i] ^= mask[1 + i];

    uint32_t payload_off = h.pn_off + pn_len;
    uint32_t payload_len = h.end - QUICOFF_TAG_LEN - payload_off;
    uint8_t nonce[QUICOFF_IV_LEN];
    build_nonce(nonce, ks, slot->iv, pn);
    if (ks->aead->open(slot->aead_ctx, nonce, d + p->offset, payload_off - p->offset,
                       d + payload_off, payload_len, d + h.end - QUICOFF_TAG_LEN,
                       w->scratch) != 0) {
        /* Put the header back as received; the backend left the payload. */
        d[p->offset] = saved_first;
        for (unsigned i = 0; i < pn_len; i++)
            d[h.pn_off + i] ^= mask[1 + i];
        if (ks->fail_action == QUICOFF_FAIL_PASS)
            r->flags |= QUICOFF_FLAG_PASS_FAILED;
        st = QUICOFF_AUTH_FAILED;
        goto fail;
    }

    if (choice == KEYS_NEXT) {
        /* The peer moved to the next key phase (§6.2). */
        atomic_store_explicit(&c->gen_first_pn, pn, memory_order_relaxed);
        atomic_store_explicit(&c->cur_gen, cur + 1, memory_order_release);
        QO_ADD(c->key_updates, 1);
        QO_ADD(w->c.key_updates, 1);
        r->flags |= QUICOFF_FLAG_KEY_UPDATED;
    } else if (choice == KEYS_OLD) {
        r->flags |= QUICOFF_FLAG_OLD_KEYS;
    }
    if (largest == UINT64_MAX || pn > largest)
        atomic_store_explicit(&c->largest_pn, pn, memory_order_relaxed);
    QO_ADD(c->packets, 1);
    QO_ADD(c->bytes, payload_len);
    QO_ADD(c->key_packets[kp], 1);
    QO_ADD(w->c.rx_packets, 1);
    QO_ADD(w->c.rx_bytes, payload_len);

    r->payload_off = payload_off;
    r->payload_len = payload_len;
    if (QO_GET(c->auth_failures) >= ks->threshold) {
        QO_ADD(w->c.usage_limit_reached, 1);
        r->status = QUICOFF_USAGE_LIMIT_REACHED;
    } else {
        r->status = QUICOFF_OK;
    }
    return;
fail:
    r->status = st;
    count_failure(w, c, st);
}

static void protect_one(struct quicoff_worker *w, struct quicoff_pkt *p, struct quicoff_result *r)
{
    const struct quicoff_table *t = w->table;
    uint8_t *d = p->data;
    struct qo_conn *c = NULL;
    struct qo_header h;
    quicoff_status_t st;

    result_init(r, p);
    r->conn = p->conn;
    uint32_t slot_index = (uint32_t)p->conn;
    struct qo_keyset *ks = NULL;
    if (slot_index < t->capacity) {
        c = &t->conns[slot_index];
        ks = atomic_load_explicit(&c->ks, memory_order_acquire);
        if (!ks || ks->direction != QUICOFF_DIR_TX ||
            atomic_load_explicit(&c->handle_gen, memory_order_relaxed) != (uint32_t)(p->conn >> 32))
            ks = NULL;
    }
    if (!ks) {
        c = NULL;
        st = QUICOFF_UNKNOWN_CONNECTION;
        goto fail;
    }
    if (p->offset >= p->len || p->len > p->cap || p->cap - p->len < QUICOFF_TAG_LEN) {
        st = p->offset >= p->len ? QUICOFF_MALFORMED : QUICOFF_NO_SPACE;
        goto fail;
    }
    uint32_t end = p->len + QUICOFF_TAG_LEN;
    st = qo_parse_header(d, end, p->offset, ks->dcid_len, &h);
    r->level = h.level;
    r->flags = h.is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
    if (st != QUICOFF_OK)
        goto fail;
    unsigned pn_len = (d[p->offset] & 3) + 1;
    /* A long header's Length must already count PN, payload and tag; the
     * packet must be long enough for the header-protection sample (the host
     * pads, §5.4.2); the header's PN bytes must encode pn. */
    if (h.level != ks->level || h.end != end || (uint64_t)h.pn_off + pn_len > p->len ||
        (uint64_t)h.pn_off + 4 + QUICOFF_SAMPLE_LEN > end || p->pn > PN_MAX) {
        st = QUICOFF_MALFORMED;
        goto fail;
    }
    uint64_t encoded = 0;
    for (unsigned i = 0; i < pn_len; i++)
        encoded = (encoded << 8) | d[h.pn_off + i];
    if (encoded != (p->pn & ((UINT64_C(1) << (8 * pn_len)) - 1))) {
        st = QUICOFF_MALFORMED;
        goto fail;
    }

    unsigned kp = h.is_long ? 0 : (d[p->offset] >> 2) & 1;
    uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_acquire);
    const struct qo_keyslot *slot = &ks->phase[kp];
    r->key_phase = (uint8_t)kp;
    r->pn_len = (uint8_t)pn_len;
    r->pn_off = h.pn_off;
    r->pn = p->pn;
    /* The host chose the key phase in the header: current keys, or the next
     * generation, which starts a key update (§6.1). */
    bool next = slot->present && slot->gen == cur + 1;
    if (!slot->present || (slot->gen != cur && !next)) {
        st = QUICOFF_KEY_PHASE_UNAVAILABLE;
        goto fail;
    }
    uint64_t used = next ? 0 : QO_GET(c->key_packets[kp]);
    if (used >= ks->hard_limit) {
        st = QUICOFF_KEY_EXHAUSTED; /* confidentiality limit: never exceed it */
        goto fail;
    }

    uint32_t payload_off = h.pn_off + pn_len;
    uint32_t payload_len = p->len - payload_off;
    uint8_t nonce[QUICOFF_IV_LEN];
    build_nonce(nonce, ks, slot->iv, p->pn);
    if (ks->aead->seal(slot->aead_ctx, nonce, d + p->offset, payload_off - p->offset,
                       d + payload_off, payload_len, d + p->len) != 0) {
        st = QUICOFF_BACKEND_UNAVAILABLE;
        goto fail;
    }
    uint8_t mask[5];
    ks->hp->mask(ks->hp_ctx, d + h.pn_off + 4, mask);
    d[p->offset] ^= mask[0] & first_byte_mask(&h);
    for (unsigned i = 0; i < pn_len; i++)
        d[h.pn_off + i] ^= mask[1 + i];

    if (next) {
        atomic_store_explicit(&c->key_packets[kp], 0, memory_order_relaxed);
        atomic_store_explicit(&c->cur_gen, cur + 1, memory_order_release);
        QO_ADD(c->key_updates, 1);
        QO_ADD(w->c.key_updates, 1);
        r->flags |= QUICOFF_FLAG_KEY_UPDATED;
    }
    uint64_t largest = QO_GET(c->largest_pn);
    if (largest == UINT64_MAX || p->pn > largest)
        atomic_store_explicit(&c->largest_pn, p->pn, memory_order_relaxed);
    QO_ADD(c->packets, 1);
    QO_ADD(c->bytes, payload_len);
    QO_ADD(c->key_packets[kp], 1);
    QO_ADD(w->c.tx_packets, 1);
    QO_ADD(w->c.tx_bytes, payload_len);

    r->payload_off = payload_off;
    r->payload_len = payload_len;
    r->packet_end = end;
    if (used + 1 >= ks->threshold) {
        QO_ADD(w->c.usage_limit_reached, 1);
        r->status = QUICOFF_USAGE_LIMIT_REACHED;
    } else {
        r->status = QUICOFF_OK;
    }
    return;
fail:
    r->status = st;
    count_failure(w, c, st);
}

unsigned quicoff_unprotect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, unsigned n)
{
    unsigned ok = 0;
    qo_epoch_enter(&w->table->epoch, &w->announce);
    for (unsigned i = 0; i < n; i++) {
        unprotect_one(w, &pkts[i], &res[i]);
        ok += quicoff_status_ok(res[i].status);
    }
    qo_epoch_exit(&w->announce);
    return ok;
}

unsigned quicoff_protect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                               struct quicoff_result *res, unsigned n)
{
    unsigned ok = 0;
    qo_epoch_enter(&w->table->epoch, &w->announce);
    for (unsigned i = 0; i < n; i++) {
        protect_one(w, &pkts[i], &res[i]);
        ok += quicoff_status_ok(res[i].status);
    }
    qo_epoch_exit(&w->announce);
    return ok;
}

static bool all_zero(const uint8_t *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

unsigned quicoff_unprotect_datagram(struct quicoff_worker *w, uint8_t *data, uint32_t len,
                                    const struct quicoff_addr *local_addr,
                                    struct quicoff_result *res, unsigned max_results)
{
    unsigned n = 0;
    uint32_t off = 0;
    while (off < len && n < max_results) {
        /* Zero bytes after the last packet are padding (RFC 9000 §12.2). */
        if (n > 0 && all_zero(data + off, len - off))
            break;
        struct quicoff_pkt p = {.data = data, .len = len, .cap = len, .offset = off,
                                .local_addr = local_addr};
        quicoff_unprotect_burst(w, &p, &res[n], 1);
        uint32_t end = res[n].packet_end;
        n++;
        if (end <= off || end > len)
            break; /* extent unknown (malformed, unsupported): stop here */
        off = end;
    }
    return n;
}
