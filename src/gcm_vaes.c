/* SPDX-License-Identifier: Apache-2.0 */
/*
 * AES-128/256-GCM on AVX-512 with VAES and VPCLMULQDQ (x86-64).
 *
 * The ipsec-mb backend uses these descriptors for GCM instead of ipsec-mb's
 * direct API when the CPU has the extensions (qo_gcm_vaes_available(); see
 * qo_backend_ipsecmb_vaes).  Every function that uses them carries QO_VAES
 * (a target attribute): the rest of the library is compiled for the
 * baseline ISA, and nothing here runs before the run-time check has passed.
 *
 * Why our own GCM: QUIC packets are short.  At 64 bytes ipsec-mb's call
 * costs ~45 ns alone, mostly fixed cost and the serial AES -> GHASH ->
 * reduction chain of one packet.  Here a 64-byte packet is ~100
 * instructions without per-call setup (~11 ns in a burst, docs/benchmarks.md),
 * and seal_burst/open_burst run the packets of a chunk back to back in one
 * loop, so the out-of-order core overlaps one packet's chain with the
 * next packet's work.  (Batching the tag-mask AES of four packets into one
 * zmm was tried and was slower: the per-packet code is not AES-bound.)
 * It also drops ipsec-mb 1.3's store to a process-global errno on every
 * call (the multi-core scaling problem in docs/benchmarks.md) and shrinks
 * the context to 576 bytes (ipsec-mb's: 1008).
 *
 * The layout of one packet's work:
 *
 *  - Counter blocks four to a zmm, one VAESENC per round for four blocks;
 *    counters stay big-endian and step by one VPADDD while the low byte
 *    does not wrap.  E(J0), which masks the tag, rides in lane 3 of the
 *    packet's last data zmm when that lane carries no data (payloads that
 *    are not a multiple of 64 bytes in the last window), else it is one
 *    extra block.
 *  - GHASH without the per-block Horner chain: a window of blocks is
 *    multiplied block by block by H^w..H^1 (precomputed per key), the
 *    products are summed unreduced and reduced once per window.  A packet
 *    with at most 4 blocks of AAD and AAD + data + length block <= 17
 *    blocks (~200-byte payloads with QUIC headers) is one window: one
 *    reduction, no serial GHASH chain at all.  Longer payloads go in full
 *    windows of 16 blocks, software-pipelined: window i's AES rounds are
 *    interleaved with window i - 1's multiplies (~8 % faster at 1400 bytes
 *    than leaving the overlap to the out-of-order core).
 *  - Partial blocks and short AADs use byte-masked loads and stores: no
 *    stack bounce, no byte loops, no access past the end of a buffer.
 *  - Open decrypts in place while it hashes the ciphertext and, on a tag
 *    mismatch, XORs the same keystream again, so the data is as received
 *    (crypto.h's contract); only forged packets pay that second pass.
 *
 * GHASH arithmetic: the byte-reflected form (each block byte-swapped; the
 * powers of H stored as H^k * x^-1 so a product needs no 1-bit shift),
 * schoolbook 4-multiply products, and the Montgomery-style reduction of
 * Linux's aes-gcm-avx10 (two multiplies by x^63 + x^62 + x^57 and two half
 * swaps), lane by lane before the four lanes are added.  Tests:
 * tests/c/test_gcm_burst.c (against OpenSSL EVP), test_backends.c.
 */
#include "crypto.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include "cpu_x86.h"
#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define QO_VAES                                                                              \
    __attribute__((target("aes,pclmul,ssse3,sse4.1,avx,avx2,bmi2,avx512f,avx512bw,avx512vl," \
                          "avx512dq,vaes,vpclmulqdq")))
#define QO_VAES_INLINE QO_VAES __attribute__((always_inline)) static inline

/* Blocks of a full GHASH window: one reduction per window. */
#define WINDOW 16
/* Powers of H kept: a packet's last window holds up to 16 data blocks and
 * the length block. */
#define NPOW (WINDOW + 1)

struct gcm_vaes_key {
    __m128i rk[15]; /* encryption round keys rk[0..nr] */
    uint32_t nr;    /* 10 (AES-128) or 14 (AES-256) */
    /*
     * hpow[NPOW - k] = H^k * x^-1 mod P, k = 1..17, byte-reflected (the
     * form the multiply below takes): a 4-lane load at hpow + i gives the
     * powers of four consecutive blocks, highest first.  hpow[NPOW..+2] are
     * zero: lanes past the end of a window (zero blocks) load zero powers
     * instead of reading past the table.
     */
    _Alignas(64) __m128i hpow[NPOW + 3];
};

/* GCM's limit (SP 800-38D): < 2^36 - 32 bytes of plaintext. */
#define GCM_MAX_LEN ((UINT64_C(1) << 36) - 32)

/* ------------------------------------------------------------------------ */
/* Constants and masks                                                       */

