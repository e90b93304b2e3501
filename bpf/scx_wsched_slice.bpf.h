/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched slices. Every task starts a run with --slice-us (a THIEF
 * with thief_slice(), scx_wsched_worker.bpf.h). ops.tick cuts a running
 * task's slice to min_slice() when others wait behind it, or to
 * lat_slice_ns while a user task woken from an interrupt was queued on
 * that CPU within a base slice (lat_wake_note(), lat_cut()), and, while
 * such a wakee is recent on any CPU, arms a timer that ends the run when
 * its slice does (slice_ends) instead of at the tick after. The run-end
 * timer (struct wake_cut) serves wakeup preemption too
 * (scx_wsched_preempt.bpf.h). ws_irq_wakeup() says whether a wakee waits
 * for time: woken from an interrupt, and not the scheduler's own loader.
 */
#ifndef __SCX_WSCHED_SLICE_BPF_H
#define __SCX_WSCHED_SLICE_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_hint.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_tunables.bpf.h"

/* When any CPU last queued such a wakee, with or without the shorter cut:
 * the slice timer is armed only while that is recent (slice_end_arm()).
 * Written only when a CPU finds it older than LAT_ANY_STALE, so a stream
 * of such wakeups does not bounce its cache line between CPUs;
 * unsynchronised like ws_cpu.lat_wake_at. */
static u64 lat_any_at;
#define LAT_ANY_STALE	(1000 * 1000ULL)	/* 1 ms */

/*
 * Is @p, waking, woken from an interrupt (woken_in_irq()) as a task that
 * waits for time? Not the scheduler's own loader (loader_tgid): it wakes
 * every 100 ms from its poll's timeout to print its counters and to see
 * whether the scheduler has exited, not for anyone waiting on it; counted
 * so, it would keep the slice timer (slice_ends) armed and its CPU's
 * slices cut to lat_slice_ns for a base slice after each of them, on a
 * machine with no task that waits for time: a build's or hackbench's.
 */
static __always_inline bool ws_irq_wakeup(struct task_struct *p)
{
	return woken_in_irq() && (!loader_tgid || (u32)p->tgid != loader_tgid);
}

/*
 * A run's end on time: one timer per CPU in each of two maps of struct
 * wake_cut (slice_ends here, wake_cuts in scx_wsched_preempt.bpf.h, keyed
 * by the CPU), for what the kernel would notice only at the tick after it
 * is due (a tick is 1-10 ms). The run is named by its task and by
 * se.sum_exec_runtime at its start (ws_cpu.cur_id, ws_cpu.cur_sum): when
 * the timer fires, it kicks the CPU only if that run is still on it and
 * its deque still holds a task; the CPU's dispatch then picks by vtime,
 * as after any slice. A timer armed for a run is not armed again for it
 * until it fires (arming with interrupts off, as from ops.enqueue, costs
 * the kernel an irq_work), so a stream of reasons arms it at most once
 * per run. pid and sum are written by whichever CPU arms and read by the
 * callback without synchronisation: a torn or stale pair costs one
 * needless reschedule or leaves the run to its (cut) slice.
 */
struct wake_cut {
	struct bpf_timer timer;
	u64 sum;
	u32 pid;
};

/*
 * Does the run of the task whose kernel pid is @pid, which a run-cut timer
 * is about to end, get a grace instead (hint_cut_grace(): inside a
 * critical section, and neither this run nor this section had one)?
 */
static __always_inline bool run_cut_graced(u32 pid)
{
	struct task_struct *t;
	bool graced;

	if (!hints_live())
		return false;
	t = bpf_task_from_pid((s32)pid);
	if (!t)
		return false;
	graced = hint_cut_grace(t);
	bpf_task_release(t);
	return graced;
}

/*
 * A struct wake_cut's timer fired for @cpu: kick the CPU if the run it was
 * armed for is still on it and its deque holds a task. A run inside a
 * critical section gets the lock holder's grace first, as at a tick
 * (run_cut_graced()): the timer is armed again for the grace's end, when
 * it kicks the same run whatever its section (the grace is used), unless
 * the run ended by then (the library yields on leaving the section).
 * SCX_KICK_PREEMPT ends a slice without a tick, so without this a timer
 * would preempt a lock holder that the tick would have graced. Whether it
 * kicked.
 */
