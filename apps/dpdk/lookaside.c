/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lookaside crypto through rte_cryptodev (see lookaside.h).
 *
 * Per burst:
 *   quicoff_{un,}protect_prepare (libquicoff: parse, look up, header
 *   protection off (RX), PN, key choice, limits) -> one rte_crypto_op per
 *   pending job, in place (AAD = the plaintext header, tag after the payload)
 *   -> enqueue all, dequeue all -> each job's verdict ->
 *   quicoff_{un,}protect_complete (libquicoff: key phase change, largest PN,
 *   header protection (TX) or the header put back (RX failure), counters).
 *
 * The worker waits for its own burst to come back before it completes it,
 * so a session is never used by an operation in flight outside the
 * prepare..complete window; libquicoff retires a key (and this file frees
 * its sessions) only once no worker is inside such a window that could see
 * it.
 *
 * Sessions: DPDK fixes the AAD length per session, and a QUIC header's length
 * varies with the packet-number length (and, for long headers, with the
 * token and Length sizes), so each key has a small cache of sessions by AAD
 * length: the four of a 1-RTT key are created with the key (install hook, on
 * the control thread: an ADD the session pool cannot hold is refused with
 * no_memory), long-header ones by the worker on first use.
 */
#include "lookaside.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#ifdef QD_HAVE_VDEV_INIT
#include <rte_bus_vdev.h>
#endif
#include <rte_cryptodev.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "stats.h"

#define LA_IV_OFF (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
#define LA_CCM_AAD_PRE 18 /* CCM: the AAD starts 18 bytes into its buffer (B0 + length) */
#define LA_AAD_MAX 256    /* CCM copies the AAD: headers longer than this are refused */
#define LA_AAD_OFF (LA_IV_OFF + 16)
#define LA_PRIV_SIZE (16 + RTE_ALIGN_CEIL(LA_CCM_AAD_PRE + LA_AAD_MAX, 16))
#define LA_SESS_SLOTS 8 /* sessions per key, by AAD length */
#define LA_QP_DESC 2048
#define LA_SCRATCH 2048 /* fail action pass: the ciphertext kept per packet */

struct qd_lookaside {
    uint8_t dev_id;
    char name[64];
    bool suite_ok[QUICOFF_SUITE_COUNT];
    unsigned nb_workers;
    struct rte_mempool *sess_pool, *op_pool;
    _Atomic uint32_t keys; /* keys with sessions (installed, not yet retired) */
};

/* One key's sessions (the job's key_user). Created by the install hook;
 * `sess`/`aad_len` then extended only by the worker serving the entry;
 * freed by the retire hook. */
struct la_key {
    enum rte_crypto_aead_algorithm algo;
    enum rte_crypto_aead_operation op;
    void *sess[LA_SESS_SLOTS];
    uint16_t aad_len[LA_SESS_SLOTS];
};

struct qd_la_worker {
    struct qd_lookaside *la;
    struct quicoff_worker *qw;
    uint16_t qp;
    uint8_t scratch[QD_BURST][LA_SCRATCH];
};

static const enum rte_crypto_aead_algorithm suite_algo[QUICOFF_SUITE_COUNT] = {
    RTE_CRYPTO_AEAD_AES_GCM,
    RTE_CRYPTO_AEAD_AES_GCM,
    RTE_CRYPTO_AEAD_AES_CCM,
    RTE_CRYPTO_AEAD_CHACHA20_POLY1305,
};

static bool cdev_supports(uint8_t dev, enum rte_crypto_aead_algorithm algo, uint16_t key_len)
{
    struct rte_cryptodev_sym_capability_idx idx = {.type = RTE_CRYPTO_SYM_XFORM_AEAD};
    idx.algo.aead = algo;
    const struct rte_cryptodev_symmetric_capability *cap = rte_cryptodev_sym_capability_get(dev,
                                                                                            &idx);
    return cap && rte_cryptodev_sym_capability_check_aead(cap, key_len, QUICOFF_TAG_LEN, 32,
                                                          QUICOFF_IV_LEN) == 0;
}

/* ------------------------------------------------------------ sessions */

static void *session_create(struct qd_lookaside *la, const struct la_key *k, const uint8_t *key,
                            uint8_t key_len, uint16_t aad_len)
{
    struct rte_crypto_sym_xform x = {.type = RTE_CRYPTO_SYM_XFORM_AEAD};
    x.aead.op = k->op;
    x.aead.algo = k->algo;
    x.aead.key.data = key; /* the PMD copies it into the session */
    x.aead.key.length = key_len;
    x.aead.iv.offset = LA_IV_OFF;
    x.aead.iv.length = QUICOFF_IV_LEN;
    x.aead.digest_length = QUICOFF_TAG_LEN;
    x.aead.aad_length = aad_len;
    return rte_cryptodev_sym_session_create(la->dev_id, &x, la->sess_pool);
}

