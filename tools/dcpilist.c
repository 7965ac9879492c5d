/*
 * dcpilist - list one procedure of an image annotated with its samples: disassembly (-asm),
 * source lines (-source), both interleaved (-both), and with -vprof the value hotlists of the
 * value profiles, formatted by their plugins (-vtrace). See docs/dcpilist.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/analysis/cli.h"
#include "core/image/image.h"
#include "core/analysis/listing.h"
#include "core/image/srclines.h"
#include "core/image/symbols.h"
#include "core/plugin/vploader.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"

#define TOOL "dcpilist"

static const dcpi_cli_flag_t flags[] = {
    {"-asm", NULL, "annotated disassembly"},
    {"-source", NULL, "source lines with their summed counts"},
    {"-both", NULL, "source lines, each followed by its instructions"},
    {"-best", NULL, "-source when line information and sources exist, else -asm (default)"},
    {"-vprof", NULL, "value hotlists after each instruction (asm view)"},
    {"-vtrace", "PLUGIN", "format values of PLUGIN's profile (repeatable; implies -vprof)"},
    {"-vtrace-insecure", NULL, "as root, load plugins that others could have written"},
    {"-vshow", "N", "value/percentage pairs shown per instruction (default 3)"},
    {"-vcutoff", "PCT", "pairs below PCT % print as '.' (default 5.0)"},
    {"-p", "FILE", "the image file to read (the image operand may then be omitted)"},
    {NULL, NULL, NULL},
};

enum mode { MODE_BEST, MODE_ASM, MODE_SOURCE, MODE_BOTH };

typedef struct opts {
    enum mode mode;
    int vprof;
    const char **vtrace;
    int nvtrace;
    int insecure;
    dcpi_lst_vopts_t vo;
    const char *pfile;
} opts_t;

/* Everything one run holds; released by ctx_free in reverse order. */
typedef struct ctx {
    dcpi_cli_t cli;
    opts_t o;
    const char *proc_arg, *image_arg;
    dcpi_profset_t *set;
    char path[4096];
    dcpi_image_info_t info;
    dcpi_symtab_t *st;
    const char *proc;
    uint64_t lo, hi;
    const char **events; /* names of the events this image has */
    int *event_idx;      /* their index in set->events */
    size_t nevents;
    dcpi_listing_t *ls;
    dcpi_srclines_t *sl;
    dcpi_vp_set_t *plugins;
    dcpi_vprof_t **vprofs; /* [ls->nvp] */
    char **vpnames;        /* [ls->nvp] */
    size_t nvp;
} ctx_t;

static void ctx_free(ctx_t *c)
{
    for (size_t v = 0; v < c->nvp; v++) {
        if (c->vprofs)
            dcpi_vprof_free(c->vprofs[v]);
        if (c->vpnames)
            free(c->vpnames[v]);
    }
    free(c->vpnames);
    free(c->vprofs);
    dcpi_listing_free(c->ls);
    dcpi_vp_set_free(c->plugins);
    dcpi_srclines_free(c->sl);
    free(c->event_idx);
    free(c->events);
    dcpi_symtab_free(c->st);
    dcpi_profset_free(c->set);
    free(c->o.vtrace);
    dcpi_cli_free(&c->cli);
}

/* ---- flags ---- */

static int parse_number(const char *flag, const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi)) {
        fprintf(stderr, TOOL ": %s wants a number from %g to %g, not '%s'\n", flag, lo, hi, v);
        return 2;
    }
    *out = d;
    return 0;
}

