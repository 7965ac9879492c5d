/*
 * dcpireplay - run value-profiler plugins over the value traces dcpid recorded (-vrecord) in
 * one epoch and merge their value profiles into the database as if dcpid had run them
 * (marked "origin values.replay"). Each plugin runs in a worker process with dcpid's watchdog:
 * one that crashes or hangs is named with the reason, the others' profiles are still written,
 * and the exit status is 1. See docs/dcpireplay.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "core/base/log.h"
#include "core/values/replay.h"
#include "core/store/tracefile.h"
#include "core/plugin/vploader.h"
#include "core/store/vsummary.h"
#include "dcpi/errno.h"

#define TOOL "dcpireplay"

typedef struct opts {
    dcpi_cli_list_t plugins;
    unsigned hotsize;
    unsigned timeout_ms;
    int merge;
} opts_t;

#define MAX_PLUGINS 64

static opts_t opts;

/* -vtimeout S into ms. */
static int set_timeout(void *dst, const char *v)
{
    double s;
    if (dcpi_cli_flag_number(TOOL, "-vtimeout", v, 1, 3600, &s) != 0)
        return 2;
    *(unsigned *)dst = (unsigned)(s * 1000);
    return 0;
}

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_LIST("-vtrace", "PLUGIN", &opts.plugins,
                  "value profiler to replay (path or short name; repeatable; required)"),
    DCPI_OPT_UINT("-vhot", "N", &opts.hotsize, 1, DCPI_VSUMMARY_MAX_CAP,
                  "hotlist size per instruction (default: the recording's, else 16)"),
    DCPI_OPT_BOOL("-merge", &opts.merge,
                  "merge into existing value profiles instead of refusing them"),
    DCPI_OPT_CALL("-vtimeout", "S", set_timeout, &opts.timeout_ms,
                  "a plugin whose vp_prof_process runs S seconds is disabled (2)"),
    DCPI_OPT_END,
};

/* At least one plugin, at most MAX_PLUGINS; no operands. */
static int check(dcpi_cli_t *cli, void *arg)
{
    const opts_t *o = arg;
    if (o->plugins.n > MAX_PLUGINS) {
        fprintf(stderr, TOOL ": too many -vtrace plugins (at most %d)\n", MAX_PLUGINS);
        return 2;
    }
    if (o->plugins.n == 0) {
        fprintf(stderr, TOOL ": at least one -vtrace PLUGIN is required (try -h)\n");
        return 2;
    }
    if (cli->nargs) {
        fprintf(stderr, TOOL ": unexpected operand '%s' (try -h)\n", cli->args[0]);
        return 2;
    }
    return 0;
}

static void print_line(void *arg, int level, const char *line)
{
    (void)arg;
    fprintf(stderr, TOOL ": %s%s\n", level == DCPI_LOG_ERR ? "" : "warning: ", line);
}

static int load_plugins(const opts_t *o, dcpi_vp_set_t **set)
{
    const char *const *dirs =
        dcpi_vp_program_dirs(DCPI_BUILD_PLUGIN_DIR, DCPI_PLUGIN_DIR_REL, DCPI_PLUGIN_DIR);
    char err[DCPI_ERRLEN];
    if (dcpi_vp_set_search_dirs(dirs) < 0 || dcpi_vp_set_new(set) < 0) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 1;
    }
    for (int i = 0; i < o->plugins.n; i++) {
        if (dcpi_vp_load(*set, o->plugins.v[i], NULL, err) < 0) {
            fprintf(stderr, TOOL ": %s\n", err);
            return 1;
        }
    }
    return 0;
}

static void summary(const char *platform, const dcpi_replay_stats_t *s, const dcpi_cli_t *cli)
{
    printf(TOOL ": epoch %s platform %s: %" PRIu64 " segments (%" PRIu64 " torn, %" PRIu64
                " bad), %" PRIu64 " traces, %" PRIu64 " entries, %" PRIu64 " fed, %" PRIu64
                " values, %" PRIu64 " lost, %" PRIu64 " not recorded, %" PRIu64 " files written\n",
           cli->epoch, platform, s->segments, s->torn, s->bad, s->traces, s->entries, s->fed,
           s->values, s->lost, s->not_recorded, s->files);
    if (s->disabled)
        printf(TOOL ": %" PRIu64 " value profiler%s disabled: not written (the others are)\n",
               s->disabled, s->disabled > 1 ? "s" : "");
}

static int has_recording(const dcpi_cli_t *cli, const char *platform)
{
    char dir[4096 + 2 * DCPI_NAMELEN + 32];
    struct stat sb;
    snprintf(dir, sizeof dir, "%s/%s/%s/%s", cli->db, cli->epoch, platform, DCPI_TRACEFILE_DIR);
    return stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static int replay_platform(dcpi_vp_set_t *set, const opts_t *o, const dcpi_cli_t *cli,
                           const char *platform)
{
    char err[DCPI_ERRLEN];
    dcpi_replay_stats_t st;
    dcpi_replay_opts_t ro = {.db = cli->db,
                             .epoch = cli->epoch,
                             .platform = platform,
                             .hotsize = o->hotsize,
                             .merge = o->merge,
                             .timeout_ms = o->timeout_ms,
                             .say = print_line};
    int rc = dcpi_replay_run(set, &ro, &st, err);
    if (rc < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        if (rc != DCPI_EPLUGIN && rc != DCPI_EEXIST)
            return 1;
    }
    summary(platform, &st, cli);
    return rc < 0 || st.bad || st.disabled ? 1 : 0;
}

/* Replay -platform, or every platform of the epoch that holds a recording. */
static int replay_epoch(dcpi_vp_set_t *set, const opts_t *o, const dcpi_cli_t *cli)
{
    char **names = NULL, err[DCPI_ERRLEN];
    size_t n = 0;
    int status = 0, found = 0;
    if (cli->platform)
        return replay_platform(set, o, cli, cli->platform);
    if (dcpi_db_platforms(cli->db, cli->epoch, &names, &n, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (!has_recording(cli, names[i]))
            continue;
        found = 1;
        status |= replay_platform(set, o, cli, names[i]);
    }
    if (!found) {
        fprintf(stderr,
                TOOL ": epoch %s of %s holds no recorded traces (record with dcpid -vrecord)\n",
                cli->epoch, cli->db);
        status = 1;
    }
    dcpi_db_free_list(names, n);
    return status;
}

/* The epoch's recordings through the plugins. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    const opts_t *o = arg;
    char err[DCPI_ERRLEN] = "";
    dcpi_vp_set_t *set = NULL;
    int rc, status = 0;
    if ((rc = dcpi_cli_resolve(cli, err)) < 0)
        status = dcpi_cli_exit(rc, err);
    if (status == 0)
        status = load_plugins(o, &set);
    if (status == 0)
        status = replay_epoch(set, o, cli);
    dcpi_vp_set_free(set);
    return status;
}

static void opts_free(void *arg)
{
    free(((opts_t *)arg)->plugins.v);
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = TOOL, .operands = NULL, .flags = flags};
    dcpi_cli_main_t m = {.check = check, .run = run, .done = opts_free, .raw_status = 1};
    return dcpi_cli_main(&cli, argc, argv, &m, &opts);
}
