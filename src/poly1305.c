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

#include <stddef.h>
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
 * the lengths block.  A step loads the next block (or four) of every live
 * lane, multiplies and reduces all eight accumulators at once, and when a
 * lane's run ends (not every step) a scalar step moves that lane to its next
 * run, or finishes its tag and starts the next message there.
 *
 * The multiply: vpmadd52luq / vpmadd52huq give the low and the high 52 bits
 * of a 52x52-bit product, added to an accumulator; limbs (of h + m, of r and
 * its powers, which leave the reduction as h does) are under 2^46 and s1, s2
 * under 2^50, so each product is exact as lo + hi 2^52, twelve of them (a
 * four-block step) add up without overflow, and the carries below are those
 * of the scalar code with hi folded in (hi 2^52 = (hi << 8) 2^44 =
 * (hi << 10) 2^42).
 */
/* A lane's walk through its message (runs, above), whatever the limbs. */
struct lane_walk {
    const uint8_t *p[8]; /* the lane's next block; an idle lane's is zeros */
    uint64_t rem[8];
    const struct qo_poly1305_msg *msg[8]; /* NULL: the lane is idle */
    unsigned run[8];
    uint8_t pad_a[8][64], pad_c[8][32];
} __attribute__((aligned(64)));

struct lane_state {
    uint64_t h0[8], h1[8], h2[8], r0[8], r1[8], r2[8], s1[8], s2[8];
    /* r^2, r^3, r^4 of each lane (limbs r0 r1 r2, then s1 s2), for the
     * four-block steps; made again after a lane starts a message. */
    uint64_t pw[3][5][8];
    struct lane_walk w;
} __attribute__((aligned(64)));

/* What an idle lane reads: up to four blocks of zeros. */
static const uint8_t zero_block[64];

/* The next run of lane l with blocks in it (p, rem); 0 when none is left. */
static inline __attribute__((always_inline)) int lane_next_run(struct lane_walk *st, unsigned l)
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

