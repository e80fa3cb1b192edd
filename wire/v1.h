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

/* The train rules (§4.2.1) on its header fields, shared by the reader and
 * the writer: segment size and count not 0 (invalid_argument), Length =
 * (count - 1) full segments + a last packet of 1..segment_size bytes
 * (malformed), last PN <= 2^62-1 (invalid_argument). */
static inline quicoff_status_t qo_wire_train_check(uint64_t pn, uint32_t length, uint16_t seg,
                                                   uint16_t count)
{
    if (seg == 0 || count == 0)
        return QUICOFF_INVALID_ARGUMENT;
    uint64_t full = (uint64_t)(count - 1) * seg;
    if (length <= full || length > full + seg)
        return QUICOFF_MALFORMED;
    if ((uint64_t)count - 1 > QUICOFF_WIRE_PN_MAX - pn)
        return QUICOFF_INVALID_ARGUMENT;
    return QUICOFF_OK;
}

/* The v1 data header rules (§4.2), shared by the full decoder and
 * quicoff_wire_data_hdr_read() so that the two cannot disagree.  The order of
 * the checks is part of the contract (it decides the status of a frame with
 * two faults): length, then PN, then level (DATA_TO_HOST) or the train's
 * fields (DATA_TRAIN).  What is not checked is ignored on purpose: the
 * reserved bytes of DATA_TO_OFFLOAD and DATA_TRAIN, bits 3-1 of byte 19, and
 * flag or status values this version does not define (reported as received:
 * a newer offload may set more result flags).  Data frames carry no TLVs.
 * d must be zeroed by the caller; fields are filled as far as they were read,
 * also on error. */
static inline quicoff_status_t read_v1_data_hdr(const uint8_t *p, size_t len, uint8_t type,
                                                struct quicoff_wire_data *d)
{
    bool train = type == QUICOFF_WIRE_DATA_TRAIN;
    size_t hl = train ? QUICOFF_WIRE_TRAIN_HDR_LEN : QUICOFF_WIRE_DATA_HDR_LEN;
    if (len < hl)
        return QUICOFF_MALFORMED;
    d->flags = p[3];
    d->index = qo_load_be32(p + 4);
    d->pn = qo_load_be64(p + 8);
    uint16_t n = qo_load_be16(p + 16);
    if (n > len - hl)
        return QUICOFF_MALFORMED;
    if (d->pn > QUICOFF_WIRE_PN_MAX)
        return QUICOFF_INVALID_ARGUMENT;
    if (type == QUICOFF_WIRE_DATA_TO_HOST) {
        d->status = p[18];
        d->level = p[19] >> 4;
        d->key_phase = p[19] & 1;
        if (d->level >= QUICOFF_LEVEL_COUNT)
            return QUICOFF_INVALID_ARGUMENT;
    }
    if (train) {
        d->segment_size = qo_load_be16(p + 20);
        d->count = qo_load_be16(p + 22);
        quicoff_status_t st = qo_wire_train_check(d->pn, n, d->segment_size, d->count);
        if (st != QUICOFF_OK)
            return st;
    }
    d->payload = p + hl;
    d->payload_len = n;
    return QUICOFF_OK;
}

/* p[0] is QUICOFF_WIRE_MAGIC (the caller dispatched on it). */
QO_WIRE_INTERNAL quicoff_status_t qo_wire_decode_v1(const uint8_t *p, size_t len,
                                                    struct quicoff_wire_msg *m);
QO_WIRE_INTERNAL quicoff_status_t qo_wire_encode_v1_signal(const struct quicoff_wire_msg *m,
                                                           struct wbuf *w);

#endif /* QO_WIRE_V1_H */
