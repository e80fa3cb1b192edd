/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file wire.h
 * The host <-> offload protocol: encode and decode of every frame exchanged
 * between a host's QUIC stack and a quicoff offload (quicoff-dpdk), as
 * specified in docs/protocol.md.  Pure functions: no allocation, no global
 * state, no logging; every length is checked against the buffer before use.
 *
 * Two formats share the two IEEE 802 local-experimental EtherTypes:
 *
 *  - compat (docs/protocol.md §3): the fixed-layout frames of the first
 *    BlueField-2 multipath-QUIC offload prototype, byte for byte: signaling
 *    on 0x88B5 whose first byte is its Type (0 = signaling_peer, 1 =
 *    signaling_host), and data on 0x88B6 (Index 16 + Full_pn 64 + QUIC).
 *  - v1: every v1 frame (signaling, data, events) is on 0x88B5 and starts with
 *    the byte 0x51 ('Q') then the version byte 0x01.  Compat signaling starts
 *    with 0x00 or 0x01 and compat data never uses 0x88B5, so the two formats
 *    are told apart by (EtherType, first byte) alone, with no state.
 *
 * Security: signaling (anything decoded as ADD/UPDATE/REMOVE/QUERY or compat
 * signaling) must be accepted only on the host-facing port, never from the
 * network side; the application enforces it (see docs/protocol.md §2).
 *
 * Secrets: a decoded ADD/UPDATE/compat signaling message holds packet keys,
 * header-protection keys and TLS secrets.  Callers must call
 * quicoff_wire_msg_clear() on every message they decoded (or encoded from)
 * once done, also on error paths.
 *
 * Threading: all functions are reentrant; they touch only their arguments.
 */
#ifndef QUICOFF_WIRE_H
#define QUICOFF_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "quicoff/quicoff.h"
#include "quicoff/wire_tlvs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Constants                                                                 */

#define QUICOFF_WIRE_ETHERTYPE_SIGNAL 0x88B5 /**< IEEE 802 local experimental 1 */
#define QUICOFF_WIRE_ETHERTYPE_DATA 0x88B6   /**< IEEE 802 local experimental 2 (compat data) */
#define QUICOFF_WIRE_ETHERTYPE_VLAN 0x8100
#define QUICOFF_WIRE_ETHERTYPE_QINQ 0x88A8

#define QUICOFF_WIRE_MAGIC 0x51 /**< first byte of every v1 frame ('Q') */
#define QUICOFF_WIRE_VERSION 1  /**< the version this library speaks */

#define QUICOFF_WIRE_ETH_LEN 14             /**< Ethernet header without VLAN tag */
#define QUICOFF_WIRE_SIGNAL_HDR_LEN 16      /**< v1 signaling header (before TLVs) */
#define QUICOFF_WIRE_DATA_HDR_LEN 20        /**< v1 data header (before the QUIC packet) */
#define QUICOFF_WIRE_TRAIN_HDR_LEN 24       /**< v1 DATA_TRAIN header (before the packets) */
#define QUICOFF_WIRE_TLV_HDR_LEN 4          /**< TLV type (16) + length (16) */
#define QUICOFF_WIRE_COMPAT_PEER_LEN 100    /**< signaling_peer (protocol.md §3.1), bytes */
#define QUICOFF_WIRE_COMPAT_HOST_LEN 85     /**< signaling_host (protocol.md §3.2), bytes */
#define QUICOFF_WIRE_COMPAT_DATA_HDR_LEN 10 /**< data_pkt (protocol.md §3.5): Index + Full_pn */
#define QUICOFF_WIRE_COMPAT_KEY_FIELD 32    /**< 256-bit key fields in compat signaling */
#define QUICOFF_WIRE_COMPAT_DCID_LEN 8      /**< compat RX DCID is always 64 bits */
/** Upper bound of any frame the v1/compat encoders produce for a signaling
 *  message (Ethernet + VLAN tag + header + every TLV at its maximum size). */
#define QUICOFF_WIRE_SIGNAL_MAX 1024
#define QUICOFF_WIRE_DETAIL_MAX 255 /**< DETAIL TLV text, bytes */

