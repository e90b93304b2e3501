/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched hints: the scheduler side of the protocol of
 * Documentation/abi.md, included by scx_wsched.bpf.c and the fragments
 * that ask about hints.
 *
 * Every registered process has its own mmapable array of WS_HINT_NR_SLOTS
 * entries (a header, then struct ws_hint_slot); the loader puts it into
 * hint_procs at key = the process's tgid, which it took from SO_PEERCRED.
 * Here a task's slots are found only through hint_procs[p->tgid] (the
 * kernel's tgid), and a slot counts only if its owner_tid is the task's id
 * in its own PID namespace (task_ns_tid(): what gettid() returned to the
 * thread that claimed it, p->pid outside containers): whatever a process
 * writes, it can describe only its own threads. Every field is untrusted:
 * a value out of range is counted in nr_hint_malformed and ignored.
 *
 * This file owns every read of a slot, of a header and of hint_procs, and
 * the observe gate. The rest of the scheduler reads none of them; it calls:
 * - hints_live(): is any process registered? (one load);
 * - hints_live_for(p): may @p's process be? (two loads; false: certainly
 *   not);
 * - hint_in_section(p): is @p inside a critical section? (any task
 *   pointer: loads and probe reads only);
 * - hint_state(p): @p's state (WS_HINT_OTHER: no slot, or observing);
 * - wsched_hint_tick(p): first in ops.tick, the grace;
 * - hint_cut_grace(p): the same grace, for a run-cut timer about to end
 *   @p's run (scx_wsched_slice.bpf.h's run_cut_kick());
 * - in ops.yield: hint_yield_declared_plain(from) first, whether the
 *   caller declared its sched_yield() plain (no slot read); then
 *   wsched_hint_yield_begin() (the slot looked up, a target or
 *   yield-to-all read from it) or, for a declared plain yield that gives
 *   the CPU up, wsched_hint_yield_lookup() (the lookup alone); and
 *   wsched_hint_yield_end() last, around the core's choice;
 * - wsched_hint_stopping(p, runnable): ops.stopping's counts, and whether
 *   @p is a thief to demote;
 * - worker preference's questions about threads of one process
 *   (scx_wsched_worker.bpf.h, scx_wsched_yield.bpf.h's dsq_move_pid()):
 *   hint_proc_slots(), hint_idle_thief_slots(), hint_task_is_idle_thief(),
 *   hint_pid_is_idle_thief(), hint_task_is_worker_in().
 * Nothing untrusted reaches the core unchecked: it gets booleans, a state
 * it only tests for equality with one value, a slot array it only passes
 * back, and a thread the kernel says is of the yielder's own process.
 * Everything else here is internal to this file.
 *
 * Grace (wsched_hint_tick, called first in ops.tick): the kernel's tick
 * charges the running task's slice and, if ops.tick leaves it at 0,
 * reschedules (task_tick_scx in kernel/sched/ext.c). A task whose slot says
 * it is inside a critical section when that happens gets its slice set to
 * grace_ns instead, so it can leave the section before it is preempted:
 * - at most once per run (between two context switches of the task: the
 *   sum of its nvcsw and nivcsw must have changed since the last grace),
 *   and at most once per cs_count value, so a task can never chain graces;
 * - the next tick charges the grace like any slice; if it then still is in
 *   the same section (same cs_count, depth > 0), that is nr_grace_overrun,
 *   and it is preempted as usual;
 * - the grace is run time like any other: wsched_stopping() adds it to the
 *   task's vtime, so a task gains no CPU share from it, only a later
 *   preemption point.
 * The slice is only checked at ticks, so a grace lasts until the first tick
 * after it is used up: grace_ns rounded up to the tick.
 * A run-cut timer (a wakeup preemption's or the slice's end, which kick
 * with SCX_KICK_PREEMPT and so bypass the tick) that finds its run inside
 * a section grants the same grace by the same rules (hint_cut_grace()),
 * then ends the run when the grace does, grace_ns later, not at a tick.
 * The tick's and the timers' graces share the budget: a run has one.
 *
 * Ending the grace with the section (what Linux's proposed rseq time slice
 * extension does): granting a grace sets grace_pending in the task's own
 * slot. The library, leaving the outermost section, sees it, clears it and
 * calls sched_yield(), so the CPU is given back outside the section rather
 * than wherever the grace runs out, which is inside a section as often as
 * the task is in one. That yield is ops.yield's: a registered thread goes
 * behind every task waiting on the CPU (yield_behind_all), so the tasks the
 * grace held up run first. It ends the grace (hc->grace_pending) and,
 * outside any section, counts as nr_grace_yielded; ops.stopping clears the
 * flag of a grace that ended any other way. Only hc->grace_pending, in task
 * storage, says a grace is pending: a process that writes the slot's flag,
 * or never clears it, only makes its own library yield, and graces stay
 * bounded as above. The scheduler writes no slot but that of the task it
 * is ticking, yielding, stopping or granting a timer's grace, found
 * through the kernel's tgid and pid like every read.
 *
 * Observe mode (hint_observe, the loader's --hints-observe): processes
 * register and their slots are read exactly as with hints on, but only to
 * count (nr_cs_preempted, nr_cs_yielded, nr_hint_malformed), so that
 * hints-off and hints-on runs count lock-holder preemptions with the same
 * code. Every function here whose answer a slot decides is gated on it
 * where it reads the slot, whatever its caller asked first: the grace
 * (wsched_hint_tick), a thread's state (hint_state(): the thief's short
 * slice, worker preference), worker preference's questions (none answers
 * when observing), thief demotion (wsched_hint_stopping's return) and the
 * hint-slot sched_yield() paths, yield_to_tid and yield-to-all
 * (wsched_hint_yield_begin()). A directed yield through wsched.ko
 * (ops.yield with a target) takes no decision from a slot.
 */
#ifndef __SCX_WSCHED_HINT_BPF_H
#define __SCX_WSCHED_HINT_BPF_H

#include <scx/common.bpf.h>
#include <wsched/hint.h>
#include "scx_wsched.h"
#include "scx_wsched_stats.bpf.h"

const volatile u64 grace_ns = WSCHED_GRACE_US_DFL * 1000ULL;	/* 0: no grace */
/* Read slots only to count (see the top). rodata: the verifier drops every
 * gated path. */
const volatile bool hint_observe;

/*
 * BTF carries no local variable types, and clang emits the value type of an
 * inner map definition only as a forward declaration; libbpf then cannot
 * size the inner map. This unused global puts the full type into BTF.
 */
struct ws_hint_slot hint_slot_btf_anchor;

/*
 * How many processes hint_procs holds, written by the loader after each
 * insert and delete (bss, mapped by the loader; never written here). While
 * it is 0 no task has a slot, and every hint path returns before its task
 * storage and hint_procs lookups: ops.stopping, ops.enqueue and ops.tick of
 * a machine where no process registered pay one load for hints instead of
 * lookups that would dominate their cost. Racy by design: a process seen a
 * moment late or early behaves as unregistered for that moment, which is
 * always allowed.
 */
volatile u32 hint_procs_live;

static __always_inline bool hints_live(void)
{
	return hint_procs_live != 0;
}

/*
 * How many registered processes have a tgid in each bucket (tgid %
 * WSCHED_TGID_BUCKETS), written by the loader (bss, mapped; never written
 * here): it raises a bucket before it inserts the process's hint_procs
 * entry and lowers it after the entry's deletion returned, so a process
 * that has an entry is never behind a 0 (a bucket shared with one is only
 * a lookup that finds nothing). A task whose bucket is 0 is not in a
 * registered process: the per-task hint paths then return before their
 * task storage and hint_procs lookups, which is what a task of an
 * unregistered process would otherwise pay in every ops.yield, ops.tick
 * and ops.stopping while any other process is registered. Racy like
 * hint_procs_live, and as harmless.
 */
volatile u32 hint_tgid_buckets[WSCHED_TGID_BUCKETS];

/* Is @p perhaps in a registered process? False means certainly not. */
static __always_inline bool hints_live_for(struct task_struct *p)
{
	return hints_live() && hint_tgid_buckets[(u32)p->tgid & (WSCHED_TGID_BUCKETS - 1)];
}

/* The array one process maps; the loader creates one per process. */
struct hint_slots {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, WS_HINT_NR_SLOTS);
	__type(key, u32);
	__type(value, struct ws_hint_slot);
};

