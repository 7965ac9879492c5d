/*
 * vploader.h - the value-profiler plugin loader (docs/vprofiler.md, LOADER CHECKS).
 *
 * dcpid and dcpilist load the plugins named by -vtrace into one set per program. Loading a
 * plugin: dlopen(RTLD_NOW|RTLD_LOCAL), dlsym("_dispatch"), check the table (ABI version, size,
 * required entries), call vp_name and check the name (valid, not reserved, not already in the
 * set), then call the plugin's vp_load hook. Any refusal leaves nothing behind: the object is
 * dlclose'd, and err gets one line "PATH: reason". If vp_load itself fails, vp_unload is NOT
 * called (the plugin never finished loading), only dlclose.
 *
 * The loader keeps a private copy of the plugin's table, zero-filled past the plugin's
 * struct_size, so callers test optional entries for NULL and never read past the plugin's
 * table. vp_prof_init / vp_prof_done / vp_prof_process are the caller's business.
 *
 * Ownership check (as sudo and cron do): when the program runs as root (geteuid() == 0), a
 * plugin is refused unless the file and every directory above it (of the resolved path, and of
 * the path as given when a symlink is involved) is owned by root and not writable by group or
 * others: "PATH: refusing plugin: DIR is writable by group/others (use -vtrace-insecure to
 * override)" or "... DIR is owned by uid N, not root (...)". dcpi_vp_set_allow_insecure lifts
 * it (the tools' -vtrace-insecure flag). Not run for other users: they can only load code they
 * could run anyway.
 *
 * Not thread-safe: one thread loads and unloads.
 */
#ifndef DCPI_CORE_VPLOADER_H
#define DCPI_CORE_VPLOADER_H

#include <stddef.h>
#include "dcpi/vprofiler.h"

/* Size of the ABI-1 part of the table: a plugin's struct_size must be at least this. */
#define DCPI_VP_ABI1_SIZE (offsetof(vp_dispatch_t, vp_format) + sizeof(void *))
/* ... and of ABI 2 (vp_preface2, vp_format2 appended). */
#define DCPI_VP_ABI2_SIZE (offsetof(vp_dispatch_t, vp_format2) + sizeof(void *))
/* Longest profile name accepted (it names a directory of the profile database). */
#define DCPI_VP_NAME_MAX 255
/* Environment variable: colon-separated directories searched first for short names. */
#define DCPI_VP_PATH_ENV "DCPI_PLUGIN_PATH"

typedef struct dcpi_vp dcpi_vp_t;         /* one loaded plugin */
typedef struct dcpi_vp_set dcpi_vp_set_t; /* the plugins loaded by one program */

/* An empty set. Returns 0 or DCPI_ENOMEM. */
int dcpi_vp_set_new(dcpi_vp_set_t **out);
/* allow != 0: skip the root ownership check for the plugins loaded into set afterwards. */
void dcpi_vp_set_allow_insecure(dcpi_vp_set_t *set, int allow);
/* Unload every plugin of the set in reverse load order (vp_unload, then dlclose) and free it.
 * NULL is fine. */
void dcpi_vp_set_free(dcpi_vp_set_t *set);

/*
 * Load one plugin into set. path_or_name: a path if it contains '/', else a short name
 * resolved by dcpi_vp_resolve. On success *out (may be NULL) is the plugin, owned by the set.
 * Returns 0 or:
 *   DCPI_ENOENT   short name not found ("NAME: plugin not found (searched: a, b, c)") or no
 *                 file at the path; other -errno values when the file cannot be read;
 *   DCPI_EVERSION abi_version is not one this dcpi knows;
 *   DCPI_EEXIST   the profile name is already loaded in the set;
 *   DCPI_EPERM    running as root, the file or a directory above it is not root's alone;
 *   DCPI_EPLUGIN  every other refusal (dlopen failure, no _dispatch, short table, missing
 *                 required entry, invalid or reserved name, vp_load returned non-zero);
 *   DCPI_ENOMEM, DCPI_EINVAL.
 * err (DCPI_ERRLEN bytes, may be NULL) gets "PATH: reason".
 */
int dcpi_vp_load(dcpi_vp_set_t *set, const char *path_or_name, dcpi_vp_t **out, char *err);

/* The profile name (vp_name's answer, copied at load) and the path the plugin was loaded from
 * (as resolved). Valid while the set lives. */
const char *dcpi_vp_name(const dcpi_vp_t *vp);
const char *dcpi_vp_path(const dcpi_vp_t *vp);
/* The loader's private copy of the plugin's table (zero past the plugin's struct_size). */
const vp_dispatch_t *dcpi_vp_dispatch(const dcpi_vp_t *vp);
/* Why its vp_prof_init returned NULL, when the plugin can say (a declarative plugin); else
 * NULL. */
const char *dcpi_vp_init_why(const dcpi_vp_t *vp);

/* Number of plugins in the set and the i-th in load order (NULL when out of range). */
unsigned dcpi_vp_count(const dcpi_vp_set_t *set);
dcpi_vp_t *dcpi_vp_get(const dcpi_vp_set_t *set, unsigned i);
/* The plugin whose profile name is name, or NULL. */
dcpi_vp_t *dcpi_vp_find(const dcpi_vp_set_t *set, const char *name);

/*
 * The directories searched for short names after $DCPI_PLUGIN_PATH and before the current
 * directory: a NULL-terminated list, copied (NULL clears it). Tools pass DCPI_BUILD_PLUGIN_DIR
 * and DCPI_PLUGIN_DIR. Process-wide. Returns 0 or DCPI_ENOMEM (the old list is then kept).
 */
int dcpi_vp_set_search_dirs(const char *const *dirs);

/*
 * The plugin directories of the running program (a NULL-terminated list in static storage, for
 * dcpi_vp_set_search_dirs and the step agent's search): when the program runs from the build
 * tree (build_plugins is a folder beside its executable), {build_plugins, installed}; otherwise
 * {<executable's folder>/rel, installed}, rel being the plugin folder relative to the bin folder
 * (DCPI_PLUGIN_DIR_REL, e.g. "../lib/dcpi"), so that an installed copy that was moved finds its
 * own plugins, and never looks into a build tree. Without /proc/self/exe: {installed}.
 */
const char *const *dcpi_vp_program_dirs(const char *build_plugins, const char *rel,
                                        const char *installed);

/*
 * Resolve a -vtrace argument into path (len bytes). A value containing '/' is copied as is.
 * Otherwise NAME.so, NAME.vp (a declarative plugin, loaded as such) and NAME are looked for, in
 * that order (only NAME when it already ends in .so or .vp), in each directory of
 * $DCPI_PLUGIN_PATH, then the search dirs, then ".": the first regular file found wins. Returns 0,
 * DCPI_ENOENT (not found), DCPI_ERANGE (path too long for len), DCPI_EINVAL.
 */
int dcpi_vp_resolve(const char *name, char *path, size_t len);
/* As dcpi_vp_resolve, with err ("NAME: plugin not found (searched: a, b, c)"). */
int dcpi_vp_resolve_err(const char *name, char *path, size_t len, char *err);

/*
 * The ownership check by itself, whoever runs it: 0 when path (resolved with realpath) and
 * every directory above it are owned by root and not writable by group/others, and the same
 * for the directories of path as given; else DCPI_EPERM with err "PATH: refusing plugin: ...",
 * or -errno when a component cannot be examined.
 */
int dcpi_vp_check_secure(const char *path, char *err);

#endif
