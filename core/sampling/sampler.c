/*
 * sampler.c - perf_event_open, the per-CPU ring buffers and the decoding of their records
 * (see sampler.h). Layout of the records follows linux/perf_event.h for the sample_type
 * IDENTIFIER|IP|TID|TIME|CPU|PERIOD with sample_id_all=1, optionally followed (value profiling)
 * by CALLCHAIN (nr, nr entries) and then REGS_USER (abi, one u64 per bit of the mask), in that
 * order.
 * One file (~650 lines): opening the events, mapping the rings and decoding their records share
 * the one sample_type layout above; keeping them together keeps that layout in one place.
 */
#include "core/sampling/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/sampling/thin.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

#define SAMPLE_TYPE                                                                                \
    (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |                \
     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define MAXCPU        1024
#define MAXREC        65536 /* header.size is 16 bits */
#define TRIGGER_PAGES 8     /* a trigger ring's data pages (dcpi_sampler_opts_t.trigger_rings) */

typedef struct ring {
    int fd, cpu;
    void *base;
    size_t map_len;
    unsigned char *data;
    uint64_t size;       /* data bytes, power of two */
    uint64_t head, tail; /* a merged drain's cursor */
    uint64_t next_time;  /* the time of the record at tail, when have_time */
    int have_time;
} ring_t;

typedef struct id_map {
    uint64_t id;
    int event;
} id_map_t;

struct dcpi_sampler {
    int nev;
    dcpi_sampler_opts_t x;
    int *fds;
    size_t nfds;
    id_map_t *ids; /* sorted by id */
    ring_t *rings;
    int nrings;
    ring_t *trings; /* the arm triggers' rings by ring index (trigger_rings; fd -1: none) */
    dcpi_sampler_stats_t stats;
    _Alignas(8) unsigned char copy[MAXREC]; /* a record that wraps the ring end */
    /* the same for dcpi_sampler_drain_ring, which a handler of a merged drain may call while
     * copy holds the record it was given */
    _Alignas(8) unsigned char copy_other[MAXREC];
};

static const struct {
    const char *name;
    uint32_t type;
    uint64_t config;
} known_events[] = {
    {"cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
};

static int parse_period(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || v == 0 || s[0] == '-')
        return DCPI_EINVAL;
    *out = v;
    return 0;
}

int dcpi_event_parse(const char *arg, unsigned hz, dcpi_event_spec_t *ev, char *err)
{
    memset(ev, 0, sizeof *ev);
    const char *colon = strchr(arg, ':');
    size_t len = colon ? (size_t)(colon - arg) : strlen(arg);
    for (size_t i = 0; i < sizeof known_events / sizeof known_events[0]; i++) {
        if (strlen(known_events[i].name) != len || strncmp(arg, known_events[i].name, len))
            continue;
        snprintf(ev->name, sizeof ev->name, "%s", known_events[i].name);
        ev->type = known_events[i].type;
        ev->config = known_events[i].config;
        if (colon) {
            if (parse_period(colon + 1, &ev->period) < 0)
                return dcpi__errf(err, DCPI_EINVAL, "event %s: bad period '%s'", ev->name,
                                  colon + 1);
        } else if (hz == 0 || hz > 1000000) {
            return dcpi__errf(err, DCPI_EINVAL, "event %s: bad frequency", ev->name);
        } else if (ev->type == PERF_TYPE_SOFTWARE) {
            /* 1e9/HZ lengthened by ~0.1% (an odd number of ns): an exact divisor of the kernel's
             * tick (1, 4, 10 ms) locks the samples to a phase of the tick's interrupt, and a run
             * whose phase sits there sees the kernel's tick work many times too often; with the
             * offset the phase sweeps the whole tick every ~4 s. */
            uint64_t p = 1000000000ULL / hz;
            ev->period = p + ((p / 997) | 1);
        } else {
            ev->freq = hz;
        }
        return 0;
    }
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(len < 60 ? len : 60), arg);
    return dcpi__errf(err, DCPI_EINVAL,
                      "event %s: unknown event (known: cpu-clock task-clock cycles instructions "
                      "branch-misses cache-misses)",
                      name);
}

static void fill_extra(struct perf_event_attr *a, const dcpi_sampler_opts_t *x)
{
    if (!x)
        return;
    if (x->regs_user) {
        a->sample_type |= PERF_SAMPLE_REGS_USER;
        a->sample_regs_user = x->regs_user;
    }
    if (x->callchain) {
        a->sample_type |= PERF_SAMPLE_CALLCHAIN;
        a->exclude_callchain_kernel = !x->callchain_kernel;
        a->sample_max_stack = (uint16_t)(x->max_stack ? x->max_stack : 4);
    }
}

