// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * libwsched-preload.so and wsched-run (userspace/preload/) against a fake
 * loader: each test serves the registration protocol on a unix socket from
 * a thread (fake_loader.h, as in ws_hint_test) and runs this
 * same program in "scenario" mode under the preload. This program is built
 * without libwsched, like the programs wsched-run is for: a scenario sees
 * its thread's slot only through the preload's wsched_preload_slot(), and
 * checks what the interposed calls did to it (depth, registration, flags)
 * and that they returned and left errno exactly as the real calls do.
 * A scenario prints "ok" or "FAIL: what" and exits 0 or 1.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fake_loader.h"
#include "wsched/hint.h"

/* ------------------------------------------------------------ scenarios */

static int failed;

#define CHECK(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			printf("FAIL: %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
			printf(__VA_ARGS__);					\
			printf("\n");						\
			failed = 1;						\
		}								\
	} while (0)

static const struct ws_hint_slot *(*slot_fn)(void);

static const struct ws_hint_slot *slot(void)
{
	return slot_fn();
}

static unsigned depth(void)
{
	return __atomic_load_n(&slot()->cs_depth, __ATOMIC_RELAXED);
}

static int registered(void)
{
	const struct ws_hint_slot *s = slot();

	return s->abi_version == WS_HINT_ABI_VERSION &&
	       s->owner_tid == (uint32_t)syscall(SYS_gettid);
}

/* A second ago on @clock: a deadline that has passed. */
static struct timespec past(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec -= 1;
	return ts;
}

/* Another thread holds @m while @fn runs in this one. */
struct holder {
	pthread_mutex_t *m;
	pthread_rwlock_t *rw;
	pthread_spinlock_t *sp;
	int go, done;
};

static void *hold(void *arg)
{
	struct holder *h = arg;

	if (h->m)
		pthread_mutex_lock(h->m);
	if (h->rw)
		pthread_rwlock_wrlock(h->rw);
	if (h->sp)
		pthread_spin_lock(h->sp);
	__atomic_store_n(&h->go, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&h->done, __ATOMIC_ACQUIRE))
		usleep(1000);
	if (h->m)
		pthread_mutex_unlock(h->m);
	if (h->rw)
		pthread_rwlock_unlock(h->rw);
	if (h->sp)
		pthread_spin_unlock(h->sp);
	return NULL;
}

static void held_by_other(struct holder *h, pthread_t *t)
{
	pthread_create(t, NULL, hold, h);
	while (!__atomic_load_n(&h->go, __ATOMIC_ACQUIRE))
		usleep(100);
}

static void release_other(struct holder *h, pthread_t t)
{
	__atomic_store_n(&h->done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
}

static void mutex_of_kind(pthread_mutex_t *m, int kind, int robust)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, kind);
	if (robust)
		pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	pthread_mutexattr_destroy(&a);
}

static void *die_holding(void *arg)
{
	pthread_mutex_lock(arg);
	return NULL;		/* the robust mutex's owner is gone */
}

