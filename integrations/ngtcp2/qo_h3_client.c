/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qo-h3-client: a small HTTP/3 client on ngtcp2 + GnuTLS + nghttp3 that
 * downloads one URL path to a file, with the same offload seam as
 * qo-h3-server (h3_offload.c, h3_dpdk.c): --offload none|inproc|dpdk. With
 * both ends offloaded, ngtcp2 talks to ngtcp2 with neither host doing a
 * 1-RTT AEAD. One connection, one thread. The server's certificate is not
 * verified (a test client).
 *
 *   qo-h3-client [options] HOST PORT PATH
 *     -o FILE                where the body goes (default: discarded)
 *     --offload none|inproc|dpdk, --host-if IFNAME, --offload-mac MAC,
 *     --offload-silence-ms N, --offload-trains on|off as qo-h3-server
 *     --keylog FILE, --stats FILE, --key-update-after N (bytes received)
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
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

struct client {
    const char *host, *path;
    FILE *out, *keylog;
    uint64_t key_update_every, next_key_update;
    bool key_update_wanted, done;
    int status; /* HTTP status, 0 until the headers came */
    int fd;
    struct sockaddr_storage local, remote;
    socklen_t locallen, remotelen;
    gnutls_certificate_credentials_t cred;
    const char *priority;
    ngtcp2_conn *conn;
    struct qo_h3_tls tls;
    nghttp3_conn *h3;
    ngtcp2_cid scid;
    uint64_t body_bytes;
    struct qo_offload off;
};

/* ------------------------------------------------------------------ TLS */

/* ------------------------------------------------------------- HTTP/3 */

static int h3_recv_data(nghttp3_conn *h3, int64_t stream_id, const uint8_t *data, size_t datalen,
                        void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)stream_user_data;
    struct client *cl = conn_user_data;
    if (cl->out && fwrite(data, 1, datalen, cl->out) != datalen)
        return NGHTTP3_ERR_CALLBACK_FAILURE;
    cl->body_bytes += datalen;
    ngtcp2_conn_extend_max_stream_offset(cl->conn, stream_id, datalen);
    ngtcp2_conn_extend_max_offset(cl->conn, datalen);
    if (cl->key_update_every && cl->body_bytes >= cl->next_key_update) {
        cl->key_update_wanted = true;
        cl->next_key_update += cl->key_update_every;
    }
    return 0;
}

static int h3_deferred_consume(nghttp3_conn *h3, int64_t stream_id, size_t consumed,
                               void *conn_user_data, void *stream_user_data)
{
    (void)h3;
    (void)stream_user_data;
    struct client *cl = conn_user_data;
    ngtcp2_conn_extend_max_stream_offset(cl->conn, stream_id, consumed);
    ngtcp2_conn_extend_max_offset(cl->conn, consumed);
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
    (void)stream_user_data;
    struct client *cl = conn_user_data;
    if (token == NGHTTP3_QPACK_TOKEN__STATUS) {
        nghttp3_vec v = nghttp3_rcbuf_get_buf(value);
        char s[4] = {0};
        memcpy(s, v.base, v.len < 3 ? v.len : 3);
        cl->status = atoi(s);
    }
    return 0;
}

static int h3_end_stream(nghttp3_conn *h3, int64_t stream_id, void *conn_user_data,
                         void *stream_user_data)
{
    (void)h3;
    (void)stream_id;
    (void)stream_user_data;
    ((struct client *)conn_user_data)->done = true;
    return 0;
}

