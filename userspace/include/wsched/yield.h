// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * wsched/yield.h - the ways a thread can give its CPU to a named thread.
 *
 * A directed yield hands the caller's CPU to one thread of its own process
 * (a worker preempted with work others wait for, a lock holder) instead of
 * to whoever the scheduler picks. libwsched's pools and locks choose the
 * best available path themselves; this header names the paths so that a
 * program can ask for one (struct ws_pool_attr) and report which it got.
 */
#ifndef WSCHED_YIELD_H
#define WSCHED_YIELD_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * How an idle worker gives its CPU away when it would help a thread that is
 * not running: a thief facing a worker that holds work but has not shared
 * it (preempted, most likely), or a worker waiting for the thief of its
 * task. A directed yield hands the CPU to that very thread.
 */
enum ws_yield_path {
	WS_YIELD_AUTO = 0,	/* attr only: the best one available */
	WS_YIELD_PLAIN,		/* sched_yield(): the scheduler picks */
	WS_YIELD_HINT,		/* name the target in the thread's hint slot,
				 * then sched_yield(); scx_wsched hands over */
	WS_YIELD_MODULE,	/* WSCHED_IOC_YIELD_TO on /dev/wsched (wsched.ko) */
};

/* A name for @path: "plain", "hint", "module" ("?" for WS_YIELD_AUTO and
 * other values). */
const char *ws_yield_path_name(enum ws_yield_path path);

#ifdef __cplusplus
}
#endif

#endif /* WSCHED_YIELD_H */
