/*
 * query.h - the fleet as a profile set (core/model/profset.h): what -fleet URL gives dcpiprof,
 * dcpilist and the other tools, built from ClickHouse's GROUP BY results (one row per image,
 * event and offset over every selected host and epoch, never the stored rows themselves), each
 * host's counts weighted by 1/duty (dcpid -duty), with each image's symbols from the store (no
 * binary needed here). Hosts, time window and processes are selected in the query.
 */
#ifndef DCPI_CORE_FLEET_QUERY_H
#define DCPI_CORE_FLEET_QUERY_H

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

/*
 * The selected samples as a set (flags: DCPI_PSET_LOAD_PROCS adds each image's split by command
 * name: pids differ between hosts, so the fleet's split is per command, pid 0, unless -pid asks
 * for one). "URL: reason" in err. An empty selection gives an empty set.
 */
int dcpi_fleet_load(const char *url, const dcpi_fleet_filter_t *flt, int flags,
                    dcpi_profset_t **out, char *err);

#endif
