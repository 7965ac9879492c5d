/*
 * cachejob.c - the code and symbol caches of the images a flush wrote (DB/.codecache/ID,
 * DB/.symcache/syms-ID.gz; symcache.c makes them) written by a child process, a part (part.h).
 * Copying and symbolising a large library takes from a few hundred ms to seconds (libLLVM: 1.6 s
 * here), time in which the daemon did not drain its rings: under load the first flushes of a
 * system-wide run lost thousands of samples to ring overflows there. Each image id is queued once
 * per run; at the end of a flush the child gets the queue (argv), writes the files atomically (the
 * same writers as before, each file fsynced) and exits; the loop reaps it on SIGCHLD. The child is
 * dcpid run again (posix_spawn of /proc/self/exe), not a fork: a fork copies the locks other
 * threads hold (the push sender's, in malloc or libcurl), and a child that needs one hangs (seen
 * under ASan: e2e_fleet_daemon's dcpid never exited). A flush that is
 * asked for (dcpictl flush, epoch, quit) and the last one at exit wait for it, draining the
 * rings meanwhile, so what they answer is on disk. The child holds no descriptor of the daemon
 * but the log's (its lock and socket close with the daemon); the symbolising's memory peak is
 * the child's, not the daemon's (logged when it is reaped: "writer pid N peak RSS M kB"). When the
 * spawn fails the work is done in the daemon, as before.
 */
#include <errno.h>
#include <spawn.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/log.h"
#include "core/base/mem.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/symcache.h"
#include "core/image/debuginfod.h"
#include "dcpi/errno.h"

extern char **environ;

typedef struct dcpi__cachejob {
    char *path, *id;
} dcpi__cachejob_t;

/* The part's state: images queued for DB/.codecache and DB/.symcache, ids queued this run
 * (fnv1a), the child writing them (0: none). */
typedef struct cache_part {
    dcpi__cachejob_t *q;
    size_t n, cap;
    uint64_t *seen;
    size_t nseen, capseen;
    pid_t pid;
} cache_part_t;

DCPI_DAEMON_PART_DECLARE(cache);

/* 1 when id was queued before in this run (and now is). */
static int seen_before(daemon_t *d, const char *id)
{
    cache_part_t *c = dcpi__part(d, &part_cache);
    if (!c)
        return 1; /* no memory: not queued */
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, id, strlen(id));
    for (size_t i = 0; i < c->nseen; i++)
        if (c->seen[i] == h)
            return 1;
    if (dcpi__grow((void **)&c->seen, &c->capseen, c->nseen + 1, sizeof(*c->seen)) < 0)
        return 0; /* no memory to remember it: queue it (again) */
    c->seen[c->nseen++] = h;
    return 0;
}

static void cache_symbols(daemon_t *d, const dcpi_image_t *img)
{
    cache_part_t *c = dcpi__part(d, &part_cache);
    if (!c)
        return;
    if (!img->probed_ok || !img->info.id_is_buildid || img->path[0] != '/' ||
        seen_before(d, img->info.id))
        return;
    if (dcpi__grow((void **)&c->q, &c->cap, c->n + 1, sizeof(*c->q)) < 0)
        return;
    dcpi__cachejob_t *j = &c->q[c->n];
    j->path = strdup(img->path);
    j->id = strdup(img->info.id);
    if (!j->path || !j->id) {
        free(j->path);
        free(j->id);
        return;
    }
    c->n++;
}

static void clear_queue(daemon_t *d)
{
    cache_part_t *c = dcpi__part_if(d, &part_cache);
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++) {
        free(c->q[i].path);
        free(c->q[i].id);
    }
    c->n = 0;
}

static void run_queue(daemon_t *d)
{
    cache_part_t *c = dcpi__part_if(d, &part_cache);
    if (!c)
        return;
    for (size_t i = 0; i < c->n; i++)
        dcpi__symcache_image(d->db, c->q[i].path, c->q[i].id, c->q[i].path);
}

/* The writer: dcpid itself run again (exec: a fresh process, so no lock another thread of the
 * daemon holds, the push sender's in malloc or libcurl, is inherited locked) with
 * DCPI__CACHE_WRITER set and argv "dcpid DB PATH ID [PATH ID]...": dcpi_daemon_cache_writer.
 * Its stderr is the daemon's log. The pid, or -1 (errno set). */
static pid_t spawn_writer(daemon_t *d)
{
    cache_part_t *c = dcpi__part_if(d, &part_cache);
    char **argv = calloc(2 * c->n + 3, sizeof *argv);
    if (!argv)
        return -1;
    argv[0] = "dcpid";
    argv[1] = (char *)d->db;
    for (size_t i = 0; i < c->n; i++) {
        argv[2 + 2 * i] = c->q[i].path;
        argv[3 + 2 * i] = c->q[i].id;
    }
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **envp = calloc(ne + 2, sizeof *envp); /* (not setenv: other threads read environ) */
    if (!envp) {
        free(argv);
        return -1;
    }
    memcpy(envp, environ, ne * sizeof *envp);
    envp[ne] = "DCPI__CACHE_WRITER=1";
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0 && dcpi__log_fd() != 2)
        rc = posix_spawn_file_actions_adddup2(&fa, dcpi__log_fd(), 2);
    if (rc == 0) /* no descriptor of the daemon's (its lock, socket, events) but the log */
        rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    if (rc == 0)
        rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    free(argv);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    return pid;
}

