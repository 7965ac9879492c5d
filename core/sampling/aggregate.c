/*
 * aggregate.c - open-addressing (linear probing) hash table of sample counts, see
 * aggregate.h. Slots are 32 bytes; an empty slot has used == 0. Both arrays are anonymous
 * mappings: a reset hands their pages back (MADV_DONTNEED, zero on the next touch), so resident
 * memory follows the keys of one flush interval, not the capacity or the busiest interval ever.
 */
#include "core/sampling/aggregate.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "dcpi/errno.h"

typedef struct slot {
    uint32_t image;
    uint32_t offset;
    uint16_t event;
    uint16_t used;
    uint32_t proc;
    uint64_t count;
} slot_t;

struct dcpi_agg {
    slot_t *slots;
    size_t cap; /* power of two */
    size_t used;
    uint64_t total;
    dcpi_agg_entry_t *sorted; /* cap entries, for dcpi_agg_sort */
};

static uint64_t key_hash(uint32_t image, uint16_t event, uint32_t offset, uint32_t proc)
{
    uint64_t x =
        ((uint64_t)image << 32 | offset) ^ (((uint64_t)proc << 16 | event) * 0x9e3779b97f4a7c15ULL);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static size_t round_pow2(size_t n)
{
    size_t c = 16;
    while (c < n && c < ((size_t)1 << 40))
        c <<= 1;
    return c;
}

static void *map_zero(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void unmap(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes);
}

/* Zero a mapping and give its pages back (memset when that fails). */
static void drop_pages(void *p, size_t bytes)
{
    if (madvise(p, bytes, MADV_DONTNEED) < 0)
        memset(p, 0, bytes);
}

static int alloc_arrays(size_t cap, slot_t **slots, dcpi_agg_entry_t **sorted)
{
    if (cap > SIZE_MAX / sizeof **sorted)
        return DCPI_ENOMEM;
    *slots = map_zero(cap * sizeof **slots);
    *sorted = map_zero(cap * sizeof **sorted);
    if (*slots && *sorted)
        return 0;
    unmap(*slots, cap * sizeof **slots);
    unmap(*sorted, cap * sizeof **sorted);
    return DCPI_ENOMEM;
}

static void free_arrays(dcpi_agg_t *a)
{
    unmap(a->slots, a->cap * sizeof *a->slots);
    unmap(a->sorted, a->cap * sizeof *a->sorted);
}

int dcpi_agg_new(size_t entries, dcpi_agg_t **out)
{
    if (!out || entries == 0)
        return DCPI_EINVAL;
    dcpi_agg_t *a = calloc(1, sizeof *a);
    if (!a)
        return DCPI_ENOMEM;
    a->cap = round_pow2(entries);
    if (alloc_arrays(a->cap, &a->slots, &a->sorted) < 0) {
        free(a);
        return DCPI_ENOMEM;
    }
    *out = a;
    return 0;
}

void dcpi_agg_free(dcpi_agg_t *a)
{
    if (!a)
        return;
    free_arrays(a);
    free(a);
}

/* The slot holding key, or the empty slot where it would go. Requires one empty slot. */
static slot_t *find_slot(const dcpi_agg_t *a, uint32_t image, uint16_t event, uint32_t offset,
                         uint32_t proc)
{
    size_t mask = a->cap - 1;
    size_t i = (size_t)key_hash(image, event, offset, proc) & mask;
    for (;;) {
        slot_t *s = &a->slots[i];
        if (!s->used ||
            (s->image == image && s->offset == offset && s->event == event && s->proc == proc))
            return s;
        i = (i + 1) & mask;
    }
}

int dcpi_agg_add_proc(dcpi_agg_t *a, uint32_t image, uint16_t event, uint32_t offset, uint32_t proc,
                      uint64_t count)
{
    slot_t *s = find_slot(a, image, event, offset, proc);
    if (!s->used) {
        if (a->used + 1 >= a->cap)
            return DCPI_EFULL;
        s->used = 1;
        s->image = image;
        s->event = event;
        s->offset = offset;
        s->proc = proc;
        s->count = 0;
        a->used++;
    }
    s->count += count;
    a->total += count;
    return 0;
}

uint64_t dcpi_agg_get(const dcpi_agg_t *a, uint32_t image, uint16_t event, uint32_t offset)
{
    uint64_t n = 0; /* every process's count */
    for (size_t i = 0; i < a->cap; i++) {
        const slot_t *s = &a->slots[i];
        if (s->used && s->image == image && s->event == event && s->offset == offset)
            n += s->count;
    }
    return n;
}

size_t dcpi_agg_used(const dcpi_agg_t *a)
{
    return a->used;
}

size_t dcpi_agg_capacity(const dcpi_agg_t *a)
{
    return a->cap;
}

uint64_t dcpi_agg_total(const dcpi_agg_t *a)
{
    return a->total;
}

int dcpi_agg_needs_flush(const dcpi_agg_t *a)
{
    return a->used * 4 >= a->cap * 3;
}

static int entry_cmp(const void *x, const void *y)
{
    const dcpi_agg_entry_t *a = x, *b = y;
    if (a->image != b->image)
        return a->image < b->image ? -1 : 1;
    if (a->event != b->event)
        return a->event < b->event ? -1 : 1;
    if (a->offset != b->offset)
        return a->offset < b->offset ? -1 : 1;
    if (a->proc != b->proc)
        return a->proc < b->proc ? -1 : 1;
    return 0;
}

const dcpi_agg_entry_t *dcpi_agg_sort(dcpi_agg_t *a, size_t *n)
{
    size_t k = 0;
    for (size_t i = 0; i < a->cap; i++) {
        const slot_t *s = &a->slots[i];
        if (!s->used || s->count == 0)
            continue;
        a->sorted[k++] = (dcpi_agg_entry_t){.image = s->image,
                                            .event = s->event,
                                            .offset = s->offset,
                                            .proc = s->proc,
                                            .count = s->count,
                                            .slot = i};
    }
    qsort(a->sorted, k, sizeof *a->sorted, entry_cmp);
    *n = k;
    return a->sorted;
}

void dcpi_agg_clear(dcpi_agg_t *a, const dcpi_agg_entry_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        slot_t *s = &a->slots[e[i].slot];
        a->total -= s->count;
        s->count = 0;
    }
}

void dcpi_agg_reset(dcpi_agg_t *a)
{
    drop_pages(a->slots, a->cap * sizeof *a->slots);
    drop_pages(a->sorted, a->cap * sizeof *a->sorted);
    a->used = 0;
    a->total = 0;
}

int dcpi_agg_grow(dcpi_agg_t *a)
{
    slot_t *slots;
    dcpi_agg_entry_t *sorted;
    if (alloc_arrays(a->cap * 2, &slots, &sorted) < 0)
        return DCPI_ENOMEM;
    dcpi_agg_t b = {.slots = slots, .cap = a->cap * 2, .sorted = sorted};
    for (size_t i = 0; i < a->cap; i++) {
        const slot_t *s = &a->slots[i];
        if (s->used && s->count)
            dcpi_agg_add_proc(&b, s->image, s->event, s->offset, s->proc, s->count);
    }
    free_arrays(a);
    *a = b;
    return 0;
}
