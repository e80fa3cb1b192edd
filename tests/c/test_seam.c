/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an application above the library needs so it keeps no second table
 * and no parser of its own: the entry's user pointer and the DCID in every
 * result, the header peek (the data path's own parse), and the unprotect of
 * many datagrams of coalesced packets in one call, checked against the
 * one-datagram call packet by packet and byte for byte.
 */
#include "quicoff/quicoff.h"
#include "test_packets.h"
#include "test_util.h"

#define CID_LEN 8
#define N_DGRAMS 40 /* more than one chunk of 32 */
#define DG_CAP 1200

static struct quicoff_table *table;
static struct quicoff_worker *worker;

/* A TX and an RX entry of the same keys for (level, cid); the RX one carries user. */
static quicoff_conn_t pair(quicoff_level_t level, uint32_t seed, const uint8_t *cid, void *user,
                           quicoff_conn_t *tx)
{
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.level = level;
    c.dcid_len = CID_LEN;
    memcpy(c.dcid, cid, CID_LEN);
    tp_keys(seed, &c.keys);
    c.user = (char *)user + 1; /* the TX entry's differs */
    quicoff_conn_t rx = QUICOFF_CONN_INVALID;
    ok(quicoff_conn_add(table, &c, tx) == QUICOFF_OK, "add tx %u", seed);
    c.direction = QUICOFF_DIR_RX;
    c.user = user;
    ok(quicoff_conn_add(table, &c, &rx) == QUICOFF_OK, "add rx %u", seed);
    return rx;
}

/* Appends one protected packet of level to buf at off; returns its end. */
static uint32_t put_packet(uint8_t *buf, uint32_t off, quicoff_conn_t tx, quicoff_level_t level,
                           const uint8_t *cid, uint64_t pn, size_t payload_len)
{
    uint8_t payload[256];
    memset(payload, (int)(pn & 0xff), sizeof(payload));
    struct tp_hdr h = {.is_long = level != QUICOFF_LEVEL_ONE_RTT,
                       .version = QUICOFF_VERSION_1,
                       .level = level,
                       .dcid = cid,
                       .dcid_len = CID_LEN,
                       .scid = cid,
                       .scid_len = 4,
                       .pn_len = 2,
                       .pn = pn};
    uint32_t len = off + (uint32_t)tp_build(buf + off, &h, payload, payload_len, NULL);
    struct quicoff_result r;
    ok(tp_protect(worker, tx, buf, off, len, DG_CAP, pn, &r) == QUICOFF_OK, "protect pn %llu",
       (unsigned long long)pn);
    return len + QUICOFF_TAG_LEN;
}

static void test_user_and_dcid(void)
{
    uint8_t cid[CID_LEN];
    tp_cid(1, cid, CID_LEN);
    static char mine[4];
    quicoff_conn_t tx;
    quicoff_conn_t rx = pair(QUICOFF_LEVEL_ONE_RTT, 1, cid, mine, &tx);
    ok(quicoff_conn_user(table, rx) == mine, "quicoff_conn_user");
    ok(quicoff_conn_user(table, QUICOFF_CONN_INVALID) == NULL, "unknown handle: NULL");

    uint8_t buf[DG_CAP];
    struct quicoff_pkt p = {.data = buf, .cap = DG_CAP, .conn = tx, .pn = 7};
    struct tp_hdr h = {.dcid = cid, .dcid_len = CID_LEN, .pn_len = 1, .pn = 7};
    uint8_t payload[40] = {0};
    p.end = (uint32_t)tp_build(buf, &h, payload, sizeof(payload), NULL);
    struct quicoff_result r;
    quicoff_protect_burst(worker, &p, &r, 1);
    ok(r.status == QUICOFF_OK && r.user == mine + 1, "TX result: its entry's user");
    ok(r.dcid_off == 1 && r.dcid_len == CID_LEN, "TX result: DCID at 1, %u bytes", r.dcid_len);

    uint32_t len = p.end + QUICOFF_TAG_LEN;
    tp_unprotect(worker, buf, 0, len, NULL, &r);
    ok(r.status == QUICOFF_OK && r.user == mine && r.conn == rx, "RX result: entry and user");
    ok(r.dcid_off == 1 && r.dcid_len == CID_LEN && memcmp(buf + 1, cid, CID_LEN) == 0,
       "RX result: DCID");

    struct quicoff_conn_update u = {.what = QUICOFF_UPDATE_USER, .user = mine + 2};
    ok(quicoff_conn_update(table, rx, &u) == QUICOFF_OK, "update the user pointer");
    ok(quicoff_conn_user(table, rx) == mine + 2, "the new pointer");
    struct quicoff_conn_stats st;
    quicoff_conn_stats(table, rx, &st);
    ok(st.packets == 1, "the entry kept its state through the update");

    /* an unknown DCID: no entry, no user, but the DCID for the caller */
    buf[3] ^= 1;
    tp_unprotect(worker, buf, 0, len, NULL, &r);
    ok(r.status == QUICOFF_UNKNOWN_CONNECTION && r.user == NULL && r.conn == QUICOFF_CONN_INVALID,
       "unknown: no entry, no user");
    ok(r.dcid_off == 1 && r.dcid_len == CID_LEN, "unknown: the DCID still given");
    /* a short header too short for its DCID: none given */
    tp_unprotect(worker, buf, 0, 4, NULL, &r);
    ok(r.status == QUICOFF_MALFORMED && r.dcid_off == 0 && r.dcid_len == 0, "truncated: no DCID");
    quicoff_conn_remove(table, rx);
    quicoff_conn_remove(table, tx);
}

static void test_peek(void)
{
    uint8_t buf[128], cid[CID_LEN];
    tp_cid(2, cid, CID_LEN);
    struct quicoff_header_info hi;
    static const uint32_t versions[2] = {QUICOFF_VERSION_1, QUICOFF_VERSION_2};
    for (unsigned v = 0; v < 2; v++) {
        for (unsigned level = QUICOFF_LEVEL_INITIAL; level < QUICOFF_LEVEL_COUNT; level++) {
            struct tp_hdr h = {.is_long = 1,
                               .version = versions[v],
                               .level = level,
                               .dcid = cid,
                               .dcid_len = 5,
                               .pn_len = 2,
                               .pn = 1};
            uint32_t pn_off;
            size_t n = tp_build(buf, &h, buf + 100, 20, &pn_off) + QUICOFF_TAG_LEN;
            quicoff_status_t st = quicoff_peek_header(buf, (uint32_t)n, 0, CID_LEN, &hi);
            ok(st == QUICOFF_OK && hi.long_header && hi.fixed_bit && hi.level == level &&
                   hi.version == versions[v] && hi.long_type == tp_long_type(versions[v], level) &&
                   hi.dcid_off == 6 && hi.dcid_len == 5 && hi.pn_off == pn_off &&
                   hi.packet_end == n,
               "v%u level %u", v + 1, level);
        }
    }
    struct tp_hdr s = {.dcid = cid, .dcid_len = CID_LEN, .pn_len = 1};
    size_t n = tp_build(buf, &s, buf + 100, 20, NULL) + QUICOFF_TAG_LEN;
    ok(quicoff_peek_header(buf, (uint32_t)n, 0, CID_LEN, &hi) == QUICOFF_OK && !hi.long_header &&
           hi.level == QUICOFF_LEVEL_ONE_RTT && hi.dcid_off == 1 && hi.dcid_len == CID_LEN &&
           hi.pn_off == 1 + CID_LEN && hi.packet_end == n,
       "short header");
    buf[0] &= (uint8_t)~0x40;
    ok(quicoff_peek_header(buf, (uint32_t)n, 0, CID_LEN, &hi) == QUICOFF_OK && !hi.fixed_bit,
       "greased fixed bit: reported, not refused");
    ok(quicoff_peek_header(buf, CID_LEN, 0, CID_LEN, &hi) == QUICOFF_MALFORMED && hi.dcid_len == 0,
       "short header cut inside its DCID");

    /* an unknown version: unsupported, but the DCID where RFC 8999 puts it */
    struct tp_hdr l = {.is_long = 1,
                       .version = QUICOFF_VERSION_1,
                       .level = QUICOFF_LEVEL_HANDSHAKE,
                       .dcid = cid,
                       .dcid_len = CID_LEN,
                       .pn_len = 1};
    n = tp_build(buf, &l, buf + 100, 20, NULL) + QUICOFF_TAG_LEN;
    buf[4] = 0x77;
    ok(quicoff_peek_header(buf, (uint32_t)n, 0, CID_LEN, &hi) == QUICOFF_UNSUPPORTED &&
           hi.long_header && hi.version == 0x00000077 && hi.dcid_off == 6 &&
           hi.dcid_len == CID_LEN,
       "unknown version: DCID given");
    buf[1] = buf[2] = buf[3] = buf[4] = 0;
    ok(quicoff_peek_header(buf, (uint32_t)n, 0, CID_LEN, &hi) == QUICOFF_UNSUPPORTED &&
           hi.version == 0 && hi.dcid_len == CID_LEN,
       "Version Negotiation: DCID given");
    ok(quicoff_peek_header(buf, 9, 0, CID_LEN, &hi) == QUICOFF_UNSUPPORTED && hi.dcid_len == 0,
       "DCID cut: not given");
    buf[5] = 21;
    ok(quicoff_peek_header(buf, (uint32_t)n, 0, CID_LEN, &hi) == QUICOFF_UNSUPPORTED &&
           hi.dcid_len == 0,
       "DCID length over 20: not given");
    ok(quicoff_peek_header(buf, 0, 0, CID_LEN, &hi) == QUICOFF_MALFORMED, "empty");
    ok(quicoff_peek_header(buf, 5, 0, CID_LEN, &hi) == QUICOFF_MALFORMED && hi.long_header,
       "long header cut in its version");
    ok(quicoff_peek_header(NULL, 5, 0, CID_LEN, &hi) == QUICOFF_INVALID_ARGUMENT &&
           quicoff_peek_header(buf, 5, 0, CID_LEN, NULL) == QUICOFF_INVALID_ARGUMENT,
       "NULL arguments");
    /* every length of a real packet: never reads past it (ASan), never OK early */
    n = tp_build(buf, &l, buf + 100, 20, NULL) + QUICOFF_TAG_LEN;
    unsigned early = 0;
    for (uint32_t len = 0; len < n; len++) {
        uint8_t *copy = malloc(len ? len : 1);
        memcpy(copy, buf, len);
        early += quicoff_peek_header(copy, len, 0, CID_LEN, &hi) == QUICOFF_OK;
        free(copy);
    }
    ok(early == 0, "no truncation parses");
}

struct dgram {
    uint8_t bytes[DG_CAP];
    uint32_t len;
};

/* Datagram i: Initial + Handshake + 1-RTT of connection i % 3; i % 7 == 0:
 * Initial + Handshake and zero padding (a short header would run to the end);
 * else i % 5 == 0: a 1-RTT packet alone. Returns the number of packets. */
static unsigned build_dgrams(struct dgram *d, quicoff_conn_t tx[3][3], uint8_t cids[3][CID_LEN])
{
    static const quicoff_level_t levels[3] = {QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_HANDSHAKE,
                                              QUICOFF_LEVEL_ONE_RTT};
    unsigned packets = 0;
    for (unsigned i = 0; i < N_DGRAMS; i++) {
        unsigned c = i % 3, first = 0, last = 3;
        if (i % 7 == 0)
            last = 2;
        else if (i % 5 == 0)
            first = 2;
        uint32_t off = 0;
        for (unsigned k = first; k < last; k++, packets++)
            off = put_packet(d[i].bytes, off, tx[c][k], levels[k], cids[c], 100 + i * 3 + k,
                             30 + 7 * k + i);
        if (i % 7 == 0) {
            memset(d[i].bytes + off, 0, 50);
            off += 50;
        }
        d[i].len = off;
    }
    return packets;
}

/* A round function that checks what it is given, then runs the burst call. */
struct round_log {
    const struct quicoff_datagram *dgs;
    unsigned rounds, mismatched, largest;
};

static void logged_round(void *arg, struct quicoff_pkt *pkts, struct quicoff_result *res,
                         const unsigned *dgram, unsigned n)
{
    struct round_log *l = arg;
    l->rounds++;
    if (n > l->largest)
        l->largest = n;
    for (unsigned j = 0; j < n; j++)
        l->mismatched += pkts[j].data != l->dgs[dgram[j]].data;
    quicoff_unprotect_burst(worker, pkts, res, n);
}

static bool same_result(const struct quicoff_result *a, const struct quicoff_result *b)
{
    return a->status == b->status && a->flags == b->flags && a->level == b->level &&
           a->pn == b->pn && a->conn == b->conn && a->user == b->user &&
           a->hdr_off == b->hdr_off && a->payload_off == b->payload_off &&
           a->payload_len == b->payload_len && a->packet_end == b->packet_end &&
           a->dcid_off == b->dcid_off && a->dcid_len == b->dcid_len;
}

static void test_datagrams(void)
{
    static char users[3];
    uint8_t cids[3][CID_LEN];
    quicoff_conn_t tx[3][3], rx[3][3];
    static const quicoff_level_t levels[3] = {QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_HANDSHAKE,
                                              QUICOFF_LEVEL_ONE_RTT};
    for (unsigned c = 0; c < 3; c++) {
        tp_cid(10 + c, cids[c], CID_LEN);
        for (unsigned k = 0; k < 3; k++)
            rx[c][k] = pair(levels[k], 10 + c * 3 + k, cids[c], &users[c], &tx[c][k]);
    }
    static struct dgram orig[N_DGRAMS], one[N_DGRAMS], many[N_DGRAMS];
    unsigned packets = build_dgrams(orig, tx, cids);
    memcpy(one, orig, sizeof(orig));
    memcpy(many, orig, sizeof(orig));

    /* the reference: one datagram at a time (its own counters compared below) */
    static struct quicoff_result r1[N_DGRAMS][8], rn[N_DGRAMS][8];
    unsigned n1[N_DGRAMS], ok1 = 0;
    for (unsigned i = 0; i < N_DGRAMS; i++) {
        n1[i] = quicoff_unprotect_datagram(worker, one[i].bytes, one[i].len, NULL, r1[i], 8);
        for (unsigned k = 0; k < n1[i]; k++)
            ok1 += quicoff_status_ok(r1[i][k].status);
    }
    ok(ok1 == packets, "reference: every packet ok (%u of %u)", ok1, packets);

    /* Fresh entries with the same keys for the second run: largest PN and
     * key phase start where the first run's did. */
    for (unsigned c = 0; c < 3; c++)
        for (unsigned k = 0; k < 3; k++) {
            struct quicoff_conn_update u = {.what = QUICOFF_UPDATE_LARGEST_PN,
                                            .largest_pn = UINT64_MAX};
            quicoff_conn_update(table, rx[c][k], &u);
        }
    struct quicoff_datagram dg[N_DGRAMS];
    for (unsigned i = 0; i < N_DGRAMS; i++)
        dg[i] = (struct quicoff_datagram){.data = many[i].bytes,
                                          .len = many[i].len,
                                          .res = rn[i],
                                          .max_results = 8};
    unsigned okn = quicoff_unprotect_datagrams(worker, dg, N_DGRAMS, 0);
    ok(okn == ok1, "as many ok packets (%u)", okn);
    unsigned same = 0, bytes_same = 0, users_ok = 0;
    for (unsigned i = 0; i < N_DGRAMS; i++) {
        bool all = dg[i].n_results == n1[i] && dg[i].n_ok == n1[i];
        for (unsigned k = 0; all && k < n1[i]; k++) {
            all = same_result(&r1[i][k], &rn[i][k]);
            users_ok += rn[i][k].user == &users[i % 3];
        }
        same += all;
        bytes_same += memcmp(one[i].bytes, many[i].bytes, DG_CAP) == 0;
    }
    ok(same == N_DGRAMS, "the same results per datagram (%u of %u)", same, N_DGRAMS);
    ok(bytes_same == N_DGRAMS, "the same bytes (%u of %u)", bytes_same, N_DGRAMS);
    ok(users_ok == okn, "each packet with its connection's user pointer");
    ok(dg[5].n_results == 1 && dg[1].n_results == 3 && dg[7].n_results == 2,
       "a lone packet, three coalesced, two before padding");

    /* A failed middle packet: without the flag the walk goes on (its extent
     * is known), with it the rest stays as received. */
    memcpy(one, orig, sizeof(orig));
    memcpy(many, orig, sizeof(orig));
    uint32_t second = 0;
    {
        struct quicoff_header_info hi;
        quicoff_peek_header(orig[1].bytes, orig[1].len, 0, CID_LEN, &hi);
        second = hi.packet_end;
    }
    one[1].bytes[second + 30] ^= 0x80; /* inside the Handshake packet's payload */
    many[1].bytes[second + 30] ^= 0x80;
    for (unsigned c = 0; c < 3; c++)
        for (unsigned k = 0; k < 3; k++) {
            struct quicoff_conn_update u = {.what = QUICOFF_UPDATE_LARGEST_PN,
                                            .largest_pn = UINT64_MAX};
            quicoff_conn_update(table, rx[c][k], &u);
        }
    struct quicoff_datagram a = {.data = one[1].bytes,
                                 .len = one[1].len,
                                 .res = r1[1],
                                 .max_results = 8};
    quicoff_unprotect_datagrams(worker, &a, 1, 0);
    ok(a.n_results == 3 && a.n_ok == 2 && r1[1][1].status == QUICOFF_AUTH_FAILED &&
           quicoff_status_ok(r1[1][2].status),
       "goes on after an authentication failure");
    quicoff_conn_update(table, rx[1][0],
                        &(struct quicoff_conn_update){.what = QUICOFF_UPDATE_LARGEST_PN,
                                                      .largest_pn = UINT64_MAX});
    struct quicoff_datagram b = {.data = many[1].bytes,
                                 .len = many[1].len,
                                 .res = rn[1],
                                 .max_results = 8};
    quicoff_unprotect_datagrams(worker, &b, 1, QUICOFF_DATAGRAM_STOP_AT_FAILURE);
    uint32_t third = rn[1][1].packet_end;
    ok(b.n_results == 2 && b.n_ok == 1 && rn[1][1].status == QUICOFF_AUTH_FAILED,
       "stops at the failure");
    ok(memcmp(many[1].bytes + third, orig[1].bytes + third, orig[1].len - third) == 0,
       "the rest left as received");

    /* The same walk with the caller's unprotect (here the burst call, as a
     * lookaside engine would run prepare / AEAD / complete): each round's
     * packets name their datagrams. */
    memcpy(one, orig, sizeof(orig));
    for (unsigned c = 0; c < 3; c++)
        for (unsigned k = 0; k < 3; k++)
            quicoff_conn_update(table, rx[c][k],
                                &(struct quicoff_conn_update){.what = QUICOFF_UPDATE_LARGEST_PN,
                                                              .largest_pn = UINT64_MAX});
    for (unsigned i = 0; i < N_DGRAMS; i++)
        dg[i] = (struct quicoff_datagram){.data = one[i].bytes,
                                          .len = one[i].len,
                                          .res = r1[i],
                                          .max_results = 8};
    struct round_log log = {.dgs = dg};
    unsigned okw = quicoff_walk_datagrams(dg, N_DGRAMS, 0, logged_round, &log);
    ok(okw == okn && log.mismatched == 0 && log.largest <= 32,
       "walk with the caller's unprotect: %u ok, %u rounds, dgram indexes right, <= 32 a round",
       okw, log.rounds);
    ok(log.rounds == 6, "rounds: 3 for the first 32 datagrams, 3 for the 8 after (%u)",
       log.rounds);

    struct quicoff_datagram z = {.data = many[2].bytes, .len = 0, .res = rn[2], .max_results = 8};
    ok(quicoff_unprotect_datagrams(worker, &z, 1, 0) == 0 && z.n_results == 0, "empty datagram");
    z.len = many[2].len;
    z.max_results = 1;
    quicoff_unprotect_datagrams(worker, &z, 1, 0);
    ok(z.n_results == 1, "max_results bounds the results");
}

int main(void)
{
    struct quicoff_table_config tc = {.capacity = 64, .local_cid_len = CID_LEN};
    table = quicoff_table_create(&tc, NULL);
    worker = quicoff_worker_create(table);
    if (!ok(table && worker, "table and worker"))
        return done_testing();
    subtest("user pointer and DCID in results", test_user_and_dcid);
    subtest("header peek", test_peek);
    subtest("datagrams of coalesced packets", test_datagrams);
    quicoff_worker_destroy(worker);
    quicoff_table_destroy(table);
    return done_testing();
}
