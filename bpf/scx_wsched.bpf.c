// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched: a sched_ext scheduler with per-CPU dispatch deques and
 * idle-CPU work stealing. Documentation/scheduler.md is the long form.
 *
 * Every CPU owns a user DSQ, its deque (DSQ id = CPU number), ordered by
 * weighted virtual time. A waking task goes to an idle CPU's local DSQ
 * when the built-in idle tracking finds one (ops.select_cpu; a sync
 * wakee to its waker's deque instead), else to the deque of its CPU
 * (ops.enqueue), whose owner is kicked unless it is sure to look, and
 * where waiting work wakes an idle thief. A CPU serves its own deque
 * first; a still-runnable prev competes with the head by vtime, and both
 * with a random victim's lagging head (ops.dispatch); a CPU going idle
 * steals. ops.tick cuts the slices of a crowded CPU. Registered processes
 * (Documentation/abi.md) get graces for critical sections, yield-to-all,
 * and worker preference over their own thieves.
 *
 * This file holds the ops; the policy is in fragments by concern, each
 * with its design note at the top and each compiling on its own (make
 * check-build), included in this order, each only after those it uses:
 *   scx_wsched_stats.bpf.h     the counters (STAT_INC)
 *   scx_wsched_compat.bpf.h    kernel versions: CO-RE enums, weak kfuncs
 *   scx_wsched_tunables.bpf.h  the loader's options (rodata)
 *   scx_wsched_cpu.bpf.h       topology, the per-CPU context struct ws_cpu
 *   scx_wsched_hint.bpf.h      every read of a hint slot, the observe gate
 *   scx_wsched_cgroup.bpf.h    cpu.weight: each cgroup's share factor
 *   scx_wsched_vtime.bpf.h     fairness: vtime, its bounds, placement
 *   scx_wsched_steal.bpf.h     idle and balance stealing, thief kicks
 *   scx_wsched_quota.bpf.h     cpu.max: throttling, parked tasks, the timer
 *   scx_wsched_slice.bpf.h     slice cuts, the run-end timer
 *   scx_wsched_preempt.bpf.h   wakeup preemption and its rate bound
 *   scx_wsched_yield.bpf.h     sched_yield(), yield_to(), their targets
 *   scx_wsched_worker.bpf.h    thieves and workers of registered processes
 *
 * Not done: NUMA beyond LLCs, CPU hotplug in BPF (without
 * ops.cpu_online/offline the kernel ejects the scheduler with a restart
 * request, and the loader loads it again; so no deque is ever left with an
 * offline owner).
 *
 * Every race between CPUs is accepted, none loses a task: each fragment
 * states its own, and struct ws_cpu's table what a stale field costs.
 */
#include <scx/common.bpf.h>
#include "scx_wsched.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_tunables.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_hint.bpf.h"	/* hints from registered processes */
#include "scx_wsched_cgroup.bpf.h"
#include "scx_wsched_vtime.bpf.h"
#include "scx_wsched_steal.bpf.h"
#include "scx_wsched_quota.bpf.h"
#include "scx_wsched_slice.bpf.h"
#include "scx_wsched_preempt.bpf.h"
#include "scx_wsched_yield.bpf.h"
#include "scx_wsched_worker.bpf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * The built-in policy's answer to a sync wakeup (the waker says it is about
 * to sleep: pipes, sockets, futex handoffs) when @p's previous CPU is busy:
 * the waker's own CPU, reported "idle" whenever its local DSQ is empty and
 * some other CPU is idle. It is not idle, the waker still runs there.
 */
static __always_inline bool sync_wake_here(s32 cpu, u64 wake_flags)
{
	return (wake_flags & WS_WAKE_SYNC) && cpu == bpf_get_smp_processor_id();
}

/*
 * The built-in policy's first answer without SMT, taken without calling it:
 * the previous CPU if it is allowed and idle (for a sync wakeup only when it
 * shares the waker's LLC, as there), claimed as scx_bpf_select_cpu_dfl()
 * would claim it. That kfunc first builds the task's allowed LLC and node
 * masks under RCU, a cost paid on every wakeup of a load whose previous
 * CPU is nearly always idle (pipe ping-pong).
 */
static __always_inline bool prev_cpu_idle(struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	if (smt_active || prev_cpu < 0 || (u32)prev_cpu >= nr_cpus)
		return false;
	if ((wake_flags & WS_WAKE_SYNC) &&
	    llc_of(prev_cpu) != llc_of(bpf_get_smp_processor_id()))
		return false;
	return bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
	       scx_bpf_test_and_clear_cpu_idle(prev_cpu);
}

