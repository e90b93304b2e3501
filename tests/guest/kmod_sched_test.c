// SPDX-License-Identifier: GPL-2.0
/*
 * wsched.ko with a real scheduler: a directed yield observed, under EEVDF
 * (no sched_ext scheduler loaded) and under scx_wsched.
 *
 * The observation: the caller, a target and a decoy are pinned to one CPU;
 * target and decoy spin. Just before each call the caller clears a shared
 * "first" word; the spinners write their id into it with a CAS whenever
 * they run and find it clear. Only one thread runs on that CPU at a time,
 * so after the call "first" names the thread that got the CPU from the
 * caller. A directed yield must name the target; sched_yield() lets the
 * class pick either spinner, which the test logs for comparison.
 *
 * The scx_wsched cases SKIP while build/bin/scx_wsched does not exist; the
 * handoff case also SKIPs while the scheduler has no ops.yield (no
 * wsched_yield in build/bpf/scx_wsched.bpf.o): without it sched_ext declines
 * every directed yield, which the other case checks is all that happens.
 */
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_util.h"

#define ROUNDS	200
#define CPU	1	/* not CPU 0, where the test runner and kworkers tend to be */

enum { ID_NONE, ID_TARGET, ID_DECOY };

struct arena {
	atomic_int first;
	atomic_int stop;
	atomic_int tid[3];
	atomic_ulong spins[3];
};

static struct arena *ar;

static void *spinner(void *arg)
{
	int id = (int)(long)arg;

	kmod_pin(CPU);
	atomic_store(&ar->tid[id], kmod_gettid());
	while (!atomic_load_explicit(&ar->stop, memory_order_relaxed)) {
		int none = ID_NONE;

		if (atomic_load_explicit(&ar->first, memory_order_relaxed) == ID_NONE)
			atomic_compare_exchange_strong(&ar->first, &none, id);
		atomic_fetch_add_explicit(&ar->spins[id], 1, memory_order_relaxed);
	}
	return NULL;
}

struct tally {
	int calls, handed_over, target_first, decoy_first, nobody;
};

/*
 * ROUNDS calls of the caller (pinned to CPU with both spinners): a directed
 * yield (fd >= 0) or sched_yield() (fd < 0). Returns -errno of the first
 * failed call, else 0.
 */
static int run_rounds(int fd, struct tally *t)
{
	pthread_t th[3];
	int i, ret = 0;

	memset(t, 0, sizeof(*t));
	memset(ar, 0, sizeof(*ar));
	kmod_pin(CPU);
	for (i = ID_TARGET; i <= ID_DECOY; i++)
		pthread_create(&th[i], NULL, spinner, (void *)(long)i);
	while (!atomic_load(&ar->tid[ID_TARGET]) || !atomic_load(&ar->tid[ID_DECOY]))
		usleep(1000);

	for (i = 0; i < ROUNDS; i++) {
		uint32_t result = 0;
		int first;

		atomic_store(&ar->first, ID_NONE);
		if (fd >= 0) {
			ret = kmod_yield_to(fd, atomic_load(&ar->tid[ID_TARGET]), &result);
			if (ret < 0)
				break;
			t->handed_over += ret;
		} else {
			sched_yield();
		}
		t->calls++;
		first = atomic_load(&ar->first);
		if (first == ID_TARGET)
			t->target_first++;
		else if (first == ID_DECOY)
			t->decoy_first++;
		else
			t->nobody++;
	}
	atomic_store(&ar->stop, 1);
	for (i = ID_TARGET; i <= ID_DECOY; i++)
		pthread_join(th[i], NULL);
	return ret < 0 ? ret : 0;
}

FIXTURE(sched) {
	int fd;
	pid_t scx;		/* scx_wsched's pid, or 0 */
	char log[64];
};

static int read_state(char *buf, size_t len)
{
	return kmod_read_line("/sys/kernel/sched_ext/state", buf, len);
}

FIXTURE_SETUP(sched)
{
	self->fd = -1;
	self->scx = 0;
	if (getuid() != 0)
		SKIP(return, "loading modules needs root");
	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU)
		SKIP(return, "needs CPU %d", CPU);
	ar = mmap(NULL, sizeof(*ar), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ar);
	ASSERT_EQ(0, kmod_ensure_loaded()) TH_LOG("cannot load wsched.ko (built? make all)");
	self->fd = kmod_open();
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(sched)
{
	if (self->scx > 0) {
		kill(self->scx, SIGINT);
		waitpid(self->scx, NULL, 0);
	}
	if (self->fd >= 0)
		close(self->fd);
}

