/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters: per connection (written by the worker serving it) and per table
 * (the sum of every worker's, each written by its worker only, plus those of
 * destroyed workers). The same names in C, Python, telemetry and docs.
 */
#include "table.h"

#include <string.h>

quicoff_status_t quicoff_conn_stats(struct quicoff_table *t, quicoff_conn_t h,
                                    struct quicoff_conn_stats *out)
{
    if (!t || !out)
        return QUICOFF_INVALID_ARGUMENT;
    quicoff_status_t st = QUICOFF_OK;
    pthread_mutex_lock(&t->lock);
    struct qo_keyset *ks;
    struct qo_slot *c = qo_slot_of(t, h, &ks);
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
    struct qo_slot *c = qo_slot_of(w->table, h, &ks);
    if (c) {
        uint32_t cur = atomic_load_explicit(&c->cur_gen, memory_order_relaxed);
        *out = QO_GET(c->key_packets[cur & 1]);
        st = QUICOFF_OK;
    }
    qo_worker_exit(w);
    return st;
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
