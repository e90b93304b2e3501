// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * deque_test: behaviour of the Chase-Lev deque (wsched/deque.h), and a
 * stress run of one owner and several thieves in which every item must be
 * taken exactly once, across many growths and shrinks.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "wsched/deque.h"
#include "test_util.h"

#define ITEM(i)		((void *)(uintptr_t)((i) + 1))
#define INDEX(p)	((uint64_t)(uintptr_t)(p) - 1)

/* Owner pops return the items in LIFO order, across a growth. */
TEST(pop_is_lifo_across_growth)
{
	struct ws_deque *dq = ws_deque_create(16);
	struct ws_deque_stats st;
	void *x;
	int i;

	ASSERT_NE(NULL, dq);
	for (i = 0; i < 1000; i++)
		ASSERT_EQ(0, ws_deque_push(dq, ITEM(i)));
	ASSERT_EQ(1000, ws_deque_size(dq));
	ws_deque_get_stats(dq, &st);
	EXPECT_GE(st.nr_grows, 6);	/* 16 -> 1024 */
	for (i = 999; i >= 0; i--) {
		ASSERT_TRUE(ws_deque_pop(dq, &x));
		ASSERT_EQ(i, INDEX(x));
	}
	ASSERT_FALSE(ws_deque_pop(dq, &x));
	ASSERT_EQ(0, ws_deque_size(dq));
	ws_deque_destroy(dq);
}

/* Steals return the oldest item first; an empty deque says so. */
TEST(steal_is_fifo)
{
	struct ws_deque *dq = ws_deque_create(0);
	void *x;
	int i;

	ASSERT_NE(NULL, dq);
	ASSERT_EQ(WS_STEAL_EMPTY, ws_deque_steal(dq, &x));
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, ws_deque_push(dq, ITEM(i)));
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(WS_STEAL_OK, ws_deque_steal(dq, &x));
		ASSERT_EQ(i, INDEX(x));
	}
	ASSERT_EQ(WS_STEAL_EMPTY, ws_deque_steal(dq, &x));
	ASSERT_FALSE(ws_deque_pop(dq, &x));
	ws_deque_destroy(dq);
}

/* Pop and steal meet in the middle without losing or repeating an item. */
TEST(pop_and_steal_meet)
{
	struct ws_deque *dq = ws_deque_create(16);
	void *x;
	int i;

	ASSERT_NE(NULL, dq);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, ws_deque_push(dq, ITEM(i)));
	ASSERT_EQ(WS_STEAL_OK, ws_deque_steal(dq, &x));
	ASSERT_EQ(0, INDEX(x));
	ASSERT_TRUE(ws_deque_pop(dq, &x));
	ASSERT_EQ(2, INDEX(x));
	ASSERT_TRUE(ws_deque_pop(dq, &x));	/* the last item: CAS path */
	ASSERT_EQ(1, INDEX(x));
	ASSERT_EQ(WS_STEAL_EMPTY, ws_deque_steal(dq, &x));
	ASSERT_FALSE(ws_deque_pop(dq, &x));
	/* Indices keep going after an empty pop: reuse works. */
	ASSERT_EQ(0, ws_deque_push(dq, ITEM(7)));
	ASSERT_EQ(WS_STEAL_OK, ws_deque_steal(dq, &x));
	ASSERT_EQ(7, INDEX(x));
	ws_deque_destroy(dq);
}

/* After a burst the buffer halves back to its initial size, and every
 * replaced buffer is freed once the deque is quiet. */
TEST(shrinks_after_burst_and_frees_old_buffers)
{
	struct ws_deque *dq = ws_deque_create(64);
	struct ws_deque_stats st;
	void *x;
	int i;

	ASSERT_NE(NULL, dq);
	for (i = 0; i < 100000; i++)
		ASSERT_EQ(0, ws_deque_push(dq, ITEM(i)));
	ws_deque_get_stats(dq, &st);
	ASSERT_EQ(131072, st.capacity);
	for (i = 99999; i >= 0; i--) {
		ASSERT_TRUE(ws_deque_pop(dq, &x));
		ASSERT_EQ(i, INDEX(x));
	}
	ASSERT_FALSE(ws_deque_pop(dq, &x));	/* empty pop reclaims */
	ws_deque_get_stats(dq, &st);
	EXPECT_EQ(64, st.capacity);
	EXPECT_EQ(11, st.nr_grows);
	EXPECT_EQ(11, st.nr_shrinks);
	EXPECT_EQ(st.nr_retired, st.nr_freed);
	ws_deque_destroy(dq);
}

