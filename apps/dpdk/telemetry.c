/* SPDX-License-Identifier: Apache-2.0 */
/* DPDK telemetry endpoints: the counters, the table, the entries, the options (telemetry.h). */
#include "telemetry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_telemetry.h>

#include "conns.h"
#include "lookaside.h"
#include "options.h"
#include "stats.h"

static void dict_counters(struct rte_tel_data *d, const struct qd_counters *c)
{
    for (unsigned i = 0; i < QD_NB_COUNTERS; i++)
        rte_tel_data_add_dict_u64(d, qd_stats_name(i), ((const uint64_t *)c)[i]);
}

/* /quicoff/stats: the totals. */
static int tel_stats(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    (void)params;
    struct qd_counters t;
    qd_stats_total(&t);
    rte_tel_data_start_dict(d);
    dict_counters(d, &t);
    return 0;
}

/* /quicoff/lcores: which blocks are in use; /quicoff/lcore,ID: one block
 * (ID "control" for the control thread). */
static int tel_lcores(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    (void)params;
    rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
    for (unsigned b = 0; b < RTE_MAX_LCORE; b++)
        if (qd_stats_block_used(b))
            rte_tel_data_add_array_int(d, (int)b);
    return 0;
}

static int tel_lcore(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    unsigned b;
    if (!params)
        return -1;
    if (!strcmp(params, "control")) {
        b = QD_STATS_CTRL;
    } else {
        char *end;
        unsigned long v = strtoul(params, &end, 10);
        if (*end || v >= RTE_MAX_LCORE)
            return -1;
        b = (unsigned)v;
    }
    struct qd_counters c;
    qd_stats_read(b, &c);
    rte_tel_data_start_dict(d);
    dict_counters(d, &c);
    return 0;
}

/* /quicoff/table: the library's table counters, under its names. */
static int tel_table(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    (void)params;
    struct quicoff_table_stats s;
    pthread_mutex_lock(&qda.conns->lock);
    if (qda.conns->closed) {
        pthread_mutex_unlock(&qda.conns->lock);
        return -1;
    }
    quicoff_table_stats(qda.table, &s);
    pthread_mutex_unlock(&qda.conns->lock);
    rte_tel_data_start_dict(d);
#define T(f) rte_tel_data_add_dict_u64(d, #f, s.f)
    T(rx_packets);
    T(rx_bytes);
    T(tx_packets);
    T(tx_bytes);
    T(auth_failures);
    T(unknown_connection);
    T(malformed);
    T(key_phase_unavailable);
    T(usage_limit_reached);
    T(key_exhausted);
    T(unsupported);
    T(key_updates);
    T(connections);
    T(retired_pending);
#undef T
    rte_tel_data_add_dict_string(d, "backend", quicoff_table_backend(qda.table));
    return 0;
}

/* /quicoff/connections: {"tx": [indexes], "rx": [indexes], "count": n}
 * (at most 512 indexes per direction listed). */
static int tel_connections(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    (void)params;
    struct rte_tel_data *arr[2] = {rte_tel_data_alloc(), rte_tel_data_alloc()};
    if (!arr[0] || !arr[1]) {
        rte_tel_data_free(arr[0]);
        rte_tel_data_free(arr[1]);
        return -1;
    }
    uint64_t count = 0;
    rte_tel_data_start_dict(d);
    rte_tel_data_start_array(arr[0], RTE_TEL_U64_VAL);
    rte_tel_data_start_array(arr[1], RTE_TEL_U64_VAL);
    unsigned listed[2] = {0, 0};
    pthread_mutex_lock(&qda.conns->lock);
    /* every entry, including a compat RX index's second path (its index is
     * then listed once per DCID) */
    for (const struct qd_conn *e = qda.conns->closed ? NULL : qda.conns->all; e; e = e->next) {
        count++;
        if (listed[e->direction]++ < RTE_TEL_MAX_ARRAY_ENTRIES)
            rte_tel_data_add_array_u64(arr[e->direction], e->index);
    }
    pthread_mutex_unlock(&qda.conns->lock);
    rte_tel_data_add_dict_u64(d, "count", count);
    rte_tel_data_add_dict_container(d, "tx", arr[0], 0);
    rte_tel_data_add_dict_container(d, "rx", arr[1], 0);
    return 0;
}

