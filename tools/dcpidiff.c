/*
 * dcpidiff - what changed between two profile sets (two epochs of one database, two databases,
 * or two builds of one program), by image (-i), procedure (default), source line (-source) or
 * instruction (-asm) of one procedure, or value of its instructions' hotlists (-vprof); each
 * difference of shares with its significance against the sampling noise (docs/dcpidiff.md).
 * The flags and the two sets are read here; the comparison is core/diff/diff.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/diff/diff.h"
#include "core/plugin/vploader.h"
#include "dcpi/errno.h"

#define TOOL "dcpidiff"

typedef struct opts {
    int by_image;
    enum dcpi_diff_view view;
    const char *proc; /* NULL: a view of whole sets */
    const char *vpname;
    int within;
    const char *event;
    dcpi_diff_popts_t p;
} opts_t;

static opts_t opts = {.p = {.alpha = 0.001, .keep = 100.0}};

static int bad_number(const char *flag, const char *what, const char *v)
{
    fprintf(stderr, TOOL ": %s wants %s, not '%s'\n", flag, what, v);
    return 2;
}

static int set_view(enum dcpi_diff_view v, const char *proc)
{
    if (opts.proc) {
        fprintf(stderr, TOOL ": -source, -asm and -vprof exclude each other\n");
        return 2;
    }
    opts.view = v;
    opts.proc = proc;
    return 0;
}

static int set_source(void *dst, const char *v)
{
    return set_view(DCPI_DIFF_SOURCE, v);
}

static int set_asm(void *dst, const char *v)
{
    return set_view(DCPI_DIFF_ASM, v);
}

static int set_vprof(void *dst, const char *v)
{
    return set_view(DCPI_DIFF_VPROF, v);
}

static int set_threshold(void *dst, const char *v)
{
    if (dcpi_cli_number(v, 0.0, 1.0, dst) < 0 || *(double *)dst <= 0.0)
        return bad_number("-threshold", "a significance level above 0 and at most 1", v);
    return 0;
}

static int set_keep(void *dst, const char *v)
{
    if (dcpi_cli_number(v, 0.0, 100.0, dst) < 0)
        return bad_number("-keep", "a percentage from 0 to 100", v);
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_BOOL("-i", &opts.by_image, "one row per image instead of per procedure"),
    DCPI_OPT_CALL("-source", "PROC", set_source, NULL,
                  "one row per source line of procedure PROC (one image operand)"),
    DCPI_OPT_CALL("-asm", "PROC", set_asm, NULL,
                  "one row per instruction of PROC (same build in both sets)"),
    DCPI_OPT_CALL("-vprof", "PROC", set_vprof, NULL,
                  "one row per value of PROC's value hotlists (same build in both sets)"),
    DCPI_OPT_STR("-vtrace", "NAME", &opts.vpname,
                 "-vprof: only the value profile NAME (e.g. vp-classic)"),
    DCPI_OPT_BOOL("-within", &opts.within,
                  "-source/-asm: shares of the procedure's samples, not of the set's"),
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &opts.event,
                   "compare EVENT (default: the event with the most samples in set A)"),
    DCPI_OPT_CALL("-threshold", "P", set_threshold, &opts.p.alpha,
                  "significance level of the adjusted p-values (default 0.001)"),
    DCPI_OPT_BOOL("-all", &opts.p.all, "print the rows within the noise too"),
    DCPI_OPT_CALL("-keep", "PCT", set_keep, &opts.p.keep,
                  "print rows until they hold PCT % of the sum of the absolute differences"),
    DCPI_OPT_BOOL("-csl", &opts.p.csl,
                  "comma-separated output: a line of column names, then one line per row"),
    DCPI_OPT_BOOL("-json", &opts.p.json, "one JSON object (schema dcpidiff/1, see dcpidiff(1))"),
    DCPI_OPT_BOOL("-wide", &opts.p.wide, "print long names whole (they are cut to 50 columns)"),
    DCPI_OPT_END,
};

/* The operands and the flags that go together; what a row is. */
static int check(dcpi_cli_t *cli, void *arg)
{
    opts_t *o = arg;
    if (cli->nargs < 2) {
        fprintf(stderr, TOOL ": expected two sets, SET_A SET_B (try -h)\n");
        return 2;
    }
    if (o->proc && (cli->nargs != 3 || o->by_image)) {
        fprintf(stderr, TOOL ": -source, -asm and -vprof take one image operand after the sets, "
                             "and no -i\n");
        return 2;
    }
    if ((o->vpname && o->view != DCPI_DIFF_VPROF) || (o->within && !o->proc)) {
        fprintf(stderr, TOOL ": %s\n",
                o->vpname ? "-vtrace goes with -vprof" : "-within goes with -source or -asm");
        return 2;
    }
    o->p.what = o->by_image ? "image" : "procedure";
    o->p.group = o->by_image ? NULL : "image";
    if (o->proc) {
        const char *what[] = {"line", "instruction", "value"};
        o->p.what = what[o->view];
        o->p.group = o->view == DCPI_DIFF_VPROF ? "instruction" : NULL;
    }
    return 0;
}

