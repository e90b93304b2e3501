// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * yield_internal.h - how a pool's threads give their CPU away (yield.c).
 *
 * A "directed yield" hands the caller's CPU to one named thread of its own
 * process (a worker preempted with work others wait for) instead of to
 * whoever the scheduler picks. Three ways, the best available one chosen
 * when a pool is created (ws_pool_yield_path reports it):
 *   WS_YIELD_MODULE  ioctl(WSCHED_IOC_YIELD_TO) on /dev/wsched (wsched.ko):
 *                    the kernel's yield_to(), under EEVDF and sched_ext;
 *                    with WSCHED_YIELD_TO_FALLBACK, a declined call yields
 *                    like sched_yield();
 *   WS_YIELD_HINT    scx_wsched serves hints to this process
 *                    (Documentation/abi.md): the target's tid goes into the
 *                    calling thread's slot (yield_to_tid), then
 *                    sched_yield(); scx_wsched's ops.yield hands the
 *                    yielder's CPU to that thread if it is one of ours and
 *                    waits on a deque; the slot is cleared afterwards. A
 *                    thread without a slot yields plainly;
 *   WS_YIELD_PLAIN   sched_yield(), the target ignored.
 *
 * Concurrency: a struct ws_yielder is written once by ws_pool_create before
 * the workers start and read-only afterwards; any thread may call
 * ws_yielder_yield_to at once (each call is one syscall on a shared fd).
 */
#ifndef WS_YIELD_INTERNAL_H
#define WS_YIELD_INTERNAL_H

#include <sys/types.h>

#include "wsched/yield.h"

struct ws_yielder {
	enum ws_yield_path path;
	int fd;			/* /dev/wsched for WS_YIELD_MODULE, else -1 */
};

/* Set @y up for @want (WS_YIELD_AUTO: the best available). 0, or -ENODEV
 * when the path asked for is not available, -EINVAL for an unknown one. */
int ws_yielder_open(struct ws_yielder *y, enum ws_yield_path want);
void ws_yielder_close(struct ws_yielder *y);

/* Yield towards thread @tid of this process (0: anyone). 1 if the kernel
 * reported that the CPU was handed to @tid (module path only), else 0 (the caller yielded the ordinary way or, when the
 * kernel found nobody else to run, not at all). */
int ws_yielder_yield_to(const struct ws_yielder *y, pid_t tid);

/* The calling thread's id (gettid). */
pid_t ws_gettid(void);

/*
 * For the locks (lock.c), which have no pool: yield towards @tid with the
 * process's lock yielder, opened at the first call (WS_YIELD_AUTO) and kept
 * for the life of the process (pthread_once; read-only afterwards). Returns
 * what ws_yielder_yield_to returns.
 */
int ws_lock_yield_to(pid_t tid);

#endif /* WS_YIELD_INTERNAL_H */
