/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TX path (host -> network), on a worker: host data frame (compat data_pkt on
 * 0x88B6 or v1 DATA_TO_OFFLOAD on 0x88B5: entry index + full PN + plaintext
 * QUIC packet) -> protect (libquicoff, or the cryptodev in lookaside mode) ->
 * Ethernet [+ VLAN] + IPv4|IPv6 + UDP from the entry's encapsulation ->
 * network port. A packet that is not protected is counted and freed here:
 * plaintext never reaches the network port.
 */
#include "tx_path.h"

#include <string.h>

#include <rte_byteorder.h>

#include "conns.h"
#include "encap.h"
#include "events.h"
#include "lookaside.h"
#include "output.h"

/* Index, full PN and the QUIC packet's place in a host data frame. */
struct host_data {
    uint32_t index;
    uint64_t pn;
    uint32_t quic_off, quic_len;
};

/* Both formats through libquicoff's header-only reader: the full decoder's
 * rules (docs/protocol.md §3.5, §4.2) without its ~400-byte message per
 * packet.  Classification (classify.c) steered only compat data_pkt (0x88B6) and v1
 * frames whose Type is DATA_TO_OFFLOAD here; anything else the reader
 * returns (DATA_TO_HOST from the host, another version) is a bad frame. */
static int decode_host_frame(struct rte_mbuf *m, struct host_data *d)
{
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = rte_pktmbuf_data_len(m), l2 = m->l2_len;
    bool compat = m->hash.usr == QD_CLASS_HOST_DATA_COMPAT;
    quicoff_wire_kind_t kind;
    struct quicoff_wire_data wd;
    if (l2 > len ||
        quicoff_wire_data_hdr_read(compat ? QUICOFF_WIRE_ETHERTYPE_DATA
                                          : QUICOFF_WIRE_ETHERTYPE_SIGNAL,
                                   p + l2, len - l2, &kind, &wd) != QUICOFF_OK ||
        kind != (compat ? QUICOFF_WIRE_COMPAT_DATA : QUICOFF_WIRE_DATA_TO_OFFLOAD))
        return -1;
    /* a compat data_pkt's QUIC packet runs to the end of the frame: an empty one is no
     * packet (classification already drops those; kept for a direct caller) */
    if (compat && wd.payload_len == 0)
        return -1;
    d->index = wd.index;
    d->pn = wd.pn;
    d->quic_off = (uint32_t)(wd.payload - p);
    d->quic_len = wd.payload_len;
    return 0;
}

static void count_tx_failure(struct qd_counters *st, quicoff_status_t s)
{
    QD_INC(st, tx_dropped);
    switch (s) {
    case QUICOFF_UNKNOWN_CONNECTION:
        QD_INC(st, tx_unknown_connection);
        break;
    case QUICOFF_KEY_PHASE_UNAVAILABLE:
        QD_INC(st, tx_key_phase_unavailable);
        break;
    case QUICOFF_KEY_EXHAUSTED:
        QD_INC(st, tx_key_exhausted);
        break;
    case QUICOFF_NO_SPACE:
        QD_INC(st, tx_no_space);
        break;
    case QUICOFF_BACKEND_UNAVAILABLE:
    case QUICOFF_NO_MEMORY:
        break; /* lookaside: counted as cdev_* / mbuf_alloc_failed */
    default:
        QD_INC(st, tx_malformed);
        break;
    }
}