#define QUICOFF_WIRE_INDEX_NONE 0xFFFFFFFFu /**< "no entry" (events, table-only queries) */
/** ACK direction of a request whose own direction byte is neither TX nor RX
 *  (answered invalid_argument; docs/protocol.md §4.8). Only ACKs carry it. */
#define QUICOFF_WIRE_DIRECTION_NONE 0xFFu
#define QUICOFF_WIRE_PN_MAX ((UINT64_C(1) << 62) - 1) /**< largest QUIC packet number */

/** What a frame is.  For v1 the numeric value is the on-wire Type byte;
 *  the compat kinds (>= 0x100) are decode results, never on the wire as such. */
typedef enum quicoff_wire_kind {
    QUICOFF_WIRE_NONE = 0x00,
    /* v1, host -> offload */
    QUICOFF_WIRE_ADD = 0x01,    /**< install an entry (TLVs: the whole quicoff_conn_config) */
    QUICOFF_WIRE_UPDATE = 0x02, /**< change an entry (TLVs: what changes) */
    QUICOFF_WIRE_REMOVE = 0x03, /**< remove an entry */
    QUICOFF_WIRE_QUERY = 0x04,  /**< ask for counters; answered by STATS */
    QUICOFF_WIRE_DATA_TO_OFFLOAD = 0x10, /**< plaintext QUIC packet to protect and send */
    /** A train: consecutive plaintext QUIC packets of one TX entry, PNs pn,
     *  pn+1, ..., all segment_size bytes but the last (docs/protocol.md §4.2.1) */
    QUICOFF_WIRE_DATA_TRAIN = 0x11,
    /* v1, offload -> host */
    QUICOFF_WIRE_ACK = 0x81,   /**< result of ADD/UPDATE/REMOVE (or of an undecodable request) */
    QUICOFF_WIRE_STATS = 0x82, /**< reply to QUERY */
    QUICOFF_WIRE_EVENT = 0x83, /**< unsolicited notification */
    QUICOFF_WIRE_DATA_TO_HOST = 0x90, /**< unprotected QUIC packet + metadata */
    /* compat (docs/protocol.md §3) */
    QUICOFF_WIRE_COMPAT_PEER = 0x100, /**< 0x88B5 Type 0: signaling_peer -> RX entry by DCID */
    QUICOFF_WIRE_COMPAT_HOST = 0x101, /**< 0x88B5 Type 1: signaling_host -> TX entry by index */
    QUICOFF_WIRE_COMPAT_DATA = 0x102, /**< 0x88B6: data_pkt, either direction */
} quicoff_wire_kind_t;

/** Header flags (byte 3) of v1 requests, by kind. */
enum quicoff_wire_flag {
    QUICOFF_WIRE_ADD_REPLACE = 1u << 0, /**< ADD: replace an existing entry of this index */
    QUICOFF_WIRE_UPDATE_ROLL = 1u << 0, /**< UPDATE: make ROLL_GENERATION current (idempotent) */
    QUICOFF_WIRE_UPDATE_DROP_OLD = 1u << 1, /**< UPDATE: forget the previous generation's keys */
    QUICOFF_WIRE_QUERY_CONN = 1u << 0,      /**< QUERY/STATS: the entry's quicoff_conn_stats */
    QUICOFF_WIRE_QUERY_TABLE = 1u << 1,     /**< QUERY/STATS: the quicoff_table_stats */
};

/** EVENT codes (byte 3 of an EVENT). */
typedef enum quicoff_wire_event_code {
    QUICOFF_WIRE_EV_AUTH_FAILED = 1,           /**< packets of an entry failed authentication */
    QUICOFF_WIRE_EV_USAGE_LIMIT = 2,           /**< the entry crossed its usage threshold */
    QUICOFF_WIRE_EV_KEY_UPDATE = 3,            /**< the data plane saw/made a key phase change */
    QUICOFF_WIRE_EV_UNKNOWN_CONNECTION = 4,    /**< a QUIC packet matched no entry */
    QUICOFF_WIRE_EV_KEY_EXHAUSTED = 5,         /**< RFC 9001 §6.6 hard limit: packets refused */
    QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE = 6, /**< packets for a key phase with no keys */
    QUICOFF_WIRE_EV_TOO_BIG = 7,               /**< a protected packet exceeded the network MTU */
    QUICOFF_WIRE_EV_COUNT
} quicoff_wire_event_code_t;

