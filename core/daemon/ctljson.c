/*
 * ctljson.c - dcpictl status -json: the daemon's status answer as one JSON object (schema
 * dcpictl-status/1, docs/dcpictl.md): the lines with one value (epoch, platform, pid, uptime,
 * images, processes, unknown, rate) as fields, and every line as the daemon said it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "core/base/json.h"
#include "core/base/mem.h"
#include "core/daemon/control.h"
#include "dcpi/errno.h"

typedef struct lines {
    char **v;
    size_t n, cap;
    int nomem;
} lines_t;

static void keep_line(void *arg, const char *text)
{
    lines_t *l = arg;
    char *copy = strdup(text);
    if (!copy || dcpi__grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v)) < 0) {
        free(copy);
        l->nomem = 1;
        return;
    }
    l->v[l->n++] = copy;
}

/* The value of line "KEY VALUE[ UNIT]" when UNIT is unit (NULL: none): 1 and *out. */
static int number_of(const char *line, const char *key, const char *unit, uint64_t *out)
{
    size_t k = strlen(key);
    if (strncmp(line, key, k) || line[k] != ' ')
        return 0;
    char *end = NULL;
    unsigned long long v = strtoull(line + k + 1, &end, 10);
    if (end == line + k + 1 || (unit ? (*end != ' ' || strcmp(end + 1, unit)) : *end != '\0'))
        return 0;
    *out = v;
    return 1;
}

static void print_fields(const lines_t *l, FILE *out)
{
    static const struct {
        const char *key, *unit, *json;
    } nums[] = {{"pid", NULL, "pid"},         {"uptime", "s", "uptime_s"},
                {"images", NULL, "images"},   {"processes", NULL, "processes"},
                {"unknown", NULL, "unknown"}, {"rate", "samples/s", "rate_per_s"}};
    for (size_t i = 0; i < l->n; i++) {
        const char *s = l->v[i];
        uint64_t v;
        if (!strncmp(s, "epoch ", 6) || !strncmp(s, "platform ", 9)) {
            size_t k = strcspn(s, " ");
            fprintf(out, ",\"%.*s\":", (int)k, s);
            dcpi__json_str(out, s + k + 1);
            continue;
        }
        for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++)
            if (number_of(s, nums[k].key, nums[k].unit, &v))
                fprintf(out, ",\"%s\":%" PRIu64, nums[k].json, v);
    }
}

int dcpi_control_status_json(const char *db, const char *platform, FILE *out, char *err)
{
    lines_t l = {0};
    int rc = dcpi_control_request(db, platform, "status", keep_line, &l, err);
    if (rc == 0 && l.nomem)
        rc = dcpi__errf(err, DCPI_ENOMEM, "%s: out of memory", db);
    if (rc == 0) {
        fputs("{\"schema\":\"dcpictl-status/1\"", out);
        print_fields(&l, out);
        fputs(",\"lines\":[", out);
        for (size_t i = 0; i < l.n; i++) {
            if (i)
                fputc(',', out);
            dcpi__json_str(out, l.v[i]);
        }
        fputs("]}\n", out);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.v[i]);
    free(l.v);
    return rc;
}
