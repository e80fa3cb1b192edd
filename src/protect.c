/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data path: protect and unprotect bursts of QUIC packets in place
 * (RFC 9001 §5: AEAD payload protection, header protection, nonce; §6: key
 * phases; §6.6: usage limits). Nothing here allocates, locks, logs or aborts:
 * every outcome is a status in the packet's result and a counter.
 */
#include "index.h"
#include "parse.h"
#include "pn.h"
#include "qo_bytes.h"
#include "table.h"

#include <stddef.h>
#include <string.h>

/* The stages shared by the burst calls and the split (prepare / complete)
 * calls: forced inline, so each burst function compiles to the code it had
 * when it was their only caller. */
#define QO_STAGE static inline __attribute__((always_inline))

/* nonce = IV ^ (path part in bytes 0..3 | packet number, 64-bit big-endian, in 4..11) */
static inline void build_nonce(uint8_t nonce[QUICOFF_IV_LEN], const struct qo_keyset *ks,
                               const uint8_t iv[QUICOFF_IV_LEN], uint64_t pn)
{
    uint32_t path = ks->path_id, head = 0; /* bytes 0..3, big-endian */
    if (ks->nonce_layout == QUICOFF_NONCE_MULTIPATH)
        head = path;
    else if (ks->nonce_layout == QUICOFF_NONCE_MULTIPATH_PATH_ID_LE)
        /* htonl() then shifted out high byte first on a little-endian CPU:
         * the path ID lands byte-reversed */
        head = __builtin_bswap32(path);
    qo_store_be32(nonce, qo_load_be32(iv) ^ head);
    qo_store_be64(nonce + 4, qo_load_be64(iv + 4) ^ pn);
}

/*
 * Header protection of the PN field (RFC 9001 §5.4.1): mask bytes 1..pn_len
 * over the field's bytes, as one XOR of big-endian words.  The 4 bytes at
 * the PN offset are inside the packet: the sample, 4 bytes further, was
 * checked to fit.  pn_mask: the word covering the field's pn_len bytes.
 */
static inline uint32_t pn_mask(const uint8_t mask[5], unsigned pn_len)
{
    return qo_load_be32(mask + 1) & (UINT32_C(0xffffffff) << (8 * (4 - pn_len)));
}

static inline void xor_pn_field(uint8_t *field, uint32_t m)
{
    qo_store_be32(field, qo_load_be32(field) ^ m);
}

static inline uint8_t first_byte_mask(const struct qo_header *h)
{
    return h->is_long ? 0x0f : 0x1f; /* RFC 9001 §5.4.1 */
}

static inline void result_init(struct quicoff_result *r, const struct quicoff_pkt *p)
{
    memset(r, 0, sizeof(*r));
    r->hdr_off = p->offset;
    r->packet_end = p->end;
    r->conn = QUICOFF_CONN_INVALID;
}

/* A chunk's authentic packets and payload bytes: added to the worker's
 * counters once per chunk, not as a load-add-store per packet.  The same for
 * a connection's counters and largest PN, once per run of consecutive
 * packets of that connection (a burst is mostly trains of one flow): run is
 * the connection of the run under way (NULL: none), the run_* its sums. */
struct tally {
    uint64_t packets, bytes;
    struct qo_slot *run;
    uint64_t run_packets, run_bytes, run_key_packets[2], run_largest;
};

#define TALLY_INIT                  \
    {                               \
        0, 0, NULL, 0, 0, {0, 0}, 0 \
    }

/* Writes the run's sums into its connection: what each packet used to add
 * (packets, bytes, RX packets per key phase slot) and its largest PN.  Only
 * called inside the burst's epoch section, like the per-packet writes it
 * replaces, so quicoff_conn_replace() still waits for it (design.md). */
static inline void tally_flush_run(struct tally *t)
{
    struct qo_slot *c = t->run;
    if (!c)
        return;
    QO_ADD(c->packets, t->run_packets);
    QO_ADD(c->bytes, t->run_bytes);
    if (t->run_key_packets[0])
        QO_ADD(c->key_packets[0], t->run_key_packets[0]);
    if (t->run_key_packets[1])
        QO_ADD(c->key_packets[1], t->run_key_packets[1]);
    uint64_t largest = QO_GET(c->largest_pn);
    if (largest == UINT64_MAX || t->run_largest > largest)
        atomic_store_explicit(&c->largest_pn, t->run_largest, memory_order_relaxed);
    t->run = NULL;
}

/* One authentic packet of connection c (NULL: its state is not the packet's
 * to write, state_of) with packet number pn; kp: its key phase slot, counted
 * in key_packets (RX), or -1 (TX counts those when it chooses the key). */
static inline void tally_packet(struct tally *t, struct qo_slot *c, uint64_t pn,
                                uint64_t payload_len, int kp)
{
    t->packets++;
    t->bytes += payload_len;
    if (!c)
        return;
    if (c != t->run) {
        tally_flush_run(t);
        t->run = c;
        t->run_packets = t->run_bytes = 0;
        t->run_key_packets[0] = t->run_key_packets[1] = 0;
        t->run_largest = pn;
    }
    t->run_packets++;
    t->run_bytes += payload_len;
    if (kp >= 0)
        t->run_key_packets[kp]++;
    if (pn > t->run_largest)
        t->run_largest = pn;
}

/* The connection whose state (largest PN, key generation, counters) a packet
 * may write: c, unless quicoff_conn_replace() has restarted that state for
 * another entry since this burst found ks in the slot (c->state_gen moved on;
 * an update's keyset keeps its state_gen). A packet the replace overtook,
 * opened or sealed with the keys it found, is still delivered, but must not
 * start the new entry with the old connection's largest PN, key generation
 * or counters (its short PNs would decode against the old PN space and fail,
 * its keys be out of phase). NULL: counted on the worker only. Checked right
 * before the writes (docs/design.md, "Replacing an entry"). */
static inline struct qo_slot *state_of(struct qo_slot *c, const struct qo_keyset *ks)
{
    return c && atomic_load_explicit(&c->state_gen, memory_order_acquire) == ks->state_gen ? c
                                                                                           : NULL;
}

/* Counts a failed outcome in the worker (and connection, if known). */
static void count_failure(struct quicoff_worker *w, struct qo_slot *c, quicoff_status_t st)
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
                         const struct qo_slot *c)
{
    if (!s->present)
        return KEYS_NONE;
    if (s->gen == cur)
        return KEYS_CURRENT;
    /* only now gen_first_pn: it is off the slot's hot lines (table.h) */
    if (s->gen == cur + 1)
        return pn >= QO_GET(c->gen_first_pn) ? KEYS_NEXT : KEYS_NONE;
    if (s->gen + 1 == cur)
        return pn < QO_GET(c->gen_first_pn) ? KEYS_OLD : KEYS_NONE;
    return KEYS_NONE;
}

/* ------------------------------------------------------------ prefetching */

/*
 * With many active connections every packet's entry is a cache miss, and
 * each level of it is found through the one before: index cell -> slot ->
 * keyset -> key schedules.  A packet alone waits for four DRAM round trips
 * in a row.  The burst instead asks for one level for ALL its packets
 * before it reads that level for any (one stage per level), so the misses
 * of a level overlap (memory-level parallelism) and the chunk pays about
 * four round trips, not four per packet.  Each stage reads only what the
 * stage before prefetched.
 */

/* The bytes of a slot the data path reads (table.h orders the hot members
 * first). */
#define SLOT_HOT_LEN (offsetof(struct qo_slot, key_packets) + 2 * sizeof(uint64_t))

/* The lines of a keyset a packet of key phase slot kp reads (table.h): lines
 * 0-1, and where the chunk's key schedules are computed from the raw keys
 * (qo_key_scratch), that slot's key line. */
static inline void prefetch_keyset(const struct qo_keyset *ks, unsigned kp, bool computed)
{
    qo_prefetch_range(ks, offsetof(struct qo_keyset, keys));
    if (computed)
        qo_prefetch_far(&ks->keys[kp & 1]);
}
/* A context's lines, at most this many bytes of them (ipsec-mb's 1 KiB GCM
 * context holds GHASH powers a short packet never reads). */
#define CTX_PREFETCH_MAX 1024

static inline void prefetch_ctx(const void *ctx, size_t size)
{
    qo_prefetch_range(ctx, size < CTX_PREFETCH_MAX ? size : CTX_PREFETCH_MAX);
}

/* The key schedules a packet of ks will use: header protection, and the
 * AEAD context of key phase slot kp (or, kp < 0, of the current generation
 * cur: RX knows the phase bit only after removing header protection). */
static inline void prefetch_keys(const struct qo_keyset *ks, int kp, uint32_t cur)
{
    prefetch_ctx(qo_keyset_hp_ctx(ks), ks->hp->ctx_size);
    for (int p = 0; p < 2; p++)
        if (p == kp || (kp < 0 && ks->phase[p].present && ks->phase[p].gen == cur))
            prefetch_ctx(qo_keyset_aead_ctx(ks, (unsigned)p), ks->aead->ctx_size);
}

/* ------------------------------------------------------------ header protection */

#define QO_CHUNK 32

/*
 * The header-protection masks of one chunk, computed together so a backend
 * with mask_burst keeps several blocks in flight.  Arrays, not one struct
 * per request: when the chunk has one algorithm (the usual case) they are
 * mask_burst's arguments as they stand.
 */
