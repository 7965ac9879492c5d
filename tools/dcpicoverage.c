/*
 * dcpicoverage - which instructions, source lines and basic blocks of a procedure or of a whole
 * image got samples, over one or many epochs, and the never-sampled ranges
 * (docs/dcpicoverage.md). The flags and epochs are read here; the work is
 * core/coverage/coverage.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "core/coverage/coverage.h"
#include "core/model/imagemap.h"
#include "core/store/epochs.h"
#include "core/image/srclines.h"
#include "dcpi/errno.h"

#define TOOL "dcpicoverage"

/* Everything one run holds; released by ctx_free. */
typedef struct ctx {
    dcpi_cli_t cli;
    char **specs; /* epoch specs, in order; "all" expands to every epoch */
    size_t nspecs;
    char **epochs; /* resolved names */
    dcpi_profset_t **sets;
    size_t nsets;
    const char *event, *mapfile;
    int csl, summary;
    dcpi_cov_t cv;
    dcpi_srclines_t *sl;
    char noproc[DCPI_ERRLEN]; /* the last epoch without -pid/-comm's samples: why */
} ctx_t;

static ctx_t ctx;

static void ctx_free(void *arg)
{
    ctx_t *c = arg;
    dcpi_srclines_free(c->sl);
    dcpi_cov_free(&c->cv);
    for (size_t i = 0; i < c->nsets; i++) {
        dcpi_profset_free(c->sets[i]);
        free(c->epochs[i]);
    }
    free(c->sets);
    free(c->epochs);
    for (size_t i = 0; i < c->nspecs; i++)
        free(c->specs[i]);
    free(c->specs);
}

static int add_spec(ctx_t *c, const char *v, size_t len)
{
    char **s = realloc(c->specs, (c->nspecs + 1) * sizeof(*s));
    if (!s)
        return -1;
    c->specs = s;
    if (!(s[c->nspecs] = strndup(v, len)))
        return -1;
    c->nspecs++;
    return 0;
}

/* -epoch E (one) or -epochs E1,E2,... (a comma-separated list), in command-line order. */
static int add_specs(ctx_t *c, const char *v, int list)
{
    if (!list)
        return add_spec(c, v, strlen(v));
    for (const char *p = v; *p;) {
        size_t len = strcspn(p, ",");
        if (len && add_spec(c, p, len) < 0)
            return -1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* -epoch E and -epochs E1,E2,... (list: 1). 0, or an exit status after the message. */
static int set_specs(const char *flag, const char *v, int list)
{
    if (!*v) {
        fprintf(stderr, TOOL ": flag '%s' needs a non-empty argument (try -h)\n", flag);
        return 2;
    }
    return add_specs(&ctx, v, list) < 0 ? 1 : 0;
}

static int set_epoch(void *dst, const char *v)
{
    return set_specs("-epoch", v, 0);
}

static int set_epochs(void *dst, const char *v)
{
    return set_specs("-epochs", v, 1);
}

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_CALL("-epoch", "E", set_epoch, NULL,
                  "an epoch (name, latest, latest-N, all or A..B); repeatable, default latest"),
    DCPI_OPT_CALL("-epochs", "all|E1,E2,...", set_epochs, NULL,
                  "sum the samples of every epoch, or of those (-epoch repeats too)"),
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &ctx.event,
                   "count samples of EVENT (default: the event with the most samples)"),
    DCPI_OPT_BOOL("-summary", &ctx.summary, "the counts only, without the never-sampled ranges"),
    DCPI_OPT_BOOL("-csl", &ctx.csl,
                  "comma-separated output: one table, its first column says what a row is"),
    DCPI_OPT_MAPFILE(&ctx.mapfile),
    DCPI_OPT_END,
};

/* The operands: an image, or a procedure and its image. */
static int check(dcpi_cli_t *cli, void *arg)
{
    if (cli->nargs < 1 || cli->nargs > 2) {
        fprintf(stderr, TOOL ": give an image, or a procedure and its image (try -h)\n");
        return 2;
    }
    return 0;
}

