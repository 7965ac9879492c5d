/*
 * part.h - the daemon's parts (private to core/daemon/): each part (the JIT maps, the live view,
 * the duty cycle, the fleet push, the kernel's symbols, the value profiling, the cache writer,
 * ...) owns a struct of its own, made (zeroed) at its first use and freed at exit, and takes the
 * daemon's events through hooks (every hook may be NULL):
 *
 *   setup    the tables exist (loadmap, counts), before the sampler: 0 or a negative error (err)
 *   sampler  the sampler's options (registers, contexts, arm triggers) before it is opened
 *   start    the sampler is open: 0 or a negative error (err)
 *   target   the -p target is known (pid): 0 or a negative error (err)
 *   spawned  in the command's child, before its exec: 0, or -1 (the child fails)
 *   record   a sample of no PC event (an arm trigger, a breakpoint): 1 when it was the part's
 *   sample   a PC sample counted (event ev, image, offset from its tstart; cur_pid: its
 *            process), for the parts made by then only: nothing is made per sample
 *   user     a user-mode PC sample of the first event (s, the ring it came from; made parts only)
 *   unresolved  a user sample of pid at ip in no known image: 1 when the part mapped it (the
 *            sample is resolved again), else 0
 *   resolved a user sample resolved in img at *off, which the part may correct (made parts only)
 *   pid      pid's mappings are about to change (DCPI__PID_MMAP, _EXEC, _EXIT; made parts only)
 *   mmap     pid's new mapping, after the loadmap took it (made parts only)
 *   loss     records lost (n), or a throttle record (throttled; made parts only)
 *   drain    after the rings' drain (now: CLOCK_MONOTONIC ns): 1 when the -p target is gone
 *   timeout  the loop's wait (ms) the part needs, -1: none
 *   polls    1 when the part's work wants a drain after every wake-up
 *   fd       a descriptor for the loop to watch (its readiness: a drain), -1: none
 *   tick     the loop's timer, at every wake-up
 *   epoch    a new epoch began (its directory exists): 0 or a negative error (err)
 *   ended    the current epoch ended (its files are complete: rotation, exit)
 *   ahead    a flush is about to write table t (periods: each event's): a write-ahead copy
 *   written  a flush wrote one group's profile (an image's, or unknown@'s split by process)
 *   lost     a flush wrote event ev's lost count (unknown@'s header)
 *   flush    a flush wrote the PC and stack profiles (the part adds what it writes to r;
 *            d->flush_async: nobody waits for it)
 *   full     1 when the part's tables are 75% full (a flush is due; what is full into why)
 *   child    SIGCHLD: a child process of the daemon may have exited
 *   control  a control command (ctlserver.c): 1 when it was the part's (answered), else 0
 *   status   the part's lines of dcpictl status
 *   stop     the end is near: stop what runs beside the daemon (ptrace: detach) before the flush
 *   report   -- command / -p: the part's lines on stderr at exit
 *   exit     the teardown: free what the part holds (its struct is freed after)
 *
 * A part is one file: its ops, declared with DCPI_DAEMON_PART(name, .order = N, .size = ...,
 * .hook = ...) as part_<name> (which registers them: nothing else names the part), its state
 * behind dcpi__part(d, &part_<name>). The hooks are called in the parts' order
 * (.order, lowest first). The core (daemon.c, setup.c, records.c, flush.c, epochs.c,
 * ctlserver.c) calls them through dcpi__parts_*, never a part's own function.
 */
#ifndef DCPI_CORE_DAEMON_PART_H
#define DCPI_CORE_DAEMON_PART_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/sampling/aggregate.h"
#include "core/sampling/sampler.h"

struct daemon;
struct dcpi__answer;
struct dcpi_image;
struct flush_result;

enum { DCPI__PID_MMAP = 0, DCPI__PID_EXEC = 1, DCPI__PID_EXIT = 2 };

