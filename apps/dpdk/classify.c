/* SPDX-License-Identifier: Apache-2.0 */
/* Frame classification and sorting, shared by the I/O lcore and run-to-completion workers. */
#include "classify.h"

#include <string.h>

#include <rte_ethdev.h>
#include <rte_ring.h>

#include "encap.h"
#include "host_mac.h"
#include "options.h"
#include "qo_bytes.h"
#include "steering.h"
#include "wipe.h"
#include "quicoff/wire.h"

/* The DCID of the QUIC packet at the start of a UDP payload, found by the
 * library's own header parse (quicoff_peek_header): true and its offset /
 * length, or false when the payload cannot be a QUIC packet this offload
 * handles. A long header is steered whenever its DCID is inside the
 * datagram, whatever its version (RFC 8999 keeps the DCID in place): the
 * worker's unprotect then says unsupported or malformed, and counts it. A
 * short header must hold its DCID, a packet number byte and the tag. The
 * fixed bit is not looked at: a peer may grease it (RFC 9287), and only the
 * entry the DCID finds says whether that is allowed. */
static bool quic_dcid(const uint8_t *p, uint32_t len, uint32_t *off, uint8_t *dcid_len)
{
    struct quicoff_header_info h;
    quicoff_status_t st = quicoff_peek_header(p, len, 0, qda.opt->local_cid_len, &h);
    if (h.long_header) {
        if (!h.dcid_off) /* the DCID is not inside the datagram */
            return false;
    } else if (st != QUICOFF_OK || len < h.dcid_off + h.dcid_len + 1u + QUICOFF_TAG_LEN) {
        return false;
    }
    *off = h.dcid_off;
    *dcid_len = h.dcid_len;
    return true;
}

static inline void steer(struct qd_sort *s, unsigned wid, struct rte_mbuf *m)
{
    s->steer[wid][s->nsteer[wid]++] = m;
}

void qd_classify_host(struct qd_sort *s, struct rte_mbuf *m)
{
    struct qd_counters *st = s->st;
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = rte_pktmbuf_data_len(m);
    uint16_t et, l2;
    switch (qd_eth_parse(p, len, &l2, &et)) {
    case QD_ETH_OK:
        break;
    case QD_ETH_DEEP:
        /* maybe an offload frame we cannot see into: never forwarded, and
         * wiped, since it may be an ADD with its keys */
        QD_INC(st, tag_stack_dropped);
        qd_mbuf_free_wiped(m);
        return;
    default:
        QD_INC(st, host_bad_frame);
        qd_mbuf_free_wiped(m); /* unparsed: it may be signaling behind tags */
        return;
    }
    if (m->nb_segs > 1) {
        if (et != QUICOFF_WIRE_ETHERTYPE_SIGNAL && et != QUICOFF_WIRE_ETHERTYPE_DATA)
            goto pass; /* a jumbo frame of the host's own: not ours to look at */
        QD_INC(st, multiseg_dropped);
        qd_mbuf_free_wiped(m);
        return;
    }
    if (et == QUICOFF_WIRE_ETHERTYPE_DATA) {
        qd_host_mac_learn(p);
        if (!qda.opt->compat) {
            QD_INC(st, compat_rejected);
            qd_mbuf_free_wiped(m);
            return;
        }
        if (len < (uint32_t)l2 + QUICOFF_WIRE_COMPAT_DATA_HDR_LEN + 1) {
            QD_INC(st, host_bad_frame);
            qd_mbuf_free_wiped(m);
            return;
        }
        m->l2_len = l2;
        m->hash.usr = QD_CLASS_HOST_DATA_COMPAT;
        steer(s, qd_steer_index(qo_load_be16(p + l2), qda.nb_workers), m);
        return;
    }
    if (et == QUICOFF_WIRE_ETHERTYPE_SIGNAL) {
        qd_host_mac_learn(p);
        if (len >= (uint32_t)l2 + 3 && p[l2] == QUICOFF_WIRE_MAGIC &&
            (p[l2 + 2] == QUICOFF_WIRE_DATA_TO_OFFLOAD || p[l2 + 2] == QUICOFF_WIRE_DATA_TRAIN)) {
            /* v1 data header (docs/protocol.md §4.2, a train's §4.2.1): the index at offset 4;
             * the worker decodes and checks the rest */
            if (len < (uint32_t)l2 + QUICOFF_WIRE_DATA_HDR_LEN) {
                QD_INC(st, host_bad_frame);
                qd_mbuf_free_wiped(m);
                return;
            }
            uint32_t index = qo_load_be32(p + l2 + 4);
            m->l2_len = l2;
            m->hash.usr = QD_CLASS_HOST_DATA_V1;
            steer(s, qd_steer_index(index, qda.nb_workers), m);
            return;
        }
        /* signaling: the control thread decodes and applies it (the ring is
         * multi-producer in run-to-completion mode: any worker may see it) */
        if (rte_ring_enqueue(qda.ctrl_ring, m) != 0) {
            QD_INC(st, ctrl_ring_full);
            qd_mbuf_free_wiped(m); /* it may carry keys */
        }
        return;
    }
pass:
    /* the host's own traffic (ARP, handshake packets, ...): a bump in the wire,
     * but not a frame the port cut short */
    if (qd_ip_truncated(p, len, rte_pktmbuf_pkt_len(m), l2, et)) {
        QD_INC(st, truncated_dropped);
        rte_pktmbuf_free(m);
        return;
    }
    QD_INC(st, pass_to_net);
    s->to_net[s->n_net++] = m;
}