static int setup_h3(struct client *cl)
{
    nghttp3_callbacks cb = {
        .recv_data = h3_recv_data,
        .deferred_consume = h3_deferred_consume,
        .recv_header = h3_recv_header,
        .end_stream = h3_end_stream,
    };
    nghttp3_settings settings;
    nghttp3_settings_default(&settings);
    if (nghttp3_conn_client_new(&cl->h3, &cb, &settings, nghttp3_mem_default(), cl) != 0)
        return -1;
    int64_t ctrl, qenc, qdec, sid;
    if (ngtcp2_conn_open_uni_stream(cl->conn, &ctrl, NULL) != 0 ||
        nghttp3_conn_bind_control_stream(cl->h3, ctrl) != 0 ||
        ngtcp2_conn_open_uni_stream(cl->conn, &qenc, NULL) != 0 ||
        ngtcp2_conn_open_uni_stream(cl->conn, &qdec, NULL) != 0 ||
        nghttp3_conn_bind_qpack_streams(cl->h3, qenc, qdec) != 0 ||
        ngtcp2_conn_open_bidi_stream(cl->conn, &sid, NULL) != 0)
        return -1;
    nghttp3_nv nva[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, NGHTTP3_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, NGHTTP3_NV_FLAG_NONE},
        {(uint8_t *)":authority", (uint8_t *)cl->host, 10, strlen(cl->host), NGHTTP3_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)cl->path, 5, strlen(cl->path), NGHTTP3_NV_FLAG_NONE},
    };
    return nghttp3_conn_submit_request(cl->h3, sid, nva, 4, NULL, NULL) == 0 ? 0 : -1;
}

/* ------------------------------------------------------------- ngtcp2 */

