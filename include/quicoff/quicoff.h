/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file quicoff.h
 * libquicoff: the QUIC packet-protection data plane.
 *
 * The host's QUIC stack (the control plane) installs per-connection keys in a
 * connection table; workers (one per data-plane thread) protect and unprotect
 * bursts of packets in place against that table.  Everything per packet is
 * here: parsing, connection lookup, header protection, AEAD, packet-number
 * decoding, key-phase handling, usage limits and counters.
 *
 * Threading contract
 *  - Control calls (quicoff_conn_add/update/remove, stats, reclaim) may come
 *    from any thread; they serialise among themselves on a mutex.
 *  - Data calls (quicoff_*_burst, quicoff_unprotect_datagrams, and the
 *    split quicoff_*_prepare / quicoff_*_complete for an AEAD done by the
 *    caller) take a quicoff_worker; a worker belongs to exactly one
 *    thread.  They take no lock, never allocate, log or abort, and never
 *    see a half-written entry
 *    (entries are replaced by copy and pointer swap; the old copy is zeroed
 *    and freed after every worker has left the burst, or prepare..complete
 *    window, that could have seen it: epoch-based reclamation).
 *  - A given connection is processed by one worker at a time, as steering by
 *    connection ID guarantees in a multi-core data plane (RSS by DCID).
 *    Per-connection counters are single-writer under that rule.
 */
#ifndef QUICOFF_QUICOFF_H
#define QUICOFF_QUICOFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define QUICOFF_MAX_CID_LEN 20 /**< RFC 9000 §17.2: at most 20 bytes */
#define QUICOFF_TAG_LEN 16     /**< every QUIC AEAD has a 16-byte tag */
#define QUICOFF_IV_LEN 12      /**< every QUIC AEAD has a 12-byte nonce */
#define QUICOFF_MAX_KEY_LEN 32
#define QUICOFF_MAX_SECRET_LEN 48 /**< SHA-384 for AES-256-GCM */
#define QUICOFF_SAMPLE_LEN 16     /**< RFC 9001 §5.4.2 */

#define QUICOFF_VERSION_1 0x00000001u /**< RFC 9000 */
#define QUICOFF_VERSION_2 0x6b3343cfu /**< RFC 9369 */

/** AEAD + header protection, RFC 9001 §5.3 and §5.4. */
typedef enum quicoff_suite {
    QUICOFF_AES_128_GCM = 0,       /**< TLS_AES_128_GCM_SHA256, HP AES-128-ECB */
    QUICOFF_AES_256_GCM = 1,       /**< TLS_AES_256_GCM_SHA384, HP AES-256-ECB */
    QUICOFF_AES_128_CCM = 2,       /**< TLS_AES_128_CCM_SHA256, HP AES-128-ECB */
    QUICOFF_CHACHA20_POLY1305 = 3, /**< TLS_CHACHA20_POLY1305_SHA256, HP ChaCha20 */
    QUICOFF_SUITE_COUNT
} quicoff_suite_t;

/** Result of a call or of one packet in a burst. */
typedef enum quicoff_status {
    QUICOFF_OK = 0,
    QUICOFF_UNKNOWN_CONNECTION = 1, /**< no entry for this DCID / address / handle */
    QUICOFF_AUTH_FAILED = 2,        /**< AEAD tag did not verify; bytes left as received */
    QUICOFF_MALFORMED =
        3, /**< too short, bad length, fixed bit clear (entry without grease_quic_bit), ... */
    QUICOFF_KEY_PHASE_UNAVAILABLE = 4, /**< no keys installed for the packet's key phase */
    /** Processed successfully, but the key (TX: packets protected, confidentiality
     *  limit) or the connection (RX: authentication failures, integrity limit)
     *  crossed the caller's threshold: the control plane should update keys. */
    QUICOFF_USAGE_LIMIT_REACHED = 5,
    /** Refused: the RFC 9001 §6.6 hard limit is reached; nothing was changed. */
    QUICOFF_KEY_EXHAUSTED = 6,
    QUICOFF_UNSUPPORTED = 7, /**< Retry, Version Negotiation, unknown version */
    QUICOFF_NO_SPACE = 8,    /**< protect: no room for the 16-byte tag */
    QUICOFF_INVALID_ARGUMENT = 9,
    QUICOFF_EXISTS = 10, /**< add: an entry with this lookup key exists */
    QUICOFF_TABLE_FULL = 11,
    QUICOFF_NO_MEMORY = 12,
    QUICOFF_BACKEND_UNAVAILABLE = 13,
    QUICOFF_STATUS_COUNT
} quicoff_status_t;

/** True when the packet was processed (OK or USAGE_LIMIT_REACHED). */
static inline bool quicoff_status_ok(quicoff_status_t s)
{
    return s == QUICOFF_OK || s == QUICOFF_USAGE_LIMIT_REACHED;
}

