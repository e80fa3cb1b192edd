/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Steering: which worker owns a connection. One RX queue per port (as on
 * net_af_packet), so classification does in software what RSS on the DCID
 * does on a NIC that can (seed 002 fig. 3.1): it hashes the DCID of network
 * packets (short header: the local CID length; long header: its own length;
 * zero-length CIDs: the local address + port) and the entry index of host
 * frames, so every packet of one entry is processed by one worker, as the
 * libquicoff threading contract requires.
 */
#ifndef QD_STEERING_H
#define QD_STEERING_H

#include <stdint.h>

#include "quicoff/quicoff.h"

/* The DCID of the QUIC packet at the start of a UDP payload. Returns 0 and
 * its offset / length, or -1 when the payload cannot be a QUIC packet this
 * offload handles (empty, fixed bit clear on a short header, too short). */
int qd_quic_dcid(const uint8_t *p, uint32_t len, uint8_t short_cid_len, uint32_t *off,
                 uint8_t *dcid_len);

/* quicoff_level_t of the packet at p (long header types of QUIC v1 and v2),
 * or -1 (Retry, Version Negotiation, unknown version). */
int qd_quic_level(const uint8_t *p, uint32_t len);

/* Worker of a network packet (DCID, or local address when it is empty). */
unsigned qd_steer_net(const uint8_t *dcid, uint8_t dcid_len, const struct quicoff_addr *local,
                      unsigned nb_workers);
/* Worker of a TX entry, by the host's index. */
unsigned qd_steer_index(uint32_t index, unsigned nb_workers);

#endif
