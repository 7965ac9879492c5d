/*
 * loadmap.c - DCPI's loadmap (see loadmap.h): per process a sorted array of executable
 * mappings {start, end, pgoff, image}, processes in a pid hash table, images deduplicated by
 * (maj, min, ino, path) in a second hash table and probed once when first seen.
 * One file (~630 lines): the two tables and the /proc reader share every structure; split, each
 * half would need the other's internals.
 */
#include "core/image/loadmap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"
#include "core/base/log.h"
#include "core/image/symbols.h"

typedef struct mapping {
    uint64_t start, end, pgoff;
    dcpi_image_t *img;
} mapping_t;

typedef struct proc {
    pid_t pid;
    mapping_t *maps; /* sorted by start, never overlapping */
    size_t n, cap;
    struct proc *next;
} proc_t;

/* An image with the key it was found under; img is first so a dcpi_image_t * is a rec *. */
typedef struct image_rec {
    dcpi_image_t img;
    uint32_t maj, min;
    uint64_t ino;
    uint64_t hash;
    struct image_rec *next;
} image_rec_t;

struct dcpi_loadmap {
    proc_t **procs;
    size_t nprocbuckets, nprocs;
    image_rec_t **ihash;
    size_t nibuckets;
    image_rec_t **images; /* by index */
    unsigned nimages, capimages;
    unsigned long nmappings, probe_failures;
    dcpi_loadmap_keep_fn keep; /* dcpi_loadmap_on_unnamed */
    void *keep_ctx;
};

void dcpi_loadmap_on_unnamed(dcpi_loadmap_t *lm, dcpi_loadmap_keep_fn fn, void *ctx)
{
    lm->keep = fn;
    lm->keep_ctx = ctx;
}

/* ---- hashing ---------------------------------------------------------------------------- */

static size_t pid_bucket(pid_t pid, size_t nbuckets)
{
    uint64_t h = (uint64_t)(uint32_t)pid * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 32) & (nbuckets - 1);
}

static uint64_t image_key_hash(uint32_t maj, uint32_t min, uint64_t ino, const char *path)
{
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, &maj, sizeof maj);
    h = dcpi__fnv1a(h, &min, sizeof min);
    h = dcpi__fnv1a(h, &ino, sizeof ino);
    return dcpi__fnv1a(h, path, strlen(path));
}

/* ---- processes -------------------------------------------------------------------------- */

static proc_t *proc_find(const dcpi_loadmap_t *lm, pid_t pid)
{
    for (proc_t *p = lm->procs[pid_bucket(pid, lm->nprocbuckets)]; p; p = p->next)
        if (p->pid == pid)
            return p;
    return NULL;
}

static int procs_grow(dcpi_loadmap_t *lm)
{
    size_t nb = lm->nprocbuckets * 2;
    proc_t **nt = calloc(nb, sizeof *nt);
    if (!nt)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < lm->nprocbuckets; i++) {
        proc_t *p = lm->procs[i];
        while (p) {
            proc_t *next = p->next;
            size_t b = pid_bucket(p->pid, nb);
            p->next = nt[b];
            nt[b] = p;
            p = next;
        }
    }
    free(lm->procs);
    lm->procs = nt;
    lm->nprocbuckets = nb;
    return 0;
}

static int proc_get(dcpi_loadmap_t *lm, pid_t pid, proc_t **out)
{
    proc_t *p = proc_find(lm, pid);
    if (p) {
        *out = p;
        return 0;
    }
    if (lm->nprocs >= lm->nprocbuckets && procs_grow(lm) < 0)
        return DCPI_ENOMEM;
    p = calloc(1, sizeof *p);
    if (!p)
        return DCPI_ENOMEM;
    p->pid = pid;
    size_t b = pid_bucket(pid, lm->nprocbuckets);
    p->next = lm->procs[b];
    lm->procs[b] = p;
    lm->nprocs++;
    *out = p;
    return 0;
}

static void proc_clear(dcpi_loadmap_t *lm, proc_t *p)
{
    lm->nmappings -= p->n;
    p->n = 0;
}

