/*
 * check_cli.c - the analysis tools' shared flags (-db -epoch -platform -h -V, tool flags,
 * operands, errors) and the loading of an epoch into a profile set grouped by image.
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cli/cli.h"
#include "dcpi/errno.h"

static const dcpi_cli_flag_t tflags[] = {
    DCPI_OPT_PLAIN("-i", NULL, "by image", NULL),
    DCPI_OPT_PLAIN("-keep", "PCT", "keep rows", NULL),
    DCPI_OPT_PLAIN("-e", "EVENT", "the event", "-s -event --event"),
    DCPI_OPT_PLAIN("-o", "FILE", "output", "--output"),
    DCPI_OPT_END,
};

static dcpi_cli_t new_cli(void)
{
    return (dcpi_cli_t){.tool = "tool", .operands = "[names...]", .flags = tflags};
}

static int parse(dcpi_cli_t *cli, char *err, int argc, ...)
{
    static char *argv[32];
    va_list ap;
    va_start(ap, argc);
    argv[0] = "tool";
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    argv[argc] = NULL;
    return dcpi_cli_parse(cli, argc, argv, err);
}

START_TEST(test_shared_flags)
{
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse(&cli, err, 10, "-db", "/x/db", "-epoch", "latest-1", "name1",
                           "-platform", "p1", "-i", "name2"),
                     0);
    ck_assert_str_eq(cli.db_arg, "/x/db");
    ck_assert_str_eq(cli.epoch_spec, "latest-1");
    ck_assert_str_eq(cli.platform, "p1");
    ck_assert_int_eq(cli.nopts, 1);
    ck_assert_str_eq(cli.opts[0], "-i");
    ck_assert_int_eq(cli.nargs, 2);
    ck_assert_str_eq(cli.args[0], "name1");
    ck_assert_str_eq(cli.args[1], "name2");
    dcpi_cli_free(&cli);
}
END_TEST

START_TEST(test_defaults)
{
    dcpi_cli_t cli = new_cli();
    ck_assert_int_eq(parse(&cli, NULL, 1), 0);
    ck_assert_ptr_null(cli.db_arg);
    ck_assert_ptr_null(cli.epoch_spec);
    ck_assert_ptr_null(cli.platform);
    ck_assert_int_eq(cli.nopts, 0);
    ck_assert_int_eq(cli.nargs, 0);
    dcpi_cli_free(&cli);
}
END_TEST

START_TEST(test_tool_flag_values)
{
    dcpi_cli_t cli = new_cli();
    ck_assert_int_eq(parse(&cli, NULL, 6, "-keep", "-5", "img", "--", "-i"), 0);
    ck_assert_int_eq(cli.nopts, 2);
    ck_assert_str_eq(cli.opts[0], "-keep");
    ck_assert_str_eq(cli.opts[1], "-5"); /* a value is taken even when it starts with '-' */
    ck_assert_int_eq(cli.nargs, 2);
    ck_assert_str_eq(cli.args[0], "img");
    ck_assert_str_eq(cli.args[1], "-i"); /* after "--" everything is an operand */
    dcpi_cli_free(&cli);
}
END_TEST

START_TEST(test_missing_arguments)
{
    const char *flagsv[] = {"-db", "-epoch", "-platform", "-keep"};
    for (size_t k = 0; k < 4; k++) {
        dcpi_cli_t cli = new_cli();
        char err[DCPI_ERRLEN], want[128];
        ck_assert_int_eq(parse(&cli, err, 2, flagsv[k]), DCPI_EINVAL);
        snprintf(want, sizeof(want), "tool: flag '%s' needs an argument (try -h)", flagsv[k]);
        ck_assert_str_eq(err, want);
        dcpi_cli_free(&cli);
    }
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse(&cli, err, 3, "-db", ""), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: flag '-db' needs a non-empty argument (try -h)");
    dcpi_cli_free(&cli);
}
END_TEST

