// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched: a sched_ext scheduler with per-CPU dispatch deques and
 * idle-CPU work stealing. Documentation/scheduler.md is the long form.
 *
 * Every CPU owns a user DSQ, its deque (DSQ id = CPU number), ordered by
 * weighted virtual time.
 *
 * - Wakeup (ops.select_cpu): the built-in idle tracking picks a CPU
 *   (prev_cpu_idle() answers its first question without the kfunc when
 *   there is no SMT). An idle pick gets the task on its local DSQ at once,
 *   except the waker's own CPU for a sync wakeup: that wakee goes to the
 *   waker's deque, where the waker's CPU or a kicked thief takes it.
 * - Enqueue: the task joins the deque of its CPU (task_cpu_of(): always
 *   allowed, and the pinned CPU of a migration-disabled task), whose owner
 *   is kicked unless it is sure to look (owner_look()). If work was already
 *   waiting there, one idle CPU the task may run on is kicked with a hint
 *   naming the deque: no CPU sleeps while a deque it could drain is full.
 * - Dispatch: a CPU serves its own deque first; a still-runnable prev
 *   competes with the head by vtime, and both with a random victim's head
 *   (steal_balance()), which is what spreads CPU shares across deques. A
 *   CPU going idle steals (steal_idle()): the kicker's hint, pick-two in
 *   its LLC, pick-two elsewhere, then a sweep of at most STEAL_SWEEP_MAX
 *   deques; each probe is a lockless length read, so a dispatch costs a
 *   constant, not a function of the number of CPUs.
 * - A steal is scx_bpf_dsq_move_to_local(victim): the kernel takes the
 *   first task there that may run on the thief, so stealing never breaks
 *   affinity or moves a migration-disabled task.
 * - Fairness: dsq_vtime advances by run time x 100/weight. vtime_now
 *   (vtime_now_advance()) bounds every task's lag to LAG_SLICES base slices
 *   (vtime_floor()) and its lead to LEAD_SLICES (vtime_clamp()); a waking
 *   task keeps at most a slice of credit (wake_credit()), and one that
 *   waited for time is placed no later than just before its CPU's
 *   earliest task, with no credit at all unless an interrupt woke it; a
 *   task the kernel moves to another CPU keeps no lag against that CPU's
 *   earliest task (migrate_place()). A queued task thus waits at most
 *   about deque length x slice x weight ratio.
 * - Slice: --slice-us for every task; ops.tick cuts a running task's slice
 *   to --slice-min-us when others wait behind it (to --slice-lat-us near a
 *   task woken from an interrupt, lat_cut()), arms a timer to end it on
 *   time while such a task is recent (slice_ends), and kicks an idle
 *   thief.
 * - Yield: see wsched_yield() (plain, yield-to-all, directed).
 *
 * Hints (Documentation/abi.md): a registered process's thread inside a
 * critical section gets one grace slice; a THIEF is charged
 * WS_THIEF_CHARGE x and gets thief_slice(); a queued WORKER gets the next
 * idle CPU or a CPU running a THIEF of its own process (prefer_worker(),
 * dispatch_queued_worker()). This file reads no hint slot: it asks
 * scx_wsched_hint.bpf.h, which owns every slot read and the observe gate.
 *
 * - Wakeup preemption (wake_preempt()): a task woken from an interrupt
 *   (or by a task on another CPU, when the running task is CPU-bound),
 *   earlier in vtime than the task its CPU runs and than that deque's
 *   head, for which no idle CPU was woken, preempts that task once it has
 *   run --wake-preempt-us (at once, or by a timer at that bound); never a
 *   registered process's thread. A CPU is preempted so at most
 *   WAKE_KICK_BURST times in a row and once per --slice-lat-us on average
 *   (kick_wait()). Any other wakee waits for the next dispatch.
 *
 * Not done: cgroup weights, NUMA beyond LLCs, CPU hotplug in BPF (without ops.cpu_online/offline the
 * kernel ejects the scheduler with a restart request, and the loader loads
 * it again; so no deque is ever left with an offline owner).
 *
 * Accepted races (all harmless, none loses a task):
 * - vtime_now is updated without atomics: a lost update only places a
 *   waking task a little behind or ahead, within the bounds above.
 * - Victim lengths are stale by the time of the move: a failed move costs
 *   a lock round trip.
 * - The per-CPU context (struct ws_cpu) is plain entries read and written
 *   across CPUs: a stale entry costs a probe, a bounded scan or a futile
 *   wakeup, and every move re-checks the task it acts on; its table says
 *   what each field's staleness costs.
 *
 * Compatibility: built against the 7.3 headers, loads from 6.12 on: renamed
 * kfuncs go through scx/compat.bpf.h, enum values are CO-RE relocations,
 * and the optional kfuncs (scx_bpf_now, scx_bpf_dsq_peek,
 * scx_bpf_get_online_cpumask) fall back when absent.
 */
#include <scx/common.bpf.h>
#include "scx_wsched.h"
#include "scx_wsched_hint.bpf.h"	/* hints from registered processes */
#include "scx_wsched_stats.bpf.h"

/*
 * scx/enums.bpf.h turns every scx enum into a rodata copy that the loader
 * must fill in by searching the kernel's BTF (SCX_ENUM_INIT), which makes
 * a load slow. The ones used here are CO-RE relocations instead, resolved
 * by libbpf from the BTF it parses anyway, so they are right on every
 * kernel.
 */
#undef SCX_DSQ_LOCAL
#undef SCX_KICK_IDLE
#undef SCX_TASK_QUEUED
#undef SCX_KICK_PREEMPT
#undef SCX_WAKE_SYNC
#undef SCX_ENQ_WAKEUP
#define WS_DSQ_LOCAL	bpf_core_enum_value(enum scx_dsq_id_flags, SCX_DSQ_LOCAL)
#define WS_KICK_IDLE	bpf_core_enum_value(enum scx_kick_flags, SCX_KICK_IDLE)
#define WS_KICK_PREEMPT	bpf_core_enum_value(enum scx_kick_flags, SCX_KICK_PREEMPT)
#define WS_TASK_QUEUED	bpf_core_enum_value(enum scx_ent_flags, SCX_TASK_QUEUED)
#define WS_DSQ_ITER_REV	bpf_core_enum_value(enum scx_dsq_iter_flags, SCX_DSQ_ITER_REV)
#define WS_WAKE_SYNC	bpf_core_enum_value(enum scx_wake_flags, SCX_WAKE_SYNC)
#define WS_ENQ_WAKEUP	bpf_core_enum_value(enum scx_enq_flags, SCX_ENQ_WAKEUP)
#undef SCX_RQ_IN_DISPATCH
#undef SCX_RQ_IN_BALANCE
/* The name of the rq's "inside a dispatch" flag before 6.18 (CO-RE matches
 * enum scx_rq_flags___old to the kernel's enum scx_rq_flags). */
