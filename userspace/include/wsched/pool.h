// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/pool.h - a pool of work-stealing workers, and submission of jobs to
 * it from threads outside the pool.
 *
 * A pool owns P worker threads. Work enters a pool in two ways:
 * - a thread outside the pool submits a job (ws_pool_submit): it goes into
 *   the pool's FIFO public queue, and the caller may block until it is done
 *   (ws_job_wait) or do both at once (ws_pool_run);
 * - a task running on a worker forks children with ws_spawn and joins them
 *   with ws_sync (wsched/task.h): no allocation, no syscall, no lock.
 * Idle workers first steal from other workers (random victims, those that
 * share a cache first), then take from the public
 * queue; then they spin for a while measured in time, then yield between
 * failed steal rounds, then park on a futex. At most max_searching workers
 * look for work at once; the others park at once. A fully idle pool sleeps
 * in the kernel and uses no CPU.
 *
 * Several pools may coexist; the only global mutable state of the runtime is
 * a count of forks (below).
 *
 * Thread-safety: every function here may be called from any thread, except
 * that ws_pool_destroy must not race with anything else on the same pool and
 * must not be called by one of the pool's own workers (-EDEADLK).
 *
 * Errors: functions return 0 or a negative errno value; they never print or
 * exit. A job's result is whatever its function returned (by convention 0 or
 * a negative errno value); -ECANCELED if its group was cancelled first.
 *
 * Fork: a pool does not survive fork(). The child has none of its worker
 * threads, and the jobs and tasks in it belong to the parent's threads (the
 * parent still runs them; running them again in the child would do their
 * work twice). In the child every call on an inherited pool fails at once
 * with -ECHILD, without taking any lock: ws_pool_submit, ws_pool_run,
 * ws_job_wait on a job that was not done at the fork, ws_pool_get_stats and
 * ws_pool_destroy, which still frees the child's copy of the pool (it joins
 * nothing: the threads are not there); ws_pool_nr_workers returns 0 and
 * ws_pool_sum_stats all zero. ws_job_done and ws_job_wait on a job done
 * before the fork still report it. The child may create pools of its own.
 * A task that calls fork() leaves a child whose only thread is in the
 * middle of that task: there, spawn and sync still run tasks inline, and
 * the ws_sync of a task another worker had taken returns -ECHILD; the child
 * must _exit() or exec before that task returns. (POSIX allows only
 * async-signal-safe calls in the child of a multithreaded process; the
 * calls above take no lock but malloc's, which glibc resets in a child.)
 * This is oneTBB's rule
 * (a scheduler does not cross fork) with an error instead of a hang;
 * libgomp re-creates its one implicit pool in a child, but wsched pools are
 * explicit objects, and a child that wants one creates it. Children made
 * without fork()'s atfork handlers (a raw clone() syscall) are not detected.
 */
#ifndef WSCHED_POOL_H
#define WSCHED_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wsched/task.h"
#include "wsched/yield.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ws_pool;

/* Pool attributes. Start from ws_pool_attr_init(); 0 means "default". */
struct ws_pool_attr {
	unsigned nr_workers;	/* default: CPUs in the caller's affinity mask */
	uint64_t spin_ns;	/* spin before yielding; default 50000 (50 us) */
	uint64_t yield_ns;	/* then yield between failed steal rounds for
				 * this long before parking; default 200000 */
	unsigned max_searching;	/* workers looking for work at once; default
				 * max(1, nr_workers / 2) */
	unsigned deque_size;	/* spawn slots per worker; default 8192.
				 * Spawns nested deeper stay private: their
				 * syncs run them on this worker. */
	size_t stack_size;	/* worker stack; default (0): the pthread
				 * default (glibc: RLIMIT_STACK's soft limit,
				 * 2 MiB on x86-64 when that is unlimited) */
	bool pin;		/* pin worker i to the i-th CPU of the affinity
				 * mask (round robin). Default false. Victim
				 * choice prefers workers sharing a cache
				 * either way (unpinned ones by the CPU they
				 * last ran on). */
	bool no_spin;		/* park as soon as a steal round fails (tests) */
	enum ws_yield_path yield_path;	/* default WS_YIELD_AUTO: module, else
				 * hint, else plain. Naming one that is not
				 * available fails ws_pool_create (-ENODEV). */
};

/*
 * Per-worker counters (monotonic; read with relaxed loads), listed once:
 * WS_WORKER_STATS(X) expands X(name) for each field of struct
 * ws_worker_stats in struct order, so that the struct and the code that
 * walks every counter (the library's sum, a program printing them all)
 * come from this list. The struct's layout is ABI (WS_VERSION in
 * userspace/userspace.mk), so any change to the list is an ABI change.
 */
#define WS_WORKER_STATS(X) \
	X(nr_tasks)	/* tasks run: spawned, stolen, jobs */ \
	X(nr_steals)	/* successful steals from other workers */ \
	X(nr_steal_fails) /* steal attempts that found nothing or lost */ \
	X(nr_public)	/* jobs taken from the public queue */ \
	X(nr_parks)	/* times the worker slept on its futex */ \
	X(nr_wakeups)	/* times another thread woke it */ \
	X(nr_exposes)	/* times it shared private tasks on request */ \
	X(nr_yields)	/* times it gave its CPU away while idle */ \
	X(nr_yield_to)	/* ... of which directed at one thread */ \
	X(nr_handoffs)	/* ... of which the kernel reported handing the CPU \
			 * over: the module path only (the hint path cannot \
			 * tell; scx_wsched counts nr_yield_hint_handoff) */

struct ws_worker_stats {
#define _WS_WORKER_STAT_FIELD(name) uint64_t name;
	WS_WORKER_STATS(_WS_WORKER_STAT_FIELD)
#undef _WS_WORKER_STAT_FIELD
};

/*
 * A job submitted from outside the pool. The caller owns the memory, which
 * must stay valid until ws_job_wait() returned or ws_job_done() returned
 * true. The fields are internal.
 */
struct ws_job {
	struct ws_task _task;
	struct ws_job *_next;
	struct ws_pool *_pool;
	uint32_t _state;	/* futex word, accessed atomically */
};

void ws_pool_attr_init(struct ws_pool_attr *attr);

/* Create a pool (attr may be NULL). 0, -EINVAL, -ENOMEM (also when the fork
 * handler cannot be registered), -EAGAIN or -ENODEV. */
int ws_pool_create(struct ws_pool **pool, const struct ws_pool_attr *attr);

/*
 * Stop and free the pool. Jobs already submitted still run to completion
 * (so that no ws_job_wait() hangs); running tasks are waited for, never
 * interrupted; new submissions fail with -ESHUTDOWN from the moment destroy
 * starts. Every worker thread is joined and every allocation freed before it
 * returns. -EDEADLK if called from one of the pool's own workers. In a fork
 * child: frees the pool without joining or running anything, and returns
 * -ECHILD (the pool is gone either way).
 */
int ws_pool_destroy(struct ws_pool *pool);

/* The number of workers; 0 in a fork child (none of them exists there). */
unsigned ws_pool_nr_workers(const struct ws_pool *pool);

/* The yield path the pool uses (never WS_YIELD_AUTO; ws_yield_path_name
 * names it). */
enum ws_yield_path ws_pool_yield_path(const struct ws_pool *pool);

/*
 * Queue @fn(@arg) at the tail of the pool's FIFO public queue; @group may be
 * NULL. Wakes a parked worker if nobody is looking for work. 0, or
 * -ESHUTDOWN if the pool is being destroyed, -ECHILD in a fork child,
 * -EINVAL.
 */
int ws_pool_submit(struct ws_pool *pool, struct ws_job *job, struct ws_group *group,
		   ws_task_fn fn, void *arg);

/*
 * Wait until @job (successfully submitted) has run and return its result.
 * Outside the pool this blocks (a short spin, then a futex wait); on one of
 * the pool's workers it runs other work meanwhile instead of blocking. Also
 * valid after ws_pool_destroy() returned (the job is then done). -ECHILD in
 * a fork child if the job was not done at the fork (nobody there runs it).
 */
int ws_job_wait(struct ws_job *job);

/* Non-blocking: true if the job has finished (its result is then final). */
bool ws_job_done(const struct ws_job *job);

/* Submit and wait: fn(arg) on the pool, from outside. Its result, or -errno. */
int ws_pool_run(struct ws_pool *pool, ws_task_fn fn, void *arg);

/* Counters of worker @idx (0..P-1). 0, -EINVAL, or -ECHILD in a fork child. */
int ws_pool_get_stats(const struct ws_pool *pool, unsigned idx, struct ws_worker_stats *st);

/* Sum of all workers' counters (all zero in a fork child). */
void ws_pool_sum_stats(const struct ws_pool *pool, struct ws_worker_stats *st);

/* Index of the worker (0..P-1) and its pool. */
unsigned ws_worker_index(const struct ws_worker *w);
struct ws_pool *ws_worker_pool(const struct ws_worker *w);

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_POOL_H */
