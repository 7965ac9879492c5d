/*
 * dstacks.c - dcpid -g (see dstacks.h): per sample, walk perf's callchain (PERF_CONTEXT_*
 * markers say whether the following entries are kernel or user addresses), turn each address
 * into a frame (kernel: the kernel image; user: dcpi_loadmap_resolve in the sample's pid;
 * callers stay return addresses, as docs/stackformat.md wants), and add the chain with count 1
 * to the event's stack profile.
 */
#include "core/sampling/dstacks.h"

#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/store/header.h"
#include "core/image/image.h"
#include "core/base/log.h"
#include "core/store/stackprof.h"
#include "dcpi/errno.h"

#define NO_INDEX (-1)

/* One event's stack profile and its map from loadmap image index to stackprof image index. */
typedef struct evstack {
    dcpi_stackprof_t *sp;
    int *map; /* by loadmap index; NO_INDEX: not registered yet */
    unsigned nmap;
    int kernel; /* stackprof index of the kernel image, NO_INDEX before */
} evstack_t;

struct dcpi_dstacks {
    dcpi_loadmap_t *lm;
    int nev;
    evstack_t ev[DCPI_SAMPLER_MAXEV];
    int kernel_ok;
    char kid[DCPI_IMAGE_IDLEN];
    uint64_t ktstart, ktsize;
    dcpi_dstacks_stats_t st;
    dcpi_frame_t frames[DCPI_STACK_MAXFRAMES];
};

int dcpi_dstacks_new(dcpi_loadmap_t *lm, int nev, const dcpi_dstacks_kernel_t *k,
                     dcpi_dstacks_t **out)
{
    if (nev < 1 || nev > DCPI_SAMPLER_MAXEV)
        return DCPI_EINVAL;
    dcpi_dstacks_t *ds = calloc(1, sizeof *ds);
    if (!ds)
        return DCPI_ENOMEM;
    ds->lm = lm;
    ds->nev = nev;
    if (k && k->ok && k->id) {
        ds->kernel_ok = 1;
        snprintf(ds->kid, sizeof ds->kid, "%s", k->id);
        ds->ktstart = k->tstart;
        ds->ktsize = k->tsize;
    }
    for (int i = 0; i < nev; i++) {
        ds->ev[i].kernel = NO_INDEX;
        if (dcpi_stackprof_new(0, &ds->ev[i].sp) < 0) {
            dcpi_dstacks_free(ds);
            return DCPI_ENOMEM;
        }
    }
    *out = ds;
    return 0;
}

void dcpi_dstacks_free(dcpi_dstacks_t *ds)
{
    if (!ds)
        return;
    for (int i = 0; i < ds->nev; i++) {
        dcpi_stackprof_free(ds->ev[i].sp);
        free(ds->ev[i].map);
    }
    free(ds);
}

/* The stackprof index of the kernel image (registered on first use). */
static int kernel_index(dcpi_dstacks_t *ds, evstack_t *e)
{
    if (e->kernel == NO_INDEX) {
        char dir[512];
        dcpi_image_dirname("[kernel.kallsyms]", ds->kid, dir, sizeof dir);
        int rc =
            dcpi_stackprof_image(e->sp, ds->kid, dir, "[kernel.kallsyms]", ds->ktstart, ds->ktsize);
        if (rc < 0)
            return rc;
        e->kernel = rc;
    }
    return e->kernel;
}

/* The stackprof index of a loadmap image (registered on first use). */
static int image_index(evstack_t *e, const dcpi_image_t *img)
{
    if (img->index >= e->nmap) {
        unsigned n = img->index + 64;
        int *m = reallocarray(e->map, n, sizeof *m);
        if (!m)
            return DCPI_ENOMEM;
        for (unsigned i = e->nmap; i < n; i++)
            m[i] = NO_INDEX;
        e->map = m;
        e->nmap = n;
    }
    if (e->map[img->index] == NO_INDEX) {
        char dir[512];
        dcpi_image_dirname(img->path, img->info.id, dir, sizeof dir);
        int rc = dcpi_stackprof_image(e->sp, img->info.id, dir, img->path, img->info.tstart,
                                      img->info.tsize);
        if (rc < 0)
            return rc;
        e->map[img->index] = rc;
    }
    return e->map[img->index];
}

static dcpi_frame_t outside(dcpi_dstacks_t *ds, uint64_t addr)
{
    ds->st.unresolved++;
    return (dcpi_frame_t){DCPI_STACK_NOIMAGE, (uint32_t)addr};
}

static dcpi_frame_t kernel_frame(dcpi_dstacks_t *ds, evstack_t *e, uint64_t addr)
{
    uint64_t off = addr - ds->ktstart;
    int k;
    if (!ds->kernel_ok || addr < ds->ktstart || off > UINT32_MAX || (k = kernel_index(ds, e)) < 0)
        return outside(ds, addr);
    return (dcpi_frame_t){(uint32_t)k, (uint32_t)off};
}

