/*
 * pprof.c - a pprof profile under construction: an interned string table, mappings, functions,
 * locations (one line each) and samples in growing arrays; at encode time they become the
 * protobuf-c message structures (pointers into those arrays), are packed and gzip-compressed
 * with zlib. Decoding (for checks) inflates and unpacks.
 */
#include "core/formats/pprof.h"

#include <stdlib.h>
#include <string.h>

#include "profile.pb-c.h"

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/hash.h"
#include "core/base/mem.h"
#include "core/store/header.h"
#include "dcpi/errno.h"

typedef Perftools__Profiles__Profile pb_profile_t;
typedef Perftools__Profiles__ValueType pb_vtype_t;
typedef Perftools__Profiles__Sample pb_sample_t;
typedef Perftools__Profiles__Label pb_label_t;
typedef Perftools__Profiles__Mapping pb_mapping_t;
typedef Perftools__Profiles__Location pb_location_t;
typedef Perftools__Profiles__Line pb_line_t;
typedef Perftools__Profiles__Function pb_function_t;

typedef struct sample {
    size_t loc0, nloc, val0, lab0, nlab;
} sample_t;

/* A growing array: v holds n of cap elements of size sz. */
typedef struct vec {
    void *v;
    size_t n, cap;
} vec_t;

struct dcpi_pprof {
    vec_t strs;      /* char * */
    uint32_t *slots; /* string hash: index + 1 */
    size_t nslots;
    vec_t types;          /* pb_vtype_t */
    vec_t maps, funcs;    /* pb_mapping_t, pb_function_t */
    vec_t locs, lines;    /* pb_location_t, pb_line_t (one per location; function_id 0: none) */
    vec_t samples;        /* sample_t */
    vec_t locids, values; /* uint64_t, int64_t */
    vec_t labels;         /* pb_label_t */
    pb_vtype_t period_type;
    int has_period;
    int64_t period, default_type, time_nanos;
    vec_t comments; /* int64_t */
};

static int vec_push(vec_t *a, size_t sz, const void *elem)
{
    if (dcpi__grow(&a->v, &a->cap, a->n + 1, sz) < 0)
        return DCPI_ENOMEM;
    memcpy((char *)a->v + a->n++ * sz, elem, sz);
    return 0;
}

#define AT(vec, type, i) (((type *)(vec).v)[i])

int dcpi_pprof_new(dcpi_pprof_t **out)
{
    if (!out)
        return DCPI_EINVAL;
    dcpi_pprof_t *p = calloc(1, sizeof(*p));
    *out = NULL;
    if (!p)
        return DCPI_ENOMEM;
    if (dcpi_pprof_string(p, "") != 0) {
        dcpi_pprof_free(p);
        return DCPI_ENOMEM;
    }
    *out = p;
    return 0;
}

void dcpi_pprof_free(dcpi_pprof_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->strs.n; i++)
        free(AT(p->strs, char *, i));
    vec_t *all[] = {&p->strs,    &p->types,  &p->maps,   &p->funcs,  &p->locs,    &p->lines,
                    &p->samples, &p->locids, &p->values, &p->labels, &p->comments};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        free(all[i]->v);
    free(p->slots);
    free(p);
}

/* ---- strings ---- */

static uint64_t hash_str(const char *s)
{
    return dcpi__fnv1a(DCPI_FNV64_OFFSET, s, strlen(s));
}

static int rehash(dcpi_pprof_t *p)
{
    size_t ns = p->nslots ? 2 * p->nslots : 1024;
    uint32_t *slots = calloc(ns, sizeof(*slots));
    if (!slots)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < p->strs.n; i++) {
        size_t s = hash_str(AT(p->strs, char *, i)) & (ns - 1);
        while (slots[s])
            s = (s + 1) & (ns - 1);
        slots[s] = (uint32_t)(i + 1);
    }
    free(p->slots);
    p->slots = slots;
    p->nslots = ns;
    return 0;
}

