// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched policy tests that need real parallelism: they measure what
 * a task on one CPU does to another CPU while both run at once, which
 * single-threaded TCG (the guest of `make test-guest`, whose vCPUs take
 * turns for tens of milliseconds) cannot show. `make test-parallel` runs
 * them in a guest with multi-threaded TCG (WSCHED_LAB_TCG=multi) and 2
 * vCPUs, one per host CPU.
 */
#include <sys/mman.h>

#include "scx_wsched_util.h"
#include "kselftest_harness.h"

#define OUT_FILE "/tmp/scx_wsched_parallel.out"
#define ERR_FILE "/tmp/scx_wsched_parallel.err"

FIXTURE(sched) {
	pid_t pid;
	struct wt_hogs hogs;
};

FIXTURE_SETUP(sched)
{
	const char *args[] = { NULL };
	int n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		SKIP(return, "needs at least 2 online CPUs, have %d", n);
	ASSERT_EQ(0, wt_hogs_init(&self->hogs));
	self->pid = wt_shared_start(args, OUT_FILE, ERR_FILE);
	ASSERT_LT(0, self->pid)
		TH_LOG("scx_wsched did not become enabled (or another scheduler was loaded)");
}

/*
 * The tests share one loader (wt_shared_start()), and the last stops it
 * (shared_loader_stops_cleanly): every load flips static keys, whose
 * patching a vCPU of multi-threaded TCG running a stale translation has
 * tripped over ("Oops: int3", Documentation/lab.md), so the suite loads
 * the scheduler once. Each test checks at its end that the loader still
 * runs with the scheduler enabled; if not, the next test loads another.
 */
FIXTURE_TEARDOWN(sched)
{
	wt_hogs_stop(&self->hogs);
}

/* The shared loader still runs and the scheduler is enabled. */
static bool sched_ok(void)
{
	return wt_enabled() && wt_shared_alive();
}

/* A CPU hog pinned to @cpu (wt_hog_on()); its pid, or -1. */
static pid_t hog_on(struct wt_hogs *hogs, int cpu)
{
	int i = wt_hog_on(hogs, cpu);

	return i < 0 ? -1 : hogs->pid[i];
}

