/*
 * vploader.c - the value-profiler plugin loader: -vtrace name resolution, dlopen, the checks of
 * the _dispatch table and of the profile name, load/unload hooks, and the per-program set.
 *
 * Every refusal writes one line "PATH: reason" and undoes what was done so far, in reverse
 * order (the plugin's vp_load is the last step, so a refused plugin has never run any hook).
 */
#include "core/plugin/vploader.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/base/err.h"
#include "core/base/fsutil.h"
#include "core/plugin/declare.h"
#include "dcpi/errno.h"

#define INSECURE_HINT "(use -vtrace-insecure to override)"

struct dcpi_vp {
    char *path;
    char *name;
    void *handle;        /* a .so's */
    dcpi_decl_t *decl;   /* a declarative plugin's (core/plugin/declare.h) */
    vp_dispatch_t table; /* private copy, zero past the plugin's struct_size */
};

struct dcpi_vp_set {
    dcpi_vp_t **vps;
    unsigned n;
    unsigned cap;
    int allow_insecure; /* 1: no root ownership check (-vtrace-insecure) */
};

static const char *const reserved_names[] = {"values", "values.replay", "values.trace"};

/* Directories set by dcpi_vp_set_search_dirs: NULL-terminated, malloc'd. */
static char **search_dirs;

/* ---- search directories and name resolution ---- */

static void free_dirs(char **dirs)
{
    for (size_t i = 0; dirs && dirs[i]; i++)
        free(dirs[i]);
    free(dirs);
}

int dcpi_vp_set_search_dirs(const char *const *dirs)
{
    size_t n = 0;
    while (dirs && dirs[n])
        n++;
    char **copy = NULL;
    if (n) {
        copy = calloc(n + 1, sizeof(*copy));
        if (!copy)
            return DCPI_ENOMEM;
        for (size_t i = 0; i < n; i++) {
            copy[i] = strdup(dirs[i]);
            if (!copy[i]) {
                free_dirs(copy);
                return DCPI_ENOMEM;
            }
        }
    }
    free_dirs(search_dirs);
    search_dirs = copy;
    return 0;
}

/* The folder of path (no trailing slash) into out; 0, or -1 when it has none or is too long. */
static int dir_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash || (size_t)(slash - path) >= len)
        return -1;
    memcpy(out, path, (size_t)(slash - path));
    out[slash - path] = '\0';
    return 0;
}

const char *const *dcpi_vp_program_dirs(const char *build_plugins, const char *rel,
                                        const char *installed)
{
    static char exe[4096], bin[4096], bdir[4096], own[4096 + 256];
    static const char *dirs[3];
    size_t n = 0;
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        if (dir_of(exe, bin, sizeof bin) == 0) {
            if (dir_of(build_plugins, bdir, sizeof bdir) == 0 && strcmp(bdir, bin) == 0)
                dirs[n++] = build_plugins; /* run from the build tree */
            else if (snprintf(own, sizeof own, "%s/%s", bin, rel) < (int)sizeof own)
                dirs[n++] = own;
        }
    }
    if (n == 0 || strcmp(dirs[0], installed) != 0)
        dirs[n++] = installed;
    dirs[n] = NULL;
    return dirs;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t ls = strlen(s), lx = strlen(suffix);
    return ls >= lx && strcmp(s + ls - lx, suffix) == 0;
}

/* Look for name in dir: NAME.so, NAME.vp (a declarative plugin), then NAME (only NAME when it
 * already ends in .so or .vp). */
static int try_dir(const char *dir, const char *name, char *path, size_t len)
{
    const char *suffixes[3] = {".so", ".vp", ""};
    int first = ends_with(name, ".so") || ends_with(name, ".vp") ? 2 : 0;
    for (int i = first; i < 3; i++) {
        int w = snprintf(path, len, "%s/%s%s", dir, name, suffixes[i]);
        if (w < 0 || (size_t)w >= len)
            return DCPI_ERANGE;
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
    }
    return DCPI_ENOENT;
}

/* Append ", dir" (or "dir" first) to the list of searched directories (truncated quietly:
 * the list only feeds an error message). */
