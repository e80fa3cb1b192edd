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

/* ------------------------------------------------------------ header protection */

/* One header-protection mask to compute: the whole chunk's are computed
 * together so a backend with mask_burst keeps several blocks in flight. */
struct hp_req {
    const qo_hp_algo_t *algo;
    void *ctx;
    const uint8_t *sample;
    uint8_t *mask;
};

#define QO_CHUNK 32

/* Groups the requests by algorithm (a chunk mixes suites) and hands each
 * group to mask_burst, or mask() one by one when the backend has none. */
static void compute_masks(struct hp_req *req, unsigned n)
{
    bool done[QO_CHUNK] = {false};
    void *ctx[QO_CHUNK];
    const uint8_t *samples[QO_CHUNK];
    uint8_t out[QO_CHUNK][5];
    unsigned idx[QO_CHUNK];
    for (unsigned i = 0; i < n; i++) {
        if (done[i])
            continue;
        const qo_hp_algo_t *a = req[i].algo;
        if (!a->mask_burst) {
            a->mask(req[i].ctx, req[i].sample, req[i].mask);
            done[i] = true;
            continue;
        }
        unsigned m = 0;
        for (unsigned j = i; j < n; j++) {
            if (!done[j] && req[j].algo == a) {
                ctx[m] = req[j].ctx;
                samples[m] = req[j].sample;
                idx[m++] = j;
                done[j] = true;
            }
        }
        a->mask_burst(ctx, samples, out, m);
        for (unsigned k = 0; k < m; k++)
            memcpy(req[idx[k]].mask, out[k], 5);
    }
}

/* ------------------------------------------------------------------ RX */

/* Per-packet state carried between the stages of one chunk. */
struct rx_state {
    struct qo_header h;
    struct qo_conn *c;
    struct qo_keyset *ks;
    const struct qo_keyslot *slot;
    uint32_t hash;
    quicoff_status_t st; /* QUICOFF_OK while the packet is still in flight */
    int choice;
    uint8_t saved_first;
    uint8_t mask[5];
    uint64_t largest;
    uint32_t cur;
};

/* Stage 1: parse the header, hash the lookup key, prefetch its index cell. */
static void rx_parse(const struct quicoff_table *t, struct quicoff_pkt *p,
                     struct quicoff_result *r, struct rx_state *s)
{
    result_init(r, p);
    s->c = NULL;
    s->st = qo_parse_header(p->data, p->len, p->offset, t->local_cid_len, &s->h);
    r->packet_end = s->h.end;
    r->level = s->h.level;
    r->flags = s->h.is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
    if (s->st != QUICOFF_OK)
        return;
    s->hash = qo_table_hash(t, s->h.level, p->data + s->h.dcid_off, s->h.dcid_len,
                            s->h.dcid_len ? NULL : p->local_addr);
    qo_table_prefetch(t, s->hash);
}

/* Stage 2: find the connection; prefetch what stage 3 reads. */
static void rx_lookup(const struct quicoff_table *t, struct quicoff_pkt *p,
                      struct quicoff_result *r, struct rx_state *s)
{
    if (s->st != QUICOFF_OK)
        return;
    s->c = qo_table_lookup_hashed(t, s->hash, s->h.level, p->data + s->h.dcid_off, s->h.dcid_len,
                                  s->h.dcid_len ? NULL : p->local_addr, &s->ks);
    if (!s->c) {
        s->st = QUICOFF_UNKNOWN_CONNECTION;
        return;
    }
    r->conn = qo_handle(s->c);
    __builtin_prefetch(s->ks->hp_ctx);
    __builtin_prefetch(&s->c->largest_pn);
}

