/*
 * cli.c - the one flag parser of every tool: the tool's table plus the shared flags (-db,
 * -epoch, -platform, -pid, -comm, -h, -V), aliases, --flag=value, typo suggestions, the usage
 * text; the resolution of -db/-epoch and the loading of the chosen epoch's profile set (cli.h).
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/fleet/query.h"
#include "core/model/imagemap.h"
#include "core/store/epochs.h"
#include "dcpi/errno.h"
#include "dcpi/version.h"

int dcpi_cli_number(const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !(d >= lo && d <= hi))
        return DCPI_EINVAL;
    *out = d;
    return 0;
}

int dcpi_cli_flag_number(const char *tool, const char *flag, const char *v, double lo, double hi,
                         double *out)
{
    if (dcpi_cli_number(v, lo, hi, out) == 0)
        return 0;
    fprintf(stderr, "%s: %s wants a number from %g to %g, not '%s'\n", tool, flag, lo, hi, v);
    return 2;
}

void dcpi_cli_prefix_err(const dcpi_cli_t *cli, char *err)
{
    size_t n = strlen(cli->tool);
    if (err && !strncmp(err, cli->tool, n) && !strncmp(err + n, ": ", 2))
        return; /* (already there: the epoch selection's messages name the tool) */
    dcpi__err_prefix(err, cli->tool);
}

int dcpi_cli_flag_uint(const char *tool, const char *flag, const char *v, unsigned long lo,
                       unsigned long hi, unsigned long *out)
{
    double d;
    if (dcpi_cli_number(v, (double)lo, (double)hi, &d) == 0 && d == (double)(unsigned long)d &&
        !strpbrk(v, ".eExX")) {
        *out = (unsigned long)d;
        return 0;
    }
    fprintf(stderr, "%s: %s wants a whole number from %lu to %lu, not '%s'\n", tool, flag, lo, hi,
            v);
    return 2;
}

/* ---- the flag tables ---- */

enum shared_id {
    SF_NONE,
    SF_DB,
    SF_EPOCH,
    SF_PLATFORM,
    SF_PID,
    SF_COMM,
    SF_FLEET,
    SF_HOST,
    SF_SINCE,
    SF_UNTIL,
    SF_STRICT,
    SF_HELP,
    SF_VERSION
};

typedef struct shared_flag {
    enum shared_id id;
    int bit; /* DCPI_CLI_* (omit), 0: always there */
    dcpi_cli_flag_t f;
} shared_flag_t;

static const shared_flag_t shared[] = {
    {SF_DB,
     DCPI_CLI_DB,
     DCPI_OPT_PLAIN("-db", "DIR", "profile database (default: $DCPIDB, else ./dcpidb)", NULL),},
    {SF_EPOCH,
     DCPI_CLI_EPOCH,
     DCPI_OPT_PLAIN("-epoch", "E",
      "epoch: a name, latest (default) or latest-N (N before the newest); all or A..B where "
      "the tool merges epochs",
      NULL),},
    {SF_PLATFORM,
     DCPI_CLI_PLATFORM,
     DCPI_OPT_PLAIN("-platform", "P", "only this platform (default: all platforms)", NULL),},
    {SF_PID, 0, DCPI_OPT_PLAIN("-pid", "PID", "only the samples of process PID", "--pid"),},
    {SF_COMM, 0, DCPI_OPT_PLAIN("-comm", "NAME", "only the samples of processes named NAME", "--comm"),},
    {SF_FLEET, 0, DCPI_OPT_PLAIN("-fleet", "URL", "read the fleet store at URL (ClickHouse), not -db", NULL),},
    {SF_HOST, 0, DCPI_OPT_PLAIN("-host", "H[,H...]", "-fleet: only these hosts", NULL),},
    {SF_SINCE,
     0,
     DCPI_OPT_PLAIN("-since", "T", "only epochs that end after T (2026-01-31[T12:00], 24h, @UNIX)", NULL),},
    {SF_UNTIL, 0, DCPI_OPT_PLAIN("-until", "T", "only epochs that start before T", NULL),},
    {SF_STRICT,
     0,
     DCPI_OPT_PLAIN("-strict", NULL, "a damaged file is an error (exit 1), not skipped with a warning (exit 3)",
      NULL),},
    {SF_HELP, 0, DCPI_OPT_PLAIN("-h", NULL, "print this help and exit", "-help --help"),},
    {SF_VERSION, 0, DCPI_OPT_PLAIN("-V", NULL, "print the version and exit", "-version --version"),},
};
#define NSHARED (sizeof(shared) / sizeof(shared[0]))

