/*
 * daemon.c - dcpid: setup, the event loop, record handling, flushing, epochs, the control
 * socket server and status (see daemon.h). perf details live in sampler.c, the count table in
 * aggregate.c, the database layout in db.c.
 *
 * Every way a sample can fail to reach a profile is counted: ring overflows (LOST and
 * LOST_SAMPLES records, per event), samples outside every image (unknown, per event, written
 * to unknown@<platform>), malformed records (sampler stats), and a count table that could not
 * grow (dropped, added to the event's lost). status shows all of them.
 *
 * Value profiling (-vtrace) lives in vtrace.c: this file loads the plugins, asks perf for the
 * user registers (and callchains with -vcontext), hands every user-mode sample of the first
 * event to vtrace, ends its traces after each ring drain, and flushes it with the PC profiles.
 */
#include "core/daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/sampling/aggregate.h"
#include "core/store/db.h"
#include "dcpi/errno.h"
#include "core/sampling/dstacks.h"
#include "dcpi/profile.h"
#include "core/base/fsutil.h"
#include "core/image/image.h"
#include "core/image/loadmap.h"
#include "core/base/log.h"
#include "core/store/tracefile.h"
#include "core/plugin/vploader.h"
#include "core/values/vstep.h"
#include "core/values/vtrace.h"

#define MAXEXITS     4096
#define TRIED_SLOTS  8192
#define TAG_TIMER    1
#define TAG_SIGNAL   2
#define TAG_SOCK     3
#define TAG_PIDFD    4
#define TAG_RING     16
#define FAIL_RETRY_S 10

typedef struct ev_stats {
    uint64_t samples, lost, throttled, unknown;
    uint64_t unknown_pending, lost_pending; /* not yet in a written unknown@ profile */
} ev_stats_t;

typedef struct daemon {
    const dcpi_daemon_opts_t *o;
    enum dcpi_sampler_mode mode;
    char db[4096], platform[DCPI_NAMELEN], epoch[DCPI_NAMELEN], sock_path[4096];
    char log_path[4096];
    int lock_fd, sock_fd, epfd, tfd, sfd, pidfd;
    dcpi_event_spec_t evs[DCPI_SAMPLER_MAXEV];
    int nev;
    ev_stats_t st[DCPI_SAMPLER_MAXEV];
    dcpi_sampler_t *smp;
    dcpi_loadmap_t *lm;
    dcpi_agg_t *agg;
    /* value profiling: NULL without -vtrace */
    dcpi_vp_set_t *vps;
    dcpi_vtrace_t *vt;
    dcpi_dstacks_t *stk; /* -g, else NULL */
    dcpi_vstep_t *vs;    /* -vstep, else NULL */
    /* kernel image */
    int kernel_ok, kallsyms_done;
    uint64_t ktstart, ktsize;
    char kid[DCPI_IMAGE_IDLEN];
    /* deferred exits and the negative cache of /proc rescans */
    pid_t exits[MAXEXITS];
    size_t nexits;
    pid_t tried[TRIED_SLOTS];
    size_t ntried;
    /* flushing */
    double start, last_flush, next_flush, last_fail;
    uint64_t total_samples, samples_at_flush, flushed_profiles;
    time_t last_flush_wall;
    char flush_error[DCPI_ERRLEN];
    unsigned cpuspeed;
    int cpucount, throttle_logged, quit, exit_code;
    /* command / -p target */
    pid_t child;
    int child_status;
} daemon_t;

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(char *err, int rc, const char *fmt, ...) DCPI_PRINTF(3, 4);
static int fail(char *err, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err)
        vsnprintf(err, DCPI_ERRLEN, fmt, ap);
    va_end(ap);
    return rc;
}

/* snprintf without the compiler's truncation warnings: paths are checked by their users. */
static void pathf(char *out, size_t len, const char *fmt, ...) DCPI_PRINTF(3, 4);
static void pathf(char *out, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, len, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- machine facts */

static unsigned read_cpuspeed(void)
{
    FILE *f = fopen("/proc/cpuinfo", "re");
    char line[512];
    double mhz = 0;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "cpu MHz", 7) == 0 && strchr(line, ':')) {
            mhz = atof(strchr(line, ':') + 1);
            break;
        }
    if (f)
        fclose(f);
    return (unsigned)(mhz + 0.5);
}

static int is_text_type(char t)
{
    return t == 't' || t == 'T' || t == 'w' || t == 'W';
}

/* Lowest and highest text symbol of the running kernel, from /proc/kallsyms. */
static void read_kernel_range(daemon_t *d)
{
    /* The core kernel's symbols come first in /proc/kallsyms, in address order, so the first
     * text symbol is the start of kernel text: reading the whole file (~10^5 lines) here would
     * cost most of dcpid's start-up. Modules load above it, well within 4 GiB, so kernel
     * profiles cover [tstart, tstart + 4 GiB): offsets are 32 bits. */
    FILE *f = fopen("/proc/kallsyms", "re");
    char line[512];
    uint64_t lo = UINT64_MAX;
    while (f && lo == UINT64_MAX && fgets(line, sizeof line, f)) {
        char type;
        unsigned long long a;
        if (sscanf(line, "%llx %c", &a, &type) == 2 && is_text_type(type) && a != 0)
            lo = a;
    }
    if (f)
        fclose(f);
    dcpi_image_kernel_id(d->kid);
    d->kernel_ok = lo != UINT64_MAX;
    if (!d->kernel_ok) {
        dcpi__log(DCPI_LOG_WARN, "/proc/kallsyms shows no addresses: kernel samples count as "
                                 "unknown");
        return;
    }
    d->ktstart = lo;
    d->ktsize = UINT32_MAX;
    dcpi__log(DCPI_LOG_INFO, "kernel text 0x%" PRIx64 " id %s", lo, d->kid);
}

