/*
 * records.c - the perf records of dcpid's rings (see sampler.h): samples into the count table
 * (kernel, user, unknown), the parts' hooks (part.h: vtrace.c's value backend gets the user-mode
 * PC samples of the first event, the samples of no PC event, mappings and losses) and the
 * stacks (-g); MMAP2, COMM
 * (exec), FORK and EXIT into the loadmap, exits deferred until after the drain; LOST and
 * THROTTLE into the per-event counts that status shows.
 */
#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>

#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "dcpi/errno.h"

static void add_count(daemon_t *d, uint32_t image, int ev, uint32_t off, uint32_t proc);

/* Outside every image: counted per event (unknown@ profile) and per process. */
static void count_unknown(daemon_t *d, int ev, uint32_t proc)
{
    d->st[ev].unknown++;
    d->st[ev].unknown_pending++;
    add_count(d, DCPI_AGG_IMAGE_UNKNOWN, ev, 0, proc);
}

/* The exits part: exits deferred until after the drain, and the negative cache of /proc
 * rescans. */
typedef struct exits {
    pid_t exits[MAXEXITS];
    size_t nexits;
    pid_t tried[TRIED_SLOTS];
    size_t ntried;
} exits_t;

DCPI_DAEMON_PART(exits, .order = 60, .size = sizeof(exits_t));

static int tried_before(daemon_t *d, pid_t pid)
{
    exits_t *x = dcpi__part(d, &part_exits);
    if (!x)
        return 1; /* no memory: no rescan */
    if (x->ntried * 2 >= TRIED_SLOTS) {
        memset(x->tried, 0, sizeof x->tried);
        x->ntried = 0;
    }
    size_t i = ((uint32_t)pid * 2654435761u) % TRIED_SLOTS;
    while (x->tried[i]) {
        if (x->tried[i] == pid)
            return 1;
        i = (i + 1) % TRIED_SLOTS;
    }
    x->tried[i] = pid;
    x->ntried++;
    return 0;
}

static void add_count(daemon_t *d, uint32_t image, int ev, uint32_t off, uint32_t proc)
{
    dcpi__parts_sample(d, ev, image, off);
    if (dcpi_agg_add_proc(d->agg, image, (uint16_t)ev, off, proc, 1) == 0)
        return;
    /* The table is full (a flush failed or -hash is tiny): grow rather than drop. */
    if (dcpi_agg_grow(d->agg) == 0 &&
        dcpi_agg_add_proc(d->agg, image, (uint16_t)ev, off, proc, 1) == 0) {
        dcpi__log(DCPI_LOG_WARN, "hash table full, grown to %zu entries",
                  dcpi_agg_capacity(d->agg));
        return;
    }
    if (image == DCPI_AGG_IMAGE_UNKNOWN)
        return; /* already counted in unknown@ (only its split by process is lost) */
    d->st[ev].lost++;
    d->st[ev].lost_pending++;
}

static void user_sample(daemon_t *d, const dcpi_sample_t *s, uint32_t proc)
{
    dcpi_image_t *img;
    uint32_t off;
    int rc = dcpi_loadmap_resolve(d->lm, (pid_t)s->pid, s->ip, &img, &off);
    if (rc == DCPI_ENOENT && s->pid > 0 && !tried_before(d, (pid_t)s->pid)) {
        dcpi_loadmap_scan_proc(d->lm, (pid_t)s->pid);
        rc = dcpi_loadmap_resolve(d->lm, (pid_t)s->pid, s->ip, &img, &off);
    }
    if (rc == DCPI_ENOENT && s->pid > 0 && dcpi__parts_unresolved(d, (pid_t)s->pid, s->ip))
        rc = dcpi_loadmap_resolve(d->lm, (pid_t)s->pid, s->ip, &img, &off); /* jit.c: JIT code */
    if (rc == 0) /* jit.c: addresses the JIT reused */
        dcpi__parts_resolved(d, (pid_t)s->pid, s->ip, s->time, img, &off);
    if (rc == 0)
        add_count(d, img->index, s->event, off, proc);
    else
        count_unknown(d, s->event, proc);
}

static void pc_sample(daemon_t *d, const dcpi_sample_t *s);

static void on_sample(void *arg, const dcpi_sample_t *s)
{
    daemon_t *d = arg;
    if (s->event == DCPI_SAMPLER_EV_TRIGGER || s->event == DCPI_SAMPLER_EV_OTHER) {
        if (dcpi__parts_record(d, s, d->cur_ring))
            return; /* a value backend's (an arm trigger, a breakpoint, -voracle's): not a PC
                     * sample */
        if (s->event == DCPI_SAMPLER_EV_TRIGGER)
            return;
        dcpi_sample_t c = *s; /* an id of none of our events: count it for the first */
        c.event = 0;
        pc_sample(d, &c);
        return;
    }
    pc_sample(d, s);
}

