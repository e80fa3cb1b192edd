/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ChaCha20 block function for header protection; see chacha20.h.
 *
 * The multi-lane versions keep the state transposed: vector j holds word j
 * of every lane's block, so the four quarter rounds of a round are
 * independent vector operations and no shuffles are needed.  They are
 * written with GCC vector extensions (GCC and Clang) and compiled for
 * AVX-512F or AVX2 through function target attributes only, so the rest of
 * the library stays portable; cpuid picks one at run time.
 */
#include "chacha20.h"

#include "crypto.h" /* qo_secure_zero */
#include "qo_bytes.h"

#include <stdatomic.h>
#include <string.h>

#define C0 0x61707865u /* "expa" */
#define C1 0x3320646eu /* "nd 3" */
#define C2 0x79622d32u /* "2-by" */
#define C3 0x6b206574u /* "te k" */

#define ROTL(v, n) (((v) << (n)) | ((v) >> (32 - (n))))
#define ROTL16(v) ROTL(v, 16)
#define ROTL12(v) ROTL(v, 12)
#define ROTL8(v) ROTL(v, 8)
#define ROTL7(v) ROTL(v, 7)

/* RFC 8439 §2.1.  Written for scalars and, unchanged, for vectors; the
 * rotations are parameters, for ISAs whose compilers need telling how
 * (AVX2 below: a byte shuffle for 16 and 8). */
#define QR_ROT(a, b, c, d, R16, R12, R8, R7) \
    do {                                     \
        a += b;                              \
        d ^= a;                              \
        d = R16(d);                          \
        c += d;                              \
        b ^= c;                              \
        b = R12(b);                          \
        a += b;                              \
        d ^= a;                              \
        d = R8(d);                           \
        c += d;                              \
        b ^= c;                              \
        b = R7(b);                           \
    } while (0)
#define QR(a, b, c, d) QR_ROT(a, b, c, d, ROTL16, ROTL12, ROTL8, ROTL7)

/* RFC 8439 §2.3: 20 rounds = 10 x (column round, diagonal round). */
#define DOUBLE_ROUNDS_ROT(x, R16, R12, R8, R7)                  \
    do {                                                        \
        for (int dr_ = 0; dr_ < 10; dr_++) {                    \
            QR_ROT(x[0], x[4], x[8], x[12], R16, R12, R8, R7);  \
            QR_ROT(x[1], x[5], x[9], x[13], R16, R12, R8, R7);  \
            QR_ROT(x[2], x[6], x[10], x[14], R16, R12, R8, R7); \
            QR_ROT(x[3], x[7], x[11], x[15], R16, R12, R8, R7); \
            QR_ROT(x[0], x[5], x[10], x[15], R16, R12, R8, R7); \
            QR_ROT(x[1], x[6], x[11], x[12], R16, R12, R8, R7); \
            QR_ROT(x[2], x[7], x[8], x[13], R16, R12, R8, R7);  \
            QR_ROT(x[3], x[4], x[9], x[14], R16, R12, R8, R7);  \
        }                                                       \
    } while (0)
#define DOUBLE_ROUNDS(x) DOUBLE_ROUNDS_ROT(x, ROTL16, ROTL12, ROTL8, ROTL7)

void qo_chacha20_key_init(struct qo_chacha20_key *key, const uint8_t bytes[32])
{
    for (int i = 0; i < 8; i++)
        key->k[i] = qo_load_le32(bytes + 4 * i);
}

static inline void init_state(uint32_t x[16], const struct qo_chacha20_key *key, uint32_t counter,
                              const uint8_t nonce[12])
{
    x[0] = C0;
    x[1] = C1;
    x[2] = C2;
    x[3] = C3;
    for (int i = 0; i < 8; i++)
        x[4 + i] = key->k[i];
    x[12] = counter;
    x[13] = qo_load_le32(nonce);
    x[14] = qo_load_le32(nonce + 4);
    x[15] = qo_load_le32(nonce + 8);
}

void qo_chacha20_block(const struct qo_chacha20_key *key, uint32_t counter,
                       const uint8_t nonce[12], uint8_t out[64])
{
    uint32_t in[16], x[16];

    init_state(in, key, counter, nonce);
    memcpy(x, in, sizeof(x));
    DOUBLE_ROUNDS(x);
    for (int i = 0; i < 16; i++)
        qo_store_le32(out + 4 * i, x[i] + in[i]);
}

