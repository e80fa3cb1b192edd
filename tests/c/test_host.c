/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libquicoff-host (include/quicoff/host.h) against a scripted offload on the
 * other end of an AF_UNIX SOCK_SEQPACKET pair (whole frames per message, as
 * on the AF_PACKET socket; no root needed).  The offload thread decodes with
 * libquicoff-wire and answers, loses answers, or forgets requests, so the
 * tests see: request IDs and ACKs, re-sends of the identical frame, the §6
 * idempotent answers of a retry, timeouts, one outstanding request per entry,
 * STATS, EVENTs with sequence gaps, data batches both ways, data kept while a
 * request waits, hostile frames, and keys wiped from every buffer.
 * The tests against the real quicoff-dpdk are tests/dpdk/test_host_lib.py.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_int.h"
#include "quicoff/host.h"
#include "test_util.h"

enum fake_mode {
    FAKE_ANSWER,     /* answer every request */
    FAKE_LOSE_FIRST, /* run the request, lose its first answer, answer retries from memory */
    FAKE_FORGET,     /* run it, lose the answer, forget it: the retry runs again (§6) */
    FAKE_SILENT,     /* never answer */
};

#define FAKE_MAX 64
static struct fake {
    int fd;
    atomic_int mode;
    atomic_bool stop;
    pthread_mutex_t mu;
    unsigned n_frames;
    uint8_t frames[FAKE_MAX][1600];
    size_t lens[FAKE_MAX];
    bool installed[2][16];
    uint32_t seen_rid;
    bool seen_any;
    quicoff_status_t remembered;
} fake;

static const uint8_t HOST_MAC[6] = {2, 0, 0, 0, 0, 1};
static const uint8_t OFFLOAD_MAC[6] = {2, 0, 0, 0, 0, 2};
static const uint8_t KEY[16] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
                                0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xf0, 0x0f};

static void fake_send(const struct quicoff_wire_msg *m)
{
    uint8_t buf[2048];
    size_t len;
    if (quicoff_wire_encode(m, buf, sizeof(buf), &len) == QUICOFF_OK)
        (void)send(fake.fd, buf, len, 0);
}

static quicoff_status_t fake_run(const struct quicoff_wire_msg *m)
{
    bool *e = &fake.installed[m->direction & 1][m->index & 15];
    switch (m->kind) {
    case QUICOFF_WIRE_ADD:
        if (*e)
            return QUICOFF_EXISTS;
        *e = true;
        return QUICOFF_OK;
    case QUICOFF_WIRE_REMOVE:
        if (!*e)
            return QUICOFF_UNKNOWN_CONNECTION;
        *e = false;
        return QUICOFF_OK;
    case QUICOFF_WIRE_QUERY:
        return *e ? QUICOFF_OK : QUICOFF_UNKNOWN_CONNECTION;
    default:
        return QUICOFF_OK;
    }
}

static void fake_answer(const struct quicoff_wire_msg *req, quicoff_status_t st)
{
    struct quicoff_wire_msg a;
    if (req->kind == QUICOFF_WIRE_QUERY) {
        quicoff_wire_stats_for(req, st, &a);
        a.u.stats.has_conn = st == QUICOFF_OK;
        a.u.stats.conn.packets = 42;
        a.u.stats.conn.key_generation = 3;
    } else {
        quicoff_wire_ack_for(req, st, &a);
    }
    fake_send(&a);
}

static void fake_frame(const uint8_t *f, size_t len)
{
    pthread_mutex_lock(&fake.mu);
    if (fake.n_frames < FAKE_MAX) {
        memcpy(fake.frames[fake.n_frames], f, len < 1600 ? len : 1600);
        fake.lens[fake.n_frames++] = len;
    }
    struct quicoff_wire_msg m;
    if (quicoff_wire_decode(f, len, &m) == QUICOFF_OK && m.kind >= QUICOFF_WIRE_ADD &&
        m.kind <= QUICOFF_WIRE_QUERY) {
        bool retry = fake.seen_any && fake.seen_rid == m.request_id;
        int mode = atomic_load(&fake.mode);
        if (mode == FAKE_ANSWER) {
            fake_answer(&m, fake_run(&m));
        } else if (mode == FAKE_LOSE_FIRST) {
            if (!retry)
                fake.remembered = fake_run(&m); /* its answer is "lost" */
            else
                fake_answer(&m, fake.remembered);
        } else if (mode == FAKE_FORGET) {
            quicoff_status_t st = fake_run(&m);
            if (retry)
                fake_answer(&m, st);
        }
        fake.seen_rid = m.request_id;
        fake.seen_any = true;
    }
    quicoff_wire_msg_clear(&m);
    pthread_mutex_unlock(&fake.mu);
}

