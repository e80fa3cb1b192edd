/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ethernet / 802.1Q / IPv4 / IPv6 / UDP: parse what arrives on the network
 * port (bounds-checked), build what leaves on it, checksums by the port when
 * it offers them, else in software.
 */
#ifndef QD_ENCAP_H
#define QD_ENCAP_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "qd.h"
#include "quicoff/quicoff.h"

#define QD_MAX_VLANS 2 /* 802.1ad outer + 802.1Q inner */

/* Ethernet header + up to two VLAN tags: returns the header length and the
 * EtherType behind the tags (host order), or 0 when the frame is too short. */
uint16_t qd_eth_parse(const uint8_t *p, uint32_t len, uint16_t *ethertype);

/* A UDP datagram found in a network frame. */
struct qd_udp_info {
    uint16_t l2_len, l3_len;
    uint8_t family;            /* 4 or 6 */
    uint32_t payload_off;      /* the UDP payload (the QUIC datagram), from the frame start */
    uint32_t payload_len;
    struct quicoff_addr local; /* destination address + port: the lookup key of zero-length CIDs */
};

/* Parses a network frame. Returns 0 for a UDP datagram that may carry QUIC,
 * -1 for anything else: not IP, not UDP, IPv4 options or fragments, IPv6
 * extension headers, lengths that do not fit the frame (all passed to the
 * host as they are, or dropped by --unknown drop). */
int qd_udp_parse(const uint8_t *p, uint32_t len, struct qd_udp_info *u);

/* The local address of a datagram whose headers were parsed by the I/O lcore
 * (m->l2_len, m->l3_len, class QD_CLASS_NET_QUIC4/6). */
void qd_udp_local_addr(const struct rte_mbuf *m, struct quicoff_addr *a);
/* The source address + port of such a datagram. */
void qd_udp_remote_addr(const struct rte_mbuf *m, struct quicoff_addr *a);

/* Prepends Ethernet [+ 802.1Q] + IPv4|IPv6 + UDP to m (whose data is the
 * protected QUIC datagram) from the entry's encapsulation; IPv4 header and
 * UDP checksums by the port (tx offload flags) when qda.net_tx_*_cksum, else
 * computed here. Returns 0, or -1 without headroom (m unchanged). */
int qd_encap_push(struct rte_mbuf *m, const struct qd_encap *e);

/* Bytes qd_encap_push prepends for e. */
static inline uint16_t qd_encap_len(const struct qd_encap *e)
{
    return (uint16_t)(14 + (e->has_vlan ? 4 : 0) + (e->family == 6 ? 40 : 20) + 8);
}

#endif