enum scx_rq_flags___old { SCX_RQ_IN_BALANCE = 1 };
/* common.bpf.h declares scx_bpf_locked_rq() strong, but 6.12-6.17 have no
 * such kfunc: a weak flavour of it (libbpf drops the ___ suffix). */
extern struct rq *scx_bpf_locked_rq___compat(void) __ksym __weak;
/* The per-CPU preempt count (x86 and others that keep it per CPU), and a
 * per-CPU variable of kernels whose preempt count also counts hard-IRQ
 * disabling (local_interrupt_disable()), which moved the IRQ bits. */
extern int __preempt_count __ksym __weak;
extern unsigned long local_interrupt_disable_state __ksym __weak;

char _license[] SEC("license") = "GPL";

#define STEAL_SWEEP_MAX		16
#define LAG_SLICES		16	/* max vtime lag of any task, in base slices */
#define LEAD_SLICES		48	/* max vtime lead of any task, in base slices */
#define CPU_MASK		(WSCHED_MAX_CPUS - 1)
#define YIELD_SCAN_MAX		256	/* deque entries searched for a yield target */
#define YIELD_LEAD_SLICES	LAG_SLICES	/* vtime a yield target may be ahead of a deque's head */
/*
 * Preempt count bits set in an interrupt: NMI, hard IRQ, serving a softirq
 * (include/linux/preempt.h). Kernels that count hard-IRQ disabling there
 * (those with local_interrupt_disable_state) moved the hard-IRQ and NMI
 * bits up by 8; bit 31 may be x86's inverted need-resched bit, so only
 * the lowest NMI bit is tested.
 */
#define WS_IRQ_COUNT_MASK	(0x00f00000U | 0x000f0000U | 0x00000100U)
#define WS_IRQ_COUNT_MASK_WIDE	(0x10000000U | 0x0f000000U | 0x00000100U)

#define WS_TASK_ON_RQ_MIGRATING	2	/* task_struct.on_rq inside a move (kernel/sched/sched.h) */
#define WS_PF_KTHREAD		0x00200000	/* task_struct.flags: PF_KTHREAD (linux/sched.h) */

/* Tunables and topology, written by the loader before load. */
const volatile u64 slice_ns = WSCHED_SLICE_US_DFL * 1000ULL;
const volatile u64 min_slice_ns = WSCHED_SLICE_US_DFL * 1000ULL / 4;
/* --wake-preempt-us: how long a task runs before a waking task earlier in
 * vtime may preempt it (0: never; wake_preempt()). */
const volatile u64 wake_preempt_ns = WSCHED_WAKE_PREEMPT_US_DFL * 1000ULL;
/* --slice-lat-us: what a crowded CPU cuts slices down to while a task woken
 * from an interrupt was queued there lately (lat_cut()); min_slice(): none. */
const volatile u64 lat_slice_ns = WSCHED_SLICE_LAT_US_DFL * 1000ULL;
const volatile bool slice_end_timer = true;	/* not --no-slice-timer: slice_ends */
/*
 * The loader's process id in the kernel's (initial) PID namespace, 0 where
 * it cannot tell: a wakeup of the scheduler's own loader is never counted
 * as woken from an interrupt (ws_irq_wakeup()).
 */
const volatile u32 loader_tgid;
const volatile u32 nr_cpus = 1;
const volatile u32 nr_llcs = 1;
/* The loader's reading of /sys/devices/system/cpu/smt/active (true when it
 * cannot tell): with SMT the built-in policy prefers a wholly idle core to
 * an idle previous CPU, so select_cpu's shortcut is off. A change of SMT is
 * CPU hotplug, which makes the kernel restart the scheduler. */
const volatile bool smt_active = true;
const volatile u32 cpu_llc[WSCHED_MAX_CPUS];		/* CPU -> LLC index */
const volatile u32 llc_start[WSCHED_MAX_LLCS];		/* LLC -> first slot in llc_cpus */
const volatile u32 llc_len[WSCHED_MAX_LLCS];		/* LLC -> number of CPUs */
const volatile u32 llc_cpus[WSCHED_MAX_CPUS];		/* CPUs grouped by LLC */

static u64 vtime_now;
static u64 vtime_now_at;	/* scx_bpf_now() of vtime_now's last advance */
/*
 * A bit per CPU whose deque may hold tasks another CPU could take: set
 * (atomically) by every insert of a task allowed on more than one CPU (a
 * pinned task can only ever be dispatched by its owner), cleared by a
 * thief that found the deque empty, which then looks again and sets it
 * back if a task arrived in between. So a clear bit means the deque held
 * nothing stealable at some point after the last insert of a stealable
 * task.
 * A CPU going idle skips its steal sweep while every bit is clear: the
 * common case of a wakeup-heavy load, which goes idle per message with
 * nothing queued anywhere. A stale set bit costs one probe; no task depends
 * on a bit to be found, the kicks of ops.enqueue and ops.tick reach idle
 * CPUs whatever the mask says.
 */
#define MASK_WORDS	(WSCHED_MAX_CPUS / 64)
static u64 queued_mask[MASK_WORDS];

/*
 * Directed yields: the task a CPU's next dispatch runs first, left by
 * ops.yield (pid 0: none), the deque it was queued on, and whether it was
 * a boost on its own CPU (it may not run on the yielder's). Worker
 * preference (prefer_worker()) leaves one too, with the tgid whose thief
 * it preempted: the move happens only if that thief is what the CPU runs.
 */
