// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench - benchmarks of libwsched against oneTBB, OpenMP tasks and serial
 * code, each written idiomatically for its runtime.
 *
 *   wsbench [--json] [--runtime wsched|tbb|omp|serial] [--workers N]
 *           [--repeat R] [--ready-file PATH] BENCH [ARGS]
 *
 *   fib [N=35 [CUTOFF=1]]             fib(N), spawning at every level above
 *                                     CUTOFF (fib(n <= CUTOFF) is a serial
 *                                     recursion: a coarser grain)
 *   nqueens [N=14 [CUTOFF=4]]         N-queens; tasks for the first CUTOFF rows
 *   uts [B0=20000 [Q=0.198 [M=5 [G=40]]]]
 *                                     unbalanced tree: root has B0 children,
 *                                     other nodes M with probability Q; G
 *                                     hash rounds of work per node
 *   sort [N=4000000 [CUTOFF=8192]]   parallel mergesort with parallel merge
 *   matmul [N=768 [GRAIN=8]]          C = A x B, rows split with a grain
 *   deque [OPS=10000000]              per-operation costs of the deque and of
 *                                     spawn+sync (wsched only)
 *   calib                             CPUs really available now: the same
 *                                     loop on 1 and on N threads
 *
 * Each run is timed around the parallel part only (inputs are prepared and
 * results checked outside the timing); the median and minimum of R runs are
 * reported, as one human line or one JSON object per benchmark. Next to
 * them, cpu_seconds is the CPU time the whole process (every thread, as the
 * kernel's runtime accounting counts it: CLOCK_PROCESS_CPUTIME_ID) consumed
 * during the R timed runs, and p_a = cpu_seconds / (sum of the R wall
 * times): the average number of processors the scheduler gave the program
 * while it computed (Arora, Blumofe & Plaxton's P_A). A work stealer that
 * burns CPU searching raises p_a without lowering the time; T1 / (p_a x T)
 * is its efficiency (bench-coop's bench=multiprog). sys_busy_cpus is the
 * average number of CPUs the whole system kept busy meanwhile (/proc/stat's
 * idle time, in clock ticks: coarse for runs shorter than a second, and
 * held to 0..CPUs; -1 if unreadable). csw_voluntary and csw_involuntary
 * are the context switches of all its threads during the timed runs
 * (getrusage: blocking or yielding, and preemption).
 *
 * --ready-file PATH starts several programs together: after its setup
 * (runtime started, inputs and references computed) the program creates
 * PATH and waits for SIGUSR1 before its first timed run. The exit
 * status is 0 when every result was correct, 1 when one was not, 2 on bad
 * arguments or when a runtime could not start.
 *
 * Serial is the same C code as wsched with every spawn replaced by a plain
 * call (bench_kernels.h compiled twice), built with the same flags.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "wsched/deque.h"
#include "wsched/pool.h"
#include "bench.h"

#define MAX_ARGS 4

static const char usage_text[] =
	"usage: wsbench [--json] [--runtime wsched|tbb|omp|serial] [--workers N]\n"
	"               [--repeat R] [--ready-file PATH] BENCH [ARGS]\n"
	"benchmarks:\n"
	"  fib [N=35 [CUTOFF=1]]               spawn at every level above CUTOFF\n"
	"  nqueens [N=14 [CUTOFF=4]]           tasks for the first CUTOFF rows\n"
	"  uts [B0=20000 [Q=0.198 [M=5 [G=40]]]] unbalanced tree search\n"
	"  sort [N=4000000 [CUTOFF=8192]]     mergesort with parallel merge\n"
	"  matmul [N=768 [GRAIN=8]]            dense matrix product\n"
	"  deque [OPS=10000000]                per-operation costs (wsched only)\n"
	"  calib                               CPUs really available to --workers\n"
	"                                      threads now (cpu_capacity)\n"
	"  handoff [OPTIONS]                   directed yield vs sched_yield between\n"
	"                                      two threads on one CPU (wsbench handoff\n"
	"                                      --help); ignores --runtime/--workers\n"
	"  lock [OPTIONS]                      lock throughput, waits and holder\n"
	"                                      preemptions (wsbench lock --help)\n"
	"wsched tuning: --spin-ns N, --yield-ns N (idle policy), --pin (pin workers).\n"
	"defaults: --runtime wsched, --workers = CPUs available, --repeat 5.\n"
	"--ready-file PATH: after setup, create PATH and wait for SIGUSR1 before\n"
	"timing (to start several programs together).\n"
	"JSON: seconds_median/_min of the R runs; cpu_seconds, the CPU time of all\n"
	"threads during the R timed runs; p_a = cpu_seconds / their wall time;\n"
	"sys_busy_cpus, the CPUs busy in the whole system meanwhile (/proc/stat);\n"
	"csw_voluntary/_involuntary, the context switches of all threads then.\n"
	"See the comment at the top of userspace/bench/wsbench.c.\n";

static void die_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "wsbench: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see wsbench --help)\n");
	exit(2);
}

static long parse_long(const char *what, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "wsbench: %s must be an integer in [%ld, %ld], not '%s'\n", what,
			min, max, s);
		exit(2);
	}
	return v;
}