int64_t dcpi_pprof_string(dcpi_pprof_t *p, const char *s)
{
    if (!s)
        s = "";
    if (2 * (p->strs.n + 1) > p->nslots && rehash(p) < 0)
        return DCPI_ENOMEM;
    size_t mask = p->nslots - 1, at = hash_str(s) & mask;
    for (; p->slots[at]; at = (at + 1) & mask)
        if (!strcmp(AT(p->strs, char *, p->slots[at] - 1), s))
            return p->slots[at] - 1;
    char *copy = strdup(s);
    if (!copy || vec_push(&p->strs, sizeof(copy), &copy) < 0) {
        free(copy);
        return DCPI_ENOMEM;
    }
    p->slots[at] = (uint32_t)p->strs.n;
    return (int64_t)p->strs.n - 1;
}

/* ---- building ---- */

static int vtype(dcpi_pprof_t *p, const char *type, const char *unit, pb_vtype_t *out)
{
    pb_vtype_t v = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    v.type = dcpi_pprof_string(p, type);
    v.unit = dcpi_pprof_string(p, unit);
    if (v.type < 0 || v.unit < 0)
        return DCPI_ENOMEM;
    *out = v;
    return 0;
}

int dcpi_pprof_sample_type(dcpi_pprof_t *p, const char *type, const char *unit)
{
    pb_vtype_t v;
    if (p->samples.n)
        return DCPI_EINVAL;
    int rc = vtype(p, type, unit, &v);
    rc = rc ? rc : vec_push(&p->types, sizeof(v), &v);
    return rc ? rc : (int)p->types.n - 1;
}

int dcpi_pprof_period(dcpi_pprof_t *p, const char *type, const char *unit, int64_t period)
{
    int rc = vtype(p, type, unit, &p->period_type);
    p->has_period = rc == 0;
    p->period = period;
    return rc;
}

int dcpi_pprof_default_type(dcpi_pprof_t *p, const char *type)
{
    int64_t s = dcpi_pprof_string(p, type);
    p->default_type = s > 0 ? s : 0;
    return s < 0 ? (int)s : 0;
}

void dcpi_pprof_time(dcpi_pprof_t *p, int64_t time_nanos)
{
    p->time_nanos = time_nanos;
}

int dcpi_pprof_comment(dcpi_pprof_t *p, const char *text)
{
    int64_t s = dcpi_pprof_string(p, text);
    return s < 0 ? (int)s : vec_push(&p->comments, sizeof(s), &s);
}

int64_t dcpi_pprof_mapping(dcpi_pprof_t *p, uint64_t start, uint64_t limit, uint64_t file_offset,
                           const char *filename, const char *build_id, int has_lines)
{
    pb_mapping_t m = PERFTOOLS__PROFILES__MAPPING__INIT;
    m.id = p->maps.n + 1;
    m.memory_start = start;
    m.memory_limit = limit;
    m.file_offset = file_offset;
    m.filename = dcpi_pprof_string(p, filename);
    m.build_id = dcpi_pprof_string(p, build_id);
    m.has_functions = m.has_filenames = 1;
    m.has_line_numbers = has_lines != 0;
    if (m.filename < 0 || m.build_id < 0 || vec_push(&p->maps, sizeof(m), &m) < 0)
        return DCPI_ENOMEM;
    return (int64_t)m.id;
}

int64_t dcpi_pprof_function(dcpi_pprof_t *p, const char *name, const char *system_name,
                            const char *filename, int64_t start_line)
{
    pb_function_t f = PERFTOOLS__PROFILES__FUNCTION__INIT;
    f.id = p->funcs.n + 1;
    f.name = dcpi_pprof_string(p, name);
    f.system_name = dcpi_pprof_string(p, system_name ? system_name : name);
    f.filename = dcpi_pprof_string(p, filename);
    f.start_line = start_line;
    if (f.name < 0 || f.system_name < 0 || f.filename < 0 || vec_push(&p->funcs, sizeof(f), &f) < 0)
        return DCPI_ENOMEM;
    return (int64_t)f.id;
}