/* SIGKILL and reap the @n children in @pids (those > 0). */
static void kill_all(const pid_t *pids, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

/*
 * The storm's verdict, over 2 s after 0.5 s to settle: the storm (*@events,
 * counted by its wakee, @what in the log) must have run over 50 times a
 * second, and @hog, beside its wakee, been switched out involuntarily
 * fewer than 1,500 times a second.
 */
static void expect_hog_spared(struct __test_metadata *_metadata, pid_t hog,
			      volatile long *events, const char *what)
{
	long long sw0, sw1, e0, e1;
	double t0, t1;

	wt_sleep(0.5);
	sw0 = wt_ctxt_switches(hog, "nonvoluntary");
	e0 = *events;
	t0 = wt_now();
	wt_sleep(2.0);
	sw1 = wt_ctxt_switches(hog, "nonvoluntary");
	e1 = *events;
	t1 = wt_now();
	TH_LOG("%s %.0f times a second; the hog beside it switched out %.0f times a second",
	       what, (e1 - e0) / (t1 - t0), (sw1 - sw0) / (t1 - t0));
	EXPECT_LE(0, sw0) TH_LOG("no switch counts for the hog");
	EXPECT_LT(50 * (t1 - t0), e1 - e0) TH_LOG("the storm did not run");
	EXPECT_GT(1500 * (t1 - t0), sw1 - sw0);
}

/*
 * A storm of wakeups from another CPU does not take a CPU hog's CPU: on
 * CPU 1 a hog and a reader blocked on a pipe; on CPU 0 a writer that,
 * each time the reader has blocked, spins 40 us and writes a byte. Each
 * wakeup comes from a task on another CPU after a sleep longer than
 * TIMED_SLEEP_NS (30 us), to a CPU running a CPU-bound task, so it may
 * preempt it (wake_preempt()) at most once per WAKE_XCPU_RUN_NS (1 ms) of
 * the hog's run. Over 2 s the hog must be switched out involuntarily fewer
 * than 1,500 times a second. At --experimental wake-preempt-us (30 us)
 * instead, the bound interrupt wakees have, the reader woke 4,600-8,700 times a second and
 * the hog kept a fifth to two fifths of its loops (EEVDF about 760 times
 * and four fifths, in the lab).
 */
TEST_F_TIMEOUT(sched, wakeup_storm_from_another_cpu_bounded, 60)
{
	/* [0]: the reader is about to block; [1]: the reader's wakeups */
	volatile long *st = mmap(NULL, 2 * sizeof(*st), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t hog, pids[2] = { -1, -1 };	/* reader, writer */
	char c = 0;
	int fd[2];

	ASSERT_NE(MAP_FAILED, (void *)st);
	ASSERT_EQ(0, pipe(fd));
	st[0] = st[1] = 0;
	hog = hog_on(&self->hogs, 1);
	ASSERT_LT(0, hog);
	pids[0] = fork();
	if (!pids[0]) {
		if (guest_pin(1))
			_exit(1);
		for (;;) {
			__atomic_store_n(&st[0], 1, __ATOMIC_SEQ_CST);
			if (read(fd[0], &c, 1) != 1)
				_exit(1);
			st[1]++;
		}
	}
	pids[1] = fork();
	if (!pids[1]) {
		if (guest_pin(0))
			_exit(1);
		for (;;) {
			double end;

			while (!__atomic_load_n(&st[0], __ATOMIC_SEQ_CST))
				;
			end = wt_now() + 40e-6;
			while (wt_now() < end)
				;
			st[0] = 0;
			if (write(fd[1], &c, 1) != 1)
				_exit(1);
		}
	}
	if (pids[0] > 0 && pids[1] > 0)
		expect_hog_spared(_metadata, hog, &st[1], "reader woken from CPU 0");
	kill_all(pids, 2);
	close(fd[0]);
	close(fd[1]);
	ASSERT_LT(0, pids[0]);
	ASSERT_LT(0, pids[1]);
	munmap((void *)st, 2 * sizeof(*st));
	EXPECT_TRUE(sched_ok());
}

/*
 * A storm of timer wakeups does not take a CPU hog's CPU: on CPU 1 a hog
 * and a thread that sleeps 40 us at a time (nanosleep()), woken by its
 * timer each time. Each wakeup comes from an interrupt, after more than
 * wake-preempt-us (30 us) of the hog's run, so it may preempt the hog
 * (wake_preempt()), but at most WAKE_KICK_BURST times in a row and once
 * per WAKE_KICK_PERIOD_NS (1 ms) on average (kick_wait()). Over 2 s the hog
 * must be switched out involuntarily fewer than 1,500 times a second;
 * with only the bound on the hog's run it is switched out at every
 * wakeup, several thousand times a second.
 */
TEST_F_TIMEOUT(sched, timer_storm_bounded, 60)
{
	volatile long *wakeups = mmap(NULL, sizeof(*wakeups), PROT_READ | PROT_WRITE,
				      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t hog, sleeper;

	ASSERT_NE(MAP_FAILED, (void *)wakeups);
	*wakeups = 0;
	hog = hog_on(&self->hogs, 1);
	ASSERT_LT(0, hog);
	sleeper = fork();
	if (!sleeper) {
		const struct timespec ts = { .tv_nsec = 40 * 1000 };

		if (guest_pin(1))
			_exit(1);
		for (;;) {
			nanosleep(&ts, NULL);
			(*wakeups)++;
		}
	}
	if (sleeper > 0)
		expect_hog_spared(_metadata, hog, wakeups, "sleeper woken by its timer");
	kill_all(&sleeper, 1);
	ASSERT_LT(0, sleeper);
	munmap((void *)wakeups, sizeof(*wakeups));
	EXPECT_TRUE(sched_ok());
}

/* Declared last, so run last: the loader the tests shared exits 0. */
TEST_F(sched, shared_loader_stops_cleanly)
{
	EXPECT_EQ(0, wt_shared_stop());
	EXPECT_TRUE(wt_wait_state(false, 10)) TH_LOG("still enabled after the loader exited");
	self->pid = 0;
}

WT_TEST_HARNESS_MAIN
