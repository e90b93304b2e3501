// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * unmod: lock-heavy and work-stealing programs written the ordinary way,
 * without libwsched, for bench-coop's "unmod" part (wsched-run's effect on
 * programs nobody rewrote). Each runs THREADS threads for SECONDS and
 * prints one JSON line with its throughput.
 *
 *   spin    pthread_spin_lock around a short critical section
 *   mutex   std::mutex (futex based) around the same section
 *   omp     #pragma omp critical around the same section (libgomp)
 *   tbb     oneTBB task_group: parallel fib(FIB_N) again and again
 *
 * A lock "op" is one critical section (about CS_NS of work on shared data)
 * followed by about OUT_NS of private work; a tbb "op" is one fib(FIB_N).
 * The work is counted in loop iterations calibrated once at start, so it
 * does not depend on the clock while running.
 *
 * usage: unmod spin|mutex|omp|tbb THREADS SECONDS [CS_NS [OUT_NS]]
 */
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <omp.h>
#include <pthread.h>

#ifndef UNMOD_NO_TBB
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif

using clk = std::chrono::steady_clock;

static std::atomic<bool> stop_flag{false};
static volatile unsigned long shared_data[64];
static unsigned long iters_per_us = 100;

/* About @n iterations of work on @d (volatile: not optimised away). */
static inline void work(volatile unsigned long *d, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		d[i & 7]++;
}

static void calibrate(void)
{
	volatile unsigned long local[8] = {};
	unsigned long n = 1 << 16;
	double us;

	for (;;) {
		auto t0 = clk::now();
		work(local, n);
		us = std::chrono::duration<double, std::micro>(clk::now() - t0).count();
		if (us > 2000)
			break;
		n *= 2;
	}
	iters_per_us = (unsigned long)(n / us);
	if (!iters_per_us)
		iters_per_us = 1;
}

static pthread_spinlock_t spin;
static std::mutex mtx;

template <typename Lock, typename Unlock>
static unsigned long lock_loop(Lock lock, Unlock unlock, unsigned long cs, unsigned long out)
{
	volatile unsigned long local[8] = {};
	unsigned long ops = 0;

	while (!stop_flag.load(std::memory_order_relaxed)) {
		lock();
		work(shared_data, cs);
		unlock();
		work(local, out);
		ops++;
	}
	return ops;
}

static unsigned long run_threads(int threads, int seconds, unsigned long (*body)(unsigned long, unsigned long),
				 unsigned long cs, unsigned long out)
{
	std::vector<std::thread> ts;
	std::vector<unsigned long> ops(threads);
	std::atomic<int> ready{0};
	unsigned long sum = 0;

	for (int i = 0; i < threads; i++)
		ts.emplace_back([&, i] {
			ready++;
			while (ready.load() < threads)
				std::this_thread::yield();
			ops[i] = body(cs, out);
		});
	while (ready.load() < threads)
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	std::this_thread::sleep_for(std::chrono::seconds(seconds));
	stop_flag = true;
	for (auto &t : ts)
		t.join();
	for (auto o : ops)
		sum += o;
	return sum;
}

static unsigned long spin_body(unsigned long cs, unsigned long out)
{
	return lock_loop([] { pthread_spin_lock(&spin); }, [] { pthread_spin_unlock(&spin); }, cs, out);
}

static unsigned long mutex_body(unsigned long cs, unsigned long out)
{
	return lock_loop([] { mtx.lock(); }, [] { mtx.unlock(); }, cs, out);
}

static unsigned long run_omp(int threads, int seconds, unsigned long cs, unsigned long out)
{
	unsigned long sum = 0;
	auto end = clk::now() + std::chrono::seconds(seconds);

	omp_set_dynamic(0);
#pragma omp parallel num_threads(threads) reduction(+ : sum)
	{
		volatile unsigned long local[8] = {};
		unsigned long ops = 0;

		while (!stop_flag.load(std::memory_order_relaxed)) {
#pragma omp critical(unmod)
			{
				work(shared_data, cs);
			}
			work(local, out);
			ops++;
			/* One thread watches the clock; the others see the flag. */
			if (omp_get_thread_num() == 0 && !(ops & 63) && clk::now() >= end)
				stop_flag = true;
		}
		sum += ops;
	}
	return sum;
}

#ifndef UNMOD_NO_TBB
static long fib_tbb(int n)
{
	if (n < 20) {
		long a = 0, b = 1;
		for (int i = 0; i < n; i++) {
			long c = a + b;
			a = b;
			b = c;
		}
		/* A little work per leaf, so the task tree matters. */
		volatile unsigned long local[8] = {};
		work(local, 200);
		return a;
	}
	long x, y;
	tbb::task_group g;
	g.run([&] { x = fib_tbb(n - 1); });
	y = fib_tbb(n - 2);
	g.wait();
	return x + y;
}

static unsigned long run_tbb(int threads, int seconds)
{
	tbb::global_control gc(tbb::global_control::max_allowed_parallelism, threads);
	tbb::task_arena arena(threads);
	auto end = clk::now() + std::chrono::seconds(seconds);
	unsigned long ops = 0;
	int n = getenv("FIB_N") ? atoi(getenv("FIB_N")) : 32;

	while (clk::now() < end) {
		arena.execute([&] { fib_tbb(n); });
		ops++;
	}
	return ops;
}
#endif

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: unmod spin|mutex|omp|tbb THREADS SECONDS [CS_NS [OUT_NS]]\n");
		return 2;
	}
	const char *mode = argv[1];
	int threads = atoi(argv[2]), seconds = atoi(argv[3]);
	double cs_ns = argc > 4 ? atof(argv[4]) : 300, out_ns = argc > 5 ? atof(argv[5]) : 1500;

	if (threads <= 0 || threads > 4096 || seconds <= 0 || cs_ns < 0 || out_ns < 0) {
		fprintf(stderr, "unmod: THREADS must be 1..4096, SECONDS positive, CS_NS and OUT_NS not negative\n");
		return 2;
	}
	calibrate();
	unsigned long cs = (unsigned long)(cs_ns * iters_per_us / 1000);
	unsigned long out = (unsigned long)(out_ns * iters_per_us / 1000);
	unsigned long ops;
	auto t0 = clk::now();

	if (!strcmp(mode, "spin")) {
		pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
		ops = run_threads(threads, seconds, spin_body, cs, out);
	} else if (!strcmp(mode, "mutex")) {
		ops = run_threads(threads, seconds, mutex_body, cs, out);
	} else if (!strcmp(mode, "omp")) {
		ops = run_omp(threads, seconds, cs, out);
#ifndef UNMOD_NO_TBB
	} else if (!strcmp(mode, "tbb")) {
		ops = run_tbb(threads, seconds);
#endif
	} else {
		fprintf(stderr, "unmod: unknown program '%s' (spin, mutex, omp, tbb)\n", mode);
		return 2;
	}
	double secs = std::chrono::duration<double>(clk::now() - t0).count();
	bool preload = dlsym(RTLD_DEFAULT, "wsched_preload_slot") != nullptr;

	printf("{\"bench\":\"unmod\",\"prog\":\"%s\",\"threads\":%d,\"seconds\":%.3f,"
	       "\"ops\":%lu,\"ops_per_sec\":%.1f,\"cs_ns\":%.0f,\"out_ns\":%.0f,\"preload\":%s}\n",
	       mode, threads, secs, ops, ops / secs, cs_ns, out_ns, preload ? "true" : "false");
	return 0;
}
