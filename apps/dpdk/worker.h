/* SPDX-License-Identifier: Apache-2.0 */
/* The lcore loops: workers (run-to-completion or pipeline) and the I/O lcore of pipeline mode. */
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
    uint16_t queue;             /* rtc: the RX and TX queue of both ports it owns */
    struct qd_sort *sort;       /* rtc: its frames as classified, by owner */
    struct quicoff_worker *qw;  /* libquicoff worker: this lcore's epoch and counters */
    struct qd_la_worker *la;    /* lookaside: this worker's cryptodev queue pair */
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
    uint64_t now;       /* TSC at the start of the current poll round */
    /* events: earliest TSC of the next event of each code (rate limit) */
    uint64_t ev_next[QUICOFF_WIRE_EV_COUNT]; /* events without an entry */
    uint64_t ev_gap;
} __rte_cache_aligned;

extern struct qd_worker qd_workers[QD_MAX_WORKERS];

/* Pipeline mode: the I/O lcore's loop (run on the main lcore); returns when
 * qda.quit is set. */
int qd_io_main(void);
/* Pipeline mode: a worker lcore's loop; arg = its struct qd_worker. */
int qd_worker_main(void *arg);
/* Run-to-completion mode: a worker's loop; arg = its struct qd_worker.
 * Worker 0 runs on the main lcore and returns when qda.quit is set, the
 * others when qda.workers_quit is. */
int qd_rtc_main(void *arg);

/* Hands worker w the frames sorted for it (its ring); counts what did not fit. */
void qd_handoff(struct qd_sort *s, unsigned w);
/* Sends what a TX ring holds on (port, queue); returns whether anything was sent. */
bool qd_drain_ring(struct rte_ring *r, uint16_t port, uint16_t queue, struct qd_counters *st,
                   bool to_host);
/* Called once per poll loop with whether it found work: --idle-us sleeps,
 * or a yield when lcores share a CPU. */
void qd_idle(unsigned *empty, bool busy);

/* The periodic counter print (--stats-interval) of the main lcore's loop. */
struct qd_poll_timer {
    uint64_t period, next;
};
void qd_poll_timer_init(struct qd_poll_timer *t);
void qd_poll_timer_tick(struct qd_poll_timer *t);

/* Queue a frame for the host / network port (flushed at the end of the burst). */
void qd_worker_to_host(struct qd_worker *w, struct rte_mbuf *m);
void qd_worker_to_net(struct qd_worker *w, struct rte_mbuf *m);

/* An EVENT to the host (docs/protocol.md §4.9). */
struct qd_event {
    uint8_t code;   /* quicoff_wire_event_code_t */
    uint8_t status; /* quicoff_status_t */
    bool has_pn, has_count, has_gen, has_level;
    uint64_t pn, count;
    uint32_t gen;
    uint8_t level;
    const uint8_t *dcid; /* NULL = none */
    uint8_t dcid_len;
    const struct quicoff_addr *local, *remote;
    bool has_mtu;
    uint32_t mtu;   /* too_big: the network MTU */
};
/* Sends it (v1 entries and unknown connections only), at most one per
 * (entry, code) per 100 ms, key updates always. */
struct qd_conn;
void qd_worker_event(struct qd_worker *w, const struct qd_conn *c, const struct qd_event *e);

/* The destination MAC of frames to the host. */
void qd_host_mac(struct rte_ether_addr *a);

/* tx_path.c: host frames -> protect -> encapsulate -> network. */
void qd_tx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n);
/* rx_path.c: network datagrams -> unprotect -> host frames. */
void qd_rx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n);

#endif