static void note_searched(char *searched, size_t size, const char *dir)
{
    size_t used = strlen(searched);
    if (used < size)
        snprintf(searched + used, size - used, "%s%s", used ? ", " : "", dir);
}

static int try_env_dirs(const char *name, char *path, size_t len, char *searched, size_t size)
{
    const char *env = getenv(DCPI_VP_PATH_ENV);
    if (!env || !*env)
        return DCPI_ENOENT;
    char *copy = strdup(env);
    if (!copy)
        return DCPI_ENOMEM;
    int rc = DCPI_ENOENT;
    char *rest = copy, *dir;
    while (rc == DCPI_ENOENT && (dir = strsep(&rest, ":")) != NULL) {
        if (!*dir)
            continue;
        rc = try_dir(dir, name, path, len);
        note_searched(searched, size, dir);
    }
    free(copy);
    return rc;
}

static int resolve_short(const char *name, char *path, size_t len, char *searched, size_t size)
{
    int rc = try_env_dirs(name, path, len, searched, size);
    for (size_t i = 0; rc == DCPI_ENOENT && search_dirs && search_dirs[i]; i++) {
        rc = try_dir(search_dirs[i], name, path, len);
        note_searched(searched, size, search_dirs[i]);
    }
    if (rc == DCPI_ENOENT) {
        rc = try_dir(".", name, path, len);
        note_searched(searched, size, ".");
    }
    return rc;
}

int dcpi_vp_resolve_err(const char *name, char *path, size_t len, char *err)
{
    if (!name || !*name || !path || !len) {
        return dcpi__errf(err, DCPI_EINVAL, "vtrace: empty plugin name");
    }
    if (strchr(name, '/')) {
        if (strlen(name) >= len) {
            return dcpi__errf(err, DCPI_ERANGE, "%s: path too long", name);
        }
        strcpy(path, name);
        return 0;
    }
    char searched[DCPI_ERRLEN] = "";
    int rc = resolve_short(name, path, len, searched, sizeof(searched));
    if (rc == DCPI_ENOENT)
        return dcpi__errf(err, rc, "%s: plugin not found (searched: %s)", name, searched);
    if (rc == DCPI_ERANGE)
        return dcpi__errf(err, rc, "%s: plugin path too long", name);
    if (rc < 0)
        return dcpi__errf(err, rc, "%s: %s", name, dcpi_strerror(rc));
    return rc;
}

int dcpi_vp_resolve(const char *name, char *path, size_t len)
{
    return dcpi_vp_resolve_err(name, path, len, NULL);
}

/* ---- ownership check (root only) ---- */

/* One component: owned by root; unless it is a symlink, not writable by group/others. A
 * root-owned sticky directory such as /tmp is accepted although everyone may write it: the
 * sticky bit stops others from renaming or removing entries they do not own, and the next
 * component down must itself be root-owned. */
static int check_node(const char *plugin, const char *node, int follow, char *err)
{
    struct stat st;
    if ((follow ? stat(node, &st) : lstat(node, &st)) != 0) {
        int e = errno;
        return dcpi__errf(err, -e, "%s: refusing plugin: %s: %s", plugin, node, strerror(e));
    }
    if (st.st_uid != 0) {
        return dcpi__errf(err, DCPI_EPERM,
                          "%s: refusing plugin: %s is owned by uid %u, not root " INSECURE_HINT,
                          plugin, node, (unsigned)st.st_uid);
    }
    int sticky_dir = S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX);
    if (!S_ISLNK(st.st_mode) && !sticky_dir && (st.st_mode & (S_IWGRP | S_IWOTH))) {
        return dcpi__errf(err, DCPI_EPERM,
                          "%s: refusing plugin: %s is writable by group/others " INSECURE_HINT,
                          plugin, node);
    }
    return 0;
}

/* "/", then every prefix of the absolute path abs, then abs itself, top down. */
static int check_prefixes(const char *plugin, const char *abs, int follow, char *err)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", abs) >= (int)sizeof(buf)) {
        return dcpi__errf(err, DCPI_ERANGE, "%s: refusing plugin: path too long", plugin);
    }
    int rc = check_node(plugin, "/", follow, err);
    for (char *p = buf + 1; rc == 0 && (p = strchr(p, '/')) != NULL; p++) {
        *p = '\0';
        rc = check_node(plugin, buf, follow, err);
        *p = '/';
    }
    return rc == 0 ? check_node(plugin, abs, follow, err) : rc;
}