/** TLV types (docs/protocol.md §5): QUICOFF_WIRE_T_<name> for every row of
 *  the registry in quicoff/wire_tlvs.h (type, width, which messages).  Types
 *  with bit 15 set are "critical": a receiver that does not know one rejects
 *  the message (UNSUPPORTED); unknown non-critical types are skipped. */
enum quicoff_wire_tlv {
#define QUICOFF_WIRE_TLV_ENUM(name, type, critical, kind, messages) QUICOFF_WIRE_T_##name = type,
    QUICOFF_WIRE_TLVS(QUICOFF_WIRE_TLV_ENUM)
#undef QUICOFF_WIRE_TLV_ENUM
        QUICOFF_WIRE_T_CRITICAL = 0x8000, /**< bit: unknown => reject */
};

/* ------------------------------------------------------------------------ */
/* Decoded / to-be-encoded structures                                        */

/** The Ethernet header of a frame (frame-level encode/decode only). */
struct quicoff_wire_eth {
    uint8_t dst[6];
    uint8_t src[6];
    bool has_vlan;      /**< one 802.1Q (0x8100) tag; 802.1ad outer tags are skipped on decode */
    uint16_t vlan_tci;  /**< PCP/DEI/VID, host byte order */
    uint16_t ethertype; /**< the EtherType after any tag, host byte order */
};

/** Per-connection encapsulation of a TX entry: what the offload prepends to
 *  a protected packet (Ethernet [+ 802.1Q] + IPv4|IPv6 + UDP). */
struct quicoff_wire_encap {
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    bool has_vlan;
    uint16_t vlan_tci;
    uint8_t family;    /**< 4 or 6 */
    uint8_t ttl;       /**< TTL / hop limit; 0 = the offload's default (64) */
    uint8_t tos;       /**< IPv4 TOS / IPv6 traffic class */
    uint16_t src_port; /**< host byte order */
    uint16_t dst_port;
    uint8_t src_ip[16]; /**< IPv4 in the first 4 bytes */
    uint8_t dst_ip[16];
};

/** ADD, COMPAT_PEER, COMPAT_HOST: an entry to install.
 *  cfg.secret is NULL after decode (the struct may be copied): call
 *  quicoff_wire_conn_config() to get a config ready for quicoff_conn_add(). */
struct quicoff_wire_conn {
    struct quicoff_conn_config cfg;
    uint8_t secret[QUICOFF_MAX_SECRET_LEN]; /**< valid when cfg.secret_len != 0 */
    bool has_encap;
    struct quicoff_wire_encap encap;
    /** compat: 128-bit keys arrived right-padded (stored form) instead of the
     *  prototype's left-padded (value) form; informational. */
    bool compat_right_padded;
    /** compat signaling_host: DCID_len was a bit count (a multiple of 8 in
     *  24..160) and was divided by 8; informational. */
    bool compat_dcid_len_bits;
};

/** UPDATE.  upd.what says what changes; upd.secret is NULL after decode:
 *  use quicoff_wire_conn_update(). */
struct quicoff_wire_update {
    struct quicoff_conn_update upd;
    uint8_t secret[QUICOFF_MAX_SECRET_LEN]; /**< valid when upd.secret_len != 0 */
    /** Length of upd.keys.key as received (16|32; 0 without keys): the entry's
     *  suite is not in the message, so the application checks
     *  key_len == quicoff_suite_key_len(entry suite) (else INVALID_ARGUMENT). */
    uint8_t key_len;
    /** With QUICOFF_UPDATE_ROLL: the generation that must be current after the
     *  update.  The offload rolls if current == roll_generation - 1, does
     *  nothing if current == roll_generation (a retried request), and answers
     *  INVALID_ARGUMENT otherwise. */
    uint32_t roll_generation;
    bool has_encap; /**< TX only: replace the entry's encapsulation */
    struct quicoff_wire_encap encap;
};

