/*
 * listprint.c - dcpilist's three printers of a listing (listing.h): annotated disassembly with
 * the value columns (-asm, -vprof), source lines with summed counts (-source), and source lines
 * each followed by its instructions (-both).
 */
#include "core/listing/listing.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dcpi/errno.h"

#define ADDR_MIN_WIDTH 8
#define INSN_MIN_WIDTH 36
#define INSN_MAX_WIDTH 72

typedef struct widths {
    int *count; /* [nevents] */
    int addr, insn;
} widths_t;

static int count_width(const dcpi_listing_t *ls, size_t e)
{
    int w = (int)strlen(ls->events[e]);
    char tmp[32];
    int n = snprintf(tmp, sizeof(tmp), "%" PRIu64, ls->proc_total[e]);
    return n > w ? n : w;
}

static int widths_init(const dcpi_listing_t *ls, widths_t *w)
{
    w->count = calloc(ls->nevents + 1, sizeof(int));
    if (!w->count)
        return DCPI_ENOMEM;
    for (size_t e = 0; e < ls->nevents; e++)
        w->count[e] = count_width(ls, e);
    w->addr = ADDR_MIN_WIDTH;
    w->insn = INSN_MIN_WIDTH;
    for (size_t i = 0; i < ls->n; i++) {
        char tmp[32];
        int n = snprintf(tmp, sizeof(tmp), "0x%" PRIx64, ls->insns[i].addr);
        int t = (int)strlen(dcpi_lst_insn_text(&ls->insns[i])) + 2 * ls->insns[i].is_target;
        t = t > INSN_MAX_WIDTH ? INSN_MAX_WIDTH : t; /* a long target name pushes its own row */
        w->addr = n > w->addr ? n : w->addr;
        w->insn = t > w->insn ? t : w->insn;
    }
    return 0;
}

static void print_counts(const dcpi_listing_t *ls, const widths_t *w, const uint64_t *c, FILE *f)
{
    for (size_t e = 0; e < ls->nevents; e++) {
        if (c)
            fprintf(f, "%*" PRIu64 "  ", w->count[e], c[e]);
        else
            fprintf(f, "%*s  ", w->count[e], "");
    }
}

static void print_count_header(const dcpi_listing_t *ls, const widths_t *w, FILE *f)
{
    for (size_t e = 0; e < ls->nevents; e++)
        fprintf(f, "%*s  ", w->count[e], ls->events[e]);
}

/* After a hotlist: the bound on its shares, and "few" when they mean little. */
static void print_bound(const dcpi_vsummary_t *s, const dcpi_lst_vp_t *vp, FILE *f)
{
    if (s->vtot == 0)
        return;
    double b = dcpi_listing_share_bound_vp(s, vp);
    fprintf(f, "  +-%.1f%s", b, b > DCPI_LST_FEW_BOUND ? " few" : "");
}

static void print_values(const dcpi_listing_t *ls, const dcpi_lst_insn_t *in, size_t v,
                         const dcpi_lst_vopts_t *vo, FILE *f)
{
    const dcpi_vsummary_t *s = in->vs[v];
    if (!s && in->vtext && in->vtext[v]) /* "missing: REASON" (listvals.c) */
        fprintf(f, " %6s %6s %3s  %s", "-", "-", "-", in->vtext[v]);
    if (!s)
        return; /* no value columns: nothing to show (and no trailing blanks) */
    double thld = s->vtot ? (double)s->seen / (double)s->vtot : 0.0;
    fprintf(f, " %6" PRIu64 " %6.1f %3u", s->vtot, thld, s->n);
    if (in->bad)
        return;
    if (in->vtext && in->vtext[v]) { /* made by dcpi_listing_prepare_values */
        if (in->vtext[v][0])
            fprintf(f, "  %s", in->vtext[v]);
        print_bound(s, &ls->vp[v], f);
        return;
    }
    char text[DCPI_LST_HOTLIST_LEN];
    if (dcpi_listing_hotlist(s, &in->inst, &ls->vp[v], vo, text, sizeof(text), NULL) > 0)
        fprintf(f, "  %s", text);
    print_bound(s, &ls->vp[v], f);
}

static void print_insn(const dcpi_listing_t *ls, const widths_t *w, const dcpi_lst_insn_t *in,
                       const dcpi_lst_vopts_t *vo, FILE *f)
{
    char addr[32];
    snprintf(addr, sizeof(addr), "0x%" PRIx64, in->addr);
    const char *mark = in->is_target ? ": " : "", *text = dcpi_lst_insn_text(in);
    int pad = w->insn - (int)(strlen(mark) + strlen(text)); /* a target's name may be long */
    print_counts(ls, w, in->counts, f);
    fprintf(f, "%-*s  %s%s", w->addr, addr, mark, text);
    if (!vo || ls->nvp == 0) {
        fputc('\n', f);
        return;
    }
    if ((in->vs[0] || (in->vtext && in->vtext[0])) && pad > 0)
        fprintf(f, "%*s", pad, "");
    print_values(ls, in, 0, vo, f);
    fputc('\n', f);
    for (size_t v = 1; v < ls->nvp; v++) { /* further profiles: continuation lines */
        if (!in->vs[v] && !(in->vtext && in->vtext[v]))
            continue;
        print_counts(ls, w, NULL, f);
        fprintf(f, "%-*s  %-*s", w->addr, "", w->insn, ls->vp[v].name);
        print_values(ls, in, v, vo, f);
        fputc('\n', f);
    }
}

