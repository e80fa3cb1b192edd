/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host <-> offload protocol (include/quicoff/wire.h, docs/protocol.md):
 *  - round trip of every message kind (v1 and compat), at frame level (with
 *    and without a VLAN tag) and payload level, and canonical re-encoding;
 *  - the documented example bytes of docs/protocol.md §8 and a compat frame
 *    laid out by hand as the compat format's Scapy classes write it;
 *  - every truncation of every encoded message -> an error, with no secret
 *    left in the output; every too-small encode buffer -> NO_SPACE;
 *  - each documented rejection (unknown version/type/critical TLV, duplicate
 *    or misplaced TLV, wrong sizes, out-of-range values, compat padding and
 *    DCID_len rules) and the tolerated ones (Ethernet padding, unknown
 *    non-critical TLVs, right-padded compat keys, DCID_len in bits);
 *  - fuzz-ish: random bytes behind every valid prefix, and single-bit flips
 *    and random byte overwrites of every valid message; anything that decodes
 *    must re-encode and decode to the same message;
 *  - decoded ADD/UPDATE drive quicoff_conn_add/update on a real table.
 * Run under ASan (build-asan) for the memory-safety half of the claim.
 */
#include "quicoff/wire.h"
#include "test_util.h"

#include <inttypes.h>

#define S(st) quicoff_status_name(st)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed + 7 * i + 1);
}

static const uint8_t MAC_A[6] = {0x02, 0, 0, 0, 0, 0xa1};
static const uint8_t MAC_B[6] = {0x02, 0, 0, 0, 0, 0xb2};
static const char DETAIL[] = "entry 7 already present";
static uint8_t PAYLOAD[300];

/* Pointers differ between decodes of different buffers: compare without them. */
static void normalize(struct quicoff_wire_msg *m)
{
    m->detail = NULL;
    if (m->kind == QUICOFF_WIRE_DATA_TO_OFFLOAD || m->kind == QUICOFF_WIRE_DATA_TO_HOST ||
        m->kind == QUICOFF_WIRE_COMPAT_DATA)
        m->u.data.payload = NULL;
    if (m->kind == QUICOFF_WIRE_ADD || m->kind == QUICOFF_WIRE_COMPAT_PEER ||
        m->kind == QUICOFF_WIRE_COMPAT_HOST) {
        m->u.add.cfg.secret = NULL;
        /* informational: how the compat frame spelled it, not re-encoded */
        m->u.add.compat_right_padded = false;
        m->u.add.compat_dcid_len_bits = false;
    }
    if (m->kind == QUICOFF_WIRE_UPDATE)
        m->u.update.upd.secret = NULL;
}

static bool msg_eq(const struct quicoff_wire_msg *a0, const struct quicoff_wire_msg *b0)
{
    struct quicoff_wire_msg a = *a0, b = *b0;
    normalize(&a);
    normalize(&b);
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static bool all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return false;
    return true;
}

/* ------------------------------------------------------------------------ */
/* A sample of every kind                                                    */

enum { N_SAMPLES = 20 };

static void sample(int i, struct quicoff_wire_msg *m)
{
    struct quicoff_conn_config *c;
    switch (i) {
    case 0: /* ADD, TX, raw keys, IPv4 encap with VLAN, REPLACE */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_ADD);
        m->flags = QUICOFF_WIRE_ADD_REPLACE;
        m->request_id = 0x01020304;
        m->index = 7;
        m->direction = QUICOFF_DIR_TX;
        c = &m->u.add.cfg;
        c->direction = QUICOFF_DIR_TX;
        c->suite = QUICOFF_AES_128_GCM;
        c->dcid_len = 8;
        fill(c->dcid, 8, 0x10);
        c->path_id = 3;
        c->nonce_layout = QUICOFF_NONCE_MULTIPATH;
        c->usage_threshold = 1000;
        fill(c->keys.key, 16, 0x20);
        fill(c->keys.iv, 12, 0x30);
        fill(c->keys.hp, 16, 0x40);
        m->u.add.has_encap = true;
        memcpy(m->u.add.encap.dst_mac, MAC_B, 6);
        memcpy(m->u.add.encap.src_mac, MAC_A, 6);
        m->u.add.encap.has_vlan = true;
        m->u.add.encap.vlan_tci = 0x2064;
        m->u.add.encap.family = 4;
        m->u.add.encap.ttl = 61;
        m->u.add.encap.tos = 0x10;
        m->u.add.encap.src_port = 50000;
        m->u.add.encap.dst_port = 443;
        memcpy(m->u.add.encap.src_ip, "\x0a\x00\x00\x01", 4);
        memcpy(m->u.add.encap.dst_ip, "\x0a\x00\x00\x02", 4);
        break;
    case 1: /* ADD, RX, ChaCha20, current + next keys, empty DCID + IPv6 local address */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_ADD);
        m->request_id = 0xfffffffe;
        m->index = 0x00abcdef;
        m->direction = QUICOFF_DIR_RX;
        c = &m->u.add.cfg;
        c->direction = QUICOFF_DIR_RX;
        c->suite = QUICOFF_CHACHA20_POLY1305;
        c->level = QUICOFF_LEVEL_ONE_RTT;
        c->version = QUICOFF_VERSION_2;
        c->dcid_len = 0;
        c->local_addr.family = 6;
        fill(c->local_addr.ip, 16, 0x50);
        c->local_addr.port = 4433;
        c->fail_action = QUICOFF_FAIL_PASS;
        c->largest_pn = 123456789;
        c->key_generation = 4;
        fill(c->keys.key, 32, 0x60);
        fill(c->keys.iv, 12, 0x70);
        fill(c->keys.hp, 32, 0x80);
        c->has_next_keys = true;
        fill(c->next_keys.key, 32, 0x90);
        fill(c->next_keys.iv, 12, 0xa0);
        break;
    case 2: /* ADD, RX, AES-256-GCM from a secret, 20-byte DCID, IPv6 encap */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_ADD);
        m->request_id = 9;
        m->index = 0;
        m->direction = QUICOFF_DIR_RX;
        c = &m->u.add.cfg;
        c->direction = QUICOFF_DIR_RX;
        c->suite = QUICOFF_AES_256_GCM;
        c->level = QUICOFF_LEVEL_HANDSHAKE;
        c->dcid_len = 20;
        fill(c->dcid, 20, 0xb0);
        c->secret_len = 48;
        fill(m->u.add.secret, 48, 0xc0);
        m->u.add.has_encap = true;
        m->u.add.encap.family = 6;
        fill(m->u.add.encap.src_ip, 16, 1);
        fill(m->u.add.encap.dst_ip, 16, 2);
        m->u.add.encap.src_port = 1;
        m->u.add.encap.dst_port = 2;
        break;
    case 3: /* UPDATE: next keys ahead of time */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_UPDATE);
        m->request_id = 10;
        m->index = 7;
        m->u.update.upd.what = QUICOFF_UPDATE_KEYS;
        m->u.update.upd.key_generation = 1;
        m->u.update.key_len = 16;
        fill(m->u.update.upd.keys.key, 16, 0xd0);
        fill(m->u.update.upd.keys.iv, 12, 0xe0);
        break;
    case 4: /* UPDATE: roll + drop old + PN + fail action + threshold + encap */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_UPDATE);
        m->request_id = 11;
        m->index = 8;
        m->direction = QUICOFF_DIR_RX;
        m->u.update.upd.what = QUICOFF_UPDATE_ROLL | QUICOFF_UPDATE_DROP_OLD |
                               QUICOFF_UPDATE_LARGEST_PN | QUICOFF_UPDATE_FAIL_ACTION |
                               QUICOFF_UPDATE_THRESHOLD;
        m->flags = QUICOFF_WIRE_UPDATE_ROLL | QUICOFF_WIRE_UPDATE_DROP_OLD;
        m->u.update.roll_generation = 2;
        m->u.update.upd.largest_pn = UINT64_MAX;
        m->u.update.upd.fail_action = QUICOFF_FAIL_PASS;
        m->u.update.upd.usage_threshold = 77;
        m->u.update.has_encap = true;
        m->u.update.encap.family = 4;
        memcpy(m->u.update.encap.dst_mac, MAC_A, 6);
        break;
    case 5: /* UPDATE: keys from a secret */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_UPDATE);
        m->request_id = 12;
        m->index = 9;
        m->u.update.upd.what = QUICOFF_UPDATE_KEYS;
        m->u.update.upd.key_generation = 5;
        m->u.update.upd.secret_len = 32;
        fill(m->u.update.secret, 32, 0xf0);
        break;
    case 6:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_REMOVE);
        m->request_id = 0x01020304;
        m->index = 7;
        break;
    case 7:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_QUERY);
        m->request_id = 13;
        m->index = 7;
        m->direction = QUICOFF_DIR_RX;
        m->flags = QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE;
        break;
    case 8:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_ACK);
        m->request_id = 0x01020304;
        m->index = 7;
        m->acked_kind = QUICOFF_WIRE_REMOVE;
        break;
    case 9:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_ACK);
        m->request_id = 14;
        m->index = 7;
        m->direction = QUICOFF_DIR_RX;
        m->acked_kind = QUICOFF_WIRE_ADD;
        m->status = QUICOFF_EXISTS;
        m->detail = (const uint8_t *)DETAIL;
        m->detail_len = (uint16_t)strlen(DETAIL);
        break;
    case 10: { /* STATS with both blocks */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_STATS);
        m->request_id = 13;
        m->index = 7;
        m->direction = QUICOFF_DIR_RX;
        m->flags = QUICOFF_WIRE_QUERY_CONN | QUICOFF_WIRE_QUERY_TABLE;
        m->u.stats.has_conn = m->u.stats.has_table = true;
        uint64_t *w = (uint64_t *)&m->u.stats.conn;
        for (size_t k = 0; k < sizeof(m->u.stats.conn) / 8; k++)
            w[k] = 0x1000000000000000ull + k;
        w = (uint64_t *)&m->u.stats.table;
        for (size_t k = 0; k < sizeof(m->u.stats.table) / 8; k++)
            w[k] = 0x2000000000000000ull + k * 3;
        break;
    }
    case 11: /* STATS: unknown connection, table only */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_STATS);
        m->request_id = 15;
        m->index = QUICOFF_WIRE_INDEX_NONE;
        m->flags = QUICOFF_WIRE_QUERY_TABLE;
        m->status = QUICOFF_UNKNOWN_CONNECTION;
        m->u.stats.has_table = true;
        m->u.stats.table.rx_packets = 5;
        break;
    case 12: /* EVENT auth failed */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_EVENT);
        m->request_id = 1;
        m->index = 7;
        m->direction = QUICOFF_DIR_RX;
        m->status = QUICOFF_AUTH_FAILED;
        m->u.event.code = QUICOFF_WIRE_EV_AUTH_FAILED;
        m->u.event.has_count = true;
        m->u.event.count = 17;
        m->u.event.has_pn = true;
        m->u.event.pn = QUICOFF_WIRE_PN_MAX;
        break;
    case 13: /* EVENT unknown connection, everything */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_EVENT);
        m->request_id = 2;
        m->direction = QUICOFF_DIR_RX;
        m->status = QUICOFF_UNKNOWN_CONNECTION;
        m->u.event.code = QUICOFF_WIRE_EV_UNKNOWN_CONNECTION;
        m->u.event.has_level = true;
        m->u.event.level = QUICOFF_LEVEL_INITIAL;
        m->u.event.has_dcid = true;
        m->u.event.dcid_len = 8;
        fill(m->u.event.dcid, 8, 3);
        m->u.event.local_addr.family = 4;
        memcpy(m->u.event.local_addr.ip, "\xc0\x00\x02\x01", 4);
        m->u.event.local_addr.port = 443;
        m->u.event.remote_addr.family = 6;
        fill(m->u.event.remote_addr.ip, 16, 9);
        m->u.event.remote_addr.port = 1234;
        m->u.event.has_key_generation = true;
        m->u.event.key_generation = 3;
        m->u.event.has_count = true;
        m->u.event.count = 99;
        m->detail = (const uint8_t *)"x";
        m->detail_len = 1;
        break;
    case 14:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_DATA_TO_OFFLOAD);
        m->u.data.index = m->index = 7;
        m->u.data.pn = 42;
        m->u.data.payload = PAYLOAD;
        m->u.data.payload_len = 40;
        break;
    case 15:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_DATA_TO_HOST);
        m->u.data.index = m->index = 0x01000002;
        m->u.data.pn = QUICOFF_WIRE_PN_MAX;
        m->u.data.flags = m->flags = QUICOFF_FLAG_KEY_UPDATED | QUICOFF_FLAG_OLD_KEYS;
        m->u.data.status = m->status = QUICOFF_USAGE_LIMIT_REACHED;
        m->u.data.level = QUICOFF_LEVEL_HANDSHAKE;
        m->u.data.key_phase = 1;
        m->u.data.payload = PAYLOAD;
        m->u.data.payload_len = 300;
        break;
    case 16: /* compat signaling_peer */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_COMPAT_PEER);
        m->index = 0x0102;
        c = &m->u.add.cfg;
        c->suite = QUICOFF_AES_128_CCM;
        fill(c->keys.hp, 16, 0x11);
        fill(c->keys.key, 16, 0x22);
        fill(c->keys.iv, 12, 0x33);
        c->path_id = 0x01020304;
        fill(c->dcid, 8, 0x44);
        c->largest_pn = 1000;
        break;
    case 17: /* compat signaling_host */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_COMPAT_HOST);
        m->index = 0xffff;
        c = &m->u.add.cfg;
        c->suite = QUICOFF_AES_256_GCM;
        fill(c->keys.hp, 32, 0x55);
        fill(c->keys.key, 32, 0x66);
        fill(c->keys.iv, 12, 0x77);
        c->path_id = 1;
        c->dcid_len = 20;
        break;
    case 18:
        quicoff_wire_msg_init(m, QUICOFF_WIRE_COMPAT_DATA);
        m->u.data.index = m->index = 7;
        m->u.data.pn = 42;
        m->u.data.payload = PAYLOAD;
        m->u.data.payload_len = 128;
        break;
    case 19: /* DATA_TO_OFFLOAD, empty QUIC packet (structurally fine) */
        quicoff_wire_msg_init(m, QUICOFF_WIRE_DATA_TO_OFFLOAD);
        m->u.data.index = m->index = 0;
        m->u.data.pn = 0;
        break;
    }
    if (i % 3 == 0) {
        m->eth.has_vlan = true;
        m->eth.vlan_tci = (uint16_t)(0x0100 + i);
    }
    memcpy(m->eth.dst, MAC_B, 6);
    memcpy(m->eth.src, MAC_A, 6);
}

