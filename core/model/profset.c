/*
 * profset.c - one epoch's PC profiles loaded into a profile set grouped by image, and the
 * queries the analysis tools make on it (matching, filtering, events, symbols); see profset.h.
 */
#include "core/model/profset.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/image/image.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

#define KERNEL_PATH "[kernel.kallsyms]"

/* ---- loading ---- */

/* Loading state: the set under construction, with events in first-seen order. */
typedef struct loader {
    dcpi_profset_t *set;
    int flags; /* DCPI_PSET_LOAD_* */
    size_t cap_events, cap_images;
    size_t gen; /* bumped whenever the platform of the files read changes */
    char platform[DCPI_NAMELEN];
    size_t *seen; /* [cap_images]: gen at which each image was last seen */
} loader_t;

static void free_procs(dcpi_procprof_t *pp)
{
    if (pp)
        dcpi_procprof_free(pp);
    free(pp);
}

static void image_clear(dcpi_profset_image_t *img, size_t nevents)
{
    for (size_t e = 0; img->prof && e < nevents; e++)
        dcpi_profile_free(img->prof[e]);
    for (size_t e = 0; img->procs && e < nevents; e++)
        free_procs(img->procs[e]);
    free(img->prof);
    free(img->procs);
    free(img->id);
    free(img->path);
    free(img->name);
    free(img->dir);
    free(img->platform);
    free(img->syms);
    free(img->sympool);
}

void dcpi_profset_free(dcpi_profset_t *set)
{
    if (!set)
        return;
    for (size_t i = 0; i < set->nimages; i++)
        image_clear(&set->images[i], set->nevents);
    for (size_t e = 0; e < set->nevents; e++)
        free(set->events[e].name);
    free(set->images);
    free(set->events);
    free(set);
}

static int image_kind(const char *path, const char *imagedir)
{
    if (!strncmp(imagedir, "unknown@", 8) || !strcmp(path, "unknown"))
        return DCPI_PSET_UNKNOWN;
    if (!strcmp(path, KERNEL_PATH))
        return DCPI_PSET_KERNEL;
    if (path[0] == '[')
        return DCPI_PSET_PSEUDO;
    return DCPI_PSET_FILE;
}

/* Index of the event, adding it (and a NULL slot in every image) when new; or DCPI_ENOMEM. */
static int event_slot(loader_t *ld, const char *name)
{
    dcpi_profset_t *set = ld->set;
    for (size_t e = 0; e < set->nevents; e++)
        if (!strcmp(set->events[e].name, name))
            return (int)e;
    if (set->nevents == ld->cap_events) {
        size_t cap = ld->cap_events;
        if (dcpi__grow((void **)&set->events, &cap, set->nevents + 1, sizeof(*set->events)) < 0)
            return DCPI_ENOMEM;
        for (size_t i = 0; i < set->nimages; i++) {
            dcpi_profile_t **p = reallocarray(set->images[i].prof, cap, sizeof(*p));
            if (!p)
                return DCPI_ENOMEM;
            for (size_t e = ld->cap_events; e < cap; e++)
                p[e] = NULL;
            set->images[i].prof = p;
            dcpi_procprof_t **pp = reallocarray(set->images[i].procs, cap, sizeof(*pp));
            if (!pp)
                return DCPI_ENOMEM;
            for (size_t e = ld->cap_events; e < cap; e++)
                pp[e] = NULL;
            set->images[i].procs = pp;
        }
        ld->cap_events = cap;
    }
    dcpi_profset_event_t *ev = &set->events[set->nevents];
    memset(ev, 0, sizeof(*ev));
    if (!(ev->name = strdup(name)))
        return DCPI_ENOMEM;
    return (int)set->nevents++;
}

/* What one file's header says about its image. */
typedef struct header {
    const char *id, *event, *path;
    uint64_t period, tstart, tsize, lost;
} header_t;

