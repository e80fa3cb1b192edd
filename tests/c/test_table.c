/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Connection table and key-management tests through the public API (plus a
 * few white-box looks at the index and the epoch, from table.h):
 * add / find / remove, EXISTS, TABLE_FULL, stale handles and slot reuse,
 * the grace period before a slot is reused, zero-length DCIDs keyed by local
 * address + port, DCID lengths 0..20, key phases (key update by the peer, old
 * keys, dropping them, next keys ahead of time, control-plane roll), PN reset,
 * usage thresholds and the AES-CCM hard limit, RX integrity threshold,
 * 1,000,000 entries with removal and re-adding (index rebuild), and the three
 * nonce layouts checked against an independent AES-GCM computation.
 */
#include "index.h"
#include "test_packets.h"
#include "test_util.h"

/* ok() with the condition evaluated before the message arguments (a plain
 * call leaves their order unspecified, so a message could show stale values). */
#define check(cond, ...)         \
    do {                         \
        int check_ = !!(cond);   \
        ok(check_, __VA_ARGS__); \
    } while (0)

#include <openssl/evp.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static struct quicoff_table *table_new(uint32_t capacity, uint8_t cid_len)
{
    struct quicoff_table_config cfg = {.capacity = capacity, .local_cid_len = cid_len};
    quicoff_status_t st = QUICOFF_INVALID_ARGUMENT;
    struct quicoff_table *t = quicoff_table_create(&cfg, &st);
    if (!ok(t != NULL && st == QUICOFF_OK, "table_create(%u, %u): %s", capacity, cid_len,
            quicoff_status_name(st))) {
        done_testing();
        exit(1);
    }
    return t;
}

static struct quicoff_table_stats tstats(struct quicoff_table *t)
{
    struct quicoff_table_stats s;
    quicoff_table_stats(t, &s);
    return s;
}

static struct quicoff_conn_stats cstats(struct quicoff_table *t, quicoff_conn_t h)
{
    struct quicoff_conn_stats s;
    memset(&s, 0xff, sizeof(s));
    quicoff_conn_stats(t, h, &s);
    return s;
}

/* A protected packet kept aside (to be delivered now or later). */
struct pk {
    uint8_t b[160];
    uint32_t len;
    uint64_t pn;
};

#define PAYLOAD_LEN 32

static void payload_for(uint64_t pn, uint8_t *p)
{
    for (int i = 0; i < PAYLOAD_LEN; i++)
        p[i] = (uint8_t)(pn * 31 + (uint64_t)i * 7 + 1);
}

/* Builds and protects a short-header packet; returns the protect status. */
static quicoff_status_t mk_short(struct quicoff_worker *w, quicoff_conn_t tx, const uint8_t *dcid,
                                 uint8_t dcid_len, uint64_t pn, unsigned kp, unsigned pn_len,
                                 struct pk *out, struct quicoff_result *r)
{
    uint8_t payload[PAYLOAD_LEN];
    payload_for(pn, payload);
    struct tp_hdr h = {
        .dcid = dcid, .dcid_len = dcid_len, .pn_len = pn_len, .pn = pn, .key_phase = kp};
    memset(out, 0, sizeof(*out));
    uint32_t len = (uint32_t)tp_build(out->b, &h, payload, PAYLOAD_LEN, NULL);
    out->len = len + QUICOFF_TAG_LEN;
    out->pn = pn;
    return tp_protect(w, tx, out->b, 0, len, out->len, pn, r);
}

/* Delivers a copy of pk; on success checks the plaintext. */
static quicoff_status_t deliver(struct quicoff_worker *w, const struct pk *pk,
                                const struct quicoff_addr *addr, struct quicoff_result *r)
{
    uint8_t buf[sizeof(pk->b)];
    struct quicoff_result tmp;
    if (!r)
        r = &tmp;
    memcpy(buf, pk->b, pk->len);
    tp_unprotect(w, buf, 0, pk->len, addr, r);
    if (quicoff_status_ok(r->status)) {
        uint8_t want[PAYLOAD_LEN];
        payload_for(r->pn, want);
        if (r->payload_len != PAYLOAD_LEN || memcmp(buf + r->payload_off, want, PAYLOAD_LEN) != 0)
            check(0, "payload of pn %llu recovered", (unsigned long long)r->pn);
    } else if (memcmp(buf, pk->b, pk->len) != 0) {
        check(0, "failed packet (%s) left as received", quicoff_status_name(r->status));
    }
    return r->status;
}

static quicoff_status_t update(struct quicoff_table *t, quicoff_conn_t h, uint32_t what,
                               uint32_t gen, const uint8_t *secret, size_t secret_len)
{
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = what;
    u.key_generation = gen;
    u.secret = secret;
    u.secret_len = secret_len;
    return quicoff_conn_update(t, h, &u);
}

#define S(st) quicoff_status_name(st)

/* ------------------------------------------------------------------------ */

static void test_add_find_remove(void)
{
    struct quicoff_table *t = table_new(16, 8);
    struct quicoff_packet_keys k;
    uint8_t d1[8], d2[8];
    tp_keys(1, &k);
    tp_cid(1, d1, 8);
    tp_cid(2, d2, 8);
    quicoff_conn_t a, b, c, tx;

    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d1, 8, &k,
                 &a) == QUICOFF_OK,
          "add RX 1-RTT d1");
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_128_GCM, 0, d1, 8, &k,
                 &b) == QUICOFF_OK,
          "same DCID at another level is another entry");
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_256_GCM, 0, d2, 8, &k,
                 &c) == QUICOFF_OK,
          "add RX 1-RTT d2");
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d1, 8, &k,
                 &tx) == QUICOFF_OK,
          "TX entries are not looked up: same DCID is fine");
    check(a != b && b != c && a != c && c != tx, "distinct handles");
    check(tstats(t).connections == 4, "4 live connections");

    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 8, NULL) == a, "find d1 1-RTT");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, d1, 8, NULL) == b, "find d1 Handshake");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d2, 8, NULL) == c, "find d2 1-RTT");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_INITIAL, d1, 8, NULL) == QUICOFF_CONN_INVALID,
          "no Initial entry");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 7, NULL) == QUICOFF_CONN_INVALID,
          "prefix of a DCID does not match");
    uint8_t d1x[8];
    memcpy(d1x, d1, 8);
    d1x[7] ^= 1;
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1x, 8, NULL) == QUICOFF_CONN_INVALID,
          "one bit off does not match");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 21, NULL) == QUICOFF_CONN_INVALID,
          "DCID longer than 20: invalid");

    check(quicoff_conn_remove(t, a) == QUICOFF_OK, "remove d1 1-RTT");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 8, NULL) == QUICOFF_CONN_INVALID,
          "removed entry not found");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, d1, 8, NULL) == b,
          "other level still there");
    check(tstats(t).connections == 3, "3 live connections");
    check(quicoff_conn_remove(t, a) == QUICOFF_UNKNOWN_CONNECTION, "double remove");

    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d1, 8, &k,
                 &a) == QUICOFF_OK,
          "re-add after remove");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 8, NULL) == a, "found again");

    /* argument checks */
    struct quicoff_conn_config cfg;
    quicoff_conn_t h;
    quicoff_conn_config_init(&cfg);
    cfg.direction = QUICOFF_DIR_RX;
    cfg.dcid_len = 7; /* table parses 8-byte short-header DCIDs */
    check(quicoff_conn_add(t, &cfg, &h) == QUICOFF_INVALID_ARGUMENT,
          "RX 1-RTT DCID length != local_cid_len: invalid");
    cfg.dcid_len = 21;
    check(quicoff_conn_add(t, &cfg, &h) == QUICOFF_INVALID_ARGUMENT, "DCID length 21: invalid");
    quicoff_conn_config_init(&cfg);
    cfg.suite = QUICOFF_SUITE_COUNT;
    check(quicoff_conn_add(t, &cfg, &h) == QUICOFF_INVALID_ARGUMENT, "bad suite: invalid");
    quicoff_conn_config_init(&cfg);
    cfg.version = 0xff00001d;
    check(quicoff_conn_add(t, &cfg, &h) == QUICOFF_INVALID_ARGUMENT, "unknown version: invalid");
    quicoff_conn_config_init(&cfg);
    uint8_t sec[48] = {1};
    cfg.secret = sec;
    cfg.secret_len = 48; /* AES-128-GCM uses SHA-256 */
    check(quicoff_conn_add(t, &cfg, &h) == QUICOFF_INVALID_ARGUMENT, "secret length: invalid");
    quicoff_conn_config_init(&cfg);
    cfg.level = QUICOFF_LEVEL_HANDSHAKE;
    cfg.key_generation = 1;
    check(quicoff_conn_add(t, &cfg, &h) == QUICOFF_INVALID_ARGUMENT,
          "key generation on a long-header level: invalid");
    check(tstats(t).connections == 4, "failed adds add nothing");
    quicoff_table_destroy(t);
}

static void test_exists_full(void)
{
    struct quicoff_table *t = table_new(4, 8);
    struct quicoff_packet_keys k;
    uint8_t d[5][8];
    quicoff_conn_t h[5], x;
    tp_keys(2, &k);
    for (int i = 0; i < 5; i++)
        tp_cid(10 + (uint32_t)i, d[i], 8);

    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d[0], 8, &k,
                 &h[0]) == QUICOFF_OK,
          "add");
    struct quicoff_packet_keys k2;
    tp_keys(3, &k2);
    x = 12345;
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_CHACHA20_POLY1305, 0, d[0], 8,
                 &k2, &x) == QUICOFF_EXISTS,
          "duplicate RX lookup key (other keys, other suite): EXISTS");
    check(x == 12345, "EXISTS leaves the handle alone");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d[0], 8, NULL) == h[0],
          "the first entry stays");
    for (int i = 1; i < 4; i++)
        check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d[i], 8, &k,
                     &h[i]) == QUICOFF_OK,
              "add %d", i);
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d[4], 8, &k,
                 &h[4]) == QUICOFF_TABLE_FULL,
          "5th entry in a table of 4: TABLE_FULL");
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d[4], 8, &k,
                 &h[4]) == QUICOFF_TABLE_FULL,
          "TX entries count too");
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d[3], 8, &k,
                 &x) == QUICOFF_EXISTS,
          "duplicate when full: EXISTS, not TABLE_FULL");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d[4], 8, NULL) == QUICOFF_CONN_INVALID,
          "refused entry not in the index");
    check(tstats(t).connections == 4, "4 live");
    check(quicoff_conn_remove(t, h[2]) == QUICOFF_OK, "remove one");
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d[4], 8, &k,
                 &h[4]) == QUICOFF_OK,
          "room again after a remove (no worker in a burst)");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d[4], 8, NULL) == h[4], "new entry found");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d[2], 8, NULL) == QUICOFF_CONN_INVALID,
          "removed entry gone");
    quicoff_table_destroy(t);

    struct quicoff_table_config cfg = {.capacity = 0, .local_cid_len = 8};
    quicoff_status_t st;
    check(quicoff_table_create(&cfg, &st) == NULL && st == QUICOFF_INVALID_ARGUMENT,
          "capacity 0: invalid");
    cfg.capacity = 4;
    cfg.local_cid_len = 21;
    check(quicoff_table_create(&cfg, &st) == NULL && st == QUICOFF_INVALID_ARGUMENT,
          "local_cid_len 21: invalid");
    cfg.local_cid_len = 8;
    cfg.backend = "no-such-backend";
    check(quicoff_table_create(&cfg, &st) == NULL && st == QUICOFF_BACKEND_UNAVAILABLE,
          "unknown backend: %s", S(st));
}

