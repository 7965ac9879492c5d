/*
 * proctab.c - processes and their command names by small ids, see proctab.h. Entries live in
 * one array (id = index + 1; a freed entry is reused, so ids never move); an open-addressing
 * hash from pid to the pid's current entry (linear probing, backward-shift deletion) finds them.
 */
#include "core/sampling/proctab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/mem.h"
#include "dcpi/errno.h"

typedef struct entry {
    pid_t pid;
    uint8_t alive; /* the pid's current entry, not exited */
    uint8_t inuse; /* 0: free (on the free list) */
    uint32_t died; /* the generation in which it stopped being alive */
    uint32_t next; /* free list: the next free index + 1 (0: none) */
    char comm[DCPI_COMMLEN];
} entry_t;

struct dcpi_proctab {
    entry_t *e;
    size_t n, cap;
    uint32_t *slots; /* id of the pid's current entry, 0: empty */
    size_t nslots, used;
    uint32_t free; /* first free index + 1 (0: none) */
    uint32_t gen;  /* dcpi_proctab_mark */
    size_t inuse;  /* entries in use */
    uint64_t failed;
};

int dcpi_proctab_new(dcpi_proctab_t **out)
{
    dcpi_proctab_t *pt = calloc(1, sizeof *pt);
    if (!pt)
        return DCPI_ENOMEM;
    pt->nslots = 1024;
    pt->slots = calloc(pt->nslots, sizeof *pt->slots);
    if (!pt->slots) {
        free(pt);
        return DCPI_ENOMEM;
    }
    *out = pt;
    return 0;
}

void dcpi_proctab_free(dcpi_proctab_t *pt)
{
    if (!pt)
        return;
    free(pt->slots);
    free(pt->e);
    free(pt);
}

static size_t slot_of(const dcpi_proctab_t *pt, pid_t pid)
{
    size_t mask = pt->nslots - 1, i = ((uint32_t)pid * 2654435761u) & mask;
    while (pt->slots[i] && pt->e[pt->slots[i] - 1].pid != pid)
        i = (i + 1) & mask;
    return i;
}

static int rehash(dcpi_proctab_t *pt, size_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return DCPI_ENOMEM;
    free(pt->slots);
    pt->slots = slots;
    pt->nslots = nslots;
    pt->used = 0;
    for (size_t k = 0; k < pt->n; k++) {
        if (!pt->e[k].alive)
            continue;
        pt->slots[slot_of(pt, pt->e[k].pid)] = (uint32_t)(k + 1);
        pt->used++;
    }
    return 0;
}

static void retire(dcpi_proctab_t *pt, entry_t *e)
{
    e->alive = 0;
    e->died = pt->gen;
}

/* A free entry's index: the free list's first, else a new one at the end (-1: no memory). */
static long take_entry(dcpi_proctab_t *pt)
{
    if (pt->free) {
        uint32_t k = pt->free - 1;
        pt->free = pt->e[k].next;
        return k;
    }
    if (pt->n >= UINT32_MAX - 1 || dcpi__grow((void **)&pt->e, &pt->cap, pt->n + 1, sizeof *pt->e))
        return -1;
    return (long)pt->n++;
}

/* A new current entry for pid named comm (the old one, if any, stays for its counts). */
static uint32_t add(dcpi_proctab_t *pt, pid_t pid, const char *comm)
{
    if ((pt->used + 1) * 2 > pt->nslots && rehash(pt, pt->nslots * 2) < 0)
        goto fail;
    long k = take_entry(pt);
    if (k < 0)
        goto fail;
    size_t i = slot_of(pt, pid);
    if (pt->slots[i])
        retire(pt, &pt->e[pt->slots[i] - 1]);
    else
        pt->used++;
    entry_t *e = &pt->e[k];
    *e = (entry_t){.pid = pid, .alive = 1, .inuse = 1};
    snprintf(e->comm, sizeof e->comm, "%s", comm);
    pt->inuse++;
    pt->slots[i] = (uint32_t)k + 1;
    return (uint32_t)k + 1;
fail:
    pt->failed++;
    return 0;
}

static void read_comm(pid_t pid, char comm[DCPI_COMMLEN])
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    FILE *f = fopen(path, "re");
    strcpy(comm, "?");
    if (!f)
        return;
    if (fgets(comm, DCPI_COMMLEN, f))
        comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
}