/* 1 when spelling a (len bytes) is f's name or one of its aliases. */
static int spells(const dcpi_cli_flag_t *f, const char *a, size_t len)
{
    if (strlen(f->name) == len && !strncmp(f->name, a, len))
        return 1;
    for (const char *p = f->alias; p && *p;) {
        size_t n = strcspn(p, " ");
        if (n == len && !strncmp(p, a, len))
            return 1;
        p += n;
        p += strspn(p, " ");
    }
    return 0;
}

static const dcpi_cli_flag_t *tool_flag(const dcpi_cli_t *cli, const char *a, size_t len)
{
    for (const dcpi_cli_flag_t *f = cli->flags; f && f->name; f++)
        if (spells(f, a, len))
            return f;
    return NULL;
}

/* The shared flag named like a tool flag is replaced by it. */
static int overridden(const dcpi_cli_t *cli, const shared_flag_t *s)
{
    return tool_flag(cli, s->f.name, strlen(s->f.name)) != NULL;
}

static int shared_on(const dcpi_cli_t *cli, const shared_flag_t *s)
{
    if (s->bit & cli->omit)
        return 0;
    if ((s->id == SF_PID || s->id == SF_COMM) && !cli->process_flags)
        return 0;
    if ((s->id == SF_SINCE || s->id == SF_UNTIL) && !cli->fleet_flags && !cli->multi_epoch)
        return 0;
    if ((s->id == SF_FLEET || s->id == SF_HOST) && !cli->fleet_flags)
        return 0;
    if (s->id == SF_STRICT && !cli->strict_flag)
        return 0;
    return !overridden(cli, s);
}

/* Find spelling a (len bytes): a tool flag (*tf) or a shared one (returned id). */
static enum shared_id lookup(const dcpi_cli_t *cli, const char *a, size_t len,
                             const dcpi_cli_flag_t **tf)
{
    *tf = tool_flag(cli, a, len);
    if (*tf)
        return SF_NONE;
    for (size_t k = 0; k < NSHARED; k++)
        if (shared_on(cli, &shared[k]) && spells(&shared[k].f, a, len))
            return shared[k].id;
    return SF_NONE;
}

/* ---- usage ---- */

/* "-e, -s, --event EVENT" */
static void flag_left(const dcpi_cli_flag_t *f, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "%s", f->name);
    for (const char *p = f->alias; p && *p && n < len;) {
        size_t k = strcspn(p, " ");
        n += (size_t)snprintf(buf + n, len - n, ", %.*s", (int)k, p);
        p += k;
        p += strspn(p, " ");
    }
    if (f->arg && n < len)
        snprintf(buf + n, len - n, " %s", f->arg);
}

/* "  LEFT   help", the help's further lines indented under its first. */
static void flag_line(const dcpi_cli_flag_t *f, FILE *out)
{
    char left[160];
    flag_left(f, left, sizeof left);
    if (strlen(left) > 24)
        fprintf(out, "  %s\n  %-24s ", left, "");
    else
        fprintf(out, "  %-24s ", left);
    for (const char *h = f->help ? f->help : ""; *h;) {
        size_t n = strcspn(h, "\n");
        fprintf(out, "%.*s", (int)n, h);
        h += n;
        if (*h == '\n' && *++h)
            fprintf(out, "\n  %-24s ", "");
    }
    fputc('\n', out);
}

/* Append one synopsis word, wrapping at 100 columns under the tool's name. */
static void synopsis_word(FILE *out, const char *w, size_t *col, size_t indent)
{
    size_t n = strlen(w);
    if (*col + 1 + n > 100) {
        fprintf(out, "\n%*s", (int)indent, "");
        *col = indent;
    } else {
        fputc(' ', out);
        (*col)++;
    }
    fputs(w, out);
    *col += n;
}

