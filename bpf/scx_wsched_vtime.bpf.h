/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched fairness: weighted virtual time. A task's dsq_vtime advances
 * by its run time x 100/weight (ops.stopping); every deque is ordered by
 * it, and every choice between tasks compares it. vtime_now
 * (vtime_now_advance()) follows the largest vtime a run started with, and
 * bounds every task's lag to LAG_SLICES base slices (vtime_floor()) and
 * its lead to LEAD_SLICES (vtime_clamp()). Where a task is placed:
 * - a waking task keeps at most a slice of credit (wake_credit()), and one
 *   that waited for time (waited_for_time()) is placed no later than just
 *   before its CPU's earliest task, with no credit at all unless an
 *   interrupt woke it;
 * - a task the kernel moves to another CPU keeps no lag against that
 *   CPU's earliest task (migrate_place());
 * - a new task starts at vtime_now (ops.enable), or level with the
 *   earliest task of the CPU it first joins where that is earlier, the
 *   floor notwithstanding (fork_place()).
 * A queued task thus waits at most about deque length x slice x weight
 * ratio. vtime_now is updated without atomics: a lost update only places
 * a waking task a little behind or ahead, within the bounds above.
 */
#ifndef __SCX_WSCHED_VTIME_BPF_H
#define __SCX_WSCHED_VTIME_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched_cgroup.bpf.h"
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_tunables.bpf.h"

#define LAG_SLICES		16	/* max vtime lag of any task, in base slices */
#define LEAD_SLICES		48	/* max vtime lead of any task, in base slices */

static u64 vtime_now;
static u64 vtime_now_at;	/* scx_bpf_now() of vtime_now's last advance */

/*
 * No task's vtime counts as more than LAG_SLICES base slices behind
 * vtime_now: enough lag for steal_balance() to notice a task that waited on
 * a crowded deque, not so much that a task could hold a CPU for long against
 * a waking one (whose vtime starts at most one slice behind vtime_now), or
 * that a stolen laggard could hold its new CPU for long.
 */
static __always_inline u64 vtime_floor(u64 vt)
{
	u64 floor = vtime_now - LAG_SLICES * slice_ns;

	return time_before(vt, floor) ? floor : vt;
}

/*
 * ... and none more than LEAD_SLICES base slices ahead. A task owes vtime
 * only to those it competed with: a light task that ran while its CPU had
 * nothing else to run (its every tick charged 100/weight times over) would
 * otherwise carry that debt into the next contention and wait there, for
 * seconds, until every task queued with it caught up, possibly preempted
 * inside an RCU read-side section. The price is a somewhat larger share for
 * a nice-19 or SCHED_IDLE task beside a nice-0 one than its weight gives.
 */
static __always_inline u64 vtime_clamp(u64 vt)
{
	u64 ceil = vtime_now + LEAD_SLICES * slice_ns;

	vt = vtime_floor(vt);
	return time_before(ceil, vt) ? ceil : vt;
}

/*
 * prev's vtime including the run it is just finishing, from its
 * sum_exec_runtime, which the kernel brings up to date before it calls
 * ops.dispatch for a CPU whose task is still ours (update_curr_scx()), and
 * which ops.stopping charges from too. Not from a clock read, which would
 * put a kfunc call into ops.running on every context switch.
 */
static __always_inline u64 current_vtime(struct task_struct *p)
{
	u64 vt = p->scx.dsq_vtime, ran;
	s32 cpu = task_cpu_of(p);

	if (cpu >= 0 && (u32)cpu < nr_cpus && cpu_run_pid(cpu) == (u32)p->pid) {
		ran = p->se.sum_exec_runtime - cpu_ctx(cpu)->cur_sum;
		if ((s64)ran > 0)
			vt += cg_scale(scale_by_task_weight_inverse(p, ran),
				       cpu_ctx(cpu)->cur_factor);
	}
	return vtime_floor(vt);
}

/*
 * The task @rq, the locked runqueue of @cpu, runs, if it is the run that
 * ws_cpu.cur_id names (started by ops.running and not yet charged), else
 * NULL: its dsq_vtime is then where that run started.
 */
static __always_inline struct task_struct *rq_cur_run(s32 cpu, struct rq *rq)
{
	struct task_struct *curr;

	if (!rq || !(curr = rq->curr) || !curr->pid || cpu_run_pid(cpu) != (u32)curr->pid)
		return NULL;
	return curr;
}

/* Over its life, has @p run at least a base slice per voluntary sleep? */
static __always_inline bool cpu_bound(struct task_struct *p)
{
	return p->se.sum_exec_runtime >= slice_ns * (p->nvcsw + 1);
}