/** Stable lower-case name ("ok", "auth_failed", ...), the same in Python and docs. */
const char *quicoff_status_name(quicoff_status_t s);
/** Suite name: "aes-128-gcm", "aes-256-gcm", "aes-128-ccm", "chacha20-poly1305". */
const char *quicoff_suite_name(quicoff_suite_t s);
/** Parses a suite name; returns QUICOFF_SUITE_COUNT when unknown. */
quicoff_suite_t quicoff_suite_from_name(const char *name);

typedef enum quicoff_direction {
    QUICOFF_DIR_TX = 0, /**< host -> network: protect */
    QUICOFF_DIR_RX = 1, /**< network -> host: unprotect */
} quicoff_direction_t;

/** Encryption level = which packets an entry's keys apply to. */
typedef enum quicoff_level {
    QUICOFF_LEVEL_ONE_RTT = 0,   /**< short header, key phases */
    QUICOFF_LEVEL_INITIAL = 1,   /**< long header, keys from the client's first DCID */
    QUICOFF_LEVEL_ZERO_RTT = 2,  /**< long header */
    QUICOFF_LEVEL_HANDSHAKE = 3, /**< long header */
    QUICOFF_LEVEL_COUNT
} quicoff_level_t;

/** How the AEAD nonce is built from IV, packet number and path ID. */
typedef enum quicoff_nonce_layout {
    /** RFC 9001 §5.3: IV ^ PN (path ID ignored). Multipath path 0 is the same. */
    QUICOFF_NONCE_RFC9001 = 0,
    /** draft-ietf-quic-multipath-19 (RFC 10069) §2.4 nonce: IV ^ (path ID as 32-bit
     *  big-endian || PN as 64-bit big-endian). */
    QUICOFF_NONCE_MULTIPATH = 1,
    /** The multipath nonce with the path ID's four bytes in reversed
     *  (little-endian) order, then PN big-endian: what a DPDK offload of
     *  draft-ietf-quic-multipath-01 put on the wire (htonl() then bytes shifted
     *  out high first on a little-endian CPU). Equal to the others for path 0.
     *  docs/design.md, "Nonces and multipath". */
    QUICOFF_NONCE_MULTIPATH_PATH_ID_LE = 2,
} quicoff_nonce_layout_t;

/** What the data plane does with a packet that fails authentication. */
typedef enum quicoff_fail_action {
    QUICOFF_FAIL_DROP = 0, /**< status AUTH_FAILED; the caller drops it */
    QUICOFF_FAIL_PASS = 1, /**< status AUTH_FAILED with bytes restored as received,
                                for the host to see (QUICOFF_FLAG_PASS_FAILED set) */
} quicoff_fail_action_t;

/** A local IPv4/IPv6 address + UDP port: the lookup key for zero-length DCIDs. */
struct quicoff_addr {
    uint8_t family; /**< 0 = none, 4 = IPv4 (ip[0..3]), 6 = IPv6 */
    uint8_t ip[16];
    uint16_t port; /**< host byte order */
};

/** Packet protection keys for one key phase, RFC 9001 §5.1. */
struct quicoff_packet_keys {
    uint8_t key[QUICOFF_MAX_KEY_LEN]; /**< 16 or 32 bytes used, per suite */
    uint8_t iv[QUICOFF_IV_LEN];
    uint8_t hp[QUICOFF_MAX_KEY_LEN]; /**< header protection key */
};

/* ------------------------------------------------------------------------ */
/* Key schedule (RFC 9001 §5.1, §5.2, §6; RFC 9369 §3.3)                      */

/** Secret length of a suite's TLS hash: 32 (SHA-256) or 48 (SHA-384). */
size_t quicoff_suite_secret_len(quicoff_suite_t suite);
/** AEAD key length of a suite: 16 or 32. */
size_t quicoff_suite_key_len(quicoff_suite_t suite);

/** key/iv/hp from a TLS traffic secret ("quic key"/"quic iv"/"quic hp", or the
 *  "quicv2 ..." labels for QUIC v2). */
quicoff_status_t quicoff_derive_packet_keys(quicoff_suite_t suite, const uint8_t *secret,
                                            size_t secret_len, uint32_t version,
                                            struct quicoff_packet_keys *out);

/** Next-generation secret for a key update ("quic ku" / "quicv2 ku"). */
quicoff_status_t quicoff_derive_next_secret(quicoff_suite_t suite, const uint8_t *secret,
                                            size_t secret_len, uint32_t version,
                                            uint8_t *next_secret);

/** Client and server Initial secrets (32 bytes each) from the client's first DCID. */
quicoff_status_t quicoff_derive_initial_secrets(const uint8_t *dcid, size_t dcid_len,
                                                uint32_t version, uint8_t client_secret[32],
                                                uint8_t server_secret[32]);

/* ------------------------------------------------------------------------ */
/* Connection table                                                          */

struct quicoff_table;
struct quicoff_worker;

/** The handle of a connection entry: one direction and one encryption level of
 *  a QUIC connection (the API's "connection" is always such an entry; the
 *  words per layer: docs/glossary.md). Slot index in the low 32 bits, a
 *  generation above, so a handle of a removed entry never reaches its slot's
 *  next tenant. */
typedef uint64_t quicoff_conn_t;
#define QUICOFF_CONN_INVALID UINT64_MAX

