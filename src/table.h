/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection table internals, shared by table.c, index.c, keyset.c,
 * stats.c, worker.c (control path) and protect.c (data path).
 *
 * - qo_keyset: everything immutable about an entry (lookup key, suite,
 *   keys and their pre-keyed crypto contexts). Never changed once published:
 *   an update builds a new keyset and swaps the pointer; the old one is
 *   zeroed after the grace period (epoch.h). Readers never see it torn.
 * - qo_slot: what a handle (quicoff_conn_t) names; holds the keyset pointer
 *   and the entry's mutable data-plane state (largest PN, current key
 *   generation, counters), written by the one worker serving the entry.
 *   (The words per layer: docs/glossary.md.)
 * - qo_index: open-addressed hash (linear probing) from (level, DCID) or
 *   (level, address+port) to slot, for RX entries. Cells are 64-bit words
 *   (hash fingerprint << 32 | slot+1), so a reader reads a cell in one load;
 *   deletion leaves a tombstone, and the writer rebuilds a fresh index and
 *   swaps it in when tombstones pile up (readers of the old one stay correct).
 */
#ifndef QUICOFF_TABLE_H
#define QUICOFF_TABLE_H

#include "block_pool.h"
#include "crypto.h"
#include "epoch.h"
#include "quicoff/quicoff.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdatomic.h>

#define QO_CACHE_LINE 64
#define QO_SLOT_TOMBSTONE 0xffffffffu
/* About what one AES-GCM connection occupies with ipsec-mb: its slot
 * (128 B), two index cells, a keyset with two 1 KiB GCM contexts and a
 * header-protection key schedule. */
#define QO_CONN_FOOTPRINT 3072u
/* Tables whose entries (capacity x QO_CONN_FOOTPRINT) exceed this get the
 * level-by-level prefetch (quicoff_table.prefetch_levels): half a 32 MiB
 * last-level cache, which other tables, packets and the host's own data
 * share. Measured (docs/benchmarks.md): 1,000 active connections (capacity
 * 2,064, 6 MiB) lose 6-17 % with it; 10^4 and more gain. */
#define QO_PREFETCH_LEVELS_FOOTPRINT ((uint64_t)16 << 20)

/* What the data path reads of a key phase slot: 20 bytes, so that both
 * slots share a line with the algorithms (the slot's AEAD context is at
 * qo_keyset_aead_ctx, its raw key in qo_keyset.keys). */
struct qo_keyslot {
    uint32_t gen; /* key generation; phase bit = gen & 1 */
    uint8_t present;
    uint8_t iv[QUICOFF_IV_LEN];
};

/* A key phase slot's raw key, with a copy of the header-protection key: a
 * table whose key schedules are computed from the raw keys per burst
 * (protect.c, qo_key_scratch) reads one such line per packet. */
struct qo_keyline {
    uint8_t hp_key[QUICOFF_MAX_KEY_LEN];
    uint8_t key[QUICOFF_MAX_KEY_LEN];
} __attribute__((aligned(QO_CACHE_LINE)));

/*
 * Member order is cache-line order (a keyset is cache-line aligned,
 * keyset_alloc), so that a packet reads few lines:
 *  - line 0: the lookup identity, DCID included (all a lookup reads), the
 *    hard limit;
 *  - line 1: the threshold, the algorithms, both key phase slots: with line
 *    0 all that a packet reads where the key schedules are read from the
 *    contexts (2 lines);
 *  - lines 2 and 3: keys[p], what a packet of phase slot p reads besides
 *    where the schedules are computed from the raw keys (3 lines);
 *  - then what only the control path and rare packets read.
 * The contexts (ctx_mem) are not pointed to from the hot lines but found
 * from ctx_size: two AEAD contexts, then the header-protection one.
 */