static int parse_opt(opts_t *o, const char *f, const char *v)
{
    double d = 0;
    if (!strcmp(f, "-asm"))
        o->mode = MODE_ASM;
    else if (!strcmp(f, "-source"))
        o->mode = MODE_SOURCE;
    else if (!strcmp(f, "-both"))
        o->mode = MODE_BOTH;
    else if (!strcmp(f, "-best"))
        o->mode = MODE_BEST;
    else if (!strcmp(f, "-vprof"))
        o->vprof = 1;
    else if (!strcmp(f, "-vtrace-insecure"))
        o->insecure = 1;
    else if (!strcmp(f, "-vtrace")) {
        o->vtrace[o->nvtrace++] = v;
        o->vprof = 1;
    } else if (!strcmp(f, "-vshow")) {
        if (parse_number(f, v, 0, 1e6, &d))
            return 2;
        o->vo.show = (unsigned)d;
    } else if (!strcmp(f, "-vcutoff")) {
        if (parse_number(f, v, 0, 100, &d))
            return 2;
        o->vo.cutoff = d;
    } else if (!strcmp(f, "-p"))
        o->pfile = v;
    return 0;
}

static int parse_opts(ctx_t *c)
{
    opts_t *o = &c->o;
    *o = (opts_t){.vo = {.show = 3, .cutoff = 5.0}};
    o->vtrace = calloc((size_t)c->cli.nopts + 1, sizeof(*o->vtrace));
    if (!o->vtrace)
        return 1;
    for (int i = 0; i < c->cli.nopts; i++) {
        const dcpi_cli_flag_t *fl = flags;
        while (strcmp(fl->name, c->cli.opts[i]) != 0)
            fl++;
        const char *v = fl->arg ? c->cli.opts[++i] : NULL;
        if (parse_opt(o, fl->name, v))
            return 2;
    }
    if (o->vprof && (o->mode == MODE_SOURCE || o->mode == MODE_BOTH)) {
        fprintf(stderr, TOOL ": -vprof needs the asm view (-asm)\n");
        return 2;
    }
    int want = o->pfile ? 1 : 2;
    if (c->cli.nargs < 1 || c->cli.nargs > 2 || (c->cli.nargs != want && !o->pfile)) {
        fprintf(stderr, TOOL ": expected a procedure and an image (try -h)\n");
        return 2;
    }
    c->proc_arg = c->cli.args[0];
    c->image_arg = c->cli.nargs > 1 ? c->cli.args[1] : o->pfile;
    return 0;
}

/* ---- the image ---- */

/* A profiled image whose path's basename is the operand, preferring one whose file still
 * has the profiled id. */
static const dcpi_profset_image_t *image_by_basename(const dcpi_profset_t *set, const char *name)
{
    const dcpi_profset_image_t *first = NULL;
    for (size_t i = 0; i < set->nimages; i++) {
        const dcpi_profset_image_t *img = &set->images[i];
        if (img->kind != DCPI_PSET_FILE || !dcpi_profset_image_matches(img, name))
            continue;
        dcpi_image_info_t info;
        if (dcpi_image_probe(img->path, &info, NULL) == 0 && !strcmp(info.id, img->id))
            return img;
        if (!first)
            first = img;
    }
    return first;
}

static int resolve_path(ctx_t *c)
{
    const char *file = c->o.pfile ? c->o.pfile : c->image_arg;
    if (!c->o.pfile && !strchr(file, '/')) {
        const dcpi_profset_image_t *img = image_by_basename(c->set, file);
        if (img && access(file, F_OK) != 0)
            file = img->path;
    }
    snprintf(c->path, sizeof(c->path), "%s", file);
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_image_probe(c->path, &c->info, err);
    if (rc < 0 && rc != DCPI_EFULL && rc != DCPI_EFORMAT) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    return 0;
}

/* 1 when img holds samples of the file being listed. */
static int same_image(const ctx_t *c, const dcpi_profset_image_t *img)
{
    return img->kind == DCPI_PSET_FILE && !strcmp(img->id, c->info.id);
}

static int check_profiled(const ctx_t *c)
{
    for (size_t i = 0; i < c->set->nimages; i++)
        if (same_image(c, &c->set->images[i]))
            return 0;
    const char *base = strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path;
    for (size_t i = 0; i < c->set->nimages; i++) {
        const dcpi_profset_image_t *img = &c->set->images[i];
        if (img->kind == DCPI_PSET_FILE && dcpi_profset_image_matches(img, base)) {
            fprintf(stderr,
                    TOOL ": %s changed since it was profiled (id %s, profile %s in epoch %s)\n",
                    c->path, c->info.id, img->id, c->cli.epoch);
            return 1;
        }
    }
    fprintf(stderr, TOOL ": no profile of %s (id %s) in epoch %s\n", c->path, c->info.id,
            c->cli.epoch);
    return 1;
}

