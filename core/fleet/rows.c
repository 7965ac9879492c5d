/*
 * rows.c - the rows of one epoch of a database (dcpipush): its PC profiles split by process,
 * value hotlists and their missing-value marks, call chains and losses, per platform, and the
 * images whose symbols go with them (batch.h, dcpi_fleet_batch_epoch).
 *
 * A hotlist is one summary row (entry 0: err, vtot, seen and, when it has cluster information,
 * its cluster counters K, N, S, D in clusters, chits, csq, cagree) and one row per entry
 * (entry 1); queryvals.c merges them.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/model/profset.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/fleet/batch.h"
#include "core/fleet/schema.h"
#include "core/store/db.h"
#include "core/store/stackprof.h"
#include "core/store/vprof.h"
#include "dcpi/profile.h"
#include "dcpi/errno.h"

typedef struct epoch_ctx {
    dcpi_fleet_batch_t *b;
    const char *db, *epoch, *platform;
    uint32_t estart, eend;
    double duty;
    int img; /* the symbol request of the image being added */
} epoch_ctx_t;

static dcpi_fleet_key_t key_of(const epoch_ctx_t *c, const char *event, uint64_t period)
{
    return (dcpi_fleet_key_t){.host = c->b->host,
                              .epoch = c->epoch,
                              .platform = c->platform,
                              .event = event,
                              .estart = c->estart,
                              .eend = c->eend,
                              .period = period,
                              .duty = c->duty};
}

static void image_cols(dcpi_fbuf_t *o, const char *id, const char *path, int kind, uint64_t tstart,
                       uint64_t tsize)
{
    dcpi_fbuf_tsv(o, id);
    dcpi_fbuf_str(o, "\t");
    dcpi_fbuf_tsv(o, path);
    dcpi_fbuf_printf(o, "\t%d\t%" PRIu64 "\t%" PRIu64 "\t", kind, tstart, tsize);
}

static void sample_row(const epoch_ctx_t *c, const dcpi_fleet_key_t *k,
                       const dcpi_profset_image_t *img, uint32_t off, uint32_t pid,
                       const char *comm, uint64_t count)
{
    dcpi_fleet_batch_page(c->b, c->img, img->tstart + off);
    dcpi_fbuf_t *o = &c->b->t[DCPI_FLEET_T_SAMPLES];
    dcpi_fleet_batch_key(c->b, DCPI_FLEET_T_SAMPLES, k);
    const char *path = img->kind == DCPI_PSET_UNKNOWN ? img->name : img->path;
    image_cols(o, img->id, path, img->kind, img->tstart, img->tsize);
    dcpi_fbuf_printf(o, "%u\t%u\t", off, pid);
    dcpi_fbuf_tsv(o, comm);
    dcpi_fbuf_printf(o, "\t%" PRIu64 "\n", count);
}

/* One image's samples of one event: by process where the split exists, else as pid 0. */
static void image_samples(const epoch_ctx_t *c, const dcpi_profset_t *set,
                          const dcpi_profset_image_t *img, size_t ev)
{
    const dcpi_profset_event_t *e = &set->events[ev];
    dcpi_fleet_key_t k = key_of(c, e->name, e->period);
    const dcpi_procprof_t *pp = img->procs ? img->procs[ev] : NULL;
    if (pp && pp->n) {
        for (size_t i = 0; i < pp->n; i++)
            sample_row(c, &k, img, pp->e[i].offset, pp->e[i].pid, pp->e[i].comm, pp->e[i].count);
        return;
    }
    size_t n = 0;
    const dcpi_profile_entry_t *en = dcpi_profile_entries(img->prof[ev], &n);
    for (size_t i = 0; i < n; i++)
        sample_row(c, &k, img, en[i].offset, 0, "", en[i].count);
}

static void loss_rows(const epoch_ctx_t *c, const dcpi_profset_t *set)
{
    for (size_t ev = 0; ev < set->nevents; ev++) {
        const dcpi_profset_event_t *e = &set->events[ev];
        dcpi_fleet_key_t k = key_of(c, e->name, e->period);
        dcpi_fleet_batch_key(c->b, DCPI_FLEET_T_LOSS, &k);
        dcpi_fbuf_printf(&c->b->t[DCPI_FLEET_T_LOSS], "%" PRIu64 "\t%" PRIu64 "\n", e->lost,
                         e->total);
    }
}