/* path as an absolute path (relative ones are taken from the current directory). */
static int absolute(const char *path, char *abs, size_t len)
{
    char cwd[PATH_MAX];
    if (path[0] == '/')
        return snprintf(abs, len, "%s", path) < (int)len ? 0 : DCPI_ERANGE;
    if (!getcwd(cwd, sizeof(cwd)))
        return -errno;
    return snprintf(abs, len, "%s/%s", strcmp(cwd, "/") ? cwd : "", path) < (int)len ? 0
                                                                                     : DCPI_ERANGE;
}

int dcpi_vp_check_secure(const char *path, char *err)
{
    char abs[PATH_MAX], real[PATH_MAX];
    if (!path) {
        return dcpi__errf(err, DCPI_EINVAL, "vtrace: no plugin given");
    }
    int rc = absolute(path, abs, sizeof(abs));
    if (rc < 0) {
        return dcpi__errf(err, rc, "%s: refusing plugin: %s", path, dcpi_strerror(rc));
    }
    /* The path as given, symlinks not followed (each link must be root's), ... */
    if ((rc = check_prefixes(path, abs, 0, err)) < 0)
        return rc;
    /* ... and the file it names in the end, with every real directory above it. */
    if (!realpath(abs, real)) {
        rc = -errno;
        return dcpi__errf(err, rc, "%s: refusing plugin: %s", path, strerror(-rc));
    }
    return strcmp(real, abs) ? check_prefixes(path, real, 1, err) : 0;
}

/* ---- one plugin ---- */

static void vp_free(dcpi_vp_t *vp)
{
    if (!vp)
        return;
    free(vp->name);
    free(vp->path);
    free(vp);
}

static int open_object(const dcpi_vp_set_t *set, dcpi_vp_t *vp, char *err)
{
    struct stat st;
    if (stat(vp->path, &st) != 0) {
        int e = errno;
        return dcpi__errf(err, -e, "%s: %s", vp->path, strerror(e));
    }
    if (geteuid() == 0 && !set->allow_insecure) {
        int rc = dcpi_vp_check_secure(vp->path, err);
        if (rc < 0)
            return rc;
    }
    vp->handle = dlopen(vp->path, RTLD_NOW | RTLD_LOCAL);
    if (!vp->handle) {
        const char *msg = dlerror();
        size_t lp = strlen(vp->path);
        if (msg && strncmp(msg, vp->path, lp) == 0 && msg[lp] == ':')
            return dcpi__errf(err, DCPI_EPLUGIN, "%s", msg); /* dlerror already names the path */
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: %s", vp->path, msg ? msg : "dlopen failed");
    }
    return 0;
}

static int check_required(const dcpi_vp_t *vp, char *err)
{
    const char *missing = NULL;
    if (!vp->table.vp_name)
        missing = "vp_name";
    else if (!vp->table.vp_prof_init)
        missing = "vp_prof_init";
    else if (!vp->table.vp_prof_process)
        missing = "vp_prof_process";
    if (!missing)
        return 0;
    return dcpi__errf(err, DCPI_EPLUGIN, "%s: _dispatch has no %s", vp->path, missing);
}

/* Find _dispatch, check its header before reading any pointer, copy the known part. */
static int fetch_table(dcpi_vp_t *vp, char *err)
{
    dlerror();
    const vp_dispatch_t *d = dlsym(vp->handle, "_dispatch");
    if (!d)
        return dcpi__errf(err, DCPI_EPLUGIN,
                          "%s: no _dispatch symbol (is it exported? build with VP_EXPORT / "
                          "default visibility)",
                          vp->path);
    if (d->abi_version < 1 || d->abi_version > VP_ABI_LATEST) {
        return dcpi__errf(err, DCPI_EVERSION, "%s: plugin ABI version %u, this dcpi knows 1 to %d",
                          vp->path, d->abi_version, VP_ABI_LATEST);
    }
    size_t need = d->abi_version >= 2 ? DCPI_VP_ABI2_SIZE : DCPI_VP_ABI1_SIZE;
    if (d->struct_size < need) {
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: _dispatch is %u bytes, ABI %u needs at least %zu",
                          vp->path, d->struct_size, d->abi_version, need);
    }
    size_t n = d->struct_size < sizeof(vp->table) ? d->struct_size : sizeof(vp->table);
    memset(&vp->table, 0, sizeof(vp->table));
    memcpy(&vp->table, d, n);
    return check_required(vp, err);
}

