/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The RX lookup index (table.h, struct qo_index): the seeded hash of a
 * lookup key, the data path's lock-free probe, and the writer's put, delete
 * and rebuild (control path, under the table mutex).
 */
#include "index.h"

#include "qo_bytes.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t mix64(uint64_t x)
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
static inline uint64_t load_tail(const uint8_t *p, size_t n, size_t before)
{
    if (before + n >= 8) /* the 8 bytes ending at p + n, shifted down */
        return qo_load_host64(p + n - 8) >> (8 * (8 - n));
    if (n >= 4) /* two overlapping words: the shared bytes are equal */
        return qo_load_host32(p) | (uint64_t)qo_load_host32(p + n - 4) << (8 * (n - 4));
    return p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) | (uint64_t)p[n - 1] << (8 * (n - 1));
}

uint32_t qo_table_hash(const struct quicoff_table *t, uint8_t level, const uint8_t *dcid,
                       size_t dcid_len, const struct quicoff_addr *addr)
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
        h = mix64(h ^ qo_load_host64(p));
        p += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = load_tail(p, n, (size_t)(p - key));
        h = mix64(h ^ w ^ ((uint64_t)n << 60));
    }
    h = mix64(h);
    uint32_t h32 = (uint32_t)(h >> 32);
    return h32 ? h32 : 1; /* 0 is reserved: an empty cell is all zero */
}

/* memcmp(a, b, n) == 0 for a connection ID (n <= 20) without a library call
 * on every lookup: word compares, the last one overlapping, never reading
 * past a[n - 1] or b[n - 1]. */
static inline bool cid_equal(const uint8_t *a, const uint8_t *b, size_t n)
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

static bool key_matches(const struct qo_keyset *ks, uint8_t level, const uint8_t *dcid,
                        size_t dcid_len, const struct quicoff_addr *addr)
{
    if (ks->direction != QUICOFF_DIR_RX || ks->level != level || ks->dcid_len != dcid_len)
        return false;
    if (dcid_len)
        return cid_equal(ks->dcid, dcid, dcid_len);
    if (!addr || addr->family == 0)
        return ks->addr.family == 0;
    return ks->addr.family == addr->family && ks->addr.port == addr->port &&
           memcmp(ks->addr.ip, addr->ip, addr->family == 4 ? 4 : 16) == 0;
}

struct qo_slot *qo_table_lookup_hashed(const struct quicoff_table *t, uint32_t h, uint8_t level,
                                       const uint8_t *dcid, size_t dcid_len,
                                       const struct quicoff_addr *addr, struct qo_keyset **ks_out)
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
        if (ks && key_matches(ks, level, dcid, dcid_len, addr)) {
            *ks_out = ks;
            return c;
        }
    }
    return NULL;
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
