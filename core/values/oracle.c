/*
 * oracle.c - the oracle backend (backend.h; dcpid -voracle ADDR:IMAGE): the exact value
 * distribution of one instruction, to hold the sampled hotlists against on the same run
 * (docs/dcpid.md "THE ORACLE (-voracle)"). It runs beside the main backend (chained before it,
 * so its breakpoints' samples are its own) and feeds the same sink's oracle twins.
 *
 * A period-1 execute breakpoint at the instruction takes *every* execution while it is enabled:
 *   - opened per thread and CPU (PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X, sample_period 1,
 *     threads started later are armed by a rescan of /proc/PID/task every ORACLE_RESCAN_S) in
 *     every profiled process that maps IMAGE, as soon as dcpid sees the mapping (its MMAP2 record,
 * or /proc/PID/maps of a -p target), written into the sampling rings with their record layout and
 * registers (per CPU: a period-1 breakpoint writes into the CPU's ring, unlike the bp backend's
 * arms, core/sampling/bpslots.h, which follow their thread into rings of their own), with a BPF
 * program of its own for the memory operand (core/capture/bpfmem.h; a second instance, its
 * operand the oracle's instruction in each process);
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
 *     overwritten) is counted as missing, as are executions in no window (not counted);
 *   - a window's executions are consecutive ones of one stretch of the program: one cluster, not
 *     independent draws. Each sample is counted in its window (by its time against the windows'
 *     opening times), and the windows so far (those with executions, their executions, the sum
 *     of the squares of each one's executions) go to the twins' profiles
 *     (dcpi_values_oracle_windows), for dcpilist's cluster bound (core/listing/hotlist.c); with
 *     ON = EVERY (one window, the whole run) the profile says every execution was taken.
 * Counted for status and the exit line: processes armed, windows, samples, stray, memory reads
 * missed, failures to open, and the design effect (sum of squares / executions: a window's
 * executions weigh as that many independent draws would).
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
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/log.h"
#include "core/capture/bpfmem.h"
#include "core/capture/cpustate.h"
#include "core/image/symbols.h"
#include "core/sampling/sampler.h"
#include "core/values/backend.h"
#include "dcpi/errno.h"

#define ORACLE_MAXPROCS 64   /* processes armed at once */
#define ORACLE_MAXFDS   1024 /* events over all processes, threads and CPUs */

#define ORACLE_MAXTIDS  64   /* threads armed per process */
#define ORACLE_RESCAN_S 0.05 /* armed processes' new threads are looked for this often */
#define ORACLE_WINRING  64   /* the last windows' opening times and executions */
#define ORACLE_WAKE_MS  1 /* the loop wakes this often while the oracle runs (oracle_timeout_ms) */

typedef struct oracle_proc {
    pid_t pid;     /* 0: free */
    uint64_t addr; /* the instruction's address in pid */
    pid_t tids[ORACLE_MAXTIDS];
    unsigned ntids;
} oracle_proc_t;

typedef struct oracle {
    dcpi_vbackend_t b;
    dcpi_vbackend_oracle_opts_t opt;
    dcpi_sampler_t *smp;
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
    /* the windows as clusters: opening time (CLOCK_MONOTONIC ns, the samples' clock) and
     * executions of the last ORACLE_WINRING windows (window w at w % ORACLE_WINRING); totals */
    uint64_t win_open_ns[ORACLE_WINRING], win_execs[ORACLE_WINRING];
    uint64_t cl_windows, cl_execs, cl_sumsq;
} oracle_t;

/* ---------------------------------------------------------------- set-up */

/* ADDR: 0x hex or decimal ELF vaddr, or SYMBOL[+OFF] of IMAGE's symbol table. */
static int parse_addr(oracle_t *o, const char *a, char *err)
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Set up, once the rings exist: the instruction, its image, the BPF program. */
static int oracle_start(dcpi_vbackend_t *b, dcpi_sampler_t *smp, char *err)
{
    oracle_t *o = (oracle_t *)b;
    const char *spec = o->opt.spec, *colon = strchr(spec, ':');
    o->smp = smp;
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
    o->on_s = o->opt.on_ms / 1e3;
    o->every_s = o->opt.every_ms / 1e3;
    char why[DCPI_ERRLEN];
    if (dcpi_bpfmem_open(&o->bpm, why) < 0)
        dcpi__log(DCPI_LOG_WARN, "-voracle: memory operands are missing: %s", why);
    dcpi__log(DCPI_LOG_INFO,
              "-voracle: every execution of %s 0x%" PRIx64
              " (%s) in windows of %.0f ms every %.0f ms",
              o->path, o->vaddr, insn.inst.mnemonic, o->on_s * 1e3, o->every_s * 1e3);
    return 0;
}

