/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target for the data path: the input is one UDP datagram.
 *
 * A table is created once with RX entries for every suite and level, in QUIC
 * v1 and v2, a few nonce layouts and fail actions, a zero-length-DCID entry
 * keyed by local address, and the RFC 9001 A.2 DCID; TX entries with the same
 * keys. Per input:
 *  1. quicoff_unprotect_datagram on an exact-size heap copy (ASan sees any
 *     read or write past the datagram), with and without a local address;
 *  2. quicoff_unprotect_burst of up to 4 packets at input-chosen offsets, each
 *     in its own buffer with guard bytes before and after;
 *  3. the same through the split calls (quicoff_unprotect_prepare, then an
 *     "engine" that checks each job's offsets and reports a failed tag, or a
 *     failed engine, then quicoff_unprotect_complete): no packet ok, every
 *     byte as received;
 *  4. the input as a plaintext packet: quicoff_protect_burst, and when that
 *     succeeds, unprotect again: if it reaches the RX twin of the TX entry it
 *     must open to exactly the same plaintext.
 * Aborts when: a status is out of range; an OK packet's offsets fall outside
 * its datagram or are inconsistent; any byte outside an OK packet's extent
 * changed (failed packets are left exactly as received, guard bytes never
 * move); a protect refusal changed the buffer; the round trip fails.
 * Entries a run touched are re-created afterwards, so every input starts from
 * the same table state (reproducible crashes).
 *
 * Built with -DQO_FUZZ_SEEDS instead, main() writes a seed corpus: a valid
 * protected packet for every suite, level and version (key phase 0 and 1 for
 * 1-RTT), coalesced datagrams, the RFC 9001 A.2 client Initial, and a few
 * plaintext packets, into the directory given as argv[1].
 */
#include "quicoff/quicoff.h"
#include "test_packets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CID_LEN 8
#define GUARD 32
#define GUARD_BYTE 0xe7
#define MAX_DGRAM 4096

#define FUZZ_CHECK(cond, what)                                                            \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz_unprotect: check failed: %s (%s:%d)\n", what, __FILE__, \
                    __LINE__);                                                            \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

enum { NSETS = 2 }; /* 0: QUIC v1 DCIDs, 1: QUIC v2 DCIDs */

struct entry {
    quicoff_direction_t dir;
    quicoff_level_t level;
    quicoff_suite_t suite;
    uint32_t version;
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    uint8_t dcid_len;
    struct quicoff_addr addr;
    quicoff_nonce_layout_t layout;
    uint32_t path_id;
    quicoff_fail_action_t fail;
    uint64_t threshold;
    uint8_t secret[QUICOFF_MAX_SECRET_LEN];
    size_t secret_len;
    quicoff_conn_t h;
};

#define MAX_ENTRIES 80
static struct entry entries[MAX_ENTRIES];
static int nentries;
static struct quicoff_table *table;
static struct quicoff_worker *worker;
/* rx_of[set][suite][level], tx_of[...]: indexes into entries */
static int rx_of[NSETS][QUICOFF_SUITE_COUNT][QUICOFF_LEVEL_COUNT];
static int tx_of[NSETS][QUICOFF_SUITE_COUNT][QUICOFF_LEVEL_COUNT];
static int rx_rfc, rx_addr, tx_addr, rx_noaddr, tx_noaddr;
static unsigned long roundtrips; /* round trips through a twin RX entry */
static const struct quicoff_addr local_a = {.family = 4, .ip = {10, 0, 0, 1}, .port = 443};

static const uint8_t rfc_dcid[8] = {0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08};

static void set_dcid(int set, int suite, uint8_t *d)
{
    static const uint8_t base[CID_LEN] = {0x00, 'q', 'o', 'f', 'f', 'z', 0x00, 0x00};
    memcpy(d, base, CID_LEN);
    d[0] = (uint8_t)(0xa0 + 0x10 * set + suite);
    d[7] = (uint8_t)(set * 4 + suite);
}

