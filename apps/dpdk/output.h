/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A worker's output: the frames a burst produces for the host and the
 * network are collected per burst (qd_out_host / qd_out_net) and flushed
 * after it (qd_out_flush): in run-to-completion mode into the worker's own
 * port buffers, sent once QD_BURST are waiting, when a poll round found
 * nothing more to do, or after --tx-drain-us (as l2fwd / ipsec-secgw buffer
 * their TX); in pipeline mode onto the TX rings the I/O lcore drains.
 */
#ifndef QD_OUTPUT_H
#define QD_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_mbuf.h>

#include "worker.h"

/* Port buffer indexes of struct qd_worker.txb */
enum qd_out_port { QD_OUT_HOST = 0, QD_OUT_NET = 1 };

/* Queue a frame for the host / network port (flushed at the end of the burst). */
void qd_out_host(struct qd_worker *w, struct rte_mbuf *m);
void qd_out_net(struct qd_worker *w, struct rte_mbuf *m);
/* The end of a burst: what it produced to the port buffers (rtc) or the TX rings (pipeline). */
void qd_out_flush(struct qd_worker *w);

/* rtc: frames for a port's buffer (pass-through frames the worker classified). */
void qd_out_port_add(struct qd_worker *w, enum qd_out_port port, struct rte_mbuf **m, unsigned n);
/* rtc, the end of a poll round: sends what waits when the round found no work,
 * or when its oldest frame has waited drain_tsc. */
void qd_out_port_drain(struct qd_worker *w, bool found_work, uint64_t drain_tsc);
/* rtc: sends everything a port buffer holds (at shutdown). */
void qd_out_port_flush(struct qd_worker *w, enum qd_out_port port);

#endif
