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

QO_WIRE_INTERNAL bool qo_wire_is_v1_signal(unsigned kind);
QO_WIRE_INTERNAL bool qo_wire_is_v1_data(unsigned kind);

#endif /* QO_WIRE_MSG_H */