/* What decode gives back for sample i beyond the sample itself. */
static void expected(const struct quicoff_wire_msg *in, struct quicoff_wire_msg *ex)
{
    *ex = *in;
    ex->has_eth = true;
    ex->hdr_valid = in->kind < 0x100;
    ex->eth.ethertype = in->kind == QUICOFF_WIRE_COMPAT_DATA ? QUICOFF_WIRE_ETHERTYPE_DATA
                                                             : QUICOFF_WIRE_ETHERTYPE_SIGNAL;
    if (in->kind == QUICOFF_WIRE_ADD || in->kind == QUICOFF_WIRE_COMPAT_PEER ||
        in->kind == QUICOFF_WIRE_COMPAT_HOST) {
        ex->u.add.cfg.direction = (quicoff_direction_t)in->direction;
        ex->u.add.cfg.secret = NULL;
    }
}

static size_t enc(const struct quicoff_wire_msg *m, uint8_t *buf, size_t cap)
{
    size_t n = 0;
    quicoff_status_t st = quicoff_wire_encode(m, buf, cap, &n);
    if (st != QUICOFF_OK) {
        printf("# encode of %s: %s\n", quicoff_wire_kind_name(m->kind), S(st));
        return 0;
    }
    return n;
}

/* ------------------------------------------------------------------------ */

static void test_roundtrip(void)
{
    for (int i = 0; i < N_SAMPLES; i++) {
        struct quicoff_wire_msg m, d, ex, d2;
        uint8_t buf[2048], buf2[2048];
        sample(i, &m);
        const char *name = quicoff_wire_kind_name(m.kind);
        size_t n = enc(&m, buf, sizeof(buf));
        ok(n > 0 && n <= QUICOFF_WIRE_SIGNAL_MAX + 300, "%d %s: encodes (%zu bytes)", i, name, n);
        quicoff_status_t st = quicoff_wire_decode(buf, n, &d);
        ok(st == QUICOFF_OK, "%d %s: decodes: %s", i, name, S(st));
        expected(&m, &ex);
        ok(msg_eq(&d, &ex), "%d %s: decoded == encoded", i, name);
        if (m.detail_len)
            ok(d.detail_len == m.detail_len && memcmp(d.detail, m.detail, m.detail_len) == 0,
               "%d %s: detail text", i, name);
        if (m.kind == QUICOFF_WIRE_DATA_TO_OFFLOAD || m.kind == QUICOFF_WIRE_DATA_TO_HOST ||
            m.kind == QUICOFF_WIRE_COMPAT_DATA)
            ok(d.u.data.payload_len == m.u.data.payload_len &&
                   (m.u.data.payload_len == 0 ||
                    memcmp(d.u.data.payload, m.u.data.payload, m.u.data.payload_len) == 0) &&
                   d.u.data.payload >= buf && d.u.data.payload + d.u.data.payload_len == buf + n,
               "%d %s: payload points at the frame's QUIC packet", i, name);
        /* canonical: re-encoding the decoded message gives the same bytes */
        size_t n2 = enc(&d, buf2, sizeof(buf2));
        ok(n2 == n && memcmp(buf, buf2, n) == 0, "%d %s: re-encodes byte for byte", i, name);
        /* payload level */
        size_t pn = 0;
        uint16_t et = 0;
        st = quicoff_wire_encode_payload(&m, buf2, sizeof(buf2), &pn, &et);
        size_t hl = m.eth.has_vlan ? 18 : 14;
        ok(st == QUICOFF_OK && pn + hl == n && memcmp(buf2, buf + hl, pn) == 0 &&
               et == ex.eth.ethertype,
           "%d %s: payload encode = frame minus Ethernet", i, name);
        st = quicoff_wire_decode_payload(et, buf2, pn, &d2);
        ex.has_eth = false;
        memset(&ex.eth, 0, sizeof(ex.eth));
        ok(st == QUICOFF_OK && msg_eq(&d2, &ex), "%d %s: payload decode", i, name);
        /* every too-small buffer: NO_SPACE */
        unsigned bad = 0;
        for (size_t cap = 0; cap < n; cap++) {
            size_t o = 1;
            st = quicoff_wire_encode(&m, buf2, cap, &o);
            if (st != QUICOFF_NO_SPACE || o != 0)
                bad++;
        }
        ok(bad == 0, "%d %s: every cap < %zu -> no_space (%u bad)", i, name, n, bad);
        quicoff_wire_msg_clear(&d);
        quicoff_wire_msg_clear(&d2);
        quicoff_wire_msg_clear(&m);
    }
}

static void test_truncations(void)
{
    for (int i = 0; i < N_SAMPLES; i++) {
        struct quicoff_wire_msg m, d;
        uint8_t buf[2048];
        sample(i, &m);
        const char *name = quicoff_wire_kind_name(m.kind);
        size_t n = enc(&m, buf, sizeof(buf));
        size_t hl = m.eth.has_vlan ? 18 : 14;
        /* compat data has no length: only cuts into its 10-byte header fail */
        size_t must_fail_below = m.kind == QUICOFF_WIRE_COMPAT_DATA
                                     ? hl + QUICOFF_WIRE_COMPAT_DATA_HDR_LEN
                                     : n;
        unsigned bad = 0, leaked = 0;
        for (size_t cut = 0; cut < n; cut++) {
            /* a heap copy of exactly `cut` bytes, so ASan sees any over-read */
            uint8_t *p = malloc(cut ? cut : 1);
            memcpy(p, buf, cut);
            quicoff_status_t st = quicoff_wire_decode(p, cut, &d);
            if (cut < must_fail_below) {
                if (st == QUICOFF_OK)
                    bad++;
                if (!all_zero(&d.u, sizeof(d.u)))
                    leaked++;
            } else if (st != QUICOFF_OK || d.u.data.payload_len != cut - hl - 10) {
                bad++;
            }
            free(p);
            quicoff_wire_msg_clear(&d);
        }
        ok(bad == 0, "%d %s: every truncation of %zu bytes -> error (%u bad)", i, name, n, bad);
        ok(leaked == 0, "%d %s: failed decodes leave nothing in the body (%u)", i, name, leaked);
        /* the same at payload level */
        bad = 0;
        size_t pl = n - hl;
        uint16_t et = m.kind == QUICOFF_WIRE_COMPAT_DATA ? QUICOFF_WIRE_ETHERTYPE_DATA
                                                         : QUICOFF_WIRE_ETHERTYPE_SIGNAL;
        for (size_t cut = 0; cut < must_fail_below - hl; cut++) {
            uint8_t *p = malloc(cut ? cut : 1);
            memcpy(p, buf + hl, cut);
            if (quicoff_wire_decode_payload(et, p, cut, &d) == QUICOFF_OK)
                bad++;
            free(p);
            quicoff_wire_msg_clear(&d);
        }
        ok(bad == 0, "%d %s: every payload truncation of %zu bytes -> error", i, name, pl);
        quicoff_wire_msg_clear(&m);
    }
}

