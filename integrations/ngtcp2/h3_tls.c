/* SPDX-License-Identifier: Apache-2.0 */
/* The TLS side of qo-h3-server and qo-h3-client (h3_tls.h). */
#include "h3_tls.h"

#include <string.h>

#include <gnutls/crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
    return *((struct qo_h3_tls *)ref->user_data)->conn;
}

/* GnuTLS hands over each level's secrets here. ngtcp2 installs them as its
 * crypto library would; at 1-RTT the offload gets the same secrets (its TX
 * entry keyed by the peer's CID, its RX entry by ours). */
static int secret_cb(gnutls_session_t session, gnutls_record_encryption_level_t glevel,
                     const void *rx_secret, const void *tx_secret, size_t secretlen)
{
    ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
    struct qo_h3_tls *t = ref->user_data;
    ngtcp2_conn *conn = *t->conn;
    ngtcp2_crypto_level level = ngtcp2_crypto_gnutls_from_gnutls_record_encryption_level(glevel);
    bool app = level == NGTCP2_CRYPTO_LEVEL_APPLICATION;
    if (secretlen > sizeof(t->app_rx_secret))
        return -1;
    if (rx_secret) {
        if (ngtcp2_crypto_derive_and_install_rx_key(conn, NULL, NULL, NULL, level, rx_secret,
                                                    secretlen) != 0)
            return -1;
        if (app) {
            memcpy(t->app_rx_secret, rx_secret, secretlen);
            t->have_rx = true;
        }
    }
    if (tx_secret) {
        uint8_t *iv = app ? t->app_tx_iv : NULL;
        if (ngtcp2_crypto_derive_and_install_tx_key(conn, NULL, iv, NULL, level, tx_secret,
                                                    secretlen) != 0)
            return -1;
        if (app) {
            memcpy(t->app_tx_secret, tx_secret, secretlen);
            t->have_tx = true;
        }
    }
    if (app && t->have_rx && t->have_tx && !t->off->active) {
        int rv = qo_offload_install(t->off, (int)gnutls_cipher_get(session),
                                    ngtcp2_conn_get_negotiated_version(conn), t->app_rx_secret,
                                    t->app_tx_secret, secretlen, t->app_tx_iv, t->scid,
                                    ngtcp2_conn_get_dcid(conn));
        gnutls_memset(t->app_rx_secret, 0, sizeof(t->app_rx_secret));
        gnutls_memset(t->app_tx_secret, 0, sizeof(t->app_tx_secret));
        if (rv != 0)
            return -1;
    }
    return 0;
}

static int keylog_cb(gnutls_session_t session, const char *label, const gnutls_datum_t *secret)
{
    ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
    struct qo_h3_tls *t = ref->user_data;
    if (!t->keylog)
        return 0;
    gnutls_datum_t crandom, srandom;
    gnutls_session_get_random(session, &crandom, &srandom);
    fprintf(t->keylog, "%s ", label);
    for (unsigned i = 0; i < crandom.size; i++)
        fprintf(t->keylog, "%02x", crandom.data[i]);
    fputc(' ', t->keylog);
    for (unsigned i = 0; i < secret->size; i++)
        fprintf(t->keylog, "%02x", secret->data[i]);
    fputc('\n', t->keylog);
    fflush(t->keylog);
    return 0;
}

int qo_h3_tls_start(struct qo_h3_tls *t, bool server, const char *priority,
                    gnutls_certificate_credentials_t cred, const char *server_name,
                    const char *prog)
{
    if (gnutls_init(&t->session, server ? GNUTLS_SERVER : GNUTLS_CLIENT) != 0) {
        t->session = NULL;
        return -1;
    }
    const char *err = NULL;
    if (gnutls_priority_set_direct(t->session, priority, &err) != 0) {
        fprintf(stderr, "%s: priority string error at %s\n", prog, err ? err : "?");
        return -1;
    }
    if ((server ? ngtcp2_crypto_gnutls_configure_server_session(t->session)
                : ngtcp2_crypto_gnutls_configure_client_session(t->session)) != 0)
        return -1;
    /* after ngtcp2's configuration, which sets its own secret function */
    gnutls_handshake_set_secret_function(t->session, secret_cb);
    gnutls_session_set_keylog_function(t->session, keylog_cb);
    t->conn_ref.get_conn = get_conn;
    t->conn_ref.user_data = t;
    gnutls_session_set_ptr(t->session, &t->conn_ref);
    if (gnutls_credentials_set(t->session, GNUTLS_CRD_CERTIFICATE, cred) != 0)
        return -1;
    gnutls_datum_t alpn = {.data = (unsigned char *)"h3", .size = 2};
    if (gnutls_alpn_set_protocols(t->session, &alpn, 1, GNUTLS_ALPN_MANDATORY) != 0)
        return -1;
    if (server_name)
        gnutls_server_name_set(t->session, GNUTLS_NAME_DNS, server_name, strlen(server_name));
    ngtcp2_conn_set_tls_native_handle(*t->conn, t->session);
    return 0;
}

void qo_h3_tls_end(struct qo_h3_tls *t)
{
    if (t->session)
        gnutls_deinit(t->session);
    t->session = NULL;
    gnutls_memset(t->app_rx_secret, 0, sizeof(t->app_rx_secret));
    gnutls_memset(t->app_tx_secret, 0, sizeof(t->app_tx_secret));
    t->have_rx = t->have_tx = false;
}