static void test_stale_handles(void)
{
    struct quicoff_table *t = table_new(1, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k;
    uint8_t d[8];
    struct pk p;
    struct quicoff_result r;
    quicoff_conn_t a, b;
    tp_keys(4, &k);
    tp_cid(4, d, 8);

    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k, &a) ==
              QUICOFF_OK,
          "add TX");
    check(mk_short(w, a, d, 8, 1, 0, 2, &p, &r) == QUICOFF_OK, "protect with a live handle");
    check(quicoff_conn_remove(t, a) == QUICOFF_OK, "remove");
    struct pk before;
    check(mk_short(w, a, d, 8, 2, 0, 2, &p, &r) == QUICOFF_UNKNOWN_CONNECTION,
          "protect with a removed handle: %s", S(r.status));
    {
        /* the refused packet is left as it was */
        uint8_t payload[PAYLOAD_LEN];
        payload_for(2, payload);
        struct tp_hdr h = {.dcid = d, .dcid_len = 8, .pn_len = 2, .pn = 2};
        memset(&before, 0, sizeof(before));
        tp_build(before.b, &h, payload, PAYLOAD_LEN, NULL);
        check(memcmp(before.b, p.b, sizeof(p.b)) == 0, "refused packet unchanged");
    }
    struct quicoff_conn_stats cs;
    check(quicoff_conn_stats(t, a, &cs) == QUICOFF_UNKNOWN_CONNECTION,
          "stats: UNKNOWN_CONNECTION");
    check(update(t, a, QUICOFF_UPDATE_THRESHOLD, 0, NULL, 0) == QUICOFF_UNKNOWN_CONNECTION,
          "update: UNKNOWN_CONNECTION");
    check(quicoff_conn_remove(t, a) == QUICOFF_UNKNOWN_CONNECTION, "remove: UNKNOWN_CONNECTION");

    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k, &b) ==
              QUICOFF_OK,
          "a new connection takes the only slot");
    check((uint32_t)b == (uint32_t)a && b != a, "same slot (%u), different handle", (uint32_t)b);
    check(mk_short(w, a, d, 8, 3, 0, 2, &p, &r) == QUICOFF_UNKNOWN_CONNECTION,
          "old handle does not reach the slot's new tenant: %s", S(r.status));
    check(quicoff_conn_stats(t, a, &cs) == QUICOFF_UNKNOWN_CONNECTION,
          "old handle: stats refused");
    check(update(t, a, QUICOFF_UPDATE_THRESHOLD, 0, NULL, 0) == QUICOFF_UNKNOWN_CONNECTION,
          "old handle: update refused");
    check(quicoff_conn_remove(t, a) == QUICOFF_UNKNOWN_CONNECTION, "old handle: remove refused");
    check(mk_short(w, b, d, 8, 4, 0, 2, &p, &r) == QUICOFF_OK, "new handle works");
    check(quicoff_conn_stats(t, b, &cs) == QUICOFF_OK && cs.packets == 1,
          "new tenant's counters start at 0 (packets %llu)", (unsigned long long)cs.packets);
    check(mk_short(w, QUICOFF_CONN_INVALID, d, 8, 5, 0, 2, &p, &r) == QUICOFF_UNKNOWN_CONNECTION,
          "QUICOFF_CONN_INVALID: UNKNOWN_CONNECTION");
    check(mk_short(w, (quicoff_conn_t)7, d, 8, 5, 0, 2, &p, &r) == QUICOFF_UNKNOWN_CONNECTION,
          "slot past capacity: UNKNOWN_CONNECTION");

    /* an RX handle cannot protect */
    check(quicoff_conn_remove(t, b) == QUICOFF_OK, "remove TX");
    quicoff_conn_t rx;
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k,
                 &rx) == QUICOFF_OK,
          "add RX in the slot");
    check(mk_short(w, rx, d, 8, 6, 0, 2, &p, &r) == QUICOFF_UNKNOWN_CONNECTION,
          "protect with an RX handle: %s", S(r.status));
    check(mk_short(w, b, d, 8, 6, 0, 2, &p, &r) == QUICOFF_UNKNOWN_CONNECTION,
          "stale TX handle on an RX tenant: %s", S(r.status));
    struct quicoff_table_stats ts = tstats(t);
    check(ts.unknown_connection == 6, "unknown_connection counted 6 times (%llu)",
          (unsigned long long)ts.unknown_connection);
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* A removed slot is reused only after every worker left the bursts that could
 * have seen it (epoch.h); simulated by announcing an epoch as a burst does. */
static void test_grace_period(void)
{
    struct quicoff_table *t = table_new(1, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k;
    uint8_t d[8];
    quicoff_conn_t a, b;
    tp_keys(5, &k);
    tp_cid(5, d, 8);
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k, &a) ==
              QUICOFF_OK,
          "add");
    qo_epoch_enter(&t->epoch, &w->announce); /* "inside a burst" */
    check(quicoff_conn_remove(t, a) == QUICOFF_OK, "remove while a worker is in a burst");
    check(tstats(t).retired_pending == 2, "keyset and slot wait (%llu)",
          (unsigned long long)tstats(t).retired_pending);
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k, &b) ==
              QUICOFF_TABLE_FULL,
          "slot not reused during the grace period");
    check(quicoff_table_reclaim(t) == 2, "reclaim frees nothing yet");
    qo_epoch_exit(&w->announce);
    check(quicoff_table_reclaim(t) == 0, "after the burst: everything reclaimed");
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k, &b) ==
                  QUICOFF_OK &&
              b != a,
          "slot reused");

    /* An update replaces the keyset: the old one waits the same way. */
    qo_epoch_enter(&t->epoch, &w->announce);
    check(update(t, b, QUICOFF_UPDATE_THRESHOLD, 0, NULL, 0) == QUICOFF_OK, "update");
    check(tstats(t).retired_pending == 1, "old keyset retired, pending");
    qo_epoch_exit(&w->announce);
    /* a worker entering after the retirement does not hold it back */
    qo_epoch_enter(&t->epoch, &w->announce);
    check(quicoff_table_reclaim(t) == 0, "reader that entered later does not delay reclaim");
    qo_epoch_exit(&w->announce);
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* ------------------------------------------------------------------------ */

static struct quicoff_addr addr4(uint8_t last, uint16_t port)
{
    struct quicoff_addr a;
    memset(&a, 0, sizeof(a));
    a.family = 4;
    a.ip[0] = 10;
    a.ip[3] = last;
    a.port = port;
    return a;
}

static struct quicoff_addr addr6(uint8_t last, uint16_t port)
{
    struct quicoff_addr a;
    memset(&a, 0, sizeof(a));
    a.family = 6;
    a.ip[0] = 0x20;
    a.ip[1] = 0x01;
    a.ip[2] = 0x0d;
    a.ip[3] = 0xb8;
    a.ip[15] = last;
    a.port = port;
    return a;
}

static quicoff_status_t add_addr(struct quicoff_table *t, const struct quicoff_addr *a,
                                 const struct quicoff_packet_keys *k, quicoff_conn_t *h)
{
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.direction = QUICOFF_DIR_RX;
    c.local_addr = *a;
    c.keys = *k;
    return quicoff_conn_add(t, &c, h);
}