struct quicoff_table_config {
    uint32_t capacity;     /**< maximum live connections (entries) */
    uint8_t local_cid_len; /**< length of the CIDs this endpoint issued (0..20):
                                 how many DCID bytes a short header carries */
    uint16_t max_workers;  /**< data-plane threads; 0 = 64 */
    const char *backend;   /**< "openssl", "auto" or NULL (= auto) */
};

struct quicoff_table *quicoff_table_create(const struct quicoff_table_config *cfg,
                                           quicoff_status_t *err);
/** Destroys the table; no worker may be inside a burst. Zeroes every key. */
void quicoff_table_destroy(struct quicoff_table *t);
/** Name of the crypto backend the table uses ("openssl", ...). */
const char *quicoff_table_backend(const struct quicoff_table *t);

/** Everything one entry holds: the fields an offload's connection entry has
 *  (MsQuic's QEO connection has the same shape), plus what this library adds. */
struct quicoff_conn_config {
    quicoff_direction_t direction;
    quicoff_level_t level;
    quicoff_suite_t suite;
    uint32_t version; /**< 0 = QUIC v1 */
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    uint8_t dcid_len;               /**< RX: the CID the peer puts in packets to us (lookup key);
                           TX: the peer's CID: its length parses the short header */
    struct quicoff_addr local_addr; /**< RX lookup key when dcid_len == 0 */
    uint32_t path_id;
    quicoff_nonce_layout_t nonce_layout;
    quicoff_fail_action_t fail_action;
    /** RX: largest packet number received so far (for PN decoding);
     *  UINT64_MAX = none yet. TX: ignored. Anything else above 2^62 - 1 (the
     *  largest QUIC packet number) is INVALID_ARGUMENT, in either direction. */
    uint64_t largest_pn;
    /** Packets (TX protected) or authentication failures (RX) after which
     *  QUICOFF_USAGE_LIMIT_REACHED is returned; 0 = 3/4 of the RFC 9001 limit. */
    uint64_t usage_threshold;
    /** Key generation of `keys` (0 at the start of 1-RTT); key phase bit = generation & 1. */
    uint32_t key_generation;
    /** Keys: either raw keys (secret == NULL) or derived from a TLS traffic secret.
     *  The header-protection key comes from the generation-0 secret for the whole
     *  connection (RFC 9001 §6): to install a connection already past a key
     *  update, give raw keys with the original hp. */
    struct quicoff_packet_keys keys;
    const uint8_t *secret;
    size_t secret_len;
    /** Also install generation+1 ahead of time: next_keys if has_next_keys,
     *  else, when a secret is given, derived with "quic ku" (1-RTT only).
     *  next_keys.hp is ignored: header protection keys are not updated (RFC 9001 §6). */
    bool has_next_keys;
    struct quicoff_packet_keys next_keys;
    /** RFC 9287 greasing of the QUIC bit (the fixed bit, 0x40 of the first
     *  byte). RX: accept packets of this entry with the bit 0 (set it when the
     *  host advertised the grease_quic_bit transport parameter). TX: protect
     *  headers the host wrote with the bit 0, leaving it 0. false: such packets
     *  are MALFORMED (RFC 9000 §17). The bit is judged only once the packet is
     *  identified: a clear bit with an unknown DCID is UNKNOWN_CONNECTION. */
    bool grease_quic_bit;
    /** The caller's own pointer for this entry (e.g. its per-connection
     *  state), handed back in quicoff_result.user with every packet of the
     *  entry, so an application above the library keeps no second table.
     *  Never dereferenced by the library. Changed with QUICOFF_UPDATE_USER;
     *  a replace takes the new config's. A worker may still return the old
     *  pointer for a packet of a burst that began before the change: keep
     *  what it points to alive until your workers have left such bursts. */
    void *user;
};

/** Fills cfg with defaults: TX, 1-RTT, AES-128-GCM, v1, no keys, largest_pn
 *  none, grease_quic_bit on. */
void quicoff_conn_config_init(struct quicoff_conn_config *cfg);

quicoff_status_t quicoff_conn_add(struct quicoff_table *t, const struct quicoff_conn_config *cfg,
                                  quicoff_conn_t *out);

/** What quicoff_conn_update changes (bit mask). */
enum quicoff_update_what {
    /** Install keys for generation `key_generation` in its phase slot (replacing
     *  whatever that slot held: e.g. next keys ahead of time, which drops the old
     *  generation's keys). raw keys or secret, as in the config. */
    QUICOFF_UPDATE_KEYS = 1u << 0,
    /** Make generation current+1 current now (control-plane initiated update). */
    QUICOFF_UPDATE_ROLL = 1u << 1,
    /** Forget the keys of generation current-1 (zeroed); late packets of the
     *  old phase then get KEY_PHASE_UNAVAILABLE. */
    QUICOFF_UPDATE_DROP_OLD = 1u << 2,
    QUICOFF_UPDATE_LARGEST_PN = 1u << 3, /**< PN reset (0..2^62-1 or UINT64_MAX = none) */
    QUICOFF_UPDATE_FAIL_ACTION = 1u << 4,
    QUICOFF_UPDATE_THRESHOLD = 1u << 5,
    QUICOFF_UPDATE_USER = 1u << 6, /**< the entry's user pointer (quicoff_conn_config.user) */
};

