/*
 * sampevent.c - the sampler's events: names and periods ("cycles:100000"), their
 * perf_event_attr in the one sample_type layout (sampler-int.h), whether one opens here, and the
 * online CPUs.
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

void dcpi__sampler_fill_extra(struct perf_event_attr *a, const dcpi_sampler_opts_t *x)
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

void dcpi__sampler_fill_attr(struct perf_event_attr *a, const dcpi_event_spec_t *ev, int tracking,
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
    dcpi__sampler_fill_attr(&a, ev, 0, 0, 0, 1);
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