/* w: keystream bytes 0..7, little-endian; the mask is bytes 0..4, stored as
 * it is read (crypto.h, qo_hp_mask_put). */
static inline void put_mask(uint8_t mask[5], uint64_t w)
{
    uint8_t b[8];
    qo_store_le64(b, w);
    qo_hp_mask_from_block(mask, b);
}

/* Portable: 16 words in scalars.  x86-64 has too few registers for them,
 * so the row-vector versions below are faster there. */
static void mask_c(const struct qo_chacha20_key *key, const uint8_t sample[16], uint8_t mask[5])
{
    uint32_t x[16];

    init_state(x, key, qo_load_le32(sample), sample + 4);
    DOUBLE_ROUNDS(x);
    /* Only words 0 and 1 of the block are needed: the input there is C0, C1. */
    uint64_t w = (uint64_t)(x[1] + C1) << 32 | (uint32_t)(x[0] + C0);
    put_mask(mask, w);
}

/* ------------------------------------------------------------------------ */
/* x86-64: one block in row vectors, and multi-lane masks                    */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QO_CHACHA_SIMD 1

#include <immintrin.h>

/*
 * One block with the state as four row vectors (a = words 0-3, b = 4-7,
 * c = 8-11, d = 12-15): a column round is one vector quarter round, a
 * diagonal round the same after rotating the lanes of b, c and d.  Still
 * bound by the 20-round dependency chain, but without the spills of the
 * scalar version.  ROT16..ROT7 are the ISA's rotates.
 */
#define ROW_QR(ROT16, ROT12, ROT8, ROT7) \
    do {                                 \
        a = _mm_add_epi32(a, b);         \
        d = ROT16(_mm_xor_si128(d, a));  \
        c = _mm_add_epi32(c, d);         \
        b = ROT12(_mm_xor_si128(b, c));  \
        a = _mm_add_epi32(a, b);         \
        d = ROT8(_mm_xor_si128(d, a));   \
        c = _mm_add_epi32(c, d);         \
        b = ROT7(_mm_xor_si128(b, c));   \
    } while (0)

#define DEFINE_ROW_MASK(name, isa, ROT16, ROT12, ROT8, ROT7)                                 \
    __attribute__((target(isa))) static void name(const struct qo_chacha20_key *key,         \
                                                  const uint8_t sample[16], uint8_t mask[5]) \
    {                                                                                        \
        const __m128i c0 = _mm_set_epi32((int)C3, (int)C2, (int)C1, (int)C0);                \
        __m128i a = c0;                                                                      \
        __m128i b = _mm_loadu_si128((const __m128i *)key->k);                                \
        __m128i c = _mm_loadu_si128((const __m128i *)(key->k + 4));                          \
        __m128i d = _mm_loadu_si128((const __m128i *)sample); /* x86: little-endian */       \
        for (int i = 0; i < 10; i++) {                                                       \
            ROW_QR(ROT16, ROT12, ROT8, ROT7);                                                \
            b = _mm_shuffle_epi32(b, _MM_SHUFFLE(0, 3, 2, 1));                               \
            c = _mm_shuffle_epi32(c, _MM_SHUFFLE(1, 0, 3, 2));                               \
            d = _mm_shuffle_epi32(d, _MM_SHUFFLE(2, 1, 0, 3));                               \
            ROW_QR(ROT16, ROT12, ROT8, ROT7);                                                \
            b = _mm_shuffle_epi32(b, _MM_SHUFFLE(2, 1, 0, 3));                               \
            c = _mm_shuffle_epi32(c, _MM_SHUFFLE(1, 0, 3, 2));                               \
            d = _mm_shuffle_epi32(d, _MM_SHUFFLE(0, 3, 2, 1));                               \
        }                                                                                    \
        uint64_t w = (uint64_t)_mm_cvtsi128_si64(_mm_add_epi32(a, c0));                      \
        put_mask(mask, w);                                                                   \
    }

