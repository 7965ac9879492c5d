/*
 * dcpicat - print PC profile files as text, the way DCPI's dcpicat does: a header block per
 * image, then one row per sampled address with one count column per file (event).
 *
 * Files of the same image (same "image" value) are merged into one table; files of different
 * images are printed one after the other, in the order the image first appears on the command
 * line. Value profiles (.vprof) are printed as their hotlists (DCPI's dcpivcat), after the PC
 * profiles, and per-process splits (.procs) as their rows per process, last. A file that cannot be
 * read is reported on stderr and skipped (exit status 1). Flags and dispatch only; the printing is
 * in core/store/profcat.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/procprof.h"
#include "core/store/profcat.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"
#include "dcpi/version.h"

#define TOOL "dcpicat"

static void usage(FILE *f)
{
    fprintf(f, "usage: " TOOL " [-no_header] FILE...\n"
               "       " TOOL " -h | -V\n"
               "Print dcpi profile files (dcpiformat: .prof PC profiles, .vprof value profiles,\n"
               ".procs per-process splits) as text.\n"
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

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Read path as a value profile (.vprof, or a file the PC-profile reader refuses that reads as
 * one) or a PC profile; 0, or 1 with the reason on stderr. */
static int read_one(const char *path, dcpi_profile_t **prof, dcpi_vprof_t **vprof)
{
    char err[DCPI_ERRLEN] = "", verr[DCPI_ERRLEN] = "";
    if (ends_with(path, ".vprof")) {
        if (dcpi_vprof_read(path, vprof, verr) == 0)
            return 0;
        fprintf(stderr, TOOL ": %s\n", verr);
        return 1;
    }
    if (dcpi_profile_read(path, prof, err) == 0)
        return 0;
    if (dcpi_vprof_read(path, vprof, verr) == 0)
        return 0;
    fprintf(stderr, TOOL ": %s\n", err);
    return 1;
}

/* Read a per-process split; 0, or 1 with the reason on stderr. */
static int read_procs(const char *path, dcpi_procprof_t *pp)
{
    char err[DCPI_ERRLEN] = "";
    if (dcpi_procprof_read(path, pp, err) == 0) {
        dcpi_procprof_normalize(pp);
        return 0;
    }
    fprintf(stderr, TOOL ": %s\n", err);
    return 1;
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
    dcpi_vprof_t **vprofs = calloc(nin, sizeof(*vprofs));
    int status = vprofs ? 0 : 1;
    dcpi_procprof_t *procs = calloc(nin, sizeof(*procs));
    if (!procs)
        status = 1;
    for (size_t i = 0; i < nin && vprofs && procs; i++)
        status |= ends_with(paths[i], DCPI_PROCPROF_SUFFIX)
                      ? read_procs(paths[i], &procs[i])
                      : read_one(paths[i], &profs[i], &vprofs[i]);
    if (vprofs && dcpi_profcat_print(stdout, profs, paths, nin, header) < 0) {
        fprintf(stderr, TOOL ": out of memory\n");
        status = 1;
    }
    for (size_t i = 0; i < nin && vprofs; i++) {
        if (vprofs[i]) {
            dcpi_profcat_print_vprof(stdout, vprofs[i], paths[i], header);
            dcpi_vprof_free(vprofs[i]);
        }
        dcpi_profile_free(profs[i]);
    }
    for (size_t i = 0; i < nin && procs; i++) {
        if (procs[i].n)
            dcpi_profcat_print_procs(stdout, &procs[i], paths[i], header);
        dcpi_procprof_free(&procs[i]);
    }
    free(procs);
    free(vprofs);
    free(profs);
    if (fflush(stdout) != 0) {
        fprintf(stderr, TOOL ": write error on standard output\n");
        status = 1;
    }
    return status;
}