/** STATS (also what a QUERY asks for, by header flags). */
struct quicoff_wire_stats {
    bool has_conn;
    bool has_table;
    struct quicoff_conn_stats conn;
    struct quicoff_table_stats table;
};

/** EVENT. */
struct quicoff_wire_event {
    uint8_t code; /**< quicoff_wire_event_code_t */
    bool has_count, has_pn, has_key_generation, has_level;
    uint64_t count; /**< cumulative (auth failures, key packets, ...) */
    uint64_t pn;
    uint32_t key_generation;
    uint8_t level;
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    uint8_t dcid_len; /**< 0 = absent or empty */
    bool has_dcid;
    struct quicoff_addr local_addr;  /**< family 0 = absent */
    struct quicoff_addr remote_addr; /**< family 0 = absent */
    bool has_mtu;
    uint32_t mtu; /**< too_big: the network MTU (largest IP packet) */
};

/** Data frames (v1 DATA_TO_OFFLOAD / DATA_TO_HOST, COMPAT_DATA). */
struct quicoff_wire_data {
    uint32_t index;    /**< TX entry (to offload) or RX entry (to host); compat: 16 bits */
    uint64_t pn;       /**< full packet number, <= QUICOFF_WIRE_PN_MAX */
    uint8_t flags;     /**< to host: enum quicoff_result_flag bits; to offload: 0 (reserved) */
    uint8_t status;    /**< to host: quicoff_status_t of the unprotect; to offload: 0 */
    uint8_t level;     /**< to host: quicoff_level_t */
    uint8_t key_phase; /**< to host: 1-RTT key phase bit */
    /** DATA_TRAIN only (0 otherwise): every packet of the train is
     *  segment_size bytes except the last, which is 1..segment_size; `count`
     *  packets with PNs pn .. pn + count - 1; payload_len is their sum.
     *  quicoff_wire_train_packet() finds packet i. */
    uint16_t segment_size;
    uint16_t count;
    /** The QUIC packet: on decode it points into the decoded buffer (not a
     *  copy); on encode it is copied after the header when non-NULL, else only
     *  the header is written, with payload_len in its Length field. */
    const uint8_t *payload;
    uint32_t payload_len;
};

/** One decoded frame, or one to encode. */
struct quicoff_wire_msg {
    uint16_t kind;   /**< quicoff_wire_kind_t */
    uint8_t version; /**< 0 = compat, else the v1 header's version */
    bool has_eth;    /**< eth is valid (frame-level decode) / to be written (frame-level encode) */
    struct quicoff_wire_eth eth;
    /** Decode: the header (kind, version, flags, request_id, index, direction)
     *  was read even though the whole message may not be valid, so a v1
     *  request can still be answered with an ACK carrying the error. */
    bool hdr_valid;
    /* v1 signaling header */
    uint8_t flags;      /**< enum quicoff_wire_flag bits (ADD/UPDATE/QUERY/STATS) */
    uint8_t acked_kind; /**< ACK: the kind of the request acknowledged */
    uint32_t
        request_id; /**< requests: chosen by the host; ACK/STATS: echoed; EVENT: sequence number */
    uint32_t index; /**< entry index chosen by the host (per direction) */
    uint8_t direction;     /**< quicoff_direction_t */
    uint8_t status;        /**< ACK/STATS/EVENT: quicoff_status_t; requests: 0 */
    const uint8_t *detail; /**< DETAIL TLV (into the decoded buffer), or NULL */
    uint16_t detail_len;
    union quicoff_wire_body {
        struct quicoff_wire_conn add;      /**< ADD, COMPAT_PEER, COMPAT_HOST */
        struct quicoff_wire_update update; /**< UPDATE */
        struct quicoff_wire_stats stats;   /**< STATS */
        struct quicoff_wire_event event;   /**< EVENT */
        struct quicoff_wire_data data;     /**< DATA_TO_OFFLOAD, DATA_TO_HOST, COMPAT_DATA */
    } u;
};

/* ------------------------------------------------------------------------ */
/* Functions                                                                 */

/** Zeroes m and sets the defaults of `kind`: version QUICOFF_WIRE_VERSION
 *  (0 for compat kinds), quicoff_conn_config_init() for ADD/compat
 *  signaling, index QUICOFF_WIRE_INDEX_NONE for EVENT. */