static quicoff_status_t entry_add(struct entry *e)
{
    struct quicoff_conn_config c;
    quicoff_conn_config_init(&c);
    c.direction = e->dir;
    c.level = e->level;
    c.suite = e->suite;
    c.version = e->version;
    c.dcid_len = e->dcid_len;
    memcpy(c.dcid, e->dcid, e->dcid_len);
    c.local_addr = e->addr;
    c.nonce_layout = e->layout;
    c.path_id = e->path_id;
    c.fail_action = e->fail;
    c.usage_threshold = e->threshold;
    c.secret = e->secret;
    c.secret_len = e->secret_len;
    return quicoff_conn_add(table, &c, &e->h);
}

static int new_entry(quicoff_direction_t dir, quicoff_level_t level, quicoff_suite_t suite,
                     uint32_t version, const uint8_t *dcid, uint8_t dcid_len, unsigned variant)
{
    struct entry *e = &entries[nentries];
    memset(e, 0, sizeof(*e));
    e->dir = dir;
    e->level = level;
    e->suite = suite;
    e->version = version;
    e->dcid_len = dcid_len;
    if (dcid_len)
        memcpy(e->dcid, dcid, dcid_len);
    /* a few variations, the same for an RX entry and its TX twin */
    e->layout = (quicoff_nonce_layout_t)(variant % 3);
    e->path_id = variant % 3 ? 5 + variant : 0;
    e->fail = dir == QUICOFF_DIR_RX && variant % 2 ? QUICOFF_FAIL_PASS : QUICOFF_FAIL_DROP;
    e->threshold = variant % 4 == 3 ? 2 : 0;
    e->secret_len = quicoff_suite_secret_len(suite);
    for (size_t i = 0; i < e->secret_len; i++)
        e->secret[i] = (uint8_t)(variant * 29 + i * 7 + level * 3 + 1);
    FUZZ_CHECK(entry_add(e) == QUICOFF_OK, "setup: add entry");
    return nentries++;
}

static void setup(void)
{
    struct quicoff_table_config cfg = {.capacity = 256, .local_cid_len = CID_LEN};
    table = quicoff_table_create(&cfg, NULL);
    FUZZ_CHECK(table != NULL, "setup: table");
    worker = quicoff_worker_create(table);
    FUZZ_CHECK(worker != NULL, "setup: worker");
    for (int set = 0; set < NSETS; set++) {
        uint32_t version = set ? QUICOFF_VERSION_2 : QUICOFF_VERSION_1;
        for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
            uint8_t d[CID_LEN];
            set_dcid(set, s, d);
            for (int l = 0; l < QUICOFF_LEVEL_COUNT; l++) {
                unsigned variant = (unsigned)(set * 16 + s * 4 + l);
                rx_of[set][s][l] = new_entry(QUICOFF_DIR_RX, (quicoff_level_t)l,
                                             (quicoff_suite_t)s, version, d, CID_LEN, variant);
                tx_of[set][s][l] = new_entry(QUICOFF_DIR_TX, (quicoff_level_t)l,
                                             (quicoff_suite_t)s, version, d, CID_LEN, variant);
            }
        }
    }
    /* RFC 9001 A.2: the server's entry for the client Initial */
    uint8_t cs[32], ss[32];
    FUZZ_CHECK(quicoff_derive_initial_secrets(rfc_dcid, 8, QUICOFF_VERSION_1, cs, ss) ==
                   QUICOFF_OK,
               "setup: initial secrets");
    struct entry *e = &entries[nentries];
    memset(e, 0, sizeof(*e));
    e->dir = QUICOFF_DIR_RX;
    e->level = QUICOFF_LEVEL_INITIAL;
    e->suite = QUICOFF_AES_128_GCM;
    e->version = QUICOFF_VERSION_1;
    memcpy(e->dcid, rfc_dcid, 8);
    e->dcid_len = 8;
    memcpy(e->secret, cs, 32);
    e->secret_len = 32;
    FUZZ_CHECK(entry_add(e) == QUICOFF_OK, "setup: RFC entry");
    rx_rfc = nentries++;
    /* zero-length DCIDs: by local address (Initial), and without one (Handshake) */
    for (int dir = 0; dir < 2; dir++) {
        e = &entries[nentries];
        memset(e, 0, sizeof(*e));
        e->dir = dir ? QUICOFF_DIR_RX : QUICOFF_DIR_TX;
        e->level = QUICOFF_LEVEL_INITIAL;
        e->suite = QUICOFF_AES_128_GCM;
        e->version = QUICOFF_VERSION_1;
        if (dir)
            e->addr = local_a;
        memcpy(e->secret, ss, 32);
        e->secret_len = 32;
        FUZZ_CHECK(entry_add(e) == QUICOFF_OK, "setup: address entry");
        *(dir ? &rx_addr : &tx_addr) = nentries++;
    }
    rx_noaddr = new_entry(QUICOFF_DIR_RX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_CHACHA20_POLY1305,
                          QUICOFF_VERSION_1, NULL, 0, 2);
    tx_noaddr = new_entry(QUICOFF_DIR_TX, QUICOFF_LEVEL_HANDSHAKE, QUICOFF_CHACHA20_POLY1305,
                          QUICOFF_VERSION_1, NULL, 0, 2);
}