/* Ethernet padding after a v1 frame or compat signaling is ignored. */
static void test_padding(void)
{
    for (int i = 0; i < N_SAMPLES; i++) {
        struct quicoff_wire_msg m, d, ex;
        uint8_t buf[2048];
        sample(i, &m);
        if (m.kind == QUICOFF_WIRE_COMPAT_DATA)
            continue;
        size_t n = enc(&m, buf, sizeof(buf));
        memset(buf + n, 0, 64);
        quicoff_status_t st = quicoff_wire_decode(buf, n + 64, &d);
        expected(&m, &ex);
        ok(st == QUICOFF_OK && msg_eq(&d, &ex), "%d %s: 64 bytes of padding ignored", i,
           quicoff_wire_kind_name(m.kind));
        quicoff_wire_msg_clear(&d);
    }
}

/* docs/protocol.md §8, byte for byte. */
static void test_doc_examples(void)
{
    uint8_t buf[256], want[256];
    size_t n, wn;
    struct quicoff_wire_msg m, a;

    sample(6, &m); /* REMOVE TX 7, request 0x01020304 */
    m.eth.has_vlan = false;
    n = 0;
    ok(quicoff_wire_encode_payload(&m, buf, sizeof(buf), &n, NULL) == QUICOFF_OK, "remove");
    wn = hex_must(want, sizeof(want), "51 01 03 00 01 02 03 04 00 00 00 07 00 00 00 00");
    ok(n == wn && memcmp(buf, want, n) == 0, "REMOVE bytes: %s", hex_str(buf, n));

    quicoff_wire_ack_for(&m, QUICOFF_OK, &a);
    ok(quicoff_wire_encode_payload(&a, buf, sizeof(buf), &n, NULL) == QUICOFF_OK, "ack");
    wn = hex_must(want, sizeof(want), "51 01 81 03 01 02 03 04 00 00 00 07 00 00 00 00");
    ok(n == wn && memcmp(buf, want, n) == 0, "ACK bytes: %s", hex_str(buf, n));

    sample(14, &m); /* DATA_TO_OFFLOAD 7, PN 42, 40 bytes */
    ok(quicoff_wire_encode_payload(&m, buf, sizeof(buf), &n, NULL) == QUICOFF_OK, "data");
    wn = hex_must(want, sizeof(want),
                  "51 01 10 00 00 00 00 07 00 00 00 00 00 00 00 2a 00 28 00 00");
    ok(n == wn + 40 && memcmp(buf, want, wn) == 0, "DATA_TO_OFFLOAD header: %s", hex_str(buf, wn));
    uint8_t h[20];
    ok(quicoff_wire_data_hdr_write(h, sizeof(h), QUICOFF_WIRE_DATA_TO_OFFLOAD, &m.u.data) == 20 &&
           memcmp(h, want, 20) == 0,
       "data_hdr_write == the same header");

    sample(18, &m);
    ok(quicoff_wire_encode_payload(&m, buf, sizeof(buf), &n, NULL) == QUICOFF_OK, "compat data");
    wn = hex_must(want, sizeof(want), "00 07 00 00 00 00 00 00 00 2a");
    ok(n == wn + 128 && memcmp(buf, want, wn) == 0, "compat data_pkt header: %s",
       hex_str(buf, wn));
    ok(quicoff_wire_compat_data_hdr_write(h, sizeof(h), 7, 42) == 10 && memcmp(h, want, 10) == 0,
       "compat_data_hdr_write == the same header");
    ok(quicoff_wire_compat_data_hdr_write(h, sizeof(h), 0x10000, 42) == 0 &&
           quicoff_wire_compat_data_hdr_write(h, 9, 7, 42) == 0 &&
           quicoff_wire_compat_data_hdr_write(h, 10, 7, QUICOFF_WIRE_PN_MAX + 1) == 0,
       "compat_data_hdr_write refuses index > 16 bits, short buffer, PN > 2^62-1");
    struct quicoff_wire_data dd = {.pn = QUICOFF_WIRE_PN_MAX + 1};
    ok(quicoff_wire_data_hdr_write(h, 20, QUICOFF_WIRE_DATA_TO_HOST, &dd) == 0 &&
           quicoff_wire_data_hdr_write(h, 19, QUICOFF_WIRE_DATA_TO_HOST, &m.u.data) == 0 &&
           quicoff_wire_data_hdr_write(h, 20, QUICOFF_WIRE_ADD, &m.u.data) == 0,
       "data_hdr_write refuses PN > 2^62-1, short buffer, non-data kind");
}

/* A compat frame laid out by hand from docs/protocol.md §3.1/§3.2 (what Scapy's BitFields write). */
static void test_compat_by_hand(void)
{
    uint8_t f[14 + 100];
    struct quicoff_wire_msg d;
    memcpy(f, MAC_B, 6);
    memcpy(f + 6, MAC_A, 6);
    f[12] = 0x88;
    f[13] = 0xb5;
    uint8_t *p = f + 14;
    memset(p, 0, 100);
    p[0] = 0;                    /* Type: peer */
    p[1] = 0x00, p[2] = 0x05;    /* Index 5 */
    p[3] = 0;                    /* Algo: AES_GCM128_AES_ECB */
    fill(p + 4 + 16, 16, 0xa0);  /* Hp_key: a 128-bit value in 256 bits */
    fill(p + 36 + 16, 16, 0xb0); /* Quic_key */
    fill(p + 68, 12, 0xc0);      /* IV */
    p[83] = 2;                   /* Path_id 2 */
    fill(p + 84, 8, 0xd0);       /* DCID */
    p[99] = 9;                   /* Full_pn 9 */
    quicoff_status_t st = quicoff_wire_decode(f, sizeof(f), &d);
    uint8_t k[16];
    ok(st == QUICOFF_OK && d.kind == QUICOFF_WIRE_COMPAT_PEER && d.version == 0 && d.index == 5 &&
           d.direction == QUICOFF_DIR_RX,
       "signaling_peer: %s, kind %s, index %u", S(st), quicoff_wire_kind_name(d.kind), d.index);
    const struct quicoff_conn_config *c = quicoff_wire_conn_config(&d);
    fill(k, 16, 0xa0);
    ok(c && c->suite == QUICOFF_AES_128_GCM && memcmp(c->keys.hp, k, 16) == 0 &&
           all_zero(c->keys.hp + 16, 16),
       "Hp_key: the last 16 bytes (left-padded), stored right-padded");
    fill(k, 16, 0xb0);
    ok(c && memcmp(c->keys.key, k, 16) == 0 && all_zero(c->keys.key + 16, 16), "Quic_key");
    fill(k, 12, 0xc0);
    ok(c && memcmp(c->keys.iv, k, 12) == 0 && c->path_id == 2 && c->largest_pn == 9 &&
           c->dcid_len == 8 && c->nonce_layout == QUICOFF_NONCE_MULTIPATH_PATH_ID_LE &&
           c->level == QUICOFF_LEVEL_ONE_RTT && c->direction == QUICOFF_DIR_RX &&
           !d.u.add.compat_right_padded,
       "IV, Path_id, Full_pn -> largest_pn, DCID (8), multipath-path-id-le nonce, 1-RTT, RX");
    fill(k, 8, 0xd0);
    ok(c && memcmp(c->dcid, k, 8) == 0, "DCID bytes");

    /* right-padded (stored form) accepted and reported */
    memset(p + 4, 0, 32);
    fill(p + 4, 16, 0xa0);
    st = quicoff_wire_decode(f, sizeof(f), &d);
    fill(k, 16, 0xa0);
    ok(st == QUICOFF_OK && d.u.add.compat_right_padded && memcmp(d.u.add.cfg.keys.hp, k, 16) == 0,
       "right-padded 128-bit key accepted (%s)", S(st));
    /* both halves non-zero for a 128-bit suite: invalid, and nothing left behind */
    p[4 + 31] = 1;
    st = quicoff_wire_decode(f, sizeof(f), &d);
    ok(st == QUICOFF_INVALID_ARGUMENT && all_zero(&d.u, sizeof(d.u)),
       "a 256-bit value for a 128-bit suite: %s", S(st));
    /* the compat classes' defaults (all zero): AES-128-GCM with all-zero keys */
    memset(p + 1, 0, 99);
    st = quicoff_wire_decode(f, sizeof(f), &d);
    ok(st == QUICOFF_OK && d.u.add.cfg.largest_pn == 0 && d.index == 0,
       "signaling_peer defaults decode: %s", S(st));
    /* Full_pn all ones = none; above 2^62-1 otherwise invalid */
    memset(p + 92, 0xff, 8);
    st = quicoff_wire_decode(f, sizeof(f), &d);
    ok(st == QUICOFF_OK && d.u.add.cfg.largest_pn == UINT64_MAX, "Full_pn all ones = none");
    p[92] = 0x40, memset(p + 93, 0, 7);
    ok(quicoff_wire_decode(f, sizeof(f), &d) == QUICOFF_INVALID_ARGUMENT, "Full_pn 2^62 invalid");
    memset(p + 92, 0, 8);
    /* Algo 4: unsupported; 3 ChaCha20 takes the whole 256-bit field */
    p[3] = 4;
    ok(quicoff_wire_decode(f, sizeof(f), &d) == QUICOFF_UNSUPPORTED, "Algo 4 unsupported");
    p[3] = 3;
    fill(p + 4, 32, 0x01);
    st = quicoff_wire_decode(f, sizeof(f), &d);
    fill(k, 16, 0x01);
    ok(st == QUICOFF_OK && d.u.add.cfg.suite == QUICOFF_CHACHA20_POLY1305 &&
           memcmp(d.u.add.cfg.keys.hp, p + 4, 32) == 0,
       "CHACHA20_POLY1305: 256-bit keys as they are");
    /* Type 1 (host): 85 bytes, DCID_len rules */
    memset(p, 0, 100);
    p[0] = 1;
    p[2] = 3;
    p[84] = 8;
    st = quicoff_wire_decode(f, 14 + 85, &d);
    ok(st == QUICOFF_OK && d.kind == QUICOFF_WIRE_COMPAT_HOST && d.index == 3 &&
           d.direction == QUICOFF_DIR_TX && d.u.add.cfg.dcid_len == 8 &&
           !d.u.add.compat_dcid_len_bits,
       "signaling_host DCID_len 8 = 8 bytes: %s", S(st));
    p[84] = 64;
    st = quicoff_wire_decode(f, 14 + 85, &d);
    ok(st == QUICOFF_OK && d.u.add.cfg.dcid_len == 8 && d.u.add.compat_dcid_len_bits,
       "DCID_len 64 read as bits -> 8 bytes");
    p[84] = 160;
    ok(quicoff_wire_decode(f, 14 + 85, &d) == QUICOFF_OK && d.u.add.cfg.dcid_len == 20,
       "160 bits");
    p[84] = 21;
    ok(quicoff_wire_decode(f, 14 + 85, &d) == QUICOFF_INVALID_ARGUMENT, "DCID_len 21 invalid");
    p[84] = 168;
    ok(quicoff_wire_decode(f, 14 + 85, &d) == QUICOFF_INVALID_ARGUMENT, "DCID_len 168 invalid");
    p[84] = 20;
    ok(quicoff_wire_decode(f, 14 + 84, &d) == QUICOFF_MALFORMED, "84 bytes: malformed");
    /* Type 2..0x50, 0x52..: unsupported */
    p[0] = 2;
    ok(quicoff_wire_decode(f, sizeof(f), &d) == QUICOFF_UNSUPPORTED, "first byte 2: unsupported");
    p[0] = 0xff;
    ok(quicoff_wire_decode(f, sizeof(f), &d) == QUICOFF_UNSUPPORTED, "first byte 0xff");
    /* not a host<->offload EtherType */
    f[12] = 0x08, f[13] = 0x00;
    st = quicoff_wire_decode(f, sizeof(f), &d);
    ok(st == QUICOFF_UNSUPPORTED && d.kind == QUICOFF_WIRE_NONE && d.has_eth &&
           d.eth.ethertype == 0x0800,
       "IPv4 frame: unsupported, kind none, EtherType reported");
    quicoff_wire_msg_clear(&d);
}

