// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched and cgroups: CPU time follows cpu.weight at every level of
 * the hierarchy, a cgroup's many threads take no more than another's few,
 * a weight changed or a task moved while the hogs run takes effect within
 * a second, nice values keep working inside a cgroup, a cpu.idle cgroup
 * runs only where nothing else would, and cpu.max holds (for a subtree
 * too) while an unlimited sibling takes the CPUs left. The cgroups are
 * made under /sys/fs/cgroup/scx_wsched_cg (the cpu controller enabled on
 * the way), each test's own, removed at its end. Hogs are unpinned but for
 * the nice and idle tests; shares are sums of the hogs' own CPU times.
 * In the parallel suite (`make test-parallel`: multi-threaded TCG, 2
 * vCPUs): a quota is CPU time per wall time, and in single-threaded TCG a
 * task's CPU time runs on while its vCPU waits its turn (up to 100 ms),
 * past any throttle, and the shares across CPUs drift with it.
 */
#include <math.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "scx_wsched.h"
#include "wsched/thread.h"
#include "scx_wsched_util.h"
#include "kselftest_harness.h"

#define WT_CG_TOL	0.05	/* the shares hold within 5% */

struct wt_cg {
	const char *top;	/* every cgroup made is below it */
	struct wt_hogs hogs;
	char made[8][128];	/* cgroups made, removed in reverse */
	int nr_made;
};

/* Write @val to @dir/@file; 0 or -1. */
static int cg_write(const char *dir, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	return wt_write_str(path, val);
}

/* Make @name under self->top (a path below it), with @weight; its path. */
static const char *cg_make(struct wt_cg *self, const char *name, int weight)
{
	char *path = self->made[self->nr_made], w[16];

	snprintf(path, sizeof(self->made[0]), "%s/%s", self->top, name);
	rmdir(path);
	if (mkdir(path, 0755) && errno != EEXIST)
		return NULL;
	self->nr_made++;
	snprintf(w, sizeof(w), "%d", weight);
	if (cg_write(path, "cpu.weight", w))
		return NULL;
	return path;
}

/* Move hog @i into @cg. */
static int cg_put(struct wt_cg *self, const char *cg, int i)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", self->hogs.pid[i]);
	return cg_write(cg, "cgroup.procs", pid);
}

/* Start @n unpinned nice-0 hogs in @cg; the first one's index. */
static int cg_hogs(struct wt_cg *self, const char *cg, int n)
{
	int first = self->hogs.n, i, k;

	for (i = 0; i < n; i++) {
		k = wt_hog_start(&self->hogs, 0, NULL);
		if (k < 0 || cg_put(self, cg, k))
			return -1;
	}
	return first;
}