static void proc_remove(dcpi_loadmap_t *lm, pid_t pid)
{
    proc_t **pp = &lm->procs[pid_bucket(pid, lm->nprocbuckets)];
    while (*pp && (*pp)->pid != pid)
        pp = &(*pp)->next;
    proc_t *p = *pp;
    if (!p)
        return;
    *pp = p->next;
    proc_clear(lm, p);
    free(p->maps);
    free(p);
    lm->nprocs--;
}

static int maps_reserve(proc_t *p, size_t need)
{
    return dcpi__grow((void **)&p->maps, &p->cap, need, sizeof *p->maps);
}

/* Index of the first mapping whose end is above addr (p->n when none). */
static size_t maps_first_after(const proc_t *p, uint64_t addr)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->maps[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void maps_insert_at(dcpi_loadmap_t *lm, proc_t *p, size_t i, const mapping_t *m)
{
    memmove(&p->maps[i + 1], &p->maps[i], (p->n - i) * sizeof *m);
    p->maps[i] = *m;
    p->n++;
    lm->nmappings++;
}

static void maps_delete_at(dcpi_loadmap_t *lm, proc_t *p, size_t i, size_t count)
{
    if (count == 0)
        return;
    memmove(&p->maps[i], &p->maps[i + count], (p->n - i - count) * sizeof *p->maps);
    p->n -= count;
    lm->nmappings -= count;
}

/* Remove [start, end) from p's mappings: delete, trim or split the mappings it overlaps. */
static int maps_punch(dcpi_loadmap_t *lm, proc_t *p, uint64_t start, uint64_t end)
{
    size_t i = maps_first_after(p, start);
    if (i < p->n && p->maps[i].start < start && p->maps[i].end > end) {
        /* One mapping holds the whole range: split it in two. */
        if (maps_reserve(p, p->n + 1) < 0)
            return DCPI_ENOMEM;
        mapping_t right = p->maps[i];
        right.pgoff += end - right.start;
        right.start = end;
        p->maps[i].end = start;
        maps_insert_at(lm, p, i + 1, &right);
        return 0;
    }
    if (i < p->n && p->maps[i].start < start) {
        p->maps[i].end = start; /* keep the left part */
        i++;
    }
    size_t j = i;
    while (j < p->n && p->maps[j].end <= end)
        j++;
    if (j < p->n && p->maps[j].start < end) {
        p->maps[j].pgoff += end - p->maps[j].start; /* keep the right part */
        p->maps[j].start = end;
    }
    maps_delete_at(lm, p, i, j - i);
    return 0;
}

static int maps_add(dcpi_loadmap_t *lm, proc_t *p, const mapping_t *m)
{
    int rc = maps_punch(lm, p, m->start, m->end);
    if (rc < 0)
        return rc;
    if (!m->img)
        return 0; /* not an image: the range is just unknown now */
    rc = maps_reserve(p, p->n + 1);
    if (rc < 0)
        return rc;
    maps_insert_at(lm, p, maps_first_after(p, m->start), m);
    return 0;
}

static const mapping_t *maps_find(const proc_t *p, uint64_t ip)
{
    size_t i = maps_first_after(p, ip);
    if (i < p->n && p->maps[i].start <= ip)
        return &p->maps[i];
    return NULL;
}

/* ---- images ----------------------------------------------------------------------------- */

/* Pseudo paths that are not image files: anonymous memory, memfd and "[...]" except [vdso]. */
static int path_is_image(const char *path)
{
    if (!path || !*path)
        return 0;
    if (path[0] == '[') /* the vDSO, and JIT code named by a perf map (core/daemon/jit.c) */
        return strcmp(path, "[vdso]") == 0 || strncmp(path, "[jit pid ", 9) == 0;
    return strncmp(path, "//anon", 6) != 0 && strncmp(path, "memfd:", 6) != 0;
}

static void hex16(uint64_t h, char out[DCPI_IMAGE_IDLEN])
{
    snprintf(out, DCPI_IMAGE_IDLEN, "%016llx", (unsigned long long)h);
}

static void image_info_vdso(dcpi_image_info_t *info, uint64_t len)
{
    char kid[DCPI_IMAGE_IDLEN];
    dcpi_image_kernel_id(kid);
    uint64_t h = dcpi__fnv1a(DCPI_FNV64_OFFSET, kid, strlen(kid));
    h = dcpi__fnv1a(h, "vdso", 4);
    hex16(h, info->id);
    info->tsize = len;
}

/*
 * Which file to probe: the mapped file itself through /proc/<pid>/map_files when it can be
 * read, unless path names that very file (same st_dev and st_ino): then path, so that an id
 * hashed from the path (no build-id) does not depend on the pid and addresses.
 */
static const char *probe_source(pid_t pid, uint64_t start, uint64_t end, const char *path,
                                char *buf, size_t len)
{
    struct stat mf, ps;
    snprintf(buf, len, "/proc/%d/map_files/%llx-%llx", (int)pid, (unsigned long long)start,
             (unsigned long long)end);
    if (stat(buf, &mf) < 0)
        return path;
    if (stat(path, &ps) == 0 && ps.st_dev == mf.st_dev && ps.st_ino == mf.st_ino)
        return path;
    return buf;
}

static void image_probe(dcpi_loadmap_t *lm, image_rec_t *r, pid_t pid, uint64_t start, uint64_t end)
{
    dcpi_image_info_t *info = &r->img.info;
    if (strcmp(r->img.path, "[vdso]") == 0) {
        image_info_vdso(info, end - start);
        r->img.probed_ok = 1;
        return;
    }
    if (strncmp(r->img.path, "[jit pid ", 9) == 0) { /* no file: an id from the name */
        memset(info, 0, sizeof *info);
        hex16(dcpi__fnv1a(DCPI_FNV64_OFFSET, r->img.path, strlen(r->img.path)), info->id);
        info->tsize = end - start;
        return;
    }
    char mf[64], err[DCPI_ERRLEN];
    const char *src = probe_source(pid, start, end, r->img.path, mf, sizeof mf);
    if (dcpi_image_probe(src, info, err) == 0) {
        r->img.probed_ok = 1;
        if (lm->keep && src != r->img.path && access(r->img.path, F_OK) != 0)
            lm->keep(lm->keep_ctx, &r->img, src); /* memfd, deleted: readable only now */
        return;
    }
    dcpi__log(DCPI_LOG_DEBUG, "loadmap: cannot probe image: %s", err);
    memset(info, 0, sizeof *info);
    hex16(dcpi__fnv1a(DCPI_FNV64_OFFSET, r->img.path, strlen(r->img.path)), info->id);
    r->img.probed_ok = 0;
    lm->probe_failures++;
}

static int ihash_grow(dcpi_loadmap_t *lm)
{
    size_t nb = lm->nibuckets * 2;
    image_rec_t **nt = calloc(nb, sizeof *nt);
    if (!nt)
        return DCPI_ENOMEM;
    for (unsigned i = 0; i < lm->nimages; i++) {
        image_rec_t *r = lm->images[i];
        size_t b = r->hash & (nb - 1);
        r->next = nt[b];
        nt[b] = r;
    }
    free(lm->ihash);
    lm->ihash = nt;
    lm->nibuckets = nb;
    return 0;
}

static int images_append(dcpi_loadmap_t *lm, image_rec_t *r)
{
    if (lm->nimages == lm->capimages) {
        if (lm->capimages > UINT_MAX / 2)
            return DCPI_ENOMEM;
        unsigned cap = lm->capimages ? lm->capimages * 2 : 64;
        image_rec_t **a = reallocarray(lm->images, cap, sizeof *a);
        if (!a)
            return DCPI_ENOMEM;
        lm->images = a;
        lm->capimages = cap;
    }
    if (lm->nimages >= lm->nibuckets && ihash_grow(lm) < 0)
        return DCPI_ENOMEM;
    r->img.index = lm->nimages;
    lm->images[lm->nimages++] = r;
    size_t b = r->hash & (lm->nibuckets - 1);
    r->next = lm->ihash[b];
    lm->ihash[b] = r;
    return 0;
}

/* The image for this key, created and probed when first seen. */
static int image_get(dcpi_loadmap_t *lm, uint32_t maj, uint32_t min, uint64_t ino, const char *path,
                     pid_t pid, uint64_t start, uint64_t end, dcpi_image_t **out)
{
    uint64_t h = image_key_hash(maj, min, ino, path);
    for (image_rec_t *r = lm->ihash[h & (lm->nibuckets - 1)]; r; r = r->next) {
        if (r->hash == h && r->maj == maj && r->min == min && r->ino == ino &&
            strcmp(r->img.path, path) == 0) {
            *out = &r->img;
            return 0;
        }
    }
    image_rec_t *r = calloc(1, sizeof *r);
    if (!r)
        return DCPI_ENOMEM;
    r->img.path = strdup(path);
    if (!r->img.path)
        goto out_rec;
    r->maj = maj;
    r->min = min;
    r->ino = ino;
    r->hash = h;
    if (images_append(lm, r) < 0)
        goto out_path;
    image_probe(lm, r, pid, start, end);
    *out = &r->img;
    return 0;
out_path:
    free(r->img.path);
out_rec:
    free(r);
    return DCPI_ENOMEM;
}

/* ---- public API ------------------------------------------------------------------------- */

int dcpi_loadmap_new(dcpi_loadmap_t **out)
{
    if (!out)
        return DCPI_EINVAL;
    dcpi_loadmap_t *lm = calloc(1, sizeof *lm);
    if (!lm)
        return DCPI_ENOMEM;
    lm->nprocbuckets = 256;
    lm->nibuckets = 256;
    lm->procs = calloc(lm->nprocbuckets, sizeof *lm->procs);
    lm->ihash = calloc(lm->nibuckets, sizeof *lm->ihash);
    if (!lm->procs || !lm->ihash) {
        dcpi_loadmap_free(lm);
        return DCPI_ENOMEM;
    }
    *out = lm;
    return 0;
}

void dcpi_loadmap_free(dcpi_loadmap_t *lm)
{
    if (!lm)
        return;
    for (size_t i = 0; lm->procs && i < lm->nprocbuckets; i++) {
        proc_t *p = lm->procs[i];
        while (p) {
            proc_t *next = p->next;
            free(p->maps);
            free(p);
            p = next;
        }
    }
    for (unsigned i = 0; i < lm->nimages; i++) {
        free(lm->images[i]->img.path);
        free(lm->images[i]);
    }
    free(lm->images);
    free(lm->ihash);
    free(lm->procs);
    free(lm);
}

int dcpi_loadmap_mmap(dcpi_loadmap_t *lm, pid_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
                      uint32_t maj, uint32_t min, uint64_t ino, unsigned prot, const char *path)
{
    if (!lm || !path || len == 0 || start + len < start)
        return DCPI_EINVAL;
    if (!(prot & PROT_EXEC))
        return 0;
    mapping_t m = {.start = start, .end = start + len, .pgoff = pgoff, .img = NULL};
    if (path_is_image(path)) {
        int rc = image_get(lm, maj, min, ino, path, pid, m.start, m.end, &m.img);
        if (rc < 0)
            return rc;
    }
    proc_t *p;
    int rc = proc_get(lm, pid, &p);
    if (rc < 0)
        return rc;
    return maps_add(lm, p, &m);
}

int dcpi_loadmap_munmap(dcpi_loadmap_t *lm, pid_t pid, uint64_t start, uint64_t len)
{
    if (!lm || start + len < start)
        return DCPI_EINVAL;
    proc_t *p = proc_find(lm, pid);
    if (!p || len == 0)
        return 0;
    return maps_punch(lm, p, start, start + len);
}

int dcpi_loadmap_fork(dcpi_loadmap_t *lm, pid_t ppid, pid_t pid)
{
    if (!lm)
        return DCPI_EINVAL;
    proc_t *parent = proc_find(lm, ppid);
    if (!parent || ppid == pid)
        return 0;
    proc_t *child;
    int rc = proc_get(lm, pid, &child);
    if (rc < 0)
        return rc;
    proc_clear(lm, child);
    rc = maps_reserve(child, parent->n);
    if (rc < 0 || parent->n == 0)
        return rc;
    memcpy(child->maps, parent->maps, parent->n * sizeof *parent->maps);
    child->n = parent->n;
    lm->nmappings += parent->n;
    return 0;
}

int dcpi_loadmap_exec(dcpi_loadmap_t *lm, pid_t pid)
{
    if (!lm)
        return DCPI_EINVAL;
    proc_t *p = proc_find(lm, pid);
    if (p) {
        proc_clear(lm, p);
        free(p->maps);
        p->maps = NULL;
        p->cap = 0;
    }
    return 0;
}

int dcpi_loadmap_exit(dcpi_loadmap_t *lm, pid_t pid)
{
    if (!lm)
        return DCPI_EINVAL;
    proc_remove(lm, pid);
    return 0;
}

int dcpi_loadmap_lookup(const dcpi_loadmap_t *lm, pid_t pid, uint64_t ip, dcpi_image_t **img,
                        uint64_t *map_start, uint64_t *map_pgoff)
{
    if (!lm)
        return DCPI_EINVAL;
    const proc_t *p = proc_find(lm, pid);
    const mapping_t *m = p ? maps_find(p, ip) : NULL;
    if (!m)
        return DCPI_ENOENT;
    if (img)
        *img = m->img;
    if (map_start)
        *map_start = m->start;
    if (map_pgoff)
        *map_pgoff = m->pgoff;
    return 0;
}

int dcpi_loadmap_addr_of(const dcpi_loadmap_t *lm, pid_t pid, const dcpi_image_t *img,
                         uint64_t vaddr, uint64_t *addr)
{
    uint64_t foff;
    const proc_t *p = lm ? proc_find(lm, pid) : NULL;
    if (!p || dcpi_image_vaddr_to_file(&img->info, vaddr, &foff) < 0)
        return DCPI_ENOENT;
    for (size_t i = 0; i < p->n; i++) {
        const mapping_t *m = &p->maps[i];
        if (m->img == img && foff >= m->pgoff && foff - m->pgoff < m->end - m->start) {
            *addr = m->start + (foff - m->pgoff);
            return 0;
        }
    }
    return DCPI_ENOENT;
}

int dcpi_loadmap_resolve(const dcpi_loadmap_t *lm, pid_t pid, uint64_t ip, dcpi_image_t **img,
                         uint32_t *offset)
{
    dcpi_image_t *im;
    uint64_t start, pgoff;
    int rc = dcpi_loadmap_lookup(lm, pid, ip, &im, &start, &pgoff);
    if (rc < 0)
        return rc;
    uint64_t vaddr = dcpi_image_file_to_vaddr(&im->info, ip - start + pgoff);
    if (vaddr < im->info.tstart || vaddr - im->info.tstart > UINT32_MAX)
        return DCPI_ERANGE;
    if (img)
        *img = im;
    if (offset)
        *offset = (uint32_t)(vaddr - im->info.tstart);
    return 0;
}

unsigned dcpi_loadmap_nimages(const dcpi_loadmap_t *lm)
{
    return lm ? lm->nimages : 0;
}

dcpi_image_t *dcpi_loadmap_image(const dcpi_loadmap_t *lm, unsigned index)
{
    if (!lm || index >= lm->nimages)
        return NULL;
    return &lm->images[index]->img;
}

void dcpi_loadmap_stats(const dcpi_loadmap_t *lm, dcpi_loadmap_stats_t *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!lm)
        return;
    out->processes = lm->nprocs;
    out->mappings = lm->nmappings;
    out->images = lm->nimages;
    out->probe_failures = lm->probe_failures;
}