/* tgid -> that process's slot array (inserted and deleted by the loader). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, WS_HINT_MAX_PROCS);
	__type(key, u32);
	__array(values, struct hint_slots);
} hint_procs SEC(".maps");

/*
 * Processes that exec'd while they may have been registered, until the
 * loader dropped their registration (tgid -> 1). A registration covers
 * the image that connected: after an exec, whoever kept the array (a
 * helper forked before, holding the mapping) would otherwise steer the new
 * image's threads, a set-id program's among them. wsched_exec() adds the
 * tgid at the exec, before the new image runs, and from then on
 * hint_procs_get() finds no array for it; the loader deletes the
 * hint_procs entry, then this one. hint_execd_live counts the entries
 * (raised here, lowered by the loader after each deletion), so the
 * lookup is paid only while some exec waits for the loader.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WSCHED_EXECD_MAX);
	__type(key, u32);
	__type(value, u32);
} hint_execd SEC(".maps");

volatile u32 hint_execd_live;

/*
 * Set here when an exec found hint_execd full (WSCHED_EXECD_MAX execs of
 * processes in registered buckets between two rounds of the loader): no
 * array counts until the loader has checked every registration again and
 * cleared it. Fails closed, and costs a load.
 */
volatile u32 hint_execd_lost;

/* hint_procs[@tgid], unless the process exec'd since it registered. */
static __always_inline void *hint_procs_get(u32 tgid)
{
	void *slots = bpf_map_lookup_elem(&hint_procs, &tgid);

	if (!slots || hint_execd_lost)
		return NULL;
	if (hint_execd_live && bpf_map_lookup_elem(&hint_execd, &tgid))
		return NULL;
	return slots;
}

