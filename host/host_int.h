/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libquicoff-host's private state, shared by its three files: link.c (the
 * socket), requests.c (outstanding requests: IDs, re-sends, answers) and
 * host.c (the handle: receive dispatch, data batches, events).
 */
#ifndef QUICOFF_HOST_INT_H
#define QUICOFF_HOST_INT_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <linux/if_packet.h>

#include "quicoff/host.h"

/** One outstanding request: its encoded frame is kept, byte for byte, for
 *  re-sending with the same request ID, and wiped when it completes. */
struct qh_pending {
    bool used;
    bool sync; /**< quicoff_host_request() waits for it: no on_reply */
    uint8_t kind;
    uint8_t direction;
    uint32_t index;
    uint32_t request_id;
    unsigned tries;
    uint64_t due_ns; /**< when to re-send (or time out, after the last try) */
    size_t len;
    uint8_t frame[QUICOFF_WIRE_SIGNAL_MAX];
};

struct quicoff_host {
    int fd;
    uint8_t src_mac[6];
    struct quicoff_host_config cfg;
    struct quicoff_host_stats st;

    /* requests.c */
    uint32_t next_request_id;
    struct qh_pending *pending; /**< cfg.max_pending slots */
    unsigned n_pending;
    bool sync_done; /**< the sync request completed; sync_reply holds it */
    struct quicoff_host_reply sync_reply;
    struct quicoff_wire_msg *sync_answer; /**< where to copy its ACK / STATS, or NULL */

    /* host.c: receive batch */
    uint8_t *rx_buf; /**< cfg.batch frames of cfg.frame_cap */
    struct mmsghdr *rx_msg;
    struct iovec *rx_iov;
    struct sockaddr_ll *rx_addr;
    /* DATA_TO_HOST kept while nobody takes data (a ring of frames) */
    uint8_t *bl_buf;
    uint32_t *bl_len;
    unsigned bl_head, bl_count;
    /* data send batch: Ethernet + data header per frame, the packet by reference */
    uint8_t *tx_hdr;
    struct mmsghdr *tx_msg;
    struct iovec *tx_iov;
    size_t eth_len; /**< 14, or 18 with a VLAN tag */

    bool have_event_seq;
    uint32_t event_seq;
    struct quicoff_wire_msg scratch; /**< decoded control frames */
};

/* room per frame for Ethernet (+ VLAN) and the longer data header (a train's) */
#define QH_DATA_HDR_MAX (18 + QUICOFF_WIRE_TRAIN_HDR_LEN)

/* link.c */
uint64_t qh_now_ns(void);
quicoff_host_status_t qh_link_open(const char *ifname, int *fd, uint8_t mac[6]);
/** Sends one frame; OK, AGAIN or IO. */
quicoff_host_status_t qh_link_send(struct quicoff_host *h, const uint8_t *frame, size_t len);
/** Writes the Ethernet header of a frame to the offload; returns its length. */
size_t qh_eth_write(const struct quicoff_host *h, uint8_t *buf, uint16_t ethertype);

/* requests.c */
void qh_requests_init(struct quicoff_host *h);
/** The ACK / STATS m arrived: completes its request (or counts it late). */
void qh_requests_answer(struct quicoff_host *h, const struct quicoff_wire_msg *m);
/** Re-sends what is due, times out what has had its last try. */
void qh_requests_timers(struct quicoff_host *h);
/** Wipes every kept frame. */
void qh_requests_wipe(struct quicoff_host *h);

#endif /* QUICOFF_HOST_INT_H */
