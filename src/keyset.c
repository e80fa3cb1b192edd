/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keysets (table.h, struct qo_keyset): an entry's immutable half, built from
 * a configuration (checked, keys derived, cipher contexts set up), cloned for
 * an update, freed zeroed; and the key hooks that tell a caller's AEAD engine
 * about every key's birth and death (quicoff_table_set_key_hooks). Control
 * path only.
 */
#include "keyset.h"

#include "index.h"

#include <stdlib.h>
#include <string.h>

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
    ki->key_len = qo_suites[ks->suite].key_len;
    ki->user = m->user;
}

/* Reports the key of slot p to the retire hook if this keyset owns it, and
 * forgets it. Only for keys no worker can reach any more: a released
 * keyset's, or one never published. */
void qo_key_retire(const struct quicoff_table *t, struct qo_keyset *ks, unsigned p)
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
quicoff_status_t qo_key_register(struct quicoff_table *t, struct qo_keyset *ks, unsigned p)
{
    qo_key_retire(t, ks, p); /* an owned key it replaces was never published */
    struct qo_keymeta *m = &ks->meta[p];
    m->id = atomic_fetch_add_explicit(&t->next_key_id, 1, memory_order_relaxed);
    m->gen = ks->phase[p].gen;
    m->owner = 1;
    if (!t->hooks.install)
        return QUICOFF_OK;
    struct quicoff_key_info ki;
    key_info(ks, p, &ki);
    ki.key = ks->keys[p].key;
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
void qo_keys_take_over(struct qo_keyset *ks, struct qo_keyset *old)
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

void qo_keyset_free(const struct quicoff_table *t, struct qo_keyset *ks)
{
    if (!ks)
        return;
    for (unsigned p = 0; p < 2; p++)
        qo_key_retire(t, ks, p);
    for (unsigned p = 0; p < 2; p++)
        if (ks->phase[p].present)
            ks->aead->dispose(qo_keyset_aead_ctx(ks, p));
    if (ks->hp_ready)
        ks->hp->dispose(qo_keyset_hp_ctx(ks));
    /* read before the wipe clears them */
    bool in_pool = ks->in_pool;
    unsigned suite = ks->suite;
    qo_secure_zero(ks, ks->alloc_size);
    if (in_pool)
        qo_block_pool_put(&t->keyset_pools[suite], ks);
    else
        free(ks);
}

struct qo_block_pool *qo_keyset_pools_new(void)
{
    struct qo_block_pool *pools = malloc(sizeof(*pools) * QUICOFF_SUITE_COUNT);
    if (pools)
        for (unsigned i = 0; i < QUICOFF_SUITE_COUNT; i++)
            qo_block_pool_init(&pools[i]);
    return pools;
}

void qo_keyset_pools_free(struct qo_block_pool *pools)
{
    if (!pools)
        return;
    for (unsigned i = 0; i < QUICOFF_SUITE_COUNT; i++)
        qo_block_pool_fini(&pools[i]);
    free(pools);
}

static void release_keyset(struct qo_retire_node *n, void *owner)
{
    qo_keyset_free(owner, (struct qo_keyset *)((uint8_t *)n - offsetof(struct qo_keyset, retire)));
}

static struct qo_keyset *keyset_alloc(const struct quicoff_table *t, quicoff_suite_t suite)
{
    const qo_aead_algo_t *aead = t->backend->aead[suite];
    const qo_hp_algo_t *hp = t->backend->hp[suite];
    size_t actx = qo_round_up(aead->ctx_size), hctx = qo_round_up(hp->ctx_size);
    size_t size = qo_round_up(sizeof(struct qo_keyset)) + 2 * actx + hctx;
    /* A large table's keysets share huge pages (block_pool.h): a packet's
     * keyset read then rarely misses the TLB as well as the cache. */
    struct qo_keyset *ks = t->keyset_pools ? qo_block_pool_get(&t->keyset_pools[suite], size)
                                           : aligned_alloc(QO_CACHE_LINE, size);
    if (!ks)
        return NULL;
    if (!t->keyset_pools)
        memset(ks, 0, size);
    ks->in_pool = t->keyset_pools != NULL;
    ks->alloc_size = size;
    ks->aead = aead;
    ks->hp = hp;
    ks->suite = (uint8_t)suite;
    ks->actx = (uint32_t)actx; /* a context is at most a few KiB */
    ks->hp_ready = 0;
    ks->retire.release = release_keyset;
    return ks;
}

/* Installs raw keys of generation gen in its phase slot (context set up). */
quicoff_status_t qo_keyset_install(struct qo_keyset *ks, uint32_t gen, const uint8_t *key,
                                   const uint8_t *iv)
{
    struct qo_keyslot *s = &ks->phase[gen & 1];
    if (s->present) {
        ks->aead->dispose(qo_keyset_aead_ctx(ks, gen & 1));
        s->present = 0;
    }
    uint8_t *k = ks->keys[gen & 1].key;
    memcpy(k, key, qo_suites[ks->suite].key_len);
    memcpy(s->iv, iv, QUICOFF_IV_LEN);
    if (ks->aead->setup(qo_keyset_aead_ctx(ks, gen & 1), k) != 0)
        return QUICOFF_BACKEND_UNAVAILABLE;
    s->gen = gen;
    s->present = 1;
    return QUICOFF_OK;
}

static quicoff_status_t keyset_set_hp(struct qo_keyset *ks, const uint8_t *hp_key)
{
    /* in both phase slots' key lines (table.h) */
    for (unsigned p = 0; p < 2; p++)
        memcpy(ks->keys[p].hp_key, hp_key, qo_suites[ks->suite].key_len);
    ks->hp_ready = 1;
    return ks->hp->setup(qo_keyset_hp_ctx(ks), ks->keys[0].hp_key) == 0
               ? QUICOFF_OK
               : QUICOFF_BACKEND_UNAVAILABLE;
}

/* A copy of ks with fresh contexts (contexts are never shared between
 * keysets, so each is disposed exactly once). */
struct qo_keyset *qo_keyset_clone(const struct quicoff_table *t, const struct qo_keyset *old)
{
    struct qo_keyset *ks = keyset_alloc(t, (quicoff_suite_t)old->suite);
    if (!ks)
        return NULL;
    size_t hdr = offsetof(struct qo_keyset, phase);
    memcpy(ks, old, hdr);
    ks->addr = old->addr; /* identity kept off the hot lines, after phase[] */
    ks->hp_ready = 0;     /* keyset_set_hp sets up ks's own */
    ks->retire.release = release_keyset;
    for (int p = 0; p < 2; p++)
        if (old->phase[p].present && qo_keyset_install(ks, old->phase[p].gen, old->keys[p].key,
                                                       old->phase[p].iv) != QUICOFF_OK)
            goto fail;
    if (keyset_set_hp(ks, old->keys[0].hp_key) != QUICOFF_OK)
        goto fail;
    /* same keys, same IDs; old keeps ownership until ks replaces it */
    for (int p = 0; p < 2; p++) {
        ks->meta[p] = old->meta[p];
        ks->meta[p].owner = 0;
    }
    return ks;
fail:
    qo_keyset_free(t, ks);
    return NULL;
}

uint64_t qo_default_threshold(const struct qo_keyset *ks)
{
    return ks->hard_limit / 4 * 3;
}

/* Keys from raw material or a secret; next: "quic ku" of the secret. */
quicoff_status_t qo_keys_from(quicoff_suite_t suite, uint32_t version,
                              const struct quicoff_packet_keys *raw, const uint8_t *secret,
                              size_t secret_len, struct quicoff_packet_keys *out)
{
    if (!secret) {
        *out = *raw;
        return QUICOFF_OK;
    }
    return quicoff_derive_packet_keys(suite, secret, secret_len, version, out);
}

/* ------------------------------------------------------------ building one */

static bool version_ok(uint32_t v)
{
    return v == 0 || v == QUICOFF_VERSION_1 || v == QUICOFF_VERSION_2;
}

/* A largest PN is a QUIC packet number (at most 2^62 - 1, RFC 9000 §12.3) or
 * UINT64_MAX for none. Past that, PN decoding has no window that holds any
 * packet, so the entry would fail every packet it gets (and count each toward
 * the integrity limit); the wire path refuses the same values. */
bool qo_largest_pn_ok(uint64_t pn)
{
    return pn <= (UINT64_C(1) << 62) - 1 || pn == UINT64_MAX;
}

/* What quicoff_conn_add and quicoff_conn_replace refuse before building
 * anything (qo_keyset_build). */
static quicoff_status_t config_check(const struct quicoff_table *t,
                                     const struct quicoff_conn_config *cfg)
{
    if (!t || !cfg || (unsigned)cfg->suite >= QUICOFF_SUITE_COUNT ||
        (unsigned)cfg->level >= QUICOFF_LEVEL_COUNT || cfg->dcid_len > QUICOFF_MAX_CID_LEN ||
        (unsigned)cfg->direction > QUICOFF_DIR_RX || (unsigned)cfg->nonce_layout > 2 ||
        (unsigned)cfg->fail_action > 1 || !version_ok(cfg->version) ||
        !qo_largest_pn_ok(cfg->largest_pn) ||
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
quicoff_status_t qo_keyset_build(struct quicoff_table *t, const struct quicoff_conn_config *cfg,
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
    const struct qo_suite *suite = &qo_suites[cfg->suite];
    ks->hard_limit = cfg->direction == QUICOFF_DIR_TX ? suite->confidentiality_limit
                                                      : suite->integrity_limit;
    ks->threshold = cfg->usage_threshold ? cfg->usage_threshold : qo_default_threshold(ks);

    st = qo_keys_from(cfg->suite, version, &cfg->keys, cfg->secret, cfg->secret_len, &k);
    if (st == QUICOFF_OK)
        st = qo_keyset_install(ks, cfg->key_generation, k.key, k.iv);
    if (st == QUICOFF_OK)
        st = keyset_set_hp(ks, k.hp);
    if (st == QUICOFF_OK)
        st = qo_key_register(t, ks, cfg->key_generation & 1);
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
            st = qo_keyset_install(ks, cfg->key_generation + 1, next.key, next.iv);
        if (st == QUICOFF_OK)
            st = qo_key_register(t, ks, (cfg->key_generation + 1) & 1);
        qo_secure_zero(&next, sizeof(next));
    }
    qo_secure_zero(&k, sizeof(k));
    if (st != QUICOFF_OK) {
        qo_keyset_free(t, ks);
        return st;
    }
    *out = ks;
    return QUICOFF_OK;
}
