/*
 * csv.h - one CSV field as the analysis tools' -csl output writes it (RFC 4180): as is, or in
 * double quotes with inner quotes doubled when it holds a comma, a quote or a newline.
 */
#ifndef DCPI_CORE_MODEL_CSV_H
#define DCPI_CORE_MODEL_CSV_H

#include <stdio.h>

void dcpi_csv_field(const char *s, FILE *f);

#endif
