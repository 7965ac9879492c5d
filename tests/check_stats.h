/*
 * check_stats.h - statistical assertions for the Check suites (header-only; the e2e scripts'
 * counterpart is tests/e2e/lib/stats.sh).
 *
 * A share counted from sampled data is a binomial estimate whose noise depends on the number of
 * samples, not on the machine: ck_assert_share first asserts a minimum count, then accepts a
 * deviation of at most DCPI_STAT_Z * sqrt(p (1 - p) / n) from the truth p. DCPI_STAT_Z = 5.5 puts
 * the two-sided tail at 3.8e-8 per check (under 1e-6 for a suite of up to 26 such checks). The
 * failure message names the count, the sample count and the tolerance.
 */
#ifndef DCPI_CHECK_STATS_H
#define DCPI_CHECK_STATS_H

#include <check.h>
#include <math.h>

#define DCPI_STAT_Z 5.5

/* The tolerance for a share of truth p estimated from n samples. */
static inline double dcpi_stat_tol(double p, long n)
{
    return DCPI_STAT_Z * sqrt(p * (1 - p) / (double)n);
}

/* WHAT: k of n samples against the truth P, with at least NMIN samples. */
#define ck_assert_share(what, k, n, p, nmin)                                                       \
    do {                                                                                           \
        long k_ = (k), n_ = (n), nmin_ = (nmin);                                                   \
        double p_ = (p);                                                                           \
        ck_assert_msg(n_ >= nmin_, "%s: %ld samples, need at least %ld", (what), n_, nmin_);       \
        double tol_ = dcpi_stat_tol(p_, n_), got_ = (double)k_ / (double)n_;                       \
        ck_assert_msg(fabs(got_ - p_) <= tol_,                                                     \
                      "%s: %ld of %ld samples = %.4f, truth %.4f, tolerance +-%.4f (z %.1f)",      \
                      (what), k_, n_, got_, p_, tol_, DCPI_STAT_Z);                                \
    } while (0)

#endif
