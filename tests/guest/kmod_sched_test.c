// SPDX-License-Identifier: GPL-2.0
/*
 * wsched.ko with a real scheduler: a directed yield observed, under EEVDF
 * (no sched_ext scheduler loaded) and under scx_wsched.
 *
 * Ping-pong: two threads pinned to one CPU pass a turn back and forth, each
 * giving the CPU to the other with YIELD_TO while it waits. A call that
 * returns 1 (handed over) must find, when the caller runs again, that the
 * peer took its turn in between: the CPU really went to the peer.
 *
 * Decoy rounds (scx_wsched only): the caller, a target and a decoy share
 * one CPU; target and decoy spin. Just before each call the caller clears
 * a shared "first" word, and the spinners write their id into it with a
 * CAS whenever they run and find it clear: after the call "first" names
 * the thread that got the CPU from the caller. scx_wsched's ops.yield
 * promises the target runs next, so "first" must name it. EEVDF makes no
 * such promise: yield_to() only sets the target as next buddy, which
 * pick_next_entity() honours only while the target is eligible (lag >= 0),
 * so a spinner that just used its slice is passed over; the EEVDF case
 * logs the decoy rounds (Documentation/results/handoff.md) but does not
 * assert them.
 *
 * Fairness (scx_wsched only): two threads yielding to each other in a loop
 * must not keep their CPU from a hog sharing it.
 *
 * Target elsewhere (scx_wsched only): the same rounds with target and decoy
 * pinned to another CPU than the caller: the scheduler may not pull the
 * target over, it boosts it on its own CPU (see that case).
 *
 * The scx_wsched cases SKIP while build/bin/scx_wsched does not exist; the
 * directed case also SKIPs while the scheduler has no ops.yield (no
 * wsched_yield in build/bpf/scx_wsched.bpf.o): without it sched_ext declines
 * every directed yield, and the other case checks that this is all that
 * happens.
 */
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "kmod_util.h"
#include "scx_wsched_util.h"

KMOD_UNLOAD_AT_EXIT

#define ROUNDS	200
#define CPU	1	/* not CPU 0, where the test runner and kworkers tend to be */

enum { ID_NONE, ID_TARGET, ID_DECOY };

struct arena {
	atomic_int first;
	atomic_int stop;
	int spin_cpu;		/* where the spinners are pinned (CPU unless a case moves them) */
	atomic_int off_cpu;	/* times a spinner found itself elsewhere */
	atomic_int tid[3];
	atomic_ulong spins[3];
};

static struct arena *ar;