static int platform_samples(epoch_ctx_t *c, char *err)
{
    dcpi_profset_t *set = NULL;
    int rc = dcpi_profset_load(c->db, c->epoch, c->platform, DCPI_PSET_LOAD_PROCS, &set, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        c->img = -1;
        if (img->kind != DCPI_PSET_UNKNOWN &&
            (c->img = dcpi_fleet_batch_symreq(c->b, img->id, img->kind, img->path, img->dir,
                                              img->tstart, img->tsize)) < 0)
            return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", c->db);
        for (size_t ev = 0; ev < set->nevents; ev++)
            if (img->prof[ev])
                image_samples(c, set, img, ev);
    }
    loss_rows(c, set);
    dcpi_profset_free(set);
    return 0;
}

static int vprof_kind(const char *path)
{
    if (!strcmp(path, "[kernel.kallsyms]"))
        return DCPI_FLEET_KERNEL;
    return path[0] == '[' ? DCPI_FLEET_PSEUDO : DCPI_FLEET_FILE;
}

static void hot_summary(const epoch_ctx_t *c, const dcpi_fleet_key_t *k, const dcpi_vprof_t *vp,
                        uint32_t off, const dcpi_vsummary_t *s)
{
    const char *id = dcpi_vprof_get(vp, "image"), *path = dcpi_vprof_get(vp, "path");
    const char *plugin = dcpi_vprof_get(vp, "vprof"), *ctx = dcpi_vprof_get(vp, "contexts");
    const char *ts = dcpi_vprof_get(vp, "tstart"), *tz = dcpi_vprof_get(vp, "tsize");
    const char *backend = dcpi_vprof_get(vp, "backend");
    uint64_t tstart = ts ? strtoull(ts, NULL, 16) : 0, tsize = tz ? strtoull(tz, NULL, 10) : 0;
    path = path ? path : "";
    for (uint32_t i = 0; i <= s->n; i++) { /* row 0: the summary, then its entries */
        /* a summary with cluster information carries its counters (the only row of the record
         * that does: a query sums them per record); the rest have the columns' default 0 */
        int t = i == 0 && s->chits > 0 ? DCPI_FLEET_T_HOTCLUST : DCPI_FLEET_T_HOTLISTS;
        dcpi_fbuf_t *o = &c->b->t[t];
        dcpi_fleet_batch_key(c->b, t, k);
        image_cols(o, id ? id : "", path, vprof_kind(path), tstart, tsize);
        dcpi_fbuf_tsv(o, plugin ? plugin : "");
        dcpi_fbuf_printf(o, "\t%u\t%d\t%u\t", dcpi_vprof_hotsize(vp), ctx && ctx[0] == '1', off);
        if (i == 0)
            dcpi_fbuf_printf(o, "0\t0\t0\t0\t0\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t", s->err,
                             s->vtot, s->seen);
        else {
            const dcpi_ventry_t *e = &s->e[i - 1];
            dcpi_fbuf_printf(
                o, "1\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t0\t0\t",
                e->value, e->context0, e->context1, e->count, s->err);
        }
        dcpi_fbuf_tsv(o, backend ? backend : "");
        if (t == DCPI_FLEET_T_HOTCLUST)
            dcpi_fbuf_printf(o, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64, s->clusters,
                             s->chits, s->csq, s->cagree);
        dcpi_fbuf_str(o, "\n");
    }
}

