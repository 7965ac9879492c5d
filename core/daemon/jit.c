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
 * again only when its size or mtime changed (it grows as the JIT compiles), only its new lines.
 * A JIT may reuse the addresses of code it dropped (node after a deoptimisation): a line whose
 * code overlaps an earlier named line's is of the next generation, named in a region of its own
 * (generation, base), and a sample there is placed at that region's offsets when it was taken
 * after the line was written (jit_place: the newest such line wins; its time is the
 * map's mtime when read, within [last read, read]), else at the code's older offsets. Naming all
 * of them from the final map (as perf does) gives one function another's samples.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/base/mem.h"
#include "core/daemon/daemon-int.h"

DCPI_DAEMON_PART_DECLARE(jit);

/* jit.c: a process whose perf map (/tmp/perf-PID.map) was looked at. */
#define DCPI_DAEMON_MAXJIT 64
/* A perf map's code is named by regions of DCPI_JIT_REGION bytes (aligned), at most
 * DCPI_JIT_MAXREGIONS per process: region i's offsets in "[jit pid N]" start at
 * 0x1000 + i x DCPI_JIT_REGION, so a map may span the whole address space (node: builtins
 * inside its binary, code near 0x7fc9...) and its offsets still fit 32 bits. */
#define DCPI_JIT_REGION     (64ull << 20)
#define DCPI_JIT_MAXREGIONS 32
typedef struct jit_region {
    uint64_t base;   /* aligned start of the region */
    uint64_t lo, hi; /* the map's code in it, [lo, hi) */
    unsigned gen;    /* 0, or n: the code of entries reusing addresses of generation n - 1 */
} jit_region_t;
/* A map line read: its code [start, end) and its region (-1: not named from the map). */
typedef struct jit_ent {
    uint64_t start, end;
    int region;
    uint64_t since; /* of a later generation: CLOCK_MONOTONIC ns when the line was written */
} jit_ent_t;
typedef struct jit_proc {
    pid_t pid;              /* 0: free */
    uint64_t size, mtime_s; /* the map file as last read */
    long mtime;             /* (nanoseconds) */
    uint64_t off;           /* bytes of the map read (its complete lines; maps only grow) */
    jit_region_t region[DCPI_JIT_MAXREGIONS];
    unsigned nregions;
    uint64_t outside; /* map entries in no region (more than DCPI_JIT_MAXREGIONS) */
    jit_ent_t *ent;   /* the map's lines in file order (ent[k]: line k) */
    size_t nent, cap;
    size_t *gen, ngen, gcap; /* the entries of a later generation (reused addresses), in order */
    uint64_t read, looked;   /* CLOCK_MONOTONIC ns: last read; sample time of the last stat */
} jit_proc_t;

#define DCPI_JIT_LOOK_NS 10000000ull /* a perf map looked at again (ns of sample time) */

/* The part's state: the processes with a perf map. */
typedef struct jit_part {
    jit_proc_t jit[DCPI_DAEMON_MAXJIT];
} jit_part_t;

#define JIT_PGOFF 0x1000 /* offsets start here: kallsyms-format files refuse address 0 */

/* The index of the region of generation gen holding a (assigned when new and there is room),
 * or -1. */
static int region_of(jit_proc_t *j, uint64_t a, unsigned gen, int assign)
{
    uint64_t base = a & ~(DCPI_JIT_REGION - 1);
    for (unsigned r = 0; r < j->nregions; r++)
        if (j->region[r].base == base && j->region[r].gen == gen)
            return (int)r;
    if (!assign || j->nregions == DCPI_JIT_MAXREGIONS)
        return -1;
    j->region[j->nregions] = (jit_region_t){.base = base, .lo = a, .hi = a, .gen = gen};
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

/* The generation of a new entry [a, end): 0, or one more than the newest generation of the
 * named entries read before whose code it overlaps (the JIT reused their addresses). */
static unsigned generation(const jit_proc_t *j, uint64_t a, uint64_t end)
{
    unsigned gen = 0, near = 0;
    for (unsigned r = 0; r < j->nregions && !near; r++)
        near = j->region[r].lo < end && a < j->region[r].hi;
    for (size_t k = 0; near && k < j->nent; k++) { /* (new code past the old: no scan) */
        const jit_ent_t *e = &j->ent[k];
        if (e->region >= 0 && e->start < end && a < e->end && j->region[e->region].gen + 1 > gen)
            gen = j->region[e->region].gen + 1;
    }
    return gen;
}

/* One map line: its entry, named in a region (of its generation) when it is JIT code; since:
 * when it was written (CLOCK_MONOTONIC ns, an estimate). */
static int add_line(daemon_t *d, jit_proc_t *j, pid_t pid, const char *line, uint64_t since)
{
    if (dcpi__grow((void **)&j->ent, &j->cap, j->nent + 1, sizeof *j->ent) < 0 ||
        dcpi__grow((void **)&j->gen, &j->gcap, j->ngen + 1, sizeof *j->gen) < 0)
        return DCPI_ENOMEM;
    jit_ent_t *e = &j->ent[j->nent];
    *e = (jit_ent_t){.region = -1};
    unsigned long long a, n;
    if (sscanf(line, "%llx %llx", &a, &n) == 2 && n != 0 && a + n >= a &&
        !in_file_image(d, pid, a)) {
        unsigned gen = generation(j, a, a + n);
        int r = region_of(j, a, gen, 1), r0 = gen ? region_of(j, a, 0, 1) : r;
        if (r0 >= 0 && r0 != r) { /* generation 0's mapping covers it: found, then placed */
            jit_region_t *g = &j->region[r0];
            uint64_t end = a + n > g->base + DCPI_JIT_REGION ? g->base + DCPI_JIT_REGION : a + n;
            g->lo = a < g->lo ? a : g->lo;
            g->hi = end > g->hi ? end : g->hi;
        }
        if (r < 0 || r0 < 0) { /* said once: its samples keep an older name, or none */
            if (j->outside++ == 0)
                dcpi__log(DCPI_LOG_WARN,
                          "/tmp/perf-%d.map: more than %d regions of JIT code (address ranges and "
                          "their reuses), \"%.*s\" and later such entries not named",
                          (int)pid, DCPI_JIT_MAXREGIONS, (int)strcspn(line, "\n"), line);
        } else {
            jit_region_t *g = &j->region[r];
            uint64_t end = a + n > g->base + DCPI_JIT_REGION ? g->base + DCPI_JIT_REGION : a + n;
            g->lo = a < g->lo ? a : g->lo;
            g->hi = end > g->hi ? end : g->hi;
            *e = (jit_ent_t){.start = a, .end = end, .region = r, .since = since};
            if (gen > 0)
                j->gen[j->ngen++] = j->nent;
        }
    }
    j->nent++;
    return 0;
}

/* Read the lines pid's perf map gained since the last read (complete lines only: the JIT may be
 * writing one). A map that shrank was written anew: read from its start again. */
static void read_new_lines(daemon_t *d, jit_proc_t *j, pid_t pid, const struct stat *st)
{
    char path[64], line[1024];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    if ((uint64_t)st->st_size < j->off)
        j->off = j->nent = j->ngen = 0;
    /* the new lines were written after the last read and before now, by the time the file was
     * last modified (its mtime, a real-time clock) at the latest: that time, as CLOCK_MONOTONIC
     * (sample times), within [last read, now] */
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t ago =
        ((int64_t)rt.tv_sec - st->st_mtim.tv_sec) * 1000000000 + (rt.tv_nsec - st->st_mtim.tv_nsec);
    uint64_t now = (uint64_t)mono.tv_sec * 1000000000u + (uint64_t)mono.tv_nsec;
    uint64_t since = ago <= 0 ? now : (uint64_t)ago < now ? now - (uint64_t)ago : 0;
    since = since < j->read ? j->read : since;
    j->read = now;
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    if (fseek(f, (long)j->off, SEEK_SET) == 0)
        while (fgets(line, sizeof line, f)) {
            size_t len = strlen(line);
            if (len == 0)
                break; /* a NUL byte: not a perf map */
            if (line[len - 1] != '\n') {
                if (len < sizeof line - 1)
                    break; /* being written */
                int c;     /* a line longer than the buffer: not one we name */
                while ((c = getc(f)) != EOF && c != '\n')
                    len++;
                if (c == EOF)
                    break;
                line[0] = '\0';
                len++;
            }
            if (add_line(d, j, pid, line, since) < 0)
                break;
            j->off += len;
        }
    fclose(f);
}

static jit_proc_t *jit_slot(daemon_t *d, pid_t pid)
{
    jit_part_t *p = dcpi__part(d, &part_jit);
    if (!p)
        return NULL;
    jit_proc_t *free_slot = NULL;
    for (size_t i = 0; i < DCPI_DAEMON_MAXJIT; i++) {
        if (p->jit[i].pid == pid)
            return &p->jit[i];
        if (!p->jit[i].pid && !free_slot)
            free_slot = &p->jit[i];
    }
    return free_slot ? free_slot : &p->jit[(unsigned)pid % DCPI_DAEMON_MAXJIT];
}

/* The offset in "[jit pid N]" of address a in region r. */
static uint64_t region_offset(const jit_proc_t *j, int r, uint64_t a)
{
    return JIT_PGOFF + (uint64_t)r * DCPI_JIT_REGION + (a - j->region[r].base);
}

/* Map [lo, hi) of region r as "[jit pid N]": 1 when it covers ip. */
static int map_range(daemon_t *d, const jit_proc_t *j, pid_t pid, int r, uint64_t lo, uint64_t hi,
                     uint64_t ip)
{
    char name[64];
    snprintf(name, sizeof name, "[jit pid %d]", (int)pid);
    return hi > lo &&
           dcpi_loadmap_mmap(d->lm, pid, lo, hi - lo, region_offset(j, r, lo), 0, 0, 0,
                             0x4 /* PROT_EXEC */, name) == 0 &&
           ip >= lo && ip < hi;
}

/* Read pid's map again when it changed and map generation 0's regions: 1 when they cover ip.
 * *j: pid's slot (NULL: no map). */
static int refresh(daemon_t *d, pid_t pid, uint64_t ip, jit_proc_t **jp)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)pid);
    *jp = NULL;
    if (stat(path, &st) != 0)
        return 0; /* no map (yet): nothing is remembered, the next sample looks again */
    jit_proc_t *j = *jp = jit_slot(d, pid);
    if (!j)
        return 0; /* no memory for the part */
    if (j->pid == pid && j->size == (uint64_t)st.st_size && j->mtime == st.st_mtim.tv_nsec &&
        j->mtime_s == (uint64_t)st.st_mtim.tv_sec)
        return 0; /* read already, unchanged: it does not cover ip */
    if (j->pid != pid) {
        free(j->ent);
        free(j->gen);
        *j = (jit_proc_t){.pid = pid};
    }
    j->size = (uint64_t)st.st_size;
    j->mtime = st.st_mtim.tv_nsec;
    j->mtime_s = (uint64_t)st.st_mtim.tv_sec;
    read_new_lines(d, j, pid, &st);
    /* generation 0's regions whole (code between two functions keeps its place); the code of
     * later generations inside them gets its own offsets sample by sample (jit_place)
     */
    int covered = 0;
    for (unsigned r = 0; r < j->nregions; r++)
        if (j->region[r].gen == 0)
            covered |= map_range(d, j, pid, (int)r, j->region[r].lo, j->region[r].hi, ip);
    return covered;
}

