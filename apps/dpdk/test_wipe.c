/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Frames that may carry keys are zeroed before they are freed (wipe.h;
 * docs/dpdk.md, "Tests"): classify.c's drop paths for signaling frames -
 * the control ring full, 0x88B5/0x88B6 from the network port, multi-segment
 * and unparsable host frames, compat frames without --compat - run on real
 * mbufs of a real mempool (EAL without hugepages or devices), and the freed
 * buffers are searched for the key bytes afterwards. A plain rte_pktmbuf_free
 * of the same frame is the control: it leaves the key in the pool, so the
 * search can see one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "classify.h"
#include "options.h"
#include "stats.h"
#include "quicoff/wire.h"

struct qd_app qda;
struct qd_counters qd_stats[RTE_MAX_LCORE + 1];

static int failures, checks;

#define CHECK(c, ...)                       \
    do {                                    \
        checks++;                           \
        if (!(c)) {                         \
            failures++;                     \
            printf("not ok: " __VA_ARGS__); \
            printf("\n");                   \
        }                                   \
    } while (0)

static const uint8_t KEY[16] = {0x4b, 0x45, 0x59, 0x21, 0xa5, 0x5a, 0xc3, 0x3c,
                                0x96, 0x69, 0x0f, 0xf0, 0x11, 0xee, 0x77, 0x88};
static struct rte_mempool *pool;
static struct qd_sort sort;
static struct qd_counters st;

/* An Ethernet frame of EtherType et whose payload holds KEY (as an ADD's
 * PACKET_KEY TLV would), in a fresh mbuf (or a chain of two). */
static struct rte_mbuf *frame(uint16_t et, int segs)
{
    struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
    uint8_t *p = (uint8_t *)rte_pktmbuf_append(m, 100);
    memset(p, 0x22, 100);
    p[12] = (uint8_t)(et >> 8);
    p[13] = (uint8_t)et;
    p[14] = QUICOFF_WIRE_MAGIC;
    p[15] = QUICOFF_WIRE_VERSION;
    p[16] = QUICOFF_WIRE_ADD;
    memcpy(p + 40, KEY, sizeof(KEY));
    if (segs > 1) {
        struct rte_mbuf *s = rte_pktmbuf_alloc(pool);
        memcpy(rte_pktmbuf_append(s, 64), KEY, sizeof(KEY));
        rte_pktmbuf_chain(m, s);
    }
    return m;
}

/* Whether KEY is anywhere in the buffers of m's segments (after the free:
 * the mempool has no cache, so nothing reuses them meanwhile). */
struct bufs {
    uint8_t *addr[2];
    uint16_t len[2];
    int n;
};

static struct bufs bufs_of(struct rte_mbuf *m)
{
    struct bufs b = {.n = 0};
    for (; m && b.n < 2; m = m->next, b.n++) {
        b.addr[b.n] = m->buf_addr;
        b.len[b.n] = m->buf_len;
    }
    return b;
}

