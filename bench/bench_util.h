/* bench_util.h - what every benchmark in bench/ measures with: a monotonic clock and the
 * process's peak resident set size. */
#ifndef GPUSCHED_BENCH_UTIL_H
#define GPUSCHED_BENCH_UTIL_H

#include <sys/resource.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Peak resident set size of this process so far, KiB (getrusage). */
static inline long peak_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

#endif