static int read_header(const dcpi_profile_t *p, const char *file, header_t *h, char *err)
{
    h->id = dcpi_profile_get(p, "image");
    h->event = dcpi_profile_get(p, "event");
    h->path = dcpi_profile_get(p, "path");
    if (!h->path)
        h->path = "";
    if (!h->id || !h->event || dcpi_profile_get_u64(p, "period", &h->period) < 0 ||
        dcpi_profile_get_hex(p, "tstart", &h->tstart) < 0 ||
        dcpi_profile_get_u64(p, "tsize", &h->tsize) < 0) {
        return dcpi__errf(err, DCPI_EFORMAT,
                          "%s: missing or malformed image, event, period, tstart or tsize", file);
    }
    h->lost = 0;
    int rc = dcpi_profile_get_u64(p, "lost", &h->lost);
    if (rc < 0 && rc != DCPI_ENOENT) {
        return dcpi__errf(err, DCPI_EFORMAT, "%s: malformed lost value '%s'", file,
                          dcpi_profile_get(p, "lost"));
    }
    return 0;
}

static int same_image(const dcpi_profset_image_t *img, const header_t *h, int kind,
                      const char *imagedir)
{
    if (img->kind != kind)
        return 0;
    if (kind == DCPI_PSET_UNKNOWN)
        return !strcmp(img->name, imagedir);
    return !strcmp(img->id, h->id) && img->tstart == h->tstart;
}

static char *dir_of(const char *path)
{
    char *d = strdup(path);
    char *slash = d ? strrchr(d, '/') : NULL;
    if (slash)
        *slash = '\0';
    return d;
}

