// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * The Chase-Lev work-stealing deque, written once against the atomics shim
 * (ws_ld/ws_st/ws_cas/ws_fence, WS_ATOMIC) so that deque.c compiles it as C11
 * and tests/relacy_deque.cpp compiles the very same text under the Relacy
 * model checker. The includer provides:
 *   struct ws_deque_buf *ws__buf_alloc(int64_t cap)   slots zeroed, or NULL
 *   void ws__buf_free(struct ws_deque_buf *)
 * Internal: names starting with ws__ are not API.
 *
 * Correctness argument (the essay; the code comments only name the pairs).
 *
 * Indices top (t) and bottom (b) are signed 64-bit and only ever compared as
 * differences, so "empty" is t >= b even transiently when pop has made b one
 * less than t; unsigned indices underflow there (a known bug of naive ports).
 * Slot i lives at buf->slot[i & (cap - 1)]. Items [t, b) are present.
 *
 * Orders, following Le, Pop, Cohen & Zappa Nardelli (PPoPP 2013), which
 * proves exactly this assignment correct for the C11 model:
 * - push: the slot store is relaxed, then a release fence, then the relaxed
 *   store of bottom. A thief that reads the new bottom with its acquire load
 *   therefore sees the slot (and the buffer pointer, if push just grew).
 * - push reads top with acquire: it pairs with the thieves' CAS on top, so
 *   a slot is overwritten (after a wrap) only after the thief that took its
 *   previous item has read it.
 * - pop (take) stores bottom = b-1, then a seq_cst fence, then reads top.
 *   This store-load ordering is the heart of the algorithm: together with the
 *   seq_cst fence in steal, either pop sees a thief's increment of top or the
 *   thief sees the reduced bottom; never neither, so an item is never taken
 *   twice. Weakening this fence to acq_rel is a known bug (it allows exactly
 *   that double take).
 *   Pop reads slot b before that fence: slots are written only by the owner
 *   (push, resize), so the value is the same on either side of it, and the
 *   item is used only if the checks after the fence say it is ours.
 * - the last item (t == b after the decrement) is raced for with a seq_cst
 *   CAS on top by both pop and steal; the loser backs off.
 * - steal reads top with acquire, fences seq_cst, reads bottom with acquire,
 *   then reads the slot (relaxed: the slot is atomic, because pop/push may
 *   write it concurrently when the thief's t is stale; a non-atomic slot would
 *   be a data race) and claims it with a seq_cst CAS on top. The item is only
 *   used if the CAS succeeds.
 *
 * Growth: when full, push allocates a buffer twice as big, copies [t, b),
 * publishes it, and - a known bug otherwise - uses the NEW buffer for its own
 * store. Shrink: when pop leaves the deque at most 1/8 full and the buffer is
 * above the initial capacity, the owner copies [t, b) into a buffer half as
 * big. Old buffers are never written after being replaced, and item i sits
 * at the same logical index in both, so a thief that read the old pointer
 * still reads the right item for index t. Nonetheless steal re-reads the
 * buffer pointer after reading the slot and retries if it changed: this is
 * the fix of crossbeam's CVE-2021-32810 (a steal that raced a resize returned
 * a stale item), kept as defence in depth.
 *
 * Reclamation: two reader counts, so that thieves arriving all the time
 * cannot keep a replaced buffer alive. A thief that found the deque
 * non-empty picks readers[e & 1] by the epoch e it reads (relaxed: either
 * counter is safe, the epoch only steers new thieves away from the counter
 * the owner waits on), increments it (seq_cst) before it loads the buffer
 * pointer (seq_cst), and leaves with a release decrement after its last
 * access to the buffer.
 *
 * Rule: the owner frees a replaced buffer only after it has read each of the
 * two counters as 0 (seq_cst loads), both reads after the seq_cst store that
 * replaced the buffer. Why that suffices: a thief that can read buffer Y
 * loaded the pointer before Y was replaced, so in the single total order S of
 * seq_cst operations its increment < its pointer load < the replacing store
 * < both of the owner's loads. A seq_cst load that follows an RMW in S reads
 * that RMW or a later one of the same counter; reading 0 then means the
 * thief's decrement is also before it, and the decrement (release) is read by
 * the load through the counter's chain of RMWs, so the thief's accesses
 * happen before the free. A thief whose increment follows such a load in S
 * loads the pointer after the replacing store and gets a newer buffer.
 *
 * How: the owner keeps retired (replaced since the epoch was last stored)
 * and retired_old. Reclaim, at epoch E, loads readers[(E - 1) & 1], the
 * counter new thieves no longer pick. If it reads 0, retired_old is freed:
 * its buffers were in retired when the owner read readers[E & 1] as 0 just
 * before storing E. Then retired becomes retired_old, the owner stores E + 1
 * (relaxed: it only steers, safety rests on the counters) and loops: the counter it reads next, readers[E & 1], now only
 * drains (new thieves pick the other one, apart from a few that read the
 * epoch just before the store). A thief is inside a steal for a few dozen
 * instructions, so under constant stealing the lists empty within a few
 * reclaims. Reclaim runs after every resize and every pop that finds the
 * deque empty; destroy frees whatever is left. Thieves that find the deque
 * empty never touch the counters, so idle polling writes nothing.
 *
 * Bound: a thief preempted inside a steal holds its epoch's counter up for
 * as long as it is off the CPU, and nothing can be freed that it might read.
 * So the owner does not shrink while WS_DQ_MAX_PENDING or more replaced
 * buffers wait (shrinking is optional; the deque keeps its bigger buffer).
 * Growth cannot be refused, but without shrinks the capacity only rises, so
 * it adds at most one buffer per doubling up to the largest capacity reached,
 * each half the size of the next: together less than the live buffer. At any
 * time at most WS_DQ_MAX_PENDING + log2(largest capacity / initial capacity)
 * replaced buffers wait.
 *
 * Batch steal is a loop of ordinary steals bounded by half of the size seen
 * at the start: a one-CAS batch (top += n) would race with pop, which takes
 * any item above top without a CAS.
 *
 * WS_NO_FENCES (the ThreadSanitizer variant): push stores bottom with
 * release instead of fence+relaxed; pop stores bottom and reads top with
 * seq_cst operations; steal reads top and bottom with seq_cst operations.
 * With every access of the store-buffering pattern (bottom, top) in S, the
 * argument above holds without fences.
 */