struct hint_ctx {
	u32 slot;		/* last slot index that matched; 0 (the header's): none */
	u32 graced;		/* a grace was granted; the fields below are valid */
	u64 grace_cs_count;	/* cs_count when the grace was granted */
	u64 grace_switches;	/* nvcsw + nivcsw then */
	u32 overrun_counted;	/* nr_grace_overrun already counted for it */
	u32 yielded;		/* gave its CPU up by a yield that its next stop follows */
	u32 grace_pending;	/* the grace is running and the slot's flag was set */
	u32 tid_pid;		/* p->pid when ns_tid was read; 0: not read */
	u32 ns_tid;		/* task_ns_tid() then */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct hint_ctx);
} hint_ctxs SEC(".maps");

#define WS_PID_NS_LEVEL_MAX	32	/* the kernel's MAX_PID_NS_LEVEL */

/*
 * @p's thread id in its own PID namespace, the one gettid() returns to it
 * and its library writes into owner_tid (p->pid is the id in the initial
 * namespace; inside a container they differ). All threads of a process
 * share one namespace, and a thread's never changes. 0 if unreadable.
 * Read with probe reads only: struct pid's numbers[] is indexed by its
 * level, and the verifier refuses one load instruction shared by the
 * different task pointers this is inlined for.
 */
static __always_inline u32 task_ns_tid(struct task_struct *p)
{
	struct pid *pid = BPF_CORE_READ(p, thread_pid);
	unsigned int level;
	struct upid up;

	if (!pid)
		return 0;
	level = BPF_CORE_READ(pid, level);
	if (!level)
		return (u32)BPF_CORE_READ(p, pid);
	if (level > WS_PID_NS_LEVEL_MAX ||
	    bpf_core_read(&up, sizeof(up), &pid->numbers[level]))
		return 0;
	return (u32)up.nr;
}

/*
 * The id in its own namespace of the thread whose kernel pid is @pid, a
 * thread of the same process as @p (so in @p's namespace). Costs a task
 * lookup only inside a non-initial namespace, where the tgid is checked;
 * in the initial one the caller's word is taken: prefer_worker() reads
 * @pid with its tgid in one load (ws_cpu.cur_id) and compares the tgid.
 */
static __always_inline u32 ns_tid_of_pid(struct task_struct *p, u32 pid)
{
	struct task_struct *t;
	u32 nr;

	if (!BPF_CORE_READ(p, thread_pid, level))
		return pid;
	t = bpf_task_from_pid((s32)pid);
	if (!t)
		return 0;
	nr = BPF_CORE_READ(t, tgid) == p->tgid ? task_ns_tid(t) : 0;
	bpf_task_release(t);
	return nr;
}