static double parse_double(const char *what, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min && v <= max)) {
		fprintf(stderr, "wsbench: %s must be a number in [%g, %g], not '%s'\n", what, min,
			max, s);
		exit(2);
	}
	return v;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPU time every CPU of the system spent busy so far, in seconds: online
 * CPUs x uptime minus idle and iowait. Idle, not the user/system columns:
 * those are sampled by the tick, which undercounts badly when ticks are
 * late (under TCG a busy vCPU showed 0.6-0.7), while with NO_HZ the kernel
 * timestamps idle entry and exit. The first line's columns count every CPU
 * that was ever online; a CPU going offline mid-run skews the result. NAN
 * if /proc/stat is unreadable. */
static double sys_busy_now(void)
{
	unsigned long long v[5] = { 0 };
	static long hz;
	char line[512];
	double n = 0, t;
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return NAN;
	t = now();
	if (!fgets(line, sizeof(line), f) ||
	    sscanf(line, "cpu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5) {
		fclose(f);
		return NAN;
	}
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "cpu", 3))
			n++;
	fclose(f);
	if (!hz)
		hz = sysconf(_SC_CLK_TCK);
	return n * t - (double)(v[3] + v[4]) / (double)hz;
}

/* Context switches of every thread of the process so far (getrusage:
 * voluntary ones block or yield, involuntary ones are preemptions). */
static void csw_now(long *vol, long *invol)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru)) {
		*vol = *invol = 0;
		return;
	}
	*vol = ru.ru_nvcsw;
	*invol = ru.ru_nivcsw;
}

/* The timed runs: wall, process CPU time, system busy time and context
 * switches, summed over the runs for cpu_seconds, p_a, sys_busy_cpus,
 * csw_voluntary and csw_involuntary. */
static double run_t0, run_c0, run_b0, wall_total, cpu_total, busy_total;
static long run_v0, run_i0, csw_vol_total, csw_invol_total;

static void run_begin(void)
{
	run_b0 = sys_busy_now();
	csw_now(&run_v0, &run_i0);
	run_t0 = now();
	run_c0 = cpu_now();
}

static double run_end(void)
{
	double c = cpu_now(), w = now() - run_t0;
	long v, i;

	csw_now(&v, &i);
	csw_vol_total += v - run_v0;
	csw_invol_total += i - run_i0;
	cpu_total += c - run_c0;
	wall_total += w;
	busy_total += sys_busy_now() - run_b0;
	return w;
}

/* --ready-file: SIGUSR1 is blocked in every thread (main blocks it before
 * any runtime starts a thread, threads inherit the mask), so sigwait() here
 * takes it whenever it was sent, before or after PATH appeared. */
static const char *ready_file;
static sigset_t gate_set;

static void gate_prepare(void)
{
	sigemptyset(&gate_set);
	sigaddset(&gate_set, SIGUSR1);
	if (ready_file)
		pthread_sigmask(SIG_BLOCK, &gate_set, NULL);
}

static void gate_wait(void)
{
	int fd, sig;

	if (!ready_file)
		return;
	fd = open(ready_file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "wsbench: cannot create --ready-file %s: %s\n", ready_file,
			strerror(errno));
		exit(2);
	}
	close(fd);
	while (sigwait(&gate_set, &sig))
		;
	ready_file = NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* ---------------------------------------------------------------- output */

