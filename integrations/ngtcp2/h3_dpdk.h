/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file h3_dpdk.h
 * qo-h3-server's dpdk backend: the seam's protect and unprotect done by a
 * quicoff-dpdk over the host<->offload protocol (libquicoff-host).
 *
 * The handshake leaves as ordinary UDP through the offload's pass-through.
 * At the 1-RTT secrets the server ADDs a TX entry (the client's CID, the
 * secret, the encapsulation of its datagrams) and an RX entry (the server's
 * CID, the secret; the offload derives the next generation itself, so the
 * peer's key update is taken at once) and waits for their ACKs. From then
 * on the 1-RTT packets ngtcp2 writes go to the offload in DATA_TRAIN frames
 * (runs of consecutive packets, as a stack writes them for UDP GSO) or
 * DATA_TO_OFFLOAD frames (a packet that starts no run), and the peer's 1-RTT
 * packets come back opened as DATA_TO_HOST frames. Key updates: UPDATE of
 * both entries with the next generation's secret, from update_key.
 *
 * Faults: an ADD refused (table full, unsupported, ...) or unanswered keeps
 * the connection on ngtcp2's crypto from the start. Mid-connection the
 * offload is presumed alive while DATA_TO_HOST, ACKs or EVENTs arrive; when
 * none came for silence_ms while ngtcp2 has bytes in flight (so the peer
 * should be answering), the offload is asked for the RX entry's counters (a
 * QUERY); no answer within the host library's re-sends (20 ms doubling, 6
 * frames: about 1.3 s), an answer without the entry (the offload
 * restarted), or an UPDATE that is not acknowledged, and the connection
 * falls back to ngtcp2's own keys. Silence alone is not taken as
 * a verdict: a peer that stops sending is silent too, and the QUERY tells
 * the two apart.
 */
#ifndef QO_H3_DPDK_H
#define QO_H3_DPDK_H

#include <stdbool.h>
#include <stdint.h>

#include "h3_offload.h"

struct qo_dpdk_config {
    const char *ifname;   /**< the host interface cabled to quicoff-dpdk's host port */
    bool has_offload_mac; /**< else frames to the offload are broadcast */
    uint8_t offload_mac[6];
    unsigned silence_ms; /**< DATA_TO_HOST silence with bytes in flight before a QUERY */
    /** One DATA_TO_OFFLOAD per 1-RTT packet, never a DATA_TRAIN (to measure
     *  what trains buy). */
    bool no_trains;
    /** The host link's MTU, which bounds a train (its frame is Ethernet +
     *  the 24-byte train header + the packets); 0: the interface's own
     *  (SIOCGIFMTU), so a jumbo link gets long trains and a 1,500-byte one
     *  trains of one full-size packet, sent as DATA_TO_OFFLOAD (small packets
     *  of a run may still share a frame). */
    unsigned link_mtu;
};

/** getopt_long() entries of the backend's options (--host-if, --offload-mac,
 *  --offload-silence-ms, --offload-trains; both programs take the same ones),
 *  for a program's option table; qo_dpdk_option() reads them. */
#define QO_DPDK_LONG_OPTIONS                                                                  \
    {"host-if", required_argument, NULL, 'i'}, {"offload-mac", required_argument, NULL, 'm'}, \
        {"offload-silence-ms", required_argument, NULL, 'S'},                                 \
    {                                                                                         \
        "offload-trains", required_argument, NULL, 'T'                                        \
    }

/** One of those options (opt as getopt_long() returned it, its argument)
 *  into cfg: 1 taken, 0 not one of them, -1 a bad value (said on stderr,
 *  prefixed with prog). */
int qo_dpdk_option(struct qo_dpdk_config *cfg, int opt, const char *arg, const char *prog);

/** Opens the host interface and makes the dpdk backend o's (after
 *  qo_offload_init(o, QO_OFFLOAD_DPDK, ...)). -1 with a message on stderr. */
int qo_dpdk_open(struct qo_offload *o, const struct qo_dpdk_config *cfg);

/** As qo_dpdk_open() on a socket that carries whole Ethernet frames (the
 *  tests' socket pair); the backend owns fd from then on. */
int qo_dpdk_open_fd(struct qo_offload *o, const struct qo_dpdk_config *cfg, int fd,
                    const uint8_t mac[6]);

/** The host-library fd to poll for POLLIN beside the UDP socket. */
int qo_dpdk_fd(const struct qo_offload *o);

/** Milliseconds until the backend needs a call of qo_dpdk_tick() (re-sends,
 *  the silence check); -1 none. */
int qo_dpdk_timeout_ms(const struct qo_offload *o);

/** Reads the 1-RTT packets the offload opened: pkt[i] (unmasked header +
 *  plaintext, then QUICOFF_TAG_LEN placeholder bytes for ngtcp2's null
 *  decrypt; len[i] counts them) stays valid until the next call. Answers
 *  and events met on the way are handled. */
unsigned qo_dpdk_recv(struct qo_offload *o, uint8_t **pkt, size_t *len, unsigned max);

/** Once per loop: re-sends and timeouts, the liveness QUERY, and the
 *  fallback when the offload is lost. awaiting_peer: ngtcp2 has bytes in
 *  flight. */
void qo_dpdk_tick(struct qo_offload *o, bool awaiting_peer);

/** How many datagrams of batch b from i on make one DATA_TRAIN: 1-RTT
 *  packets alone in their datagrams, consecutive PNs, every packet the size
 *  of the first but a shorter last one (which ends the train), at most max
 *  bytes of packets. 1: datagram i starts no train (it leaves as
 *  DATA_TO_OFFLOAD). Exposed for the tests of the grouping rules. */
unsigned qo_dpdk_train_length(const struct qo_tx_batch *b, unsigned i, uint32_t max);

#endif /* QO_H3_DPDK_H */
