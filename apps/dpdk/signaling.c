/* SPDX-License-Identifier: Apache-2.0 */
/* The control thread: signaling frames -> connection table, ACKs back. */
#include "signaling.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "conns.h"
#include "options.h"
#include "stats.h"
#include "wipe.h"
#include "quicoff/wire.h"

static struct qd_counters *cst; /* the control thread's counters */

/* ------------------------------------------------------------ replies */

static void send_msg(struct quicoff_wire_msg *msg)
{
    struct rte_mbuf *m = rte_pktmbuf_alloc(qda.pool);
    if (!m) {
        QD_INC(cst, mbuf_alloc_failed);
        return;
    }
    size_t len = 0;
    memcpy(msg->eth.src, qda.host_port_mac.addr_bytes, 6);
    uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
    if (quicoff_wire_encode(msg, p, rte_pktmbuf_tailroom(m), &len) != QUICOFF_OK ||
        !rte_pktmbuf_append(m, (uint16_t)len)) {
        rte_pktmbuf_free(m);
        return;
    }
    if (rte_ring_mp_enqueue(qda.host_tx_ring, m) != 0) {
        QD_INC(cst, tx_ring_full);
        rte_pktmbuf_free(m);
        return;
    }
    QD_INC(cst, acks_sent);
}

static void ack(const struct quicoff_wire_msg *req, quicoff_status_t st)
{
    if (st != QUICOFF_OK)
        QD_INC(cst, sig_failed);
    if (req->version == 0)
        return; /* compat signaling has no acknowledgement */
    if (req->direction > QUICOFF_DIR_RX)
        QD_INC(cst, sig_bad_direction); /* the ACK says direction 0xFF ("none") */
    struct quicoff_wire_msg a;
    quicoff_wire_ack_for(req, st, &a);
    send_msg(&a);
}

/* ------------------------------------------------------------ at most once */

/* The last results by request (docs/protocol.md §6): a retried request is
 * not executed again, its remembered ACK is sent again. */
#define MEMO_SIZE 1024
struct memo {
    uint32_t request_id, index;
    uint16_t kind;
    uint8_t direction, status, used;
};
static struct memo memo[MEMO_SIZE];
static unsigned memo_next;

static const struct memo *memo_find(const struct quicoff_wire_msg *m)
{
    for (unsigned i = 0; i < MEMO_SIZE; i++) {
        const struct memo *e = &memo[i];
        if (e->used && e->request_id == m->request_id && e->kind == m->kind &&
            e->direction == m->direction && e->index == m->index)
            return e;
    }
    return NULL;
}

static void memo_put(const struct quicoff_wire_msg *m, quicoff_status_t st)
{
    memo[memo_next] = (struct memo){.request_id = m->request_id,
                                    .index = m->index,
                                    .kind = m->kind,
                                    .direction = m->direction,
                                    .status = (uint8_t)st,
                                    .used = 1};
    memo_next = (memo_next + 1) % MEMO_SIZE;
}

/* ------------------------------------------------------------ entries */

static void encap_from_wire(const struct quicoff_wire_encap *w, struct qd_encap *e)
{
    memset(e, 0, sizeof(*e));
    memcpy(e->dst_mac.addr_bytes, w->dst_mac, 6);
    memcpy(e->src_mac.addr_bytes, w->src_mac, 6);
    e->has_vlan = w->has_vlan;
    e->vlan_tci = w->vlan_tci;
    e->family = w->family;
    e->ttl = w->ttl ? w->ttl : 64;
    e->tos = w->tos;
    e->src_port = w->src_port;
    e->dst_port = w->dst_port;
    memcpy(e->src_ip, w->src_ip, 16);
    memcpy(e->dst_ip, w->dst_ip, 16);
}

/* After the workers passed a quiescent state (outside any burst, so outside
 * any prepare..complete window): libquicoff frees what was removed or
 * replaced, and in lookaside mode its retire hook frees the dead keys'
 * cryptodev sessions now rather than at some later control call. */
static void reclaim_after_sync(void)
{
    qd_conns_sync();
    quicoff_table_reclaim(qda.table);
}

/* Removes an entry: unpublish, library, wait for the workers, free. */
static quicoff_status_t conn_remove(struct qd_conn *c)
{
    pthread_mutex_lock(&qda.conns->lock);
    qd_conns_unpublish(qda.conns, c);
    quicoff_status_t st = quicoff_conn_remove(qda.table, c->handle);
    pthread_mutex_unlock(&qda.conns->lock);
    reclaim_after_sync();
    rte_free(c);
    return st;
}