/*
 * Did @p wait for time rather than for another task: is it woken from an
 * interrupt (@irq: ws_irq_wakeup()), or did it sleep at least
 * TIMED_SLEEP_NS (se.exec_start is where its last run stopped, by the
 * clock rq->clock_task gives)? A message's round trip between two tasks
 * (a pipe's, a futex handoff's) takes microseconds; a task that sleeps
 * longer waited for something other than its peer's next step. A periodic
 * task that was woken late sleeps less than its period the next time, or
 * not at all; the interrupt still says what it waits for.
 */
#define TIMED_SLEEP_NS		(30 * 1000ULL)	/* 30 us */

static __always_inline bool waited_for_time(struct task_struct *p, struct rq *rq, bool irq)
{
	return irq || (s64)(rq->clock_task - p->se.exec_start) >= (s64)TIMED_SLEEP_NS;
}

/*
 * A waking task keeps at most one base slice of credit against vtime_now,
 * and, on a crowded CPU whose deque head lags vtime_now (by up to
 * LAG_SLICES slices), it is placed no further than one slice behind that
 * head (@cpu: the CPU whose deque it joins): it waits for the tasks within
 * a slice of the head, not for every laggard's LAG_SLICES slices, which
 * starved kthreads such as rcu_preempt under load. Not at the head itself:
 * that costs wakeup-heavy loads (hackbench) throughput.
 *
 * A wakee that waited for time (waited_for_time(); @irq: it is woken from an
 * interrupt) is placed by the CPU's own tasks instead (@rq: the locked
 * runqueue of @cpu, NULL where none is held): no later than just before the
 * earliest of the deque's head and the running task's vtime at the start of
 * its run. vtime_now follows the least crowded CPUs, a CPU hog on a more
 * crowded one lags it, and a periodic task placed a slice behind vtime_now
 * or behind such a hog would be after the hog, neither preempt it nor cut
 * its run (wake_preempt()), and wait out its slice, at every wakeup. Level
 * with the CPU's earliest task, as a task that keeps no lag would be, it
 * gains no share: it is still charged every run, and it is only ever moved
 * later, never earlier than its own vtime. One woken by a task, not an
 * interrupt, keeps no credit against vtime_now either: a task that waited
 * for time and is woken by another is not a light periodic one but,
 * typically, a parallel job's worker leaving its barrier or a message's
 * receiver, and a burst of them, each up to a slice ahead of a light thread
 * level with vtime_now (the credit is what vtime_now advanced while they
 * slept), kept that thread waiting for each of them to run that credit off.
 * An interrupt's wakee keeps the slice, which the latency beside crowded
 * CPUs' hogs needs. The running task a task-woken wakee is placed by is
 * not its waker (a wakee of the task running on its own CPU): a light
 * waker lags vtime_now by up to the slice of credit it got itself, and
 * placing each of its wakees just before it kept them all that far ahead
 * of every task level with vtime_now, a burst of 32 of them 8 ms each
 * (guest test burst_released_on_its_cpu_not_ahead). Any other wakee
 * keeps the batching above, which wakeup-heavy loads need.
 *
 * Applied once, where a waking task is placed: by ops.enqueue for an
 * SCX_ENQ_WAKEUP (every wakeup not dispatched directly), and by
 * ops.select_cpu for the ones it dispatches directly, which ops.enqueue
 * never sees. Not in an ops.runnable of its own: every struct_ops callback
 * costs a call per wakeup even when it returns at once. A forked task is
 * not credited: ops.enable has just set its vtime to vtime_now.
 */
static __always_inline void wake_credit(struct task_struct *p, s32 cpu, struct rq *rq, bool irq)
{
	bool timed = rq && waited_for_time(p, rq, irq);
	struct task_struct *head, *curr;
	u64 ref = vtime_now;

	/* ref - slice_ns: where the wakee goes if it is behind */
	if (timed && !irq)
		ref = vtime_now + slice_ns;
	/*
	 * The common case, a task that ran recently, needs no peek at the
	 * deque: its place can only move back, and never past vtime_now.
	 */
	if (!time_before(p->scx.dsq_vtime, ref - slice_ns))
		return;
	if (cpu >= 0 && (u32)cpu < nr_cpus) {
		head = __COMPAT_scx_bpf_dsq_peek(cpu);
		if (timed) {
			u64 first;

			/*
			 * ref - slice_ns: one before the earliest of the two,
			 * or vtime_now (less a slice for an interrupt's wakee)
			 */
			first = head ? head->scx.dsq_vtime : ref + slice_ns;
			/* not the waker itself: a task woken on its waker's
			 * CPU by a system call */
			if ((irq || cpu != bpf_get_smp_processor_id()) &&
			    (curr = rq_cur_run(cpu, rq)) &&
			    time_before(curr->scx.dsq_vtime, first))
				first = curr->scx.dsq_vtime;
			if (time_before(first - 1 + slice_ns, ref))
				ref = first - 1 + slice_ns;
		} else if (head && time_before(head->scx.dsq_vtime + 2 * slice_ns, ref)) {
			ref = head->scx.dsq_vtime + 2 * slice_ns;
		}
	}
	if (time_before(p->scx.dsq_vtime, ref - slice_ns))
		scx_bpf_task_set_dsq_vtime(p, ref - slice_ns);
}

