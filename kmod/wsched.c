// SPDX-License-Identifier: GPL-2.0
/*
 * wsched.ko: directed yield for the threads of one process.
 *
 * Linux gives "hand my CPU to that thread" only to KVM (kvm_vcpu_yield_to()
 * calls yield_to()). A work-stealing runtime needs the same thing: a thief
 * that keeps failing against a victim whose worker was preempted with work
 * in its deque, or a waiter spinning on a lock whose holder was preempted,
 * should give its CPU to that thread and not to whoever is next. This module
 * offers yield_to() to user space through one ioctl on /dev/wsched,
 * restricted to targets in the caller's own thread group, so it grants
 * nothing a process could not already do to itself (its threads could as
 * well block on a futex to let the target run).
 *
 * What yield_to() does (kernel/sched/syscalls.c, 7.3): with both runqueues
 * locked it checks that the target is runnable, not running, and in the
 * caller's scheduling class, then calls the class's yield_to_task hook:
 * EEVDF sets the target as the next buddy of its cfs_rq and yields the
 * caller; sched_ext calls ops.yield(from, to) and lets the BPF scheduler
 * decide. If the hook accepted, it reschedules the target's CPU (when it is
 * another one and `preempt` is set) and calls schedule(). It returns -ESRCH,
 * doing nothing, when both runqueues hold a single task; we report that as
 * WSCHED_YIELD_ALONE and keep -ESRCH for "no such thread".
 *
 * "Handed over" (ioctl returns 1) means: the class accepted and the caller
 * was switched out during the call, seen as a change of its involuntary
 * context-switch count (__schedule() counts a switch of a running task
 * there). When the target sits on another CPU, the caller's CPU may go to
 * someone else while the target is boosted on its own CPU; the result bits
 * keep those apart from a refusal.
 *
 * A declined yield_to() does not yield at all (under sched_ext without
 * ops.yield, every call is declined). With WSCHED_YIELD_TO_FALLBACK the
 * module then calls yield(), what sched_yield() does, so a waiter gets the
 * plain yield it would make next without a second system call.
 *
 * Lifetime: the misc device's fops carry THIS_MODULE, so every open file
 * holds a module reference (misc_open() -> fops_get()); rmmod fails with
 * EWOULDBLOCK while /dev/wsched is open, and no thread can be inside the
 * ioctl once the module may go (the ioctl runs on an open file).
 * misc_deregister() removes the sysfs counters and waits for their readers
 * before the per-CPU counters are freed.
 *
 * Counters are per-CPU (the ioctl is meant for hot paths) and summed when
 * read from /sys/class/misc/wsched/stats/. A reader may see a sum that is a
 * few increments old; nothing depends on them being exact at one instant.
 *
 * Not done here: choosing whom to yield to (the runtime knows its victims),
 * cross-process yields (no permission model would make them safe enough),
 * and yielding to a thread that is not runnable (nothing to hand over).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/fs.h>
#include <linux/limits.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>

#include <wsched/wsched_ioctl.h>

static_assert(sizeof(struct wsched_yield_to) == 32);
static_assert(sizeof(struct wsched_version) == 32);

static bool wsk_preempt = true;
module_param_named(preempt, wsk_preempt, bool, 0644);
MODULE_PARM_DESC(preempt,
		 "Reschedule the target's CPU when the target is queued on another CPU (yield_to's preempt argument; default: Y)");

static ushort wsk_dev_mode = 0666;
module_param_named(dev_mode, wsk_dev_mode, ushort, 0444);
MODULE_PARM_DESC(dev_mode,
		 "Permission bits of /dev/wsched (default: 0666; every call is limited to the caller's own threads)");

/*
 * The counters, one struct per CPU, listed once: WSK_STATS(X) expands
 * X(name) for each field in struct order; the names are also the file
 * names under stats/.
 */
#define WSK_STATS(X)							\
	X(nr_calls)	/* every ioctl on /dev/wsched */			\
	X(nr_version)	/* WSCHED_IOC_VERSION answered */			\
	X(nr_yield_to)	/* WSCHED_IOC_YIELD_TO that reached yield_to() */	\
	X(nr_accepted)	/* ... whose class accepted the yield */		\
	X(nr_handoffs)	/* ... accepted and the caller switched out (returned 1) */ \
	X(nr_declined)	/* ... refused by yield_to() (target running, sleeping, other class, class said no) */ \
	X(nr_alone)	/* ... with one task on each runqueue: nothing to do */	\
	X(nr_fallbacks)	/* ... not accepted, then yield() (WSCHED_YIELD_TO_FALLBACK) */ \
	X(nr_einval)	/* refused: bad version/flags/reserved/tid, self, wrong size */ \
	X(nr_esrch)	/* refused: no such thread, or exiting */		\
	X(nr_eperm)	/* refused: thread of another process */		\
	X(nr_efault)	/* refused: bad pointer */				\
	X(nr_enotty)	/* refused: unknown command */