/* Build a v1 signaling payload from raw TLV hex. */
static size_t v1(uint8_t *buf, uint8_t type, uint8_t flags, uint8_t dir, const char *tlv_hex)
{
    uint8_t t[512];
    size_t n = hex_must(t, sizeof(t), tlv_hex);
    uint8_t h[16] = {0x51,      0x01, type, flags, 0,
                     0,         0,    0x2a, 0,     0,
                     0,         0x07, dir,  0,     (uint8_t)(n >> 8),
                     (uint8_t)n};
    memcpy(buf, h, 16);
    memcpy(buf + 16, t, n);
    return 16 + n;
}

#define KEY16 "000c0010 00112233445566778899aabbccddeeff"
#define IV12 "000d000c 000102030405060708090a0b"
#define HP16 "000e0010 ffeeddccbbaa99887766554433221100"

static quicoff_status_t dec(const uint8_t *p, size_t n, struct quicoff_wire_msg *m)
{
    return quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_SIGNAL, p, n, m);
}

static void test_v1_rules(void)
{
    uint8_t b[1024];
    size_t n;
    struct quicoff_wire_msg m;
    quicoff_status_t st;

    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16);
    st = dec(b, n, &m);
    ok(st == QUICOFF_OK && m.u.add.cfg.suite == QUICOFF_AES_128_GCM &&
           m.u.add.cfg.largest_pn == UINT64_MAX && m.u.add.cfg.dcid_len == 0 &&
           m.request_id == 42 && m.index == 7,
       "minimal ADD (suite + keys), defaults for the rest: %s", S(st));
    n = v1(b, 0x01, 0, 0, HP16 IV12 KEY16 "0001000100");
    ok(dec(b, n, &m) == QUICOFF_OK, "TLVs in any order");
    n = v1(b, 0x01, 0, 0, KEY16 IV12 HP16);
    ok(dec(b, n, &m) == QUICOFF_MALFORMED && m.hdr_valid && m.request_id == 42 &&
           m.kind == QUICOFF_WIRE_ADD,
       "ADD without SUITE: malformed, header kept for the ACK");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12);
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "ADD without HP_KEY: malformed");
    n = v1(b, 0x01, 0, 0, "0001000101 " KEY16 IV12 HP16);
    st = dec(b, n, &m);
    ok(st == QUICOFF_INVALID_ARGUMENT && all_zero(&m.u, sizeof(m.u)),
       "16-byte keys for AES-256-GCM: invalid_argument, no key left: %s", S(st));
    n = v1(b, 0x01, 0, 0, "0001000104 " KEY16 IV12 HP16);
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "suite 4: invalid_argument");
    n = v1(b, 0x01, 0, 0, "000100020000 " KEY16 IV12 HP16);
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "SUITE of 2 bytes: malformed");
    n = v1(b, 0x01, 0, 0, "0001000100 0001000100 " KEY16 IV12 HP16);
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "duplicate SUITE: malformed");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00300008 0000000000000001");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "COUNT (an EVENT TLV) in ADD: malformed");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "7fff0003 010203");
    ok(dec(b, n, &m) == QUICOFF_OK, "unknown non-critical TLV skipped");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "ffff0000");
    st = dec(b, n, &m);
    ok(st == QUICOFF_UNSUPPORTED && m.hdr_valid, "unknown critical TLV: unsupported");
    n = v1(b, 0x01, 0, 0,
           "0001000100 " KEY16 IV12 HP16 "00040015 000102030405060708090a0b0c0d0e0f1011121314");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "DCID of 21 bytes: invalid_argument");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00050007 06 01bb 0a000001");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "LOCAL_ADDR family 6 with 4 bytes");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00050008 04 01bb 0a00000100");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "LOCAL_ADDR of 8 bytes: malformed");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00050007 04 01bb 0a000001");
    st = dec(b, n, &m);
    ok(st == QUICOFF_OK && m.u.add.cfg.local_addr.family == 4 &&
           m.u.add.cfg.local_addr.port == 443 && m.u.add.cfg.local_addr.ip[0] == 10,
       "LOCAL_ADDR IPv4");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00090008 4000000000000000");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "LARGEST_PN 2^62: invalid_argument");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00070001 03");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "nonce layout 3");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00080001 02");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "fail action 2");
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16 "00020001 04");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "level 4");
    n = v1(b, 0x01, 0, 0,
           "0001000100 " KEY16 IV12 HP16 "000f0010 00112233445566778899aabbccddeeff");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "NEXT_PACKET_KEY without NEXT_IV");
    n = v1(b, 0x01, 0, 0,
           "0001000100 " KEY16 IV12 HP16 "00110020 "
           "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "SECRET and raw keys: malformed");
    n = v1(b, 0x01, 0, 0,
           "0001000101 00110020 "
           "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "32-byte SECRET for AES-256-GCM (SHA-384)");
    n = v1(b, 0x01, 0, 0,
           "0001000100 " KEY16 IV12 HP16 "0012001e "
           "0000000000000000000000000000 0006 000000000000 0000000000000000");
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "ENCAP IP version 6 in 30 bytes");
    n = v1(b, 0x01, 0, 2, "0001000100 " KEY16 IV12 HP16);
    ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT && m.hdr_valid, "direction 2");
    {
        /* ... and it is answered: the ACK cannot echo direction 2, it says
         * 0xFF ("none"), and that ACK encodes and decodes (protocol.md §4.8) */
        struct quicoff_wire_msg a, back;
        uint8_t ab[128];
        size_t an = 0;
        quicoff_wire_ack_for(&m, QUICOFF_INVALID_ARGUMENT, &a);
        ok(a.direction == QUICOFF_WIRE_DIRECTION_NONE && a.request_id == m.request_id,
           "direction 2: the ACK's direction is 0xFF");
        ok(quicoff_wire_encode_payload(&a, ab, sizeof(ab), &an, NULL) == QUICOFF_OK &&
               ab[12] == 0xFF,
           "direction 2: its ACK encodes");
        ok(quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_SIGNAL, ab, an, &back) ==
                   QUICOFF_OK &&
               back.kind == QUICOFF_WIRE_ACK && back.direction == QUICOFF_WIRE_DIRECTION_NONE &&
               back.status == QUICOFF_INVALID_ARGUMENT,
           "direction 2: its ACK decodes");
        n = v1(b, 0x01, 0, 0xFF, "0001000100 " KEY16 IV12 HP16);
        ok(dec(b, n, &m) == QUICOFF_INVALID_ARGUMENT, "direction 0xFF on an ADD: invalid");
    }
    /* TLV area and lengths */
    n = v1(b, 0x01, 0, 0, "0001000100 " KEY16 IV12 HP16);
    b[15] += 1;
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "TLV length past the frame");
    b[15] -= 2;
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "TLV area cutting the last TLV");
    /* version / type */
    n = v1(b, 0x03, 0, 0, "");
    b[1] = 2;
    st = dec(b, n, &m);
    ok(st == QUICOFF_UNSUPPORTED && m.hdr_valid && m.version == 2 && m.request_id == 42 &&
           m.kind == QUICOFF_WIRE_REMOVE,
       "version 2: unsupported, header readable for the ACK");
    struct quicoff_wire_msg a;
    quicoff_wire_ack_for(&m, st, &a);
    ok(a.kind == QUICOFF_WIRE_ACK && a.acked_kind == QUICOFF_WIRE_REMOVE && a.request_id == 42 &&
           a.index == 7 && a.status == QUICOFF_UNSUPPORTED,
       "ack_for an undecodable request");
    n = v1(b, 0x05, 0, 0, "");
    ok(dec(b, n, &m) == QUICOFF_UNSUPPORTED && m.hdr_valid, "type 5: unsupported");
    n = v1(b, 0x03, 0, 0, "00300008 0000000000000001");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "REMOVE with a TLV: malformed");
    n = v1(b, 0x03, 0, 0, "7fff0000");
    ok(dec(b, n, &m) == QUICOFF_OK, "REMOVE with an unknown non-critical TLV");
    /* UPDATE rules */
    n = v1(b, 0x02, 0, 0, "");
    ok(dec(b, n, &m) == QUICOFF_OK && m.u.update.upd.what == 0, "empty UPDATE: a no-op");
    n = v1(b, 0x02, 0, 0, KEY16 IV12);
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "UPDATE keys without KEY_GENERATION");
    n = v1(b, 0x02, 0, 0, "000b0004 00000001");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "UPDATE KEY_GENERATION without keys");
    n = v1(b, 0x02, 0, 0, "000b0004 00000001 " KEY16 IV12 HP16);
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "UPDATE with HP_KEY: malformed");
    n = v1(b, 0x02, 0, 0, "000b0004 00000001 " KEY16 IV12);
    st = dec(b, n, &m);
    ok(st == QUICOFF_OK && m.u.update.upd.what == QUICOFF_UPDATE_KEYS &&
           m.u.update.key_len == 16 && m.u.update.upd.key_generation == 1,
       "UPDATE keys of generation 1");
    n = v1(b, 0x02, QUICOFF_WIRE_UPDATE_ROLL, 0, "");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "ROLL without ROLL_GENERATION");
    n = v1(b, 0x02, 0, 0, "00130004 00000001");
    ok(dec(b, n, &m) == QUICOFF_MALFORMED, "ROLL_GENERATION without ROLL");
    /* data */
    uint8_t dpk[40] = {0x51, 1, 0x90, 0, 0, 0, 0, 1,    0, 0, 0, 0,
                       0,    0, 0,    5, 0, 4, 0, 0x40, 1, 2, 3, 4};
    st = dec(dpk, 24, &m);
    ok(st == QUICOFF_INVALID_ARGUMENT, "DATA_TO_HOST level 4: %s", S(st));
    dpk[19] = 0x31;
    st = dec(dpk, 24, &m);
    ok(st == QUICOFF_OK && m.u.data.level == 3 && m.u.data.key_phase == 1 &&
           m.u.data.payload_len == 4 && m.u.data.index == 1 && m.u.data.pn == 5,
       "DATA_TO_HOST level/key phase byte");
    dpk[8] = 0x40;
    ok(dec(dpk, 24, &m) == QUICOFF_INVALID_ARGUMENT, "data PN 2^62+: invalid_argument");
    dpk[8] = 0;
    dpk[17] = 5;
    ok(dec(dpk, 24, &m) == QUICOFF_MALFORMED, "data length past the frame");
    quicoff_wire_msg_clear(&m);
}

