/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qo-h3-server: a small HTTP/3 file server on ngtcp2 + GnuTLS + nghttp3
 * whose 1-RTT packet protection runs in quicoff: in this process
 * (--offload inproc), in a quicoff-dpdk over the host<->offload protocol
 * (--offload dpdk), or in ngtcp2 itself (--offload none). One code path: the
 * mode only decides what the crypto callbacks and the per-batch protect /
 * unprotect do (h3_offload.c, backends there and in h3_dpdk.c). One
 * connection at a time, one thread.
 *
 *   qo-h3-server [options] HOST PORT KEY CERT
 *     -d DIR                 serve files from DIR (GET by path)
 *     --offload none|inproc|dpdk
 *     --host-if IFNAME       dpdk: the interface cabled to quicoff-dpdk's host port
 *     --offload-mac MAC      dpdk: quicoff-dpdk's host-port MAC (default broadcast)
 *     --offload-silence-ms N dpdk: silence before the offload is asked if alive (500)
 *     --offload-trains on|off dpdk: runs of packets as DATA_TRAIN frames, as long as
 *                            the host interface's MTU allows (default on)
 *     --keylog FILE          TLS secrets, SSLKEYLOGFILE format (for tshark)
 *     --stats FILE           JSON counters and CPU time at exit
 *     --key-update-after N   the server starts a key update every N bytes sent
 *     --once                 exit after the first connection ends
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "h3_conn_cb.h"
#include "h3_dpdk.h"
#include "h3_offload.h"
#include "h3_tls.h"
#include "h3_write.h"

#define CID_LEN 16
#define RX_BUF 65536

struct stream {
    int64_t id;
    char path[1024];
    uint8_t *map; /* the file, mmapped: nghttp3 keeps pointers into it until acked */
    size_t size;
};

struct server {
    const char *docroot;
    const char *keylog_path;
    FILE *keylog;
    uint64_t key_update_every;
    bool once;
    int fd;
    struct sockaddr_storage local;
    socklen_t locallen;
    struct sockaddr_storage remote;
    socklen_t remotelen;
    gnutls_certificate_credentials_t cred;
    const char *priority;
    /* the connection */
    ngtcp2_conn *conn;
    struct qo_h3_tls tls;
    nghttp3_conn *h3;
    ngtcp2_cid scid;
    uint64_t stream_bytes_sent, next_key_update;
    bool key_update_wanted;
    uint8_t reset_secret[32];
    /* totals */
    uint64_t connections, bytes_served;
    struct qo_offload off;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* ------------------------------------------------------------------ TLS */

/* ------------------------------------------------------------- HTTP/3 */

static nghttp3_ssize read_data(nghttp3_conn *h3, int64_t stream_id, nghttp3_vec *vec,
                               size_t veccnt, uint32_t *pflags, void *conn_user_data,
                               void *stream_user_data)
{
    (void)h3;
    (void)stream_id;
    (void)conn_user_data;
    struct stream *st = stream_user_data;
    *pflags |= NGHTTP3_DATA_FLAG_EOF;
    if (veccnt == 0 || st->size == 0)
        return 0;
    vec[0].base = st->map;
    vec[0].len = st->size;
    return 1;
}

static int h3_begin_headers(nghttp3_conn *h3, int64_t stream_id, void *conn_user_data,
                            void *stream_user_data)
{
    (void)conn_user_data;
    (void)stream_user_data;
    struct stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    st->id = stream_id;
    nghttp3_conn_set_stream_user_data(h3, stream_id, st);
    return 0;
}

static int h3_recv_header(nghttp3_conn *h3, int64_t stream_id, int32_t token, nghttp3_rcbuf *name,
                          nghttp3_rcbuf *value, uint8_t flags, void *conn_user_data,
                          void *stream_user_data)
{
    (void)h3;
    (void)stream_id;
    (void)name;
    (void)flags;
    (void)conn_user_data;
    struct stream *st = stream_user_data;
    if (st && token == NGHTTP3_QPACK_TOKEN__PATH) {
        nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
        size_t n = v.len < sizeof(st->path) - 1 ? v.len : sizeof(st->path) - 1;
        memcpy(st->path, v.base, n);
        st->path[n] = 0;
    }
    return 0;
}

/* The request path as a file under the document root: no "..", no query. */
static int open_file(struct server *sv, struct stream *st)
{
    char *q = strchr(st->path, '?');
    if (q)
        *q = 0;
    if (st->path[0] != '/' || strstr(st->path, ".."))
        return -1;
    char full[2048];
    snprintf(full, sizeof(full), "%s%s", sv->docroot, st->path);
    int fd = open(full, O_RDONLY);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -1;
    }
    st->size = (size_t)sb.st_size;
    if (st->size > 0) {
        st->map = mmap(NULL, st->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (st->map == MAP_FAILED) {
            st->map = NULL;
            close(fd);
            return -1;
        }
    }
    close(fd);
    return 0;
}

static int h3_end_stream(nghttp3_conn *h3, int64_t stream_id, void *conn_user_data,
                         void *stream_user_data)
{
    struct server *sv = conn_user_data;
    struct stream *st = stream_user_data;
    if (!st)
        return 0;
    char len[32];
    bool found = open_file(sv, st) == 0;
    snprintf(len, sizeof(len), "%zu", found ? st->size : (size_t)0);
    const char *status = found ? "200" : "404";
    nghttp3_nv nva[] = {
        {(uint8_t *)":status", (uint8_t *)status, 7, 3, NGHTTP3_NV_FLAG_NONE},
        {(uint8_t *)"server", (uint8_t *)"qo-h3-server", 6, 12, NGHTTP3_NV_FLAG_NONE},
        {(uint8_t *)"content-length", (uint8_t *)len, 14, strlen(len), NGHTTP3_NV_FLAG_NONE},
    };
    nghttp3_data_reader dr = {.read_data = read_data};
    if (found)
        sv->bytes_served += st->size;
    if (nghttp3_conn_submit_response(h3, stream_id, nva, 3, found ? &dr : NULL) != 0)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    return 0;
}

static int h3_stream_close(nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code,
                           void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)app_error_code;
    struct server *sv = conn_user_data;
    struct stream *st = stream_user_data;
    if (st) {
        if (st->map)
            munmap(st->map, st->size);
        free(st);
    }
    if (ngtcp2_is_bidi_stream(stream_id))
        ngtcp2_conn_extend_max_streams_bidi(sv->conn, 1);
    return 0;
}

