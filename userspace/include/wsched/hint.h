/* SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause */
/*
 * wsched/hint.h - the hint ABI shared by libwsched (writer), scx_wsched.bpf.c
 * (reader) and the scx_wsched loader (which hands out the slot arrays).
 * Documentation/abi.md is the specification; this header is its code form.
 * Fixed-size types only: BPF, the loader and the library see one layout.
 *
 * Each registered process gets its own BPF array of WS_HINT_NR_SLOTS
 * entries, mapped into its address space: the header (struct
 * ws_hint_header) at index 0, then WS_HINT_NR_THREAD_SLOTS slots, one per
 * thread. A thread owns at most one slot: one of the WS_HINT_PROBE indices
 * WS_HINT_SLOT_IDX(tid, 0..WS_HINT_PROBE - 1) (its probe window, where the
 * scheduler looks first), else any free one, which it announces through
 * the header so that the scheduler remembers where it is. The scheduler
 * reads the array of a task's process (found by the task's tgid, taken
 * from the kernel) and accepts a slot only if owner_tid is the task's tid
 * (in its own PID namespace) and abi_version is WS_HINT_ABI_VERSION. Every
 * field is untrusted input to the scheduler.
 */
#ifndef WSCHED_HINT_H
#define WSCHED_HINT_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define WS_HINT_ABI_VERSION	3u
#define WS_HINT_NR_SLOTS	4097u	/* entries per process: the header and the thread slots */
#define WS_HINT_NR_THREAD_SLOTS	(WS_HINT_NR_SLOTS - 1)	/* power of two */
#define WS_HINT_SLOT_SIZE	64u
#define WS_HINT_PROBE		8u	/* slots in a thread's probe window */
#define WS_HINT_MAX_DEPTH	64u	/* cs_depth above this is malformed */
#define WS_HINT_MAX_PROCS	1024u	/* registered processes at once */
#define WS_HINT_SOCK_PATH	"/run/wsched/wsched.sock"

/* The @i-th index from thread @tid's first slot, wrapping within the thread
 * slots (1 .. WS_HINT_NR_THREAD_SLOTS): never the header's 0. */
#define WS_HINT_SLOT_IDX(tid, i) (1u + (((tid) + (i)) & (WS_HINT_NR_THREAD_SLOTS - 1)))

/* ws_hint_slot.state */
enum ws_hint_state {
	WS_HINT_OTHER	= 0,	/* registered, not a pool worker, or unknown */
	WS_HINT_WORKER	= 1,	/* a worker running a task */
	WS_HINT_THIEF	= 2,	/* a worker searching for work to steal */
	WS_HINT_PARKED	= 3,	/* a worker about to sleep or asleep */
	WS_HINT_STATE_MAX = WS_HINT_PARKED,
};

/*
 * One thread's slot. Written only by its owner thread (single writer),
 * except owner_tid, which a registering thread claims with a CAS from 0.
 * The scheduler only reads.
 */
struct ws_hint_slot {
	__u32 abi_version;	/* WS_HINT_ABI_VERSION while registered, else 0 */
	__u32 owner_tid;	/* kernel tid (gettid()) of the owner, 0: free */
	__u32 state;		/* enum ws_hint_state */
	__u32 cs_depth;		/* critical-section nesting depth, 0: outside */
	__u64 cs_count;		/* critical sections entered (outermost and nested) */
	__u32 nr_stealable;	/* tasks other threads may steal from the owner */
	__u32 yield_to_tid;	/* directed-yield target; 0: none */
	/* Set (1) by the scheduler, only in the slot of the task it is
	 * ticking, when it grants that task a grace; cleared by the scheduler
	 * when the task stops, and by the library when it leaves its
	 * outermost section, which then calls sched_yield(). */
	__u32 grace_pending;
	__u32 flags;		/* WS_HINT_FLAG_*, set by the owner */
	__u32 reserved[6];	/* 0; future versions */
};

