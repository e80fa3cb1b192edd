/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a connection's packets (h3_write.h). */
#include "h3_write.h"

#include <errno.h>

#include "h3_conn_cb.h"

/* One packet buffer per datagram of a batch; one connection, one thread. */
static uint8_t txbuf[QO_H3_BATCH][QO_H3_MAX_UDP_PAYLOAD];

/* The batch through the offload seam, then what may be sent by UDP. */
static void flush(const struct qo_h3_out *o, struct qo_tx_batch *b)
{
    if (b->n == 0)
        return;
    qo_offload_protect(o->off, b);
    struct mmsghdr msgs[QO_H3_BATCH];
    struct iovec iov[QO_H3_BATCH];
    unsigned m = 0;
    for (unsigned i = 0; i < b->n; i++) {
        /* len 0: the whole datagram went to the offload (dpdk) */
        if (!b->ok[i] || b->len[i] == 0)
            continue;
        iov[m] = (struct iovec){.iov_base = b->data[i], .iov_len = b->len[i]};
        msgs[m] = (struct mmsghdr){.msg_hdr = {.msg_name = (void *)o->remote,
                                               .msg_namelen = o->remote ? o->remotelen : 0,
                                               .msg_iov = &iov[m],
                                               .msg_iovlen = 1}};
        m++;
    }
    unsigned sent = 0;
    while (sent < m) {
        int r = sendmmsg(o->fd, msgs + sent, m - sent, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            break; /* EAGAIN / ENOBUFS: ngtcp2 treats them as lost */
        }
        sent += (unsigned)r;
    }
    b->n = 0;
}

static void count_stream_bytes(const struct qo_h3_out *o, ngtcp2_ssize n)
{
    if (o->stream_bytes_sent)
        *o->stream_bytes_sent += (uint64_t)n;
}

int qo_h3_write(const struct qo_h3_out *o)
{
    struct qo_tx_batch b = {0};
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    ngtcp2_tstamp ts = qo_h3_now();
    for (unsigned budget = 0; budget < 256;) {
        if (*o->key_update_wanted && ngtcp2_conn_get_handshake_completed(o->conn) &&
            ngtcp2_conn_initiate_key_update(o->conn, ts) == 0)
            *o->key_update_wanted = false;
        int64_t stream_id = -1;
        int fin = 0;
        nghttp3_vec vec[16];
        nghttp3_ssize veccnt = 0;
        if (o->h3 && ngtcp2_conn_get_max_data_left(o->conn)) {
            veccnt = nghttp3_conn_writev_stream(o->h3, &stream_id, &fin, vec, 16);
            if (veccnt < 0)
                return -1;
        }
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_MORE | (fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0);
        ngtcp2_ssize ndatalen = -1;
        uint8_t *buf = txbuf[b.n];
        qo_offload_tx_begin(o->off);
        ngtcp2_ssize nwrite = ngtcp2_conn_writev_stream(o->conn, &ps.path, &pi, buf,
                                                        QO_H3_MAX_UDP_PAYLOAD, &ndatalen, flags,
                                                        stream_id, (const ngtcp2_vec *)vec,
                                                        (size_t)veccnt, ts);
        if (nwrite < 0) {
            switch (nwrite) {
            case NGTCP2_ERR_STREAM_DATA_BLOCKED:
                nghttp3_conn_block_stream(o->h3, stream_id);
                continue;
            case NGTCP2_ERR_STREAM_SHUT_WR:
                nghttp3_conn_shutdown_stream_write(o->h3, stream_id);
                continue;
            case NGTCP2_ERR_WRITE_MORE:
                if (nghttp3_conn_add_write_offset(o->h3, stream_id, (size_t)ndatalen) != 0)
                    return -1;
                count_stream_bytes(o, ndatalen);
                continue;
            default:
                flush(o, &b);
                return -1;
            }
        }
        if (ndatalen >= 0) {
            if (nghttp3_conn_add_write_offset(o->h3, stream_id, (size_t)ndatalen) != 0)
                return -1;
            count_stream_bytes(o, ndatalen);
        }
        /* here, between packets, not inside a coalesced one (WRITE_MORE) */
        if (o->key_update_every && *o->stream_bytes_sent >= *o->next_key_update) {
            *o->key_update_wanted = true;
            *o->next_key_update += o->key_update_every;
        }
        if (nwrite == 0)
            break;
        qo_offload_tx_end(o->off, &b, buf, (size_t)nwrite);
        budget++;
        if (b.n == QO_H3_BATCH)
            flush(o, &b);
    }
    flush(o, &b);
    ngtcp2_conn_update_pkt_tx_time(o->conn, ts);
    return 0;
}

void qo_h3_write_close(const struct qo_h3_out *o, const ngtcp2_connection_close_error *ccerr)
{
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    struct qo_tx_batch b = {0};
    qo_offload_tx_begin(o->off);
    ngtcp2_ssize n = ngtcp2_conn_write_connection_close(o->conn, &ps.path, &pi, txbuf[0],
                                                        QO_H3_MAX_UDP_PAYLOAD, ccerr, qo_h3_now());
    if (n > 0) {
        qo_offload_tx_end(o->off, &b, txbuf[0], (size_t)n);
        flush(o, &b);
    }
}
