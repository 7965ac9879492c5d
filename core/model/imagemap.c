/*
 * imagemap.c - map files (image id -> path) read and applied to a profile set (see
 * imagemap.h).
 */
#include "core/model/imagemap.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/image/image.h"
#include "dcpi/errno.h"

void dcpi_imagemap_free(dcpi_imagemap_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->v[i].id);
        free(m->v[i].path);
    }
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

static int add_entry(dcpi_imagemap_t *m, size_t *cap, const char *id, size_t idlen,
                     const char *path, size_t plen)
{
    if (dcpi__grow((void **)&m->v, cap, m->n + 1, sizeof(*m->v)) < 0)
        return DCPI_ENOMEM;
    char *i = strndup(id, idlen), *p = strndup(path, plen);
    if (!i || !p) {
        free(i);
        free(p);
        return DCPI_ENOMEM;
    }
    for (char *c = i; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    m->v[m->n++] = (dcpi_imagemap_entry_t){i, p};
    return 0;
}

/* One line [s, e) (without its '\n'): skipped, added, or an error for line number ln. */
static int parse_line(dcpi_imagemap_t *m, size_t *cap, const char *s, const char *e,
                      const char *name, size_t ln, char *err)
{
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    if (s == e || *s == '#')
        return 0;
    const char *id = s;
    while (s < e && isxdigit((unsigned char)*s))
        s++;
    size_t idlen = (size_t)(s - id);
    if (idlen == 0 || (s < e && *s != ' ' && *s != '\t'))
        return dcpi__errf(err, DCPI_EFORMAT, "%s:%zu: the image id must be hex digits", name, ln);
    if (idlen >= DCPI_IMAGE_IDLEN)
        return dcpi__errf(err, DCPI_EFORMAT, "%s:%zu: image id longer than %d hex digits", name, ln,
                          DCPI_IMAGE_IDLEN - 1);
    while (s < e && (*s == ' ' || *s == '\t'))
        s++;
    if (s == e)
        return dcpi__errf(err, DCPI_EFORMAT, "%s:%zu: no path after the image id", name, ln);
    char idbuf[DCPI_IMAGE_IDLEN];
    memcpy(idbuf, id, idlen);
    idbuf[idlen] = '\0';
    if (dcpi_imagemap_lookup(m, idbuf))
        return 0; /* the first line of an id wins */
    return add_entry(m, cap, id, idlen, s, (size_t)(e - s));
}

int dcpi_imagemap_parse(const char *buf, size_t len, const char *name, dcpi_imagemap_t *out,
                        char *err)
{
    *out = (dcpi_imagemap_t){0};
    if (memchr(buf, '\0', len))
        return dcpi__errf(err, DCPI_EFORMAT, "%s: holds a NUL byte (not a text map file)", name);
    size_t cap = 0, ln = 0;
    int rc = 0;
    for (const char *s = buf, *end = buf + len; s < end && rc == 0;) {
        const char *e = memchr(s, '\n', (size_t)(end - s));
        if (!e)
            e = end;
        rc = parse_line(out, &cap, s, e, name, ++ln, err);
        s = e + 1;
    }
    if (rc < 0)
        dcpi_imagemap_free(out);
    return rc;
}

int dcpi_imagemap_read(const char *path, dcpi_imagemap_t *out, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    *out = (dcpi_imagemap_t){0};
    int rc = dcpi__read_file(path, 0, &buf, &len, err);
    if (rc == 0)
        rc = dcpi_imagemap_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}

const char *dcpi_imagemap_lookup(const dcpi_imagemap_t *m, const char *id)
{
    for (size_t i = 0; m && i < m->n; i++)
        if (!strcasecmp(m->v[i].id, id))
            return m->v[i].path;
    return NULL;
}

/* 1 when the file at path is there and has image id id. */
static int file_has_id(const char *path, const char *id, char *found)
{
    dcpi_image_info_t info;
    memset(&info, 0, sizeof(info));
    int rc = dcpi_image_probe(path, &info, NULL);
    if (rc != 0 && rc != DCPI_EFULL && rc != DCPI_EFORMAT)
        return 0;
    if (found)
        snprintf(found, DCPI_IMAGE_IDLEN, "%s", info.id);
    return strcmp(info.id, id) == 0;
}

int dcpi_imagemap_apply(const dcpi_imagemap_t *m, dcpi_profset_t *set, const char *tool)
{
    int n = 0;
    for (size_t i = 0; i < set->nimages; i++) {
        dcpi_profset_image_t *img = &set->images[i];
        const char *to = img->kind == DCPI_PSET_FILE ? dcpi_imagemap_lookup(m, img->id) : NULL;
        if (!to || file_has_id(img->path, img->id, NULL))
            continue;
        char other[DCPI_IMAGE_IDLEN] = "";
        if (!file_has_id(to, img->id, other)) {
            fprintf(stderr, "%s: %s: image id %s in the map file, but the file has %s%s\n", tool,
                    to, img->id, other[0] ? "id " : "no id (unreadable)", other);
            continue;
        }
        char *p = strdup(to);
        if (!p)
            return DCPI_ENOMEM;
        free(img->path);
        img->path = p;
        n++;
    }
    return n;
}

int dcpi_imagemap_use(const char *path, dcpi_profset_t *set, const char *tool, char *err)
{
    dcpi_imagemap_t map;
    int rc = dcpi_imagemap_read(path, &map, err);
    if (rc == 0 && (rc = dcpi_imagemap_apply(&map, set, tool)) < 0)
        dcpi__errf(err, rc, "%s: out of memory", path);
    dcpi_imagemap_free(&map);
    return rc < 0 ? rc : 0;
}
