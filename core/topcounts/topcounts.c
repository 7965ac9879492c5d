/*
 * topcounts.c - dcpitopcounts' report: every sampled instruction of a profile set as a row,
 * the top N by one event, each named (procedure, instruction text, source position) from its
 * image and printed as a table or CSV (see topcounts.h).
 */
#include "core/topcounts/topcounts.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/model/csv.h"
#include "core/listing/listing.h"
#include "core/base/json.h"
#include "core/base/mem.h"
#include "core/store/codecache.h"
#include "core/image/image.h"
#include "core/image/srclines.h"
#include "dcpi/errno.h"

#define PROC_WIDTH_MAX 40
#define INSN_WIDTH_MAX 48

/* ---- rows ---- */

/* One (image, offset, event) count before merging into rows. */
typedef struct trip {
    uint32_t image, event;
    uint64_t offset, count;
} trip_t;

static int cmp_trip(const void *a, const void *b)
{
    const trip_t *x = a, *y = b;
    if (x->image != y->image)
        return x->image < y->image ? -1 : 1;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* The period of img's profile of event e (the event's first period when the header has none). */
static uint64_t period_of(const dcpi_profset_t *set, const dcpi_profset_image_t *img, size_t e)
{
    uint64_t p = 0;
    if (dcpi_profile_get_u64(img->prof[e], "period", &p) < 0 || p == 0)
        p = set->events[e].period ? set->events[e].period : 1;
    return p;
}

static int collect_trips(const dcpi_profset_t *set, int period, trip_t **out, size_t *nout)
{
    size_t n = 0, cap = 0;
    trip_t *v = NULL;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        for (size_t e = 0; e < set->nevents; e++) {
            size_t k = 0;
            const dcpi_profile_entry_t *ent =
                img->prof[e] ? dcpi_profile_entries(img->prof[e], &k) : NULL;
            uint64_t mul = period && img->prof[e] ? period_of(set, img, e) : 1;
            if (dcpi__grow((void **)&v, &cap, n + k + 1, sizeof(*v)) < 0) {
                free(v);
                return DCPI_ENOMEM;
            }
            for (size_t j = 0; j < k; j++)
                if (ent[j].count)
                    v[n++] = (trip_t){(uint32_t)i, (uint32_t)e, ent[j].offset, ent[j].count * mul};
        }
    }
    *out = v;
    *nout = n;
    return 0;
}

static const dcpi_profset_t *g_set; /* qsort has no context argument in C11 */
static int g_sort;

static int cmp_row(const void *a, const void *b)
{
    const dcpi_top_row_t *x = a, *y = b;
    uint64_t cx = x->counts[g_sort], cy = y->counts[g_sort];
    if (cx != cy)
        return cx > cy ? -1 : 1;
    if (x->image != y->image) {
        int c = strcmp(g_set->images[x->image].name, g_set->images[y->image].name);
        return c ? c : (x->image < y->image ? -1 : 1);
    }
    return (x->offset > y->offset) - (x->offset < y->offset);
}

int dcpi_top_collect(const dcpi_profset_t *set, int sort, int period, size_t n,
                     dcpi_top_row_t **rows, size_t *nrows, uint64_t **counts)
{
    *rows = NULL;
    *counts = NULL;
    *nrows = 0;
    trip_t *t = NULL;
    size_t nt = 0, ne = set->nevents ? set->nevents : 1;
    int rc = collect_trips(set, period, &t, &nt);
    if (rc < 0)
        return rc;
    if (nt > 0) /* qsort's array may not be NULL, even empty */
        qsort(t, nt, sizeof(*t), cmp_trip);
    size_t nr = 0;
    for (size_t k = 0; k < nt; k++)
        nr += k == 0 || cmp_trip(&t[k - 1], &t[k]) != 0;
    dcpi_top_row_t *r = calloc(nr + 1, sizeof(*r));
    uint64_t *c = calloc((nr + 1) * ne, sizeof(*c));
    if (!r || !c) {
        free(r);
        free(c);
        free(t);
        return DCPI_ENOMEM;
    }
    size_t j = 0;
    for (size_t k = 0; k < nt; k++) {
        if (k > 0 && cmp_trip(&t[k - 1], &t[k]) != 0)
            j++;
        r[j] = (dcpi_top_row_t){t[k].image, t[k].offset, c + j * ne};
        c[j * ne + t[k].event] += t[k].count;
    }
    free(t);
    g_set = set;
    g_sort = sort;
    if (nr > 0) /* qsort's array may not be NULL, even empty */
        qsort(r, nr, sizeof(*r), cmp_row);
    while (nr > 0 && r[nr - 1].counts[sort] == 0)
        nr--; /* sampled by the other events only */
    *rows = r;
    *nrows = n && n < nr ? n : nr;
    *counts = c;
    return 0;
}