/* A batch steal takes half of what is there, oldest first. */
TEST(batch_steal_takes_half)
{
	struct ws_deque *dq = ws_deque_create(16);
	void *items[256];
	size_t n, i;

	ASSERT_NE(NULL, dq);
	ASSERT_EQ(0, ws_deque_steal_batch(dq, items, 256));
	for (i = 0; i < 100; i++)
		ASSERT_EQ(0, ws_deque_push(dq, ITEM(i)));
	n = ws_deque_steal_batch(dq, items, 256);
	ASSERT_EQ(50, n);
	for (i = 0; i < n; i++)
		ASSERT_EQ(i, INDEX(items[i]));
	n = ws_deque_steal_batch(dq, items, 10);	/* capped by max */
	ASSERT_EQ(10, n);
	ASSERT_EQ(50, INDEX(items[0]));
	ASSERT_EQ(40, ws_deque_size(dq));
	ASSERT_EQ(0, ws_deque_push(dq, ITEM(1000)));
	n = ws_deque_steal_batch(dq, items, 1);
	ASSERT_EQ(1, n);
	ws_deque_destroy(dq);
}

TEST(create_rejects_huge_capacity)
{
	errno = 0;
	ASSERT_EQ(NULL, ws_deque_create((size_t)1 << 50));
	ASSERT_EQ(EINVAL, errno);
}

/* ------------------------------------------------------------ stress */

struct stress {
	struct ws_deque *dq;
	uint64_t nr_items;
	_Atomic uint8_t *taken;		/* per item: how many times taken */
	_Atomic uint64_t sum, xsum, nr_taken, nr_dup;
	_Atomic int done;
};

static void stress_take(struct stress *s, void *x)
{
	uint64_t i = INDEX(x);

	if (i >= s->nr_items || atomic_fetch_add_explicit(&s->taken[i], 1, memory_order_relaxed))
		atomic_fetch_add_explicit(&s->nr_dup, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->sum, i, memory_order_relaxed);
	atomic_fetch_xor_explicit(&s->xsum, i * 0x9e3779b97f4a7c15ull, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->nr_taken, 1, memory_order_relaxed);
}

static void *stress_thief(void *arg)
{
	struct stress *s = arg;
	void *batch[8];
	unsigned k = 0;

	for (;;) {
		int done = atomic_load_explicit(&s->done, memory_order_acquire);
		void *x;

		if (++k % 4 == 0) {
			size_t n = ws_deque_steal_batch(s->dq, batch, 8), i;

			for (i = 0; i < n; i++)
				stress_take(s, batch[i]);
			if (n)
				continue;
		} else if (ws_deque_steal(s->dq, &x) == WS_STEAL_OK) {
			stress_take(s, x);
			continue;
		}
		if (done && ws_deque_size(s->dq) == 0)
			break;
	}
	return NULL;
}

/* 1 owner + 3 thieves; >= 10M push/pop/steal operations at full scale; the
 * owner pushes in bursts of up to 32K (growth) then pops most of them back
 * (shrink). Every item must be taken exactly once. */
TEST(stress_owner_and_thieves_exactly_once)
{
	enum { NR_THIEVES = 3 };
	struct stress s = { 0 };
	pthread_t th[NR_THIEVES];
	struct ws_deque_stats st;
	uint64_t next = 0, seed = 42, want_sum = 0, want_xsum = 0, i;
	void *x;

	s.nr_items = (uint64_t)wt_test_scaled(5500000);
	s.taken = calloc(s.nr_items, 1);
	ASSERT_NE(NULL, s.taken);
	s.dq = ws_deque_create(64);
	ASSERT_NE(NULL, s.dq);
	for (i = 0; i < NR_THIEVES; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, stress_thief, &s));

	while (next < s.nr_items) {
		uint64_t r = wt_test_rand(&seed);
		uint64_t burst = (r & 7) == 0 ? 1 + (r >> 8) % 32768 : 1 + (r >> 8) % 64;
		uint64_t keep = (r >> 40) % 4;	/* items left for thieves */

		for (i = 0; i < burst && next < s.nr_items; i++, next++)
			ASSERT_EQ(0, ws_deque_push(s.dq, ITEM(next)));
		while (ws_deque_size(s.dq) > keep && ws_deque_pop(s.dq, &x))
			stress_take(&s, x);
	}
	while (ws_deque_pop(s.dq, &x))
		stress_take(&s, x);
	atomic_store_explicit(&s.done, 1, memory_order_release);
	for (i = 0; i < NR_THIEVES; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));

	for (i = 0; i < s.nr_items; i++) {
		want_sum += i;
		want_xsum ^= i * 0x9e3779b97f4a7c15ull;
	}
	ws_deque_get_stats(s.dq, &st);
	TH_LOG("items %llu, grows %llu, shrinks %llu, retired %llu, freed %llu",
	       (unsigned long long)s.nr_items, (unsigned long long)st.nr_grows,
	       (unsigned long long)st.nr_shrinks, (unsigned long long)st.nr_retired,
	       (unsigned long long)st.nr_freed);
	EXPECT_EQ(0, atomic_load(&s.nr_dup));
	EXPECT_EQ(s.nr_items, atomic_load(&s.nr_taken));
	EXPECT_EQ(want_sum, atomic_load(&s.sum));
	EXPECT_EQ(want_xsum, atomic_load(&s.xsum));
	for (i = 0; i < s.nr_items; i++)
		if (atomic_load_explicit(&s.taken[i], memory_order_relaxed) != 1)
			break;
	EXPECT_EQ(s.nr_items, i);
	EXPECT_GT(st.nr_grows, 0);
	EXPECT_GT(st.nr_shrinks, 0);
	ws_deque_destroy(s.dq);
	free(s.taken);
}