/* Byte order of each 128-bit lane reversed: GHASH's reflected form. */
QO_VAES_INLINE __m512i bswap_mask(void)
{
    return _mm512_broadcast_i32x4(
        _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
}

/* x^-1 in the reflected form: the reduction's constant (bits 57, 62 and 63
 * of the high half: x^121 + x^126 + x^127 of P, shifted down by 64). */
QO_VAES_INLINE __m512i gfpoly(void)
{
    return _mm512_broadcast_i32x4(_mm_set_epi64x((long long)0xC200000000000000ull, 1));
}

/*
 * tail_masks[r]: the low r bits set, r = 0..64.  Byte masks for loads and
 * stores come from here with one kmov from memory: computing them (bzhi +
 * kmov from a register) puts a uop on port 5, which VPCLMULQDQ and VPSHUFB
 * already saturate.
 */
#define TM(r) ((r) >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << ((r)&63)) - 1)
#define TM8(r) TM(r), TM(r + 1), TM(r + 2), TM(r + 3), TM(r + 4), TM(r + 5), TM(r + 6), TM(r + 7)
static const __mmask64 tail_masks[65] = {TM8(0),  TM8(8),  TM8(16), TM8(24), TM8(32),
                                         TM8(40), TM8(48), TM8(56), TM(64)};
#undef TM8
#undef TM

/* The bytes of a buffer of len bytes that lie in [from, from + 64). */
QO_VAES_INLINE __mmask64 span_mask(size_t len, size_t from)
{
    size_t r = len > from ? len - from : 0;
    return _load_mask64((__mmask64 *)&tail_masks[r < 64 ? r : 64]);
}

/* Lane i of a zmm, as a dword mask. */
QO_VAES_INLINE __mmask16 lane_mask(unsigned i)
{
    return (__mmask16)(0xfu << (4 * i));
}

/* ------------------------------------------------------------------------ */
/* Counter blocks                                                            */

/*
 * A zmm of counter blocks: nonce || 32-bit counter, big-endian, one per
 * lane, for counters c .. c + 3.  nb: the nonce in every lane, bytes
 * 12..15 zero.  Built from scratch with a shuffle; the next four are one
 * VPADDD on the big-endian bytes (ctr_next), valid while the counter's low
 * byte does not wrap, which for packets under ~4 KB is always.
 */
QO_VAES_INLINE __m512i ctr_build(__m512i nb, uint32_t c)
{
    const __m512i swap = _mm512_broadcast_i32x4(
        _mm_set_epi8(12, 13, 14, 15, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0));
    __m512i le = _mm512_add_epi32(_mm512_set1_epi32((int)c),
                                  _mm512_set_epi32(3, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0,
                                                   0));
    le = _mm512_maskz_mov_epi32(0x8888, le);
    return _mm512_or_si512(nb, _mm512_shuffle_epi8(le, swap));
}

/* ctr holds c - 4 .. c - 1: the blocks for c .. c + 3. */
QO_VAES_INLINE __m512i ctr_next(__m512i ctr, __m512i nb, uint32_t c)
{
    const __m512i four = _mm512_set_epi32(4 << 24, 0, 0, 0, 4 << 24, 0, 0, 0, 4 << 24, 0, 0, 0,
                                          4 << 24, 0, 0, 0);
    uint32_t low = c & 0xff;
    if (__builtin_expect(low >= 4 && low <= 252, 1))
        return _mm512_add_epi32(ctr, four);
    return ctr_build(nb, c);
}

/* J0 (nonce || 1) put into lane 3 of a zmm of counter blocks. */
QO_VAES_INLINE __m512i with_j0(__m512i ctr)
{
    return _mm512_mask_mov_epi32(ctr, 0x8000, _mm512_set1_epi32(1 << 24));
}

/* ------------------------------------------------------------------------ */
/* AES                                                                       */

QO_VAES_INLINE __m128i expand_step(__m128i k, __m128i t)
{
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    k = _mm_xor_si128(k, _mm_slli_si128(k, 4));
    return _mm_xor_si128(k, t);
}

#define EXPAND128(i, rcon)         \
    rk[i] = expand_step(rk[(i)-1], \
                        _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i)-1], rcon), 0xff))

QO_VAES static void expand_key128(__m128i rk[11], const uint8_t *key)
{
    rk[0] = _mm_loadu_si128((const __m128i *)key);
    EXPAND128(1, 0x01);
    EXPAND128(2, 0x02);
    EXPAND128(3, 0x04);
    EXPAND128(4, 0x08);
    EXPAND128(5, 0x10);
    EXPAND128(6, 0x20);
    EXPAND128(7, 0x40);
    EXPAND128(8, 0x80);
    EXPAND128(9, 0x1b);
    EXPAND128(10, 0x36);
}

/* AES-256: even round keys from the previous even one (RotWord/SubWord/
 * rcon of the last odd one), odd ones from the previous odd one (SubWord
 * of the last even one). */
#define EXPAND256(i, rcon)                                                                        \
    do {                                                                                          \
        rk[i] = expand_step(rk[(i)-2],                                                            \
                            _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[(i)-1], rcon), 0xff)); \
        if ((i) + 1 < 15)                                                                         \
            rk[(i) + 1] = expand_step(rk[(i)-1],                                                  \
                                      _mm_shuffle_epi32(_mm_aeskeygenassist_si128(rk[i], 0),      \
                                                        0xaa));                                   \
    } while (0)

QO_VAES static void expand_key256(__m128i rk[15], const uint8_t *key)
{
    rk[0] = _mm_loadu_si128((const __m128i *)key);
    rk[1] = _mm_loadu_si128((const __m128i *)(key + 16));
    EXPAND256(2, 0x01);
    EXPAND256(4, 0x02);
    EXPAND256(6, 0x04);
    EXPAND256(8, 0x08);
    EXPAND256(10, 0x10);
    EXPAND256(12, 0x20);
    EXPAND256(14, 0x40);
}

/* The round keys, each in the four lanes of a zmm. */
QO_VAES_INLINE void load_round_keys(const struct gcm_vaes_key *k, int nr, __m512i rkz[15])
{
    for (int r = 0; r <= nr; r++)
        rkz[r] = _mm512_broadcast_i32x4(_mm_load_si128(&k->rk[r]));
}

/* Four blocks, one per lane.  nr is a constant where this is inlined, so
 * the loop unrolls. */
