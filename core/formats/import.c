/*
 * import.c - the builders of dcpiimport: a gperftools CPU profile's records (their leaf PCs
 * mapped through its mapped-objects list to ELF addresses) or a gmon.out's histograms counted
 * into one PC profile per image, then written as a new epoch: in a temporary directory of the
 * database, renamed into place once every profile is written, removed on any error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/base/progress.h"
#include "core/base/fsutil.h"
#include "core/formats/gmon.h"
#include "core/formats/gperf.h"
#include "core/formats/import.h"
#include "dcpi/errno.h"

/* ---- images ---- */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The image for path (-image replaces a path with the same basename); NULL when it cannot be
 * read (warned once) or on ENOMEM (*rc set). */
static dcpi_import_image_t *image_get(dcpi_import_t *im, const char *path, int *rc)
{
    if (im->o->image && (!path[0] || !strcmp(base_name(path), base_name(im->o->image))))
        path = im->o->image;
    char *abs = path[0] && path[0] != '[' ? realpath(path, NULL) : NULL;
    const char *key = abs ? abs : path;
    for (size_t i = 0; i < im->n; i++)
        if (!strcmp(im->v[i].path, key)) {
            free(abs);
            return im->v[i].ok ? &im->v[i] : NULL;
        }
    if (dcpi__grow((void **)&im->v, &im->cap, im->n + 1, sizeof(*im->v)) < 0) {
        free(abs);
        return *rc = DCPI_ENOMEM, NULL;
    }
    dcpi_import_image_t *m = &im->v[im->n];
    *m = (dcpi_import_image_t){.path = abs ? abs : strdup(path)};
    if (!m->path)
        return *rc = DCPI_ENOMEM, NULL;
    im->n++;
    char why[DCPI_ERRLEN];
    if (path[0] == '[' || !path[0])
        return NULL;
    if (dcpi_image_probe(m->path, &m->info, why) < 0) {
        fprintf(stderr, "%s: %s; its samples go to unknown\n", im->o->tool, why);
        return NULL;
    }
    if ((*rc = dcpi_profile_new(&m->prof)) < 0)
        return NULL;
    m->ok = 1;
    return m;
}

/* Count samples at ELF vaddr of m (or unknown when outside its text). */
static int add_vaddr(dcpi_import_t *im, dcpi_import_image_t *m, uint64_t vaddr, uint64_t count)
{
    uint64_t off = vaddr - m->info.tstart;
    if (vaddr < m->info.tstart || off >= m->info.tsize || off > UINT32_MAX) {
        im->unknown += count;
        return 0;
    }
    while (count) {
        uint32_t c = count > UINT32_MAX ? UINT32_MAX : (uint32_t)count;
        if (dcpi_profile_add(m->prof, (uint32_t)off, c) == DCPI_ERANGE)
            im->saturated++;
        count -= c;
    }
    return 0;
}

void dcpi_import_free(dcpi_import_t *im)
{
    for (size_t i = 0; i < im->n; i++) {
        free(im->v[i].path);
        dcpi_profile_free(im->v[i].prof);
    }
    free(im->v);
}

/* ---- the two readers ---- */

int dcpi_import_gperf(dcpi_import_t *im, char *err)
{
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_read(im->o->file, &g, err);
    if (rc < 0)
        return rc;
    im->period = g->period_us * 1000;
    for (size_t r = 0; rc == 0 && r < g->nrecs; r++) {
        uint64_t pc = g->pcs[g->recs[r].first], count = g->recs[r].count;
        const dcpi_gperf_map_t *mp = dcpi_gperf_map_find(g, pc);
        dcpi_import_image_t *m = NULL;
        uint64_t vaddr = pc;
        if (mp) {
            m = image_get(im, mp->path, &rc);
            if (m)
                vaddr = dcpi_image_file_to_vaddr(&m->info, pc - mp->start + mp->offset);
        } else if (im->o->image) {
            m = image_get(im, im->o->image, &rc);
        }
        if (rc == 0 && m)
            rc = add_vaddr(im, m, vaddr, count);
        else if (rc == 0)
            im->unknown += count;
    }
    if (rc < 0)
        dcpi__errf(err, rc, "%s: %s", im->o->file, dcpi_strerror(rc));
    dcpi_gperf_free(g);
    return rc;
}