/* ---- the procedure ---- */

static uint64_t symbol_end(const ctx_t *c, const dcpi_symbol_t *s)
{
    if (s->size)
        return s->addr + s->size;
    size_t n = dcpi_symtab_count(c->st);
    for (size_t i = 0; i < n; i++) {
        const dcpi_symbol_t *t = dcpi_symtab_get(c->st, i);
        if (t->addr > s->addr)
            return t->addr;
    }
    return c->info.tstart + c->info.tsize;
}

static int find_procedure(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    if (dcpi_symtab_open(c->path, &c->st, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    const dcpi_symbol_t *s = NULL;
    const char *a = c->proc_arg;
    if (!strncmp(a, "0x", 2) || !strncmp(a, "0X", 2)) {
        char *end = NULL;
        errno = 0;
        uint64_t addr = strtoull(a + 2, &end, 16);
        if (!errno && end != a + 2 && !*end)
            s = dcpi_symtab_lookup(c->st, addr);
    }
    if (!s)
        s = dcpi_symtab_find(c->st, a);
    if (!s) {
        fprintf(stderr, TOOL ": no procedure '%s' in %s\n", a, c->path);
        return 1;
    }
    c->proc = s->name;
    c->lo = s->addr;
    c->hi = symbol_end(c, s);
    return 0;
}

/* ---- samples ---- */

static int pick_events(ctx_t *c)
{
    c->events = calloc(c->set->nevents + 1, sizeof(*c->events));
    c->event_idx = calloc(c->set->nevents + 1, sizeof(*c->event_idx));
    if (!c->events || !c->event_idx)
        return DCPI_ENOMEM;
    for (size_t e = 0; e < c->set->nevents; e++) {
        int has = 0;
        for (size_t i = 0; i < c->set->nimages && !has; i++)
            has = same_image(c, &c->set->images[i]) && c->set->images[i].prof[e];
        if (has) {
            c->events[c->nevents] = c->set->events[e].name;
            c->event_idx[c->nevents++] = (int)e;
        }
    }
    return 0;
}

static void add_samples(ctx_t *c)
{
    for (size_t i = 0; i < c->set->nimages; i++) {
        const dcpi_profset_image_t *img = &c->set->images[i];
        if (!same_image(c, img))
            continue;
        for (size_t k = 0; k < c->nevents; k++) {
            const dcpi_profile_t *p = img->prof[c->event_idx[k]];
            size_t n = 0;
            const dcpi_profile_entry_t *ent = p ? dcpi_profile_entries(p, &n) : NULL;
            for (size_t j = 0; j < n; j++)
                dcpi_listing_add_samples(c->ls, k, img->tstart + ent[j].offset, ent[j].count);
            if (p)
                dcpi_listing_add_image_total(c->ls, k, dcpi_profile_total(p));
        }
    }
}

/* ---- value profiles ---- */

/* Names ("vp-classic") of the value profiles to show: the -vtrace plugins' names, else every
 * <name>.vprof of this image in the epoch. */
static int add_vpname(ctx_t *c, const char *name)
{
    for (size_t v = 0; v < c->nvp; v++)
        if (!strcmp(c->vpnames[v], name))
            return 0;
    char **nv = realloc(c->vpnames, (c->nvp + 1) * sizeof(*nv));
    if (!nv)
        return DCPI_ENOMEM;
    c->vpnames = nv;
    if (!(c->vpnames[c->nvp] = strdup(name)))
        return DCPI_ENOMEM;
    c->nvp++;
    return 0;
}

static int load_plugins(ctx_t *c)
{
    static const char *const dirs[] = {DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR, NULL};
    char err[DCPI_ERRLEN] = "";
    if (dcpi_vp_set_search_dirs(dirs) < 0 || dcpi_vp_set_new(&c->plugins) < 0)
        return DCPI_ENOMEM;
    dcpi_vp_set_allow_insecure(c->plugins, c->o.insecure);
    for (int i = 0; i < c->o.nvtrace; i++) {
        dcpi_vp_t *vp = NULL;
        int rc = dcpi_vp_load(c->plugins, c->o.vtrace[i], &vp, err);
        if (rc < 0) {
            fprintf(stderr, TOOL ": %s\n", err);
            return rc;
        }
        if ((rc = add_vpname(c, dcpi_vp_name(vp))) < 0)
            return rc;
    }
    return 0;
}

/* 1 when the image directory name "<basename>_<id>" is this image's. */
static int dir_is_image(const ctx_t *c, const char *dir)
{
    size_t n = strlen(dir), k = strlen(c->info.id);
    return n > k && dir[n - k - 1] == '_' && !strcmp(dir + n - k, c->info.id);
}

/* Read and merge one .vprof file into c->vprofs[v]. */
static int merge_file(ctx_t *c, size_t v, const char *path)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_vprof_t *vp = NULL;
    int rc = dcpi_vprof_read(path, &vp, err);
    if (rc < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return rc;
    }
    if (!c->vprofs[v]) {
        c->vprofs[v] = vp;
        return 0;
    }
    rc = dcpi_vprof_merge(c->vprofs[v], vp);
    if (rc < 0)
        fprintf(stderr, TOOL ": %s: cannot merge with the other platforms' profiles (%s)\n", path,
                dcpi_strerror(rc));
    dcpi_vprof_free(vp);
    return rc;
}

static int read_vprofs(ctx_t *c, const dcpi_db_file_t *files, size_t n)
{
    c->vprofs = calloc(c->nvp + 1, sizeof(*c->vprofs));
    if (!c->vprofs)
        return DCPI_ENOMEM;
    for (size_t v = 0; v < c->nvp; v++) {
        for (size_t i = 0; i < n; i++) {
            size_t len = strlen(files[i].file) - strlen(".vprof");
            if (!dir_is_image(c, files[i].imagedir) || strlen(c->vpnames[v]) != len ||
                strncmp(files[i].file, c->vpnames[v], len))
                continue;
            int rc = merge_file(c, v, files[i].path);
            if (rc < 0)
                return rc;
        }
        if (!c->vprofs[v])
            fprintf(stderr, TOOL ": no value profile '%s' of %s in epoch %s\n", c->vpnames[v],
                    c->path, c->cli.epoch);
    }
    return 0;
}

static int find_vprofs(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_db_file_t *files = NULL;
    size_t n = 0;
    int rc =
        dcpi_db_list_files(c->cli.db, c->cli.epoch, c->cli.platform, ".vprof", &files, &n, err);
    if (rc < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return rc;
    }
    for (size_t i = 0; i < n && c->o.nvtrace == 0 && rc == 0; i++) {
        if (dir_is_image(c, files[i].imagedir)) {
            files[i].file[strlen(files[i].file) - strlen(".vprof")] = '\0';
            rc = add_vpname(c, files[i].file);
            strcat(files[i].file, ".vprof");
        }
    }
    if (rc == 0 && c->nvp == 0)
        fprintf(stderr, TOOL ": no value profiles of %s in epoch %s\n", c->path, c->cli.epoch);
    if (rc == 0)
        rc = read_vprofs(c, files, n);
    free(files);
    return rc;
}

/* Hand the hotlists of value profile v to the listing. */
static int attach_vprof(ctx_t *c, size_t v)
{
    dcpi_lst_vp_t *lv = &c->ls->vp[v];
    dcpi_vp_t *plugin = dcpi_vp_find(c->plugins, c->vpnames[v]);
    lv->name = c->vpnames[v];
    lv->d = plugin ? dcpi_vp_dispatch(plugin) : NULL;
    lv->plugin = plugin ? dcpi_vp_path(plugin) : NULL;
    lv->hotsize = DCPI_VSUMMARY_DEFAULT_CAP;
    const dcpi_vprof_t *vp = c->vprofs[v];
    if (!vp)
        return 0;
    lv->hotsize = dcpi_vprof_hotsize(vp);
    const char *ts = dcpi_vprof_get(vp, "tstart");
    char *end = NULL;
    uint64_t tstart = ts ? strtoull(ts, &end, 16) : 0;
    if (!ts || end == ts || *end) {
        fprintf(stderr, TOOL ": value profile %s of %s: bad tstart '%s'\n", lv->name, c->path,
                ts ? ts : "");
        return DCPI_EFORMAT;
    }
    size_t n = dcpi_vprof_count(vp);
    for (size_t i = 0; i < n; i++) {
        uint32_t off = 0;
        const dcpi_vsummary_t *s = NULL;
        dcpi_vprof_entry(vp, i, &off, &s);
        dcpi_listing_set_values(c->ls, v, tstart + off, s);
    }
    return 0;
}

/* ---- main flow ---- */

static int build_listing(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    if (pick_events(c) < 0 ||
        dcpi_listing_new(c->proc, c->lo, c->hi, c->events, c->nevents, c->nvp, &c->ls) < 0)
        return DCPI_ENOMEM;
    int rc = dcpi_listing_decode(c->ls, c->path, &c->info, err);
    if (rc < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return rc;
    }
    add_samples(c);
    for (size_t v = 0; v < c->nvp && rc == 0; v++)
        rc = attach_vprof(c, v);
    return rc;
}

/* -best: source when the procedure has line information and a readable source file. */
static enum mode pick_mode(ctx_t *c)
{
    enum mode m = c->o.vprof && c->o.mode == MODE_BEST ? MODE_ASM : c->o.mode;
    char err[DCPI_ERRLEN] = "";
    if (m == MODE_ASM)
        return m;
    int rc = dcpi_srclines_open(c->path, &c->sl, err);
    size_t found = rc == 0 ? dcpi_listing_set_lines(c->ls, c->sl) : 0;
    if (m == MODE_BEST)
        return found && dcpi_listing_has_source(c->ls) ? MODE_SOURCE : MODE_ASM;
    if (!found)
        fprintf(stderr, TOOL ": %s\n", rc < 0 ? err : "no line information for this procedure");
    return m;
}

static int run(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_cli_load(&c->cli, &c->set, err);
    if (rc < 0)
        return dcpi_cli_exit(rc, err);
    if (resolve_path(c) || check_profiled(c) || find_procedure(c))
        return 1;
    if (c->o.vprof && (load_plugins(c) < 0 || find_vprofs(c) < 0))
        return 1;
    if (build_listing(c) < 0)
        return 1;
    if (c->o.vprof && (rc = dcpi_listing_prepare_values(c->ls, &c->o.vo, err)) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        if (rc != DCPI_EPLUGIN)
            return 1;
        fflush(NULL);
        _exit(1); /* the plugin faulted: its state is unknown, so no vp_unload, no cleanup */
    }
    printf("%s  %s  (0x%" PRIx64 "..0x%" PRIx64 ")  epoch %s\n", c->proc, c->path, c->lo, c->hi,
           c->cli.epoch);
    switch (pick_mode(c)) {
    case MODE_SOURCE:
        dcpi_listing_print_source(c->ls, 0, stdout);
        break;
    case MODE_BOTH:
        dcpi_listing_print_source(c->ls, 1, stdout);
        break;
    default:
        dcpi_listing_print_asm(c->ls, c->o.vprof ? &c->o.vo : NULL, stdout);
        break;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    ctx_t c = {.cli = {.tool = TOOL, .operands = "procedure image", .flags = flags}};
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_cli_parse(&c.cli, argc, argv, err);
    if (rc == 0) {
        rc = parse_opts(&c);
        if (rc == 0)
            rc = run(&c);
    } else {
        rc = dcpi_cli_exit(rc, err);
    }
    ctx_free(&c);
    return rc;
}
