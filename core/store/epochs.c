/*
 * epochs.c - epochs over time (see epochs.h): the epoch.info summary dcpid keeps, describing an
 * epoch (from epoch.info, else from its files), listing them, and removing one atomically.
 */
#include "core/store/epochs.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "dcpi/errno.h"
#include "dcpi/profile.h"

#define EXPIRE_PREFIX ".expire-"

int dcpi_epoch_info_write(const char *db, const char *platform, const dcpi_epoch_info_t *info,
                          char *err)
{
    char path[4096], text[512];
    if (dcpi__pathf(path, sizeof path, "%s/%s/%s/" DCPI_EPOCH_INFO_FILE, db, info->name, platform) <
        0)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", db);
    int len = snprintf(text, sizeof text,
                       "dcpi-epoch 1\nstart %lld\nend %lld\nsamples %" PRIu64 "\nlost %" PRIu64
                       "\nopen %d\n",
                       (long long)info->start, (long long)info->end, info->samples, info->lost,
                       info->open ? 1 : 0);
    return dcpi__write_atomic(path, text, (size_t)len, err);
}

/* ---- describing an epoch ---------------------------------------------------------------- */

/* Parse epoch.info into out: 1 when it reads (every key present), else 0. */
static int read_info(const char *path, dcpi_epoch_info_t *out)
{
    char *text = NULL;
    size_t len = 0;
    if (dcpi__read_file(path, 1, (void **)&text, &len, NULL) < 0)
        return 0;
    long long start = -1, end = -1, open = -1;
    uint64_t samples = UINT64_MAX, lost = UINT64_MAX;
    int version = 0;
    char *save = NULL;
    for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (sscanf(l, "dcpi-epoch %d", &version) == 1 || sscanf(l, "start %lld", &start) == 1 ||
            sscanf(l, "end %lld", &end) == 1 || sscanf(l, "samples %" SCNu64, &samples) == 1 ||
            sscanf(l, "lost %" SCNu64, &lost) == 1 || sscanf(l, "open %lld", &open) == 1)
            continue;
    }
    free(text);
    if (version != 1 || start < 0 || end < start || samples == UINT64_MAX || lost == UINT64_MAX ||
        open < 0)
        return 0;
    out->start = (time_t)start;
    out->end = (time_t)end;
    out->samples = samples;
    out->lost = lost;
    out->open = open != 0;
    out->has_info = 1;
    return 1;
}

/* nftw has no user argument: the walk's totals (one walk at a time in a process). */
static struct {
    uint64_t bytes;
    time_t newest;
} walk;

static int walk_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)path, (void)ftw;
    if (type == FTW_F || type == FTW_D || type == FTW_DP) {
        walk.bytes += (uint64_t)st->st_blocks * 512;
        if (type == FTW_F && st->st_mtime > walk.newest)
            walk.newest = st->st_mtime;
    }
    return 0;
}

/* Samples and lost summed from the .prof headers of the epoch (an unreadable one is skipped). */
static void sum_profiles(const char *db, const char *epoch, const char *platform,
                         dcpi_epoch_info_t *out)
{
    dcpi_db_file_t *f = NULL;
    size_t n = 0;
    if (dcpi_db_list_files(db, epoch, platform, ".prof", &f, &n, NULL) < 0)
        return;
    for (size_t i = 0; i < n; i++) {
        dcpi_profile_t *p = NULL;
        uint64_t lost = 0;
        if (dcpi_profile_read(f[i].path, &p, NULL) < 0)
            continue;
        out->samples += dcpi_profile_total(p);
        if (dcpi_profile_get_u64(p, "lost", &lost) == 0)
            out->lost += lost;
        dcpi_profile_free(p);
    }
    free(f);
}

/* One platform's directory of the epoch, added to out. */
static void stat_platform(const char *db, const char *epoch, const char *platform,
                          dcpi_epoch_info_t *out)
{
    char dir[4096], path[4200];
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s/%s", db, epoch, platform);
    walk.bytes = 0;
    walk.newest = 0;
    nftw(dir, walk_one, 16, FTW_PHYS);
    out->bytes += walk.bytes;
    dcpi_epoch_info_t one = {0};
    (void)dcpi__pathf(path, sizeof path, "%s/" DCPI_EPOCH_INFO_FILE, dir);
    if (!read_info(path, &one)) {
        sum_profiles(db, epoch, platform, &one);
        one.end = walk.newest;
    }
    out->samples += one.samples;
    out->lost += one.lost;
    if (one.end > out->end)
        out->end = one.end;
    out->open |= one.open;
    out->has_info |= one.has_info;
}