static void synopsis_flag(FILE *out, const dcpi_cli_flag_t *f, size_t *col, size_t indent)
{
    char w[96];
    snprintf(w, sizeof w, f->arg ? "[%s %s]" : "[%s]", f->name, f->arg);
    synopsis_word(out, w, col, indent);
}

void dcpi_cli_usage(const dcpi_cli_t *cli, FILE *f)
{
    size_t indent = strlen("usage: ") + strlen(cli->tool), col = indent;
    fprintf(f, "usage: %s", cli->tool);
    for (size_t k = 0; k < NSHARED; k++)
        if (shared[k].id < SF_HELP && shared_on(cli, &shared[k]))
            synopsis_flag(f, &shared[k].f, &col, indent);
    for (const dcpi_cli_flag_t *fl = cli->flags; fl && fl->name; fl++)
        synopsis_flag(f, fl, &col, indent);
    if (cli->command)
        synopsis_word(f, "[-- command args...]", &col, indent);
    else if (cli->operands)
        synopsis_word(f, cli->operands, &col, indent);
    fprintf(f, "\n       %s -h | -V\n\n", cli->tool);
    for (size_t k = 0; k < NSHARED; k++)
        if (shared[k].id < SF_HELP && shared_on(cli, &shared[k]))
            flag_line(&shared[k].f, f);
    for (const dcpi_cli_flag_t *fl = cli->flags; fl && fl->name; fl++)
        flag_line(fl, f);
    for (size_t k = 0; k < NSHARED; k++)
        if (shared[k].id >= SF_HELP)
            flag_line(&shared[k].f, f);
    if (cli->footer)
        fprintf(f, "\n%s\n", cli->footer);
    fprintf(f, "\nAny flag may be written with two dashes, and then take its value after '=' "
               "(--flag=VALUE);\n-- ends the flags. See dcpi(7).\n");
}

/* ---- suggestions ---- */

/* Edit distance of a and b, two swapped letters counting as one edit (short strings; longer
 * ones count as far apart). */
static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), rows[3][64];
    if (la >= 63 || lb >= 63)
        return 99;
    for (size_t j = 0; j <= lb; j++)
        rows[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3], *prev2 = rows[(i + 1) % 3];
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t best = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < best)
                best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                prev2[j - 2] + 1 < best) /* two letters swapped */
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
    }
    return rows[la % 3][lb];
}

static void consider(const char *a, const char *cand, size_t clen, const char **best, size_t *bestd,
                     size_t *bestlen)
{
    char c[64];
    if (clen >= sizeof c)
        return;
    memcpy(c, cand, clen);
    c[clen] = '\0';
    const char *x = a + strspn(a, "-"), *y = c + strspn(c, "-");
    size_t d = distance(x, y);
    if (d < *bestd) {
        *bestd = d;
        *best = cand;
        *bestlen = clen;
    }
}

/* The spelling closest to the unknown a, when it is close (a typo), into buf. */
static int suggest(const dcpi_cli_t *cli, const char *a, char *buf, size_t len)
{
    const char *best = NULL;
    size_t bestd = 99, bestlen = 0, n = strlen(a + strspn(a, "-"));
    for (const dcpi_cli_flag_t *f = cli->flags; f && f->name; f++) {
        consider(a, f->name, strlen(f->name), &best, &bestd, &bestlen);
        for (const char *p = f->alias; p && *p; p += strspn(p, " ")) {
            size_t k = strcspn(p, " ");
            consider(a, p, k, &best, &bestd, &bestlen);
            p += k;
        }
    }
    for (size_t k = 0; k < NSHARED; k++)
        if (shared_on(cli, &shared[k]))
            consider(a, shared[k].f.name, strlen(shared[k].f.name), &best, &bestd, &bestlen);
    size_t allowed = n < 3 ? 0 : n < 6 ? 1 : 2;
    if (!best || bestd > allowed)
        return 0;
    snprintf(buf, len, "%.*s", (int)bestlen, best);
    return 1;
}