static int is_reserved(const char *name)
{
    for (size_t i = 0; i < sizeof(reserved_names) / sizeof(reserved_names[0]); i++) {
        if (strcmp(name, reserved_names[i]) == 0)
            return 1;
    }
    return 0;
}

static const char *name_problem(const char *name)
{
    if (!name)
        return "vp_name returned NULL";
    if (!*name)
        return "empty";
    if (strlen(name) > DCPI_VP_NAME_MAX)
        return "longer than 255 bytes";
    if (strchr(name, '/'))
        return "contains '/'";
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return "is a directory name";
    if (is_reserved(name))
        return "reserved";
    return NULL;
}

static int check_name(dcpi_vp_set_t *set, dcpi_vp_t *vp, char *err)
{
    const char *name = vp->table.vp_name();
    const char *problem = name_problem(name);
    if (problem) {
        return dcpi__errf(err, DCPI_EPLUGIN, "%s: invalid profile name '%s' (%s)", vp->path,
                          name ? name : "(null)", problem);
    }
    const dcpi_vp_t *other = dcpi_vp_find(set, name);
    if (other) {
        return dcpi__errf(err, DCPI_EEXIST, "%s: profile name '%s' already loaded from %s",
                          vp->path, name, other->path);
    }
    vp->name = strdup(name);
    return vp->name ? 0 : DCPI_ENOMEM;
}

static int call_load_hook(dcpi_vp_t *vp, char *err)
{
    if (!vp->table.vp_load)
        return 0;
    int rc = vp->table.vp_load();
    if (rc == 0)
        return 0;
    return dcpi__errf(err, DCPI_EPLUGIN, "%s: vp_load failed (returned %d)", vp->path, rc);
}

static int set_grow(dcpi_vp_set_t *set)
{
    if (set->n < set->cap)
        return 0;
    if (set->cap > UINT_MAX / 2)
        return DCPI_ENOMEM;
    unsigned cap = set->cap ? set->cap * 2 : 4;
    dcpi_vp_t **vps = reallocarray(set->vps, cap, sizeof(*vps));
    if (!vps)
        return DCPI_ENOMEM;
    set->vps = vps;
    set->cap = cap;
    return 0;
}

/* Everything after dlopen (or after a declarative plugin was built, table set); on failure the
 * caller dlcloses / frees it. */
static int check_and_load(dcpi_vp_set_t *set, dcpi_vp_t *vp, char *err)
{
    int rc = vp->decl ? check_required(vp, err) : fetch_table(vp, err);
    if (rc == 0)
        rc = check_name(set, vp, err);
    if (rc == 0)
        rc = set_grow(set); /* before the hook: nothing can fail after vp_load succeeded */
    if (rc == DCPI_ENOMEM)
        dcpi__errf(err, rc, "%s: %s", vp->path, dcpi_strerror(rc));
    if (rc == 0)
        rc = call_load_hook(vp, err);
    return rc;
}

static void vp_release(dcpi_vp_t *vp)
{
    if (vp->handle)
        dlclose(vp->handle);
    dcpi_decl_free(vp->decl);
    vp_free(vp);
}

/* A declarative plugin (core/plugin/declare.h): inline text, or a .vp file (as root: owned by
 * root and not writable by others, as a .so). */
