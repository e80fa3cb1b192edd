/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One control-plane writer against one data-plane reader, per the threading
 * contract in quicoff.h:
 *  - the writer adds, updates (same keys, next keys, roll, threshold, fail
 *    action) and removes "churned" connections continuously, updates the
 *    "live" ones (same keys, next keys, threshold: never a change a packet
 *    could notice) and calls quicoff_table_reclaim;
 *  - the reader runs unprotect bursts (all four suites) mixing packets for
 *    live and churned connections, and protects one packet per burst with a
 *    live TX entry the writer keeps re-keying with the same keys.
 * Checks: zero failures on live entries (every plaintext exact, every
 * protected packet byte-identical to the precomputed one); churned entries
 * only OK or UNKNOWN_CONNECTION; at the end nothing is left to reclaim.
 *
 * Usage: test_concurrency [seconds]   (default 2)
 */
#include "test_packets.h"
#include "test_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define CID_LEN 8
#define NLIVE 16
#define NCHURN 64
#define PAYLOAD_LEN 40
#define BURST 32

struct conn_def {
    quicoff_suite_t suite;
    uint8_t dcid[CID_LEN];
    struct quicoff_packet_keys keys, next_keys;
    uint64_t pn;
    uint8_t pkt[128];   /* protected */
    uint8_t plain[128]; /* header + payload in clear */
    uint32_t len;
    /* writer-side state (churned) */
    quicoff_conn_t h;
    int present, rolled;
};

static struct conn_def live[NLIVE], churn[NCHURN];
static struct quicoff_table *table;
static quicoff_conn_t live_h[NLIVE];
static quicoff_conn_t tx_live;
static uint8_t tx_plain[128], tx_expected[128];
static uint32_t tx_len;
static _Atomic int stop;

struct reader_stats {
    uint64_t bursts, live_ok, live_bad, churn_ok, churn_old, churn_unknown, churn_bad, tx_ok,
        tx_bad;
    quicoff_status_t first_bad;
};
static struct reader_stats rs;

