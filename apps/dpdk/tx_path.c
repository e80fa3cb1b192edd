/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TX path (host -> network), on a worker: host data frame (compat data_pkt on
 * 0x88B6 or v1 DATA_TO_OFFLOAD on 0x88B5: entry index + full PN + plaintext
 * QUIC packet; or v1 DATA_TRAIN: N packets, consecutive PNs) -> protect (libquicoff, or the cryptodev in lookaside mode) ->
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

/* Index, full PN and the QUIC packet's place in a host data frame; for a
 * DATA_TRAIN (docs/protocol.md §4.2.1) the whole decoded header, whose
 * packets quicoff_wire_train_packet() finds. */
struct host_data {
    uint32_t index;
    uint64_t pn;
    uint32_t quic_off, quic_len;
    bool train;
    struct quicoff_wire_data wd;
};

/* Both formats through libquicoff's header-only reader: the full decoder's
 * rules (docs/protocol.md §3.5, §4.2, §4.2.1) without its ~400-byte message
 * per packet.  Classification (classify.c) steered only compat data_pkt
 * (0x88B6) and v1 frames whose Type is DATA_TO_OFFLOAD or DATA_TRAIN here;
 * anything else the reader returns (DATA_TO_HOST from the host, another
 * version) is a bad frame, and so is a train that breaks the train rules
 * (segment size or count 0, lengths that do not add up, PN overflow). */
