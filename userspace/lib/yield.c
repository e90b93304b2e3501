// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * Directed yield for the pool's threads: see yield_internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "wsched/thread.h"
#include "wsched/wsched_ioctl.h"
#include "hint_internal.h"
#include "yield_internal.h"

pid_t ws_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* /dev/wsched if it is there and speaks our ABI with YIELD_TO and the
 * fallback flag; else -1. */
static int open_module(void)
{
	struct wsched_version v;
	int fd = open(WSCHED_DEV_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	memset(&v, 0, sizeof(v));
	if (ioctl(fd, WSCHED_IOC_VERSION, &v) || v.abi_version < WSCHED_ABI_VERSION ||
	    v.yield_to_size != sizeof(struct wsched_yield_to) ||
	    (v.features & (WSCHED_FEAT_YIELD_TO | WSCHED_FEAT_YIELD_FALLBACK)) !=
		    (WSCHED_FEAT_YIELD_TO | WSCHED_FEAT_YIELD_FALLBACK)) {
		close(fd);
		return -1;
	}
	return fd;
}

int ws_yielder_open(struct ws_yielder *y, enum ws_yield_path want)
{
	y->fd = -1;
	y->path = WS_YIELD_PLAIN;
	switch (want) {
	case WS_YIELD_AUTO:
	case WS_YIELD_MODULE:
		y->fd = open_module();
		if (y->fd >= 0) {
			y->path = WS_YIELD_MODULE;
			return 0;
		}
		if (want == WS_YIELD_MODULE)
			return -ENODEV;
		/* AUTO tries the hint slots next */
		__attribute__((fallthrough));
	case WS_YIELD_HINT:
		if (!_ws_hint_connect()) {
			y->path = WS_YIELD_HINT;
			return 0;
		}
		return want == WS_YIELD_AUTO ? 0 : -ENODEV;
	case WS_YIELD_PLAIN:
		return 0;
	}
	return -EINVAL;
}

static struct ws_yielder lock_yielder = { WS_YIELD_PLAIN, -1 };
static pthread_once_t lock_yielder_once = PTHREAD_ONCE_INIT;

static void lock_yielder_open(void)
{
	ws_yielder_open(&lock_yielder, WS_YIELD_AUTO);	/* AUTO never fails */
}

int ws_lock_yield_to(pid_t tid)
{
	pthread_once(&lock_yielder_once, lock_yielder_open);
	return ws_yielder_yield_to(&lock_yielder, tid);
}

void ws_yielder_close(struct ws_yielder *y)
{
	if (y->fd >= 0)
		close(y->fd);
	y->fd = -1;
}

int ws_yielder_yield_to(const struct ws_yielder *y, pid_t tid)
{
	if (tid > 0 && y->path == WS_YIELD_MODULE) {
		struct wsched_yield_to a = {
			.version = WSCHED_ABI_VERSION,
			.tid = (__u32)tid,
			.flags = WSCHED_YIELD_TO_FALLBACK,
		};
		int r = ioctl(y->fd, WSCHED_IOC_YIELD_TO, &a);

		if (r >= 0)
			return r == 1;
		/* ESRCH (the target exited) or anything else: yield anyway,
		 * the caller wanted to give its CPU away. */
	} else if (tid > 0 && y->path == WS_YIELD_HINT && _ws_hint_self) {
		struct ws_hint_slot *s = _ws_hint_self;

		/* relaxed: the slot is read by the scheduler on this CPU,
		 * inside the sched_yield() that follows (program order). */
		__atomic_store_n(&s->yield_to_tid, (uint32_t)tid, __ATOMIC_RELAXED);
		sched_yield();
		__atomic_store_n(&s->yield_to_tid, 0, __ATOMIC_RELAXED);
		return 0;
	}
	sched_yield();
	return 0;
}

const char *ws_yield_path_name(enum ws_yield_path path)
{
	switch (path) {
	case WS_YIELD_PLAIN:
		return "plain";
	case WS_YIELD_HINT:
		return "hint";
	case WS_YIELD_MODULE:
		return "module";
	case WS_YIELD_AUTO:
		break;
	}
	return "?";
}