/* Starts build/bin/scx_wsched; 0 once it is enabled, else a reason. */
static const char *scx_start(FIXTURE_DATA(sched) *self, bool need_yield)
{
	static char why[PATH_MAX + 64];
	char top[PATH_MAX - 64], bin[PATH_MAX], obj[PATH_MAX], state[64];
	struct stat st;
	int i;

	if (kmod_top(top, sizeof(top)))
		return "cannot find the project root from /proc/self/exe";
	snprintf(bin, sizeof(bin), "%s/build/bin/scx_wsched", top);
	snprintf(obj, sizeof(obj), "%s/build/bpf/scx_wsched.bpf.o", top);
	if (stat(bin, &st)) {
		snprintf(why, sizeof(why), "no %s yet (the scheduler issue)", bin);
		return why;
	}
	if (need_yield) {
		/* The BPF object names its callbacks wsched_<op>. */
		static const char sym[] = "wsched_yield";
		FILE *f = fopen(obj, "r");
		char *buf = NULL;
		size_t n = 0;
		bool found = false;

		if (f && !fseek(f, 0, SEEK_END) && (long)(n = ftell(f)) > 0) {
			rewind(f);
			buf = malloc(n);
			if (buf && fread(buf, 1, n, f) == n)
				found = memmem(buf, n, sym, sizeof(sym)) != NULL;
			free(buf);
		}
		if (f)
			fclose(f);
		if (!found) {
			snprintf(why, sizeof(why), "scx_wsched has no ops.yield yet (no %s in %s)", sym, obj);
			return why;
		}
	}
	if (read_state(state, sizeof(state)) || strcmp(state, "disabled"))
		return "sched_ext missing or another scheduler loaded";

	snprintf(self->log, sizeof(self->log), "/tmp/kmod_sched_test.scx.%d", getpid());
	self->scx = fork();
	if (self->scx == 0) {
		int fd = open(self->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 300; i++) {
		int status;

		if (!read_state(state, sizeof(state)) && !strcmp(state, "enabled"))
			return NULL;
		if (waitpid(self->scx, &status, WNOHANG) == self->scx) {
			self->scx = 0;
			snprintf(why, sizeof(why), "scx_wsched exited (status %#x) before enabling; see %s",
				 status, self->log);
			return why;
		}
		usleep(50000);
	}
	return "scx_wsched not enabled after 15 s";
}

/* Stops scx_wsched; 0 when it detached cleanly with exit status 0. */
static int scx_stop(FIXTURE_DATA(sched) *self)
{
	int status = -1;

	if (self->scx <= 0)
		return -1;
	kill(self->scx, SIGINT);
	waitpid(self->scx, &status, 0);
	self->scx = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void log_tally(struct __test_metadata *_metadata, const char *what, const struct tally *t)
{
	TH_LOG("%s: %d calls, %d handed over, first to run: target %d, decoy %d, nobody %d",
	       what, t->calls, t->handed_over, t->target_first, t->decoy_first, t->nobody);
}

TEST_F_TIMEOUT(sched, eevdf_directed_yield, 120)
{
	long long h0 = kmod_stat("nr_handoffs");
	char state[64];
	struct tally y, s;

	ASSERT_EQ(0, read_state(state, sizeof(state)));
	ASSERT_STREQ("disabled", state) TH_LOG("this case needs EEVDF, no sched_ext scheduler");

	ASSERT_EQ(0, run_rounds(self->fd, &y));
	log_tally(_metadata, "YIELD_TO", &y);
	ASSERT_EQ(0, run_rounds(-1, &s));
	log_tally(_metadata, "sched_yield", &s);

	EXPECT_EQ(h0 + y.handed_over, kmod_stat("nr_handoffs"));
	/* Nearly every call hands over, and then the target runs first. */
	EXPECT_LE(ROUNDS * 9 / 10, y.handed_over);
	EXPECT_LE(ROUNDS * 9 / 10, y.target_first);
}

TEST_F_TIMEOUT(sched, scx_wsched_ioctl_safe, 120)
{
	const char *why = scx_start(self, false);
	long long a0 = kmod_stat("nr_accepted"), d0 = kmod_stat("nr_declined");
	pid_t other;
	char state[64];
	struct tally y;

	if (why)
		SKIP(return, "%s", why);
	/* The refusals do not depend on the scheduler. */
	EXPECT_EQ(-EINVAL, kmod_yield_to(self->fd, kmod_gettid(), NULL));
	EXPECT_EQ(-EPERM, kmod_yield_to(self->fd, 1, NULL));
	other = fork();
	ASSERT_LE(0, other);
	if (other == 0)
		_exit(0);
	waitpid(other, NULL, 0);
	EXPECT_EQ(-ESRCH, kmod_yield_to(self->fd, other, NULL));

	ASSERT_EQ(0, run_rounds(self->fd, &y));
	log_tally(_metadata, "YIELD_TO under scx_wsched", &y);
	EXPECT_EQ(ROUNDS, y.calls);
	/* Every call reached the scheduler: accepted or declined. */
	EXPECT_LE(a0 + d0 + ROUNDS - 10, kmod_stat("nr_accepted") + kmod_stat("nr_declined"));

	ASSERT_EQ(0, read_state(state, sizeof(state)));
	EXPECT_STREQ("enabled", state) TH_LOG("the scheduler was ejected; see %s", self->log);
	EXPECT_EQ(0, scx_stop(self)) TH_LOG("scx_wsched exit status; see %s", self->log);
}

TEST_F_TIMEOUT(sched, scx_wsched_directed_yield, 120)
{
	const char *why = scx_start(self, true);
	char state[64];
	struct tally y, s;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, run_rounds(self->fd, &y));
	log_tally(_metadata, "YIELD_TO under scx_wsched", &y);
	ASSERT_EQ(0, run_rounds(-1, &s));
	log_tally(_metadata, "sched_yield under scx_wsched", &s);

	EXPECT_LE(ROUNDS * 9 / 10, y.handed_over);
	EXPECT_LE(ROUNDS * 9 / 10, y.target_first);
	ASSERT_EQ(0, read_state(state, sizeof(state)));
	EXPECT_STREQ("enabled", state) TH_LOG("the scheduler was ejected; see %s", self->log);
	EXPECT_EQ(0, scx_stop(self)) TH_LOG("scx_wsched exit status; see %s", self->log);
}

TEST_HARNESS_MAIN