/* Frames the offload has seen (the lock orders the main thread's reads of
 * fake.frames after the offload thread's writes). */
static unsigned fake_frames(void)
{
    pthread_mutex_lock(&fake.mu);
    unsigned n = fake.n_frames;
    pthread_mutex_unlock(&fake.mu);
    return n;
}

static void *fake_thread(void *arg)
{
    (void)arg;
    uint8_t buf[2048];
    while (!atomic_load(&fake.stop)) {
        struct pollfd p = {.fd = fake.fd, .events = POLLIN};
        if (poll(&p, 1, 5) <= 0)
            continue;
        ssize_t n = recv(fake.fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n > 0)
            fake_frame(buf, (size_t)n);
    }
    return NULL;
}

static struct quicoff_host *host;
static pthread_t fake_tid;
static unsigned events_seen;
static uint32_t last_event_seq;
static unsigned replies_seen;
static struct quicoff_host_reply last_reply;

static void on_event(void *arg, const struct quicoff_wire_msg *ev)
{
    (void)arg;
    events_seen++;
    last_event_seq = ev->request_id;
}

static void on_reply(void *arg, const struct quicoff_host_reply *r)
{
    (void)arg;
    replies_seen++;
    last_reply = *r;
    last_reply.msg = NULL;
}

static void start(unsigned timeout_ms, unsigned tries)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv) != 0)
        abort();
    memset(&fake.n_frames, 0, sizeof(fake) - offsetof(struct fake, n_frames));
    fake.fd = sv[1];
    atomic_store(&fake.mode, FAKE_ANSWER);
    atomic_store(&fake.stop, false);
    struct quicoff_host_config cfg;
    quicoff_host_config_init(&cfg);
    memcpy(cfg.offload_mac, OFFLOAD_MAC, 6);
    cfg.ack_timeout_ms = timeout_ms;
    cfg.max_tries = tries;
    cfg.backlog = 4;
    cfg.on_event = on_event;
    cfg.on_reply = on_reply;
    events_seen = replies_seen = 0;
    if (quicoff_host_open_fd(sv[0], HOST_MAC, &cfg, &host) != QUICOFF_HOST_OK)
        abort();
    pthread_create(&fake_tid, NULL, fake_thread, NULL);
}

static void stop(void)
{
    atomic_store(&fake.stop, true);
    pthread_join(fake_tid, NULL);
    quicoff_host_close(host);
    close(fake.fd);
    host = NULL;
}

static void add_msg(struct quicoff_wire_msg *m, uint8_t direction, uint32_t index)
{
    quicoff_wire_msg_init(m, QUICOFF_WIRE_ADD);
    m->direction = direction;
    m->index = index;
    struct quicoff_conn_config *c = &m->u.add.cfg;
    c->direction = direction;
    c->suite = QUICOFF_AES_128_GCM;
    memcpy(c->keys.key, KEY, 16);
    memcpy(c->keys.iv, KEY, 12);
    memcpy(c->keys.hp, KEY, 16);
    c->dcid_len = 8;
    memset(c->dcid, 0xd0 + (int)index, 8);
}

static bool contains_key(const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + sizeof(KEY) <= len; i++)
        if (memcmp(p + i, KEY, sizeof(KEY)) == 0)
            return true;
    return false;
}

static bool kept_frames_wiped(void)
{
    for (unsigned i = 0; i < host->cfg.max_pending; i++)
        if (contains_key(host->pending[i].frame, sizeof(host->pending[i].frame)))
            return false;
    return true;
}