static void test_zero_length_dcid(void)
{
    struct quicoff_table *t = table_new(16, 0);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k4, k6, k4b;
    tp_keys(41, &k4);
    tp_keys(61, &k6);
    tp_keys(42, &k4b);
    struct quicoff_addr a4 = addr4(1, 443), a6 = addr6(1, 443), a4b = addr4(1, 4433);
    quicoff_conn_t r4 = QUICOFF_CONN_INVALID, r6 = QUICOFF_CONN_INVALID,
                   r4b = QUICOFF_CONN_INVALID, t4 = QUICOFF_CONN_INVALID,
                   t6 = QUICOFF_CONN_INVALID, x;

    check(add_addr(t, &a4, &k4, &r4) == QUICOFF_OK, "RX by 10.0.0.1:443");
    check(add_addr(t, &a6, &k6, &r6) == QUICOFF_OK, "RX by [2001:db8::1]:443");
    check(add_addr(t, &a4b, &k4b, &r4b) == QUICOFF_OK, "RX by 10.0.0.1:4433");
    check(add_addr(t, &a4, &k6, &x) == QUICOFF_EXISTS, "same address+port again: EXISTS");
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, NULL, 0, &k4,
                 &t4) == QUICOFF_OK &&
              tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, NULL, 0,
                     &k6, &t6) == QUICOFF_OK,
          "TX entries");

    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, NULL, 0, &a4) == r4, "find by IPv4");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, NULL, 0, &a6) == r6, "find by IPv6");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, NULL, 0, &a4b) == r4b, "find by port");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, NULL, 0, NULL) == QUICOFF_CONN_INVALID,
          "no address: no entry");

    struct pk p4, p6;
    struct quicoff_result r;
    check(mk_short(w, t4, NULL, 0, 9, 0, 2, &p4, &r) == QUICOFF_OK, "protect for IPv4");
    check(mk_short(w, t6, NULL, 0, 9, 0, 2, &p6, &r) == QUICOFF_OK, "protect for IPv6");
    check(deliver(w, &p4, &a4, &r) == QUICOFF_OK && r.conn == r4 && r.payload_off == 3,
          "IPv4 packet to 10.0.0.1:443: %s", S(r.status));
    check(deliver(w, &p6, &a6, &r) == QUICOFF_OK && r.conn == r6,
          "IPv6 packet to [2001:db8::1]:443: %s", S(r.status));
    /* other keys: the unmasked key phase bit is random, so either outcome */
    quicoff_status_t st = deliver(w, &p4, &a4b, &r);
    check((st == QUICOFF_AUTH_FAILED || st == QUICOFF_KEY_PHASE_UNAVAILABLE) && r.conn == r4b,
          "IPv4 packet to port 4433 reaches that entry (other keys): %s", S(st));
    struct quicoff_addr other = addr4(1, 444);
    check(deliver(w, &p4, &other, &r) == QUICOFF_UNKNOWN_CONNECTION, "different port: %s",
          S(r.status));
    other = addr4(2, 443);
    check(deliver(w, &p4, &other, &r) == QUICOFF_UNKNOWN_CONNECTION, "different IPv4: %s",
          S(r.status));
    other = addr6(2, 443);
    check(deliver(w, &p6, &other, &r) == QUICOFF_UNKNOWN_CONNECTION, "different IPv6: %s",
          S(r.status));
    other = addr6(1, 444);
    check(deliver(w, &p6, &other, &r) == QUICOFF_UNKNOWN_CONNECTION, "IPv6, different port: %s",
          S(r.status));
    check(deliver(w, &p4, NULL, &r) == QUICOFF_UNKNOWN_CONNECTION, "no local address: %s",
          S(r.status));
    /* An IPv4 address uses ip[0..3]; whatever the caller left in ip[4..15]
     * must not matter (struct reused after an IPv6 address, say). */
    other = a4;
    memset(other.ip + 4, 0x5a, 12);
    check(deliver(w, &p4, &other, &r) == QUICOFF_OK && r.conn == r4,
          "IPv4 lookup ignores ip[4..15]: %s", S(r.status));
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, NULL, 0, &other) == r4,
          "conn_find ignores ip[4..15] for IPv4");

    /* datagram entry point passes the address on */
    uint8_t dg[sizeof(p6.b)];
    memcpy(dg, p6.b, p6.len);
    struct quicoff_result res[2];
    check(quicoff_unprotect_datagram(w, dg, p6.len, &a6, res, 2) == 1 &&
              res[0].status == QUICOFF_OK && res[0].conn == r6,
          "unprotect_datagram with IPv6 local address");

    check(quicoff_conn_remove(t, r4) == QUICOFF_OK, "remove IPv4 entry");
    check(deliver(w, &p4, &a4, &r) == QUICOFF_UNKNOWN_CONNECTION, "removed: UNKNOWN_CONNECTION");
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* DCID lengths 0..20, short headers (table local_cid_len = L) and long ones. */
static void test_dcid_lengths(void)
{
    int all_short = 1, all_long = 1, all_miss = 1;
    for (uint8_t L = 0; L <= QUICOFF_MAX_CID_LEN; L++) {
        struct quicoff_table *t = table_new(8, L);
        struct quicoff_worker *w = quicoff_worker_create(t);
        struct quicoff_packet_keys k;
        uint8_t d[QUICOFF_MAX_CID_LEN + 1] = {0};
        tp_keys(200 + L, &k);
        tp_cid(300 + L, d, L);
        quicoff_conn_t rx, tx, rxh, txh;
        if (tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, L, &k,
                   &rx) != QUICOFF_OK ||
            tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, L, &k,
                   &tx) != QUICOFF_OK ||
            tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_256_GCM, 0, d, L, &k,
                   &rxh) != QUICOFF_OK ||
            tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_256_GCM, 0, d, L, &k,
                   &txh) != QUICOFF_OK) {
            check(0, "entries for DCID length %u", L);
            continue;
        }
        struct pk p;
        struct quicoff_result r;
        int good = mk_short(w, tx, d, L, 77, 0, 2, &p, &r) == QUICOFF_OK &&
                   deliver(w, &p, NULL, &r) == QUICOFF_OK && r.conn == rx && r.pn_off == 1u + L &&
                   r.payload_off == 3u + L && r.pn == 77;
        if (!good)
            check(0, "short header, DCID length %u: %s", L, S(r.status));
        all_short &= good;

        /* long header (Handshake) with the same DCID */
        uint8_t buf[200], payload[PAYLOAD_LEN];
        payload_for(78, payload);
        struct tp_hdr h = {.is_long = 1,
                           .version = QUICOFF_VERSION_1,
                           .level = QUICOFF_LEVEL_HANDSHAKE,
                           .dcid = d,
                           .dcid_len = L,
                           .pn_len = 1,
                           .pn = 78};
        uint32_t len = (uint32_t)tp_build(buf, &h, payload, PAYLOAD_LEN, NULL);
        good = tp_protect(w, txh, buf, 0, len, len + 16, 78, &r) == QUICOFF_OK &&
               tp_unprotect(w, buf, 0, len + 16, NULL, &r) == QUICOFF_OK && r.conn == rxh &&
               memcmp(buf + r.payload_off, payload, PAYLOAD_LEN) == 0;
        if (!good)
            check(0, "long header, DCID length %u: %s", L, S(r.status));
        all_long &= good;

        if (L > 0) {
            check(mk_short(w, tx, d, L, 79, 0, 2, &p, &r) == QUICOFF_OK, "protect");
            p.b[L] ^= 0x80; /* last DCID byte */
            good = deliver(w, &p, NULL, &r) == QUICOFF_UNKNOWN_CONNECTION;
            if (!good)
                check(0, "DCID length %u, last byte changed: %s", L, S(r.status));
            all_miss &= good;
        }
        quicoff_worker_destroy(w);
        quicoff_table_destroy(t);
    }
    check(all_short, "short headers with DCID lengths 0..20 found and opened");
    check(all_long, "long headers with DCID lengths 0..20 found and opened");
    check(all_miss, "a changed DCID byte misses for lengths 1..20");
}

/* ------------------------------------------------------------------------ */

/*
 * The data path adds a connection's packets, bytes, per-key packets and
 * largest PN once per run of its consecutive packets (protect.c, struct
 * tally), and the bursts return the chunks' counts of processed packets.
 * One burst of 45 packets (two chunks) of two connections in runs of
 * different lengths (A A A B A B B ...), PNs out of order, failures of both
 * kinds in the middle of runs: the per-connection counters, the table's and
 * the return value must be what packet-by-packet counting gives.
 */
static void test_counters_per_run(void)
{
    enum { N = 45 };
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys ka, kb;
    uint8_t da[8], db[8];
    tp_keys(901, &ka);
    tp_keys(902, &kb);
    tp_cid(903, da, 8);
    tp_cid(904, db, 8);
    quicoff_conn_t rxa, txa, rxb, txb;
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, da, 8, &ka,
                 &rxa) == QUICOFF_OK &&
              tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, da, 8, &ka,
                     &txa) == QUICOFF_OK &&
              tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_CHACHA20_POLY1305, 0, db, 8,
                     &kb, &rxb) == QUICOFF_OK &&
              tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_CHACHA20_POLY1305, 0, db, 8,
                     &kb, &txb) == QUICOFF_OK,
          "two connections, RX and TX");
    /* runs: A x3, B, A, B x2, A x7, B x5, ... (pattern repeats); PN goes
     * down inside some runs so the run's largest is not its last packet */
    static const char conn_of[N + 1] = "AAABABBAAAAAAABBBBBABABABAAAABBBBBBBABBAAAAAB";
    static struct pk pk[N];
    struct quicoff_pkt pkts[N];
    struct quicoff_result res[N];
    uint64_t want_pkts[2] = {0, 0}, want_bytes[2] = {0, 0}, want_largest[2] = {0, 0};
    unsigned want_ok = 0;
    int built = 1;
    for (unsigned i = 0; i < N; i++) {
        int b = conn_of[i] == 'B';
        /* some PNs below the one before, and each connection's last
         * packet below its largest: a run's largest is not its last PN */
        uint64_t pn = 100 + i * 3 - (i % 4 == 2 ? 5 : 0) - (i >= N - 2 ? 20 : 0);
        built &= mk_short(w, b ? txb : txa, b ? db : da, 8, pn, 0, 2, &pk[i], NULL) == QUICOFF_OK;
        if (i == 9 || i == 30) {
            pk[i].b[pk[i].len - 1] ^= 1; /* tag: auth_failed */
        } else if (i == 16) {
            pk[i].b[3] ^= 0x40; /* a DCID byte: unknown_connection */
        } else {
            want_ok++;
            want_pkts[b]++;
            want_bytes[b] += PAYLOAD_LEN;
            if (pn > want_largest[b])
                want_largest[b] = pn;
        }
        pkts[i] = (struct quicoff_pkt){.data = pk[i].b, .end = pk[i].len, .cap = pk[i].len};
    }
    check(built, "45 packets protected one at a time");
    struct quicoff_conn_stats a0 = cstats(t, rxa), b0 = cstats(t, rxb);
    struct quicoff_table_stats t0 = tstats(t);
    unsigned got = quicoff_unprotect_burst(w, pkts, res, N);
    unsigned ok_statuses = 0;
    for (unsigned i = 0; i < N; i++)
        ok_statuses += quicoff_status_ok(res[i].status);
    check(got == want_ok && ok_statuses == want_ok,
          "burst returns %u processed (want %u, %u ok statuses)", got, want_ok, ok_statuses);
    check(res[9].status == QUICOFF_AUTH_FAILED && res[30].status == QUICOFF_AUTH_FAILED &&
              res[16].status == QUICOFF_UNKNOWN_CONNECTION,
          "the failures: %s, %s, %s", S(res[9].status), S(res[30].status), S(res[16].status));
    struct quicoff_conn_stats a = cstats(t, rxa), b = cstats(t, rxb);
    check(a.packets - a0.packets == want_pkts[0] && a.bytes - a0.bytes == want_bytes[0] &&
              a.largest_pn == want_largest[0] && a.key_packets == a.packets &&
              a.auth_failures - a0.auth_failures == 1,
          "A: %llu packets (want %llu), %llu bytes, largest %llu (want %llu), key packets %llu",
          (unsigned long long)(a.packets - a0.packets), (unsigned long long)want_pkts[0],
          (unsigned long long)(a.bytes - a0.bytes), (unsigned long long)a.largest_pn,
          (unsigned long long)want_largest[0], (unsigned long long)a.key_packets);
    check(b.packets - b0.packets == want_pkts[1] && b.bytes - b0.bytes == want_bytes[1] &&
              b.largest_pn == want_largest[1] && b.key_packets == b.packets &&
              b.auth_failures - b0.auth_failures == 1,
          "B: %llu packets (want %llu), %llu bytes, largest %llu (want %llu), key packets %llu",
          (unsigned long long)(b.packets - b0.packets), (unsigned long long)want_pkts[1],
          (unsigned long long)(b.bytes - b0.bytes), (unsigned long long)b.largest_pn,
          (unsigned long long)want_largest[1], (unsigned long long)b.key_packets);
    struct quicoff_table_stats t1 = tstats(t);
    check(t1.rx_packets - t0.rx_packets == want_ok &&
              t1.rx_bytes - t0.rx_bytes == (uint64_t)want_ok * PAYLOAD_LEN,
          "table: %llu RX packets", (unsigned long long)(t1.rx_packets - t0.rx_packets));

    /* TX: the same runs in one protect burst (fresh PNs above the ones
     * protected one at a time), and a handle of a removed entry in a run */
    struct quicoff_conn_stats ta0 = cstats(t, txa), tb0 = cstats(t, txb);
    uint64_t tx_largest[2] = {0, 0}, tx_pkts[2] = {0, 0};
    for (unsigned i = 0; i < N; i++) {
        int bb = conn_of[i] == 'B';
        uint64_t pn = 1000 + i * 2 - (i % 5 == 3 ? 3 : 0);
        uint8_t payload[PAYLOAD_LEN];
        payload_for(pn, payload);
        struct tp_hdr h = {.dcid = bb ? db : da, .dcid_len = 8, .pn_len = 2, .pn = pn};
        memset(&pk[i], 0, sizeof(pk[i]));
        uint32_t len = (uint32_t)tp_build(pk[i].b, &h, payload, PAYLOAD_LEN, NULL);
        pkts[i] = (struct quicoff_pkt){.data = pk[i].b,
                                       .end = len,
                                       .cap = len + QUICOFF_TAG_LEN,
                                       .conn = bb ? txb : txa,
                                       .pn = pn};
        if (i == 21) {
            pkts[i].conn = QUICOFF_CONN_INVALID; /* unknown_connection mid-run */
            continue;
        }
        tx_pkts[bb]++;
        if (pn > tx_largest[bb])
            tx_largest[bb] = pn;
    }
    got = quicoff_protect_burst(w, pkts, res, N);
    struct quicoff_conn_stats ta = cstats(t, txa), tb = cstats(t, txb);
    check(got == N - 1 && res[21].status == QUICOFF_UNKNOWN_CONNECTION,
          "protect burst returns %u processed (want %u)", got, N - 1);
    check(ta.packets - ta0.packets == tx_pkts[0] && ta.largest_pn == tx_largest[0] &&
              tb.packets - tb0.packets == tx_pkts[1] && tb.largest_pn == tx_largest[1] &&
              ta.key_packets - ta0.key_packets == tx_pkts[0] &&
              tb.key_packets - tb0.key_packets == tx_pkts[1],
          "TX: A %llu packets, largest %llu; B %llu packets, largest %llu",
          (unsigned long long)(ta.packets - ta0.packets), (unsigned long long)ta.largest_pn,
          (unsigned long long)(tb.packets - tb0.packets), (unsigned long long)tb.largest_pn);
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* ------------------------------------------------------------------------ */

