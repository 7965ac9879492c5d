/*
 * listvals.c - dcpilist's value profiles: the -vtrace plugins loaded, the image's value
 * profiles of the epoch read and merged over the platforms, and their hotlists handed to the
 * listing (see listsel.h).
 */
#include "core/listing/listsel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/base/damage.h"
#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/base/mem.h"
#include "core/store/db.h"
#include "dcpi/errno.h"

/* Add name ("vp-classic") to the value profiles to show, once. */
static int add_vpname(dcpi_lstsel_t *s, const char *name)
{
    for (size_t v = 0; v < s->nvp; v++)
        if (!strcmp(s->vpnames[v], name))
            return 0;
    char **nv = reallocarray(s->vpnames, s->nvp + 1, sizeof(*nv));
    if (!nv)
        return DCPI_ENOMEM;
    s->vpnames = nv;
    if (!(s->vpnames[s->nvp] = strdup(name)))
        return DCPI_ENOMEM;
    s->nvp++;
    return 0;
}

static int load_plugins(dcpi_lstsel_t *s, const char *const *dirs, const char *const *names,
                        size_t n, int insecure, char *err)
{
    if (dcpi_vp_set_search_dirs(dirs) < 0 || dcpi_vp_set_new(&s->plugins) < 0)
        return DCPI_ENOMEM;
    dcpi_vp_set_allow_insecure(s->plugins, insecure);
    for (size_t i = 0; i < n; i++) {
        dcpi_vp_t *vp = NULL;
        int rc = dcpi_vp_load(s->plugins, names[i], &vp, err);
        if (rc < 0)
            return rc;
        if ((rc = add_vpname(s, dcpi_vp_name(vp))) < 0)
            return rc;
    }
    return 0;
}

/* 1 when the image directory name "<basename>_<id>" is this image's. */
static int dir_is_image(const dcpi_lstsel_t *s, const char *dir)
{
    size_t n = strlen(dir), k = strlen(s->info.id);
    return n > k && dir[n - k - 1] == '_' && !strcmp(dir + n - k, s->info.id);
}

/* Read and merge one .vprof file into s->vprofs[v] (the platforms' and epochs' files of one
 * profile add up: counts per value, vtot, seen, err and lost); a damaged one is named in a warning
 * and left out (*skipped counts it; core/base/damage.h), or with -strict is the error. */
static int merge_file(dcpi_lstsel_t *s, size_t v, const char *path, int *skipped, char *err)
{
    dcpi_vprof_t *vp = NULL;
    int rc = dcpi_vprof_read(path, &vp, err);
    if (rc < 0 && rc != DCPI_ENOMEM && dcpi__damage_skip(rc, "%s", err) == 0) {
        ++*skipped;
        return 0;
    }
    if (rc < 0)
        return rc;
    if (!s->vprofs[v]) {
        s->vprofs[v] = vp;
        return 0;
    }
    rc = dcpi_vprof_merge(s->vprofs[v], vp);
    if (rc < 0)
        dcpi__errf(err, rc, "%s: cannot merge with the other platforms' and epochs' profiles (%s)",
                   path, dcpi_strerror(rc));
    dcpi_vprof_free(vp);
    return rc;
}

/* 1 when f is value profile name of this image (its .vprof or, suffix ".vmiss", its marks). */
static int is_file_of(const dcpi_lstsel_t *s, const dcpi_db_file_t *f, const char *name,
                      const char *suffix)
{
    size_t len = strlen(f->file) - strlen(suffix);
    return dir_is_image(s, f->imagedir) && strlen(name) == len && !strncmp(f->file, name, len);
}

static int is_vprof_of(const dcpi_lstsel_t *s, const dcpi_db_file_t *f, const char *name)
{
    return is_file_of(s, f, name, ".vprof");
}

