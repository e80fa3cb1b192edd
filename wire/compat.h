/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The compat format (docs/protocol.md §3): the fixed-layout frames of the
 * first BlueField-2 multipath-QUIC offload prototype, kept byte for byte so
 * that its hosts and Scapy scripts keep working.  Signaling on 0x88B5 whose
 * first byte is 0 (peer: an RX entry by DCID) or 1 (host: a TX entry by
 * index); data on 0x88B6 (Index 16 + Full_pn 64 + the QUIC packet).
 * Internal to libquicoff-wire.
 */
#ifndef QO_WIRE_COMPAT_H
#define QO_WIRE_COMPAT_H

#include "msg.h"
#include "tlv.h"

#include "qo_bytes.h"

/* The compat data_pkt header rules (§3.5), shared by the full decoder and
 * quicoff_wire_data_hdr_read() so that the two cannot disagree.  d must be
 * zeroed by the caller; fields are filled as far as they were read, also on
 * error (the full decoder keeps the index for its caller). */
static inline quicoff_status_t read_compat_data_hdr(const uint8_t *p, size_t len,
                                                    struct quicoff_wire_data *d)
{
    if (len < QUICOFF_WIRE_COMPAT_DATA_HDR_LEN)
        return QUICOFF_MALFORMED;
    d->index = qo_load_be16(p);
    d->pn = qo_load_be64(p + 2);
    if (d->pn > QUICOFF_WIRE_PN_MAX)
        return QUICOFF_INVALID_ARGUMENT;
    /* No length field: the QUIC packet runs to the end of the frame. */
    if (len - QUICOFF_WIRE_COMPAT_DATA_HDR_LEN > UINT32_MAX)
        return QUICOFF_MALFORMED;
    d->payload = p + QUICOFF_WIRE_COMPAT_DATA_HDR_LEN;
    d->payload_len = (uint32_t)(len - QUICOFF_WIRE_COMPAT_DATA_HDR_LEN);
    return QUICOFF_OK;
}

/* p[0] is 0 or 1 (the caller dispatched on it). */
QO_WIRE_INTERNAL quicoff_status_t qo_wire_decode_compat_signal(const uint8_t *p, size_t len,
                                                               struct quicoff_wire_msg *m);
QO_WIRE_INTERNAL quicoff_status_t qo_wire_decode_compat_data(const uint8_t *p, size_t len,
                                                             struct quicoff_wire_msg *m);
QO_WIRE_INTERNAL quicoff_status_t qo_wire_encode_compat_signal(const struct quicoff_wire_msg *m,
                                                               struct wbuf *w);

#endif /* QO_WIRE_COMPAT_H */