static int load_decl(dcpi_vp_set_t *set, const char *arg, int inline_spec, dcpi_vp_t **out,
                     char *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = 0;
    if (!inline_spec) {
        if (geteuid() == 0 && !set->allow_insecure && (rc = dcpi_vp_check_secure(arg, err)) < 0)
            return rc;
        if ((rc = dcpi__read_file(arg, 0, (void **)&text, &len, err)) < 0)
            return rc;
    }
    dcpi_vp_t *vp = calloc(1, sizeof(*vp));
    const vp_dispatch_t *table = NULL;
    if (!vp || !(vp->path = strdup(inline_spec ? "vtrace spec" : arg)))
        rc = dcpi__errf(err, DCPI_ENOMEM, "%s: %s", arg, dcpi_strerror(DCPI_ENOMEM));
    if (rc == 0)
        rc = dcpi_decl_new(inline_spec ? arg : text, vp->path, &vp->decl, &table, err);
    free(text);
    if (rc == 0) {
        vp->table = *table;
        rc = check_and_load(set, vp, err);
    }
    if (rc < 0) {
        if (vp)
            vp_release(vp);
        return rc;
    }
    set->vps[set->n++] = vp;
    if (out)
        *out = vp;
    return 0;
}

int dcpi_vp_load(dcpi_vp_set_t *set, const char *path_or_name, dcpi_vp_t **out, char *err)
{
    if (!set || !path_or_name) {
        return dcpi__errf(err, DCPI_EINVAL, "vtrace: no plugin given");
    }
    if (strstr(path_or_name, "name=")) /* an inline specification */
        return load_decl(set, path_or_name, 1, out, err);
    char path[4096];
    int rc = dcpi_vp_resolve_err(path_or_name, path, sizeof(path), err);
    if (rc < 0)
        return rc;
    if (ends_with(path, ".vp"))
        return load_decl(set, path, 0, out, err);
    dcpi_vp_t *vp = calloc(1, sizeof(*vp));
    if (!vp || !(vp->path = strdup(path))) {
        rc = dcpi__errf(err, DCPI_ENOMEM, "%s: %s", path, dcpi_strerror(DCPI_ENOMEM));
        goto out_vp;
    }
    rc = open_object(set, vp, err);
    if (rc < 0)
        goto out_vp;
    rc = check_and_load(set, vp, err);
    if (rc < 0)
        goto out_handle;
    set->vps[set->n++] = vp;
    if (out)
        *out = vp;
    return 0;

out_handle:
    dlclose(vp->handle);
out_vp:
    vp_free(vp);
    return rc;
}

/* ---- the set ---- */

int dcpi_vp_set_new(dcpi_vp_set_t **out)
{
    if (!out)
        return DCPI_EINVAL;
    *out = calloc(1, sizeof(**out));
    return *out ? 0 : DCPI_ENOMEM;
}

void dcpi_vp_set_allow_insecure(dcpi_vp_set_t *set, int allow)
{
    if (set)
        set->allow_insecure = allow != 0;
}

void dcpi_vp_set_free(dcpi_vp_set_t *set)
{
    if (!set)
        return;
    for (unsigned i = set->n; i-- > 0;) {
        dcpi_vp_t *vp = set->vps[i];
        if (vp->table.vp_unload)
            vp->table.vp_unload();
        vp_release(vp);
    }
    free(set->vps);
    free(set);
}

const char *dcpi_vp_name(const dcpi_vp_t *vp)
{
    return vp ? vp->name : NULL;
}

const char *dcpi_vp_path(const dcpi_vp_t *vp)
{
    return vp ? vp->path : NULL;
}

const char *dcpi_vp_init_why(const dcpi_vp_t *vp)
{
    return vp ? dcpi_decl_why(vp->decl) : NULL;
}

const vp_dispatch_t *dcpi_vp_dispatch(const dcpi_vp_t *vp)
{
    return vp ? &vp->table : NULL;
}

unsigned dcpi_vp_count(const dcpi_vp_set_t *set)
{
    return set ? set->n : 0;
}

dcpi_vp_t *dcpi_vp_get(const dcpi_vp_set_t *set, unsigned i)
{
    return set && i < set->n ? set->vps[i] : NULL;
}

dcpi_vp_t *dcpi_vp_find(const dcpi_vp_set_t *set, const char *name)
{
    for (unsigned i = 0; set && name && i < set->n; i++) {
        if (strcmp(set->vps[i]->name, name) == 0)
            return set->vps[i];
    }
    return NULL;
}
