/*
 * work-jit.c - a "JIT": copies a small loop into an anonymous executable mapping and runs it for
 * MS milliseconds of CPU (default 1000), so that its samples fall outside every file-backed
 * image, as a JIT's do. With "map", it also writes /tmp/perf-PID.map naming the loop
 * "jit_countdown" (what LuaJIT, node or a JVM agent write for perf); with "widemap" the map
 * also names code at both ends of the address space and inside this program's own text (node's
 * map names its builtins inside its binary and its JIT code near 0x7fc9...: a map that spans
 * the whole address space). Used by tests/e2e/loss_warning.sh (samples left unattributed are
 * warned about) and jit_perf_map.sh. With "reuse", the map names the loop "jit_old" for the
 * first third of MS, then the loop is written again at the same address and a second line names
 * it "jit_new" for the rest (a JIT reusing the addresses of code it dropped, as node does after
 * a deoptimisation): 1/3 of the samples are jit_old's, 2/3 jit_new's (jit_reuse.sh).
 *   work-jit [MS] [map|widemap|reuse]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* mov rax, rdi; 1: dec rax; jnz 1; ret (counts rdi down) */
static const unsigned char code[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 1000;
    void *p =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("work-jit: mmap");
        return 1;
    }
    memcpy(p, code, sizeof code);
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    int wide = argc > 2 && strcmp(argv[2], "widemap") == 0;
    int reuse = argc > 2 && strcmp(argv[2], "reuse") == 0;
    FILE *map =
        argc > 2 && (wide || reuse || strcmp(argv[2], "map") == 0) ? fopen(path, "w") : NULL;
    if (map) {
        if (wide)
            fprintf(map, "1000 10 far_low\n%lx 40 builtin_in_binary\n",
                    (unsigned long)(uintptr_t)&cpu_ms);
        fprintf(map, "%lx %zx %s\n", (unsigned long)(uintptr_t)p, sizeof code,
                reuse ? "jit_old" : "jit_countdown");
        if (wide)
            fprintf(map, "7ffffffff000 10 far_high\n");
        if (reuse)
            fflush(map);
        else
            fclose(map);
    }
    uint64_t (*loop)(uint64_t) = (uint64_t(*)(uint64_t))p;
    double t0 = cpu_ms();
    unsigned long rounds = 0;
    while (cpu_ms() - t0 < ms) {
        if (reuse && map && cpu_ms() - t0 >= ms / 3) { /* the same address, new code */
            memcpy(p, code, sizeof code);
            fprintf(map, "%lx %zx jit_new\n", (unsigned long)(uintptr_t)p, sizeof code);
            fclose(map);
            map = NULL;
        }
        loop(1000000);
        rounds++;
    }
    printf("rounds %lu\n", rounds);
    if ((map || reuse) && getenv("WORK_JIT_KEEP_MAP") == NULL)
        unlink(path);
    return 0;
}
