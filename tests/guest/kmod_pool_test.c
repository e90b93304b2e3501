// SPDX-License-Identifier: GPL-2.0
/*
 * libwsched's directed yield through wsched.ko (the library part).
 *
 * With /dev/wsched present a pool picks the module path by default and
 * reports it. Three workers pinned to one CPU run fib: the idle ones, past
 * their 1 us spin, yield towards the worker that holds unshared work (it
 * has a split request pending and is not looking for work), and the kernel
 * hands the CPU over at least sometimes (EEVDF: yield_to() makes it the
 * next pick). Without the module the same pool yields plainly and none of
 * its yields is directed. A destroyed pool leaves no reference to the
 * module behind (it unloads).
 *
 * Under scx_wsched: with the module the pool still takes the module path
 * and the scheduler's ops.yield sees the yields (nr_yield_to); without it
 * the pool takes the hint path (the loader serves hint slots): the worker
 * names its target in its slot and calls sched_yield(), and scx_wsched
 * hands the CPU over (nr_yield_hint, nr_yield_hint_handoff).
 *
 * Locks: a ws_spinlock or ws_mutex waiter sharing CPU 1 with a holder that
 * keeps the lock for 100 ms of CPU work yields towards the holder through
 * the module, which hands the CPU over (in at least one of 6 rounds).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_util.h"
#include "scx_wsched_util.h"
#include "wsched/lock.h"
#include "wsched/pool.h"

KMOD_UNLOAD_AT_EXIT

#define CPU	1	/* not CPU 0, where the test runner and kworkers tend to be */

struct fib {
	int n;
	long r;
};

static int fib_task(struct ws_worker *w, void *arg)
{
	struct fib *f = arg, a = { f->n - 1, 0 }, b = { f->n - 2, 0 };
	struct ws_task t;

	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	ws_spawn(w, &t, fib_task, &a);
	fib_task(w, &b);
	ws_sync(w, &t);
	f->r = a.r + b.r;
	return 0;
}

static long fib_ref(int n)
{
	long a = 0, b = 1, t;

	while (n-- > 0) {
		t = a + b;
		a = b;
		b = t;
	}
	return a;
}

/* Three workers pinned to CPU (the test thread's affinity at create time),
 * short spin, long yield phase; fib(n) on them; the summed stats. */
static int run_pinned(enum ws_yield_path path, int n, struct ws_worker_stats *st,
		      enum ws_yield_path *used, long *result)
{
	cpu_set_t old;
	struct ws_pool_attr a;
	struct ws_pool *p = NULL;
	struct fib f = { n, -1 };
	int err;

	if (sched_getaffinity(0, sizeof(old), &old))
		return -errno;
	err = guest_pin(CPU);
	if (err)
		return err;
	ws_pool_attr_init(&a);
	a.nr_workers = 3;
	a.pin = true;
	a.spin_ns = 1000;
	a.yield_ns = 1000000000;
	a.yield_path = path;
	err = ws_pool_create(&p, &a);
	sched_setaffinity(0, sizeof(old), &old);
	if (err)
		return err;
	*used = ws_pool_yield_path(p);
	err = ws_pool_run(p, fib_task, &f);
	ws_pool_sum_stats(p, st);
	*result = f.r;
	ws_pool_destroy(p);
	return err;
}

TEST(module_path_directs_yields_at_the_stalled_worker)
{
	struct ws_worker_stats st;
	enum ws_yield_path used;
	long r, calls0, ho0;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU)
		SKIP(return, "needs CPU %d", CPU);
	ASSERT_EQ(0, kmod_ensure_loaded());
	calls0 = kmod_stat("nr_calls");
	ho0 = kmod_stat("nr_handoffs");
	ASSERT_EQ(0, run_pinned(WS_YIELD_AUTO, 30, &st, &used, &r));
	EXPECT_EQ(fib_ref(30), r);
	EXPECT_EQ(WS_YIELD_MODULE, used);
	TH_LOG("path %s: yields %llu, directed %llu, handed over %llu; module calls +%lld, "
	       "handoffs +%lld", ws_yield_path_name(used), (unsigned long long)st.nr_yields,
	       (unsigned long long)st.nr_yield_to, (unsigned long long)st.nr_handoffs,
	       kmod_stat("nr_calls") - calls0, kmod_stat("nr_handoffs") - ho0);
	EXPECT_GT(st.nr_yield_to, 0);
	EXPECT_GT(st.nr_handoffs, 0);
	EXPECT_LE(st.nr_handoffs, st.nr_yield_to);
	EXPECT_LE(st.nr_yield_to, st.nr_yields);
	/* every directed yield went through the module */
	EXPECT_GE(kmod_stat("nr_calls") - calls0, (long long)st.nr_yield_to);
	EXPECT_GE(kmod_stat("nr_handoffs") - ho0, (long long)st.nr_handoffs);
	/* the pool closed /dev/wsched: nothing keeps the module */
	EXPECT_EQ(0, kmod_ensure_unloaded());
}

