// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench handoff: how long it takes one thread to give its CPU to another,
 * with WSCHED_IOC_YIELD_TO (wsched.ko) and with sched_yield().
 *
 * Two threads, ping and pong, are pinned to one CPU and pass a turn back
 * and forth. The thread whose turn it is stamps the time, hands the turn
 * over and then yields (to its peer with YIELD_TO, or to whoever the
 * scheduler picks with sched_yield) until the turn comes back. The peer,
 * returning from its own yield call, sees its turn and records now - stamp:
 * one handoff time, which covers the yield call, the pick, the context
 * switch and the peer's return to user space. --noise N adds N threads
 * spinning on the same CPU: the case directed yield exists for, where a
 * plain yield may hand the CPU to a spinner for a whole slice.
 *
 * Output: one line per (method, noise) with the median and percentiles of
 * the handoff time, the yield calls per handoff and, for YIELD_TO, the
 * share of calls the module reported as handed over; --json prints the
 * same as JSON lines. The scheduler is read from /sys/kernel/sched_ext.
 *
 * `wsbench [--json] handoff [OPTIONS]` runs it (wsbench.c hands the
 * arguments after "handoff" to bench_handoff_main); kmod/bench/run-handoff.sh
 * (make bench-sched) runs it under EEVDF and, when built, under scx_wsched.
 * Results and their meaning: Documentation/kmod.md.
 *
 * Exit status: 0 done, 1 a method could not run (no /dev/wsched, pinning
 * failed), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <wsched/wsched_ioctl.h>

#include "bench.h"

#define MAX_NOISE 16

static const char usage_fmt[] =
"Usage: wsbench [--json] handoff [--method yield_to|sched_yield|both]\n"
"          [--noise N[,N...]] [--samples N] [--cpu N] [--max-seconds S]\n"
"          [--fallback] [--json] [--help]\n"
"\n"
"Measure the time one thread takes to hand its CPU to another pinned to the\n"
"same CPU: WSCHED_IOC_YIELD_TO on /dev/wsched (load build/kmod/wsched.ko)\n"
"versus sched_yield(). The method is described at the top of\n"
"userspace/bench/handoff.c; results are in Documentation/kmod.md.\n"
"\n"
"  --method M        yield_to, sched_yield or both (default both)\n"
"  --noise LIST      spinning threads sharing the CPU, a comma list of counts\n"
"                    0..%d (default 0,2)\n"
"  --samples N       handoffs measured per run, after 200 warm-up ones\n"
"                    (default 5000)\n"
"  --cpu N           the CPU to pin to (default 1, or 0 on one CPU)\n"
"  --max-seconds S   stop a run after S seconds with what it has (default 10)\n"
"  --fallback        YIELD_TO with WSCHED_YIELD_TO_FALLBACK: a declined call\n"
"                    yields like sched_yield() (method yield_to+fb)\n"
"  --json            print JSON lines instead of a table\n"
"\n"
"Exit status: 0 done, 1 a method could not run, 2 bad usage.\n";

enum method { M_YIELD_TO, M_SCHED_YIELD };
static const char *const method_names[] = { "yield_to", "sched_yield" };
static bool fallback;

struct run {
	enum method method;
	int cpu, noise, fd;
	long warmup, samples;
	double max_seconds;

	atomic_int turn;		/* 0: ping's turn, 1: pong's */
	atomic_int stop;
	atomic_int tids[2];
	_Atomic uint64_t stamp;	/* when the current turn was handed over */
	long handoffs;			/* written only by the thread holding the turn */
	uint64_t *lat;
	uint64_t deadline;
	atomic_long calls, handed_over;
};

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

static void yield_once(struct run *r, int peer)
{
	if (r->method == M_YIELD_TO) {
		struct wsched_yield_to a = {
			.version = WSCHED_ABI_VERSION,
			.tid = (uint32_t)atomic_load_explicit(&r->tids[peer], memory_order_relaxed),
			.flags = fallback ? WSCHED_YIELD_TO_FALLBACK : 0,
		};

		if (ioctl(r->fd, WSCHED_IOC_YIELD_TO, &a) == 1)
			atomic_fetch_add_explicit(&r->handed_over, 1, memory_order_relaxed);
	} else {
		sched_yield();
	}
	atomic_fetch_add_explicit(&r->calls, 1, memory_order_relaxed);
}

struct player {
	struct run *r;
	int me;
};

