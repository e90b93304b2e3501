// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * ws_runtime_test: the fork/join runtime (wsched/pool.h, wsched/task.h).
 * Results of parallel fib, nqueens and mergesort must equal the serial ones
 * for 1..8 workers (oversubscribed on small machines); external submission
 * from many threads; park/wake cycles; errors and cancellation; destroy while
 * busy; an idle pool must not burn CPU.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "wsched/pool.h"
#include "test_util.h"

static struct ws_pool *mkpool(unsigned nr, bool no_spin)
{
	struct ws_pool_attr a;
	struct ws_pool *p = NULL;

	ws_pool_attr_init(&a);
	a.nr_workers = nr;
	a.no_spin = no_spin;
	if (ws_pool_create(&p, &a))
		return NULL;
	return p;
}

/* ------------------------------------------------------------ fib */

struct fib {
	int n;
	long r;
};

static int fib_task(struct ws_worker *w, void *arg)
{
	struct fib *f = arg, a, b;
	struct ws_task t;

	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	a.n = f->n - 1;
	b.n = f->n - 2;
	ws_spawn(w, &t, fib_task, &a);
	fib_task(w, &b);
	ws_sync(w, &t);
	f->r = a.r + b.r;
	return 0;
}

static long fib_serial(int n)
{
	return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2);
}

static long fib_spawns(int n)
{
	return n < 2 ? 0 : 1 + fib_spawns(n - 1) + fib_spawns(n - 2);
}

static int fib_n(void)
{
	long s = wt_test_scaled(100);

	return s >= 100 ? 27 : s >= 20 ? 24 : 18;
}

/* fib equals serial for P = 1..8, and every spawned task ran exactly once
 * (the per-worker task counters add up to spawns + the root job). */
TEST(fib_equals_serial_p1_to_p8)
{
	int n = fib_n();
	long want = fib_serial(n), spawns = fib_spawns(n);
	unsigned P;

	for (P = 1; P <= 8; P++) {
		struct ws_pool *p = mkpool(P, false);
		struct ws_worker_stats st;
		struct fib f = { n, -1 };

		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, ws_pool_run(p, fib_task, &f));
		EXPECT_EQ(want, f.r) TH_LOG("P=%u", P);
		ws_pool_sum_stats(p, &st);
		EXPECT_EQ(spawns + 1, (long)st.nr_tasks) TH_LOG("P=%u", P);
		EXPECT_EQ(1, st.nr_public);
		TH_LOG("P=%u fib(%d)=%ld tasks %llu steals %llu fails %llu exposes %llu parks %llu",
		       P, n, f.r, (unsigned long long)st.nr_tasks, (unsigned long long)st.nr_steals,
		       (unsigned long long)st.nr_steal_fails, (unsigned long long)st.nr_exposes,
		       (unsigned long long)st.nr_parks);
		ASSERT_EQ(0, ws_pool_destroy(p));
	}
}