/* Lane l takes message m (NULL: it goes idle); its limbs are the caller's. */
static void walk_start(struct lane_walk *st, unsigned l, const struct qo_poly1305_msg *m)
{
    st->msg[l] = m;
    if (m == NULL) {
        st->p[l] = zero_block;
        st->rem[l] = 0;
        return;
    }
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

static void lane_start(struct lane_state *st, unsigned l, const struct qo_poly1305_msg *m)
{
    struct poly p;

    walk_start(&st->w, l, m);
    if (m == NULL)
        return;
    poly_init(&p, m->otk);
    st->r0[l] = p.r0;
    st->r1[l] = p.r1;
    st->r2[l] = p.r2;
    st->s1[l] = p.s1;
    st->s2[l] = p.s2;
    st->h0[l] = st->h1[l] = st->h2[l] = 0;
    qo_secure_zero(&p, sizeof(p));
}

/* The six 64-bit sums of 52-bit partial products of one multiplication (or
 * of several, added up before one reduction). */
struct sums {
    __m512i d0l, d0h, d1l, d1h, d2l, d2h;
};

/* d += a * r, r given by its limbs and s1 = 20 r1, s2 = 20 r2. */
QO_POLY_IFMA static inline void mul_add(struct sums *d, __m512i a0, __m512i a1, __m512i a2,
                                        __m512i r0, __m512i r1, __m512i r2, __m512i s1, __m512i s2)
{
    d->d0l = _mm512_madd52lo_epu64(d->d0l, a0, r0);
    d->d0h = _mm512_madd52hi_epu64(d->d0h, a0, r0);
    d->d1l = _mm512_madd52lo_epu64(d->d1l, a0, r1);
    d->d1h = _mm512_madd52hi_epu64(d->d1h, a0, r1);
    d->d2l = _mm512_madd52lo_epu64(d->d2l, a0, r2);
    d->d2h = _mm512_madd52hi_epu64(d->d2h, a0, r2);
    d->d0l = _mm512_madd52lo_epu64(d->d0l, a1, s2);
    d->d0h = _mm512_madd52hi_epu64(d->d0h, a1, s2);
    d->d1l = _mm512_madd52lo_epu64(d->d1l, a1, r0);
    d->d1h = _mm512_madd52hi_epu64(d->d1h, a1, r0);
    d->d2l = _mm512_madd52lo_epu64(d->d2l, a1, r1);
    d->d2h = _mm512_madd52hi_epu64(d->d2h, a1, r1);
    d->d0l = _mm512_madd52lo_epu64(d->d0l, a2, s1);
    d->d0h = _mm512_madd52hi_epu64(d->d0h, a2, s1);
    d->d1l = _mm512_madd52lo_epu64(d->d1l, a2, s2);
    d->d1h = _mm512_madd52hi_epu64(d->d1h, a2, s2);
    d->d2l = _mm512_madd52lo_epu64(d->d2l, a2, r0);
    d->d2h = _mm512_madd52hi_epu64(d->d2h, a2, r0);
}

/* The carries of the scalar code, with the high halves folded in. */
QO_POLY_IFMA static inline void reduce(const struct sums *d, __m512i *h0, __m512i *h1, __m512i *h2)
{
    const __m512i m44 = _mm512_set1_epi64((long long)M44), m42 = _mm512_set1_epi64((long long)M42);
    __m512i c, n0, n1, n2, d1l, d2l;

    n0 = _mm512_and_si512(d->d0l, m44);
    c = _mm512_add_epi64(_mm512_srli_epi64(d->d0l, 44), _mm512_slli_epi64(d->d0h, 8));
    d1l = _mm512_add_epi64(d->d1l, c);
    n1 = _mm512_and_si512(d1l, m44);
    c = _mm512_add_epi64(_mm512_srli_epi64(d1l, 44), _mm512_slli_epi64(d->d1h, 8));
    d2l = _mm512_add_epi64(d->d2l, c);
    n2 = _mm512_and_si512(d2l, m42);
    c = _mm512_add_epi64(_mm512_srli_epi64(d2l, 42), _mm512_slli_epi64(d->d2h, 10));
    n0 = _mm512_add_epi64(n0, _mm512_add_epi64(c, _mm512_slli_epi64(c, 2)));
    c = _mm512_srli_epi64(n0, 44);
    *h0 = _mm512_and_si512(n0, m44);
    *h1 = _mm512_add_epi64(n1, c);
    *h2 = n2;
}

/* Block `off` bytes past each lane's p as limbs (with the 2^128 bit): eight
 * 16-byte loads, the low and the high halves gathered by two permutes
 * (cheaper here than two gathers).  An idle lane reads zeros. */
QO_POLY_IFMA static inline void load_limbs(const uint8_t *const p[8], unsigned off, __m512i *a0,
                                           __m512i *a1, __m512i *a2)
{
    const __m512i m44 = _mm512_set1_epi64((long long)M44);
    const __m512i hibit = _mm512_set1_epi64(1ll << 40);
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    __m256i q0 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(p[1] + off)),
                                  _mm_loadu_si128((const __m128i *)(p[0] + off)));
    __m256i q1 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(p[3] + off)),
                                  _mm_loadu_si128((const __m128i *)(p[2] + off)));
    __m256i q2 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(p[5] + off)),
                                  _mm_loadu_si128((const __m128i *)(p[4] + off)));
    __m256i q3 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(p[7] + off)),
                                  _mm_loadu_si128((const __m128i *)(p[6] + off)));
    __m512i qa = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    __m512i qb = _mm512_inserti64x4(_mm512_castsi256_si512(q2), q3, 1);
    __m512i t0 = _mm512_permutex2var_epi64(qa, even, qb);
    __m512i t1 = _mm512_permutex2var_epi64(qa, odd, qb);
    *a0 = _mm512_and_si512(t0, m44);
    *a1 = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(t0, 44), _mm512_slli_epi64(t1, 20)),
                           m44);
    *a2 = _mm512_or_si512(_mm512_srli_epi64(t1, 24), hibit);
}