START_TEST(test_unknown_flag)
{
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse(&cli, err, 3, "-i", "-x"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: unknown flag '-x' (try -h)");
    ck_assert_int_eq(dcpi_cli_exit(DCPI_EINVAL, ""), 2);
    ck_assert_int_eq(dcpi_cli_exit(DCPI_ENOENT, ""), 1);
    ck_assert_int_eq(dcpi_cli_exit(DCPI_CLI_DONE, ""), 0);
    ck_assert_int_eq(dcpi_cli_exit(0, ""), 0);
    dcpi_cli_free(&cli);
}
END_TEST

static char *run_to_string(const char *flag, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    dcpi_cli_t cli = new_cli();
    cli.out = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(cli.out);
    *rc = parse(&cli, NULL, 3, "-i", flag);
    fclose(cli.out);
    dcpi_cli_free(&cli);
    return buf;
}

START_TEST(test_aliases_and_long_forms)
{
    /* every spelling of -e arrives as "-e"; --flag=value; --flag for -flag */
    const char *spell[][3] = {{"-e", "cpu-clock", NULL},         {"-s", "cpu-clock", NULL},
                              {"-event", "cpu-clock", NULL},     {"--event", "cpu-clock", NULL},
                              {"--event=cpu-clock", NULL, NULL}, {"--s=cpu-clock", NULL, NULL}};
    for (size_t k = 0; k < sizeof spell / sizeof spell[0]; k++) {
        dcpi_cli_t cli = new_cli();
        char err[DCPI_ERRLEN];
        int rc = spell[k][1] ? parse(&cli, err, 3, spell[k][0], spell[k][1])
                             : parse(&cli, err, 2, spell[k][0]);
        ck_assert_msg(rc == 0, "%s: %s", spell[k][0], err);
        ck_assert_int_eq(cli.nopts, 2);
        ck_assert_str_eq(cli.opts[0], "-e");
        ck_assert_str_eq(cli.opts[1], "cpu-clock");
        dcpi_cli_free(&cli);
    }
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse(&cli, err, 9, "--db=/d", "--epoch", "latest-2", "--keep=5", "--i",
                           "--output", "-", "x"),
                     0);
    ck_assert_str_eq(cli.db_arg, "/d");
    ck_assert_str_eq(cli.epoch_spec, "latest-2");
    ck_assert_int_eq(cli.nopts, 5);
    ck_assert_str_eq(cli.opts[0], "-keep");
    ck_assert_str_eq(cli.opts[1], "5");
    ck_assert_str_eq(cli.opts[2], "-i");
    ck_assert_str_eq(cli.opts[3], "-o");
    ck_assert_str_eq(cli.opts[4], "-"); /* "-o -": standard output, the tool's business */
    ck_assert_int_eq(cli.nargs, 1);
    ck_assert_ptr_null(cli.args[1]);
    dcpi_cli_free(&cli);

    /* every argument a --flag=VALUE: twice as many entries in opts as arguments */
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 6, "--keep=1", "--keep=2", "--e=3", "--o=4", "--keep=5"), 0);
    ck_assert_int_eq(cli.nopts, 10);
    ck_assert_str_eq(cli.opts[9], "5");
    ck_assert_int_eq(cli.nargs, 0);
    ck_assert_ptr_null(cli.args[0]);
    dcpi_cli_free(&cli);

    /* a flag without a value given one, and --pid only with process_flags */
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 2, "--i=3"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: flag '--i' takes no value (try -h)");
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 3, "--pid", "12"), DCPI_EINVAL);
    cli = new_cli();
    cli.process_flags = 1;
    ck_assert_int_eq(parse(&cli, err, 3, "--pid", "12"), 0);
    ck_assert_int_eq(cli.procsel.pid, 12);
    dcpi_cli_free(&cli);
}
END_TEST

/* The unbound flags stay in cli.opts in command-line order, by the table's name whichever
 * alias was typed, each followed by its value. */
START_TEST(test_opts)
{
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN], buf[256] = "";
    ck_assert_int_eq(parse(&cli, err, 9, "-i", "-keep", "-i", "--s=x", "img", "-i", "-o", "f"), 0);
    for (int i = 0; i < cli.nopts; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s;", cli.opts[i]);
    ck_assert_str_eq(buf, "-i;-keep;-i;-e;x;-i;-o;f;");
    dcpi_cli_free(&cli);
}
END_TEST

