/* SPDX-License-Identifier: Apache-2.0 */
/* Packet-number decoding (RFC 9000 Appendix A.3), inline for the data path:
 * protect.c decodes every packet's PN, and a call there cost about as much
 * as the decoding; pn.c's quicoff_pn_decode() is the same function. */
#ifndef QUICOFF_PN_H
#define QUICOFF_PN_H

#include "quicoff/quicoff.h"

#define QO_PN_MAX ((UINT64_C(1) << 62) - 1)

static inline uint64_t qo_pn_decode(uint64_t largest_pn, uint64_t truncated, unsigned pn_nbits)
{
    /* A QUIC header encodes 1 to 4 bytes of packet number (§17.1); any other
     * width has no window here (64 bits would shift by 64: undefined), and a
     * truncated value wider than its width or a largest PN past 2^62 - 1 has
     * no meaning. None of them is a packet number: UINT64_MAX says so (it can
     * never be a decoded PN, which is at most 2^62 - 1). */
    if ((pn_nbits != 8 && pn_nbits != 16 && pn_nbits != 24 && pn_nbits != 32) ||
        (truncated >> pn_nbits) != 0 || (largest_pn > QO_PN_MAX && largest_pn != UINT64_MAX))
        return UINT64_MAX;
    uint64_t expected = largest_pn == UINT64_MAX ? 0 : largest_pn + 1;
    uint64_t win = UINT64_C(1) << pn_nbits;
    uint64_t hwin = win / 2;
    uint64_t mask = win - 1;
    uint64_t candidate = (expected & ~mask) | truncated;
    /* The comparisons are arranged so nothing underflows or exceeds 2^62. */
    if (candidate + hwin <= expected && candidate + win <= QO_PN_MAX)
        return candidate + win;
    if (candidate > expected + hwin && candidate >= win)
        return candidate - win;
    return candidate;
}

#endif
