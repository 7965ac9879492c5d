/*
 * procs.c - dcpiprof's views of a profile set: rows per procedure (each image's samples named by
 * its symbols, plus the children column from the stack profile of the sort event) or per image,
 * sorted by one event and printed as a table or CSV (see procs.h).
 */
#include "core/model/procs.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "core/model/csv.h"
#include "core/model/stackview.h"
#include "core/base/mem.h"
#include "core/store/stackprof.h"
#include "dcpi/errno.h"

#define PROC_WIDTH_MAX 50

typedef dcpi_procs_row_t row_t;

typedef struct rows {
    row_t *v;
    size_t n, cap;
    size_t nevents;
    int sort;     /* event index rows are sorted by */
    int children; /* 1: the epoch has stacks for the sort event (a "children" column) */
} rows_t;

/* What the rows point into, released by dcpi_procs_table_free. */
struct dcpi_procs_priv {
    rows_t r;
    const dcpi_profset_t *set;
    dcpi_symtab_t **tabs; /* [set->nimages] */
    char **labels;        /* -procs row names */
    size_t nlabels;
    dcpi_stackprof_t *sp;
    dcpi_symtab_t **stabs;
};

/* A run of samples of one event inside one procedure, before merging by name. */
typedef struct piece {
    const char *name;
    int event;
    uint64_t count;
    uint64_t addr; /* the symbol's address, 0 for DCPI_UNKNOWN_ROUTINE */
} piece_t;

typedef struct pieces {
    piece_t *v;
    size_t n, cap;
} pieces_t;

/* ---- building rows ---- */

static row_t *row_add(rows_t *r, const char *proc, const char *image)
{
    if (dcpi__grow((void **)&r->v, &r->cap, r->n + 1, sizeof(*r->v)) < 0)
        return NULL;
    uint64_t *c = calloc(r->nevents ? r->nevents : 1, sizeof(*c));
    if (!c)
        return NULL;
    r->v[r->n] = (row_t){proc, image, c, 0, 0, -1};
    return &r->v[r->n++];
}

static void rows_free(rows_t *r)
{
    for (size_t i = 0; i < r->n; i++)
        free(r->v[i].counts);
    free(r->v);
}

static int piece_add(pieces_t *p, const char *name, uint64_t addr, int event, uint64_t count)
{
    if (p->n && p->v[p->n - 1].name == name && p->v[p->n - 1].event == event) {
        p->v[p->n - 1].count += count;
        return 0;
    }
    if (dcpi__grow((void **)&p->v, &p->cap, p->n + 1, sizeof(*p->v)) < 0)
        return DCPI_ENOMEM;
    p->v[p->n++] = (piece_t){name, event, count, addr};
    return 0;
}

static int cmp_piece(const void *a, const void *b)
{
    return strcmp(((const piece_t *)a)->name, ((const piece_t *)b)->name);
}

/* Name every sample of img (one symbol lookup per sampled offset) into pieces. */
static int symbolize(const dcpi_profset_image_t *img, size_t nevents, const dcpi_symtab_t *st,
                     pieces_t *p)
{
    for (size_t e = 0; e < nevents; e++) {
        size_t n = 0;
        const dcpi_profile_entry_t *ent =
            img->prof[e] ? dcpi_profile_entries(img->prof[e], &n) : NULL;
        for (size_t k = 0; k < n; k++) {
            const dcpi_symbol_t *s =
                st ? dcpi_symtab_lookup(st, img->tstart + ent[k].offset) : NULL;
            int named = s && s->name && *s->name;
            if (piece_add(p, named ? s->name : DCPI_UNKNOWN_ROUTINE, named ? s->addr : 0, (int)e,
                          ent[k].count) < 0)
                return DCPI_ENOMEM;
        }
    }
    return 0;
}

/* Merge pieces with the same name into rows of img. */
static int pieces_to_rows(pieces_t *p, const dcpi_profset_image_t *img, long idx, rows_t *r)
{
    qsort(p->v, p->n, sizeof(*p->v), cmp_piece);
    row_t *cur = NULL;
    for (size_t k = 0; k < p->n; k++) {
        if (!cur || strcmp(cur->proc, p->v[k].name) != 0) {
            if (!(cur = row_add(r, p->v[k].name, img->name)))
                return DCPI_ENOMEM;
            cur->addr = p->v[k].addr;
            cur->img = idx;
        }
        cur->counts[p->v[k].event] += p->v[k].count;
    }
    return 0;
}

