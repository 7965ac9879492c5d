/*
 * codecache.c - copies of profiled ELF files kept by build-id in the database (see
 * codecache.h).
 */
#include "core/store/codecache.h"

#include <dirent.h>
#include <fcntl.h>
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

/* Is the file at path ELF with build-id id? */
static int has_id(const char *path, const char *id)
{
    dcpi_image_info_t info;
    return dcpi_image_probe(path, &info, NULL) == 0 && info.id_is_buildid && !strcmp(info.id, id);
}

/* Copy the open file in (size bytes) to out, streamed through a temporary file (nothing of its
 * size in memory: images are up to DCPI_CODECACHE_FILE_MAX), kept only when the copy itself has
 * build-id id. */
static int copy_checked(int in, const char *out, const char *id, char *err)
{
    dcpi__atomic_t a;
    int rc = dcpi__atomic_open(&a, out, err);
    if (rc < 0)
        return rc;
    rc = dcpi__copy_fd(in, a.fd);
    if (rc < 0) {
        dcpi__atomic_abort(&a);
        return dcpi__errf(err, rc, "%s: %s", out, dcpi_strerror(rc));
    }
    if (!has_id(a.tmp, id)) {
        dcpi__atomic_abort(&a);
        return DCPI_ENOENT; /* replaced since it was profiled: not the build to keep */
    }
    return dcpi__atomic_commit(&a, err);
}

int dcpi_codecache_add(const char *db, const char *path, const char *id, char *err)
{
    char dir[4200], out[4400];
    snprintf(dir, sizeof dir, "%s/" DCPI_CODECACHE_DIR, db);
    dcpi_codecache_path(db, id, out, sizeof out);
    if (access(out, F_OK) == 0)
        return 0;
    struct stat st;
    int in = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
    if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode))
        rc = DCPI_ENOENT;
    else if ((uint64_t)st.st_size > DCPI_CODECACHE_FILE_MAX ||
             cache_bytes(dir) + (uint64_t)st.st_size > DCPI_CODECACHE_MAX)
        rc = DCPI_EFULL;
    if (rc == 0)
        rc = dcpi__mkdirs(dir, 0755);
    if (rc == 0)
        rc = copy_checked(in, out, id, err);
    if (in >= 0)
        close(in);
    return rc;
}