static int decode_host_frame(struct rte_mbuf *m, struct host_data *d)
{
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    uint32_t len = rte_pktmbuf_data_len(m), l2 = m->l2_len;
    bool compat = m->hash.usr == QD_CLASS_HOST_DATA_COMPAT;
    quicoff_wire_kind_t kind;
    struct quicoff_wire_data wd;
    if (l2 > len || quicoff_wire_data_hdr_read(compat ? QUICOFF_WIRE_ETHERTYPE_DATA
                                                      : QUICOFF_WIRE_ETHERTYPE_SIGNAL,
                                               p + l2, len - l2, &kind, &wd) != QUICOFF_OK)
        return -1;
    if (compat ? kind != QUICOFF_WIRE_COMPAT_DATA
               : kind != QUICOFF_WIRE_DATA_TO_OFFLOAD && kind != QUICOFF_WIRE_DATA_TRAIN)
        return -1;
    /* a compat data_pkt's QUIC packet runs to the end of the frame: an empty one is no
     * packet (classification already drops those; kept for a direct caller) */
    if (compat && wd.payload_len == 0)
        return -1;
    d->index = wd.index;
    d->pn = wd.pn;
    d->quic_off = (uint32_t)(wd.payload - p);
    d->quic_len = wd.payload_len;
    d->train = kind == QUICOFF_WIRE_DATA_TRAIN;
    d->wd = wd;
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

/* The packets of one protect call, in parallel arrays (as ipsec-secgw sorts
 * a burst): single-packet frames and the packets of trains alike. */
struct tx_batch {
    struct quicoff_pkt pkts[QD_BURST];
    struct quicoff_result res[QD_BURST];
    struct rte_mbuf *mb[QD_BURST];
    struct qd_conn *conn[QD_BURST];
    uint32_t quic_off[QD_BURST];
    unsigned k;
};

/* The IP packet a QUIC packet would leave as: the entry's IP + UDP headers,
 * the QUIC packet and its tag. Over the network MTU the port (or the next
 * hop) would drop it after we counted it sent; checked before protecting,
 * so it spends no packet of the key's budget. The host is told the MTU, so
 * its stack can lower its datagram size. */
static bool fits_network(struct qd_worker *w, struct qd_conn *c, uint64_t pn, uint32_t quic_len)
{
    uint32_t ip_len = (c->encap.family == 6 ? 40u : 20u) + 8u + quic_len + QUICOFF_TAG_LEN;
    if (ip_len <= qda.net_mtu)
        return true;
    QD_INC(w->st, tx_too_big);
    QD_INC(w->st, tx_dropped);
    struct qd_event e = {.code = QUICOFF_WIRE_EV_TOO_BIG,
                         .status = QUICOFF_NO_SPACE,
                         .has_pn = true,
                         .pn = pn,
                         .has_count = true,
                         .count = qd_stats_sum_tx_too_big(),
                         .has_mtu = true,
                         .mtu = qda.net_mtu};
    qd_event_send(w, c, &e);
    return false;
}

static void batch_add(struct tx_batch *b, struct rte_mbuf *x, struct qd_conn *c, uint64_t pn,
                      uint32_t quic_off, uint32_t quic_len)
{
    unsigned k = b->k++;
    b->pkts[k] = (struct quicoff_pkt){
        .data = rte_pktmbuf_mtod_offset(x, uint8_t *, quic_off),
        .end = quic_len,
        .cap = quic_len + QUICOFF_TAG_LEN,
        .offset = 0,
        .conn = c->handle,
        .pn = pn,
    };
    b->mb[k] = x;
    b->conn[k] = c;
    b->quic_off[k] = quic_off;
}

/* Protects the batch (one burst call) and queues what was protected for the
 * network port, in order; what was not is counted and freed, never sent. */
static void batch_protect_and_send(struct qd_worker *w, struct tx_batch *b)
{
    struct qd_counters *st = w->st;
    unsigned k = b->k;
    b->k = 0;
    if (!k)
        return;
    /* a train makes more network frames than one burst of host frames: what
     * earlier batches queued goes out first, so this batch has room */
    if (w->n_net + k > RTE_DIM(w->to_net))
        qd_out_flush(w);

    if (qda.la)
        qd_la_protect_burst(w->la, b->mb, b->pkts, b->res, k);
    else
        quicoff_protect_burst(w->qw, b->pkts, b->res, k);

    for (unsigned i = 0; i < k; i++) {
        struct rte_mbuf *x = b->mb[i];
        const struct quicoff_result *r = &b->res[i];
        if (!quicoff_status_ok(r->status)) {
            /* not protected: never sent */
            count_tx_failure(st, r->status);
            if (r->status == QUICOFF_KEY_EXHAUSTED || r->status == QUICOFF_KEY_PHASE_UNAVAILABLE) {
                struct qd_event e = {.code = r->status == QUICOFF_KEY_EXHAUSTED
                                                 ? QUICOFF_WIRE_EV_KEY_EXHAUSTED
                                                 : QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE,
                                     .status = (uint8_t)r->status,
                                     .has_pn = true,
                                     .pn = b->pkts[i].pn};
                qd_event_send(w, b->conn[i], &e);
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
            e.has_count = quicoff_conn_key_packets(w->qw, b->conn[i]->handle, &e.count) ==
                          QUICOFF_OK;
            qd_event_send(w, b->conn[i], &e);
        }
        rte_pktmbuf_adj(x, (uint16_t)b->quic_off[i]);
        x->ol_flags = 0;
        if (qd_encap_push(x, &b->conn[i]->encap) != 0) {
            count_tx_failure(st, QUICOFF_NO_SPACE);
            rte_pktmbuf_free(x);
            continue;
        }
        QD_INC(st, tx_packets);
        QD_ADD(st, tx_bytes, r->payload_len);
        qd_out_net(w, x);
    }
}

/* A train: each packet is copied into an mbuf of its own (the tag of one
 * packet would overwrite the next one's first bytes in place, and each
 * leaves as its own datagram), with headroom for the encapsulation, and
 * joins the batch; a full batch is protected in one call. A packet too big
 * for the network is dropped alone (EVENT too_big); one the library refuses
 * (a bad header) is counted like any host packet. The train's frame is
 * freed here. */
static void tx_train(struct qd_worker *w, struct tx_batch *b, struct rte_mbuf *m,
                     struct qd_conn *c, const struct host_data *d)
{
    struct qd_counters *st = w->st;
    QD_INC(st, host_trains);
    QD_ADD(st, host_train_packets, d->wd.count);
    for (unsigned i = 0; i < d->wd.count; i++) {
        uint32_t len = 0;
        const uint8_t *src = quicoff_wire_train_packet(&d->wd, i, &len);
        uint64_t pn = d->pn + i;
        if (!src || !fits_network(w, c, pn, len))
            continue;
        struct rte_mbuf *x = rte_pktmbuf_alloc(qda.pool);
        if (!x) {
            QD_INC(st, mbuf_alloc_failed);
            count_tx_failure(st, QUICOFF_NO_MEMORY);
            continue;
        }
        uint8_t *dst = (uint8_t *)rte_pktmbuf_append(x, (uint16_t)(len + QUICOFF_TAG_LEN));
        if (!dst || len + QUICOFF_TAG_LEN > UINT16_MAX) {
            count_tx_failure(st, QUICOFF_NO_SPACE);
            rte_pktmbuf_free(x);
            continue;
        }
        memcpy(dst, src, len);
        batch_add(b, x, c, pn, 0, len);
        if (b->k == QD_BURST)
            batch_protect_and_send(w, b);
    }
    rte_pktmbuf_free(m);
}

void qd_tx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n)
{
    struct tx_batch b;
    struct qd_counters *st = w->st;
    b.k = 0;

    for (unsigned i = 0; i < n; i++) {
        struct host_data d;
        struct qd_conn *c;
        if (decode_host_frame(m[i], &d) != 0) {
            QD_INC(st, host_bad_frame);
            count_tx_failure(st, QUICOFF_MALFORMED);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        unsigned npkts = d.train ? d.wd.count : 1;
        c = qd_conn_by_index(qda.conns, QUICOFF_DIR_TX, d.index);
        if (!c) {
            for (unsigned j = 0; j < npkts; j++)
                count_tx_failure(st, QUICOFF_UNKNOWN_CONNECTION);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        if (!c->has_encap) {
            QD_ADD(st, tx_no_encap, npkts);
            QD_ADD(st, tx_dropped, npkts);
            rte_pktmbuf_free(m[i]);
            continue;
        }
        if (d.train) {
            tx_train(w, &b, m[i], c, &d);
            continue;
        }
        if (!fits_network(w, c, d.pn, d.quic_len)) {
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
        batch_add(&b, x, c, d.pn, d.quic_off, d.quic_len);
        if (b.k == QD_BURST)
            batch_protect_and_send(w, &b);
    }
    batch_protect_and_send(w, &b);
}