/* The text symbols of /proc/kallsyms as one malloc'd buffer. */
static char *kallsyms_text(size_t *len)
{
    FILE *f = fopen("/proc/kallsyms", "re");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap), line[512];
    while (buf && fgets(line, sizeof line, f)) {
        /* "ADDR T name [mod]": the type follows the first space (no sscanf: this runs over
         * ~10^5 lines and dominated dcpid's CPU time). */
        const char *sp = strchr(line, ' ');
        if (!sp || sp == line || !is_text_type(sp[1]) || sp[2] != ' ')
            continue;
        size_t l = strlen(line);
        if (n + l + 1 > cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
        }
        memcpy(buf + n, line, l);
        n += l;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* ---------------------------------------------------------------- record handling */

static void count_unknown(daemon_t *d, int ev)
{
    d->st[ev].unknown++;
    d->st[ev].unknown_pending++;
}

static int tried_before(daemon_t *d, pid_t pid)
{
    if (d->ntried * 2 >= TRIED_SLOTS) {
        memset(d->tried, 0, sizeof d->tried);
        d->ntried = 0;
    }
    size_t i = ((uint32_t)pid * 2654435761u) % TRIED_SLOTS;
    while (d->tried[i]) {
        if (d->tried[i] == pid)
            return 1;
        i = (i + 1) % TRIED_SLOTS;
    }
    d->tried[i] = pid;
    d->ntried++;
    return 0;
}

static void add_count(daemon_t *d, uint32_t image, int ev, uint32_t off)
{
    if (dcpi_agg_add(d->agg, image, (uint16_t)ev, off, 1) == 0)
        return;
    /* The table is full (a flush failed or -hash is tiny): grow rather than drop. */
    if (dcpi_agg_grow(d->agg) == 0 && dcpi_agg_add(d->agg, image, (uint16_t)ev, off, 1) == 0) {
        dcpi__log(DCPI_LOG_WARN, "hash table full, grown to %zu entries",
                  dcpi_agg_capacity(d->agg));
        return;
    }
    d->st[ev].lost++;
    d->st[ev].lost_pending++;
}

static void user_sample(daemon_t *d, const dcpi_sample_t *s)
{
    dcpi_image_t *img;
    uint32_t off;
    int rc = dcpi_loadmap_resolve(d->lm, (pid_t)s->pid, s->ip, &img, &off);
    if (rc == DCPI_ENOENT && s->pid > 0 && !tried_before(d, (pid_t)s->pid)) {
        dcpi_loadmap_scan_proc(d->lm, (pid_t)s->pid);
        rc = dcpi_loadmap_resolve(d->lm, (pid_t)s->pid, s->ip, &img, &off);
    }
    if (rc == 0)
        add_count(d, img->index, s->event, off);
    else
        count_unknown(d, s->event);
}

/* A user-mode sample with user registers: to the value profilers. */
static void value_sample(daemon_t *d, const dcpi_sample_t *s)
{
    dcpi_vtrace_sample_t v = {
        .pid = s->pid, .tid = s->tid, .cpu = s->cpu, .time = s->time, .ip = s->ip};
    if (s->nchain > 1) /* chain[0] is the ip itself */
        v.context0 = s->chain[1];
    if (s->nchain > 2)
        v.context1 = s->chain[2];
    v.regs.valid = s->regs_mask & ((1ull << DCPI_REG_COUNT) - 1);
    memcpy(v.regs.r, s->regs, sizeof v.regs.r);
    dcpi_vtrace_sample(d->vt, &v);
}

static void on_sample(void *arg, const dcpi_sample_t *s)
{
    daemon_t *d = arg;
    int mode = s->misc & PERF_RECORD_MISC_CPUMODE_MASK;
    d->st[s->event].samples++;
    d->total_samples++;
    if (mode == PERF_RECORD_MISC_KERNEL) {
        uint64_t off = s->ip - d->ktstart;
        if (d->kernel_ok && s->ip >= d->ktstart && off <= UINT32_MAX)
            add_count(d, DCPI_AGG_IMAGE_KERNEL, s->event, (uint32_t)off);
        else
            count_unknown(d, s->event);
    } else if (mode == PERF_RECORD_MISC_USER) {
        user_sample(d, s);
        if (d->vt && s->event == 0 && s->regs_abi != 0)
            value_sample(d, s);
        if (d->vs && s->event == 0)
            dcpi_vstep_sample(d->vs, s->pid, s->tid);
    } else {
        count_unknown(d, s->event);
    }
    if (d->stk)
        dcpi_dstacks_add(d->stk, s);
}

static void on_mmap2(void *arg, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
                     uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path)
{
    daemon_t *d = arg;
    if (d->vt) /* pending value traces of pid resolve with the old mappings */
        dcpi_vtrace_pid_event(d->vt, (pid_t)pid);
    dcpi_loadmap_mmap(d->lm, (pid_t)pid, addr, len, pgoff, maj, min, ino, prot, path);
}

static void on_exec(void *arg, uint32_t pid)
{
    daemon_t *d = arg;
    if (d->vs) /* step records of the old image (rings mapped so far) */
        dcpi_vstep_drain(d->vs);
    if (d->vt)
        dcpi_vtrace_pid_event(d->vt, (pid_t)pid);
    dcpi_loadmap_exec(d->lm, (pid_t)pid);
}

static void on_fork(void *arg, uint32_t ppid, uint32_t pid)
{
    dcpi_loadmap_fork(((daemon_t *)arg)->lm, (pid_t)ppid, (pid_t)pid);
}

static void apply_exits(daemon_t *d)
{
    for (size_t i = 0; i < d->nexits; i++)
        dcpi_loadmap_exit(d->lm, d->exits[i]);
    d->nexits = 0;
}

/* Exits are applied after the drain so that late samples of the process still resolve. */
static void on_exit_rec(void *arg, uint32_t pid)
{
    daemon_t *d = arg;
    if (d->nexits == MAXEXITS)
        apply_exits(d);
    d->exits[d->nexits++] = (pid_t)pid;
}

static void on_lost(void *arg, int ev, uint64_t n)
{
    daemon_t *d = arg;
    d->st[ev].lost += n;
    d->st[ev].lost_pending += n;
}

static void on_throttle(void *arg, int ev)
{
    daemon_t *d = arg;
    d->st[ev].throttled++;
    if (!d->throttle_logged++)
        dcpi__log(DCPI_LOG_WARN,
                  "event %s throttled by the kernel (samples not taken; see "
                  "\"throttled\" in status)",
                  d->evs[ev].name);
}

static const dcpi_sampler_handler_t *handler(daemon_t *d)
{
    static dcpi_sampler_handler_t h = {.sample = on_sample,
                                       .mmap2 = on_mmap2,
                                       .exec = on_exec,
                                       .fork = on_fork,
                                       .exit = on_exit_rec,
                                       .lost = on_lost,
                                       .throttle = on_throttle};
    h.arg = d;
    return &h;
}

/* Drain ring i; the value traces it produced go to the plugins before exits are applied. */
static void drain_ring(daemon_t *d, int i)
{
    dcpi_sampler_drain(d->smp, i, handler(d));
    if (d->vt)
        dcpi_vtrace_end_drain(d->vt);
}

static void drain_all(daemon_t *d)
{
    for (int i = 0; i < dcpi_sampler_nrings(d->smp); i++)
        drain_ring(d, i);
    if (d->vs) {
        if (dcpi_vstep_tick(d->vs) && d->mode == DCPI_SAMPLE_PID && !d->quit) {
            dcpi__log(DCPI_LOG_INFO, "process %d exited", (int)d->o->pid);
            d->quit = 1;
        }
        dcpi_vtrace_end_drain(d->vt);
    }
    apply_exits(d);
}

/* ---------------------------------------------------------------- flushing */

typedef struct image_desc {
    const char *path, *id;
    uint64_t tstart, tsize;
} image_desc_t;

static void describe_image(const daemon_t *d, uint32_t index, image_desc_t *out)
{
    if (index == DCPI_AGG_IMAGE_KERNEL) {
        *out = (image_desc_t){"[kernel.kallsyms]", d->kid, d->ktstart, d->ktsize};
        return;
    }
    const dcpi_image_t *img = dcpi_loadmap_image(d->lm, index);
    *out = (image_desc_t){img->path, img->info.id, img->info.tstart, img->info.tsize};
}

static uint64_t event_period(const daemon_t *d, int ev)
{
    const dcpi_event_spec_t *e = &d->evs[ev];
    if (e->period)
        return e->period;
    /* frequency mode: the nominal period at the nominal clock */
    return d->cpuspeed ? (uint64_t)d->cpuspeed * 1000000 / e->freq : 1;
}

static int set_header(const daemon_t *d, dcpi_profile_t *p, const image_desc_t *im, int ev,
                      uint64_t lost)
{
    const dcpi_event_spec_t *e = &d->evs[ev];
    uint64_t period = event_period(d, ev);
    int rc = dcpi_profile_set(p, "version", DCPI_PROFILE_VERSION);
    rc = rc ? rc : dcpi_profile_set(p, "image", im->id);
    rc = rc ? rc : dcpi_profile_set(p, "epoch", d->epoch);
    rc = rc ? rc : dcpi_profile_set(p, "platform", d->platform);
    rc = rc ? rc : dcpi_profile_set(p, "event", e->name);
    rc = rc ? rc : dcpi_profile_setf(p, "period", "%" PRIu64, period);
    rc = rc ? rc : dcpi_profile_setf(p, "tstart", "0x%" PRIx64, im->tstart);
    rc = rc ? rc : dcpi_profile_setf(p, "tsize", "%" PRIu64, im->tsize);
    rc = rc ? rc : dcpi_profile_setf(p, "cpuspeed", "%u", d->cpuspeed);
    rc = rc ? rc : dcpi_profile_setf(p, "cpucount", "%d", d->cpucount);
    rc = rc ? rc : dcpi_profile_set(p, "path", im->path);
    rc = rc ? rc : dcpi_profile_setf(p, "lost", "%" PRIu64, lost);
    return rc;
}

static void profile_path(const daemon_t *d, const char *dirname, int ev, char *dir, size_t dlen,
                         char *file, size_t flen)
{
    pathf(dir, dlen, "%s/%s/%s/%s", d->db, d->epoch, d->platform, dirname);
    pathf(file, flen, "%s/%s.prof", dir, d->evs[ev].name);
}

/* Write (merge) one profile into the current epoch. */
static int write_profile(daemon_t *d, const image_desc_t *im, const char *dirname, int ev,
                         const dcpi_agg_entry_t *e, size_t n, uint64_t lost, char *err)
{
    char dir[4096], file[4200];
    profile_path(d, dirname, ev, dir, sizeof dir, file, sizeof file);
    dcpi_profile_t *p = NULL;
    int rc = dcpi_profile_new(&p);
    if (rc == 0)
        rc = set_header(d, p, im, ev, lost);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t c = e[i].count > UINT32_MAX ? UINT32_MAX : e[i].count;
        if (dcpi_profile_add(p, e[i].offset, (uint32_t)c) == DCPI_ERANGE)
            dcpi__log(DCPI_LOG_WARN, "%s: count saturated at offset 0x%x", file, e[i].offset);
    }
    if (rc < 0)
        fail(err, rc, "%s: %s", file, dcpi_strerror(rc));
    else if ((rc = dcpi__mkdirs(dir, 0755)) < 0)
        fail(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    else
        rc = dcpi_profile_merge_write(file, p, err);
    dcpi_profile_free(p);
    return rc;
}

static void write_kallsyms(daemon_t *d, const char *dirname)
{
    char path[4400];
    pathf(path, sizeof path, "%s/%s/%s/%s/kallsyms", d->db, d->epoch, d->platform, dirname);
    if (access(path, F_OK) == 0) {
        d->kallsyms_done = 1;
        return;
    }
    size_t len = 0;
    char *text = kallsyms_text(&len), err[DCPI_ERRLEN];
    if (text && dcpi__write_atomic(path, text, len, err) == 0)
        d->kallsyms_done = 1;
    else
        dcpi__log(DCPI_LOG_ERR, "%s", text ? err : "/proc/kallsyms: cannot read");
    free(text);
}

typedef struct flush_result {
    size_t profiles, failures;
    uint64_t samples;
} flush_result_t;

static void flush_group(daemon_t *d, const dcpi_agg_entry_t *e, size_t n, flush_result_t *r)
{
    image_desc_t im;
    char dirname[512], err[DCPI_ERRLEN];
    describe_image(d, e[0].image, &im);
    dcpi_image_dirname(im.path, im.id, dirname, sizeof dirname);
    uint64_t samples = 0;
    for (size_t i = 0; i < n; i++)
        samples += e[i].count;
    if (write_profile(d, &im, dirname, e[0].event, e, n, 0, err) < 0) {
        dcpi__log(DCPI_LOG_ERR, "flush: %s", err);
        pathf(d->flush_error, sizeof d->flush_error, "%s", err);
        r->failures++;
        return;
    }
    if (e[0].image == DCPI_AGG_IMAGE_KERNEL && !d->kallsyms_done)
        write_kallsyms(d, dirname);
    dcpi_agg_clear(d->agg, e, n);
    r->profiles++;
    r->samples += samples;
}

static void flush_unknown(daemon_t *d, int ev, flush_result_t *r)
{
    ev_stats_t *s = &d->st[ev];
    if (!s->unknown_pending && !s->lost_pending)
        return;
    char dirname[DCPI_NAMELEN + 16], err[DCPI_ERRLEN];
    snprintf(dirname, sizeof dirname, "unknown@%s", d->platform);
    image_desc_t im = {"unknown", "0", 0, 0};
    dcpi_agg_entry_t e = {.offset = 0, .count = s->unknown_pending};
    if (write_profile(d, &im, dirname, ev, &e, s->unknown_pending ? 1 : 0, s->lost_pending, err) <
        0) {
        dcpi__log(DCPI_LOG_ERR, "flush: %s", err);
        pathf(d->flush_error, sizeof d->flush_error, "%s", err);
        r->failures++;
        return;
    }
    r->profiles++;
    r->samples += s->unknown_pending;
    s->unknown_pending = s->lost_pending = 0;
}

/* Add one writer's result (files written, or the failures and their message) to r. */
static void account_flush(daemon_t *d, flush_result_t *r, int rc, size_t failed, const char *err)
{
    if (rc >= 0) {
        r->profiles += (size_t)rc;
        return;
    }
    pathf(d->flush_error, sizeof d->flush_error, "%s", err);
    r->failures += failed;
}

/* The value profiles (vtrace.c keeps what it could not write). */
static void flush_values(daemon_t *d, flush_result_t *r)
{
    dcpi_vtrace_flush_info_t fi = {.db = d->db,
                                   .epoch = d->epoch,
                                   .platform = d->platform,
                                   .event = d->evs[0].name,
                                   .period = event_period(d, 0),
                                   .cpuspeed = d->cpuspeed,
                                   .cpucount = d->cpucount};
    size_t failed = 0;
    char err[DCPI_ERRLEN] = "";
    account_flush(d, r, dcpi_vtrace_flush(d->vt, &fi, &failed, err), failed, err);
}

/* The stack profiles (-g; dstacks.c keeps what it could not write). */
static void flush_stacks(daemon_t *d, flush_result_t *r)
{
    const char *names[DCPI_SAMPLER_MAXEV];
    uint64_t periods[DCPI_SAMPLER_MAXEV];
    for (int i = 0; i < d->nev; i++) {
        names[i] = d->evs[i].name;
        periods[i] = event_period(d, i);
    }
    dcpi_dstacks_flush_info_t fi = {.db = d->db,
                                    .epoch = d->epoch,
                                    .platform = d->platform,
                                    .events = names,
                                    .periods = periods,
                                    .cpuspeed = d->cpuspeed};
    size_t failed = 0;
    char err[DCPI_ERRLEN] = "";
    account_flush(d, r, dcpi_dstacks_flush(d->stk, &fi, &failed, err), failed, err);
}

/* Write everything in memory; what could not be written stays for the next flush. */
static int flush(daemon_t *d, flush_result_t *r)
{
    double t0 = mono_now();
    size_t n = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(d->agg, &n);
    *r = (flush_result_t){0};
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && e[j].image == e[i].image && e[j].event == e[i].event)
            j++;
        flush_group(d, e + i, j - i, r);
        i = j;
    }
    for (int ev = 0; ev < d->nev; ev++)
        flush_unknown(d, ev, r);
    if (d->vt)
        flush_values(d, r);
    if (d->stk)
        flush_stacks(d, r);
    d->last_flush = mono_now();
    d->samples_at_flush = d->total_samples;
    if (r->failures) {
        d->last_fail = d->last_flush;
        dcpi__log(DCPI_LOG_ERR, "flush: %zu profiles failed, their samples are kept", r->failures);
        return DCPI_EIO;
    }
    dcpi_agg_reset(d->agg);
    d->flush_error[0] = 0;
    d->last_flush_wall = time(NULL);
    d->flushed_profiles = r->profiles;
    dcpi__log(DCPI_LOG_INFO, "flush: %zu profiles, %" PRIu64 " samples, %.0f ms", r->profiles,
              r->samples, (d->last_flush - t0) * 1000);
    return 0;
}