/* ------------------------------------------------------------ reclamation */

struct steady {
	struct ws_deque *dq;
	_Atomic uint64_t nr_taken;
	_Atomic int done;
};

static void *steady_thief(void *arg)
{
	struct steady *s = arg;
	void *x;

	while (!atomic_load_explicit(&s->done, memory_order_acquire))
		if (ws_deque_steal(s->dq, &x) == WS_STEAL_OK)
			atomic_fetch_add_explicit(&s->nr_taken, 1, memory_order_relaxed);
	return NULL;
}

/*
 * Three thieves steal without pause while the owner pushes 200 items into a
 * 16-slot deque and pops it empty, again and again: every cycle grows the
 * buffer to 256 and shrinks it back. Replaced buffers waiting to be freed
 * (retired - freed) must never exceed the documented bound (deque.h: 4 from
 * shrinking, plus one per doubling, here 16 -> 256: 4), however often a
 * thief is inside a steal; reclamation must keep up (at least half as many
 * shrinks as growths: the bound does not just stop shrinking);
 * and once the thieves are gone one empty pop frees them all.
 */
TEST(retired_buffers_stay_bounded_under_constant_stealing)
{
	enum { NR_THIEVES = 3, BOUND = 4 + 4 };
	struct steady s = { 0 };
	pthread_t th[NR_THIEVES];
	struct ws_deque_stats st;
	uint64_t cycles = (uint64_t)wt_test_scaled(20000), c, max_pending = 0, pushed = 0, popped = 0;
	int i;
	void *x;

	s.dq = ws_deque_create(16);
	ASSERT_NE(NULL, s.dq);
	for (i = 0; i < NR_THIEVES; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, steady_thief, &s));
	for (c = 0; c < cycles; c++) {
		for (i = 0; i < 200; i++) {
			ASSERT_EQ(0, ws_deque_push(s.dq, ITEM(pushed)));
			pushed++;
			ws_deque_get_stats(s.dq, &st);
			if (st.nr_retired - st.nr_freed > max_pending)
				max_pending = st.nr_retired - st.nr_freed;
		}
		while (ws_deque_pop(s.dq, &x)) {
			popped++;
			ws_deque_get_stats(s.dq, &st);
			if (st.nr_retired - st.nr_freed > max_pending)
				max_pending = st.nr_retired - st.nr_freed;
		}
	}
	atomic_store_explicit(&s.done, 1, memory_order_release);
	for (i = 0; i < NR_THIEVES; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	ws_deque_get_stats(s.dq, &st);
	TH_LOG("cycles %llu: grows %llu shrinks %llu retired %llu freed %llu, at most %llu waiting",
	       (unsigned long long)cycles, (unsigned long long)st.nr_grows,
	       (unsigned long long)st.nr_shrinks, (unsigned long long)st.nr_retired,
	       (unsigned long long)st.nr_freed, (unsigned long long)max_pending);
	EXPECT_LE(max_pending, BOUND);
	EXPECT_EQ(pushed, popped + atomic_load(&s.nr_taken));
	EXPECT_GT(st.nr_grows, 0);
	EXPECT_GE(2 * st.nr_shrinks, st.nr_grows);	/* most growths shrink back */
	EXPECT_FALSE(ws_deque_pop(s.dq, &x));		/* quiet now: frees the rest */
	ws_deque_get_stats(s.dq, &st);
	EXPECT_EQ(st.nr_retired, st.nr_freed);
	ws_deque_destroy(s.dq);
}

TEST_HARNESS_MAIN
