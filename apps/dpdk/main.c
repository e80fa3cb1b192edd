/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff-dpdk: the bump-in-the-wire QUIC packet-protection offload.
 *
 *   host QUIC stack <-> [host port | quicoff-dpdk | network port] <-> network
 *
 * main() only wires the pieces: EAL, options, mempool, ports, table, rings,
 * RCU, lookaside, telemetry, the control thread, the worker lcores; the main
 * lcore then runs worker 0 (run-to-completion) or the I/O loop (pipeline)
 * until SIGINT/SIGTERM, and everything is torn down in reverse order.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "classify.h"
#include "conns.h"
#include "lookaside.h"
#include "options.h"
#include "ports.h"
#include "signaling.h"
#include "stats.h"
#include "telemetry.h"
#include "wipe.h"
#include "io_lcore.h"
#include "worker.h"

static struct qd_options opts;

static void on_signal(int sig)
{
    (void)sig;
    qda.quit = true;
}

static struct rte_ring *ring(const char *name, unsigned size, unsigned flags)
{
    struct rte_ring *r = rte_ring_create(name, size, (int)rte_socket_id(), flags);
    if (!r)
        rte_exit(EXIT_FAILURE, "cannot create ring %s: %s\n", name, rte_strerror(rte_errno));
    return r;
}

static void free_ring(struct rte_ring *r)
{
    void *m;
    if (!r)
        return;
    while (rte_ring_dequeue(r, &m) == 0)
        qd_mbuf_free_wiped(m); /* signaling (keys), host data (plaintext) */
    rte_ring_free(r);
}

