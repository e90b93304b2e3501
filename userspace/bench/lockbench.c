// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsbench lock: throughput and wait times of libwsched's locks under
 * contention, with and without scheduler hints.
 *
 * T threads (default 2 x the CPUs available) loop: take the lock, work
 * --cs-ns inside (a time-calibrated spin, about 1 us), release, work
 * --out-ns outside (a few us). Each acquisition's wait is recorded.
 * A section whose wall time exceeds its work by more than --preempt-ns
 * (default 50 us: far more than an interrupt) had its holder descheduled
 * inside: it is counted as a lock-holder preemption. This needs no
 * scheduler support, so EEVDF and scx_wsched are measured the same way.
 *
 * --hints on registers every thread with scx_wsched (ws_thread_register:
 * the locks then mark their holders in the hint slots), off keeps them
 * unregistered (private slots, nothing the scheduler can see); auto (the
 * default) registers when scx_wsched serves hints. The JSON line reports
 * what happened: "hints" is true only if every thread registered.
 *
 * Output: one line (or JSON object with --json) per lock kind with bench,
 * sched, hints, lock, threads, vcpus, ops_per_sec, p50_wait_ns,
 * p99_wait_ns, lock_holder_preemptions, seconds.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wsched/lock.h"
#include "wsched/thread.h"
#include "bench.h"

#define MAX_THREADS	1024
#define MAX_SAMPLES	(1 << 18)	/* waits kept per thread (a uniform sample) */

enum kind { K_SPIN, K_TICKET, K_MUTEX, NR_KINDS };
static const char *const kind_names[NR_KINDS] = { "spin", "ticket", "mutex" };

struct shared {
	enum kind kind;
	ws_spinlock_t spin;
	ws_ticketlock_t ticket;
	ws_mutex_t mutex;
	uint64_t cs_ns, out_ns, preempt_ns;
	int hints;			/* -1 auto, 0 off, 1 on */
	atomic_int registered;		/* threads that registered */
	atomic_int ready;
	atomic_int go;
	atomic_int stop;
	uint64_t counter;		/* protected by the lock: checks exclusion */
};

struct thr {
	struct shared *sh;
	pthread_t tid;
	uint64_t ops, preempted, nsamples;
	uint64_t *waits;
	uint64_t rng;
	int err;
};

static inline void spin_until(uint64_t end)
{
	while (bench_now_ns() < end)
		;
}

static void lock(struct shared *sh)
{
	switch (sh->kind) {
	case K_SPIN:
		ws_spinlock_lock(&sh->spin);
		break;
	case K_TICKET:
		ws_ticketlock_lock(&sh->ticket);
		break;
	default:
		ws_mutex_lock(&sh->mutex);
	}
}

static void unlock(struct shared *sh)
{
	switch (sh->kind) {
	case K_SPIN:
		ws_spinlock_unlock(&sh->spin);
		break;
	case K_TICKET:
		ws_ticketlock_unlock(&sh->ticket);
		break;
	default:
		ws_mutex_unlock(&sh->mutex);
	}
}

