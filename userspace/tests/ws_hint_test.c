// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * Thread registration (lib/hint.c, Documentation/abi.md) against a fake
 * loader: a thread of this test serves the registration protocol on a unix
 * socket and hands out BPF arrays as the loader does, with no scheduler
 * reading them. Checks slot claiming and release, critical sections
 * reaching the shared slot, refusals (-ENOSPC, -EPROTO, a descriptor that
 * is not a slot array), fork, the hand-back of a pending grace, and
 * measures a ws_critical_enter/exit pair with a registered slot.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "fake_loader.h"
#include "test_util.h"
#include "wsched/lock.h"
#include "wsched/thread.h"

/* sched_yield() calls of the whole process (see sched_yield() below). */
static unsigned long nr_yields_total;

static pid_t tid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static int owned_by(struct ws_hint_slot *slots, pid_t tid)
{
	int i, n = 0;

	for (i = 0; i < (int)WS_HINT_NR_SLOTS; i++)
		n += __atomic_load_n(&slots[i].owner_tid, __ATOMIC_ACQUIRE) == (uint32_t)tid;
	return n;
}

/* ------------------------------------------------------------------ */

#define NR_THREADS 16

struct reg {
	pthread_barrier_t in, out;
	pid_t tid[NR_THREADS];
	int rc[NR_THREADS];
	const struct ws_hint_slot *slot[NR_THREADS];
};

static struct reg reg;

static void *reg_thread(void *arg)
{
	int i = (int)(long)arg;

	reg.tid[i] = tid_();
	reg.rc[i] = ws_thread_register();
	reg.slot[i] = ws_thread_slot();
	ws_critical_enter();
	pthread_barrier_wait(&reg.in);		/* the main thread looks */
	pthread_barrier_wait(&reg.out);
	ws_critical_exit();
	return NULL;				/* released at thread exit */
}

TEST(threads_claim_distinct_slots_in_their_window_and_release_them_at_exit)
{
	static struct fake_loader f;
	pthread_t th[NR_THREADS];
	struct ws_hint_slot *slots;
	int i, k, found;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	pthread_barrier_init(&reg.in, NULL, NR_THREADS + 1);
	pthread_barrier_init(&reg.out, NULL, NR_THREADS + 1);
	for (i = 0; i < NR_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, reg_thread, (void *)(long)i));
	pthread_barrier_wait(&reg.in);
	ASSERT_EQ(1, __atomic_load_n(&f.nr, __ATOMIC_ACQUIRE)) TH_LOG("one connection per process");
	slots = f.slots[0];
	for (i = 0; i < NR_THREADS; i++) {
		EXPECT_EQ(0, reg.rc[i]);
		EXPECT_EQ(1, owned_by(slots, reg.tid[i]));
		found = 0;
		for (k = 0; k < (int)WS_HINT_PROBE; k++) {
			struct ws_hint_slot *s = &slots[WS_HINT_SLOT_IDX((uint32_t)reg.tid[i], k)];

			if (s->owner_tid == (uint32_t)reg.tid[i]) {
				found = 1;
				/* The thread's own (library) mapping agrees. */
				EXPECT_EQ((uint32_t)reg.tid[i], reg.slot[i]->owner_tid);
				EXPECT_EQ(WS_HINT_ABI_VERSION, s->abi_version);
				EXPECT_EQ(1, s->cs_depth);	/* entered after registering */
			}
		}
		EXPECT_EQ(1, found) TH_LOG("tid %d owns no slot of its probe window", reg.tid[i]);
	}
	pthread_barrier_wait(&reg.out);
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < NR_THREADS; i++)
		EXPECT_EQ(0, owned_by(slots, reg.tid[i])) TH_LOG("thread exit did not release the slot");
	fake_stop(&f);
}