/* CPU time of hogs [@from, @to) between snapshots @a and @b, in s. */
static double cpu_s(const unsigned long long *a, const unsigned long long *b, int from, int to)
{
	double s = 0;
	int i;

	for (i = from; i < to; i++)
		s += (b[i] - a[i]) / 1e9;
	return s;
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Snapshots over @secs after a settling @warm; the wall time between
 * them, in s. */
static double measure(struct wt_cg *self, double warm, double secs,
		      unsigned long long *a, unsigned long long *b)
{
	long long t0;

	wt_sleep(warm);
	t0 = now_ns();
	wt_hogs_snapshot(&self->hogs, a);
	wt_sleep(secs);
	wt_hogs_snapshot(&self->hogs, b);
	return (now_ns() - t0) / 1e9;
}

static void expect_share(struct __test_metadata *_metadata, const char *what,
			 double got, double want)
{
	double dev = (got - want) / want;

	TH_LOG("%s: %.3f of the CPU time, want %.3f (%+.1f%%)", what, got, want, dev * 100);
	EXPECT_GT(WT_CG_TOL, dev < 0 ? -dev : dev) TH_LOG("%s off its share by %.1f%%", what, dev * 100);
}

/* The cpu controller on the way to @top, made; 0, or -1 with errno. */
static int wt_cg_setup(struct wt_cg *self, const char *top)
{
	memset(self, 0, sizeof(*self));
	self->top = top;
	if (wt_hogs_init(&self->hogs))
		return -1;
	if (wt_write_str("/sys/fs/cgroup/cgroup.subtree_control", "+cpu"))
		return -1;
	if (mkdir(top, 0755) && errno != EEXIST)
		return -1;
	return cg_write(top, "cgroup.subtree_control", "+cpu");
}

/* The hogs stopped, the cgroups made removed. */
static void wt_cg_teardown(struct wt_cg *self)
{
	wt_hogs_stop(&self->hogs);
	while (self->nr_made > 0)
		rmdir(self->made[--self->nr_made]);
}


/* The loader is shared with scx_wsched_parallel (same arguments and
 * files), which runs after this and stops it: one load for the suite. */
#define OUT_FILE "/tmp/scx_wsched_parallel.out"
#define ERR_FILE "/tmp/scx_wsched_parallel.err"
#define TOP_CG	 "/sys/fs/cgroup/scx_wsched_cg"	/* "/scx_wsched_cg" to the loader */

FIXTURE(cg) {
	int nr_cpus;
	struct wt_cg c;
};

static int sched_ok(void)
{
	if (!wt_enabled())
		return -100;
	return wt_shared_alive() ? 0 : -101;
}

FIXTURE_SETUP(cg)
{
	const char *args[] = { NULL };

	self->nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (self->nr_cpus < 2)
		SKIP(return, "needs at least 2 online CPUs, have %d", self->nr_cpus);
	if (9 * self->nr_cpus > WT_MAX_HOGS)
		SKIP(return, "needs 9 hogs per CPU, at most %d hogs", WT_MAX_HOGS);
	ASSERT_EQ(0, wt_cg_setup(&self->c, TOP_CG))
		TH_LOG("cannot set up %s with the cpu controller: %s", TOP_CG, strerror(errno));
	ASSERT_LT(0, wt_shared_start(args, OUT_FILE, ERR_FILE))
		TH_LOG("scx_wsched did not become enabled (or another scheduler was loaded)");
}

FIXTURE_TEARDOWN(cg)
{
	wt_cg_teardown(&self->c);
	rmdir(TOP_CG);
}

/*
 * Sibling cgroups at weights @wa and @wb with @na and @nb hogs per CPU:
 * over 4 s the second gets @want of their CPU time, within 5%.
 */
static void siblings_share(struct __test_metadata *_metadata, FIXTURE_DATA(cg) *self,
			   int wa, int na, int wb, int nb, double want)
{
	const char *ca = cg_make(&self->c, "a", wa), *cb = cg_make(&self->c, "b", wb);
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	int n = self->nr_cpus;
	char what[64];
	double ta, tb;

	ASSERT_TRUE(ca != NULL && cb != NULL);
	ASSERT_EQ(0, cg_hogs(&self->c, ca, na * n));
	ASSERT_EQ(na * n, cg_hogs(&self->c, cb, nb * n));
	measure(&self->c, 1.0, 4.0, a, b);
	ta = cpu_s(a, b, 0, na * n);
	tb = cpu_s(a, b, na * n, (na + nb) * n);
	ASSERT_LT(0, ta + tb);
	snprintf(what, sizeof(what), "weight %d, %d hogs per CPU", wb, nb);
	expect_share(_metadata, what, tb / (ta + tb), want);
	EXPECT_EQ(0, sched_ok());
}

/* Two sibling cgroups at weights 100 and 300, a hog per CPU each: 1:3. */
TEST_F_TIMEOUT(cg, weights_share_siblings, 60)
{
	siblings_share(_metadata, self, 100, 1, 300, 1, 0.75);
}

/* Equal weights, a hog per CPU against eight per CPU: equal CPU time. */
TEST_F_TIMEOUT(cg, many_threads_take_no_more, 90)
{
	siblings_share(_metadata, self, 100, 1, 100, 8, 0.5);
}

/*
 * Three levels: p (300) holding p1 (200) and p2 (100), beside q (100), a
 * hog per CPU in each leaf: p1 gets 3/4 x 2/3, p2 3/4 x 1/3, q 1/4.
 */
TEST_F_TIMEOUT(cg, shares_multiply_down_the_tree, 60)
{
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	const char *p = cg_make(&self->c, "p", 300), *p1, *p2, *q;
	int n = self->nr_cpus;
	double t1, t2, tq, all;

	ASSERT_TRUE(p != NULL);
	ASSERT_EQ(0, cg_write(p, "cgroup.subtree_control", "+cpu"));
	p1 = cg_make(&self->c, "p/p1", 200);
	p2 = cg_make(&self->c, "p/p2", 100);
	q = cg_make(&self->c, "q", 100);
	ASSERT_TRUE(p1 != NULL && p2 != NULL && q != NULL);
	ASSERT_EQ(0, cg_hogs(&self->c, p1, n));
	ASSERT_EQ(n, cg_hogs(&self->c, p2, n));
	ASSERT_EQ(2 * n, cg_hogs(&self->c, q, n));
	/* 8 s: the smallest leaves' quarter varies from run to run by more
	 * than the tolerance over shorter windows (Documentation/results/
	 * cgroups.md) */
	measure(&self->c, 1.0, 8.0, a, b);
	t1 = cpu_s(a, b, 0, n);
	t2 = cpu_s(a, b, n, 2 * n);
	tq = cpu_s(a, b, 2 * n, 3 * n);
	all = t1 + t2 + tq;
	ASSERT_LT(0, all);
	expect_share(_metadata, "p/p1", t1 / all, 3.0 / 4 * 2 / 3);
	expect_share(_metadata, "p/p2", t2 / all, 3.0 / 4 / 3);
	expect_share(_metadata, "q", tq / all, 1.0 / 4);
	EXPECT_EQ(0, sched_ok());
}

/*
 * Changed while the hogs run: lo (100) and hi (300), then lo's weight set
 * to 300, the new 1:1 measured from a second on; then half of hi's hogs
 * moved into lo, still 1:1 by cgroup.
 */
TEST_F_TIMEOUT(cg, changes_take_effect_within_a_second, 90)
{
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	const char *lo = cg_make(&self->c, "lo", 100), *hi = cg_make(&self->c, "hi", 300);
	int n = self->nr_cpus, i;
	double l, h;

	ASSERT_TRUE(lo != NULL && hi != NULL);
	ASSERT_EQ(0, cg_hogs(&self->c, lo, n));
	ASSERT_EQ(n, cg_hogs(&self->c, hi, 2 * n));
	wt_sleep(1.0);
	ASSERT_EQ(0, cg_write(lo, "cpu.weight", "300"));
	measure(&self->c, 1.0, 3.0, a, b);
	l = cpu_s(a, b, 0, n);
	h = cpu_s(a, b, n, 3 * n);
	ASSERT_LT(0, l + h);
	expect_share(_metadata, "after the weight change, lo", l / (l + h), 0.5);

	/* hi's first n hogs to lo: lo 2n hogs, hi n; still 1:1 */
	for (i = n; i < 2 * n; i++)
		ASSERT_EQ(0, cg_put(&self->c, lo, i));
	measure(&self->c, 1.0, 3.0, a, b);
	l = cpu_s(a, b, 0, 2 * n);
	h = cpu_s(a, b, 2 * n, 3 * n);
	ASSERT_LT(0, l + h);
	expect_share(_metadata, "after the move, lo", l / (l + h), 0.5);
	EXPECT_EQ(0, sched_ok());
}

/*
 * Inside a cgroup a nice 0 and a nice 5 hog sharing CPU 1 keep the
 * kernel's weight ratio 1024/335 within 25% (as fairness_nice in the
 * policy suite), beside another cgroup's hog on the same CPU.
 */
TEST_F_TIMEOUT(cg, nice_works_inside_a_cgroup, 60)
{
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	const char *in = cg_make(&self->c, "in", 100), *other = cg_make(&self->c, "other", 100);
	const double want = 1024.0 / 335.0;
	double ratio;
	cpu_set_t cpu1;

	ASSERT_TRUE(in != NULL && other != NULL);
	CPU_ZERO(&cpu1);
	CPU_SET(1, &cpu1);
	ASSERT_EQ(0, wt_hog_start(&self->c.hogs, 0, &cpu1));
	ASSERT_EQ(1, wt_hog_start(&self->c.hogs, 5, &cpu1));
	ASSERT_EQ(2, wt_hog_start(&self->c.hogs, 0, &cpu1));
	ASSERT_EQ(0, cg_put(&self->c, in, 0));
	ASSERT_EQ(0, cg_put(&self->c, in, 1));
	ASSERT_EQ(0, cg_put(&self->c, other, 2));
	measure(&self->c, 1.0, 4.0, a, b);
	ASSERT_LT(0ULL, b[1] - a[1]);
	ratio = (double)(b[0] - a[0]) / (double)(b[1] - a[1]);
	TH_LOG("nice 0: %.0f ms, nice 5: %.0f ms, ratio %.2f (kernel weights %.2f); other: %.0f ms",
	       (b[0] - a[0]) / 1e6, (b[1] - a[1]) / 1e6, ratio, want, (b[2] - a[2]) / 1e6);
	EXPECT_LT(want * 0.75, ratio);
	EXPECT_GT(want * 1.25, ratio);
	/* and the cgroup as a whole still gets half of the CPU */
	expect_share(_metadata, "the cgroup with nice 0 and 5",
		     cpu_s(a, b, 0, 2) / cpu_s(a, b, 0, 3), 0.5);
	EXPECT_EQ(0, sched_ok());
}

/*
 * cpu.idle: a hog of an idle cgroup beside a normal cgroup's hog on CPU 1
 * gets under 5% of it (the kernel's SCHED_IDLE groups get less; here the
 * lead cap leaves it a little more) but is not starved, and one alone on CPU 0
 * gets the whole CPU.
 */
TEST_F_TIMEOUT(cg, idle_cgroup_runs_where_nothing_else_would, 60)
{
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	const char *idl = cg_make(&self->c, "idl", 100), *busy = cg_make(&self->c, "busy", 100);
	double share, wall;
	cpu_set_t cpu1;

	ASSERT_TRUE(idl != NULL && busy != NULL);
	ASSERT_EQ(0, cg_write(idl, "cpu.idle", "1")) TH_LOG("cpu.idle: %s", strerror(errno));
	CPU_ZERO(&cpu1);
	CPU_SET(1, &cpu1);
	ASSERT_EQ(0, wt_hog_start(&self->c.hogs, 0, &cpu1));
	ASSERT_EQ(1, wt_hog_start(&self->c.hogs, 0, &cpu1));
	ASSERT_EQ(2, wt_hog_on(&self->c.hogs, 0));
	ASSERT_EQ(0, cg_put(&self->c, idl, 0));
	ASSERT_EQ(0, cg_put(&self->c, busy, 1));
	ASSERT_EQ(0, cg_put(&self->c, idl, 2));
	wall = measure(&self->c, 1.0, 4.0, a, b);
	share = cpu_s(a, b, 0, 1) / cpu_s(a, b, 0, 2);
	TH_LOG("idle cgroup's hog: %.1f%% of CPU 1; alone on CPU 0: %.0f%%",
	       share * 100, cpu_s(a, b, 2, 3) / wall * 100);
	EXPECT_GT(0.05, share);
	EXPECT_LT(0ULL, b[0] - a[0]) TH_LOG("the idle cgroup's hog was starved");
	EXPECT_LT(0.9, cpu_s(a, b, 2, 3) / wall);
	EXPECT_EQ(0, sched_ok());
}

#define MON_FILE "/tmp/scx_wsched_cg_monitor.out"

/*
 * The object of @cgroup (its path under the cgroup2 mount) in the last
 * --monitor --json line of MON_FILE that has one, copied to @buf; NULL if
 * none.
 */
static const char *monitor_row(const char *cgroup, char *buf, size_t len)
{
	static char line[16384];
	char key[160], *o, *end;
	const char *found = NULL;
	FILE *f = fopen(MON_FILE, "r");

	if (!f)
		return NULL;
	snprintf(key, sizeof(key), "{\"path\":\"%s\",", cgroup);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "\"cgroups\":[") || !(o = strstr(line, key)) ||
		    !(end = strchr(o, '}')) || (size_t)(end - o) >= len)
			continue;
		memcpy(buf, o, end - o);
		buf[end - o] = '\0';
		found = buf;
	}
	fclose(f);
	return found;
}