QO_VAES_INLINE __m512i aes4(__m512i x, const __m512i *rkz, int nr)
{
    x = _mm512_xor_si512(x, rkz[0]);
#pragma GCC unroll 14
    for (int r = 1; r < nr; r++)
        x = _mm512_aesenc_epi128(x, rkz[r]);
    return _mm512_aesenclast_epi128(x, rkz[nr]);
}

/* One block (lane 0 of the keys).  With 512-bit code in flight AESENC runs
 * on one port whatever the width, so this costs as much as aes4. */
QO_VAES_INLINE __m128i aes1(__m128i x, const __m512i *rkz, int nr)
{
    x = _mm_xor_si128(x, _mm512_castsi512_si128(rkz[0]));
#pragma GCC unroll 14
    for (int r = 1; r < nr; r++)
        x = _mm_aesenc_si128(x, _mm512_castsi512_si128(rkz[r]));
    return _mm_aesenclast_si128(x, _mm512_castsi512_si128(rkz[nr]));
}

/* ------------------------------------------------------------------------ */
/* GHASH                                                                     */

/* Unreduced sum of products, per lane: low, middle and high 128 bits of
 * the 256-bit carry-less products (middle at bit 64). */
struct ghash_acc {
    __m512i lo, mid, hi;
};

QO_VAES_INLINE void acc_init(struct ghash_acc *a)
{
    a->lo = a->mid = a->hi = _mm512_setzero_si512();
}

/* a += x * h, lane by lane (schoolbook: 4 carry-less multiplies; Karatsuba
 * would trade one for a shuffle on the same port). */
QO_VAES_INLINE void acc_mul(struct ghash_acc *a, __m512i x, __m512i h)
{
    a->lo = _mm512_xor_si512(a->lo, _mm512_clmulepi64_epi128(x, h, 0x00));
    a->hi = _mm512_xor_si512(a->hi, _mm512_clmulepi64_epi128(x, h, 0x11));
    a->mid = _mm512_ternarylogic_epi64(a->mid, _mm512_clmulepi64_epi128(x, h, 0x01),
                                       _mm512_clmulepi64_epi128(x, h, 0x10), 0x96);
}

/* a += x[0] * h[0] + ... + x[3] * h[3]: the sums as three-way XORs, a third
 * fewer than four acc_mul. */
QO_VAES_INLINE void acc_mul4(struct ghash_acc *a, const __m512i x[4], const __m512i h[4])
{
    __m512i l[4], m[8], u[4];
    for (int i = 0; i < 4; i++) {
        l[i] = _mm512_clmulepi64_epi128(x[i], h[i], 0x00);
        u[i] = _mm512_clmulepi64_epi128(x[i], h[i], 0x11);
        m[2 * i] = _mm512_clmulepi64_epi128(x[i], h[i], 0x01);
        m[2 * i + 1] = _mm512_clmulepi64_epi128(x[i], h[i], 0x10);
    }
    a->lo = _mm512_ternarylogic_epi64(a->lo, _mm512_ternarylogic_epi64(l[0], l[1], l[2], 0x96),
                                      l[3], 0x96);
    a->hi = _mm512_ternarylogic_epi64(a->hi, _mm512_ternarylogic_epi64(u[0], u[1], u[2], 0x96),
                                      u[3], 0x96);
    __m512i t = _mm512_ternarylogic_epi64(m[0], m[1], m[2], 0x96);
    t = _mm512_ternarylogic_epi64(t, m[3], m[4], 0x96);
    t = _mm512_ternarylogic_epi64(t, m[5], m[6], 0x96);
    a->mid = _mm512_ternarylogic_epi64(a->mid, t, m[7], 0x96);
}

/*
 * The sum, reduced: the new GHASH state.  Montgomery-style reduction (as
 * in Linux's aes-gcm-avx10): the low 64 bits are cancelled into the middle
 * and the middle's low 64 bits into the high half, each with one multiply
 * by the constant and a half swap; the result is the product times x^-128
 * in the bit-reversed domain, which the x^-1 in the stored powers turns
 * into the plain product.  Reduction is linear, so the four lanes are
 * reduced side by side and added after.
 */
