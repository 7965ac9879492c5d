/*
 * parts.c - the daemon's parts (part.h): their table, each one's state made at its first use,
 * and the hooks called over all of them.
 */
#include "core/daemon/part.h"

#include <stdlib.h>

#include "core/daemon/daemon-int.h"

static const dcpi__part_ops_t *const table[] = {&dcpi__part_top,   &dcpi__part_jit,
                                                &dcpi__part_duty,  &dcpi__part_cache,
                                                &dcpi__part_exits, &dcpi__part_epochs};
_Static_assert(sizeof table / sizeof table[0] == DCPI__NPARTS, "DCPI__NPARTS: the table's size");

static int index_of(const dcpi__part_ops_t *ops)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i] == ops)
            return i;
    return -1;
}

void *dcpi__part(daemon_t *d, const dcpi__part_ops_t *ops)
{
    int i = index_of(ops);
    if (i < 0)
        return NULL;
    if (!d->part[i])
        d->part[i] = calloc(1, ops->size ? ops->size : 1);
    return d->part[i];
}

void *dcpi__part_if(const daemon_t *d, const dcpi__part_ops_t *ops)
{
    int i = index_of(ops);
    return i < 0 ? NULL : d->part[i];
}

void dcpi__parts_sample(daemon_t *d, int ev, uint32_t image, uint32_t off)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (d->part[i] && table[i]->sample)
            table[i]->sample(d, d->part[i], ev, image, off);
}

int dcpi__parts_unresolved(daemon_t *d, pid_t pid, uint64_t ip)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->unresolved && dcpi__part(d, table[i]) &&
            table[i]->unresolved(d, d->part[i], pid, ip))
            return 1;
    return 0;
}

void dcpi__parts_resolved(daemon_t *d, pid_t pid, uint64_t ip, uint64_t t, const dcpi_image_t *img,
                          uint32_t *off)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (d->part[i] && table[i]->resolved)
            table[i]->resolved(d, d->part[i], pid, ip, t, img, off);
}

void dcpi__parts_tick(daemon_t *d)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->tick && dcpi__part(d, table[i]))
            table[i]->tick(d, d->part[i]);
}

void dcpi__parts_epoch(daemon_t *d)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->epoch && dcpi__part(d, table[i]))
            table[i]->epoch(d, d->part[i]);
}

void dcpi__parts_written(daemon_t *d, uint32_t image, const char *path, const char *dirname)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->written && dcpi__part(d, table[i]))
            table[i]->written(d, d->part[i], image, path, dirname);
}

void dcpi__parts_flush(daemon_t *d)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->flush && dcpi__part(d, table[i]))
            table[i]->flush(d, d->part[i]);
}

void dcpi__parts_child(daemon_t *d)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->child && d->part[i])
            table[i]->child(d, d->part[i]);
}

int dcpi__parts_control(daemon_t *d, const char *cmd, dcpi__answer_t *a)
{
    for (int i = 0; i < DCPI__NPARTS; i++)
        if (table[i]->control && dcpi__part(d, table[i]) &&
            table[i]->control(d, d->part[i], cmd, a))
            return 1;
    return 0;
}

void dcpi__parts_exit(daemon_t *d)
{
    for (int i = 0; i < DCPI__NPARTS; i++) {
        if (d->part[i] && table[i]->exit)
            table[i]->exit(d, d->part[i]);
        free(d->part[i]);
        d->part[i] = NULL;
    }
}
