/*
 * ctltop.c - dcpitop's client side: ask the running dcpid for its live window ("top", see
 * core/daemon/top.c) every delay, and draw the hottest procedures and images with the rate and
 * lost-sample lines; a redrawn screen on a terminal, plain text blocks otherwise, or each window
 * as one JSON object (dcpitop -json, dcpiweb's live view: schema dcpitop/1).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/json.h"
#include "core/daemon/control.h"
#include "dcpi/errno.h"

#define TOP_ROWS 400 /* rows of one table at most (the daemon sends 200 of each kind) */

typedef struct window {
    double secs;
    uint64_t samples, shown, lost, dropped;
    char event[64], epoch[64];
    char *text; /* the proc and image lines, as answered */
    size_t len;
    FILE *f;
} window_t;

static void collect(void *arg, const char *line)
{
    window_t *w = arg;
    if (strncmp(line, "top ", 4) == 0) {
        sscanf(line,
               "top window %lf samples %" SCNu64 " shown %" SCNu64 " lost %" SCNu64
               " dropped %" SCNu64 " event %63s epoch %63s",
               &w->secs, &w->samples, &w->shown, &w->lost, &w->dropped, w->event, w->epoch);
        return;
    }
    fprintf(w->f, "%s\n", line);
}

static int ask(const char *db, const char *platform, const char *cmd, window_t *w, char *err)
{
    free(w->text);
    *w = (window_t){0};
    w->f = open_memstream(&w->text, &w->len);
    if (!w->f)
        return dcpi__errf(err, DCPI_ENOMEM, "dcpitop: out of memory");
    int rc = dcpi_control_request(db, platform, cmd, collect, w, err);
    fclose(w->f);
    w->f = NULL;
    return rc;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* A row's image as shown: its basename, or its path when another row of the table has the
 * same basename with another path (two builds of one program). */
static const char *shown_image(char **paths, unsigned n, unsigned i)
{
    for (unsigned j = 0; j < n; j++)
        if (strcmp(paths[j], paths[i]) != 0 && strcmp(base(paths[j]), base(paths[i])) == 0)
            return paths[i];
    return base(paths[i]);
}

/* The rows of one kind ("proc" or "image") as a table. */
static void table(FILE *out, const window_t *w, const char *kind, unsigned rows)
{
    char *copy = strdup(w->text ? w->text : ""), *save = NULL;
    char *f[TOP_ROWS][4];
    unsigned n = 0;
    int proc = strcmp(kind, "proc") == 0;
    for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l && n < rows && n < TOP_ROWS;
         l = strtok_r(NULL, "\n", &save)) {
        char *s2 = NULL;
        int k = 0;
        memset(f[n], 0, sizeof f[n]);
        for (char *t = strtok_r(l, "\t", &s2); t && k < 4; t = strtok_r(NULL, "\t", &s2))
            f[n][k++] = t;
        if (k >= 3 && strcmp(f[n][0], kind) == 0)
            n++;
    }
    char *paths[TOP_ROWS];
    for (unsigned i = 0; i < n; i++)
        paths[i] = f[i][2];
    fprintf(out, "%10s %6s  %s\n", "samples", "%", proc ? "procedure  image" : "image");
    for (unsigned i = 0; i < n; i++) {
        uint64_t c = strtoull(f[i][1], NULL, 10);
        double pct = w->shown ? 100.0 * (double)c / (double)w->shown : 0;
        if (proc)
            fprintf(out, "%10" PRIu64 " %5.1f%%  %s  %s\n", c, pct, f[i][3] ? f[i][3] : "?",
                    shown_image(paths, n, i));
        else
            fprintf(out, "%10" PRIu64 " %5.1f%%  %s\n", c, pct, f[i][2]);
    }
    free(copy);
}

static void draw(FILE *out, const char *platform, const dcpi_top_opts_t *o, const window_t *w,
                 unsigned rows, int tty)
{
    char when[32], filter[96] = "";
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    if (o->comm && o->pid)
        snprintf(filter, sizeof filter, ", only comm %s, pid %d", o->comm, o->pid);
    else if (o->comm)
        snprintf(filter, sizeof filter, ", only comm %s", o->comm);
    else if (o->pid)
        snprintf(filter, sizeof filter, ", only pid %d", o->pid);
    if (tty)
        fputs("\033[H\033[2J", out);
    double secs = w->secs > 0 ? w->secs : 1;
    fprintf(out, "dcpitop %s: platform %s, epoch %s, event %s%s\n", when, platform, w->epoch,
            w->event, filter);
    fprintf(out, "rate: %.0f samples/s (%" PRIu64 " in %.2f s), shown %" PRIu64 "\n",
            (double)w->samples / secs, w->samples, w->secs, w->shown);
    double all = (double)(w->samples + w->lost);
    fprintf(out, "lost: %" PRIu64 " samples (%.1f%%)%s", w->lost,
            all > 0 ? 100.0 * (double)w->lost / all : 0.0, w->dropped ? "" : "\n");
    if (w->dropped)
        fprintf(out, ", %" PRIu64 " not in this view (its table was full)\n", w->dropped);
    if (!o->images) {
        fputc('\n', out);
        table(out, w, "proc", rows);
    }
    fputc('\n', out);
    table(out, w, "image", o->images ? rows * 2 : (rows + 1) / 2);
    if (!tty)
        fputc('\n', out);
    fflush(out);
}