/* ---- /proc/<pid>/maps ------------------------------------------------------------------- */

/* One maps line "start-end perms offset maj:min inode   path" (line is NUL-terminated). */
static int scan_line(dcpi_loadmap_t *lm, pid_t pid, char *line)
{
    char *s = line;
    uint64_t start = strtoull(s, &s, 16);
    if (*s++ != '-')
        return DCPI_EFORMAT;
    uint64_t end = strtoull(s, &s, 16);
    if (*s++ != ' ' || strlen(s) < 5)
        return DCPI_EFORMAT;
    int exec = s[2] == 'x';
    s += 4;
    uint64_t pgoff = strtoull(s, &s, 16);
    uint32_t maj = (uint32_t)strtoul(s, &s, 16);
    if (*s++ != ':')
        return DCPI_EFORMAT;
    uint32_t min = (uint32_t)strtoul(s, &s, 16);
    uint64_t ino = strtoull(s, &s, 10);
    if (*s != ' ' && *s != '\0')
        return DCPI_EFORMAT;
    if (!exec || end <= start)
        return 0;
    while (*s == ' ')
        s++;
    return dcpi_loadmap_mmap(lm, pid, start, end - start, pgoff, maj, min, ino,
                             PROT_READ | PROT_EXEC, s);
}

static int scan_pid(dcpi_loadmap_t *lm, pid_t pid)
{
    char path[64];
    void *data = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
    int rc = dcpi__read_file(path, 0, &data, &len, NULL);
    if (rc < 0)
        return rc == DCPI_ENOENT ? DCPI_ESRCH : rc;
    char *buf = data;
    dcpi_loadmap_exec(lm, pid); /* the scan is the whole truth about pid */
    char *line = buf;
    while (rc == 0 && line < buf + len) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        rc = scan_line(lm, pid, line);
        line = nl ? nl + 1 : buf + len;
    }
    free(buf);
    return rc;
}

