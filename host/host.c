/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The handle: open and close, the receive loop that sorts what the offload
 * sends (answers to requests.c, events to the callback, DATA_TO_HOST to the
 * caller or the backlog), and DATA_TO_OFFLOAD batches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "host_int.h"
#include "qo_bytes.h"

const char *quicoff_host_status_name(quicoff_host_status_t s)
{
    switch (s) {
    case QUICOFF_HOST_OK:
        return "ok";
    case QUICOFF_HOST_TIMEOUT:
        return "timeout";
    case QUICOFF_HOST_BUSY:
        return "busy";
    case QUICOFF_HOST_FULL:
        return "full";
    case QUICOFF_HOST_AGAIN:
        return "again";
    case QUICOFF_HOST_INVALID:
        return "invalid";
    case QUICOFF_HOST_IO:
        return "io";
    case QUICOFF_HOST_NO_MEMORY:
        return "no_memory";
    case QUICOFF_HOST_REFUSED:
        return "refused";
    }
    return "unknown";
}

void quicoff_host_config_init(struct quicoff_host_config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    memset(cfg->offload_mac, 0xff, 6);
    cfg->ack_timeout_ms = 20;
    cfg->max_tries = 6;
    cfg->max_pending = 256;
    cfg->batch = 32;
    cfg->frame_cap = 9216;
    cfg->backlog = 256;
}

quicoff_host_status_t quicoff_host_open(const char *ifname, const struct quicoff_host_config *cfg,
                                        struct quicoff_host **out)
{
    if (!out)
        return QUICOFF_HOST_INVALID;
    int fd;
    uint8_t mac[6];
    quicoff_host_status_t st = qh_link_open(ifname, &fd, mac);
    if (st != QUICOFF_HOST_OK)
        return st;
    return quicoff_host_open_fd(fd, mac, cfg, out);
}

quicoff_host_status_t quicoff_host_open_fd(int fd, const uint8_t src_mac[6],
                                           const struct quicoff_host_config *cfg,
                                           struct quicoff_host **out)
{
    struct quicoff_host_config c;
    if (cfg)
        c = *cfg;
    else
        quicoff_host_config_init(&c);
    if (!out || fd < 0 || !src_mac || c.max_tries == 0 || c.max_pending == 0 || c.batch == 0 ||
        c.batch > 1024 || c.frame_cap < 64 || c.frame_cap > 65535 || c.ack_timeout_ms == 0) {
        if (fd >= 0)
            close(fd);
        return QUICOFF_HOST_INVALID;
    }
    struct quicoff_host *h = calloc(1, sizeof(*h));
    if (!h) {
        close(fd);
        return QUICOFF_HOST_NO_MEMORY;
    }
    h->fd = fd;
    h->cfg = c;
    memcpy(h->src_mac, src_mac, 6);
    h->eth_len = c.has_vlan ? 18 : 14;
    h->pending = calloc(c.max_pending, sizeof(*h->pending));
    h->rx_buf = malloc((size_t)c.batch * c.frame_cap);
    h->rx_msg = calloc(c.batch, sizeof(*h->rx_msg));
    h->rx_iov = calloc(c.batch, sizeof(*h->rx_iov));
    h->rx_addr = calloc(c.batch, sizeof(*h->rx_addr));
    h->bl_buf = c.backlog ? malloc((size_t)c.backlog * c.frame_cap) : NULL;
    h->bl_len = c.backlog ? calloc(c.backlog, sizeof(*h->bl_len)) : NULL;
    h->tx_hdr = calloc(c.batch, QH_DATA_HDR_MAX);
    h->tx_msg = calloc(c.batch, sizeof(*h->tx_msg));
    h->tx_iov = calloc((size_t)c.batch * 2, sizeof(*h->tx_iov));
    if (!h->pending || !h->rx_buf || !h->rx_msg || !h->rx_iov || !h->rx_addr || !h->tx_hdr ||
        !h->tx_msg || !h->tx_iov || (c.backlog && (!h->bl_buf || !h->bl_len))) {
        quicoff_host_close(h);
        return QUICOFF_HOST_NO_MEMORY;
    }
    qh_requests_init(h);
    *out = h;
    return QUICOFF_HOST_OK;
}

void quicoff_host_close(struct quicoff_host *h)
{
    if (!h)
        return;
    if (h->pending)
        qh_requests_wipe(h);
    close(h->fd);
    free(h->pending);
    free(h->rx_buf);
    free(h->rx_msg);
    free(h->rx_iov);
    free(h->rx_addr);
    free(h->bl_buf);
    free(h->bl_len);
    free(h->tx_hdr);
    free(h->tx_msg);
    free(h->tx_iov);
    OPENSSL_cleanse(&h->scratch, sizeof(h->scratch));
    free(h);
}