static void fill_attr(struct perf_event_attr *a, const dcpi_event_spec_t *ev, int tracking,
                      int inherit, int on_exec, int no_kernel)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = ev->type;
    a->config = ev->config;
    if (ev->period) {
        a->sample_period = ev->period;
    } else {
        a->freq = 1;
        a->sample_freq = ev->freq;
    }
    a->sample_type = SAMPLE_TYPE;
    a->disabled = 1;
    a->inherit = inherit;
    a->enable_on_exec = on_exec;
    a->exclude_guest = 1;
    a->exclude_kernel = no_kernel;
    a->sample_id_all = 1;
    a->use_clockid = 1; /* times comparable with CLOCK_MONOTONIC (core/daemon/bparm.c) */
    a->clockid = CLOCK_MONOTONIC;
    a->watermark = 1;
    a->wakeup_watermark = (uint32_t)(DCPI_SAMPLER_DATA_PAGES * sysconf(_SC_PAGESIZE) / 2);
    if (tracking) {
        a->mmap = 1;
        a->mmap2 = 1;
        a->comm = 1;
        a->comm_exec = 1;
        a->task = 1;
    }
}

int dcpi__perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
    long fd = syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

int dcpi_event_probe(const dcpi_event_spec_t *ev, char *err)
{
    struct perf_event_attr a;
    fill_attr(&a, ev, 0, 0, 0, 1);
    int fd = dcpi__perf_open(&a, 0, -1);
    if (fd < 0)
        return dcpi__errf(err, fd, "perf_event_open: %s", strerror(-fd));
    close(fd);
    return 0;
}

static int parse_cpu_list(const char *s, int *cpus, int max)
{
    int n = 0;
    while (*s && *s != '\n' && n < max) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s)
            break;
        if (*end == '-')
            b = strtol(end + 1, &end, 10);
        for (long c = a; c <= b && n < max; c++)
            cpus[n++] = (int)c;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int dcpi_online_cpus(int *cpus, int max)
{
    char buf[4096] = "";
    FILE *f = fopen("/sys/devices/system/cpu/online", "re");
    int n = 0;
    if (f) {
        if (fgets(buf, sizeof buf, f))
            n = parse_cpu_list(buf, cpus, max);
        fclose(f);
    }
    if (n > 0)
        return n;
    long np = sysconf(_SC_NPROCESSORS_ONLN);
    for (n = 0; n < np && n < max; n++)
        cpus[n] = n;
    return n > 0 ? n : 1;
}

/* Thread ids of pid from /proc/pid/task (malloc'd). */
static int list_threads(pid_t pid, pid_t **out, size_t *n)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return DCPI_ESRCH;
    size_t cap = 16, k = 0;
    pid_t *t = malloc(cap * sizeof *t);
    struct dirent *de;
    while (t && (de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        if (dcpi__grow((void **)&t, &cap, k + 1, sizeof *t) < 0) {
            free(t);
            t = NULL;
            break;
        }
        t[k++] = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    if (!t)
        return DCPI_ENOMEM;
    *out = t;
    *n = k;
    return k ? 0 : DCPI_ESRCH;
}

static int map_ring(ring_t *r, int fd, int pages)
{
    long page = sysconf(_SC_PAGESIZE);
    r->map_len = (size_t)page * (size_t)(1 + pages);
    r->base = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r->base == MAP_FAILED) {
        r->base = NULL;
        return -errno;
    }
    struct perf_event_mmap_page *m = r->base;
    uint64_t off = m->data_offset ? m->data_offset : (uint64_t)page;
    r->size = m->data_size ? m->data_size : (uint64_t)page * (uint64_t)pages;
    r->data = (unsigned char *)r->base + off;
    r->fd = fd;
    return 0;
}

