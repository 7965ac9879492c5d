/*
 * bench/fleetgen.c - synthetic fleet data for bench/fleet.sh: hosts FIRST..FIRST+HOSTS-1, each
 * with EPOCHS 10-minute epochs from 2026-11-25 00:00 UTC of ROWS sample rows (offsets drawn, by a
 * Zipf-like law, from 300 hot spots inside real functions of real system binaries, so the fleet
 * names them from its symbols), pushed through the real batch and commit code (core/fleet,
 * $FLEETGEN_GROUP epochs per round of inserts, default 32) to URL; and the same samples merged per
 * host into one epoch of a local database (one platform per host: dcpiprof -db reads them all),
 * unless LOCALDB is "-". Prints "rows N seconds S" (the push only). usage: fleetgen URL FIRST HOSTS
 * EPOCHS ROWS LOCALDB|-
 * For tests/e2e/fleet_agg.sh: FLEETGEN_START (unix seconds of the first epoch), FLEETGEN_SEED
 * (other rows for the same slots: a re-push), FLEETGEN_DUTY (the duty of the odd hosts),
 * FLEETGEN_KIND=flush (commits as dcpid -push's flushes, which an "epoch" push supersedes),
 * FLEETGEN_PERIOD (the event's period) and FLEETGEN_PREFIX (put before the rows' image paths).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/fsutil.h"
#include "core/fleet/push.h"
#include "core/image/image.h"
#include "core/image/symbols.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"

#define NHOT   300
#define MAXIMG 4
#define GROUP  256 /* at most; FLEETGEN_GROUP epochs per round of inserts (default 32) */

static const char *const files[MAXIMG] = {"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/bash",
                                          "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
                                          "/usr/lib/x86_64-linux-gnu/libcurl.so.4"};
static const char *const comms[] = {"web", "db", "cache", "batch", "cron"};

typedef struct img {
    const char *path;
    dcpi_image_info_t info;
    uint32_t hot[NHOT]; /* offsets from tstart */
} img_t;

static img_t imgs[MAXIMG];
static int nimg;
static uint64_t rng = 88172645463325252ULL;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Zipf-like index in [0, n): small indexes are hot. */
static unsigned zipf(unsigned n)
{
    double u = (double)(next() % 1000000) / 1000000.0;
    unsigned i = (unsigned)((double)n * u * u * u);
    return i < n ? i : n - 1;
}

static int load_images(void)
{
    for (int k = 0; k < MAXIMG; k++) {
        img_t *im = &imgs[nimg];
        dcpi_symtab_t *st = NULL;
        if (dcpi_image_probe(files[k], &im->info, NULL) < 0 || !im->info.is_elf ||
            dcpi_symtab_open(files[k], &st, NULL) < 0 || dcpi_symtab_count(st) < 50) {
            dcpi_symtab_free(st);
            continue;
        }
        im->path = files[k];
        size_t ns = dcpi_symtab_count(st);
        for (int h = 0; h < NHOT; h++) {
            const dcpi_symbol_t *s = dcpi_symtab_get(st, next() % ns);
            uint64_t off = s->addr - im->info.tstart + (s->size > 4 ? next() % (s->size - 1) : 0);
            im->hot[h] = off < im->info.tsize ? (uint32_t)off : 0;
        }
        dcpi_symtab_free(st);
        nimg++;
    }
    return nimg ? 0 : -1;
}

static uint32_t first_start = 1795564800u; /* 2026-11-25 00:00 UTC */
static double odd_duty = 1;
static const char *kind = "epoch", *prefix = "";
static uint64_t period = 1000000;

static void epoch_name(unsigned e, char *out, size_t len, uint32_t *start)
{
    *start = first_start + e * 600u;
    time_t t = *start;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, len, "%Y%m%d%H%M", &tm);
}

/* One host's epoch into b (and its counts into local[img][hot]). */
static void host_epoch(dcpi_fleet_batch_t *b, const char *host, unsigned e, unsigned rows,
                       uint64_t (*local)[NHOT])
{
    char ep[32];
    uint32_t start;
    epoch_name(e, ep, sizeof ep, &start);
    dcpi_fleet_key_t k = {.host = host,
                          .epoch = ep,
                          .platform = host,
                          .event = "cpu-clock",
                          .estart = start,
                          .eend = start + 600,
                          .period = period,
                          .duty = host[strlen(host) - 1] % 2 ? odd_duty : 1};
    snprintf(b->epoch, sizeof b->epoch, "%s", ep);
    int req[MAXIMG];
    for (int i = 0; i < nimg; i++)
        req[i] = dcpi_fleet_batch_symreq(b, imgs[i].info.id, 0, imgs[i].path, "",
                                         imgs[i].info.tstart, imgs[i].info.tsize);
    uint64_t total = 0;
    dcpi_fbuf_t *o = &b->t[DCPI_FLEET_T_SAMPLES];
    for (unsigned r = 0; r < rows; r++) {
        int i = zipf((unsigned)nimg);
        unsigned h = zipf(NHOT);
        uint64_t cnt = 1 + next() % 20;
        const img_t *im = &imgs[i];
        dcpi_fleet_batch_key(b, DCPI_FLEET_T_SAMPLES, &k);
        dcpi_fbuf_printf(o, "%s\t%s%s\t0\t%" PRIu64 "\t%" PRIu64 "\t%u\t%u\t%s\t%" PRIu64 "\n",
                         im->info.id, prefix, im->path, im->info.tstart, im->info.tsize, im->hot[h],
                         1000 + (unsigned)(next() % 50), comms[next() % 5], cnt);
        dcpi_fleet_batch_page(b, req[i], im->info.tstart + im->hot[h]);
        local[i][h] += cnt;
        total += cnt;
    }
    dcpi_fleet_batch_key(b, DCPI_FLEET_T_LOSS, &k);
    dcpi_fbuf_printf(&b->t[DCPI_FLEET_T_LOSS], "0\t%" PRIu64 "\n", total);
    char slot[64];
    snprintf(slot, sizeof slot, "%s%s", strcmp(kind, "epoch") ? "flush:" : "", ep);
    dcpi_fleet_batch_seal(b, start, slot);
}

