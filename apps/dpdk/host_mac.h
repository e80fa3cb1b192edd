/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The destination MAC of frames to the host: --host-mac, or learned from the
 * source of the host's offload frames (written by whichever lcore classifies
 * a host frame, read by every lcore that builds one for the host).
 */
#ifndef QD_HOST_MAC_H
#define QD_HOST_MAC_H

#include <stdint.h>

#include <rte_ether.h>

/* Learns the host's MAC from the source of an offload frame from it. */
void qd_host_mac_learn(const uint8_t *frame);
/* The destination MAC of frames to the host (broadcast until one is known). */
void qd_host_mac(struct rte_ether_addr *a);

#endif
