/* SPDX-License-Identifier: Apache-2.0 */
/* ngtcp2 callbacks both HTTP/3 programs share (h3_conn_cb.h). */
#include "h3_conn_cb.h"

#include <stdlib.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

ngtcp2_tstamp qo_h3_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (ngtcp2_tstamp)ts.tv_sec * NGTCP2_SECONDS + (ngtcp2_tstamp)ts.tv_nsec;
}

void qo_h3_rand(uint8_t *p, size_t n)
{
    if (gnutls_rnd(GNUTLS_RND_RANDOM, p, n) != 0)
        abort(); /* no randomness: nothing safe left to do */
}

void qo_h3_rand_cb(uint8_t *dest, size_t destlen, const ngtcp2_rand_ctx *ctx)
{
    (void)ctx;
    qo_h3_rand(dest, destlen);
}
