/*
 * daemon-int.h - dcpid's state, shared by the files of core/daemon/ and by nobody else (not
 * exported): daemon.c (the entry, the epoll loop, the process modes), setup.c (set-up and
 * teardown), records.c (the perf records of the rings), flush.c (flushing and epochs),
 * ctlserver.c (the control socket server and status), epochs.c (epochs over time).
 * daemon_t holds what every part shares; the parts (part.h: top.c, jit.c, push.c's fleet push
 * and duty cycle, kernel.c, vtrace.c's value profiling, cachejob.c, records.c's exits,
 * epochs.c's counts) keep their own state in d->part.
 *
 * Every way a sample can fail to reach a profile is counted: ring overflows (LOST and
 * LOST_SAMPLES records, per event), samples outside every image (unknown, per event, written
 * to unknown@<platform>), malformed records (sampler stats), and a count table that could not
 * grow (dropped, added to the event's lost). status shows all of them.
 */
#ifndef DCPI_CORE_DAEMON_INT_H
#define DCPI_CORE_DAEMON_INT_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/base/err.h"
#include "core/base/units.h"
#include "core/image/image.h"
#include "core/image/loadmap.h"
#include "core/sampling/aggregate.h"
#include "core/sampling/dstacks.h"
#include "core/sampling/proctab.h"
#include "core/sampling/sampler.h"
#include "core/store/db.h"
#include "core/values/values.h"
#include "core/daemon/part.h"
#include "dcpi/api.h"

/* daemon.h's options, by name only: daemon.c includes this header, which must not include
 * daemon.h back (one module, daemon.c + daemon.h, no include cycle). */
typedef struct dcpi_daemon_opts dcpi_daemon_opts_t;

#define DCPI__MAXPARTS 16 /* parts (part.h) a daemon can have */
#define MAXEXITS       4096
#define TRIED_SLOTS    8192
#define TAG_TIMER      1
#define TAG_SIGNAL     2
#define TAG_SOCK       3
#define TAG_PIDFD      4
#define TAG_PART       16 /* + i: part i's descriptor (its fd hook) */
#define TAG_RING       (TAG_PART + DCPI__MAXPARTS)
#define FAIL_RETRY_S   10

typedef struct ev_stats {
    uint64_t samples, lost, throttled, unknown;
    uint64_t unknown_pending, lost_pending; /* not yet in a written unknown@ profile */
    uint64_t unknown_swap, lost_swap;       /* ... of them when the flush under way began */
} ev_stats_t;

/* The kernel image (samples of kernel mode are counted at ip - tstart), found by kernel.c's
 * setup. */
typedef struct daemon_kernel {
    int ok;                    /* its text range is known */
    uint64_t tstart, tsize;    /* its text */
    char id[DCPI_IMAGE_IDLEN]; /* its identity (build-id) */
} daemon_kernel_t;

typedef struct daemon {
    const dcpi_daemon_opts_t *o;
    enum dcpi_sampler_mode mode;
    char db[4096], platform[DCPI_NAMELEN], epoch[DCPI_NAMELEN], sock_path[4096], log_path[4096];
    int lock_fd, sock_fd, epfd, tfd, sfd, pidfd;
    dcpi_event_spec_t evs[DCPI_SAMPLER_MAXEV];
    int nev;
    ev_stats_t st[DCPI_SAMPLER_MAXEV];
    dcpi_sampler_t *smp;
    dcpi_loadmap_t *lm;
    dcpi_agg_t *agg, *agg_spare; /* samples go to agg; a flush swaps them and writes the spare */
    dcpi_proctab_t *procs;       /* pid -> (pid, command) ids the count table keys samples by */
    dcpi_dstacks_t *stk;         /* -g, else NULL */
    int cur_ring;                /* the ring being drained */
    daemon_kernel_t kern;        /* kernel.c: the kernel image */
    /* flushing */
    double start, last_flush, next_flush, last_fail;
    uint64_t total_samples, samples_at_flush, flushed_profiles;
    uint64_t samples_at_swap, lost_at_swap; /* when the last flush began (what it wrote) */
    time_t epoch_start, last_flush_wall;    /* the current epoch's start; the last flush's end */
    uint64_t flushes; /* completed or failed, with their cost (status "flushes") */
    double flush_ms_last, flush_ms_max, flush_ms_total;
    char flush_error[DCPI_ERRLEN];
    unsigned cpuspeed;
    int cpucount, throttle_logged, quit, exit_code;
    pid_t cur_pid, child;       /* the sample being counted (records.c); the command or -p target */
    int flush_async;            /* this flush may leave the cache writer running (cachejob.c) */
    void *part[DCPI__MAXPARTS]; /* the parts' own states (part.h, in their order), NULL: not
                                 * made yet */
} daemon_t;