int quicoff_host_fd(const struct quicoff_host *h)
{
    return h ? h->fd : -1;
}

void quicoff_host_get_stats(const struct quicoff_host *h, struct quicoff_host_stats *out)
{
    if (h && out)
        *out = h->st;
}

static void on_event(struct quicoff_host *h, const struct quicoff_wire_msg *m)
{
    h->st.events++;
    /* the request-ID field of an EVENT is the offload's sequence number */
    if (h->have_event_seq && m->request_id != h->event_seq + 1)
        h->st.events_missed += (uint32_t)(m->request_id - h->event_seq - 1);
    h->have_event_seq = true;
    h->event_seq = m->request_id;
    if (h->cfg.on_event)
        h->cfg.on_event(h->cfg.cb_arg, m);
}

static void backlog_push(struct quicoff_host *h, const struct quicoff_wire_data *d)
{
    if (h->bl_count == h->cfg.backlog || d->payload_len > h->cfg.frame_cap) {
        h->st.backlog_dropped++;
        return;
    }
    unsigned slot = (h->bl_head + h->bl_count) % h->cfg.backlog;
    /* the slot keeps the 20-byte header's fields by re-encoding them, so a
     * kept frame is read back like a received one */
    uint8_t *b = h->bl_buf + (size_t)slot * h->cfg.frame_cap;
    size_t hl = quicoff_wire_data_hdr_write(b, h->cfg.frame_cap, QUICOFF_WIRE_DATA_TO_HOST, d);
    if (hl == 0 || hl + d->payload_len > h->cfg.frame_cap) {
        h->st.backlog_dropped++;
        return;
    }
    memcpy(b + hl, d->payload, d->payload_len);
    h->bl_len[slot] = (uint32_t)(hl + d->payload_len);
    h->bl_count++;
}

static bool backlog_pop(struct quicoff_host *h, struct quicoff_wire_data *d)
{
    while (h->bl_count > 0) {
        unsigned slot = h->bl_head;
        h->bl_head = (h->bl_head + 1) % h->cfg.backlog;
        h->bl_count--;
        quicoff_wire_kind_t kind;
        if (quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL,
                                       h->bl_buf + (size_t)slot * h->cfg.frame_cap,
                                       h->bl_len[slot], &kind, d) == QUICOFF_OK)
            return true;
    }
    return false;
}

/* The EtherType after at most two tags, and where its payload starts; 0 when
 * the frame is too short. */
static uint16_t eth_skip(const uint8_t *f, size_t len, size_t *off)
{
    size_t o = 12;
    for (int tags = 0; tags <= 2; tags++) {
        if (len < o + 2)
            return 0;
        uint16_t t = qo_load_be16(f + o);
        if (t != QUICOFF_WIRE_ETHERTYPE_VLAN && t != QUICOFF_WIRE_ETHERTYPE_QINQ) {
            *off = o + 2;
            return t;
        }
        o += 4;
    }
    return 0;
}

/* One received frame: a DATA_TO_HOST goes to *d (returns true); answers and
 * events are handled here. */
static bool dispatch(struct quicoff_host *h, const uint8_t *f, size_t len,
                     struct quicoff_wire_data *d)
{
    size_t off;
    uint16_t et = eth_skip(f, len, &off);
    if (et != QUICOFF_WIRE_ETHERTYPE_SIGNAL) {
        h->st.frames_ignored++;
        return false;
    }
    h->st.frames_received++;
    quicoff_wire_kind_t kind;
    quicoff_status_t st = quicoff_wire_data_hdr_read(et, f + off, len - off, &kind, d);
    if (kind == QUICOFF_WIRE_DATA_TO_HOST && st == QUICOFF_OK)
        return true;
    if (kind != QUICOFF_WIRE_NONE) { /* a bad data frame, or one to the offload */
        h->st.frames_ignored++;
        return false;
    }
    struct quicoff_wire_msg *m = &h->scratch;
    st = quicoff_wire_decode_payload(et, f + off, len - off, m);
    if (st != QUICOFF_OK)
        h->st.frames_ignored++;
    else if (m->kind == QUICOFF_WIRE_ACK || m->kind == QUICOFF_WIRE_STATS)
        qh_requests_answer(h, m);
    else if (m->kind == QUICOFF_WIRE_EVENT)
        on_event(h, m);
    else
        h->st.frames_ignored++; /* requests (another host's), compat signaling */
    quicoff_wire_msg_clear(m);
    return false;
}

