// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/task.h - fork/join on a pool's workers: spawn, sync, task groups
 * (errors and cancellation) and parallel_for.
 *
 *	static int fib_task(struct ws_worker *w, void *arg)
 *	{
 *		struct fib *f = arg;			// { int n; long r; }
 *		struct fib a = { f->n - 1 }, b = { f->n - 2 };
 *		struct ws_task t;
 *
 *		if (f->n < 2) { f->r = f->n; return 0; }
 *		ws_spawn(w, &t, fib_task, &a);		// may run elsewhere
 *		fib_task(w, &b);			// run here
 *		ws_sync(w, &t);				// join a (help meanwhile)
 *		f->r = a.r + b.r;
 *		return 0;
 *	}
 *	... ws_pool_run(pool, fib_task, &(struct fib){ 30 });
 *
 * Rules (as in Cilk, Wool, Lace):
 * - ws_spawn/ws_sync are called only by a task running on worker @w, with the
 *   @w it was given. The task frame (struct ws_task) is the caller's memory,
 *   typically on its stack, and must live until the ws_sync on it returned.
 * - Syncs are strictly nested: sync the most recently spawned unsynced task
 *   first, and sync every spawned task before the spawning task returns.
 * - A task function returns 0 or a negative errno value; ws_sync returns it.
 *   In a child forked by a task, ws_sync of a task another worker had taken
 *   returns -ECHILD (wsched/pool.h, "Fork").
 *
 * Cost: spawn and sync are inline. The owner's spawn writes the frame and a
 * slot of its own array, and reads two words; the owner's sync of a task
 * that no thief asked for is a compare and a call. There is no atomic
 * read-modify-write, no fence, no allocation and no syscall on that path:
 * tasks stay private to their owner until a thief asks for work, and then
 * the owner shares the older half of them at its next spawn (a split deque
 * in the style of Wool and Lace). Steals are lock-free (one CAS). Syncing a
 * task that was stolen runs other work until the thief finishes it.
 *
 * Task groups: a task spawned into a group (ws_group_spawn) is skipped with
 * result -ECANCELED if the group is cancelled before the task starts; a task
 * of a group that returns a negative value records it as the group's error
 * (the first one wins) and cancels the group. Running tasks are never
 * interrupted; long ones may poll ws_group_cancelled().
 *
 * Everything whose name starts with _ws_ is internal (task_internal.h).
 */
#ifndef WSCHED_TASK_H
#define WSCHED_TASK_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ws_worker;
struct ws_group;

typedef int (*ws_task_fn)(struct ws_worker *w, void *arg);
typedef int (*ws_range_fn)(struct ws_worker *w, long lo, long hi, void *arg);

/* A task frame: caller-owned storage, fields internal. */
struct ws_task {
	ws_task_fn _fn;		/* for group tasks: _ws_group_trampoline */
	void *_arg;
	struct ws_group *_group;	/* group tasks only */
	ws_task_fn _gfn;	/* group tasks only: the task's function */
	void *_garg;		/* group tasks only: its argument */
	int _result;		/* accessed atomically */
	int _done;		/* accessed atomically */
	unsigned _thief;	/* hint for leapfrogging, accessed atomically */
};

/* A cancellation scope shared by tasks; fields internal. */
struct ws_group {
	int _cancelled;		/* accessed atomically */
	int _error;		/* accessed atomically */
};

#ifdef __cplusplus
}
#endif

#include "wsched/task_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline void ws_group_init(struct ws_group *g)
{
	__atomic_store_n(&g->_cancelled, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g->_error, 0, __ATOMIC_RELAXED);
}

/* Cancel: tasks of @g that have not started yet will be skipped. */
static inline void ws_group_cancel(struct ws_group *g)
{
	/* release: pairs with the acquire in ws_group_cancelled, so whatever
	 * the canceller wrote before is visible to tasks that see the flag. */
	__atomic_store_n(&g->_cancelled, 1, __ATOMIC_RELEASE);
}

static inline bool ws_group_cancelled(const struct ws_group *g)
{
	return __atomic_load_n(&g->_cancelled, __ATOMIC_ACQUIRE);
}

/* The first negative result of a task of @g, or 0. */
static inline int ws_group_error(const struct ws_group *g)
{
	return __atomic_load_n(&g->_error, __ATOMIC_ACQUIRE);
}

/* Fork: make fn(w, arg) runnable; it may run now, later here, or elsewhere. */
static inline void ws_spawn(struct ws_worker *w, struct ws_task *t, ws_task_fn fn, void *arg)
{
	_ws_spawn(w, t, NULL, fn, arg);
}

/* Fork into a group (see above). @g may be NULL. */
static inline void ws_group_spawn(struct ws_worker *w, struct ws_group *g, struct ws_task *t,
				  ws_task_fn fn, void *arg)
{
	_ws_spawn(w, t, g, fn, arg);
}

/* Join: wait for @t (running other tasks meanwhile) and return its result. */
static inline int ws_sync(struct ws_worker *w, struct ws_task *t)
{
	return _ws_sync(w, t);
}

/*
 * Let idle workers take this worker's spawned-but-not-started tasks now.
 * Spawn and sync do this by themselves; call it from long stretches of code
 * that neither spawn nor sync while spawned siblings wait (a long leaf loop
 * between a spawn and its sync). Costs one load when nobody asks.
 */
static inline void ws_poll(struct ws_worker *w)
{
	_ws_poll(w);
}

/*
 * Run body(w, lo', hi', arg) over [lo, hi) split in halves, recursively,
 * until pieces are at most @grain long (grain <= 0: chosen as about
 * (hi - lo) / (8 * workers)). Any lo < hi is valid, up to LONG_MIN..LONG_MAX:
 * the runtime computes lengths unsigned, so hi - lo need not fit in a long;
 * a piece is at most grain long, so hi' - lo' in the body always does.
 * hi <= lo runs nothing. Returns the first negative result of a piece
 * (the others still run), or 0. Call it from a task on worker @w.
 */
int ws_parallel_for(struct ws_worker *w, long lo, long hi, long grain, ws_range_fn body,
		    void *arg);

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_TASK_H */