static void test_vlan(void)
{
    struct quicoff_wire_msg m, d;
    uint8_t buf[2048], q[2048];
    sample(6, &m); /* has a VLAN tag */
    size_t n = enc(&m, buf, sizeof(buf));
    ok(buf[12] == 0x81 && buf[13] == 0x00 && buf[14] == 0x01 && buf[15] == 0x06 &&
           buf[16] == 0x88 && buf[17] == 0xb5,
       "802.1Q tag written");
    /* QinQ: an 802.1ad S-tag before it is skipped */
    memcpy(q, buf, 12);
    q[12] = 0x88, q[13] = 0xa8, q[14] = 0x00, q[15] = 0x0a;
    memcpy(q + 16, buf + 12, n - 12);
    quicoff_status_t st = quicoff_wire_decode(q, n + 4, &d);
    ok(st == QUICOFF_OK && d.kind == QUICOFF_WIRE_REMOVE && d.eth.has_vlan &&
           d.eth.vlan_tci == 0x0106,
       "802.1ad + 802.1Q: inner tag reported: %s", S(st));
    for (size_t cut = 0; cut < 22; cut++)
        if (quicoff_wire_decode(q, cut, &d) == QUICOFF_OK)
            ok(0, "QinQ cut at %zu decodes", cut);
    ok(1, "QinQ: every cut inside the tags fails");
    /* the older QinQ TPIDs are tags too (quicoff-dpdk's classifier hands
     * such frames to the control thread); a third tag is not walked */
    q[12] = 0x91, q[13] = 0x00;
    st = quicoff_wire_decode(q, n + 4, &d);
    ok(st == QUICOFF_OK && d.kind == QUICOFF_WIRE_REMOVE && d.eth.vlan_tci == 0x0106,
       "0x9100 + 802.1Q: decoded, inner tag reported: %s", S(st));
    {
        uint8_t t[2048];
        memcpy(t, buf, 12);
        /* 0x9200, then the frame's own 0x88B5 */
        t[12] = 0x92, t[13] = 0x00, t[14] = 0x00, t[15] = 0x0b;
        memcpy(t + 16, buf + 16, n - 16);
        st = quicoff_wire_decode(t, n, &d);
        ok(st == QUICOFF_OK && d.kind == QUICOFF_WIRE_REMOVE && !d.eth.has_vlan,
           "a lone 0x9200 tag: skipped like an S-tag: %s", S(st));
        memcpy(t, q, 16);
        t[16] = 0x81, t[17] = 0x00, t[18] = 0x00, t[19] = 0x0c; /* three tags */
        memcpy(t + 20, q + 16, n + 4 - 16);
        st = quicoff_wire_decode(t, n + 8, &d);
        ok(st != QUICOFF_OK, "three tags: not decoded (%s)", S(st));
    }
    /* ack_for swaps MACs and keeps the tag */
    quicoff_wire_decode(buf, n, &d);
    struct quicoff_wire_msg a;
    quicoff_wire_ack_for(&d, QUICOFF_UNKNOWN_CONNECTION, &a);
    ok(a.has_eth && memcmp(a.eth.dst, MAC_A, 6) == 0 && memcmp(a.eth.src, MAC_B, 6) == 0 &&
           a.eth.has_vlan && a.eth.vlan_tci == 0x0106 && a.status == QUICOFF_UNKNOWN_CONNECTION &&
           a.acked_kind == QUICOFF_WIRE_REMOVE && a.request_id == d.request_id,
       "ack_for: MACs swapped, VLAN kept, request echoed");
    n = enc(&a, buf, sizeof(buf));
    ok(n == 18 + 16 && memcmp(buf, MAC_A, 6) == 0, "the ACK encodes (%zu bytes)", n);
    /* stats_for */
    sample(7, &m);
    struct quicoff_wire_msg r;
    quicoff_wire_stats_for(&m, QUICOFF_OK, &r);
    ok(r.kind == QUICOFF_WIRE_STATS && r.flags == 3 && r.request_id == 13 && r.index == 7 &&
           r.direction == QUICOFF_DIR_RX,
       "stats_for echoes flags, request, entry");
}

static void test_encode_refusals(void)
{
    struct quicoff_wire_msg m;
    uint8_t buf[2048];
    size_t n;
    sample(16, &m);
    m.index = 0x10000;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "compat index > 16 bits");
    sample(16, &m);
    m.u.add.cfg.dcid_len = 4;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "compat RX DCID not 8 bytes");
    sample(16, &m);
    m.u.add.cfg.secret_len = 32;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "compat with a secret");
    sample(0, &m);
    m.u.add.cfg.suite = (quicoff_suite_t)4;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT, "ADD suite 4");
    sample(0, &m);
    m.u.add.cfg.dcid_len = 21;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT, "ADD DCID 21");
    sample(0, &m);
    m.u.add.encap.family = 5;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "encap family 5");
    sample(2, &m);
    m.u.add.cfg.secret_len = 32;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "ADD secret length not the suite's");
    sample(3, &m);
    m.u.update.key_len = 0;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "UPDATE keys without key_len");
    sample(3, &m);
    m.u.update.upd.what |= 1u << 20;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "UPDATE unknown what bit");
    sample(6, &m);
    m.detail = (const uint8_t *)"x";
    m.detail_len = 1;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT,
       "DETAIL on a REMOVE");
    sample(6, &m);
    m.direction = 2;
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT, "direction 2");
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_NONE);
    ok(quicoff_wire_encode(&m, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT, "kind none");
    ok(quicoff_wire_encode(NULL, buf, sizeof(buf), &n) == QUICOFF_INVALID_ARGUMENT &&
           quicoff_wire_decode(buf, 10, NULL) == QUICOFF_INVALID_ARGUMENT &&
           quicoff_wire_decode(NULL, 10, &m) == QUICOFF_INVALID_ARGUMENT,
       "NULL arguments");
    ok(strcmp(quicoff_wire_kind_name(QUICOFF_WIRE_COMPAT_PEER), "compat_peer") == 0 &&
           strcmp(quicoff_wire_kind_name(0x77), "unknown") == 0 &&
           strcmp(quicoff_wire_event_name(QUICOFF_WIRE_EV_KEY_UPDATE), "key_update") == 0 &&
           strcmp(quicoff_wire_event_name(0), "unknown") == 0,
       "names");
}

/* ------------------------------------------------------------------------ */
/* The data header reader against the full decoder                          */

static bool is_data_kind(unsigned kind)
{
    return kind == QUICOFF_WIRE_DATA_TO_OFFLOAD || kind == QUICOFF_WIRE_DATA_TRAIN ||
           kind == QUICOFF_WIRE_DATA_TO_HOST || kind == QUICOFF_WIRE_COMPAT_DATA;
}

static bool data_eq(const struct quicoff_wire_data *a, const struct quicoff_wire_data *b)
{
    return a->index == b->index && a->pn == b->pn && a->flags == b->flags &&
           a->status == b->status && a->level == b->level && a->key_phase == b->key_phase &&
           a->segment_size == b->segment_size && a->count == b->count &&
           a->payload == b->payload && a->payload_len == b->payload_len;
}

/* quicoff_wire_data_hdr_read's contract (wire.h): where the full decoder
 * sees a data kind, the same status, kind and struct quicoff_wire_data
 * (payload pointer included: both read the same buffer); elsewhere
 * UNSUPPORTED, kind NONE, *d zeroed.  The input is copied to a heap block of
 * its exact size so that ASan catches a read past it.  Returns true when the
 * two agree; *full_st gets the full decoder's status. */
static bool hdr_read_agrees(uint16_t et, const uint8_t *p, size_t n, quicoff_status_t *full_st)
{
    uint8_t *h = malloc(n ? n : 1);
    memcpy(h, p, n);
    struct quicoff_wire_msg m;
    quicoff_status_t full = quicoff_wire_decode_payload(et, h, n, &m);
    quicoff_wire_kind_t kind = (quicoff_wire_kind_t)0x77;
    struct quicoff_wire_data d;
    memset(&d, 0xa5, sizeof(d)); /* a field the reader forgets shows */
    quicoff_status_t hdr = quicoff_wire_data_hdr_read(et, h, n, &kind, &d);
    bool agree;
    if (is_data_kind(m.kind)) {
        agree = hdr == full && (unsigned)kind == m.kind && data_eq(&d, &m.u.data);
        if (agree && hdr == QUICOFF_OK) /* the QUIC packet lies inside the input */
            agree = d.payload >= h && d.payload_len <= n &&
                    (size_t)(d.payload - h) <= n - d.payload_len;
    } else {
        agree = hdr == QUICOFF_UNSUPPORTED && kind == QUICOFF_WIRE_NONE && all_zero(&d, sizeof(d));
    }
    if (!agree)
        printf("# hdr_read disagrees on %zu bytes (EtherType %#x, first bytes %02x %02x %02x): "
               "full %s kind %s, header %s kind %s\n",
               n, et, n > 0 ? p[0] : 0, n > 1 ? p[1] : 0, n > 2 ? p[2] : 0, S(full),
               quicoff_wire_kind_name(m.kind), S(hdr), quicoff_wire_kind_name(kind));
    if (full_st)
        *full_st = full;
    quicoff_wire_msg_clear(&m);
    free(h);
    return agree;
}

/* Both EtherTypes: a frame of one format read as the other must agree too. */
static unsigned hdr_read_disagreements(const uint8_t *p, size_t n)
{
    return !hdr_read_agrees(QUICOFF_WIRE_ETHERTYPE_SIGNAL, p, n, NULL) +
           !hdr_read_agrees(QUICOFF_WIRE_ETHERTYPE_DATA, p, n, NULL);
}

/* Data frame number i of the generated set: every kind, lengths around the
 * header sizes and up to a full-size packet, PNs at the edges, every flag,
 * status, level and key phase value the encoder takes. */
static void data_frame(unsigned i, struct quicoff_wire_msg *m)
{
    static const quicoff_wire_kind_t kinds[] = {QUICOFF_WIRE_DATA_TO_OFFLOAD,
                                                QUICOFF_WIRE_DATA_TO_HOST,
                                                QUICOFF_WIRE_COMPAT_DATA};
    static const uint32_t lens[] = {0, 1, 2, 9, 10, 11, 19, 20, 21, 40, 64, 255, 256, 1200, 1400};
    static const uint64_t pns[] = {
        0, 1, 0xff, 0x10000, 0xfffffffful, QUICOFF_WIRE_PN_MAX - 1, QUICOFF_WIRE_PN_MAX};
    static uint8_t packet[1400];
    fill(packet, sizeof(packet), (uint8_t)i);
    quicoff_wire_kind_t kind = kinds[i % 3];
    quicoff_wire_msg_init(m, kind);
    struct quicoff_wire_data *d = &m->u.data;
    d->index = kind == QUICOFF_WIRE_COMPAT_DATA ? (uint32_t)(i * 2654435761u) & 0xffff
                                                : (uint32_t)(i * 2654435761u);
    d->pn = pns[i / 3 % 7];
    d->payload = packet;
    d->payload_len = lens[i / 21 % 15];
    if (kind == QUICOFF_WIRE_DATA_TO_HOST) {
        d->flags = (uint8_t)(i * 37);
        d->status = (uint8_t)(i % (QUICOFF_BACKEND_UNAVAILABLE + 1));
        d->level = (uint8_t)(i / 7 % QUICOFF_LEVEL_COUNT);
        d->key_phase = (uint8_t)(i / 5 % 2);
    }
    m->index = d->index;
    m->flags = d->flags;
    m->status = d->status;
}

