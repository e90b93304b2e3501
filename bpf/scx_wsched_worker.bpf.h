/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched worker preference, for registered processes
 * (Documentation/abi.md): a THIEF (a pool thread looking for work) gets
 * thief_slice() and is charged WS_THIEF_CHARGE x its run (the charge in
 * scx_wsched_hint.bpf.h's wsched_hint_stopping()); a queued WORKER (one
 * that may hold work its thieves wait for) gets the next idle CPU, or a
 * CPU running a THIEF of its own process (prefer_worker() when it is
 * queued, dispatch_queued_worker() when that thief's slice ends). A
 * process trades only its own thieves for its own workers. The hint
 * fragment answers every question about a slot; this file reads none.
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
 * thieves for its own workers and takes nothing from anyone else. @p may
 * not jump more than YIELD_LEAD_SLICES ahead of what waits there
 * (yield_fair()); the thief keeps its place by vtime. A thief is displaced
 * only after it has run for thief_slice(), so threads that flip between
 * WORKER and THIEF cannot displace each other faster than that, and the
 * deque's head gets its turn by vtime in between. Bounded: at most
 * STEAL_SWEEP_MAX CPUs probed with two array reads each; only a CPU running
 * a thread of @p's process costs a slot lookup.
 */
static __always_inline void prefer_worker(struct task_struct *p, s32 cpu)
{
	struct yield_target *yt;
	u32 tgid = p->tgid, start, i, c;
	u64 now;
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
		if ((s32)c == cpu || cpu_ctx(c)->cur_tgid != tgid ||
		    time_before(now, cpu_ctx(c)->cur_start + thief_slice()))
			continue;
		if (!bpf_cpumask_test_cpu(c, p->cpus_ptr) ||
		    !hint_pid_is_idle_thief(slots, p, cpu_ctx(c)->cur_pid) ||
		    !yield_fair(p, c))
			continue;
		yt = &cpu_ctx(c)->yield_target;
		yt->boost = 0;
		yt->dsq = cpu;
		yt->tgid = tgid;
		yt->pid = p->pid;
		scx_bpf_kick_cpu(c, WS_KICK_PREEMPT);
		STAT_INC(nr_kicks);
		return;
	}
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
 * with no kick. The worker takes exactly the thief's turn, so only the
 * thief's process pays, and may not be more than YIELD_LEAD_SLICES ahead of
 * this CPU's head (yield_fair()). Bounded: STEAL_SWEEP_MAX + 1 entries read
 * (this CPU's first, then from a random start), one deque scanned (at most
 * YIELD_SCAN_MAX entries).
 */
static __always_inline bool dispatch_queued_worker(s32 cpu, struct task_struct *prev)
{
	struct queued_worker *qw;
	struct task_struct *p;
	u32 tgid = prev->tgid, start, i, c = 0, pid = 0, n = 0;
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
	bpf_for_each(scx_dsq, p, c, 0) {
		if (++n > YIELD_SCAN_MAX)
			break;
		if (p->pid != pid)
			continue;
		if (p->tgid != tgid)
			break;
		if (!hint_task_is_worker_in(slots, p))
			break;
		if (!may_run_on(p, cpu) || !yield_fair(p, cpu))
			return false;	/* another thief's CPU may take it */
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, WS_DSQ_LOCAL, 0))
			break;
		cpu_ctx(c)->queued_worker.pid = 0;
		STAT_INC(nr_worker_pulled);
		return true;
	}
	/* Gone (it ran, was stolen or moved), or no longer a worker. */
	qw = &cpu_ctx(c)->queued_worker;
	if (qw->pid == pid)
		qw->pid = 0;
	return false;
}

#endif /* __SCX_WSCHED_WORKER_BPF_H */
