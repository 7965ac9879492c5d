/*
 * diffstat.c - dcpidiff's statistics: binomial tails from the regularized incomplete beta
 * function, the exact conditional test for two Poisson rates, Benjamini-Hochberg (diffstat.h).
 */
#include "core/diff/diffstat.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dcpi/errno.h"

#define CF_MAXIT 1000000
#define CF_EPS   1e-15
#define CF_TINY  1e-300

/* The continued fraction of I_x(a, b) (modified Lentz), valid for x < (a + 1) / (a + b + 2).
 * NAN when it does not converge. */
static double betacf(double a, double b, double x)
{
    double qab = a + b, qap = a + 1.0, qam = a - 1.0;
    double c = 1.0, d = 1.0 - qab * x / qap;
    if (fabs(d) < CF_TINY)
        d = CF_TINY;
    d = 1.0 / d;
    double h = d;
    for (int m = 1; m <= CF_MAXIT; m++) {
        double m2 = 2.0 * m;
        double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = fabs(d) < CF_TINY ? CF_TINY : d;
        c = 1.0 + aa / c;
        c = fabs(c) < CF_TINY ? CF_TINY : c;
        d = 1.0 / d;
        h *= d * c;
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = fabs(d) < CF_TINY ? CF_TINY : d;
        c = 1.0 + aa / c;
        c = fabs(c) < CF_TINY ? CF_TINY : c;
        d = 1.0 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1.0) < CF_EPS)
            return h;
    }
    return NAN;
}

double dcpi_diffstat_betai(double a, double b, double x)
{
    if (x <= 0.0)
        return 0.0;
    if (x >= 1.0)
        return 1.0;
    double lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
    if (x < (a + 1.0) / (a + b + 2.0))
        return exp(lbt) * betacf(a, b, x) / a;
    return 1.0 - exp(lbt) * betacf(b, a, 1.0 - x) / b;
}

/* Normal approximation with continuity correction of P(X >= k), for when the continued
 * fraction does not converge (counts far beyond any profile's). */
static double normal_sf(uint64_t k, uint64_t n, double p)
{
    double mu = (double)n * p, sd = sqrt((double)n * p * (1.0 - p));
    if (sd == 0.0)
        return (double)k <= mu ? 1.0 : 0.0;
    return 0.5 * erfc(((double)k - 0.5 - mu) / (sd * sqrt(2.0)));
}

double dcpi_diffstat_binom_sf(uint64_t k, uint64_t n, double p)
{
    if (k == 0)
        return 1.0;
    if (k > n)
        return 0.0;
    double r = dcpi_diffstat_betai((double)k, (double)(n - k + 1), p);
    if (isnan(r))
        r = normal_sf(k, n, p);
    return r < 0.0 ? 0.0 : r > 1.0 ? 1.0 : r;
}

double dcpi_diffstat_binom_cdf(uint64_t k, uint64_t n, double p)
{
    if (k >= n)
        return 1.0;
    /* P(X <= k) = P(n - X >= n - k), n - X ~ Binomial(n, 1 - p) */
    return dcpi_diffstat_binom_sf(n - k, n, 1.0 - p);
}

double dcpi_diffstat_pvalue(uint64_t a, uint64_t na, uint64_t b, uint64_t nb)
{
    uint64_t n = a + b;
    if (n == 0 || na == 0 || nb == 0)
        return 1.0;
    double p0 = (double)na / ((double)na + (double)nb);
    double lo = dcpi_diffstat_binom_cdf(a, n, p0), hi = dcpi_diffstat_binom_sf(a, n, p0);
    double p = 2.0 * (lo < hi ? lo : hi);
    if (p < DCPI_DIFFSTAT_PMIN)
        return 0.0; /* no subnormals: readers such as awk take them for out of range */
    return p > 1.0 ? 1.0 : p;
}

typedef struct ranked {
    double p;
    size_t i;
} ranked_t;

static int cmp_ranked(const void *x, const void *y)
{
    const ranked_t *a = x, *b = y;
    if (a->p != b->p)
        return a->p < b->p ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

int dcpi_diffstat_bh(const double *p, size_t n, double *q)
{
    if (n == 0)
        return 0;
    ranked_t *r = calloc(n, sizeof(*r));
    if (!r)
        return DCPI_ENOMEM;
    for (size_t i = 0; i < n; i++)
        r[i] = (ranked_t){p[i], i};
    if (n > 0) /* qsort's array may not be NULL, even empty */
        qsort(r, n, sizeof(*r), cmp_ranked);
    double run = 1.0;
    for (size_t j = n; j-- > 0;) {
        double v = r[j].p * (double)n / (double)(j + 1);
        if (v < run)
            run = v;
        q[r[j].i] = run;
    }
    free(r);
    return 0;
}

void dcpi_diffstat_format_p(double p, char *buf, size_t len)
{
    if (p < 0.001)
        snprintf(buf, len, "<0.001");
    else
        snprintf(buf, len, "%.2g", p);
}

const char *dcpi_diffstat_marker(double q, double alpha)
{
    if (!(q < alpha))
        return "noise";
    return q < 0.001 ? "***" : q < 0.01 ? "**" : "*";
}
