// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * preload_cost: the cost of an uncontended lock/unlock pair, as a program
 * not built against libwsched pays it. Run plain and under
 * libwsched-preload.so (wsbench-all does both, with no loader), the
 * difference is what the interposition costs. One JSON line per lock kind:
 * the best of ROUNDS rounds of ITERS pairs, in ns per pair. The default,
 * many short rounds (300 of 200000 pairs, about 2 ms each), lets the best
 * round miss the preemptions and interrupts of a shared machine.
 *
 * usage: preload_cost [ITERS [ROUNDS]]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;

static double best(const char *kind, long iters, int rounds)
{
	double b = 1e30;
	int r;

	for (r = 0; r < rounds; r++) {
		double t0 = now_ns(), t;
		long i;

		switch (kind[0]) {
		case 'm':
			for (i = 0; i < iters; i++) {
				pthread_mutex_lock(&mutex);
				pthread_mutex_unlock(&mutex);
			}
			break;
		case 's':
			for (i = 0; i < iters; i++) {
				pthread_spin_lock(&spin);
				pthread_spin_unlock(&spin);
			}
			break;
		default:
			for (i = 0; i < iters; i++) {
				pthread_rwlock_wrlock(&rwlock);
				pthread_rwlock_unlock(&rwlock);
			}
			break;
		}
		t = (now_ns() - t0) / iters;
		if (t < b)
			b = t;
	}
	return b;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = { "mutex", "spin", "rwlock" };
	long iters = argc > 1 ? atol(argv[1]) : 200000;
	int rounds = argc > 2 ? atoi(argv[2]) : 300;
	int preload = dlsym(RTLD_DEFAULT, "wsched_preload_slot") != NULL;
	unsigned i;

	if (iters <= 0 || rounds <= 0) {
		fprintf(stderr, "preload_cost: ITERS and ROUNDS must be positive\n");
		return 2;
	}
	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	for (i = 0; i < 3; i++)
		printf("{\"bench\":\"preload_cost\",\"lock\":\"%s\",\"preload\":%s,"
		       "\"iters\":%ld,\"rounds\":%d,\"ns_per_pair\":%.3f}\n",
		       kinds[i], preload ? "true" : "false", iters, rounds,
		       best(kinds[i], iters, rounds));
	return 0;
}
