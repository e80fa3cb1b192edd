/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lookaside crypto through rte_cryptodev (see lookaside.h for why this file
 * keeps its own SA per entry).
 *
 * Per burst, in stages as the library does it inline:
 *   TX: resolve SA -> parse the header the host gave -> key choice and usage
 *       limit -> nonce (IV ^ path/PN) -> rte_crypto_op AEAD encrypt in place
 *       (tag after the payload) -> enqueue all, dequeue all -> header
 *       protection (mask from the ciphertext sample, OpenSSL) -> outcome.
 *   RX: parse -> look the DCID (or local address) up in this file's lock-free
 *       rte_hash -> header-protection mask -> unmask, decode the PN, key
 *       choice -> nonce -> AEAD decrypt in place -> enqueue all, dequeue all
 *       -> key phase change, largest PN, counters; on failure the header (and,
 *       for fail action pass, the payload) is put back as received.
 *
 * The worker waits for its own burst to come back before it goes on, so an
 * SA is never referenced by an operation in flight across an RCU quiescent
 * state; a hardware PMD (QAT) still gets a whole burst per round trip.
 *
 * Sessions: DPDK fixes the AAD length per session, and a QUIC header's length
 * varies with the packet-number length (and, for long headers, with the
 * token and Length sizes), so each key has a small cache of sessions by AAD
 * length: the four of a 1-RTT entry are created with the key, long-header
 * ones by the worker on first use.
 */
#include "lookaside.h"

#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#ifdef QD_HAVE_VDEV_INIT
#include <rte_bus_vdev.h>
#endif
#include <rte_cryptodev.h>
#include <rte_errno.h>
#include <rte_hash.h>
#include <rte_jhash.h>
#include <rte_malloc.h>

#include "conns.h"
#include "stats.h"

#define LA_IV_OFF (sizeof(struct rte_crypto_op) + sizeof(struct rte_crypto_sym_op))
#define LA_CCM_AAD_PRE 18 /* CCM: the AAD starts 18 bytes into its buffer (B0 + length) */
#define LA_AAD_MAX 256    /* CCM copies the AAD: headers longer than this are refused */
#define LA_AAD_OFF (LA_IV_OFF + 16)
#define LA_PRIV_SIZE (16 + RTE_ALIGN_CEIL(LA_CCM_AAD_PRE + LA_AAD_MAX, 16))
#define LA_SESS_SLOTS 8   /* sessions per key, by AAD length */
#define LA_QP_DESC 2048
#define LA_PN_MAX ((UINT64_C(1) << 62) - 1)
#define LA_SCRATCH 2048   /* fail action pass: the ciphertext kept per packet */

struct qd_lookaside {
    uint8_t dev_id;
    char name[64];
    bool suite_ok[QUICOFF_SUITE_COUNT];
    uint8_t local_cid_len;
    unsigned nb_workers;
    struct rte_mempool *sess_pool, *op_pool;
    struct rte_hash *rx; /* RX lookup key -> SA */
};

/* One key generation: key, IV and its sessions. Immutable once published,
 * except `sess`/`aad_len`, which only the worker serving the entry extends. */
struct la_key {
    uint32_t gen;
    bool present;
    uint8_t key[QUICOFF_MAX_KEY_LEN];
    uint8_t iv[QUICOFF_IV_LEN];
    void *sess[LA_SESS_SLOTS];
    uint16_t aad_len[LA_SESS_SLOTS];
};

struct la_keyset {
    struct la_key phase[2];
};

/* The RX lookup key: a multiple of 4 bytes, 4-aligned, zero-padded (rte_jhash
 * reads whole 32-bit words). */
struct la_rx_key {
    uint8_t level, dcid_len, family, pad0;
    uint16_t port, pad1;
    uint8_t dcid[QUICOFF_MAX_CID_LEN];
    uint8_t ip[16];
} __rte_aligned(4);
_Static_assert(sizeof(struct la_rx_key) % 4 == 0, "rte_jhash reads 32-bit words");

struct qd_la_sa {
    /* identity and limits (immutable) */
    quicoff_conn_t handle;
    uint8_t direction, level, suite, nonce_layout, dcid_len;
    uint32_t version, path_id;
    uint8_t key_len;
    struct la_rx_key rx_key;
    int32_t hash_pos; /* RX: position in the lookup hash, freed after the grace period */
    uint64_t threshold, hard_limit;
    EVP_CIPHER_CTX *hp; /* header protection; used by the serving worker only */
    enum rte_crypto_aead_algorithm algo;
    /* changed by updates: swapped whole, the old one freed after RCU */
    _Atomic(struct la_keyset *) keys;
    _Atomic uint8_t fail_action;
    /* data-plane state, written by the serving worker (and by control-plane
     * updates: roll, PN reset), read with relaxed atomics by the stats */
    uint64_t largest_pn, gen_first_pn;
    uint32_t cur_gen;
    uint64_t packets, bytes, auth_failures, malformed, key_phase_unavailable, key_updates;
    uint64_t key_packets[2];
};

struct qd_la_worker {
    struct qd_lookaside *la;
    uint16_t qp;
    struct qd_counters *st;
    uint8_t scratch[QD_BURST][LA_SCRATCH];
};

/* ------------------------------------------------------------ helpers */

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define INC(x, n) ST(x, LD(x) + (n))

static const enum rte_crypto_aead_algorithm suite_algo[QUICOFF_SUITE_COUNT] = {
    RTE_CRYPTO_AEAD_AES_GCM, RTE_CRYPTO_AEAD_AES_GCM, RTE_CRYPTO_AEAD_AES_CCM,
    RTE_CRYPTO_AEAD_CHACHA20_POLY1305,
};

/* RFC 9001 §6.6: confidentiality (packets per key) and integrity (failed
 * packets per connection) limits. */
static void suite_limits(quicoff_suite_t s, uint64_t *conf, uint64_t *integ)
{
    switch (s) {
    case QUICOFF_AES_128_CCM:
        *conf = *integ = 2965820; /* 2^21.5 */
        break;
    case QUICOFF_CHACHA20_POLY1305:
        *conf = UINT64_C(1) << 62;
        *integ = UINT64_C(1) << 36;
        break;
    default:
        *conf = UINT64_C(1) << 23;
        *integ = UINT64_C(1) << 52;
        break;
    }
}

