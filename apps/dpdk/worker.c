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
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_rcu_qsbr.h>

#include "classify.h"
#include "conns.h"
#include "lookaside.h"
#include "options.h"

struct qd_worker qd_workers[QD_MAX_WORKERS];

#define IDLE_POLLS 256
#define YIELD_POLLS 4

/* --idle-us: after IDLE_POLLS empty polls in a row, give the CPU away.
 * Busy-polling (--idle-us 0) with lcores sharing a CPU: yield after a few
 * empty polls, so the lcore with work (the other end of a ring) runs now
 * instead of at the next scheduler tick. */
void qd_idle(unsigned *empty, bool busy)
{
    if (busy) {
        *empty = 0;
    } else if (qda.opt->idle_us) {
        if (++*empty >= IDLE_POLLS) {
            usleep(qda.opt->idle_us);
            *empty = 0;
        }
    } else if (qda.lcores_share_cpu && ++*empty >= YIELD_POLLS) {
        sched_yield();
        *empty = 0;
    }
}

void qd_poll_timer_init(struct qd_poll_timer *t)
{
    t->period = qda.opt->stats_interval * rte_get_tsc_hz();
    t->next = t->period ? rte_rdtsc() + t->period : 0;
}

void qd_poll_timer_tick(struct qd_poll_timer *t)
{
    if (t->next && rte_rdtsc() >= t->next) {
        qd_stats_print("counters");
        t->next += t->period;
    }
}

void qd_host_mac(struct rte_ether_addr *a)
{
    if (qda.opt->has_host_mac) {
        *a = qda.opt->host_mac;
        return;
    }
    uint64_t v = atomic_load_explicit(&qda.host_mac, memory_order_relaxed);
    if (v & QD_HOST_MAC_VALID)
        qd_u64_to_mac(v, a);
    else
        memset(a->addr_bytes, 0xff, RTE_ETHER_ADDR_LEN); /* nothing learned yet: broadcast */
}

/* ------------------------------------------------------------ workers */

void qd_worker_to_host(struct qd_worker *w, struct rte_mbuf *m)
{
    if (w->n_host == RTE_DIM(w->to_host)) {
        QD_INC(w->st, tx_ring_full);
        rte_pktmbuf_free(m);
        return;
    }
    w->to_host[w->n_host++] = m;
}

void qd_worker_to_net(struct qd_worker *w, struct rte_mbuf *m)
{
    if (w->n_net == RTE_DIM(w->to_net)) {
        QD_INC(w->st, tx_ring_full);
        rte_pktmbuf_free(m);
        return;
    }
    w->to_net[w->n_net++] = m;
}

/* rtc TX buffers (struct qd_txbuf): one rte_eth_tx_burst per QD_BURST
 * frames under load instead of one per poll round. On af_packet each burst is
 * a sendto() system call; on a NIC, a doorbell write. */
static void txb_flush(struct qd_worker *w, unsigned port_idx)
{
    struct qd_txbuf *b = &w->txb[port_idx];
    if (!b->n)
        return;
    qd_tx_or_free(port_idx ? qda.net_port : qda.host_port, w->queue, b->m, b->n, w->st,
                  port_idx == 0);
    b->n = 0;
}

static void txb_add(struct qd_worker *w, unsigned port_idx, struct rte_mbuf **m, unsigned n)
{
    struct qd_txbuf *b = &w->txb[port_idx];
    while (n) {
        if (!b->n)
            b->since = w->now;
        unsigned k = RTE_MIN(n, RTE_DIM(b->m) - b->n);
        memcpy(&b->m[b->n], m, k * sizeof(*m));
        b->n += k;
        m += k;
        n -= k;
        if (b->n >= QD_BURST)
            txb_flush(w, port_idx);
    }
}

/* End of a poll round: send what waits when nothing more came in (no reason
 * to hold it), or when the oldest frame has waited --tx-drain-us. */
static void txb_drain(struct qd_worker *w, bool found_work, uint64_t drain_tsc)
{
    for (unsigned i = 0; i < 2; i++)
        if (w->txb[i].n && (!found_work || w->now - w->txb[i].since >= drain_tsc))
            txb_flush(w, i);
}

/* The results of a burst: to the worker's TX buffers (rtc), or to the I/O
 * lcore's TX rings (pipeline). */
