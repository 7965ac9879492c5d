/*
 * units.c - durations and sizes of command lines (see units.h).
 */
#include "core/base/units.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dcpi/errno.h"

/* The leading number of s (digits only) and where its unit starts. */
static int leading(const char *s, uint64_t *v, const char **unit)
{
    if (!s || !isdigit((unsigned char)s[0]))
        return DCPI_EINVAL;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || x == 0)
        return DCPI_EINVAL;
    *v = x;
    *unit = end;
    return 0;
}

static int scale(uint64_t v, uint64_t mul, uint64_t *out)
{
    if (v > UINT64_MAX / mul)
        return DCPI_EINVAL;
    *out = v * mul;
    return 0;
}

int dcpi__parse_duration(const char *s, int bare_ok, uint64_t *seconds)
{
    static const struct {
        const char *unit;
        uint64_t mul;
    } units[] = {{"s", 1}, {"m", 60}, {"h", 3600}, {"d", 86400}, {"w", 7 * 86400}};
    uint64_t v;
    const char *u;
    if (leading(s, &v, &u) < 0)
        return DCPI_EINVAL;
    if (!*u)
        return bare_ok ? scale(v, 1, seconds) : DCPI_EINVAL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].unit) == 0)
            return scale(v, units[i].mul, seconds);
    return DCPI_EINVAL;
}

int dcpi__parse_size(const char *s, uint64_t *bytes)
{
    static const char prefixes[] = "KMGT";
    uint64_t v;
    const char *u;
    if (leading(s, &v, &u) < 0)
        return DCPI_EINVAL;
    if (strcmp(u, "B") == 0)
        return scale(v, 1, bytes);
    const char *p = *u ? strchr(prefixes, toupper((unsigned char)*u)) : NULL;
    if (!p || (u[1] && strcmp(u + 1, "B") != 0 && strcmp(u + 1, "iB") != 0))
        return DCPI_EINVAL;
    return scale(v, 1ull << (10 * (p - prefixes + 1)), bytes);
}

void dcpi__format_size(uint64_t bytes, char *buf, unsigned len)
{
    static const char units[] = "KMGTP";
    if (bytes < 1024) {
        snprintf(buf, len, "%llu", (unsigned long long)bytes);
        return;
    }
    double v = (double)bytes / 1024;
    int i = 0;
    while (v >= 1024 && i < 4)
        v /= 1024, i++;
    snprintf(buf, len, "%.1f%c", v, units[i]);
}

double dcpi__monotonic_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