/* ---- parsing ---- */

/* Store the value of a shared flag; returns 0 or DCPI_EINVAL. */
static int set_shared(dcpi_cli_t *cli, enum shared_id sf, const char *name, const char *val,
                      char *err)
{
    if (!val) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%s' needs an argument (try -h)", cli->tool,
                          name);
    }
    if (!*val) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%s' needs a non-empty argument (try -h)",
                          cli->tool, name);
    }
    if (sf == SF_PID) {
        double pid;
        if (dcpi_cli_number(val, 0, 4194304, &pid) < 0 || pid != (long)pid)
            return dcpi__errf(err, DCPI_EINVAL, "%s: -pid wants a process id, not '%s'", cli->tool,
                              val);
        cli->procsel.pid = (long)pid;
    } else if (sf == SF_COMM)
        cli->procsel.comm = val;
    else if (sf == SF_FLEET)
        cli->fleet_url = val;
    else if (sf == SF_HOST)
        cli->hosts = val;
    else if (sf == SF_SINCE)
        cli->since_arg = val;
    else if (sf == SF_UNTIL)
        cli->until_arg = val;
    else if (sf == SF_DB)
        cli->db_arg = val;
    else if (sf == SF_EPOCH)
        cli->epoch_spec = val;
    else
        cli->platform = val;
    return 0;
}

static int unknown(const dcpi_cli_t *cli, const char *a, char *err)
{
    char near[64];
    if (suggest(cli, a, near, sizeof near))
        return dcpi__errf(err, DCPI_EINVAL, "%s: unknown flag '%s': did you mean %s? (try -h)",
                          cli->tool, a, near);
    return dcpi__errf(err, DCPI_EINVAL, "%s: unknown flag '%s' (try -h)", cli->tool, a);
}

/* Handle argv[*i]; advances *i past a consumed value. Returns 0, DCPI_CLI_DONE or an error. */
static int parse_one(dcpi_cli_t *cli, int argc, char **argv, int *i, char *err)
{
    char *a = argv[*i];
    size_t len = strlen(a);
    char *inline_val = NULL;
    if (a[1] == '-' && strchr(a, '=')) { /* --flag=value */
        len = (size_t)(strchr(a, '=') - a);
        inline_val = a + len + 1;
    }
    const dcpi_cli_flag_t *tf;
    enum shared_id sf = lookup(cli, a, len, &tf);
    if (!tf && sf == SF_NONE && a[1] == '-') /* --flag for -flag */
        sf = lookup(cli, a + 1, len - 1, &tf);
    if (!tf && sf == SF_NONE)
        return unknown(cli, a, err);
    const char *name = tf ? tf->name : shared[0].f.name;
    for (size_t k = 0; !tf && k < NSHARED; k++)
        if (shared[k].id == sf)
            name = shared[k].f.name;
    int takes = tf ? tf->arg != NULL : sf < SF_STRICT;
    if (inline_val && !takes) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%.*s' takes no value (try -h)", cli->tool,
                          (int)len, a);
    }
    FILE *out = cli->out ? cli->out : stdout;
    if (sf == SF_HELP) {
        dcpi_cli_usage(cli, out);
        return DCPI_CLI_DONE;
    }
    if (sf == SF_VERSION) {
        fprintf(out, "%s (dcpi) %s\n", cli->tool, DCPI_VERSION_STRING);
        return DCPI_CLI_DONE;
    }
    const char *val = inline_val ? inline_val : takes && *i + 1 < argc ? argv[*i + 1] : NULL;
    if (takes && !val) {
        return dcpi__errf(err, DCPI_EINVAL, "%s: flag '%s' needs an argument (try -h)", cli->tool,
                          a);
    }
    *i += takes && !inline_val;
    if (sf == SF_STRICT) {
        cli->strict = 1;
        return 0;
    }
    if (sf != SF_NONE)
        return set_shared(cli, sf, name, val, err);
    cli->opts[cli->nopts++] = (char *)name;
    if (takes)
        cli->opts[cli->nopts++] = (char *)val;
    return 0;
}

