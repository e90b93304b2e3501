// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * ws_relacy_wdeque: the Relacy model checker runs the runtime's split deque
 * (wsched/wdeque_impl.h, the very text ws_spawn/ws_sync and the pool's
 * thieves compile) under many thread interleavings and C++11 memory-model
 * behaviours, through the shim in relacy_shim.hpp. The owner does what
 * ws_spawn, ws_sync and _ws_spawn_slow do (push, serve split requests by
 * exposing, pop private tasks, take public ones back, wait for stolen ones);
 * thieves do what the pool's steal_from and run_stolen do. Frames carry a
 * payload the owner writes before the spawn and a result whoever runs the
 * task writes, both plain (rl::var): Relacy reports a data race on either
 * if a missing order leaves them unsynchronised. Each task must run exactly
 * once and the owner must read its result. Prints TAP.
 *
 * Instances: the library's orders on (a) three spawns and syncs racing two
 * thieves that ask for work (random schedules) and (b) spawn, expose, sync,
 * then spawn into the same slots again racing one thief (every schedule with
 * up to 3 preemptions: take-back, a stolen task's wait and reset, ABA on ts);
 * and four mutants, each weakening one order of the table in
 * wdeque_impl.h to relaxed, that the checker must catch: the exposing CAS
 * (release of slots and frames), the thief's load and CAS (acquire), the
 * thief's done exchange (release of the result) and the owner's done load
 * (acquire); and a fifth whose thief reads the slot before its CAS, which
 * an owner that takes its tasks back and spawns into the same slots turns
 * into a task run twice and one never run (ABA on ts).
 */
#include <fstream>
#include <string>
#include <unistd.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "relacy_shim.hpp"
#include "relacy_run.hpp"

enum { MAX_TASKS = 4, NR_SLOTS = 8 };

/* A frame as the deque sees it (_done), plus what the test checks. */
#define WS_RELACY_WDQ_TASK						\
	struct ws_task {						\
		rl::atomic<int> _done;					\
		rl::var<int> payload;	/* owner, before the spawn */	\
		rl::var<int> result;	/* whoever runs it */		\
		int id;			/* set before the threads start */ \
	};

namespace lib {
WS_RELACY_WDQ_TASK
#include "wsched/wdeque_impl.h"
}

#undef WSCHED_WDEQUE_IMPL_H
#undef _WS_WDQ_MO_EXPOSE
#define _WS_WDQ_MO_EXPOSE _WS_WDQ_RLX
namespace m_expose {
WS_RELACY_WDQ_TASK
#include "wsched/wdeque_impl.h"
}
#undef _WS_WDQ_MO_EXPOSE

#undef WSCHED_WDEQUE_IMPL_H
#undef _WS_WDQ_MO_STEAL
#define _WS_WDQ_MO_STEAL _WS_WDQ_RLX
namespace m_steal {
WS_RELACY_WDQ_TASK
#include "wsched/wdeque_impl.h"
}
#undef _WS_WDQ_MO_STEAL

#undef WSCHED_WDEQUE_IMPL_H
#undef _WS_WDQ_MO_FINISH
#define _WS_WDQ_MO_FINISH _WS_WDQ_RLX
namespace m_finish {
WS_RELACY_WDQ_TASK
#include "wsched/wdeque_impl.h"
}
#undef _WS_WDQ_MO_FINISH

#undef WSCHED_WDEQUE_IMPL_H
#undef _WS_WDQ_MO_DONE
#define _WS_WDQ_MO_DONE _WS_WDQ_RLX
namespace m_done {
WS_RELACY_WDQ_TASK
#include "wsched/wdeque_impl.h"
}
#undef _WS_WDQ_MO_DONE

#undef WSCHED_WDEQUE_IMPL_H
#define _WS_WDQ_TEST_SLOT_BEFORE_CAS
namespace m_aba {
WS_RELACY_WDQ_TASK
#include "wsched/wdeque_impl.h"
}
#undef _WS_WDQ_TEST_SLOT_BEFORE_CAS

/* Namespaces cannot be template arguments: one struct of wrappers each. */
#define WS_WDQ_OPS(NS)								\
	struct NS##_ops {							\
		typedef NS::ws_task task;					\
		typedef NS::_ws_wdeque deque;					\
		static void push(deque *d, task *t) { NS::_ws_wdq_push(d, t); }	\
		static uint32_t req(deque *d) { return NS::_ws_wdq_req(d); }	\
		static uint32_t take_req(deque *d) { return NS::_ws_wdq_take_req(d); } \
		static uint32_t expose(deque *d) { return NS::_ws_wdq_expose(d); } \
		static int pop_private(deque *d) { return NS::_ws_wdq_pop_private(d); } \
		static int take_back(deque *d) { return NS::_ws_wdq_take_back(d); } \
		static void stolen_done(deque *d) { NS::_ws_wdq_stolen_done(d); } \
		static task *steal(deque *d) { return NS::_ws_wdq_steal(d); }	\
		static int finish(task *t) { return NS::_ws_wdq_finish(t); }	\
		static int done(task *t) { return NS::_ws_wdq_done(t); }	\
	};