struct hp_batch {
    const qo_hp_algo_t *algo[QO_CHUNK];
    void *ctx[QO_CHUNK];
    const uint8_t *sample[QO_CHUNK];
    const uint8_t *key[QO_CHUNK]; /* the raw key, for key_schedules_hp */
    uint8_t *dest[QO_CHUNK];      /* where mask k goes (5 bytes in the packet's state) */
    uint8_t out[QO_CHUNK][5];
    unsigned n;
};

/* kp: whose key line's copy of the HP key to read (table.h), the line the
 * packet reads anyway where the key schedules are computed. */
static void hp_queue(struct hp_batch *b, const struct qo_keyset *ks, unsigned kp,
                     const uint8_t *sample, uint8_t *dest)
{
    unsigned k = b->n++;
    b->algo[k] = ks->hp;
    b->ctx[k] = qo_keyset_hp_ctx(ks);
    b->key[k] = ks->keys[kp & 1].hp_key;
    b->sample[k] = sample;
    b->dest[k] = dest;
}

/* Mask k of algorithm a (and its equals after it, when a has mask_burst)
 * into b->out; marks what it did. */
static void hp_run_group(struct hp_batch *b, unsigned k, bool done[])
{
    const qo_hp_algo_t *a = b->algo[k];
    if (!a->mask_burst) {
        a->mask(b->ctx[k], b->sample[k], b->out[k]);
        done[k] = true;
        return;
    }
    void *ctx[QO_CHUNK] = {b->ctx[k]};
    const uint8_t *sample[QO_CHUNK] = {b->sample[k]};
    uint8_t out[QO_CHUNK][5];
    unsigned idx[QO_CHUNK] = {k}, m = 1;
    done[k] = true;
    for (unsigned j = k + 1; j < b->n; j++) {
        if (!done[j] && b->algo[j] == a) {
            ctx[m] = b->ctx[j];
            sample[m] = b->sample[j];
            idx[m++] = j;
            done[j] = true;
        }
    }
    a->mask_burst(ctx, sample, out, m);
    for (unsigned i = 0; i < m; i++)
        qo_hp_mask_copy(b->out[idx[i]], out[i]);
}

static void compute_masks(struct hp_batch *b)
{
    unsigned n = b->n, same = 1;
    if (n == 0)
        return;
    while (same < n && b->algo[same] == b->algo[0])
        same++;
    if (same == n && b->algo[0]->mask_burst) {
        b->algo[0]->mask_burst(b->ctx, b->sample, b->out, n);
    } else { /* several algorithms (a chunk mixes suites): one group each */
        bool done[QO_CHUNK] = {false};
        for (unsigned k = 0; k < n; k++)
            if (!done[k])
                hp_run_group(b, k, done);
    }
    for (unsigned k = 0; k < n; k++)
        qo_hp_mask_copy(b->dest[k], b->out[k]);
}

/* ------------------------------------------------------------------ AEAD */

/*
 * The AEAD operations of one chunk, queued by the packets that passed every
 * check and run together: an algorithm with seal_burst/open_burst gets all
 * of the chunk's packets in one call, so the backend keeps several packets
 * in flight (a short packet's AES -> GHASH -> tag chain is mostly latency);
 * others get one call per packet.  Results go back to the packets before
 * their outcome stage, which runs in packet order as before.
 */
struct aead_batch {
    qo_aead_op_t op[QO_CHUNK];
    const qo_aead_algo_t *algo[QO_CHUNK];
    const uint8_t *key[QO_CHUNK]; /* op[k]'s raw key, for key_schedules_aead */
    uint8_t pkt[QO_CHUNK];        /* the packet (index in the chunk) of op[k] */
    int result[QO_CHUNK];         /* seal()/open()'s return value for op[k] */
    unsigned n;
};

static qo_aead_op_t *aead_queue(struct aead_batch *b, const qo_aead_algo_t *algo,
                                const uint8_t *key, unsigned pkt)
{
    unsigned k = b->n++;
    b->algo[k] = algo;
    b->key[k] = key;
    b->pkt[k] = (uint8_t)pkt;
    return &b->op[k];
}

/* n operations of one algorithm: one burst call, or one call each. */
static void aead_run_group(const qo_aead_algo_t *a, bool seal, const qo_aead_op_t *op, unsigned n,
                           int *result, uint8_t *scratch, void *wstate)
{
    if (seal && a->seal_burst) {
        a->seal_burst(wstate, op, n, result);
    } else if (!seal && a->open_burst) {
        a->open_burst(wstate, op, n, result);
    } else {
        for (unsigned k = 0; k < n; k++)
            result[k] = seal ? a->seal(op[k].ctx, op[k].nonce, op[k].aad, op[k].aad_len,
                                       op[k].data, op[k].len, op[k].tag)
                             : a->open(op[k].ctx, op[k].nonce, op[k].aad, op[k].aad_len,
                                       op[k].data, op[k].len, op[k].tag, scratch);
    }
}

/* scratch, wstate: the worker's (quicoff_worker.scratch, .backend_state) */
static void aead_run(struct aead_batch *b, bool seal, uint8_t *scratch, void *wstate)
{
    unsigned n = b->n, same = 1;
    while (same < n && b->algo[same] == b->algo[0])
        same++;
    if (same >= n) { /* one algorithm: the usual case, nothing to regroup */
        if (n)
            aead_run_group(b->algo[0], seal, b->op, n, b->result, scratch, wstate);
        return;
    }
    /* Several: each algorithm's operations copied together, in chunk order. */
    bool done[QO_CHUNK] = {false};
    qo_aead_op_t op[QO_CHUNK];
    int result[QO_CHUNK];
    unsigned idx[QO_CHUNK];
    for (unsigned i = 0; i < n; i++) {
        if (done[i])
            continue;
        const qo_aead_algo_t *a = b->algo[i];
        unsigned m = 0;
        for (unsigned j = i; j < n; j++) {
            if (!done[j] && b->algo[j] == a) {
                op[m] = b->op[j];
                idx[m++] = j;
                done[j] = true;
            }
        }
        aead_run_group(a, seal, op, m, result, scratch, wstate);
        for (unsigned k = 0; k < m; k++)
            b->result[idx[k]] = result[k];
    }
}

/* ------------------------------------------------- key schedules per burst */

/*
 * A table that outgrows the cache reads ~10 lines of key schedules per
 * packet (3 of header-protection round keys, ~7 of the GCM context) where
 * the raw keys are 2: with the worker's qo_key_scratch, a chunk's keysets
 * whose algorithms can expand have only their raw keys prefetched (with
 * the keyset's hot lines, prefetch_keyset), and the chunk's schedules are computed
 * from them into the scratch, once per distinct key, several keys per
 * vector (gcm_vaes.c); the operations then point at the scratch.  Measured:
 * docs/benchmarks.md, "Key schedules computed per burst".
 */

_Static_assert(QO_CHUNK <= QO_KEY_SCRATCH_KEYS, "a scratch context for every packet of a chunk");

/* Both of ks's algorithms can expand: its schedules are computed. */
static inline bool computes_keys(const struct qo_keyset *ks)
{
    return ks->aead->expand && ks->hp->expand;
}

/* Which scratch context a key went to in this chunk: a direct-mapped table
 * on the key's address, so that a key used by several packets is expanded
 * once at O(1) per packet (a collision only expands a key twice). */
#define DEDUP_SLOTS 64
struct dedup {
    const uint8_t *key[DEDUP_SLOTS];
    uint8_t idx[DEDUP_SLOTS];
};

