/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every part of the wire library needs about a message: its set-up, the
 * error exit that keeps only the header, and which kinds are v1 signaling or
 * v1 data.  Internal to libquicoff-wire (hidden symbols).
 */
#ifndef QO_WIRE_MSG_H
#define QO_WIRE_MSG_H

#include "quicoff/wire.h"

#define QO_WIRE_INTERNAL __attribute__((visibility("hidden")))

/* After a decode error: wipes the message but its header (kind, version,
 * hdr_valid, flags, request_id, index, direction, status), so that a v1
 * request can still be answered with an ACK; returns st. */
QO_WIRE_INTERNAL quicoff_status_t qo_wire_fail(struct quicoff_wire_msg *m, quicoff_status_t st);

/* Inline: the data path (quicoff_wire_data_hdr_read/_write) asks on every frame. */
static inline bool qo_wire_is_v1_signal(unsigned kind)
{
    switch (kind) {
    case QUICOFF_WIRE_ADD:
    case QUICOFF_WIRE_UPDATE:
    case QUICOFF_WIRE_REMOVE:
    case QUICOFF_WIRE_QUERY:
    case QUICOFF_WIRE_ACK:
    case QUICOFF_WIRE_STATS:
    case QUICOFF_WIRE_EVENT:
        return true;
    default:
        return false;
    }
}

static inline bool qo_wire_is_v1_data(unsigned kind)
{
    return kind == QUICOFF_WIRE_DATA_TO_OFFLOAD || kind == QUICOFF_WIRE_DATA_TO_HOST ||
           kind == QUICOFF_WIRE_DATA_TRAIN;
}

#endif /* QO_WIRE_MSG_H */