static quicoff_status_t do_add(struct quicoff_wire_msg *msg)
{
    const struct quicoff_conn_config *cfg = quicoff_wire_conn_config(msg);
    struct quicoff_wire_conn *wc = &msg->u.add;
    if (!cfg)
        return QUICOFF_INVALID_ARGUMENT;
    unsigned dir = cfg->direction;
    uint32_t index = msg->index;
    if (dir > QUICOFF_DIR_RX || index >= qda.conns->capacity)
        return QUICOFF_INVALID_ARGUMENT;
    if (msg->version && msg->direction != dir)
        return QUICOFF_INVALID_ARGUMENT;

    struct qd_conn *c = rte_zmalloc("qd_conn", sizeof(*c), RTE_CACHE_LINE_SIZE);
    if (!c)
        return QUICOFF_NO_MEMORY;
    c->index = index;
    c->direction = (uint8_t)dir;
    c->level = (uint8_t)cfg->level;
    c->suite = (uint8_t)cfg->suite;
    c->compat = msg->version == 0;
    c->dcid_len = cfg->dcid_len;
    memcpy(c->dcid, cfg->dcid, cfg->dcid_len);
    c->local_addr = cfg->local_addr;
    if (dir == QUICOFF_DIR_TX) {
        if (wc->has_encap) {
            encap_from_wire(&wc->encap, &c->encap);
            c->has_encap = true;
        } else if (qda.opt->encap.family) {
            c->encap = qda.opt->encap; /* compat: the configured static addresses */
            c->has_encap = true;
        }
        if (!c->has_encap) {
            rte_free(c);
            return QUICOFF_INVALID_ARGUMENT; /* nowhere to send its packets */
        }
    }

    /* What the new entry takes the place of, if anything:
     *  - v1, and compat's TX table (signaling_host): the entry of this
     *    (direction, index); v1 replaces it only when asked (ADD_REPLACE);
     *  - compat's RX table (signaling_peer) is keyed by DCID, as the compat
     *    offload keeps it: a DCID already installed (by compat signaling, under any
     *    index) gets the new keys and index; a new DCID is a new entry even
     *    when its index has one (a second path of the connection: both DCIDs
     *    stay). docs/protocol.md §3.7. */
    struct qd_conn *old;
    if (c->compat && dir == QUICOFF_DIR_RX) {
        old = quicoff_conn_user(qda.table, quicoff_conn_find(qda.table, cfg->level, cfg->dcid,
                                                             cfg->dcid_len, &cfg->local_addr));
        if (old && !old->compat)
            old = NULL; /* a v1 host's entry: the add answers exists */
        struct qd_conn *here = qd_conn_by_index(qda.conns, dir, index);
        if (here && !here->compat) {
            rte_free(c); /* the index of a v1 host's entry: not ours to share or take */
            return QUICOFF_EXISTS;
        }
    } else {
        old = qd_conn_by_index(qda.conns, dir, index);
        if (old && msg->version && !(msg->flags & QUICOFF_WIRE_ADD_REPLACE)) {
            rte_free(c);
            return QUICOFF_EXISTS;
        }
    }

    /* the entry carries c from its first packet on (quicoff_result.user) */
    c->ev.key_generation = cfg->key_generation;
    wc->cfg.user = c;
    quicoff_status_t st;
    pthread_mutex_lock(&qda.conns->lock);
    if (old) {
        /* In place (same handle): the data path sees the old entry or the
         * new one, never neither, and on any failure (invalid_argument,
         * exists, no_memory, ...) the old one stays exactly as it was. */
        c->handle = old->handle;
        st = quicoff_conn_replace(qda.table, old->handle, cfg);
        if (st == QUICOFF_OK)
            qd_conns_swap(qda.conns, old, c);
    } else {
        /* lookaside: the library's install hook makes the key's sessions; a
         * suite the cryptodev lacks is unsupported, a full session pool no_memory */
        st = quicoff_conn_add(qda.table, cfg, &c->handle);
        if (st == QUICOFF_OK)
            qd_conns_publish(qda.conns, c);
    }
    pthread_mutex_unlock(&qda.conns->lock);
    if (st != QUICOFF_OK) {
        rte_free(c);
        return st;
    }
    if (old) {
        reclaim_after_sync(); /* the old keys (and lookaside sessions) go now */
        rte_free(old);
    }
    return QUICOFF_OK;
}