static inline unsigned dedup_slot(const uint8_t *key)
{
    return (unsigned)(((uintptr_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> 58);
}

/* A chunk's distinct keys (of one or several algorithms), the scratch
 * context each goes to, and the longest operation they must serve. */
struct expand_list {
    void *ctx[QO_CHUNK];
    const uint8_t *key[QO_CHUNK];
    const void *algo[QO_CHUNK];
    size_t aad_len, len; /* the longest operation's */
    unsigned n;
};

/* Index in l of key (of algo), adding it with scratch context ctx[l->n]. */
static inline unsigned expand_add(struct expand_list *l, struct dedup *d, const uint8_t *key,
                                  const void *algo, void *const scratch[])
{
    unsigned h = dedup_slot(key);
    if (d->key[h] == key && l->algo[d->idx[h]] == algo)
        return d->idx[h];
    unsigned j = l->n++;
    l->ctx[j] = scratch[j];
    l->key[j] = key;
    l->algo[j] = algo;
    d->key[h] = key;
    d->idx[h] = (uint8_t)j;
    return j;
}

/* Runs expand per algorithm (a chunk mixing suites has several). */
static void expand_run(struct expand_list *l, bool aead)
{
    unsigned n = l->n, same = 1;
    while (same < n && l->algo[same] == l->algo[0])
        same++;
    if (same >= n) {
        if (n && aead)
            ((const qo_aead_algo_t *)l->algo[0])->expand(l->ctx, l->key, n, l->aad_len, l->len);
        else if (n)
            ((const qo_hp_algo_t *)l->algo[0])->expand(l->ctx, l->key, n);
        return;
    }
    bool done[QO_CHUNK] = {false};
    for (unsigned i = 0; i < n; i++) {
        if (done[i])
            continue;
        void *ctx[QO_CHUNK];
        const uint8_t *key[QO_CHUNK];
        unsigned m = 0;
        for (unsigned j = i; j < n; j++) {
            if (!done[j] && l->algo[j] == l->algo[i]) {
                ctx[m] = l->ctx[j];
                key[m++] = l->key[j];
                done[j] = true;
            }
        }
        if (aead)
            ((const qo_aead_algo_t *)l->algo[i])->expand(ctx, key, m, l->aad_len, l->len);
        else
            ((const qo_hp_algo_t *)l->algo[i])->expand(ctx, key, m);
    }
}

/* The header-protection contexts of b's masks whose algorithm expands,
 * computed into the scratch. */
static void key_schedules_hp(struct hp_batch *b, struct qo_key_scratch *x)
{
    struct expand_list l;
    struct dedup d;
    l.n = 0;
    memset(d.key, 0, sizeof(d.key));
    for (unsigned k = 0; k < b->n; k++)
        if (b->algo[k]->expand)
            b->ctx[k] = x->hp[expand_add(&l, &d, b->key[k], b->algo[k], x->hp)];
    expand_run(&l, false);
}

/* The same for the AEAD operations: contexts good for the longest one. */
static void key_schedules_aead(struct aead_batch *b, struct qo_key_scratch *x)
{
    struct expand_list l;
    struct dedup d;
    l.n = 0;
    l.aad_len = l.len = 0;
    memset(d.key, 0, sizeof(d.key));
    for (unsigned k = 0; k < b->n; k++) {
        if (!b->algo[k]->expand)
            continue;
        b->op[k].ctx = x->aead[expand_add(&l, &d, b->key[k], b->algo[k], x->aead)];
        l.aad_len = b->op[k].aad_len > l.aad_len ? b->op[k].aad_len : l.aad_len;
        l.len = b->op[k].len > l.len ? b->op[k].len : l.len;
    }
    expand_run(&l, true);
}

/* ------------------------------------------------------------------ RX */

/* Per-packet state carried between the stages of one chunk. */
struct rx_state {
    struct qo_header h;
    struct qo_slot *c;
    struct qo_keyset *ks;
    const struct qo_keyslot *slot;
    uint32_t hash;
    quicoff_status_t st; /* QUICOFF_OK while the packet is still in flight */
    int choice;
    uint8_t saved_first;
    uint8_t mask[5];
    uint8_t kp; /* slot's index in ks->phase */
    uint64_t largest;
    uint32_t cur;
    int opened; /* the AEAD open's result: 0 authentic, -1 not, OPEN_ENGINE_FAILED */
};

/* Split API only: the caller's engine did not run the open (no verdict on
 * the tag). The burst's backends return 0 or -1. */
#define OPEN_ENGINE_FAILED (-2)

/*
 * The lookup key's hash and the index probe with the DCID length a constant
 * for the lengths endpoints issue most (8: quicly, picoquic, aioquic, msquic;
 * 18: ngtcp2's examples; 20: quiche, and the FPGA prototype's 88-byte
 * benchmark packet): a short header's DCID has the table's local_cid_len,
 * so every 1-RTT packet of a table takes one case, and in it the hash is
 * straight-line code and the DCID compare a few word compares.  Other
 * lengths, and the zero-length CID's address key, take the general code.
 */
#define QO_CID_LEN_CASES(X) X(8) X(18) X(20)

QO_STAGE uint32_t rx_hash(const struct quicoff_table *t, const struct qo_header *h,
                          const struct quicoff_pkt *p)
{
    const uint8_t *dcid = p->data + h->dcid_off;
    switch (h->dcid_len) {
#define QO_HASH_CASE(n) \
    case n:             \
        return qo_hash_key(t, h->level, dcid, n, NULL);
        QO_CID_LEN_CASES(QO_HASH_CASE)
#undef QO_HASH_CASE
    default:
        return qo_hash_key(t, h->level, dcid, h->dcid_len, h->dcid_len ? NULL : p->local_addr);
    }
}

QO_STAGE struct qo_slot *rx_probe(const struct quicoff_table *t, struct rx_state *s,
                                  const struct quicoff_pkt *p)
{
    const struct qo_header *h = &s->h;
    const uint8_t *dcid = p->data + h->dcid_off;
    switch (h->dcid_len) {
#define QO_PROBE_CASE(n) \
    case n:              \
        return qo_index_probe(t, s->hash, h->level, dcid, n, NULL, &s->ks);
        QO_CID_LEN_CASES(QO_PROBE_CASE)
#undef QO_PROBE_CASE
    default:
        return qo_index_probe(t, s->hash, h->level, dcid, h->dcid_len,
                              h->dcid_len ? NULL : p->local_addr, &s->ks);
    }
}

/* Stage 1: parse the header, hash the lookup key, prefetch its index cell. */
QO_STAGE void rx_parse(const struct quicoff_table *t, struct quicoff_pkt *p,
                       struct quicoff_result *r, struct rx_state *s)
{
    result_init(r, p);
    s->c = NULL;
    s->hash = 0; /* a packet that fails to parse has none; rx_front still folds it in */
    s->st = qo_parse_any(p->data, p->end, p->offset, t->local_cid_len, &s->h);
    r->packet_end = s->h.end;
    r->dcid_off = s->h.dcid_off; /* 0/0 unless the DCID is inside the buffer */
    r->dcid_len = s->h.dcid_len;
    r->level = s->h.level;
    r->flags = s->h.is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
    if (s->st != QUICOFF_OK)
        return;
    s->hash = rx_hash(t, &s->h, p);
    qo_table_prefetch(t, s->hash);
}

/* Stage 1b: the index cell is (being) fetched: prefetch the slot it names.
 * prev_hash: the packet before's (0: none); a train of packets of one
 * connection asks once, so one hot connection pays almost nothing. */
QO_STAGE void rx_prefetch_slot(const struct quicoff_table *t, const struct rx_state *s,
                               uint32_t prev_hash)
{
    if (s->st != QUICOFF_OK || s->hash == prev_hash)
        return;
    struct qo_slot *c = qo_table_first_slot(t, s->hash);
    if (c)
        qo_prefetch_range(c, SLOT_HOT_LEN);
}

/* Stage 1c: the slot is (being) fetched: prefetch its keyset. */
QO_STAGE void rx_prefetch_keyset(const struct quicoff_table *t, const struct rx_state *s,
                                 uint32_t prev_hash, bool computed)
{
    if (s->st != QUICOFF_OK || s->hash == prev_hash)
        return;
    struct qo_slot *c = qo_table_first_slot(t, s->hash);
    if (!c)
        return;
    const struct qo_keyset *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
    if (ks)
        /* with the key line of the current generation: the packet's phase
         * bit is still masked, and almost every packet has that phase */
        prefetch_keyset(ks, atomic_load_explicit(&c->cur_gen, memory_order_relaxed), computed);
}

/* Stage 2: find the connection; prefetch what stage 3 reads. levels (a big
 * table, stages 1b and 1c ran): the key schedules, unless the packet before,
 * prev_ks, had the same keyset (asked for already); otherwise (a table that
 * stays in cache) only the first lines of the header-protection context and
 * of the state, as one-level prefetching was cheapest there. */
QO_STAGE void rx_lookup(const struct quicoff_table *t, struct quicoff_pkt *p,
                        struct quicoff_result *r, struct rx_state *s, bool levels, bool computed,
                        const struct qo_keyset *prev_ks)
{
    if (s->st != QUICOFF_OK)
        return;
    s->c = rx_probe(t, s, p);
    if (!s->c) {
        s->st = QUICOFF_UNKNOWN_CONNECTION;
        return;
    }
    r->conn = qo_handle(s->c);
    r->user = s->ks->user;
    /* Only now is the packet identified, so only now can a clear fixed bit
     * be judged: allowed when the host advertised grease_quic_bit (RFC 9287
     * §3) for this connection, else malformed as RFC 9000 §17 has it
     * (counted on the connection, which it names). */
    if (s->h.fixed_bit_clear && !s->ks->grease_quic_bit) {
        s->st = QUICOFF_MALFORMED;
        return;
    }
    if (!levels) {
        __builtin_prefetch(qo_keyset_hp_ctx(s->ks));
        __builtin_prefetch(&s->c->largest_pn);
    } else if (s->ks != prev_ks && !(computed && computes_keys(s->ks))) {
        prefetch_keys(s->ks, -1, atomic_load_explicit(&s->c->cur_gen, memory_order_relaxed));
    }
}

/* Stage 3: usage limit and sample checks; queue the header-protection mask. */
QO_STAGE void rx_check(struct quicoff_pkt *p, struct rx_state *s, struct hp_batch *hp)
{
    if (s->st != QUICOFF_OK)
        return;
    const struct qo_header *h = &s->h;
    struct qo_keyset *ks = s->ks;
    if (QO_GET(s->c->auth_failures) >= ks->hard_limit) {
        s->st = QUICOFF_KEY_EXHAUSTED; /* integrity limit: the connection must close */
        return;
    }
    /* The sample starts 4 bytes after the PN field (§5.4.2) and must fit
     * before the end of the packet. */
    if ((uint64_t)h->pn_off + 4 + QUICOFF_SAMPLE_LEN > h->end) {
        s->st = QUICOFF_MALFORMED;
        return;
    }
    hp_queue(hp, ks, atomic_load_explicit(&s->c->cur_gen, memory_order_relaxed),
             p->data + h->pn_off + 4, s->mask);
}

/* Stage 4: with the mask, PN decoding and key choice; the header is
 * unmasked in place (it is the AAD). */
QO_STAGE void rx_unmask(struct quicoff_pkt *p, struct quicoff_result *r, struct rx_state *s,
                        bool computed)
{
    if (s->st != QUICOFF_OK)
        return;
    uint8_t *d = p->data;
    const struct qo_header *h = &s->h;
    struct qo_keyset *ks = s->ks;
    uint8_t first = d[p->offset] ^ (s->mask[0] & first_byte_mask(h));
    unsigned pn_len = (first & 3) + 1;
    uint32_t m = pn_mask(s->mask, pn_len);
    uint64_t truncated = (qo_load_be32(d + h->pn_off) ^ m) >> (8 * (4 - pn_len));
    s->largest = QO_GET(s->c->largest_pn);
    uint64_t pn = qo_pn_decode(s->largest, truncated, pn_len * 8);

    unsigned kp = h->is_long ? 0 : (first >> 2) & 1;
    s->cur = atomic_load_explicit(&s->c->cur_gen, memory_order_acquire);
    s->slot = &ks->phase[kp];
    s->kp = (uint8_t)kp;
    s->choice = rx_key_choice(s->slot, s->cur, pn, s->c);
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
    xor_pn_field(d + h->pn_off, m);
    if (!(computed && computes_keys(ks))) /* a computed one is not read */
        __builtin_prefetch(qo_keyset_aead_ctx(ks, s->kp));
}

/* Stage 5: the AEAD open of an unmasked packet (the header is the AAD, the
 * nonce from the decoded PN): queued for the backend (burst), or handed to
 * the caller (prepare). */
QO_STAGE void rx_aead_op(const struct quicoff_pkt *p, const struct quicoff_result *r,
                         const struct rx_state *s, qo_aead_op_t *op)
{
    uint8_t *d = p->data;
    const struct qo_header *h = &s->h;
    uint32_t payload_off = h->pn_off + r->pn_len;
    *op = (qo_aead_op_t){.ctx = qo_keyset_aead_ctx(s->ks, s->kp),
                         .aad = d + p->offset,
                         .aad_len = payload_off - p->offset,
                         .data = d + payload_off,
                         .len = h->end - QUICOFF_TAG_LEN - payload_off,
                         .tag = d + h->end - QUICOFF_TAG_LEN};
    build_nonce(op->nonce, s->ks, s->slot->iv, r->pn);
}

QO_STAGE void rx_queue_open(struct quicoff_pkt *p, const struct quicoff_result *r,
                            struct rx_state *s, struct aead_batch *b, unsigned pkt)
{
    if (s->st != QUICOFF_OK)
        return;
    rx_aead_op(p, r, s, aead_queue(b, s->ks->aead, s->ks->keys[s->kp].key, pkt));
}

/* An open that failed, its header already put back as received: the
 * status (the engine's failure is not the packet's fault and is not
 * counted), the fail action's flag, the count (c: state_of's). Shared by
 * rx_outcome and the train's outcome. */
static inline void rx_open_failed(struct quicoff_worker *w, struct qo_slot *c,
                                  const struct qo_keyset *ks, struct quicoff_result *r, int opened)
{
    if (opened == OPEN_ENGINE_FAILED) {
        r->status = QUICOFF_BACKEND_UNAVAILABLE;
        return;
    }
    if (ks->fail_action == QUICOFF_FAIL_PASS)
        r->flags |= QUICOFF_FLAG_PASS_FAILED;
    r->status = QUICOFF_AUTH_FAILED;
    count_failure(w, c, QUICOFF_AUTH_FAILED);
}

/* An authentic packet's status: OK, or USAGE_LIMIT_REACHED once its
 * connection's authentication failures (failures: read per packet, so that a
 * failure earlier in the chunk counts) reach the threshold. */
static inline void rx_open_ok(struct quicoff_worker *w, uint64_t failures,
                              const struct qo_keyset *ks, struct quicoff_result *r)
{
    if (failures >= ks->threshold) {
        QO_ADD(w->c.usage_limit_reached, 1);
        r->status = QUICOFF_USAGE_LIMIT_REACHED;
    } else {
        r->status = QUICOFF_OK;
    }
}

/* Stage 6: the packet's outcome after the open: key phase change, largest
 * PN, counters, status. */
QO_STAGE void rx_outcome(struct quicoff_worker *w, struct quicoff_pkt *p, struct quicoff_result *r,
                         struct rx_state *s, struct tally *ok)
{
    if (s->st != QUICOFF_OK) {
        r->status = s->st;
        count_failure(w, state_of(s->c, s->ks), s->st);
        return;
    }
    uint8_t *d = p->data;
    const struct qo_header *h = &s->h;
    struct qo_keyset *ks = s->ks;
    struct qo_slot *c = state_of(s->c, ks); /* NULL: overtaken by a replace */
    unsigned pn_len = r->pn_len, kp = r->key_phase;
    uint64_t pn = r->pn;
    uint32_t payload_off = h->pn_off + pn_len;
    uint32_t payload_len = h->end - QUICOFF_TAG_LEN - payload_off;
    if (s->opened != 0) {
        /* Put the header back as received; the backend left the payload. */
        d[p->offset] = s->saved_first;
        xor_pn_field(d + h->pn_off, pn_mask(s->mask, pn_len));
        rx_open_failed(w, c, ks, r, s->opened);
        return;
    }
    if (c == NULL) {
        /* the entry was replaced: its state is not this packet's to move */
    } else if (s->choice == KEYS_NEXT &&
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
    }
    if (s->choice == KEYS_OLD)
        r->flags |= QUICOFF_FLAG_OLD_KEYS;
    tally_packet(ok, c, pn, payload_len, (int)kp);
    r->payload_off = payload_off;
    r->payload_len = payload_len;
    rx_open_ok(w, QO_GET(s->c->auth_failures), ks, r);
}

/* Stages 1-4 of a chunk, up to the open: shared by the burst and prepare
 * (x NULL: the split API hands its operations out, so they must point at
 * the keysets' contexts, not at scratch the next chunk overwrites). True
 * when the chunk's key schedules are computed into x (the caller does the
 * AEAD's). */
QO_STAGE bool rx_front(const struct quicoff_table *t, struct quicoff_pkt *pkts,
                       struct quicoff_result *res, struct rx_state *s, unsigned n,
                       struct qo_key_scratch *x)
{
    uint32_t other_conns = 0; /* nonzero: packets of more than one connection */
    for (unsigned i = 0; i < n; i++) {
        rx_parse(t, &pkts[i], &res[i], &s[i]);
        other_conns |= s[i].hash ^ s[0].hash;
    }
    /* A chunk of one connection (one hot connection in a big table) has
     * one entry to fetch: the level passes would only cost. */
    bool computed = false;
    if (t->prefetch_levels && other_conns) {
        computed = x != NULL;
        for (unsigned i = 0; i < n; i++)
            rx_prefetch_slot(t, &s[i], i && s[i - 1].st == QUICOFF_OK ? s[i - 1].hash : 0);
        for (unsigned i = 0; i < n; i++)
            rx_prefetch_keyset(t, &s[i], i && s[i - 1].st == QUICOFF_OK ? s[i - 1].hash : 0,
                               computed);
        for (unsigned i = 0; i < n; i++)
            rx_lookup(t, &pkts[i], &res[i], &s[i], true, computed,
                      i && s[i - 1].st == QUICOFF_OK ? s[i - 1].ks : NULL);
    } else {
        for (unsigned i = 0; i < n; i++)
            rx_lookup(t, &pkts[i], &res[i], &s[i], false, false, NULL);
    }
    struct hp_batch hp;
    hp.n = 0;
    for (unsigned i = 0; i < n; i++)
        rx_check(&pkts[i], &s[i], &hp);
    if (computed)
        key_schedules_hp(&hp, x);
    compute_masks(&hp);
    for (unsigned i = 0; i < n; i++)
        rx_unmask(&pkts[i], &res[i], &s[i], computed);
    return computed;
}

/* n masks of one key (one context, ctx[i] all alike): one burst call, or
 * one call each for an algorithm without mask_burst. */
static inline void train_hp_masks(const qo_hp_algo_t *hp, void *const ctx[],
                                  const uint8_t *const sample[], uint8_t (*mask)[5], unsigned n)
{
    if (hp->mask_burst) {
        if (n)
            hp->mask_burst(ctx, sample, mask, n);
        return;
    }
    for (unsigned i = 0; i < n; i++)
        hp->mask(ctx[i], sample[i], mask[i]);
}

/* A train packet's result before its AEAD: what result_init and the stages
 * up to the AEAD write for a short header of key phase kp (zeroed first,
 * padding too, as result_init does: results are compared bytewise). */
static inline void train_result(struct quicoff_result *r, const struct quicoff_pkt *p,
                                unsigned cid, unsigned kp, unsigned pn_len, uint64_t pn,
                                quicoff_conn_t conn, void *user)
{
    memset(r, 0, sizeof(*r));
    r->level = QUICOFF_LEVEL_ONE_RTT;
    r->key_phase = (uint8_t)kp;
    r->pn_len = (uint8_t)pn_len;
    r->hdr_off = p->offset;
    r->pn_off = p->offset + 1 + cid;
    r->packet_end = p->end;
    r->dcid_off = p->offset + 1;
    r->pn = pn;
    r->conn = conn;
    r->user = user;
    r->dcid_len = (uint8_t)cid;
}

/*
 * A train: a chunk whose packets are all short headers of one connection,
 * each opened with its current keys, which is what a bulk flow sends and
 * what the one-connection rows of quicoff-bench measure.  The stages above
 * carry every packet's state through memory from pass to pass and decide
 * per packet what is decided once for a train (the entry, its keys, its
 * state); here the chunk takes four passes with that state held once
 * (docs/benchmarks.md, "A train's own path": about 0.72x the time of the
 * stages at 64 bytes).  The outcome is the stages', packet for packet (the burst
 * and the split API, which always runs the stages, are compared result by
 * result in tests/c/test_split.c).  Anything else (a second connection, a
 * long header, a clear fixed bit, a packet too short, next or old keys, the
 * integrity limit) is found before a byte, result or counter is written,
 * and the chunk takes the stages.
 */
struct train {
    struct qo_slot *c;
    struct qo_keyset *ks;
    uint8_t mask[QO_CHUNK][5];
    uint64_t failures;         /* the entry's authentication failures before the train */
    unsigned kp;               /* the key phase slot of the current keys: every packet's */
    qo_aead_op_t op[QO_CHUNK]; /* packet i's open; one algorithm and key, so no aead_batch */
    int opened[QO_CHUNK];      /* its result */
};

/* Pass 1, nothing written: every packet a short header with the fixed bit,
 * room for the sample, and packet 0's DCID (compared before any lookup, so
 * a chunk of many connections costs a few byte compares); then the entry,
 * and every mask. False: not a train. */
QO_STAGE bool train_masks(const struct quicoff_table *t, const struct quicoff_pkt *pkts,
                          unsigned n, struct train *tr)
{
    const unsigned cid = t->local_cid_len;
    if (cid == 0 || n < 2)
        return false;
    const uint8_t *dcid0 = pkts[0].data + pkts[0].offset + 1;
    const uint8_t *sample[QO_CHUNK];
    for (unsigned i = 0; i < n; i++) {
        const struct quicoff_pkt *p = &pkts[i];
        if ((uint64_t)p->offset + 1 + cid + 4 + QUICOFF_SAMPLE_LEN > p->end)
            return false;
        const uint8_t *d = p->data + p->offset;
        if ((d[0] & 0xc0) != 0x40 || !qo_cid_equal(d + 1, dcid0, cid))
            return false;
        sample[i] = d + 1 + cid + 4;
    }
    struct rx_state s0;
    s0.h = (struct qo_header){.level = QUICOFF_LEVEL_ONE_RTT,
                              .dcid_len = (uint8_t)cid,
                              .dcid_off = pkts[0].offset + 1};
    s0.hash = rx_hash(t, &s0.h, &pkts[0]);
    tr->c = rx_probe(t, &s0, &pkts[0]);
    if (!tr->c)
        return false;
    tr->ks = s0.ks;
    tr->failures = QO_GET(tr->c->auth_failures);
    if (tr->failures >= tr->ks->hard_limit)
        return false;
    const qo_hp_algo_t *hp = tr->ks->hp;
    void *ctx[QO_CHUNK];
    for (unsigned i = 0; i < n; i++)
        ctx[i] = qo_keyset_hp_ctx(tr->ks);
    train_hp_masks(hp, ctx, sample, tr->mask, n);
    return true;
}

/* Pass 2, nothing written: the key choice. False: a packet's phase bit
 * names other than the current keys. */
QO_STAGE bool train_keys(const struct quicoff_pkt *pkts, unsigned n, struct train *tr)
{
    const uint32_t cur = atomic_load_explicit(&tr->c->cur_gen, memory_order_acquire);
    /* the slot holding the current generation (at most one does); a packet
     * whose phase bit names the other needs next or old keys */
    const struct qo_keyslot *ph = tr->ks->phase;
    tr->kp = ph[1].present && ph[1].gen == cur;
    if (!ph[tr->kp].present || ph[tr->kp].gen != cur)
        return false;
    unsigned other = 0;
    for (unsigned i = 0; i < n; i++)
        other |= ((pkts[i].data[pkts[i].offset] ^ tr->mask[i][0]) >> 2) ^ tr->kp;
    return (other & 1) == 0;
}

/* Pass 3: PN decoding, results, headers unmasked, the opens queued (as
 * rx_unmask and rx_aead_op do for one packet). */
QO_STAGE void train_queue(const struct quicoff_table *t, struct quicoff_pkt *pkts,
                          struct quicoff_result *res, unsigned n, struct train *tr)
{
    const unsigned cid = t->local_cid_len, kp = tr->kp;
    const struct qo_keyset *ks = tr->ks;
    const quicoff_conn_t conn = qo_handle(tr->c);
    const uint64_t largest = QO_GET(tr->c->largest_pn);
    void *ctx = qo_keyset_aead_ctx(ks, kp);
    /* the nonce of PN 0 (each packet's is it ^ PN), with the op's zeroed tail */
    uint8_t nonce0[sizeof(tr->op[0].nonce)] = {0};
    build_nonce(nonce0, ks, ks->phase[kp].iv, 0);
    const uint64_t low0 = qo_load_be64(nonce0 + 4);
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_pkt *p = &pkts[i];
        uint8_t *d = p->data + p->offset;
        const uint8_t first = d[0] ^ (tr->mask[i][0] & 0x1f);
        const unsigned pn_len = (first & 3) + 1;
        const uint32_t pnm = pn_mask(tr->mask[i], pn_len);
        const uint32_t field = qo_load_be32(d + 1 + cid) ^ pnm;
        const uint64_t pn = qo_pn_decode(largest, field >> (8 * (4 - pn_len)), pn_len * 8);
        uint32_t pn_off = p->offset + 1 + cid, payload_off = pn_off + pn_len;
        train_result(&res[i], p, cid, kp, pn_len, pn, conn, ks->user);
        d[0] = first;
        qo_store_be32(d + 1 + cid, field);
        qo_aead_op_t *op = &tr->op[i];
        op->ctx = ctx;
        op->aad = d;
        op->aad_len = payload_off - p->offset;
        op->data = p->data + payload_off;
        op->len = p->end - QUICOFF_TAG_LEN - payload_off;
        op->tag = p->data + p->end - QUICOFF_TAG_LEN;
        memcpy(op->nonce, nonce0, sizeof(nonce0));
        qo_store_be64(op->nonce + 4, low0 ^ pn);
    }
}

/* Pass 4, after the opens: each packet's outcome (rx_outcome's, for a
 * packet of the current keys), and the train's sums in ok (fresh): one
 * connection, so its run is the whole train and needs no per-packet
 * bookkeeping (tally_packet's). */
QO_STAGE void train_outcome(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                            struct quicoff_result *res, unsigned n, const struct train *tr,
                            struct tally *ok)
{
    const struct qo_keyset *ks = tr->ks;
    /* NULL: overtaken by a replace (state_of). Checked once: the train's
     * writes to the state are the one flush after this loop. */
    struct qo_slot *c = state_of(tr->c, ks);
    /* the entry's failures so far; this worker is their only writer, so
     * reloaded only after a failure here */
    uint64_t failures = tr->failures;
    uint64_t packets = 0, bytes = 0, largest = 0;
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_result *r = &res[i];
        if (tr->opened[i] != 0) {
            /* Put the header back as received; the backend left the payload. */
            pkts[i].data[pkts[i].offset] ^= tr->mask[i][0] & 0x1f;
            xor_pn_field(pkts[i].data + r->pn_off, pn_mask(tr->mask[i], r->pn_len));
            rx_open_failed(w, c, ks, r, tr->opened[i]);
            failures = QO_GET(tr->c->auth_failures);
            continue;
        }
        r->payload_off = r->pn_off + r->pn_len;
        r->payload_len = pkts[i].end - QUICOFF_TAG_LEN - r->payload_off;
        packets++;
        bytes += r->payload_len;
        largest = r->pn > largest ? r->pn : largest;
        rx_open_ok(w, failures, ks, r);
    }
    ok->packets = packets;
    ok->bytes = bytes;
    if (c && packets) {
        ok->run = c;
        ok->run_packets = packets;
        ok->run_bytes = bytes;
        ok->run_key_packets[tr->kp] = packets;
        ok->run_largest = largest;
    }
}