static int id_cmp(const void *x, const void *y)
{
    const id_map_t *a = x, *b = y;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Open state shared by the helpers of dcpi_sampler_open. */
typedef struct open_ctx {
    dcpi_sampler_t *s;
    const dcpi_event_spec_t *evs;
    enum dcpi_sampler_mode mode;
    int no_kernel;
    int cpu_ring[MAXCPU];  /* ring index of each CPU slot, -1 before */
    int cpu_of_slot;       /* the CPU of the slot being opened */
    char thin_out[MAXCPU]; /* the slot's bpf-output event for thinned triggers is open */
    char *err;
} open_ctx_t;

/* Open one event; retries once without kernel samples on EACCES/EPERM. */
static int open_one(open_ctx_t *c, int e, int tracking, pid_t pid, int cpu)
{
    struct perf_event_attr a;
    int inherit = c->mode != DCPI_SAMPLE_SYSTEM, on_exec = c->mode == DCPI_SAMPLE_COMMAND;
    fill_attr(&a, &c->evs[e], tracking, inherit, on_exec, c->no_kernel);
    fill_extra(&a, &c->s->x);
    int fd = dcpi__perf_open(&a, pid, cpu);
    if ((fd == -EACCES || fd == -EPERM) && !c->no_kernel) {
        c->no_kernel = 1;
        fill_attr(&a, &c->evs[e], tracking, inherit, on_exec, 1);
        fill_extra(&a, &c->s->x);
        fd = dcpi__perf_open(&a, pid, cpu);
    }
    return fd;
}

/* fd, of event e, among the sampler's fds, its id mapped to e (the records say their id). */
static int keep_fd(dcpi_sampler_t *s, int fd, int e)
{
    uint64_t id = 0;
    s->fds[s->nfds] = fd;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0)
        return -errno;
    s->ids[s->nfds++] = (id_map_t){.id = id, .event = e};
    return 0;
}

static int attach_fd(open_ctx_t *c, int fd, int e, int slot)
{
    dcpi_sampler_t *s = c->s;
    int rc = keep_fd(s, fd, e);
    if (rc < 0)
        return rc;
    if (c->cpu_ring[slot] >= 0) {
        int target = s->rings[c->cpu_ring[slot]].fd;
        return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, target) < 0 ? -errno : 0;
    }
    rc = map_ring(&s->rings[s->nrings], fd, DCPI_SAMPLER_DATA_PAGES);
    if (rc == 0) {
        s->rings[s->nrings].cpu = c->cpu_of_slot;
        c->cpu_ring[slot] = s->nrings++;
    }
    return rc;
}

/* The arm trigger (dcpi_sampler_opts_t.trigger_ns) of one target on one CPU, into the ring of
 * the events opened there just before. */
void dcpi_sampler_trigger_attr(const dcpi_sampler_opts_t *x, struct perf_event_attr *a)
{
    dcpi_event_spec_t ev = {
        .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK, .period = x->trigger_ns};
    fill_attr(a, &ev, 0, 0, 0, 1);
    fill_extra(a, x);
    a->watermark = 0;
    a->wakeup_events = 1;
}

/* A trigger into the trigger ring of slot's ring (the first one there maps it). */
static int attach_trigger_ring(open_ctx_t *c, int fd, int slot)
{
    dcpi_sampler_t *s = c->s;
    int rc = keep_fd(s, fd, DCPI_SAMPLER_EV_TRIGGER);
    if (rc < 0)
        return rc;
    ring_t *t = &s->trings[c->cpu_ring[slot]];
    if (t->fd >= 0)
        return ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, t->fd) < 0 ? -errno : 0;
    rc = map_ring(t, fd, TRIGGER_PAGES);
    if (rc < 0)
        t->fd = -1;
    t->cpu = c->cpu_of_slot;
    return rc;
}

/* Thinned triggers (dcpi_sampler_opts_t.thin): the program on this target's event 0 (the last
 * nev fds), and the slot's bpf-output event, opened for its first target. */
static int open_thin(open_ctx_t *c, int cpu, int slot)
{
    dcpi_sampler_t *s = c->s;
    int pc = s->fds[s->nfds - (size_t)s->nev];
    if (ioctl(pc, PERF_EVENT_IOC_SET_BPF, dcpi_thin_prog_fd(s->x.thin)) < 0)
        return -errno;
    if (c->thin_out[slot])
        return 0;
    struct perf_event_attr a = {.size = sizeof a, .sample_period = 1, .sample_type = SAMPLE_TYPE};
    dcpi_thin_output_attr(&a);
    a.sample_id_all = 1;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    a.wakeup_events = 1; /* enabled now: with enable_on_exec the PC events start it */
    fill_extra(&a, &s->x);
    int fd = dcpi__perf_open(&a, -1, cpu);
    if (fd < 0)
        return fd;
    int rc = s->x.trigger_rings ? attach_trigger_ring(c, fd, slot)
                                : attach_fd(c, fd, DCPI_SAMPLER_EV_TRIGGER, slot);
    if (rc == 0)
        rc = dcpi_thin_set_output(s->x.thin, cpu, fd);
    c->thin_out[slot] = rc == 0;
    return rc;
}

