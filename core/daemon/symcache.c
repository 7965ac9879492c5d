/*
 * symcache.c - the database's caches of what an image was (core/daemon/'s helper, not a part):
 * its code (DB/.codecache/ID, core/store/codecache.h) and its symbols (DB/.symcache/syms-ID.gz,
 * kallsyms format), written once per database, so names and listings survive upgrades and
 * rebuilds. cachejob.c writes them (in a child process); kernel.c's kallsyms snapshots share
 * DB/.symcache.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/symcache.h"
#include "core/image/symbols.h"
#include "core/store/codecache.h"
#include "dcpi/errno.h"

/* Whether DIR/NAME or DIR/NAME.gz exists (a database written before the cache was compressed
 * has NAME). */
int dcpi__symcache_has(const char *dir, const char *name)
{
    char path[4400];
    (void)dcpi__pathf(path, sizeof path, "%s/%s.gz", dir, name);
    if (access(path, F_OK) == 0)
        return 1;
    (void)dcpi__pathf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* The image's code, once per DB, as DB/.codecache/ID (a copy of the ELF file read from src,
 * bounded: see core/store/codecache.h), so dcpilist -asm lists it after it is rebuilt or
 * deleted. */
static void cache_code(const char *db, const char *imgpath, const char *id, const char *src)
{
    static int said_full;
    char err[DCPI_ERRLEN] = "";
    int rc = dcpi_codecache_add(db, src, id, err);
    if (rc == DCPI_EFULL && !said_full) {
        said_full = 1;
        dcpi__log(DCPI_LOG_WARN,
                  "code cache: %s (%llu MiB) or the cache (%llu MiB) would exceed its bound: "
                  "images are no longer kept for dcpilist after they change",
                  imgpath, (unsigned long long)(DCPI_CODECACHE_FILE_MAX >> 20),
                  (unsigned long long)(DCPI_CODECACHE_MAX >> 20));
    } else if (rc < 0 && rc != DCPI_ENOENT && rc != DCPI_EFULL) {
        dcpi__log(DCPI_LOG_WARN, "code cache: %s", err[0] ? err : dcpi_strerror(rc));
    }
}

/* The table's lines ("ADDR t NAME"), gzip-compressed as they are formatted: a C++ library's
 * text (tens of MB) is never whole in memory. */
static int put_syms(void *arg, dcpi__gzout_t *out)
{
    const dcpi_symtab_t *st = arg;
    char buf[65536];
    size_t len = 0;
    for (size_t i = 0; i < dcpi_symtab_count(st); i++) {
        const dcpi_symbol_t *sym = dcpi_symtab_get(st, i);
        if (!sym->addr || strchr(sym->name, '\n') || strchr(sym->name, '\t'))
            continue;
        size_t need = strlen(sym->name) + 24;
        if (len + need > sizeof buf) {
            int rc = dcpi__gzput(out, buf, len);
            if (rc < 0)
                return rc;
            len = 0;
        }
        if (need > sizeof buf) { /* a name longer than the buffer: in pieces */
            int n = snprintf(buf, sizeof buf, "%" PRIx64 " t ", sym->addr);
            int rc = dcpi__gzput(out, buf, (size_t)n);
            if (rc == 0)
                rc = dcpi__gzput(out, sym->name, strlen(sym->name));
            if (rc == 0)
                rc = dcpi__gzput(out, "\n", 1);
            if (rc < 0)
                return rc;
            continue;
        }
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%" PRIx64 " t %s\n", sym->addr,
                                sym->name);
    }
    return dcpi__gzput(out, buf, len);
}

/* The symbols of an image with a build-id, once per DB, as DB/.symcache/syms-ID.gz (kallsyms
 * format, ELF addresses, gzip), read from src, so its profiles stay named after the file is
 * upgraded, rebuilt or deleted (core/model/profset.c reads them when the file's id no longer
 * matches, or the file is gone). */
static void cache_syms(const char *db, const char *id, const char *src)
{
    char dir[4200], path[4400], err[DCPI_ERRLEN];
    (void)dcpi__pathf(dir, sizeof dir, "%s/.symcache", db);
    (void)dcpi__pathf(path, sizeof path, "syms-%s", id);
    if (dcpi__symcache_has(dir, path))
        return;
    (void)dcpi__pathf(path, sizeof path, "%s/syms-%s.gz", dir, id);
    dcpi_symtab_t *st = NULL;
    if (dcpi_symtab_open(src, &st, NULL) < 0)
        return;
    if (dcpi__mkdirs(dir, 0755) < 0 || dcpi__write_atomic_gz_fill(path, put_syms, st, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "symbol cache: %s", err);
    dcpi_symtab_free(st);
}

void dcpi__symcache_image(const char *db, const char *path, const char *id, const char *src)
{
    cache_code(db, path, id, src);
    cache_syms(db, id, src);
}