struct writer_stats {
    uint64_t adds, removes, updates, rolls, reclaims, errors;
    quicoff_status_t first_error;
};
static struct writer_stats ws;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint32_t xorshift(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

static quicoff_status_t add_rx(struct conn_def *c, quicoff_conn_t *h)
{
    struct quicoff_conn_config cfg;
    quicoff_conn_config_init(&cfg);
    cfg.direction = QUICOFF_DIR_RX;
    cfg.suite = c->suite;
    cfg.dcid_len = CID_LEN;
    memcpy(cfg.dcid, c->dcid, CID_LEN);
    cfg.keys = c->keys;
    cfg.has_next_keys = true;
    cfg.next_keys = c->next_keys;
    /* the packet's PN is the largest seen: a roll then leaves it in the old
     * phase, where it still opens with the old keys */
    cfg.largest_pn = c->pn;
    return quicoff_conn_add(table, &cfg, h);
}

/* Makes the connection's one packet with a temporary TX entry. */
static void make_packet(struct conn_def *c, uint32_t seed, struct quicoff_worker *w)
{
    tp_cid(seed, c->dcid, CID_LEN);
    tp_keys(seed, &c->keys);
    tp_keys(seed + 100000, &c->next_keys);
    c->suite = (quicoff_suite_t)(seed % QUICOFF_SUITE_COUNT);
    c->pn = 1000 + seed;
    uint8_t payload[PAYLOAD_LEN];
    for (int i = 0; i < PAYLOAD_LEN; i++)
        payload[i] = (uint8_t)(seed * 13 + (uint32_t)i);
    struct tp_hdr hd = {.dcid = c->dcid, .dcid_len = CID_LEN, .pn_len = 2, .pn = c->pn};
    uint32_t n = (uint32_t)tp_build(c->pkt, &hd, payload, PAYLOAD_LEN, NULL);
    memcpy(c->plain, c->pkt, n);
    c->len = n + QUICOFF_TAG_LEN;
    quicoff_conn_t tx;
    quicoff_status_t st = tp_add(table, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, c->suite, 0,
                                 c->dcid, CID_LEN, &c->keys, &tx);
    if (st == QUICOFF_OK)
        st = tp_protect(w, tx, c->pkt, 0, n, c->len, c->pn, NULL);
    if (st != QUICOFF_OK) {
        ok(0, "setup: protect packet %u: %s", seed, quicoff_status_name(st));
        exit(1);
    }
    quicoff_conn_remove(table, tx);
}

static void *reader(void *arg)
{
    (void)arg;
    struct quicoff_worker *w = quicoff_worker_create(table);
    uint32_t seed = 12345;
    static uint8_t bufs[BURST][128];
    struct quicoff_pkt pk[BURST];
    struct quicoff_result res[BURST];
    const struct conn_def *which[BURST];
    uint8_t txbuf[128];

    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        for (int i = 0; i < BURST; i++) {
            uint32_t r = xorshift(&seed);
            const struct conn_def *c = (r & 1) ? &live[(r >> 1) % NLIVE]
                                               : &churn[(r >> 1) % NCHURN];
            which[i] = c;
            memcpy(bufs[i], c->pkt, c->len);
            pk[i] = (struct quicoff_pkt){.data = bufs[i], .end = c->len, .cap = c->len};
        }
        quicoff_unprotect_burst(w, pk, res, BURST);
        for (int i = 0; i < BURST; i++) {
            const struct conn_def *c = which[i];
            int is_live = c >= live && c < live + NLIVE;
            quicoff_status_t st = res[i].status;
            int plain_ok = st == QUICOFF_OK && res[i].payload_len == PAYLOAD_LEN &&
                           memcmp(bufs[i], c->plain, c->len - QUICOFF_TAG_LEN) == 0;
            if (is_live) {
                if (plain_ok && res[i].flags == 0 && res[i].pn == c->pn) {
                    rs.live_ok++;
                } else {
                    if (!rs.live_bad)
                        rs.first_bad = st;
                    rs.live_bad++;
                }
            } else if (plain_ok) {
                rs.churn_ok++;
                if (res[i].flags & QUICOFF_FLAG_OLD_KEYS)
                    rs.churn_old++;
            } else if (st == QUICOFF_UNKNOWN_CONNECTION && memcmp(bufs[i], c->pkt, c->len) == 0) {
                rs.churn_unknown++;
            } else {
                if (!rs.churn_bad && !rs.live_bad)
                    rs.first_bad = st;
                rs.churn_bad++;
            }
        }
        /* one protect on the live TX entry: must give the precomputed bytes */
        memcpy(txbuf, tx_plain, tx_len - QUICOFF_TAG_LEN);
        struct quicoff_result r;
        struct quicoff_pkt p = {.data = txbuf,
                                .end = tx_len - QUICOFF_TAG_LEN,
                                .cap = tx_len,
                                .conn = tx_live,
                                .pn = 77};
        quicoff_protect_burst(w, &p, &r, 1);
        if (r.status == QUICOFF_OK && memcmp(txbuf, tx_expected, tx_len) == 0)
            rs.tx_ok++;
        else
            rs.tx_bad++;
        rs.bursts++;
    }
    quicoff_worker_destroy(w);
    return NULL;
}

static void werr(quicoff_status_t st, quicoff_status_t want)
{
    if (st != want) {
        if (!ws.errors)
            ws.first_error = st;
        ws.errors++;
    }
}

static quicoff_status_t upd(quicoff_conn_t h, uint32_t what, uint32_t gen,
                            const struct quicoff_packet_keys *k, uint64_t threshold)
{
    struct quicoff_conn_update u;
    memset(&u, 0, sizeof(u));
    u.what = what;
    u.key_generation = gen;
    if (k)
        u.keys = *k;
    u.usage_threshold = threshold;
    u.fail_action = (threshold & 1) ? QUICOFF_FAIL_PASS : QUICOFF_FAIL_DROP;
    return quicoff_conn_update(table, h, &u);
}