static bool cdev_supports(uint8_t dev, enum rte_crypto_aead_algorithm algo, uint16_t key_len)
{
    struct rte_cryptodev_sym_capability_idx idx = {.type = RTE_CRYPTO_SYM_XFORM_AEAD};
    idx.algo.aead = algo;
    const struct rte_cryptodev_symmetric_capability *cap =
        rte_cryptodev_sym_capability_get(dev, &idx);
    return cap && rte_cryptodev_sym_capability_check_aead(cap, key_len, QUICOFF_TAG_LEN, 32,
                                                          QUICOFF_IV_LEN) == 0;
}

static void *session_create(struct qd_lookaside *la, const struct qd_la_sa *sa,
                            const struct la_key *k, uint16_t aad_len)
{
    struct rte_crypto_sym_xform x = {.type = RTE_CRYPTO_SYM_XFORM_AEAD};
    x.aead.op = sa->direction == QUICOFF_DIR_TX ? RTE_CRYPTO_AEAD_OP_ENCRYPT
                                                : RTE_CRYPTO_AEAD_OP_DECRYPT;
    x.aead.algo = sa->algo;
    x.aead.key.data = k->key;
    x.aead.key.length = sa->key_len;
    x.aead.iv.offset = LA_IV_OFF;
    x.aead.iv.length = QUICOFF_IV_LEN;
    x.aead.digest_length = QUICOFF_TAG_LEN;
    x.aead.aad_length = aad_len;
    return rte_cryptodev_sym_session_create(la->dev_id, &x, la->sess_pool);
}

/* The session of key k for this AAD length; created on a miss (NULL: none). */
static void *session_for(struct qd_lookaside *la, const struct qd_la_sa *sa, struct la_key *k,
                         uint16_t aad_len)
{
    for (unsigned i = 0; i < LA_SESS_SLOTS; i++) {
        if (k->sess[i] && k->aad_len[i] == aad_len)
            return k->sess[i];
        if (!k->sess[i]) {
            void *s = session_create(la, sa, k, aad_len);
            if (s) {
                k->aad_len[i] = aad_len;
                k->sess[i] = s;
            }
            return s;
        }
    }
    return NULL;
}

static void key_clear(struct qd_lookaside *la, struct la_key *k)
{
    for (unsigned i = 0; i < LA_SESS_SLOTS; i++)
        if (k->sess[i])
            rte_cryptodev_sym_session_free(la->dev_id, k->sess[i]);
    memset(k, 0, sizeof(*k));
}

static void keyset_free(struct qd_lookaside *la, struct la_keyset *ks)
{
    if (!ks)
        return;
    key_clear(la, &ks->phase[0]);
    key_clear(la, &ks->phase[1]);
    rte_free(ks);
}

/* Installs key material for generation gen in its phase slot; 1-RTT keys get
 * their four short-header sessions now. */
static quicoff_status_t key_install(struct qd_lookaside *la, const struct qd_la_sa *sa,
                                    struct la_keyset *ks, uint32_t gen, const uint8_t *key,
                                    const uint8_t *iv)
{
    struct la_key *k = &ks->phase[gen & 1];
    key_clear(la, k);
    k->gen = gen;
    k->present = true;
    memcpy(k->key, key, sa->key_len);
    memcpy(k->iv, iv, QUICOFF_IV_LEN);
    if (sa->level == QUICOFF_LEVEL_ONE_RTT)
        for (unsigned pn_len = 1; pn_len <= 4; pn_len++)
            if (!session_for((struct qd_lookaside *)la, sa, k,
                             (uint16_t)(1 + sa->dcid_len + pn_len)))
                return QUICOFF_NO_MEMORY;
    return QUICOFF_OK;
}

static void build_nonce(uint8_t nonce[QUICOFF_IV_LEN], const struct qd_la_sa *sa,
                        const uint8_t iv[QUICOFF_IV_LEN], uint64_t pn)
{
    uint8_t pad[QUICOFF_IV_LEN] = {0};
    uint32_t path = sa->path_id;
    if (sa->nonce_layout == QUICOFF_NONCE_MULTIPATH) {
        pad[0] = (uint8_t)(path >> 24);
        pad[1] = (uint8_t)(path >> 16);
        pad[2] = (uint8_t)(path >> 8);
        pad[3] = (uint8_t)path;
    } else if (sa->nonce_layout == QUICOFF_NONCE_SEED000) {
        pad[0] = (uint8_t)path; /* seed 000 listing 4.5 on a little-endian CPU */
        pad[1] = (uint8_t)(path >> 8);
        pad[2] = (uint8_t)(path >> 16);
        pad[3] = (uint8_t)(path >> 24);
    }
    for (int i = 0; i < 8; i++)
        pad[4 + i] = (uint8_t)(pn >> (56 - 8 * i));
    for (int i = 0; i < QUICOFF_IV_LEN; i++)
        nonce[i] = iv[i] ^ pad[i];
}

/* The 5-byte header-protection mask of a 16-byte sample (RFC 9001 §5.4.3, §5.4.4). */
static int hp_mask(struct qd_la_sa *sa, const uint8_t *sample, uint8_t mask[5])
{
    uint8_t out[32];
    int n = 0;
    if (sa->suite == QUICOFF_CHACHA20_POLY1305) {
        static const uint8_t zero[5];
        /* counter (sample[0..3], little-endian) || nonce (sample[4..15]) is
         * exactly OpenSSL's 16-byte ChaCha20 IV */
        if (EVP_EncryptInit_ex(sa->hp, NULL, NULL, NULL, sample) != 1 ||
            EVP_EncryptUpdate(sa->hp, out, &n, zero, 5) != 1)
            return -1;
    } else if (EVP_EncryptUpdate(sa->hp, out, &n, sample, QUICOFF_SAMPLE_LEN) != 1) {
        return -1;
    }
    memcpy(mask, out, 5);
    return 0;
}

