/*
 * jit.c - JIT code named from perf maps (issue 13 item 4): a program that generates code
 * (LuaJIT, node, a JVM with an agent) may write /tmp/perf-PID.map, one line per function,
 * "START SIZE name" (hex, hex, the rest). A user sample of such a process that falls in no
 * mapped image is looked up there: the map's entries outside the process's file images are
 * grouped by aligned regions of DCPI_JIT_REGION bytes, and a mapping of the pseudo image
 * "[jit pid PID]" over each region's code is added to the loadmap (so the samples keep their
 * process and their address; region i at offsets 0x1000 + i x DCPI_JIT_REGION, so a map may
 * span the whole address space, as node's does). At each flush the map is written into that
 * image's directory as `jitmap` (perf map format, addresses as the image's offsets, sizes kept:
 * code between two functions stays unnamed, as perf leaves it) for dcpiprof and dcpilist
 * (databases written before have `jitsyms`, kallsyms format, read still). Entries inside a file
 * image (node's builtins in its binary) are named from that file, as perf names them. A map is read
 * again only when its size or mtime changed (it grows as the JIT compiles).
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

/* The index of the region holding a (assigned when new and there is room), or -1. */
static int region_of(jit_proc_t *j, uint64_t a, int assign)
{
    uint64_t base = a & ~(DCPI_JIT_REGION - 1);
    for (unsigned r = 0; r < j->nregions; r++)
        if (j->region[r].base == base)
            return (int)r;
    if (!assign || j->nregions == DCPI_JIT_MAXREGIONS)
        return -1;
    j->region[j->nregions] = (jit_region_t){.base = base, .lo = a, .hi = a};
    return (int)j->nregions++;
}

/* An entry the process's file images already hold (node's builtins inside its binary): named
 * from that file, as perf names them, so no JIT mapping may cover it. */
static int in_file_image(daemon_t *d, pid_t pid, uint64_t a)
{
    dcpi_image_t *img;
    uint64_t start, pgoff;
    return dcpi_loadmap_lookup(d->lm, pid, a, &img, &start, &pgoff) == 0 &&
           strncmp(img->path, "[jit pid ", 9) != 0;
}

/* Read pid's perf map into j's regions (each grows to cover its entries). */
static void read_regions(daemon_t *d, jit_proc_t *j, pid_t pid)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long a, n;
        if (sscanf(line, "%llx %llx", &a, &n) != 2 || n == 0 || a + n < a)
            continue;
        if (in_file_image(d, pid, a))
            continue;
        int r = region_of(j, a, 1);
        if (r < 0) {
            j->outside++;
            continue;
        }
        jit_region_t *g = &j->region[r];
        uint64_t end = a + n > g->base + DCPI_JIT_REGION ? g->base + DCPI_JIT_REGION : a + n;
        g->lo = a < g->lo ? a : g->lo;
        g->hi = end > g->hi ? end : g->hi;
    }
    fclose(f);
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

/* The offset in "[jit pid N]" of address a in region r. */
static uint64_t region_offset(const jit_proc_t *j, int r, uint64_t a)
{
    return JIT_PGOFF + (uint64_t)r * DCPI_JIT_REGION + (a - j->region[r].base);
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
    if (j->pid != pid)
        *j = (jit_proc_t){.pid = pid};
    j->size = (uint64_t)st.st_size;
    j->mtime = st.st_mtim.tv_nsec;
    j->mtime_s = (uint64_t)st.st_mtim.tv_sec;
    read_regions(d, j, pid);
    char name[64];
    snprintf(name, sizeof name, "[jit pid %d]", (int)pid);
    int covered = 0;
    for (unsigned r = 0; r < j->nregions; r++) {
        const jit_region_t *g = &j->region[r];
        if (g->hi > g->lo &&
            dcpi_loadmap_mmap(d->lm, pid, g->lo, g->hi - g->lo, region_offset(j, (int)r, g->lo), 0,
                              0, 0, 0x4 /* PROT_EXEC */, name) == 0)
            covered |= ip >= g->lo && ip < g->hi;
    }
    return covered;
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
        int r = sscanf(line, "%llx %llx %n", &a, &n, &at) < 2 || at == 0 ? -1 : region_of(j, a, 0);
        if (r < 0 || a < j->region[r].lo || a >= j->region[r].hi)
            continue;
        line[strcspn(line, "\n")] = '\0';
        fprintf(m, "%" PRIx64 " %llx %s\n", region_offset(j, r, a), n, line + at);
    }
    fclose(f);
    if (m)
        fclose(m);
    (void)dcpi__pathf(out, sizeof out, "%s/%s/%s/%s/jitmap", d->db, d->epoch, d->platform, dirname);
    if (text && dcpi__write_atomic(out, text, len, err) < 0)
        dcpi__log(DCPI_LOG_ERR, "%s", err);
    free(text);
}
