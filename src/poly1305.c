/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Poly1305 for the ChaCha20-Poly1305 AEAD; see poly1305.h.
 *
 * h (the accumulator) and r are in radix 2^44: h = h0 + h1 2^44 + h2 2^88.
 * Per 16-byte block m: h = (h + m + 2^128) * r mod 2^130 - 5, with the
 * product's terms above 2^130 folded down by 5 (2^130 = 5 mod p), which the
 * precomputed s1 = 20 r1, s2 = 20 r2 do in the multiplication itself
 * (2^132 = 4 * 2^130 = 20).  Only partially reduced between blocks; fully
 * reduced once at the end.  Every step is arithmetic and masks: no branch
 * or table index depends on the key or the data.
 */
#include "poly1305.h"

#include "crypto.h"
#include "qo_bytes.h"

#include <string.h>

#define M44 0xfffffffffffull
#define M42 0x3ffffffffffull

typedef unsigned __int128 u128;

struct poly {
    uint64_t r0, r1, r2, s1, s2;
    uint64_t h0, h1, h2;
};

static inline void poly_init(struct poly *p, const uint8_t key[16])
{
    uint64_t t0 = qo_load_le64(key), t1 = qo_load_le64(key + 8);

    /* r clamped as §2.5.1 says (r &= 0x0ffffffc0ffffffc0ffffffc0fffffff). */
    p->r0 = t0 & 0xffc0fffffffull;
    p->r1 = ((t0 >> 44) | (t1 << 20)) & 0xfffffc0ffffull;
    p->r2 = (t1 >> 24) & 0x00ffffffc0full;
    p->s1 = p->r1 * 20;
    p->s2 = p->r2 * 20;
    p->h0 = p->h1 = p->h2 = 0;
}

/* nblocks whole 16-byte blocks of m. */
static inline void poly_blocks(struct poly *p, const uint8_t *m, size_t nblocks)
{
    const uint64_t r0 = p->r0, r1 = p->r1, r2 = p->r2, s1 = p->s1, s2 = p->s2;
    uint64_t h0 = p->h0, h1 = p->h1, h2 = p->h2;

    for (; nblocks > 0; nblocks--, m += 16) {
        uint64_t t0 = qo_load_le64(m), t1 = qo_load_le64(m + 8);
        h0 += t0 & M44;
        h1 += ((t0 >> 44) | (t1 << 20)) & M44;
        h2 += ((t1 >> 24) & M42) | (1ull << 40); /* the 2^128 bit of a whole block */

        u128 d0 = (u128)h0 * r0 + (u128)h1 * s2 + (u128)h2 * s1;
        u128 d1 = (u128)h0 * r1 + (u128)h1 * r0 + (u128)h2 * s2;
        u128 d2 = (u128)h0 * r2 + (u128)h1 * r1 + (u128)h2 * r0;
        uint64_t c;
        c = (uint64_t)(d0 >> 44);
        h0 = (uint64_t)d0 & M44;
        d1 += c;
        c = (uint64_t)(d1 >> 44);
        h1 = (uint64_t)d1 & M44;
        d2 += c;
        c = (uint64_t)(d2 >> 42);
        h2 = (uint64_t)d2 & M42;
        h0 += c * 5;
        c = h0 >> 44;
        h0 &= M44;
        h1 += c;
    }
    p->h0 = h0;
    p->h1 = h1;
    p->h2 = h2;
}

/* len bytes of m, then zeros to a multiple of 16 (the AEAD's padding). */
static inline void poly_padded(struct poly *p, const uint8_t *m, size_t len)
{
    uint8_t last[16];
    size_t whole = len / 16, rest = len % 16;

    poly_blocks(p, m, whole);
    if (rest != 0) {
        memset(last, 0, sizeof(last));
        memcpy(last, m + 16 * whole, rest);
        poly_blocks(p, last, 1);
    }
}

