/*
 * profcat.h - PC profile files printed as text, the way DCPI's dcpicat does (dcpicat's
 * printing): a header block per image, then one row per sampled address with one count column
 * per file (event); value profiles (.vprof) as their hotlists, the way DCPI's dcpivcat did.
 */
#ifndef DCPI_CORE_STORE_PROFCAT_H
#define DCPI_CORE_STORE_PROFCAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "core/store/vprof.h"
#include "dcpi/profile.h"

/*
 * Print the n profiles profs[i] (read from paths[i]; a NULL profile, one that could not be
 * read, is skipped) to out. Profiles of the same image ("image" value, case-insensitive) are
 * merged into one table; tables of different images follow in the order the image first
 * appears, with a blank line between them when header is set. header false prints only the
 * address rows. Returns 0, or DCPI_ENOMEM when a table could not be printed (the others are).
 */
int dcpi_profcat_print(FILE *out, dcpi_profile_t *const *profs, const char *const *paths, size_t n,
                       bool header);

/*
 * Print a value profile (.vprof, DCPI's dcpivcat) read from path to out: with header, its header
 * lines ("key value") and a blank line; then one block per instruction offset, "OFFSET vtot V
 * seen S err E" (OFFSET from tstart, hex), then one line per hotlist entry: the value (hex),
 * its count, its share of vtot, and with contexts the two return addresses. Values are raw: the
 * plugin's formatting is dcpilist's.
 */
void dcpi_profcat_print_vprof(FILE *out, const dcpi_vprof_t *vp, const char *path, bool header);
/* A per-process split (.procs): "# PATH" (with header), then per process "pid PID COMMAND" and
 * its "0xOFFSET COUNT" rows. */
struct dcpi_procprof;
void dcpi_profcat_print_procs(FILE *out, const struct dcpi_procprof *pp, const char *path,
                              bool header);
/* A stack profile (.stk, docs/stackformat.md): with header, its header values and its image
 * table ("image N DIR tstart 0xT tsize S PATH") and a blank line; then one line per chain,
 * most samples first: "COUNT  FRAME <- FRAME ..." (leaf first), a frame "N+0xOFFSET" (image
 * index N) or "?+0xADDRESS" outside every image. */
/* A text file dcpid writes besides its profiles (kallsyms.gz, jitmap, a symbol cache's syms-ID.gz,
 * epoch.info, the log), gunzipped: "# PATH" (with header), then its lines with non-printable
 * bytes as "\\xNN". DCPI_EFORMAT when text holds a NUL byte (not a text file). */
int dcpi_profcat_print_text(FILE *out, const char *text, size_t len, const char *path, bool header);
struct dcpi_stackprof;
void dcpi_profcat_print_stack(FILE *out, const struct dcpi_stackprof *sp, const char *path,
                              bool header);

#endif
