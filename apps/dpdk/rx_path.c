/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RX path (network -> host), on a worker: UDP datagram (classify.c, on whichever lcore polled the
 * port, parsed Ethernet/VLAN/IP/UDP and trimmed the frame to the datagram) -> unprotect
 * every coalesced QUIC packet (libquicoff, or the cryptodev in lookaside
 * mode) -> one host frame per packet: Ethernet + data header (entry index,
 * full PN, status, level, key phase) + plaintext header + payload, the tag
 * removed. Datagrams of no known connection, or not QUIC, go to the host
 * unchanged (or are dropped, --unknown drop); packets that fail
 * authentication are dropped and counted (or handed on marked failed when the
 * entry's fail action is pass).
 */
#include "rx_path.h"

#include <string.h>

#include <rte_byteorder.h>

#include "conns.h"
#include "encap.h"
#include "events.h"
#include "host_mac.h"
#include "lookaside.h"
#include "options.h"
#include "output.h"
#include "stats.h"

#define QD_MAX_COALESCED 4 /* Initial + 0-RTT + Handshake + 1-RTT */

/* Prepends the data header and Ethernet header of a frame to the host to m,
 * whose data is the QUIC packet (plaintext header + payload, or the bytes as
 * received when status is not ok). */
static int host_frame_push(struct rte_mbuf *m, const struct qd_conn *c,
                           const struct quicoff_result *r, quicoff_status_t status)
{
    bool compat = c && c->compat;
    uint16_t hlen = compat ? QUICOFF_WIRE_COMPAT_DATA_HDR_LEN : QUICOFF_WIRE_DATA_HDR_LEN;
    uint32_t qlen = rte_pktmbuf_pkt_len(m);
    uint8_t *p = (uint8_t *)rte_pktmbuf_prepend(m, RTE_ETHER_HDR_LEN + hlen);
    if (!p)
        return -1;
    size_t w;
    if (compat) {
        w = quicoff_wire_compat_data_hdr_write(p + RTE_ETHER_HDR_LEN, hlen, c->index, r->pn);
    } else {
        struct quicoff_wire_data d = {
            .index = c ? c->index : QUICOFF_WIRE_INDEX_NONE,
            .pn = quicoff_status_ok(status) || status == QUICOFF_AUTH_FAILED ? r->pn : 0,
            .flags = r->flags,
            .status = (uint8_t)status,
            .level = r->level,
            .key_phase = r->key_phase,
            .payload = NULL,
            .payload_len = qlen,
        };
        w = quicoff_wire_data_hdr_write(p + RTE_ETHER_HDR_LEN, hlen, QUICOFF_WIRE_DATA_TO_HOST,
                                        &d);
    }
    if (w != hlen) {
        rte_pktmbuf_adj(m, (uint16_t)(RTE_ETHER_HDR_LEN + hlen));
        return -1;
    }
    struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
    qd_host_mac(&eth->dst_addr);
    eth->src_addr = qda.host_port_mac;
    eth->ether_type = rte_cpu_to_be_16(compat ? QUICOFF_WIRE_ETHERTYPE_DATA
                                              : QUICOFF_WIRE_ETHERTYPE_SIGNAL);
    m->ol_flags = 0;
    return 0;
}

/* A new mbuf holding a copy of the len bytes at src (one coalesced packet, or the rest of a datagram). */
static struct rte_mbuf *copy_out(struct qd_worker *w, const uint8_t *src, uint32_t len)
{
    struct rte_mbuf *x = rte_pktmbuf_alloc(qda.pool);
    if (!x) {
        QD_INC(w->st, mbuf_alloc_failed);
        return NULL;
    }
    uint8_t *d = (uint8_t *)rte_pktmbuf_append(x, (uint16_t)len);
    if (!d) {
        rte_pktmbuf_free(x);
        QD_INC(w->st, mbuf_alloc_failed);
        return NULL;
    }
    memcpy(d, src, len);
    return x;
}

/* Counts a packet that was not unprotected, and tells the host. */
static void count_rx_failure(struct qd_worker *w, const struct quicoff_result *r,
                             struct qd_conn *c, const uint8_t *dg, const struct rte_mbuf *m)
{
    struct qd_counters *st = w->st;
    struct qd_event e = {.status = (uint8_t)r->status};
    struct qd_conn_events *s = c ? &c->ev : NULL;
    struct quicoff_addr local, remote;
    switch (r->status) {
    case QUICOFF_UNKNOWN_CONNECTION: {
        /* A short header with the fixed bit 0 that no entry claims may not be
         * QUIC at all (greasing, RFC 9287 §3.1, ends the bit as a demultiplexer):
         * the host gets it as any other UDP (pass_or_drop counts it), no event. */
        if (!(dg[r->hdr_off] & 0xc0))
            return;
        QD_INC(st, rx_unknown_connection);
        if (!r->dcid_off) /* the DCID is not inside the datagram */
            return;
        /* the result carries the DCID and the level as the library's parse found them */
        e.code = QUICOFF_WIRE_EV_UNKNOWN_CONNECTION;
        e.dcid = dg + r->dcid_off;
        e.dcid_len = r->dcid_len;
        e.has_level = true;
        e.level = r->level;
        qd_udp_local_addr(m, &local);
        qd_udp_remote_addr(m, &remote);
        e.local = &local;
        e.remote = &remote;
        e.has_count = true;
        e.count = qd_stats_sum_rx_unknown();
        qd_event_send(w, NULL, &e);
        return;
    }
    case QUICOFF_AUTH_FAILED:
        QD_INC(st, auth_failures);
        e.code = QUICOFF_WIRE_EV_AUTH_FAILED;
        if (s) {
            e.has_count = true;
            e.count = qd_conn_ev_bump(&s->auth_failures);
        }
        e.has_pn = true;
        e.pn = r->pn;
        break;
    case QUICOFF_KEY_PHASE_UNAVAILABLE:
        QD_INC(st, rx_key_phase_unavailable);
        e.code = QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE;
        if (s) {
            e.has_count = true;
            e.count = qd_conn_ev_bump(&s->key_phase_unavailable);
        }
        e.has_pn = true;
        e.pn = r->pn;
        break;
    case QUICOFF_KEY_EXHAUSTED:
        QD_INC(st, rx_key_exhausted);
        e.code = QUICOFF_WIRE_EV_KEY_EXHAUSTED;
        if (s) {
            e.has_count = true;
            e.count = qd_conn_ev_read(&s->auth_failures);
            e.has_gen = true;
            e.gen = (uint32_t)qd_conn_ev_read(&s->key_generation);
        }
        break;
    case QUICOFF_UNSUPPORTED:
        QD_INC(st, rx_unsupported);
        return;
    case QUICOFF_BACKEND_UNAVAILABLE:
    case QUICOFF_NO_MEMORY:
        return; /* lookaside: counted as cdev_* / mbuf_alloc_failed */
    default:
        QD_INC(st, rx_malformed);
        return;
    }
    if (c)
        qd_event_send(w, c, &e);
}

/* Pass-through of a whole frame that holds no packet of ours. */
static void pass_or_drop(struct qd_worker *w, struct rte_mbuf *m)
{
    if (qda.opt->unknown == QD_UNKNOWN_DROP) {
        QD_INC(w->st, unknown_dropped);
        rte_pktmbuf_free(m);
        return;
    }
    QD_INC(w->st, pass_to_host);
    m->ol_flags = 0;
    qd_out_host(w, m);
}

void qd_rx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n)
{
    struct quicoff_addr local[QD_BURST];
    struct quicoff_result res[QD_BURST][QD_MAX_COALESCED];
    struct quicoff_datagram dgs[QD_BURST];
    uint8_t *dg[QD_BURST];
    uint32_t dglen[QD_BURST];
    unsigned nres[QD_BURST];
    struct qd_counters *st = w->st;

    for (unsigned i = 0; i < n; i++) {
        uint32_t off = (uint32_t)m[i]->l2_len + m[i]->l3_len + m[i]->l4_len;
        dg[i] = rte_pktmbuf_mtod_offset(m[i], uint8_t *, off);
        dglen[i] = rte_pktmbuf_data_len(m[i]) - off;
        qd_udp_local_addr(m[i], &local[i]);
        dgs[i] = (struct quicoff_datagram){.data = dg[i],
                                           .len = dglen[i],
                                           .local_addr = &local[i],
                                           .res = res[i],
                                           .max_results = QD_MAX_COALESCED};
    }
    /* Every coalesced packet up to the first that is not ok: the rest of the
     * datagram stays as received, for the host, which may hold its keys. */
    if (qda.la)
        qd_la_unprotect_datagrams(w->la, m, dgs, n);
    else
        quicoff_unprotect_datagrams(w->qw, dgs, n, QUICOFF_DATAGRAM_STOP_AT_FAILURE);
    for (unsigned i = 0; i < n; i++)
        nres[i] = dgs[i].n_results;

    for (unsigned i = 0; i < n; i++) {
        struct rte_mbuf *x = m[i];
        if (!nres[i]) { /* no packet looked at (the library's input checks): not ours */
            pass_or_drop(w, x);
            continue;
        }
        const struct quicoff_result *r0 = &res[i][0];
        if (!quicoff_status_ok(r0->status)) {
            struct qd_conn *c = qd_conn_of(r0);
            count_rx_failure(w, r0, c, dg[i], x);
            switch (r0->status) {
            case QUICOFF_UNKNOWN_CONNECTION:
            case QUICOFF_UNSUPPORTED:
            case QUICOFF_MALFORMED:
                /* not ours: the host gets the frame as it arrived */
                pass_or_drop(w, x);
                break;
            case QUICOFF_AUTH_FAILED:
                if ((r0->flags & QUICOFF_FLAG_PASS_FAILED) && c && !c->compat) {
                    /* fail action pass: the bytes as received, marked failed */
                    rte_pktmbuf_adj(x, (uint16_t)(dg[i] - rte_pktmbuf_mtod(x, uint8_t *)));
                    rte_pktmbuf_trim(x, (uint16_t)(dglen[i] - r0->packet_end));
                    if (host_frame_push(x, c, r0, QUICOFF_AUTH_FAILED) == 0) {
                        QD_INC(st, rx_fail_passed);
                        qd_out_host(w, x);
                        break;
                    }
                }
                /* fall through */
            default:
                QD_INC(st, rx_dropped);
                rte_pktmbuf_free(x);
                break;
            }
            continue;
        }

        /* One host frame per unprotected packet: in place when the datagram
         * holds one packet (the usual 1-RTT case), else copies. */
        unsigned ok = 0;
        for (unsigned k = 0; k < nres[i]; k++) {
            const struct quicoff_result *r = &res[i][k];
            if (!quicoff_status_ok(r->status))
                break;
            ok++;
            struct qd_conn *c = qd_conn_of(r);
            struct qd_conn_events *s = c ? &c->ev : NULL;
            if (r->flags & QUICOFF_FLAG_KEY_UPDATED) {
                QD_INC(st, key_updates);
                if (s) {
                    struct qd_event e = {.code = QUICOFF_WIRE_EV_KEY_UPDATE,
                                         .status = QUICOFF_OK,
                                         .has_pn = true,
                                         .pn = r->pn,
                                         .has_gen = true,
                                         .gen = (uint32_t)qd_conn_ev_bump(&s->key_generation),
                                         .has_count = true,
                                         .count = qd_conn_ev_bump(&s->key_updates)};
                    qd_event_send(w, c, &e);
                }
            }
            if (r->status == QUICOFF_USAGE_LIMIT_REACHED) {
                QD_INC(st, rx_usage_limit_reached);
                if (s) {
                    struct qd_event e = {.code = QUICOFF_WIRE_EV_USAGE_LIMIT,
                                         .status = QUICOFF_USAGE_LIMIT_REACHED,
                                         .has_count = true,
                                         .count = qd_conn_ev_read(&s->auth_failures),
                                         .has_gen = true,
                                         .gen = (uint32_t)qd_conn_ev_read(&s->key_generation)};
                    qd_event_send(w, c, &e);
                }
            }
            uint32_t start = r->hdr_off, end = r->payload_off + r->payload_len;
            struct rte_mbuf *f;
            if (nres[i] == 1) {
                f = x;
                rte_pktmbuf_adj(f, (uint16_t)(dg[i] + start - rte_pktmbuf_mtod(f, uint8_t *)));
                rte_pktmbuf_trim(f, (uint16_t)(rte_pktmbuf_data_len(f) - (end - start)));
            } else {
                f = copy_out(w, dg[i] + start, end - start);
                if (!f) {
                    QD_INC(st, rx_dropped);
                    continue;
                }
            }
            if (host_frame_push(f, c, r, r->status) != 0) {
                QD_INC(st, rx_dropped);
                QD_INC(st, mbuf_alloc_failed);
                rte_pktmbuf_free(f); /* x itself when in place: not used below */
                continue;
            }
            QD_INC(st, rx_packets);
            QD_ADD(st, rx_bytes, r->payload_len);
            qd_out_host(w, f);
        }
        if (nres[i] == 1)
            continue; /* x became the host frame (or was freed) */
        if (ok < nres[i]) {
            /* a coalesced packet after ok ones failed */
            const struct quicoff_result *r = &res[i][ok];
            struct qd_conn *c = qd_conn_of(r);
            count_rx_failure(w, r, c, dg[i], x);
            if (r->status == QUICOFF_UNKNOWN_CONNECTION && qda.opt->unknown != QD_UNKNOWN_DROP) {
                /* the rest of the datagram, as received, for the host's own keys */
                struct rte_mbuf *f = copy_out(w, dg[i] + r->hdr_off, dglen[i] - r->hdr_off);
                if (f && host_frame_push(f, NULL, r, r->status) == 0) {
                    QD_INC(st, pass_to_host);
                    qd_out_host(w, f);
                } else if (f) {
                    rte_pktmbuf_free(f);
                }
            } else {
                QD_INC(st, rx_dropped);
            }
        }
        rte_pktmbuf_free(x);
    }
}
