/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fixed-size blocks carved from 2 MiB chunks on transparent huge pages: the
 * keysets of a table too large for the cache (table.h, prefetch_levels).
 *
 * Why: with a million active connections each packet reads its keyset (key
 * schedules, GHASH powers) at a random address. Allocated one by one from
 * malloc they are spread over 4 KiB pages, so nearly every keyset read also
 * misses the TLB and walks the page table: more cold lines per packet. In
 * 2 MiB pages ~1,000 keysets share one TLB entry (docs/benchmarks.md).
 *
 * Control path only; thread-safe (keysets are built outside the table lock).
 * Chunks are kept until the pool is finished: the table's capacity bounds
 * how many keysets can be live (plus those waiting for reclamation), so the
 * pool never grows past the peak. Blocks are 128-byte aligned (a pair of
 * cache lines) and come back zeroed; a block handed back must already be
 * wiped (qo_keyset_free).
 */
#ifndef QUICOFF_BLOCK_POOL_H
#define QUICOFF_BLOCK_POOL_H

#include <pthread.h>
#include <stddef.h>

struct qo_block_pool {
    pthread_mutex_t lock;
    size_t block_size;   /* fixed by the first get; a multiple of 128 */
    void *free_list;     /* handed-back blocks, linked through their first word */
    void *chunks;        /* linked through each chunk's first word */
    unsigned char *next; /* the unused rest of the newest chunk */
    unsigned char *end;
};

void qo_block_pool_init(struct qo_block_pool *p);
/* A zeroed block of size bytes (every get of one pool asks the same size,
 * at most a chunk less 128 bytes), or NULL (out of memory or another size). */
void *qo_block_pool_get(struct qo_block_pool *p, size_t size);
void qo_block_pool_put(struct qo_block_pool *p, void *block);
/* Releases every chunk: no block of the pool may be in use any more. */
void qo_block_pool_fini(struct qo_block_pool *p);

#endif