QO_VAES_INLINE __m128i acc_finish(const struct ghash_acc *a)
{
    const __m512i p = gfpoly();
    __m512i t = _mm512_clmulepi64_epi128(p, a->lo, 0x01);
    __m512i mid = _mm512_ternarylogic_epi64(a->mid, t, _mm512_shuffle_epi32(a->lo, 0x4e), 0x96);
    t = _mm512_clmulepi64_epi128(p, mid, 0x01);
    __m512i r = _mm512_ternarylogic_epi64(a->hi, t, _mm512_shuffle_epi32(mid, 0x4e), 0x96);
    __m256i y = _mm256_xor_si256(_mm512_castsi512_si256(r), _mm512_extracti64x4_epi64(r, 1));
    return _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

/* a * b for setup: b in the stored form (times x^-1), a and the result not. */
QO_VAES static __m128i gf_mul(__m128i a, __m128i b)
{
    struct ghash_acc acc;
    acc_init(&acc);
    acc_mul(&acc, _mm512_zextsi128_si512(a), _mm512_zextsi128_si512(b));
    return acc_finish(&acc);
}

/* Four powers for blocks at window positions counted from the end: the
 * first lane's block is the from_end-th last of its window (1 = last). */
QO_VAES_INLINE __m512i powers(const struct gcm_vaes_key *k, size_t from_end)
{
    return _mm512_loadu_si512(&k->hpow[NPOW - from_end]);
}

/*
 * GHASH state after the blocks of p[0..n), zero-padded to a block, starting
 * from state s.  Windows of 16 blocks; used for the AAD when it does not go
 * into the packet's last window (long AAD or long payload).
 */
QO_VAES static __m128i ghash_bytes(const struct gcm_vaes_key *k, __m128i s, const uint8_t *p,
                                   size_t n)
{
    const __m512i bswap = bswap_mask();
    while (n > 0) {
        size_t bytes = n < 16 * WINDOW ? n : 16 * WINDOW, blocks = (bytes + 15) / 16;
        struct ghash_acc acc;
        acc_init(&acc);
        for (size_t j = 0; j < blocks; j += 4) {
            __m512i x = _mm512_maskz_loadu_epi8(span_mask(bytes, 16 * j), p + 16 * j);
            x = _mm512_shuffle_epi8(x, bswap);
            if (j == 0)
                x = _mm512_xor_si512(x, _mm512_zextsi128_si512(s));
            acc_mul(&acc, x, powers(k, blocks - j));
        }
        s = acc_finish(&acc);
        p += bytes;
        n -= bytes;
    }
    return s;
}

/* ------------------------------------------------------------------------ */
/* Setup                                                                     */

/* h * x^-1 mod P in the reflected form: shift left by one bit, and fold the
 * bit shifted out back in as x^-1 = x^127 + x^126 + x^121 + 1. */
QO_VAES static __m128i mul_xinv(__m128i h)
{
    uint64_t lo = (uint64_t)_mm_cvtsi128_si64(h), hi = (uint64_t)_mm_extract_epi64(h, 1);
    uint64_t carry = hi >> 63;
    hi = hi << 1 | lo >> 63;
    lo <<= 1;
    lo ^= carry;
    hi ^= (0 - carry) & 0xC200000000000000ull;
    return _mm_set_epi64x((long long)hi, (long long)lo);
}

QO_VAES static int gcm_setup(void *ctx, const uint8_t *key, int key_len)
{
    struct gcm_vaes_key *k = ctx;
    __m128i h;

    if (((uintptr_t)ctx & 63) != 0)
        return -1;
    memset(k, 0, sizeof(*k));
    if (key_len == 16) {
        expand_key128(k->rk, key);
        k->nr = 10;
    } else {
        expand_key256(k->rk, key);
        k->nr = 14;
    }
    /* H = E(K, 0^128) */
    h = k->rk[0];
    for (uint32_t r = 1; r < k->nr; r++)
        h = _mm_aesenc_si128(h, k->rk[r]);
    h = _mm_aesenclast_si128(h, k->rk[k->nr]);
    h = mul_xinv(_mm_shuffle_epi8(h, _mm512_castsi512_si128(bswap_mask())));
    k->hpow[NPOW - 1] = h;
    for (int i = 2; i <= NPOW; i++)
        k->hpow[NPOW - i] = gf_mul(k->hpow[NPOW - i + 1], h);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Key schedules computed per burst, four keys per zmm lane                  */

/*
 * For tables too big for the cache, reading a packet's key schedules costs
 * more lines than computing them (docs/benchmarks.md, "Key schedules
 * computed per burst"), so expand (the descriptor's) builds the contexts of
 * a burst's keys from the raw keys, into scratch contexts.
 *
 * The aeskeygenassist-free expansion: VPSHUFB puts RotWord of each lane's
 * last word (rot = 1) or the word itself (rot = 0) into all four dwords of
 * the lane; with equal columns ShiftRows is the identity, so VAESENCLAST
 * with rcon in every dword as the round key gives SubWord(...) ^ rcon per
 * lane.  Each lane is one key, and the up to eight zmm of a 32-key pass are
 * expanded round by round together, so that their dependency chains (each
 * round waits for the one before) overlap instead of running one after
 * the other.
 */
#define XKEYS 32
#define XGROUPS (XKEYS / 4)

QO_VAES_INLINE __m512i subword_lanes(__m512i k, int rot, uint32_t rcon)
{
    const __m512i rotl = _mm512_broadcast_i32x4(
        _mm_set_epi8(12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13));
    const __m512i last = _mm512_broadcast_i32x4(
        _mm_set_epi8(15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12, 15, 14, 13, 12));
    __m512i t = _mm512_shuffle_epi8(k, rot ? rotl : last);
    return _mm512_aesenclast_epi128(t, _mm512_set1_epi32((int)rcon));
}

/* w ^ (w << 32) ^ (w << 64) ^ (w << 96) ^ t, per lane: the next four words. */
QO_VAES_INLINE __m512i expand_step_lanes(__m512i k, __m512i t)
{
    k = _mm512_xor_si512(k, _mm512_bslli_epi128(k, 4));
    return _mm512_ternarylogic_epi64(k, _mm512_bslli_epi128(k, 8), t, 0x96);
}

/* Lane i of v to dst[i] + off, for the lanes that carry one of the n - base
 * keys left (base < n). */
QO_VAES_INLINE void store_lanes(void *const dst[], unsigned base, unsigned n, size_t off,
                                __m512i v)
{
    _mm_store_si128((__m128i *)((uint8_t *)dst[base] + off), _mm512_castsi512_si128(v));
    if (base + 1 < n)
        _mm_store_si128((__m128i *)((uint8_t *)dst[base + 1] + off),
                        _mm512_extracti32x4_epi32(v, 1));
    if (base + 2 < n)
        _mm_store_si128((__m128i *)((uint8_t *)dst[base + 2] + off),
                        _mm512_extracti32x4_epi32(v, 2));
    if (base + 3 < n)
        _mm_store_si128((__m128i *)((uint8_t *)dst[base + 3] + off),
                        _mm512_extracti32x4_epi32(v, 3));
}

/* 16 bytes at key + off of keys base .. base + 3 (those below n), one per
 * lane; a lane with no key gets zeros (its schedule is never stored). */
QO_VAES_INLINE __m512i load_lanes(const uint8_t *const key[], unsigned base, unsigned n,
                                  size_t off)
{
    __m512i k = _mm512_setzero_si512();
    for (unsigned i = 0; i < 4 && base + i < n; i++)
        k = _mm512_mask_broadcast_i32x4(k, lane_mask(i),
                                        _mm_loadu_si128((const __m128i *)(key[base + i] + off)));
    return k;
}

/*
 * The round keys rk[0..nr] of key[0..n) (n <= XKEYS) into dst[i] (16 bytes
 * apart, from its start: the first member of both the GCM context and the
 * AES header-protection context), and with want_h, H = E(K, 0^128) of each
 * key in h[group] lanes, encrypted round by round as the keys appear.
 */
QO_VAES_INLINE void schedules(void *const dst[], const uint8_t *const key[], unsigned n, int nr,
                              int want_h, __m512i h[XGROUPS])
{
    static const uint8_t rcon[10] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1b, 0x36};
    unsigned groups = (n + 3) / 4;
    __m512i a[XGROUPS], b[XGROUPS]; /* rk[r - 1] (AES-128); rk[r - 2], rk[r - 1] (AES-256) */
    for (unsigned g = 0; g < groups; g++) {
        a[g] = load_lanes(key, 4 * g, n, 0);
        store_lanes(dst, 4 * g, n, 0, a[g]);
        if (want_h)
            h[g] = a[g];
        if (nr == 14) {
            b[g] = load_lanes(key, 4 * g, n, 16);
            store_lanes(dst, 4 * g, n, 16, b[g]);
            if (want_h)
                h[g] = _mm512_aesenc_epi128(h[g], b[g]);
        }
    }
#pragma GCC unroll 14
    for (int r = nr == 10 ? 1 : 2; r <= nr; r++) {
        for (unsigned g = 0; g < groups; g++) {
            __m512i k;
            if (nr == 10) {
                k = a[g] = expand_step_lanes(a[g], subword_lanes(a[g], 1, rcon[r - 1]));
            } else {
                __m512i t = (r & 1) ? subword_lanes(b[g], 0, 0)
                                    : subword_lanes(b[g], 1, rcon[r / 2 - 1]);
                k = expand_step_lanes(a[g], t);
                a[g] = b[g];
                b[g] = k;
            }
            store_lanes(dst, 4 * g, n, 16 * (size_t)r, k);
            if (want_h)
                h[g] = r < nr ? _mm512_aesenc_epi128(h[g], k) : _mm512_aesenclast_epi128(h[g], k);
        }
    }
    qo_secure_zero(a, sizeof(a)); /* round keys: wiped from this frame as well */
    qo_secure_zero(b, sizeof(b));
}

/* a * b lane by lane, both in the stored form (times x^-1), as gf_mul. */
QO_VAES_INLINE __m512i gf_mul_lanes(__m512i a, __m512i b)
{
    const __m512i p = gfpoly();
    __m512i lo = _mm512_clmulepi64_epi128(a, b, 0x00), hi = _mm512_clmulepi64_epi128(a, b, 0x11);
    __m512i mid = _mm512_xor_si512(_mm512_clmulepi64_epi128(a, b, 0x01),
                                   _mm512_clmulepi64_epi128(a, b, 0x10));
    __m512i t = _mm512_clmulepi64_epi128(p, lo, 0x01);
    mid = _mm512_ternarylogic_epi64(mid, t, _mm512_shuffle_epi32(lo, 0x4e), 0x96);
    t = _mm512_clmulepi64_epi128(p, mid, 0x01);
    return _mm512_ternarylogic_epi64(hi, t, _mm512_shuffle_epi32(mid, 0x4e), 0x96);
}

/* mul_xinv lane by lane. */
QO_VAES_INLINE __m512i mul_xinv_lanes(__m512i h)
{
    const __m512i poly_hi = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)0xC200000000000000ull, 0));
    __m512i carries = _mm512_shuffle_epi32(_mm512_srli_epi64(h, 63), 0x4e);
    __m512i top = _mm512_shuffle_epi32(_mm512_srai_epi64(h, 63), 0xee);
    return _mm512_ternarylogic_epi64(_mm512_or_si512(_mm512_slli_epi64(h, 1), carries), top,
                                     poly_hi, 0x78); /* a ^ (b & c) */
}