static int open_trigger(open_ctx_t *c, pid_t pid, int cpu, int slot)
{
    if (c->s->x.thin)
        return open_thin(c, cpu, slot);
    struct perf_event_attr a;
    dcpi_sampler_trigger_attr(&c->s->x, &a);
    a.inherit = c->mode != DCPI_SAMPLE_SYSTEM;
    a.enable_on_exec = c->mode == DCPI_SAMPLE_COMMAND;
    int fd = dcpi__perf_open(&a, pid, cpu);
    if (fd >= 0 && c->s->x.trigger_rings)
        return attach_trigger_ring(c, fd, slot);
    return fd < 0 ? fd : attach_fd(c, fd, DCPI_SAMPLER_EV_TRIGGER, slot);
}

/* All events of one target (pid or -1) on one CPU. */
static int open_target_cpu(open_ctx_t *c, pid_t pid, int cpu, int slot)
{
    c->cpu_of_slot = cpu;
    for (int e = 0; e < c->s->nev; e++) {
        int fd = open_one(c, e, e == 0, pid, cpu);
        if (fd < 0)
            return dcpi__errf(c->err, fd, "perf_event_open: %s", strerror(-fd));
        int rc = attach_fd(c, fd, e, slot);
        if (rc < 0)
            return dcpi__errf(c->err, rc, "perf_event ring buffer: %s", strerror(-rc));
    }
    int rc = c->s->x.trigger_ns ? open_trigger(c, pid, cpu, slot) : 0;
    return rc < 0 ? dcpi__errf(c->err, rc, "perf_event_open(arm trigger): %s", strerror(-rc)) : 0;
}

static int alloc_sampler(dcpi_sampler_t *s, size_t ntarget, int ncpu)
{
    size_t n = ntarget * (size_t)ncpu * (size_t)(s->nev + 1); /* + the trigger */
    s->fds = malloc(n * sizeof *s->fds);
    s->ids = malloc(n * sizeof *s->ids);
    s->rings = calloc((size_t)ncpu, sizeof *s->rings);
    s->trings = calloc((size_t)ncpu, sizeof *s->trings);
    for (int i = 0; s->trings && i < ncpu; i++)
        s->trings[i].fd = -1;
    return s->fds && s->ids && s->rings && s->trings ? 0 : DCPI_ENOMEM;
}

static int open_all(open_ctx_t *c, const pid_t *targets, size_t nt, const int *cpus, int ncpu)
{
    size_t opened = 0;
    for (size_t t = 0; t < nt; t++) {
        int failed = 0;
        for (int i = 0; i < ncpu && !failed; i++) {
            int rc = open_target_cpu(c, targets[t], cpus[i], i);
            if (rc == -ESRCH && c->mode == DCPI_SAMPLE_PID)
                failed = 1; /* that thread exited meanwhile */
            else if (rc < 0)
                return rc;
        }
        opened += !failed;
    }
    if (opened == 0)
        return dcpi__errf(c->err, DCPI_ESRCH, "perf_event_open: %s", strerror(ESRCH));
    return 0;
}

static int targets_for(enum dcpi_sampler_mode mode, pid_t pid, pid_t **t, size_t *n)
{
    if (mode == DCPI_SAMPLE_PID)
        return list_threads(pid, t, n);
    *t = malloc(sizeof **t);
    if (!*t)
        return DCPI_ENOMEM;
    (*t)[0] = mode == DCPI_SAMPLE_SYSTEM ? -1 : pid;
    *n = 1;
    return 0;
}

