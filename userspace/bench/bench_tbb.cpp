// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench runtime "tbb": oneTBB, written the usual way: a task_arena with
 * the requested concurrency, tbb::task_group run()/wait() for fork/join, and
 * tbb::parallel_for over a blocked_range (simple_partitioner, so that the
 * grain is the same as the other runtimes') for matmul.
 */
#include <cstring>
#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>

#include "bench.h"

static tbb::task_arena *arena;
static tbb::global_control *gc;

static int tbb_init(int workers)
{
	gc = new tbb::global_control(tbb::global_control::max_allowed_parallelism, workers);
	arena = new tbb::task_arena(workers);
	return 0;
}

static void tbb_fini(void)
{
	delete arena;
	delete gc;
	arena = nullptr;
	gc = nullptr;
}

static long fib(int n, int cutoff)
{
	if (n <= cutoff)
		return fib_serial(n);
	long x, y;
	tbb::task_group g;

	g.run([&] { x = fib(n - 1, cutoff); });
	y = fib(n - 2, cutoff);
	g.wait();
	return x + y;
}

static long tbb_fib(int n, int cutoff)
{
	long r = 0;

	arena->execute([&] { r = fib(n, cutoff); });
	return r;
}

static long nq(uint32_t mask, uint32_t cols, uint32_t d1, uint32_t d2, int row, int cutoff)
{
	if (row >= cutoff)
		return nq_serial_bits(mask, cols, d1, d2);
	long r[32] = { 0 };
	int k = 0;
	tbb::task_group g;
	uint32_t avail = mask & ~(cols | d1 | d2);

	while (avail) {
		uint32_t bit = avail & -avail;

		avail &= avail - 1;
		g.run([=, &r] {
			r[k] = nq(mask, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1,
				  row + 1, cutoff);
		});
		k++;
	}
	g.wait();
	long sum = 0;
	for (int i = 0; i < k; i++)
		sum += r[i];
	return sum;
}

static long tbb_nqueens(int n, int cutoff)
{
	long r = 0;

	arena->execute([&] { r = nq((1u << n) - 1, 0, 0, 0, 0, cutoff); });
	return r;
}

static long uts_node(const uts_params *u, uint64_t state);

static long uts_range(const uts_params *u, uint64_t state, int lo, int hi)
{
	if (hi - lo == 1)
		return uts_node(u, uts_hash(state + (uint64_t)lo + 1));
	int mid = lo + (hi - lo) / 2;
	long l, r;
	tbb::task_group g;

	g.run([&] { l = uts_range(u, state, lo, mid); });
	r = uts_range(u, state, mid, hi);
	g.wait();
	return l + r;
}

static long uts_node(const uts_params *u, uint64_t state)
{
	uint64_t x = state;

	for (int i = 0; i < u->g; i++)
		x = uts_hash(x);
	__asm__ __volatile__("" : : "r"(x));	/* keep the work */
	int n = uts_hash(state ^ 0x5bd1e995u) < u->q_threshold ? u->m : 0;
	long c[16], count = 1;
	tbb::task_group g;

	for (int i = 0; i < n; i++)
		g.run([=, &c] { c[i] = uts_node(u, uts_hash(state + (uint64_t)i + 1)); });
	g.wait();
	for (int i = 0; i < n; i++)
		count += c[i];
	return count;
}

static long tbb_uts(const uts_params *u)
{
	long r = 0;

	arena->execute([&] { r = 1 + uts_range(u, u->seed, 0, u->b0); });
	return r;
}

static void pmerge(const int *a, long na, const int *b, long nb, int *out, long cutoff)
{
	if (na + nb <= cutoff) {
		merge_serial(a, na, b, nb, out);
		return;
	}
	if (na < nb) {
		std::swap(a, b);
		std::swap(na, nb);
	}
	long ma = na / 2, lo = 0, hi = nb;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (b[mid] < a[ma])
			lo = mid + 1;
		else
			hi = mid;
	}
	tbb::task_group g;

	g.run([=] { pmerge(a, ma, b, lo, out, cutoff); });
	pmerge(a + ma, na - ma, b + lo, nb - lo, out + ma + lo, cutoff);
	g.wait();
}

static void psort(int *a, int *tmp, long n, long cutoff, bool to_tmp)
{
	if (n <= cutoff) {
		sort_leaf(a, tmp, n);
		if (to_tmp)
			std::memcpy(tmp, a, sizeof(int) * (size_t)n);
		return;
	}
	long h = n / 2;
	tbb::task_group g;

	g.run([=] { psort(a, tmp, h, cutoff, !to_tmp); });
	psort(a + h, tmp + h, n - h, cutoff, !to_tmp);
	g.wait();
	const int *src = to_tmp ? a : tmp;
	pmerge(src, h, src + h, n - h, to_tmp ? tmp : a, cutoff);
}

static void tbb_sort(int *a, int *tmp, long n, long cutoff)
{
	arena->execute([&] { psort(a, tmp, n, cutoff, false); });
}

static void tbb_matmul(const double *A, const double *B, double *C, int n, int grain)
{
	arena->execute([&] {
		tbb::parallel_for(tbb::blocked_range<int>(0, n, grain),
				  [&](const tbb::blocked_range<int> &r) {
					  matmul_rows(A, B, C, n, r.begin(), r.end());
				  },
				  tbb::simple_partitioner());
	});
}

extern "C" const struct bench_rt bench_tbb = {
	"tbb", tbb_init, tbb_fini, tbb_fib, tbb_nqueens, tbb_uts, tbb_sort, tbb_matmul, nullptr,
};