static void scenario_mutex(void)
{
	static const int kinds[] = { PTHREAD_MUTEX_NORMAL, PTHREAD_MUTEX_RECURSIVE,
				     PTHREAD_MUTEX_ERRORCHECK };
	struct timespec ts = past(CLOCK_REALTIME), mts = past(CLOCK_MONOTONIC);
	pthread_mutex_t m;
	unsigned i;

	CHECK(registered(), "main thread not registered");
	for (i = 0; i < 3; i++) {
		struct holder h = { .m = &m };
		pthread_t t;

		mutex_of_kind(&m, kinds[i], 0);
		errno = 1234;
		CHECK(pthread_mutex_lock(&m) == 0, "kind %d", kinds[i]);
		CHECK(depth() == 1, "kind %d depth %u", kinds[i], depth());
		CHECK(errno == 1234, "errno %d", errno);
		if (kinds[i] == PTHREAD_MUTEX_RECURSIVE) {
			CHECK(pthread_mutex_lock(&m) == 0, "recursive relock");
			CHECK(depth() == 2, "recursive depth %u", depth());
			CHECK(pthread_mutex_unlock(&m) == 0, "recursive unlock");
			CHECK(depth() == 1, "recursive depth %u", depth());
		}
		if (kinds[i] == PTHREAD_MUTEX_ERRORCHECK) {
			CHECK(pthread_mutex_lock(&m) == EDEADLK, "errorcheck relock");
			CHECK(depth() == 1, "after EDEADLK depth %u", depth());
		}
		CHECK(pthread_mutex_unlock(&m) == 0, "kind %d unlock", kinds[i]);
		CHECK(depth() == 0, "kind %d depth after unlock %u", kinds[i], depth());
		CHECK(errno == 1234, "errno %d", errno);
		if (kinds[i] == PTHREAD_MUTEX_ERRORCHECK) {
			CHECK(pthread_mutex_unlock(&m) == EPERM, "errorcheck unlock unowned");
			CHECK(depth() == 0, "after EPERM depth %u", depth());
		}

		held_by_other(&h, &t);
		CHECK(pthread_mutex_trylock(&m) == EBUSY, "trylock of a held mutex");
		CHECK(depth() == 0, "after EBUSY depth %u", depth());
		CHECK(pthread_mutex_timedlock(&m, &ts) == ETIMEDOUT, "timedlock");
		CHECK(depth() == 0, "after ETIMEDOUT depth %u", depth());
		CHECK(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mts) == ETIMEDOUT, "clocklock");
		CHECK(depth() == 0, "after clocklock ETIMEDOUT depth %u", depth());
		release_other(&h, t);

		CHECK(pthread_mutex_trylock(&m) == 0, "trylock of a free mutex");
		CHECK(depth() == 1, "trylock depth %u", depth());
		pthread_mutex_unlock(&m);
		CHECK(pthread_mutex_timedlock(&m, &ts) == 0, "timedlock of a free mutex");
		CHECK(depth() == 1, "timedlock depth %u", depth());
		pthread_mutex_unlock(&m);
		CHECK(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &mts) == 0, "clocklock free");
		CHECK(depth() == 1, "clocklock depth %u", depth());
		pthread_mutex_unlock(&m);
		CHECK(depth() == 0, "depth %u", depth());
		pthread_mutex_destroy(&m);
	}

	/* Robust: the owner died holding it; the next lock gets it with
	 * EOWNERDEAD (held), until made consistent. */
	{
		pthread_t t;

		mutex_of_kind(&m, PTHREAD_MUTEX_NORMAL, 1);
		pthread_create(&t, NULL, die_holding, &m);
		pthread_join(t, NULL);
		CHECK(pthread_mutex_lock(&m) == EOWNERDEAD, "robust lock");
		CHECK(depth() == 1, "EOWNERDEAD holds it: depth %u", depth());
		CHECK(pthread_mutex_consistent(&m) == 0, "consistent");
		CHECK(pthread_mutex_unlock(&m) == 0, "robust unlock");
		CHECK(depth() == 0, "depth %u", depth());
	}
}

static void scenario_spin_rwlock(void)
{
	struct timespec ts = past(CLOCK_REALTIME), mts = past(CLOCK_MONOTONIC);
	pthread_spinlock_t sp;
	pthread_rwlock_t rw;
	struct holder h = { 0 };
	pthread_t t;

	pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
	CHECK(pthread_spin_lock(&sp) == 0, "spin lock");
	CHECK(depth() == 1, "spin depth %u", depth());
	CHECK(pthread_spin_trylock(&sp) == EBUSY, "spin trylock held");
	CHECK(depth() == 1, "after EBUSY depth %u", depth());
	CHECK(pthread_spin_unlock(&sp) == 0, "spin unlock");
	CHECK(depth() == 0, "depth %u", depth());
	CHECK(pthread_spin_trylock(&sp) == 0, "spin trylock free");
	CHECK(depth() == 1, "depth %u", depth());
	pthread_spin_unlock(&sp);

	pthread_rwlock_init(&rw, NULL);
	CHECK(pthread_rwlock_rdlock(&rw) == 0, "rdlock");
	CHECK(pthread_rwlock_tryrdlock(&rw) == 0, "second reader");
	CHECK(depth() == 2, "two read holds: depth %u", depth());
	CHECK(pthread_rwlock_trywrlock(&rw) == EBUSY, "trywrlock while read-held");
	CHECK(depth() == 2, "depth %u", depth());
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_unlock(&rw);
	CHECK(depth() == 0, "depth %u", depth());
	CHECK(pthread_rwlock_wrlock(&rw) == 0, "wrlock");
	CHECK(depth() == 1, "depth %u", depth());
	CHECK(pthread_rwlock_unlock(&rw) == 0, "unlock");
	CHECK(pthread_rwlock_timedwrlock(&rw, &ts) == 0, "timedwrlock free");
	pthread_rwlock_unlock(&rw);
	CHECK(pthread_rwlock_clockrdlock(&rw, CLOCK_MONOTONIC, &mts) == 0, "clockrdlock free");
	CHECK(depth() == 1, "depth %u", depth());
	pthread_rwlock_unlock(&rw);

	h.rw = &rw;
	held_by_other(&h, &t);
	CHECK(pthread_rwlock_timedrdlock(&rw, &ts) == ETIMEDOUT, "timedrdlock");
	CHECK(pthread_rwlock_clockwrlock(&rw, CLOCK_MONOTONIC, &mts) == ETIMEDOUT, "clockwrlock");
	CHECK(pthread_rwlock_tryrdlock(&rw) == EBUSY, "tryrdlock");
	CHECK(depth() == 0, "after failures depth %u", depth());
	release_other(&h, t);
	CHECK(depth() == 0, "depth %u", depth());
}

