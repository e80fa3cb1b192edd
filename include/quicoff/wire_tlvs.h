/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file wire_tlvs.h
 * THE registry of the v1 TLVs (docs/protocol.md §5): the one table the C
 * library is built from (the enum quicoff_wire_tlv of wire.h, the decoder's
 * slots and the TLVs each message accepts) and that the Python codec
 * (python/quicoff/wire.py) and the Scapy layer (python/quicoff/scapy_layers.py)
 * are checked against (tests/python/test_wire_tlv_table.py parses this file:
 * keep one X(...) per line).
 *
 * Columns of X(name, type, critical, kind, messages):
 *  - name: QUICOFF_WIRE_T_<name>, and the registry name in docs and Python;
 *  - type: the 16-bit type on the wire;
 *  - critical: CRITICAL or OPTIONAL, which must agree with bit 15 of the
 *    type: a receiver that does not know a critical type rejects the message
 *    (UNSUPPORTED), an unknown optional one is skipped;
 *  - kind: how the value is written; U8, U32, U64 (big-endian integers of
 *    that width), CID (0..20 bytes), ADDR (family u8, port u16, 4|16 address
 *    bytes), KEY (16|32 bytes), IV (12 bytes), SECRET (32|48 bytes), ENCAP
 *    (30|54 bytes), STATS (n x u64), TEXT (UTF-8, 0..255 bytes);
 *  - messages: the v1 messages that may carry it, OR-ed QUICOFF_WIRE_IN_*
 *    bits (a TLV in any other message is malformed).
 */
#ifndef QUICOFF_WIRE_TLVS_H
#define QUICOFF_WIRE_TLVS_H

/** The messages of the "messages" column (bits of a mask, not Type bytes). */
#define QUICOFF_WIRE_IN_ADD 0x01u
#define QUICOFF_WIRE_IN_UPDATE 0x02u
#define QUICOFF_WIRE_IN_ACK 0x04u
#define QUICOFF_WIRE_IN_STATS 0x08u
#define QUICOFF_WIRE_IN_EVENT 0x10u

/* clang-format off */
#define QUICOFF_WIRE_TLVS(X) \
    X(SUITE,           0x0001, OPTIONAL, U8,     QUICOFF_WIRE_IN_ADD) \
    X(LEVEL,           0x0002, OPTIONAL, U8,     QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_EVENT) \
    X(QUIC_VERSION,    0x0003, OPTIONAL, U32,    QUICOFF_WIRE_IN_ADD) \
    X(DCID,            0x0004, OPTIONAL, CID,    QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_EVENT) \
    X(LOCAL_ADDR,      0x0005, OPTIONAL, ADDR,   QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_EVENT) \
    X(PATH_ID,         0x0006, OPTIONAL, U32,    QUICOFF_WIRE_IN_ADD) \
    X(NONCE_LAYOUT,    0x0007, OPTIONAL, U8,     QUICOFF_WIRE_IN_ADD) \
    X(FAIL_ACTION,     0x0008, OPTIONAL, U8,     QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(LARGEST_PN,      0x0009, OPTIONAL, U64,    QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(USAGE_THRESHOLD, 0x000A, OPTIONAL, U64,    QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(KEY_GENERATION,  0x000B, OPTIONAL, U32,    QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE | QUICOFF_WIRE_IN_EVENT) \
    X(PACKET_KEY,      0x000C, OPTIONAL, KEY,    QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(IV,              0x000D, OPTIONAL, IV,     QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(HP_KEY,          0x000E, OPTIONAL, KEY,    QUICOFF_WIRE_IN_ADD) \
    X(NEXT_PACKET_KEY, 0x000F, OPTIONAL, KEY,    QUICOFF_WIRE_IN_ADD) \
    X(NEXT_IV,         0x0010, OPTIONAL, IV,     QUICOFF_WIRE_IN_ADD) \
    X(SECRET,          0x0011, OPTIONAL, SECRET, QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(ENCAP,           0x0012, OPTIONAL, ENCAP,  QUICOFF_WIRE_IN_ADD | QUICOFF_WIRE_IN_UPDATE) \
    X(ROLL_GENERATION, 0x0013, OPTIONAL, U32,    QUICOFF_WIRE_IN_UPDATE) \
    X(GREASE_QUIC_BIT, 0x0014, OPTIONAL, U8,     QUICOFF_WIRE_IN_ADD) \
    X(CONN_STATS,      0x0020, OPTIONAL, STATS,  QUICOFF_WIRE_IN_STATS) \
    X(TABLE_STATS,     0x0021, OPTIONAL, STATS,  QUICOFF_WIRE_IN_STATS) \
    X(COUNT,           0x0030, OPTIONAL, U64,    QUICOFF_WIRE_IN_EVENT) \
    X(PN,              0x0031, OPTIONAL, U64,    QUICOFF_WIRE_IN_EVENT) \
    X(REMOTE_ADDR,     0x0032, OPTIONAL, ADDR,   QUICOFF_WIRE_IN_EVENT) \
    X(DETAIL,          0x0033, OPTIONAL, TEXT,   QUICOFF_WIRE_IN_ACK | QUICOFF_WIRE_IN_STATS | QUICOFF_WIRE_IN_EVENT) \
    X(MTU,             0x0034, OPTIONAL, U32,    QUICOFF_WIRE_IN_EVENT)
/* clang-format on */

#endif /* QUICOFF_WIRE_TLVS_H */
