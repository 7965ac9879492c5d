/*
 * mem.c - dcpi__grow, the one growth of a malloc'd array (mem.h): capacity doubling with every
 * multiplication checked.
 */
#include "core/base/mem.h"

#include <stdint.h>
#include <stdlib.h>

#include "dcpi/errno.h"

#define GROW_MIN 16

int dcpi__grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : GROW_MIN;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return DCPI_ENOMEM;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem) /* checked here: sanitizers abort on reallocarray's own */
        return DCPI_ENOMEM;
    void *n = reallocarray(*p, c, elem);
    if (!n)
        return DCPI_ENOMEM;
    *p = n;
    *cap = c;
    return 0;
}