void quicoff_wire_msg_init(struct quicoff_wire_msg *m, quicoff_wire_kind_t kind);

/** Wipes the whole message (keys, IVs, secrets) in a way the compiler cannot
 *  remove.  Call on every decoded message once used, on error paths too. */
void quicoff_wire_msg_clear(struct quicoff_wire_msg *m);

/** Decodes one Ethernet frame (destination MAC onward; an 802.1Q tag, and an
 *  802.1ad tag before it, are skipped and reported in m->eth).  Returns
 *   - QUICOFF_OK
 *   - QUICOFF_UNSUPPORTED: EtherType is neither 0x88B5 nor 0x88B6 (m->kind NONE:
 *     not a host<->offload frame, e.g. IPv4 to pass through), an unknown v1
 *     version or Type, an unknown critical TLV, an unknown compat Type/Algo
 *   - QUICOFF_MALFORMED: truncated, a length that does not fit, a TLV of the
 *     wrong size, a duplicate TLV, a TLV not allowed in this kind, a
 *     required TLV missing
 *   - QUICOFF_INVALID_ARGUMENT: a value out of range (suite, level, DCID
 *     length, PN > 2^62-1, key length not matching the suite, ...) or a NULL
 *     argument.
 *  On error m holds no secret (it is cleared), except hdr_valid and the
 *  header fields when the v1 header was readable. */
quicoff_status_t quicoff_wire_decode(const uint8_t *frame, size_t len, struct quicoff_wire_msg *m);

/** As quicoff_wire_decode, for the bytes after the EtherType (an mbuf whose
 *  Ethernet header the caller has already parsed).  m->has_eth is false. */
quicoff_status_t quicoff_wire_decode_payload(uint16_t ethertype, const uint8_t *p, size_t len,
                                             struct quicoff_wire_msg *m);

/** Fast path: reads only the header of a data frame (v1 DATA_TO_OFFLOAD /
 *  DATA_TO_HOST on 0x88B5, compat data_pkt on 0x88B6) from the bytes after the
 *  EtherType, without the ~400-byte struct quicoff_wire_msg that
 *  quicoff_wire_decode_payload() initialises.  Reads nothing outside
 *  [p, p+len); no allocation.  The EtherType is needed because a compat data
 *  frame has no type byte (docs/protocol.md §1).
 *
 *  For a data frame it applies exactly the full decoder's rules (the two share
 *  them): the same status, *kind = the full decoder's m->kind, and *d = its
 *  m->u.data, field for field.  On QUICOFF_OK the QUIC packet is
 *  d->payload[0 .. d->payload_len), inside [p, p+len) (offset d->payload - p:
 *  20 for v1, 10 for compat); v1 bytes after it are padding.  On an error *d is
 *  zeroed and *kind still says what the frame claimed to be.  Returns
 *   - QUICOFF_OK
 *   - QUICOFF_MALFORMED: header cut, or a v1 Length past the frame; a
 *     DATA_TRAIN whose Length is not (count - 1) full segments plus a last
 *     packet of 1..segment_size bytes
 *   - QUICOFF_INVALID_ARGUMENT: PN > 2^62-1, DATA_TO_HOST level > 3; a
 *     DATA_TRAIN with segment size 0, count 0, or a last PN (pn + count - 1)
 *     > 2^62-1; or kind/d NULL, or p NULL with len > 0 (*kind NONE)
 *   - QUICOFF_UNSUPPORTED with *kind DATA_TO_*: a v1 data Type in another
 *     version
 *   - QUICOFF_UNSUPPORTED with *kind QUICOFF_WIRE_NONE: not a data frame
 *     (v1 or compat signaling, another EtherType, a 0x88B5 payload under 3
 *     bytes): decode it with quicoff_wire_decode_payload(), which may accept
 *     it or give its own status. */
quicoff_status_t quicoff_wire_data_hdr_read(uint16_t ethertype, const uint8_t *p, size_t len,
                                            quicoff_wire_kind_t *kind,
                                            struct quicoff_wire_data *d);

