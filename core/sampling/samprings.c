/*
 * samprings.c - perf_event_open for every event on every CPU (or thread), the per-CPU ring buffers
 * and the arm triggers' rings (see sampler.h); the events' attributes are sampevent.c's, the
 * decoding of the rings' records samprecord.c's.
 */
#include "core/sampling/sampler.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/base/bytes.h"
#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/sampling/sampler-int.h"
#include "core/sampling/thin.h"
#include "dcpi/api.h"
#include "dcpi/errno.h"

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

int dcpi__sampler_id_cmp(const void *x, const void *y)
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
    dcpi__sampler_fill_attr(&a, &c->evs[e], tracking, inherit, on_exec, c->no_kernel);
    dcpi__sampler_fill_extra(&a, &c->s->x);
    int fd = dcpi__perf_open(&a, pid, cpu);
    if ((fd == -EACCES || fd == -EPERM) && !c->no_kernel) {
        c->no_kernel = 1;
        dcpi__sampler_fill_attr(&a, &c->evs[e], tracking, inherit, on_exec, 1);
        dcpi__sampler_fill_extra(&a, &c->s->x);
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
    dcpi__sampler_fill_attr(a, &ev, 0, 0, 0, 1);
    dcpi__sampler_fill_extra(a, x);
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
    dcpi__sampler_fill_extra(&a, &s->x);
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
    qsort(s->ids, s->nfds, sizeof *s->ids, dcpi__sampler_id_cmp);
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
    dcpi__sampler_fill_extra(a, &s->x);
}

int dcpi_sampler_nfds(const dcpi_sampler_t *s)
{
    return (int)s->nfds;
}

void dcpi_sampler_stats(const dcpi_sampler_t *s, dcpi_sampler_stats_t *out)
{
    *out = s->stats;
}
