/*
 * procs_flush.c - the cost of one flush's split by process (.procs) in an epoch that already
 * holds many processes (fork churn): the whole-file merge dcpid did before (read, add, encode,
 * rewrite atomically: dcpi_procprof_merge_write) against the append it does now
 * (dcpi_procprof_append: one chunk written after the last one), both fsynced as outside a
 * flush, each repeated over FLUSHES flushes of NEW new processes each.
 *   bench/procs_flush DIR [PROCS] [FLUSHES] [NEW]   (defaults 50000 processes, 40 flushes, 200)
 * Prints the mean and largest time per flush of each and the file sizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/store/procprof.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* n processes from pid first on, 8 offsets each: what a short-lived process leaves in libc. */
static void fill(dcpi_procprof_t *p, unsigned first, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        for (unsigned k = 0; k < 8; k++)
            dcpi_procprof_add(p, first + i, "true", 0x1000 + 64 * k + i % 7, 1 + k);
}

static long size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static int run(const char *path, int append, unsigned procs, unsigned flushes, unsigned fresh)
{
    char err[512] = "";
    dcpi_procprof_t base = {0};
    fill(&base, 1000, procs);
    unlink(path);
    if (dcpi_procprof_merge_write(path, &base, err) < 0) /* the epoch so far */
        return fprintf(stderr, "procs_flush: %s\n", err), 1;
    dcpi_procprof_free(&base);
    double sum = 0, max = 0;
    for (unsigned f = 0; f < flushes; f++) {
        dcpi_procprof_t p = {0};
        fill(&p, 1000 + procs + f * fresh, fresh);
        uint64_t torn = 0;
        double t0 = now();
        int rc = append ? dcpi_procprof_append(path, &p, &torn, err)
                        : dcpi_procprof_merge_write(path, &p, err);
        double dt = now() - t0;
        dcpi_procprof_free(&p);
        if (rc < 0)
            return fprintf(stderr, "procs_flush: %s\n", err), 1;
        sum += dt;
        max = dt > max ? dt : max;
    }
    printf("%-6s %u processes + %u flushes of %u: mean %.2f ms, max %.2f ms per flush, file %ld "
           "bytes\n",
           append ? "append" : "merge", procs, flushes, fresh, 1000 * sum / flushes, 1000 * max,
           size_of(path));
    unlink(path);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: procs_flush DIR [PROCS] [FLUSHES] [NEW]\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.procs", argv[1]);
    unsigned procs = argc > 2 ? (unsigned)atoi(argv[2]) : 50000;
    unsigned flushes = argc > 3 ? (unsigned)atoi(argv[3]) : 40;
    unsigned fresh = argc > 4 ? (unsigned)atoi(argv[4]) : 200;
    return run(path, 0, procs, flushes, fresh) || run(path, 1, procs, flushes, fresh);
}
