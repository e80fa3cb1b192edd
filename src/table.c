/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection table: creation, add / update / remove (control path,
 * serialised by a mutex, may allocate), lookup (data path, lock-free), and
 * counters. See table.h for the layout and epoch.h for reclamation.
 */
#include "table.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#define QO_DEFAULT_MAX_WORKERS 64

/* ---------------------------------------------------------------- hashing */

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

/* Unaligned host-order loads: one instruction each. */
static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
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
        return load64(p + n - 8) >> (8 * (8 - n));
    if (n >= 4) /* two overlapping words: the shared bytes are equal */
        return load32(p) | (uint64_t)load32(p + n - 4) << (8 * (n - 4));
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
        /* zero-length CID: the local address + port is the key (seed 002 §3.3.1) */
        memset(buf, 0, sizeof(buf));
        buf[0] = addr->family;
        /* only the bytes key_matches() compares: an IPv4 lookup must not
         * depend on whatever the caller left in ip[4..15] */
        memcpy(buf + 1, addr->ip, addr->family == 4 ? 4 : 16);
        buf[17] = (uint8_t)(addr->port >> 8);
        buf[18] = (uint8_t)addr->port;
        key = buf;
        n = 19;
    }
    const uint8_t *p = key;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = mix64(h ^ w);
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
        uint64_t d = load64(a + n - 8) ^ load64(b + n - 8);
        for (size_t i = 0; i + 8 < n; i += 8)
            d |= load64(a + i) ^ load64(b + i);
        return d == 0;
    }
    if (n >= 4)
        return ((load32(a) ^ load32(b)) | (load32(a + n - 4) ^ load32(b + n - 4))) == 0;
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

struct qo_conn *qo_table_lookup_hashed(const struct quicoff_table *t, uint32_t h, uint8_t level,
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
        struct qo_conn *c = &t->conns[slot1 - 1];
        struct qo_keyset *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
        if (ks && key_matches(ks, level, dcid, dcid_len, addr)) {
            *ks_out = ks;
            return c;
        }
    }
    return NULL;
}

struct qo_conn *qo_table_lookup(const struct quicoff_table *t, uint8_t level,
                                const uint8_t *dcid, size_t dcid_len,
                                const struct quicoff_addr *addr, struct qo_keyset **ks_out)
{
    return qo_table_lookup_hashed(t, qo_table_hash(t, level, dcid, dcid_len, addr), level, dcid,
                                  dcid_len, addr, ks_out);
}

/* ------------------------------------------------------------ index (writer) */

static void release_index(struct qo_retire_node *n, void *owner)
{
    (void)owner;
    free(n); /* retire is the first member */
}

static struct qo_index *index_alloc(uint64_t cells)
{
    struct qo_index *ix = calloc(1, sizeof(*ix) + cells * sizeof(ix->cells[0]));
    if (ix) {
        ix->mask = cells - 1;
        ix->retire.release = release_index;
    }
    return ix;
}

static void index_put(struct qo_index *ix, uint32_t hash, uint32_t slot)
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

static void index_del(struct qo_index *ix, uint32_t hash, uint32_t slot)
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
static int index_maybe_rebuild(struct quicoff_table *t)
{
    struct qo_index *old = atomic_load_explicit(&t->index, memory_order_relaxed);
    if (old->used * 4 < (old->mask + 1) * 3)
        return 0;
    struct qo_index *ix = index_alloc(old->mask + 1);
    if (!ix)
        return -1;
    for (uint32_t s = 0; s < t->capacity; s++) {
        struct qo_keyset *ks = atomic_load_explicit(&t->conns[s].ks, memory_order_relaxed);
        if (ks && ks->direction == QUICOFF_DIR_RX)
            index_put(ix, ks->hash, s);
    }
    atomic_store_explicit(&t->index, ix, memory_order_seq_cst);
    qo_epoch_retire(&t->epoch, &old->retire);
    return 0;
}

static size_t round_up(size_t n)
{
    return (n + QO_CACHE_LINE - 1) & ~(size_t)(QO_CACHE_LINE - 1);
}

/* ---------------------------------------------------------------- key hooks */

static void key_info(const struct qo_keyset *ks, unsigned p, struct quicoff_key_info *ki)
{
    const struct qo_keymeta *m = &ks->meta[p];
    memset(ki, 0, sizeof(*ki));
    ki->key_id = m->id;
    ki->direction = (quicoff_direction_t)ks->direction;
    ki->level = (quicoff_level_t)ks->level;
    ki->suite = (quicoff_suite_t)ks->suite;
    ki->generation = m->gen;
    ki->key_phase = (uint8_t)p;
    ki->dcid_len = ks->dcid_len;
    ki->key_len = (uint8_t)ks->aead->key_len;
    ki->user = m->user;
}

/* Reports the key of slot p to the retire hook if this keyset owns it, and
 * forgets it. Only for keys no worker can reach any more: a released
 * keyset's, or one never published. */
static void key_retire(const struct quicoff_table *t, struct qo_keyset *ks, unsigned p)
{
    struct qo_keymeta *m = &ks->meta[p];
    if (m->owner && m->hooked && t->hooks.retire) {
        struct quicoff_key_info ki;
        key_info(ks, p, &ki);
        t->hooks.retire(t->hooks.arg, &ki);
    }
    memset(m, 0, sizeof(*m));
}