int dcpi_epoch_stat(const char *db, const char *epoch, const char *platform, dcpi_epoch_info_t *out,
                    char *err)
{
    if (!db || !epoch || !out || !dcpi_db_is_epoch_name(epoch))
        return dcpi__errf(err, DCPI_EINVAL, "%s: '%s' is not an epoch name", db ? db : "DB",
                          epoch ? epoch : "");
    *out = (dcpi_epoch_info_t){0};
    snprintf(out->name, sizeof out->name, "%s", epoch);
    (void)dcpi_db_epoch_start(epoch, &out->start);
    char **plats = NULL, path[4096];
    size_t np = 0;
    if (platform) {
        struct stat st;
        if (dcpi__pathf(path, sizeof path, "%s/%s/%s", db, epoch, platform) < 0 ||
            stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
            return dcpi__errf(err, DCPI_ENOENT, "%s: epoch %s has no platform %s", db, epoch,
                              platform);
        stat_platform(db, epoch, platform, out);
    } else {
        int rc = dcpi_db_platforms(db, epoch, &plats, &np, err);
        if (rc < 0)
            return rc;
        for (size_t i = 0; i < np; i++)
            stat_platform(db, epoch, plats[i], out);
        dcpi_db_free_list(plats, np);
    }
    if (out->end < out->start)
        out->end = out->start;
    return 0;
}

int dcpi_epoch_list(const char *db, const char *platform, dcpi_epoch_info_t **out, size_t *n,
                    char *err)
{
    char **names = NULL;
    size_t nn = 0, k = 0;
    int rc = dcpi_db_epochs(db, &names, &nn, err);
    if (rc < 0)
        return rc;
    dcpi_epoch_info_t *v = nn ? calloc(nn, sizeof *v) : NULL;
    if (nn && !v) {
        dcpi_db_free_list(names, nn);
        return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", db);
    }
    for (size_t i = 0; i < nn; i++)
        if (dcpi_epoch_stat(db, names[i], platform, &v[k], NULL) == 0)
            k++; /* (an epoch without the platform is not listed) */
    dcpi_db_free_list(names, nn);
    *out = v;
    *n = k;
    return 0;
}

/* ---- removing an epoch ------------------------------------------------------------------ */

int dcpi_epoch_remove(const char *db, const char *epoch, const char *platform, char *err)
{
    char from[4096], to[4096], dir[4096];
    if (!db || !epoch || !platform || !dcpi_db_is_epoch_name(epoch) || strchr(platform, '/') ||
        platform[0] == '.' || !platform[0])
        return dcpi__errf(err, DCPI_EINVAL, "%s: bad epoch or platform to remove", db ? db : "DB");
    if (dcpi__pathf(from, sizeof from, "%s/%s/%s", db, epoch, platform) < 0 ||
        dcpi__pathf(to, sizeof to, "%s/" EXPIRE_PREFIX "%s-%s", db, epoch, platform) < 0)
        return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", db);
    dcpi__remove_tree(to); /* an earlier removal of the same epoch that was interrupted */
    if (rename(from, to) < 0)
        return dcpi__errf(err, dcpi__errno_code(errno), "%s: %s", from, strerror(errno));
    (void)dcpi__pathf(dir, sizeof dir, "%s/%s", db, epoch);
    rmdir(dir); /* fails while other platforms are in it, as it should */
    dcpi__remove_tree(to);
    return 0;
}

void dcpi_epoch_sweep(const char *db)
{
    DIR *d = opendir(db);
    if (!d)
        return;
    struct dirent *de;
    char path[4096];
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, EXPIRE_PREFIX, strlen(EXPIRE_PREFIX)) == 0 &&
            dcpi__pathf(path, sizeof path, "%s/%s", db, de->d_name) == 0)
            dcpi__remove_tree(path);
    closedir(d);
}

int dcpi_epoch_parse_time(const char *s, int64_t now, int64_t *out)
{
    struct tm tm = {0};
    char *end = NULL;
    size_t n = strlen(s);
    if (s[0] == '@') {
        long long v = strtoll(s + 1, &end, 10);
        if (end == s + 1 || *end || v < 0)
            return DCPI_EINVAL;
        *out = v;
        return 0;
    }
    if (n >= 2 && strspn(s, "0123456789") == n - 1 && strchr("smhd", s[n - 1])) {
        long long v = strtoll(s, &end, 10), mul = s[n - 1] == 's'   ? 1
                                                  : s[n - 1] == 'm' ? 60
                                                  : s[n - 1] == 'h' ? 3600
                                                                    : 86400;
        *out = now - v * mul;
        return 0;
    }
    if (dcpi_db_is_epoch_name(s)) {
        time_t t;
        if (dcpi_db_epoch_start(s, &t) < 0)
            return DCPI_EINVAL;
        *out = (int64_t)t;
        return 0;
    }
    end = strptime(s, "%Y-%m-%d", &tm);
    if (end && *end == 'T')
        end = strptime(end + 1, "%H:%M", &tm);
    if (end && *end == ':')
        end = strptime(end + 1, "%S", &tm);
    if (!end || *end)
        return DCPI_EINVAL;
    *out = (int64_t)timegm(&tm);
    return 0;
}

