/*
 * report-int.h - what the files of dcpireport's page share (report.h): the JSON parts each
 * writes and the HTML around them.
 */
#ifndef DCPI_CORE_ANALYSIS_REPORT_INT_H
#define DCPI_CORE_ANALYSIS_REPORT_INT_H

#include <stdio.h>

#include "core/analysis/procs.h"
#include "core/analysis/report.h"

/* `"flame":{...}` (or `"flame":null` with `"flame_none":"why"`): the stack profile of event
 * sort as a tree of frames. 0 or a negative DCPI_E* with err. */
int dcpi__report_flame(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o, int sort,
                       char *err);
/* `"listings":[...]`: the top o->top procedures of t. 0 or a negative DCPI_E* with err. */
int dcpi__report_listings(FILE *f, const dcpi_profset_t *set, const dcpi_report_opts_t *o,
                          const dcpi_procs_table_t *t, char *err);
/* The page up to the opening of the JSON block, and from its end. */
void dcpi__report_page_head(FILE *f, const dcpi_report_opts_t *o);
void dcpi__report_page_tail(FILE *f);
/* Write the array [a0,a1,...] of n numbers. */
void dcpi__report_json_u64s(FILE *f, const uint64_t *a, size_t n);

#endif
