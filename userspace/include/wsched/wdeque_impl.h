// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/wdeque_impl.h - the runtime's split deque: one per worker, the
 * deque ws_spawn/ws_sync push to and pop from and thieves steal from. Not
 * API: everything here starts with _ws_ and may change at any time. It is
 * included by task_internal.h (the inline spawn/sync fast paths) and used by
 * userspace/lib/pool.c (the slow paths and the thieves), and is written once
 * against the small set of atomics macros below, so that
 * userspace/tests/relacy_wdeque.cpp compiles the very same text under the
 * Relacy model checker. By default the macros are GCC's __atomic builtins on
 * plain fields, which C and C++ callers of the public headers can both
 * compile; an includer that defines _WS_WDQ_SHIM provides them instead.
 *
 * Layout: each worker has a fixed array of task pointers, used as
 *   [0, head)      taken by thieves (still running, or done)
 *   [head, split)  public: thieves may take the oldest (head) with one CAS
 *   [split, tail)  private: only the owner touches them, without RMW
 * head and split share the 64-bit word ts = split << 32 | head, which
 * thieves CAS; split and tail are also kept in owner-private fields.
 *
 * Concurrency contract (who may call what, at the same time as what):
 *
 *   operation               caller       may run concurrently with
 *   ----------------------  -----------  ------------------------------------
 *   _ws_wdq_push            owner only   steal, ask, finish
 *   _ws_wdq_pop_private     owner only   steal, ask, finish
 *   _ws_wdq_take_req        owner only   steal, ask
 *   _ws_wdq_expose          owner only   steal, ask, finish
 *   _ws_wdq_take_back       owner only   steal, ask, finish
 *   _ws_wdq_stolen_done     owner only,  steal, ask (which then find
 *                           once done    nothing public)
 *   _ws_wdq_steal           any thread   everything
 *   _ws_wdq_ask             any thread   everything
 *   _ws_wdq_finish          the thief    everything; once per stolen task
 *                           of the task
 *   _ws_wdq_done            the owner    finish
 *
 * Owner spawn writes the frame, stores the slot (relaxed) and bumps tail;
 * owner sync of a private task (tail - 1 >= split) just decrements tail. No
 * read-modify-write, no fence: tasks stay private until a thief asks. A thief
 * that finds nothing public sets _WS_REQ_SPLIT in req (_ws_wdq_ask); the
 * owner answers at its next spawn or sync by moving split up over the older
 * half of its private tasks with one CAS on ts (_ws_wdq_expose). Thieves take
 * the oldest public task with one CAS on ts (head + 1), so steals are
 * lock-free.
 *
 * Owner sync of the task at index i = tail - 1, when i < split (public):
 * - head <= i: take it back with a CAS ts {head, split} -> {head, i};
 *   thieves CASing at the same time either win index head < i (the owner
 *   retries) or lose. Then the owner runs it inline.
 * - head > i: a thief has it. Then head == split == i + 1 (split <= tail
 *   always holds, and everything above i was popped already), so no thief
 *   can change ts any more. The owner keeps tail = i + 1 while it waits
 *   (tasks it runs meanwhile push above i, never over slot i), and once the
 *   thief has marked the frame done (_ws_wdq_finish) it resets ts to {i, i}
 *   with a plain store (_ws_wdq_stolen_done): any CAS of a thief expects a
 *   state with head < split, which never equals it.
 *
 * Memory orders (each pairing is named again at the operation):
 *
 *   where      operation            order    why
 *   ---------  -------------------  -------  ---------------------------------
 *   push       store slot           relaxed  published by expose's CAS
 *   expose     store frames' _done  relaxed  published by expose's CAS
 *   expose     CAS ts               seq_cst  release: slots and frames to the
 *                                            thieves' CAS; seq_cst: the
 *                                            producer side of the pool's
 *                                            sleeper handshake (pool.c)
 *   steal      load ts, CAS ts      acquire  read from the exposing CAS (or
 *              (success, failure)            an RMW in its release sequence):
 *                                            slot h and its frame visible
 *   steal      load slot            relaxed  after the CAS, ordered by it
 *   take_back  CAS ts               relaxed  the frame is the owner's own;
 *                                            only atomicity against thieves
 *   finish     exchange _done       release  the task's effects and result
 *                                            before the owner's acquire
 *   done       load _done           acquire  pairs with finish
 *   stolen_    store ts             release  not needed by thieves (nothing
 *   done                                     is public); keeps later release
 *                                            sequences simple to argue
 *   req        or / exchange / load relaxed  a hint: a request seen late is
 *                                            served at a later spawn; the
 *                                            owner runs the tasks meanwhile
 *
 * ABA on ts is harmless: a thief reads the slot only after its CAS succeeded,
 * and while index h is claimed by a thief, slot h is not rewritten until the
 * owner's sync of that task has seen the thief finish it. The thief's CAS is
 * an acquire that reads from the latest exposing CAS (release) or from RMWs
 * in its release sequence (thieves' CASes and the owner's take-backs; the
 * reset store only happens when nothing is public), so the slot and the
 * frame written before the exposure are visible.
 *
 * Spawns beyond the array (tail >= cap) are only counted: they stay private
 * (split <= cap) and their syncs run them, the frames being the caller's.
 */