/* Current key generation of an entry (the data plane's, in both modes). */
static uint64_t key_generation(const struct qd_conn *c)
{
    struct quicoff_conn_stats s;
    if (quicoff_conn_stats(qda.table, c->handle, &s) != QUICOFF_OK)
        return UINT64_MAX;
    return s.key_generation;
}

static quicoff_status_t do_update(struct quicoff_wire_msg *msg)
{
    const struct quicoff_conn_update *cu = quicoff_wire_conn_update(msg);
    struct quicoff_wire_update *wu = &msg->u.update;
    if (!cu || msg->direction > QUICOFF_DIR_RX)
        return QUICOFF_INVALID_ARGUMENT;
    struct qd_conn *c = qd_conn_by_index(qda.conns, msg->direction, msg->index);
    if (!c)
        return QUICOFF_UNKNOWN_CONNECTION;
    struct quicoff_conn_update u = *cu;
    if ((u.what & QUICOFF_UPDATE_KEYS) && !u.secret && wu->key_len &&
        wu->key_len != quicoff_suite_key_len((quicoff_suite_t)c->suite))
        return QUICOFF_INVALID_ARGUMENT;
    if (u.what & QUICOFF_UPDATE_ROLL) {
        /* idempotent: a retried request finds the roll already done */
        uint64_t cur = key_generation(c);
        if (cur == wu->roll_generation)
            u.what &= ~(uint32_t)QUICOFF_UPDATE_ROLL;
        else if (cur + 1 != wu->roll_generation)
            return QUICOFF_INVALID_ARGUMENT;
    }
    if (wu->has_encap && c->direction != QUICOFF_DIR_TX)
        return QUICOFF_INVALID_ARGUMENT;

    quicoff_status_t st = QUICOFF_OK;
    pthread_mutex_lock(&qda.conns->lock);
    if (u.what)
        st = quicoff_conn_update(qda.table, c->handle, &u);
    struct qd_conn *old = NULL;
    if (st == QUICOFF_OK && wu->has_encap) {
        struct qd_conn *n = rte_malloc("qd_conn", sizeof(*n), RTE_CACHE_LINE_SIZE);
        if (!n) {
            st = QUICOFF_NO_MEMORY;
        } else {
            *n = *c;
            encap_from_wire(&wu->encap, &n->encap);
            n->has_encap = true;
            struct quicoff_conn_update to_n = {.what = QUICOFF_UPDATE_USER, .user = n};
            st = quicoff_conn_update(qda.table, c->handle, &to_n);
            if (st == QUICOFF_OK) {
                qd_conns_replace(qda.conns, c, n);
                old = c;
            } else {
                rte_free(n);
            }
        }
    }
    pthread_mutex_unlock(&qda.conns->lock);
    if (old || (st == QUICOFF_OK && (u.what & (QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_DROP_OLD))))
        reclaim_after_sync(); /* replaced keys: their sessions go back to the pool */
    rte_free(old);
    return st;
}

static quicoff_status_t do_remove(struct quicoff_wire_msg *msg)
{
    if (msg->direction > QUICOFF_DIR_RX)
        return QUICOFF_INVALID_ARGUMENT;
    struct qd_conn *c = qd_conn_by_index(qda.conns, msg->direction, msg->index);
    if (!c)
        return QUICOFF_UNKNOWN_CONNECTION;
    return conn_remove(c);
}

static void do_query(struct quicoff_wire_msg *msg)
{
    struct quicoff_wire_msg r;
    quicoff_status_t st = QUICOFF_OK;
    struct quicoff_conn_stats cs;
    memset(&cs, 0, sizeof(cs));
    if (msg->flags & QUICOFF_WIRE_QUERY_CONN) {
        struct qd_conn *c = msg->direction <= QUICOFF_DIR_RX
                                ? qd_conn_by_index(qda.conns, msg->direction, msg->index)
                                : NULL;
        st = c ? quicoff_conn_stats(qda.table, c->handle, &cs) : QUICOFF_UNKNOWN_CONNECTION;
    }
    quicoff_wire_stats_for(msg, st, &r);
    if (st == QUICOFF_OK && (msg->flags & QUICOFF_WIRE_QUERY_CONN)) {
        r.u.stats.has_conn = true;
        r.u.stats.conn = cs;
    }
    if (msg->flags & QUICOFF_WIRE_QUERY_TABLE) {
        r.u.stats.has_table = true;
        quicoff_table_stats(qda.table, &r.u.stats.table);
    }
    if (st != QUICOFF_OK)
        QD_INC(cst, sig_failed);
    send_msg(&r);
}