struct yield_target {
	u32 pid;
	u32 dsq;
	u32 boost;	/* a boost: the yielder's tgid; 0: a handoff to this CPU */
	u32 tgid;	/* worker preference: the preempted thief's tgid; 0: a yield */
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
 * cur_pid        ops.running; cleared   ops.stopping, the     a charge skipped (a run
 * cur_tgid       by ops.stopping (of    cut timers,           begun before the load);
 *                the task's CPU)        current_vtime(),      a worker move or yield
 *                                       wake_credit(),        kick declined or futile
 *                                       wake_preempt(),       (dispatch_yield_target()
 *                                       prefer_worker(),      re-checks what runs)
 *                                       kick_for_yield()
 * cur_start      ops.running, while     prefer_worker()       a thief displaced a
 *                hints are live                               little early or late
 * cur_sum        ops.running            ops.stopping, the     a needless reschedule,
 *                                       cut timers,           or a run left to its
 *                                       wake_preempt()        (cut) slice
 * steal_hint     the kicker of an idle  steal_idle() on this  one probe of a deque
 *                CPU                    CPU, which clears it  with nothing to take
 * wake_kicked    wake_preempt();        ops.dispatch          one dispatch in the
 *                cleared by ops.running                       usual order, or one
 *                                                             reordered
 * yield_target   ops.yield,             dispatch_yield_       a bounded deque scan
 *                prefer_worker()        target(), clears pid  that finds nothing
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
	u32 cur_pid;
	u32 cur_tgid;
	u64 cur_start;		/* scx_bpf_now() at its start, while hints are live */
	u64 cur_sum;		/* its se.sum_exec_runtime then */

	/* Written by other CPUs' kicks, yields and enqueues. */
	u32 steal_hint __attribute__((aligned(64)));	/* victim CPU + 1, 0: none */
	u32 wake_kicked;	/* pid of the wakee this CPU was kicked to run first */
	struct yield_target yield_target;
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

/* When any CPU last queued such a wakee, with or without the shorter cut:
 * the slice timer is armed only while that is recent (slice_end_arm()).
 * Written only when a CPU finds it older than LAT_ANY_STALE, so a stream
 * of such wakeups does not bounce its cache line between CPUs;
 * unsynchronised like ws_cpu.lat_wake_at. */
static u64 lat_any_at;
#define LAT_ANY_STALE	(1000 * 1000ULL)	/* 1 ms */

/*
 * The CPU whose runqueue holds @p: task_cpu(p), read directly where the
 * field exists (x86, arm64 and most others: CONFIG_THREAD_INFO_IN_TASK),
 * which saves a kfunc call on every context switch.
 */
static __always_inline s32 task_cpu_of(const struct task_struct *p)
{
	if (bpf_core_field_exists(p->thread_info.cpu))
		return p->thread_info.cpu;
	return scx_bpf_task_cpu(p);
}

UEI_DEFINE(uei);

static __always_inline u32 llc_of(s32 cpu)
{
	return cpu_llc[cpu & CPU_MASK];
}

/* --slice-min-us: what a crowded CPU cuts slices down to (the loader's
 * default is 1/4 of the base slice, at least 100 us; never above it). */
static __always_inline u64 min_slice(void)
{
	return min_slice_ns && min_slice_ns <= slice_ns ? min_slice_ns : slice_ns;
}

/*
 * The slice of a thread that says THIEF: short, so that it gives the CPU
 * back soon to the workers it is looking for; 1/32 of the base slice,
 * within [WSCHED_SLICE_US_MIN, min_slice()]. A worker may displace it after
 * that long (prefer_worker()). Not --slice-min-us itself: that is what a
 * crowded CPU's ordinary tasks keep, tuned for throughput.
 */
static __always_inline u64 thief_slice(void)
{
	u64 s = slice_ns / 32;

	if (s > min_slice())
		s = min_slice();
	return s > WSCHED_SLICE_US_MIN * 1000ULL ? s : WSCHED_SLICE_US_MIN * 1000ULL;
}

/* The slice a task starts a run with, queued or kept: @state is its hint. */
static __always_inline u64 run_slice(u32 state)
{
	return state == WS_HINT_THIEF ? thief_slice() : slice_ns;
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
 * Pick-two-random: probe two candidate deques with a lockless length read
 * and return the longer one, or -1 if both look empty.
 */
static __always_inline s32 pick_victim(s32 cpu, u32 my_llc, bool remote)
{
	s32 a, b, na = 0, nb = 0;

	a = remote ? rand_cpu_remote(my_llc) : rand_cpu_in_llc(my_llc);
	b = remote ? rand_cpu_remote(my_llc) : rand_cpu_in_llc(my_llc);
	if (a >= 0 && a != cpu)
		na = scx_bpf_dsq_nr_queued(a);
	if (b >= 0 && b != cpu)
		nb = scx_bpf_dsq_nr_queued(b);
	if (na <= 0 && nb <= 0)
		return -1;
	return na >= nb ? a : b;
}

static __always_inline u64 *mask_word(s32 cpu)
{
	return &queued_mask[((u32)cpu / 64) & (MASK_WORDS - 1)];
}

static __always_inline u64 mask_bit(s32 cpu)
{
	return 1ULL << ((u32)cpu % 64);
}

static __always_inline bool mask_test(s32 cpu)
{
	return *mask_word(cpu) & mask_bit(cpu);
}

static __always_inline void mask_set(s32 cpu)
{
	u64 *w = mask_word(cpu), bit = mask_bit(cpu);

	if (!(*w & bit))
		__sync_fetch_and_or(w, bit);
}

/* @cpu's deque looked empty: clear its bit, then look again (see above). */
static __always_inline void mask_clear(s32 cpu)
{
	u64 *w = mask_word(cpu), bit = mask_bit(cpu);

	if (!(*w & bit))
		return;
	__sync_fetch_and_and(w, ~bit);
	if (scx_bpf_dsq_nr_queued(cpu) > 0)
		__sync_fetch_and_or(w, bit);
}

/*
 * A plain bounded loop (unrolled by the compiler), not bpf_for(): this runs
 * on every CPU going idle, and the open-coded iterator's kfunc calls are a
 * measurable part of that path.
 */
static __always_inline bool mask_empty(void)
{
	u32 i;

	for (i = 0; i < MASK_WORDS; i++) {
		if (i * 64 >= nr_cpus)
			break;
		if (queued_mask[i])
			return false;
	}
	return true;
}

static __always_inline bool try_steal(s32 cpu, s32 victim, bool balance)
{
	if (victim < 0 || victim == cpu || (u32)victim >= nr_cpus)
		return false;
	/*
	 * A clear bit: nothing stealable arrived since the deque was last
	 * seen empty. A deque holding only a pinned task that waits for its
	 * idle owner keeps its bit clear, so CPUs going idle next to it do
	 * not try, in vain, to move that task.
	 */
	if (!mask_test(victim))
		return false;
	if (scx_bpf_dsq_nr_queued(victim) <= 0) {
		mask_clear(victim);
		return false;
	}
	STAT_INC(nr_steal_attempts);
	/* Takes the first task of the victim that may run here, if any. */
	if (!scx_bpf_dsq_move_to_local(victim, 0)) {
		cpu_ctx(victim)->unstealable = 1;
		return false;
	}
	STAT_INC(nr_steals);
	if (llc_of(victim) != llc_of(cpu))
		STAT_INC(nr_steals_remote_llc);
	if (balance)
		STAT_INC(nr_steals_balance);
	return true;
}

/* The CPU is about to go idle: find work anywhere, at bounded cost. */
static __always_inline bool steal_idle(s32 cpu)
{
	u32 my_llc = llc_of(cpu), hint, start, i;

	hint = cpu_ctx(cpu)->steal_hint;
	if (hint) {
		cpu_ctx(cpu)->steal_hint = 0;
		if (try_steal(cpu, hint - 1, false))
			return true;
	}
	if (mask_empty())
		return false;
	/*
	 * Pick-two only pays off where the sweep below cannot see every
	 * deque; on a small machine its probes would just repeat the sweep's
	 * (a CPU going idle with nothing to steal anywhere is the common
	 * case of a wakeup-heavy load: pipe ping-pong goes idle per message).
	 */
	if (nr_cpus > STEAL_SWEEP_MAX) {
		if (try_steal(cpu, pick_victim(cpu, my_llc, false), false))
			return true;
		if (nr_llcs > 1 && try_steal(cpu, pick_victim(cpu, my_llc, true), false))
			return true;
	}

	if (!nr_cpus)
		return false;
	start = bpf_get_prandom_u32() % nr_cpus;
	bpf_for(i, 0, STEAL_SWEEP_MAX) {
		if (i >= nr_cpus)
			break;
		if (try_steal(cpu, (start + i) % nr_cpus, false))
			return true;
	}
	return false;
}

/*
 * No task's vtime counts as more than LAG_SLICES base slices behind
 * vtime_now: enough lag for steal_balance() to notice a task that waited on
 * a crowded deque, not so much that a task could hold a CPU for long against
 * a waking one (whose vtime starts at most one slice behind vtime_now), or
 * that a stolen laggard could hold its new CPU for long.
 */
static __always_inline u64 vtime_floor(u64 vt)
{
	u64 floor = vtime_now - LAG_SLICES * slice_ns;

	return time_before(vt, floor) ? floor : vt;
}

/*
 * ... and none more than LEAD_SLICES base slices ahead. A task owes vtime
 * only to those it competed with: a light task that ran while its CPU had
 * nothing else to run (its every tick charged 100/weight times over) would
 * otherwise carry that debt into the next contention and wait there, for
 * seconds, until every task queued with it caught up, possibly preempted
 * inside an RCU read-side section. The price is a somewhat larger share for
 * a nice-19 or SCHED_IDLE task beside a nice-0 one than its weight gives.
 */
static __always_inline u64 vtime_clamp(u64 vt)
{
	u64 ceil = vtime_now + LEAD_SLICES * slice_ns;

	vt = vtime_floor(vt);
	return time_before(ceil, vt) ? ceil : vt;
}

/*
 * prev's vtime including the run it is just finishing, from its
 * sum_exec_runtime, which the kernel brings up to date before it calls
 * ops.dispatch for a CPU whose task is still ours (update_curr_scx()), and
 * which ops.stopping charges from too. Not from a clock read, which would
 * put a kfunc call into ops.running on every context switch.
 */
static __always_inline u64 current_vtime(struct task_struct *p)
{
	u64 vt = p->scx.dsq_vtime, ran;
	s32 cpu = task_cpu_of(p);

	if (cpu >= 0 && (u32)cpu < nr_cpus && cpu_ctx(cpu)->cur_pid == (u32)p->pid) {
		ran = p->se.sum_exec_runtime - cpu_ctx(cpu)->cur_sum;
		if ((s64)ran > 0)
			vt += scale_by_task_weight_inverse(p, ran);
	}
	return vtime_floor(vt);
}

/* Over its life, has @p run at least a base slice per voluntary sleep? */
static __always_inline bool cpu_bound(struct task_struct *p)
{
	return p->se.sum_exec_runtime >= slice_ns * (p->nvcsw + 1);
}

/*
 * How far behind the thief's next task a victim's head @p must have fallen
 * to be stolen for balance. A stolen laggard keeps the thief's CPU until
 * its vtime catches up there, so this gap is what a task woken on the
 * thief may wait behind it. A CPU-bound task (over its life at least a
 * base slice of run per voluntary sleep) lags only by waiting, and all of
 * that lag comes back as one long hold: it is stolen at min_slice(), the
 * run a crowded CPU gives anyway. Any other task, at a base slice: the lag
 * of a task that sleeps often comes and goes with its sleeps, and stealing
 * it at the smaller gap costs wakeup-heavy loads their batching.
 * Either way shares still follow vtime; the gap only decides how soon a
 * lag is evened out, so no task gains by looking like either kind.
 */
static __always_inline u64 balance_gap(struct task_struct *p)
{
	if (cpu_bound(p))
		return min_slice();
	return slice_ns;
}

/*
 * @prev ran out of slice; @ref is the vtime of whatever this CPU would run
 * next (prev, or its own deque's head if that is earlier). If a victim's
 * head has fallen more than balance_gap() behind @ref, run it here instead:
 * this is what spreads CPU time fairly across deques, not just within one.
 */
static __always_inline bool steal_balance(s32 cpu, u64 ref)
{
	struct task_struct *head;
	u32 my_llc = llc_of(cpu);
	u64 head_vtime;
	s32 victim;

	victim = pick_victim(cpu, my_llc, false);
	if (victim < 0 && nr_llcs > 1)
		victim = pick_victim(cpu, my_llc, true);
	if (victim < 0)
		return false;

	head = __COMPAT_scx_bpf_dsq_peek(victim);
	if (!head)
		return false;
	head_vtime = head->scx.dsq_vtime;
	if (!time_before(head_vtime + balance_gap(head), ref))
		return false;
	if (!try_steal(cpu, victim, true))
		return false;
	STAT_ADD(balance_lag_us, (ref - head_vtime) / 1000);
	if (time_before(ref, head_vtime + slice_ns))
		STAT_INC(nr_steals_balance_early);
	return true;
}

/* Wake one idle CPU that @p may run on to steal from @victim's deque;
 * returns whether one was woken. */
static __always_inline bool kick_thief(struct task_struct *p, s32 victim)
{
	s32 thief;

	/*
	 * No other CPU may take a pinned task; picking would only claim
	 * the idle state of @victim itself, its one allowed CPU.
	 */
	if (p->nr_cpus_allowed <= 1)
		return false;
	thief = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (thief < 0 || thief == victim)
		return false;
	cpu_ctx(thief)->steal_hint = victim + 1;
	scx_bpf_kick_cpu(thief, WS_KICK_IDLE);
	STAT_INC(nr_kicks);
	return true;
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

/*
 * Worker preference: @p, a registered thread whose slot says WORKER (it
 * runs a task of its pool and may hold work its thieves wait for), was just
 * queued on @cpu's deque rather than run. The next free CPU should be its:
 * an idle CPU it may run on is woken to steal it; failing that, a CPU
 * running an idle thief of @p's own process (THIEF, outside any critical
 * section) is preempted and its next dispatch runs @p.
 *
 * Only @p's own process's threads are displaced: a process trades its own
 * thieves for its own workers and takes nothing from anyone else. @p may
 * not jump more than YIELD_LEAD_SLICES ahead of what waits there
 * (yield_fair()); the thief keeps its place by vtime. A thief is displaced
 * only after it has run for thief_slice(), so threads that flip between
 * WORKER and THIEF cannot displace each other faster than that, and the
 * deque's head gets its turn by vtime in between. Bounded: at most
 * STEAL_SWEEP_MAX CPUs probed with two array reads each; only a CPU running
 * a thread of @p's process costs a slot lookup.
 */
static __always_inline void prefer_worker(struct task_struct *p, s32 cpu)
{
	struct yield_target *yt;
	u32 tgid = p->tgid, start, i, c;
	u64 now;
	void *slots;
	s32 idle;

	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		if (idle != cpu) {
			cpu_ctx(idle)->steal_hint = cpu + 1;
			scx_bpf_kick_cpu(idle, WS_KICK_IDLE);
			STAT_INC(nr_kicks);
			STAT_INC(nr_worker_idle_kicks);
		}
		return;
	}
	slots = hint_proc_slots(p);
	if (!slots || !nr_cpus)
		return;
	start = bpf_get_prandom_u32() % nr_cpus;
	now = scx_bpf_now();
	bpf_for(i, 0, STEAL_SWEEP_MAX) {
		if (i >= nr_cpus)
			break;
		c = (start + i) % nr_cpus;
		if ((s32)c == cpu || cpu_ctx(c)->cur_tgid != tgid ||
		    time_before(now, cpu_ctx(c)->cur_start + thief_slice()))
			continue;
		if (!bpf_cpumask_test_cpu(c, p->cpus_ptr) ||
		    !hint_pid_is_idle_thief(slots, p, cpu_ctx(c)->cur_pid) ||
		    !yield_fair(p, c))
			continue;
		yt = &cpu_ctx(c)->yield_target;
		yt->boost = 0;
		yt->dsq = cpu;
		yt->tgid = tgid;
		yt->pid = p->pid;
		scx_bpf_kick_cpu(c, WS_KICK_PREEMPT);
		STAT_INC(nr_kicks);
		return;
	}
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
	struct task_struct *p;
	u32 pid = yt->pid, dsq = yt->dsq, boost = yt->boost, tgid = yt->tgid, n = 0;

	if (!pid)
		return false;
	yt->pid = 0;
	if (dsq >= nr_cpus)
		return false;
	/*
	 * Worker preference: the kick preempted whatever runs here; if that
	 * is no longer an idle thief of the worker's process (it stopped, or
	 * entered a critical section, between prefer_worker()'s look and the
	 * kick: the same test as there), leave the target: prev then
	 * competes by vtime as after any slice and keeps the CPU.
	 */
	if (tgid && prev && (prev->scx.flags & WS_TASK_QUEUED) &&
	    (prev->tgid != tgid || !hint_task_is_idle_thief(prev))) {
		STAT_INC(nr_thief_preempt_stale);
		return false;
	}
	/* A boost preempts only a task of the yielder's process
	 * (yield_towards()); if another one ran here by the time of the
	 * kick, it keeps its turn. */
	if (boost && prev && (prev->scx.flags & WS_TASK_QUEUED) && prev->tgid != boost)
		return false;
	bpf_for_each(scx_dsq, p, dsq, 0) {
		if (++n > YIELD_SCAN_MAX)
			break;
		if (p->pid != pid)
			continue;
		if (!may_run_on(p, cpu))
			break;
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, WS_DSQ_LOCAL, 0))
			break;
		if (tgid)
			STAT_INC(nr_thief_preempted);
		else if (boost)
			STAT_INC(nr_yield_to_boost);
		else
			STAT_INC(nr_yield_to_handoff);
		return true;
	}
	return false;
}

/*
 * Worker preference at the next free CPU: @prev, an idle THIEF, used its
 * slice up (or yielded) on @cpu and would keep the CPU (nothing here is due
 * before it, no laggard to balance). A WORKER of the same process queued on
 * this CPU's deque or another (ws_cpu.queued_worker) runs here instead, and
 * @prev is queued here by vtime. Thief demotion alone puts a thief behind
 * such a worker only when their weights allow it (a heavy enough thief
 * outruns a nice-0 worker even charged WS_THIEF_CHARGE x), and
 * prefer_worker() acts only when the worker is queued; this catches every
 * thief that holds or gets a CPU afterwards, at most a thief slice later,
 * with no kick. The worker takes exactly the thief's turn, so only the
 * thief's process pays, and may not be more than YIELD_LEAD_SLICES ahead of
 * this CPU's head (yield_fair()). Bounded: STEAL_SWEEP_MAX + 1 entries read
 * (this CPU's first, then from a random start), one deque scanned (at most
 * YIELD_SCAN_MAX entries).
 */
static __always_inline bool dispatch_queued_worker(s32 cpu, struct task_struct *prev)
{
	struct queued_worker *qw;
	struct task_struct *p;
	u32 tgid = prev->tgid, start, i, c = 0, pid = 0, n = 0;
	void *slots;

	if (!hints_live_for(prev) || !nr_cpus)
		return false;
	slots = hint_idle_thief_slots(prev);
	if (!slots)
		return false;
	/* This CPU's own deque first (no migration), then from a random start. */
	start = bpf_get_prandom_u32() % nr_cpus;
	bpf_for(i, 0, STEAL_SWEEP_MAX + 1) {
		if (i > nr_cpus)
			break;
		c = i ? (start + i - 1) % nr_cpus : (u32)cpu;
		qw = &cpu_ctx(c)->queued_worker;
		if (qw->pid && qw->tgid == tgid) {
			pid = qw->pid;
			break;
		}
	}
	if (!pid)
		return false;
	bpf_for_each(scx_dsq, p, c, 0) {
		if (++n > YIELD_SCAN_MAX)
			break;
		if (p->pid != pid)
			continue;
		if (p->tgid != tgid)
			break;
		if (!hint_task_is_worker_in(slots, p))
			break;
		if (!may_run_on(p, cpu) || !yield_fair(p, cpu))
			return false;	/* another thief's CPU may take it */
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, WS_DSQ_LOCAL, 0))
			break;
		cpu_ctx(c)->queued_worker.pid = 0;
		STAT_INC(nr_worker_pulled);
		return true;
	}
	/* Gone (it ran, was stolen or moved), or no longer a worker. */
	qw = &cpu_ctx(c)->queued_worker;
	if (qw->pid == pid)
		qw->pid = 0;
	return false;
}

