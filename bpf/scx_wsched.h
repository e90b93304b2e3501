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

/* Tunable ranges (the loader refuses values outside them). */
#define WSCHED_SLICE_US_DFL	20000
#define WSCHED_SLICE_US_MIN	100
#define WSCHED_SLICE_US_MAX	100000
#define WSCHED_GRACE_US_DFL	1000	/* --grace-us; 0 disables the grace */
#define WSCHED_GRACE_US_MAX	4000

/*
 * Per-CPU event counters, the value of the one-entry per-CPU array
 * `wsched_stats`. Documentation/scheduler.md describes each field; keep the
 * order in sync with stat_names[] in the loader (scx_wsched.c).
 */
struct wsched_stats {
	__u64 nr_enqueued;		/* ops.enqueue() inserted into a CPU deque */
	__u64 nr_direct_dispatch;	/* select_cpu found an idle CPU: straight to its local DSQ */
	__u64 nr_dispatched_local;	/* a CPU took a task from its own deque */
	__u64 nr_steal_attempts;	/* a thief tried a victim deque that looked non-empty */
	__u64 nr_steals;		/* ... and moved a task from it */
	__u64 nr_steals_remote_llc;	/* steals from a deque in another LLC */
	__u64 nr_steals_balance;	/* steals by a busy CPU whose task ran ahead in vtime */
	__u64 nr_kicks;			/* CPUs kicked: the owner of a deque, or an idle thief */
	__u64 nr_keep_running;		/* nothing better to run: the previous task got a new slice */
	__u64 nr_short_slices;		/* slices shortened because the target deque was loaded */
	__u64 nr_dispatch_idle;		/* dispatch found nothing: the CPU goes idle */
	__u64 nr_yield_to;		/* ops.yield() with a target (yield_to()) */
	__u64 nr_yield_to_handoff;	/* ... the target was moved here and ran next */
	__u64 nr_yield_to_boost;	/* ... the target could not run here: moved to the head of its own CPU */
	__u64 nr_yield_to_unfair;	/* ... declined: the target is too far ahead in vtime of those it would jump */
	__u64 nr_yield_hint;		/* sched_yield() naming a target of its own process in a hint slot */
	__u64 nr_yield_hint_handoff;	/* ... the target was found queued and runs next */
	__u64 nr_yield_all;		/* sched_yield() of a registered thread: queued behind this CPU's deque */
	__u64 nr_thief_demotions;	/* runs of a THIEF-state thread charged WS_THIEF_CHARGE x in vtime */
	/* Hints (Documentation/abi.md). */
	__u64 nr_grace_granted;		/* a task in a critical section got a grace slice */
	__u64 nr_grace_overrun;		/* ... and was still in that section when it ran out */
	__u64 nr_hint_malformed;	/* a slot of the task with a bad version, depth or state */
	__u64 nr_cs_preempted;		/* descheduled while runnable inside a marked critical section */
	/* Worker preference (prefer_worker() in scx_wsched.bpf.c). */
	__u64 nr_worker_idle_kicks;	/* a WORKER queued behind others: an idle CPU woken to take it */
	__u64 nr_thief_preempted;	/* ... none idle: a running thief of its process made way for it */
	__u64 nr_thief_preempt_stale;	/* ... but it had stopped or entered a section by then */
	__u64 nr_wake_sync_local;	/* a sync wakee queued on its waker's CPU (its deque, stealable) */
	__u64 nr_yield_head;		/* sched_yield() of an unregistered task: the deque's head runs next */
	__u64 nr_cs_yielded;		/* of nr_cs_preempted: it gave the CPU up itself (sched_yield, yield_to) */
	__u64 nr_grace_yielded;		/* a graced task left its section and yielded (grace_pending) */
	__u64 nr_worker_pulled;		/* a THIEF's CPU, its slice over, ran a queued WORKER of its process */
	__u64 nr_hint_announced;	/* a thread's slot outside its probe window, learnt from its header */
	__u64 nr_yield_to_foreign;	/* a yield_to() declined: its target waits on a CPU running another process */
};

#define WSCHED_NR_STATS (sizeof(struct wsched_stats) / sizeof(__u64))

#endif /* __SCX_WSCHED_H */