/* ---- naming a row from its image ---- */

/* What is known of one image, opened when a printed row first needs it. */
typedef struct imgview {
    int opened;
    dcpi_symtab_t *st;
    dcpi_srclines_t *sl;
    int code; /* 1: the code bytes can be read from codepath */
    char codepath[4096];
    dcpi_image_info_t info;
} imgview_t;

static void view_open(imgview_t *v, const dcpi_profset_image_t *img, const char *tool)
{
    v->opened = 1;
    v->st = dcpi_profset_symbols_or_warn(img, tool);
    if (img->kind == DCPI_PSET_FILE) {
        snprintf(v->codepath, sizeof v->codepath, "%s", img->path);
        int rc = dcpi_image_probe(v->codepath, &v->info, NULL);
        v->code = (rc == 0 || rc == DCPI_EFULL || rc == DCPI_EFORMAT) && v->info.is_elf &&
                  !strcmp(v->info.id, img->id);
        if (!v->code) { /* rebuilt, deleted or a memfd since: the copy dcpid kept by build-id */
            char db[4096];
            dcpi_profset_image_db(img, db, sizeof db);
            dcpi_codecache_path(db, img->id, v->codepath, sizeof v->codepath);
            v->code = dcpi_image_probe(v->codepath, &v->info, NULL) == 0 && v->info.is_elf &&
                      !strcmp(v->info.id, img->id);
        }
        if (v->code && dcpi_srclines_open(v->codepath, &v->sl, NULL) < 0)
            v->sl = NULL;
    } else if (img->kind == DCPI_PSET_PSEUDO && !strcmp(img->path, "[vdso]")) {
        snprintf(v->codepath, sizeof v->codepath, "%s/vdso.so", img->dir); /* dcpid's copy */
        v->code = dcpi_image_probe(v->codepath, &v->info, NULL) == 0 && v->info.is_elf;
    }
}

static void view_close(imgview_t *v)
{
    dcpi_symtab_free(v->st);
    dcpi_srclines_free(v->sl);
}

/* A procedure decoded once for the rows inside it. */
typedef struct decoded {
    const imgview_t *v;
    uint64_t lo;
    dcpi_listing_t *ls;
} decoded_t;

typedef struct dcache {
    decoded_t *d;
    size_t n, cap;
} dcache_t;

static void dcache_free(dcache_t *c)
{
    for (size_t i = 0; i < c->n; i++)
        dcpi_listing_free(c->d[i].ls);
    free(c->d);
}

/* The listing of [lo, hi) of v's file, decoded at most once (NULL when it cannot be read). */
static dcpi_listing_t *decode_range(dcache_t *c, const imgview_t *v, uint64_t lo, uint64_t hi)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->d[i].v == v && c->d[i].lo == lo && c->d[i].ls->hi == hi)
            return c->d[i].ls;
    dcpi_listing_t *ls = NULL;
    char err[DCPI_ERRLEN];
    if (dcpi__grow((void **)&c->d, &c->cap, c->n + 1, sizeof(*c->d)) < 0 ||
        dcpi_listing_new("", lo, hi, NULL, 0, 0, &ls) < 0)
        return NULL;
    if (dcpi_listing_decode(ls, v->codepath, &v->info, err) < 0) {
        dcpi_listing_free(ls);
        return NULL;
    }
    dcpi_listing_name_targets(ls, v->st);
    c->d[c->n++] = (decoded_t){v, lo, ls};
    return ls;
}