static char *lowercase(char *s)
{
    for (char *c = s; c && *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return s;
}

/* Add a new image for this file; returns its index or DCPI_ENOMEM. */
static int new_image(loader_t *ld, const header_t *h, int kind, const dcpi_db_file_t *f)
{
    dcpi_profset_t *set = ld->set;
    if (set->nimages == ld->cap_images) {
        size_t cap = ld->cap_images;
        if (dcpi__grow((void **)&set->images, &cap, set->nimages + 1, sizeof(*set->images)) < 0)
            return DCPI_ENOMEM;
        size_t *seen = reallocarray(ld->seen, cap, sizeof(*seen));
        if (!seen)
            return DCPI_ENOMEM;
        ld->seen = seen;
        ld->cap_images = cap;
    }
    dcpi_profset_image_t *img = &set->images[set->nimages];
    memset(img, 0, sizeof(*img));
    img->kind = kind;
    img->tstart = h->tstart;
    img->tsize = h->tsize;
    img->nplatforms = 1;
    img->id = lowercase(strdup(h->id));
    img->path = strdup(h->path);
    img->name = strdup(kind == DCPI_PSET_UNKNOWN ? f->imagedir : h->path);
    img->dir = dir_of(f->path);
    img->platform = strdup(f->platform);
    img->prof = calloc(ld->cap_events ? ld->cap_events : 1, sizeof(*img->prof));
    img->procs = calloc(ld->cap_events ? ld->cap_events : 1, sizeof(*img->procs));
    ld->seen[set->nimages] = ld->gen;
    set->nimages++;
    if (!img->id || !img->path || !img->name || !img->dir || !img->platform || !img->prof ||
        !img->procs)
        return DCPI_ENOMEM;
    return (int)set->nimages - 1;
}

static int find_image(loader_t *ld, const header_t *h, const dcpi_db_file_t *f)
{
    int kind = image_kind(h->path, f->imagedir);
    dcpi_profset_t *set = ld->set;
    if (strcmp(ld->platform, f->platform) != 0) {
        snprintf(ld->platform, sizeof(ld->platform), "%s", f->platform);
        ld->gen++;
    }
    /* Search backwards: the files of one image directory come one after the other. */
    for (size_t i = set->nimages; i-- > 0;) {
        if (same_image(&set->images[i], h, kind, f->imagedir)) {
            set->images[i].nplatforms += ld->seen[i] != ld->gen;
            ld->seen[i] = ld->gen;
            return (int)i;
        }
    }
    return new_image(ld, h, kind, f);
}

/* The split by process next to the profile file prof_path ("X.prof" -> "X.procs"), added to
 * img's for event ei; a profile without one is counted in img->procs_missing, and so is one
 * whose split is damaged (skipped with a warning, core/base/damage.h; -strict: the error). */
static int load_procs(dcpi_profset_image_t *img, int ei, const char *prof_path, char *err)
{
    char path[4200];
    size_t n = strlen(prof_path);
    if (n < 5 ||
        dcpi__pathf(path, sizeof path, "%.*s" DCPI_PROCPROF_SUFFIX, (int)(n - 5), prof_path) < 0)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", prof_path);
    if (!img->procs[ei] && !(img->procs[ei] = calloc(1, sizeof(dcpi_procprof_t))))
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", path);
    dcpi_procprof_t one = {0};
    int rc = dcpi_procprof_read(path, &one, err);
    if (rc == 0 && one.torn) /* its whole chunks are used; what a kill cut short is said */
        rc = dcpi__damage_skip(DCPI_ETRUNC,
                               "%s: %zu bytes of an unfinished append left out (dcpid was "
                               "killed in a flush: that flush's split by process is lost)",
                               path, one.torn);
    if (rc < 0 && one.torn) {
        dcpi_procprof_free(&one);
        return dcpi__errf(err, rc, "%s: %zu bytes of an unfinished append at its end", path,
                          one.torn);
    }
    if (rc == DCPI_ENOENT ||
        (rc < 0 && rc != DCPI_ENOMEM && dcpi__damage_skip(rc, "%s", err) == 0)) {
        dcpi_procprof_free(&one);
        img->procs_missing++;
        return 0;
    }
    for (size_t i = 0; rc == 0 && i < one.n; i++)
        rc = dcpi_procprof_add(img->procs[ei], one.e[i].pid, one.e[i].comm, one.e[i].offset,
                               one.e[i].count);
    dcpi_procprof_free(&one);
    if (rc == 0)
        dcpi_procprof_normalize(img->procs[ei]);
    else if (rc == DCPI_ENOMEM)
        dcpi__errf(err, rc, "%s: out of memory", path);
    return rc;
}

/* Merge one parsed profile (ownership taken) into the set. */
static int add_profile(loader_t *ld, dcpi_profile_t *p, const dcpi_db_file_t *f, char *err)
{
    header_t h;
    int rc = read_header(p, f->path, &h, err);
    int ii = rc < 0 ? rc : find_image(ld, &h, f);
    int ei = ii < 0 ? ii : event_slot(ld, h.event);
    if (rc < 0 || ii < 0 || ei < 0) {
        if (rc == 0)
            dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", f->path);
        dcpi_profile_free(p);
        return rc < 0 ? rc : DCPI_ENOMEM;
    }
    dcpi_profset_event_t *ev = &ld->set->events[ei];
    if (ev->nfiles == 0)
        ev->period = h.period;
    else if (ev->period != h.period)
        ev->mixed_period = 1;
    ev->nfiles++;
    ev->lost += h.lost;
    if ((ld->flags & DCPI_PSET_LOAD_PROCS) &&
        (rc = load_procs(&ld->set->images[ii], ei, f->path, err)) < 0) {
        dcpi_profile_free(p);
        return rc;
    }
    dcpi_profile_t **slot = &ld->set->images[ii].prof[ei];
    if (!*slot) {
        *slot = p;
        return 0;
    }
    rc = dcpi_profile_add_all(*slot, p);
    dcpi_profile_free(p);
    if (rc == DCPI_ERANGE) {
        ev->saturated++;
        return 0;
    }
    if (rc < 0)
        dcpi__errf(err, rc, "%s: cannot merge: %s", f->path, dcpi_strerror(rc));
    return rc;
}

static void compute_totals(dcpi_profset_t *set)
{
    for (size_t e = 0; e < set->nevents; e++) {
        set->events[e].total = 0;
        for (size_t i = 0; i < set->nimages; i++)
            if (set->images[i].prof[e])
                set->events[e].total += dcpi_profile_total(set->images[i].prof[e]);
    }
}

/* The sorts below reorder arrays with a permutation, so qsort needs a global-free comparator:
 * events are sorted through an index array carrying the names. */
typedef struct ev_order {
    const char *name;
    size_t old;
} ev_order_t;

static int cmp_ev_order(const void *a, const void *b)
{
    return strcmp(((const ev_order_t *)a)->name, ((const ev_order_t *)b)->name);
}

static int cmp_image(const void *a, const void *b)
{
    const dcpi_profset_image_t *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c == 0)
        c = strcmp(x->id, y->id);
    if (c == 0)
        c = x->tstart < y->tstart ? -1 : x->tstart > y->tstart;
    return c;
}

