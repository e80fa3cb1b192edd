/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The application's view of each libquicoff entry: the host's index (per
 * direction) <-> the library's handle, the frame format the host speaks for
 * it (seed 000 compat or v1) and the encapsulation of TX entries. Entries
 * are immutable once published: a change publishes a new copy; the old one
 * is freed after every worker has passed a quiescent state (rte_rcu_qsbr),
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

struct qd_conn {
    quicoff_conn_t handle;
    uint32_t index;       /* chosen by the host, per direction */
    uint8_t direction;    /* quicoff_direction_t */
    uint8_t level;        /* quicoff_level_t */
    uint8_t suite;        /* quicoff_suite_t */
    bool compat;          /* installed by seed 000 signaling: compat frames to the host */
    uint8_t dcid_len;
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    struct quicoff_addr local_addr;
    bool has_encap;       /* TX */
    struct qd_encap encap;
};

/* Per-slot state for events, written by the worker that serves the entry
 * (reset by the control thread before the entry is published). */
struct qd_slot_state {
    uint64_t ev_next[8];      /* earliest TSC of the next event, per code */
    uint64_t auth_failures;   /* cumulative, for EVENT COUNT */
    uint64_t key_phase_unavailable;
    uint64_t key_updates;
    uint32_t key_generation;  /* as seen by the data plane (informational) */
} __rte_cache_aligned;

struct qd_conns {
    uint32_t capacity;
    struct qd_slot_state *slot; /* [handle & 0xffffffff] */
    _Atomic(struct qd_conn *) *by_index[2]; /* [direction][index], index < capacity */
    _Atomic(struct qd_conn *) *by_slot;     /* [handle & 0xffffffff] */
    pthread_mutex_t lock;                   /* writers (control thread) and telemetry */
    bool closed;                            /* the table is gone (shutdown) */
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

static inline struct qd_conn *qd_conn_by_handle(struct qd_conns *c, quicoff_conn_t h)
{
    uint32_t slot = (uint32_t)h;
    if (slot >= c->capacity)
        return NULL;
    struct qd_conn *e = atomic_load_explicit(&c->by_slot[slot], memory_order_acquire);
    return e && e->handle == h ? e : NULL;
}

static inline struct qd_slot_state *qd_slot_of(struct qd_conns *c, const struct qd_conn *e)
{
    return &c->slot[(uint32_t)e->handle];
}

/* Control path, with c->lock held: publish e (replacing nothing), or replace
 * old by e (same handle and index), or unpublish old. The caller frees old
 * after qd_conns_sync(). */
void qd_conns_publish(struct qd_conns *c, struct qd_conn *e, uint32_t key_generation);
void qd_conns_replace(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e);
/* old's library entry was replaced in place (quicoff_conn_replace: same
 * handle) by e, which may carry another index: publish e instead of old. */
void qd_conns_swap(struct qd_conns *c, struct qd_conn *old, struct qd_conn *e,
                   uint32_t key_generation);
void qd_conns_unpublish(struct qd_conns *c, struct qd_conn *old);
/* Waits until no worker can still hold an unpublished entry. */
void qd_conns_sync(void);

#endif