/* r^k for every lane: r^2 = r r, then r^3 = r^2 r and r^4 = r^2 r^2. */
QO_POLY_IFMA static void make_powers(struct lane_state *st)
{
    const __m512i zero = _mm512_setzero_si512();
    __m512i r[5], q[5], p0, p1, p2;

    r[0] = _mm512_load_si512((const void *)st->r0);
    r[1] = _mm512_load_si512((const void *)st->r1);
    r[2] = _mm512_load_si512((const void *)st->r2);
    r[3] = _mm512_load_si512((const void *)st->s1);
    r[4] = _mm512_load_si512((const void *)st->s2);
    for (int k = 0; k < 3; k++) {
        struct sums d = {zero, zero, zero, zero, zero, zero};
        /* r^2 = r r; r^3 = r^2 r; r^4 = r^2 r^2 */
        const __m512i *a = k == 0 ? r : q, *b = k == 2 ? q : r;
        mul_add(&d, a[0], a[1], a[2], b[0], b[1], b[2], b[3], b[4]);
        reduce(&d, &p0, &p1, &p2);
        _mm512_store_si512((void *)st->pw[k][0], p0);
        _mm512_store_si512((void *)st->pw[k][1], p1);
        _mm512_store_si512((void *)st->pw[k][2], p2);
        /* s = 20 p = 16 p + 4 p */
        _mm512_store_si512((void *)st->pw[k][3],
                           _mm512_add_epi64(_mm512_slli_epi64(p1, 4), _mm512_slli_epi64(p1, 2)));
        _mm512_store_si512((void *)st->pw[k][4],
                           _mm512_add_epi64(_mm512_slli_epi64(p2, 4), _mm512_slli_epi64(p2, 2)));
        if (k == 0)
            for (int i = 0; i < 5; i++)
                q[i] = _mm512_load_si512((const void *)st->pw[0][i]);
    }
}

/*
 * `steps` four-block steps of the live lanes, every one of which has that
 * many blocks left in its run: h = (h + m0) r^4 + m1 r^3 + m2 r^2 + m3 r.
 * Its own function (not inlined), so that its registers do not crowd the
 * one-block loop's.
 */
QO_POLY_IFMA __attribute__((noinline)) static void four_block_steps(struct lane_state *st,
                                                                    __mmask8 live, uint64_t steps)
{
    const __m512i zero = _mm512_setzero_si512();
    __m512i h0 = _mm512_load_si512((const void *)st->h0);
    __m512i h1 = _mm512_load_si512((const void *)st->h1);
    __m512i h2 = _mm512_load_si512((const void *)st->h2);
    __m512i w[4][5];
    const uint8_t *p[8];

    for (int i = 0; i < 5; i++)
        for (int k = 0; k < 3; k++)
            w[k][i] = _mm512_load_si512((const void *)st->pw[k][i]);
    w[3][0] = _mm512_load_si512((const void *)st->r0);
    w[3][1] = _mm512_load_si512((const void *)st->r1);
    w[3][2] = _mm512_load_si512((const void *)st->r2);
    w[3][3] = _mm512_load_si512((const void *)st->s1);
    w[3][4] = _mm512_load_si512((const void *)st->s2);
    for (unsigned l = 0; l < 8; l++)
        p[l] = st->w.p[l];
    for (uint64_t i = 0; i < steps; i++) {
        struct sums d = {zero, zero, zero, zero, zero, zero};
        __m512i a0, a1, a2, n0, n1, n2;
        load_limbs(p, 0, &a0, &a1, &a2);
        a0 = _mm512_add_epi64(a0, h0);
        a1 = _mm512_add_epi64(a1, h1);
        a2 = _mm512_add_epi64(a2, h2);
        for (int b = 0; b < 4; b++) {
            /* block b times r^(4 - b): w[2] is r^4, w[1] r^3, w[0] r^2, w[3] r */
            const __m512i *r = w[b == 3 ? 3 : 2 - b];
            if (b > 0)
                load_limbs(p, 16 * (unsigned)b, &a0, &a1, &a2);
            mul_add(&d, a0, a1, a2, r[0], r[1], r[2], r[3], r[4]);
        }
        reduce(&d, &n0, &n1, &n2);
        h0 = _mm512_mask_mov_epi64(h0, live, n0);
        h1 = _mm512_mask_mov_epi64(h1, live, n1);
        h2 = _mm512_mask_mov_epi64(h2, live, n2);
        for (unsigned l = 0; l < 8; l++)
            p[l] += (live >> l & 1) * 64;
    }
    for (unsigned l = 0; l < 8; l++)
        st->w.p[l] = p[l];
    _mm512_store_si512((void *)st->h0, h0);
    _mm512_store_si512((void *)st->h1, h1);
    _mm512_store_si512((void *)st->h2, h2);
    /* r and its powers pass through this frame's registers (and any spill
     * slots), as the caller's vectors do; the copy that lasts, st, is what
     * the caller wipes. */
}

