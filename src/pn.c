/* SPDX-License-Identifier: Apache-2.0 */
/* Packet-number encoding and decoding, RFC 9000 §17.1 and Appendix A.2/A.3. */
#include "quicoff/quicoff.h"

#define PN_MAX ((UINT64_C(1) << 62) - 1)

unsigned quicoff_pn_encode_len(uint64_t pn, uint64_t largest_acked)
{
    /* Twice the distance to the largest acknowledged packet must fit, so the
     * receiver's window (A.3) is guaranteed to contain pn. */
    uint64_t unacked = largest_acked == UINT64_MAX ? pn + 1 : pn - largest_acked;
    unsigned bits = 0;
    while (bits < 64 && (unacked >> bits) != 0)
        bits++;
    bits += 1;
    unsigned bytes = (bits + 7) / 8;
    return bytes > 4 ? 4 : bytes;
}

uint64_t quicoff_pn_decode(uint64_t largest_pn, uint64_t truncated, unsigned pn_nbits)
{
    /* A QUIC header encodes 1 to 4 bytes of packet number (§17.1); any other
     * width has no window here (64 bits would shift by 64: undefined), and a
     * truncated value wider than its width or a largest PN past 2^62 - 1 has
     * no meaning. None of them is a packet number: UINT64_MAX says so (it can
     * never be a decoded PN, which is at most 2^62 - 1). */
    if ((pn_nbits != 8 && pn_nbits != 16 && pn_nbits != 24 && pn_nbits != 32) ||
        (truncated >> pn_nbits) != 0 || (largest_pn > PN_MAX && largest_pn != UINT64_MAX))
        return UINT64_MAX;
    uint64_t expected = largest_pn == UINT64_MAX ? 0 : largest_pn + 1;
    uint64_t win = UINT64_C(1) << pn_nbits;
    uint64_t hwin = win / 2;
    uint64_t mask = win - 1;
    uint64_t candidate = (expected & ~mask) | truncated;
    /* The comparisons are arranged so nothing underflows or exceeds 2^62. */
    if (candidate + hwin <= expected && candidate + win <= PN_MAX)
        return candidate + win;
    if (candidate > expected + hwin && candidate >= win)
        return candidate - win;
    return candidate;
}
