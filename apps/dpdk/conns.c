/* SPDX-License-Identifier: Apache-2.0 */
/* The application's connection registry (index <-> handle, encapsulation). */
#include "conns.h"

#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>
#include <rte_rcu_qsbr.h>

struct qd_conns *qd_conns_create(uint32_t capacity)
{
    struct qd_conns *c = rte_zmalloc("qd_conns", sizeof(*c), RTE_CACHE_LINE_SIZE);
    if (!c)
        return NULL;
    c->capacity = capacity;
    size_t sz = sizeof(c->by_slot[0]) * capacity;
    c->by_index[0] = rte_zmalloc("qd_conns_tx", sz, RTE_CACHE_LINE_SIZE);
    c->by_index[1] = rte_zmalloc("qd_conns_rx", sz, RTE_CACHE_LINE_SIZE);
    c->by_slot = rte_zmalloc("qd_conns_slot", sz, RTE_CACHE_LINE_SIZE);
    c->slot = rte_zmalloc("qd_conns_state", sizeof(c->slot[0]) * capacity, RTE_CACHE_LINE_SIZE);
    pthread_mutex_init(&c->lock, NULL);
    if (!c->by_index[0] || !c->by_index[1] || !c->by_slot || !c->slot) {
        qd_conns_destroy(c);
        return NULL;
    }
    return c;
}

void qd_conns_destroy(struct qd_conns *c)
{
    if (!c)
        return;
    rte_free(c->by_index[0]);
    rte_free(c->by_index[1]);
    rte_free(c->by_slot);
    rte_free(c->slot);
    pthread_mutex_destroy(&c->lock);
    rte_free(c);
}

void qd_conns_publish(struct qd_conns *c, struct qd_conn *e, uint32_t key_generation)
{
    struct qd_slot_state *s = &c->slot[(uint32_t)e->handle];
    memset(s, 0, sizeof(*s));
    s->key_generation = key_generation;
    atomic_store_explicit(&c->by_slot[(uint32_t)e->handle], e, memory_order_release);
    atomic_store_explicit(&c->by_index[e->direction][e->index], e, memory_order_release);
}

void qd_conns_replace(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e)
{
    (void)old;
    atomic_store_explicit(&c->by_slot[(uint32_t)e->handle], e, memory_order_release);
    atomic_store_explicit(&c->by_index[e->direction][e->index], e, memory_order_release);
}

void qd_conns_swap(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e,
                   uint32_t key_generation)
{
    /* The slot's event state restarts with the entry, as the library's
     * counters do (EVENT COUNT values follow them). */
    struct qd_slot_state *s = &c->slot[(uint32_t)e->handle];
    memset(s, 0, sizeof(*s));
    s->key_generation = key_generation;
    atomic_store_explicit(&c->by_slot[(uint32_t)e->handle], e, memory_order_release);
    atomic_store_explicit(&c->by_index[e->direction][e->index], e, memory_order_release);
    if (old->index != e->index) {
        /* seed 000: a DCID re-sent under another index moves there */
        struct qd_conn *exp = old;
        atomic_compare_exchange_strong(&c->by_index[old->direction][old->index], &exp, NULL);
    }
}

void qd_conns_unpublish(struct qd_conns *c, struct qd_conn *old)
{
    struct qd_conn *exp = old;
    atomic_compare_exchange_strong(&c->by_index[old->direction][old->index], &exp, NULL);
    exp = old;
    atomic_compare_exchange_strong(&c->by_slot[(uint32_t)old->handle], &exp, NULL);
}

void qd_conns_sync(void)
{
    if (qda.rcu)
        rte_rcu_qsbr_synchronize(qda.rcu, RTE_QSBR_THRID_INVALID);
}