/*
 * A step takes one block of every live lane, or four when every live lane
 * has four left in its run (the usual case inside a long ciphertext):
 * h = (h + m0) r^4 + m1 r^3 + m2 r^2 + m3 r, the four products summed before
 * one reduction.  Per block that is the same 18 multiply-adds, but a
 * quarter of the carries and loads of the lanes' state; it needs r^2..r^4
 * per lane, made when a four-block step comes after a lane started a message
 * (three multiplications for all eight lanes), and only where at least three
 * four-block steps follow, so short messages never pay for them.
 */
QO_POLY_IFMA static void tags_ifma(const struct qo_poly1305_msg *msgs, unsigned n)
{
    struct lane_state st;
    unsigned next = 0;
    const __m512i one = _mm512_set1_epi64(1);
    const __m512i zero = _mm512_setzero_si512();
    __m512i h0, h1, h2, r0, r1, r2, s1, s2, rem;
    int powers_stale = 1, powers_made = 0, runs_changed = 1;

    for (unsigned l = 0; l < 8; l++)
        lane_start(&st, l, next < n ? &msgs[next++] : NULL);
#define LOAD_ALL()                                 \
    do {                                           \
        h0 = _mm512_load_si512((void *)st.h0);     \
        h1 = _mm512_load_si512((void *)st.h1);     \
        h2 = _mm512_load_si512((void *)st.h2);     \
        r0 = _mm512_load_si512((void *)st.r0);     \
        r1 = _mm512_load_si512((void *)st.r1);     \
        r2 = _mm512_load_si512((void *)st.r2);     \
        s1 = _mm512_load_si512((void *)st.s1);     \
        s2 = _mm512_load_si512((void *)st.s2);     \
        rem = _mm512_load_si512((void *)st.w.rem); \
    } while (0)
    LOAD_ALL();
    for (;;) {
        __mmask8 live = _mm512_cmpneq_epu64_mask(rem, zero);
        if (live == 0)
            break;
        /* Four-block steps while every live lane has four blocks left in
         * its run; when that needs the powers made first, only if it pays
         * for them (three steps at least: a 64-byte packet's four
         * ciphertext blocks do not). */
        uint64_t least = 0;
        if (runs_changed) {
            /* Lanes only change runs below, so a one-block step that found
             * a lane short of blocks is followed by more until then. */
            least = _mm512_mask_reduce_min_epu64(live, rem);
            runs_changed = 0;
        }
        if (least >= (powers_stale ? 12u : 4u)) {
            if (powers_stale) {
                make_powers(&st);
                powers_stale = 0;
                powers_made = 1;
            }
            _mm512_store_si512((void *)st.h0, h0);
            _mm512_store_si512((void *)st.h1, h1);
            _mm512_store_si512((void *)st.h2, h2);
            four_block_steps(&st, live, least / 4);
            h0 = _mm512_load_si512((void *)st.h0);
            h1 = _mm512_load_si512((void *)st.h1);
            h2 = _mm512_load_si512((void *)st.h2);
            rem = _mm512_mask_sub_epi64(rem, live, rem,
                                        _mm512_set1_epi64((long long)(least / 4 * 4)));
        } else {
            struct sums d = {zero, zero, zero, zero, zero, zero};
            __m512i a0, a1, a2, n0, n1, n2;
            load_limbs(st.w.p, 0, &a0, &a1, &a2);
            a0 = _mm512_add_epi64(a0, h0);
            a1 = _mm512_add_epi64(a1, h1);
            a2 = _mm512_add_epi64(a2, h2);
            mul_add(&d, a0, a1, a2, r0, r1, r2, s1, s2);
            for (unsigned l = 0; l < 8; l++)
                st.w.p[l] += (live >> l & 1) * 16;
            reduce(&d, &n0, &n1, &n2);
            h0 = _mm512_mask_mov_epi64(h0, live, n0);
            h1 = _mm512_mask_mov_epi64(h1, live, n1);
            h2 = _mm512_mask_mov_epi64(h2, live, n2);
            rem = _mm512_mask_sub_epi64(rem, live, rem, one);
        }

        __mmask8 ended = _mm512_mask_cmpeq_epu64_mask(live, rem, zero);
        if (ended == 0)
            continue;
        /* Some lanes ended a run: move them on in scalar code. */
        runs_changed = 1;
        _mm512_store_si512((void *)st.h0, h0);
        _mm512_store_si512((void *)st.h1, h1);
        _mm512_store_si512((void *)st.h2, h2);
        _mm512_store_si512((void *)st.w.rem, rem);
        int started = 0;
        for (unsigned l = 0; l < 8; l++) {
            if (!(ended >> l & 1) || lane_next_run(&st.w, l))
                continue;
            const struct qo_poly1305_msg *m = st.w.msg[l];
            finish_limbs(st.h0[l], st.h1[l], st.h2[l], m->otk + 16, m->tag);
            lane_start(&st, l, next < n ? &msgs[next++] : NULL);
            started = 1;
        }
        if (started) {
            LOAD_ALL();
            powers_stale = 1;
        } else {
            rem = _mm512_load_si512((void *)st.w.rem);
        }
    }
#undef LOAD_ALL
    /* r, its powers, s and the accumulators are key material (the powers
     * only where they were made: a short packets' burst skips their bytes). */
    qo_secure_zero(&st, offsetof(struct lane_state, pw));
    if (powers_made)
        qo_secure_zero(st.pw, sizeof(st.pw));
    qo_secure_zero(&st.w, sizeof(st.w));
}