/* ---- by process (-procs) ---- */

typedef struct proc_count {
    uint32_t pid;
    const char *comm;
    int event;
    uint64_t count;
} proc_count_t;

static int cmp_proc_count(const void *a, const void *b)
{
    const proc_count_t *x = a, *y = b;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->comm, y->comm);
}

/* Every image's per-process counts, one entry per (process, event, sampled offset). */
static int collect_procs(const dcpi_profset_t *set, proc_count_t **out, size_t *n, uint64_t *split)
{
    size_t cap = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        for (size_t e = 0; img->procs && e < set->nevents; e++) {
            const dcpi_procprof_t *pp = img->procs[e];
            for (size_t k = 0; pp && k < pp->n; k++) {
                if (dcpi__grow((void **)out, &cap, *n + 1, sizeof(**out)) < 0)
                    return DCPI_ENOMEM;
                (*out)[(*n)++] =
                    (proc_count_t){pp->e[k].pid, pp->e[k].comm, (int)e, pp->e[k].count};
                split[e] += pp->e[k].count;
            }
        }
    }
    return 0;
}

/* One row per (pid, command); the samples of profiles without a split in one more row. Row
 * names are "PID COMMAND" strings kept in *labels (freed by the caller). */
static int process_rows(const dcpi_profset_t *set, rows_t *r, char ***labels, size_t *nlabels)
{
    proc_count_t *pc = NULL;
    size_t n = 0, cap = 0;
    uint64_t *split = calloc(set->nevents ? set->nevents : 1, sizeof(*split));
    int rc = split ? collect_procs(set, &pc, &n, split) : DCPI_ENOMEM;
    if (rc == 0 && n > 0) /* qsort's array may not be NULL, even empty */
        qsort(pc, n, sizeof(*pc), cmp_proc_count);
    row_t *cur = NULL;
    for (size_t k = 0; rc == 0 && k < n; k++) {
        if (!cur || cmp_proc_count(&pc[k - 1], &pc[k]) != 0) {
            char *label = NULL;
            if (dcpi__grow((void **)labels, &cap, *nlabels + 1, sizeof(**labels)) < 0 ||
                asprintf(&label, "%" PRIu32 " %s", pc[k].pid, pc[k].comm) < 0 ||
                !(cur = row_add(r, NULL, label))) {
                free(label);
                rc = DCPI_ENOMEM;
                break;
            }
            (*labels)[(*nlabels)++] = label;
        }
        cur->counts[pc[k].event] += pc[k].count;
    }
    row_t *rest = NULL;
    for (size_t e = 0; rc == 0 && e < set->nevents; e++) {
        uint64_t unsplit = set->events[e].total - split[e];
        if (unsplit && !rest && !(rest = row_add(r, NULL, "(profiles without a split by process)")))
            rc = DCPI_ENOMEM;
        if (rest)
            rest->counts[e] = unsplit;
    }
    free(pc);
    free(split);
    return rc;
}

static int image_rows(const dcpi_profset_t *set, rows_t *r)
{
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        if (dcpi_profset_image_total(set, img) == 0)
            continue;
        row_t *row = row_add(r, NULL, img->name);
        if (!row)
            return DCPI_ENOMEM;
        row->img = (long)i;
        for (size_t e = 0; e < set->nevents; e++)
            row->counts[e] = img->prof[e] ? dcpi_profile_total(img->prof[e]) : 0;
    }
    return 0;
}

/* Procedure rows; the symbol tables stay open (row names point into them) until freed. */
static int procedure_rows(const dcpi_profset_t *set, rows_t *r, dcpi_symtab_t **tabs,
                          const char *tool)
{
    pieces_t p = {0};
    int rc = 0;
    for (size_t i = 0; i < set->nimages && rc == 0; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        if (dcpi_profset_image_total(set, img) == 0)
            continue;
        tabs[i] = dcpi_profset_symbols_or_warn(img, tool);
        p.n = 0;
        rc = symbolize(img, set->nevents, tabs[i], &p);
        if (rc == 0)
            rc = pieces_to_rows(&p, img, (long)i, r);
    }
    free(p.v);
    return rc;
}

