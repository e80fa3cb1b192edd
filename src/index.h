/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RX lookup index (index.c): (level, DCID) or (level, local address +
 * port) -> slot. Readers (the data path) probe without a lock; the writer
 * (under the table mutex) puts, deletes, and rebuilds when tombstones pile up.
 */
#ifndef QUICOFF_INDEX_H
#define QUICOFF_INDEX_H

#include "qo_bytes.h"
#include "table.h"

#include <string.h>

/*
 * The hash and the probe, inline: the data path (protect.c) calls them for
 * every packet, and with the CID length a constant (its short headers carry
 * the table's local_cid_len) the compiler drops the loops and the tail for
 * the common lengths. index.c's qo_table_hash / qo_table_lookup_hashed are
 * the same functions out of line, for the control path.
 */
static inline uint64_t qo_mix64(uint64_t x)
{
    /* splitmix64 finaliser: cheap, and every input bit reaches every output bit */
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/*
 * The last n (1..7) key bytes p[0..n) as a word, high bytes zero (on a
 * little-endian CPU exactly what memcpy into a zeroed word gives; elsewhere
 * another, equally good, function of the same bytes), without the stack
 * round trip: a variable-length copy then a wider load stalls on store
 * forwarding, on every lookup.  before: key bytes readable in front of p.
 */
static inline uint64_t qo_load_tail(const uint8_t *p, size_t n, size_t before)
{
    if (before + n >= 8) /* the 8 bytes ending at p + n, shifted down */
        return qo_load_host64(p + n - 8) >> (8 * (8 - n));
    if (n >= 4) /* two overlapping words: the shared bytes are equal */
        return qo_load_host32(p) | (uint64_t)qo_load_host32(p + n - 4) << (8 * (n - 4));
    return p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) | (uint64_t)p[n - 1] << (8 * (n - 1));
}

static inline uint32_t qo_hash_key(const struct quicoff_table *t, uint8_t level,
                                   const uint8_t *dcid, size_t dcid_len,
                                   const struct quicoff_addr *addr)
{
    /* Seeded per table: the DCID bytes come from the network, so an attacker
     * must not be able to aim packets at one probe chain. */
    uint64_t h = t->hash_seed ^ ((uint64_t)level << 56) ^ ((uint64_t)dcid_len << 48);
    uint8_t buf[24];
    const uint8_t *key = dcid;
    size_t n = dcid_len;
    if (dcid_len == 0 && addr && addr->family != 0) {
        /* zero-length CID: the local address + port is the key (a packet
         * carries no DCID to tell the connections apart) */
        memset(buf, 0, sizeof(buf));
        buf[0] = addr->family;
        /* only the bytes key_matches() compares: an IPv4 lookup must not
         * depend on whatever the caller left in ip[4..15] */
        memcpy(buf + 1, addr->ip, addr->family == 4 ? 4 : 16);
        qo_store_be16(buf + 17, addr->port);
        key = buf;
        n = 19;
    }
    const uint8_t *p = key;
    while (n >= 8) {
        h = qo_mix64(h ^ qo_load_host64(p));
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = qo_load_tail(p, n, (size_t)(p - key));
        h = qo_mix64(h ^ w ^ ((uint64_t)n << 60));
    }
    h = qo_mix64(h);
    uint32_t h32 = (uint32_t)(h >> 32);
    return h32 ? h32 : 1; /* 0 is reserved: an empty cell is all zero */
}

/* memcmp(a, b, n) == 0 for a connection ID (n <= 20) without a library call
 * on every lookup: word compares, the last one overlapping, never reading
 * past a[n - 1] or b[n - 1]. */
static inline bool qo_cid_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
    if (n >= 8) {
        uint64_t d = qo_load_host64(a + n - 8) ^ qo_load_host64(b + n - 8);
        for (size_t i = 0; i + 8 < n; i += 8)
            d |= qo_load_host64(a + i) ^ qo_load_host64(b + i);
        return d == 0;
    }
    if (n >= 4)
        return ((qo_load_host32(a) ^ qo_load_host32(b)) |
                (qo_load_host32(a + n - 4) ^ qo_load_host32(b + n - 4))) == 0;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

static inline bool qo_key_matches(const struct qo_keyset *ks, uint8_t level, const uint8_t *dcid,
                                  size_t dcid_len, const struct quicoff_addr *addr)
{
    if (ks->direction != QUICOFF_DIR_RX || ks->level != level || ks->dcid_len != dcid_len)
        return false;
    if (dcid_len)
        return qo_cid_equal(ks->dcid, dcid, dcid_len);
    if (!addr || addr->family == 0)
        return ks->addr.family == 0;
    return ks->addr.family == addr->family && ks->addr.port == addr->port &&
           memcmp(ks->addr.ip, addr->ip, addr->family == 4 ? 4 : 16) == 0;
}

