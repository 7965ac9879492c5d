/*
 * viewsets.c - dcpiweb's other JSON views (parts.h): dcpidiff -json of two selections (the
 * procedure rows with their significance, as dcpidiff @A @B prints them), one window of the
 * running daemon's live view (dcpitop -json), what the server shows (its database or fleet
 * store and the database's epochs), and the routing of a path to its view or file.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/json.h"
#include "core/daemon/control.h"
#include "core/diff/diff.h"
#include "core/store/epochs.h"
#include "dcpi/errno.h"
#include "web/parts.h"

/* ---- dcpidiff -json ---- */

/* The compared event: s->event, else A's busiest; with samples in both sets. */
static int diff_events(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, dcpi_profset_t *set[2],
                       int ev[2], char *err)
{
    ev[0] = dcpi_profset_pick_event(set[0], s->event, o->tool, s->epoch ? s->epoch : "latest");
    if (ev[0] < 0 || set[0]->nevents == 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: event: set A has no samples%s%s", o->tool,
                          s->event ? " of " : "", s->event ? s->event : "");
    const char *name = set[0]->events[ev[0]].name;
    ev[1] = dcpi_profset_event_index(set[1], name);
    if (ev[1] < 0 || set[1]->events[ev[1]].total == 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: diff: set B has no samples of %s", o->tool, name);
    return 0;
}

static int diff_rows(dcpi_diff_t *d, dcpi_profset_t *set[2], const int ev[2], const char *tool)
{
    const char **ka = calloc(set[0]->nimages + 1, sizeof(*ka));
    const char **kb = calloc(set[1]->nimages + 1, sizeof(*kb));
    int rc = ka && kb ? 0 : DCPI_ENOMEM;
    if (rc == 0) {
        dcpi_diff_image_keys(set[0], set[1], ka, kb);
        rc = dcpi_diff_add_set(d, DCPI_DIFF_A, set[0], ev[0], ka, 0, tool);
    }
    if (rc == 0)
        rc = dcpi_diff_add_set(d, DCPI_DIFF_B, set[1], ev[1], kb, 0, tool);
    if (rc == 0)
        rc = dcpi_diff_finish(d);
    free(ka);
    free(kb);
    return rc;
}

int dcpi__web_diff_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err)
{
    if (!s->diff)
        return dcpi__errf(err, DCPI_EINVAL, "%s: diff: %s", o->tool,
                          o->fleet_url ? "give the hosts and window to compare with "
                                         "(diff=[HOSTS][@SINCE[..UNTIL]])"
                                       : "give the epoch to compare with");
    dcpi_cli_t cli[2];
    dcpi_profset_t *set[2] = {NULL, NULL};
    dcpi__web_sel_t b;
    char buf[DCPI_WEB_SETLEN];
    const char *epoch;
    dcpi__web_diff_sel(o, s, &b, buf, &epoch);
    int ev[2] = {-1, -1}, rc = dcpi__web_load(o, s, s->epoch, &cli[0], &set[0], err);
    memset(&cli[1], 0, sizeof cli[1]);
    if (rc == 0)
        rc = dcpi__web_load(o, &b, epoch, &cli[1], &set[1], err);
    if (rc == 0)
        rc = diff_events(o, s, set, ev, err);
    dcpi_diff_t d = {0};
    if (rc == 0) {
        d.na = set[0]->events[ev[0]].total;
        d.nb = set[1]->events[ev[1]].total;
        if ((rc = diff_rows(&d, set, ev, o->tool)) < 0)
            dcpi__errf(err, rc, "%s: %s", o->tool, dcpi_strerror(rc));
    }
    if (rc == 0) {
        dcpi_diff_popts_t po = {
            .alpha = 0.001, .keep = 100.0, .json = 1, .what = "procedure", .group = "image"};
        dcpi_diff_jside_t js[2];
        for (int k = 0; k < 2; k++)
            js[k] = (dcpi_diff_jside_t){cli[k].db, cli[k].epoch, set[k]->events[ev[k]].total,
                                        k ? d.nb : d.na};
        dcpi_diff_json(&d, &po, set[0]->events[ev[0]].name, js, f);
    }
    dcpi_diff_free(&d);
    for (int k = 0; k < 2; k++) {
        dcpi_profset_free(set[k]);
        dcpi_cli_free(&cli[k]);
    }
    return rc;
}

/* ---- dcpitop -json, the server's description ---- */

/* The platform of the daemon or the epochs: the selection's, -platform, else the host's. */
static int platform_of(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, char *out, char *err)
{
    const char *p = s->platform ? s->platform : o->platform;
    if (p) {
        snprintf(out, DCPI_NAMELEN, "%s", p);
        return 0;
    }
    int rc = dcpi_db_platform(o->db, out, err);
    if (rc < 0) {
        char why[DCPI_ERRLEN];
        snprintf(why, sizeof why, "%s", err);
        dcpi__errf(err, rc, "%s: %s", o->tool, why);
    }
    return rc;
}