int main(int argc, char **argv)
{
    int n = rte_eal_init(argc, argv);
    if (n < 0)
        rte_exit(EXIT_FAILURE, "cannot initialise DPDK (EAL): %s\n", rte_strerror(rte_errno));
    argc -= n;
    argv += n;
    argv[0] = "quicoff-dpdk";

    qd_options_default(&opts);
    if (qd_options_parse(&opts, argc, argv) != 0)
        rte_exit(EXIT_FAILURE, "bad options\n");
    qd_options_print(&opts);
    qda.opt = &opts;
    qda.host_port = opts.host_port;
    qda.net_port = opts.net_port;
    qda.nb_workers = opts.workers;

    /* lcores: rtc, worker 0 on the main lcore and one worker per further
     * lcore; pipeline, the main lcore does I/O and one worker per further lcore */
    const bool rtc = opts.io_mode == QD_IO_RTC;
    unsigned lc, k = 0;
    if (rtc)
        qda.worker_lcore[k++] = rte_get_main_lcore();
    RTE_LCORE_FOREACH_WORKER(lc)
    {
        if (k < qda.nb_workers)
            qda.worker_lcore[k++] = lc;
    }
    if (k < qda.nb_workers) {
        unsigned need = qda.nb_workers + (rtc ? 0 : 1);
        rte_exit(EXIT_FAILURE,
                 "--workers %u needs %u lcores (%s); EAL gave %u (use e.g. -l 0-%u)\n",
                 qda.nb_workers, need, rtc ? "one per worker" : "1 I/O + 1 per worker",
                 rte_lcore_count(), need - 1);
    }
    {
        /* I/O + workers on a common CPU (e.g. --lcores 0@0,1@0): a busy-polling
         * lcore must let the others run, or each ring hop waits for a tick */
        unsigned lcs[QD_MAX_WORKERS + 1], nl = 0;
        if (!rtc)
            lcs[nl++] = rte_get_main_lcore();
        for (unsigned w = 0; w < qda.nb_workers; w++)
            lcs[nl++] = qda.worker_lcore[w];
        for (unsigned i = 0; i < nl; i++)
            for (unsigned j = i + 1; j < nl; j++) {
                rte_cpuset_t a = rte_lcore_cpuset(lcs[i]), b = rte_lcore_cpuset(lcs[j]), c;
                CPU_AND(&c, &a, &b);
                if (CPU_COUNT(&c))
                    qda.lcores_share_cpu = true;
            }
    }

    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    /* one pool for every frame: RX, ACKs, events, copies of coalesced
     * packets. A frame of the MTU must fit one mbuf (the workers take
     * single-segment frames; net_af_packet refuses a framesz its mbufs cannot
     * hold): the data room grows with --net-mtu, as framesz does in
     * docs/dpdk.md's recipe (MTU + 128 rounded up to 1 KiB). */
    uint32_t room = RTE_MBUF_DEFAULT_DATAROOM;
    if (opts.net_mtu)
        room = RTE_MAX(room, RTE_ALIGN_CEIL((uint32_t)opts.net_mtu + 128, 1024));
    if (room + RTE_PKTMBUF_HEADROOM > UINT16_MAX)
        room = UINT16_MAX - RTE_PKTMBUF_HEADROOM;
    qda.pool = rte_pktmbuf_pool_create("qd_mbufs", opts.nb_mbufs, 256, 0,
                                       (uint16_t)(room + RTE_PKTMBUF_HEADROOM),
                                       (int)rte_socket_id());
    if (!qda.pool)
        rte_exit(EXIT_FAILURE, "cannot create the mbuf pool: %s\n", rte_strerror(rte_errno));

    /* A jumbo host link (--host-mtu): its frames arrive in mbufs of their
     * own pool, one segment each (the workers read a frame in one piece, and
     * net_af_packet does not scatter), so the few host RX mbufs are big and
     * the many others stay small. The data room is a uint16_t: 65535 minus
     * the headroom is the longest frame. */
    qda.host_rx_pool = qda.pool;
    if (opts.host_mtu) {
        uint32_t hroom = RTE_ALIGN_CEIL((uint32_t)opts.host_mtu + 128, 1024);
        if (hroom + RTE_PKTMBUF_HEADROOM > UINT16_MAX)
            hroom = UINT16_MAX - RTE_PKTMBUF_HEADROOM;
        qda.host_rx_pool = rte_pktmbuf_pool_create("qd_host_mbufs", 2048, 64, 0,
                                                   (uint16_t)(hroom + RTE_PKTMBUF_HEADROOM),
                                                   (int)rte_socket_id());
        if (!qda.host_rx_pool)
            rte_exit(EXIT_FAILURE, "cannot create the host port's jumbo mbuf pool: %s\n",
                     rte_strerror(rte_errno));
        printf("quicoff-dpdk: host MTU %u: host frames up to %u bytes in one mbuf\n",
               opts.host_mtu, hroom);
    }

    struct qd_port_caps hc, nc;
    uint16_t nb_queues = rtc ? (uint16_t)qda.nb_workers : 1;
    if (qd_port_init(qda.host_port, "host", nb_queues, false,
                     opts.host_mtu ? opts.host_mtu : opts.net_mtu, qda.host_rx_pool, &hc) != 0 ||
        qd_port_init(qda.net_port, "network", nb_queues, true, opts.net_mtu, qda.pool, &nc) != 0)
        rte_exit(EXIT_FAILURE, "port setup failed\n");
    /* the largest IP packet the network takes: what protected packets are
     * checked against (tx_too_big, EVENT too_big) */
    qda.net_mtu = opts.net_mtu ? opts.net_mtu : nc.mtu;
    printf("quicoff-dpdk: network MTU %u (%s): larger protected packets are dropped\n",
           qda.net_mtu, opts.net_mtu ? "--net-mtu" : "the port's");
    rte_eth_macaddr_get(qda.host_port, &qda.host_port_mac);
    rte_eth_macaddr_get(qda.net_port, &qda.net_port_mac);
    qda.net_tx_ip_cksum = nc.ipv4_cksum;
    qda.net_tx_udp_cksum = nc.udp_cksum;

    struct quicoff_table_config tc = {
        .capacity = opts.capacity,
        .local_cid_len = opts.local_cid_len,
        .max_workers = (uint16_t)qda.nb_workers,
        .backend = opts.backend,
    };
    quicoff_status_t st;
    qda.table = quicoff_table_create(&tc, &st);
    if (!qda.table)
        rte_exit(EXIT_FAILURE, "cannot create the connection table: %s\n",
                 quicoff_status_name(st));
    printf("quicoff-dpdk: connection table: %u entries, local CID length %u, backend %s\n",
           opts.capacity, opts.local_cid_len, quicoff_table_backend(qda.table));
    qda.conns = qd_conns_create(opts.capacity);
    if (!qda.conns)
        rte_exit(EXIT_FAILURE, "cannot allocate the connection registry\n");

    size_t rcu_sz = rte_rcu_qsbr_get_memsize(qda.nb_workers);
    qda.rcu = rte_zmalloc("qd_rcu", rcu_sz, RTE_CACHE_LINE_SIZE);
    if (!qda.rcu || rte_rcu_qsbr_init(qda.rcu, qda.nb_workers) != 0)
        rte_exit(EXIT_FAILURE, "cannot set up RCU\n");

    if (opts.crypto == QD_CRYPTO_LOOKASIDE) {
        qda.la = qd_la_create(opts.cryptodev, qda.nb_workers, opts.capacity);
        if (!qda.la)
            rte_exit(EXIT_FAILURE, "lookaside crypto setup failed\n");
        /* the cryptodev sessions follow the library's keys */
        struct quicoff_key_hooks hooks;
        qd_la_key_hooks(qda.la, &hooks);
        if (quicoff_table_set_key_hooks(qda.table, &hooks) != QUICOFF_OK)
            rte_exit(EXIT_FAILURE, "cannot register the lookaside key hooks\n");
        qd_la_print(qda.la);
    }

    /* rtc: every worker polls a port, so the rings into a worker and into the
     * control thread have several producers; pipeline: the I/O lcore only */
    char name[RTE_RING_NAMESIZE];
    unsigned in_flags = RING_F_SC_DEQ | (rtc && qda.nb_workers > 1 ? 0 : RING_F_SP_ENQ);
    for (unsigned w = 0; w < qda.nb_workers; w++) {
        snprintf(name, sizeof(name), "qd_worker%u", w);
        qda.worker_ring[w] = ring(name, QD_RING_SIZE, in_flags);
    }
    qda.host_tx_ring = ring("qd_host_tx", QD_RING_SIZE, RING_F_SC_DEQ);
    qda.net_tx_ring = ring("qd_net_tx", QD_RING_SIZE, RING_F_SC_DEQ);
    qda.ctrl_ring = ring("qd_ctrl", QD_CTRL_RING_SIZE, in_flags);

    for (unsigned w = 0; w < qda.nb_workers; w++) {
        struct qd_worker *wk = &qd_workers[w];
        wk->id = w;
        wk->queue = rtc ? (uint16_t)w : 0;
        if (rtc &&
            !(wk->sort = rte_zmalloc("qd_sort", sizeof(struct qd_sort), RTE_CACHE_LINE_SIZE)))
            rte_exit(EXIT_FAILURE, "cannot allocate worker %u's sort buffers\n", w);
        wk->qw = quicoff_worker_create(qda.table);
        if (!wk->qw)
            rte_exit(EXIT_FAILURE, "cannot create libquicoff worker %u\n", w);
        if (qda.la && !(wk->la = qd_la_worker_create(qda.la, w, wk->qw)))
            rte_exit(EXIT_FAILURE, "cannot set up the cryptodev queue pair of worker %u\n", w);
    }

    if (qd_telemetry_init() != 0)
        printf("quicoff-dpdk: telemetry endpoints not registered\n");

    pthread_t ctrl;
    if (qd_signaling_start(&ctrl) != 0)
        rte_exit(EXIT_FAILURE, "cannot start the control thread\n");
    for (unsigned w = rtc ? 1 : 0; w < qda.nb_workers; w++)
        if (rte_eal_remote_launch(rtc ? qd_rtc_main : qd_worker_main, &qd_workers[w],
                                  qda.worker_lcore[w]) != 0)
            rte_exit(EXIT_FAILURE, "cannot launch worker %u\n", w);

    printf("quicoff-dpdk: running (%u workers, %s, crypto %s); Ctrl-C to stop\n", qda.nb_workers,
           rtc ? "run to completion" : "pipeline",
           opts.crypto == QD_CRYPTO_INLINE ? "inline" : "lookaside");
    fflush(stdout);
    if (rtc)
        qd_rtc_main(&qd_workers[0]);
    else
        qd_io_main();

    /* Shutdown: the main lcore's loop has stopped (rtc: worker 0, now RCU
     * offline); the control thread finishes (its RCU waits need the other
     * workers), then the workers stop. */
    printf("quicoff-dpdk: stopping\n");
    qd_signaling_stop(ctrl);
    qda.workers_quit = true;
    rte_eal_mp_wait_lcore();
    qd_stats_print("totals");

    for (unsigned w = 0; w < qda.nb_workers; w++)
        free_ring(qda.worker_ring[w]);
    free_ring(qda.host_tx_ring);
    free_ring(qda.net_tx_ring);
    free_ring(qda.ctrl_ring);
    qd_port_close(qda.host_port);
    qd_port_close(qda.net_port);
    qd_signaling_clear_all();
    for (unsigned w = 0; w < qda.nb_workers; w++) {
        if (qd_workers[w].la)
            qd_la_worker_destroy(qd_workers[w].la);
        quicoff_worker_destroy(qd_workers[w].qw);
        rte_free(qd_workers[w].sort);
    }
    pthread_mutex_lock(&qda.conns->lock);
    qda.conns->closed = true;
    pthread_mutex_unlock(&qda.conns->lock);
    /* the table first: its retire hooks free the sessions of the keys left */
    quicoff_table_destroy(qda.table);
    qda.table = NULL;
    if (qda.la)
        qd_la_destroy(qda.la);
    rte_eal_cleanup();
    printf("quicoff-dpdk: stopped\n");
    return 0;
}