/*
 * The slot owned by @tid in the slot array @slots, or NULL. Probes the
 * cached index (the last slot found, or an announced one), then the
 * WS_HINT_PROBE slots of its window (WS_HINT_SLOT_IDX); the first slot
 * owned by @tid wins. A slot owned by @tid with a wrong ABI version is
 * malformed.
 */
static __always_inline struct ws_hint_slot *slot_of_tid(void *slots, u32 tid, struct hint_ctx *hc)
{
	struct ws_hint_slot *s;
	u32 i, idx;

	if (hc && hc->slot) {
		idx = hc->slot;
		s = bpf_map_lookup_elem(slots, &idx);
		if (s && s->owner_tid == tid)
			goto found;
	}
	for (i = 0; i < WS_HINT_PROBE; i++) {
		idx = WS_HINT_SLOT_IDX(tid, i);
		s = bpf_map_lookup_elem(slots, &idx);
		if (s && s->owner_tid == tid)
			goto found;
	}
	return NULL;
found:
	if (s->abi_version != WS_HINT_ABI_VERSION) {
		STAT_INC(nr_hint_malformed);
		return NULL;
	}
	if (hc)
		hc->slot = idx;
	return s;
}

/*
 * ops.yield of a task whose slot was not found (hint_slot() gave NULL): if
 * its process's header announces a slot for it (struct ws_hint_header) and
 * the task owns that slot, remember the index in its task storage (created
 * here, returned in *@hcp) and acknowledge the word. The slot, or NULL.
 * The header is untrusted like every slot: a word naming another thread, a
 * slot it does not own or the header itself is ignored, and a process can
 * point only its own threads at its own slots.
 */
static __always_inline struct ws_hint_slot *hint_take_announce(struct task_struct *p,
								struct hint_ctx **hcp)
{
	u32 tgid = p->tgid, zero = 0, tid, idx;
	struct ws_hint_header *h;
	struct ws_hint_slot *s;
	struct hint_ctx *hc;
	void *slots;
	u64 word;

	slots = hint_procs_get(tgid);
	if (!slots)
		return NULL;
	h = (struct ws_hint_header *)bpf_map_lookup_elem(slots, &zero);
	if (!h)
		return NULL;
	word = *(volatile u64 *)&h->announce;	/* one read of untrusted memory */
	tid = task_ns_tid(p);
	idx = (u32)word;
	if (!tid || (u32)(word >> 32) != tid || !idx || idx >= WS_HINT_NR_SLOTS)
		return NULL;
	hc = *hcp;
	if (!hc)
		hc = bpf_task_storage_get(&hint_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!hc)
		return NULL;
	*hcp = hc;
	hc->slot = idx;
	s = slot_of_tid(slots, tid, hc);
	if (!s || hc->slot != idx) {
		hc->slot = 0;
		return NULL;
	}
	h->announce_ack = word;
	STAT_INC(nr_hint_announced);
	return s;
}

/*
 * task_ns_tid(@p), remembered in @hc (if any) for as long as @p's kernel
 * pid stays the same (it changes only when a non-leader thread execs and
 * takes over the leader's): the probe reads are paid once per task.
 */
static __always_inline u32 hint_task_tid(struct task_struct *p, struct hint_ctx *hc)
{
	u32 pid = p->pid, tid;

	if (hc && pid && hc->tid_pid == pid)
		return hc->ns_tid;
	tid = task_ns_tid(p);
	if (hc && tid) {
		hc->tid_pid = pid;
		hc->ns_tid = tid;
	}
	return tid;
}

/* The slot of @p (found through its kernel tgid), or NULL. */
static __always_inline struct ws_hint_slot *hint_slot(struct task_struct *p, struct hint_ctx *hc)
{
	u32 tgid = p->tgid;
	void *slots;

	if (!hints_live_for(p))
		return NULL;
	slots = hint_procs_get(tgid);
	if (!slots)
		return NULL;
	return slot_of_tid(slots, hint_task_tid(p, hc), hc);
}