static void handle(struct rte_mbuf *m)
{
    struct quicoff_wire_msg msg;
    const uint8_t *p = rte_pktmbuf_mtod(m, const uint8_t *);
    quicoff_status_t st = quicoff_wire_decode(p, rte_pktmbuf_data_len(m), &msg);
    QD_INC(cst, sig_rx);
    if (msg.hdr_valid && msg.version != 0 &&
        !atomic_load_explicit(&qda.host_speaks_v1, memory_order_relaxed))
        atomic_store_explicit(&qda.host_speaks_v1, true, memory_order_relaxed);
    if (st != QUICOFF_OK) {
        QD_INC(cst, sig_bad);
        if (msg.hdr_valid && msg.version != 0)
            ack(&msg, st);
        quicoff_wire_msg_clear(&msg);
        return;
    }
    if (msg.version == 0 && !qda.opt->compat) {
        QD_INC(cst, compat_rejected);
        quicoff_wire_msg_clear(&msg);
        return;
    }
    if (msg.version && (msg.kind == QUICOFF_WIRE_ADD || msg.kind == QUICOFF_WIRE_UPDATE ||
                        msg.kind == QUICOFF_WIRE_REMOVE)) {
        const struct memo *e = memo_find(&msg);
        if (e) {
            QD_INC(cst, sig_retried);
            ack(&msg, (quicoff_status_t)e->status);
            quicoff_wire_msg_clear(&msg);
            return;
        }
    }
    switch (msg.kind) {
    case QUICOFF_WIRE_ADD:
    case QUICOFF_WIRE_COMPAT_PEER:
    case QUICOFF_WIRE_COMPAT_HOST:
        QD_INC(cst, sig_add);
        st = do_add(&msg);
        break;
    case QUICOFF_WIRE_UPDATE:
        QD_INC(cst, sig_update);
        st = do_update(&msg);
        break;
    case QUICOFF_WIRE_REMOVE:
        QD_INC(cst, sig_remove);
        st = do_remove(&msg);
        break;
    case QUICOFF_WIRE_QUERY:
        QD_INC(cst, sig_query);
        do_query(&msg);
        quicoff_wire_msg_clear(&msg);
        return;
    default:
        /* offload -> host kinds coming back, or data on the wrong path */
        QD_INC(cst, sig_bad);
        quicoff_wire_msg_clear(&msg);
        return;
    }
    if (msg.version)
        memo_put(&msg, st);
    ack(&msg, st);
    quicoff_wire_msg_clear(&msg);
}

static void *control_main(void *arg)
{
    (void)arg;
    struct rte_mbuf *m[QD_BURST];
    uint64_t hz = rte_get_tsc_hz(), next_reclaim = 0, busy_until = 0;
    cst = &qd_stats[QD_STATS_CTRL];
    while (!qda.quit) {
        unsigned n = rte_ring_sc_dequeue_burst(qda.ctrl_ring, (void **)m, QD_BURST, NULL);
        uint64_t now = rte_rdtsc();
        for (unsigned i = 0; i < n; i++) {
            handle(m[i]);
            qd_mbuf_free_wiped(m[i]); /* the frame held keys */
        }
        if (now >= next_reclaim) {
            quicoff_table_reclaim(qda.table);
            next_reclaim = now + hz / 10;
        }
        /* Idle: check every 100 us for 50 ms after a request (signaling comes
         * in bursts: a handshake's keys, a key update), then every 1 ms. The
         * thread shares CPUs with the lcores' neighbours (the kernel's softirqs,
         * other processes on a DPU's cores): 10,000 wake-ups a second while
         * nothing happens cost them measurable time (docs/dpdk.md). */
        if (n)
            busy_until = now + hz / 20;
        else
            usleep(now < busy_until ? 100 : 1000);
    }
    return NULL;
}

int qd_signaling_start(pthread_t *tid)
{
    cst = &qd_stats[QD_STATS_CTRL];
    return rte_ctrl_thread_create(tid, "quicoff-ctrl", NULL, control_main, NULL) == 0 ? 0 : -1;
}

void qd_signaling_stop(pthread_t tid)
{
    pthread_join(tid, NULL);
}

void qd_signaling_clear_all(void)
{
    /* every entry, not by index: a compat RX index may hold several entries
     * (one per path's DCID), and only the last is in by_index */
    for (;;) {
        pthread_mutex_lock(&qda.conns->lock);
        struct qd_conn *c = qda.conns->all;
        pthread_mutex_unlock(&qda.conns->lock);
        if (!c)
            break;
        conn_remove(c);
    }
}