/* ---- inclusive samples from the stack profile ---- */

/* One (procedure, chain) occurrence of a frame. */
typedef struct incl {
    const char *proc, *image;
    size_t chain;
    uint64_t count;
    long img; /* index in set->images */
} incl_t;

static int cmp_incl(const void *a, const void *b)
{
    const incl_t *x = a, *y = b;
    int c = strcmp(x->image, y->image);
    c = c ? c : strcmp(x->proc, y->proc);
    return c ? c : (x->chain > y->chain) - (x->chain < y->chain);
}

static int cmp_row_name(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    int c = strcmp(x->image, y->image);
    return c ? c : strcmp(x->proc, y->proc);
}

/* Name every frame of sp whose image is in the set. */
static int stack_frames(const dcpi_profset_t *set, const dcpi_stackprof_t *sp, const long *pset,
                        dcpi_symtab_t *const *tabs, incl_t **out, size_t *nout)
{
    size_t n = 0, cap = 0;
    incl_t *v = NULL;
    int rc = dcpi__grow((void **)&v, &cap, 1024, sizeof(*v));
    for (size_t i = 0; rc == 0 && i < dcpi_stackprof_count(sp); i++) {
        const dcpi_frame_t *f;
        unsigned nf;
        uint64_t c;
        dcpi_stackprof_chain(sp, i, &f, &nf, &c);
        for (unsigned j = 0; rc == 0 && j < nf; j++) {
            if (f[j].image == DCPI_STACK_NOIMAGE || pset[f[j].image] < 0)
                continue;
            const dcpi_symbol_t *s = dcpi_stackprof_frame_symbol(sp, tabs, f[j], j);
            rc = dcpi__grow((void **)&v, &cap, n + 1, sizeof(*v));
            if (rc == 0)
                v[n++] = (incl_t){s && s->name && *s->name ? s->name : DCPI_UNKNOWN_ROUTINE,
                                  set->images[pset[f[j].image]].name, i, c, pset[f[j].image]};
        }
    }
    if (rc < 0) {
        free(v);
        v = NULL;
        n = 0;
    }
    *out = v;
    *nout = n;
    return rc;
}

/* Add the inclusive count of (proc, image) to its row, or to a new row without self samples
 * (counted in *added, appended after the n0 sorted rows). */
static int add_children(rows_t *r, size_t n0, const incl_t *k, uint64_t sum)
{
    row_t key = {.proc = k->proc, .image = k->image};
    row_t *row = bsearch(&key, r->v, n0, sizeof(*r->v), cmp_row_name);
    if (!row) {
        if (!(row = row_add(r, k->proc, k->image)))
            return DCPI_ENOMEM;
        row->img = k->img;
    }
    row->children += sum;
    return 0;
}

static int children_rows(const dcpi_profset_t *set, const dcpi_stackprof_t *sp,
                         dcpi_symtab_t **stabs, rows_t *r)
{
    size_t ni = dcpi_stackprof_nimages(sp), n = 0;
    long *pset = calloc(ni ? ni : 1, sizeof(*pset));
    incl_t *v = NULL;
    int rc = pset ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        dcpi_stackprof_symbols(sp, set, pset, stabs);
        rc = stack_frames(set, sp, pset, stabs, &v, &n);
    }
    if (rc == 0) {
        qsort(v, n, sizeof(*v), cmp_incl);
        qsort(r->v, r->n, sizeof(*r->v), cmp_row_name);
    }
    size_t n0 = r->n;
    for (size_t i = 0; rc == 0 && i < n;) {
        uint64_t sum = 0;
        size_t j = i;
        for (; j < n && !strcmp(v[j].image, v[i].image) && !strcmp(v[j].proc, v[i].proc); j++)
            if (j == i || v[j].chain != v[j - 1].chain)
                sum += v[j].count; /* a recursive procedure counts once per chain */
        rc = add_children(r, n0, &v[i], sum);
        i = j;
    }
    free(v);
    free(pset);
    return rc;
}

/* The children column: when the epoch (or one of the epochs) has a stack profile of the sort
 * event; several epochs' stacks are merged. The stack
 * profile and its symbol tables stay open (row names point into them) until freed. */