static void flush_if_full(daemon_t *d)
{
    int values = d->vt && dcpi_vtrace_needs_flush(d->vt);
    int stacks = d->stk && dcpi_dstacks_needs_flush(d->stk);
    if ((!dcpi_agg_needs_flush(d->agg) && !values && !stacks) ||
        mono_now() - d->last_fail < FAIL_RETRY_S)
        return;
    if (stacks)
        dcpi__log(DCPI_LOG_INFO, "stack profile 75%% full, flushing early");
    else if (values)
        dcpi__log(DCPI_LOG_INFO, "value summaries 75%% full (%zu/%zu), flushing early",
                  dcpi_vtrace_used(d->vt), dcpi_vtrace_capacity(d->vt));
    else
        dcpi__log(DCPI_LOG_INFO, "hash table 75%% full, flushing early");
    flush_result_t r;
    flush(d, &r);
}

/* -vrecord: the recording goes on in the new epoch's values.trace. */
static int new_epoch_values(daemon_t *d, char *err)
{
    dcpi_vtrace_flush_info_t fi = {.db = d->db,
                                   .epoch = d->epoch,
                                   .platform = d->platform,
                                   .event = d->evs[0].name,
                                   .period = event_period(d, 0),
                                   .cpuspeed = d->cpuspeed,
                                   .cpucount = d->cpucount};
    return dcpi_vtrace_new_epoch(d->vt, &fi, err);
}

