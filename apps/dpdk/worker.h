/* SPDX-License-Identifier: Apache-2.0 */
/* The worker lcores' loops (run-to-completion or pipeline) and their per-lcore state. */
#ifndef QD_WORKER_H
#define QD_WORKER_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "qd.h"
#include "stats.h"
#include "quicoff/wire.h"

struct qd_la_worker;
struct qd_sort;

/* One per worker lcore, written by that lcore only. */
struct qd_worker {
    unsigned id;
    uint16_t queue;            /* rtc: the RX and TX queue of both ports it owns */
    struct qd_sort *sort;      /* rtc: its frames as classified, by owner */
    struct quicoff_worker *qw; /* libquicoff worker: this lcore's epoch and counters */
    struct qd_la_worker *la;   /* lookaside: this worker's cryptodev queue pair */
    struct qd_counters *st;
    /* frames produced by the current burst, flushed to the TX rings after it */
    struct rte_mbuf *to_host[2 * QD_BURST + 8];
    struct rte_mbuf *to_net[QD_BURST];
    unsigned n_host, n_net;
    /* rtc: frames waiting for the port, per port (0 = host, 1 = network):
     * sent once QD_BURST are waiting, when a poll round found nothing more to
     * do, or after --tx-drain-us (as l2fwd / ipsec-secgw buffer their TX) */
    struct qd_txbuf {
        struct rte_mbuf *m[4 * QD_BURST];
        unsigned n;
        uint64_t since; /* TSC of the oldest frame */
    } txb[2];
    uint64_t now; /* TSC at the start of the current poll round */
    /* events: earliest TSC of the next event of each code (rate limit) */
    uint64_t ev_next[QUICOFF_WIRE_EV_COUNT]; /* events without an entry */
    uint64_t ev_gap;
} __rte_cache_aligned;

extern struct qd_worker qd_workers[QD_MAX_WORKERS];

/* Pipeline mode: a worker lcore's loop; arg = its struct qd_worker. */
int qd_worker_main(void *arg);
/* Run-to-completion mode: a worker's loop; arg = its struct qd_worker.
 * Worker 0 runs on the main lcore and returns when qda.quit is set, the
 * others when qda.workers_quit is. */
int qd_rtc_main(void *arg);

#endif
