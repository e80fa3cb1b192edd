/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RX lookup index (index.c): (level, DCID) or (level, local address +
 * port) -> slot. Readers (the data path) probe without a lock; the writer
 * (under the table mutex) puts, deletes, and rebuilds when tombstones pile up.
 */
#ifndef QUICOFF_INDEX_H
#define QUICOFF_INDEX_H

#include "table.h"

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

static inline void qo_table_prefetch(const struct quicoff_table *t, uint32_t hash)
{
    const struct qo_index *ix = atomic_load_explicit(&t->index, memory_order_relaxed);
    __builtin_prefetch(&ix->cells[hash & ix->mask]);
}

/* Every cache line of [p, p + len): a burst asks for all the lines its
 * packets will read before it reads any, so the misses overlap. */
static inline void qo_prefetch_range(const void *p, size_t len)
{
    const char *b = (const char *)((uintptr_t)p & ~(uintptr_t)(QO_CACHE_LINE - 1));
    const char *e = (const char *)p + len;
    for (; b < e; b += QO_CACHE_LINE)
        __builtin_prefetch(b);
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