struct quicoff_conn_update {
    uint32_t what; /**< enum quicoff_update_what bits */
    uint32_t key_generation;
    struct quicoff_packet_keys keys; /**< .hp ignored: the entry's HP key never changes */
    const uint8_t *secret;
    size_t secret_len;
    uint64_t largest_pn;
    quicoff_fail_action_t fail_action;
    uint64_t usage_threshold;
    void *user;
};

quicoff_status_t quicoff_conn_update(struct quicoff_table *t, quicoff_conn_t conn,
                                     const struct quicoff_conn_update *u);
/** Replaces the entry `conn` by one built from cfg (same direction), atomically
 *  for the data plane: the handle stays valid and names the new entry, and a
 *  packet finds either the old entry or the new one, never neither. The new
 *  entry starts as an added one (counters, PN state, key generation), and no
 *  packet of the old entry still in a burst writes into it: the call waits
 *  for the bursts under way to end (microseconds; at most 20 ms, so do not
 *  call it between a prepare and its complete on the same thread). The old
 *  keys are zeroed and freed once no worker can hold them. RX: EXISTS when
 *  another entry has cfg's lookup key (the entry's own key may be kept or
 *  changed). On any error nothing changes. */
quicoff_status_t quicoff_conn_replace(struct quicoff_table *t, quicoff_conn_t conn,
                                      const struct quicoff_conn_config *cfg);
/** Unlinks the entry at once; its keys are zeroed and freed once no worker can hold them. */
quicoff_status_t quicoff_conn_remove(struct quicoff_table *t, quicoff_conn_t conn);
/** RX lookup as the data plane does it (for tools and tests). */
quicoff_conn_t quicoff_conn_find(struct quicoff_table *t, quicoff_level_t level,
                                 const uint8_t *dcid, size_t dcid_len,
                                 const struct quicoff_addr *local_addr);
/** The entry's user pointer (quicoff_conn_config.user); NULL for an unknown
 *  handle (or when it is NULL). Control path. */
void *quicoff_conn_user(struct quicoff_table *t, quicoff_conn_t conn);
/** Frees retired entries no worker can hold any more; returns how many are still waiting. */
size_t quicoff_table_reclaim(struct quicoff_table *t);

/* ------------------------------------------------------------------------ */
/* Counters: the same names in C, Python, telemetry and docs                 */

struct quicoff_conn_stats {
    uint64_t packets; /**< processed successfully */
    uint64_t bytes;   /**< payload bytes of those packets */
    uint64_t auth_failures;
    uint64_t malformed;
    uint64_t key_phase_unavailable;
    uint64_t key_updates;    /**< key phase changes seen/made by the data plane */
    uint64_t key_generation; /**< current key generation */
    uint64_t largest_pn;     /**< UINT64_MAX = none */
    uint64_t key_packets;    /**< packets with the current key (confidentiality limit) */
};

struct quicoff_table_stats {
    uint64_t rx_packets, rx_bytes;
    uint64_t tx_packets, tx_bytes;
    uint64_t auth_failures;
    uint64_t unknown_connection; /**< unknown-DCID drops */
    uint64_t malformed;
    uint64_t key_phase_unavailable;
    uint64_t usage_limit_reached;
    uint64_t key_exhausted;
    uint64_t unsupported;
    uint64_t key_updates;
    uint64_t connections;     /**< live entries */
    uint64_t retired_pending; /**< removed/replaced entries not yet zeroed+freed */
};

quicoff_status_t quicoff_conn_stats(struct quicoff_table *t, quicoff_conn_t conn,
                                    struct quicoff_conn_stats *out);
/** Data-path safe: the packets protected (TX) or authenticated (RX) with the
 *  entry's current key, as quicoff_conn_stats()'s key_packets, without the
 *  table mutex: for a worker that saw QUICOFF_USAGE_LIMIT_REACHED and tells
 *  the host how far the key is used. Exact when called on the worker that
 *  processes the entry (its single writer); a snapshot elsewhere. Returns OK,
 *  UNKNOWN_CONNECTION (removed, replaced or never added) or
 *  INVALID_ARGUMENT. */
quicoff_status_t quicoff_conn_key_packets(struct quicoff_worker *w, quicoff_conn_t conn,
                                          uint64_t *out);
/** Sums the per-worker counters (each written by its worker only). */
void quicoff_table_stats(struct quicoff_table *t, struct quicoff_table_stats *out);

/* ------------------------------------------------------------------------ */
/* Data path                                                                 */

/** A worker: one per data-plane thread; holds its counters and epoch.
 *  Memory is allocated only on the control side: quicoff_table_create (the
 *  table), quicoff_conn_add/update/replace (an entry's keys and cipher
 *  contexts; with AES-128-CCM on ipsec-mb the process's first key also runs
 *  the crossover calibration), and quicoff_worker_create (the worker, a
 *  64 KiB scratch buffer, and the backend's per-thread state: ipsec-mb's
 *  ~200 KiB job manager for ChaCha20-Poly1305 and AES-128-CCM bursts).
 *  quicoff_worker_destroy frees them (the job manager wiped first).  The
 *  data calls below never allocate, per packet or on a thread's first. */
