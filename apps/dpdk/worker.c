/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The worker lcores.
 *
 * Run-to-completion (--io-mode rtc, the default): worker w polls queue w of
 * both ports, classifies each frame (classify.c), processes the frames of the
 * connections it owns, hands the others to their owner's ring, and sends its
 * results on its own TX queue w of each port. Worker 0 runs on the main lcore
 * and also sends the control thread's frames and prints the counters.
 *
 * Pipeline (--io-mode pipeline): a worker dequeues a burst from its ring
 * (filled by the I/O lcore, io_lcore.c) and enqueues its results on the TX
 * rings the I/O lcore drains.
 *
 * Either way, a burst is split into host frames (TX path, tx_path.c) and
 * network datagrams (RX path, rx_path.c), each processed as a burst; and
 * each worker reports a quiescent state to RCU once per loop (so the control
 * thread can free what it unpublished).
 */
#include "worker.h"

#include <stdio.h>

#include <rte_cycles.h>
#include <rte_rcu_qsbr.h>

#include "classify.h"
#include "idle.h"
#include "options.h"
#include "output.h"
#include "rings.h"
#include "rx_path.h"
#include "tx_path.h"

struct qd_worker qd_workers[QD_MAX_WORKERS];

/* Frames of connections this worker owns, host and network mixed: each kind
 * as a burst of at most QD_BURST, results flushed after each. */
static void process(struct qd_worker *w, struct rte_mbuf **m, unsigned n)
{
    struct rte_mbuf *tx[QD_BURST], *rx[QD_BURST];
    while (n) {
        unsigned k = n < QD_BURST ? n : QD_BURST, nt = 0, nr = 0;
        for (unsigned i = 0; i < k; i++) {
            if (m[i]->hash.usr <= QD_CLASS_HOST_DATA_V1)
                tx[nt++] = m[i];
            else
                rx[nr++] = m[i];
        }
        if (nt) {
            qd_tx_burst(w, tx, nt);
            qd_out_flush(w);
        }
        if (nr) {
            qd_rx_burst(w, rx, nr);
            qd_out_flush(w);
        }
        m += k;
        n -= k;
    }
}

static void worker_online(struct qd_worker *w)
{
    w->st = qd_my_stats();
    w->ev_gap = rte_get_tsc_hz() / 10; /* at most one event per (entry, code) per 100 ms */
    rte_rcu_qsbr_thread_register(qda.rcu, w->id);
    rte_rcu_qsbr_thread_online(qda.rcu, w->id);
}

static void worker_offline(struct qd_worker *w)
{
    rte_rcu_qsbr_thread_offline(qda.rcu, w->id);
    rte_rcu_qsbr_thread_unregister(qda.rcu, w->id);
}

int qd_worker_main(void *arg)
{
    struct qd_worker *w = arg;
    struct rte_ring *in = qda.worker_ring[w->id];
    struct rte_mbuf *m[QD_BURST];

    worker_online(w);
    printf("quicoff-dpdk: worker %u on lcore %u\n", w->id, rte_lcore_id());
    unsigned empty = 0;
    while (!qda.workers_quit) {
        uint64_t t0 = rte_rdtsc();
        unsigned n = rte_ring_sc_dequeue_burst(in, (void **)m, QD_BURST, NULL);
        qd_idle(&empty, n != 0);
        if (n) {
            process(w, m, n);
            QD_ADD(w->st, busy_cycles, rte_rdtsc() - t0);
        }
        rte_rcu_qsbr_quiescent(qda.rcu, w->id);
    }
    worker_offline(w);
    return 0;
}

int qd_rtc_main(void *arg)
{
    struct qd_worker *w = arg;
    struct qd_sort *s = w->sort;
    struct rte_ring *in = qda.worker_ring[w->id];
    struct rte_mbuf *m[QD_BURST];
    struct qd_stats_timer timer = {0, 0};
    const bool first = w->id == 0; /* on the main lcore */
    volatile bool *quit = first ? &qda.quit : &qda.workers_quit;

    worker_online(w);
    s->st = w->st;
    if (first)
        qd_stats_timer_init(&timer);
    printf("quicoff-dpdk: worker %u on lcore %u, queue %u of host port %u and network port %u\n",
           w->id, rte_lcore_id(), w->queue, qda.host_port, qda.net_port);
    fflush(stdout);
    unsigned empty = 0;
    const uint64_t drain_tsc = rte_get_tsc_hz() * qda.opt->tx_drain_us / 1000000;
    while (!*quit) {
        uint64_t t0 = w->now = rte_rdtsc();
        bool busy = qd_poll_ports(s, w->queue) != 0;

        /* ours now; the others' to their owners (one ring hop) */
        process(w, s->steer[w->id], s->nsteer[w->id]);
        s->nsteer[w->id] = 0;
        for (unsigned o = 0; o < qda.nb_workers; o++)
            if (o != w->id)
                qd_handoff(s, o);
        qd_out_port_add(w, QD_OUT_NET, s->to_net, s->n_net);
        qd_out_port_add(w, QD_OUT_HOST, s->to_host, s->n_host);
        s->n_net = s->n_host = 0;

        /* frames other workers received for our connections */
        if (qda.nb_workers > 1) {
            unsigned n = rte_ring_sc_dequeue_burst(in, (void **)m, QD_BURST, NULL);
            busy |= n != 0;
            process(w, m, n);
        }
        if (first) {
            /* the control thread's ACKs and events */
            busy |= qd_drain_ring(qda.host_tx_ring, qda.host_port, w->queue, w->st, true);
            busy |= qd_drain_ring(qda.net_tx_ring, qda.net_port, w->queue, w->st, false);
            qd_stats_timer_tick(&timer);
        }
        qd_out_port_drain(w, busy, drain_tsc);
        if (busy)
            QD_ADD(w->st, busy_cycles, rte_rdtsc() - t0);
        qd_idle(&empty, busy);
        rte_rcu_qsbr_quiescent(qda.rcu, w->id);
    }
    qd_out_port_flush(w, QD_OUT_HOST);
    qd_out_port_flush(w, QD_OUT_NET);
    worker_offline(w);
    return 0;
}