/* Sort events by name (permuting every image's prof array) and images by name. */
static int finish_set(dcpi_profset_t *set)
{
    size_t n = set->nevents;
    ev_order_t *ord = calloc(n ? n : 1, sizeof(*ord));
    dcpi_profset_event_t *ev = calloc(n ? n : 1, sizeof(*ev));
    dcpi_profile_t **tmp = calloc(n ? n : 1, sizeof(*tmp));
    dcpi_procprof_t **ptmp = calloc(n ? n : 1, sizeof(*ptmp));
    int rc = ord && ev && tmp && ptmp ? 0 : DCPI_ENOMEM;
    for (size_t e = 0; rc == 0 && e < n; e++)
        ord[e] = (ev_order_t){set->events[e].name, e};
    if (rc == 0 && n > 0) {
        qsort(ord, n, sizeof(*ord), cmp_ev_order);
        for (size_t e = 0; e < n; e++)
            ev[e] = set->events[ord[e].old];
        memcpy(set->events, ev, n * sizeof(*ev));
        for (size_t i = 0; i < set->nimages; i++) {
            for (size_t e = 0; e < n; e++)
                tmp[e] = set->images[i].prof[ord[e].old];
            memcpy(set->images[i].prof, tmp, n * sizeof(*tmp));
            for (size_t e = 0; e < n; e++)
                ptmp[e] = set->images[i].procs[ord[e].old];
            memcpy(set->images[i].procs, ptmp, n * sizeof(*ptmp));
        }
        qsort(set->images, set->nimages, sizeof(*set->images), cmp_image);
        compute_totals(set);
    }
    free(ptmp);
    free(tmp);
    free(ev);
    free(ord);
    return rc;
}

/* A profile that cannot be read or parsed, or whose header lacks what the set needs, is named
 * in a warning and left out (core/base/damage.h); with -strict, or out of memory, the load
 * fails with its message in err. */
