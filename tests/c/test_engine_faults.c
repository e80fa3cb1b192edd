/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A crypto engine that fails a seal, through quicoff_protect_burst: both the
 * protect train (a chunk of one connection) and the stages (a chunk of
 * several) must
 *  - leave the failed packet exactly as the host built it (no header
 *    protection, no ciphertext, nothing in the tag's room),
 *  - give it QUICOFF_BACKEND_UNAVAILABLE with no payload in its result,
 *  - count it nowhere: not in the connection's packets, bytes and largest
 *    PN, nor in the table's TX counters (its key use is counted, as for
 *    every packet handed to the engine: the key's confidentiality limit
 *    counts encryptions attempted),
 *  - and seal every other packet exactly as a table whose engine does not
 *    fail (bytes, results, counters).
 * A backend fails a seal only on its own faults (the library's backends do
 * not fail on valid packets), so the fault is injected: the entry's AEAD
 * (its keyset's, internal: table.h) is replaced by a wrapper around the
 * table's own that fails the packets whose plaintext starts with MARK.
 * Run for every suite on every backend the build and CPU have.
 */
#include "crypto.h"
#include "table.h"
#include "test_packets.h"
#include "test_util.h"

#define CID_LEN 8
#define BUF 1600
#define MAXB 32
#define MARK 0xfa

/* ------------------------------------------------------- the faulty engine */

static const qo_aead_algo_t *real; /* the algorithm the wrapper stands in for */
static qo_aead_algo_t faulty;
static unsigned refused; /* seals the wrapper failed */

static int fails(const uint8_t *plaintext, size_t len)
{
    return len > 0 && plaintext[0] == MARK;
}

static int faulty_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                       size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    if (fails(data, len)) {
        refused++;
        return -1;
    }
    return real->seal(ctx, nonce, aad, aad_len, data, len, tag);
}

/* The real burst on the packets that do not fail, in order. */
static void faulty_seal_burst(void *wstate, const qo_aead_op_t *ops, unsigned n, int result[])
{
    qo_aead_op_t pass[MAXB];
    int pres[MAXB];
    unsigned idx[MAXB], m = 0;
    for (unsigned i = 0; i < n; i++) {
        if (fails(ops[i].data, ops[i].len)) {
            refused++;
            result[i] = -1;
            continue;
        }
        pass[m] = ops[i];
        idx[m++] = i;
    }
    if (m)
        real->seal_burst(wstate, pass, m, pres);
    for (unsigned k = 0; k < m; k++)
        result[idx[k]] = pres[k];
}

/* Puts the wrapper in place of the entry's AEAD. */
static void make_faulty(struct quicoff_table *t, quicoff_conn_t h)
{
    struct qo_keyset *ks = NULL;
    if (!qo_slot_of(t, h, &ks) || !ks) {
        fprintf(stderr, "no keyset for the entry\n");
        exit(2);
    }
    real = ks->aead;
    faulty = *real;
    faulty.seal = faulty_seal;
    if (real->seal_burst)
        faulty.seal_burst = faulty_seal_burst;
    ks->aead = &faulty;
}

/* ---------------------------------------------------------------- tables */

struct env {
    struct quicoff_table *t;
    struct quicoff_worker *w;
    quicoff_conn_t conn[2];
};

static uint8_t dcid[2][CID_LEN] = {{1, 2, 3, 4, 5, 6, 7, 8}, {9, 10, 11, 12, 13, 14, 15, 16}};

static void env_init(struct env *e, const char *backend, quicoff_suite_t suite)
{
    struct quicoff_table_config tc = {.capacity = 16,
                                      .local_cid_len = CID_LEN,
                                      .backend = backend};
    e->t = quicoff_table_create(&tc, NULL);
    e->w = e->t ? quicoff_worker_create(e->t) : NULL;
    if (!e->t || !e->w) {
        fprintf(stderr, "cannot create a table on %s\n", backend);
        exit(2);
    }
    for (unsigned c = 0; c < 2; c++) {
        struct quicoff_conn_config cfg;
        quicoff_conn_config_init(&cfg);
        cfg.direction = QUICOFF_DIR_TX;
        cfg.level = QUICOFF_LEVEL_ONE_RTT;
        cfg.suite = suite;
        cfg.dcid_len = CID_LEN;
        memcpy(cfg.dcid, dcid[c], CID_LEN);
        tp_keys(100 + c, &cfg.keys);
        if (quicoff_conn_add(e->t, &cfg, &e->conn[c]) != QUICOFF_OK) {
            fprintf(stderr, "cannot add a connection\n");
            exit(2);
        }
    }
}