static void secret_of(uint8_t seed, uint8_t *s)
{
    for (int i = 0; i < 32; i++)
        s[i] = (uint8_t)(seed + i * 13);
}

static void test_key_phases(void)
{
    struct quicoff_table *t = table_new(16, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8], s0[32], s1[32], s2[32], s3[32];
    tp_cid(7, d, 8);
    secret_of(7, s0);
    check(quicoff_derive_next_secret(QUICOFF_AES_128_GCM, s0, 32, QUICOFF_VERSION_1, s1) ==
                  QUICOFF_OK &&
              quicoff_derive_next_secret(QUICOFF_AES_128_GCM, s1, 32, QUICOFF_VERSION_1, s2) ==
                  QUICOFF_OK &&
              quicoff_derive_next_secret(QUICOFF_AES_128_GCM, s2, 32, QUICOFF_VERSION_1, s3) ==
                  QUICOFF_OK,
          "derive secrets of generations 1..3");

    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.direction = QUICOFF_DIR_TX;
    c.dcid_len = 8;
    memcpy(c.dcid, d, 8);
    c.secret = s0;
    c.secret_len = 32;
    quicoff_conn_t tx, rx;
    check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK, "TX from secret (next keys derived)");
    c.direction = QUICOFF_DIR_RX;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX from secret (next keys derived)");

    struct pk p, held5, held6, held14;
    struct quicoff_result r;
    int good = 1;
    for (uint64_t pn = 0; pn < 5; pn++) {
        good &= mk_short(w, tx, d, 8, pn, 0, 2, &p, &r) == QUICOFF_OK && r.flags == 0;
        good &= deliver(w, &p, NULL, &r) == QUICOFF_OK && r.flags == 0 && r.key_phase == 0;
    }
    check(good, "generation 0: pn 0..4");
    check(mk_short(w, tx, d, 8, 5, 0, 2, &held5, &r) == QUICOFF_OK &&
              mk_short(w, tx, d, 8, 6, 0, 2, &held6, &r) == QUICOFF_OK &&
              mk_short(w, tx, d, 8, 14, 0, 2, &held14, &r) == QUICOFF_OK,
          "pn 5, 6 and 14 (generation 0) held back");

    /* TX starts a key update: the host sets the key phase bit. */
    struct quicoff_table_stats ts0 = tstats(t);
    check(mk_short(w, tx, d, 8, 10, 1, 2, &p, &r) == QUICOFF_OK &&
              (r.flags & QUICOFF_FLAG_KEY_UPDATED) && r.key_phase == 1,
          "TX with key phase 1: %s, flags %#x", S(r.status), r.flags);
    check(cstats(t, tx).key_generation == 1 && cstats(t, tx).key_updates == 1,
          "TX now at generation 1");
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && (r.flags & QUICOFF_FLAG_KEY_UPDATED) &&
              !(r.flags & QUICOFF_FLAG_OLD_KEYS) && r.key_phase == 1 && r.pn == 10,
          "RX: generation 1 packet accepted, KEY_UPDATED (%s, flags %#x)", S(r.status), r.flags);
    struct quicoff_conn_stats cs = cstats(t, rx);
    check(cs.key_generation == 1 && cs.key_updates == 1 && cs.largest_pn == 10,
          "RX stats: generation %llu, key_updates %llu, largest_pn %llu",
          (unsigned long long)cs.key_generation, (unsigned long long)cs.key_updates,
          (unsigned long long)cs.largest_pn);
    check(tstats(t).key_updates == ts0.key_updates + 2, "table key_updates +2 (TX and RX)");

    check(deliver(w, &held5, NULL, &r) == QUICOFF_OK && (r.flags & QUICOFF_FLAG_OLD_KEYS) &&
              !(r.flags & QUICOFF_FLAG_KEY_UPDATED) && r.key_phase == 0 && r.pn == 5,
          "late generation-0 packet (pn 5 < 10): OLD_KEYS (%s, flags %#x)", S(r.status), r.flags);
    check(cstats(t, rx).key_generation == 1 && cstats(t, rx).largest_pn == 10,
          "a late packet changes neither generation nor largest PN");
    /* old key phase but a PN after the update's first packet: not a late
     * packet, and the old keys must not open it (RFC 9001 §6.4, §6.5) */
    quicoff_status_t st14 = deliver(w, &held14, NULL, &r);
    check(st14 == QUICOFF_KEY_PHASE_UNAVAILABLE, "generation-0 packet with pn 14 > 10: %s",
          S(st14));
    check(mk_short(w, tx, d, 8, 11, 1, 2, &p, &r) == QUICOFF_OK && r.flags == 0 &&
              deliver(w, &p, NULL, &r) == QUICOFF_OK && r.flags == 0,
          "generation 1 continues, no flags");

    /* TX never goes back to an old generation */
    check(mk_short(w, tx, d, 8, 12, 0, 2, &p, &r) == QUICOFF_KEY_PHASE_UNAVAILABLE,
          "TX with the old key phase: %s", S(r.status));

    /* The RX drops the old keys: late packets of generation 0 fail. */
    check(update(t, rx, QUICOFF_UPDATE_DROP_OLD, 0, NULL, 0) == QUICOFF_OK, "RX DROP_OLD");
    uint64_t kpu = cstats(t, rx).key_phase_unavailable;
    check(deliver(w, &held6, NULL, &r) == QUICOFF_KEY_PHASE_UNAVAILABLE,
          "late generation-0 packet after DROP_OLD: %s", S(r.status));
    check(cstats(t, rx).key_phase_unavailable == kpu + 1, "counted in key_phase_unavailable");

    /* Next keys ahead of time: generation 2 from its secret. */
    check(update(t, rx, QUICOFF_UPDATE_KEYS, 3, s3, 32) == QUICOFF_INVALID_ARGUMENT,
          "UPDATE_KEYS generation cur+2: invalid");
    check(update(t, rx, QUICOFF_UPDATE_KEYS, 0, s0, 32) == QUICOFF_INVALID_ARGUMENT,
          "UPDATE_KEYS generation cur-1: invalid");
    check(update(t, rx, QUICOFF_UPDATE_KEYS, 2, s2, 32) == QUICOFF_OK, "RX: generation 2 ahead");
    check(update(t, tx, QUICOFF_UPDATE_KEYS, 2, s2, 32) == QUICOFF_OK, "TX: generation 2 ahead");
    struct pk held21;
    check(mk_short(w, tx, d, 8, 20, 0, 2, &p, &r) == QUICOFF_OK &&
              (r.flags & QUICOFF_FLAG_KEY_UPDATED) && cstats(t, tx).key_generation == 2,
          "TX moves to generation 2: %s", S(r.status));
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && (r.flags & QUICOFF_FLAG_KEY_UPDATED) &&
              cstats(t, rx).key_generation == 2,
          "RX follows to generation 2: %s", S(r.status));
    check(mk_short(w, tx, d, 8, 21, 0, 2, &held21, &r) == QUICOFF_OK, "pn 21 (generation 2) held");

    /* The chain of "quic ku" secrets is the one the library derived itself:
     * an independent TX entry at generation 2, with key and IV from s2 and
     * the connection's header-protection key (from s0: HP keys are not
     * updated, RFC 9001 §6), is accepted. */
    {
        struct quicoff_packet_keys k0, k2;
        check(quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, s0, 32, QUICOFF_VERSION_1, &k0) ==
                      QUICOFF_OK &&
                  quicoff_derive_packet_keys(QUICOFF_AES_128_GCM, s2, 32, QUICOFF_VERSION_1,
                                             &k2) == QUICOFF_OK,
              "derive keys of generations 0 and 2");
        memcpy(k2.hp, k0.hp, sizeof(k2.hp));
        struct quicoff_conn_config c2;
        quicoff_conn_config_init(&c2);
        c2.dcid_len = 8;
        memcpy(c2.dcid, d, 8);
        c2.keys = k2;
        c2.key_generation = 2;
        quicoff_conn_t tx2;
        check(quicoff_conn_add(t, &c2, &tx2) == QUICOFF_OK, "TX entry at generation 2 from s2");
        quicoff_status_t st1 = mk_short(w, tx2, d, 8, 22, 0, 2, &p, &r);
        check(st1 == QUICOFF_OK && r.flags == 0, "protect at generation 2: %s", S(st1));
        quicoff_status_t st2 = deliver(w, &p, NULL, &r);
        check(st2 == QUICOFF_OK && r.flags == 0 && r.pn == 22,
              "its packet opens with the RX's generation-2 keys: %s", S(st2));
        quicoff_conn_remove(t, tx2);
    }

    /* Control-plane roll: needs generation 3 installed first. */
    check(update(t, rx, QUICOFF_UPDATE_ROLL, 0, NULL, 0) == QUICOFF_KEY_PHASE_UNAVAILABLE,
          "ROLL without next keys: KEY_PHASE_UNAVAILABLE");
    check(cstats(t, rx).key_generation == 2, "still generation 2");
    check(update(t, rx, QUICOFF_UPDATE_KEYS, 3, s3, 32) == QUICOFF_OK &&
              update(t, rx, QUICOFF_UPDATE_ROLL, 0, NULL, 0) == QUICOFF_OK,
          "RX: install generation 3, then ROLL");
    check(cstats(t, rx).key_generation == 3 && cstats(t, rx).key_updates == 3,
          "RX at generation 3 (key_updates %llu)", (unsigned long long)cstats(t, rx).key_updates);
    check(update(t, tx, QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_ROLL, 3, s3, 32) == QUICOFF_OK &&
              cstats(t, tx).key_generation == 3,
          "TX: install generation 3 and ROLL in one call");
    check(mk_short(w, tx, d, 8, 30, 1, 2, &p, &r) == QUICOFF_OK && r.flags == 0,
          "TX generation 3: no KEY_UPDATED flag (the roll was the update)");
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && r.flags == 0 && r.key_phase == 1,
          "RX generation 3 packet: ok, no flags (%s %#x)", S(r.status), r.flags);
    check(deliver(w, &held21, NULL, &r) == QUICOFF_OK && (r.flags & QUICOFF_FLAG_OLD_KEYS),
          "generation-2 packet from before the roll: OLD_KEYS (%s %#x)", S(r.status), r.flags);

    /* ROLL / DROP_OLD make no sense on long-header levels */
    quicoff_conn_t hs;
    struct quicoff_packet_keys k;
    tp_keys(8, &k);
    check(tp_add(t, QUICOFF_DIR_RX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_128_GCM, 0, d, 8, &k,
                 &hs) == QUICOFF_OK,
          "Handshake entry");
    check(update(t, hs, QUICOFF_UPDATE_ROLL, 0, NULL, 0) == QUICOFF_INVALID_ARGUMENT,
          "ROLL on Handshake: invalid");
    check(update(t, hs, QUICOFF_UPDATE_KEYS, 1, s1, 32) == QUICOFF_INVALID_ARGUMENT,
          "generation 1 on Handshake: invalid");
    check(update(t, hs, QUICOFF_UPDATE_KEYS, 0, s1, 48) == QUICOFF_INVALID_ARGUMENT,
          "wrong secret length: invalid");

    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* Next keys given as raw keys at add time (has_next_keys). */