/* The range [*lo, *hi] of names in v[0..n) that spec selects ("all", "A..B", or one). */
static int select_range(const char *db, const char *spec, const char *platform, char **v, size_t n,
                        size_t *lo, size_t *hi, char *err)
{
    if (!strcmp(spec, "all")) {
        *lo = 0;
        *hi = n - 1;
        return 0;
    }
    const char *dots = strstr(spec, "..");
    char a[DCPI_NAMELEN], b[DCPI_NAMELEN], ea[DCPI_NAMELEN], eb[DCPI_NAMELEN];
    if (dots) {
        if (dots == spec || !dots[2] || (size_t)(dots - spec) >= sizeof a || strstr(dots + 2, ".."))
            return dcpi__errf(err, DCPI_EINVAL,
                              "%s: epoch range '%s': want A..B (names, latest or latest-N)", db,
                              spec);
        snprintf(a, sizeof a, "%.*s", (int)(dots - spec), spec);
        snprintf(b, sizeof b, "%s", dots + 2);
    } else {
        snprintf(a, sizeof a, "%s", spec);
        snprintf(b, sizeof b, "%s", spec);
    }
    int rc = dcpi_db_select_epoch(db, a, platform, ea, err);
    rc = rc < 0 ? rc : dcpi_db_select_epoch(db, b, platform, eb, err);
    if (rc < 0)
        return rc;
    if (strcmp(ea, eb) > 0)
        return dcpi__errf(err, DCPI_EINVAL, "%s: epoch range '%s': %s is after %s", db, spec, ea,
                          eb);
    *lo = *hi = n;
    for (size_t i = 0; i < n; i++) {
        if (*lo == n && strcmp(v[i], ea) >= 0)
            *lo = i;
        if (strcmp(v[i], eb) <= 0)
            *hi = i;
    }
    return 0;
}

/* 1 when epoch name (of platform) overlaps [since, until) (0: unbounded). */
static int in_window(const char *db, const char *name, const char *platform, int64_t since,
                     int64_t until)
{
    dcpi_epoch_info_t info;
    char err[DCPI_ERRLEN];
    if (dcpi_epoch_stat(db, name, platform, &info, err) < 0)
        return 0;
    int64_t start = (int64_t)info.start, end = info.end > info.start ? (int64_t)info.end : start;
    return (!until || start < until) && (!since || end >= since);
}

int dcpi_epoch_select(const char *db, const char *spec, const char *platform, int64_t since,
                      int64_t until, char ***names, size_t *n, char *err)
{
    *names = NULL;
    *n = 0;
    int bounded = since || until;
    if (!bounded && (!spec || (!strstr(spec, "..") && strcmp(spec, "all")))) {
        char one[DCPI_NAMELEN];
        int rc = dcpi_db_select_epoch(db, spec, platform, one, err);
        if (rc < 0)
            return rc;
        char **v = calloc(1, sizeof(*v));
        if (!v || !(v[0] = strdup(one))) {
            free(v);
            return dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", db);
        }
        *names = v;
        *n = 1;
        return 0;
    }
    char **v;
    size_t nv;
    int rc = dcpi_db_epochs(db, &v, &nv, err);
    if (rc < 0)
        return rc;
    size_t k = 0;
    for (size_t i = 0; i < nv; i++) { /* only the platform's epochs */
        char path[4096];
        struct stat st;
        if (!platform || (dcpi__pathf(path, sizeof path, "%s/%s/%s", db, v[i], platform) == 0 &&
                          stat(path, &st) == 0 && S_ISDIR(st.st_mode)))
            v[k++] = v[i];
        else
            free(v[i]);
    }
    nv = k;
    size_t lo = 0, hi = 0;
    if (nv == 0)
        rc = dcpi__errf(err, DCPI_ENOENT, "%s: no epochs%s%s", db, platform ? " of platform " : "",
                        platform ? platform : "");
    else
        rc = select_range(db, spec ? spec : "all", platform, v, nv, &lo, &hi, err);
    k = 0;
    for (size_t i = 0; i < nv; i++) {
        if (rc == 0 && i >= lo && i <= hi && lo < nv && in_window(db, v[i], platform, since, until))
            v[k++] = v[i];
        else
            free(v[i]);
    }
    if (rc == 0 && k == 0)
        rc = dcpi__errf(err, DCPI_ENOENT, "%s: no epoch%s%s%s in the time given by -since/-until",
                        db, spec ? " of '" : "", spec ? spec : "", spec ? "'" : "");
    if (rc < 0) {
        free(v);
        return rc;
    }
    *names = v;
    *n = k;
    return 0;
}
