/* SPDX-License-Identifier: Apache-2.0 */
/* qo-h3-server's dpdk backend (see h3_dpdk.h). */
#include "h3_dpdk.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <quicoff/host.h>

/* one entry index per direction: the server has one connection at a time,
 * and ADD replaces (REPLACE) whatever an earlier connection left there */
#define QO_DPDK_INDEX 0
#define QO_DPDK_RX_CAP 2048 /* a DATA_TO_HOST packet + the placeholder tag */
/* the packets of a batch's trains, copied back to back (ngtcp2 wrote each
 * datagram in its own buffer, with the null AEAD's 16 bytes after it): a
 * batch of datagrams of at most this size each */
#define QO_DPDK_PKT_CAP 2048
#define QO_DPDK_FRAME_MAX 65535 /* the host library's largest frame */
#define QO_DPDK_ETH_LEN 14

struct qo_dpdk {
    struct quicoff_host *h;
    char ifname[IF_NAMESIZE];
    unsigned silence_ms;
    bool installed; /* the connection's entries were added */
    bool lost;      /* a request got no answer: the offload is gone */
    bool probing;   /* the liveness QUERY is outstanding */
    uint32_t probe_id;
    uint64_t last_heard_ns; /* DATA_TO_HOST, ACK, STATS or EVENT */
    struct qo_offload *o;
    struct quicoff_wire_data in[QO_H3_BATCH];
    uint8_t rxbuf[QO_H3_BATCH][QO_DPDK_RX_CAP];
    /* bytes of packets one DATA_TRAIN may carry (the host link's MTU less the
     * train header); 0: no trains */
    uint32_t train_max;
    uint8_t trainbuf[QO_H3_BATCH * QO_DPDK_PKT_CAP];
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void on_event(void *arg, const struct quicoff_wire_msg *ev)
{
    struct qo_dpdk *d = arg;
    d->last_heard_ns = mono_ns();
    if (ev->status == QUICOFF_OK && ev->u.event.code == QUICOFF_WIRE_EV_KEY_UPDATE &&
        ev->direction == QUICOFF_DIR_RX && ev->index == QO_DPDK_INDEX)
        d->o->c.offload_key_update_events++;
}

/* Answers to submitted requests: the liveness QUERY and the REMOVEs sent
 * after a loss (whose answers, if any, change nothing). */
static void on_reply(void *arg, const struct quicoff_host_reply *r)
{
    struct qo_dpdk *d = arg;
    if (r->result == QUICOFF_HOST_OK)
        d->last_heard_ns = mono_ns();
    if (d->probing && r->request_id == d->probe_id) {
        d->probing = false;
        /* no answer: the offload is gone; an answer without the entry: it
         * restarted and forgot the connection. Either way its keys are not
         * there to protect what ngtcp2 writes. The fallback itself waits
         * for qo_dpdk_tick (no requests from inside the library's call). */
        if (r->result == QUICOFF_HOST_TIMEOUT || !r->success)
            d->lost = true;
    }
}

/* ---------------------------------------------------------------- requests */

/* The offload answered, and took it: 0. No answer: marks the offload lost. */
static int request(struct qo_dpdk *d, struct quicoff_wire_msg *m, struct quicoff_wire_msg *answer,
                   const char *what)
{
    struct quicoff_host_reply r;
    memset(&r, 0, sizeof(r));
    quicoff_host_status_t st = quicoff_host_request(d->h, m, &r, answer);
    if (st == QUICOFF_HOST_OK)
        return 0;
    if (st == QUICOFF_HOST_TIMEOUT)
        d->lost = true;
    /* the status names only: never a key */
    fprintf(stderr, "qo-h3-server: offload %s: %s%s%s\n", what, quicoff_host_status_name(st),
            st == QUICOFF_HOST_REFUSED ? " " : "",
            st == QUICOFF_HOST_REFUSED ? quicoff_status_name((quicoff_status_t)r.status) : "");
    return -1;
}

static int remove_entry(struct qo_dpdk *d, uint8_t dir, bool wait)
{
    struct quicoff_wire_msg m;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_REMOVE);
    m.direction = dir;
    m.index = QO_DPDK_INDEX;
    if (wait)
        return request(d, &m, NULL, dir == QUICOFF_DIR_TX ? "REMOVE tx" : "REMOVE rx");
    return quicoff_host_submit(d->h, &m, NULL) == QUICOFF_HOST_OK ? 0 : -1;
}