/* The key just installed in slot p of a keyset not yet published: a fresh
 * ID, and the install hook's consent. */
static quicoff_status_t key_register(struct quicoff_table *t, struct qo_keyset *ks, unsigned p)
{
    key_retire(t, ks, p); /* an owned key it replaces was never published */
    struct qo_keymeta *m = &ks->meta[p];
    m->id = atomic_fetch_add_explicit(&t->next_key_id, 1, memory_order_relaxed);
    m->gen = ks->phase[p].gen;
    m->owner = 1;
    if (!t->hooks.install)
        return QUICOFF_OK;
    struct quicoff_key_info ki;
    key_info(ks, p, &ki);
    ki.key = ks->phase[p].key;
    void *user = NULL;
    quicoff_status_t st = t->hooks.install(t->hooks.arg, &ki, &user);
    if (st != QUICOFF_OK) {
        memset(m, 0, sizeof(*m));
        return st;
    }
    m->user = user;
    m->hooked = 1;
    return QUICOFF_OK;
}

/* ks replaces old in its slot: the keys ks took over from old (same ID) are
 * now ks's to retire; old retires only the keys that die with it. */
static void keys_take_over(struct qo_keyset *ks, struct qo_keyset *old)
{
    for (unsigned p = 0; p < 2; p++) {
        if (ks->meta[p].id && !ks->meta[p].owner && old->meta[p].id == ks->meta[p].id) {
            ks->meta[p].owner = old->meta[p].owner;
            old->meta[p].owner = 0;
        }
    }
}

quicoff_status_t quicoff_table_set_key_hooks(struct quicoff_table *t,
                                             const struct quicoff_key_hooks *hooks)
{
    if (!t)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st = QUICOFF_OK;
    pthread_mutex_lock(&t->lock);
    /* Keys installed before would reach retire without install. */
    if (atomic_load_explicit(&t->next_key_id, memory_order_relaxed) != 1)
        st = QUICOFF_INVALID_ARGUMENT;
    else if (hooks)
        t->hooks = *hooks;
    else
        memset(&t->hooks, 0, sizeof(t->hooks));
    pthread_mutex_unlock(&t->lock);
    return st;
}

/* ---------------------------------------------------------------- keysets */

static void keyset_free(const struct quicoff_table *t, struct qo_keyset *ks)
{
    if (!ks)
        return;
    for (unsigned p = 0; p < 2; p++)
        key_retire(t, ks, p);
    for (int p = 0; p < 2; p++)
        if (ks->phase[p].present)
            ks->aead->dispose(ks->phase[p].aead_ctx);
    if (ks->hp_ctx)
        ks->hp->dispose(ks->hp_ctx);
    qo_secure_zero(ks, ks->alloc_size);
    free(ks);
}

static void release_keyset(struct qo_retire_node *n, void *owner)
{
    keyset_free(owner, (struct qo_keyset *)n);
}

static struct qo_keyset *keyset_alloc(const struct quicoff_table *t, quicoff_suite_t suite)
{
    const qo_aead_algo_t *aead = t->backend->aead[suite];
    const qo_hp_algo_t *hp = t->backend->hp[suite];
    size_t actx = round_up(aead->ctx_size), hctx = round_up(hp->ctx_size);
    size_t size = round_up(sizeof(struct qo_keyset)) + 2 * actx + hctx;
    struct qo_keyset *ks = aligned_alloc(QO_CACHE_LINE, size);
    if (!ks)
        return NULL;
    memset(ks, 0, size);
    ks->alloc_size = size;
    ks->aead = aead;
    ks->hp = hp;
    ks->suite = (uint8_t)suite;
    ks->phase[0].aead_ctx = ks->ctx_mem;
    ks->phase[1].aead_ctx = ks->ctx_mem + actx;
    ks->retire.release = release_keyset;
    return ks;
}

/* Installs raw keys of generation gen in its phase slot (context set up). */
static quicoff_status_t keyset_install(struct qo_keyset *ks, uint32_t gen,
                                       const uint8_t *key, const uint8_t *iv)
{
    struct qo_keyslot *s = &ks->phase[gen & 1];
    if (s->present) {
        ks->aead->dispose(s->aead_ctx);
        s->present = 0;
    }
    memcpy(s->key, key, ks->aead->key_len);
    memcpy(s->iv, iv, QUICOFF_IV_LEN);
    if (ks->aead->setup(s->aead_ctx, s->key) != 0)
        return QUICOFF_BACKEND_UNAVAILABLE;
    s->gen = gen;
    s->present = 1;
    return QUICOFF_OK;
}

static quicoff_status_t keyset_set_hp(struct qo_keyset *ks, const uint8_t *hp_key)
{
    memcpy(ks->hp_key, hp_key, ks->hp->key_len);
    ks->hp_ctx = ks->ctx_mem + 2 * round_up(ks->aead->ctx_size);
    return ks->hp->setup(ks->hp_ctx, ks->hp_key) == 0 ? QUICOFF_OK
                                                       : QUICOFF_BACKEND_UNAVAILABLE;
}