struct quicoff_worker *quicoff_worker_create(struct quicoff_table *t);
void quicoff_worker_destroy(struct quicoff_worker *w);

/** One QUIC packet inside a buffer (a UDP payload), processed in place. */
struct quicoff_pkt {
    uint8_t *data;   /**< the datagram */
    uint32_t end;    /**< one past the last valid byte of data: an offset, not a
                          length from `offset` (unprotect: the datagram's length;
                          protect: where the plaintext payload ends) */
    uint32_t cap;    /**< protect: bytes writable at data (>= end + 16) */
    uint32_t offset; /**< where this QUIC packet starts (coalesced packets) */
    /* protect only */
    quicoff_conn_t conn; /**< TX entry */
    uint64_t pn;         /**< full packet number; the header carries its encoding */
    /* unprotect only, optional */
    const struct quicoff_addr *local_addr; /**< for zero-length DCIDs */
};

/** Result flags. */
enum quicoff_result_flag {
    QUICOFF_FLAG_KEY_UPDATED =
        1u << 0, /**< this packet moved the connection to the next key phase */
    QUICOFF_FLAG_PASS_FAILED =
        1u << 1, /**< auth failed, fail action PASS: hand on marked failed */
    QUICOFF_FLAG_LONG_HEADER = 1u << 2,
    QUICOFF_FLAG_OLD_KEYS = 1u << 3, /**< decrypted with the previous generation's keys */
};

/** What the data plane says about one packet. 64 bytes: one cache line. */
struct quicoff_result {
    quicoff_status_t status;
    uint8_t flags;     /**< enum quicoff_result_flag */
    uint8_t level;     /**< quicoff_level_t of the packet */
    uint8_t key_phase; /**< 1-RTT key phase bit */
    uint8_t pn_len;    /**< 1..4 */
    uint32_t hdr_off;  /**< first byte (== pkt.offset) */
    uint32_t pn_off;
    uint32_t payload_off;
    uint32_t payload_len; /**< plaintext bytes (tag excluded) */
    uint32_t packet_end;  /**< one past the tag: where a coalesced next packet starts */
    /** The DCID is data[dcid_off, dcid_off + dcid_len), as the header parse
     *  found it (also for UNKNOWN_CONNECTION and UNSUPPORTED packets, for
     *  steering or handing on); dcid_len 0 and dcid_off 0 when the packet
     *  carries none or it does not fit in the buffer. */
    uint32_t dcid_off;
    uint64_t pn;         /**< full decoded packet number */
    quicoff_conn_t conn; /**< the entry (QUICOFF_CONN_INVALID when none was found) */
    void *user;          /**< the entry's quicoff_conn_config.user (NULL when none) */
    uint8_t dcid_len;
};

/** Removes protection from n packets in place. Returns how many are ok
 *  (status OK or USAGE_LIMIT_REACHED). Every packet gets a result. */
unsigned quicoff_unprotect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, unsigned n);

/** Protects n packets in place: each holds header (with its plaintext PN bytes
 *  and, for long headers, a Length that counts the tag) + plaintext payload in
 *  [offset, end); the 16-byte tag is written at end (cap must allow it).
 *  Returns how many are ok. A packet that is not ok is left unprotected and
 *  must not be sent. */
unsigned quicoff_protect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                               struct quicoff_result *res, unsigned n);

/** Unprotects every coalesced packet of one datagram (a loop over the burst
 *  call); stops at trailing padding. Returns the number of results written;
 *  a datagram holds at most len / 21 + 1 packets (each needs header + 4 + 16). */
unsigned quicoff_unprotect_datagram(struct quicoff_worker *w, uint8_t *data, uint32_t len,
                                    const struct quicoff_addr *local_addr,
                                    struct quicoff_result *res, unsigned max_results);

/** One datagram of quicoff_unprotect_datagrams. */
struct quicoff_datagram {
    uint8_t *data; /**< the UDP payload, unprotected in place */
    uint32_t len;
    const struct quicoff_addr *local_addr; /**< for zero-length DCIDs; may be NULL */
    struct quicoff_result *res;            /**< room for max_results results */
    uint16_t max_results;
    uint16_t n_results; /**< out: results written (one per packet looked at) */
    uint16_t n_ok;      /**< out: of them ok (OK or USAGE_LIMIT_REACHED) */
};

/** How quicoff_unprotect_datagrams walks a datagram. */
enum quicoff_datagram_flag {
    /** Stop a datagram at its first packet that is not ok: that packet is
     *  the last result, and the bytes after it are left as received (for a
     *  caller that hands the rest on to the host, which may hold its keys).
     *  Without it a datagram goes on after a failed packet whose extent is
     *  known (RFC 9000 §12.2: each coalesced packet is processed on its own). */
    QUICOFF_DATAGRAM_STOP_AT_FAILURE = 1u << 0,
};