/* tag = (h mod p) + s mod 2^128; s = key[16..32). */
static inline void finish_limbs(uint64_t h0, uint64_t h1, uint64_t h2, const uint8_t s[16],
                                uint8_t tag[16])
{
    uint64_t c, g0, g1, g2, t0, t1;

    /* Carry fully: h < 2^130 + small. */
    c = h1 >> 44;
    h1 &= M44;
    h2 += c;
    c = h2 >> 42;
    h2 &= M42;
    h0 += c * 5;
    c = h0 >> 44;
    h0 &= M44;
    h1 += c;
    c = h1 >> 44;
    h1 &= M44;
    h2 += c;
    c = h2 >> 42;
    h2 &= M42;
    h0 += c * 5;
    c = h0 >> 44;
    h0 &= M44;
    h1 += c;

    /* g = h + 5 - 2^130; take g when it did not go negative (h >= p). */
    g0 = h0 + 5;
    c = g0 >> 44;
    g0 &= M44;
    g1 = h1 + c;
    c = g1 >> 44;
    g1 &= M44;
    g2 = h2 + c - (1ull << 42);
    c = (g2 >> 63) - 1; /* all ones when g >= 0 */
    h0 = (h0 & ~c) | (g0 & c);
    h1 = (h1 & ~c) | (g1 & c);
    h2 = (h2 & ~c) | (g2 & c);

    /* + s, mod 2^128 */
    t0 = qo_load_le64(s);
    t1 = qo_load_le64(s + 8);
    h0 += t0 & M44;
    c = h0 >> 44;
    h0 &= M44;
    h1 += (((t0 >> 44) | (t1 << 20)) & M44) + c;
    c = h1 >> 44;
    h1 &= M44;
    h2 += ((t1 >> 24) & M42) + c;
    h2 &= M42;

    qo_store_le64(tag, h0 | (h1 << 44));
    qo_store_le64(tag + 8, (h1 >> 20) | (h2 << 24));
}

static inline void poly_finish(struct poly *p, const uint8_t s[16], uint8_t tag[16])
{
    finish_limbs(p->h0, p->h1, p->h2, s, tag);
}

void qo_poly1305_aead_tag(const uint8_t otk[32], const uint8_t *aad, size_t aad_len,
                          const uint8_t *ct, size_t ct_len, uint8_t tag[16])
{
    struct poly p;
    uint8_t lens[16];

    poly_init(&p, otk);
    poly_padded(&p, aad, aad_len);
    poly_padded(&p, ct, ct_len);
    qo_store_le64(lens, (uint64_t)aad_len);
    qo_store_le64(lens + 8, (uint64_t)ct_len);
    poly_blocks(&p, lens, 1);
    poly_finish(&p, otk + 16, tag);
    /* r and the accumulator are key material of this packet. */
    qo_secure_zero(&p, sizeof(p));
}

/* ------------------------------------------------------------------------ */
/* Eight messages in the lanes of AVX-512 IFMA                               */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define QO_POLY_IFMA __attribute__((target("avx512f,avx512ifma")))

/*
 * Lane l works through its message as up to four runs of whole blocks: the
 * AAD zero-padded in pad_a when it is short (else its whole blocks, then its
 * last partial block zero-padded in pad_a), the ciphertext's whole blocks,
 * and pad_c = the ciphertext's last partial block zero-padded (if any) then
 * the lengths block.  A pass loads block i of
 * every live lane with one gather per 8-byte half, multiplies and reduces
 * all eight accumulators at once, and when a lane's run ends (not every
 * pass) a scalar step moves that lane to its next run, or finishes its tag
 * and starts the next message there.
 *
 * The multiply: vpmadd52luq / vpmadd52huq give the low and the high 52 bits
 * of a 52x52-bit product, added to an accumulator; limbs are under 2^45 and
 * s1, s2 under 2^49, so each product is exact as lo + hi 2^52, and the
 * carries below are those of the scalar code with hi folded in (hi 2^52 =
 * (hi << 8) 2^44 = (hi << 10) 2^42).
 */
struct lane_state {
    uint64_t h0[8], h1[8], h2[8], r0[8], r1[8], r2[8], s1[8], s2[8];
    const uint8_t *p[8]; /* the lane's next block; an idle lane's is zeros */
    uint64_t rem[8];
    const struct qo_poly1305_msg *msg[8]; /* NULL: the lane is idle */
    unsigned run[8];
    uint8_t pad_a[8][64], pad_c[8][32];
} __attribute__((aligned(64)));

static const uint8_t zero_block[16];

/* The next run of lane l with blocks in it (p, rem); 0 when none is left. */
static int lane_next_run(struct lane_state *st, unsigned l)
{
    const struct qo_poly1305_msg *m = st->msg[l];
    while (st->run[l] < 4) {
        unsigned r = st->run[l]++;
        const uint8_t *p = NULL;
        size_t nb = 0;
        switch (r) {
        case 0: /* a short AAD (a QUIC header) is all in pad_a: one run */
            p = m->aad_len <= sizeof(st->pad_a[l]) ? st->pad_a[l] : m->aad;
            nb = m->aad_len <= sizeof(st->pad_a[l]) ? (m->aad_len + 15) / 16 : m->aad_len / 16;
            break;
        case 1:
            p = st->pad_a[l];
            nb = m->aad_len > sizeof(st->pad_a[l]) && m->aad_len % 16 != 0;
            break;
        case 2:
            p = m->ct;
            nb = m->ct_len / 16;
            break;
        default:
            p = m->ct_len % 16 != 0 ? st->pad_c[l] : st->pad_c[l] + 16;
            nb = (m->ct_len % 16 != 0) + 1;
            break;
        }
        if (nb != 0) {
            st->p[l] = p;
            st->rem[l] = nb;
            return 1;
        }
    }
    return 0;
}