/* A copy of ks with fresh contexts (contexts are never shared between
 * keysets, so each is disposed exactly once). */
static struct qo_keyset *keyset_clone(const struct quicoff_table *t, const struct qo_keyset *old)
{
    struct qo_keyset *ks = keyset_alloc(t, (quicoff_suite_t)old->suite);
    if (!ks)
        return NULL;
    size_t hdr = offsetof(struct qo_keyset, phase);
    memcpy((uint8_t *)ks + sizeof(ks->retire), (const uint8_t *)old + sizeof(old->retire),
           hdr - sizeof(old->retire));
    ks->retire.release = release_keyset;
    for (int p = 0; p < 2; p++)
        if (old->phase[p].present &&
            keyset_install(ks, old->phase[p].gen, old->phase[p].key, old->phase[p].iv) != QUICOFF_OK)
            goto fail;
    if (keyset_set_hp(ks, old->hp_key) != QUICOFF_OK)
        goto fail;
    /* same keys, same IDs; old keeps ownership until ks replaces it */
    for (int p = 0; p < 2; p++) {
        ks->meta[p] = old->meta[p];
        ks->meta[p].owner = 0;
    }
    return ks;
fail:
    keyset_free(t, ks);
    return NULL;
}

static uint64_t default_threshold(const struct qo_keyset *ks)
{
    return ks->hard_limit / 4 * 3;
}

/* Keys from raw material or a secret; next: "quic ku" of the secret. */
static quicoff_status_t keys_from(quicoff_suite_t suite, uint32_t version,
                                  const struct quicoff_packet_keys *raw, const uint8_t *secret,
                                  size_t secret_len, struct quicoff_packet_keys *out)
{
    if (!secret) {
        *out = *raw;
        return QUICOFF_OK;
    }
    return quicoff_derive_packet_keys(suite, secret, secret_len, version, out);
}

/* ------------------------------------------------------------ table life */

struct quicoff_table *quicoff_table_create(const struct quicoff_table_config *cfg,
                                           quicoff_status_t *err)
{
    quicoff_status_t st = QUICOFF_INVALID_ARGUMENT;
    struct quicoff_table *t = NULL;
    if (!cfg || cfg->capacity == 0 || cfg->capacity >= (1u << 31) ||
        cfg->local_cid_len > QUICOFF_MAX_CID_LEN)
        goto out;
    st = QUICOFF_BACKEND_UNAVAILABLE;
    const qo_backend_t *be = qo_backend_find(cfg->backend);
    if (!be)
        goto out;
    st = QUICOFF_NO_MEMORY;
    t = calloc(1, sizeof(*t));
    if (!t)
        goto out;
    t->backend = be;
    t->capacity = cfg->capacity;
    t->local_cid_len = cfg->local_cid_len;
    t->max_workers = cfg->max_workers ? cfg->max_workers : QO_DEFAULT_MAX_WORKERS;
    if (RAND_bytes((unsigned char *)&t->hash_seed, sizeof(t->hash_seed)) != 1)
        goto fail;
    pthread_mutex_init(&t->lock, NULL);
    t->conns = aligned_alloc(QO_CACHE_LINE, round_up(sizeof(struct qo_conn) * t->capacity));
    t->free_slots = malloc(sizeof(uint32_t) * t->capacity);
    t->workers = calloc(t->max_workers, sizeof(*t->workers));
    uint64_t cells = 16;
    while (cells < (uint64_t)t->capacity * 2)
        cells <<= 1;
    struct qo_index *ix = index_alloc(cells);
    if (!t->conns || !t->free_slots || !t->workers || !ix ||
        qo_epoch_init(&t->epoch, t->max_workers) != 0) {
        free(ix);
        goto fail;
    }
    atomic_init(&t->index, ix);
    atomic_init(&t->next_key_id, 1); /* 0 = no key */
    memset(t->conns, 0, sizeof(struct qo_conn) * t->capacity);
    for (uint32_t i = 0; i < t->capacity; i++) {
        t->conns[i].index = i;
        t->free_slots[i] = t->capacity - 1 - i; /* pop order 0, 1, 2, ... */
    }
    t->free_count = t->capacity;
    if (err)
        *err = QUICOFF_OK;
    return t;
fail:
    free(t->conns);
    free(t->free_slots);
    free(t->workers);
    free(t);
    t = NULL;
out:
    if (err)
        *err = st;
    return t;
}

static void release_slot(struct qo_retire_node *n, void *owner)
{
    struct quicoff_table *t = owner;
    struct qo_conn *c = (struct qo_conn *)((uint8_t *)n - offsetof(struct qo_conn, retire));
    t->free_slots[t->free_count++] = c->index;
}

void quicoff_table_destroy(struct quicoff_table *t)
{
    if (!t)
        return;
    qo_epoch_fini(&t->epoch, t);
    for (uint32_t i = 0; i < t->capacity; i++)
        keyset_free(t, atomic_load_explicit(&t->conns[i].ks, memory_order_relaxed));
    free(atomic_load_explicit(&t->index, memory_order_relaxed));
    free(t->conns);
    free(t->free_slots);
    free(t->workers);
    pthread_mutex_destroy(&t->lock);
    free(t);
}