#ifndef WSCHED_WDEQUE_IMPL_H
#define WSCHED_WDEQUE_IMPL_H

#include <stdint.h>

#ifndef _WS_WDQ_SHIM
#define _WS_WDQ_ATOMIC(T)		T
#define _WS_WDQ_RLX			__ATOMIC_RELAXED
#define _WS_WDQ_ACQ			__ATOMIC_ACQUIRE
#define _WS_WDQ_REL			__ATOMIC_RELEASE
#define _WS_WDQ_SC			__ATOMIC_SEQ_CST
#define _ws_wdq_ld(p, mo)		__atomic_load_n((p), mo)
#define _ws_wdq_st(p, v, mo)		__atomic_store_n((p), (v), mo)
#define _ws_wdq_xchg(p, v, mo)		__atomic_exchange_n((p), (v), mo)
#define _ws_wdq_or(p, v, mo)		__atomic_fetch_or((p), (v), mo)
/* Strong CAS; *(e) is updated with the current value on failure. */
#define _ws_wdq_cas(p, e, v, mos, mof)	__atomic_compare_exchange_n((p), (e), (v), 0, mos, mof)
#define _ws_wdq_likely(x)		__builtin_expect(!!(x), 1)
#define _ws_wdq_unlikely(x)		__builtin_expect(!!(x), 0)
#endif

/* Test hooks: the Relacy test instantiates the deque again with one of these
 * orders weakened to relaxed (or, with _WS_WDQ_TEST_SLOT_BEFORE_CAS, a thief
 * that reads the slot before its CAS) and checks that the model checker
 * catches each. Never set them in the library. */
#ifndef _WS_WDQ_MO_EXPOSE
#define _WS_WDQ_MO_EXPOSE	_WS_WDQ_SC
#endif
#ifndef _WS_WDQ_MO_STEAL
#define _WS_WDQ_MO_STEAL	_WS_WDQ_ACQ
#endif
#ifndef _WS_WDQ_MO_FINISH
#define _WS_WDQ_MO_FINISH	_WS_WDQ_REL
#endif
#ifndef _WS_WDQ_MO_DONE
#define _WS_WDQ_MO_DONE		_WS_WDQ_ACQ
#endif

/* No extern "C": nothing here has external linkage, and the Relacy test
 * instantiates the header in several C++ namespaces. */
struct ws_task;

struct _ws_wdeque {
	/* Owner-private line. */
	uint32_t tail;		/* next free slot; counts on past cap when full */
	uint32_t split;		/* owner's copy of split (<= cap) */
	uint32_t cap;		/* slots */
	uint32_t _unused;
	_WS_WDQ_ATOMIC(struct ws_task *) *slot;
	uint64_t nr_tasks;	/* owner-written, read relaxed by stats */
	/* Thieves CAS this line. */
	_WS_WDQ_ATOMIC(uint64_t) ts __attribute__((aligned(64)));	/* split << 32 | head */
	/* Others write this line (rarely). */
	_WS_WDQ_ATOMIC(uint32_t) req __attribute__((aligned(64)));
	char _pad[60];
};

