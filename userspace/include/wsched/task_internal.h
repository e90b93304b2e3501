// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/task_internal.h - the inline fast path of ws_spawn/ws_sync. Not
 * API: everything here starts with _ws_ and may change at any time. The
 * design and its correctness argument are in userspace/lib/pool.c.
 *
 * Each worker starts with a struct _ws_wdeque: a fixed array of task
 * pointers, used as a split deque.
 *   [0, head)      taken by thieves (still running, or done)
 *   [head, split)  public: thieves may take the oldest (head) with one CAS
 *   [split, tail)  private: only the owner touches them, without atomics RMW
 * head and split share the 64-bit word ts, which thieves CAS; split and tail
 * are also kept in owner-private fields. Thieves that find nothing public
 * set _WS_REQ_SPLIT in req; the owner then moves split up at its next spawn.
 *
 * Concurrency contract:
 *   _ws_spawn/_ws_sync     the owner worker only, from a task it runs
 *   ts                     read/CAS by thieves; CAS/store by the owner
 *   slot[i], i < split     read by a thief after its CAS on ts claims i
 *   req                    bit 0 set by thieves (a split request), bit 1 set
 *                          by a worker going to sleep while nobody searches
 *                          (a wake hint); read and cleared by the owner
 */
#ifndef WSCHED_TASK_INTERNAL_H
#define WSCHED_TASK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct _ws_wdeque {
	/* Owner-private line. */
	uint32_t tail;		/* next free slot; counts on past cap when full */
	uint32_t split;		/* owner's copy of split (<= cap) */
	uint32_t cap;		/* slots */
	uint32_t _unused;
	struct ws_task **slot;	/* accessed atomically */
	uint64_t nr_tasks;	/* owner-written, read relaxed by stats */
	/* Thieves CAS this line. */
	uint64_t ts __attribute__((aligned(64)));	/* split << 32 | head */
	/* Others write this line (rarely). */
	uint32_t req __attribute__((aligned(64)));
	char _pad[60];
};

#define _WS_REQ_SPLIT	1u	/* a thief found nothing public */
#define _WS_REQ_WAKE	2u	/* someone sleeps and nobody searches */

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
	/* relaxed: thieves read it only after the owner published it with the
	 * CAS on ts in _ws_spawn_slow (release), which their CAS acquires. A
	 * spawn beyond the array is only counted: it stays private (split <=
	 * cap) and its sync runs it, the frame being the caller's. */
	if (__builtin_expect(d->tail < d->cap, 1))
		__atomic_store_n(&d->slot[d->tail], t, __ATOMIC_RELAXED);
	d->tail++;
	/* relaxed: a request or hint seen late is served at a later spawn (see
	 * "accepted races" in pool.c). */
	if (__builtin_expect(__atomic_load_n(&d->req, __ATOMIC_RELAXED) != 0, 0))
		_ws_spawn_slow(w);
}

static inline int _ws_sync(struct ws_worker *w, struct ws_task *t)
{
	struct _ws_wdeque *d = _ws_dq(w);

	if (__builtin_expect(d->tail - 1 >= d->split, 1)) {
		d->tail--;		/* private: nobody else can have it */
		/* Serve requests here too, so that "spawn N, then sync N"
		 * loops share their remaining children. */
		if (__builtin_expect(__atomic_load_n(&d->req, __ATOMIC_RELAXED) != 0, 0))
			_ws_spawn_slow(w);
		return _ws_run(w, t);
	}
	return _ws_sync_slow(w, t);
}

static inline void _ws_poll(struct ws_worker *w)
{
	if (__builtin_expect(__atomic_load_n(&_ws_dq(w)->req, __ATOMIC_RELAXED) != 0, 0))
		_ws_spawn_slow(w);
}

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_TASK_INTERNAL_H */