static int load_files(loader_t *ld, const dcpi_db_file_t *files, size_t n, char *err)
{
    char why[DCPI_ERRLEN];
    for (size_t i = 0; i < n; i++) {
        dcpi_profile_t *p = NULL;
        why[0] = '\0';
        int rc = dcpi_profile_read(files[i].path, &p, why);
        if (rc == 0) {
            header_t h;
            rc = read_header(p, files[i].path, &h, why);
            if (rc < 0)
                dcpi_profile_free(p);
        }
        if (rc < 0 && !why[0])
            dcpi__errf(why, rc, "%s: %s", files[i].path, dcpi_strerror(rc));
        if (rc < 0 && (rc == DCPI_ENOMEM || dcpi__damage_skip(rc, "%s", why) < 0)) {
            dcpi__errf(err, rc, "%s", why);
            return rc;
        }
        if (rc < 0)
            continue;
        rc = add_profile(ld, p, &files[i], err);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int dcpi_profset_load(const char *db, const char *epoch, const char *platform, int flags,
                      dcpi_profset_t **out, char *err)
{
    return dcpi_profset_load_epochs(db, &epoch, 1, platform, flags, out, err);
}

int dcpi_profset_load_epochs(const char *db, const char *const *epochs, size_t nepochs,
                             const char *platform, int flags, dcpi_profset_t **out, char *err)
{
    *out = NULL;
    if (err)
        err[0] = '\0';
    loader_t ld = {.set = calloc(1, sizeof(dcpi_profset_t)), .flags = flags};
    if (!ld.set) {
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", db);
    }
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < nepochs; k++) {
        dcpi_db_file_t *files = NULL;
        size_t n = 0;
        rc = dcpi_db_list_files(db, epochs[k], platform, ".prof", &files, &n, err);
        if (rc == 0)
            rc = load_files(&ld, files, n, err);
        free(files);
    }
    if (rc == 0 && (rc = finish_set(ld.set)) < 0)
        dcpi__errf(err, rc, "%s: out of memory", db);
    free(ld.seen);
    if (rc < 0) {
        dcpi_profset_free(ld.set);
        return rc;
    }
    *out = ld.set;
    return 0;
}

/* ---- per-process selection ---- */

int dcpi_procsel_matches(const dcpi_procsel_t *sel, uint32_t pid, const char *comm)
{
    if (sel->pid >= 0 && (long)pid != sel->pid)
        return 0;
    return !sel->comm || strncmp(comm, sel->comm, DCPI_PROCPROF_COMMLEN - 1) == 0;
}

/* A profile with p's header and the samples of pp's selected processes (NULL when none). */
static int select_profile(const dcpi_profile_t *p, const dcpi_procprof_t *pp,
                          const dcpi_procsel_t *sel, dcpi_profile_t **out)
{
    *out = NULL;
    dcpi_profile_t *q = NULL;
    int rc = dcpi_profile_new(&q);
    for (size_t i = 0; rc == 0 && i < dcpi_profile_nlines(p); i++) {
        const char *key, *value;
        dcpi_profile_line(p, i, &key, &value);
        rc = dcpi_profile_set(q, key, value);
    }
    for (size_t i = 0; rc == 0 && pp && i < pp->n; i++) {
        const dcpi_procprof_entry_t *e = &pp->e[i];
        if (dcpi_procsel_matches(sel, e->pid, e->comm)) {
            rc = dcpi_profile_add(q, e->offset,
                                  e->count > UINT32_MAX ? UINT32_MAX : (uint32_t)e->count);
            rc = rc == DCPI_ERANGE ? 0 : rc;
        }
    }
    if (rc < 0 || dcpi_profile_total(q) == 0) {
        dcpi_profile_free(q);
        return rc;
    }
    *out = q;
    return 0;
}

int dcpi_profset_by_process(dcpi_profset_t *set, const dcpi_procsel_t *sel, size_t *missing)
{
    size_t keep = 0;
    *missing = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        dcpi_profset_image_t *img = &set->images[i];
        int any = 0;
        *missing += img->procs_missing;
        for (size_t e = 0; e < set->nevents; e++) {
            if (!img->prof[e])
                continue;
            dcpi_profile_t *q;
            int rc = select_profile(img->prof[e], img->procs ? img->procs[e] : NULL, sel, &q);
            if (rc < 0)
                return rc;
            dcpi_profile_free(img->prof[e]);
            img->prof[e] = q;
            any |= q != NULL;
        }
        if (any)
            set->images[keep++] = *img;
        else
            image_clear(img, set->nevents);
    }
    set->nimages = keep;
    compute_totals(set);
    return 0;
}

/* ---- queries ---- */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

int dcpi_profset_image_matches(const dcpi_profset_image_t *img, const char *name)
{
    return !strcmp(img->path, name) || !strcmp(img->name, name) ||
           !strcmp(base_name(img->path), name);
}

static int matches_any(const dcpi_profset_image_t *img, char *const *names, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (dcpi_profset_image_matches(img, names[k]))
            return 1;
    return 0;
}

size_t dcpi_profset_filter(dcpi_profset_t *set, char *const *names, size_t n)
{
    if (n == 0)
        return set->nimages;
    size_t kept = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        if (matches_any(&set->images[i], names, n))
            set->images[kept++] = set->images[i];
        else
            image_clear(&set->images[i], set->nevents);
    }
    set->nimages = kept;
    compute_totals(set);
    return kept;
}

int dcpi_profset_event_index(const dcpi_profset_t *set, const char *name)
{
    for (size_t e = 0; e < set->nevents; e++)
        if (!strcmp(set->events[e].name, name))
            return (int)e;
    return -1;
}

int dcpi_profset_pick_event(const dcpi_profset_t *set, const char *name, const char *tool,
                            const char *epoch)
{
    if (name) {
        int e = dcpi_profset_event_index(set, name);
        if (e < 0) {
            char have[256] = "";
            for (size_t k = 0, n = 0; k < set->nevents && n + 1 < sizeof have; k++)
                n += (size_t)snprintf(have + n, sizeof have - n, "%s%s", k ? ", " : "",
                                      set->events[k].name);
            fprintf(stderr, "%s: no samples of event '%s' in epoch %s (%s%s)\n", tool, name, epoch,
                    set->nevents ? "events there: " : "no samples at all", have);
        }
        return e;
    }
    int best = 0;
    for (size_t e = 1; e < set->nevents; e++)
        if (set->events[e].total > set->events[best].total)
            best = (int)e;
    return best;
}

