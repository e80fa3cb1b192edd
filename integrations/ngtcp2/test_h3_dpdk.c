/* SPDX-License-Identifier: Apache-2.0 */
/* qo-h3-server's dpdk backend (h3_dpdk.c) against a scripted offload on a
 * socket pair, without root or a connection: a batch leaves as
 * DATA_TO_OFFLOAD frames (full PN, no placeholder tag) with its long-header
 * part left to UDP; DATA_TO_HOST comes back with the placeholder tag, and
 * what the offload did not open is dropped; an offload that answers the
 * liveness QUERY without the entry, or not at all, puts the connection back
 * on ngtcp2's crypto; and after that a batch sealed with the null AEAD is
 * neither handed to the offload nor left for UDP. Trains: the grouping
 * rules (a PN gap, a size change, a long-header datagram and the frame cap
 * end a train; a shorter last packet ends it after itself), a batch on a
 * jumbo link as one DATA_TRAIN, and on a 1,500-byte link (or with trains
 * off) one DATA_TO_OFFLOAD per packet. TAP output. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <quicoff/wire.h>

#include "h3_dpdk.h"
#include "h3_offload.h"

static int failures, count;

static void ok(int cond, const char *what)
{
    count++;
    printf("%sok %d - %s\n", cond ? "" : "not ", count, what);
    if (!cond)
        failures++;
}

static const uint8_t HOST_MAC[6] = {0x02, 0, 0, 0, 0, 0x01};
static const uint8_t OFF_MAC[6] = {0x02, 0, 0, 0, 0, 0x02};

/* The scripted offload's end: the next frame the backend sent, decoded
 * (waits up to ms). */
static int next_frame(int fd, struct quicoff_wire_msg *m, int ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, ms) <= 0)
        return -1;
    static uint8_t buf[9216];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0)
        return -1;
    return quicoff_wire_decode(buf, (size_t)n, m) == QUICOFF_OK ? 0 : -1;
}

static void send_msg(int fd, struct quicoff_wire_msg *m)
{
    uint8_t buf[9216];
    size_t len = 0;
    m->has_eth = true;
    memcpy(m->eth.dst, HOST_MAC, 6);
    memcpy(m->eth.src, OFF_MAC, 6);
    if (quicoff_wire_encode(m, buf, sizeof(buf), &len) == QUICOFF_OK)
        send(fd, buf, len, 0);
}

static void send_to_host(int fd, uint8_t status, uint8_t flags, const uint8_t *pkt, uint32_t len)
{
    struct quicoff_wire_msg m;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_DATA_TO_HOST);
    m.u.data.index = 0;
    m.u.data.pn = 9;
    m.u.data.status = status;
    m.u.data.flags = flags;
    m.u.data.level = QUICOFF_LEVEL_ONE_RTT;
    m.u.data.payload = pkt;
    m.u.data.payload_len = len;
    send_msg(fd, &m);
}

/* Ticks until the backend has sent a frame (the liveness QUERY). */
static int tick_until_frame(struct qo_offload *o, int fd, struct quicoff_wire_msg *m)
{
    for (int i = 0; i < 50; i++) {
        qo_dpdk_tick(o, true);
        if (next_frame(fd, m, 10) == 0)
            return 0;
    }
    return -1;
}

/* A datagram as ngtcp2 leaves it with the null AEAD: 10 bytes of an
 * (already protected) long-header packet, then a 1-RTT packet in plaintext
 * and 16 placeholder bytes. */
static uint8_t dgram[64];
static void fill_batch(struct qo_tx_batch *b)
{
    memset(b, 0, sizeof(*b));
    memset(dgram, 0xaa, 10);
    dgram[10] = 0x43; /* short header, 4-byte PN */
    memset(dgram + 11, 0x55, 37);
    memset(dgram + 48, 0, 16);
    b->n = 2;
    b->data[0] = dgram;
    b->len[0] = sizeof(dgram);
    b->has_1rtt[0] = true;
    b->short_off[0] = 10;
    b->pn[0] = 0x123456789;
    b->ok[0] = true;
    static uint8_t other[20];
    b->data[1] = other;
    b->len[1] = sizeof(other);
    b->ok[1] = true;
}

