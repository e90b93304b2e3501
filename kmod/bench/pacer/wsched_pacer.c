// SPDX-License-Identifier: GPL-2.0
/*
 * wsched_pacer: a lab-only module for bpf/scx_wsched_bench (PACER_US). It
 * arms one hrtimer per online CPU, every period_us microseconds, their
 * phases spread evenly over the period, and does nothing when they fire.
 *
 * Why: under QEMU's instruction-counted TCG (the lab's icount setting) a
 * vCPU's turn ends at the next timer deadline of the machine, so a
 * scheduler that reprograms timers often (EEVDF's HRTICK at every switch)
 * has its vCPUs take turns more often, and its tasks' runs and wakeups look
 * shorter, for reasons of the emulator, not of the policy. With a deadline
 * somewhere in the machine every period_us / nr_cpus, every scheduler gets
 * turns at least that fine (Documentation/results/latency.md).
 *
 * Not for real machines: it only costs interrupts there.
 */
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/hrtimer.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/smp.h>

static unsigned int period_us = 1000;
module_param(period_us, uint, 0444);
MODULE_PARM_DESC(period_us, "timer period per CPU in microseconds, 10-100000 (default 1000)");

static DEFINE_PER_CPU(struct hrtimer, pacer_timer);
static DEFINE_PER_CPU(bool, pacer_armed);
static ktime_t pacer_period, pacer_base;

static enum hrtimer_restart pacer_fire(struct hrtimer *t)
{
	hrtimer_forward_now(t, pacer_period);
	return HRTIMER_RESTART;
}

/* On each online CPU (on_each_cpu()): arm its timer pinned there. */
static void pacer_arm(void *unused)
{
	struct hrtimer *t = this_cpu_ptr(&pacer_timer);
	u64 phase = (u64)period_us * NSEC_PER_USEC * smp_processor_id() / nr_cpu_ids;

	hrtimer_setup(t, pacer_fire, CLOCK_MONOTONIC, HRTIMER_MODE_ABS_PINNED);
	hrtimer_start(t, ktime_add_ns(pacer_base, phase), HRTIMER_MODE_ABS_PINNED);
	this_cpu_write(pacer_armed, true);
}

static int __init pacer_init(void)
{
	if (period_us < 10 || period_us > 100000) {
		pr_err("wsched_pacer: period_us=%u is outside 10-100000\n", period_us);
		return -EINVAL;
	}
	pacer_period = ns_to_ktime((u64)period_us * NSEC_PER_USEC);
	pacer_base = ktime_add(ktime_get(), pacer_period);
	cpus_read_lock();	/* the CPUs armed are the CPUs cancelled */
	on_each_cpu(pacer_arm, NULL, 1);
	cpus_read_unlock();
	return 0;
}

static void __exit pacer_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		if (per_cpu(pacer_armed, cpu))
			hrtimer_cancel(per_cpu_ptr(&pacer_timer, cpu));
}

module_init(pacer_init);
module_exit(pacer_exit);
MODULE_DESCRIPTION("wsched lab: per-CPU timers that even out emulator turns");
MODULE_LICENSE("GPL");
