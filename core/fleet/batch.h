/*
 * batch.h - one push's rows: what a host ships to the fleet at once, built from an epoch of a
 * database (dcpipush) or from one flush of dcpid (-push), kept in memory or spooled on disk.
 *
 * A batch belongs to a slot (what it replaces: one epoch of one host, or one flush) and has a
 * content id (batch id), both deterministic: the same epoch pushed twice has the same ids, so
 * the second push is a no-op (push.h). Its rows are TabSeparated text per table, without the
 * commit id column (added when sent), plus the images whose symbols the fleet still needs
 * ("symbol requests": id, kind, path, image directory, tstart, tsize).
 */
#ifndef DCPI_CORE_FLEET_BATCH_H
#define DCPI_CORE_FLEET_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/fleet/sql.h"

enum {
    DCPI_FLEET_T_SAMPLES,
    DCPI_FLEET_T_HOTLISTS,
    DCPI_FLEET_T_CHAINS,
    DCPI_FLEET_T_LOSS,
    DCPI_FLEET_T_VMISS,    /* schema 3; in the batch id and the spool file only when it has rows */
    DCPI_FLEET_T_HOTCLUST, /* schema 4: hotlists' summary rows with cluster counters, inserted
                              into hotlists; in the batch id and spool file only when it has rows */
    DCPI_FLEET_NT
};

typedef struct dcpi_fleet_batch {
    char host[256];
    char kind[16];  /* "epoch" (dcpipush), "flush" or "values" (dcpid -push) */
    char epoch[64]; /* the epoch the rows belong to: an "epoch" commit of (host, epoch)
                       supersedes that epoch's "flush" and "values" commits (schema.h) */
    char day[16];   /* YYYY-MM-DD (UTC) of the epoch's start: the manifest's partition */
    uint64_t skey;  /* hash of the host: the sharding key */
    uint64_t slot;  /* what this batch replaces */
    uint64_t batch; /* hash of slot and rows */
    dcpi_fbuf_t t[DCPI_FLEET_NT]; /* rows per table, without cid */
    size_t rows;                  /* rows over every table */
    dcpi_fbuf_t symreq; /* "id\tkind\tpath\tdir\ttstart\ttsize\tpages\n" lines, one per image
                           (pages: the 4 KiB pages sampled, hex, ','-separated; made by seal) */
    struct dcpi_fleet_img *imgs; /* the images while rows are added */
    size_t nimgs, capimgs;
} dcpi_fleet_batch_t;

/* The tables the rows go to, as indexed by DCPI_FLEET_T_* ("samples", ...; hotlists for
 * DCPI_FLEET_T_HOTCLUST too, whose section of a spool file is "hotclust"). */
const char *dcpi_fleet_table(int t);
/* Their columns (schema.h), without cid. */
const char *dcpi_fleet_table_cols(int t);

/* What every row of one (epoch, platform, event) shares. */
typedef struct dcpi_fleet_key {
    const char *host, *epoch, *platform, *event;
    uint32_t estart, eend;
    uint64_t period;
    double duty; /* the share of the time sampled (dcpid -duty), 1 when always */
} dcpi_fleet_key_t;

/* Start an empty batch of host ("" or NULL: this machine's hostname). */
int dcpi_fleet_batch_init(dcpi_fleet_batch_t *b, const char *host, const char *kind);
void dcpi_fleet_batch_free(dcpi_fleet_batch_t *b);
/* Append the key columns of one row to table t. */
void dcpi_fleet_batch_key(dcpi_fleet_batch_t *b, int t, const dcpi_fleet_key_t *k);
/* The symbol request of one image (made once per id and tstart in the batch): its index for
 * dcpi_fleet_batch_page, or DCPI_ENOMEM. */
int dcpi_fleet_batch_symreq(dcpi_fleet_batch_t *b, const char *id, int kind, const char *path,
                            const char *dir, uint64_t tstart, uint64_t tsize);
/* Image img was sampled (or named by a frame) at address addr (tstart + offset): the fleet
 * gets the symbols around it (push.h). */
void dcpi_fleet_batch_page(dcpi_fleet_batch_t *b, int img, uint64_t addr);
/* Fix day, skey, slot (from slot_text) and batch (from slot and the rows). 0 or DCPI_ENOMEM. */
int dcpi_fleet_batch_seal(dcpi_fleet_batch_t *b, uint32_t estart, const char *slot_text);

/* The epoch's start from its name (YYYYMMDDHHMM[SS], UTC): 0, or DCPI_EINVAL. */
int dcpi_fleet_epoch_time(const char *epoch, uint32_t *out);
/* The duty of one platform's epoch: DB/EPOCH/PLATFORM/duty ("0.25\n"), 1 when absent. */
double dcpi_fleet_epoch_duty(const char *db, const char *epoch, const char *platform);

/*
 * Every row of one epoch of a database (all platforms): samples (split by process where the
 * epoch has .procs files), value hotlists and their missing-value marks (.vmiss), call chains,
 * losses, and a symbol request per image.
 * eend is the epoch's end (the next epoch's start, or the newest file's time for the last one).
 * The slot is (host, epoch): pushing the epoch again after it grew replaces it. DCPI_E* with
 * "FILE: reason" in err.
 */
int dcpi_fleet_batch_epoch(dcpi_fleet_batch_t *b, const char *db, const char *epoch, uint32_t eend,
                           char *err);

/* The value hotlists (with their missing-value marks) and call chains of one platform of an epoch
 * (dcpid -push ships them when the epoch ends, and at exit): slot (host, "values", epoch,
 * platform), so a later push of the grown epoch replaces it. */
int dcpi_fleet_batch_values(dcpi_fleet_batch_t *b, const char *db, const char *epoch,
                            const char *platform, uint32_t eend, char *err);

/* The batch as one spool file's bytes, and back (name for messages). */
int dcpi_fleet_batch_encode(const dcpi_fleet_batch_t *b, dcpi_fbuf_t *out);
int dcpi_fleet_batch_decode(const char *buf, size_t len, const char *name, dcpi_fleet_batch_t *b,
                            char *err);

#endif