/* ------------------------------------------------------------------------ */
/* Eight messages in AVX2: two vectors of four 64-bit lanes                  */

#define QO_POLY_AVX2 __attribute__((target("avx2")))
#define M26 0x3ffffffull

/*
 * AVX2 has no 52-bit multiply: vpmuludq multiplies the low 32 bits of each
 * 64-bit lane, so h and r are in radix 2^26 (five limbs, 25 products a
 * block, the form of poly1305-donna's 32-bit code) and the lanes are those
 * of the IFMA version (the same walk through each message), four to a
 * vector.  Limbs stay under 2^27 (r under 2^26, s = 5 r under 2^29), so a
 * sum of five products is under 2^59.
 */
struct lane_state26 {
    uint64_t h[5][8], r[5][8], s[5][8]; /* s[0] unused */
    struct lane_walk w;
} __attribute__((aligned(64)));

static void lane_start26(struct lane_state26 *st, unsigned l, const struct qo_poly1305_msg *m)
{
    walk_start(&st->w, l, m);
    if (m == NULL)
        return;
    /* r clamped as §2.5.1 says, then cut into 26-bit limbs */
    uint64_t t0 = qo_load_le64(m->otk) & 0x0ffffffc0fffffffull;
    uint64_t t1 = qo_load_le64(m->otk + 8) & 0x0ffffffc0ffffffcull;
    uint64_t r[5] = {t0 & M26, (t0 >> 26) & M26, ((t0 >> 52) | (t1 << 12)) & M26, (t1 >> 14) & M26,
                     (t1 >> 40) & M26};
    for (int k = 0; k < 5; k++) {
        st->r[k][l] = r[k];
        st->s[k][l] = r[k] * 5;
        st->h[k][l] = 0;
    }
    qo_secure_zero(r, sizeof(r));
}

