/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file h3_offload.h
 * The seam between ngtcp2 and quicoff in qo-h3-server: ngtcp2's crypto
 * callbacks (encrypt, decrypt, hp_mask) and the per-batch protect and
 * unprotect of the datagrams around ngtcp2.
 *
 * Mode none: ngtcp2 + GnuTLS do every AEAD and header mask (the baseline).
 * Mode inproc: Initial and Handshake stay on GnuTLS; once the 1-RTT secrets
 * exist they are installed as libquicoff entries (TX and RX) in this
 * process, and ngtcp2 runs the 1-RTT level with a null AEAD (encrypt = copy
 * + 16 zero bytes, decrypt = copy) and a zero header-protection mask, as
 * MsQuic's QUIC Encryption Offload does. Every datagram ngtcp2 writes is
 * then protected by quicoff_protect_burst before it is sent, every received
 * one unprotected by quicoff_unprotect_burst before ngtcp2 reads it.
 * Mode dpdk (a quicoff-dpdk over the host<->offload protocol) shares this
 * seam; it is not built yet and refused at start.
 */
#ifndef QO_H3_OFFLOAD_H
#define QO_H3_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ngtcp2/ngtcp2.h>
#include <quicoff/quicoff.h>

#define QO_H3_BATCH 32 /**< datagrams per protect / unprotect burst */

enum qo_offload_mode {
    QO_OFFLOAD_NONE = 0,
    QO_OFFLOAD_INPROC = 1,
    QO_OFFLOAD_DPDK = 2,
};

/** What the server reports: the stack's 1-RTT work against the offload's. */
struct qo_offload_counters {
    uint64_t stack_1rtt_sent;      /**< 1-RTT packets ngtcp2 sealed (null or real) */
    uint64_t stack_1rtt_received;  /**< 1-RTT packets ngtcp2 opened (null or real) */
    uint64_t host_1rtt_aead_calls; /**< real AEAD calls of the stack at 1-RTT */
    uint64_t key_updates_s2c;      /**< key-phase changes of the packets ngtcp2 sent */
    uint64_t key_updates_c2s;      /**< key-phase changes of the packets ngtcp2 read */
    uint64_t update_key_calls;     /**< ngtcp2's update_key callback */
    uint64_t offload_tx_packets;   /**< libquicoff: protected */
    uint64_t offload_rx_packets;   /**< libquicoff: unprotected */
    uint64_t offload_tx_failures;  /**< datagrams dropped: protect refused */
    uint64_t offload_rx_failures;  /**< 1-RTT packets dropped: unprotect refused */
};

/** One connection's offload state (the server handles one at a time). */
struct qo_offload {
    enum qo_offload_mode mode;
    bool active; /**< 1-RTT keys are in libquicoff: null AEAD and zero mask from now on */
    struct quicoff_table *table;
    struct quicoff_worker *worker;
    quicoff_conn_t tx, rx;
    quicoff_suite_t suite;
    uint32_t version;
    uint32_t generation;              /**< key generation of the last keys installed */
    uint8_t tx_iv[2][QUICOFF_IV_LEN]; /**< TX IV per key phase: PN = nonce ^ IV */
    /* header-protection contexts ngtcp2 uses at 1-RTT, learnt on first use */
    const void *tx_hp_handle, *rx_hp_handle;
    bool expect_tx_hp; /**< the next hp_mask belongs to the 1-RTT packet just sealed */
    /* the 1-RTT packet of the datagram ngtcp2 is reading now */
    const uint8_t *rx_short_begin, *rx_short_end;
    /* the 1-RTT packet of the datagram ngtcp2 is writing now */
    bool tx_pending;
    uint64_t tx_pn;
    const uint8_t *tx_aad;
    int last_tx_phase, last_rx_phase; /**< -1 = none yet */
    struct qo_offload_counters c;
};

/** Parses "none", "inproc", "dpdk"; -1 when unknown. */
int qo_offload_mode_from_name(const char *name);
const char *qo_offload_mode_name(enum qo_offload_mode mode);

/** Creates the table and worker for inproc (cid_len: the server's CID length). */
int qo_offload_init(struct qo_offload *o, enum qo_offload_mode mode, uint8_t cid_len);
/** Removes the connection's entries (keys wiped by the library); keeps the table and counters. */
void qo_offload_reset_conn(struct qo_offload *o);
void qo_offload_free(struct qo_offload *o);