/* Bound flags: set by dcpi_cli_parse into their fields, in command-line order; unbound flags
 * stay in opts; a bad value fails the parse (DCPI_EINVAL, the message on stderr). */
START_TEST(test_bound_flags)
{
    static struct {
        int all, mode;
        unsigned n;
        size_t z;
        double pct;
        const char *out;
        dcpi_cli_list_t names;
    } b;
    static const dcpi_cli_flag_t bf[] = {
        DCPI_OPT_BOOL("-all", &b.all, "all"),
        DCPI_OPT_SET("-fast", &b.mode, 2, "mode 2"),
        DCPI_OPT_UINT("-n", "N", &b.n, 1, 10, "n"),
        DCPI_OPT_SIZE("-z", "Z", &b.z, 0, 1000, "z"),
        DCPI_OPT_DOUBLE("-pct", "PCT", &b.pct, 0, 100, "pct"),
        DCPI_OPT_STR("-o", "FILE", &b.out, "out"),
        DCPI_OPT_LIST("-name", "NAME", &b.names, "names"),
        DCPI_OPT_PLAIN("-plain", "V", "left to the tool", NULL),
        DCPI_OPT_END,
    };
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = {.tool = "tool", .flags = bf, .omit = DCPI_CLI_SHARED};
    ck_assert_int_eq(parse(&cli, err, 16, "-all", "-n", "3", "-name", "a", "-plain", "p", "-z", "7",
                           "-pct", "2.5", "--o=f", "-name", "b", "-fast"),
                     0);
    ck_assert_int_eq(b.all, 1);
    ck_assert_int_eq(b.mode, 2);
    ck_assert_uint_eq(b.n, 3);
    ck_assert_uint_eq(b.z, 7);
    ck_assert(b.pct == 2.5);
    ck_assert_str_eq(b.out, "f");
    ck_assert_int_eq(b.names.n, 2);
    ck_assert_str_eq(b.names.v[1], "b");
    ck_assert_ptr_null(b.names.v[2]);
    ck_assert_int_eq(cli.nopts, 2); /* only the unbound flag and its value */
    ck_assert_str_eq(cli.opts[0], "-plain");
    ck_assert_str_eq(cli.opts[1], "p");
    dcpi_cli_free(&cli);
    free(b.names.v);
    ck_assert_int_eq(parse(&cli, err, 3, "-n", "11"), DCPI_EINVAL);
    ck_assert_str_eq(err, ""); /* the message went to stderr */
    ck_assert_int_eq(dcpi_cli_exit(DCPI_EINVAL, err), 2);
    /* two errors: the first in the line is reported (the bad value, not the unknown flag) */
    ck_assert_int_eq(parse(&cli, err, 4, "-n", "11", "-nosuch"), DCPI_EINVAL);
    ck_assert_str_eq(err, "");
    ck_assert_int_eq(parse(&cli, err, 4, "-nosuch", "-n", "11"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: unknown flag '-nosuch' (try -h)");
    /* help wins over a bad value, as the tools' own parsing did */
    FILE *null = fopen("/dev/null", "w");
    cli.out = null;
    ck_assert_int_eq(parse(&cli, err, 4, "-n", "11", "-h"), DCPI_CLI_DONE);
    fclose(null);
}
END_TEST

START_TEST(test_suggestions)
{
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN];
    ck_assert_int_eq(parse(&cli, err, 2, "-kep"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: unknown flag '-kep': did you mean -keep? (try -h)");
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 2, "-evnet"), DCPI_EINVAL); /* two letters swapped */
    ck_assert_str_eq(err, "tool: unknown flag '-evnet': did you mean -event? (try -h)");
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 2, "-platfrom"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: unknown flag '-platfrom': did you mean -platform? (try -h)");
    cli = new_cli(); /* nothing close: no guess */
    ck_assert_int_eq(parse(&cli, err, 2, "-frobnicate"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: unknown flag '-frobnicate' (try -h)");
}
END_TEST

START_TEST(test_omit_override_command)
{
    /* a tool without the shared flags does not take them */
    dcpi_cli_t cli = new_cli();
    char err[DCPI_ERRLEN];
    cli.omit = DCPI_CLI_SHARED;
    ck_assert_int_eq(parse(&cli, err, 3, "-db", "x"), DCPI_EINVAL);
    ck_assert_str_eq(err, "tool: unknown flag '-db' (try -h)");

    /* a tool's own -epoch replaces the shared one: its values go to opts, in order */
    static const dcpi_cli_flag_t own[] = {DCPI_OPT_PLAIN("-epoch", "E", "repeatable", NULL),
                                          DCPI_OPT_END};
    cli = (dcpi_cli_t){.tool = "tool", .flags = own};
    ck_assert_int_eq(parse(&cli, err, 4, "-epoch", "a", "--epoch=b"), 0);
    ck_assert_ptr_null(cli.epoch_spec);
    ck_assert_int_eq(cli.nopts, 4);
    ck_assert_str_eq(cli.opts[1], "a");
    ck_assert_str_eq(cli.opts[3], "b");
    dcpi_cli_free(&cli);

    /* a command tool: operands only after "--", a stray one says how */
    cli = (dcpi_cli_t){.tool = "dcpid", .flags = tflags, .command = 1};
    ck_assert_int_eq(parse(&cli, err, 4, "-db", "x", "./prog"), DCPI_EINVAL);
    ck_assert_str_eq(err, "dcpid: unexpected argument './prog': to run a command, put '--' before "
                          "it (dcpid [flags] -- ./prog ...)");
    cli = (dcpi_cli_t){.tool = "dcpid", .flags = tflags, .command = 1};
    ck_assert_int_eq(parse(&cli, err, 6, "-i", "--", "./prog", "-i", "x"), 0);
    ck_assert_int_eq(cli.dashdash, 1);
    ck_assert_int_eq(cli.nopts, 1);
    ck_assert_int_eq(cli.nargs, 3);
    ck_assert_str_eq(cli.args[0], "./prog");
    ck_assert_str_eq(cli.args[1], "-i");
    ck_assert_ptr_null(cli.args[3]); /* an argv for execvp */
    dcpi_cli_free(&cli);
}
END_TEST

START_TEST(test_help_and_version)
{
    int rc;
    char *v = run_to_string("-V", &rc);
    ck_assert_int_eq(rc, DCPI_CLI_DONE);
    ck_assert_str_eq(v, "tool (dcpi) 0.1.0\n");
    free(v);
    char *h = run_to_string("-h", &rc);
    ck_assert_int_eq(rc, DCPI_CLI_DONE);
    ck_assert_ptr_nonnull(strstr(h, "usage: tool [-db DIR]"));
    ck_assert_ptr_nonnull(strstr(h, "[-keep PCT]"));
    ck_assert_ptr_nonnull(strstr(h, "[names...]"));
    ck_assert_ptr_nonnull(strstr(h, "keep rows"));
    ck_assert_ptr_nonnull(strstr(h, "\n  -e, -s, -event, --event EVENT"));
    ck_assert_ptr_nonnull(strstr(h, "\n  -h, -help, --help "));
    ck_assert_ptr_nonnull(strstr(h, "\n  -V, -version, --version "));
    free(h);
    h = run_to_string("--help", &rc);
    ck_assert_int_eq(rc, DCPI_CLI_DONE);
    ck_assert_ptr_nonnull(strstr(h, "usage: tool"));
    free(h);
}
END_TEST

/* ---- a temporary database ---- */

static char tmpdb[64];

static void make_db(void)
{
    snprintf(tmpdb, sizeof(tmpdb), "/tmp/check_cli.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdb));
}

static void mkdir_p(const char *path)
{
    char cmd[4300];
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

static void remove_db(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdb);
    ck_assert_int_eq(system(cmd), 0);
}

/* Write DB/epoch/platform/imagedir/<event>.prof with count samples at offsets 0 and 4. */
static void write_prof(const char *epoch, const char *platform, const char *imagedir,
                       const char *id, const char *path, const char *event, unsigned period,
                       unsigned lost, unsigned c0, unsigned c4)
{
    char dir[4096], file[4200], err[DCPI_ERRLEN];
    snprintf(dir, sizeof(dir), "%s/%s/%s/%s", tmpdb, epoch, platform, imagedir);
    mkdir_p(dir);
    snprintf(file, sizeof(file), "%s/%s.prof", dir, event);
    dcpi_profile_t *p;
    ck_assert_int_eq(dcpi_profile_new(&p), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "image", id), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "epoch", epoch), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "platform", platform), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "event", event), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "period", "%u", period), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "tstart", "0x1000"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "tsize", "4096"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "cpuspeed", "1000"), 0);
    ck_assert_int_eq(dcpi_profile_set(p, "path", path), 0);
    ck_assert_int_eq(dcpi_profile_setf(p, "lost", "%u", lost), 0);
    if (c0)
        ck_assert_int_eq(dcpi_profile_add(p, 0, c0), 0);
    if (c4)
        ck_assert_int_eq(dcpi_profile_add(p, 4, c4), 0);
    ck_assert_msg(dcpi_profile_write(file, p, err) == 0, "%s", err);
    dcpi_profile_free(p);
}