/* The session of key k for this AAD length; created on a miss (NULL: none,
 * e.g. the pool is empty or the key has sessions for 8 lengths already). */
static void *session_for(struct qd_lookaside *la, struct la_key *k, const uint8_t *key,
                         uint8_t key_len, uint16_t aad_len)
{
    for (unsigned i = 0; i < LA_SESS_SLOTS; i++) {
        if (k->sess[i] && k->aad_len[i] == aad_len)
            return k->sess[i];
        if (!k->sess[i]) {
            void *s = session_create(la, k, key, key_len, aad_len);
            if (s) {
                k->aad_len[i] = aad_len;
                k->sess[i] = s;
            }
            return s;
        }
    }
    return NULL;
}

static void key_free(struct qd_lookaside *la, struct la_key *k)
{
    for (unsigned i = 0; i < LA_SESS_SLOTS; i++)
        if (k->sess[i])
            rte_cryptodev_sym_session_free(la->dev_id, k->sess[i]);
    rte_free(k);
}

/* libquicoff install hook (control thread): the key's sessions, before any
 * worker can see the key. */
static quicoff_status_t on_key_install(void *arg, const struct quicoff_key_info *ki, void **user)
{
    struct qd_lookaside *la = arg;
    if ((unsigned)ki->suite >= QUICOFF_SUITE_COUNT || !la->suite_ok[ki->suite])
        return QUICOFF_UNSUPPORTED;
    struct la_key *k = rte_zmalloc("qd_la_key", sizeof(*k), RTE_CACHE_LINE_SIZE);
    if (!k)
        return QUICOFF_NO_MEMORY;
    k->algo = suite_algo[ki->suite];
    k->op = ki->direction == QUICOFF_DIR_TX ? RTE_CRYPTO_AEAD_OP_ENCRYPT
                                            : RTE_CRYPTO_AEAD_OP_DECRYPT;
    if (ki->level == QUICOFF_LEVEL_ONE_RTT) /* short header: 1 + DCID + PN */
        for (unsigned pn_len = 1; pn_len <= 4; pn_len++)
            if (!session_for(la, k, ki->key, ki->key_len, (uint16_t)(1 + ki->dcid_len + pn_len))) {
                key_free(la, k);
                return QUICOFF_NO_MEMORY;
            }
    *user = k;
    atomic_fetch_add_explicit(&la->keys, 1, memory_order_relaxed);
    return QUICOFF_OK;
}

/* libquicoff retire hook: no worker can use the key any more. */
static void on_key_retire(void *arg, const struct quicoff_key_info *ki)
{
    struct qd_lookaside *la = arg;
    if (ki->user) {
        key_free(la, ki->user);
        atomic_fetch_sub_explicit(&la->keys, 1, memory_order_relaxed);
    }
}

void qd_la_key_hooks(struct qd_lookaside *la, struct quicoff_key_hooks *out)
{
    *out = (struct quicoff_key_hooks){.install = on_key_install,
                                      .retire = on_key_retire,
                                      .arg = la};
}

/* ------------------------------------------------------------ setup */

struct qd_lookaside *qd_la_create(const char *name, unsigned nb_workers, uint32_t capacity)
{
    int dev = rte_cryptodev_get_dev_id(name);
    if (dev < 0) {
        /* not given with --vdev: a software PMD can be created by name */
#ifdef QD_HAVE_VDEV_INIT
        if (rte_vdev_init(name, NULL) == 0)
            dev = rte_cryptodev_get_dev_id(name);
#endif
        if (dev < 0) {
            fprintf(stderr, "quicoff-dpdk: no cryptodev '%s' (give it with --vdev or -a)\n", name);
            return NULL;
        }
    }
    struct qd_lookaside *la = rte_zmalloc("qd_la", sizeof(*la), RTE_CACHE_LINE_SIZE);
    if (!la)
        return NULL;
    la->dev_id = (uint8_t)dev;
    snprintf(la->name, sizeof(la->name), "%s", name);
    la->nb_workers = nb_workers;

