/* SPDX-License-Identifier: Apache-2.0 */
/* A worker's output buffering (output.h). */
#include "output.h"

#include <string.h>

#include "options.h"
#include "rings.h"

void qd_out_host(struct qd_worker *w, struct rte_mbuf *m)
{
    if (w->n_host == RTE_DIM(w->to_host)) {
        QD_INC(w->st, tx_ring_full);
        rte_pktmbuf_free(m);
        return;
    }
    w->to_host[w->n_host++] = m;
}

void qd_out_net(struct qd_worker *w, struct rte_mbuf *m)
{
    if (w->n_net == RTE_DIM(w->to_net)) {
        QD_INC(w->st, tx_ring_full);
        rte_pktmbuf_free(m);
        return;
    }
    w->to_net[w->n_net++] = m;
}

/* rtc port buffers (struct qd_txbuf): one rte_eth_tx_burst per QD_BURST
 * frames under load instead of one per poll round. On af_packet each burst is
 * a sendto() system call; on a NIC, a doorbell write. */
void qd_out_port_flush(struct qd_worker *w, enum qd_out_port port)
{
    struct qd_txbuf *b = &w->txb[port];
    if (!b->n)
        return;
    qd_tx_or_free(port == QD_OUT_NET ? qda.net_port : qda.host_port, w->queue, b->m, b->n, w->st,
                  port == QD_OUT_HOST);
    b->n = 0;
}

void qd_out_port_add(struct qd_worker *w, enum qd_out_port port, struct rte_mbuf **m, unsigned n)
{
    struct qd_txbuf *b = &w->txb[port];
    while (n) {
        if (!b->n)
            b->since = w->now;
        unsigned k = RTE_MIN(n, RTE_DIM(b->m) - b->n);
        memcpy(&b->m[b->n], m, k * sizeof(*m));
        b->n += k;
        m += k;
        n -= k;
        if (b->n >= QD_BURST)
            qd_out_port_flush(w, port);
    }
}

void qd_out_port_drain(struct qd_worker *w, bool found_work, uint64_t drain_tsc)
{
    /* nothing more came in: no reason to hold what waits */
    for (unsigned i = 0; i < RTE_DIM(w->txb); i++)
        if (w->txb[i].n && (!found_work || w->now - w->txb[i].since >= drain_tsc))
            qd_out_port_flush(w, (enum qd_out_port)i);
}

void qd_out_flush(struct qd_worker *w)
{
    if (qda.opt->io_mode == QD_IO_RTC) {
        qd_out_port_add(w, QD_OUT_NET, w->to_net, w->n_net);
        qd_out_port_add(w, QD_OUT_HOST, w->to_host, w->n_host);
    } else {
        qd_enqueue_or_free(qda.net_tx_ring, w->to_net, w->n_net, w->st);
        qd_enqueue_or_free(qda.host_tx_ring, w->to_host, w->n_host, w->st);
    }
    w->n_net = w->n_host = 0;
}
