/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the wsched.ko guest tests (tests/guest/kmod_*.c): load
 * and unload the module with the syscalls themselves (no insmod/rmmod
 * process per cycle, which under TCG costs more than the load), call the
 * ioctls, read the sysfs counters, and watch the kernel log for BUG:,
 * WARNING: and Oops lines.
 *
 * Every helper returns 0 or a negative errno; none exits or asserts, so the
 * tests decide what a failure means.
 */
#ifndef WSCHED_KMOD_UTIL_H
#define WSCHED_KMOD_UTIL_H

#include "guest_util.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <wsched/wsched_ioctl.h>

#define KMOD_NAME	"wsched"
#define KMOD_SYSFS	"/sys/module/" KMOD_NAME
#define KMOD_STATS	"/sys/class/misc/" WSCHED_DEV_NAME "/stats/"

/* An environment variable as a positive number, or dfl. */
static inline long kmod_env_long(const char *name, long dfl)
{
	const char *s = getenv(name);
	char *end;
	long v;

	if (!s || !*s)
		return dfl;
	v = strtol(s, &end, 10);
	return (*end || v <= 0) ? dfl : v;
}

/*
 * The project root: tests live in TOP/build/tests/guest/, so four levels
 * above /proc/self/exe.
 */
static inline int kmod_top(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	int i;

	if (n < 0)
		return -errno;
	buf[n] = '\0';
	for (i = 0; i < 4; i++) {
		char *slash = strrchr(buf, '/');

		if (!slash || slash == buf)
			return -ENOENT;
		*slash = '\0';
	}
	return 0;
}

/* $WSCHED_KO, else TOP/build/kmod/wsched.ko. */
static inline int kmod_ko_path(char *buf, size_t len)
{
	const char *env = getenv("WSCHED_KO");
	char top[PATH_MAX];
	int ret;

	if (env && *env) {
		snprintf(buf, len, "%s", env);
		return 0;
	}
	ret = kmod_top(top, sizeof(top));
	if (ret)
		return ret;
	if (snprintf(buf, len, "%s/build/kmod/wsched.ko", top) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static inline bool kmod_loaded(void)
{
	struct stat st;

	return stat(KMOD_SYSFS, &st) == 0;
}

/* finit_module(2) of wsched.ko with params ("" for none). */
static inline int kmod_load(const char *params)
{
	char path[PATH_MAX];
	int fd, ret;

	ret = kmod_ko_path(path, sizeof(path));
	if (ret)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params ? params : "", 0) ? -errno : 0;
	close(fd);
	return ret;
}

/* delete_module(2); -EWOULDBLOCK while in use, -ENOENT when not loaded. */
static inline int kmod_unload(void)
{
	return syscall(SYS_delete_module, KMOD_NAME, O_NONBLOCK) ? -errno : 0;
}

/* Loads the module if it is not loaded yet. */
static inline int kmod_ensure_loaded(void)
{
	int ret;

	if (kmod_loaded())
		return 0;
	ret = kmod_load("");
	return ret == -EEXIST ? 0 : ret;
}

/*
 * Unloads the module, retrying for up to about two seconds: a file closed
 * by another thread a moment ago may still hold its reference, and racing
 * openers take new ones.
 */
static inline int kmod_ensure_unloaded(void)
{
	int i, ret = 0;

	for (i = 0; i < 2000; i++) {
		ret = kmod_unload();
		if (ret == 0 || ret == -ENOENT)
			return 0;
		if (ret != -EWOULDBLOCK && ret != -EBUSY)
			return ret;
		usleep(1000);
	}
	return ret;
}

static inline int kmod_open(void)
{
	int fd = open(WSCHED_DEV_PATH, O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static inline pid_t kmod_gettid(void)
{
	return syscall(SYS_gettid);
}

/* ioctl(WSCHED_IOC_YIELD_TO): 0/1, or -errno; *result gets arg.result. */
static inline int kmod_yield_to_flags(int fd, pid_t tid, uint32_t flags, uint32_t *result)
{
	struct wsched_yield_to a = {
		.version	= WSCHED_ABI_VERSION,
		.tid		= (uint32_t)tid,
		.flags		= flags,
	};
	int ret = ioctl(fd, WSCHED_IOC_YIELD_TO, &a);

	if (result)
		*result = a.result;
	return ret < 0 ? -errno : ret;
}

static inline int kmod_yield_to(int fd, pid_t tid, uint32_t *result)
{
	return kmod_yield_to_flags(fd, tid, 0, result);
}

/* Reads one counter from /sys/class/misc/wsched/stats/; -1 if unreadable. */
static inline long long kmod_stat(const char *name)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), KMOD_STATS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/*
 * Counts kernel log lines that mean the kernel is unhappy. Tests compare
 * the count before and after; the lab also fails the whole run on them.
 */
static inline int kmod_klog_bad_lines(void)
{
	static const char *const bad[] = { "BUG:", "WARNING:", "Oops", "Call Trace:", "general protection" };
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *line, *save;
	int n, count = 0;
	size_t i;

	if (size <= 0)
		return -EIO;
	buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, size);
	if (n < 0) {
		free(buf);
		return -errno;
	}
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (strstr(line, bad[i])) {
				count++;
				break;
			}
	free(buf);
	return count;
}

static inline uint64_t kmod_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/*
 * Unload the module when the test program ends if it was not loaded when
 * it started. The harness runs each test in a forked child that leaves with
 * _exit(), so the destructor runs once, in the main process.
 */
#define KMOD_UNLOAD_AT_EXIT						\
	static pid_t kmod_main_pid;					\
	static bool kmod_was_loaded;					\
	static void __attribute__((constructor)) kmod_note_state(void)	\
	{								\
		kmod_main_pid = getpid();				\
		kmod_was_loaded = kmod_loaded();			\
	}								\
	static void __attribute__((destructor)) kmod_restore_state(void) \
	{								\
		if (getpid() == kmod_main_pid && !kmod_was_loaded)	\
			kmod_ensure_unloaded();				\
	}

/*
 * The module is built for the lab's default kernel (KVER, which the lab
 * guest exports); a guest booted with another kernel (scripts/lab run
 * --kernel sid) cannot load it, so every kmod test program skips there.
 */
static void __attribute__((constructor)) kmod_skip_other_kernel(void)
{
	const char *kver = getenv("KVER");
	struct utsname u;

	if (!kver || !*kver || uname(&u) || !strcmp(kver, u.release))
		return;
	printf("TAP version 13\n1..0 # SKIP wsched.ko is built for %s, this kernel is %s\n",
	       kver, u.release);
	exit(4); /* KSFT_SKIP */
}

#endif /* WSCHED_KMOD_UTIL_H */
