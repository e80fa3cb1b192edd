/* SPDX-License-Identifier: Apache-2.0 */
/* Command line of quicoff-dpdk (after the EAL's "--"): parse, defaults, print back. */
#ifndef QD_OPTIONS_H
#define QD_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "qd.h"

struct qd_options {
    uint16_t host_port;             /* --host-port: the compat offload's port_enc */
    uint16_t net_port;              /* --net-port: the compat offload's port_dec */
    unsigned workers;               /* --workers */
    enum qd_io_mode io_mode;        /* --io-mode rtc|pipeline */
    enum qd_crypto_mode crypto;     /* --crypto inline|lookaside */
    char cryptodev[64];             /* --cryptodev: device name (created as a vdev if absent) */
    uint8_t local_cid_len;          /* --local-cid-len */
    uint32_t capacity;              /* --capacity: entries; also bounds the host's indexes */
    enum qd_unknown_action unknown; /* --unknown pass|drop */
    unsigned stats_interval;        /* --stats-interval seconds, 0 = only at exit */
    bool compat;                    /* --compat: accept compat frames (0x88B6, compat signaling) */
    bool events;                    /* --no-events clears it */
    char backend[16];               /* --backend: libquicoff crypto backend */
    uint32_t nb_mbufs;              /* --mbufs */
    unsigned idle_us;               /* --idle-us: sleep when idle (0 = poll, the default) */
    unsigned tx_drain_us;           /* --tx-drain-us: longest a frame waits in a TX buffer (rtc) */
    uint16_t net_mtu;               /* --net-mtu: largest IP packet sent (0 = the port's MTU) */
    uint16_t host_mtu;              /* --host-mtu: jumbo host link (0 = as the network port) */
    bool has_host_mac;              /* --host-mac: else learned from the host port */
    struct rte_ether_addr host_mac;
    /* Default encapsulation (--encap-*): used for TX entries that carry none,
     * i.e. every compat entry, as the compat offload's static addresses. */
    struct qd_encap encap;
};

/* Fills the defaults. */
void qd_options_default(struct qd_options *o);
/* Parses argv (after the EAL arguments). Returns 0, or -1 after printing why. */
int qd_options_parse(struct qd_options *o, int argc, char **argv);
/* Prints every option back, as the application will use it. */
void qd_options_print(const struct qd_options *o);
void qd_options_usage(const char *prog);

#endif
