/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-dpdk: what every file of the application shares.
 *
 * Lcores (see docs/dpdk.md, "Lcores"), two layouts (--io-mode):
 *  - run-to-completion (rtc, the default): N worker lcores, the main lcore
 *    being worker 0. Worker w polls queue w of both ports, classifies each
 *    frame (classify.c), protects (tx_path.c) / unprotects (rx_path.c) the
 *    frames of connections it owns and sends the results on its own TX queue
 *    of each port. A frame of a connection owned by another worker (the NIC's
 *    RSS cannot hash a DCID) goes to that worker's ring: one hop, and the
 *    connection still stays on one core. No lcore shares a queue.
 *  - pipeline: the main lcore is an I/O lcore (io_lcore.c) polling one queue
 *    per port and steering to N worker lcores through rings; the workers'
 *    results come back through TX rings. For ports with a single queue.
 * In both, a control thread (signaling.c, not an lcore) applies signaling
 * frames to the connection table and answers with ACKs, so a slow key
 * installation never stalls the data path.
 */
#ifndef QD_H
#define QD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_ether.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "quicoff/quicoff.h"

#define QD_MAX_WORKERS 64
#define QD_BURST 32
#define QD_RING_SIZE 4096 /* per worker input ring and per port TX ring */
#define QD_CTRL_RING_SIZE 1024
#define QD_NB_RXD 1024
#define QD_NB_TXD 1024

/* What classification (classify.c: an rtc worker, or pipeline's I/O lcore)
 * found in a frame; carried to the owning worker in m->hash.usr.
 * l2_len/l3_len/l4_len hold the header lengths of network frames. */
enum qd_class {
    QD_CLASS_HOST_DATA_COMPAT = 1, /* 0x88B6 data_pkt from the host */
    QD_CLASS_HOST_DATA_V1 = 2,     /* 0x88B5 v1 DATA_TO_OFFLOAD / DATA_TRAIN from the host */
    QD_CLASS_NET_QUIC4 = 3,        /* UDP over IPv4 from the network */
    QD_CLASS_NET_QUIC6 = 4,        /* UDP over IPv6 from the network */
};

enum qd_crypto_mode { QD_CRYPTO_INLINE = 0, QD_CRYPTO_LOOKASIDE = 1 };
enum qd_io_mode { QD_IO_RTC = 0, QD_IO_PIPELINE = 1 };
enum qd_unknown_action { QD_UNKNOWN_PASS = 0, QD_UNKNOWN_DROP = 1 };

/* Encapsulation of a TX entry on the network side (addresses in network
 * order as they go on the wire; ports in host order). */
struct qd_encap {
    struct rte_ether_addr dst_mac, src_mac; /* src 00:..:00 = the net port's MAC */
    bool has_vlan;
    uint16_t vlan_tci;
    uint8_t family; /* 4 or 6; 0 = none */
    uint8_t ttl, tos;
    uint16_t src_port, dst_port;
    uint8_t src_ip[16], dst_ip[16];
};

struct qd_options;   /* options.h */
struct qd_conns;     /* conns.h */
struct qd_lookaside; /* lookaside.h */

/* The application context: filled by main.c before the lcores start, then
 * read-only except where a comment says otherwise. */
struct qd_app {
    const struct qd_options *opt;
    struct quicoff_table *table;
    struct qd_conns *conns;
    struct qd_lookaside *la; /* NULL in inline mode */
    struct rte_mempool *pool;
    /* the host port's RX mbufs: pool, or with --host-mtu a pool of jumbo
     * single-segment mbufs (a DATA_TRAIN of up to ~64 KB in one mbuf) */
    struct rte_mempool *host_rx_pool;
    uint16_t host_port, net_port;
    struct rte_ether_addr host_port_mac, net_port_mac;
    bool net_tx_ip_cksum, net_tx_udp_cksum; /* offered by the network port, used */
    uint16_t net_mtu;                       /* largest IP packet sent on the network port */
    unsigned nb_workers;
    unsigned worker_lcore[QD_MAX_WORKERS]; /* rtc: worker 0 is the main lcore */
    /* two of our lcores are pinned to a common CPU: busy-polling yields */
    bool lcores_share_cpu;
    /* pipeline: I/O lcore -> worker (SP/SC); rtc: other workers -> worker (MP/SC) */
    struct rte_ring *worker_ring[QD_MAX_WORKERS];
    /* frames for a port from the control thread (and, pipeline, the workers), sent by the
     * I/O lcore (pipeline) or worker 0 (rtc) (MP/SC) */
    struct rte_ring *host_tx_ring, *net_tx_ring;
    struct rte_ring *ctrl_ring; /* port pollers -> control thread */
    struct rte_rcu_qsbr *rcu;   /* workers are its readers */
    /* Written by whichever lcore classifies host frames (the rtc workers, or
     * pipeline's I/O lcore), read by every lcore that builds a frame for the
     * host: the host's MAC, 6 bytes in a u64 (host_mac.c). */
    _Atomic uint64_t host_mac;
    /* Set by the control thread on the host's first v1 signaling frame: with
     * --compat, connection-less EVENTs (unknown_connection) wait for it, so a
     * compat host gets compat frames only (docs/dpdk.md "Compat mode"). */
    _Atomic bool host_speaks_v1;
    volatile bool quit; /* set by the signal handler */
    volatile bool
        workers_quit; /* set by main once its own loop (worker 0 or the I/O lcore) has returned */
};

extern struct qd_app qda;

#endif