#define _WS_REQ_SPLIT	1u	/* a thief found nothing public */
#define _WS_REQ_WAKE	2u	/* someone sleeps and nobody searches */

/* Values of a stolen frame's _done. */
#define _WS_TASK_DONE		1	/* the thief finished it */
#define _WS_TASK_SLEEPER	2	/* the owner sleeps on _done (pool.c) */

static inline uint64_t _ws_wdq_mk_ts(uint32_t head, uint32_t split)
{
	return (uint64_t)split << 32 | head;
}

/* Owner: push @t (spawn). */
static inline void _ws_wdq_push(struct _ws_wdeque *d, struct ws_task *t)
{
	/* relaxed: thieves read it only after the owner published it with the
	 * CAS in _ws_wdq_expose (release), which their CAS acquires. */
	if (_ws_wdq_likely(d->tail < d->cap))
		_ws_wdq_st(&d->slot[d->tail], t, _WS_WDQ_RLX);
	d->tail++;
}

/* Owner: is a request or hint pending? relaxed: one seen late is served at
 * a later spawn. */
static inline uint32_t _ws_wdq_req(struct _ws_wdeque *d)
{
	return _ws_wdq_ld(&d->req, _WS_WDQ_RLX);
}

/* Owner: take every pending request at once. relaxed: as above. */
static inline uint32_t _ws_wdq_take_req(struct _ws_wdeque *d)
{
	return _ws_wdq_xchg(&d->req, 0u, _WS_WDQ_RLX);
}

/* Anyone: set request bit(s) @bit; read first, so that idle thieves do not
 * keep writing the owner's line. relaxed: a hint. */
static inline void _ws_wdq_ask(struct _ws_wdeque *d, uint32_t bit)
{
	if ((_ws_wdq_ld(&d->req, _WS_WDQ_RLX) & bit) != bit)
		_ws_wdq_or(&d->req, bit, _WS_WDQ_RLX);
}

/* Owner: pop the task at tail - 1 if it is private (the sync fast path). */
static inline int _ws_wdq_pop_private(struct _ws_wdeque *d)
{
	if (_ws_wdq_likely(d->tail - 1 >= d->split)) {
		d->tail--;		/* private: nobody else can have it */
		return 1;
	}
	return 0;
}

/* Owner: share the older half of the private tasks with thieves. Returns
 * how many tasks are public afterwards (split - head), 0 if there was
 * nothing to share. */
static inline uint32_t _ws_wdq_expose(struct _ws_wdeque *d)
{
	uint32_t top = d->tail < d->cap ? d->tail : d->cap;	/* in the array */
	uint32_t s = d->split, n = top - s, ns, i;
	uint64_t ts;

	if (!n)
		return 0;
	ns = s + (n + 1) / 2;
	/* relaxed: the frames are published by the CAS below. */
	for (i = s; i < ns; i++)
		_ws_wdq_st(&_ws_wdq_ld(&d->slot[i], _WS_WDQ_RLX)->_done, 0, _WS_WDQ_RLX);
	ts = _ws_wdq_ld(&d->ts, _WS_WDQ_RLX);
	/* seq_cst: releases slots [s, ns) and their frames to thieves (their
	 * CAS acquires), and is the producer's RMW of the pool's sleeper
	 * handshake. A failure only means a thief moved head: retry. */
	while (!_ws_wdq_cas(&d->ts, &ts, _ws_wdq_mk_ts((uint32_t)ts, ns), _WS_WDQ_MO_EXPOSE,
			    _WS_WDQ_RLX))
		;
	d->split = ns;
	return ns - (uint32_t)ts;
}