void qd_tx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n)
{
    struct quicoff_pkt pkts[QD_BURST];
    struct quicoff_result res[QD_BURST];
    struct rte_mbuf *mb[QD_BURST];
    struct qd_conn *conn[QD_BURST];
    uint32_t quic_off[QD_BURST];
    struct qd_counters *st = w->st;
    unsigned k = 0;

    for (unsigned i = 0; i < n; i++) {
        struct host_data d;
        struct qd_conn *c;
        if (decode_host_frame(m[i], &d) != 0) {
            QD_INC(st, host_bad_frame);
            count_tx_failure(st, QUICOFF_MALFORMED);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        c = qd_conn_by_index(qda.conns, QUICOFF_DIR_TX, d.index);
        if (!c) {
            count_tx_failure(st, QUICOFF_UNKNOWN_CONNECTION);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        if (!c->has_encap) {
            QD_INC(st, tx_no_encap);
            QD_INC(st, tx_dropped);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        /* The IP packet it would leave as: the entry's IP + UDP headers, the
         * QUIC packet and its tag. Over the network MTU the port (or the
         * next hop) would drop it after we counted it sent; checked before
         * protecting, so it spends no packet of the key's budget. The host
         * is told the MTU, so its stack can lower its datagram size. */
        uint32_t ip_len = (c->encap.family == 6 ? 40u : 20u) + 8u + d.quic_len + QUICOFF_TAG_LEN;
        if (ip_len > qda.net_mtu) {
            QD_INC(st, tx_too_big);
            QD_INC(st, tx_dropped);
            struct qd_event e = {.code = QUICOFF_WIRE_EV_TOO_BIG,
                                 .status = QUICOFF_NO_SPACE,
                                 .has_pn = true,
                                 .pn = d.pn,
                                 .has_count = true,
                                 .count = qd_stats_sum_tx_too_big(),
                                 .has_mtu = true,
                                 .mtu = qda.net_mtu};
            qd_event_send(w, c, &e);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        /* Room for the tag after the plaintext, in this segment (the I/O
         * lcore only steers single-segment frames). */
        struct rte_mbuf *x = m[i];
        rte_pktmbuf_trim(x, (uint16_t)(rte_pktmbuf_data_len(x) - d.quic_off - d.quic_len));
        if (!rte_pktmbuf_append(x, QUICOFF_TAG_LEN)) {
            count_tx_failure(st, QUICOFF_NO_SPACE);
            rte_pktmbuf_free(x);
            continue;
        }
        pkts[k] = (struct quicoff_pkt){
            .data = rte_pktmbuf_mtod_offset(x, uint8_t *, d.quic_off),
            .end = d.quic_len,
            .cap = d.quic_len + QUICOFF_TAG_LEN,
            .offset = 0,
            .conn = c->handle,
            .pn = d.pn,
        };
        mb[k] = x;
        conn[k] = c;
        quic_off[k] = d.quic_off;
        k++;
    }
    if (!k)
        return;

    if (qda.la)
        qd_la_protect_burst(w->la, mb, pkts, res, k);
    else
        quicoff_protect_burst(w->qw, pkts, res, k);

    for (unsigned i = 0; i < k; i++) {
        struct rte_mbuf *x = mb[i];
        const struct quicoff_result *r = &res[i];
        if (!quicoff_status_ok(r->status)) {
            /* not protected: never sent */
            count_tx_failure(st, r->status);
            if (r->status == QUICOFF_KEY_EXHAUSTED || r->status == QUICOFF_KEY_PHASE_UNAVAILABLE) {
                struct qd_event e = {.code = r->status == QUICOFF_KEY_EXHAUSTED
                                                 ? QUICOFF_WIRE_EV_KEY_EXHAUSTED
                                                 : QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE,
                                     .status = (uint8_t)r->status,
                                     .has_pn = true,
                                     .pn = pkts[i].pn};
                qd_event_send(w, conn[i], &e);
            }
            rte_pktmbuf_free(x);
            continue;
        }
        if (r->status == QUICOFF_USAGE_LIMIT_REACHED) {
            QD_INC(st, tx_usage_limit_reached);
            struct qd_event e = {.code = QUICOFF_WIRE_EV_USAGE_LIMIT,
                                 .status = QUICOFF_USAGE_LIMIT_REACHED,
                                 .has_pn = true,
                                 .pn = r->pn};
            /* COUNT: the key's packets so far (this worker is the entry's
             * writer, so the figure is exact; lookaside entries are the
             * library's too) */
            e.has_count = quicoff_conn_key_packets(w->qw, conn[i]->handle, &e.count) == QUICOFF_OK;
            qd_event_send(w, conn[i], &e);
        }
        rte_pktmbuf_adj(x, (uint16_t)quic_off[i]);
        x->ol_flags = 0;
        if (qd_encap_push(x, &conn[i]->encap) != 0) {
            count_tx_failure(st, QUICOFF_NO_SPACE);
            rte_pktmbuf_free(x);
            continue;
        }
        QD_INC(st, tx_packets);
        QD_ADD(st, tx_bytes, r->payload_len);
        qd_out_net(w, x);
    }
}
