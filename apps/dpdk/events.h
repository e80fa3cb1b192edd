/* SPDX-License-Identifier: Apache-2.0 */
/* EVENTs to the host (docs/protocol.md §4.9), sent from a worker's burst. */
#ifndef QD_EVENTS_H
#define QD_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "worker.h"

struct qd_conn;

/* An EVENT to the host. */
struct qd_event {
    uint8_t code;   /* quicoff_wire_event_code_t */
    uint8_t status; /* quicoff_status_t */
    bool has_pn, has_count, has_gen, has_level;
    uint64_t pn, count;
    uint32_t gen;
    uint8_t level;
    const uint8_t *dcid; /* NULL = none */
    uint8_t dcid_len;
    const struct quicoff_addr *local, *remote;
    bool has_mtu;
    uint32_t mtu; /* too_big: the network MTU */
};

/* Queues it for the host (qd_out_host) for v1 entries and unknown
 * connections only (c NULL), at most one per (entry, code) per 100 ms, key
 * updates always. */
void qd_event_send(struct qd_worker *w, struct qd_conn *c, const struct qd_event *e);

#endif