    struct rte_cryptodev_info info;
    rte_cryptodev_info_get(la->dev_id, &info);
    if (info.max_nb_queue_pairs < nb_workers) {
        fprintf(stderr,
                "quicoff-dpdk: cryptodev %s has %u queue pairs, %u workers need one each\n", name,
                info.max_nb_queue_pairs, nb_workers);
        goto fail;
    }
    bool any = false;
    for (unsigned s = 0; s < QUICOFF_SUITE_COUNT; s++) {
        la->suite_ok[s] = cdev_supports(la->dev_id, suite_algo[s],
                                        (uint16_t)quicoff_suite_key_len((quicoff_suite_t)s));
        any |= la->suite_ok[s];
    }
    if (!any) {
        fprintf(stderr, "quicoff-dpdk: cryptodev %s offers none of the QUIC AEADs\n", name);
        goto fail;
    }
    struct rte_cryptodev_config conf = {.socket_id = (int)rte_socket_id(),
                                        .nb_queue_pairs = (uint16_t)nb_workers};
    if (rte_cryptodev_configure(la->dev_id, &conf) != 0) {
        fprintf(stderr, "quicoff-dpdk: cannot configure cryptodev %s\n", name);
        goto fail;
    }
    /* sessions: up to 8 per key, two keys per entry; bounded (not every
     * entry of a large table has long-header keys) */
    uint32_t nb_sess = RTE_MIN(capacity, 4096u) * 2 * 6 + 1024;
    la->sess_pool = rte_cryptodev_sym_session_pool_create(
        "qd_la_sess", nb_sess, rte_cryptodev_sym_get_private_session_size(la->dev_id), 0, 0,
        (int)rte_socket_id());
    la->op_pool = rte_crypto_op_pool_create("qd_la_ops", RTE_CRYPTO_OP_TYPE_SYMMETRIC,
                                            nb_workers * (QD_BURST * 4) + 1024, 0, LA_PRIV_SIZE,
                                            (int)rte_socket_id());
    if (!la->sess_pool || !la->op_pool) {
        fprintf(stderr, "quicoff-dpdk: cannot create the cryptodev pools: %s\n",
                rte_strerror(rte_errno));
        goto fail;
    }
    struct rte_cryptodev_qp_conf qp = {.nb_descriptors = LA_QP_DESC, .mp_session = la->sess_pool};
    for (unsigned q = 0; q < nb_workers; q++)
        if (rte_cryptodev_queue_pair_setup(la->dev_id, (uint16_t)q, &qp, (int)rte_socket_id())) {
            fprintf(stderr, "quicoff-dpdk: cannot set up queue pair %u of %s\n", q, name);
            goto fail;
        }
    if (rte_cryptodev_start(la->dev_id) != 0) {
        fprintf(stderr, "quicoff-dpdk: cannot start cryptodev %s\n", name);
        goto fail;
    }
    return la;
fail:
    qd_la_destroy(la);
    return NULL;
}

void qd_la_destroy(struct qd_lookaside *la)
{
    if (!la)
        return;
    rte_cryptodev_stop(la->dev_id);
    rte_cryptodev_close(la->dev_id);
    rte_mempool_free(la->op_pool);
    rte_mempool_free(la->sess_pool);
    rte_free(la);
}

void qd_la_print(const struct qd_lookaside *la)
{
    struct rte_cryptodev_info info;
    rte_cryptodev_info_get(la->dev_id, &info);
    printf("quicoff-dpdk: lookaside cryptodev %s (id %u, driver %s, %u queue pairs max):",
           la->name, la->dev_id, info.driver_name, info.max_nb_queue_pairs);
    for (unsigned s = 0; s < QUICOFF_SUITE_COUNT; s++)
        printf(" %s %s", quicoff_suite_name((quicoff_suite_t)s), la->suite_ok[s] ? "yes" : "no");
    printf("; header protection on the CPU (libquicoff)\n");
}

void qd_la_usage(const struct qd_lookaside *la, struct qd_la_usage *u)
{
    u->keys = atomic_load_explicit(&la->keys, memory_order_relaxed);
    u->sessions = rte_mempool_in_use_count(la->sess_pool);
    u->session_pool = la->sess_pool->size;
}

/* ------------------------------------------------------------ data path */

struct qd_la_worker *qd_la_worker_create(struct qd_lookaside *la, unsigned worker_id,
                                         struct quicoff_worker *qw)
{
    struct qd_la_worker *lw = rte_zmalloc("qd_la_worker", sizeof(*lw), RTE_CACHE_LINE_SIZE);
    if (!lw)
        return NULL;
    lw->la = la;
    lw->qw = qw;
    lw->qp = (uint16_t)worker_id;
    return lw;
}

void qd_la_worker_destroy(struct qd_la_worker *lw)
{
    rte_free(lw);
}