static void *thr_main(void *arg)
{
	struct thr *t = arg;
	struct shared *sh = t->sh;

	if (sh->hints != 0 && ws_thread_register() == 0)
		atomic_fetch_add(&sh->registered, 1);
	atomic_fetch_add(&sh->ready, 1);
	while (!atomic_load_explicit(&sh->go, memory_order_acquire))
		sched_yield();
	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		uint64_t t0 = bench_now_ns(), t1, t2, w;

		lock(sh);
		t1 = bench_now_ns();
		sh->counter++;
		spin_until(t1 + sh->cs_ns);
		t2 = bench_now_ns();
		unlock(sh);
		if (t2 - t1 > sh->cs_ns + sh->preempt_ns)
			t->preempted++;
		w = t1 - t0;
		/* reservoir sample of the waits */
		if (t->nsamples < MAX_SAMPLES) {
			t->waits[t->nsamples] = w;
		} else {
			uint64_t x = t->rng;

			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			t->rng = x;
			if (x % (t->nsamples + 1) < MAX_SAMPLES)
				t->waits[x % MAX_SAMPLES] = w;
		}
		t->nsamples++;
		t->ops++;
		spin_until(t2 + sh->out_ns);
	}
	ws_thread_unregister();
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int run_one(enum kind k, int nthreads, double seconds, struct shared *proto, bool json)
{
	struct shared *sh = calloc(1, sizeof(*sh));
	struct thr *th = calloc((size_t)nthreads, sizeof(*th));
	uint64_t ops = 0, preempted = 0, n = 0, *all, t0, t1;
	char sched[64];
	int i, err = 0, started = 0;
	double secs, p50, p99;
	bool hints;

	if (!sh || !th) {
		fprintf(stderr, "wsbench lock: out of memory\n");
		return 2;
	}
	*sh = *proto;
	sh->kind = k;
	for (i = 0; i < nthreads; i++) {
		th[i].sh = sh;
		th[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		th[i].waits = malloc(sizeof(uint64_t) * MAX_SAMPLES);
		if (!th[i].waits ||
		    (err = pthread_create(&th[i].tid, NULL, thr_main, &th[i])) != 0) {
			fprintf(stderr, "wsbench lock: cannot start thread %d: %s\n", i,
				strerror(err ? err : ENOMEM));
			err = 2;
			break;
		}
		started++;
	}
	while (atomic_load(&sh->ready) < started)
		usleep(1000);
	t0 = bench_now_ns();
	atomic_store_explicit(&sh->go, 1, memory_order_release);
	if (!err)
		usleep((useconds_t)(seconds * 1e6));
	atomic_store(&sh->stop, 1);
	for (i = 0; i < started; i++)
		pthread_join(th[i].tid, NULL);
	t1 = bench_now_ns();
	hints = started > 0 && atomic_load(&sh->registered) == started;
	for (i = 0; i < started; i++) {
		ops += th[i].ops;
		preempted += th[i].preempted;
		n += th[i].nsamples < MAX_SAMPLES ? th[i].nsamples : MAX_SAMPLES;
	}
	all = malloc(sizeof(uint64_t) * (n ? n : 1));
	if (!all) {
		fprintf(stderr, "wsbench lock: out of memory\n");
		return 2;
	}
	n = 0;
	for (i = 0; i < started; i++) {
		uint64_t m = th[i].nsamples < MAX_SAMPLES ? th[i].nsamples : MAX_SAMPLES;

		memcpy(all + n, th[i].waits, m * sizeof(uint64_t));
		n += m;
		free(th[i].waits);
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	p50 = n ? (double)all[n / 2] : 0;
	p99 = n ? (double)all[n * 99 / 100] : 0;
	secs = (t1 - t0) / 1e9;
	bench_sched_name(sched, sizeof(sched));
	if (sh->counter != ops) {
		fprintf(stderr, "wsbench lock: %s lost updates: counter %llu, acquisitions %llu\n",
			kind_names[k], (unsigned long long)sh->counter, (unsigned long long)ops);
		err = 1;
	}
	if (json)
		printf("{\"bench\": \"lock\", \"sched\": \"%s\", \"hints\": %s, \"lock\": \"%s\", "
		       "\"threads\": %d, \"vcpus\": %d, \"ops_per_sec\": %.0f, "
		       "\"p50_wait_ns\": %.0f, \"p99_wait_ns\": %.0f, "
		       "\"lock_holder_preemptions\": %llu, \"cs_ns\": %llu, \"out_ns\": %llu, "
		       "\"seconds\": %.3f, \"result_ok\": %s}\n",
		       sched, hints ? "true" : "false", kind_names[k], started, (int)bench_nr_cpus(),
		       ops / secs, p50, p99, (unsigned long long)preempted,
		       (unsigned long long)sh->cs_ns, (unsigned long long)sh->out_ns, secs,
		       err ? "false" : "true");
	else
		printf("%-10s %-5s %-6s %7d %5d %12.0f %12.0f %12.0f %10llu\n", sched,
		       hints ? "on" : "off", kind_names[k], started, (int)bench_nr_cpus(),
		       ops / secs, p50, p99, (unsigned long long)preempted);
	fflush(stdout);
	free(all);
	free(th);
	free(sh);
	return err;
}

static const char usage_text[] =
	"usage: wsbench [--json] lock [--lock spin|ticket|mutex|all] [--threads N]\n"
	"                    [--seconds S] [--cs-ns N] [--out-ns N] [--preempt-ns N]\n"
	"                    [--hints auto|on|off] [--json]\n"
	"Threads (default 2 x available CPUs) contend on one lock: --cs-ns of work\n"
	"inside (default 1000), --out-ns outside (default 3000), for S seconds\n"
	"(default 2). A section stretched by more than --preempt-ns (default\n"
	"50000) counts as a lock-holder preemption. See userspace/bench/lockbench.c.\n";

static long lparse(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "wsbench lock: %s must be an integer in [%ld, %ld], not '%s'\n",
			what, lo, hi, s);
		exit(2);
	}
	return v;
}

