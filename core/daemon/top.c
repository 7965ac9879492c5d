/*
 * top.c - the live view (dcpitop) from dcpid's own counts, without flushing: while a client
 * watches (a "top" request within DCPI_DAEMON_TOP_IDLE seconds), every sample of the first
 * event is also counted in a small preallocated window table keyed by (image, offset, pid).
 * A request answers the window's hottest procedures and images (symbols resolved here, kept
 * while the view is on) and starts the next window. The answer (control.h's protocol):
 *   top window SECONDS samples N shown M lost L dropped D event NAME epoch E
 *   proc<TAB>COUNT<TAB>IMAGE<TAB>PROCEDURE     (hottest first, at most N)
 *   image<TAB>COUNT<TAB>IMAGE                  (hottest first, at most N)
 * shown counts the samples that passed the pid=/comm= filter; dropped, those the window table
 * had no room for (the profiles have them all).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/log.h"
#include "core/base/mem.h"
#include "core/daemon/daemon-int.h"
#include "core/image/symbols.h"

DCPI_DAEMON_PART_DECLARE(top);

#define TOP_MAX_ROWS 200

/* The part's state: a window of PC samples while a client watches. */
typedef struct daemon_top {
    dcpi_agg_t *agg; /* (image, 0, offset, pid) -> samples of the current window */
    int on;          /* a client asked within DCPI_DAEMON_TOP_IDLE seconds */
    double since, last;
    uint64_t lost0, dropped;
    dcpi_image_symtabs_t syms;
    struct dcpi_symtab *ksyms;
    int ksyms_tried;
} daemon_top_t;

typedef struct top_row {
    uint32_t image;
    const char *name; /* the procedure (NULL: none known) */
    uint64_t count;
} top_row_t;

typedef struct top_filter {
    unsigned rows;
    pid_t pid;
    char comm[DCPI_COMMLEN];
} top_filter_t;

static daemon_top_t *top_of(const daemon_t *d)
{
    return dcpi__part_if(d, &part_top);
}

/* A sample of the first event while the view is on. */
static void top_sample(daemon_t *d, void *self, int ev, uint32_t image, uint32_t offset)
{
    daemon_top_t *t = self;
    if (t->on && ev == 0 &&
        dcpi_agg_add_proc(t->agg, image, 0, offset, (uint32_t)d->cur_pid, 1) < 0)
        t->dropped++;
}

static void top_free(daemon_t *d, void *self)
{
    daemon_top_t *t = self;
    dcpi_agg_free(t->agg);
    t->agg = NULL;
    t->on = 0;
    dcpi_image_symtabs_free(&t->syms);
    dcpi_symtab_free(t->ksyms);
    t->ksyms = NULL;
    t->ksyms_tried = 0;
}

/* The view ends when no client asked for DCPI_DAEMON_TOP_IDLE seconds. */
static void top_idle(daemon_t *d, void *self)
{
    daemon_top_t *t = self;
    if (t->on && dcpi__monotonic_s() - t->last > DCPI_DAEMON_TOP_IDLE) {
        dcpi__log(DCPI_LOG_INFO, "top: no client for %d s, live view off", DCPI_DAEMON_TOP_IDLE);
        top_free(d, t);
    }
}

static uint64_t lost0(const daemon_t *d)
{
    return d->nev ? d->st[0].lost : 0;
}

/* "[N] [pid=P] [comm=C]" */
static int parse_filter(const char *args, top_filter_t *f, char *err)
{
    char buf[128], *save = NULL;
    *f = (top_filter_t){.rows = 20};
    snprintf(buf, sizeof buf, "%s", args);
    for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        char *end;
        if (strncmp(w, "pid=", 4) == 0)
            f->pid = (pid_t)strtol(w + 4, &end, 10);
        else if (strncmp(w, "comm=", 5) == 0)
            snprintf(f->comm, sizeof f->comm, "%s", w + 5), end = "";
        else
            f->rows = (unsigned)strtoul(w, &end, 10);
        if (*end || f->rows == 0 || f->rows > TOP_MAX_ROWS || f->pid < 0)
            return dcpi__errf(err, DCPI_EINVAL, "top: bad argument '%.40s'", w);
    }
    return 0;
}

static int wanted(daemon_t *d, const top_filter_t *f, pid_t pid)
{
    if (f->pid && pid != f->pid)
        return 0;
    if (!f->comm[0])
        return 1;
    const char *name = dcpi_proctab_name(d->procs, dcpi_proctab_id(d->procs, pid));
    return strncmp(name, f->comm, DCPI_COMMLEN - 1) == 0;
}

static const char *image_name(const daemon_t *d, uint32_t image)
{
    if (image == DCPI_AGG_IMAGE_KERNEL)
        return "[kernel.kallsyms]";
    if (image == DCPI_AGG_IMAGE_UNKNOWN)
        return "unknown";
    return dcpi_loadmap_image(d->lm, image)->path;
}

/* The procedure holding offset of image, or NULL. */
static const char *procedure(daemon_t *d, uint32_t image, uint32_t offset)
{
    daemon_top_t *t = top_of(d);
    const dcpi_symtab_t *st = NULL;
    uint64_t addr = offset;
    if (image == DCPI_AGG_IMAGE_KERNEL) {
        if (!t->ksyms_tried++)
            dcpi_symtab_open_kallsyms("/proc/kallsyms", &t->ksyms, NULL);
        st = t->ksyms;
        addr += d->kern.tstart;
    } else if (image != DCPI_AGG_IMAGE_UNKNOWN) {
        const dcpi_image_t *img = dcpi_loadmap_image(d->lm, image);
        st = dcpi_image_symtab(&t->syms, img);
        addr += img->info.tstart;
    }
    const dcpi_symbol_t *sym = st ? dcpi_symtab_lookup(st, addr) : NULL;
    return sym ? sym->name : NULL;
}

