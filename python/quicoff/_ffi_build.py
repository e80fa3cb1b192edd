# SPDX-License-Identifier: Apache-2.0
"""Writes the C source of the extension module ``quicoff._quicoff`` (cffi, API
mode, out-of-line): ``python _ffi_build.py OUT.c``.

This script compiles nothing.  python/meson.build runs it, compiles its output
and links it with the static libquicoff of the same meson project, so the
library's sources, flags and intel-ipsec-mb probe are the C build's own (pip
reaches meson through meson-python, see pyproject.toml).

The cdef below mirrors include/quicoff/quicoff.h.  Enum values, the value of
QUICOFF_CONN_INVALID and the layout of every struct come from the C compiler
(``...``), so the bindings keep working while the header grows; the integer
#defines are written out and cffi checks them against the header when the
module is imported.  tests/python/test_bindings.py checks that every function,
struct field and enum constant of the header is declared here.
"""

import sys

from cffi import FFI

CDEF = r"""
#define QUICOFF_MAX_CID_LEN 20
#define QUICOFF_TAG_LEN 16
#define QUICOFF_IV_LEN 12
#define QUICOFF_MAX_KEY_LEN 32
#define QUICOFF_MAX_SECRET_LEN 48
#define QUICOFF_SAMPLE_LEN 16
#define QUICOFF_VERSION_1 ...
#define QUICOFF_VERSION_2 ...
#define QUICOFF_CONN_INVALID ...

typedef enum quicoff_suite {
    QUICOFF_AES_128_GCM, QUICOFF_AES_256_GCM, QUICOFF_AES_128_CCM,
    QUICOFF_CHACHA20_POLY1305, QUICOFF_SUITE_COUNT, ...
} quicoff_suite_t;

typedef enum quicoff_status {
    QUICOFF_OK, QUICOFF_UNKNOWN_CONNECTION, QUICOFF_AUTH_FAILED, QUICOFF_MALFORMED,
    QUICOFF_KEY_PHASE_UNAVAILABLE, QUICOFF_USAGE_LIMIT_REACHED, QUICOFF_KEY_EXHAUSTED,
    QUICOFF_UNSUPPORTED, QUICOFF_NO_SPACE, QUICOFF_INVALID_ARGUMENT, QUICOFF_EXISTS,
    QUICOFF_TABLE_FULL, QUICOFF_NO_MEMORY, QUICOFF_BACKEND_UNAVAILABLE,
    QUICOFF_STATUS_COUNT, ...
} quicoff_status_t;

const char *quicoff_status_name(quicoff_status_t s);
const char *quicoff_suite_name(quicoff_suite_t s);
quicoff_suite_t quicoff_suite_from_name(const char *name);

typedef enum quicoff_direction {
    QUICOFF_DIR_TX, QUICOFF_DIR_RX, ...
} quicoff_direction_t;

typedef enum quicoff_level {
    QUICOFF_LEVEL_ONE_RTT, QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
    QUICOFF_LEVEL_HANDSHAKE, QUICOFF_LEVEL_COUNT, ...
} quicoff_level_t;

typedef enum quicoff_nonce_layout {
    QUICOFF_NONCE_RFC9001, QUICOFF_NONCE_MULTIPATH, QUICOFF_NONCE_MULTIPATH_PATH_ID_LE, ...
} quicoff_nonce_layout_t;

typedef enum quicoff_fail_action {
    QUICOFF_FAIL_DROP, QUICOFF_FAIL_PASS, ...
} quicoff_fail_action_t;

struct quicoff_addr {
    uint8_t family;
    uint8_t ip[16];
    uint16_t port;
    ...;
};

struct quicoff_packet_keys {
    uint8_t key[QUICOFF_MAX_KEY_LEN];
    uint8_t iv[QUICOFF_IV_LEN];
    uint8_t hp[QUICOFF_MAX_KEY_LEN];
    ...;
};

size_t quicoff_suite_secret_len(quicoff_suite_t suite);
size_t quicoff_suite_key_len(quicoff_suite_t suite);
quicoff_status_t quicoff_derive_packet_keys(quicoff_suite_t suite, const uint8_t *secret,
                                            size_t secret_len, uint32_t version,
                                            struct quicoff_packet_keys *out);
quicoff_status_t quicoff_derive_next_secret(quicoff_suite_t suite, const uint8_t *secret,
                                            size_t secret_len, uint32_t version,
                                            uint8_t *next_secret);
quicoff_status_t quicoff_derive_initial_secrets(const uint8_t *dcid, size_t dcid_len,
                                                uint32_t version, uint8_t client_secret[32],
                                                uint8_t server_secret[32]);

struct quicoff_table;
struct quicoff_worker;
typedef uint64_t quicoff_conn_t;

struct quicoff_table_config {
    uint32_t capacity;
    uint8_t local_cid_len;
    uint16_t max_workers;
    const char *backend;
    ...;
};

struct quicoff_table *quicoff_table_create(const struct quicoff_table_config *cfg,
                                           quicoff_status_t *err);
void quicoff_table_destroy(struct quicoff_table *t);
const char *quicoff_table_backend(const struct quicoff_table *t);

struct quicoff_conn_config {
    quicoff_direction_t direction;
    quicoff_level_t level;
    quicoff_suite_t suite;
    uint32_t version;
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    uint8_t dcid_len;
    struct quicoff_addr local_addr;
    uint32_t path_id;
    quicoff_nonce_layout_t nonce_layout;
    quicoff_fail_action_t fail_action;
    uint64_t largest_pn;
    uint64_t usage_threshold;
    uint32_t key_generation;
    struct quicoff_packet_keys keys;
    const uint8_t *secret;
    size_t secret_len;
    bool has_next_keys;
    struct quicoff_packet_keys next_keys;
    bool grease_quic_bit;
    void *user;
    ...;
};

void quicoff_conn_config_init(struct quicoff_conn_config *cfg);
quicoff_status_t quicoff_conn_add(struct quicoff_table *t, const struct quicoff_conn_config *cfg,
                                  quicoff_conn_t *out);

enum quicoff_update_what {
    QUICOFF_UPDATE_KEYS, QUICOFF_UPDATE_ROLL, QUICOFF_UPDATE_DROP_OLD,
    QUICOFF_UPDATE_LARGEST_PN, QUICOFF_UPDATE_FAIL_ACTION, QUICOFF_UPDATE_THRESHOLD,
    QUICOFF_UPDATE_USER, ...
};

struct quicoff_conn_update {
    uint32_t what;
    uint32_t key_generation;
    struct quicoff_packet_keys keys;
    const uint8_t *secret;
    size_t secret_len;
    uint64_t largest_pn;
    quicoff_fail_action_t fail_action;
    uint64_t usage_threshold;
    void *user;
    ...;
};

quicoff_status_t quicoff_conn_update(struct quicoff_table *t, quicoff_conn_t conn,
                                     const struct quicoff_conn_update *u);
quicoff_status_t quicoff_conn_replace(struct quicoff_table *t, quicoff_conn_t conn,
                                      const struct quicoff_conn_config *cfg);
quicoff_status_t quicoff_conn_remove(struct quicoff_table *t, quicoff_conn_t conn);
quicoff_conn_t quicoff_conn_find(struct quicoff_table *t, quicoff_level_t level,
                                 const uint8_t *dcid, size_t dcid_len,
                                 const struct quicoff_addr *local_addr);
void *quicoff_conn_user(struct quicoff_table *t, quicoff_conn_t conn);
size_t quicoff_table_reclaim(struct quicoff_table *t);

struct quicoff_conn_stats {
    uint64_t packets;
    uint64_t bytes;
    uint64_t auth_failures;
    uint64_t malformed;
    uint64_t key_phase_unavailable;
    uint64_t key_updates;
    uint64_t key_generation;
    uint64_t largest_pn;
    uint64_t key_packets;
    ...;
};

struct quicoff_table_stats {
    uint64_t rx_packets, rx_bytes;
    uint64_t tx_packets, tx_bytes;
    uint64_t auth_failures;
    uint64_t unknown_connection;
    uint64_t malformed;
    uint64_t key_phase_unavailable;
    uint64_t usage_limit_reached;
    uint64_t key_exhausted;
    uint64_t unsupported;
    uint64_t key_updates;
    uint64_t connections;
    uint64_t retired_pending;
    ...;
};

quicoff_status_t quicoff_conn_stats(struct quicoff_table *t, quicoff_conn_t conn,
                                    struct quicoff_conn_stats *out);
quicoff_status_t quicoff_conn_key_packets(struct quicoff_worker *w, quicoff_conn_t conn,
                                          uint64_t *out);
void quicoff_table_stats(struct quicoff_table *t, struct quicoff_table_stats *out);

struct quicoff_worker *quicoff_worker_create(struct quicoff_table *t);
void quicoff_worker_destroy(struct quicoff_worker *w);

struct quicoff_pkt {
    uint8_t *data;
    uint32_t end;
    uint32_t cap;
    uint32_t offset;
    quicoff_conn_t conn;
    uint64_t pn;
    const struct quicoff_addr *local_addr;
    ...;
};

enum quicoff_result_flag {
    QUICOFF_FLAG_KEY_UPDATED, QUICOFF_FLAG_PASS_FAILED, QUICOFF_FLAG_LONG_HEADER,
    QUICOFF_FLAG_OLD_KEYS, ...
};

struct quicoff_result {
    quicoff_status_t status;
    uint8_t flags;
    uint8_t level;
    uint8_t key_phase;
    uint8_t pn_len;
    uint32_t hdr_off;
    uint32_t pn_off;
    uint32_t payload_off;
    uint32_t payload_len;
    uint32_t packet_end;
    uint32_t dcid_off;
    uint64_t pn;
    quicoff_conn_t conn;
    void *user;
    uint8_t dcid_len;
    ...;
};

unsigned quicoff_unprotect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, unsigned n);
unsigned quicoff_protect_burst(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                               struct quicoff_result *res, unsigned n);
unsigned quicoff_unprotect_datagram(struct quicoff_worker *w, uint8_t *data, uint32_t len,
                                    const struct quicoff_addr *local_addr,
                                    struct quicoff_result *res, unsigned max_results);

struct quicoff_datagram {
    uint8_t *data;
    uint32_t len;
    const struct quicoff_addr *local_addr;
    struct quicoff_result *res;
    uint16_t max_results;
    uint16_t n_results;
    uint16_t n_ok;
    ...;
};
enum quicoff_datagram_flag { QUICOFF_DATAGRAM_STOP_AT_FAILURE, ... };
unsigned quicoff_unprotect_datagrams(struct quicoff_worker *w, struct quicoff_datagram *dgs,
                                     unsigned n, unsigned flags);
typedef void (*quicoff_round_fn)(void *arg, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, const unsigned *dgram, unsigned n);
unsigned quicoff_walk_datagrams(struct quicoff_datagram *dgs, unsigned n, unsigned flags,
                                quicoff_round_fn fn, void *arg);

struct quicoff_header_info {
    uint8_t long_header;
    uint8_t fixed_bit;
    uint8_t long_type;
    uint8_t level;
    uint8_t dcid_len;
    uint32_t version;
    uint32_t dcid_off;
    uint32_t pn_off;
    uint32_t packet_end;
    ...;
};
quicoff_status_t quicoff_peek_header(const uint8_t *data, uint32_t len, uint32_t offset,
                                     uint8_t short_dcid_len, struct quicoff_header_info *out);

struct quicoff_aead_job {
    uint64_t key_id;
    void *key_user;
    const uint8_t *key;
    uint8_t key_len;
    uint8_t suite;
    uint8_t pending;
    uint8_t decrypt;
    uint8_t fail_pass;
    uint8_t key_phase;
    uint32_t generation;
    uint8_t nonce[12];
    uint32_t aad_off, aad_len;
    uint32_t data_off, data_len;
    uint32_t tag_off;
    quicoff_status_t aead_status;
    uint64_t opaque[16];
    ...;
};

unsigned quicoff_unprotect_prepare(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                   struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                   unsigned n);
unsigned quicoff_unprotect_complete(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                    struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                    unsigned n);
unsigned quicoff_protect_prepare(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                 struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                 unsigned n);
unsigned quicoff_protect_complete(struct quicoff_worker *w, struct quicoff_pkt *pkts,
                                  struct quicoff_result *res, struct quicoff_aead_job *jobs,
                                  unsigned n);

struct quicoff_key_info {
    uint64_t key_id;
    quicoff_direction_t direction;
    quicoff_level_t level;
    quicoff_suite_t suite;
    uint32_t generation;
    uint8_t key_phase;
    uint8_t dcid_len;
    const uint8_t *key;
    uint8_t key_len;
    void *user;
    ...;
};

typedef quicoff_status_t (*quicoff_key_install_fn)(void *arg, const struct quicoff_key_info *key,
                                                   void **user);
typedef void (*quicoff_key_retire_fn)(void *arg, const struct quicoff_key_info *key);

struct quicoff_key_hooks {
    quicoff_key_install_fn install;
    quicoff_key_retire_fn retire;
    void *arg;
    ...;
};

quicoff_status_t quicoff_table_set_key_hooks(struct quicoff_table *t,
                                             const struct quicoff_key_hooks *hooks);

unsigned quicoff_pn_encode_len(uint64_t pn, uint64_t largest_acked);
uint64_t quicoff_pn_decode(uint64_t largest_pn, uint64_t truncated, unsigned pn_nbits);

size_t quicoff_ccm_job_min_len(unsigned jobs, const char **how);
quicoff_status_t quicoff_ccm_set_job_min_len(size_t len);

/* ---- include/quicoff/wire.h: the host <-> offload protocol (docs/protocol.md) ---- */
#define QUICOFF_WIRE_ETHERTYPE_SIGNAL ...
#define QUICOFF_WIRE_ETHERTYPE_DATA ...
#define QUICOFF_WIRE_ETHERTYPE_VLAN ...
#define QUICOFF_WIRE_ETHERTYPE_QINQ ...
#define QUICOFF_WIRE_MAGIC ...
#define QUICOFF_WIRE_VERSION ...
#define QUICOFF_WIRE_ETH_LEN ...
#define QUICOFF_WIRE_SIGNAL_HDR_LEN ...
#define QUICOFF_WIRE_DATA_HDR_LEN ...
#define QUICOFF_WIRE_TRAIN_HDR_LEN ...
#define QUICOFF_WIRE_TLV_HDR_LEN ...
#define QUICOFF_WIRE_COMPAT_PEER_LEN ...
#define QUICOFF_WIRE_COMPAT_HOST_LEN ...
#define QUICOFF_WIRE_COMPAT_DATA_HDR_LEN ...
#define QUICOFF_WIRE_COMPAT_KEY_FIELD ...
#define QUICOFF_WIRE_COMPAT_DCID_LEN ...
#define QUICOFF_WIRE_SIGNAL_MAX ...
#define QUICOFF_WIRE_DETAIL_MAX ...
#define QUICOFF_WIRE_INDEX_NONE ...
#define QUICOFF_WIRE_DIRECTION_NONE ...
#define QUICOFF_WIRE_PN_MAX ...

typedef enum quicoff_wire_kind {
    QUICOFF_WIRE_NONE, QUICOFF_WIRE_ADD, QUICOFF_WIRE_UPDATE, QUICOFF_WIRE_REMOVE,
    QUICOFF_WIRE_QUERY, QUICOFF_WIRE_DATA_TO_OFFLOAD, QUICOFF_WIRE_DATA_TRAIN, QUICOFF_WIRE_ACK, QUICOFF_WIRE_STATS,
    QUICOFF_WIRE_EVENT, QUICOFF_WIRE_DATA_TO_HOST, QUICOFF_WIRE_COMPAT_PEER,
    QUICOFF_WIRE_COMPAT_HOST, QUICOFF_WIRE_COMPAT_DATA, ...
} quicoff_wire_kind_t;

enum quicoff_wire_flag {
    QUICOFF_WIRE_ADD_REPLACE, QUICOFF_WIRE_UPDATE_ROLL, QUICOFF_WIRE_UPDATE_DROP_OLD,
    QUICOFF_WIRE_QUERY_CONN, QUICOFF_WIRE_QUERY_TABLE, ...
};

typedef enum quicoff_wire_event_code {
    QUICOFF_WIRE_EV_AUTH_FAILED, QUICOFF_WIRE_EV_USAGE_LIMIT, QUICOFF_WIRE_EV_KEY_UPDATE,
    QUICOFF_WIRE_EV_UNKNOWN_CONNECTION, QUICOFF_WIRE_EV_KEY_EXHAUSTED,
    QUICOFF_WIRE_EV_KEY_PHASE_UNAVAILABLE, QUICOFF_WIRE_EV_TOO_BIG, QUICOFF_WIRE_EV_COUNT, ...
} quicoff_wire_event_code_t;

enum quicoff_wire_tlv {
    QUICOFF_WIRE_T_SUITE, QUICOFF_WIRE_T_LEVEL, QUICOFF_WIRE_T_QUIC_VERSION, QUICOFF_WIRE_T_DCID,
    QUICOFF_WIRE_T_LOCAL_ADDR, QUICOFF_WIRE_T_PATH_ID, QUICOFF_WIRE_T_NONCE_LAYOUT,
    QUICOFF_WIRE_T_FAIL_ACTION, QUICOFF_WIRE_T_LARGEST_PN, QUICOFF_WIRE_T_USAGE_THRESHOLD,
    QUICOFF_WIRE_T_KEY_GENERATION, QUICOFF_WIRE_T_PACKET_KEY, QUICOFF_WIRE_T_IV,
    QUICOFF_WIRE_T_HP_KEY, QUICOFF_WIRE_T_NEXT_PACKET_KEY, QUICOFF_WIRE_T_NEXT_IV,
    QUICOFF_WIRE_T_SECRET, QUICOFF_WIRE_T_ENCAP, QUICOFF_WIRE_T_ROLL_GENERATION,
    QUICOFF_WIRE_T_GREASE_QUIC_BIT,
    QUICOFF_WIRE_T_CONN_STATS, QUICOFF_WIRE_T_TABLE_STATS, QUICOFF_WIRE_T_COUNT,
    QUICOFF_WIRE_T_PN, QUICOFF_WIRE_T_REMOTE_ADDR, QUICOFF_WIRE_T_DETAIL, QUICOFF_WIRE_T_MTU,
    QUICOFF_WIRE_T_CRITICAL, ...
};

struct quicoff_wire_eth {
    uint8_t dst[6];
    uint8_t src[6];
    bool has_vlan;
    uint16_t vlan_tci;
    uint16_t ethertype;
    ...;
};

struct quicoff_wire_encap {
    uint8_t dst_mac[6];
    uint8_t src_mac[6];
    bool has_vlan;
    uint16_t vlan_tci;
    uint8_t family;
    uint8_t ttl;
    uint8_t tos;
    uint16_t src_port;
    uint16_t dst_port;
    uint8_t src_ip[16];
    uint8_t dst_ip[16];
    ...;
};

struct quicoff_wire_conn {
    struct quicoff_conn_config cfg;
    uint8_t secret[48];
    bool has_encap;
    struct quicoff_wire_encap encap;
    bool compat_right_padded;
    bool compat_dcid_len_bits;
    ...;
};

struct quicoff_wire_update {
    struct quicoff_conn_update upd;
    uint8_t secret[48];
    uint8_t key_len;
    uint32_t roll_generation;
    bool has_encap;
    struct quicoff_wire_encap encap;
    ...;
};

struct quicoff_wire_stats {
    bool has_conn;
    bool has_table;
    struct quicoff_conn_stats conn;
    struct quicoff_table_stats table;
    ...;
};

struct quicoff_wire_event {
    uint8_t code;
    bool has_count, has_pn, has_key_generation, has_level;
    uint64_t count;
    uint64_t pn;
    uint32_t key_generation;
    uint8_t level;
    uint8_t dcid[20];
    uint8_t dcid_len;
    bool has_dcid;
    struct quicoff_addr local_addr;
    struct quicoff_addr remote_addr;
    bool has_mtu;
    uint32_t mtu;
    ...;
};

struct quicoff_wire_data {
    uint32_t index;
    uint64_t pn;
    uint8_t flags;
    uint8_t status;
    uint8_t level;
    uint8_t key_phase;
    uint16_t segment_size;
    uint16_t count;
    const uint8_t *payload;
    uint32_t payload_len;
    ...;
};

union quicoff_wire_body {
    struct quicoff_wire_conn add;
    struct quicoff_wire_update update;
    struct quicoff_wire_stats stats;
    struct quicoff_wire_event event;
    struct quicoff_wire_data data;
};

struct quicoff_wire_msg {
    uint16_t kind;
    uint8_t version;
    bool has_eth;
    struct quicoff_wire_eth eth;
    bool hdr_valid;
    uint8_t flags;
    uint8_t acked_kind;
    uint32_t request_id;
    uint32_t index;
    uint8_t direction;
    uint8_t status;
    const uint8_t *detail;
    uint16_t detail_len;
    union quicoff_wire_body u;
    ...;
};

void quicoff_wire_msg_init(struct quicoff_wire_msg *m, quicoff_wire_kind_t kind);
void quicoff_wire_msg_clear(struct quicoff_wire_msg *m);
quicoff_status_t quicoff_wire_decode(const uint8_t *frame, size_t len,
                                     struct quicoff_wire_msg *m);
quicoff_status_t quicoff_wire_decode_payload(uint16_t ethertype, const uint8_t *p, size_t len,
                                             struct quicoff_wire_msg *m);
quicoff_status_t quicoff_wire_encode(const struct quicoff_wire_msg *m, uint8_t *buf, size_t cap,
                                     size_t *out_len);
quicoff_status_t quicoff_wire_encode_payload(const struct quicoff_wire_msg *m, uint8_t *buf,
                                             size_t cap, size_t *out_len, uint16_t *ethertype);
quicoff_status_t quicoff_wire_data_hdr_read(uint16_t ethertype, const uint8_t *p, size_t len,
                                            quicoff_wire_kind_t *kind,
                                            struct quicoff_wire_data *d);
size_t quicoff_wire_data_hdr_write(uint8_t *buf, size_t cap, quicoff_wire_kind_t kind,
                                   const struct quicoff_wire_data *d);
size_t quicoff_wire_compat_data_hdr_write(uint8_t *buf, size_t cap, uint32_t index, uint64_t pn);
const uint8_t *quicoff_wire_train_packet(const struct quicoff_wire_data *d, unsigned i,
                                         uint32_t *len);
void quicoff_wire_ack_for(const struct quicoff_wire_msg *req, quicoff_status_t st,
                          struct quicoff_wire_msg *ack);
void quicoff_wire_stats_for(const struct quicoff_wire_msg *req, quicoff_status_t st,
                            struct quicoff_wire_msg *reply);
const struct quicoff_conn_config *quicoff_wire_conn_config(struct quicoff_wire_msg *m);
const struct quicoff_conn_update *quicoff_wire_conn_update(struct quicoff_wire_msg *m);
const char *quicoff_wire_kind_name(unsigned kind);
const char *quicoff_wire_event_name(unsigned code);
"""


# the extension's own C: the public headers; the library is linked, not compiled here
SOURCE = '#include "quicoff/quicoff.h"\n#include "quicoff/wire.h"\n'


def make_builder() -> FFI:
    builder = FFI()
    builder.cdef(CDEF)
    builder.set_source("quicoff._quicoff", SOURCE)
    return builder


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: %s OUT.c  (writes the C source of quicoff._quicoff)" % sys.argv[0])
    make_builder().emit_c_code(sys.argv[1])