static int new_epoch(daemon_t *d, char *err)
{
    char name[DCPI_NAMELEN];
    int rc = dcpi_db_new_epoch(d->db, d->platform, time(NULL), name, err);
    if (rc < 0)
        return rc;
    snprintf(d->epoch, sizeof d->epoch, "%s", name);
    d->kallsyms_done = 0;
    dcpi__log(DCPI_LOG_INFO, "epoch %s (%s/%s/%s)", name, d->db, name, d->platform);
    return d->vt ? new_epoch_values(d, err) : 0;
}

/* ---------------------------------------------------------------- control socket server */

typedef struct answer {
    char buf[8192];
    size_t len;
} answer_t;

static void say(answer_t *a, const char *fmt, ...) DCPI_PRINTF(2, 3);
static void say(answer_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->buf + a->len, sizeof a->buf - a->len - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    a->len += (size_t)n < sizeof a->buf - a->len - 2 ? (size_t)n : sizeof a->buf - a->len - 2;
    a->buf[a->len++] = '\n';
    a->buf[a->len] = 0;
}

static double current_rate(const daemon_t *d)
{
    double now = mono_now();
    double since = d->last_flush > 0 && now - d->last_flush >= 1 ? d->last_flush : d->start;
    uint64_t base = since == d->start ? 0 : d->samples_at_flush;
    return now > since ? (double)(d->total_samples - base) / (now - since) : 0;
}

static void status_events(const daemon_t *d, answer_t *a)
{
    dcpi_sampler_stats_t ss;
    dcpi_sampler_stats(d->smp, &ss);
    for (int i = 0; i < d->nev; i++) {
        const dcpi_event_spec_t *e = &d->evs[i];
        char period[32];
        if (e->period)
            snprintf(period, sizeof period, "%" PRIu64, e->period);
        else
            snprintf(period, sizeof period, "freq:%" PRIu64, e->freq);
        say(a, "event %s period %s samples %" PRIu64 " lost %" PRIu64 " throttled %" PRIu64,
            e->name, period, d->st[i].samples, d->st[i].lost, d->st[i].throttled);
    }
    if (ss.bad_records)
        say(a, "bad records %" PRIu64, ss.bad_records);
}

static void status_values(const daemon_t *d, answer_t *a)
{
    for (unsigned i = 0; i < dcpi_vtrace_nplugins(d->vt); i++) {
        dcpi_vtrace_stats_t st;
        dcpi_vtrace_plugin_stats(d->vt, i, &st);
        say(a,
            "vtrace %s traces %" PRIu64 " values %" PRIu64 " seen %" PRIu64 " lost %" PRIu64
            " errors %" PRIu64 "%s%s",
            dcpi_vtrace_plugin_name(d->vt, i), st.traces, st.values, st.seen, st.lost, st.errors,
            st.disabled ? " disabled: " : "", st.disabled ? dcpi_vtrace_plugin_why(d->vt, i) : "");
    }
    dcpi_tracefile_stats_t rs;
    if (dcpi_vtrace_record_stats(d->vt, &rs) == 0)
        say(a, "vrecord bytes %" PRIu64 " traces %" PRIu64 " refused %" PRIu64, rs.bytes, rs.traces,
            rs.refused);
    say(a, "vrate %u/s per CPU", dcpi_vtrace_rate(d->vt));
    say(a, "value samples without code %" PRIu64 " unresolved %" PRIu64, dcpi_vtrace_nocode(d->vt),
        dcpi_vtrace_unresolved(d->vt));
    say(a, "vhash %zu/%zu", dcpi_vtrace_used(d->vt), dcpi_vtrace_capacity(d->vt));
}