START_TEST(test_epoch_latest_minus_1)
{
    make_db();
    write_prof("202401010000", "p1", "a_aa", "aa", "/bin/a", "cpu-clock", 1000, 0, 1, 0);
    write_prof("202401020000", "p1", "a_aa", "aa", "/bin/a", "cpu-clock", 1000, 0, 1, 0);
    write_prof("202401030000", "p2", "a_aa", "aa", "/bin/a", "cpu-clock", 1000, 0, 1, 0);
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 5, "-db", tmpdb, "-epoch", "latest-1"), 0);
    ck_assert_msg(dcpi_cli_resolve(&cli, err) == 0, "%s", err);
    ck_assert_str_eq(cli.epoch, "202401020000");
    ck_assert_str_eq(cli.db, tmpdb);
    dcpi_cli_free(&cli);

    /* With -platform, only epochs holding that platform count. */
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 7, "-db", tmpdb, "-epoch", "latest-1", "-platform", "p1"), 0);
    ck_assert_msg(dcpi_cli_resolve(&cli, err) == 0, "%s", err);
    ck_assert_str_eq(cli.epoch, "202401010000");
    dcpi_cli_free(&cli);

    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 3, "-db", tmpdb), 0);
    ck_assert_int_eq(dcpi_cli_resolve(&cli, err), 0);
    ck_assert_str_eq(cli.epoch, "202401030000");
    dcpi_cli_free(&cli);

    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 5, "-db", tmpdb, "-epoch", "latest-7"), 0);
    ck_assert_int_lt(dcpi_cli_resolve(&cli, err), 0);
    ck_assert_msg(strncmp(err, "tool: ", 6) == 0 && !strchr(err, '\n'), "%s", err);
    dcpi_cli_free(&cli);
    remove_db();
}
END_TEST