/* Member @key of the JSON object @obj as a number (-1: none). */
static double json_num(const char *obj, const char *key)
{
	char k[64];
	const char *v;

	snprintf(k, sizeof(k), "\"%s\":", key);
	v = obj ? strstr(obj, k) : NULL;
	return v ? strtod(v + strlen(k), NULL) : -1;
}

/* Counter @key in the first (@last false) or last --monitor --json line
 * of MON_FILE; -1 if none. */
static double monitor_counter(const char *key, bool last)
{
	static char line[16384];
	double v = -1;
	FILE *f = fopen(MON_FILE, "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "{\"time_s\":", 10))
			continue;
		v = json_num(line, key);
		if (!last)
			break;
	}
	if (f)
		fclose(f);
	return v;
}

/*
 * A hog of a process registered for hints that claims a critical section
 * all its life, entering a nested one all the time so that its cs_count
 * moves: at every slice end it asks for a grace (as the hint tests' liar).
 */
static void liar_loop(struct wt_hog_report *r)
{
	if (ws_thread_register())
		_exit(3);
	ws_critical_enter();	/* and never leaves */
	for (;;) {
		volatile unsigned long x = 0;
		int i;

		for (i = 0; i < 20000; i++)
			x += i;
		ws_critical_enter();
		ws_critical_exit();
		r->cpu_ns = wt_thread_ns();
	}
}