/* The instruction containing addr as dcpilist prints it, or "-" when its bytes cannot be read.
 * Decoded from the start of its symbol s (when s has a size), so that an address inside an
 * instruction (a histogram bin of an imported profile) names that instruction; else from addr,
 * at most 15 bytes (the longest x86-64 instruction), cut at the end of its segment. */
static void insn_text(dcache_t *c, const imgview_t *v, const dcpi_symbol_t *s, uint64_t addr,
                      char *buf, size_t len)
{
    snprintf(buf, len, "-");
    uint64_t a = 0, b = 0;
    if (!v->code || dcpi_image_vaddr_to_file(&v->info, addr, &a) < 0)
        return;
    uint64_t lo = addr, hi = addr + 15;
    if (s && s->size && addr >= s->addr && addr < s->addr + s->size) {
        lo = s->addr;
        hi = s->addr + s->size;
    } else {
        while (hi > addr + 1 &&
               (dcpi_image_vaddr_to_file(&v->info, hi - 1, &b) < 0 || b - a != hi - 1 - addr))
            hi--;
    }
    dcpi_listing_t *ls = decode_range(c, v, lo, hi);
    const dcpi_lst_insn_t *in = ls ? dcpi_listing_find(ls, addr) : NULL;
    if (in)
        snprintf(buf, len, "%s", dcpi_lst_insn_text(in));
}

/* One printed row's texts. */
typedef struct outrow {
    const char *proc;
    char pc[24];
    char insn[112];
    char source[4200];
} outrow_t;

static void name_row(dcache_t *c, imgview_t *v, const dcpi_profset_image_t *img,
                     const dcpi_top_row_t *r, int full, outrow_t *o)
{
    uint64_t addr = img->tstart + r->offset;
    const dcpi_symbol_t *s = v->st ? dcpi_symtab_lookup(v->st, addr) : NULL;
    o->proc = s && s->name && *s->name ? s->name : DCPI_UNKNOWN_ROUTINE;
    snprintf(o->pc, sizeof o->pc, "0x%" PRIx64, addr);
    insn_text(c, v, s, addr, o->insn, sizeof o->insn);
    const char *file = NULL;
    int line = 0;
    snprintf(o->source, sizeof o->source, "-");
    if (v->sl && dcpi_srclines_lookup(v->sl, addr, &file, &line) == 0 && file) {
        const char *base = strrchr(file, '/');
        snprintf(o->source, sizeof o->source, "%s:%d", full || !base ? file : base + 1, line);
    }
}

/* ---- printing ---- */