s32 BPF_STRUCT_OPS(wsched_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	bool is_idle = false;
	s32 cpu;

	if (prev_cpu_idle(p, prev_cpu, wake_flags)) {
		cpu = prev_cpu;
		is_idle = true;
	} else {
		cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	}
	/*
	 * A sync wakee goes to the waker's deque, not its local DSQ: if the
	 * waker sleeps as promised its CPU takes the wakee from there at
	 * once; if it keeps running (hackbench's senders wake a receiver per
	 * message) the idle CPU that ops.enqueue kicks steals it, where on
	 * the local DSQ it would wait for the waker's slice to end.
	 */
	if (is_idle && sync_wake_here(cpu, wake_flags)) {
		STAT_INC(nr_wake_sync_local);
		return cpu;
	}
	if (is_idle && cg_task_throttled(p) < 0) {
		wake_credit(p, cpu, NULL, false);	/* ops.enqueue is skipped */
		scx_bpf_dsq_insert(p, WS_DSQ_LOCAL, slice_ns, 0);
		STAT_INC(nr_direct_dispatch);
	}
	return cpu;
}

void BPF_STRUCT_OPS(wsched_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = task_cpu_of(p), waiting;
	bool wakeup = enq_flags & WS_ENQ_WAKEUP, here, irq, thief = false;
	enum ws_owner owner = WS_OWNER_BUSY;
	struct rq *rq = NULL;
	u64 vtime;
	u32 state;

	if (cpu < 0 || (u32)cpu >= nr_cpus) {
		scx_bpf_error("%s[%d] on CPU %d outside the %u known CPUs",
			      p->comm, p->pid, cpu, nr_cpus);
		return;
	}

	if (cg_park(p, enq_flags))
		return;
	/*
	 * Nothing else to run and prev's slice over (SCX_OPS_ENQ_LAST, there
	 * for the throttled cgroups' tasks, parked above): it runs on.
	 */
	if (enq_flags & WS_ENQ_LAST) {
		scx_bpf_dsq_insert(p, WS_DSQ_LOCAL, run_slice(hint_state(p)), enq_flags);
		return;
	}

	/*
	 * This CPU's own deque: its owner runs the waker (or whatever
	 * enqueues), so it is busy and dispatches before it can idle.
	 */
	here = cpu == bpf_get_smp_processor_id();
	if (wakeup || !here)
		rq = enqueue_rq(cpu);
	/* Woken from an interrupt: read once, for placement, the shorter
	 * cut and wakeup preemption. */
	irq = wakeup && ws_irq_wakeup(p);
	if (wakeup) {
		wake_credit(p, cpu, rq, irq);
		lat_wake_note(p, cpu, irq);
	} else if (p->on_rq == WS_TASK_ON_RQ_MIGRATING) {
		migrate_place(p, cpu, rq ? rq : enqueue_rq(cpu));
	}
	vtime = vtime_floor(p->scx.dsq_vtime);
	if (!wakeup && !p->se.sum_exec_runtime)
		vtime = fork_place(cpu, rq ? rq : enqueue_rq(cpu), vtime);
	waiting = scx_bpf_dsq_nr_queued(cpu);
	state = hint_state(p);
	if (!here)
		owner = owner_look(cpu, rq);

	/*
	 * A pinned task woken for an idle owner with nothing queued: its
	 * next task either way (see owner_look()); the kernel's wakeup
	 * preemption wakes the owner.
	 */
	if (wakeup && owner == WS_OWNER_IDLE && waiting <= 0 && p->nr_cpus_allowed <= 1) {
		scx_bpf_dsq_insert(p, WS_DSQ_LOCAL, run_slice(state), enq_flags);
		STAT_INC(nr_direct_dispatch);
		return;
	}

	scx_bpf_dsq_insert_vtime(p, cpu, run_slice(state), vtime, enq_flags);
	if (p->nr_cpus_allowed > 1) {
		mask_set(cpu);
		if (cpu_ctx(cpu)->unstealable)
			cpu_ctx(cpu)->unstealable = 0;
	}
	STAT_INC(nr_enqueued);

	/*
	 * Kick the owner if it is another CPU, unless it is sure to look at
	 * its deque (see owner_look()): the kernel does not skip a CPU that
	 * is still between its last dispatch and idle, so a task can never
	 * sit on the deque of a CPU that went to sleep just after looking at
	 * it.
	 */
	if (owner == WS_OWNER_UNKNOWN || (owner == WS_OWNER_IDLE && !wakeup)) {
		scx_bpf_kick_cpu(cpu, WS_KICK_IDLE);
		STAT_INC(nr_kicks);
	}
	/*
	 * A WORKER gets the next free CPU (prefer_worker(), which wakes an
	 * idle one first). Otherwise: a wakeup queued behind the task
	 * running here (a sync wakee on its waker's CPU) is work an idle CPU
	 * could start now, as is anything behind waiting tasks. The current
	 * task is the waker, never the idle task, for a wakeup on this CPU's
	 * own deque.
	 */
	if (state == WS_HINT_WORKER) {
		struct queued_worker *qw = &cpu_ctx(cpu)->queued_worker;

		qw->tgid = p->tgid;
		qw->pid = p->pid;
		prefer_worker(p, cpu);
	} else if (waiting > 0 ||
		 (wakeup && here && bpf_get_current_task_btf()->pid)) {
		thief = kick_thief(p, cpu);
	}
	/* An idle CPU woken to take the wakee is better than a preemption;
	 * a WORKER has worker preference instead. */
	if (wakeup && owner == WS_OWNER_BUSY && !thief && state != WS_HINT_WORKER)
		wake_preempt(p, cpu, rq, here, irq, vtime);
}

