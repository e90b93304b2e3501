/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched yields (ops.yield in scx_wsched.bpf.c chooses among them):
 * - sched_yield() of an unregistered task: the deque's head runs next
 *   (yield_behind_head()); of a registered thread outside every critical
 *   section, ABP's yield-to-all (yield_behind_all());
 * - yield_to() through wsched.ko, or a target named in a hint slot: the
 *   target runs next on this CPU (a handoff) or, if it may not run here,
 *   at the head of its own CPU (a boost), never by preempting another
 *   process's task (kick_for_yield()) and never more than
 *   YIELD_LEAD_SLICES ahead of those it jumps (yield_fair()). The target
 *   is left in ws_cpu.yield_target and moved by that CPU's next dispatch
 *   (dispatch_yield_target()); worker preference moves its targets the
 *   same way (dsq_move_pid()).
 * The yielder pays: its vtime goes past whoever it lets run first.
 */
#ifndef __SCX_WSCHED_YIELD_BPF_H
#define __SCX_WSCHED_YIELD_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_hint.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_tunables.bpf.h"

#define YIELD_SCAN_MAX		256	/* deque entries searched for a yield target */
/* vtime a yield target may be ahead of a deque's head, in base slices */
#define YIELD_LEAD_SLICES	16

/*
 * May @to be run ahead of the tasks waiting on deque @dsq? Only while its
 * vtime is at most YIELD_LEAD_SLICES base slices ahead of the deque's head,
 * or two threads yielding to each other would keep a CPU between them
 * (each dispatch runs the last call's target) and starve everything else.
 */
static __always_inline bool yield_fair(struct task_struct *to, u64 dsq)
{
	struct task_struct *head;

	if (dsq >= nr_cpus)
		return true;
	head = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (!head)
		return true;
	return !time_before(head->scx.dsq_vtime + YIELD_LEAD_SLICES * slice_ns,
			    to->scx.dsq_vtime);
}

/* What dsq_move_pid() found. */
enum ws_found {
	WS_MOVED,	/* moved to the CPU's local DSQ: it runs next */
	WS_GONE,	/* not there (it ran, was stolen or moved), or no longer it */
	WS_STAYS,	/* there, but it may not run on that CPU now */
};

/*
 * Move the task whose pid is @pid, among the first YIELD_SCAN_MAX tasks of
 * deque @dsq, to @cpu's local DSQ, if it may run there (may_run_on()). With
 * @slots (a worker pull, dispatch_queued_worker()) the task found must also
 * be of process @tgid and say WORKER in that process's slot array, else it
 * counts as gone, and may not be more than YIELD_LEAD_SLICES ahead of
 * @cpu's deque (yield_fair()), else it stays.
 */
static __always_inline enum ws_found dsq_move_pid(s32 cpu, u64 dsq, u32 pid, void *slots,
						  u32 tgid)
{
	struct task_struct *p;
	u32 n = 0;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (++n > YIELD_SCAN_MAX)
			break;
		if (p->pid != pid)
			continue;
		if (slots && (p->tgid != tgid || !hint_task_is_worker_in(slots, p)))
			return WS_GONE;
		if (!may_run_on(p, cpu) || (slots && !yield_fair(p, cpu)))
			return WS_STAYS;
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, WS_DSQ_LOCAL, 0))
			return WS_GONE;
		return WS_MOVED;
	}
	return WS_GONE;
}

/*
 * A yield_to() on this CPU, or a boost from another CPU, left a target:
 * move it from its deque to this CPU's local DSQ so it runs next. A target
 * that is gone (it ran, was stolen, went to sleep) leaves the dispatch to
 * the normal path.
 */
static __always_inline bool dispatch_yield_target(s32 cpu, struct task_struct *prev)
{
	struct yield_target *yt = &cpu_ctx(cpu)->yield_target;
	u32 pid = yt->pid, dsq = yt->dsq, boost = yt->boost;

	if (!pid)
		return false;
	yt->pid = 0;
	if (dsq >= nr_cpus)
		return false;
	/* A boost preempts only a task of the yielder's process
	 * (yield_towards()); if another one ran here by the time of the
	 * kick, it keeps its turn. */
	if (boost && prev && (prev->scx.flags & WS_TASK_QUEUED) && prev->tgid != boost)
		return false;
	if (dsq_move_pid(cpu, dsq, pid, NULL, 0) != WS_MOVED)
		return false;
	if (boost)
		STAT_INC(nr_yield_to_boost);
	else
		STAT_INC(nr_yield_to_handoff);
	return true;
}

/*
 * How a directed yield of @from may get @tcpu, another CPU, to run its
 * target: preempt it if what runs there is a thread of @from's own process,
 * wake it if nothing does (SCX_KICK_IDLE: a no-op should a task have
 * started meanwhile); 0 if another process's task runs there: a directed
 * yield gives away the yielder's own CPU time, never another's, and a
 * stream of them must not become a stream of preemptions of someone else.
 * ws_cpu.cur_tgid is read without synchronisation; a boost that meets another
 * process's task after all is dropped by dispatch_yield_target().
 */
static __always_inline u64 kick_for_yield(struct task_struct *from, s32 tcpu)
{
	u32 running = cpu_ctx(tcpu)->cur_tgid;

	if (running == (u32)from->tgid)
		return WS_KICK_PREEMPT;
	if (!running)
		return WS_KICK_IDLE;
	STAT_INC(nr_yield_to_foreign);
	return 0;
}