uint32_t dcpi_proctab_id(dcpi_proctab_t *pt, pid_t pid)
{
    if (pid <= 0)
        return 0;
    size_t i = slot_of(pt, pid);
    if (pt->slots[i])
        return pt->slots[i];
    char comm[DCPI_COMMLEN];
    read_comm(pid, comm);
    return add(pt, pid, comm);
}

void dcpi_proctab_comm(dcpi_proctab_t *pt, pid_t pid, const char *comm)
{
    if (pid <= 0)
        return;
    size_t i = slot_of(pt, pid);
    if (pt->slots[i] && strncmp(pt->e[pt->slots[i] - 1].comm, comm, DCPI_COMMLEN - 1) == 0)
        return;
    (void)add(pt, pid, comm);
}

void dcpi_proctab_fork(dcpi_proctab_t *pt, pid_t ppid, pid_t pid)
{
    if (pid <= 0)
        return;
    uint32_t parent = dcpi_proctab_id(pt, ppid);
    char comm[DCPI_COMMLEN] = "?"; /* a copy: add() may move the entries */
    if (parent)
        memcpy(comm, pt->e[parent - 1].comm, sizeof comm);
    (void)add(pt, pid, comm);
}

void dcpi_proctab_exit(dcpi_proctab_t *pt, pid_t pid)
{
    if (pid <= 0)
        return;
    size_t i = slot_of(pt, pid);
    if (!pt->slots[i])
        return;
    retire(pt, &pt->e[pt->slots[i] - 1]);
    /* backward-shift deletion keeps every probe sequence unbroken */
    size_t mask = pt->nslots - 1, j = i;
    pt->slots[i] = 0;
    pt->used--;
    for (;;) {
        j = (j + 1) & mask;
        if (!pt->slots[j])
            return;
        size_t home = ((uint32_t)pt->e[pt->slots[j] - 1].pid * 2654435761u) & mask;
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            pt->slots[i] = pt->slots[j];
            pt->slots[j] = 0;
            i = j;
        }
    }
}

pid_t dcpi_proctab_pid(const dcpi_proctab_t *pt, uint32_t id)
{
    return id && id <= pt->n && pt->e[id - 1].inuse ? pt->e[id - 1].pid : 0;
}

const char *dcpi_proctab_name(const dcpi_proctab_t *pt, uint32_t id)
{
    return id && id <= pt->n && pt->e[id - 1].inuse ? pt->e[id - 1].comm : "swapper";
}

void dcpi_proctab_mark(dcpi_proctab_t *pt)
{
    pt->gen++;
}

/* Free the entries that died before the last mark; drop the free tail and rebuild the free
 * list (lowest index first). */
static void free_dead(dcpi_proctab_t *pt)
{
    for (size_t i = 0; i < pt->n; i++) {
        entry_t *e = &pt->e[i];
        if (e->inuse && !e->alive && e->died < pt->gen) {
            e->inuse = 0;
            pt->inuse--;
        }
    }
    while (pt->n && !pt->e[pt->n - 1].inuse)
        pt->n--;
    pt->free = 0;
    for (size_t i = pt->n; i-- > 0;)
        if (!pt->e[i].inuse) {
            pt->e[i].next = pt->free;
            pt->free = (uint32_t)i + 1;
        }
}

/* After a compaction: a quarter used or less gives memory back (halving, never below 64). */
static void shrink(dcpi_proctab_t *pt)
{
    size_t cap = pt->cap;
    while (cap > 64 && pt->n * 4 <= cap)
        cap /= 2;
    if (cap == pt->cap)
        return;
    entry_t *e = realloc(pt->e, cap * sizeof *e);
    if (e) {
        pt->e = e;
        pt->cap = cap;
    }
}

void dcpi_proctab_compact(dcpi_proctab_t *pt)
{
    free_dead(pt);
    shrink(pt);
    size_t nslots = pt->nslots;
    while (nslots > 1024 && pt->used * 8 <= nslots)
        nslots /= 2;
    if (nslots != pt->nslots && rehash(pt, nslots) < 0)
        return; /* (the old, larger hash stays) */
}

uint32_t dcpi_proctab_count(const dcpi_proctab_t *pt)
{
    return (uint32_t)pt->inuse + 1;
}

uint64_t dcpi_proctab_failed(const dcpi_proctab_t *pt)
{
    return pt->failed;
}
