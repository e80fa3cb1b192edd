/* SPDX-License-Identifier: Apache-2.0 */
/* Packet-number encoding and decoding, RFC 9000 §17.1 and Appendix A.2/A.3. */
#include "pn.h"

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
    return qo_pn_decode(largest_pn, truncated, pn_nbits);
}
