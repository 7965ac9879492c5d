/*
 * jit.c - JIT code named from perf maps (issue 13 item 4): a program that generates code
 * (LuaJIT, node, a JVM with an agent) may write /tmp/perf-PID.map, one line per function,
 * "START SIZE name" (hex, hex, the rest). A user sample of such a process that falls in no
 * mapped image is looked up there: when the map covers it, a mapping of the pseudo image
 * "[jit pid PID]" over the map's whole range is added to the loadmap (so the samples keep their
 * process and their address), and at each flush the map is written into that image's directory
 * as `jitsyms` (kallsyms format, addresses as the image's offsets) for dcpiprof and dcpilist.
 * A map is read again only when its size or mtime changed (it grows as the JIT compiles).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"

#define JIT_PGOFF 0x1000 /* offsets start here: kallsyms-format files refuse address 0 */

/* The [lo, hi) the perf map of pid covers; 0 when it has none. */
static int map_range(pid_t pid, uint64_t *lo, uint64_t *hi)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    *lo = UINT64_MAX;
    *hi = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, n;
        if (sscanf(line, "%llx %llx", &a, &n) != 2 || n == 0)
            continue;
        if (a < *lo)
            *lo = a;
        if (a + n > *hi)
            *hi = a + n;
    }
    fclose(f);
    return *hi > *lo && *hi - *lo < (1ull << 31);
}

static jit_proc_t *jit_slot(daemon_t *d, pid_t pid)
{
    jit_proc_t *free_slot = NULL;
    for (size_t i = 0; i < DCPI_DAEMON_MAXJIT; i++) {
        if (d->jit[i].pid == pid)
            return &d->jit[i];
        if (!d->jit[i].pid && !free_slot)
            free_slot = &d->jit[i];
    }
    return free_slot ? free_slot : &d->jit[(unsigned)pid % DCPI_DAEMON_MAXJIT];
}

int dcpi__daemon_jit_map(daemon_t *d, pid_t pid, uint64_t ip)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    if (stat(path, &st) != 0)
        return 0; /* no map (yet): nothing is remembered, the next sample looks again */
    jit_proc_t *j = jit_slot(d, pid);
    if (j->pid == pid && j->size == (uint64_t)st.st_size && j->mtime == st.st_mtim.tv_nsec &&
        j->mtime_s == (uint64_t)st.st_mtim.tv_sec)
        return 0; /* read already, unchanged: it does not cover ip */
    *j = (jit_proc_t){.pid = pid,
                      .size = (uint64_t)st.st_size,
                      .mtime = st.st_mtim.tv_nsec,
                      .mtime_s = (uint64_t)st.st_mtim.tv_sec};
    uint64_t lo, hi;
    if (!map_range(pid, &lo, &hi) || ip < lo || ip >= hi)
        return 0;
    char name[64];
    snprintf(name, sizeof name, "[jit pid %d]", (int)pid);
    if (dcpi_loadmap_mmap(d->lm, pid, lo, hi - lo, JIT_PGOFF, 0, 0, 0, 0x4 /* PROT_EXEC */, name) <
        0)
        return 0;
    j->lo = lo;
    return 1;
}

void dcpi__daemon_write_jitsyms(daemon_t *d, const char *path, const char *dirname)
{
    int pid;
    if (sscanf(path, "[jit pid %d]", &pid) != 1)
        return;
    jit_proc_t *j = jit_slot(d, pid);
    char map[64], line[1024], out[4400], err[DCPI_ERRLEN];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", pid);
    FILE *f = fopen(map, "re");
    if (!f || j->pid != pid) {
        if (f)
            fclose(f);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    while (m && fgets(line, sizeof line, f)) {
        unsigned long long a, n;
        int at = 0;
        if (sscanf(line, "%llx %llx %n", &a, &n, &at) < 2 || at == 0 || a < j->lo)
            continue;
        line[strcspn(line, "\n")] = '\0';
        fprintf(m, "%" PRIx64 " t %s\n", (uint64_t)(a - j->lo + JIT_PGOFF), line + at);
    }
    fclose(f);
    if (m)
        fclose(m);
    (void)dcpi__pathf(out, sizeof out, "%s/%s/%s/%s/jitsyms", d->db, d->epoch, d->platform,
                      dirname);
    if (text && dcpi__write_atomic(out, text, len, err) < 0)
        dcpi__log(DCPI_LOG_ERR, "%s", err);
    free(text);
}