/*
 * The runqueue of @cpu, whose lock ops.enqueue holds (the task's CPU), or
 * NULL where the kernel gives no way to read it.
 */
static __always_inline struct rq *enqueue_rq(s32 cpu)
{
	struct rq *rq = NULL;

	if (bpf_ksym_exists(scx_bpf_locked_rq___compat))
		rq = scx_bpf_locked_rq___compat();
	else if (bpf_ksym_exists(scx_bpf_cpu_rq))
		rq = scx_bpf_cpu_rq(cpu);	/* < 6.18: enqueue holds its lock too */
	return rq && rq->cpu == cpu ? rq : NULL;
}

/*
 * Is the task being enqueued woken from an interrupt: a timer's expiry (a
 * periodic or timed sleep, a timeout), a device, a softirq (the network)?
 * What it waited for was time or the outside world, not another task: a
 * task woken by a running one (a pipe's reader, a futex waiter,
 * hackbench's receivers) is woken from its waker's system call. (Under
 * sched_ext the kernel's wake list is not used, so a waker on another CPU
 * does not make the wakeup an interrupt's.) Read from this CPU's preempt
 * count (WS_IRQ_COUNT_MASK*).
 */
static __always_inline bool woken_in_irq(void)
{
	int *pc;

	if (!bpf_ksym_exists(&__preempt_count))
		return false;
	pc = bpf_this_cpu_ptr(&__preempt_count);
	if (!pc)
		return false;
	if (bpf_ksym_exists(&local_interrupt_disable_state))
		return (u32)*pc & WS_IRQ_COUNT_MASK_WIDE;
	return (u32)*pc & WS_IRQ_COUNT_MASK;
}

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
 * Did @p wait for time rather than for another task: is it woken from an
 * interrupt (@irq: ws_irq_wakeup()), or did it sleep at least
 * wake_preempt_ns (se.exec_start is where its last run stopped, by the
 * clock rq->clock_task gives)? A periodic task that was woken late sleeps
 * less than its period the next time, or not at all; the interrupt still
 * says what it waits for.
 */
