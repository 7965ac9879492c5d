/*
 * keys.h - a plugin specification (trace_vlist_table_t) as the per-key tables the value pipeline
 * and replay look up for every entry: nval[key] (the vlist's length, -1 when the key is not
 * traced) and kinds[key][i] (its value kinds), so no table lookup runs per sample.
 */
#ifndef DCPI_CORE_VALUES_KEYS_H
#define DCPI_CORE_VALUES_KEYS_H

#include <stddef.h>
#include <stdint.h>

#include "dcpi/trace-vlist.h"

/* Build both tables for keys 0..nkeys-1 of spec (malloc'd; the caller frees both, also after a
 * failure). 0 or DCPI_ENOMEM. */
int dcpi_values_key_tables(const trace_vlist_table_t *spec, size_t nkeys, int8_t **nval,
                           uint8_t (**kinds)[TRACE_VLIST_MAX]);

#endif