int dcpi_sampler_open(const dcpi_event_spec_t *evs, int nev, enum dcpi_sampler_mode mode, pid_t pid,
                      const dcpi_sampler_opts_t *x, dcpi_sampler_t **out, int *kernel_excluded,
                      char *err)
{
    if (nev < 1 || nev > DCPI_SAMPLER_MAXEV)
        return DCPI_EINVAL;
    int cpus[MAXCPU];
    int ncpu = dcpi_online_cpus(cpus, MAXCPU);
    pid_t *targets = NULL;
    size_t nt = 0;
    int rc = targets_for(mode, pid, &targets, &nt);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s", rc == DCPI_ESRCH ? "no such process" : "out of memory");
    dcpi_sampler_t *s = calloc(1, sizeof *s);
    open_ctx_t *c = calloc(1, sizeof *c);
    if (!s || !c) {
        rc = DCPI_ENOMEM;
        goto out_free;
    }
    s->nev = nev;
    if (x)
        s->x = *x;
    for (int e = 0; s->x.trigger_ns && !s->x.thin && e < nev; e++)
        if (evs[e].period == s->x.trigger_ns) /* told apart by their period */
            s->x.trigger_ns++, e = -1;
    *c = (open_ctx_t){.s = s, .evs = evs, .mode = mode, .err = err};
    memset(c->cpu_ring, -1, sizeof c->cpu_ring);
    rc = alloc_sampler(s, nt, ncpu);
    if (rc == 0)
        rc = open_all(c, targets, nt, cpus, ncpu);
    if (rc < 0)
        goto out_free;
    qsort(s->ids, s->nfds, sizeof *s->ids, id_cmp);
    if (kernel_excluded)
        *kernel_excluded = c->no_kernel;
    *out = s;
    free(c);
    free(targets);
    return 0;
out_free:
    dcpi_sampler_close(s);
    free(c);
    free(targets);
    return rc;
}

void dcpi_sampler_close(dcpi_sampler_t *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nrings; i++)
        munmap(s->rings[i].base, s->rings[i].map_len);
    for (int i = 0; s->trings && i < s->nrings; i++)
        if (s->trings[i].base)
            munmap(s->trings[i].base, s->trings[i].map_len);
    for (size_t i = 0; i < s->nfds; i++)
        close(s->fds[i]);
    free(s->fds);
    free(s->ids);
    free(s->rings);
    free(s->trings);
    free(s);
}

int dcpi_sampler_enable(dcpi_sampler_t *s)
{
    for (size_t i = 0; i < s->nfds; i++)
        if (ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0) < 0)
            return -errno;
    return 0;
}

int dcpi_sampler_disable(dcpi_sampler_t *s)
{
    for (size_t i = 0; i < s->nfds; i++)
        if (ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0) < 0)
            return -errno;
    return 0;
}

int dcpi_sampler_nrings(const dcpi_sampler_t *s)
{
    return s->nrings;
}

int dcpi_sampler_ring_fd(const dcpi_sampler_t *s, int i)
{
    return s->rings[i].fd;
}

int dcpi_sampler_ring_cpu(const dcpi_sampler_t *s, int i)
{
    return s->rings[i].cpu;
}

int dcpi_sampler_trigger_fd(const dcpi_sampler_t *s, int i)
{
    return i >= 0 && i < s->nrings && s->trings ? s->trings[i].fd : -1;
}

/* The first n bytes of the record at offset off of ring t (a record may wrap the ring's end). */
static void ring_peek(const ring_t *t, uint64_t off, void *out, size_t n)
{
    uint64_t o = off & (t->size - 1);
    size_t first = o + n <= t->size ? n : (size_t)(t->size - o);
    memcpy(out, t->data + o, first);
    memcpy((unsigned char *)out + first, t->data, n - first);
}

