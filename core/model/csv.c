/*
 * csv.c - one CSV field, quoted when it must be (see csv.h).
 */
#include "core/model/csv.h"

#include <string.h>

void dcpi_csv_field(const char *s, FILE *f)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (const char *c = s; *c; c++) {
        if (*c == '"')
            fputc('"', f);
        fputc(*c, f);
    }
    fputc('"', f);
}