/* Start @n liars in @cg, as cg_hogs() does hogs. */
static int cg_liars(struct wt_cg *self, const char *cg, int n)
{
	int first = self->hogs.n, i, k;
	pid_t pid;

	for (i = 0; i < n; i++) {
		k = self->hogs.n;
		if (k >= WT_MAX_HOGS || (pid = fork()) < 0)
			return -1;
		if (pid == 0)
			liar_loop(&self->hogs.rep[k]);
		self->hogs.pid[k] = pid;
		self->hogs.n++;
		if (cg_put(self, cg, k))
			return -1;
	}
	return first;
}

/*
 * cpu.max of @cpus CPUs (period 100 ms) on 2 x nr_cpus hogs beside
 * nr_cpus free hogs in an unlimited sibling of weight 100: the limited
 * cgroup's CPU time over 5 s is @cpus CPUs within 5%, and the sibling
 * takes the rest (no CPU idles while it could run): together at least 90%
 * of every CPU. The limited one's @weight gives it a share above its
 * quota, so the quota is what binds. With @liars, half the limited hogs
 * are liars (liar_loop()): graces are granted (counted by --monitor), and
 * gain the cgroup nothing past its quota.
 */
static void quota_holds(struct __test_metadata *_metadata, FIXTURE_DATA(cg) *self,
			double cpus, int weight, bool liars)
{
	const char *margs[] = { "--monitor", "1", "--json", "--cgroups", "0", NULL };
	const char *lim = cg_make(&self->c, "lim", weight), *free = cg_make(&self->c, "free", 100);
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	int n = self->nr_cpus;
	double l, f, wall, graces;
	char max[64];
	pid_t pid = -1;

	ASSERT_TRUE(lim != NULL && free != NULL);
	snprintf(max, sizeof(max), "%.0f 100000", cpus * 100000);
	ASSERT_EQ(0, cg_write(lim, "cpu.max", max)) TH_LOG("cpu.max %s: %s", max, strerror(errno));
	ASSERT_EQ(0, liars ? cg_liars(&self->c, lim, n) : cg_hogs(&self->c, lim, n));
	ASSERT_EQ(n, cg_hogs(&self->c, lim, n));
	ASSERT_EQ(2 * n, cg_hogs(&self->c, free, n));
	if (liars) {
		pid = wt_proc_spawn(margs, MON_FILE, NULL);
		ASSERT_LT(0, pid);
	}
	wall = measure(&self->c, 1.0, 5.0, a, b);
	l = cpu_s(a, b, 0, 2 * n) / wall;
	f = cpu_s(a, b, 2 * n, 3 * n) / wall;
	TH_LOG("cpu.max %s: %.3f CPUs (want %.2f), the free sibling %.3f CPUs of %d",
	       max, l, cpus, f, n);
	EXPECT_GT(WT_CG_TOL, (l - cpus) / cpus < 0 ? (cpus - l) / cpus : (l - cpus) / cpus)
		TH_LOG("the limited cgroup used %.3f CPUs, not %.2f", l, cpus);
	EXPECT_LT(0.9 * n, l + f) TH_LOG("CPUs idled while the free sibling could run");
	EXPECT_EQ(0, sched_ok());
	if (!liars)
		return;
	kill(pid, SIGINT);
	EXPECT_EQ(0, wt_wait_exit(pid, 30)) TH_LOG("scx_wsched --monitor failed");
	graces = monitor_counter("nr_grace_granted", true) - monitor_counter("nr_grace_granted", false);
	TH_LOG("graces granted meanwhile: %.0f", graces);
	EXPECT_LT(0, graces) TH_LOG("no grace: the liars' hints were not at work");
	unlink(MON_FILE);
}

