// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * ws_spinlock, ws_ticketlock, ws_mutex (wsched/lock.h, which states the
 * concurrency contract). Each marks its holder as inside a critical section
 * (ws_critical_enter after acquiring, ws_critical_exit after releasing: the
 * marked interval covers the whole hold, plus a few instructions after the
 * release, which at worst earns a needless grace). A ticket waiter is marked
 * from taking its ticket (see the ticket lock below).
 *
 * Memory orders: every acquisition is an acquire RMW or load on the lock
 * word and pairs with the release store (or RMW) of the previous unlock;
 * everything else is relaxed because it only decides whether to retry or
 * whom to yield to (the ticket lock's who, parked and helped are hints).
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomic_internal.h"
#include "wsched/lock.h"
#include "wsched/thread.h"
#include "yield_internal.h"

#define SPIN_BACKOFF_MAX	1024u	/* pauses between probes, at most */
#define MUTEX_SPIN_NS		20000u	/* spin this long before sleeping */
#define SPIN_SPIN_NS		50000u	/* spinlock: the same */

/* The calling thread's id, cached (a lock word must not cost a syscall).
 * A fork child's threads start with 0 again: the child's pthread_atfork
 * handler cannot reach other threads' copies, but the child has only the
 * forking thread, whose copy it resets. */
static __thread uint32_t my_tid __attribute__((tls_model("initial-exec")));
static pthread_once_t tid_atfork_once = PTHREAD_ONCE_INIT;

static void tid_atfork_child(void)
{
	my_tid = 0;
}

static void tid_atfork_setup(void)
{
	pthread_atfork(NULL, NULL, tid_atfork_child);
}

static inline uint32_t self_tid(void)
{
	if (__builtin_expect(!my_tid, 0)) {
		pthread_once(&tid_atfork_once, tid_atfork_setup);
		my_tid = (uint32_t)ws_gettid();
	}
	return my_tid;
}

static inline uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void pause_n(uint32_t n)
{
	while (n--)
		ws_cpu_relax();
}

/* ------------------------------------------------------------ spinlock */

void ws_spinlock_init(ws_spinlock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELAXED);
}

/* 0 -> our tid with one CAS (not an exchange: a failed attempt must not
 * overwrite the holder's id). acquire: pairs with the release store in
 * ws_spinlock_unlock. */