static __always_inline bool run_cut_kick(u32 cpu, struct wake_cut *wc)
{
	u32 pid = wc->pid;

	wc->pid = 0;		/* fired: it may be armed again */
	if (cpu >= nr_cpus || !pid || cpu_run_pid(cpu) != pid ||
	    cpu_ctx(cpu)->cur_sum != wc->sum || !scx_bpf_dsq_nr_queued(cpu))
		return false;
	if (run_cut_graced(pid)) {
		STAT_INC(nr_cut_graced);
		wc->pid = pid;
		if (bpf_timer_start(&wc->timer, grace_ns, 0))
			wc->pid = 0;	/* the grace's slice ends it at a tick */
		return false;
	}
	scx_bpf_kick_cpu(cpu, WS_KICK_PREEMPT);
	return true;
}

/*
 * Arm @wc's timer to end @p's current run on @cpu in @left ns, unless it
 * is armed for that run already. Whether it was armed now.
 */
static __always_inline bool run_cut_start(struct wake_cut *wc, s32 cpu, struct task_struct *p,
					  u64 left)
{
	if (wc->pid == (u32)p->pid && wc->sum == cpu_ctx(cpu)->cur_sum)
		return false;
	wc->pid = p->pid;
	wc->sum = cpu_ctx(cpu)->cur_sum;
	if (!bpf_timer_start(&wc->timer, left, 0))
		return true;
	wc->pid = 0;
	return false;
}

/*
 * The end of a slice on a crowded CPU, on time. The kernel ends a
 * sched_ext task's slice at the first tick after it ran out (a tick is
 * 1-10 ms), where EEVDF arms a timer for it (HRTICK). When the last tick
 * before a slice runs out (one tick period, tick_gap_ns, or less left;
 * the slice cut to min_slice() by then) finds tasks waiting behind the
 * run, it arms this CPU's timer for the rest of that slice, once per run;
 * the timer kicks the CPU (SCX_KICK_PREEMPT) if the same run is still on
 * it and tasks still wait, as wake_cut_fire() does. So a task runs until
 * the first tick that finds others waiting, then min_slice(), not up to a
 * tick more. Armed from a tick only, never at a switch: a run that ends
 * before its last tick (a pipe's or hackbench's) costs nothing, and a run
 * on a crowded CPU that uses its slice costs one timer and the irq_works
 * of its arming (with interrupts off) and kick.
 * Armed only while a user task woken from an interrupt was queued on any
 * CPU within the last base slice (lat_any_at, set by lat_wake_note()):
 * what a run ended on time buys is a prompt start for a task that waits
 * for time (a timer's, a device's), and where none is around, as in a
 * build or a load of tasks waking one another, the tick's end costs
 * nothing anyone waits for. Any CPU's such wakeup, not only this one's:
 * the CPU such a task wakes onto next is chosen at that wakeup, and the
 * run it finds there had its end decided at an earlier tick. A process
 * that arms timers to keep the mark set makes runs end as they would with
 * the mark always set, no more.
 * A registered process's run keeps its slice as ticks end it: its graced
 * critical sections and its workers' runs are the hint rules' to decide
 * (wsched_hint_tick()).
 * The entries are struct wake_cut: the run is named the same way.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WSCHED_MAX_CPUS);
	__type(key, u32);
	__type(value, struct wake_cut);
} slice_ends SEC(".maps");

/*
 * The tick's period (1/HZ), learnt rather than configured (CONFIG_HZ is
 * not readable everywhere): nanoseconds per jiffy over the first
 * TICK_LEARN_JIFFIES jiffies that ops.tick sees go by; 0 until then
 * (slice_end_arm() then arms at every tick it is called from). Not the
 * gap between two ticks of a CPU: a tick that came late (an emulated
 * CPU's, or one behind interrupts off) is followed by a short gap. The
 * base is written by whichever CPU ticks first, without synchronisation:
 * a torn pair gives a period outside [TICK_NS_MIN, TICK_NS_MAX], which
 * starts over.
 */
#define TICK_LEARN_JIFFIES	64
#define TICK_NS_MIN		(500 * 1000ULL)		/* HZ 2000 */
#define TICK_NS_MAX		(20 * 1000 * 1000ULL)	/* HZ 50 */
static u64 tick_gap_ns, tick_base_ns, tick_base_j;

/* From ops.tick: learn the tick's period (tick_gap_ns), once. */
static __always_inline void tick_gap_learn(void)
{
	u64 j, now, d, gap;

	if (tick_gap_ns)
		return;
	j = bpf_jiffies64();
	now = bpf_ktime_get_ns();
	d = j - tick_base_j;
	if (!tick_base_j || (s64)d < 0) {
		tick_base_j = j;
		tick_base_ns = now;
		return;
	}
	if (d < TICK_LEARN_JIFFIES)
		return;
	gap = (now - tick_base_ns) / d;
	if (gap >= TICK_NS_MIN && gap <= TICK_NS_MAX)
		tick_gap_ns = gap;
	else
		tick_base_j = 0;
}

