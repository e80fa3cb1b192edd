/* SPDX-License-Identifier: Apache-2.0 */
/* Port setup: one RX and one TX queue per polling lcore, capabilities checked. */
#ifndef QD_PORTS_H
#define QD_PORTS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mempool.h>

/* What a port offers that the application uses. */
struct qd_port_caps {
    bool ipv4_cksum, udp_cksum, fast_free;
    bool rss;     /* RX spread over the queues by the port's RSS (IP/UDP) */
    uint16_t mtu; /* the port's MTU once started (rte_eth_dev_get_mtu) */
};

/* Configures and starts `port` with nb_queues RX and TX queues (promiscuous:
 * a bump in the wire sees every frame); with several queues, RSS on IP/UDP
 * when the port offers it (the workers re-steer what lands on the wrong
 * queue). On the network port, IPv4 and UDP checksum offloads are enabled
 * when offered. mtu: raise the port's MTU to it when lower (0: keep). Prints the
 * device and its capabilities. Returns 0 or -1 after printing why. */
int qd_port_init(uint16_t port, const char *role, uint16_t nb_queues, bool want_cksum,
                 uint16_t mtu, struct rte_mempool *pool, struct qd_port_caps *caps);
void qd_port_close(uint16_t port);

#endif