/** Unprotects n datagrams, each possibly carrying several coalesced QUIC
 *  packets (RFC 9000 §12.2), with one result per packet in the datagram's
 *  own res array. Round r takes the r-th packet of every datagram still
 *  going, as one burst (so a burst of 1-RTT datagrams costs what
 *  quicoff_unprotect_burst costs). A datagram ends at its end, at trailing
 *  zero padding, where a packet's extent is unknown (malformed, unsupported),
 *  at max_results, and with QUICOFF_DATAGRAM_STOP_AT_FAILURE at its first
 *  packet that is not ok. flags: enum quicoff_datagram_flag. Returns the
 *  number of ok packets over all datagrams. Data-path call, as the bursts. */
unsigned quicoff_unprotect_datagrams(struct quicoff_worker *w, struct quicoff_datagram *dgs,
                                     unsigned n, unsigned flags);

/** One round of quicoff_walk_datagrams: unprotect pkts[0..n) in place, one
 *  result each in res[0..n) (as quicoff_unprotect_burst does). dgram[j] is
 *  the index in dgs of packet j's datagram (e.g. to find its mbuf). n <= 32. */
typedef void (*quicoff_round_fn)(void *arg, struct quicoff_pkt *pkts, struct quicoff_result *res,
                                 const unsigned *dgram, unsigned n);

/** quicoff_unprotect_datagrams' walk with the unprotect done by fn: for a
 *  caller whose packets go through the split calls and its own AEAD engine
 *  (lookaside crypto) but that wants the library's coalesced-packet walk.
 *  Same outputs and return value; fn runs on the caller's thread. */
unsigned quicoff_walk_datagrams(struct quicoff_datagram *dgs, unsigned n, unsigned flags,
                                quicoff_round_fn fn, void *arg);

/* ------------------------------------------------------------------------ */
/* Header peek: the library's own parse, for steering                        */

/** What quicoff_peek_header reads from a header without keys. */
struct quicoff_header_info {
    uint8_t long_header; /**< header form bit (0x80): 1 long, 0 short (1-RTT) */
    uint8_t
        fixed_bit; /**< 0x40 of the first byte: 1 as RFC 9000 has it, 0 when greased (RFC 9287) */
    uint8_t long_type;   /**< long header: the type bits ((first >> 4) & 3) as on the wire */
    uint8_t level;       /**< quicoff_level_t: 1-RTT, or the long type read by its version
                              (v1 and v2 number them differently); valid when OK */
    uint8_t dcid_len;    /**< 0 when the DCID is not inside the buffer */
    uint32_t version;    /**< long header: the version (0 = Version Negotiation) */
    uint32_t dcid_off;   /**< DCID at data[dcid_off, dcid_off + dcid_len) */
    uint32_t pn_off;     /**< where the (protected) packet number starts; valid when OK */
    uint32_t packet_end; /**< one past the packet (long: its Length; short: len); valid when OK */
};

/** Parses the header at data[offset..len) as the data path does, with the
 *  same code: short headers carry short_dcid_len DCID bytes (the table's
 *  local_cid_len). Reads only, never past len. The key phase bit and the
 *  packet number length are under header protection (RFC 9001 §5.4.1), so
 *  they are not here: quicoff_result has them once the packet is unprotected.
 *  Returns OK, MALFORMED (too short, bad lengths) or UNSUPPORTED (Version
 *  Negotiation, Retry, an unknown version). The DCID is given whenever it is
 *  inside the buffer: also for UNSUPPORTED, since RFC 8999 puts it at the
 *  same place in every version (up to 20 bytes here). */
quicoff_status_t quicoff_peek_header(const uint8_t *data, uint32_t len, uint32_t offset,
                                     uint8_t short_dcid_len, struct quicoff_header_info *out);