int dcpi__web_top_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err)
{
    char platform[DCPI_NAMELEN], why[DCPI_ERRLEN];
    if (o->fleet_url)
        return dcpi__errf(err, DCPI_EINVAL, "%s: live: the live view is a database's daemon's",
                          o->tool);
    int rc = platform_of(o, s, platform, err);
    dcpi_top_opts_t to = {
        .rows = s->rows ? s->rows : 20, .pid = s->pid > 0 ? (int)s->pid : 0, .comm = s->comm};
    if (rc == 0 && (rc = dcpi_control_top_json(o->db, platform, &to, f, err)) < 0) {
        snprintf(why, sizeof why, "%s", err);
        dcpi__errf(err, rc, "%s: %s", o->tool, why);
    }
    return rc;
}

static void info_epochs(const dcpi_web_opts_t *o, const char *platform, FILE *f)
{
    dcpi_epoch_info_t *v = NULL;
    size_t n = 0;
    char err[DCPI_ERRLEN];
    fputs(",\"epochs\":[", f);
    if (dcpi_epoch_list(o->db, platform, &v, &n, err) < 0)
        n = 0;
    for (size_t i = 0; i < n; i++) {
        fputs(i ? "," : "", f);
        dcpi__json_str(f, v[i].name);
    }
    fputc(']', f);
    free(v);
}

int dcpi__web_info_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err)
{
    (void)err;
    fputs("{\"tool\":", f);
    dcpi__json_str(f, o->tool);
    fputs(",\"source\":", f);
    dcpi__json_str(f, o->fleet_url ? "fleet" : "db");
    fputs(",\"name\":", f);
    dcpi__json_str(f, o->fleet_url ? o->fleet_url : o->db);
    fputs(",\"platform\":", f);
    dcpi__json_str(f, s->platform ? s->platform : o->platform);
    if (!o->fleet_url)
        info_epochs(o, s->platform ? s->platform : o->platform, f);
    fputs("}\n", f);
    return 0;
}

/* ---- routing ---- */

typedef int (*view_fn)(const dcpi_web_opts_t *, const dcpi__web_sel_t *, FILE *, char *);

static const struct route {
    const char *path;
    view_fn fn;
} routes[] = {
    {"/api/page.json", dcpi__web_page_json}, {"/api/prof.json", dcpi__web_prof_json},
    {"/api/list.json", dcpi__web_list_json}, {"/api/diff.json", dcpi__web_diff_json},
    {"/api/top.json", dcpi__web_top_json},   {"/api/info.json", dcpi__web_info_json},
};

void dcpi__web_error(dcpi__web_reply_t *r, unsigned status, const char *tool, const char *msg)
{
    free(r->body);
    *r = (dcpi__web_reply_t){.status = status, .type = "text/plain; charset=utf-8"};
    size_t n = strlen(tool);
    int named = strncmp(msg, tool, n) == 0 && msg[n] == ':';
    r->body = NULL;
    if (asprintf(&r->body, "%s%s%s\n", named ? "" : tool, named ? "" : ": ", msg) < 0)
        r->body = NULL;
    r->len = r->body ? strlen(r->body) : 0;
}

static unsigned status_of(int rc)
{
    return rc == DCPI_EINVAL || rc == DCPI_ENOENT ? 400 : rc == DCPI_ENOMEM ? 500 : 500;
}

static void run_view(const dcpi_web_opts_t *o, view_fn fn, const dcpi__web_sel_t *s,
                     dcpi__web_reply_t *r)
{
    char err[DCPI_ERRLEN] = "";
    FILE *m = open_memstream(&r->body, &r->len);
    if (!m) {
        dcpi__web_error(r, 500, o->tool, "out of memory");
        return;
    }
    int rc = fn(o, s, m, err);
    fclose(m);
    if (rc < 0) {
        /* live: no daemon is a service not there, not a bad request */
        unsigned st = fn == dcpi__web_top_json && rc == DCPI_ENOENT ? 503 : status_of(rc);
        dcpi__web_error(r, st, o->tool, err[0] ? err : dcpi_strerror(rc));
        return;
    }
    r->status = 200;
    r->type = "application/json";
}

void dcpi__web_route(const dcpi_web_opts_t *o, const char *path, const dcpi__web_sel_t *s,
                     dcpi__web_reply_t *r)
{
    *r = (dcpi__web_reply_t){0};
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (strcmp(path, routes[i].path) == 0) {
            run_view(o, routes[i].fn, s, r);
            return;
        }
    const char *type = NULL, *text = dcpi__web_asset(path, &type);
    if (!text) {
        dcpi__web_error(r, 404, o->tool, "no such page (try /)");
        return;
    }
    r->status = 200;
    r->type = type;
    r->body = strdup(text);
    r->len = r->body ? strlen(r->body) : 0;
    if (!r->body)
        dcpi__web_error(r, 500, o->tool, "out of memory");
}
