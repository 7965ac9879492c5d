/*
 * schema.h - the fleet's tables in ClickHouse (docs/fleet.md, "Schema"), schema version 3.
 *
 * Every data row carries the commit id (cid) of the push that wrote it and counts only once the
 * manifest holds that commit: a push inserts its rows, then one manifest row. A slot is what a
 * push replaces (one epoch of one host and platform for dcpipush, one flush for dcpid -push,
 * one build-id's symbols); queries count the rows of each slot's newest commit, so a push
 * repeated, retried after a crash, or cut off half-way never counts twice. skey (a hash of the
 * host, or of the build-id for symbols) is the sharding key of the Distributed tables.
 * Data tables are partitioned by day (of the epoch's start, UTC); retention drops whole days.
 * Only SQL, engines and formats ClickHouse 18.16 and current releases both accept are used
 * (no TTL clause, no query parameters: literals are escaped, sql.h). Schema 2 added
 * hotlists.backend and manifest.epoch, schema 3 the vmiss table (the missing-value marks of
 * the value profiles), schema 4 the hotlists' cluster counters clusters, chits, csq, cagree
 * (core/store/vsummary.h: a summary row's K, N, S, D; 0 in entry rows and in older rows, which
 * had none); init upgrades a schema 1, 2 or 3 store in place.
 */
#ifndef DCPI_CORE_FLEET_SCHEMA_H
#define DCPI_CORE_FLEET_SCHEMA_H

#include <stdint.h>

#include "core/fleet/conn.h"

#define DCPI_FLEET_SCHEMA 4

/* Columns of the data tables, in insert order (rows.c writes them in this order). */
#define DCPI_FLEET_KEYCOLS "day, skey, host, epoch, estart, eend, platform, event, period, duty"
#define DCPI_FLEET_SAMPLES_COLS                                                                    \
    DCPI_FLEET_KEYCOLS ", build_id, path, kind, tstart, tsize, off, pid, comm, cnt"
#define DCPI_FLEET_HOTLISTS_COLS                                                                   \
    DCPI_FLEET_KEYCOLS ", build_id, path, kind, tstart, tsize, plugin, hotsize, contexts, off, "   \
                       "entry, value, ctx0, ctx1, cnt, err, vtot, seen, backend"
/* A summary row with its cluster counters (schema 4; rows.c writes these only for a summary
 * with cluster information, so a batch without any keeps an older dcpi's rows and id). */
#define DCPI_FLEET_HOTCLUST_COLS DCPI_FLEET_HOTLISTS_COLS ", clusters, chits, csq, cagree"
#define DCPI_FLEET_VMISS_COLS                                                                      \
    DCPI_FLEET_KEYCOLS ", build_id, path, kind, tstart, tsize, plugin, off, reason"
#define DCPI_FLEET_CHAINS_COLS   DCPI_FLEET_KEYCOLS ", chain, cnt"
#define DCPI_FLEET_LOSS_COLS     DCPI_FLEET_KEYCOLS ", lost, samples"
#define DCPI_FLEET_SYMBOLS_COLS  "skey, build_id, addr, size, name"
#define DCPI_FLEET_MANIFEST_COLS "day, skey, host, slot, batch, cid, pushed, kind, rows, epoch"

/* Image kinds in the kind column (as core/model/profset.h's dcpi_pset_kind). */
enum { DCPI_FLEET_FILE = 0, DCPI_FLEET_KERNEL = 1, DCPI_FLEET_UNKNOWN = 2, DCPI_FLEET_PSEUDO = 3 };

/* What a connection learned from the meta table. */
typedef struct dcpi_fleet_info {
    int schema;         /* DCPI_FLEET_SCHEMA */
    long keep;          /* days kept (0: forever) */
    char cluster[128];  /* "" or the cluster of the Distributed tables */
    const char *suffix; /* "" or "_all": the tables queries and pushes use */
    int agg;            /* 1: the aggregate's tables exist (agg.h; an older init made none) */
} dcpi_fleet_info_t;

/*
 * Create the database and the tables when missing (dcpictl -fleet URL init): keep days of
 * retention (0: forever, else dcpi_fleet_expire drops older days), cluster NULL or the name of a
 * cluster in the server's remote_servers config: then "<table>_all" Distributed tables over it
 * (sharded by skey) are created too and used by every push and query through this server. Run
 * it on each shard first (without cluster), then on the server that fronts them (with it).
 * A schema 1, 2 or 3 store is upgraded (the added columns and tables); a newer one is an error
 * (DCPI_EVERSION).
 */
int dcpi_fleet_init(dcpi_fleet_t *f, long keep, const char *cluster, char *err);
/* Read and check the meta table: DCPI_ENOENT "URL: database D has no dcpi schema (run dcpictl
 * -fleet URL init)", DCPI_EVERSION for another schema version. */
int dcpi_fleet_check(dcpi_fleet_t *f, dcpi_fleet_info_t *info, char *err);
/* Drop the days older than the kept ones (today UTC - keep) from every data table; *dropped gets
 * the number of partitions dropped. Symbols stay. 0 when keep is 0. */
int dcpi_fleet_expire(dcpi_fleet_t *f, long *dropped, char *err);

/* The manifest filter of a query: the newest commit of each slot ("cid IN (SELECT argMax(cid,
 * pushed) FROM DB.manifest ... GROUP BY slot)"), where an "epoch" commit of a host's epoch
 * (dcpipush) supersedes the "flush" and "values" commits of that epoch (dcpid -push): an epoch
 * both shipped counts once. Over the local manifest (on a cluster each shard reads its own). */
void dcpi_fleet_committed(dcpi_fleet_t *f, dcpi_fbuf_t *sql);
/* The same commits as a subquery "(SELECT ... AS c, ... AS d, ... AS k ...)": each counted
 * commit (c), its manifest day (d) and kind (k), one row per slot (agg.c). */
void dcpi_fleet_counted(dcpi_fleet_t *f, dcpi_fbuf_t *sql);

#endif

/* dcpictl -fleet URL CMD: "init" (with keep and cluster), "expire" or "status"; the lines it
 * prints go to out. 0, DCPI_EINVAL (unknown command), or the command's error. */
int dcpi_fleet_admin(const char *url, const char *cmd, long keep, const char *cluster,
                     void (*out)(void *arg, const char *line), void *arg, char *err);
