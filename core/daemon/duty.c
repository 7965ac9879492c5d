/*
 * duty.c - dcpid -duty F: sampling in randomly placed windows, a part (part.h). Time is cut into
 * cycles of max(10 s, 0.25 s / duty) (a window is at least one 250 ms timer tick); in each, the
 * events are on for duty x cycle seconds starting at a random point. Over many cycles a host
 * samples that share of its time, and the fleet weights its counts by 1/duty
 * (core/fleet/query.c), so shares across hosts stay unbiased.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/base/fsutil.h"
#include "core/base/log.h"
#include "core/daemon/daemon-int.h"
#include "core/daemon/daemon.h"
#include "core/sampling/sampler.h"
#include "dcpi/errno.h"

/* The part's state: this cycle's window and end (monotonic s), and whether the events are
 * enabled (inside the window). */
typedef struct duty {
    double on, off, end;
    int sampling;
} duty_t;

/* The events are on once set up (or at the command's exec). */
static int duty_start(daemon_t *d, void *self, char *err)
{
    ((duty_t *)self)->sampling = 1;
    return 0;
}

static double uniform(void)
{
    return (double)(random() % 1000000) / 1000000.0;
}

static void duty_cycle(daemon_t *d, duty_t *u, double now)
{
    double duty = d->o->duty, cycle = 0.25 / duty > 10.0 ? 0.25 / duty : 10.0;
    double on = duty * cycle;
    u->on = now + uniform() * (cycle - on);
    u->off = u->on + on;
    u->end = now + cycle;
}

/* -duty: enable or disable the events at the windows' edges (every timer tick). */
static void duty_tick(daemon_t *d, void *self)
{
    duty_t *u = self;
    if (!(d->o->duty > 0 && d->o->duty < 1) || !d->smp)
        return;
    double now = dcpi__monotonic_s();
    if (u->end == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        srandom(
            (unsigned)(ts.tv_nsec ^ ts.tv_sec ^ (long)getpid() << 16)); /* windows differ by host */
    }
    if (u->end == 0 || now >= u->end)
        duty_cycle(d, u, now);
    int want = now >= u->on && now < u->off;
    if (want == u->sampling)
        return;
    int rc = want ? dcpi_sampler_enable(d->smp) : dcpi_sampler_disable(d->smp);
    if (rc < 0)
        dcpi__log(DCPI_LOG_WARN, "-duty: %s: %s", want ? "enable" : "disable", dcpi_strerror(rc));
    u->sampling = want;
}

/* -duty: the fraction written into DB/<epoch>/<platform>/duty of each new epoch. */
static int duty_record(daemon_t *d, void *self, char *unused)
{
    if (!(d->o->duty > 0 && d->o->duty < 1))
        return 0;
    char path[4500], text[64], err[DCPI_ERRLEN];
    (void)dcpi__pathf(path, sizeof path, "%s/%s/%s/duty", d->db, d->epoch, d->platform);
    int n = snprintf(text, sizeof text, "%.9g\n", d->o->duty);
    if (dcpi__write_atomic(path, text, (size_t)n, err) < 0)
        dcpi__log(DCPI_LOG_WARN, "-duty: %s", err);
    return 0;
}

DCPI_DAEMON_PART(duty, .order = 30, .size = sizeof(duty_t), .start = duty_start, .tick = duty_tick,
                 .epoch = duty_record);
