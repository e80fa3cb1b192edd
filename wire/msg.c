/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Messages of the host <-> offload protocol: set-up, wipe, the error exit
 * and the stable names.  The only file that knows both formats' kinds.
 */
#include "msg.h"

#include <openssl/crypto.h> /* OPENSSL_cleanse */
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Names                                                                     */

const char *quicoff_wire_kind_name(unsigned kind)
{
    switch (kind) {
    case QUICOFF_WIRE_NONE:
        return "none";
    case QUICOFF_WIRE_ADD:
        return "add";
    case QUICOFF_WIRE_UPDATE:
        return "update";
    case QUICOFF_WIRE_REMOVE:
        return "remove";
    case QUICOFF_WIRE_QUERY:
        return "query";
    case QUICOFF_WIRE_DATA_TO_OFFLOAD:
        return "data_to_offload";
    case QUICOFF_WIRE_DATA_TRAIN:
        return "data_train";
    case QUICOFF_WIRE_ACK:
        return "ack";
    case QUICOFF_WIRE_STATS:
        return "stats";
    case QUICOFF_WIRE_EVENT:
        return "event";
    case QUICOFF_WIRE_DATA_TO_HOST:
        return "data_to_host";
    case QUICOFF_WIRE_COMPAT_PEER:
        return "compat_peer";
    case QUICOFF_WIRE_COMPAT_HOST:
        return "compat_host";
    case QUICOFF_WIRE_COMPAT_DATA:
        return "compat_data";
    default:
        return "unknown";
    }
}

const char *quicoff_wire_event_name(unsigned code)
{
    switch (code) {
    case QUICOFF_WIRE_EV_AUTH_FAILED:
        return "auth_failed";
    case QUICOFF_WIRE_EV_USAGE_LIMIT:
        return "usage_limit_reached";
    case QUICOFF_WIRE_EV_KEY_UPDATE:
        return "key_update";
    case QUICOFF_WIRE_EV_UNKNOWN_CONNECTION:
        return "unknown_connection";
    case QUICOFF_WIRE_EV_KEY_EXHAUSTED:
        return "key_exhausted";
    case QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE:
        return "key_phase_unavailable";
    case QUICOFF_WIRE_EV_TOO_BIG:
        return "too_big";
    default:
        return "unknown";
    }
}

/* ------------------------------------------------------------------------ */
/* Message set-up and tear-down                                              */

void quicoff_wire_msg_init(struct quicoff_wire_msg *m, quicoff_wire_kind_t kind)
{
    if (!m)
        return;
    memset(m, 0, sizeof(*m));
    m->kind = (uint16_t)kind;
    m->version = (unsigned)kind >= 0x100 || kind == QUICOFF_WIRE_NONE ? 0 : QUICOFF_WIRE_VERSION;
    switch ((unsigned)kind) {
    case QUICOFF_WIRE_ADD:
        quicoff_conn_config_init(&m->u.add.cfg);
        break;
    case QUICOFF_WIRE_COMPAT_PEER:
        quicoff_conn_config_init(&m->u.add.cfg);
        m->direction = QUICOFF_DIR_RX;
        m->u.add.cfg.direction = QUICOFF_DIR_RX;
        m->u.add.cfg.nonce_layout = QUICOFF_NONCE_MULTIPATH_PATH_ID_LE;
        m->u.add.cfg.dcid_len = QUICOFF_WIRE_COMPAT_DCID_LEN;
        break;
    case QUICOFF_WIRE_COMPAT_HOST:
        quicoff_conn_config_init(&m->u.add.cfg);
        m->direction = QUICOFF_DIR_TX;
        m->u.add.cfg.direction = QUICOFF_DIR_TX;
        m->u.add.cfg.nonce_layout = QUICOFF_NONCE_MULTIPATH_PATH_ID_LE;
        break;
    case QUICOFF_WIRE_EVENT:
        m->index = QUICOFF_WIRE_INDEX_NONE;
        break;
    default:
        break;
    }
}

void quicoff_wire_msg_clear(struct quicoff_wire_msg *m)
{
    if (m)
        OPENSSL_cleanse(m, sizeof(*m));
}

/* After a decode error: keep only the header (to answer with an ACK). */
quicoff_status_t qo_wire_fail(struct quicoff_wire_msg *m, quicoff_status_t st)
{
    struct quicoff_wire_msg keep;
    memset(&keep, 0, sizeof(keep));
    keep.kind = m->kind;
    keep.version = m->version;
    keep.hdr_valid = m->hdr_valid;
    keep.flags = m->flags;
    keep.acked_kind = m->acked_kind;
    keep.request_id = m->request_id;
    keep.index = m->index;
    keep.direction = m->direction;
    keep.status = m->status;
    OPENSSL_cleanse(m, sizeof(*m));
    *m = keep;
    return st;
}