/* Half a CPU (cpu.max 50000 100000), its weight's share a CPU or more;
 * half its hogs liars asking for graces. */
TEST_F_TIMEOUT(cg, quota_half_a_cpu, 60)
{
	quota_holds(_metadata, self, 0.5, 100, true);
}

/* Half the CPUs, its weight's share three quarters of them. */
TEST_F_TIMEOUT(cg, quota_half_the_cpus, 60)
{
	quota_holds(_metadata, self, self->nr_cpus / 2.0, 300, false);
}

/*
 * cpu.max set back to max while the cgroup is throttled (its only quota,
 * so no quota is left anywhere): its parked tasks run again at once, and
 * over the next 2 s they get their share, as if never limited.
 */
TEST_F_TIMEOUT(cg, quota_removed_while_throttled_releases_its_tasks, 60)
{
	const char *lim = cg_make(&self->c, "lim", 100);
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	int n = self->nr_cpus;
	double l;

	ASSERT_TRUE(lim != NULL);
	ASSERT_EQ(0, cg_write(lim, "cpu.max", "1000 100000"));
	ASSERT_EQ(0, cg_hogs(&self->c, lim, 2 * n));
	wt_sleep(0.5);	/* a hundredth of a CPU: throttled nearly all the time */
	ASSERT_EQ(0, cg_write(lim, "cpu.max", "max"));
	l = measure(&self->c, 0.2, 2.0, a, b);
	l = cpu_s(a, b, 0, 2 * n) / l;
	TH_LOG("after cpu.max went back to max: %.3f CPUs of %d", l, n);
	EXPECT_LT(0.8 * n, l) TH_LOG("the parked tasks stayed parked");
	EXPECT_EQ(0, sched_ok());
}