static void writer(double seconds)
{
    uint32_t seed = 777;
    double end = now_s() + seconds;
    uint64_t iter = 0;
    while ((iter & 63) || now_s() < end) {
        iter++;
        uint32_t r = xorshift(&seed);
        if ((r & 7) == 0) {
            /* live entries: changes no packet can notice */
            int i = (int)((r >> 3) % NLIVE);
            struct conn_def *c = &live[i];
            switch ((r >> 8) % 3) {
            case 0:
                werr(upd(live_h[i], QUICOFF_UPDATE_KEYS, 0, &c->keys, 0), QUICOFF_OK);
                break;
            case 1:
                werr(upd(live_h[i], QUICOFF_UPDATE_KEYS, 1, &c->next_keys, 0), QUICOFF_OK);
                break;
            default:
                werr(upd(live_h[i], QUICOFF_UPDATE_THRESHOLD | QUICOFF_UPDATE_FAIL_ACTION, 0, NULL,
                         (uint64_t)1 << 40 | r),
                     QUICOFF_OK);
                break;
            }
            ws.updates++;
        } else if ((r & 7) == 1) {
            struct quicoff_packet_keys k;
            tp_keys(999, &k);
            werr(upd(tx_live, QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_THRESHOLD, 0, &k,
                     (uint64_t)1 << 40),
                 QUICOFF_OK);
            ws.updates++;
        } else {
            struct conn_def *c = &churn[(r >> 3) % NCHURN];
            if (!c->present) {
                werr(add_rx(c, &c->h), QUICOFF_OK);
                c->present = 1;
                c->rolled = 0;
                ws.adds++;
            } else {
                uint32_t gen = c->rolled ? 1 : 0;
                switch ((r >> 12) % 6) {
                case 0:
                case 1:
                    werr(quicoff_conn_remove(table, c->h), QUICOFF_OK);
                    c->present = 0;
                    ws.removes++;
                    break;
                case 2: /* same keys for the current generation */
                    werr(upd(c->h, QUICOFF_UPDATE_KEYS, gen, gen ? &c->next_keys : &c->keys, 0),
                         QUICOFF_OK);
                    ws.updates++;
                    break;
                case 3: /* next keys again (only before the roll: after it,
                         * generation 2 would replace the keys the packet needs) */
                    if (!c->rolled) {
                        werr(upd(c->h, QUICOFF_UPDATE_KEYS, 1, &c->next_keys, 0), QUICOFF_OK);
                        ws.updates++;
                    }
                    break;
                case 4:
                    if (!c->rolled) {
                        werr(upd(c->h, QUICOFF_UPDATE_ROLL, 0, NULL, 0), QUICOFF_OK);
                        c->rolled = 1;
                        ws.rolls++;
                    }
                    break;
                default:
                    werr(upd(c->h, QUICOFF_UPDATE_THRESHOLD | QUICOFF_UPDATE_FAIL_ACTION, 0, NULL,
                             1 + (r >> 20)),
                         QUICOFF_OK);
                    ws.updates++;
                    break;
                }
            }
        }
        if ((iter & 31) == 0) {
            quicoff_table_reclaim(table);
            ws.reclaims++;
        }
    }
}

