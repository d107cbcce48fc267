/*
 * quantile.h - nearest-rank percentiles of a benchmark's samples, shared by
 * the fleet simulator (fleetsim/fsim_stats.c) and es-bench-apply-ack
 * (apply_ack_client.c). Benchmark tools only.
 */
#ifndef ES_BENCH_QUANTILE_H
#define ES_BENCH_QUANTILE_H

#include <stddef.h>
#include <stdlib.h>

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts the n values of v in place, ascending. */
static inline void bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
}

/* The pct-th percentile (0..100) of n sorted values (n >= 1), nearest
 * rank: the smallest value with at least pct % of the values at or below
 * it. */
static inline double bench_quantile(const double *sorted, size_t n, int pct)
{
	size_t i = (n * (size_t)pct + 99) / 100;

	return sorted[i ? i - 1 : 0];
}

#endif