static void test_next_keys_raw(void)
{
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(9, d, 8);
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.suite = QUICOFF_CHACHA20_POLY1305;
    c.dcid_len = 8;
    memcpy(c.dcid, d, 8);
    tp_keys(90, &c.keys);
    tp_keys(91, &c.next_keys);
    c.has_next_keys = true;
    quicoff_conn_t tx, rx, rx_nonext;
    check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK, "TX with raw next keys");
    c.direction = QUICOFF_DIR_RX;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX with raw next keys");
    struct pk p;
    struct quicoff_result r;
    check(mk_short(w, tx, d, 8, 1, 1, 1, &p, &r) == QUICOFF_OK &&
              (r.flags & QUICOFF_FLAG_KEY_UPDATED),
          "TX key update with raw next keys");
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && (r.flags & QUICOFF_FLAG_KEY_UPDATED),
          "RX follows: %s", S(r.status));
    quicoff_conn_remove(t, rx);
    c.has_next_keys = false;
    check(quicoff_conn_add(t, &c, &rx_nonext) == QUICOFF_OK, "RX without next keys");
    check(deliver(w, &p, NULL, &r) == QUICOFF_KEY_PHASE_UNAVAILABLE,
          "key phase 1 without next keys: %s", S(r.status));
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* RFC 9000 A.3 decoding, at the edges of the window, through the data path. */
static void test_pn_decoding(void)
{
    check(quicoff_pn_decode(0xa82f30ea, 0x9b32, 16) == 0xa82f9b32, "RFC 9000 A.3 example");
    check(quicoff_pn_decode(UINT64_MAX, 0x2a, 8) == 0x2a, "nothing received yet");
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(21, d, 8);
    struct quicoff_packet_keys k;
    tp_keys(21, &k);
    quicoff_conn_t tx, rx;
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d, 8, &k,
                 &tx) == QUICOFF_OK,
          "TX");
    static const struct {
        uint64_t largest, pn;
    } cases[] = {
        /* expected 384, window 256: candidate 256 == expected - 128 -> +256 */
        {383, 512},
        /* candidate 257 > expected - 128 -> stays */
        {383, 257},
        /* expected 256: candidate 384 == expected + 128 -> stays */
        {255, 384},
        /* candidate 385 > expected + 128 -> -256 */
        {255, 129},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct quicoff_conn_config c;
        quicoff_conn_config_init(&c);
        c.direction = QUICOFF_DIR_RX;
        c.dcid_len = 8;
        memcpy(c.dcid, d, 8);
        c.keys = k;
        c.largest_pn = cases[i].largest;
        check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX, largest %llu",
              (unsigned long long)cases[i].largest);
        struct pk p;
        struct quicoff_result r;
        quicoff_status_t st = mk_short(w, tx, d, 8, cases[i].pn, 0, 1, &p, &r);
        check(st == QUICOFF_OK, "protect pn %llu in one byte", (unsigned long long)cases[i].pn);
        st = deliver(w, &p, NULL, &r);
        check(st == QUICOFF_OK && r.pn == cases[i].pn,
              "largest %llu, byte %#x: pn %llu (%s), want %llu",
              (unsigned long long)cases[i].largest, (unsigned)(cases[i].pn & 0xff),
              (unsigned long long)r.pn, S(st), (unsigned long long)cases[i].pn);
        quicoff_conn_remove(t, rx);
    }
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* Lookups compare the whole key, not just the 32-bit hash: two local
 * addresses with the same hash (found by search: the table's hash is
 * seeded) stay apart. Done for a pair that differs only in the port and a
 * pair that differs in the address. */
static void collision_pair(struct quicoff_table *t, struct quicoff_worker *w,
                           const struct quicoff_addr *a, const struct quicoff_addr *b,
                           const char *what)
{
    printf("# %s: 10.0.%u.%u:%u and 10.0.%u.%u:%u share hash %#x\n", what, a->ip[2], a->ip[3],
           a->port, b->ip[2], b->ip[3], b->port,
           qo_table_hash(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, a));
    struct quicoff_packet_keys ka, kb;
    tp_keys(51, &ka);
    tp_keys(52, &kb);
    quicoff_conn_t ha = QUICOFF_CONN_INVALID, hb = QUICOFF_CONN_INVALID;
    quicoff_conn_t txa = QUICOFF_CONN_INVALID, txb = QUICOFF_CONN_INVALID;
    /* this table parses 8-byte DCIDs: zero-length entries live at Handshake */
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.direction = QUICOFF_DIR_RX;
    c.level = QUICOFF_LEVEL_HANDSHAKE;
    c.local_addr = *a;
    c.keys = ka;
    check(quicoff_conn_add(t, &c, &ha) == QUICOFF_OK, "%s: entry for A", what);
    check(quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, b) == QUICOFF_CONN_INVALID,
          "%s: B (same hash) does not find A", what);
    c.local_addr = *b;
    c.keys = kb;
    check(quicoff_conn_add(t, &c, &hb) == QUICOFF_OK, "%s: entry for B: not EXISTS", what);
    check(quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, a) == ha &&
              quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, b) == hb,
          "%s: each finds its own", what);
    /* data path: a Handshake packet to each address opens with its keys */
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_128_GCM, 0, NULL, 0, &ka,
                 &txa) == QUICOFF_OK &&
              tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_AES_128_GCM, 0, NULL, 0,
                     &kb, &txb) == QUICOFF_OK,
          "%s: TX entries", what);
    for (int side = 0; side < 2; side++) {
        uint8_t buf[128], payload[PAYLOAD_LEN] = {1};
        struct tp_hdr hd = {.is_long = 1,
                            .version = QUICOFF_VERSION_1,
                            .level = QUICOFF_LEVEL_HANDSHAKE,
                            .pn_len = 2,
                            .pn = 3};
        uint32_t n = (uint32_t)tp_build(buf, &hd, payload, PAYLOAD_LEN, NULL);
        struct quicoff_result r;
        check(tp_protect(w, side ? txb : txa, buf, 0, n, n + 16, 3, &r) == QUICOFF_OK,
              "%s: protect", what);
        quicoff_status_t st = tp_unprotect(w, buf, 0, n + 16, side ? b : a, &r);
        check(st == QUICOFF_OK && r.conn == (side ? hb : ha), "%s: packet to %c reaches it: %s",
              what, side ? 'B' : 'A', S(st));
    }
    check(quicoff_conn_remove(t, ha) == QUICOFF_OK &&
              quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, b) == hb &&
              quicoff_conn_find(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, a) == QUICOFF_CONN_INVALID,
          "%s: A removed, B still found past A's tombstone", what);
    quicoff_conn_remove(t, hb);
    quicoff_conn_remove(t, txa);
    quicoff_conn_remove(t, txb);
}

static struct quicoff_addr cand_addr(uint32_t i)
{
    /* 10.0.0.0 - 10.0.0.31, every port */
    return addr4((uint8_t)(i >> 16), (uint16_t)i);
}