/* Anyone but the owner: take the oldest public task, or ask the owner to
 * share and return NULL. Lock-free: a failed CAS means another steal or the
 * owner made progress. */
static inline struct ws_task *_ws_wdq_steal(struct _ws_wdeque *d)
{
	/* acquire: as the CAS below; the value the CAS then succeeds with
	 * is normally the one this load read. */
	uint64_t ts = _ws_wdq_ld(&d->ts, _WS_WDQ_MO_STEAL);

	for (;;) {
		uint32_t h = (uint32_t)ts, s = (uint32_t)(ts >> 32);

		if (h >= s) {
			_ws_wdq_ask(d, _WS_REQ_SPLIT);
			return 0;
		}
		/* acquire: reads from the owner's exposing CAS (release) or an
		 * RMW in its release sequence; slot h and its frame are then
		 * visible. On failure ts is reloaded (acquire) and we retry. */
#ifndef _WS_WDQ_TEST_SLOT_BEFORE_CAS
		if (_ws_wdq_cas(&d->ts, &ts, _ws_wdq_mk_ts(h + 1, s), _WS_WDQ_MO_STEAL,
				_WS_WDQ_MO_STEAL))
			return _ws_wdq_ld(&d->slot[h], _WS_WDQ_RLX);
#else
		{	/* Test hook: the ABA bug of reading the slot first. */
			struct ws_task *t = _ws_wdq_ld(&d->slot[h], _WS_WDQ_RLX);

			if (_ws_wdq_cas(&d->ts, &ts, _ws_wdq_mk_ts(h + 1, s), _WS_WDQ_MO_STEAL,
					_WS_WDQ_MO_STEAL))
				return t;
		}
#endif
	}
}

/* Owner: the task at tail - 1 is public; take it back if no thief has it
 * (1: the owner runs it now), else 0: it was stolen, and the owner must wait
 * for _ws_wdq_done and then call _ws_wdq_stolen_done. */
static inline int _ws_wdq_take_back(struct _ws_wdeque *d)
{
	uint32_t i = d->tail - 1;
	uint64_t ts = _ws_wdq_ld(&d->ts, _WS_WDQ_RLX);

	while ((uint32_t)ts <= i) {
		/* relaxed: the owner only needs atomicity against thieves' CAS;
		 * the frame is its own. */
		if (_ws_wdq_cas(&d->ts, &ts, _ws_wdq_mk_ts((uint32_t)ts, i), _WS_WDQ_RLX,
				_WS_WDQ_RLX)) {
			d->split = i;
			d->tail = i;
			return 1;
		}
	}
	return 0;
}

/* Owner: the stolen task at tail - 1 is done; pop it. Then head == split ==
 * tail: nothing is public, and no thief's CAS can succeed on ts. */
static inline void _ws_wdq_stolen_done(struct _ws_wdeque *d)
{
	uint32_t i = d->tail - 1;

	/* release: not needed for thieves (nothing is public), kept so that
	 * the release sequences of later exposures are simple to argue. */
	_ws_wdq_st(&d->ts, _ws_wdq_mk_ts(i, i), _WS_WDQ_REL);
	d->split = i;
	d->tail = i;
}

/* The thief: @t (stolen) has finished and its result is stored. Returns the
 * previous _done (_WS_TASK_SLEEPER: the owner sleeps and must be woken).
 * The frame may be gone right after this exchange. */
static inline int _ws_wdq_finish(struct ws_task *t)
{
	/* release: the result and the task's effects happen before the owner's
	 * acquire in _ws_wdq_done. */
	return _ws_wdq_xchg(&t->_done, _WS_TASK_DONE, _WS_WDQ_MO_FINISH);
}

/* The owner: has the thief of @t finished it? */
static inline int _ws_wdq_done(struct ws_task *t)
{
	/* acquire: pairs with the release in _ws_wdq_finish. */
	return _ws_wdq_ld(&t->_done, _WS_WDQ_MO_DONE) == _WS_TASK_DONE;
}

#endif /* WSCHED_WDEQUE_IMPL_H */