static void print_asm_header(const dcpi_listing_t *ls, const widths_t *w, int values, FILE *f)
{
    print_count_header(ls, w, f);
    if (!values) {
        fprintf(f, "%-*s  %s\n", w->addr, "address", "instruction");
        return;
    }
    fprintf(f, "%-*s  %-*s %6s %6s %3s", w->addr, "address", w->insn, "instruction", "vtot", "thld",
            "nv");
    if (ls->nvp > 1)
        fprintf(f, "  (%s)", ls->vp[0].name);
    fputc('\n', f);
}

void dcpi_listing_print_totals(const dcpi_listing_t *ls, FILE *f)
{
    for (size_t e = 0; e < ls->nevents; e++) {
        double pct = ls->image_total[e]
                         ? 100.0 * (double)ls->proc_total[e] / (double)ls->image_total[e]
                         : 0.0;
        fprintf(f, "total  %" PRIu64 " samples (%.2f%% of the image's %s)\n", ls->proc_total[e],
                pct, ls->events[e]);
    }
}

void dcpi_listing_print_vp_footers(const dcpi_listing_t *ls, FILE *f)
{
    for (size_t v = 0; v < ls->nvp; v++) {
        fprintf(f,
                "%s: hotlists hold at most %u values per instruction; each count may exceed the "
                "truth by at most err (largest err in this procedure: %" PRIu64 ")\n",
                ls->vp[v].name, ls->vp[v].hotsize, ls->vp[v].max_err);
        fprintf(f, "%s: backend %s (%s)\n", ls->vp[v].name,
                ls->vp[v].backend ? ls->vp[v].backend : "unknown",
                dcpi_listing_backend_note(ls->vp[v].backend));
    }
    if (ls->nvp)
        fprintf(f,
                "+-B after a hotlist: any share may be B points from the share in the "
                "sampled executions (95%% Wilson interval + the hotlist's error bound; an "
                "arm's executions count as one cluster); \"few\": B > %.0f, too few value "
                "samples (vtot) for the shares to mean much\n",
                DCPI_LST_FEW_BOUND);
}

void dcpi_listing_print_asm(const dcpi_listing_t *ls, const dcpi_lst_vopts_t *vo, FILE *f)
{
    widths_t w;
    if (widths_init(ls, &w) < 0)
        return;
    int values = vo && ls->nvp > 0;
    print_asm_header(ls, &w, values, f);
    for (size_t i = 0; i < ls->n; i++)
        print_insn(ls, &w, &ls->insns[i], values ? vo : NULL, f);
    dcpi_listing_print_totals(ls, f);
    if (values)
        dcpi_listing_print_vp_footers(ls, f);
    free(w.count);
}

/* ---- source view ---- */

/* One source line of the procedure: its counts and the instructions on it. */
typedef struct srow {
    const char *file;
    int file_rank; /* order of the file's first appearance in address order */
    int line;
    size_t first; /* index of its first instruction (address order within a line) */
} srow_t;