/*
 * sched_yield() (@to NULL): give the slice up, what the kernel does for a
 * scheduler without ops.yield; dispatch then lets @from compete with the
 * deque's head by vtime as at the end of any slice.
 *
 * yield_to() (@to set; the kernel holds both runqueue locks and has checked
 * that @to is runnable, not running, and ours): if @to waits on one of our
 * deques and may run on this CPU, this CPU's next dispatch moves it here
 * (nr_yield_to_handoff); if its affinity or a migrate_disable() keeps it
 * off this CPU, its own CPU is kicked and moves it to the front there
 * (nr_yield_to_boost); if it already sits on a local DSQ it is next there
 * anyway (another CPU's is kicked). Another CPU is kicked only as
 * kick_for_yield() allows: when a task of another process runs there, the
 * request is declined (nr_yield_to_foreign). A target more than
 * YIELD_LEAD_SLICES of vtime ahead of the head of a deque it would jump is
 * declined (nr_yield_to_unfair, see yield_fair()). Either way @from gives
 * its slice up and its vtime goes to at least @to's, so it queues behind
 * @to. Returning true tells yield_to() the request is implemented and it
 * reschedules; a target we cannot reach (in flight between DSQs, on the
 * global fallback DSQ) is declined with false and nothing changes.
 */
static __always_inline bool yield_towards(struct task_struct *from, struct task_struct *to,
					  bool here_only)
{
	struct scx_dispatch_q *dsq;
	struct yield_target *yt;
	s32 cpu, tcpu;
	u64 dsq_id, kick;

	cpu = bpf_get_smp_processor_id();
	tcpu = task_cpu_of(to);
	if (tcpu < 0 || (u32)tcpu >= nr_cpus)
		return false;
	dsq = to->scx.dsq;
	if (!dsq)
		return false;
	dsq_id = BPF_CORE_READ(dsq, id);

	if (here_only && (dsq_id >= nr_cpus || !may_run_on(to, cpu)))
		return false;
	if (dsq_id < nr_cpus) {
		if (!yield_fair(to, dsq_id)) {
			STAT_INC(nr_yield_to_unfair);
			return false;
		}
		if (may_run_on(to, cpu)) {
			if ((u64)cpu != dsq_id && !yield_fair(to, cpu)) {
				STAT_INC(nr_yield_to_unfair);
				return false;
			}
			yt = &cpu_ctx(cpu)->yield_target;
			yt->boost = 0;
		} else {
			kick = kick_for_yield(from, tcpu);
			if (!kick)
				return false;
			yt = &cpu_ctx(tcpu)->yield_target;
			yt->boost = from->tgid;
		}
		yt->dsq = dsq_id;
		yt->pid = to->pid;
		if (yt->boost) {
			scx_bpf_kick_cpu(tcpu, kick);
			STAT_INC(nr_kicks);
		}
	} else if (dsq_id == WS_DSQ_LOCAL) {
		if (tcpu != cpu) {
			kick = kick_for_yield(from, tcpu);
			if (!kick)
				return false;
			scx_bpf_kick_cpu(tcpu, kick);
			STAT_INC(nr_kicks);
		}
	} else {
		return false;
	}

	if (time_before(from->scx.dsq_vtime, to->scx.dsq_vtime))
		scx_bpf_task_set_dsq_vtime(from, to->scx.dsq_vtime);
	scx_bpf_task_set_slice(from, 0);
	return true;
}

/*
 * Yield-to-all (Arora, Blumofe & Plaxton): a registered thread's
 * sched_yield() outside every critical section (hint_yield_to_all()) puts
 * it behind every task waiting on this CPU's deque, so each of them (its
 * own process's preempted workers first among them) runs before it does
 * again. Its vtime goes just past the deque's last task (the
 * deque is vtime-ordered: the reverse iterator's first entry); it pays for
 * that with its own share, like any task that gives its turn away.
 */
static __always_inline void yield_behind_all(struct task_struct *from)
{
	struct task_struct *p;
	u64 last = 0;
	bool any = false;

	bpf_for_each(scx_dsq, p, (u64)bpf_get_smp_processor_id(), WS_DSQ_ITER_REV) {
		last = p->scx.dsq_vtime;
		any = true;
		break;
	}
	STAT_INC(nr_yield_all);
	if (any && time_before(from->scx.dsq_vtime, last + 1))
		scx_bpf_task_set_dsq_vtime(from, last + 1);
}

/*
 * Any other task's sched_yield(): the task waiting first on this CPU's
 * deque runs next (POSIX: others of the same priority run before the
 * yielder; EEVDF pushes the yielder's deadline back for the same end).
 * Competing by vtime alone would let a yielder behind the head keep the
 * CPU, and a waiter spinning with sched_yield() on a lock whose holder
 * waits on the same CPU would yield for nothing. The yielder's vtime goes
 * just past the head's: it pays with its own place, never anyone else's.
 * Returns whether a task waited on the deque.
 */
static __always_inline bool yield_behind_head(struct task_struct *from)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(bpf_get_smp_processor_id());

	if (!head)
		return false;
	STAT_INC(nr_yield_head);
	if (time_before(from->scx.dsq_vtime, head->scx.dsq_vtime + 1))
		scx_bpf_task_set_dsq_vtime(from, head->scx.dsq_vtime + 1);
	return true;
}

#endif /* __SCX_WSCHED_YIELD_BPF_H */