/* A user sample of pid at ip outside every image: 1 when pid's perf map covers ip and its
 * [jit pid N] mapping was added (resolve again), else 0. */
static int jit_map(daemon_t *d, void *self, pid_t pid, uint64_t ip)
{
    jit_proc_t *j;
    return refresh(d, pid, ip, &j);
}

/* A user sample of pid at time t (CLOCK_MONOTONIC ns) resolved in its "[jit pid N]" image at
 * *off: the map is looked at again (every DCPI_JIT_LOOK_NS of sample time), and when the JIT
 * reused the address for code it named later, *off becomes that code's offset if the sample
 * was taken after that code's map line was written. */
static void jit_place(daemon_t *d, void *self, pid_t pid, uint64_t ip, uint64_t t,
                      const dcpi_image_t *img, uint32_t *off)
{
    if (strncmp(img->path, "[jit pid ", 9) != 0)
        return;
    jit_proc_t *j = jit_slot(d, pid);
    if (!j || j->pid != pid)
        return; /* its slot went to another process (more than DCPI_DAEMON_MAXJIT) */
    if (t >= j->looked + DCPI_JIT_LOOK_NS) {
        jit_proc_t *now;
        j->looked = t;
        (void)refresh(d, pid, ip, &now); /* (a vanished map: what was read stays) */
        if (now && now != j)
            return;
    }
    /* the newest line naming code at ip written before the sample (a line of generation 0 is
     * never newer than one of a later generation over the same code) */
    for (size_t g = j->ngen; g-- > 0;) {
        const jit_ent_t *e = &j->ent[j->gen[g]];
        if (ip >= e->start && ip < e->end && e->since <= t) {
            *off = (uint32_t)region_offset(j, e->region, ip);
            return;
        }
    }
}