static void test_add_ack(void)
{
    start(20, 6);
    struct quicoff_wire_msg m;
    struct quicoff_host_reply r;
    add_msg(&m, QUICOFF_DIR_RX, 1);
    quicoff_host_status_t st = quicoff_host_request(host, &m, &r, NULL);
    ok(st == QUICOFF_HOST_OK, "ADD acknowledged: %s", quicoff_host_status_name(st));
    ok(r.tries == 1 && r.status == QUICOFF_OK && r.success, "one try, ok");
    ok(!contains_key((const uint8_t *)&m, sizeof(m)), "the caller's message is wiped");
    ok(kept_frames_wiped(), "no key left in the kept frames");
    ok(fake_frames() == 1 && contains_key(fake.frames[0], fake.lens[0]),
       "the one frame carried the key");
    ok(memcmp(fake.frames[0], OFFLOAD_MAC, 6) == 0 && memcmp(fake.frames[0] + 6, HOST_MAC, 6) == 0,
       "addressed to the offload from the host");
    add_msg(&m, QUICOFF_DIR_RX, 1);
    st = quicoff_host_request(host, &m, &r, NULL);
    ok(st == QUICOFF_HOST_REFUSED && r.status == QUICOFF_EXISTS && !r.success,
       "a second ADD at the first try is refused: exists");
    stop();
}

static void test_lost_ack(void)
{
    start(20, 6);
    atomic_store(&fake.mode, FAKE_LOSE_FIRST);
    struct quicoff_wire_msg m;
    struct quicoff_host_reply r;
    add_msg(&m, QUICOFF_DIR_TX, 2);
    quicoff_host_status_t st = quicoff_host_request(host, &m, &r, NULL);
    /* at least one retry; more when the fake's answer to the first comes
     * after the next timeout (a loaded machine): every try the same frame */
    ok(st == QUICOFF_HOST_OK && r.tries >= 2, "lost ACK: answered at try %u", r.tries);
    unsigned seen = fake_frames(), same = 0;
    for (unsigned i = 1; i < seen; i++)
        same += fake.lens[i] == fake.lens[0] &&
                memcmp(fake.frames[i], fake.frames[0], fake.lens[0]) == 0;
    ok(seen >= 2 && seen <= r.tries && same == seen - 1,
       "every retry is the identical frame (same request ID): %u of %u", same, seen - 1);
    struct quicoff_host_stats s;
    quicoff_host_get_stats(host, &s);
    ok(s.retries == r.tries - 1, "the retries counted (%llu)", (unsigned long long)s.retries);
    ok(kept_frames_wiped(), "kept frame wiped after the answer");

    /* the offload forgot the first try: a retried ADD meets `exists`, a
     * retried REMOVE `unknown_connection`; both mean it took effect (§6) */
    atomic_store(&fake.mode, FAKE_FORGET);
    add_msg(&m, QUICOFF_DIR_TX, 3);
    st = quicoff_host_request(host, &m, &r, NULL);
    ok(st == QUICOFF_HOST_OK && r.status == QUICOFF_EXISTS && r.success && r.tries >= 2,
       "forgotten ADD: exists on the retry is success");
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_REMOVE);
    m.direction = QUICOFF_DIR_TX;
    m.index = 3;
    st = quicoff_host_request(host, &m, &r, NULL);
    ok(st == QUICOFF_HOST_OK && r.status == QUICOFF_UNKNOWN_CONNECTION && r.success,
       "forgotten REMOVE: unknown_connection on the retry is success");
    stop();
}

static void test_timeout(void)
{
    start(2, 3);
    atomic_store(&fake.mode, FAKE_SILENT);
    struct quicoff_wire_msg m;
    struct quicoff_host_reply r;
    add_msg(&m, QUICOFF_DIR_RX, 4);
    quicoff_host_status_t st = quicoff_host_request(host, &m, &r, NULL);
    ok(st == QUICOFF_HOST_TIMEOUT && r.tries == 3, "no answer: timeout after %u tries", r.tries);
    usleep(20000);
    ok(fake_frames() == 3, "exactly max_tries frames sent (%u)", fake_frames());
    ok(kept_frames_wiped(), "kept frame wiped after the timeout");
    ok(quicoff_host_next_timeout_ms(host) == -1, "nothing outstanding");
    stop();
}

