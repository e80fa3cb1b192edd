/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Small helpers for quicoff-bench: clock, statistics, PRNG, CPU pinning,
 * memory use and a description of the machine.  Header-only; the benchmark is one program.
 */
#ifndef QUICOFF_BENCH_UTIL_H
#define QUICOFF_BENCH_UTIL_H

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (vDSO: no system call on Linux x86-64). */
static inline uint64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

/* Cost of one clock_gettime call (median of many back-to-back pairs). */
static inline double bench_clock_cost_ns(void)
{
    enum { N = 101, INNER = 1000 };
    double v[N];

    for (int i = 0; i < N; i++) {
        uint64_t t0 = bench_now_ns();
        for (int k = 0; k < INNER; k++)
            (void)bench_now_ns();
        v[i] = (double)(bench_now_ns() - t0) / INNER;
    }
    for (int i = 1; i < N; i++) /* insertion sort: N is tiny */
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    return v[N / 2];
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median, min and max of v[0..n); v is left unchanged. */
static inline void bench_stats(const double *v, unsigned n, double *med, double *min, double *max)
{
    double s[64];

    if (n == 0 || n > 64) {
        *med = *min = *max = 0;
        return;
    }
    memcpy(s, v, n * sizeof(double));
    qsort(s, n, sizeof(double), bench_cmp_double);
    *med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    *min = s[0];
    *max = s[n - 1];
}

/* Involuntary context switches of the calling thread so far: a repeat that
 * saw one was interrupted by another task on this CPU. */
static inline long bench_invol_csw(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return ru.ru_nivcsw;
}

/* Steal time (hypervisor ran someone else on our vCPU) from /proc/stat, in
 * clock ticks summed over all CPUs; -1 when unavailable. */
static inline long long bench_steal_ticks(void)
{
    long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    int n = fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3],
                   &v[4], &v[5], &v[6], &v[7]);
    fclose(f);
    return n == 8 ? v[7] : -1;
}

/* splitmix64: deterministic test data, not for keys that protect anything. */
static inline uint64_t bench_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static inline void bench_fill(uint64_t *state, uint8_t *p, size_t n)
{
    while (n) {
        uint64_t r = bench_rand(state);
        size_t k = n < 8 ? n : 8;
        memcpy(p, &r, k);
        p += k;
        n -= k;
    }
}

/* The CPUs this process may run on (its affinity mask at start), in
 * ascending order; returns how many (0 on error). */
static inline unsigned bench_allowed_cpus(int *out, unsigned max)
{
    cpu_set_t set;
    unsigned n = 0;

    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
        return 0;
    for (int c = 0; c < CPU_SETSIZE && n < max; c++)
        if (CPU_ISSET(c, &set))
            out[n++] = c;
    return n;
}

/* Pins the calling thread (Linux: sched_setaffinity(0) is per thread) to one
 * CPU. Returns 0, or -1 with the reason in why. */
static inline int bench_pin_cpu(int cpu, char *why, size_t why_len)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
        snprintf(why, why_len, "sched_setaffinity(CPU %d): %s", cpu, strerror(errno));
        return -1;
    }
    why[0] = '\0';
    return 0;
}

/* Resident set size of the process in MiB (VmRSS), -1 when unavailable. */
static inline long bench_rss_mib(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

/* "model name" from /proc/cpuinfo and which of the flags that matter for
 * AES-GCM / ChaCha20 code paths the CPU reports. */
static inline void bench_cpu_info(char *model, size_t model_len, char *flags, size_t flags_len)
{
    static const char *const want[] = {"aes",        "pclmulqdq", "avx",      "avx2",
                                       "avx512f",    "avx512vl",  "avx512bw", "vaes",
                                       "vpclmulqdq", "sha_ni",    "adx",      "bmi2"};
    char line[8192];
    FILE *f = fopen("/proc/cpuinfo", "r");
    int have_model = 0, have_flags = 0;

    snprintf(model, model_len, "unknown");
    flags[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof(line), f) && !(have_model && have_flags)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        val[strcspn(val, "\n")] = '\0';
        if (!have_model && strncmp(line, "model name", 10) == 0) {
            snprintf(model, model_len, "%s", val);
            have_model = 1;
        } else if (!have_flags && strncmp(line, "flags", 5) == 0) {
            size_t used = 0;
            for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                /* whole-word match in the space-separated list */
                size_t wl = strlen(want[i]);
                const char *p = val;
                int found = 0;
                while ((p = strstr(p, want[i])) != NULL) {
                    if ((p == val || p[-1] == ' ') && (p[wl] == ' ' || p[wl] == '\0')) {
                        found = 1;
                        break;
                    }
                    p += wl;
                }
                int n = snprintf(flags + used, flags_len - used, "%s%s%s", used ? " " : "",
                                 found ? "" : "!", want[i]);
                if (n < 0 || (size_t)n >= flags_len - used)
                    break;
                used += (size_t)n;
            }
            have_flags = 1;
        }
    }
    fclose(f);
}

#endif /* QUICOFF_BENCH_UTIL_H */
