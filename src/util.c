/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Status names (shared by the C library, the Python package and the docs:
 * keep them stable), the secret wipe, and the allocation of the table's big
 * arrays. Suite facts: suites.c.
 */
#include "crypto.h"

#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static const char *const status_names[QUICOFF_STATUS_COUNT] = {
    [QUICOFF_OK] = "ok",
    [QUICOFF_UNKNOWN_CONNECTION] = "unknown_connection",
    [QUICOFF_AUTH_FAILED] = "auth_failed",
    [QUICOFF_MALFORMED] = "malformed",
    [QUICOFF_KEY_PHASE_UNAVAILABLE] = "key_phase_unavailable",
    [QUICOFF_USAGE_LIMIT_REACHED] = "usage_limit_reached",
    [QUICOFF_KEY_EXHAUSTED] = "key_exhausted",
    [QUICOFF_UNSUPPORTED] = "unsupported",
    [QUICOFF_NO_SPACE] = "no_space",
    [QUICOFF_INVALID_ARGUMENT] = "invalid_argument",
    [QUICOFF_EXISTS] = "exists",
    [QUICOFF_TABLE_FULL] = "table_full",
    [QUICOFF_NO_MEMORY] = "no_memory",
    [QUICOFF_BACKEND_UNAVAILABLE] = "backend_unavailable",
};

const char *quicoff_status_name(quicoff_status_t s)
{
    /* The enum may hold any int (e.g. a value from Python): never index blindly. */
    if ((unsigned)s >= QUICOFF_STATUS_COUNT)
        return "unknown";
    return status_names[s];
}

void qo_secure_zero(void *p, size_t n)
{
    /* Neither may be dropped by the compiler as a dead store before free()
     * or return: explicit_bzero is a memset it is told not to remove (and
     * the C library's memset, 3-4x faster on the kilobytes the ChaCha20-
     * Poly1305 bursts wipe: docs/benchmarks.md); OPENSSL_cleanse writes
     * through a volatile function pointer, a word at a time. */
    if (p == NULL || n == 0)
        return;
#ifdef QUICOFF_HAVE_EXPLICIT_BZERO
    explicit_bzero(p, n);
#else
    OPENSSL_cleanse(p, n);
#endif
}

#define QO_HUGE_PAGE ((size_t)2 << 20)

void *qo_alloc_big_zeroed(size_t size)
{
    /* The slot array and the index of a large table are read at random, one
     * line per packet each: with 4 KiB pages nearly every such read also
     * misses the TLB and walks the page table (more cold lines). Aligned to
     * and asked for as transparent huge pages (where THP is "madvise", the
     * default of many distributions), they need few TLB entries. Small
     * tables: plain cache-line-aligned memory. */
    size_t align = size >= QO_HUGE_PAGE ? QO_HUGE_PAGE : 64;
    size_t rounded = (size + align - 1) & ~(align - 1);
    void *p = aligned_alloc(align, rounded);
    if (!p)
        return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (align == QO_HUGE_PAGE)
        (void)madvise(p, rounded, MADV_HUGEPAGE); /* a hint: refused is fine */
#endif
    memset(p, 0, rounded);
    return p;
}
