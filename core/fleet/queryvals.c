/*
 * queryvals.c - the fleet's value hotlists of one image (query.h, dcpi_fleet_vprofs): the stored
 * summaries of every selected host and epoch merged by ClickHouse's GROUP BY, one value profile
 * per plugin with the hosts' missing-value marks; and its call chains of one event as a stack
 * profile (dcpi_fleet_stacks).
 *
 * The merge is dcpi_vsummary_merge's (core/store/vsummary.h) over any number of summaries: per
 * instruction, E is the sum of the summaries' err; a key's candidate count is the sum of its
 * listed counts plus the err of every summary that does not list it (E minus the err of those
 * that do: each entry row carries its summary's err); the hotsize largest candidates (count
 * desc, key asc) are kept and err = max(E, the largest dropped candidate). For two summaries
 * this is the pairwise merge exactly, so the fleet's hotlists of two hosts are the local merge
 * of their profiles. Every count is weighted by 1/duty (per stored row, rounded), as samples.
 *
 * The cluster counters K, N, S, D (summary rows' clusters, chits, csq, cagree; 0 where a summary
 * had no cluster information) add as dcpi_vsummary_merge adds them: when any summary of the
 * instruction has some, each summary's vtot - chits unaccounted samples (all of vtot without
 * information) count as clusters of one sample, adding 1 each to K, N, S and D; so the sums are
 * K + U, N + U, S + U, D + U with U the sum of max(vtot, chits) - chits, whatever the order of
 * the pairwise merges (each merge keeps N >= vtot). Else all four stay 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/mem.h"
#include "core/fleet/agg.h"
#include "core/fleet/query.h"
#include "core/fleet/schema.h"
#include "dcpi/errno.h"

#define W(x) "toUInt64(round(" x " / duty))"

typedef struct vq {
    dcpi_fleet_t *f;
    const char *suffix;
    const dcpi_fleet_filter_t *flt;
    dcpi_fleet_agg_t agg; /* the commits that count, read from the aggregate's builds (agg.h) */
    char **names;
    dcpi_vprof_t **vps;
    size_t n, capnames, capvps;
    /* the candidates of the instruction being merged */
    dcpi_ventry_t *cand;
    size_t ncand, capcand;
    char *err;
} vq_t;

/* Run the query in sql on table with the selection's WHERE and the rest after it. */
static int run_on(vq_t *q, const char *table, const char *select, const char *rest,
                  dcpi_fbuf_t *out)
{
    dcpi_fbuf_t sql = {0};
    dcpi_fbuf_printf(&sql, "%s FROM %s.%s%s", select, dcpi_fleet_dbname(q->f), table, q->suffix);
    dcpi_fleet_agg_where(q->f, &q->agg, q->flt, 0, &sql);
    dcpi_fbuf_str(&sql, rest);
    int rc = dcpi_fbuf_ok(&sql);
    if (rc == 0)
        rc = dcpi_fleet_agg_query(q->f, &q->agg, sql.p, out, q->err);
    dcpi_fbuf_free(&sql);
    return rc;
}

static int run(vq_t *q, const char *select, const char *rest, dcpi_fbuf_t *out)
{
    return run_on(q, "hotlists", select, rest, out);
}

static long find(const vq_t *q, const char *plugin)
{
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->names[i], plugin))
            return (long)i;
    return -1;
}

/* The profile of plugin, made from its first summary row (hotsize, tstart, tsize, contexts,
 * path) when new. */