static void *player_main(void *arg)
{
	struct player *pl = arg;
	struct run *r = pl->r;
	int me = pl->me, peer = !me;

	if (pin(r->cpu))
		return (void *)1;
	atomic_store(&r->tids[me], (int)syscall(SYS_gettid));
	while (!atomic_load(&r->tids[peer]))
		sched_yield();

	for (;;) {
		uint64_t t;

		/* Acquire pairs with the peer's release store of turn: stamp is visible. */
		while (atomic_load_explicit(&r->turn, memory_order_acquire) != me) {
			if (atomic_load_explicit(&r->stop, memory_order_relaxed))
				return NULL;
			yield_once(r, peer);
		}
		t = bench_now_ns();
		if (r->handoffs > 0) {
			long i = r->handoffs - 1 - r->warmup;

			if (i >= 0)
				r->lat[i] = t - atomic_load_explicit(&r->stamp, memory_order_relaxed);
			if (i + 1 >= r->samples || t > r->deadline) {
				atomic_store(&r->stop, 1);
				atomic_store_explicit(&r->turn, peer, memory_order_release);
				return NULL;
			}
		}
		r->handoffs++;
		atomic_store_explicit(&r->stamp, bench_now_ns(), memory_order_relaxed);
		/* Release: the peer sees stamp and handoffs once it sees its turn. */
		atomic_store_explicit(&r->turn, peer, memory_order_release);
	}
}

static void *noise_main(void *arg)
{
	struct run *r = arg;

	if (pin(r->cpu))
		return (void *)1;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed))
		;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Runs one measurement and prints its line; 0, or -1 when it could not run. */
static int measure(struct run *r, bool json, const char *sched)
{
	pthread_t players[2], noise[MAX_NOISE];
	struct player pl[2] = { { r, 0 }, { r, 1 } };
	void *rets[2];
	uint64_t t0, sum = 0;
	long n, i;
	const char *method = r->method == M_YIELD_TO && fallback ? "yield_to+fb" : method_names[r->method];
	double secs;

	r->lat = calloc(r->samples, sizeof(*r->lat));
	if (!r->lat)
		return -1;
	t0 = bench_now_ns();
	r->deadline = t0 + (uint64_t)(r->max_seconds * 1e9);
	for (i = 0; i < r->noise; i++)
		pthread_create(&noise[i], NULL, noise_main, r);
	for (i = 0; i < 2; i++)
		pthread_create(&players[i], NULL, player_main, &pl[i]);
	for (i = 0; i < 2; i++)
		pthread_join(players[i], &rets[i]);
	atomic_store(&r->stop, 1);
	for (i = 0; i < r->noise; i++)
		pthread_join(noise[i], NULL);
	secs = (bench_now_ns() - t0) / 1e9;
	if (rets[0] || rets[1]) {
		fprintf(stderr, "wsbench handoff: cannot pin to CPU %d\n", r->cpu);
		free(r->lat);
		return -1;
	}

	n = r->handoffs - 1 - r->warmup;
	if (n > r->samples)
		n = r->samples;
	if (n < 1) {
		fprintf(stderr, "wsbench handoff: %s with %d noise threads: no sample within %.0f s\n",
			method, r->noise, r->max_seconds);
		free(r->lat);
		return -1;
	}
	qsort(r->lat, n, sizeof(*r->lat), cmp_u64);
	for (i = 0; i < n; i++)
		sum += r->lat[i];

	{
		long calls = atomic_load(&r->calls), ho = atomic_load(&r->handed_over);
		double per = r->handoffs ? (double)calls / r->handoffs : 0;
		double ho_pct = calls ? 100.0 * ho / calls : 0;
		uint64_t p10 = r->lat[n / 10], p50 = r->lat[n / 2], p90 = r->lat[n * 9 / 10];
		uint64_t p99 = r->lat[n * 99 / 100];

		if (json)
			printf("{\"bench\": \"handoff\", \"sched\": \"%s\", \"method\": \"%s\", "
			       "\"cpu\": %d, \"noise\": %d, \"samples\": %ld, \"median_ns\": %llu, "
			       "\"p10_ns\": %llu, \"p90_ns\": %llu, \"p99_ns\": %llu, \"mean_ns\": %.0f, "
			       "\"calls_per_handoff\": %.2f, \"handed_over_pct\": %.1f, "
			       "\"seconds\": %.2f}\n",
			       sched, method, r->cpu, r->noise, n,
			       (unsigned long long)p50, (unsigned long long)p10,
			       (unsigned long long)p90, (unsigned long long)p99, (double)sum / n,
			       per, r->method == M_YIELD_TO ? ho_pct : 0.0, secs);
		else if (r->method == M_YIELD_TO)
			printf("%-12s %-11s %5d %7ld %10.1f %10.1f %10.1f %10.1f %8.2f %7.1f%%\n",
			       sched, method, r->noise, n, p50 / 1e3, p10 / 1e3,
			       p90 / 1e3, p99 / 1e3, per, ho_pct);
		else
			printf("%-12s %-11s %5d %7ld %10.1f %10.1f %10.1f %10.1f %8.2f %8s\n",
			       sched, method, r->noise, n, p50 / 1e3, p10 / 1e3,
			       p90 / 1e3, p99 / 1e3, per, "-");
		fflush(stdout);
	}
	free(r->lat);
	return 0;
}

