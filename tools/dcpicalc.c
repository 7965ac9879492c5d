/*
 * dcpicalc - one procedure's control-flow graph with the samples of its basic blocks and their
 * estimated execution frequencies, as text or Graphviz dot (rendered to SVG with dot(1) when
 * -o names a .svg file). See docs/dcpicalc.md. The flags are read here; the procedure is
 * selected as dcpilist does (core/listing/listsel.h), the graph and the estimate are
 * core/calc/cfg.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/calc/cfg.h"
#include "cli/cli.h"
#include "core/listing/listsel.h"
#include "core/base/fsutil.h"
#include "dcpi/errno.h"

#define TOOL "dcpicalc"

extern char **environ;

typedef struct opts {
    dcpi_cfg_popts_t po;
    int dot;
    const char *out, *event, *pfile;
    enum dcpi_cfg_model model;
} opts_t;

typedef struct ctx {
    opts_t o;
    const char *proc_arg, *image_arg;
    dcpi_lstsel_t sel;
    dcpi_cfg_t *g;
} ctx_t;

static ctx_t ctx = {.o = {.model = DCPI_CFG_LATENCY}};

static void ctx_free(void *arg)
{
    ctx_t *c = arg;
    dcpi_cfg_free(c->g);
    dcpi_lstsel_free(&c->sel);
}

/* -model: latency or insns. */
static int set_model(void *dst, const char *v)
{
    if (strcmp(v, "latency") && strcmp(v, "insns")) {
        fprintf(stderr, TOOL ": -model wants latency or insns, not '%s'\n", v);
        return 2;
    }
    *(enum dcpi_cfg_model *)dst = !strcmp(v, "insns") ? DCPI_CFG_INSNS : DCPI_CFG_LATENCY;
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_DOUBLE("-cutoff", "PCT", &ctx.o.po.cutoff, 0, 100,
                    "leave out blocks with less than PCT % of the procedure's samples"),
    DCPI_OPT_BOOL("-dot", &ctx.o.dot, "write Graphviz dot instead of text"),
    {"-o", "FILE", "write to FILE ('-': standard output; FILE.svg: the dot rendered by dot -Tsvg)",
     "--output", DCPI_CLI_STR, DCPI_CLI_DST(const char *, &ctx.o.out), 0, 0, NULL},
    DCPI_OPT_STR_A("-e", "-s -event --event", "EVENT", &ctx.o.event,
                   "the event whose samples are used (default: cpu-clock, else the first)"),
    DCPI_OPT_CALL("-model", "M", set_model, &ctx.o.model,
                  "cost of a block: latency (per instruction class, default) or insns"),
    DCPI_OPT_IMAGE(&ctx.o.pfile),
    DCPI_OPT_END,
};

static int is_svg(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    return n > 4 && !strcmp(path + n - 4, ".svg");
}

/* ---- flags ---- */

/* -o FILE.svg implies -dot; the operands. */
static int check(dcpi_cli_t *cli, void *arg)
{
    ctx_t *c = arg;
    c->o.dot |= is_svg(c->o.out);
    return dcpi_cli_proc_image(cli, c->o.pfile, &c->proc_arg, &c->image_arg);
}

/* ---- main flow ---- */

/* The event column of the listing: -e, else cpu-clock, else the first; -1 after a message. */
static long pick_event(const dcpi_cli_t *cli, const ctx_t *c)
{
    const dcpi_listing_t *ls = c->sel.ls;
    const char *want = c->o.event ? c->o.event : "cpu-clock";
    for (size_t e = 0; e < ls->nevents; e++)
        if (!strcmp(ls->events[e], want))
            return (long)e;
    if (!c->o.event && ls->nevents > 0)
        return 0;
    if (c->o.event) {
        char have[256] = "none";
        for (size_t e = 0, n = 0; e < ls->nevents && n + 1 < sizeof have; e++)
            n += (size_t)snprintf(have + n, sizeof have - n, "%s%s", e ? ", " : "", ls->events[e]);
        fprintf(stderr, TOOL ": no samples of event '%s' in %s (events there: %s)\n", want,
                c->sel.path, have);
    } else
        fprintf(stderr, TOOL ": no samples of %s in epoch %s\n", c->sel.path, cli->epoch);
    return -1;
}

