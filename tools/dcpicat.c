/*
 * dcpicat - print PC profile files as text, the way DCPI's dcpicat does: a header block per
 * image, then one row per sampled address with one count column per file (event).
 *
 * Files of the same image (same "image" value) are merged into one table; files of different
 * images are printed one after the other, in the order the image first appears on the command
 * line. Value profiles (.vprof) are printed as their hotlists (DCPI's dcpivcat), after the PC
 * profiles, per-process splits (.procs) as their rows per process, and stack profiles (.stk)
 * as their chains, last. A file that cannot be
 * read is reported on stderr and skipped (exit status 1). Flags and dispatch only; the printing is
 * in core/store/profcat.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/base/fsutil.h"
#include "core/store/procprof.h"
#include "core/store/profcat.h"
#include "core/store/stackprof.h"
#include "core/store/vprof.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"

#define TOOL "dcpicat"

static int no_header;

static const dcpi_cli_flag_t flags[] = {
    DCPI_OPT_BOOL("-no_header", &no_header, "print only the address rows"),
    DCPI_OPT_END,
};

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int is_elf(const char *path)
{
    char magic[4] = "";
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(magic, 1, 4, f) : 0;
    if (f)
        fclose(f);
    return n == 4 && memcmp(magic, "\177ELF", 4) == 0;
}

/* Another file dcpid writes, printed as text (kallsyms.gz, jitmap, syms-ID.gz, epoch.info, the
 * log): 1 when it was one (printed), 0 when it is no text file. */
static int cat_text(const char *path)
{
    void *buf = NULL;
    size_t len = 0;
    int done = 0;
    if (dcpi__read_file_gz(path, 0, &buf, &len, NULL) == 0)
        done = dcpi_profcat_print_text(stdout, buf, len, path, true) == 0;
    free(buf);
    return done;
}

/* Read path as a value profile (.vprof, or a file the PC-profile reader refuses that reads as
 * one) or a PC profile; 0, or 1 with the reason on stderr. A file that is neither but one of
 * dcpid's text files is printed as text (0). */
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
    if (!ends_with(path, ".prof") && cat_text(path))
        return 0;
    if (is_elf(path))
        fprintf(stderr, TOOL ": %s: an ELF file (dcpid's copy of code: objdump -d reads it)\n",
                path);
    else
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

/* Read and print a stack profile (.stk); 0, or 1 with the reason on stderr. */
static int cat_stack(const char *path, bool header)
{
    char err[DCPI_ERRLEN] = "";
    dcpi_stackprof_t *sp = NULL;
    if (dcpi_stackprof_read(path, &sp, err) < 0) {
        fprintf(stderr, TOOL ": %s\n", err);
        return 1;
    }
    dcpi_profcat_print_stack(stdout, sp, path, header);
    dcpi_stackprof_free(sp);
    return 0;
}

/* Print the files named in cli's operands; returns the exit status. */
static int cat_files(const dcpi_cli_t *cli, bool header)
{
    size_t nin = (size_t)cli->nargs;
    const char *const *paths = (const char *const *)cli->args;
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
        if (!ends_with(paths[i], ".stk"))
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
    for (size_t i = 0; i < nin; i++)
        if (ends_with(paths[i], ".stk"))
            status |= cat_stack(paths[i], header);
    free(procs);
    free(vprofs);
    free(profs);
    if (fflush(stdout) != 0) {
        fprintf(stderr, TOOL ": write error on standard output\n");
        status = 1;
    }
    return status;
}

/* The files named, or the usage error without them. */
static int run(dcpi_cli_t *cli, dcpi_profset_t *unused, void *arg)
{
    if (cli->nargs == 0) {
        fprintf(stderr, TOOL ": no profile files given: name one or more .prof, .vprof or .procs "
                             "or .stk files (try -h)\n");
        return 2;
    }
    return cat_files(cli, !no_header);
}

int main(int argc, char **argv)
{
    dcpi_cli_t cli = {.tool = TOOL,
                      .operands = "FILE...",
                      .flags = flags,
                      .omit = DCPI_CLI_SHARED,
                      .footer =
                          "Prints dcpi profile files (dcpiformat(5): .prof PC profiles, .vprof "
                          "value profiles,\n.procs per-process splits; .stk stack profiles) as "
                          "text."};
    return dcpi_cli_main(&cli, argc, argv, &(dcpi_cli_main_t){.run = run, .raw_status = 1}, NULL);
}
