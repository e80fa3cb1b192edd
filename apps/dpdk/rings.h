/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Handing frames on: to a worker's ring, to a TX ring, to a port. Each
 * frees and counts what the ring or the port did not take, so no caller
 * leaks an mbuf under back-pressure.
 */
#ifndef QD_RINGS_H
#define QD_RINGS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "classify.h"
#include "stats.h"

/* Hands worker w the frames sorted for it (its ring); counts what did not fit. */
void qd_handoff(struct qd_sort *s, unsigned w);
/* Sends what a TX ring holds on (port, queue); returns whether anything was sent. */
bool qd_drain_ring(struct rte_ring *r, uint16_t port, uint16_t queue, struct qd_counters *st,
                   bool to_host);
/* Enqueues on a TX ring; frees and counts (tx_ring_full) what did not fit. */
void qd_enqueue_or_free(struct rte_ring *r, struct rte_mbuf **m, unsigned n,
                        struct qd_counters *st);
/* Sends on (port, queue); frees and counts (tx_port_full) what the port did not take. */
void qd_tx_or_free(uint16_t port, uint16_t queue, struct rte_mbuf **m, unsigned n,
                   struct qd_counters *st, bool to_host);

#endif
