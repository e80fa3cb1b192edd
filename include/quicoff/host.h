/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file host.h
 * libquicoff-host: the host's end of the host <-> offload protocol
 * (docs/protocol.md, docs/host.md), for a QUIC stack that drives a quicoff
 * offload (quicoff-dpdk) from the host.
 *
 * What it does for the stack:
 *  - opens the host-facing interface: an AF_PACKET socket bound to the v1
 *    EtherType (0x88B5) on a named interface, non-blocking, with a pollable
 *    fd (quicoff_host_fd()) for the stack's event loop;
 *  - sends ADD / UPDATE / REMOVE / QUERY with request IDs it chooses, keeps
 *    the encoded frame until the ACK / STATS comes, re-sends the identical
 *    frame (same request ID: the offload executes it at most once) after
 *    20 ms, 40 ms, ... (docs/protocol.md §6), and reports a request that got
 *    no answer after the last try as QUICOFF_HOST_TIMEOUT;
 *  - allows one outstanding request per (direction, index) (§6 rule 2);
 *  - delivers EVENTs to a callback, counting gaps in their sequence numbers;
 *  - sends DATA_TO_OFFLOAD in batches (one sendmmsg per batch, the QUIC
 *    packet sent from the caller's buffer, not copied) and receives
 *    DATA_TO_HOST in batches (one recvmmsg per batch).
 *
 * It links libquicoff-wire (the codec) and not the data-plane library
 * libquicoff: a stack that offloads its crypto does not carry a second copy
 * of it (tests/c: 'libquicoff_host_links_wire_only').
 *
 * Keys: a request's keys exist in the library only in the encoded frame kept
 * for re-sending; it is wiped when the request completes or times out, and
 * the caller's message is wiped (quicoff_wire_msg_clear) as soon as it is
 * encoded.  Nothing is ever logged.
 *
 * Threading: a handle is used by one thread at a time; different handles
 * are independent.
 */
#ifndef QUICOFF_HOST_H
#define QUICOFF_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quicoff/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

/** What a host-library call tells its caller.  The offload's own answer to a
 *  request (a quicoff_status_t: ok, exists, unknown_connection, ...) is a
 *  separate value, the reply's status. */
typedef enum quicoff_host_status {
    QUICOFF_HOST_OK = 0,
    QUICOFF_HOST_TIMEOUT,   /**< no ACK/STATS after every try: the offload is unreachable */
    QUICOFF_HOST_BUSY,      /**< a request for this (direction, index) is outstanding */
    QUICOFF_HOST_FULL,      /**< too many outstanding requests (config.max_pending) */
    QUICOFF_HOST_AGAIN,     /**< the socket cannot take more frames now; retry later */
    QUICOFF_HOST_INVALID,   /**< a bad argument or a message that cannot be encoded */
    QUICOFF_HOST_IO,        /**< a system call failed (errno says which) */
    QUICOFF_HOST_NO_MEMORY, /**< allocation failed at open */
    QUICOFF_HOST_REFUSED,   /**< the offload answered, with a status other than success */
} quicoff_host_status_t;

/** A stable name ("ok", "timeout", "busy", ...). */
const char *quicoff_host_status_name(quicoff_host_status_t s);

struct quicoff_host;

/** The answer to a request, for the reply callback and quicoff_host_request(). */
struct quicoff_host_reply {
    uint32_t request_id;
    uint8_t kind;      /**< the request's kind (ADD, UPDATE, REMOVE, QUERY) */
    uint8_t direction; /**< the request's direction */
    uint32_t index;    /**< the request's index */
    unsigned tries;    /**< frames sent for it (1 = no retry) */
    /** OK: answered (msg is the ACK or STATS); TIMEOUT: no answer (msg NULL). */
    quicoff_host_status_t result;
    /** The offload's answer (the ACK's / STATS's status), when answered. */
    quicoff_status_t status;
    /** True when the answer means the request took effect, counting the
     *  answers a retry gets when the first try took effect but its ACK was
     *  lost and the offload forgot it (docs/protocol.md §6: ADD `exists`,
     *  REMOVE `unknown_connection`, after more than one try). */
    bool success;
    /** The ACK or STATS (decoded; valid during the callback only). */
    const struct quicoff_wire_msg *msg;
};

/** A request completed or timed out (quicoff_host_submit()). */
typedef void (*quicoff_host_reply_cb)(void *arg, const struct quicoff_host_reply *reply);
/** An EVENT arrived (valid during the callback only). */
typedef void (*quicoff_host_event_cb)(void *arg, const struct quicoff_wire_msg *event);

struct quicoff_host_config {
    /** The destination MAC of frames to the offload (quicoff-dpdk's host
     *  port accepts any; default ff:ff:ff:ff:ff:ff). */
    uint8_t offload_mac[6];
    bool has_vlan; /**< send with an 802.1Q tag */
    uint16_t vlan_tci;
    unsigned ack_timeout_ms; /**< first wait for an answer; doubles per try (default 20) */
    unsigned max_tries;      /**< frames sent per request at most (default 6) */
    unsigned max_pending;    /**< outstanding requests at most (default 256) */
    unsigned batch;          /**< frames per recvmmsg / sendmmsg (default 32, at most 1024) */
    unsigned frame_cap;      /**< largest frame received or sent (default 9216) */
    /** DATA_TO_HOST frames that arrive while quicoff_host_request() waits are
     *  kept for the next quicoff_host_recv_data() (default 256; more are
     *  dropped and counted). */
    unsigned backlog;
    quicoff_host_reply_cb on_reply; /**< for quicoff_host_submit(); may be NULL */
    quicoff_host_event_cb on_event; /**< may be NULL: events are then counted only */
    void *cb_arg;
};

/** Counters of one handle. */
struct quicoff_host_stats {
    uint64_t frames_sent;     /**< every frame: requests, retries, data */
    uint64_t frames_received; /**< every host <-> offload frame read */
    uint64_t requests;        /**< requests submitted */
    uint64_t retries;         /**< frames re-sent for an unanswered request */
    uint64_t timeouts;        /**< requests that got no answer */
    uint64_t late_replies;    /**< ACK/STATS whose request ID was not outstanding */
    uint64_t events;          /**< EVENTs received */
    uint64_t events_missed;   /**< gaps in the EVENT sequence numbers */
    uint64_t data_sent;       /**< data frames sent: DATA_TO_OFFLOAD and DATA_TRAIN */
    uint64_t data_received;   /**< DATA_TO_HOST frames delivered */
    uint64_t backlog_dropped; /**< DATA_TO_HOST lost: the backlog was full */
    uint64_t frames_ignored;  /**< undecodable frames, or kinds a host does not take */
    uint64_t trains_sent;     /**< DATA_TRAIN frames sent (also in data_sent) */
    uint64_t packets_sent;    /**< QUIC packets in the data frames sent (1 per DATA_TO_OFFLOAD) */
};

/** Defaults (see each field). */
void quicoff_host_config_init(struct quicoff_host_config *cfg);

/** Opens the host interface `ifname` (root or CAP_NET_RAW).  *out is set on
 *  QUICOFF_HOST_OK only. */
quicoff_host_status_t quicoff_host_open(const char *ifname, const struct quicoff_host_config *cfg,
                                        struct quicoff_host **out);

/** As quicoff_host_open() on a socket the caller opened, which carries whole
 *  Ethernet frames per message (an AF_PACKET SOCK_RAW socket, or one end of
 *  an AF_UNIX SOCK_SEQPACKET pair in tests); `src_mac` is the host's MAC.
 *  The handle owns fd from then on (closed by quicoff_host_close(), also
 *  when this call fails). */
quicoff_host_status_t quicoff_host_open_fd(int fd, const uint8_t src_mac[6],
                                           const struct quicoff_host_config *cfg,
                                           struct quicoff_host **out);

/** Closes the socket, wipes every kept frame, frees the handle.  NULL is a no-op. */
void quicoff_host_close(struct quicoff_host *h);

/** The fd to poll for POLLIN (then call quicoff_host_recv_data() or
 *  quicoff_host_process()). */
int quicoff_host_fd(const struct quicoff_host *h);

/** Milliseconds until the earliest re-send or timeout is due (0: now; -1:
 *  nothing outstanding), for the event loop's poll timeout. */
int quicoff_host_next_timeout_ms(const struct quicoff_host *h);

/** Sends request *req (kind ADD, UPDATE, REMOVE or QUERY; request_id is
 *  chosen here and written to *request_id when not NULL) and returns without
 *  waiting; the answer or the timeout reaches cfg.on_reply from
 *  quicoff_host_process() / quicoff_host_recv_data().  *req is wiped
 *  (quicoff_wire_msg_clear) once encoded, on every path. */
quicoff_host_status_t quicoff_host_submit(struct quicoff_host *h, struct quicoff_wire_msg *req,
                                          uint32_t *request_id);

/** Sends *req and waits (re-sending as needed) for its answer: *reply gets
 *  it (reply->msg is NULL after the call returns; if `answer` is not NULL
 *  the ACK / STATS is copied there).  Returns OK when the request took effect
 *  (reply->success), REFUSED when the offload answered otherwise, TIMEOUT, or
 *  the submit error.  Data frames that arrive meanwhile are kept for
 *  quicoff_host_recv_data(); events go to cfg.on_event. *req is wiped. */
quicoff_host_status_t quicoff_host_request(struct quicoff_host *h, struct quicoff_wire_msg *req,
                                           struct quicoff_host_reply *reply,
                                           struct quicoff_wire_msg *answer);

/** One plaintext QUIC packet for the offload to protect with TX entry `index`. */
struct quicoff_host_pkt {
    uint32_t index;
    uint64_t pn;         /**< full packet number; the header carries its truncated encoding */
    const uint8_t *data; /**< header (with its PN bytes) + payload, no tag */
    uint32_t len;
};

/** Sends n DATA_TO_OFFLOAD frames in one batch (sendmmsg; the packets are
 *  not copied).  *sent = how many the socket took (the first *sent); returns
 *  OK when all were, AGAIN when the socket was full, INVALID for a packet
 *  whose PN or length cannot be sent (none of the batch is then sent). */
quicoff_host_status_t quicoff_host_send_data(struct quicoff_host *h,
                                             const struct quicoff_host_pkt *pkts, unsigned n,
                                             unsigned *sent);

/** A train of plaintext QUIC packets of TX entry `index`, back to back in
 *  one buffer as a QUIC stack writes them for UDP GSO: every packet
 *  segment_size bytes but the last (1..segment_size), PNs pn, pn + 1, ...
 *  (docs/protocol.md §4.2.1).  The count is len / segment_size rounded up. */
struct quicoff_host_train {
    uint32_t index;
    uint64_t pn;           /**< the first packet's full packet number */
    const uint8_t *data;   /**< the packets, headers with their PN bytes, no tags */
    uint32_t len;          /**< bytes of all the packets (at most 65535) */
    uint16_t segment_size; /**< bytes of each packet but the last */
};

/** Sends n DATA_TRAIN frames in one batch (sendmmsg; the packets are not
 *  copied), as quicoff_host_send_data() does single packets: *sent = how
 *  many trains the socket took; returns OK, AGAIN (socket full), or INVALID
 *  for a train that cannot be sent (segment size 0, a last PN past 2^62-1,
 *  a frame longer than config.frame_cap, which a jumbo host link needs
 *  raised to its maximum, 65535: Ethernet + the 24-byte train header + up
 *  to 65497 bytes of packets); none of the
 *  batch is then sent.  A train of one packet is a valid train. */
quicoff_host_status_t quicoff_host_send_train(struct quicoff_host *h,
                                              const struct quicoff_host_train *trains, unsigned n,
                                              unsigned *sent);

/** Reads what has arrived, without blocking: answers complete requests
 *  (cfg.on_reply), events go to cfg.on_event, due re-sends and timeouts are
 *  done, and up to `max` DATA_TO_HOST frames are returned in out[] (their
 *  payload points into the handle's buffers, valid until the next call on
 *  h).  Returns how many; *err (if not NULL) gets OK or IO. */
unsigned quicoff_host_recv_data(struct quicoff_host *h, struct quicoff_wire_data *out,
                                unsigned max, quicoff_host_status_t *err);

/** quicoff_host_recv_data() for a caller that takes no data now: handles
 *  answers, events and timers; DATA_TO_HOST frames go to the backlog. */
quicoff_host_status_t quicoff_host_process(struct quicoff_host *h);

/** The handle's counters. */
void quicoff_host_get_stats(const struct quicoff_host *h, struct quicoff_host_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* QUICOFF_HOST_H */
