/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The connection table: creation and destruction, and the control calls on
 * its entries: add / replace / update / remove / find (serialised by a
 * mutex, may allocate). See table.h for the layout, index.c for the lookup,
 * keyset.c for what an entry holds, epoch.h for reclamation.
 */
#include "table.h"

#include "index.h"
#include "keyset.h"

#include <openssl/rand.h>
#include <stdlib.h>
#include <string.h>

#define QO_DEFAULT_MAX_WORKERS 64

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
    t->prefetch_levels = (uint64_t)t->capacity * QO_CONN_FOOTPRINT > QO_PREFETCH_LEVELS_FOOTPRINT;
    t->max_workers = cfg->max_workers ? cfg->max_workers : QO_DEFAULT_MAX_WORKERS;
    if (RAND_bytes((unsigned char *)&t->hash_seed, sizeof(t->hash_seed)) != 1)
        goto fail;
    pthread_mutex_init(&t->lock, NULL);
    t->slots = qo_alloc_big_zeroed(sizeof(struct qo_slot) * t->capacity);
    t->free_slots = malloc(sizeof(uint32_t) * t->capacity);
    t->workers = calloc(t->max_workers, sizeof(*t->workers));
    if (t->prefetch_levels && !(t->keyset_pools = qo_keyset_pools_new()))
        goto fail;
    uint64_t cells = 16;
    while (cells < (uint64_t)t->capacity * 2)
        cells <<= 1;
    struct qo_index *ix = qo_index_alloc(cells);
    if (!t->slots || !t->free_slots || !t->workers || !ix ||
        qo_epoch_init(&t->epoch, t->max_workers) != 0) {
        free(ix);
        goto fail;
    }
    atomic_init(&t->index, ix);
    atomic_init(&t->next_key_id, 1); /* 0 = no key */
    for (uint32_t i = 0; i < t->capacity; i++) {
        t->slots[i].index = i;
        t->free_slots[i] = t->capacity - 1 - i; /* pop order 0, 1, 2, ... */
    }
    t->free_count = t->capacity;
    if (err)
        *err = QUICOFF_OK;
    return t;
fail:
    qo_keyset_pools_free(t->keyset_pools);
    free(t->slots);
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
    struct qo_slot *c = (struct qo_slot *)((uint8_t *)n - offsetof(struct qo_slot, retire));
    t->free_slots[t->free_count++] = c->index;
}

void quicoff_table_destroy(struct quicoff_table *t)
{
    if (!t)
        return;
    qo_epoch_fini(&t->epoch, t);
    for (uint32_t i = 0; i < t->capacity; i++)
        qo_keyset_free(t, atomic_load_explicit(&t->slots[i].ks, memory_order_relaxed));
    qo_keyset_pools_free(t->keyset_pools); /* after the last keyset went back */
    free(atomic_load_explicit(&t->index, memory_order_relaxed));
    free(t->slots);
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

/* A slot's data-plane state as a new entry starts it (add, replace). */
static void conn_state_init(struct qo_slot *c, const struct quicoff_conn_config *cfg)
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
    quicoff_status_t st = qo_keyset_build(t, cfg, &ks);
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
    struct qo_slot *c = &t->slots[slot];
    conn_state_init(c, cfg);
    ks->state_gen = atomic_load_explicit(&c->state_gen, memory_order_relaxed);
    c->retire.release = release_slot;
    /* publish: entry first, then the index cell that leads to it */
    atomic_store_explicit(&c->ks, ks, memory_order_seq_cst);
    if (cfg->direction == QUICOFF_DIR_RX) {
        qo_index_put(atomic_load_explicit(&t->index, memory_order_relaxed), ks->hash, slot);
        qo_index_maybe_rebuild(t);
    }
    t->live++;
    *out = qo_handle(c);
    ks = NULL;
unlock:
    pthread_mutex_unlock(&t->lock);
    qo_keyset_free(t, ks);
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
    quicoff_status_t st = qo_keyset_build(t, cfg, &ks);
    if (st != QUICOFF_OK)
        return st;

    pthread_mutex_lock(&t->lock);
    qo_epoch_reclaim(&t->epoch, t);
    struct qo_keyset *old;
    struct qo_slot *c = qo_slot_of(t, h, &old);
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
        qo_index_put(ix, ks->hash, c->index);
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
        qo_index_del(ix, old->hash, c->index);
        qo_index_maybe_rebuild(t);
    }
    qo_epoch_retire(&t->epoch, &old->retire);
    ks = NULL;
