/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The TLS side qo-h3-server and qo-h3-client share: a GnuTLS session set up
 * for ngtcp2 (ALPN h3), the secrets hook that lets ngtcp2 install each
 * level's keys and, at 1-RTT, hands the same secrets to the offload seam
 * (h3_offload.h), and the key log (SSLKEYLOGFILE format, for tshark).
 */
#ifndef QO_H3_TLS_H
#define QO_H3_TLS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "h3_offload.h"

struct qo_h3_tls {
    gnutls_session_t session;
    ngtcp2_crypto_conn_ref conn_ref; /* what ngtcp2's GnuTLS glue finds the connection by */
    ngtcp2_conn **conn;              /* the program's connection */
    struct qo_offload *off;          /* gets the 1-RTT secrets */
    const ngtcp2_cid *scid;          /* our CID: the offload's RX lookup key */
    FILE *keylog;                    /* NULL: no key log */
    /* The 1-RTT secrets until both have come and went to the offload (then
     * wiped), and the TX IV ngtcp2 derived (the seam reads full PNs off
     * nonces with it). */
    uint8_t app_rx_secret[64], app_tx_secret[64], app_tx_iv[64];
    bool have_rx, have_tx;
};

/* Starts the session of *t->conn (which must exist): server or client (then
 * with server_name as SNI). t->conn, t->off, t->scid and t->keylog are set
 * by the caller first. prog names the program in messages. 0 ok. */
int qo_h3_tls_start(struct qo_h3_tls *t, bool server, const char *priority,
                    gnutls_certificate_credentials_t cred, const char *server_name,
                    const char *prog);
/* Ends the session (after ngtcp2_conn_del) and wipes what secrets are left:
 * a connection that ended before both 1-RTT secrets came leaves one. */
void qo_h3_tls_end(struct qo_h3_tls *t);

#endif