/** Encodes m as a whole Ethernet frame (m->eth: MACs, optional VLAN tag; the
 *  EtherType is the one m->kind requires) into buf.  *out_len = bytes
 *  written.  Returns QUICOFF_OK, QUICOFF_NO_SPACE (cap too small; nothing
 *  useful in buf) or QUICOFF_INVALID_ARGUMENT (a field that cannot be
 *  encoded: e.g. a compat index > 0xFFFF, key lengths not matching the suite,
 *  compat RX DCID not 8 bytes).  No padding to the 60-byte Ethernet minimum. */
quicoff_status_t quicoff_wire_encode(const struct quicoff_wire_msg *m, uint8_t *buf, size_t cap,
                                     size_t *out_len);

/** As quicoff_wire_encode, without the Ethernet header (the bytes after the
 *  EtherType).  *ethertype (if not NULL) receives the EtherType to use. */
quicoff_status_t quicoff_wire_encode_payload(const struct quicoff_wire_msg *m, uint8_t *buf,
                                             size_t cap, size_t *out_len, uint16_t *ethertype);

/** Fast path: writes only the v1 data header of `kind` at buf (20 bytes for
 *  DATA_TO_OFFLOAD or DATA_TO_HOST, 24 for DATA_TRAIN with d->segment_size
 *  and d->count), Length = d->payload_len, e.g. into an mbuf's headroom before
 *  the QUIC packet.  Returns the header length or 0 (cap too small, bad kind,
 *  PN too large, a train whose fields break the rules of
 *  quicoff_wire_data_hdr_read()). */
size_t quicoff_wire_data_hdr_write(uint8_t *buf, size_t cap, quicoff_wire_kind_t kind,
                                   const struct quicoff_wire_data *d);

/** Packet i (0 .. d->count - 1) of a decoded DATA_TRAIN *d: *len gets its
 *  length (segment_size, or what is left for the last) and the return value
 *  points at it inside d->payload.  NULL (and *len 0) when i is out of range
 *  or d is not a valid train.  Its PN is d->pn + i. */
const uint8_t *quicoff_wire_train_packet(const struct quicoff_wire_data *d, unsigned i,
                                         uint32_t *len);

/** Fast path: writes only the compat data_pkt header (10 bytes).  Returns 10 or
 *  0 (cap too small, index > 0xFFFF). */
size_t quicoff_wire_compat_data_hdr_write(uint8_t *buf, size_t cap, uint32_t index, uint64_t pn);

/** Fills *ack as the ACK of request `req` (a decoded v1 ADD/UPDATE/REMOVE/
 *  QUERY, or any v1 frame with hdr_valid): request_id, index, direction and
 *  acked_kind echoed, status = st, MACs swapped and VLAN tag kept when
 *  req->has_eth.  For a QUERY, use QUICOFF_WIRE_STATS instead (see
 *  quicoff_wire_stats_for). */
void quicoff_wire_ack_for(const struct quicoff_wire_msg *req, quicoff_status_t st,
                          struct quicoff_wire_msg *ack);

/** Fills *reply as the STATS reply to QUERY `req` (flags echoed, status =
 *  st); the caller then fills reply->u.stats and sets has_conn/has_table. */
void quicoff_wire_stats_for(const struct quicoff_wire_msg *req, quicoff_status_t st,
                            struct quicoff_wire_msg *reply);

/** The config of a decoded ADD/compat signaling message, ready for
 *  quicoff_conn_add(): sets m->u.add.cfg.secret to m->u.add.secret (when a
 *  secret was sent) and returns &m->u.add.cfg; NULL for another kind.  The
 *  pointer is valid while *m is, at its current address. */
const struct quicoff_conn_config *quicoff_wire_conn_config(struct quicoff_wire_msg *m);

/** The same for UPDATE and quicoff_conn_update(). */
const struct quicoff_conn_update *quicoff_wire_conn_update(struct quicoff_wire_msg *m);

/** Stable names ("add", "ack", "compat_peer", ...; "auth_failed", ...); "unknown" otherwise. */
const char *quicoff_wire_kind_name(unsigned kind);
const char *quicoff_wire_event_name(unsigned code);

#ifdef __cplusplus
}
#endif
#endif /* QUICOFF_WIRE_H */