static int cmp_srow(const void *a, const void *b)
{
    const srow_t *x = a, *y = b;
    if (x->file_rank != y->file_rank)
        return x->file_rank - y->file_rank;
    if (x->line != y->line)
        return x->line < y->line ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

/* One row per instruction with a position, sorted by (file rank, line, address). */
static srow_t *source_rows(const dcpi_listing_t *ls, size_t *nrows)
{
    srow_t *r = malloc((ls->n + 1) * sizeof(*r));
    const char **files = malloc((ls->n + 1) * sizeof(*files));
    size_t n = 0, nfiles = 0;
    if (!r || !files) {
        free(r);
        free(files);
        return NULL;
    }
    for (size_t i = 0; i < ls->n; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (!in->file)
            continue;
        size_t k = 0;
        while (k < nfiles && strcmp(files[k], in->file) != 0)
            k++;
        if (k == nfiles)
            files[nfiles++] = in->file;
        r[n++] = (srow_t){in->file, (int)k, in->line, i};
    }
    free(files);
    qsort(r, n, sizeof(*r), cmp_srow);
    *nrows = n;
    return r;
}

int dcpi_listing_has_source(const dcpi_listing_t *ls)
{
    for (size_t i = 0; i < ls->n; i++) {
        if (ls->insns[i].file && access(ls->insns[i].file, R_OK) == 0)
            return 1;
    }
    return 0;
}

typedef struct srcview {
    const dcpi_listing_t *ls;
    widths_t w;
    int both;
    FILE *f;
    uint64_t *sum; /* [nevents] */
    dcpi_srctext_t text;
    int have_text;
} srcview_t;

static void print_source_line(srcview_t *sv, const char *file, int line, const uint64_t *counts)
{
    print_counts(sv->ls, &sv->w, counts, sv->f);
    const char *t = sv->have_text ? dcpi_srctext_line(&sv->text, line) : NULL;
    if (t)
        fprintf(sv->f, "%6d  %s\n", line, t);
    else
        fprintf(sv->f, "%6d  %s:%d\n", line, file, line);
}

#define GAP_CONTEXT 3 /* lines of context kept on each side of a run of lines without code */

/* Lines without code between two lines with code (-source with the text: shown blank). A long
 * run (inlined code spreads a function over a whole file) keeps GAP_CONTEXT lines on each side
 * and says how many it left out. */
static void print_gap(srcview_t *sv, const char *file, int from, int to)
{
    if (sv->both || !sv->have_text) {
        if (to > from)
            fprintf(sv->f, "....\n");
        return;
    }
    if (to - from <= 2 * GAP_CONTEXT + 1) {
        for (int l = from; l < to; l++)
            print_source_line(sv, file, l, NULL);
        return;
    }
    for (int l = from; l < from + GAP_CONTEXT; l++)
        print_source_line(sv, file, l, NULL);
    fprintf(sv->f, "%6s  .... (%d lines without code)\n", "", to - from - 2 * GAP_CONTEXT);
    for (int l = to - GAP_CONTEXT; l < to; l++)
        print_source_line(sv, file, l, NULL);
}

/* The rows [a, b) share file and line: print the line, then (-both) its instructions. */
static void print_line_group(srcview_t *sv, const srow_t *r, size_t a, size_t b)
{
    memset(sv->sum, 0, sv->ls->nevents * sizeof(uint64_t));
    for (size_t k = a; k < b; k++) {
        for (size_t e = 0; e < sv->ls->nevents; e++)
            sv->sum[e] += sv->ls->insns[r[k].first].counts[e];
    }
    print_source_line(sv, r[a].file, r[a].line, sv->sum);
    for (size_t k = a; sv->both && k < b; k++)
        print_insn(sv->ls, &sv->w, &sv->ls->insns[r[k].first], NULL, sv->f);
}

static void print_file(srcview_t *sv, const srow_t *r, size_t a, size_t b)
{
    fprintf(sv->f, "%s:\n", r[a].file);
    sv->have_text = dcpi_srctext_read(r[a].file, &sv->text) == 0;
    int prev = 0;
    for (size_t k = a; k < b;) {
        size_t end = k + 1;
        while (end < b && r[end].line == r[k].line)
            end++;
        if (prev)
            print_gap(sv, r[k].file, prev + 1, r[k].line);
        print_line_group(sv, r, k, end);
        prev = r[k].line;
        k = end;
    }
    dcpi_srctext_free(&sv->text);
    sv->have_text = 0;
}

static void print_unplaced(srcview_t *sv)
{
    size_t n = 0;
    memset(sv->sum, 0, sv->ls->nevents * sizeof(uint64_t));
    for (size_t i = 0; i < sv->ls->n; i++) {
        if (sv->ls->insns[i].file)
            continue;
        n++;
        for (size_t e = 0; e < sv->ls->nevents; e++)
            sv->sum[e] += sv->ls->insns[i].counts[e];
    }
    if (n == 0)
        return;
    print_counts(sv->ls, &sv->w, sv->sum, sv->f);
    fprintf(sv->f, "%6s  (%zu instructions without line information)\n", "?", n);
    for (size_t i = 0; sv->both && i < sv->ls->n; i++) {
        if (!sv->ls->insns[i].file)
            print_insn(sv->ls, &sv->w, &sv->ls->insns[i], NULL, sv->f);
    }
}

void dcpi_listing_print_source(const dcpi_listing_t *ls, int both, FILE *f)
{
    srcview_t sv = {.ls = ls, .both = both, .f = f};
    size_t n = 0;
    srow_t *r = NULL;
    if (widths_init(ls, &sv.w) < 0)
        return;
    sv.sum = calloc(ls->nevents + 1, sizeof(uint64_t));
    if (!sv.sum || !(r = source_rows(ls, &n)))
        goto out;
    print_count_header(ls, &sv.w, f);
    fprintf(f, "%6s  %s\n", "line", both ? "source / address  instruction" : "source");
    for (size_t k = 0; k < n;) {
        size_t end = k + 1;
        while (end < n && r[end].file_rank == r[k].file_rank)
            end++;
        print_file(&sv, r, k, end);
        k = end;
    }
    print_unplaced(&sv);
    dcpi_listing_print_totals(ls, f);
out:
    free(r);
    free(sv.sum);
    free(sv.w.count);
}
