/*
 * oracle.c - dcpid -voracle ADDR:IMAGE: the exact value distribution of one instruction, to hold
 * the sampled hotlists against on the same run (docs/dcpid.md "THE ORACLE (-voracle)").
 *
 * A period-1 execute breakpoint at the instruction takes *every* execution while it is enabled:
 *   - opened per thread and CPU (PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X, sample_period 1,
 *     threads started later are armed by a rescan of /proc/PID/task every ORACLE_RESCAN_S) in
 *     every profiled process that maps IMAGE, as soon as dcpid sees the mapping (its MMAP2 record,
 * or /proc/PID/maps of a -p target), written into the sampling rings with their record layout and
 * registers, like the bp backend's arms (core/sampling/bpslots.h), with a BPF program of its own
 * for the memory operand (core/capture/bpfmem.h; a second instance, its per-CPU operand the
 * oracle's);
 *   - enabled in windows: ON ms in every EVERY ms of wall time (-voracle-duty ON/EVERY, default
 *     DCPI_ORACLE_ON_MS/DCPI_ORACLE_EVERY_MS), each window placed uniformly at random within its
 *     period, so the windows fall on the program's phases in proportion to their time; ON = EVERY
 *     takes every execution of the run. Each hit traps (~10 us here), so a window slows the
 *     thread that runs the instruction to that trap rate: the oracle's cost is ON/EVERY of the
 *     run at most, and it is for measuring, not for production;
 *   - each sample goes through the plugins' oracle twins (core/values: the same plugin and
 *     specification, values computed exactly as for the bp backend's value samples) into value
 *     profiles "NAME.oracle" of the image, which dcpilist shows after NAME's hotlist (marked
 *     oracle). A sample whose pc is not the oracle's instruction (a stale breakpoint after an
 *     exec) is dropped and counted (stray); one whose memory operand BPF did not log (its log
 *     overwritten) is counted as missing, as are executions in no window (not counted).
 * Counted for status and the exit line: processes armed, windows, samples, stray, memory reads
 * missed, failures to open.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/log.h"
#include "core/capture/bpfmem.h"
#include "core/capture/cpustate.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "core/image/symbols.h"
#include "core/values/backend.h"
#include "dcpi/errno.h"

#define ORACLE_MAXPROCS 64   /* processes armed at once */
#define ORACLE_MAXFDS   1024 /* events over all processes, threads and CPUs */

#define ORACLE_MAXTIDS  64   /* threads armed per process */
#define ORACLE_RESCAN_S 0.05 /* armed processes' new threads are looked for this often */

typedef struct oracle_proc {
    pid_t pid;     /* 0: free */
    uint64_t addr; /* the instruction's address in pid */
    pid_t tids[ORACLE_MAXTIDS];
    unsigned ntids;
} oracle_proc_t;

struct dcpi_daemon_oracle {
    char path[4096]; /* IMAGE as given */
    dev_t dev;       /* the file's identity (a mapping names the same file) */
    ino_t ino;
    dcpi_image_info_t info;
    uint64_t vaddr;   /* ADDR: ELF vaddr in IMAGE */
    uint64_t foff;    /* its file offset */
    uint8_t code[15]; /* its bytes (decoded per process: rip-relative operands) */
    size_t ncode;
    oracle_proc_t procs[ORACLE_MAXPROCS];
    int fds[ORACLE_MAXFDS];
    uint64_t ids[ORACLE_MAXFDS];
    unsigned nfds;
    dcpi_bpfmem_t *bpm; /* NULL: memory operands missing */
    double on_s, every_s, cycle, win_on, win_off, rescan;
    int enabled;
    uint64_t procs_armed, windows, samples, stray, memmiss, nottaken, failed;
    uint64_t throttled, lost; /* the rings' THROTTLE records and lost records (any event) */
    int failed_logged;
};

/* ---------------------------------------------------------------- set-up */

/* ADDR: 0x hex or decimal ELF vaddr, or SYMBOL[+OFF] of IMAGE's symbol table. */
static int parse_addr(dcpi_daemon_oracle_t *o, const char *a, char *err)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(a, &end, 0);
    if (end != a && !*end && !errno) {
        o->vaddr = v;
        return 0;
    }
    char name[512];
    const char *plus = strrchr(a, '+');
    size_t n = plus ? (size_t)(plus - a) : strlen(a);
    unsigned long long off = 0;
    if (plus && (off = strtoull(plus + 1, &end, 0), end == plus + 1 || *end))
        return dcpi__errf(err, DCPI_EINVAL, "-voracle: bad offset in '%s'", a);
    if (n == 0 || n >= sizeof name)
        return dcpi__errf(err, DCPI_EINVAL, "-voracle: bad address '%s'", a);
    memcpy(name, a, n);
    name[n] = '\0';
    dcpi_symtab_t *st = NULL;
    int rc = dcpi_symtab_open(o->path, &st, err);
    if (rc < 0)
        return rc;
    const dcpi_symbol_t *sym = dcpi_symtab_find(st, name);
    if (sym)
        o->vaddr = sym->addr + off;
    dcpi_symtab_free(st);
    if (!sym)
        return dcpi__errf(err, DCPI_ENOENT, "-voracle: %s: no symbol '%s'", o->path, name);
    return 0;
}