/* With a tiny deque the spawns that do not fit run at once: still correct. */
TEST(fib_with_deque_overflow)
{
	struct ws_pool_attr a;
	struct ws_pool *p;
	struct fib f = { 20, -1 };

	ws_pool_attr_init(&a);
	a.nr_workers = 3;
	a.deque_size = 4;
	ASSERT_EQ(0, ws_pool_create(&p, &a));
	ASSERT_EQ(0, ws_pool_run(p, fib_task, &f));
	EXPECT_EQ(fib_serial(20), f.r);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

/* ------------------------------------------------------------ nqueens */

struct nq {
	int n, row;
	const int *cols;	/* queens of rows [0, row) */
	long count;
};

static bool nq_ok(const int *cols, int row, int c)
{
	int r;

	for (r = 0; r < row; r++)
		if (cols[r] == c || abs(cols[r] - c) == row - r)
			return false;
	return true;
}

static int nq_task(struct ws_worker *w, void *arg)
{
	struct nq *q = arg;
	int cols[16][16], c, k = 0;
	struct nq sub[16];
	struct ws_task t[16];

	if (q->row == q->n) {
		q->count = 1;
		return 0;
	}
	q->count = 0;
	for (c = 0; c < q->n; c++) {
		if (!nq_ok(q->cols, q->row, c))
			continue;
		memcpy(cols[k], q->cols, sizeof(int) * q->row);
		cols[k][q->row] = c;
		sub[k] = (struct nq){ q->n, q->row + 1, cols[k], 0 };
		ws_spawn(w, &t[k], nq_task, &sub[k]);
		k++;
	}
	while (k--) {
		ws_sync(w, &t[k]);
		q->count += sub[k].count;
	}
	return 0;
}

static long nq_serial(int n, int row, int *cols)
{
	long s = 0;
	int c;

	if (row == n)
		return 1;
	for (c = 0; c < n; c++)
		if (nq_ok(cols, row, c)) {
			cols[row] = c;
			s += nq_serial(n, row + 1, cols);
		}
	return s;
}

TEST(nqueens_equals_serial_p1_to_p8)
{
	int n = wt_test_scaled(100) >= 100 ? 9 : 7, cols[16];
	long want = nq_serial(n, 0, cols);
	unsigned P;

	for (P = 1; P <= 8; P++) {
		struct ws_pool *p = mkpool(P, false);
		struct nq q = { n, 0, cols, -1 };

		ASSERT_NE(NULL, p);
		ASSERT_EQ(0, ws_pool_run(p, nq_task, &q));
		EXPECT_EQ(want, q.count) TH_LOG("P=%u", P);
		ASSERT_EQ(0, ws_pool_destroy(p));
	}
}

/* ------------------------------------------------------------ sort */

struct msort {
	int *a, *tmp;
	long n;
};

static void merge(int *a, long n1, long n2, int *tmp)
{
	long i = 0, j = n1, k = 0;

	while (i < n1 && j < n1 + n2)
		tmp[k++] = a[j] < a[i] ? a[j++] : a[i++];
	while (i < n1)
		tmp[k++] = a[i++];
	while (j < n1 + n2)
		tmp[k++] = a[j++];
	memcpy(a, tmp, sizeof(int) * (size_t)(n1 + n2));
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;

	return (a > b) - (a < b);
}

static int msort_task(struct ws_worker *w, void *arg)
{
	struct msort *s = arg;
	long h = s->n / 2;
	struct msort l = { s->a, s->tmp, h }, r = { s->a + h, s->tmp + h, s->n - h };
	struct ws_task t;

	if (s->n <= 256) {
		qsort(s->a, (size_t)s->n, sizeof(int), cmp_int);
		return 0;
	}
	ws_spawn(w, &t, msort_task, &l);
	msort_task(w, &r);
	ws_sync(w, &t);
	merge(s->a, h, s->n - h, s->tmp);
	return 0;
}

TEST(sort_equals_serial_p1_to_p8)
{
	long n = wt_test_scaled(200000), i;
	int *in = malloc(sizeof(int) * n), *want = malloc(sizeof(int) * n);
	int *a = malloc(sizeof(int) * n), *tmp = malloc(sizeof(int) * n);
	uint64_t seed = 7;
	unsigned P;

	ASSERT_TRUE(in && want && a && tmp);
	for (i = 0; i < n; i++)
		in[i] = (int)(wt_test_rand(&seed) % 1000000);
	memcpy(want, in, sizeof(int) * n);
	qsort(want, n, sizeof(int), cmp_int);
	for (P = 1; P <= 8; P++) {
		struct ws_pool *p = mkpool(P, false);
		struct msort s = { a, tmp, n };

		ASSERT_NE(NULL, p);
		memcpy(a, in, sizeof(int) * n);
		ASSERT_EQ(0, ws_pool_run(p, msort_task, &s));
		EXPECT_EQ(0, memcmp(a, want, sizeof(int) * n)) TH_LOG("P=%u", P);
		ASSERT_EQ(0, ws_pool_destroy(p));
	}
	free(in);
	free(want);
	free(a);
	free(tmp);
}

/* ------------------------------------------------------------ parallel_for */

struct pf {
	_Atomic uint8_t *hits;
	long grain;
	_Atomic long max_piece;
};

static int pf_body(struct ws_worker *w, long lo, long hi, void *arg)
{
	struct pf *f = arg;
	long i, m = atomic_load(&f->max_piece);

	for (i = lo; i < hi; i++)
		atomic_fetch_add_explicit(&f->hits[i], 1, memory_order_relaxed);
	while (hi - lo > m && !atomic_compare_exchange_weak(&f->max_piece, &m, hi - lo))
		;
	return 0;
}

struct pf_root {
	struct pf *f;
	long n;
};

static int pf_root(struct ws_worker *w, void *arg)
{
	struct pf_root *r = arg;

	return ws_parallel_for(w, 0, r->n, r->f->grain, pf_body, r->f);
}

TEST(parallel_for_covers_each_index_once_within_grain)
{
	long n = 100003, i;
	struct pf f = { calloc(n, 1), 1000, 0 };
	struct pf_root r = { &f, n };
	struct ws_pool *p = mkpool(4, false);

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, f.hits);
	ASSERT_EQ(0, ws_pool_run(p, pf_root, &r));
	for (i = 0; i < n; i++)
		if (f.hits[i] != 1)
			break;
	EXPECT_EQ(n, i);
	EXPECT_LE(atomic_load(&f.max_piece), 1000);
	EXPECT_GT(atomic_load(&f.max_piece), 500);
	ASSERT_EQ(0, ws_pool_destroy(p));
	free(f.hits);
}

/* The pieces a body saw, for ranges too long to mark index by index. */
struct pieces {
	pthread_mutex_t lock;
	long lo[1024], hi[1024];
	int n;
	bool overflow;		/* more than 1024 pieces */
};

static int piece_body(struct ws_worker *w, long lo, long hi, void *arg)
{
	struct pieces *ps = arg;

	pthread_mutex_lock(&ps->lock);
	if (ps->n < 1024) {
		ps->lo[ps->n] = lo;
		ps->hi[ps->n] = hi;
		ps->n++;
	} else {
		ps->overflow = true;
	}
	pthread_mutex_unlock(&ps->lock);
	return 0;
}

struct piece_root {
	struct pieces *ps;
	long lo, hi, grain;
};

static int piece_root(struct ws_worker *w, void *arg)
{
	struct piece_root *r = arg;

	return ws_parallel_for(w, r->lo, r->hi, r->grain, piece_body, r->ps);
}

static int cmp_piece(const void *x, const void *y)
{
	long a = *(const long *)x, b = *(const long *)y;

	return a < b ? -1 : a > b;
}

/*
 * Run parallel_for over [lo, hi) and check that the pieces tile it exactly:
 * sorted by start, the first starts at lo, each ends where the next starts,
 * the last ends at hi, none is empty and none is longer than @max_len
 * (lengths as unsigned: a piece may be longer than LONG_MAX). Returns the
 * number of pieces, or -1 after a failed check (reported by the caller).
 */
static int check_tiling(struct ws_pool *p, long lo, long hi, long grain,
			unsigned long max_len, char *why, size_t why_len)
{
	static struct pieces ps;
	struct piece_root r = { &ps, lo, hi, grain };
	long pairs[1024][2];
	int i, err;

	memset(&ps, 0, sizeof(ps));
	pthread_mutex_init(&ps.lock, NULL);
	err = ws_pool_run(p, piece_root, &r);
	pthread_mutex_destroy(&ps.lock);
	if (err || ps.overflow || !ps.n) {
		snprintf(why, why_len, "run %d, overflow %d, %d pieces", err, ps.overflow, ps.n);
		return -1;
	}
	for (i = 0; i < ps.n; i++) {
		pairs[i][0] = ps.lo[i];
		pairs[i][1] = ps.hi[i];
	}
	qsort(pairs, ps.n, sizeof(pairs[0]), cmp_piece);
	for (i = 0; i < ps.n; i++) {
		unsigned long len = (unsigned long)pairs[i][1] - (unsigned long)pairs[i][0];

		if (pairs[i][0] != (i ? pairs[i - 1][1] : lo) || pairs[i][1] <= pairs[i][0] ||
		    len > max_len) {
			snprintf(why, why_len, "piece %d of %d: [%ld, %ld)", i, ps.n,
				 pairs[i][0], pairs[i][1]);
			return -1;
		}
	}
	if (pairs[ps.n - 1][1] != hi) {
		snprintf(why, why_len, "last piece ends at %ld", pairs[ps.n - 1][1]);
		return -1;
	}
	return ps.n;
}