static __always_inline bool waited_for_time(struct task_struct *p, struct rq *rq, bool irq)
{
	return irq || (s64)(rq->clock_task - p->se.exec_start) >= (s64)wake_preempt_ns;
}

/*
 * A waking task keeps at most one base slice of credit against vtime_now,
 * and, on a crowded CPU whose deque head lags vtime_now (by up to
 * LAG_SLICES slices), it is placed no further than one slice behind that
 * head (@cpu: the CPU whose deque it joins): it waits for the tasks within
 * a slice of the head, not for every laggard's LAG_SLICES slices, which
 * starved kthreads such as rcu_preempt under load. Not at the head itself:
 * that costs wakeup-heavy loads (hackbench) throughput.
 *
 * A wakee that waited for time (waited_for_time(); @irq: it is woken from an
 * interrupt) is placed by the CPU's own tasks instead (@rq: the locked
 * runqueue of @cpu, NULL where none is held): no later than just before the
 * earliest of the deque's head and the running task's vtime at the start of
 * its run. vtime_now follows the least crowded CPUs, a CPU hog on a more
 * crowded one lags it, and a periodic task placed a slice behind vtime_now
 * or behind such a hog would be after the hog, neither preempt it nor cut
 * its run (wake_preempt()), and wait out its slice, at every wakeup. Level
 * with the CPU's earliest task, as a task that keeps no lag would be, it
 * gains no share: it is still charged every run, and it is only ever moved
 * later, never earlier than its own vtime. One woken by a task, not an
 * interrupt, keeps no credit against vtime_now either: a task that waited
 * for time and is woken by another is not a light periodic one but,
 * typically, a parallel job's worker leaving its barrier or a message's
 * receiver, and a burst of them, each up to a slice ahead of a light thread
 * level with vtime_now (the credit is what vtime_now advanced while they
 * slept), kept that thread waiting for each of them to run that credit off.
 * An interrupt's wakee keeps the slice, which the latency beside crowded
 * CPUs' hogs needs. Any other wakee keeps the batching above, which
 * wakeup-heavy loads need.
 *
 * Applied once, where a waking task is placed: by ops.enqueue for an
 * SCX_ENQ_WAKEUP (every wakeup not dispatched directly), and by
 * ops.select_cpu for the ones it dispatches directly, which ops.enqueue
 * never sees. Not in an ops.runnable of its own: every struct_ops callback
 * costs a call per wakeup even when it returns at once. A forked task is
 * not credited: ops.enable has just set its vtime to vtime_now.
 */