/* The entry's protected (TX) / opened (RX) packet count, from a QUERY. */
static void query_packets(struct qo_dpdk *d, uint8_t dir, uint64_t *out)
{
    struct quicoff_wire_msg m, ans;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_QUERY);
    m.flags = QUICOFF_WIRE_QUERY_CONN;
    m.direction = dir;
    m.index = QO_DPDK_INDEX;
    memset(&ans, 0, sizeof(ans));
    if (request(d, &m, &ans, "QUERY") == 0 && ans.u.stats.has_conn)
        *out += ans.u.stats.conn.packets;
}

/* ------------------------------------------------------------ encapsulation */

/* What the offload puts before each protected packet: the MACs of this
 * interface and of the peer (the kernel's neighbour entry: the peer's
 * Initial came by ARP-resolved IPv4 through the pass-through, so it is
 * there), the addresses and ports of the connection. IPv4 on the link. */
static int encap_for(struct qo_dpdk *d, const struct qo_offload *o, struct quicoff_wire_encap *e)
{
    if (o->remote.ss_family != AF_INET || o->local.ss_family != AF_INET) {
        fprintf(stderr, "qo-h3-server: offload: only IPv4 peers on the link are offloaded\n");
        return -1;
    }
    const struct sockaddr_in *l = (const struct sockaddr_in *)&o->local;
    const struct sockaddr_in *r = (const struct sockaddr_in *)&o->remote;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return -1;
    int rv = -1;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", d->ifname);
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0)
        goto out;
    memcpy(e->src_mac, ifr.ifr_hwaddr.sa_data, 6);
    struct in_addr src = l->sin_addr;
    if (src.s_addr == htonl(INADDR_ANY)) {
        if (ioctl(fd, SIOCGIFADDR, &ifr) != 0)
            goto out;
        src = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr;
    }
    struct arpreq ar;
    memset(&ar, 0, sizeof(ar));
    memcpy(&ar.arp_pa, r, sizeof(*r));
    snprintf(ar.arp_dev, sizeof(ar.arp_dev), "%s", d->ifname);
    if (ioctl(fd, SIOCGARP, &ar) != 0 || !(ar.arp_flags & ATF_COM)) {
        fprintf(stderr, "qo-h3-server: offload: no neighbour entry for the peer on %s\n",
                d->ifname);
        goto out;
    }
    memcpy(e->dst_mac, ar.arp_ha.sa_data, 6);
    e->family = 4;
    e->src_port = ntohs(l->sin_port);
    e->dst_port = ntohs(r->sin_port);
    memcpy(e->src_ip, &src, 4);
    memcpy(e->dst_ip, &r->sin_addr, 4);
    rv = 0;
out:
    close(fd);
    return rv;
}

/* ---------------------------------------------------------------- backend */

static int add_entry(struct qo_dpdk *d, const struct qo_offload *o, uint8_t dir,
                     const uint8_t *secret, size_t secret_len, const ngtcp2_cid *dcid,
                     const struct quicoff_wire_encap *encap)
{
    struct quicoff_wire_msg m;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_ADD);
    m.flags = QUICOFF_WIRE_ADD_REPLACE;
    m.direction = dir;
    m.index = QO_DPDK_INDEX;
    struct quicoff_conn_config *c = &m.u.add.cfg;
    c->direction = dir;
    c->suite = o->suite;
    c->version = o->version;
    memcpy(c->dcid, dcid->data, dcid->datalen);
    c->dcid_len = (uint8_t)dcid->datalen;
    /* the offload derives key, IV, header key and the next generation from
     * the secret (RFC 9001 §5.1, §6): the RX entry takes the peer's key
     * update without a round trip */
    memcpy(m.u.add.secret, secret, secret_len);
    c->secret_len = secret_len;
    if (encap) {
        m.u.add.has_encap = true;
        m.u.add.encap = *encap;
    }
    /* m (and its copy of the secret) is wiped by the library once encoded */
    return request(d, &m, NULL, dir == QUICOFF_DIR_TX ? "ADD tx" : "ADD rx");
}

