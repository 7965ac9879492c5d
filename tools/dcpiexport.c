/*
 * dcpiexport - write one epoch's samples of one event in another profiler's format:
 * "-format gperftools" (gperftools' CPU profile, read by google-pprof) or "-format gmon"
 * (gprof's gmon.out for one program). See docs/dcpiexport.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/cli.h"
#include "core/gmon.h"
#include "core/gperf.h"
#include "core/image.h"
#include "dcpi/errno.h"

#define TOOL "dcpiexport"

/* Load addresses given to images after the first one (the program, kept at its ELF vaddrs). */
#define LIB_BASE   0x7f0000000000ull
#define LIB_STRIDE 0x100000000ull
/* Where samples outside every image go in a gperftools file (no symbol there). */
#define UNKNOWN_PC 0x10ull

static const dcpi_cli_flag_t flags[] = {
    {"-format", "FMT", "gperftools or gmon"},
    {"-o", "FILE", "output file (required)"},
    {"-e", "EVENT", "event to export (default: the event with the most samples)"},
    {NULL, NULL, NULL},
};

typedef struct opts {
    const char *format, *out, *event;
} opts_t;

static int parse_opts(const dcpi_cli_t *cli, opts_t *o)
{
    *o = (opts_t){0};
    for (int i = 0; i < cli->nopts; i += 2) {
        const char *f = cli->opts[i], *v = cli->opts[i + 1];
        if (!strcmp(f, "-format"))
            o->format = v;
        else if (!strcmp(f, "-o"))
            o->out = v;
        else if (!strcmp(f, "-e"))
            o->event = v;
    }
    if (!o->format || (strcmp(o->format, "gperftools") && strcmp(o->format, "gmon"))) {
        fprintf(stderr, TOOL ": -format gperftools|gmon is required (try -h)\n");
        return 2;
    }
    if (!o->out) {
        fprintf(stderr, TOOL ": -o FILE is required (try -h)\n");
        return 2;
    }
    return 0;
}

static int pick_event(const dcpi_profset_t *set, const char *name, const char *epoch)
{
    if (set->nevents == 0) {
        fprintf(stderr, TOOL ": no samples in epoch %s\n", epoch);
        return -1;
    }
    if (name) {
        int e = dcpi_profset_event_index(set, name);
        if (e < 0)
            fprintf(stderr, TOOL ": no samples of event '%s' in epoch %s\n", name, epoch);
        return e;
    }
    int best = 0;
    for (size_t e = 1; e < set->nevents; e++)
        if (set->events[e].total > set->events[best].total)
            best = (int)e;
    return best;
}

/* Image order: the first image named by an operand (the program), then the others. */
static void image_order(const dcpi_profset_t *set, const dcpi_cli_t *cli, size_t *order)
{
    size_t k = 0, first = set->nimages;
    for (int a = 0; a < cli->nargs && first == set->nimages; a++)
        for (size_t i = 0; i < set->nimages && first == set->nimages; i++)
            if (dcpi_profset_image_matches(&set->images[i], cli->args[a]))
                first = i;
    for (size_t i = 0; first == set->nimages && i < set->nimages; i++)
        if (set->images[i].kind == DCPI_PSET_FILE)
            first = i;
    if (first < set->nimages)
        order[k++] = first;
    for (size_t i = 0; i < set->nimages; i++)
        if (i != first)
            order[k++] = i;
}

/* File offset of tstart in img's file (for the mapping line), tstart when it cannot tell. */
static uint64_t text_file_offset(const dcpi_profset_image_t *img)
{
    dcpi_image_info_t info;
    uint64_t off = img->tstart;
    if (img->kind == DCPI_PSET_FILE && dcpi_image_probe(img->path, &info, NULL) == 0 &&
        !strcmp(info.id, img->id) && dcpi_image_vaddr_to_file(&info, img->tstart, &off) == 0)
        return off;
    return img->tstart;
}

/* Put the tool's name in front of a "FILE: reason" message. */
static void prefix_err(char *err)
{
    char tmp[DCPI_ERRLEN];
    size_t room = DCPI_ERRLEN - sizeof(TOOL ": ");
    snprintf(tmp, sizeof(tmp), "%s", err);
    snprintf(err, DCPI_ERRLEN, TOOL ": %.*s", (int)room, tmp);
}

/* ---- gperftools ---- */

static int gperf_image(dcpi_gperf_t *g, const dcpi_profset_image_t *img, int ev, uint64_t base)
{
    size_t n = 0;
    const dcpi_profile_entry_t *ent =
        img->prof[ev] ? dcpi_profile_entries(img->prof[ev], &n) : NULL;
    if (n == 0)
        return 0;
    int unknown = img->kind == DCPI_PSET_UNKNOWN;
    for (size_t k = 0; k < n; k++) {
        uint64_t pc = unknown ? UNKNOWN_PC : base + img->tstart + ent[k].offset;
        int rc = dcpi_gperf_add(g, ent[k].count, &pc, 1);
        if (rc < 0)
            return rc;
    }
    if (unknown || img->kind != DCPI_PSET_FILE)
        return 0;
    char line[4400];
    uint64_t end = base + img->tstart + (img->tsize ? img->tsize : 1);
    snprintf(line, sizeof(line), "%016" PRIx64 "-%016" PRIx64 " r-xp %08" PRIx64 " 00:00 0 %s",
             base + img->tstart, end, text_file_offset(img), img->path);
    return dcpi_gperf_add_text(g, line);
}