static void lane_start(struct lane_state *st, unsigned l, const struct qo_poly1305_msg *m)
{
    struct poly p;

    st->msg[l] = m;
    if (m == NULL) {
        st->p[l] = zero_block;
        st->rem[l] = 0;
        return;
    }
    poly_init(&p, m->otk);
    st->r0[l] = p.r0;
    st->r1[l] = p.r1;
    st->r2[l] = p.r2;
    st->s1[l] = p.s1;
    st->s2[l] = p.s2;
    st->h0[l] = st->h1[l] = st->h2[l] = 0;
    qo_secure_zero(&p, sizeof(p));
    memset(st->pad_a[l], 0, sizeof(st->pad_a[l]));
    if (m->aad_len <= sizeof(st->pad_a[l]))
        memcpy(st->pad_a[l], m->aad, m->aad_len);
    else
        memcpy(st->pad_a[l], m->aad + m->aad_len / 16 * 16, m->aad_len % 16);
    memset(st->pad_c[l], 0, 16);
    memcpy(st->pad_c[l], m->ct + m->ct_len / 16 * 16, m->ct_len % 16);
    qo_store_le64(st->pad_c[l] + 16, (uint64_t)m->aad_len);
    qo_store_le64(st->pad_c[l] + 24, (uint64_t)m->ct_len);
    st->run[l] = 0;
    lane_next_run(st, l); /* run 3 always has a block */
}