/* The names of the image's value profiles in files, "a, b" (or "none"), into out. */
static void existing_names(const dcpi_lstsel_t *s, const dcpi_db_file_t *files, size_t n, char *out,
                           size_t len)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n && used < len; i++) {
        if (!dir_is_image(s, files[i].imagedir))
            continue;
        int dup = 0; /* one file per platform: name each profile once */
        for (size_t j = 0; j < i && !dup; j++)
            dup = dir_is_image(s, files[j].imagedir) && !strcmp(files[j].file, files[i].file);
        if (dup)
            continue;
        size_t k = strlen(files[i].file) - strlen(".vprof");
        int w = snprintf(out + used, len - used, "%s%.*s", used ? ", " : "", (int)k, files[i].file);
        used += w > 0 ? (size_t)w : 0;
    }
    if (!out[0])
        snprintf(out, len, "none");
}

/* Append the missing-value marks at path (<name>.vmiss, written by dcpid's bp backend:
 * "0xOFFSET reason" lines; an unreadable file is no marks) to *text. */
static int read_vmiss(const char *path, char **text)
{
    void *buf = NULL;
    size_t len = 0, old = *text ? strlen(*text) : 0;
    if (dcpi__read_file(path, 1, &buf, &len, NULL) < 0)
        return 0;
    char *t = realloc(*text, old + len + 1);
    if (!t) {
        free(buf);
        return DCPI_ENOMEM;
    }
    memcpy(t + old, buf, len + 1);
    *text = t;
    free(buf);
    return 0;
}

static int read_vprofs(dcpi_lstsel_t *s, const dcpi_db_file_t *files, size_t n,
                       const dcpi_db_file_t *mfiles, size_t mn, char *err)
{
    s->vprofs = calloc(s->nvp + 1, sizeof(*s->vprofs));
    s->vmiss = calloc(s->nvp + 1, sizeof(*s->vmiss));
    if (!s->vprofs || !s->vmiss)
        return DCPI_ENOMEM;
    for (size_t v = 0; v < s->nvp; v++) {
        int skipped = 0;
        for (size_t i = 0; i < n; i++) {
            if (!is_vprof_of(s, &files[i], s->vpnames[v]))
                continue;
            int rc = merge_file(s, v, files[i].path, &skipped, err);
            if (rc < 0)
                return rc;
        }
        for (size_t i = 0; i < mn; i++)
            if (is_file_of(s, &mfiles[i], s->vpnames[v], ".vmiss") &&
                read_vmiss(mfiles[i].path, &s->vmiss[v]) < 0)
                return DCPI_ENOMEM;
        if (!s->vprofs[v] && !s->vmiss[v] &&
            !skipped) { /* a name that matches nothing: say what there is */
            char names[512];
            existing_names(s, files, n, names, sizeof names);
            return dcpi__errf(err, DCPI_ENOENT,
                              "no value profile '%s' of %s in epoch %s (value profiles there: %s)",
                              s->vpnames[v], s->path, s->epoch, names);
        }
    }
    return 0;
}

/* Every value profile of the image in the epoch, when no plugin named them. */
static int name_vprofs(dcpi_lstsel_t *s, dcpi_db_file_t *files, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (dir_is_image(s, files[i].imagedir)) {
            files[i].file[strlen(files[i].file) - strlen(".vprof")] = '\0';
            rc = add_vpname(s, files[i].file);
            strcat(files[i].file, ".vprof");
        }
    }
    return rc;
}

/* A named plugin's oracle profile (dcpid -voracle: "NAME.oracle") is shown after it. */
static int name_oracles(dcpi_lstsel_t *s, const dcpi_db_file_t *files, size_t n)
{
    size_t nvp = s->nvp;
    for (size_t v = 0; v < nvp; v++) {
        char name[600];
        snprintf(name, sizeof name, "%s.oracle", s->vpnames[v]);
        for (size_t i = 0; i < n; i++)
            if (is_vprof_of(s, &files[i], name)) {
                int rc = add_vpname(s, name);
                if (rc < 0)
                    return rc;
                break;
            }
    }
    return 0;
}