static void *spinner(void *arg)
{
	int id = (int)(long)arg;

	guest_pin(ar->spin_cpu);
	atomic_store(&ar->tid[id], kmod_gettid());
	while (!atomic_load_explicit(&ar->stop, memory_order_relaxed)) {
		int none = ID_NONE;

		if (sched_getcpu() != ar->spin_cpu)
			atomic_fetch_add_explicit(&ar->off_cpu, 1, memory_order_relaxed);

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
 * ROUNDS calls of the caller (pinned to CPU, the spinners to spin_cpu): a
 * directed yield with flags (fd >= 0) or sched_yield() (fd < 0), each
 * followed by a sleep of gap_us (0: none) before "first" is read. Returns
 * -errno of the first failed call, else 0.
 */
static int run_rounds_on(int fd, uint32_t flags, int spin_cpu, int gap_us, struct tally *t)
{
	pthread_t th[3];
	int i, ret = 0;

	memset(t, 0, sizeof(*t));
	memset(ar, 0, sizeof(*ar));
	ar->spin_cpu = spin_cpu;
	guest_pin(CPU);
	for (i = ID_TARGET; i <= ID_DECOY; i++)
		pthread_create(&th[i], NULL, spinner, (void *)(long)i);
	while (!atomic_load(&ar->tid[ID_TARGET]) || !atomic_load(&ar->tid[ID_DECOY]))
		usleep(1000);

	for (i = 0; i < ROUNDS; i++) {
		uint32_t result = 0;
		int first;

		atomic_store(&ar->first, ID_NONE);
		if (fd >= 0) {
			ret = kmod_yield_to_flags(fd, atomic_load(&ar->tid[ID_TARGET]), flags, &result);
			if (ret < 0)
				break;
			t->handed_over += ret;
		} else {
			sched_yield();
		}
		t->calls++;
		if (gap_us)
			usleep(gap_us);
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

static int run_rounds(int fd, uint32_t flags, struct tally *t)
{
	return run_rounds_on(fd, flags, CPU, 0, t);
}

#define TURNS	400
#define WARMUP	20

struct pingpong {
	int fd;
	atomic_int turn;	/* 0 or 1: whose turn */
	atomic_int tids[2];
	atomic_long turns;
	long calls[2], handed_over[2], peer_ran[2], turn_gone[2];
	long accepted[2], switched[2], alone[2];
	atomic_long handed_over_all;	/* warm-up included */
};

/*
 * One player: takes its turn, passes it, then yields to the peer until the
 * turn is back. peer_ran counts handed-over calls after which the turn was
 * back (the peer ran); turn_gone counts those after which it was not.
 */
struct pp_arg {
	struct pingpong *pp;
	int me;
};

static void *pp_player(void *arg)
{
	struct pingpong *pp = ((struct pp_arg *)arg)->pp;
	int me = ((struct pp_arg *)arg)->me, peer = !me;

	guest_pin(CPU);
	atomic_store(&pp->tids[me], kmod_gettid());
	while (!atomic_load(&pp->tids[peer]))
		sched_yield();
	for (;;) {
		while (atomic_load(&pp->turn) != me) {
			uint32_t result = 0;
			int ret = kmod_yield_to(pp->fd, atomic_load(&pp->tids[peer]), &result);

			if (ret < 0) {
				/* The peer may be gone after its last turn. */
				if (ret == -ESRCH && atomic_load(&pp->turns) >= TURNS)
					continue;
				return (void *)(long)-ret;
			}
			if (ret == 1)
				atomic_fetch_add(&pp->handed_over_all, 1);
			/* Count once both players are in the game (a peer still starting is asleep). */
			if (atomic_load(&pp->turns) < WARMUP)
				continue;
			pp->calls[me]++;
			pp->accepted[me] += !!(result & WSCHED_YIELD_ACCEPTED);
			pp->switched[me] += !!(result & WSCHED_YIELD_SWITCHED);
			pp->alone[me] += !!(result & WSCHED_YIELD_ALONE);
			if (ret == 1) {
				pp->handed_over[me]++;
				if (atomic_load(&pp->turn) == me)
					pp->peer_ran[me]++;
				else
					pp->turn_gone[me]++;
			}
		}
		if (atomic_fetch_add(&pp->turns, 1) >= TURNS) {
			atomic_store(&pp->turn, peer);
			return NULL;
		}
		atomic_store(&pp->turn, peer);
	}
}

/* Runs TURNS turns; 0, or the errno a call failed with. */
static int ping_pong(int fd, struct pingpong *pp)
{
	struct pp_arg a0 = { pp, 0 }, a1 = { pp, 1 };
	void *ret1 = NULL, *ret0;
	pthread_t th;

	memset(pp, 0, sizeof(*pp));
	pp->fd = fd;
	/* Player 0 is this thread, player 1 a new one. */
	pthread_create(&th, NULL, pp_player, &a1);
	ret0 = pp_player(&a0);
	pthread_join(th, &ret1);
	return (int)(long)(ret0 ? ret0 : ret1);
}

static void log_pp(struct __test_metadata *_metadata, const char *what, const struct pingpong *pp)
{
	TH_LOG("%s: %ld turns, %ld calls (%ld + %ld): %ld accepted, %ld switched, %ld alone, "
	       "%ld handed over, after which the peer had run %ld times, not %ld",
	       what, atomic_load(&pp->turns), pp->calls[0] + pp->calls[1], pp->calls[0], pp->calls[1],
	       pp->accepted[0] + pp->accepted[1], pp->switched[0] + pp->switched[1],
	       pp->alone[0] + pp->alone[1],
	       pp->handed_over[0] + pp->handed_over[1], pp->peer_ran[0] + pp->peer_ran[1],
	       pp->turn_gone[0] + pp->turn_gone[1]);
}

/* Handed over nearly every time, and every handoff reached the peer. */
static void check_pp(struct __test_metadata *_metadata, const struct pingpong *pp)
{
	long calls = pp->calls[0] + pp->calls[1];
	long ho = pp->handed_over[0] + pp->handed_over[1];
	long ran = pp->peer_ran[0] + pp->peer_ran[1];

	EXPECT_LT(TURNS, atomic_load(&pp->turns));
	EXPECT_LT(0, calls);
	EXPECT_LE(calls * 9 / 10, ho);
	EXPECT_LE(ho * 95 / 100, ran);
}

FIXTURE(sched) {
	int fd;
	pid_t scx;		/* scx_wsched's pid, or 0 */
	char log[64];
};

static int read_state(char *buf, size_t len)
{
	return guest_read_line("/sys/kernel/sched_ext/state", buf, len);
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
	snprintf(bin, sizeof(bin), "%s", getenv("WSCHED_BIN") ?: "");
	if (!bin[0])
		snprintf(bin, sizeof(bin), "%s/build/bin/scx_wsched", top);
	snprintf(obj, sizeof(obj), "%s/build/bpf/scx_wsched.bpf.o", top);
	if (stat(bin, &st)) {
		snprintf(why, sizeof(why), "no %s yet (make builds it)", bin);
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
		/* The counters are printed once more, as JSON, when it exits. */
		execl(bin, bin, "--stats", "3600", "--json", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < WT_LOAD_WAIT * 20; i++) {
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
	return "scx_wsched not enabled after " WT_STR(WT_LOAD_WAIT) " s";
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

/* The scheduler is still loaded (never ejected), and stops cleanly. */
static void scx_check_stop(struct __test_metadata *_metadata, FIXTURE_DATA(sched) *self)
{
	char state[64];

	ASSERT_EQ(0, read_state(state, sizeof(state)));
	EXPECT_STREQ("enabled", state) TH_LOG("the scheduler was ejected; see %s", self->log);
	EXPECT_EQ(0, scx_stop(self)) TH_LOG("scx_wsched exit status; see %s", self->log);
}

static void log_tally(struct __test_metadata *_metadata, const char *what, const struct tally *t)
{
	TH_LOG("%s: %d calls, %d handed over, first to run: target %d, decoy %d, nobody %d",
	       what, t->calls, t->handed_over, t->target_first, t->decoy_first, t->nobody);
}

TEST_F_TIMEOUT(sched, eevdf_directed_yield, 120)
{
	long long h0 = kmod_stat("nr_handoffs");
	struct pingpong pp;
	struct tally y, s;
	char state[64];

	ASSERT_EQ(0, read_state(state, sizeof(state)));
	ASSERT_STREQ("disabled", state) TH_LOG("this case needs EEVDF, no sched_ext scheduler");

	ASSERT_EQ(0, ping_pong(self->fd, &pp));
	log_pp(_metadata, "ping-pong", &pp);
	check_pp(_metadata, &pp);
	EXPECT_EQ(h0 + atomic_load(&pp.handed_over_all), kmod_stat("nr_handoffs"));

	/* For the record only: EEVDF passes over an ineligible target. */
	ASSERT_EQ(0, run_rounds(self->fd, 0, &y));
	log_tally(_metadata, "decoy rounds, YIELD_TO", &y);
	ASSERT_EQ(0, run_rounds(-1, 0, &s));
	log_tally(_metadata, "decoy rounds, sched_yield", &s);
}

TEST_F_TIMEOUT(sched, scx_wsched_ioctl_safe, 120)
{
	const char *why = scx_start(self, false);
	long long a0 = kmod_stat("nr_accepted"), d0 = kmod_stat("nr_declined");
	long long f0, nd0;
	pid_t other;
	struct tally y, f, s;

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

	ASSERT_EQ(0, run_rounds(self->fd, 0, &y));
	log_tally(_metadata, "YIELD_TO under scx_wsched", &y);
	EXPECT_EQ(ROUNDS, y.calls);
	/*
	 * With the fallback every declined call yields. Whether that lets
	 * a spinner run is scx_wsched's ops.yield/slice policy, so it is only
	 * logged, next to plain sched_yield() for comparison.
	 */
	f0 = kmod_stat("nr_fallbacks");
	nd0 = kmod_stat("nr_declined") + kmod_stat("nr_alone");
	ASSERT_EQ(0, run_rounds(self->fd, WSCHED_YIELD_TO_FALLBACK, &f));
	log_tally(_metadata, "YIELD_TO with fallback under scx_wsched", &f);
	EXPECT_EQ(kmod_stat("nr_declined") + kmod_stat("nr_alone") - nd0, kmod_stat("nr_fallbacks") - f0);
	ASSERT_EQ(0, run_rounds(-1, 0, &s));
	log_tally(_metadata, "sched_yield under scx_wsched", &s);
	/* Every call reached the scheduler: accepted or declined. */
	EXPECT_LE(a0 + d0 + ROUNDS - 10, kmod_stat("nr_accepted") + kmod_stat("nr_declined"));

	scx_check_stop(_metadata, self);
}

TEST_F_TIMEOUT(sched, scx_wsched_directed_yield, 120)
{
	const char *why = scx_start(self, true);
	long long k0 = kmod_stat("nr_yield_to"), yt, handoff;
	struct pingpong pp;
	struct tally y, s;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, ping_pong(self->fd, &pp));
	log_pp(_metadata, "ping-pong under scx_wsched", &pp);
	check_pp(_metadata, &pp);
	ASSERT_EQ(0, run_rounds(self->fd, 0, &y));
	log_tally(_metadata, "decoy rounds, YIELD_TO under scx_wsched", &y);
	ASSERT_EQ(0, run_rounds(-1, 0, &s));
	log_tally(_metadata, "decoy rounds, sched_yield under scx_wsched", &s);

	EXPECT_LE(ROUNDS * 9 / 10, y.handed_over);
	EXPECT_LE(ROUNDS * 9 / 10, y.target_first);
	scx_check_stop(_metadata, self);

	/*
	 * The scheduler's own account: every directed call it saw came from
	 * this test's ioctls, and (nearly) every call the module reported
	 * as handed over is one where ops.yield's target was moved to the
	 * caller's CPU and run next (all threads share one CPU: no boosts).
	 */
	yt = wt_json_last(self->log, "nr_yield_to");
	handoff = wt_json_last(self->log, "nr_yield_to_handoff");
	TH_LOG("scx_wsched: nr_yield_to %lld, nr_yield_to_handoff %lld, nr_yield_to_boost %lld, "
	       "nr_yield_to_unfair %lld; module: %lld yield_to calls, %ld + %d handed over",
	       yt, handoff, wt_json_last(self->log, "nr_yield_to_boost"),
	       wt_json_last(self->log, "nr_yield_to_unfair"),
	       kmod_stat("nr_yield_to") - k0, atomic_load(&pp.handed_over_all), y.handed_over);
	ASSERT_LE(0, handoff) TH_LOG("no final JSON counters in %s", self->log);
	EXPECT_LE(yt, kmod_stat("nr_yield_to") - k0);
	EXPECT_LE(handoff, yt);
	EXPECT_LE((atomic_load(&pp.handed_over_all) + y.handed_over) * 9 / 10, handoff);
	EXPECT_EQ(0, wt_json_last(self->log, "nr_yield_to_boost"));
}

/*
 * The target may not run on the caller's CPU: target and decoy are pinned
 * to CPU + 1, the caller alone on CPU. ops.yield must not pull the target
 * over (the kernel would eject the scheduler for that move); it boosts the
 * target on its own CPU instead. Whether the boost wins the race against
 * the decoy's slice end is timing, so the case asserts what must hold: the
 * scheduler stays loaded, the spinners never ran off their CPU, calls were
 * accepted, boosts happened and no handoff to the caller's CPU did.
 */
TEST_F_TIMEOUT(sched, scx_wsched_yield_to_other_cpu, 120)
{
	const char *why = scx_start(self, true);
	long long k0 = kmod_stat("nr_yield_to"), a0 = kmod_stat("nr_accepted");
	long long d0 = kmod_stat("nr_declined"), l0 = kmod_stat("nr_alone");
	long long yt, handoff, boost, accepted;
	struct tally y;

	if (why)
		SKIP(return, "%s", why);
	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU + 1)
		SKIP(return, "needs CPU %d", CPU + 1);
	/* A gap between calls, so that the target is often queued, not running. */
	ASSERT_EQ(0, run_rounds_on(self->fd, 0, CPU + 1, 2000, &y));
	accepted = kmod_stat("nr_accepted") - a0;
	log_tally(_metadata, "YIELD_TO a target pinned elsewhere", &y);
	TH_LOG("module: %lld accepted, %lld declined, %lld alone; spins: target %lu, decoy %lu",
	       accepted, kmod_stat("nr_declined") - d0, kmod_stat("nr_alone") - l0,
	       atomic_load(&ar->spins[ID_TARGET]), atomic_load(&ar->spins[ID_DECOY]));
	EXPECT_EQ(ROUNDS, y.calls);
	EXPECT_EQ(0, atomic_load(&ar->off_cpu));
	scx_check_stop(_metadata, self);

	yt = wt_json_last(self->log, "nr_yield_to");
	handoff = wt_json_last(self->log, "nr_yield_to_handoff");
	boost = wt_json_last(self->log, "nr_yield_to_boost");
	TH_LOG("scx_wsched: nr_yield_to %lld, handoff %lld, boost %lld; module: %lld calls, %lld accepted",
	       yt, handoff, boost, kmod_stat("nr_yield_to") - k0, accepted);
	ASSERT_LE(0, handoff) TH_LOG("no final JSON counters in %s", self->log);
	EXPECT_LT(0, accepted);
	EXPECT_LE(yt, kmod_stat("nr_yield_to") - k0);
	EXPECT_EQ(0, handoff);
	/* Seen: every call that reached ops.yield boosted (63 of 63, 74 of 74). */
	EXPECT_LE(yt / 2, boost);
	EXPECT_LT(0, boost);
	EXPECT_LE(boost, yt);
}

/*
 * A directed yield must not let two threads keep a CPU between them: A and
 * B yield to each other in a loop on CPU, a hog C shares the CPU. Without a
 * limit every dispatch on that CPU would run the last call's target and C
 * would starve (until the kernel's watchdog ejected the scheduler). C must
 * get a real share: at least a tenth of the CPU (a fair share is a third).
 */
struct yf_arg {
	int fd;
	atomic_int *tids;
	int me;
	atomic_int *stop;
	long calls, handed_over;
};

static void *yf_player(void *arg)
{
	struct yf_arg *a = arg;

	guest_pin(CPU);
	atomic_store(&a->tids[a->me], kmod_gettid());
	while (!atomic_load(&a->tids[!a->me]))
		usleep(1000);
	while (!atomic_load_explicit(a->stop, memory_order_relaxed)) {
		int ret = kmod_yield_to(a->fd, atomic_load(&a->tids[!a->me]), NULL);

		a->calls++;
		a->handed_over += ret == 1;
	}
	return NULL;
}

static void *yf_hog(void *arg)
{
	atomic_int *stop = arg;
	struct timespec ts;

	guest_pin(CPU);
	while (!atomic_load_explicit(stop, memory_order_relaxed))
		;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (void *)(long)(ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

TEST_F_TIMEOUT(sched, scx_wsched_yield_to_stays_fair, 120)
{
	const char *why = scx_start(self, true);
	atomic_int tids[2] = { 0, 0 }, stop = 0;
	struct yf_arg a0 = { .tids = tids, .me = 0, .stop = &stop };
	struct yf_arg a1 = { .tids = tids, .me = 1, .stop = &stop };
	pthread_t p0, p1, hog;
	void *hog_ms;

	if (why)
		SKIP(return, "%s", why);
	a0.fd = a1.fd = self->fd;
	pthread_create(&hog, NULL, yf_hog, &stop);
	pthread_create(&p0, NULL, yf_player, &a0);
	pthread_create(&p1, NULL, yf_player, &a1);
	sleep(3);
	atomic_store(&stop, 1);
	pthread_join(p0, NULL);
	pthread_join(p1, NULL);
	pthread_join(hog, &hog_ms);
	TH_LOG("3 s: players made %ld + %ld calls, %ld + %ld handed over; the hog ran %ld ms",
	       a0.calls, a1.calls, a0.handed_over, a1.handed_over, (long)hog_ms);
	EXPECT_LT(0, a0.handed_over + a1.handed_over);
	EXPECT_LE(300, (long)hog_ms);
	scx_check_stop(_metadata, self);
}

/*
 * A directed yield gives away the caller's own CPU time, never another
 * process's. The victim, a process of another uid, spins pinned to CPU + 1
 * and counts; the attacker has a target thread there too (it calls
 * sched_yield() in a loop, so it waits right behind the victim) and a
 * thread on CPU that calls YIELD_TO the target in a loop. A scheduler that
 * kicks the target's CPU for each call preempts the victim each time, the
 * target runs and yields straight back. The victim's CPU time and
 * involuntary context switches must stay within 10% of a run where the
 * attacker's thread makes the same calls at a thread of its process that
 * sleeps on the victim's CPU (so that its vCPU is as busy), the switches
 * plus 10 (2 s runs have few). CPU time, not spins, is what the scheduler
 * gives: in the lab's TCG how fast a vCPU executes depends on what the
 * other vCPUs execute (the victim got the same CPU time in both runs and
 * made 10% fewer spins in it beside the calls that reach the scheduler);
 * the spins are logged.
 */
struct foreign {
	atomic_int go, stop, target_tid, sleeper_tid;
	unsigned long spins;
	long nivcsw, cpu_ms;
	int done;
};

static void foreign_victim(struct foreign *f)
{
	unsigned long n = 0;
	struct rusage r0, r1;

	if (setgid(65534) || setuid(65534) || guest_pin(CPU + 1))
		_exit(3);
	while (!atomic_load(&f->go))
		usleep(1000);
	getrusage(RUSAGE_SELF, &r0);
	while (!atomic_load_explicit(&f->stop, memory_order_relaxed))
		n++;
	getrusage(RUSAGE_SELF, &r1);
	f->spins = n;
	f->nivcsw = r1.ru_nivcsw - r0.ru_nivcsw;
	f->cpu_ms = wt_rusage_cpu_ms(&r0, &r1);
	f->done = 1;
	_exit(0);
}

static void *foreign_target(void *arg)
{
	struct foreign *f = arg;

	guest_pin(CPU + 1);
	atomic_store(&f->target_tid, kmod_gettid());
	while (!atomic_load_explicit(&f->stop, memory_order_relaxed))
		sched_yield();
	return NULL;
}

static void *foreign_sleeper(void *arg)
{
	struct foreign *f = arg;

	guest_pin(CPU + 1);	/* each call locks the victim's runqueue, as the attack's */
	atomic_store(&f->sleeper_tid, kmod_gettid());
	while (!atomic_load(&f->stop))
		usleep(10000);
	return NULL;
}

#define FOREIGN_ROUNDS	3	/* runs of each kind */

/* One 2 s run; the attacker's calls, or -1 if the victim failed. */
static long foreign_run(int fd, bool attack, struct foreign *f)
{
	pthread_t th, sleeper;
	long calls = 0;
	pid_t victim, to;
	int st;

	memset(f, 0, sizeof(*f));
	victim = fork();
	if (victim < 0)
		return -1;
	if (!victim)
		foreign_victim(f);
	guest_pin(CPU);
	pthread_create(&th, NULL, foreign_target, f);
	pthread_create(&sleeper, NULL, foreign_sleeper, f);
	while (!atomic_load(&f->target_tid) || !atomic_load(&f->sleeper_tid))
		usleep(1000);
	to = atomic_load(attack ? &f->target_tid : &f->sleeper_tid);
	atomic_store(&f->go, 1);
	for (uint64_t end = kmod_now_ns() + 2000000000ull; kmod_now_ns() < end; calls++)
		kmod_yield_to(fd, to, NULL);
	atomic_store(&f->stop, 1);
	pthread_join(th, NULL);
	pthread_join(sleeper, NULL);
	waitpid(victim, &st, 0);
	return WIFEXITED(st) && !WEXITSTATUS(st) && f->done ? calls : -1;
}

/* FOREIGN_ROUNDS runs of each kind, alternated, and the victim's bounds;
 * up to three times while a bound misses. */
static void foreign_compare(struct __test_metadata *_metadata, int fd)
{
	struct foreign *f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned long spins[2];
	long nivcsw[2], cpu_ms[2], calls;
	bool held = false;
	int i, try;

	ASSERT_NE(MAP_FAILED, f);
	/*
	 * Alternated, summed: the lab's vCPUs run at the host's whim. A busy
	 * host moves the victim's switches by over 10% between two sets of
	 * runs of the same kind, so a comparison that misses a bound is made
	 * again (three times at most): an attack that preempted the victim
	 * at even one call in a thousand would add hundreds of switches to
	 * every set.
	 */
	for (try = 1; try <= 3 && !held; try++) {
		memset(spins, 0, sizeof(spins));
		memset(nivcsw, 0, sizeof(nivcsw));
		memset(cpu_ms, 0, sizeof(cpu_ms));
		for (i = 0, calls = 0; i < 2 * FOREIGN_ROUNDS; i++) {
			long n = foreign_run(fd, i & 1, f);

			ASSERT_LE(0, n) TH_LOG("the victim did not run to the end");
			spins[i & 1] += f->spins;
			nivcsw[i & 1] += f->nivcsw;
			cpu_ms[i & 1] += f->cpu_ms;
			calls += (i & 1) ? n : 0;
		}
		TH_LOG("try %d, victim: %ld ms of CPU, %ld involuntary switches, %lu spins without "
		       "the attack; %ld ms, %ld, %lu beside %ld YIELD_TO calls", try,
		       cpu_ms[0], nivcsw[0], spins[0], cpu_ms[1], nivcsw[1], spins[1], calls);
		held = cpu_ms[0] * 0.9 <= (double)cpu_ms[1] &&
		       nivcsw[0] * 1.1 + 10 >= (double)nivcsw[1];
	}
	EXPECT_LT(0, calls);
	EXPECT_LE(cpu_ms[0] * 0.9, (double)cpu_ms[1]);
	EXPECT_GE(nivcsw[0] * 1.1 + 10, (double)nivcsw[1]);
	munmap(f, sizeof(*f));
}

TEST_F_TIMEOUT(sched, scx_wsched_yield_to_preempts_no_other_process, 120)
{
	const char *why = scx_start(self, true);

	if (why)
		SKIP(return, "%s", why);
	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU + 1)
		SKIP(return, "needs CPU %d", CPU + 1);
	foreign_compare(_metadata, self->fd);
	scx_check_stop(_metadata, self);
	TH_LOG("scx_wsched: nr_yield_to %lld, boost %lld, foreign %lld",
	       wt_json_last(self->log, "nr_yield_to"), wt_json_last(self->log, "nr_yield_to_boost"),
	       wt_json_last(self->log, "nr_yield_to_foreign"));
}

/*
 * The same attack under EEVDF, with the module's default preempt=Y: each
 * call that finds the target queued on the victim's CPU reschedules that
 * CPU (yield_to()'s preempt), and EEVDF then runs the target only while it
 * is eligible; the victim must keep its CPU time and switches as above.
 */
TEST_F_TIMEOUT(sched, eevdf_yield_to_preempts_no_other_process, 120)
{
	char state[64], preempt[8] = "";
	int i;

	/* The case before unloads scx_wsched; its detach may still be on. */
	for (i = 0; i < 100; i++) {
		ASSERT_EQ(0, read_state(state, sizeof(state)));
		if (!strcmp(state, "disabled"))
			break;
		usleep(50000);
	}
	if (strcmp(state, "disabled"))
		SKIP(return, "this case needs EEVDF, no sched_ext scheduler (state %s)", state);
	if (sysconf(_SC_NPROCESSORS_ONLN) <= CPU + 1)
		SKIP(return, "needs CPU %d", CPU + 1);
	guest_read_line(KMOD_SYSFS "/parameters/preempt", preempt, sizeof(preempt));
	TH_LOG("wsched.ko preempt=%s", preempt);
	foreign_compare(_metadata, self->fd);
	ASSERT_EQ(0, read_state(state, sizeof(state)));
	EXPECT_STREQ("disabled", state);
}

/*
 * A ring of directed yields may not keep a task that waits with it from its
 * CPU (Documentation/scheduler.md, "Jumps ahead of a deque's order"). RING
 * threads of an unprivileged attacker (uid 65534, no registration, only
 * /dev/wsched, which is 0666) are pinned to CPU; each spins RING_SPIN_US,
 * then YIELD_TOs the next thread of the ring, the one that ran longest ago:
 * its vtime is the ring's earliest, so the yielder's later one pays nothing
 * for the turn it passes on. Beside them a victim of another uid (65533),
 * pinned there too, spins and records its CPU time and its longest gap
 * between two clock reads; it runs at nice -10 (set before it drops root),
 * so that its share is dozens of runs in seconds. A rule that let any
 * target up to L of vtime ahead of the deque's head jump it, with nobody
 * paying, would give the ring 128 x L before the victim ran again (with L
 * 16 base slices, 41 s: past the watchdog's 30 s, after which the kernel
 * ejects the scheduler for everyone). The victim must get at least 90% of
 * its CPU time beside the same threads spinning without the calls, its
 * longest gap must stay within the rule's bound,
 * and the scheduler must stay enabled. WSCHED_YIELD_RING_SECONDS sets the
 * length of each run (6; make stress: 40).
 */
#define RING		128
#define RING_SPIN_US	100
#define RING_UID	65534
#define RING_VICTIM_UID	65533
/*
 * The bound (scheduler.md): a task waits for each task whose place is
 * before its own, one cut slice each, and for one cut slice more of a
 * target that each of them passes its place on to. A cut slice here is
 * min_slice (5 ms by default) plus up to two ticks (the cut and the end
 * are both seen at a tick; Debian's HZ is 250).
 */
#define RING_CUT_MS	(5 + 2 * 4)
#define RING_GAP_BOUND_MS	(2 * RING * RING_CUT_MS)

struct ring_run {
	atomic_int go, stop, ready, failed;
	uint64_t go_ns;		/* when go was set: the victim's first gap starts there */
	atomic_int tids[RING];
	atomic_long calls, handed_over;
	long victim_cpu_us, victim_gap_us;
	int victim_done;
};

struct ring_member_arg {
	struct ring_run *r;
	int i, fd;
};

static void *ring_member(void *arg)
{
	struct ring_member_arg *a = arg;
	struct ring_run *r = a->r;
	long calls = 0, handed = 0;

	if (guest_pin(CPU)) {
		atomic_store(&r->failed, 1);
		return NULL;
	}
	atomic_store(&r->tids[a->i], kmod_gettid());
	atomic_fetch_add(&r->ready, 1);
	while (!atomic_load(&r->go))
		usleep(1000);
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t end = kmod_now_ns() + RING_SPIN_US * 1000ull;
		int ret;

		while (kmod_now_ns() < end)
			;
		if (a->fd < 0)
			continue;
		ret = kmod_yield_to(a->fd, atomic_load(&r->tids[(a->i + 1) % RING]), NULL);
		calls++;
		handed += ret == 1;
	}
	atomic_fetch_add(&r->calls, calls);
	atomic_fetch_add(&r->handed_over, handed);
	return NULL;
}

/* The attacker's process: RING threads, with the calls if @attack. */
static void ring_attacker(struct ring_run *r, bool attack)
{
	static struct ring_member_arg args[RING];
	pthread_t th[RING];
	int fd = -1, i;

	if (setgid(RING_UID) || setuid(RING_UID))
		_exit(3);
	if (attack && (fd = kmod_open()) < 0)
		_exit(4);
	for (i = 0; i < RING; i++) {
		args[i] = (struct ring_member_arg){ .r = r, .i = i, .fd = fd };
		if (pthread_create(&th[i], NULL, ring_member, &args[i]))
			_exit(5);
	}
	for (i = 0; i < RING; i++)
		pthread_join(th[i], NULL);
	_exit(0);
}

static void ring_victim(struct ring_run *r)
{
	struct timespec c0, c1;
	uint64_t prev, now, gap = 0;

	if (setpriority(PRIO_PROCESS, 0, -10) || setgid(RING_VICTIM_UID) ||
	    setuid(RING_VICTIM_UID) || guest_pin(CPU))
		_exit(3);
	atomic_fetch_add(&r->ready, 1);
	while (!atomic_load(&r->go))
		usleep(1000);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	prev = r->go_ns;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		now = kmod_now_ns();
		if (now - prev > gap)
			gap = now - prev;
		prev = now;
	}
	now = kmod_now_ns();	/* a victim that never ran waited all along */
	if (now - prev > gap)
		gap = now - prev;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	r->victim_cpu_us = (c1.tv_sec - c0.tv_sec) * 1000000L + (c1.tv_nsec - c0.tv_nsec) / 1000;
	r->victim_gap_us = gap / 1000;
	r->victim_done = 1;
	_exit(0);
}

/* One run of @secs; 0, or what went wrong. */
static const char *ring_run(struct ring_run *r, bool attack, long secs)
{
	pid_t victim, attacker;
	int st_v = 0, st_a = 0, i;

	memset(r, 0, sizeof(*r));
	victim = fork();
	if (victim < 0)
		return "fork";
	if (!victim)
		ring_victim(r);
	attacker = fork();
	if (attacker < 0)
		return "fork";
	if (!attacker)
		ring_attacker(r, attack);
	for (i = 0; i < 3000 && atomic_load(&r->ready) < RING + 1 && !atomic_load(&r->failed); i++)
		usleep(10000);
	r->go_ns = kmod_now_ns();
	atomic_store(&r->go, 1);
	sleep(secs);
	atomic_store(&r->stop, 1);
	waitpid(attacker, &st_a, 0);
	waitpid(victim, &st_v, 0);
	if (atomic_load(&r->failed) || !WIFEXITED(st_a) || WEXITSTATUS(st_a))
		return "the attacker's threads did not run (uid, /dev/wsched or pinning)";
	if (!WIFEXITED(st_v) || WEXITSTATUS(st_v) || !r->victim_done)
		return "the victim did not run to the end";
	return NULL;
}

TEST_F_TIMEOUT(sched, scx_wsched_yield_ring_starves_nobody, 300)
{
	long secs = kmod_env_long("WSCHED_YIELD_RING_SECONDS", 6);
	struct ring_run *r = mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const char *why = scx_start(self, true), *err;
	long ref_cpu, ref_gap;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_NE(MAP_FAILED, r);
	err = ring_run(r, false, secs);
	ASSERT_TRUE(err == NULL) TH_LOG("without the calls: %s", err);
	ref_cpu = r->victim_cpu_us;
	ref_gap = r->victim_gap_us;
	err = ring_run(r, true, secs);
	ASSERT_TRUE(err == NULL) TH_LOG("the ring: %s", err);
	TH_LOG("%ld s runs: the victim got %ld ms of CPU, longest gap %ld ms, beside %d spinners; "
	       "%ld ms, %ld ms beside the ring (%ld calls, %ld handed over); bound %d ms",
	       secs, ref_cpu / 1000, ref_gap / 1000, RING, r->victim_cpu_us / 1000,
	       r->victim_gap_us / 1000, atomic_load(&r->calls), atomic_load(&r->handed_over),
	       RING_GAP_BOUND_MS);
	EXPECT_LT(0, atomic_load(&r->handed_over));
	EXPECT_LE(ref_cpu * 0.9, (double)r->victim_cpu_us);
	EXPECT_GE(RING_GAP_BOUND_MS * 1000L, r->victim_gap_us);
	scx_check_stop(_metadata, self);
	TH_LOG("scx_wsched: nr_yield_to %lld, handoff %lld, unfair %lld",
	       wt_json_last(self->log, "nr_yield_to"), wt_json_last(self->log, "nr_yield_to_handoff"),
	       wt_json_last(self->log, "nr_yield_to_unfair"));
	munmap(r, sizeof(*r));
}

WT_TEST_HARNESS_MAIN
