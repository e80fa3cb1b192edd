/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ethernet / 802.1Q / IPv4 / IPv6 / UDP: parse what arrives on the network
 * port (bounds-checked), build what leaves on it, checksums by the port when
 * it offers them, else in software.
 */
#ifndef QD_ENCAP_H
#define QD_ENCAP_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "qd.h"
#include "quicoff/quicoff.h"

#define QD_MAX_VLANS 2 /* 802.1ad outer + 802.1Q inner */

/* What qd_eth_parse found. */
enum qd_eth_result {
    QD_ETH_OK = 0, /* *l2_len and *ethertype are set */
    QD_ETH_SHORT,  /* the frame ends inside its Ethernet header or tags */
    /* The tag stack cannot be walked to its end: more than QD_MAX_VLANS
     * tags, or an offload EtherType (0x88B5/0x88B6) wrapped in 802.2 SNAP.
     * Default-deny: the caller drops the frame (tag_stack_dropped), since
     * whatever it carries (keys, plaintext) is unknown to us. */
    QD_ETH_DEEP,
};

/* TPIDs taken for VLAN tags: 802.1Q, 802.1ad, and the pre-802.1ad QinQ
 * values switches still emit. A TPID missing here would make the parser stop
 * at the tag and take the frame for some other protocol (passed on). */
static inline bool qd_is_tag_tpid(uint16_t et)
{
    return et == 0x8100 || et == 0x88A8 || et == 0x9100 || et == 0x9200 || et == 0x9300;
}

/* Ethernet header + up to QD_MAX_VLANS tags (any qd_is_tag_tpid TPIDs in
 * any order): on QD_ETH_OK, the header length and the EtherType behind the
 * tags (host order). */
enum qd_eth_result qd_eth_parse(const uint8_t *p, uint32_t len, uint16_t *l2_len,
                                uint16_t *ethertype);

/* An IPv4/IPv6 packet behind l2 bytes whose IP header says it is longer than
 * the frame that arrived (frame_len = the whole frame, every segment): the
 * port cut it (net_af_packet truncates frames over its framesz). Such a frame
 * is never forwarded; so is one without room for the fixed IP header. False
 * for anything that is not IP, or whose version is not its EtherType's. */
bool qd_ip_truncated(const uint8_t *p, uint32_t first_seg_len, uint32_t frame_len, uint16_t l2,
                     uint16_t ethertype);

/* A UDP datagram found in a network frame. */
struct qd_udp_info {
    uint16_t l2_len, l3_len;
    uint8_t family;       /* 4 or 6 */
    uint32_t payload_off; /* the UDP payload (the QUIC datagram), from the frame start */
    uint32_t payload_len;
    struct quicoff_addr local; /* destination address + port: the lookup key of zero-length CIDs */
};

/* Parses a network frame. Returns 0 for a UDP datagram that may carry QUIC,
 * -1 for anything else: not IP, not UDP, IPv4 options or fragments, IPv6
 * extension headers, lengths that do not fit the frame (all passed to the
 * host as they are, or dropped by --unknown drop). */
int qd_udp_parse(const uint8_t *p, uint32_t len, struct qd_udp_info *u);

/* The local address of a datagram whose headers classify.c parsed
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