static int platform_hotlists(epoch_ctx_t *c, char *err)
{
    dcpi_db_file_t *files = NULL;
    size_t n = 0;
    int rc = dcpi_db_list_files(c->db, c->epoch, c->platform, ".vprof", &files, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        dcpi_vprof_t *vp = NULL;
        if ((rc = dcpi_vprof_read(files[i].path, &vp, err)) < 0)
            break;
        const char *ev = dcpi_vprof_get(vp, "event"), *per = dcpi_vprof_get(vp, "period");
        const char *id = dcpi_vprof_get(vp, "image"), *path = dcpi_vprof_get(vp, "path");
        const char *ts = dcpi_vprof_get(vp, "tstart"), *tz = dcpi_vprof_get(vp, "tsize");
        uint64_t tstart = ts ? strtoull(ts, NULL, 16) : 0;
        char dir[4096];
        (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", c->db, c->epoch, c->platform,
                          files[i].imagedir);
        int img =
            dcpi_fleet_batch_symreq(c->b, id ? id : "", vprof_kind(path ? path : ""),
                                    path ? path : "", dir, tstart, tz ? strtoull(tz, NULL, 10) : 0);
        dcpi_fleet_key_t k = key_of(c, ev ? ev : "", per ? strtoull(per, NULL, 10) : 0);
        for (size_t j = 0; j < dcpi_vprof_count(vp); j++) {
            uint32_t off;
            const dcpi_vsummary_t *s;
            dcpi_vprof_entry(vp, j, &off, &s);
            hot_summary(c, &k, vp, off, s);
            dcpi_fleet_batch_page(c->b, img, tstart + off);
        }
        dcpi_vprof_free(vp);
    }
    free(files);
    return rc;
}

/* ---- missing-value marks (<plugin>.vmiss: "0xOFFSET REASON" lines, docs/dcpiformat.md) ---- */

/* The PC profile of imagedir among profs (the image the marks belong to: a .vmiss marks
 * instructions of functions with PC samples), NULL when it has none. */
static dcpi_profile_t *image_profile(const dcpi_db_file_t *profs, size_t np, const char *imagedir)
{
    for (size_t i = 0; i < np; i++) {
        dcpi_profile_t *p = NULL;
        if (!strcmp(profs[i].imagedir, imagedir) && dcpi_profile_read(profs[i].path, &p, NULL) == 0)
            return p;
    }
    return NULL;
}

/* One .vmiss file's rows: each readable line one row (plugin, off, reason) with the image of
 * its PC profile p (without one: the directory's id, no path, tstart 0), as dcpilist reads the
 * file (an unreadable line is ignored there too). */
static void vmiss_rows(epoch_ctx_t *c, const dcpi_db_file_t *f, const dcpi_profile_t *p, char *text)
{
    const char *under = strrchr(f->imagedir, '_');
    const char *id = p ? dcpi_profile_get(p, "image") : NULL,
               *ev = p ? dcpi_profile_get(p, "event") : NULL;
    const char *path = p ? dcpi_profile_get(p, "path") : NULL;
    uint64_t tstart = 0, tsize = 0, period = 0;
    if (p) {
        (void)dcpi_profile_get_hex(p, "tstart", &tstart);
        (void)dcpi_profile_get_u64(p, "tsize", &tsize);
        (void)dcpi_profile_get_u64(p, "period", &period);
    }
    id = id ? id : under ? under + 1 : "";
    path = path ? path : "";
    char dir[4096], plugin[DCPI_NAMELEN];
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", c->db, c->epoch, c->platform, f->imagedir);
    snprintf(plugin, sizeof plugin, "%.*s", (int)(strlen(f->file) - strlen(".vmiss")), f->file);
    int img = dcpi_fleet_batch_symreq(c->b, id, vprof_kind(path), path, dir, tstart, tsize);
    dcpi_fleet_key_t k = key_of(c, ev ? ev : "", period);
    dcpi_fbuf_t *o = &c->b->t[DCPI_FLEET_T_VMISS];
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *end = NULL;
        unsigned long long off = strtoull(l, &end, 16);
        if (end == l || *end != ' ' || off > UINT32_MAX)
            continue;
        dcpi_fleet_batch_key(c->b, DCPI_FLEET_T_VMISS, &k);
        image_cols(o, id, path, vprof_kind(path), tstart, tsize);
        dcpi_fbuf_tsv(o, plugin);
        dcpi_fbuf_printf(o, "\t%llu\t", off);
        dcpi_fbuf_tsv(o, end + 1);
        dcpi_fbuf_str(o, "\n");
        dcpi_fleet_batch_page(c->b, img, tstart + off);
    }
}