static int prepare(dcpi_cli_t *cli, dcpi_profset_t *set, ctx_t *c)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_lstsel_t *s = &c->sel;
    *s = (dcpi_lstsel_t){
        .tool = TOOL, .set = set, .db = cli->db, .epoch = cli->epoch, .platform = cli->platform};
    int rc = dcpi_lstsel_open(s, c->proc_arg, c->image_arg, c->o.pfile, err);
    if (rc == 0)
        rc = dcpi_lstsel_build(s, err);
    if (rc < 0) {
        if (err[0])
            fprintf(stderr, TOOL ": %s\n", err);
        return rc == DCPI_EINVAL ? 2 : 1;
    }
    if (s->ls->n == 0) {
        fprintf(stderr, TOOL ": %s has no instructions\n", s->proc);
        return 1;
    }
    long e = pick_event(cli, c);
    if (e < 0)
        return 1;
    if (dcpi_cfg_build(s->ls, (size_t)e, dcpi_cfg_symtab_noreturn, s->st, &c->g) < 0) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 1;
    }
    dcpi_cfg_estimate(c->g, c->o.model);
    return 0;
}

/* The output into a buffer: the text view or dot. */
static int render(ctx_t *c, char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);
    if (!f)
        return DCPI_ENOMEM;
    const dcpi_lstsel_t *s = &c->sel;
    if (c->o.dot) {
        dcpi_cfg_print_dot(c->g, &c->o.po, f);
    } else {
        fprintf(f, "%s  %s  (0x%" PRIx64 "..0x%" PRIx64 ")  epoch %s\n", s->proc, s->path, s->lo,
                s->hi, s->epoch);
        dcpi_cfg_print_text(c->g, &c->o.po, f);
    }
    return fclose(f) == 0 ? 0 : DCPI_ENOMEM;
}

/* dot -Tsvg -o path, fed buf on its standard input. */
static int render_svg(const char *path, const char *buf, size_t len)
{
    int fds[2];
    if (pipe(fds) < 0)
        return fprintf(stderr, TOOL ": pipe: %s\n", strerror(errno)), 1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    posix_spawn_file_actions_addclose(&fa, fds[1]);
    char *argv[] = {"dot", "-Tsvg", "-o", (char *)path, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "dot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[0]);
    if (rc != 0) {
        close(fds[1]);
        fprintf(stderr, TOOL ": cannot render %s: dot (graphviz) %s\n", path,
                rc == ENOENT ? "is not installed" : strerror(rc));
        return 1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t n = write(fds[1], buf + off, len - off);
        if (n <= 0 && errno != EINTR)
            break;
        off += n > 0 ? (size_t)n : 0;
    }
    close(fds[1]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (off != len || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, TOOL ": dot -Tsvg failed to write %s\n", path);
        return 1;
    }
    return 0;
}

static int emit(ctx_t *c)
{
    char *buf = NULL, err[DCPI_ERRLEN] = "";
    size_t len = 0;
    int rc = 1;
    if (render(c, &buf, &len) < 0) {
        fprintf(stderr, TOOL ": out of memory\n");
    } else if (is_svg(c->o.out)) {
        rc = render_svg(c->o.out, buf, len);
    } else if (c->o.out) {
        rc = dcpi__write_output(c->o.out, buf, len, err) < 0 ? 1 : 0;
        if (rc)
            fprintf(stderr, TOOL ": %s\n", err);
    } else {
        rc = fwrite(buf, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : 1;
    }
    free(buf);
    return rc;
}

static int run(dcpi_cli_t *cli, dcpi_profset_t *set, void *arg)
{
    int rc = prepare(cli, set, arg);
    return rc ? rc : emit(arg);
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = DCPI_CLI_READER(TOOL, "procedure image", flags);
    dcpi_cli_main_t m = {.check = check, .run = run, .done = ctx_free, .load = DCPI_CLI_LOAD_EXIT};
    return dcpi_cli_main(&cli, argc, argv, &m, &ctx);
}
