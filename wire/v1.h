/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Protocol v1 (docs/protocol.md §4): every frame on 0x88B5, starting with
 * 0x51 ('Q') and the version byte.  Internal to libquicoff-wire.
 */
#ifndef QO_WIRE_V1_H
#define QO_WIRE_V1_H

#include "msg.h"
#include "tlv.h"

#include "qo_bytes.h"

/* The v1 data header rules (§4.2), shared by the full decoder and
 * quicoff_wire_data_hdr_read() so that the two cannot disagree.  The order of
 * the checks is part of the contract (it decides the status of a frame with
 * two faults): length, then PN, then level.  What is not checked is ignored
 * on purpose: the reserved bytes of DATA_TO_OFFLOAD, bits 3-1 of byte 19, and
 * flag or status values this version does not define (reported as received:
 * a newer offload may set more result flags).  Data frames carry no TLVs.
 * d must be zeroed by the caller; fields are filled as far as they were read,
 * also on error. */
static inline quicoff_status_t read_v1_data_hdr(const uint8_t *p, size_t len, bool to_host,
                                                struct quicoff_wire_data *d)
{
    if (len < QUICOFF_WIRE_DATA_HDR_LEN)
        return QUICOFF_MALFORMED;
    d->flags = p[3];
    d->index = qo_load_be32(p + 4);
    d->pn = qo_load_be64(p + 8);
    uint16_t n = qo_load_be16(p + 16);
    if (n > len - QUICOFF_WIRE_DATA_HDR_LEN)
        return QUICOFF_MALFORMED;
    if (d->pn > QUICOFF_WIRE_PN_MAX)
        return QUICOFF_INVALID_ARGUMENT;
    if (to_host) {
        d->status = p[18];
        d->level = p[19] >> 4;
        d->key_phase = p[19] & 1;
        if (d->level >= QUICOFF_LEVEL_COUNT)
            return QUICOFF_INVALID_ARGUMENT;
    }
    d->payload = p + QUICOFF_WIRE_DATA_HDR_LEN;
    d->payload_len = n;
    return QUICOFF_OK;
}

/* p[0] is QUICOFF_WIRE_MAGIC (the caller dispatched on it). */
QO_WIRE_INTERNAL quicoff_status_t qo_wire_decode_v1(const uint8_t *p, size_t len,
                                                    struct quicoff_wire_msg *m);
QO_WIRE_INTERNAL quicoff_status_t qo_wire_encode_v1_signal(const struct quicoff_wire_msg *m,
                                                           struct wbuf *w);

#endif /* QO_WIRE_V1_H */