/* A mapping of an MMAP2 record. */
typedef struct dcpi__mmap {
    pid_t pid;
    uint64_t addr, len, pgoff, ino;
    uint32_t maj, min, prot;
    const char *path;
} dcpi__mmap_t;

/* One group of a flush: the counts of one image (or of unknown@) and one event. */
typedef struct dcpi__group {
    uint32_t image; /* its loadmap index, DCPI_AGG_IMAGE_KERNEL or DCPI_AGG_IMAGE_UNKNOWN */
    const char *path, *id, *dirname;
    uint64_t tstart, tsize, period;
    const dcpi_agg_entry_t *e; /* e[0].event is the group's */
    size_t n;
} dcpi__group_t;

typedef struct daemon dcpi__d_t;
typedef struct dcpi__part_ops {
    const char *name;
    int order;   /* its hooks are called in this order, lowest first */
    size_t size; /* its state's bytes */
    int (*setup)(dcpi__d_t *d, void *self, char *err);
    void (*sampler)(dcpi__d_t *d, void *self, dcpi_sampler_opts_t *x);
    int (*start)(dcpi__d_t *d, void *self, char *err);
    int (*target)(dcpi__d_t *d, void *self, pid_t pid, char *err);
    int (*spawned)(dcpi__d_t *d, void *self);
    int (*record)(dcpi__d_t *d, void *self, const dcpi_sample_t *s, int ring);
    void (*sample)(dcpi__d_t *d, void *self, int ev, uint32_t image, uint32_t off);
    void (*user)(dcpi__d_t *d, void *self, const dcpi_sample_t *s, int ring);
    int (*unresolved)(dcpi__d_t *d, void *self, pid_t pid, uint64_t ip);
    void (*resolved)(dcpi__d_t *d, void *self, pid_t pid, uint64_t ip, uint64_t t,
                     const struct dcpi_image *img, uint32_t *off);
    void (*pid)(dcpi__d_t *d, void *self, pid_t pid, int what);
    void (*mmap)(dcpi__d_t *d, void *self, const dcpi__mmap_t *m);
    void (*loss)(dcpi__d_t *d, void *self, int throttled, uint64_t n);
    int (*drain)(dcpi__d_t *d, void *self, uint64_t now_ns);
    int (*timeout)(dcpi__d_t *d, void *self);
    int (*polls)(dcpi__d_t *d, void *self);
    int (*fd)(dcpi__d_t *d, void *self);
    void (*tick)(dcpi__d_t *d, void *self);
    int (*epoch)(dcpi__d_t *d, void *self, char *err);
    void (*ended)(dcpi__d_t *d, void *self);
    void (*ahead)(dcpi__d_t *d, void *self, dcpi_agg_t *t, const uint64_t *periods);
    void (*written)(dcpi__d_t *d, void *self, const dcpi__group_t *g);
    void (*lost)(dcpi__d_t *d, void *self, int ev, uint64_t lost);
    void (*flush)(dcpi__d_t *d, void *self, const uint64_t *periods, struct flush_result *r);
    int (*full)(dcpi__d_t *d, void *self, char *why, size_t len);
    void (*child)(dcpi__d_t *d, void *self);
    int (*control)(dcpi__d_t *d, void *self, const char *cmd, struct dcpi__answer *a);
    void (*status)(dcpi__d_t *d, void *self, struct dcpi__answer *a);
    void (*stop)(dcpi__d_t *d, void *self);
    void (*report)(dcpi__d_t *d, void *self);
    void (*exit)(dcpi__d_t *d, void *self);
} dcpi__part_ops_t;

/* The registry: a pointer to each part's ops in the ELF section dcpi_parts, which the linker
 * bounds with __start_dcpi_parts and __stop_dcpi_parts. (clang's ASan would pad the pointers:
 * they are left out of it.) A program links core/daemon/'s objects whole (CMakeLists.txt), since
 * nothing else refers to a part's file. */
