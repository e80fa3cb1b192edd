/* SPDX-License-Identifier: Apache-2.0 */
/* The RX path: network datagrams -> unprotect -> host frames (rx_path.c). */
#ifndef QD_RX_PATH_H
#define QD_RX_PATH_H

#include <rte_mbuf.h>

#include "worker.h"

/* Unprotects a burst of datagrams classified for worker w (at most QD_BURST)
 * and queues the resulting host frames (qd_out_host); every mbuf is consumed. */
void qd_rx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n);

#endif
