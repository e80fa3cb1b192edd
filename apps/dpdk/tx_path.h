/* SPDX-License-Identifier: Apache-2.0 */
/* The TX path: host data frames -> protect -> network frames (tx_path.c). */
#ifndef QD_TX_PATH_H
#define QD_TX_PATH_H

#include <rte_mbuf.h>

#include "worker.h"

/* Protects a burst of host data frames classified for worker w (at most
 * QD_BURST) and queues the network frames (qd_out_net); every mbuf is consumed. */
void qd_tx_burst(struct qd_worker *w, struct rte_mbuf **m, unsigned n);

#endif
