/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Workers: one per data-plane thread, with its counters, its epoch slot and
 * the backend's per-thread state (e.g. ipsec-mb's job manager), made and
 * freed here so that the data path never allocates.
 */
#include "table.h"

#include <stdlib.h>
#include <string.h>

/* Adds a departing worker's counters to the table's (writer, under the lock). */
static void counters_fold(struct qo_counters *dst, const struct qo_counters *src)
{
    _Atomic uint64_t *d = (_Atomic uint64_t *)dst;
    const _Atomic uint64_t *s = (const _Atomic uint64_t *)src;
    for (size_t i = 0; i < sizeof(*dst) / sizeof(uint64_t); i++)
        QO_ADD(d[i], QO_GET(s[i]));
}

/* The scratch for key schedules computed per burst (table.h), when the
 * table gets the level-by-level stages and a suite of its backend can
 * expand both its AEAD and its header-protection contexts; NULL otherwise
 * (also when it cannot be allocated: the bursts then read the keysets'
 * schedules, as a small table's do). */
static struct qo_key_scratch *key_scratch_new(const struct quicoff_table *t)
{
    size_t aead = 0, hp = 0;
    for (int s = 0; s < QUICOFF_SUITE_COUNT && t->prefetch_levels; s++) {
        const qo_aead_algo_t *a = t->backend->aead[s];
        const qo_hp_algo_t *h = t->backend->hp[s];
        if (a && h && a->expand && h->expand) {
            aead = a->ctx_size > aead ? a->ctx_size : aead;
            hp = h->ctx_size > hp ? h->ctx_size : hp;
        }
    }
    if (aead == 0)
        return NULL;
    aead = qo_round_up(aead);
    hp = qo_round_up(hp);
    size_t head = qo_round_up(sizeof(struct qo_key_scratch));
    size_t size = head + QO_KEY_SCRATCH_KEYS * (aead + hp);
    uint8_t *m = aligned_alloc(QO_CACHE_LINE, size);
    if (!m)
        return NULL;
    memset(m, 0, size);
    struct qo_key_scratch *x = (struct qo_key_scratch *)m;
    for (unsigned i = 0; i < QO_KEY_SCRATCH_KEYS; i++) {
        x->aead[i] = m + head + i * aead;
        x->hp[i] = m + head + QO_KEY_SCRATCH_KEYS * aead + i * hp;
    }
    x->size = size;
    return x;
}

static void key_scratch_free(struct qo_key_scratch *x)
{
    if (!x)
        return;
    qo_secure_zero(x, x->size); /* expanded keys */
    free(x);
}

struct quicoff_worker *quicoff_worker_create(struct quicoff_table *t)
{
    if (!t)
        return NULL;
    struct quicoff_worker *w = aligned_alloc(QO_CACHE_LINE, qo_round_up(sizeof(*w)));
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
    w->keys = key_scratch_new(t);
    pthread_mutex_lock(&t->lock);
    w->reader_index = qo_epoch_register(&t->epoch, &w->announce);
    if (w->reader_index >= 0)
        t->workers[w->reader_index] = w;
    pthread_mutex_unlock(&t->lock);
    if (w->reader_index < 0) {
        if (be->worker_fini)
            be->worker_fini(w->backend_state);
        key_scratch_free(w->keys);
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
    key_scratch_free(w->keys);
    free(w->scratch);
    free(w);
}
