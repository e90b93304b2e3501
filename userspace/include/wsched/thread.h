// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/thread.h - a thread's registration with scx_wsched and the
 * critical sections the scheduler can see.
 *
 * A thread registered with scx_wsched (ws_thread_register) owns a hint slot
 * (wsched/hint.h, Documentation/abi.md) in memory the scheduler reads. While
 * the thread is inside a critical section its slot says so, and the
 * scheduler may give it a short, bounded grace instead of preempting it
 * when its slice runs out. Everything here works the same without the
 * scheduler: an unregistered thread writes to a private thread-local slot,
 * at the same cost (a few plain stores, no syscall, no shared cache line).
 *
 * Concurrency contract
 * --------------------
 * | call                               | acts on         | may run concurrently with |
 * | ---------------------------------- | --------------- | ------------------------- |
 * | ws_thread_register/unregister      | calling thread  | anything, in any thread   |
 * | ws_critical_enter/exit/depth       | calling thread  | anything, in any thread   |
 * | ws_hint_set_state/stealable        | calling thread  | anything, in any thread   |
 * | ws_thread_slot                     | calling thread  | anything, in any thread   |
 *
 * The critical-section calls are async-signal-safe in the sense that a
 * signal handler that enters a section must leave it before returning;
 * ws_thread_register is not async-signal-safe (it may connect a socket
 * under a process-wide mutex).
 *
 * The _ws_ names are internal to libwsched and may change.
 */
#ifndef WSCHED_THREAD_H
#define WSCHED_THREAD_H

#include <stdbool.h>
#include <stdint.h>

#include "wsched/hint.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ registration */

/*
 * Register the calling thread with the scheduler: connect to its socket
 * once per process (WSCHED_HINT_SOCKET, default WS_HINT_SOCK_PATH; the
 * variable is ignored in a set-id program), map the process's slot array,
 * claim a free slot (wsched/hint.h says which). Returns 0 (also when
 * already registered), -ENOENT/-ECONNREFUSED when no scheduler serves
 * hints, -EACCES when the socket is not ours to use, -ENOSPC when every
 * slot of the process is taken, -EPROTO on a version mismatch, -ETIMEDOUT
 * when the loader did not take the connection within 1 s or, having
 * acknowledged it, did not answer within 10 s, -EAGAIN/-ENOMEM when no
 * thread-specific key was left for releasing the slot at thread exit, or
 * the loader's reason for refusing the process (-EUSERS: it serves as many
 * processes as it can; -EMFILE, -ENOMEM, -EDQUOT: the user's quota of
 * arrays, -EBUSY: the user registers faster than the loader allows one
 * user, -EPERM: the loader cannot read the process's user namespace,
 * -ESRCH: the process was gone when the loader looked).
 * On failure the thread keeps working with its private slot.
 * Pool workers register themselves; the slot is released at thread exit.
 */
int ws_thread_register(void);

/* Release the calling thread's slot (no-op when not registered). */
void ws_thread_unregister(void);

/* The calling thread's slot: the shared one when registered, else private. */
const struct ws_hint_slot *ws_thread_slot(void);

static inline bool ws_thread_registered(void);

/* ------------------------------------------------------------ critical sections */

/* Internal: the calling thread's shared slot, NULL when unregistered. */
extern __thread struct ws_hint_slot *_ws_hint_self __attribute__((tls_model("initial-exec")));
extern __thread struct ws_hint_slot _ws_hint_local __attribute__((tls_model("initial-exec")));

static inline struct ws_hint_slot *_ws_hint_slot(void)
{
	struct ws_hint_slot *s = _ws_hint_self;

	return s ? s : &_ws_hint_local;
}

static inline bool ws_thread_registered(void)
{
	return _ws_hint_self != NULL;
}

/*
 * The slot's fields are written by this thread only and read by the
 * scheduler in the tick interrupt of the CPU the thread runs on, which sees
 * this CPU's stores in program order like a signal handler would: relaxed
 * stores plus a compiler (signal) fence keep the mark inside the section.
 * A scheduler reading from another CPU may see a stale value; it is a hint.
 */
static inline void ws_critical_enter(void)
{
	struct ws_hint_slot *s = _ws_hint_slot();

	__atomic_store_n(&s->cs_depth, __atomic_load_n(&s->cs_depth, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->cs_count, __atomic_load_n(&s->cs_count, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
	/* The mark precedes the section's first access (see above). */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Internal: clear grace_pending and give the CPU back (hint.c). */
void _ws_grace_yield(struct ws_hint_slot *s);

static inline void ws_critical_exit(void)
{
	struct ws_hint_slot *s = _ws_hint_slot();
	uint32_t d = __atomic_load_n(&s->cs_depth, __ATOMIC_RELAXED);

	/* The section's last access precedes the unmark. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&s->cs_depth, d ? d - 1 : 0, __ATOMIC_RELAXED);
	if (d > 1)
		return;
	/*
	 * Leaving the outermost section: if the scheduler let us finish it
	 * on borrowed time (a grace), hand the CPU back now, outside the
	 * section, instead of being preempted wherever the grace runs out.
	 * The flag is read after the unmark (signal fence: the scheduler
	 * writes it from this CPU's tick), so a grace granted in between is
	 * still seen.
	 */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(__atomic_load_n(&s->grace_pending, __ATOMIC_RELAXED) != 0, 0))
		_ws_grace_yield(s);
}

/* Nesting depth of the calling thread's critical sections. */
static inline uint32_t ws_critical_depth(void)
{
	return __atomic_load_n(&_ws_hint_slot()->cs_depth, __ATOMIC_RELAXED);
}

/* Publish the calling thread's state (enum ws_hint_state) and stealable
 * task count; stores only when the value changes. */
static inline void ws_hint_set_state(uint32_t state)
{
	struct ws_hint_slot *s = _ws_hint_slot();

	if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) != state)
		__atomic_store_n(&s->state, state, __ATOMIC_RELAXED);
}

/* Publish the calling thread's WS_HINT_FLAG_* bits (wsched/hint.h); they
 * follow the thread from its private slot to a shared one and back. */
static inline void ws_thread_set_flags(uint32_t flags)
{
	struct ws_hint_slot *s = _ws_hint_slot();

	if (__atomic_load_n(&s->flags, __ATOMIC_RELAXED) != flags)
		__atomic_store_n(&s->flags, flags, __ATOMIC_RELAXED);
}

static inline void ws_hint_set_stealable(uint32_t n)
{
	struct ws_hint_slot *s = _ws_hint_slot();

	if (__atomic_load_n(&s->nr_stealable, __ATOMIC_RELAXED) != n)
		__atomic_store_n(&s->nr_stealable, n, __ATOMIC_RELAXED);
}

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_THREAD_H */