static int write_local(const char *db, const char *host, uint64_t (*local)[NHOT])
{
    for (int i = 0; i < nimg; i++) {
        const img_t *im = &imgs[i];
        char dirname[512], dir[4096], path[4200];
        dcpi_image_dirname(im->path, im->info.id, dirname, sizeof dirname);
        snprintf(dir, sizeof dir, "%s/202611250000/%s/%s", db, host, dirname);
        snprintf(path, sizeof path, "%s/cpu-clock.prof", dir);
        dcpi_profile_t *p = NULL;
        if (dcpi_profile_new(&p) < 0 || dcpi__mkdirs(dir, 0755) < 0)
            return -1;
        dcpi_profile_set(p, "image", im->info.id);
        dcpi_profile_set(p, "epoch", "202611250000");
        dcpi_profile_set(p, "platform", host);
        dcpi_profile_set(p, "event", "cpu-clock");
        dcpi_profile_set(p, "period", "1000000");
        dcpi_profile_setf(p, "tstart", "0x%" PRIx64, im->info.tstart);
        dcpi_profile_setf(p, "tsize", "%" PRIu64, im->info.tsize);
        dcpi_profile_set(p, "cpuspeed", "0");
        dcpi_profile_set(p, "path", im->path);
        for (int h = 0; h < NHOT; h++)
            if (local[i][h])
                dcpi_profile_add(p, im->hot[h], (uint32_t)local[i][h]);
        int rc = dcpi_profile_merge_write(path, p, NULL);
        dcpi_profile_free(p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: fleetgen URL FIRST HOSTS EPOCHS ROWS LOCALDB|-\n");
        return 2;
    }
    unsigned first = (unsigned)atoi(argv[2]), hosts = (unsigned)atoi(argv[3]);
    unsigned epochs = (unsigned)atoi(argv[4]), rows = (unsigned)atoi(argv[5]);
    const char *db = strcmp(argv[6], "-") ? argv[6] : NULL;
    rng ^= 0x9e3779b97f4a7c15ULL; /* the same hot spots in every process */
    if (load_images() < 0) {
        fprintf(stderr, "fleetgen: no system binary with symbols found\n");
        return 1;
    }
    rng ^= first * 0x2545F4914F6CDD1DULL;
    const char *e = getenv("FLEETGEN_START"), *seed = getenv("FLEETGEN_SEED");
    const char *duty = getenv("FLEETGEN_DUTY"), *k = getenv("FLEETGEN_KIND");
    if (e && *e)
        first_start = (uint32_t)strtoul(e, NULL, 10);
    if (seed && *seed)
        rng ^= strtoull(seed, NULL, 10) * 0x9E3779B97F4A7C15ULL;
    if (duty && *duty)
        odd_duty = strtod(duty, NULL);
    if (k && !strcmp(k, "flush"))
        kind = "flush";
    const char *pe = getenv("FLEETGEN_PERIOD"), *px = getenv("FLEETGEN_PREFIX");
    if (pe && *pe)
        period = strtoull(pe, NULL, 10);
    if (px)
        prefix = px;
    char err[DCPI_ERRLEN] = "";
    dcpi_fleet_t *f = NULL;
    dcpi_fleet_info_t info;
    if (dcpi_fleet_open(argv[1], &f, err) < 0 || dcpi_fleet_check(f, &info, err) < 0) {
        fprintf(stderr, "fleetgen: %s\n", err);
        return 1;
    }
    dcpi_fleet_timeout(f, 600);
    static dcpi_fleet_batch_t b[GROUP];
    const char *g = getenv("FLEETGEN_GROUP");
    unsigned group = g && atoi(g) > 0 && atoi(g) <= GROUP ? (unsigned)atoi(g) : 32;
    uint64_t(*local)[NHOT] = calloc(MAXIMG, sizeof *local);
    size_t total_rows = 0;
    double t = 0;
    int rc = 0;
    for (unsigned h = first; rc == 0 && h < first + hosts; h++) {
        char host[32];
        snprintf(host, sizeof host, "host%05u", h);
        memset(local, 0, MAXIMG * sizeof *local);
        for (unsigned e = 0; rc == 0 && e < epochs; e += group) {
            unsigned n = epochs - e < group ? epochs - e : group;
            const dcpi_fleet_batch_t *bp[GROUP];
            int sent[GROUP];
            for (unsigned i = 0; i < n; i++) {
                dcpi_fleet_batch_init(&b[i], host, kind);
                host_epoch(&b[i], host, e + i, rows, local);
                bp[i] = &b[i];
                total_rows += b[i].rows;
            }
            double t0 = now();
            rc = dcpi_fleet_push_many(f, &info, bp, n, sent, err);
            t += now() - t0;
            for (unsigned i = 0; i < n; i++)
                dcpi_fleet_batch_free(&b[i]);
        }
        if (rc == 0 && db && write_local(db, host, local) < 0)
            rc = DCPI_EIO;
    }
    if (rc < 0) {
        fprintf(stderr, "fleetgen: %s\n", err[0] ? err : dcpi_strerror(rc));
        return 1;
    }
    printf("rows %zu seconds %.3f\n", total_rows, t);
    free(local);
    dcpi_fleet_close(f);
    return 0;
}