struct qo_keyset {
    /* line 0 */
    uint8_t direction, level, suite, nonce_layout, fail_action, dcid_len;
    uint8_t grease_quic_bit; /* a clear fixed bit is accepted (RFC 9287) */
    uint32_t version;
    uint32_t path_id;
    uint32_t hash;
    uint32_t state_gen; /* the slot's state_gen this keyset may write the state under */
    void *user;         /* quicoff_conn_config.user, returned in every result */
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    uint32_t actx; /* bytes from one AEAD context to the next in ctx_mem */
    /* limits (RFC 9001 §6.6) and the caller's threshold */
    uint64_t hard_limit; /* TX: confidentiality (per key); RX: integrity (per connection) */
    /* line 1 */
    uint64_t threshold;
    const qo_aead_algo_t *aead;
    const qo_hp_algo_t *hp;
    struct qo_keyslot phase[2];
    /* lines 2 and 3: the raw keys, also what an update rebuilds contexts
     * from (the HP key's copy in keys[0] is the one the control path reads) */
    struct qo_keyline keys[2];
    /* Control path only */
    struct qo_retire_node retire;
    /* a zero-length-CID entry's lookup key (cold: read by those lookups only) */
    struct quicoff_addr addr;
    size_t alloc_size;
    uint8_t in_pool;  /* from the table's keyset_pools, not aligned_alloc */
    uint8_t hp_ready; /* the header-protection context is set up */
    /* Per phase slot: the key's identity for split-API callers (key hooks).
     * Kept out of qo_keyslot so the burst path's layout is unchanged. A
     * cloned keyset shares its keys' IDs with the original; `owner` says
     * which keyset reports the key to the retire hook when released. */
    struct qo_keymeta {
        uint64_t id; /* 0 = none */
        void *user;  /* what the install hook returned */
        uint32_t gen;
        uint8_t owner;  /* this keyset retires the key when it is released */
        uint8_t hooked; /* the install hook accepted it */
    } meta[2];
    _Alignas(QO_CACHE_LINE) uint8_t ctx_mem[];
};

_Static_assert(offsetof(struct qo_keyset, threshold) == QO_CACHE_LINE &&
                   offsetof(struct qo_keyset, phase) + sizeof(((struct qo_keyset *)0)->phase) <=
                       2 * QO_CACHE_LINE &&
                   offsetof(struct qo_keyset, keys) == 2 * QO_CACHE_LINE &&
                   sizeof(struct qo_keyline) == QO_CACHE_LINE,
               "a keyset's hot lines: 0-1, then one line of raw keys per phase slot");

/* The AEAD context of phase slot p, and the header-protection context. */
static inline void *qo_keyset_aead_ctx(const struct qo_keyset *ks, unsigned p)
{
    return (uint8_t *)ks->ctx_mem + (size_t)p * ks->actx;
}

static inline void *qo_keyset_hp_ctx(const struct qo_keyset *ks)
{
    return (uint8_t *)ks->ctx_mem + 2 * (size_t)ks->actx;
}

/* Member order is cache-line order: what every packet reads or writes is in
 * the first 72 bytes (two lines, up to the end of key_packets, which
 * protect.c prefetches); the rest only on key updates, failures and in the
 * control path. */
struct qo_slot {
    _Atomic(struct qo_keyset *) ks; /* NULL = free slot */
    _Atomic uint32_t handle_gen;    /* bumped on remove */
    /* Bumped by quicoff_conn_replace before it restarts the state below: a
     * worker writes the state only while its keyset's state_gen is this one
     * (protect.c, state_of), so a packet of the replaced entry still in a
     * burst cannot start the new entry with the old one's PN or counters. */
    _Atomic uint32_t state_gen;
    uint32_t index;
    /* data-plane state: one writer (the worker serving the connection) */
    _Atomic uint32_t cur_gen;
    _Atomic uint64_t largest_pn; /* UINT64_MAX = none */
    _Atomic uint64_t packets, bytes, auth_failures;
    _Atomic uint64_t key_packets[2]; /* per phase slot: packets with that key */
    /* the hot lines end here */
    _Atomic uint64_t gen_first_pn; /* first PN seen in the current generation */
    _Atomic uint64_t malformed, key_phase_unavailable, key_updates;
    struct qo_retire_node retire; /* slot reuse waits for the grace period */
} __attribute__((aligned(QO_CACHE_LINE)));

struct qo_index {
    struct qo_retire_node retire;
    uint64_t mask;
    uint64_t used; /* live + tombstones (writer only) */
    _Atomic uint64_t cells[];
};

/* Per-worker counters, each written by its worker only. Only _Atomic
 * uint64_t members: counters_fold() walks them as an array. */
struct qo_counters {
    _Atomic uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, auth_failures, unknown_connection,
        malformed, key_phase_unavailable, usage_limit_reached, key_exhausted, unsupported,
        key_updates;
};

/*
 * Key schedules computed per burst (protect.c): for a table that outgrows
 * the cache, a chunk's AEAD contexts and header-protection round keys are
 * expanded from the raw keys into these, by the algorithms' expand, instead
 * of read from the keysets (2 key lines per packet instead of ~10:
 * docs/benchmarks.md, "Key schedules computed per burst").  One set per
 * worker, made with it when its table gets the level-by-level stages and
 * its backend has expand; zeroed then (the GCM contexts' zero lanes after
 * the powers of H must stay zero), wiped when the worker is destroyed.
 * Not wiped after each burst: that would cost ~18 KiB of stores per chunk,
 * and the next burst overwrites it anyway; the keys it holds are the
 * table's, which live as long in the keysets.
 */
