/*
 * srclines.h - source line information of an ELF image: the DWARF line tables (libdw/libdwfl),
 * read from the file itself or from its separate debug file (build-id under /usr/lib/debug,
 * .gnu_debuglink, or debuginfod with DEBUGINFOD_URLS set), so that an ELF virtual address
 * becomes (source file, line).
 */
#ifndef DCPI_CORE_SRCLINES_H
#define DCPI_CORE_SRCLINES_H

#include <stddef.h>
#include <stdint.h>

typedef struct dcpi_srclines dcpi_srclines_t;

/*
 * Open the line tables of the ELF file at path. Returns 0; DCPI_ENOENT with "PATH: no DWARF
 * line information" in err when neither the file nor a debug file has any (the caller then
 * lists instructions only); another negative DCPI_E* with "PATH: reason" when the file cannot
 * be read as ELF. Free with dcpi_srclines_free (NULL allowed).
 */
int dcpi_srclines_open(const char *path, dcpi_srclines_t **out, char *err);
void dcpi_srclines_free(dcpi_srclines_t *sl);

/*
 * The source position of ELF vaddr addr: *file (absolute path when the compilation directory
 * is known, owned by sl) and *line (> 0). Returns 0, or DCPI_ENOENT when no line table row
 * covers addr (*file = NULL, *line = 0).
 */
int dcpi_srclines_lookup(const dcpi_srclines_t *sl, uint64_t addr, const char **file, int *line);

/*
 * The inline chain at ELF vaddr addr, outermost function first (what LLVM's sample profiles
 * key by): f[0] is the function the code was compiled in, each next one a function inlined
 * into the one before. Per frame: its name (DW_AT_linkage_name, else DW_AT_name; owned by
 * sl), its DW_AT_decl_line (0 when unknown), and the position in it: for the last frame the
 * line table's line and discriminator at addr, for the others the call line and discriminator
 * (DW_AT_GNU_discriminator) of the inlined call. Discriminators as DWARF stores them (LLVM's
 * encoded form). Returns the number of frames written (at most max; the innermost are kept
 * when there are more), or DCPI_ENOENT when no DWARF function covers addr.
 */
typedef struct dcpi_srcframe {
    const char *name;
    int decl_line;
    int line;
    unsigned disc;
} dcpi_srcframe_t;

int dcpi_srclines_frames(const dcpi_srclines_t *sl, uint64_t addr, dcpi_srcframe_t *f, int max);

/* The lines of a text file, read whole: line i (1-based) is lines[i - 1], without '\n'.
 * Returns 0, or a negative DCPI_E* (-errno) when it cannot be read. Free with
 * dcpi_srctext_free. */
typedef struct dcpi_srctext {
    char *buf;
    char **lines;
    size_t n;
} dcpi_srctext_t;

int dcpi_srctext_read(const char *path, dcpi_srctext_t *out);
void dcpi_srctext_free(dcpi_srctext_t *t);
/* Line i (1-based) or NULL when out of range. */
const char *dcpi_srctext_line(const dcpi_srctext_t *t, int i);

#endif
