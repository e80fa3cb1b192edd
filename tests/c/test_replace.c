/* SPDX-License-Identifier: Apache-2.0 */
/*
 * quicoff_conn_replace(): an entry replaced in place, as quicoff-dpdk's
 * ADD + REPLACE and the compat format's re-sent signaling need it
 * (docs/protocol.md §4.4, §3.7).
 *  - success: same handle, new keys and lookup key, counters and PN state
 *    restarted, the old keys gone;
 *  - every failure (bad DCID length, a lookup key another entry has, bad
 *    suite, other direction, stale handle) leaves the old entry exactly as it
 *    was: found, same keys, same counters;
 *  - a reader thread unprotecting packets of the entry while the control
 *    thread replaces it over and over never finds no entry (unknown_connection),
 *    whether the lookup key stays or moves between two DCIDs;
 *  - and never leaves a packet of the old entry's in the new entry's state
 *    (largest PN, counters): the state restarts as the new configuration says.
 */
#include <pthread.h>
#include <time.h>
#include <stdatomic.h>

#include "test_packets.h"
#include "test_util.h"

#define check(cond, ...)         \
    do {                         \
        int check_ = !!(cond);   \
        ok(check_, __VA_ARGS__); \
    } while (0)
#define S(st) quicoff_status_name(st)

static struct quicoff_table *table_new(uint32_t capacity)
{
    struct quicoff_table_config cfg = {.capacity = capacity, .local_cid_len = 8};
    quicoff_status_t st;
    struct quicoff_table *t = quicoff_table_create(&cfg, &st);
    if (!t) {
        ok(0, "table_create: %s", S(st));
        exit(done_testing());
    }
    return t;
}

static uint64_t packets_of(struct quicoff_table *t, quicoff_conn_t h)
{
    struct quicoff_conn_stats s;
    return quicoff_conn_stats(t, h, &s) == QUICOFF_OK ? s.packets : UINT64_MAX;
}

static void rx_cfg(struct quicoff_conn_config *c, const uint8_t *dcid, uint8_t dcid_len,
                   const struct quicoff_packet_keys *k)
{
    quicoff_conn_config_init(c);
    c->direction = QUICOFF_DIR_RX;
    c->dcid_len = dcid_len;
    memcpy(c->dcid, dcid, dcid_len);
    c->keys = *k;
}

/* A short-header packet of pn protected with a TX entry of keys k for dcid. */
struct pkt {
    uint8_t b[128];
    uint32_t len;
};

static void make_pkt(struct quicoff_table *t, struct quicoff_worker *w, const uint8_t *dcid,
                     const struct quicoff_packet_keys *k, uint64_t pn, struct pkt *out)
{
    quicoff_conn_t tx;
    if (tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, dcid, 8, k,
               &tx) != QUICOFF_OK) {
        ok(0, "TX entry for a test packet");
        return;
    }
    uint8_t payload[40];
    memset(payload, (int)pn, sizeof(payload));
    struct tp_hdr h = {.dcid = dcid, .dcid_len = 8, .pn_len = 2, .pn = pn};
    uint32_t len = (uint32_t)tp_build(out->b, &h, payload, sizeof(payload), NULL);
    out->len = len + QUICOFF_TAG_LEN;
    tp_protect(w, tx, out->b, 0, len, out->len, pn, NULL);
    quicoff_conn_remove(t, tx);
}

static quicoff_status_t rx(struct quicoff_worker *w, const struct pkt *p, struct quicoff_result *r)
{
    uint8_t buf[sizeof(p->b)];
    memcpy(buf, p->b, p->len);
    return tp_unprotect(w, buf, 0, p->len, NULL, r);
}