uint64_t dcpi_profset_image_total(const dcpi_profset_t *set, const dcpi_profset_image_t *img)
{
    uint64_t t = 0;
    for (size_t e = 0; e < set->nevents; e++)
        if (img->prof[e])
            t += dcpi_profile_total(img->prof[e]);
    return t;
}

void dcpi_profset_image_db(const dcpi_profset_image_t *img, char *out, size_t len)
{
    snprintf(out, len, "%s", img->dir); /* DB/EPOCH/PLATFORM/IMAGEDIR */
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(out, '/');
        if (slash)
            *slash = '\0';
        else
            snprintf(out, len, "%s", up == 2 ? "." : "..");
    }
}

/* A kept snapshot (kallsyms, jitsyms, the symbol cache) that exists but cannot be parsed. */
static int is_damage(int rc)
{
    return rc == DCPI_EFORMAT || rc == DCPI_ETRUNC || rc == DCPI_ERANGE || rc == DCPI_EVERSION;
}

/* A kallsyms-format file dcpid saved in the image's directory: the kernel's "kallsyms.gz" (a
 * database written before the symbol cache was compressed has "kallsyms"), a JIT's "jitsyms"
 * (its perf map, offsets as addresses). Plain and gzip files are read alike. */
static int open_saved_kallsyms(const dcpi_profset_image_t *img, const char *file,
                               dcpi_symtab_t **st, char *why, int *damaged)
{
    char path[4096], gz[4100];
    snprintf(path, sizeof(path), "%s/%s", img->dir, file);
    snprintf(gz, sizeof(gz), "%s.gz", path);
    int rc = DCPI_ENOENT;
    if (access(gz, F_OK) == 0)
        rc = dcpi_symtab_open_kallsyms(gz, st, why);
    else if (access(path, F_OK) == 0)
        rc = dcpi_symtab_open_kallsyms(path, st, why);
    if (rc < 0 && why && !*why)
        dcpi__errf(why, rc, "%s: %s", strcmp(file, "kallsyms") == 0 ? gz : path, dcpi_strerror(rc));
    *damaged = is_damage(rc);
    return rc;
}

/* A JIT's perf map as dcpid saved it: "jitmap" (perf map format, offsets as addresses, sizes
 * kept), or "jitsyms" (kallsyms format) in a database written before. */
static int open_jit_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why,
                            int *damaged)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/jitmap", img->dir);
    if (access(path, F_OK) != 0)
        return open_saved_kallsyms(img, "jitsyms", st, why, damaged);
    int rc = dcpi_symtab_open_perfmap(path, st, why);
    *damaged = is_damage(rc);
    return rc;
}

/* The probe's id is usable when it succeeded, or failed after filling the info. */
static int probe_has_id(int rc)
{
    return rc == 0 || rc == DCPI_EFULL || rc == DCPI_EFORMAT;
}

/* The image's symbols as dcpid saved them by build-id (DB/.symcache/syms-ID.gz, or syms-ID in
 * a database written before the cache was compressed; kallsyms format, ELF addresses), for a
 * file that changed or vanished since it was profiled: 0 or DCPI_ENOENT. */
static int open_cached_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why)
{
    char path[4400], db[4096];
    dcpi_profset_image_db(img, db, sizeof(db));
    snprintf(path, sizeof(path), "%s/.symcache/syms-%s.gz", db, img->id);
    if (access(path, R_OK) != 0)
        path[strlen(path) - 3] = '\0';
    return access(path, R_OK) == 0 ? dcpi_symtab_open_kallsyms(path, st, why) : DCPI_ENOENT;
}

/* Whether st names some code only by its .eh_frame range ("BASENAME+0xADDR", dcpi_symtab_open
 * on a stripped file): a debug file would name it. */
