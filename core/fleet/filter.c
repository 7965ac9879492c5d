/*
 * filter.c - a fleet selection's WHERE conditions (filter.h).
 */
#include "core/fleet/filter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/fleet/schema.h"
#include "core/store/procprof.h"

static void add_hosts(dcpi_fbuf_t *sql, const char *hosts)
{
    dcpi_fbuf_str(sql, " AND host IN (");
    char *copy = strdup(hosts);
    int first = 1;
    for (char *save = NULL, *h = copy ? strtok_r(copy, ",", &save) : NULL; h;
         h = strtok_r(NULL, ",", &save)) {
        if (!first)
            dcpi_fbuf_str(sql, ", ");
        dcpi_fbuf_sqlstr(sql, h);
        first = 0;
    }
    if (first)
        dcpi_fbuf_str(sql, "''");
    if (!copy)
        sql->oom = 1;
    free(copy);
    dcpi_fbuf_str(sql, ")");
}

void dcpi_fleet_since_day(const dcpi_fleet_filter_t *flt, char day[16])
{
    time_t t = (time_t)flt->since;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(day, 16, "%Y-%m-%d", &tm);
}

void dcpi_fleet_where_sel(const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql)
{
    if (flt->build_id) {
        dcpi_fbuf_str(sql, " AND build_id = ");
        dcpi_fbuf_sqlstr(sql, flt->build_id);
    }
    if (procs && flt->procsel && flt->procsel->pid >= 0)
        dcpi_fbuf_printf(sql, " AND pid = %ld", flt->procsel->pid);
    if (procs && flt->procsel && flt->procsel->comm) {
        char comm[DCPI_PROCPROF_COMMLEN];
        snprintf(comm, sizeof comm, "%s", flt->procsel->comm); /* the kernel's 15 bytes */
        dcpi_fbuf_str(sql, " AND comm = ");
        dcpi_fbuf_sqlstr(sql, comm);
    }
}

void dcpi_fleet_where(dcpi_fleet_t *f, const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql)
{
    dcpi_fbuf_str(sql, " WHERE ");
    dcpi_fleet_committed(f, sql);
    dcpi_fleet_where_after(flt, procs, sql);
}

void dcpi_fleet_where_window(const dcpi_fleet_filter_t *flt, dcpi_fbuf_t *sql)
{
    if (flt->since > 0) {
        char day[16];
        dcpi_fleet_since_day(flt, day);
        dcpi_fbuf_printf(sql, " AND day >= '%s' AND eend >= %" PRId64, day, flt->since);
    }
    if (flt->until > 0)
        dcpi_fbuf_printf(sql, " AND estart < %" PRId64, flt->until);
}

void dcpi_fleet_where_after(const dcpi_fleet_filter_t *flt, int procs, dcpi_fbuf_t *sql)
{
    if (flt->hosts)
        add_hosts(sql, flt->hosts);
    dcpi_fleet_where_window(flt, sql);
    dcpi_fleet_where_sel(flt, procs, sql);
}