TEST(without_the_module_yields_are_plain)
{
	struct ws_worker_stats st;
	enum ws_yield_path used;
	struct ws_pool_attr a;
	struct ws_pool *p = NULL;
	long r;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU)
		SKIP(return, "needs CPU %d", CPU);
	ASSERT_EQ(0, kmod_ensure_unloaded());
	ws_pool_attr_init(&a);
	a.yield_path = WS_YIELD_MODULE;
	EXPECT_EQ(-ENODEV, ws_pool_create(&p, &a));
	ASSERT_EQ(0, run_pinned(WS_YIELD_AUTO, 30, &st, &used, &r));
	EXPECT_EQ(fib_ref(30), r);
	EXPECT_NE(WS_YIELD_MODULE, used);
	TH_LOG("path %s: yields %llu, directed %llu", ws_yield_path_name(used),
	       (unsigned long long)st.nr_yields, (unsigned long long)st.nr_yield_to);
	if (used == WS_YIELD_PLAIN)
		EXPECT_EQ(0, st.nr_yield_to);
	EXPECT_EQ(0, st.nr_handoffs);
}

/* ------------------------------------------------------------ locks */

struct lock_arena {
	ws_spinlock_t spin;
	ws_mutex_t mutex;
	bool use_mutex;
	atomic_int held;	/* the holder has the lock */
	atomic_int got;		/* the waiter got it */
	/* for the log: where each ran, how long the section and the wait took */
	int holder_cpu, waiter_cpu;
	double held_s, wait_s;	/* seconds */
};

static void lock_it(struct lock_arena *a)
{
	if (a->use_mutex)
		ws_mutex_lock(&a->mutex);
	else
		ws_spinlock_lock(&a->spin);
}

static void unlock_it(struct lock_arena *a)
{
	if (a->use_mutex)
		ws_mutex_unlock(&a->mutex);
	else
		ws_spinlock_unlock(&a->spin);
}

static void *holder_main(void *arg)
{
	struct lock_arena *a = arg;
	struct timespec t0, t;

	guest_pin(CPU);
	lock_it(a);
	a->holder_cpu = sched_getcpu();
	a->held_s = wt_now();
	atomic_store(&a->held, 1);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
	do {		/* 100 ms of CPU time inside the section */
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < 100000000LL);
	a->held_s = wt_now() - a->held_s;
	unlock_it(a);
	return NULL;
}

static void *waiter_main(void *arg)
{
	struct lock_arena *a = arg;

	guest_pin(CPU);
	while (!atomic_load(&a->held))
		sched_yield();
	a->waiter_cpu = sched_getcpu();
	a->wait_s = wt_now();
	lock_it(a);
	a->wait_s = wt_now() - a->wait_s;
	atomic_store(&a->got, 1);
	unlock_it(a);
	return NULL;
}

#define LOCK_ROUNDS	6

/* In a child process: the locks' yielder keeps /dev/wsched open for the
 * life of the process, and the module must unload afterwards. */
static void lock_case(struct __test_metadata *_metadata, bool use_mutex)
{
	long long calls0, ho0, calls, ho;
	int status;
	pid_t pid;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU)
		SKIP(return, "needs CPU %d", CPU);
	ASSERT_EQ(0, kmod_ensure_loaded());
	calls0 = kmod_stat("nr_calls");
	ho0 = kmod_stat("nr_handoffs");
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int r;

		/* Several rounds: a mutex waiter makes one directed yield per
		 * round, which the kernel may decline (the holder just woke,
		 * or is mid-switch); every round must still get the lock. */
		for (r = 0; r < LOCK_ROUNDS; r++) {
			struct lock_arena a;
			pthread_t h, w;

			memset(&a, 0, sizeof(a));
			ws_spinlock_init(&a.spin);
			ws_mutex_init(&a.mutex);
			a.use_mutex = use_mutex;

			if (pthread_create(&h, NULL, holder_main, &a) ||
			    pthread_create(&w, NULL, waiter_main, &a))
				_exit(2);
			pthread_join(w, NULL);
			pthread_join(h, NULL);
			/* on stderr, into the test's log: why a run saw no
			 * module call, if one does */
			fprintf(stderr, "# round %d: holder on CPU %d held %.1f ms; waiter on CPU %d waited %.1f ms\n",
				r, a.holder_cpu, a.held_s * 1e3, a.waiter_cpu, a.wait_s * 1e3);
			if (atomic_load(&a.got) != 1)
				_exit(1);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	calls = kmod_stat("nr_calls") - calls0;
	ho = kmod_stat("nr_handoffs") - ho0;
	TH_LOG("%s: module calls +%lld, handoffs +%lld", use_mutex ? "mutex" : "spinlock",
	       calls, ho);
	EXPECT_GT(ho, 0);
	EXPECT_GE(calls, ho);
	EXPECT_EQ(0, kmod_ensure_unloaded());
}