/* Re-creates every entry a run changed, so the next input sees fresh state. */
static void reset_touched(void)
{
    for (int i = 0; i < nentries; i++) {
        struct entry *e = &entries[i];
        struct quicoff_conn_stats s;
        FUZZ_CHECK(quicoff_conn_stats(table, e->h, &s) == QUICOFF_OK, "reset: stats");
        if (s.packets || s.auth_failures || s.malformed || s.key_phase_unavailable ||
            s.key_updates || s.key_generation || s.largest_pn != UINT64_MAX) {
            FUZZ_CHECK(quicoff_conn_remove(table, e->h) == QUICOFF_OK, "reset: remove");
            FUZZ_CHECK(entry_add(e) == QUICOFF_OK, "reset: add");
        }
    }
    FUZZ_CHECK(quicoff_table_reclaim(table) == 0, "reset: everything reclaimed");
}

/* ------------------------------------------------------------------------ */

static void check_result(const struct quicoff_result *r, uint32_t off, uint32_t len)
{
    FUZZ_CHECK((unsigned)r->status < QUICOFF_STATUS_COUNT, "status in range");
    FUZZ_CHECK(r->hdr_off == off, "hdr_off is the packet's offset");
    FUZZ_CHECK(r->level < QUICOFF_LEVEL_COUNT, "level in range");
    if (!quicoff_status_ok(r->status))
        return;
    FUZZ_CHECK(r->pn_len >= 1 && r->pn_len <= 4, "pn_len 1..4");
    FUZZ_CHECK(r->pn_off > r->hdr_off && r->pn_off + r->pn_len == r->payload_off,
               "PN right before the payload");
    FUZZ_CHECK((uint64_t)r->payload_off + r->payload_len + QUICOFF_TAG_LEN == r->packet_end,
               "payload + tag end the packet");
    FUZZ_CHECK(r->packet_end <= len, "packet inside the datagram");
    FUZZ_CHECK(r->pn < (UINT64_C(1) << 62), "pn < 2^62");
    FUZZ_CHECK(r->conn != QUICOFF_CONN_INVALID, "ok packet has a connection");
    FUZZ_CHECK(r->key_phase <= 1, "key phase bit");
}

/* Every byte outside the OK packets' extents is as received. */
static void check_unchanged_outside(const uint8_t *orig, const uint8_t *now, uint32_t len,
                                    const struct quicoff_result *res, unsigned n)
{
    uint32_t pos = 0;
    for (unsigned i = 0; i <= n; i++) {
        uint32_t until = len, next = len;
        if (i < n) {
            if (!quicoff_status_ok(res[i].status))
                continue;
            until = res[i].hdr_off;
            next = res[i].packet_end;
        }
        if (until > pos)
            FUZZ_CHECK(memcmp(orig + pos, now + pos, until - pos) == 0,
                       "bytes outside processed packets unchanged");
        pos = next > pos ? next : pos;
    }
}