/* The chunk as a train; false (nothing touched) when it is not one. */
static bool unprotect_train(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                            struct quicoff_result *res, unsigned n, unsigned *ok_out)
{
    struct train tr;
    if (!train_masks(w->table, pkts, n, &tr) || !train_keys(pkts, n, &tr))
        return false;
    train_queue(w->table, pkts, res, n, &tr);
    aead_run_group(tr.ks->aead, false, tr.op, n, tr.opened, w->scratch, w->backend_state);
    struct tally ok = TALLY_INIT;
    train_outcome(w, pkts, res, n, &tr, &ok);
    tally_flush_run(&ok);
    QO_ADD(w->c.rx_packets, ok.packets);
    QO_ADD(w->c.rx_bytes, ok.bytes);
    *ok_out = (unsigned)ok.packets;
    return true;
}

/*
 * Packets of one chunk go through each stage before the next stage starts,
 * so the cache misses of one stage (index cell, slot, keyset, contexts)
 * overlap across packets instead of adding up, and the AEAD opens run as
 * one burst (aead_run). Two packets of the same connection in one chunk:
 * the later one's PN decoding and key choice see the state before the
 * earlier one was opened, as a pipelined NIC would; the largest PN and key
 * phase are still advanced in packet order (the outcome stage).
 */
