// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * libwsched-preload.so: scx_wsched's cooperation for a program that was not
 * written against libwsched, by interposition (LD_PRELOAD; wsched-run sets
 * it up). Documentation/wsched-run.md is the user's guide.
 *
 * What it does
 * - Registers every thread of the process (lib/hint.c): the main thread
 *   from this library's constructor, every thread created with
 *   pthread_create from a start routine that wraps the program's (also the
 *   threads other libraries' constructors start before ours ran), and, in
 *   a fork child, the forking thread at its first interposed call (a child
 *   that only execs costs nothing).
 * - Marks as a critical section (ws_critical_enter/exit) the time a thread
 *   holds a pthread mutex (any kind; a lock call that returns 0 or
 *   EOWNERDEAD acquired it, a trylock only when it succeeds), a pthread
 *   spin lock or a pthread rwlock (reader or writer), minus the time it
 *   waits in pthread_cond_*wait (which releases the mutex inside libc), and
 *   the time between libgomp's critical/atomic/lock entry points and their
 *   matching ends.
 * - Once the process gave up registering (no loader, no access), leaves
 *   the unregistered threads' calls as they are: straight to the real ones.
 * - A sched_yield() outside every section is then an ABP yield (scx_wsched
 *   puts a registered thread that yields at depth 0 behind every task
 *   waiting on its CPU); inside a section it keeps its plain meaning. With
 *   the yield family off, the thread's slot asks for plain yields always
 *   (WS_HINT_FLAG_YIELD_PLAIN).
 *
 * What it must not change: every interposed call returns what the real one
 * returns and leaves errno as the real one left it; cancellation points stay
 * the real ones (the wrapper adds no blocking call); nothing here allocates
 * on a lock path. The real functions are found with dlsym(RTLD_NEXT) on
 * first use: interposed calls may arrive before our constructor ran.
 *
 * Families (WSCHED_PRELOAD_OFF, a comma-separated list, read once):
 * "locks" (pthread mutex, spin, rwlock), "omp" (libgomp), "yield" (ABP
 * yields), "inherit" (remove this library from LD_PRELOAD for the programs
 * this one execs).
 *
 * Concurrency: the resolved function pointers are written at most once per
 * value (every thread resolves the same address: relaxed atomics suffice);
 * the "hot" word says above it why relaxed is enough. Per-thread state is
 * thread-local.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wsched/thread.h"
#include "hint_internal.h"

/* The interposed entry points: this library's interface. */
#define EXPORT __attribute__((visibility("default")))

/*
 * The word every interposed call reads (relaxed: each bit is written once,
 * or, for HOT_PENDING, by the only thread of a fork child and then by that
 * thread): which families are on, whether it was parsed yet, whether a
 * fork child's thread still has to register, and whether the process gave
 * up registering (HOT_OFF).
 *
 * HOT_OFF is set when a registration failed for a reason that will not
 * change while the process lives (no loader, no access, another ABI): no
 * thread of this library tries again, and a fork child inherits it. From
 * then on an unregistered thread's marks could never reach a scheduler
 * (only registration carries the private slot's depth into a shared one),
 * so its interposed calls go straight to the real ones, as if this library
 * were not loaded. A thread that registers anyway (the program calling
 * libwsched's ws_thread_register, which binds to this library's copy) is
 * marked again from its next lock on; a lock it held while registering is
 * not in its depth then, which the unmark's floor at 0 absorbs. Accepted:
 * a thread holding a lock at the moment HOT_OFF is set keeps a private
 * depth that its unlock no longer lowers; it matters only to such a late
 * registration, which then starts inside a section that never ends.
 */
enum {
	FAM_LOCKS	= 1u << 0,
	FAM_OMP		= 1u << 1,
	FAM_YIELD	= 1u << 2,
	FAM_INHERIT	= 1u << 3,
	FAM_ALL		= FAM_LOCKS | FAM_OMP | FAM_YIELD | FAM_INHERIT,
	HOT_OFF		= 1u << 29,
	HOT_PENDING	= 1u << 30,
	HOT_PARSED	= 1u << 31,
};

static unsigned hot;