#ifndef WSCHED_DEQUE_IMPL_H
#define WSCHED_DEQUE_IMPL_H

/* Test hook: the Relacy test instantiates the deque a second time with this
 * fence weakened to acq_rel and checks that the model checker finds the
 * double take. Never change it in the library. */
#ifndef WS_DQ_TAKE_FENCE
#define WS_DQ_TAKE_FENCE WS_MO_SC
#endif

/* Slow paths kept out of line (not "cold": gcc then moves the fast path's
 * epilogue into the cold section too). */
#ifndef WS_DQ_COLD
#define WS_DQ_COLD	__attribute__((noinline))
#endif
/* What push returns when it cannot grow (deque.c: -ENOMEM). */
#ifndef WS_DQ_NOMEM
#define WS_DQ_NOMEM	(-1)
#endif

#define WS_DQ_MIN_CAP	16
#define WS_DQ_MAX_CAP	((int64_t)1 << 40)
/* Replaced buffers that may wait before the owner stops shrinking. */
#ifndef WS_DQ_MAX_PENDING
#define WS_DQ_MAX_PENDING	4
#endif

struct ws_deque_buf {
	int64_t cap;			/* power of two */
	struct ws_deque_buf *next;	/* retired list, owner only */
	WS_ATOMIC(void *) *slot;
};

struct ws_deque {
	/* Thieves' line: CAS on top, readers announce (by epoch parity). */
	WS_CACHE_ALIGNED WS_ATOMIC(int64_t) top;
	WS_ATOMIC(uint64_t) readers[2];
	/* Owner's line, read by thieves. */
	WS_CACHE_ALIGNED WS_ATOMIC(int64_t) bottom;
	WS_ATOMIC(struct ws_deque_buf *) buf;
	WS_ATOMIC(uint64_t) epoch;
	/* Owner only (counters are atomics so that stats may read them). */
	WS_CACHE_ALIGNED struct ws_deque_buf *retired;	/* this epoch */
	struct ws_deque_buf *retired_old;		/* the previous one */
	int64_t min_cap;
	WS_ATOMIC(uint64_t) nr_grows;
	WS_ATOMIC(uint64_t) nr_shrinks;
	WS_ATOMIC(uint64_t) nr_retired;
	WS_ATOMIC(uint64_t) nr_freed;
	WS_ATOMIC(int64_t) cur_cap;	/* for stats: thieves must not read buf->cap */
};