static int stack_rows(const dcpi_profset_t *set, const dcpi_procs_opts_t *o, rows_t *r,
                      dcpi_stackprof_t **sp, dcpi_symtab_t ***stabs)
{
    char err[DCPI_ERRLEN] = "";
    const char *ev = set->events[r->sort].name;
    int rc = o->stacks        ? o->stacks(o->stacks_arg, set, ev, sp, err)
             : o->nepochs > 1 ? dcpi_stackprof_load_epochs(o->db, o->epochs, o->nepochs,
                                                           o->platform, ev, sp, err)
                              : dcpi_stackprof_load(o->db, o->epoch, o->platform, ev, sp, err);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", o->tool, err);
        return rc;
    }
    if (!*sp)
        return 0;
    size_t ni = dcpi_stackprof_nimages(*sp);
    *stabs = calloc(ni ? ni : 1, sizeof(**stabs));
    if (!*stabs)
        return DCPI_ENOMEM;
    r->children = 1;
    return children_rows(set, *sp, *stabs, r);
}

/* ---- sorting and printing ---- */

static int g_sort; /* qsort has no context argument in C11 */

static int cmp_row(const void *a, const void *b)
{
    const row_t *x = a, *y = b;
    if (x->counts[g_sort] != y->counts[g_sort])
        return x->counts[g_sort] > y->counts[g_sort] ? -1 : 1;
    int c = x->proc && y->proc ? strcmp(x->proc, y->proc) : 0;
    return c ? c : strcmp(x->image, y->image);
}

static double pct(uint64_t n, uint64_t total)
{
    return total ? 100.0 * (double)n / (double)total : 0.0;
}

