/* SPDX-License-Identifier: Apache-2.0 */
/* The application's side of each entry: host index -> qd_conn, and every entry (conns.h). */
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
    size_t sz = sizeof(c->by_index[0][0]) * capacity;
    c->by_index[0] = rte_zmalloc("qd_conns_tx", sz, RTE_CACHE_LINE_SIZE);
    c->by_index[1] = rte_zmalloc("qd_conns_rx", sz, RTE_CACHE_LINE_SIZE);
    pthread_mutex_init(&c->lock, NULL);
    if (!c->by_index[0] || !c->by_index[1]) {
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
    pthread_mutex_destroy(&c->lock);
    rte_free(c);
}

static void list_add(struct qd_conns *c, struct qd_conn *e)
{
    e->prev = NULL;
    e->next = c->all;
    if (c->all)
        c->all->prev = e;
    c->all = e;
    c->count++;
}

static void list_del(struct qd_conns *c, struct qd_conn *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->all = e->next;
    if (e->next)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
    c->count--;
}

void qd_conns_publish(struct qd_conns *c, struct qd_conn *e)
{
    list_add(c, e);
    atomic_store_explicit(&c->by_index[e->direction][e->index], e, memory_order_release);
}

void qd_conns_replace(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e)
{
    /* the worker may still bump old's counters: a count in flight is lost,
     * never torn (relaxed atomics both sides) */
    for (unsigned i = 0; i < RTE_DIM(e->ev.next); i++)
        e->ev.next[i] = qd_conn_ev_read(&old->ev.next[i]);
    e->ev.auth_failures = qd_conn_ev_read(&old->ev.auth_failures);
    e->ev.key_phase_unavailable = qd_conn_ev_read(&old->ev.key_phase_unavailable);
    e->ev.key_updates = qd_conn_ev_read(&old->ev.key_updates);
    e->ev.key_generation = qd_conn_ev_read(&old->ev.key_generation);
    list_del(c, old);
    list_add(c, e);
    atomic_store_explicit(&c->by_index[e->direction][e->index], e, memory_order_release);
}

void qd_conns_swap(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e)
{
    /* e's event state starts afresh, as the library's counters do (EVENT
     * COUNT values follow them); old's, which the worker may still write,
     * is left alone and freed with old */
    list_del(c, old);
    list_add(c, e);
    atomic_store_explicit(&c->by_index[e->direction][e->index], e, memory_order_release);
    if (old->index != e->index) {
        /* compat: a DCID re-sent under another index moves there */
        struct qd_conn *exp = old;
        atomic_compare_exchange_strong(&c->by_index[old->direction][old->index], &exp, NULL);
    }
}

void qd_conns_unpublish(struct qd_conns *c, struct qd_conn *old)
{
    list_del(c, old);
    struct qd_conn *exp = old;
    atomic_compare_exchange_strong(&c->by_index[old->direction][old->index], &exp, NULL);
}

void qd_conns_sync(void)
{
    if (qda.rcu)
        rte_rcu_qsbr_synchronize(qda.rcu, RTE_QSBR_THRID_INVALID);
}
