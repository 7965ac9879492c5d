/*
 * pushdb.c - push a whole database (dcpipush; push.h, dcpi_fleet_push_db): its epochs, each its
 * own batch, sent in groups (one insert per table for a group) to keep the inserts few.
 */
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/fleet/push.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

#define GROUP_BATCHES 32
#define GROUP_ROWS    (1u << 19)

typedef struct group {
    dcpi_fleet_batch_t b[GROUP_BATCHES];
    const char *epoch[GROUP_BATCHES];
    size_t n, rows;
} group_t;

static int send_group(dcpi_fleet_t *f, const dcpi_fleet_info_t *info, group_t *g,
                      void (*report)(void *, const dcpi_fleet_pushed_t *), void *arg, char *err)
{
    const dcpi_fleet_batch_t *bp[GROUP_BATCHES];
    int sent[GROUP_BATCHES] = {0};
    for (size_t i = 0; i < g->n; i++)
        bp[i] = &g->b[i];
    int rc = dcpi_fleet_push_many(f, info, bp, g->n, sent, err);
    for (size_t i = 0; i < g->n; i++) {
        if (rc == 0 && report)
            report(arg, &(dcpi_fleet_pushed_t){
                            .epoch = g->epoch[i], .rows = g->b[i].rows, .sent = sent[i]});
        dcpi_fleet_batch_free(&g->b[i]);
    }
    g->n = g->rows = 0;
    return rc;
}

static int add_epoch(group_t *g, const char *db, const char *host, const char *epoch,
                     const char *next, char *err)
{
    uint32_t eend = 0;
    if (next && dcpi_fleet_epoch_time(next, &eend) < 0)
        eend = 0;
    dcpi_fleet_batch_t *b = &g->b[g->n];
    int rc = dcpi_fleet_batch_init(b, host, "epoch");
    if (rc == 0)
        rc = dcpi_fleet_batch_epoch(b, db, epoch, eend, err);
    if (rc < 0) {
        dcpi_fleet_batch_free(b);
        return rc;
    }
    g->epoch[g->n++] = epoch;
    g->rows += b->rows;
    return 0;
}

int dcpi_fleet_push_db(const char *url, const char *db, const char *host, const char *epoch_spec,
                       void (*report)(void *arg, const dcpi_fleet_pushed_t *p), void *arg,
                       char *err)
{
    char **epochs = NULL;
    size_t n = 0;
    int rc = dcpi_db_epochs(db, &epochs, &n, err);
    if (rc < 0)
        return rc;
    if (n == 0) {
        dcpi_db_free_list(epochs, n);
        return dcpi__errf(err, DCPI_ENOENT, "%s: no epochs", db);
    }
    char one[DCPI_NAMELEN] = "";
    if (epoch_spec && (rc = dcpi_db_select_epoch(db, epoch_spec, NULL, one, err)) < 0) {
        dcpi_db_free_list(epochs, n);
        return rc;
    }
    dcpi_fleet_t *f = NULL;
    dcpi_fleet_info_t info;
    group_t *g = calloc(1, sizeof *g);
    rc = g ? dcpi_fleet_open(url, &f, err) : DCPI_ENOMEM;
    if (rc == 0)
        rc = dcpi_fleet_check(f, &info, err);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (one[0] && strcmp(one, epochs[i]) != 0)
            continue;
        rc = add_epoch(g, db, host, epochs[i], i + 1 < n ? epochs[i + 1] : NULL, err);
        if (rc == 0 && (g->n == GROUP_BATCHES || g->rows >= GROUP_ROWS))
            rc = send_group(f, &info, g, report, arg, err);
    }
    if (rc == 0 && g->n)
        rc = send_group(f, &info, g, report, arg, err);
    for (size_t i = 0; g && i < g->n; i++)
        dcpi_fleet_batch_free(&g->b[i]);
    free(g);
    dcpi_fleet_close(f);
    dcpi_db_free_list(epochs, n);
    return rc;
}