enum { N_DATA_FRAMES = 3 * 7 * 15 * 2 };

static void test_data_hdr_read(void)
{
    unsigned bad_ok = 0, bad_trunc = 0, bad_flip = 0, bad_pad = 0, frames = 0, tries = 0;
    static uint8_t buf[1400 + QUICOFF_WIRE_DATA_HDR_LEN + 8];
    for (unsigned i = 0; i < N_DATA_FRAMES; i++) {
        struct quicoff_wire_msg m;
        data_frame(i, &m);
        size_t n = 0;
        uint16_t et = 0;
        if (quicoff_wire_encode_payload(&m, buf, sizeof(buf), &n, &et) != QUICOFF_OK) {
            bad_ok++;
            continue;
        }
        frames++;
        /* the frame itself: OK, the fields encoded, the packet where it was put */
        quicoff_wire_kind_t kind;
        struct quicoff_wire_data d;
        size_t hlen = m.kind == QUICOFF_WIRE_COMPAT_DATA ? QUICOFF_WIRE_COMPAT_DATA_HDR_LEN
                                                         : QUICOFF_WIRE_DATA_HDR_LEN;
        struct quicoff_wire_data want = m.u.data;
        want.payload = buf + hlen;
        if (quicoff_wire_data_hdr_read(et, buf, n, &kind, &d) != QUICOFF_OK ||
            (unsigned)kind != m.kind || !data_eq(&d, &want) || n != hlen + want.payload_len)
            bad_ok++;
        /* every truncation, both EtherTypes */
        for (size_t cut = 0; cut <= n; cut++, tries += 2)
            bad_trunc += hdr_read_disagreements(buf, cut);
        /* every single-bit flip of the header and the first payload byte */
        size_t flip_bytes = n < hlen + 1 ? n : hlen + 1;
        for (size_t bit = 0; bit < 8 * flip_bytes; bit++, tries += 2) {
            buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            bad_flip += hdr_read_disagreements(buf, n);
            buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        }
        /* Ethernet padding after a v1 frame: ignored by both */
        for (size_t pad = 1; pad <= 8; pad++, tries += 2) {
            memset(buf + n, 0, pad);
            bad_pad += hdr_read_disagreements(buf, n + pad);
        }
        quicoff_wire_msg_clear(&m);
    }
    ok(frames == N_DATA_FRAMES && bad_ok == 0, "%u generated data frames read back (%u bad)",
       frames, bad_ok);
    ok(bad_trunc == 0, "every truncation: header reader == full decoder (%u bad)", bad_trunc);
    ok(bad_flip == 0, "every header bit flip: header reader == full decoder (%u bad)", bad_flip);
    ok(bad_pad == 0, "trailing padding: header reader == full decoder (%u bad)", bad_pad);
    printf("# %u comparisons\n", tries);

    /* every value of the bytes that decide: byte 1 (version), byte 2 (type),
     * byte 19 (level / key phase / reserved bits), byte 18 (status), byte 3
     * (flags), on both data kinds */
    unsigned bad = 0;
    for (unsigned k = 0; k < 2; k++) {
        struct quicoff_wire_msg m;
        data_frame(k, &m);
        size_t n = 0;
        quicoff_wire_encode_payload(&m, buf, sizeof(buf), &n, NULL);
        static const size_t at[] = {0, 1, 2, 3, 18, 19};
        for (size_t a = 0; a < sizeof(at) / sizeof(at[0]); a++) {
            uint8_t save = buf[at[a]];
            for (unsigned v = 0; v < 256; v++) {
                buf[at[a]] = (uint8_t)v;
                bad += hdr_read_disagreements(buf, n);
            }
            buf[at[a]] = save;
        }
        quicoff_wire_msg_clear(&m);
    }
    ok(bad == 0, "every value of bytes 0-3, 18, 19: header reader == full decoder (%u bad)", bad);

    /* the documented rules, by hand */
    static const uint8_t doc[] = {0x51, 0x01, 0x10, 0x00, 0x00, 0x00, 0x00, 0x07,
                                  0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,
                                  0x00, 0x02, 0x00, 0x00, 0xaa, 0xbb};
    uint8_t f[sizeof(doc)];
    quicoff_wire_kind_t kind;
    struct quicoff_wire_data d;
    quicoff_status_t st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, doc,
                                                     sizeof(doc), &kind, &d);
    ok(st == QUICOFF_OK && kind == QUICOFF_WIRE_DATA_TO_OFFLOAD && d.index == 7 && d.pn == 42 &&
           d.payload == doc + 20 && d.payload_len == 2,
       "protocol.md §8 example: %s", S(st));
    memcpy(f, doc, sizeof(f));
    f[1] = 2;
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, f, sizeof(f), &kind, &d);
    ok(st == QUICOFF_UNSUPPORTED && kind == QUICOFF_WIRE_DATA_TO_OFFLOAD,
       "version 2: unsupported, kind kept: %s", S(st));
    memcpy(f, doc, sizeof(f));
    f[17] = 3;
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, f, sizeof(f), &kind, &d);
    ok(st == QUICOFF_MALFORMED && all_zero(&d, sizeof(d)), "Length past the frame: %s", S(st));
    memcpy(f, doc, sizeof(f));
    f[8] = 0x40;
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, f, sizeof(f), &kind, &d);
    ok(st == QUICOFF_INVALID_ARGUMENT, "PN 2^62: %s", S(st));
    memcpy(f, doc, sizeof(f));
    f[2] = 0x90;
    f[19] = 0x4e; /* level 4 */
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, f, sizeof(f), &kind, &d);
    ok(st == QUICOFF_INVALID_ARGUMENT && kind == QUICOFF_WIRE_DATA_TO_HOST, "level 4: %s", S(st));
    f[19] = 0x3f; /* Handshake, key phase 1, reserved bits 3-1 set: ignored */
    f[3] = 0xff;
    f[18] = 0xee;
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, f, sizeof(f), &kind, &d);
    ok(st == QUICOFF_OK && d.level == QUICOFF_LEVEL_HANDSHAKE && d.key_phase == 1 &&
           d.flags == 0xff && d.status == 0xee,
       "reserved bits ignored, flags and status as received: %s", S(st));
    f[2] = 0x10; /* the same bytes to the offload: 18-19 ignored, flags reported */
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, f, sizeof(f), &kind, &d);
    ok(st == QUICOFF_OK && d.level == 0 && d.key_phase == 0 && d.status == 0 && d.flags == 0xff,
       "DATA_TO_OFFLOAD: bytes 18-19 ignored: %s", S(st));
    /* not data frames: left to the full decoder */
    struct quicoff_wire_msg m;
    sample(0, &m); /* an ADD */
    size_t n = 0;
    quicoff_wire_encode_payload(&m, buf, sizeof(buf), &n, NULL);
    quicoff_wire_msg_clear(&m);
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, buf, n, &kind, &d);
    ok(st == QUICOFF_UNSUPPORTED && kind == QUICOFF_WIRE_NONE, "an ADD: not a data frame");
    st = quicoff_wire_data_hdr_read(0x0800, doc, sizeof(doc), &kind, &d);
    ok(st == QUICOFF_UNSUPPORTED && kind == QUICOFF_WIRE_NONE, "IPv4: not a data frame");
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, doc, 2, &kind, &d);
    ok(st == QUICOFF_UNSUPPORTED && kind == QUICOFF_WIRE_NONE,
       "2 bytes on 0x88B5: not known to be data (the full decoder: malformed)");
    /* compat: no length, the packet runs to the end; index 16 bits */
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_DATA, doc, sizeof(doc), &kind, &d);
    ok(st == QUICOFF_OK && kind == QUICOFF_WIRE_COMPAT_DATA && d.index == 0x5101 &&
           d.payload == doc + 10 && d.payload_len == sizeof(doc) - 10,
       "compat: the whole rest is the packet: %s", S(st));
    st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_DATA, doc, 9, &kind, &d);
    ok(st == QUICOFF_MALFORMED && kind == QUICOFF_WIRE_COMPAT_DATA, "compat cut: %s", S(st));
    /* NULL arguments */
    ok(quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_DATA, NULL, 10, &kind, &d) ==
               QUICOFF_INVALID_ARGUMENT &&
           kind == QUICOFF_WIRE_NONE &&
           quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_DATA, doc, 10, NULL, &d) ==
               QUICOFF_INVALID_ARGUMENT &&
           quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_DATA, doc, 10, &kind, NULL) ==
               QUICOFF_INVALID_ARGUMENT &&
           quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_DATA, NULL, 0, &kind, &d) ==
               QUICOFF_MALFORMED,
       "NULL arguments");

    /* the fast-path writers and the reader: a round trip */
    bad = 0;
    for (unsigned i = 0; i < N_DATA_FRAMES; i++) {
        data_frame(i, &m);
        struct quicoff_wire_data w = m.u.data;
        size_t hl = m.kind == QUICOFF_WIRE_COMPAT_DATA
                        ? quicoff_wire_compat_data_hdr_write(buf, sizeof(buf), w.index, w.pn)
                        : quicoff_wire_data_hdr_write(buf, sizeof(buf),
                                                      (quicoff_wire_kind_t)m.kind, &w);
        memcpy(buf + hl, w.payload, w.payload_len);
        uint16_t et = m.kind == QUICOFF_WIRE_COMPAT_DATA ? QUICOFF_WIRE_ETHERTYPE_DATA
                                                         : QUICOFF_WIRE_ETHERTYPE_SIGNAL;
        w.payload = buf + hl;
        if (hl == 0 ||
            quicoff_wire_data_hdr_read(et, buf, hl + w.payload_len, &kind, &d) != QUICOFF_OK ||
            (unsigned)kind != m.kind || !data_eq(&d, &w))
            bad++;
        quicoff_wire_msg_clear(&m);
    }
    ok(bad == 0, "data_hdr_write / compat_data_hdr_write -> data_hdr_read (%u bad)", bad);
}