static int key_left(const struct bufs *b)
{
    for (int i = 0; i < b->n; i++)
        if (memmem(b->addr[i], b->len[i], KEY, sizeof(KEY)))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    (void)argc;
    char *eal[] = {argv[0], "--no-huge",   "--no-pci", "--no-shconf",   "-m",          "64", "-l",
                   "0",     "--log-level", "error",    "--file-prefix", "qd_test_wipe"};
    if (rte_eal_init((int)RTE_DIM(eal), eal) < 0) {
        printf("EAL init failed\n");
        return 1;
    }
    pool = rte_pktmbuf_pool_create("wipe", 63, 0, 0, RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
    static struct qd_options opt;
    qd_options_default(&opt);
    qda.opt = &opt;
    qda.nb_workers = 1;
    qda.ctrl_ring = rte_ring_create("ctrl", 4, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
    sort.st = &st;

    /* control: freed as before, the key stays in the pool */
    struct rte_mbuf *m = frame(QUICOFF_WIRE_ETHERTYPE_SIGNAL, 1);
    struct bufs b = bufs_of(m);
    rte_pktmbuf_free(m);
    CHECK(key_left(&b), "control: a plain free leaves the key readable");

    /* the control ring full */
    while (rte_ring_enqueue(qda.ctrl_ring, &st) == 0)
        ;
    m = frame(QUICOFF_WIRE_ETHERTYPE_SIGNAL, 1);
    b = bufs_of(m);
    qd_classify_host(&sort, m);
    CHECK(st.ctrl_ring_full == 1, "control ring full: counted (%lu)",
          (unsigned long)st.ctrl_ring_full);
    CHECK(!key_left(&b), "control ring full: the dropped ADD is wiped");
    void *x;
    while (rte_ring_dequeue(qda.ctrl_ring, &x) == 0)
        ;

    /* offload frames from the network port, both EtherTypes */
    const uint16_t ets[2] = {QUICOFF_WIRE_ETHERTYPE_SIGNAL, QUICOFF_WIRE_ETHERTYPE_DATA};
    for (int i = 0; i < 2; i++) {
        m = frame(ets[i], 1);
        b = bufs_of(m);
        qd_classify_net(&sort, m);
        CHECK(st.signal_from_network == (uint64_t)i + 1, "from the network %#x: counted", ets[i]);
        CHECK(!key_left(&b), "from the network %#x: wiped", ets[i]);
    }

    /* multi-segment signaling from the host: both segments */
    m = frame(QUICOFF_WIRE_ETHERTYPE_SIGNAL, 2);
    b = bufs_of(m);
    qd_classify_host(&sort, m);
    CHECK(st.multiseg_dropped == 1, "multi-segment: counted");
    CHECK(b.n == 2 && !key_left(&b), "multi-segment: every segment wiped");

    /* a host frame whose Ethernet header cannot be parsed */
    m = frame(QUICOFF_WIRE_ETHERTYPE_SIGNAL, 1);
    b = bufs_of(m);
    rte_pktmbuf_trim(m, 100 - 12); /* 12 bytes: no EtherType */
    qd_classify_host(&sort, m);
    CHECK(st.host_bad_frame == 1, "unparsable host frame: counted");
    CHECK(!key_left(&b), "unparsable host frame: wiped");

    /* compat data without --compat */
    m = frame(QUICOFF_WIRE_ETHERTYPE_DATA, 1);
    b = bufs_of(m);
    qd_classify_host(&sort, m);
    CHECK(st.compat_rejected == 1, "compat data without --compat: counted");
    CHECK(!key_left(&b), "compat data without --compat: wiped");

    /* an ADD behind three 0x8100 tags (deeper than the parser walks), from
     * either port: dropped as tag_stack_dropped, and wiped like any frame
     * that may be signaling */
    for (int port = 0; port < 2; port++) {
        m = frame(QUICOFF_WIRE_ETHERTYPE_SIGNAL, 1);
        uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);
        for (int t = 0; t < 3; t++) { /* tags at 12, 16, 20; the ADD's EtherType at 24 */
            p[12 + 4 * t] = 0x81;
            p[13 + 4 * t] = 0x00;
            p[14 + 4 * t] = 0x00;
            p[15 + 4 * t] = (uint8_t)(t + 1);
        }
        p[24] = (uint8_t)(QUICOFF_WIRE_ETHERTYPE_SIGNAL >> 8);
        p[25] = (uint8_t)QUICOFF_WIRE_ETHERTYPE_SIGNAL;
        b = bufs_of(m);
        if (port == 0)
            qd_classify_host(&sort, m);
        else
            qd_classify_net(&sort, m);
        CHECK(st.tag_stack_dropped == (uint64_t)port + 1, "deep tag stack (%s port): counted",
              port ? "network" : "host");
        CHECK(!key_left(&b), "deep tag stack (%s port): wiped", port ? "network" : "host");
    }

    CHECK(rte_mempool_avail_count(pool) == 63, "every mbuf back in the pool (%u)",
          rte_mempool_avail_count(pool));
    printf("wipe: %d checks, %d failures\n", checks, failures);
    rte_eal_cleanup();
    return failures ? 1 : 0;
}
