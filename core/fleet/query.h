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
#include "core/fleet/filter.h"
#include "core/model/profset.h"
#include "core/store/stackprof.h"
#include "core/store/vprof.h"

/*
 * The selected samples as a set (flags: DCPI_PSET_LOAD_PROCS adds each image's split by process,
 * pid and command name as the hosts recorded them: one host's split is its local one; equal
 * (pid, command) pairs of several hosts add up; with DCPI_PSET_LOAD_PROCS_TOTALS each process's
 * total per image and event at offset 0: the sum of its offsets' counts, each weighted and
 * rounded as without it). "URL: reason" in err. An empty selection gives an empty set.
 */
int dcpi_fleet_load(const char *url, const dcpi_fleet_filter_t *flt, int flags,
                    dcpi_profset_t **out, char *err);

/*
 * The value hotlists of image build_id in the selection (-pid/-comm do not apply: hotlists are
 * per image): one value profile per plugin, every host's and epoch's summaries merged in the
 * store as dcpi_vsummary_merge merges them (queryvals.c), with the header keys a listing reads
 * (vprof, image, tstart, tsize, contexts, backend: "mixed" when hosts differ, path), and the
 * missing-value marks of every selected host, epoch and platform (dcpi_vprof_marks: one line per
 * mark, as the .vmiss files of a local merge; a plugin with marks but no hotlists gets a profile
 * of marks only). names[i] and vps[i] are the caller's (free, dcpi_vprof_free, then both
 * arrays). None: *n = 0.
 */
int dcpi_fleet_vprofs(const char *url, const dcpi_fleet_filter_t *flt, const char *build_id,
                      char ***names, dcpi_vprof_t ***vps, size_t *n, char *err);

/*
 * The call chains of event in the selection (-pid/-comm do not apply) summed per chain in the
 * store (weighted by 1/duty) as a stack profile: its images are the chains' build-ids and text
 * starts, with the path of set's image of the same id and text start (a frame in an image
 * without samples in set has no path: it is named only through set). *out NULL when there are
 * none.
 */
int dcpi_fleet_stacks(const char *url, const dcpi_fleet_filter_t *flt, const dcpi_profset_t *set,
                      const char *event, dcpi_stackprof_t **out, char *err);

/* The fleet as a view's source of call chains and value hotlists (the stacks and vprofs callbacks
 * of dcpi_procs_opts_t, dcpi_export_src_t and dcpi_report_opts_t, with a dcpi_fleet_source_t as
 * their arg): the store at url, selected by flt. */
typedef struct dcpi_fleet_source {
    const char *url;
    const dcpi_fleet_filter_t *flt;
} dcpi_fleet_source_t;

/* dcpi_fleet_stacks of the source arg (a dcpi_fleet_source_t). */
int dcpi_fleet_source_stacks(void *arg, const dcpi_profset_t *set, const char *event,
                             dcpi_stackprof_t **sp, char *err);

/* dcpi_fleet_vprofs of the source arg (a dcpi_fleet_source_t), without the profiles of marks
 * only (a local view has a value profile only where a .vprof is). */
int dcpi_fleet_source_vprofs(void *arg, const char *id, char ***names, dcpi_vprof_t ***vps,
                             size_t *n, char *err);

#endif