/* Random bytes after every valid prefix; bit flips and overwrites of every sample. */
static unsigned fuzz_one(const uint8_t *p, size_t n, bool frame)
{
    struct quicoff_wire_msg d, d2;
    uint8_t *h = malloc(n ? n : 1), out[4096];
    memcpy(h, p, n);
    quicoff_status_t st = frame ? quicoff_wire_decode(h, n, &d)
                                : quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_SIGNAL, h, n,
                                                              &d);
    unsigned bad = 0;
    if (st == QUICOFF_OK) {
        /* a decoded message re-encodes, and decodes to itself */
        size_t on = 0;
        quicoff_status_t e = frame ? quicoff_wire_encode(&d, out, sizeof(out), &on)
                                   : quicoff_wire_encode_payload(&d, out, sizeof(out), &on, NULL);
        if (e != QUICOFF_OK) {
            bad++;
            printf("# re-encode of a decoded %s failed: %s\n", quicoff_wire_kind_name(d.kind),
                   S(e));
        } else {
            st = frame ? quicoff_wire_decode(out, on, &d2)
                       : quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_SIGNAL, out, on, &d2);
            if (st != QUICOFF_OK || !msg_eq(&d, &d2)) {
                bad++;
                printf("# %s: decode(encode(decode(x))) differs (%s)\n",
                       quicoff_wire_kind_name(d.kind), S(st));
            }
            quicoff_wire_msg_clear(&d2);
        }
    } else if (!all_zero(&d.u, sizeof(d.u))) {
        bad++;
    }
    quicoff_wire_msg_clear(&d);
    free(h);
    return bad;
}

static void test_fuzz(void)
{
    unsigned bad = 0, decoded = 0, total = 0;
    uint8_t buf[2048];
    static const uint8_t types[] = {0x01, 0x02, 0x03, 0x04, 0x10, 0x81, 0x82, 0x83, 0x90, 0x05};
    for (int round = 0; round < 20000; round++) {
        size_t n = rnd() % 200;
        for (size_t k = 0; k < n; k++)
            buf[k] = (uint8_t)rnd();
        int shape = round % 4;
        if (shape == 0 && n >= 16) { /* a v1 header + random TLVs that often parse */
            buf[0] = 0x51, buf[1] = 1, buf[2] = types[rnd() % sizeof(types)];
            buf[12] = (uint8_t)(rnd() % 2);
            uint16_t tl = (uint16_t)(n - 16);
            buf[14] = (uint8_t)(tl >> 8), buf[15] = (uint8_t)tl;
            size_t off = 16;
            while (off + 4 <= n) { /* plausible TLV headers */
                uint16_t ty = (uint16_t)(rnd() % 0x36);
                uint16_t ln = (uint16_t)(rnd() % 40);
                if (ln > n - off - 4)
                    ln = (uint16_t)(n - off - 4);
                buf[off] = 0, buf[off + 1] = (uint8_t)ty;
                buf[off + 2] = (uint8_t)(ln >> 8), buf[off + 3] = (uint8_t)ln;
                off += 4 + ln;
            }
        } else if (shape == 1 && n >= 1) {
            buf[0] = (uint8_t)(rnd() % 2); /* compat signaling */
        } else if (shape == 2 && n >= 3) {
            buf[0] = 0x51, buf[1] = 1;
        }
        struct quicoff_wire_msg d;
        if (quicoff_wire_decode_payload(QUICOFF_WIRE_ETHERTYPE_SIGNAL, buf, n, &d) == QUICOFF_OK)
            decoded++;
        quicoff_wire_msg_clear(&d);
        bad += fuzz_one(buf, n, false);
        bad += hdr_read_disagreements(buf, n);
        total++;
    }
    ok(bad == 0, "random payloads: %u tries, %u decoded, %u bad", total, decoded, bad);

    bad = decoded = total = 0;
    for (int i = 0; i < N_SAMPLES; i++) {
        struct quicoff_wire_msg m;
        sample(i, &m);
        size_t n = enc(&m, buf, sizeof(buf));
        for (size_t bit = 0; bit < 8 * n; bit++) {
            buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            bad += fuzz_one(buf, n, true);
            size_t l2 = m.eth.has_vlan ? 18 : 14;
            bad += hdr_read_disagreements(buf + l2, n - l2);
            buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
            total++;
        }
        for (int r = 0; r < 300; r++) {
            uint8_t save[4096];
            memcpy(save, buf, n);
            for (int k = 0; k < 3; k++)
                buf[rnd() % n] = (uint8_t)rnd();
            size_t cut = n - rnd() % 4;
            bad += fuzz_one(buf, cut, true);
            memcpy(buf, save, n);
            total++;
        }
        quicoff_wire_msg_clear(&m);
    }
    ok(bad == 0, "bit flips and overwrites of every sample: %u tries, %u bad", total, bad);
}

/* Decoded messages drive the real table. */
static void test_table_integration(void)
{
    struct quicoff_table_config tc = {.capacity = 16, .local_cid_len = 8};
    struct quicoff_table *t = quicoff_table_create(&tc, NULL);
    if (!ok(t != NULL, "table"))
        return;
    uint8_t buf[2048];
    struct quicoff_wire_msg m, d;
    quicoff_conn_t h[4];

    /* zero-length CIDs (sample 1) need a table whose local CIDs are empty */
    struct quicoff_table_config tc0 = {.capacity = 4, .local_cid_len = 0};
    struct quicoff_table *t0 = quicoff_table_create(&tc0, NULL);
    for (int i = 0; i < 3; i++) {
        sample(i, &m);
        size_t n = enc(&m, buf, sizeof(buf));
        quicoff_wire_msg_clear(&m);
        ok(quicoff_wire_decode(buf, n, &d) == QUICOFF_OK, "ADD %d decodes", i);
        memset(buf, 0, n); /* the config must not point into the frame */
        quicoff_status_t st = quicoff_conn_add(i == 1 ? t0 : t, quicoff_wire_conn_config(&d),
                                               &h[i]);
        ok(st == QUICOFF_OK, "ADD %d -> quicoff_conn_add: %s", i, S(st));
        quicoff_wire_msg_clear(&d);
    }
    /* copying the message and re-pointing the secret */
    sample(5, &m); /* UPDATE keys from a 32-byte secret (entry 0 is AES-128-GCM) */
    m.u.update.upd.key_generation = 1;
    size_t n = enc(&m, buf, sizeof(buf));
    quicoff_wire_decode(buf, n, &d);
    struct quicoff_wire_msg copy = d;
    quicoff_wire_msg_clear(&d);
    const struct quicoff_conn_update *u = quicoff_wire_conn_update(&copy);
    ok(u && u->secret == copy.u.update.secret, "conn_update points at the copy's secret");
    quicoff_status_t st = quicoff_conn_update(t, h[0], u);
    ok(st == QUICOFF_OK, "UPDATE (secret, generation 1) -> quicoff_conn_update: %s", S(st));
    quicoff_wire_msg_clear(&copy);
    sample(3, &m); /* raw keys of generation 1 for entry 0: next keys ahead of time */
    n = enc(&m, buf, sizeof(buf));
    quicoff_wire_decode(buf, n, &d);
    st = quicoff_conn_update(t, h[0], quicoff_wire_conn_update(&d));
    ok(st == QUICOFF_OK, "UPDATE raw keys generation 1: %s", S(st));
    quicoff_wire_msg_clear(&d);
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_UPDATE); /* then roll to generation 1 */
    m.u.update.upd.what = QUICOFF_UPDATE_ROLL | QUICOFF_UPDATE_DROP_OLD;
    m.u.update.roll_generation = 1;
    n = enc(&m, buf, sizeof(buf));
    quicoff_wire_decode(buf, n, &d);
    st = quicoff_conn_update(t, h[0], quicoff_wire_conn_update(&d));
    struct quicoff_conn_stats cs;
    quicoff_conn_stats(t, h[0], &cs);
    ok(st == QUICOFF_OK && d.u.update.roll_generation == 1 && cs.key_generation == 1,
       "UPDATE ROLL -> generation 1: %s", S(st));
    quicoff_wire_msg_clear(&d);
    /* compat: both signaling kinds install */
    for (int i = 16; i <= 17; i++) {
        sample(i, &m);
        n = enc(&m, buf, sizeof(buf));
        quicoff_wire_decode(buf, n, &d);
        st = quicoff_conn_add(t, quicoff_wire_conn_config(&d), &h[3]);
        ok(st == QUICOFF_OK, "compat %s -> quicoff_conn_add: %s", quicoff_wire_kind_name(d.kind),
           S(st));
        quicoff_wire_msg_clear(&d);
    }
    uint8_t dcid[8];
    fill(dcid, 8, 0x44);
    ok(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, dcid, 8, NULL) != QUICOFF_CONN_INVALID,
       "the compat RX entry is found by its DCID");
    struct quicoff_addr la = {.family = 6, .port = 4433};
    fill(la.ip, 16, 0x50);
    ok(quicoff_conn_find(t0, QUICOFF_LEVEL_ONE_RTT, NULL, 0, &la) == h[1],
       "the zero-length-CID RX entry is found by local address + port");
    quicoff_table_destroy(t0);
    quicoff_table_destroy(t);
}

/* GREASE_QUIC_BIT (0x0014): absent = accepted; sent as 0 when off; the
 * decoded config carries it into quicoff_conn_add. */
static void test_grease_tlv(void)
{
    uint8_t buf[2048];
    struct quicoff_wire_msg m, d;
    for (int off = 0; off <= 1; off++) {
        sample(0, &m); /* an ADD */
        ok(m.u.add.cfg.grease_quic_bit, "a fresh ADD config accepts greasing");
        m.u.add.cfg.grease_quic_bit = !off;
        size_t n = enc(&m, buf, sizeof(buf));
        quicoff_wire_msg_clear(&m);
        static const uint8_t tlv0[5] = {0x00, 0x14, 0x00, 0x01, 0x00};
        int found = 0;
        for (size_t i = 0; i + sizeof(tlv0) <= n; i++)
            found |= memcmp(buf + i, tlv0, sizeof(tlv0)) == 0;
        ok(found == off, "grease %s: TLV 0x0014 = 0 %s", off ? "off" : "on",
           off ? "sent" : "not sent");
        ok(quicoff_wire_decode(buf, n, &d) == QUICOFF_OK && d.u.add.cfg.grease_quic_bit == !off &&
               quicoff_wire_conn_config(&d)->grease_quic_bit == !off,
           "grease %s decodes to %d", off ? "off" : "on", !off);
        quicoff_wire_msg_clear(&d);
    }
}

static void test_clear(void)
{
    struct quicoff_wire_msg m;
    sample(1, &m);
    quicoff_wire_msg_clear(&m);
    ok(all_zero(&m, sizeof(m)), "msg_clear zeroes everything");
    ok(quicoff_wire_conn_config(&m) == NULL && quicoff_wire_conn_update(&m) == NULL,
       "accessors refuse other kinds");
}