/* Rows that fit: half the terminal's lines below the header lines for procedures. */
static unsigned fit_rows(const dcpi_top_opts_t *o, int tty, FILE *out)
{
    struct winsize ws;
    if (o->rows)
        return o->rows;
    if (!tty || ioctl(fileno(out), TIOCGWINSZ, &ws) < 0 || ws.ws_row < 16)
        return 20;
    return (unsigned)(ws.ws_row - 9) * 2 / 3;
}

/* The "top" request for rows rows and o's filter, into cmd (128 bytes). */
static void top_cmd(char *cmd, const dcpi_top_opts_t *o, unsigned rows)
{
    int n = snprintf(cmd, 128, "top %u", rows > 200 ? 200 : rows);
    if (o->pid)
        n += snprintf(cmd + n, 128 - (size_t)n, " pid=%d", o->pid);
    if (o->comm)
        snprintf(cmd + n, 128 - (size_t)n, " comm=%.15s", o->comm);
}

/* The rows of one kind as a JSON array of {"count", "image"[, "procedure"]}. */
static void json_rows(FILE *out, const window_t *w, const char *kind)
{
    char *copy = strdup(w->text ? w->text : ""), *save = NULL;
    int proc = strcmp(kind, "proc") == 0, first = 1;
    fprintf(out, ",\"%s\":[", proc ? "procs" : "images");
    for (char *l = copy ? strtok_r(copy, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
        char *f[4] = {0}, *s2 = NULL;
        int k = 0;
        for (char *t = strtok_r(l, "\t", &s2); t && k < 4; t = strtok_r(NULL, "\t", &s2))
            f[k++] = t;
        if (k < 3 || strcmp(f[0], kind) != 0)
            continue;
        fprintf(out, "%s{\"count\":%s,\"image\":", first ? "" : ",", f[1]);
        dcpi__json_str(out, f[2]);
        if (proc) {
            fputs(",\"procedure\":", out);
            dcpi__json_str(out, f[3] ? f[3] : "?");
        }
        fputc('}', out);
        first = 0;
    }
    fputc(']', out);
    free(copy);
}

static void json_window(FILE *out, const char *platform, const window_t *w)
{
    fputs("{\"schema\":\"dcpitop/1\",\"platform\":", out);
    dcpi__json_str(out, platform);
    fputs(",\"epoch\":", out);
    dcpi__json_str(out, w->epoch);
    fputs(",\"event\":", out);
    dcpi__json_str(out, w->event);
    fprintf(out,
            ",\"window\":%.3f,\"samples\":%" PRIu64 ",\"shown\":%" PRIu64 ",\"lost\":%" PRIu64
            ",\"dropped\":%" PRIu64,
            w->secs, w->samples, w->shown, w->lost, w->dropped);
    json_rows(out, w, "proc");
    json_rows(out, w, "image");
    fputs("}\n", out);
}

int dcpi_control_top_json(const char *db, const char *platform, const dcpi_top_opts_t *o, FILE *out,
                          char *err)
{
    char cmd[128];
    top_cmd(cmd, o, o->rows ? o->rows : 200);
    window_t w = {0};
    int rc = ask(db, platform, cmd, &w, err);
    if (rc == 0)
        json_window(out, platform, &w);
    free(w.text);
    return rc;
}

int dcpi_control_top(const char *db, const char *platform, const dcpi_top_opts_t *o, FILE *out,
                     char *err)
{
    int tty = isatty(fileno(out));
    unsigned rows = fit_rows(o, tty, out);
    char cmd[128];
    top_cmd(cmd, o, rows);
    window_t w = {0};
    int rc = ask(db, platform, cmd, &w, err); /* starts the view: its first window */
    struct timespec delay = {o->delay_ms / 1000, (long)(o->delay_ms % 1000) * 1000000};
    for (unsigned i = 0; rc == 0 && (o->iterations == 0 || i < o->iterations); i++) {
        nanosleep(&delay, NULL);
        if ((rc = ask(db, platform, cmd, &w, err)) == 0 && o->json)
            json_window(out, platform, &w);
        else if (rc == 0)
            draw(out, platform, o, &w, rows, tty && !o->json);
    }
    free(w.text);
    return rc;
}