int main(int argc, char **argv)
{
    test_current = "concurrency";
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    if (seconds <= 0)
        seconds = 2.0;
    struct quicoff_table_config cfg = {.capacity = 4096, .local_cid_len = CID_LEN};
    table = quicoff_table_create(&cfg, NULL);
    if (!ok(table != NULL, "table")) {
        done_testing();
        return 1;
    }
    /* setup (single-threaded) */
    struct quicoff_worker *w = quicoff_worker_create(table);
    int setup_ok = 1;
    for (int i = 0; i < NLIVE; i++) {
        make_packet(&live[i], (uint32_t)i + 1, w);
        setup_ok &= add_rx(&live[i], &live_h[i]) == QUICOFF_OK;
    }
    for (int i = 0; i < NCHURN; i++)
        make_packet(&churn[i], (uint32_t)(NLIVE + i + 1), w);
    {
        struct quicoff_packet_keys k;
        uint8_t d[CID_LEN] = {9, 9, 9, 9, 9, 9, 9, 9}, payload[PAYLOAD_LEN] = {7};
        tp_keys(999, &k);
        setup_ok &= tp_add(table, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, QUICOFF_AES_256_GCM, 0, d,
                           CID_LEN, &k, &tx_live) == QUICOFF_OK;
        struct tp_hdr hd = {.dcid = d, .dcid_len = CID_LEN, .pn_len = 2, .pn = 77};
        uint32_t n = (uint32_t)tp_build(tx_plain, &hd, payload, PAYLOAD_LEN, NULL);
        tx_len = n + QUICOFF_TAG_LEN;
        memcpy(tx_expected, tx_plain, n);
        setup_ok &= tp_protect(w, tx_live, tx_expected, 0, n, tx_len, 77, NULL) == QUICOFF_OK;
    }
    quicoff_worker_destroy(w);
    ok(setup_ok, "setup: %d live RX entries, %d churned connections, 1 TX entry", NLIVE, NCHURN);

    pthread_t th;
    atomic_store(&stop, 0);
    if (pthread_create(&th, NULL, reader, NULL) != 0) {
        ok(0, "pthread_create");
        return done_testing();
    }
    double t0 = now_s();
    writer(seconds);
    atomic_store(&stop, 1);
    pthread_join(th, NULL);
    double dt = now_s() - t0;

    printf("# %.1f s: writer %llu adds, %llu removes, %llu updates, %llu rolls, %llu reclaims\n",
           dt, (unsigned long long)ws.adds, (unsigned long long)ws.removes,
           (unsigned long long)ws.updates, (unsigned long long)ws.rolls,
           (unsigned long long)ws.reclaims);
    printf(
        "# reader %llu bursts: live %llu ok; churned %llu ok (%llu with old keys), %llu unknown;"
        " tx %llu ok\n",
        (unsigned long long)rs.bursts, (unsigned long long)rs.live_ok,
        (unsigned long long)rs.churn_ok, (unsigned long long)rs.churn_old,
        (unsigned long long)rs.churn_unknown, (unsigned long long)rs.tx_ok);

    ok(ws.errors == 0, "writer: every call returned the expected status (%llu errors, first %s)",
       (unsigned long long)ws.errors, ws.errors ? quicoff_status_name(ws.first_error) : "-");
    ok(rs.live_bad == 0, "live entries: %llu failures in %llu packets (first: %s)",
       (unsigned long long)rs.live_bad, (unsigned long long)(rs.live_ok + rs.live_bad),
       rs.live_bad ? quicoff_status_name(rs.first_bad) : "-");
    ok(rs.churn_bad == 0, "churned entries: only OK or UNKNOWN_CONNECTION (%llu others, first %s)",
       (unsigned long long)rs.churn_bad, rs.churn_bad ? quicoff_status_name(rs.first_bad) : "-");
    ok(rs.tx_bad == 0, "protect on the re-keyed TX entry: %llu wrong of %llu",
       (unsigned long long)rs.tx_bad, (unsigned long long)(rs.tx_ok + rs.tx_bad));
    ok(rs.bursts > 0 && rs.churn_ok > 0 && rs.churn_unknown > 0 && ws.adds > 0 && ws.removes > 0 &&
           ws.rolls > 0 && rs.churn_old > 0,
       "both sides did real work (churned ok, unknown and old-key packets all seen)");

    /* quiescent now: everything retired can go */
    quicoff_table_reclaim(table);
    struct quicoff_table_stats ts;
    quicoff_table_stats(table, &ts);
    uint64_t present = 0;
    for (int i = 0; i < NCHURN; i++)
        present += (uint64_t)churn[i].present;
    ok(ts.retired_pending == 0, "retired_pending reaches 0 (%llu)",
       (unsigned long long)ts.retired_pending);
    ok(ts.connections == NLIVE + 1 + present,
       "connections %llu == %llu live + present churned + TX", (unsigned long long)ts.connections,
       (unsigned long long)(NLIVE + 1 + present));
    ok(ts.rx_packets == rs.live_ok + rs.churn_ok && ts.unknown_connection == rs.churn_unknown &&
           ts.tx_packets == NLIVE + NCHURN + 1 + rs.tx_ok,
       "table counters agree with the reader (rx %llu, unknown %llu, tx %llu)",
       (unsigned long long)ts.rx_packets, (unsigned long long)ts.unknown_connection,
       (unsigned long long)ts.tx_packets);
    quicoff_table_destroy(table);
    return done_testing();
}