static void test_replace_ok(void)
{
    struct quicoff_table *t = table_new(16);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k1, k2;
    uint8_t d1[8], d2[8];
    tp_keys(1, &k1);
    tp_keys(2, &k2);
    tp_cid(1, d1, 8);
    tp_cid(2, d2, 8);
    struct pkt p1, p2, p2b;
    make_pkt(t, w, d1, &k1, 5, &p1);
    make_pkt(t, w, d1, &k2, 6, &p2);
    make_pkt(t, w, d2, &k2, 7, &p2b);

    struct quicoff_conn_config c;
    quicoff_conn_t h;
    rx_cfg(&c, d1, 8, &k1);
    check(quicoff_conn_add(t, &c, &h) == QUICOFF_OK, "add d1/k1");
    check(rx(w, &p1, NULL) == QUICOFF_OK, "k1 packet decrypts");
    check(packets_of(t, h) == 1, "one packet counted");

    /* same DCID, new keys */
    rx_cfg(&c, d1, 8, &k2);
    check(quicoff_conn_replace(t, h, &c) == QUICOFF_OK, "replace d1/k1 by d1/k2");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 8, NULL) == h, "same handle, found");
    check(packets_of(t, h) == 0, "counters restart");
    struct quicoff_result r;
    /* (the new HP key unmasks a garbage key phase bit: auth_failed or key_phase_unavailable) */
    check(rx(w, &p1, &r) != QUICOFF_OK && r.status != QUICOFF_UNKNOWN_CONNECTION,
          "old keys gone: %s", S(r.status));
    check(rx(w, &p2, &r) == QUICOFF_OK, "new keys decrypt: %s", S(r.status));

    /* a new DCID: the old one is no longer found */
    rx_cfg(&c, d2, 8, &k2);
    check(quicoff_conn_replace(t, h, &c) == QUICOFF_OK, "replace d1 by d2");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d2, 8, NULL) == h, "d2 found, same handle");
    check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 8, NULL) == QUICOFF_CONN_INVALID,
          "d1 gone");
    check(rx(w, &p2b, &r) == QUICOFF_OK, "d2 packet decrypts: %s", S(r.status));
    check(rx(w, &p2, &r) == QUICOFF_UNKNOWN_CONNECTION, "d1 packet: unknown");

    struct quicoff_table_stats ts;
    quicoff_table_stats(t, &ts);
    check(ts.connections == 1, "one live entry (%llu)", (unsigned long long)ts.connections);
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

static void test_replace_fails_cleanly(void)
{
    struct quicoff_table *t = table_new(16);
    struct quicoff_worker *w = quicoff_worker_create(t);
    struct quicoff_packet_keys k1, k2;
    uint8_t d1[8], d2[8];
    tp_keys(11, &k1);
    tp_keys(12, &k2);
    tp_cid(11, d1, 8);
    tp_cid(12, d2, 8);
    struct pkt p1;
    make_pkt(t, w, d1, &k1, 9, &p1);

    struct quicoff_conn_config c;
    quicoff_conn_t h, other, tx;
    rx_cfg(&c, d1, 8, &k1);
    c.largest_pn = 3;
    check(quicoff_conn_add(t, &c, &h) == QUICOFF_OK, "add d1");
    rx_cfg(&c, d2, 8, &k2);
    check(quicoff_conn_add(t, &c, &other) == QUICOFF_OK, "add d2 (another entry)");
    check(tp_add(t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_128_GCM, 0, d1, 8, &k1,
                 &tx) == QUICOFF_OK,
          "a TX entry");
    check(rx(w, &p1, NULL) == QUICOFF_OK, "packet decrypts");
    struct quicoff_conn_stats before, after;
    quicoff_conn_stats(t, h, &before);

    struct {
        const char *what;
        quicoff_status_t want;
        int dcid_len, use_d2, bad_suite, tx_dir;
    } cases[] = {
        {"5-byte RX DCID (table parses 8)", QUICOFF_INVALID_ARGUMENT, 5, 0, 0, 0},
        {"DCID of another entry", QUICOFF_EXISTS, 8, 1, 0, 0},
        {"bad suite", QUICOFF_INVALID_ARGUMENT, 8, 0, 1, 0},
        {"TX config for an RX entry", QUICOFF_INVALID_ARGUMENT, 8, 0, 0, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rx_cfg(&c, cases[i].use_d2 ? d2 : d1, (uint8_t)cases[i].dcid_len, &k2);
        if (cases[i].bad_suite)
            c.suite = QUICOFF_SUITE_COUNT;
        if (cases[i].tx_dir)
            c.direction = QUICOFF_DIR_TX;
        quicoff_status_t st = quicoff_conn_replace(t, h, &c);
        check(st == cases[i].want, "%s: %s", cases[i].what, S(st));
        check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d1, 8, NULL) == h,
              "%s: the old entry is still found", cases[i].what);
        check(quicoff_conn_find(t, QUICOFF_LEVEL_ONE_RTT, d2, 8, NULL) == other,
              "%s: the other entry too", cases[i].what);
        quicoff_conn_stats(t, h, &after);
        check(memcmp(&before, &after, sizeof(before)) == 0, "%s: counters and PN state kept",
              cases[i].what);
        check(rx(w, &p1, NULL) == QUICOFF_OK, "%s: the old keys still decrypt", cases[i].what);
        quicoff_conn_stats(t, h, &before); /* that packet counted */
    }
    rx_cfg(&c, d1, 8, &k2);
    check(quicoff_conn_replace(t, h + (1ull << 32), &c) == QUICOFF_UNKNOWN_CONNECTION,
          "stale handle: unknown_connection");
    check(quicoff_conn_replace(t, tx, &c) == QUICOFF_INVALID_ARGUMENT,
          "RX config for a TX entry: invalid_argument");
    check(quicoff_conn_replace(NULL, h, &c) == QUICOFF_INVALID_ARGUMENT &&
              quicoff_conn_replace(t, h, NULL) == QUICOFF_INVALID_ARGUMENT,
          "NULL table / config: invalid_argument");
    check(rx(w, &p1, NULL) == QUICOFF_OK, "old entry intact after all that");
    quicoff_worker_destroy(w);
    quicoff_table_destroy(t);
}