int dcpi__daemon_oracle_new(daemon_t *d, char *err)
{
    const char *spec = d->o->voracle, *colon = spec ? strchr(spec, ':') : NULL;
    if (!spec)
        return 0;
    dcpi_daemon_oracle_t *o = calloc(1, sizeof *o);
    if (!o)
        return dcpi__errf(err, DCPI_ENOMEM, "-voracle: out of memory");
    d->orc = o;
    if (!colon || colon == spec || !colon[1])
        return dcpi__errf(err, DCPI_EINVAL, "-voracle: '%s' is not ADDR:IMAGE", spec);
    if (!realpath(colon + 1, o->path))
        return dcpi__errf(err, dcpi__errno_code(errno), "-voracle: %s: %s", colon + 1,
                          strerror(errno));
    struct stat sb;
    if (stat(o->path, &sb) < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "-voracle: %s: %s", o->path,
                          strerror(errno));
    o->dev = sb.st_dev;
    o->ino = sb.st_ino;
    char addr[600];
    snprintf(addr, sizeof addr, "%.*s", (int)(colon - spec), spec);
    int rc = dcpi_image_probe(o->path, &o->info, err);
    if (rc == 0)
        rc = parse_addr(o, addr, err);
    if (rc < 0)
        return rc;
    if (!o->info.is_elf || o->vaddr < o->info.tstart ||
        o->vaddr >= o->info.tstart + o->info.tsize ||
        dcpi_image_vaddr_to_file(&o->info, o->vaddr, &o->foff) < 0)
        return dcpi__errf(err, DCPI_EINVAL, "-voracle: 0x%" PRIx64 " is not in %s's code", o->vaddr,
                          o->path);
    FILE *f = fopen(o->path, "rb");
    o->ncode = f && fseeko(f, (off_t)o->foff, SEEK_SET) == 0 ? fread(o->code, 1, 15, f) : 0;
    if (f)
        fclose(f);
    dcpi_insn_t insn;
    if (o->ncode == 0 || dcpi_capture_decode(o->code, o->ncode, o->vaddr, &insn) <= 0)
        return dcpi__errf(err, DCPI_EFORMAT,
                          "-voracle: %s+0x%" PRIx64 ": no instruction decodes there", o->path,
                          o->vaddr);
    o->on_s = (d->o->voracle_on_ms ? d->o->voracle_on_ms : DCPI_ORACLE_ON_MS) / 1e3;
    o->every_s = (d->o->voracle_every_ms ? d->o->voracle_every_ms : DCPI_ORACLE_EVERY_MS) / 1e3;
    char why[DCPI_ERRLEN];
    if (dcpi_bpfmem_open(&o->bpm, why) < 0)
        dcpi__log(DCPI_LOG_WARN, "-voracle: memory operands are missing: %s", why);
    dcpi__log(DCPI_LOG_INFO,
              "-voracle: every execution of %s 0x%" PRIx64
              " (%s) in windows of %.0f ms every %.0f ms",
              o->path, o->vaddr, insn.inst.mnemonic, o->on_s * 1e3, o->every_s * 1e3);
    return 0;
}

void dcpi__daemon_oracle_free(daemon_t *d)
{
    dcpi_daemon_oracle_t *o = d->orc;
    if (!o)
        return;
    for (unsigned i = 0; i < o->nfds; i++)
        close(o->fds[i]);
    dcpi_bpfmem_close(o->bpm);
    free(o);
    d->orc = NULL;
}

/* ---------------------------------------------------------------- arming a process */

static oracle_proc_t *proc_of(dcpi_daemon_oracle_t *o, pid_t pid)
{
    for (int i = 0; i < ORACLE_MAXPROCS; i++)
        if (o->procs[i].pid == pid)
            return &o->procs[i];
    return NULL;
}

static void open_failed(dcpi_daemon_oracle_t *o, pid_t tid, int rc)
{
    o->failed++;
    if (!o->failed_logged++)
        dcpi__log(DCPI_LOG_WARN, "-voracle: cannot open the breakpoint in thread %d (%s)", (int)tid,
                  strerror(-rc));
}