/* Ranges whose length does not fit in a long: split without signed
 * overflow (the ASan+UBSan build aborts on one), tiled exactly, within
 * grain, and the automatic grain gives a bounded number of pieces. */
TEST(parallel_for_full_long_range_without_overflow)
{
	struct ws_pool *p = mkpool(2, false);
	char why[128] = "";
	int n;

	ASSERT_NE(NULL, p);
	n = check_tiling(p, LONG_MIN, LONG_MAX, 1L << 60, 1UL << 60, why, sizeof(why));
	EXPECT_LE(16, n) TH_LOG("LONG_MIN..LONG_MAX grain 2^60: %s", why);
	EXPECT_GE(32, n);
	n = check_tiling(p, LONG_MIN, LONG_MAX, 0, ULONG_MAX / 16 + 1, why, sizeof(why));
	EXPECT_LE(16, n) TH_LOG("LONG_MIN..LONG_MAX automatic grain: %s", why);
	EXPECT_GE(32, n);
	n = check_tiling(p, -1, LONG_MAX, LONG_MAX / 3, (unsigned long)LONG_MAX / 3, why,
			 sizeof(why));
	EXPECT_LE(4, n) TH_LOG("-1..LONG_MAX: %s", why);
	n = check_tiling(p, LONG_MIN, 1, LONG_MAX, LONG_MAX, why, sizeof(why));
	EXPECT_EQ(2, n) TH_LOG("LONG_MIN..1 grain LONG_MAX: %s", why);
	n = check_tiling(p, LONG_MAX - 5, LONG_MAX, 1, 1, why, sizeof(why));
	EXPECT_EQ(5, n) TH_LOG("LONG_MAX-5..LONG_MAX grain 1: %s", why);
	n = check_tiling(p, LONG_MIN, LONG_MIN + 7, 2, 2, why, sizeof(why));
	EXPECT_LE(4, n) TH_LOG("LONG_MIN..LONG_MIN+7 grain 2: %s", why);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

/* ------------------------------------------------------------ stealing */

struct spread {
	int worker[16];
};

struct spread_arg {
	struct spread *s;
	int i;
};

static int sleepy_child(struct ws_worker *w, void *arg)
{
	struct spread_arg *a = arg;

	a->s->worker[a->i] = (int)ws_worker_index(w);
	usleep(20000);
	return 0;
}

static int spawn_16_then_sync(struct ws_worker *w, void *arg)
{
	struct spread_arg a[16];
	struct ws_task t[16];
	int i;

	for (i = 0; i < 16; i++) {
		a[i] = (struct spread_arg){ arg, i };
		ws_spawn(w, &t[i], sleepy_child, &a[i]);
	}
	for (i = 15; i >= 0; i--)
		ws_sync(w, &t[i]);
	return 0;
}

/* A task that spawns 16 leaves (each sleeping 20 ms) and then syncs them:
 * idle workers must be woken, ask for work and get the leaves, so that at
 * least three of the four workers run some (the elapsed time is logged). */
TEST(spawned_leaves_spread_over_workers)
{
	struct ws_pool *p = mkpool(4, false);
	struct spread s;
	uint64_t t0, el;
	int i, k, distinct = 0;

	ASSERT_NE(NULL, p);
	memset(&s, 0xff, sizeof(s));
	usleep(20000);		/* let the workers park first */
	t0 = wt_test_now_ns();
	ASSERT_EQ(0, ws_pool_run(p, spawn_16_then_sync, &s));
	el = wt_test_now_ns() - t0;
	for (i = 0; i < 4; i++) {
		for (k = 0; k < 16; k++)
			if (s.worker[k] == i)
				break;
		distinct += k < 16;
	}
	TH_LOG("16 x 20 ms leaves on 4 workers: %d workers used, %.1f ms", distinct, el / 1e6);
	/* No bound on el: on a loaded machine (the lab guest running) even
	 * 4 workers can take longer than 320 ms. */
	EXPECT_GE(distinct, 3);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

struct slow_child {
	_Atomic int started;
	double sync_cpu_s;
	int child_worker, root_worker;
};

static int slow_child_task(struct ws_worker *w, void *arg)
{
	struct slow_child *c = arg;

	c->child_worker = (int)ws_worker_index(w);
	atomic_store(&c->started, 1);
	usleep(200000);
	return 7;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int wait_for_stolen_child(struct ws_worker *w, void *arg)
{
	struct slow_child *c = arg;
	uint64_t t0 = wt_test_now_ns();
	struct ws_task t;
	double c0;
	int r;

	c->root_worker = (int)ws_worker_index(w);
	ws_spawn(w, &t, slow_child_task, c);
	/* Let a thief take it: serve its request until the child starts. */
	while (!atomic_load(&c->started) && wt_test_now_ns() - t0 < 2000000000ull)
		ws_poll(w);
	c0 = cpu_now();
	r = ws_sync(w, &t);
	c->sync_cpu_s = cpu_now() - c0;
	return r;
}

/* An owner whose child was stolen and who finds nothing else to run must
 * not burn a CPU while it waits: after spinning and yielding it sleeps
 * until the thief finishes (the process uses a small fraction of the
 * 200 ms the child sleeps). */
TEST(sync_on_stolen_child_sleeps)
{
	struct ws_pool *p = mkpool(2, false);
	struct slow_child c = { 0 };
	double first;

	ASSERT_NE(NULL, p);
	/*
	 * Twice, judging the second: the first pays one-time costs that are
	 * not waiting (valgrind translating the sleep path: 52.9 ms of CPU on
	 * a slow host, where the second stays far below).
	 */
	EXPECT_EQ(7, ws_pool_run(p, wait_for_stolen_child, &c));
	first = c.sync_cpu_s;
	memset(&c, 0, sizeof(c));
	EXPECT_EQ(7, ws_pool_run(p, wait_for_stolen_child, &c));
	ASSERT_TRUE(atomic_load(&c.started));
	EXPECT_NE(c.root_worker, c.child_worker);
	TH_LOG("CPU used by the process during the 200 ms sync: %.2f ms (first run %.2f ms)",
	       c.sync_cpu_s * 1e3, first * 1e3);
	EXPECT_LT(c.sync_cpu_s, 0.05);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

/* ------------------------------------------------------------ errors, cancellation */

static int fail_task(struct ws_worker *w, void *arg)
{
	return -EIO;
}

static int err_root(struct ws_worker *w, void *arg)
{
	struct ws_task t;
	int r;

	ws_spawn(w, &t, fail_task, NULL);
	r = ws_sync(w, &t);
	return r == -EIO ? -ENOTRECOVERABLE : -EINVAL;
}

TEST(task_error_is_returned_by_sync_and_wait)
{
	struct ws_pool *p = mkpool(2, false);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-ENOTRECOVERABLE, ws_pool_run(p, err_root, NULL));
	EXPECT_EQ(-EIO, ws_pool_run(p, fail_task, NULL));
	ASSERT_EQ(0, ws_pool_destroy(p));
}

struct cancel_ctx {
	struct ws_group g;
	_Atomic int ran;
	int nr_cancelled, nr_ok;
};

static int count_task(struct ws_worker *w, void *arg)
{
	struct cancel_ctx *c = arg;

	atomic_fetch_add(&c->ran, 1);
	return 0;
}

/* Spawn 100 children into a group, cancel it, sync them all: the ones that
 * had not started are skipped with -ECANCELED. With one worker nobody can
 * have started them, so all are skipped. */
static int cancel_root(struct ws_worker *w, void *arg)
{
	struct cancel_ctx *c = arg;
	struct ws_task t[100];
	int i, r;

	for (i = 0; i < 100; i++)
		ws_group_spawn(w, &c->g, &t[i], count_task, c);
	ws_group_cancel(&c->g);
	for (i = 99; i >= 0; i--) {
		r = ws_sync(w, &t[i]);
		if (r == -ECANCELED)
			c->nr_cancelled++;
		else if (r == 0)
			c->nr_ok++;
	}
	return 0;
}

TEST(cancel_skips_tasks_not_started)
{
	unsigned P;

	for (P = 1; P <= 4; P += 3) {
		struct ws_pool *p = mkpool(P, false);
		struct cancel_ctx c = { 0 };

		ASSERT_NE(NULL, p);
		ws_group_init(&c.g);
		ASSERT_EQ(0, ws_pool_run(p, cancel_root, &c));
		EXPECT_EQ(100, c.nr_cancelled + c.nr_ok);
		EXPECT_EQ(c.nr_ok, atomic_load(&c.ran));
		if (P == 1)
			EXPECT_EQ(100, c.nr_cancelled);
		ASSERT_EQ(0, ws_pool_destroy(p));
	}
}

/* A failing task cancels its group and records the first error; the later
 * siblings are skipped. */
static int fail_then_count(struct ws_worker *w, void *arg)
{
	struct cancel_ctx *c = arg;
	struct ws_task t[10];
	int i;

	ws_group_spawn(w, &c->g, &t[0], fail_task, NULL);
	ws_sync(w, &t[0]);
	for (i = 1; i < 10; i++)
		ws_group_spawn(w, &c->g, &t[i], count_task, c);
	for (i = 9; i >= 1; i--)
		if (ws_sync(w, &t[i]) == -ECANCELED)
			c->nr_cancelled++;
	return ws_group_error(&c->g);
}

TEST(failing_task_cancels_its_group)
{
	struct ws_pool *p = mkpool(2, false);
	struct cancel_ctx c = { 0 };
	struct ws_job j;

	ASSERT_NE(NULL, p);
	ws_group_init(&c.g);
	EXPECT_EQ(-EIO, ws_pool_run(p, fail_then_count, &c));
	EXPECT_EQ(9, c.nr_cancelled);
	EXPECT_EQ(0, atomic_load(&c.ran));
	/* A job submitted into a cancelled group is skipped too. */
	ASSERT_EQ(0, ws_pool_submit(p, &j, &c.g, count_task, &c));
	EXPECT_EQ(-ECANCELED, ws_job_wait(&j));
	EXPECT_EQ(0, atomic_load(&c.ran));
	ASSERT_EQ(0, ws_pool_destroy(p));
}

/* ------------------------------------------------------------ submission */

static int add_task(struct ws_worker *w, void *arg)
{
	atomic_fetch_add_explicit((_Atomic long *)arg, 1, memory_order_relaxed);
	return 0;
}

struct storm {
	struct ws_pool *p;
	_Atomic long done;
	long per_thread;
	int errors;
};

static void *storm_thread(void *arg)
{
	struct storm *s = arg;
	struct ws_job jobs[64];
	long i;
	int k;

	for (i = 0; i < s->per_thread; i += 64) {
		for (k = 0; k < 64; k++)
			if (ws_pool_submit(s->p, &jobs[k], NULL, add_task, &s->done))
				__atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
		for (k = 0; k < 64; k++)
			if (ws_job_wait(&jobs[k]))
				__atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

TEST(external_submission_storm)
{
	enum { NR_THREADS = 8 };
	struct storm s = { mkpool(4, false), 0, 64 * wt_test_scaled(300), 0 };
	pthread_t th[NR_THREADS];
	struct ws_worker_stats st;
	int i;

	ASSERT_NE(NULL, s.p);
	for (i = 0; i < NR_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, storm_thread, &s));
	for (i = 0; i < NR_THREADS; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	EXPECT_EQ(0, s.errors);
	EXPECT_EQ(NR_THREADS * s.per_thread, atomic_load(&s.done));
	ws_pool_sum_stats(s.p, &st);
	EXPECT_EQ(NR_THREADS * s.per_thread, (long)st.nr_public);
	ASSERT_EQ(0, ws_pool_destroy(s.p));
}

struct order {
	int seen[256];
	int n;
};

static int order_task(struct ws_worker *w, void *arg)
{
	struct order *o = *(struct order **)arg;

	o->seen[o->n++] = (int)(((intptr_t *)arg)[1]);
	return 0;
}

/* The public queue is FIFO: one worker runs jobs in submission order. */
TEST(public_queue_is_fifo)
{
	struct ws_pool *p = mkpool(1, false);
	static struct ws_job jobs[256];
	static intptr_t args[256][2];
	struct order o = { .n = 0 };
	int i;

	ASSERT_NE(NULL, p);
	for (i = 0; i < 256; i++) {
		args[i][0] = (intptr_t)&o;
		args[i][1] = i;
		ASSERT_EQ(0, ws_pool_submit(p, &jobs[i], NULL, order_task, args[i]));
	}
	for (i = 0; i < 256; i++)
		ASSERT_EQ(0, ws_job_wait(&jobs[i]));
	ASSERT_EQ(256, o.n);
	for (i = 0; i < 256; i++)
		ASSERT_EQ(i, o.seen[i]);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

static uint64_t total_parks(struct ws_pool *p)
{
	struct ws_worker_stats st;

	ws_pool_sum_stats(p, &st);
	return st.nr_parks;
}

struct cycler {
	struct ws_pool *p;
	long n, done_cycles;
	_Atomic long done;
	int err;
};

/* With spinning off, wait after each job until the pool's worker has
 * committed to sleep, then submit the next job, which must wake it: every
 * submission races the sleeper's last check. */
static void *cycle_thread(void *arg)
{
	struct cycler *c = arg;
	uint64_t parks = total_parks(c->p);
	long i;

	for (i = 0; i < c->n; i++) {
		struct ws_job j;
		uint64_t w0 = wt_test_now_ns();

		while (i > 0 && total_parks(c->p) == parks) {
			if (wt_test_now_ns() - w0 > 10000000000ull) {
				c->err = -ETIMEDOUT;	/* nobody fell asleep */
				return NULL;
			}
			sched_yield();
		}
		parks = total_parks(c->p);
		if (ws_pool_submit(c->p, &j, NULL, add_task, &c->done) || ws_job_wait(&j)) {
			c->err = -EIO;
			return NULL;
		}
		c->done_cycles++;
	}
	return NULL;
}

/* A million park/wake cycles: 4 pools of one worker each, 4 submitters.
 * A lost wakeup hangs a wait (and the harness timeout fails the test). */
TEST(million_park_wake_cycles)
{
	enum { NR = 4 };
	struct cycler c[NR];
	pthread_t th[NR];
	long n = wt_test_scaled(1000000), parks = 0, wakeups = 0;
	uint64_t t0 = wt_test_now_ns();
	int i;

	for (i = 0; i < NR; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		c[i].p = mkpool(1, true);
		c[i].n = n / NR;
		ASSERT_NE(NULL, c[i].p);
	}
	for (i = 0; i < NR; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, cycle_thread, &c[i]));
	for (i = 0; i < NR; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	for (i = 0; i < NR; i++) {
		struct ws_worker_stats st;

		EXPECT_EQ(0, c[i].err);
		EXPECT_EQ(c[i].n, c[i].done_cycles);
		EXPECT_EQ(c[i].n, atomic_load(&c[i].done));
		ws_pool_sum_stats(c[i].p, &st);
		parks += (long)st.nr_parks;
		wakeups += (long)st.nr_wakeups;
		ASSERT_EQ(0, ws_pool_destroy(c[i].p));
	}
	TH_LOG("%ld cycles in %.2f s: parks %ld wakeups %ld", n / NR * NR,
	       (wt_test_now_ns() - t0) / 1e9, parks, wakeups);
	EXPECT_GE(parks, n / NR * NR);
	EXPECT_GE(wakeups, n / NR * NR - NR);
}

/* ------------------------------------------------------------ lifecycle */

struct busy {
	struct ws_pool *p;
	int n;
	long r;
	int submit_err;
};

static int busy_task(struct ws_worker *w, void *arg)
{
	struct busy *b = arg;
	struct fib f = { b->n, 0 };

	fib_task(w, &f);
	b->r = f.r;
	return 0;
}

/* Keep submitting (and waiting for) small jobs until destroy has closed the
 * queue; records what the refused submission returned. */
static int late_submitter(struct ws_worker *w, void *arg)
{
	struct busy *b = arg;
	uint64_t t0 = wt_test_now_ns();

	while (wt_test_now_ns() - t0 < 20000000000ull) {
		struct ws_job j;
		int r = ws_pool_submit(b->p, &j, NULL, fail_task, NULL);

		if (r) {
			b->submit_err = r;
			return 0;
		}
		if (ws_job_wait(&j) != -EIO)
			b->submit_err = -EINVAL;
		usleep(1000);
	}
	return 0;
}

/* Destroy with jobs queued and running: they all complete, new submissions
 * are refused, and destroy returns only then. */
TEST(destroy_while_busy)
{
	struct ws_pool *p = mkpool(4, false);
	static struct ws_job jobs[33];
	static struct busy b[33];
	int i, n = wt_test_scaled(100) >= 100 ? 22 : 16;

	ASSERT_NE(NULL, p);
	for (i = 0; i < 32; i++) {
		b[i] = (struct busy){ p, n, -1, 0 };
		ASSERT_EQ(0, ws_pool_submit(p, &jobs[i], NULL, busy_task, &b[i]));
	}
	b[32] = (struct busy){ p, 0, 0, 1 };
	ASSERT_EQ(0, ws_pool_submit(p, &jobs[32], NULL, late_submitter, &b[32]));
	ASSERT_EQ(0, ws_pool_destroy(p));
	for (i = 0; i < 32; i++) {
		EXPECT_TRUE(ws_job_done(&jobs[i]));
		EXPECT_EQ(0, ws_job_wait(&jobs[i]));	/* valid after destroy */
		EXPECT_EQ(fib_serial(n), b[i].r);
	}
	EXPECT_TRUE(ws_job_done(&jobs[32]));
	EXPECT_EQ(-ESHUTDOWN, b[32].submit_err);
}

static int destroy_self(struct ws_worker *w, void *arg)
{
	return ws_pool_destroy(ws_worker_pool(w));
}

TEST(destroy_from_own_worker_fails)
{
	struct ws_pool *p = mkpool(2, false);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EDEADLK, ws_pool_run(p, destroy_self, NULL));
	ASSERT_EQ(0, ws_pool_destroy(p));
}

static int inner_job(struct ws_worker *w, void *arg)
{
	return 42;
}

/* ------------------------------------------------------------ fork */

static _Atomic int gate;	/* gated_task returns once it is set */

static int gated_task(struct ws_worker *w, void *arg)
{
	_Atomic int *started = arg;

	atomic_store(started, 1);
	while (!atomic_load(&gate))
		usleep(100);
	return 7;
}

#define CHILD_CHECK(cond)							\
	do {									\
		if (!(cond)) {							\
			fprintf(stderr, "# fork child: line %d: %s\n", __LINE__, #cond); \
			nr_failed++;						\
		}								\
	} while (0)

/* In a fork child of a process with a live pool: every call fails at once
 * with -ECHILD (a hang is killed by the alarm), destroy frees without
 * joining, and a fresh pool works. Returns the number of failed checks. */
static int pool_child_checks(struct ws_pool *p, struct ws_job *pending, struct ws_job *done)
{
	struct ws_worker_stats st = { .nr_tasks = 1 };
	struct fib f = { 15, -1 };
	struct ws_job j;
	int nr_failed = 0;

	alarm(10);
	CHILD_CHECK(ws_pool_submit(p, &j, NULL, fib_task, &f) == -ECHILD);
	CHILD_CHECK(ws_pool_run(p, fib_task, &f) == -ECHILD);
	CHILD_CHECK(f.r == -1);				/* nothing ran */
	CHILD_CHECK(!ws_job_done(pending));
	CHILD_CHECK(ws_job_wait(pending) == -ECHILD);
	CHILD_CHECK(ws_job_done(done) && ws_job_wait(done) == 42);
	CHILD_CHECK(ws_pool_get_stats(p, 0, &st) == -ECHILD);
	ws_pool_sum_stats(p, &st);
	CHILD_CHECK(st.nr_tasks == 0);
	CHILD_CHECK(ws_pool_nr_workers(p) == 0);
	CHILD_CHECK(ws_pool_destroy(p) == -ECHILD);
#ifndef __SANITIZE_THREAD__	/* TSan stops a fork child that starts threads */
	struct ws_pool *q = mkpool(2, false);

	CHILD_CHECK(q != NULL);
	if (q) {
		CHILD_CHECK(ws_pool_nr_workers(q) == 2);
		CHILD_CHECK(ws_pool_run(q, fib_task, &f) == 0 && f.r == 610);
		CHILD_CHECK(ws_pool_destroy(q) == 0);
	}
#endif
	return nr_failed;
}

/* The child of a process with a live pool (a job running, one done) gets
 * -ECHILD from every pool call instead of a hang, can free the pool and
 * make its own; the parent's pool is unaffected. */
TEST(pool_calls_fail_with_echild_in_fork_child)
{
	struct ws_pool *p = mkpool(2, false);
	static struct ws_job pending, done;
	_Atomic int started = 0;
	struct fib f = { 15, -1 };
	int status = -1;
	pid_t pid;

	ASSERT_NE(NULL, p);
	atomic_store(&gate, 0);
	ASSERT_EQ(0, ws_pool_submit(p, &done, NULL, inner_job, NULL));
	ASSERT_EQ(42, ws_job_wait(&done));
	ASSERT_EQ(0, ws_pool_submit(p, &pending, NULL, gated_task, &started));
	while (!atomic_load(&started))
		usleep(100);
	pid = fork();
	if (pid == 0)
		_exit(pool_child_checks(p, &pending, &done));
	if (pid > 0)
		waitpid(pid, &status, 0);
	atomic_store(&gate, 1);
	ASSERT_LT(0, pid);
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("child status %#x (a signal: it hung)", status);
	EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("checks that failed in the child");
	EXPECT_EQ(7, ws_job_wait(&pending));
	EXPECT_EQ(0, ws_pool_run(p, fib_task, &f));
	EXPECT_EQ(610, f.r);
	EXPECT_EQ(2, ws_pool_nr_workers(p));
	ASSERT_EQ(0, ws_pool_destroy(p));
}

struct forker {
	_Atomic int child_started, release;
	int status, child_sync, parent_sync;
	pid_t pid;
};

static int held_child(struct ws_worker *w, void *arg)
{
	struct forker *k = arg;

	atomic_store(&k->child_started, 1);
	while (!atomic_load(&k->release))
		usleep(100);
	return 5;
}

static int sum_body(struct ws_worker *w, long lo, long hi, void *arg)
{
	long *sum = arg, i;	/* one thread: the fork child */

	for (i = lo; i < hi; i++)
		*sum += i;
	return 0;
}

/* Spawn a child task, wait until another worker has stolen it, fork. The
 * fork child's ws_sync of the stolen task returns -ECHILD (its thief is in
 * the parent), and spawn/sync/parallel_for still run inline there. */
static int forking_task(struct ws_worker *w, void *arg)
{
	struct forker *k = arg;
	uint64_t t0 = wt_test_now_ns();
	struct ws_task t;

	ws_spawn(w, &t, held_child, k);
	while (!atomic_load(&k->child_started) && wt_test_now_ns() - t0 < 5000000000ull) {
		ws_poll(w);		/* answer the thief's request */
		usleep(100);
	}
	if (atomic_load(&k->child_started)) {
		k->pid = fork();
		if (k->pid == 0) {
			struct fib f = { 15, -1 };
			long sum = 0;
			int code = 0;

			alarm(10);
			if (ws_sync(w, &t) != -ECHILD)
				code |= 1;
			fib_task(w, &f);
			if (f.r != 610)
				code |= 2;
			if (ws_parallel_for(w, 0, 1000, 10, sum_body, &sum) || sum != 499500)
				code |= 4;
			_exit(code);
		}
		if (k->pid > 0)
			waitpid(k->pid, &k->status, 0);
	}
	atomic_store(&k->release, 1);
	k->parent_sync = ws_sync(w, &t);
	return 0;
}

TEST(sync_of_stolen_task_in_fork_child_fails_with_echild)
{
	struct ws_pool *p = mkpool(2, false);
	struct forker k = { .status = -1, .pid = -1 };

	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, ws_pool_run(p, forking_task, &k));
	ASSERT_EQ(1, atomic_load(&k.child_started)) TH_LOG("no worker stole the task in 5 s");
	ASSERT_LT(0, k.pid);
	EXPECT_TRUE(WIFEXITED(k.status)) TH_LOG("child status %#x (a signal: it hung)", k.status);
	EXPECT_EQ(0, WEXITSTATUS(k.status)) TH_LOG("1: sync not -ECHILD, 2: fib, 4: parallel_for");
	EXPECT_EQ(5, k.parent_sync);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

static int wait_inside(struct ws_worker *w, void *arg)
{
	struct ws_job j;
	int r = ws_pool_submit(ws_worker_pool(w), &j, NULL, inner_job, NULL);

	return r ? r : ws_job_wait(&j);	/* must help, not block */
}

/* A worker that waits for a job of its own pool runs work meanwhile: with
 * one worker, blocking would deadlock. */
TEST(job_wait_on_own_worker_helps)
{
	struct ws_pool *p = mkpool(1, false);

	ASSERT_NE(NULL, p);
	EXPECT_EQ(42, ws_pool_run(p, wait_inside, NULL));
	ASSERT_EQ(0, ws_pool_destroy(p));
}

struct two {
	struct ws_pool *other;
	int n;
	long r;
};

static int use_other_pool(struct ws_worker *w, void *arg)
{
	struct two *t = arg;
	struct fib f = { t->n, 0 };
	int r = ws_pool_run(t->other, fib_task, &f);

	t->r = f.r;
	return r;
}

/* Two pools coexist, and a task of one may use the other. */
TEST(two_pools_coexist)
{
	struct ws_pool *a = mkpool(2, false), *b = mkpool(3, false);
	struct two t = { b, 20, 0 };
	struct fib f = { 21, 0 };

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, ws_pool_run(a, use_other_pool, &t));
	ASSERT_EQ(0, ws_pool_run(b, fib_task, &f));
	EXPECT_EQ(fib_serial(20), t.r);
	EXPECT_EQ(fib_serial(21), f.r);
	EXPECT_EQ(2, ws_pool_nr_workers(a));
	EXPECT_EQ(3, ws_pool_nr_workers(b));
	ASSERT_EQ(0, ws_pool_destroy(a));
	ASSERT_EQ(0, ws_pool_destroy(b));
}

static int where_am_i(struct ws_worker *w, void *arg)
{
	int *out = arg;

	out[0] = (int)ws_worker_index(w);
	out[1] = sched_getcpu();
	return 0;
}

/* attr.pin puts worker i on the i-th CPU of the affinity mask (round robin);
 * fork/join works the same. */
TEST(pinned_pool_pins_and_computes)
{
	struct ws_pool_attr a;
	struct ws_pool *p;
	struct fib f = { 22, 0 };
	int cpus[CPU_SETSIZE], nr = 0, c, k;
	cpu_set_t set;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set))
			cpus[nr++] = c;
	ws_pool_attr_init(&a);
	a.nr_workers = 3;
	a.pin = true;
	ASSERT_EQ(0, ws_pool_create(&p, &a));
	ASSERT_EQ(0, ws_pool_run(p, fib_task, &f));
	EXPECT_EQ(fib_serial(22), f.r);
	for (k = 0; k < 20; k++) {
		int where[2];

		ASSERT_EQ(0, ws_pool_run(p, where_am_i, where));
		EXPECT_EQ(cpus[where[0] % nr], where[1]) TH_LOG("worker %d", where[0]);
	}
	ASSERT_EQ(0, ws_pool_destroy(p));
}

TEST(bad_arguments_are_rejected)
{
	struct ws_pool_attr a;
	struct ws_pool *p = NULL;
	struct ws_worker_stats st;

	EXPECT_EQ(-EINVAL, ws_pool_create(NULL, NULL));
	ws_pool_attr_init(&a);
	a.nr_workers = 100000;
	EXPECT_EQ(-EINVAL, ws_pool_create(&p, &a));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(-EINVAL, ws_pool_destroy(NULL));
	p = mkpool(1, false);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-EINVAL, ws_pool_submit(p, NULL, NULL, fail_task, NULL));
	EXPECT_EQ(-EINVAL, ws_pool_get_stats(p, 1, &st));
	EXPECT_EQ(0, ws_pool_get_stats(p, 0, &st));
	ASSERT_EQ(0, ws_pool_destroy(p));
}

/* The yield path: the best available by default, a named one or -ENODEV. */
TEST(yield_path_is_chosen_and_reported)
{
	bool dev = access("/dev/wsched", R_OK | W_OK) == 0;
	struct ws_pool_attr a;
	struct ws_pool *p = NULL;

	EXPECT_STREQ("plain", ws_yield_path_name(WS_YIELD_PLAIN));
	EXPECT_STREQ("hint", ws_yield_path_name(WS_YIELD_HINT));
	EXPECT_STREQ("module", ws_yield_path_name(WS_YIELD_MODULE));
	EXPECT_STREQ("?", ws_yield_path_name((enum ws_yield_path)42));

	p = mkpool(2, false);
	ASSERT_NE(NULL, p);
	if (!dev)
		EXPECT_NE(WS_YIELD_MODULE, ws_pool_yield_path(p));
	EXPECT_NE(WS_YIELD_AUTO, ws_pool_yield_path(p));
	TH_LOG("default yield path: %s", ws_yield_path_name(ws_pool_yield_path(p)));
	ASSERT_EQ(0, ws_pool_destroy(p));

	ws_pool_attr_init(&a);
	a.nr_workers = 2;
	a.yield_path = WS_YIELD_PLAIN;
	ASSERT_EQ(0, ws_pool_create(&p, &a));
	EXPECT_EQ(WS_YIELD_PLAIN, ws_pool_yield_path(p));
	ASSERT_EQ(0, ws_pool_destroy(p));

	p = NULL;
	a.yield_path = WS_YIELD_MODULE;
	if (!dev) {
		EXPECT_EQ(-ENODEV, ws_pool_create(&p, &a));
		EXPECT_EQ(NULL, p);
	}
	a.yield_path = WS_YIELD_HINT;
	if (access("/run/wsched/wsched.sock", F_OK) && !getenv("WSCHED_HINT_SOCKET")) {
		EXPECT_EQ(-ENODEV, ws_pool_create(&p, &a));	/* no scx_wsched serving hints */
		EXPECT_EQ(NULL, p);
	}
	a.yield_path = (enum ws_yield_path)42;
	EXPECT_EQ(-EINVAL, ws_pool_create(&p, &a));
	EXPECT_EQ(NULL, p);
}

/* Three workers pinned to one CPU, spinning 1 us: the idle ones yield; with
 * the plain path none of those yields is directed, and fib is still right. */
TEST(oversubscribed_plain_yields)
{
	cpu_set_t old, one;
	struct ws_pool_attr a;
	struct ws_pool *p = NULL;
	struct ws_worker_stats st;
	struct fib f = { 30, -1 };
	int c;

	ASSERT_EQ(0, sched_getaffinity(0, sizeof(old), &old));
	for (c = 0; c < CPU_SETSIZE && !CPU_ISSET(c, &old); c++)
		;
	CPU_ZERO(&one);
	CPU_SET(c, &one);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(one), &one));
	ws_pool_attr_init(&a);
	a.nr_workers = 3;
	a.pin = true;
	a.spin_ns = 1000;
	a.yield_ns = 1000000000;
	a.yield_path = WS_YIELD_PLAIN;
	c = ws_pool_create(&p, &a);
	sched_setaffinity(0, sizeof(old), &old);
	ASSERT_EQ(0, c);
	ASSERT_EQ(0, ws_pool_run(p, fib_task, &f));
	EXPECT_EQ(fib_serial(30), f.r);
	ws_pool_sum_stats(p, &st);
	TH_LOG("yields %llu, directed %llu, handoffs %llu", (unsigned long long)st.nr_yields,
	       (unsigned long long)st.nr_yield_to, (unsigned long long)st.nr_handoffs);
	EXPECT_GT(st.nr_yields, 0);
	EXPECT_EQ(0, st.nr_yield_to);
	EXPECT_EQ(0, st.nr_handoffs);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

/* Whether every worker of @p is parked (counted a park it has not been
 * woken from; the count comes just before the futex wait). */
static bool all_parked(const struct ws_pool *p, unsigned nr)
{
	struct ws_worker_stats st;
	unsigned i;

	for (i = 0; i < nr; i++)
		if (ws_pool_get_stats(p, i, &st) || st.nr_parks <= st.nr_wakeups)
			return false;
	return true;
}

#define MAX_TIDS	64

/* The ids of this process's threads (at most MAX_TIDS); their number. */
static int list_tids(pid_t *tids)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)) && n < MAX_TIDS)
		if (e->d_name[0] != '.')
			tids[n++] = (pid_t)atoi(e->d_name);
	if (d)
		closedir(d);
	return n;
}