static void run_datagram(const uint8_t *data, uint32_t size, const struct quicoff_addr *addr)
{
    /* exact-size heap copy: ASan reports any access past either end */
    uint8_t *dg = malloc(size ? size : 1);
    FUZZ_CHECK(dg != NULL, "malloc");
    memcpy(dg, data, size);
    struct quicoff_result res[64];
    unsigned n = quicoff_unprotect_datagram(worker, dg, size, addr, res, 64);
    FUZZ_CHECK(n <= 64 && (size == 0 ? n == 0 : n >= 1), "result count");
    uint32_t off = 0;
    for (unsigned i = 0; i < n; i++) {
        check_result(&res[i], off, size);
        if (i + 1 < n) {
            /* the walk goes on only past a packet of known extent */
            FUZZ_CHECK(res[i].packet_end > off && res[i].packet_end <= size, "walk advances");
            off = res[i].packet_end;
        }
    }
    check_unchanged_outside(data, dg, size, res, n);
    free(dg);
}

static void run_burst(const uint8_t *data, uint32_t size, uint8_t ctrl)
{
    enum { N = 4 };
    static uint8_t bufs[N][GUARD + MAX_DGRAM + GUARD];
    struct quicoff_pkt pk[N];
    struct quicoff_result res[N];
    unsigned n = 1 + (ctrl & 3);
    for (unsigned i = 0; i < n; i++) {
        uint8_t *b = bufs[i];
        memset(b, GUARD_BYTE, GUARD);
        memcpy(b + GUARD, data, size);
        memset(b + GUARD + size, GUARD_BYTE, GUARD);
        /* packet i starts at an offset chosen by the input */
        uint32_t off = 0;
        if (i > 0 && size > 0)
            off = (uint32_t)(data[(i * 7) % size] | data[(i * 13) % size] << 8) % size;
        pk[i] = (struct quicoff_pkt){.data = b + GUARD,
                                     .end = size,
                                     .cap = size,
                                     .offset = off,
                                     .local_addr = (ctrl & 4) ? &local_a : NULL};
    }
    unsigned okn = quicoff_unprotect_burst(worker, pk, res, n);
    unsigned count = 0;
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *b = bufs[i];
        count += quicoff_status_ok(res[i].status);
        check_result(&res[i], pk[i].offset, size);
        for (unsigned g = 0; g < GUARD; g++)
            FUZZ_CHECK(b[g] == GUARD_BYTE && b[GUARD + size + g] == GUARD_BYTE,
                       "guard bytes untouched");
        if (quicoff_status_ok(res[i].status)) {
            FUZZ_CHECK(memcmp(b + GUARD, data, res[i].hdr_off) == 0 &&
                           memcmp(b + GUARD + res[i].packet_end, data + res[i].packet_end,
                                  size - res[i].packet_end) == 0,
                       "only the packet's own bytes change");
        } else {
            FUZZ_CHECK(memcmp(b + GUARD, data, size) == 0, "failed packet left as received");
        }
    }
    FUZZ_CHECK(okn == count, "burst return value counts the ok results");
}

/* The split calls: every job must describe bytes inside its packet (AAD
 * from the packet's start up to the payload, the tag right after it), and
 * when the engine fails them all, complete must leave every byte as
 * received: the header protection removed by prepare put back. */
