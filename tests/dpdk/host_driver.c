/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A scripted host on libquicoff-host, for tests/dpdk/test_host_port.py: it
 * opens the host interface given as argv[1] (with the first ACK timeout in
 * milliseconds as argv[2], if given) and runs one command per stdin line,
 * answering one JSON line each on stdout.  The keys are a fixed
 * function of (direction, generation) that the Python test computes too
 * (keys_for() there), so the test can decrypt what the offload sends.
 *
 *   add tx|rx INDEX DCIDHEX [next]   ADD (TX with the test's ENCAP; RX with
 *                                    generation 1 ahead of time with "next")
 *   roll tx|rx INDEX GEN             UPDATE: install generation GEN and roll to it
 *   remove tx|rx INDEX               REMOVE
 *   query tx|rx INDEX                QUERY the entry's counters
 *   send INDEX PN HEX [PN HEX ...]   DATA_TO_OFFLOAD, one batch
 *   recv N TIMEOUT_MS                DATA_TO_HOST until N or the timeout
 *   events N TIMEOUT_MS              EVENTs until N or the timeout
 *   stats                            the handle's counters
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicoff/host.h"

#define MAX_EVENTS 64
static struct {
    uint8_t code;
    uint32_t seq, index;
    uint8_t direction;
    uint32_t key_generation;
    uint64_t pn;
    uint32_t mtu;
} events[MAX_EVENTS];
static unsigned n_events;

static void on_event(void *arg, const struct quicoff_wire_msg *ev)
{
    (void)arg;
    if (n_events == MAX_EVENTS)
        return;
    events[n_events].code = ev->u.event.code;
    events[n_events].seq = ev->request_id;
    events[n_events].index = ev->index;
    events[n_events].direction = ev->direction;
    events[n_events].key_generation = ev->u.event.key_generation;
    events[n_events].pn = ev->u.event.pn;
    events[n_events].mtu = ev->u.event.mtu;
    n_events++;
}

/* The test's keys: AES-128-GCM, a function of (direction, generation). */
static void keys_for(int dir, uint32_t gen, struct quicoff_packet_keys *k)
{
    for (int i = 0; i < 16; i++) {
        k->key[i] = (uint8_t)((dir * 0x40 + gen * 0x10 + i) ^ 0xA5);
        k->hp[i] = (uint8_t)((dir * 0x40 + i) ^ 0x3C);
    }
    for (int i = 0; i < 12; i++)
        k->iv[i] = (uint8_t)((dir * 0x40 + gen * 0x10 + i) ^ 0x5A);
}

static size_t unhex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = strlen(s) / 2;
    if (n > cap)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return 0;
        out[i] = (uint8_t)v;
    }
    return n;
}

static void print_hex(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%02x", p[i]);
}

static int dir_of(const char *s)
{
    return strcmp(s, "rx") == 0 ? QUICOFF_DIR_RX : QUICOFF_DIR_TX;
}