/* Reads up to `want` frames (one recvmmsg); 0 when none are waiting. */
static int rx_batch(struct quicoff_host *h, unsigned want)
{
    if (want > h->cfg.batch)
        want = h->cfg.batch;
    for (unsigned i = 0; i < want; i++) {
        h->rx_iov[i].iov_base = h->rx_buf + (size_t)i * h->cfg.frame_cap;
        h->rx_iov[i].iov_len = h->cfg.frame_cap;
        memset(&h->rx_msg[i].msg_hdr, 0, sizeof(h->rx_msg[i].msg_hdr));
        h->rx_msg[i].msg_hdr.msg_iov = &h->rx_iov[i];
        h->rx_msg[i].msg_hdr.msg_iovlen = 1;
        h->rx_msg[i].msg_hdr.msg_name = &h->rx_addr[i];
        h->rx_msg[i].msg_hdr.msg_namelen = sizeof(h->rx_addr[i]);
    }
    int n = recvmmsg(h->fd, h->rx_msg, want, MSG_DONTWAIT, NULL);
    if (n < 0)
        return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
    return n;
}

static bool is_own(const struct quicoff_host *h, unsigned i)
{
    /* frames this host (or another socket on the interface) sent */
    return h->rx_msg[i].msg_hdr.msg_namelen >= sizeof(struct sockaddr_ll) &&
           h->rx_addr[i].sll_pkttype == PACKET_OUTGOING;
}

/* max == 0: data goes to the backlog. */
static unsigned pump(struct quicoff_host *h, struct quicoff_wire_data *out, unsigned max,
                     quicoff_host_status_t *err)
{
    unsigned got = 0;
    quicoff_host_status_t ret = QUICOFF_HOST_OK;
    while (max > 0 && got < max && backlog_pop(h, &out[got]))
        got++;
    bool from_backlog = got > 0; /* then no push to the backlog in this call */
    for (int rounds = 0; rounds < 64; rounds++) {
        unsigned want = max ? max - got : h->cfg.batch;
        if (max && want == 0)
            break;
        int n = rx_batch(h, want);
        if (n < 0) {
            ret = QUICOFF_HOST_IO;
            break;
        }
        for (int i = 0; i < n; i++) {
            struct quicoff_wire_data d;
            if (is_own(h, (unsigned)i))
                continue;
            if (!dispatch(h, h->rx_buf + (size_t)i * h->cfg.frame_cap, h->rx_msg[i].msg_len, &d))
                continue;
            if (max && got < max) {
                out[got++] = d;
                h->st.data_received++;
            } else if (!from_backlog) {
                backlog_push(h, &d);
            } else {
                h->st.backlog_dropped++;
            }
        }
        if ((unsigned)n < want || n == 0)
            break;
        if (max)
            break; /* the caller's buffers point into rx_buf: one batch per call */
    }
    qh_requests_timers(h);
    if (err)
        *err = ret;
    return got;
}

unsigned quicoff_host_recv_data(struct quicoff_host *h, struct quicoff_wire_data *out,
                                unsigned max, quicoff_host_status_t *err)
{
    if (!h || (!out && max)) {
        if (err)
            *err = QUICOFF_HOST_INVALID;
        return 0;
    }
    return pump(h, out, max, err);
}

quicoff_host_status_t quicoff_host_process(struct quicoff_host *h)
{
    if (!h)
        return QUICOFF_HOST_INVALID;
    quicoff_host_status_t err;
    pump(h, NULL, 0, &err);
    return err;
}

/* One frame of a send batch: Ethernet + data header in the handle's header
 * room, the packets from the caller's buffer (not copied). */
struct data_frame {
    quicoff_wire_kind_t kind;
    struct quicoff_wire_data d;
    const uint8_t *data;
};