static void test_async_busy_query(void)
{
    start(20, 6);
    atomic_store(&fake.mode, FAKE_SILENT);
    struct quicoff_wire_msg m;
    uint32_t rid1, rid2;
    add_msg(&m, QUICOFF_DIR_RX, 5);
    ok(quicoff_host_submit(host, &m, &rid1) == QUICOFF_HOST_OK, "submitted");
    ok(quicoff_host_next_timeout_ms(host) >= 0, "a timer is due");
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_REMOVE);
    m.direction = QUICOFF_DIR_RX;
    m.index = 5;
    ok(quicoff_host_submit(host, &m, &rid2) == QUICOFF_HOST_BUSY,
       "a second request for the same entry waits: busy");
    quicoff_wire_msg_init(&m, QUICOFF_WIRE_REMOVE);
    m.direction = QUICOFF_DIR_TX;
    m.index = 5;
    ok(quicoff_host_submit(host, &m, &rid2) == QUICOFF_HOST_OK && rid2 == rid1 + 1,
       "another entry is pipelined, next request ID");
    atomic_store(&fake.mode, FAKE_ANSWER);
    for (int i = 0; i < 200 && replies_seen < 2; i++) {
        usleep(2000);
        quicoff_host_process(host);
    }
    ok(replies_seen == 2, "both completed through on_reply after a retry");

    struct quicoff_wire_msg q, ans;
    struct quicoff_host_reply r;
    quicoff_wire_msg_init(&q, QUICOFF_WIRE_QUERY);
    q.direction = QUICOFF_DIR_RX;
    q.index = 5;
    q.flags = QUICOFF_WIRE_QUERY_CONN;
    quicoff_host_status_t st = quicoff_host_request(host, &q, &r, &ans);
    ok(st == QUICOFF_HOST_OK && ans.kind == QUICOFF_WIRE_STATS && ans.u.stats.has_conn &&
           ans.u.stats.conn.packets == 42 && ans.u.stats.conn.key_generation == 3,
       "QUERY: the STATS reply is copied out");
    quicoff_wire_msg_init(&q, QUICOFF_WIRE_QUERY);
    q.direction = QUICOFF_DIR_RX;
    q.index = 9;
    q.flags = QUICOFF_WIRE_QUERY_CONN;
    st = quicoff_host_request(host, &q, &r, NULL);
    ok(st == QUICOFF_HOST_REFUSED && r.status == QUICOFF_UNKNOWN_CONNECTION,
       "QUERY of no entry: refused, unknown_connection");
    quicoff_wire_msg_init(&q, QUICOFF_WIRE_DATA_TO_OFFLOAD);
    ok(quicoff_host_submit(host, &q, NULL) == QUICOFF_HOST_INVALID, "data is not a request");
    stop();
}

static void send_event(uint32_t seq)
{
    struct quicoff_wire_msg e;
    quicoff_wire_msg_init(&e, QUICOFF_WIRE_EVENT);
    e.has_eth = true;
    memcpy(e.eth.dst, HOST_MAC, 6);
    memcpy(e.eth.src, OFFLOAD_MAC, 6);
    e.u.event.code = QUICOFF_WIRE_EV_KEY_UPDATE;
    e.request_id = seq;
    e.index = 1;
    e.direction = QUICOFF_DIR_RX;
    fake_send(&e);
}

static void send_data_to_host(uint32_t index, uint64_t pn, const char *text)
{
    struct quicoff_wire_msg d;
    quicoff_wire_msg_init(&d, QUICOFF_WIRE_DATA_TO_HOST);
    d.has_eth = true;
    memcpy(d.eth.dst, HOST_MAC, 6);
    memcpy(d.eth.src, OFFLOAD_MAC, 6);
    d.u.data.index = index;
    d.u.data.pn = pn;
    d.u.data.payload = (const uint8_t *)text;
    d.u.data.payload_len = (uint32_t)strlen(text);
    fake_send(&d);
}

