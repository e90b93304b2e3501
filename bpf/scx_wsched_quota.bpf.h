/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched cpu.max: a cgroup with quota Q per period P runs at most Q
 * per P, on all CPUs together, however many threads it runs. Every run of
 * a task is charged to each quota on its cgroup's path (cg_consume(): at
 * ops.tick for the run so far, and at ops.stopping); a quota used up
 * throttles its cgroup: its running tasks end their slice at the next tick
 * (cg_tick()), and ops.enqueue parks every task of it in the cgroup's own
 * deque (CG_DSQ()), which no CPU dispatches from and no thief steals from,
 * so a throttled task neither runs nor counts as waiting work, for
 * stealing or for wakeup preemption. The share timer (every CG_PERIOD_NS
 * while a quota exists) starts each cgroup's next period on time: the
 * budget gets its quota back (what was left over from earlier periods
 * saved up to the burst, cpu.max.burst), and a cgroup with budget again
 * is unthrottled and its parked tasks are moved back to their CPUs'
 * deques (cg_release()). An overrun (a tick's worth per CPU at most, and
 * what a run charged at its stop adds) is paid from the next period's
 * budget, down to one quota of debt, so the long-run rate holds and a
 * cgroup waits at most about two periods (never near the watchdog's 30 s:
 * cpu.max's period is at most a second).
 *
 * Races: the budget is updated atomically; the throttle state is plain
 * stores read without a lock: a task enqueued just as its cgroup is
 * throttled runs once more, until its next tick, and is charged for it; one
 * enqueued just as its cgroup is unthrottled is parked for one more
 * refresh (4 ms).
 */
#ifndef __SCX_WSCHED_QUOTA_BPF_H
#define __SCX_WSCHED_QUOTA_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched.h"
#include "scx_wsched_cgroup.bpf.h"
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_steal.bpf.h"
#include "scx_wsched_vtime.bpf.h"

/* Parked tasks of @slot back to their CPUs' deques, those CPUs kicked. */
static __always_inline void cg_release(u32 slot)
{
	struct task_struct *p;
	s32 cpu;

	bpf_for_each(scx_dsq, p, CG_DSQ(slot), 0) {
		cpu = scx_bpf_task_cpu(p);
		if (cpu < 0 || (u32)cpu >= nr_cpus)
			continue;
		/* its lag bounded as at an enqueue: the wait gains it nothing */
		scx_bpf_dsq_move_set_vtime(BPF_FOR_EACH_ITER, vtime_floor(p->scx.dsq_vtime));
		if (!scx_bpf_dsq_move_vtime(BPF_FOR_EACH_ITER, p, cpu, 0))
			continue;
		STAT_INC(nr_cg_released);
		if (p->nr_cpus_allowed > 1)
			mask_set(cpu);
		scx_bpf_kick_cpu(cpu, WS_KICK_IDLE);
	}
}

/* One slot's period, from the share timer (a global function: verified
 * once). */
__noinline int cg_pass_quota(u32 s, u64 now)
{
	struct wsched_cgroup *cg = cg_at(s);
	s64 old, add, cap;

	if (!s || !cg || !cg->id)
		return 0;
	/* the throttle so far is counted (throttled_at moves up to now) */
	if (cg->throttled_at && time_before(cg->throttled_at, now)) {
		cg->throttled_ns += now - cg->throttled_at;
		cg->throttled_at = now;
	}
	if (!cg->quota_ns) {
		if (cg->throttled_at) {	/* cpu.max set to max */
			cg->throttled_at = 0;
			cg_release(s);
		}
		return 0;
	}
	if (time_before(now, cg->period_end))
		return 0;
	/* budget = min(max(budget, -quota) + quota, quota + burst), added as a
	 * difference: charges of other CPUs may land meanwhile */
	old = cg->budget;
	cap = cg->quota_ns + cg->burst_ns;
	add = (old < -(s64)cg->quota_ns ? -(s64)cg->quota_ns : old) + (s64)cg->quota_ns;
	if (add > cap)
		add = cap;
	__sync_fetch_and_add(&cg->budget, add - old);
	/* the next period starts at the end of this one, or now if it is long
	 * past (the timer slept: no quota is made up for) */
	cg->period_end += cg->period_ns;
	if (time_before(cg->period_end, now))
		cg->period_end = now + cg->period_ns;
	if (cg->throttled_at && cg->budget > 0) {
		cg->throttled_at = 0;
		cg_release(s);
	}
	return 0;
}

static __always_inline void cg_quota_refresh(void)
{
	u32 end = cg_slots_end, s;
	u64 now = scx_bpf_now();

	if (!cg_quotas && !cg_release_due)
		return;
	cg_release_due = 0;	/* before the pass: one set during it waits for the next */
	if (end > WSCHED_MAX_CGROUPS)
		end = WSCHED_MAX_CGROUPS;
	bpf_for(s, 1, end)
		cg_pass_quota(s, now);
}

/*
 * ops.tick of @p on @cpu: its run so far charged to its cgroup (and its
 * quotas); true if its cgroup is throttled, and its slice is ended.
 */
static __always_inline bool cg_tick(struct task_struct *p, s32 cpu)
{
	struct ws_cpu *c = cpu_ctx(cpu);

	if (cpu_run_pid(cpu) != (u32)p->pid)
		return false;
	cg_charge(cpu, p->se.sum_exec_runtime);
	if (cg_throttled(c->cur_slot) < 0)
		return false;
	scx_bpf_task_set_slice(p, 0);
	return true;
}

/* ops.enqueue: a task of a throttled cgroup waits in its deque; true if
 * parked. */
static __always_inline bool cg_park(struct task_struct *p, u64 enq_flags)
{
	s32 t;

	if ((t = cg_task_throttled(p)) < 0)
		return false;
	scx_bpf_dsq_insert_vtime(p, CG_DSQ(t), slice_ns, p->scx.dsq_vtime, enq_flags);
	STAT_INC(nr_cg_parked);
	return true;
}

struct cg_timer {
	struct bpf_timer timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct cg_timer);
} cg_timers SEC(".maps");

/* The share timer: the shares, then the periods of the quotas. */
static int cg_timer_fire(void *map, int *key, struct cg_timer *t)
{
	u64 period = CG_PERIOD_IDLE_NS;

	if (cg_refresh() > 1)
		period = CG_PERIOD_NS;
	if (cg_quotas || cg_release_due) {
		cg_quota_refresh();
		period = CG_PERIOD_NS;
	}
	bpf_timer_start(&t->timer, period, 0);
	return 0;
}

static __always_inline s32 cg_timer_init(void)
{
	struct cg_timer *t;
	u32 zero = 0;
	s32 ret;

	if (!(t = bpf_map_lookup_elem(&cg_timers, &zero)))
		return -ENOENT;
	ret = bpf_timer_init(&t->timer, &cg_timers, CLOCK_MONOTONIC);
	if (!ret)
		ret = bpf_timer_set_callback(&t->timer, cg_timer_fire);
	if (!ret)
		ret = bpf_timer_start(&t->timer, CG_PERIOD_IDLE_NS, 0);
	return ret;
}

#endif /* __SCX_WSCHED_QUOTA_BPF_H */