struct result {
	const char *bench, *runtime;
	int workers, repeat;
	char args[96];
	double median, min;
	double cpu_seconds, p_a, sys_busy_cpus;
	long csw_vol, csw_invol;
	bool ok;
	char extra[512];	/* JSON fragment: ", \"k\": v, ..." */
};

static void emit(const struct result *r, bool json)
{
	if (json) {
		printf("{\"bench\": \"%s\", \"runtime\": \"%s\", \"workers\": %d, \"args\": \"%s\", "
		       "\"seconds_median\": %.6f, \"seconds_min\": %.6f, \"repeat\": %d, "
		       "\"cpu_seconds\": %.6f, \"p_a\": %.3f, \"sys_busy_cpus\": %.2f, "
		       "\"csw_voluntary\": %ld, \"csw_involuntary\": %ld, "
		       "\"result_ok\": %s%s}\n",
		       r->bench, r->runtime, r->workers, r->args, r->median, r->min, r->repeat,
		       r->cpu_seconds, r->p_a, isnan(r->sys_busy_cpus) ? -1.0 : r->sys_busy_cpus,
		       r->csw_vol, r->csw_invol, r->ok ? "true" : "false", r->extra);
	} else {
		printf("%-8s %-22s %-7s workers=%-3d median %10.6f s  min %10.6f s  (%d runs)  "
		       "P_A %.2f  %s\n",
		       r->bench, r->args, r->runtime, r->workers, r->median, r->min, r->repeat,
		       r->p_a, r->ok ? "ok" : "WRONG RESULT");
		if (r->extra[0])
			printf("         %s\n", r->extra + 2);
	}
	fflush(stdout);
}

/* ---------------------------------------------------------------- checks */

static long fib_ref(int n)
{
	long a = 0, b = 1, t;

	while (n--) {
		t = a + b;
		a = b;
		b = t;
	}
	return a;
}

static const long nq_table[] = { 1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712,
				 365596, 2279184, 14772512 };

/* ---------------------------------------------------------------- deque bench */

/* mode 0: ns per push+pop pair (batches of 256, the fence path of pop);
 * mode 1: ns per uncontended steal (only the steal phases are timed). */
static double deque_ns(long ops, int mode)
{
	struct ws_deque *dq = ws_deque_create(1024);
	void *x = NULL;
	long i, k;
	double t0, t1, taken = 0;

	if (!dq)
		return NAN;
	t0 = now();
	for (i = 0; i < ops; i += 256) {
		for (k = 0; k < 256; k++)
			ws_deque_push(dq, (void *)(uintptr_t)(k + 1));
		if (mode == 0) {
			while (ws_deque_pop(dq, &x))
				;
		} else {
			double s0 = now();

			while (ws_deque_steal(dq, &x) == WS_STEAL_OK)
				;
			taken += now() - s0;
		}
	}
	t1 = now();
	ws_deque_destroy(dq);
	return (mode == 0 ? t1 - t0 : taken) * 1e9 / (double)ops;
}

static double deque_single_ns(long ops)
{
	struct ws_deque *dq = ws_deque_create(1024);
	void *x = NULL;
	long i;
	double t0, t1;

	if (!dq)
		return NAN;
	t0 = now();
	for (i = 0; i < ops; i++) {
		ws_deque_push(dq, (void *)(uintptr_t)(i + 1));
		ws_deque_pop(dq, &x);
	}
	t1 = now();
	ws_deque_destroy(dq);
	return (t1 - t0) * 1e9 / (double)ops;
}

/*
 * The floor under pop's cost: a store, a seq_cst fence and a load of
 * another location, the store-load order a Chase-Lev pop must pay for (on
 * x86 one locked instruction), timed alone in a loop of @ops.
 */
static double store_fence_load_ns(long ops)
{
	static _Atomic long b, t;
	long i, sum = 0;
	double t0, t1;

	t0 = now();
	for (i = 0; i < ops; i++) {
		atomic_store_explicit(&b, i, memory_order_relaxed);
		atomic_thread_fence(memory_order_seq_cst);
		sum += atomic_load_explicit(&t, memory_order_relaxed);
	}
	t1 = now();
	if (sum)
		return NAN;	/* t is never written: keeps the loads */
	return (t1 - t0) * 1e9 / (double)ops;
}

/* ---------------------------------------------------------------- calib */