/* ------------------------------------------------------------------------ */
/* Split data path: the AEAD on the caller's engine (lookaside crypto)        */
/*
 * For an AEAD that runs elsewhere (an rte_cryptodev, an inline-crypto NIC, a
 * DPU's crypto block): the library does everything around it, with the same
 * code as the burst calls, and hands the caller one job per packet.
 *
 *   n_jobs = quicoff_unprotect_prepare(w, pkts, res, jobs, n);
 *   for each i with jobs[i].pending: open (RX) or seal (TX) as the job says,
 *       in place, and set jobs[i].aead_status;
 *   quicoff_unprotect_complete(w, pkts, res, jobs, n);   (same arrays, same n)
 *
 * The pair gives the same bytes, results and counters as one burst call on
 * the same packets (each burst call of at most 32 packets; prepare runs the
 * whole of its n before complete, as one chunk of n would).
 *
 * prepare
 *   RX: parse, look up, usage limit, header protection removed (the header is
 *       now the plaintext AAD), packet number decoded, key chosen by the key
 *       phase rules (RFC 9001 §6). No AEAD, no connection state changed.
 *   TX: resolve the handle, check the header the caller built, choose the
 *       key (current, or the next one: that starts a key update), count the
 *       packet against the key's RFC 9001 §6.6 limit. No AEAD.
 *   A packet that fails here gets pending = 0; its result is written by
 *   complete (and counted there, as the burst call counts it).
 * the caller's AEAD, for each pending job, in place in pkts[i].data:
 *   AAD = data[aad_off, aad_off + aad_len), plaintext/ciphertext =
 *   data[data_off, data_off + data_len), 16-byte tag at data[tag_off]
 *   (TX: written, RX: checked; == data_off + data_len), nonce = nonce[0..12).
 *   aead_status = QUICOFF_OK (sealed / tag verified and decrypted),
 *   QUICOFF_AUTH_FAILED (RX: the tag did not verify; the engine must leave,
 *   or put back, the payload and tag as received when the packet is to be
 *   handed on: see fail_pass), anything else = the engine failed (counted
 *   nowhere by the library; the packet gets QUICOFF_BACKEND_UNAVAILABLE).
 * complete
 *   RX: ok -> key phase change, largest PN, counters, status; auth failed ->
 *       the header is put back exactly as received, the failure counted
 *       (integrity limit), QUICOFF_FLAG_PASS_FAILED with fail action pass.
 *   TX: ok -> header protection (mask from the ciphertext sample), counters.
 *   Every job is zeroed (it held the nonce, which reveals the IV).
 *
 * Rules
 *  - Between prepare and complete the worker is inside the table's read-side
 *    critical section (as during a burst call): entries, keys and job.key stay
 *    valid, and nothing the table removed is freed. Keep the window short (a
 *    crypto round trip): the control path's memory reclamation waits for it.
 *    Several prepares may be open on one worker (each completed once); burst
 *    calls may run meanwhile. Same thread as the worker, as always.
 *  - pkts/res/jobs must be the same arrays (same n) in prepare and complete,
 *    the packets' header bytes untouched in between (the AEAD writes only
 *    data and tag).
 *  - No allocation, lock or log, as the burst calls.
 *  - Limits are checked in prepare with the state before the completes, as a
 *    burst chunk does: packets of one connection prepared together that all
 *    fail authentication may pass the RX integrity limit by up to n - 1.
 */

/** What the caller's AEAD engine does for one packet. Filled by prepare. */
struct quicoff_aead_job {
    /** Stable per (entry, key generation): the same key keeps its ID across
     *  updates of the entry that leave it in place; a new key (new generation,
     *  re-key in place, a new entry) gets a new one. Unique in the table's
     *  lifetime, never 0. Cache a session on it; learn that it died with the
     *  retire hook (quicoff_table_set_key_hooks). */
    uint64_t key_id;
    /** What the install hook returned for this key (e.g. the caller's
     *  sessions); NULL without hooks. */
    void *key_user;
    /** The AEAD key, key_len bytes, inside the table: valid until complete.
     *  Not a copy: nothing to wipe. */
    const uint8_t *key;
    uint8_t key_len;
    uint8_t suite;   /**< quicoff_suite_t */
    uint8_t pending; /**< 1: run the AEAD; 0: prepare already decided (ignore the rest) */
    uint8_t decrypt; /**< 1: open (RX), 0: seal (TX) */
    /** RX: the entry's fail action is pass: on an authentication failure the
     *  packet is handed on, so the engine must leave payload and tag as
     *  received (complete restores the header). With drop it may leave them
     *  altered: the caller drops the packet. */
    uint8_t fail_pass;
    uint8_t key_phase;   /**< which of the entry's two key slots (generation & 1) */
    uint32_t generation; /**< key generation of the key */
    uint8_t nonce[QUICOFF_IV_LEN];
    uint32_t aad_off, aad_len;   /**< offsets in pkts[i].data; RX: the unmasked header */
    uint32_t data_off, data_len; /**< payload */
    uint32_t tag_off;            /**< == data_off + data_len */
    /** Set by the caller before complete (prepare sets BACKEND_UNAVAILABLE:
     *  a job the engine never ran fails safely). */
    quicoff_status_t aead_status;
    /** The library's state between prepare and complete. Do not touch. */
    uint64_t opaque[16];
};

/** RX prepare. Returns how many jobs are pending (the AEADs to run). */
unsigned quicoff_unprotect_prepare(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                   struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                   unsigned n);
/** RX complete; returns how many packets are ok (as quicoff_unprotect_burst). */
unsigned quicoff_unprotect_complete(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                    struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                    unsigned n);
/** TX prepare. Returns how many jobs are pending. A packet of a pending job
 *  has been counted against its key's limit whatever the engine does. */
unsigned quicoff_protect_prepare(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                 unsigned n);
/** TX complete; returns how many packets are ok (as quicoff_protect_burst).
 *  A packet that is not ok must not be sent. */
unsigned quicoff_protect_complete(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                  struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                  unsigned n);