/* Datagrams of 1-RTT packets alone, as ngtcp2 leaves them with the null
 * AEAD: the packet (first byte short header, then i in every byte) and 16
 * placeholder bytes; sizes[i] bytes of packet, PN first + i unless gaps. */
static uint8_t runbuf[QO_H3_BATCH][1500];
static void fill_run(struct qo_tx_batch *b, const unsigned *sizes, unsigned n, uint64_t first)
{
    memset(b, 0, sizeof(*b));
    for (unsigned i = 0; i < n; i++) {
        memset(runbuf[i], 0x10 + i, sizes[i]);
        runbuf[i][0] = 0x43;
        memset(runbuf[i] + sizes[i], 0, QUICOFF_TAG_LEN);
        b->data[i] = runbuf[i];
        b->len[i] = sizes[i] + QUICOFF_TAG_LEN;
        b->has_1rtt[i] = true;
        b->pn[i] = first + i;
        b->ok[i] = true;
    }
    b->n = n;
}

static void test_grouping(void)
{
    struct qo_tx_batch b;
    const unsigned same[5] = {1200, 1200, 1200, 1200, 1200};
    fill_run(&b, same, 5, 100);
    ok(qo_dpdk_train_length(&b, 0, 65000) == 5, "consecutive PNs, one size: one train of 5");
    ok(qo_dpdk_train_length(&b, 0, 3 * 1200) == 3 && qo_dpdk_train_length(&b, 0, 1199) == 1,
       "the frame cap ends a train (3 packets fit; none but the first)");
    b.pn[3] = 104;
    ok(qo_dpdk_train_length(&b, 0, 65000) == 3, "a PN gap ends a train");
    fill_run(&b, same, 5, 100);
    b.short_off[2] = 10;
    ok(qo_dpdk_train_length(&b, 0, 65000) == 2 && qo_dpdk_train_length(&b, 2, 65000) == 1,
       "a datagram with a long-header packet ends a train and starts none");
    fill_run(&b, same, 5, 100);
    b.has_1rtt[1] = false;
    ok(qo_dpdk_train_length(&b, 0, 65000) == 1, "a datagram without a 1-RTT packet ends a train");
    const unsigned shorter[4] = {1200, 1200, 700, 1200};
    fill_run(&b, shorter, 4, 7);
    ok(qo_dpdk_train_length(&b, 0, 65000) == 3, "a shorter packet is a train's last");
    const unsigned longer[4] = {700, 700, 1200, 1200};
    fill_run(&b, longer, 4, 7);
    ok(qo_dpdk_train_length(&b, 0, 65000) == 2 && qo_dpdk_train_length(&b, 2, 65000) == 2,
       "a longer packet starts a new train (the first's size is the segment size)");
    fill_run(&b, same, 3, 7);
    b.ok[1] = false;
    ok(qo_dpdk_train_length(&b, 0, 65000) == 1, "a datagram that may not be sent ends a train");
}

static int setup_mtu(struct qo_offload *o, int *peer, unsigned silence_ms, unsigned mtu,
                     bool no_trains)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) != 0)
        return -1;
    qo_offload_init(o, QO_OFFLOAD_DPDK, 16);
    struct qo_dpdk_config cfg = {.ifname = "pair",
                                 .silence_ms = silence_ms,
                                 .link_mtu = mtu,
                                 .no_trains = no_trains};
    if (qo_dpdk_open_fd(o, &cfg, sv[0], HOST_MAC) != 0)
        return -1;
    *peer = sv[1];
    o->active = true; /* as after an acknowledged ADD of both entries */
    return 0;
}

/* A 1,500-byte link: no two full-size packets fit one frame */
static int setup(struct qo_offload *o, int *peer, unsigned silence_ms)
{
    return setup_mtu(o, peer, silence_ms, 1500, false);
}