/* EVENT too_big (docs/protocol.md §4.9): MTU TLV 0x0034, 4 bytes, with COUNT */
static void test_too_big_event(void)
{
    struct quicoff_wire_msg m, d;
    uint8_t buf[256];
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_EVENT);
    m.request_id = 9;
    m.index = 3;
    m.direction = QUICOFF_DIR_TX;
    m.status = QUICOFF_NO_SPACE;
    m.u.event.code = QUICOFF_WIRE_EV_TOO_BIG;
    m.u.event.has_mtu = true;
    m.u.event.mtu = 1500;
    m.u.event.has_count = true;
    m.u.event.count = 2;
    size_t n = enc(&m, buf, sizeof(buf)), h = QUICOFF_WIRE_ETH_LEN;
    /* Ethernet 14 + header 16 + COUNT (4 + 8) + MTU (4 + 4) */
    static const uint8_t mtu_tlv[] = {0x00, 0x34, 0x00, 0x04, 0x00, 0x00, 0x05, 0xdc};
    ok(n == h + 16 + 12 + 8 && buf[h + 3] == 7 && memcmp(buf + n - 8, mtu_tlv, 8) == 0,
       "too_big: code 7, MTU TLV 0x0034 of 4 bytes (%zu bytes)", n);
    quicoff_status_t st = dec(buf + h, n - h, &d);
    ok(st == QUICOFF_OK && d.u.event.code == QUICOFF_WIRE_EV_TOO_BIG && d.u.event.has_mtu &&
           d.u.event.mtu == 1500 && d.u.event.has_count && d.u.event.count == 2,
       "too_big decodes with its MTU and COUNT: %s", S(st));
    ok(strcmp(quicoff_wire_event_name(QUICOFF_WIRE_EV_TOO_BIG), "too_big") == 0,
       "event name too_big");
    buf[n - 5] = 3; /* MTU of 3 bytes */
    buf[h + 15] = (uint8_t)(buf[h + 15] - 1);
    ok(dec(buf + h, n - h - 1, &d) == QUICOFF_MALFORMED, "an MTU TLV of 3 bytes: malformed");
    quicoff_wire_msg_clear(&d);
}

/* DATA_TRAIN (docs/protocol.md §4.2.1): N packets of one TX entry in one
 * frame, consecutive PNs, all segment_size bytes but the last. */
static size_t train_frame(uint8_t *buf, size_t cap, uint64_t pn, uint16_t seg, uint16_t count,
                          uint32_t total)
{
    static uint8_t pkts[65535];
    for (uint32_t i = 0; i < total && i < sizeof(pkts); i++)
        pkts[i] = (uint8_t)(i / (seg ? seg : 1));
    struct quicoff_wire_msg m;
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_DATA_TRAIN);
    m.u.data.index = 5;
    m.u.data.pn = pn;
    m.u.data.segment_size = seg;
    m.u.data.count = count;
    m.u.data.payload = pkts;
    m.u.data.payload_len = total;
    size_t n = 0;
    if (quicoff_wire_encode_payload(&m, buf, cap, &n, NULL) != QUICOFF_OK)
        return 0;
    return n;
}

/* A train header written by hand, so that the decoder meets what no encoder
 * writes. */
static size_t train_by_hand(uint8_t *buf, uint64_t pn, uint16_t length, uint16_t seg,
                            uint16_t count, size_t extra)
{
    memset(buf, 0, QUICOFF_WIRE_TRAIN_HDR_LEN + extra);
    buf[0] = 0x51;
    buf[1] = 0x01;
    buf[2] = 0x11;
    buf[7] = 5;
    for (int i = 0; i < 8; i++)
        buf[8 + i] = (uint8_t)(pn >> (56 - 8 * i));
    buf[16] = (uint8_t)(length >> 8);
    buf[17] = (uint8_t)length;
    buf[20] = (uint8_t)(seg >> 8);
    buf[21] = (uint8_t)seg;
    buf[22] = (uint8_t)(count >> 8);
    buf[23] = (uint8_t)count;
    return QUICOFF_WIRE_TRAIN_HDR_LEN + extra;
}

static void test_trains(void)
{
    static uint8_t buf[QUICOFF_WIRE_TRAIN_HDR_LEN + 65535 + 64];
    quicoff_wire_kind_t kind;
    struct quicoff_wire_data d;
    struct quicoff_wire_msg m;

    /* 1, 2, 10 packets and as many 1200-byte packets as a 64 KB frame holds,
     * the last shorter; every packet where the reader says, with its length */
    static const struct {
        uint16_t seg, count;
        uint32_t total;
    } ok_cases[] = {{1200, 1, 700},    {1200, 2, 2000},     {1200, 10, 11999},
                    {1200, 55, 65535}, {1252, 3, 3 * 1252}, {1, 65535, 65535}};
    for (size_t c = 0; c < sizeof(ok_cases) / sizeof(ok_cases[0]); c++) {
        size_t n = train_frame(buf, sizeof(buf), 100, ok_cases[c].seg, ok_cases[c].count,
                               ok_cases[c].total);
        quicoff_status_t st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, buf, n,
                                                         &kind, &d);
        bool good = n == QUICOFF_WIRE_TRAIN_HDR_LEN + ok_cases[c].total && st == QUICOFF_OK &&
                    kind == QUICOFF_WIRE_DATA_TRAIN && d.count == ok_cases[c].count &&
                    d.segment_size == ok_cases[c].seg && d.pn == 100 && d.index == 5 &&
                    d.payload == buf + QUICOFF_WIRE_TRAIN_HDR_LEN;
        uint32_t sum = 0;
        for (unsigned i = 0; good && i < d.count; i++) {
            uint32_t len = 0;
            const uint8_t *p = quicoff_wire_train_packet(&d, i, &len);
            uint32_t want = i + 1 < d.count ? d.segment_size : ok_cases[c].total - sum;
            good = p == d.payload + sum && len == want && len >= 1 &&
                   p[0] == (uint8_t)(sum / d.segment_size);
            sum += len;
        }
        uint32_t len = 1;
        good = good && sum == ok_cases[c].total &&
               quicoff_wire_train_packet(&d, d.count, &len) == NULL && len == 0;
        good = good && dec(buf, n, &m) == QUICOFF_OK && m.kind == QUICOFF_WIRE_DATA_TRAIN &&
               data_eq(&m.u.data, &d);
        ok(good,
           "train of %u x %u bytes (%u in all): header reader and full decoder agree, "
           "every packet found",
           ok_cases[c].count, ok_cases[c].seg, ok_cases[c].total);
        ok(hdr_read_disagreements(buf, n) == 0, "train %zu: reader == decoder", c);
    }

    /* the refusals, each with its status, the same from both decoders */
    static const struct {
        const char *what;
        uint64_t pn;
        uint16_t length, seg, count;
        size_t extra;
        quicoff_status_t want;
    } bad[] = {
        {"segment size 0", 1, 100, 0, 1, 100, QUICOFF_INVALID_ARGUMENT},
        {"count 0", 1, 100, 100, 0, 100, QUICOFF_INVALID_ARGUMENT},
        {"length 0", 1, 0, 100, 1, 0, QUICOFF_MALFORMED},
        {"length short of count - 1 full segments", 1, 250, 100, 4, 250, QUICOFF_MALFORMED},
        {"length exactly count - 1 segments (empty last packet)", 1, 300, 100, 4, 300,
         QUICOFF_MALFORMED},
        {"length past count full segments", 1, 401, 100, 4, 401, QUICOFF_MALFORMED},
        {"length past the frame", 1, 400, 100, 4, 399, QUICOFF_MALFORMED},
        {"first PN > 2^62-1", QUICOFF_WIRE_PN_MAX + 1, 100, 100, 1, 100, QUICOFF_INVALID_ARGUMENT},
        {"last PN > 2^62-1", QUICOFF_WIRE_PN_MAX - 2, 400, 100, 4, 400, QUICOFF_INVALID_ARGUMENT},
        {"header cut (23 bytes)", 1, 0, 0, 0, 0, QUICOFF_MALFORMED},
    };
    for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
        size_t n = train_by_hand(buf, bad[c].pn, bad[c].length, bad[c].seg, bad[c].count,
                                 bad[c].extra);
        if (c == sizeof(bad) / sizeof(bad[0]) - 1)
            n = QUICOFF_WIRE_TRAIN_HDR_LEN - 1;
        quicoff_status_t st = quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, buf, n,
                                                         &kind, &d);
        quicoff_status_t full = dec(buf, n, &m);
        ok(st == bad[c].want && full == bad[c].want && kind == QUICOFF_WIRE_DATA_TRAIN,
           "%s: %s (full decoder %s)", bad[c].what, S(st), S(full));
        quicoff_wire_msg_clear(&m);
    }
    /* the last PN that is allowed */
    size_t n = train_by_hand(buf, QUICOFF_WIRE_PN_MAX - 3, 400, 100, 4, 400);
    ok(quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, buf, n, &kind, &d) == QUICOFF_OK,
       "a train whose last PN is 2^62-1: ok");

    /* the encoder refuses what the decoder would */
    ok(train_frame(buf, sizeof(buf), 1, 0, 1, 10) == 0, "encode: segment size 0 refused");
    ok(train_frame(buf, sizeof(buf), 1, 100, 3, 200) == 0,
       "encode: lengths that do not add up refused");
    ok(train_frame(buf, sizeof(buf), QUICOFF_WIRE_PN_MAX, 100, 2, 200) == 0,
       "encode: last PN past 2^62-1 refused");

    /* the old single-packet frame is unchanged: 20 bytes, no train fields */
    struct quicoff_wire_msg one;
    quicoff_wire_msg_init(&one, QUICOFF_WIRE_DATA_TO_OFFLOAD);
    one.u.data.index = 7;
    one.u.data.pn = 42;
    one.u.data.payload_len = 40;
    size_t on = 0;
    ok(quicoff_wire_encode_payload(&one, buf, sizeof(buf), &on, NULL) == QUICOFF_OK && on == 20 &&
           buf[2] == 0x10 &&
           quicoff_wire_data_hdr_read(QUICOFF_WIRE_ETHERTYPE_SIGNAL, buf, 60, &kind, &d) ==
               QUICOFF_OK &&
           d.count == 0 && d.segment_size == 0,
       "DATA_TO_OFFLOAD unchanged: 20-byte header, no train fields");
    ok(strcmp(quicoff_wire_kind_name(QUICOFF_WIRE_DATA_TRAIN), "data_train") == 0,
       "kind name data_train");
}

int main(void)
{
    fill(PAYLOAD, sizeof(PAYLOAD), 0x99);
    subtest("roundtrip", test_roundtrip);
    subtest("truncations", test_truncations);
    subtest("padding", test_padding);
    subtest("doc examples", test_doc_examples);
    subtest("compat by hand", test_compat_by_hand);
    subtest("v1 rules", test_v1_rules);
    subtest("vlan and replies", test_vlan);
    subtest("encode refusals", test_encode_refusals);
    subtest("data header reader", test_data_hdr_read);
    subtest("fuzz", test_fuzz);
    subtest("table integration", test_table_integration);
    subtest("clear", test_clear);
    subtest("grease_quic_bit TLV", test_grease_tlv);
    subtest("too_big event", test_too_big_event);
    subtest("trains", test_trains);
    return done_testing();
}