static void scenario_cond(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	struct timespec ts = past(CLOCK_REALTIME), mts = past(CLOCK_MONOTONIC);

	pthread_mutex_lock(&m);
	CHECK(pthread_cond_timedwait(&c, &m, &ts) == ETIMEDOUT, "timedwait");
	CHECK(depth() == 1, "holds the mutex again: depth %u", depth());
	CHECK(pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &mts) == ETIMEDOUT, "clockwait");
	CHECK(depth() == 1, "depth %u", depth());
	pthread_mutex_unlock(&m);
	CHECK(depth() == 0, "depth %u", depth());
}

static void scenario_omp(void)
{
	omp_lock_t l;
	omp_nest_lock_t n;
	unsigned in_critical = 0, bad = 0;

	omp_init_lock(&l);
	omp_set_lock(&l);
	CHECK(depth() == 1, "omp_set_lock depth %u", depth());
	CHECK(!omp_test_lock(&l), "omp_test_lock of a held lock");
	CHECK(depth() == 1, "depth %u", depth());
	omp_unset_lock(&l);
	CHECK(depth() == 0, "depth %u", depth());
	CHECK(omp_test_lock(&l), "omp_test_lock of a free lock");
	CHECK(depth() == 1, "depth %u", depth());
	omp_unset_lock(&l);
	omp_destroy_lock(&l);

	omp_init_nest_lock(&n);
	omp_set_nest_lock(&n);
	CHECK(omp_test_nest_lock(&n) == 2, "nest count");
	CHECK(depth() == 2, "nested depth %u", depth());
	omp_unset_nest_lock(&n);
	omp_unset_nest_lock(&n);
	CHECK(depth() == 0, "depth %u", depth());
	omp_destroy_nest_lock(&n);

#pragma omp parallel num_threads(4) reduction(+ : in_critical, bad)
	{
		if (!registered())
			bad++;
#pragma omp critical
		{
			in_critical += depth() == 1;
		}
#pragma omp critical(named)
		{
			in_critical += depth() == 1;
		}
		if (depth() != 0)
			bad++;
	}
	CHECK(in_critical == 8, "%u of 8 critical sections marked", in_critical);
	CHECK(bad == 0, "%u threads unregistered or marked outside", bad);
}

static void *thread_check(void *arg)
{
	pthread_mutex_t *m = arg;
	long ok = registered();

	pthread_mutex_lock(m);
	ok &= depth() == 1;
	pthread_mutex_unlock(m);
	return (void *)ok;
}

static void *exit_holding(void *arg)
{
	const struct ws_hint_slot **out = arg;

	*out = slot();
	pthread_mutex_lock((pthread_mutex_t *)(out + 1)[0]);
	pthread_exit(NULL);
}

/* Holds the mutex at @arg until cancelled (at a cancellation point). */
static void *cancel_holding(void *arg)
{
	void **io = arg;

	io[1] = (void *)slot();
	pthread_mutex_lock(io[0]);
	for (;;)
		pause();	/* a cancellation point */
	return NULL;
}

static pthread_t ctor_thread;
static long ctor_registered = -1;

static void *ctor_check(void *arg)
{
	return (void *)(long)registered();
}

/* A thread started before main (by a constructor) registers too. */
__attribute__((constructor)) static void start_ctor_thread(void)
{
	slot_fn = (const struct ws_hint_slot *(*)(void))dlsym(RTLD_DEFAULT, "wsched_preload_slot");
	if (slot_fn && getenv("PRELOAD_TEST_SCENARIO"))
		pthread_create(&ctor_thread, NULL, ctor_check, NULL);
}