static unsigned unprotect_chunk(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                struct quicoff_result *res, unsigned n)
{
    unsigned trained;
    if (unprotect_train(w, pkts, res, n, &trained))
        return trained;
    struct rx_state s[QO_CHUNK];
    bool computed = rx_front(w->table, pkts, res, s, n, w->keys);
    struct aead_batch b;
    b.n = 0;
    for (unsigned i = 0; i < n; i++)
        rx_queue_open(&pkts[i], &res[i], &s[i], &b, i);
    if (computed)
        key_schedules_aead(&b, w->keys);
    aead_run(&b, false, w->scratch, w->backend_state);
    for (unsigned k = 0; k < b.n; k++)
        s[b.pkt[k]].opened = b.result[k];
    struct tally ok = TALLY_INIT;
    for (unsigned i = 0; i < n; i++)
        rx_outcome(w, &pkts[i], &res[i], &s[i], &ok);
    tally_flush_run(&ok);
    QO_ADD(w->c.rx_packets, ok.packets);
    QO_ADD(w->c.rx_bytes, ok.bytes);
    return (unsigned)ok.packets;
}

/* ------------------------------------------------------------------ TX */

struct tx_state {
    struct qo_header h;
    struct qo_slot *c;
    struct qo_keyset *ks;
    const struct qo_keyslot *slot;
    quicoff_status_t st;
    bool next;     /* this packet starts a key update */
    uint8_t kp;    /* slot's index in ks->phase */
    uint64_t used; /* packets already protected with this key */
    uint8_t mask[5];
};

