// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * ws_relacy_deque: the Relacy model checker runs the deque algorithm of
 * userspace/lib/deque_impl.h (the very text the library compiles) under many
 * thread interleavings and C++11 memory-model behaviours, through the shim in
 * relacy_shim.hpp. Relacy reports data races, accesses to freed memory,
 * leaks and failed assertions. Prints TAP.
 *
 * Instances: the library's fenced deque and the fence-free (TSAN) variant,
 * each with (a) owner push/pop racing two thieves and (b) growth, shrink and
 * buffer reclamation racing two thieves; and (c) a mutant whose pop fence is
 * weakened to acq_rel - a known bug - which the checker must catch, so this
 * test shows it can fail; (d) a mutant that frees replaced buffers without
 * checking for thieves, and (e) one that frees them once only one of the two
 * reader counters read 0, whose use-after-free the checker must catch.
 */
#include <fstream>
#include <string>
#include <unistd.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "relacy_shim.hpp"
#include "relacy_run.hpp"

namespace fenced {
WS_RELACY_DEQUE_ALLOCATORS
#include "deque_impl.h"
WS_RELACY_DEQUE_ALLOCATORS_DEF
}

#undef WSCHED_DEQUE_IMPL_H
#define WS_NO_FENCES
namespace fencefree {
WS_RELACY_DEQUE_ALLOCATORS
#include "deque_impl.h"
WS_RELACY_DEQUE_ALLOCATORS_DEF
}
#undef WS_NO_FENCES

#undef WSCHED_DEQUE_IMPL_H
#undef WS_DQ_TAKE_FENCE
#define WS_DQ_TAKE_FENCE WS_MO_ACQREL
namespace mutant {
WS_RELACY_DEQUE_ALLOCATORS
#include "deque_impl.h"
WS_RELACY_DEQUE_ALLOCATORS_DEF
}
#undef WS_DQ_TAKE_FENCE

#undef WSCHED_DEQUE_IMPL_H
#define WS_DQ_TEST_UNSAFE_RECLAIM
namespace mutant2 {
WS_RELACY_DEQUE_ALLOCATORS
#include "deque_impl.h"
WS_RELACY_DEQUE_ALLOCATORS_DEF
}

#undef WS_DQ_TEST_UNSAFE_RECLAIM

#undef WSCHED_DEQUE_IMPL_H
#define WS_DQ_TEST_ONE_COUNTER
namespace mutant3 {
WS_RELACY_DEQUE_ALLOCATORS
#include "deque_impl.h"
WS_RELACY_DEQUE_ALLOCATORS_DEF
}
#undef WS_DQ_TEST_ONE_COUNTER

#define ITEM(i)		((void *)(uintptr_t)((i) + 1))
#define INDEX(p)	((int)((uintptr_t)(p) - 1))

enum { MAX_ITEMS = 8, NR_THREADS = 3 };

/* Owner (thread 0) pushes 2 items and pops twice; thieves steal once. */
template <class NS_dq, class Tag>
struct race_test : rl::test_suite<race_test<NS_dq, Tag>, NR_THREADS> {
	NS_dq *dq;
	int taken[NR_THREADS][MAX_ITEMS];

	void before()
	{
		dq = new NS_dq;
		memset(taken, 0, sizeof(taken));
		RL_ASSERT(Tag::init(dq, 2) == 0);
	}
	void thread(unsigned id)
	{
		void *x;

		if (id == 0) {
			Tag::push(dq, ITEM(0));
			Tag::push(dq, ITEM(1));
			for (int i = 0; i < 2; i++)
				if (Tag::pop(dq, &x))
					taken[0][INDEX(x)]++;
		} else if (Tag::steal(dq, &x) == 1) {
			taken[id][INDEX(x)]++;
		}
	}
	void after()
	{
		for (int i = 0; i < 2; i++) {
			int n = 0;
			for (int t = 0; t < NR_THREADS; t++)
				n += taken[t][i];
			RL_ASSERT(n == 1);	/* exactly once */
		}
		Tag::fini(dq);
		delete dq;
	}
};

/* Owner pushes 5 items into a 4-slot deque (grow to 8), pops until the
 * buffer shrinks back, pops the rest; two thieves steal twice each while
 * buffers are replaced and freed. */
template <class NS_dq, class Tag>
struct resize_test : rl::test_suite<resize_test<NS_dq, Tag>, NR_THREADS> {
	NS_dq *dq;
	int taken[NR_THREADS][MAX_ITEMS];