#define ROT_SHIFT(x, n) _mm_or_si128(_mm_slli_epi32(x, n), _mm_srli_epi32(x, 32 - (n)))
#define SSSE3_ROT16(x) \
    _mm_shuffle_epi8(x, _mm_set_epi8(13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, 3, 2))
#define SSSE3_ROT8(x) \
    _mm_shuffle_epi8(x, _mm_set_epi8(14, 13, 12, 15, 10, 9, 8, 11, 6, 5, 4, 7, 2, 1, 0, 3))
#define SSSE3_ROT12(x) ROT_SHIFT(x, 12)
#define SSSE3_ROT7(x) ROT_SHIFT(x, 7)
#define VL_ROT16(x) _mm_rol_epi32(x, 16)
#define VL_ROT12(x) _mm_rol_epi32(x, 12)
#define VL_ROT8(x) _mm_rol_epi32(x, 8)
#define VL_ROT7(x) _mm_rol_epi32(x, 7)

DEFINE_ROW_MASK(mask_ssse3, "ssse3", SSSE3_ROT16, SSSE3_ROT12, SSSE3_ROT8, SSSE3_ROT7)
DEFINE_ROW_MASK(mask_avx512vl, "avx512f,avx512vl", VL_ROT16, VL_ROT12, VL_ROT8, VL_ROT7)

typedef uint32_t qo_v16 __attribute__((vector_size(64)));
typedef uint32_t qo_v8 __attribute__((vector_size(32)));

/* AVX2 has no vector rotate (AVX-512 has vprold, which GCC finds in ROTL):
 * there a rotation by 16 or 8 is one byte shuffle instead of two shifts and
 * an or. */
#define V8_ROT16(v)                                                                             \
    ((qo_v8)_mm256_shuffle_epi8((__m256i)(v),                                                   \
                                _mm256_set_epi8(13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, 1, 0, \
                                                3, 2, 13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6, \
                                                1, 0, 3, 2)))
#define V8_ROT8(v)                                                                              \
    ((qo_v8)_mm256_shuffle_epi8((__m256i)(v),                                                   \
                                _mm256_set_epi8(14, 13, 12, 15, 10, 9, 8, 11, 6, 5, 4, 7, 2, 1, \
                                                0, 3, 14, 13, 12, 15, 10, 9, 8, 11, 6, 5, 4, 7, \
                                                2, 1, 0, 3)))
#define DOUBLE_ROUNDS_V8(x) DOUBLE_ROUNDS_ROT(x, V8_ROT16, ROTL12, V8_ROT8, ROTL7)

/*
 * LANES lanes: lane l < n computes the mask of samples[l] under keys[l];
 * lanes past n repeat lane 0 and are not written out.  The input is staged
 * transposed through a small array (one scalar store per word and lane,
 * then one vector load per word), which is cheaper than gathers.
 */
#define DEFINE_MASKS(name, V, LANES, isa, ROUNDS)                                             \
    __attribute__((target(isa))) static void name(const struct qo_chacha20_key *const keys[], \
                                                  const uint8_t *const samples[],             \
                                                  uint8_t(*masks)[5], unsigned n)             \
    {                                                                                         \
        uint32_t in[12][LANES] __attribute__((aligned(64)));                                  \
        uint32_t w0[LANES] __attribute__((aligned(64)));                                      \
        uint32_t w1[LANES] __attribute__((aligned(64)));                                      \
        V x[16];                                                                              \
                                                                                              \
        for (unsigned l = 0; l < LANES; l++) {                                                \
            unsigned s = l < n ? l : 0;                                                       \
            const uint32_t *k = keys[s]->k;                                                   \
            const uint8_t *p = samples[s];                                                    \
            for (int j = 0; j < 8; j++)                                                       \
                in[j][l] = k[j];                                                              \
            for (int j = 0; j < 4; j++)                                                       \
                in[8 + j][l] = qo_load_le32(p + 4 * j);                                       \
        }                                                                                     \
        x[0] = (V){0} + C0;                                                                   \
        x[1] = (V){0} + C1;                                                                   \
        x[2] = (V){0} + C2;                                                                   \
        x[3] = (V){0} + C3;                                                                   \
        for (int j = 0; j < 12; j++)                                                          \
            memcpy(&x[4 + j], in[j], sizeof(V));                                              \
        ROUNDS(x);                                                                            \
        x[0] += C0;                                                                           \
        x[1] += C1;                                                                           \
        memcpy(w0, &x[0], sizeof(V));                                                         \
        memcpy(w1, &x[1], sizeof(V));                                                         \
        for (unsigned l = 0; l < n; l++) {                                                    \
            put_mask(masks[l], (uint64_t)w1[l] << 32 | w0[l]);                                \
        }                                                                                     \
    }