/* sendmmsg in batches of cfg.batch; the headers are written per batch. */
static quicoff_host_status_t send_frames(struct quicoff_host *h, unsigned n,
                                         void (*get)(const void *, unsigned, struct data_frame *),
                                         const void *arg, unsigned *sent)
{
    unsigned done = 0;
    while (done < n) {
        unsigned k = n - done > h->cfg.batch ? h->cfg.batch : n - done;
        uint64_t packets = 0;
        for (unsigned i = 0; i < k; i++) {
            struct data_frame f;
            get(arg, done + i, &f);
            uint8_t *hdr = h->tx_hdr + (size_t)i * QH_DATA_HDR_MAX;
            size_t el = qh_eth_write(h, hdr, QUICOFF_WIRE_ETHERTYPE_SIGNAL);
            size_t hl = quicoff_wire_data_hdr_write(hdr + el, QH_DATA_HDR_MAX - el, f.kind, &f.d);
            if (hl == 0)
                return QUICOFF_HOST_INVALID;
            h->tx_iov[2 * i] = (struct iovec){hdr, el + hl};
            h->tx_iov[2 * i + 1] = (struct iovec){(void *)f.data, f.d.payload_len};
            memset(&h->tx_msg[i], 0, sizeof(h->tx_msg[i]));
            h->tx_msg[i].msg_hdr.msg_iov = &h->tx_iov[2 * i];
            h->tx_msg[i].msg_hdr.msg_iovlen = 2;
        }
        int m = sendmmsg(h->fd, h->tx_msg, k, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (m < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
                return QUICOFF_HOST_AGAIN;
            return QUICOFF_HOST_IO;
        }
        for (int i = 0; i < m; i++) {
            struct data_frame f;
            get(arg, done + (unsigned)i, &f);
            packets += f.kind == QUICOFF_WIRE_DATA_TRAIN ? f.d.count : 1;
            if (f.kind == QUICOFF_WIRE_DATA_TRAIN)
                h->st.trains_sent++;
        }
        done += (unsigned)m;
        h->st.frames_sent += (unsigned)m;
        h->st.data_sent += (unsigned)m;
        h->st.packets_sent += packets;
        if (sent)
            *sent = done;
        if ((unsigned)m < k)
            return QUICOFF_HOST_AGAIN;
    }
    return QUICOFF_HOST_OK;
}

static void get_pkt(const void *arg, unsigned i, struct data_frame *f)
{
    const struct quicoff_host_pkt *p = (const struct quicoff_host_pkt *)arg + i;
    *f = (struct data_frame){.kind = QUICOFF_WIRE_DATA_TO_OFFLOAD,
                             .d = {.index = p->index, .pn = p->pn, .payload_len = p->len},
                             .data = p->data};
}

static void get_train(const void *arg, unsigned i, struct data_frame *f)
{
    const struct quicoff_host_train *t = (const struct quicoff_host_train *)arg + i;
    uint32_t count = t->segment_size ? (t->len + t->segment_size - 1) / t->segment_size : 0;
    *f = (struct data_frame){.kind = QUICOFF_WIRE_DATA_TRAIN,
                             .d = {.index = t->index,
                                   .pn = t->pn,
                                   .payload_len = t->len,
                                   .segment_size = t->segment_size,
                                   .count = (uint16_t)count},
                             .data = t->data};
}

quicoff_host_status_t quicoff_host_send_data(struct quicoff_host *h,
                                             const struct quicoff_host_pkt *pkts, unsigned n,
                                             unsigned *sent)
{
    if (sent)
        *sent = 0;
    if (!h || (!pkts && n))
        return QUICOFF_HOST_INVALID;
    for (unsigned i = 0; i < n; i++) /* all or nothing for bad arguments */
        if (!pkts[i].data || pkts[i].len == 0 || pkts[i].len > 0xFFFF ||
            pkts[i].pn > QUICOFF_WIRE_PN_MAX ||
            h->eth_len + QUICOFF_WIRE_DATA_HDR_LEN + pkts[i].len > h->cfg.frame_cap)
            return QUICOFF_HOST_INVALID;
    return send_frames(h, n, get_pkt, pkts, sent);
}

quicoff_host_status_t quicoff_host_send_train(struct quicoff_host *h,
                                              const struct quicoff_host_train *trains, unsigned n,
                                              unsigned *sent)
{
    if (sent)
        *sent = 0;
    if (!h || (!trains && n))
        return QUICOFF_HOST_INVALID;
    for (unsigned i = 0; i < n; i++) { /* all or nothing for bad arguments */
        const struct quicoff_host_train *t = &trains[i];
        uint32_t count = t->segment_size ? (t->len + t->segment_size - 1) / t->segment_size : 0;
        if (!t->data || t->len == 0 || t->len > 0xFFFF || t->segment_size == 0 ||
            t->pn > QUICOFF_WIRE_PN_MAX || count - 1 > QUICOFF_WIRE_PN_MAX - t->pn ||
            h->eth_len + QUICOFF_WIRE_TRAIN_HDR_LEN + t->len > h->cfg.frame_cap)
            return QUICOFF_HOST_INVALID;
    }
    return send_frames(h, n, get_train, trains, sent);
}