/*
 * ws_hint_slot.flags, set by the owner; 0 keeps every default behaviour.
 * YIELD_PLAIN: the owner's sched_yield() always has its plain meaning (the
 * head of its CPU's deque runs next), never the yield-to-all a registered
 * thread's yield outside every critical section otherwise gets.
 */
#define WS_HINT_FLAG_YIELD_PLAIN	(1u << 0)

/*
 * A yield declared plain by its caller: syscall(SYS_sched_yield,
 * WS_HINT_YIELD_PLAIN_ARG) (sched_yield() takes no argument; the kernel
 * ignores the register). scx_wsched then treats the yield as plain for
 * this call and, when nothing waits on the caller's CPU, returns without
 * reading the caller's slot at all: the cheap yield of a thread that
 * already knows it is inside a critical section. 64-bit builds only.
 */
#define WS_HINT_YIELD_PLAIN_ARG	0x77737966706c6e31ull	/* "wsyfpln1" */

/*
 * Slot 0 of every array. abi_version and owner_tid stay 0, so no thread
 * owns it and the scheduler never takes it for a slot.
 *
 * announce: a thread whose probe window was full claims a free slot
 * elsewhere and stores (its tid << 32 | that index) here, then calls
 * sched_yield(); scx_wsched's ops.yield, seeing its own tid there and the
 * slot owned by it, remembers the index for that task and copies the word
 * into announce_ack. The thread retries (a bounded number of times) until
 * it sees its word acknowledged: threads announcing at once only delay each
 * other. Without a scheduler nobody acknowledges, and the thread gives up.
 *
 * nr_refused: threads of this process that found no free slot at all
 * (incremented by the library; the loader reports the sum, as a hint).
 */
struct ws_hint_header {
	__u32 zero[2];		/* abi_version and owner_tid of slot 0: 0 */
	__u64 announce;		/* tid << 32 | slot index; 0: none */
	__u64 announce_ack;	/* written by the scheduler */
	__u32 nr_refused;
	__u32 reserved[9];
};

/*
 * Sent by the loader with the map fd (SCM_RIGHTS) in one message, once it
 * made the process's array. A refusal is the same message without a
 * descriptor, with nr_slots 0 and the reason, an errno, in reserved
 * (EUSERS: as many processes registered as the loader serves; EMFILE: out
 * of descriptors; ENOMEM: no memory for the array; EDQUOT: the user's
 * quota of arrays; EBUSY: the user had arrays made faster than the loader
 * makes them for one user; EPERM: the loader cannot tell whose quota the
 * process counts against; ESRCH: the process is gone; EAGAIN: try again).
 *
 * A client may send one byte, WS_HINT_ASK_ACK, right after connect(): the
 * loader then acknowledges, once it has taken the connection off its queue
 * and found room for the process, with a hello without a descriptor and
 * with nr_slots and reserved 0, before the answer. A client that knows it
 * was taken can wait longer for its array than for a loader that may be
 * stuck. A loader ignores any other byte, and answers without an
 * acknowledgement when the byte came after it looked for one.
 */
#define WS_HINT_ASK_ACK		0x61

struct ws_hint_hello {
	__u32 abi_version;	/* WS_HINT_ABI_VERSION of the loader */
	__u32 nr_slots;		/* WS_HINT_NR_SLOTS (entries); 0: refused */
	__u32 slot_size;	/* WS_HINT_SLOT_SIZE */
	__u32 reserved;		/* 0; when refused, the reason (an errno) */
};

#ifndef __bpf__
_Static_assert(sizeof(struct ws_hint_slot) == WS_HINT_SLOT_SIZE, "hint slot is 64 bytes");
_Static_assert(sizeof(struct ws_hint_header) == WS_HINT_SLOT_SIZE, "hint header is a slot");
_Static_assert((WS_HINT_NR_THREAD_SLOTS & (WS_HINT_NR_THREAD_SLOTS - 1)) == 0,
	       "NR_THREAD_SLOTS power of two");
#endif

#endif /* WSCHED_HINT_H */