/* The slot of @p where a scheduling decision would use it: none when only
 * observing. */
static __always_inline struct ws_hint_slot *hint_slot_acting(struct task_struct *p,
							     struct hint_ctx *hc)
{
	return hint_observe ? NULL : hint_slot(p, hc);
}

/*
 * The grace rules (see the top) for @p, whose slice is up or whose run a
 * run-cut timer is about to end (struct wake_cut), with its task storage
 * @hc (NULL: none yet): if its slot says it is inside a critical section
 * and neither this run nor this section had a grace, grant one. Counts an
 * overrun of the section that had it. Whether a grace was granted now.
 */
static __always_inline bool hint_section_grace(struct task_struct *p, struct hint_ctx *hc)
{
	struct ws_hint_slot *s, snap;
	u64 count, switches;
	u32 depth;

	s = hint_slot(p, hc);
	if (!s)
		return false;
	/* One read of the untrusted slot: check and use the same values. */
	__builtin_memcpy(&snap, s, sizeof(snap));
	depth = snap.cs_depth;
	count = snap.cs_count;
	if (depth > WS_HINT_MAX_DEPTH || snap.state > WS_HINT_STATE_MAX) {
		STAT_INC(nr_hint_malformed);
		return false;
	}
	if (!depth)
		return false;
	if (!hc) {
		hc = bpf_task_storage_get(&hint_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!hc)
			return false;
	}
	switches = p->nvcsw + p->nivcsw;
	if (hc->graced && count == hc->grace_cs_count) {
		/* Still in the section that got the grace: no second one. */
		if (switches == hc->grace_switches && !hc->overrun_counted) {
			hc->overrun_counted = 1;
			STAT_INC(nr_grace_overrun);
		}
		return false;
	}
	if (hc->graced && switches == hc->grace_switches)
		return false;	/* one grace per run */
	hc->graced = 1;
	hc->grace_cs_count = count;
	hc->grace_switches = switches;
	hc->overrun_counted = 0;
	hc->grace_pending = 1;
	scx_bpf_task_set_slice(p, grace_ns);
	/* Tell the task: it sees the store when it resumes (this CPU's tick
	 * interrupted it, like a signal handler's) or, running elsewhere, at
	 * its next load of the flag; either way before it leaves the section
	 * or soon after, and the run ends at the grace's end regardless. */
	*(volatile u32 *)&s->grace_pending = 1;
	STAT_INC(nr_grace_granted);
	return true;
}

/* First in ops.tick: a grace for @p if its slice is up inside a critical
 * section. Whether one was granted (its slice is now grace_ns). */
static __always_inline bool wsched_hint_tick(struct task_struct *p)
{
	struct hint_ctx *hc;

	if (!hints_live_for(p))
		return false;
	hc = bpf_task_storage_get(&hint_ctxs, p, 0, 0);
	if (hc)
		hc->yielded = 0;	/* still running: that yield kept the CPU */
	if (p->scx.slice || !grace_ns || hint_observe)
		return false;
	return hint_section_grace(p, hc);
}

/*
 * A run-cut timer (a wakeup preemption's, the slice's end: struct
 * wake_cut) is about to end the run of @p, a task the kernel gave a
 * reference to (bpf_task_from_pid()): a grace instead, by the same rules
 * and from the same budget as the tick's (one per run, one per section),
 * if @p is inside a critical section. Whether one was granted: the caller
 * then ends the run when the grace does.
 */
static __always_inline bool hint_cut_grace(struct task_struct *p)
{
	if (!hints_live_for(p) || !grace_ns || hint_observe)
		return false;
	return hint_section_grace(p, bpf_task_storage_get(&hint_ctxs, p, 0, 0));
}

/*
 * Is @p inside a critical section, by its acting slot? For a task pointer
 * the verifier does not trust (another CPU's rq->curr): loads and probe
 * reads only, no task storage. Racy like every slot read: a section
 * entered or left a moment ago may be seen either way.
 */
