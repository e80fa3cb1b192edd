/* SPDX-License-Identifier: Apache-2.0 */
/*
 * x86-64 CPU features read from CPUID and XCR0 directly (internal).
 *
 * Not every compiler's __builtin_cpu_supports knows "vaes" and "vpclmulqdq"
 * (clang 14 rejects them at compile time), and a feature is only usable when
 * the OS also saves the registers it needs (XCR0), which the builtin does not
 * check for every feature.
 */
#ifndef QUICOFF_CPU_X86_H
#define QUICOFF_CPU_X86_H

#include <cpuid.h>
#include <string.h>

/* Leaf 1 ECX: PCLMULQDQ, SSSE3, SSE4.1, AES-NI, OSXSAVE, AVX. */
#define QO_CPUID1_C_AVX_AES (1u << 1 | 1u << 9 | 1u << 19 | 1u << 25 | 1u << 27 | 1u << 28)

/* 0 when CPUID leaf 1's AVX/AES bits or the OS's XCR0 bits in xcr0_mask are
 * missing; otherwise leaf 7's EBX/ECX in *b7 / *c7. */
static inline int qo_cpu_leaf7(unsigned xcr0_mask, unsigned *b7, unsigned *c7)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & QO_CPUID1_C_AVX_AES) != QO_CPUID1_C_AVX_AES)
        return 0;
    unsigned xlo, xhi;
    __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
    if ((xlo & xcr0_mask) != xcr0_mask || __get_cpuid_max(0, NULL) < 7)
        return 0;
    __cpuid_count(7, 0, a, b, c, d);
    *b7 = b;
    *c7 = c;
    return 1;
}

/* AVX2 + VAES on YMM registers (the OS saves XMM and YMM state). */
static inline int qo_cpu_has_vaes_avx2(void)
{
    unsigned b, c;
    return qo_cpu_leaf7(0x6, &b, &c) && (b & 1u << 5) && (c & 1u << 9);
}

/* AVX2, BMI2, AVX512F/DQ/BW/VL, VAES and VPCLMULQDQ (the OS saves XMM, YMM,
 * opmask and both ZMM halves). */
static inline int qo_cpu_has_vaes_avx512(void)
{
    unsigned b, c;
    const unsigned b7 = 1u << 5 | 1u << 8 | 1u << 16 | 1u << 17 | 1u << 30 | 1u << 31;
    const unsigned c7 = 1u << 9 | 1u << 10;
    return qo_cpu_leaf7(0xe6, &b, &c) && (b & b7) == b7 && (c & c7) == c7;
}

/* An AMD core (or a Hygon one, the same design): CPUID leaf 0's vendor,
 * "AuthenticAMD" / "HygonGenuine" in EBX, EDX, ECX. */
static inline int qo_cpu_is_amd(void)
{
    unsigned a, r[3];
    /* the vendor string is EBX, EDX, ECX in that order */
    if (!__get_cpuid(0, &a, &r[0], &r[2], &r[1]))
        return 0;
    char vendor[12];
    memcpy(vendor, r, sizeof(vendor));
    return memcmp(vendor, "AuthenticAMD", 12) == 0 || memcmp(vendor, "HygonGenuine", 12) == 0;
}

#endif
