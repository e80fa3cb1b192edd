/* SPDX-License-Identifier: Apache-2.0 */
/* EVENTs to the host, rate-limited per entry and code (events.h). */
#include "events.h"

#include <stdatomic.h>
#include <string.h>

#include <rte_cycles.h>

#include "conns.h"
#include "host_mac.h"
#include "options.h"
#include "output.h"
#include "quicoff/wire.h"

static _Atomic uint32_t ev_seq; /* the offload's event sequence number */

void qd_event_send(struct qd_worker *w, struct qd_conn *c, const struct qd_event *e)
{
    /* every code has its rate-limit slot per entry (too_big is code 7 of 8) */
    RTE_BUILD_BUG_ON(QUICOFF_WIRE_EV_COUNT > RTE_DIM(((struct qd_conn_events *)0)->next));
    if (!qda.opt->events || (c && c->compat) || e->code >= QUICOFF_WIRE_EV_COUNT)
        return;
    if (!c && qda.opt->compat &&
        !atomic_load_explicit(&qda.host_speaks_v1, memory_order_relaxed)) {
        /* a compat host cannot parse v1 frames: none until the host speaks v1 */
        QD_INC(w->st, events_not_v1);
        return;
    }
    if (e->code != QUICOFF_WIRE_EV_KEY_UPDATE) {
        uint64_t *next = c ? &c->ev.next[e->code] : &w->ev_next[e->code];
        uint64_t now = rte_rdtsc();
        if (now < qd_conn_ev_read(next)) {
            QD_INC(w->st, events_suppressed);
            return;
        }
        __atomic_store_n(next, now + w->ev_gap, __ATOMIC_RELAXED);
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
    qd_out_host(w, m);
}
