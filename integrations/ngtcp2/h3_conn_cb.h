/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What qo-h3-server and qo-h3-client both hand ngtcp2 whatever the
 * connection: the clock and random bytes (GnuTLS's generator).
 */
#ifndef QO_H3_CONN_CB_H
#define QO_H3_CONN_CB_H

#include <stddef.h>
#include <stdint.h>

#include <ngtcp2/ngtcp2.h>

/* CLOCK_MONOTONIC in ngtcp2's unit (nanoseconds). */
ngtcp2_tstamp qo_h3_now(void);
/* n random bytes; aborts when the generator fails (nothing safe is left). */
void qo_h3_rand(uint8_t *p, size_t n);
/* ngtcp2_callbacks.rand */
void qo_h3_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *ctx);

#endif
