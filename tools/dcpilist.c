/*
 * dcpilist - list one procedure of an image annotated with its samples: disassembly (-asm),
 * source lines (-source), both interleaved (-both), and with -vprof the value hotlists of the
 * value profiles, formatted by their plugins (-vtrace). See docs/dcpilist.md. The flags are
 * read here; the work is core/listing/listsel.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/listing/listing.h"
#include "core/listing/listsel.h"
#include "core/plugin/vploader.h"
#include "dcpi/errno.h"

#define TOOL "dcpilist"

static const dcpi_cli_flag_t flags[] = {
    {"-asm", NULL, "annotated disassembly", NULL},
    {"-source", NULL, "source lines with their summed counts", NULL},
    {"-both", NULL, "source lines, each followed by its instructions", NULL},
    {"-best", NULL, "-source when line information and sources exist, else -asm (default)", NULL},
    {"-vprof", NULL, "value hotlists after each instruction (asm view)", NULL},
    {"-vtrace", "PLUGIN", "format values of PLUGIN's profile (repeatable; implies -vprof)", NULL},
    {"-vtrace-insecure", NULL, "as root, load plugins that others could have written", NULL},
    {"-vshow", "N", "value/percentage pairs shown per instruction (default 3)", NULL},
    {"-vcutoff", "PCT", "pairs below PCT % print as '.' (default 5.0)", NULL},
    {"-json", NULL, "print one JSON object (schema dcpilist/1) instead of the listing", NULL},
    {"-image", "FILE", "the image file to read (the image operand may then be omitted)", "-p"},
    {NULL, NULL, NULL, NULL},
};

typedef struct opts {
    enum dcpi_lst_mode mode;
    int vprof;
    const char **vtrace;
    int nvtrace;
    int insecure;
    int json;
    dcpi_lst_vopts_t vo;
    const char *pfile;
} opts_t;

/* Everything one run holds; released by ctx_free in reverse order. */
typedef struct ctx {
    dcpi_cli_t cli;
    opts_t o;
    const char *proc_arg, *image_arg;
    dcpi_profset_t *set;
    dcpi_lstsel_t sel;
} ctx_t;

static void ctx_free(ctx_t *c)
{
    dcpi_lstsel_free(&c->sel);
    dcpi_profset_free(c->set);
    free(c->o.vtrace);
    dcpi_cli_free(&c->cli);
}

/* ---- flags ---- */

static int parse_opt(void *arg, const char *f, const char *v)
{
    opts_t *o = arg;
    double d = 0;
    if (!strcmp(f, "-asm"))
        o->mode = DCPI_LST_ASM;
    else if (!strcmp(f, "-source"))
        o->mode = DCPI_LST_SOURCE;
    else if (!strcmp(f, "-both"))
        o->mode = DCPI_LST_BOTH;
    else if (!strcmp(f, "-best"))
        o->mode = DCPI_LST_BEST;
    else if (!strcmp(f, "-vprof"))
        o->vprof = 1;
    else if (!strcmp(f, "-json"))
        o->json = 1;
    else if (!strcmp(f, "-vtrace-insecure"))
        o->insecure = 1;
    else if (!strcmp(f, "-vtrace")) {
        o->vtrace[o->nvtrace++] = v;
        o->vprof = 1;
    } else if (!strcmp(f, "-vshow")) {
        if (dcpi_cli_flag_number(TOOL, f, v, 0, 1e6, &d))
            return 2;
        o->vo.show = (unsigned)d;
    } else if (!strcmp(f, "-vcutoff")) {
        if (dcpi_cli_flag_number(TOOL, f, v, 0, 100, &d))
            return 2;
        o->vo.cutoff = d;
    } else if (!strcmp(f, "-image"))
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
    if (dcpi_cli_each(&c->cli, parse_opt, o))
        return 2;
    if (o->vprof && (o->mode == DCPI_LST_SOURCE || o->mode == DCPI_LST_BOTH)) {
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

/* ---- main flow ---- */

/* -fleet -vprof: the image's hotlists merged over the selected hosts in the store. */
static int fleet_values(ctx_t *c, const char *const *dirs, char *err)
{
    dcpi_fleet_filter_t flt;
    char **names = NULL;
    dcpi_vprof_t **vps = NULL;
    size_t n = 0;
    int rc = dcpi_cli_fleet_filter(&c->cli, &flt, err);
    if (rc == 0)
        rc = dcpi_fleet_vprofs(c->cli.fleet_url, &flt, c->sel.info.id, &names, &vps, &n, err);
    if (rc == 0)
        rc = dcpi_lstsel_values_given(&c->sel, dirs, c->o.vtrace, (size_t)c->o.nvtrace,
                                      c->o.insecure, names, vps, n, err);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(vps);
    return rc;
}

/* The listing up to the point where it can be printed; 0, or 1 after its message. */
static int prepare(ctx_t *c)
{
    const char *const *dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    char err[DCPI_ERRLEN] = "";
    dcpi_lstsel_t *s = &c->sel;
    *s = (dcpi_lstsel_t){.tool = TOOL,
                         .set = c->set,
                         .db = c->cli.db,
                         .epoch = c->cli.epoch,
                         .epochs = (const char *const *)c->cli.epochs,
                         .nepochs = c->cli.fleet_url ? 0 : c->cli.nepochs,
                         .platform = c->cli.platform};
    int rc = dcpi_lstsel_open(s, c->proc_arg, c->image_arg, c->o.pfile, err);
    if (rc == 0 && c->o.vprof && c->cli.fleet_url)
        rc = fleet_values(c, dirs, err);
    else if (rc == 0 && c->o.vprof)
        rc = dcpi_lstsel_values(s, dirs, c->o.vtrace, (size_t)c->o.nvtrace, c->o.insecure, err);
    if (rc == 0)
        rc = dcpi_lstsel_build(s, err);
    if (rc < 0 && err[0])
        fprintf(stderr, TOOL ": %s\n", err);
    return rc < 0 ? 1 : 0;
}

static int run(ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_cli_load(&c->cli, &c->set, err);
    if (rc < 0)
        return dcpi_cli_exit(rc, err);
    if (prepare(c))
        return 1;
    if (c->o.vprof && (rc = dcpi_listing_prepare_values(c->sel.ls, &c->o.vo, err)) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        if (rc != DCPI_EPLUGIN)
            return 1;
        fflush(NULL);
        _exit(1); /* the plugin faulted: its state is unknown, so no vp_unload, no cleanup */
    }
    if (c->o.json && (rc = dcpi_lstsel_json(&c->sel, c->o.vprof, stdout, err)) < 0) {
        fprintf(stderr, TOOL ": %s\n", err[0] ? err : dcpi_strerror(rc));
        if (rc != DCPI_EPLUGIN)
            return 1;
        fflush(NULL);
        _exit(1); /* as above */
    }
    if (!c->o.json)
        dcpi_lstsel_print(&c->sel, c->o.mode, c->o.vprof ? &c->o.vo : NULL, stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    ctx_t c = {.cli = {.tool = TOOL,
                       .strict_flag = 1,
                       .operands = "procedure image",
                       .flags = flags,
                       .process_flags = 1,
                       .fleet_flags = 1,
                       .multi_epoch = 1}};
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
    return dcpi_cli_status(rc); /* 3: damaged files were skipped */
}