/* A .command tool given an operand before "--". */
static int stray_operand(const dcpi_cli_t *cli, const char *a, char *err)
{
    if (a[0] == '-') /* "-" alone */
        return dcpi__errf(err, DCPI_EINVAL, "%s: unexpected argument '%s' (try -h)", cli->tool, a);
    return dcpi__errf(err, DCPI_EINVAL,
                      "%s: unexpected argument '%s': to run a command, put '--' before it "
                      "(%s [flags] -- %s ...)",
                      cli->tool, a, cli->tool, a);
}

static int bind_all(dcpi_cli_t *cli);

int dcpi_cli_parse(dcpi_cli_t *cli, int argc, char **argv, char *err)
{
    if (err)
        err[0] = '\0';
    if (!cli->tool)
        cli->tool = argc > 0 && argv[0] ? argv[0] : "dcpi";
    cli->db_arg = cli->epoch_spec = cli->platform = NULL;
    cli->procsel = (dcpi_procsel_t){.pid = -1};
    cli->nopts = cli->nargs = cli->dashdash = cli->strict = 0;
    cli->db[0] = cli->epoch[0] = '\0';
    /* One array: the tool's flags fill it from the front (two entries for one "--flag=VALUE"
     * argument), then the operands, then at least one NULL. */
    char **rest = calloc(2 * (size_t)(argc > 0 ? argc : 1) + 1, sizeof(*rest));
    if (!rest) {
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", cli->tool);
    }
    cli->opts = rest;
    char **ops = calloc((size_t)(argc > 0 ? argc : 1), sizeof(*ops));
    if (!ops) {
        free(rest);
        cli->opts = NULL;
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", cli->tool);
    }
    int nops = 0, rc = 0, dashdash = 0;
    for (int i = 1; i < argc && rc == 0; i++) {
        char *a = argv[i];
        if (dashdash)
            ops[nops++] = a;
        else if (!strcmp(a, "--"))
            dashdash = cli->dashdash = 1;
        else if (a[0] == '-' && a[1] != '\0')
            rc = parse_one(cli, argc, argv, &i, err);
        else if (cli->command)
            rc = stray_operand(cli, a, err);
        else
            ops[nops++] = a;
    }
    dcpi__damage_init(cli->tool, cli->strict);
    cli->args = rest + cli->nopts;
    memcpy(cli->args, ops, (size_t)nops * sizeof(*ops));
    cli->nargs = nops;
    free(ops);
    if (rc == 0)
        rc = bind_all(cli);
    else if (rc == DCPI_EINVAL && bind_all(cli) < 0 && err)
        err[0] = '\0'; /* a bad value before the error in the line: the first is reported */
    if (rc != 0)
        dcpi_cli_free(cli); /* -h, -V or an error: the caller exits without the arrays */
    return rc;
}

/* A bound flag's value into its destination: 0, or an exit status after the message. */
static int bind_one(const dcpi_cli_t *cli, const dcpi_cli_flag_t *f, const char *v)
{
    unsigned long n = 0;
    int rc = 0;
    switch (f->type) {
    case DCPI_CLI_BOOL:
        *(int *)f->dst = 1;
        break;
    case DCPI_CLI_STR:
        *(const char **)f->dst = v;
        break;
    case DCPI_CLI_UINT:
        if ((rc = dcpi_cli_flag_uint(cli->tool, f->name, v, (unsigned long)f->lo,
                                     (unsigned long)f->hi, &n)) == 0)
            *(unsigned *)f->dst = (unsigned)n;
        break;
    case DCPI_CLI_SIZE:
        if ((rc = dcpi_cli_flag_uint(cli->tool, f->name, v, (unsigned long)f->lo,
                                     (unsigned long)f->hi, &n)) == 0)
            *(size_t *)f->dst = n;
        break;
    case DCPI_CLI_DOUBLE:
        rc = dcpi_cli_flag_number(cli->tool, f->name, v, f->lo, f->hi, f->dst);
        break;
    case DCPI_CLI_CALL:
        rc = f->set(f->dst, v);
        break;
    case DCPI_CLI_LIST: {
        dcpi_cli_list_t *l = f->dst;
        const char **grown = realloc(l->v, ((size_t)l->n + 2) * sizeof(*grown));
        if (!grown) {
            fprintf(stderr, "%s: out of memory\n", cli->tool);
            return 1;
        }
        l->v = grown;
        l->v[l->n++] = v;
        l->v[l->n] = NULL;
        break;
    }
    case DCPI_CLI_SET:
        *(int *)f->dst = (int)f->lo;
        break;
    case DCPI_CLI_UNUM: {
        double d = 0;
        if ((rc = dcpi_cli_flag_number(cli->tool, f->name, v, f->lo, f->hi, &d)) == 0)
            *(unsigned *)f->dst = (unsigned)d;
        break;
    }
    default:
        break;
    }
    return rc;
}

