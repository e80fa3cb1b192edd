/* SPDX-License-Identifier: Apache-2.0 */
/* Port setup: one RX and one TX queue per port, capabilities checked. */
#ifndef QD_PORTS_H
#define QD_PORTS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mempool.h>

/* What a port offers that the application uses. */
struct qd_port_caps {
    bool ipv4_cksum, udp_cksum, fast_free;
};

/* Configures and starts `port` (promiscuous: a bump in the wire sees every
 * frame); on the network port, IPv4 and UDP checksum offloads are enabled
 * when offered. Prints the device and its capabilities. Returns 0 or -1
 * after printing why. */
int qd_port_init(uint16_t port, const char *role, bool want_cksum, struct rte_mempool *pool,
                 struct qd_port_caps *caps);
void qd_port_close(uint16_t port);

#endif