static void run_split(const uint8_t *data, uint32_t size, uint8_t ctrl)
{
    enum { N = 4 };
    static uint8_t bufs[N][GUARD + MAX_DGRAM + GUARD];
    struct quicoff_pkt pk[N];
    struct quicoff_result res[N];
    struct quicoff_aead_job jobs[N];
    unsigned n = 1 + ((ctrl >> 3) & 3);
    for (unsigned i = 0; i < n; i++) {
        uint8_t *b = bufs[i];
        memset(b, GUARD_BYTE, GUARD);
        memcpy(b + GUARD, data, size);
        memset(b + GUARD + size, GUARD_BYTE, GUARD);
        uint32_t off = 0;
        if (i > 0 && size > 0)
            off = (uint32_t)(data[(i * 5) % size] | data[(i * 11) % size] << 8) % size;
        pk[i] = (struct quicoff_pkt){.data = b + GUARD,
                                     .end = size,
                                     .cap = size,
                                     .offset = off,
                                     .local_addr = (ctrl & 4) ? &local_a : NULL};
    }
    unsigned pending = quicoff_unprotect_prepare(worker, pk, res, jobs, n), seen = 0;
    for (unsigned i = 0; i < n; i++) {
        const struct quicoff_aead_job *j = &jobs[i];
        if (!j->pending)
            continue;
        seen++;
        FUZZ_CHECK(j->decrypt == 1 && j->suite < QUICOFF_SUITE_COUNT &&
                       j->key_len == quicoff_suite_key_len((quicoff_suite_t)j->suite) && j->key,
                   "job: suite and key");
        FUZZ_CHECK(j->aad_off == pk[i].offset && j->aad_len > 0 &&
                       (uint64_t)j->aad_off + j->aad_len == j->data_off &&
                       (uint64_t)j->data_off + j->data_len == j->tag_off &&
                       (uint64_t)j->tag_off + QUICOFF_TAG_LEN <= size,
                   "job: AAD, data and tag inside the packet, in order");
        FUZZ_CHECK(j->key_id != 0 && j->key_phase <= 1, "job: key id and phase");
        jobs[i].aead_status = (ctrl & 0x20) ? QUICOFF_BACKEND_UNAVAILABLE : QUICOFF_AUTH_FAILED;
    }
    FUZZ_CHECK(seen == pending, "prepare counts its pending jobs");
    unsigned okn = quicoff_unprotect_complete(worker, pk, res, jobs, n);
    FUZZ_CHECK(okn == 0, "no packet ok without its AEAD");
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *b = bufs[i];
        check_result(&res[i], pk[i].offset, size);
        FUZZ_CHECK(memcmp(b + GUARD, data, size) == 0, "split: failed packet left as received");
        for (unsigned g = 0; g < GUARD; g++)
            FUZZ_CHECK(b[g] == GUARD_BYTE && b[GUARD + size + g] == GUARD_BYTE,
                       "split: guard bytes untouched");
        const uint8_t *z = (const uint8_t *)&jobs[i];
        for (size_t k = 0; k < sizeof(jobs[i]); k++)
            FUZZ_CHECK(z[k] == 0, "complete zeroes the job");
    }
}

/* Where a plaintext packet keeps its PN (an independent little parser,
 * RFC 9000 §17.2/17.3, RFC 9369 §3.2); 0 if the header does not parse. */
static int plain_pn(const uint8_t *d, uint32_t size, uint8_t short_cid_len, uint64_t *pn)
{
    if (size < 1)
        return 0;
    uint32_t q;
    if (!(d[0] & 0x80)) {
        q = 1u + short_cid_len;
    } else {
        if (size < 7)
            return 0;
        uint32_t v = (uint32_t)d[1] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[3] << 8 | d[4];
        unsigned type = (d[0] >> 4) & 3;
        int initial = (v == QUICOFF_VERSION_1 && type == 0) ||
                      (v == QUICOFF_VERSION_2 && type == 1);
        q = 6u + d[5];
        if (q >= size)
            return 0;
        q += 1u + d[q];
        for (int field = initial ? 0 : 1; field < 2;
             field++) { /* token length (+ token), Length */
            if (q >= size)
                return 0;
            unsigned n = 1u << (d[q] >> 6);
            uint64_t x = d[q] & 0x3f;
            if (q + n > size)
                return 0;
            for (unsigned i = 1; i < n; i++)
                x = x << 8 | d[q + i];
            q += n;
            if (field == 0) {
                if (x > size - q)
                    return 0;
                q += (uint32_t)x;
            }
        }
    }
    unsigned pl = (d[0] & 3) + 1u;
    if ((uint64_t)q + pl > size)
        return 0;
    *pn = 0;
    for (unsigned i = 0; i < pl; i++)
        *pn = *pn << 8 | d[q + i];
    return 1;
}

