/*
 * codecache.h - the code of profiled images kept by build-id in the database
 * (DB/.codecache/BUILDID: a copy of the ELF file, as perf's ~/.debug cache keeps one), so that
 * dcpilist -asm (and dcpicalc, dcpicoverage) still lists a binary that was rebuilt, upgraded or
 * deleted since it was profiled. dcpid adds each profiled image with a build-id once; the
 * cache is bounded (DCPI_CODECACHE_FILE_MAX a file, DCPI_CODECACHE_MAX in all: beyond, images
 * are not added, and the daemon says so once).
 */
#ifndef DCPI_CORE_STORE_CODECACHE_H
#define DCPI_CORE_STORE_CODECACHE_H

#include <stddef.h>
#include <stdint.h>

#define DCPI_CODECACHE_DIR      ".codecache"
#define DCPI_CODECACHE_FILE_MAX (256ull << 20) /* larger files are not kept */
#define DCPI_CODECACHE_MAX      (2ull << 30)   /* the whole cache */

/* DB/.codecache/ID into out (len bytes). */
void dcpi_codecache_path(const char *db, const char *id, char *out, size_t len);

/*
 * Keep a copy of the ELF file at path as build-id id, unless it is kept already. The file is
 * copied through a temporary file (never read into memory) and the copy is checked against id
 * (a file replaced meanwhile is not kept). 0 when kept (or
 * already there); DCPI_ENOENT when path no longer has that id or cannot be read; DCPI_EFULL
 * when the file or the cache would exceed its bound; other DCPI_E* with "PATH: reason" in err.
 */
int dcpi_codecache_add(const char *db, const char *path, const char *id, char *err);

#endif