static __always_inline void wake_credit(struct task_struct *p, s32 cpu, struct rq *rq, bool irq)
{
	bool timed = rq && waited_for_time(p, rq, irq);
	struct task_struct *head, *curr;
	u64 ref = vtime_now;

	/* ref - slice_ns: where the wakee goes if it is behind */
	if (timed && !irq)
		ref = vtime_now + slice_ns;
	/*
	 * The common case, a task that ran recently, needs no peek at the
	 * deque: its place can only move back, and never past vtime_now.
	 */
	if (!time_before(p->scx.dsq_vtime, ref - slice_ns))
		return;
	if (cpu >= 0 && (u32)cpu < nr_cpus) {
		head = __COMPAT_scx_bpf_dsq_peek(cpu);
		if (timed) {
			u64 first;

			/*
			 * ref - slice_ns: one before the earliest of the two,
			 * or vtime_now (less a slice for an interrupt's wakee)
			 */
			first = head ? head->scx.dsq_vtime : ref + slice_ns;
			if ((curr = rq->curr) && curr->pid &&
			    cpu_ctx(cpu)->cur_pid == (u32)curr->pid &&
			    time_before(curr->scx.dsq_vtime, first))
				first = curr->scx.dsq_vtime;
			if (time_before(first - 1 + slice_ns, ref))
				ref = first - 1 + slice_ns;
		} else if (head && time_before(head->scx.dsq_vtime + 2 * slice_ns, ref)) {
			ref = head->scx.dsq_vtime + 2 * slice_ns;
		}
	}
	if (time_before(p->scx.dsq_vtime, ref - slice_ns))
		scx_bpf_task_set_dsq_vtime(p, ref - slice_ns);
}

/*
 * A task the kernel moves to another CPU while it is runnable (an affinity
 * or cpuset change; p->on_rq is TASK_ON_RQ_MIGRATING only inside such a
 * move, and the scheduler's own moves, steals, bypass ops.enqueue) keeps
 * no lag against the tasks of its new CPU (@cpu, whose rq @rq is locked,
 * or NULL): it is placed no earlier than the earliest of that deque's head
 * and the running task's vtime at the start of its run, or than vtime_now
 * less a slice where the CPU has neither. Its lag was against vtime_now,
 * which follows the least crowded CPUs; a task that waited its turns on a
 * crowded CPU lags it by up to LAG_SLICES slices without being owed
 * anything there, and carried here that lag made every task of the new
 * CPU, a periodic one too, wait while the newcomer caught up. Its lead it
 * keeps, so a move never gains a task anything, and only the task moved
 * loses: only a task's owner or root may move it.
 */