/* The input as a plaintext packet: protect, then open it again. */
static void run_roundtrip(const uint8_t *data, uint32_t size, uint8_t ctrl)
{
    static uint8_t b[GUARD + MAX_DGRAM + QUICOFF_TAG_LEN + GUARD];
    static uint8_t sealed[MAX_DGRAM + QUICOFF_TAG_LEN];
    if (size == 0)
        return;
    int set = (ctrl >> 3) & 1, s = (ctrl >> 4) & 3;
    /* a DCID of one of the table's sets picks that set's TX entries, so the
     * round trip reaches the twin RX entry */
    uint32_t dcid_at = (data[0] & 0x80) ? 6 : 1;
    if (size > dcid_at + CID_LEN && (!(data[0] & 0x80) || data[5] == CID_LEN)) {
        uint8_t d0 = data[dcid_at];
        if ((d0 & 0xe0) == 0xa0 && (d0 & 0x0f) < QUICOFF_SUITE_COUNT) {
            set = (d0 >> 4) & 1;
            s = d0 & 0x0f;
        }
    }
    /* the PN whose low bytes the header carries; with the RX entry's largest
     * PN "none", the receiver decodes exactly that truncated value */
    uint64_t pn = 0;
    int parsed = plain_pn(data, size, CID_LEN, &pn);
    for (int l = 0; l < QUICOFF_LEVEL_COUNT; l++) {
        const struct entry *tx = &entries[tx_of[set][s][l]];
        memset(b, GUARD_BYTE, sizeof(b));
        memcpy(b + GUARD, data, size);
        struct quicoff_result r;
        struct quicoff_pkt p = {.data = b + GUARD,
                                .end = size,
                                .cap = size + QUICOFF_TAG_LEN,
                                .conn = tx->h,
                                .pn = pn};
        unsigned okn = quicoff_protect_burst(worker, &p, &r, 1);
        quicoff_status_t st = r.status;
        FUZZ_CHECK((unsigned)st < QUICOFF_STATUS_COUNT, "protect status in range");
        FUZZ_CHECK(okn == (unsigned)quicoff_status_ok(st), "protect burst count");
        for (unsigned g = 0; g < GUARD; g++)
            FUZZ_CHECK(b[g] == GUARD_BYTE && b[GUARD + size + QUICOFF_TAG_LEN + g] == GUARD_BYTE,
                       "protect: guard bytes untouched");
        if (!quicoff_status_ok(st)) {
            FUZZ_CHECK(memcmp(b + GUARD, data, size) == 0, "protect refusal changed nothing");
            for (unsigned i = 0; i < QUICOFF_TAG_LEN; i++)
                FUZZ_CHECK(b[GUARD + size + i] == GUARD_BYTE, "refusal wrote no tag");
            continue;
        }
        FUZZ_CHECK(parsed, "protect accepted a header the reference parser rejects");
        FUZZ_CHECK(r.packet_end == size + QUICOFF_TAG_LEN && r.payload_off <= size && r.pn == pn &&
                       r.hdr_off == 0,
                   "protect result extent");
        memcpy(sealed, b + GUARD, size + QUICOFF_TAG_LEN);
        /* open it again */
        struct quicoff_result u;
        struct quicoff_pkt q = {.data = b + GUARD,
                                .end = size + QUICOFF_TAG_LEN,
                                .cap = size + QUICOFF_TAG_LEN};
        quicoff_unprotect_burst(worker, &q, &u, 1);
        check_result(&u, 0, size + QUICOFF_TAG_LEN);
        if (u.conn == entries[rx_of[set][s][l]].h) {
            FUZZ_CHECK(quicoff_status_ok(u.status), "round trip through the twin RX entry opens");
            FUZZ_CHECK(u.pn == pn && u.payload_off == r.payload_off &&
                           u.payload_len == r.payload_len,
                       "round trip: same PN and extent");
            FUZZ_CHECK(memcmp(b + GUARD, data, size) == 0, "round trip: same plaintext");
            roundtrips++;
        } else if (!quicoff_status_ok(u.status)) {
            FUZZ_CHECK(memcmp(b + GUARD, sealed, size + QUICOFF_TAG_LEN) == 0,
                       "failed unprotect left the packet as received");
        }
        break;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    setup();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!table)
        setup();
    if (size > MAX_DGRAM)
        return 0;
    uint32_t len = (uint32_t)size;
    uint8_t ctrl = size ? (uint8_t)(data[size - 1] ^ size) : 0;

    run_datagram(data, len, NULL);
    reset_touched();
    run_datagram(data, len, &local_a);
    reset_touched();
    run_burst(data, len, ctrl);
    reset_touched();
    run_split(data, len, ctrl);
    reset_touched();
    run_roundtrip(data, len, ctrl);
    reset_touched();
    return 0;
}