static void oracle_free(dcpi_vbackend_t *b)
{
    oracle_t *o = (oracle_t *)b;
    for (unsigned i = 0; i < o->nfds; i++)
        close(o->fds[i]);
    dcpi_bpfmem_close(o->bpm);
    free(o);
}

/* ---------------------------------------------------------------- arming a process */

static oracle_proc_t *proc_of(oracle_t *o, pid_t pid)
{
    for (int i = 0; i < ORACLE_MAXPROCS; i++)
        if (o->procs[i].pid == pid)
            return &o->procs[i];
    return NULL;
}

static void open_failed(oracle_t *o, pid_t tid, int rc)
{
    o->failed++;
    if (!o->failed_logged++)
        dcpi__log(DCPI_LOG_WARN, "-voracle: cannot open the breakpoint in thread %d (%s)", (int)tid,
                  strerror(-rc));
}

/* The period-1 breakpoint of thread tid on the CPU of ring r, into that ring. */
static void open_one(oracle_t *o, pid_t tid, int r, uint64_t addr)
{
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
    dcpi_sampler_layout(o->smp, &a);
    int fd = dcpi__perf_open(&a, tid, dcpi_sampler_ring_cpu(o->smp, r));
    if (fd < 0) {
        open_failed(o, tid, fd);
        return;
    }
    uint64_t id = 0;
    if (ioctl(fd, PERF_EVENT_IOC_ID, &id) < 0 ||
        ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, dcpi_sampler_ring_fd(o->smp, r)) < 0 ||
        (o->bpm && ioctl(fd, PERF_EVENT_IOC_SET_BPF, dcpi_bpfmem_prog_fd(o->bpm)) < 0)) {
        open_failed(o, tid, -errno);
        close(fd);
        return;
    }
    o->ids[o->nfds] = id;
    o->fds[o->nfds++] = fd;
}

/* Open the breakpoints of p's threads that have none yet (every ring's CPU). */
static void arm_threads(oracle_t *o, oracle_proc_t *p)
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
            open_failed(o, tid, -ENOSPC);
            continue;
        }
        p->tids[p->ntids++] = tid;
        for (int r = 0; r < dcpi_sampler_nrings(o->smp); r++)
            open_one(o, tid, r, p->addr);
    }
    if (dp)
        closedir(dp);
}

/* Arm pid, whose copy of the instruction runs at addr. */
static void arm(oracle_t *o, pid_t pid, uint64_t addr)
{
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
        dcpi_bpfmem_set(o->bpm, pid, addr, &insn);
    arm_threads(o, p);
    dcpi__log(DCPI_LOG_INFO, "-voracle: armed in process %d at 0x%" PRIx64, (int)pid, addr);
}

/* A mapping seen (its MMAP2 record): IMAGE mapped, its breakpoints opened in that process. */
static void oracle_mmap(dcpi_vbackend_t *b, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                        uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path)
{
    oracle_t *o = (oracle_t *)b;
    if (!(prot & 4 /* PROT_EXEC */) || pid == getpid() || o->foff < pgoff || o->foff - pgoff >= len)
        return;
    int same = (ino && ino == (uint64_t)o->ino && makedev(maj, min) == o->dev) ||
               (path && strcmp(path, o->path) == 0);
    if (same)
        arm(o, pid, start + o->foff - pgoff);
}

/* An exec or an exit of pid: its breakpoints are stale. */
static void oracle_pid_event(dcpi_vbackend_t *b, pid_t pid, int what)
{
    oracle_proc_t *p = what != DCPI_VBACKEND_MMAP ? proc_of((oracle_t *)b, pid) : NULL;
    if (p) /* its events stay (stale after an exec): their samples are strays */
        p->pid = 0;
}