static __always_inline void migrate_place(struct task_struct *p, s32 cpu, struct rq *rq)
{
	struct task_struct *head, *curr;
	u64 first = vtime_now - slice_ns;
	bool any = false;

	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head) {
		first = head->scx.dsq_vtime;
		any = true;
	}
	if (rq && (curr = rq->curr) && curr->pid && cpu_ctx(cpu)->cur_pid == (u32)curr->pid &&
	    (!any || time_before(curr->scx.dsq_vtime, first)))
		first = curr->scx.dsq_vtime;
	if (time_before(p->scx.dsq_vtime, first)) {
		scx_bpf_task_set_dsq_vtime(p, first);
		STAT_INC(nr_migrate_placed);
	}
}

/*
 * What ops.enqueue needs to know about @cpu, the owner of the deque it is
 * about to insert into, whose rq lock it holds:
 *
 * WS_OWNER_BUSY: it runs a task outside a dispatch, so it runs ops.dispatch
 * before it can go idle: no kick needed.
 *
 * WS_OWNER_IDLE: it runs its idle task outside a dispatch. For a wakeup the
 * kernel reschedules it right after ops.enqueue (ttwu_do_activate() ->
 * wakeup_preempt(): a sched_ext task outranks the idle class), so a kick
 * would only add an irq_work self-IPI and a second IPI; and a task only the
 * owner may run, arriving at an empty deque, can go straight to the owner's
 * local DSQ, being its next task anyway.
 *
 * WS_OWNER_UNKNOWN: inside a dispatch (which may drop the lock and then find
 * nothing), or the rq cannot be read: kick.
 *
 * This is the kernel's can_skip_idle_kick(), made here on the stable,
 * locked rq: scx_bpf_kick_cpu() makes it only under a trylock of that rq,
 * which always fails for the lock's holder, so its kick would be a
 * self-IPI that finds @cpu busy. Kernels before 6.18 name the flag
 * SCX_RQ_IN_BALANCE (both are tested where they exist); without either, or
 * without the kfuncs, the answer is WS_OWNER_UNKNOWN.
 */
enum ws_owner { WS_OWNER_UNKNOWN, WS_OWNER_BUSY, WS_OWNER_IDLE };

static __always_inline enum ws_owner owner_look(s32 cpu, struct rq *rq)
{
	u64 busy_flags = 0;

	if (bpf_core_enum_value_exists(enum scx_rq_flags, SCX_RQ_IN_DISPATCH))
		busy_flags |= bpf_core_enum_value(enum scx_rq_flags, SCX_RQ_IN_DISPATCH);
	if (bpf_core_enum_value_exists(enum scx_rq_flags___old, SCX_RQ_IN_BALANCE))
		busy_flags |= bpf_core_enum_value(enum scx_rq_flags___old, SCX_RQ_IN_BALANCE);
	if (!busy_flags)
		return WS_OWNER_UNKNOWN;
	if (!rq || (rq->scx.flags & busy_flags))
		return WS_OWNER_UNKNOWN;
	return (u64)rq->curr == (u64)rq->idle ? WS_OWNER_IDLE : WS_OWNER_BUSY;
}

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
	if (is_idle) {
		wake_credit(p, cpu, NULL, false);	/* ops.enqueue is skipped */
		scx_bpf_dsq_insert(p, WS_DSQ_LOCAL, slice_ns, 0);
		STAT_INC(nr_direct_dispatch);
	}
	return cpu;
}

/*
 * The end of a run at the rate bounds of wakeup preemption: one timer per
 * CPU, armed by wake_preempt() for the run it found too young to preempt,
 * or on a CPU at its rate bound (kick_wait()), and firing when that run
 * reaches wake_preempt_ns or the CPU's bound allows. A slice cut alone
 * would be noticed only at the tick after the bound (a tick is 1-10 ms).
 * The map's key is the CPU.
 * The run is named by its task and by se.sum_exec_runtime at its start
 * (ws_cpu.cur_pid, ws_cpu.cur_sum): when the timer fires, it kicks the CPU only if
 * that run is still on it and its deque still holds a task; the CPU's
 * dispatch then picks by vtime, as after any slice. A timer armed for a
 * run is not armed again for it until it fires (arming from ops.enqueue,
 * with interrupts off, costs the kernel an irq_work), so a stream of
 * wakees arms it at most once per run. pid and sum are written by
 * whichever CPU arms and read by the callback without synchronisation: a
 * torn or stale pair costs one needless reschedule or leaves the run to
 * its (cut) slice.
 */
struct wake_cut {
	struct bpf_timer timer;
	u64 sum;
	u32 pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WSCHED_MAX_CPUS);
	__type(key, u32);
	__type(value, struct wake_cut);
} wake_cuts SEC(".maps");

/*
 * A struct wake_cut's timer fired for @cpu: kick the CPU if the run it was
 * armed for is still on it and its deque holds a task. Whether it kicked.
 */
