/*
 * json.c - a string as a JSON string (json.h).
 */
#include "core/base/json.h"

#include <inttypes.h>

/* Length of the UTF-8 sequence at s (1..4), 0 when it is not one (overlong, surrogate, past
 * U+10FFFF, cut short); *cp gets its code point. */
static int utf8_seq(const unsigned char *s, uint32_t *cp)
{
    unsigned char c = s[0];
    int n = c < 0x80             ? 1
            : (c & 0xe0) == 0xc0 ? 2
            : (c & 0xf0) == 0xe0 ? 3
            : (c & 0xf8) == 0xf0 ? 4
                                 : 0;
    if (n == 0)
        return 0;
    uint32_t v = n == 1 ? c : (uint32_t)(c & (0x7f >> n));
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0; /* also stops at the NUL */
        v = (v << 6) | (s[i] & 0x3f);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
        return 0;
    *cp = v;
    return n;
}

void dcpi__json_str(FILE *f, const char *str)
{
    if (!str) {
        fputs("null", f);
        return;
    }
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    while (*s) {
        uint32_t cp = 0;
        int n = utf8_seq(s, &cp);
        if (n == 0) {
            fputs("\\ufffd", f);
            s++;
            continue;
        }
        if (cp == '"' || cp == '\\')
            fprintf(f, "\\%c", (int)cp);
        else if (cp < 0x20 || cp == '<' || cp == '>' || cp == '&' || cp == 0x2028 || cp == 0x2029)
            fprintf(f, "\\u%04" PRIx32, cp);
        else
            fwrite(s, 1, (size_t)n, f);
        s += n;
    }
    fputc('"', f);
}

void dcpi__json_key(FILE *f, int comma, const char *key)
{
    if (comma)
        fputc(',', f);
    dcpi__json_str(f, key);
    fputc(':', f);
}