/* Nanoseconds thread @tid of this process has run (schedstat's first
 * field), or -1. */
static long long thread_run_ns(pid_t tid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%lld", &ns) != 1)
		ns = -1;
	if (f)
		fclose(f);
	return ns;
}

static void *nothing(void *arg)
{
	return arg;
}

/*
 * An idle pool sleeps: its threads use under 1% of a CPU once the spin and
 * yield phases are over. Only the pool's threads are measured: the whole
 * process also holds ThreadSanitizer's background thread in the -tsan
 * build, and valgrind's own work in the -valgrind one, which can take the
 * whole process above 1% on a loaded host.
 */
TEST(idle_pool_uses_under_1pct_cpu)
{
	pid_t before[MAX_TIDS], after[MAX_TIDS], pool[MAX_TIDS];
	int nb, na, np = 0, i, k;
	struct fib f = { 20, 0 };
	long long r0[MAX_TIDS], run;
	struct ws_pool *p;
	pthread_t th;
	uint64_t t0, t1;
	double cpu = 0, wall;

	/* A thread first, so that whatever the first pthread_create starts
	 * (TSan's background thread) is there before the pool. */
	ASSERT_EQ(0, pthread_create(&th, NULL, nothing, NULL));
	ASSERT_EQ(0, pthread_join(th, NULL));
	nb = list_tids(before);
	p = mkpool(4, false);
	ASSERT_NE(NULL, p);
	na = list_tids(after);
	for (i = 0; i < na; i++) {
		for (k = 0; k < nb && before[k] != after[i]; k++)
			;
		if (k == nb)
			pool[np++] = after[i];
	}
	ASSERT_EQ(4, np) TH_LOG("%d new threads with the pool of 4 workers", np);
	ASSERT_EQ(0, ws_pool_run(p, fib_task, &f));
	/*
	 * Past the spin (50 us) and yield (200 us) phases: every worker
	 * parked. Waited for, not assumed after a fixed time: on a loaded
	 * host a worker may still be in its yield phase after 50 ms.
	 */
	for (i = 0; i < 500 && !all_parked(p, 4); i++)
		usleep(10000);
	ASSERT_TRUE(all_parked(p, 4));
	usleep(10000);		/* and the last one asleep in the kernel */
	for (i = 0; i < np; i++)
		ASSERT_LE(0, r0[i] = thread_run_ns(pool[i])) TH_LOG("no schedstat for thread %d", pool[i]);
	t0 = wt_test_now_ns();
	usleep(500000);
	for (i = 0; i < np; i++) {
		ASSERT_LE(0, run = thread_run_ns(pool[i]));
		cpu += (run - r0[i]) / 1e9;
	}
	t1 = wt_test_now_ns();
	wall = (t1 - t0) / 1e9;
	TH_LOG("idle: the pool's %d threads ran %.3f ms in %.3f s (%.3f%% of one CPU)", np,
	       cpu * 1e3, wall, 100 * cpu / wall);
	EXPECT_LT(cpu / wall, 0.01);
	ASSERT_EQ(0, ws_pool_destroy(p));
}

TEST_HARNESS_MAIN