static inline bool spin_try(ws_spinlock_t *l, uint32_t me)
{
	uint32_t zero = 0;

	return __atomic_compare_exchange_n(&l->locked, &zero, me, false, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

bool ws_spinlock_trylock(ws_spinlock_t *l)
{
	if (__atomic_load_n(&l->locked, __ATOMIC_RELAXED) || !spin_try(l, self_tid()))
		return false;
	ws_critical_enter();
	return true;
}

void ws_spinlock_lock(ws_spinlock_t *l)
{
	uint32_t backoff = 1, me = self_tid(), h, last = 0;
	uint64_t since = 0, now;

	for (;;) {
		/* Test (relaxed, shared cache line), then test-and-set. */
		h = __atomic_load_n(&l->locked, __ATOMIC_RELAXED);
		if (!h && spin_try(l, me))
			break;
		pause_n(backoff);
		if (backoff < SPIN_BACKOFF_MAX)
			backoff <<= 1;
		if (!h)
			continue;
		/*
		 * One holder kept the lock for SPIN_SPIN_NS: it is probably
		 * preempted; give it our CPU rather than burn it, then spin
		 * that long again. Time, not iterations: a pause costs 10 to
		 * 100+ ns, and under QEMU's single-threaded TCG each one hands
		 * the host thread to another vCPU. So the clock is read every
		 * round (a vDSO read beside up to 1024 pauses): reading it
		 * less often would leave thousands of pauses between reads
		 * once the backoff is full, far more than SPIN_SPIN_NS, and a
		 * waiter might never yield during a long section.
		 */
		now = mono_ns();
		if (h != last) {	/* first held round (last 0), or a new holder */
			last = h;
			since = now;
		} else if (now - since > SPIN_SPIN_NS) {
			ws_lock_yield_to((pid_t)h);
			since = mono_ns();
		}
	}
	ws_critical_enter();
}

void ws_spinlock_unlock(ws_spinlock_t *l)
{
	/* release: the section's accesses before the next holder's. */
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
	ws_critical_exit();
}

/* ------------------------------------------------------------ ticket lock */

/*
 * Under oversubscription a FIFO lock stalls whenever the thread whose turn
 * it is has no CPU: nobody else may take the lock, and every waiter spins
 * until the stalled one runs again (a time slice, milliseconds). Worse, a
 * waiter that yields to get it running is itself queued: once descheduled
 * it is the next stall, a chain in which every handover costs a slice.
 * Three things keep the queue running (FIFO order is never touched):
 * - who[] names the thread holding each recent ticket, so a waiter that
 *   sees owner not move for TICKET_STALL_NS yields *towards* the stalled
 *   thread (ws_lock_yield_to: wsched.ko, or scx_wsched's hint slot, which
 *   hand the waiter's CPU to it), not to whoever its CPU picks next;
 * - one waiter per stall does that (helped: the rest keep spinning, so
 *   several yields do not take several queued threads off their CPUs), the
 *   last in line if it can (it has the longest until its turn); a stall
 *   that outlasts TICKET_STALL_RETRY lets any waiter yield again;
 * - that waiter then parks (parked = its ticket + 1): the next thread to
 *   arrive, which holds no ticket yet, yields towards it before taking one.
 *   So the thread left without a CPU holds no ticket and stalls nobody,
 *   which breaks the chain.
 * Marks: every waiter from taking its ticket (the lock passes to it in
 * order whether it runs or not, so preempting it stalls every later waiter
 * as much as preempting the holder). Marking only the first waiter leaves
 * the later ones to be preempted with their turn coming, and under
 * oversubscription the lock then keeps much less of its throughput.
 * One pause per probe, no backoff proportional to the distance from the
 * front: distance x 16 pauses is already several microseconds where a
 * pause costs 100+ ns, longer than a short section, so a waiter whose
 * turn came would notice it late while the lock sat unused (worse in the
 * emulated lab guest, where each pause hands the host CPU to another
 * vCPU).
 */
#define TICKET_WHO_MASK		(WS_TICKET_WHO - 1)
#define TICKET_STALL_NS		20000u	/* owner unchanged this long: a stall */
#define TICKET_STALL_RETRY	8u	/* x TICKET_STALL_NS: yield again */
#define TICKET_PARK_MAX		4	/* arrival yields before taking a ticket, at most */

_Static_assert((WS_TICKET_WHO & TICKET_WHO_MASK) == 0, "WS_TICKET_WHO: a power of two");

void ws_ticketlock_init(ws_ticketlock_t *l)
{
	int i;

	__atomic_store_n(&l->next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->owner, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->parked, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&l->helped, 0, __ATOMIC_RELAXED);
	for (i = 0; i < WS_TICKET_WHO; i++)
		__atomic_store_n(&l->who[i], 0, __ATOMIC_RELAXED);
}

/* The thread holding ticket @t, 0 when who[] no longer (or not yet) says.
 * who[] is a hint throughout: relaxed; a stale entry fails the ticket
 * check, and a wrong tid could only aim one yield at another thread of
 * this process (both directed paths refuse any other), or at none. */
static inline uint32_t ticket_who(ws_ticketlock_t *l, uint32_t t)
{
	uint64_t w = __atomic_load_n(&l->who[t & TICKET_WHO_MASK], __ATOMIC_RELAXED);

	return (uint32_t)(w >> 32) == t ? (uint32_t)w : 0;
}

/* Is ticket @t taken and not yet served? (unsigned distances: wrap-safe) */
static inline bool ticket_queued(ws_ticketlock_t *l, uint32_t t)
{
	uint32_t o = __atomic_load_n(&l->owner, __ATOMIC_RELAXED);

	return t - o < __atomic_load_n(&l->next, __ATOMIC_RELAXED) - o;
}

/*
 * Owner @o has been stuck for @stuck ns; may the waiter holding ticket @t,
 * which has yielded @yields times during this stall, yield (again) now?
 * One waiter per stall, the one that claims helped = o + 1; the last in
 * line gets one TICKET_STALL_NS to do so before the others may. Once the
 * stall outlasts TICKET_STALL_RETRY x TICKET_STALL_NS per yield made, any
 * waiter may yield again: the first yield reached nobody (the target was
 * running after all, or the kernel declined). That waiter marks the stall
 * helped too: a waiter that was off its CPU between two clock reads sees
 * the stall first when it is already that old, and the others need not
 * yield for it (nor would ws_ticketlock_t.helped say that anyone had).
 */
static bool ticket_should_yield(ws_ticketlock_t *l, uint32_t t, uint32_t o, uint64_t stuck,
				uint32_t yields)
{
	uint32_t h;

	if (stuck >= (uint64_t)TICKET_STALL_NS * TICKET_STALL_RETRY * (yields + 1)) {
		__atomic_store_n(&l->helped, o + 1, __ATOMIC_RELAXED);
		return true;
	}
	if (stuck < 2ull * TICKET_STALL_NS && t + 1 != __atomic_load_n(&l->next, __ATOMIC_RELAXED))
		return false;
	h = __atomic_load_n(&l->helped, __ATOMIC_RELAXED);
	return h != o + 1 && __atomic_compare_exchange_n(&l->helped, &h, o + 1, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Before taking a ticket: hand our CPU to a waiter that gave its own away
 * (see above). Bounded, so an arrival always queues soon. */
static void ticket_unpark(ws_ticketlock_t *l, uint32_t me)
{
	int i;

	for (i = 0; i < TICKET_PARK_MAX; i++) {
		uint32_t p = __atomic_load_n(&l->parked, __ATOMIC_RELAXED), tid;

		if (!p || !ticket_queued(l, p - 1))
			return;
		tid = ticket_who(l, p - 1);
		/* Claim it: one arrival per parked waiter. */
		if (!tid || tid == me ||
		    !__atomic_compare_exchange_n(&l->parked, &p, 0, false, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			return;
		ws_lock_yield_to((pid_t)tid);
	}
}

void ws_ticketlock_lock(ws_ticketlock_t *l)
{
	uint32_t me = self_tid(), t, o, seen, rounds = 0, tid, h, yields = 0;
	uint64_t since = 0, now;

	ticket_unpark(l, me);
	ws_critical_enter();		/* queued: on the critical path already */
	/* relaxed: the ticket only fixes our place; the acquire is below. */
	t = __atomic_fetch_add(&l->next, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&l->who[t & TICKET_WHO_MASK], (uint64_t)t << 32 | me, __ATOMIC_RELAXED);
	seen = t;
	/* acquire: pairs with the release store of owner in unlock. */
	while ((o = __atomic_load_n(&l->owner, __ATOMIC_ACQUIRE)) != t) {
		ws_cpu_relax();
		if (o != seen) {		/* the queue moves: no stall */
			seen = o;
			since = 0;
			rounds = 0;
			yields = 0;
			continue;
		}
		/* Time, not iterations (a pause costs 10 to 100+ ns): a clock
		 * read every 8 probes while owner stands still. */
		if (++rounds % 8)
			continue;
		now = mono_ns();
		if (!since) {
			since = now;
			continue;
		}
		if (now - since < TICKET_STALL_NS)
			continue;
		/*
		 * o has not moved for TICKET_STALL_NS: its thread (holding the
		 * lock, or not yet aware that it may take it) is probably off
		 * CPU.
		 */
		if (!ticket_should_yield(l, t, o, now - since, yields))
			continue;
		yields++;
		tid = ticket_who(l, o);
		/* Park unless first in line (then the lock is ours next anyway). */
		if (t - o > 1)
			__atomic_store_n(&l->parked, t + 1, __ATOMIC_RELAXED);
		ws_lock_yield_to((pid_t)(tid != me ? tid : 0));
		/* Running again: nobody needs to yield to us any more. */
		h = t + 1;
		__atomic_compare_exchange_n(&l->parked, &h, 0, false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
	}
}

bool ws_ticketlock_trylock(ws_ticketlock_t *l)
{
	/* acquire: pairs with the release store of owner in unlock. */
	uint32_t o = __atomic_load_n(&l->owner, __ATOMIC_ACQUIRE), n = o;

	/* Free iff next == owner: take the next ticket, which is served now.
	 * acquire: conservative, the section starts after the ticket is ours. */
	if (!__atomic_compare_exchange_n(&l->next, &n, o + 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false;
	__atomic_store_n(&l->who[o & TICKET_WHO_MASK], (uint64_t)o << 32 | self_tid(),
			 __ATOMIC_RELAXED);
	ws_critical_enter();
	return true;
}

void ws_ticketlock_unlock(ws_ticketlock_t *l)
{
	/* Only the holder writes owner: a plain increment. release: the
	 * section's accesses before the next holder's acquire load. */
	__atomic_store_n(&l->owner, __atomic_load_n(&l->owner, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELEASE);
	ws_critical_exit();
}

/* ------------------------------------------------------------ mutex */

static inline int mutex_op(const ws_mutex_t *m, int op)
{
	return m->shared ? op : op | FUTEX_PRIVATE_FLAG;
}

void ws_mutex_init(ws_mutex_t *m)
{
	m->state = 0;
	m->shared = 0;
	m->owner = 0;
}

void ws_mutex_init_shared(ws_mutex_t *m)
{
	m->state = 0;
	m->shared = 1;
	m->owner = 0;
}

/* owner is a hint for waiters' directed yields: relaxed everywhere (a stale
 * or torn-by-time value only aims one yield at the wrong thread, which the
 * kernel then declines or the scheduler ignores). */
static inline void mutex_set_owner(ws_mutex_t *m, uint32_t tid)
{
	__atomic_store_n(&m->owner, tid, __ATOMIC_RELAXED);
}

bool ws_mutex_trylock(ws_mutex_t *m)
{
	uint32_t c = 0;

	/* acquire: pairs with the release RMW/store in ws_mutex_unlock. */
	if (!__atomic_compare_exchange_n(&m->state, &c, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return false;
	mutex_set_owner(m, self_tid());
	ws_critical_enter();
	return true;
}

void ws_mutex_lock(ws_mutex_t *m)
{
	uint32_t c = 0, backoff = 1;
	uint64_t start;

	/* Every acquire below pairs with the release in ws_mutex_unlock. */
	if (__atomic_compare_exchange_n(&m->state, &c, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		goto locked;
	start = mono_ns();
	do {
		pause_n(backoff);
		if (backoff < SPIN_BACKOFF_MAX / 4)
			backoff <<= 1;
		c = 0;
		if (!__atomic_load_n(&m->state, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&m->state, &c, 1, false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			goto locked;
	} while (c != 2 && mono_ns() - start < MUTEX_SPIN_NS);

	/* About to sleep: the holder may be preempted; hand it our CPU once
	 * (not for a process-shared mutex: its holder may be elsewhere). */
	if (!m->shared) {
		uint32_t o = __atomic_load_n(&m->owner, __ATOMIC_RELAXED);

		if (o && o != self_tid())
			ws_lock_yield_to((pid_t)o);
	}
	/* Sleep. State 2 says "someone may sleep": the unlocker then wakes. */
	c = __atomic_exchange_n(&m->state, 2, __ATOMIC_ACQUIRE);
	while (c) {
		syscall(SYS_futex, &m->state, mutex_op(m, FUTEX_WAIT), 2, NULL, NULL, 0);
		c = __atomic_exchange_n(&m->state, 2, __ATOMIC_ACQUIRE);
	}
locked:
	mutex_set_owner(m, self_tid());
	ws_critical_enter();
}

void ws_mutex_unlock(ws_mutex_t *m)
{
	mutex_set_owner(m, 0);
	/* release: the section's accesses before the next holder's acquire. */
	if (__atomic_fetch_sub(&m->state, 1, __ATOMIC_RELEASE) != 1) {
		__atomic_store_n(&m->state, 0, __ATOMIC_RELEASE);
		syscall(SYS_futex, &m->state, mutex_op(m, FUTEX_WAKE), 1, NULL, NULL, 0);
	}
	ws_critical_exit();
}
