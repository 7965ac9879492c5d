/*
 * tests/fuzz/replay_main.c - a main() for building a fuzz harness without libFuzzer (any C
 * compiler): runs LLVMFuzzerTestOneInput once over every file named on the command line and
 * every regular file inside the directories named there (recursively), in sorted order.
 * Arguments starting with '-' are ignored, so libFuzzer-style flags do no harm; a path that
 * does not exist is skipped with a note (a harness may have no regress/ inputs yet).
 * Exit status 0 when every input ran (a crash aborts the program), 1 on an unreadable input.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int replay_file(const char *path, unsigned long *count)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f) || !buf;
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: %s: read error\n", path);
        free(buf);
        return -1;
    }
    /* A private copy of exactly len bytes, so reads past the end are caught by ASan. */
    uint8_t *input = malloc(len ? len : 1);
    if (!input) {
        free(buf);
        return -1;
    }
    memcpy(input, buf, len);
    free(buf);
    LLVMFuzzerTestOneInput(input, len);
    free(input);
    (*count)++;
    return 0;
}

static int replay_path(const char *path, unsigned long *count);

static int replay_dir(const char *path, unsigned long *count)
{
    struct dirent **ents = NULL;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ents[i]->d_name;
        if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, name);
            if (replay_path(sub, count) < 0)
                rc = -1;
        }
        free(ents[i]);
    }
    free(ents);
    return rc;
}

static int replay_path(const char *path, unsigned long *count)
{
    struct stat st;
    if (stat(path, &st) < 0 && errno == ENOENT) {
        fprintf(stderr, "replay: %s: absent, skipped\n", path); /* e.g. no regress/ inputs yet */
        return 0;
    }
    if (stat(path, &st) < 0) {
        fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return replay_dir(path, count);
    return replay_file(path, count);
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    unsigned long count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        if (replay_path(argv[i], &count) < 0)
            rc = 1;
    }
    printf("replay: %lu inputs ran\n", count);
    return rc;
}
