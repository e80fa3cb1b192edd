/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The I/O lcore of pipeline mode (--io-mode pipeline; the main lcore): RX
 * burst on queue 0 of both ports -> classify and sort each frame
 * (classify.c) -> hand each worker its frames through its ring, signaling to
 * the control thread, other traffic straight through; then drain the TX
 * rings onto the ports; every --stats-interval, print the counters.
 */
#include "io_lcore.h"

#include <stdio.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "classify.h"
#include "idle.h"
#include "options.h"
#include "rings.h"
#include "stats.h"

int qd_io_main(void)
{
    static struct qd_sort s; /* large: off the stack */
    struct qd_stats_timer timer;

    s.st = qd_my_stats();
    qd_stats_timer_init(&timer);
    printf("quicoff-dpdk: I/O on lcore %u (host port %u, network port %u)\n", rte_lcore_id(),
           qda.host_port, qda.net_port);
    fflush(stdout);
    unsigned empty = 0;
    while (!qda.quit) {
        uint64_t t0 = rte_rdtsc();
        bool busy = qd_poll_ports(&s, 0) != 0;

        for (unsigned w = 0; w < qda.nb_workers; w++)
            qd_handoff(&s, w);
        qd_tx_or_free(qda.net_port, 0, s.to_net, s.n_net, s.st, false);
        qd_tx_or_free(qda.host_port, 0, s.to_host, s.n_host, s.st, true);
        s.n_net = s.n_host = 0;
        busy |= qd_drain_ring(qda.net_tx_ring, qda.net_port, 0, s.st, false);
        busy |= qd_drain_ring(qda.host_tx_ring, qda.host_port, 0, s.st, true);
        if (busy)
            QD_ADD(s.st, busy_cycles, rte_rdtsc() - t0);
        qd_idle(&empty, busy);
        qd_stats_timer_tick(&timer);
    }
    return 0;
}