/* The period-1 breakpoint of thread tid on the CPU of ring r, into that ring. */
static void open_one(daemon_t *d, pid_t tid, int r, uint64_t addr)
{
    dcpi_daemon_oracle_t *o = d->orc;
    if (o->nfds == ORACLE_MAXFDS) {
        open_failed(o, tid, -EMFILE);
        return;
    }
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_BREAKPOINT;
    a.bp_type = HW_BREAKPOINT_X;
    a.bp_addr = addr;
    a.bp_len = sizeof(long);
    a.sample_period = 1;
    a.disabled = !o->enabled;
    a.inherit = 0; /* new threads are armed by the rescan: their samples carry known ids */
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    dcpi_sampler_layout(d->smp, &a);
    int fd = dcpi__perf_open(&a, tid, dcpi_sampler_ring_cpu(d->smp, r));
    if (fd < 0) {
        open_failed(o, tid, fd);
        return;
    }
    uint64_t id = 0;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0 ||
        ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, dcpi_sampler_ring_fd(d->smp, r)) < 0 ||
        (o->bpm && ioctl(fd, PERF_EVENT_IOC_SET_BPF, dcpi_bpfmem_prog_fd(o->bpm)) < 0)) {
        open_failed(o, tid, -errno);
        close(fd);
        return;
    }
    o->ids[o->nfds] = id;
    o->fds[o->nfds++] = fd;
}

/* Open the breakpoints of p's threads that have none yet (every ring's CPU). */
static void arm_threads(daemon_t *d, oracle_proc_t *p)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)p->pid);
    DIR *dp = opendir(dir);
    struct dirent *de;
    while (dp && (de = readdir(dp)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        pid_t tid = (pid_t)atoi(de->d_name);
        unsigned k = 0;
        while (k < p->ntids && p->tids[k] != tid)
            k++;
        if (k < p->ntids)
            continue;
        if (p->ntids == ORACLE_MAXTIDS) {
            open_failed(d->orc, tid, -ENOSPC);
            continue;
        }
        p->tids[p->ntids++] = tid;
        for (int r = 0; r < dcpi_sampler_nrings(d->smp); r++)
            open_one(d, tid, r, p->addr);
    }
    if (dp)
        closedir(dp);
}

/* Arm pid, whose copy of the instruction runs at addr. */
static void arm(daemon_t *d, pid_t pid, uint64_t addr)
{
    dcpi_daemon_oracle_t *o = d->orc;
    oracle_proc_t *p = proc_of(o, pid);
    if (p && p->addr == addr)
        return;
    if (!p && !(p = proc_of(o, 0))) {
        open_failed(o, pid, -ENOSPC);
        return;
    }
    *p = (oracle_proc_t){.pid = pid, .addr = addr};
    o->procs_armed++;
    dcpi_insn_t insn;
    if (o->bpm && dcpi_capture_decode(o->code, o->ncode, addr, &insn) > 0)
        for (int r = 0; r < dcpi_sampler_nrings(d->smp); r++)
            dcpi_bpfmem_set(o->bpm, dcpi_sampler_ring_cpu(d->smp, r), &insn);
    arm_threads(d, p);
    dcpi__log(DCPI_LOG_INFO, "-voracle: armed in process %d at 0x%" PRIx64, (int)pid, addr);
}

void dcpi__daemon_oracle_mmap(daemon_t *d, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                              uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot,
                              const char *path)
{
    dcpi_daemon_oracle_t *o = d->orc;
    if (!o || !(prot & 4 /* PROT_EXEC */) || pid == getpid() || o->foff < pgoff ||
        o->foff - pgoff >= len)
        return;
    int same = (ino && ino == (uint64_t)o->ino && makedev(maj, min) == o->dev) ||
               (path && strcmp(path, o->path) == 0);
    if (same)
        arm(d, pid, start + o->foff - pgoff);
}

void dcpi__daemon_oracle_exec(daemon_t *d, pid_t pid)
{
    oracle_proc_t *p = d->orc ? proc_of(d->orc, pid) : NULL;
    if (p) /* its events stay (stale after an exec): their samples are strays */
        p->pid = 0;
}

