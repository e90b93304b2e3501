/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Types shared by scx_wsched.bpf.c (BPF) and scx_wsched.c (loader, tests).
 * Fixed-size types only: both sides see the same layout.
 */
#ifndef __SCX_WSCHED_H
#define __SCX_WSCHED_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define WSCHED_VERSION		"0.1.0"
#define WSCHED_STATS_VERSION	2

/* Array bounds for the topology tables the loader fills in (rodata). */
#define WSCHED_MAX_CPUS		512	/* power of two: indices are masked */
#define WSCHED_MAX_LLCS		WSCHED_MAX_CPUS

/*
 * Buckets of the registered processes' tgids (tgid % WSCHED_TGID_BUCKETS,
 * a power of two), counted by the loader in the BPF object's bss
 * (hint_tgid_buckets) so that a task of an unregistered process skips the
 * hint lookups (scx_wsched_hint.bpf.h).
 */
#define WSCHED_TGID_BUCKETS	4096

/* Execs of processes perhaps registered that wait for the loader to drop
 * their registration at once (hint_execd, scx_wsched_hint.bpf.h). */
#define WSCHED_EXECD_MAX	4096

/*
 * Cgroups with the cpu controller, each in a slot of the BPF array map
 * `wsched_cgroups` (slot 0: the root), readable with bpftool and by the
 * loader. A cgroup beyond WSCHED_MAX_CGROUPS slots or WSCHED_MAX_CG_LEVEL
 * levels is scheduled as part of its parent (nr_cgroups_flattened).
 */
#define WSCHED_MAX_CGROUPS	1024
#define WSCHED_MAX_CG_LEVEL	16
#define WSCHED_CG_FX_SHIFT	16	/* struct wsched_cgroup.factor: 1 << 16 is 1 */
#define WSCHED_CG_HW_SHIFT	30	/* .hw: 1 << 30 is the whole machine */

struct wsched_cgroup {
	__u64 id;		/* the cgroup's id (its inode number); 0: free */
	__s32 parent;		/* the parent's slot; -1 for the root */
	__u32 level;		/* depth: 0 for the root */
	__u32 weight;		/* cpu.weight, 1..10000 */
	__u32 factor;		/* a run of its tasks is charged 1/factor of its vtime */
	__u64 hw;		/* its share of the machine while it has runnable work */
	__u64 own;		/* summed weight of its own runnable tasks (last refresh) */
	__u64 sum;		/* own + the weights of its children with runnable work */
	__u32 active;		/* it or a descendant had runnable tasks (last refresh) */
	__u32 limited;		/* it or an ancestor has a cpu.max quota */
	__u32 idle;		/* cpu.idle: it competes at weight 1 */
	__u32 pad;
	/* cpu.max and cpu.max.burst (quota_ns 0: max) */
	__u64 period_ns;
	__u64 quota_ns;
	__u64 burst_ns;
	__s64 budget;		/* CPU time left in this period; below 0: overrun */
	__u64 period_end;
	__u64 throttled_at;	/* when its quota ran out; 0: not throttled */
	__u64 throttled_ns;	/* time spent throttled (to the last refresh) */
	__u64 nr_throttled;	/* times its quota ran out */
	/* CPU time of its tasks and its descendants' since the load, as
	 * cpu.stat's usage_usec (to the last refresh: 50 ms at most) */
	__u64 usage_ns;
	__u64 usage_gone;	/* ... of its descendants that were removed */
};

/* Tunable ranges (the loader refuses values outside them). */
#define WSCHED_SLICE_US_DFL	20000
#define WSCHED_SLICE_US_MIN	100
#define WSCHED_SLICE_US_MAX	100000
#define WSCHED_SLICE_LAT_US_DFL	1000	/* --slice-lat-us, unless the minimum slice is less */
#define WSCHED_WAKE_PREEMPT_US_DFL	30
#define WSCHED_GRACE_US_DFL	1000	/* --grace-us; 0 disables the grace */
#define WSCHED_GRACE_US_MAX	4000

/*
 * Per-CPU event counters, the value of the one-entry per-CPU array
 * `wsched_stats`, listed once: WSCHED_STATS(X) expands X(name) for each
 * field in struct order, so the struct, the loader's names (--stats, --json,
 * --monitor) and anything else that walks the counters come from this list.
 * Documentation/scheduler.md describes each field. A new counter goes at
 * the end: the loader reads the struct as an array of __u64, and --monitor
 * may read the map of a scheduler loaded by an older loader.
 */