static __always_inline bool hint_in_section(struct task_struct *p)
{
	struct ws_hint_slot *s;
	void *slots;
	u32 depth;

	if (!hints_live_for(p) || hint_observe)
		return false;
	slots = hint_procs_get(p->tgid);
	if (!slots)
		return false;
	s = slot_of_tid(slots, task_ns_tid(p), NULL);
	if (!s)
		return false;
	depth = *(volatile u32 *)&s->cs_depth;
	return depth && depth <= WS_HINT_MAX_DEPTH;
}

/* A grace of @p ended (its yield, or it stopped): drop the slot's flag, so
 * a stale one cannot make it yield later for nothing. */
static __always_inline void hint_grace_end(struct hint_ctx *hc, struct ws_hint_slot *s)
{
	hc->grace_pending = 0;
	if (s)
		*(volatile u32 *)&s->grace_pending = 0;
}

/* @p's published state (one read of untrusted memory); WS_HINT_OTHER when
 * it has no slot, or when only observing. A value out of range is returned
 * as is: callers compare it with one state, never index with it. */
static __always_inline u32 hint_state(struct task_struct *p)
{
	struct ws_hint_slot *s;

	if (!hints_live_for(p))
		return WS_HINT_OTHER;
	s = hint_slot_acting(p, bpf_task_storage_get(&hint_ctxs, p, 0, 0));
	return s ? *(volatile u32 *)&s->state : WS_HINT_OTHER;
}

/*
 * Is thread @tid (its id in its own PID namespace) of the process whose
 * slot array is @slots a thief outside any critical section right now?
 */
static __always_inline bool tid_is_idle_thief(void *slots, u32 tid)
{
	struct ws_hint_slot *s = slot_of_tid(slots, tid, NULL);

	return s && *(volatile u32 *)&s->state == WS_HINT_THIEF &&
	       *(volatile u32 *)&s->cs_depth == 0;
}

/*
 * Worker preference (scx_wsched_worker.bpf.h) asks these. Only a thief
 * outside any section may be displaced for a worker of its own process, so
 * every question is about threads of one process, through that process's
 * own slot array (@slots, from hint_proc_slots() or hint_idle_thief_slots():
 * the core passes it back and never reads it). When only observing, none
 * finds a slot array, a thief or a worker.
 */

/* The slot array of @p's process (hint_procs[p->tgid]), or NULL when it is
 * not registered; whether or not hints act. */
static __always_inline void *proc_slots(struct task_struct *p)
{
	return hint_procs_get(p->tgid);
}

/* proc_slots(@p), or NULL when only observing. Not gated on
 * hints_live_for(): the caller's hint_state() was. */
static __always_inline void *hint_proc_slots(struct task_struct *p)
{
	return hint_observe ? NULL : proc_slots(p);
}

/* hint_proc_slots(@p) if @p is a thief outside any section, else NULL. */
static __always_inline void *hint_idle_thief_slots(struct task_struct *p)
{
	void *slots = hint_proc_slots(p);

	return slots && tid_is_idle_thief(slots, task_ns_tid(p)) ? slots : NULL;
}

/* Is @p a thief outside any section, through its own process's array? */
static __always_inline bool hint_task_is_idle_thief(struct task_struct *p)
{
	return hints_live_for(p) && hint_idle_thief_slots(p);
}

/* Is the thread whose kernel pid is @pid, of @p's process (@slots), a thief
 * outside any section? Costs a task lookup only inside a non-initial PID
 * namespace (ns_tid_of_pid()). */
static __always_inline bool hint_pid_is_idle_thief(void *slots, struct task_struct *p, u32 pid)
{
	return !hint_observe && tid_is_idle_thief(slots, ns_tid_of_pid(p, pid));
}

/* Does the slot of @p, a thread of the process of @slots, say WORKER? */
static __always_inline bool hint_task_is_worker_in(void *slots, struct task_struct *p)
{
	struct ws_hint_slot *s;

	if (hint_observe)
		return false;
	s = slot_of_tid(slots, task_ns_tid(p), NULL);
	return s && *(volatile u32 *)&s->state == WS_HINT_WORKER;
}

/*
 * Does a registered thread's sched_yield() without a target go behind
 * everything waiting on its CPU (ABP's yield-to-all)? Only outside every
 * critical section and when its slot has not asked for plain yields: a
 * thread that yields while holding a lock waits for something other than
 * its peers, and putting it behind all of them would make its lock's
 * waiters run while it cannot release it. @s is the acting slot.
 */
