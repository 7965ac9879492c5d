/*
 * reportlist.c - the annotated listings of dcpireport's page: the hottest procedures of the
 * set listed as dcpilist lists them (core/listing/listsel.h: the image file checked against
 * the profile, the samples of every event on each instruction, the value profiles of the image
 * with their plugins' hotlist texts made under the guard), written as JSON with the source
 * lines around them (see report.h).
 */
#include "core/report/report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/listing/listsel.h"
#include "core/base/err.h"
#include "core/base/progress.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

/* A source file spanning more lines than this shows its lines with code only. */
#define SRC_SPAN_MAX 400

typedef struct lctx {
    const dcpi_profset_t *set;
    const dcpi_report_opts_t *o;
    FILE *f;
    dcpi_db_file_t *vfiles; /* the epoch's .vprof files */
    size_t nvfiles;
    char **vpnames; /* [o->nvtrace]: the profile name of each -vtrace plugin */
    /* o->vprofs (the fleet): the value profiles of the image being listed */
    char **gnames;
    dcpi_vprof_t **gvps;
    size_t ngiven;
    const char **use;
    size_t listed;
} lctx_t;

/* 1 when the epoch has value profile name (NULL: any) of image id. */
static int has_vprof(const lctx_t *c, const char *id, const char *name)
{
    for (size_t i = 0; c->o->vprofs && i < c->ngiven; i++) /* the fleet's, of id */
        if (!name || !strcmp(c->gnames[i], name))
            return 1;
    size_t k = strlen(id);
    for (size_t i = 0; i < c->nvfiles; i++) {
        const dcpi_db_file_t *vf = &c->vfiles[i];
        size_t n = strlen(vf->imagedir), m = strlen(vf->file) - strlen(".vprof");
        if (n <= k || vf->imagedir[n - k - 1] != '_' || strcmp(vf->imagedir + n - k, id) != 0)
            continue;
        if (!name || (strlen(name) == m && !strncmp(vf->file, name, m)))
            return 1;
    }
    return 0;
}

/* The profile names of the -vtrace plugins (each loaded once here: a bad one stops the page). */
static int plugin_names(lctx_t *c, char *err)
{
    dcpi_vp_set_t *vs = NULL;
    c->vpnames = calloc(c->o->nvtrace + 1, sizeof(*c->vpnames));
    c->use = calloc(c->o->nvtrace + 1, sizeof(*c->use));
    if (!c->vpnames || !c->use)
        return DCPI_ENOMEM;
    if (c->o->nvtrace == 0)
        return 0;
    if (dcpi_vp_set_search_dirs(c->o->plugin_dirs) < 0 || dcpi_vp_set_new(&vs) < 0)
        return DCPI_ENOMEM;
    dcpi_vp_set_allow_insecure(vs, c->o->insecure);
    int rc = 0;
    for (size_t k = 0; k < c->o->nvtrace && rc == 0; k++) {
        dcpi_vp_t *vp = NULL;
        rc = dcpi_vp_load(vs, c->o->vtrace[k], &vp, err);
        if (rc == 0 && !(c->vpnames[k] = strdup(dcpi_vp_name(vp))))
            rc = DCPI_ENOMEM;
    }
    dcpi_vp_set_free(vs);
    return rc;
}

/* ---- source lines ---- */

/* The lines of file [lo, hi] with their summed counts: all of them when the span is short,
 * else those with code; none when the file cannot be read here (the page shows the
 * instructions instead, as dcpilist -best falls back to -asm). */
