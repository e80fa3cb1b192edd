/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Steering: which worker owns a connection. One RX queue per port (as on
 * net_af_packet), so classification does in software what RSS on the DCID
 * does on a NIC that can (docs/dpdk.md "Steering"): it hashes the DCID of network
 * packets (found by classify.c with libquicoff's quicoff_peek_header;
 * zero-length CIDs: the local address + port) and the entry index of host
 * frames, so every packet of one entry is processed by one worker, as the
 * libquicoff threading contract requires.
 */
#ifndef QD_STEERING_H
#define QD_STEERING_H

#include <stdint.h>

#include "quicoff/quicoff.h"

/* Worker of a network packet (DCID, or local address when it is empty). */
unsigned qd_steer_net(const uint8_t *dcid, uint8_t dcid_len, const struct quicoff_addr *local,
                      unsigned nb_workers);
/* Worker of a TX entry, by the host's index. */
unsigned qd_steer_index(uint32_t index, unsigned nb_workers);

#endif