static void test_events_and_data(void)
{
    start(20, 6);
    send_event(5);
    send_event(7);
    struct quicoff_wire_data out[8];
    unsigned got = 0;
    for (int i = 0; i < 100 && events_seen < 2; i++) {
        usleep(1000);
        got += quicoff_host_recv_data(host, out, 8, NULL);
    }
    struct quicoff_host_stats s;
    quicoff_host_get_stats(host, &s);
    ok(events_seen == 2 && last_event_seq == 7 && s.events_missed == 1,
       "events delivered, one gap in the sequence counted");

    struct quicoff_host_pkt pk[3];
    const char *texts[3] = {"first packet", "second", "third packet here"};
    for (unsigned i = 0; i < 3; i++)
        pk[i] = (struct quicoff_host_pkt){.index = 7,
                                          .pn = 100 + i,
                                          .data = (const uint8_t *)texts[i],
                                          .len = (uint32_t)strlen(texts[i])};
    unsigned sent;
    ok(quicoff_host_send_data(host, pk, 3, &sent) == QUICOFF_HOST_OK && sent == 3,
       "a batch of three sent");
    usleep(20000);
    bool good = fake_frames() == 3;
    for (unsigned i = 0; good && i < 3; i++) {
        struct quicoff_wire_msg m;
        good = quicoff_wire_decode(fake.frames[i], fake.lens[i], &m) == QUICOFF_OK &&
               m.kind == QUICOFF_WIRE_DATA_TO_OFFLOAD && m.u.data.index == 7 &&
               m.u.data.pn == 100 + i && m.u.data.payload_len == strlen(texts[i]) &&
               memcmp(m.u.data.payload, texts[i], m.u.data.payload_len) == 0;
    }
    ok(good, "the offload got each as DATA_TO_OFFLOAD with its index, PN and bytes");
    pk[1].pn = QUICOFF_WIRE_PN_MAX + 1;
    ok(quicoff_host_send_data(host, pk, 3, &sent) == QUICOFF_HOST_INVALID && sent == 0,
       "a PN past 2^62-1: nothing of the batch is sent");

    send_data_to_host(9, 77, "hello host");
    send_data_to_host(9, 78, "again");
    got = 0;
    for (int i = 0; i < 100 && got < 2; i++) {
        usleep(1000);
        got += quicoff_host_recv_data(host, out + got, 8 - got, NULL);
    }
    ok(got == 2 && out[0].pn == 77 && out[1].pn == 78 && out[0].index == 9 &&
           out[1].payload_len == 5 && memcmp(out[1].payload, "again", 5) == 0,
       "DATA_TO_HOST received in one batch");

    /* data that arrives while a request waits is kept for the next call */
    atomic_store(&fake.mode, FAKE_LOSE_FIRST);
    struct quicoff_wire_msg m;
    struct quicoff_host_reply r;
    add_msg(&m, QUICOFF_DIR_RX, 11);
    send_data_to_host(9, 79, "kept");
    ok(quicoff_host_request(host, &m, &r, NULL) == QUICOFF_HOST_OK, "request answered");
    got = quicoff_host_recv_data(host, out, 8, NULL);
    ok(got == 1 && out[0].pn == 79 && memcmp(out[0].payload, "kept", 4) == 0,
       "the frame that came during the wait is delivered afterwards");
    stop();
}

static void test_hostile_frames(void)
{
    start(20, 6);
    uint8_t junk[200];
    unsigned seed = 1;
    for (int i = 0; i < 3000; i++) {
        size_t len = (size_t)(rand_r(&seed) % (int)sizeof(junk));
        for (size_t k = 0; k < len; k++)
            junk[k] = (uint8_t)rand_r(&seed);
        if (len > 16 && i % 2) { /* a plausible v1 header, random rest */
            junk[12] = 0x88;
            junk[13] = 0xb5;
            junk[14] = 0x51;
            junk[15] = 0x01;
        }
        (void)send(fake.fd, junk, len, 0);
        if (i % 100 == 99) {
            struct quicoff_wire_data out[32];
            while (quicoff_host_recv_data(host, out, 32, NULL) > 0) {
            }
        }
    }
    quicoff_host_process(host);
    struct quicoff_host_stats s;
    quicoff_host_get_stats(host, &s);
    ok(s.frames_ignored > 0, "junk frames ignored, no crash (%llu)",
       (unsigned long long)s.frames_ignored);
    struct quicoff_wire_msg m;
    struct quicoff_host_reply r;
    add_msg(&m, QUICOFF_DIR_RX, 12);
    ok(quicoff_host_request(host, &m, &r, NULL) == QUICOFF_HOST_OK, "still works afterwards");
    stop();
}