static long parse_long(const char *s, long lo, long hi, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "wsbench handoff: %s must be %ld..%ld, not '%s'\n", what, lo, hi, s);
		exit(2);
	}
	return v;
}

int bench_handoff_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "method", required_argument, NULL, 'm' },
		{ "noise", required_argument, NULL, 'n' },
		{ "samples", required_argument, NULL, 's' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "max-seconds", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "fallback", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int noise[MAX_NOISE + 1] = { 0, 2 }, nnoise = 2;
	bool want[2] = { true, true }, json = false;
	long samples = 5000, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int cpu = ncpu > 1 ? 1 : 0, fd = -1, opt, status = 0, i, m;
	double max_seconds = 10;
	char sched[80];

	while ((opt = getopt_long(argc, argv, "m:n:s:c:t:jfh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (!strcmp(optarg, "both")) {
				want[0] = want[1] = true;
			} else if (!strcmp(optarg, "yield_to")) {
				want[0] = true;
				want[1] = false;
			} else if (!strcmp(optarg, "sched_yield")) {
				want[0] = false;
				want[1] = true;
			} else {
				fprintf(stderr, "wsbench handoff: --method is yield_to, sched_yield or both\n");
				return 2;
			}
			break;
		case 'n': {
			char *list = strdup(optarg), *tok, *save = NULL;

			nnoise = 0;
			for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				if (nnoise > MAX_NOISE) {
					fprintf(stderr, "wsbench handoff: at most %d --noise values\n", MAX_NOISE + 1);
					return 2;
				}
				noise[nnoise++] = parse_long(tok, 0, MAX_NOISE, "--noise");
			}
			free(list);
			if (!nnoise) {
				fprintf(stderr, "wsbench handoff: --noise needs a value\n");
				return 2;
			}
			break;
		}
		case 's':
			samples = parse_long(optarg, 1, 10000000, "--samples");
			break;
		case 'c':
			cpu = parse_long(optarg, 0, ncpu - 1, "--cpu");
			break;
		case 't':
			max_seconds = parse_long(optarg, 1, 3600, "--max-seconds");
			break;
		case 'j':
			json = true;
			break;
		case 'f':
			fallback = true;
			break;
		case 'h':
			printf(usage_fmt, MAX_NOISE);
			return 0;
		default:
			fprintf(stderr, "wsbench handoff: bad usage (see --help)\n");
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wsbench handoff: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	if (want[M_YIELD_TO]) {
		struct wsched_version v;

		fd = open(WSCHED_DEV_PATH, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "wsbench handoff: %s: %s (load build/kmod/wsched.ko); "
				"measuring sched_yield only\n", WSCHED_DEV_PATH, strerror(errno));
			want[M_YIELD_TO] = false;
			status = 1;
		} else if (ioctl(fd, WSCHED_IOC_VERSION, &v) || v.abi_version != WSCHED_ABI_VERSION) {
			fprintf(stderr, "wsbench handoff: /dev/wsched speaks ABI %u, not %d\n",
				v.abi_version, WSCHED_ABI_VERSION);
			want[M_YIELD_TO] = false;
			status = 1;
		}
	}

	bench_sched_name(sched, sizeof(sched));
	if (!json)
		printf("%-12s %-11s %5s %7s %10s %10s %10s %10s %8s %8s\n", "sched", "method", "noise",
		       "samples", "median_us", "p10_us", "p90_us", "p99_us", "calls/ho", "handed");
	for (i = 0; i < nnoise; i++) {
		for (m = 0; m < 2; m++) {
			struct run *r;

			if (!want[m])
				continue;
			r = calloc(1, sizeof(*r));
			r->method = m;
			r->cpu = cpu;
			r->noise = noise[i];
			r->fd = fd;
			r->warmup = 200;
			r->samples = samples;
			r->max_seconds = max_seconds;
			if (measure(r, json, sched))
				status = 1;
			free(r);
		}
	}
	if (fd >= 0)
		close(fd);
	return status;
}