static int export_gperf(const dcpi_profset_t *set, const size_t *order, int ev, const opts_t *o,
                        char *err)
{
    uint64_t period = set->events[ev].period;
    dcpi_gperf_t *g = NULL;
    int rc = dcpi_gperf_new(period >= 1000 ? period / 1000 : 1, &g);
    for (size_t k = 0; rc == 0 && k < set->nimages; k++) {
        const dcpi_profset_image_t *img = &set->images[order[k]];
        uint64_t base = k == 0 || img->kind == DCPI_PSET_KERNEL ? 0 : LIB_BASE + k * LIB_STRIDE;
        rc = gperf_image(g, img, ev, base);
    }
    if (rc < 0)
        snprintf(err, DCPI_ERRLEN, TOOL ": %s: %s", o->out, dcpi_strerror(rc));
    else if ((rc = dcpi_gperf_write(o->out, g, err)) < 0)
        prefix_err(err);
    dcpi_gperf_free(g);
    return rc;
}

/* ---- gmon ---- */

/* Histogram records over img's text: 4-byte bins; counts above 65535 spill into further
 * records over the same range, which gprof sums. */
static int gmon_hist(dcpi_gmon_t *g, const dcpi_profset_image_t *img, int ev, uint32_t rate)
{
    size_t n = 0;
    const dcpi_profile_entry_t *ent = dcpi_profile_entries(img->prof[ev], &n);
    uint64_t low = img->tstart & ~3ull, high = (img->tstart + img->tsize + 3) & ~3ull;
    if (high <= low)
        high = low + 4;
    uint32_t nbins = (uint32_t)((high - low) / 4);
    uint64_t *left = calloc(nbins, sizeof(*left));
    if (!left)
        return DCPI_ENOMEM;
    int rc = 0, more = 0;
    for (size_t k = 0; k < n; k++) {
        uint64_t bin = (img->tstart + ent[k].offset - low) / 4;
        if (bin >= nbins)
            rc = DCPI_ERANGE;
        else
            more |= (left[bin] += ent[k].count) > 0;
    }
    while (rc == 0 && more) {
        dcpi_gmon_hist_t *h = NULL;
        rc = dcpi_gmon_add_hist(g, low, high, nbins, rate, &h);
        more = 0;
        for (uint32_t i = 0; rc == 0 && i < nbins; i++) {
            uint64_t c = left[i] > 65535 ? 65535 : left[i];
            h->bins[i] = (uint16_t)c;
            left[i] -= c;
            more |= left[i] > 0;
        }
    }
    free(left);
    return rc;
}

static int export_gmon(const dcpi_profset_t *set, const size_t *order, int ev, const opts_t *o,
                       char *err)
{
    const dcpi_profset_image_t *img = set->nimages ? &set->images[order[0]] : NULL;
    if (!img || img->kind != DCPI_PSET_FILE || !img->prof[ev]) {
        snprintf(err, DCPI_ERRLEN, TOOL ": no program image with samples to export");
        return DCPI_ENOENT;
    }
    uint64_t period = set->events[ev].period;
    uint32_t rate = period && period <= 1000000000 ? (uint32_t)(1000000000 / period) : 1;
    dcpi_gmon_t *g = NULL;
    int rc = dcpi_gmon_new(&g);
    rc = rc ? rc : gmon_hist(g, img, ev, rate);
    if (rc < 0)
        snprintf(err, DCPI_ERRLEN, TOOL ": %s: %s", img->name, dcpi_strerror(rc));
    else if ((rc = dcpi_gmon_write(o->out, g, err)) < 0)
        prefix_err(err);
    dcpi_gmon_free(g);
    return rc;
}

static int run(dcpi_cli_t *cli, const opts_t *o)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_profset_t *set = NULL;
    int rc = dcpi_cli_load(cli, &set, err);
    if (rc < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (cli->nargs && dcpi_profset_filter(set, cli->args, (size_t)cli->nargs) == 0) {
        fprintf(stderr, TOOL ": no profile of the images named in epoch %s\n", cli->epoch);
        dcpi_profset_free(set);
        return 1;
    }
    int ev = pick_event(set, o->event, cli->epoch);
    size_t *order = calloc(set->nimages + 1, sizeof(*order));
    if (ev >= 0 && order) {
        image_order(set, cli, order);
        rc = !strcmp(o->format, "gmon") ? export_gmon(set, order, ev, o, err)
                                        : export_gperf(set, order, ev, o, err);
        if (rc < 0)
            fprintf(stderr, "%s\n", err);
    }
    int status = ev < 0 || !order || rc < 0 ? 1 : 0;
    free(order);
    dcpi_profset_free(set);
    return status;
}

int main(int argc, char **argv)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = TOOL, .operands = "[image-names...]", .flags = flags};
    int rc = dcpi_cli_parse(&cli, argc, argv, err);
    if (rc != 0) {
        dcpi_cli_free(&cli);
        return dcpi_cli_exit(rc, err);
    }
    opts_t o;
    int status = parse_opts(&cli, &o);
    if (status == 0)
        status = run(&cli, &o);
    dcpi_cli_free(&cli);
    return status;
}
