/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Outstanding requests (docs/protocol.md §6): request IDs, one outstanding
 * request per (direction, index), the identical frame re-sent after 20 ms,
 * 40 ms, ... until max_tries, answers matched by request ID, and what an
 * answer to a retry means (§6's idempotency table).
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h> /* OPENSSL_cleanse: a wipe the compiler keeps */

#include "host_int.h"

void qh_requests_init(struct quicoff_host *h)
{
    /* A random start: two hosts (a stack and `quicoff ctl`) on one link then
     * do not take each other's answers for their own. */
    uint32_t r = 0;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r))
        r = (uint32_t)qh_now_ns();
    h->next_request_id = r;
}

static uint64_t wait_ns(const struct quicoff_host *h, unsigned tries)
{
    unsigned shift = tries > 0 ? tries - 1 : 0;
    if (shift > 16)
        shift = 16;
    return (uint64_t)h->cfg.ack_timeout_ms * 1000000u << shift;
}

static void release(struct quicoff_host *h, struct qh_pending *p)
{
    OPENSSL_cleanse(p->frame, sizeof(p->frame)); /* it may hold keys */
    p->used = false;
    p->len = 0;
    h->n_pending--;
}

static void complete(struct quicoff_host *h, struct qh_pending *p,
                     const struct quicoff_host_reply *r)
{
    bool sync = p->sync;
    release(h, p);
    if (sync) {
        h->sync_reply = *r;
        h->sync_done = true;
        if (h->sync_answer && r->msg) {
            *h->sync_answer = *r->msg;
            h->sync_answer->detail = NULL; /* it points into a receive buffer */
            h->sync_answer->detail_len = 0;
        }
        h->sync_reply.msg = NULL;
    } else if (h->cfg.on_reply) {
        h->cfg.on_reply(h->cfg.cb_arg, r);
    }
}

static quicoff_host_status_t submit(struct quicoff_host *h, struct quicoff_wire_msg *req,
                                    uint32_t *request_id, bool sync)
{
    quicoff_host_status_t ret = QUICOFF_HOST_INVALID;
    struct qh_pending *slot = NULL;
    if (req->kind != QUICOFF_WIRE_ADD && req->kind != QUICOFF_WIRE_UPDATE &&
        req->kind != QUICOFF_WIRE_REMOVE && req->kind != QUICOFF_WIRE_QUERY)
        goto out;
    if (req->direction != QUICOFF_DIR_TX && req->direction != QUICOFF_DIR_RX)
        goto out;
    for (unsigned i = 0; i < h->cfg.max_pending; i++) {
        struct qh_pending *p = &h->pending[i];
        if (!p->used) {
            if (!slot)
                slot = p;
        } else if (req->index != QUICOFF_WIRE_INDEX_NONE && p->index == req->index &&
                   p->direction == req->direction) {
            ret = QUICOFF_HOST_BUSY;
            goto out;
        }
    }
    if (!slot) {
        ret = QUICOFF_HOST_FULL;
        goto out;
    }
    req->version = QUICOFF_WIRE_VERSION;
    req->request_id = h->next_request_id;
    req->status = 0;
    req->has_eth = true;
    memcpy(req->eth.dst, h->cfg.offload_mac, 6);
    memcpy(req->eth.src, h->src_mac, 6);
    req->eth.has_vlan = h->cfg.has_vlan;
    req->eth.vlan_tci = h->cfg.vlan_tci;
    size_t len = 0;
    if (quicoff_wire_encode(req, slot->frame, sizeof(slot->frame), &len) != QUICOFF_OK) {
        OPENSSL_cleanse(slot->frame, sizeof(slot->frame));
        goto out;
    }
    ret = qh_link_send(h, slot->frame, len);
    if (ret != QUICOFF_HOST_OK) {
        OPENSSL_cleanse(slot->frame, sizeof(slot->frame));
        goto out;
    }
    slot->used = true;
    slot->sync = sync;
    slot->kind = (uint8_t)req->kind;
    slot->direction = req->direction;
    slot->index = req->index;
    slot->request_id = req->request_id;
    slot->tries = 1;
    slot->len = len;
    slot->due_ns = qh_now_ns() + wait_ns(h, 1);
    h->n_pending++;
    h->next_request_id++;
    h->st.requests++;
    if (request_id)
        *request_id = slot->request_id;
out:
    quicoff_wire_msg_clear(req); /* the caller's copy of the keys */
    return ret;
}

quicoff_host_status_t quicoff_host_submit(struct quicoff_host *h, struct quicoff_wire_msg *req,
                                          uint32_t *request_id)
{
    if (!h || !req) {
        if (req)
            quicoff_wire_msg_clear(req);
        return QUICOFF_HOST_INVALID;
    }
    return submit(h, req, request_id, false);
}