static void scenario_threads(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, held = PTHREAD_MUTEX_INITIALIZER;
	pthread_t t[64];
	const struct ws_hint_slot *exited[2] = { NULL, (void *)&held };
	void *ret;
	int i, ok = 0;

	pthread_join(ctor_thread, &ret);
	ctor_registered = (long)ret;
	CHECK(ctor_registered == 1, "the constructor's thread was not registered");
	for (i = 0; i < 64; i++)
		pthread_create(&t[i], NULL, thread_check, &m);
	for (i = 0; i < 64; i++) {
		pthread_join(t[i], &ret);
		ok += ret != NULL;
	}
	CHECK(ok == 64, "%d of 64 threads registered and marked", ok);

	/* A thread that exits holding a lock gives its slot back. */
	pthread_create(&t[0], NULL, exit_holding, exited);
	pthread_join(t[0], NULL);
	CHECK(exited[0] && exited[0]->owner_tid == 0 && exited[0]->cs_depth == 0,
	      "slot of an exited holder: owner %u depth %u",
	      exited[0] ? exited[0]->owner_tid : 0, exited[0] ? exited[0]->cs_depth : 0);

	/* The same for a thread cancelled while it holds a lock. */
	{
		pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
		void *io[2] = { &cm, NULL };
		const struct ws_hint_slot *cs;

		pthread_create(&t[0], NULL, cancel_holding, io);
		while (!__atomic_load_n(&io[1], __ATOMIC_ACQUIRE) ||
		       pthread_mutex_trylock(&cm) == 0) {
			if (__atomic_load_n(&io[1], __ATOMIC_ACQUIRE))
				pthread_mutex_unlock(&cm);	/* not taken yet */
			usleep(1000);
		}
		cs = io[1];
		CHECK(cs->cs_depth == 1, "cancelled holder's depth before %u", cs->cs_depth);
		pthread_cancel(t[0]);
		pthread_join(t[0], &ret);
		CHECK(ret == PTHREAD_CANCELED, "not cancelled");
		CHECK(cs->owner_tid == 0 && cs->cs_depth == 0,
		      "slot of a cancelled holder: owner %u depth %u", cs->owner_tid, cs->cs_depth);
	}
}

/* 1000 threads alive at once, each with a slot of its own. */
#define MANY 1000
static pthread_barrier_t many_barrier;

static void *many_check(void *arg)
{
	long ok = registered();

	pthread_barrier_wait(&many_barrier);
	return (void *)ok;
}

static void scenario_many_threads(void)
{
	static pthread_t t[MANY];
	pthread_attr_t a;
	void *ret;
	int i, ok = 0, made = 0;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	pthread_barrier_init(&many_barrier, NULL, MANY + 1);
	for (i = 0; i < MANY; i++)
		made += !pthread_create(&t[i], &a, many_check, NULL);
	CHECK(made == MANY, "created %d of %d threads", made, MANY);
	if (made != MANY)
		return;
	pthread_barrier_wait(&many_barrier);
	for (i = 0; i < MANY; i++) {
		pthread_join(t[i], &ret);
		ok += ret != NULL;
	}
	CHECK(ok == MANY, "%d of %d threads registered", ok, MANY);
}

static void scenario_fork(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
	int status;
	pid_t pid;

	pthread_mutex_lock(&m);
	CHECK(depth() == 1, "depth %u", depth());
	pid = fork();
	if (pid == 0) {
		int bad = registered();		/* the parent's slot is not ours */

		pthread_mutex_unlock(&m);
		pthread_mutex_lock(&m2);	/* registers on its own */
		bad |= !registered() << 1;
		bad |= (depth() != 1) << 2;
		pthread_mutex_unlock(&m2);
		_exit(bad);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK(registered() && depth() == 1, "parent keeps its slot and depth %u", depth());
	pthread_mutex_unlock(&m);
}

static void scenario_exit_holding(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&m);
	CHECK(depth() == 1, "depth %u", depth());
	printf("ok\n");
	fflush(stdout);
	exit(0);	/* with the lock held */
}