/* Load one epoch (spec already resolved into cli.epoch) into a new set. */
static int load_one(ctx_t *c)
{
    char err[DCPI_ERRLEN];
    dcpi_profset_t *set = NULL;
    int rc = dcpi_cli_load(&c->cli, &set, err);
    int by_process = c->cli.procsel.pid >= 0 || c->cli.procsel.comm;
    if (rc == DCPI_ENOENT && by_process) { /* -pid/-comm: an epoch without them adds nothing */
        snprintf(c->noproc, sizeof c->noproc, "%s", err);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    c->sets[c->nsets] = set;
    c->epochs[c->nsets] = strdup(c->cli.epoch);
    if (!c->epochs[c->nsets]) {
        dcpi_profset_free(set);
        return 1;
    }
    c->nsets++;
    if (c->mapfile && dcpi_imagemap_use(c->mapfile, set, TOOL, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    return 0;
}

/* Every epoch of the database ("all"), or those of a range "A..B" (holding -platform when
 * given). */
static int expand_all(ctx_t *c, const char *spec, char ***names, size_t *n)
{
    char err[DCPI_ERRLEN];
    c->cli.epoch_spec = NULL;
    c->cli.epoch[0] = '\0';
    int rc = dcpi_cli_resolve(&c->cli, err);
    if (rc == 0 && !strcmp(spec, "all"))
        rc = dcpi_db_epochs(c->cli.db, names, n, err);
    else if (rc == 0 &&
             (rc = dcpi_epoch_select(c->cli.db, spec, c->cli.platform, 0, 0, names, n, err)) < 0)
        dcpi_cli_prefix_err(&c->cli, err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return rc == DCPI_EINVAL ? 2 : 1;
    }
    return 0;
}

static int load_sets(ctx_t *c)
{
    if (c->cli.fleet_url) { /* -fleet: one set, the store's selection summed in ClickHouse */
        if (c->nspecs) {
            fprintf(stderr, TOOL ": -epoch and -epochs select a database's epochs; with -fleet use "
                                 "-since and -until\n");
            return 2;
        }
        c->sets = calloc(2, sizeof(*c->sets));
        c->epochs = calloc(2, sizeof(*c->epochs));
        return c->sets && c->epochs ? load_one(c) : 1;
    }
    if (c->nspecs == 0 && add_spec(c, "latest", 6) < 0)
        return 1;
    int status = 0;
    for (size_t k = 0; k < c->nspecs && status == 0; k++) {
        char **names = NULL, *one[1] = {c->specs[k]};
        size_t n = 1;
        int all = !strcmp(c->specs[k], "all") || strstr(c->specs[k], "..");
        if (all && (status = expand_all(c, c->specs[k], &names, &n)) != 0)
            break;
        dcpi_profset_t **s = realloc(c->sets, (c->nsets + n + 1) * sizeof(*s));
        char **e = s ? realloc(c->epochs, (c->nsets + n + 1) * sizeof(*e)) : NULL;
        if (s)
            c->sets = s;
        if (e)
            c->epochs = e;
        status = s && e ? 0 : 1;
        for (size_t j = 0; j < n && status == 0; j++) {
            char err[DCPI_ERRLEN];
            c->cli.epoch_spec = all ? names[j] : one[0];
            c->cli.epoch[0] = '\0';
            if (dcpi_cli_resolve(&c->cli, err) < 0) {
                if (all)
                    continue; /* an epoch without -platform's profiles */
                fprintf(stderr, "%s\n", err);
                status = 1;
            } else {
                status = load_one(c);
            }
        }
        if (all)
            dcpi_db_free_list(names, n);
    }
    if (status == 0 && c->nsets == 0 && c->noproc[0]) { /* no epoch had the process */
        fprintf(stderr, "%s\n", c->noproc);
        status = 1;
    }
    return status;
}

static int report(ctx_t *c)
{
    char err[DCPI_ERRLEN];
    dcpi_covsel_t s = {.tool = TOOL,
                       .sets = c->sets,
                       .epochs = (const char *const *)c->epochs,
                       .nsets = c->nsets,
                       .event = c->event};
    const char *proc = c->cli.nargs == 2 ? c->cli.args[0] : NULL;
    const char *image = c->cli.args[c->cli.nargs - 1];
    int rc = dcpi_cov_build(&s, proc, image, &c->cv, err);
    if (rc == 0 && dcpi_srclines_open(s.path, &c->sl, NULL) < 0)
        c->sl = NULL; /* no line information: instructions and blocks only */
    if (rc == 0) {
        dcpi_cov_set_lines(&c->cv, c->sl);
        rc = dcpi_cov_compute(&c->cv);
        if (rc < 0)
            snprintf(err, sizeof err, "%s", dcpi_strerror(rc));
    }
    if (rc < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    dcpi_cov_popts_t o = {.image = s.path,
                          .event = s.event_name,
                          .epochs = (const char *const *)c->epochs,
                          .nepochs = c->nsets,
                          .csl = c->csl,
                          .summary = c->summary};
    dcpi_cov_print(&c->cv, &o, stdout);
    return 0;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    ctx_t *c = arg;
    int status = load_sets(c);
    return status ? status : report(c);
}

int main(int argc, char **argv)
{
    ctx.cli = (dcpi_cli_t){.tool = TOOL,
                           .strict_flag = 1,
                           .operands = "[procedure] image",
                           .flags = flags,
                           .process_flags = 1,
                           .fleet_flags = 1};
    dcpi_cli_main_t m = {.check = check, .run = run, .done = ctx_free};
    return dcpi_cli_main(&ctx.cli, argc, argv, &m, &ctx);
}