START_TEST(test_db_errors)
{
    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 3, "-db", "/nonexistent/dcpidb"), 0);
    ck_assert_int_eq(dcpi_cli_resolve(&cli, err), DCPI_ENOENT);
    ck_assert_str_eq(err, "tool: /nonexistent/dcpidb: no such database directory (from -db); "
                          "record one with 'dcpid -db /nonexistent/dcpidb', or name an existing "
                          "one with -db DIR");
    dcpi_cli_free(&cli);
    cli = new_cli(); /* a plain file */
    ck_assert_int_eq(parse(&cli, err, 3, "-db", "/etc/hostname"), 0);
    ck_assert_int_eq(dcpi_cli_resolve(&cli, err), DCPI_ENOENT);
    ck_assert_str_eq(err, "tool: /etc/hostname: not a directory (from -db); a database is the "
                          "directory dcpid writes");
    dcpi_cli_free(&cli);

    make_db(); /* exists, but holds no epoch */
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 3, "-db", tmpdb), 0);
    ck_assert_int_lt(dcpi_cli_resolve(&cli, err), 0);
    ck_assert_msg(strncmp(err, "tool: ", 6) == 0 && strstr(err, "no epochs"), "%s", err);
    dcpi_cli_free(&cli);

    /* $DCPIDB is the default database. */
    setenv("DCPIDB", tmpdb, 1);
    cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 1), 0);
    dcpi_cli_resolve(&cli, err);
    ck_assert_str_eq(cli.db, tmpdb);
    dcpi_cli_free(&cli);
    remove_db();
}
END_TEST

