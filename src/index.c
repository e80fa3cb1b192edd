/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RX lookup index (table.h, struct qo_index): the seeded hash of a
 * lookup key, the data path's lock-free probe, and the writer's put, delete
 * and rebuild (control path, under the table mutex).
 */
#include "index.h"

#include "qo_bytes.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "cpu_x86.h"
#endif

#include <stdlib.h>
#include <string.h>

bool qo_far_prefetch_into_l1;

/* qo_prefetch_far's choice (index.h), made before any table exists: when
 * the library is loaded, so the data path only ever reads the flag. */
__attribute__((constructor)) static void choose_far_prefetch(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    qo_far_prefetch_into_l1 = qo_cpu_is_amd();
#endif
}

uint32_t qo_table_hash(const struct quicoff_table *t, uint8_t level, const uint8_t *dcid,
                       size_t dcid_len, const struct quicoff_addr *addr)
{
    return qo_hash_key(t, level, dcid, dcid_len, addr);
}

struct qo_slot *qo_table_lookup_hashed(const struct quicoff_table *t, uint32_t h, uint8_t level,
                                       const uint8_t *dcid, size_t dcid_len,
                                       const struct quicoff_addr *addr, struct qo_keyset **ks_out)
{
    return qo_index_probe(t, h, level, dcid, dcid_len, addr, ks_out);
}

struct qo_slot *qo_table_lookup(const struct quicoff_table *t, uint8_t level, const uint8_t *dcid,
                                size_t dcid_len, const struct quicoff_addr *addr,
                                struct qo_keyset **ks_out)
{
    return qo_table_lookup_hashed(t, qo_table_hash(t, level, dcid, dcid_len, addr), level, dcid,
                                  dcid_len, addr, ks_out);
}

static void release_index(struct qo_retire_node *n, void *owner)
{
    (void)owner;
    free(n); /* retire is the first member */
}

struct qo_index *qo_index_alloc(uint64_t cells)
{
    struct qo_index *ix = qo_alloc_big_zeroed(sizeof(*ix) + cells * sizeof(ix->cells[0]));
    if (ix) {
        ix->mask = cells - 1;
        ix->retire.release = release_index;
    }
    return ix;
}

void qo_index_put(struct qo_index *ix, uint32_t hash, uint32_t slot)
{
    uint64_t i = hash & ix->mask;
    for (;;) {
        uint64_t cell = atomic_load_explicit(&ix->cells[i], memory_order_relaxed);
        if (cell == 0 || (uint32_t)cell == QO_SLOT_TOMBSTONE) {
            if (cell == 0)
                ix->used++;
            atomic_store_explicit(&ix->cells[i], ((uint64_t)hash << 32) | (slot + 1),
                                  memory_order_seq_cst);
            return;
        }
        i = (i + 1) & ix->mask;
    }
}

void qo_index_del(struct qo_index *ix, uint32_t hash, uint32_t slot)
{
    uint64_t want = ((uint64_t)hash << 32) | (slot + 1);
    uint64_t i = hash & ix->mask;
    for (uint64_t probes = 0; probes <= ix->mask; probes++, i = (i + 1) & ix->mask) {
        uint64_t cell = atomic_load_explicit(&ix->cells[i], memory_order_relaxed);
        if (cell == 0)
            return;
        if (cell == want) {
            atomic_store_explicit(&ix->cells[i], ((uint64_t)hash << 32) | QO_SLOT_TOMBSTONE,
                                  memory_order_seq_cst);
            return;
        }
    }
}

/* Tombstones lengthen probe chains; when live + tombstones pass 3/4 of the
 * cells, build a clean index beside the old one and swap (readers that hold
 * the old one still find every entry that was live when they started). */
int qo_index_maybe_rebuild(struct quicoff_table *t)
{
    struct qo_index *old = atomic_load_explicit(&t->index, memory_order_relaxed);
    if (old->used * 4 < (old->mask + 1) * 3)
        return 0;
    struct qo_index *ix = qo_index_alloc(old->mask + 1);
    if (!ix)
        return -1;
    for (uint32_t s = 0; s < t->capacity; s++) {
        struct qo_keyset *ks = atomic_load_explicit(&t->slots[s].ks, memory_order_relaxed);
        if (ks && ks->direction == QUICOFF_DIR_RX)
            qo_index_put(ix, ks->hash, s);
    }
    atomic_store_explicit(&t->index, ix, memory_order_seq_cst);
    qo_epoch_retire(&t->epoch, &old->retire);
    return 0;
}