/* ------------------------------------------------------------------------ */
#ifdef QO_FUZZ_SEEDS

static const char *const level_names[QUICOFF_LEVEL_COUNT] = {"1rtt", "initial", "0rtt",
                                                             "handshake"};
static const char *outdir;
static unsigned nwritten;

static void write_seed(const char *name, const uint8_t *b, size_t n)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s.bin", outdir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fclose(f);
    nwritten++;
    LLVMFuzzerTestOneInput(b, n); /* the harness accepts it (aborts otherwise) */
}

/* Builds one packet at b[off..] (DCID/version/level of TX entry tx) and
 * protects it if asked; returns its end (tag included). */
static uint32_t make(uint8_t *b, uint32_t off, int tx, unsigned kp, uint64_t pn,
                     size_t payload_len, int protect)
{
    const struct entry *e = &entries[tx];
    static const uint8_t scid[4] = {0x51, 0x52, 0x53, 0x54};
    uint8_t payload[1200];
    memset(payload, 0, payload_len); /* PADDING */
    payload[0] = 0x01;               /* PING */
    struct tp_hdr h = {.is_long = e->level != QUICOFF_LEVEL_ONE_RTT,
                       .version = e->version,
                       .level = e->level,
                       .dcid = e->dcid,
                       .dcid_len = e->dcid_len,
                       .scid = scid,
                       .scid_len = sizeof(scid),
                       .pn_len = 1 + (unsigned)(pn % 4),
                       .pn = pn,
                       .key_phase = kp};
    uint32_t n = (uint32_t)tp_build(b + off, &h, payload, payload_len, NULL);
    if (protect) {
        struct quicoff_result r;
        quicoff_status_t st = tp_protect(worker, e->h, b, off, off + n, off + n + QUICOFF_TAG_LEN,
                                         pn, &r);
        FUZZ_CHECK(quicoff_status_ok(st), "seed: protect");
    }
    return off + n + QUICOFF_TAG_LEN;
}