quicoff_host_status_t quicoff_host_request(struct quicoff_host *h, struct quicoff_wire_msg *req,
                                           struct quicoff_host_reply *reply,
                                           struct quicoff_wire_msg *answer)
{
    if (!h || !req || !reply) {
        if (req)
            quicoff_wire_msg_clear(req);
        return QUICOFF_HOST_INVALID;
    }
    memset(reply, 0, sizeof(*reply));
    h->sync_done = false;
    h->sync_answer = answer;
    quicoff_host_status_t st = submit(h, req, &reply->request_id, true);
    if (st != QUICOFF_HOST_OK) {
        h->sync_answer = NULL;
        return st;
    }
    while (!h->sync_done) {
        struct pollfd pfd = {.fd = h->fd, .events = POLLIN};
        int ms = quicoff_host_next_timeout_ms(h);
        if (poll(&pfd, 1, ms < 0 ? 100 : ms) < 0 && errno != EINTR)
            break;
        if (quicoff_host_process(h) == QUICOFF_HOST_IO)
            break;
    }
    h->sync_answer = NULL;
    if (!h->sync_done) {
        /* the socket failed: forget the request and its keys */
        for (unsigned i = 0; i < h->cfg.max_pending; i++)
            if (h->pending[i].used && h->pending[i].sync)
                release(h, &h->pending[i]);
        return QUICOFF_HOST_IO;
    }
    *reply = h->sync_reply;
    if (reply->result != QUICOFF_HOST_OK)
        return reply->result;
    return reply->success ? QUICOFF_HOST_OK : QUICOFF_HOST_REFUSED;
}

/* §6: a retry's answer may be what the first try's success looks like to an
 * offload that forgot the first try. */
static bool took_effect(uint8_t kind, quicoff_status_t st, unsigned tries)
{
    if (st == QUICOFF_OK)
        return true;
    if (tries > 1 && kind == QUICOFF_WIRE_ADD && st == QUICOFF_EXISTS)
        return true;
    if (tries > 1 && kind == QUICOFF_WIRE_REMOVE && st == QUICOFF_UNKNOWN_CONNECTION)
        return true;
    return false;
}

void qh_requests_answer(struct quicoff_host *h, const struct quicoff_wire_msg *m)
{
    uint8_t kind = m->kind == QUICOFF_WIRE_STATS ? QUICOFF_WIRE_QUERY : m->acked_kind;
    for (unsigned i = 0; i < h->cfg.max_pending; i++) {
        struct qh_pending *p = &h->pending[i];
        if (!p->used || p->request_id != m->request_id || p->kind != kind)
            continue;
        /* an ACK for an undecodable request carries direction 0xFF (§4.8) */
        if (p->index != m->index ||
            (p->direction != m->direction && m->direction != QUICOFF_WIRE_DIRECTION_NONE))
            continue;
        struct quicoff_host_reply r = {
            .request_id = p->request_id,
            .kind = p->kind,
            .direction = p->direction,
            .index = p->index,
            .tries = p->tries,
            .result = QUICOFF_HOST_OK,
            .status = (quicoff_status_t)m->status,
            .success = took_effect(p->kind, (quicoff_status_t)m->status, p->tries),
            .msg = m,
        };
        complete(h, p, &r);
        return;
    }
    h->st.late_replies++;
}

void qh_requests_timers(struct quicoff_host *h)
{
    if (h->n_pending == 0)
        return;
    uint64_t now = qh_now_ns();
    for (unsigned i = 0; i < h->cfg.max_pending; i++) {
        struct qh_pending *p = &h->pending[i];
        if (!p->used || p->due_ns > now)
            continue;
        if (p->tries >= h->cfg.max_tries) {
            struct quicoff_host_reply r = {
                .request_id = p->request_id,
                .kind = p->kind,
                .direction = p->direction,
                .index = p->index,
                .tries = p->tries,
                .result = QUICOFF_HOST_TIMEOUT,
                .status = QUICOFF_OK,
            };
            h->st.timeouts++;
            complete(h, p, &r);
            continue;
        }
        /* the identical frame: same request ID, so the offload runs it once */
        if (qh_link_send(h, p->frame, p->len) == QUICOFF_HOST_OK) {
            p->tries++;
            h->st.retries++;
            p->due_ns = now + wait_ns(h, p->tries);
        } else {
            p->due_ns = now + 1000000u; /* socket full: try again in 1 ms */
        }
    }
}

int quicoff_host_next_timeout_ms(const struct quicoff_host *h)
{
    if (!h || h->n_pending == 0)
        return -1;
    uint64_t now = qh_now_ns(), first = UINT64_MAX;
    for (unsigned i = 0; i < h->cfg.max_pending; i++)
        if (h->pending[i].used && h->pending[i].due_ns < first)
            first = h->pending[i].due_ns;
    if (first <= now)
        return 0;
    uint64_t ms = (first - now + 999999u) / 1000000u;
    return ms > 60000 ? 60000 : (int)ms;
}

void qh_requests_wipe(struct quicoff_host *h)
{
    for (unsigned i = 0; i < h->cfg.max_pending; i++)
        OPENSSL_cleanse(h->pending[i].frame, sizeof(h->pending[i].frame));
}