static __always_inline bool hint_yield_to_all(struct ws_hint_slot *s)
{
	return !*(volatile u32 *)&s->cs_depth &&
	       !(*(volatile u32 *)&s->flags & WS_HINT_FLAG_YIELD_PLAIN);
}

/*
 * The directed-yield fallback without wsched.ko (Documentation/abi.md,
 * yield_to_tid): a registered thread names its target in its hint slot and
 * calls sched_yield(). The target is looked up by that tid and used only if
 * the kernel says it is a thread of the yielder's own process (its tgid);
 * a target that is not waiting on one of our deques is simply not found by
 * yield_towards(). The kernel did not check runnability for us here, but
 * yield_towards() only records a pid for the next dispatch, which moves the
 * task only if it still finds it queued. Unlike yield_to() through the
 * module, this path only ever hands over the yielder's own CPU (here_only:
 * no boost, no preempting kick of another CPU), so sched_yield() spam
 * cannot cut other tasks' slices. @s is @from's slot (NULL: none, or only
 * observing). Returns a reference to release.
 */
static __always_inline struct task_struct *hint_yield_target(struct task_struct *from,
								struct ws_hint_slot *s)
{
	struct task_struct *t;
	u32 tid;

	if (!s)
		return NULL;
	tid = *(volatile u32 *)&s->yield_to_tid;	/* one read of untrusted memory */
	if (!tid || tid == (u32)from->pid || tid > 0x7fffffff)
		return NULL;
	/* The tid is in the yielder's namespace; only the initial one's are
	 * kernel pids that bpf_task_from_pid() can look up. */
	if (BPF_CORE_READ(from, thread_pid, level))
		return NULL;
	t = bpf_task_from_pid((s32)tid);
	if (!t)
		return NULL;
	if (t->tgid != from->tgid) {
		bpf_task_release(t);
		return NULL;
	}
	return t;
}

/*
 * Did @from's sched_yield() declare itself plain (WS_HINT_YIELD_PLAIN_ARG
 * in the syscall's first argument register)? @from is the yielding task,
 * inside its own syscall, so its saved user registers are that call's.
 * Any task may pass the value: it only ever gets the plain yield that the
 * same process could ask for with WS_HINT_FLAG_YIELD_PLAIN. Read only while
 * some process is registered (otherwise no yield reads a slot anyway).
 */
static __always_inline bool hint_yield_declared_plain(struct task_struct *from)
{
	struct pt_regs *regs;

	if (!hints_live())
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(from);
	return PT_REGS_PARM1_SYSCALL(regs) == WS_HINT_YIELD_PLAIN_ARG;
}

/*
 * ops.yield's view of the yielder's slot: filled in by
 * wsched_hint_yield_begin(), handed back to wsched_hint_yield_end(); the
 * core reads only to_all.
 */
struct hint_yield {
	struct hint_ctx *hc;	/* the yielder's task storage, or NULL */
	struct ws_hint_slot *s;	/* its slot, also when only observing; or NULL */
	bool to_all;		/* a sched_yield() that goes behind all (yield_behind_all()) */
};

/* Fill @hy with @from's task storage and slot (taking an announced one). */
static __always_inline void wsched_hint_yield_lookup(struct task_struct *from,
						     struct hint_yield *hy)
{
	hy->hc = hints_live_for(from) ? bpf_task_storage_get(&hint_ctxs, from, 0, 0) : NULL;
	hy->s = hint_slot(from, hy->hc);
	hy->to_all = false;
	if (!hy->s && hints_live_for(from))
		hy->s = hint_take_announce(from, &hy->hc);
}

/*
 * ops.yield, first: look @from's slot up, once for the whole yield. A
 * thread announcing a slot outside its probe window yields to be seen here
 * (wsched/hint.h), even when only observing. For a sched_yield() (@to
 * NULL) this also reads what the acting slot asks for (none when only
 * observing): returns a thread it names as its target (see
 * hint_yield_target(); a reference the caller releases), or NULL and sets
 * hy->to_all when the yield goes behind everything queued on this CPU
 * (hint_yield_to_all()). A yield_to() (@to set) reads no more than the
 * lookup: NULL, to_all false.
 */
