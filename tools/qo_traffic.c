// SPDX-License-Identifier: Apache-2.0
/*
 * qo_traffic: the quicoff testbed's traffic generator, checker and tampering
 * wire (lab/quicoff_lab/traffic.py writes its flow files, runs it in the
 * testbed's namespaces and reads its JSON output).
 *
 *   qo_traffic send   --iface IF --flows FILE [--rate PPS] [--duration S]
 *                     [--count N] [--size BYTES] [--batch N]
 *   qo_traffic recv   --iface IF --flows FILE [--duration S] [--idle S]
 *                     [--expect N] [--rx-ethertype T] [--rx-conn-off O]
 *                     [--rx-conn-size 1|2|4] [--rx-pn-off O] [--rx-quic-off O]
 *                     [--rx-match-off O --rx-match-val V]
 *   qo_traffic bridge --a IF --b IF [--tamper-every K] [--tamper-max N]
 *                     [--tamper-dir ab|ba|both] [--stats FILE] [--duration S]
 *
 * send: host frames (one template per flow, written by the Python side from
 * the host<->offload protocol, so this tool knows no protocol) with the full
 * and the truncated packet number filled in and a payload that is a function
 * of (flow, packet number) plus a send timestamp, paced with sendmmsg(2).
 *
 * recv: host frames from the offload; every payload byte is compared with
 * what the sender derived for that (flow, packet number); latency from the
 * timestamp; duplicates by a bitmap per flow.  Per flow also the lowest and
 * highest PN received and max_gap, the longest run of PNs missing between
 * two received ones: the receiving offload decodes a truncated PN of n bytes
 * only within 2^(8n-1) of the largest it has seen (RFC 9000 §17.1, A.3).
 *
 * bridge: the wire.  Forwards frames between two interfaces and flips one
 * byte of every K-th UDP datagram (then repairs the UDP checksum, so only the
 * AEAD tag can notice), counting what it tampered.
 *
 * Output: one JSON object on stdout at the end (bridge: also --stats FILE,
 * rewritten every 100 ms).  SIGINT/SIGTERM end any mode cleanly.
 *
 * Payload layout (the QUIC payload, plaintext; see traffic.py):
 *   0 magic "QOTP" | 4 flow u32 | 8 pn u64 | 16 send time ns u64 (CLOCK_MONOTONIC)
 *   | 24 length u32 | 28.. fill: pattern[(mix(flow, pn) + i) % PATTERN_LEN]
 * All integers big-endian.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x514f5450u /* "QOTP" */
#define PAYLOAD_HDR 28
#define PATTERN_LEN 8192
#define MAX_FLOWS 1024
#define MAX_FRAME 9216
#define MAX_BATCH 256
/* latency histogram: log-linear, 32 sub-buckets per power of two of ns
 * (relative error < 3%), up to 2^40 ns */
#define LAT_SUB 32
#define LAT_BUCKETS (LAT_SUB * 41)

static volatile sig_atomic_t g_stop;
static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

static uint8_t pattern[2 * PATTERN_LEN];