static void write_file_lines(const lctx_t *c, const dcpi_listing_t *ls, const char *file)
{
    int lo = 0, hi = 0;
    for (size_t i = 0; i < ls->n; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (in->file && !strcmp(in->file, file)) {
            lo = !lo || in->line < lo ? in->line : lo;
            hi = in->line > hi ? in->line : hi;
        }
    }
    size_t span = (size_t)(hi - lo + 1), ne = ls->nevents;
    uint64_t *sum = calloc(span * (ne + 1), sizeof(*sum)); /* [line][0]: has code, then counts */
    if (!sum)
        return;
    for (size_t i = 0; i < ls->n; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (!in->file || strcmp(in->file, file) != 0)
            continue;
        uint64_t *row = &sum[(size_t)(in->line - lo) * (ne + 1)];
        row[0] = 1;
        for (size_t e = 0; e < ne; e++)
            row[1 + e] += in->counts[e];
    }
    dcpi_srctext_t text = {0};
    int have = dcpi_srctext_read(file, &text) == 0;
    size_t ncode = 0;
    for (size_t k = 0; k < span; k++)
        ncode += sum[k * (ne + 1)] != 0;
    fprintf(c->f, "{\"file\":");
    dcpi_report_json_str(c->f, file);
    fprintf(c->f, ",\"text\":%d,\"ncode\":%zu,\"lines\":[", have, ncode);
    int first = 1;
    for (size_t k = 0; have && k < span; k++) { /* no text: the instructions say it all */
        const uint64_t *row = &sum[k * (ne + 1)];
        if (!row[0] && span > SRC_SPAN_MAX)
            continue;
        fprintf(c->f, "%s[%d,", first ? "" : ",", lo + (int)k);
        first = 0;
        if (row[0])
            dcpi__report_json_u64s(c->f, row + 1, ne);
        else
            fputc('0', c->f);
        fputc(',', c->f);
        dcpi_report_json_str(c->f, have ? dcpi_srctext_line(&text, lo + (int)k) : NULL);
        fputc(']', c->f);
    }
    fputs("]}", c->f);
    dcpi_srctext_free(&text);
    free(sum);
}

static void write_source(const lctx_t *c, const dcpi_listing_t *ls)
{
    fputs(",\"src\":[", c->f);
    int first = 1;
    for (size_t i = 0; i < ls->n; i++) { /* each file once, in order of first appearance */
        const char *file = ls->insns[i].file;
        int seen = !file;
        for (size_t j = 0; j < i && !seen; j++)
            seen = ls->insns[j].file && !strcmp(ls->insns[j].file, file);
        if (seen)
            continue;
        if (!first)
            fputc(',', c->f);
        first = 0;
        write_file_lines(c, ls, file);
    }
    fputc(']', c->f);
}

/* ---- instructions ---- */

static int has_data(const dcpi_listing_t *ls, const dcpi_lst_insn_t *in)
{
    for (size_t e = 0; e < ls->nevents; e++)
        if (in->counts[e])
            return 1;
    for (size_t v = 0; v < ls->nvp; v++)
        if (in->vs[v])
            return 1;
    return 0;
}

/* The value columns dcpilist -vprof prints: vtot, thld, nv, the hotlist text, the bound; an
 * instruction marked missing (no hotlist, a vtext "missing: REASON", core/listing/listvals.c)
 * gets dcpilist's "-" columns and the mark. */
static void write_values(FILE *f, const dcpi_listing_t *ls, const dcpi_lst_insn_t *in)
{
    fputs(",[", f);
    for (size_t v = 0; v < ls->nvp; v++) {
        const dcpi_vsummary_t *s = in->vs[v];
        if (v)
            fputc(',', f);
        if (!s && in->vtext && in->vtext[v] && !in->bad) {
            fputs("[\"-\",\"-\",\"-\",", f);
            dcpi_report_json_str(f, in->vtext[v]);
            fputs(",\"\"]", f);
            continue;
        }
        if (!s) {
            fputc('0', f);
            continue;
        }
        double thld = s->vtot ? (double)s->seen / (double)s->vtot : 0.0;
        double b = dcpi_listing_share_bound_vp(s, &ls->vp[v]);
        fprintf(f, "[%" PRIu64 ",\"%.1f\",%u,", s->vtot, thld, s->n);
        dcpi_report_json_str(f, in->bad ? "" : in->vtext && in->vtext[v] ? in->vtext[v] : "");
        if (s->vtot)
            fprintf(f, ",\"+-%.1f%s\"]", b, b > DCPI_LST_FEW_BOUND ? " few" : "");
        else
            fputs(",\"\"]", f);
    }
    fputc(']', f);
}

