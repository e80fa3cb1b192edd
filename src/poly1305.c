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
static inline void poly_finish(struct poly *p, const uint8_t s[16], uint8_t tag[16])
{
    uint64_t h0 = p->h0, h1 = p->h1, h2 = p->h2, c, g0, g1, g2, t0, t1;

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
