/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lookaside crypto: the AEAD of every packet on an rte_cryptodev (crypto_openssl,
 * crypto_aesni_gcm / crypto_aesni_mb of crypto_ipsec_mb, QAT, ...), as the compat
 * offload did (docs/dpdk.md "Compat mode"). Everything around the AEAD is libquicoff's
 * split data path (quicoff_{un,}protect_prepare / _complete): parsing,
 * lookup, header protection (on the CPU, as the compat offload did: a crypto-op round
 * trip costs more than the one block), packet numbers, key phases, RFC 9001
 * §6.6 limits and counters, the same code as inline mode. This file keeps
 * only what the cryptodev needs: a session per (key, AAD length), made and
 * freed through libquicoff's key hooks, and the crypto ops.
 */
#ifndef QD_LOOKASIDE_H
#define QD_LOOKASIDE_H

#include <stdint.h>

#include <rte_mbuf.h>

#include "qd.h"
#include "quicoff/quicoff.h"

struct qd_lookaside;
struct qd_la_worker;

/* Sets up the cryptodev named `name` (created as a vdev if absent) with one
 * queue pair per worker, checks which QUIC AEADs it implements (at least
 * one), and the session pool (sized for `capacity` entries). Returns NULL
 * after printing why. */
struct qd_lookaside *qd_la_create(const char *name, unsigned nb_workers, uint32_t capacity);
/* After quicoff_table_destroy (whose retire hooks free the sessions). */
void qd_la_destroy(struct qd_lookaside *la);
/* Prints the device and which QUIC suites it can do. */
void qd_la_print(const struct qd_lookaside *la);

/* The hooks to give quicoff_table_set_key_hooks: a key's sessions are made
 * when the key is installed (an ADD / UPDATE of a suite the device lacks is
 * refused with unsupported, one the session pool cannot hold with no_memory)
 * and freed when libquicoff retires the key. */
void qd_la_key_hooks(struct qd_lookaside *la, struct quicoff_key_hooks *out);

/* What the sessions use, for telemetry (/quicoff/lookaside): keys with
 * sessions, sessions in use, the pool's size. */
struct qd_la_usage {
    uint32_t keys, sessions, session_pool;
};
void qd_la_usage(const struct qd_lookaside *la, struct qd_la_usage *u);

/* Worker side (one per worker lcore): its queue pair and libquicoff worker. */
struct qd_la_worker *qd_la_worker_create(struct qd_lookaside *la, unsigned worker_id,
                                         struct quicoff_worker *qw);
void qd_la_worker_destroy(struct qd_la_worker *lw);

/* As quicoff_protect_burst / quicoff_unprotect_burst (same results and
 * counters), with the AEAD on the cryptodev; m[i] is the mbuf that holds
 * pkts[i].data (single segment). At most QD_BURST packets. */
unsigned qd_la_protect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                             struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n);
unsigned qd_la_unprotect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                               struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n);

/* As quicoff_unprotect_datagrams with QUICOFF_DATAGRAM_STOP_AT_FAILURE (the
 * library's walk, quicoff_walk_datagrams), with the AEAD on the cryptodev;
 * m[i] holds dgs[i].data. */
unsigned qd_la_unprotect_datagrams(struct qd_la_worker *lw, struct rte_mbuf **m,
                                   struct quicoff_datagram *dgs, unsigned n);

#endif
