/*
 * views.c - dcpiweb's views of one selection as JSON (parts.h): the selection's profile set
 * loaded through cli/ as the tools load theirs (after checking that no symbolic link leads out
 * of the database), the page's document (dcpireport's JSON, core/report), and the JSON of
 * dcpiprof -json and dcpilist -json -vprof on the same selection, written by the same library
 * functions those tools call.
 */
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/listing/listsel.h"
#include "core/model/procs.h"
#include "core/report/report.h"
#include "dcpi/errno.h"
#include "web/parts.h"

/* ---- loading, inside the database ---- */

static __thread char walk_root[PATH_MAX]; /* realpath of the database, with its '/' */
static __thread char walk_bad[PATH_MAX];

static int inside(const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return 1; /* a dangling link leads nowhere: the readers fail on it as on a missing file */
    size_t n = strlen(walk_root);
    return strncmp(real, walk_root, n) == 0 ||
           (strncmp(real, walk_root, n - 1) == 0 && !real[n - 1]);
}

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_SL && !inside(path)) {
        snprintf(walk_bad, sizeof walk_bad, "%s", path);
        return 1;
    }
    return 0;
}

/* Every entry under DB/<epoch> (links not followed): none may be a link out of db. */
static int check_inside(const char *db, char **epochs, size_t n, const char *tool, char *err)
{
    char dir[PATH_MAX + 64];
    if (!realpath(db, walk_root) || strlen(walk_root) + 2 > sizeof walk_root)
        return dcpi__errf(err, DCPI_ENOENT, "%s: %s: no such database directory", tool, db);
    strcat(walk_root, "/");
    for (size_t k = 0; k < n; k++) {
        snprintf(dir, sizeof dir, "%s/%s", db, epochs[k]);
        if (!inside(dir))
            return dcpi__errf(err, DCPI_EINVAL, "%s: epoch %s leads out of the database", tool,
                              epochs[k]);
        if (nftw(dir, walk_one, 16, FTW_PHYS) == 1)
            return dcpi__errf(err, DCPI_EINVAL, "%s: %s leads out of the database", tool,
                              walk_bad + strlen(db) + 1);
    }
    return 0;
}

int dcpi__web_load(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, const char *epoch,
                   dcpi_cli_t *cli, dcpi_profset_t **set, char *err)
{
    *cli = (dcpi_cli_t){.tool = o->tool,
                        .multi_epoch = 1,
                        .fleet_flags = 1,
                        /* the split by process only where a view shows it (the fleet
                         * groups by pid and comm then: several times slower) */
                        .load_flags =
                            s->by_process ? DCPI_PSET_LOAD_PROCS | DCPI_PSET_LOAD_PROCS_TOTALS : 0,
                        .db_arg = o->db,
                        .fleet_url = o->fleet_url,
                        .epoch_spec = epoch,
                        .platform = s->platform ? s->platform : o->platform,
                        .procsel = {.pid = s->pid, .comm = s->comm},
                        .hosts = s->hosts ? s->hosts : o->hosts,
                        .since_arg = s->since ? s->since : o->since,
                        .until_arg = s->until ? s->until : o->until};
    *set = NULL;
    if (o->fleet_url && epoch)
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: epoch: the fleet store is selected by since, "
                          "until and hosts",
                          o->tool);
    int rc = o->fleet_url ? 0 : dcpi_cli_resolve(cli, err);
    if (rc == 0 && !o->fleet_url)
        rc = check_inside(cli->db, cli->epochs, cli->nepochs, o->tool, err);
    if (rc == 0)
        rc = dcpi_cli_load(cli, set, err);
    return rc;
}

/* ---- the page's document ---- */

/* The image of set named name (the page's image names), or NULL. */
static const dcpi_profset_image_t *image_named(const dcpi_profset_t *set, const char *name)
{
    for (size_t i = 0; name && i < set->nimages; i++)
        if (strcmp(set->images[i].name, name) == 0)
            return &set->images[i];
    return NULL;
}

typedef struct page {
    dcpi_cli_t cli, bcli;
    dcpi_profset_t *set, *bset;
    dcpi_fleet_filter_t flt;
    dcpi_fleet_source_t src;
    dcpi_report_opts_t ro;
    char **vtrace;
    size_t nvtrace;
} page_t;