void BPF_STRUCT_OPS(wsched_dispatch, s32 cpu, struct task_struct *prev)
{
	struct task_struct *head;
	u32 state;

	if (dispatch_yield_target(cpu, prev) || dispatch_worker_target(cpu, prev))
		return;

	/* a throttled cgroup's prev stops (ops.enqueue parks it): the CPU
	 * dispatches as if prev had slept */
	if (prev && (prev->scx.flags & WS_TASK_QUEUED) && cg_task_throttled(prev) < 0) {
		/*
		 * prev used up its slice and is not on the deque yet: it
		 * competes with the deque's head by vtime, or weights would
		 * not matter between two tasks sharing a CPU; and both
		 * compete with laggards on other deques.
		 */
		u64 prev_vtime = current_vtime(prev), ref = prev_vtime;
		bool head_first = false;

		head = __COMPAT_scx_bpf_dsq_peek(cpu);
		if (head && time_before(head->scx.dsq_vtime, prev_vtime)) {
			ref = head->scx.dsq_vtime;
			head_first = true;
		}
		/*
		 * The wakee this CPU was kicked for (wake_preempt()) runs
		 * first; the balance check still runs, against what would
		 * follow it here, and a laggard it steals queues behind the
		 * wakee on the local DSQ. A steal ahead of the wakee made it
		 * wait out the laggard's catch-up; no check at all left
		 * deques to drift apart between slice ends, which come
		 * seldom where such wakeups preempt often.
		 */
		if (head_first && head->pid == cpu_ctx(cpu)->wake_kicked &&
		    scx_bpf_dsq_move_to_local(cpu, 0)) {
			STAT_INC(nr_dispatched_local);
			STAT_INC(nr_wakee_first);
			head = __COMPAT_scx_bpf_dsq_peek(cpu);
			ref = prev_vtime;
			if (head && time_before(head->scx.dsq_vtime, ref))
				ref = head->scx.dsq_vtime;
			steal_balance(cpu, ref);
			return;
		}
		if (steal_balance(cpu, ref))
			return;
		if (head_first && scx_bpf_dsq_move_to_local(cpu, 0)) {
			STAT_INC(nr_dispatched_local);
			return;
		}
		state = hint_state(prev);
		if (state == WS_HINT_THIEF && dispatch_queued_worker(cpu, prev))
			return;
		scx_bpf_task_set_slice(prev, run_slice(state));
		STAT_INC(nr_keep_running);
		return;
	}

	if (scx_bpf_dsq_move_to_local(cpu, 0)) {
		STAT_INC(nr_dispatched_local);
		return;
	}

	if (steal_idle(cpu))
		return;
	STAT_INC(nr_dispatch_idle);
}

