// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched stall freedom: stress-ng CPU, fork and affinity-churn load for
 * longer than the 30 s sched_ext watchdog (45 s by default, or
 * WSCHED_STALL_SECS), with one stressor of each kind per online CPU. The
 * scheduler must still be enabled at the end, and the loader must exit 0:
 * a runnable-task stall would have made the kernel eject it (exit 6, and a
 * "disabled (runnable task stall)" console line that fails the lab run).
 *
 * `make test-guest` runs it on 4 vCPUs; `make stress-guest` runs it
 * again for 60 s on STRESS_CPUS (16) vCPUs (bpf/bpf.mk).
 */
#include "scx_wsched_util.h"
#include "kselftest_harness.h"

#define ERR_FILE "/tmp/scx_wsched_stall.err"

FIXTURE(stall) {
	pid_t pid;
};

FIXTURE_SETUP(stall)
{
	const char *args[] = { "--stats", "5", NULL };

	if (system("command -v stress-ng >/dev/null"))
		SKIP(return, "stress-ng not installed");
	ASSERT_TRUE(wt_wait_state(false, 10)) TH_LOG("a sched_ext scheduler is loaded before the test");
	self->pid = wt_start(args, NULL, ERR_FILE);
	ASSERT_LT(0, self->pid) TH_LOG("scx_wsched did not become enabled");
}

FIXTURE_TEARDOWN(stall)
{
	if (self->pid > 0 && waitpid(self->pid, NULL, WNOHANG) == 0)
		wt_stop(self->pid);
}

TEST_F_TIMEOUT(stall, cpu_fork_affinity_churn, 600)
{
	const char *env = getenv("WSCHED_STALL_SECS");
	long secs = env ? strtol(env, NULL, 10) : 45;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char cmd[512];
	double t0;
	int st, rc;

	ASSERT_LE(31, secs) TH_LOG("WSCHED_STALL_SECS must exceed the 30 s watchdog");
	snprintf(cmd, sizeof(cmd),
		 "stress-ng --cpu %ld --fork %ld --affinity %ld --timeout %lds --quiet",
		 cpus, cpus, cpus, secs);
	TH_LOG("%s", cmd);
	t0 = wt_now();
	st = system(cmd);
	TH_LOG("stress-ng ran %.0f s", wt_now() - t0);
	EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) TH_LOG("stress-ng status %#x", st);
	EXPECT_LE(secs, wt_now() - t0 + 1);

	EXPECT_TRUE(wt_enabled()) TH_LOG("scheduler not enabled at the end");
	ASSERT_EQ(0, waitpid(self->pid, NULL, WNOHANG)) TH_LOG("loader exited during the run");
	rc = wt_stop(self->pid);
	self->pid = 0;
	EXPECT_EQ(0, rc);
	EXPECT_FALSE(wt_file_contains(ERR_FILE, "asked for a restart"));
}

WT_TEST_HARNESS_MAIN
