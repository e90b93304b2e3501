/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched yields (ops.yield in scx_wsched.bpf.c chooses among them):
 * - sched_yield() of an unregistered task: the deque's head runs next
 *   (yield_behind_head()); of a registered thread outside every critical
 *   section, ABP's yield-to-all (yield_behind_all());
 * - yield_to() through wsched.ko, or a target named in a hint slot: the
 *   target runs next on this CPU (a handoff) or, if it may not run here,
 *   at the head of its own CPU (a boost), never by preempting another
 *   process's task (kick_for_yield()). The target is left in
 *   ws_cpu.yield_target and moved by that CPU's next dispatch
 *   (dispatch_yield_target()); worker preference moves its targets the
 *   same way (dsq_move_pid()).
 *
 * Jumps ahead of a deque's order, the one rule for all of them (directed
 * yields, worker preference): a target whose vtime is after the head's of
 * the deque it would jump runs first only on the place of a task that had
 * one, the claimant: the yielder, or the thread of the same process that
 * the target displaces, whose vtime at the start of its run was not after
 * the head's (place_check()). The claimant pays: its vtime goes to at
 * least the target's, after the head's, so it passes a place on at most
 * once while the head waits; the target runs at most a cut slice
 * (min_slice()) on it, and a handoff's at most what was left of the
 * yielder's slice. A task queued on a deque therefore waits only for the
 * tasks whose place is before its own, each for a cut slice, and for at
 * most one cut slice more of a target that each of them passes its place
 * to, however many yields and worker preferences happen around it: twice
 * what it waits without them. (A grace for a critical section lengthens
 * the run of a task that has a CPU, not anyone's place: the hint
 * fragment bounds it.)
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

/* What place_check() allows a target. */
enum ws_jump {
	WS_JUMP_NONE,	/* it jumps nobody: not after the deque's head */
	WS_JUMP_PLACE,	/* it jumps the head, on the claimant's place */
	WS_JUMP_REFUSED,/* it would jump the head, and no place lets it */
};

/*
 * May @to run before the tasks waiting on deque @dsq? Freely if its vtime
 * is not after the head's: it would be first there anyway, or level. Else
 * only on the place of @claimant (NULL: none), whose vtime at the start of
 * its run, @place, must not be after the head's: it was due before the
 * head, and gives that turn to @to.
 */
static __always_inline enum ws_jump place_check(struct task_struct *to, u64 dsq,
						struct task_struct *claimant, u64 place)
{
	struct task_struct *head;
	u64 head_vt;

	if (dsq >= nr_cpus)
		return WS_JUMP_NONE;
	head = __COMPAT_scx_bpf_dsq_peek(dsq);
	if (!head)
		return WS_JUMP_NONE;
	head_vt = head->scx.dsq_vtime;
	if (!time_before(head_vt, to->scx.dsq_vtime))
		return WS_JUMP_NONE;
	if (claimant && !time_before(head_vt, place))
		return WS_JUMP_PLACE;
	return WS_JUMP_REFUSED;
}

/* The claimant of a jump pays for it: its vtime goes to at least the
 * target's, @vt. */
static __always_inline void place_pass(struct task_struct *claimant, u64 vt)
{
	if (claimant && time_before(claimant->scx.dsq_vtime, vt))
		scx_bpf_task_set_dsq_vtime(claimant, vt);
}

/* What dsq_move_pid() found. */
enum ws_found {
	WS_MOVED,	/* moved to the CPU's local DSQ: it runs next */
	WS_GONE,	/* not there (it ran, was stolen or moved), or no longer it */
	WS_STAYS,	/* there, but it may not run on that CPU now */
};

/*
 * Move the task whose pid is @pid, among the first YIELD_SCAN_MAX tasks of
 * deque @dsq, to @cpu's local DSQ, if it may run there (may_run_on()) and
 * place_check() allows it before @cpu's deque on @claimant's @place; a
 * jump on that place runs at most @slice (then @claimant pays,
 * place_pass()). With @slots (a worker pull, dispatch_queued_worker()) the
 * task found must also be of process @tgid and say WORKER in that
 * process's slot array, else it counts as gone.
 */