START_TEST(test_load_groups_images)
{
    make_db();
    const char *e = "202401010000";
    write_prof(e, "p1", "a_aa", "aa", "/bin/a", "cpu-clock", 1000, 2, 10, 5);
    write_prof(e, "p2", "a_aa", "aa", "/bin/a", "cpu-clock", 1000, 3, 1, 0);
    write_prof(e, "p1", "a_aa", "aa", "/bin/a", "task-clock", 2000, 0, 7, 0);
    write_prof(e, "p1", "b_bb", "bb", "/usr/lib/b.so", "cpu-clock", 1000, 0, 0, 4);
    write_prof(e, "p1", "unknown@p1", "0", "unknown", "cpu-clock", 1000, 0, 2, 0);
    write_prof(e, "p2", "unknown@p2", "0", "unknown", "cpu-clock", 500, 0, 3, 0);

    char err[DCPI_ERRLEN];
    dcpi_cli_t cli = new_cli();
    ck_assert_int_eq(parse(&cli, err, 3, "-db", tmpdb), 0);
    dcpi_profset_t *set = NULL;
    ck_assert_msg(dcpi_cli_load(&cli, &set, err) == 0, "%s", err);
    ck_assert_uint_eq(set->nevents, 2);
    ck_assert_str_eq(set->events[0].name, "cpu-clock");
    ck_assert_str_eq(set->events[1].name, "task-clock");
    ck_assert_uint_eq(set->events[0].total, 16 + 4 + 2 + 3);
    ck_assert_uint_eq(set->events[0].lost, 5);
    ck_assert_int_eq(set->events[0].mixed_period, 1);
    ck_assert_uint_eq(set->events[1].period, 2000);
    ck_assert_int_eq(set->events[1].mixed_period, 0);

    ck_assert_uint_eq(set->nimages, 4); /* /bin/a, /usr/lib/b.so, unknown@p1, unknown@p2 */
    const dcpi_profset_image_t *a = &set->images[0];
    ck_assert_str_eq(a->name, "/bin/a");
    ck_assert_int_eq(a->kind, DCPI_PSET_FILE);
    ck_assert_int_eq(a->nplatforms, 2);
    ck_assert_uint_eq(a->tstart, 0x1000);
    ck_assert_uint_eq(dcpi_profile_count_at(a->prof[0], 0), 11); /* p1 10 + p2 1 */
    ck_assert_uint_eq(dcpi_profile_count_at(a->prof[0], 4), 5);
    ck_assert_uint_eq(dcpi_profile_total(a->prof[1]), 7);
    ck_assert_uint_eq(dcpi_profset_image_total(set, a), 23);
    ck_assert_ptr_null(set->images[1].prof[1]);
    ck_assert_str_eq(set->images[2].name, "unknown@p1");
    ck_assert_int_eq(set->images[2].kind, DCPI_PSET_UNKNOWN);
    ck_assert_str_eq(set->images[3].name, "unknown@p2");
    ck_assert_int_eq(dcpi_profset_event_index(set, "task-clock"), 1);
    ck_assert_int_eq(dcpi_profset_event_index(set, "cycles"), -1);

    ck_assert(dcpi_profset_image_matches(&set->images[1], "b.so"));
    ck_assert(dcpi_profset_image_matches(&set->images[1], "/usr/lib/b.so"));
    ck_assert(!dcpi_profset_image_matches(&set->images[1], "b"));
    char *names[] = {"b.so", "unknown@p2"};
    ck_assert_uint_eq(dcpi_profset_filter(set, names, 2), 2);
    ck_assert_uint_eq(set->events[0].total, 4 + 3);
    ck_assert_uint_eq(set->events[1].total, 0);
    dcpi_profset_free(set);

    /* The platform filter. */
    dcpi_profset_t *p2 = NULL;
    ck_assert_msg(dcpi_profset_load(tmpdb, e, "p2", 0, &p2, err) == 0, "%s", err);
    ck_assert_uint_eq(p2->nimages, 2);
    ck_assert_uint_eq(p2->events[0].total, 4);
    dcpi_profset_free(p2);
    dcpi_cli_free(&cli);
    remove_db();
}
END_TEST

