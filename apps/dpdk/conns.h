/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the application knows of each libquicoff entry that the library does
 * not: the host's index (per direction), the frame format the host speaks
 * for it (compat or v1), the encapsulation of TX entries and the state of
 * its EVENTs. A struct qd_conn hangs on its entry's user pointer
 * (quicoff_conn_config.user), so the RX path finds it in every result
 * (quicoff_result.user) without a second table; the TX path, which starts
 * from the host's index, finds it by index here.
 *
 * A published qd_conn is immutable but for its event state: a change
 * publishes a new copy (and points the entry's user pointer at it); the old
 * one is freed after every worker has passed a quiescent state (rte_rcu_qsbr),
 * so workers read without a lock.
 */
#ifndef QD_CONNS_H
#define QD_CONNS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "qd.h"
#include "quicoff/quicoff.h"

/* An entry's EVENT state: written only by the worker that serves the entry
 * (relaxed atomics: the control thread reads it when it copies the entry). */
struct qd_conn_events {
    uint64_t next[8];       /* earliest TSC of the next event, per code */
    uint64_t auth_failures; /* cumulative, for EVENT COUNT */
    uint64_t key_phase_unavailable;
    uint64_t key_updates;
    uint64_t key_generation; /* as seen by the data plane (informational) */
};

struct qd_conn {
    quicoff_conn_t handle;
    uint32_t index;    /* chosen by the host, per direction */
    uint8_t direction; /* quicoff_direction_t */
    uint8_t level;     /* quicoff_level_t */
    uint8_t suite;     /* quicoff_suite_t */
    bool compat;       /* installed by compat signaling: compat frames to the host */
    uint8_t dcid_len;
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    struct quicoff_addr local_addr;
    bool has_encap; /* TX */
    struct qd_encap encap;
    struct qd_conn *prev, *next; /* every published entry (control thread, under the lock) */
    struct qd_conn_events ev __rte_cache_aligned; /* its own line: the worker writes it */
};

struct qd_conns {
    uint32_t capacity;
    _Atomic(struct qd_conn *) *by_index[2]; /* [direction][index], index < capacity */
    struct qd_conn *all;                    /* every published entry (a compat RX index
                                               may hold several: one per path's DCID) */
    uint32_t count;
    pthread_mutex_t lock; /* writers (control thread) and telemetry */
    bool closed;          /* the table is gone (shutdown) */
};

struct qd_conns *qd_conns_create(uint32_t capacity);
void qd_conns_destroy(struct qd_conns *c);

/* Data path (workers): lock-free. */
static inline struct qd_conn *qd_conn_by_index(struct qd_conns *c, unsigned dir, uint32_t index)
{
    if (index >= c->capacity)
        return NULL;
    return atomic_load_explicit(&c->by_index[dir][index], memory_order_acquire);
}

/* The qd_conn of a result's entry (NULL when the packet found none). */
static inline struct qd_conn *qd_conn_of(const struct quicoff_result *r)
{
    return (struct qd_conn *)r->user;
}

/* Event counters, bumped by the worker that serves the entry; returns the new value. */
static inline uint64_t qd_conn_ev_bump(uint64_t *counter)
{
    uint64_t v = __atomic_load_n(counter, __ATOMIC_RELAXED) + 1;
    __atomic_store_n(counter, v, __ATOMIC_RELAXED);
    return v;
}

static inline uint64_t qd_conn_ev_read(const uint64_t *counter)
{
    return __atomic_load_n(counter, __ATOMIC_RELAXED);
}

/* Control path, with c->lock held. The entry's user pointer must already
 * name e (quicoff_conn_config.user at add / replace, or QUICOFF_UPDATE_USER):
 *  - publish: e is new;
 *  - replace: e is a copy of old with other immutable fields (same handle
 *    and index), its event state carried over;
 *  - swap: old's library entry was replaced in place (quicoff_conn_replace:
 *    same handle) by e, with fresh event state; e may carry another index;
 *  - unpublish: old goes.
 * The caller frees old after qd_conns_sync(). */
void qd_conns_publish(struct qd_conns *c, struct qd_conn *e);
void qd_conns_replace(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e);
void qd_conns_swap(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e);
void qd_conns_unpublish(struct qd_conns *c, struct qd_conn *old);
/* Waits until no worker can still hold an unpublished entry. */
void qd_conns_sync(void);

#endif