static int gmon_hist(dcpi_import_t *im, dcpi_import_image_t *m, const dcpi_gmon_hist_t *h,
                     char *err)
{
    for (uint32_t i = 0; i < h->nbins; i++) {
        if (!h->bins[i])
            continue;
        uint64_t pc = dcpi_gmon_bin_addr(h, i);
        if (pc < m->info.tstart || pc - m->info.tstart >= m->info.tsize)
            return dcpi__errf(err, DCPI_EFORMAT,
                              "%s: histogram out of range: %u samples at %#" PRIx64
                              ", outside the text of %s",
                              im->o->file, h->bins[i], pc, m->path);
        add_vaddr(im, m, pc, h->bins[i]);
    }
    return 0;
}

int dcpi_import_gmon(dcpi_import_t *im, char *err)
{
    dcpi_gmon_t *g = NULL;
    int rc = dcpi_gmon_read(im->o->file, &g, err);
    if (rc < 0)
        return rc;
    dcpi_import_image_t *m = image_get(im, im->o->image, &rc);
    if (!m) {
        rc =
            dcpi__errf(err, rc < 0 ? rc : DCPI_ENOENT, "%s: cannot read the program", im->o->image);
    } else {
        im->period = g->nhists && g->hists[0].rate ? 1000000000ull / g->hists[0].rate : 0;
        for (size_t i = 0; rc == 0 && i < g->nhists; i++)
            rc = gmon_hist(im, m, &g->hists[i], err);
    }
    dcpi_gmon_free(g);
    return rc;
}

/* ---- writing the epoch ---- */

static int set_header(dcpi_profile_t *p, const char *id, const char *epoch, const char *plat,
                      const dcpi_import_t *im, uint64_t tstart, uint64_t tsize, const char *path)
{
    int rc = dcpi_profile_set(p, "image", id);
    rc = rc ? rc : dcpi_profile_set(p, "epoch", epoch);
    rc = rc ? rc : dcpi_profile_set(p, "platform", plat);
    rc = rc ? rc : dcpi_profile_set(p, "event", im->o->event);
    rc = rc ? rc : dcpi_profile_setf(p, "period", "%" PRIu64, im->period);
    rc = rc ? rc : dcpi_profile_setf(p, "tstart", "0x%" PRIx64, tstart);
    rc = rc ? rc : dcpi_profile_setf(p, "tsize", "%" PRIu64, tsize);
    rc = rc ? rc : dcpi_profile_set(p, "cpuspeed", "0");
    rc = rc ? rc : dcpi_profile_set(p, "path", path);
    rc = rc ? rc : dcpi_profile_setf(p, "imported", "%s %s", im->o->format, im->o->file);
    return rc;
}

static int write_one(const char *pdir, const char *dirname, dcpi_profile_t *p, const char *event,
                     char *err)
{
    char dir[8192], file[8448];
    /* pdir is shorter than 4800 bytes, dirname than 512 */
    snprintf(dir, sizeof(dir), "%s/%s", pdir, dirname);
    snprintf(file, sizeof(file), "%s/%s.prof", dir, event);
    int rc = dcpi__mkdirs(dir, 0755);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", dir, dcpi_strerror(rc));
    return dcpi_profile_write(file, p, err);
}

