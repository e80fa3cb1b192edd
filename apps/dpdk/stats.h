/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Counters: one cache-aligned block per lcore (and one for the control
 * thread), each written by its owner only, summed by readers (the periodic
 * print, the totals at exit, DPDK telemetry). The names are the same in the
 * print, in telemetry (/quicoff/stats) and in docs/dpdk.md; where a counter
 * means what a libquicoff counter means, it has the library's name.
 */
#ifndef QD_STATS_H
#define QD_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include <rte_common.h>
#include <rte_lcore.h>

#define QD_COUNTERS(X)                                                                        \
    /* whichever lcore polls the ports (rtc workers, pipeline's I/O lcore) */                 \
    X(host_rx, "frames received on the host port")                                            \
    X(host_tx, "frames sent on the host port")                                                \
    X(net_rx, "frames received on the network port")                                          \
    X(net_tx, "frames sent on the network port")                                              \
    X(pass_to_net, "host frames that are no offload frames, sent on unchanged")               \
    X(pass_to_host, "network frames passed to the host unchanged (not QUIC, unknown)")        \
    X(unknown_dropped, "not QUIC or unknown connection, dropped (--unknown drop)")            \
    X(signal_from_network, "0x88B5/0x88B6 frames from the network port, dropped")             \
    X(compat_rejected, "compat frames without --compat, dropped")                             \
    X(host_bad_frame, "undecodable data frames from the host, dropped")                       \
    X(host_trains, "DATA_TRAIN frames from the host (decoded)")                               \
    X(host_train_packets, "QUIC packets those trains carried")                                \
    X(multiseg_dropped, "multi-segment frames for the workers, dropped")                      \
    X(tag_stack_dropped, "frames with > 2 VLAN tags or SNAP-wrapped 0x88B5/6, dropped")       \
    X(truncated_dropped, "IP frames shorter than their IP length (cut by the port), dropped") \
    X(busy_cycles, "TSC cycles of poll-loop rounds that found work (testpmd's core cycles)")  \
    X(steered, "frames handed to the owning worker's ring (rtc: those on another's queue)")   \
    X(steer_ring_full, "frames dropped: the worker's ring was full")                          \
    X(ctrl_ring_full, "signaling frames dropped: the control ring was full")                  \
    X(tx_ring_full, "frames dropped: a TX ring was full")                                     \
    X(tx_port_full, "frames dropped: the port did not take them")                             \
    /* workers: host -> network (protect) */                                                  \
    X(tx_packets, "packets protected and sent to the network")                                \
    X(tx_bytes, "plaintext payload bytes of those")                                           \
    X(tx_dropped, "host packets not protected, dropped (never sent)")                         \
    X(tx_unknown_connection, "host packets naming no TX entry")                               \
    X(tx_malformed, "host packets with a bad QUIC header / PN / length")                      \
    X(tx_key_phase_unavailable, "host packets for a key phase without keys")                  \
    X(tx_key_exhausted, "host packets refused at the confidentiality limit")                  \
    X(tx_no_space, "host packets without room for the tag / headers")                         \
    X(tx_no_encap, "host packets of an entry without encapsulation")                          \
    X(tx_too_big, "host packets whose protected IP packet exceeds the network MTU")           \
    X(tx_usage_limit_reached, "protected packets past the entry's usage threshold")           \
    /* workers: network -> host (unprotect) */                                                \
    X(rx_packets, "packets unprotected and sent to the host")                                 \
    X(rx_bytes, "plaintext payload bytes of those")                                           \
    X(rx_dropped, "network packets dropped (auth failure, no keys, ...)")                     \
    X(auth_failures, "network packets that failed authentication")                            \
    X(rx_unknown_connection, "QUIC packets matching no entry")                                \
    X(rx_malformed, "UDP datagrams that are not QUIC packets")                                \
    X(rx_unsupported, "Version Negotiation, Retry, unknown versions")                         \
    X(rx_key_phase_unavailable, "network packets for a key phase without keys")               \
    X(rx_key_exhausted, "network packets of a connection past its integrity limit")           \
    X(rx_usage_limit_reached, "unprotected packets past the entry's usage threshold")         \
    X(rx_fail_passed, "authentication failures handed to the host (fail action pass)")        \
    X(key_updates, "key phase changes seen by the data plane")                                \
    X(events_sent, "EVENT frames sent to the host")                                           \
    X(events_suppressed, "EVENT frames not sent (rate limit)")                                \
    X(events_not_v1,                                                                          \
      "connection-less EVENTs not sent: --compat and no v1 frame from the host yet")          \
    X(mbuf_alloc_failed, "mbuf allocations that failed")                                      \
    X(cdev_enqueue_failed, "lookaside: operations the cryptodev did not take")                \
    X(cdev_op_failed, "lookaside: operations the cryptodev failed (other than auth)")         \
    X(cdev_no_session, "lookaside: packets with no session for their key and AAD length")     \
    /* control thread */                                                                      \
    X(sig_rx, "signaling frames received from the host")                                      \
    X(sig_add, "ADD / compat signaling requests")                                             \
    X(sig_update, "UPDATE requests")                                                          \
    X(sig_remove, "REMOVE requests")                                                          \
    X(sig_query, "QUERY requests")                                                            \
    X(sig_failed, "requests answered with an error status")                                   \
    X(sig_bad, "undecodable signaling frames")                                                \
    X(sig_retried, "requests seen before: the remembered ACK sent again")                     \
    X(sig_bad_direction,                                                                      \
      "requests with a direction > 1: answered invalid_argument, direction 0xFF")             \
    X(acks_sent, "ACK / STATS frames sent to the host")

