/* SPDX-License-Identifier: Apache-2.0 */
/* cksum.c against DPDK's checksums: every length 0..2100 at every alignment
 * 0..7, random and all-0xff contents, IPv4 and IPv6 UDP datagrams. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ip.h>
#include <rte_udp.h>

#include "cksum.h"

static int failures;

#define CHECK(c, ...)                \
    do {                             \
        if (!(c)) {                  \
            failures++;              \
            if (failures < 20)       \
                printf(__VA_ARGS__); \
        }                            \
    } while (0)

int main(void)
{
    static uint8_t buf[4096 + 64];
    srand(1);
    unsigned checks = 0;
    for (int fill = 0; fill < 3; fill++) {
        for (size_t i = 0; i < sizeof(buf); i++)
            buf[i] = fill == 0 ? (uint8_t)rand() : fill == 1 ? 0xff : (uint8_t)(i * 131);
        for (size_t off = 0; off < 8; off++)
            for (size_t len = 0; len <= 2100; len++, checks++)
                CHECK(qd_raw_cksum(buf + off, len) == rte_raw_cksum(buf + off, len),
                      "raw: fill %d off %zu len %zu: %04x != %04x\n", fill, off, len,
                      qd_raw_cksum(buf + off, len), rte_raw_cksum(buf + off, len));
    }
    /* whole datagrams, as encap.c builds them */
    for (int round = 0; round < 20000; round++, checks += 2) {
        size_t dlen = (size_t)rand() % 1473, off = (size_t)rand() % 8;
        uint8_t *p = buf + off;
        for (size_t i = 0; i < 48 + dlen + 8; i++)
            p[i] = (uint8_t)rand();
        struct rte_ipv4_hdr *ip4 = (struct rte_ipv4_hdr *)p;
        ip4->version_ihl = RTE_IPV4_VHL_DEF;
        ip4->next_proto_id = IPPROTO_UDP;
        ip4->total_length = rte_cpu_to_be_16((uint16_t)(20 + 8 + dlen));
        struct rte_udp_hdr *u = (struct rte_udp_hdr *)(ip4 + 1);
        u->dgram_len = rte_cpu_to_be_16((uint16_t)(8 + dlen));
        u->dgram_cksum = 0;
        CHECK(qd_ipv4_udp_cksum(ip4, u) == rte_ipv4_udptcp_cksum(ip4, u), "ipv4 len %zu\n", dlen);
        struct rte_ipv6_hdr *ip6 = (struct rte_ipv6_hdr *)p;
        ip6->proto = IPPROTO_UDP;
        ip6->payload_len = rte_cpu_to_be_16((uint16_t)(8 + dlen));
        u = (struct rte_udp_hdr *)(ip6 + 1);
        u->dgram_len = ip6->payload_len;
        u->dgram_cksum = 0;
        CHECK(qd_ipv6_udp_cksum(ip6, u) == rte_ipv6_udptcp_cksum(ip6, u), "ipv6 len %zu\n", dlen);
    }
    printf("cksum (%s): %u checks, %d failures\n", qd_cksum_impl(), checks, failures);
    return failures ? 1 : 0;
}
