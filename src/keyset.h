/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Keysets (keyset.c): building, cloning, installing keys in and freeing an
 * entry's immutable half, and the key hooks' bookkeeping. Control path only,
 * under the table mutex unless said otherwise.
 */
#ifndef QUICOFF_KEYSET_H
#define QUICOFF_KEYSET_H

#include "table.h"

/* The keyset of a new entry (add, replace): cfg checked, keys derived, their
 * contexts set up and registered with the key hooks. Off the lock. */
quicoff_status_t qo_keyset_build(struct quicoff_table *t, const struct quicoff_conn_config *cfg,
                                 struct qo_keyset **out);
/* A copy of old with fresh contexts; the keys keep their IDs, old keeps
 * their ownership until qo_keys_take_over. NULL: no memory. */
struct qo_keyset *qo_keyset_clone(const struct quicoff_table *t, const struct qo_keyset *old);
/* Zeroes and frees ks (NULL: nothing), retiring the keys it owns. */
void qo_keyset_free(const struct quicoff_table *t, struct qo_keyset *ks);
/* The per-suite keyset pools of a large table (quicoff_table.keyset_pools),
 * and their release once every keyset has gone back. */
struct qo_block_pool *qo_keyset_pools_new(void);
void qo_keyset_pools_free(struct qo_block_pool *pools);
/* Installs raw keys of generation gen in its phase slot (context set up). */
quicoff_status_t qo_keyset_install(struct qo_keyset *ks, uint32_t gen, const uint8_t *key,
                                   const uint8_t *iv);

/* The key just installed in slot p of an unpublished keyset: a fresh ID and
 * the install hook's consent. */
quicoff_status_t qo_key_register(struct quicoff_table *t, struct qo_keyset *ks, unsigned p);
/* Reports slot p's key to the retire hook if ks owns it, and forgets it. */
void qo_key_retire(const struct quicoff_table *t, struct qo_keyset *ks, unsigned p);
/* ks replaces old in its slot: the keys ks took over become ks's to retire. */
void qo_keys_take_over(struct qo_keyset *ks, struct qo_keyset *old);

/* Keys from raw material (secret NULL) or derived from a secret. */
quicoff_status_t qo_keys_from(quicoff_suite_t suite, uint32_t version,
                              const struct quicoff_packet_keys *raw, const uint8_t *secret,
                              size_t secret_len, struct quicoff_packet_keys *out);
/* 3/4 of the keyset's RFC 9001 §6.6 limit: the usage threshold by default. */
uint64_t qo_default_threshold(const struct qo_keyset *ks);
/* A QUIC packet number (<= 2^62 - 1) or UINT64_MAX (none). */
bool qo_largest_pn_ok(uint64_t pn);

#endif