/* ------------------------------------------------------------ under load */

struct race {
    struct quicoff_table *t;
    struct pkt p[2]; /* a packet for each DCID, each with its own keys */
    _Atomic int stop;
    _Atomic unsigned long unknown, ok, other;
};

static void *reader(void *arg)
{
    struct race *R = arg;
    struct quicoff_worker *w = quicoff_worker_create(R->t);
    unsigned long i = 0;
    while (!atomic_load(&R->stop)) {
        struct quicoff_result r;
        quicoff_status_t st = rx(w, &R->p[i++ & 1], &r);
        if (st == QUICOFF_UNKNOWN_CONNECTION)
            atomic_fetch_add(&R->unknown, 1);
        else if (st == QUICOFF_OK)
            atomic_fetch_add(&R->ok, 1);
        else
            atomic_fetch_add(&R->other, 1);
    }
    quicoff_worker_destroy(w);
    return NULL;
}

/* moving: each replace moves the entry to the other DCID; the packets of
 * both DCIDs are read alternately. */
static void race(int moving)
{
    struct race R = {.t = table_new(64)};
    struct quicoff_worker *w = quicoff_worker_create(R.t);
    struct quicoff_packet_keys k;
    uint8_t d[2][8];
    tp_keys(21, &k);
    tp_cid(21, d[0], 8);
    tp_cid(22, d[1], 8);
    make_pkt(R.t, w, d[0], &k, 1, &R.p[0]);
    make_pkt(R.t, w, moving ? d[1] : d[0], &k, 2, &R.p[1]);
    quicoff_worker_destroy(w);

    struct quicoff_conn_config c;
    quicoff_conn_t h;
    rx_cfg(&c, d[0], 8, &k);
    check(quicoff_conn_add(R.t, &c, &h) == QUICOFF_OK, "add");
    pthread_t th;
    pthread_create(&th, NULL, reader, &R);
    unsigned failures = 0, n = 20000;
    for (unsigned i = 1; i <= n; i++) {
        rx_cfg(&c, d[moving ? i & 1 : 0], 8, &k);
        if (quicoff_conn_replace(R.t, h, &c) != QUICOFF_OK)
            failures++;
        if (i % 64 == 0)
            quicoff_table_reclaim(R.t);
    }
    atomic_store(&R.stop, 1);
    pthread_join(th, NULL);
    check(failures == 0, "%u replaces, %u failed", n, failures);
    unsigned long total = R.unknown + R.ok + R.other;
    if (moving) {
        /* the reader's packet matches only while its DCID is the live one:
         * misses are by design here; what must not happen is anything else
         * (a torn entry, a packet decrypting wrong) */
        check(R.other == 0, "moving: %lu lookups, %lu ok, %lu unknown, %lu other", total, R.ok,
              R.unknown, R.other);
    } else {
        check(R.unknown == 0 && R.other == 0 && R.ok > 0,
              "same DCID: %lu lookups, %lu ok, %lu unknown (must be 0), %lu other", total, R.ok,
              R.unknown, R.other);
    }
    quicoff_table_destroy(R.t);
}