int dcpi_sampler_take_triggers(dcpi_sampler_t *s, int i, dcpi_sample_t *newest, unsigned *n,
                               uint64_t *lost)
{
    *n = 0;
    *lost = 0;
    int got = 0;
    if (i < 0 || i >= s->nrings || !s->trings || s->trings[i].fd < 0)
        return 0;
    ring_t *t = &s->trings[i];
    struct perf_event_mmap_page *m = t->base;
    uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;
    while (tail < head) {
        unsigned char r[8 + 6 * 8]; /* header, then IDENTIFIER IP TID TIME CPU PERIOD */
        struct perf_event_header hdr;
        ring_peek(t, tail, &hdr, sizeof hdr);
        if (hdr.size < sizeof hdr || hdr.size > head - tail)
            break; /* corrupt: what is there is skipped */
        if (hdr.type == PERF_RECORD_SAMPLE && hdr.size >= sizeof r) {
            ring_peek(t, tail, r, sizeof r);
            (*n)++;
            if ((hdr.misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
                memset(newest, 0, sizeof *newest);
                newest->event = DCPI_SAMPLER_EV_TRIGGER;
                newest->id = dcpi__get_host64(r + 8);
                newest->ip = dcpi__get_host64(r + 16);
                newest->pid = dcpi__get_host32(r + 24);
                newest->tid = dcpi__get_host32(r + 28);
                newest->time = dcpi__get_host64(r + 32);
                newest->cpu = dcpi__get_host32(r + 40);
                newest->period = dcpi__get_host64(r + 48);
                newest->misc = hdr.misc;
                got = 1;
            }
        } else if (hdr.type == PERF_RECORD_LOST && hdr.size >= 24) {
            uint64_t v;
            ring_peek(t, tail + 16, &v, sizeof v);
            *lost += v;
        }
        tail += hdr.size;
    }
    __atomic_store_n(&m->data_tail, head, __ATOMIC_RELEASE);
    return got;
}

void dcpi_sampler_layout(const dcpi_sampler_t *s, struct perf_event_attr *a)
{
    a->sample_type = SAMPLE_TYPE;
    a->sample_id_all = 1;
    a->use_clockid = 1; /* SET_OUTPUT needs the ring's clock */
    a->clockid = CLOCK_MONOTONIC;
    fill_extra(a, &s->x);
}

int dcpi_sampler_nfds(const dcpi_sampler_t *s)
{
    return (int)s->nfds;
}

void dcpi_sampler_stats(const dcpi_sampler_t *s, dcpi_sampler_stats_t *out)
{
    *out = s->stats;
}

/* Event index of a kernel event id; ids of inherited child events (possible in LOST records)
 * are not ours and count for event 0. */
static int event_of(const dcpi_sampler_t *s, uint64_t id)
{
    id_map_t key = {.id = id};
    const id_map_t *m = bsearch(&key, s->ids, s->nfds, sizeof *s->ids, id_cmp);
    return m && m->event != DCPI_SAMPLER_EV_TRIGGER ? m->event : 0; /* a trigger's: event 0's */
}

/* The user entries of a callchain (nr u64, then nr entries) at r[*pos]. */
static int parse_chain(const unsigned char *r, size_t size, size_t *pos, dcpi_sample_t *smp)
{
    if (*pos + 8 > size)
        return -1;
    uint64_t nr = dcpi__get_host64(r + *pos);
    *pos += 8;
    if (nr > (size - *pos) / 8)
        return -1;
    int user = 0;
    smp->callchain = (const uint64_t *)(const void *)(r + *pos); /* records are 8-aligned */
    smp->ncallchain = (uint32_t)nr;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t v = dcpi__get_host64(r + *pos + 8 * i);
        if (v >= PERF_CONTEXT_MAX) { /* a context marker */
            user = v == PERF_CONTEXT_USER;
            continue;
        }
        if (user && smp->nchain < DCPI_SAMPLER_MAXCHAIN)
            smp->chain[smp->nchain++] = v;
    }
    *pos += 8 * nr;
    return 0;
}

/* REGS_USER: abi u64, then (abi != 0) one u64 per bit of the mask. */
static int parse_regs(const unsigned char *r, size_t size, size_t pos, uint64_t mask,
                      dcpi_sample_t *smp)
{
    if (pos + 8 > size)
        return -1;
    smp->regs_abi = dcpi__get_host64(r + pos);
    pos += 8;
    if (smp->regs_abi == PERF_SAMPLE_REGS_ABI_NONE)
        return 0;
    if ((size_t)__builtin_popcountll(mask) > (size - pos) / 8)
        return -1;
    smp->regs_mask = mask;
    for (int b = 0; b < DCPI_SAMPLER_MAXREGS; b++)
        if (mask & (1ull << b)) {
            smp->regs[b] = dcpi__get_host64(r + pos);
            pos += 8;
        }
    return 0;
}

static int parse_extra(const dcpi_sampler_t *s, const unsigned char *r, size_t size,
                       dcpi_sample_t *smp)
{
    size_t pos = 8 + 6 * 8;
    if (s->x.callchain && parse_chain(r, size, &pos, smp) < 0)
        return -1;
    if (s->x.regs_user && parse_regs(r, size, pos, s->x.regs_user, smp) < 0)
        return -1;
    return 0;
}

static int on_sample(dcpi_sampler_t *s, const unsigned char *r, size_t size,
                     const dcpi_sampler_handler_t *h)
{
    if (size < 8 + 6 * 8)
        return -1;
    uint64_t id = dcpi__get_host64(r + 8);
    id_map_t key = {.id = id};
    const id_map_t *m = bsearch(&key, s->ids, s->nfds, sizeof *s->ids, id_cmp);
    uint64_t period = dcpi__get_host64(r + 48);
    dcpi_sample_t smp = {
        .event = m ? (uint16_t)m->event
                 : s->x.trigger_ns && !s->x.thin && period == s->x.trigger_ns
                     ? DCPI_SAMPLER_EV_TRIGGER
                     : DCPI_SAMPLER_EV_OTHER,
        .id = id,
        .ip = dcpi__get_host64(r + 16),
        .pid = dcpi__get_host32(r + 24),
        .tid = dcpi__get_host32(r + 28),
        .time = dcpi__get_host64(r + 32),
        .cpu = dcpi__get_host32(r + 40),
        .period = period,
        .misc = ((const struct perf_event_header *)(const void *)r)->misc,
    };
    if ((s->x.callchain || s->x.regs_user) && parse_extra(s, r, size, &smp) < 0)
        return -1;
    s->stats.samples++;
    if (h->sample)
        h->sample(h->arg, &smp);
    return 0;
}