/* Stage 1: resolve the handle; prefetch the keyset (its hot lines when the
 * level passes run, as tx_prefetch_keys reads them next; else its first
 * line, and the slot state). */
QO_STAGE void tx_resolve(const struct quicoff_table *t, struct quicoff_pkt *p,
                         struct quicoff_result *r, struct tx_state *s, bool levels, bool computed)
{
    result_init(r, p);
    r->conn = p->conn;
    s->c = NULL;
    s->ks = NULL;
    s->st = QUICOFF_OK;
    uint32_t slot_index = (uint32_t)p->conn;
    if (slot_index < t->capacity) {
        struct qo_slot *c = &t->slots[slot_index];
        struct qo_keyset *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
        /* The keyset's direction is checked in stage 2 (tx_prepare), once
         * the keyset is in cache: read here, before its prefetch, it was a
         * miss per packet one after another (~25 % of a 64-byte packet's
         * time at 10^6 active connections). */
        if (ks && atomic_load_explicit(&c->handle_gen, memory_order_relaxed) ==
                      (uint32_t)(p->conn >> 32)) {
            s->c = c;
            s->ks = ks;
            if (levels) {
                unsigned first = p->offset < p->end && p->end <= p->cap ? p->data[p->offset] : 0;
                prefetch_keyset(ks, (first & 0x80) ? 0 : (first >> 2) & 1, computed);
            } else {
                __builtin_prefetch(ks);
                __builtin_prefetch(&c->cur_gen);
            }
            return;
        }
    }
    s->st = QUICOFF_UNKNOWN_CONNECTION;
}

/* Before stage 1: the slot a handle names (no reads yet); once for a train
 * of packets of one connection (prev: the packet before, or NULL). */
QO_STAGE void tx_prefetch_slot(const struct quicoff_table *t, const struct quicoff_pkt *p,
                               const struct quicoff_pkt *prev)
{
    uint32_t slot_index = (uint32_t)p->conn;
    if (slot_index < t->capacity && !(prev && prev->conn == p->conn))
        qo_prefetch_range(&t->slots[slot_index], SLOT_HOT_LEN);
}

/* Stage 1b: the keyset is (being) fetched: prefetch the key schedules of the
 * key phase the host wrote in the (still clear) first byte (not again for
 * the same connection as the packet before, prev_ks). */
QO_STAGE void tx_prefetch_keys(const struct quicoff_pkt *p, const struct tx_state *s,
                               const struct qo_keyset *prev_ks, bool computed)
{
    if (s->st != QUICOFF_OK || s->ks == prev_ks || p->offset >= p->end || p->end > p->cap ||
        (computed && computes_keys(s->ks)))
        return;
    uint8_t first = p->data[p->offset];
    prefetch_keys(s->ks, (first & 0x80) ? 0 : (first >> 2) & 1, 0);
}

/* Stage 2: check the header the host gave, choose the key, count the
 * packet against it (the seal is tx_aead_op's). */
QO_STAGE void tx_prepare(struct quicoff_pkt *p, struct quicoff_result *r, struct tx_state *s)
{
    if (s->st != QUICOFF_OK)
        return;
    uint8_t *d = p->data;
    struct qo_keyset *ks = s->ks;
    if (ks->direction != QUICOFF_DIR_TX) { /* an RX entry's handle: not ours to seal with */
        s->c = NULL;
        s->ks = NULL;
        s->st = QUICOFF_UNKNOWN_CONNECTION;
        return;
    }
    struct qo_header *h = &s->h;
    if (p->offset >= p->end || p->end > p->cap || p->cap - p->end < QUICOFF_TAG_LEN) {
        s->st = p->offset >= p->end ? QUICOFF_MALFORMED : QUICOFF_NO_SPACE;
        return;
    }
    uint32_t end = p->end + QUICOFF_TAG_LEN;
    s->st = qo_parse_any(d, end, p->offset, ks->dcid_len, h);
    r->user = ks->user; /* here, not in tx_resolve: stage 1 only prefetches ks */
    r->dcid_off = h->dcid_off;
    r->dcid_len = h->dcid_len;
    r->level = h->level;
    r->flags = h->is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
    if (s->st != QUICOFF_OK)
        return;
    /* The host's stack greased the fixed bit (RFC 9287): kept as written
     * (header protection never touches it) when the entry allows it. */
    if (h->fixed_bit_clear && !ks->grease_quic_bit) {
        s->st = QUICOFF_MALFORMED;
        return;
    }
    unsigned pn_len = (d[p->offset] & 3) + 1;
    /* A long header's Length must already count PN, payload and tag; the
     * packet must be long enough for the header-protection sample (the host
     * pads, §5.4.2); the header's PN bytes must encode pn. */
    if (h->level != ks->level || h->end != end || (uint64_t)h->pn_off + pn_len > p->end ||
        (uint64_t)h->pn_off + 4 + QUICOFF_SAMPLE_LEN > end || p->pn > QO_PN_MAX) {
        s->st = QUICOFF_MALFORMED;
        return;
    }
    uint64_t encoded = qo_load_be32(d + h->pn_off) >> (8 * (4 - pn_len));
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
    struct qo_slot *c = state_of(s->c, ks); /* NULL: overtaken by a replace */
    if (s->next && c) {
        atomic_store_explicit(&c->key_packets[kp], 0, memory_order_relaxed);
        atomic_store_explicit(&c->cur_gen, cur + 1, memory_order_release);
    }
    if (c)
        QO_ADD(c->key_packets[kp], 1);
    s->slot = slot;
    s->kp = (uint8_t)kp;
}

/* The AEAD seal of a packet that passed tx_prepare: queued for the backend
 * (burst), or handed to the caller (prepare). */
QO_STAGE void tx_aead_op(const struct quicoff_pkt *p, const struct quicoff_result *r,
                         const struct tx_state *s, qo_aead_op_t *op)
{
    uint8_t *d = p->data;
    uint32_t payload_off = s->h.pn_off + r->pn_len;
    *op = (qo_aead_op_t){.ctx = qo_keyset_aead_ctx(s->ks, s->kp),
                         .aad = d + p->offset,
                         .aad_len = payload_off - p->offset,
                         .data = d + payload_off,
                         .len = p->end - payload_off,
                         .tag = d + p->end};
    build_nonce(op->nonce, s->ks, s->slot->iv, p->pn);
}

/* Stage 3: header protection (mask from the ciphertext sample, computed for
 * the whole chunk before), then the outcome. */
QO_STAGE void tx_finish(struct quicoff_worker *w, struct quicoff_pkt *p, struct quicoff_result *r,
                        struct tx_state *s, struct tally *ok)
{
    if (s->st != QUICOFF_OK) {
        r->status = s->st;
        count_failure(w, state_of(s->c, s->ks), s->st);
        return;
    }
    uint8_t *d = p->data;
    struct qo_keyset *ks = s->ks;
    struct qo_slot *c = state_of(s->c, ks); /* NULL: overtaken by a replace */
    const struct qo_header *h = &s->h;
    unsigned pn_len = r->pn_len;
    const uint8_t *mask = s->mask;
    d[p->offset] ^= mask[0] & first_byte_mask(h);
    xor_pn_field(d + h->pn_off, pn_mask(mask, pn_len));

    uint32_t payload_off = h->pn_off + pn_len;
    uint32_t payload_len = p->end - payload_off;
    if (s->next) {
        if (c)
            QO_ADD(c->key_updates, 1);
        QO_ADD(w->c.key_updates, 1);
        r->flags |= QUICOFF_FLAG_KEY_UPDATED;
    }
    tally_packet(ok, c, p->pn, payload_len, -1);
    r->payload_off = payload_off;
    r->payload_len = payload_len;
    r->packet_end = p->end + QUICOFF_TAG_LEN;
    if (s->used + 1 >= ks->threshold) {
        QO_ADD(w->c.usage_limit_reached, 1);
        r->status = QUICOFF_USAGE_LIMIT_REACHED;
    } else {
        r->status = QUICOFF_OK;
    }
}