int dcpi_daemon_cache_writer(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    if (dcpi__log_stderr_is_journal()) /* (the daemon's log is the journal: so is our stderr) */
        dcpi__log_journal(1);
    dcpi_debuginfod_off(); /* as in the daemon: its caches never wait on a debuginfod server */
    dcpi__sync_defer(0);   /* each file fsynced: the daemon's syncfs does not wait for us */
    for (int i = 2; i + 1 < argc; i += 2)
        dcpi__symcache_image(argv[1], argv[i], argv[i + 1], argv[i]);
    return 0;
}

/* How long a wait for the writer may last: a writer that hangs (whatever the cause) must not
 * hold up a flush or the exit for ever; the slowest writes seen take a few seconds (libLLVM: 1.6
 * s). */
#define CACHE_WAIT_MAX_NS (120LL * 1000 * 1000 * 1000)

static void cache_reap(daemon_t *d, int wait)
{
    cache_part_t *c = dcpi__part_if(d, &part_cache);
    if (!c)
        return;
    long long waited = 0;
    while (c->pid > 0) {
        int st = 0;
        struct rusage ru = {0};
        pid_t r = wait4(c->pid, &st, WNOHANG, &ru);
        if (r == c->pid || (r < 0 && errno != EINTR)) {
            if (r == c->pid) /* its memory is the machine's too: say what it took */
                dcpi__log(DCPI_LOG_INFO, "code and symbol caches: writer pid %d peak RSS %ld kB",
                          (int)c->pid, ru.ru_maxrss);
            if (r == c->pid && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
                dcpi__log(DCPI_LOG_WARN, "code and symbol caches: the writer (pid %d) %s %d",
                          (int)c->pid, WIFSIGNALED(st) ? "was killed by signal" : "exited",
                          WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            c->pid = 0;
            return;
        }
        if (!wait)
            return;
        if (waited >= CACHE_WAIT_MAX_NS) {
            dcpi__log(DCPI_LOG_WARN,
                      "code and symbol caches: the writer (pid %d) still runs after %lld s: killed "
                      "(the caches it had not written yet are missing)",
                      (int)c->pid, CACHE_WAIT_MAX_NS / 1000000000LL);
            kill(c->pid, SIGKILL);
            wait = 0; /* reaped below, or by the next call */
            continue;
        }
        dcpi__daemon_drain_all(d); /* the rings go on filling while we wait */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        waited += 10 * 1000 * 1000;
    }
}

static void cache_start(daemon_t *d)
{
    cache_part_t *c = dcpi__part_if(d, &part_cache);
    if (!c)
        return;
    cache_reap(d, 0);
    if (c->pid > 0 || c->n == 0)
        return; /* the writer is busy: the queue waits for the next flush */
    pid_t pid = spawn_writer(d);
    if (pid < 0) {
        dcpi__log(DCPI_LOG_WARN, "code and symbol caches: spawn: %s; written by the daemon",
                  strerror(errno));
        run_queue(d);
    } else {
        c->pid = pid;
    }
    clear_queue(d);
}

static void cache_exit(daemon_t *d, void *self)
{
    cache_part_t *c = self;
    if (c->pid > 0) /* (the exit's flush waited for it: only after a failed start) */
        while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    c->pid = 0;
    clear_queue(d);
    free(c->q);
    free(c->seen);
    c->q = NULL;
    c->seen = NULL;
    c->cap = c->nseen = c->capseen = 0;
}

/* A flushed image's code and symbols queued (the kernel's are kernel.c's). */
static void cache_written(daemon_t *d, void *self, const dcpi__group_t *g)
{
    if (g->image != DCPI_AGG_IMAGE_KERNEL && g->image != DCPI_AGG_IMAGE_UNKNOWN)
        cache_symbols(d, dcpi_loadmap_image(d->lm, g->image));
}

/* dcpi_loadmap_on_unnamed's callback: an image whose path names no file (a memfd program, a
 * deleted file) has its code and symbols kept from src while its process lives. */
static void keep_unnamed(void *ctx, const dcpi_image_t *img, const char *src)
{
    daemon_t *d = ctx;
    if (!img->info.id_is_buildid)
        return;
    dcpi__symcache_image(d->db, img->path, img->info.id, src); /* now: src may go away */
}

static int cache_setup(daemon_t *d, void *self, char *err)
{
    dcpi_loadmap_on_unnamed(d->lm, keep_unnamed, d);
    return 0;
}

/* The end of a flush: the queue to a child; a flush that is asked for waits for it (and for
 * an earlier one, so that its queue goes too). */
static void cache_flush(daemon_t *d, void *self, const uint64_t *periods, flush_result_t *r)
{
    if (!d->flush_async)
        cache_reap(d, 1);
    cache_start(d);
    if (!d->flush_async)
        cache_reap(d, 1);
}

/* SIGCHLD: the writer may be done. */
static void cache_child(daemon_t *d, void *self)
{
    cache_reap(d, 0);
}

DCPI_DAEMON_PART(cache, .order = 90, .size = sizeof(cache_part_t), .setup = cache_setup,
                 .written = cache_written, .flush = cache_flush, .child = cache_child,
                 .exit = cache_exit);
