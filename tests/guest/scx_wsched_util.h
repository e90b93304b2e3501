/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the scx_wsched guest tests: start and stop the loader,
 * read sched_ext state, run CPU hogs that report where and how long they
 * ran through shared memory, and sample per-CPU busy time.
 *
 * The loader is build/bin/scx_wsched, found relative to the test binary
 * (build/tests/guest/<test>), or through WSCHED_BIN.
 */
#ifndef __SCX_WSCHED_UTIL_H
#define __SCX_WSCHED_UTIL_H

#include "guest_util.h"
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WT_MAX_HOGS	64
#define WT_MAX_CPUS	64

static inline double wt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void wt_sleep(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Busy-wait @s seconds: no timer of the caller's wakes it. */
static inline void wt_spin(double s)
{
	double end = wt_now() + s;

	while (wt_now() < end)
		;
}

/* Context switches of process @pid so far, of @kind "voluntary" or
 * "nonvoluntary" (the fields of /proc/PID/status), or -1. */
static inline long long wt_ctxt_switches(pid_t pid, const char *kind)
{
	char path[64], line[256], fmt[64];
	long long n = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	snprintf(fmt, sizeof(fmt), "%s_ctxt_switches: %%lld", kind);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, fmt, &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* utime + stime of process @pid, in seconds; -1 if unreadable. */
static inline double wt_proc_cpu_s(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	/* The command name may hold spaces and ')': the fields follow the last ')'. */
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

/* The run time of @pid's main thread so far (its schedstat: the kernel's
 * sum_exec_runtime, to the nanosecond, where /proc/PID/stat counts clock
 * ticks), in s; -1 if unknown. For a single-threaded process: its CPU
 * time. */
static inline double wt_proc_run_s(pid_t pid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (f && fscanf(f, "%lld", &ns) != 1)
		ns = -1;
	if (f)
		fclose(f);
	return ns < 0 ? -1 : ns / 1e9;
}

/* User + system CPU time between two getrusage() readings, in ms. */
static inline long wt_rusage_cpu_ms(const struct rusage *r0, const struct rusage *r1)
{
	return (r1->ru_utime.tv_sec + r1->ru_stime.tv_sec - r0->ru_utime.tv_sec -
		r0->ru_stime.tv_sec) * 1000 +
	       (r1->ru_utime.tv_usec + r1->ru_stime.tv_usec - r0->ru_utime.tv_usec -
		r0->ru_stime.tv_usec) / 1000;
}

static inline int wt_write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static inline const char *wt_bin(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n;

	if (getenv("WSCHED_BIN"))
		return getenv("WSCHED_BIN");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return "build/bin/scx_wsched";
	exe[n] = '\0';
	/* build/tests/guest/<test> -> build/bin/scx_wsched */
	snprintf(path, sizeof(path), "%s/../../bin/scx_wsched", dirname(exe));
	return path;
}

/* "enabled wsched", "disabled", ... */
static inline void wt_state(char *buf, size_t len)
{
	char state[64] = "missing", ops[128] = "";

	guest_read_line("/sys/kernel/sched_ext/state", state, sizeof(state));
	guest_read_line("/sys/kernel/sched_ext/root/ops", ops, sizeof(ops));
	snprintf(buf, len, "%s%s%s", state, ops[0] ? " " : "", ops);
}

static inline bool wt_enabled(void)
{
	char st[256];

	wt_state(st, sizeof(st));
	return !strcmp(st, "enabled wsched");
}

static inline bool wt_wait_state(bool enabled, double timeout)
{
	double end = wt_now() + timeout;
	char st[256];

	do {
		wt_state(st, sizeof(st));
		if (enabled ? !strcmp(st, "enabled wsched") : !strcmp(st, "disabled"))
			return true;
		wt_sleep(0.05);
	} while (wt_now() < end);
	return false;
}

/*
 * Run the loader with @args (NULL-terminated, after argv[0]); stdout and
 * stderr go to @out and @err (files, may be NULL for /dev/null).
 */
static inline pid_t wt_proc_spawn(const char *const *args, const char *out, const char *err)
{
	const char *argv[16];
	pid_t pid;
	int i = 0;

	argv[i++] = wt_bin();
	while (args && *args && i < 15)
		argv[i++] = *args++;
	argv[i] = NULL;
	pid = fork();
	if (pid == 0) {
		int o = open(out ?: "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err ?: "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);

		dup2(o, 1);
		dup2(e, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Exit status of @pid, waiting at most @timeout seconds (then -1). */
static inline int wt_wait_exit(pid_t pid, double timeout)
{
	double end = wt_now() + timeout;
	int st;

	do {
		pid_t r = waitpid(pid, &st, WNOHANG);

		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (r < 0)
			return -1;
		wt_sleep(0.02);
	} while (wt_now() < end);
	return -1;
}

/* Run the loader to completion (a refusal), return its exit status. */
static inline int wt_run(const char *const *args, const char *err)
{
	pid_t pid = wt_proc_spawn(args, NULL, err);

	return pid < 0 ? -1 : wt_wait_exit(pid, 60);
}

/*
 * How long a load may take before wt_start() gives up: in a lab guest a
 * load takes seconds on an idle host and over a minute on a throttled one,
 * most of it in opening and loading the BPF object.
 */
#define WT_LOAD_WAIT	150
#define WT_STR_(x)	#x
#define WT_STR(x)	WT_STR_(x)

/*
 * kselftest's per-test timeouts are fixed when the program is built and
 * count the fixture's setup, which loads the scheduler. Programs that load
 * it use WT_TEST_HARNESS_MAIN instead of TEST_HARNESS_MAIN: every test gets
 * WT_LOAD_ALLOWANCE more seconds (one load and one stop), so that a slow
 * host's load is not reported as a hung test; a hang is still caught.
 */
#define WT_LOAD_ALLOWANCE	(WT_LOAD_WAIT + 30)
#define WT_TEST_HARNESS_MAIN						\
	int main(int argc, char **argv)					\
	{								\
		struct __fixture_metadata *f;				\
		struct __test_metadata *t;				\
		int rc;							\
									\
		for (f = __fixture_list; f; f = f->next)		\
			for (t = f->tests; t; t = t->next)		\
				t->timeout += WT_LOAD_ALLOWANCE;	\
		wt_keeper_init();					\
		rc = test_harness_run(argc, argv);			\
		wt_keeper_end();					\
		return rc;						\
	}

/* Start the loader and wait until sched_ext reports it enabled (up to
 * WT_LOAD_WAIT s). */
static inline pid_t wt_start(const char *const *args, const char *out, const char *err)
{
	pid_t pid = wt_proc_spawn(args, out, err);

	if (pid < 0)
		return -1;
	if (!wt_wait_state(true, WT_LOAD_WAIT)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return -1;
	}
	return pid;
}

/* SIGINT the loader; its exit status, or -1 if it did not exit in time. */
static inline int wt_stop(pid_t pid)
{
	int rc;

	kill(pid, SIGINT);
	rc = wt_wait_exit(pid, 30);
	if (rc < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return rc;
}

/* ------------------------------------------------------ a shared loader */

/*
 * One loader shared by the tests of a fixture, instead of one load per
 * test (some 20 loads for the hint tests alone, each taking up to a minute
 * on a throttled host). kselftest runs each test in a child process, which could not wait
 * for a loader that an earlier test started, so a keeper process forked by
 * WT_TEST_HARNESS_MAIN before the first test owns the loader. A test sends
 * it one request at a time through a pipe (kselftest runs one test at a
 * time) and reads the answer, tagged with the request's number, from
 * another: an answer left unread by a test that was killed while it waited
 * is skipped by the next one. The keeper stops the loader and exits when
 * the program ends (end of file on its request pipe); main waits for it,
 * so the next test program finds sched_ext disabled.
 */
enum { WT_KEEP_START = 1, WT_KEEP_STOP, WT_KEEP_ALIVE };

#define WT_KEEP_ARGS	12
#define WT_KEEP_ARGLEN	48

struct wt_keep_req {
	unsigned int seq;
	int op;
	char argv[WT_KEEP_ARGS][WT_KEEP_ARGLEN];	/* "" ends the list */
	char out[96], err[96];				/* "": /dev/null */
};

struct wt_keep_ans {
	unsigned int seq;
	int result;	/* START: loader pid or -1; STOP: exit status or -1; ALIVE: 1 or 0 */
};

static int wt_keep_req_fd = -1, wt_keep_ans_fd = -1;
static pid_t wt_keeper_pid;

static inline bool wt_keep_same(const struct wt_keep_req *a, const struct wt_keep_req *b)
{
	return !memcmp(a->argv, b->argv, sizeof(a->argv)) && !strcmp(a->out, b->out) &&
	       !strcmp(a->err, b->err);
}

/* A pidfd of child @pid (readable once it exits), or -1. */
static inline int wt_pidfd(pid_t pid)
{
	return pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
}

/*
 * The keeper: serves requests until end of file, then stops the loader.
 * It sleeps in poll() on its request pipe and the loader's pidfd, with no
 * timeout while it has the pidfd: a task woken by a timer is one the
 * scheduler's latency rules look after (lat_any_at, in the BPF object),
 * and a keeper waking every few hundred ms would make those rules act in
 * every test (loader_wakeups_arm_no_slice_timer counts them).
 */
static inline void wt_keeper_loop(int rfd, int wfd)
{
	struct wt_keep_req cur, r;
	pid_t pid = 0;
	int died = -1;	/* exit status of a loader that ended by itself */
	int pidfd = -1;

	memset(&cur, 0, sizeof(cur));
	for (;;) {
		struct pollfd pfd[2] = { { .fd = rfd, .events = POLLIN },
					 { .fd = pidfd, .events = POLLIN } };
		const char *args[WT_KEEP_ARGS + 1];
		struct wt_keep_ans a;
		int st, i;
		ssize_t got;

		poll(pfd, 2, pid > 0 && pidfd < 0 ? 200 : -1);
		if (pid > 0 && waitpid(pid, &st, WNOHANG) == pid) {
			died = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			pid = 0;
		}
		if (pid <= 0 && pidfd >= 0) {
			close(pidfd);
			pidfd = -1;
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP)))
			continue;
		got = read(rfd, &r, sizeof(r));
		if (got == 0 || (got < 0 && errno != EINTR))
			break;
		if (got != sizeof(r))
			continue;
		r.out[sizeof(r.out) - 1] = r.err[sizeof(r.err) - 1] = '\0';
		a.seq = r.seq;
		a.result = -1;
		switch (r.op) {
		case WT_KEEP_START:
			if (pid > 0 && (!wt_keep_same(&cur, &r) || !wt_enabled())) {
				wt_stop(pid);
				pid = 0;
			}
			if (pid <= 0 && wt_wait_state(false, 10)) {
				for (i = 0; i < WT_KEEP_ARGS && r.argv[i][0]; i++) {
					r.argv[i][WT_KEEP_ARGLEN - 1] = '\0';
					args[i] = r.argv[i];
				}
				args[i] = NULL;
				pid = wt_start(args, r.out[0] ? r.out : NULL, r.err[0] ? r.err : NULL);
				if (pidfd >= 0)
					close(pidfd);
				pidfd = wt_pidfd(pid);
				cur = r;
				died = -1;
			}
			a.result = pid > 0 ? pid : -1;
			break;
		case WT_KEEP_STOP:
			a.result = pid > 0 ? wt_stop(pid) : died;
			pid = 0;
			died = -1;
			break;
		case WT_KEEP_ALIVE:
			a.result = pid > 0;
			break;
		}
		if (write(wfd, &a, sizeof(a)) != sizeof(a))
			break;
	}
	if (pid > 0)
		wt_stop(pid);
	_exit(0);
}

static inline void wt_keeper_init(void)
{
	int req[2], ans[2];

	if (pipe2(req, O_CLOEXEC))
		return;
	if (pipe2(ans, O_CLOEXEC)) {
		close(req[0]);
		close(req[1]);
		return;
	}
	fflush(NULL);
	wt_keeper_pid = fork();
	if (wt_keeper_pid == 0) {
		close(req[1]);
		close(ans[0]);
		wt_keeper_loop(req[0], ans[1]);
	}
	close(req[0]);
	close(ans[1]);
	if (wt_keeper_pid < 0) {
		close(req[1]);
		close(ans[0]);
		return;
	}
	wt_keep_req_fd = req[1];
	wt_keep_ans_fd = ans[0];
}

/* End of the program: let the keeper stop the loader, wait for it. */
static inline void wt_keeper_end(void)
{
	if (wt_keeper_pid <= 0)
		return;
	close(wt_keep_req_fd);
	close(wt_keep_ans_fd);
	waitpid(wt_keeper_pid, NULL, 0);
}

/* Send @r, wait up to @timeout s for its answer; the answer's result or -1. */
static inline int wt_keep_call(struct wt_keep_req *r, double timeout)
{
	static unsigned int n;
	double end = wt_now() + timeout;
	struct wt_keep_ans a;

	if (wt_keep_req_fd < 0)
		return -1;
	r->seq = (unsigned int)getpid() << 10 | (++n & 1023);
	if (write(wt_keep_req_fd, r, sizeof(*r)) != sizeof(*r))
		return -1;
	while (wt_now() < end) {
		struct pollfd pfd = { .fd = wt_keep_ans_fd, .events = POLLIN };

		if (poll(&pfd, 1, 100) == 1) {
			if (read(wt_keep_ans_fd, &a, sizeof(a)) != sizeof(a))
				return -1;
			if (a.seq == r->seq)
				return a.result;
		}
	}
	return -1;
}

/*
 * The shared loader, running with @args (NULL-terminated) and its output in
 * @out and @err: the one already running if it has these and the scheduler
 * is enabled, else a new one (after stopping the old). Its pid, or -1.
 */
static inline pid_t wt_shared_start(const char *const *args, const char *out, const char *err)
{
	struct wt_keep_req r;
	int i;

	memset(&r, 0, sizeof(r));
	r.op = WT_KEEP_START;
	for (i = 0; args && args[i]; i++)
		if (i >= WT_KEEP_ARGS || strlen(args[i]) >= WT_KEEP_ARGLEN)
			return -1;
		else
			strcpy(r.argv[i], args[i]);
	if (strlen(out ?: "") >= sizeof(r.out) || strlen(err ?: "") >= sizeof(r.err))
		return -1;
	strcpy(r.out, out ?: "");
	strcpy(r.err, err ?: "");
	return wt_keep_call(&r, WT_LOAD_WAIT + 60);
}

/* Stop the shared loader: its exit status (if it had ended by itself, the
 * status it ended with), -1 if none ran or it did not exit in time. */
static inline int wt_shared_stop(void)
{
	struct wt_keep_req r;

	memset(&r, 0, sizeof(r));
	r.op = WT_KEEP_STOP;
	return wt_keep_call(&r, 60);
}

/* Whether the shared loader still runs. */
static inline bool wt_shared_alive(void)
{
	struct wt_keep_req r;

	memset(&r, 0, sizeof(r));
	r.op = WT_KEEP_ALIVE;
	return wt_keep_call(&r, 10) == 1;
}

/*
 * Whether @line (from fgets()) is a whole JSON line. A loader writes each
 * line with one write(), but a reader of a file being written can still
 * see part of it: the page cache takes a write page by page, and the
 * file's size moves past the first page's part before the rest is copied.
 * Such a last line lacks its '\n' (and maybe the key asked for).
 */
static inline bool wt_json_whole(const char *line)
{
	size_t n = strlen(line);

	return line[0] == '{' && n && line[n - 1] == '\n';
}

/* The value of "name":N in the last whole JSON line of @path, or -1. */
static inline long long wt_json_last(const char *path, const char *name)
{
	char line[4096], last[4096] = "", key[128], *p;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (wt_json_whole(line))
			strcpy(last, line);
	fclose(f);
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(last, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

/* Whole JSON lines in @path so far. */
static inline int wt_json_lines(const char *path)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += wt_json_whole(line);
	fclose(f);
	return n;
}

/*
 * Wait until @path holds @n more JSON lines than @n0 (its wt_json_lines()
 * before), looking every @poll s, up to @timeout s, passing the time
 * between looks with @pass (wt_sleep(), or wt_spin() for a caller that
 * must not be woken by a timer); whether they came.
 */
static inline bool wt_json_wait_by(const char *path, int n0, int n, double poll, double timeout,
				   void (*pass)(double))
{
	double end = wt_now() + timeout;

	do {
		if (wt_json_lines(path) >= n0 + n)
			return true;
		pass(poll);
	} while (wt_now() < end);
	return false;
}

/* wt_json_wait_by(), sleeping between looks. */
static inline bool wt_json_wait(const char *path, int n0, int n, double poll, double timeout)
{
	return wt_json_wait_by(path, n0, n, poll, timeout, wt_sleep);
}

/*
 * "name":N of a JSON line that a loader printing its counters every second
 * (--stats 1 --json) wrote after this call began: waits for two new lines
 * (the first may hold counters read before the call), up to @timeout s;
 * -1 if they did not come.
 */
static inline long long wt_json_fresh(const char *path, const char *name, double timeout)
{
	if (!wt_json_wait(path, wt_json_lines(path), 2, 0.1, timeout))
		return -1;
	return wt_json_last(path, name);
}

/*
 * Wait (at most 2 s) for the next JSON line of such a loader: its counters
 * are then as of now, give or take the 10 ms poll and the line's writing.
 */
static inline void wt_json_next(const char *path)
{
	wt_json_wait(path, wt_json_lines(path), 1, 0.01, 2.0);
	wt_sleep(0.01);		/* the line's end */
}

static inline bool wt_file_contains(const char *path, const char *needle)
{
	char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

/* ---------------------------------------------------------------- hogs */

struct wt_hog_report {
	volatile unsigned long long cpu_ns;	/* CPU time so far */
	volatile unsigned long long cpus_seen;	/* bit per CPU it ran on */
	volatile unsigned long long bad_cpu;	/* runs outside its allowed set */
};

struct wt_hogs {
	int n;
	pid_t pid[WT_MAX_HOGS];
	struct wt_hog_report *rep;	/* shared, n entries */
};

static inline unsigned long long wt_thread_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void wt_hog_loop(struct wt_hog_report *r)
{
	cpu_set_t allowed;

	for (;;) {
		volatile unsigned long x = 0;
		int cpu, i;

		for (i = 0; i < 20000; i++)
			x += i;
		cpu = sched_getcpu();
		if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0 &&
		    cpu >= 0 && !CPU_ISSET(cpu, &allowed))
			r->bad_cpu++;
		if (cpu >= 0 && cpu < 64)
			r->cpus_seen |= 1ULL << cpu;
		r->cpu_ns = wt_thread_ns();
	}
}

static inline int wt_hogs_init(struct wt_hogs *h)
{
	memset(h, 0, sizeof(*h));
	h->rep = mmap(NULL, sizeof(*h->rep) * WT_MAX_HOGS, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return h->rep == MAP_FAILED ? -1 : 0;
}

#define WT_SCHED_IDLE	100	/* as @nice: SCHED_IDLE instead of a nice value */

/*
 * Fork one hog with @nice (or WT_SCHED_IDLE) and affinity @set (NULL:
 * inherit); returns its index.
 */
static inline int wt_hog_start(struct wt_hogs *h, int nice, const cpu_set_t *set)
{
	pid_t pid, parent = getpid();
	int i = h->n;

	if (i >= WT_MAX_HOGS)
		return -1;
	pid = fork();
	if (pid == 0) {
		/* A test that ends early must not leave a hog to the next. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		if (set && sched_setaffinity(0, sizeof(*set), set))
			_exit(1);
		if (nice == WT_SCHED_IDLE) {
			struct sched_param sp = { 0 };

			if (sched_setscheduler(0, SCHED_IDLE, &sp))
				_exit(1);
		} else if (nice && setpriority(PRIO_PROCESS, 0, nice)) {
			_exit(1);
		}
		wt_hog_loop(&h->rep[i]);
	}
	if (pid < 0)
		return -1;
	h->pid[i] = pid;
	h->n++;
	return i;
}

/* One hog, nice 0, pinned to @cpu; its index, as wt_hog_start(). */
static inline int wt_hog_on(struct wt_hogs *h, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return wt_hog_start(h, 0, &set);
}

static inline void wt_hogs_stop(struct wt_hogs *h)
{
	int i;

	for (i = 0; i < h->n; i++)
		kill(h->pid[i], SIGKILL);
	for (i = 0; i < h->n; i++)
		waitpid(h->pid[i], NULL, 0);
	h->n = 0;
}

static inline void wt_hogs_snapshot(const struct wt_hogs *h, unsigned long long *ns)
{
	int i;

	for (i = 0; i < h->n; i++)
		ns[i] = h->rep[i].cpu_ns;
}

/* ------------------------------------------------- periodic thread */

static inline long long wt_ts_ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* Sleep until CLOCK_MONOTONIC reaches @deadline ns. */
static inline void wt_sleep_until_ns(long long deadline)
{
	struct timespec ts = { deadline / 1000000000LL, deadline % 1000000000LL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static inline int wt_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#define WT_PERIODIC_LOOPS	300

/* What the periodic thread measured, in seconds; shared with its parent. */
struct wt_periodic_res {
	double mean, worst, median, p90, p99, sleeps;
	double late[WT_PERIODIC_LOOPS];	/* sorted once the loop ends */
};

/*
 * Sleep to *@deadline advanced by @period_ns; the lateness of the wakeup
 * (ns). A deadline already past on waking is skipped, as cyclictest does.
 */
static inline long long wt_period_wait(long long *deadline, long long period_ns)
{
	struct timespec now;
	long long late;

	*deadline += period_ns;
	wt_sleep_until_ns(*deadline);
	clock_gettime(CLOCK_MONOTONIC, &now);
	late = wt_ts_ns(&now) - *deadline;
	while (*deadline + period_ns <= wt_ts_ns(&now))
		*deadline += period_ns;
	return late;
}

/*
 * Fork the periodic thread: on @cpus, as @uid unless that is (uid_t)-1, it
 * sleeps to absolute deadlines @period_ns apart (a deadline already past
 * is skipped, as cyclictest does) for WT_PERIODIC_LOOPS periods, fills
 * @res and exits 0. Its pid or -1. It dies with its parent.
 */
static inline pid_t wt_periodic_start(struct wt_periodic_res *res, const cpu_set_t *cpus,
				      long long period_ns, uid_t uid)
{
	pid_t t, parent = getpid();
	struct timespec now;
	long long deadline;
	double sum = 0;
	struct rusage ru;
	int i;

	t = fork();
	if (t)
		return t;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent ||
	    sched_setaffinity(0, sizeof(*cpus), cpus))
		_exit(1);
	if (uid != (uid_t)-1 && (setgroups(0, NULL) || setgid(uid) || setuid(uid)))
		_exit(1);
	res->worst = 0;		/* @res may hold an earlier run's */
	clock_gettime(CLOCK_MONOTONIC, &now);
	deadline = wt_ts_ns(&now);
	for (i = 0; i < WT_PERIODIC_LOOPS; i++) {
		res->late[i] = wt_period_wait(&deadline, period_ns) / 1e9;
		sum += res->late[i];
		if (res->late[i] > res->worst)
			res->worst = res->late[i];
	}
	getrusage(RUSAGE_SELF, &ru);
	res->mean = sum / WT_PERIODIC_LOOPS;
	res->sleeps = ru.ru_nvcsw;
	qsort(res->late, WT_PERIODIC_LOOPS, sizeof(double), wt_cmp_double);
	res->median = res->late[WT_PERIODIC_LOOPS / 2];
	res->p90 = res->late[WT_PERIODIC_LOOPS * 9 / 10];
	res->p99 = res->late[WT_PERIODIC_LOOPS * 99 / 100];
	_exit(0);
}

/* ------------------------------------------------------- host stalls */

/*
 * A sentinel of stalls that no scheduler under test causes: a SCHED_FIFO
 * thread (the RT class runs before every sched_ext and fair task, so
 * neither scx_wsched nor EEVDF delays it) pinned to @cpu, sleeping to
 * absolute deadlines 1 ms apart. What it was late by beyond
 * WT_STALL_FLOOR_NS since the last wt_stall_take() is what the host made
 * the guest wait (below the floor is the emulator's own wakeup latency):
 * under the lab's default TCG the guest's clock is the host's, and a host
 * busy with other work stops every vCPU at once, so each task's run then
 * takes longer on the clock too. A test whose latency bound misses while
 * the guest lost time that way measures again rather than blame the
 * scheduler. The sentinel writes, the test reads and clears with an
 * exchange; a wakeup that races the clear counts in the window after it.
 */
#define WT_STALL_FLOOR_NS	1000000LL

struct wt_stall {
	pid_t pid;
	long long *v;		/* shared: worst lateness, lateness beyond the floor summed (ns) */
	long long taken_at;	/* CLOCK_MONOTONIC of the last take (ns) */
};

/* What the sentinel saw over a window (ns): wt_stall_take(). */
struct wt_stall_seen {
	long long worst, lost, window;
};

static inline int wt_stall_start(struct wt_stall *s, int cpu)
{
	struct sched_param sp = { .sched_priority = 1 };
	pid_t parent = getpid();
	cpu_set_t set;
	long long deadline, late;
	struct timespec now;

	s->pid = -1;
	clock_gettime(CLOCK_MONOTONIC, &now);
	s->taken_at = wt_ts_ns(&now);
	s->v = mmap(NULL, 2 * sizeof(*s->v), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	if (s->v == MAP_FAILED) {
		s->v = NULL;
		return -1;
	}
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (s->pid)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent ||
	    sched_setaffinity(0, sizeof(set), &set) || sched_setscheduler(0, SCHED_FIFO, &sp))
		_exit(1);
	clock_gettime(CLOCK_MONOTONIC, &now);
	deadline = wt_ts_ns(&now);
	for (;;) {
		late = wt_period_wait(&deadline, 1000000LL);
		if (late > __atomic_load_n(&s->v[0], __ATOMIC_RELAXED))
			__atomic_store_n(&s->v[0], late, __ATOMIC_RELAXED);
		if (late > WT_STALL_FLOOR_NS)
			__atomic_fetch_add(&s->v[1], late - WT_STALL_FLOOR_NS, __ATOMIC_RELAXED);
	}
}

/* What the sentinel saw since the last take (or its start); starts anew.
 * A window in which the guest stood still for a tenth of the time or more
 * was disturbed by the host: wt_stall_disturbed(). */
static inline struct wt_stall_seen wt_stall_take(struct wt_stall *s)
{
	struct wt_stall_seen seen = { 0, 0, 0 };
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	seen.window = wt_ts_ns(&now) - s->taken_at;
	s->taken_at = wt_ts_ns(&now);
	if (s->v) {
		seen.worst = __atomic_exchange_n(&s->v[0], 0, __ATOMIC_RELAXED);
		seen.lost = __atomic_exchange_n(&s->v[1], 0, __ATOMIC_RELAXED);
	}
	return seen;
}

static inline bool wt_stall_disturbed(const struct wt_stall_seen *seen)
{
	return seen->lost * 10 >= seen->window;
}

/* Whether the host stopped the guest for a hundredth of the window or
 * more: enough to move a percentile or a count taken over the window. */
static inline bool wt_stall_stopped_1pct(const struct wt_stall_seen *seen)
{
	return seen->lost * 100 >= seen->window;
}

static inline void wt_stall_stop(struct wt_stall *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	if (s->v)
		munmap(s->v, 2 * sizeof(*s->v));
}

/* ------------------------------------------------------- per-CPU busy */

/* Busy and total jiffies of each CPU from /proc/stat; returns CPUs read. */
static inline int wt_cpu_times(unsigned long long *busy, unsigned long long *total)
{
	char line[512];
	FILE *f = fopen("/proc/stat", "r");
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f) && n < WT_MAX_CPUS) {
		unsigned long long v[10] = { 0 };
		int cpu, k;

		if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9')
			continue;
		if (sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &cpu,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) < 5)
			continue;
		if (cpu >= WT_MAX_CPUS)
			continue;
		total[cpu] = 0;
		for (k = 0; k < 8; k++)
			total[cpu] += v[k];
		busy[cpu] = total[cpu] - v[3] - v[4];	/* minus idle, iowait */
		n = cpu + 1 > n ? cpu + 1 : n;
	}
	fclose(f);
	return n;
}

#endif /* __SCX_WSCHED_UTIL_H */
