/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * wsched_ioctl.h: the ABI of /dev/wsched, the misc device of wsched.ko
 * (kmod/wsched.c). Shared by the module, libwsched and the tests; it also
 * compiles in a BPF program (for its constants; none includes it now).
 * Documentation/kmod.md explains the design.
 *
 * WSCHED_IOC_YIELD_TO gives the caller's CPU to another thread of the
 * caller's own thread group: the kernel's yield_to(), which under EEVDF
 * makes the target the next pick on its runqueue and under sched_ext calls
 * ops.yield(from, to). It is the "directed yield" KVM uses for preempted
 * vCPUs, offered to the threads of one process.
 *
 * Return values of ioctl(fd, WSCHED_IOC_YIELD_TO, &arg):
 *    1  handed over: the scheduling class accepted the yield and the caller
 *       was switched out before the call returned (result has both
 *       WSCHED_YIELD_ACCEPTED and WSCHED_YIELD_SWITCHED);
 *    0  not handed over (result says why: not accepted, or accepted but the
 *       caller kept its CPU, or WSCHED_YIELD_ALONE); with
 *       WSCHED_YIELD_TO_FALLBACK in flags, a call the class did not accept
 *       then yields like sched_yield() (WSCHED_YIELD_FELL_BACK);
 *   -1  with errno:
 *       EINVAL  arg.version is not WSCHED_ABI_VERSION, arg.flags has a bit
 *               outside WSCHED_YIELD_TO_FLAGS, arg.reserved is not zero,
 *               arg.tid is 0 or above INT_MAX, or arg.tid is the caller;
 *       ESRCH   no thread arg.tid in the caller's pid namespace, or it is
 *               exiting;
 *       EPERM   arg.tid is a thread of another process (root included);
 *       EFAULT  arg is not readable and writable memory.
 * A call that fails with an errno changed nothing (except EFAULT when arg
 * became unwritable during the call: the yield may then have happened).
 *
 * Any command of another type or an unknown number gives ENOTTY; a known
 * number encoded with another size or direction gives EINVAL.
 *
 * Growing the ABI: fields are only ever added in place of `reserved`, which
 * callers must zero, with a new version number and a feature bit; a module
 * keeps accepting every older version. Callers check WSCHED_IOC_VERSION
 * first, or simply treat EINVAL on a well-formed call as "too old".
 */
#ifndef _WSCHED_IOCTL_H
#define _WSCHED_IOCTL_H

/* BPF programs built on vmlinux.h already have the __u32/__u64 types. */
#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define WSCHED_DEV_NAME		"wsched"
#define WSCHED_DEV_PATH		"/dev/wsched"

/* The version this header describes; also the value of wsched_yield_to.version. */
#define WSCHED_ABI_VERSION	1

/* wsched_version.features */
#define WSCHED_FEAT_YIELD_TO		(1ULL << 0)
#define WSCHED_FEAT_YIELD_FALLBACK	(1ULL << 1)

/* wsched_yield_to.flags (set by the caller) */
#define WSCHED_YIELD_TO_FALLBACK	(1U << 0) /* not accepted: yield as sched_yield() does */
#define WSCHED_YIELD_TO_FLAGS		WSCHED_YIELD_TO_FALLBACK

/* wsched_yield_to.result bits (written by the module) */
#define WSCHED_YIELD_ACCEPTED	(1U << 0) /* the class made tid the next pick on its CPU */
#define WSCHED_YIELD_SWITCHED	(1U << 1) /* the caller was switched out during the call */
#define WSCHED_YIELD_ALONE	(1U << 2) /* caller's and tid's runqueues held one task each: nothing done */
#define WSCHED_YIELD_FELL_BACK	(1U << 3) /* not accepted, so yielded as sched_yield() (WSCHED_YIELD_TO_FALLBACK) */

/* WSCHED_IOC_VERSION: all fields written by the module. */
struct wsched_version {
	__u32 abi_version;	/* WSCHED_ABI_VERSION of the module */
	__u32 yield_to_size;	/* sizeof(struct wsched_yield_to) it expects */
	__u64 features;		/* WSCHED_FEAT_* */
	__u64 reserved[2];	/* zero */
};

/* WSCHED_IOC_YIELD_TO */
struct wsched_yield_to {
	__u32 version;		/* in: WSCHED_ABI_VERSION */
	__u32 tid;		/* in: target thread id (gettid()) in the caller's pid namespace */
	__u32 flags;		/* in: WSCHED_YIELD_TO_* flags, others must be 0 */
	__u32 result;		/* out: WSCHED_YIELD_* bits; ignored on input */
	__u64 reserved[2];	/* in: must be 0 */
};

#define WSCHED_IOC_MAGIC	0xB9	/* unused in Documentation/userspace-api/ioctl/ioctl-number.rst (7.3) */
#define WSCHED_IOC_NR_VERSION	0
#define WSCHED_IOC_NR_YIELD_TO	1

/* BPF programs get the numbers only when they include <linux/ioctl.h> themselves. */
#ifndef __bpf__
#include <linux/ioctl.h>
#endif
#ifdef _IOR
#define WSCHED_IOC_VERSION	_IOR(WSCHED_IOC_MAGIC, WSCHED_IOC_NR_VERSION, struct wsched_version)
#define WSCHED_IOC_YIELD_TO	_IOWR(WSCHED_IOC_MAGIC, WSCHED_IOC_NR_YIELD_TO, struct wsched_yield_to)
#endif

#endif /* _WSCHED_IOCTL_H */