/* The options both programs take for the backend (qo_dpdk_option). */
static void test_options(void)
{
    struct qo_dpdk_config c = {.silence_ms = 500};
    ok(qo_dpdk_option(&c, 'm', "02:00:5e:00:01:0a", "t") == 1 && c.has_offload_mac &&
           c.offload_mac[0] == 0x02 && c.offload_mac[5] == 0x0a,
       "--offload-mac: six hex bytes");
    struct qo_dpdk_config before = c;
    fprintf(stderr, "(the next five messages are expected)\n");
    ok(qo_dpdk_option(&c, 'm', "02:00:5e:00:01", "t") == -1 &&
           qo_dpdk_option(&c, 'm', "02:00:5e:00:01:0a:0b", "t") == -1 &&
           qo_dpdk_option(&c, 'm', "03:00:5e:00:01:100", "t") == -1 &&
           memcmp(&c, &before, sizeof(c)) == 0,
       "--offload-mac: five bytes, seven, a byte over 0xff: refused, the MAC as it was");
    ok(qo_dpdk_option(&c, 'T', "off", "t") == 1 && c.no_trains &&
           qo_dpdk_option(&c, 'T', "on", "t") == 1 && !c.no_trains &&
           qo_dpdk_option(&c, 'T', "yes", "t") == -1,
       "--offload-trains on|off, nothing else");
    ok(qo_dpdk_option(&c, 'S', "250", "t") == 1 && c.silence_ms == 250 &&
           qo_dpdk_option(&c, 'S', "0", "t") == -1,
       "--offload-silence-ms: > 0");
    ok(qo_dpdk_option(&c, 'i', "veth0", "t") == 1 && strcmp(c.ifname, "veth0") == 0 &&
           qo_dpdk_option(&c, 'k', "x", "t") == 0,
       "--host-if taken; another program's option left to the program");
}

/* A batch of 5 packets of 1200 bytes then one of 700, through the backend:
 * the frames the scripted offload receives */