/*
 * A task the kernel moves to another CPU while it is runnable (an affinity
 * or cpuset change; p->on_rq is TASK_ON_RQ_MIGRATING only inside such a
 * move, and the scheduler's own moves, steals, bypass ops.enqueue) keeps
 * no lag against the tasks of its new CPU (@cpu, whose rq @rq is locked,
 * or NULL): it is placed no earlier than the earliest of that deque's head
 * and the running task's vtime at the start of its run, or than vtime_now
 * less a slice where the CPU has neither. Its lag was against vtime_now,
 * which follows the least crowded CPUs; a task that waited its turns on a
 * crowded CPU lags it by up to LAG_SLICES slices without being owed
 * anything there, and carried here that lag made every task of the new
 * CPU, a periodic one too, wait while the newcomer caught up. Its lead it
 * keeps, so a move never gains a task anything, and only the task moved
 * loses: only a task's owner or root may move it.
 */
static __always_inline void migrate_place(struct task_struct *p, s32 cpu, struct rq *rq)
{
	struct task_struct *head, *curr;
	u64 first = vtime_now - slice_ns;
	bool any = false;

	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head) {
		first = head->scx.dsq_vtime;
		any = true;
	}
	if ((curr = rq_cur_run(cpu, rq)) && (!any || time_before(curr->scx.dsq_vtime, first)))
		first = curr->scx.dsq_vtime;
	if (time_before(p->scx.dsq_vtime, first)) {
		scx_bpf_task_set_dsq_vtime(p, first);
		STAT_INC(nr_migrate_placed);
	}
}

/*
 * Where a new task, one that has never run (se.sum_exec_runtime is still
 * 0), joins the deque of @cpu (whose rq @rq is locked, or NULL) at its
 * first ops.enqueue: no later than the earliest of the deque's head and
 * the running task's vtime at the start of its run (@vt: where it would
 * go otherwise, its vtime after vtime_floor()). ops.enable started it at
 * vtime_now, which follows the least crowded CPUs; a crowded CPU's tasks
 * lag that by up to LAG_SLICES slices, and a thread forked there waited
 * until every one of them had caught up with it (700 ms beside four hogs
 * whose CPU lagged that of two). Not merely at the floor: every task
 * queued on such a CPU went in at the floor of its own time, which turns
 * the deque into arrival order, and a newcomer at the floor waited out a
 * whole round of them (65 ms there). Level with the earliest task, which
 * lags no more than the floor it was queued at, it runs after that task
 * and competes with them as an equal from then on; it gains no share,
 * being charged each run as they are. Where the CPU has neither, @vt
 * stands.
 */
static __always_inline u64 fork_place(s32 cpu, struct rq *rq, u64 vt)
{
	struct task_struct *head, *curr;
	u64 first = vt;

	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head && time_before(head->scx.dsq_vtime, first))
		first = head->scx.dsq_vtime;
	if ((curr = rq_cur_run(cpu, rq)) && time_before(curr->scx.dsq_vtime, first))
		first = curr->scx.dsq_vtime;
	if (first != vt)
		STAT_INC(nr_fork_placed);
	return first;
}

/*
 * From ops.stopping: vtime_now follows the largest vtime a task started a
 * run with (@vt, before the run's charge: the charged vtime would put
 * wakeups a run further back; a racy max, see the top), moving by no more
 * than the run's CPU time (@ran, without thief surcharge) and no more than
 * a slice plus the wall time since the last advance. A nice-0 or heavier
 * task that started no further ahead than its run's length never meets
 * either bound. A light task, charged 100/weight times over, sits at
 * vtime_clamp()'s lead bound: the CPU-time bound keeps it from dragging
 * vtime_now, and that bound, away from a crowded CPU's tasks, whose
 * wakeups would then queue behind all that waits there (guest tests
 * wakeup_not_behind_a_frequent_light_task and
 * wakeup_not_behind_a_light_tasks_clock).
 */
static __always_inline void vtime_now_advance(u64 vt, u64 ran)
{
	u64 lim, now;

	if (!time_before(vtime_now, vt))
		return;
	now = scx_bpf_now();	/* after the test: only an advance needs the clock */
	lim = slice_ns;
	if (time_before(vtime_now_at, now))
		lim += now - vtime_now_at;
	if (ran < lim)
		lim = ran;
	lim += vtime_now;
	vtime_now = time_before(lim, vt) ? lim : vt;
	vtime_now_at = now;
}

#endif /* __SCX_WSCHED_VTIME_BPF_H */