TEST(spinlock_waiter_yields_to_the_holder)
{
	lock_case(_metadata, false);
}

TEST(mutex_waiter_yields_to_the_holder)
{
	lock_case(_metadata, true);
}

/* The scheduler cases need more than the harness's 30 s default: loading
 * scx_wsched takes seconds under emulation. */
FIXTURE(scx) {
	int unused;
};
FIXTURE_SETUP(scx) { }
FIXTURE_TEARDOWN(scx) { }

/* Starts scx_wsched with JSON stats into @log; its pid, or -1. */
static pid_t scx_up(const char *log)
{
	const char *args[] = { "--stats", "3600", "--json", NULL };	/* after argv[0] */

	if (access(wt_bin(), X_OK) || !wt_wait_state(false, 5))
		return -1;
	return wt_start(args, log, NULL);
}

/*
 * fib(30) on three workers pinned to CPU 1 under scx_wsched, with or
 * without wsched.ko: the path the pool took, its stats, and the
 * scheduler's counters @names from its last JSON line.
 */
static void scx_run(struct __test_metadata *_metadata, bool module, struct ws_worker_stats *st,
		    enum ws_yield_path *used, const char *const *names, long long *vals, int n)
{
	char log[64];
	long r;
	pid_t scx;
	int err, i;

	ASSERT_EQ(0, module ? kmod_ensure_loaded() : kmod_ensure_unloaded());
	snprintf(log, sizeof(log), "/tmp/kmod_pool_test.scx.%d", getpid());
	scx = scx_up(log);
	ASSERT_LT(0, scx) TH_LOG("scx_wsched did not start (%s)", wt_bin());
	err = run_pinned(WS_YIELD_AUTO, 30, st, used, &r);
	ASSERT_EQ(0, wt_stop(scx));
	ASSERT_EQ(0, err);
	for (i = 0; i < n; i++)
		vals[i] = wt_json_last(log, names[i]);
	unlink(log);
	EXPECT_EQ(fib_ref(30), r);
	TH_LOG("path %s: yields %llu, directed %llu, handed over (as the module reports) %llu",
	       ws_yield_path_name(*used),
	       (unsigned long long)st->nr_yields, (unsigned long long)st->nr_yield_to,
	       (unsigned long long)st->nr_handoffs);
	for (i = 0; i < n; i++)
		TH_LOG("scheduler %s: %lld", names[i], vals[i]);
}

/*
 * How many directed yields a fib(30) run makes is a matter of timing (a
 * few; one or two in a run whose workers hardly idle), and one whose
 * target already runs or sleeps hands nothing over: each case runs up to SCX_RUNS times until what it asserts
 * happened at least once, every run checked for what must hold in each.
 */
#define SCX_RUNS	3

TEST_F_TIMEOUT(scx, hint_path_hands_over, 60 + SCX_RUNS * 60)
{
	static const char *const names[] = { "nr_yield_hint", "nr_yield_hint_handoff" };
	struct ws_worker_stats st;
	enum ws_yield_path used;
	long long v[2], directed = 0, hinted = 0, handed = 0;
	int run;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU)
		SKIP(return, "needs CPU %d", CPU);

	for (run = 0; run < SCX_RUNS && !handed; run++) {
		scx_run(_metadata, false, &st, &used, names, v, 2);
		EXPECT_EQ(WS_YIELD_HINT, used);
		EXPECT_LE(v[0], (long long)st.nr_yield_to);
		EXPECT_LE(v[1], v[0]);
		directed += st.nr_yield_to;
		hinted += v[0];
		handed += v[1];
	}
	TH_LOG("%d runs: directed %lld, nr_yield_hint %lld, nr_yield_hint_handoff %lld",
	       run, directed, hinted, handed);
	EXPECT_GT(directed, 0);
	EXPECT_GT(hinted, 0);
	EXPECT_GT(handed, 0);
}

TEST_F_TIMEOUT(scx, module_path_reaches_ops_yield, 60 + SCX_RUNS * 60)
{
	static const char *const names[] = { "nr_yield_to", "nr_yield_hint" };
	struct ws_worker_stats st;
	enum ws_yield_path used;
	long long v[2], directed = 0, handed = 0;
	int run;

	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU)
		SKIP(return, "needs CPU %d", CPU);

	for (run = 0; run < SCX_RUNS && !handed; run++) {
		scx_run(_metadata, true, &st, &used, names, v, 2);
		EXPECT_EQ(WS_YIELD_MODULE, used);
		EXPECT_GE(v[0], (long long)st.nr_handoffs);
		EXPECT_EQ(0, v[1]);
		directed += st.nr_yield_to;
		handed += st.nr_handoffs;
	}
	TH_LOG("%d runs: directed %lld, handed over %lld", run, directed, handed);
	EXPECT_GT(directed, 0);
	EXPECT_GT(handed, 0);
	EXPECT_EQ(0, kmod_ensure_unloaded());
}

WT_TEST_HARNESS_MAIN
