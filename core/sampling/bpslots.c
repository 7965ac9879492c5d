/*
 * bpslots.c - execute breakpoints that follow their thread on every CPU, each with a ring of its
 * own (see bpslots.h).
 */
#include "core/sampling/bpslots.h"

#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

#define ARM_PAGES 1 /* an arm ring's data pages: two samples of a few hundred bytes */

typedef struct slot {
    int fd; /* -1: free */
    void *ring;
    size_t ring_len;
    uint64_t id;
    dcpi_bpslot_info_t in;
} slot_t;

struct dcpi_bpslots {
    dcpi_sampler_t *s;
    int prog_fd; /* attached to each breakpoint, -1: none */
    int nslots;
    slot_t *slots;
};

void dcpi__bp_attr(struct perf_event_attr *a, uint64_t addr)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = PERF_TYPE_BREAKPOINT;
    a->bp_type = HW_BREAKPOINT_X;
    a->bp_addr = addr;
    a->bp_len = sizeof(long); /* what x86 requires of execute breakpoints */
    a->sample_period = 1;
    a->disabled = 1;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->wakeup_events = 0;
}

int dcpi_bp_probe(char *err)
{
    struct perf_event_attr a;
    dcpi__bp_attr(&a, (uint64_t)(uintptr_t)&dcpi_bp_probe);
    int fd = dcpi__perf_open(&a, 0, -1);
    if (fd < 0)
        return dcpi__errf(err, fd, "perf_event_open(breakpoint): %s", strerror(-fd));
    close(fd);
    return 0;
}

int dcpi_bpslots_new(dcpi_sampler_t *s, int n, dcpi_bpslots_t **out)
{
    dcpi_bpslots_t *b = calloc(1, sizeof *b);
    if (n < 1)
        n = 1;
    if (!b || !(b->slots = calloc((size_t)n, sizeof *b->slots))) {
        free(b);
        return DCPI_ENOMEM;
    }
    b->s = s;
    b->prog_fd = -1;
    b->nslots = n;
    for (int i = 0; i < n; i++)
        b->slots[i].fd = -1;
    *out = b;
    return 0;
}

static void unmap(slot_t *sl)
{
    if (sl->ring)
        munmap(sl->ring, sl->ring_len);
    sl->ring = NULL;
    if (sl->fd >= 0)
        close(sl->fd);
    sl->fd = -1;
}

void dcpi_bpslots_free(dcpi_bpslots_t *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nslots; i++)
        unmap(&b->slots[i]);
    free(b->slots);
    free(b);
}

int dcpi_bpslots_count(const dcpi_bpslots_t *b)
{
    return b->nslots;
}

void dcpi_bpslots_set_prog(dcpi_bpslots_t *b, int prog_fd)
{
    b->prog_fd = prog_fd;
}

int dcpi_bpslots_info(const dcpi_bpslots_t *b, int i, dcpi_bpslot_info_t *out)
{
    if (i < 0 || i >= b->nslots || b->slots[i].fd < 0)
        return 0;
    *out = b->slots[i].in;
    return 1;
}

int dcpi_bpslots_find(const dcpi_bpslots_t *b, pid_t tid)
{
    for (int i = 0; i < b->nslots; i++)
        if (b->slots[i].fd >= 0 && b->slots[i].in.tid == tid)
            return i;
    return -1;
}

int dcpi_bpslots_pick(const dcpi_bpslots_t *b)
{
    int old = 0;
    for (int i = 0; i < b->nslots; i++) {
        if (b->slots[i].fd < 0)
            return i;
        if (b->slots[i].in.armed_ns < b->slots[old].in.armed_ns)
            old = i;
    }
    return old;
}

int dcpi_bpslots_busy(const dcpi_bpslots_t *b, int i, uint64_t now_ns, uint64_t max_age_ns)
{
    if (i < 0 || i >= b->nslots)
        return 1;
    const slot_t *sl = &b->slots[i];
    return sl->fd >= 0 && sl->in.got > 0 && sl->in.got < sl->in.count &&
           now_ns - sl->in.armed_ns < max_age_ns;
}

int dcpi_bpslots_close(dcpi_bpslots_t *b, int i, uint32_t *cookie, unsigned *got)
{
    if (i < 0 || i >= b->nslots || b->slots[i].fd < 0)
        return 0;
    slot_t *sl = &b->slots[i];
    unmap(sl);
    *cookie = sl->in.cookie;
    *got = sl->in.got;
    return 1;
}

int dcpi_bpslots_arm(dcpi_bpslots_t *b, int i, pid_t pid, pid_t tid, int cpu, uint64_t addr,
                     unsigned count, uint32_t cookie, uint64_t now_ns)
{
    if (i < 0 || i >= b->nslots || count == 0)
        return -EINVAL;
    slot_t *sl = &b->slots[i];
    uint32_t oc;
    unsigned og;
    dcpi_bpslots_close(b, i, &oc, &og);
    struct perf_event_attr a;
    dcpi__bp_attr(&a, addr);
    dcpi_sampler_layout(b->s, &a);
    int fd = dcpi__perf_open(&a, tid, -1); /* any CPU: the arm follows its thread */
    if (fd < 0)
        return fd;
    sl->fd = fd;
    sl->ring_len = (size_t)sysconf(_SC_PAGESIZE) * (1 + ARM_PAGES);
    sl->ring = mmap(NULL, sl->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int rc = 0;
    if (sl->ring == MAP_FAILED) {
        sl->ring = NULL;
        rc = -errno;
    } else if (ioctl(fd, PERF_EVENT_IOC_ID, &sl->id) < 0 ||
               (b->prog_fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, b->prog_fd) < 0) ||
               ioctl(fd, PERF_EVENT_IOC_REFRESH, (int)count) < 0) {
        rc = -errno;
    }
    if (rc < 0) {
        unmap(sl);
        return rc;
    }
    sl->in = (dcpi_bpslot_info_t){
        .pid = pid, .tid = tid, .cpu = cpu, .count = count, .armed_ns = now_ns, .cookie = cookie};
    return 0;
}

typedef struct reader {
    dcpi_bpslots_t *b;
    int i, n;
    dcpi_bpslots_fn fn;
    void *arg;
} reader_t;

static void on_sample(void *arg, const dcpi_sample_t *s)
{
    reader_t *r = arg;
    slot_t *sl = &r->b->slots[r->i];
    if (s->id != sl->id)
        return;
    unsigned seq = sl->in.got++;
    if ((int)s->cpu != sl->in.cpu)
        sl->in.other++;
    r->n++;
    r->fn(r->arg, r->i, s, seq, sl->in.cookie);
    sl->in.last_ns = s->time;
}

int dcpi_bpslots_read(dcpi_bpslots_t *b, int i, dcpi_bpslots_fn fn, void *arg)
{
    if (i < 0 || i >= b->nslots || !b->slots[i].ring)
        return 0;
    reader_t r = {.b = b, .i = i, .fn = fn, .arg = arg};
    dcpi_sampler_handler_t h = {.arg = &r, .sample = on_sample};
    dcpi_sampler_drain_ring(b->s, b->slots[i].ring, &h);
    return r.n;
}