static void env_fini(struct env *e)
{
    quicoff_worker_destroy(e->w);
    quicoff_table_destroy(e->t);
}

/* ---------------------------------------------------------------- a chunk */

/* Packet i of a chunk: connection conn_of[i], PN 1000 + i, payload of
 * len[i] bytes whose first byte is MARK where fail[i]. */
static size_t build(uint8_t *buf, unsigned c, unsigned i, size_t len, int fail)
{
    uint8_t payload[1400];
    for (size_t k = 0; k < len; k++)
        payload[k] = (uint8_t)(k * 13 + i + 1);
    if (len && payload[0] == MARK)
        payload[0] ^= 1;
    if (fail)
        payload[0] = MARK;
    struct tp_hdr h = {.dcid = dcid[c], .dcid_len = CID_LEN, .pn_len = 1 + i % 4, .pn = 1000 + i};
    memset(buf, 0xee, BUF);
    return tp_build(buf, &h, payload, len, NULL);
}

static void chunk(const char *what, const char *backend, quicoff_suite_t suite, unsigned n,
                  const unsigned *conn_of, const int *fail)
{
    static uint8_t in[MAXB][BUF], ba[MAXB][BUF], bb[MAXB][BUF];
    struct env a, b; /* a: the faulty engine; b: the same table, no fault */
    env_init(&a, backend, suite);
    env_init(&b, backend, suite);
    make_faulty(a.t, a.conn[0]);
    make_faulty(a.t, a.conn[1]);
    struct quicoff_pkt pa[MAXB], pb[MAXB];
    struct quicoff_result ra[MAXB], rb[MAXB];
    unsigned nfail = 0;
    uint64_t fail_bytes[2] = {0, 0}, largest[2] = {0, 0};
    int any_ok[2] = {0, 0};
    for (unsigned i = 0; i < n; i++) {
        const unsigned c = conn_of[i];
        const size_t len = 20 + (i * 97) % 300;
        size_t end = build(in[i], c, i, len, fail[i]);
        memcpy(ba[i], in[i], BUF);
        memcpy(bb[i], in[i], BUF);
        pa[i] = (struct quicoff_pkt){
            .data = ba[i], .end = (uint32_t)end, .cap = BUF, .conn = a.conn[c], .pn = 1000 + i};
        pb[i] = pa[i];
        pb[i].data = bb[i];
        pb[i].conn = b.conn[c];
        if (fail[i]) {
            nfail++;
            fail_bytes[c] += len;
        } else {
            any_ok[c] = 1;
            largest[c] = 1000 + i;
        }
    }
    refused = 0;
    unsigned oka = quicoff_protect_burst(a.w, pa, ra, n);
    unsigned okb = quicoff_protect_burst(b.w, pb, rb, n);
    ok(okb == n, "%s: %u/%u sealed without the fault", what, okb, n);
    ok(oka == n - nfail && refused == nfail, "%s: %u sealed, %u refused by the engine (want %u)",
       what, oka, refused, nfail);

    unsigned same = 0, failed_right = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!fail[i]) {
            same += memcmp(ba[i], bb[i], BUF) == 0 && memcmp(&ra[i], &rb[i], sizeof(ra[i])) == 0;
            continue;
        }
        /* the packet as built, and the sealed result without its payload */
        struct quicoff_result want = rb[i];
        want.status = QUICOFF_BACKEND_UNAVAILABLE;
        want.payload_off = want.payload_len = 0;
        want.packet_end = pa[i].end;
        const int bytes = memcmp(ba[i], in[i], BUF) == 0;
        const int res = memcmp(&ra[i], &want, sizeof(want)) == 0;
        if (!bytes || !res)
            printf("# %s packet %u: bytes %s, status %s, payload %u+%u, end %u\n", what, i,
                   bytes ? "as built" : "CHANGED", quicoff_status_name(ra[i].status),
                   ra[i].payload_off, ra[i].payload_len, ra[i].packet_end);
        failed_right += bytes && res;
    }
    ok(same == n - nfail, "%s: %u/%u other packets sealed as without the fault", what, same,
       n - nfail);
    ok(failed_right == nfail, "%s: %u/%u failed packets as built, BACKEND_UNAVAILABLE, no payload",
       what, failed_right, nfail);

    for (unsigned c = 0; c < 2; c++) {
        struct quicoff_conn_stats sa, sb;
        memset(&sa, 0, sizeof(sa));
        memset(&sb, 0, sizeof(sb));
        quicoff_conn_stats(a.t, a.conn[c], &sa);
        quicoff_conn_stats(b.t, b.conn[c], &sb);
        unsigned failed_here = 0;
        for (unsigned i = 0; i < n; i++)
            failed_here += conn_of[i] == c && fail[i];
        ok(sa.packets + failed_here == sb.packets && sa.bytes + fail_bytes[c] == sb.bytes,
           "%s: connection %u counts %llu packets / %llu bytes, %u failed (without: %llu / %llu)",
           what, c, (unsigned long long)sa.packets, (unsigned long long)sa.bytes, failed_here,
           (unsigned long long)sb.packets, (unsigned long long)sb.bytes);
        ok(sa.largest_pn == (any_ok[c] ? largest[c] : UINT64_MAX),
           "%s: connection %u largest PN %llu (of the sealed packets only)", what, c,
           (unsigned long long)sa.largest_pn);
        ok(sa.key_packets == sb.key_packets,
           "%s: connection %u key uses %llu, as without the fault (every seal attempted)", what, c,
           (unsigned long long)sa.key_packets);
    }
    struct quicoff_table_stats ta, tb;
    quicoff_table_stats(a.t, &ta);
    quicoff_table_stats(b.t, &tb);
    ok(ta.tx_packets + nfail == tb.tx_packets &&
           ta.tx_bytes + fail_bytes[0] + fail_bytes[1] == tb.tx_bytes,
       "%s: table TX counters without the failed packets", what);
    ta.tx_packets = tb.tx_packets;
    ta.tx_bytes = tb.tx_bytes;
    ok(memcmp(&ta, &tb, sizeof(ta)) == 0, "%s: no other table counter moved", what);
    env_fini(&a);
    env_fini(&b);
}

