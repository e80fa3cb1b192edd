/* SPDX-License-Identifier: Apache-2.0 */
/* Port initialisation and capability checks (as the compat offload set its ports up, without
 * its rte_panic: a port that cannot checksum gets software checksums instead). */
#include "ports.h"

#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>

#include "cksum.h"
#include "qd.h"

int qd_port_init(uint16_t port, const char *role, uint16_t nb_queues, bool want_cksum,
                 uint16_t mtu, struct rte_mempool *pool, struct qd_port_caps *caps)
{
    struct rte_eth_dev_info info;
    struct rte_eth_conf conf;
    char mac[RTE_ETHER_ADDR_FMT_SIZE];
    struct rte_ether_addr addr;
    int r;

    memset(caps, 0, sizeof(*caps));
    if (!rte_eth_dev_is_valid_port(port)) {
        fprintf(stderr,
                "quicoff-dpdk: %s port %u does not exist (%u ports: give them with "
                "-a PCI or --vdev)\n",
                role, port, rte_eth_dev_count_avail());
        return -1;
    }
    if ((r = rte_eth_dev_info_get(port, &info)) != 0) {
        fprintf(stderr, "quicoff-dpdk: port %u: dev_info: %s\n", port, strerror(-r));
        return -1;
    }
    if (info.max_rx_queues < nb_queues || info.max_tx_queues < nb_queues) {
        fprintf(stderr,
                "quicoff-dpdk: %s port %u (%s) has %u RX / %u TX queues; %u workers in "
                "run-to-completion mode need %u of each (net_af_packet: add qpairs=%u to "
                "the vdev), or use --io-mode pipeline\n",
                role, port, info.driver_name, info.max_rx_queues, info.max_tx_queues, nb_queues,
                nb_queues, nb_queues);
        return -1;
    }
    memset(&conf, 0, sizeof(conf));
    {
        /* keep what the port has (0, the ethdev default RTE_ETHER_MTU, if
         * unknown); a different MTU is set after configure, below, since
         * configure checks it against max_rx_pktlen, which net_af_packet
         * keeps at 1518 whatever its framesz */
        uint16_t own = 0;
        if (rte_eth_dev_get_mtu(port, &own) == 0)
            conf.rxmode.mtu = own;
    }
    uint64_t rss = info.flow_type_rss_offloads & (RTE_ETH_RSS_IP | RTE_ETH_RSS_UDP);
    if (nb_queues > 1 && rss) {
        /* The DCID is beyond what RSS hashes: the 4-tuple keeps a path on one
         * queue, and a worker hands a frame to the connection's owner when
         * the queue is not its (one ring hop). rte_flow rules matching the
         * DCID would make the hop rare; see docs/dpdk.md. */
        conf.rxmode.mq_mode = RTE_ETH_MQ_RX_RSS;
        conf.rx_adv_conf.rss_conf.rss_hf = rss;
        caps->rss = true;
    }
    if (want_cksum) {
        caps->ipv4_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
        caps->udp_cksum = info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
        if (caps->ipv4_cksum)
            conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_IPV4_CKSUM;
        if (caps->udp_cksum)
            conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_UDP_CKSUM;
    }
    /* one pool, refcount 1: fast free is safe. Not with --host-mtu: the host
     * port's jumbo pool is a second one, and a host frame passed through
     * leaves by the network port. */
    caps->fast_free = (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE) &&
                      qda.host_rx_pool == qda.pool;
    if (caps->fast_free)
        conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MBUF_FAST_FREE;

    if ((r = rte_eth_dev_configure(port, nb_queues, nb_queues, &conf)) != 0) {
        fprintf(stderr, "quicoff-dpdk: port %u: configure: %s\n", port, strerror(-r));
        return -1;
    }
    /* Only ever raised (a NIC's jumbo frames): a smaller --net-mtu is
     * enforced by the check alone, without touching the port. */
    uint16_t cur = 0;
    if (mtu && rte_eth_dev_get_mtu(port, &cur) == 0 && cur < mtu &&
        (r = rte_eth_dev_set_mtu(port, mtu)) != 0)
        /* --net-mtu is still what protected packets are checked against.
         * net_af_packet (22.11) refuses any MTU over 1500 (its max_rx_pktlen
         * stays 1518): the kernel interface's MTU and the vdev's framesz
         * decide there (docs/dpdk.md, "MTU and jumbo frames"). */
        printf("quicoff-dpdk: %s port %u (%s) keeps its MTU %u, not %u (%s): frames up to %u "
               "bytes pass only where the device takes them (net_af_packet: the interface's "
               "MTU and the vdev's framesz)\n",
               role, port, info.driver_name, cur, mtu, strerror(-r), mtu);
    uint16_t nb_rxd = QD_NB_RXD, nb_txd = QD_NB_TXD;
    rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
    int socket = rte_eth_dev_socket_id(port);
    if (socket < 0)
        socket = (int)rte_socket_id();
    struct rte_eth_txconf txconf = info.default_txconf;
    txconf.offloads = conf.txmode.offloads;
    for (uint16_t q = 0; q < nb_queues; q++) {
        if ((r = rte_eth_rx_queue_setup(port, q, nb_rxd, (unsigned)socket, NULL, pool)) != 0 ||
            (r = rte_eth_tx_queue_setup(port, q, nb_txd, (unsigned)socket, &txconf)) != 0) {
            fprintf(stderr, "quicoff-dpdk: port %u: queue %u setup: %s\n", port, q, strerror(-r));
            return -1;
        }
    }
    if ((r = rte_eth_dev_start(port)) != 0) {
        fprintf(stderr, "quicoff-dpdk: port %u: start: %s\n", port, strerror(-r));
        return -1;
    }
    if (rte_eth_dev_get_mtu(port, &caps->mtu) != 0 || caps->mtu == 0)
        caps->mtu = RTE_ETHER_MTU;
    r = rte_eth_promiscuous_enable(port);
    rte_eth_macaddr_get(port, &addr);
    rte_ether_format_addr(mac, sizeof(mac), &addr);
    printf(
        "quicoff-dpdk: %s port %u: %s, driver %s, MAC %s, %u RX/TX queues in use (max %u/%u)%s, "
        "promiscuous %s, MTU %u\n",
        role, port, info.device ? rte_dev_name(info.device) : "?", info.driver_name, mac,
        nb_queues, info.max_rx_queues, info.max_tx_queues, caps->rss ? ", RSS on IP/UDP" : "",
        r == 0 ? "on" : "off", caps->mtu);
    if (want_cksum)
        printf("quicoff-dpdk: %s port %u: IPv4 checksum %s, UDP checksum %s%s\n", role, port,
               caps->ipv4_cksum ? "by the port" : "in software",
               caps->udp_cksum ? "by the port" : "in software, ",
               caps->udp_cksum ? "" : qd_cksum_impl());
    return 0;
}

void qd_port_close(uint16_t port)
{
    rte_eth_dev_stop(port);
    rte_eth_dev_close(port);
}