static dcpi_frame_t user_frame(dcpi_dstacks_t *ds, evstack_t *e, uint32_t pid, uint64_t addr)
{
    dcpi_image_t *img;
    uint32_t off;
    int k;
    if (dcpi_loadmap_resolve(ds->lm, (pid_t)pid, addr, &img, &off) < 0 ||
        (k = image_index(e, img)) < 0)
        return outside(ds, addr);
    return (dcpi_frame_t){(uint32_t)k, off};
}

/* Frames of the sample's chain into ds->frames; returns their number. */
static unsigned resolve_chain(dcpi_dstacks_t *ds, evstack_t *e, const dcpi_sample_t *s)
{
    unsigned n = 0;
    int kernel = (s->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
    for (uint32_t i = 0; i < s->ncallchain && n < DCPI_STACK_MAXFRAMES; i++) {
        uint64_t a = s->callchain[i];
        if (a >= PERF_CONTEXT_MAX) {
            kernel = a == PERF_CONTEXT_KERNEL;
            if (a != PERF_CONTEXT_KERNEL && a != PERF_CONTEXT_USER)
                kernel = -1; /* hypervisor or guest: outside every image */
            continue;
        }
        if (kernel > 0)
            ds->frames[n++] = kernel_frame(ds, e, a);
        else if (kernel == 0)
            ds->frames[n++] = user_frame(ds, e, s->pid, a);
        else
            ds->frames[n++] = outside(ds, a);
    }
    return n;
}

void dcpi_dstacks_add(dcpi_dstacks_t *ds, const dcpi_sample_t *s)
{
    if (s->event >= ds->nev)
        return;
    evstack_t *e = &ds->ev[s->event];
    unsigned n = s->callchain ? resolve_chain(ds, e, s) : 0;
    if (n == 0) {
        ds->st.lost++; /* the kernel gave no chain */
        return;
    }
    if (n >= DCPI_DSTACKS_MAX_STACK)
        ds->st.truncated++;
    if (dcpi_stackprof_add(e->sp, ds->frames, n, 1) < 0)
        ds->st.lost++; /* also in the profile's "lost" header */
    else
        ds->st.chains++;
}

int dcpi_dstacks_needs_flush(const dcpi_dstacks_t *ds)
{
    for (int i = 0; i < ds->nev; i++)
        if (dcpi_stackprof_needs_flush(ds->ev[i].sp))
            return 1;
    return 0;
}

static int set_keys(dcpi_stackprof_t *sp, const dcpi_dstacks_flush_info_t *fi, int ev)
{
    char num[32];
    int rc = dcpi_stackprof_set(sp, "epoch", fi->epoch);
    rc = rc ? rc : dcpi_stackprof_set(sp, "platform", fi->platform);
    rc = rc ? rc : dcpi_stackprof_set(sp, "event", fi->events[ev]);
    snprintf(num, sizeof num, "%" PRIu64, fi->periods[ev]);
    rc = rc ? rc : dcpi_stackprof_set(sp, "period", num);
    snprintf(num, sizeof num, "%u", fi->cpuspeed);
    return rc ? rc : dcpi_stackprof_set(sp, "cpuspeed", num);
}

/* Write one event's chains; reset them once written. */
static int flush_one(dcpi_dstacks_t *ds, int ev, const dcpi_dstacks_flush_info_t *fi, char *err)
{
    dcpi_stackprof_t *sp = ds->ev[ev].sp;
    char path[4096];
    dcpi_stackprof_path(fi->db, fi->epoch, fi->platform, fi->events[ev], path, sizeof path);
    int rc = set_keys(sp, fi, ev);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: header: %s", path, dcpi_strerror(rc));
    rc = dcpi_stackprof_merge_write(path, sp, err);
    if (rc == 0)
        dcpi_stackprof_reset(sp);
    return rc;
}

int dcpi_dstacks_flush(dcpi_dstacks_t *ds, const dcpi_dstacks_flush_info_t *fi, size_t *failed,
                       char *err)
{
    int written = 0, last = 0;
    size_t nfail = 0;
    char why[DCPI_ERRLEN];
    for (int ev = 0; ev < ds->nev; ev++) {
        dcpi_stackprof_t *sp = ds->ev[ev].sp;
        if (dcpi_stackprof_count(sp) == 0 && dcpi_stackprof_lost(sp) == 0)
            continue;
        int rc = flush_one(ds, ev, fi, why);
        if (rc == 0) {
            written++;
            continue;
        }
        last = rc;
        nfail++;
        dcpi__log(DCPI_LOG_ERR, "flush: %s", why);
        dcpi__errf(err, rc, "%s", why);
    }
    if (failed)
        *failed = nfail;
    return nfail ? last : written;
}

void dcpi_dstacks_stats(const dcpi_dstacks_t *ds, dcpi_dstacks_stats_t *out)
{
    *out = ds->st;
}