/*
 * cpu.max.burst: a cgroup at cpu.max 20000 100000 with a burst of 20000
 * runs a 30 ms chunk of CPU every 200 ms (0.15 CPUs on average, under its
 * quota): each chunk is more than a period's quota but within quota +
 * burst, which the idle periods before it saved up, so none is throttled
 * and each takes about its 30 ms; without the burst each would be
 * throttled at 20 ms and wait for the next period. Ten chunks, after
 * 300 ms of idle: no throttle counted (--monitor), the median chunk's
 * wall time under 45 ms. A vCPU the host stops for long enough stops the
 * share timer that starts each period, and a period it misses gives the
 * burst nothing (as the kernel's own period timer does): ten chunks
 * that miss a bound while a sentinel on either CPU was late by
 * BURST_STALL_NS or more run again, BURST_TRIES times in all.
 */
#define BURST_TRIES	3
#define BURST_STALL_NS	10000000LL

/* Ten chunks in @bur, their wall times into @wall (sorted into
 * @sorted); 0, or -1 if the child failed. */
static int burst_chunks(const char *bur, double *wall, double *sorted)
{
	pid_t kid = fork();
	int i, j, st;

	if (kid < 0)
		return -1;
	if (!kid) {
		char me[32];

		snprintf(me, sizeof(me), "%d", getpid());
		if (cg_write(bur, "cgroup.procs", me))
			_exit(1);
		wt_sleep(0.3);
		for (i = 0; i < 10; i++) {
			unsigned long long c0 = wt_thread_ns();
			double t0 = wt_now();

			while (wt_thread_ns() - c0 < 30 * 1000 * 1000ULL)
				;
			wall[i] = wt_now() - t0;
			wt_sleep(0.2 - wall[i] > 0.1 ? 0.2 - wall[i] : 0.1);
		}
		_exit(0);
	}
	if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	for (i = 0; i < 10; i++) {	/* insertion sort */
		for (j = i; j > 0 && sorted[j - 1] > wall[i]; j--)
			sorted[j] = sorted[j - 1];
		sorted[j] = wall[i];
	}
	return 0;
}

