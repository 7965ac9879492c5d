/*
 * parts.h - between dcpiweb's files (and its Check suite, check_web): the selection a request's
 * query string carries (query.c), the reply a view builds (views.c, viewsets.c, with the plugins of
 * vtrace.c), the files the server sends (assets.c), the server itself (server.c).
 */
#ifndef DCPI_WEB_PARTS_H
#define DCPI_WEB_PARTS_H

#include <stddef.h>

#include "cli/cli.h"
#include "web/web.h"

/* Longest value of a query parameter (bytes). */
#define DCPI_WEB_VALUE_MAX 1024

/* A request's query string, checked (every value is one of its parameter's forms). */
typedef struct dcpi__web_sel {
    const char *view;                  /* the page's view (procs, images, flame, calls, list,
                                          diff, live); NULL: procs */
    const char *epoch, *diff;          /* the selection's epochs, and the diff's second one */
    const char *platform, *event;      /* NULL: the server's -platform; the busiest event */
    const char *since, *until, *hosts; /* time bounds; fleet hosts (comma-separated) */
    const char *comm;                  /* NULL: every command */
    long pid;                          /* -1: every process */
    const char *proc, *image;          /* a procedure and its image's name (list, calls) */
    const char *vtrace;                /* the plugin that formats the listing's hotlists (NULL:
                                          every one with a value profile of the image) */
    int by_image, by_process;          /* prof.json: dcpiprof -i, -procs; page.json: procs=1
                                          loads the split by process (its processes table) */
    unsigned rows;                     /* top.json: rows of each kind (0: 20) */
} dcpi__web_sel_t;

/* One reply: status, content type, body (malloc'd, may be NULL with len 0). */
typedef struct dcpi__web_reply {
    unsigned status;
    const char *type;
    char *body;
    size_t len;
} dcpi__web_reply_t;

/* Check one query parameter key=value into s. 0, or DCPI_EINVAL with "KEY: reason" in err
 * (unknown parameter, given twice, value of the wrong form). */
int dcpi__web_param(dcpi__web_sel_t *s, const char *key, const char *value, char *err);

/* The reply to a GET of path with selection s: a view's JSON (/api/...), or one of the page's
 * files. Never fails: errors become a reply (400 with one line for a bad request, 404, 500). */
void dcpi__web_route(const dcpi_web_opts_t *o, const char *path, const dcpi__web_sel_t *s,
                     dcpi__web_reply_t *r);

/* A reply of status with the one line "TOOL: msg" (text/plain). */
void dcpi__web_error(dcpi__web_reply_t *r, unsigned status, const char *tool, const char *msg);

/* The selection's profile set through cli/ (as the tools load theirs), after checking that
 * its epochs' directories stay inside the database (no symbolic link out of it). cli is the
 * caller's (dcpi_cli_free after). 0, or a negative DCPI_E* with "TOOL: reason" in err. */
int dcpi__web_load(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, const char *epoch,
                   dcpi_cli_t *cli, dcpi_profset_t **set, char *err);

/* The diff's second selection b of s: a database's epoch (*epoch = s->diff, b without since and
 * until), or on the fleet dcpidiff -fleet's SET "[HOSTS][@SINCE[..UNTIL]]" parsed into buf and
 * b's hosts, since and until (*epoch NULL; those not given: the server's -host, -since,
 * -until, as any selection's). */
#define DCPI_WEB_SETLEN 160
void dcpi__web_diff_sel(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, dcpi__web_sel_t *b,
                        char buf[DCPI_WEB_SETLEN], const char **epoch);

/* The views' JSON on f (0, or a negative DCPI_E* with err). */
int dcpi__web_page_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err);
int dcpi__web_prof_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err);
int dcpi__web_list_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err);
int dcpi__web_diff_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err);
int dcpi__web_top_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err);
int dcpi__web_info_json(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, FILE *f, char *err);

/* The plugins that format the hotlists of image id (web/vtrace.c): s->vtrace, else every one
 * with a value profile of the image in cli's epochs (the fleet's: over the selected hosts),
 * found in o->plugin_dirs. *out (free with dcpi__web_vtrace_free) may be empty. 0, or DCPI_EINVAL
 * when s->vtrace is not one of them, DCPI_ENOMEM, the database's errors. */
int dcpi__web_vtrace(const dcpi_web_opts_t *o, const dcpi__web_sel_t *s, const dcpi_cli_t *cli,
                     const char *id, char ***out, size_t *nout, char *err);
void dcpi__web_vtrace_free(char **v, size_t n);

/* The fleet's cache (web/cache.c): 1 with r filled when the reply to url and s is kept for the
 * store as it is now; else 0 with *key (the request's, or NULL when it is not kept: not the
 * fleet, a time relative to now, the live view) and stamp (the store's now, len bytes) for
 * dcpi__web_cache_put, which takes key and keeps a copy of a 200 reply. */
int dcpi__web_cache_get(const dcpi_web_opts_t *o, const char *url, const dcpi__web_sel_t *s,
                        dcpi__web_reply_t *r, char **key, char *stamp, size_t len);
void dcpi__web_cache_put(char *key, const char *stamp, const dcpi__web_reply_t *r);

/* The page's files: the text of path ("/", "/static/web.js", ...) and its type, or NULL. */
const char *dcpi__web_asset(const char *path, const char **type);

#endif