static void test_hash_collisions(void)
{
    struct quicoff_table *t = table_new(16, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    enum { BITS = 21, N = 1 << BITS };
    uint64_t *h = malloc(sizeof(*h) * N), *tmp = malloc(sizeof(*tmp) * N);
    /* hash (at the level the entries use: the level is hashed too) << 21 | candidate */
    for (uint32_t i = 0; i < N; i++) {
        struct quicoff_addr a = cand_addr(i);
        h[i] = (uint64_t)qo_table_hash(t, QUICOFF_LEVEL_HANDSHAKE, NULL, 0, &a) << BITS | i;
    }
    for (int shift = BITS; shift < BITS + 32; shift += 8) { /* radix sort by hash */
        size_t count[257] = {0};
        for (uint32_t i = 0; i < N; i++)
            count[((h[i] >> shift) & 0xff) + 1]++;
        for (int k = 0; k < 256; k++)
            count[k + 1] += count[k];
        for (uint32_t i = 0; i < N; i++)
            tmp[count[(h[i] >> shift) & 0xff]++] = h[i];
        memcpy(h, tmp, sizeof(*h) * N);
    }
    /* 2^21 candidates: ~512 colliding pairs expected, ~16 of them with the
     * same address (2^16 ports each); missing either kind: p < e^-16 */
    int have_port = 0, have_ip = 0;
    uint32_t port_pair[2] = {0, 0}, ip_pair[2] = {0, 0};
    for (uint32_t i = 1; i < N; i++) {
        for (uint32_t j = i; j > 0 && h[j - 1] >> BITS == h[i] >> BITS; j--) {
            uint32_t x = (uint32_t)(h[j - 1] & (N - 1)), y = (uint32_t)(h[i] & (N - 1));
            int same_ip = x >> 16 == y >> 16;
            if (same_ip && !have_port)
                have_port = 1, port_pair[0] = x, port_pair[1] = y;
            if (!same_ip && !have_ip)
                have_ip = 1, ip_pair[0] = x, ip_pair[1] = y;
        }
    }
    free(tmp);
    free(h);
    check(have_port && have_ip, "found colliding addresses: same IP (%d), different IPs (%d)",
          have_port, have_ip);
    struct quicoff_addr a, b;
    if (have_port) {
        a = cand_addr(port_pair[0]), b = cand_addr(port_pair[1]);
        collision_pair(t, w, &a, &b, "ports differ");
    }
    if (have_ip) {
        a = cand_addr(ip_pair[0]), b = cand_addr(ip_pair[1]);
        collision_pair(t, w, &a, &b, "addresses differ");
    }
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* Issue 8 item 9: quicoff_pn_decode answers UINT64_MAX (never a packet
 * number) for a width a header cannot carry (64 bits shifted by 64 before:
 * undefined behaviour, seen by UBSan), a truncated value wider than its width
 * and a largest PN past 2^62 - 1; valid input at the edges still decodes. */
static void test_pn_decode_bad_input(void)
{
    static const unsigned bad_bits[] = {0, 1, 7, 9, 12, 31, 33, 40, 48, 63, 64, 65, 128};
    for (size_t i = 0; i < sizeof(bad_bits) / sizeof(bad_bits[0]); i++)
        check(quicoff_pn_decode(1000, 0x2a, bad_bits[i]) == UINT64_MAX,
              "%u-bit truncated PN: no packet number", bad_bits[i]);
    check(quicoff_pn_decode(1000, 0x100, 8) == UINT64_MAX, "0x100 does not fit in 8 bits");
    check(quicoff_pn_decode(1000, UINT64_C(1) << 32, 32) == UINT64_MAX,
          "2^32 does not fit in 32 bits");
    check(quicoff_pn_decode(UINT64_C(1) << 62, 0x2a, 8) == UINT64_MAX, "largest 2^62");
    check(quicoff_pn_decode(UINT64_MAX - 1, 0x2a, 8) == UINT64_MAX, "largest 2^64 - 2");
    /* the edges that stay valid */
    uint64_t max = (UINT64_C(1) << 62) - 1;
    check(quicoff_pn_decode(max - 1, 0xff, 8) == max, "up to 2^62 - 1");
    check(quicoff_pn_decode(max, 0xffffffff, 32) == max, "largest 2^62 - 1, all ones");
    check(quicoff_pn_decode(UINT64_MAX, 0xffffffff, 32) == 0xffffffff, "none yet, 32 bits");
    check(quicoff_pn_decode(0x12345, 0x45, 8) == 0x12345, "8 bits");
    check(quicoff_pn_decode(0x123456, 0x3457, 16) == 0x123457, "16 bits");
    check(quicoff_pn_decode(0x12345678, 0x345679, 24) == 0x12345679, "24 bits");
}

/* Issue 8 item 9: largest_pn above 2^62 - 1 (other than UINT64_MAX = none) is
 * refused by add and update with INVALID_ARGUMENT and changes nothing; before,
 * such an RX entry failed every packet as auth_failed. */
static void test_largest_pn_range(void)
{
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(13, d, 8);
    struct quicoff_packet_keys k;
    tp_keys(13, &k);
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.dcid_len = 8;
    memcpy(c.dcid, d, 8);
    c.keys = k;
    static const uint64_t bad[] = {UINT64_C(1) << 62, (UINT64_C(1) << 62) + 1, UINT64_C(1) << 63,
                                   UINT64_MAX - 1};
    quicoff_conn_t tx, rx = QUICOFF_CONN_INVALID;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        for (int dir = QUICOFF_DIR_TX; dir <= QUICOFF_DIR_RX; dir++) {
            c.direction = (quicoff_direction_t)dir;
            c.largest_pn = bad[i];
            quicoff_conn_t h = QUICOFF_CONN_INVALID;
            check(quicoff_conn_add(t, &c, &h) == QUICOFF_INVALID_ARGUMENT,
                  "%s add with largest_pn %#llx refused", dir ? "RX" : "TX",
                  (unsigned long long)bad[i]);
        }
    }
    struct quicoff_table_stats ts;
    quicoff_table_stats(t, &ts);
    check(ts.connections == 0, "nothing installed: %llu", (unsigned long long)ts.connections);
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d, 8, NULL) == QUICOFF_CONN_INVALID,
          "no RX entry to find");

    c.direction = QUICOFF_DIR_TX;
    c.largest_pn = UINT64_MAX;
    check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK, "TX");
    c.direction = QUICOFF_DIR_RX;
    c.largest_pn = (UINT64_C(1) << 62) - 1;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX with largest_pn 2^62 - 1 accepted");
    quicoff_conn_remove(t, rx);
    c.largest_pn = 7;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX with largest_pn 7");

    struct quicoff_conn_update u;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&u, 0, sizeof(u));
        /* with other changes in the same request: none of them may happen */
        u.what = QUICOFF_UPDATE_LARGEST_PN | QUICOFF_UPDATE_ROLL | QUICOFF_UPDATE_THRESHOLD;
        u.largest_pn = bad[i];
        u.usage_threshold = 3;
        check(quicoff_conn_update(t, rx, &u) == QUICOFF_INVALID_ARGUMENT,
              "update to largest_pn %#llx refused", (unsigned long long)bad[i]);
        struct quicoff_conn_stats cs = cstats(t, rx);
        check(cs.largest_pn == 7 && cs.key_generation == 0 && cs.key_updates == 0,
              "entry unchanged: largest_pn %llu, generation %llu",
              (unsigned long long)cs.largest_pn, (unsigned long long)cs.key_generation);
    }
    /* the entry still works, from the PN it had */
    struct pk p;
    struct quicoff_result r;
    check(mk_short(w, tx, d, 8, 8, 0, 1, &p, &r) == QUICOFF_OK, "protect pn 8");
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && r.pn == 8, "pn 8 after largest 7: %s",
          S(r.status));
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_LARGEST_PN;
    u.largest_pn = (UINT64_C(1) << 62) - 1;
    check(quicoff_conn_update(t, rx, &u) == QUICOFF_OK, "update to 2^62 - 1 accepted");
    u.largest_pn = UINT64_MAX;
    check(quicoff_conn_update(t, rx, &u) == QUICOFF_OK && cstats(t, rx).largest_pn == UINT64_MAX,
          "update to none accepted");
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

static void test_pn_reset(void)
{
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(11, d, 8);
    struct quicoff_packet_keys k;
    tp_keys(11, &k);
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.dcid_len = 8;
    memcpy(c.dcid, d, 8);
    c.keys = k;
    quicoff_conn_t tx, rx;
    check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK, "TX");
    c.direction = QUICOFF_DIR_RX;
    c.largest_pn = 1000;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX with largest_pn 1000");
    check(cstats(t, rx).largest_pn == 1000, "stats show largest_pn 1000");

    struct pk p;
    struct quicoff_result r;
    check(mk_short(w, tx, d, 8, 5, 0, 1, &p, &r) == QUICOFF_OK, "pn 5, 1-byte encoding");
    check(deliver(w, &p, NULL, &r) == QUICOFF_AUTH_FAILED && r.pn == 1029,
          "near 1000 the byte 0x05 decodes to 1029: %s (pn %llu)", S(r.status),
          (unsigned long long)r.pn);
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_LARGEST_PN;
    u.largest_pn = UINT64_MAX;
    check(quicoff_conn_update(t, rx, &u) == QUICOFF_OK, "PN reset to none");
    check(cstats(t, rx).largest_pn == UINT64_MAX, "largest_pn none");
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && r.pn == 5, "now pn 5: %s", S(r.status));
    check(cstats(t, rx).largest_pn == 5, "largest_pn 5");
    u.largest_pn = 300;
    check(quicoff_conn_update(t, rx, &u) == QUICOFF_OK && cstats(t, rx).largest_pn == 300,
          "PN set to 300");
    check(mk_short(w, tx, d, 8, 301, 0, 1, &p, &r) == QUICOFF_OK &&
              deliver(w, &p, NULL, &r) == QUICOFF_OK && r.pn == 301,
          "pn 301 from one byte (0x2d) after largest 300: %llu", (unsigned long long)r.pn);
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* ------------------------------------------------------------------------ */

static void test_tx_threshold(void)
{
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(12, d, 8);
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.dcid_len = 8;
    memcpy(c.dcid, d, 8);
    tp_keys(12, &c.keys);
    c.usage_threshold = 3;
    quicoff_conn_t tx, rx;
    check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK, "TX with usage_threshold 3");
    c.direction = QUICOFF_DIR_RX;
    c.usage_threshold = 0;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX");

    uint64_t ulr0 = tstats(t).usage_limit_reached;
    struct pk p;
    struct quicoff_result r;
    check(mk_short(w, tx, d, 8, 0, 0, 2, &p, &r) == QUICOFF_OK, "1st packet: %s", S(r.status));
    check(mk_short(w, tx, d, 8, 1, 0, 2, &p, &r) == QUICOFF_OK, "2nd packet: %s", S(r.status));
    check(mk_short(w, tx, d, 8, 2, 0, 2, &p, &r) == QUICOFF_USAGE_LIMIT_REACHED, "3rd packet: %s",
          S(r.status));
    check(deliver(w, &p, NULL, &r) == QUICOFF_OK && r.pn == 2,
          "the USAGE_LIMIT_REACHED packet is valid: unprotect %s", S(r.status));
    check(mk_short(w, tx, d, 8, 3, 0, 2, &p, &r) == QUICOFF_USAGE_LIMIT_REACHED, "4th packet: %s",
          S(r.status));
    unsigned ok_count = 0;
    {
        struct quicoff_pkt pk = {
            .data = p.b, .end = p.len - 16, .cap = p.len, .conn = tx, .pn = 4};
        uint8_t payload[PAYLOAD_LEN];
        payload_for(4, payload);
        struct tp_hdr h = {.dcid = d, .dcid_len = 8, .pn_len = 2, .pn = 4};
        tp_build(p.b, &h, payload, PAYLOAD_LEN, NULL);
        ok_count = quicoff_protect_burst(w, &pk, &r, 1);
    }
    check(ok_count == 1 && r.status == QUICOFF_USAGE_LIMIT_REACHED,
          "burst counts USAGE_LIMIT_REACHED as ok (%u)", ok_count);
    check(tstats(t).usage_limit_reached == ulr0 + 3, "usage_limit_reached +3");
    check(cstats(t, tx).key_packets == 5 && cstats(t, tx).packets == 5, "key_packets 5");
    {
        /* the data-path read (no mutex) agrees with quicoff_conn_stats */
        uint64_t kp = 0;
        check(quicoff_conn_key_packets(w, tx, &kp) == QUICOFF_OK && kp == 5,
              "quicoff_conn_key_packets 5 (%llu)", (unsigned long long)kp);
        check(quicoff_conn_key_packets(w, tx ^ ((quicoff_conn_t)1 << 32), &kp) ==
                  QUICOFF_UNKNOWN_CONNECTION,
              "quicoff_conn_key_packets: stale handle");
        check(quicoff_conn_key_packets(w, tx, NULL) == QUICOFF_INVALID_ARGUMENT,
              "quicoff_conn_key_packets: NULL out");
    }

    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_THRESHOLD;
    u.usage_threshold = 10;
    check(quicoff_conn_update(t, tx, &u) == QUICOFF_OK, "threshold 10");
    check(mk_short(w, tx, d, 8, 5, 0, 2, &p, &r) == QUICOFF_OK, "6th packet ok again: %s",
          S(r.status));
    /* new keys for the current generation restart the count */
    u.usage_threshold = 2;
    check(quicoff_conn_update(t, tx, &u) == QUICOFF_OK &&
              mk_short(w, tx, d, 8, 6, 0, 2, &p, &r) == QUICOFF_USAGE_LIMIT_REACHED,
          "threshold 2: limit reached");
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_KEYS;
    u.key_generation = 0;
    tp_keys(12, &u.keys); /* same keys, fresh count (what a re-key in place means here) */
    check(quicoff_conn_update(t, tx, &u) == QUICOFF_OK && cstats(t, tx).key_packets == 0,
          "UPDATE_KEYS restarts key_packets");
    {
        uint64_t kp = 99;
        check(quicoff_conn_key_packets(w, tx, &kp) == QUICOFF_OK && kp == 0,
              "quicoff_conn_key_packets restarts with the keys (%llu)", (unsigned long long)kp);
    }
    check(mk_short(w, tx, d, 8, 7, 0, 2, &p, &r) == QUICOFF_OK, "ok after the re-key: %s",
          S(r.status));
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