static void test_trains_sent(void)
{
    struct qo_offload o;
    int peer;
    struct quicoff_wire_msg m;
    struct qo_tx_batch b;
    const unsigned sizes[6] = {1200, 1200, 1200, 1200, 1200, 700};

    ok(setup_mtu(&o, &peer, 0, 9000, false) == 0, "backend on a jumbo link (MTU 9000)");
    fill_run(&b, sizes, 6, 0x1000);
    qo_offload_protect(&o, &b);
    bool same = next_frame(peer, &m, 100) == 0 && m.kind == QUICOFF_WIRE_DATA_TRAIN &&
                m.u.data.index == 0 && m.u.data.pn == 0x1000 && m.u.data.count == 6 &&
                m.u.data.segment_size == 1200 && m.u.data.payload_len == 5 * 1200 + 700;
    for (unsigned i = 0; same && i < 6; i++) {
        uint32_t len = 0;
        const uint8_t *pkt = quicoff_wire_train_packet(&m.u.data, i, &len);
        same = pkt && len == sizes[i] && memcmp(pkt, runbuf[i], len) == 0;
    }
    ok(same, "6 packets, the last shorter: one DATA_TRAIN, packets back to back, no tags");
    bool none_left = true;
    for (unsigned i = 0; i < 6; i++)
        none_left = none_left && b.ok[i] && b.len[i] == 0;
    ok(none_left && next_frame(peer, &m, 20) != 0, "nothing else is sent, nothing left for UDP");
    ok(o.c.host_frames_sent == 1 && o.c.host_packets_handed == 6, "1 frame for 6 packets");

    /* a PN gap and a long-header datagram: train, single, train, in order */
    fill_run(&b, sizes, 6, 0x2000);
    b.pn[3] = b.pn[4] - 1 + 10; /* 2, then gap */
    b.pn[4] = b.pn[3] + 1;
    b.pn[5] = b.pn[4] + 1;
    b.short_off[2] = 8; /* a long-header packet before the third 1-RTT packet */
    qo_offload_protect(&o, &b);
    bool t1 = next_frame(peer, &m, 100) == 0 && m.kind == QUICOFF_WIRE_DATA_TRAIN &&
              m.u.data.pn == 0x2000 && m.u.data.count == 2;
    bool s1 = next_frame(peer, &m, 100) == 0 && m.kind == QUICOFF_WIRE_DATA_TO_OFFLOAD &&
              m.u.data.pn == 0x2002 && m.u.data.payload_len == 1200 - 8;
    bool t2 = next_frame(peer, &m, 100) == 0 && m.kind == QUICOFF_WIRE_DATA_TRAIN &&
              m.u.data.pn == b.pn[3] && m.u.data.count == 3 && m.u.data.segment_size == 1200;
    ok(t1 && s1 && t2 && next_frame(peer, &m, 20) != 0,
       "a long-header datagram and a PN gap: train, DATA_TO_OFFLOAD, train, in packet order");
    ok(b.len[2] == 8 && b.len[0] == 0 && b.len[5] == 0,
       "only the long-header packet is left for UDP");
    ok(o.c.host_frames_sent == 4 && o.c.host_packets_handed == 12,
       "counted: 4 frames, 12 packets");
    qo_offload_free(&o);
    close(peer);

    /* a 1,500-byte link, and trains off: one DATA_TO_OFFLOAD per packet */
    for (int off = 0; off < 2; off++) {
        ok(setup_mtu(&o, &peer, 0, off ? 9000 : 1500, off) == 0,
           off ? "backend with trains off" : "backend on a 1,500-byte link");
        fill_run(&b, sizes, 6, 0x3000);
        qo_offload_protect(&o, &b);
        unsigned k = 0;
        while (next_frame(peer, &m, 50) == 0 && m.kind == QUICOFF_WIRE_DATA_TO_OFFLOAD &&
               m.u.data.pn == 0x3000 + k)
            k++;
        ok(k == 6 && o.c.host_frames_sent == 6 && o.c.host_packets_handed == 6,
           "6 packets: 6 DATA_TO_OFFLOAD frames, in order");
        if (!off) {
            /* small packets (acknowledgements) of a run do fit one frame */
            const unsigned acks[3] = {40, 40, 40};
            fill_run(&b, acks, 3, 0x4000);
            qo_offload_protect(&o, &b);
            ok(next_frame(peer, &m, 100) == 0 && m.kind == QUICOFF_WIRE_DATA_TRAIN &&
                   m.u.data.pn == 0x4000 && m.u.data.count == 3 && o.c.host_frames_sent == 7,
               "1,500-byte link: 3 packets of 40 bytes, consecutive PNs: one DATA_TRAIN");
        }
        qo_offload_free(&o);
        close(peer);
    }
}

