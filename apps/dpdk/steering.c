/* SPDX-License-Identifier: Apache-2.0 */
/* DCID -> worker, index -> worker. */
#include "steering.h"

#include <string.h>

#include <rte_hash_crc.h>

#define QD_STEER_SEED 0x5155u /* any constant: the hash only spreads load */

int qd_quic_dcid(const uint8_t *p, uint32_t len, uint8_t short_cid_len, uint32_t *off,
                 uint8_t *dcid_len)
{
    if (len < 1)
        return -1;
    if (p[0] & 0x80) {
        /* long header (RFC 8999 invariants): version (4), DCID len, DCID */
        if (len < 6 || p[5] > QUICOFF_MAX_CID_LEN || len < 6u + p[5])
            return -1;
        *off = 6;
        *dcid_len = p[5];
        return 0;
    }
    /* short header: a packet needs at least the DCID, 1 PN byte and the
     * 16-byte tag. The fixed bit is not looked at: a peer may grease it
     * (RFC 9287), and only the entry the DCID finds says whether that is
     * allowed (libquicoff decides; unknown DCIDs reach the host as before). */
    if (len < 1u + short_cid_len + 1 + QUICOFF_TAG_LEN)
        return -1;
    *off = 1;
    *dcid_len = short_cid_len;
    return 0;
}

int qd_quic_level(const uint8_t *p, uint32_t len)
{
    if (len < 1)
        return -1;
    if (!(p[0] & 0x80))
        return QUICOFF_LEVEL_ONE_RTT;
    if (len < 5)
        return -1;
    uint32_t v = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    unsigned type = (p[0] >> 4) & 3;
    static const int v1[4] = {QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
                              QUICOFF_LEVEL_HANDSHAKE, -1};
    static const int v2[4] = {-1, QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
                              QUICOFF_LEVEL_HANDSHAKE}; /* RFC 9369 §3.2 */
    if (v == QUICOFF_VERSION_1)
        return v1[type];
    if (v == QUICOFF_VERSION_2)
        return v2[type];
    return -1;
}

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