const char *quicoff_table_backend(const struct quicoff_table *t)
{
    return t->backend->name;
}

/* ------------------------------------------------------------ connections */

void quicoff_conn_config_init(struct quicoff_conn_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->direction = QUICOFF_DIR_TX;
    cfg->level = QUICOFF_LEVEL_ONE_RTT;
    cfg->suite = QUICOFF_AES_128_GCM;
    cfg->version = QUICOFF_VERSION_1;
    cfg->largest_pn = UINT64_MAX;
    /* On: a stack that advertised grease_quic_bit gets its packets; one that
     * did not says so (RFC 9287 leaves the choice to the endpoint). */
    cfg->grease_quic_bit = true;
}

static bool version_ok(uint32_t v)
{
    return v == 0 || v == QUICOFF_VERSION_1 || v == QUICOFF_VERSION_2;
}

/* A largest PN is a QUIC packet number (at most 2^62 - 1, RFC 9000 §12.3) or
 * UINT64_MAX for none. Past that, PN decoding has no window that holds any
 * packet, so the entry would fail every packet it gets (and count each toward
 * the integrity limit); the wire path refuses the same values. */
static bool largest_pn_ok(uint64_t pn)
{
    return pn <= (UINT64_C(1) << 62) - 1 || pn == UINT64_MAX;
}

static struct qo_conn *conn_of(struct quicoff_table *t, quicoff_conn_t h, struct qo_keyset **ks)
{
    uint32_t slot = (uint32_t)h;
    if (slot >= t->capacity)
        return NULL;
    struct qo_conn *c = &t->conns[slot];
    *ks = atomic_load_explicit(&c->ks, memory_order_acquire);
    if (!*ks || atomic_load_explicit(&c->handle_gen, memory_order_relaxed) != (uint32_t)(h >> 32))
        return NULL;
    return c;
}

/* What quicoff_conn_add and quicoff_conn_replace refuse before building anything (build_keyset). */
static quicoff_status_t config_check(const struct quicoff_table *t,
                                     const struct quicoff_conn_config *cfg)
{
    if (!t || !cfg || (unsigned)cfg->suite >= QUICOFF_SUITE_COUNT ||
        (unsigned)cfg->level >= QUICOFF_LEVEL_COUNT || cfg->dcid_len > QUICOFF_MAX_CID_LEN ||
        (unsigned)cfg->direction > QUICOFF_DIR_RX || (unsigned)cfg->nonce_layout > 2 ||
        (unsigned)cfg->fail_action > 1 || !version_ok(cfg->version) ||
        !largest_pn_ok(cfg->largest_pn) ||
        (cfg->secret && (cfg->secret_len != quicoff_suite_secret_len(cfg->suite))) ||
        (cfg->level != QUICOFF_LEVEL_ONE_RTT && cfg->key_generation != 0) ||
        (cfg->dcid_len == 0 && cfg->direction == QUICOFF_DIR_RX && cfg->local_addr.family != 0 &&
         cfg->local_addr.family != 4 && cfg->local_addr.family != 6))
        return QUICOFF_INVALID_ARGUMENT;
    /* An RX short-header entry must carry a DCID of the length the table parses. */
    if (cfg->direction == QUICOFF_DIR_RX && cfg->level == QUICOFF_LEVEL_ONE_RTT &&
        cfg->dcid_len != t->local_cid_len)
        return QUICOFF_INVALID_ARGUMENT;
    return QUICOFF_OK;
}

/* The keyset of a new entry (add, replace): the configuration checked, the
 * keys derived and their contexts set up, off the lock and before any entry
 * is touched. */
static quicoff_status_t build_keyset(struct quicoff_table *t, const struct quicoff_conn_config *cfg,
                                     struct qo_keyset **out)
{
    struct quicoff_packet_keys k, next;
    quicoff_status_t st = config_check(t, cfg);
    if (st != QUICOFF_OK)
        return st;
    uint32_t version = cfg->version ? cfg->version : QUICOFF_VERSION_1;
    struct qo_keyset *ks = keyset_alloc(t, cfg->suite);
    if (!ks)
        return QUICOFF_NO_MEMORY;
    ks->direction = (uint8_t)cfg->direction;
    ks->level = (uint8_t)cfg->level;
    ks->nonce_layout = (uint8_t)cfg->nonce_layout;
    ks->fail_action = (uint8_t)cfg->fail_action;
    ks->grease_quic_bit = cfg->grease_quic_bit;
    ks->version = version;
    ks->path_id = cfg->path_id;
    ks->user = cfg->user;
    ks->dcid_len = cfg->dcid_len;
    memcpy(ks->dcid, cfg->dcid, cfg->dcid_len);
    if (cfg->dcid_len == 0)
        ks->addr = cfg->local_addr;
    ks->hash = qo_table_hash(t, ks->level, ks->dcid, ks->dcid_len, &ks->addr);
    ks->hard_limit = cfg->direction == QUICOFF_DIR_TX ? ks->aead->confidentiality_limit
                                                      : ks->aead->integrity_limit;
    ks->threshold = cfg->usage_threshold ? cfg->usage_threshold : default_threshold(ks);

