/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The keyset pool of large tables (block_pool.h): blocks are distinct,
 * cache-line aligned, zeroed when handed out (even after a dirty put),
 * reused after a put, of one size per pool, spread over several 2 MiB
 * chunks without overlapping; two threads getting and putting at once lose
 * and share nothing. Through the public API, a table large enough for the
 * pool is filled, emptied and filled again (test_table and test_gcm_burst
 * run the data path on such tables).
 */
#include "block_pool.h"
#include "test_util.h"

#include "quicoff/quicoff.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 1624 /* about an AES-GCM keyset, not a multiple of 128 (1,664 rounded) */
#define MANY 4000  /* three chunks and more */

static int all_zero(const unsigned char *p, size_t n)
{
    unsigned char acc = 0;
    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static void test_blocks(void)
{
    struct qo_block_pool p;
    qo_block_pool_init(&p);
    unsigned char **b = calloc(MANY, sizeof(*b));
    int aligned = 1, zeroed = 1;
    for (int i = 0; i < MANY; i++) {
        b[i] = qo_block_pool_get(&p, BLOCK);
        if (!b[i])
            break;
        aligned &= ((uintptr_t)b[i] % 128) == 0;
        zeroed &= all_zero(b[i], BLOCK);
        memset(b[i], 0xA5, BLOCK); /* overlapping blocks would show below */
    }
    ok(b[MANY - 1] != NULL, "%d blocks of %d bytes handed out", MANY, BLOCK);
    ok(aligned, "every block 128-byte aligned (a pair of cache lines)");
    ok(zeroed, "every new block zeroed");
    unsigned char **sorted = malloc(MANY * sizeof(*sorted));
    memcpy(sorted, b, MANY * sizeof(*sorted));
    qsort(sorted, MANY, sizeof(*sorted), cmp_ptr);
    size_t closest = SIZE_MAX;
    for (int i = 1; i < MANY; i++)
        if ((size_t)(sorted[i] - sorted[i - 1]) < closest)
            closest = (size_t)(sorted[i] - sorted[i - 1]);
    ok(closest >= 1664, "no two blocks overlap: closest %zu bytes apart (a block is 1,664)",
       closest);
    ok(qo_block_pool_get(&p, 2 * BLOCK) == NULL, "a pool hands out one size only");

    unsigned char *back = b[17];
    qo_block_pool_put(&p, back);
    unsigned char *again = qo_block_pool_get(&p, BLOCK);
    ok(again == back, "a block put back is handed out again");
    ok(again && all_zero(again, BLOCK), "and comes back zeroed, although it was put back dirty");
    for (int i = 0; i < MANY; i++)
        qo_block_pool_put(&p, b[i]);
    qo_block_pool_fini(&p);
    free(sorted);
    free(b);
}

struct churn {
    struct qo_block_pool *p;
    int id, bad;
};

static void *churn_thread(void *arg)
{
    struct churn *c = arg;
    unsigned char *mine[64];
    for (int round = 0; round < 2000; round++) {
        for (int i = 0; i < 64; i++) {
            mine[i] = qo_block_pool_get(c->p, 256);
            if (!mine[i] || !all_zero(mine[i], 256)) {
                c->bad++;
                return NULL;
            }
            memset(mine[i], c->id, 256);
        }
        for (int i = 0; i < 64; i++) {
            for (int j = 0; j < 256; j++)
                c->bad += mine[i][j] != (unsigned char)c->id; /* shared with the other thread? */
            memset(mine[i], 0, 256);
            qo_block_pool_put(c->p, mine[i]);
        }
    }
    return NULL;
}

static void test_two_threads(void)
{
    struct qo_block_pool p;
    qo_block_pool_init(&p);
    struct churn c[2] = {{&p, 1, 0}, {&p, 2, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, churn_thread, &c[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    ok(c[0].bad == 0 && c[1].bad == 0,
       "2 threads x 2,000 rounds of 64 gets and puts: no block shared "
       "or handed out dirty (%d, %d)",
       c[0].bad, c[1].bad);
    qo_block_pool_fini(&p);
}

static void test_large_table(void)
{
    /* 8,192 entries: the table outgrows the cache, so its keysets come from the pool */
    struct quicoff_table_config tc = {.capacity = 8192, .local_cid_len = 8};
    quicoff_status_t st;
    struct quicoff_table *t = quicoff_table_create(&tc, &st);
    ok(t != NULL, "table of %u entries (%s)", tc.capacity, quicoff_status_name(st));
    if (!t)
        return;
    static quicoff_conn_t h[8192];
    for (int round = 0; round < 2; round++) {
        int added = 0, removed = 0;
        for (unsigned i = 0; i < tc.capacity; i++) {
            struct quicoff_conn_config cc;
            quicoff_conn_config_init(&cc);
            cc.direction = QUICOFF_DIR_RX;
            cc.suite = (quicoff_suite_t)(i % 3); /* three pools at once */
            cc.dcid_len = 8;
            memcpy(cc.dcid, &i, sizeof(i));
            cc.dcid[7] = (uint8_t)round;
            memset(cc.keys.key, (int)i, sizeof(cc.keys.key));
            added += quicoff_conn_add(t, &cc, &h[i]) == QUICOFF_OK;
        }
        for (unsigned i = 0; i < tc.capacity; i++)
            removed += quicoff_conn_remove(t, h[i]) == QUICOFF_OK;
        ok(added == (int)tc.capacity && removed == added, "round %d: %d added, %d removed", round,
           added, removed);
    }
    quicoff_table_destroy(t);
}

int main(void)
{
    subtest("blocks", test_blocks);
    subtest("two threads", test_two_threads);
    subtest("large table", test_large_table);
    return done_testing();
}