struct wsk_stats {
#define WSK_STAT_FIELD(field) u64 field;
	WSK_STATS(WSK_STAT_FIELD)
#undef WSK_STAT_FIELD
};

static struct wsk_stats __percpu *wsk_stats;

#define wsk_count(field) this_cpu_inc(wsk_stats->field)

/* Counts the refusal and returns it. */
static long wsk_refuse(long err)
{
	switch (err) {
	case -EINVAL:
		wsk_count(nr_einval);
		break;
	case -ESRCH:
		wsk_count(nr_esrch);
		break;
	case -EPERM:
		wsk_count(nr_eperm);
		break;
	case -EFAULT:
		wsk_count(nr_efault);
		break;
	case -ENOTTY:
		wsk_count(nr_enotty);
		break;
	}
	return err;
}

static long wsk_version(struct wsched_version __user *uarg)
{
	struct wsched_version v = {
		.abi_version	= WSCHED_ABI_VERSION,
		.yield_to_size	= sizeof(struct wsched_yield_to),
		.features	= WSCHED_FEAT_YIELD_TO | WSCHED_FEAT_YIELD_FALLBACK,
	};

	if (copy_to_user(uarg, &v, sizeof(v)))
		return wsk_refuse(-EFAULT);
	wsk_count(nr_version);
	return 0;
}

/*
 * Returns the target with a reference held, or an ERR_PTR with the errno
 * the caller sees. The checks run in the documented order: existence in
 * our pid namespace, then thread group, then self, then exiting.
 */
static struct task_struct *wsk_get_target(u32 tid)
{
	struct task_struct *p;

	rcu_read_lock();
	p = pid_task(find_vpid(tid), PIDTYPE_PID);
	if (p)
		get_task_struct(p);
	rcu_read_unlock();

	if (!p)
		return ERR_PTR(-ESRCH);
	if (!same_thread_group(p, current)) {
		put_task_struct(p);
		return ERR_PTR(-EPERM);
	}
	if (p == current) {
		put_task_struct(p);
		return ERR_PTR(-EINVAL);
	}
	/*
	 * PF_EXITING is set before the thread's clear_child_tid wake-up, so a
	 * thread pthread_join() has returned for is always refused. One that
	 * starts exiting after this check is no longer runnable for long:
	 * yield_to() declines it or boosts it once, both harmless.
	 */
	if (READ_ONCE(p->flags) & PF_EXITING) {
		put_task_struct(p);
		return ERR_PTR(-ESRCH);
	}
	return p;
}

static long wsk_yield_to(struct wsched_yield_to __user *uarg)
{
	struct wsched_yield_to a;
	struct task_struct *p;
	unsigned long nivcsw;
	u32 result = 0;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return wsk_refuse(-EFAULT);
	if (a.version != WSCHED_ABI_VERSION || (a.flags & ~WSCHED_YIELD_TO_FLAGS) ||
	    a.reserved[0] || a.reserved[1])
		return wsk_refuse(-EINVAL);
	if (a.tid == 0 || a.tid > INT_MAX)
		return wsk_refuse(-EINVAL);
	/* Fail on a read-only argument before yielding, not after. */
	if (put_user(0U, &uarg->result))
		return wsk_refuse(-EFAULT);

	p = wsk_get_target(a.tid);
	if (IS_ERR(p))
		return wsk_refuse(PTR_ERR(p));

	wsk_count(nr_yield_to);
	nivcsw = READ_ONCE(current->nivcsw);
	ret = yield_to(p, READ_ONCE(wsk_preempt));
	put_task_struct(p);

	if (ret > 0) {
		result |= WSCHED_YIELD_ACCEPTED;
		wsk_count(nr_accepted);
	} else if (ret == -ESRCH) {
		result |= WSCHED_YIELD_ALONE;
		wsk_count(nr_alone);
	} else {
		wsk_count(nr_declined);
	}
	/*
	 * Under sched_ext without ops.yield, or for a target that is running
	 * elsewhere, a declined yield_to() does not yield at all; a waiter
	 * that asked for it gets the plain yield it would have made next,
	 * without a second system call.
	 */
	if (!(result & WSCHED_YIELD_ACCEPTED) && (a.flags & WSCHED_YIELD_TO_FALLBACK)) {
		yield();
		result |= WSCHED_YIELD_FELL_BACK;
		wsk_count(nr_fallbacks);
	}
	if (READ_ONCE(current->nivcsw) != nivcsw)
		result |= WSCHED_YIELD_SWITCHED;

	if (put_user(result, &uarg->result))
		return wsk_refuse(-EFAULT);
	if ((result & WSCHED_YIELD_ACCEPTED) && (result & WSCHED_YIELD_SWITCHED)) {
		wsk_count(nr_handoffs);
		return 1;
	}
	return 0;
}