DEFINE_MASKS(masks_x16_avx512, qo_v16, 16, "avx512f", DOUBLE_ROUNDS)
DEFINE_MASKS(masks_x8_avx2, qo_v8, 8, "avx2", DOUBLE_ROUNDS_V8)

/*
 * Block jobs, a pass of lanes at a time.  The rounds run transposed as above; then the
 * sixteen word vectors are transposed back into one block per lane (in
 * registers: 32-bit and 64-bit interleaves, then 128-bit lane shuffles), so
 * that a lane's block is XORed into its packet with whole-vector loads and
 * stores.  A partial block (the packet's last) or a copied one (the Poly1305
 * key) goes under AVX-512BW byte masks, or through j->block on AVX2.
 */
/* Where lane i of segment s goes: block 0 to the Poly1305 key (copied),
 * block c >= 1 XORed into bytes 64 (c - 1).. of the packet. */
static inline uint8_t *seg_target(const struct qo_chacha20_seg *s, uint32_t i, uint32_t *len,
                                  int *copy)
{
    uint32_t c = s->counter + i;
    if (c == 0) {
        *len = 32;
        *copy = 1;
        return s->otk;
    }
    size_t off = (size_t)(c - 1) * 64, left = s->len - off;
    *len = left < 64 ? (uint32_t)left : 64;
    *copy = 0;
    return s->data + off;
}

/* The first len bytes of j->block to (copy) or into out. */
static inline void block_out(const struct qo_chacha20_jobs *j, uint8_t *out, uint32_t len,
                             int copy)
{
    if (copy) {
        memcpy(out, j->block, len);
    } else {
        for (uint32_t i = 0; i < len; i++)
            out[i] ^= j->block[i];
    }
}

/*
 * AVX-512 inputs without a scalar store per word and lane: each segment's
 * key and nonce words are broadcast into its lanes under a mask, and its
 * counters are the first one + 0, 1, 2, ...  A pass holds one or two
 * 1,400-byte packets' segments, or eight 64-byte packets' (blocks 0 and 1).
 */
