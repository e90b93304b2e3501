// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * lockdemo: the lock-heavy program of `make run` (scripts/demo), written
 * the ordinary way: plain pthreads and one pthread_spinlock_t, nothing of
 * libwsched. Under wsched-run its lock becomes a critical section the
 * scheduler sees; run plainly, it is what any such program is.
 *
 * THREADS threads loop for SECONDS: take the lock, stay CS_NS inside
 * (default 1000), release, stay OUT_NS outside (default 3000). The times
 * are read from the clock, not counted in loop iterations, so a section
 * whose holder is preempted ends as soon as the holder runs again, and a
 * busy host does not change what one section costs. Output: one JSON line
 * with the lock operations (sections) per second of all threads.
 *
 * usage: lockdemo THREADS SECONDS [CS_NS [OUT_NS]]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_spinlock_t lock;
static uint64_t in_lock;		/* sections done: protected by lock */
static uint64_t cs_ns, out_ns;
static pthread_barrier_t start;
static atomic_int stop;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void stay(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void *worker(void *arg)
{
	uint64_t *ops = arg;

	pthread_barrier_wait(&start);
	/* relaxed: stop carries no data; pthread_join orders the results */
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_spin_lock(&lock);
		in_lock++;
		stay(cs_ns);
		pthread_spin_unlock(&lock);
		stay(out_ns);
		(*ops)++;
	}
	return NULL;
}

static long arg(const char *what, const char *s, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < min || v > max) {
		fprintf(stderr, "lockdemo: %s must be an integer from %ld to %ld, not '%s'\n",
			what, min, max, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t t0, t1, sum = 0;
	long threads, seconds, i;
	pthread_t *tids;
	uint64_t *ops;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: lockdemo THREADS SECONDS [CS_NS [OUT_NS]]\n");
		return 2;
	}
	threads = arg("THREADS", argv[1], 1, 4096);
	seconds = arg("SECONDS", argv[2], 1, 3600);
	cs_ns = argc > 3 ? (uint64_t)arg("CS_NS", argv[3], 0, 100000000) : 1000;
	out_ns = argc > 4 ? (uint64_t)arg("OUT_NS", argv[4], 0, 100000000) : 3000;
	tids = calloc(threads, sizeof(*tids));
	ops = calloc(threads * 8, sizeof(*ops));	/* a cache line each */
	if (!tids || !ops || pthread_spin_init(&lock, PTHREAD_PROCESS_PRIVATE) ||
	    pthread_barrier_init(&start, NULL, (unsigned int)threads + 1)) {
		fprintf(stderr, "lockdemo: out of memory\n");
		return 1;
	}
	for (i = 0; i < threads; i++) {
		int err = pthread_create(&tids[i], NULL, worker, &ops[i * 8]);

		if (err) {
			fprintf(stderr, "lockdemo: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	t0 = now_ns();
	sleep((unsigned int)seconds);
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t1 = now_ns();
	for (i = 0; i < threads; i++)
		sum += ops[i * 8];
	if (sum != in_lock) {
		fprintf(stderr, "lockdemo: the lock failed: %llu sections counted inside, %llu outside\n",
			(unsigned long long)in_lock, (unsigned long long)sum);
		return 1;
	}
	printf("{\"bench\":\"lockdemo\",\"threads\":%ld,\"seconds\":%.3f,\"ops\":%llu,"
	       "\"ops_per_sec\":%.0f,\"cs_ns\":%llu,\"out_ns\":%llu}\n",
	       threads, (t1 - t0) / 1e9, (unsigned long long)sum, sum / ((t1 - t0) / 1e9),
	       (unsigned long long)cs_ns, (unsigned long long)out_ns);
	return 0;
}