/* A -p target mapped IMAGE before dcpid started: its /proc/PID/maps. */
static void scan_maps(oracle_t *o, pid_t pid)
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
        oracle_mmap(&o->b, pid, lo, hi - lo, off, maj, min, ino, strchr(perm, 'x') ? 4u : 0u, p);
    }
    if (f)
        fclose(f);
}

/* ---------------------------------------------------------------- windows */

static void set_enabled(oracle_t *o, int on)
{
    if (o->enabled == on)
        return;
    o->enabled = on;
    if (on) { /* window o->windows opens */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        o->win_open_ns[o->windows % ORACLE_WINRING] =
            (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        o->win_execs[o->windows % ORACLE_WINRING] = 0;
    }
    o->windows += on;
    for (unsigned i = 0; i < o->nfds; i++)
        ioctl(o->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* Drain: a -p target's maps until armed, new threads, the windows. */
static int oracle_drain(dcpi_vbackend_t *b, uint64_t now_ns)
{
    oracle_t *o = (oracle_t *)b;
    (void)now_ns;
    if (o->opt.target > 0 && !proc_of(o, o->opt.target) && !o->procs_armed)
        scan_maps(o, o->opt.target);
    double now = now_s();
    if (now >= o->rescan + ORACLE_RESCAN_S) { /* threads started since */
        o->rescan = now;
        for (int i = 0; i < ORACLE_MAXPROCS; i++)
            if (o->procs[i].pid)
                arm_threads(o, &o->procs[i]);
    }
    if (o->on_s >= o->every_s) {
        set_enabled(o, 1);
        return 0;
    }
    if (now >= o->cycle + o->every_s || o->cycle == 0) { /* a new period, a new window in it */
        o->cycle = now;
        o->win_on = now + (o->every_s - o->on_s) * ((double)rand() / RAND_MAX);
        o->win_off = o->win_on + o->on_s;
    }
    set_enabled(o, now >= o->win_on && now < o->win_off);
    return 0;
}

/* ---------------------------------------------------------------- samples */

/* A sample at time t (ns) is an execution of the last window opened at or before t (of the last
 * ORACLE_WINRING; one older than those counts in the oldest kept): the cluster totals grow. */
static void count_in_window(oracle_t *o, uint64_t t)
{
    if (o->windows == 0)
        return;
    uint64_t w = o->windows - 1,
             oldest = o->windows > ORACLE_WINRING ? o->windows - ORACLE_WINRING : 0;
    while (w > oldest && o->win_open_ns[w % ORACLE_WINRING] > t)
        w--;
    uint64_t *m = &o->win_execs[w % ORACLE_WINRING];
    o->cl_windows += *m == 0;
    o->cl_sumsq += 2 * *m + 1; /* (m + 1)^2 - m^2 */
    o->cl_execs++;
    (*m)++;
    dcpi_values_oracle_windows(o->b.vt, o->cl_windows, o->cl_execs, o->cl_sumsq,
                               o->on_s >= o->every_s);
}

/* A DCPI_SAMPLER_EV_OTHER sample: 1 when it was the oracle's (into the oracle twins, or
 * counted). */
static int oracle_record(dcpi_vbackend_t *b, const dcpi_sample_t *s, int ring)
{
    oracle_t *o = (oracle_t *)b;
    int ours = 0;
    (void)ring;
    if (s->event != DCPI_SAMPLER_EV_OTHER)
        return 0;
    for (unsigned i = 0; i < o->nfds && !ours; i++)
        ours = o->ids[i] == s->id;
    if (!ours)
        return 0;
    const oracle_proc_t *p = proc_of(o, (pid_t)s->pid);
    dcpi_values_sample_t v;
    dcpi_vbackend_sample_of(s, &v);
    int mem = o->bpm && dcpi_bpfmem_next(o->bpm, (int)s->cpu, &v.regs); /* every sample's entry */
    if (!p || p->addr != s->ip ||
        (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER || !s->regs_abi) {
        o->stray++;
        return 1;
    }
    o->samples++;
    o->memmiss += !mem;
    count_in_window(o, s->time);
    if (!dcpi_values_oracle_sample(o->b.vt, &v))
        o->nottaken++;
    return 1;
}

/* Kernel throttles and ring losses while the oracle runs (its executions may be among them). */
static void oracle_loss(dcpi_vbackend_t *b, uint64_t throttled, uint64_t lost)
{
    oracle_t *o = (oracle_t *)b;
    o->throttled += throttled;
    o->lost += lost;
}

/* ---------------------------------------------------------------- reports */

static void status_line(const oracle_t *o, char *buf, size_t len)
{
    snprintf(buf, len,
             "voracle 0x%" PRIx64 ":%s processes %" PRIu64 " windows %" PRIu64 " samples %" PRIu64
             " no-plugin %" PRIu64 " memory-missed %" PRIu64 " stray %" PRIu64 " failed %" PRIu64
             " throttled %" PRIu64 " ring-lost %" PRIu64 " design-effect %.1f%s",
             o->vaddr, o->path, o->procs_armed, o->windows, o->samples, o->nottaken,
             o->bpm ? o->memmiss : 0, o->stray, o->failed, o->throttled, o->lost,
             o->cl_execs ? (double)o->cl_sumsq / (double)o->cl_execs : 0.0,
             o->bpm ? "" : " (memory values off)");
}

static void oracle_status(const dcpi_vbackend_t *b, char *buf, size_t len)
{
    size_t n;
    status_line((const oracle_t *)b, buf, len);
    if ((n = strlen(buf)) + 1 < len) {
        buf[n] = '\n';
        buf[n + 1] = '\0';
    }
}

/* The status line into the log, and for a command or -p (user) on stderr, with a warning when
 * executions in the windows were missed. */
static void oracle_report(const dcpi_vbackend_t *b, int user)
{
    const oracle_t *o = (const oracle_t *)b;
    char line[4800];
    status_line(o, line, sizeof line);
    dcpi__log(DCPI_LOG_INFO, "%s", line);
    if (user)
        fprintf(stderr, "dcpid: %s\n", line);
    if (user && (o->throttled || o->lost || o->memmiss || o->failed))
        fprintf(stderr,
                "dcpid: warning: -voracle missed executions in its windows (throttled by the "
                "kernel's perf_event_max_sample_rate, records lost, memory reads missed or "
                "breakpoints refused): its profile is not exact\n");
    if (user && o->procs_armed == 0)
        fprintf(stderr,
                "dcpid: warning: -voracle: no profiled process mapped %s: nothing was "
                "taken\n",
                o->path);
}

/* Its breakpoints' samples are written with the sampler's record layout: they need the user
 * registers whatever the main backend asks (inproc asks none). */
static void oracle_sampler_opts(const dcpi_vbackend_t *b, dcpi_sampler_opts_t *x)
{
    x->regs_user |= dcpi_values_regs_mask(b->vt) | 1ull << DCPI_REG_IP;
}

/* The loop wakes every ORACLE_WAKE_MS while the oracle runs: it arms a process when dcpid reads
 * the image's MMAP2 record, and an exact count misses every execution before that (beside the
 * inproc backend's 10-ms drains, bzip2 -9 of 200 KB, a 20-ms process, had run its sort before
 * the oracle was armed: samples 0). */
static int oracle_timeout_ms(const dcpi_vbackend_t *b)
{
    (void)b;
    return ORACLE_WAKE_MS;
}

static const dcpi_vbackend_ops_t oracle_ops = {.desc = &dcpi_vdesc_oracle,
                                               .sampler_opts = oracle_sampler_opts,
                                               .timeout_ms = oracle_timeout_ms,
                                               .start = oracle_start,
                                               .record = oracle_record,
                                               .pid_event = oracle_pid_event,
                                               .mmap = oracle_mmap,
                                               .loss = oracle_loss,
                                               .drain = oracle_drain,
                                               .status = oracle_status,
                                               .report = oracle_report,
                                               .free = oracle_free};

int dcpi_vbackend_oracle_new(dcpi_values_t *vt, const dcpi_vbackend_oracle_opts_t *opt,
                             dcpi_vbackend_t **out)
{
    oracle_t *o = calloc(1, sizeof *o);
    if (!o)
        return DCPI_ENOMEM;
    o->b = (dcpi_vbackend_t){.ops = &oracle_ops, .vt = vt};
    o->opt = *opt;
    *out = &o->b;
    return 0;
}