static void jit_exit(daemon_t *d, void *self)
{
    jit_part_t *p = self;
    for (size_t i = 0; i < DCPI_DAEMON_MAXJIT; i++) {
        free(p->jit[i].ent);
        free(p->jit[i].gen);
        p->jit[i] = (jit_proc_t){0};
    }
}

/* A flushed image "[jit pid N]": its map as `jitsyms` into its directory (dirname). */
static void jit_written(daemon_t *d, void *self, const dcpi__group_t *g)
{
    const char *path = g->path, *dirname = g->dirname;
    if (strncmp(path, "[jit pid ", 9) != 0)
        return;
    int pid;
    if (sscanf(path, "[jit pid %d]", &pid) != 1)
        return;
    jit_proc_t *j = jit_slot(d, pid);
    char map[64], line[1024], out[4400], err[DCPI_ERRLEN];
    snprintf(map, sizeof map, "/tmp/perf-%d.map", pid);
    FILE *f = fopen(map, "re");
    if (!f || !j || j->pid != pid) {
        if (f)
            fclose(f);
        return;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    int cont = 0; /* the rest of a line longer than the buffer (one entry, as read_new_lines) */
    for (size_t k = 0; m && fgets(line, sizeof line, f); k += !cont) {
        unsigned long long a, n;
        int at = 0, tail = cont;
        size_t l = strlen(line);
        cont = l > 0 && line[l - 1] != '\n';
        int r = tail || sscanf(line, "%llx %llx %n", &a, &n, &at) < 2 || at == 0 ? -1
                : k < j->nent                                                    ? j->ent[k].region
                              : region_of(j, a, 0, 0);
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

DCPI_DAEMON_PART(jit, .order = 25, .size = sizeof(jit_part_t), .unresolved = jit_map,
                 .resolved = jit_place, .written = jit_written, .exit = jit_exit);