static int find_vprofs(dcpi_lstsel_t *s, int named, char *err)
{
    dcpi_db_file_t *files = NULL, *mfiles = NULL;
    size_t n = 0, mn = 0;
    const char *const *ev = s->nepochs ? s->epochs : &s->epoch;
    size_t nev = s->nepochs ? s->nepochs : 1;
    int rc = dcpi_db_list_files_epochs(s->db, ev, nev, s->platform, ".vprof", &files, &n, err);
    if (rc == 0) /* the marks of selected instructions without values (dcpid's bp backend) */
        rc = dcpi_db_list_files_epochs(s->db, ev, nev, s->platform, ".vmiss", &mfiles, &mn, err);
    if (rc < 0) {
        free(files);
        return rc;
    }
    rc = named ? name_oracles(s, files, n) : name_vprofs(s, files, n);
    if (rc == 0 && s->nvp == 0)
        fprintf(stderr, "%s: no value profiles of %s in epoch %s\n", s->tool, s->path, s->epoch);
    if (rc == 0)
        rc = read_vprofs(s, files, n, mfiles, mn, err);
    free(files);
    free(mfiles);
    return rc;
}

int dcpi_lstsel_values(dcpi_lstsel_t *s, const char *const *dirs, const char *const *names,
                       size_t n, int insecure, char *err)
{
    err[0] = '\0';
    int rc = load_plugins(s, dirs, names, n, insecure, err);
    if (rc == 0)
        rc = find_vprofs(s, n > 0, err);
    return rc;
}

/* Take the given value profiles (names[i], vps[i]) for those to show, and their missing-value
 * marks (dcpi_vprof_marks); the others are freed. */
static int take_given(dcpi_lstsel_t *s, char **names, dcpi_vprof_t **vps, size_t n, int named,
                      char *err)
{
    int rc = 0;
    for (size_t i = 0; !named && rc == 0 && i < n; i++) /* as name_vprofs: a .vprof's (not marks
                                                           only) */
        if (!vps[i] || dcpi_vprof_count(vps[i]) || !dcpi_vprof_marks(vps[i]))
            rc = add_vpname(s, names[i]);
    if (rc == 0 && (!(s->vprofs = calloc(s->nvp + 1, sizeof(*s->vprofs))) ||
                    !(s->vmiss = calloc(s->nvp + 1, sizeof(*s->vmiss)))))
        rc = DCPI_ENOMEM;
    for (size_t v = 0; rc == 0 && v < s->nvp; v++) {
        int found = 0;
        for (size_t i = 0; i < n && !found; i++)
            if (vps[i] && !strcmp(names[i], s->vpnames[v])) {
                const char *marks = dcpi_vprof_marks(vps[i]);
                if (marks && !(s->vmiss[v] = strdup(marks)))
                    rc = DCPI_ENOMEM;
                if (dcpi_vprof_count(vps[i]) || !marks) { /* else marks only, as read_vprofs */
                    s->vprofs[v] = vps[i];
                    vps[i] = NULL;
                }
                found = 1;
            }
        if (rc == 0 && !found) {
            char there[512] = "";
            size_t used = 0;
            for (size_t i = 0; i < n && used < sizeof there; i++) {
                int w =
                    snprintf(there + used, sizeof there - used, "%s%s", used ? ", " : "", names[i]);
                used += w > 0 ? (size_t)w : 0;
            }
            rc = dcpi__errf(err, DCPI_ENOENT,
                            "no value profile '%s' of %s in epoch %s (value profiles there: %s)",
                            s->vpnames[v], s->path, s->epoch, there[0] ? there : "none");
        }
    }
    if (rc == 0 && s->nvp == 0)
        fprintf(stderr, "%s: no value profiles of %s in epoch %s\n", s->tool, s->path, s->epoch);
    for (size_t i = 0; i < n; i++)
        dcpi_vprof_free(vps[i]);
    return rc;
}

int dcpi_lstsel_values_given(dcpi_lstsel_t *s, const char *const *dirs, const char *const *names,
                             size_t n, int insecure, char **vpnames, dcpi_vprof_t **vps,
                             size_t nvps, char *err)
{
    err[0] = '\0';
    int rc = load_plugins(s, dirs, names, n, insecure, err);
    if (rc < 0) {
        for (size_t i = 0; i < nvps; i++)
            dcpi_vprof_free(vps[i]);
        return rc;
    }
    return take_given(s, vpnames, vps, nvps, n > 0, err);
}

