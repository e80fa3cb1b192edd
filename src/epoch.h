/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Epoch-based reclamation: how removed or replaced table entries are freed
 * while lock-free readers may still hold them.
 *
 * A reader (worker) announces the global epoch it saw when it enters a burst
 * and 0 (quiescent) when it leaves. The writer unlinks an object, then takes
 * a ticket R = global++ and keeps the object on a list. The object is freed
 * once every worker is quiescent or announced an epoch > R: such a worker
 * loaded the global epoch after the unlink and cannot have found the object.
 * The seq_cst fence after the announcement orders it before the reader's
 * pointer loads (store-load ordering); on x86 that is one locked instruction
 * per burst, not per packet.
 */
#ifndef QUICOFF_EPOCH_H
#define QUICOFF_EPOCH_H

#include <stdatomic.h>
#include <stdint.h>

struct qo_retire_node {
    struct qo_retire_node *next;
    uint64_t epoch;
    void (*release)(struct qo_retire_node *node, void *owner);
};

struct qo_epoch {
    _Atomic uint64_t global; /* starts at 1; 0 means "quiescent" */
    unsigned max_readers;
    _Atomic(_Atomic uint64_t *) *readers; /* announced epochs, NULL = unused slot */
    struct qo_retire_node *retired;       /* writer-owned list (under the table mutex) */
    uint64_t retired_count;
};

int qo_epoch_init(struct qo_epoch *e, unsigned max_readers);
void qo_epoch_fini(struct qo_epoch *e, void *owner);
/* Registers a reader's announcement word; returns its index or -1 when full. */
int qo_epoch_register(struct qo_epoch *e, _Atomic uint64_t *announce);
void qo_epoch_unregister(struct qo_epoch *e, int index);

static inline void qo_epoch_enter(struct qo_epoch *e, _Atomic uint64_t *announce)
{
    atomic_store_explicit(announce, atomic_load_explicit(&e->global, memory_order_relaxed),
                          memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
}

static inline void qo_epoch_exit(_Atomic uint64_t *announce)
{
    atomic_store_explicit(announce, 0, memory_order_release);
}

/* Writer: the object is already unlinked; queue it for release. */
void qo_epoch_retire(struct qo_epoch *e, struct qo_retire_node *node);
/* Writer: releases what no reader can hold; returns how many still wait. */
uint64_t qo_epoch_reclaim(struct qo_epoch *e, void *owner);
/* Writer (under the table mutex, so no reader unregisters meanwhile): waits
 * until every reader that may be inside a section begun before this call has
 * left it, i.e. is quiescent or announced a later epoch; a section is one
 * burst or one prepare..complete window, microseconds. Gives up after max_ns
 * (a caller inside a window of its own, a window never completed): returns 1
 * when they have left, 0 when it gave up. */
int qo_epoch_wait(struct qo_epoch *e, uint64_t max_ns);

#endif