__attribute__((target("avx512f,avx512bw"))) static void jobs_x16_avx512(struct qo_chacha20_jobs *j)
{
    qo_v16 x[16];
    __m512i t[16], u[16], v, w, blk[16];
    __m512i iv[12];
    const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);

    for (int k = 0; k < 12; k++)
        iv[k] = _mm512_setzero_si512();
    for (unsigned g = 0; g < j->nseg; g++) {
        const struct qo_chacha20_seg *s = &j->seg[g];
        __mmask16 m = (__mmask16)(((1u << s->lanes) - 1) << s->first);
        for (int k = 0; k < 8; k++)
            iv[k] = _mm512_mask_set1_epi32(iv[k], m, (int)s->key->k[k]);
        iv[8] = _mm512_mask_add_epi32(iv[8], m, iota,
                                      _mm512_set1_epi32((int)(s->counter - s->first)));
        for (int k = 0; k < 3; k++)
            iv[9 + k] = _mm512_mask_set1_epi32(iv[9 + k], m, (int)qo_load_le32(s->nonce + 4 * k));
    }
    /* The inputs wait in j->in during the rounds: the 16 state vectors and
     * the rounds' temporaries need the registers. */
    for (int k = 0; k < 12; k++) {
        _mm512_store_si512((void *)j->in[k], iv[k]);
        x[4 + k] = (qo_v16)iv[k];
    }
    x[0] = (qo_v16){0} + C0;
    x[1] = (qo_v16){0} + C1;
    x[2] = (qo_v16){0} + C2;
    x[3] = (qo_v16){0} + C3;
    DOUBLE_ROUNDS(x);
    x[0] += C0;
    x[1] += C1;
    x[2] += C2;
    x[3] += C3;
    for (int k = 0; k < 12; k++)
        x[4 + k] += (qo_v16)_mm512_load_si512((const void *)j->in[k]);

    /* 16x16 transpose: afterwards u[4g + m] holds, in its 128-bit lane k,
     * words 4g..4g+3 of job 4k + m. */
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32((__m512i)x[2 * i], (__m512i)x[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32((__m512i)x[2 * i], (__m512i)x[2 * i + 1]);
    }
    for (int g = 0; g < 4; g++) {
        u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    for (int m = 0; m < 4; m++) {
        v = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x88);
        w = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x88);
        blk[m] = _mm512_shuffle_i32x4(v, w, 0x88);
        blk[8 + m] = _mm512_shuffle_i32x4(v, w, 0xdd);
        v = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xdd);
        w = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xdd);
        blk[4 + m] = _mm512_shuffle_i32x4(v, w, 0x88);
        blk[12 + m] = _mm512_shuffle_i32x4(v, w, 0xdd);
    }
    /* Byte masks for the partial blocks: no byte past len is read or written. */
    for (unsigned g = 0; g < j->nseg; g++) {
        const struct qo_chacha20_seg *s = &j->seg[g];
        for (uint32_t i = 0; i < s->lanes; i++) {
            uint32_t len;
            int copy;
            uint8_t *out = seg_target(s, i, &len, &copy);
            __mmask64 m = len >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << len) - 1;
            __m512i b = blk[s->first + i];
            if (copy) {
                _mm512_mask_storeu_epi8(out, m, b);
            } else {
                __m512i d = _mm512_maskz_loadu_epi8(m, out);
                _mm512_mask_storeu_epi8(out, m, _mm512_xor_si512(d, b));
            }
        }
    }
}

__attribute__((target("avx2"))) static void jobs_x8_avx2(struct qo_chacha20_jobs *j)
{
    qo_v8 x[16];
    __m256i t[8], u[8], lo[8], hi[8], iv[12];
    const __m256i iota = _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0);

    /* The inputs built in vectors, each segment's words blended into its
     * lanes (as the AVX-512 pass does with masks): staged through memory by
     * scalar stores, each vector load stalled on store forwarding, which was
     * ~30 % of the pass. */
    for (int k = 0; k < 12; k++)
        iv[k] = _mm256_setzero_si256();
    for (unsigned g = 0; g < j->nseg; g++) {
        const struct qo_chacha20_seg *s = &j->seg[g];
        __m256i m = _mm256_andnot_si256(
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)s->first), iota),
            _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(s->first + s->lanes)), iota));
        for (int k = 0; k < 8; k++)
            iv[k] = _mm256_blendv_epi8(iv[k], _mm256_set1_epi32((int)s->key->k[k]), m);
        iv[8] = _mm256_blendv_epi8(
            iv[8], _mm256_add_epi32(iota, _mm256_set1_epi32((int)(s->counter - s->first))), m);
        for (int k = 0; k < 3; k++)
            iv[9 + k] = _mm256_blendv_epi8(iv[9 + k],
                                           _mm256_set1_epi32((int)qo_load_le32(s->nonce + 4 * k)),
                                           m);
    }
    /* The inputs wait in j->in during the rounds, as in the AVX-512 pass. */
    for (int k = 0; k < 12; k++) {
        _mm256_store_si256((__m256i *)j->in[k], iv[k]);
        x[4 + k] = (qo_v8)iv[k];
    }
    x[0] = (qo_v8){0} + C0;
    x[1] = (qo_v8){0} + C1;
    x[2] = (qo_v8){0} + C2;
    x[3] = (qo_v8){0} + C3;
    DOUBLE_ROUNDS_V8(x);
    x[0] += C0;
    x[1] += C1;
    x[2] += C2;
    x[3] += C3;
    for (int k = 0; k < 12; k++)
        x[4 + k] += (qo_v8)_mm256_load_si256((const __m256i *)j->in[k]);

    /* Two 8x8 transposes (words 0-7, words 8-15): u[4g + m] holds, in its
     * 128-bit lane k, words 4g..4g+3 of the half's job 4k + m. */
    for (int half = 0; half < 2; half++) {
        const qo_v8 *r = x + 8 * half;
        __m256i *out = half == 0 ? lo : hi;
        for (int i = 0; i < 4; i++) {
            t[2 * i] = _mm256_unpacklo_epi32((__m256i)r[2 * i], (__m256i)r[2 * i + 1]);
            t[2 * i + 1] = _mm256_unpackhi_epi32((__m256i)r[2 * i], (__m256i)r[2 * i + 1]);
        }
        for (int g = 0; g < 2; g++) {
            u[4 * g] = _mm256_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
            u[4 * g + 1] = _mm256_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
            u[4 * g + 2] = _mm256_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
            u[4 * g + 3] = _mm256_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
        }
        for (int m = 0; m < 4; m++) {
            out[m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x20);
            out[4 + m] = _mm256_permute2x128_si256(u[m], u[4 + m], 0x31);
        }
    }
    for (unsigned g = 0; g < j->nseg; g++) {
        const struct qo_chacha20_seg *s = &j->seg[g];
        for (uint32_t i = 0; i < s->lanes; i++) {
            unsigned l = s->first + i;
            uint32_t len;
            int copy;
            uint8_t *out = seg_target(s, i, &len, &copy);
            if (len == 64 && !copy) {
                __m256i d0 = _mm256_loadu_si256((const __m256i *)out);
                __m256i d1 = _mm256_loadu_si256((const __m256i *)(out + 32));
                _mm256_storeu_si256((__m256i *)out, _mm256_xor_si256(d0, lo[l]));
                _mm256_storeu_si256((__m256i *)(out + 32), _mm256_xor_si256(d1, hi[l]));
            } else {
                _mm256_store_si256((__m256i *)j->block, lo[l]);
                _mm256_store_si256((__m256i *)(j->block + 32), hi[l]);
                block_out(j, out, len, copy);
            }
        }
    }
}