static void scenario_flags(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	const char *off = getenv("WSCHED_PRELOAD_OFF");
	unsigned want_flags = off && strstr(off, "yield") ? WS_HINT_FLAG_YIELD_PLAIN : 0;
	unsigned want_depth = off && strstr(off, "locks") ? 0 : 1;

	CHECK(registered(), "not registered");
	CHECK(slot()->flags == want_flags, "flags %#x, want %#x", slot()->flags, want_flags);
	pthread_mutex_lock(&m);
	CHECK(depth() == want_depth, "depth %u, want %u", depth(), want_depth);
	pthread_mutex_unlock(&m);
	CHECK(sched_yield() == 0, "sched_yield");
}

/*
 * 200 sched_yield() calls holding a mutex, then 200 holding nothing, on
 * CPU 1 (the guest test reads what the scheduler made of them).
 */
static void scenario_yield_cs(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	cpu_set_t set;
	int i;

	CPU_ZERO(&set);
	CPU_SET(1, &set);
	CHECK(sched_setaffinity(0, sizeof(set), &set) == 0, "pin to CPU 1: %s", strerror(errno));
	CHECK(registered(), "not registered");
	pthread_mutex_lock(&m);
	for (i = 0; i < 200; i++)
		CHECK(sched_yield() == 0, "sched_yield in a section");
	pthread_mutex_unlock(&m);
	for (i = 0; i < 200; i++)
		CHECK(sched_yield() == 0, "sched_yield");
}

/*
 * Registration failed for good (no loader, no access): the calls go
 * straight to libc, marking nothing, and return what libc returns.
 */
static void scenario_unregistered(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_spinlock_t sp;
	pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;

	CHECK(!registered(), "registered without a loader");
	CHECK(pthread_mutex_lock(&m) == 0, "mutex lock");
	CHECK(depth() == 0, "a mutex marked without a loader: private slot depth %u", depth());
	CHECK(pthread_mutex_trylock(&m) == EBUSY, "trylock of a held mutex");
	CHECK(pthread_mutex_unlock(&m) == 0, "mutex unlock");
	pthread_spin_init(&sp, PTHREAD_PROCESS_PRIVATE);
	CHECK(pthread_spin_lock(&sp) == 0, "spin lock");
	CHECK(depth() == 0, "a spin lock marked without a loader: depth %u", depth());
	CHECK(pthread_spin_trylock(&sp) == EBUSY, "trylock of a held spin lock");
	CHECK(pthread_spin_unlock(&sp) == 0, "spin unlock");
	CHECK(pthread_rwlock_rdlock(&rw) == 0, "rdlock");
	CHECK(depth() == 0, "an rwlock marked without a loader: depth %u", depth());
	CHECK(pthread_rwlock_trywrlock(&rw) == EBUSY, "trywrlock of a read-held rwlock");
	CHECK(pthread_rwlock_unlock(&rw) == 0, "rwlock unlock");
	CHECK(depth() == 0, "depth %u after the unlocks", depth());
}

/* 200 us holding a pthread spin lock, 100 us outside, forever (the guest's
 * grace test runs it beside a hog and kills it). */
static void spin_for_ns(long ns)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < ns);
}

static void scenario_spin_cs(void)
{
	pthread_spinlock_t l;

	pthread_spin_init(&l, PTHREAD_PROCESS_PRIVATE);
	for (;;) {
		pthread_spin_lock(&l);
		spin_for_ns(200000);
		pthread_spin_unlock(&l);
		spin_for_ns(100000);
	}
}

static void scenario_env(void)
{
	const char *ld = getenv("LD_PRELOAD");

	printf("LD_PRELOAD=%s\n", ld ? ld : "");
}

static int run_scenario(const char *name)
{
	static const struct { const char *name; void (*fn)(void); } all[] = {
		{ "mutex", scenario_mutex }, { "spin_rwlock", scenario_spin_rwlock },
		{ "cond", scenario_cond }, { "omp", scenario_omp },
		{ "threads", scenario_threads }, { "fork", scenario_fork },
		{ "many_threads", scenario_many_threads },
		{ "exit_holding", scenario_exit_holding }, { "flags", scenario_flags },
		{ "unregistered", scenario_unregistered }, { "env", scenario_env },
		{ "spin_cs", scenario_spin_cs }, { "yield_cs", scenario_yield_cs },
	};
	unsigned i;

	slot_fn = (const struct ws_hint_slot *(*)(void))dlsym(RTLD_DEFAULT, "wsched_preload_slot");
	if (!slot_fn && strcmp(name, "env")) {
		printf("FAIL: not running under libwsched-preload.so\n");
		return 1;
	}
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(all[i].name, name)) {
			all[i].fn();
			if (!failed)
				printf("ok\n");
			return failed;
		}
	}
	printf("FAIL: no scenario '%s'\n", name);
	return 1;
}