static int slice_end_fire(void *map, int *key, struct wake_cut *wc)
{
	if (run_cut_kick(*key, wc))
		STAT_INC(nr_slice_end_kicks);
	return 0;
}

/* Was the mark @at (bpf_ktime_get_ns(), 0: never) set within the last base
 * slice? lat_any_at for the slice timer, ws_cpu.lat_wake_at for the shorter
 * cut. */
static __always_inline bool lat_recent(u64 at)
{
	return at && (s64)(bpf_ktime_get_ns() - at) < (s64)slice_ns;
}

/* From ops.tick, tasks waiting on @cpu's deque: end @p's run when its
 * slice does (see slice_ends). */
static __always_inline void slice_end_arm(s32 cpu, struct task_struct *p)
{
	u64 gap = tick_gap_ns;
	u32 key = cpu;
	struct wake_cut *se;

	if (!slice_end_timer || !p->scx.slice || (gap && p->scx.slice >= gap) ||
	    !lat_recent(lat_any_at))
		return;
	se = bpf_map_lookup_elem(&slice_ends, &key);
	if (se && cpu_run_pid(cpu) == (u32)p->pid &&
	    run_cut_start(se, cpu, p, p->scx.slice))
		STAT_INC(nr_slice_ends);
}

/* Set up entry @i's timer of the struct wake_cut map @map, to call @fire;
 * 0 or an error. A macro: the map and the callback must be constants to
 * the verifier. */
#define RUN_CUT_SETUP(map, i, fire) ({						\
	struct wake_cut *__wc = bpf_map_lookup_elem(&(map), &(i));		\
	s32 __ret = -ENOENT;							\
										\
	if (__wc) {								\
		__ret = bpf_timer_init(&__wc->timer, &(map), CLOCK_MONOTONIC);	\
		if (!__ret)							\
			__ret = bpf_timer_set_callback(&__wc->timer, fire);	\
	}									\
	__ret;									\
})

/* Set up CPU @i's slice timer (ops.init); 0 or an error. */
static __always_inline s32 slice_end_init(u32 i)
{
	return RUN_CUT_SETUP(slice_ends, i, slice_end_fire);
}

/*
 * Slices near a task that waits for time. A user task woken from an
 * interrupt (a timer's expiry, a device: ws_irq_wakeup()) queued on @cpu's
 * deque marks the CPU for a base slice (lat_wake_note()); while marked, a
 * crowded CPU cuts the slices of the tasks it runs to lat_slice_ns instead
 * of min_slice() (lat_cut(), from ops.tick). Such a task preempts the
 * running one when it is earlier in vtime (wake_preempt()); when it is not
 * (it has had more than its share lately, or others lag further), it
 * waits for the runs of those before it, and these are now short. Loads
 * whose tasks wake one another (pipes, sockets, futexes: hackbench, a
 * build) keep the longer cut and their throughput; kernel threads woken by
 * timers (kworkers, RCU) do not mark a CPU, or nearly every CPU would be
 * marked. A fork/join worker or any thread of a registered process keeps
 * min_slice(): its slices are the hint rules'. Any such wakeup also sets
 * lat_any_at, which the slice timer follows (slice_ends), with or without
 * the shorter cut.
 * Why it cannot be gamed: it only shortens the runs of every task on the
 * CPU, the marking task's too; shares still follow vtime. A process that
 * arms timers to mark a CPU costs that CPU's other tasks at most one more
 * switch per lat_slice_ns of their run, fewer than its timer wakeups could
 * already cost them by preempting (one per wake_preempt_ns of run).
 */
static __always_inline void lat_wake_note(struct task_struct *p, s32 cpu, bool irq)
{
	u64 now;

	if (!irq || (p->flags & WS_PF_KTHREAD))
		return;
	now = bpf_ktime_get_ns();
	if ((s64)(now - lat_any_at) >= (s64)LAT_ANY_STALE)
		lat_any_at = now;
	if (lat_slice_ns < min_slice())
		cpu_ctx(cpu)->lat_wake_at = now;
}

/* The slice ops.tick cuts @p's to on @cpu, whose deque holds tasks. */
static __always_inline u64 lat_cut(struct task_struct *p, s32 cpu)
{
	if (lat_slice_ns >= min_slice() || !lat_recent(cpu_ctx(cpu)->lat_wake_at))
		return min_slice();
	return lat_slice_ns;
}

#endif /* __SCX_WSCHED_SLICE_BPF_H */
