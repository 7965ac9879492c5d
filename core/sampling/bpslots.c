/*
 * bpslots.c - execute breakpoints, one armed per ring (see bpslots.h).
 */
#include "core/sampling/bpslots.h"

#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/base/err.h"
#include "dcpi/errno.h"

#define HISTORY 4 /* recent arms per ring whose late samples still match */

typedef struct arm {
    uint64_t id;
    uint32_t cookie;
    unsigned got;
} arm_t;

typedef struct slot {
    int fd; /* -1: none armed */
    unsigned count;
    uint64_t armed_ns;
    arm_t cur;
    arm_t hist[HISTORY];
    unsigned nhist;
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

int dcpi_bpslots_new(dcpi_sampler_t *s, dcpi_bpslots_t **out)
{
    dcpi_bpslots_t *b = calloc(1, sizeof *b);
    int n = dcpi_sampler_nrings(s);
    if (!b || !(b->slots = calloc((size_t)(n > 0 ? n : 1), sizeof *b->slots))) {
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

void dcpi_bpslots_free(dcpi_bpslots_t *b)
{
    if (!b)
        return;
    for (int i = 0; i < b->nslots; i++)
        if (b->slots[i].fd >= 0)
            close(b->slots[i].fd);
    free(b->slots);
    free(b);
}

int dcpi_bpslots_busy(const dcpi_bpslots_t *b, int ring, uint64_t now_ns, uint64_t max_age_ns)
{
    if (ring < 0 || ring >= b->nslots)
        return 1;
    const slot_t *sl = &b->slots[ring];
    return sl->fd >= 0 && sl->cur.got > 0 && sl->cur.got < sl->count &&
           now_ns - sl->armed_ns < max_age_ns;
}

int dcpi_bpslots_close(dcpi_bpslots_t *b, int ring, uint32_t *cookie, unsigned *got)
{
    if (ring < 0 || ring >= b->nslots || b->slots[ring].fd < 0)
        return 0;
    slot_t *sl = &b->slots[ring];
    close(sl->fd);
    sl->fd = -1;
    *cookie = sl->cur.cookie;
    *got = sl->cur.got;
    sl->hist[sl->nhist++ % HISTORY] = sl->cur;
    return 1;
}

int dcpi_bpslots_arm(dcpi_bpslots_t *b, int ring, pid_t tid, uint64_t addr, unsigned count,
                     uint32_t cookie, uint64_t now_ns)
{
    if (ring < 0 || ring >= b->nslots || count == 0)
        return -EINVAL;
    slot_t *sl = &b->slots[ring];
    uint32_t oc;
    unsigned og;
    dcpi_bpslots_close(b, ring, &oc, &og);
    struct perf_event_attr a;
    dcpi__bp_attr(&a, addr);
    dcpi_sampler_layout(b->s, &a);
    int fd = dcpi__perf_open(&a, tid, dcpi_sampler_ring_cpu(b->s, ring));
    if (fd < 0)
        return fd;
    uint64_t id = 0;
    int rc = 0;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0 ||
        ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, dcpi_sampler_ring_fd(b->s, ring)) < 0 ||
        (b->prog_fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_BPF, b->prog_fd) < 0) ||
        ioctl(fd, PERF_EVENT_IOC_REFRESH, (int)count) < 0)
        rc = -errno;
    if (rc < 0) {
        close(fd);
        return rc;
    }
    sl->fd = fd;
    sl->count = count;
    sl->armed_ns = now_ns;
    sl->cur = (arm_t){.id = id, .cookie = cookie};
    return 0;
}

void dcpi_bpslots_set_prog(dcpi_bpslots_t *b, int prog_fd)
{
    b->prog_fd = prog_fd;
}

static int take(arm_t *a, unsigned *seq, uint32_t *cookie)
{
    *seq = a->got++;
    *cookie = a->cookie;
    return 1;
}

int dcpi_bpslots_match(dcpi_bpslots_t *b, int ring, uint64_t id, unsigned *seq, uint32_t *cookie,
                       int *current)
{
    if (ring < 0 || ring >= b->nslots)
        return 0;
    slot_t *sl = &b->slots[ring];
    *current = sl->fd >= 0 && sl->cur.id == id;
    if (*current)
        return take(&sl->cur, seq, cookie);
    for (unsigned i = 0; i < HISTORY && i < sl->nhist; i++)
        if (sl->hist[i].id == id)
            return take(&sl->hist[i], seq, cookie);
    return 0;
}