/* ------------------------------------------------------------ running them */

static char self_exe[4096], build_dir[4096];

static void find_build(void)
{
	ssize_t n = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
	char *p;

	self_exe[n > 0 ? n : 0] = 0;
	strcpy(build_dir, self_exe);
	/* build/tests/native/preload_test -> build */
	for (int i = 0; i < 3; i++) {
		p = strrchr(build_dir, '/');
		if (p)
			*p = 0;
	}
}

/* Run the next program as nobody (root reaches any socket). */
static int run_as_nobody;

struct result {
	int status;
	char out[8192], err[8192];
};

static void slurp(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = 0;
	close(fd);
}

/*
 * Run argv (NULL-terminated) with extra environment @env ("K=V" strings,
 * NULL-terminated; "K=" unsets K), capturing stdout and stderr.
 */
static void run(struct result *r, char *const argv[], const char *const env[])
{
	int out[2], err[2];
	pid_t pid;

	if (pipe(out) || pipe(err))
		abort();
	pid = fork();
	if (pid == 0) {
		for (; env && *env; env++) {
			char k[256];
			const char *eq = strchr(*env, '=');

			snprintf(k, sizeof(k), "%.*s", (int)(eq - *env), *env);
			if (eq[1])
				setenv(k, eq + 1, 1);
			else
				unsetenv(k);
		}
		if (run_as_nobody) {
			char lib[4200];

			snprintf(lib, sizeof(lib), "%s/lib/libwsched-preload.so", build_dir);
			if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
				_exit(126);
			/* This build tree may be private to its owner. */
			if (access(argv[0], X_OK) || access(self_exe, X_OK) || access(lib, R_OK))
				_exit(125);
		}
		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	slurp(out[0], r->out, sizeof(r->out));
	slurp(err[0], r->err, sizeof(r->err));
	waitpid(pid, &r->status, 0);
}

static int exit_code(const struct result *r)
{
	return WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status);
}

/* Let wsched-run say why cooperation is off (else --quiet). */
static int loud;

/* wsched-run [--quiet] [opts...] -- self SCENARIO, with @sock as the
 * hint socket. */
static void scenario_under(struct result *r, const char *sock, const char *scenario,
			   const char *opt1, const char *opt2)
{
	char run_path[4200], sock_opt[200];
	char *argv[12];
	int n = 0;
	const char *env[] = { "PRELOAD_TEST_SCENARIO=1", NULL };

	snprintf(run_path, sizeof(run_path), "%s/bin/wsched-run", build_dir);
	snprintf(sock_opt, sizeof(sock_opt), "--hint-socket=%s", sock);
	argv[n++] = run_path;
	argv[n++] = sock_opt;
	if (!loud)
		argv[n++] = "--quiet";
	if (opt1)
		argv[n++] = (char *)opt1;
	if (opt2)
		argv[n++] = (char *)opt2;
	argv[n++] = "--";
	argv[n++] = self_exe;
	argv[n++] = "--scenario";
	argv[n++] = (char *)scenario;
	argv[n] = NULL;
	run(r, argv, env);
}

FIXTURE(preload) {
	struct fake_loader f;
	struct result r;
};

FIXTURE_SETUP(preload)
{
	find_build();
	ASSERT_EQ(0, fake_start(&self->f, WS_HINT_ABI_VERSION));
}

FIXTURE_TEARDOWN(preload)
{
	fake_stop(&self->f);
}

#define EXPECT_SCENARIO_OK(r)							\
	do {									\
		EXPECT_EQ(0, exit_code(r)) TH_LOG("out: %s err: %s", (r)->out, (r)->err); \
		EXPECT_EQ(0, strcmp((r)->out, "ok\n")) TH_LOG("out: %s", (r)->out); \
		EXPECT_EQ(0, strcmp((r)->err, "")) TH_LOG("err: %s", (r)->err);	\
	} while (0)