static unsigned families_parse(void)
{
	const char *off = secure_getenv("WSCHED_PRELOAD_OFF");
	static const struct { const char *name; unsigned bit; } names[] = {
		{ "locks", FAM_LOCKS }, { "omp", FAM_OMP },
		{ "yield", FAM_YIELD }, { "inherit", FAM_INHERIT },
	};
	unsigned m = FAM_ALL;

	while (off && *off) {
		size_t n = strcspn(off, ",");
		unsigned i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i].name) == n && !strncmp(off, names[i].name, n))
				m &= ~names[i].bit;
		off += n + (off[n] == ',');
	}
	return m;
}

/* Out of line and cold: the lock paths stay a load and two branches. */
static __attribute__((noinline, cold)) unsigned hot_init(void)
{
	__atomic_fetch_or(&hot, families_parse() | HOT_PARSED, __ATOMIC_RELAXED);
	return __atomic_load_n(&hot, __ATOMIC_RELAXED);
}

static __attribute__((always_inline)) inline unsigned hot_load(void)
{
	unsigned m = __atomic_load_n(&hot, __ATOMIC_RELAXED);

	if (__builtin_expect(!(m & HOT_PARSED), 0))
		m = hot_init();
	return m;
}

static inline unsigned families(void)
{
	return hot_load() & FAM_ALL;
}

/* --------------------------------------------------------------- registration */

static inline bool proc_off(void)
{
	return __atomic_load_n(&hot, __ATOMIC_RELAXED) & HOT_OFF;
}

static __thread int in_register __attribute__((tls_model("initial-exec")));

static void report(int err)
{
	const char *path = secure_getenv("WSCHED_HINT_SOCKET");
	const char *why;

	/* wsched-run asks for one line about the process it started, not about
	 * every program that process runs later. */
	if (!getenv("WSCHED_RUN_REPORT"))
		return;
	unsetenv("WSCHED_RUN_REPORT");
	if (!path || !*path)
		path = WS_HINT_SOCK_PATH;
	switch (err) {
	case -ENOENT:
	case -ECONNREFUSED:
		why = "no scx_wsched loader serves hints at";
		break;
	case -EACCES:
	case -EPERM:
		why = "this user may not use the hint socket (not in its group?)";
		break;
	case -ETIMEDOUT:
		why = "the scx_wsched loader did not answer at";
		break;
	case -EPROTO:
		why = "the scx_wsched loader speaks another hint ABI at";
		break;
	case -EUSERS:
		why = "the scx_wsched loader serves as many processes as it can at";
		break;
	case -EDQUOT:
		why = "this user has as many processes registered as the loader allows at";
		break;
	case -EBUSY:
		why = "this user registers processes faster than the loader allows at";
		break;
	case -ESRCH:
		why = "the scx_wsched loader could not identify this process at";
		break;
	default:
		why = "registration failed with the loader at";
		break;
	}
	fprintf(stderr, "wsched-run: %s %s (%s); running without cooperation\n",
		why, path, strerror(-err));
}

static void register_self(void)
{
	int err;

	if (proc_off() || in_register)
		return;
	in_register = 1;
	err = ws_thread_register();
	in_register = 0;
	if (!err) {
		if (!(families() & FAM_YIELD))
			ws_thread_set_flags(WS_HINT_FLAG_YIELD_PLAIN);
		return;
	}
	/* -ENOSPC (every slot of the process taken) is this thread's alone;
	 * any other failure is the process's, reported by the thread that
	 * finds it first. */
	if (err != -ENOSPC && !(__atomic_fetch_or(&hot, HOT_OFF, __ATOMIC_RELAXED) & HOT_OFF))
		report(err);
}

/* A fork child's thread registers at its first interposed call. */
static __attribute__((noinline, cold)) void register_pending(void)
{
	if (!(__atomic_fetch_and(&hot, ~HOT_PENDING, __ATOMIC_RELAXED) & HOT_PENDING))
		return;
	if (!ws_thread_registered() && !in_register && !proc_off())
		register_self();
}

static void atfork_child(void)
{
	/* lib/hint.c's own fork handler dropped the parent's mapping and
	 * connection; this thread is unregistered now. */
	if (!proc_off())
		__atomic_fetch_or(&hot, HOT_PENDING, __ATOMIC_RELAXED);
}