#define QO_KEY_SCRATCH_KEYS 32 /* a chunk's packets (protect.c's QO_CHUNK) */
struct qo_key_scratch {
    void *aead[QO_KEY_SCRATCH_KEYS]; /* contexts of the largest expandable ctx_size */
    void *hp[QO_KEY_SCRATCH_KEYS];
    size_t size; /* bytes of the allocation (this struct and the contexts after it) */
};

struct quicoff_worker {
    _Atomic uint64_t announce; /* epoch.h */
    struct quicoff_table *table;
    int reader_index;
    struct qo_counters c;
    uint8_t *scratch; /* QO_SCRATCH_LEN, for backends that decrypt out of place */
    /* The backend's per-thread state (its worker_init; NULL if it has none),
     * e.g. ipsec-mb's job manager: made here, at worker creation, so the
     * data path never allocates it. */
    void *backend_state;
    /* Computed key schedules (above), or NULL: the table fits the cache, or
     * its backend computes none. */
    struct qo_key_scratch *keys;
    /* Open read-side sections: bursts and prepare..complete windows nest,
     * and only the outermost announces / leaves the epoch (a later prepare
     * must not let go of what an earlier, still open, one holds). */
    unsigned open;
} __attribute__((aligned(QO_CACHE_LINE)));

struct quicoff_table {
    /* read-mostly, used by the data path */
    struct qo_slot *slots;
    uint32_t capacity;
    uint8_t local_cid_len;
    /* Prefetch an entry level by level across the burst (protect.c): only
     * for a table whose entries cannot all stay in cache (set at creation
     * from capacity, table.c). For a small table the extra passes cost more
     * than the misses they hide. */
    bool prefetch_levels;
    uint64_t hash_seed;
    /* The keysets of such a table, one pool per suite (block sizes differ),
     * on huge pages (block_pool.h); NULL for a table that fits the cache,
     * whose keysets come from aligned_alloc. */
    struct qo_block_pool *keyset_pools;
    _Atomic(struct qo_index *) index;
    const qo_backend_t *backend;
    struct qo_epoch epoch;
    /* control path */
    pthread_mutex_t lock;
    uint32_t *free_slots; /* stack of free slot indexes */
    uint32_t free_count;
    uint64_t live;
    struct quicoff_worker **workers;
    uint16_t max_workers;
    struct qo_counters departed;    /* counters of destroyed workers */
    struct quicoff_key_hooks hooks; /* split API: per-key caller state */
    _Atomic uint64_t next_key_id;   /* key IDs: never reused */
};

/* Counter increment with one writer: plain load + store, no locked instruction. */
#define QO_ADD(field, n)                                                                        \
    atomic_store_explicit(&(field), atomic_load_explicit(&(field), memory_order_relaxed) + (n), \
                          memory_order_relaxed)
#define QO_GET(field) atomic_load_explicit(&(field), memory_order_relaxed)

/* Worker read-side section (epoch.h), nesting-aware: see quicoff_worker.open. */
static inline void qo_worker_enter(struct quicoff_worker *w)
{
    if (w->open++ == 0)
        qo_epoch_enter(&w->table->epoch, &w->announce);
}

static inline void qo_worker_exit(struct quicoff_worker *w)
{
    if (--w->open == 0)
        qo_epoch_exit(&w->announce);
}

/* The slot of a live handle, and its keyset; NULL for a handle of a removed
 * (or never added) entry. The caller holds the table mutex or is inside a
 * worker's read-side section, so the keyset stays valid while used. */
static inline struct qo_slot *qo_slot_of(const struct quicoff_table *t, quicoff_conn_t h,
                                         struct qo_keyset **ks)
{
    uint32_t slot = (uint32_t)h;
    if (slot >= t->capacity)
        return NULL;
    struct qo_slot *c = &t->slots[slot];
    *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
    if (!*ks || atomic_load_explicit(&c->handle_gen, memory_order_relaxed) != (uint32_t)(h >> 32))
        return NULL;
    return c;
}

/* Sizes of cache-line-aligned allocations. */
static inline size_t qo_round_up(size_t n)
{
    return (n + QO_CACHE_LINE - 1) & ~(size_t)(QO_CACHE_LINE - 1);
}

static inline quicoff_conn_t qo_handle(const struct qo_slot *c)
{
    return ((uint64_t)atomic_load_explicit(&c->handle_gen, memory_order_relaxed) << 32) | c->index;
}

#endif