static int dpdk_install(struct qo_offload *o, const uint8_t *rx_secret, const uint8_t *tx_secret,
                        size_t secret_len, const ngtcp2_cid *local_cid, const ngtcp2_cid *peer_cid)
{
    struct qo_dpdk *d = o->dpdk;
    struct quicoff_wire_encap encap;
    memset(&encap, 0, sizeof(encap));
    d->lost = false;
    d->probing = false;
    if (encap_for(d, o, &encap) != 0)
        return -1;
    if (add_entry(d, o, QUICOFF_DIR_TX, tx_secret, secret_len, peer_cid, &encap) != 0)
        return -1;
    if (add_entry(d, o, QUICOFF_DIR_RX, rx_secret, secret_len, local_cid, NULL) != 0) {
        if (!d->lost)
            remove_entry(d, QUICOFF_DIR_TX, true);
        return -1;
    }
    d->installed = true;
    d->last_heard_ns = mono_ns();
    return 0;
}

static int update_entry(struct qo_dpdk *d, uint8_t dir, uint32_t gen, const uint8_t *secret,
                        size_t secret_len)
{
    struct quicoff_wire_msg m;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_UPDATE);
    m.direction = dir;
    m.index = QO_DPDK_INDEX;
    struct quicoff_conn_update *u = &m.u.update.upd;
    /* the next generation, ahead of its use: the TX entry takes the key
     * phase ngtcp2 writes, the RX entry the one the peer sends, exactly as
     * libquicoff does in process */
    u->what = QUICOFF_UPDATE_KEYS;
    u->key_generation = gen;
    memcpy(m.u.update.secret, secret, secret_len);
    u->secret_len = secret_len;
    return request(d, &m, NULL, dir == QUICOFF_DIR_TX ? "UPDATE tx" : "UPDATE rx");
}

static int dpdk_update_keys(struct qo_offload *o, uint32_t gen, const uint8_t *rx_secret,
                            const uint8_t *tx_secret, size_t secret_len)
{
    struct qo_dpdk *d = o->dpdk;
    if (update_entry(d, QUICOFF_DIR_TX, gen, tx_secret, secret_len) != 0 ||
        update_entry(d, QUICOFF_DIR_RX, gen, rx_secret, secret_len) != 0) {
        if (d->lost)
            o->c.offload_lost++;
        return -1;
    }
    return 0;
}

/* The 1-RTT packet of datagram i as the offload takes it: after the
 * long-header packets coalesced before it, without the placeholder tag. */
static uint32_t packet_len(const struct qo_tx_batch *b, unsigned i)
{
    return (uint32_t)(b->len[i] - b->short_off[i] - QUICOFF_TAG_LEN);
}

/* How many datagrams from i on make one train, the way a QUIC stack cuts
 * its writes into UDP GSO sends: datagrams of 1-RTT packets alone (a
 * datagram with a long-header packet in it ends the train before it, and
 * leaves on its own), consecutive PNs, every packet the size of the first
 * (the segment size) but a shorter last one, which ends the train, and at
 * most max bytes. Connection and path are the batch's: the server and the
 * client write one connection's datagrams to one peer per batch. 1: the
 * datagram starts no train. */
unsigned qo_dpdk_train_length(const struct qo_tx_batch *b, unsigned i, uint32_t max)
{
    if (!b->has_1rtt[i] || !b->ok[i] || b->short_off[i] != 0)
        return 1;
    uint32_t seg = packet_len(b, i), bytes = seg;
    unsigned n = 1;
    for (unsigned j = i + 1; j < b->n; j++) {
        if (!b->has_1rtt[j] || !b->ok[j] || b->short_off[j] != 0 || b->pn[j] != b->pn[j - 1] + 1)
            break;
        uint32_t len = packet_len(b, j);
        if (len > seg || bytes + len > max)
            break;
        bytes += len;
        n++;
        if (len < seg)
            break;
    }
    return n;
}

/* Frames waiting for their sendmmsg in dpdk_send_batch, in packet order:
 * single packets or trains, and which datagrams each frame carries. */
struct qo_dpdk_run {
    struct quicoff_host_pkt p[QO_H3_BATCH];
    struct quicoff_host_train t[QO_H3_BATCH];
    unsigned first[QO_H3_BATCH], count[QO_H3_BATCH];
    unsigned n;
    bool trains;
};

