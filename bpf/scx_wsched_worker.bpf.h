/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched thieves and workers, for registered processes
 * (Documentation/abi.md): a THIEF (a pool thread looking for work) gets
 * thief_slice() and is charged WS_THIEF_CHARGE x its run (thief
 * demotion, thief_charge()); a queued WORKER (one that may hold work its
 * thieves wait for) gets the next idle CPU, or a CPU running a THIEF of
 * its own process (prefer_worker() when it is queued, with
 * dispatch_worker_target() at that CPU's dispatch, and
 * dispatch_queued_worker() when a thief's slice ends). A process trades
 * only its own thieves for its own workers. The hint fragment answers
 * every question about a slot (a thread's state, whether it is a thief
 * outside any section), and says nothing when only observing; this file
 * reads no slot.
 */
#ifndef __SCX_WSCHED_WORKER_BPF_H
#define __SCX_WSCHED_WORKER_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_hint.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_steal.bpf.h"
#include "scx_wsched_tunables.bpf.h"
#include "scx_wsched_yield.bpf.h"

/*
 * Thief demotion: a registered thread whose slot says THIEF is charged
 * WS_THIEF_CHARGE times its run time in vtime (ops.stopping) and gets a
 * short slice (thief_slice()): it runs after the tasks waiting with it,
 * among them its own process's workers that hold work, and gives the CPU
 * back soon. A thread that lies (says WORKER while it spins) is only
 * treated like any task: the state can cost a process CPU, never gain it
 * any.
 */
#define WS_THIEF_CHARGE	4

/* The vtime charge of a run of @ran ns; @thief: wsched_hint_stopping()
 * said the task is a thief to demote. */
static __always_inline u64 thief_charge(u64 ran, bool thief)
{
	if (!thief)
		return ran;
	STAT_INC(nr_thief_demotions);
	return ran * WS_THIEF_CHARGE;
}

/*
 * The slice of a thread that says THIEF: short, so that it gives the CPU
 * back soon to the workers it is looking for; 1/32 of the base slice,
 * within [WSCHED_SLICE_US_MIN, min_slice()]. A worker may displace it after
 * that long (prefer_worker()). Not --slice-min-us itself: that is what a
 * crowded CPU's ordinary tasks keep, tuned for throughput.
 */
static __always_inline u64 thief_slice(void)
{
	u64 s = slice_ns / 32;

	if (s > min_slice())
		s = min_slice();
	return s > WSCHED_SLICE_US_MIN * 1000ULL ? s : WSCHED_SLICE_US_MIN * 1000ULL;
}

/* The slice a task starts a run with, queued or kept: @state is its hint. */
static __always_inline u64 run_slice(u32 state)
{
	return state == WS_HINT_THIEF ? thief_slice() : slice_ns;
}

/*
 * Worker preference: @p, a registered thread whose slot says WORKER (it
 * runs a task of its pool and may hold work its thieves wait for), was just
 * queued on @cpu's deque rather than run. The next free CPU should be its:
 * an idle CPU it may run on is woken to steal it; failing that, a CPU
 * running an idle thief of @p's own process (THIEF, outside any critical
 * section) is preempted and its next dispatch runs @p.
 *
 * Only @p's own process's threads are displaced: a process trades its own
 * thieves for its own workers and takes nothing from anyone else. @p jumps
 * what waits there only on the thief's place, which the thief then pays
 * for (place_check() at that CPU's dispatch). A thief is displaced
 * only after it has run for thief_slice(), so threads that flip between
 * WORKER and THIEF cannot displace each other faster than that, and the
 * deque's head gets its turn by vtime in between. Bounded: at most
 * STEAL_SWEEP_MAX CPUs probed with two array reads each; only a CPU running
 * a thread of @p's process costs a slot lookup.
 */
static __always_inline void prefer_worker(struct task_struct *p, s32 cpu)
{
	struct worker_target *wt;
	u32 tgid = p->tgid, start, i, c;
	u64 now, id;
	void *slots;
	s32 idle;

	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		if (idle != cpu) {
			kick_idle_thief(idle, cpu);
			STAT_INC(nr_worker_idle_kicks);
		}
		return;
	}
	slots = hint_proc_slots(p);
	if (!slots || !nr_cpus)
		return;
	start = bpf_get_prandom_u32() % nr_cpus;
	now = scx_bpf_now();
	bpf_for(i, 0, STEAL_SWEEP_MAX) {
		if (i >= nr_cpus)
			break;
		c = (start + i) % nr_cpus;
		if ((s32)c == cpu)
			continue;
		/* One read: the pid looked up below is of a thread of the
		 * process whose tgid is compared here (ws_cpu.cur_id). */
		id = cpu_run_id(c);
		if (run_id_tgid(id) != tgid ||
		    time_before(now, cpu_ctx(c)->cur_start + thief_slice()))
			continue;
		if (!bpf_cpumask_test_cpu(c, p->cpus_ptr) ||
		    !hint_pid_is_idle_thief(slots, p, run_id_pid(id)))
			continue;
		wt = &cpu_ctx(c)->worker_target;
		wt->dsq = cpu;
		wt->tgid = tgid;
		wt->pid = p->pid;
		scx_bpf_kick_cpu(c, WS_KICK_PREEMPT);
		STAT_INC(nr_kicks);
		return;
	}
}