static int profile_of(vq_t *q, char **fld, dcpi_vprof_t **out)
{
    long i = find(q, fld[0]);
    if (i >= 0) {
        *out = q->vps[i];
        return 0;
    }
    uint64_t hot = 0, tstart = 0, tsize = 0, ctx = 0;
    if (dcpi_fleet_u64(fld[2], &hot) < 0 || dcpi_fleet_u64(fld[3], &tstart) < 0 ||
        dcpi_fleet_u64(fld[4], &tsize) < 0 || dcpi_fleet_u64(fld[5], &ctx) < 0 || hot == 0 ||
        hot > DCPI_VSUMMARY_MAX_CAP)
        return dcpi__errf(q->err, DCPI_EFORMAT, "%s: a bad hotlist summary row of %s",
                          dcpi_fleet_url(q->f), fld[0]);
    if (dcpi__grow((void **)&q->names, &q->capnames, q->n + 1, sizeof *q->names) < 0 ||
        dcpi__grow((void **)&q->vps, &q->capvps, q->n + 1, sizeof *q->vps) < 0)
        return DCPI_ENOMEM;
    dcpi_vprof_t *vp = NULL;
    int rc = dcpi_vprof_new((unsigned)hot, &vp);
    if (rc < 0)
        return rc;
    char ts[32], sz[32];
    snprintf(ts, sizeof ts, "%" PRIx64, tstart);
    snprintf(sz, sizeof sz, "%" PRIu64, tsize);
    (void)dcpi_vprof_set(vp, "path", fld[6]); /* for messages only: a path the header
                                                   grammar refuses is left out */
    if (dcpi_vprof_set(vp, "vprof", fld[0]) < 0 ||
        dcpi_vprof_set(vp, "image", q->flt->build_id) < 0 || dcpi_vprof_set(vp, "tstart", ts) < 0 ||
        dcpi_vprof_set(vp, "tsize", sz) < 0 ||
        dcpi_vprof_set(vp, "contexts", ctx ? "1" : "0") < 0 || !(q->names[q->n] = strdup(fld[0]))) {
        dcpi_vprof_free(vp);
        return DCPI_ENOMEM;
    }
    q->vps[q->n++] = vp;
    *out = vp;
    return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Summary rows: plugin, off, hotsize, tstart, tsize, contexts, path, E, vtot, seen; then whether
 * a summary has cluster information, the sums of clusters, chits, csq, cagree and of
 * max(vtot, chits). */
#define SUMMARY_FIELDS 16
static int on_summary(vq_t *q, char **fld)
{
    dcpi_vprof_t *vp = NULL;
    int rc = profile_of(q, fld, &vp);
    uint64_t off = 0, e = 0, vtot = 0, seen = 0, has = 0, c[4] = {0}, nmax = 0;
    if (rc < 0)
        return rc;
    int bad = dcpi_fleet_u64(fld[1], &off) < 0 || off > UINT32_MAX ||
              dcpi_fleet_u64(fld[7], &e) < 0 || dcpi_fleet_u64(fld[8], &vtot) < 0 ||
              dcpi_fleet_u64(fld[9], &seen) < 0 || dcpi_fleet_u64(fld[10], &has) < 0 ||
              dcpi_fleet_u64(fld[15], &nmax) < 0;
    for (int i = 0; i < 4; i++)
        bad = bad || dcpi_fleet_u64(fld[11 + i], &c[i]) < 0;
    if (bad)
        return dcpi__errf(q->err, DCPI_EFORMAT, "%s: a bad hotlist summary row of %s",
                          dcpi_fleet_url(q->f), fld[0]);
    dcpi_vsummary_t *s = dcpi_vprof_at(vp, (uint32_t)off, 1);
    if (!s)
        return DCPI_ENOMEM;
    s->err = e; /* E until the entries are merged */
    s->vtot = vtot;
    s->seen = seen;
    if (has) { /* the unaccounted samples u, as clusters of one */
        uint64_t u = nmax > c[1] ? nmax - c[1] : 0;
        s->clusters = sat_add(c[0], u);
        s->chits = sat_add(c[1], u);
        s->csq = sat_add(c[2], u);
        s->cagree = sat_add(c[3], u);
    }
    return 0;
}

static int rank_cmp(const void *pa, const void *pb)
{
    const dcpi_ventry_t *a = pa, *b = pb;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return dcpi_vsummary_key_cmp(a, b);
}

/* The candidates gathered for s: the cap largest kept, err = max(E, largest dropped). */
static void settle(vq_t *q, dcpi_vsummary_t *s)
{
    if (!s)
        return;
    qsort(q->cand, q->ncand, sizeof *q->cand, rank_cmp);
    size_t keep = q->ncand < s->cap ? q->ncand : s->cap;
    memcpy(s->e, q->cand, keep * sizeof *s->e);
    s->n = (uint32_t)keep;
    if (keep < q->ncand && q->cand[keep].count > s->err)
        s->err = q->cand[keep].count;
    q->ncand = 0;
}

/* Entry rows (ordered by plugin, off): plugin, off, value, ctx0, ctx1, sum count, sum err. */
static int on_entry(vq_t *q, char **fld, dcpi_vsummary_t **cur, char *curkey, size_t keylen)
{
    char key[600];
    snprintf(key, sizeof key, "%s\t%s", fld[0], fld[1]);
    if (strcmp(key, curkey) != 0) {
        settle(q, *cur);
        snprintf(curkey, keylen, "%s", key);
        long i = find(q, fld[0]);
        uint64_t off = 0;
        *cur = i >= 0 && dcpi_fleet_u64(fld[1], &off) == 0 && off <= UINT32_MAX
                   ? dcpi_vprof_at(q->vps[i], (uint32_t)off, 0)
                   : NULL;
    }
    if (!*cur) /* an entry without its summary row: a damaged push, left out */
        return 0;
    dcpi_ventry_t e;
    uint64_t cnt = 0, err = 0;
    if (dcpi_fleet_u64(fld[2], &e.value) < 0 || dcpi_fleet_u64(fld[3], &e.context0) < 0 ||
        dcpi_fleet_u64(fld[4], &e.context1) < 0 || dcpi_fleet_u64(fld[5], &cnt) < 0 ||
        dcpi_fleet_u64(fld[6], &err) < 0)
        return dcpi__errf(q->err, DCPI_EFORMAT, "%s: a bad hotlist entry row of %s",
                          dcpi_fleet_url(q->f), fld[0]);
    uint64_t E = (*cur)->err;
    e.count = cnt + (E > err ? E - err : 0); /* + the err of the summaries not listing it */
    if (dcpi__grow((void **)&q->cand, &q->capcand, q->ncand + 1, sizeof *q->cand) < 0)
        return DCPI_ENOMEM;
    q->cand[q->ncand++] = e;
    return 0;
}

static int load_summaries(vq_t *q)
{
    dcpi_fbuf_t out = {0}, sel = {0};
    dcpi_fbuf_printf(&sel,
                     "SELECT plugin, off, max(hotsize), any(tstart), any(tsize), max(contexts), "
                     "any(path), sum(%s), sum(%s), sum(%s), max(chits) > 0, sum(%s), sum(%s), "
                     "sum(%s), sum(%s), sum(greatest(%s, %s))",
                     W("err"), W("vtot"), W("seen"), W("clusters"), W("chits"), W("csq"),
                     W("cagree"), W("vtot"), W("chits"));
    int rc = dcpi_fbuf_ok(&sel);
    if (rc == 0)
        rc = run(q, sel.p, " AND entry = 0 GROUP BY plugin, off ORDER BY plugin, off", &out);
    dcpi_fbuf_free(&sel);
    char *cur = out.p, *fld[SUMMARY_FIELDS];
    int n;
    while (rc == 0 && (n = dcpi_fleet_tsv_line(&cur, fld, SUMMARY_FIELDS)) != 0)
        rc = n == SUMMARY_FIELDS
                 ? on_summary(q, fld)
                 : dcpi__errf(q->err, DCPI_EFORMAT, "%s: a result row of %d fields, not %d",
                              dcpi_fleet_url(q->f), n, SUMMARY_FIELDS);
    dcpi_fbuf_free(&out);
    return rc;
}

static int load_entries(vq_t *q)
{
    dcpi_fbuf_t out = {0};
    int rc =
        run(q, "SELECT plugin, off, value, ctx0, ctx1, sum(" W("cnt") "), sum(" W("err") ")",
            " AND entry = 1 GROUP BY plugin, off, value, ctx0, ctx1 ORDER BY plugin, off", &out);
    char *cur = out.p, *fld[7], key[600] = "";
    dcpi_vsummary_t *s = NULL;
    int n;
    while (rc == 0 && (n = dcpi_fleet_tsv_line(&cur, fld, 7)) != 0)
        rc = n == 7 ? on_entry(q, fld, &s, key, sizeof key)
                    : dcpi__errf(q->err, DCPI_EFORMAT, "%s: a result row of %d fields, not 7",
                                 dcpi_fleet_url(q->f), n);
    if (rc == 0)
        settle(q, s);
    dcpi_fbuf_free(&out);
    return rc;
}

/* Each profile's backend: the one its hosts name, "mixed" when they name several. */
static int load_backends(vq_t *q)
{
    dcpi_fbuf_t out = {0};
    int rc = run(q, "SELECT plugin, backend",
                 " AND entry = 0 AND backend != '' GROUP BY plugin, backend ORDER BY plugin", &out);
    char *cur = out.p, *fld[2];
    while (rc == 0 && dcpi_fleet_tsv_line(&cur, fld, 2) == 2) {
        long i = find(q, fld[0]);
        if (i < 0)
            continue;
        const char *had = dcpi_vprof_get(q->vps[i], "backend");
        if (dcpi_vprof_set(q->vps[i], "backend", had && strcmp(had, fld[1]) ? "mixed" : fld[1]) < 0)
            rc = DCPI_ENOMEM;
    }
    dcpi_fbuf_free(&out);
    return rc;
}

/* The missing-value marks (vmiss rows: plugin, off, reason, the number of marks giving that
 * reason; then a new plugin's tstart, tsize and path) as each profile's dcpi_vprof_marks, one
 * "0xOFF REASON" line per mark, as a local listing reads its platforms' and epochs' .vmiss files
 * (core/listing/listvals.c counts them). A plugin with marks but no hotlist gets a profile
 * without summaries (marks only). */
static int load_vmiss(vq_t *q)
{
    dcpi_fbuf_t out = {0}, line = {0};
    int rc = run_on(q, "vmiss",
                    "SELECT plugin, off, reason, count(), any(tstart), any(tsize), any(path)",
                    " GROUP BY plugin, off, reason ORDER BY plugin, off, reason", &out);
    char *cur = out.p, *fld[7];
    int n;
    while (rc == 0 && (n = dcpi_fleet_tsv_line(&cur, fld, 7)) != 0) {
        uint64_t off = 0, cnt = 0;
        dcpi_vprof_t *vp = NULL;
        if (n != 7 || dcpi_fleet_u64(fld[1], &off) < 0 || off > UINT32_MAX ||
            dcpi_fleet_u64(fld[3], &cnt) < 0 || strchr(fld[2], '\n'))
            rc = dcpi__errf(q->err, DCPI_EFORMAT, "%s: a bad missing-value mark row",
                            dcpi_fleet_url(q->f));
        else { /* a summary row's fields for profile_of: plugin, -, hotsize, tstart, tsize,
                  contexts, path */
            char hot[16], ctx[] = "0", none[] = "";
            snprintf(hot, sizeof hot, "%u", DCPI_VSUMMARY_DEFAULT_CAP);
            char *row[7] = {fld[0], none, hot, fld[4], fld[5], ctx, fld[6]};
            rc = profile_of(q, row, &vp);
        }
        dcpi_fbuf_reset(&line);
        for (uint64_t i = 0; rc == 0 && i < cnt; i++)
            dcpi_fbuf_printf(&line, "0x%" PRIx64 " %s\n", off, fld[2]);
        if (rc == 0 && (rc = dcpi_fbuf_ok(&line)) == 0)
            rc = dcpi_vprof_add_marks(vp, line.p, line.n);
    }
    dcpi_fbuf_free(&line);
    dcpi_fbuf_free(&out);
    return rc;
}

int dcpi_fleet_vprofs(const char *url, const dcpi_fleet_filter_t *flt, const char *build_id,
                      char ***names, dcpi_vprof_t ***vps, size_t *n, char *err)
{
    *names = NULL;
    *vps = NULL;
    *n = 0;
    dcpi_fleet_filter_t one = *flt;
    one.build_id = build_id;
    one.procsel = NULL; /* hotlists are per image, not per process */
    dcpi_fleet_info_t info = {.suffix = ""};
    vq_t q = {.flt = &one, .err = err};
    int rc = dcpi_fleet_open(url, &q.f, err);
    if (rc == 0)
        rc = dcpi_fleet_check(q.f, &info, err);
    q.suffix = info.suffix;
    if (rc == 0)
        rc = dcpi_fleet_agg_plan(q.f, &info, &one, &q.agg, err);
    if (rc == 0)
        rc = load_summaries(&q);
    if (rc == 0)
        rc = load_entries(&q);
    if (rc == 0)
        rc = load_backends(&q);
    if (rc == 0)
        rc = load_vmiss(&q);
    if (rc < 0 && err && !*err)
        dcpi__errf(err, rc, "%s: %s", url, dcpi_strerror(rc));
    dcpi_fleet_agg_free(&q.agg);
    dcpi_fleet_close(q.f);
    free(q.cand);
    if (rc < 0) {
        for (size_t i = 0; i < q.n; i++) {
            free(q.names[i]);
            dcpi_vprof_free(q.vps[i]);
        }
        free(q.names);
        free(q.vps);
        return rc;
    }
    *names = q.names;
    *vps = q.vps;
    *n = q.n;
    return 0;
}

/* ---- call chains ------------------------------------------------------------------------ */

/* An "=ID:TSTART:INDEX:TSIZE:PATH" row: a chain image's path, text size and index in the
 * pushed profile. */
typedef struct imgrow {
    char *id, *path;
    uint64_t tstart, index, tsize;
} imgrow_t;

typedef struct chains {
    imgrow_t *img;
    size_t nimg, capimg;
    dcpi_frame_t *fr; /* every chain's frames */
    size_t nfr, capfr;
    struct chain {
        size_t first;
        unsigned n;
        uint64_t count;
    } * ch;
    size_t nch, capch;
} chains_t;

/* The path and text size of image (id, tstart): the set's, else its image row's. */
static const char *path_of(const chains_t *cs, const dcpi_profset_t *set, const char *id,
                           uint64_t tstart, uint64_t *tsize)
{
    *tsize = 0;
    for (size_t k = 0; set && k < set->nimages; k++)
        if (set->images[k].tstart == tstart && !strcmp(set->images[k].id, id)) {
            *tsize = set->images[k].tsize;
            return set->images[k].path;
        }
    for (size_t i = 0; i < cs->nimg; i++)
        if (cs->img[i].tstart == tstart && !strcmp(cs->img[i].id, id)) {
            *tsize = cs->img[i].tsize;
            return cs->img[i].path;
        }
    return NULL;
}

static int parse_img(chains_t *cs, char *text)
{
    char *c1 = strchr(text, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL,
         *c3 = c2 ? strchr(c2 + 1, ':') : NULL, *c4 = c3 ? strchr(c3 + 1, ':') : NULL;
    if (!c4)
        return DCPI_EFORMAT;
    *c1 = *c2 = *c3 = *c4 = 0;
    if (dcpi__grow((void **)&cs->img, &cs->capimg, cs->nimg + 1, sizeof *cs->img) < 0)
        return DCPI_ENOMEM;
    cs->img[cs->nimg++] = (imgrow_t){.id = text,
                                     .tstart = strtoull(c1 + 1, NULL, 16),
                                     .index = strtoull(c2 + 1, NULL, 16),
                                     .tsize = strtoull(c3 + 1, NULL, 16),
                                     .path = c4 + 1};
    return 0;
}

static int cmp_img(const void *pa, const void *pb)
{
    const imgrow_t *a = pa, *b = pb;
    if (a->index != b->index)
        return a->index < b->index ? -1 : 1;
    int c = strcmp(a->id, b->id);
    return c ? c : a->tstart < b->tstart ? -1 : a->tstart > b->tstart;
}

/* One chain's text ("ID:TSTART:OFF;...", leaf first; "-:0:OFF" outside every image): its
 * frames (images registered in sp) into cs. */
static int parse_chain(chains_t *cs, dcpi_stackprof_t *sp, const dcpi_profset_t *set, char *text,
                       uint64_t count)
{
    size_t first = cs->nfr;
    unsigned n = 0;
    for (char *save = NULL, *fr = strtok_r(text, ";", &save); fr && n < DCPI_STACK_MAXFRAMES;
         fr = strtok_r(NULL, ";", &save), n++) {
        char *c1 = strchr(fr, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            return DCPI_EFORMAT;
        *c1 = *c2 = 0;
        uint64_t tstart = strtoull(c1 + 1, NULL, 16);
        dcpi_frame_t f = {.image = DCPI_STACK_NOIMAGE,
                          .offset = (uint32_t)strtoul(c2 + 1, NULL, 16)};
        if (strcmp(fr, "-") != 0) {
            char dir[160];
            snprintf(dir, sizeof dir, "fleet_%.128s", fr);
            uint64_t tsize;
            const char *path = path_of(cs, set, fr, tstart, &tsize);
            int img = dcpi_stackprof_image(sp, fr, dir, path, tstart, tsize);
            if (img < 0)
                return img;
            f.image = (uint32_t)img;
        }
        if (dcpi__grow((void **)&cs->fr, &cs->capfr, cs->nfr + 1, sizeof *cs->fr) < 0)
            return DCPI_ENOMEM;
        cs->fr[cs->nfr++] = f;
    }
    if (!n || !count)
        return 0;
    if (dcpi__grow((void **)&cs->ch, &cs->capch, cs->nch + 1, sizeof *cs->ch) < 0)
        return DCPI_ENOMEM;
    cs->ch[cs->nch++] = (struct chain){.first = first, .n = n, .count = count};
    return 0;
}

static const chains_t *g_cs; /* qsort has no context argument in C11 */

/* The order of a stack profile file's chains (stackprof-file.c): frame by frame, image index
 * then offset; a prefix first. */
static int cmp_chain(const void *pa, const void *pb)
{
    const struct chain *x = pa, *y = pb;
    const dcpi_frame_t *a = &g_cs->fr[x->first], *b = &g_cs->fr[y->first];
    for (unsigned i = 0; i < x->n && i < y->n; i++) {
        if (a[i].image != b[i].image)
            return a[i].image < b[i].image ? -1 : 1;
        if (a[i].offset != b[i].offset)
            return a[i].offset < b[i].offset ? -1 : 1;
    }
    return x->n == y->n ? 0 : x->n < y->n ? -1 : 1;
}

/* The result rows as a stack profile ordered as a pushed file is: the images by their index
 * there, the chains sorted as a file's (so one host's epoch reads as its file does). */
static int build_stacks(char *res, size_t lines, const dcpi_profset_t *set, dcpi_stackprof_t **out)
{
    chains_t cs = {0};
    char **text = calloc(lines + 1, sizeof *text), **cnt = calloc(lines + 1, sizeof *cnt);
    char *cur = res, *fld[2];
    size_t nc = 0;
    int n, rc = text && cnt ? 0 : DCPI_ENOMEM;
    while (rc == 0 && nc < lines && (n = dcpi_fleet_tsv_line(&cur, fld, 2)) != 0) {
        if (n != 2)
            rc = DCPI_EFORMAT;
        else if (fld[0][0] == '=')
            rc = parse_img(&cs, fld[0] + 1);
        else {
            text[nc] = fld[0];
            cnt[nc++] = fld[1];
        }
    }
    if (rc == 0 && nc)
        rc = dcpi_stackprof_new(nc > DCPI_STACKPROF_DEFAULT_CHAINS ? (unsigned)nc : 0, out);
    if (cs.nimg > 1)
        qsort(cs.img, cs.nimg, sizeof *cs.img, cmp_img);
    for (size_t i = 0; rc == 0 && *out && i < cs.nimg; i++) {
        char dir[160];
        snprintf(dir, sizeof dir, "fleet_%.128s", cs.img[i].id);
        uint64_t tsize;
        const char *path = path_of(&cs, set, cs.img[i].id, cs.img[i].tstart, &tsize);
        int img = dcpi_stackprof_image(*out, cs.img[i].id, dir, path, cs.img[i].tstart, tsize);
        rc = img < 0 ? img : 0;
    }
    for (size_t i = 0; rc == 0 && i < nc; i++) {
        uint64_t c = 0;
        rc =
            dcpi_fleet_u64(cnt[i], &c) < 0 ? DCPI_EFORMAT : parse_chain(&cs, *out, set, text[i], c);
    }
    g_cs = &cs;
    if (rc == 0 && cs.nch > 1)
        qsort(cs.ch, cs.nch, sizeof *cs.ch, cmp_chain);
    for (size_t i = 0; rc == 0 && i < cs.nch; i++) {
        rc = dcpi_stackprof_add(*out, &cs.fr[cs.ch[i].first], cs.ch[i].n, cs.ch[i].count);
        rc = rc == DCPI_EFULL ? 0 : rc; /* counted in "lost" */
    }
    free(text);
    free(cnt);
    free(cs.img);
    free(cs.fr);
    free(cs.ch);
    return rc;
}

int dcpi_fleet_stacks(const char *url, const dcpi_fleet_filter_t *flt, const dcpi_profset_t *set,
                      const char *event, dcpi_stackprof_t **out, char *err)
{
    *out = NULL;
    dcpi_fleet_filter_t any = *flt;
    any.build_id = NULL; /* chains cross images */
    any.procsel = NULL;  /* and are not split by process */
    dcpi_fleet_info_t info = {.suffix = ""};
    dcpi_fleet_t *f = NULL;
    dcpi_fbuf_t sql = {0}, res = {0};
    dcpi_fleet_agg_t agg = {0};
    int rc = dcpi_fleet_open(url, &f, err);
    if (rc == 0)
        rc = dcpi_fleet_check(f, &info, err);
    if (rc == 0) /* the commits that count, read from the aggregate's builds where it has some */
        rc = dcpi_fleet_agg_plan(f, &info, &any, &agg, err);
    if (rc == 0) {
        dcpi_fbuf_printf(&sql, "SELECT chain, sum(" W("cnt") ") FROM %s.chains%s",
                         dcpi_fleet_dbname(f), info.suffix);
        dcpi_fleet_agg_where(f, &agg, &any, 0, &sql);
        dcpi_fbuf_str(&sql, " AND event = ");
        dcpi_fbuf_sqlstr(&sql, event);
        dcpi_fbuf_str(&sql, " GROUP BY chain");
        if ((rc = dcpi_fbuf_ok(&sql)) == 0)
            rc = dcpi_fleet_agg_query(f, &agg, sql.p, &res, err);
    }
    size_t lines = 0;
    for (size_t i = 0; rc == 0 && i < res.n; i++)
        lines += res.p[i] == '\n';
    dcpi_stackprof_t *sp = NULL;
    if (rc == 0 && lines && (rc = build_stacks(res.p, lines, set, &sp)) == DCPI_EFORMAT)
        rc = dcpi__errf(err, DCPI_EFORMAT, "%s: a bad call chain row", url);
    if (rc < 0 && err && !*err)
        dcpi__errf(err, rc, "%s: %s", url, dcpi_strerror(rc));
    dcpi_fbuf_free(&sql);
    dcpi_fbuf_free(&res);
    dcpi_fleet_agg_free(&agg);
    dcpi_fleet_close(f);
    if (rc < 0) {
        dcpi_stackprof_free(sp);
        return rc;
    }
    *out = sp;
    return 0;
}

int dcpi_fleet_source_stacks(void *arg, const dcpi_profset_t *set, const char *event,
                             dcpi_stackprof_t **sp, char *err)
{
    const dcpi_fleet_source_t *src = arg;
    return dcpi_fleet_stacks(src->url, src->flt, set, event, sp, err);
}

int dcpi_fleet_source_vprofs(void *arg, const char *id, char ***names, dcpi_vprof_t ***vps,
                             size_t *n, char *err)
{
    const dcpi_fleet_source_t *src = arg;
    int rc = dcpi_fleet_vprofs(src->url, src->flt, id, names, vps, n, err);
    size_t kept = 0;
    for (size_t i = 0; rc == 0 && i < *n; i++) { /* marks only: no value profile, as locally */
        if (dcpi_vprof_count((*vps)[i]) == 0) {
            free((*names)[i]);
            dcpi_vprof_free((*vps)[i]);
            continue;
        }
        (*names)[kept] = (*names)[i];
        (*vps)[kept++] = (*vps)[i];
    }
    if (rc == 0)
        *n = kept;
    return rc;
}
