// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/task_internal.h - the inline fast path of ws_spawn/ws_sync. Not
 * API: everything here starts with _ws_ and may change at any time.
 *
 * Each worker starts with a struct _ws_wdeque, the split deque of
 * wsched/wdeque_impl.h, which holds the layout, the concurrency contract and
 * the correctness argument; spawn pushes to it and sync pops from it here,
 * the slow paths and the thieves are in userspace/lib/pool.c.
 */
#ifndef WSCHED_TASK_INTERNAL_H
#define WSCHED_TASK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "wsched/wdeque_impl.h"

#ifdef __cplusplus
extern "C" {
#endif

void _ws_spawn_slow(struct ws_worker *w);
int _ws_sync_slow(struct ws_worker *w, struct ws_task *t);
int _ws_group_trampoline(struct ws_worker *w, void *t);

static inline struct _ws_wdeque *_ws_dq(struct ws_worker *w)
{
	return (struct _ws_wdeque *)(void *)w;	/* the first member */
}

static inline void _ws_count_task(struct _ws_wdeque *d)
{
	/* single writer: load+store, no RMW */
	__atomic_store_n(&d->nr_tasks, __atomic_load_n(&d->nr_tasks, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

/* Run a task here. Group tasks go through _ws_group_trampoline (their _arg
 * is then the frame itself), so plain tasks pay nothing for groups. */
static inline int _ws_run(struct ws_worker *w, struct ws_task *t)
{
	_ws_count_task(_ws_dq(w));
	return t->_fn(w, t->_arg);
}

static inline void _ws_spawn(struct ws_worker *w, struct ws_task *t, struct ws_group *g,
			     ws_task_fn fn, void *arg)
{
	struct _ws_wdeque *d = _ws_dq(w);

	if (g) {
		t->_fn = _ws_group_trampoline;
		t->_arg = t;
		t->_group = g;
		t->_gfn = fn;
		t->_garg = arg;
	} else {
		t->_fn = fn;
		t->_arg = arg;
	}
	/* A spawn beyond the array is only counted (wdeque_impl.h). */
	_ws_wdq_push(d, t);
	/* A request or hint seen late is served at a later spawn (see
	 * "accepted races" in pool.c). */
	if (__builtin_expect(_ws_wdq_req(d) != 0, 0))
		_ws_spawn_slow(w);
}

static inline int _ws_sync(struct ws_worker *w, struct ws_task *t)
{
	struct _ws_wdeque *d = _ws_dq(w);

	if (_ws_wdq_pop_private(d)) {
		/* Serve requests here too, so that "spawn N, then sync N"
		 * loops share their remaining children. */
		if (__builtin_expect(_ws_wdq_req(d) != 0, 0))
			_ws_spawn_slow(w);
		return _ws_run(w, t);
	}
	return _ws_sync_slow(w, t);
}

static inline void _ws_poll(struct ws_worker *w)
{
	if (__builtin_expect(_ws_wdq_req(_ws_dq(w)) != 0, 0))
		_ws_spawn_slow(w);
}

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_TASK_INTERNAL_H */