int64_t dcpi_pprof_location(dcpi_pprof_t *p, uint64_t mapping_id, uint64_t address,
                            uint64_t function_id, int64_t line)
{
    if (mapping_id > p->maps.n || function_id > p->funcs.n)
        return DCPI_EINVAL;
    pb_location_t l = PERFTOOLS__PROFILES__LOCATION__INIT;
    pb_line_t ln = PERFTOOLS__PROFILES__LINE__INIT;
    l.id = p->locs.n + 1;
    l.mapping_id = mapping_id;
    l.address = address;
    ln.function_id = function_id;
    ln.line = line;
    if (vec_push(&p->lines, sizeof(ln), &ln) < 0)
        return DCPI_ENOMEM;
    if (vec_push(&p->locs, sizeof(l), &l) < 0) {
        p->lines.n--;
        return DCPI_ENOMEM;
    }
    return (int64_t)l.id;
}

static int push_labels(dcpi_pprof_t *p, const dcpi_pprof_label_t *labels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        pb_label_t l = PERFTOOLS__PROFILES__LABEL__INIT;
        l.key = dcpi_pprof_string(p, labels[i].key);
        if (labels[i].str)
            l.str = dcpi_pprof_string(p, labels[i].str);
        else
            l.num = labels[i].num;
        if (l.key < 0 || l.str < 0 || vec_push(&p->labels, sizeof(l), &l) < 0)
            return DCPI_ENOMEM;
    }
    return 0;
}

int dcpi_pprof_sample(dcpi_pprof_t *p, const uint64_t *locs, size_t nlocs, const int64_t *values,
                      const dcpi_pprof_label_t *labels, size_t nlabels)
{
    for (size_t i = 0; i < nlocs; i++)
        if (locs[i] == 0 || locs[i] > p->locs.n)
            return DCPI_EINVAL;
    sample_t s = {p->locids.n, nlocs, p->values.n, p->labels.n, nlabels};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < nlocs; i++)
        rc = vec_push(&p->locids, sizeof(*locs), &locs[i]);
    for (size_t i = 0; rc == 0 && i < p->types.n; i++)
        rc = vec_push(&p->values, sizeof(*values), &values[i]);
    rc = rc ? rc : push_labels(p, labels, nlabels);
    rc = rc ? rc : vec_push(&p->samples, sizeof(s), &s);
    if (rc < 0) {
        p->locids.n = s.loc0;
        p->values.n = s.val0;
        p->labels.n = s.lab0;
    }
    return rc;
}

/* ---- encoding ---- */

/* The message's pointer arrays, pointing into p (valid while p is not modified). */
typedef struct ptrs {
    pb_vtype_t **types;
    pb_sample_t *samples, **psamples;
    pb_label_t **plabels;
    pb_mapping_t **maps;
    pb_location_t **locs;
    pb_line_t **lines;
    pb_function_t **funcs;
} ptrs_t;

static void ptrs_free(ptrs_t *q)
{
    free(q->types);
    free(q->samples);
    free(q->psamples);
    free(q->plabels);
    free(q->maps);
    free(q->locs);
    free(q->lines);
    free(q->funcs);
}

static void *ptr_array(vec_t *v, size_t sz)
{
    void **a = malloc((v->n ? v->n : 1) * sizeof(*a));
    for (size_t i = 0; a && i < v->n; i++)
        a[i] = (char *)v->v + i * sz;
    return a;
}

static int build_samples(dcpi_pprof_t *p, ptrs_t *q)
{
    q->samples = calloc(p->samples.n ? p->samples.n : 1, sizeof(*q->samples));
    q->psamples = malloc((p->samples.n ? p->samples.n : 1) * sizeof(*q->psamples));
    q->plabels = ptr_array(&p->labels, sizeof(pb_label_t));
    if (!q->samples || !q->psamples || !q->plabels)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < p->samples.n; i++) {
        const sample_t *s = &AT(p->samples, sample_t, i);
        pb_sample_t m = PERFTOOLS__PROFILES__SAMPLE__INIT;
        m.n_location_id = s->nloc;
        m.location_id = &AT(p->locids, uint64_t, s->loc0);
        m.n_value = p->types.n;
        m.value = &AT(p->values, int64_t, s->val0);
        m.n_label = s->nlab;
        m.label = q->plabels + s->lab0;
        q->samples[i] = m;
        q->psamples[i] = &q->samples[i];
    }
    return 0;
}