/* Fills op for the job's in-place AEAD over m's bytes (pkt = where the
 * library's offsets start in m). -1: no session for this AAD length. */
static int op_fill(struct qd_lookaside *la, struct rte_crypto_op *op,
                   const struct quicoff_aead_job *j, struct rte_mbuf *m, uint8_t *pkt)
{
    struct la_key *k = j->key_user;
    if (!k || j->aad_len > UINT16_MAX)
        return -1;
    uint16_t aad_len = (uint16_t)j->aad_len;
    if (k->algo == RTE_CRYPTO_AEAD_AES_CCM && aad_len > LA_AAD_MAX)
        return -1;
    void *sess = session_for(la, k, j->key, j->key_len, aad_len);
    if (!sess)
        return -1;
    uint8_t *base = rte_pktmbuf_mtod(m, uint8_t *);
    const uint8_t *aad = pkt + j->aad_off;
    uint8_t *payload = pkt + j->data_off;
    struct rte_crypto_sym_op *s = op->sym;
    rte_crypto_op_attach_sym_session(op, sess);
    s->m_src = m;
    s->m_dst = NULL;
    s->aead.data.offset = (uint32_t)(payload - base);
    s->aead.data.length = j->data_len;
    s->aead.digest.data = pkt + j->tag_off;
    s->aead.digest.phys_addr = rte_pktmbuf_iova_offset(m, pkt + j->tag_off - base);
    uint8_t *iv = rte_crypto_op_ctod_offset(op, uint8_t *, LA_IV_OFF);
    if (k->algo == RTE_CRYPTO_AEAD_AES_CCM) {
        memcpy(iv + 1, j->nonce, QUICOFF_IV_LEN); /* byte 0: the PMD's flags */
        uint8_t *a = rte_crypto_op_ctod_offset(op, uint8_t *, LA_AAD_OFF);
        memset(a, 0, RTE_ALIGN_CEIL(LA_CCM_AAD_PRE + aad_len, 16));
        memcpy(a + LA_CCM_AAD_PRE, aad, aad_len);
        s->aead.aad.data = a;
        s->aead.aad.phys_addr = rte_crypto_op_ctophys_offset(op, LA_AAD_OFF);
    } else {
        memcpy(iv, j->nonce, QUICOFF_IV_LEN);
        s->aead.aad.data = (uint8_t *)aad;
        s->aead.aad.phys_addr = rte_pktmbuf_iova_offset(m, aad - base);
    }
    return 0;
}

/* Enqueues ops[0..n) and waits for every one of them. Returns how many the
 * device took; the rest have status NOT_PROCESSED. */
static unsigned run_burst(struct qd_la_worker *lw, struct rte_crypto_op **ops, unsigned n)
{
    unsigned sent = 0, back = 0;
    struct rte_crypto_op *done[QD_BURST];
    for (unsigned i = 0; i < n; i++)
        ops[i]->status = RTE_CRYPTO_OP_STATUS_NOT_PROCESSED;
    for (unsigned tries = 0; sent < n && tries < 1000; tries++) {
        sent += rte_cryptodev_enqueue_burst(lw->la->dev_id, lw->qp, ops + sent,
                                            (uint16_t)(n - sent));
        back += rte_cryptodev_dequeue_burst(lw->la->dev_id, lw->qp, done + back,
                                            (uint16_t)(QD_BURST - back));
    }
    while (back < sent)
        back += rte_cryptodev_dequeue_burst(lw->la->dev_id, lw->qp, done + back,
                                            (uint16_t)(QD_BURST - back));
    if (sent < n)
        QD_ADD(qd_my_stats(), cdev_enqueue_failed, n - sent);
    return sent;
}

/* The job's verdict from its operation's status. */
static quicoff_status_t op_verdict(const struct rte_crypto_op *op)
{
    switch (op->status) {
    case RTE_CRYPTO_OP_STATUS_SUCCESS:
        return QUICOFF_OK;
    case RTE_CRYPTO_OP_STATUS_AUTH_FAILED:
        return QUICOFF_AUTH_FAILED;
    case RTE_CRYPTO_OP_STATUS_NOT_PROCESSED:
        return QUICOFF_BACKEND_UNAVAILABLE; /* counted as cdev_enqueue_failed */
    default:
        QD_INC(qd_my_stats(), cdev_op_failed);
        return QUICOFF_BACKEND_UNAVAILABLE;
    }
}

/* The crypto part of one burst, between prepare and complete: every pending
 * job through the cryptodev, its verdict in aead_status. RX jobs of entries
 * with fail action pass keep their bytes as received (a PMD may leave
 * anything in place of a packet that failed). */