static void print_reply(const char *cmd, quicoff_host_status_t st,
                        const struct quicoff_host_reply *r, const struct quicoff_wire_msg *ans)
{
    printf("{\"cmd\": \"%s\", \"result\": \"%s\", \"status\": \"%s\", \"tries\": %u, "
           "\"success\": %s, \"request_id\": %u",
           cmd, quicoff_host_status_name(st), quicoff_status_name(r->status), r->tries,
           r->success ? "true" : "false", r->request_id);
    if (ans && ans->kind == QUICOFF_WIRE_STATS && ans->u.stats.has_conn)
        printf(", \"packets\": %llu, \"key_generation\": %llu",
               (unsigned long long)ans->u.stats.conn.packets,
               (unsigned long long)ans->u.stats.conn.key_generation);
    printf("}\n");
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wait_readable(struct quicoff_host *h, int64_t end)
{
    int left = (int)(end - now_ms());
    int t = quicoff_host_next_timeout_ms(h);
    if (t >= 0 && t < left)
        left = t;
    struct pollfd p = {.fd = quicoff_host_fd(h), .events = POLLIN};
    (void)poll(&p, 1, left > 0 ? left : 0);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: host_driver IFNAME [ACK_TIMEOUT_MS]\n");
        return 2;
    }
    struct quicoff_host_config cfg;
    quicoff_host_config_init(&cfg);
    cfg.on_event = on_event;
    if (argc == 3)
        cfg.ack_timeout_ms = (unsigned)strtoul(argv[2], NULL, 10);
    struct quicoff_host *h;
    quicoff_host_status_t st = quicoff_host_open(argv[1], &cfg, &h);
    if (st != QUICOFF_HOST_OK) {
        fprintf(stderr, "host_driver: cannot open %s: %s\n", argv[1],
                quicoff_host_status_name(st));
        return 2;
    }
    printf("{\"ready\": true}\n");
    fflush(stdout);
    char line[8192];
    static uint8_t pkts[32][2048];
    while (fgets(line, sizeof(line), stdin)) {
        char *save = NULL, *cmd = strtok_r(line, " \n", &save);
        if (!cmd)
            continue;
        struct quicoff_wire_msg m, ans;
        struct quicoff_host_reply r;
        memset(&r, 0, sizeof(r));
        if (strcmp(cmd, "add") == 0 || strcmp(cmd, "roll") == 0 || strcmp(cmd, "remove") == 0 ||
            strcmp(cmd, "query") == 0) {
            int dir = dir_of(strtok_r(NULL, " \n", &save));
            uint32_t index = (uint32_t)strtoul(strtok_r(NULL, " \n", &save), NULL, 0);
            const char *arg = strtok_r(NULL, " \n", &save);
            if (cmd[0] == 'a') {
                quicoff_wire_msg_init(&m, QUICOFF_WIRE_ADD);
                struct quicoff_conn_config *c = &m.u.add.cfg;
                c->direction = dir;
                c->suite = QUICOFF_AES_128_GCM;
                keys_for(dir, 0, &c->keys);
                c->dcid_len = (uint8_t)unhex(arg ? arg : "", c->dcid, sizeof(c->dcid));
                const char *next = strtok_r(NULL, " \n", &save);
                if (next && strcmp(next, "next") == 0) {
                    c->has_next_keys = true;
                    keys_for(dir, 1, &c->next_keys);
                }
                if (dir == QUICOFF_DIR_TX) {
                    struct quicoff_wire_encap *e = &m.u.add.encap;
                    m.u.add.has_encap = true;
                    memcpy(e->dst_mac, "\x02\x00\x00\x00\xbe\xef", 6);
                    memcpy(e->src_mac, "\x02\x00\x00\x00\xa0\x01", 6);
                    e->family = 4;
                    e->src_port = 4433;
                    e->dst_port = 443;
                    memcpy(e->src_ip, "\xc0\x00\x02\x01", 4); /* 192.0.2.1 */
                    memcpy(e->dst_ip, "\xc6\x33\x64\x07", 4); /* 198.51.100.7 */
                }
            } else if (cmd[0] == 'r' && cmd[1] == 'o') {
                uint32_t gen = (uint32_t)strtoul(arg ? arg : "1", NULL, 0);
                quicoff_wire_msg_init(&m, QUICOFF_WIRE_UPDATE);
                struct quicoff_packet_keys k;
                keys_for(dir, gen, &k);
                m.u.update.upd.what = QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_ROLL;
                m.u.update.upd.key_generation = gen;
                memcpy(m.u.update.upd.keys.key, k.key, 16);
                memcpy(m.u.update.upd.keys.iv, k.iv, 12);
                m.u.update.key_len = 16;
                m.u.update.roll_generation = gen;
                m.flags = QUICOFF_WIRE_UPDATE_ROLL;
                memset(&k, 0, sizeof(k));
            } else if (cmd[0] == 'r') {
                quicoff_wire_msg_init(&m, QUICOFF_WIRE_REMOVE);
            } else {
                quicoff_wire_msg_init(&m, QUICOFF_WIRE_QUERY);
                m.flags = QUICOFF_WIRE_QUERY_CONN;
            }
            m.direction = (uint8_t)dir;
            m.index = index;
            memset(&ans, 0, sizeof(ans));
            st = quicoff_host_request(h, &m, &r, &ans);
            print_reply(cmd, st, &r, &ans);
        } else if (strcmp(cmd, "send") == 0) {
            struct quicoff_host_pkt p[32];
            unsigned n = 0;
            uint32_t index = (uint32_t)strtoul(strtok_r(NULL, " \n", &save), NULL, 0);
            char *pn, *hex;
            while (n < 32 && (pn = strtok_r(NULL, " \n", &save)) &&
                   (hex = strtok_r(NULL, " \n", &save))) {
                p[n] = (struct quicoff_host_pkt){.index = index,
                                                 .pn = strtoull(pn, NULL, 0),
                                                 .data = pkts[n],
                                                 .len = (uint32_t)unhex(hex, pkts[n], 2048)};
                n++;
            }
            unsigned sent = 0;
            st = quicoff_host_send_data(h, p, n, &sent);
            printf("{\"cmd\": \"send\", \"result\": \"%s\", \"sent\": %u}\n",
                   quicoff_host_status_name(st), sent);
        } else if (strcmp(cmd, "recv") == 0) {
            unsigned want = (unsigned)strtoul(strtok_r(NULL, " \n", &save), NULL, 0);
            int64_t end = now_ms() + strtol(strtok_r(NULL, " \n", &save), NULL, 0);
            printf("{\"cmd\": \"recv\", \"data\": [");
            unsigned got = 0;
            while (got < want) {
                struct quicoff_wire_data d[32];
                unsigned k = quicoff_host_recv_data(h, d, want - got > 32 ? 32 : want - got, NULL);
                for (unsigned i = 0; i < k; i++, got++) {
                    printf(
                        "%s{\"index\": %u, \"pn\": %llu, \"status\": \"%s\", \"key_phase\": %u, "
                        "\"flags\": %u, \"hex\": \"",
                        got ? ", " : "", d[i].index, (unsigned long long)d[i].pn,
                        quicoff_status_name(d[i].status), d[i].key_phase, d[i].flags);
                    print_hex(d[i].payload, d[i].payload_len);
                    printf("\"}");
                }
                if (got >= want || now_ms() >= end)
                    break;
                if (k == 0)
                    wait_readable(h, end);
            }
            printf("]}\n");
        } else if (strcmp(cmd, "events") == 0) {
            unsigned want = (unsigned)strtoul(strtok_r(NULL, " \n", &save), NULL, 0);
            int64_t end = now_ms() + strtol(strtok_r(NULL, " \n", &save), NULL, 0);
            while (n_events < want && now_ms() < end) {
                quicoff_host_process(h);
                if (n_events < want)
                    wait_readable(h, end);
            }
            printf("{\"cmd\": \"events\", \"events\": [");
            for (unsigned i = 0; i < n_events; i++)
                printf("%s{\"code\": \"%s\", \"seq\": %u, \"index\": %u, \"direction\": %u, "
                       "\"key_generation\": %u, \"pn\": %llu, \"mtu\": %u}",
                       i ? ", " : "", quicoff_wire_event_name(events[i].code), events[i].seq,
                       events[i].index, events[i].direction, events[i].key_generation,
                       (unsigned long long)events[i].pn, events[i].mtu);
            printf("]}\n");
            n_events = 0;
        } else if (strcmp(cmd, "stats") == 0) {
            struct quicoff_host_stats s;
            quicoff_host_get_stats(h, &s);
            printf(
                "{\"cmd\": \"stats\", \"requests\": %llu, \"retries\": %llu, \"timeouts\": %llu, "
                "\"late_replies\": %llu, \"events\": %llu, \"data_sent\": %llu, "
                "\"data_received\": %llu, \"backlog_dropped\": %llu}\n",
                (unsigned long long)s.requests, (unsigned long long)s.retries,
                (unsigned long long)s.timeouts, (unsigned long long)s.late_replies,
                (unsigned long long)s.events, (unsigned long long)s.data_sent,
                (unsigned long long)s.data_received, (unsigned long long)s.backlog_dropped);
        } else {
            printf("{\"cmd\": \"%s\", \"result\": \"unknown command\"}\n", cmd);
        }
        fflush(stdout);
    }
    quicoff_host_close(h);
    return 0;
}