    st = keys_from(cfg->suite, version, &cfg->keys, cfg->secret, cfg->secret_len, &k);
    if (st == QUICOFF_OK)
        st = keyset_install(ks, cfg->key_generation, k.key, k.iv);
    if (st == QUICOFF_OK)
        st = keyset_set_hp(ks, k.hp);
    if (st == QUICOFF_OK)
        st = key_register(t, ks, cfg->key_generation & 1);
    if (st == QUICOFF_OK && cfg->level == QUICOFF_LEVEL_ONE_RTT &&
        (cfg->has_next_keys || cfg->secret)) {
        if (cfg->has_next_keys) {
            next = cfg->next_keys;
        } else {
            uint8_t ns[QUICOFF_MAX_SECRET_LEN];
            st = quicoff_derive_next_secret(cfg->suite, cfg->secret, cfg->secret_len, version, ns);
            if (st == QUICOFF_OK)
                st = quicoff_derive_packet_keys(cfg->suite, ns, cfg->secret_len, version, &next);
            qo_secure_zero(ns, sizeof(ns));
        }
        if (st == QUICOFF_OK)
            st = keyset_install(ks, cfg->key_generation + 1, next.key, next.iv);
        if (st == QUICOFF_OK)
            st = key_register(t, ks, (cfg->key_generation + 1) & 1);
        qo_secure_zero(&next, sizeof(next));
    }
    qo_secure_zero(&k, sizeof(k));
    if (st != QUICOFF_OK) {
        keyset_free(t, ks);
        return st;
    }
    *out = ks;
    return QUICOFF_OK;
}

/* A slot's data-plane state as a new entry starts it (add, replace). */
static void conn_state_init(struct qo_conn *c, const struct quicoff_conn_config *cfg)
{
    uint64_t largest = cfg->largest_pn;
    atomic_store_explicit(&c->largest_pn, largest, memory_order_relaxed);
    atomic_store_explicit(&c->gen_first_pn, largest == UINT64_MAX ? 0 : largest + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&c->cur_gen, cfg->key_generation, memory_order_relaxed);
    atomic_store_explicit(&c->packets, 0, memory_order_relaxed);
    atomic_store_explicit(&c->bytes, 0, memory_order_relaxed);
    atomic_store_explicit(&c->auth_failures, 0, memory_order_relaxed);
    atomic_store_explicit(&c->malformed, 0, memory_order_relaxed);
    atomic_store_explicit(&c->key_phase_unavailable, 0, memory_order_relaxed);
    atomic_store_explicit(&c->key_updates, 0, memory_order_relaxed);
    atomic_store_explicit(&c->key_packets[0], 0, memory_order_relaxed);
    atomic_store_explicit(&c->key_packets[1], 0, memory_order_relaxed);
}

/* Whether an RX entry other than `self` (NULL: any) already has ks's lookup
 * key (level, DCID, local address): an RX key leads to one entry only. TX
 * entries are found by handle and never collide. With t->lock held. */
static bool lookup_key_taken(const struct quicoff_table *t, const struct qo_keyset *ks,
                             const struct qo_keyset *self)
{
    struct qo_keyset *found;
    return ks->direction == QUICOFF_DIR_RX &&
           qo_table_lookup(t, ks->level, ks->dcid, ks->dcid_len, &ks->addr, &found) != NULL &&
           found != self;
}

quicoff_status_t quicoff_conn_add(struct quicoff_table *t, const struct quicoff_conn_config *cfg,
                                  quicoff_conn_t *out)
{
    if (!out)
        return QUICOFF_INVALID_ARGUMENT;
    struct qo_keyset *ks;
    quicoff_status_t st = build_keyset(t, cfg, &ks);
    if (st != QUICOFF_OK)
        return st;

    pthread_mutex_lock(&t->lock);
    qo_epoch_reclaim(&t->epoch, t);
    if (lookup_key_taken(t, ks, NULL)) {
        st = QUICOFF_EXISTS;
        goto unlock;
    }
    if (t->free_count == 0) {
        st = QUICOFF_TABLE_FULL;
        goto unlock;
    }
    uint32_t slot = t->free_slots[--t->free_count];
    struct qo_conn *c = &t->conns[slot];
    conn_state_init(c, cfg);
    ks->state_gen = atomic_load_explicit(&c->state_gen, memory_order_relaxed);
    c->retire.release = release_slot;
    /* publish: entry first, then the index cell that leads to it */
    atomic_store_explicit(&c->ks, ks, memory_order_seq_cst);
    if (cfg->direction == QUICOFF_DIR_RX) {
        index_put(atomic_load_explicit(&t->index, memory_order_relaxed), ks->hash, slot);
        index_maybe_rebuild(t);
    }
    t->live++;
    *out = qo_handle(c);
    ks = NULL;
unlock:
    pthread_mutex_unlock(&t->lock);
    keyset_free(t, ks);
    return st;
}

/* How long quicoff_conn_replace waits at most for the bursts under way (a
 * burst is microseconds; a caller inside a prepare..complete window of its
 * own would otherwise wait for itself). */
#define REPLACE_WAIT_NS UINT64_C(20000000)