/* ctlserver.c: an answer to a control client, line by line (dcpi__daemon_say adds the '\n'). */
typedef struct dcpi__answer {
    char buf[65536];
    size_t len;
} dcpi__answer_t;
void dcpi__daemon_say(dcpi__answer_t *a, const char *fmt, ...) DCPI_PRINTF(2, 3);

/* top.c: the live view's window (dcpitop): count a PC sample of the first event while a client
 * watches; answer "top [N] [pid=P] [comm=C]" and start the next window; end the view when no
 * client asked for DCPI_DAEMON_TOP_IDLE seconds (its table and symbols are freed). */
#define DCPI_DAEMON_TOP_IDLE    10
#define DCPI_DAEMON_TOP_ENTRIES 65536

typedef struct flush_result {
    size_t profiles, failures;
    uint64_t samples;
} flush_result_t;

/* setup.c: the part before the target runs (database, log, lock, events, tables, the parts'
 * setup), then sampling (perf events, the parts' start, epoch, /proc scan, socket, fds,
 * enable); the teardown of everything. */
int dcpi__daemon_setup_base(daemon_t *d, char *err);
int dcpi__daemon_setup_sampling(daemon_t *d, pid_t target, const sigset_t *sigs, char *err);
void dcpi__daemon_cleanup(daemon_t *d);

/* records.c: drain one ring or all of them into the tables; apply the deferred exits. */
void dcpi__daemon_drain_all(daemon_t *d);
void dcpi__daemon_apply_exits(daemon_t *d);
/* records.c: whether exits wait to be applied. */
int dcpi__daemon_exits_pending(const daemon_t *d);

/* flush.c: the rings are drained this often during a flush (into the other count table) */
#define DCPI_DAEMON_FLUSH_DRAIN_MS 50
/* flush.c: write everything in memory (what could not be written stays: DCPI_EIO); flush when
 * a table is 75% full; start a new epoch. */
int dcpi__daemon_flush(daemon_t *d, flush_result_t *r);
void dcpi__daemon_flush_if_full(daemon_t *d);
/* The group of the count table's entries e[0..n) (one image and event), its directory's name
 * into dirname; flush.c's writes and push.c's write-ahead. */
void dcpi__daemon_group_of(const daemon_t *d, const dcpi_agg_entry_t *e, size_t n, uint64_t period,
                           char *dirname, size_t len, dcpi__group_t *g);
/* The current epoch's facts for the value profiles' headers and the recording. */
dcpi_values_flush_info_t dcpi__daemon_flush_info(const daemon_t *d);

/* epochs.c: start a new epoch (epoch.info written, open); rewrite the current one's epoch.info;
 * flush and rotate to a new epoch (then retention); rotate when -epoch-every is due; remove the
 * oldest epochs of the platform as -keep says (never the current one); remove the current epoch
 * (a command that could not start). */
int dcpi__daemon_new_epoch(daemon_t *d, char *err);
uint64_t dcpi__daemon_lost(const daemon_t *d); /* every event's lost samples */
void dcpi__daemon_epoch_info(daemon_t *d, int open);
int dcpi__daemon_rotate(daemon_t *d, char *err);
void dcpi__daemon_rotate_if_due(daemon_t *d);
void dcpi__daemon_retain(daemon_t *d);
void dcpi__daemon_drop_epoch(daemon_t *d);

/* ctlserver.c: a warning line for event ev when over 1% of its samples were lost or left
 * unattributed (1, into buf), else 0: status shows it, and dcpid -- cmd prints it at exit. */
int dcpi__daemon_loss_warning(const daemon_t *d, int ev, char *buf, size_t len);

/* ctlserver.c: open the control socket; answer one client. */
int dcpi__daemon_open_socket(daemon_t *d, char *err);
void dcpi__daemon_serve_client(daemon_t *d);

#endif