void BPF_STRUCT_OPS(wsched_tick, struct task_struct *p)
{
	const struct cpumask *online;
	s32 cpu = task_cpu_of(p), waiting, thief;
	bool graced;
	u64 cut;

	if (cpu < 0 || (u32)cpu >= nr_cpus)
		return;
	/* a throttled cgroup's task stops at once, grace or not */
	if (cg_tick(p, cpu))
		return;
	graced = wsched_hint_tick(p);	/* a grace for a critical section, first */
	tick_gap_learn();
	waiting = scx_bpf_dsq_nr_queued(cpu);
	if (waiting <= 0)
		return;

	/*
	 * Overloaded: let the waiting tasks in sooner. The slice is cut
	 * here, not when the task is queued: a task dispatched from a
	 * crowded deque keeps the full slice until the next tick finds
	 * others waiting, then runs at most min_slice() more, or
	 * lat_slice_ns near a task woken from an interrupt (lat_cut()).
	 * A grace granted now is not cut: it is the section's bound.
	 */
	cut = lat_cut(p, cpu);
	if (!graced && p->scx.slice > cut) {
		scx_bpf_task_set_slice(p, cut);
		STAT_INC(nr_short_slices);
		if (cut < min_slice())
			STAT_INC(nr_lat_slices);
	}
	slice_end_arm(cpu, p);

	/* Catch-all for a missed thief kick: wake one idle CPU to steal. */
	if (cpu_ctx(cpu)->unstealable || !mask_test(cpu) ||
	    !bpf_ksym_exists(scx_bpf_get_online_cpumask))
		return;
	online = scx_bpf_get_online_cpumask();
	thief = scx_bpf_pick_idle_cpu(online, 0);
	scx_bpf_put_cpumask(online);
	if (thief >= 0 && thief != cpu)
		kick_idle_thief(thief, cpu);
}

/*
 * The hint part reads @from's slot once, first (wsched_hint_yield_begin():
 * a target it names, or a yield-to-all), and records a yield that gives the
 * CPU up, last (wsched_hint_yield_end()); the choice between is here. A
 * sched_yield() its caller declared plain (hint_yield_declared_plain())
 * needs the slot only for that record: it is looked up only then.
 */
bool BPF_STRUCT_OPS(wsched_yield, struct task_struct *from, struct task_struct *to)
{
	struct hint_yield hy = {};
	struct task_struct *t = NULL;
	bool declared_plain = !to && hint_yield_declared_plain(from);

	if (!declared_plain)
		t = wsched_hint_yield_begin(from, to, &hy);
	if (!to) {
		if (t) {
			STAT_INC(nr_yield_hint);
			if (yield_towards(from, t, true))
				STAT_INC(nr_yield_hint_handoff);
			bpf_task_release(t);
		} else if (hy.to_all) {
			yield_behind_all(from);
		} else if (!yield_behind_head(from) && !scx_bpf_dsq_nr_queued(WS_DSQ_LOCAL)) {
			/* A plain yield that nobody waits behind on this CPU
			 * keeps it: it returns at once, as under EEVDF,
			 * instead of a trip through stopping, enqueue and
			 * dispatch that picks the yielder again. (A
			 * yield-to-all still takes the trip: a THIEF's
			 * dispatch may pull a queued WORKER of its process.) */
			if (declared_plain)
				STAT_INC(nr_yield_plain_kept);
			wsched_hint_yield_end(from, &hy, false);
			return false;
		}
		if (declared_plain)
			wsched_hint_yield_lookup(from, &hy);
		scx_bpf_task_set_slice(from, 0);
		wsched_hint_yield_end(from, &hy, true);
		return false;
	}
	STAT_INC(nr_yield_to);
	if (!yield_towards(from, to, false))
		return false;
	wsched_hint_yield_end(from, &hy, true);
	return true;
}

/*
 * The run that starts here is recorded per CPU, which costs no task
 * storage lookup on a context switch: ws_cpu.cur_sum holds @p's
 * sum_exec_runtime (the kernel's own account of its CPU time, brought up
 * to date before every ops.stopping) for the charge and current_vtime(),
 * ws_cpu.cur_start the start time for worker preference. The clock is read only
 * while some process is registered, the only time worker preference acts
 * (a run that started before the first registration counts as long enough
 * to preempt, once). The CPU is @p's, not necessarily this one: a property
 * change of a running task (nice, affinity) stops and restarts it from the
 * CPU that made the change, and indexing by that CPU would let a task that
 * keeps renicing a running thread overwrite its own entry and never be
 * charged.
 */
void BPF_STRUCT_OPS(wsched_running, struct task_struct *p)
{
	s32 cpu = task_cpu_of(p);

	cpu_ctx(cpu)->cur_sum = p->se.sum_exec_runtime;
	cpu_ctx(cpu)->cur_slot = cg_task_slot(p);
	cpu_ctx(cpu)->cur_factor = cg_slot_factor(cpu_ctx(cpu)->cur_slot);
	cpu_ctx(cpu)->cur_charged = p->se.sum_exec_runtime;
	if (cpu_ctx(cpu)->wake_kicked)
		cpu_ctx(cpu)->wake_kicked = 0;
	if (hints_live())
		cpu_ctx(cpu)->cur_start = scx_bpf_now();
	cpu_run_start(cpu, p);
	if (cpu_ctx(cpu)->queued_worker.pid == (u32)p->pid)
		cpu_ctx(cpu)->queued_worker.pid = 0;
}