static void page_free(page_t *p)
{
    dcpi__web_vtrace_free(p->vtrace, p->nvtrace);
    dcpi_profset_free(p->bset);
    dcpi_profset_free(p->set);
    dcpi_cli_free(&p->bcli);
    dcpi_cli_free(&p->cli);
}

/* The report's options for the set of p (as dcpireport sets them). */
static int page_opts(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, page_t *p, char *err)
{
    p->ro = (dcpi_report_opts_t){.tool = o->tool,
                                 .db = p->cli.db,
                                 .epoch = p->cli.epoch,
                                 .platform = p->cli.platform,
                                 .epochs = (const char *const *)p->cli.epochs,
                                 .nepochs = o->fleet_url ? 0 : p->cli.nepochs,
                                 .sort_event = s->event,
                                 .top = s->proc ? 1 : 0,
                                 .only_proc = s->proc,
                                 .only_image = s->image,
                                 .flame_min = DCPI_REPORT_FLAME_MIN_DEFAULT,
                                 .vo = {.show = 3, .cutoff = 5.0},
                                 .plugin_dirs = o->plugin_dirs,
                                 .diff_set = p->bset,
                                 .diff_epoch = !p->bset       ? NULL
                                               : o->fleet_url ? s->diff
                                                              : p->bcli.epoch};
    const dcpi_profset_image_t *img = image_named(p->set, s->image);
    int rc = img ? dcpi__web_vtrace(o, s, &p->cli, img->id, &p->vtrace, &p->nvtrace, err) : 0;
    p->ro.vtrace = (const char *const *)p->vtrace;
    p->ro.nvtrace = p->nvtrace;
    if (!o->fleet_url || rc < 0)
        return rc;
    rc = dcpi_cli_fleet_filter(&p->cli, &p->flt, err);
    p->src = (dcpi_fleet_source_t){.url = o->fleet_url, .flt = &p->flt};
    p->ro.stacks = dcpi_fleet_source_stacks;
    p->ro.vprofs = dcpi_fleet_source_vprofs;
    p->ro.source_arg = &p->src;
    return rc;
}

void dcpi__web_diff_sel(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, dcpi__web_sel_t *b,
                        char buf[DCPI_WEB_SETLEN], const char **epoch)
{
    *b = *s;
    b->diff = NULL;
    b->since = b->until = NULL; /* a database's: they select the first set's epochs */
    *epoch = s->diff;
    if (!o->fleet_url || !s->diff)
        return;
    *epoch = NULL;
    snprintf(buf, DCPI_WEB_SETLEN, "%s", s->diff);
    char *at = strchr(buf, '@');
    if (at) {
        *at = '\0';
        char *dots = strstr(at + 1, "..");
        if (dots)
            *dots = '\0';
        b->since = at[1] ? at + 1 : NULL;
        b->until = dots && dots[2] ? dots + 2 : NULL;
    }
    b->hosts = buf[0] ? buf : NULL;
}

int dcpi__web_page_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err)
{
    page_t p = {0};
    int rc = dcpi__web_load(o, s, s->epoch, &p.cli, &p.set, err);
    if (rc == 0 && s->diff) {
        dcpi__web_sel_t b;
        char buf[DCPI_WEB_SETLEN];
        const char *epoch;
        dcpi__web_diff_sel(o, s, &b, buf, &epoch);
        rc = dcpi__web_load(o, &b, epoch, &p.bcli, &p.bset, err);
    }
    if (rc == 0)
        rc = page_opts(o, s, &p, err);
    if (rc == 0 && (rc = dcpi_report_write_json(p.set, &p.ro, f, err)) < 0 && !err[0])
        dcpi__errf(err, rc, "%s: event %s: no samples of it", o->tool, s->event ? s->event : "");
    else if (rc < 0 && err[0] && strncmp(err, o->tool, strlen(o->tool)) != 0)
        dcpi_cli_prefix_err(&p.cli, err);
    page_free(&p);
    return rc;
}

/* ---- dcpiprof -json ---- */