static inline void ws__dq_count(WS_ATOMIC(uint64_t) *c)
{
	/* Single writer (the owner): load+store, not an RMW. */
	ws_st(c, ws_ld(c, WS_MO_RLX) + 1, WS_MO_RLX);
}

static inline void *ws__dq_slot_ld(struct ws_deque_buf *a, int64_t i)
{
	return ws_ld(&a->slot[i & (a->cap - 1)], WS_MO_RLX);
}

static inline void ws__dq_slot_st(struct ws_deque_buf *a, int64_t i, void *x)
{
	ws_st(&a->slot[i & (a->cap - 1)], x, WS_MO_RLX);
}

static int ws__dq_init(struct ws_deque *dq, int64_t min_cap)
{
	struct ws_deque_buf *a = ws__buf_alloc(min_cap);

	if (!a)
		return -1;
	ws_init(&dq->top, 0);
	ws_init(&dq->readers[0], 0);
	ws_init(&dq->readers[1], 0);
	ws_init(&dq->bottom, 0);
	ws_init(&dq->buf, a);
	ws_init(&dq->epoch, 0);
	dq->retired = NULL;
	dq->retired_old = NULL;
	dq->min_cap = min_cap;
	ws_init(&dq->nr_grows, 0);
	ws_init(&dq->nr_shrinks, 0);
	ws_init(&dq->nr_retired, 0);
	ws_init(&dq->nr_freed, 0);
	ws_init(&dq->cur_cap, min_cap);
	return 0;
}

/* Owner: replaced buffers waiting to be freed. */
static inline uint64_t ws__dq_pending(struct ws_deque *dq)
{
	/* The owner is the only writer of both: relaxed loads are exact. */
	return ws_ld(&dq->nr_retired, WS_MO_RLX) - ws_ld(&dq->nr_freed, WS_MO_RLX);
}

/* Owner: free what no thief can reach any more, moving to the next epoch
 * while that frees something (see the essay). */
static WS_DQ_COLD void ws__dq_reclaim(struct ws_deque *dq)
{
	struct ws_deque_buf *a, *next;

	while (dq->retired || dq->retired_old) {
		uint64_t e = ws_ld(&dq->epoch, WS_MO_RLX);	/* owner wrote it */

		/* seq_cst: after the stores that replaced the buffers of both
		 * lists, so it sees the increment of any thief that may read
		 * them; acquires their release decrements (see the essay). The
		 * test hook lets the Relacy test check that it catches the bug
		 * of freeing without looking. */
#ifndef WS_DQ_TEST_UNSAFE_RECLAIM
		if (ws_ld(&dq->readers[(e - 1) & 1], WS_MO_SC) != 0)
			return;
#endif
#ifdef WS_DQ_TEST_ONE_COUNTER
		/* Test hook: the bug of freeing what only one counter cleared
		 * (the Relacy test checks that it catches it). */
		while (dq->retired) {
			a = dq->retired;
			dq->retired = a->next;
			a->next = dq->retired_old;
			dq->retired_old = a;
		}
#endif
		for (a = dq->retired_old; a; a = next) {
			next = a->next;
			ws__buf_free(a);
			ws__dq_count(&dq->nr_freed);
		}
		dq->retired_old = dq->retired;
		dq->retired = NULL;
		/* relaxed: steers new thieves to readers[(e + 1) & 1], so that
		 * readers[e & 1] drains; safety rests on the counters. */
		if (dq->retired_old)
			ws_st(&dq->epoch, e + 1, WS_MO_RLX);
	}
}

/* Owner: replace buffer @a by one of @cap slots holding [t, b). */
static struct ws_deque_buf *ws__dq_resize(struct ws_deque *dq, struct ws_deque_buf *a,
					  int64_t t, int64_t b, int64_t cap)
{
	struct ws_deque_buf *n = ws__buf_alloc(cap);
	int64_t i;

	if (!n)
		return NULL;
	for (i = t; i < b; i++)
		ws__dq_slot_st(n, i, ws__dq_slot_ld(a, i));
	/* seq_cst: releases the copied slots to thieves' buffer loads, and is the
	 * store side of the reclamation handshake (pairs with the thieves'
	 * readers increment + seq_cst buffer load). */
	ws_st(&dq->buf, n, WS_MO_SC);
	ws_st(&dq->cur_cap, cap, WS_MO_RLX);
	a->next = dq->retired;
	dq->retired = a;
	ws__dq_count(&dq->nr_retired);
	ws__dq_reclaim(dq);
	return n;
}

