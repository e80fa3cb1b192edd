/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "The data path never allocates" (quicoff.h, README, docs/design.md):
 * a thread that has just created its worker protects and unprotects bursts
 * of every suite, on every backend this build and CPU offer, and the heap is
 * not called once in between.
 *
 * How: this program defines malloc, calloc, realloc, posix_memalign,
 * aligned_alloc and memalign itself.  The executable comes first in the
 * dynamic linker's lookup order, so libquicoff, OpenSSL and libIPSec_MB call
 * these; they count the calls made on a thread that has switched counting
 * on, and hand every call to the next definition (libc's, or the
 * sanitizer's under ASan/TSan: dlsym(RTLD_NEXT)).
 *
 * Keys are installed on the main thread (the control path may allocate);
 * the worker is created on a fresh thread (may allocate), then that thread
 * counts from its first packet on: a backend that set up per-thread state
 * lazily (ipsec-mb's job manager before the worker owned it) shows here.
 */
#include "test_packets.h"
#include "test_util.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

/* ------------------------------------------------------------------------ */
/* Counting allocator                                                        */

static _Thread_local volatile int counting; /* volatile: see meson.build */
static _Atomic unsigned long counted;

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void *(*real_memalign)(size_t, size_t);
static void (*real_free)(void *);

/* ThreadSanitizer's runtime calls malloc while it initialises, before it
 * could record our function entries: these functions are not instrumented
 * for it (their data is thread-local or set before any thread starts). */
#define NO_TSAN __attribute__((no_sanitize("thread")))

/* dlsym itself may call calloc before real_calloc is known: served from
 * here, never freed to the real allocator. */
static _Alignas(16) unsigned char boot[4096];
static size_t boot_used;
static int resolving;

NO_TSAN static int from_boot(const void *p)
{
    return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + sizeof(boot);
}

NO_TSAN static void *boot_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n > sizeof(boot) - boot_used)
        return NULL;
    void *p = boot + boot_used;
    boot_used += n;
    return p;
}

NO_TSAN static void resolve(void)
{
    if (real_free != NULL || resolving)
        return;
    resolving = 1;
    real_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
    real_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
    real_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    real_posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT, "posix_memalign");
    real_aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
    real_memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
    real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
    resolving = 0;
}

NO_TSAN static void count(void)
{
    if (counting)
        atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed);
}

NO_TSAN void *malloc(size_t n)
{
    resolve();
    count();
    return real_malloc ? real_malloc(n) : boot_alloc(n);
}

NO_TSAN void *calloc(size_t k, size_t n)
{
    resolve();
    count();
    if (real_calloc == NULL)
        return n && k > SIZE_MAX / n ? NULL : boot_alloc(k * n); /* static: zeroed */
    return real_calloc(k, n);
}

NO_TSAN void *realloc(void *p, size_t n)
{
    resolve();
    count();
    return real_realloc(p, n); /* boot memory is never realloc'd: only dlsym uses it */
}

NO_TSAN int posix_memalign(void **out, size_t align, size_t n)
{
    resolve();
    count();
    return real_posix_memalign(out, align, n);
}

NO_TSAN void *aligned_alloc(size_t align, size_t n)
{
    resolve();
    count();
    return real_aligned_alloc(align, n);
}

NO_TSAN void *memalign(size_t align, size_t n)
{
    resolve();
    count();
    return real_memalign(align, n);
}

NO_TSAN void free(void *p)
{
    if (p == NULL || from_boot(p))
        return;
    resolve();
    real_free(p);
}

/* ------------------------------------------------------------------------ */
/* The bursts                                                                */

#define CID_LEN 8
#define N 32 /* packets per burst */
#define CAP 1600

struct run {
    struct quicoff_table *t;
    quicoff_conn_t tx[QUICOFF_SUITE_COUNT];
    unsigned long allocs; /* out: heap calls during the bursts */
    int good;             /* out: every packet protected and unprotected back */
};

static uint8_t plain[N][CAP], buf[N][CAP];

/* One suite's bursts: payload sizes 64 and 1400 (for CCM, on both sides of
 * any job-API crossover), protect then unprotect, several rounds. */