static int h3_acked_stream_data(nghttp3_conn *h3, int64_t stream_id, uint64_t datalen,
                                void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)stream_id;
    (void)datalen;
    (void)conn_user_data;
    (void)stream_user_data;
    return 0; /* the body is an mmap: nothing to free per chunk */
}

static int h3_deferred_consume(nghttp3_conn *h3, int64_t stream_id, size_t consumed,
                               void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)stream_user_data;
    struct server *sv = conn_user_data;
    ngtcp2_conn_extend_max_stream_offset(sv->conn, stream_id, consumed);
    ngtcp2_conn_extend_max_offset(sv->conn, consumed);
    return 0;
}

static int h3_stop_sending(nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code,
                           void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)stream_user_data;
    struct server *sv = conn_user_data;
    ngtcp2_conn_shutdown_stream_read(sv->conn, stream_id, app_error_code);
    return 0;
}

static int h3_reset_stream(nghttp3_conn *h3, int64_t stream_id, uint64_t app_error_code,
                           void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)stream_user_data;
    struct server *sv = conn_user_data;
    ngtcp2_conn_shutdown_stream_write(sv->conn, stream_id, app_error_code);
    return 0;
}

static int setup_h3(struct server *sv)
{
    if (sv->h3)
        return 0;
    nghttp3_callbacks cb = {
        .acked_stream_data = h3_acked_stream_data,
        .stream_close = h3_stream_close,
        .deferred_consume = h3_deferred_consume,
        .begin_headers = h3_begin_headers,
        .recv_header = h3_recv_header,
        .end_stream = h3_end_stream,
        .stop_sending = h3_stop_sending,
        .reset_stream = h3_reset_stream,
    };
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    settings.qpack_max_dtable_capacity = 4096;
    settings.qpack_blocked_streams = 100;
    if (nghttp3_conn_server_new(&sv->h3, &cb, &settings, nghttp3_mem_default(), sv) != 0)
        return -1;
    int64_t ctrl, qenc, qdec;
    if (ngtcp2_conn_open_uni_stream(sv->conn, &ctrl, NULL) != 0 ||
        nghttp3_conn_bind_control_stream(sv->h3, ctrl) != 0 ||
        ngtcp2_conn_open_uni_stream(sv->conn, &qenc, NULL) != 0 ||
        ngtcp2_conn_open_uni_stream(sv->conn, &qdec, NULL) != 0 ||
        nghttp3_conn_bind_qpack_streams(sv->h3, qenc, qdec) != 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------- ngtcp2 */

static int recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t offset,
                            const uint8_t *data, size_t datalen, void *user_data,
                            void *stream_user_data)
{
    (void)offset;
    (void)stream_user_data;
    struct server *sv = user_data;
    if (setup_h3(sv) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    nghttp3_ssize n = nghttp3_conn_read_stream(sv->h3, stream_id, data, datalen,
                                               flags & NGTCP2_STREAM_DATA_FLAG_FIN);
    if (n < 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    ngtcp2_conn_extend_max_stream_offset(conn, stream_id, (uint64_t)n);
    ngtcp2_conn_extend_max_offset(conn, (uint64_t)n);
    return 0;
}

static int acked_stream_data_offset(ngtcp2_conn *conn, int64_t stream_id, uint64_t offset,
                                    uint64_t datalen, void *user_data, void *stream_user_data)
{
    (void)conn;
    (void)offset;
    (void)stream_user_data;
    struct server *sv = user_data;
    if (sv->h3 && nghttp3_conn_add_ack_offset(sv->h3, stream_id, datalen) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                        uint64_t app_error_code, void *user_data, void *stream_user_data)
{
    (void)conn;
    (void)stream_user_data;
    struct server *sv = user_data;
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
        app_error_code = NGHTTP3_H3_NO_ERROR;
    if (sv->h3) {
        int rv = nghttp3_conn_close_stream(sv->h3, stream_id, app_error_code);
        if (rv != 0 && rv != NGHTTP3_ERR_STREAM_NOT_FOUND)
            return NGTCP2_ERR_CALLBACK_FAILURE;
    }
    return 0;
}

static int stream_reset(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size,
                        uint64_t app_error_code, void *user_data, void *stream_user_data)
{
    (void)conn;
    (void)final_size;
    (void)app_error_code;
    (void)stream_user_data;
    struct server *sv = user_data;
    if (sv->h3 && nghttp3_conn_shutdown_stream_read(sv->h3, stream_id) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int extend_max_stream_data(ngtcp2_conn *conn, int64_t stream_id, uint64_t max_data,
                                  void *user_data, void *stream_user_data)
{
    (void)conn;
    (void)max_data;
    (void)stream_user_data;
    struct server *sv = user_data;
    if (sv->h3 && nghttp3_conn_unblock_stream(sv->h3, stream_id) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int get_new_connection_id(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                                 void *user_data)
{
    (void)conn;
    struct server *sv = user_data;
    qo_h3_rand(cid->data, cidlen);
    cid->datalen = cidlen;
    if (ngtcp2_crypto_generate_stateless_reset_token(token, sv->reset_secret,
                                                     sizeof(sv->reset_secret), cid) != 0)
        return NGTCP2_ERR_CALLBACK_FAILURE;
    return 0;
}

static int handshake_completed(ngtcp2_conn *conn, void *user_data)
{
    (void)conn;
    return setup_h3(user_data) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static void conn_free(struct server *sv)
{
    if (sv->h3)
        nghttp3_conn_del(sv->h3);
    if (sv->conn)
        ngtcp2_conn_del(sv->conn);
    qo_offload_collect(&sv->off);
    qo_offload_reset_conn(&sv->off);
    sv->h3 = NULL;
    sv->conn = NULL;
    qo_h3_tls_end(&sv->tls); /* after the connection: ngtcp2 holds the session */
}

static int conn_new(struct server *sv, const uint8_t *data, size_t len,
                    const struct sockaddr *peer, socklen_t peerlen)
{
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, data, len) != 0)
        return -1;
    ngtcp2_callbacks cb = {
        .recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
        .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
        .handshake_completed = handshake_completed,
        .encrypt = qo_offload_encrypt,
        .decrypt = qo_offload_decrypt,
        .hp_mask = qo_offload_hp_mask,
        .recv_stream_data = recv_stream_data,
        .acked_stream_data_offset = acked_stream_data_offset,
        .stream_close = stream_close,
        .stream_reset = stream_reset,
        .extend_max_stream_data = extend_max_stream_data,
        .rand = qo_h3_rand_cb,
        .get_new_connection_id = get_new_connection_id,
        .update_key = qo_offload_update_key,
        .delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
        .delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
        .get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
        .version_negotiation = ngtcp2_crypto_version_negotiation_cb,
    };
    ngtcp2_settings settings;
    ngtcp2_settings_default(&settings);
    settings.initial_ts = qo_h3_now();
    settings.max_tx_udp_payload_size = QO_H3_MAX_UDP_PAYLOAD;
    settings.no_pmtud = 1;
    settings.cc_algo = NGTCP2_CC_ALGO_CUBIC;
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_stream_data_bidi_local = 256 * 1024;
    params.initial_max_stream_data_bidi_remote = 256 * 1024;
    params.initial_max_stream_data_uni = 256 * 1024;
    params.initial_max_data = 1024 * 1024;
    params.initial_max_streams_bidi = 100;
    params.initial_max_streams_uni = 3;
    params.max_idle_timeout = 30 * NGTCP2_SECONDS;
    params.stateless_reset_token_present = 0;
    params.active_connection_id_limit = 7;
    params.original_dcid = hd.dcid;

    sv->scid.datalen = CID_LEN;
    qo_h3_rand(sv->scid.data, CID_LEN);
    memcpy(&sv->remote, peer, peerlen);
    sv->remotelen = peerlen;
    /* the dpdk backend builds the TX entry's encapsulation from these */
    memcpy(&sv->off.local, &sv->local, sizeof(sv->local));
    memcpy(&sv->off.remote, &sv->remote, sizeof(sv->remote));
    ngtcp2_path path = {
        .local = {.addr = (struct sockaddr *)&sv->local, .addrlen = sv->locallen},
        .remote = {.addr = (struct sockaddr *)&sv->remote, .addrlen = sv->remotelen},
    };
    if (ngtcp2_conn_server_new(&sv->conn, &hd.scid, &sv->scid, &path, hd.version, &cb, &settings,
                               &params, NULL, sv) != 0)
        return -1;
    sv->tls.conn = &sv->conn;
    sv->tls.off = &sv->off;
    sv->tls.scid = &sv->scid;
    sv->tls.keylog = sv->keylog;
    if (qo_h3_tls_start(&sv->tls, true, sv->priority, sv->cred, NULL, "qo-h3-server") != 0) {
        conn_free(sv);
        return -1;
    }
    sv->connections++;
    sv->stream_bytes_sent = 0;
    sv->next_key_update = sv->key_update_every;
    return 0;
}

/* ------------------------------------------------------------------ I/O */

/* The connection's way out (h3_write.h): to the peer's address; a key
 * update every --key-update-after bytes sent. */
static struct qo_h3_out out_of(struct server *sv)
{
    return (struct qo_h3_out){.conn = sv->conn,
                              .h3 = sv->h3,
                              .off = &sv->off,
                              .fd = sv->fd,
                              .remote = &sv->remote,
                              .remotelen = sv->remotelen,
                              .key_update_wanted = &sv->key_update_wanted,
                              .key_update_every = sv->key_update_every,
                              .next_key_update = &sv->next_key_update,
                              .stream_bytes_sent = &sv->stream_bytes_sent};
}

static int write_conn(struct server *sv)
{
    struct qo_h3_out o = out_of(sv);
    return qo_h3_write(&o);
}

static void close_conn(struct server *sv)
{
    if (!ngtcp2_conn_is_in_closing_period(sv->conn) &&
        !ngtcp2_conn_is_in_draining_period(sv->conn)) {
        ngtcp2_connection_close_error ccerr;
        ngtcp2_connection_close_error_default(&ccerr);
        struct qo_h3_out o = out_of(sv);
        qo_h3_write_close(&o, &ccerr);
    }
    conn_free(sv);
}

static uint8_t rxbuf[QO_H3_BATCH][RX_BUF];

/* Hands one datagram (or one packet the offload opened) to ngtcp2; -1 when
 * the connection ended. */
static int read_pkt(struct server *sv, uint8_t *data, size_t len, const struct sockaddr *peer,
                    socklen_t peerlen, bool opened)
{
    ngtcp2_path path = {
        .local = {.addr = (struct sockaddr *)&sv->local, .addrlen = sv->locallen},
        .remote = {.addr = (struct sockaddr *)peer, .addrlen = peerlen},
    };
    ngtcp2_pkt_info pi = {0};
    if (opened)
        qo_offload_rx_opened(&sv->off, data, len);
    else
        qo_offload_rx_begin(&sv->off, data, len, CID_LEN);
    int rv = ngtcp2_conn_read_pkt(sv->conn, &path, &pi, data, len, qo_h3_now());
    qo_offload_rx_end(&sv->off);
    if (rv != 0) {
        if (rv == NGTCP2_ERR_DRAINING || rv == NGTCP2_ERR_DROP_CONN) {
            conn_free(sv);
            return -1;
        }
        if (rv == NGTCP2_ERR_CRYPTO)
            fprintf(stderr, "qo-h3-server: TLS alert %u\n", ngtcp2_conn_get_tls_alert(sv->conn));
        else
            fprintf(stderr, "qo-h3-server: read: %s\n", ngtcp2_strerror(rv));
        close_conn(sv);
        return -1;
    }
    return 0;
}

/* Reads a batch of datagrams; returns -1 when the connection ended. */
static int read_batch(struct server *sv)
{
    struct mmsghdr msgs[QO_H3_BATCH];
    struct iovec iov[QO_H3_BATCH];
    struct sockaddr_storage peers[QO_H3_BATCH];
    for (unsigned i = 0; i < QO_H3_BATCH; i++) {
        iov[i] = (struct iovec){.iov_base = rxbuf[i], .iov_len = RX_BUF};
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_name = &peers[i],
                                               .msg_namelen = sizeof(peers[i]),
                                               .msg_iov = &iov[i],
                                               .msg_iovlen = 1}};
    }
    int n = recvmmsg(sv->fd, msgs, QO_H3_BATCH, MSG_DONTWAIT, NULL);
    if (n <= 0)
        return 0;
    uint8_t *data[QO_H3_BATCH];
    size_t len[QO_H3_BATCH];
    for (int i = 0; i < n; i++) {
        data[i] = rxbuf[i];
        len[i] = msgs[i].msg_len;
    }
    /* one burst for the batch; datagrams that arrive while the keys are
     * being installed are unprotected one by one below */
    bool batch_unprotected = sv->off.active;
    qo_offload_unprotect(&sv->off, data, len, (unsigned)n, CID_LEN);
    for (int i = 0; i < n; i++) {
        if (!sv->conn) {
            if (conn_new(sv, data[i], len[i], (struct sockaddr *)&peers[i],
                         msgs[i].msg_hdr.msg_namelen) != 0)
                continue;
        }
        if (!batch_unprotected && sv->off.active)
            qo_offload_unprotect(&sv->off, &data[i], &len[i], 1, CID_LEN);
        if (len[i] == 0)
            continue;
        if (read_pkt(sv, data[i], len[i], (struct sockaddr *)&peers[i],
                     msgs[i].msg_hdr.msg_namelen, false) != 0)
            return -1;
    }
    return 0;
}

/* dpdk: reads the 1-RTT packets the offload opened (DATA_TO_HOST); the
 * host library handles answers and events on the way. -1: ended. */
static int read_offload(struct server *sv)
{
    uint8_t *pkt[QO_H3_BATCH];
    size_t len[QO_H3_BATCH];
    unsigned n = qo_dpdk_recv(&sv->off, pkt, len, QO_H3_BATCH);
    for (unsigned i = 0; i < n && sv->conn; i++) {
        /* the offload matched the packet by the connection's CID: its path
         * is the connection's (no migration, docs/ngtcp2.md) */
        if (read_pkt(sv, pkt[i], len[i], (struct sockaddr *)&sv->remote, sv->remotelen, true) != 0)
            return -1;
    }
    return 0;
}

static uint64_t bytes_in_flight(struct server *sv)
{
    if (!sv->conn)
        return 0;
    ngtcp2_conn_stat cs;
    ngtcp2_conn_get_conn_stat(sv->conn, &cs);
    return cs.bytes_in_flight;
}

static int serve(struct server *sv)
{
    for (;;) {
        if (stop_flag)
            break;
        int timeout = 1000;
        if (sv->conn) {
            ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(sv->conn), t = qo_h3_now();
            timeout = exp <= t ? 0 : (int)((exp - t + 999999) / 1000000);
            if (timeout > 1000)
                timeout = 1000;
        }
        bool dpdk = sv->off.mode == QO_OFFLOAD_DPDK;
        if (dpdk) {
            int t = qo_dpdk_timeout_ms(&sv->off);
            if (t >= 0 && t < timeout)
                timeout = t;
        }
        struct pollfd pfd[2] = {{.fd = sv->fd, .events = POLLIN},
                                {.fd = dpdk ? qo_dpdk_fd(&sv->off) : -1, .events = POLLIN}};
        int pr = poll(pfd, dpdk ? 2 : 1, timeout);
        if (pr < 0 && errno != EINTR)
            return -1;
        bool ended = false;
        if (pr > 0 && (pfd[0].revents & POLLIN))
            ended = read_batch(sv) < 0;
        if (dpdk && !ended && pr > 0 && (pfd[1].revents & POLLIN))
            ended = read_offload(sv) < 0;
        if (dpdk)
            qo_dpdk_tick(&sv->off, bytes_in_flight(sv) > 0);
        if (sv->conn) {
            ngtcp2_tstamp t = qo_h3_now();
            if (ngtcp2_conn_get_expiry(sv->conn) <= t) {
                int rv = ngtcp2_conn_handle_expiry(sv->conn, t);
                if (rv != 0) {
                    /* idle timeout or handshake timeout: the peer is gone */
                    conn_free(sv);
                    ended = true;
                }
            }
        }
        if (sv->conn && write_conn(sv) != 0) {
            close_conn(sv);
            ended = true;
        }
        if (ended && sv->once)
            break;
    }
    if (sv->conn)
        close_conn(sv);
    return 0;
}

static int bind_socket(struct server *sv, const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        fprintf(stderr, "qo-h3-server: cannot resolve %s %s\n", host, port);
        return -1;
    }
    sv->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (sv->fd < 0 || bind(sv->fd, res->ai_addr, res->ai_addrlen) != 0) {
        fprintf(stderr, "qo-h3-server: bind %s %s: %s\n", host, port, strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    int big = 8 << 20;
    setsockopt(sv->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    setsockopt(sv->fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    sv->locallen = sizeof(sv->local);
    getsockname(sv->fd, (struct sockaddr *)&sv->local, &sv->locallen);
    return 0;
}

static void write_stats(struct server *sv, const char *path)
{
    qo_offload_collect(&sv->off);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "qo-h3-server: %s: %s\n", path, strerror(errno));
        return;
    }
    const struct qo_offload_counters *c = &sv->off.c;
    /* DATA_* frames per 1-RTT packet handed to the offload: 1 without
     * trains, below 1 when trains formed; null when none was handed */
    char fpp[32] = "null";
    if (c->host_packets_handed)
        snprintf(fpp, sizeof(fpp), "%.4f",
                 (double)c->host_frames_sent / (double)c->host_packets_handed);
    fprintf(f,
            "{\"mode\": \"%s\", \"connections\": %" PRIu64 ", \"bytes_served\": %" PRIu64
            ", \"stack_1rtt_packets_sent\": %" PRIu64 ", \"stack_1rtt_packets_received\": %" PRIu64
            ", \"host_1rtt_aead_calls\": %" PRIu64 ", \"key_updates_s2c\": %" PRIu64
            ", \"key_updates_c2s\": %" PRIu64 ", \"update_key_calls\": %" PRIu64
            ", \"offload_tx_packets\": %" PRIu64 ", \"offload_rx_packets\": %" PRIu64
            ", \"offload_tx_failures\": %" PRIu64 ", \"offload_rx_failures\": %" PRIu64
            ", \"host_frames_sent\": %" PRIu64 ", \"host_packets_handed\": %" PRIu64
            ", \"frames_per_packet\": %s"
            ", \"fallbacks\": %" PRIu64 ", \"offload_refused\": %" PRIu64
            ", \"offload_lost\": %" PRIu64 ", \"offload_key_update_events\": %" PRIu64
            ", \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f}\n",
            qo_offload_mode_name(sv->off.mode), sv->connections, sv->bytes_served,
            c->stack_1rtt_sent, c->stack_1rtt_received, c->host_1rtt_aead_calls,
            c->key_updates_sent, c->key_updates_received, c->update_key_calls,
            c->offload_tx_packets, c->offload_rx_packets, c->offload_tx_failures,
            c->offload_rx_failures, c->host_frames_sent, c->host_packets_handed, fpp, c->fallbacks,
            c->offload_refused, c->offload_lost, c->offload_key_update_events,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    if (path)
        fclose(f);
}

static void usage(void)
{
    fprintf(stderr, "usage: qo-h3-server [-d DIR] [--offload none|inproc|dpdk] [--keylog FILE]\n"
                    "                    [--stats FILE] [--key-update-after BYTES] [--once]\n"
                    "                    [--ciphers PRIORITY] [--host-if IFNAME]\n"
                    "                    [--offload-mac MAC] [--offload-silence-ms MS]\n"
                    "                    [--offload-trains on|off]\n"
                    "                    HOST PORT KEY CERT\n"
                    "  --offload dpdk needs --host-if (the link to quicoff-dpdk's host port)\n");
}

int main(int argc, char **argv)
{
    static struct server sv;
    const char *stats_path = NULL, *mode_name = "none";
    struct qo_dpdk_config dc = {.silence_ms = 500};
    sv.docroot = ".";
    sv.priority = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
                  "+CHACHA20-POLY1305:+AES-128-CCM";
    static const struct option opts[] = {
        {"offload", required_argument, NULL, 'o'},
        {"keylog", required_argument, NULL, 'k'},
        {"stats", required_argument, NULL, 's'},
        {"key-update-after", required_argument, NULL, 'u'},
        {"once", no_argument, NULL, '1'},
        {"ciphers", required_argument, NULL, 'c'},
        QO_DPDK_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'd':
            sv.docroot = optarg;
            break;
        case 'o':
            mode_name = optarg;
            break;
        case 'k':
            sv.keylog_path = optarg;
            break;
        case 's':
            stats_path = optarg;
            break;
        case 'u':
            sv.key_update_every = strtoull(optarg, NULL, 10);
            break;
        case '1':
            sv.once = true;
            break;
        case 'c':
            sv.priority = optarg;
            break;
        default: {
            int taken = qo_dpdk_option(&dc, opt, optarg, "qo-h3-server");
            if (taken > 0)
                break;
            if (taken == 0)
                usage();
            return opt == 'h' ? 0 : 2;
        }
        }
    }
    if (argc - optind != 4) {
        usage();
        return 2;
    }
    int mode = qo_offload_mode_from_name(mode_name);
    if (mode < 0) {
        fprintf(stderr, "qo-h3-server: unknown --offload %s\n", mode_name);
        return 2;
    }
    if (mode == QO_OFFLOAD_DPDK && !dc.ifname) {
        fprintf(stderr, "qo-h3-server: --offload dpdk needs --host-if IFNAME\n");
        usage();
        return 2;
    }
    if (qo_offload_init(&sv.off, (enum qo_offload_mode)mode, CID_LEN) != 0)
        return 1;
    if (mode == QO_OFFLOAD_DPDK && qo_dpdk_open(&sv.off, &dc) != 0)
        return 1;
    qo_offload_set_current(&sv.off);
    if (sv.keylog_path && !(sv.keylog = fopen(sv.keylog_path, "a"))) {
        fprintf(stderr, "qo-h3-server: %s: %s\n", sv.keylog_path, strerror(errno));
        return 1;
    }
    qo_h3_rand(sv.reset_secret, sizeof(sv.reset_secret));
    if (gnutls_certificate_allocate_credentials(&sv.cred) != 0 ||
        gnutls_certificate_set_x509_key_file(sv.cred, argv[optind + 3], argv[optind + 2],
                                             GNUTLS_X509_FMT_PEM) != 0) {
        fprintf(stderr, "qo-h3-server: cannot load %s / %s\n", argv[optind + 2], argv[optind + 3]);
        return 1;
    }
    if (bind_socket(&sv, argv[optind], argv[optind + 1]) != 0)
        return 1;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    fprintf(stderr, "qo-h3-server: listening on %s %s, offload %s\n", argv[optind],
            argv[optind + 1], qo_offload_mode_name(sv.off.mode));
    int rv = serve(&sv);
    write_stats(&sv, stats_path);
    qo_offload_free(&sv.off);
    gnutls_certificate_free_credentials(sv.cred);
    if (sv.keylog)
        fclose(sv.keylog);
    close(sv.fd);
    return rv == 0 ? 0 : 1;
}