static void run(const char *backend)
{
    static const quicoff_suite_t suites[] = {QUICOFF_AES_128_GCM, QUICOFF_AES_256_GCM,
                                             QUICOFF_CHACHA20_POLY1305, QUICOFF_AES_128_CCM};
    for (size_t s = 0; s < sizeof(suites) / sizeof(suites[0]); s++) {
        char what[128];
        unsigned one[MAXB] = {0}, two[MAXB];
        int some[MAXB] = {0}, all[MAXB], none[MAXB] = {0};
        for (unsigned i = 0; i < MAXB; i++) {
            two[i] = i % 3 == 1;
            some[i] = i == 0 || i == 5 || i == 6 || i == MAXB - 1;
            all[i] = 1;
        }
        const char *sn = quicoff_suite_name(suites[s]);
        snprintf(what, sizeof(what), "%s %s train, 4 of 32 fail", backend, sn);
        chunk(what, backend, suites[s], MAXB, one, some);
        snprintf(what, sizeof(what), "%s %s train, all fail", backend, sn);
        chunk(what, backend, suites[s], 8, one, all);
        snprintf(what, sizeof(what), "%s %s two connections (stages), 4 of 32 fail", backend, sn);
        chunk(what, backend, suites[s], MAXB, two, some);
        snprintf(what, sizeof(what), "%s %s two connections (stages), all fail", backend, sn);
        chunk(what, backend, suites[s], 8, two, all);
        snprintf(what, sizeof(what), "%s %s train, none fail", backend, sn);
        chunk(what, backend, suites[s], MAXB, one, none);
    }
}

static void test_backends(void)
{
    static const char *const names[] = {"openssl", "ipsec-mb"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!qo_backend_find(names[i])) {
            printf("# backend %s: not in this build or on this CPU\n", names[i]);
            continue;
        }
        run(names[i]);
    }
}

int main(void)
{
    subtest("seal failures through the burst calls", test_backends);
    return done_testing();
}
