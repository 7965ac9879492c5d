/*
 * dcpicat - print PC profile files as text, the way DCPI's dcpicat does: a header block per
 * image, then one row per sampled address with one count column per file (event).
 *
 * Files of the same image (same "image" value) are merged into one table; files of different
 * images are printed one after the other, in the order the image first appears on the command
 * line. A file that cannot be read is reported on stderr and skipped (exit status 1).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "dcpi/version.h"

#define TOOL "dcpicat"

struct input {
    const char *path;
    dcpi_profile_t *prof;
    bool printed;
};

static void usage(FILE *f)
{
    fprintf(f, "usage: " TOOL " [-no_header] FILE...\n"
               "       " TOOL " -h | -V\n"
               "Print dcpi profile files (dcpiformat) as text.\n"
               "  -no_header  print only the address rows\n"
               "  -h          this help\n"
               "  -V          version\n");
}

/* "name": the basename of the image path, else the name of the directory holding the file
 * (the database's image directory, e.g. "unknown@host"). */
static void image_name(const struct input *in, char *out, size_t len)
{
    const char *path = dcpi_profile_get(in->prof, "path");
    if (path) {
        const char *slash = strrchr(path, '/');
        snprintf(out, len, "%s", slash ? slash + 1 : path);
        return;
    }
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", in->path);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        snprintf(out, len, "-");
        return;
    }
    *slash = '\0';
    slash = strrchr(dir, '/');
    snprintf(out, len, "%s", slash ? slash + 1 : dir);
}

static const char *get_or(const dcpi_profile_t *p, const char *key, const char *dflt)
{
    const char *v = dcpi_profile_get(p, key);
    return v ? v : dflt;
}