static void send_run(struct qo_offload *o, struct qo_tx_batch *b, struct qo_dpdk_run *r)
{
    if (r->n == 0)
        return;
    unsigned sent = 0;
    if (r->trains)
        quicoff_host_send_train(o->dpdk->h, r->t, r->n, &sent);
    else
        quicoff_host_send_data(o->dpdk->h, r->p, r->n, &sent);
    o->c.host_frames_sent += sent;
    for (unsigned f = 0; f < r->n; f++) {
        if (f < sent) {
            o->c.host_packets_handed += r->count[f];
            continue;
        }
        for (unsigned k = 0; k < r->count[f]; k++) {
            b->ok[r->first[f] + k] = false;
            o->c.offload_tx_failures++;
        }
    }
    r->n = 0;
}

/* The batch's 1-RTT packets go to the offload (the one place a batch is
 * sent): runs of datagrams that form a train (qo_dpdk_train_length) as
 * DATA_TRAIN frames, the others one DATA_TO_OFFLOAD each. A train of one
 * would be a DATA_TRAIN 4 bytes longer than the DATA_TO_OFFLOAD that says
 * the same, so single packets stay DATA_TO_OFFLOAD: on a 1,500-byte host
 * link, where no two full-size packets fit a frame, the frames are those of
 * a backend without trains, but for runs of small packets (acknowledgements)
 * that fit one. Frames leave in the order of their packets (one
 * sendmmsg per run of trains or of single packets, usually one per batch):
 * reordering them would look like loss to the peer. Long-header packets
 * coalesced before a 1-RTT packet are already protected by ngtcp2 and stay
 * in the datagram for the UDP socket (len shrinks to them). A packet the
 * host link does not take is dropped: the UDP socket never sends it. */
static void dpdk_send_batch(struct qo_offload *o, struct qo_tx_batch *b)
{
    struct qo_dpdk *d = o->dpdk;
    struct qo_dpdk_run r = {.n = 0};
    size_t used = 0;
    for (unsigned i = 0; i < b->n;) {
        if (!b->has_1rtt[i] || !b->ok[i]) {
            i++;
            continue;
        }
        unsigned len = d->train_max ? qo_dpdk_train_length(b, i, d->train_max) : 1;
        uint32_t bytes = 0;
        for (unsigned k = 0; k < len; k++)
            bytes += packet_len(b, i + k);
        if (used + bytes > sizeof(d->trainbuf))
            len = 1; /* datagrams larger than ngtcp2 writes: never trains */
        bool train = len > 1;
        if (r.n && r.trains != train)
            send_run(o, b, &r); /* the frames before leave first */
        r.trains = train;
        r.first[r.n] = i;
        r.count[r.n] = len;
        if (train) {
            uint8_t *at = d->trainbuf + used;
            uint16_t seg = (uint16_t)packet_len(b, i);
            bytes = 0;
            for (unsigned k = 0; k < len; k++) {
                uint32_t pl = packet_len(b, i + k);
                memcpy(at + bytes, b->data[i + k], pl);
                bytes += pl;
                b->len[i + k] = 0; /* all of the datagram went to the offload */
            }
            used += bytes;
            r.t[r.n++] = (struct quicoff_host_train){.index = QO_DPDK_INDEX,
                                                     .pn = b->pn[i],
                                                     .data = at,
                                                     .len = bytes,
                                                     .segment_size = seg};
        } else {
            size_t off = b->short_off[i];
            r.p[r.n++] = (struct quicoff_host_pkt){.index = QO_DPDK_INDEX,
                                                   .pn = b->pn[i],
                                                   .data = b->data[i] + off,
                                                   .len = packet_len(b, i)};
            b->len[i] = off;
        }
        i += len;
    }
    send_run(o, b, &r);
}

static void dpdk_remove(struct qo_offload *o)
{
    struct qo_dpdk *d = o->dpdk;
    if (!d->installed)
        return;
    d->installed = false;
    if (d->lost) {
        /* best effort, without waiting: an offload that comes back must not
         * keep the keys (and its answers, if any, change nothing here) */
        remove_entry(d, QUICOFF_DIR_TX, false);
        remove_entry(d, QUICOFF_DIR_RX, false);
        return;
    }
    /* the offload's own packet counts, before the entries go */
    query_packets(d, QUICOFF_DIR_TX, &o->c.offload_tx_packets);
    query_packets(d, QUICOFF_DIR_RX, &o->c.offload_rx_packets);
    remove_entry(d, QUICOFF_DIR_TX, true);
    remove_entry(d, QUICOFF_DIR_RX, true);
}