/* A -p target mapped IMAGE before dcpid started: its /proc/PID/maps. */
static void scan_maps(daemon_t *d, pid_t pid)
{
    char path[64], line[4600], file[4096];
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi, off, ino;
        unsigned maj, min;
        char perm[8];
        file[0] = '\0';
        if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %4095[^\n]", &lo, &hi, perm, &off, &maj,
                   &min, &ino, file) < 7)
            continue;
        char *p = file;
        while (*p == ' ')
            p++;
        dcpi__daemon_oracle_mmap(d, pid, lo, hi - lo, off, maj, min, ino,
                                 strchr(perm, 'x') ? 4u : 0u, p);
    }
    if (f)
        fclose(f);
}

/* ---------------------------------------------------------------- windows */

static void set_enabled(dcpi_daemon_oracle_t *o, int on)
{
    if (o->enabled == on)
        return;
    o->enabled = on;
    o->windows += on;
    for (unsigned i = 0; i < o->nfds; i++)
        ioctl(o->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

void dcpi__daemon_oracle_tick(daemon_t *d)
{
    dcpi_daemon_oracle_t *o = d->orc;
    if (!o)
        return;
    if (d->mode == DCPI_SAMPLE_PID && !proc_of(o, d->o->pid) && !o->procs_armed)
        scan_maps(d, d->o->pid);
    double now = dcpi__daemon_now();
    if (now >= o->rescan + ORACLE_RESCAN_S) { /* threads started since */
        o->rescan = now;
        for (int i = 0; i < ORACLE_MAXPROCS; i++)
            if (o->procs[i].pid)
                arm_threads(d, &o->procs[i]);
    }
    if (o->on_s >= o->every_s) {
        set_enabled(o, 1);
        return;
    }
    if (now >= o->cycle + o->every_s || o->cycle == 0) { /* a new period, a new window in it */
        o->cycle = now;
        o->win_on = now + (o->every_s - o->on_s) * ((double)rand() / RAND_MAX);
        o->win_off = o->win_on + o->on_s;
    }
    set_enabled(o, now >= o->win_on && now < o->win_off);
}

/* ---------------------------------------------------------------- samples */

int dcpi__daemon_oracle_sample(daemon_t *d, const dcpi_sample_t *s)
{
    dcpi_daemon_oracle_t *o = d->orc;
    int ours = 0;
    for (unsigned i = 0; i < o->nfds && !ours; i++)
        ours = o->ids[i] == s->id;
    if (!ours)
        return 0;
    const oracle_proc_t *p = proc_of(o, (pid_t)s->pid);
    dcpi_vtrace_sample_t v;
    dcpi_vbackend_sample_of(s, &v);
    int mem = o->bpm && dcpi_bpfmem_next(o->bpm, (int)s->cpu, &v.regs); /* every sample's entry */
    if (!p || p->addr != s->ip ||
        (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER || !s->regs_abi) {
        o->stray++;
        return 1;
    }
    o->samples++;
    o->memmiss += !mem;
    if (!dcpi_vtrace_oracle_sample(d->vt, &v))
        o->nottaken++;
    return 1;
}

void dcpi__daemon_oracle_loss(daemon_t *d, uint64_t throttled, uint64_t lost)
{
    d->orc->throttled += throttled;
    d->orc->lost += lost;
}

/* ---------------------------------------------------------------- reports */

void dcpi__daemon_oracle_status(const daemon_t *d, char *buf, size_t len)
{
    const dcpi_daemon_oracle_t *o = d->orc;
    snprintf(buf, len,
             "voracle 0x%" PRIx64 ":%s processes %" PRIu64 " windows %" PRIu64 " samples %" PRIu64
             " no-plugin %" PRIu64 " memory-missed %" PRIu64 " stray %" PRIu64 " failed %" PRIu64
             " throttled %" PRIu64 " ring-lost %" PRIu64 "%s",
             o->vaddr, o->path, o->procs_armed, o->windows, o->samples, o->nottaken,
             o->bpm ? o->memmiss : 0, o->stray, o->failed, o->throttled, o->lost,
             o->bpm ? "" : " (memory values off)");
}

void dcpi__daemon_oracle_report(const daemon_t *d)
{
    if (!d->orc)
        return;
    char line[4800];
    dcpi__daemon_oracle_status(d, line, sizeof line);
    dcpi__log(DCPI_LOG_INFO, "%s", line);
    if (d->mode != DCPI_SAMPLE_SYSTEM)
        fprintf(stderr, "dcpid: %s\n", line);
    const dcpi_daemon_oracle_t *o = d->orc;
    if (d->mode != DCPI_SAMPLE_SYSTEM && (o->throttled || o->lost || o->memmiss || o->failed))
        fprintf(stderr,
                "dcpid: warning: -voracle missed executions in its windows (throttled by the "
                "kernel's perf_event_max_sample_rate, records lost, memory reads missed or "
                "breakpoints refused): its profile is not exact\n");
}