static double pct(uint64_t n, uint64_t total)
{
    return total ? 100.0 * (double)n / (double)total : 0.0;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

static int ndigits(uint64_t v)
{
    int d = 1;
    for (; v >= 10; v /= 10)
        d++;
    return d;
}

typedef struct layout {
    const dcpi_profset_t *set;
    int sort;
    uint64_t total; /* of the sort event, in the units printed */
    int wc, wproc, wpc, winsn, wimg, wsrc;
    FILE *f;
} layout_t;

static void csv_header(const layout_t *l)
{
    const char *s = l->set->events[l->sort].name;
    fprintf(l->f, "%s,%s%%,%scum%%,procedure,pc,instruction,image,source", s, s, s);
    for (size_t e = 0; e < l->set->nevents; e++)
        if ((int)e != l->sort)
            fprintf(l->f, ",%s", l->set->events[e].name);
    fputc('\n', l->f);
}

static void table_header(const layout_t *l)
{
    fprintf(l->f, "%*s %7s %7s  %-*s  %*s  %-*s  %-*s  %-*s", l->wc, l->set->events[l->sort].name,
            "%", "cum%", l->wproc, "procedure", l->wpc, "pc", l->winsn, "instruction", l->wimg,
            "image", l->set->nevents > 1 ? l->wsrc : 0, "source");
    for (size_t e = 0; e < l->set->nevents; e++)
        if ((int)e != l->sort)
            fprintf(l->f, "  %*s", max_int(9, (int)strlen(l->set->events[e].name)),
                    l->set->events[e].name);
    fputc('\n', l->f);
}

static void print_csv_row(const layout_t *l, const dcpi_top_row_t *r, const outrow_t *o,
                          uint64_t cum)
{
    fprintf(l->f, "%" PRIu64 ",%.2f,%.2f,", r->counts[l->sort], pct(r->counts[l->sort], l->total),
            pct(cum, l->total));
    const char *fields[] = {o->proc, o->pc, o->insn, l->set->images[r->image].name, o->source};
    for (size_t k = 0; k < 5; k++) {
        dcpi_csv_field(fields[k], l->f);
        if (k < 4)
            fputc(',', l->f);
    }
    for (size_t e = 0; e < l->set->nevents; e++)
        if ((int)e != l->sort)
            fprintf(l->f, ",%" PRIu64, r->counts[e]);
    fputc('\n', l->f);
}

/* s cut to w columns ("..." at the end) into buf. */
static const char *cut(const char *s, int w, char *buf, size_t len)
{
    if ((int)strlen(s) <= w)
        return s;
    snprintf(buf, len, "%.*s...", w - 3, s);
    return buf;
}

static void print_table_row(const layout_t *l, const dcpi_top_row_t *r, const outrow_t *o,
                            uint64_t cum)
{
    char ps[16], cs[16], pb[PROC_WIDTH_MAX + 1], ib[INSN_WIDTH_MAX + 1];
    snprintf(ps, sizeof ps, "%.2f", pct(r->counts[l->sort], l->total));
    snprintf(cs, sizeof cs, "%.2f", pct(cum, l->total));
    fprintf(l->f, "%*" PRIu64 " %7s %7s  %-*s  %*s  %-*s  %-*s  %-*s", l->wc, r->counts[l->sort],
            ps, cs, l->wproc, cut(o->proc, l->wproc, pb, sizeof pb), l->wpc, o->pc, l->winsn,
            cut(o->insn, l->winsn, ib, sizeof ib), l->wimg, l->set->images[r->image].name,
            l->set->nevents > 1 ? l->wsrc : 0, o->source); /* no padding at the end of a line */
    for (size_t e = 0; e < l->set->nevents; e++)
        if ((int)e != l->sort)
            fprintf(l->f, "  %*" PRIu64, max_int(9, (int)strlen(l->set->events[e].name)),
                    r->counts[e]);
    fputc('\n', l->f);
}

static void compute_layout(layout_t *l, const dcpi_top_row_t *r, const outrow_t *o, size_t n)
{
    l->wc = max_int((int)strlen(l->set->events[l->sort].name), ndigits(l->total));
    l->wproc = 9;
    l->wpc = 2;
    l->winsn = 11;
    l->wimg = 5;
    l->wsrc = 6;
    for (size_t i = 0; i < n; i++) {
        l->wproc = max_int(l->wproc, (int)strlen(o[i].proc));
        l->wpc = max_int(l->wpc, (int)strlen(o[i].pc));
        l->winsn = max_int(l->winsn, (int)strlen(o[i].insn));
        l->wimg = max_int(l->wimg, (int)strlen(l->set->images[r[i].image].name));
        l->wsrc = max_int(l->wsrc, (int)strlen(o[i].source));
    }
    l->wproc = l->wproc > PROC_WIDTH_MAX ? PROC_WIDTH_MAX : l->wproc;
    l->winsn = l->winsn > INSN_WIDTH_MAX ? INSN_WIDTH_MAX : l->winsn;
}

static uint64_t sort_total(const dcpi_profset_t *set, int sort, int period)
{
    uint64_t t = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        if (img->prof[sort])
            t += dcpi_profile_total(img->prof[sort]) * (period ? period_of(set, img, sort) : 1);
    }
    return t;
}

/* -json: the object's head (everything before the rows' array is closed). */
static void json_head(const dcpi_profset_t *set, const dcpi_top_opts_t *o, int sort, FILE *f)
{
    fputs("{\"schema\":\"dcpitopcounts/1\",\"epochs\":[", f);
    for (size_t i = 0; i < o->nepochs; i++) {
        if (i)
            fputc(',', f);
        dcpi__json_str(f, o->epochs[i]);
    }
    fputs("],", f);
    dcpi__json_key(f, 0, "sort_event");
    dcpi__json_str(f, sort >= 0 ? set->events[sort].name : NULL);
    fprintf(f, ",\"unit\":\"%s\",\"events\":[", o->period ? "samples x period" : "samples");
    for (size_t e = 0; e < set->nevents; e++) {
        fputs(e ? ",{" : "{", f);
        dcpi__json_key(f, 0, "name");
        dcpi__json_str(f, set->events[e].name);
        fprintf(f, ",\"total\":%" PRIu64 "}", sort_total(set, (int)e, o->period));
    }
    fputs("],\"rows\":[", f);
}