static void crypto_burst(struct qd_la_worker *lw, struct rte_mbuf **m, struct quicoff_pkt *pkts,
                         struct quicoff_aead_job *jobs, unsigned n, bool saved[])
{
    struct qd_lookaside *la = lw->la;
    struct rte_crypto_op *ops[QD_BURST];
    unsigned idx[QD_BURST], nops = 0;
    for (unsigned i = 0; i < n; i++)
        saved[i] = false;
    if (rte_crypto_op_bulk_alloc(la->op_pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC, ops, n) != n) {
        QD_ADD(qd_my_stats(), mbuf_alloc_failed, 1);
        for (unsigned i = 0; i < n; i++)
            jobs[i].aead_status = QUICOFF_NO_MEMORY;
        return;
    }
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_aead_job *j = &jobs[i];
        if (!j->pending)
            continue;
        if (op_fill(la, ops[nops], j, m[i], pkts[i].data) != 0) {
            QD_INC(qd_my_stats(), cdev_no_session);
            j->aead_status = QUICOFF_NO_MEMORY;
            continue;
        }
        if (j->fail_pass && j->data_len + QUICOFF_TAG_LEN <= LA_SCRATCH) {
            memcpy(lw->scratch[i], pkts[i].data + j->data_off, j->data_len + QUICOFF_TAG_LEN);
            saved[i] = true;
        }
        idx[nops++] = i;
    }
    run_burst(lw, ops, nops);
    for (unsigned k = 0; k < nops; k++) {
        struct quicoff_aead_job *j = &jobs[idx[k]];
        j->aead_status = op_verdict(ops[k]);
        if (j->aead_status != QUICOFF_OK && saved[idx[k]])
            memcpy(pkts[idx[k]].data + j->data_off, lw->scratch[idx[k]],
                   j->data_len + QUICOFF_TAG_LEN);
    }
    /* the ops' private area held nonces (they reveal the IV) */
    for (unsigned k = 0; k < nops; k++)
        memset(rte_crypto_op_ctod_offset(ops[k], uint8_t *, LA_IV_OFF), 0, 16);
    rte_mempool_put_bulk(la->op_pool, (void **)ops, n);
}

unsigned qd_la_protect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                             struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n)
{
    struct quicoff_aead_job jobs[QD_BURST];
    bool saved[QD_BURST];
    if (n > QD_BURST)
        n = QD_BURST;
    quicoff_protect_prepare(lw->qw, pkts, res, jobs, n);
    crypto_burst(lw, m, pkts, jobs, n, saved);
    return quicoff_protect_complete(lw->qw, pkts, res, jobs, n);
}

unsigned qd_la_unprotect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                               struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n)
{
    struct quicoff_aead_job jobs[QD_BURST];
    bool saved[QD_BURST];
    if (n > QD_BURST)
        n = QD_BURST;
    quicoff_unprotect_prepare(lw->qw, pkts, res, jobs, n);
    crypto_burst(lw, m, pkts, jobs, n, saved);
    unsigned ok = quicoff_unprotect_complete(lw->qw, pkts, res, jobs, n);
    /* fail action pass hands the bytes on as received: only when kept */
    for (unsigned i = 0; i < n; i++)
        if (res[i].status == QUICOFF_AUTH_FAILED && !saved[i])
            res[i].flags &= (uint8_t)~QUICOFF_FLAG_PASS_FAILED;
    return ok;
}

/* One round of the library's datagram walk: the packets through the split
 * calls and the cryptodev (qd_la_unprotect_burst), each with its datagram's mbuf. */
struct la_walk {
    struct qd_la_worker *lw;
    struct rte_mbuf **m; /* [datagram] */
};

static void la_round(void *arg, struct quicoff_pkt *pkts, struct quicoff_result *res,
                     const unsigned *dgram, unsigned n)
{
    const struct la_walk *wk = arg;
    RTE_BUILD_BUG_ON(QD_BURST < 32); /* a round holds at most 32 packets */
    struct rte_mbuf *mb[QD_BURST];
    for (unsigned j = 0; j < n; j++)
        mb[j] = wk->m[dgram[j]];
    qd_la_unprotect_burst(wk->lw, mb, pkts, res, n);
}

unsigned qd_la_unprotect_datagrams(struct qd_la_worker *lw, struct rte_mbuf **m,
                                   struct quicoff_datagram *dgs, unsigned n)
{
    struct la_walk wk = {.lw = lw, .m = m};
    return quicoff_walk_datagrams(dgs, n, QUICOFF_DATAGRAM_STOP_AT_FAILURE, la_round, &wk);
}
