/*
 * keys.c - per-key tables of a plugin specification (see keys.h).
 */
#include "core/values/keys.h"

#include <stdlib.h>

#include "dcpi/errno.h"

int dcpi_values_key_tables(const trace_vlist_table_t *spec, size_t nkeys, int8_t **nval,
                           uint8_t (**kinds)[TRACE_VLIST_MAX])
{
    *nval = malloc(nkeys);
    *kinds = calloc(nkeys, sizeof **kinds);
    if (!*nval || !*kinds)
        return DCPI_ENOMEM;
    for (trace_opc_t k = 0; k < nkeys; k++) {
        trace_value_t v[TRACE_VLIST_MAX];
        int n = trace_vlist_table_get(spec, k, v);
        (*nval)[k] = (int8_t)(n < 0 ? -1 : n);
        for (int i = 0; i < n; i++)
            (*kinds)[k][i] = (uint8_t)v[i];
    }
    return 0;
}
