/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The lcore loops.
 *
 * I/O lcore (the main lcore): RX burst on both ports -> classify each frame
 * (bounds-checked) -> steer to the owning worker's ring, hand signaling to
 * the control thread, pass other traffic straight through; then drain the
 * TX rings onto the ports; every --stats-interval, print the counters.
 *
 * Workers: dequeue a burst from their ring, split it into host frames (TX
 * path) and network datagrams (RX path), process each group as a burst,
 * enqueue the results on the TX rings, and report a quiescent state to RCU
 * (so the control thread can free what it unpublished).
 */
#include "worker.h"

#include <stdio.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_rcu_qsbr.h>

#include "conns.h"
#include "encap.h"
#include "lookaside.h"
#include "options.h"
#include "steering.h"

struct qd_worker qd_workers[QD_MAX_WORKERS];

#define IDLE_POLLS 256
#define YIELD_POLLS 4

/* --idle-us: after IDLE_POLLS empty polls in a row, give the CPU away.
 * Busy-polling (--idle-us 0) with lcores sharing a CPU: yield after a few
 * empty polls, so the lcore with work (the other end of a ring) runs now
 * instead of at the next scheduler tick. */
static inline void idle(unsigned *empty, bool busy)
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

#define HOST_MAC_VALID (UINT64_C(1) << 48)