/* Owner: the end of push, once slot b is known to be free in @a. */
static inline void ws__dq_publish(struct ws_deque *dq, struct ws_deque_buf *a, int64_t b, void *x)
{
	ws__dq_slot_st(a, b, x);
#ifndef WS_NO_FENCES
	/* release fence: orders the slot store before the bottom store; pairs
	 * with the thieves' acquire load of bottom. */
	ws_fence(WS_MO_REL);
	ws_st(&dq->bottom, b + 1, WS_MO_RLX);
#else
	/* release: the same pairing, as an operation. */
	ws_st(&dq->bottom, b + 1, WS_MO_REL);
#endif
}

/* Owner: push into a full buffer. Out of line, so that push's fast path
 * calls nothing and needs no stack frame (saved registers are stores that
 * the next pop's fence would wait for). */
static WS_DQ_COLD int ws__dq_push_grow(struct ws_deque *dq, struct ws_deque_buf *a,
				       int64_t t, int64_t b, void *x)
{
	if (a->cap >= WS_DQ_MAX_CAP)
		return WS_DQ_NOMEM;
	a = ws__dq_resize(dq, a, t, b, a->cap * 2);	/* use the NEW buffer */
	if (!a)
		return WS_DQ_NOMEM;
	ws__dq_count(&dq->nr_grows);
	ws__dq_publish(dq, a, b, x);
	return 0;
}

static int ws__dq_push(struct ws_deque *dq, void *x)
{
	int64_t b = ws_ld(&dq->bottom, WS_MO_RLX);
	/* acquire: pairs with the thieves' CAS on top, so a slot is reused only
	 * after the thief that took its previous item has read it. */
	int64_t t = ws_ld(&dq->top, WS_MO_ACQ);
	struct ws_deque_buf *a = ws_ld(&dq->buf, WS_MO_RLX);	/* owner wrote it */

	if (ws_unlikely(b - t >= a->cap))
		return ws__dq_push_grow(dq, a, t, b, x);
	ws__dq_publish(dq, a, b, x);
	return 0;
}

/* Owner: after a burst, halve the buffer, unless too many replaced buffers
 * wait for a slow thief (the bound in the essay); the new buffer, or NULL.
 * Failure to allocate just keeps the old one. Out of line, like
 * ws__dq_push_grow: pop's fast path then keeps few values live and saves
 * few registers before its fence. */
static WS_DQ_COLD struct ws_deque_buf *ws__dq_pop_shrink(struct ws_deque *dq,
							   struct ws_deque_buf *a,
							   int64_t t, int64_t b)
{
	if (ws__dq_pending(dq) >= WS_DQ_MAX_PENDING)
		ws__dq_reclaim(dq);
	if (ws__dq_pending(dq) >= WS_DQ_MAX_PENDING)
		return NULL;
	return ws__dq_resize(dq, a, t, b, a->cap / 2);
}