static void status_vstep(const daemon_t *d, answer_t *a)
{
    char buf[512], *save = NULL;
    dcpi_vstep_status(d->vs, buf, sizeof buf);
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        say(a, "%s", l);
}

static void status(daemon_t *d, answer_t *a)
{
    dcpi_loadmap_stats_t ls;
    dcpi_loadmap_stats(d->lm, &ls);
    uint64_t unknown = 0;
    for (int i = 0; i < d->nev; i++)
        unknown += d->st[i].unknown;
    say(a, "epoch %s", d->epoch);
    say(a, "platform %s", d->platform);
    say(a, "pid %d", (int)getpid());
    say(a, "uptime %.0f s", mono_now() - d->start);
    status_events(d, a);
    say(a, "images %lu", ls.images);
    say(a, "processes %lu", ls.processes);
    say(a, "unknown %" PRIu64, unknown);
    say(a, "rate %.0f samples/s", current_rate(d));
    say(a, "hash %zu/%zu", dcpi_agg_used(d->agg), dcpi_agg_capacity(d->agg));
    if (d->vt)
        status_values(d, a);
    if (d->vs)
        status_vstep(d, a);
    if (d->stk) {
        dcpi_dstacks_stats_t ss;
        dcpi_dstacks_stats(d->stk, &ss);
        say(a, "stacks chains %" PRIu64 " lost %" PRIu64 " truncated %" PRIu64, ss.chains, ss.lost,
            ss.truncated);
    }
    if (d->flush_error[0]) {
        say(a, "last flush error: %s", d->flush_error);
    } else if (d->last_flush_wall) {
        char t[64];
        struct tm tm;
        gmtime_r(&d->last_flush_wall, &tm);
        strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%SZ", &tm);
        say(a, "last flush: %s (%" PRIu64 " profiles)", t, d->flushed_profiles);
    } else {
        say(a, "last flush: never");
    }
    say(a, "ok");
}

static int flush_answer(daemon_t *d, answer_t *a)
{
    flush_result_t r;
    drain_all(d);
    if (flush(d, &r) < 0) {
        say(a, "error: flush failed: %s", d->flush_error);
        return -1;
    }
    say(a, "flushed %zu profiles, %" PRIu64 " samples to %s", r.profiles, r.samples, d->epoch);
    return 0;
}

static void run_command(daemon_t *d, const char *cmd, answer_t *a)
{
    char err[DCPI_ERRLEN];
    dcpi__log(DCPI_LOG_INFO, "control: %s", cmd);
    if (strcmp(cmd, "status") == 0) {
        drain_all(d);
        status(d, a);
    } else if (strcmp(cmd, "flush") == 0) {
        if (flush_answer(d, a) == 0)
            say(a, "ok");
    } else if (strcmp(cmd, "epoch") == 0) {
        if (flush_answer(d, a) < 0)
            return;
        if (new_epoch(d, err) < 0)
            say(a, "error: %s", err);
        else
            say(a, "new epoch %s", d->epoch), say(a, "ok");
    } else if (strcmp(cmd, "quit") == 0) {
        d->quit = 1;
        if (d->vs) /* ptrace: detach first, the target runs on while we flush */
            dcpi_vstep_stop(d->vs);
        d->exit_code = flush_answer(d, a) == 0 ? 0 : 1;
        if (d->exit_code == 0)
            say(a, "ok");
    } else {
        say(a, "error: unknown command '%.60s' (flush, epoch, quit, status)", cmd);
    }
}

static int peer_allowed(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
        return 0;
    return cr.uid == 0 || cr.uid == getuid();
}

