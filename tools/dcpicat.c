/*
 * dcpicat - print PC profile files as text, the way DCPI's dcpicat does: a header block per
 * image, then one row per sampled address with one count column per file (event).
 *
 * Files of the same image (same "image" value) are merged into one table; files of different
 * images are printed one after the other, in the order the image first appears on the command
 * line. A file that cannot be read is reported on stderr and skipped (exit status 1).
 * Flags and dispatch only; the printing is in core/analysis/profcat.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/analysis/profcat.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "dcpi/version.h"

#define TOOL "dcpicat"

static void usage(FILE *f)
{
    fprintf(f, "usage: " TOOL " [-no_header] FILE...\n"
               "       " TOOL " -h | -V\n"
               "Print dcpi profile files (dcpiformat) as text.\n"
               "  -no_header  print only the address rows\n"
               "  -h          this help\n"
               "  -V          version\n");
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
    const char *const *paths = (const char *const *)&argv[first];
    dcpi_profile_t **profs = calloc(nin, sizeof(*profs));
    if (!profs) {
        fprintf(stderr, TOOL ": out of memory\n");
        return 1;
    }
    int status = 0;
    for (size_t i = 0; i < nin; i++) {
        char err[DCPI_ERRLEN] = "";
        if (dcpi_profile_read(paths[i], &profs[i], err) < 0) {
            fprintf(stderr, TOOL ": %s\n", err);
            status = 1;
        }
    }
    if (dcpi_profcat_print(stdout, profs, paths, nin, header) < 0) {
        fprintf(stderr, TOOL ": out of memory\n");
        status = 1;
    }
    for (size_t i = 0; i < nin; i++)
        dcpi_profile_free(profs[i]);
    free(profs);
    if (fflush(stdout) != 0) {
        fprintf(stderr, TOOL ": write error on standard output\n");
        status = 1;
    }
    return status;
}