int dcpi__web_prof_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err)
{
    dcpi_cli_t cli;
    dcpi_profset_t *set = NULL;
    int rc = dcpi__web_load(o, s, s->epoch, &cli, &set, err);
    dcpi_fleet_filter_t flt;
    dcpi_fleet_source_t fc = {.url = o->fleet_url, .flt = &flt};
    dcpi_procs_opts_t po = {.tool = o->tool,
                            .keep = 100.0,
                            .by_image = s->by_image,
                            .by_process = s->by_process,
                            .sort_event = s->event,
                            .no_children = s->pid >= 0 || s->comm,
                            .db = cli.db,
                            .epoch = cli.epoch,
                            .platform = cli.platform,
                            .epochs = (const char *const *)cli.epochs,
                            .nepochs = o->fleet_url ? 0 : cli.nepochs};
    if (rc == 0 && o->fleet_url && (rc = dcpi_cli_fleet_filter(&cli, &flt, err)) == 0) {
        po.stacks = dcpi_fleet_source_stacks;
        po.stacks_arg = &fc;
    }
    if (rc == 0 && dcpi_procs_json(set, &po, po.epochs, po.nepochs, f) < 0)
        rc = dcpi__errf(err, DCPI_EINVAL, "%s: event %s: no samples of it", o->tool,
                        s->event ? s->event : "?");
    dcpi_profset_free(set);
    dcpi_cli_free(&cli);
    return rc;
}

/* ---- dcpilist -json -vprof ---- */

/* The listing's value profiles: the database's, or the fleet's merged over its hosts. */
static int list_values(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, dcpi_cli_t *cli,
                       dcpi_lstsel_t *ls, char *err)
{
    if (!o->fleet_url) {
        char **v = NULL;
        size_t n = 0;
        int rc = dcpi__web_vtrace(o, s, cli, ls->info.id, &v, &n, err);
        if (rc == 0)
            rc = dcpi_lstsel_values(ls, o->plugin_dirs, (const char *const *)v, n, 0, err);
        dcpi__web_vtrace_free(v, n);
        return rc;
    }
    dcpi_fleet_filter_t flt;
    char **names = NULL;
    dcpi_vprof_t **vps = NULL;
    size_t n = 0;
    int rc = dcpi_cli_fleet_filter(cli, &flt, err);
    char **use = NULL;
    size_t nuse = 0;
    if (rc == 0)
        rc = dcpi__web_vtrace(o, s, cli, ls->info.id, &use, &nuse, err);
    if (rc == 0)
        rc = dcpi_fleet_vprofs(o->fleet_url, &flt, ls->info.id, &names, &vps, &n, err);
    if (rc == 0)
        rc = dcpi_lstsel_values_given(ls, o->plugin_dirs, (const char *const *)use, nuse, 0, names,
                                      vps, n, err);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free(vps);
    dcpi__web_vtrace_free(use, nuse);
    return rc;
}

static int list_build(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, dcpi_cli_t *cli,
                      dcpi_lstsel_t *ls, char *err)
{
    const dcpi_profset_image_t *img = image_named(ls->set, s->image);
    if (!s->proc || !img)
        return dcpi__errf(err, DCPI_EINVAL, "%s: %s", o->tool,
                          !s->proc ? "proc: give the procedure to list"
                                   : "image: give the name of an image of the selection");
    int rc = dcpi_lstsel_open(ls, s->proc, img->path, NULL, err);
    if (rc == 0)
        rc = list_values(o, s, cli, ls, err);
    if (rc == 0)
        rc = dcpi_lstsel_build(ls, err);
    dcpi_lst_vopts_t vo = {.show = 3, .cutoff = 5.0};
    if (rc == 0)
        rc = dcpi_listing_prepare_values(ls->ls, &vo, err);
    return rc;
}

int dcpi__web_list_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err)
{
    dcpi_cli_t cli;
    dcpi_profset_t *set = NULL;
    dcpi_lstsel_t ls = {0};
    int rc = dcpi__web_load(o, s, s->epoch, &cli, &set, err);
    ls = (dcpi_lstsel_t){.tool = o->tool,
                         .set = set,
                         .db = cli.db,
                         .epoch = cli.epoch,
                         .epochs = (const char *const *)cli.epochs,
                         .nepochs = o->fleet_url ? 0 : cli.nepochs,
                         .platform = cli.platform};
    if (rc == 0)
        rc = list_build(o, s, &cli, &ls, err);
    if (rc == 0)
        rc = dcpi_lstsel_json(&ls, 1, f, err);
    if (rc < 0 && err[0] && strncmp(err, o->tool, strlen(o->tool)) != 0)
        dcpi_cli_prefix_err(&cli, err);
    dcpi_lstsel_free(&ls);
    dcpi_profset_free(set);
    dcpi_cli_free(&cli);
    return rc;
}
