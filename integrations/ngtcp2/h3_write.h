/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Writing a connection's packets, as qo-h3-server and qo-h3-client both do:
 * ngtcp2 packs nghttp3's stream data into packets, a batch of them goes
 * through the offload seam (h3_offload.h: sealed in process, or handed to
 * quicoff-dpdk), and what may then go by UDP leaves in one sendmmsg() (never
 * a datagram whose 1-RTT packet the offload did not take).
 */
#ifndef QO_H3_WRITE_H
#define QO_H3_WRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>

#include "h3_offload.h"

/* The largest UDP payload the programs send (settings.max_tx_udp_payload_size). */
#define QO_H3_MAX_UDP_PAYLOAD 1452

/* A connection's way out, built by the program for each call. */
struct qo_h3_out {
    ngtcp2_conn *conn;
    nghttp3_conn *h3; /* NULL until the handshake has completed */
    struct qo_offload *off;
    int fd;
    const struct sockaddr_storage *remote; /* NULL: fd is connected */
    socklen_t remotelen;
    bool *key_update_wanted; /* a key update starts (and this clears) once the handshake is done */
    /* Optional (key_update_every 0: none): a key update wanted every
     * key_update_every stream bytes sent, counted in *stream_bytes_sent. */
    uint64_t key_update_every;
    uint64_t *next_key_update, *stream_bytes_sent;
};

/* Writes what ngtcp2 and nghttp3 have to send (at most 256 packets). 0 ok,
 * -1: the connection must close. */
int qo_h3_write(const struct qo_h3_out *o);
/* Writes a CONNECTION_CLOSE with ccerr. */
void qo_h3_write_close(const struct qo_h3_out *o, const ngtcp2_connection_close_error *ccerr);

#endif
