/*
 * vtrace.c - which plugins format a listing's value hotlists in dcpiweb (parts.h): those whose
 * value profile the image has in the selected epochs (its <plugin>.vprof files) and that are
 * found in the program's plugin directories, or the one the query string names among them.
 * Only names the database holds are loaded, and only from the plugin directories (never from
 * the current directory, $DCPI_PLUGIN_PATH aside): a request cannot make the server load code
 * of its choosing.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/fleet/query.h"
#include "core/plugin/vploader.h"
#include "core/store/db.h"
#include "dcpi/errno.h"
#include "web/parts.h"

/* 1 when the plugin name resolves to a file in one of dirs. */
static int in_dirs(const char *name, const char *const *dirs)
{
    char path[4096];
    if (!dirs || dcpi_vp_resolve(name, path, sizeof path) < 0)
        return 0;
    for (size_t i = 0; dirs[i]; i++) {
        size_t n = strlen(dirs[i]);
        if (n && strncmp(path, dirs[i], n) == 0 && path[n] == '/')
            return 1;
    }
    return 0;
}

/* Add name to v (n entries) unless it is there. 0 or DCPI_ENOMEM. */
static int add_name(char ***v, size_t *n, const char *name)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], name) == 0)
            return 0;
    char **nv = realloc(*v, (*n + 1) * sizeof(**v));
    if (!nv)
        return DCPI_ENOMEM;
    *v = nv;
    if (!(nv[*n] = strdup(name)))
        return DCPI_ENOMEM;
    (*n)++;
    return 0;
}

/* The plugin names of id's .vprof files in cli's epochs. */
static int names_of(const dcpi_cli_t *cli, const char *id, char ***v, size_t *n, char *err)
{
    dcpi_db_file_t *files = NULL;
    size_t nf = 0;
    int rc = dcpi_db_list_files_epochs(cli->db, (const char *const *)cli->epochs, cli->nepochs,
                                       cli->platform, ".vprof", &files, &nf, err);
    size_t idlen = strlen(id);
    for (size_t i = 0; rc == 0 && i < nf; i++) {
        const char *d = files[i].imagedir, *us = strrchr(d, '_');
        if (!us || strlen(us + 1) != idlen || strcmp(us + 1, id) != 0)
            continue;
        char name[DCPI_NAMELEN];
        snprintf(name, sizeof name, "%s", files[i].file);
        char *dot = strrchr(name, '.');
        if (dot)
            *dot = '\0';
        rc = add_name(v, n, name);
    }
    free(files);
    return rc;
}

/* The fleet's: the plugins of the image's value profiles over the selected hosts. */
static int names_of_fleet(const dcpi_web_opts_t *o, const dcpi_cli_t *cli, const char *id,
                          char ***v, size_t *n, char *err)
{
    dcpi_fleet_filter_t flt;
    char **names = NULL;
    dcpi_vprof_t **vps = NULL;
    size_t nv = 0;
    int rc = dcpi_cli_fleet_filter(cli, &flt, err);
    if (rc == 0)
        rc = dcpi_fleet_vprofs(o->fleet_url, &flt, id, &names, &vps, &nv, err);
    for (size_t i = 0; i < nv; i++) {
        if (rc == 0)
            rc = add_name(v, n, names[i]);
        free(names[i]);
        dcpi_vprof_free(vps[i]);
    }
    free(names);
    free(vps);
    return rc;
}

void dcpi__web_vtrace_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

int dcpi__web_vtrace(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, const dcpi_cli_t *cli,
                     const char *id, char ***out, size_t *nout, char *err)
{
    char **v = NULL;
    size_t n = 0, k = 0;
    *out = NULL;
    *nout = 0;
    int rc =
        o->fleet_url ? names_of_fleet(o, cli, id, &v, &n, err) : names_of(cli, id, &v, &n, err);
    if (rc < 0) {
        dcpi__web_vtrace_free(v, n);
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if ((s->vtrace && strcmp(v[i], s->vtrace) != 0) || !in_dirs(v[i], o->plugin_dirs))
            free(v[i]);
        else
            v[k++] = v[i];
    }
    if (s->vtrace && k == 0) {
        dcpi__web_vtrace_free(v, k);
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: vtrace: no value profile '%s' of the image with its plugin here",
                          o->tool, s->vtrace);
    }
    *out = v;
    *nout = k;
    return 0;
}