static int write_unknown(const dcpi_import_t *im, const char *pdir, const char *epoch,
                         const char *plat, char *err)
{
    dcpi_profile_t *p = NULL;
    int rc = dcpi_profile_new(&p);
    rc = rc ? rc : set_header(p, "0", epoch, plat, im, 0, 0, "unknown");
    rc = rc ? rc : dcpi_profile_setf(p, "lost", "0");
    for (uint64_t left = im->unknown; rc == 0 && left;) {
        uint32_t c = left > UINT32_MAX ? UINT32_MAX : (uint32_t)left;
        dcpi_profile_add(p, 0, c);
        left -= c;
    }
    char dirname[DCPI_NAMELEN + 16];
    snprintf(dirname, sizeof(dirname), "unknown@%s", plat);
    if (rc < 0)
        dcpi__errf(err, rc, "unknown profile: %s", dcpi_strerror(rc));
    else
        rc = write_one(pdir, dirname, p, im->o->event, err);
    dcpi_profile_free(p);
    return rc;
}

static int write_epoch(const dcpi_import_t *im, const char *tmp, const char *epoch,
                       const char *plat, char *err)
{
    char pdir[4800];
    snprintf(pdir, sizeof(pdir), "%s/%s", tmp, plat);
    int rc = 0;
    dcpi__progress_t pg;
    dcpi__progress_start(&pg, stderr, -1, im->n, "dcpiimport: images");
    for (size_t i = 0; rc == 0 && i < im->n; i++) {
        dcpi__progress_update(&pg, i);
        const dcpi_import_image_t *m = &im->v[i];
        if (!m->ok || dcpi_profile_total(m->prof) == 0)
            continue;
        char dirname[512];
        dcpi_image_dirname(m->path, m->info.id, dirname, sizeof(dirname));
        rc = set_header(m->prof, m->info.id, epoch, plat, im, m->info.tstart, m->info.tsize,
                        m->path);
        if (rc < 0)
            dcpi__errf(err, rc, "%s: %s", m->path, dcpi_strerror(rc));
        else
            rc = write_one(pdir, dirname, m->prof, im->o->event, err);
    }
    dcpi__progress_done(&pg);
    if (rc == 0 && im->unknown)
        rc = write_unknown(im, pdir, epoch, plat, err);
    return rc;
}

/* A free epoch name for now (YYYYMMDDHHMM, else with seconds, else the next free second). */
static int pick_epoch(const char *db, const char *want, char out[DCPI_NAMELEN])
{
    char path[4700];
    if (want) {
        snprintf(out, DCPI_NAMELEN, "%s", want);
        snprintf(path, sizeof(path), "%s/%s", db, out);
        return access(path, F_OK) == 0 ? DCPI_EEXIST : 0;
    }
    time_t now = time(NULL);
    for (int k = 0; k < 120; k++) {
        time_t t = now + k;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(out, DCPI_NAMELEN, k == 0 ? "%Y%m%d%H%M" : "%Y%m%d%H%M%S", &tm);
        snprintf(path, sizeof(path), "%s/%s", db, out);
        if (access(path, F_OK) != 0)
            return 0;
    }
    return DCPI_EEXIST;
}

int dcpi_import_save(const dcpi_import_t *im, const char *db, const char *plat,
                     char epoch[DCPI_NAMELEN], char *err)
{
    char tmp[4400], final[4700];
    int rc = dcpi__mkdirs(db, 0755);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", db, dcpi_strerror(rc));
    if ((rc = pick_epoch(db, im->o->new_epoch, epoch)) < 0)
        return dcpi__errf(err, rc, "%s: epoch %s already exists", db, epoch);
    snprintf(tmp, sizeof(tmp), "%s/.dcpiimport.XXXXXX", db);
    if (!mkdtemp(tmp))
        return dcpi__errf(err, DCPI_EIO, "%s: %s", tmp, strerror(errno));
    rc = write_epoch(im, tmp, epoch, plat, err);
    snprintf(final, sizeof(final), "%s/%s", db, epoch);
    if (rc == 0 && rename(tmp, final) != 0)
        rc = dcpi__errf(err, DCPI_EIO, "%s: %s", final, strerror(errno));
    if (rc < 0)
        dcpi__remove_tree(tmp);
    return rc;
}