TEST_F(preload, every_mutex_kind_marks_its_holder_and_keeps_results)
{
	scenario_under(&self->r, self->f.path, "mutex", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, spin_locks_and_rwlocks_mark_their_holders)
{
	scenario_under(&self->r, self->f.path, "spin_rwlock", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, condition_wait_leaves_and_reenters_the_section)
{
	scenario_under(&self->r, self->f.path, "cond", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, omp_critical_and_omp_locks_mark_their_holders)
{
	scenario_under(&self->r, self->f.path, "omp", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, every_thread_registers_and_an_exiting_or_cancelled_holder_frees_its_slot)
{
	scenario_under(&self->r, self->f.path, "threads", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, thousand_threads_all_registered)
{
	scenario_under(&self->r, self->f.path, "many_threads", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, fork_child_starts_unregistered_and_registers_itself)
{
	scenario_under(&self->r, self->f.path, "fork", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
	/* the parent and the child each connected once */
	EXPECT_EQ(2, __atomic_load_n(&self->f.nr, __ATOMIC_RELAXED));
}

TEST_F(preload, process_exiting_with_a_lock_held_exits_normally)
{
	scenario_under(&self->r, self->f.path, "exit_holding", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, families_turn_off_one_by_one)
{
	scenario_under(&self->r, self->f.path, "flags", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
	scenario_under(&self->r, self->f.path, "flags", "--no-yield", NULL);
	EXPECT_SCENARIO_OK(&self->r);
	scenario_under(&self->r, self->f.path, "flags", "--no-locks", NULL);
	EXPECT_SCENARIO_OK(&self->r);
	scenario_under(&self->r, self->f.path, "flags", "--no-locks", "--no-yield");
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, no_loader_runs_the_program_and_says_so_once)
{
	char missing[200];

	snprintf(missing, sizeof(missing), "%s/none", self->f.dir);
	loud = 1;
	scenario_under(&self->r, missing, "unregistered", NULL, NULL);
	EXPECT_EQ(0, exit_code(&self->r)) TH_LOG("%s %s", self->r.out, self->r.err);
	EXPECT_EQ(0, strcmp(self->r.out, "ok\n")) TH_LOG("out: %s", self->r.out);
	if (access("/sys/kernel/sched_ext", F_OK)) {
		EXPECT_NE(NULL, strstr(self->r.err, "this kernel has no sched_ext"))
			TH_LOG("err: %s", self->r.err);
	} else {
		EXPECT_NE(NULL, strstr(self->r.err, "no scx_wsched loader serves hints"))
			TH_LOG("err: %s", self->r.err);
	}
	/* exactly one line */
	EXPECT_EQ(strlen(self->r.err) - 1, (size_t)(strchr(self->r.err, '\n') - self->r.err));
	loud = 0;
	scenario_under(&self->r, missing, "unregistered", NULL, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

/*
 * A user who may not use the socket (here: its directory is private to the
 * test's user; as root the program runs as nobody) runs unregistered, and
 * is told why once.
 */
TEST_F(preload, inaccessible_socket_runs_the_program_unregistered)
{
	if (geteuid() == 0) {
		run_as_nobody = 1;
	} else {
		ASSERT_EQ(0, chmod(self->f.path, 0));
	}
	loud = 1;
	scenario_under(&self->r, self->f.path, "unregistered", NULL, NULL);
	loud = 0;
	run_as_nobody = 0;
	chmod(self->f.path, 0777);
	if (exit_code(&self->r) == 125)
		SKIP(return, "nobody cannot run the programs of this build tree");
	EXPECT_EQ(0, exit_code(&self->r)) TH_LOG("%s %s", self->r.out, self->r.err);
	EXPECT_EQ(0, strcmp(self->r.out, "ok\n")) TH_LOG("out: %s", self->r.out);
	if (!access("/sys/kernel/sched_ext", F_OK))
		EXPECT_NE(NULL, strstr(self->r.err, "may not use the hint socket"))
			TH_LOG("err: %s", self->r.err);
}

TEST_F(preload, exec_inherits_the_preload_unless_told_not_to)
{
	scenario_under(&self->r, self->f.path, "env", NULL, NULL);
	EXPECT_NE(NULL, strstr(self->r.out, "libwsched-preload.so")) TH_LOG("%s", self->r.out);
	scenario_under(&self->r, self->f.path, "env", "--no-inherit", NULL);
	EXPECT_EQ(NULL, strstr(self->r.out, "libwsched-preload.so")) TH_LOG("%s", self->r.out);
	EXPECT_NE(NULL, strstr(self->r.out, "LD_PRELOAD=")) TH_LOG("%s", self->r.out);
}

/*
 * A plugin that brings libgomp with it, opened, closed and opened again by
 * a program that does not link libgomp: its omp locks are marked both
 * times, and libgomp stays mapped after the first close (the preload keeps
 * the addresses it resolved there).
 */
TEST_F(preload, dlopen_dlclose_of_a_library_using_omp_locks)
{
	char run_path[4200], prog[4200], plugin[4200], sock_opt[200];
	char *argv[7];

	snprintf(run_path, sizeof(run_path), "%s/bin/wsched-run", build_dir);
	snprintf(prog, sizeof(prog), "%s/tests/native/preload_dlopen", build_dir);
	snprintf(plugin, sizeof(plugin), "%s/tests/native/preload_plugin.so", build_dir);
	snprintf(sock_opt, sizeof(sock_opt), "--hint-socket=%s", self->f.path);
	argv[0] = run_path;
	argv[1] = sock_opt;
	argv[2] = "--quiet";
	argv[3] = "--";
	argv[4] = prog;
	argv[5] = plugin;
	argv[6] = NULL;
	run(&self->r, argv, NULL);
	EXPECT_SCENARIO_OK(&self->r);
}

TEST_F(preload, static_program_runs_with_a_warning_or_is_refused)
{
	char run_path[4200], stat_path[4200];
	char *argv[5];

	snprintf(run_path, sizeof(run_path), "%s/bin/wsched-run", build_dir);
	snprintf(stat_path, sizeof(stat_path), "%s/tests/native/preload_static", build_dir);
	argv[0] = run_path;
	argv[1] = "--";
	argv[2] = stat_path;
	argv[3] = "7";
	argv[4] = NULL;
	run(&self->r, argv, NULL);
	EXPECT_EQ(7, exit_code(&self->r)) TH_LOG("%s", self->r.err);
	EXPECT_NE(NULL, strstr(self->r.err, "statically linked")) TH_LOG("%s", self->r.err);
	argv[1] = "--static=refuse";
	argv[2] = "--";
	argv[3] = stat_path;
	run(&self->r, argv, NULL);
	EXPECT_EQ(2, exit_code(&self->r));
	EXPECT_NE(NULL, strstr(self->r.err, "refusing")) TH_LOG("%s", self->r.err);
}

TEST_F(preload, bad_options_and_missing_programs_fail_with_one_line)
{
	char run_path[4200];
	char *argv[6];

	snprintf(run_path, sizeof(run_path), "%s/bin/wsched-run", build_dir);
	argv[0] = run_path;
	argv[1] = "--static=maybe";
	argv[2] = "true";
	argv[3] = NULL;
	run(&self->r, argv, NULL);
	EXPECT_EQ(2, exit_code(&self->r));
	EXPECT_NE(NULL, strstr(self->r.err, "--static takes")) TH_LOG("%s", self->r.err);
	argv[1] = "--";
	argv[2] = "/nonexistent/program";
	run(&self->r, argv, NULL);
	EXPECT_EQ(127, exit_code(&self->r));
	EXPECT_NE(NULL, strstr(self->r.err, "cannot run")) TH_LOG("%s", self->r.err);
	argv[1] = NULL;
	run(&self->r, argv, NULL);
	EXPECT_EQ(2, exit_code(&self->r));
	EXPECT_NE(NULL, strstr(self->r.err, "no PROGRAM")) TH_LOG("%s", self->r.err);
	/* An empty PATH entry is the current directory, as for execvp. */
	{
		const char *env[] = { "PATH=:/nonexistent", NULL };
		char cwd[4200], dir[4200];

		ASSERT_NE(NULL, getcwd(cwd, sizeof(cwd)));
		snprintf(dir, sizeof(dir), "%s/tests/native", build_dir);
		ASSERT_EQ(0, chdir(dir));
		argv[1] = "--quiet";
		argv[2] = "--static=refuse";
		argv[3] = "--";
		argv[4] = "preload_static";
		argv[5] = NULL;
		run(&self->r, argv, env);
		/* found, so refused as static (2), not "cannot run" (127) */
		EXPECT_EQ(2, exit_code(&self->r)) TH_LOG("%s", self->r.err);
		EXPECT_NE(NULL, strstr(self->r.err, "statically linked")) TH_LOG("%s", self->r.err);
		ASSERT_EQ(0, chdir(cwd));
	}
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--scenario"))
		return run_scenario(argv[2]);
	return test_harness_run(argc, argv);
}
