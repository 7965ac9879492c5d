/*
 * progress.c - the progress line of progress.h: throttled to one line per 100 ms
 * (CLOCK_MONOTONIC), "\r" + text + "\033[K" (erase to end of line), cleared at the end.
 */
#include "core/base/progress.h"

#include <inttypes.h>
#include <time.h>
#include <unistd.h>

#define PROGRESS_INTERVAL_NS 100000000ull /* at most 10 lines a second */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void dcpi__progress_start(dcpi__progress_t *p, FILE *out, int tty, uint64_t total,
                          const char *label)
{
    *p = (dcpi__progress_t){.label = label, .total = total};
    if (tty > 0 || (tty < 0 && out && isatty(fileno(out))))
        p->out = out;
}

static void draw(dcpi__progress_t *p)
{
    if (p->total)
        fprintf(p->out, "\r%s: %" PRIu64 "/%" PRIu64 " (%" PRIu64 "%%)\033[K", p->label, p->done,
                p->total, p->done * 100 / p->total);
    else
        fprintf(p->out, "\r%s: %" PRIu64 "\033[K", p->label, p->done);
    fflush(p->out);
    p->drawn = 1;
    p->draws++;
}

void dcpi__progress_update(dcpi__progress_t *p, uint64_t done)
{
    if (!p->out)
        return;
    p->done = done;
    uint64_t t = now_ns();
    if (p->draws && t - p->last_ns < PROGRESS_INTERVAL_NS)
        return;
    p->last_ns = t;
    draw(p);
}

void dcpi__progress_done(dcpi__progress_t *p)
{
    if (p->out && p->drawn) {
        fputs("\r\033[K", p->out);
        fflush(p->out);
    }
    p->drawn = 0;
}
