/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched wakeup preemption (wake_preempt(), from ops.enqueue): a task
 * woken from an interrupt (or by a task on another CPU, when the running
 * task is CPU-bound), earlier in vtime than the task its CPU runs and than
 * that deque's head, for which no idle CPU was woken, preempts that task
 * once it has run wake_preempt_ns (at once, or by a timer at that bound,
 * wake_cuts); a thread inside a critical section by its hint slot gets
 * the lock holder's grace first, as at a tick. A CPU is preempted so
 * at most WAKE_KICK_BURST times in a row and once per WAKE_KICK_PERIOD_NS
 * on average (the rate bound, kick_wait() and kick_charge()). Any other
 * wakee waits for the next dispatch.
 */
#ifndef __SCX_WSCHED_PREEMPT_BPF_H
#define __SCX_WSCHED_PREEMPT_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_hint.bpf.h"
#include "scx_wsched_slice.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_tunables.bpf.h"
#include "scx_wsched_vtime.bpf.h"

/*
 * The end of a run at the rate bounds of wakeup preemption (struct
 * wake_cut): armed by wake_preempt() for the run it found too young to
 * preempt, or on a CPU at its rate bound (kick_wait()), and firing when
 * that run reaches wake_preempt_ns or the CPU's bound allows.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WSCHED_MAX_CPUS);
	__type(key, u32);
	__type(value, struct wake_cut);
} wake_cuts SEC(".maps");

static int wake_cut_fire(void *map, int *key, struct wake_cut *wc)
{
	if (run_cut_kick(*key, wc))
		STAT_INC(nr_wake_cut_kicks);
	return 0;
}

/* Set up every CPU's run-end timers, this file's and the slice timers
 * (ops.init); 0 or an error. */
static __always_inline s32 run_cuts_init(void)
{
	u32 i;
	s32 ret;

	bpf_for(i, 0, nr_cpus) {
		ret = RUN_CUT_SETUP(wake_cuts, i, wake_cut_fire);
		if (!ret)
			ret = slice_end_init(i);
		if (ret)
			return ret;
	}
	return 0;
}

/* End @curr's current run on @cpu in @left ns (see struct wake_cut).
 * Whether a timer was armed now (not already, for this run). */
static __always_inline bool wake_cut_arm(s32 cpu, struct task_struct *curr, u64 left)
{
	u32 key = cpu;
	struct wake_cut *wc = bpf_map_lookup_elem(&wake_cuts, &key);

	if (!wc || !run_cut_start(wc, cpu, curr, left))
		return false;
	STAT_INC(nr_wake_cuts);
	return true;
}

/*
 * The rate bound of wakeup preemption per CPU, whatever the wakees: at
 * most WAKE_KICK_BURST switches in a row, and one per WAKE_KICK_PERIOD_NS
 * on average. The bound on the running task's run
 * (wake_preempt_ns) alone lets a task that sleeps a little longer than
 * it, woken by its timer each time, switch a CPU hog out at every
 * wakeup, so that the hog's CPU goes to switches rather than to either
 * task (test timer_storm_bounded, in tests/parallel/). A periodic thread
 * (a timer, audio, a heartbeat: a wakeup per millisecond or fewer per
 * CPU) never meets this bound and keeps its prompt start; a faster
 * stream of wakees waits up to about WAKE_KICK_PERIOD_NS each, as long
 * as the shorter cut near such wakees lasts by default (lat_cut()).
 * A generic cell rate algorithm: ws_cpu.kick_tat is when the next switch would
 * be due at the sustained rate; a switch at @now conforms when that is at
 * most (WAKE_KICK_BURST - 1) periods ahead of @now. Every switch the rule
 * makes is charged: a kick now, a cut (wake_cut_arm()) at its end.
 * ws_cpu.kick_tat is written by whichever CPU enqueues a wakee there,
 * without atomics: a lost update allows one more switch.
 */
#define WAKE_KICK_BURST		4
#define WAKE_KICK_PERIOD_NS	(1000 * 1000ULL)	/* 1 ms */

