/*
 * diffstat.h - the statistics of dcpidiff (docs/dcpidiff.md, "Method"): is a difference between
 * the counts of one row in two profile sets larger than the sampling noise?
 *
 * A row has a samples of one event in set A (whose total is na) and b in set B (total nb).
 * Sampled counts are modelled as independent Poisson counts with rates proportional to the
 * row's true share times the set's size. Under the hypothesis that the share is the same in both
 * sets, a given a + b is Binomial(a + b, na / (na + nb)): the exact conditional test for
 * comparing two Poisson rates. Its two-sided p-value here is twice the smaller tail (at most 1).
 * The many rows of a table are corrected with Benjamini-Hochberg (dcpi_diffstat_bh).
 *
 * The binomial tails come from the regularized incomplete beta function (Lentz's continued
 * fraction), so a p-value costs O(sqrt(a + b)) steps, not O(a + b). Pure functions, no state.
 */
#ifndef DCPI_CORE_DIFF_DIFFSTAT_H
#define DCPI_CORE_DIFF_DIFFSTAT_H

#include <stddef.h>
#include <stdint.h>

/* The regularized incomplete beta function I_x(a, b), a > 0, b > 0, 0 <= x <= 1. */
double dcpi_diffstat_betai(double a, double b, double x);

/* P(X <= k) and P(X >= k) for X ~ Binomial(n, p), 0 <= p <= 1. */
double dcpi_diffstat_binom_cdf(uint64_t k, uint64_t n, double p);
double dcpi_diffstat_binom_sf(uint64_t k, uint64_t n, double p);

/*
 * Two-sided p-value that a of na and b of nb come from the same share: 2 min(P(X <= a),
 * P(X >= a)) for X ~ Binomial(a + b, na / (na + nb)), at most 1. 1 when a + b == 0 or a total
 * is 0 (nothing to compare). Below DCPI_DIFFSTAT_PMIN the p-value is 0 (printed "0" in CSV).
 */
#define DCPI_DIFFSTAT_PMIN 1e-300
double dcpi_diffstat_pvalue(uint64_t a, uint64_t na, uint64_t b, uint64_t nb);

/*
 * Benjamini-Hochberg adjusted p-values of p[0..n-1] into q (may be p): q_(i) = min over j >= i
 * of p_(j) n / j in increasing order of p, at most 1. A row is significant at false discovery
 * rate alpha when q < alpha. 0 or DCPI_ENOMEM.
 */
int dcpi_diffstat_bh(const double *p, size_t n, double *q);

/* "<0.001" below 0.001, else the value with 2 significant digits ("0.034", "1"), into buf. */
void dcpi_diffstat_format_p(double p, char *buf, size_t len);

/* The significance marker of an adjusted p-value q at level alpha: "noise" when q >= alpha,
 * else "***" (q < 0.001), "**" (q < 0.01), "*". */
const char *dcpi_diffstat_marker(double q, double alpha);

#endif