quicoff_status_t quicoff_conn_replace(struct quicoff_table *t, quicoff_conn_t h,
                                      const struct quicoff_conn_config *cfg)
{
    /* Everything that can fail is done before the entry is touched: on any
     * error the old entry stays exactly as it was. */
    struct qo_keyset *ks;
    quicoff_status_t st = build_keyset(t, cfg, &ks);
    if (st != QUICOFF_OK)
        return st;

    pthread_mutex_lock(&t->lock);
    qo_epoch_reclaim(&t->epoch, t);
    struct qo_keyset *old;
    struct qo_conn *c = conn_of(t, h, &old);
    if (!c) {
        st = QUICOFF_UNKNOWN_CONNECTION;
        goto unlock;
    }
    if (old->direction != ks->direction) {
        st = QUICOFF_INVALID_ARGUMENT; /* TX and RX entries differ in more than keys */
        goto unlock;
    }
    if (lookup_key_taken(t, ks, old)) {
        st = QUICOFF_EXISTS; /* another entry has the new lookup key */
        goto unlock;
    }
    /* Same slot, same handle: readers find the old keyset or the new one,
     * never neither. A new lookup key gets its index cell before the swap
     * (until then the cell leads to the old keyset, which does not match it:
     * "not there yet"); the old key's cell goes after it. Equal fingerprints
     * share one cell, which leads to the slot either way. */
    struct qo_index *ix = atomic_load_explicit(&t->index, memory_order_relaxed);
    bool rx = ks->direction == QUICOFF_DIR_RX, move = rx && ks->hash != old->hash;
    if (move)
        index_put(ix, ks->hash, c->index);
    /* The new entry's state starts as an add's. First the state changes
     * owner (state_gen): a worker that finds the old keyset from now on
     * leaves the state alone (protect.c, state_of). One that checked just
     * before may still be writing: wait for the bursts under way to end
     * (microseconds; bounded, see qo_epoch_wait). Then the state restarts,
     * then the new keyset that owns it is published. Meanwhile the old
     * keyset keeps serving its packets: never neither. */
    uint32_t state_gen = atomic_load_explicit(&c->state_gen, memory_order_relaxed) + 1;
    ks->state_gen = state_gen;
    atomic_store_explicit(&c->state_gen, state_gen, memory_order_seq_cst);
    (void)qo_epoch_wait(&t->epoch, REPLACE_WAIT_NS);
    conn_state_init(c, cfg);
    atomic_store_explicit(&c->ks, ks, memory_order_seq_cst);
    if (move) {
        index_del(ix, old->hash, c->index);
        index_maybe_rebuild(t);
    }
    qo_epoch_retire(&t->epoch, &old->retire);
    ks = NULL;
unlock:
    pthread_mutex_unlock(&t->lock);
    keyset_free(t, ks);
    return st;
}