/* Remove every LD_PRELOAD entry that names this library. */
static void drop_from_ld_preload(void)
{
	const char *cur = getenv("LD_PRELOAD");
	char *out, *p;
	size_t n;

	if (!cur)
		return;
	out = malloc(strlen(cur) + 1);
	if (!out)
		return;
	*out = 0;
	for (p = (char *)cur; *p; p += n + (p[n] != 0)) {
		const char *base;

		n = strcspn(p, ": ");
		if (!n)
			continue;
		base = memrchr(p, '/', n);
		base = base ? base + 1 : p;
		if ((size_t)(p + n - base) == strlen("libwsched-preload.so") &&
		    !strncmp(base, "libwsched-preload.so", n - (size_t)(base - p)))
			continue;
		if (*out)
			strcat(out, ":");
		strncat(out, p, n);
	}
	if (*out)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
	free(out);
}

__attribute__((constructor)) static void preload_init(void)
{
	unsigned m = families();

	if (!(m & FAM_INHERIT))
		drop_from_ld_preload();
	pthread_atfork(NULL, NULL, atfork_child);
	register_self();
}

/* ---------------------------------------------------------- the real calls */

struct find_names {
	char *names[128];
	int nr;
};

static int collect_name(struct dl_phdr_info *i, size_t size, void *arg)
{
	struct find_names *fn = arg;

	(void)size;
	if (i->dlpi_name && *i->dlpi_name && fn->nr < 128)
		fn->names[fn->nr++] = strdup(i->dlpi_name);
	return 0;
}

/*
 * @name in a loaded library other than this one, when RTLD_NEXT does not
 * see it: a library that a plugin opened with RTLD_LOCAL pulled in (the
 * plugin's calls still come here first) is outside the global scope. The
 * names are collected first and opened after, outside dl_iterate_phdr's
 * lock.
 */
static void *resolve_local(const char *name)
{
	struct find_names fn = { .nr = 0 };
	Dl_info self, info;
	void *f = NULL, *h;
	int i;

	if (!dladdr((void *)resolve_local, &self))
		return NULL;
	dl_iterate_phdr(collect_name, &fn);
	for (i = 0; i < fn.nr; i++) {
		if (!f && fn.names[i] && (h = dlopen(fn.names[i], RTLD_LAZY | RTLD_NOLOAD))) {
			f = dlsym(h, name);
			if (f && dladdr(f, &info) && info.dli_fbase == self.dli_fbase)
				f = NULL;	/* our own definition */
			dlclose(h);
		}
		free(fn.names[i]);
	}
	return f;
}

/*
 * The next definition of @name after this library. The address is kept for
 * the life of the process, so the library that holds it must stay mapped:
 * a program may dlopen a plugin that pulls in libgomp, dlclose it and open
 * it again elsewhere. Marking that library RTLD_NODELETE (it is loaded
 * already: RTLD_NOLOAD) keeps it mapped until exit.
 */
static void *resolve(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	Dl_info info;

	if (!f)
		f = resolve_local(name);
	if (!f) {
		fprintf(stderr, "libwsched-preload: %s not found in the libraries loaded after it\n",
			name);
		abort();
	}
	if (dladdr(f, &info) && info.dli_fname)
		dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
	return f;
}

