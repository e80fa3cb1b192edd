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
 * Mode dpdk: the same seam, with a quicoff-dpdk over the host<->offload
 * protocol doing the AEAD (h3_dpdk.c): the batch goes out as DATA_TRAIN
 * frames (runs of packets) and DATA_TO_OFFLOAD frames, and 1-RTT packets come back opened as DATA_TO_HOST frames.
 *
 * What changes between inproc and dpdk is a backend (struct qo_backend):
 * install, update keys, protect a batch, unprotect a batch, remove. A
 * connection the backend refuses, or loses, runs on ngtcp2's own 1-RTT
 * crypto (o->active false): ngtcp2 keeps its real AEAD and header-protection
 * contexts the whole time (the seam never replaces them, and ngtcp2's
 * update_key keeps deriving them), so falling back is a switch, and a packet
 * sealed with the null AEAD before the switch is dropped, never sent.
 */
#ifndef QO_H3_OFFLOAD_H
#define QO_H3_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

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
    uint64_t key_updates_sent;     /**< key-phase changes of the packets ngtcp2 sent */
    uint64_t key_updates_received; /**< key-phase changes of the packets ngtcp2 read */
    uint64_t update_key_calls;     /**< ngtcp2's update_key callback */
    uint64_t offload_tx_packets;   /**< libquicoff: protected */
    uint64_t offload_rx_packets;   /**< libquicoff: unprotected */
    uint64_t offload_tx_failures;  /**< datagrams dropped: protect refused / not taken */
    uint64_t offload_rx_failures;  /**< 1-RTT packets dropped: unprotect refused */
    uint64_t host_frames_sent;     /**< dpdk: DATA_TO_OFFLOAD + DATA_TRAIN frames sent */
    uint64_t host_packets_handed;  /**< dpdk: 1-RTT packets in those frames */
    uint64_t offload_refused;      /**< connections the offload refused at install */
    uint64_t offload_lost;         /**< connections whose offload stopped answering */
    uint64_t fallbacks;            /**< connections put back on ngtcp2's crypto (both causes) */
    uint64_t offload_key_update_events; /**< dpdk: the offload's key_update EVENTs */
};

struct qo_offload;
struct qo_tx_batch;

/** What a mode does per connection and per batch (inproc: libquicoff in
 *  this process; dpdk: h3_dpdk.c). */
struct qo_backend {
    /** Installs the 1-RTT TX and RX entries: 0 done, -1 refused (the
     *  connection then keeps ngtcp2's crypto). */
    int (*install)(struct qo_offload *o, const uint8_t *rx_secret, const uint8_t *tx_secret,
                   size_t secret_len, const ngtcp2_cid *local_cid, const ngtcp2_cid *peer_cid);
    /** Installs generation gen (the next one) in both entries: 0 or -1. */
    int (*update_keys)(struct qo_offload *o, uint32_t gen, const uint8_t *rx_secret,
                       const uint8_t *tx_secret, size_t secret_len);
    /** Protects (or hands off) the batch's 1-RTT packets; sets ok[] and
     *  may shorten len[] to what is left for the UDP socket. */
    void (*protect)(struct qo_offload *o, struct qo_tx_batch *b);
    /** Unprotects received datagrams in place (NULL: they arrive opened
     *  another way, dpdk's DATA_TO_HOST). */
    void (*unprotect)(struct qo_offload *o, uint8_t **data, size_t *len, unsigned n,
                      uint8_t cid_len);
    /** Removes the connection's entries (keys wiped there). */
    void (*remove)(struct qo_offload *o);
    /** Adds the backend's packet counts into o->c. */
    void (*collect)(struct qo_offload *o);
    void (*free)(struct qo_offload *o);
};