#if defined(__clang__)
#define DCPI__PART_NOASAN __attribute__((no_sanitize("address")))
#else
#define DCPI__PART_NOASAN
#endif
#define DCPI_DAEMON_PART(id, ...)                                                                  \
    static const dcpi__part_ops_t part_##id = {.name = #id, __VA_ARGS__};                          \
    static const dcpi__part_ops_t *const part_##id##_registered                                    \
        __attribute__((section("dcpi_parts"), used, aligned(sizeof(void *)))) DCPI__PART_NOASAN =  \
            &part_##id

/* part_<name> before its DCPI_DAEMON_PART (a tentative definition), for the functions above it. */
#define DCPI_DAEMON_PART_DECLARE(id) static const dcpi__part_ops_t part_##id

/* The registered parts in their order (n: how many); names: their names, space-separated. */
const dcpi__part_ops_t *const *dcpi__parts(size_t *n);
void dcpi__parts_names(char *buf, size_t len);

/* The part's state, made (zeroed) at its first use; NULL without memory. */
void *dcpi__part(struct daemon *d, const dcpi__part_ops_t *ops);
/* A part's state when it was made, else NULL (nothing made for a look). */
void *dcpi__part_if(const struct daemon *d, const dcpi__part_ops_t *ops);

/* Every part's hook, in their order. Those marked "made" above go to the parts made by then
 * only; the others make a part's state first (except exit). The first error of an int hook
 * stops the others; record, unresolved, control: 1 when a part took it. */
int dcpi__parts_setup(struct daemon *d, char *err);
void dcpi__parts_sampler(struct daemon *d, dcpi_sampler_opts_t *x);
int dcpi__parts_start(struct daemon *d, char *err);
int dcpi__parts_target(struct daemon *d, pid_t pid, char *err);
int dcpi__parts_spawned(struct daemon *d);
int dcpi__parts_record(struct daemon *d, const dcpi_sample_t *s, int ring);
void dcpi__parts_sample(struct daemon *d, int ev, uint32_t image, uint32_t off);
void dcpi__parts_user(struct daemon *d, const dcpi_sample_t *s, int ring);
int dcpi__parts_unresolved(struct daemon *d, pid_t pid, uint64_t ip);
void dcpi__parts_resolved(struct daemon *d, pid_t pid, uint64_t ip, uint64_t t,
                          const struct dcpi_image *img, uint32_t *off);
void dcpi__parts_pid(struct daemon *d, pid_t pid, int what);
void dcpi__parts_mmap(struct daemon *d, const dcpi__mmap_t *m);
void dcpi__parts_loss(struct daemon *d, int throttled, uint64_t n);
int dcpi__parts_drain(struct daemon *d, uint64_t now_ns);
int dcpi__parts_timeout(struct daemon *d); /* the smallest, -1: none */
int dcpi__parts_polls(struct daemon *d);
int dcpi__parts_fd(struct daemon *d, size_t i); /* part i's descriptor, -1: none */
void dcpi__parts_tick(struct daemon *d);
int dcpi__parts_epoch(struct daemon *d, char *err);
void dcpi__parts_ended(struct daemon *d);
void dcpi__parts_ahead(struct daemon *d, dcpi_agg_t *t, const uint64_t *periods);
void dcpi__parts_written(struct daemon *d, const dcpi__group_t *g);
void dcpi__parts_lost(struct daemon *d, int ev, uint64_t lost);
void dcpi__parts_flush(struct daemon *d, const uint64_t *periods, struct flush_result *r);
int dcpi__parts_full(struct daemon *d, char *why, size_t len);
void dcpi__parts_child(struct daemon *d);
int dcpi__parts_control(struct daemon *d, const char *cmd, struct dcpi__answer *a);
void dcpi__parts_status(struct daemon *d, struct dcpi__answer *a);
void dcpi__parts_stop(struct daemon *d);
void dcpi__parts_report(struct daemon *d);
void dcpi__parts_exit(struct daemon *d);

#endif