/* How many CPUs this process really gets right now: the same CPU-bound loop
 * on 1 thread, then on N threads at once; capacity = N * t1 / tN (N when N
 * CPUs are free, less when other programs compete). Printed next to the
 * benchmarks so that speedups can be judged. */
static void *calib_loop(void *arg)
{
	uint64_t x = (uint64_t)(uintptr_t)arg;
	long i;

	for (i = 0; i < 60000000; i++)
		x = uts_hash(x);
	__asm__ __volatile__("" : : "r"(x));
	return NULL;
}

static double calib(int n, double *t1out, double *tnout)
{
	pthread_t th[64];
	double t0, t1, tn;
	int i;

	if (n > 64)
		n = 64;
	t0 = now();
	calib_loop((void *)1);
	t1 = now() - t0;
	t0 = now();
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, calib_loop, (void *)(uintptr_t)(i + 2)))
			return NAN;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	tn = now() - t0;
	*t1out = t1;
	*tnout = tn;
	return n * t1 / tn;
}

/* ---------------------------------------------------------------- main */

/* `wsbench [--json] handoff|lock ARGS`: a wsbench --json becomes the
 * subcommand's own. */
static int subcommand(int (*fn)(int, char **), int argc, char **argv, bool json)
{
	char **av = calloc((size_t)argc + 2, sizeof(*av));
	int n = 0, i, st;

	if (!av)
		return 2;
	av[n++] = argv[0];
	if (json)
		av[n++] = "--json";
	for (i = 1; i < argc; i++)
		av[n++] = argv[i];
	optind = 1;	/* the subcommand parses with getopt_long from the start */
	st = fn(n, av);
	free(av);
	return st;
}

int main(int argc, char **argv)
{
	const struct bench_rt *rt = &bench_wsched;
	const char *rt_name = "wsched", *bench = NULL, *bargs[MAX_ARGS];
	int workers = 0, repeat = 5, nargs = 0, i, r;
	bool json = false, all_ok = true;
	struct result res;
	double *secs;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!bench && a[0] == '-' && a[1] == '-') {
			if (!strcmp(a, "--help")) {
				fputs(usage_text, stdout);
				return 0;
			} else if (!strcmp(a, "--json")) {
				json = true;
			} else if (!strcmp(a, "--pin")) {
				bench_wsched_attr.pin = true;
			} else if (!strcmp(a, "--spin-ns") || !strcmp(a, "--yield-ns")) {
				if (i + 1 >= argc)
					die_usage("option %s needs a value", a);
				if (!strcmp(a, "--spin-ns"))
					bench_wsched_attr.spin_ns = (uint64_t)parse_long(a, argv[++i], 1, 1000000000);
				else
					bench_wsched_attr.yield_ns = (uint64_t)parse_long(a, argv[++i], 1, 1000000000);
			} else if (!strcmp(a, "--ready-file")) {
				if (i + 1 >= argc)
					die_usage("option %s needs a value", a);
				ready_file = argv[++i];
				if (!ready_file[0])
					die_usage("%s--ready-file needs a path", "");
			} else if (!strcmp(a, "--runtime") || !strcmp(a, "--workers") ||
				   !strcmp(a, "--repeat")) {
				if (i + 1 >= argc)
					die_usage("option %s needs a value", a);
				if (!strcmp(a, "--runtime"))
					rt_name = argv[++i];
				else if (!strcmp(a, "--workers"))
					workers = (int)parse_long("--workers", argv[++i], 1, 4096);
				else
					repeat = (int)parse_long("--repeat", argv[++i], 1, 1000);
			} else {
				die_usage("unknown option '%s'", a);
			}
		} else if (!bench) {
			bench = a;
			if (ready_file && (!strcmp(bench, "handoff") || !strcmp(bench, "lock")))
				die_usage("--ready-file does not apply to '%s'", bench);
			if (!strcmp(bench, "handoff"))
				return subcommand(bench_handoff_main, argc - i, argv + i, json);
			if (!strcmp(bench, "lock"))
				return subcommand(bench_lock_main, argc - i, argv + i, json);
		} else if (nargs < MAX_ARGS) {
			bargs[nargs++] = a;
		} else {
			die_usage("too many arguments starting at '%s'", a);
		}
	}
	if (!bench)
		die_usage("%sno benchmark given", "");
	if (!strcmp(rt_name, "wsched"))
		rt = &bench_wsched;
	else if (!strcmp(rt_name, "serial"))
		rt = &bench_serial;
	else if (!strcmp(rt_name, "omp") || !strcmp(rt_name, bench_omp.name))
		rt = &bench_omp;
	else if (!strcmp(rt_name, "tbb"))
		rt = &bench_tbb;
	else
		die_usage("unknown runtime '%s'; one of wsched, tbb, omp, serial", rt_name);
	if (!rt->fib) {
		fprintf(stderr, "wsbench: runtime '%s' was not built into this wsbench "
			"(its development package was missing at build time)\n", rt_name);
		return 2;
	}
	if (!workers)
		workers = rt == &bench_serial ? 1 : (int)bench_nr_cpus();
	if (rt == &bench_serial && workers != 1) {
		fprintf(stderr, "wsbench: the serial runtime runs with --workers 1 only\n");
		return 2;
	}

	gate_prepare();
	memset(&res, 0, sizeof(res));
	res.bench = bench;
	res.runtime = rt->name;
	res.workers = workers;
	res.repeat = repeat;
	secs = calloc((size_t)repeat, sizeof(*secs));
	if (!secs)
		return 2;