#define WSCHED_STATS(X) \
	X(nr_enqueued)		/* ops.enqueue() inserted into a CPU deque */ \
	X(nr_direct_dispatch)	/* select_cpu found an idle CPU: straight to its local DSQ */ \
	X(nr_dispatched_local)	/* a CPU took a task from its own deque */ \
	X(nr_steal_attempts)	/* a thief tried a victim deque that looked non-empty */ \
	X(nr_steals)		/* ... and moved a task from it */ \
	X(nr_steals_remote_llc)	/* steals from a deque in another LLC */ \
	X(nr_steals_balance)	/* steals by a busy CPU whose task ran ahead in vtime */ \
	X(nr_kicks)		/* CPUs kicked: the owner of a deque, or an idle thief */ \
	X(nr_keep_running)	/* nothing better to run: the previous task got a new slice */ \
	X(nr_short_slices)	/* slices shortened because the target deque was loaded */ \
	X(nr_dispatch_idle)	/* dispatch found nothing: the CPU goes idle */ \
	X(nr_yield_to)		/* ops.yield() with a target (yield_to()) */ \
	X(nr_yield_to_handoff)	/* ... the target was moved here and ran next */ \
	X(nr_yield_to_boost)	/* ... the target could not run here: moved to the head of its own CPU */ \
	X(nr_yield_to_unfair)	/* ... declined: the target would jump a head on no place before it */ \
	X(nr_yield_hint)	/* sched_yield() naming a target of its own process in a hint slot */ \
	X(nr_yield_hint_handoff)	/* ... the target was found queued and runs next */ \
	X(nr_yield_all)		/* sched_yield() of a registered thread: queued behind this CPU's deque */ \
	X(nr_thief_demotions)	/* runs of a THIEF-state thread charged WS_THIEF_CHARGE x in vtime */ \
	/* Hints (Documentation/abi.md). */ \
	X(nr_grace_granted)	/* a task in a critical section got a grace slice */ \
	X(nr_grace_overrun)	/* ... and was still in that section when it ran out */ \
	X(nr_hint_malformed)	/* a slot of the task with a bad version, depth or state */ \
	X(nr_cs_preempted)	/* descheduled while runnable inside a marked critical section */ \
	/* Worker preference (prefer_worker() in scx_wsched_worker.bpf.h). */ \
	X(nr_worker_idle_kicks)	/* a WORKER queued behind others: an idle CPU woken to take it */ \
	X(nr_thief_preempted)	/* ... none idle: a running thief of its process made way for it */ \
	X(nr_thief_preempt_stale)	/* ... but it had stopped or entered a section by then */ \
	X(nr_wake_sync_local)	/* a sync wakee queued on its waker's CPU (its deque, stealable) */ \
	X(nr_yield_head)	/* sched_yield() of an unregistered task: the deque's head runs next */ \
	X(nr_cs_yielded)	/* of nr_cs_preempted: it gave the CPU up itself (sched_yield, yield_to) */ \
	X(nr_grace_yielded)	/* a graced task left its section and yielded (grace_pending) */ \
	X(nr_worker_pulled)	/* a THIEF's CPU, its slice over, ran a queued WORKER of its process */ \
	X(nr_hint_announced)	/* a thread's slot outside its probe window, learnt from its header */ \
	X(nr_yield_to_foreign)	/* a yield_to() declined: its target waits on a CPU running another process */ \
	X(nr_wake_preempt)	/* a wakee earlier in vtime preempted the task its CPU ran */ \
	X(nr_wake_cuts)		/* a run too young to preempt for a wakee, or on a CPU at its rate bound, got a timer to end it */ \
	X(nr_wake_cut_kicks)	/* ... which fired with that run still on its CPU and kicked it */ \
	X(nr_yield_plain_kept)	/* a sched_yield() declared plain kept its CPU, no slot read */ \
	X(nr_slice_ends)	/* a run on a crowded CPU got a timer to end it when its slice does */ \
	X(nr_slice_end_kicks)	/* ... which fired with that run still on its CPU and kicked it */ \
	X(nr_lat_slices)	/* slices cut to --slice-lat-us: a task woken from an interrupt was queued */ \
	X(balance_lag_us)	/* summed vtime lag (us) of the heads stolen for balance, behind the thief's next */ \
	X(nr_steals_balance_early)	/* of nr_steals_balance, CPU-bound heads lagging under a base slice */ \
	X(nr_wakee_first)	/* a wakee kicked to preempt ran before that dispatch's balance check */ \
	X(nr_migrate_placed)	/* a task the kernel moved between CPUs lost its lag against its new CPU's */ \
	X(nr_wake_rate_bound)	/* a wakeup preemption waited for its CPU's rate bound (kick_wait()) */ \
	X(nr_cgroups_flattened)	/* cgroups scheduled as part of their parent: no slot or too deep */ \
	X(nr_cg_refreshes)	/* recomputations of the cgroups' shares (cg_refresh()) */ \
	X(nr_cg_parked)		/* a task of a throttled cgroup queued to wait for its next period */ \
	X(nr_cg_released)	/* ... moved back to its CPU's deque when the period came */ \
	X(nr_cut_graced)	/* a run-cut timer found its run in a critical section: a grace first */ \
	X(nr_fork_placed)	/* a new task placed level with the earliest task of its first CPU */

struct wsched_stats {
#define WSCHED_STAT_FIELD(name) __u64 name;
	WSCHED_STATS(WSCHED_STAT_FIELD)
#undef WSCHED_STAT_FIELD
};

#define WSCHED_NR_STATS (sizeof(struct wsched_stats) / sizeof(__u64))

#endif /* __SCX_WSCHED_H */
