// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench: the interface between the driver (wsbench.c) and the runtimes
 * (wsched and serial in bench_c.c, OpenMP in bench_omp.c, oneTBB in
 * bench_tbb.cpp). Each runtime implements every benchmark the same way the
 * others do, idiomatically for that runtime.
 */
#ifndef WSBENCH_H
#define WSBENCH_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Unbalanced tree: the root has b0 children; every other node has m
 * children with probability q (as a 64-bit threshold), else none. Each node
 * costs g rounds of hashing. Deterministic for a given seed. */
struct uts_params {
	uint64_t seed;
	int b0, m, g;
	uint64_t q_threshold;
};

struct bench_rt {
	const char *name;
	int (*init)(int workers);	/* 0 or -errno */
	void (*fini)(void);
	long (*fib)(int n, int cutoff);	/* fib(n <= cutoff): fib_serial() */
	long (*nqueens)(int n, int cutoff);
	long (*uts)(const struct uts_params *u);
	void (*sort)(int *a, int *tmp, long n, long cutoff);
	void (*matmul)(const double *A, const double *B, double *C, int n, int grain);
	/* optional: runtime counters as a JSON fragment ("" if none) */
	void (*stats_json)(char *buf, unsigned len);
};

extern const struct bench_rt bench_wsched, bench_serial, bench_omp, bench_tbb;

/* `wsbench handoff ...` (handoff.c): argv[0] is "handoff", the rest its
 * options; returns the exit status. */
int bench_handoff_main(int argc, char **argv);

/* `wsbench lock ...` (lockbench.c), the same way. */
int bench_lock_main(int argc, char **argv);

#ifndef __cplusplus
#include "wsched/pool.h"
extern struct ws_pool_attr bench_wsched_attr;	/* wsched tuning options */
#endif

/* Shared pieces (bench_c.c). */
/* Shared by the drivers: CLOCK_MONOTONIC in ns (inline: timing loops call
 * it); in bench_c.c, the CPUs in the caller's affinity mask (1 if unknown)
 * and the scheduler running now, "eevdf" or "scx_<ops name>" (sched_ext's
 * state and root/ops files). */
static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

unsigned bench_nr_cpus(void);
void bench_sched_name(char *buf, size_t len);

uint64_t uts_hash(uint64_t x);
long fib_serial(int n);
long nq_serial_bits(uint32_t mask, uint32_t cols, uint32_t d1, uint32_t d2);
void sort_leaf(int *a, int *tmp, long n);
void merge_serial(const int *a, long na, const int *b, long nb, int *out);
void matmul_rows(const double *A, const double *B, double *C, int n, int lo, int hi);

#ifdef __cplusplus
}
#endif

#endif