/* IMPL_AVX512: AVX-512F + VL + BW (16 lanes, vprold, byte masks); IMPL_AVX2: AVX2 (8 lanes)
 * and SSSE3 for one block; IMPL_C: portable code only. */
enum { IMPL_UNKNOWN, IMPL_C, IMPL_AVX2, IMPL_AVX512 };
static _Atomic int impl;

static int cpu_has(int i)
{
    __builtin_cpu_init();
    switch (i) {
    case IMPL_AVX512:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512bw");
    case IMPL_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("ssse3");
    default:
        return i == IMPL_C;
    }
}

static int get_impl(void)
{
    int i = atomic_load_explicit(&impl, memory_order_relaxed);
    if (i == IMPL_UNKNOWN) {
        i = cpu_has(IMPL_AVX512) ? IMPL_AVX512 : cpu_has(IMPL_AVX2) ? IMPL_AVX2 : IMPL_C;
        atomic_store_explicit(&impl, i, memory_order_relaxed);
    }
    return i;
}
#endif

void qo_chacha20_hp_mask(const struct qo_chacha20_key *key, const uint8_t sample[16],
                         uint8_t mask[5])
{
#ifdef QO_CHACHA_SIMD
    switch (get_impl()) {
    case IMPL_AVX512:
        mask_avx512vl(key, sample, mask);
        return;
    case IMPL_AVX2:
        mask_ssse3(key, sample, mask);
        return;
    default:
        break;
    }
#endif
    mask_c(key, sample, mask);
}

void qo_chacha20_hp_masks(const struct qo_chacha20_key *const keys[],
                          const uint8_t *const samples[], uint8_t (*masks)[5], unsigned n)
{
    unsigned i = 0;
#ifdef QO_CHACHA_SIMD
    /* A pass costs about as much as two scalar blocks (both are bound by the
     * 20-round dependency chain), so the last one or two masks go scalar. */
    switch (get_impl()) {
    case IMPL_AVX512:
        while (n - i >= 3) {
            unsigned m = n - i < 16 ? n - i : 16;
            masks_x16_avx512(keys + i, samples + i, masks + i, m);
            i += m;
        }
        break;
    case IMPL_AVX2:
        while (n - i >= 3) {
            unsigned m = n - i < 8 ? n - i : 8;
            masks_x8_avx2(keys + i, samples + i, masks + i, m);
            i += m;
        }
        break;
    default:
        break;
    }
#endif
    for (; i < n; i++)
        qo_chacha20_hp_mask(keys[i], samples[i], masks[i]);
}