/* Stage 3: usage limit and sample checks; queue the header-protection mask. */
static bool rx_check(struct quicoff_pkt *p, struct rx_state *s, struct hp_req *req)
{
    if (s->st != QUICOFF_OK)
        return false;
    const struct qo_header *h = &s->h;
    struct qo_keyset *ks = s->ks;
    if (QO_GET(s->c->auth_failures) >= ks->hard_limit) {
        s->st = QUICOFF_KEY_EXHAUSTED; /* integrity limit: the connection must close */
        return false;
    }
    /* The sample starts 4 bytes after the PN field (§5.4.2) and must fit
     * before the end of the packet. */
    if ((uint64_t)h->pn_off + 4 + QUICOFF_SAMPLE_LEN > h->end) {
        s->st = QUICOFF_MALFORMED;
        return false;
    }
    *req = (struct hp_req){ks->hp, ks->hp_ctx, p->data + h->pn_off + 4, s->mask};
    return true;
}

/* Stage 4: with the mask, PN decoding and key choice; the header is
 * unmasked in place (it is the AAD). */
static void rx_unmask(struct quicoff_pkt *p, struct quicoff_result *r, struct rx_state *s)
{
    if (s->st != QUICOFF_OK)
        return;
    uint8_t *d = p->data;
    const struct qo_header *h = &s->h;
    struct qo_keyset *ks = s->ks;
    uint8_t first = d[p->offset] ^ (s->mask[0] & first_byte_mask(h));
    unsigned pn_len = (first & 3) + 1;
    uint64_t truncated = 0;
    for (unsigned i = 0; i < pn_len; i++)
        truncated = (truncated << 8) | (uint8_t)(d[h->pn_off + i] ^ s->mask[1 + i]);
    s->largest = QO_GET(s->c->largest_pn);
    uint64_t pn = quicoff_pn_decode(s->largest, truncated, pn_len * 8);

    unsigned kp = h->is_long ? 0 : (first >> 2) & 1;
    s->cur = atomic_load_explicit(&s->c->cur_gen, memory_order_acquire);
    s->slot = &ks->phase[kp];
    s->choice = rx_key_choice(s->slot, s->cur, pn, QO_GET(s->c->gen_first_pn));
    r->key_phase = (uint8_t)kp;
    r->pn_len = (uint8_t)pn_len;
    r->pn_off = h->pn_off;
    r->pn = pn;
    if (s->choice == KEYS_NONE) {
        s->st = QUICOFF_KEY_PHASE_UNAVAILABLE;
        return;
    }
    s->saved_first = d[p->offset];
    d[p->offset] = first;
    for (unsigned i = 0; i < pn_len; i++)
        d[h->pn_off + i] ^= s->mask[1 + i];
    __builtin_prefetch(s->slot->aead_ctx);
}

/* Stage 5: AEAD open, then the packet's outcome: key phase change, largest
 * PN, counters, status. */
