/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Byte order, in one place for the data-plane library, the wire-protocol
 * library and quicoff-dpdk: QUIC and the host<->offload protocol are
 * big-endian on the wire.  Header-only and private (never installed).
 * Each helper is written byte by byte; compilers turn it into one unaligned
 * load or store plus a byte swap, so there is no reason to reach for
 * htonl() or an aliasing cast.
 */
#ifndef QO_BYTES_H
#define QO_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t qo_load_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t qo_load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t qo_load_be64(const uint8_t *p)
{
    return (uint64_t)qo_load_be32(p) << 32 | qo_load_be32(p + 4);
}

static inline void qo_store_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void qo_store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline void qo_store_be64(uint8_t *p, uint64_t v)
{
    qo_store_be32(p, (uint32_t)(v >> 32));
    qo_store_be32(p + 4, (uint32_t)v);
}

/* Little-endian 32-bit words (ChaCha20's state). */
static inline uint32_t qo_load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void qo_store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Little-endian 64-bit words (Poly1305's limbs). */
static inline uint64_t qo_load_le64(const uint8_t *p)
{
    return (uint64_t)qo_load_le32(p) | (uint64_t)qo_load_le32(p + 4) << 32;
}

static inline void qo_store_le64(uint8_t *p, uint64_t v)
{
    qo_store_le32(p, (uint32_t)v);
    qo_store_le32(p + 4, (uint32_t)(v >> 32));
}

/* Host-order unaligned loads, for hashing bytes whose order does not matter. */
static inline uint64_t qo_load_host64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t qo_load_host32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

#endif