static void write_insns(FILE *f, const dcpi_listing_t *ls)
{
    int all = ls->n <= DCPI_REPORT_INSNS_MAX;
    size_t cut = 0;
    fputs(",\"asm\":[", f);
    int first = 1;
    for (size_t i = 0; i < ls->n; i++) {
        const dcpi_lst_insn_t *in = &ls->insns[i];
        if (!all && !has_data(ls, in)) {
            cut++;
            continue;
        }
        fprintf(f, "%s[\"0x%" PRIx64 "\",%d,", first ? "" : ",", in->addr, in->is_target);
        first = 0;
        dcpi_report_json_str(f, dcpi_lst_insn_text(in));
        fputc(',', f);
        dcpi__report_json_u64s(f, in->counts, ls->nevents);
        fprintf(f, ",%d", in->file ? in->line : 0);
        if (ls->nvp)
            write_values(f, ls, in);
        fputc(']', f);
    }
    fprintf(f, "],\"cut\":%zu", cut);
}

/* The text a printer of the listing writes to a FILE, as a JSON string. */
static void write_printed(FILE *f, const dcpi_listing_t *ls,
                          void (*print)(const dcpi_listing_t *, FILE *))
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m) {
        print(ls, m);
        fclose(m);
    }
    dcpi_report_json_str(f, buf ? buf : "");
    free(buf);
}

static void write_listing(const lctx_t *c, const dcpi_procs_row_t *row, dcpi_lstsel_t *s)
{
    FILE *f = c->f;
    dcpi_listing_t *ls = s->ls;
    fputs("{\"proc\":", f);
    dcpi_report_json_str(f, row->proc);
    fputs(",\"image\":", f);
    dcpi_report_json_str(f, s->path);
    fprintf(f, ",\"lo\":\"0x%" PRIx64 "\",\"hi\":\"0x%" PRIx64 "\",\"events\":[", s->lo, s->hi);
    for (size_t e = 0; e < ls->nevents; e++) {
        fputs(e ? "," : "", f);
        dcpi_report_json_str(f, ls->events[e]);
    }
    fputs("],\"total\":", f);
    dcpi__report_json_u64s(f, ls->proc_total, ls->nevents);
    fputs(",\"totals\":", f);
    write_printed(f, ls, dcpi_listing_print_totals);
    fputs(",\"vp\":[", f);
    for (size_t v = 0; v < ls->nvp; v++) {
        fputs(v ? "," : "", f);
        dcpi_report_json_str(f, ls->vp[v].name);
    }
    fputs("],\"footer\":", f);
    write_printed(f, ls, dcpi_listing_print_vp_footers);
    write_source(c, ls);
    write_insns(f, ls);
    fputc('}', f);
}

/* A procedure that cannot be listed: its name and why. */
static void write_unlisted(const lctx_t *c, const dcpi_procs_row_t *row, const char *why)
{
    fputs("{\"proc\":", c->f);
    dcpi_report_json_str(c->f, row->proc);
    fputs(",\"image\":", c->f);
    dcpi_report_json_str(c->f, row->image);
    fputs(",\"error\":", c->f);
    dcpi_report_json_str(c->f, why);
    fputc('}', c->f);
}

/* The -vtrace plugins whose profiles image id has, into c->use; the number of them. */
static size_t pick_plugins(lctx_t *c, const char *id)
{
    size_t n = 0;
    for (size_t k = 0; k < c->o->nvtrace; k++)
        if (has_vprof(c, id, c->vpnames[k]))
            c->use[n++] = c->o->vtrace[k];
    return n;
}

/* Release the given value profiles (those not taken by a listing). */
static void drop_given(lctx_t *c)
{
    for (size_t i = 0; i < c->ngiven; i++) {
        free(c->gnames[i]);
        dcpi_vprof_free(c->gvps ? c->gvps[i] : NULL);
    }
    free(c->gnames);
    free(c->gvps);
    c->gnames = NULL;
    c->gvps = NULL;
    c->ngiven = 0;
}

/* The listing's value profiles: read from the epoch, or the given ones (taken). */
static int values_of(lctx_t *c, dcpi_lstsel_t *s, size_t nuse, char *why)
{
    const dcpi_report_opts_t *o = c->o;
    if (!o->vprofs)
        return dcpi_lstsel_values(s, o->plugin_dirs, c->use, nuse, o->insecure, why);
    int rc = dcpi_lstsel_values_given(s, o->plugin_dirs, c->use, nuse, o->insecure, c->gnames,
                                      c->gvps, c->ngiven, why);
    free(c->gvps); /* every profile taken */
    c->gvps = NULL;
    return rc;
}

