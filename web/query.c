/*
 * query.c - a request's query string into dcpiweb's selection (parts.h): every parameter is
 * known and given once, every value has its parameter's form (names of epochs, platforms and
 * events are short tokens without '/', so none can name a path; process and procedure names
 * are text without control characters; numbers are whole numbers in range). Anything else is
 * a bad request.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/err.h"
#include "dcpi/errno.h"
#include "web/parts.h"

enum form { TOKEN, SET, TEXT, VIEW, PID, FLAG, ROWS };

typedef struct param {
    const char *key;
    size_t off; /* of its field in dcpi__web_sel_t */
    enum form form;
} param_t;

#define AT(f) offsetof(dcpi__web_sel_t, f)
static const param_t params[] = {
    {"view", AT(view), VIEW},    {"epoch", AT(epoch), TOKEN},
    {"diff", AT(diff), SET},     {"platform", AT(platform), TOKEN},
    {"event", AT(event), TOKEN}, {"since", AT(since), TOKEN},
    {"until", AT(until), TOKEN}, {"hosts", AT(hosts), TEXT},
    {"comm", AT(comm), TEXT},    {"pid", AT(pid), PID},
    {"proc", AT(proc), TEXT},    {"image", AT(image), TEXT},
    {"i", AT(by_image), FLAG},   {"procs", AT(by_process), FLAG},
    {"rows", AT(rows), ROWS},    {"vtrace", AT(vtrace), TOKEN},
};

static const char *const views[] = {"procs", "images", "flame", "calls",
                                    "list",  "diff",   "live",  NULL};

/* Letters, digits and "._:+-@", not starting with '.': an epoch ("latest-1", "A..B", "all"),
 * a platform, an event, a time ("2026-01-31T12:00", "24h", "@1700000000"). */
static int is_token_of(const char *v, const char *also)
{
    if (!*v || v[0] == '.' || strlen(v) > 128)
        return 0;
    for (const char *p = v; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(also, *p))
            return 0;
    return 1;
}

static int is_token(const char *v)
{
    return is_token_of(v, "._:+-@");
}

/* The diff's second selection: an epoch, or on the fleet dcpidiff -fleet's SET
 * "[HOSTS][@SINCE[..UNTIL]]" (hosts comma-separated). */
static int is_set(const char *v)
{
    return is_token_of(v, "._:+-@,");
}

/* Any text without control characters (names from profiles: C++ templates, quotes, '<'). */
static int is_text(const char *v)
{
    if (!*v || strlen(v) > DCPI_WEB_VALUE_MAX)
        return 0;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int whole(const char *v, long lo, long hi, long *out)
{
    char *end = NULL;
    if (!isdigit((unsigned char)v[0]) || strlen(v) > 10)
        return 0;
    long n = strtol(v, &end, 10);
    if (*end || n < lo || n > hi)
        return 0;
    *out = n;
    return 1;
}

static int is_view(const char *v)
{
    for (int i = 0; views[i]; i++)
        if (!strcmp(v, views[i]))
            return 1;
    return 0;
}

static const char *const wants[] = {
    [TOKEN] = "letters, digits and ._:+-@ (not starting with '.')",
    [SET] = "letters, digits and ._:+-@, (not starting with '.')",
    [TEXT] = "text without control characters, at most 1024 bytes",
    [VIEW] = "one of procs, images, flame, calls, list, diff, live",
    [PID] = "a process id from 0 to 4194304",
    [FLAG] = "0 or 1",
    [ROWS] = "a whole number from 1 to 200",
};

/* Store v into its field: 1, or 0 when v is not of the form. */
static int store(dcpi__web_sel_t *s, const param_t *p, const char *v)
{
    char *at = (char *)s + p->off;
    long n = 0;
    switch (p->form) {
    case TOKEN:
    case SET:
    case TEXT:
    case VIEW:
        if (!(p->form == TOKEN  ? is_token(v)
              : p->form == SET  ? is_set(v)
              : p->form == TEXT ? is_text(v)
                                : is_view(v)))
            return 0;
        *(const char **)(void *)at = v;
        return 1;
    case PID:
        return whole(v, 0, 4194304, (long *)(void *)at);
    case FLAG:
        if (!whole(v, 0, 1, &n))
            return 0;
        *(int *)(void *)at = (int)n;
        return 1;
    case ROWS:
        if (!whole(v, 1, 200, &n))
            return 0;
        *(unsigned *)(void *)at = (unsigned)n;
        return 1;
    }
    return 0;
}

/* 1 when p's field was set before (s starts as {.pid = -1}, everything else 0). */
static int given(const dcpi__web_sel_t *s, const param_t *p)
{
    const char *at = (const char *)s + p->off;
    switch (p->form) {
    case PID:
        return *(const long *)(const void *)at >= 0;
    case FLAG:
        return *(const int *)(const void *)at != 0;
    case ROWS:
        return *(const unsigned *)(const void *)at != 0;
    default:
        return *(const char *const *)(const void *)at != NULL;
    }
}

int dcpi__web_param(dcpi__web_sel_t *s, const char *key, const char *value, char *err)
{
    char safe[80];
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        const param_t *p = &params[i];
        if (strcmp(key, p->key) != 0)
            continue;
        if (given(s, p))
            return dcpi__errf(err, DCPI_EINVAL, "parameter '%s' given twice", key);
        if (!value || !store(s, p, value))
            return dcpi__errf(err, DCPI_EINVAL, "parameter '%s' wants %s", key, wants[p->form]);
        return 0;
    }
    snprintf(safe, sizeof safe, "%s", key);
    return dcpi__errf(err, DCPI_EINVAL, "unknown parameter '%s'", safe);
}