static void rx_open(struct quicoff_worker *w, struct quicoff_pkt *p, struct quicoff_result *r,
                    struct rx_state *s)
{
    if (s->st != QUICOFF_OK) {
        r->status = s->st;
        count_failure(w, s->c, s->st);
        return;
    }
    uint8_t *d = p->data;
    const struct qo_header *h = &s->h;
    struct qo_keyset *ks = s->ks;
    struct qo_conn *c = s->c;
    unsigned pn_len = r->pn_len, kp = r->key_phase;
    uint64_t pn = r->pn;
    uint32_t payload_off = h->pn_off + pn_len;
    uint32_t payload_len = h->end - QUICOFF_TAG_LEN - payload_off;
    uint8_t nonce[QUICOFF_IV_LEN];
    build_nonce(nonce, ks, s->slot->iv, pn);
    if (ks->aead->open(s->slot->aead_ctx, nonce, d + p->offset, payload_off - p->offset,
                       d + payload_off, payload_len, d + h->end - QUICOFF_TAG_LEN,
                       w->scratch) != 0) {
        /* Put the header back as received; the backend left the payload. */
        d[p->offset] = s->saved_first;
        for (unsigned i = 0; i < pn_len; i++)
            d[h->pn_off + i] ^= s->mask[1 + i];
        if (ks->fail_action == QUICOFF_FAIL_PASS)
            r->flags |= QUICOFF_FLAG_PASS_FAILED;
        r->status = QUICOFF_AUTH_FAILED;
        count_failure(w, c, QUICOFF_AUTH_FAILED);
        return;
    }
    if (s->choice == KEYS_NEXT &&
        atomic_load_explicit(&c->cur_gen, memory_order_relaxed) == s->cur + 1) {
        /* An earlier packet of this chunk already moved to these keys. */
        if (pn < QO_GET(c->gen_first_pn))
            atomic_store_explicit(&c->gen_first_pn, pn, memory_order_relaxed);
    } else if (s->choice == KEYS_NEXT) {
        /* The peer moved to the next key phase (§6.2). */
        atomic_store_explicit(&c->gen_first_pn, pn, memory_order_relaxed);
        atomic_store_explicit(&c->cur_gen, s->cur + 1, memory_order_release);
        QO_ADD(c->key_updates, 1);
        QO_ADD(w->c.key_updates, 1);
        r->flags |= QUICOFF_FLAG_KEY_UPDATED;
    } else if (s->choice == KEYS_OLD) {
        r->flags |= QUICOFF_FLAG_OLD_KEYS;
    }
    /* Re-read: an earlier packet of this burst may have raised it. */
    uint64_t largest = QO_GET(c->largest_pn);
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
}

/*
 * Packets of one chunk go through each stage before the next stage starts,
 * so the cache misses of one stage (index cell, slot, keyset, contexts)
 * overlap across packets instead of adding up. Two packets of the same
 * connection in one chunk: the later one's PN decoding and key choice see
 * the state before the earlier one was opened, as a pipelined NIC would;
 * the largest PN and key phase are still advanced in packet order.
 */
static void unprotect_chunk(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                            struct quicoff_result *res, unsigned n)
{
    const struct quicoff_table *t = w->table;
    struct rx_state s[QO_CHUNK];
    for (unsigned i = 0; i < n; i++)
        rx_parse(t, &pkts[i], &res[i], &s[i]);
    for (unsigned i = 0; i < n; i++)
        rx_lookup(t, &pkts[i], &res[i], &s[i]);
    struct hp_req req[QO_CHUNK];
    unsigned nreq = 0;
    for (unsigned i = 0; i < n; i++)
        nreq += rx_check(&pkts[i], &s[i], &req[nreq]);
    compute_masks(req, nreq);
    for (unsigned i = 0; i < n; i++)
        rx_unmask(&pkts[i], &res[i], &s[i]);
    for (unsigned i = 0; i < n; i++)
        rx_open(w, &pkts[i], &res[i], &s[i]);
}

/* ------------------------------------------------------------------ TX */

struct tx_state {
    struct qo_header h;
    struct qo_conn *c;
    struct qo_keyset *ks;
    const struct qo_keyslot *slot;
    quicoff_status_t st;
    bool next;      /* this packet starts a key update */
    uint64_t used;  /* packets already protected with this key */
    uint8_t mask[5];
};

/* Stage 1: resolve the handle; prefetch the keyset and slot state. */
static void tx_resolve(const struct quicoff_table *t, struct quicoff_pkt *p,
                       struct quicoff_result *r, struct tx_state *s)
{
    result_init(r, p);
    r->conn = p->conn;
    s->c = NULL;
    s->ks = NULL;
    s->st = QUICOFF_OK;
    uint32_t slot_index = (uint32_t)p->conn;
    if (slot_index < t->capacity) {
        struct qo_conn *c = &t->conns[slot_index];
        struct qo_keyset *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
        if (ks && ks->direction == QUICOFF_DIR_TX &&
            atomic_load_explicit(&c->handle_gen, memory_order_relaxed) == (uint32_t)(p->conn >> 32)) {
            s->c = c;
            s->ks = ks;
            __builtin_prefetch(ks);
            __builtin_prefetch(&c->cur_gen);
            return;
        }
    }
    s->st = QUICOFF_UNKNOWN_CONNECTION;
}

