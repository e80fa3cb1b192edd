/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-bench-trains-host: the sending side of bench/trains.py.  On the
 * host interface given, through libquicoff-host, it installs one TX entry
 * and hands the offload `packets` plaintext 1-RTT packets of `size` bytes,
 * either one DATA_TO_OFFLOAD frame per packet (quicoff_host_send_data, 32
 * frames per sendmmsg) or DATA_TRAIN frames of `train` packets each
 * (quicoff_host_send_train, 8 trains per sendmmsg), and prints one JSON line:
 * frames and packets sent (the library's counters) and this process's CPU
 * time (user + sys, getrusage) spent in the send loop.
 *
 *   quicoff-bench-trains-host IFNAME single|train PACKETS SIZE [TRAIN]
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "quicoff/host.h"

#define SINGLE_BATCH 32
#define TRAIN_BATCH 8

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* The PN bytes of the packet at p (a stack writes them with the packet; the
 * offload checks the truncated PN against the full one). */
static void set_pn(uint8_t *p, uint64_t pn)
{
    p[9] = (uint8_t)(pn >> 8);
    p[10] = (uint8_t)pn;
}

/* A short-header packet: 0x41 (2-byte PN), the 8-byte DCID, the PN's low 16
 * bits, then payload bytes up to `size`. */
static void write_packet(uint8_t *p, uint32_t size, uint64_t pn)
{
    p[0] = 0x41;
    memcpy(p + 1, "\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8", 8);
    set_pn(p, pn);
    memset(p + 11, 0x5a, size - 11);
}

/* The socket is full: wait for room (the offload drains the link). */
static void wait_writable(struct quicoff_host *h)
{
    struct pollfd p = {.fd = quicoff_host_fd(h), .events = POLLOUT};
    (void)poll(&p, 1, 10);
    (void)quicoff_host_process(h);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr,
                "usage: quicoff-bench-trains-host IFNAME single|train PACKETS SIZE [TRAIN]\n");
        return 2;
    }
    int train_mode = strcmp(argv[2], "train") == 0;
    unsigned long packets = strtoul(argv[3], NULL, 0);
    uint32_t size = (uint32_t)strtoul(argv[4], NULL, 0);
    unsigned train = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 0) : 1;
    if (size < 40 || size > 1400 || !packets || !train || (uint64_t)train * size > 65535) {
        fprintf(stderr, "quicoff-bench-trains-host: size 40..1400, train * size <= 65535\n");
        return 2;
    }

    struct quicoff_host_config cfg;
    quicoff_host_config_init(&cfg);
    cfg.frame_cap = 65535; /* a jumbo host link: trains of up to 64 KB */
    cfg.batch = SINGLE_BATCH;
    struct quicoff_host *h;
    quicoff_host_status_t st = quicoff_host_open(argv[1], &cfg, &h);
    if (st != QUICOFF_HOST_OK) {
        fprintf(stderr, "cannot open %s: %s\n", argv[1], quicoff_host_status_name(st));
        return 2;
    }

    struct quicoff_wire_msg m, ans;
    struct quicoff_host_reply r;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_ADD);
    m.direction = QUICOFF_DIR_TX;
    m.index = 1;
    struct quicoff_conn_config *c = &m.u.add.cfg;
    c->direction = QUICOFF_DIR_TX;
    c->suite = QUICOFF_AES_128_GCM;
    for (int i = 0; i < 16; i++)
        c->keys.key[i] = c->keys.hp[i] = (uint8_t)(0x30 + i);
    memset(c->keys.iv, 0x44, 12);
    c->dcid_len = 8;
    memcpy(c->dcid, "\xd1\xd2\xd3\xd4\xd5\xd6\xd7\xd8", 8);
    m.u.add.has_encap = true;
    struct quicoff_wire_encap *e = &m.u.add.encap;
    memcpy(e->dst_mac, "\x02\x00\x00\x00\xbe\xef", 6);
    memcpy(e->src_mac, "\x02\x00\x00\x00\xa0\x01", 6);
    e->family = 4;
    e->src_port = 4433;
    e->dst_port = 443;
    memcpy(e->src_ip, "\xc0\x00\x02\x01", 4);
    memcpy(e->dst_ip, "\xc6\x33\x64\x07", 4);
    m.flags = QUICOFF_WIRE_ADD_REPLACE;
    st = quicoff_host_request(h, &m, &r, &ans);
    if (st != QUICOFF_HOST_OK) {
        fprintf(stderr, "ADD failed: %s\n", quicoff_host_status_name(st));
        return 1;
    }

    /* the packets of one batch, written once; PNs are set per send */
    unsigned per_batch = train_mode ? TRAIN_BATCH * train : SINGLE_BATCH;
    uint8_t *buf = malloc((size_t)per_batch * size);
    if (!buf)
        return 1;
    for (unsigned i = 0; i < per_batch; i++)
        write_packet(buf + (size_t)i * size, size, i);

    double c0 = cpu_seconds(), w0 = wall_seconds();
    uint64_t pn = 0;
    unsigned long left = packets;
    while (left) {
        if (train_mode) {
            struct quicoff_host_train t[TRAIN_BATCH];
            unsigned n = 0;
            while (n < TRAIN_BATCH && left) {
                unsigned k = left < train ? (unsigned)left : train;
                uint8_t *first = buf + (size_t)n * train * size;
                for (unsigned j = 0; j < k; j++)
                    set_pn(first + (size_t)j * size, pn + j);
                t[n] = (struct quicoff_host_train){.index = 1,
                                                   .pn = pn,
                                                   .data = first,
                                                   .len = k * size,
                                                   .segment_size = (uint16_t)size};
                pn += k;
                left -= k;
                n++;
            }
            unsigned done = 0;
            while (done < n) {
                unsigned sent = 0;
                st = quicoff_host_send_train(h, t + done, n - done, &sent);
                done += sent;
                if (st == QUICOFF_HOST_AGAIN)
                    wait_writable(h);
                else if (st != QUICOFF_HOST_OK)
                    return 1;
            }
        } else {
            struct quicoff_host_pkt p[SINGLE_BATCH];
            unsigned n = 0;
            while (n < SINGLE_BATCH && left) {
                set_pn(buf + (size_t)n * size, pn);
                p[n] = (struct quicoff_host_pkt){.index = 1,
                                                 .pn = pn++,
                                                 .data = buf + (size_t)n * size,
                                                 .len = size};
                left--;
                n++;
            }
            unsigned done = 0;
            while (done < n) {
                unsigned sent = 0;
                st = quicoff_host_send_data(h, p + done, n - done, &sent);
                done += sent;
                if (st == QUICOFF_HOST_AGAIN)
                    wait_writable(h);
                else if (st != QUICOFF_HOST_OK)
                    return 1;
            }
        }
    }
    double cpu = cpu_seconds() - c0, wall = wall_seconds() - w0;

    struct quicoff_host_stats s;
    quicoff_host_get_stats(h, &s);
    printf("{\"mode\": \"%s\", \"packet_size\": %u, \"train\": %u, \"packets\": %llu, "
           "\"data_frames\": %llu, \"trains_sent\": %llu, \"frames_per_packet\": %.4f, "
           "\"host_cpu_s\": %.6f, \"host_cpu_ns_per_packet\": %.1f, \"wall_s\": %.6f}\n",
           train_mode ? "train" : "single", size, train_mode ? train : 1,
           (unsigned long long)s.packets_sent, (unsigned long long)s.data_sent,
           (unsigned long long)s.trains_sent, (double)s.data_sent / (double)s.packets_sent, cpu,
           cpu * 1e9 / (double)s.packets_sent, wall);
    free(buf);
    quicoff_host_close(h);
    return 0;
}