QO_POLY_IFMA static void tags_ifma(const struct qo_poly1305_msg *msgs, unsigned n)
{
    struct lane_state st;
    unsigned next = 0;
    const __m512i m44 = _mm512_set1_epi64((long long)M44), m42 = _mm512_set1_epi64((long long)M42);
    const __m512i hibit = _mm512_set1_epi64(1ll << 40);
    const __m512i one = _mm512_set1_epi64(1), zero = _mm512_setzero_si512();
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    __m512i h0, h1, h2, r0, r1, r2, s1, s2, rem;

    for (unsigned l = 0; l < 8; l++)
        lane_start(&st, l, next < n ? &msgs[next++] : NULL);
#define LOAD_ALL()                               \
    do {                                         \
        h0 = _mm512_load_si512((void *)st.h0);   \
        h1 = _mm512_load_si512((void *)st.h1);   \
        h2 = _mm512_load_si512((void *)st.h2);   \
        r0 = _mm512_load_si512((void *)st.r0);   \
        r1 = _mm512_load_si512((void *)st.r1);   \
        r2 = _mm512_load_si512((void *)st.r2);   \
        s1 = _mm512_load_si512((void *)st.s1);   \
        s2 = _mm512_load_si512((void *)st.s2);   \
        rem = _mm512_load_si512((void *)st.rem); \
    } while (0)
    LOAD_ALL();
    for (;;) {
        __mmask8 live = _mm512_cmpneq_epu64_mask(rem, zero);
        if (live == 0)
            break;
        /* Block i of each lane: eight 16-byte loads, then the low and the
         * high halves gathered into t0 and t1 by two permutes (cheaper here
         * than two gathers).  An idle lane reads a block of zeros. */
        __m256i q0 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)st.p[1]),
                                      _mm_loadu_si128((const __m128i *)st.p[0]));
        __m256i q1 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)st.p[3]),
                                      _mm_loadu_si128((const __m128i *)st.p[2]));
        __m256i q2 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)st.p[5]),
                                      _mm_loadu_si128((const __m128i *)st.p[4]));
        __m256i q3 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)st.p[7]),
                                      _mm_loadu_si128((const __m128i *)st.p[6]));
        __m512i qa = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
        __m512i qb = _mm512_inserti64x4(_mm512_castsi256_si512(q2), q3, 1);
        __m512i t0 = _mm512_permutex2var_epi64(qa, even, qb);
        __m512i t1 = _mm512_permutex2var_epi64(qa, odd, qb);
        for (unsigned l = 0; l < 8; l++)
            st.p[l] += (live >> l & 1) * 16;
        __m512i a0 = _mm512_add_epi64(h0, _mm512_and_si512(t0, m44));
        __m512i a1 = _mm512_add_epi64(h1,
                                      _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(t0, 44),
                                                                       _mm512_slli_epi64(t1, 20)),
                                                       m44));
        __m512i a2 = _mm512_add_epi64(h2, _mm512_or_si512(_mm512_srli_epi64(t1, 24), hibit));

        __m512i d0l = _mm512_madd52lo_epu64(zero, a0, r0);
        __m512i d0h = _mm512_madd52hi_epu64(zero, a0, r0);
        __m512i d1l = _mm512_madd52lo_epu64(zero, a0, r1);
        __m512i d1h = _mm512_madd52hi_epu64(zero, a0, r1);
        __m512i d2l = _mm512_madd52lo_epu64(zero, a0, r2);
        __m512i d2h = _mm512_madd52hi_epu64(zero, a0, r2);
        d0l = _mm512_madd52lo_epu64(d0l, a1, s2);
        d0h = _mm512_madd52hi_epu64(d0h, a1, s2);
        d1l = _mm512_madd52lo_epu64(d1l, a1, r0);
        d1h = _mm512_madd52hi_epu64(d1h, a1, r0);
        d2l = _mm512_madd52lo_epu64(d2l, a1, r1);
        d2h = _mm512_madd52hi_epu64(d2h, a1, r1);
        d0l = _mm512_madd52lo_epu64(d0l, a2, s1);
        d0h = _mm512_madd52hi_epu64(d0h, a2, s1);
        d1l = _mm512_madd52lo_epu64(d1l, a2, s2);
        d1h = _mm512_madd52hi_epu64(d1h, a2, s2);
        d2l = _mm512_madd52lo_epu64(d2l, a2, r0);
        d2h = _mm512_madd52hi_epu64(d2h, a2, r0);

        __m512i c, n0, n1, n2;
        n0 = _mm512_and_si512(d0l, m44);
        c = _mm512_add_epi64(_mm512_srli_epi64(d0l, 44), _mm512_slli_epi64(d0h, 8));
        d1l = _mm512_add_epi64(d1l, c);
        n1 = _mm512_and_si512(d1l, m44);
        c = _mm512_add_epi64(_mm512_srli_epi64(d1l, 44), _mm512_slli_epi64(d1h, 8));
        d2l = _mm512_add_epi64(d2l, c);
        n2 = _mm512_and_si512(d2l, m42);
        c = _mm512_add_epi64(_mm512_srli_epi64(d2l, 42), _mm512_slli_epi64(d2h, 10));
        n0 = _mm512_add_epi64(n0, _mm512_add_epi64(c, _mm512_slli_epi64(c, 2)));
        c = _mm512_srli_epi64(n0, 44);
        n0 = _mm512_and_si512(n0, m44);
        n1 = _mm512_add_epi64(n1, c);

        h0 = _mm512_mask_mov_epi64(h0, live, n0);
        h1 = _mm512_mask_mov_epi64(h1, live, n1);
        h2 = _mm512_mask_mov_epi64(h2, live, n2);
        rem = _mm512_mask_sub_epi64(rem, live, rem, one);

        __mmask8 ended = _mm512_mask_cmpeq_epu64_mask(live, rem, zero);
        if (ended == 0)
            continue;
        /* Some lanes ended a run: move them on in scalar code. */
        _mm512_store_si512((void *)st.h0, h0);
        _mm512_store_si512((void *)st.h1, h1);
        _mm512_store_si512((void *)st.h2, h2);
        _mm512_store_si512((void *)st.rem, rem);
        int started = 0;
        for (unsigned l = 0; l < 8; l++) {
            if (!(ended >> l & 1) || lane_next_run(&st, l))
                continue;
            const struct qo_poly1305_msg *m = st.msg[l];
            finish_limbs(st.h0[l], st.h1[l], st.h2[l], m->otk + 16, m->tag);
            lane_start(&st, l, next < n ? &msgs[next++] : NULL);
            started = 1;
        }
        if (started)
            LOAD_ALL();
        else
            rem = _mm512_load_si512((void *)st.rem);
    }
#undef LOAD_ALL
    /* r, s and the accumulators are key material. */
    qo_secure_zero(&st, sizeof(st));
}

int qo_poly1305_lanes_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
}
#else
int qo_poly1305_lanes_available(void)
{
    return 0;
}
#endif

void qo_poly1305_aead_tags(const struct qo_poly1305_msg *m, unsigned n, int lanes)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (lanes && n > 1) {
        tags_ifma(m, n);
        return;
    }
#else
    (void)lanes;
#endif
    for (unsigned i = 0; i < n; i++)
        qo_poly1305_aead_tag(m[i].otk, m[i].aad, m[i].aad_len, m[i].ct, m[i].ct_len, m[i].tag);
}
