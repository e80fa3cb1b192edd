/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Signaling: the control thread. Frames on 0x88B5 that classification (a worker, or the
 * I/O lcore in pipeline mode) took from the host port (never the network port) are decoded (quicoff/wire.h)
 * and applied to the connection table: ADD / compat signaling ->
 * quicoff_conn_add (or, in place of an existing entry, quicoff_conn_replace),
 * UPDATE -> quicoff_conn_update, REMOVE ->
 * quicoff_conn_remove, QUERY -> counters; every v1 request is answered with
 * an ACK (or STATS) carrying its request ID and status. The data path keeps
 * running meanwhile: the table is lock-free for its readers.
 */
#ifndef QD_SIGNALING_H
#define QD_SIGNALING_H

#include <pthread.h>

/* Starts the control thread. Returns 0 or -1. */
int qd_signaling_start(pthread_t *tid);
/* Joins it (after qda.quit is set). */
void qd_signaling_stop(pthread_t tid);
/* Removes every entry (at shutdown, after the workers stopped). */
void qd_signaling_clear_all(void);

#endif