	void before()
	{
		dq = new NS_dq;
		memset(taken, 0, sizeof(taken));
		RL_ASSERT(Tag::init(dq, 4) == 0);
	}
	void thread(unsigned id)
	{
		void *x;

		if (id == 0) {
			for (int i = 0; i < 5; i++)
				RL_ASSERT(Tag::push(dq, ITEM(i)) == 0);
			while (Tag::pop(dq, &x))
				taken[0][INDEX(x)]++;
		} else {
			for (int k = 0; k < 2; k++)
				if (Tag::steal(dq, &x) == 1)
					taken[id][INDEX(x)]++;
		}
	}
	void after()
	{
		for (int i = 0; i < 5; i++) {
			int n = 0;
			for (int t = 0; t < NR_THREADS; t++)
				n += taken[t][i];
			RL_ASSERT(n == 1);
		}
		Tag::fini(dq);
		delete dq;
	}
};

/* Two threads, explored systematically (context-bound scheduler): the owner
 * fills a 4-slot deque and pushes a 5th item (growth replaces and, unless a
 * thief may still read it, frees the old buffer), then pops everything; one
 * thief steals once. A thief preempted between loading the buffer pointer and
 * reading its slot is exactly what safe reclamation must survive. */
template <class NS_dq, class Tag>
struct reclaim_test : rl::test_suite<reclaim_test<NS_dq, Tag>, 2> {
	NS_dq *dq;
	int taken[2][MAX_ITEMS];

	void before()
	{
		dq = new NS_dq;
		memset(taken, 0, sizeof(taken));
		RL_ASSERT(Tag::init(dq, 4) == 0);
		for (int i = 0; i < 4; i++)
			RL_ASSERT(Tag::push(dq, ITEM(i)) == 0);
	}
	void thread(unsigned id)
	{
		void *x;

		if (id == 0) {
			RL_ASSERT(Tag::push(dq, ITEM(4)) == 0);
			while (Tag::pop(dq, &x))
				taken[0][INDEX(x)]++;
		} else if (Tag::steal(dq, &x) == 1) {
			taken[1][INDEX(x)]++;
		}
	}
	void after()
	{
		for (int i = 0; i < 5; i++)
			RL_ASSERT(taken[0][i] + taken[1][i] == 1);
		Tag::fini(dq);
		delete dq;
	}
};

#define WS_TAG(NS)								\
	struct NS##_tag {							\
		static int init(NS::ws_deque *d, int64_t c) { return NS::ws__dq_init(d, c); } \
		static int push(NS::ws_deque *d, void *x) { return NS::ws__dq_push(d, x); } \
		static int pop(NS::ws_deque *d, void **x) { return NS::ws__dq_pop(d, x); } \
		static int steal(NS::ws_deque *d, void **x) { return NS::ws__dq_steal(d, x); } \
		static void fini(NS::ws_deque *d) { NS::ws__dq_fini(d); }	\
	};
WS_TAG(fenced)
WS_TAG(fencefree)
WS_TAG(mutant)
WS_TAG(mutant2)
WS_TAG(mutant3)

int main(void)
{
	unsigned long it = relacy_iterations();

	printf("TAP version 13\n1..9\n");
	run<race_test<fenced::ws_deque, fenced_tag> >("relacy_fenced_pop_vs_steal", it, true);
	run<resize_test<fenced::ws_deque, fenced_tag> >("relacy_fenced_grow_shrink_reclaim", it, true);
	run<race_test<fencefree::ws_deque, fencefree_tag> >("relacy_fencefree_pop_vs_steal", it, true);
	run<resize_test<fencefree::ws_deque, fencefree_tag> >("relacy_fencefree_grow_shrink_reclaim", it, true);
	run<race_test<mutant::ws_deque, mutant_tag> >("relacy_acqrel_pop_fence_is_caught_fail", it * 5, false);
	run<reclaim_test<fenced::ws_deque, fenced_tag> >("relacy_fenced_reclaim_all_2_preemption_schedules",
		it, true, rl::sched_bound, 2);
	/* The fence-free variant only runs under TSAN: every 2-preemption
	 * schedule in stress runs, 1-preemption ones otherwise. */
	run<reclaim_test<fencefree::ws_deque, fencefree_tag> >(it >= 300000UL ?
		"relacy_fencefree_reclaim_all_2_preemption_schedules" :
		"relacy_fencefree_reclaim_all_1_preemption_schedules",
		it, true, rl::sched_bound, it >= 300000UL ? 2 : 1);
	run<reclaim_test<mutant2::ws_deque, mutant2_tag> >("relacy_unsafe_reclaim_is_caught_fail",
		it, false, rl::sched_bound, 2);
	run<reclaim_test<mutant3::ws_deque, mutant3_tag> >("relacy_one_counter_reclaim_is_caught_fail",
		it, false, rl::sched_bound, 2);
	printf("# %d passed, %d failed\n", nr_test - nr_fail, nr_fail);
	return nr_fail ? 1 : 0;
}