static uint64_t splitmix64(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static void pattern_init(void)
{
    uint64_t s = UINT64_C(0x717569636f666621); /* "quicoff!" */
    for (int i = 0; i < PATTERN_LEN; i++) {
        s = splitmix64(s);
        pattern[i] = (uint8_t)(s >> 56);
    }
    memcpy(pattern + PATTERN_LEN, pattern, PATTERN_LEN);
}

static unsigned fill_offset(uint32_t flow, uint64_t pn)
{
    return (unsigned)(splitmix64(((uint64_t)flow << 48) ^ pn) % PATTERN_LEN);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put_be(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v = (v << 8) | p[i];
    return v;
}

static void die(const char *what)
{
    fprintf(stderr, "qo_traffic: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* ------------------------------------------------------------------------ */
/* flows */

struct flow {
    uint32_t id;
    uint32_t rx_conn;  /* connection index in frames to the host */
    uint8_t tmpl[512]; /* host frame up to the payload */
    unsigned tmpl_len;
    int full_pn_off, full_pn_size;
    int trunc_pn_off, trunc_pn_len;
    int quic_off;                    /* first byte of the QUIC header */
    int len_off, len_size, len_base; /* optional length field: payload_len + base */
    uint64_t pn_start;
    int64_t ku_pn; /* from this pn on, flip the key phase bit (-1 none) */
    unsigned dcid_len;
    unsigned weight;
    /* sender */
    uint64_t pn_next, sent;
    /* receiver */
    uint64_t received, dups, bytes, mism;
    uint64_t *bitmap; /* bit (pn - pn_start) */
    size_t bitmap_words;
    uint64_t pn_lo, pn_hi; /* lowest, highest PN received (valid if received) */
};

static struct flow flows[MAX_FLOWS];
static unsigned nflows;

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* One line per flow:
 * F id rx_conn template_hex full_pn_off full_pn_size trunc_pn_off trunc_pn_len
 *   quic_off dcid_len len_off len_size len_base pn_start ku_pn weight */
static void load_flows(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die(path);
    char line[4096], hex[1100];
    while (fgets(line, sizeof line, f)) {
        if (line[0] != 'F')
            continue;
        if (nflows == MAX_FLOWS) {
            fprintf(stderr, "qo_traffic: too many flows\n");
            exit(2);
        }
        struct flow *fl = &flows[nflows];
        memset(fl, 0, sizeof *fl);
        long long ku;
        unsigned long long pn_start;
        int n = sscanf(line, "F %u %u %1099s %d %d %d %d %d %u %d %d %d %llu %lld %u", &fl->id,
                       &fl->rx_conn, hex, &fl->full_pn_off, &fl->full_pn_size, &fl->trunc_pn_off,
                       &fl->trunc_pn_len, &fl->quic_off, &fl->dcid_len, &fl->len_off,
                       &fl->len_size, &fl->len_base, &pn_start, &ku, &fl->weight);
        if (n != 15) {
            fprintf(stderr, "qo_traffic: bad flow line: %s", line);
            exit(2);
        }
        size_t hl = strlen(hex);
        if (hl % 2 || hl / 2 > sizeof fl->tmpl) {
            fprintf(stderr, "qo_traffic: bad template\n");
            exit(2);
        }
        for (size_t i = 0; i < hl / 2; i++)
            fl->tmpl[i] = (uint8_t)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
        fl->tmpl_len = (unsigned)(hl / 2);
        fl->pn_start = pn_start;
        fl->pn_next = pn_start;
        fl->ku_pn = ku;
        if (!fl->weight)
            fl->weight = 1;
        nflows++;
    }
    fclose(f);
    if (!nflows) {
        fprintf(stderr, "qo_traffic: no flows in %s\n", path);
        exit(2);
    }
}

static void make_payload(uint8_t *p, unsigned len, uint32_t flow, uint64_t pn, uint64_t ts)
{
    put_be(p, MAGIC, 4);
    put_be(p + 4, flow, 4);
    put_be(p + 8, pn, 8);
    put_be(p + 16, ts, 8);
    put_be(p + 24, len, 4);
    memcpy(p + PAYLOAD_HDR, pattern + fill_offset(flow, pn), len - PAYLOAD_HDR);
}

/* ------------------------------------------------------------------------ */
/* sockets */

static int packet_socket(const char *ifname, uint16_t proto, int *ifindex)
{
    int fd = socket(AF_PACKET, SOCK_RAW, htons(proto));
    if (fd < 0)
        die("socket(AF_PACKET)");
    unsigned idx = if_nametoindex(ifname);
    if (!idx) {
        fprintf(stderr, "qo_traffic: no interface %s\n", ifname);
        exit(2);
    }
    struct sockaddr_ll sll = {.sll_family = AF_PACKET,
                              .sll_protocol = htons(proto),
                              .sll_ifindex = (int)idx};
    if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0)
        die("bind");
    int big = 64 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big) < 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof big) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
#ifdef PACKET_IGNORE_OUTGOING
    int one = 1;
    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
#endif
    if (ifindex)
        *ifindex = (int)idx;
    return fd;
}

/* ------------------------------------------------------------------------ */
/* send */

static int cmd_send(const char *ifname, double rate, double duration, uint64_t count,
                    unsigned size, unsigned batch)
{
    if (size < PAYLOAD_HDR)
        size = PAYLOAD_HDR;
    if (batch < 1)
        batch = 1;
    if (batch > MAX_BATCH)
        batch = MAX_BATCH;
    int ifindex;
    int fd = packet_socket(ifname, 0 /* send only */, &ifindex);
    static uint8_t bufs[MAX_BATCH][MAX_FRAME];
    struct mmsghdr msgs[MAX_BATCH];
    struct iovec iov[MAX_BATCH];
    struct sockaddr_ll dst = {.sll_family = AF_PACKET, .sll_ifindex = ifindex, .sll_halen = 6};

    /* weighted round robin schedule */
    unsigned sched[4096], nsched = 0;
    for (unsigned i = 0; i < nflows && nsched < 4096; i++)
        for (unsigned w = 0; w < flows[i].weight && nsched < 4096; w++)
            sched[nsched++] = i;
    for (unsigned i = 0; i < nflows; i++)
        if (flows[i].tmpl_len + size > MAX_FRAME) {
            fprintf(stderr, "qo_traffic: frame too large\n");
            return 2;
        }

    uint64_t t0 = now_ns(), deadline = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
    double ns_per_pkt = rate > 0 ? 1e9 / rate : 0;
    uint64_t total = 0, errors = 0, si = 0, last_ns = t0;
    while (!g_stop) {
        uint64_t now = now_ns();
        if (now >= deadline || (count && total >= count))
            break;
        unsigned n = batch;
        if (count && total + n > count)
            n = (unsigned)(count - total);
        if (ns_per_pkt > 0) {
            /* pace: packet k leaves at t0 + k * ns_per_pkt */
            uint64_t due = t0 + (uint64_t)(total * ns_per_pkt);
            if (due > now) {
                uint64_t wait = due - now;
                if (wait > 50000) { /* sleep, leaving a little to spin */
                    struct timespec ts = {.tv_sec = (time_t)((wait - 20000) / 1000000000u),
                                          .tv_nsec = (long)((wait - 20000) % 1000000000u)};
                    nanosleep(&ts, NULL);
                }
                continue;
            }
            /* behind schedule: send as many as are due, up to the batch */
            uint64_t due_count = (uint64_t)((now - t0) / ns_per_pkt) + 1;
            if (due_count > total && due_count - total < n)
                n = (unsigned)(due_count - total);
        }
        uint64_t ts = now_ns();
        for (unsigned k = 0; k < n; k++) {
            struct flow *fl = &flows[sched[si++ % nsched]];
            uint8_t *b = bufs[k];
            uint64_t pn = fl->pn_next++;
            memcpy(b, fl->tmpl, fl->tmpl_len);
            if (fl->full_pn_off >= 0)
                put_be(b + fl->full_pn_off, pn, (unsigned)fl->full_pn_size);
            put_be(b + fl->trunc_pn_off, pn, (unsigned)fl->trunc_pn_len);
            if (fl->ku_pn >= 0 && pn >= (uint64_t)fl->ku_pn)
                b[fl->quic_off] ^= 0x04;
            if (fl->len_off >= 0)
                put_be(b + fl->len_off, size + (unsigned)fl->len_base, (unsigned)fl->len_size);
            make_payload(b + fl->tmpl_len, size, fl->id, pn, ts);
            iov[k].iov_base = b;
            iov[k].iov_len = fl->tmpl_len + size;
            memcpy(dst.sll_addr, b, 6);
            msgs[k].msg_hdr = (struct msghdr){.msg_name = &dst,
                                              .msg_namelen = sizeof dst,
                                              .msg_iov = &iov[k],
                                              .msg_iovlen = 1};
            fl->sent++;
        }
        unsigned done = 0;
        while (done < n && !g_stop) {
            int r = sendmmsg(fd, msgs + done, n - done, 0);
            if (r < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == ENOBUFS || errno == EAGAIN) {
                    errors++;
                    usleep(50);
                    continue;
                }
                die("sendmmsg");
            }
            done += (unsigned)r;
        }
        total += n;
        last_ns = now_ns();
    }
    printf("{\"mode\": \"send\", \"sent\": %" PRIu64 ", \"size\": %u, \"rate\": %.1f, "
           "\"start_ns\": %" PRIu64 ", \"end_ns\": %" PRIu64 ", \"retries\": %" PRIu64
           ", \"flows\": {",
           total, size, rate, t0, last_ns, errors);
    for (unsigned i = 0; i < nflows; i++)
        printf("%s\"%u\": {\"sent\": %" PRIu64 ", \"pn_first\": %" PRIu64 ", \"pn_next\": %" PRIu64
               "}",
               i ? ", " : "", flows[i].id, flows[i].sent, flows[i].pn_start, flows[i].pn_next);
    printf("}}\n");
    close(fd);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* recv */

struct rxfmt {
    unsigned ethertype;
    int conn_off, conn_size, pn_off, quic_off;
    int match_off, match_val; /* frame[match_off] must be match_val (-1: no check) */
};

static uint32_t lat_hist[LAT_BUCKETS + 1];

static unsigned lat_bucket(uint64_t v)
{
    if (v < LAT_SUB)
        return (unsigned)v;
    unsigned b = 63u - (unsigned)__builtin_clzll(v); /* v in [2^b, 2^(b+1)) */
    unsigned sub = (unsigned)((v >> (b - 5)) & (LAT_SUB - 1));
    unsigned idx = (b - 4) * LAT_SUB + sub;
    return idx < LAT_BUCKETS ? idx : LAT_BUCKETS;
}

static uint64_t lat_value(unsigned idx) /* the middle of a bucket */
{
    if (idx < LAT_SUB)
        return idx;
    unsigned b = idx / LAT_SUB + 4, sub = idx % LAT_SUB;
    uint64_t lo = ((uint64_t)(LAT_SUB + sub)) << (b - 5);
    return lo + (UINT64_C(1) << (b - 5)) / 2;
}

static struct flow *flow_by_conn(uint32_t conn)
{
    static int cache[65536];
    static bool init;
    if (!init) {
        for (unsigned i = 0; i < 65536; i++)
            cache[i] = -1;
        for (unsigned i = 0; i < nflows; i++)
            if (flows[i].rx_conn < 65536)
                cache[flows[i].rx_conn] = (int)i;
        init = true;
    }
    if (conn < 65536)
        return cache[conn] >= 0 ? &flows[cache[conn]] : NULL;
    for (unsigned i = 0; i < nflows; i++)
        if (flows[i].rx_conn == conn)
            return &flows[i];
    return NULL;
}

static bool bitmap_test_set(struct flow *fl, uint64_t pn)
{
    if (pn < fl->pn_start)
        return false;
    uint64_t bit = pn - fl->pn_start;
    size_t w = (size_t)(bit / 64);
    if (w >= fl->bitmap_words) {
        size_t nw = fl->bitmap_words ? fl->bitmap_words : 1024;
        while (nw <= w)
            nw *= 2;
        if (nw > ((size_t)1 << 26))
            return false; /* absurd PN: counted as a mismatch by the caller */
        uint64_t *b = realloc(fl->bitmap, nw * 8);
        if (!b)
            die("realloc");
        memset(b + fl->bitmap_words, 0, (nw - fl->bitmap_words) * 8);
        fl->bitmap = b;
        fl->bitmap_words = nw;
    }
    bool was = fl->bitmap[w] >> (bit % 64) & 1;
    fl->bitmap[w] |= UINT64_C(1) << (bit % 64);
    return was;
}

/* The longest run of PNs missing between pn_lo and pn_hi (bitmap scan). */
static uint64_t max_gap(const struct flow *fl)
{
    if (!fl->received || !fl->bitmap_words || fl->pn_lo < fl->pn_start)
        return 0;
    uint64_t best = 0, run = 0, hi = fl->pn_hi - fl->pn_start;
    if (hi >= (uint64_t)fl->bitmap_words * 64)
        hi = (uint64_t)fl->bitmap_words * 64 - 1; /* an absurd PN was not recorded */
    for (uint64_t bit = fl->pn_lo - fl->pn_start; bit <= hi; bit++) {
        uint64_t w = fl->bitmap[bit / 64];
        if (bit % 64 == 0 && w == 0 && bit + 64 <= hi) {
            run += 64; /* a whole empty word */
            bit += 63;
            continue;
        }
        if (w >> (bit % 64) & 1) {
            if (run > best)
                best = run;
            run = 0;
        } else {
            run++;
        }
    }
    return best;
}

static uint64_t lat_percentile(uint64_t n, double q)
{
    if (!n)
        return 0;
    uint64_t want = (uint64_t)(q * (double)(n - 1)) + 1, acc = 0;
    for (unsigned i = 0; i <= LAT_BUCKETS; i++) {
        acc += lat_hist[i];
        if (acc >= want)
            return lat_value(i);
    }
    return 0;
}

static int cmd_recv(const char *ifname, const struct rxfmt *fmt, double duration, double idle,
                    uint64_t expect, unsigned batch)
{
    if (batch < 1)
        batch = 1;
    if (batch > MAX_BATCH)
        batch = MAX_BATCH;
    int fd = packet_socket(ifname, (uint16_t)fmt->ethertype, NULL);
    static uint8_t bufs[MAX_BATCH][MAX_FRAME];
    struct mmsghdr msgs[MAX_BATCH];
    struct iovec iov[MAX_BATCH];
    for (unsigned k = 0; k < batch; k++) {
        iov[k].iov_base = bufs[k];
        iov[k].iov_len = MAX_FRAME;
    }
    uint64_t t0 = now_ns();
    uint64_t deadline = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
    uint64_t idle_ns = idle > 0 ? (uint64_t)(idle * 1e9) : 0;
    uint64_t frames = 0, unknown = 0, other = 0, checked = 0, mism = 0, unique = 0, dups = 0;
    uint64_t bad_magic = 0, bad_meta = 0, bad_fill = 0, bad_len = 0, bytes = 0;
    uint64_t first_ns = 0, last_ns = 0, lat_n = 0, lat_max = 0;
    double lat_sum = 0, jitter = 0;
    int64_t prev_lat = -1;
    char first_mism[256] = "";
    uint64_t last_rx = t0;

    while (!g_stop) {
        uint64_t now = now_ns();
        if (now >= deadline)
            break;
        if (expect && unique + dups >= expect)
            break;
        if (idle_ns && now - last_rx > idle_ns)
            break;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int pr = poll(&pfd, 1, 20);
        if (pr <= 0)
            continue;
        for (unsigned k = 0; k < batch; k++)
            msgs[k].msg_hdr = (struct msghdr){.msg_iov = &iov[k], .msg_iovlen = 1};
        int r = recvmmsg(fd, msgs, batch, MSG_DONTWAIT, NULL);
        if (r <= 0)
            continue;
        uint64_t t = now_ns();
        last_rx = t;
        if (!first_ns)
            first_ns = t;
        last_ns = t;
        for (int k = 0; k < r; k++) {
            const uint8_t *b = bufs[k];
            unsigned len = msgs[k].msg_len;
            frames++;
            if (len < 14 || get_be(b + 12, 2) != fmt->ethertype ||
                (fmt->match_off >= 0 &&
                 ((int)len <= fmt->match_off || b[fmt->match_off] != fmt->match_val))) {
                other++;
                continue;
            }
            if ((int)len < fmt->quic_off + 1) {
                bad_len++;
                mism++;
                continue;
            }
            uint32_t conn = (uint32_t)get_be(b + fmt->conn_off, (unsigned)fmt->conn_size);
            uint64_t mpn = get_be(b + fmt->pn_off, 8);
            struct flow *fl = flow_by_conn(conn);
            if (!fl) {
                unknown++;
                continue;
            }
            unsigned pn_len = (b[fmt->quic_off] & 3u) + 1;
            unsigned poff = (unsigned)fmt->quic_off + 1 + fl->dcid_len + pn_len;
            checked++;
            bool bad = false;
            if (len < poff + PAYLOAD_HDR) {
                bad_len++;
                bad = true;
            } else {
                const uint8_t *p = b + poff;
                uint32_t plen = (uint32_t)get_be(p + 24, 4);
                if (get_be(p, 4) != MAGIC) {
                    bad_magic++;
                    bad = true;
                } else if (get_be(p + 4, 4) != fl->id || get_be(p + 8, 8) != mpn) {
                    bad_meta++;
                    bad = true;
                } else if (plen < PAYLOAD_HDR || poff + plen > len) {
                    bad_len++;
                    bad = true;
                } else if (memcmp(p + PAYLOAD_HDR, pattern + fill_offset(fl->id, mpn),
                                  plen - PAYLOAD_HDR) != 0) {
                    bad_fill++;
                    bad = true;
                } else {
                    uint64_t ts = get_be(p + 16, 8);
                    if (ts > t ||
                        (t0 > UINT64_C(3600000000000) && ts < t0 - UINT64_C(3600000000000))) {
                        bad_meta++;
                        bad = true;
                    } else {
                        uint64_t lat = t - ts;
                        lat_n++;
                        lat_sum += (double)lat;
                        if (lat > lat_max)
                            lat_max = lat;
                        lat_hist[lat_bucket(lat)]++;
                        if (prev_lat >= 0) {
                            double d = (double)((int64_t)lat - prev_lat);
                            if (d < 0)
                                d = -d;
                            jitter += (d - jitter) / 16.0; /* RFC 3550 §6.4.1 */
                        }
                        prev_lat = (int64_t)lat;
                        bytes += plen;
                        fl->bytes += plen;
                    }
                }
            }
            if (bad) {
                mism++;
                fl->mism++;
                if (!first_mism[0])
                    snprintf(first_mism, sizeof first_mism,
                             "flow %u conn %u pn %" PRIu64 " len %u", fl->id, conn, mpn, len);
                continue;
            }
            if (bitmap_test_set(fl, mpn)) {
                dups++;
                fl->dups++;
            } else {
                if (!fl->received || mpn < fl->pn_lo)
                    fl->pn_lo = mpn;
                if (!fl->received || mpn > fl->pn_hi)
                    fl->pn_hi = mpn;
                unique++;
                fl->received++;
            }
        }
    }
    printf("{\"mode\": \"recv\", \"frames\": %" PRIu64 ", \"checked\": %" PRIu64
           ", \"unique\": %" PRIu64 ", \"dups\": %" PRIu64 ", \"mismatches\": %" PRIu64
           ", \"bad_magic\": %" PRIu64 ", \"bad_meta\": %" PRIu64 ", \"bad_fill\": %" PRIu64
           ", \"bad_len\": %" PRIu64 ", \"unknown_conn\": %" PRIu64 ", \"other\": %" PRIu64
           ", \"bytes\": %" PRIu64 ", \"first_ns\": %" PRIu64 ", \"last_ns\": %" PRIu64
           ", \"first_mismatch\": \"%s\", \"latency_ns\": {\"n\": %" PRIu64
           ", \"mean\": %.0f, \"p50\": %" PRIu64 ", \"p99\": %" PRIu64 ", \"max\": %" PRIu64
           "}, \"jitter_ns\": %.0f, \"flows\": {",
           frames, checked, unique, dups, mism, bad_magic, bad_meta, bad_fill, bad_len, unknown,
           other, bytes, first_ns, last_ns, first_mism, lat_n,
           lat_n ? lat_sum / (double)lat_n : 0.0, lat_percentile(lat_n, 0.50),
           lat_percentile(lat_n, 0.99), lat_max, jitter);
    for (unsigned i = 0; i < nflows; i++)
        printf("%s\"%u\": {\"received\": %" PRIu64 ", \"dups\": %" PRIu64
               ", \"mismatches\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"pn_lowest\": %" PRId64
               ", \"pn_highest\": %" PRId64 ", \"max_gap\": %" PRIu64 "}",
               i ? ", " : "", flows[i].id, flows[i].received, flows[i].dups, flows[i].mism,
               flows[i].bytes, flows[i].received ? (int64_t)flows[i].pn_lo : -1,
               flows[i].received ? (int64_t)flows[i].pn_hi : -1, max_gap(&flows[i]));
    printf("}}\n");
    close(fd);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* bridge */

/* Offset of the UDP header in an Ethernet frame (VLAN tags skipped), or -1. */
static int udp_offset(const uint8_t *b, unsigned len, int *l3, bool *v6)
{
    unsigned off = 12;
    uint16_t et;
    for (;;) {
        if (len < off + 2)
            return -1;
        et = (uint16_t)get_be(b + off, 2);
        if (et == 0x8100 || et == 0x88a8) {
            off += 4;
            continue;
        }
        off += 2;
        break;
    }
    if (et == 0x0800) {
        if (len < off + 20 || (b[off] >> 4) != 4)
            return -1;
        unsigned ihl = (b[off] & 15u) * 4;
        if (b[off + 9] != 17 || (get_be(b + off + 6, 2) & 0x3fff))
            return -1; /* not UDP, or a fragment */
        *l3 = (int)off;
        *v6 = false;
        return len >= off + ihl + 8 ? (int)(off + ihl) : -1;
    }
    if (et == 0x86dd) {
        if (len < off + 48 || b[off + 6] != 17)
            return -1;
        *l3 = (int)off;
        *v6 = true;
        return (int)(off + 40);
    }
    return -1;
}

static uint16_t csum_fold(uint32_t s)
{
    while (s >> 16)
        s = (s & 0xffff) + (s >> 16);
    return (uint16_t)s;
}

/* Flips the last byte of the UDP payload (the AEAD tag's last byte) and
 * repairs the UDP checksum incrementally (RFC 1624).  True if tampered. */
static bool tamper(uint8_t *b, unsigned len)
{
    int l3;
    bool v6;
    int u = udp_offset(b, len, &l3, &v6);
    if (u < 0)
        return false;
    unsigned ulen = (unsigned)get_be(b + u + 4, 2);
    if (ulen < 8 + 20 || (unsigned)u + ulen > len)
        return false; /* too short to be a protected QUIC packet */
    unsigned pos = (unsigned)u + ulen - 1;
    /* the 16-bit word holding pos, aligned to the UDP header start */
    unsigned wpos = (unsigned)u + ((pos - (unsigned)u) & ~1u);
    uint16_t oldw = (uint16_t)(b[wpos] << 8 | (wpos + 1 < (unsigned)u + ulen ? b[wpos + 1] : 0));
    b[pos] ^= 0x5a;
    uint16_t neww = (uint16_t)(b[wpos] << 8 | (wpos + 1 < (unsigned)u + ulen ? b[wpos + 1] : 0));
    uint16_t ck = (uint16_t)get_be(b + u + 6, 2);
    if (ck != 0 || v6) {
        /* HC' = ~(~HC + ~m + m') */
        uint32_t s = (uint16_t)~ck;
        s += (uint16_t)~oldw;
        s += neww;
        uint16_t nck = (uint16_t)~csum_fold(s);
        if (nck == 0)
            nck = 0xffff;
        put_be(b + u + 6, nck, 2);
    }
    return true;
}

struct bstats {
    uint64_t fwd[2], tampered[2], eligible[2], errors;
};

static void write_stats(const char *path, const struct bstats *s, bool final)
{
    if (!path)
        return;
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    fprintf(f,
            "{\"mode\": \"bridge\", \"final\": %s, \"forwarded_ab\": %" PRIu64
            ", \"forwarded_ba\": %" PRIu64 ", \"eligible_ab\": %" PRIu64
            ", \"eligible_ba\": %" PRIu64 ", \"tampered_ab\": %" PRIu64
            ", \"tampered_ba\": %" PRIu64 ", \"tampered\": %" PRIu64 ", \"errors\": %" PRIu64
            "}\n",
            final ? "true" : "false", s->fwd[0], s->fwd[1], s->eligible[0], s->eligible[1],
            s->tampered[0], s->tampered[1], s->tampered[0] + s->tampered[1], s->errors);
    fclose(f);
    rename(tmp, path);
}

static int cmd_bridge(const char *ifa, const char *ifb, unsigned every, uint64_t max,
                      const char *dir, const char *stats, double duration, unsigned batch)
{
    if (batch < 1)
        batch = 1;
    if (batch > MAX_BATCH)
        batch = MAX_BATCH;
    int idx[2];
    int fds[2] = {packet_socket(ifa, ETH_P_ALL, &idx[0]), packet_socket(ifb, ETH_P_ALL, &idx[1])};
    bool tdir[2] = {strcmp(dir, "ba") != 0, strcmp(dir, "ab") != 0};
    static uint8_t bufs[MAX_BATCH][MAX_FRAME];
    struct mmsghdr msgs[MAX_BATCH];
    struct iovec iov[MAX_BATCH];
    struct bstats s;
    memset(&s, 0, sizeof s);
    uint64_t t0 = now_ns(), last_write = 0;
    uint64_t deadline = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
    write_stats(stats, &s, false);
    while (!g_stop) {
        uint64_t now = now_ns();
        if (now >= deadline)
            break;
        if (now - last_write > 100000000u) {
            write_stats(stats, &s, false);
            last_write = now;
        }
        struct pollfd pfd[2] = {{.fd = fds[0], .events = POLLIN},
                                {.fd = fds[1], .events = POLLIN}};
        if (poll(pfd, 2, 50) <= 0)
            continue;
        for (int d = 0; d < 2; d++) {
            if (!(pfd[d].revents & POLLIN))
                continue;
            for (unsigned k = 0; k < batch; k++) {
                iov[k].iov_base = bufs[k];
                iov[k].iov_len = MAX_FRAME;
                msgs[k].msg_hdr = (struct msghdr){.msg_iov = &iov[k], .msg_iovlen = 1};
            }
            int r = recvmmsg(fds[d], msgs, batch, MSG_DONTWAIT, NULL);
            if (r <= 0)
                continue;
            struct sockaddr_ll dst = {.sll_family = AF_PACKET,
                                      .sll_ifindex = idx[1 - d],
                                      .sll_halen = 6};
            for (int k = 0; k < r; k++) {
                unsigned len = msgs[k].msg_len;
                iov[k].iov_len = len;
                int l3;
                bool v6;
                if (udp_offset(bufs[k], len, &l3, &v6) >= 0) {
                    s.eligible[d]++;
                    if (every && tdir[d] && (s.tampered[0] + s.tampered[1]) < max &&
                        s.eligible[d] % every == 0 && tamper(bufs[k], len))
                        s.tampered[d]++;
                }
                msgs[k].msg_hdr = (struct msghdr){.msg_name = &dst,
                                                  .msg_namelen = sizeof dst,
                                                  .msg_iov = &iov[k],
                                                  .msg_iovlen = 1};
            }
            int done = 0;
            while (done < r) {
                int w = sendmmsg(fds[1 - d], msgs + done, (unsigned)(r - done), 0);
                if (w < 0) {
                    if (errno == EINTR)
                        continue;
                    s.errors += (uint64_t)(r - done);
                    break;
                }
                done += w;
            }
            s.fwd[d] += (uint64_t)done;
        }
    }
    write_stats(stats, &s, true);
    printf("{\"mode\": \"bridge\", \"forwarded_ab\": %" PRIu64 ", \"forwarded_ba\": %" PRIu64
           ", \"tampered_ab\": %" PRIu64 ", \"tampered_ba\": %" PRIu64 ", \"tampered\": %" PRIu64
           ", \"errors\": %" PRIu64 "}\n",
           s.fwd[0], s.fwd[1], s.tampered[0], s.tampered[1], s.tampered[0] + s.tampered[1],
           s.errors);
    return 0;
}

/* ------------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(
        stderr,
        "usage: qo_traffic send --iface IF --flows FILE [--rate PPS] [--duration S] [--count N]\n"
        "                       [--size BYTES] [--batch N]\n"
        "       qo_traffic recv --iface IF --flows FILE [--duration S] [--idle S] [--expect N]\n"
        "                       [--rx-ethertype T] [--rx-conn-off O] [--rx-conn-size N]\n"
        "                       [--rx-pn-off O] [--rx-quic-off O] [--rx-match-off O]\n"
        "                       [--rx-match-val V] [--batch N]\n"
        "       qo_traffic bridge --a IF --b IF [--tamper-every K] [--tamper-max N]\n"
        "                       [--tamper-dir ab|ba|both] [--stats FILE] [--duration S]\n"
        "       qo_traffic pattern   (prints the fill pattern's first 32 bytes, hex)\n");
    exit(2);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    pattern_init();
    const char *mode = argv[1];
    const char *iface = NULL, *flows_path = NULL, *ifa = NULL, *ifb = NULL, *stats = NULL;
    const char *dir = "both";
    double rate = 0, duration = 0, idle = 0;
    uint64_t count = 0, expect = 0, tmax = UINT64_MAX;
    unsigned size = 64, batch = 32, every = 0;
    struct rxfmt fmt = {.ethertype = 0x88B6,
                        .conn_off = 14,
                        .conn_size = 2,
                        .pn_off = 16,
                        .quic_off = 24,
                        .match_off = -1,
                        .match_val = 0};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && (i++, 1))
        if (OPT("--iface"))
            iface = v;
        else if (OPT("--flows"))
            flows_path = v;
        else if (OPT("--rate"))
            rate = atof(v);
        else if (OPT("--duration"))
            duration = atof(v);
        else if (OPT("--idle"))
            idle = atof(v);
        else if (OPT("--count"))
            count = strtoull(v, NULL, 0);
        else if (OPT("--expect"))
            expect = strtoull(v, NULL, 0);
        else if (OPT("--size"))
            size = (unsigned)strtoul(v, NULL, 0);
        else if (OPT("--batch"))
            batch = (unsigned)strtoul(v, NULL, 0);
        else if (OPT("--rx-ethertype"))
            fmt.ethertype = (unsigned)strtoul(v, NULL, 0);
        else if (OPT("--rx-conn-off"))
            fmt.conn_off = atoi(v);
        else if (OPT("--rx-conn-size"))
            fmt.conn_size = atoi(v);
        else if (OPT("--rx-pn-off"))
            fmt.pn_off = atoi(v);
        else if (OPT("--rx-quic-off"))
            fmt.quic_off = atoi(v);
        else if (OPT("--rx-match-off"))
            fmt.match_off = atoi(v);
        else if (OPT("--rx-match-val"))
            fmt.match_val = (int)strtol(v, NULL, 0);
        else if (OPT("--a"))
            ifa = v;
        else if (OPT("--b"))
            ifb = v;
        else if (OPT("--tamper-every"))
            every = (unsigned)strtoul(v, NULL, 0);
        else if (OPT("--tamper-max"))
            tmax = strtoull(v, NULL, 0);
        else if (OPT("--tamper-dir"))
            dir = v;
        else if (OPT("--stats"))
            stats = v;
        else {
            fprintf(stderr, "qo_traffic: unknown option %s\n", a);
            usage();
        }
#undef OPT
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (size > MAX_FRAME - 64)
        size = MAX_FRAME - 64;

    if (strcmp(mode, "send") == 0 && iface && flows_path) {
        load_flows(flows_path);
        return cmd_send(iface, rate, duration, count, size, batch);
    }
    if (strcmp(mode, "recv") == 0 && iface && flows_path) {
        load_flows(flows_path);
        if (fmt.conn_size < 1 || fmt.conn_size > 4)
            usage();
        return cmd_recv(iface, &fmt, duration, idle, expect, batch);
    }
    if (strcmp(mode, "bridge") == 0 && ifa && ifb)
        return cmd_bridge(ifa, ifb, every, tmax, dir, stats, duration, batch);
    if (strcmp(mode, "pattern") == 0) {
        for (int i = 0; i < 32; i++)
            printf("%02x", pattern[i]);
        printf(" %u\n", fill_offset(1, 2));
        return 0;
    }
    usage();
    return 2;
}
