/* SPDX-License-Identifier: Apache-2.0 */
/* Ethernet / VLAN / IPv4 / IPv6 / UDP parse and build. */
#include "encap.h"

#include "cksum.h"
#include "qo_bytes.h"
#include "quicoff/wire.h"

#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_udp.h>

/* 802.2 LLC + SNAP with OUI 00-00-00 (RFC 1042): an EtherType carried
 * behind an 802.3 length field. */
static bool snap_offload(const uint8_t *p, uint32_t len, uint16_t off)
{
    static const uint8_t rfc1042[6] = {0xAA, 0xAA, 0x03, 0x00, 0x00, 0x00};
    if (len < (uint32_t)off + 8 || memcmp(p + off, rfc1042, sizeof(rfc1042)) != 0)
        return false;
    uint16_t et = qo_load_be16(p + off + 6);
    return et == QUICOFF_WIRE_ETHERTYPE_SIGNAL || et == QUICOFF_WIRE_ETHERTYPE_DATA;
}

enum qd_eth_result qd_eth_parse(const uint8_t *p, uint32_t len, uint16_t *l2_len,
                                uint16_t *ethertype)
{
    if (len < RTE_ETHER_HDR_LEN)
        return QD_ETH_SHORT;
    uint16_t off = 12, et = qo_load_be16(p + off);
    for (int i = 0; qd_is_tag_tpid(et); i++) {
        /* A third tag: a stack we do not handle. Dropping it, rather than
         * taking 0x8100 for "some other protocol", is what keeps an offload
         * frame hidden behind it from being forwarded in clear. */
        if (i == QD_MAX_VLANS)
            return QD_ETH_DEEP;
        off += 4;
        if (len < (uint32_t)off + 2)
            return QD_ETH_SHORT;
        et = qo_load_be16(p + off);
    }
    /* Values below 0x0600 are 802.3 lengths; an offload EtherType wrapped in
     * SNAP is one more depth at which keys could hide. */
    if (et < 0x0600 && snap_offload(p, len, (uint16_t)(off + 2)))
        return QD_ETH_DEEP;
    *l2_len = (uint16_t)(off + 2);
    *ethertype = et;
    return QD_ETH_OK;
}

bool qd_ip_truncated(const uint8_t *p, uint32_t first_seg_len, uint32_t frame_len, uint16_t l2,
                     uint16_t ethertype)
{
    const uint8_t *ip = p + l2;
    uint32_t avail = frame_len > l2 ? frame_len - l2 : 0;
    uint32_t hdr = ethertype == RTE_ETHER_TYPE_IPV4   ? 20
                   : ethertype == RTE_ETHER_TYPE_IPV6 ? 40
                                                      : 0;
    if (!hdr)
        return false; /* not IP: nothing says how long it should be */
    /* not even the fixed header (in the segment we can read): cut */
    if (first_seg_len < (uint32_t)l2 + hdr)
        return true;
    if ((ip[0] >> 4) != (hdr == 20 ? 4 : 6))
        return false; /* not the IP its EtherType says: not ours to judge */
    if (hdr == 20)
        return qo_load_be16(ip + 2) > avail;
    return 40u + qo_load_be16(ip + 4) > avail; /* a jumbogram (0) is never "too long" */
}

int qd_udp_parse(const uint8_t *p, uint32_t len, struct qd_udp_info *u)
{
    uint16_t et, l2;
    if (qd_eth_parse(p, len, &l2, &et) != QD_ETH_OK)
        return -1;
    const uint8_t *ip = p + l2;
    uint32_t avail = len - l2, ip_len;
    memset(&u->local, 0, sizeof(u->local));
    if (et == RTE_ETHER_TYPE_IPV4) {
        if (avail < 20 || (ip[0] >> 4) != 4)
            return -1;
        /* IHL > 5: options, rare on QUIC paths; fragments cannot be
         * unprotected piecewise. Both go to the host as they are. */
        if ((ip[0] & 0x0f) != 5 || ip[9] != IPPROTO_UDP || (qo_load_be16(ip + 6) & 0x3fff) != 0)
            return -1;
        ip_len = qo_load_be16(ip + 2);
        if (ip_len < 28 || ip_len > avail)
            return -1;
        u->family = 4;
        u->l3_len = 20;
        memcpy(u->local.ip, ip + 16, 4);
    } else if (et == RTE_ETHER_TYPE_IPV6) {
        if (avail < 40 || (ip[0] >> 4) != 6 || ip[6] != IPPROTO_UDP) /* no extension headers */
            return -1;
        ip_len = 40u + qo_load_be16(ip + 4);
        if (ip_len < 48 || ip_len > avail)
            return -1;
        u->family = 6;
        u->l3_len = 40;
        memcpy(u->local.ip, ip + 24, 16);
    } else {
        return -1;
    }
    const uint8_t *udp = ip + u->l3_len;
    uint16_t udp_len = qo_load_be16(udp + 4);
    if (udp_len < 8 || udp_len > ip_len - u->l3_len)
        return -1;
    u->l2_len = l2;
    u->payload_off = (uint32_t)l2 + u->l3_len + 8;
    u->payload_len = udp_len - 8u;
    u->local.family = u->family;
    u->local.port = qo_load_be16(udp + 2);
    return 0;
}

