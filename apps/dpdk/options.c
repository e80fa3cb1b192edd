/* SPDX-License-Identifier: Apache-2.0 */
/* Options: defaults, parsing, print back (as ipsec-secgw's parse_args). */
#include "options.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qd_options_default(struct qd_options *o)
{
    memset(o, 0, sizeof(*o));
    o->host_port = 0;
    o->net_port = 1;
    o->workers = 1;
    o->crypto = QD_CRYPTO_INLINE;
    snprintf(o->cryptodev, sizeof(o->cryptodev), "crypto_aesni_gcm");
    o->local_cid_len = 8;
    o->capacity = 65536;
    o->unknown = QD_UNKNOWN_PASS;
    o->stats_interval = 10;
    o->compat = false;
    o->events = true;
    snprintf(o->backend, sizeof(o->backend), "auto");
    o->nb_mbufs = 16384;
    o->encap.ttl = 64;
    o->tx_drain_us = 50;
}

void qd_options_usage(const char *prog)
{
    fprintf(
        stderr,
        "usage: %s [EAL options] -- [options]\n"
        "  --host-port P          host-facing port (frames to/from the QUIC stack), default 0\n"
        "  --net-port Q           network-facing port (UDP/QUIC), default 1\n"
        "  --workers N            worker lcores (1..%d), default 1\n"
        "  --io-mode rtc|pipeline rtc (default): each worker polls its own queue of both\n"
        "                         ports, runs each frame to completion and sends on its own\n"
        "                         TX queue; N lcores, N queues per port (af_packet: qpairs=N).\n"
        "                         pipeline: one I/O lcore polls one queue per port and feeds\n"
        "                         the workers through rings; N+1 lcores\n"
        "  --crypto inline|lookaside   AEAD in libquicoff on the workers, or on a cryptodev\n"
        "  --cryptodev NAME       cryptodev for lookaside (e.g. crypto_aesni_gcm, crypto_openssl,\n"
        "                         crypto_aesni_mb, a QAT device); created as a vdev if absent\n"
        "  --local-cid-len L      length of the CIDs this host issued (short headers), default 8\n"
        "  --capacity C           connection entries; host indexes must be < C; default 65536\n"
        "  --unknown pass|drop    non-QUIC or unknown-connection traffic to the host, default pass\n"
        "  --stats-interval S     print counters every S seconds (0: only at exit), default 10\n"
        "  --compat               also accept the compat protocol's signaling and data frames\n"
        "  --no-events            send no EVENT frames to the host\n"
        "  --backend NAME         libquicoff backend: auto|openssl|ipsec-mb, default auto\n"
        "  --mbufs N              mbuf pool size, default 16384\n"
        "  --idle-us U            sleep U microseconds after 256 empty polls (0: busy-poll,\n"
        "                         the default); for shared CPUs such as a namespace testbed\n"
        "  --tx-drain-us U        rtc: send buffered frames after at most U us (default 50);\n"
        "                         frames wait only while more keep arriving\n"
        "  --net-mtu M            largest IP packet to send on the network port (68..65535);\n"
        "                         bigger protected packets are dropped (tx_too_big) and the\n"
        "                         host told (EVENT too_big); default: the port's MTU\n"
        "  --host-mtu M           the host link's MTU (1500..65535): jumbo frames from the host,\n"
        "                         e.g. DATA_TRAIN of up to ~64 KB; the host port's RX mbufs\n"
        "                         get a data room of M + 128 (at most 65407 bytes of frame)\n"
        "  --host-mac MAC         destination MAC of frames to the host (default: learned)\n"
        "  --encap-dst-mac MAC    default encapsulation of TX entries without their own\n"
        "  --encap-src-mac MAC      (compat entries): MACs, IPv4/IPv6 addresses, UDP ports\n"
        "  --encap-src-ip IP --encap-dst-ip IP --encap-sport N --encap-dport N --encap-ttl N\n",
        prog, QD_MAX_WORKERS);
}