/* "-" (nothing known) as null. */
static void json_text(FILE *f, const char *s)
{
    dcpi__json_str(f, strcmp(s, "-") ? s : NULL);
}

static void json_row(const dcpi_profset_t *set, const dcpi_top_row_t *r, const outrow_t *o,
                     int first, FILE *f)
{
    fputs(first ? "{" : ",{", f);
    dcpi__json_key(f, 0, "procedure");
    dcpi__json_str(f, o->proc);
    fprintf(f, ",\"pc\":\"%s\",", o->pc);
    dcpi__json_key(f, 0, "instruction");
    json_text(f, o->insn);
    dcpi__json_key(f, 1, "image");
    dcpi__json_str(f, set->images[r->image].name);
    dcpi__json_key(f, 1, "source");
    json_text(f, o->source);
    fputs(",\"counts\":{", f);
    for (size_t e = 0; e < set->nevents; e++) {
        dcpi__json_key(f, e > 0, set->events[e].name);
        fprintf(f, "%" PRIu64, r->counts[e]);
    }
    fputs("}}", f);
}

static int print_rows(const dcpi_profset_t *set, const dcpi_top_opts_t *o, int sort,
                      const dcpi_top_row_t *r, size_t n, FILE *f)
{
    imgview_t *views = calloc(set->nimages + 1, sizeof(*views));
    outrow_t *out = calloc(n + 1, sizeof(*out));
    dcache_t dc = {0};
    if (!views || !out) {
        free(out);
        free(views);
        return DCPI_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        imgview_t *v = &views[r[i].image];
        if (!v->opened)
            view_open(v, &set->images[r[i].image], o->tool);
        name_row(&dc, v, &set->images[r[i].image], &r[i], o->csl || o->json, &out[i]);
    }
    if (o->json) {
        json_head(set, o, sort, f);
        for (size_t i = 0; i < n; i++)
            json_row(set, &r[i], &out[i], i == 0, f);
        fputs("]}\n", f);
    }
    layout_t l = {.set = set, .sort = sort, .total = sort_total(set, sort, o->period), .f = f};
    compute_layout(&l, r, out, n);
    if (o->json)
        n = 0; /* printed above */
    else if (o->csl)
        csv_header(&l);
    else
        table_header(&l);
    uint64_t cum = 0;
    for (size_t i = 0; i < n; i++) {
        cum += r[i].counts[sort];
        if (o->csl)
            print_csv_row(&l, &r[i], &out[i], cum);
        else
            print_table_row(&l, &r[i], &out[i], cum);
    }
    dcache_free(&dc);
    for (size_t i = 0; i < set->nimages; i++)
        view_close(&views[i]);
    free(out);
    free(views);
    return 0;
}

int dcpi_top_report(const dcpi_profset_t *set, const dcpi_top_opts_t *o, FILE *f)
{
    int sort = dcpi_profset_pick_event(set, o->sort_event, o->tool, o->epoch);
    if (sort < 0)
        return DCPI_ENOENT;
    if (set->nevents == 0 || set->events[sort].total == 0) {
        if (o->json) { /* an empty view is still an object */
            json_head(set, o, set->nevents ? sort : -1, f);
            fputs("]}\n", f);
        } else {
            fprintf(stderr, "%s: no samples\n", o->tool);
        }
        return 0;
    }
    dcpi_top_row_t *rows = NULL;
    uint64_t *counts = NULL;
    size_t n = 0;
    int rc = dcpi_top_collect(set, sort, o->period, o->n, &rows, &n, &counts);
    if (rc == 0)
        rc = print_rows(set, o, sort, rows, n, f);
    if (rc < 0)
        fprintf(stderr, "%s: %s\n", o->tool, dcpi_strerror(rc));
    free(rows);
    free(counts);
    return rc;
}