WS_WDQ_OPS(lib)
WS_WDQ_OPS(m_expose)
WS_WDQ_OPS(m_steal)
WS_WDQ_OPS(m_finish)
WS_WDQ_OPS(m_done)
WS_WDQ_OPS(m_aba)

/* One deque with its slots, and the operations of the runtime on it. */
template <class NS>
struct model {
	typedef typename NS::task task;
	typename NS::deque d;
	rl::atomic<task *> slots[NR_SLOTS];
	task tasks[MAX_TASKS];
	int ran[3][MAX_TASKS];		/* per thread: runs of each task */

	void init()
	{
		d.tail = 0;
		d.split = 0;
		d.nr_tasks = 0;
		d.cap = NR_SLOTS;
		d.slot = slots;
		for (int i = 0; i < NR_SLOTS; i++)
			slots[i].store(0, rl::mo_relaxed, $);
		d.ts.store(0, rl::mo_relaxed, $);
		d.req.store(0, rl::mo_relaxed, $);
		for (int i = 0; i < MAX_TASKS; i++) {
			tasks[i]._done.store(0, rl::mo_relaxed, $);
			tasks[i].id = i;
		}
		memset(ran, 0, sizeof(ran));
	}

	void run(task *t, unsigned me)
	{
		ran[me][t->id]++;
		t->result($) = t->payload($) * 10;
	}

	/* _ws_spawn_slow without the pool's wake-ups. */
	void serve()
	{
		if (NS::req(&d) && (NS::take_req(&d) & _WS_REQ_SPLIT))
			NS::expose(&d);
	}

	/* ws_spawn. */
	void spawn(int i)
	{
		tasks[i].payload($) = 100 + i;
		NS::push(&d, &tasks[i]);
		serve();
	}

	/* ws_sync: returns the result the owner reads. */
	int sync(int i)
	{
		task *t = &tasks[i];

		if (NS::pop_private(&d)) {
			serve();
			run(t, 0);
		} else if (NS::take_back(&d)) {
			run(t, 0);
		} else {
			while (!NS::done(t))
				rl::yield(1, $);
			NS::stolen_done(&d);
		}
		return t->result($);
	}

	/* steal_from + run_stolen. */
	bool steal(unsigned me)
	{
		task *t = NS::steal(&d);

		if (!t)
			return false;
		RL_ASSERT(t->id >= 0 && t->id < MAX_TASKS);
		run(t, me);
		NS::finish(t);
		return true;
	}

	void check_once(int n)
	{
		for (int i = 0; i < n; i++) {
			int runs = 0;

			for (int th = 0; th < 3; th++)
				runs += ran[th][i];
			RL_ASSERT(runs == 1);
		}
	}
};