/* How long until @cpu may be switched for a wakee (0: now). */
static __always_inline u64 kick_wait(s32 cpu, u64 now)
{
	u64 tat = cpu_ctx(cpu)->kick_tat;
	u64 tau = (WAKE_KICK_BURST - 1) * WAKE_KICK_PERIOD_NS;

	if (time_before(tat, now))
		return 0;
	return tat - now > tau ? tat - now - tau : 0;
}

/* Charge @cpu a switch for a wakee at @at (see kick_wait()). */
static __always_inline void kick_charge(s32 cpu, u64 at)
{
	u64 tat = cpu_ctx(cpu)->kick_tat;

	if (time_before(tat, at))
		tat = at;
	cpu_ctx(cpu)->kick_tat = tat + WAKE_KICK_PERIOD_NS;
}

/*
 * Wakeup preemption. A task woken from an interrupt (ws_irq_wakeup(): by a
 * timer, a device, the network), or by a task on another CPU after it
 * waited for time (waited_for_time()) when the task it would preempt is
 * CPU-bound (cpu_bound()), onto a deque whose CPU runs another task,
 * with no idle CPU woken to steal it (ops.enqueue's kick_thief()),
 * preempts that task (SCX_KICK_PREEMPT: its slice ends now and the
 * CPU's dispatch runs the wakee, the deque's head, before its balance
 * check: ws_cpu.wake_kicked) when
 * - the wakee's vtime is earlier than the running task's vtime including
 *   the run so far (current_vtime()), and earlier than the deque's head:
 *   it is what that dispatch will pick, so the kick is never futile;
 * - the running task has run at least wake_preempt_ns since it started
 *   (a rate bound: a CPU is preempted at most once per wake_preempt_ns
 *   of run, whatever the number of wakees or their wakeup rate), or at
 *   least WAKE_XCPU_RUN_NS for a wakee of a task on another CPU: a process
 *   can wake its own threads from another CPU as fast as it likes, and at
 *   wake_preempt_ns a stream of such wakeups switched a CPU hog out at
 *   nearly every one (test wakeup_storm_from_another_cpu_bounded, in
 *   tests/parallel/: it needs CPUs that run at once); when it has run
 *   less, the run is ended at that bound instead (wake_cut_arm());
 * - the CPU is within its rate bound (kick_wait(): at most
 *   WAKE_KICK_BURST switches in a row, one per WAKE_KICK_PERIOD_NS on
 *   average);
 *   beyond it, the run is ended when the bound allows instead;
 * - the running task is not inside a critical section by its hint slot
 *   (hint_in_section()); if it is, the run is ended by the timer at once
 *   instead, which gives it the lock holder's grace first, by the tick's
 *   rules and from the same budget (one per run, one per section:
 *   run_cut_kick()), so a wakee waits at most grace_ns more for it.
 *   Registration itself exempts nothing: a registered process's hog is
 *   preempted as any other task is, or any user could register CPU hogs
 *   and hold every other user's wakeups behind their slices.
 * A task woken by a task on its own CPU (a waker that goes on running,
 * or a sync waker about to sleep), or by one elsewhere while its CPU runs
 * a task that sleeps often, waits for the next dispatch (at the latest
 * the tick after the running task's slice is cut to min_slice()): a
 * producer preempted by each consumer it wakes, as in hackbench or a
 * pipeline, is switched out for every message instead of handing over
 * batches. A CPU hog hands over nothing: a reader woken through a pipe,
 * a socket or an eventfd by a thread elsewhere (a terminal's or an audio
 * graph's next stage, a server's worker) otherwise waited for its slice
 * to be cut at a tick, milliseconds where EEVDF takes a fraction of one.
 * Why a task gains nothing by it: the test is on vtime alone, which every
 * run is charged to as before, so the wakee only runs sooner what its
 * weight already entitled it to run; it takes the CPU only from a task
 * that is ahead of it (has had more than its share), and pays for the run
 * it gets. A task that sleeps briefly between long runs is charged those
 * runs, so its vtime is not ahead of a hog's for longer than a hog's would
 * be; the credit a waking task keeps (wake_credit(), at most one base
 * slice) is the same with or without preemption.
 */