/* The bound flags of cli.opts into their destinations, in command-line order; the unbound ones
 * stay in cli.opts for the tool. 0, or DCPI_EINVAL after a bad value's message. */
static int bind_all(dcpi_cli_t *cli)
{
    int keep = 0;
    for (int i = 0; i < cli->nopts; i++) {
        const char *f = cli->opts[i];
        const dcpi_cli_flag_t *tf = tool_flag(cli, f, strlen(f));
        int takes = tf && tf->arg && i + 1 < cli->nopts;
        const char *v = takes ? cli->opts[i + 1] : NULL;
        if (tf && tf->type) {
            if (bind_one(cli, tf, v))
                return DCPI_EINVAL;
        } else {
            cli->opts[keep++] = cli->opts[i];
            if (takes)
                cli->opts[keep++] = cli->opts[i + 1];
        }
        i += takes;
    }
    cli->nopts = keep;
    return 0;
}

int dcpi_cli_select(const dcpi_cli_t *cli, dcpi_profset_t *set, const char *mapfile)
{
    char err[DCPI_ERRLEN];
    if (dcpi_profset_select(set, cli->args, (size_t)cli->nargs, cli->tool, cli->epoch) < 0)
        return 1;
    if (mapfile && dcpi_imagemap_use(mapfile, set, cli->tool, err) < 0) {
        fprintf(stderr, "%s: %s\n", cli->tool, err);
        return 1;
    }
    dcpi_profset_warn_saturated(set, cli->tool);
    return 0;
}

int dcpi_cli_proc_image(const dcpi_cli_t *cli, const char *pfile, const char **proc,
                        const char **image)
{
    int want = pfile ? 1 : 2;
    if (cli->nargs < 1 || cli->nargs > 2 || (cli->nargs != want && !pfile)) {
        fprintf(stderr, "%s: expected a procedure and an image (try -h)\n", cli->tool);
        return 2;
    }
    *proc = cli->args[0];
    *image = cli->nargs > 1 ? cli->args[1] : pfile;
    return 0;
}

int dcpi_cli_main(dcpi_cli_t *cli, int argc, char **argv, const dcpi_cli_main_t *m, void *arg)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_profset_t *set = NULL;
    int rc = dcpi_cli_parse(cli, argc, argv, err);
    int status = rc ? dcpi_cli_exit(rc, err) : m->check ? m->check(cli, arg) : 0;
    if (rc == 0 && status == 0 && m->load && (rc = dcpi_cli_load(cli, &set, err)) < 0) {
        if (m->load == DCPI_CLI_LOAD_EXIT)
            status = dcpi_cli_exit(rc, err);
        else
            fprintf(stderr, "%s\n", err); /* database and file errors: exit 1 */
        status = m->load == DCPI_CLI_LOAD_EXIT ? status : 1;
    }
    if (rc == 0 && status == 0)
        status = m->run(cli, set, arg);
    if (m->done)
        m->done(arg); /* what the tool made of the set first */
    dcpi_profset_free(set);
    dcpi_cli_free(cli);
    return m->raw_status ? status : dcpi_cli_status(status); /* 3: damaged files were skipped */
}