unlock:
    pthread_mutex_unlock(&t->lock);
    qo_keyset_free(t, ks);
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
    struct qo_slot *c = qo_slot_of(t, h, &old);
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
        ((u->what & QUICOFF_UPDATE_LARGEST_PN) && !qo_largest_pn_ok(u->largest_pn))) {
        st = QUICOFF_INVALID_ARGUMENT;
        goto unlock;
    }
    /* What lives in the keyset (immutable once published) needs a new copy. */
    bool new_keys = u->what &
                    (QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_DROP_OLD | QUICOFF_UPDATE_FAIL_ACTION |
                     QUICOFF_UPDATE_THRESHOLD | QUICOFF_UPDATE_USER);
    struct qo_keyset *ks = old;
    if (new_keys) {
        ks = qo_keyset_clone(t, old);
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
                qo_keyset_free(t, ks);
                goto unlock;
            }
            st = qo_keys_from((quicoff_suite_t)ks->suite, ks->version, &u->keys, u->secret,
                              u->secret_len, &k);
            if (st == QUICOFF_OK)
                st = qo_keyset_install(ks, u->key_generation, k.key, k.iv);
            if (st == QUICOFF_OK)
                st = qo_key_register(t, ks, u->key_generation & 1);
            qo_secure_zero(&k, sizeof(k));
            if (st != QUICOFF_OK) {
                qo_keyset_free(t, ks);
                goto unlock;
            }
            /* a new key starts its usage count from zero */
            atomic_store_explicit(&c->key_packets[u->key_generation & 1], 0, memory_order_relaxed);
        }
        if (u->what & QUICOFF_UPDATE_FAIL_ACTION)
            ks->fail_action = (uint8_t)u->fail_action;
        if (u->what & QUICOFF_UPDATE_THRESHOLD)
            ks->threshold = u->usage_threshold ? u->usage_threshold : qo_default_threshold(ks);
        if (u->what & QUICOFF_UPDATE_USER)
            ks->user = u->user;
    }
    if (u->what & QUICOFF_UPDATE_ROLL) {
        struct qo_keyslot *n = &ks->phase[(cur + 1) & 1];
        if (!n->present || n->gen != cur + 1) {
            st = QUICOFF_KEY_PHASE_UNAVAILABLE;
            if (ks != old)
                qo_keyset_free(t, ks);
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
            qo_key_retire(t, ks, (cur + 1) & 1);
            ks->aead->dispose(qo_keyset_aead_ctx(ks, (cur + 1) & 1));
            qo_secure_zero(ks->keys[(cur + 1) & 1].key, sizeof(ks->keys[0].key));
            qo_secure_zero(o->iv, sizeof(o->iv));
            o->present = 0;
        }
    }
    if (u->what & QUICOFF_UPDATE_LARGEST_PN) {
        atomic_store_explicit(&c->largest_pn, u->largest_pn, memory_order_relaxed);
        atomic_store_explicit(&c->gen_first_pn,
                              u->largest_pn == UINT64_MAX ? 0 : u->largest_pn + 1,
                              memory_order_relaxed);
    }
    if (ks != old) {
        qo_keys_take_over(ks, old);
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
    struct qo_slot *c = qo_slot_of(t, h, &ks);
    if (!c) {
        st = QUICOFF_UNKNOWN_CONNECTION;
        goto unlock;
    }
    if (ks->direction == QUICOFF_DIR_RX)
        qo_index_del(atomic_load_explicit(&t->index, memory_order_relaxed), ks->hash, c->index);
    atomic_fetch_add_explicit(&c->handle_gen, 1, memory_order_relaxed);
    atomic_store_explicit(&c->ks, NULL, memory_order_seq_cst);
    qo_epoch_retire(&t->epoch, &ks->retire);
    qo_epoch_retire(&t->epoch, &c->retire);
    t->live--;
    qo_index_maybe_rebuild(t);
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
    struct qo_slot *c = qo_table_lookup(t, (uint8_t)level, dcid, dcid_len, local_addr, &ks);
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
    void *user = qo_slot_of(t, h, &ks) ? ks->user : NULL;
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
