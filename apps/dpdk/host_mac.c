/* SPDX-License-Identifier: Apache-2.0 */
/* The host's MAC: given, or learned from its offload frames (host_mac.h). */
#include "host_mac.h"

#include <stdatomic.h>
#include <string.h>

#include "options.h"
#include "qd.h"

/* qda.host_mac holds a learned MAC when this bit is set */
#define QD_HOST_MAC_VALID (UINT64_C(1) << 48)

static uint64_t mac_to_u64(const struct rte_ether_addr *a)
{
    uint64_t v = 0;
    for (int i = 0; i < 6; i++)
        v = v << 8 | a->addr_bytes[i];
    return v;
}

static void u64_to_mac(uint64_t v, struct rte_ether_addr *a)
{
    for (int i = 5; i >= 0; i--, v >>= 8)
        a->addr_bytes[i] = (uint8_t)v;
}

void qd_host_mac_learn(const uint8_t *frame)
{
    if (qda.opt->has_host_mac)
        return;
    struct rte_ether_addr src;
    memcpy(src.addr_bytes, frame + 6, 6);
    if (!rte_is_unicast_ether_addr(&src))
        return;
    uint64_t v = mac_to_u64(&src) | QD_HOST_MAC_VALID;
    /* read first: the line stays shared while the host's MAC does not change */
    if (atomic_load_explicit(&qda.host_mac, memory_order_relaxed) != v)
        atomic_store_explicit(&qda.host_mac, v, memory_order_relaxed);
}

void qd_host_mac(struct rte_ether_addr *a)
{
    if (qda.opt->has_host_mac) {
        *a = qda.opt->host_mac;
        return;
    }
    uint64_t v = atomic_load_explicit(&qda.host_mac, memory_order_relaxed);
    if (v & QD_HOST_MAC_VALID)
        u64_to_mac(v, a);
    else
        memset(a->addr_bytes, 0xff, RTE_ETHER_ADDR_LEN); /* nothing learned yet: broadcast */
}