TEST(section_entered_before_registering_carries_over_and_unregister_keeps_counting)
{
	static struct fake_loader f;
	struct ws_hint_slot *s;
	uint64_t c0;
	pid_t me = tid_();
	int idx;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	c0 = ws_thread_slot()->cs_count;
	ws_critical_enter();
	ASSERT_EQ(0, ws_thread_register());
	ASSERT_TRUE(ws_thread_registered());
	EXPECT_EQ(0, ws_thread_register());	/* again: no-op */
	/* Look at the slot through the loader's mapping. */
	for (idx = 0; idx < (int)WS_HINT_NR_SLOTS; idx++)
		if (f.slots[0][idx].owner_tid == (uint32_t)me)
			break;
	ASSERT_GT((int)WS_HINT_NR_SLOTS, idx) TH_LOG("no shared slot owned by this thread");
	s = &f.slots[0][idx];
	EXPECT_EQ(1, s->cs_depth);
	EXPECT_EQ(c0 + 1, s->cs_count);
	ws_critical_exit();
	EXPECT_EQ(0, s->cs_depth);
	ws_thread_unregister();
	EXPECT_FALSE(ws_thread_registered());
	EXPECT_EQ(0, s->owner_tid);
	EXPECT_EQ(0, s->abi_version);
	ws_critical_enter();
	EXPECT_EQ(c0 + 2, ws_thread_slot()->cs_count);	/* private, continued */
	ws_critical_exit();
	fake_stop(&f);
}

/*
 * A thread whose probe window is taken claims a free slot elsewhere and
 * announces it in the header (which nobody acknowledges here: the word is
 * withdrawn after the bounded retries); with every slot taken it gets
 * -ENOSPC, and the header counts the refusal. Slot 0 is never claimed.
 */
TEST(full_probe_window_claims_elsewhere_and_full_array_gives_enospc)
{
	static struct fake_loader f;
	struct ws_hint_header *h;
	pid_t me = tid_(), other = 1;
	uint32_t k, idx, found = 0;
	unsigned long y0;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	/* Connect with a first registration, so the array exists. */
	ASSERT_EQ(0, ws_thread_register());
	ws_thread_unregister();
	h = (struct ws_hint_header *)f.slots[0];
	for (k = 0; k < WS_HINT_PROBE; k++)
		f.slots[0][WS_HINT_SLOT_IDX((uint32_t)me, k)].owner_tid = other + k;
	y0 = nr_yields_total;
	ASSERT_EQ(0, ws_thread_register());
	EXPECT_TRUE(ws_thread_registered());
	for (idx = 1; idx < WS_HINT_NR_SLOTS; idx++)
		if (f.slots[0][idx].owner_tid == (uint32_t)me)
			found = idx;
	EXPECT_NE(0, found) TH_LOG("no slot owned outside the window");
	/* its distance from the window's first slot */
	EXPECT_LE(WS_HINT_PROBE, (found - 1 - (uint32_t)me) & (WS_HINT_NR_THREAD_SLOTS - 1));
	EXPECT_EQ(0, h->announce) TH_LOG("the unacknowledged word was not withdrawn");
	EXPECT_EQ(0, h->zero[0]);
	EXPECT_EQ(0, h->zero[1]);
	/* the announcement's yields are raw syscalls, not sched_yield() */
	EXPECT_EQ(y0, nr_yields_total);
	ws_thread_unregister();

	/* Every slot taken (slot 0 is the header, not a slot). */
	for (idx = 1; idx < WS_HINT_NR_SLOTS; idx++)
		f.slots[0][idx].owner_tid = other + idx;
	EXPECT_EQ(-ENOSPC, ws_thread_register());
	EXPECT_FALSE(ws_thread_registered());
	EXPECT_EQ(1, h->nr_refused);
	EXPECT_EQ(0, h->zero[1]) TH_LOG("the header was claimed");
	/* The one free slot is the first after the window: found. */
	idx = WS_HINT_SLOT_IDX((uint32_t)me, WS_HINT_PROBE);
	f.slots[0][idx].owner_tid = 0;
	EXPECT_EQ(0, ws_thread_register());
	EXPECT_EQ((uint32_t)me, f.slots[0][idx].owner_tid);
	ws_thread_unregister();
	f.slots[0][idx].owner_tid = other;
	f.slots[0][WS_HINT_SLOT_IDX((uint32_t)me, 5)].owner_tid = 0;
	EXPECT_EQ(0, ws_thread_register());
	ws_thread_unregister();
	fake_stop(&f);
}

/*
 * As many threads as a process has thread slots (4096) all hold a slot at
 * once; one more is refused with -ENOSPC, and the header counts it. Scaled
 * down (WSCHED_TEST_SCALE: valgrind runs at most 500 threads), the slots
 * the fewer threads leave are taken by stand-in owners first, so the last
 * free ones are still all reached.
 */
struct all_reg {
	pthread_barrier_t in, out;
	int nr_ok, first_err;
};

static struct all_reg allr;

