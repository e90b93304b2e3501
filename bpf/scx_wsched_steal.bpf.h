/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched stealing: how a CPU takes work from another's deque.
 * - A CPU going idle steals (steal_idle()): the kicker's hint, pick-two in
 *   its LLC, pick-two elsewhere, then a sweep of at most STEAL_SWEEP_MAX
 *   deques; each probe is a lockless length read, so a dispatch costs a
 *   constant, not a function of the number of CPUs. queued_mask skips the
 *   sweep when no deque holds anything stealable.
 * - A CPU whose task used its slice up steals a victim's head that lags
 *   what it would run next by more than balance_gap() (steal_balance()):
 *   this is what spreads CPU shares across deques, not just within one.
 * - A deque that gets work while others wait wakes one idle CPU to take it
 *   (kick_thief(), kick_idle_thief()).
 * A steal is scx_bpf_dsq_move_to_local(victim): the kernel takes the
 * first task there that may run on the thief, so stealing never breaks
 * affinity or moves a migration-disabled task. Victim lengths are stale by
 * the time of the move: a failed move costs a lock round trip.
 */
#ifndef __SCX_WSCHED_STEAL_BPF_H
#define __SCX_WSCHED_STEAL_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_stats.bpf.h"
#include "scx_wsched_tunables.bpf.h"
#include "scx_wsched_vtime.bpf.h"

#define STEAL_SWEEP_MAX		16	/* deques a thief probes, at most */

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

/* Wake @thief, an idle CPU, to steal from @victim's deque first. */
static __always_inline void kick_idle_thief(s32 thief, s32 victim)
{
	cpu_ctx(thief)->steal_hint = victim + 1;
	scx_bpf_kick_cpu(thief, WS_KICK_IDLE);
	STAT_INC(nr_kicks);
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
	kick_idle_thief(thief, victim);
	return true;
}

#endif /* __SCX_WSCHED_STEAL_BPF_H */