/* A seed must open with the fuzz table as every input finds it. */
static void verify(const uint8_t *b, uint32_t n, const struct quicoff_addr *addr, unsigned want_ok,
                   const char *name)
{
    static uint8_t copy[MAX_DGRAM];
    struct quicoff_result res[16];
    reset_touched();
    memcpy(copy, b, n);
    unsigned k = quicoff_unprotect_datagram(worker, copy, n, addr, res, 16);
    unsigned okn = 0;
    for (unsigned i = 0; i < k; i++)
        okn += quicoff_status_ok(res[i].status);
    if (okn != want_ok) {
        fprintf(stderr, "seed %s: %u of %u packets open (first status %s)\n", name, okn, want_ok,
                k ? quicoff_status_name(res[0].status) : "-");
        exit(1);
    }
    reset_touched();
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
        return 2;
    }
    outdir = argv[1];
    setup();
    static const char *const suite_short[] = {"aes128gcm", "aes256gcm", "aes128ccm", "chacha"};
    static uint8_t b[MAX_DGRAM];
    char name[128];
    for (int set = 0; set < NSETS; set++)
        for (int s = 0; s < QUICOFF_SUITE_COUNT; s++)
            for (int l = 0; l < QUICOFF_LEVEL_COUNT; l++)
                for (unsigned kp = 0; kp < (l == QUICOFF_LEVEL_ONE_RTT ? 2u : 1u); kp++) {
                    /* Initial packets padded to a 1200-byte datagram, others small */
                    size_t pl = l == QUICOFF_LEVEL_INITIAL ? 1150 : 24 + 8 * (size_t)s;
                    uint64_t pn = 5 + (uint64_t)l + kp;
                    int tx = tx_of[set][s][l];
                    uint32_t n = make(b, 0, tx, kp, pn, pl, 1);
                    snprintf(name, sizeof(name), "v%d-%s-%s%s", set + 1, suite_short[s],
                             level_names[l], kp ? "-kp1" : "");
                    verify(b, n, NULL, 1, name);
                    write_seed(name, b, n);
                    /* the same packet in clear: for the protect round trip */
                    n = make(b, 0, tx, kp, pn, pl, 0);
                    snprintf(name, sizeof(name), "plain-v%d-%s-%s%s", set + 1, suite_short[s],
                             level_names[l], kp ? "-kp1" : "");
                    write_seed(name, b, n - QUICOFF_TAG_LEN);
                }
    for (int set = 0; set < NSETS; set++) {
        /* Initial + Handshake + 1-RTT in one datagram */
        uint32_t n = make(b, 0, tx_of[set][0][QUICOFF_LEVEL_INITIAL], 0, 0, 300, 1);
        n = make(b, n, tx_of[set][1][QUICOFF_LEVEL_HANDSHAKE], 0, 1, 60, 1);
        n = make(b, n, tx_of[set][3][QUICOFF_LEVEL_ONE_RTT], 0, 2, 40, 1);
        snprintf(name, sizeof(name), "coalesced-v%d", set + 1);
        verify(b, n, NULL, 3, name);
        write_seed(name, b, n);
        /* Initial + Handshake + zero padding */
        reset_touched();
        n = make(b, 0, tx_of[set][2][QUICOFF_LEVEL_INITIAL], 0, 0, 200, 1);
        n = make(b, n, tx_of[set][0][QUICOFF_LEVEL_HANDSHAKE], 0, 1, 30, 1);
        memset(b + n, 0, 64);
        snprintf(name, sizeof(name), "coalesced-padded-v%d", set + 1);
        verify(b, n + 64, NULL, 2, name);
        write_seed(name, b, n + 64);
    }
    /* zero-length DCIDs: Initial to the local-address entry, Handshake to the
     * entry without an address */
    reset_touched();
    uint32_t n = make(b, 0, tx_addr, 0, 1, 150, 1);
    verify(b, n, &local_a, 1, "zero-dcid-initial-by-address");
    write_seed("zero-dcid-initial-by-address", b, n);
    reset_touched();
    n = make(b, 0, tx_noaddr, 0, 3, 40, 1);
    verify(b, n, NULL, 1, "zero-dcid-handshake");
    write_seed("zero-dcid-handshake", b, n);
    /* RFC 9001 A.2 shape: the RFC's DCID and header (pn 2 in 4 bytes), a
     * CRYPTO frame header then zeros to 1162 bytes, Initial keys from the DCID */
    {
        uint8_t cs[32], ss[32];
        FUZZ_CHECK(quicoff_derive_initial_secrets(rfc_dcid, 8, QUICOFF_VERSION_1, cs, ss) ==
                       QUICOFF_OK,
                   "secrets");
        struct quicoff_conn_config c;
        quicoff_conn_config_init(&c);
        c.level = QUICOFF_LEVEL_INITIAL;
        c.secret = cs;
        c.secret_len = 32;
        quicoff_conn_t tx;
        FUZZ_CHECK(quicoff_conn_add(table, &c, &tx) == QUICOFF_OK, "RFC TX");
        struct tp_hdr h = {.is_long = 1,
                           .version = QUICOFF_VERSION_1,
                           .level = QUICOFF_LEVEL_INITIAL,
                           .dcid = rfc_dcid,
                           .dcid_len = 8,
                           .pn_len = 4,
                           .pn = 2};
        static uint8_t payload[1162] = {0x06, 0x00, 0x40, 0xf1};
        n = (uint32_t)tp_build(b, &h, payload, sizeof(payload), NULL);
        FUZZ_CHECK(tp_protect(worker, tx, b, 0, n, n + 16, 2, NULL) == QUICOFF_OK, "RFC protect");
        quicoff_conn_remove(table, tx);
        verify(b, n + 16, NULL, 1, "rfc9001-a2-shape");
        write_seed("rfc9001-a2-shape", b, n + 16);
    }
    /* every plaintext seed (2 versions x 4 suites x 5 packets) made the
     * protect/unprotect round trip through its twin entries */
    if (roundtrips < 2 * 4 * 5) {
        fprintf(stderr, "only %lu round trips through twin entries\n", roundtrips);
        return 1;
    }
    printf("wrote %u seeds to %s (%lu round trips)\n", nwritten, outdir, roundtrips);
    quicoff_worker_destroy(worker);
    quicoff_table_destroy(table);
    return 0;
}
#endif /* QO_FUZZ_SEEDS */