int main(void)
{
    struct qo_offload o;
    int peer;
    struct quicoff_wire_msg m;
    struct qo_tx_batch b;

    test_grouping();
    test_options();
    test_trains_sent();

    ok(setup(&o, &peer, 0) == 0, "backend on a socket pair");

    /* out: one DATA_TO_OFFLOAD per 1-RTT packet, the rest for UDP */
    fill_batch(&b);
    qo_offload_protect(&o, &b);
    ok(next_frame(peer, &m, 100) == 0 && m.kind == QUICOFF_WIRE_DATA_TO_OFFLOAD &&
           m.u.data.index == 0 && m.u.data.pn == 0x123456789 && m.u.data.payload_len == 38 &&
           memcmp(m.u.data.payload, dgram + 10, 38) == 0,
       "the 1-RTT packet leaves as DATA_TO_OFFLOAD: full PN, index 0, no placeholder tag");
    ok(b.ok[0] && b.len[0] == 10 && b.ok[1] && b.len[1] == 20,
       "the long-header part and the other datagram stay for the UDP socket");
    ok(next_frame(peer, &m, 20) != 0 && o.c.host_frames_sent == 1, "one frame, counted");

    /* in: opened packets only, with room for ngtcp2's tag */
    uint8_t pkt[30];
    memset(pkt, 0x41, sizeof(pkt));
    send_to_host(peer, QUICOFF_OK, 0, pkt, sizeof(pkt));
    send_to_host(peer, QUICOFF_AUTH_FAILED, QUICOFF_FLAG_PASS_FAILED, pkt, sizeof(pkt));
    uint8_t *got[QO_H3_BATCH];
    size_t glen[QO_H3_BATCH];
    unsigned n = 0;
    for (int i = 0; i < 50 && n == 0; i++) {
        usleep(2000);
        n = qo_dpdk_recv(&o, got, glen, QO_H3_BATCH);
    }
    static const uint8_t zero[QUICOFF_TAG_LEN];
    ok(n == 1 && glen[0] == sizeof(pkt) + QUICOFF_TAG_LEN &&
           memcmp(got[0], pkt, sizeof(pkt)) == 0 &&
           memcmp(got[0] + sizeof(pkt), zero, QUICOFF_TAG_LEN) == 0,
       "DATA_TO_HOST: the opened packet and 16 placeholder bytes");
    ok(o.c.offload_rx_failures == 1, "a packet the offload passed as it failed is dropped");

    /* silence while bytes are in flight: a QUERY of the RX entry; answered
     * without the entry (a restarted offload): fall back */
    ok(tick_until_frame(&o, peer, &m) == 0 && m.kind == QUICOFF_WIRE_QUERY &&
           m.direction == QUICOFF_DIR_RX && m.index == 0 && (m.flags & QUICOFF_WIRE_QUERY_CONN),
       "silence with bytes in flight: the RX entry is QUERYed");
    struct quicoff_wire_msg reply;
    quicoff_wire_stats_for(&m, QUICOFF_UNKNOWN_CONNECTION, &reply);
    send_msg(peer, &reply);
    for (int i = 0; i < 50 && o.active; i++) {
        usleep(2000);
        qo_dpdk_recv(&o, got, glen, QO_H3_BATCH);
        qo_dpdk_tick(&o, true);
    }
    ok(!o.active && o.c.offload_lost == 1 && o.c.fallbacks == 1,
       "answered without the entry: the connection is back on ngtcp2's crypto");

    /* never plaintext: a batch sealed with the null AEAD before the switch */
    fill_batch(&b);
    qo_offload_protect(&o, &b);
    ok(!b.ok[0] && b.ok[1], "after the fallback a null-sealed datagram is not for UDP");
    ok(next_frame(peer, &m, 20) != 0, "... nor handed to the offload");
    ok(o.c.offload_tx_failures == 1, "... and counted");
    /* the offload may still open the peer's packets until it hears the REMOVE */
    send_to_host(peer, QUICOFF_OK, 0, pkt, sizeof(pkt));
    n = 0;
    for (int i = 0; i < 50 && n == 0; i++) {
        usleep(2000);
        n = qo_dpdk_recv(&o, got, glen, QO_H3_BATCH);
    }
    ok(n == 1, "after the fallback an opened packet is still read");
    qo_offload_free(&o);
    close(peer);

    /* an offload that does not answer at all: the QUERY's re-sends run out */
    ok(setup(&o, &peer, 0) == 0, "a second backend");
    ok(tick_until_frame(&o, peer, &m) == 0 && m.kind == QUICOFF_WIRE_QUERY, "QUERY sent");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    unsigned frames = 1;
    while (o.active) {
        int t = qo_dpdk_timeout_ms(&o);
        if (next_frame(peer, &m, t < 0 ? 10 : t + 1) == 0)
            frames++;
        qo_dpdk_tick(&o, true);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (t1.tv_sec - t0.tv_sec > 10)
            break;
    }
    ok(!o.active && o.c.offload_lost == 1 && frames == 6,
       "no answer after 6 frames: the connection falls back");
    qo_offload_free(&o);
    close(peer);

    printf("1..%d\n", count);
    return failures ? 1 : 0;
}