static int on_mmap2(const unsigned char *r, size_t size, const dcpi_sampler_handler_t *h)
{
    /* header, pid tid, addr, len, pgoff, maj min, ino, ino_generation, prot flags, name */
    size_t name_off = 8 + 8 + 3 * 8 + 8 + 8 + 8 + 8;
    if (size <= name_off || !memchr(r + name_off, 0, size - name_off))
        return -1;
    if (h->mmap2)
        h->mmap2(h->arg, dcpi__get_host32(r + 8), dcpi__get_host64(r + 16),
                 dcpi__get_host64(r + 24), dcpi__get_host64(r + 32), dcpi__get_host32(r + 40),
                 dcpi__get_host32(r + 44), dcpi__get_host64(r + 48), dcpi__get_host32(r + 64),
                 (const char *)r + name_off);
    return 0;
}

static int on_task(uint32_t type, const unsigned char *r, size_t size,
                   const dcpi_sampler_handler_t *h)
{
    if (size < 8 + 16)
        return -1;
    uint32_t pid = dcpi__get_host32(r + 8), ppid = dcpi__get_host32(r + 12),
             tid = dcpi__get_host32(r + 16);
    if (type == PERF_RECORD_FORK && pid != ppid && h->fork)
        h->fork(h->arg, ppid, pid);
    if (type == PERF_RECORD_EXIT && pid == tid && h->exit)
        h->exit(h->arg, pid);
    return 0;
}

static int on_misc_record(dcpi_sampler_t *s, uint32_t type, uint16_t misc, const unsigned char *r,
                          size_t size, const dcpi_sampler_handler_t *h)
{
    switch (type) {
    case PERF_RECORD_COMM:
        if (size < 16)
            return -1;
        if ((misc & PERF_RECORD_MISC_COMM_EXEC) && h->exec)
            h->exec(h->arg, dcpi__get_host32(r + 8));
        if (h->comm && memchr(r + 16, 0, size - 16))
            h->comm(h->arg, dcpi__get_host32(r + 8), dcpi__get_host32(r + 12), (const char *)r + 16,
                    (misc & PERF_RECORD_MISC_COMM_EXEC) != 0);
        return 0;
    case PERF_RECORD_LOST:
        if (size < 24)
            return -1;
        if (h->lost)
            h->lost(h->arg, event_of(s, dcpi__get_host64(r + 8)), dcpi__get_host64(r + 16));
        return 0;
    case PERF_RECORD_LOST_SAMPLES:
        if (size < 24)
            return -1; /* the identifier is the last u64 (sample_id_all) */
        if (h->lost)
            h->lost(h->arg, event_of(s, dcpi__get_host64(r + size - 8)), dcpi__get_host64(r + 8));
        return 0;
    case PERF_RECORD_THROTTLE:
        if (size < 24)
            return -1;
        if (h->throttle)
            h->throttle(h->arg, event_of(s, dcpi__get_host64(r + 16)));
        return 0;
    case PERF_RECORD_UNTHROTTLE:
        return 0;
    }
    s->stats.other_records++;
    return 0;
}

static void dispatch(dcpi_sampler_t *s, const unsigned char *r, size_t size,
                     const dcpi_sampler_handler_t *h)
{
    const struct perf_event_header *hdr = (const void *)r;
    int rc;
    s->stats.records++;
    switch (hdr->type) {
    case PERF_RECORD_SAMPLE:
        rc = on_sample(s, r, size, h);
        break;
    case PERF_RECORD_MMAP2:
        rc = on_mmap2(r, size, h);
        break;
    case PERF_RECORD_FORK:
    case PERF_RECORD_EXIT:
        rc = on_task(hdr->type, r, size, h);
        break;
    default:
        rc = on_misc_record(s, hdr->type, hdr->misc, r, size, h);
    }
    if (rc < 0)
        s->stats.bad_records++;
}