struct qd_counters {
#define QD_X(name, help) uint64_t name;
    QD_COUNTERS(QD_X)
#undef QD_X
} __rte_cache_aligned;

/* The number of counters (not sizeof: the block is padded to a cache line). */
enum {
#define QD_X(name, help) QD_COUNTER_##name,
    QD_COUNTERS(QD_X)
#undef QD_X
        QD_NB_COUNTERS
};

#define QD_STATS_CTRL RTE_MAX_LCORE /* the control thread's block */
extern struct qd_counters qd_stats[RTE_MAX_LCORE + 1];

/* Writer side: the owner only; a relaxed store, no locked instruction. */
#define QD_ADD(c, field, n) \
    __atomic_store_n(&(c)->field, (c)->field + (uint64_t)(n), __ATOMIC_RELAXED)
#define QD_INC(c, field) QD_ADD(c, field, 1)

/* The calling lcore's block (the control thread's if it is not an lcore). */
static inline struct qd_counters *qd_my_stats(void)
{
    unsigned id = rte_lcore_id();
    return &qd_stats[id < RTE_MAX_LCORE ? id : QD_STATS_CTRL];
}

/* Sum of every block. */
void qd_stats_total(struct qd_counters *out);
/* Sum of rx_unknown_connection over the blocks (EVENT COUNT). */
uint64_t qd_stats_sum_rx_unknown(void);
/* Sum of tx_too_big over the blocks (EVENT too_big COUNT). */
uint64_t qd_stats_sum_tx_too_big(void);
/* Prints per-lcore non-zero counters and the totals (and the library's). */
void qd_stats_print(const char *title);
/* The name of counter i (QD_COUNTERS order), NULL past the last. */
const char *qd_stats_name(unsigned i);
/* A consistent-enough copy of one block (each counter read atomically). */
void qd_stats_read(unsigned block, struct qd_counters *out);
/* Whether a block has any non-zero counter (an lcore that ran). */
bool qd_stats_block_used(unsigned block);

/* The periodic counter print (--stats-interval) of the main lcore's loop. */
struct qd_stats_timer {
    uint64_t period, next; /* TSC; next 0 = off */
};
void qd_stats_timer_init(struct qd_stats_timer *t);
void qd_stats_timer_tick(struct qd_stats_timer *t);

#endif
