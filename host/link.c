/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host interface: an AF_PACKET socket on a named interface, bound to the
 * v1 EtherType, and the Ethernet header of frames to the offload.
 *
 * Why AF_PACKET with sendmmsg/recvmmsg rather than PACKET_MMAP rings: one
 * system call per batch already amortises the syscall cost the rings avoid,
 * the QUIC packets are sent from the caller's buffers without a copy (an
 * iovec each), and the same code runs on any socket that carries whole
 * frames (the tests' AF_UNIX SOCK_SEQPACKET pair), where a ring does not
 * exist.  A TX ring (one syscall per ring flush) is the next step if the
 * per-batch syscall shows in profiles.
 */
#include <arpa/inet.h> /* htons: the socket API wants the protocol in network order */
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <linux/if_ether.h>

#include "host_int.h"
#include "qo_bytes.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

uint64_t qh_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

quicoff_host_status_t qh_link_open(const char *ifname, int *fd_out, uint8_t mac[6])
{
    if (!ifname || strlen(ifname) >= IFNAMSIZ)
        return QUICOFF_HOST_INVALID;
    unsigned ifindex = if_nametoindex(ifname);
    if (ifindex == 0)
        return QUICOFF_HOST_INVALID;
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    htons(QUICOFF_WIRE_ETHERTYPE_SIGNAL));
    if (fd < 0)
        return QUICOFF_HOST_IO;
    struct ifreq ifr;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(fd, SIOCGIFHWADDR, &ifr) != 0)
        goto io;
    memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
    struct sockaddr_ll sll = {
        .sll_family = AF_PACKET,
        .sll_protocol = htons(QUICOFF_WIRE_ETHERTYPE_SIGNAL),
        .sll_ifindex = (int)ifindex,
    };
    if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0)
        goto io;
    /* Best effort: our own frames never come back (older kernels: they are
     * recognised by their packet type), and room for bursts of answers. */
    int one = 1, rcvbuf = 4 << 20;
    (void)setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    *fd_out = fd;
    return QUICOFF_HOST_OK;
io:;
    int e = errno;
    close(fd);
    errno = e;
    return QUICOFF_HOST_IO;
}

quicoff_host_status_t qh_link_send(struct quicoff_host *h, const uint8_t *frame, size_t len)
{
    ssize_t n = send(h->fd, frame, len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n == (ssize_t)len) {
        h->st.frames_sent++;
        return QUICOFF_HOST_OK;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS))
        return QUICOFF_HOST_AGAIN;
    return QUICOFF_HOST_IO;
}

size_t qh_eth_write(const struct quicoff_host *h, uint8_t *buf, uint16_t ethertype)
{
    memcpy(buf, h->cfg.offload_mac, 6);
    memcpy(buf + 6, h->src_mac, 6);
    size_t off = 12;
    if (h->cfg.has_vlan) {
        qo_store_be16(buf + off, QUICOFF_WIRE_ETHERTYPE_VLAN);
        qo_store_be16(buf + off + 2, h->cfg.vlan_tci);
        off += 4;
    }
    qo_store_be16(buf + off, ethertype);
    return off + 2;
}