static int names_stripped_code(const dcpi_symtab_t *st, const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    size_t n = strlen(base);
    for (size_t i = 0; i < dcpi_symtab_count(st); i++) {
        const char *name = dcpi_symtab_get(st, i)->name;
        if (strncmp(name, base, n) == 0 && strncmp(name + n, "+0x", 3) == 0)
            return 1;
    }
    return 0;
}

/* The symbols of the build profiled, its file changed or gone: the cache dcpid kept, unless it
 * names stripped code only by .eh_frame ranges, or is missing, and a debug file of the
 * profile's build-id is found (/usr/lib/debug, or debuginfod with DEBUGINFOD_URLS set). An id of
 * 16 digits with no cache is a hash of path, size and mtime, no build-id: not asked for. */
static int open_old_build(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why,
                          int *damaged)
{
    dcpi_symtab_t *cached = NULL;
    char cwhy[DCPI_ERRLEN] = "";
    int crc = open_cached_symbols(img, &cached, cwhy);
    if (crc == 0 && !names_stripped_code(cached, img->path)) {
        *st = cached;
        return 0;
    }
    dcpi_symtab_t *dbg = NULL;
    if ((cached || strlen(img->id) > 16) &&
        dcpi_symtab_open_buildid(img->id, img->path, &dbg, NULL) == 0) {
        dcpi_symtab_free(cached);
        *st = dbg;
        return 0;
    }
    *st = cached;
    if (cached)
        return 0;
    if (crc != DCPI_ENOENT && why) /* a damaged cache: its name and what is wrong with it */
        snprintf(why, DCPI_ERRLEN, "%s", cwhy);
    *damaged = is_damage(crc);
    return crc != DCPI_ENOENT ? crc : DCPI_ENOENT;
}

static int open_file_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why,
                             int *damaged)
{
    dcpi_image_info_t info;
    memset(&info, 0, sizeof(info));
    int rc = dcpi_image_probe(img->path, &info, why);
    if (!probe_has_id(rc)) {
        char owhy[DCPI_ERRLEN] = "";
        int orc = open_old_build(img, st, owhy, damaged);
        if (orc == 0)
            return 0;       /* deleted or unreadable since: the names dcpid kept */
        if (owhy[0] && why) /* the kept names are damaged: that is what to say */
            snprintf(why, DCPI_ERRLEN, "%s", owhy);
        else if (why && !*why)
            dcpi__errf(why, rc, "%s: %s", img->path, dcpi_strerror(rc));
        return owhy[0] ? orc : rc;
    }
    if (strcmp(info.id, img->id) != 0) {
        char owhy[DCPI_ERRLEN] = "";
        int orc = open_old_build(img, st, owhy, damaged);
        if (orc == 0)
            return 0; /* upgraded or rebuilt since: the names of the build profiled */
        if (owhy[0])
            return dcpi__errf(why, orc, "%s", owhy);
        return dcpi__errf(why, DCPI_EFORMAT, "%s changed since it was profiled (id %s, profile %s)",
                          img->path, info.id, img->id);
    }
    if (why)
        why[0] = '\0';
    rc = dcpi_symtab_open(img->path, st, why);
    if (rc < 0 && why && !*why)
        dcpi__errf(why, rc, "%s: %s", img->path, dcpi_strerror(rc));
    return rc;
}

/* [vdso]: the copy dcpid saved next to its profiles (its offsets are its ELF addresses). */
static int open_vdso_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/vdso.so", img->dir);
    return dcpi_symtab_open(path, st, why);
}

int dcpi_profset_open_symbols(const dcpi_profset_image_t *img, dcpi_symtab_t **st, char *why,
                              int *damaged)
{
    int ignored;
    if (!damaged)
        damaged = &ignored;
    *st = NULL;
    *damaged = 0;
    if (why)
        why[0] = '\0';
    int rc = DCPI_ENOENT;
    if (img->nsyms)
        rc = dcpi_symtab_from_list(img->syms, img->nsyms, st);
    else if (img->kind == DCPI_PSET_KERNEL)
        rc = open_saved_kallsyms(img, "kallsyms", st, why, damaged);
    else if (img->kind == DCPI_PSET_FILE)
        rc = open_file_symbols(img, st, why, damaged);
    else if (img->kind == DCPI_PSET_PSEUDO && strcmp(img->path, "[vdso]") == 0)
        rc = open_vdso_symbols(img, st, why);
    else if (img->kind == DCPI_PSET_PSEUDO && strncmp(img->path, "[jit pid ", 9) == 0)
        rc = open_jit_symbols(img, st, why, damaged);
    if (rc < 0) {
        dcpi_symtab_free(*st);
        *st = NULL;
    }
    return rc;
}