/* Stage 2: check the header the host gave, choose the key, AEAD seal. */
static void tx_seal(struct quicoff_pkt *p, struct quicoff_result *r, struct tx_state *s)
{
    if (s->st != QUICOFF_OK)
        return;
    uint8_t *d = p->data;
    struct qo_keyset *ks = s->ks;
    struct qo_header *h = &s->h;
    if (p->offset >= p->len || p->len > p->cap || p->cap - p->len < QUICOFF_TAG_LEN) {
        s->st = p->offset >= p->len ? QUICOFF_MALFORMED : QUICOFF_NO_SPACE;
        return;
    }
    uint32_t end = p->len + QUICOFF_TAG_LEN;
    s->st = qo_parse_header(d, end, p->offset, ks->dcid_len, h);
    r->level = h->level;
    r->flags = h->is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
    if (s->st != QUICOFF_OK)
        return;
    unsigned pn_len = (d[p->offset] & 3) + 1;
    /* A long header's Length must already count PN, payload and tag; the
     * packet must be long enough for the header-protection sample (the host
     * pads, §5.4.2); the header's PN bytes must encode pn. */
    if (h->level != ks->level || h->end != end || (uint64_t)h->pn_off + pn_len > p->len ||
        (uint64_t)h->pn_off + 4 + QUICOFF_SAMPLE_LEN > end || p->pn > PN_MAX) {
        s->st = QUICOFF_MALFORMED;
        return;
    }
    uint64_t encoded = 0;
    for (unsigned i = 0; i < pn_len; i++)
        encoded = (encoded << 8) | d[h->pn_off + i];
    if (encoded != (p->pn & ((UINT64_C(1) << (8 * pn_len)) - 1))) {
        s->st = QUICOFF_MALFORMED;
        return;
    }
    unsigned kp = h->is_long ? 0 : (d[p->offset] >> 2) & 1;
    uint32_t cur = atomic_load_explicit(&s->c->cur_gen, memory_order_acquire);
    const struct qo_keyslot *slot = &ks->phase[kp];
    r->key_phase = (uint8_t)kp;
    r->pn_len = (uint8_t)pn_len;
    r->pn_off = h->pn_off;
    r->pn = p->pn;
    /* The host chose the key phase in the header: current keys, or the next
     * generation, which starts a key update (§6.1). */
    s->next = slot->present && slot->gen == cur + 1;
    if (!slot->present || (slot->gen != cur && !s->next)) {
        s->st = QUICOFF_KEY_PHASE_UNAVAILABLE;
        return;
    }
    s->used = s->next ? 0 : QO_GET(s->c->key_packets[kp]);
    if (s->used >= ks->hard_limit) {
        s->st = QUICOFF_KEY_EXHAUSTED; /* confidentiality limit: never exceed it */
        return;
    }
    /* Count it now: a later packet of this chunk with the same key sees it. */
    if (s->next) {
        atomic_store_explicit(&s->c->key_packets[kp], 0, memory_order_relaxed);
        atomic_store_explicit(&s->c->cur_gen, cur + 1, memory_order_release);
    }
    QO_ADD(s->c->key_packets[kp], 1);
    s->slot = slot;
    uint32_t payload_off = h->pn_off + pn_len;
    uint8_t nonce[QUICOFF_IV_LEN];
    build_nonce(nonce, ks, slot->iv, p->pn);
    if (ks->aead->seal(slot->aead_ctx, nonce, d + p->offset, payload_off - p->offset,
                       d + payload_off, p->len - payload_off, d + p->len) != 0)
        s->st = QUICOFF_BACKEND_UNAVAILABLE;
}

/* Stage 3: header protection (mask from the ciphertext sample, computed for
 * the whole chunk before), then the outcome. */
