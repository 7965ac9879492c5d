/*
 * import.h - turning another profiler's output into an epoch of its own in a dcpi database
 * (dcpiimport): a gperftools CPU profile (images resolved from its mapped-objects list) or a
 * gmon.out of a gcc -pg program. Samples are counted per image into PC profiles (samples
 * outside every readable image go to unknown); the epoch is then built in a temporary
 * directory of the database and renamed into place, so a malformed input leaves no partial
 * database.
 *
 *     dcpi_import_opts_t o = {.tool = "dcpiimport", .format = "gmon", ...};
 *     dcpi_import_t im = {.o = &o};
 *     rc = dcpi_import_gmon(&im, err);                  // or dcpi_import_gperf
 *     rc = rc ? rc : dcpi_import_save(&im, db, platform, epoch, err);
 *     dcpi_import_free(&im);
 */
#ifndef DCPI_CORE_FORMATS_IMPORT_H
#define DCPI_CORE_FORMATS_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include "core/image/image.h"
#include "core/store/db.h"
#include "dcpi/profile.h"

typedef struct dcpi_import_opts {
    const char *tool;      /* program name in front of warnings on stderr */
    const char *format;    /* "gperftools" or "gmon" (recorded in the "imported" header) */
    const char *image;     /* the program file (-image), or NULL */
    const char *event;     /* event name given to the samples */
    const char *file;      /* the input file */
    const char *new_epoch; /* epoch name to create, NULL: one for now */
} dcpi_import_opts_t;

/* One image the samples fall in. */
typedef struct dcpi_import_image {
    char *path;
    int ok; /* probed */
    dcpi_image_info_t info;
    dcpi_profile_t *prof;
} dcpi_import_image_t;

typedef struct dcpi_import {
    const dcpi_import_opts_t *o;
    dcpi_import_image_t *v;
    size_t n, cap;
    uint64_t unknown;   /* samples outside every image */
    uint64_t saturated; /* adds where a count saturated at UINT32_MAX */
    uint64_t period;    /* nanoseconds */
} dcpi_import_t;

/*
 * Read o->file into im. An image that cannot be read is warned about on stderr ("TOOL: why;
 * its samples go to unknown") and its samples counted as unknown. Errors with "NAME: reason"
 * in err: the format reader's (DCPI_EFORMAT, DCPI_ETRUNC, ...), DCPI_ENOMEM; gmon also
 * DCPI_ENOENT (cannot read the program) and DCPI_EFORMAT (histogram outside its text).
 */
int dcpi_import_gperf(dcpi_import_t *im, char *err);
int dcpi_import_gmon(dcpi_import_t *im, char *err);
void dcpi_import_free(dcpi_import_t *im);

/*
 * Write im's profiles as a new epoch of db for platform plat (o->new_epoch, else
 * YYYYMMDDHHMM of now, else with seconds, else the next free second); its name in epoch.
 * DCPI_EEXIST when that epoch exists; DCPI_EIO and the writers' errors, "NAME: reason" in err.
 */
int dcpi_import_save(const dcpi_import_t *im, const char *db, const char *plat,
                     char epoch[DCPI_NAMELEN], char *err);

#endif
