/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched compatibility: what the policy needs from the kernel, read
 * the same way on every kernel it loads on (6.12 and later, built against
 * the 7.3 headers). Enum values are CO-RE relocations (WS_*), renamed or
 * newer kfuncs are weak and tested with bpf_ksym_exists() where used, and
 * kernel fields read directly are tested with bpf_core_field_exists():
 * the task's CPU (task_cpu_of()), the runqueue ops.enqueue holds
 * (enqueue_rq()), whether a wakeup comes from an interrupt
 * (woken_in_irq()) and whether a deque's owner is sure to look at it
 * (owner_look()). No policy is decided here.
 */
#ifndef __SCX_WSCHED_COMPAT_BPF_H
#define __SCX_WSCHED_COMPAT_BPF_H

#include <scx/common.bpf.h>

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
#undef SCX_ENQ_LAST
#define WS_DSQ_LOCAL	bpf_core_enum_value(enum scx_dsq_id_flags, SCX_DSQ_LOCAL)
#define WS_KICK_IDLE	bpf_core_enum_value(enum scx_kick_flags, SCX_KICK_IDLE)
#define WS_KICK_PREEMPT	bpf_core_enum_value(enum scx_kick_flags, SCX_KICK_PREEMPT)
#define WS_TASK_QUEUED	bpf_core_enum_value(enum scx_ent_flags, SCX_TASK_QUEUED)
#define WS_DSQ_ITER_REV	bpf_core_enum_value(enum scx_dsq_iter_flags, SCX_DSQ_ITER_REV)
#define WS_WAKE_SYNC	bpf_core_enum_value(enum scx_wake_flags, SCX_WAKE_SYNC)
#define WS_ENQ_WAKEUP	bpf_core_enum_value(enum scx_enq_flags, SCX_ENQ_WAKEUP)
#define WS_ENQ_LAST	bpf_core_enum_value(enum scx_enq_flags, SCX_ENQ_LAST)
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

#endif /* __SCX_WSCHED_COMPAT_BPF_H */