/* ---- the two sets ---- */

typedef struct side {
    const char *label; /* "A" or "B" */
    char *spec;        /* the operand, copied (split at '@') */
    dcpi_cli_t cli;    /* the shared flags with this set's -db and -epoch */
    dcpi_profset_t *set;
    int event;
} side_t;

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* With -fleet, SET is [HOSTS][@SINCE[..UNTIL]][#BUILDID]: comma-separated hosts (none: all),
 * a time window (-since/-until's forms) and one build-id of an image (two builds of a program). */
static void fleet_side(side_t *s)
{
    char *hash = strrchr(s->spec, '#'), *at = strchr(s->spec, '@');
    if (hash) {
        *hash = '\0';
        s->cli.build_id = hash[1] ? hash + 1 : NULL;
    }
    if (at) {
        *at = '\0';
        char *dots = strstr(at + 1, "..");
        if (dots)
            *dots = '\0';
        s->cli.since_arg = at[1] ? at + 1 : NULL;
        s->cli.until_arg = dots && dots[2] ? dots + 2 : NULL;
    }
    s->cli.hosts = s->spec[0] ? s->spec : NULL;
}

/* SET is DB, DB@EPOCH or @EPOCH (the database of -db, $DCPIDB or ./dcpidb); a DB alone is read
 * at -epoch (default latest). */
static int load_side(side_t *s, const dcpi_cli_t *cli, const char *arg)
{
    char err[DCPI_ERRLEN] = "";
    s->cli = *cli;
    s->cli.db[0] = s->cli.epoch[0] = '\0';
    s->cli.epochs = NULL; /* this set's own epoch list, freed by run() */
    s->cli.nepochs = 0;
    if (!(s->spec = strdup(arg)))
        return 1;
    if (cli->fleet_url)
        fleet_side(s);
    char *at = cli->fleet_url || is_dir(s->spec) ? NULL : strrchr(s->spec, '@');
    if (at) {
        *at = '\0';
        s->cli.epoch_spec = at[1] ? at + 1 : NULL;
    }
    if (s->spec[0] && !cli->fleet_url) {
        s->cli.db_arg = s->spec;
        s->cli.db_from = s->label[0] == 'A' ? "SET_A" : "SET_B";
    }
    int rc = dcpi_cli_load(&s->cli, &s->set, err);
    if (rc < 0) {
        fprintf(stderr, "%s (set %s, '%s')\n", err, s->label, arg);
        return 1;
    }
    return 0;
}

/* The compared event: -s, else the one with the most samples in A; it must be in both. */
static int pick_event(side_t sd[2], const opts_t *o)
{
    sd[0].event = dcpi_profset_pick_event(sd[0].set, o->event, TOOL, sd[0].cli.epoch);
    if (sd[0].event < 0)
        return 1;
    if (sd[0].set->nevents == 0) {
        fprintf(stderr, TOOL ": set A (%s, epoch %s) has no samples\n", sd[0].cli.db,
                sd[0].cli.epoch);
        return 1;
    }
    const char *name = sd[0].set->events[sd[0].event].name;
    sd[1].event = dcpi_profset_event_index(sd[1].set, name);
    for (int k = 0; k < 2; k++) {
        if (sd[k].event < 0 || sd[k].set->events[sd[k].event].total == 0) {
            fprintf(stderr, TOOL ": set %s (%s, epoch %s) has no samples of %s\n", sd[k].label,
                    sd[k].cli.db, sd[k].cli.epoch, name);
            return 1;
        }
    }
    return 0;
}

static void print_sets(const side_t sd[2], const dcpi_diff_t *d, const opts_t *o, size_t nrows)
{
    const char *ev = sd[0].set->events[sd[0].event].name;
    for (int k = 0; k < 2; k++) {
        uint64_t tot = sd[k].set->events[sd[k].event].total;
        fprintf(stdout, "set %s: %s epoch %s: %llu samples of %s", sd[k].label, sd[k].cli.db,
                sd[k].cli.epoch, (unsigned long long)tot, ev);
        if (o->proc && o->view != DCPI_DIFF_VPROF)
            fprintf(stdout, " (shares of %llu%s)", (unsigned long long)(k ? d->nb : d->na),
                    o->within ? " in the procedure" : "");
        fputc('\n', stdout);
    }
    fprintf(stdout,
            "test: exact conditional binomial test of two Poisson rates, Benjamini-Hochberg over "
            "%zu row%s, level %g\n\n",
            nrows, nrows == 1 ? "" : "s", o->p.alpha);
}

/* Build, finish and print the comparison. Returns the exit status. */
static int compare(side_t sd[2], const dcpi_cli_t *cli, const opts_t *o)
{
    dcpi_diff_t d = {.na = sd[0].set->events[sd[0].event].total,
                     .nb = sd[1].set->events[sd[1].event].total};
    int rc = 0;
    char err[DCPI_ERRLEN] = "";
    if (o->proc) {
        const char *const *dirs =
            dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
        dcpi_diff_proc_t po = {.tool = TOOL,
                               .view = o->view,
                               .proc = o->proc,
                               .image = cli->args[2],
                               .within = o->within,
                               .vpname = o->vpname,
                               .plugin_dirs = dirs};
        dcpi_diff_set_t ds[2];
        for (int k = 0; k < 2; k++)
            ds[k] = (dcpi_diff_set_t){sd[k].set, sd[k].cli.db, sd[k].cli.epoch, cli->platform,
                                      sd[k].event};
        rc = dcpi_diff_add_proc(&d, &po, ds, err);
    } else {
        const char **ka = calloc(sd[0].set->nimages + 1, sizeof(*ka));
        const char **kb = calloc(sd[1].set->nimages + 1, sizeof(*kb));
        rc = ka && kb ? 0 : DCPI_ENOMEM;
        if (rc == 0) {
            dcpi_diff_image_keys(sd[0].set, sd[1].set, ka, kb);
            rc = dcpi_diff_add_set(&d, DCPI_DIFF_A, sd[0].set, sd[0].event, ka, o->by_image, TOOL);
        }
        if (rc == 0)
            rc = dcpi_diff_add_set(&d, DCPI_DIFF_B, sd[1].set, sd[1].event, kb, o->by_image, TOOL);
        free(ka);
        free(kb);
    }
    if (rc == 0)
        rc = dcpi_diff_finish(&d);
    if (rc == 0 && o->p.json) {
        dcpi_diff_jside_t js[2];
        for (int k = 0; k < 2; k++)
            js[k] = (dcpi_diff_jside_t){sd[k].cli.db, sd[k].cli.epoch,
                                        sd[k].set->events[sd[k].event].total, k ? d.nb : d.na};
        dcpi_diff_json(&d, &o->p, sd[0].set->events[sd[0].event].name, js, stdout);
    } else if (rc == 0) {
        if (!o->p.csl)
            print_sets(sd, &d, o, d.n);
        dcpi_diff_print(&d, &o->p, stdout);
    } else {
        fprintf(stderr, TOOL ": %s\n", err[0] ? err : dcpi_strerror(rc));
    }
    dcpi_diff_free(&d);
    return rc < 0 ? 1 : fflush(stdout) == 0 ? 0 : 1;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    const opts_t *o = arg;
    side_t sd[2] = {{.label = "A"}, {.label = "B"}};
    int status = load_side(&sd[0], cli, cli->args[0]);
    if (status == 0)
        status = load_side(&sd[1], cli, cli->args[1]);
    /* image operands restrict both sets (shares are then of those images' samples); -source,
     * -asm and -vprof find their image themselves */
    for (int k = 0; k < 2 && status == 0 && !o->proc; k++)
        if (cli->nargs > 2 && dcpi_profset_select(sd[k].set, cli->args + 2, (size_t)cli->nargs - 2,
                                                  TOOL, sd[k].cli.epoch) < 0)
            status = 1;
    for (int k = 0; k < 2 && status == 0; k++)
        dcpi_profset_warn_saturated(sd[k].set, TOOL);
    if (status == 0)
        status = pick_event(sd, o);
    if (status == 0)
        status = compare(sd, cli, o);
    for (int k = 0; k < 2; k++) {
        dcpi_profset_free(sd[k].set);
        dcpi_db_free_list(sd[k].cli.epochs, sd[k].cli.nepochs);
        free(sd[k].spec);
    }
    return status;
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = TOOL,
                      .strict_flag = 1,
                      .operands = "SET_A SET_B [image-names...]   (SET: DB, DB@EPOCH or @EPOCH; "
                                  "with -fleet: [HOSTS][@SINCE[..UNTIL]][#BUILDID])",
                      .flags = flags,
                      .process_flags = 1,
                      .fleet_flags = 1};
    return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.check = check, .run = run}, &opts);
}