static inline struct qo_slot *qo_index_probe(const struct quicoff_table *t, uint32_t h,
                                             uint8_t level, const uint8_t *dcid, size_t dcid_len,
                                             const struct quicoff_addr *addr,
                                             struct qo_keyset **ks_out)
{
    const struct qo_index *ix = atomic_load_explicit(&t->index, memory_order_acquire);
    uint64_t i = h & ix->mask;
    for (uint64_t probes = 0; probes <= ix->mask; probes++, i = (i + 1) & ix->mask) {
        uint64_t cell = atomic_load_explicit(&ix->cells[i], memory_order_acquire);
        if (cell == 0)
            return NULL;
        uint32_t slot1 = (uint32_t)cell;
        if ((uint32_t)(cell >> 32) != h || slot1 == QO_SLOT_TOMBSTONE)
            continue;
        struct qo_slot *c = &t->slots[slot1 - 1];
        struct qo_keyset *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
        if (ks && qo_key_matches(ks, level, dcid, dcid_len, addr)) {
            *ks_out = ks;
            return c;
        }
    }
    return NULL;
}

uint32_t qo_table_hash(const struct quicoff_table *t, uint8_t level, const uint8_t *dcid,
                       size_t dcid_len, const struct quicoff_addr *addr);
/* Data-path lookup of an RX entry; returns the slot or NULL, and its keyset. */
struct qo_slot *qo_table_lookup(const struct quicoff_table *t, uint8_t level, const uint8_t *dcid,
                                size_t dcid_len, const struct quicoff_addr *addr,
                                struct qo_keyset **ks_out);

/* The same in two steps, so a burst can prefetch every packet's index cell
 * (qo_table_prefetch) before it probes any. */
struct qo_slot *qo_table_lookup_hashed(const struct quicoff_table *t, uint32_t hash, uint8_t level,
                                       const uint8_t *dcid, size_t dcid_len,
                                       const struct quicoff_addr *addr, struct qo_keyset **ks_out);

/*
 * Where a prefetch of a line that is probably in DRAM, asked for a pass or
 * more before it is read, goes: L1 (prefetcht0) on AMD cores, L2
 * (prefetcht1) on the others.  Chosen once, when the library is loaded
 * (index.c), from the CPU's vendor, because the two disagree and by a lot:
 * on an Intel Xeon an L1 prefetch holds one of the L1's ~16 fill buffers
 * for the whole DRAM round trip, and with a burst's lines all in flight
 * those buffers bounded the engine at 10^6 active connections (L2: 0.93-0.96x
 * the time); on an AMD EPYC the L2 prefetches are what stall, and L1 takes
 * 0.55x (protect) and 0.79x (unprotect) the time of L2 (docs/benchmarks.md,
 * "Prefetching into L2" and "On AMD: into L1").  The test is a load of a
 * flag written only at load and a branch that always goes the same way.
 */
extern bool qo_far_prefetch_into_l1;

static inline void qo_prefetch_far(const void *p)
{
    if (qo_far_prefetch_into_l1)
        __builtin_prefetch(p, 0, 3);
    else
        __builtin_prefetch(p, 0, 2);
}

static inline void qo_table_prefetch(const struct quicoff_table *t, uint32_t hash)
{
    const struct qo_index *ix = atomic_load_explicit(&t->index, memory_order_relaxed);
    qo_prefetch_far(&ix->cells[hash & ix->mask]);
}

/* The cache lines of [p, p + len): a burst asks for all the lines its
 * packets will read before it reads any, so the misses overlap.  Every
 * line, not one per 128-byte pair (counting on the adjacent-line prefetcher
 * for the partner): on the Intel Xeon VM with L2 prefetches the partner was
 * not there in time (one per line: 0.91-0.95x the time at 10^6 active), and
 * on the AMD EPYC VM with L1 prefetches one per line is 0.93-0.94x the time
 * of one per pair as well (docs/benchmarks.md, "Prefetching into L2", "On
 * AMD: into L1"). */
static inline void qo_prefetch_range(const void *p, size_t len)
{
    const char *b = (const char *)((uintptr_t)p & ~(uintptr_t)(QO_CACHE_LINE - 1));
    const char *e = (const char *)p + len;
    for (; b < e; b += QO_CACHE_LINE)
        qo_prefetch_far(b);
}

/* The slot the first probe of hash names, or NULL: only a hint for the
 * prefetches below (a longer chain or a fingerprint collision is found by
 * the real lookup, just without the head start). Reads the cell, which
 * qo_table_prefetch asked for one stage before. */
static inline struct qo_slot *qo_table_first_slot(const struct quicoff_table *t, uint32_t hash)
{
    const struct qo_index *ix = atomic_load_explicit(&t->index, memory_order_acquire);
    uint64_t cell = atomic_load_explicit(&ix->cells[hash & ix->mask], memory_order_relaxed);
    uint32_t slot1 = (uint32_t)cell;
    if ((uint32_t)(cell >> 32) != hash || slot1 == 0 || slot1 == QO_SLOT_TOMBSTONE)
        return NULL;
    return &t->slots[slot1 - 1];
}

/* Writer side (table mutex held). cells: a power of two. */
struct qo_index *qo_index_alloc(uint64_t cells);
void qo_index_put(struct qo_index *ix, uint32_t hash, uint32_t slot);
void qo_index_del(struct qo_index *ix, uint32_t hash, uint32_t slot);
/* Swaps in a clean copy when live + tombstones pass 3/4; -1: no memory (the
 * old index stays, correct but slower). */
int qo_index_maybe_rebuild(struct quicoff_table *t);

#endif