/* Powers of H a packet reads (gcm_crypt): one window holds the AAD, the data
 * and the length block when the AAD has at most 4 blocks and the three at
 * most NPOW; otherwise every power.  The 4-lane loads of gcm_crypt then
 * read no power above these (lanes past a window's end read the zeros
 * after hpow[NPOW - 1], which expand never writes). */
static unsigned powers_needed(size_t aad_len, size_t len)
{
    size_t blocks = (len + 15) / 16, aad_blocks = (aad_len + 15) / 16;
    if (aad_len <= 64 && aad_blocks + blocks + 1 <= NPOW)
        return (unsigned)(aad_blocks + blocks + 1);
    return NPOW;
}

QO_VAES_INLINE void gcm_expand(void *const ctx[], const uint8_t *const key[], unsigned n,
                               size_t aad_len, size_t len, int nr)
{
    unsigned np = powers_needed(aad_len, len);
    for (unsigned base = 0; base < n; base += XKEYS) {
        unsigned m = n - base < XKEYS ? n - base : XKEYS;
        __m512i h[XGROUPS];
        schedules(ctx + base, key + base, m, nr, 1, h);
        for (unsigned i = 0; i < m; i++)
            ((struct gcm_vaes_key *)ctx[base + i])->nr = (uint32_t)nr;
        /* H^p = H^top * H^(p - top), top the largest power of two below p:
         * depth log2(np), not np; power by power over all groups, whose
         * chains are independent, so the multiplies overlap */
        unsigned groups = (m + 3) / 4;
        __m512i pw[NPOW + 1][XGROUPS];
        for (unsigned g = 0; g < groups; g++) {
            pw[1][g] = mul_xinv_lanes(_mm512_shuffle_epi8(h[g], bswap_mask()));
            store_lanes(ctx + base, 4 * g, m, offsetof(struct gcm_vaes_key, hpow[NPOW - 1]),
                        pw[1][g]);
        }
        for (unsigned p = 2, top = 1; p <= np; p++) {
            if (p > 2 * top)
                top *= 2;
            for (unsigned g = 0; g < groups; g++) {
                pw[p][g] = gf_mul_lanes(pw[top][g], pw[p - top][g]);
                store_lanes(ctx + base, 4 * g, m,
                            offsetof(struct gcm_vaes_key, hpow) + 16 * (size_t)(NPOW - p),
                            pw[p][g]);
            }
        }
        /* H and its powers are key material: the copies on this frame go
         * (the contexts keep theirs until the worker wipes its scratch) */
        qo_secure_zero(pw, sizeof(pw[0]) * (np + 1));
        qo_secure_zero(h, sizeof(h));
    }
}