static void *all_reg_thread(void *arg)
{
	int rc = ws_thread_register();

	(void)arg;
	if (!rc)
		__atomic_add_fetch(&allr.nr_ok, 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&allr.first_err, rc, __ATOMIC_RELAXED);
	pthread_barrier_wait(&allr.in);		/* the main thread counts */
	pthread_barrier_wait(&allr.out);
	return NULL;
}

TEST(every_thread_slot_taken_at_once_and_one_more_refused)
{
	static struct fake_loader f;
	static pthread_t th[WS_HINT_NR_THREAD_SLOTS];
	long scaled = wt_test_scaled(100L * WS_HINT_NR_THREAD_SLOTS) / 100;
	int n = scaled < (long)WS_HINT_NR_THREAD_SLOTS ? (int)scaled : (int)WS_HINT_NR_THREAD_SLOTS;
	struct ws_hint_header *h;
	pthread_attr_t a;
	uint32_t idx;
	int i;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	/* Connect with a first registration, so the array exists. */
	ASSERT_EQ(0, ws_thread_register());
	ws_thread_unregister();
	for (idx = 1; idx <= WS_HINT_NR_THREAD_SLOTS - (uint32_t)n; idx++)
		f.slots[0][idx].owner_tid = 0x7fff0000u + idx;	/* no thread's tid */
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 << 10);
	pthread_barrier_init(&allr.in, NULL, (unsigned)n + 1);
	pthread_barrier_init(&allr.out, NULL, (unsigned)n + 1);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, pthread_create(&th[i], &a, all_reg_thread, NULL)) TH_LOG("thread %d", i);
	pthread_barrier_wait(&allr.in);
	EXPECT_EQ(n, __atomic_load_n(&allr.nr_ok, __ATOMIC_RELAXED))
		TH_LOG("first refusal %d", allr.first_err);
	EXPECT_EQ(-ENOSPC, ws_thread_register());
	h = (struct ws_hint_header *)f.slots[0];
	EXPECT_EQ(1, h->nr_refused);
	pthread_barrier_wait(&allr.out);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	fake_stop(&f);
}

/*
 * With every pthread key taken, the slot could not be released at thread
 * exit: registration refuses (-EAGAIN) instead of leaking the slot. In a
 * fork child, whose keys the test may use up.
 */
TEST(no_thread_key_left_gives_eagain)
{
	static struct fake_loader f;
	pthread_key_t k;
	int status, n = 0;
	pid_t pid;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		while (pthread_key_create(&k, NULL) == 0)
			n++;
		if (n == 0)
			_exit(3);
		_exit(ws_thread_register() == -EAGAIN && !ws_thread_registered() ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) TH_LOG("status %#x", status);
	fake_stop(&f);
}

TEST(loader_with_another_abi_version_gives_eproto)
{
	static struct fake_loader f;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION + 1));
	EXPECT_EQ(-EPROTO, ws_thread_register());
	EXPECT_FALSE(ws_thread_registered());
	fake_stop(&f);
}

/*
 * Whoever listens at the socket path chooses the descriptor: a memfd (which
 * its sender can truncate under the mapping, so that a store inside a
 * critical section dies of SIGBUS) or an array of another geometry is not
 * the loader's slot array, and is refused.
 */
TEST(descriptor_other_than_the_slot_array_gives_eproto)
{
	static const enum fake_array kinds[] = { FAKE_MEMFD, FAKE_BPF_SHORT };
	unsigned int i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		pid_t pid = fork();
		int status;

		ASSERT_LE(0, pid);
		if (!pid) {
			static struct fake_loader f;
			int rc;

			if (fake_start(&f, WS_HINT_ABI_VERSION))
				_exit(3);
			__atomic_store_n(&f.array, kinds[i], __ATOMIC_RELAXED);
			rc = ws_thread_register();
			_exit(rc == -EPROTO && !ws_thread_registered() ? 0 : 10 + (-rc & 127));
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("kind %d: status %#x (10 + -rc: registered or another error)",
			       kinds[i], status);
	}
}

TEST(silent_loader_times_out_instead_of_hanging)
{
	static struct fake_loader f;
	uint64_t t0;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	/* Read by the server at its next accept: ours is the first. */
	__atomic_store_n(&f.silent, true, __ATOMIC_RELAXED);
	t0 = wt_test_now_ns();
	EXPECT_EQ(-ETIMEDOUT, ws_thread_register());
	EXPECT_GT(5000000000ull, wt_test_now_ns() - t0);
	EXPECT_FALSE(ws_thread_registered());
	fake_stop(&f);
}