void dcpi_cli_free(dcpi_cli_t *cli)
{
    if (!cli)
        return;
    free(cli->opts);
    cli->opts = cli->args = NULL;
    cli->nopts = cli->nargs = 0;
    dcpi_db_free_list(cli->epochs, cli->nepochs);
    cli->epochs = NULL;
    cli->nepochs = 0;
}

int dcpi_cli_status(int status)
{
    return dcpi__damage_status(status);
}

int dcpi_cli_exit(int rc, const char *err)
{
    if (rc == 0 || rc == DCPI_CLI_DONE)
        return 0;
    if (err && *err)
        fprintf(stderr, "%s\n", err);
    return rc == DCPI_EINVAL ? 2 : 1;
}

/* -since/-until into *since, *until (0: not given); "TOOL: ..." in err. */
static int parse_times(const dcpi_cli_t *cli, int64_t *since, int64_t *until, char *err)
{
    int64_t now = (int64_t)time(NULL);
    *since = *until = 0;
    if (cli->since_arg && dcpi_epoch_parse_time(cli->since_arg, now, since) < 0)
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: -since wants a time (2026-01-31, "
                          "2026-01-31T12:00, 24h, 7d, @UNIX), not '%s'",
                          cli->tool, cli->since_arg);
    if (cli->until_arg && dcpi_epoch_parse_time(cli->until_arg, now, until) < 0)
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: -until wants a time (2026-01-31, "
                          "2026-01-31T12:00, 24h, 7d, @UNIX), not '%s'",
                          cli->tool, cli->until_arg);
    return 0;
}

/* cli->epochs (and cli->epoch) from -epoch, -since, -until. */
static int select_epochs(dcpi_cli_t *cli, char *err)
{
    const char *spec = cli->epoch_spec;
    if (!cli->multi_epoch && spec && (strstr(spec, "..") || !strcmp(spec, "all")))
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: -epoch %s: %s reads one epoch (dcpiprof, dcpilist, dcpicalc, "
                          "dcpiexport, dcpireport and dcpitopcounts merge several)",
                          cli->tool, spec, cli->tool);
    int64_t since = 0, until = 0;
    int rc = cli->multi_epoch ? parse_times(cli, &since, &until, err) : 0;
    if (rc < 0)
        return rc;
    dcpi_db_free_list(cli->epochs, cli->nepochs);
    cli->epochs = NULL;
    cli->nepochs = 0;
    rc = dcpi_epoch_select(cli->db, spec, cli->platform, since, until, &cli->epochs, &cli->nepochs,
                           err);
    if (rc < 0)
        return rc;
    if (cli->nepochs == 1)
        snprintf(cli->epoch, sizeof cli->epoch, "%s", cli->epochs[0]);
    else
        snprintf(cli->epoch, sizeof cli->epoch, "%s..%s", cli->epochs[0],
                 cli->epochs[cli->nepochs - 1]);
    return 0;
}

int dcpi_cli_resolve(dcpi_cli_t *cli, char *err)
{
    snprintf(cli->db, sizeof(cli->db), "%s", dcpi_db_default(cli->db_arg));
    const char *env = getenv("DCPIDB");
    char given[64];
    snprintf(given, sizeof given, "from %s", cli->db_from ? cli->db_from : "-db");
    const char *from = cli->db_arg && *cli->db_arg ? given
                       : env && *env               ? "from $DCPIDB"
                                                   : "the default: no -db, $DCPIDB unset";
    struct stat st;
    if (stat(cli->db, &st) != 0) {
        return dcpi__errf(err, DCPI_ENOENT,
                          "%s: %s: no such database directory (%s); record one with 'dcpid -db "
                          "%s', or name an existing one with -db DIR",
                          cli->tool, cli->db, from, cli->db);
    }
    if (!S_ISDIR(st.st_mode)) {
        return dcpi__errf(err, DCPI_ENOENT,
                          "%s: %s: not a directory (%s); a database is the directory dcpid "
                          "writes",
                          cli->tool, cli->db, from);
    }
    int rc = select_epochs(cli, err);
    if (rc < 0) {
        if (err && !*err)
            dcpi__errf(err, rc, "%s: %s: %s", cli->tool, cli->db, dcpi_strerror(rc));
        else
            dcpi_cli_prefix_err(cli, err);
        cli->epoch[0] = '\0';
        return rc;
    }
    return 0;
}