/* The platform's missing-value marks: every <plugin>.vmiss of its images. */
static int platform_vmiss(epoch_ctx_t *c, char *err)
{
    dcpi_db_file_t *files = NULL, *profs = NULL;
    size_t n = 0, np = 0;
    int rc = dcpi_db_list_files(c->db, c->epoch, c->platform, ".vmiss", &files, &n, err);
    if (rc == 0 && n)
        rc = dcpi_db_list_files(c->db, c->epoch, c->platform, ".prof", &profs, &np, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        void *text = NULL;
        size_t len = 0;
        if ((rc = dcpi__read_file(files[i].path, 1, &text, &len, err)) < 0)
            break;
        dcpi_profile_t *p = image_profile(profs, np, files[i].imagedir);
        vmiss_rows(c, &files[i], p, text);
        dcpi_profile_free(p);
        free(text);
    }
    free(files);
    free(profs);
    return rc;
}

/* A chain as text: "ID:TSTART:OFF" frames (hex), leaf first, ';' between; "-:0:OFF" outside
 * every image. Each image of the stack profile also gets a row "=ID:TSTART:INDEX:TSIZE:PATH"
 * (hex numbers) of count 0: the path a querying machine names a frame's image by
 * (stackview.h), its text size, and its place in the profile's image table (a query orders the
 * images and chains as the file does). */
static void chain_text(dcpi_fbuf_t *o, const dcpi_stackprof_t *sp, const dcpi_frame_t *f,
                       unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (i)
            dcpi_fbuf_str(o, ";");
        if (f[i].image == DCPI_STACK_NOIMAGE) {
            dcpi_fbuf_printf(o, "-:0:%x", f[i].offset);
            continue;
        }
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(sp, f[i].image);
        dcpi_fbuf_tsv(o, im->id);
        dcpi_fbuf_printf(o, ":%" PRIx64 ":%x", im->tstart, f[i].offset);
    }
}

static void stack_rows(epoch_ctx_t *c, const dcpi_stackprof_t *sp)
{
    size_t ni = dcpi_stackprof_nimages(sp);
    int *req = calloc(ni ? ni : 1, sizeof *req);
    if (!req) {
        c->b->symreq.oom = 1;
        return;
    }
    for (size_t i = 0; i < ni; i++) {
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(sp, i);
        char dir[4096];
        (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/%s", c->db, c->epoch, c->platform, im->dir);
        req[i] = dcpi_fleet_batch_symreq(c->b, im->id, vprof_kind(im->path), im->path, dir,
                                         im->tstart, im->tsize);
    }
    const char *ev = dcpi_stackprof_get(sp, "event"), *per = dcpi_stackprof_get(sp, "period");
    dcpi_fleet_key_t k = key_of(c, ev ? ev : "", per ? strtoull(per, NULL, 10) : 0);
    dcpi_fbuf_t *o = &c->b->t[DCPI_FLEET_T_CHAINS];
    for (size_t i = 0; i < ni; i++) { /* "=ID:TSTART:INDEX:TSIZE:PATH" rows (count 0) */
        const dcpi_stack_image_t *im = dcpi_stackprof_image_get(sp, i);
        dcpi_fbuf_t text = {0};
        dcpi_fbuf_printf(&text, "=%s:%" PRIx64 ":%zx:%" PRIx64 ":%s", im->id, im->tstart, i,
                         im->tsize, im->path);
        dcpi_fleet_batch_key(c->b, DCPI_FLEET_T_CHAINS, &k);
        dcpi_fbuf_tsv(o, text.p ? text.p : "");
        dcpi_fbuf_str(o, "\t0\n");
        if (dcpi_fbuf_ok(&text) < 0)
            o->oom = 1;
        dcpi_fbuf_free(&text);
    }
    for (size_t i = 0; i < dcpi_stackprof_count(sp); i++) {
        const dcpi_frame_t *f;
        unsigned n;
        uint64_t count;
        dcpi_stackprof_chain(sp, i, &f, &n, &count);
        dcpi_fleet_batch_key(c->b, DCPI_FLEET_T_CHAINS, &k);
        chain_text(o, sp, f, n);
        dcpi_fbuf_printf(o, "\t%" PRIu64 "\n", count);
        for (unsigned j = 0; j < n; j++)
            if (f[j].image != DCPI_STACK_NOIMAGE && f[j].image < ni)
                dcpi_fleet_batch_page(c->b, req[f[j].image],
                                      dcpi_stackprof_image_get(sp, f[j].image)->tstart +
                                          f[j].offset);
    }
    free(req);
}

static int platform_chains(epoch_ctx_t *c, char *err)
{
    char dir[4096];
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s/stacks", c->db, c->epoch, c->platform);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d))) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".stk") != 0)
            continue;
        char path[4400];
        (void)dcpi__pathf(path, sizeof path, "%s/%s", dir, de->d_name);
        dcpi_stackprof_t *sp = NULL;
        if ((rc = dcpi_stackprof_read(path, &sp, err)) == 0)
            stack_rows(c, sp);
        dcpi_stackprof_free(sp);
    }
    closedir(d);
    return rc;
}

