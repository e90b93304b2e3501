/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched CPUs: the topology the loader writes before load (how many
 * CPUs and LLCs, which LLC each CPU is in, SMT), random picks within and
 * across LLCs for the thieves, whether a task may be moved to a CPU
 * (may_run_on()), and the per-CPU context, struct ws_cpu: every piece of
 * state one CPU's ops leave for another's, in one place, with what each
 * field's staleness costs.
 */
#ifndef __SCX_WSCHED_CPU_BPF_H
#define __SCX_WSCHED_CPU_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched.h"
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_tunables.bpf.h"

#define CPU_MASK		(WSCHED_MAX_CPUS - 1)

WS_TUNABLE u32 nr_cpus = 1;
WS_TUNABLE u32 nr_llcs = 1;
/* The loader's reading of /sys/devices/system/cpu/smt/active (true when it
 * cannot tell): with SMT the built-in policy prefers a wholly idle core to
 * an idle previous CPU, so select_cpu's shortcut is off. A change of SMT is
 * CPU hotplug, which makes the kernel restart the scheduler. */
WS_TUNABLE bool smt_active = true;
WS_TUNABLE u32 cpu_llc[WSCHED_MAX_CPUS];		/* CPU -> LLC index */
WS_TUNABLE u32 llc_start[WSCHED_MAX_LLCS];		/* LLC -> first slot in llc_cpus */
WS_TUNABLE u32 llc_len[WSCHED_MAX_LLCS];		/* LLC -> number of CPUs */
WS_TUNABLE u32 llc_cpus[WSCHED_MAX_CPUS];		/* CPUs grouped by LLC */

/*
 * A directed yield's target, which the CPU's next dispatch runs first:
 * left by ops.yield (pid 0: none), with the deque it was queued on, and
 * whether it was a boost on its own CPU (it may not run on the yielder's);
 * for a handoff, the place it may run on (scx_wsched_yield.bpf.h).
 */
struct yield_target {
	u32 pid;
	u32 dsq;
	u32 boost;	/* a boost: the yielder's tgid; 0: a handoff to this CPU */
	u32 from;	/* a handoff: the yielder's pid */
	u64 place;	/* its vtime at the start of its run */
	u64 slice;	/* what was left of its slice */
};

/*
 * A WORKER that prefer_worker() found a CPU for by preempting a thief of
 * its process there (pid 0: none): the CPU's next dispatch runs it if that
 * thief is still what the CPU runs.
 */
struct worker_target {
	u32 pid;
	u32 dsq;	/* the deque the worker was queued on */
	u32 tgid;	/* the worker's, and the preempted thief's, process */
};

/* The WORKER last queued on a CPU's deque (pid 0: none). */
struct queued_worker {
	u32 pid;
	u32 tgid;
};

/*
 * The per-CPU context: what one CPU's ops and other CPUs' ops tell each
 * other about that CPU, its deque and the run on it; ws_cpus[cpu], through
 * cpu_ctx(). Every field is a plain load and store, read from other CPUs
 * without synchronisation; each move a field leads to re-checks the task
 * it acts on, so a stale field never loses or misplaces a task. The fields
 * are grouped by the op that writes them, a cache line each: the run's,
 * written by the CPU itself at every context switch, and the one other
 * CPUs write into (kicks, yields, enqueues onto this CPU's deque), so that
 * neither bounces the other, nor one CPU's entry another's.
 *
 * field          writer                 readers               a stale read costs
 * cur_id         ops.running; cleared   ops.stopping, the     a charge skipped (a run
 *                by ops.stopping (of    cut timers,           begun before the load);
 *                the task's CPU)        current_vtime(),      a worker move or yield
 *                                       wake_credit(),        kick declined or futile
 *                                       wake_preempt(),       (the dispatch re-checks
 *                                       prefer_worker(),      what runs)
 *                                       kick_for_yield()
 * cur_start      ops.running, while     prefer_worker()       a thief displaced a
 *                hints are live                               little early or late
 * cur_sum        ops.running            ops.stopping, the     a needless reschedule,
 *                                       cut timers,           or a run left to its
 *                                       wake_preempt()        (cut) slice
 * cur_factor     ops.running            ops.stopping,         none: read for the run
 *                                       current_vtime(),      that set it
 *                                       wake_preempt()
 * cur_slot       ops.running            ops.tick,             none: read for the run
 * cur_charged    ops.running, ops.tick  ops.stopping          that set it
 * root_runnable  ops.runnable and       cg_refresh() (the     one refresh's shares
 *                ops.quiescent, under   cgroup timer)         from a count a wakeup
 *                this CPU's rq lock                           old
 * root_used      ops.tick, ops.stopping cg_refresh()          the root's CPU time a
 *                (cg_charge())                                tick old
 * steal_hint     the kicker of an idle  steal_idle() on this  one probe of a deque
 *                CPU                    CPU, which clears it  with nothing to take
 * wake_kicked    wake_preempt();        ops.dispatch          one dispatch in the
 *                cleared by ops.running                       usual order, or one
 *                                                             reordered
 * yield_target   ops.yield              dispatch_yield_       a bounded deque scan
 *                                       target(), clears pid  that finds nothing
 * worker_target  prefer_worker()        dispatch_worker_      the same, or a thief
 *                                       target(), clears pid  kept (prev re-checked)
 * queued_worker  ops.enqueue of a       dispatch_queued_      a bounded deque scan
 *                WORKER; cleared by     worker()              that moves nothing
 *                ops.running, the thief
 * lat_wake_at    lat_wake_note()        lat_cut() (ops.tick)  the shorter cut starts
 *                (the enqueuer)                               or ends a base slice
 *                                                             early or late
 * kick_tat       kick_charge()          kick_wait()           a lost update allows
 *                (the enqueuer)                               one more switch
 * unstealable    try_steal() sets,      ops.tick              stale set: the tick's
 *                ops.enqueue of a                             catch-all kick waits
 *                movable task clears                          for the next movable
 *                                                             enqueue; stale clear:
 *                                                             one futile wakeup
 *
 * cur_id: the pid (low word) and tgid (high word) of the run, one 64-bit
 * word written once at its start and once at its end, and read once
 * (cpu_run_id()): an aligned 64-bit load or store is single-copy atomic on
 * every architecture the kernel runs sched_ext on, so a reader on another
 * CPU gets one run's pair or 0, never one run's pid with the tgid of the
 * run before it. prefer_worker() relies on that: it looks the pid up in
 * the slot array of the process whose tgid it read, which a process
 * writes itself.
 *
 * lat_wake_at: when ops.enqueue last queued a user task woken from an
 * interrupt on this deque while the shorter cut is on (bpf_ktime_get_ns(),
 * 0: never). kick_tat: when this CPU's next switch for a wakee is due at
 * the sustained rate (kick_wait()). unstealable: a thief found the deque
 * non-empty but could take nothing from it (every waiting task pinned
 * there); while set, the owner's tick does not wake idle CPUs for nothing.
 * queued_worker: the task found must still be queued there, be of the
 * thief's process and say WORKER, or nothing moves.
 */