void qd_classify_net(struct qd_sort *s, struct rte_mbuf *m)
{
    struct qd_counters *st = s->st;
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = rte_pktmbuf_data_len(m);
    uint16_t et = 0, l2 = 0;
    enum qd_eth_result l2r = qd_eth_parse(p, len, &l2, &et);
    struct qd_udp_info u;
    uint32_t off;
    uint8_t dl;
    if (l2r == QD_ETH_DEEP) {
        QD_INC(st, tag_stack_dropped);
        qd_mbuf_free_wiped(m); /* it may be signaling (keys) behind the tags */
        return;
    }
    /* Host<->offload frames are accepted on the host port only. */
    if (l2r == QD_ETH_OK &&
        (et == QUICOFF_WIRE_ETHERTYPE_SIGNAL || et == QUICOFF_WIRE_ETHERTYPE_DATA)) {
        QD_INC(st, signal_from_network);
        qd_mbuf_free_wiped(m); /* an ADD sent the wrong way still carries keys */
        return;
    }
    if (m->nb_segs > 1 || qd_udp_parse(p, len, &u) != 0 ||
        !quic_dcid(p + u.payload_off, u.payload_len, &off, &dl)) {
        /* not QUIC, or not a datagram this offload handles (multi-segment
         * jumbo, IP options, fragments): the host's business, unless the
         * port cut it short */
        if (l2r == QD_ETH_OK && qd_ip_truncated(p, len, rte_pktmbuf_pkt_len(m), l2, et)) {
            QD_INC(st, truncated_dropped);
            rte_pktmbuf_free(m);
        } else if (qda.opt->unknown == QD_UNKNOWN_DROP) {
            QD_INC(st, unknown_dropped);
            rte_pktmbuf_free(m);
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

unsigned qd_poll_ports(struct qd_sort *s, uint16_t queue)
{
    struct rte_mbuf *m[QD_BURST];
    uint16_t nh = rte_eth_rx_burst(qda.host_port, queue, m, QD_BURST);
    QD_ADD(s->st, host_rx, nh);
    for (uint16_t i = 0; i < nh; i++)
        qd_classify_host(s, m[i]);
    uint16_t nn = rte_eth_rx_burst(qda.net_port, queue, m, QD_BURST);
    QD_ADD(s->st, net_rx, nn);
    for (uint16_t i = 0; i < nn; i++)
        qd_classify_net(s, m[i]);
    return (unsigned)nh + nn;
}