static long wsk_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	wsk_count(nr_calls);
	if (_IOC_TYPE(cmd) != WSCHED_IOC_MAGIC)
		return wsk_refuse(-ENOTTY);

	/* A known number with another size or direction is a caller bug: EINVAL. */
	switch (_IOC_NR(cmd)) {
	case WSCHED_IOC_NR_VERSION:
		if (cmd != WSCHED_IOC_VERSION)
			return wsk_refuse(-EINVAL);
		return wsk_version(uarg);
	case WSCHED_IOC_NR_YIELD_TO:
		if (cmd != WSCHED_IOC_YIELD_TO)
			return wsk_refuse(-EINVAL);
		return wsk_yield_to(uarg);
	default:
		return wsk_refuse(-ENOTTY);
	}
}

static const struct file_operations wsk_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= wsk_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.llseek		= noop_llseek,
};

/* ---------------------------------------------------------------- sysfs */

struct wsk_stat_attr {
	struct device_attribute dattr;
	size_t offset;		/* of the u64 in struct wsk_stats */
};

static ssize_t wsk_stat_show(struct device *dev, struct device_attribute *dattr, char *buf)
{
	struct wsk_stat_attr *sa = container_of(dattr, struct wsk_stat_attr, dattr);
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*(u64 *)((char *)per_cpu_ptr(wsk_stats, cpu) + sa->offset));
	return sysfs_emit(buf, "%llu\n", sum);
}

#define WSK_STAT_ATTR(field)						\
	static struct wsk_stat_attr wsk_attr_##field = {		\
		.dattr	= __ATTR(field, 0444, wsk_stat_show, NULL),	\
		.offset	= offsetof(struct wsk_stats, field),		\
	};

WSK_STATS(WSK_STAT_ATTR)

static struct attribute *wsk_stat_attrs[] = {
#define WSK_STAT_ATTR_PTR(field) &wsk_attr_##field.dattr.attr,
	WSK_STATS(WSK_STAT_ATTR_PTR)
#undef WSK_STAT_ATTR_PTR
	NULL,
};

static const struct attribute_group wsk_stat_group = {
	.name	= "stats",
	.attrs	= wsk_stat_attrs,
};

static const struct attribute_group *wsk_groups[] = {
	&wsk_stat_group,
	NULL,
};

static struct miscdevice wsk_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= WSCHED_DEV_NAME,
	.fops	= &wsk_fops,
	.groups	= wsk_groups,
};

/* ---------------------------------------------------------------- load */

static int __init wsk_init(void)
{
	int ret;

	if (wsk_dev_mode & ~0777) {
		pr_err("dev_mode=%#o: only permission bits (0..0777) are allowed\n", wsk_dev_mode);
		return -EINVAL;
	}

	wsk_stats = alloc_percpu(struct wsk_stats);
	if (!wsk_stats)
		return -ENOMEM;

	wsk_misc.mode = wsk_dev_mode;
	ret = misc_register(&wsk_misc);
	if (ret) {
		pr_err("misc_register failed: %d\n", ret);
		goto err_free_stats;
	}

	pr_info("/dev/%s ready (ABI %d, preempt=%d, dev_mode=%#o)\n",
		WSCHED_DEV_NAME, WSCHED_ABI_VERSION, wsk_preempt, wsk_dev_mode);
	return 0;

err_free_stats:
	free_percpu(wsk_stats);
	wsk_stats = NULL;
	return ret;
}

static void __exit wsk_exit(void)
{
	misc_deregister(&wsk_misc);
	free_percpu(wsk_stats);
}

module_init(wsk_init);
module_exit(wsk_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The wsched authors");
MODULE_DESCRIPTION("wsched: directed yield (yield_to) between threads of one process via /dev/wsched");
MODULE_VERSION("1");
