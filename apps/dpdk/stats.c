/* SPDX-License-Identifier: Apache-2.0 */
/* Counters: per-lcore blocks, their sums and the periodic print (telemetry.c exports them). */
#include "stats.h"

#include <rte_cycles.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

struct qd_counters qd_stats[RTE_MAX_LCORE + 1];

static const char *const names[] = {
#define QD_X(name, help) #name,
    QD_COUNTERS(QD_X)
#undef QD_X
};
#define NB_COUNTERS RTE_DIM(names)
_Static_assert(NB_COUNTERS == QD_NB_COUNTERS, "one name per counter");

static inline uint64_t get(const struct qd_counters *c, unsigned i)
{
    return __atomic_load_n(&((const uint64_t *)c)[i], __ATOMIC_RELAXED);
}

void qd_stats_total(struct qd_counters *out)
{
    memset(out, 0, sizeof(*out));
    for (unsigned b = 0; b <= RTE_MAX_LCORE; b++)
        for (unsigned i = 0; i < NB_COUNTERS; i++)
            ((uint64_t *)out)[i] += get(&qd_stats[b], i);
}

uint64_t qd_stats_sum_rx_unknown(void)
{
    uint64_t n = 0;
    for (unsigned b = 0; b <= RTE_MAX_LCORE; b++)
        n += __atomic_load_n(&qd_stats[b].rx_unknown_connection, __ATOMIC_RELAXED);
    return n;
}

uint64_t qd_stats_sum_tx_too_big(void)
{
    uint64_t n = 0;
    for (unsigned b = 0; b <= RTE_MAX_LCORE; b++)
        n += __atomic_load_n(&qd_stats[b].tx_too_big, __ATOMIC_RELAXED);
    return n;
}

static bool block_used(const struct qd_counters *c)
{
    for (unsigned i = 0; i < NB_COUNTERS; i++)
        if (get(c, i))
            return true;
    return false;
}

void qd_stats_print(const char *title)
{
    struct qd_counters t;
    qd_stats_total(&t);
    printf("\n==== quicoff-dpdk %s ====\n", title);
    printf("%-26s %16s", "counter", "total");
    unsigned cols[RTE_MAX_LCORE + 1], nc = 0;
    for (unsigned b = 0; b <= RTE_MAX_LCORE && nc < 8; b++)
        if (block_used(&qd_stats[b])) {
            cols[nc++] = b;
            if (b == QD_STATS_CTRL)
                printf(" %12s", "control");
            else
                printf(" %9s%-3u", "lcore", b);
        }
    printf("\n");
    for (unsigned i = 0; i < NB_COUNTERS; i++) {
        if (!((uint64_t *)&t)[i])
            continue;
        printf("%-26s %16" PRIu64, names[i], ((uint64_t *)&t)[i]);
        for (unsigned k = 0; k < nc; k++)
            printf(" %12" PRIu64, get(&qd_stats[cols[k]], i));
        printf("\n");
    }
    if (qda.table) {
        struct quicoff_table_stats ts;
        quicoff_table_stats(qda.table, &ts);
        printf("libquicoff (%s): connections %" PRIu64 " rx_packets %" PRIu64
               " tx_packets %" PRIu64 " auth_failures %" PRIu64 " unknown_connection %" PRIu64
               " malformed %" PRIu64 " key_updates %" PRIu64 " retired_pending %" PRIu64 "\n",
               quicoff_table_backend(qda.table), ts.connections, ts.rx_packets, ts.tx_packets,
               ts.auth_failures, ts.unknown_connection, ts.malformed, ts.key_updates,
               ts.retired_pending);
    }
    fflush(stdout);
}

const char *qd_stats_name(unsigned i)
{
    return i < NB_COUNTERS ? names[i] : NULL;
}

void qd_stats_read(unsigned block, struct qd_counters *out)
{
    for (unsigned i = 0; i < NB_COUNTERS; i++)
        ((uint64_t *)out)[i] = get(&qd_stats[block], i);
}

bool qd_stats_block_used(unsigned block)
{
    return block_used(&qd_stats[block]);
}

void qd_stats_timer_init(struct qd_stats_timer *t)
{
    t->period = qda.opt->stats_interval * rte_get_tsc_hz();
    t->next = t->period ? rte_rdtsc() + t->period : 0;
}

void qd_stats_timer_tick(struct qd_stats_timer *t)
{
    if (t->next && rte_rdtsc() >= t->next) {
        qd_stats_print("counters");
        t->next += t->period;
    }
}