int bench_lock_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "lock", required_argument, NULL, 'l' },
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "cs-ns", required_argument, NULL, 'c' },
		{ "out-ns", required_argument, NULL, 'o' },
		{ "preempt-ns", required_argument, NULL, 'p' },
		{ "hints", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct shared proto = { .cs_ns = 1000, .out_ns = 3000, .preempt_ns = 50000, .hints = -1 };
	int threads = 2 * (int)bench_nr_cpus(), opt, k, first = 0, last = NR_KINDS - 1, st = 0;
	double seconds = 2;
	bool json = false;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'l':
			if (!strcmp(optarg, "all"))
				break;
			for (k = 0; k < NR_KINDS && strcmp(optarg, kind_names[k]); k++)
				;
			if (k == NR_KINDS) {
				fprintf(stderr, "wsbench lock: --lock is spin, ticket, mutex or all, "
					"not '%s'\n", optarg);
				return 2;
			}
			first = last = k;
			break;
		case 't':
			threads = (int)lparse("--threads", optarg, 1, MAX_THREADS);
			break;
		case 's':
			seconds = (double)lparse("--seconds", optarg, 1, 3600);
			break;
		case 'c':
			proto.cs_ns = (uint64_t)lparse("--cs-ns", optarg, 0, 100000000);
			break;
		case 'o':
			proto.out_ns = (uint64_t)lparse("--out-ns", optarg, 0, 100000000);
			break;
		case 'p':
			proto.preempt_ns = (uint64_t)lparse("--preempt-ns", optarg, 1000, 1000000000);
			break;
		case 'H':
			if (!strcmp(optarg, "auto")) {
				proto.hints = -1;
			} else if (!strcmp(optarg, "on")) {
				proto.hints = 1;
			} else if (!strcmp(optarg, "off")) {
				proto.hints = 0;
			} else {
				fprintf(stderr, "wsbench lock: --hints is auto, on or off, not '%s'\n",
					optarg);
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fprintf(stderr, "wsbench lock: unknown option or missing value: '%s'\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "wsbench lock: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (proto.hints == 1 && ws_thread_register()) {
		fprintf(stderr, "wsbench lock: --hints on, but scx_wsched serves no hints here\n");
		return 1;
	}
	ws_thread_unregister();
	if (!json)
		printf("%-10s %-5s %-6s %7s %5s %12s %12s %12s %10s\n", "sched", "hints", "lock",
		       "threads", "vcpus", "ops_per_sec", "p50_wait_ns", "p99_wait_ns",
		       "preempted");
	for (k = first; k <= last; k++)
		st |= run_one((enum kind)k, threads, seconds, &proto, json);
	return st;
}
