/*
 * report.h - dcpireport's page (docs/dcpireport.md): one self-contained HTML file showing an
 * epoch's profile set as dcpiprof shows it (by image and by procedure, with the loss warning),
 * a flame graph of the stack profile of the sort event (dcpid -g), annotated listings of the
 * hottest procedures (source lines and instructions with their samples and, with value
 * profiles, the hotlists dcpilist -vprof prints, formatted by their plugins), and with a second
 * set the procedures whose share changed (dcpidiff's rows).
 *
 * The data goes into the page as one JSON document in a <script type="application/json">
 * block ('<', '>', '&' written as \u003c, \u003e, \u0026, so no text can end the block);
 * the page's own inline script (no library, no network: a Content-Security-Policy of
 * default-src 'none' forbids every fetch) renders it, setting every text with textContent.
 * report.c writes the document, reportjson.c the JSON strings, reportflame.c the flame
 * graph, reportlist.c the listings, reportpage.c the HTML, CSS and script around it.
 *
 * Messages go to stderr as "TOOL: reason" (warnings that do not stop the page); errors that do
 * are one line in err (DCPI_ERRLEN), without the tool's name.
 */
#ifndef DCPI_CORE_REPORT_REPORT_H
#define DCPI_CORE_REPORT_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/listing/listing.h"
#include "core/model/procs.h"
#include "core/model/profset.h"
#include "core/store/stackprof.h"
#include "core/store/vprof.h"

struct dcpi_symtab;

/* Annotated listings by default; frames under this % of the samples left out by default. */
#define DCPI_REPORT_TOP_DEFAULT       10
#define DCPI_REPORT_FLAME_MIN_DEFAULT 0.1
/* A listing of a longer procedure keeps only its instructions with samples or values. */
#define DCPI_REPORT_INSNS_MAX 4000
/* Procedure rows the page holds at most (the rest summed in one line). */
#define DCPI_REPORT_ROWS_MAX 20000

typedef struct dcpi_report_opts {
    const char *tool;                  /* the name in front of warnings */
    const char *db, *epoch, *platform; /* the set's (resolved); platform NULL: every one */
    const char *const *epochs;         /* several epochs read (-epoch all, A..B): their stacks */
    size_t nepochs;                    /*   and value profiles merged; NULL, 0: epoch only */
    const char *sort_event;            /* -s; NULL: the event with the most samples */
    unsigned top;                      /* annotated listings of the hottest procedures */
    double flame_min;                  /* % of the samples a frame needs to be drawn */
    const char *const *vtrace;         /* -vtrace plugins (names or paths) */
    size_t nvtrace;                    /*   0: every value profile of a listed image */
    int insecure;                      /* -vtrace-insecure */
    dcpi_lst_vopts_t vo;               /* -vshow, -vcutoff as dcpilist */
    const char *const *plugin_dirs;    /* where plugin names are searched */
    const dcpi_profset_t *diff_set;    /* -diff: the set compared to (NULL: none) */
    const char *diff_epoch;            /*   its epoch's name */
    /* NULL, or where the stack profile of an event comes from instead of db (the fleet's;
     * as dcpi_procs_opts_t's stacks) */
    int (*stacks)(void *arg, const dcpi_profset_t *set, const char *event, dcpi_stackprof_t **sp,
                  char *err);
    /* NULL, or where an image's value profiles come from instead of db (the fleet's): every
     * plugin's profile of image id, names[i] and vps[i] the caller's (as dcpi_fleet_vprofs) */
    int (*vprofs)(void *arg, const char *id, char ***names, dcpi_vprof_t ***vps, size_t *n,
                  char *err);
    void *source_arg; /* their arg */
    /* NULL, or the listings hold only this procedure (of the image named only_image, when not
     * NULL), whatever its rank (dcpiweb's listing view) */
    const char *only_proc, *only_image;
} dcpi_report_opts_t;

/*
 * Write the page of set to f. Returns 0; a negative DCPI_E* with its message in err: a plugin
 * of o->vtrace that cannot be loaded, DCPI_EPLUGIN when a plugin faulted while formatting a
 * hotlist (its state is unknown: the caller exits without unloading it), DCPI_ENOENT when
 * o->sort_event has no samples (message on stderr), DCPI_ENOMEM. A procedure that cannot be
 * listed (its file changed or is gone, no value profile of a -vtrace plugin) gets a note in
 * the page instead.
 */
int dcpi_report_write(const dcpi_profset_t *set, const dcpi_report_opts_t *o, FILE *f, char *err);

/* The same document without the page around it: the JSON that dcpireport's page carries
 * (dcpiweb's views draw it with the page's script). Same results. */
int dcpi_report_write_json(const dcpi_profset_t *set, const dcpi_report_opts_t *o, FILE *f,
                           char *err);

/* The page's own parts, for a server that sends them as files (dcpiweb): its style sheet, the
 * script of its head (errors into #errors), and its script's functions (everything but the
 * call that draws the page on load: main() draws every section from D, the document). Each a
 * NUL-terminated string with static storage. A page that draws itself may set HOOK.procHref
 * (row -> the href of a procedure's name) and HOOK.callsHref (row -> the href of its callers
 * and callees link) before calling the drawing functions. */
const char *dcpi_report_css(void);
const char *dcpi_report_head_js(void);
const char *dcpi_report_lib_js(void);

/* Write s as a JSON string (quotes included) that is safe inside a <script> element: '"',
 * '\\' and control characters escaped, '<', '>', '&', U+2028 and U+2029 as \uXXXX, bytes that
 * are not UTF-8 as U+FFFD. s NULL: null. */
void dcpi_report_json_str(FILE *f, const char *s);
/* Write s with '&', '<', '>', '"' and '\'' as HTML character references. */
void dcpi_report_html_text(FILE *f, const char *s);

/* ---- between the report*.c files ---- */

/* `"flame":{...},"calls":{...}` (or `"flame":null,"flame_none":"why","calls":null`): the stack
 * profile of the sort event of rows (the procedure table) as a tree of frames, and its callers and
 * callees. 0 or a negative DCPI_E* with err. */
int dcpi__report_flame(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                       const dcpi_procs_table_t *rows, char *err);
/* `"calls":{...}`: the caller/callee graph of the chains of sp (pset and tabs as
 * dcpi_stackprof_symbols gives them), its procedures named by their rows in t when they have
 * one. 0 or DCPI_ENOMEM. */
int dcpi__report_calls(FILE *f, const dcpi_profset_t *set, const dcpi_procs_table_t *t,
                       const char *event, const dcpi_stackprof_t *sp, const long *pset,
                       struct dcpi_symtab *const *tabs);
/* `"listings":[...]`: the top o->top procedures of t. 0 or a negative DCPI_E* with err. */
int dcpi__report_listings(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                          const dcpi_procs_table_t *rows, char *err);
/* The page up to the opening of the JSON block, and from its end. */
void dcpi__report_page_head(FILE *f, const dcpi_report_opts_t *o);
void dcpi__report_page_tail(FILE *f);
/* Write the array [a0,a1,...] of n numbers. */
void dcpi__report_json_u64s(FILE *f, const uint64_t *a, size_t n);

#endif