static void dpdk_collect(struct qo_offload *o)
{
    (void)o; /* the counts are taken per connection, before REMOVE */
}

static void dpdk_free(struct qo_offload *o)
{
    if (!o->dpdk)
        return;
    quicoff_host_close(o->dpdk->h);
    free(o->dpdk);
    o->dpdk = NULL;
}

static const struct qo_backend dpdk_backend = {
    .install = dpdk_install,
    .update_keys = dpdk_update_keys,
    .protect = dpdk_send_batch,
    .unprotect = NULL, /* 1-RTT packets arrive opened: qo_dpdk_recv */
    .remove = dpdk_remove,
    .collect = dpdk_collect,
    .free = dpdk_free,
};

/* ------------------------------------------------------------------ public */

/* The interface's MTU; 0 when it cannot be read (then no trains). */
static unsigned link_mtu(const char *ifname)
{
    if (!ifname)
        return 0;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return 0;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
    int rv = ioctl(fd, SIOCGIFMTU, &ifr);
    close(fd);
    return rv == 0 && ifr.ifr_mtu > 0 ? (unsigned)ifr.ifr_mtu : 0;
}

/* fd < 0: open cfg->ifname; else the handle takes fd (a socket carrying
 * whole frames, host MAC mac) */
static int open_backend(struct qo_offload *o, const struct qo_dpdk_config *cfg, int fd,
                        const uint8_t mac[6])
{
    struct qo_dpdk *d = calloc(1, sizeof(*d));
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    d->o = o;
    d->silence_ms = cfg->silence_ms;
    snprintf(d->ifname, sizeof(d->ifname), "%s", cfg->ifname ? cfg->ifname : "");
    struct quicoff_host_config hc;
    quicoff_host_config_init(&hc);
    if (cfg->has_offload_mac)
        memcpy(hc.offload_mac, cfg->offload_mac, 6);
    hc.batch = QO_H3_BATCH;
    if (!cfg->no_trains) {
        /* a train's frame is Ethernet + the train header + its packets, and
         * the host link takes frames of its MTU (+ Ethernet) */
        unsigned mtu = cfg->link_mtu ? cfg->link_mtu : link_mtu(cfg->ifname);
        unsigned frame = mtu + QO_DPDK_ETH_LEN;
        if (frame > QO_DPDK_FRAME_MAX)
            frame = QO_DPDK_FRAME_MAX;
        if (frame > QO_DPDK_ETH_LEN + QUICOFF_WIRE_TRAIN_HDR_LEN) {
            d->train_max = frame - QO_DPDK_ETH_LEN - QUICOFF_WIRE_TRAIN_HDR_LEN;
            if (frame > hc.frame_cap)
                hc.frame_cap = frame;
        }
    }
    hc.on_event = on_event;
    hc.on_reply = on_reply;
    hc.cb_arg = d;
    quicoff_host_status_t st = fd < 0 ? quicoff_host_open(cfg->ifname, &hc, &d->h)
                                      : quicoff_host_open_fd(fd, mac, &hc, &d->h);
    if (st != QUICOFF_HOST_OK) {
        fprintf(stderr, "qo-h3-server: host interface %s: %s\n", d->ifname,
                quicoff_host_status_name(st));
        free(d);
        return -1;
    }
    o->dpdk = d;
    o->be = &dpdk_backend;
    return 0;
}

int qo_dpdk_open(struct qo_offload *o, const struct qo_dpdk_config *cfg)
{
    return open_backend(o, cfg, -1, NULL);
}

int qo_dpdk_open_fd(struct qo_offload *o, const struct qo_dpdk_config *cfg, int fd,
                    const uint8_t mac[6])
{
    return open_backend(o, cfg, fd, mac);
}

int qo_dpdk_fd(const struct qo_offload *o)
{
    return quicoff_host_fd(o->dpdk->h);
}

int qo_dpdk_timeout_ms(const struct qo_offload *o)
{
    const struct qo_dpdk *d = o->dpdk;
    int t = quicoff_host_next_timeout_ms(d->h);
    if (o->active && !d->probing) {
        int s = (int)d->silence_ms;
        if (t < 0 || s < t)
            t = s;
    }
    return t;
}