/** A key, as the key hooks see it. */
struct quicoff_key_info {
    uint64_t key_id; /**< as in quicoff_aead_job */
    quicoff_direction_t direction;
    quicoff_level_t level;
    quicoff_suite_t suite;
    uint32_t generation;
    uint8_t key_phase; /**< generation & 1 */
    /** DCID length of the entry's short headers (1-RTT): their AAD is
     *  1 + dcid_len + PN length bytes. */
    uint8_t dcid_len;
    /** install only (NULL at retire): the AEAD key, key_len bytes, valid
     *  during the call. Copy it only where it will be wiped. */
    const uint8_t *key;
    uint8_t key_len;
    /** retire only: what install returned. */
    void *user;
};

/** See quicoff_key_hooks.install. */
typedef quicoff_status_t (*quicoff_key_install_fn)(void *arg, const struct quicoff_key_info *key,
                                                   void **user);
/** See quicoff_key_hooks.retire. */
typedef void (*quicoff_key_retire_fn)(void *arg, const struct quicoff_key_info *key);

/** Hooks on the life of every AEAD key of a table (for engines that keep
 *  per-key state: cryptodev sessions, NIC key slots). */
struct quicoff_key_hooks {
    /** A key is being installed (quicoff_conn_add, quicoff_conn_update with
     *  QUICOFF_UPDATE_KEYS), before any worker can see it. Store what jobs
     *  of this key should carry in *user. Not QUICOFF_OK: the control call
     *  fails with this status and changes nothing (e.g. NO_MEMORY when the
     *  engine has no room, UNSUPPORTED when it lacks the suite). */
    quicoff_key_install_fn install;
    /** A key is dead: replaced, dropped or its entry removed, and no worker
     *  is any more between a prepare that used it and its complete (nor in a
     *  burst call that could). Called exactly once per installed key,
     *  including the keys still installed at quicoff_table_destroy. Free the
     *  key's state here. Never called for a key whose install failed. */
    quicoff_key_retire_fn retire;
    void *arg; /**< given to both */
};

/** Registers the hooks (NULL: none). Only before the first quicoff_conn_add
 *  (INVALID_ARGUMENT after). The hooks run on the thread of a control call
 *  (quicoff_conn_add/update/remove, quicoff_table_reclaim,
 *  quicoff_table_destroy), possibly with the table mutex held: they must not
 *  call the table, and should not block. A dead key is reported when the
 *  table reclaims memory: at a later control call, or quicoff_table_reclaim()
 *  (call it after your workers have left the bursts that could see the key,
 *  e.g. after an RCU grace period, for a prompt retire). */
quicoff_status_t quicoff_table_set_key_hooks(struct quicoff_table *t,
                                             const struct quicoff_key_hooks *hooks);

/* ------------------------------------------------------------------------ */
/* AES-128-CCM burst crossover ("ipsec-mb" backend)                          */

/** The payload length from which the "ipsec-mb" backend's AES-128-CCM bursts
 *  hand a packet (AAD <= 46 bytes) to intel-ipsec-mb's multi-buffer job API
 *  when `jobs` packets of the burst (window of 64) would go there; the others
 *  run on the backend's own code (AES-NI, VAES where the CPU has it, 8 packets
 *  in lockstep). A flush costs about the same however few jobs it holds, so
 *  the crossover falls as jobs rises (tiers 4+, 8+, 16+, 32+; under 4 jobs:
 *  16384, never), and where it lies depends on the CPU. It is chosen once per process, when the first AES-128-CCM key is
 *  set up on the backend (or by this call, if none was yet):
 *  QUICOFF_CCM_JOB_MIN_LEN from the environment (decimal bytes, every tier;
 *  over 16383 = never) if it is set to a number, else by timing both paths at
 *  several sizes and burst sizes (2-5 ms), else (timing unusable) 640.
 *  *how (may be NULL): "environment", "calibrated", "default", "set" (by
 *  quicoff_ccm_set_job_min_len), or "unavailable" (returns 0: no ipsec-mb
 *  backend in the build or on the CPU). Both paths give the same bytes; only
 *  the speed differs. */
size_t quicoff_ccm_job_min_len(unsigned jobs, const char **how);
/** Sets every tier's crossover to len for the whole process, at any time (a
 *  burst under way finishes on the values it read; over 16383 = never).
 *  QUICOFF_BACKEND_UNAVAILABLE without the ipsec-mb backend. */
quicoff_status_t quicoff_ccm_set_job_min_len(size_t len);

/* ------------------------------------------------------------------------ */
/* Packet numbers (RFC 9000 §17.1, A.2, A.3)                                 */

/** Bytes needed to encode pn when the peer has acknowledged largest_acked (UINT64_MAX = none). */
unsigned quicoff_pn_encode_len(uint64_t pn, uint64_t largest_acked);
/** Full packet number from a truncated one. largest_pn UINT64_MAX = none received.
 *  pn_nbits must be 8, 16, 24 or 32 (the 1..4 bytes a header carries), truncated
 *  must fit in it and largest_pn be at most 2^62 - 1 (or UINT64_MAX); otherwise
 *  the answer is UINT64_MAX, which is never a packet number. */
uint64_t quicoff_pn_decode(uint64_t largest_pn, uint64_t truncated, unsigned pn_nbits);

#ifdef __cplusplus
}
#endif
#endif /* QUICOFF_QUICOFF_H */