/* The state a replace restarts must stay restarted: a packet of the old
 * entry that the reader is opening while the control thread replaces it must
 * not write its largest PN or counters into the new entry (which then starts
 * with another connection's PN space: its short PNs decode wrong, every
 * packet fails). Each round: entry with keys k1 (the reader's packets open),
 * replaced by one with k2 and no PN yet; once the reader has finished a few
 * more packets (all failing now), the new entry must show no packet and no
 * largest PN. Before state_gen and the wait in quicoff_conn_replace, 30-40%
 * of the rounds failed on a loaded 2-core machine. */
/* Waiting for the reader: its CPU, on a busy machine, may be this one. */
static void nap(void)
{
    struct timespec ts = {0, 10000};
    nanosleep(&ts, NULL);
}

static void test_race_restarted_state(void)
{
    struct race R = {.t = table_new(64)};
    struct quicoff_worker *w = quicoff_worker_create(R.t);
    struct quicoff_packet_keys k1, k2;
    uint8_t d[8];
    tp_keys(31, &k1);
    tp_keys(32, &k2);
    tp_cid(31, d, 8);
    make_pkt(R.t, w, d, &k1, 1000, &R.p[0]);
    R.p[1] = R.p[0];
    quicoff_worker_destroy(w);

    struct quicoff_conn_config c;
    quicoff_conn_t h;
    rx_cfg(&c, d, 8, &k2);
    check(quicoff_conn_add(R.t, &c, &h) == QUICOFF_OK, "add");
    pthread_t th;
    pthread_create(&th, NULL, reader, &R);
    unsigned rounds = 1000, dirty = 0, failures = 0;
    for (unsigned i = 0; i < rounds; i++) {
        rx_cfg(&c, d, 8, &k1);
        failures += quicoff_conn_replace(R.t, h, &c) != QUICOFF_OK;
        unsigned long ok0 = atomic_load(&R.ok);
        while (atomic_load(&R.ok) < ok0 + 2) /* the reader's packets open */
            nap();
        rx_cfg(&c, d, 8, &k2);
        failures += quicoff_conn_replace(R.t, h, &c) != QUICOFF_OK;
        unsigned long n0 = atomic_load(&R.ok) + atomic_load(&R.other);
        while (atomic_load(&R.ok) + atomic_load(&R.other) < n0 + 2) /* in flight: done */
            nap();
        struct quicoff_conn_stats st;
        quicoff_conn_stats(R.t, h, &st);
        if (st.packets != 0 || st.largest_pn != UINT64_MAX) {
            if (dirty++ < 3)
                printf("# round %u: the new entry has %llu packets, largest PN %llu\n", i,
                       (unsigned long long)st.packets, (unsigned long long)st.largest_pn);
        }
        if (i % 64 == 0)
            quicoff_table_reclaim(R.t);
    }
    atomic_store(&R.stop, 1);
    pthread_join(th, NULL);
    check(failures == 0, "%u replaces, %u failed", 2 * rounds, failures);
    check(dirty == 0,
          "%u of %u replaces under a reader left the old entry's PN / counters in "
          "the new one",
          dirty, rounds);
    quicoff_table_destroy(R.t);
}

static void test_race_same_dcid(void)
{
    race(0);
}

static void test_race_moving_dcid(void)
{
    race(1);
}

int main(void)
{
    subtest("replace: same handle, new keys / DCID", test_replace_ok);
    subtest("replace: a failure changes nothing", test_replace_fails_cleanly);
    subtest("replace under a reader: never no entry (same DCID)", test_race_same_dcid);
    subtest("replace under a reader: moving DCID", test_race_moving_dcid);
    subtest("replace under a reader: the new entry's state starts clean",
            test_race_restarted_state);
    return done_testing();
}