unsigned qo_dpdk_recv(struct qo_offload *o, uint8_t **pkt, size_t *len, unsigned max)
{
    struct qo_dpdk *d = o->dpdk;
    if (max > QO_H3_BATCH)
        max = QO_H3_BATCH;
    unsigned k = quicoff_host_recv_data(d->h, d->in, max, NULL), m = 0;
    if (k)
        d->last_heard_ns = mono_ns();
    for (unsigned j = 0; j < k; j++) {
        const struct quicoff_wire_data *in = &d->in[j];
        /* only what the RX entry opened: a packet passed as it failed
         * authentication is not ngtcp2's to read. Also after a fallback:
         * until its REMOVE arrives, the offload still opens the peer's
         * packets, and ngtcp2 reads them behind the null AEAD */
        bool opened = in->status == QUICOFF_OK || in->status == QUICOFF_USAGE_LIMIT_REACHED;
        if (in->index != QO_DPDK_INDEX || in->level != QUICOFF_LEVEL_ONE_RTT || !opened ||
            (in->flags & QUICOFF_FLAG_PASS_FAILED) ||
            in->payload_len + QUICOFF_TAG_LEN > QO_DPDK_RX_CAP) {
            o->c.offload_rx_failures++;
            continue;
        }
        memcpy(d->rxbuf[m], in->payload, in->payload_len);
        memset(d->rxbuf[m] + in->payload_len, 0, QUICOFF_TAG_LEN);
        pkt[m] = d->rxbuf[m];
        len[m] = in->payload_len + QUICOFF_TAG_LEN;
        m++;
    }
    return m;
}

void qo_dpdk_tick(struct qo_offload *o, bool awaiting_peer)
{
    struct qo_dpdk *d = o->dpdk;
    if (quicoff_host_next_timeout_ms(d->h) == 0)
        quicoff_host_process(d->h);
    if (d->lost && o->active) {
        fprintf(stderr, "qo-h3-server: the offload stopped answering: the connection is back on "
                        "ngtcp2's crypto\n");
        o->c.offload_lost++;
        qo_offload_fall_back(o);
        return;
    }
    if (!o->active || !awaiting_peer || d->probing)
        return;
    uint64_t now = mono_ns();
    if (now - d->last_heard_ns < (uint64_t)d->silence_ms * 1000000u)
        return;
    /* the RX entry's counters: an offload that answers without it has lost
     * the connection as surely as one that does not answer */
    struct quicoff_wire_msg m;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_QUERY);
    m.flags = QUICOFF_WIRE_QUERY_CONN;
    m.index = QO_DPDK_INDEX;
    m.direction = QUICOFF_DIR_RX;
    if (quicoff_host_submit(d->h, &m, &d->probe_id) == QUICOFF_HOST_OK)
        d->probing = true;
    d->last_heard_ns = now; /* the next question waits for this one's answer */
}

int qo_dpdk_option(struct qo_dpdk_config *cfg, int opt, const char *arg, const char *prog)
{
    switch (opt) {
    case 'i':
        cfg->ifname = arg;
        return 1;
    case 'm': {
        unsigned v[6];
        char extra;
        if (sscanf(arg, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &extra) !=
            6) {
            fprintf(stderr, "%s: --offload-mac %s: not a MAC\n", prog, arg);
            return -1;
        }
        for (int i = 0; i < 6; i++)
            if (v[i] > 0xff) {
                fprintf(stderr, "%s: --offload-mac %s: not a MAC\n", prog, arg);
                return -1;
            }
        for (int i = 0; i < 6; i++) /* only once all six are good */
            cfg->offload_mac[i] = (uint8_t)v[i];
        cfg->has_offload_mac = true;
        return 1;
    }
    case 'T':
        /* off: one DATA_TO_OFFLOAD per packet, to measure what trains buy */
        if (strcmp(arg, "on") != 0 && strcmp(arg, "off") != 0) {
            fprintf(stderr, "%s: --offload-trains on|off\n", prog);
            return -1;
        }
        cfg->no_trains = strcmp(arg, "off") == 0;
        return 1;
    case 'S':
        /* 0 would have the event loop spin instead of wait */
        cfg->silence_ms = (unsigned)strtoul(arg, NULL, 10);
        if (cfg->silence_ms == 0) {
            fprintf(stderr, "%s: --offload-silence-ms must be > 0\n", prog);
            return -1;
        }
        return 1;
    default:
        return 0;
    }
}
