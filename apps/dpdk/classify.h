/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Classify frames as they come off a port, and sort them by where they go
 * next: to the worker that owns the connection (steering), straight to the
 * other port (pass-through), or to the control thread (signaling).
 *
 * Used by whichever lcore polls a port: the I/O lcore in pipeline mode, every
 * worker in run-to-completion mode. Every read is bounds-checked; the worker
 * re-checks what it relies on.
 */
#ifndef QD_CLASSIFY_H
#define QD_CLASSIFY_H

#include <stdbool.h>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "qd.h"
#include "stats.h"

/* Frames of one or two RX bursts, sorted; owned by one lcore. */
struct qd_sort {
    struct qd_counters *st;
    struct rte_mbuf *steer[QD_MAX_WORKERS][2 * QD_BURST]; /* per owning worker */
    unsigned nsteer[QD_MAX_WORKERS];
    struct rte_mbuf *to_host[2 * QD_BURST], *to_net[2 * QD_BURST]; /* pass-through */
    unsigned n_host, n_net;
};

/* A frame from the host port: host data (steered by index), signaling (to
 * the control ring), or the host's own traffic (to_net). */
void qd_classify_host(struct qd_sort *s, struct rte_mbuf *m);
/* A frame from the network port: QUIC of ours (steered by DCID, or by local
 * address+port for zero-length CIDs), or anything else (to_host, or dropped
 * with --unknown drop). Offload frames from this side are dropped. */
void qd_classify_net(struct qd_sort *s, struct rte_mbuf *m);

/* One RX burst from queue `queue` of each port, every frame classified into
 * s (host_rx / net_rx counted). Returns the number of frames received. */
unsigned qd_poll_ports(struct qd_sort *s, uint16_t queue);

#endif