#define NEED_ARGS(max)								\
	do {									\
		if (nargs > (max))						\
			die_usage("too many arguments for this benchmark: '%s'",	\
				  bargs[(max) < MAX_ARGS ? (max) : MAX_ARGS - 1]);	\
	} while (0)

	if (!strcmp(bench, "calib")) {
		double t1 = 0, tn = 0, cap;

		NEED_ARGS(0);
		snprintf(res.args, sizeof(res.args), "%d", workers);
		gate_wait();
		run_begin();
		cap = calib(workers, &t1, &tn);
		run_end();
		secs[0] = tn;
		res.repeat = repeat = 1;
		res.ok = !isnan(cap);
		snprintf(res.extra, sizeof(res.extra),
			 ", \"cpu_capacity\": %.2f, \"seconds_1_thread\": %.6f", cap, t1);
		goto out;
	}
	if (!strcmp(bench, "deque")) {
		long ops;
		double pp[3] = { 0 }, st[3] = { 0 }, single[3] = { 0 }, sfl[3] = { 0 };

		NEED_ARGS(1);
		ops = nargs > 0 ? parse_long("OPS", bargs[0], 256, LONG_MAX / 2) : 10000000;
		if (rt != &bench_wsched) {
			fprintf(stderr, "wsbench: the deque benchmark measures libwsched only; "
				"use --runtime wsched\n");
			return 2;
		}
		snprintf(res.args, sizeof(res.args), "%ld", ops);
		gate_wait();
		for (r = 0; r < repeat; r++) {
			run_begin();
			pp[r % 3] = deque_ns(ops, 0);
			secs[r] = run_end();
			st[r % 3] = deque_ns(ops, 1);
			single[r % 3] = deque_single_ns(ops / 4);
			sfl[r % 3] = store_fence_load_ns(ops / 4);
		}
		{
			int n = repeat < 3 ? repeat : 3;
			double bpp = pp[0], bst = st[0], bsi = single[0], bsf = sfl[0];
			double fibser, fibws, spawns = 0;
			int fn = 30, k;
			long fa = 0, fb = 1, t;

			for (k = 1; k < n; k++) {
				bpp = fmin(bpp, pp[k]);
				bst = fmin(bst, st[k]);
				bsi = fmin(bsi, single[k]);
				bsf = fmin(bsf, sfl[k]);
			}
			/* spawn+sync: fib(30) on 1 wsched worker minus serial, per
			 * spawn (fib(n) spawns fib(n+1) - 1 times). */
			for (k = 0; k < fn + 1; k++) {
				t = fa + fb;
				fa = fb;
				fb = t;
			}
			spawns = (double)fa - 1;
			if (bench_serial.init(1) || bench_wsched.init(1))
				return 2;
			fibser = fibws = 1e9;
			for (k = 0; k < 3; k++) {
				double t0 = now();

				res.ok = bench_serial.fib(fn, 1) == fib_ref(fn);
				fibser = fmin(fibser, now() - t0);
				t0 = now();
				res.ok &= bench_wsched.fib(fn, 1) == fib_ref(fn);
				fibws = fmin(fibws, now() - t0);
			}
			bench_wsched.fini();
			snprintf(res.extra, sizeof(res.extra),
				 ", \"ns_push_pop\": %.2f, \"ns_push_pop_last\": %.2f, "
				 "\"ns_steal_uncontended\": %.2f, \"ns_spawn_sync\": %.2f, "
				 "\"ns_store_fence_load\": %.2f, "
				 "\"fib30_serial_s\": %.6f, \"fib30_wsched1_s\": %.6f",
				 bpp, bsi, bst, (fibws - fibser) * 1e9 / spawns, bsf,
				 fibser, fibws);
			res.workers = 1;
		}
		goto out;
	}

	if (rt->init(workers)) {
		fprintf(stderr, "wsbench: could not start runtime '%s' with %d workers\n", rt_name,
			workers);
		return 2;
	}
	res.ok = true;
	if (!strcmp(bench, "fib")) {
		int n, cut;

		NEED_ARGS(2);
		n = nargs > 0 ? (int)parse_long("N", bargs[0], 0, 60) : 35;
		cut = nargs > 1 ? (int)parse_long("CUTOFF", bargs[1], 1, 60) : 1;
		/* "N" alone when CUTOFF is the default, as before CUTOFF existed */
		if (nargs > 1)
			snprintf(res.args, sizeof(res.args), "%d %d", n, cut);
		else
			snprintf(res.args, sizeof(res.args), "%d", n);
		gate_wait();
		for (r = 0; r < repeat; r++) {
			long v;

			run_begin();
			v = rt->fib(n, cut);
			secs[r] = run_end();
			res.ok &= v == fib_ref(n);
		}
	} else if (!strcmp(bench, "nqueens")) {
		int n, cut;

		NEED_ARGS(2);
		n = nargs > 0 ? (int)parse_long("N", bargs[0], 1, 16) : 14;
		cut = nargs > 1 ? (int)parse_long("CUTOFF", bargs[1], 0, 16) : 4;
		snprintf(res.args, sizeof(res.args), "%d %d", n, cut);
		gate_wait();
		for (r = 0; r < repeat; r++) {
			long v;

			run_begin();
			v = rt->nqueens(n, cut);
			secs[r] = run_end();
			res.ok &= v == nq_table[n];
		}
	} else if (!strcmp(bench, "uts")) {
		struct uts_params u = { 0x2545f4914f6cdd1dull, 20000, 5, 40, 0 };
		double q = 0.198;
		long want;

		NEED_ARGS(4);
		if (nargs > 0)
			u.b0 = (int)parse_long("B0", bargs[0], 1, 1 << 24);
		if (nargs > 1)
			q = parse_double("Q", bargs[1], 0, 1);
		if (nargs > 2)
			u.m = (int)parse_long("M", bargs[2], 1, 16);
		if (nargs > 3)
			u.g = (int)parse_long("G", bargs[3], 0, 1 << 20);
		if (q * u.m >= 1) {
			fprintf(stderr, "wsbench: uts needs Q * M < 1 (a finite tree), not %g\n",
				q * u.m);
			return 2;
		}
		u.q_threshold = (uint64_t)(q * 18446744073709551615.0);
		snprintf(res.args, sizeof(res.args), "%d %g %d %d", u.b0, q, u.m, u.g);
		want = bench_serial.uts(&u);	/* reference, untimed */
		gate_wait();
		for (r = 0; r < repeat; r++) {
			long v;

			run_begin();
			v = rt->uts(&u);
			secs[r] = run_end();
			res.ok &= v == want;
		}
		snprintf(res.extra, sizeof(res.extra), ", \"nodes\": %ld", want);
	} else if (!strcmp(bench, "sort")) {
		long n, cut, k;
		int *in, *a, *tmp;
		uint64_t s = 1, sum_in = 0;

		NEED_ARGS(2);
		n = nargs > 0 ? parse_long("N", bargs[0], 1, 1L << 31) : 4000000;
		cut = nargs > 1 ? parse_long("CUTOFF", bargs[1], 1, LONG_MAX) : 8192;
		snprintf(res.args, sizeof(res.args), "%ld %ld", n, cut);
		in = malloc(sizeof(int) * (size_t)n);
		a = malloc(sizeof(int) * (size_t)n);
		tmp = malloc(sizeof(int) * (size_t)n);
		if (!in || !a || !tmp) {
			fprintf(stderr, "wsbench: out of memory for sort of %ld ints\n", n);
			return 2;
		}
		for (k = 0; k < n; k++) {
			s = uts_hash(s);
			in[k] = (int)(s >> 33);
			sum_in += (uint64_t)in[k];
		}
		gate_wait();
		for (r = 0; r < repeat; r++) {
			uint64_t sum = 0;

			memcpy(a, in, sizeof(int) * (size_t)n);
			run_begin();
			rt->sort(a, tmp, n, cut);
			secs[r] = run_end();
			for (k = 0; k < n; k++) {
				sum += (uint64_t)a[k];
				if (k && a[k - 1] > a[k])
					res.ok = false;
			}
			res.ok &= sum == sum_in;
		}
		free(in);
		free(a);
		free(tmp);
	} else if (!strcmp(bench, "matmul")) {
		int n, grain, k;
		double *A, *B, *C;
		uint64_t s = 3;

		NEED_ARGS(2);
		n = nargs > 0 ? (int)parse_long("N", bargs[0], 1, 16384) : 768;
		grain = nargs > 1 ? (int)parse_long("GRAIN", bargs[1], 1, 16384) : 8;
		snprintf(res.args, sizeof(res.args), "%d %d", n, grain);
		A = malloc(sizeof(double) * (size_t)n * n);
		B = malloc(sizeof(double) * (size_t)n * n);
		C = malloc(sizeof(double) * (size_t)n * n);
		if (!A || !B || !C) {
			fprintf(stderr, "wsbench: out of memory for %dx%d matrices\n", n, n);
			return 2;
		}
		for (k = 0; k < n * n; k++) {
			A[k] = (double)((s = uts_hash(s)) >> 40) / (1 << 24) - 0.5;
			B[k] = (double)((s = uts_hash(s)) >> 40) / (1 << 24) - 0.5;
		}
		gate_wait();
		for (r = 0; r < repeat; r++) {
			memset(C, 0xff, sizeof(double) * (size_t)n * n);	/* NaNs */
			run_begin();
			rt->matmul(A, B, C, n, grain);
			secs[r] = run_end();
			for (k = 0; k < 32; k++) {
				int y = (int)(uts_hash((uint64_t)k * 7 + 1) % (uint64_t)n);
				int x = (int)(uts_hash((uint64_t)k * 13 + 5) % (uint64_t)n), l;
				double want = 0;

				for (l = 0; l < n; l++)
					want += A[(size_t)y * n + l] * B[(size_t)l * n + x];
				if (!(fabs(want - C[(size_t)y * n + x]) <= 1e-9 * (1 + fabs(want))))
					res.ok = false;
			}
		}
		free(A);
		free(B);
		free(C);
	} else {
		die_usage("unknown benchmark '%s'; one of fib, nqueens, uts, sort, matmul, deque, calib",
			  bench);
	}
	if (rt->stats_json) {
		size_t l = strlen(res.extra);

		rt->stats_json(res.extra + l, (unsigned)(sizeof(res.extra) - l));
	}
	rt->fini();
out:
	qsort(secs, (size_t)repeat, sizeof(*secs), cmp_double);
	res.min = secs[0];
	res.median = repeat % 2 ? secs[repeat / 2] : (secs[repeat / 2 - 1] + secs[repeat / 2]) / 2;
	res.cpu_seconds = cpu_total;
	res.csw_vol = csw_vol_total;
	res.csw_invol = csw_invol_total;
	res.p_a = wall_total > 0 ? cpu_total / wall_total : 0;
	/* /proc/stat counts idle time in USER_HZ ticks (10 ms): over a timed
	 * part that short the difference is off by up to a tick per CPU
	 * either way (-46 was seen for a 0.2 ms run), so keep it within what
	 * it can be, 0 to every CPU. */
	res.sys_busy_cpus = wall_total > 0 ? busy_total / wall_total : 0;
	if (!isnan(res.sys_busy_cpus))
		res.sys_busy_cpus = fmin(fmax(res.sys_busy_cpus, 0.0),
					 (double)sysconf(_SC_NPROCESSORS_CONF));
	emit(&res, json);
	all_ok &= res.ok;
	free(secs);
	return all_ok ? 0 : 1;
}
