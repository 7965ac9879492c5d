/*
 * db.h - the profile database: DB/<epoch>/<platform>/<image dir>/<files>.
 *
 * Epochs are named by their UTC start time, YYYYMMDDHHMMSS (14 digits; the next free second when
 * that name already holds this platform); names sort in time order. Databases written before
 * this format also hold 12-digit names YYYYMMDDHHMM: they are read as epochs too, and sort in
 * time order among the others. core/store/epochs.h lists epochs with their times and counts.
 * The platform is the host name unless DB/hosts maps it ("host platform" lines, '#' comments).
 * A daemon holds DB/dcpid-<platform>.lock (flock) while it writes that platform.
 * Per platform the daemon also keeps DB/dcpid-<platform>.log and the control socket
 * DB/dcpid-<platform>.sock.
 * Inside an image directory "<basename>_<imageid>" (see dcpi_image_dirname):
 *   <event>.prof     PC profile for one event (dcpiformat, include/dcpi/profile.h)
 *   <vpname>.vprof   value profile of one plugin (issue 3)
 * and the unknown samples go to the image directory "unknown@<platform>".
 */
#ifndef DCPI_CORE_DB_H
#define DCPI_CORE_DB_H

#include <stddef.h>
#include <time.h>

#define DCPI_NAMELEN 256

/* The database directory: dir if not NULL, else $DCPIDB, else "./dcpidb". */
const char *dcpi_db_default(const char *dir);

/* Platform name of this host in db: hosts file mapping of hostname, else hostname.
 * A malformed hosts file is an error ("DB/hosts:LINE: reason" in err). */
int dcpi_db_platform(const char *db, char out[DCPI_NAMELEN], char *err);
/* Same from an explicit hostname (for tests). */
int dcpi_db_platform_for(const char *db, const char *hostname, char out[DCPI_NAMELEN], char *err);

/* Parse a hosts file's text buf[0..len) ("hostname platform" lines, '#' comments, blank lines):
 * returns 1 with the platform of hostname's first line in out, 0 when no line names hostname,
 * or DCPI_EFORMAT with "hosts:LINE: reason" in err (one word, more than two words, a platform
 * that is not a usable directory name, a NUL byte); DCPI_EINVAL, DCPI_ENOMEM. */
int dcpi_db_hosts_parse(const char *buf, size_t len, const char *hostname, char out[DCPI_NAMELEN],
                        char *err);

/* Create DB (if needed), then a new epoch for platform starting at now: DB/<name>/<platform>,
 * named YYYYMMDDHHMMSS of now, or of the next second free for platform. name gets the epoch
 * name. */
int dcpi_db_new_epoch(const char *db, const char *platform, time_t now, char name[DCPI_NAMELEN],
                      char *err);

/* 1 when s is an epoch name (14 digits, or the older 12). */
int dcpi_db_is_epoch_name(const char *s);
/* The UTC start time of epoch name (its digits): 0 or DCPI_EINVAL. */
int dcpi_db_epoch_start(const char *name, time_t *out);

/* All epoch names in db (directories whose name is 12 or 14 digits), ascending. Caller frees
 * each string and the array (dcpi_db_free_list). */
int dcpi_db_epochs(const char *db, char ***names, size_t *n, char *err);
/* Platforms present in one epoch, ascending. */
int dcpi_db_platforms(const char *db, const char *epoch, char ***names, size_t *n, char *err);
void dcpi_db_free_list(char **names, size_t n);

/* Resolve an epoch spec: NULL or "latest" = newest, "latest-N" = N before the newest, or an
 * exact name. When platform is not NULL only epochs holding that platform count.
 * Errors name the spec and the db. */
int dcpi_db_select_epoch(const char *db, const char *spec, const char *platform,
                         char out[DCPI_NAMELEN], char *err);

/* Take the per-platform lock; DCPI_EBUSY (with the holder's pid in err) when another daemon
 * holds it. *fd is the lock fd to close on exit. */
int dcpi_db_lock(const char *db, const char *platform, int *fd, char *err);
/* Wait until no daemon holds the platform's lock (dcpictl quit returns only then): 0, or
 * DCPI_EBUSY with the reason in err after timeout_ms. */
int dcpi_db_wait_unlocked(const char *db, const char *platform, unsigned timeout_ms, char *err);

/* Paths of the per-platform daemon files: kind is "lock", "log" or "sock". */
void dcpi_db_daemon_path(const char *db, const char *platform, const char *kind, char *out,
                         size_t len);

/* One profile file found in an epoch. */
typedef struct dcpi_db_file {
    char platform[DCPI_NAMELEN];
    char imagedir[DCPI_NAMELEN]; /* "<basename>_<id>" or "unknown@<platform>" */
    char file[DCPI_NAMELEN];     /* "<event>.prof" or "<vpname>.vprof" */
    char path[4096];             /* full path */
} dcpi_db_file_t;

/* Every file with the given suffix (".prof" or ".vprof") in epoch, for one platform or all
 * (platform NULL), sorted by platform, imagedir, file. Caller frees *files. */
int dcpi_db_list_files(const char *db, const char *epoch, const char *platform, const char *suffix,
                       dcpi_db_file_t **files, size_t *n, char *err);
/* The same for several epochs (-epoch all, A..B): their lists one after the other, in the order
 * of epochs. On error *files is NULL. */
int dcpi_db_list_files_epochs(const char *db, const char *const *epochs, size_t nepochs,
                              const char *platform, const char *suffix, dcpi_db_file_t **files,
                              size_t *n, char *err);

#endif