/* After the seals (a failed one has st BACKEND_UNAVAILABLE): header
 * protection of the chunk, outcomes, counters. Shared by the burst and
 * complete. */
QO_STAGE unsigned tx_back(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                          struct quicoff_result *res, struct tx_state *s, unsigned n,
                          bool computed)
{
    struct hp_batch hp;
    hp.n = 0;
    for (unsigned i = 0; i < n; i++)
        if (s[i].st == QUICOFF_OK)
            hp_queue(&hp, s[i].ks, s[i].kp, pkts[i].data + s[i].h.pn_off + 4, s[i].mask);
    if (computed)
        key_schedules_hp(&hp, w->keys);
    compute_masks(&hp);
    struct tally ok = TALLY_INIT;
    for (unsigned i = 0; i < n; i++)
        tx_finish(w, &pkts[i], &res[i], &s[i], &ok);
    tally_flush_run(&ok);
    QO_ADD(w->c.tx_packets, ok.packets);
    QO_ADD(w->c.tx_bytes, ok.bytes);
    return (unsigned)ok.packets;
}

/*
 * A train to protect: a chunk whose packets are all short headers of one
 * connection, under its current keys (unprotect_train's counterpart; a
 * server's bulk flow).  The entry, the key and the key-use count are read
 * once; the outcome is tx_prepare's and tx_finish's, packet for packet
 * (tests/c/test_split.c compares the burst with the split API, which runs
 * the stages).  Anything else (another connection, a long header, a clear
 * fixed bit, a header the host got wrong, a key update, a limit within
 * reach) is found before a byte, result or counter is written, and the
 * chunk takes the stages.
 */
struct tx_train {
    struct qo_slot *c;
    struct qo_keyset *ks;
    uint64_t used; /* the key's uses before the chunk */
    unsigned kp;
};

/* Pass 1, nothing written. False: not a train. */
QO_STAGE bool tx_train_check(const struct quicoff_table *t, const struct quicoff_pkt *pkts,
                             unsigned n, struct tx_train *tr)
{
    if (n < 2)
        return false;
    const quicoff_conn_t conn = pkts[0].conn;
    /* one connection first, from the descriptors alone: a chunk of many
     * (whose entries may be far in DRAM) is refused without a miss */
    for (unsigned i = 1; i < n; i++)
        if (pkts[i].conn != conn)
            return false;
    uint32_t slot_index = (uint32_t)conn;
    if (slot_index >= t->capacity)
        return false;
    struct qo_slot *c = &t->slots[slot_index];
    struct qo_keyset *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
    if (!ks ||
        atomic_load_explicit(&c->handle_gen, memory_order_relaxed) != (uint32_t)(conn >> 32) ||
        ks->direction != QUICOFF_DIR_TX || ks->level != QUICOFF_LEVEL_ONE_RTT)
        return false;
    const unsigned cid = ks->dcid_len;
    const uint8_t kbit = pkts[0].offset < pkts[0].end ? pkts[0].data[pkts[0].offset] & 0x04 : 0;
    for (unsigned i = 0; i < n; i++) {
        const struct quicoff_pkt *p = &pkts[i];
        if (p->offset >= p->end || p->end > p->cap || p->cap - p->end < QUICOFF_TAG_LEN ||
            p->pn > QO_PN_MAX)
            return false;
        const uint8_t *d = p->data + p->offset;
        unsigned pn_len = (d[0] & 3) + 1;
        uint64_t pn_off = (uint64_t)p->offset + 1 + cid;
        /* short, fixed bit set, one key phase; the PN field and the sample fit */
        if ((d[0] & 0xc0) != 0x40 || (d[0] & 0x04) != kbit || pn_off + pn_len > p->end ||
            pn_off + 4 + QUICOFF_SAMPLE_LEN > (uint64_t)p->end + QUICOFF_TAG_LEN)
            return false;
        uint64_t encoded = qo_load_be32(p->data + pn_off) >> (8 * (4 - pn_len));
        if (encoded != (p->pn & ((UINT64_C(1) << (8 * pn_len)) - 1)))
            return false;
    }
    unsigned kp = kbit >> 2;
    uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_acquire);
    const struct qo_keyslot *slot = &ks->phase[kp];
    if (!slot->present || slot->gen != cur)
        return false;
    uint64_t used = QO_GET(c->key_packets[kp]);
    if (used + n > ks->hard_limit) /* the last packet's use must stay below it */
        return false;
    *tr = (struct tx_train){.c = c, .ks = ks, .used = used, .kp = kp};
    return true;
}

/* The chunk as a train; false (nothing touched) when it is not one. */
static bool protect_train(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                          struct quicoff_result *res, unsigned n, unsigned *ok_out)
{
    struct tx_train tr;
    if (!tx_train_check(w->table, pkts, n, &tr))
        return false;
    const struct qo_keyset *ks = tr.ks;
    const unsigned cid = ks->dcid_len, kp = tr.kp;
    struct qo_slot *c = state_of(tr.c, ks); /* NULL: overtaken by a replace */
    if (c) /* the chunk's key uses, counted before the seals as tx_prepare does */
        QO_ADD(c->key_packets[kp], n);
    qo_aead_op_t ops[QO_CHUNK]; /* one algorithm and key, so no aead_batch */
    int sealed[QO_CHUNK];
    void *actx = qo_keyset_aead_ctx(ks, kp);
    /* the nonce of PN 0 (each packet's is it ^ PN), with the op's zeroed tail */
    uint8_t nonce0[sizeof(ops[0].nonce)] = {0};
    build_nonce(nonce0, ks, ks->phase[kp].iv, 0);
    const uint64_t low0 = qo_load_be64(nonce0 + 4);
    void *ctx[QO_CHUNK];
    const uint8_t *sample[QO_CHUNK];
    uint64_t bytes = 0, largest = 0;
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_pkt *p = &pkts[i];
        uint8_t *d = p->data + p->offset;
        unsigned pn_len = (d[0] & 3) + 1;
        uint32_t pn_off = p->offset + 1 + cid, payload_off = pn_off + pn_len;
        struct quicoff_result *r = &res[i];
        train_result(r, p, cid, kp, pn_len, p->pn, p->conn, ks->user);
        /* a sealed packet's, written now so that a train with no failure
         * (the usual case) needs only the header masks and the status
         * after the seals */
        r->payload_off = payload_off;
        r->payload_len = p->end - payload_off;
        r->packet_end = p->end + QUICOFF_TAG_LEN;
        bytes += r->payload_len;
        largest = p->pn > largest ? p->pn : largest;
        ctx[i] = qo_keyset_hp_ctx(ks);
        sample[i] = d + 1 + cid + 4;
        qo_aead_op_t *op = &ops[i];
        op->ctx = actx;
        op->aad = d;
        op->aad_len = payload_off - p->offset;
        op->data = p->data + payload_off;
        op->len = r->payload_len;
        op->tag = p->data + p->end;
        memcpy(op->nonce, nonce0, sizeof(nonce0));
        qo_store_be64(op->nonce + 4, low0 ^ p->pn);
    }
    aead_run_group(ks->aead, true, ops, n, sealed, w->scratch, w->backend_state);
    /* header protection from the ciphertext samples of the sealed packets
     * (an engine failure, rare, leaves its packet out: unprotected, no
     * payload in its result, counted nowhere, as tx_finish) */
    int failed = 0;
    for (unsigned i = 0; i < n; i++)
        failed |= sealed[i];
    unsigned idx[QO_CHUNK], m = n;
    if (failed) {
        m = 0;
        bytes = largest = 0;
        for (unsigned i = 0; i < n; i++) {
            struct quicoff_result *r = &res[i];
            if (sealed[i] != 0) {
                r->status = QUICOFF_BACKEND_UNAVAILABLE;
                r->payload_off = r->payload_len = 0;
                r->packet_end = pkts[i].end;
                continue;
            }
            bytes += r->payload_len;
            largest = pkts[i].pn > largest ? pkts[i].pn : largest;
            sample[m] = sample[i];
            idx[m++] = i;
        }
    } else {
        for (unsigned i = 0; i < n; i++)
            idx[i] = i;
    }
    uint8_t mask[QO_CHUNK][5];
    train_hp_masks(ks->hp, ctx, sample, mask, m);
    for (unsigned k = 0; k < m; k++) {
        unsigned i = idx[k];
        struct quicoff_pkt *p = &pkts[i];
        struct quicoff_result *r = &res[i];
        p->data[p->offset] ^= mask[k][0] & 0x1f;
        xor_pn_field(p->data + r->pn_off, pn_mask(mask[k], r->pn_len));
        if (tr.used + i + 1 >= ks->threshold) {
            QO_ADD(w->c.usage_limit_reached, 1);
            r->status = QUICOFF_USAGE_LIMIT_REACHED;
        } else {
            r->status = QUICOFF_OK;
        }
    }
    struct tally ok = {.packets = m, .bytes = bytes};
    if (c && m) { /* c: state_of's, checked before the key uses were counted */
        ok.run = c;
        ok.run_packets = m;
        ok.run_bytes = bytes;
        ok.run_largest = largest;
    }
    tally_flush_run(&ok);
    QO_ADD(w->c.tx_packets, ok.packets);
    QO_ADD(w->c.tx_bytes, ok.bytes);
    *ok_out = (unsigned)ok.packets;
    return true;
}