/* QUIC header (RFC 9000 §17), bounds-checked; the same rules as the library's. */
struct la_hdr {
    uint8_t is_long, level, dcid_len;
    uint32_t dcid_off, pn_off, end;
};

static unsigned varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p >= end)
        return 0;
    unsigned n = 1u << (p[0] >> 6);
    if ((size_t)(end - p) < n)
        return 0;
    uint64_t x = p[0] & 0x3f;
    for (unsigned i = 1; i < n; i++)
        x = x << 8 | p[i];
    *v = x;
    return n;
}

static quicoff_status_t parse(const uint8_t *buf, uint32_t len, uint32_t off, uint8_t short_dcid,
                              struct la_hdr *h)
{
    *h = (struct la_hdr){.end = len};
    if (off >= len)
        return QUICOFF_MALFORMED;
    const uint8_t *p = buf + off, *end = buf + len;
    if (!(p[0] & 0x80)) {
        if (!(p[0] & 0x40))
            return QUICOFF_MALFORMED;
        h->level = QUICOFF_LEVEL_ONE_RTT;
        h->dcid_len = short_dcid;
        h->dcid_off = off + 1;
        h->pn_off = off + 1 + short_dcid;
        return h->pn_off > len ? QUICOFF_MALFORMED : QUICOFF_OK;
    }
    if (end - p < 7)
        return QUICOFF_MALFORMED;
    h->is_long = 1;
    uint32_t v = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    if (v == 0)
        return QUICOFF_UNSUPPORTED;
    if (!(p[0] & 0x40))
        return QUICOFF_MALFORMED;
    static const int8_t l1[4] = {QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
                                 QUICOFF_LEVEL_HANDSHAKE, -1};
    static const int8_t l2[4] = {-1, QUICOFF_LEVEL_INITIAL, QUICOFF_LEVEL_ZERO_RTT,
                                 QUICOFF_LEVEL_HANDSHAKE};
    unsigned t = (p[0] >> 4) & 3;
    int level = v == QUICOFF_VERSION_1 ? l1[t] : v == QUICOFF_VERSION_2 ? l2[t] : -1;
    if (level < 0)
        return QUICOFF_UNSUPPORTED;
    h->level = (uint8_t)level;
    const uint8_t *q = p + 5;
    h->dcid_len = *q++;
    if (h->dcid_len > QUICOFF_MAX_CID_LEN || (size_t)(end - q) < (size_t)h->dcid_len + 1)
        return QUICOFF_MALFORMED;
    h->dcid_off = (uint32_t)(q - buf);
    q += h->dcid_len;
    uint8_t scid_len = *q++;
    if (scid_len > QUICOFF_MAX_CID_LEN || (size_t)(end - q) < scid_len)
        return QUICOFF_MALFORMED;
    q += scid_len;
    uint64_t x;
    unsigned n;
    if (level == QUICOFF_LEVEL_INITIAL) {
        if (!(n = varint(q, end, &x)) || x > (uint64_t)(end - q - n))
            return QUICOFF_MALFORMED;
        q += n + x;
    }
    if (!(n = varint(q, end, &x)))
        return QUICOFF_MALFORMED;
    q += n;
    h->pn_off = (uint32_t)(q - buf);
    if (x > (uint64_t)(end - q))
        return QUICOFF_MALFORMED;
    h->end = h->pn_off + (uint32_t)x;
    return QUICOFF_OK;
}

static void rx_key_of(struct la_rx_key *k, uint8_t level, const uint8_t *dcid, uint8_t dcid_len,
                      const struct quicoff_addr *a)
{
    memset(k, 0, sizeof(*k));
    k->level = level;
    k->dcid_len = dcid_len;
    if (dcid_len) {
        memcpy(k->dcid, dcid, dcid_len);
    } else if (a && a->family) {
        k->family = a->family;
        k->port = a->port;
        memcpy(k->ip, a->ip, a->family == 6 ? 16 : 4);
    }
}

/* ------------------------------------------------------------ setup */

