/* SPDX-License-Identifier: Apache-2.0 */
/* Software checksums: an AVX2 one's-complement sum, DPDK's as the fallback (see cksum.h). */
#include "cksum.h"

#include <string.h>

#include <rte_common.h>

#if defined(__x86_64__)
#include <immintrin.h>

/* 16-bit words widened to 32-bit lanes and added: a lane gains at most
 * 2 x 0xffff per 64 bytes, so it cannot overflow below 2 MB. */
__attribute__((target("avx2"))) static uint16_t raw_cksum_avx2(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    const __m256i zero = _mm256_setzero_si256();
    __m256i acc0 = zero, acc1 = zero;
    for (; len >= 64; p += 64, len -= 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)p);
        __m256i b = _mm256_loadu_si256((const __m256i *)(p + 32));
        acc0 = _mm256_add_epi32(acc0, _mm256_unpacklo_epi16(a, zero));
        acc1 = _mm256_add_epi32(acc1, _mm256_unpackhi_epi16(a, zero));
        acc0 = _mm256_add_epi32(acc0, _mm256_unpacklo_epi16(b, zero));
        acc1 = _mm256_add_epi32(acc1, _mm256_unpackhi_epi16(b, zero));
    }
    if (len >= 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)p);
        acc0 = _mm256_add_epi32(acc0, _mm256_unpacklo_epi16(a, zero));
        acc1 = _mm256_add_epi32(acc1, _mm256_unpackhi_epi16(a, zero));
        p += 32;
        len -= 32;
    }
    __m256i acc = _mm256_add_epi32(acc0, acc1); /* lanes < 2^31: no overflow */
    uint32_t lanes[8];
    _mm256_storeu_si256((__m256i *)lanes, acc);
    uint64_t sum = 0;
    for (int i = 0; i < 8; i++)
        sum += lanes[i];
    for (; len >= 2; p += 2, len -= 2) {
        uint16_t v;
        memcpy(&v, p, 2);
        sum += v;
    }
    if (len) {
        uint16_t left = 0;
        *(uint8_t *)&left = *p; /* as DPDK: the odd byte in the first byte of a word */
        sum += left;
    }
    /* fold 64 -> 16 bits with end-around carries */
    sum = (sum >> 32) + (sum & 0xffffffff);
    sum = (sum >> 32) + (sum & 0xffffffff);
    sum = (sum >> 16) + (sum & 0xffff);
    sum = (sum >> 16) + (sum & 0xffff);
    sum = (sum >> 16) + (sum & 0xffff);
    return (uint16_t)sum;
}
#endif

static uint16_t raw_cksum_generic(const void *buf, size_t len)
{
    return rte_raw_cksum(buf, len);
}

static uint16_t (*raw_cksum)(const void *, size_t) = raw_cksum_generic;
static const char *impl = "generic";

RTE_INIT(qd_cksum_select)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) {
        raw_cksum = raw_cksum_avx2;
        impl = "avx2";
    }
#endif
}

uint16_t qd_raw_cksum(const void *buf, size_t len)
{
    /* short ones: DPDK's inline loop beats a call and a horizontal sum */
    if (len < 128)
        return rte_raw_cksum(buf, len);
    return raw_cksum(buf, len);
}

const char *qd_cksum_impl(void)
{
    return impl;
}

/* As rte_ipv4_udptcp_cksum(): sum of the datagram and the pseudo-header,
 * folded once, complemented, 0 sent as 0xffff (RFC 768). */
static uint16_t finish(uint32_t cksum)
{
    cksum = ((cksum & 0xffff0000) >> 16) + (cksum & 0xffff);
    uint16_t c = (uint16_t) ~(uint16_t)cksum;
    return c == 0 ? 0xffff : c;
}

uint16_t qd_ipv4_udp_cksum(const struct rte_ipv4_hdr *ip, const void *l4)
{
    uint32_t l3_len = rte_be_to_cpu_16(ip->total_length);
    uint32_t ihl = rte_ipv4_hdr_len(ip);
    if (l3_len < ihl)
        return 0xffff; /* as DPDK's: ~0 */
    uint32_t cksum = qd_raw_cksum(l4, l3_len - ihl);
    cksum += rte_ipv4_phdr_cksum(ip, 0);
    return finish(cksum);
}

uint16_t qd_ipv6_udp_cksum(const struct rte_ipv6_hdr *ip, const void *l4)
{
    uint32_t cksum = qd_raw_cksum(l4, rte_be_to_cpu_16(ip->payload_len));
    cksum += rte_ipv6_phdr_cksum(ip, 0);
    return finish(cksum);
}
