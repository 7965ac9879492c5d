/*
 * imagemap.h - DCPI's map file (dcpiprof -m, dcpitopcounts -m, dcpicoverage -m): where the file
 * of a profiled image is now, by image id, for images whose recorded path no longer holds them
 * (a binary moved, or profiles read on another machine).
 *
 * Format (docs/dcpiprof.md, "MAP FILES"): one "IMAGE_ID PATH" per line, IMAGE_ID the profile
 * header's "image" value (the ELF build-id in hex, as `readelf -n` prints it), then blanks, then
 * the path to the end of the line (it may hold blanks; trailing blanks are dropped). Blank lines
 * and lines starting with '#' are skipped. An id given twice keeps its first line.
 */
#ifndef DCPI_CORE_MODEL_IMAGEMAP_H
#define DCPI_CORE_MODEL_IMAGEMAP_H

#include <stddef.h>
#include "core/model/profset.h"

typedef struct dcpi_imagemap_entry {
    char *id; /* lowercase hex */
    char *path;
} dcpi_imagemap_entry_t;

typedef struct dcpi_imagemap {
    dcpi_imagemap_entry_t *v;
    size_t n;
} dcpi_imagemap_t;

/* Parse a map file's text buf[0..len). 0, DCPI_ENOMEM, or DCPI_EFORMAT with
 * "NAME:LINE: reason" in err (DCPI_ERRLEN): an id that is not hex, a line without a path, a NUL
 * byte. */
int dcpi_imagemap_parse(const char *buf, size_t len, const char *name, dcpi_imagemap_t *out,
                        char *err);
/* Read and parse the map file at path ("PATH: reason" when it cannot be read). */
int dcpi_imagemap_read(const char *path, dcpi_imagemap_t *out, char *err);
void dcpi_imagemap_free(dcpi_imagemap_t *m);
/* The path mapped to id (case-insensitive), or NULL. */
const char *dcpi_imagemap_lookup(const dcpi_imagemap_t *m, const char *id);

/*
 * For every file image of set whose recorded path does not hold its id (missing, or another
 * build), use the map's path for its id when that file has the id: img->path is replaced (the
 * image keeps its name, the recorded path). A mapped file with another id is not used:
 * "TOOL: MAPPED: image id X in the map file, but the file has id Y" on stderr. Returns the
 * number of images remapped, or DCPI_ENOMEM.
 */
int dcpi_imagemap_apply(const dcpi_imagemap_t *m, dcpi_profset_t *set, const char *tool);

/* Read the map file at path and apply it to set (the tools' -m). 0, or a negative DCPI_E* with
 * "PATH:LINE: reason" (or "PATH: reason") in err. */
int dcpi_imagemap_use(const char *path, dcpi_profset_t *set, const char *tool, char *err);

#endif