/*
 * prefer_worker() preempted a thief on @cpu for a worker: move that worker
 * here so it runs next, on the thief's place (place_check()). If what the
 * kick preempted (@prev) is no longer an idle thief of the worker's
 * process (it stopped, or entered a critical section, between
 * prefer_worker()'s look and the kick: the same test as there), the target
 * is dropped and prev competes by vtime as after any slice. A worker that
 * is gone, or may not jump, leaves the dispatch to the normal path.
 */
static __always_inline bool dispatch_worker_target(s32 cpu, struct task_struct *prev)
{
	struct worker_target *wt = &cpu_ctx(cpu)->worker_target;
	u32 pid = wt->pid, dsq = wt->dsq, tgid = wt->tgid;

	if (!pid)
		return false;
	wt->pid = 0;
	if (dsq >= nr_cpus)
		return false;
	if (!prev || !(prev->scx.flags & WS_TASK_QUEUED))
		prev = NULL;	/* the thief slept: nobody's place to give */
	else if (prev->tgid != tgid || !hint_task_is_idle_thief(prev)) {
		STAT_INC(nr_thief_preempt_stale);
		return false;
	}
	if (dsq_move_pid(cpu, dsq, pid, NULL, 0, prev, prev ? prev->scx.dsq_vtime : 0,
			 min_slice()) != WS_MOVED)
		return false;
	STAT_INC(nr_thief_preempted);
	return true;
}

/*
 * Worker preference at the next free CPU: @prev, an idle THIEF, used its
 * slice up (or yielded) on @cpu and would keep the CPU (nothing here is due
 * before it, no laggard to balance). A WORKER of the same process queued on
 * this CPU's deque or another (ws_cpu.queued_worker) runs here instead, and
 * @prev is queued here by vtime. Thief demotion alone puts a thief behind
 * such a worker only when their weights allow it (a heavy enough thief
 * outruns a nice-0 worker even charged WS_THIEF_CHARGE x), and
 * prefer_worker() acts only when the worker is queued; this catches every
 * thief that holds or gets a CPU afterwards, at most a thief slice later,
 * with no kick. The worker takes exactly the thief's turn, its place
 * (@prev won against this CPU's head by vtime), and the thief pays for it
 * (place_check(), place_pass()), so only the thief's process pays, once
 * per place. Bounded: STEAL_SWEEP_MAX + 1 entries read
 * (this CPU's first, then from a random start), one deque scanned (at most
 * YIELD_SCAN_MAX entries).
 */
static __always_inline bool dispatch_queued_worker(s32 cpu, struct task_struct *prev)
{
	struct queued_worker *qw;
	u32 tgid = prev->tgid, start, i, c = 0, pid = 0;
	enum ws_found found;
	void *slots;

	if (!hints_live_for(prev) || !nr_cpus)
		return false;
	slots = hint_idle_thief_slots(prev);
	if (!slots)
		return false;
	/* This CPU's own deque first (no migration), then from a random start. */
	start = bpf_get_prandom_u32() % nr_cpus;
	bpf_for(i, 0, STEAL_SWEEP_MAX + 1) {
		if (i > nr_cpus)
			break;
		c = i ? (start + i - 1) % nr_cpus : (u32)cpu;
		qw = &cpu_ctx(c)->queued_worker;
		if (qw->pid && qw->tgid == tgid) {
			pid = qw->pid;
			break;
		}
	}
	if (!pid)
		return false;
	found = dsq_move_pid(cpu, c, pid, slots, tgid, prev, prev->scx.dsq_vtime, min_slice());
	if (found == WS_MOVED) {
		cpu_ctx(c)->queued_worker.pid = 0;
		STAT_INC(nr_worker_pulled);
		return true;
	}
	if (found == WS_STAYS)
		return false;	/* another thief's CPU may take it */
	/* Gone (it ran, was stolen or moved), or no longer a worker. */
	qw = &cpu_ctx(c)->queued_worker;
	if (qw->pid == pid)
		qw->pid = 0;
	return false;
}

#endif /* __SCX_WSCHED_WORKER_BPF_H */
