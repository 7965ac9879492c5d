/*
 * filter.h - a selection of the fleet store (hosts, a time window, processes, one image) and its
 * WHERE conditions on a data table, shared by the raw queries (query.c, queryvals.c) and the
 * aggregate's (agg.c).
 */
#ifndef DCPI_CORE_FLEET_FILTER_H
#define DCPI_CORE_FLEET_FILTER_H

#include <stdint.h>

#include "core/fleet/conn.h"
#include "core/model/profset.h"

typedef struct dcpi_fleet_filter {
    const char *hosts; /* comma-separated host names; NULL: every host */
    int64_t since,
        until; /* epochs overlapping [since, until) (unix s; dcpi_epoch_parse_time); 0: open */
    const dcpi_procsel_t *procsel; /* -pid / -comm; NULL: every process */
    const char *build_id;          /* one image; NULL: all */
} dcpi_fleet_filter_t;

/* The WHERE condition of flt on a data table (with the manifest filter) into sql. */
void dcpi_fleet_where(dcpi_fleet_t *f, const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql);
/* Its parts: " AND ..." of the image and (procs) -pid/-comm selection; the UTC day of since. */
void dcpi_fleet_where_sel(const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql);
/* The raw rows' time window of flt: " AND day >= 'D' AND eend >= S AND estart < U" (each part
 * only when set). */
void dcpi_fleet_where_window(const dcpi_fleet_filter_t *flt, dcpi_fbuf_t *sql);
/* What follows the manifest filter: " AND ..." of the hosts, the window and dcpi_fleet_where_sel */
void dcpi_fleet_where_after(const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql);
void dcpi_fleet_since_day(const dcpi_fleet_filter_t *flt, char day[16]);

#endif