/*
 * A loader that takes the connection at once but answers after 1.5 s (a
 * burst queued before us): without an acknowledgement the library gives
 * up after 1 s, as it must for a stopped loader; with one it waits.
 */
TEST(acknowledged_registration_waits_past_the_first_second)
{
	static struct fake_loader f;
	uint64_t t0, ns;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	__atomic_store_n(&f.delay_ms, 1500, __ATOMIC_RELAXED);
	t0 = wt_test_now_ns();
	EXPECT_EQ(-ETIMEDOUT, ws_thread_register()) TH_LOG("not acknowledged");
	ns = wt_test_now_ns() - t0;
	EXPECT_GT(1500000000ull, ns);
	__atomic_store_n(&f.ack, true, __ATOMIC_RELAXED);
	/* The server may still be sleeping on the first connection. */
	usleep(600000);
	t0 = wt_test_now_ns();
	EXPECT_EQ(0, ws_thread_register()) TH_LOG("acknowledged");
	ns = wt_test_now_ns() - t0;
	TH_LOG("answered after %.2f s", ns / 1e9);
	EXPECT_LT(1400000000ull, ns);
	EXPECT_TRUE(ws_thread_registered());
	ws_thread_unregister();
	fake_stop(&f);
}

#define SLOW_THREADS	8

struct slow_reg {
	pthread_barrier_t go;
	int rc[SLOW_THREADS];
};

static void *slow_reg_thread(void *arg)
{
	struct slow_reg *r = arg;
	static int next;
	int me = __atomic_fetch_add(&next, 1, __ATOMIC_RELAXED);

	pthread_barrier_wait(&r->go);
	r->rc[me] = ws_thread_register();
	return NULL;
}

/*
 * A burst of threads registering at once (a pool's workers starting) with
 * a loader that never answers: they share one attempt, so the burst ends
 * after one timeout (1 s), not one per thread in turn.
 */
TEST(threads_registering_at_once_share_one_slow_attempt)
{
	static struct fake_loader f;
	static struct slow_reg r;
	pthread_t th[SLOW_THREADS];
	uint64_t t0, ns;
	int i;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	__atomic_store_n(&f.silent, true, __ATOMIC_RELAXED);
	pthread_barrier_init(&r.go, NULL, SLOW_THREADS + 1);
	for (i = 0; i < SLOW_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, slow_reg_thread, &r));
	t0 = wt_test_now_ns();
	pthread_barrier_wait(&r.go);
	for (i = 0; i < SLOW_THREADS; i++)
		pthread_join(th[i], NULL);
	ns = wt_test_now_ns() - t0;
	TH_LOG("%d threads registering with a silent loader: %.2f s", SLOW_THREADS, ns / 1e9);
	for (i = 0; i < SLOW_THREADS; i++)
		EXPECT_EQ(-ETIMEDOUT, r.rc[i]) TH_LOG("thread %d", i);
	EXPECT_GT(2500000000ull, ns);
	fake_stop(&f);
}

TEST(fork_child_starts_unregistered_and_registers_itself)
{
	static struct fake_loader f;
	pid_t kid;
	int st;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	ASSERT_EQ(0, ws_thread_register());
	ws_critical_enter();
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		if (ws_thread_registered())
			_exit(1);
		ws_critical_enter();		/* private slot: must not crash */
		ws_critical_exit();
		_exit(ws_thread_register() == 0 && ws_thread_registered() ? 0 : 2);
	}
	ASSERT_EQ(kid, waitpid(kid, &st, 0));
	EXPECT_TRUE(WIFEXITED(st));
	EXPECT_EQ(0, WEXITSTATUS(st));
	EXPECT_EQ(2, __atomic_load_n(&f.nr, __ATOMIC_ACQUIRE)) TH_LOG("the child did not connect itself");
	EXPECT_EQ(1, ws_thread_slot()->cs_depth);	/* the parent's is untouched */
	ws_critical_exit();
	ws_thread_unregister();
	fake_stop(&f);
}

/*
 * The library's sched_yield() calls land here (this definition interposes
 * on libc's for the whole executable), so a test can count them; they
 * still yield.
 */
static __thread unsigned long nr_yields;