static unsigned protect_chunk(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                              struct quicoff_result *res, unsigned n)
{
    unsigned trained;
    if (protect_train(w, pkts, res, n, &trained))
        return trained;
    const struct quicoff_table *t = w->table;
    struct tx_state s[QO_CHUNK];
    /* the level-by-level passes only where the table outgrows the cache
     * (quicoff_table.prefetch_levels): in cache they cost more than they hide */
    bool levels = false;
    if (t->prefetch_levels) {
        /* not for a chunk of one connection: one entry, nothing to overlap */
        for (unsigned i = 1; i < n; i++)
            levels |= pkts[i].conn != pkts[0].conn;
    }
    /* and with the worker's scratch, the key schedules computed (above) */
    bool computed = levels && w->keys;
    if (levels)
        for (unsigned i = 0; i < n; i++)
            tx_prefetch_slot(t, &pkts[i], i ? &pkts[i - 1] : NULL);
    for (unsigned i = 0; i < n; i++)
        tx_resolve(t, &pkts[i], &res[i], &s[i], levels, computed);
    /* Also where every schedule is computed (nothing left to prefetch): the
     * pass still reads each keyset's line 1, in a loop short enough for the
     * core to have the chunk's misses in flight at once, where tx_prepare's
     * long per-packet body would meet them one by one (without it, 10^6
     * active protect took 1.29x the time: docs/benchmarks.md). */
    if (levels)
        for (unsigned i = 0; i < n; i++)
            tx_prefetch_keys(&pkts[i], &s[i], i && s[i - 1].st == QUICOFF_OK ? s[i - 1].ks : NULL,
                             computed);
    struct aead_batch b;
    b.n = 0;
    for (unsigned i = 0; i < n; i++) {
        tx_prepare(&pkts[i], &res[i], &s[i]);
        if (s[i].st == QUICOFF_OK)
            tx_aead_op(&pkts[i], &res[i], &s[i],
                       aead_queue(&b, s[i].ks->aead, s[i].ks->keys[s[i].kp].key, i));
    }
    if (computed)
        key_schedules_aead(&b, w->keys);
    aead_run(&b, true, w->scratch, w->backend_state);
    for (unsigned k = 0; k < b.n; k++)
        if (b.result[k] != 0)
            s[b.pkt[k]].st = QUICOFF_BACKEND_UNAVAILABLE;
    return tx_back(w, pkts, res, s, n, computed);
}

/* ------------------------------------------------------------------ bursts */

/* The bursts return the number of processed packets (quicoff_status_ok):
 * exactly the authentic ones each chunk's tally counted (a failure's status
 * is never usage_limit_reached), so the results are not read again. */
unsigned quicoff_unprotect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, unsigned n)
{
    unsigned ok = 0;
    qo_worker_enter(w);
    for (unsigned i = 0; i < n; i += QO_CHUNK)
        ok += unprotect_chunk(w, pkts + i, res + i, n - i < QO_CHUNK ? n - i : QO_CHUNK);
    qo_worker_exit(w);
    return ok;
}

unsigned quicoff_protect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                               struct quicoff_result *res, unsigned n)
{
    unsigned ok = 0;
    qo_worker_enter(w);
    for (unsigned i = 0; i < n; i += QO_CHUNK)
        ok += protect_chunk(w, pkts + i, res + i, n - i < QO_CHUNK ? n - i : QO_CHUNK);
    qo_worker_exit(w);
    return ok;
}

/* ------------------------------------------------------------------ split */

/*
 * prepare / complete (quicoff.h): the burst's stages with the AEAD between
 * them done by the caller. A packet's stage state travels in its job's
 * opaque area (copied: the caller's array has no alignment or type we can
 * rely on), so there is no per-worker limit on n and nothing to allocate.
 */
_Static_assert(sizeof(struct rx_state) <= sizeof(((struct quicoff_aead_job *)0)->opaque),
               "rx_state must fit in a job");
_Static_assert(sizeof(struct tx_state) <= sizeof(((struct quicoff_aead_job *)0)->opaque),
               "tx_state must fit in a job");

/* The job of a packet whose AEAD is op (pointers into p->data -> offsets). */
static void job_fill(struct quicoff_aead_job *j, const struct quicoff_pkt *p,
                     const qo_aead_op_t *op, const struct qo_keyset *ks, unsigned kp, bool decrypt)
{
    const struct qo_keymeta *m = &ks->meta[kp];
    j->key_id = m->id;
    j->key_user = m->user;
    j->key = ks->keys[kp].key;
    j->key_len = qo_suites[ks->suite].key_len;
    j->suite = ks->suite;
    j->pending = 1;
    j->decrypt = decrypt;
    j->fail_pass = decrypt && ks->fail_action == QUICOFF_FAIL_PASS;
    j->key_phase = (uint8_t)kp;
    j->generation = ks->phase[kp].gen;
    memcpy(j->nonce, op->nonce, QUICOFF_IV_LEN);
    j->aad_off = (uint32_t)(op->aad - p->data);
    j->aad_len = (uint32_t)op->aad_len;
    j->data_off = (uint32_t)(op->data - p->data);
    j->data_len = (uint32_t)op->len;
    j->tag_off = (uint32_t)(op->tag - p->data);
}

/* A job that prepare has not made pending: everything zero but the verdict
 * that is safe if the caller runs or reports it anyway. */
static void job_clear(struct quicoff_aead_job *j)
{
    memset(j, 0, sizeof(*j));
    j->aead_status = QUICOFF_BACKEND_UNAVAILABLE;
}

unsigned quicoff_unprotect_prepare(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                   struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                   unsigned n)
{
    unsigned pending = 0;
    qo_worker_enter(w);
    for (unsigned i = 0; i < n; i += QO_CHUNK) {
        unsigned m = n - i < QO_CHUNK ? n - i : QO_CHUNK;
        struct rx_state s[QO_CHUNK];
        rx_front(w->table, pkts + i, res + i, s, m, NULL);
        for (unsigned k = 0; k < m; k++) {
            struct quicoff_aead_job *j = &jobs[i + k];
            job_clear(j);
            if (s[k].st == QUICOFF_OK) {
                qo_aead_op_t op;
                rx_aead_op(&pkts[i + k], &res[i + k], &s[k], &op);
                job_fill(j, &pkts[i + k], &op, s[k].ks, res[i + k].key_phase, true);
                pending++;
            }
            memcpy(j->opaque, &s[k], sizeof(s[k]));
        }
    }
    return pending;
}

unsigned quicoff_unprotect_complete(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                    struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                    unsigned n)
{
    struct tally ok = TALLY_INIT;
    for (unsigned i = 0; i < n; i++) {
        struct rx_state s;
        memcpy(&s, jobs[i].opaque, sizeof(s));
        if (s.st == QUICOFF_OK)
            s.opened = jobs[i].aead_status == QUICOFF_OK            ? 0
                       : jobs[i].aead_status == QUICOFF_AUTH_FAILED ? -1
                                                                    : OPEN_ENGINE_FAILED;
        rx_outcome(w, &pkts[i], &res[i], &s, &ok);
        memset(&jobs[i], 0, sizeof(jobs[i])); /* the nonce reveals the IV */
    }
    tally_flush_run(&ok);
    QO_ADD(w->c.rx_packets, ok.packets);
    QO_ADD(w->c.rx_bytes, ok.bytes);
    qo_worker_exit(w);
    return (unsigned)ok.packets;
}

unsigned quicoff_protect_prepare(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                 unsigned n)
{
    unsigned pending = 0;
    qo_worker_enter(w);
    for (unsigned i = 0; i < n; i++) {
        struct tx_state s;
        struct quicoff_aead_job *j = &jobs[i];
        job_clear(j);
        tx_resolve(w->table, &pkts[i], &res[i], &s, false, false);
        tx_prepare(&pkts[i], &res[i], &s);
        if (s.st == QUICOFF_OK) {
            qo_aead_op_t op;
            tx_aead_op(&pkts[i], &res[i], &s, &op);
            job_fill(j, &pkts[i], &op, s.ks, res[i].key_phase, false);
            pending++;
        }
        memcpy(j->opaque, &s, sizeof(s));
    }
    return pending;
}

unsigned quicoff_protect_complete(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                  struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                  unsigned n)
{
    unsigned ok = 0;
    for (unsigned i = 0; i < n; i += QO_CHUNK) {
        unsigned m = n - i < QO_CHUNK ? n - i : QO_CHUNK;
        struct tx_state s[QO_CHUNK];
        for (unsigned k = 0; k < m; k++) {
            struct quicoff_aead_job *j = &jobs[i + k];
            memcpy(&s[k], j->opaque, sizeof(s[k]));
            if (s[k].st == QUICOFF_OK && j->aead_status != QUICOFF_OK)
                s[k].st = QUICOFF_BACKEND_UNAVAILABLE;
            memset(j, 0, sizeof(*j)); /* the nonce reveals the IV */
        }
        ok += tx_back(w, pkts + i, res + i, s, m, false);
    }
    qo_worker_exit(w);
    return ok;
}
