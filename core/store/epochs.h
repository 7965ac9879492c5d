/*
 * epochs.h - epochs over time: what each epoch of a platform holds (start, end, samples, lost,
 * size on disk), the summary file dcpid keeps in each epoch, and removing an epoch.
 *
 * DB/<epoch>/<platform>/epoch.info is a small text file dcpid rewrites (atomically) at every
 * flush and when the epoch ends, one "key value" line each:
 *   dcpi-epoch 1          the format
 *   start SECONDS         UTC seconds since 1970 when the epoch started
 *   end SECONDS           the last flush (the epoch's samples up to then are on disk)
 *   samples N             samples taken in the epoch (every event)
 *   lost N                samples lost in the epoch (ring overflows, full tables)
 *   open 0|1              1 while a daemon writes the epoch, 0 once it ended
 * Epochs without it (written by dcpiimport, by older versions, or whose file is damaged) are
 * described from their files: start from the name, end from the newest file, samples and lost
 * summed from the profiles' headers (info.has_info is 0 then).
 *
 * Epoch names are core/store/db.h's (YYYYMMDDHHMMSS); the selections of the analysis tools
 * build on dcpi_epoch_list.
 */
#ifndef DCPI_CORE_EPOCHS_H
#define DCPI_CORE_EPOCHS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/store/db.h"

#define DCPI_EPOCH_INFO_FILE "epoch.info"

typedef struct dcpi_epoch_info {
    char name[DCPI_NAMELEN];
    time_t start, end;
    uint64_t samples, lost;
    uint64_t bytes; /* on disk (allocated blocks) under DB/<epoch>/<platform> (every platform's
                       when listed without one) */
    int has_info;   /* from epoch.info */
    int open;       /* epoch.info says a daemon still writes it (or was killed while it did) */
} dcpi_epoch_info_t;

/* Write info (name, start, end, samples, lost, open) as DB/<epoch>/<platform>/epoch.info,
 * atomically. 0 or a negative DCPI_E* with "PATH: reason" in err. */
int dcpi_epoch_info_write(const char *db, const char *platform, const dcpi_epoch_info_t *info,
                          char *err);

/* One epoch of platform (NULL: every platform of it, counts and sizes added up). Never fails
 * on a damaged epoch.info or profile (it is described from what reads); DCPI_ENOENT when the
 * epoch (or its platform) does not exist. */
int dcpi_epoch_stat(const char *db, const char *epoch, const char *platform, dcpi_epoch_info_t *out,
                    char *err);

/* Every epoch holding platform (NULL: every epoch), ascending by name (= by start), described
 * as by dcpi_epoch_stat. The caller frees *out. */
int dcpi_epoch_list(const char *db, const char *platform, dcpi_epoch_info_t **out, size_t *n,
                    char *err);

/* A time of -since/-until: "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS]" (UTC), an epoch name
 * (YYYYMMDDHHMM[SS]: its start), a unix time "@N", or "N[smhd]" ago (from now). 0, or
 * DCPI_EINVAL. The one time parser of the tools (local epochs and the fleet store). */
int dcpi_epoch_parse_time(const char *s, int64_t now, int64_t *out);

/*
 * The epochs a tool reads: spec is NULL (with no time bound: latest), "latest", "latest-N",
 * a name, "all" (every epoch), or a range "A..B" of two of those (inclusive, A not after B);
 * then only the epochs overlapping [since, until) are kept (0: unbounded; an epoch spans its
 * start to its end, see dcpi_epoch_stat), a spec NULL with a bound meaning "all". Only epochs
 * holding platform count when it is not NULL. *names (ascending, caller frees with
 * dcpi_db_free_list) gets at least one; DCPI_ENOENT "DB: ..." in err when none is selected,
 * DCPI_EINVAL for a malformed spec.
 */
int dcpi_epoch_select(const char *db, const char *spec, const char *platform, int64_t since,
                      int64_t until, char ***names, size_t *n, char *err);

/* Remove DB/<epoch>/<platform> (and DB/<epoch> when no platform is left) so that readers see
 * it whole or not at all: it is first renamed to DB/.expire-<epoch>-<platform>, then deleted.
 * Leftovers of an interrupted removal are deleted by dcpi_epoch_sweep. */
int dcpi_epoch_remove(const char *db, const char *epoch, const char *platform, char *err);
/* Delete what interrupted removals left behind (DB/.expire-*). */
void dcpi_epoch_sweep(const char *db);

#endif