quicoff_status_t quicoff_conn_update(struct quicoff_table *t, quicoff_conn_t h,
                                     const struct quicoff_conn_update *u)
{
    if (!t || !u)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st = QUICOFF_OK;
    pthread_mutex_lock(&t->lock);
    struct qo_keyset *old;
    struct qo_conn *c = conn_of(t, h, &old);
    if (!c) {
        st = QUICOFF_UNKNOWN_CONNECTION;
        goto unlock;
    }
    uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_relaxed);
    bool one_rtt = old->level == QUICOFF_LEVEL_ONE_RTT;
    if (((u->what & (QUICOFF_UPDATE_ROLL | QUICOFF_UPDATE_DROP_OLD)) && !one_rtt) ||
        ((u->what & QUICOFF_UPDATE_KEYS) &&
         ((!one_rtt && u->key_generation != 0) ||
          (u->secret && u->secret_len != quicoff_suite_secret_len(old->suite)))) ||
        ((u->what & QUICOFF_UPDATE_FAIL_ACTION) && (unsigned)u->fail_action > 1) ||
        ((u->what & QUICOFF_UPDATE_LARGEST_PN) && !largest_pn_ok(u->largest_pn))) {
        st = QUICOFF_INVALID_ARGUMENT;
        goto unlock;
    }
    /* What lives in the keyset (immutable once published) needs a new copy. */
    bool new_keys = u->what & (QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_DROP_OLD |
                               QUICOFF_UPDATE_FAIL_ACTION | QUICOFF_UPDATE_THRESHOLD |
                               QUICOFF_UPDATE_USER);
    struct qo_keyset *ks = old;
    if (new_keys) {
        ks = keyset_clone(t, old);
        if (!ks) {
            st = QUICOFF_NO_MEMORY;
            goto unlock;
        }
        if (u->what & QUICOFF_UPDATE_KEYS) {
            struct quicoff_packet_keys k;
            /* Only the current generation (re-key in place) or the next one
             * (ahead of time; replaces the previous generation's keys). */
            if (one_rtt && u->key_generation != cur && u->key_generation != cur + 1) {
                st = QUICOFF_INVALID_ARGUMENT;
                keyset_free(t, ks);
                goto unlock;
            }
            st = keys_from((quicoff_suite_t)ks->suite, ks->version, &u->keys, u->secret,
                           u->secret_len, &k);
            if (st == QUICOFF_OK)
                st = keyset_install(ks, u->key_generation, k.key, k.iv);
            if (st == QUICOFF_OK)
                st = key_register(t, ks, u->key_generation & 1);
            qo_secure_zero(&k, sizeof(k));
            if (st != QUICOFF_OK) {
                keyset_free(t, ks);
                goto unlock;
            }
            /* a new key starts its usage count from zero */
            atomic_store_explicit(&c->key_packets[u->key_generation & 1], 0, memory_order_relaxed);
        }
        if (u->what & QUICOFF_UPDATE_FAIL_ACTION)
            ks->fail_action = (uint8_t)u->fail_action;
        if (u->what & QUICOFF_UPDATE_THRESHOLD)
            ks->threshold = u->usage_threshold ? u->usage_threshold : default_threshold(ks);
        if (u->what & QUICOFF_UPDATE_USER)
            ks->user = u->user;
    }
    if (u->what & QUICOFF_UPDATE_ROLL) {
        struct qo_keyslot *n = &ks->phase[(cur + 1) & 1];
        if (!n->present || n->gen != cur + 1) {
            st = QUICOFF_KEY_PHASE_UNAVAILABLE;
            if (ks != old)
                keyset_free(t, ks);
            goto unlock;
        }
        uint64_t largest = atomic_load_explicit(&c->largest_pn, memory_order_relaxed);
        atomic_store_explicit(&c->gen_first_pn, largest == UINT64_MAX ? 0 : largest + 1,
                              memory_order_relaxed);
        atomic_store_explicit(&c->cur_gen, cur + 1, memory_order_release);
        cur++;
        QO_ADD(c->key_updates, 1);
    }
    if (u->what & QUICOFF_UPDATE_DROP_OLD) {
        struct qo_keyslot *o = &ks->phase[(cur + 1) & 1];
        if (o->present && o->gen + 1 == cur) {
            /* a copied key dies with old (its owner); one installed by this
             * very update was never published: retired now */
            key_retire(t, ks, (cur + 1) & 1);
            ks->aead->dispose(o->aead_ctx);
            qo_secure_zero(o->key, sizeof(o->key));
            qo_secure_zero(o->iv, sizeof(o->iv));
            o->present = 0;
        }
    }
    if (u->what & QUICOFF_UPDATE_LARGEST_PN) {
        atomic_store_explicit(&c->largest_pn, u->largest_pn, memory_order_relaxed);
        atomic_store_explicit(&c->gen_first_pn, u->largest_pn == UINT64_MAX ? 0 : u->largest_pn + 1,
                              memory_order_relaxed);
    }
    if (ks != old) {
        keys_take_over(ks, old);
        atomic_store_explicit(&c->ks, ks, memory_order_seq_cst);
        qo_epoch_retire(&t->epoch, &old->retire);
    }
    qo_epoch_reclaim(&t->epoch, t);
unlock:
    pthread_mutex_unlock(&t->lock);
    return st;
}

quicoff_status_t quicoff_conn_remove(struct quicoff_table *t, quicoff_conn_t h)
{
    if (!t)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st = QUICOFF_OK;
    pthread_mutex_lock(&t->lock);
    struct qo_keyset *ks;
    struct qo_conn *c = conn_of(t, h, &ks);
    if (!c) {
        st = QUICOFF_UNKNOWN_CONNECTION;
        goto unlock;
    }
    if (ks->direction == QUICOFF_DIR_RX)
        index_del(atomic_load_explicit(&t->index, memory_order_relaxed), ks->hash, c->index);
    atomic_fetch_add_explicit(&c->handle_gen, 1, memory_order_relaxed);
    atomic_store_explicit(&c->ks, NULL, memory_order_seq_cst);
    qo_epoch_retire(&t->epoch, &ks->retire);
    qo_epoch_retire(&t->epoch, &c->retire);
    t->live--;
    index_maybe_rebuild(t);
    qo_epoch_reclaim(&t->epoch, t);
unlock:
    pthread_mutex_unlock(&t->lock);
    return st;
}

quicoff_conn_t quicoff_conn_find(struct quicoff_table *t, quicoff_level_t level,
                                 const uint8_t *dcid, size_t dcid_len,
                                 const struct quicoff_addr *local_addr)
{
    if (!t || dcid_len > QUICOFF_MAX_CID_LEN)
        return QUICOFF_CONN_INVALID;
    pthread_mutex_lock(&t->lock); /* keeps the keyset alive while we look */
    struct qo_keyset *ks;
    struct qo_conn *c = qo_table_lookup(t, (uint8_t)level, dcid, dcid_len, local_addr, &ks);
    quicoff_conn_t h = c ? qo_handle(c) : QUICOFF_CONN_INVALID;
    pthread_mutex_unlock(&t->lock);
    return h;
}

void *quicoff_conn_user(struct quicoff_table *t, quicoff_conn_t h)
{
    if (!t)
        return NULL;
    pthread_mutex_lock(&t->lock); /* keeps the keyset alive while we look */
    struct qo_keyset *ks;
    void *user = conn_of(t, h, &ks) ? ks->user : NULL;
    pthread_mutex_unlock(&t->lock);
    return user;
}

size_t quicoff_table_reclaim(struct quicoff_table *t)
{
    pthread_mutex_lock(&t->lock);
    size_t n = (size_t)qo_epoch_reclaim(&t->epoch, t);
    pthread_mutex_unlock(&t->lock);
    return n;
}