/* Owner spawns 3 and syncs them LIFO, serving split requests; two thieves
 * try to steal twice each (asking for work when they find none). */
template <class NS>
struct spawn_sync_test : rl::test_suite<spawn_sync_test<NS>, 3> {
	model<NS> *m;

	void before()
	{
		m = new model<NS>;
		m->init();
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			for (int i = 0; i < 3; i++)
				m->spawn(i);
			for (int i = 2; i >= 0; i--)
				RL_ASSERT(m->sync(i) == (100 + i) * 10);
		} else {
			for (int k = 0; k < 2; k++)
				if (!m->steal(id))
					rl::yield(1, $);
		}
	}
	void after()
	{
		m->check_once(3);
		delete m;
	}
};

/* Owner spawns 2, exposes both at once (as if asked), syncs them; spawns 2
 * more into the same slots, exposes, syncs. One thief steals twice. Slot
 * reuse after a take-back or a stolen task's reset, with ts returning to
 * earlier values (ABA). */
template <class NS>
struct reuse_test : rl::test_suite<reuse_test<NS>, 2> {
	model<NS> *m;

	void before()
	{
		m = new model<NS>;
		m->init();
	}
	void thread(unsigned id)
	{
		if (id == 0) {
			for (int round = 0; round < 2; round++) {
				int a = 2 * round, b = a + 1;

				m->spawn(a);
				m->spawn(b);
				NS::expose(&m->d);
				RL_ASSERT(m->sync(b) == (100 + b) * 10);
				RL_ASSERT(m->sync(a) == (100 + a) * 10);
			}
		} else {
			for (int k = 0; k < 2; k++)
				m->steal(id);
		}
	}
	void after()
	{
		m->check_once(4);
		delete m;
	}
};

int main(void)
{
	unsigned long it = relacy_iterations();

	relacy_log = "ws_relacy_wdq";
	printf("TAP version 13\n1..11\n");
	run<spawn_sync_test<lib_ops> >("relacy_wdeque_spawn_sync_vs_two_thieves", it, true);
	run<reuse_test<lib_ops> >("relacy_wdeque_slot_reuse_all_3_preemption_schedules", it, true,
			      rl::sched_bound, 3);
	run<spawn_sync_test<m_expose_ops> >("relacy_wdeque_relaxed_expose_is_caught_fail", it, false);
	run<reuse_test<m_expose_ops> >("relacy_wdeque_relaxed_expose_reuse_is_caught_fail", it, false,
				   rl::sched_bound, 2);
	run<spawn_sync_test<m_steal_ops> >("relacy_wdeque_relaxed_steal_is_caught_fail", it, false);
	run<reuse_test<m_steal_ops> >("relacy_wdeque_relaxed_steal_reuse_is_caught_fail", it, false,
				  rl::sched_bound, 2);
	run<spawn_sync_test<m_finish_ops> >("relacy_wdeque_relaxed_finish_is_caught_fail", it, false);
	run<reuse_test<m_finish_ops> >("relacy_wdeque_relaxed_finish_reuse_is_caught_fail", it, false,
				   rl::sched_bound, 2);
	run<spawn_sync_test<m_done_ops> >("relacy_wdeque_relaxed_done_is_caught_fail", it, false);
	run<reuse_test<m_done_ops> >("relacy_wdeque_relaxed_done_reuse_is_caught_fail", it, false,
				 rl::sched_bound, 2);
	/* The ABA needs three preemptions: the thief between its slot read and
	 * its CAS, and back in between the owner's second expose and sync. */
	run<reuse_test<m_aba_ops> >("relacy_wdeque_slot_read_before_cas_is_caught_fail", it, false,
				    rl::sched_bound, 3);
	printf("# %d passed, %d failed\n", nr_test - nr_fail, nr_fail);
	return nr_fail ? 1 : 0;
}