/* The tag of lane l: its radix-2^26 accumulator in the 44-bit limbs that
 * finish_limbs takes (each limb's bits moved once; finish_limbs carries). */
static void lane_finish26(const struct lane_state26 *st, unsigned l, const uint8_t s[16],
                          uint8_t tag[16])
{
    uint64_t h0 = st->h[0][l], h1 = st->h[1][l], h2 = st->h[2][l], h3 = st->h[3][l],
             h4 = st->h[4][l];
    uint64_t x0 = h0 + ((h1 & 0x3ffff) << 26);
    uint64_t x1 = (x0 >> 44) + (h1 >> 18) + (h2 << 8) + ((h3 & 0x3ff) << 34);
    uint64_t x2 = (x1 >> 44) + (h3 >> 10) + (h4 << 16);
    finish_limbs(x0 & M44, x1 & M44, x2, s, tag);
}

/* One block of four lanes: h = (h + m) r, for the lanes in `live` (all ones
 * or zero per 64-bit lane); p: the four lanes' blocks. */
QO_POLY_AVX2 static inline void step4(__m256i h[5], const __m256i r[5], const __m256i s[5],
                                      const uint8_t *const p[4], __m256i live)
{
    const __m256i m26 = _mm256_set1_epi64x((long long)M26);
    /* lanes 0 and 2 in one vector, 1 and 3 in the other: unpacking their
     * 64-bit halves then gives the lanes in order */
    __m256i x02 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)p[2]),
                                   _mm_loadu_si128((const __m128i *)p[0]));
    __m256i x13 = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)p[3]),
                                   _mm_loadu_si128((const __m128i *)p[1]));
    __m256i lo = _mm256_unpacklo_epi64(x02, x13), hi = _mm256_unpackhi_epi64(x02, x13);
    __m256i a[5], d[5], c;
    a[0] = _mm256_add_epi64(h[0], _mm256_and_si256(lo, m26));
    a[1] = _mm256_add_epi64(h[1], _mm256_and_si256(_mm256_srli_epi64(lo, 26), m26));
    a[2] = _mm256_add_epi64(h[2], _mm256_and_si256(_mm256_or_si256(_mm256_srli_epi64(lo, 52),
                                                                   _mm256_slli_epi64(hi, 12)),
                                                   m26));
    a[3] = _mm256_add_epi64(h[3], _mm256_and_si256(_mm256_srli_epi64(hi, 14), m26));
    a[4] = _mm256_add_epi64(h[4], _mm256_or_si256(_mm256_srli_epi64(hi, 40),
                                                  _mm256_set1_epi64x(1ll << 24)));
    /* d_k = sum over i of a_i r_(k-i), with 5 r folded in where k - i < 0 */
    for (int k = 0; k < 5; k++) {
        d[k] = _mm256_mul_epu32(a[0], r[k]);
        for (int i = 1; i < 5; i++)
            d[k] = _mm256_add_epi64(d[k],
                                    _mm256_mul_epu32(a[i], i <= k ? r[k - i] : s[k - i + 5]));
    }
    /* carries limb to limb, the top one folded down times 5 (2^130 = 5) */
    for (int k = 0; k < 4; k++) {
        c = _mm256_srli_epi64(d[k], 26);
        d[k] = _mm256_and_si256(d[k], m26);
        d[k + 1] = _mm256_add_epi64(d[k + 1], c);
    }
    c = _mm256_srli_epi64(d[4], 26);
    d[4] = _mm256_and_si256(d[4], m26);
    d[0] = _mm256_add_epi64(d[0], _mm256_add_epi64(c, _mm256_slli_epi64(c, 2)));
    c = _mm256_srli_epi64(d[0], 26);
    d[0] = _mm256_and_si256(d[0], m26);
    d[1] = _mm256_add_epi64(d[1], c);
    for (int k = 0; k < 5; k++)
        h[k] = _mm256_blendv_epi8(h[k], d[k], live);
}