int dcpi_cli_fleet_filter(const dcpi_cli_t *cli, dcpi_fleet_filter_t *flt, char *err)
{
    *flt = (dcpi_fleet_filter_t){
        .hosts = cli->hosts, .procsel = &cli->procsel, .build_id = cli->build_id};
    return parse_times(cli, &flt->since, &flt->until, err);
}

/* -fleet URL: the fleet store's samples, selected by -host, -since, -until, -pid, -comm. */
static int load_fleet(dcpi_cli_t *cli, dcpi_profset_t **out, char *err)
{
    dcpi_fleet_filter_t flt;
    int rc0 = dcpi_cli_fleet_filter(cli, &flt, err);
    if (rc0 < 0)
        return rc0;
    snprintf(cli->epoch, sizeof cli->epoch, "fleet");
    int by_process = cli->procsel.pid >= 0 || cli->procsel.comm;
    int rc = dcpi_fleet_load(cli->fleet_url, &flt, cli->load_flags, out, err);
    if (rc < 0) {
        dcpi_cli_prefix_err(cli, err);
        return rc;
    }
    if (by_process && (*out)->nimages == 0) {
        dcpi_profset_free(*out);
        *out = NULL;
        return dcpi__errf(err, DCPI_ENOENT,
                          "%s: no samples of the selected processes in the "
                          "fleet",
                          cli->tool);
    }
    return 0;
}

int dcpi_cli_load(dcpi_cli_t *cli, dcpi_profset_t **out, char *err)
{
    *out = NULL;
    if (cli->fleet_url)
        return load_fleet(cli, out, err);
    if (cli->hosts || ((cli->since_arg || cli->until_arg) && !cli->multi_epoch))
        return dcpi__errf(err, DCPI_EINVAL,
                          "%s: -host, -since and -until select in a fleet "
                          "store: give -fleet URL",
                          cli->tool);
    if (!cli->epoch[0]) {
        int rc = dcpi_cli_resolve(cli, err);
        if (rc < 0)
            return rc;
    }
    int by_process = cli->procsel.pid >= 0 || cli->procsel.comm;
    int flags = cli->load_flags | (by_process ? DCPI_PSET_LOAD_PROCS : 0);
    /* the selection's epochs, unless the tool named one itself in cli->epoch since */
    const char *one = cli->epoch;
    int several = cli->nepochs > 1 && strstr(cli->epoch, "..");
    const char *const *ev = several ? (const char *const *)cli->epochs : &one;
    size_t nev = several ? cli->nepochs : 1;
    int rc = dcpi_profset_load_epochs(cli->db, ev, nev, cli->platform, flags, out, err);
    size_t missing = 0;
    if (rc == 0 && by_process && (rc = dcpi_profset_by_process(*out, &cli->procsel, &missing)) < 0)
        dcpi__errf(err, rc, "%s: out of memory", cli->db);
    for (size_t k = 0; rc == 0 && cli->strict && k < nev; k++)
        rc = dcpi_profset_verify(cli->db, ev[k], cli->platform, *out, err);
    if (rc < 0) {
        dcpi_cli_prefix_err(cli, err);
        dcpi_profset_free(*out);
        *out = NULL;
        return rc;
    }
    if (by_process && (*out)->nimages == 0) {
        char who[64] = "";
        if (cli->procsel.pid >= 0)
            snprintf(who, sizeof who, " %ld", cli->procsel.pid);
        dcpi__errf(err, DCPI_ENOENT, "%s: no samples of process%s%s%s in epoch %s", cli->tool, who,
                   cli->procsel.comm ? " named " : "", cli->procsel.comm ? cli->procsel.comm : "",
                   cli->epoch);
        dcpi_profset_free(*out);
        *out = NULL;
        return DCPI_ENOENT;
    }
    if (missing)
        fprintf(stderr,
                "%s: %zu profiles have no split by process (written before dcpid kept one, or "
                "imported): their samples are left out by -pid/-comm\n",
                cli->tool, missing);
    return 0;
}