/* One line from the client, waiting at most 2 s (the loop is blocked meanwhile). */
static int read_command(int fd, char *buf, size_t size)
{
    size_t n = 0;
    while (n < size - 1) {
        ssize_t r = recv(fd, buf + n, size - 1 - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = 0;
        char *nl = strchr(buf, '\n');
        if (nl) {
            *nl = 0;
            return 0;
        }
    }
    return -1;
}

static void serve_client(daemon_t *d)
{
    int fd = accept4(d->sock_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    static answer_t a;
    a.len = 0;
    a.buf[0] = 0;
    char cmd[128];
    if (!peer_allowed(fd))
        say(&a, "error: permission denied");
    else if (read_command(fd, cmd, sizeof cmd) < 0)
        say(&a, "error: no command received");
    else
        run_command(d, cmd, &a);
    if (send(fd, a.buf, a.len, MSG_NOSIGNAL) < 0)
        dcpi__log(DCPI_LOG_WARN, "control: answer not sent: %s", strerror(errno));
    close(fd);
}

static int open_socket(daemon_t *d, char *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    dcpi_db_daemon_path(d->db, d->platform, "sock", d->sock_path, sizeof d->sock_path);
    if (strlen(d->sock_path) >= sizeof sa.sun_path)
        return fail(err, DCPI_EINVAL, "%s: path too long for a socket", d->sock_path);
    memcpy(sa.sun_path, d->sock_path, strlen(d->sock_path) + 1);
    unlink(d->sock_path); /* a stale socket: we hold the platform lock */
    d->sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    mode_t old = umask(0177); /* srw------- */
    int rc = d->sock_fd < 0 ? -1 : bind(d->sock_fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || listen(d->sock_fd, 16) < 0) {
        d->sock_path[0] = 0;
        return fail(err, -errno, "%s: %s", sa.sun_path, strerror(errno));
    }
    return 0;
}

/* ---------------------------------------------------------------- the loop */

static void child_exited(daemon_t *d)
{
    int st;
    if (d->child <= 0 || waitpid(d->child, &st, WNOHANG) != d->child)
        return;
    d->child = 0;
    d->quit = 1;
    d->exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    dcpi__log(DCPI_LOG_INFO, "command exited with status %d", d->exit_code);
}

static void on_signal(daemon_t *d)
{
    struct signalfd_siginfo si;
    while (read(d->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) {
            child_exited(d);
        } else if (sig == SIGHUP) {
            if (d->log_path[0] && dcpi__log_open(d->log_path) == 0)
                dcpi__log(DCPI_LOG_INFO, "SIGHUP: log reopened");
        } else if (d->child > 0) {
            kill(d->child, sig); /* the command decides; we exit with its status */
        } else {
            dcpi__log(DCPI_LOG_INFO, "signal %d: flushing and exiting", sig);
            d->quit = 1;
        }
    }
}

static void pid_check(daemon_t *d)
{
    if (d->mode == DCPI_SAMPLE_PID && d->pidfd < 0 && kill(d->o->pid, 0) < 0 && errno == ESRCH) {
        dcpi__log(DCPI_LOG_INFO, "process %d exited", (int)d->o->pid);
        d->quit = 1;
    }
}

static void on_timer(daemon_t *d)
{
    uint64_t ticks;
    if (read(d->tfd, &ticks, sizeof ticks) < 0)
        return;
    drain_all(d);
    pid_check(d);
    if (mono_now() >= d->next_flush) {
        flush_result_t r;
        flush(d, &r);
        d->next_flush = mono_now() + d->o->flush_s;
    }
}

static void on_ring(daemon_t *d, int ring, uint32_t events)
{
    drain_ring(d, ring);
    if (events & (EPOLLHUP | EPOLLERR))
        epoll_ctl(d->epfd, EPOLL_CTL_DEL, dcpi_sampler_ring_fd(d->smp, ring), NULL);
}

static void dispatch_event(daemon_t *d, const struct epoll_event *ev)
{
    uint64_t tag = ev->data.u64;
    if (tag >= TAG_RING)
        on_ring(d, (int)(tag - TAG_RING), ev->events);
    else if (tag == TAG_TIMER)
        on_timer(d);
    else if (tag == TAG_SIGNAL)
        on_signal(d);
    else if (tag == TAG_SOCK)
        serve_client(d);
    else if (tag == TAG_PIDFD) {
        dcpi__log(DCPI_LOG_INFO, "process %d exited", (int)d->o->pid);
        d->quit = 1;
    }
}

static void loop(daemon_t *d)
{
    struct epoll_event evs[64];
    while (!d->quit) {
        int timeout = d->vs ? dcpi_vstep_timeout_ms(d->vs) : -1;
        int n = epoll_wait(d->epfd, evs, 64, timeout);
        if (n < 0 && errno != EINTR) {
            dcpi__log(DCPI_LOG_ERR, "epoll_wait: %s", strerror(errno));
            d->exit_code = 1;
            break;
        }
        for (int i = 0; i < n && !d->quit; i++)
            dispatch_event(d, &evs[i]);
        /* -vstep -p: samples admit bursts, run them soon; -vstep: the step records of exited
         * processes are drained (with every ring's mappings applied) before they are forgotten */
        if (d->vs && !d->quit && (timeout >= 0 || d->nexits))
            drain_all(d);
        apply_exits(d);
        flush_if_full(d);
    }
}

/* The final drain and flush at exit. */
static void finish(daemon_t *d)
{
    flush_result_t r;
    if (d->vs) /* ptrace: the target runs on undisturbed while we flush */
        dcpi_vstep_stop(d->vs);
    drain_all(d);
    if (flush(d, &r) < 0 && d->exit_code == 0)
        d->exit_code = 1;
    dcpi__log(DCPI_LOG_INFO, "exiting with status %d", d->exit_code);
}

/* ---------------------------------------------------------------- setup */

static int absolute(const char *path, char *out, size_t len)
{
    char cwd[4096];
    if (path[0] == '/' || !getcwd(cwd, sizeof cwd))
        return snprintf(out, len, "%s", path) >= (int)len ? -1 : 0;
    return snprintf(out, len, "%s/%s", cwd, path) >= (int)len ? -1 : 0;
}

static int setup_db(daemon_t *d, char *err)
{
    const char *db = dcpi_db_default(d->o->db);
    if (absolute(db, d->db, sizeof d->db) < 0)
        return fail(err, DCPI_EINVAL, "%s: path too long", db);
    int rc = dcpi__mkdirs(d->db, 0755);
    if (rc < 0)
        return fail(err, rc, "%s: %s", d->db, dcpi_strerror(rc));
    rc = dcpi_db_platform(d->db, d->platform, err);
    return rc < 0 ? rc : 0;
}

static int setup_log(daemon_t *d, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi__log_level(o->verbose ? DCPI_LOG_DEBUG : o->quiet ? DCPI_LOG_WARN : DCPI_LOG_INFO);
    if (o->log)
        absolute(o->log, d->log_path, sizeof d->log_path);
    else if (d->mode != DCPI_SAMPLE_SYSTEM || !o->nodaemon)
        dcpi_db_daemon_path(d->db, d->platform, "log", d->log_path, sizeof d->log_path);
    if (d->log_path[0] && dcpi__log_open(d->log_path) < 0)
        return fail(err, -errno, "%s: %s", d->log_path, strerror(errno));
    return 0;
}

static int add_event(daemon_t *d, const char *arg, char *err)
{
    dcpi_event_spec_t *e = &d->evs[d->nev];
    char why[DCPI_ERRLEN];
    int rc = dcpi_event_parse(arg, d->o->freq, e, err);
    if (rc < 0)
        return rc;
    for (int i = 0; i < d->nev; i++)
        if (strcmp(d->evs[i].name, e->name) == 0)
            return fail(err, DCPI_EINVAL, "event %s: given twice", e->name);
    rc = dcpi_event_probe(e, why);
    if (rc < 0 && rc != -EACCES && rc != -EPERM)
        return fail(err, DCPI_ENOTSUP, "event %s: not supported on this machine (%s)", e->name,
                    why);
    d->nev++;
    return 0;
}

static int setup_events(daemon_t *d, char *err)
{
    if (d->o->nevents == 0) {
        char why[DCPI_ERRLEN];
        if (dcpi_event_parse("cycles", d->o->freq, &d->evs[0], err) < 0)
            return DCPI_EINVAL;
        if (dcpi_event_probe(&d->evs[0], why) == 0) {
            d->nev = 1;
            return 0;
        }
        dcpi__log(DCPI_LOG_INFO, "event cycles not supported here (%s), using cpu-clock", why);
        return add_event(d, "cpu-clock", err);
    }
    for (int i = 0; i < d->o->nevents; i++) {
        int rc = add_event(d, d->o->events[i], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int open_sampler(daemon_t *d, pid_t target, char *err)
{
    char why[DCPI_ERRLEN] = "";
    int no_kernel = 0;
    dcpi_sampler_opts_t x = {0};
    if (d->vt && !d->o->vstep) { /* -vstep: values come from the bursts */
        x.regs_user = dcpi_vtrace_regs_mask(d->vt);
        x.callchain = dcpi_vtrace_contexts(d->vt);
        x.max_stack = 4;
    }
    if (d->o->callgraph) {
        x.callchain = x.callchain_kernel = 1;
        x.max_stack = DCPI_DSTACKS_MAX_STACK;
    }
    int rc = dcpi_sampler_open_ex(d->evs, d->nev, d->mode, target, &x, &d->smp, &no_kernel, why);
    if (rc == DCPI_ESRCH && d->mode == DCPI_SAMPLE_PID)
        return fail(err, rc, "-p %d: no such process", (int)target);
    if ((rc == -EACCES || rc == -EPERM) && d->mode == DCPI_SAMPLE_SYSTEM)
        return fail(err, rc, "system-wide sampling needs root or CAP_PERFMON (%s)", why);
    if (rc < 0)
        return fail(err, rc, "%s", why);
    if (no_kernel)
        dcpi__log(DCPI_LOG_INFO, "kernel samples not allowed here: sampling user mode only");
    dcpi__log(DCPI_LOG_INFO, "%d events on %d rings", dcpi_sampler_nfds(d->smp),
              dcpi_sampler_nrings(d->smp));
    return 0;
}

static int epoll_add(daemon_t *d, int fd, uint64_t tag)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = tag};
    return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static int setup_fds(daemon_t *d, const sigset_t *sigs, char *err)
{
    d->epfd = epoll_create1(EPOLL_CLOEXEC);
    d->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    d->sfd = signalfd(-1, sigs, SFD_CLOEXEC | SFD_NONBLOCK);
    if (d->mode == DCPI_SAMPLE_PID)
        d->pidfd = (int)syscall(SYS_pidfd_open, d->o->pid, 0);
    if (d->epfd < 0 || d->tfd < 0 || d->sfd < 0)
        return fail(err, -errno, "epoll/timerfd/signalfd: %s", strerror(errno));
    long ms = d->mode == DCPI_SAMPLE_PID && d->pidfd < 0 ? 100 : 250;
    struct itimerspec it = {.it_interval = {0, ms * 1000000}, .it_value = {0, ms * 1000000}};
    int rc = timerfd_settime(d->tfd, 0, &it, NULL);
    rc = rc ? rc : epoll_add(d, d->tfd, TAG_TIMER);
    rc = rc ? rc : epoll_add(d, d->sfd, TAG_SIGNAL);
    rc = rc ? rc : epoll_add(d, d->sock_fd, TAG_SOCK);
    if (rc == 0 && d->pidfd >= 0)
        rc = epoll_add(d, d->pidfd, TAG_PIDFD);
    for (int i = 0; rc == 0 && i < dcpi_sampler_nrings(d->smp); i++)
        rc = epoll_add(d, dcpi_sampler_ring_fd(d->smp, i), TAG_RING + (uint64_t)i);
    return rc < 0 ? fail(err, -errno, "epoll_ctl: %s", strerror(errno)) : 0;
}

static int setup_tables(daemon_t *d, char *err)
{
    int cpus[1024];
    d->cpucount = dcpi_online_cpus(cpus, 1024);
    d->cpuspeed = read_cpuspeed();
    int rc = dcpi_loadmap_new(&d->lm);
    if (rc == 0)
        rc = dcpi_agg_new(d->o->hash ? d->o->hash : DCPI_AGG_DEFAULT_ENTRIES, &d->agg);
    if (rc < 0)
        return fail(err, rc, "setup: %s", dcpi_strerror(rc));
    read_kernel_range(d);
    if (d->o->callgraph) {
        dcpi_dstacks_kernel_t k = {d->kernel_ok, d->kid, d->ktstart, d->ktsize};
        if ((rc = dcpi_dstacks_new(d->lm, d->nev, &k, &d->stk)) < 0)
            return fail(err, rc, "-g: %s", dcpi_strerror(rc));
    }
    return 0;
}

/* -vtrace: load the plugins and ask each what to capture. */
static int setup_values(daemon_t *d, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    if (o->nvtrace == 0)
        return 0;
    int rc = dcpi_vp_set_new(&d->vps);
    if (rc < 0)
        return fail(err, rc, "-vtrace: %s", dcpi_strerror(rc));
    dcpi_vp_set_allow_insecure(d->vps, o->vinsecure);
    for (int i = 0; i < o->nvtrace; i++) {
        dcpi_vp_t *vp;
        if ((rc = dcpi_vp_load(d->vps, o->vtrace[i], &vp, err)) < 0)
            return rc;
        dcpi__log(DCPI_LOG_INFO, "value profiler %s loaded from %s", dcpi_vp_name(vp),
                  dcpi_vp_path(vp));
    }
    dcpi_vtrace_opts_t vo = {
        .rate = o->vrate, .hotsize = o->vhot, .max_summaries = o->vhash, .contexts = o->vcontext};
    vo.isolate = !o->vinproc;
    vo.timeout_ms = o->vtimeout_s * 1000u;
    vo.record = o->vrecord;
    vo.record_max = (uint64_t)(o->vrecord_max ? o->vrecord_max : DCPI_DAEMON_DEFAULT_VRECORD_MB)
                    << 20;
    if ((rc = dcpi_vtrace_new(d->vps, d->lm, &vo, &d->vt, err)) < 0)
        return rc;
    if (o->vstep)
        dcpi__log(DCPI_LOG_INFO,
                  "value profiling: %u plugins, step backend, bursts of %u, %u bursts/s per "
                  "thread",
                  dcpi_vtrace_nplugins(d->vt), o->vburst ? o->vburst : DCPI_DAEMON_DEFAULT_VBURST,
                  o->vrate ? o->vrate : DCPI_DAEMON_DEFAULT_VSTEP_RATE);
    else
        dcpi__log(DCPI_LOG_INFO,
                  "value profiling: %u plugins, regs mask 0x%" PRIx64 ", %u traces/s per CPU%s",
                  dcpi_vtrace_nplugins(d->vt), dcpi_vtrace_regs_mask(d->vt),
                  dcpi_vtrace_rate(d->vt), o->vcontext ? ", contexts" : "");
    return 0;
}

static uint64_t ns_per_sample(const daemon_t *d)
{
    const dcpi_event_spec_t *e = &d->evs[0];
    if (e->type == PERF_TYPE_SOFTWARE && e->period)
        return e->period; /* cpu-clock, task-clock: nanoseconds */
    return 1000000000ull / (e->freq ? e->freq : d->o->freq ? d->o->freq : 1000);
}

/* -vstep: the agent (before the command is spawned) or ptrace (target: the -p process). */
static int setup_vstep(daemon_t *d, pid_t target, char *err)
{
    const dcpi_daemon_opts_t *o = d->o;
    dcpi_vstep_opts_t so = {.burst = o->vburst ? o->vburst : DCPI_DAEMON_DEFAULT_VBURST,
                            .rate = o->vrate ? o->vrate : DCPI_DAEMON_DEFAULT_VSTEP_RATE,
                            .plugin_dirs = o->plugin_dirs,
                            .ns_per_sample = ns_per_sample(d)};
    if (d->mode == DCPI_SAMPLE_COMMAND)
        return dcpi_vstep_agent_new(d->vt, &so, &d->vs, err);
    return dcpi_vstep_ptrace_new(d->vt, &so, target, &d->vs, err);
}

/* The part of the setup before the target runs: database, log, lock, events, plugins. */
static int setup_base(daemon_t *d, char *err)
{
    int rc = setup_db(d, err);
    rc = rc < 0 ? rc : setup_log(d, err);
    rc = rc < 0 ? rc : dcpi_db_lock(d->db, d->platform, &d->lock_fd, err);
    rc = rc < 0 ? rc : setup_events(d, err);
    rc = rc < 0 ? rc : setup_tables(d, err);
    rc = rc < 0 ? rc : setup_values(d, err);
    if (rc == 0 && d->o->vstep && d->mode == DCPI_SAMPLE_COMMAND)
        rc = setup_vstep(d, 0, err);
    return rc;
}

/* Events, epoch, loadmap scan, socket, fds, enable. */
static int setup_sampling(daemon_t *d, pid_t target, const sigset_t *sigs, char *err)
{
    if (d->mode == DCPI_SAMPLE_PID && kill(target, 0) < 0 && errno == ESRCH)
        return fail(err, DCPI_ESRCH, "-p %d: no such process", (int)target);
    int rc = open_sampler(d, target, err);
    rc = rc < 0 ? rc : new_epoch(d, err);
    if (rc < 0)
        return rc;
    if (d->mode != DCPI_SAMPLE_COMMAND)
        dcpi_loadmap_scan_proc(d->lm, d->mode == DCPI_SAMPLE_SYSTEM ? -1 : target);
    rc = open_socket(d, err);
    rc = rc < 0 ? rc : setup_fds(d, sigs, err);
    if (rc == 0 && d->mode != DCPI_SAMPLE_COMMAND && (rc = dcpi_sampler_enable(d->smp)) < 0)
        return fail(err, rc, "PERF_EVENT_IOC_ENABLE: %s", strerror(-rc));
    d->start = mono_now();
    d->next_flush = d->start + d->o->flush_s;
    return rc;
}

static void cleanup(daemon_t *d)
{
    if (d->sock_path[0])
        unlink(d->sock_path);
    int fds[] = {d->sock_fd, d->epfd, d->tfd, d->sfd, d->pidfd, d->lock_fd};
    for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    dcpi_sampler_close(d->smp);
    dcpi_vstep_free(d->vs);  /* before vtrace: its encoders write into vtrace's traces */
    dcpi_vtrace_free(d->vt); /* vp_prof_done, before the plugins are unloaded */
    dcpi_vp_set_free(d->vps);
    dcpi_dstacks_free(d->stk);
    dcpi_loadmap_free(d->lm);
    dcpi_agg_free(d->agg);
}

/* ---------------------------------------------------------------- modes */

/* Fork twice; the original process waits on a pipe for the daemon's "ok" or error line and
 * returns the exit status (>= 0). In the daemon returns -1 with *notify set. */
static int daemonize(int *notify)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return fprintf(stderr, "dcpid: pipe: %s\n", strerror(errno)), 1;
    pid_t pid = fork();
    if (pid < 0)
        return fprintf(stderr, "dcpid: fork: %s\n", strerror(errno)), 1;
    if (pid > 0) {
        close(p[1]);
        char msg[DCPI_ERRLEN + 16] = "";
        size_t n = 0;
        ssize_t r;
        while (n < sizeof msg - 1 && (r = read(p[0], msg + n, sizeof msg - 1 - n)) > 0)
            n += (size_t)r;
        msg[n] = 0;
        waitpid(pid, NULL, 0);
        if (strcmp(msg, "ok") == 0)
            return 0;
        fprintf(stderr, "%s\n", n ? msg : "dcpid: the daemon died during start-up");
        return 1;
    }
    close(p[0]);
    setsid();
    if (fork() != 0)
        _exit(0);
    *notify = p[1];
    return -1;
}

static void detach_stdio(void)
{
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0)
        return;
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
        close(fd);
    if (chdir("/") < 0)
        dcpi__log(DCPI_LOG_WARN, "chdir /: %s", strerror(errno));
}

static void report(int notify, const char *msg)
{
    if (notify < 0) {
        fprintf(stderr, "%s\n", msg);
        return;
    }
    ssize_t w = write(notify, msg, strlen(msg));
    (void)w;
}

/* The command's child: waits for the go byte, then execs. */
static pid_t spawn(char **argv, const sigset_t *orig, const dcpi_vstep_t *vs, int *go)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[1]);
        sigprocmask(SIG_SETMASK, orig, NULL);
        char c;
        if (read(p[0], &c, 1) != 1)
            _exit(127);
        if (vs && dcpi_vstep_child_env(vs) < 0) {
            fprintf(stderr, "dcpid: -vstep: cannot set the agent's environment\n");
            _exit(127);
        }
        execvp(argv[0], argv);
        fprintf(stderr, "dcpid: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(p[0]);
    if (pid < 0) {
        close(p[1]);
        return -1;
    }
    *go = p[1];
    return pid;
}

static void init_daemon(daemon_t *d, const dcpi_daemon_opts_t *o)
{
    d->o = o;
    d->mode = o->argv ? DCPI_SAMPLE_COMMAND : o->pid > 0 ? DCPI_SAMPLE_PID : DCPI_SAMPLE_SYSTEM;
    d->lock_fd = d->sock_fd = d->epfd = d->tfd = d->sfd = d->pidfd = -1;
}

/* Everything after the (possible) daemonizing fork. */
static int run(daemon_t *d, int notify, const sigset_t *sigs, const sigset_t *orig)
{
    char err[DCPI_ERRLEN] = "", msg[DCPI_ERRLEN + 16];
    int go = -1;
    int rc = setup_base(d, err);
    if (rc == 0 && d->mode == DCPI_SAMPLE_COMMAND) {
        d->child = spawn(d->o->argv, orig, d->vs, &go);
        if (d->child < 0)
            rc = fail(err, -errno, "fork: %s", strerror(errno));
    }
    pid_t target = d->mode == DCPI_SAMPLE_COMMAND ? d->child : d->o->pid;
    rc = rc < 0 ? rc : setup_sampling(d, target, sigs, err);
    if (rc == 0 && d->o->vstep && d->mode == DCPI_SAMPLE_PID)
        rc = setup_vstep(d, target, err);
    if (rc < 0) {
        snprintf(msg, sizeof msg, "dcpid: %s", err);
        if (d->log_path[0]) /* else the log is stderr, where msg goes too */
            dcpi__log(DCPI_LOG_ERR, "%s", err);
        report(notify, msg);
        if (go >= 0)
            close(go); /* the child exits without running the command */
        if (d->child > 0)
            waitpid(d->child, NULL, 0);
        return 1;
    }
    dcpi__log(DCPI_LOG_INFO, "dcpid ready: db %s platform %s epoch %s", d->db, d->platform,
              d->epoch);
    if (notify >= 0) {
        report(notify, "ok");
        close(notify);
        detach_stdio();
    }
    if (go >= 0 && (write(go, "g", 1) != 1 || close(go) < 0))
        dcpi__log(DCPI_LOG_WARN, "could not start the command: %s", strerror(errno));
    loop(d);
    finish(d);
    return d->exit_code;
}

int dcpi_daemon_run(const dcpi_daemon_opts_t *o)
{
    sigset_t sigs, orig;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGCHLD);
    sigaddset(&sigs, SIGHUP);
    sigprocmask(SIG_BLOCK, &sigs, &orig);
    int notify = -1;
    if (!o->argv && o->pid <= 0 && !o->nodaemon) {
        int status = daemonize(&notify);
        if (status >= 0)
            return status;
    }
    daemon_t *d = calloc(1, sizeof *d);
    if (!d) {
        report(notify, "dcpid: out of memory");
        return 1;
    }
    init_daemon(d, o);
    int status = run(d, notify, &sigs, &orig);
    cleanup(d);
    free(d);
    return status; /* signals stay blocked: a late SIGTERM must not kill us before exit */
}