static __always_inline struct task_struct *wsched_hint_yield_begin(struct task_struct *from,
								   struct task_struct *to,
								   struct hint_yield *hy)
{
	struct ws_hint_slot *acting;
	struct task_struct *t;

	wsched_hint_yield_lookup(from, hy);
	if (to)
		return NULL;
	acting = hint_observe ? NULL : hy->s;
	t = hint_yield_target(from, acting);
	if (!t && acting)
		hy->to_all = hint_yield_to_all(acting);
	return t;
}

/*
 * ops.yield, last, when @from gives its CPU up (sched_yield(), or a
 * yield_to() that was carried out; @hy from wsched_hint_yield_begin()): if
 * @from is registered, its next ops.stopping is that yield's, unless a tick
 * finds it still running first (nothing else could run: the yield kept the
 * CPU). Lets nr_cs_yielded tell a section holder's (or a ticket lock's
 * queued waiter's) own yield from a preemption. A tick between the yield
 * and the switch (a few instructions with interrupts on) makes one yield
 * count as a preemption; accepted. @switching is false for a yield that
 * keeps the CPU (nobody waited): it still ends a pending grace, but no stop
 * follows it.
 */
static __always_inline void wsched_hint_yield_end(struct task_struct *from,
						  struct hint_yield *hy, bool switching)
{
	struct ws_hint_slot *s = hy->s;
	struct hint_ctx *hc = hy->hc;

	if (!s)
		return;
	if (hc && hc->grace_pending) {
		/* The grace ends with this yield; outside a section it is the
		 * one the library makes on leaving it (not a preemption:
		 * wsched_hint_stopping() sees depth 0). */
		if (!*(volatile u32 *)&s->cs_depth)
			STAT_INC(nr_grace_yielded);
		hint_grace_end(hc, s);
	}
	if (!switching)
		return;		/* it keeps running: no stop follows */
	if (!hc)
		hc = bpf_task_storage_get(&hint_ctxs, from, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (hc)
		hc->yielded = 1;
}

/*
 * ops.stopping: one read of @p's slot. Counts a task descheduled while
 * still runnable (preempted, its slice or grace used up, or yielding)
 * inside a marked critical section: the lock-holder preemptions that still
 * happened (nr_cs_preempted; the avoided ones are nr_grace_granted), of
 * which nr_cs_yielded were its own yields (wsched_hint_yield_end()).
 * Returns whether @p is a thief to demote (never when only observing).
 */
static __always_inline bool wsched_hint_stopping(struct task_struct *p, bool runnable)
{
	struct ws_hint_slot *s;
	struct hint_ctx *hc;
	bool yielded = false;
	u32 depth;

	/* A grace pending across the last process's exit stays in hc until
	 * the next stop with the gate open; its slot is gone with the process
	 * (hint_grace_end() then writes nothing). */
	if (!hints_live_for(p))
		return false;
	hc = bpf_task_storage_get(&hint_ctxs, p, 0, 0);
	s = hint_slot(p, hc);

	if (hc && hc->yielded) {
		hc->yielded = 0;
		yielded = true;
	}
	if (hc && hc->grace_pending)
		hint_grace_end(hc, s);
	if (!s)
		return false;
	depth = *(volatile u32 *)&s->cs_depth;
	if (runnable && depth && depth <= WS_HINT_MAX_DEPTH) {
		STAT_INC(nr_cs_preempted);
		if (yielded)
			STAT_INC(nr_cs_yielded);
	}
	return !hint_observe && *(volatile u32 *)&s->state == WS_HINT_THIEF;
}

/*
 * An exec ends the process's registration (hint_execd, above): runs at
 * every exec, after the new image is in and before it runs; a process
 * whose bucket is 0 cannot be registered and costs two loads.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(wsched_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	u32 tgid = p->tgid, one = 1;
	long err;

	if (!hints_live_for(p))
		return 0;
	err = bpf_map_update_elem(&hint_execd, &tgid, &one, BPF_NOEXIST);
	if (!err)
		__sync_fetch_and_add(&hint_execd_live, 1);
	else if (err != -EEXIST)
		hint_execd_lost = 1;
	return 0;
}

#endif /* __SCX_WSCHED_HINT_BPF_H */