TEST_F_TIMEOUT(cg, burst_lets_saved_quota_run_at_once, 90)
{
	const char *margs[] = { "--monitor", "1", "--json", "--cgroups", "3", NULL };
	const char *bur = cg_make(&self->c, "bur", 100);
	double *wall = mmap(NULL, 10 * sizeof(double), PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double sorted[10], thr = 0, thr0 = 0;
	struct wt_stall stall[2];
	long long late = 0;
	char row[1024];
	const char *r;
	int try, c;
	pid_t pid;

	ASSERT_TRUE(bur != NULL && wall != MAP_FAILED);
	ASSERT_EQ(0, cg_write(bur, "cpu.max", "20000 100000"));
	ASSERT_EQ(0, cg_write(bur, "cpu.max.burst", "20000"))
		TH_LOG("cpu.max.burst: %s", strerror(errno));
	pid = wt_proc_spawn(margs, MON_FILE, NULL);
	ASSERT_LT(0, pid);
	for (try = 0; try < BURST_TRIES; try++) {
		for (c = 0; c < 2; c++)
			wt_stall_start(&stall[c], c);
		ASSERT_EQ(0, burst_chunks(bur, wall, sorted));
		for (c = 0, late = 0; c < 2; c++) {
			struct wt_stall_seen seen = wt_stall_take(&stall[c]);

			if (seen.worst > late)
				late = seen.worst;
			wt_stall_stop(&stall[c]);
		}
		wt_sleep(1.2);	/* a --monitor line after the last chunk */
		r = monitor_row("/scx_wsched_cg/bur", row, sizeof(row));
		ASSERT_NE(NULL, r) TH_LOG("no --monitor row of the cgroup in %s", MON_FILE);
		thr = json_num(r, "nr_throttled") - thr0;
		thr0 += thr;
		TH_LOG("30 ms chunks: %.1f ms median, %.1f-%.1f ms; throttled %.0f times; "
		       "a sentinel late by up to %.1f ms", sorted[4] * 1e3, sorted[0] * 1e3,
		       sorted[9] * 1e3, thr, late * 1e-6);
		if ((thr == 0 && sorted[4] < 0.045) || late < BURST_STALL_NS)
			break;
	}
	kill(pid, SIGINT);
	EXPECT_EQ(0, wt_wait_exit(pid, 30));
	EXPECT_EQ(0, thr) TH_LOG("throttled within its quota plus burst");
	EXPECT_GT(0.045, sorted[4]) TH_LOG("the chunks waited for the next period");
	munmap(wall, 10 * sizeof(double));
	unlink(MON_FILE);
}

/*
 * A parent's cpu.max (a quarter of the CPUs) holds for its subtree: two
 * children at weights 100 and 300, a hog per CPU each, split 1:3. What
 * `scx_wsched --monitor --cgroups` shows meanwhile agrees: the parent's
 * CPUs within 10% of the hogs' own CPU time, its quota, that it was
 * throttled, the children's weights and their order.
 */
TEST_F_TIMEOUT(cg, quota_of_a_parent_holds_for_its_children, 60)
{
	const char *margs[] = { "--monitor", "2", "--json", "--cgroups", "4", NULL };
	const char *top = cg_make(&self->c, "top", 100), *c1, *c2, *rt, *r1, *r2;
	unsigned long long a[WT_MAX_HOGS], b[WT_MAX_HOGS];
	char max[64], bt[1024], b1[1024], b2[1024];
	int n = self->nr_cpus;
	double wall, u1, u2, want = n / 4.0, mon;
	pid_t pid;

	ASSERT_TRUE(top != NULL);
	ASSERT_EQ(0, cg_write(top, "cgroup.subtree_control", "+cpu"));
	snprintf(max, sizeof(max), "%.0f 100000", want * 100000);
	ASSERT_EQ(0, cg_write(top, "cpu.max", max));
	c1 = cg_make(&self->c, "top/c1", 100);
	c2 = cg_make(&self->c, "top/c2", 300);
	ASSERT_TRUE(c1 != NULL && c2 != NULL);
	ASSERT_EQ(0, cg_hogs(&self->c, c1, n));
	ASSERT_EQ(n, cg_hogs(&self->c, c2, n));
	pid = wt_proc_spawn(margs, MON_FILE, NULL);
	ASSERT_LT(0, pid);
	wall = measure(&self->c, 1.0, 5.0, a, b);
	kill(pid, SIGINT);
	EXPECT_EQ(0, wt_wait_exit(pid, 30)) TH_LOG("scx_wsched --monitor failed");
	u1 = cpu_s(a, b, 0, n) / wall;
	u2 = cpu_s(a, b, n, 2 * n) / wall;
	TH_LOG("cpu.max %s on the parent: %.3f CPUs, want %.2f", max, u1 + u2, want);
	expect_share(_metadata, "the subtree's CPUs, over its quota's", (u1 + u2) / want, 1.0);
	expect_share(_metadata, "its weight-300 child", u2 / (u1 + u2), 0.75);
	EXPECT_EQ(0, sched_ok());

	rt = monitor_row("/scx_wsched_cg/top", bt, sizeof(bt));
	r1 = monitor_row("/scx_wsched_cg/top/c1", b1, sizeof(b1));
	r2 = monitor_row("/scx_wsched_cg/top/c2", b2, sizeof(b2));
	ASSERT_TRUE(rt && r1 && r2) TH_LOG("--monitor showed no rows for %s and its children", top);
	mon = json_num(rt, "cpus");
	TH_LOG("--monitor: %s %.3f CPUs, hogs' own time %.3f", top, mon, u1 + u2);
	EXPECT_GT(0.10, fabs(mon - (u1 + u2)) / (u1 + u2))
		TH_LOG("--monitor's CPUs %.3f, the hogs' %.3f", mon, u1 + u2);
	EXPECT_EQ(want * 100000, json_num(rt, "quota_us"));
	EXPECT_EQ(100000, json_num(rt, "period_us"));
	EXPECT_LT(0, json_num(rt, "nr_throttled"));
	EXPECT_LT(0, json_num(rt, "throttled"));
	EXPECT_EQ(100, json_num(r1, "weight"));
	EXPECT_EQ(300, json_num(r2, "weight"));
	EXPECT_LT(json_num(r1, "cpus"), json_num(r2, "cpus"));
	unlink(MON_FILE);
}

WT_TEST_HARNESS_MAIN
