// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/lock.h - locks whose holders the scheduler can see.
 *
 * Every lock here marks its holder as inside a critical section
 * (wsched/thread.h) from acquisition to release, so that scx_wsched may let
 * a preempted holder finish on a short grace; a waiter that sees a holder
 * keep the lock long yields towards it (a directed yield, wsched/yield.h).
 * Without the scheduler they are ordinary locks at the same cost.
 *
 * Concurrency contract
 * --------------------
 * - Any thread may lock/unlock any lock; unlock only by the holder.
 *   A lock must be initialised (zero, or *_INIT) before use and not be
 *   destroyed while held or waited for. ws_mutex may be shared between
 *   processes only if ws_mutex_init_shared() was used.
 * - Every lock acquire is an acquire operation and every unlock a release
 *   operation on the lock word: the holder's accesses are ordered as with
 *   any mutex.
 * - Who is marked: the holder of every lock (from acquisition to release),
 *   and a thread queued on a ws_ticketlock (it is on the critical path: the
 *   lock passes to it in FIFO order whether it runs or not).
 */
#ifndef WSCHED_LOCK_H
#define WSCHED_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Test-and-test-and-set spinlock with bounded exponential backoff; the
 * lock word holds the holder's thread id. A waiter that has seen one holder
 * keep the lock for 50 us (by the clock) yields towards it (directed yield:
 * wsched.ko, or scx_wsched's hint slots, else a plain sched_yield()), and
 * again after every further 50 us. */
typedef struct { uint32_t locked; } ws_spinlock_t;
#define WS_SPINLOCK_INIT { 0 }

/*
 * FIFO ticket lock. Each waiter records its ticket and thread id in who[]
 * (ticket % WS_TICKET_WHO), so a waiter that sees the queue stall (owner
 * unchanged for a while: the thread whose turn it is lost its CPU) can
 * yield towards that thread; a waiter that gave its CPU away that way
 * leaves its ticket in parked, and the next thread to arrive hands its CPU
 * to the parked one before it takes a ticket itself (lock.c explains why).
 * All fields but next and owner are hints.
 */
#define WS_TICKET_WHO	16	/* waiters whose thread ids are remembered */
typedef struct {
	uint32_t next, owner;
	uint32_t parked;		/* ticket + 1 of a waiter that yielded, 0: none */
	uint32_t helped;		/* owner + 1 once a waiter yielded towards it */
	uint64_t who[WS_TICKET_WHO];	/* ticket << 32 | tid; tid 0: unknown */
} ws_ticketlock_t;
#define WS_TICKETLOCK_INIT { 0, 0, 0, 0, { 0 } }

/* Spin for a while, then sleep on a futex. 0 free, 1 locked, 2 locked with
 * possible sleepers (Drepper, "Futexes Are Tricky", mutex 2). owner is the
 * holder's thread id (a hint, 0 when unknown): a waiter about to sleep
 * first yields towards it once (directed yield, as for the spinlock). */
typedef struct { uint32_t state; uint32_t shared; uint32_t owner; } ws_mutex_t;
#define WS_MUTEX_INIT { 0, 0, 0 }

void ws_spinlock_init(ws_spinlock_t *l);
void ws_spinlock_lock(ws_spinlock_t *l);
bool ws_spinlock_trylock(ws_spinlock_t *l);
void ws_spinlock_unlock(ws_spinlock_t *l);

void ws_ticketlock_init(ws_ticketlock_t *l);
void ws_ticketlock_lock(ws_ticketlock_t *l);
bool ws_ticketlock_trylock(ws_ticketlock_t *l);
void ws_ticketlock_unlock(ws_ticketlock_t *l);

void ws_mutex_init(ws_mutex_t *m);
void ws_mutex_init_shared(ws_mutex_t *m);	/* usable across processes */
void ws_mutex_lock(ws_mutex_t *m);
bool ws_mutex_trylock(ws_mutex_t *m);
void ws_mutex_unlock(ws_mutex_t *m);

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_LOCK_H */