struct qd_lookaside *qd_la_create(const char *name, unsigned nb_workers, uint32_t capacity,
                                  uint8_t local_cid_len)
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
    la->local_cid_len = local_cid_len;
    la->nb_workers = nb_workers;

    struct rte_cryptodev_info info;
    rte_cryptodev_info_get(la->dev_id, &info);
    if (info.max_nb_queue_pairs < nb_workers) {
        fprintf(stderr, "quicoff-dpdk: cryptodev %s has %u queue pairs, %u workers need one each\n",
                name, info.max_nb_queue_pairs, nb_workers);
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
    struct rte_cryptodev_qp_conf qp = {.nb_descriptors = LA_QP_DESC,
                                       .mp_session = la->sess_pool};
    for (unsigned q = 0; q < nb_workers; q++)
        if (rte_cryptodev_queue_pair_setup(la->dev_id, (uint16_t)q, &qp, (int)rte_socket_id())) {
            fprintf(stderr, "quicoff-dpdk: cannot set up queue pair %u of %s\n", q, name);
            goto fail;
        }
    if (rte_cryptodev_start(la->dev_id) != 0) {
        fprintf(stderr, "quicoff-dpdk: cannot start cryptodev %s\n", name);
        goto fail;
    }
    char hname[32];
    snprintf(hname, sizeof(hname), "qd_la_rx");
    struct rte_hash_parameters hp = {
        .name = hname,
        .entries = RTE_MAX(capacity, 1024u),
        .key_len = sizeof(struct la_rx_key),
        .hash_func = rte_jhash,
        .socket_id = (int)rte_socket_id(),
        /* readers (workers) without locks; one writer (the control thread) */
        .extra_flag = RTE_HASH_EXTRA_FLAGS_RW_CONCURRENCY_LF,
    };
    la->rx = rte_hash_create(&hp);
    if (!la->rx) {
        fprintf(stderr, "quicoff-dpdk: cannot create the lookaside RX hash\n");
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
    rte_hash_free(la->rx);
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
    printf("; header protection on the CPU (OpenSSL)\n");
}

/* ------------------------------------------------------------ SAs (control thread) */

static void sa_destroy(struct qd_lookaside *la, struct qd_la_sa *sa)
{
    keyset_free(la, atomic_load(&sa->keys));
    if (sa->hp)
        EVP_CIPHER_CTX_free(sa->hp);
    memset(sa, 0, sizeof(*sa));
    rte_free(sa);
}

quicoff_status_t qd_la_sa_create(struct qd_lookaside *la, const struct quicoff_conn_config *cfg,
                                 quicoff_conn_t handle, struct qd_la_sa **out)
{
    if (!la->suite_ok[cfg->suite])
        return QUICOFF_UNSUPPORTED;
    uint32_t version = cfg->version ? cfg->version : QUICOFF_VERSION_1;
    struct quicoff_packet_keys k, next;
    quicoff_status_t st = QUICOFF_OK;
    if (cfg->secret)
        st = quicoff_derive_packet_keys(cfg->suite, cfg->secret, cfg->secret_len, version, &k);
    else
        k = cfg->keys;
    if (st != QUICOFF_OK)
        return st;

    struct qd_la_sa *sa = rte_zmalloc("qd_la_sa", sizeof(*sa), RTE_CACHE_LINE_SIZE);
    struct la_keyset *ks = rte_zmalloc("qd_la_keys", sizeof(*ks), RTE_CACHE_LINE_SIZE);
    if (!sa || !ks) {
        rte_free(sa);
        rte_free(ks);
        return QUICOFF_NO_MEMORY;
    }
    sa->handle = handle;
    sa->direction = (uint8_t)cfg->direction;
    sa->level = (uint8_t)cfg->level;
    sa->suite = (uint8_t)cfg->suite;
    sa->nonce_layout = (uint8_t)cfg->nonce_layout;
    sa->fail_action = (uint8_t)cfg->fail_action;
    sa->version = version;
    sa->path_id = cfg->path_id;
    sa->algo = suite_algo[cfg->suite];
    sa->key_len = (uint8_t)quicoff_suite_key_len(cfg->suite);
    sa->dcid_len = cfg->direction == QUICOFF_DIR_RX && cfg->level == QUICOFF_LEVEL_ONE_RTT
                       ? la->local_cid_len
                       : cfg->dcid_len;
    sa->hash_pos = -1;
    uint64_t conf, integ;
    suite_limits(cfg->suite, &conf, &integ);
    sa->hard_limit = cfg->direction == QUICOFF_DIR_TX ? conf : integ;
    sa->threshold = cfg->usage_threshold ? cfg->usage_threshold : sa->hard_limit / 4 * 3;
    sa->largest_pn = cfg->largest_pn;
    sa->gen_first_pn = cfg->largest_pn == UINT64_MAX ? 0 : cfg->largest_pn + 1;
    sa->cur_gen = cfg->key_generation;
    atomic_store(&sa->keys, ks);

    sa->hp = EVP_CIPHER_CTX_new();
    const EVP_CIPHER *c = cfg->suite == QUICOFF_CHACHA20_POLY1305 ? EVP_chacha20()
                          : sa->key_len == 32                    ? EVP_aes_256_ecb()
                                                                  : EVP_aes_128_ecb();
    if (!sa->hp || EVP_EncryptInit_ex(sa->hp, c, NULL, k.hp, NULL) != 1) {
        st = QUICOFF_NO_MEMORY;
        goto out;
    }
    EVP_CIPHER_CTX_set_padding(sa->hp, 0);

    st = key_install(la, sa, ks, cfg->key_generation, k.key, k.iv);
    if (st == QUICOFF_OK && cfg->level == QUICOFF_LEVEL_ONE_RTT &&
        (cfg->has_next_keys || cfg->secret)) {
        if (cfg->has_next_keys) {
            next = cfg->next_keys;
        } else {
            uint8_t ns[QUICOFF_MAX_SECRET_LEN];
            st = quicoff_derive_next_secret(cfg->suite, cfg->secret, cfg->secret_len, version, ns);
            if (st == QUICOFF_OK)
                st = quicoff_derive_packet_keys(cfg->suite, ns, cfg->secret_len, version, &next);
            memset(ns, 0, sizeof(ns));
        }
        if (st == QUICOFF_OK)
            st = key_install(la, sa, ks, cfg->key_generation + 1, next.key, next.iv);
        memset(&next, 0, sizeof(next));
    }
    if (st == QUICOFF_OK && cfg->direction == QUICOFF_DIR_RX) {
        rx_key_of(&sa->rx_key, sa->level, cfg->dcid, cfg->dcid_len, &cfg->local_addr);
        int r = rte_hash_add_key_data(la->rx, &sa->rx_key, sa);
        if (r != 0)
            st = r == -ENOSPC ? QUICOFF_TABLE_FULL : QUICOFF_INVALID_ARGUMENT;
        else
            sa->hash_pos = rte_hash_lookup(la->rx, &sa->rx_key);
    }
out:
    memset(&k, 0, sizeof(k));
    if (st != QUICOFF_OK) {
        if (sa->hash_pos >= 0)
            rte_hash_del_key(la->rx, &sa->rx_key);
        sa_destroy(la, sa);
        return st;
    }
    *out = sa;
    return QUICOFF_OK;
}

quicoff_status_t qd_la_sa_update(struct qd_lookaside *la, struct qd_la_sa *sa,
                                 const struct quicoff_conn_update *u)
{
    uint32_t cur = LD(sa->cur_gen);
    bool one_rtt = sa->level == QUICOFF_LEVEL_ONE_RTT;
    if (((u->what & (QUICOFF_UPDATE_ROLL | QUICOFF_UPDATE_DROP_OLD)) && !one_rtt) ||
        ((u->what & QUICOFF_UPDATE_KEYS) &&
         ((!one_rtt && u->key_generation != 0) ||
          (one_rtt && u->key_generation != cur && u->key_generation != cur + 1) ||
          (u->secret && u->secret_len != quicoff_suite_secret_len(sa->suite)))) ||
        ((u->what & QUICOFF_UPDATE_FAIL_ACTION) && (unsigned)u->fail_action > 1))
        return QUICOFF_INVALID_ARGUMENT;

    struct la_keyset *old = atomic_load(&sa->keys), *ks = old;
    if (u->what & (QUICOFF_UPDATE_KEYS | QUICOFF_UPDATE_DROP_OLD)) {
        ks = rte_zmalloc("qd_la_keys", sizeof(*ks), RTE_CACHE_LINE_SIZE);
        if (!ks)
            return QUICOFF_NO_MEMORY;
        /* copy the key material (not the sessions: a new keyset owns its own) */
        for (unsigned p = 0; p < 2; p++) {
            const struct la_key *o = &old->phase[p];
            if (o->present && key_install(la, sa, ks, o->gen, o->key, o->iv) != QUICOFF_OK) {
                keyset_free(la, ks);
                return QUICOFF_NO_MEMORY;
            }
        }
        if (u->what & QUICOFF_UPDATE_KEYS) {
            struct quicoff_packet_keys k = u->keys;
            quicoff_status_t st = QUICOFF_OK;
            if (u->secret)
                st = quicoff_derive_packet_keys(sa->suite, u->secret, u->secret_len, sa->version,
                                                &k);
            if (st == QUICOFF_OK)
                st = key_install(la, sa, ks, u->key_generation, k.key, k.iv);
            memset(&k, 0, sizeof(k));
            if (st != QUICOFF_OK) {
                keyset_free(la, ks);
                return st;
            }
            ST(sa->key_packets[u->key_generation & 1], 0);
        }
    }
    if (u->what & QUICOFF_UPDATE_ROLL) {
        const struct la_key *n = &ks->phase[(cur + 1) & 1];
        if (!n->present || n->gen != cur + 1) {
            if (ks != old)
                keyset_free(la, ks);
            return QUICOFF_KEY_PHASE_UNAVAILABLE;
        }
        uint64_t largest = LD(sa->largest_pn);
        ST(sa->gen_first_pn, largest == UINT64_MAX ? 0 : largest + 1);
        __atomic_store_n(&sa->cur_gen, cur + 1, __ATOMIC_RELEASE);
        cur++;
        INC(sa->key_updates, 1);
    }
    if (u->what & QUICOFF_UPDATE_DROP_OLD) {
        struct la_key *o = &ks->phase[(cur + 1) & 1];
        if (o->present && o->gen + 1 == cur)
            key_clear(la, o);
    }
    if (u->what & QUICOFF_UPDATE_LARGEST_PN) {
        ST(sa->largest_pn, u->largest_pn);
        ST(sa->gen_first_pn, u->largest_pn == UINT64_MAX ? 0 : u->largest_pn + 1);
    }
    if (u->what & QUICOFF_UPDATE_FAIL_ACTION)
        ST(sa->fail_action, (uint8_t)u->fail_action);
    if (u->what & QUICOFF_UPDATE_THRESHOLD)
        ST(sa->threshold, u->usage_threshold ? u->usage_threshold : sa->hard_limit / 4 * 3);
    if (ks != old) {
        atomic_store(&sa->keys, ks);
        qd_conns_sync(); /* no worker holds the old keyset any more */
        keyset_free(la, old);
    }
    return QUICOFF_OK;
}

void qd_la_sa_unlink(struct qd_lookaside *la, struct qd_la_sa *sa)
{
    if (sa->direction == QUICOFF_DIR_RX && sa->hash_pos >= 0)
        rte_hash_del_key(la->rx, &sa->rx_key); /* the slot is freed in qd_la_sa_free */
}

void qd_la_sa_free(struct qd_lookaside *la, struct qd_la_sa *sa)
{
    if (sa->direction == QUICOFF_DIR_RX && sa->hash_pos >= 0)
        rte_hash_free_key_with_position(la->rx, sa->hash_pos);
    sa_destroy(la, sa);
}

void qd_la_sa_stats(const struct qd_la_sa *sa, struct quicoff_conn_stats *out)
{
    uint32_t g = LD(sa->cur_gen);
    out->packets = LD(sa->packets);
    out->bytes = LD(sa->bytes);
    out->auth_failures = LD(sa->auth_failures);
    out->malformed = LD(sa->malformed);
    out->key_phase_unavailable = LD(sa->key_phase_unavailable);
    out->key_updates = LD(sa->key_updates);
    out->key_generation = g;
    out->largest_pn = LD(sa->largest_pn);
    out->key_packets = LD(sa->key_packets[g & 1]);
}

/* ------------------------------------------------------------ data path */

struct qd_la_worker *qd_la_worker_create(struct qd_lookaside *la, unsigned worker_id)
{
    struct qd_la_worker *lw = rte_zmalloc("qd_la_worker", sizeof(*lw), RTE_CACHE_LINE_SIZE);
    if (!lw)
        return NULL;
    lw->la = la;
    lw->qp = (uint16_t)worker_id;
    return lw;
}

void qd_la_worker_destroy(struct qd_la_worker *lw)
{
    rte_free(lw);
}

/* Per packet state across the stages of a burst. */
struct la_state {
    struct qd_la_sa *sa;
    struct la_key *key;
    struct la_hdr h;
    quicoff_status_t st;
    uint8_t mask[5], saved_first;
    bool next;           /* TX: starts a key update; RX: decrypted with the next keys */
    int choice;          /* RX key choice */
    uint32_t cur;
    uint64_t used;
    bool saved_payload;  /* RX, fail action pass: ciphertext kept in scratch */
};

enum { KEYS_CURRENT, KEYS_NEXT, KEYS_OLD, KEYS_NONE };

static int rx_key_choice(const struct la_key *k, uint32_t cur, uint64_t pn, uint64_t first)
{
    if (!k->present)
        return KEYS_NONE;
    if (k->gen == cur)
        return KEYS_CURRENT;
    if (k->gen == cur + 1)
        return pn >= first ? KEYS_NEXT : KEYS_NONE;
    if (k->gen + 1 == cur)
        return pn < first ? KEYS_OLD : KEYS_NONE;
    return KEYS_NONE;
}

/* Fills op for an in-place AEAD over m's bytes [payload, payload+len), AAD
 * [aad, payload), tag after the payload. */
static int op_fill(struct qd_la_sa *sa, struct rte_crypto_op *op, void *sess, struct rte_mbuf *m,
                   const uint8_t *aad, uint8_t *payload, uint32_t len, const uint8_t nonce[12])
{
    uint8_t *base = rte_pktmbuf_mtod(m, uint8_t *);
    uint16_t aad_len = (uint16_t)(payload - aad);
    struct rte_crypto_sym_op *s = op->sym;
    rte_crypto_op_attach_sym_session(op, sess);
    s->m_src = m;
    s->m_dst = NULL;
    s->aead.data.offset = (uint32_t)(payload - base);
    s->aead.data.length = len;
    s->aead.digest.data = payload + len;
    s->aead.digest.phys_addr = rte_pktmbuf_iova_offset(m, payload + len - base);
    uint8_t *iv = rte_crypto_op_ctod_offset(op, uint8_t *, LA_IV_OFF);
    if (sa->algo == RTE_CRYPTO_AEAD_AES_CCM) {
        memcpy(iv + 1, nonce, QUICOFF_IV_LEN); /* byte 0: the PMD's flags */
        if (aad_len > LA_AAD_MAX)
            return -1;
        uint8_t *a = rte_crypto_op_ctod_offset(op, uint8_t *, LA_AAD_OFF);
        memset(a, 0, RTE_ALIGN_CEIL(LA_CCM_AAD_PRE + aad_len, 16));
        memcpy(a + LA_CCM_AAD_PRE, aad, aad_len);
        s->aead.aad.data = a;
        s->aead.aad.phys_addr = rte_crypto_op_ctophys_offset(op, LA_AAD_OFF);
    } else {
        memcpy(iv, nonce, QUICOFF_IV_LEN);
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

unsigned qd_la_protect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                             struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n)
{
    struct la_state s[QD_BURST];
    struct rte_crypto_op *ops[QD_BURST];
    unsigned idx[QD_BURST], nops = 0, ok = 0;
    if (n > QD_BURST)
        n = QD_BURST;
    if (rte_crypto_op_bulk_alloc(lw->la->op_pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC, ops, n) != n) {
        QD_ADD(qd_my_stats(), mbuf_alloc_failed, 1);
        for (unsigned i = 0; i < n; i++)
            res[i] = (struct quicoff_result){.status = QUICOFF_NO_MEMORY,
                                             .conn = pkts[i].conn};
        return 0;
    }
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_pkt *p = &pkts[i];
        struct quicoff_result *r = &res[i];
        struct la_state *x = &s[i];
        *r = (struct quicoff_result){.hdr_off = p->offset, .packet_end = p->len, .conn = p->conn};
        const struct qd_conn *c = qd_conn_by_handle(qda.conns, p->conn);
        x->sa = c ? c->sa : NULL;
        x->st = x->sa && x->sa->direction == QUICOFF_DIR_TX ? QUICOFF_OK
                                                            : QUICOFF_UNKNOWN_CONNECTION;
        if (x->st != QUICOFF_OK)
            continue;
        struct qd_la_sa *sa = x->sa;
        uint8_t *d = p->data;
        if (p->offset >= p->len || p->len > p->cap || p->cap - p->len < QUICOFF_TAG_LEN) {
            x->st = p->offset >= p->len ? QUICOFF_MALFORMED : QUICOFF_NO_SPACE;
            continue;
        }
        uint32_t end = p->len + QUICOFF_TAG_LEN;
        x->st = parse(d, end, p->offset, sa->dcid_len, &x->h);
        r->level = x->h.level;
        r->flags = x->h.is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
        if (x->st != QUICOFF_OK)
            continue;
        unsigned pn_len = (d[p->offset] & 3) + 1;
        if (x->h.level != sa->level || x->h.end != end || (uint64_t)x->h.pn_off + pn_len > p->len ||
            (uint64_t)x->h.pn_off + 4 + QUICOFF_SAMPLE_LEN > end || p->pn > LA_PN_MAX) {
            x->st = QUICOFF_MALFORMED;
            continue;
        }
        uint64_t enc = 0;
        for (unsigned k = 0; k < pn_len; k++)
            enc = enc << 8 | d[x->h.pn_off + k];
        if (enc != (p->pn & ((UINT64_C(1) << (8 * pn_len)) - 1))) {
            x->st = QUICOFF_MALFORMED;
            continue;
        }
        unsigned kp = x->h.is_long ? 0 : (d[p->offset] >> 2) & 1;
        uint32_t cur = __atomic_load_n(&sa->cur_gen, __ATOMIC_ACQUIRE);
        struct la_keyset *ks = atomic_load_explicit(&sa->keys, memory_order_acquire);
        struct la_key *key = &ks->phase[kp];
        r->key_phase = (uint8_t)kp;
        r->pn_len = (uint8_t)pn_len;
        r->pn_off = x->h.pn_off;
        r->pn = p->pn;
        x->next = key->present && key->gen == cur + 1;
        if (!key->present || (key->gen != cur && !x->next)) {
            x->st = QUICOFF_KEY_PHASE_UNAVAILABLE;
            continue;
        }
        x->used = x->next ? 0 : LD(sa->key_packets[kp]);
        if (x->used >= sa->hard_limit) {
            x->st = QUICOFF_KEY_EXHAUSTED;
            continue;
        }
        uint32_t payload_off = x->h.pn_off + pn_len;
        void *sess = session_for(lw->la, sa, key, (uint16_t)(payload_off - p->offset));
        uint8_t nonce[QUICOFF_IV_LEN];
        build_nonce(nonce, sa, key->iv, p->pn);
        if (!sess || op_fill(sa, ops[nops], sess, m[i], d + p->offset, d + payload_off,
                             p->len - payload_off, nonce) != 0) {
            x->st = QUICOFF_NO_SPACE;
            continue;
        }
        if (x->next) {
            ST(sa->key_packets[kp], 0);
            __atomic_store_n(&sa->cur_gen, cur + 1, __ATOMIC_RELEASE);
        }
        INC(sa->key_packets[kp], 1);
        x->key = key;
        idx[nops++] = i;
    }
    unsigned sent = run_burst(lw, ops, nops);
    (void)sent;
    for (unsigned j = 0; j < nops; j++) {
        unsigned i = idx[j];
        struct la_state *x = &s[i];
        if (ops[j]->status != RTE_CRYPTO_OP_STATUS_SUCCESS) {
            x->st = QUICOFF_BACKEND_UNAVAILABLE;
            if (ops[j]->status != RTE_CRYPTO_OP_STATUS_NOT_PROCESSED)
                QD_INC(qd_my_stats(), cdev_op_failed);
        }
    }
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_pkt *p = &pkts[i];
        struct quicoff_result *r = &res[i];
        struct la_state *x = &s[i];
        struct qd_la_sa *sa = x->sa;
        if (x->st != QUICOFF_OK) {
            r->status = x->st;
            if (sa && (x->st == QUICOFF_MALFORMED || x->st == QUICOFF_NO_SPACE))
                INC(sa->malformed, 1);
            if (sa && x->st == QUICOFF_KEY_PHASE_UNAVAILABLE)
                INC(sa->key_phase_unavailable, 1);
            continue;
        }
        uint8_t *d = p->data;
        uint8_t mask[5];
        if (hp_mask(sa, d + x->h.pn_off + 4, mask) != 0) {
            r->status = QUICOFF_BACKEND_UNAVAILABLE;
            continue;
        }
        /* header protection: the ciphertext (tag included) is final, so a
         * failure above left nothing protected to send */
        d[p->offset] ^= mask[0] & (x->h.is_long ? 0x0f : 0x1f);
        for (unsigned k = 0; k < r->pn_len; k++)
            d[x->h.pn_off + k] ^= mask[1 + k];
        uint32_t payload_off = x->h.pn_off + r->pn_len;
        uint32_t payload_len = p->len - payload_off;
        if (x->next) {
            INC(sa->key_updates, 1);
            r->flags |= QUICOFF_FLAG_KEY_UPDATED;
        }
        uint64_t largest = LD(sa->largest_pn);
        if (largest == UINT64_MAX || p->pn > largest)
            ST(sa->largest_pn, p->pn);
        INC(sa->packets, 1);
        INC(sa->bytes, payload_len);
        r->payload_off = payload_off;
        r->payload_len = payload_len;
        r->packet_end = p->len + QUICOFF_TAG_LEN;
        r->status = x->used + 1 >= LD(sa->threshold) ? QUICOFF_USAGE_LIMIT_REACHED : QUICOFF_OK;
        ok++;
    }
    rte_mempool_put_bulk(lw->la->op_pool, (void **)ops, n);
    return ok;
}