static void test_rx_integrity(void)
{
    struct quicoff_table *t = table_new(8, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(13, d, 8);
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.suite = QUICOFF_AES_128_CCM;
    c.dcid_len = 8;
    memcpy(c.dcid, d, 8);
    tp_keys(13, &c.keys);
    quicoff_conn_t tx, rx;
    check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK, "TX");
    c.direction = QUICOFF_DIR_RX;
    c.usage_threshold = 3;
    check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX with integrity threshold 3");

    struct pk good, bad;
    struct quicoff_result r;
    check(mk_short(w, tx, d, 8, 1, 0, 2, &good, &r) == QUICOFF_OK, "a good packet");
    bad = good;
    bad.b[bad.len - 1] ^= 1; /* last tag byte */
    uint64_t ulr0 = tstats(t).usage_limit_reached;
    check(deliver(w, &good, NULL, &r) == QUICOFF_OK, "good: ok");
    check(deliver(w, &bad, NULL, &r) == QUICOFF_AUTH_FAILED, "bad 1: %s", S(r.status));
    check(deliver(w, &bad, NULL, &r) == QUICOFF_AUTH_FAILED, "bad 2: %s", S(r.status));
    check(deliver(w, &good, NULL, &r) == QUICOFF_OK, "good after 2 failures: %s", S(r.status));
    check(deliver(w, &bad, NULL, &r) == QUICOFF_AUTH_FAILED, "bad 3: %s", S(r.status));
    check(deliver(w, &good, NULL, &r) == QUICOFF_USAGE_LIMIT_REACHED, "good after 3 failures: %s",
          S(r.status));
    check(cstats(t, rx).auth_failures == 3 && cstats(t, rx).packets == 3,
          "conn stats: auth_failures %llu, packets %llu",
          (unsigned long long)cstats(t, rx).auth_failures,
          (unsigned long long)cstats(t, rx).packets);
    check(tstats(t).usage_limit_reached == ulr0 + 1, "table usage_limit_reached +1");
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_THRESHOLD;
    u.usage_threshold = 100;
    check(quicoff_conn_update(t, rx, &u) == QUICOFF_OK &&
              deliver(w, &good, NULL, &r) == QUICOFF_OK,
          "threshold raised: ok again (%s)", S(r.status));
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* RFC 9001 §6.6: AES-CCM's confidentiality limit is 2^21.5 packets; the
 * library rounds it down to 2965820. Send exactly that many, then one more. */
#define CCM_LIMIT 2965820u
#define BURST 64

static void test_ccm_hard_limit(void)
{
    struct quicoff_table *t = table_new(4, 0);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k;
    tp_keys(14, &k);
    quicoff_conn_t tx;
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_CCM, 0, NULL, 0, &k,
                 &tx) == QUICOFF_OK,
          "CCM TX entry");
    static uint8_t bufs[BURST][32];
    struct quicoff_pkt pk[BURST];
    struct quicoff_result res[BURST];
    uint64_t pn = 0, okc = 0, ulr = 0, other = 0;
    double t0 = now_s();
    while (pn < CCM_LIMIT) {
        unsigned n = CCM_LIMIT - pn < BURST ? (unsigned)(CCM_LIMIT - pn) : BURST;
        for (unsigned i = 0; i < n; i++) {
            uint8_t *b = bufs[i];
            uint32_t v = (uint32_t)(pn + i);
            b[0] = 0x43; /* short header, 4-byte PN */
            b[1] = (uint8_t)(v >> 24);
            b[2] = (uint8_t)(v >> 16);
            b[3] = (uint8_t)(v >> 8);
            b[4] = (uint8_t)v;
            b[5] = 0x01; /* PING */
            pk[i] = (struct quicoff_pkt){.data = b, .end = 6, .cap = 22, .conn = tx, .pn = pn + i};
        }
        quicoff_protect_burst(w, pk, res, n);
        for (unsigned i = 0; i < n; i++) {
            if (res[i].status == QUICOFF_OK)
                okc++;
            else if (res[i].status == QUICOFF_USAGE_LIMIT_REACHED)
                ulr++;
            else
                other++;
        }
        pn += n;
    }
    double dt = now_s() - t0;
    printf("# %u CCM packets protected in %.2f s (%.0f ns/packet)\n", CCM_LIMIT, dt,
           dt * 1e9 / CCM_LIMIT);
    uint64_t threshold = (uint64_t)CCM_LIMIT / 4 * 3; /* default: 3/4 of the limit */
    check(other == 0, "all %u packets processed (%llu refused)", CCM_LIMIT,
          (unsigned long long)other);
    check(okc == threshold - 1 && ulr == CCM_LIMIT - (threshold - 1),
          "OK until the default threshold, then USAGE_LIMIT_REACHED (%llu ok, %llu limit)",
          (unsigned long long)okc, (unsigned long long)ulr);
    check(cstats(t, tx).key_packets == CCM_LIMIT, "key_packets %llu",
          (unsigned long long)cstats(t, tx).key_packets);

    /* one more: refused, nothing touched */
    uint8_t b[48], before[48];
    memset(b, 0xcc, sizeof(b));
    b[0] = 0x43;
    b[1] = b[2] = b[3] = 0;
    b[4] = 0;
    b[1] = (uint8_t)(CCM_LIMIT >> 24);
    b[2] = (uint8_t)(CCM_LIMIT >> 16);
    b[3] = (uint8_t)(CCM_LIMIT >> 8);
    b[4] = (uint8_t)CCM_LIMIT;
    memcpy(before, b, sizeof(b));
    uint64_t ke0 = tstats(t).key_exhausted;
    struct quicoff_result r;
    check(tp_protect(w, tx, b, 0, 6, 22, CCM_LIMIT, &r) == QUICOFF_KEY_EXHAUSTED,
          "packet %u with the same key: %s", CCM_LIMIT + 1, S(r.status));
    check(memcmp(b, before, sizeof(b)) == 0, "buffer untouched");
    check(tstats(t).key_exhausted == ke0 + 1, "key_exhausted counted");
    check(cstats(t, tx).key_packets == CCM_LIMIT, "refused packet not counted");

    /* a key update lifts it: next generation via UPDATE_KEYS + ROLL */
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_ROLL;
    u.key_generation = 1;
    tp_keys(15, &u.keys);
    check(quicoff_conn_update(t, tx, &u) == QUICOFF_OK, "new keys (generation 1) and roll");
    b[0] = 0x47; /* key phase 1 */
    check(tp_protect(w, tx, b, 0, 6, 22, CCM_LIMIT, &r) == QUICOFF_OK,
          "generation 1 protects again: %s", S(r.status));
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* ------------------------------------------------------------------------ */

/* 1,000,000 RX entries: add, look up, remove half, re-add, look up. */
#define BIG 1000000u

static void big_cid(uint32_t i, uint8_t *d)
{
    tp_cid(i, d, 8);
    d[0] = (uint8_t)(i >> 24);
    d[1] = (uint8_t)(i >> 16);
    d[2] = (uint8_t)(i >> 8);
    d[3] = (uint8_t)i;
}

static int lookups_right(struct quicoff_table *t, const quicoff_conn_t *h, const uint32_t *id,
                         uint32_t n, uint32_t *bad_at)
{
    uint8_t d[8];
    for (uint32_t i = 0; i < n; i++) {
        big_cid(id[i], d);
        if (quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d, 8, NULL) != h[i]) {
            *bad_at = i;
            return 0;
        }
    }
    return 1;
}