#define WAKE_XCPU_RUN_NS	(1000 * 1000ULL)	/* 1 ms */

static __always_inline void wake_preempt(struct task_struct *p, s32 cpu, struct rq *rq,
					 bool here, bool irq, u64 vtime)
{
	struct task_struct *curr, *head;
	u64 ran, since, cvt, now, left, wait, bound = wake_preempt_ns;

	if (!wake_preempt_ns || !rq)
		return;
	if (!irq && (here || !waited_for_time(p, rq, false)))
		return;
	curr = here ? bpf_get_current_task_btf() : rq->curr;
	if (!curr || !curr->pid || curr == p ||
	    cpu_run_pid(cpu) != (u32)curr->pid)
		return;
	if (!irq && !cpu_bound(curr))
		return;
	if (!irq && bound < WAKE_XCPU_RUN_NS)
		bound = WAKE_XCPU_RUN_NS;
	/*
	 * The run so far: sum_exec_runtime is brought up to date only at
	 * ticks and switches (update_curr()), so add what ran since, by the
	 * clock the kernel charges with (ttwu updated it before this
	 * enqueue). Without it, a task that wakes within a tick of the
	 * current task's start, as one sleeping to short periods beside
	 * hogs does every time, would find it has run nothing.
	 */
	ran = curr->se.sum_exec_runtime - cpu_ctx(cpu)->cur_sum;
	since = rq->clock_task - curr->se.exec_start;
	if ((s64)since > 0)
		ran += since;
	cvt = curr->scx.dsq_vtime +
	      cg_scale(scale_by_task_weight_inverse(curr, ran), cpu_ctx(cpu)->cur_factor);
	if (!time_before(vtime, cvt))
		return;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head && head != p && time_before(head->scx.dsq_vtime, vtime))
		return;
	now = bpf_ktime_get_ns();
	left = (s64)ran < (s64)bound ? bound - ran : 0;
	wait = kick_wait(cpu, now);
	if (wait > left) {
		left = wait;
		STAT_INC(nr_wake_rate_bound);
	}
	if (!left && hint_in_section(curr)) {
		/* Due, but in a section: the timer's kick, at once, grants
		 * the grace first (run_cut_kick()); its slice is left to the
		 * grace, so a tick cannot end it before the timer decides. */
		if (wake_cut_arm(cpu, curr, 0))
			kick_charge(cpu, now);
		return;
	}
	if (left) {
		/*
		 * Not due yet: end the current run when it reaches
		 * wake_preempt_ns, or when the CPU's rate bound allows,
		 * instead (the dispatch then picks by vtime), rather than
		 * leave the wakee behind the whole slice. A run that just
		 * restarted after an earlier wakee slept is the usual case.
		 * The timer ends the run then; the slice, only ever
		 * shortened, ends it at the tick after should the timer's
		 * kick find the pair it checks torn.
		 * curr may be rq->curr, which the verifier lets us read but
		 * not write through: the task whose slice is cut is taken
		 * again as a trusted pointer, and on a kernel that gives
		 * none for another CPU's task (before scx_bpf_cpu_curr()
		 * and scx_bpf_task_set_slice()) only the timer acts.
		 */
		struct task_struct *t = NULL;

		if (wake_cut_arm(cpu, curr, left))
			kick_charge(cpu, now + left);

		if (here)
			t = bpf_get_current_task_btf();
		else if (bpf_ksym_exists(scx_bpf_cpu_curr) &&
			 bpf_ksym_exists(scx_bpf_task_set_slice___new))
			t = scx_bpf_cpu_curr(cpu);
		if (!t)
			return;
		barrier_var(t);		/* keep the NULL test: t == curr implies it */
		if (t == curr && t->scx.slice > left)
			scx_bpf_task_set_slice(t, left);
		return;
	}
	kick_charge(cpu, now);
	cpu_ctx(cpu)->wake_kicked = p->pid;
	scx_bpf_kick_cpu(cpu, WS_KICK_PREEMPT);
	STAT_INC(nr_wake_preempt);
}

#endif /* __SCX_WSCHED_PREEMPT_BPF_H */