/* vp_context_t.symbolize: "symbol+0xoff" of an ELF address of the listed image. */
static const char *symbolize(const vp_context_t *ctx, uint64_t vaddr)
{
    static char buf[512];
    const dcpi_lstsel_t *s = ctx ? ctx->dcpi_private : NULL;
    const dcpi_symbol_t *sym = s && s->st ? dcpi_symtab_lookup(s->st, vaddr) : NULL;
    if (!sym)
        return NULL;
    if (vaddr == sym->addr)
        snprintf(buf, sizeof buf, "%s", sym->name);
    else
        snprintf(buf, sizeof buf, "%s+0x%llx", sym->name, (unsigned long long)(vaddr - sym->addr));
    return buf;
}

/* One missing-value mark: an instruction's offset and the reason its .vmiss line gives. */
typedef struct mark {
    unsigned long long off;
    const char *why;
} mark_t;

static int cmp_mark(const void *pa, const void *pb)
{
    const mark_t *a = pa, *b = pb;
    if (a->off != b->off)
        return a->off < b->off ? -1 : 1;
    return strcmp(a->why, b->why);
}

/* The kind of a reason: its text before " (" ("no arm afforded"). */
static size_t kind_len(const char *why)
{
    const char *p = strstr(why, " (");
    return p ? (size_t)(p - why) : strlen(why);
}

/* The value text of the k marks of one instruction: one mark "missing: REASON"; several (the
 * marks of several platforms, epochs or fleet hosts) "missing: KIND xN, KIND xN", each kind of
 * reason with the number of marks giving it, the most frequent first, then by name: the same
 * text whatever order the marks came in. NULL on ENOMEM. */
static char *marks_text(const mark_t *m, size_t k)
{
    char *text = NULL;
    if (k == 1)
        return asprintf(&text, "missing: %s", m[0].why) < 0 ? NULL : text;
    struct kind {
        const char *name;
        size_t len, n;
    } *kinds = calloc(k, sizeof *kinds);
    size_t nk = 0, size = sizeof "missing: ";
    for (size_t i = 0; kinds && i < k; i++) {
        size_t len = kind_len(m[i].why), j = 0;
        while (j < nk && (kinds[j].len != len || strncmp(kinds[j].name, m[i].why, len) != 0))
            j++;
        if (j == nk) {
            kinds[nk++] = (struct kind){.name = m[i].why, .len = len};
            size += len + 32;
        }
        kinds[j].n++;
    }
    for (size_t i = 1; kinds && i < nk; i++) /* insertion sort: count desc, name asc */
        for (size_t j = i; j > 0; j--) {
            struct kind *a = &kinds[j - 1], *b = &kinds[j];
            int c = strncmp(a->name, b->name, a->len < b->len ? a->len : b->len);
            if (a->n > b->n || (a->n == b->n && (c < 0 || (c == 0 && a->len <= b->len))))
                break;
            struct kind t = *a;
            *a = *b;
            *b = t;
        }
    if (kinds && (text = malloc(size))) {
        size_t used = (size_t)snprintf(text, size, "missing: ");
        for (size_t i = 0; i < nk; i++)
            used += (size_t)snprintf(text + used, size - used, "%s%.*s x%zu", i ? ", " : "",
                                     (int)kinds[i].len, kinds[i].name, kinds[i].n);
    }
    free(kinds);
    return text;
}

/* The missing-value marks of value profile v: as the value text of each instruction of the
 * procedure that has no hotlist, "missing: REASON" (marks_text: several marks counted); values
 * win: a mark that a hotlist contradicts (from another platform, epoch, host or an earlier
 * flush) is not shown. */
