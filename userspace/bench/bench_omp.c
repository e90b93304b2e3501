// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench runtime "omp": OpenMP tasks (libgomp with gcc; LLVM libomp in the
 * clang-built wsbench-llvm, where it is called "omp-llvm"), written the usual
 * way: one parallel region whose single thread starts the recursion,
 * "#pragma omp task" per child, "#pragma omp taskwait" to join, and
 * "#pragma omp taskloop grainsize()" for matmul.
 */
#include <errno.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "bench.h"

static int nr_threads;

static int omp_init(int workers)
{
	nr_threads = workers;
	omp_set_dynamic(0);
	omp_set_num_threads(workers);
	return 0;
}

static void omp_fini(void)
{
}

static long fib(int n, int cutoff)
{
	long x, y;

	if (n <= cutoff)
		return fib_serial(n);
#pragma omp task shared(x)
	x = fib(n - 1, cutoff);
	y = fib(n - 2, cutoff);
#pragma omp taskwait
	return x + y;
}

static long omp_fib(int n, int cutoff)
{
	long r = 0;

#pragma omp parallel num_threads(nr_threads)
#pragma omp single
	r = fib(n, cutoff);
	return r;
}

static long nq(uint32_t mask, uint32_t cols, uint32_t d1, uint32_t d2, int row, int cutoff)
{
	long r[32], sum = 0;
	uint32_t avail;
	int k = 0, i;

	if (row >= cutoff)
		return nq_serial_bits(mask, cols, d1, d2);
	avail = mask & ~(cols | d1 | d2);
	while (avail) {
		uint32_t bit = avail & -avail;

		avail &= avail - 1;
#pragma omp task shared(r) firstprivate(k, bit)
		r[k] = nq(mask, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1, row + 1,
			  cutoff);
		k++;
	}
#pragma omp taskwait
	for (i = 0; i < k; i++)
		sum += r[i];
	return sum;
}

static long omp_nqueens(int n, int cutoff)
{
	long r = 0;

#pragma omp parallel num_threads(nr_threads)
#pragma omp single
	r = nq((1u << n) - 1, 0, 0, 0, 0, cutoff);
	return r;
}

static long uts_node(const struct uts_params *u, uint64_t state);

static long uts_range(const struct uts_params *u, uint64_t state, int lo, int hi)
{
	long l, r;
	int mid;

	if (hi - lo == 1)
		return uts_node(u, uts_hash(state + (uint64_t)lo + 1));
	mid = lo + (hi - lo) / 2;
#pragma omp task shared(l)
	l = uts_range(u, state, lo, mid);
	r = uts_range(u, state, mid, hi);
#pragma omp taskwait
	return l + r;
}

static long uts_node(const struct uts_params *u, uint64_t state)
{
	long c[16], count = 1;
	uint64_t x = state;
	int i, n;

	for (i = 0; i < u->g; i++)
		x = uts_hash(x);
	__asm__ __volatile__("" : : "r"(x));	/* keep the work */
	n = uts_hash(state ^ 0x5bd1e995u) < u->q_threshold ? u->m : 0;
	for (i = 0; i < n; i++) {
#pragma omp task shared(c) firstprivate(i)
		c[i] = uts_node(u, uts_hash(state + (uint64_t)i + 1));
	}
#pragma omp taskwait
	for (i = 0; i < n; i++)
		count += c[i];
	return count;
}

static long omp_uts(const struct uts_params *u)
{
	long r = 0;

#pragma omp parallel num_threads(nr_threads)
#pragma omp single
	r = 1 + uts_range(u, u->seed, 0, u->b0);
	return r;
}

static void pmerge(const int *a, long na, const int *b, long nb, int *out, long cutoff)
{
	long ma, lo, hi;

	if (na + nb <= cutoff) {
		merge_serial(a, na, b, nb, out);
		return;
	}
	if (na < nb) {
		const int *tp = a; long tn = na;

		a = b; na = nb; b = tp; nb = tn;
	}
	ma = na / 2;
	for (lo = 0, hi = nb; lo < hi;) {
		long mid = lo + (hi - lo) / 2;

		if (b[mid] < a[ma])
			lo = mid + 1;
		else
			hi = mid;
	}
#pragma omp task
	pmerge(a, ma, b, lo, out, cutoff);
	pmerge(a + ma, na - ma, b + lo, nb - lo, out + ma + lo, cutoff);
#pragma omp taskwait
}

static void psort(int *a, int *tmp, long n, long cutoff, int to_tmp)
{
	long h = n / 2;
	const int *src;

	if (n <= cutoff) {
		sort_leaf(a, tmp, n);
		if (to_tmp)
			memcpy(tmp, a, sizeof(int) * (size_t)n);
		return;
	}
#pragma omp task
	psort(a, tmp, h, cutoff, !to_tmp);
	psort(a + h, tmp + h, n - h, cutoff, !to_tmp);
#pragma omp taskwait
	src = to_tmp ? a : tmp;
	pmerge(src, h, src + h, n - h, to_tmp ? tmp : a, cutoff);
}

static void omp_sort(int *a, int *tmp, long n, long cutoff)
{
#pragma omp parallel num_threads(nr_threads)
#pragma omp single
	psort(a, tmp, n, cutoff, 0);
}

static void omp_matmul(const double *A, const double *B, double *C, int n, int grain)
{
#pragma omp parallel num_threads(nr_threads)
#pragma omp single
	{
		long i, rows = n;

#pragma omp taskloop grainsize(grain)
		for (i = 0; i < rows; i++)
			matmul_rows(A, B, C, n, (int)i, (int)i + 1);
	}
}

#ifndef WSBENCH_OMP_NAME
#define WSBENCH_OMP_NAME "omp"		/* "omp-llvm" in wsbench-llvm */
#endif

const struct bench_rt bench_omp = {
	WSBENCH_OMP_NAME, omp_init, omp_fini, omp_fib, omp_nqueens, omp_uts, omp_sort, omp_matmul, NULL,
};