QO_VAES static void gcm128_expand(void *const ctx[], const uint8_t *const key[], unsigned n,
                                  size_t aad_len, size_t len)
{
    gcm_expand(ctx, key, n, aad_len, len, 10);
}

QO_VAES static void gcm256_expand(void *const ctx[], const uint8_t *const key[], unsigned n,
                                  size_t aad_len, size_t len)
{
    gcm_expand(ctx, key, n, aad_len, len, 14);
}

QO_VAES void qo_aes_round_keys_lanes(void *const rk[], const uint8_t *const key[], unsigned n,
                                     size_t key_len)
{
    for (unsigned base = 0; base < n; base += XKEYS) {
        unsigned m = n - base < XKEYS ? n - base : XKEYS;
        if (key_len == 16)
            schedules(rk + base, key + base, m, 10, 0, NULL);
        else
            schedules(rk + base, key + base, m, 14, 0, NULL);
    }
}

static int gcm128_setup(void *ctx, const uint8_t *key)
{
    return qo_gcm_vaes_available() ? gcm_setup(ctx, key, 16) : -1;
}

static int gcm256_setup(void *ctx, const uint8_t *key)
{
    return qo_gcm_vaes_available() ? gcm_setup(ctx, key, 32) : -1;
}

static void gcm_dispose(void *ctx)
{
    qo_secure_zero(ctx, sizeof(struct gcm_vaes_key));
}

/* ------------------------------------------------------------------------ */
/* One packet                                                                */

/*
 * Encrypts (enc) or decrypts data[0..len) in place and returns the tag
 * GHASH gives (not compared here).  nr: 10 or 14, a constant where inlined.
 * nb: the nonce in every lane, bytes 12..15 zero.
 *
 * Windows: while more than 16 blocks' bytes remain, a full window of 16
 * whole blocks; then the last window: the remaining R <= 16 data blocks,
 * the length block, and, when the whole packet fits (AAD of at most 4
 * blocks, AAD + data + length <= 17 blocks), the AAD in front.
 */