/* /quicoff/connection,tx|rx,INDEX: one entry and its counters. */
static int tel_connection(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    char dir[8];
    unsigned long index;
    if (!params || sscanf(params, "%7[a-z],%lu", dir, &index) != 2)
        return -1;
    unsigned di = !strcmp(dir, "tx") ? QUICOFF_DIR_TX : !strcmp(dir, "rx") ? QUICOFF_DIR_RX : 2;
    if (di > 1 || index > UINT32_MAX)
        return -1;
    struct quicoff_conn_stats s;
    struct qd_conn copy;
    pthread_mutex_lock(&qda.conns->lock);
    struct qd_conn *c = qda.conns->closed ? NULL
                                          : qd_conn_by_index(qda.conns, di, (uint32_t)index);
    if (c) {
        copy = *c;
        if (quicoff_conn_stats(qda.table, c->handle, &s) != QUICOFF_OK)
            c = NULL;
    }
    pthread_mutex_unlock(&qda.conns->lock);
    if (!c)
        return -1;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "index", copy.index);
    rte_tel_data_add_dict_string(d, "direction", copy.direction == QUICOFF_DIR_TX ? "tx" : "rx");
    rte_tel_data_add_dict_u64(d, "handle", copy.handle);
    rte_tel_data_add_dict_string(d, "suite", quicoff_suite_name((quicoff_suite_t)copy.suite));
    rte_tel_data_add_dict_u64(d, "level", copy.level);
    rte_tel_data_add_dict_string(d, "format", copy.compat ? "compat" : "v1");
#define S(f) rte_tel_data_add_dict_u64(d, #f, s.f)
    S(packets);
    S(bytes);
    S(auth_failures);
    S(malformed);
    S(key_phase_unavailable);
    S(key_updates);
    S(key_generation);
    S(largest_pn);
    S(key_packets);
#undef S
    return 0;
}

/* /quicoff/options: what the application runs with. */
static int tel_options(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    (void)params;
    const struct qd_options *o = qda.opt;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_int(d, "host_port", o->host_port);
    rte_tel_data_add_dict_int(d, "net_port", o->net_port);
    rte_tel_data_add_dict_int(d, "workers", (int)o->workers);
    rte_tel_data_add_dict_string(d, "io_mode", o->io_mode == QD_IO_RTC ? "rtc" : "pipeline");
    rte_tel_data_add_dict_u64(d, "tsc_hz", rte_get_tsc_hz());
    rte_tel_data_add_dict_string(d, "crypto",
                                 o->crypto == QD_CRYPTO_INLINE ? "inline" : "lookaside");
    rte_tel_data_add_dict_string(d, "cryptodev",
                                 o->crypto == QD_CRYPTO_INLINE ? "" : o->cryptodev);
    rte_tel_data_add_dict_int(d, "local_cid_len", o->local_cid_len);
    rte_tel_data_add_dict_u64(d, "capacity", o->capacity);
    rte_tel_data_add_dict_string(d, "unknown", o->unknown == QD_UNKNOWN_PASS ? "pass" : "drop");
    rte_tel_data_add_dict_int(d, "compat", o->compat);
    rte_tel_data_add_dict_string(d, "backend", qda.table ? quicoff_table_backend(qda.table) : "");
    return 0;
}

/* /quicoff/lookaside: the cryptodev sessions (lookaside mode only). */
static int tel_lookaside(const char *cmd, const char *params, struct rte_tel_data *d)
{
    (void)cmd;
    (void)params;
    struct qd_la_usage u;
    pthread_mutex_lock(&qda.conns->lock); /* the device outlives an open registry */
    bool gone = qda.conns->closed || !qda.la;
    if (!gone)
        qd_la_usage(qda.la, &u);
    pthread_mutex_unlock(&qda.conns->lock);
    if (gone)
        return -1;
    rte_tel_data_start_dict(d);
    rte_tel_data_add_dict_u64(d, "keys", u.keys);
    rte_tel_data_add_dict_u64(d, "sessions", u.sessions);
    rte_tel_data_add_dict_u64(d, "session_pool", u.session_pool);
    return 0;
}

int qd_telemetry_init(void)
{
    int r = 0;
    r |= rte_telemetry_register_cmd("/quicoff/stats", tel_stats,
                                    "quicoff-dpdk counters, summed over lcores. No parameters");
    r |= rte_telemetry_register_cmd("/quicoff/lcores", tel_lcores,
                                    "lcores with counters. No parameters");
    r |= rte_telemetry_register_cmd("/quicoff/lcore", tel_lcore,
                                    "counters of one lcore. Parameters: lcore id or 'control'");
    r |= rte_telemetry_register_cmd("/quicoff/table", tel_table,
                                    "libquicoff table counters. No parameters");
    r |= rte_telemetry_register_cmd("/quicoff/connections", tel_connections,
                                    "entry indexes per direction. No parameters");
    r |= rte_telemetry_register_cmd("/quicoff/connection", tel_connection,
                                    "one entry's counters. Parameters: tx|rx,index");
    r |= rte_telemetry_register_cmd("/quicoff/options", tel_options,
                                    "the options in use. No parameters");
    r |= rte_telemetry_register_cmd("/quicoff/lookaside", tel_lookaside,
                                    "lookaside keys and cryptodev sessions. No parameters");
    return r ? -1 : 0;
}