static int build(dcpi_pprof_t *p, pb_profile_t *m, ptrs_t *q)
{
    q->types = ptr_array(&p->types, sizeof(pb_vtype_t));
    q->maps = ptr_array(&p->maps, sizeof(pb_mapping_t));
    q->locs = ptr_array(&p->locs, sizeof(pb_location_t));
    q->lines = ptr_array(&p->lines, sizeof(pb_line_t));
    q->funcs = ptr_array(&p->funcs, sizeof(pb_function_t));
    if (!q->types || !q->maps || !q->locs || !q->lines || !q->funcs || build_samples(p, q) < 0)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < p->locs.n; i++) {
        pb_location_t *l = &AT(p->locs, pb_location_t, i);
        l->n_line = AT(p->lines, pb_line_t, i).function_id ? 1 : 0;
        l->line = &q->lines[i];
    }
    *m = (pb_profile_t)PERFTOOLS__PROFILES__PROFILE__INIT;
    m->n_sample_type = p->types.n;
    m->sample_type = q->types;
    m->n_sample = p->samples.n;
    m->sample = q->psamples;
    m->n_mapping = p->maps.n;
    m->mapping = q->maps;
    m->n_location = p->locs.n;
    m->location = q->locs;
    m->n_function = p->funcs.n;
    m->function = q->funcs;
    m->n_string_table = p->strs.n;
    m->string_table = p->strs.v;
    m->period_type = p->has_period ? &p->period_type : NULL;
    m->period = p->period;
    m->time_nanos = p->time_nanos;
    m->n_comment = p->comments.n;
    m->comment = p->comments.v;
    m->default_sample_type = p->default_type;
    return 0;
}

int dcpi_pprof_encode(const dcpi_pprof_t *cp, void **buf, size_t *len)
{
    if (!cp || !buf || !len)
        return DCPI_EINVAL;
    dcpi_pprof_t *p = (dcpi_pprof_t *)cp; /* build() only sets the locations' line pointers */
    pb_profile_t m;
    ptrs_t q = {0};
    uint8_t *raw = NULL;
    int rc = build(p, &m, &q);
    if (rc == 0) {
        size_t n = perftools__profiles__profile__get_packed_size(&m);
        raw = malloc(n ? n : 1);
        rc = raw ? 0 : DCPI_ENOMEM;
        if (rc == 0)
            rc = dcpi__gzip(raw, perftools__profiles__profile__pack(&m, raw), buf, len);
    }
    free(raw);
    ptrs_free(&q);
    return rc;
}

int dcpi_pprof_write(const char *path, const dcpi_pprof_t *p, char *err)
{
    void *buf = NULL;
    size_t len = 0;
    int rc = dcpi_pprof_encode(p, &buf, &len);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", path, dcpi_strerror(rc));
    rc = dcpi__write_output(path, buf, len, err);
    free(buf);
    return rc;
}

/* ---- decoding ---- */

int dcpi_pprof_decode(const void *buf, size_t len, const char *name, ProtobufCMessage **out,
                      char *err)
{
    void *raw = NULL;
    size_t n = 0;
    int rc = dcpi__gunzip(buf, len, &raw, &n, NULL);
    if (rc < 0)
        return dcpi__errf(err, rc == DCPI_ENOMEM ? rc : DCPI_EFORMAT, "%s: not a gzip stream",
                          name);
    *out = protobuf_c_message_unpack(&perftools__profiles__profile__descriptor, NULL, n, raw);
    free(raw);
    if (!*out)
        return dcpi__errf(err, DCPI_EFORMAT, "%s: not a profile.proto message", name);
    return 0;
}
