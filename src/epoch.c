/* SPDX-License-Identifier: Apache-2.0 */
/* Epoch-based reclamation; see epoch.h for the argument why it is safe. */
#include "epoch.h"

#include <sched.h>
#include <stdlib.h>
#include <time.h>

int qo_epoch_init(struct qo_epoch *e, unsigned max_readers)
{
    atomic_init(&e->global, 1);
    e->max_readers = max_readers;
    e->readers = calloc(max_readers, sizeof(*e->readers));
    e->retired = NULL;
    e->retired_count = 0;
    return e->readers ? 0 : -1;
}

void qo_epoch_fini(struct qo_epoch *e, void *owner)
{
    /* No reader is inside a burst any more (caller's contract): release all. */
    struct qo_retire_node *n = e->retired;
    while (n) {
        struct qo_retire_node *next = n->next;
        n->release(n, owner);
        n = next;
    }
    e->retired = NULL;
    e->retired_count = 0;
    free(e->readers);
    e->readers = NULL;
}

int qo_epoch_register(struct qo_epoch *e, _Atomic uint64_t *announce)
{
    for (unsigned i = 0; i < e->max_readers; i++) {
        if (atomic_load_explicit(&e->readers[i], memory_order_acquire) == NULL) {
            atomic_store_explicit(announce, 0, memory_order_relaxed);
            atomic_store_explicit(&e->readers[i], announce, memory_order_release);
            return (int)i;
        }
    }
    return -1;
}

void qo_epoch_unregister(struct qo_epoch *e, int index)
{
    if (index >= 0 && (unsigned)index < e->max_readers)
        atomic_store_explicit(&e->readers[index], NULL, memory_order_release);
}

void qo_epoch_retire(struct qo_epoch *e, struct qo_retire_node *node)
{
    /* The unlink before this (a seq_cst store by the caller) precedes the
     * ticket in the single total order; see epoch.h. */
    node->epoch = atomic_fetch_add_explicit(&e->global, 1, memory_order_seq_cst);
    node->next = e->retired;
    e->retired = node;
    e->retired_count++;
}

uint64_t qo_epoch_reclaim(struct qo_epoch *e, void *owner)
{
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t oldest = UINT64_MAX; /* smallest epoch a reader is inside */
    for (unsigned i = 0; i < e->max_readers; i++) {
        _Atomic uint64_t *r = atomic_load_explicit(&e->readers[i], memory_order_acquire);
        if (!r)
            continue;
        uint64_t a = atomic_load_explicit(r, memory_order_seq_cst);
        if (a != 0 && a < oldest)
            oldest = a;
    }
    struct qo_retire_node **pp = &e->retired;
    while (*pp) {
        struct qo_retire_node *n = *pp;
        if (n->epoch < oldest) {
            *pp = n->next;
            e->retired_count--;
            n->release(n, owner);
        } else {
            pp = &n->next;
        }
    }
    return e->retired_count;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

int qo_epoch_wait(struct qo_epoch *e, uint64_t max_ns)
{
    /* The ticket orders this call after the caller's seq_cst stores: a
     * reader announcing a later epoch loads after them (see retire). */
    uint64_t r = atomic_fetch_add_explicit(&e->global, 1, memory_order_seq_cst);
    uint64_t deadline = 0;
    for (unsigned i = 0; i < e->max_readers; i++) {
        _Atomic uint64_t *a = atomic_load_explicit(&e->readers[i], memory_order_acquire);
        if (!a)
            continue;
        for (unsigned spins = 0;; spins++) {
            uint64_t v = atomic_load_explicit(a, memory_order_seq_cst);
            if (v == 0 || v > r)
                break;
            uint64_t now = now_ns();
            if (deadline == 0)
                deadline = now + max_ns;
            else if (now > deadline)
                return 0;
            if (spins < 64) {
                sched_yield();
            } else {
                /* a reader that lost its CPU (a busy machine) needs one:
                 * sleep rather than take turns with it */
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            }
        }
    }
    return 1;
}
