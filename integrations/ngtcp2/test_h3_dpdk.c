/* SPDX-License-Identifier: Apache-2.0 */
/* qo-h3-server's dpdk backend (h3_dpdk.c) against a scripted offload on a
 * socket pair, without root or a connection: a batch leaves as
 * DATA_TO_OFFLOAD frames (full PN, no placeholder tag) with its long-header
 * part left to UDP; DATA_TO_HOST comes back with the placeholder tag, and
 * what the offload did not open is dropped; an offload that answers the
 * liveness QUERY without the entry, or not at all, puts the connection back
 * on ngtcp2's crypto; and after that a batch sealed with the null AEAD is
 * neither handed to the offload nor left for UDP. TAP output. */
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

static int setup(struct qo_offload *o, int *peer, unsigned silence_ms)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) != 0)
        return -1;
    qo_offload_init(o, QO_OFFLOAD_DPDK, 16);
    struct qo_dpdk_config cfg = {.ifname = "pair", .silence_ms = silence_ms};
    if (qo_dpdk_open_fd(o, &cfg, sv[0], HOST_MAC) != 0)
        return -1;
    *peer = sv[1];
    o->active = true; /* as after an acknowledged ADD of both entries */
    return 0;
}

int main(void)
{
    struct qo_offload o;
    int peer;
    struct quicoff_wire_msg m;
    struct qo_tx_batch b;

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