static int ndigits(uint64_t v)
{
    int d = 1;
    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

static int max_int(int a, int b)
{
    return a > b ? a : b;
}

int dcpi_procs_loss_warning(const dcpi_profset_event_t *ev, char *buf, size_t len)
{
    uint64_t all = ev->total + ev->lost;
    if (!all || ev->lost * 100 <= all)
        return 0;
    snprintf(buf, len,
             "warning: %s lost %.1f%% of its samples (%" PRIu64 " of %" PRIu64
             "): the shares below are of the samples kept",
             ev->name, 100.0 * (double)ev->lost / (double)all, ev->lost, all);
    return 1;
}

static void print_summary(const dcpi_profset_t *set, FILE *f)
{
    int wn = 6, wt = 5, wp = 6, wl = 4;
    for (size_t e = 0; e < set->nevents; e++) {
        const dcpi_profset_event_t *ev = &set->events[e];
        wn = max_int(wn, (int)strlen(ev->name));
        wt = max_int(wt, ndigits(ev->total));
        wp = max_int(wp, ndigits(ev->period));
        wl = max_int(wl, ndigits(ev->lost));
    }
    fprintf(f, "%-*s  %*s  %*s  %*s\n", wn, "Column", wt, "Total", wp, "Period", wl, "Lost");
    for (size_t e = 0; e < set->nevents; e++) {
        const dcpi_profset_event_t *ev = &set->events[e];
        char period[32];
        snprintf(period, sizeof(period), "%" PRIu64, ev->period);
        fprintf(f, "%-*s  %*" PRIu64 "  %*s  %*" PRIu64 "\n", wn, ev->name, wt, ev->total, wp,
                ev->mixed_period ? "mixed" : period, wl, ev->lost);
    }
    for (size_t e = 0; e < set->nevents; e++) { /* a loss over 1% is said, not only counted */
        char line[512];
        if (dcpi_procs_loss_warning(&set->events[e], line, sizeof(line)))
            fprintf(f, "%s\n", line);
    }
    fprintf(f, "\n");
}

/* Column order: the sort event, then the others by name. */
static void event_order(const dcpi_profset_t *set, int sort, int *order)
{
    size_t k = 0;
    order[k++] = sort;
    for (size_t e = 0; e < set->nevents; e++)
        if ((int)e != sort)
            order[k++] = (int)e;
}

typedef struct layout {
    const int *order;
    size_t nevents;
    int wcount[64]; /* per displayed event group; more events than that share the last width */
    int wproc;
    int wide;                    /* -wide: long names printed whole */
    int by_image, csl, children; /* by_image: one name column (an image or a process) */
    const char *what;            /* that column's title: "image" or "process" */
    FILE *f;
} layout_t;

static int wcount(const layout_t *l, size_t k)
{
    return l->wcount[k < 64 ? k : 63];
}

static void print_table_header(const dcpi_profset_t *set, const layout_t *l)
{
    for (size_t k = 0; k < l->nevents; k++) {
        const char *name = set->events[l->order[k]].name;
        if (l->csl)
            fprintf(l->f, "%s,%s%%,%scum%%,", name, name, name);
        else
            fprintf(l->f, "%*s %7s %8s   ", wcount(l, k), name, "%", "cum%");
        if (k == 0 && l->children)
            fprintf(l->f, l->csl ? "children,children%%," : "%*s %7s   ", wcount(l, 0), "children",
                    "%");
    }
    if (l->csl && l->by_image)
        fprintf(l->f, "%s\n", l->what);
    else if (l->csl)
        fprintf(l->f, "procedure,image\n");
    else if (l->by_image)
        fprintf(l->f, "%s\n", l->what);
    else
        fprintf(l->f, "%-*s  image\n", l->wproc, "procedure");
}

static void print_children(const dcpi_profset_t *set, const layout_t *l, const row_t *row)
{
    double p = pct(row->children, set->events[l->order[0]].total);
    if (l->csl) {
        fprintf(l->f, "%" PRIu64 ",%.2f,", row->children, p);
        return;
    }
    char ps[16];
    snprintf(ps, sizeof(ps), "%.2f%%", p);
    fprintf(l->f, "%*" PRIu64 " %7s   ", wcount(l, 0), row->children, ps);
}

static void print_row(const dcpi_profset_t *set, const layout_t *l, const row_t *row, uint64_t *cum)
{
    for (size_t k = 0; k < l->nevents; k++) {
        int e = l->order[k];
        cum[k] += row->counts[e];
        double p = pct(row->counts[e], set->events[e].total);
        double c = pct(cum[k], set->events[e].total);
        if (l->csl) {
            fprintf(l->f, "%" PRIu64 ",%.2f,%.2f,", row->counts[e], p, c);
        } else {
            char ps[16], cs[16];
            snprintf(ps, sizeof(ps), "%.2f%%", p);
            snprintf(cs, sizeof(cs), "%.2f%%", c);
            fprintf(l->f, "%*" PRIu64 " %7s %8s   ", wcount(l, k), row->counts[e], ps, cs);
        }
        if (k == 0 && l->children)
            print_children(set, l, row);
    }
    if (l->csl) {
        if (!l->by_image) {
            dcpi_csv_field(row->proc, l->f);
            fputc(',', l->f);
        }
        dcpi_csv_field(row->image, l->f);
        fputc('\n', l->f);
    } else if (l->by_image) {
        fprintf(l->f, "%s\n", row->image);
    } else if ((int)strlen(row->proc) > l->wproc && !l->wide) {
        /* cut to the column (C++ signatures reach hundreds of columns); -wide keeps them */
        fprintf(l->f, "%.*s...  %s\n", l->wproc - 3, row->proc, row->image);
    } else {
        fprintf(l->f, "%-*s  %s\n", l->wproc, row->proc, row->image);
    }
}

static void compute_layout(const dcpi_profset_t *set, const rows_t *r, layout_t *l)
{
    for (size_t k = 0; k < l->nevents && k < 64; k++) {
        int e = l->order[k];
        l->wcount[k] =
            max_int(9, max_int((int)strlen(set->events[e].name), ndigits(set->events[e].total)));
    }
    l->wproc = 9;
    for (size_t i = 0; i < r->n && !l->by_image; i++)
        l->wproc = max_int(l->wproc, (int)strlen(r->v[i].proc));
    if (l->wproc > PROC_WIDTH_MAX)
        l->wproc = PROC_WIDTH_MAX;
}

static int print_table(const dcpi_profset_t *set, const rows_t *r, const dcpi_procs_opts_t *o,
                       FILE *f)
{
    int *order = calloc(set->nevents, sizeof(*order));
    uint64_t *cum = calloc(set->nevents, sizeof(*cum));
    if (!order || !cum) {
        free(cum);
        free(order);
        return DCPI_ENOMEM;
    }
    event_order(set, r->sort, order);
    layout_t l = {.order = order,
                  .nevents = set->nevents,
                  .by_image = o->by_image || o->by_process,
                  .what = o->by_process ? "process" : "image",
                  .wide = o->wide,
                  .csl = o->csl,
                  .children = r->children,
                  .f = f};
    compute_layout(set, r, &l);
    print_table_header(set, &l);
    for (size_t i = 0; i < r->n; i++) {
        print_row(set, &l, &r->v[i], cum);
        if (o->keep < 100.0 && pct(cum[0], set->events[r->sort].total) >= o->keep)
            break;
    }
    free(cum);
    free(order);
    return 0;
}

static uint64_t all_samples(const dcpi_profset_t *set)
{
    uint64_t t = 0;
    for (size_t e = 0; e < set->nevents; e++)
        t += set->events[e].total;
    return t;
}

void dcpi_procs_table_free(dcpi_procs_table_t *t)
{
    if (!t)
        return;
    dcpi_procs_priv_t *p = t->priv;
    rows_free(&p->r);
    for (size_t i = 0; i < p->nlabels; i++)
        free(p->labels[i]);
    free(p->labels);
    for (size_t i = 0; p->tabs && i < p->set->nimages; i++)
        dcpi_symtab_free(p->tabs[i]);
    free(p->tabs);
    if (p->sp)
        dcpi_stackprof_symbols_free(p->sp, p->stabs);
    free(p->stabs);
    dcpi_stackprof_free(p->sp);
    free(p);
    free(t);
}

/* The rows of a set with samples into p->r, sorted. */
static int make_rows(const dcpi_profset_t *set, const dcpi_procs_opts_t *o, dcpi_procs_priv_t *p)
{
    rows_t *r = &p->r;
    /* The event to sort by: -s, else the one with the most samples (ties: first by name). */
    r->sort = dcpi_profset_pick_event(set, o->sort_event, o->tool, o->epoch);
    if (r->sort < 0)
        return DCPI_ENOENT;
    p->tabs = calloc(set->nimages ? set->nimages : 1, sizeof(*p->tabs));
    int rc = p->tabs ? 0 : DCPI_ENOMEM;
    if (rc == 0 && o->by_process)
        rc = process_rows(set, r, &p->labels, &p->nlabels);
    else if (rc == 0)
        rc = o->by_image ? image_rows(set, r) : procedure_rows(set, r, p->tabs, o->tool);
    if (rc == 0 && !o->by_image && !o->by_process && !o->no_children)
        rc = stack_rows(set, o, r, &p->sp, &p->stabs);
    if (rc == 0) {
        g_sort = r->sort;
        qsort(r->v, r->n, sizeof(*r->v), cmp_row);
    }
    if (rc < 0 && rc != DCPI_ENOENT)
        fprintf(stderr, "%s: %s\n", o->tool, dcpi_strerror(rc));
    return rc;
}

int dcpi_procs_rows(const dcpi_profset_t *set, const dcpi_procs_opts_t *o, dcpi_procs_table_t **out)
{
    *out = NULL;
    dcpi_procs_table_t *t = calloc(1, sizeof(*t));
    dcpi_procs_priv_t *p = calloc(1, sizeof(*p));
    if (!t || !p) {
        free(t);
        free(p);
        fprintf(stderr, "%s: %s\n", o->tool, dcpi_strerror(DCPI_ENOMEM));
        return DCPI_ENOMEM;
    }
    t->priv = p;
    p->set = set;
    p->r.nevents = set->nevents;
    int rc = all_samples(set) ? make_rows(set, o, p) : 0;
    if (rc < 0) {
        dcpi_procs_table_free(t);
        return rc;
    }
    t->v = p->r.v;
    t->n = p->r.n;
    t->sort = p->r.sort;
    t->children = p->r.children;
    *out = t;
    return 0;
}

int dcpi_procs_report(const dcpi_profset_t *set, const dcpi_procs_opts_t *o, FILE *f)
{
    if (!o->no_header && !o->csl)
        print_summary(set, f);
    if (all_samples(set) == 0) {
        fprintf(stderr, "no samples\n");
        return 0;
    }
    dcpi_procs_table_t *t = NULL;
    int rc = dcpi_procs_rows(set, o, &t);
    if (rc == 0)
        rc = print_table(set, &t->priv->r, o, f);
    dcpi_procs_table_free(t);
    return rc < 0 ? rc : 0;
}