/* The record at rg->tail (copied into buf, MAXREC bytes, when it wraps the ring's end), or NULL
 * when the ring holds a corrupt header there. */
static const unsigned char *record_at(dcpi_sampler_t *s, const ring_t *rg, unsigned char *buf,
                                      size_t *size)
{
    uint64_t tail = rg->tail, head = rg->head;
    uint64_t off = tail & (rg->size - 1);
    struct perf_event_header hdr; /* records are 8-aligned: a header never wraps */
    memcpy(&hdr, rg->data + off, sizeof hdr);
    if (hdr.size < sizeof hdr || hdr.size > head - tail) {
        s->stats.bad_records++;
        return NULL;
    }
    *size = hdr.size;
    if (off + hdr.size <= rg->size)
        return rg->data + off;
    size_t first = (size_t)(rg->size - off);
    memcpy(buf, rg->data + off, first);
    memcpy(buf + first, rg->data, hdr.size - first);
    return buf;
}

static const unsigned char *ring_record(dcpi_sampler_t *s, const ring_t *rg, size_t *size)
{
    return record_at(s, rg, s->copy, size);
}

/* A record's time: a sample's TIME field, else sample_id_all's (time, cpu, identifier last);
 * 0 (first) when the record is too short to hold one. */
static uint64_t record_time(const unsigned char *r, size_t size)
{
    const struct perf_event_header *hdr = (const void *)r;
    if (hdr->type == PERF_RECORD_SAMPLE)
        return size >= 40 ? dcpi__get_host64(r + 32) : 0;
    return size >= 8 + 24 ? dcpi__get_host64(r + size - 24) : 0;
}

/* The ring whose next record is the oldest (-1: all drained); its record in *rec, *size. */
static int oldest_ring(dcpi_sampler_t *s, const unsigned char **rec, size_t *size)
{
    int best = -1;
    uint64_t best_time = 0;
    for (int i = 0; i < s->nrings; i++) {
        ring_t *rg = &s->rings[i];
        if (rg->tail >= rg->head)
            continue;
        if (!rg->have_time) {
            size_t sz;
            const unsigned char *r = ring_record(s, rg, &sz);
            if (!r) {
                rg->tail = rg->head; /* corrupt: skip what is there */
                continue;
            }
            rg->next_time = record_time(r, sz);
            rg->have_time = 1;
        }
        if (best < 0 || rg->next_time < best_time) {
            best = i;
            best_time = rg->next_time;
        }
    }
    if (best >= 0) /* read again: s->copy may hold another ring's record */
        *rec = ring_record(s, &s->rings[best], size);
    return best;
}

long dcpi_sampler_drain_ring(dcpi_sampler_t *s, void *base, const dcpi_sampler_handler_t *h)
{
    struct perf_event_mmap_page *m = base;
    long page = sysconf(_SC_PAGESIZE);
    ring_t rg = {.base = base, .fd = -1};
    rg.data = (unsigned char *)base + (m->data_offset ? m->data_offset : (uint64_t)page);
    rg.size = m->data_size ? m->data_size : (uint64_t)page;
    rg.head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
    rg.tail = m->data_tail;
    long n = 0;
    while (rg.tail < rg.head) {
        size_t size;
        const unsigned char *r = record_at(s, &rg, s->copy_other, &size);
        if (!r)
            break; /* corrupt: what is there is skipped */
        dispatch(s, r, size, h);
        rg.tail += size;
        n++;
    }
    __atomic_store_n(&m->data_tail, rg.head, __ATOMIC_RELEASE);
    return n;
}

long dcpi_sampler_drain_merged(dcpi_sampler_t *s, const dcpi_sampler_handler_t *h)
{
    for (int i = 0; i < s->nrings; i++) {
        ring_t *rg = &s->rings[i];
        struct perf_event_mmap_page *m = rg->base;
        rg->head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
        rg->tail = m->data_tail;
        rg->have_time = 0;
    }
    long n = 0;
    int cur = -1, i;
    const unsigned char *rec;
    size_t size;
    while ((i = oldest_ring(s, &rec, &size)) >= 0) {
        if (i != cur && h->ring)
            h->ring(h->arg, i);
        cur = i;
        dispatch(s, rec, size, h);
        s->rings[i].tail += size;
        s->rings[i].have_time = 0;
        n++;
    }
    for (i = 0; i < s->nrings; i++) {
        struct perf_event_mmap_page *m = s->rings[i].base;
        __atomic_store_n(&m->data_tail, s->rings[i].tail, __ATOMIC_RELEASE);
    }
    return n;
}