/** One connection's offload state (the server handles one at a time). */
struct qo_offload {
    enum qo_offload_mode mode;
    const struct qo_backend *be; /**< NULL in none */
    struct qo_dpdk *dpdk;        /**< dpdk: the host-library side (h3_dpdk.c) */
    bool active; /**< 1-RTT keys are in the offload: null AEAD and zero mask from now on */
    /* the connection's addresses (dpdk: the TX entry's encapsulation) */
    struct sockaddr_storage local, remote;
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

/** The quicoff suite of a GnuTLS cipher; QUICOFF_SUITE_COUNT when none. */
quicoff_suite_t qo_offload_suite_of(int gnutls_cipher);

/** Parses "none", "inproc", "dpdk"; -1 when unknown. */
int qo_offload_mode_from_name(const char *name);
const char *qo_offload_mode_name(enum qo_offload_mode mode);

/** Creates the table and worker for inproc (cid_len: the server's CID length). */
int qo_offload_init(struct qo_offload *o, enum qo_offload_mode mode, uint8_t cid_len);
/** Removes the connection's entries (keys wiped by the library); keeps the table and counters. */
void qo_offload_reset_conn(struct qo_offload *o);
void qo_offload_free(struct qo_offload *o);

/** At the 1-RTT secrets (GnuTLS secret callback): installs the TX and RX
 *  entries through the backend; tx_iv is the IV ngtcp2 derived for TX.
 *  Nothing in none. Returns -1 only for an error of the connection itself;
 *  a refusal by the offload leaves the connection on ngtcp2's crypto
 *  (counted: offload_refused, fallbacks). */
int qo_offload_install(struct qo_offload *o, int gnutls_cipher, uint32_t version,
                       const uint8_t *rx_secret, const uint8_t *tx_secret, size_t secret_len,
                       const uint8_t *tx_iv, const ngtcp2_cid *local_cid,
                       const ngtcp2_cid *peer_cid);

/** ngtcp2's update_key callback: derives the next generation as ngtcp2 does
 *  and, while the connection is offloaded, installs it in both entries
 *  through the backend (a failure there is a fallback, not an error). */
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
/** Hands the batch's 1-RTT packets to the backend (inproc: one protect
 *  burst; dpdk: DATA_TRAIN and DATA_TO_OFFLOAD frames, len[] shrinks to the long-header
 *  part left for UDP); sets ok[]. A datagram that is not ok must not be
 *  sent: it would carry plaintext. After a fallback the null-sealed ones
 *  are not ok. */
void qo_offload_protect(struct qo_offload *o, struct qo_tx_batch *b);

/** Unprotects the 1-RTT packet of each datagram in one burst (inproc; in
 *  dpdk they arrive opened, qo_dpdk_recv). A
 *  datagram whose 1-RTT packet fails is cut before it (*len shrinks; 0 =
 *  drop). cid_len: the server's CID length (short headers). */
void qo_offload_unprotect(struct qo_offload *o, uint8_t **data, size_t *len, unsigned n,
                          uint8_t cid_len);
/** Around ngtcp2_conn_read_pkt of one datagram: where its 1-RTT packet is
 *  (inproc: the one qo_offload_unprotect opened; dpdk: none, UDP datagrams
 *  arrive as the network sent them). */
void qo_offload_rx_begin(struct qo_offload *o, const uint8_t *data, size_t len, uint8_t cid_len);
/** Around ngtcp2_conn_read_pkt of a 1-RTT packet the offload opened
 *  (DATA_TO_HOST: unmasked header, plaintext, then QUICOFF_TAG_LEN
 *  placeholder bytes): the null AEAD and a zero mask take it, also after a
 *  fallback (the offload may still hold the RX entry). */
void qo_offload_rx_opened(struct qo_offload *o, const uint8_t *pkt, size_t len);
/** Clears what rx_begin / rx_opened set. */
void qo_offload_rx_end(struct qo_offload *o);

/** Puts the connection back on ngtcp2's own 1-RTT crypto (the offload
 *  refused an update or stopped answering) and removes its entries. */
void qo_offload_fall_back(struct qo_offload *o);

/** Adds the backend's packet counts into o->c (inproc: libquicoff's table;
 *  dpdk: taken by QUERY when each connection's entries are removed). */
void qo_offload_collect(struct qo_offload *o);

#endif /* QO_H3_OFFLOAD_H */
