/*
 * symcache.h - the database's code and symbol caches (symcache.c), shared by cachejob.c and
 * kernel.c.
 */
#ifndef DCPI_CORE_DAEMON_SYMCACHE_H
#define DCPI_CORE_DAEMON_SYMCACHE_H

/* Whether DIR/NAME or DIR/NAME.gz exists (a database written before the cache was compressed
 * has NAME). */
int dcpi__symcache_has(const char *dir, const char *name);

/* The code (DB/.codecache/ID) and symbols (DB/.symcache/syms-ID.gz) of the image at path (id,
 * read from src) once per database db. */
void dcpi__symcache_image(const char *db, const char *path, const char *id, const char *src);

#endif
