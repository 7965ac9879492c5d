/*
 * tests/fuzz/fuzz_util.h - helpers shared by the fuzz harnesses (header only): the input as a
 * file in a private temporary directory, for parsers that take a path; a check that aborts
 * with a message, so a broken property is reported as a crash; and the check of a rejection.
 */
#ifndef DCPI_FUZZ_UTIL_H
#define DCPI_FUZZ_UTIL_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "dcpi/errno.h"

/* Abort (a crash for libFuzzer) when cond is false. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A parser's rejection: a documented code (EFORMAT, ETRUNC, EVERSION or ENOMEM) and one line
 * "NAME: reason" in err. */
static inline void fuzz_check_rejection(int rc, const char *err, const char *name)
{
    FUZZ_CHECK(rc == DCPI_EFORMAT || rc == DCPI_ETRUNC || rc == DCPI_EVERSION || rc == DCPI_ENOMEM);
    FUZZ_CHECK(strncmp(err, name, strlen(name)) == 0 && strchr(err, '\n') == NULL);
}

static char fuzz_dir[64], fuzz_file[96];

/* The private directory and all a harness made in it (fuzz_dbload's database). */
static void fuzz_cleanup(void)
{
    dcpi__remove_tree(fuzz_dir);
}

/* The private directory (created on the first call, removed at exit), or NULL. */
static inline const char *fuzz_tmpdir(void)
{
    if (fuzz_dir[0])
        return fuzz_dir;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir, sizeof fuzz_dir, "%s/dcpi-fuzz.XXXXXX", base);
    if (!mkdtemp(fuzz_dir)) {
        fuzz_dir[0] = '\0';
        return NULL;
    }
    snprintf(fuzz_file, sizeof fuzz_file, "%s/input", fuzz_dir);
    atexit(fuzz_cleanup);
    return fuzz_dir;
}

/*
 * Write data[0..size) to the file "input" of the private directory, replacing what the last
 * call wrote; returns its path (static storage) or NULL when it cannot be written.
 */
static inline const char *fuzz_write_input(const uint8_t *data, size_t size)
{
    if (!fuzz_tmpdir())
        return NULL;
    int fd = open(fuzz_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return NULL;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    close(fd);
    return done == size ? fuzz_file : NULL;
}

#endif