START_TEST(test_load_bad_file)
{
    make_db();
    const char *e = "202401010000";
    write_prof(e, "p1", "a_aa", "aa", "/bin/a", "cpu-clock", 1000, 0, 10, 5);
    char path[512];
    snprintf(path, sizeof(path), "%s/%s/p1/a_aa/task-clock.prof", tmpdb, e);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("version pdb-0.07\nimage aa\n", f); /* no terminator */
    fclose(f);
    char err[DCPI_ERRLEN], want[600];
    dcpi_cli_t cli = new_cli();
    dcpi_profset_t *set = NULL;
    /* skipped with a warning: the other profile is loaded, the exit status says 3 */
    ck_assert_int_eq(parse(&cli, err, 3, "-db", tmpdb), 0);
    ck_assert_int_eq(dcpi_cli_load(&cli, &set, err), 0);
    ck_assert_uint_eq(set->nimages, 1);
    ck_assert_int_eq(dcpi_cli_status(0), 3);
    ck_assert_int_eq(dcpi_cli_status(1), 1);
    dcpi_profset_free(set);
    set = NULL;
    dcpi_cli_free(&cli);
    /* -strict (a flag of the tools that ask for it): the error, nothing loaded */
    cli.strict_flag = 1;
    ck_assert_int_eq(parse(&cli, err, 4, "-db", tmpdb, "-strict"), 0);
    ck_assert_int_lt(dcpi_cli_load(&cli, &set, err), 0);
    ck_assert_ptr_null(set);
    snprintf(want, sizeof(want), "tool: %s: ", path);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s", err);
    ck_assert_ptr_null(strchr(err, '\n'));
    dcpi_cli_free(&cli);
    remove_db();
}
END_TEST

START_TEST(test_empty_epoch_and_symbols)
{
    make_db();
    const char *e = "202401010000";
    write_prof(e, "p1", "a_aa", "aa", "/nonexistent/a", "cpu-clock", 1000, 0, 0, 0);
    write_prof(e, "p1", "unknown@p1", "0", "unknown", "cpu-clock", 1000, 0, 0, 0);
    char err[DCPI_ERRLEN], why[DCPI_ERRLEN];
    dcpi_profset_t *set = NULL;
    ck_assert_msg(dcpi_profset_load(tmpdb, e, NULL, 0, &set, err) == 0, "%s", err);
    ck_assert_uint_eq(set->nevents, 1);
    ck_assert_uint_eq(set->events[0].total, 0);
    ck_assert_uint_eq(set->nimages, 2);
    dcpi_symtab_t *st = (dcpi_symtab_t *)1;
    ck_assert_int_lt(dcpi_profset_open_symbols(&set->images[0], &st, why, NULL), 0);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(why, "/nonexistent/a") != NULL, "%s", why);
    ck_assert_int_eq(dcpi_profset_open_symbols(&set->images[1], &st, why, NULL), DCPI_ENOENT);
    ck_assert_str_eq(why, "");
    dcpi_profset_free(set);
    remove_db();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("flags");
    tcase_add_test(tc, test_shared_flags);
    tcase_add_test(tc, test_defaults);
    tcase_add_test(tc, test_tool_flag_values);
    tcase_add_test(tc, test_missing_arguments);
    tcase_add_test(tc, test_unknown_flag);
    tcase_add_test(tc, test_help_and_version);
    tcase_add_test(tc, test_aliases_and_long_forms);
    tcase_add_test(tc, test_suggestions);
    tcase_add_test(tc, test_opts);
    tcase_add_test(tc, test_bound_flags);
    tcase_add_test(tc, test_omit_override_command);
    suite_add_tcase(s, tc);
    TCase *td = tcase_create("db");
    tcase_add_test(td, test_epoch_latest_minus_1);
    tcase_add_test(td, test_db_errors);
    tcase_add_test(td, test_load_groups_images);
    tcase_add_test(td, test_load_bad_file);
    tcase_add_test(td, test_empty_epoch_and_symbols);
    suite_add_tcase(s, td);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