/* The listing of one row: 0 (listed, or a note written), or an error that stops the page. */
static int list_one(lctx_t *c, const dcpi_procs_row_t *row, char *err)
{
    const dcpi_report_opts_t *o = c->o;
    const dcpi_profset_image_t *img = &c->set->images[row->img];
    dcpi_lstsel_t s = {.tool = o->tool,
                       .set = c->set,
                       .db = o->db,
                       .epoch = o->epoch,
                       .epochs = o->epochs,
                       .nepochs = o->nepochs,
                       .platform = o->platform};
    char addr[32], why[DCPI_ERRLEN] = "";
    snprintf(addr, sizeof addr, "0x%" PRIx64, row->addr);
    int rc = 0;
    if (o->vprofs &&
        (rc = o->vprofs(o->source_arg, img->id, &c->gnames, &c->gvps, &c->ngiven, err)) < 0)
        return rc; /* the store failed: the page stops */
    size_t nuse = pick_plugins(c, img->id);
    int values = o->nvtrace ? nuse > 0 : has_vprof(c, img->id, NULL);
    rc = dcpi_lstsel_open(&s, addr, img->path, NULL, why);
    if (rc == 0 && values)
        rc = values_of(c, &s, nuse, why);
    drop_given(c);
    if (rc == 0)
        rc = dcpi_lstsel_build(&s, why);
    if (rc == 0 && s.nvp && (rc = dcpi_listing_prepare_values(s.ls, &o->vo, why)) == DCPI_EPLUGIN)
        return dcpi__errf(err, rc, "%s", why); /* the plugin's state is unknown: no cleanup */
    if (rc == DCPI_ENOMEM) {
        dcpi_lstsel_free(&s);
        return dcpi__errf(err, rc, "%s", dcpi_strerror(rc));
    }
    if (c->listed++)
        fputc(',', c->f);
    if (rc < 0) {
        write_unlisted(c, row, why[0] ? why : dcpi_strerror(rc));
    } else {
        if (dcpi_srclines_open(s.path, &s.sl, NULL) == 0)
            dcpi_listing_set_lines(s.ls, s.sl);
        write_listing(c, row, &s);
    }
    dcpi_lstsel_free(&s);
    return 0;
}

/* 1 when row is a procedure the listings hold: every one, or o->only_proc (of o->only_image). */
static int wanted(const dcpi_report_opts_t *o, const dcpi_profset_t *set,
                  const dcpi_procs_row_t *row)
{
    if (!o->only_proc)
        return 1;
    return strcmp(row->proc, o->only_proc) == 0 &&
           (!o->only_image || strcmp(set->images[row->img].name, o->only_image) == 0);
}

int dcpi__report_listings(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                          const dcpi_procs_table_t *t, char *err)
{
    lctx_t c = {.set = set, .o = o, .f = f};
    const char *const *ev = o->nepochs ? o->epochs : &o->epoch;
    int rc = o->vprofs
                 ? 0
                 : dcpi_db_list_files_epochs(o->db, ev, o->nepochs ? o->nepochs : 1, o->platform,
                                             ".vprof", &c.vfiles, &c.nvfiles, err);
    if (rc == 0)
        rc = plugin_names(&c, err);
    fputs("\"listings\":[", f);
    size_t done = 0;
    dcpi__progress_t pg; /* listings read the image files: the long part on big profiles */
    dcpi__progress_start(&pg, stderr, -1, o->top, "dcpireport: listings");
    for (size_t i = 0; rc == 0 && i < t->n && done < o->top; i++) {
        const dcpi_procs_row_t *row = &t->v[i];
        if (!row->proc || !row->addr || row->img < 0 || !row->counts[t->sort] ||
            set->images[row->img].kind != DCPI_PSET_FILE || !wanted(o, set, row))
            continue; /* the kernel's, unknown_rou, children without samples of their own */
        rc = list_one(&c, row, err);
        dcpi__progress_update(&pg, ++done);
    }
    dcpi__progress_done(&pg);
    fputc(']', f);
    for (size_t k = 0; c.vpnames && k < o->nvtrace; k++)
        free(c.vpnames[k]);
    free(c.vpnames);
    free(c.use);
    free(c.vfiles);
    return rc;
}