static void pc_sample(daemon_t *d, const dcpi_sample_t *s)
{
    int mode = s->misc & PERF_RECORD_MISC_CPUMODE_MASK;
    uint32_t proc = dcpi_proctab_id(d->procs, (pid_t)s->pid);
    d->cur_pid = (pid_t)s->pid;
    d->st[s->event].samples++;
    d->total_samples++;
    if (mode == PERF_RECORD_MISC_KERNEL) {
        uint64_t off = s->ip - d->kern.tstart;
        if (d->kern.ok && s->ip >= d->kern.tstart && off <= UINT32_MAX)
            add_count(d, DCPI_AGG_IMAGE_KERNEL, s->event, (uint32_t)off, proc);
        else
            count_unknown(d, s->event, proc);
    } else if (mode == PERF_RECORD_MISC_USER) {
        user_sample(d, s, proc);
        if (s->event == 0)
            dcpi__parts_user(d, s, d->cur_ring); /* vtrace.c: the value backend */
    } else {
        count_unknown(d, s->event, proc);
    }
    if (d->stk)
        dcpi_dstacks_add(d->stk, s);
}

static void on_mmap2(void *arg, uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
                     uint32_t maj, uint32_t min, uint64_t ino, uint32_t prot, const char *path)
{
    daemon_t *d = arg;
    /* values of pid: with the old mappings */
    dcpi__parts_pid(d, (pid_t)pid, DCPI__PID_MMAP);
    dcpi_loadmap_mmap(d->lm, (pid_t)pid, addr, len, pgoff, maj, min, ino, prot, path);
    dcpi__mmap_t m = {.pid = (pid_t)pid,
                      .addr = addr,
                      .len = len,
                      .pgoff = pgoff,
                      .ino = ino,
                      .maj = maj,
                      .min = min,
                      .prot = prot,
                      .path = path};
    dcpi__parts_mmap(d, &m);
}

static void on_exec(void *arg, uint32_t pid)
{
    daemon_t *d = arg;
    dcpi__parts_pid(d, (pid_t)pid, DCPI__PID_EXEC);
    dcpi_loadmap_exec(d->lm, (pid_t)pid);
}

static void on_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec)
{
    if (pid == tid || exec) /* the process's name is its main thread's */
        dcpi_proctab_comm(((daemon_t *)arg)->procs, (pid_t)pid, comm);
}

static void on_fork(void *arg, uint32_t ppid, uint32_t pid)
{
    daemon_t *d = arg;
    dcpi_loadmap_fork(d->lm, (pid_t)ppid, (pid_t)pid);
    dcpi_proctab_fork(d->procs, (pid_t)ppid, (pid_t)pid);
}

void dcpi__daemon_apply_exits(daemon_t *d)
{
    exits_t *x = dcpi__part_if(d, &part_exits);
    for (size_t i = 0; x && i < x->nexits; i++) {
        /* its pending traces resolve with its mappings (batched drains) */
        dcpi__parts_pid(d, x->exits[i], DCPI__PID_EXIT);
        dcpi_loadmap_exit(d->lm, x->exits[i]);
        dcpi_proctab_exit(d->procs, x->exits[i]);
    }
    if (x)
        x->nexits = 0;
}

int dcpi__daemon_exits_pending(const daemon_t *d)
{
    const exits_t *x = dcpi__part_if(d, &part_exits);
    return x && x->nexits;
}

/* Exits are applied after the drain so that late samples of the process still resolve. */
static void on_exit_rec(void *arg, uint32_t pid)
{
    daemon_t *d = arg;
    exits_t *x = dcpi__part(d, &part_exits);
    if (!x)
        return; /* no memory: the process's mappings stay */
    if (x->nexits == MAXEXITS)
        dcpi__daemon_apply_exits(d);
    x->exits[x->nexits++] = (pid_t)pid;
}

static void on_lost(void *arg, int ev, uint64_t n)
{
    daemon_t *d = arg;
    d->st[ev].lost += n;
    dcpi__parts_loss(d, 0, n);
    d->st[ev].lost_pending += n;
}

static void on_throttle(void *arg, int ev)
{
    daemon_t *d = arg;
    d->st[ev].throttled++;
    dcpi__parts_loss(d, 1, 0); /* ids of inherited events are unknown: any may be theirs */
    if (!d->throttle_logged++)
        dcpi__log(DCPI_LOG_WARN,
                  "event %s throttled by the kernel (samples not taken; see "
                  "\"throttled\" in status)",
                  d->evs[ev].name);
}

static void on_ring(void *arg, int i)
{
    ((daemon_t *)arg)->cur_ring = i;
}

static const dcpi_sampler_handler_t *handler(daemon_t *d)
{
    static dcpi_sampler_handler_t h = {.sample = on_sample,
                                       .mmap2 = on_mmap2,
                                       .exec = on_exec,
                                       .comm = on_comm,
                                       .fork = on_fork,
                                       .exit = on_exit_rec,
                                       .lost = on_lost,
                                       .throttle = on_throttle,
                                       .ring = on_ring};
    h.arg = d;
    return &h;
}

/* Every ring in time order (an exec's mappings before the samples of the new program on
 * another CPU, a process's exit after its last samples); the value traces produced go to the
 * plugins before exits are applied. */
void dcpi__daemon_drain_all(daemon_t *d)
{
    dcpi_sampler_drain_merged(d->smp, handler(d));
    /* vtrace.c: the backend's own records (step rings, ptrace bursts) and the sink's traces */
    if (dcpi__parts_drain(d, (uint64_t)(dcpi__monotonic_s() * 1e9)) && d->mode == DCPI_SAMPLE_PID &&
        !d->quit) { /* the ptrace target is gone */
        dcpi__log(DCPI_LOG_INFO, "process %d exited", (int)d->o->pid);
        d->quit = 1;
    }
    dcpi__daemon_apply_exits(d);
}