static __always_inline enum ws_found dsq_move_pid(s32 cpu, u64 dsq, u32 pid, void *slots,
						  u32 tgid, struct task_struct *claimant,
						  u64 place, u64 slice)
{
	struct task_struct *p;
	enum ws_jump jump;
	u32 n = 0;
	u64 vt;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (++n > YIELD_SCAN_MAX)
			break;
		if (p->pid != pid)
			continue;
		if (slots && (p->tgid != tgid || !hint_task_is_worker_in(slots, p)))
			return WS_GONE;
		if (!may_run_on(p, cpu))
			return WS_STAYS;
		jump = place_check(p, cpu, claimant, place);
		if (jump == WS_JUMP_REFUSED)
			return WS_STAYS;
		if (jump == WS_JUMP_PLACE) {
			if (slice > min_slice())
				slice = min_slice();
			if (slice < WSCHED_SLICE_US_MIN * 1000ULL)
				slice = WSCHED_SLICE_US_MIN * 1000ULL;
			if (slice < p->scx.slice)
				scx_bpf_dsq_move_set_slice(BPF_FOR_EACH_ITER, slice);
		}
		vt = p->scx.dsq_vtime;
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, WS_DSQ_LOCAL, 0))
			return WS_GONE;
		if (jump == WS_JUMP_PLACE)
			place_pass(claimant, vt);
		return WS_MOVED;
	}
	return WS_GONE;
}

/*
 * A yield_to() on this CPU, or a boost from another CPU, left a target:
 * move it from its deque to this CPU's local DSQ so it runs next, if the
 * place it runs on still allows it (place_check(), again: the deque may
 * have gained an earlier head since the yield). A handoff's place is the
 * yielder's (@prev, which gave its slice up; yield_towards() noted its
 * place and slice), a boost's that of the thread of the yielder's process
 * that the kick preempted (@prev, still queued), with a cut slice. A
 * target that is gone (it ran, was stolen, went to sleep) or may not jump
 * leaves the dispatch to the normal path.
 */
static __always_inline bool dispatch_yield_target(s32 cpu, struct task_struct *prev)
{
	struct yield_target *yt = &cpu_ctx(cpu)->yield_target;
	u32 pid = yt->pid, dsq = yt->dsq, boost = yt->boost;
	struct task_struct *claimant = NULL;
	u64 place = 0, slice = 0;
	bool queued;

	if (!pid)
		return false;
	yt->pid = 0;
	if (dsq >= nr_cpus)
		return false;
	queued = prev && (prev->scx.flags & WS_TASK_QUEUED);
	if (boost) {
		/* A boost preempts only a task of the yielder's process
		 * (yield_towards()); if another one ran here by the time of
		 * the kick, it keeps its turn. */
		if (queued && prev->tgid != boost)
			return false;
		if (queued) {
			claimant = prev;
			place = prev->scx.dsq_vtime;
			slice = min_slice();
		}
	} else if (prev && (u32)prev->pid == yt->from) {
		claimant = prev;
		place = yt->place;
		slice = yt->slice;
	}
	if (dsq_move_pid(cpu, dsq, pid, NULL, 0, claimant, place, slice) != WS_MOVED)
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
 * ws_cpu.cur_id is read without synchronisation; a boost that meets another
 * process's task after all is dropped by dispatch_yield_target().
 */
static __always_inline u64 kick_for_yield(struct task_struct *from, s32 tcpu)
{
	u32 running = run_id_tgid(cpu_run_id(tcpu));

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
 * request is declined (nr_yield_to_foreign). A handoff that would jump
 * this CPU's deque while @from's place is after the head's, or a boost
 * that would jump an idle CPU's deque (nobody's place there to give), is
 * declined (nr_yield_to_unfair, place_check()). Either way @from gives
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
		if (may_run_on(to, cpu)) {
			/* A handoff jumps this CPU's deque on the yielder's place. */
			if (place_check(to, cpu, from, from->scx.dsq_vtime) == WS_JUMP_REFUSED) {
				STAT_INC(nr_yield_to_unfair);
				return false;
			}
			yt = &cpu_ctx(cpu)->yield_target;
			yt->boost = 0;
			yt->from = from->pid;
			yt->place = from->scx.dsq_vtime;
			yt->slice = from->scx.slice;
		} else {
			kick = kick_for_yield(from, tcpu);
			if (!kick)
				return false;
			/* An idle CPU runs no thread of ours whose place to give. */
			if (kick == WS_KICK_IDLE &&
			    place_check(to, tcpu, NULL, 0) == WS_JUMP_REFUSED) {
				STAT_INC(nr_yield_to_unfair);
				return false;
			}
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
