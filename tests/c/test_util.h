/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A minimal TAP-style harness (after picotls' t/test.h), header-only so each
 * test program is one .c file:
 *
 *     static void test_foo(void) { ok(1 + 1 == 2, "adds"); }
 *     int main(void) { subtest("foo", test_foo); return done_testing(); }
 *
 * Every check prints "ok N - ..." or "not ok N - ... (file:line)"; the last
 * line is "N passed, M failed" and the exit code is non-zero on any failure.
 * Functions are static inline so a test that uses only some of them builds
 * without unused-function warnings.
 */
#ifndef QUICOFF_TEST_UTIL_H
#define QUICOFF_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned test_passed, test_failed;
static const char *test_current = "";

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static inline int
test_ok(const char *file, int line, int cond, const char *fmt, ...)
{
    va_list ap;

    if (cond)
        test_passed++;
    else
        test_failed++;
    printf("%sok %u - %s: ", cond ? "" : "not ", test_passed + test_failed, test_current);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (!cond)
        printf(" (%s:%d)", file, line);
    printf("\n");
    fflush(stdout);
    return cond;
}

/* ok(condition, "printf format", args...): records and prints one check;
 * evaluates to the condition so a test can stop early. */
#define ok(...) test_ok(__FILE__, __LINE__, __VA_ARGS__)

static inline void subtest(const char *name, void (*fn)(void))
{
    unsigned failed_before = test_failed;

    test_current = name;
    printf("# %s\n", name);
    fn();
    if (test_failed != failed_before)
        printf("# %s: %u failed\n", name, test_failed - failed_before);
    test_current = "";
}

static inline int done_testing(void)
{
    printf("1..%u\n", test_passed + test_failed);
    printf("%u passed, %u failed\n", test_passed, test_failed);
    return test_failed == 0 ? 0 : 1;
}

/* Decodes hex, skipping spaces so RFC dumps can be pasted as printed.
 * Returns the byte count, or SIZE_MAX on a bad digit or overflow. */
static inline size_t hex_decode(uint8_t *out, size_t cap, const char *hex)
{
    size_t n = 0;
    int hi = -1;

    for (; *hex != '\0'; hex++) {
        int v;
        char ch = *hex;
        if (ch == ' ' || ch == '\n')
            continue;
        if (ch >= '0' && ch <= '9')
            v = ch - '0';
        else if (ch >= 'a' && ch <= 'f')
            v = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F')
            v = ch - 'A' + 10;
        else
            return SIZE_MAX;
        if (hi < 0) {
            hi = v;
        } else {
            if (n == cap)
                return SIZE_MAX;
            out[n++] = (uint8_t)(hi << 4 | v);
            hi = -1;
        }
    }
    return hi < 0 ? n : SIZE_MAX;
}

/* Decodes hex that the test itself wrote; a typo there aborts the run loudly. */
static inline size_t hex_must(uint8_t *out, size_t cap, const char *hex)
{
    size_t n = hex_decode(out, cap, hex);

    if (n == SIZE_MAX) {
        fprintf(stderr, "bad test vector: %s\n", hex);
        exit(2);
    }
    return n;
}

/* Lower-case hex of p[0..n); returns one of a few rotating static buffers,
 * so several may appear in one printf.  Long inputs are truncated. */
static inline const char *hex_str(const void *p, size_t n)
{
    static char bufs[4][2 * 256 + 4];
    static unsigned next;
    char *s = bufs[next++ % 4];
    const uint8_t *b = p;
    size_t i, max = 256;

    for (i = 0; i < n && i < max; i++)
        snprintf(s + 2 * i, 3, "%02x", b[i]);
    s[2 * i] = '\0';
    if (n > max)
        strcpy(s + 2 * i, "..");
    return s;
}

/* ok_hex(got, len, "expected hex", "what"): compares bytes with a vector and
 * prints both on a mismatch. */
#define ok_hex(got, len, want_hex, what) \
    test_ok_hex(__FILE__, __LINE__, (const uint8_t *)(got), (len), (want_hex), (what))

static inline int test_ok_hex(const char *file, int line, const uint8_t *got, size_t len,
                              const char *want_hex, const char *what)
{
    uint8_t want[1024];
    size_t want_len = hex_must(want, sizeof(want), want_hex);
    int same = want_len == len && memcmp(got, want, len) == 0;

    if (same)
        return test_ok(file, line, 1, "%s", what);
    return test_ok(file, line, 0, "%s: got %s, want %s", what, hex_str(got, len),
                   hex_str(want, want_len));
}

/* Random test data: xorshift64. A test seeds it (*test_rng() = seed) so
 * that a failure repeats with the same bytes. */
static inline uint64_t *test_rng(void)
{
    static uint64_t state = 0x9e3779b97f4a7c15u;
    return &state;
}

static inline uint64_t test_rnd(void)
{
    uint64_t *s = test_rng();
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline void test_fill(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)test_rnd();
}

/* malloc that never returns NULL (a test without memory cannot go on). */
static inline void *test_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

#endif /* QUICOFF_TEST_UTIL_H */