static int attach_vmiss(dcpi_lstsel_t *s, size_t v, uint64_t tstart)
{
    mark_t *m = NULL;
    size_t n = 0, cap = 0;
    char *save = NULL;
    int rc = 0;
    for (char *l = s->vmiss && s->vmiss[v] ? strtok_r(s->vmiss[v], "\n", &save) : NULL;
         l && rc == 0; l = strtok_r(NULL, "\n", &save)) {
        char *end = NULL;
        unsigned long long off = strtoull(l, &end, 16);
        if (end == l || *end != ' ') /* an unreadable line is ignored */
            continue;
        if (dcpi__grow((void **)&m, &cap, n + 1, sizeof *m) < 0)
            rc = DCPI_ENOMEM;
        else
            m[n++] = (mark_t){.off = off, .why = end + 1};
    }
    if (n > 1)
        qsort(m, n, sizeof *m, cmp_mark);
    for (size_t i = 0, j; rc == 0 && i < n; i = j) {
        for (j = i + 1; j < n && m[j].off == m[i].off;)
            j++;
        dcpi_lst_insn_t *in = dcpi_listing_find(s->ls, tstart + m[i].off);
        if (!in || in->addr != tstart + m[i].off || in->vs[v] || (in->vtext && in->vtext[v]))
            continue;
        if (!in->vtext && !(in->vtext = calloc(s->ls->nvp + 1, sizeof(*in->vtext))))
            rc = DCPI_ENOMEM;
        else if (!(in->vtext[v] = marks_text(&m[i], j - i)))
            rc = DCPI_ENOMEM;
    }
    free(m);
    return rc;
}

/* Hand the hotlists of value profile v to the listing. */
static int attach_vprof(dcpi_lstsel_t *s, size_t v, char *err)
{
    dcpi_lst_vp_t *lv = &s->ls->vp[v];
    dcpi_vp_t *plugin = dcpi_vp_find(s->plugins, s->vpnames[v]);
    const char *dot = strrchr(s->vpnames[v], '.');
    if (!plugin && dot && !strcmp(dot, ".oracle")) { /* NAME.oracle: formatted by NAME */
        char name[600];
        snprintf(name, sizeof name, "%.*s", (int)(dot - s->vpnames[v]), s->vpnames[v]);
        plugin = dcpi_vp_find(s->plugins, name);
    }
    lv->name = s->vpnames[v];
    lv->d = plugin ? dcpi_vp_dispatch(plugin) : NULL;
    lv->plugin = plugin ? dcpi_vp_path(plugin) : NULL;
    lv->hotsize = DCPI_VSUMMARY_DEFAULT_CAP;
    const dcpi_vprof_t *vp = s->vprofs[v];
    if (!vp) /* marks only: no instruction had values */
        return attach_vmiss(s, v, s->info.tstart);
    lv->hotsize = dcpi_vprof_hotsize(vp);
    lv->backend = dcpi_vprof_get(vp, "backend");
    const char *ow = dcpi_vprof_get(vp, "oracle-all");
    if (ow) {
        const char *w = dcpi_vprof_get(vp, "oracle-windows"),
                   *x = dcpi_vprof_get(vp, "oracle-execs"), *q = dcpi_vprof_get(vp, "oracle-sumsq");
        lv->ow_set = 1;
        lv->ow_all = strcmp(ow, "1") == 0;
        lv->ow_windows = w ? strtoull(w, NULL, 10) : 0;
        lv->ow_execs = x ? strtoull(x, NULL, 10) : 0;
        lv->ow_sumsq = q ? strtoull(q, NULL, 10) : 0;
    }
    const char *ts = dcpi_vprof_get(vp, "tstart");
    char *end = NULL;
    uint64_t tstart = ts ? strtoull(ts, &end, 16) : 0;
    if (!ts || end == ts || *end) {
        return dcpi__errf(err, DCPI_EFORMAT, "value profile %s of %s: bad tstart '%s'", lv->name,
                          s->path, ts ? ts : "");
    }
    lv->tstart = tstart;
    lv->ctx = (vp_context_t){.size = sizeof(vp_context_t),
                             .image = s->path,
                             .build_id = s->info.id,
                             .epoch = s->epoch,
                             .backend = lv->backend ? lv->backend : "",
                             .symbolize = symbolize,
                             .dcpi_private = s};
    size_t n = dcpi_vprof_count(vp);
    for (size_t i = 0; i < n; i++) {
        uint32_t off = 0;
        const dcpi_vsummary_t *sum = NULL;
        dcpi_vprof_entry(vp, i, &off, &sum);
        dcpi_listing_set_values(s->ls, v, tstart + off, sum);
    }
    return attach_vmiss(s, v, tstart);
}

int dcpi_lstsel_attach_values(dcpi_lstsel_t *s, char *err)
{
    int rc = 0;
    for (size_t v = 0; v < s->nvp && rc == 0; v++)
        rc = attach_vprof(s, v, err);
    return rc;
}
