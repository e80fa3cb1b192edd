/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Software Internet checksums (RFC 1071) for ports without checksum offload
 * (af_packet, tap without it, some DPU representors): the same values as
 * DPDK's rte_raw_cksum() / rte_ipv4_udptcp_cksum() / rte_ipv6_udptcp_cksum(),
 * faster on long datagrams.
 *
 * Why not DPDK's: rte_raw_cksum() adds one 16-bit word at a time. Over a
 * 1437-byte datagram (a 1400-byte QUIC payload) it takes 69 ns here, the
 * AVX2 sum below 36 ns (medians, quiet machine; about 10% of what protection
 * adds per packet, bench/fwd_cost.py). Below 128 bytes DPDK's inline loop is
 * faster and is used. The AVX2 path is chosen at start-up by CPUID; elsewhere
 * the code is DPDK's own.
 * tests: apps/dpdk/test_cksum.c compares every function with DPDK's.
 */
#ifndef QD_CKSUM_H
#define QD_CKSUM_H

#include <stddef.h>
#include <stdint.h>

#include <rte_ip.h>

/* rte_raw_cksum(buf, len): the folded 16-bit one's-complement sum of the
 * little-endian 16-bit words of buf (an odd last byte as the low byte). */
uint16_t qd_raw_cksum(const void *buf, size_t len);

/* rte_ipv4_udptcp_cksum / rte_ipv6_udptcp_cksum: the value to store in the
 * UDP checksum field (l4 = the UDP header, its checksum field zero). */
uint16_t qd_ipv4_udp_cksum(const struct rte_ipv4_hdr *ip, const void *l4);
uint16_t qd_ipv6_udp_cksum(const struct rte_ipv6_hdr *ip, const void *l4);

/* Which implementation qd_raw_cksum uses ("avx2" or "generic"). */
const char *qd_cksum_impl(void);

#endif