static void worker_flush(struct qd_worker *w)
{
    if (qda.opt->io_mode == QD_IO_RTC) {
        txb_add(w, 1, w->to_net, w->n_net);
        txb_add(w, 0, w->to_host, w->n_host);
    } else {
        qd_enqueue_or_free(qda.net_tx_ring, w->to_net, w->n_net, w->st);
        qd_enqueue_or_free(qda.host_tx_ring, w->to_host, w->n_host, w->st);
    }
    w->n_net = w->n_host = 0;
}

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
            worker_flush(w);
        }
        if (nr) {
            qd_rx_burst(w, rx, nr);
            worker_flush(w);
        }
        m += k;
        n -= k;
    }
}

static _Atomic uint32_t ev_seq; /* the offload's event sequence number */

void qd_worker_event(struct qd_worker *w, const struct qd_conn *c, const struct qd_event *e)
{
    /* every code has its rate-limit slot per entry (too_big is code 7 of 8) */
    RTE_BUILD_BUG_ON(QUICOFF_WIRE_EV_COUNT > RTE_DIM(((struct qd_slot_state *)0)->ev_next));
    if (!qda.opt->events || (c && c->compat) || e->code >= QUICOFF_WIRE_EV_COUNT)
        return;
    if (!c && qda.opt->compat &&
        !atomic_load_explicit(&qda.host_speaks_v1, memory_order_relaxed)) {
        /* a compat host cannot parse v1 frames: none until the host speaks v1 */
        QD_INC(w->st, events_not_v1);
        return;
    }
    if (e->code != QUICOFF_WIRE_EV_KEY_UPDATE) {
        uint64_t *next = c ? &qd_slot_of(qda.conns, c)->ev_next[e->code] : &w->ev_next[e->code];
        uint64_t now = rte_rdtsc();
        if (now < *next) {
            QD_INC(w->st, events_suppressed);
            return;
        }
        *next = now + w->ev_gap;
    }
    struct rte_mbuf *m = rte_pktmbuf_alloc(qda.pool);
    if (!m) {
        QD_INC(w->st, mbuf_alloc_failed);
        return;
    }
    struct quicoff_wire_msg msg;
    struct rte_ether_addr dst;
    quicoff_wire_msg_init(&msg, QUICOFF_WIRE_EVENT);
    msg.has_eth = true;
    qd_host_mac(&dst);
    memcpy(msg.eth.dst, dst.addr_bytes, 6);
    memcpy(msg.eth.src, qda.host_port_mac.addr_bytes, 6);
    msg.request_id = atomic_fetch_add_explicit(&ev_seq, 1, memory_order_relaxed) + 1;
    msg.index = c ? c->index : QUICOFF_WIRE_INDEX_NONE;
    msg.direction = c ? c->direction : QUICOFF_DIR_RX;
    msg.status = e->status;
    struct quicoff_wire_event *ev = &msg.u.event;
    ev->code = e->code;
    ev->has_pn = e->has_pn;
    ev->pn = e->pn;
    ev->has_count = e->has_count;
    ev->count = e->count;
    ev->has_key_generation = e->has_gen;
    ev->key_generation = e->gen;
    ev->has_level = e->has_level;
    ev->level = e->level;
    if (e->dcid) {
        ev->has_dcid = true;
        ev->dcid_len = e->dcid_len;
        memcpy(ev->dcid, e->dcid, e->dcid_len);
    }
    if (e->local)
        ev->local_addr = *e->local;
    if (e->remote)
        ev->remote_addr = *e->remote;
    ev->has_mtu = e->has_mtu;
    ev->mtu = e->mtu;
    size_t len = 0;
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    if (quicoff_wire_encode(&msg, p, rte_pktmbuf_tailroom(m), &len) != QUICOFF_OK ||
        !rte_pktmbuf_append(m, (uint16_t)len)) {
        rte_pktmbuf_free(m);
        return;
    }
    QD_INC(w->st, events_sent);
    qd_worker_to_host(w, m);
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
    struct qd_poll_timer timer = {0, 0};
    const bool first = w->id == 0; /* on the main lcore */
    volatile bool *quit = first ? &qda.quit : &qda.workers_quit;

    worker_online(w);
    s->st = w->st;
    if (first)
        qd_poll_timer_init(&timer);
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
        txb_add(w, 1, s->to_net, s->n_net);
        txb_add(w, 0, s->to_host, s->n_host);
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
            qd_poll_timer_tick(&timer);
        }
        txb_drain(w, busy, drain_tsc);
        if (busy)
            QD_ADD(w->st, busy_cycles, rte_rdtsc() - t0);
        qd_idle(&empty, busy);
        rte_rcu_qsbr_quiescent(qda.rcu, w->id);
    }
    txb_flush(w, 0);
    txb_flush(w, 1);
    worker_offline(w);
    return 0;
}