/** At the 1-RTT secrets (GnuTLS secret callback): installs the TX and RX
 *  entries (inproc); tx_iv is the IV ngtcp2 derived for TX. Nothing in none. */
int qo_offload_install(struct qo_offload *o, int gnutls_cipher, uint32_t version,
                       const uint8_t *rx_secret, const uint8_t *tx_secret, size_t secret_len,
                       const uint8_t *tx_iv, const ngtcp2_cid *local_cid,
                       const ngtcp2_cid *peer_cid);

/** ngtcp2's update_key callback: derives the next generation as ngtcp2 does
 *  and, in inproc, installs it in both entries. */
int qo_offload_update_key(ngtcp2_conn *conn, uint8_t *rx_secret, uint8_t *tx_secret,
                          ngtcp2_crypto_aead_ctx *rx_aead_ctx, uint8_t *rx_iv,
                          ngtcp2_crypto_aead_ctx *tx_aead_ctx, uint8_t *tx_iv,
                          const uint8_t *current_rx_secret, const uint8_t *current_tx_secret,
                          size_t secretlen, void *user_data);

/* ngtcp2 crypto callbacks; user_data of the conn must be a struct qo_offload
 * reachable through qo_offload_of (set by the server). */
int qo_offload_encrypt(uint8_t *dest, const ngtcp2_crypto_aead *aead,
                       const ngtcp2_crypto_aead_ctx *aead_ctx, const uint8_t *plaintext,
                       size_t plaintextlen, const uint8_t *nonce, size_t noncelen,
                       const uint8_t *aad, size_t aadlen);
int qo_offload_decrypt(uint8_t *dest, const ngtcp2_crypto_aead *aead,
                       const ngtcp2_crypto_aead_ctx *aead_ctx, const uint8_t *ciphertext,
                       size_t ciphertextlen, const uint8_t *nonce, size_t noncelen,
                       const uint8_t *aad, size_t aadlen);
int qo_offload_hp_mask(uint8_t *dest, const ngtcp2_crypto_cipher *hp,
                       const ngtcp2_crypto_cipher_ctx *hp_ctx, const uint8_t *sample);

/** ngtcp2's crypto callbacks carry no user data: the server has one
 *  connection on one thread, so the seam in use is set here around it. */
void qo_offload_set_current(struct qo_offload *o);

/** Before each ngtcp2 write into buf. */
void qo_offload_tx_begin(struct qo_offload *o);

/** A batch of datagrams ngtcp2 wrote, to protect before sendmmsg. */
struct qo_tx_batch {
    unsigned n;
    uint8_t *data[QO_H3_BATCH];
    size_t len[QO_H3_BATCH];
    bool has_1rtt[QO_H3_BATCH];
    uint32_t short_off[QO_H3_BATCH];
    uint64_t pn[QO_H3_BATCH];
    bool ok[QO_H3_BATCH]; /**< out of protect: may be sent */
};

/** After a write of len bytes into buf: records the datagram in the batch
 *  (its 1-RTT packet's offset and full PN). */
void qo_offload_tx_end(struct qo_offload *o, struct qo_tx_batch *b, uint8_t *buf, size_t len);
/** Protects the batch's 1-RTT packets in one burst (inproc); sets ok[]. A
 *  datagram that is not ok must not be sent: it would carry plaintext. */
void qo_offload_protect(struct qo_offload *o, struct qo_tx_batch *b);

/** Unprotects the 1-RTT packet of each datagram in one burst (inproc). A
 *  datagram whose 1-RTT packet fails is cut before it (*len shrinks; 0 =
 *  drop). cid_len: the server's CID length (short headers). */
void qo_offload_unprotect(struct qo_offload *o, uint8_t **data, size_t *len, unsigned n,
                          uint8_t cid_len);
/** Around ngtcp2_conn_read_pkt of one datagram: where its 1-RTT packet is. */
void qo_offload_rx_begin(struct qo_offload *o, const uint8_t *data, size_t len, uint8_t cid_len);

/** Adds the libquicoff counters into o->c (inproc). */
void qo_offload_collect(struct qo_offload *o);

#endif /* QO_H3_OFFLOAD_H */
