/* SPDX-License-Identifier: Apache-2.0 */
/* Fixed-size blocks on huge-page chunks (block_pool.h). */
#include "block_pool.h"

#include "crypto.h" /* qo_alloc_big_zeroed */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QO_POOL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define QO_POOL_ASAN 1
#endif
#ifdef QO_POOL_ASAN
/* Blocks in the free list and chunk space not yet handed out are poisoned,
 * so AddressSanitizer still sees a use after qo_keyset_free. */
#include <sanitizer/asan_interface.h>
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CHUNK_SIZE ((size_t)2 << 20)
/* The link to the next chunk. Blocks are 128-byte aligned and sized: the
 * adjacent-line prefetcher fetches lines in 128-byte pairs, so a block's
 * first four lines are two pairs, not three (docs/benchmarks.md). */
#define BLOCK_ALIGN ((size_t)128)
#define CHUNK_HEADER BLOCK_ALIGN

void qo_block_pool_init(struct qo_block_pool *p)
{
    memset(p, 0, sizeof(*p));
    pthread_mutex_init(&p->lock, NULL);
}

static void *take(struct qo_block_pool *p)
{
    if (p->free_list) {
        void *b = p->free_list;
        UNPOISON(b, p->block_size);
        memcpy(&p->free_list, b, sizeof(void *));
        return b;
    }
    if ((size_t)(p->end - p->next) < p->block_size) {
        unsigned char *c = qo_alloc_big_zeroed(CHUNK_SIZE);
        if (!c)
            return NULL;
        memcpy(c, &p->chunks, sizeof(void *));
        p->chunks = c;
        p->next = c + CHUNK_HEADER;
        p->end = c + CHUNK_SIZE;
        POISON(p->next, (size_t)(p->end - p->next));
    }
    void *b = p->next;
    p->next += p->block_size;
    UNPOISON(b, p->block_size);
    return b;
}

void *qo_block_pool_get(struct qo_block_pool *p, size_t size)
{
    size = (size + BLOCK_ALIGN - 1) & ~(BLOCK_ALIGN - 1);
    if (size == 0 || size > CHUNK_SIZE - CHUNK_HEADER)
        return NULL;
    pthread_mutex_lock(&p->lock);
    void *b = NULL;
    if (p->block_size == 0)
        p->block_size = size;
    if (p->block_size == size)
        b = take(p);
    pthread_mutex_unlock(&p->lock);
    if (b)
        memset(b, 0, size);
    return b;
}

void qo_block_pool_put(struct qo_block_pool *p, void *block)
{
    if (!block)
        return;
    pthread_mutex_lock(&p->lock);
    memcpy(block, &p->free_list, sizeof(void *));
    p->free_list = block;
    POISON(block, p->block_size);
    pthread_mutex_unlock(&p->lock);
}

void qo_block_pool_fini(struct qo_block_pool *p)
{
    void *c = p->chunks;
    while (c) {
        void *next;
        UNPOISON(c, CHUNK_SIZE);
        memcpy(&next, c, sizeof(void *));
        free(c);
        c = next;
    }
    pthread_mutex_destroy(&p->lock);
    memset(p, 0, sizeof(*p));
}