/*
 * Charges the run that ops.running started on @p's CPU. A stop without
 * that start (a task already running when the scheduler was loaded) finds
 * another pid in ws_cpu.cur_id and is not charged.
 */
void BPF_STRUCT_OPS(wsched_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = task_cpu_of(p);
	u64 sum = p->se.sum_exec_runtime, ran, charge, vt;

	if (cpu_run_pid(cpu) != (u32)p->pid)
		return;
	cpu_run_end(cpu);
	cg_charge(cpu, sum);
	ran = sum - cpu_ctx(cpu)->cur_sum;
	if ((s64)ran <= 0)
		return;
	charge = thief_charge(ran, wsched_hint_stopping(p, runnable));
	vt = p->scx.dsq_vtime;
	vtime_now_advance(vt, ran);
	charge = cg_scale(scale_by_task_weight_inverse(p, charge), cpu_ctx(cpu)->cur_factor);
	scx_bpf_task_set_dsq_vtime(p, vtime_clamp(vt + charge));
}

/* Every runnable task's weight is counted in its cgroup, for the shares. */
void BPF_STRUCT_OPS(wsched_runnable, struct task_struct *p, u64 enq_flags)
{
	cg_count(p, p->scx.weight);
}

void BPF_STRUCT_OPS(wsched_quiescent, struct task_struct *p, u64 deq_flags)
{
	cg_count(p, -(s64)p->scx.weight);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(wsched_cgroup_init, struct cgroup *cgrp,
			     struct scx_cgroup_init_args *args)
{
	cg_init(cgrp, args->weight, args->bw_period_us, args->bw_quota_us, args->bw_burst_us);
	if (bpf_core_field_exists(args->sched_idle) && args->sched_idle)
		cg_set_idle(cgrp, true);
	return 0;
}

void BPF_STRUCT_OPS(wsched_cgroup_exit, struct cgroup *cgrp)
{
	cg_exit(cgrp);
}

void BPF_STRUCT_OPS(wsched_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	cg_set_weight(cgrp, weight);
}

void BPF_STRUCT_OPS(wsched_cgroup_set_idle, struct cgroup *cgrp, bool idle)
{
	cg_set_idle(cgrp, idle);
}

void BPF_STRUCT_OPS(wsched_cgroup_set_bandwidth, struct cgroup *cgrp, u64 period_us,
		    u64 quota_us, u64 burst_us)
{
	cg_set_bandwidth(cgrp, period_us, quota_us, burst_us);
}

void BPF_STRUCT_OPS(wsched_enable, struct task_struct *p)
{
	scx_bpf_task_set_dsq_vtime(p, vtime_now);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(wsched_init)
{
	s32 ret;
	u32 i;

	if (!nr_cpus || nr_cpus > WSCHED_MAX_CPUS) {
		scx_bpf_error("nr_cpus %u out of range", nr_cpus);
		return -EINVAL;
	}
	bpf_for(i, 0, nr_cpus) {
		ret = scx_bpf_create_dsq(i, -1);
		if (ret) {
			scx_bpf_error("failed to create the deque of CPU %u (%d)", i, ret);
			return ret;
		}
	}
	ret = run_cuts_init();
	if (ret) {
		scx_bpf_error("failed to set up the wakeup cut timers (%d)", ret);
		return ret;
	}
	ret = cg_timer_init();
	if (ret)
		scx_bpf_error("failed to set up the cgroup share timer (%d)", ret);
	return ret;
}

void BPF_STRUCT_OPS(wsched_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(wsched_ops,
	       .select_cpu	= (void *)wsched_select_cpu,
	       .enqueue		= (void *)wsched_enqueue,
	       .dispatch	= (void *)wsched_dispatch,
	       .tick		= (void *)wsched_tick,
	       .yield		= (void *)wsched_yield,
	       .running		= (void *)wsched_running,
	       .stopping	= (void *)wsched_stopping,
	       .runnable	= (void *)wsched_runnable,
	       .quiescent	= (void *)wsched_quiescent,
	       .cgroup_init	= (void *)wsched_cgroup_init,
	       .cgroup_exit	= (void *)wsched_cgroup_exit,
	       .cgroup_set_weight	= (void *)wsched_cgroup_set_weight,
	       .cgroup_set_bandwidth	= (void *)wsched_cgroup_set_bandwidth,
	       .cgroup_set_idle	= (void *)wsched_cgroup_set_idle,
	       .flags		= SCX_OPS_ENQ_LAST,
	       .enable		= (void *)wsched_enable,
	       .init		= (void *)wsched_init,
	       .exit		= (void *)wsched_exit,
	       .name		= "wsched");