static int bursts(struct quicoff_worker *w, const struct run *r, int s)
{
    struct quicoff_pkt p[N];
    struct quicoff_result res[N];
    uint8_t cid[CID_LEN], payload[1400];
    int good = 1;

    tp_cid((uint32_t)s, cid, CID_LEN);
    for (int round = 0; round < 4; round++) {
        uint32_t len[N];
        for (int i = 0; i < N; i++) {
            size_t plen = (i + round) % 2 ? 1400 : 64;
            memset(payload, (int)(i + 16 * s), plen);
            struct tp_hdr h = {.dcid = cid,
                               .dcid_len = CID_LEN,
                               .pn_len = 4,
                               .pn = (uint64_t)round * N + (uint64_t)i};
            len[i] = (uint32_t)tp_build(plain[i], &h, payload, plen, NULL);
            memcpy(buf[i], plain[i], len[i]);
            p[i] = (struct quicoff_pkt){
                .data = buf[i], .end = len[i], .cap = CAP, .conn = r->tx[s], .pn = h.pn};
        }
        good &= quicoff_protect_burst(w, p, res, N) == N;
        for (int i = 0; i < N; i++)
            p[i] = (struct quicoff_pkt){.data = buf[i],
                                        .end = len[i] + QUICOFF_TAG_LEN,
                                        .cap = CAP};
        quicoff_unprotect_burst(w, p, res, N);
        for (int i = 0; i < N; i++)
            good &= res[i].status == QUICOFF_OK && memcmp(buf[i], plain[i], len[i]) == 0;
    }
    return good;
}

static void *worker_thread(void *arg)
{
    struct run *r = arg;
    struct quicoff_worker *w = quicoff_worker_create(r->t); /* may allocate */

    r->good = w != NULL;
    if (w == NULL)
        return NULL;
    unsigned long before = atomic_load(&counted);
    counting = 1;
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++)
        r->good &= bursts(w, r, s);
    counting = 0;
    r->allocs = atomic_load(&counted) - before;
    quicoff_worker_destroy(w);
    return NULL;
}

static void check_backend(const char *backend)
{
    struct quicoff_table_config cfg = {.capacity = 64,
                                       .local_cid_len = CID_LEN,
                                       .backend = backend};
    quicoff_status_t st;
    struct run r = {0};

    r.t = quicoff_table_create(&cfg, &st);
    if (r.t == NULL) {
        printf("# %s: not available here (status %d), skipped\n", backend, (int)st);
        return;
    }
    int added = 1;
    for (int s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        struct quicoff_packet_keys keys;
        uint8_t cid[CID_LEN];
        quicoff_conn_t rx;
        tp_keys((uint32_t)s, &keys);
        tp_cid((uint32_t)s, cid, CID_LEN);
        added &= tp_add(r.t, QUICOFF_DIR_TX, QUICOFF_LEVEL_ONE_RTT, (quicoff_suite_t)s, 0, cid,
                        CID_LEN, &keys, &r.tx[s]) == QUICOFF_OK &&
                 tp_add(r.t, QUICOFF_DIR_RX, QUICOFF_LEVEL_ONE_RTT, (quicoff_suite_t)s, 0, cid,
                        CID_LEN, &keys, &rx) == QUICOFF_OK;
    }
    if (ok(added, "%s: a TX and an RX entry of each suite", quicoff_table_backend(r.t))) {
        pthread_t th;
        int made = pthread_create(&th, NULL, worker_thread, &r) == 0;
        if (made)
            pthread_join(th, NULL);
        ok(made && r.good,
           "%s: 4 rounds of 32-packet protect + unprotect bursts of every suite "
           "on a fresh thread's worker, all OK",
           backend);
        ok(r.allocs == 0, "%s: no heap call during those bursts (%lu made)", backend, r.allocs);
    }
    quicoff_table_destroy(r.t);
}

static void test_openssl(void)
{
    check_backend("openssl");
}

static void test_ipsecmb(void)
{
    check_backend("ipsec-mb");
}

/* The counter itself: a heap call on a counting thread is seen. */
static void test_counter_counts(void)
{
    unsigned long before = atomic_load(&counted);
    counting = 1;
    void *volatile p = malloc(100);
    counting = 0;
    free(p);
    ok(atomic_load(&counted) - before == 1, "a malloc on a counting thread is counted");
}

int main(void)
{
    subtest("counter", test_counter_counts);
    subtest("openssl", test_openssl);
    subtest("ipsec-mb", test_ipsecmb);
    return done_testing();
}