unsigned qd_la_unprotect_burst(struct qd_la_worker *lw, struct rte_mbuf **m,
                               struct quicoff_pkt *pkts, struct quicoff_result *res, unsigned n)
{
    struct qd_lookaside *la = lw->la;
    struct la_state s[QD_BURST];
    struct rte_crypto_op *ops[QD_BURST];
    unsigned idx[QD_BURST], nops = 0, ok = 0;
    if (n > QD_BURST)
        n = QD_BURST;
    if (rte_crypto_op_bulk_alloc(la->op_pool, RTE_CRYPTO_OP_TYPE_SYMMETRIC, ops, n) != n) {
        QD_ADD(qd_my_stats(), mbuf_alloc_failed, 1);
        for (unsigned i = 0; i < n; i++)
            res[i] = (struct quicoff_result){.status = QUICOFF_NO_MEMORY,
                                             .conn = QUICOFF_CONN_INVALID,
                                             .packet_end = pkts[i].len};
        return 0;
    }
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_pkt *p = &pkts[i];
        struct quicoff_result *r = &res[i];
        struct la_state *x = &s[i];
        uint8_t *d = p->data;
        *r = (struct quicoff_result){.hdr_off = p->offset, .packet_end = p->len,
                                     .conn = QUICOFF_CONN_INVALID};
        x->sa = NULL;
        x->saved_payload = false;
        x->st = parse(d, p->len, p->offset, la->local_cid_len, &x->h);
        r->packet_end = x->h.end;
        r->level = x->h.level;
        r->flags = x->h.is_long ? QUICOFF_FLAG_LONG_HEADER : 0;
        if (x->st != QUICOFF_OK)
            continue;
        struct la_rx_key key;
        rx_key_of(&key, x->h.level, d + x->h.dcid_off, x->h.dcid_len,
                  x->h.dcid_len ? NULL : p->local_addr);
        void *data;
        if (rte_hash_lookup_data(la->rx, &key, &data) < 0) {
            x->st = QUICOFF_UNKNOWN_CONNECTION;
            continue;
        }
        struct qd_la_sa *sa = x->sa = data;
        r->conn = sa->handle;
        if (LD(sa->auth_failures) >= sa->hard_limit) {
            x->st = QUICOFF_KEY_EXHAUSTED;
            continue;
        }
        if ((uint64_t)x->h.pn_off + 4 + QUICOFF_SAMPLE_LEN > x->h.end) {
            x->st = QUICOFF_MALFORMED;
            continue;
        }
        if (hp_mask(sa, d + x->h.pn_off + 4, x->mask) != 0) {
            x->st = QUICOFF_BACKEND_UNAVAILABLE;
            continue;
        }
        uint8_t first = d[p->offset] ^ (x->mask[0] & (x->h.is_long ? 0x0f : 0x1f));
        unsigned pn_len = (first & 3) + 1;
        uint64_t truncated = 0;
        for (unsigned k = 0; k < pn_len; k++)
            truncated = truncated << 8 | (uint8_t)(d[x->h.pn_off + k] ^ x->mask[1 + k]);
        uint64_t pn = quicoff_pn_decode(LD(sa->largest_pn), truncated, pn_len * 8);
        unsigned kp = x->h.is_long ? 0 : (first >> 2) & 1;
        x->cur = __atomic_load_n(&sa->cur_gen, __ATOMIC_ACQUIRE);
        struct la_keyset *ks = atomic_load_explicit(&sa->keys, memory_order_acquire);
        x->key = &ks->phase[kp];
        x->choice = rx_key_choice(x->key, x->cur, pn, LD(sa->gen_first_pn));
        r->key_phase = (uint8_t)kp;
        r->pn_len = (uint8_t)pn_len;
        r->pn_off = x->h.pn_off;
        r->pn = pn;
        if (x->choice == KEYS_NONE) {
            x->st = QUICOFF_KEY_PHASE_UNAVAILABLE;
            continue;
        }
        uint32_t payload_off = x->h.pn_off + pn_len;
        if (x->h.end < payload_off + QUICOFF_TAG_LEN) {
            x->st = QUICOFF_MALFORMED;
            continue;
        }
        uint32_t payload_len = x->h.end - QUICOFF_TAG_LEN - payload_off;
        void *sess = session_for(la, sa, x->key, (uint16_t)(payload_off - p->offset));
        if (!sess) {
            x->st = QUICOFF_NO_SPACE;
            continue;
        }
        /* unmask in place: the plaintext header is the AAD */
        x->saved_first = d[p->offset];
        d[p->offset] = first;
        for (unsigned k = 0; k < pn_len; k++)
            d[x->h.pn_off + k] ^= x->mask[1 + k];
        uint8_t nonce[QUICOFF_IV_LEN];
        build_nonce(nonce, sa, x->key->iv, pn);
        if (op_fill(sa, ops[nops], sess, m[i], d + p->offset, d + payload_off, payload_len,
                    nonce) != 0) {
            d[p->offset] = x->saved_first;
            for (unsigned k = 0; k < pn_len; k++)
                d[x->h.pn_off + k] ^= x->mask[1 + k];
            x->st = QUICOFF_NO_SPACE;
            continue;
        }
        /* fail action pass: the host must get the bytes as received, and a
         * cryptodev may leave garbage in place of a packet that failed */
        if (LD(sa->fail_action) == QUICOFF_FAIL_PASS &&
            payload_len + QUICOFF_TAG_LEN <= LA_SCRATCH) {
            memcpy(lw->scratch[i], d + payload_off, payload_len + QUICOFF_TAG_LEN);
            x->saved_payload = true;
        }
        idx[nops++] = i;
    }
    run_burst(lw, ops, nops);
    for (unsigned j = 0; j < nops; j++) {
        unsigned i = idx[j];
        struct la_state *x = &s[i];
        uint8_t st = ops[j]->status;
        if (st == RTE_CRYPTO_OP_STATUS_SUCCESS)
            continue;
        struct quicoff_pkt *p = &pkts[i];
        uint8_t *d = p->data;
        uint32_t payload_off = x->h.pn_off + res[i].pn_len;
        d[p->offset] = x->saved_first;
        for (unsigned k = 0; k < res[i].pn_len; k++)
            d[x->h.pn_off + k] ^= x->mask[1 + k];
        if (x->saved_payload)
            memcpy(d + payload_off, lw->scratch[i], x->h.end - payload_off);
        if (st == RTE_CRYPTO_OP_STATUS_AUTH_FAILED) {
            x->st = QUICOFF_AUTH_FAILED;
            if (LD(x->sa->fail_action) == QUICOFF_FAIL_PASS && x->saved_payload)
                res[i].flags |= QUICOFF_FLAG_PASS_FAILED;
        } else {
            x->st = QUICOFF_BACKEND_UNAVAILABLE;
            if (st != RTE_CRYPTO_OP_STATUS_NOT_PROCESSED)
                QD_INC(qd_my_stats(), cdev_op_failed);
        }
    }
    for (unsigned i = 0; i < n; i++) {
        struct quicoff_result *r = &res[i];
        struct la_state *x = &s[i];
        struct qd_la_sa *sa = x->sa;
        if (x->st != QUICOFF_OK) {
            r->status = x->st;
            if (sa) {
                if (x->st == QUICOFF_AUTH_FAILED)
                    INC(sa->auth_failures, 1);
                else if (x->st == QUICOFF_MALFORMED || x->st == QUICOFF_NO_SPACE)
                    INC(sa->malformed, 1);
                else if (x->st == QUICOFF_KEY_PHASE_UNAVAILABLE)
                    INC(sa->key_phase_unavailable, 1);
            }
            continue;
        }
        uint64_t pn = r->pn;
        if (x->choice == KEYS_NEXT && LD(sa->cur_gen) == x->cur + 1) {
            if (pn < LD(sa->gen_first_pn)) /* an earlier packet of this burst moved already */
                ST(sa->gen_first_pn, pn);
        } else if (x->choice == KEYS_NEXT) {
            ST(sa->gen_first_pn, pn);
            __atomic_store_n(&sa->cur_gen, x->cur + 1, __ATOMIC_RELEASE);
            INC(sa->key_updates, 1);
            r->flags |= QUICOFF_FLAG_KEY_UPDATED;
        } else if (x->choice == KEYS_OLD) {
            r->flags |= QUICOFF_FLAG_OLD_KEYS;
        }
        uint64_t largest = LD(sa->largest_pn);
        if (largest == UINT64_MAX || pn > largest)
            ST(sa->largest_pn, pn);
        uint32_t payload_off = x->h.pn_off + r->pn_len;
        uint32_t payload_len = x->h.end - QUICOFF_TAG_LEN - payload_off;
        INC(sa->packets, 1);
        INC(sa->bytes, payload_len);
        INC(sa->key_packets[r->key_phase], 1);
        r->payload_off = payload_off;
        r->payload_len = payload_len;
        r->status = LD(sa->auth_failures) >= LD(sa->threshold) ? QUICOFF_USAGE_LIMIT_REACHED
                                                                : QUICOFF_OK;
        ok++;
    }
    rte_mempool_put_bulk(la->op_pool, (void **)ops, n);
    return ok;
}