enum {
    OPT_HOST_PORT = 256,
    OPT_NET_PORT,
    OPT_WORKERS,
    OPT_CRYPTO,
    OPT_CRYPTODEV,
    OPT_CID_LEN,
    OPT_CAPACITY,
    OPT_UNKNOWN,
    OPT_STATS,
    OPT_COMPAT,
    OPT_NO_EVENTS,
    OPT_BACKEND,
    OPT_MBUFS,
    OPT_IDLE_US,
    OPT_HOST_MAC,
    OPT_ENC_DMAC,
    OPT_ENC_SMAC,
    OPT_ENC_SIP,
    OPT_ENC_DIP,
    OPT_ENC_SPORT,
    OPT_ENC_DPORT,
    OPT_ENC_TTL,
    OPT_IO_MODE,
    OPT_TX_DRAIN,
    OPT_NET_MTU,
    OPT_HOST_MTU,
    OPT_HELP,
};

static const struct option long_opts[] = {
    {"host-port", required_argument, NULL, OPT_HOST_PORT},
    {"net-port", required_argument, NULL, OPT_NET_PORT},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"crypto", required_argument, NULL, OPT_CRYPTO},
    {"cryptodev", required_argument, NULL, OPT_CRYPTODEV},
    {"local-cid-len", required_argument, NULL, OPT_CID_LEN},
    {"capacity", required_argument, NULL, OPT_CAPACITY},
    {"unknown", required_argument, NULL, OPT_UNKNOWN},
    {"stats-interval", required_argument, NULL, OPT_STATS},
    {"compat", no_argument, NULL, OPT_COMPAT},
    {"no-events", no_argument, NULL, OPT_NO_EVENTS},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"mbufs", required_argument, NULL, OPT_MBUFS},
    {"idle-us", required_argument, NULL, OPT_IDLE_US},
    {"host-mac", required_argument, NULL, OPT_HOST_MAC},
    {"encap-dst-mac", required_argument, NULL, OPT_ENC_DMAC},
    {"encap-src-mac", required_argument, NULL, OPT_ENC_SMAC},
    {"encap-src-ip", required_argument, NULL, OPT_ENC_SIP},
    {"encap-dst-ip", required_argument, NULL, OPT_ENC_DIP},
    {"encap-sport", required_argument, NULL, OPT_ENC_SPORT},
    {"encap-dport", required_argument, NULL, OPT_ENC_DPORT},
    {"encap-ttl", required_argument, NULL, OPT_ENC_TTL},
    {"io-mode", required_argument, NULL, OPT_IO_MODE},
    {"tx-drain-us", required_argument, NULL, OPT_TX_DRAIN},
    {"net-mtu", required_argument, NULL, OPT_NET_MTU},
    {"host-mtu", required_argument, NULL, OPT_HOST_MTU},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int parse_uint(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 0);
    if (errno || end == s || *end || v > max || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

/* "4" or "6" on success and the address bytes, 0 on error. */
static int parse_ip(const char *s, uint8_t ip[16])
{
    memset(ip, 0, 16);
    if (inet_pton(AF_INET, s, ip) == 1)
        return 4;
    if (inet_pton(AF_INET6, s, ip) == 1)
        return 6;
    return 0;
}

int qd_options_parse(struct qd_options *o, int argc, char **argv)
{
    int opt, fam_src = 0, fam_dst = 0;
    unsigned long v = 0;
    const char *prog = argv[0];
    optind = 1;
    while ((opt = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
        const char *a = optarg;
        int bad = 0;
        switch (opt) {
        case OPT_HOST_PORT:
            bad = parse_uint(a, RTE_MAX_ETHPORTS - 1, &v);
            o->host_port = (uint16_t)v;
            break;
        case OPT_NET_PORT:
            bad = parse_uint(a, RTE_MAX_ETHPORTS - 1, &v);
            o->net_port = (uint16_t)v;
            break;
        case OPT_WORKERS:
            bad = parse_uint(a, QD_MAX_WORKERS, &v) || v == 0;
            o->workers = (unsigned)v;
            break;
        case OPT_CRYPTO:
            if (!strcmp(a, "inline"))
                o->crypto = QD_CRYPTO_INLINE;
            else if (!strcmp(a, "lookaside"))
                o->crypto = QD_CRYPTO_LOOKASIDE;
            else
                bad = 1;
            break;
        case OPT_CRYPTODEV:
            bad = strlen(a) >= sizeof(o->cryptodev);
            snprintf(o->cryptodev, sizeof(o->cryptodev), "%s", a);
            break;
        case OPT_CID_LEN:
            bad = parse_uint(a, QUICOFF_MAX_CID_LEN, &v);
            o->local_cid_len = (uint8_t)v;
            break;
        case OPT_CAPACITY:
            bad = parse_uint(a, 1u << 24, &v) || v == 0;
            o->capacity = (uint32_t)v;
            break;
        case OPT_UNKNOWN:
            if (!strcmp(a, "pass"))
                o->unknown = QD_UNKNOWN_PASS;
            else if (!strcmp(a, "drop"))
                o->unknown = QD_UNKNOWN_DROP;
            else
                bad = 1;
            break;
        case OPT_STATS:
            bad = parse_uint(a, 86400, &v);
            o->stats_interval = (unsigned)v;
            break;
        case OPT_COMPAT:
            o->compat = true;
            break;
        case OPT_NO_EVENTS:
            o->events = false;
            break;
        case OPT_BACKEND:
            bad = strlen(a) >= sizeof(o->backend);
            snprintf(o->backend, sizeof(o->backend), "%s", a);
            break;
        case OPT_MBUFS:
            bad = parse_uint(a, 1u << 24, &v) || v < 1024;
            o->nb_mbufs = (uint32_t)v;
            break;
        case OPT_IDLE_US:
            bad = parse_uint(a, 100000, &v);
            o->idle_us = (unsigned)v;
            break;
        case OPT_HOST_MAC:
            bad = rte_ether_unformat_addr(a, &o->host_mac) != 0;
            o->has_host_mac = true;
            break;
        case OPT_ENC_DMAC:
            bad = rte_ether_unformat_addr(a, &o->encap.dst_mac) != 0;
            break;
        case OPT_ENC_SMAC:
            bad = rte_ether_unformat_addr(a, &o->encap.src_mac) != 0;
            break;
        case OPT_ENC_SIP:
            fam_src = parse_ip(a, o->encap.src_ip);
            bad = !fam_src;
            break;
        case OPT_ENC_DIP:
            fam_dst = parse_ip(a, o->encap.dst_ip);
            bad = !fam_dst;
            break;
        case OPT_ENC_SPORT:
            bad = parse_uint(a, 65535, &v);
            o->encap.src_port = (uint16_t)v;
            break;
        case OPT_ENC_DPORT:
            bad = parse_uint(a, 65535, &v);
            o->encap.dst_port = (uint16_t)v;
            break;
        case OPT_ENC_TTL:
            bad = parse_uint(a, 255, &v) || v == 0;
            o->encap.ttl = (uint8_t)v;
            break;
        case OPT_IO_MODE:
            if (!strcmp(a, "rtc"))
                o->io_mode = QD_IO_RTC;
            else if (!strcmp(a, "pipeline"))
                o->io_mode = QD_IO_PIPELINE;
            else
                bad = 1;
            break;
        case OPT_TX_DRAIN:
            bad = parse_uint(a, 10000, &v);
            o->tx_drain_us = (unsigned)v;
            break;
        case OPT_NET_MTU:
            /* 68: the smallest IPv4 MTU (RFC 791); QUIC itself needs 1200 of
             * UDP payload, but a smaller path is the host's to deal with */
            bad = parse_uint(a, 65535, &v) || v < 68;
            o->net_mtu = (uint16_t)v;
            break;
        case OPT_HOST_MTU:
            bad = parse_uint(a, 65535, &v) || v < 1500;
            o->host_mtu = (uint16_t)v;
            break;
        case OPT_HELP:
        default:
            qd_options_usage(prog);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "quicoff-dpdk: bad value '%s' for --%s\n", a,
                    long_opts[opt - OPT_HOST_PORT].name);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "quicoff-dpdk: unexpected argument '%s'\n", argv[optind]);
        qd_options_usage(prog);
        return -1;
    }
    if (o->host_port == o->net_port) {
        fprintf(stderr, "quicoff-dpdk: --host-port and --net-port must differ\n");
        return -1;
    }
    if (fam_src || fam_dst) {
        if (fam_src != fam_dst) {
            fprintf(stderr, "quicoff-dpdk: --encap-src-ip and --encap-dst-ip must both be "
                            "given, of the same family\n");
            return -1;
        }
        o->encap.family = (uint8_t)fam_src;
    }
    return 0;
}

static void print_ip(uint8_t family, const uint8_t *ip)
{
    char buf[INET6_ADDRSTRLEN];
    inet_ntop(family == 6 ? AF_INET6 : AF_INET, ip, buf, sizeof(buf));
    printf("%s", buf);
}

void qd_options_print(const struct qd_options *o)
{
    char mac[RTE_ETHER_ADDR_FMT_SIZE];
    printf("quicoff-dpdk options:\n");
    printf("  host-port       %u\n", o->host_port);
    printf("  net-port        %u\n", o->net_port);
    printf("  workers         %u\n", o->workers);
    printf("  io-mode         %s\n",
           o->io_mode == QD_IO_RTC ? "rtc (run to completion)" : "pipeline");
    printf("  crypto          %s\n", o->crypto == QD_CRYPTO_INLINE ? "inline" : "lookaside");
    if (o->crypto == QD_CRYPTO_LOOKASIDE)
        printf("  cryptodev       %s\n", o->cryptodev);
    printf("  local-cid-len   %u\n", o->local_cid_len);
    printf("  capacity        %u\n", o->capacity);
    printf("  unknown         %s\n", o->unknown == QD_UNKNOWN_PASS ? "pass" : "drop");
    printf("  stats-interval  %u\n", o->stats_interval);
    printf("  compat          %s\n", o->compat ? "yes" : "no");
    printf("  events          %s\n", o->events ? "yes" : "no");
    printf("  backend         %s\n", o->backend);
    printf("  mbufs           %u\n", o->nb_mbufs);
    printf("  idle-us         %u%s\n", o->idle_us, o->idle_us ? "" : " (busy-poll)");
    if (o->io_mode == QD_IO_RTC)
        printf("  tx-drain-us     %u\n", o->tx_drain_us);
    if (o->net_mtu)
        printf("  net-mtu         %u\n", o->net_mtu);
    else
        printf("  net-mtu         (the network port's MTU)\n");
    if (o->host_mtu)
        printf("  host-mtu        %u\n", o->host_mtu);
    if (o->has_host_mac) {
        rte_ether_format_addr(mac, sizeof(mac), &o->host_mac);
        printf("  host-mac        %s\n", mac);
    } else {
        printf("  host-mac        (learned from the host port)\n");
    }
    if (o->encap.family) {
        rte_ether_format_addr(mac, sizeof(mac), &o->encap.dst_mac);
        printf("  default encap   dst-mac %s src ", mac);
        print_ip(o->encap.family, o->encap.src_ip);
        printf(":%u dst ", o->encap.src_port);
        print_ip(o->encap.family, o->encap.dst_ip);
        printf(":%u ttl %u\n", o->encap.dst_port, o->encap.ttl);
    } else {
        printf("  default encap   (none: TX entries must carry their own)\n");
    }
    fflush(stdout);
}