static void tx_finish(struct quicoff_worker *w, struct quicoff_pkt *p, struct quicoff_result *r,
                      struct tx_state *s)
{
    if (s->st != QUICOFF_OK) {
        r->status = s->st;
        count_failure(w, s->c, s->st);
        return;
    }
    uint8_t *d = p->data;
    struct qo_keyset *ks = s->ks;
    struct qo_conn *c = s->c;
    const struct qo_header *h = &s->h;
    unsigned pn_len = r->pn_len;
    const uint8_t *mask = s->mask;
    d[p->offset] ^= mask[0] & first_byte_mask(h);
    for (unsigned i = 0; i < pn_len; i++)
        d[h->pn_off + i] ^= mask[1 + i];

    uint32_t payload_off = h->pn_off + pn_len;
    uint32_t payload_len = p->len - payload_off;
    if (s->next) {
        QO_ADD(c->key_updates, 1);
        QO_ADD(w->c.key_updates, 1);
        r->flags |= QUICOFF_FLAG_KEY_UPDATED;
    }
    uint64_t largest = QO_GET(c->largest_pn);
    if (largest == UINT64_MAX || p->pn > largest)
        atomic_store_explicit(&c->largest_pn, p->pn, memory_order_relaxed);
    QO_ADD(c->packets, 1);
    QO_ADD(c->bytes, payload_len);
    QO_ADD(w->c.tx_packets, 1);
    QO_ADD(w->c.tx_bytes, payload_len);
    r->payload_off = payload_off;
    r->payload_len = payload_len;
    r->packet_end = p->len + QUICOFF_TAG_LEN;
    if (s->used + 1 >= ks->threshold) {
        QO_ADD(w->c.usage_limit_reached, 1);
        r->status = QUICOFF_USAGE_LIMIT_REACHED;
    } else {
        r->status = QUICOFF_OK;
    }
}

static void protect_chunk(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                          struct quicoff_result *res, unsigned n)
{
    const struct quicoff_table *t = w->table;
    struct tx_state s[QO_CHUNK];
    for (unsigned i = 0; i < n; i++)
        tx_resolve(t, &pkts[i], &res[i], &s[i]);
    for (unsigned i = 0; i < n; i++)
        tx_seal(&pkts[i], &res[i], &s[i]);
    struct hp_req req[QO_CHUNK];
    unsigned nreq = 0;
    for (unsigned i = 0; i < n; i++)
        if (s[i].st == QUICOFF_OK)
            req[nreq++] = (struct hp_req){s[i].ks->hp, s[i].ks->hp_ctx,
                                          pkts[i].data + s[i].h.pn_off + 4, s[i].mask};
    compute_masks(req, nreq);
    for (unsigned i = 0; i < n; i++)
        tx_finish(w, &pkts[i], &res[i], &s[i]);
}

/* ------------------------------------------------------------------ bursts */

static unsigned count_ok(const struct quicoff_result *res, unsigned n)
{
    unsigned ok = 0;
    for (unsigned i = 0; i < n; i++)
        ok += quicoff_status_ok(res[i].status);
    return ok;
}

unsigned quicoff_unprotect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, unsigned n)
{
    qo_epoch_enter(&w->table->epoch, &w->announce);
    for (unsigned i = 0; i < n; i += QO_CHUNK)
        unprotect_chunk(w, pkts + i, res + i, n - i < QO_CHUNK ? n - i : QO_CHUNK);
    qo_epoch_exit(&w->announce);
    return count_ok(res, n);
}

unsigned quicoff_protect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                               struct quicoff_result *res, unsigned n)
{
    qo_epoch_enter(&w->table->epoch, &w->announce);
    for (unsigned i = 0; i < n; i += QO_CHUNK)
        protect_chunk(w, pkts + i, res + i, n - i < QO_CHUNK ? n - i : QO_CHUNK);
    qo_epoch_exit(&w->announce);
    return count_ok(res, n);
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