int qo_chacha20_hp_masks_use(const char *name)
{
#ifdef QO_CHACHA_SIMD
    int want = strcmp(name, "avx512") == 0 ? IMPL_AVX512
               : strcmp(name, "avx2") == 0 ? IMPL_AVX2
               : strcmp(name, "c") == 0    ? IMPL_C
                                           : IMPL_UNKNOWN;
    if (want == IMPL_UNKNOWN || !cpu_has(want))
        return -1;
    atomic_store_explicit(&impl, want, memory_order_relaxed);
    return 0;
#else
    return strcmp(name, "c") == 0 ? 0 : -1;
#endif
}

const char *qo_chacha20_hp_masks_impl(void)
{
#ifdef QO_CHACHA_SIMD
    switch (get_impl()) {
    case IMPL_AVX512:
        return "avx512";
    case IMPL_AVX2:
        return "avx2";
    default:
        break;
    }
#endif
    return "c";
}

/* ------------------------------------------------------------------------ */
/* Block jobs: the dispatch, and the portable version                         */

static void jobs_c(struct qo_chacha20_jobs *j)
{
    for (unsigned g = 0; g < j->nseg; g++) {
        const struct qo_chacha20_seg *s = &j->seg[g];
        for (uint32_t i = 0; i < s->lanes; i++) {
            uint32_t len;
            int copy;
            uint8_t *out = seg_target(s, i, &len, &copy);
            qo_chacha20_block(s->key, s->counter + i, s->nonce, j->block);
            block_out(j, out, len, copy);
        }
    }
}

unsigned qo_chacha20_lanes(void)
{
#ifdef QO_CHACHA_SIMD
    int i = get_impl();
    return i == IMPL_AVX512 ? 16 : i == IMPL_AVX2 ? 8 : 1;
#else
    return 1;
#endif
}

void qo_chacha20_jobs_start(struct qo_chacha20_jobs *j)
{
    j->n = 0;
    j->nseg = 0;
    /* Lanes past the last job of a pass compute on whatever is staged:
     * defined bytes, and never written anywhere. */
    memset(j->in, 0, sizeof(j->in));
#ifdef QO_CHACHA_SIMD
    j->impl = get_impl();
    j->lanes = j->impl == IMPL_AVX512 ? 16 : j->impl == IMPL_AVX2 ? 8 : 1;
#else
    j->impl = 0;
    j->lanes = 1;
#endif
}

void qo_chacha20_jobs_run(struct qo_chacha20_jobs *j)
{
    if (j->n == 0)
        return;
#ifdef QO_CHACHA_SIMD
    switch (j->impl) {
    case IMPL_AVX512:
        jobs_x16_avx512(j);
        break;
    case IMPL_AVX2:
        jobs_x8_avx2(j);
        break;
    default:
        jobs_c(j);
        break;
    }
#else
    jobs_c(j);
#endif
    j->n = 0;
    j->nseg = 0;
}

void qo_chacha20_jobs_add(struct qo_chacha20_jobs *j, const struct qo_chacha20_key *key,
                          const uint8_t *nonce, uint8_t *otk, uint8_t *data, size_t len)
{
    uint32_t c = otk != NULL ? 0 : 1, end = 1 + (uint32_t)((len + 63) / 64);

    while (c < end) {
        uint32_t room = j->lanes - j->n, take = end - c < room ? end - c : room;
        struct qo_chacha20_seg *s = &j->seg[j->nseg++];
        s->key = key;
        s->nonce = nonce;
        s->otk = otk;
        s->data = data;
        s->len = len;
        s->counter = c;
        s->first = j->n;
        s->lanes = take;
        j->n += take;
        c += take;
        if (j->n == j->lanes)
            qo_chacha20_jobs_run(j);
    }
}

void qo_chacha20_jobs_finish(struct qo_chacha20_jobs *j)
{
    qo_chacha20_jobs_run(j);
    qo_secure_zero(j, sizeof(*j));
}
