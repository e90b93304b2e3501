// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * The fork/join runtime: pools of workers, a split deque per worker, the
 * public job queue and the idle policy.
 *
 * Split deque: wsched/wdeque_impl.h has the layout, the contract and the
 * correctness argument, and all its atomic operations (that text is what
 * the Relacy test model-checks). Here: who calls them. A thief that finds
 * nothing public asks the owner to share (_WS_REQ_SPLIT); the owner answers
 * at its next spawn, sync or poll (_ws_spawn_slow -> _ws_wdq_expose). The
 * owner's sync of a stolen task runs other work until the thief has marked
 * the frame done (run_stolen -> _ws_wdq_finish), then pops it.
 *
 * Idle policy. The pool's idle word counts sleeping (high half) and
 * searching (low half) workers. A worker out of work becomes a searcher if
 * fewer than max_searching are (else it parks at once), steals from random
 * victims (cache-sharing ones first), then the public queue; it spins with
 * pause between rounds for spin_ns, then yields between rounds (Arora,
 * Blumofe & Plaxton) for yield_ns, then parks. A yield is directed
 * (yield_internal.h) at a worker that holds unshared work it was asked for
 * while it is not running, when the pool has a directed-yield path. The
 * same ladder (idle_step), with its own pauses per step, yield target and
 * way to block, serves a worker waiting for a stolen task and one waiting
 * for a job.
 * Parking is a two-phase event (prepare, re-check, commit): under the sleep
 * lock the worker pushes itself on the sleeper list and turns "searching"
 * into "sleeping" with one seq_cst RMW on the idle word; then it re-checks
 * with seq_cst loads every place new work can appear - the public queue
 * counter, every worker's ts, the stop flag - and only then waits on its own
 * futex word. Producers publish first (a seq_cst RMW: the queue counter, or
 * the exposing CAS on ts), then read the idle word (seq_cst) and wake one
 * sleeper if there are sleepers and no searchers. In the single total order
 * of those seq_cst operations either the producer sees the sleeper or the
 * sleeper's re-check sees the work: no lost wakeup. A woken worker is counted
 * as a searcher by its waker, so one new piece of work wakes one worker, and
 * a searcher that finds work while it was the last searcher wakes one more
 * (ramp-up, as in Go's scheduler).
 *
 * Spawn reads one word, its own req, relaxed. A worker that parks while
 * nobody is left searching sets _WS_REQ_WAKE in every worker's req, so the
 * next spawn anywhere checks the idle word (seq_cst) and wakes a sleeper if
 * nobody searches; the spawn that handled the hint clears it.
 *
 * Fork. A child process has only the thread that called fork(): none of a
 * pool's workers exist there, locks they held stay held, and the jobs and
 * frames in the pool belong to the parent's threads. A pool is therefore
 * dead in a child: every call that would make it work or wait for it fails
 * with -ECHILD without taking a lock (submit, run, job_wait on a job not
 * done, get_stats, destroy; nr_workers reads 0, sum_stats all zero), and
 * destroy frees the child's copy of the memory without joining anything.
 * A pthread_atfork child handler bumps a process-wide fork generation; each
 * pool records the generation it was created in, so the check is one
 * relaxed load and a compare (the handler runs in the child's only thread
 * before fork returns, and threads the child creates later synchronise
 * with it through pthread_create, so relaxed suffices). The fast paths of
 * spawn and sync do not check: in a child forked by a task, that worker's
 * private tasks still run inline as plain calls; the slow paths check, so
 * it never exposes work or wakes anyone, and the sync of a task a thief
 * had taken returns -ECHILD instead of waiting for a thread that is gone.
 *
 * Atomics: GCC's __atomic builtins on plain fields, the style of the
 * public inline headers whose fields this file shares (a task's _result,
 * _done and _thief, a job's _state; userspace/README.md "Atomics"). A field
 * marked "atomic" is accessed only through them once other threads can see
 * it; each non-relaxed one names what it pairs with.
 *
 * Accepted races, and why they are harmless: spawn reads req relaxed,
 * without a fence, so a request or hint set just after it is seen one spawn
 * later; private tasks are not stealable anyway until exposed, and the owner
 * runs them itself meanwhile. The _thief hint may be stale; it only orders the
 * victims a waiting owner tries first.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "wsched/pool.h"
#include "wsched/thread.h"
#include "atomic_internal.h"
#include "llc_internal.h"
#include "yield_internal.h"

#define WS_DEFAULT_SPIN_NS	50000ull
#define WS_DEFAULT_YIELD_NS	200000ull
#define WS_DEFAULT_DEQUE	8192u
#define WS_MAX_DEQUE		(1u << 30)
#define WS_MAX_WORKERS		4096u

#define IDLE_SLEEPING(v)	((uint32_t)((v) >> 32))
#define IDLE_SEARCHING(v)	((uint32_t)(v))

#define JOB_DONE		1u
#define JOB_WAITERS		2u

struct ws_worker {
	struct _ws_wdeque d;		/* must stay first (task_internal.h) */
	struct ws_pool *pool;
	unsigned idx;
	pthread_t tid;
	bool started;
	int cpu;			/* pinned CPU or -1 */
	int cpu_hint;			/* CPU it last looked for work on; atomic */
	/* For directed yields (atomic, relaxed: hints only, a stale value
	 * costs one useless yield): its thread id once started (0 before), and
	 * whether it is looking for work rather than running tasks. */
	pid_t os_tid;
	bool idle;
	uint64_t rng;
	/* Sleep: the futex word and the sleeper list link. */
	WS_CACHE_ALIGNED uint32_t parked;	/* atomic */
	struct ws_worker *next_sleeper;
	bool in_list;			/* under pool->sleep_lock */
	/* Counters: atomic, single writer, relaxed. The tasks run are the
	 * deque's d.nr_tasks (the inline spawn counts them there), so
	 * stats.nr_tasks stays 0. */
	struct ws_worker_stats stats;
};

struct ws_pool {
	unsigned nr;
	struct ws_worker **w;
	uint64_t spin_ns, yield_ns;
	unsigned max_searching;
	bool no_spin;
	struct ws_yielder yield;	/* read-only once workers run */
	unsigned fork_gen;		/* fork_gen at create (see "Fork") */
	size_t stack_size;
	/* sleeping << 32 | searching; atomic */
	WS_CACHE_ALIGNED uint64_t idle;
	WS_CACHE_ALIGNED pthread_mutex_t sleep_lock;
	struct ws_worker *sleepers;
	WS_CACHE_ALIGNED pthread_mutex_t q_lock;
	struct ws_job *q_head, *q_tail;
	bool q_closed;
	uint32_t nr_queued;		/* atomic */
	int stop;			/* atomic */
	/* Topology: the LLC of each CPU (ws_cpu_llc(), llc_internal.h),
	 * -1 when unknown; read-only after create. */
	int nr_cpu_ids;
	short *cache_of;
};

/* ------------------------------------------------------------ helpers */

/* Forks seen by this process: incremented in each fork child. The only
 * mutable state the runtime shares between pools. */
static unsigned fork_gen;	/* atomic */
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_once_err;		/* pthread_atfork's error */

static void fork_child(void)
{
	__atomic_fetch_add(&fork_gen, 1, __ATOMIC_RELAXED);
}

static void fork_setup(void)
{
	fork_once_err = pthread_atfork(NULL, NULL, fork_child);
}

/* Is @p inherited across fork (its workers do not exist here)? Relaxed:
 * see "Fork" above. */
static inline bool pool_forked(const struct ws_pool *p)
{
	return ws_unlikely(__atomic_load_n(&fork_gen, __ATOMIC_RELAXED) !=
			   p->fork_gen);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);	/* vDSO: no syscall */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void count(uint64_t *c)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

static inline uint32_t rnd(struct ws_worker *w, uint32_t n)
{
	uint64_t x = w->rng;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	w->rng = x;
	return (uint32_t)(((x >> 32) * (uint64_t)n) >> 32);
}

static long futex(void *addr, int op, uint32_t val)
{
	return syscall(SYS_futex, addr, op, val, NULL, NULL, 0);
}

static void futex_wait(uint32_t *addr, uint32_t val)
{
	futex(addr, FUTEX_WAIT_PRIVATE, val);	/* EINTR/EAGAIN: caller loops */
}

static void futex_wake(void *addr, int n)
{
	futex(addr, FUTEX_WAKE_PRIVATE, (uint32_t)n);
}

/* Add to the idle word; returns the old value. seq_cst: see the essay. */
static inline uint64_t idle_add(struct ws_pool *p, int sleeping, int searching)
{
	uint64_t d = (uint64_t)((int64_t)sleeping * ((int64_t)1 << 32) + searching);

	return __atomic_fetch_add(&p->idle, d, __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------ sleep/wake */

/* Wake one sleeper, counting it as a searcher. */
static bool wake_one(struct ws_pool *p)
{
	struct ws_worker *v;

	pthread_mutex_lock(&p->sleep_lock);
	v = p->sleepers;
	if (v) {
		p->sleepers = v->next_sleeper;
		v->in_list = false;
		idle_add(p, -1, +1);
		/* release: whatever the waker published is visible to v. */
		__atomic_store_n(&v->parked, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->sleep_lock);
	if (v)
		futex_wake(&v->parked, 1);
	return v != NULL;
}

static void wake_all(struct ws_pool *p)
{
	while (wake_one(p))
		;
}

/* A producer published work with a seq_cst RMW: wake one if nobody looks. */
static inline void maybe_wake(struct ws_pool *p)
{
	/* seq_cst: the load side of the producer/sleeper handshake. */
	uint64_t v = __atomic_load_n(&p->idle, __ATOMIC_SEQ_CST);

	if (IDLE_SLEEPING(v) && !IDLE_SEARCHING(v))
		wake_one(p);
}

/* Ask every worker to check, at its next spawn, whether to wake a sleeper. */
static void hint_wake(struct ws_pool *p)
{
	unsigned i;

	for (i = 0; i < p->nr; i++)
		_ws_wdq_ask(&p->w[i]->d, _WS_REQ_WAKE);
}

/* Is there work a sleeper must not sleep through? seq_cst loads (essay). */
static bool work_visible(struct ws_pool *p)
{
	unsigned i;

	if (__atomic_load_n(&p->nr_queued, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&p->stop, __ATOMIC_SEQ_CST))
		return true;
	for (i = 0; i < p->nr; i++) {
		/* seq_cst: the sleeper's re-check (essay). */
		uint64_t ts = __atomic_load_n(&p->w[i]->d.ts, __ATOMIC_SEQ_CST);

		if ((uint32_t)ts < (uint32_t)(ts >> 32))
			return true;
	}
	return false;
}

/*
 * Park @w. Returns true if it comes back counted as a searcher (woken, or
 * taken off the list by a waker during the re-check), false if it cancelled
 * the park itself and is neither sleeping nor searching.
 */
static bool park(struct ws_worker *w, bool searching)
{
	struct ws_pool *p = w->pool;
	uint64_t old;
	bool counted;

	pthread_mutex_lock(&p->sleep_lock);
	__atomic_store_n(&w->parked, 1, __ATOMIC_RELAXED);
	w->next_sleeper = p->sleepers;
	p->sleepers = w;
	w->in_list = true;
	old = idle_add(p, +1, searching ? -1 : 0);	/* prepare: seq_cst RMW */
	pthread_mutex_unlock(&p->sleep_lock);
	if (IDLE_SEARCHING(old) == (searching ? 1u : 0u))
		hint_wake(p);		/* nobody searches now: spawns should wake */

	if (work_visible(p)) {			/* re-check */
		pthread_mutex_lock(&p->sleep_lock);
		counted = !w->in_list;
		if (w->in_list) {
			struct ws_worker **pp = &p->sleepers;

			while (*pp != w)
				pp = &(*pp)->next_sleeper;
			*pp = w->next_sleeper;
			w->in_list = false;
			idle_add(p, -1, 0);
			__atomic_store_n(&w->parked, 0, __ATOMIC_RELAXED);
		}
		pthread_mutex_unlock(&p->sleep_lock);
		return counted;
	}
	count(&w->stats.nr_parks);
	/* acquire: pairs with the waker's release store. */
	while (__atomic_load_n(&w->parked, __ATOMIC_ACQUIRE))
		futex_wait(&w->parked, 1);
	count(&w->stats.nr_wakeups);
	return true;
}

static bool try_enter_searching(struct ws_pool *p)
{
	uint64_t v = __atomic_load_n(&p->idle, __ATOMIC_RELAXED);

	do {
		if (IDLE_SEARCHING(v) >= p->max_searching)
			return false;
	} while (!__atomic_compare_exchange_n(&p->idle, &v, v + 1, false, __ATOMIC_SEQ_CST,
					      __ATOMIC_RELAXED));
	return true;
}

/* Found work while searching: stop searching; the last searcher to leave
 * while others sleep wakes one, so that work spreads (Go's rule). The
 * worker it wakes will want something to steal: ask ourselves to share at
 * our next spawn, which comes before the first leaf of the work we took;
 * the woken worker's own request would be answered only after that leaf. */
static void leave_searching(struct ws_worker *w, bool found)
{
	struct ws_pool *p = w->pool;
	uint64_t old = idle_add(p, 0, -1);

	if (found && IDLE_SEARCHING(old) == 1 && IDLE_SLEEPING(old)) {
		_ws_wdq_ask(&w->d, _WS_REQ_SPLIT);
		wake_one(p);
	}
}

/* ------------------------------------------------------------ stealing */

static struct ws_task *steal_from(struct ws_worker *w, struct ws_worker *v)
{
	struct ws_task *t = _ws_wdq_steal(&v->d);

	if (t)	/* relaxed: a hint for the owner's leapfrogging */
		__atomic_store_n(&t->_thief, w->idx, __ATOMIC_RELAXED);
	return t;
}

static inline int cache_of_cpu(const struct ws_pool *p, int cpu)
{
	return cpu >= 0 && cpu < p->nr_cpu_ids ? p->cache_of[cpu] : -1;
}

/*
 * One round over victims: first the workers that last ran on a CPU sharing
 * our cache (when the topology is known; pinned workers never move), from a
 * random start, then random victims. @prefer (a thief to leapfrog) first.
 */
static struct ws_task *steal_round(struct ws_worker *w, unsigned prefer)
{
	struct ws_pool *p = w->pool;
	unsigned n = p->nr, k, tries;
	struct ws_task *t;
	int mine;

	if (n < 2)
		return NULL;
	if (prefer < n && prefer != w->idx) {
		t = steal_from(w, p->w[prefer]);
		if (t)
			goto found;
		count(&w->stats.nr_steal_fails);
	}
	mine = p->cache_of ? cache_of_cpu(p, w->cpu >= 0 ? w->cpu : sched_getcpu()) : -1;
	if (mine >= 0) {
		unsigned start = rnd(w, n);

		for (k = 0; k < n; k++) {
			struct ws_worker *v = p->w[(start + k) % n];

			if (v == w || cache_of_cpu(p, __atomic_load_n(&v->cpu_hint,
						__ATOMIC_RELAXED)) != mine)
				continue;
			t = steal_from(w, v);
			if (t)
				goto found;
			count(&w->stats.nr_steal_fails);
		}
	}
	tries = 2 * (n - 1);
	for (k = 0; k < tries; k++) {
		unsigned v = rnd(w, n - 1);

		t = steal_from(w, p->w[v >= w->idx ? v + 1 : v]);
		if (t)
			goto found;
		count(&w->stats.nr_steal_fails);
	}
	return NULL;
found:
	count(&w->stats.nr_steals);
	return t;
}

static void run_stolen(struct ws_worker *w, struct ws_task *t)
{
	int r = _ws_run(w, t);

	/* relaxed: published by _ws_wdq_finish (release). */
	__atomic_store_n(&t->_result, r, __ATOMIC_RELAXED);
	/* The frame may be gone right after the exchange in _ws_wdq_finish;
	 * waking its address then is harmless (waiters re-check). */
	if (_ws_wdq_finish(t) == _WS_TASK_SLEEPER)
		futex_wake(&t->_done, 1);
}

static struct ws_job *take_public(struct ws_pool *p)
{
	struct ws_job *j;

	if (!__atomic_load_n(&p->nr_queued, __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&p->q_lock);
	j = p->q_head;
	if (j) {
		p->q_head = j->_next;
		if (!p->q_head)
			p->q_tail = NULL;
		__atomic_fetch_sub(&p->nr_queued, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&p->q_lock);
	return j;
}

static void run_job(struct ws_worker *w, struct ws_job *j)
{
	int r;
	uint32_t old;

	count(&w->stats.nr_public);
	r = _ws_run(w, &j->_task);
	__atomic_store_n(&j->_task._result, r, __ATOMIC_RELAXED);
	/* release: result and effects before the waiter's acquire. */
	old = __atomic_exchange_n(&j->_state, JOB_DONE, __ATOMIC_ACQ_REL);
	if (old & JOB_WAITERS)
		futex_wake(&j->_state, INT_MAX);	/* address only: safe if freed */
}

/* Give the CPU away, towards @target when it is set and started. */
static void yield_towards(struct ws_worker *w, struct ws_worker *target)
{
	pid_t tid = target ? __atomic_load_n(&target->os_tid, __ATOMIC_RELAXED) : 0;

	count(&w->stats.nr_yields);
	if (tid > 0 && w->pool->yield.path != WS_YIELD_PLAIN) {
		count(&w->stats.nr_yield_to);
		if (ws_yielder_yield_to(&w->pool->yield, tid))
			count(&w->stats.nr_handoffs);
		return;
	}
	sched_yield();
}

/*
 * The worker a yielding thief should give its CPU to: one that is running
 * tasks (not idle) and has not answered a split request, i.e. has private
 * tasks it did not share since a thief asked. That is what a preempted
 * worker with work looks like (one busy in a long leaf looks the same; the
 * kernel then declines the directed yield, as the target is running, and
 * the call falls back to a plain yield). Random start, one pass.
 */
static struct ws_worker *stalled_victim(struct ws_worker *w)
{
	struct ws_pool *p = w->pool;
	unsigned n = p->nr, start, k;

	if (n < 2 || p->yield.path == WS_YIELD_PLAIN)
		return NULL;
	start = rnd(w, n);
	for (k = 0; k < n; k++) {
		struct ws_worker *v = p->w[(start + k) % n];

		if (v != w && !__atomic_load_n(&v->idle, __ATOMIC_RELAXED) &&
		    (_ws_wdq_req(&v->d) & _WS_REQ_SPLIT))
			return v;
	}
	return NULL;
}

/* Whom an idle step yields towards (see yield_towards). */
enum idle_towards {
	TOWARDS_NOBODY,		/* a plain yield */
	TOWARDS_STALLED,	/* a stalled victim, when there is one */
	TOWARDS_THIEF,		/* the thief of the task being waited for */
};

/*
 * The idle ladder, one step of it: with nothing to run since @start, spin
 * @spins pauses while spin_ns has not passed, then yield (towards whom
 * @towards says; @t is the task waited for, TOWARDS_THIEF only) while
 * spin_ns + yield_ns has not. Returns false once both budgets are used up:
 * the caller then blocks in its own way (parks on the pool, sleeps on the
 * stolen frame or on the job).
 */
static bool idle_step(struct ws_worker *w, uint64_t start, unsigned spins,
		      enum idle_towards towards, const struct ws_task *t)
{
	struct ws_pool *p = w->pool;
	struct ws_worker *target = NULL;
	uint64_t el = now_ns() - start;
	unsigned i, th;

	if (el < p->spin_ns) {
		for (i = 0; i < spins; i++)
			ws_cpu_relax();
		return true;
	}
	if (el >= p->spin_ns + p->yield_ns)
		return false;
	switch (towards) {
	case TOWARDS_NOBODY:
		break;
	case TOWARDS_STALLED:
		target = stalled_victim(w);
		break;
	case TOWARDS_THIEF:
		th = __atomic_load_n(&t->_thief, __ATOMIC_RELAXED);
		if (th < p->nr && th != w->idx)
			target = p->w[th];
		break;
	}
	yield_towards(w, target);
	return true;
}

/* ------------------------------------------------------------ workers */

enum { FOUND_NONE, FOUND_TASK, FOUND_JOB };

static int find_work(struct ws_worker *w, struct ws_task **tp, struct ws_job **jp)
{
	struct ws_pool *p = w->pool;
	bool searching = try_enter_searching(p);

	/* Hints for scx_wsched (Documentation/abi.md): no local work now. */
	ws_hint_set_state(WS_HINT_THIEF);
	ws_hint_set_stealable(0);

	if (w->cpu < 0 && p->cache_of)
		__atomic_store_n(&w->cpu_hint, sched_getcpu(), __ATOMIC_RELAXED);

	for (;;) {
		if (searching) {
			uint64_t start = now_ns();

			for (;;) {
				if ((*tp = steal_round(w, UINT_MAX))) {
					leave_searching(w, true);
					return FOUND_TASK;
				}
				if ((*jp = take_public(p))) {
					leave_searching(w, true);
					return FOUND_JOB;
				}
				if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) &&
				    !__atomic_load_n(&p->nr_queued, __ATOMIC_ACQUIRE)) {
					leave_searching(w, false);
					return FOUND_NONE;
				}
				if (p->no_spin || !idle_step(w, start, 64, TOWARDS_STALLED, NULL))
					break;
			}
		} else if (__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE) &&
			   !__atomic_load_n(&p->nr_queued, __ATOMIC_ACQUIRE)) {
			return FOUND_NONE;
		}
		ws_hint_set_state(WS_HINT_PARKED);
		searching = park(w, searching);
		ws_hint_set_state(WS_HINT_THIEF);
		if (!searching)
			searching = try_enter_searching(p);
	}
}

static void pin_self(struct ws_worker *w)
{
	cpu_set_t set;

	if (w->cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);	/* best effort */
}

static void *worker_main(void *arg)
{
	struct ws_worker *w = arg;
	struct ws_task *t;
	struct ws_job *j;
	int r;

	pin_self(w);
	ws_thread_register();	/* hints, when scx_wsched serves them; else a no-op */
	__atomic_store_n(&w->os_tid, ws_gettid(), __ATOMIC_RELAXED);
	for (;;) {
		__atomic_store_n(&w->idle, true, __ATOMIC_RELAXED);
		r = find_work(w, &t, &j);
		__atomic_store_n(&w->idle, false, __ATOMIC_RELAXED);
		if (r == FOUND_NONE)
			break;
		ws_hint_set_state(WS_HINT_WORKER);
		if (r == FOUND_TASK)
			run_stolen(w, t);
		else
			run_job(w, j);
	}
	ws_thread_unregister();
	return NULL;
}

/* ------------------------------------------------------------ spawn/sync slow paths */

/* Share the older half of the private tasks with thieves. */
static void expose(struct ws_worker *w)
{
	uint32_t n = _ws_wdq_expose(&w->d);

	if (n) {
		ws_hint_set_stealable(n);	/* exposed now: split - head */
		count(&w->stats.nr_exposes);
	}
}

void _ws_spawn_slow(struct ws_worker *w)
{
	/* Take both requests at once; a request set after this is seen at a
	 * later spawn. */
	uint32_t r = _ws_wdq_take_req(&w->d);

	/* In a fork child nobody could steal or be woken (and the sleep
	 * lock may be held by a thread that is gone): keep everything private. */
	if (pool_forked(w->pool))
		return;

	/* A wake hint while somebody sleeps and nobody searches: the worker
	 * maybe_wake is about to wake will look for work, so share now; its
	 * own request would be answered only at our next spawn or sync, which
	 * in coarse-grained code (a parallel_for leaf) comes a whole leaf
	 * later. Relaxed: a stale idle word only shares too early or too late,
	 * maybe_wake's seq_cst load decides the wakeup. */
	if ((r & (_WS_REQ_WAKE | _WS_REQ_SPLIT)) == _WS_REQ_WAKE) {
		uint64_t v = __atomic_load_n(&w->pool->idle, __ATOMIC_RELAXED);

		if (IDLE_SLEEPING(v) && !IDLE_SEARCHING(v))
			r |= _WS_REQ_SPLIT;
	}
	if (r & _WS_REQ_SPLIT)
		expose(w);	/* then maybe_wake: the producer's handshake */
	if (r & (_WS_REQ_SPLIT | _WS_REQ_WAKE))
		maybe_wake(w->pool);
}

int _ws_group_trampoline(struct ws_worker *w, void *arg)
{
	struct ws_task *t = arg;
	struct ws_group *g = t->_group;
	int r, zero = 0;

	if (ws_group_cancelled(g))
		return -ECANCELED;
	r = t->_gfn(w, t->_garg);
	if (r < 0) {
		/* release: pairs with the acquire in ws_group_error. */
		__atomic_compare_exchange_n(&g->_error, &zero, r, false, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
		ws_group_cancel(g);
	}
	return r;
}

/* Wait for a stolen task, running other tasks meanwhile (leapfrogging:
 * first from the thief that took it). With nothing to run, spin, then yield
 * (towards that thief: if it was preempted, it gets our CPU), then sleep on
 * the frame until the thief wakes us: a yielding waiter would take CPU time
 * from that very thief when CPUs are oversubscribed. */
static bool wait_stolen(struct ws_worker *w, struct ws_task *t)
{
	struct ws_pool *p = w->pool;
	uint64_t start = 0;

	while (!_ws_wdq_done(t)) {
		struct ws_task *x;
		int z = 0;

		if (pool_forked(p))
			return false;	/* the thief is in the parent */
		x = steal_round(w, __atomic_load_n(&t->_thief, __ATOMIC_RELAXED));
		if (x) {
			run_stolen(w, x);
			start = 0;
			continue;
		}
		if (!start)
			start = now_ns();
		if (idle_step(w, start, 32, TOWARDS_THIEF, t))
			continue;
		/* acquire: as _ws_wdq_done, when it reads DONE */
		if (__atomic_compare_exchange_n(&t->_done, &z, _WS_TASK_SLEEPER, false,
						__ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE) ||
		    z == _WS_TASK_SLEEPER) {
			count(&w->stats.nr_parks);
			futex((void *)&t->_done, FUTEX_WAIT_PRIVATE, _WS_TASK_SLEEPER);
		}
	}
	return true;
}

int _ws_sync_slow(struct ws_worker *w, struct ws_task *t)
{
	bool done;

	if (_ws_wdq_take_back(&w->d))
		return _ws_run(w, t);
	/* Stolen: keep its slot until the thief is done (or, in a fork child,
	 * until it is clear the thief is not here). */
	done = wait_stolen(w, t);
	_ws_wdq_stolen_done(&w->d);
	return done ? __atomic_load_n(&t->_result, __ATOMIC_RELAXED) : -ECHILD;
}

/* ------------------------------------------------------------ parallel_for */

/*
 * Lengths are unsigned long: hi - lo of two longs needs 64 bits unsigned
 * (LONG_MIN..LONG_MAX is 2^64 - 1 long), and signed subtraction would
 * overflow. mid = lo + len / 2 stays in [lo, hi), so that addition cannot
 * overflow: len / 2 <= LONG_MAX and the sum lies between two longs.
 */
struct pfor {
	long lo, hi;
	unsigned long grain;
	ws_range_fn body;
	void *arg;
};

static inline unsigned long range_len(long lo, long hi)
{
	return (unsigned long)hi - (unsigned long)lo;	/* hi > lo: no wrap */
}

static int pfor_task(struct ws_worker *w, void *arg)
{
	struct pfor *a = arg;
	unsigned long len = range_len(a->lo, a->hi);
	int r1, r2;

	if (len <= a->grain)
		return a->body(w, a->lo, a->hi, a->arg);
	{
		long mid = a->lo + (long)(len / 2);
		struct pfor right = { mid, a->hi, a->grain, a->body, a->arg };
		struct pfor left = { a->lo, mid, a->grain, a->body, a->arg };
		struct ws_task t;

		ws_spawn(w, &t, pfor_task, &right);
		r1 = pfor_task(w, &left);
		r2 = ws_sync(w, &t);
	}
	return r1 < 0 ? r1 : r2 < 0 ? r2 : 0;
}

int ws_parallel_for(struct ws_worker *w, long lo, long hi, long grain, ws_range_fn body,
		    void *arg)
{
	struct pfor a = { lo, hi, 0, body, arg };

	if (!w || !body)
		return -EINVAL;
	if (hi <= lo)
		return 0;
	if (grain > 0)
		a.grain = (unsigned long)grain;
	else
		a.grain = range_len(lo, hi) / (8ul * w->pool->nr);
	if (!a.grain)
		a.grain = 1;
	return pfor_task(w, &a);
}

/* ------------------------------------------------------------ jobs */

int ws_pool_submit(struct ws_pool *p, struct ws_job *job, struct ws_group *group,
		   ws_task_fn fn, void *arg)
{
	if (!p || !job || !fn)
		return -EINVAL;
	if (pool_forked(p))
		return -ECHILD;
	if (group) {
		job->_task._fn = _ws_group_trampoline;
		job->_task._arg = &job->_task;
		job->_task._gfn = fn;
		job->_task._garg = arg;
	} else {
		job->_task._fn = fn;
		job->_task._arg = arg;
	}
	job->_task._group = group;
	job->_task._result = 0;
	job->_task._done = 0;
	job->_next = NULL;
	job->_pool = p;
	__atomic_store_n(&job->_state, 0, __ATOMIC_RELAXED);

	pthread_mutex_lock(&p->q_lock);
	if (p->q_closed) {
		pthread_mutex_unlock(&p->q_lock);
		return -ESHUTDOWN;
	}
	if (p->q_tail)
		p->q_tail->_next = job;
	else
		p->q_head = job;
	p->q_tail = job;
	/* seq_cst: the producer's RMW of the sleeper handshake. */
	__atomic_fetch_add(&p->nr_queued, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&p->q_lock);
	maybe_wake(p);
	return 0;
}

bool ws_job_done(const struct ws_job *job)
{
	return __atomic_load_n(&job->_state, __ATOMIC_ACQUIRE) & JOB_DONE;
}

static struct ws_worker *self_in(struct ws_pool *p)
{
	pthread_t me = pthread_self();
	unsigned i;

	for (i = 0; i < p->nr; i++)
		if (p->w[i]->started && pthread_equal(p->w[i]->tid, me))
			return p->w[i];
	return NULL;
}

int ws_job_wait(struct ws_job *job)
{
	struct ws_pool *p;
	struct ws_worker *w;
	uint64_t start;
	uint32_t s;

	/* Done already: do not touch the pool (it may have been destroyed). */
	if (ws_job_done(job))
		return __atomic_load_n(&job->_task._result, __ATOMIC_RELAXED);
	p = job->_pool;
	if (pool_forked(p))
		return -ECHILD;		/* nobody here will run it */
	w = self_in(p);
	start = now_ns();
	if (w) {
		/* A worker helps while it waits; with nothing to run, it spins,
		 * yields, then blocks like an outside thread. */
		while (!ws_job_done(job)) {
			struct ws_task *t = steal_round(w, UINT_MAX);
			struct ws_job *j;

			if (t) {
				run_stolen(w, t);
				start = now_ns();
			} else if ((j = take_public(p))) {
				run_job(w, j);
				start = now_ns();
			} else if (!idle_step(w, start, 1, TOWARDS_NOBODY, NULL)) {
				break;
			}
		}
	}
	while (!ws_job_done(job) && now_ns() - start < 20000)
		ws_cpu_relax();
	for (;;) {
		/* acquire: pairs with the exchange in run_job. */
		s = __atomic_load_n(&job->_state, __ATOMIC_ACQUIRE);
		if (s & JOB_DONE)
			break;
		if (!(s & JOB_WAITERS) &&
		    !__atomic_compare_exchange_n(&job->_state, &s, s | JOB_WAITERS, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
			continue;
		futex((void *)&job->_state, FUTEX_WAIT_PRIVATE, s | JOB_WAITERS);
	}
	return __atomic_load_n(&job->_task._result, __ATOMIC_RELAXED);
}

int ws_pool_run(struct ws_pool *p, ws_task_fn fn, void *arg)
{
	struct ws_job job;
	int r = ws_pool_submit(p, &job, NULL, fn, arg);

	return r ? r : ws_job_wait(&job);
}

/* ------------------------------------------------------------ create/destroy */

void ws_pool_attr_init(struct ws_pool_attr *a)
{
	memset(a, 0, sizeof(*a));
}

static void free_pool(struct ws_pool *p)
{
	unsigned i;

	if (p->w) {
		for (i = 0; i < p->nr; i++) {
			if (!p->w[i])
				continue;
			free(p->w[i]->d.slot);
			free(p->w[i]);
		}
		free(p->w);
	}
	free(p->cache_of);
	ws_yielder_close(&p->yield);
	/* In a fork child a lock may be held by a thread that is gone;
	 * destroying a locked mutex is undefined, freeing its memory is not. */
	if (!pool_forked(p)) {
		pthread_mutex_destroy(&p->sleep_lock);
		pthread_mutex_destroy(&p->q_lock);
	}
	free(p);
}

static void stop_and_join(struct ws_pool *p)
{
	unsigned i;

	pthread_mutex_lock(&p->q_lock);
	p->q_closed = true;
	pthread_mutex_unlock(&p->q_lock);
	/* seq_cst: sleepers re-check stop after registering (essay). */
	__atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
	wake_all(p);
	for (i = 0; i < p->nr; i++)
		if (p->w[i] && p->w[i]->started)
			pthread_join(p->w[i]->tid, NULL);
}

int ws_pool_create(struct ws_pool **out, const struct ws_pool_attr *attr)
{
	struct ws_pool_attr a;
	struct ws_pool *p;
	cpu_set_t set;
	int cpus[CPU_SETSIZE], nr_cpus = 0, c, err = 0;
	unsigned i;
	pthread_attr_t pa;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (attr)
		a = *attr;
	else
		ws_pool_attr_init(&a);
	if (a.nr_workers > WS_MAX_WORKERS || a.deque_size > WS_MAX_DEQUE)
		return -EINVAL;
	pthread_once(&fork_once, fork_setup);
	if (fork_once_err)
		return -fork_once_err;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				cpus[nr_cpus++] = c;
	}
	if (!a.nr_workers)
		a.nr_workers = nr_cpus > 0 ? (unsigned)nr_cpus : 1;

	p = aligned_alloc(64, (sizeof(*p) + 63) & ~(size_t)63);
	if (!p)
		return -ENOMEM;
	memset(p, 0, sizeof(*p));
	p->fork_gen = __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
	pthread_mutex_init(&p->sleep_lock, NULL);
	pthread_mutex_init(&p->q_lock, NULL);
	err = ws_yielder_open(&p->yield, a.yield_path);
	if (err) {
		p->yield.fd = -1;
		free_pool(p);
		return err;
	}
	p->nr = a.nr_workers;
	p->spin_ns = a.spin_ns ? a.spin_ns : WS_DEFAULT_SPIN_NS;
	p->yield_ns = a.yield_ns ? a.yield_ns : WS_DEFAULT_YIELD_NS;
	p->no_spin = a.no_spin;
	p->max_searching = a.max_searching ? a.max_searching :
			   (p->nr / 2 ? p->nr / 2 : 1);
	p->stack_size = a.stack_size;
	p->w = calloc(p->nr, sizeof(*p->w));
	if (!p->w) {
		free_pool(p);
		return -ENOMEM;
	}
	for (i = 0; i < p->nr; i++) {
		struct ws_worker *w = aligned_alloc(64, (sizeof(*w) + 63) & ~(size_t)63);

		if (!w) {
			free_pool(p);
			return -ENOMEM;
		}
		memset(w, 0, sizeof(*w));
		p->w[i] = w;
		w->pool = p;
		w->idx = i;
		w->d.cap = a.deque_size ? a.deque_size : WS_DEFAULT_DEQUE;
		w->d.slot = calloc(w->d.cap, sizeof(*w->d.slot));
		w->rng = 0x9e3779b97f4a7c15ull * (i + 1) ^ (uint64_t)(uintptr_t)p;
		if (!w->rng)
			w->rng = 1;
		w->cpu = a.pin && nr_cpus > 0 ? cpus[i % (unsigned)nr_cpus] : -1;
		w->cpu_hint = w->cpu;	/* before the workers start */
		if (!w->d.slot) {
			free_pool(p);
			return -ENOMEM;
		}
	}
	/* Topology: which cache each allowed CPU sits behind. Unknown (no
	 * sysfs) leaves cache_of NULL: plain random victims. */
	if (nr_cpus > 1) {
		bool known = false;

		p->nr_cpu_ids = cpus[nr_cpus - 1] + 1;
		p->cache_of = malloc(sizeof(*p->cache_of) * (size_t)p->nr_cpu_ids);
		if (!p->cache_of) {
			free_pool(p);
			return -ENOMEM;
		}
		for (c = 0; c < p->nr_cpu_ids; c++)
			p->cache_of[c] = -1;
		for (c = 0; c < nr_cpus; c++) {
			p->cache_of[cpus[c]] = (short)ws_cpu_llc(cpus[c]);
			known |= p->cache_of[cpus[c]] >= 0;
		}
		if (!known) {
			free(p->cache_of);
			p->cache_of = NULL;
		}
	}
	pthread_attr_init(&pa);
	if (p->stack_size)
		pthread_attr_setstacksize(&pa, p->stack_size);
	for (i = 0; i < p->nr; i++) {
		err = pthread_create(&p->w[i]->tid, &pa, worker_main, p->w[i]);
		if (err)
			break;
		p->w[i]->started = true;
	}
	pthread_attr_destroy(&pa);
	if (err) {
		stop_and_join(p);
		free_pool(p);
		return -err;
	}
	*out = p;
	return 0;
}

int ws_pool_destroy(struct ws_pool *p)
{
	if (!p)
		return -EINVAL;
	if (pool_forked(p)) {
		/* Nothing to stop or join here; free the child's copy. */
		free_pool(p);
		return -ECHILD;
	}
	if (self_in(p))
		return -EDEADLK;
	stop_and_join(p);
	free_pool(p);
	return 0;
}

unsigned ws_pool_nr_workers(const struct ws_pool *p)
{
	return pool_forked(p) ? 0 : p->nr;
}

/* The layout of struct ws_worker_stats in libwsched.so.0 (WS_WORKER_STATS):
 * ten counters, nr_tasks first, nr_handoffs last. */
_Static_assert(sizeof(struct ws_worker_stats) == 10 * sizeof(uint64_t) &&
	       offsetof(struct ws_worker_stats, nr_tasks) == 0 &&
	       offsetof(struct ws_worker_stats, nr_handoffs) == 9 * sizeof(uint64_t),
	       "struct ws_worker_stats is ABI: its layout must not change");

int ws_pool_get_stats(const struct ws_pool *p, unsigned idx, struct ws_worker_stats *st)
{
	struct ws_worker *w;

	if (!p || !st || idx >= p->nr)
		return -EINVAL;
	if (pool_forked(p))
		return -ECHILD;
	w = p->w[idx];
#define LOAD_STAT(name) st->name = __atomic_load_n(&w->stats.name, __ATOMIC_RELAXED);
	WS_WORKER_STATS(LOAD_STAT)
#undef LOAD_STAT
	st->nr_tasks = __atomic_load_n(&w->d.nr_tasks, __ATOMIC_RELAXED);
	return 0;
}

void ws_pool_sum_stats(const struct ws_pool *p, struct ws_worker_stats *sum)
{
	struct ws_worker_stats st;
	unsigned i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < p->nr; i++) {
		if (ws_pool_get_stats(p, i, &st))
			break;		/* a fork child: all zero */
#define ADD_STAT(name) sum->name += st.name;
		WS_WORKER_STATS(ADD_STAT)
#undef ADD_STAT
	}
}

enum ws_yield_path ws_pool_yield_path(const struct ws_pool *p)
{
	return p->yield.path;
}

unsigned ws_worker_index(const struct ws_worker *w)
{
	return w->idx;
}

struct ws_pool *ws_worker_pool(const struct ws_worker *w)
{
	return w->pool;
}
