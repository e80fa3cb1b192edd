/* SPDX-License-Identifier: Apache-2.0 */
/* Handing frames on to worker rings, TX rings and ports (rings.h). */
#include "rings.h"

#include <rte_ethdev.h>

void qd_handoff(struct qd_sort *s, unsigned w)
{
    unsigned k = s->nsteer[w];
    if (!k)
        return;
    unsigned sent = rte_ring_enqueue_burst(qda.worker_ring[w], (void **)s->steer[w], k, NULL);
    QD_ADD(s->st, steered, sent);
    if (sent < k) {
        QD_ADD(s->st, steer_ring_full, k - sent);
        rte_pktmbuf_free_bulk(s->steer[w] + sent, k - sent);
    }
    s->nsteer[w] = 0;
}

bool qd_drain_ring(struct rte_ring *r, uint16_t port, uint16_t queue, struct qd_counters *st,
                   bool to_host)
{
    struct rte_mbuf *m[QD_BURST];
    bool any = false;
    /* a bounded number of bursts: the caller's other queues wait meanwhile */
    for (int round = 0; round < 4; round++) {
        unsigned n = rte_ring_sc_dequeue_burst(r, (void **)m, QD_BURST, NULL);
        if (!n)
            break;
        qd_tx_or_free(port, queue, m, n, st, to_host);
        any = true;
    }
    return any;
}

void qd_enqueue_or_free(struct rte_ring *r, struct rte_mbuf **m, unsigned n,
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

void qd_tx_or_free(uint16_t port, uint16_t queue, struct rte_mbuf **m, unsigned n,
                   struct qd_counters *st, bool to_host)
{
    if (!n)
        return;
    uint16_t sent = rte_eth_tx_burst(port, queue, m, (uint16_t)n);
    if (to_host)
        QD_ADD(st, host_tx, sent);
    else
        QD_ADD(st, net_tx, sent);
    if (sent < n) {
        QD_ADD(st, tx_port_full, n - sent);
        rte_pktmbuf_free_bulk(m + sent, n - sent);
    }
}
