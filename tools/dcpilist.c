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

typedef struct opts {
    int mode; /* enum dcpi_lst_mode */
    int vprof;
    dcpi_cli_list_t vtrace;
    int insecure;
    int json;
    dcpi_lst_vopts_t vo;
    const char *pfile;
} opts_t;

/* Everything one run holds; released by ctx_free in reverse order. */
typedef struct ctx {
    opts_t o;
    const char *proc_arg, *image_arg;
    dcpi_lstsel_t sel;
} ctx_t;

static ctx_t ctx = {.o = {.vo = {.show = 3, .cutoff = 5.0}}};

static void ctx_free(void *arg)
{
    ctx_t *c = arg;
    dcpi_lstsel_free(&c->sel);
    free(c->o.vtrace.v);
}

/* ---- flags ---- */

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_SET("-asm", &ctx.o.mode, DCPI_LST_ASM, "annotated disassembly"),
    DCPI_OPT_SET("-source", &ctx.o.mode, DCPI_LST_SOURCE, "source lines with their summed counts"),
    DCPI_OPT_SET("-both", &ctx.o.mode, DCPI_LST_BOTH,
                 "source lines, each followed by its instructions"),
    DCPI_OPT_SET("-best", &ctx.o.mode, DCPI_LST_BEST,
                 "-source when line information and sources exist, else -asm (default)"),
    DCPI_OPT_BOOL("-vprof", &ctx.o.vprof, "value hotlists after each instruction (asm view)"),
    DCPI_OPT_LIST("-vtrace", "PLUGIN", &ctx.o.vtrace,
                  "format values of PLUGIN's profile (repeatable; implies -vprof)"),
    DCPI_OPT_VINSECURE(&ctx.o.insecure),
    DCPI_OPT_VSHOW(&ctx.o.vo.show),
    DCPI_OPT_VCUTOFF(&ctx.o.vo.cutoff),
    DCPI_OPT_BOOL("-json", &ctx.o.json,
                  "print one JSON object (schema dcpilist/1) instead of the listing"),
    DCPI_OPT_IMAGE(&ctx.o.pfile),
    DCPI_OPT_END,
};

/* The flags that go together, and the operands. */
static int check(dcpi_cli_t *cli, void *arg)
{
    ctx_t *c = arg;
    opts_t *o = &c->o;
    o->vprof |= o->vtrace.n > 0;
    if (o->vprof && (o->mode == DCPI_LST_SOURCE || o->mode == DCPI_LST_BOTH)) {
        fprintf(stderr, TOOL ": -vprof needs the asm view (-asm)\n");
        return 2;
    }
    return dcpi_cli_proc_image(cli, o->pfile, &c->proc_arg, &c->image_arg);
}

/* ---- main flow ---- */

/* -fleet -vprof: the image's hotlists merged over the selected hosts in the store. */
static int fleet_values(dcpi_cli_t *cli, ctx_t *c, const char *const *dirs, char *err)
{
    dcpi_fleet_filter_t flt;
    char **names = NULL;
    dcpi_vprof_t **vps = NULL;
    size_t n = 0;
    int rc = dcpi_cli_fleet_filter(cli, &flt, err);
    if (rc == 0)
        rc = dcpi_fleet_vprofs(cli->fleet_url, &flt, c->sel.info.id, &names, &vps, &n, err);
    if (rc == 0)
        rc = dcpi_lstsel_values_given(&c->sel, dirs, c->o.vtrace.v, (size_t)c->o.vtrace.n,
                                      c->o.insecure, names, vps, n, err);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(vps);
    return rc;
}

/* The listing up to the point where it can be printed; 0, or 1 after its message. */
static int prepare(dcpi_cli_t *cli, dcpi_profset_t *set, ctx_t *c)
{
    const char *const *dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    char err[DCPI_ERRLEN] = "";
    dcpi_lstsel_t *s = &c->sel;
    *s = (dcpi_lstsel_t){.tool = TOOL,
                         .set = set,
                         .db = cli->db,
                         .epoch = cli->epoch,
                         .epochs = (const char *const *)cli->epochs,
                         .nepochs = cli->fleet_url ? 0 : cli->nepochs,
                         .platform = cli->platform};
    int rc = dcpi_lstsel_open(s, c->proc_arg, c->image_arg, c->o.pfile, err);
    if (rc == 0 && c->o.vprof && cli->fleet_url)
        rc = fleet_values(cli, c, dirs, err);
    else if (rc == 0 && c->o.vprof)
        rc = dcpi_lstsel_values(s, dirs, c->o.vtrace.v, (size_t)c->o.vtrace.n, c->o.insecure, err);
    if (rc == 0)
        rc = dcpi_lstsel_build(s, err);
    if (rc < 0 && err[0])
        fprintf(stderr, TOOL ": %s\n", err);
    return rc < 0 ? 1 : 0;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg)
{
    ctx_t *c = arg;
    char err[DCPI_ERRLEN] = "";
    int rc;
    if (prepare(cli, set, c))
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
        dcpi_lstsel_print(&c->sel, (enum dcpi_lst_mode)c->o.mode, c->o.vprof ? &c->o.vo : NULL,
                          stdout);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = DCPI_CLI_READER(TOOL, "procedure image", flags);
    dcpi_cli_main_t m = {.check = check, .run = run, .done = ctx_free, .load = DCPI_CLI_LOAD_EXIT};
    return dcpi_cli_main(&cli, argc, argv, &m, &ctx);
}