struct ws_cpu {
	/* The run on this CPU: ops.running and ops.stopping. */
	u64 cur_id;		/* its pid and tgid (cpu_run_id()), 0: none */
	u64 cur_start;		/* scx_bpf_now() at its start, while hints are live */
	u64 cur_sum;		/* its se.sum_exec_runtime then */
	u32 cur_factor;		/* its cgroup's share factor then (cg_slot_factor()) */
	s32 cur_slot;		/* its cgroup's slot (cg_task_slot()) */
	u64 cur_charged;	/* its se.sum_exec_runtime last charged (cg_charge()) */
	s64 root_runnable;	/* summed weight of root-cgroup tasks runnable here */
	u64 root_used;		/* CPU time root-cgroup tasks ran here */

	/* Written by other CPUs' kicks, yields and enqueues. */
	u32 steal_hint __attribute__((aligned(64)));	/* victim CPU + 1, 0: none */
	u32 wake_kicked;	/* pid of the wakee this CPU was kicked to run first */
	struct yield_target yield_target;
	struct worker_target worker_target;
	struct queued_worker queued_worker;
	u64 lat_wake_at;
	u64 kick_tat;
	u8 unstealable;
} __attribute__((aligned(64)));

static struct ws_cpu ws_cpus[WSCHED_MAX_CPUS];

static __always_inline struct ws_cpu *cpu_ctx(s32 cpu)
{
	return &ws_cpus[cpu & CPU_MASK];
}

/* The pid and tgid of the run on @cpu as one word (ws_cpu.cur_id), 0: none.
 * Volatile: one load, so that its two halves are of one run. */
static __always_inline u64 cpu_run_id(s32 cpu)
{
	return *(volatile u64 *)&cpu_ctx(cpu)->cur_id;
}

static __always_inline u32 run_id_pid(u64 id)
{
	return (u32)id;
}

static __always_inline u32 run_id_tgid(u64 id)
{
	return (u32)(id >> 32);
}

/* The pid of the run on @cpu, 0: none. */
static __always_inline u32 cpu_run_pid(s32 cpu)
{
	return run_id_pid(cpu_run_id(cpu));
}

/* ops.running: @p's run starts on @cpu (one store). */
static __always_inline void cpu_run_start(s32 cpu, struct task_struct *p)
{
	*(volatile u64 *)&cpu_ctx(cpu)->cur_id = (u64)(u32)p->tgid << 32 | (u32)p->pid;
}

/* ops.stopping: the run on @cpu is over (one store). */
static __always_inline void cpu_run_end(s32 cpu)
{
	*(volatile u64 *)&cpu_ctx(cpu)->cur_id = 0;
}

static __always_inline u32 llc_of(s32 cpu)
{
	return cpu_llc[cpu & CPU_MASK];
}

static __always_inline s32 rand_cpu_in_llc(u32 llc)
{
	u32 len, idx;

	if (llc >= WSCHED_MAX_LLCS)
		return -1;
	len = llc_len[llc];
	if (!len)
		return -1;
	idx = llc_start[llc] + bpf_get_prandom_u32() % len;
	return llc_cpus[idx & CPU_MASK];
}

/* A random CPU outside @my_llc (two tries; -1 if both land inside). */
static __always_inline s32 rand_cpu_remote(u32 my_llc)
{
	s32 cpu;
	int i;

	if (!nr_cpus)
		return -1;
	for (i = 0; i < 2; i++) {
		cpu = bpf_get_prandom_u32() % nr_cpus;
		if (llc_of(cpu) != my_llc)
			return cpu;
	}
	return -1;
}

/*
 * May @p be moved to @cpu's local DSQ? The kernel ejects the scheduler for a
 * move that breaks affinity or moves a migration-disabled task, so check
 * both (@p is never the current task here, so migration_disabled is exact).
 */
static __always_inline bool may_run_on(struct task_struct *p, s32 cpu)
{
	if (task_cpu_of(p) == cpu)
		return true;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	return !is_migration_disabled(p);
}

#endif /* __SCX_WSCHED_CPU_BPF_H */