QO_VAES_INLINE __m128i gcm_crypt(const struct gcm_vaes_key *k, int nr, int enc, __m512i nb,
                                 const uint8_t *aad, size_t aad_len, uint8_t *data, size_t len)
{
    const __m512i bswap = bswap_mask();
    __m512i rkz[15];
    load_round_keys(k, nr, rkz);

    size_t blocks = (len + 15) / 16, aad_blocks = (aad_len + 15) / 16;
    int aad_last = aad_len <= 64 && aad_blocks + blocks + 1 <= NPOW;
    __m128i s = _mm_setzero_si128();
    if (!aad_last)
        s = ghash_bytes(k, s, aad, aad_len);
    uint32_t c = 2;
    __m512i ctr = ctr_build(nb, c);
    size_t off = 0;

    /* Full windows, software-pipelined: window i's AES rounds interleaved
     * with the GHASH multiplies of window i - 1 (encryption hashes the
     * ciphertext, so window i's own GHASH waits for its AES). */
    __m512i xp[4];
    int pending = 0;
    for (; len - off > 16 * WINDOW; off += 16 * WINDOW) {
        __m512i ks[4], h[4];
        for (int j = 0; j < 4; j++) {
            ks[j] = _mm512_xor_si512(ctr, rkz[0]);
            c += 4;
            ctr = ctr_next(ctr, nb, c);
            h[j] = powers(k, WINDOW - 4 * j);
        }
        struct ghash_acc acc;
        acc_init(&acc);
        if (pending)
            xp[0] = _mm512_xor_si512(xp[0], _mm512_zextsi128_si512(s));
#pragma GCC unroll 14
        for (int r = 1; r < nr; r++) {
            for (int j = 0; j < 4; j++)
                ks[j] = _mm512_aesenc_epi128(ks[j], rkz[r]);
            if (pending && r <= 4)
                acc_mul(&acc, xp[r - 1], h[r - 1]);
        }
        if (pending)
            s = acc_finish(&acc);
        for (int j = 0; j < 4; j++) {
            ks[j] = _mm512_aesenclast_epi128(ks[j], rkz[nr]);
            uint8_t *p = data + off + 64 * j;
            __m512i in = _mm512_loadu_si512(p), out = _mm512_xor_si512(in, ks[j]);
            _mm512_storeu_si512(p, out);
            xp[j] = _mm512_shuffle_epi8(enc ? out : in, bswap);
        }
        pending = 1;
    }
    if (pending) {
        __m512i h[4];
        for (int j = 0; j < 4; j++)
            h[j] = powers(k, WINDOW - 4 * j);
        xp[0] = _mm512_xor_si512(xp[0], _mm512_zextsi128_si512(s));
        struct ghash_acc acc;
        acc_init(&acc);
        acc_mul4(&acc, xp, h);
        s = acc_finish(&acc);
    }

    /* The last window: R data blocks, the length block (bit lengths of AAD
     * and data, big-endian; reflected: data in the low half), maybe the AAD. */
    size_t rem = len - off, R = (rem + 15) / 16;
    unsigned tail = (unsigned)(R % 4); /* data lanes of the last data zmm; 0: full or none */
    __m128i lenblk = _mm_slli_epi64(_mm_set_epi64x((long long)aad_len, (long long)len), 3);
    __m128i tagmask = _mm_setzero_si128();
    int len_done = 0;
    struct ghash_acc acc;
    acc_init(&acc);
    if (aad_last) {
        __m512i a = _mm512_maskz_loadu_epi8(span_mask(aad_len, 0), aad);
        __m512i h = powers(k, aad_blocks + R + 1);
        a = _mm512_shuffle_epi8(a, bswap);
        if (tail == 0 && aad_blocks < 4) {
            /* No data lane is free for the length block: lane 3 here, with H^1. */
            a = _mm512_mask_broadcast_i32x4(a, lane_mask(3), lenblk);
            h = _mm512_mask_broadcast_i32x4(h, lane_mask(3), k->hpow[NPOW - 1]);
            len_done = 1;
        }
        acc_mul(&acc, a, h);
    }
    if (tail == 0) {
        /* E(J0) on its own: no lane of the data is free either. */
        __m128i j0 = _mm_or_si128(_mm512_castsi512_si128(nb), _mm_set_epi32(1 << 24, 0, 0, 0));
        tagmask = aes1(j0, rkz, nr);
        if (!len_done) /* the first block of the window if R == 0: s goes in */
            acc_mul(&acc, _mm512_zextsi128_si512(R ? lenblk : _mm_xor_si128(lenblk, s)),
                    _mm512_zextsi128_si512(k->hpow[NPOW - 1]));
    }
    for (size_t j = 0; j < R; j += 4) {
        int last = j + 4 >= R;
        __m512i ks = aes4(last && tail ? with_j0(ctr) : ctr, rkz, nr);
        c += 4;
        ctr = ctr_next(ctr, nb, c);
        __mmask64 m = span_mask(rem, 16 * j);
        uint8_t *p = data + off + 16 * j;
        __m512i in = _mm512_maskz_loadu_epi8(m, p), out = _mm512_xor_si512(in, ks);
        _mm512_mask_storeu_epi8(p, m, out);
        __m512i x = _mm512_shuffle_epi8(enc ? _mm512_maskz_mov_epi8(m, out) : in, bswap);
        if (last && tail) {
            /* the length block after the data, in lane `tail`; E(J0) in lane 3 */
            x = _mm512_mask_broadcast_i32x4(x, lane_mask(tail), lenblk);
            tagmask = _mm512_extracti32x4_epi32(ks, 3);
        }
        if (j == 0)
            x = _mm512_xor_si512(x, _mm512_zextsi128_si512(s));
        acc_mul(&acc, x, powers(k, R + 1 - j));
    }
    s = acc_finish(&acc);
    return _mm_xor_si128(_mm_shuffle_epi8(s, _mm512_castsi512_si128(bswap)), tagmask);
}

/* XORs the data with its keystream again: decrypt of a packet that failed
 * authentication, back to the bytes as received. */
QO_VAES_INLINE void gcm_ctr_again(const struct gcm_vaes_key *k, int nr, __m512i nb, uint8_t *data,
                                  size_t len)
{
    __m512i rkz[15];
    load_round_keys(k, nr, rkz);
    uint32_t c = 2;
    __m512i ctr = ctr_build(nb, c);
    for (size_t off = 0; off < len; off += 64) {
        __m512i ks = aes4(ctr, rkz, nr);
        c += 4;
        ctr = ctr_next(ctr, nb, c);
        __mmask64 m = span_mask(len, off);
        __m512i in = _mm512_maskz_loadu_epi8(m, data + off);
        _mm512_mask_storeu_epi8(data + off, m, _mm512_xor_si512(in, ks));
    }
}

/* Constant time: no branch or index depends on the bytes, only on the result. */
QO_VAES_INLINE int tag_ok(__m128i computed, const uint8_t *tag)
{
    return _mm_cmpeq_epi8_mask(computed, _mm_loadu_si128((const __m128i *)tag)) == 0xffff;
}

/* The nonce in every lane, bytes 12..15 zero, from a 12-byte array. */
QO_VAES_INLINE __m512i nonce_lanes12(const uint8_t *nonce)
{
    return _mm512_broadcast_i32x4(_mm_maskz_loadu_epi8(0x0fff, nonce));
}

/* The same from a qo_aead_op_t's 16-byte field: a broadcast load and a mask. */
QO_VAES_INLINE __m512i nonce_lanes16(const uint8_t nonce[16])
{
    const __m512i keep = _mm512_broadcast_i32x4(_mm_set_epi32(0, -1, -1, -1));
    return _mm512_and_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)nonce)), keep);
}

QO_VAES_INLINE int seal_one(void *ctx, int nr, __m512i nb, const uint8_t *aad, size_t aad_len,
                            uint8_t *data, size_t len, uint8_t *tag)
{
    if (len > GCM_MAX_LEN)
        return -1;
    _mm_storeu_si128((__m128i *)tag, gcm_crypt(ctx, nr, 1, nb, aad, aad_len, data, len));
    return 0;
}

