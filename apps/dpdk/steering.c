/* SPDX-License-Identifier: Apache-2.0 */
/* DCID -> worker, index -> worker. */
#include "steering.h"

#include <string.h>

#include <rte_hash_crc.h>

#define QD_STEER_SEED 0x5155u /* any constant: the hash only spreads load */

unsigned qd_steer_net(const uint8_t *dcid, uint8_t dcid_len, const struct quicoff_addr *local,
                      unsigned nb_workers)
{
    if (nb_workers <= 1)
        return 0;
    /* rte_hash_crc() loads 8 bytes at a time: hash an aligned copy (the
     * DCID sits at an odd offset in the frame) */
    uint64_t buf[3] = {0, 0, 0};
    uint32_t h;
    if (dcid_len) {
        memcpy(buf, dcid, dcid_len);
        h = rte_hash_crc(buf, dcid_len, QD_STEER_SEED);
    } else {
        memcpy(buf, local->ip, 16);
        h = rte_hash_crc_2byte(local->port,
                               rte_hash_crc(buf, local->family == 6 ? 16 : 4, QD_STEER_SEED));
    }
    return h % nb_workers;
}

unsigned qd_steer_index(uint32_t index, unsigned nb_workers)
{
    if (nb_workers <= 1)
        return 0;
    return rte_hash_crc_4byte(index, QD_STEER_SEED) % nb_workers;
}
