/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lookaside crypto: the AEAD of every packet on an rte_cryptodev (crypto_openssl,
 * crypto_aesni_gcm / crypto_aesni_mb of crypto_ipsec_mb, QAT, ...), as in seed
 * 000 (§3.3.2, listings 4.3-4.5); the worker still parses, looks up, builds
 * the nonce, decodes the packet number and does header protection (AES-ECB /
 * ChaCha20 on the CPU, as the thesis did: a crypto-op round trip costs more
 * than the one block).
 *
 * libquicoff's burst API does the AEAD itself and keeps the keys inside, so
 * this file keeps its own security association per entry (SA: keys per key
 * phase, a cryptodev session per key, HP key, path ID, nonce layout, largest
 * PN, key generation, counters), mirroring the library's rules (key phases,
 * RFC 9001 §6.6 limits), and produces the same bytes as inline mode. The
 * results are struct quicoff_result, so the TX/RX paths after the crypto are
 * the same for both modes. See docs/dpdk.md for the library API that would
 * replace this mirror (prepare/complete).
 */
#ifndef QD_LOOKASIDE_H
#define QD_LOOKASIDE_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "qd.h"
#include "quicoff/quicoff.h"

struct qd_lookaside;
struct qd_la_worker;
struct qd_la_sa;

/* Sets up the cryptodev named `name` (created as a vdev if absent) with one
 * queue pair per worker, checks it supports AEAD for at least AES-128-GCM,
 * and the session pool. Returns NULL after printing why. */
struct qd_lookaside *qd_la_create(const char *name, unsigned nb_workers, uint32_t capacity,
                                  uint8_t local_cid_len);
void qd_la_destroy(struct qd_lookaside *la);
/* Prints the device and which QUIC suites it can do. */
void qd_la_print(const struct qd_lookaside *la);

/* Control thread. An SA for an entry just added to the table (cfg as given to
 * quicoff_conn_add). Returns OK, UNSUPPORTED (suite not on this cryptodev),
 * NO_MEMORY, or a key-derivation error. */
quicoff_status_t qd_la_sa_create(struct qd_lookaside *la, const struct quicoff_conn_config *cfg,
                                 quicoff_conn_t handle, struct qd_la_sa **out);
/* Applies an update with quicoff_conn_update's rules. */
quicoff_status_t qd_la_sa_update(struct qd_lookaside *la, struct qd_la_sa *sa,
                                 const struct quicoff_conn_update *u);
/* Makes the SA unreachable by lookups (RX); free it after qd_conns_sync(). */
void qd_la_sa_unlink(struct qd_lookaside *la, struct qd_la_sa *sa);
void qd_la_sa_free(struct qd_lookaside *la, struct qd_la_sa *sa);
/* Counters of the SA, as quicoff_conn_stats. */
void qd_la_sa_stats(const struct qd_la_sa *sa, struct quicoff_conn_stats *out);

/* Worker side (one per worker lcore). */
struct qd_la_worker *qd_la_worker_create(struct qd_lookaside *la, unsigned worker_id);
void qd_la_worker_destroy(struct qd_la_worker *lw);

/* As quicoff_protect_burst / quicoff_unprotect_burst, with the AEAD on the
 * cryptodev; m[i] is the mbuf that holds pkts[i].data (single segment). */
unsigned qd_la_protect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                             struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n);
unsigned qd_la_unprotect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                               struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n);

#endif