static void test_trains(void)
{
    start(20, 6);
    /* two trains, as a stack writes for GSO: 3 x 100 bytes + a last of 40,
     * and a train of one packet */
    static uint8_t buf[340], one[77];
    for (unsigned i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i / 100);
    memset(one, 0xee, sizeof(one));
    struct quicoff_host_train t[2] = {
        {.index = 7, .pn = 200, .data = buf, .len = sizeof(buf), .segment_size = 100},
        {.index = 8, .pn = 9, .data = one, .len = sizeof(one), .segment_size = 1200},
    };
    unsigned sent = 0;
    ok(quicoff_host_send_train(host, t, 2, &sent) == QUICOFF_HOST_OK && sent == 2,
       "two trains sent in one batch");
    usleep(20000);
    pthread_mutex_lock(&fake.mu);
    bool good = fake.n_frames == 2;
    struct quicoff_wire_msg m;
    good = good && quicoff_wire_decode(fake.frames[0], fake.lens[0], &m) == QUICOFF_OK &&
           m.kind == QUICOFF_WIRE_DATA_TRAIN && m.u.data.index == 7 && m.u.data.pn == 200 &&
           m.u.data.count == 4 && m.u.data.segment_size == 100 &&
           m.u.data.payload_len == sizeof(buf) && memcmp(m.u.data.payload, buf, sizeof(buf)) == 0;
    uint32_t len = 0;
    good = good && quicoff_wire_train_packet(&m.u.data, 3, &len) != NULL && len == 40;
    good = good && quicoff_wire_decode(fake.frames[1], fake.lens[1], &m) == QUICOFF_OK &&
           m.kind == QUICOFF_WIRE_DATA_TRAIN && m.u.data.count == 1 && m.u.data.pn == 9 &&
           m.u.data.payload_len == sizeof(one);
    pthread_mutex_unlock(&fake.mu);
    ok(good, "the offload got them as DATA_TRAIN: index, first PN, count, segment size, bytes");
    struct quicoff_host_stats s;
    quicoff_host_get_stats(host, &s);
    ok(s.trains_sent == 2 && s.data_sent == 2 && s.packets_sent == 5,
       "stats: 2 train frames, 5 packets (%llu, %llu)", (unsigned long long)s.trains_sent,
       (unsigned long long)s.packets_sent);

    struct quicoff_host_train bad = t[0];
    bad.segment_size = 0;
    ok(quicoff_host_send_train(host, &bad, 1, &sent) == QUICOFF_HOST_INVALID && sent == 0,
       "segment size 0: invalid, nothing sent");
    bad = t[0];
    bad.pn = QUICOFF_WIRE_PN_MAX - 2; /* 4 packets: the last PN would be 2^62 */
    struct quicoff_host_train two[2] = {t[1], bad};
    ok(quicoff_host_send_train(host, two, 2, &sent) == QUICOFF_HOST_INVALID && sent == 0,
       "a last PN past 2^62-1: nothing of the batch is sent");
    bad = t[0];
    bad.len = 60000; /* more than the default frame_cap of 9216 */
    ok(quicoff_host_send_train(host, &bad, 1, &sent) == QUICOFF_HOST_INVALID,
       "a train longer than frame_cap: invalid");
    usleep(10000);
    pthread_mutex_lock(&fake.mu);
    ok(fake.n_frames == 2, "no frame of the refused trains reached the offload");
    pthread_mutex_unlock(&fake.mu);
    stop();
}

static void test_bad_arguments(void)
{
    struct quicoff_host *h = NULL;
    ok(quicoff_host_open("no-such-interface0", NULL, &h) != QUICOFF_HOST_OK && h == NULL,
       "an interface that does not exist: an error, no handle");
    ok(quicoff_host_open(NULL, NULL, &h) == QUICOFF_HOST_INVALID, "NULL name: invalid");
    ok(quicoff_host_open_fd(-1, HOST_MAC, NULL, &h) == QUICOFF_HOST_INVALID, "bad fd: invalid");
    ok(quicoff_host_process(NULL) == QUICOFF_HOST_INVALID, "NULL handle: invalid");
    quicoff_host_close(NULL);
    ok(strcmp(quicoff_host_status_name(QUICOFF_HOST_TIMEOUT), "timeout") == 0, "names");
}

int main(void)
{
    subtest("add and ack", test_add_ack);
    subtest("lost ack, retry, idempotency", test_lost_ack);
    subtest("timeout", test_timeout);
    subtest("async, busy, query", test_async_busy_query);
    subtest("events and data", test_events_and_data);
    subtest("hostile frames", test_hostile_frames);
    subtest("bad arguments", test_bad_arguments);
    subtest("trains", test_trains);
    return done_testing();
}