dcpi_symtab_t *dcpi_profset_symbols_or_warn(const dcpi_profset_image_t *img, const char *tool)
{
    dcpi_symtab_t *st = NULL;
    char why[DCPI_ERRLEN] = "";
    int damaged = 0;
    int rc = dcpi_profset_open_symbols(img, &st, why, &damaged);
    if (rc < 0 && why[0])
        fprintf(stderr, "%s: %s; its samples are shown as " DCPI_UNKNOWN_ROUTINE "\n", tool, why);
    if (rc < 0 && why[0] && damaged)
        dcpi__damage_count_one(); /* the exit status says that names were lost */
    return st;
}

int dcpi_profset_select(dcpi_profset_t *set, char *const *names, size_t n, const char *tool,
                        const char *epoch)
{
    if (n == 0)
        return 0;
    int matched = 0;
    for (size_t k = 0; k < n; k++) {
        int found = 0;
        for (size_t i = 0; i < set->nimages && !found; i++)
            found = dcpi_profset_image_matches(&set->images[i], names[k]);
        if (!found)
            fprintf(stderr, "%s: no profile of image '%s' in epoch %s\n", tool, names[k], epoch);
        matched += found;
    }
    dcpi_profset_filter(set, names, n);
    return matched ? 0 : DCPI_ENOENT;
}

void dcpi_profset_warn_saturated(const dcpi_profset_t *set, const char *tool)
{
    for (size_t e = 0; e < set->nevents; e++)
        if (set->events[e].saturated)
            fprintf(stderr, "%s: %s: %" PRIu64 " merges saturated a count at 4294967295 samples\n",
                    tool, set->events[e].name, set->events[e].saturated);
}

/* ---- sets built from elsewhere (the fleet) ---- */

int dcpi_profset_new(dcpi_profset_t **out)
{
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : DCPI_ENOMEM;
}

int dcpi_profset_add_event(dcpi_profset_t *set, const char *name, uint64_t period, uint64_t lost)
{
    size_t cap = set->nevents;
    if (dcpi__grow((void **)&set->events, &cap, set->nevents + 1, sizeof(*set->events)) < 0)
        return DCPI_ENOMEM;
    dcpi_profset_event_t *e = &set->events[set->nevents];
    *e = (dcpi_profset_event_t){.name = strdup(name), .period = period, .lost = lost, .nfiles = 1};
    if (!e->name)
        return DCPI_ENOMEM;
    return (int)set->nevents++;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

int dcpi_profset_add_image(dcpi_profset_t *set, const dcpi_profset_image_t *desc)
{
    size_t cap = set->nimages;
    if (dcpi__grow((void **)&set->images, &cap, set->nimages + 1, sizeof(*set->images)) < 0)
        return DCPI_ENOMEM;
    dcpi_profset_image_t *img = &set->images[set->nimages];
    *img = (dcpi_profset_image_t){
        .kind = desc->kind,
        .tstart = desc->tstart,
        .tsize = desc->tsize,
        .nplatforms = 1,
        .id = dup_or_empty(desc->id),
        .path = dup_or_empty(desc->path),
        .name = dup_or_empty(desc->name),
        .dir = dup_or_empty(desc->dir),
        .platform = dup_or_empty(desc->platform),
        .prof = calloc(set->nevents ? set->nevents : 1, sizeof(*img->prof)),
        .procs = calloc(set->nevents ? set->nevents : 1, sizeof(*img->procs))};
    set->nimages++;
    if (!img->id || !img->path || !img->name || !img->dir || !img->platform || !img->prof ||
        !img->procs)
        return DCPI_ENOMEM;
    return (int)set->nimages - 1;
}

int dcpi_profset_finish(dcpi_profset_t *set)
{
    return finish_set(set);
}
