/*
 * debuginfod.c - debug files by build-id from debuginfod servers (see debuginfod.h): elfutils'
 * libdebuginfod.so.1 is loaded optionally, with dlopen and two dlsym'd functions, the first
 * time a lookup is made with DEBUGINFOD_URLS set; one client serves the whole process, under a
 * mutex (a client is not to be used by two threads at once). Misses are not errors: the first
 * one of the process is logged, the others are not.
 */
#include "core/image/debuginfod.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/log.h"
#include "dcpi/errno.h"

#if __has_include(<elfutils/debuginfod.h>)
#include <elfutils/debuginfod.h> /* libdebuginfod-dev: only its names, nothing is linked */
#else
typedef struct debuginfod_client debuginfod_client;
#define DEBUGINFOD_SONAME       "libdebuginfod.so.1"
#define DEBUGINFOD_URLS_ENV_VAR "DEBUGINFOD_URLS"
#endif

/* debuginfod_begin and debuginfod_find_debuginfo, as <elfutils/debuginfod.h> declares them */
typedef debuginfod_client *(*begin_fn)(void);
typedef int (*find_fn)(debuginfod_client *, const unsigned char *, int, char **);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int off, tried, said; /* all under lock */
static void *lib;
static find_fn find;
static debuginfod_client *client;

void dcpi_debuginfod_off(void)
{
    pthread_mutex_lock(&lock);
    off = 1;
    pthread_mutex_unlock(&lock);
}

int dcpi_debuginfod_loaded(void)
{
    pthread_mutex_lock(&lock);
    int loaded = lib != NULL;
    pthread_mutex_unlock(&lock);
    return loaded;
}

/* DEBUGINFOD_URLS names at least one server (libdebuginfod splits it on blanks). */
static int urls_set(void)
{
    const char *u = getenv(DEBUGINFOD_URLS_ENV_VAR);
    return u && u[strspn(u, " \t\n")] != '\0';
}

/* The process's one log line about debuginfod (at level, once). */
static void say_once(int level, const char *fmt, const char *a, const char *b, const char *c)
{
    if (said)
        return;
    said = 1;
    char line[900];
    snprintf(line, sizeof line, fmt, a, b, c);
    dcpi__log(level, "debuginfod: %s (further debuginfod failures are not logged)", line);
}

/* Load the library and make the client, once; 1 when there is a client. */
static int load(void)
{
    if (tried)
        return client != NULL;
    tried = 1;
    lib = dlopen(DEBUGINFOD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        say_once(DCPI_LOG_WARN, "%s is set but %s cannot be loaded: %s", DEBUGINFOD_URLS_ENV_VAR,
                 DEBUGINFOD_SONAME, why ? why : "dlopen failed");
        return 0;
    }
    begin_fn begin = (begin_fn)dlsym(lib, "debuginfod_begin");
    find = (find_fn)dlsym(lib, "debuginfod_find_debuginfo");
    client = begin && find ? begin() : NULL;
    if (!client)
        say_once(DCPI_LOG_WARN, "%s: %s%s", DEBUGINFOD_SONAME,
                 begin && find ? "debuginfod_begin failed" : "missing functions", "");
    return client != NULL;
}

/* The build-id in lowercase hex (for the log). */
static void hex(const unsigned char *id, size_t n, char *out, size_t len)
{
    size_t at = 0;
    for (size_t i = 0; i < n && at + 3 <= len; i++)
        at += (size_t)snprintf(out + at, len - at, "%02x", id[i]);
    out[at] = '\0';
}

int dcpi__debuginfod_find(const unsigned char *id, size_t n, const char *path, char **out)
{
    *out = NULL;
    if (!id || n == 0 || n > INT_MAX || !urls_set())
        return DCPI_ENOENT;
    int rc = DCPI_ENOENT;
    pthread_mutex_lock(&lock);
    if (!off && load()) {
        char *cached = NULL;
        int fd = find(client, id, (int)n, &cached);
        if (fd >= 0) {
            close(fd);
            *out = cached;
            rc = cached ? 0 : DCPI_ENOENT;
        } else {
            char ids[130];
            hex(id, n, ids, sizeof ids);
            say_once(fd == -ENOENT ? DCPI_LOG_INFO : DCPI_LOG_WARN,
                     "no debug file for %s (build-id %s): %s", path ? path : "?", ids,
                     strerror(-fd));
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
