/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Message <-> entry configuration: the TLVs of ADD and UPDATE read into a
 * quicoff_conn_config / quicoff_conn_update (decode) and written from them
 * (encode).  Internal to libquicoff-wire.
 */
#ifndef QO_WIRE_CONFIG_H
#define QO_WIRE_CONFIG_H

#include "msg.h"
#include "tlv.h"

/* Decode: the collected TLVs of an ADD / UPDATE into m->u.add / m->u.update. */
QO_WIRE_INTERNAL quicoff_status_t qo_wire_read_add(const struct tlvs *t,
                                                   struct quicoff_wire_msg *m);
QO_WIRE_INTERNAL quicoff_status_t qo_wire_read_update(const struct tlvs *t,
                                                      struct quicoff_wire_msg *m);

/* Encode: the TLVs of an ADD / UPDATE, after the signaling header. */
QO_WIRE_INTERNAL quicoff_status_t qo_wire_put_add(struct wbuf *w,
                                                  const struct quicoff_wire_msg *m);
QO_WIRE_INTERNAL quicoff_status_t qo_wire_put_update(struct wbuf *w,
                                                     const struct quicoff_wire_msg *m);

/* The header flags (byte 3) an UPDATE carries for upd->what. */
QO_WIRE_INTERNAL uint8_t qo_wire_update_flags(const struct quicoff_conn_update *u);

#endif /* QO_WIRE_CONFIG_H */