QO_POLY_AVX2 static void tags_avx2(const struct qo_poly1305_msg *msgs, unsigned n)
{
    struct lane_state26 st;
    unsigned next = 0;
    const __m256i zero = _mm256_setzero_si256();
    __m256i h[2][5], r[2][5], s[2][5], rem[2];

    for (unsigned l = 0; l < 8; l++)
        lane_start26(&st, l, next < n ? &msgs[next++] : NULL);
#define LOAD_ALL26()                                                           \
    do {                                                                       \
        for (int v = 0; v < 2; v++) {                                          \
            for (int k = 0; k < 5; k++) {                                      \
                h[v][k] = _mm256_load_si256((const __m256i *)&st.h[k][4 * v]); \
                r[v][k] = _mm256_load_si256((const __m256i *)&st.r[k][4 * v]); \
                s[v][k] = _mm256_load_si256((const __m256i *)&st.s[k][4 * v]); \
            }                                                                  \
            rem[v] = _mm256_load_si256((const __m256i *)&st.w.rem[4 * v]);     \
        }                                                                      \
    } while (0)
    LOAD_ALL26();
    for (;;) {
        __m256i live[2], one[2];
        for (int v = 0; v < 2; v++) {
            /* all ones where rem != 0; rem - 1 there */
            live[v] = _mm256_xor_si256(_mm256_cmpeq_epi64(rem[v], zero), _mm256_set1_epi64x(-1));
            one[v] = _mm256_srli_epi64(live[v], 63);
        }
        unsigned livebits = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(live[0])) |
                            (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(live[1])) << 4;
        if (livebits == 0)
            break;
        for (int v = 0; v < 2; v++) {
            step4(h[v], r[v], s[v], &st.w.p[4 * v], live[v]);
            rem[v] = _mm256_sub_epi64(rem[v], one[v]);
        }
        for (unsigned l = 0; l < 8; l++)
            st.w.p[l] += (livebits >> l & 1) * 16;
        unsigned ended =
            livebits &
            ((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(rem[0], zero))) |
             (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(rem[1], zero)))
                 << 4);
        if (ended == 0)
            continue;
        /* Some lanes ended a run: move them on in scalar code. */
        for (int v = 0; v < 2; v++) {
            for (int k = 0; k < 5; k++)
                _mm256_store_si256((__m256i *)&st.h[k][4 * v], h[v][k]);
            _mm256_store_si256((__m256i *)&st.w.rem[4 * v], rem[v]);
        }
        for (unsigned l = 0; l < 8; l++) {
            if (!(ended >> l & 1) || lane_next_run(&st.w, l))
                continue;
            const struct qo_poly1305_msg *m = st.w.msg[l];
            lane_finish26(&st, l, m->otk + 16, m->tag);
            lane_start26(&st, l, next < n ? &msgs[next++] : NULL);
        }
        LOAD_ALL26();
    }
#undef LOAD_ALL26
    /* r, s and the accumulators are key material. */
    qo_secure_zero(&st, sizeof(st));
}

int qo_poly1305_available(enum qo_poly1305_impl impl)
{
    __builtin_cpu_init();
    switch (impl) {
    case QO_POLY1305_IFMA:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
    case QO_POLY1305_AVX2:
        return __builtin_cpu_supports("avx2");
    default:
        return 1;
    }
}
#else
int qo_poly1305_available(enum qo_poly1305_impl impl)
{
    return impl == QO_POLY1305_SCALAR;
}
#endif

void qo_poly1305_aead_tags(const struct qo_poly1305_msg *m, unsigned n, enum qo_poly1305_impl impl)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (n > 1 && impl == QO_POLY1305_IFMA) {
        tags_ifma(m, n);
        return;
    }
    if (n > 1 && impl == QO_POLY1305_AVX2) {
        tags_avx2(m, n);
        return;
    }
#else
    (void)impl;
#endif
    for (unsigned i = 0; i < n; i++)
        qo_poly1305_aead_tag(m[i].otk, m[i].aad, m[i].aad_len, m[i].ct, m[i].ct_len, m[i].tag);
}