/* ------------------------------------------------------------ counters */

quicoff_status_t quicoff_conn_stats(struct quicoff_table *t, quicoff_conn_t h,
                                    struct quicoff_conn_stats *out)
{
    if (!t || !out)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st = QUICOFF_OK;
    pthread_mutex_lock(&t->lock);
    struct qo_keyset *ks;
    struct qo_conn *c = conn_of(t, h, &ks);
    if (!c) {
        st = QUICOFF_UNKNOWN_CONNECTION;
    } else {
        uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_relaxed);
        out->packets = QO_GET(c->packets);
        out->bytes = QO_GET(c->bytes);
        out->auth_failures = QO_GET(c->auth_failures);
        out->malformed = QO_GET(c->malformed);
        out->key_phase_unavailable = QO_GET(c->key_phase_unavailable);
        out->key_updates = QO_GET(c->key_updates);
        out->key_generation = cur;
        out->largest_pn = QO_GET(c->largest_pn);
        out->key_packets = QO_GET(c->key_packets[cur & 1]);
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

quicoff_status_t quicoff_conn_key_packets(struct quicoff_worker *w, quicoff_conn_t h,
                                          uint64_t *out)
{
    if (!w || !out)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st = QUICOFF_UNKNOWN_CONNECTION;
    /* inside the worker's epoch: the keyset cannot be freed under us, and
     * the slot's generation check rejects a handle that was reused */
    qo_worker_enter(w);
    struct qo_keyset *ks;
    struct qo_conn *c = conn_of(w->table, h, &ks);
    if (c) {
        uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_relaxed);
        *out = QO_GET(c->key_packets[cur & 1]);
        st = QUICOFF_OK;
    }
    qo_worker_exit(w);
    return st;
}

/* Adds a departing worker's counters to the table's (writer, under the lock). */
static void counters_fold(struct qo_counters *dst, const struct qo_counters *src)
{
    _Atomic uint64_t *d = (_Atomic uint64_t *)dst;
    const _Atomic uint64_t *s = (const _Atomic uint64_t *)src;
    for (size_t i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
        QO_ADD(d[i], QO_GET(s[i]));
}

static void counters_add(struct quicoff_table_stats *o, const struct qo_counters *c)
{
    o->rx_packets += QO_GET(c->rx_packets);
    o->rx_bytes += QO_GET(c->rx_bytes);
    o->tx_packets += QO_GET(c->tx_packets);
    o->tx_bytes += QO_GET(c->tx_bytes);
    o->auth_failures += QO_GET(c->auth_failures);
    o->unknown_connection += QO_GET(c->unknown_connection);
    o->malformed += QO_GET(c->malformed);
    o->key_phase_unavailable += QO_GET(c->key_phase_unavailable);
    o->usage_limit_reached += QO_GET(c->usage_limit_reached);
    o->key_exhausted += QO_GET(c->key_exhausted);
    o->unsupported += QO_GET(c->unsupported);
    o->key_updates += QO_GET(c->key_updates);
}

void quicoff_table_stats(struct quicoff_table *t, struct quicoff_table_stats *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&t->lock);
    counters_add(out, &t->departed);
    for (unsigned i = 0; i < t->max_workers; i++)
        if (t->workers[i])
            counters_add(out, &t->workers[i]->c);
    out->connections = t->live;
    out->retired_pending = t->epoch.retired_count;
    pthread_mutex_unlock(&t->lock);
}

/* ------------------------------------------------------------ workers */

struct quicoff_worker *quicoff_worker_create(struct quicoff_table *t)
{
    if (!t)
        return NULL;
    struct quicoff_worker *w = aligned_alloc(QO_CACHE_LINE, round_up(sizeof(*w)));
    if (!w)
        return NULL;
    memset(w, 0, sizeof(*w));
    w->table = t;
    w->scratch = malloc(QO_SCRATCH_LEN);
    const qo_backend_t *be = t->backend;
    if (!w->scratch || (be->worker_init && be->worker_init(&w->backend_state) != 0)) {
        free(w->scratch);
        free(w);
        return NULL;
    }
    pthread_mutex_lock(&t->lock);
    w->reader_index = qo_epoch_register(&t->epoch, &w->announce);
    if (w->reader_index >= 0)
        t->workers[w->reader_index] = w;
    pthread_mutex_unlock(&t->lock);
    if (w->reader_index < 0) {
        if (be->worker_fini)
            be->worker_fini(w->backend_state);
        free(w->scratch);
        free(w);
        return NULL;
    }
    return w;
}

void quicoff_worker_destroy(struct quicoff_worker *w)
{
    if (!w)
        return;
    struct quicoff_table *t = w->table;
    pthread_mutex_lock(&t->lock);
    /* keep its counts in the table totals */
    counters_fold(&t->departed, &w->c);
    t->workers[w->reader_index] = NULL;
    qo_epoch_unregister(&t->epoch, w->reader_index);
    pthread_mutex_unlock(&t->lock);
    if (t->backend->worker_fini)
        t->backend->worker_fini(w->backend_state);
    free(w->scratch);
    free(w);
}
