/*
 * codecache.c - copies of profiled ELF files kept by build-id in the database (see
 * codecache.h).
 */
#include "core/store/codecache.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/image/image.h"
#include "dcpi/errno.h"

void dcpi_codecache_path(const char *db, const char *id, char *out, size_t len)
{
    snprintf(out, len, "%s/" DCPI_CODECACHE_DIR "/%s", db, id);
}

/* Bytes the cache directory holds now. */
static uint64_t cache_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[4700];
    struct stat st;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
            sum += (uint64_t)st.st_size;
    }
    if (d)
        closedir(d);
    return sum;
}

/* The bytes of path, when it still is build-id id: 0, DCPI_ENOENT, DCPI_EFULL or an error. */
static int read_checked(const char *path, const char *id, void **buf, size_t *len, char *err)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return DCPI_ENOENT;
    if ((uint64_t)st.st_size > DCPI_CODECACHE_FILE_MAX)
        return DCPI_EFULL;
    int rc = dcpi__read_file(path, 0, buf, len, err);
    if (rc < 0)
        return rc;
    dcpi_image_info_t info;
    char tmp[4400];
    snprintf(tmp, sizeof tmp, "%s", path);
    if (dcpi_image_probe(tmp, &info, NULL) != 0 || !info.id_is_buildid || strcmp(info.id, id)) {
        free(*buf);
        *buf = NULL;
        return DCPI_ENOENT; /* replaced since it was profiled: not the build to keep */
    }
    return 0;
}

int dcpi_codecache_add(const char *db, const char *path, const char *id, char *err)
{
    char dir[4200], out[4400];
    snprintf(dir, sizeof dir, "%s/" DCPI_CODECACHE_DIR, db);
    dcpi_codecache_path(db, id, out, sizeof out);
    if (access(out, F_OK) == 0)
        return 0;
    void *buf = NULL;
    size_t len = 0;
    int rc = read_checked(path, id, &buf, &len, err);
    if (rc == 0 && cache_bytes(dir) + len > DCPI_CODECACHE_MAX)
        rc = DCPI_EFULL;
    if (rc == 0)
        rc = dcpi__mkdirs(dir, 0755);
    if (rc == 0)
        rc = dcpi__write_atomic(out, buf, len, err);
    free(buf);
    return rc;
}