/* Add count to the last row when it is (image, name), else start a row. */
static int add_row(top_row_t **v, size_t *n, size_t *cap, uint32_t image, const char *name,
                   uint64_t count)
{
    if (*n && (*v)[*n - 1].image == image && (*v)[*n - 1].name == name) {
        (*v)[*n - 1].count += count;
        return 0;
    }
    if (dcpi__grow((void **)v, cap, *n + 1, sizeof **v) < 0)
        return DCPI_ENOMEM;
    (*v)[(*n)++] = (top_row_t){image, name, count};
    return 0;
}

static int by_count(const void *a, const void *b)
{
    const top_row_t *x = a, *y = b;
    return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static void answer_rows(daemon_t *d, const char *kind, top_row_t *v, size_t n, unsigned rows,
                        dcpi__answer_t *a)
{
    if (n)
        qsort(v, n, sizeof *v, by_count);
    for (size_t i = 0; i < n && i < rows; i++) {
        if (v[i].name || strcmp(kind, "image") == 0)
            dcpi__daemon_say(a, "%s\t%" PRIu64 "\t%s%s%s", kind, v[i].count,
                             image_name(d, v[i].image), v[i].name ? "\t" : "",
                             v[i].name ? v[i].name : "");
        else
            dcpi__daemon_say(a, "%s\t%" PRIu64 "\t%s\t(no symbol)", kind, v[i].count,
                             image_name(d, v[i].image));
    }
}

/* The window's entries into procedure and image rows (entries come sorted by image, offset). */
static int window_rows(daemon_t *d, const top_filter_t *f, top_row_t **procs, size_t *np,
                       top_row_t **imgs, size_t *ni, uint64_t *all, uint64_t *shown)
{
    daemon_top_t *t = top_of(d);
    size_t n = 0, cp = 0, ci = 0;
    const dcpi_agg_entry_t *e = dcpi_agg_sort(t->agg, &n);
    for (size_t i = 0; i < n; i++) {
        *all += e[i].count;
        if (!wanted(d, f, (pid_t)e[i].proc))
            continue;
        *shown += e[i].count;
        const char *name = procedure(d, e[i].image, e[i].offset);
        if (add_row(procs, np, &cp, e[i].image, name, e[i].count) < 0 ||
            add_row(imgs, ni, &ci, e[i].image, NULL, e[i].count) < 0)
            return DCPI_ENOMEM;
    }
    return 0;
}

static void answer_top(daemon_t *d, const char *args, dcpi__answer_t *a)
{
    daemon_top_t *t = top_of(d);
    char err[DCPI_ERRLEN];
    top_filter_t f;
    if (parse_filter(args, &f, err) < 0) {
        dcpi__daemon_say(a, "error: %s", err);
        return;
    }
    double now = dcpi__monotonic_s();
    if (!t->agg && dcpi_agg_new(DCPI_DAEMON_TOP_ENTRIES, &t->agg) < 0) {
        dcpi__daemon_say(a, "error: top: out of memory");
        return;
    }
    if (!t->on) { /* a new view: its first window starts now */
        t->on = 1;
        t->since = now;
        t->lost0 = lost0(d);
        t->dropped = 0;
        dcpi__log(DCPI_LOG_INFO, "top: live view on");
    }
    t->last = now;
    top_row_t *procs = NULL, *imgs = NULL;
    size_t np = 0, ni = 0;
    uint64_t all = 0, shown = 0;
    if (window_rows(d, &f, &procs, &np, &imgs, &ni, &all, &shown) < 0) {
        dcpi__daemon_say(a, "error: top: out of memory");
    } else {
        dcpi__daemon_say(a,
                         "top window %.3f samples %" PRIu64 " shown %" PRIu64 " lost %" PRIu64
                         " dropped %" PRIu64 " event %s epoch %s",
                         now - t->since, all, shown, lost0(d) - t->lost0, t->dropped,
                         d->nev ? d->evs[0].name : "-", d->epoch);
        answer_rows(d, "proc", procs, np, f.rows, a);
        answer_rows(d, "image", imgs, ni, f.rows, a);
        dcpi__daemon_say(a, "ok");
    }
    free(procs);
    free(imgs);
    dcpi_agg_reset(t->agg);
    t->since = now;
    t->lost0 = lost0(d);
    t->dropped = 0;
}

/* "top [N] [pid=P] [comm=C]": the window's rows, then the next window. */
static int top_control(daemon_t *d, void *self, const char *cmd, dcpi__answer_t *a)
{
    if (strncmp(cmd, "top", 3) != 0 || (cmd[3] != 0 && cmd[3] != ' '))
        return 0;
    dcpi__daemon_drain_all(d);
    answer_top(d, cmd + 3, a);
    return 1;
}

DCPI_DAEMON_PART(top, .order = 20, .size = sizeof(daemon_top_t), .sample = top_sample,
                 .tick = top_idle, .control = top_control, .exit = top_free);
