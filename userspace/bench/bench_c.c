// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench runtimes written in C: wsched (libwsched fork/join) and serial
 * (the same kernels with every spawn replaced by a plain call), plus the
 * serial pieces every runtime shares (leaf work).
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wsched/pool.h"
#include "bench.h"

/* ---------------------------------------------------------------- shared */

unsigned bench_nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned)CPU_COUNT(&set);
}

void bench_sched_name(char *buf, size_t len)
{
	char state[32] = "", ops[64] = "";
	FILE *f = fopen("/sys/kernel/sched_ext/state", "r");

	if (f) {
		if (!fgets(state, sizeof(state), f))
			state[0] = '\0';
		fclose(f);
	}
	if (strncmp(state, "enabled", 7)) {
		snprintf(buf, len, "eevdf");
		return;
	}
	f = fopen("/sys/kernel/sched_ext/root/ops", "r");
	if (f) {
		if (!fgets(ops, sizeof(ops), f))
			ops[0] = '\0';
		fclose(f);
	}
	ops[strcspn(ops, "\n")] = '\0';
	snprintf(buf, len, "scx_%s", ops[0] ? ops : "unknown");
}

uint64_t uts_hash(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* The leaves under a fib cutoff: the same recursion, without spawns (a
 * cutoff of 1 makes this return n at once: no coarsening). */
long fib_serial(int n)
{
	return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

long nq_serial_bits(uint32_t mask, uint32_t cols, uint32_t d1, uint32_t d2)
{
	uint32_t avail;
	long n = 0;

	if (cols == mask)
		return 1;
	avail = mask & ~(cols | d1 | d2);
	while (avail) {
		uint32_t bit = avail & -avail;

		avail &= avail - 1;
		n += nq_serial_bits(mask, cols | bit, ((d1 | bit) << 1) & mask, (d2 | bit) >> 1);
	}
	return n;
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

void sort_leaf(int *a, int *tmp, long n)
{
	(void)tmp;
	qsort(a, (size_t)n, sizeof(int), cmp_int);
}

void merge_serial(const int *a, long na, const int *b, long nb, int *out)
{
	long i = 0, j = 0, k = 0;

	while (i < na && j < nb)
		out[k++] = b[j] < a[i] ? b[j++] : a[i++];
	while (i < na)
		out[k++] = a[i++];
	while (j < nb)
		out[k++] = b[j++];
}

void matmul_rows(const double *A, const double *B, double *C, int n, int lo, int hi)
{
	int i, j, k;

	for (i = lo; i < hi; i++) {
		double *c = C + (size_t)i * n;

		for (j = 0; j < n; j++)
			c[j] = 0;
		for (k = 0; k < n; k++) {
			double aik = A[(size_t)i * n + k];
			const double *b = B + (size_t)k * n;

			for (j = 0; j < n; j++)
				c[j] += aik * b[j];
		}
	}
}

/* ---------------------------------------------------------------- wsched */

#define K(x)			ws_##x
#define BK_W			struct ws_worker *
#define BK_TASK			struct ws_task
#define BK_SPAWN(w, t, fn, a)	ws_spawn(w, t, fn, a)
#define BK_SYNC(w, t)		ws_sync(w, t)
#define BK_PFOR(w, lo, hi, g, body, a) ws_parallel_for(w, lo, hi, g, body, a)
#include "bench_kernels.h"
#undef K
#undef BK_W
#undef BK_TASK
#undef BK_SPAWN
#undef BK_SYNC
#undef BK_PFOR

static struct ws_pool *pool;
struct ws_pool_attr bench_wsched_attr;	/* tuning from wsbench's options */

static int wsched_init(int workers)
{
	struct ws_pool_attr a = bench_wsched_attr;

	a.nr_workers = (unsigned)workers;
	return ws_pool_create(&pool, &a);
}

static void wsched_fini(void)
{
	ws_pool_destroy(pool);
	pool = NULL;
}

static long wsched_fib(int n, int cutoff)
{
	struct ws_fibarg f = { n, cutoff, 0 };

	ws_pool_run(pool, cutoff > 1 ? ws_fib_cut_task : ws_fib_task, &f);
	return f.r;
}

static long wsched_nqueens(int n, int cutoff)
{
	struct ws_nqarg q = { (1u << n) - 1, 0, 0, 0, 0, cutoff, 0 };

	ws_pool_run(pool, ws_nq_task, &q);
	return q.r;
}

static long wsched_uts(const struct uts_params *u)
{
	struct ws_utsarg a = { u, u->seed, 0, 0, 0 };

	ws_pool_run(pool, ws_uts_root, &a);
	return a.count;
}

static void wsched_sort(int *a, int *tmp, long n, long cutoff)
{
	struct ws_sortarg s = { a, tmp, n, cutoff, 0 };

	ws_pool_run(pool, ws_sort_task, &s);
}

static void wsched_matmul(const double *A, const double *B, double *C, int n, int grain)
{
	struct ws_mmarg m = { A, B, C, n, grain };

	ws_pool_run(pool, ws_mm_task, &m);
}

/*
 * The pool's counters in wsbench's output, by name: a choice from
 * WS_WORKER_STATS in an order of its own (nr_exposes before nr_parks, no
 * nr_public), the keys of the saved results (Documentation/results/data/).
 */
#define BENCH_STAT(name) { #name, offsetof(struct ws_worker_stats, name) }
static const struct {
	const char *name;
	size_t off;
} wsched_bench_stats[] = {
	BENCH_STAT(nr_tasks), BENCH_STAT(nr_steals), BENCH_STAT(nr_steal_fails),
	BENCH_STAT(nr_exposes), BENCH_STAT(nr_parks), BENCH_STAT(nr_wakeups),
	BENCH_STAT(nr_yields), BENCH_STAT(nr_yield_to), BENCH_STAT(nr_handoffs),
};
#undef BENCH_STAT

static void wsched_stats(char *buf, unsigned len)
{
	struct ws_worker_stats st;
	size_t i, off = 0;
	int n;

	ws_pool_sum_stats(pool, &st);
	for (i = 0; i < sizeof(wsched_bench_stats) / sizeof(wsched_bench_stats[0]); i++) {
		const uint64_t *v = (const uint64_t *)((const char *)&st + wsched_bench_stats[i].off);

		n = snprintf(buf + off, len - off, ", \"%s\": %llu", wsched_bench_stats[i].name,
			     (unsigned long long)*v);
		if (n < 0 || (size_t)n >= len - off)
			return;		/* full: cut where one snprintf would */
		off += (size_t)n;
	}
	snprintf(buf + off, len - off, ", \"yield_path\": \"%s\"",
		 ws_yield_path_name(ws_pool_yield_path(pool)));
}

const struct bench_rt bench_wsched = {
	"wsched", wsched_init, wsched_fini, wsched_fib, wsched_nqueens, wsched_uts,
	wsched_sort, wsched_matmul, wsched_stats,
};

/* ---------------------------------------------------------------- serial */

typedef int (*ser_range_fn)(void *w, long lo, long hi, void *arg);

#define K(x)			ser_##x
#define BK_W			void *
#define BK_TASK			__attribute__((unused)) char
#define BK_SPAWN(w, t, fn, a)	fn(w, a)
#define BK_SYNC(w, t)		((void)0)
#define BK_PFOR(w, lo, hi, g, body, a) body(w, lo, hi, a)
#include "bench_kernels.h"

static int serial_init(int workers)
{
	return workers == 1 ? 0 : -EINVAL;
}

static void serial_fini(void)
{
}

static long serial_fib(int n, int cutoff)
{
	struct ser_fibarg f = { n, cutoff, 0 };

	if (cutoff > 1)
		ser_fib_cut_task(NULL, &f);
	else
		ser_fib_task(NULL, &f);
	return f.r;
}

static long serial_nqueens(int n, int cutoff)
{
	struct ser_nqarg q = { (1u << n) - 1, 0, 0, 0, 0, cutoff, 0 };

	ser_nq_task(NULL, &q);
	return q.r;
}

static long serial_uts(const struct uts_params *u)
{
	struct ser_utsarg a = { u, u->seed, 0, 0, 0 };

	ser_uts_root(NULL, &a);
	return a.count;
}

static void serial_sort(int *a, int *tmp, long n, long cutoff)
{
	struct ser_sortarg s = { a, tmp, n, cutoff, 0 };

	ser_sort_task(NULL, &s);
}

static void serial_matmul(const double *A, const double *B, double *C, int n, int grain)
{
	struct ser_mmarg m = { A, B, C, n, grain };

	ser_mm_task(NULL, &m);
}

const struct bench_rt bench_serial = {
	"serial", serial_init, serial_fini, serial_fib, serial_nqueens, serial_uts,
	serial_sort, serial_matmul, NULL,
};

#ifdef WSBENCH_NO_TBB
/* Built without libtbb-dev: wsbench reports the runtime as missing. */
const struct bench_rt bench_tbb = { "tbb", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
#endif