int sched_yield(void)
{
	nr_yields++;
	__atomic_add_fetch(&nr_yields_total, 1, __ATOMIC_RELAXED);
	return (int)syscall(SYS_sched_yield);
}

/* The scheduler's side of a grace, as its tick would do it. */
static void grant_grace(const struct ws_hint_slot *s)
{
	__atomic_store_n(&((struct ws_hint_slot *)s)->grace_pending, 1, __ATOMIC_RELAXED);
}

TEST(pending_grace_is_handed_back_by_the_outermost_exit_only)
{
	static struct fake_loader f;
	const struct ws_hint_slot *s;
	unsigned long y0;
	int pass;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	/* Private slot first (nobody sets it but us), then the shared one. */
	for (pass = 0; pass < 2; pass++) {
		if (pass)
			ASSERT_EQ(0, ws_thread_register());
		s = ws_thread_slot();
		ASSERT_EQ(0, s->grace_pending);
		y0 = nr_yields;
		ws_critical_enter();
		ws_critical_enter();
		grant_grace(s);
		ws_critical_exit();		/* nested: still inside */
		EXPECT_EQ(y0, nr_yields) TH_LOG("pass %d: a nested exit yielded", pass);
		EXPECT_EQ(1, s->grace_pending);
		ws_critical_exit();		/* outermost: give the CPU back */
		EXPECT_EQ(y0 + 1, nr_yields) TH_LOG("pass %d: the outermost exit did not yield", pass);
		EXPECT_EQ(0, s->grace_pending);
		EXPECT_EQ(0, s->cs_depth);
		ws_critical_enter();
		ws_critical_exit();		/* no grace: no yield */
		EXPECT_EQ(y0 + 1, nr_yields);
	}
	/* A grace left behind by a slot's previous owner is not the next
	 * owner's: registering clears it. */
	grant_grace(s);
	ws_thread_unregister();
	ASSERT_EQ(0, ws_thread_register());
	EXPECT_EQ(s, ws_thread_slot());
	EXPECT_EQ(0, s->grace_pending);
	ws_thread_unregister();
	fake_stop(&f);
}

TEST(lock_release_leaving_the_outermost_section_hands_a_grace_back)
{
	ws_spinlock_t a = WS_SPINLOCK_INIT, b = WS_SPINLOCK_INIT;
	ws_ticketlock_t t = WS_TICKETLOCK_INIT;
	ws_mutex_t m = WS_MUTEX_INIT;
	const struct ws_hint_slot *s = ws_thread_slot();
	unsigned long y0 = nr_yields;

	ws_spinlock_lock(&a);
	ws_spinlock_lock(&b);
	grant_grace(s);
	ws_spinlock_unlock(&b);
	EXPECT_EQ(y0, nr_yields);
	ws_spinlock_unlock(&a);
	EXPECT_EQ(y0 + 1, nr_yields);
	ws_ticketlock_lock(&t);
	grant_grace(s);
	ws_ticketlock_unlock(&t);
	EXPECT_EQ(y0 + 2, nr_yields);
	ws_mutex_lock(&m);
	grant_grace(s);
	ws_mutex_unlock(&m);
	EXPECT_EQ(y0 + 3, nr_yields);
	EXPECT_EQ(0, s->grace_pending);
}

static double pair_ns(long n)
{
	uint64_t t0 = wt_test_now_ns();
	long i;

	for (i = 0; i < n; i++) {
		ws_critical_enter();
		__asm__ __volatile__("" ::: "memory");
		ws_critical_exit();
	}
	return (double)(wt_test_now_ns() - t0) / n;
}

TEST(cost_of_critical_enter_exit_registered_and_private)
{
	static struct fake_loader f;
	long n = wt_test_scaled(20000000);
	double reg_ns, priv_ns;

	ASSERT_EQ(0, fake_start(&f, WS_HINT_ABI_VERSION));
	priv_ns = pair_ns(n);
	ASSERT_EQ(0, ws_thread_register());
	reg_ns = pair_ns(n);
	EXPECT_EQ(0, ws_thread_slot()->cs_depth);
	EXPECT_LE((uint64_t)n, ws_thread_slot()->cs_count);
	ws_thread_unregister();
	TH_LOG("ws_critical_enter+exit: %.2f ns per pair registered, %.2f ns private (%ld pairs)",
	       reg_ns, priv_ns, n);
	fake_stop(&f);
}

TEST_HARNESS_MAIN