/* The newest modification time of the platform directory's files (the epoch's last write). */
static uint32_t newest_write(const char *db, const char *epoch, const char *platform)
{
    dcpi_db_file_t *files = NULL;
    size_t n = 0;
    uint32_t t = 0;
    if (dcpi_db_list_files(db, epoch, platform, ".prof", &files, &n, NULL) < 0)
        return 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(files[i].path, &st) == 0 && (uint64_t)st.st_mtime > t)
            t = (uint32_t)st.st_mtime;
    }
    free(files);
    return t;
}

int dcpi_fleet_batch_epoch(dcpi_fleet_batch_t *b, const char *db, const char *epoch, uint32_t eend,
                           char *err)
{
    epoch_ctx_t c = {.b = b, .db = db, .epoch = epoch};
    snprintf(b->epoch, sizeof b->epoch, "%.63s", epoch);
    if (dcpi_fleet_epoch_time(epoch, &c.estart) < 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s/%s: not an epoch name", db, epoch);
    char **plats = NULL;
    size_t np = 0;
    int rc = dcpi_db_platforms(db, epoch, &plats, &np, err);
    for (size_t i = 0; rc == 0 && i < np; i++) {
        c.platform = plats[i];
        c.duty = dcpi_fleet_epoch_duty(db, epoch, plats[i]);
        c.eend = eend ? eend : newest_write(db, epoch, plats[i]);
        if (c.eend < c.estart)
            c.eend = c.estart;
        rc = platform_samples(&c, err);
        if (rc == 0)
            rc = platform_hotlists(&c, err);
        if (rc == 0)
            rc = platform_vmiss(&c, err);
        if (rc == 0)
            rc = platform_chains(&c, err);
    }
    dcpi_db_free_list(plats, np);
    if (rc == 0 && (rc = dcpi_fleet_batch_seal(b, c.estart, epoch)) < 0)
        dcpi__errf(err, rc, "%s/%s: out of memory", db, epoch);
    return rc;
}

int dcpi_fleet_batch_values(dcpi_fleet_batch_t *b, const char *db, const char *epoch,
                            const char *platform, uint32_t eend, char *err)
{
    epoch_ctx_t c = {.b = b, .db = db, .epoch = epoch, .platform = platform, .eend = eend};
    snprintf(b->epoch, sizeof b->epoch, "%.63s", epoch);
    if (dcpi_fleet_epoch_time(epoch, &c.estart) < 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s/%s: not an epoch name", db, epoch);
    c.duty = dcpi_fleet_epoch_duty(db, epoch, platform);
    if (c.eend < c.estart)
        c.eend = c.estart;
    int rc = platform_hotlists(&c, err);
    if (rc == 0)
        rc = platform_vmiss(&c, err);
    if (rc == 0)
        rc = platform_chains(&c, err);
    char slot[600];
    snprintf(slot, sizeof slot, "values:%s:%s", epoch, platform);
    if (rc == 0 && (rc = dcpi_fleet_batch_seal(b, c.estart, slot)) < 0)
        dcpi__errf(err, rc, "%s/%s: out of memory", db, epoch);
    return rc;
}