static int recv_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t offset,
                            const uint8_t *data, size_t datalen, void *user_data,
                            void *stream_user_data)
{
    (void)offset;
    (void)stream_user_data;
    struct client *cl = user_data;
    nghttp3_ssize n = nghttp3_conn_read_stream(cl->h3, stream_id, data, datalen,
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
    struct client *cl = user_data;
    return nghttp3_conn_add_ack_offset(cl->h3, stream_id, datalen) == 0
               ? 0
               : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int stream_close(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id,
                        uint64_t app_error_code, void *user_data, void *stream_user_data)
{
    (void)conn;
    (void)stream_user_data;
    struct client *cl = user_data;
    if (!(flags & NGTCP2_STREAM_CLOSE_FLAG_APP_ERROR_CODE_SET))
        app_error_code = NGHTTP3_H3_NO_ERROR;
    int rv = nghttp3_conn_close_stream(cl->h3, stream_id, app_error_code);
    return rv == 0 || rv == NGHTTP3_ERR_STREAM_NOT_FOUND ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int extend_max_stream_data(ngtcp2_conn *conn, int64_t stream_id, uint64_t max_data,
                                  void *user_data, void *stream_user_data)
{
    (void)conn;
    (void)max_data;
    (void)stream_user_data;
    struct client *cl = user_data;
    return nghttp3_conn_unblock_stream(cl->h3, stream_id) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int get_new_connection_id(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen,
                                 void *user_data)
{
    (void)conn;
    (void)user_data;
    qo_h3_rand(cid->data, cidlen);
    cid->datalen = cidlen;
    qo_h3_rand(token, NGTCP2_STATELESS_RESET_TOKENLEN);
    return 0;
}

static int handshake_completed(ngtcp2_conn *conn, void *user_data)
{
    (void)conn;
    return setup_h3(user_data) == 0 ? 0 : NGTCP2_ERR_CALLBACK_FAILURE;
}

static int conn_new(struct client *cl)
{
    ngtcp2_callbacks cb = {
        .client_initial = ngtcp2_crypto_client_initial_cb,
        .recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
        .handshake_completed = handshake_completed,
        .encrypt = qo_offload_encrypt,
        .decrypt = qo_offload_decrypt,
        .hp_mask = qo_offload_hp_mask,
        .recv_stream_data = recv_stream_data,
        .acked_stream_data_offset = acked_stream_data_offset,
        .stream_close = stream_close,
        .extend_max_stream_data = extend_max_stream_data,
        .recv_retry = ngtcp2_crypto_recv_retry_cb,
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
    ngtcp2_transport_params params;
    ngtcp2_transport_params_default(&params);
    params.initial_max_stream_data_bidi_local = 1024 * 1024;
    params.initial_max_stream_data_uni = 256 * 1024;
    params.initial_max_data = 4 * 1024 * 1024;
    params.initial_max_streams_uni = 3;
    params.max_idle_timeout = 30 * NGTCP2_SECONDS;
    ngtcp2_cid dcid;
    dcid.datalen = 18;
    qo_h3_rand(dcid.data, dcid.datalen);
    cl->scid.datalen = CID_LEN;
    qo_h3_rand(cl->scid.data, CID_LEN);
    /* the dpdk backend builds the TX entry's encapsulation from these */
    memcpy(&cl->off.local, &cl->local, sizeof(cl->local));
    memcpy(&cl->off.remote, &cl->remote, sizeof(cl->remote));
    ngtcp2_path path = {
        .local = {.addr = (struct sockaddr *)&cl->local, .addrlen = cl->locallen},
        .remote = {.addr = (struct sockaddr *)&cl->remote, .addrlen = cl->remotelen},
    };
    if (ngtcp2_conn_client_new(&cl->conn, &dcid, &cl->scid, &path, NGTCP2_PROTO_VER_V1, &cb,
                               &settings, &params, NULL, cl) != 0)
        return -1;
    cl->tls.conn = &cl->conn;
    cl->tls.off = &cl->off;
    cl->tls.scid = &cl->scid;
    cl->tls.keylog = cl->keylog;
    return qo_h3_tls_start(&cl->tls, false, cl->priority, cl->cred, "localhost", "qo-h3-client");
}

/* ------------------------------------------------------------------ I/O */

/* The connection's way out (h3_write.h): a connected socket; the client's
 * key updates follow bytes received (run), not sent. */
static struct qo_h3_out out_of(struct client *cl)
{
    return (struct qo_h3_out){.conn = cl->conn,
                              .h3 = cl->h3,
                              .off = &cl->off,
                              .fd = cl->fd,
                              .key_update_wanted = &cl->key_update_wanted};
}

static int write_conn(struct client *cl)
{
    struct qo_h3_out o = out_of(cl);
    return qo_h3_write(&o);
}

static int read_pkt(struct client *cl, uint8_t *data, size_t len, bool opened)
{
    ngtcp2_path path = {
        .local = {.addr = (struct sockaddr *)&cl->local, .addrlen = cl->locallen},
        .remote = {.addr = (struct sockaddr *)&cl->remote, .addrlen = cl->remotelen},
    };
    ngtcp2_pkt_info pi = {0};
    if (opened)
        qo_offload_rx_opened(&cl->off, data, len);
    else
        qo_offload_rx_begin(&cl->off, data, len, CID_LEN);
    int rv = ngtcp2_conn_read_pkt(cl->conn, &path, &pi, data, len, qo_h3_now());
    qo_offload_rx_end(&cl->off);
    if (rv != 0) {
        fprintf(stderr, "qo-h3-client: read: %s\n", ngtcp2_strerror(rv));
        return -1;
    }
    return 0;
}

static uint8_t rxbuf[QO_H3_BATCH][RX_BUF];

static int read_udp(struct client *cl)
{
    struct mmsghdr msgs[QO_H3_BATCH];
    struct iovec iov[QO_H3_BATCH];
    for (unsigned i = 0; i < QO_H3_BATCH; i++) {
        iov[i] = (struct iovec){.iov_base = rxbuf[i], .iov_len = RX_BUF};
        msgs[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    int n = recvmmsg(cl->fd, msgs, QO_H3_BATCH, MSG_DONTWAIT, NULL);
    if (n <= 0)
        return 0;
    uint8_t *data[QO_H3_BATCH];
    size_t len[QO_H3_BATCH];
    for (int i = 0; i < n; i++) {
        data[i] = rxbuf[i];
        len[i] = msgs[i].msg_len;
    }
    bool batch_unprotected = cl->off.active;
    qo_offload_unprotect(&cl->off, data, len, (unsigned)n, CID_LEN);
    for (int i = 0; i < n; i++) {
        if (!batch_unprotected && cl->off.active)
            qo_offload_unprotect(&cl->off, &data[i], &len[i], 1, CID_LEN);
        if (len[i] > 0 && read_pkt(cl, data[i], len[i], false) != 0)
            return -1;
    }
    return 0;
}

static int read_offload(struct client *cl)
{
    uint8_t *pkt[QO_H3_BATCH];
    size_t len[QO_H3_BATCH];
    unsigned n = qo_dpdk_recv(&cl->off, pkt, len, QO_H3_BATCH);
    for (unsigned i = 0; i < n; i++)
        if (read_pkt(cl, pkt[i], len[i], true) != 0)
            return -1;
    return 0;
}

static void close_conn(struct client *cl)
{
    ngtcp2_connection_close_error ccerr;
    ngtcp2_connection_close_error_set_application_error(&ccerr, NGHTTP3_H3_NO_ERROR, NULL, 0);
    struct qo_h3_out o = out_of(cl);
    qo_h3_write_close(&o, &ccerr);
}

static int run(struct client *cl)
{
    if (write_conn(cl) != 0)
        return -1;
    while (!cl->done) {
        ngtcp2_tstamp exp = ngtcp2_conn_get_expiry(cl->conn), t = qo_h3_now();
        int timeout = exp <= t ? 0 : (int)((exp - t + 999999) / 1000000);
        if (timeout > 1000)
            timeout = 1000;
        bool dpdk = cl->off.mode == QO_OFFLOAD_DPDK;
        if (dpdk) {
            int d = qo_dpdk_timeout_ms(&cl->off);
            if (d >= 0 && d < timeout)
                timeout = d;
        }
        struct pollfd pfd[2] = {{.fd = cl->fd, .events = POLLIN},
                                {.fd = dpdk ? qo_dpdk_fd(&cl->off) : -1, .events = POLLIN}};
        int pr = poll(pfd, dpdk ? 2 : 1, timeout);
        if (pr < 0 && errno != EINTR)
            return -1;
        if (pr > 0 && (pfd[0].revents & POLLIN) && read_udp(cl) != 0)
            return -1;
        if (dpdk && pr > 0 && (pfd[1].revents & POLLIN) && read_offload(cl) != 0)
            return -1;
        if (dpdk) {
            ngtcp2_conn_stat cs;
            ngtcp2_conn_get_conn_stat(cl->conn, &cs);
            /* a download: the peer sends while the request is open */
            qo_dpdk_tick(&cl->off, cs.bytes_in_flight > 0 || (cl->h3 && !cl->done));
        }
        t = qo_h3_now();
        if (ngtcp2_conn_get_expiry(cl->conn) <= t && ngtcp2_conn_handle_expiry(cl->conn, t) != 0)
            return -1; /* idle or handshake timeout */
        if (write_conn(cl) != 0)
            return -1;
    }
    close_conn(cl);
    return 0;
}

static int connect_socket(struct client *cl, const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0) {
        fprintf(stderr, "qo-h3-client: cannot resolve %s %s\n", host, port);
        return -1;
    }
    cl->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (cl->fd < 0 || connect(cl->fd, res->ai_addr, res->ai_addrlen) != 0) {
        fprintf(stderr, "qo-h3-client: connect %s %s: %s\n", host, port, strerror(errno));
        freeaddrinfo(res);
        return -1;
    }
    memcpy(&cl->remote, res->ai_addr, res->ai_addrlen);
    cl->remotelen = res->ai_addrlen;
    freeaddrinfo(res);
    int big = 8 << 20;
    setsockopt(cl->fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    cl->locallen = sizeof(cl->local);
    getsockname(cl->fd, (struct sockaddr *)&cl->local, &cl->locallen);
    return 0;
}

static void write_stats(struct client *cl, const char *path)
{
    qo_offload_collect(&cl->off);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f)
        return;
    const struct qo_offload_counters *c = &cl->off.c;
    /* DATA_* frames per 1-RTT packet handed to the offload: 1 without
     * trains, below 1 when trains formed; null when none was handed */
    char fpp[32] = "null";
    if (c->host_packets_handed)
        snprintf(fpp, sizeof(fpp), "%.4f",
                 (double)c->host_frames_sent / (double)c->host_packets_handed);
    fprintf(f,
            "{\"mode\": \"%s\", \"status\": %d, \"bytes\": %" PRIu64
            ", \"stack_1rtt_packets_sent\": %" PRIu64 ", \"stack_1rtt_packets_received\": %" PRIu64
            ", \"host_1rtt_aead_calls\": %" PRIu64 ", \"key_updates_c2s\": %" PRIu64
            ", \"key_updates_s2c\": %" PRIu64 ", \"offload_tx_packets\": %" PRIu64
            ", \"offload_rx_packets\": %" PRIu64 ", \"host_frames_sent\": %" PRIu64
            ", \"host_packets_handed\": %" PRIu64 ", \"frames_per_packet\": %s"
            ", \"fallbacks\": %" PRIu64 ", \"cpu_user_s\": %.6f, \"cpu_sys_s\": %.6f}\n",
            qo_offload_mode_name(cl->off.mode), cl->status, cl->body_bytes, c->stack_1rtt_sent,
            c->stack_1rtt_received, c->host_1rtt_aead_calls, c->key_updates_sent,
            c->key_updates_received, c->offload_tx_packets, c->offload_rx_packets,
            c->host_frames_sent, c->host_packets_handed, fpp, c->fallbacks,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
    if (path)
        fclose(f);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: qo-h3-client [-o FILE] [--offload none|inproc|dpdk] [--host-if IFNAME]\n"
            "                    [--offload-mac MAC] [--offload-silence-ms MS]\n"
            "                    [--offload-trains on|off]\n"
            "                    [--keylog FILE] [--stats FILE] [--key-update-after BYTES]\n"
            "                    [--ciphers PRIORITY] HOST PORT PATH\n");
}

int main(int argc, char **argv)
{
    static struct client cl;
    const char *stats_path = NULL, *mode_name = "none", *out_path = NULL, *keylog_path = NULL;
    struct qo_dpdk_config dc = {.silence_ms = 500};
    cl.priority = "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:"
                  "+CHACHA20-POLY1305:+AES-128-CCM";
    static const struct option opts[] = {
        {"offload", required_argument, NULL, 'O'},
        {"keylog", required_argument, NULL, 'k'},
        {"stats", required_argument, NULL, 's'},
        {"key-update-after", required_argument, NULL, 'u'},
        {"ciphers", required_argument, NULL, 'c'},
        QO_DPDK_LONG_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (opt) {
        case 'o':
            out_path = optarg;
            break;
        case 'O':
            mode_name = optarg;
            break;
        case 'k':
            keylog_path = optarg;
            break;
        case 's':
            stats_path = optarg;
            break;
        case 'u':
            cl.key_update_every = strtoull(optarg, NULL, 10);
            cl.next_key_update = cl.key_update_every;
            break;
        case 'c':
            cl.priority = optarg;
            break;
        default: {
            int taken = qo_dpdk_option(&dc, opt, optarg, "qo-h3-client");
            if (taken > 0)
                break;
            if (taken == 0)
                usage();
            return opt == 'h' ? 0 : 2;
        }
        }
    }
    if (argc - optind != 3) {
        usage();
        return 2;
    }
    int mode = qo_offload_mode_from_name(mode_name);
    if (mode < 0 || (mode == QO_OFFLOAD_DPDK && !dc.ifname)) {
        fprintf(stderr, "qo-h3-client: --offload %s%s\n", mode_name,
                mode < 0 ? ": unknown" : " needs --host-if IFNAME");
        return 2;
    }
    cl.host = argv[optind];
    cl.path = argv[optind + 2];
    if (qo_offload_init(&cl.off, (enum qo_offload_mode)mode, CID_LEN) != 0)
        return 1;
    if (mode == QO_OFFLOAD_DPDK && qo_dpdk_open(&cl.off, &dc) != 0)
        return 1;
    qo_offload_set_current(&cl.off);
    if ((out_path && !(cl.out = fopen(out_path, "wb"))) ||
        (keylog_path && !(cl.keylog = fopen(keylog_path, "a")))) {
        fprintf(stderr, "qo-h3-client: %s: %s\n", out_path, strerror(errno));
        return 1;
    }
    if (gnutls_certificate_allocate_credentials(&cl.cred) != 0)
        return 1;
    int rv = 1;
    if (connect_socket(&cl, argv[optind], argv[optind + 1]) == 0 && conn_new(&cl) == 0)
        rv = run(&cl) == 0 && cl.status == 200 ? 0 : 1;
    if (rv != 0)
        fprintf(stderr, "qo-h3-client: download failed (HTTP status %d)\n", cl.status);
    qo_offload_reset_conn(&cl.off); /* dpdk: QUERY (the counts) and REMOVE of the entries */
    write_stats(&cl, stats_path);
    if (cl.h3)
        nghttp3_conn_del(cl.h3);
    qo_offload_free(&cl.off);
    if (cl.conn)
        ngtcp2_conn_del(cl.conn);
    qo_h3_tls_end(&cl.tls);
    gnutls_certificate_free_credentials(cl.cred);
    if (cl.out)
        fclose(cl.out);
    if (cl.keylog)
        fclose(cl.keylog);
    close(cl.fd);
    return rv;
}