void qd_host_mac(struct rte_ether_addr *a)
{
    if (qda.opt->has_host_mac) {
        *a = qda.opt->host_mac;
        return;
    }
    uint64_t v = atomic_load_explicit(&qda.host_mac, memory_order_relaxed);
    if (v & HOST_MAC_VALID)
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

static void enqueue_or_free(struct rte_ring *r, struct rte_mbuf **m, unsigned n,
                            struct qd_counters *st)
{
    if (!n)
        return;
    unsigned sent = rte_ring_enqueue_burst(r, (void **)m, n, NULL);
    if (sent < n) {
        QD_ADD(st, tx_ring_full, n - sent);
        rte_pktmbuf_free_bulk(m + sent, n - sent);
    }
}

static void worker_flush(struct qd_worker *w)
{
    enqueue_or_free(qda.net_tx_ring, w->to_net, w->n_net, w->st);
    enqueue_or_free(qda.host_tx_ring, w->to_host, w->n_host, w->st);
    w->n_net = w->n_host = 0;
}

static _Atomic uint32_t ev_seq; /* the offload's event sequence number */

void qd_worker_event(struct qd_worker *w, const struct qd_conn *c, const struct qd_event *e)
{
    if (!qda.opt->events || (c && c->compat) || e->code >= QUICOFF_WIRE_EV_COUNT)
        return;
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

int qd_worker_main(void *arg)
{
    struct qd_worker *w = arg;
    struct rte_ring *in = qda.worker_ring[w->id];
    struct rte_mbuf *m[QD_BURST], *tx[QD_BURST], *rx[QD_BURST];

    w->st = qd_my_stats();
    w->ev_gap = rte_get_tsc_hz() / 10; /* at most one event per (entry, code) per 100 ms */
    rte_rcu_qsbr_thread_register(qda.rcu, w->id);
    rte_rcu_qsbr_thread_online(qda.rcu, w->id);
    printf("quicoff-dpdk: worker %u on lcore %u\n", w->id, rte_lcore_id());

    unsigned empty = 0;
    while (!qda.workers_quit) {
        unsigned n = rte_ring_sc_dequeue_burst(in, (void **)m, QD_BURST, NULL);
        idle(&empty, n != 0);
        if (n) {
            unsigned nt = 0, nr = 0;
            for (unsigned i = 0; i < n; i++) {
                if (m[i]->hash.usr <= QD_CLASS_HOST_DATA_V1)
                    tx[nt++] = m[i];
                else
                    rx[nr++] = m[i];
            }
            if (nt)
                qd_tx_burst(w, tx, nt);
            if (nr)
                qd_rx_burst(w, rx, nr);
            worker_flush(w);
        }
        rte_rcu_qsbr_quiescent(qda.rcu, w->id);
    }
    rte_rcu_qsbr_thread_offline(qda.rcu, w->id);
    rte_rcu_qsbr_thread_unregister(qda.rcu, w->id);
    return 0;
}

/* ------------------------------------------------------------ I/O lcore */

struct io_state {
    struct qd_counters *st;
    struct rte_mbuf *steer[QD_MAX_WORKERS][2 * QD_BURST];
    unsigned nsteer[QD_MAX_WORKERS];
    struct rte_mbuf *to_host[2 * QD_BURST], *to_net[2 * QD_BURST];
    unsigned n_host, n_net;
};

static void learn_host_mac(const uint8_t *frame)
{
    if (qda.opt->has_host_mac)
        return;
    struct rte_ether_addr src;
    memcpy(src.addr_bytes, frame + 6, 6);
    if (!rte_is_unicast_ether_addr(&src))
        return;
    uint64_t v = qd_mac_to_u64(&src) | HOST_MAC_VALID;
    if (atomic_load_explicit(&qda.host_mac, memory_order_relaxed) != v)
        atomic_store_explicit(&qda.host_mac, v, memory_order_relaxed);
}

static inline void steer(struct io_state *s, unsigned wid, struct rte_mbuf *m)
{
    s->steer[wid][s->nsteer[wid]++] = m;
}

static void drop(struct rte_mbuf *m)
{
    rte_pktmbuf_free(m);
}

static void classify_host(struct io_state *s, struct rte_mbuf *m)
{
    struct qd_counters *st = s->st;
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = rte_pktmbuf_data_len(m);
    uint16_t et;
    uint16_t l2 = qd_eth_parse(p, len, &et);
    if (!l2) {
        QD_INC(st, host_bad_frame);
        drop(m);
        return;
    }
    if (m->nb_segs > 1) {
        if (et != QUICOFF_WIRE_ETHERTYPE_SIGNAL && et != QUICOFF_WIRE_ETHERTYPE_DATA)
            goto pass; /* a jumbo frame of the host's own: not ours to look at */
        QD_INC(st, multiseg_dropped);
        drop(m);
        return;
    }
    if (et == QUICOFF_WIRE_ETHERTYPE_DATA) {
        learn_host_mac(p);
        if (!qda.opt->compat) {
            QD_INC(st, compat_rejected);
            drop(m);
            return;
        }
        if (len < (uint32_t)l2 + QUICOFF_WIRE_COMPAT_DATA_HDR_LEN + 1) {
            QD_INC(st, host_bad_frame);
            drop(m);
            return;
        }
        m->l2_len = l2;
        m->hash.usr = QD_CLASS_HOST_DATA_COMPAT;
        steer(s, qd_steer_index((uint32_t)(p[l2] << 8 | p[l2 + 1]), qda.nb_workers), m);
        return;
    }
    if (et == QUICOFF_WIRE_ETHERTYPE_SIGNAL) {
        learn_host_mac(p);
        if (len >= (uint32_t)l2 + 3 && p[l2] == QUICOFF_WIRE_MAGIC &&
            p[l2 + 2] == QUICOFF_WIRE_DATA_TO_OFFLOAD) {
            /* v1 data header (docs/protocol.md §4.2): the index at offset 4;
             * the worker decodes and checks the rest */
            if (len < (uint32_t)l2 + QUICOFF_WIRE_DATA_HDR_LEN) {
                QD_INC(st, host_bad_frame);
                drop(m);
                return;
            }
            const uint8_t *x = p + l2 + 4;
            uint32_t index = (uint32_t)x[0] << 24 | (uint32_t)x[1] << 16 | x[2] << 8 | x[3];
            m->l2_len = l2;
            m->hash.usr = QD_CLASS_HOST_DATA_V1;
            steer(s, qd_steer_index(index, qda.nb_workers), m);
            return;
        }
        /* signaling: the control thread decodes and applies it */
        if (rte_ring_sp_enqueue(qda.ctrl_ring, m) != 0) {
            QD_INC(st, ctrl_ring_full);
            drop(m);
        }
        return;
    }
pass:
    /* the host's own traffic (ARP, handshake packets, ...): a bump in the wire */
    QD_INC(st, pass_to_net);
    s->to_net[s->n_net++] = m;
}

static void classify_net(struct io_state *s, struct rte_mbuf *m)
{
    struct qd_counters *st = s->st;
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = rte_pktmbuf_data_len(m);
    uint16_t et;
    uint16_t l2 = qd_eth_parse(p, len, &et);
    struct qd_udp_info u;
    uint32_t off;
    uint8_t dl;
    /* Host<->offload frames are accepted on the host port only. */
    if (l2 && (et == QUICOFF_WIRE_ETHERTYPE_SIGNAL || et == QUICOFF_WIRE_ETHERTYPE_DATA)) {
        QD_INC(st, signal_from_network);
        drop(m);
        return;
    }
    if (m->nb_segs > 1 || qd_udp_parse(p, len, &u) != 0 ||
        qd_quic_dcid(p + u.payload_off, u.payload_len, qda.opt->local_cid_len, &off, &dl) != 0) {
        /* not QUIC, or not a datagram this offload handles (multi-segment
         * jumbo, IP options, fragments): the host's business */
        if (qda.opt->unknown == QD_UNKNOWN_DROP) {
            QD_INC(st, unknown_dropped);
            drop(m);
        } else {
            QD_INC(st, pass_to_host);
            s->to_host[s->n_host++] = m;
        }
        return;
    }
    /* Ethernet padding and anything after the datagram go now. */
    rte_pktmbuf_trim(m, (uint16_t)(len - u.payload_off - u.payload_len));
    m->l2_len = u.l2_len;
    m->l3_len = u.l3_len;
    m->l4_len = 8;
    m->hash.usr = u.family == 4 ? QD_CLASS_NET_QUIC4 : QD_CLASS_NET_QUIC6;
    steer(s, qd_steer_net(p + u.payload_off + off, dl, &u.local, qda.nb_workers), m);
}

static void tx_or_free(uint16_t port, struct rte_mbuf **m, unsigned n, struct qd_counters *st,
                       bool host)
{
    if (!n)
        return;
    uint16_t sent = rte_eth_tx_burst(port, 0, m, (uint16_t)n);
    if (host)
        QD_ADD(st, host_tx, sent);
    else
        QD_ADD(st, net_tx, sent);
    if (sent < n) {
        QD_ADD(st, tx_port_full, n - sent);
        rte_pktmbuf_free_bulk(m + sent, n - sent);
    }
}

/* Returns whether anything was sent. */
static bool drain_ring(struct rte_ring *r, uint16_t port, struct qd_counters *st, bool host)
{
    struct rte_mbuf *m[QD_BURST];
    bool any = false;
    for (int round = 0; round < 4; round++) {
        unsigned n = rte_ring_sc_dequeue_burst(r, (void **)m, QD_BURST, NULL);
        if (!n)
            break;
        tx_or_free(port, m, n, st, host);
        any = true;
    }
    return any;
}

int qd_io_main(void)
{
    static struct io_state s; /* large: off the stack */
    struct rte_mbuf *m[QD_BURST];
    const uint64_t hz = rte_get_tsc_hz();
    uint64_t next_print = qda.opt->stats_interval ? rte_rdtsc() + qda.opt->stats_interval * hz : 0;

    s.st = qd_my_stats();
    printf("quicoff-dpdk: I/O on lcore %u (host port %u, network port %u)\n", rte_lcore_id(),
           qda.host_port, qda.net_port);
    fflush(stdout);
    unsigned empty = 0;
    while (!qda.quit) {
        uint16_t n = rte_eth_rx_burst(qda.host_port, 0, m, QD_BURST);
        bool busy = n != 0;
        QD_ADD(s.st, host_rx, n);
        for (uint16_t i = 0; i < n; i++)
            classify_host(&s, m[i]);
        n = rte_eth_rx_burst(qda.net_port, 0, m, QD_BURST);
        busy |= n != 0;
        QD_ADD(s.st, net_rx, n);
        for (uint16_t i = 0; i < n; i++)
            classify_net(&s, m[i]);

        for (unsigned w = 0; w < qda.nb_workers; w++) {
            unsigned k = s.nsteer[w];
            if (!k)
                continue;
            unsigned sent = rte_ring_sp_enqueue_burst(qda.worker_ring[w], (void **)s.steer[w], k,
                                                      NULL);
            if (sent < k) {
                QD_ADD(s.st, steer_ring_full, k - sent);
                rte_pktmbuf_free_bulk(s.steer[w] + sent, k - sent);
            }
            s.nsteer[w] = 0;
        }
        tx_or_free(qda.net_port, s.to_net, s.n_net, s.st, false);
        tx_or_free(qda.host_port, s.to_host, s.n_host, s.st, true);
        s.n_net = s.n_host = 0;
        busy |= drain_ring(qda.net_tx_ring, qda.net_port, s.st, false);
        busy |= drain_ring(qda.host_tx_ring, qda.host_port, s.st, true);
        idle(&empty, busy);

        if (next_print && rte_rdtsc() >= next_print) {
            qd_stats_print("counters");
            next_print += qda.opt->stats_interval * hz;
        }
    }
    return 0;
}
