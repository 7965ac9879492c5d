/*
 * reportjson.c - the text escapes of dcpireport's page: JSON strings safe inside a <script>
 * element (core/base/json.h), and HTML text (see report.h).
 */
#include "core/report/report.h"

#include "core/base/json.h"

#include <inttypes.h>
#include <stdint.h>

void dcpi_report_json_str(FILE *f, const char *str)
{
    dcpi__json_str(f, str);
}

void dcpi_report_html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

void dcpi__report_json_u64s(FILE *f, const uint64_t *a, size_t n)
{
    fputc('[', f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%" PRIu64, i ? "," : "", a[i]);
    fputc(']', f);
}