static int scan_all(dcpi_loadmap_t *lm)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -errno;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (de->d_name[0] < '0' || de->d_name[0] > '9' || *end != '\0' || pid <= 0)
            continue;
        rc = scan_pid(lm, (pid_t)pid);
        if (rc == DCPI_ESRCH || rc == DCPI_EACCES || rc == DCPI_EPERM) {
            /* Vanished meanwhile (a race, nothing lost) or not ours to read. */
            if (rc != DCPI_ESRCH)
                dcpi__log(DCPI_LOG_DEBUG, "loadmap: /proc/%ld/maps: %s", pid, dcpi_strerror(rc));
            rc = 0;
        }
    }
    closedir(d);
    return rc;
}

int dcpi_loadmap_scan_proc(dcpi_loadmap_t *lm, pid_t pid)
{
    if (!lm)
        return DCPI_EINVAL;
    return pid < 0 ? scan_all(lm) : scan_pid(lm, pid);
}

/* ---- symbol tables of images ------------------------------------------------------------ */

const dcpi_symtab_t *dcpi_image_symtab(dcpi_image_symtabs_t *c, const dcpi_image_t *img)
{
    if (img->index >= c->n) {
        size_t want = (size_t)img->index + 16, cs = c->n, ct = c->n;
        if (dcpi__grow((void **)&c->tabs, &cs, want, sizeof *c->tabs) < 0 ||
            dcpi__grow((void **)&c->tried, &ct, want, 1) < 0)
            return NULL;
        size_t cap = cs < ct ? cs : ct;
        memset(c->tabs + c->n, 0, (cap - c->n) * sizeof *c->tabs);
        memset(c->tried + c->n, 0, cap - c->n);
        c->n = cap;
    }
    if (!c->tried[img->index]) {
        c->tried[img->index] = 1;
        if (img->probed_ok && img->path[0] == '/')
            dcpi_symtab_open(img->path, &c->tabs[img->index], NULL);
    }
    return c->tabs[img->index];
}

void dcpi_image_symtabs_free(dcpi_image_symtabs_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        dcpi_symtab_free(c->tabs[i]);
    free(c->tabs);
    free(c->tried);
    *c = (dcpi_image_symtabs_t){0};
}