QO_VAES_INLINE int open_one(void *ctx, int nr, __m512i nb, const uint8_t *aad, size_t aad_len,
                            uint8_t *data, size_t len, const uint8_t *tag)
{
    if (len > GCM_MAX_LEN)
        return -1;
    if (tag_ok(gcm_crypt(ctx, nr, 0, nb, aad, aad_len, data, len), tag))
        return 0;
    gcm_ctr_again(ctx, nr, nb, data, len);
    return -1;
}

/* ------------------------------------------------------------------------ */
/* Entry points                                                              */

QO_VAES static int gcm128_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                               size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    return seal_one(ctx, 10, nonce_lanes12(nonce), aad, aad_len, data, len, tag);
}

QO_VAES static int gcm256_seal(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                               size_t aad_len, uint8_t *data, size_t len, uint8_t *tag)
{
    return seal_one(ctx, 14, nonce_lanes12(nonce), aad, aad_len, data, len, tag);
}

QO_VAES static int gcm128_open(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                               size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                               uint8_t *scratch)
{
    (void)scratch;
    return open_one(ctx, 10, nonce_lanes12(nonce), aad, aad_len, data, len, tag);
}

QO_VAES static int gcm256_open(void *ctx, const uint8_t nonce[QUICOFF_IV_LEN], const uint8_t *aad,
                               size_t aad_len, uint8_t *data, size_t len, const uint8_t *tag,
                               uint8_t *scratch)
{
    (void)scratch;
    return open_one(ctx, 14, nonce_lanes12(nonce), aad, aad_len, data, len, tag);
}

/* Bursts: the same work as n calls, in one loop the compiler sees whole, so
 * consecutive packets' AES and GHASH chains overlap in the out-of-order
 * window; the next packet's key is fetched while this one is computed. */
QO_VAES_INLINE void seal_n(const qo_aead_op_t *ops, unsigned n, int result[], int nr)
{
    for (unsigned i = 0; i < n; i++) {
        const qo_aead_op_t *o = &ops[i];
        if (i + 1 < n)
            __builtin_prefetch(ops[i + 1].ctx);
        result[i] = seal_one(o->ctx, nr, nonce_lanes16(o->nonce), o->aad, o->aad_len, o->data,
                             o->len, o->tag);
    }
}

QO_VAES_INLINE void open_n(const qo_aead_op_t *ops, unsigned n, int result[], int nr)
{
    for (unsigned i = 0; i < n; i++) {
        const qo_aead_op_t *o = &ops[i];
        if (i + 1 < n)
            __builtin_prefetch(ops[i + 1].ctx);
        result[i] = open_one(o->ctx, nr, nonce_lanes16(o->nonce), o->aad, o->aad_len, o->data,
                             o->len, o->tag);
    }
}

QO_VAES static void gcm128_seal_burst(void *wstate, const qo_aead_op_t *ops, unsigned n,
                                      int result[])
{
    (void)wstate; /* no per-worker state */
    seal_n(ops, n, result, 10);
}

QO_VAES static void gcm256_seal_burst(void *wstate, const qo_aead_op_t *ops, unsigned n,
                                      int result[])
{
    (void)wstate; /* no per-worker state */
    seal_n(ops, n, result, 14);
}

QO_VAES static void gcm128_open_burst(void *wstate, const qo_aead_op_t *ops, unsigned n,
                                      int result[])
{
    (void)wstate; /* no per-worker state */
    open_n(ops, n, result, 10);
}

QO_VAES static void gcm256_open_burst(void *wstate, const qo_aead_op_t *ops, unsigned n,
                                      int result[])
{
    (void)wstate; /* no per-worker state */
    open_n(ops, n, result, 14);
}

/* ------------------------------------------------------------------------ */

int qo_gcm_vaes_available(void)
{
    static int cached = -1; /* racing first calls compute the same value */
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        v = qo_cpu_has_vaes_avx512();
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}

const qo_aead_algo_t qo_aes128gcm_vaes = {
    .name = "aes-128-gcm",
    .suite = QUICOFF_AES_128_GCM,
    .ctx_size = sizeof(struct gcm_vaes_key),
    .setup = gcm128_setup,
    .dispose = gcm_dispose,
    .seal = gcm128_seal,
    .open = gcm128_open,
    .seal_burst = gcm128_seal_burst,
    .open_burst = gcm128_open_burst,
    .expand = gcm128_expand,
};

const qo_aead_algo_t qo_aes256gcm_vaes = {
    .name = "aes-256-gcm",
    .suite = QUICOFF_AES_256_GCM,
    .ctx_size = sizeof(struct gcm_vaes_key),
    .setup = gcm256_setup,
    .dispose = gcm_dispose,
    .seal = gcm256_seal,
    .open = gcm256_open,
    .seal_burst = gcm256_seal_burst,
    .open_burst = gcm256_open_burst,
    .expand = gcm256_expand,
};

#else

/* Not x86-64 with GCC/Clang: no VAES GCM; the descriptors are never used. */
int qo_gcm_vaes_available(void)
{
    return 0;
}

void qo_aes_round_keys_lanes(void *const rk[], const uint8_t *const key[], unsigned n,
                             size_t key_len)
{
    (void)rk, (void)key, (void)n, (void)key_len;
}

const qo_aead_algo_t qo_aes128gcm_vaes = {.name = "aes-128-gcm"};
const qo_aead_algo_t qo_aes256gcm_vaes = {.name = "aes-256-gcm"};

#endif