static __always_inline bool run_cut_kick(u32 cpu, struct wake_cut *wc)
{
	u32 pid = wc->pid;

	wc->pid = 0;		/* fired: it may be armed again */
	if (cpu >= nr_cpus || !pid || cpu_ctx(cpu)->cur_pid != pid ||
	    cpu_ctx(cpu)->cur_sum != wc->sum || !scx_bpf_dsq_nr_queued(cpu))
		return false;
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

static int wake_cut_fire(void *map, int *key, struct wake_cut *wc)
{
	if (run_cut_kick(*key, wc))
		STAT_INC(nr_wake_cut_kicks);
	return 0;
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
	    !lat_recent(lat_any_at) || hint_registered(p))
		return;
	se = bpf_map_lookup_elem(&slice_ends, &key);
	if (se && cpu_ctx(cpu)->cur_pid == (u32)p->pid &&
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

/* Set up every CPU's timers (ops.init). */
static s32 wake_cut_init(void)
{
	u32 i;
	s32 ret;

	bpf_for(i, 0, nr_cpus) {
		ret = RUN_CUT_SETUP(wake_cuts, i, wake_cut_fire);
		if (!ret)
			ret = RUN_CUT_SETUP(slice_ends, i, slice_end_fire);
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
 * most WAKE_KICK_BURST switches in a row, and one per lat_slice_ns
 * (--slice-lat-us, 1 ms) on average. The bound on the running task's run
 * (wake_preempt_ns) alone lets a task that sleeps a little longer than
 * it, woken by its timer each time, switch a CPU hog out at every
 * wakeup, so that the hog's CPU goes to switches rather than to either
 * task (test timer_storm_bounded, in tests/parallel/). A periodic thread
 * (a timer, audio, a heartbeat: a wakeup per millisecond or fewer per
 * CPU) never meets this bound and keeps its prompt start; a faster
 * stream of wakees waits up to about lat_slice_ns each, what slices near
 * them are cut to anyway (lat_cut()).
 * A generic cell rate algorithm: ws_cpu.kick_tat is when the next switch would
 * be due at the sustained rate; a switch at @now conforms when that is at
 * most (WAKE_KICK_BURST - 1) periods ahead of @now. Every switch the rule
 * makes is charged: a kick now, a cut (wake_cut_arm()) at its end.
 * ws_cpu.kick_tat is written by whichever CPU enqueues a wakee there,
 * without atomics: a lost update allows one more switch.
 */
#define WAKE_KICK_BURST		4

/* How long until @cpu may be switched for a wakee (0: now). */
static __always_inline u64 kick_wait(s32 cpu, u64 now)
{
	u64 tat = cpu_ctx(cpu)->kick_tat;
	u64 tau = (WAKE_KICK_BURST - 1) * lat_slice_ns;

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
	cpu_ctx(cpu)->kick_tat = tat + lat_slice_ns;
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
 *   least lat_slice_ns for a wakee of a task on another CPU: a process
 *   can wake its own threads from another CPU as fast as it likes, and at
 *   wake_preempt_ns a stream of such wakeups switched a CPU hog out at
 *   nearly every one (test wakeup_storm_from_another_cpu_bounded, in
 *   tests/parallel/: it needs CPUs that run at once); when it has run
 *   less, the run is ended at that bound instead (wake_cut_arm());
 * - the CPU is within its rate bound (kick_wait(): at most
 *   WAKE_KICK_BURST switches in a row, one per lat_slice_ns on average);
 *   beyond it, the run is ended when the bound allows instead;
 * - the running task belongs to no registered process
 *   (hint_registered()): fork/join workers, thieves and lock holders in a
 *   graced section keep the CPU exactly as without this rule.
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
	    cpu_ctx(cpu)->cur_pid != (u32)curr->pid)
		return;
	if (!irq && !cpu_bound(curr))
		return;
	if (!irq && bound < lat_slice_ns)
		bound = lat_slice_ns;
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
	cvt = curr->scx.dsq_vtime + scale_by_task_weight_inverse(curr, ran);
	if (!time_before(vtime, cvt))
		return;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head && head != p && time_before(head->scx.dsq_vtime, vtime))
		return;
	if (hint_registered(curr))
		return;
	now = bpf_ktime_get_ns();
	left = (s64)ran < (s64)bound ? bound - ran : 0;
	wait = kick_wait(cpu, now);
	if (wait > left) {
		left = wait;
		STAT_INC(nr_wake_rate_bound);
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
	if (lat_slice_ns >= min_slice() || !lat_recent(cpu_ctx(cpu)->lat_wake_at) ||
	    hint_registered(p))
		return min_slice();
	return lat_slice_ns;
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

	if (dispatch_yield_target(cpu, prev))
		return;

	if (prev && (prev->scx.flags & WS_TASK_QUEUED)) {
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
	u64 cut;

	wsched_hint_tick(p);	/* a grace for a critical section, first */
	if (cpu < 0 || (u32)cpu >= nr_cpus)
		return;
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
	 */
	cut = lat_cut(p, cpu);
	if (p->scx.slice > cut) {
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
	if (thief >= 0 && thief != cpu) {
		cpu_ctx(thief)->steal_hint = cpu + 1;
		scx_bpf_kick_cpu(thief, WS_KICK_IDLE);
		STAT_INC(nr_kicks);
	}
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
		yt->tgid = 0;
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
	if (cpu_ctx(cpu)->wake_kicked)
		cpu_ctx(cpu)->wake_kicked = 0;
	if (hints_live())
		cpu_ctx(cpu)->cur_start = scx_bpf_now();
	cpu_ctx(cpu)->cur_tgid = p->tgid;
	cpu_ctx(cpu)->cur_pid = p->pid;
	if (cpu_ctx(cpu)->queued_worker.pid == (u32)p->pid)
		cpu_ctx(cpu)->queued_worker.pid = 0;
}

/*
 * From ops.stopping: vtime_now follows the largest vtime a task started a
 * run with (@vt, before the run's charge: the charged vtime would put
 * wakeups a run further back; a racy max, see the top), moving by no more
 * than the run's CPU time (@ran, without thief surcharge) and no more than
 * a slice plus the wall time since the last advance. A nice-0 or heavier
 * task that started no further ahead than its run's length never meets
 * either bound. A light task, charged 100/weight times over, sits at
 * vtime_clamp()'s lead bound: the CPU-time bound keeps it from dragging
 * vtime_now, and that bound, away from a crowded CPU's tasks, whose
 * wakeups would then queue behind all that waits there (guest tests
 * wakeup_not_behind_a_frequent_light_task and
 * wakeup_not_behind_a_light_tasks_clock).
 */
static __always_inline void vtime_now_advance(u64 vt, u64 ran)
{
	u64 lim, now;

	if (!time_before(vtime_now, vt))
		return;
	now = scx_bpf_now();	/* after the test: only an advance needs the clock */
	lim = slice_ns;
	if (time_before(vtime_now_at, now))
		lim += now - vtime_now_at;
	if (ran < lim)
		lim = ran;
	lim += vtime_now;
	vtime_now = time_before(lim, vt) ? lim : vt;
	vtime_now_at = now;
}

/*
 * Charges the run that ops.running started on @p's CPU. A stop without
 * that start (a task already running when the scheduler was loaded) finds
 * another pid in ws_cpu.cur_pid and is not charged.
 */
void BPF_STRUCT_OPS(wsched_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = task_cpu_of(p);
	u64 sum = p->se.sum_exec_runtime, ran, charge, vt;

	if (cpu_ctx(cpu)->cur_pid != (u32)p->pid)
		return;
	cpu_ctx(cpu)->cur_pid = 0;
	cpu_ctx(cpu)->cur_tgid = 0;
	ran = sum - cpu_ctx(cpu)->cur_sum;
	if ((s64)ran <= 0)
		return;
	charge = ran;
	if (wsched_hint_stopping(p, runnable)) {
		charge *= WS_THIEF_CHARGE;
		STAT_INC(nr_thief_demotions);
	}
	vt = p->scx.dsq_vtime;
	vtime_now_advance(vt, ran);
	scx_bpf_task_set_dsq_vtime(p, vtime_clamp(vt + scale_by_task_weight_inverse(p, charge)));
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
	ret = wake_cut_init();
	if (ret)
		scx_bpf_error("failed to set up the wakeup cut timers (%d)", ret);
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
	       .enable		= (void *)wsched_enable,
	       .init		= (void *)wsched_init,
	       .exit		= (void *)wsched_exit,
	       .name		= "wsched");