static void udp_addr(const struct rte_mbuf *m, struct quicoff_addr *a, bool dst)
{
    const uint8_t *ip = rte_pktmbuf_mtod_offset(m, const uint8_t *, m->l2_len);
    const uint8_t *udp = ip + m->l3_len;
    memset(a, 0, sizeof(*a));
    if (m->hash.usr == QD_CLASS_NET_QUIC4) {
        a->family = 4;
        memcpy(a->ip, ip + (dst ? 16 : 12), 4);
    } else {
        a->family = 6;
        memcpy(a->ip, ip + (dst ? 24 : 8), 16);
    }
    a->port = qo_load_be16(udp + (dst ? 2 : 0));
}

void qd_udp_local_addr(const struct rte_mbuf *m, struct quicoff_addr *a)
{
    udp_addr(m, a, true);
}

void qd_udp_remote_addr(const struct rte_mbuf *m, struct quicoff_addr *a)
{
    udp_addr(m, a, false);
}

int qd_encap_push(struct rte_mbuf *m, const struct qd_encap *e)
{
    uint16_t hlen = qd_encap_len(e);
    uint32_t dgram = rte_pktmbuf_pkt_len(m);
    uint8_t *p = (uint8_t *)rte_pktmbuf_prepend(m, hlen);
    if (!p)
        return -1;
    struct rte_ether_hdr *eth = (struct rte_ether_hdr *)p;
    eth->dst_addr = e->dst_mac;
    eth->src_addr = rte_is_zero_ether_addr(&e->src_mac) ? qda.net_port_mac : e->src_mac;
    uint16_t l2 = RTE_ETHER_HDR_LEN;
    uint16_t et = e->family == 6 ? RTE_ETHER_TYPE_IPV6 : RTE_ETHER_TYPE_IPV4;
    if (e->has_vlan) {
        eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
        struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(eth + 1);
        vh->vlan_tci = rte_cpu_to_be_16(e->vlan_tci);
        vh->eth_proto = rte_cpu_to_be_16(et);
        l2 += 4;
    } else {
        eth->ether_type = rte_cpu_to_be_16(et);
    }
    struct rte_udp_hdr *udp;
    m->l2_len = l2;
    m->ol_flags &= ~(RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_IP_CKSUM |
                     RTE_MBUF_F_TX_L4_MASK);
    if (e->family == 6) {
        struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)(p + l2);
        ip6->vtc_flow = rte_cpu_to_be_32(6u << 28 | (uint32_t)e->tos << 20);
        ip6->payload_len = rte_cpu_to_be_16((uint16_t)(dgram + 8));
        ip6->proto = IPPROTO_UDP;
        ip6->hop_limits = e->ttl ? e->ttl : 64;
        memcpy(ip6->src_addr, e->src_ip, 16);
        memcpy(ip6->dst_addr, e->dst_ip, 16);
        udp = (struct rte_udp_hdr *)(ip6 + 1);
        udp->src_port = rte_cpu_to_be_16(e->src_port);
        udp->dst_port = rte_cpu_to_be_16(e->dst_port);
        udp->dgram_len = rte_cpu_to_be_16((uint16_t)(dgram + 8));
        udp->dgram_cksum = 0;
        m->l3_len = sizeof(*ip6);
        if (qda.net_tx_udp_cksum) {
            m->ol_flags |= RTE_MBUF_F_TX_IPV6 | RTE_MBUF_F_TX_UDP_CKSUM;
            udp->dgram_cksum = rte_ipv6_phdr_cksum(ip6, m->ol_flags);
        } else {
            udp->dgram_cksum = qd_ipv6_udp_cksum(ip6, udp);
        }
    } else {
        struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)(p + l2);
        ip4->version_ihl = RTE_IPV4_VHL_DEF;
        ip4->type_of_service = e->tos;
        ip4->total_length = rte_cpu_to_be_16((uint16_t)(dgram + 28));
        ip4->packet_id = 0;
        ip4->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG); /* QUIC: DF, RFC 9000 §14 */
        ip4->time_to_live = e->ttl ? e->ttl : 64;
        ip4->next_proto_id = IPPROTO_UDP;
        ip4->hdr_checksum = 0;
        memcpy(&ip4->src_addr, e->src_ip, 4);
        memcpy(&ip4->dst_addr, e->dst_ip, 4);
        udp = (struct rte_udp_hdr *)(ip4 + 1);
        udp->src_port = rte_cpu_to_be_16(e->src_port);
        udp->dst_port = rte_cpu_to_be_16(e->dst_port);
        udp->dgram_len = rte_cpu_to_be_16((uint16_t)(dgram + 8));
        udp->dgram_cksum = 0;
        m->l3_len = sizeof(*ip4);
        m->ol_flags |= RTE_MBUF_F_TX_IPV4;
        if (qda.net_tx_ip_cksum)
            m->ol_flags |= RTE_MBUF_F_TX_IP_CKSUM;
        else
            ip4->hdr_checksum = rte_ipv4_cksum(ip4);
        if (qda.net_tx_udp_cksum) {
            m->ol_flags |= RTE_MBUF_F_TX_UDP_CKSUM;
            udp->dgram_cksum = rte_ipv4_phdr_cksum(ip4, m->ol_flags);
        } else {
            udp->dgram_cksum = qd_ipv4_udp_cksum(ip4, udp);
        }
    }
    m->l4_len = sizeof(*udp);
    return 0;
}