static void test_capacity(void)
{
    struct quicoff_table *t = table_new(BIG, 8);
    /* A table this size is out of cache: its bursts prefetch level by level
     * (so the data-path checks below run that way); a small one must not
     * (the passes cost more than they hide when the entries are cached). */
    check(t->prefetch_levels, "a %u-entry table prefetches level by level", BIG);
    {
        struct quicoff_table *small = table_new(1000, 8);
        check(!small->prefetch_levels, "a 1000-entry table does not");
        quicoff_table_destroy(small);
    }
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k;
    tp_keys(16, &k);
    quicoff_conn_t *h = malloc(sizeof(*h) * BIG);
    uint32_t *id = malloc(sizeof(*id) * BIG);
    uint32_t bad = 0, added = 0;
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.direction = QUICOFF_DIR_RX;
    c.dcid_len = 8;
    c.keys = k;

    double t0 = now_s();
    for (uint32_t i = 0; i < BIG; i++) {
        id[i] = i;
        big_cid(i, c.dcid);
        if (quicoff_conn_add(t, &c, &h[i]) != QUICOFF_OK)
            break;
        added++;
    }
    double dt = now_s() - t0;
    printf("# added %u entries in %.2f s (%.0f adds/s)\n", added, dt, added / dt);
    check(added == BIG, "%u of %u entries added", added, BIG);
    check(tstats(t).connections == BIG, "connections %llu",
          (unsigned long long)tstats(t).connections);
    big_cid(BIG + 5, c.dcid);
    quicoff_conn_t x;
    check(quicoff_conn_add(t, &c, &x) == QUICOFF_TABLE_FULL, "one more: TABLE_FULL");

    t0 = now_s();
    check(lookups_right(t, h, id, BIG, &bad), "all %u found with their handles (first bad %u)",
          BIG, bad);
    printf("# %u lookups in %.2f s\n", BIG, now_s() - t0);

    /* the data path finds them too: a packet to a few of them */
    {
        quicoff_conn_t tx;
        check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, NULL, 0, &k,
                     &tx) == QUICOFF_TABLE_FULL,
              "TX does not fit either");
        quicoff_conn_remove(t, h[BIG - 1]);
        /* a TX entry's DCID length is how protect parses the short header */
        check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, c.dcid, 8,
                     &k, &tx) == QUICOFF_OK,
              "TX in the freed slot");
        int all = 1;
        for (uint32_t i = 0; i < 1000; i++) {
            uint32_t j = (i * 7919u) % (BIG - 1);
            uint8_t d[8];
            struct pk p;
            struct quicoff_result r;
            big_cid(id[j], d);
            all &= mk_short(w, tx, d, 8, i, 0, 2, &p, &r) == QUICOFF_OK &&
                   deliver(w, &p, NULL, &r) == QUICOFF_OK && r.conn == h[j];
        }
        check(all, "1000 packets reach their entries through the data path");
        quicoff_conn_remove(t, tx);
        big_cid(id[BIG - 1], c.dcid);
        check(quicoff_conn_add(t, &c, &h[BIG - 1]) == QUICOFF_OK, "re-add the last one");
    }

    /* remove half, re-add them with new DCIDs, until the index is rebuilt */
    struct qo_index *ix0 = atomic_load(&t->index);
    uint32_t next_id = BIG;
    int rebuilt = 0, cycles = 0, all_ok = 1;
    while (!rebuilt && cycles < 4) {
        cycles++;
        t0 = now_s();
        for (uint32_t i = (uint32_t)cycles & 1; i < BIG; i += 2)
            all_ok &= quicoff_conn_remove(t, h[i]) == QUICOFF_OK;
        check(tstats(t).connections == BIG / 2, "cycle %d: half removed", cycles);
        uint8_t d[8];
        int gone = 1;
        for (uint32_t i = (uint32_t)cycles & 1; i < BIG; i += 2) {
            big_cid(id[i], d);
            gone &= quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d, 8, NULL) ==
                    QUICOFF_CONN_INVALID;
        }
        check(gone, "cycle %d: removed entries are gone", cycles);
        for (uint32_t i = (uint32_t)cycles & 1; i < BIG; i += 2) {
            id[i] = next_id++;
            big_cid(id[i], c.dcid);
            all_ok &= quicoff_conn_add(t, &c, &h[i]) == QUICOFF_OK;
        }
        printf("# cycle %d: remove + re-add %u in %.2f s\n", cycles, BIG / 2, now_s() - t0);
        check(all_ok, "cycle %d: removes and re-adds ok", cycles);
        check(lookups_right(t, h, id, BIG, &bad), "cycle %d: all %u lookups right (first bad %u)",
              cycles, BIG, bad);
        rebuilt = atomic_load(&t->index) != ix0;
    }
    check(rebuilt, "the index was rebuilt (tombstones) within %d cycles", cycles);
    check(tstats(t).connections == BIG && quicoff_table_reclaim(t) == 0,
          "1M live, nothing left to reclaim");
    free(h);
    free(id);
    quicoff_worker_destroy(w);
    t0 = now_s();
    quicoff_table_destroy(t);
    printf("# destroy: %.2f s\n", now_s() - t0);
}

/* ------------------------------------------------------------------------ */

/* AES-128-GCM with OpenSSL directly: the test's own nonce and AAD. */
static int gcm_seal(const uint8_t *key, const uint8_t nonce[12], const uint8_t *aad, int aad_len,
                    const uint8_t *pt, int len, uint8_t *ct, uint8_t tag[16])
{
    EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();
    int outl, r = x && EVP_EncryptInit_ex(x, EVP_aes_128_gcm(), NULL, key, nonce) &&
                  EVP_EncryptUpdate(x, NULL, &outl, aad, aad_len) &&
                  EVP_EncryptUpdate(x, ct, &outl, pt, len) &&
                  EVP_EncryptFinal_ex(x, ct + outl, &outl) &&
                  EVP_CIPHER_CTX_ctrl(x, EVP_CTRL_GCM_GET_TAG, 16, tag);
    EVP_CIPHER_CTX_free(x);
    return r;
}

static void test_nonce_layouts(void)
{
    static const char *const names[3] = {"RFC9001", "MULTIPATH", "MULTIPATH_PATH_ID_LE"};
    static const uint32_t paths[2] = {7, 0x01020304};
    struct quicoff_table *t = table_new(16, 8);
    struct quicoff_worker *w = quicoff_worker_create(t);
    uint8_t d[8];
    tp_cid(17, d, 8);
    struct quicoff_packet_keys k;
    tp_keys(17, &k);
    const uint64_t pn = 0x1234;

    for (int pi = 0; pi < 2; pi++) {
        uint32_t path = paths[pi];
        struct pk ct[3];
        quicoff_conn_t tx[3];
        for (int L = 0; L < 3; L++) {
            struct quicoff_conn_config c;
            quicoff_conn_config_init(&c);
            c.dcid_len = 8;
            memcpy(c.dcid, d, 8);
            c.keys = k;
            c.path_id = path;
            c.nonce_layout = (quicoff_nonce_layout_t)L;
            check(quicoff_conn_add(t, &c, &tx[L]) == QUICOFF_OK, "TX %s path %#x", names[L], path);
            struct quicoff_result r;
            check(mk_short(w, tx[L], d, 8, pn, 0, 2, &ct[L], &r) == QUICOFF_OK, "protect");

            /* independent: nonce = IV ^ (4 path bytes in the layout's order || PN as 64-bit BE) */
            uint8_t nonce[12], pad[12] = {0};
            if (L == QUICOFF_NONCE_MULTIPATH) {
                pad[0] = (uint8_t)(path >> 24), pad[1] = (uint8_t)(path >> 16);
                pad[2] = (uint8_t)(path >> 8), pad[3] = (uint8_t)path;
            } else if (L == QUICOFF_NONCE_MULTIPATH_PATH_ID_LE) {
                pad[0] = (uint8_t)path, pad[1] = (uint8_t)(path >> 8);
                pad[2] = (uint8_t)(path >> 16), pad[3] = (uint8_t)(path >> 24);
            }
            pad[10] = (uint8_t)(pn >> 8);
            pad[11] = (uint8_t)pn;
            for (int i = 0; i < 12; i++)
                nonce[i] = k.iv[i] ^ pad[i];
            uint8_t hdr[11], payload[PAYLOAD_LEN], want[PAYLOAD_LEN + 16];
            struct tp_hdr h = {.dcid = d, .dcid_len = 8, .pn_len = 2, .pn = pn};
            payload_for(pn, payload);
            tp_build(hdr, &h, NULL, 0, NULL);
            check(gcm_seal(k.key, nonce, hdr, 11, payload, PAYLOAD_LEN, want, want + PAYLOAD_LEN),
                  "reference AES-GCM");
            check(memcmp(ct[L].b + 11, want, PAYLOAD_LEN + 16) == 0,
                  "%s path %#x: ciphertext+tag match nonce %s", names[L], path,
                  hex_str(nonce, 12));
        }
        check(memcmp(ct[0].b + 11, ct[1].b + 11, PAYLOAD_LEN) != 0 &&
                  memcmp(ct[0].b + 11, ct[2].b + 11, PAYLOAD_LEN) != 0 &&
                  memcmp(ct[1].b + 11, ct[2].b + 11, PAYLOAD_LEN) != 0,
              "path %#x: three layouts, three ciphertexts", path);

        for (int L = 0; L < 3; L++) {
            struct quicoff_conn_config c;
            quicoff_conn_config_init(&c);
            c.direction = QUICOFF_DIR_RX;
            c.dcid_len = 8;
            memcpy(c.dcid, d, 8);
            c.keys = k;
            c.path_id = path;
            c.nonce_layout = (quicoff_nonce_layout_t)L;
            quicoff_conn_t rx;
            check(quicoff_conn_add(t, &c, &rx) == QUICOFF_OK, "RX %s", names[L]);
            for (int M = 0; M < 3; M++) {
                struct quicoff_result r;
                quicoff_status_t st = deliver(w, &ct[M], NULL, &r);
                check(L == M ? st == QUICOFF_OK : st == QUICOFF_AUTH_FAILED,
                      "RX %s, packet %s: %s", names[L], names[M], S(st));
            }
            quicoff_conn_remove(t, rx);
        }
        for (int L = 0; L < 3; L++)
            quicoff_conn_remove(t, tx[L]);
    }

    /* path 0: every layout is RFC 9001's */
    struct pk c0[3];
    for (int L = 0; L < 3; L++) {
        struct quicoff_conn_config c;
        quicoff_conn_config_init(&c);
        c.dcid_len = 8;
        memcpy(c.dcid, d, 8);
        c.keys = k;
        c.nonce_layout = (quicoff_nonce_layout_t)L;
        quicoff_conn_t tx;
        struct quicoff_result r;
        check(quicoff_conn_add(t, &c, &tx) == QUICOFF_OK &&
                  mk_short(w, tx, d, 8, pn, 0, 2, &c0[L], &r) == QUICOFF_OK,
              "path 0, %s", names[L]);
        quicoff_conn_remove(t, tx);
    }
    check(memcmp(c0[0].b, c0[1].b, c0[0].len) == 0 && memcmp(c0[0].b, c0[2].b, c0[0].len) == 0,
          "path 0: all layouts give the same packet");
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* The far prefetches' level (index.h) against the kernel's word for the
 * CPU's vendor, not CPUID read again: L1 on AMD and Hygon, L2 elsewhere. */
static void test_far_prefetch_choice(void)
{
    char line[256], vendor[64] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "vendor_id : %63s", vendor) == 1)
            break;
    if (f)
        fclose(f);
    bool amd = strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0;
    check(qo_far_prefetch_into_l1 == amd, "far prefetches into %s on a CPU of vendor '%s'",
          qo_far_prefetch_into_l1 ? "L1" : "L2", vendor);
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    subtest("add/find/remove", test_add_find_remove);
    subtest("EXISTS and TABLE_FULL", test_exists_full);
    subtest("stale handles", test_stale_handles);
    subtest("grace period", test_grace_period);
    subtest("zero-length DCID by local address", test_zero_length_dcid);
    subtest("DCID lengths 0..20", test_dcid_lengths);
    subtest("counters per run of one connection", test_counters_per_run);
    subtest("key phases", test_key_phases);
    subtest("raw next keys", test_next_keys_raw);
    subtest("PN decoding", test_pn_decoding);
    subtest("PN reset", test_pn_reset);
    subtest("PN decoding: bad input", test_pn_decode_bad_input);
    subtest("largest_pn range", test_largest_pn_range);
    subtest("hash collisions", test_hash_collisions);
    subtest("TX usage threshold", test_tx_threshold);
    subtest("RX integrity threshold", test_rx_integrity);
    subtest("nonce layouts", test_nonce_layouts);
    subtest("far prefetch level by CPU vendor", test_far_prefetch_choice);
    if (!quick) {
        subtest("AES-CCM hard limit", test_ccm_hard_limit);
        subtest("1,000,000 entries", test_capacity);
    }
    return done_testing();
}