static int ws__dq_pop(struct ws_deque *dq, void **out)
{
	int64_t b = ws_ld(&dq->bottom, WS_MO_RLX) - 1;
	struct ws_deque_buf *a = ws_ld(&dq->buf, WS_MO_RLX);	/* owner wrote it */
	int64_t cap = a->cap, min_cap = dq->min_cap, t;
	/* Read before the fence: only the owner writes slots (push and resize),
	 * so slot b holds the same value before and after it, and the load
	 * leaves the path that waits for the fence. Unused when empty. */
	void *x = ws__dq_slot_ld(a, b);

#ifndef WS_NO_FENCES
	ws_st(&dq->bottom, b, WS_MO_RLX);
	/* seq_cst fence: store(bottom) -> load(top) must not be reordered;
	 * pairs with the seq_cst fence in steal. acq_rel here is a known bug. */
	ws_fence(WS_DQ_TAKE_FENCE);
	t = ws_ld(&dq->top, WS_MO_RLX);
#else
	/* seq_cst store and load: the same store-load order, both in S. */
	ws_st(&dq->bottom, b, WS_MO_SC);
	t = ws_ld(&dq->top, WS_MO_SC);
#endif
	if (t > b) {
		/* Empty: undo, and use the quiet moment to reclaim. */
		ws_st(&dq->bottom, b + 1, WS_MO_RLX);
		ws__dq_reclaim(dq);
		return 0;
	}
	if (t == b) {
		/* Last item: race the thieves. seq_cst as in Le et al.; a failed
		 * CAS only needs to know it failed. */
		int won = ws_cas(&dq->top, &t, t + 1, WS_MO_SC, WS_MO_RLX);

		ws_st(&dq->bottom, b + 1, WS_MO_RLX);
		if (!won)
			return 0;
	} else if (ws_unlikely(cap > min_cap && (b - t) <= cap / 8)) {
		/* Counted here, not in the callee: dq then stays live across
		 * the call, and gcc gives pop the frame whose (%rsp), where its
		 * fence's locked instruction lands, lies away from the registers
		 * pop just pushed; with the smaller frame push+pop is slower. */
		if (ws__dq_pop_shrink(dq, a, t, b))
			ws__dq_count(&dq->nr_shrinks);
	}
	*out = x;
	return 1;
}

/* Returns WS_STEAL_{EMPTY,OK,RETRY} as 0, 1, 2. */
static int ws__dq_steal(struct ws_deque *dq, void **out)
{
	struct ws_deque_buf *a;
	int64_t t, b;
	uint64_t e;
	void *x;
	int won;

#ifndef WS_NO_FENCES
	/* acquire: pairs with the CAS of the thief or pop that last moved top. */
	t = ws_ld(&dq->top, WS_MO_ACQ);
	/* seq_cst fence: load(top) -> load(bottom) in S; pairs with pop's. */
	ws_fence(WS_MO_SC);
	/* acquire: pairs with push's release fence (slot and buffer visible). */
	b = ws_ld(&dq->bottom, WS_MO_ACQ);
#else
	t = ws_ld(&dq->top, WS_MO_SC);
	b = ws_ld(&dq->bottom, WS_MO_SC);
#endif
	if (t >= b)
		return 0;
	/* relaxed: either counter is safe; the epoch only steers us away from
	 * the one the owner waits on (see the essay). */
	e = ws_ld(&dq->epoch, WS_MO_RLX);
	/* seq_cst: announce before loading the buffer (reclamation handshake). */
	ws_fadd(&dq->readers[e & 1], 1, WS_MO_SC);
	/* seq_cst: must come after the announce in S; also an acquire of the
	 * copied slots (pairs with the seq_cst store in resize). */
	a = ws_ld(&dq->buf, WS_MO_SC);
	x = ws__dq_slot_ld(a, t);
	/* acquire: re-check the buffer before claiming (CVE-2021-32810). */
	if (ws_ld(&dq->buf, WS_MO_ACQ) != a) {
		ws_fsub(&dq->readers[e & 1], 1, WS_MO_REL);
		return 2;
	}
	/* seq_cst: claims index t against pop and other thieves. */
	won = ws_cas(&dq->top, &t, t + 1, WS_MO_SC, WS_MO_RLX);
	/* release: our reads of the buffer happen before a reclaim that reads
	 * this decrement (pairs with the seq_cst load in ws__dq_reclaim). */
	ws_fsub(&dq->readers[e & 1], 1, WS_MO_REL);
	if (!won)
		return 2;
	*out = x;
	return 1;
}

static int64_t ws__dq_size(struct ws_deque *dq)
{
	int64_t b = ws_ld(&dq->bottom, WS_MO_RLX);
	int64_t t = ws_ld(&dq->top, WS_MO_RLX);

	return b > t ? b - t : 0;
}

/* Owner, no concurrent thieves: free everything but the struct itself. */
static void ws__dq_fini(struct ws_deque *dq)
{
	struct ws_deque_buf *a, *next;

	for (a = dq->retired; a; a = next) {
		next = a->next;
		ws__buf_free(a);
	}
	for (a = dq->retired_old; a; a = next) {
		next = a->next;
		ws__buf_free(a);
	}
	dq->retired = NULL;
	dq->retired_old = NULL;
	ws__buf_free(ws_ld(&dq->buf, WS_MO_RLX));
}

#endif /* WSCHED_DEQUE_IMPL_H */