/* Header lines printed by their own rule; everything else is printed as "key value". */
static bool is_special(const char *key)
{
    static const char *const keys[] = {"image",  "path",  "epoch", "platform",
                                       "tstart", "tsize", "event", "period"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (strcmp(keys[i], key) == 0)
            return true;
    return false;
}

static bool line_printed_before(struct input **g, size_t upto, const char *key, const char *value)
{
    for (size_t f = 0; f < upto; f++)
        for (size_t i = 0; i < dcpi_profile_nlines(g[f]->prof); i++) {
            const char *k, *v;
            dcpi_profile_line(g[f]->prof, i, &k, &v);
            if (strcmp(k, key) == 0 && strcmp(v, value) == 0)
                return true;
        }
    return false;
}

static void print_header(struct input **g, size_t n)
{
    const dcpi_profile_t *p = g[0]->prof;
    char name[4096];
    uint64_t tstart = 0, tsize = 0;
    dcpi_profile_get_hex(p, "tstart", &tstart);
    dcpi_profile_get_u64(p, "tsize", &tsize);
    image_name(g[0], name, sizeof(name));
    printf("%-20s %s\n", "name", name);
    printf("%-20s %s\n", "image", get_or(p, "image", "-"));
    for (size_t f = 0; f < n; f++) /* each distinct path once */
        for (size_t i = 0; i < dcpi_profile_nlines(g[f]->prof); i++) {
            const char *k, *v;
            dcpi_profile_line(g[f]->prof, i, &k, &v);
            if (strcmp(k, "path") == 0 && !line_printed_before(g, f, k, v))
                printf("%-20s %s\n", "path", v);
        }
    printf("%-20s %s\n", "epoch", get_or(p, "epoch", "-"));
    printf("%-20s %s\n", "platform", get_or(p, "platform", "-"));
    printf("%-20s 0x%012llx\n", "text_start", (unsigned long long)tstart);
    printf("%-20s 0x%012llx\n", "text_size", (unsigned long long)tsize);
    for (size_t f = 0; f < n; f++)
        printf("%-20s %" PRIu64 " %s:%s:10000\n", "event", dcpi_profile_total(g[f]->prof),
               get_or(g[f]->prof, "event", "-"), get_or(g[f]->prof, "period", "0"));
    for (size_t f = 0; f < n; f++)
        for (size_t i = 0; i < dcpi_profile_nlines(g[f]->prof); i++) {
            const char *k, *v;
            dcpi_profile_line(g[f]->prof, i, &k, &v);
            if (!is_special(k) && !line_printed_before(g, f, k, v))
                printf("%-20s %s\n", k, v);
        }
}

struct cursor {
    const dcpi_profile_entry_t *e;
    size_t n, i;
    uint64_t tstart;
};

/* Rows in ascending address order: a k-way merge of the files' sorted entries. */
static int print_rows(struct input **g, size_t n)
{
    struct cursor *c = calloc(n, sizeof(*c));
    if (!c)
        return DCPI_ENOMEM;
    for (size_t f = 0; f < n; f++) {
        c[f].e = dcpi_profile_entries(g[f]->prof, &c[f].n);
        dcpi_profile_get_hex(g[f]->prof, "tstart", &c[f].tstart);
    }
    for (;;) {
        uint64_t best = UINT64_MAX;
        bool any = false;
        for (size_t f = 0; f < n; f++)
            if (c[f].i < c[f].n && c[f].tstart + c[f].e[c[f].i].offset <= best) {
                best = c[f].tstart + c[f].e[c[f].i].offset;
                any = true;
            }
        if (!any)
            break;
        printf("0x%012llx", (unsigned long long)best);
        for (size_t f = 0; f < n; f++) {
            uint32_t count = 0;
            if (c[f].i < c[f].n && c[f].tstart + c[f].e[c[f].i].offset == best)
                count = c[f].e[c[f].i++].count;
            printf(" %7" PRIu32, count);
        }
        putchar('\n');
    }
    free(c);
    return 0;
}

/* Print every not-yet-printed file with the same image as in[first], as one table. */
static int print_group(struct input *in, size_t nin, size_t first, bool header)
{
    struct input **g = calloc(nin, sizeof(*g));
    if (!g)
        return DCPI_ENOMEM;
    const char *image = dcpi_profile_get(in[first].prof, "image");
    size_t n = 0;
    for (size_t i = first; i < nin; i++) {
        if (!in[i].prof || in[i].printed)
            continue;
        const char *im = dcpi_profile_get(in[i].prof, "image");
        if (image && im && strcasecmp(image, im) == 0) {
            g[n++] = &in[i];
            in[i].printed = true;
        }
    }
    if (header)
        print_header(g, n);
    int rc = print_rows(g, n);
    free(g);
    return rc;
}

/* Parse flags; returns the index of the first file, or -1 (exit 0) / -2 (usage error). */
static int parse_flags(int argc, char **argv, bool *header)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0)
            return i + 1;
        if (strcmp(a, "-h") == 0 || strcmp(a, "-help") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(a, "-V") == 0 || strcmp(a, "-version") == 0 || strcmp(a, "--version") == 0) {
            printf(TOOL " (dcpi) %s\n", DCPI_VERSION_STRING);
            return -1;
        }
        if (strcmp(a, "-no_header") == 0) {
            *header = false;
            continue;
        }
        fprintf(stderr, TOOL ": unknown flag '%s' (try -h)\n", a);
        return -2;
    }
    return i;
}

int main(int argc, char **argv)
{
    bool header = true;
    int first = parse_flags(argc, argv, &header);
    if (first == -1)
        return 0;
    if (first == -2)
        return 2;
    if (first >= argc) {
        fprintf(stderr, TOOL ": no profile files given (try -h)\n");
        return 2;
    }
    size_t nin = (size_t)(argc - first);
    struct input *in = calloc(nin, sizeof(*in));
    if (!in) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 1;
    }
    int status = 0;
    for (size_t i = 0; i < nin; i++) {
        char err[DCPI_ERRLEN] = "";
        in[i].path = argv[first + (int)i];
        if (dcpi_profile_read(in[i].path, &in[i].prof, err) < 0) {
            fprintf(stderr, TOOL ": %s\n", err);
            status = 1;
        }
    }
    bool first_group = true;
    for (size_t i = 0; i < nin; i++) {
        if (!in[i].prof || in[i].printed)
            continue;
        if (!first_group && header)
            putchar('\n'); /* a blank line between the tables of two images */
        first_group = false;
        if (print_group(in, nin, i, header) < 0) {
            fprintf(stderr, TOOL ": out of memory\n");
            status = 1;
        }
    }
    for (size_t i = 0; i < nin; i++)
        dcpi_profile_free(in[i].prof);
    free(in);
    if (fflush(stdout) != 0) {
        fprintf(stderr, TOOL ": write error on standard output\n");
        status = 1;
    }
    return status;
}
