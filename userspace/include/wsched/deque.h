// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/deque.h - a growable lock-free work-stealing deque of pointers.
 *
 * The dynamic circular deque of Chase & Lev (SPAA 2005) with the C11 memory
 * orders proven correct by Le, Pop, Cohen & Zappa Nardelli (PPoPP 2013), plus
 * safe reclamation of old buffers, shrinking after a burst and a batch steal.
 * The algorithm and its correctness argument are in userspace/lib/deque_impl.h.
 *
 * Concurrency contract (who may call what, at the same time as what):
 *
 *   operation               caller        may run concurrently with
 *   ----------------------  ------------  --------------------------------------
 *   ws_deque_create         anyone        nothing on that deque (it is new)
 *   ws_deque_push           owner only    steal, steal_batch, size
 *   ws_deque_pop            owner only    steal, steal_batch, size
 *   ws_deque_steal          any thread    everything but create/destroy
 *   ws_deque_steal_batch    any thread    everything but create/destroy
 *   ws_deque_size           any thread    everything but create/destroy (a hint)
 *   ws_deque_destroy        owner only    nothing: every thief must have returned
 *
 * "Owner" is one thread at a time; ownership may move between threads only
 * through a synchronisation that orders the old owner's last call before the
 * new owner's first (a mutex, a thread join, a release/acquire pair).
 *
 * Guarantees: each pushed item is returned exactly once, by one pop or one
 * steal (batch steals included), as long as the deque is not destroyed with
 * items in it (those are simply dropped: the deque does not own them). Push
 * never fails for lack of room except when memory runs out (-ENOMEM); the
 * buffer doubles as needed and halves again when the owner finds it at most
 * 1/8 full after a burst, never below the initial capacity. Replaced buffers
 * are freed by the owner once no thief can still be reading them, and at the
 * latest by ws_deque_destroy; no thief ever touches freed memory. Thieves
 * that keep arriving do not delay that (the owner waits only for those that
 * were inside a steal at an earlier moment). Bound: while 4 or more replaced
 * buffers wait (a thief preempted inside a steal), the owner does not
 * shrink, so at most 4 + log2(largest capacity / initial capacity) wait at
 * any time, and those beyond the 4 are together smaller than the live
 * buffer (stats: nr_retired - nr_freed).
 *
 * Progress: push and pop are wait-free except when the buffer is resized
 * (malloc); steal is lock-free (a failed CAS means another operation
 * succeeded). Steal returns WS_STEAL_RETRY on a lost race so that callers can
 * pick another victim instead of spinning on a contended one.
 *
 * Memory orders (the essay and the pairing comments are in deque_impl.h):
 *
 *   where   operation                 order    why
 *   ------  ------------------------  -------  ------------------------------
 *   push    load top                  acquire  a slot is reused only after the
 *                                              thief that took it read it
 *   push    fence before bottom store release  the slot is visible to a thief
 *                                              that sees the new bottom
 *   pop     fence after bottom store  seq_cst  store-load: pop and steal
 *                                              cannot both miss each other
 *   pop     CAS top (last item)       seq_cst  races thieves for the last item
 *   steal   load top                  acquire  sees the slot reads of the
 *                                              thief that last moved top
 *   steal   fence between top/bottom  seq_cst  pairs with pop's fence
 *   steal   load bottom               acquire  pairs with push's release fence
 *   steal   readers[e&1]++ / load     seq_cst  reclamation handshake with the
 *           buffer                             owner's buffer store + loads
 *                                              of both counters
 *   steal   load epoch (picks e)      relaxed  either counter is safe
 *   steal   re-load buffer            acquire  retry if a resize happened
 *   steal   CAS top                   seq_cst  claims the item
 *   steal   readers--                 release  slot reads happen before a free
 *   resize  store buffer              seq_cst  publishes copied slots; the
 *                                              store side of the handshake
 *   reclaim load readers[other]       seq_cst  frees a buffer only once both
 *                                              counters read 0 after it was
 *                                              replaced
 *   reclaim store epoch               relaxed  steers new thieves to the
 *                                              other counter
 *   slots   load/store                relaxed  atomic only to avoid a data
 *                                              race; ordered by the above
 *
 * Builds: defining WS_NO_FENCES when compiling the library selects the
 * fence-free variant (release/acquire/seq_cst operations instead of
 * atomic_thread_fence) used by the ThreadSanitizer build.
 */
#ifndef WSCHED_DEQUE_H
#define WSCHED_DEQUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ws_deque;

/* Return values of ws_deque_steal. */
enum ws_steal_result {
	WS_STEAL_EMPTY = 0,	/* nothing to steal */
	WS_STEAL_OK = 1,	/* *item holds the stolen item */
	WS_STEAL_RETRY = 2,	/* lost a race; the deque may still hold items */
};

/* Counters kept by the deque (relaxed, for statistics only). */
struct ws_deque_stats {
	uint64_t nr_grows;	/* buffer doublings */
	uint64_t nr_shrinks;	/* buffer halvings */
	uint64_t nr_retired;	/* buffers replaced */
	uint64_t nr_freed;	/* replaced buffers freed so far */
	size_t capacity;	/* current buffer capacity in items */
};

/*
 * Create a deque whose buffer holds at least @min_capacity items (rounded up
 * to a power of two, minimum 16) and never shrinks below that. Returns NULL
 * with errno = ENOMEM or EINVAL (capacity above 2^40).
 */
struct ws_deque *ws_deque_create(size_t min_capacity);

/* Free the deque and all its buffers. See the contract above. */
void ws_deque_destroy(struct ws_deque *dq);

/* Owner: push @item at the bottom. 0, or -ENOMEM if growing failed. */
int ws_deque_push(struct ws_deque *dq, void *item);

/* Owner: pop the most recently pushed item. false when empty. */
bool ws_deque_pop(struct ws_deque *dq, void **item);

/* Anyone: steal the oldest item. */
enum ws_steal_result ws_deque_steal(struct ws_deque *dq, void **item);

/*
 * Anyone: steal up to @max items, at most half of the items present when the
 * call began (at least one), oldest first, into @items. Returns how many were
 * stolen. Each item is taken by its own linearizable steal, so the batch is
 * not atomic as a whole: the owner or other thieves may take items between
 * two of them, and the batch stops early at the first empty or lost race.
 */
size_t ws_deque_steal_batch(struct ws_deque *dq, void **items, size_t max);

/* Anyone: number of items, exact when quiescent, a hint otherwise. */
size_t ws_deque_size(const struct ws_deque *dq);

/* Anyone: a snapshot of the counters (relaxed reads). */
void ws_deque_get_stats(const struct ws_deque *dq, struct ws_deque_stats *st);

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_DEQUE_H */