#define REAL(ret, name, ...)							\
	static ret (*real_##name)(__VA_ARGS__);					\
	static inline ret (*get_##name(void))(__VA_ARGS__)			\
	{									\
		ret (*f)(__VA_ARGS__) = __atomic_load_n(&real_##name, __ATOMIC_RELAXED); \
		if (__builtin_expect(!f, 0)) {					\
			f = (ret (*)(__VA_ARGS__))resolve(#name);		\
			__atomic_store_n(&real_##name, f, __ATOMIC_RELAXED);	\
		}								\
		return f;							\
	}

/* enter_if()'s rare cases: the word not parsed yet, a fork child pending. */
static __attribute__((noinline, cold)) int enter_slow(unsigned fam, int rc)
{
	unsigned m = hot_load();

	if (m & HOT_PENDING)
		register_pending();
	if (m & fam)
		ws_critical_enter();
	return rc;
}

/*
 * Marks when the family is on and returns @rc, the real call's result; the
 * section's mark follows the acquisition and its unmark follows the
 * release, so it covers the whole hold. The rare cases are a tail call that
 * returns @rc, so that the common one keeps nothing across a call and the
 * body around it needs no saved register.
 */
static __attribute__((always_inline)) inline int enter_if(unsigned fam, int rc)
{
	unsigned m = __atomic_load_n(&hot, __ATOMIC_RELAXED);

	/* One test for both rare cases. */
	if (__builtin_expect((m & (HOT_PARSED | HOT_PENDING)) != HOT_PARSED, 0))
		return enter_slow(fam, rc);
	if (m & fam)
		ws_critical_enter();
	return rc;
}

/* A grace hand-back inside ws_critical_exit keeps errno (hint.c). */
static __attribute__((always_inline)) inline void exit_if(unsigned fam)
{
	if (hot_load() & fam)
		ws_critical_exit();
}

/*
 * The call needs no mark: the process gave up registering and this thread
 * is not registered (HOT_OFF above). Tested before the real call, so that
 * the wrapper can end in a jump to it: where no loader runs, the library
 * then costs each call four loads (this word, the thread's slot pointer
 * and its TLS offset, the real function), three branches and the jump.
 */
static __attribute__((always_inline)) inline bool bypass(void)
{
	return proc_off() && !ws_thread_registered();
}

/* The real function, in a body behind INTERPOSE: the exported function
 * resolved it before it got there. */
#define REAL_OF(name) __atomic_load_n(&real_##name, __ATOMIC_RELAXED)

/*
 * INTERPOSE(name, (params), (args)) { body }: the exported int function
 * @name calls the real one when bypass() says so, else runs the body. The
 * body is a function of its own (marked_@name), and so is the first call's
 * lookup of the real function (first_@name, which then goes on as the
 * wrapper does), so that the bypass needs no stack frame: a load and a jump to the
 * real function; and the body finds the real function resolved, so that it
 * needs no frame beyond the call's.
 * INTERPOSE_VOID: the same for a void function.
 */
#define INTERPOSE(name, params, args)						\
	static int marked_##name params;					\
	static __attribute__((noinline, cold)) int first_##name params		\
	{									\
		get_##name();							\
		return bypass() ? REAL_OF(name) args : marked_##name args;	\
	}									\
	EXPORT int name params							\
	{									\
		__typeof__(real_##name) f = REAL_OF(name);			\
									\
		if (__builtin_expect(f == NULL, 0))				\
			return first_##name args;				\
		if (bypass())							\
			return f args;						\
		return marked_##name args;					\
	}									\
	static __attribute__((noinline)) int marked_##name params

#define INTERPOSE_VOID(name, params, args)					\
	static void marked_##name params;					\
	static __attribute__((noinline, cold)) void first_##name params	\
	{									\
		get_##name();							\
		if (bypass())							\
			REAL_OF(name) args;					\
		else								\
			marked_##name args;					\
	}									\
	EXPORT void name params							\
	{									\
		__typeof__(real_##name) f = REAL_OF(name);			\
									\
		if (__builtin_expect(f == NULL, 0))				\
			first_##name args;					\
		else if (bypass())						\
			f args;							\
		else								\
			marked_##name args;					\
	}									\
	static __attribute__((noinline)) void marked_##name params

/* ------------------------------------------------------------- pthread_create */

struct start {
	void *(*fn)(void *);
	void *arg;
};

static void *start_thread(void *p)
{
	struct start st = *(struct start *)p;

	free(p);
	register_self();
	return st.fn(st.arg);
}

REAL(int, pthread_create, pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct start *st = NULL;
	int e = errno, rc;

	if (!proc_off())
		st = malloc(sizeof(*st));
	errno = e;
	if (!st)
		return get_pthread_create()(t, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	rc = get_pthread_create()(t, attr, start_thread, st);
	if (rc)
		free(st);
	errno = e;
	return rc;
}

/* ------------------------------------------------------------------ mutexes */

static inline bool acquired(int rc)
{
	return rc == 0 || rc == EOWNERDEAD;
}

REAL(int, pthread_mutex_lock, pthread_mutex_t *)
INTERPOSE(pthread_mutex_lock, (pthread_mutex_t *m), (m))
{
	int rc = REAL_OF(pthread_mutex_lock)(m);

	return acquired(rc) ? enter_if(FAM_LOCKS, rc) : rc;
}

REAL(int, pthread_mutex_trylock, pthread_mutex_t *)
INTERPOSE(pthread_mutex_trylock, (pthread_mutex_t *m), (m))
{
	int rc = REAL_OF(pthread_mutex_trylock)(m);

	return acquired(rc) ? enter_if(FAM_LOCKS, rc) : rc;
}

REAL(int, pthread_mutex_timedlock, pthread_mutex_t *, const struct timespec *)
INTERPOSE(pthread_mutex_timedlock, (pthread_mutex_t *m, const struct timespec *ts), (m, ts))
{
	int rc = REAL_OF(pthread_mutex_timedlock)(m, ts);

	return acquired(rc) ? enter_if(FAM_LOCKS, rc) : rc;
}

REAL(int, pthread_mutex_clocklock, pthread_mutex_t *, clockid_t, const struct timespec *)
INTERPOSE(pthread_mutex_clocklock, (pthread_mutex_t *m, clockid_t c, const struct timespec *ts),
	  (m, c, ts))
{
	int rc = REAL_OF(pthread_mutex_clocklock)(m, c, ts);

	return acquired(rc) ? enter_if(FAM_LOCKS, rc) : rc;
}

REAL(int, pthread_mutex_unlock, pthread_mutex_t *)
INTERPOSE(pthread_mutex_unlock, (pthread_mutex_t *m), (m))
{
	int rc = REAL_OF(pthread_mutex_unlock)(m);

	if (!rc)
		exit_if(FAM_LOCKS);
	return rc;
}

/*
 * A condition wait releases the mutex and takes it again inside libc, so
 * the thread leaves the section for the wait and enters it again after,
 * whatever the wait returns: it returns with the mutex held (ETIMEDOUT and a
 * robust mutex's EOWNERDEAD included), and an error found before it released
 * anything leaves the depth as it was.
 */

REAL(int, pthread_cond_wait, pthread_cond_t *, pthread_mutex_t *)
INTERPOSE(pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m))
{
	int rc;

	exit_if(FAM_LOCKS);
	rc = REAL_OF(pthread_cond_wait)(c, m);
	return enter_if(FAM_LOCKS, rc);
}

REAL(int, pthread_cond_timedwait, pthread_cond_t *, pthread_mutex_t *, const struct timespec *)
INTERPOSE(pthread_cond_timedwait,
	  (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts), (c, m, ts))
{
	int rc;

	exit_if(FAM_LOCKS);
	rc = REAL_OF(pthread_cond_timedwait)(c, m, ts);
	return enter_if(FAM_LOCKS, rc);
}

REAL(int, pthread_cond_clockwait, pthread_cond_t *, pthread_mutex_t *, clockid_t,
     const struct timespec *)
INTERPOSE(pthread_cond_clockwait,
	  (pthread_cond_t *c, pthread_mutex_t *m, clockid_t clk, const struct timespec *ts),
	  (c, m, clk, ts))
{
	int rc;

	exit_if(FAM_LOCKS);
	rc = REAL_OF(pthread_cond_clockwait)(c, m, clk, ts);
	return enter_if(FAM_LOCKS, rc);
}

/* --------------------------------------------------------------- spin locks */

REAL(int, pthread_spin_lock, pthread_spinlock_t *)
INTERPOSE(pthread_spin_lock, (pthread_spinlock_t *l), (l))
{
	int rc = REAL_OF(pthread_spin_lock)(l);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_spin_trylock, pthread_spinlock_t *)
INTERPOSE(pthread_spin_trylock, (pthread_spinlock_t *l), (l))
{
	int rc = REAL_OF(pthread_spin_trylock)(l);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_spin_unlock, pthread_spinlock_t *)
INTERPOSE(pthread_spin_unlock, (pthread_spinlock_t *l), (l))
{
	int rc = REAL_OF(pthread_spin_unlock)(l);

	if (!rc)
		exit_if(FAM_LOCKS);
	return rc;
}

/* ------------------------------------------------------------------ rwlocks */

REAL(int, pthread_rwlock_rdlock, pthread_rwlock_t *)
INTERPOSE(pthread_rwlock_rdlock, (pthread_rwlock_t *l), (l))
{
	int rc = REAL_OF(pthread_rwlock_rdlock)(l);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_wrlock, pthread_rwlock_t *)
INTERPOSE(pthread_rwlock_wrlock, (pthread_rwlock_t *l), (l))
{
	int rc = REAL_OF(pthread_rwlock_wrlock)(l);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_tryrdlock, pthread_rwlock_t *)
INTERPOSE(pthread_rwlock_tryrdlock, (pthread_rwlock_t *l), (l))
{
	int rc = REAL_OF(pthread_rwlock_tryrdlock)(l);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_trywrlock, pthread_rwlock_t *)
INTERPOSE(pthread_rwlock_trywrlock, (pthread_rwlock_t *l), (l))
{
	int rc = REAL_OF(pthread_rwlock_trywrlock)(l);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_timedrdlock, pthread_rwlock_t *, const struct timespec *)
INTERPOSE(pthread_rwlock_timedrdlock, (pthread_rwlock_t *l, const struct timespec *ts), (l, ts))
{
	int rc = REAL_OF(pthread_rwlock_timedrdlock)(l, ts);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_timedwrlock, pthread_rwlock_t *, const struct timespec *)
INTERPOSE(pthread_rwlock_timedwrlock, (pthread_rwlock_t *l, const struct timespec *ts), (l, ts))
{
	int rc = REAL_OF(pthread_rwlock_timedwrlock)(l, ts);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_clockrdlock, pthread_rwlock_t *, clockid_t, const struct timespec *)
INTERPOSE(pthread_rwlock_clockrdlock, (pthread_rwlock_t *l, clockid_t c, const struct timespec *ts),
	  (l, c, ts))
{
	int rc = REAL_OF(pthread_rwlock_clockrdlock)(l, c, ts);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_clockwrlock, pthread_rwlock_t *, clockid_t, const struct timespec *)
INTERPOSE(pthread_rwlock_clockwrlock, (pthread_rwlock_t *l, clockid_t c, const struct timespec *ts),
	  (l, c, ts))
{
	int rc = REAL_OF(pthread_rwlock_clockwrlock)(l, c, ts);

	return rc ? rc : enter_if(FAM_LOCKS, 0);
}

REAL(int, pthread_rwlock_unlock, pthread_rwlock_t *)
INTERPOSE(pthread_rwlock_unlock, (pthread_rwlock_t *l), (l))
{
	int rc = REAL_OF(pthread_rwlock_unlock)(l);

	if (!rc)
		exit_if(FAM_LOCKS);
	return rc;
}

/* ------------------------------------------------------------------- yields */

/*
 * sched_yield() declared plain (wsched/hint.h). On x86-64 the syscall is
 * made here, not through libc's syscall(), which would add a call, its
 * argument shuffle and a return to every yield inside a section. The
 * kernel's sched_yield() always returns 0; a failure would still set errno
 * and return -1, as libc's wrapper does.
 */
static __attribute__((always_inline)) inline int yield_declared_plain(void)
{
#if defined(__x86_64__)
	register long rax __asm__("rax") = SYS_sched_yield;
	register unsigned long rdi __asm__("rdi") = WS_HINT_YIELD_PLAIN_ARG;

	__asm__ volatile("syscall" : "+r"(rax) : "r"(rdi) : "rcx", "r11", "memory");
	if (__builtin_expect((unsigned long)rax > -4096UL, 0)) {
		errno = (int)-rax;
		return -1;
	}
	return (int)rax;
#else
	return (int)syscall(SYS_sched_yield, (unsigned long)WS_HINT_YIELD_PLAIN_ARG);
#endif
}

REAL(int, sched_yield, void)
EXPORT int sched_yield(void)
{
	struct ws_hint_slot *s = _ws_hint_self;

	/* Only a registered thread's yield can be an ABP yield; what kind it
	 * is the scheduler decides from the slot (depth, flags). One inside
	 * a section, or with yield-to-all off, is plain whatever the slot
	 * says: declaring it so (wsched/hint.h) spares the scheduler the
	 * slot's lookup when nothing else waits for the CPU. sched_yield()
	 * always succeeds, and a successful call leaves errno alone. */
	if (__builtin_expect(hot_load() & HOT_PENDING, 0)) {
		register_pending();
		s = _ws_hint_self;
	}
	if (s && (__atomic_load_n(&s->cs_depth, __ATOMIC_RELAXED) ||
		  (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & WS_HINT_FLAG_YIELD_PLAIN)))
		return yield_declared_plain();
	return get_sched_yield()();
}

/* ------------------------------------------------------------------ libgomp */

/*
 * libgomp's entry points behind #pragma omp critical / atomic (when not
 * lowered to an atomic instruction) and the omp_*_lock API. The lock types
 * are opaque here; omp.h is not needed to forward them.
 */
void GOMP_critical_start(void);
void GOMP_critical_end(void);
void GOMP_critical_name_start(void **pptr);
void GOMP_critical_name_end(void **pptr);
void GOMP_atomic_start(void);
void GOMP_atomic_end(void);
void omp_set_lock(void *l);
int omp_test_lock(void *l);
void omp_unset_lock(void *l);
void omp_set_nest_lock(void *l);
int omp_test_nest_lock(void *l);
void omp_unset_nest_lock(void *l);

REAL(void, GOMP_critical_start, void)
INTERPOSE_VOID(GOMP_critical_start, (void), ())
{
	REAL_OF(GOMP_critical_start)();
	enter_if(FAM_OMP, 0);
}

REAL(void, GOMP_critical_end, void)
INTERPOSE_VOID(GOMP_critical_end, (void), ())
{
	REAL_OF(GOMP_critical_end)();
	exit_if(FAM_OMP);
}

REAL(void, GOMP_critical_name_start, void **)
INTERPOSE_VOID(GOMP_critical_name_start, (void **pptr), (pptr))
{
	REAL_OF(GOMP_critical_name_start)(pptr);
	enter_if(FAM_OMP, 0);
}

REAL(void, GOMP_critical_name_end, void **)
INTERPOSE_VOID(GOMP_critical_name_end, (void **pptr), (pptr))
{
	REAL_OF(GOMP_critical_name_end)(pptr);
	exit_if(FAM_OMP);
}

REAL(void, GOMP_atomic_start, void)
INTERPOSE_VOID(GOMP_atomic_start, (void), ())
{
	REAL_OF(GOMP_atomic_start)();
	enter_if(FAM_OMP, 0);
}

REAL(void, GOMP_atomic_end, void)
INTERPOSE_VOID(GOMP_atomic_end, (void), ())
{
	REAL_OF(GOMP_atomic_end)();
	exit_if(FAM_OMP);
}

REAL(void, omp_set_lock, void *)
INTERPOSE_VOID(omp_set_lock, (void *l), (l))
{
	REAL_OF(omp_set_lock)(l);
	enter_if(FAM_OMP, 0);
}

REAL(int, omp_test_lock, void *)
INTERPOSE(omp_test_lock, (void *l), (l))
{
	int rc = REAL_OF(omp_test_lock)(l);

	return rc ? enter_if(FAM_OMP, rc) : 0;
}

REAL(void, omp_unset_lock, void *)
INTERPOSE_VOID(omp_unset_lock, (void *l), (l))
{
	REAL_OF(omp_unset_lock)(l);
	exit_if(FAM_OMP);
}

REAL(void, omp_set_nest_lock, void *)
INTERPOSE_VOID(omp_set_nest_lock, (void *l), (l))
{
	REAL_OF(omp_set_nest_lock)(l);
	enter_if(FAM_OMP, 0);
}

REAL(int, omp_test_nest_lock, void *)
INTERPOSE(omp_test_nest_lock, (void *l), (l))
{
	int rc = REAL_OF(omp_test_nest_lock)(l);

	return rc ? enter_if(FAM_OMP, rc) : 0;
}

REAL(void, omp_unset_nest_lock, void *)
INTERPOSE_VOID(omp_unset_nest_lock, (void *l), (l))
{
	REAL_OF(omp_unset_nest_lock)(l);
	exit_if(FAM_OMP);
}

/* ------------------------------------------------------------ introspection */

/*
 * The calling thread's slot as this library sees it (shared when
 * registered, else private), for tests and diagnostics: programs that were
 * not built against libwsched cannot reach the copy of lib/hint.c inside
 * this library otherwise.
 */
EXPORT const struct ws_hint_slot *wsched_preload_slot(void);
EXPORT const struct ws_hint_slot *wsched_preload_slot(void)
{
	return ws_thread_slot();
}
