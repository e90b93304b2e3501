// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * ws_spinlock, ws_ticketlock, ws_mutex and critical-section marks
 * (wsched/lock.h): mutual exclusion under contention, FIFO order of the
 * ticket lock, the ticket lock's record of who holds which ticket and its
 * stall handling (yields towards the stalled thread, parking), the mutex
 * sleeping and being woken, the marks each lock leaves on its holder (and
 * on a queued ticket waiter), and the cost of a
 * ws_critical_enter/exit pair without a scheduler (private slot).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "test_util.h"
#include "wsched/lock.h"
#include "wsched/thread.h"

#define NR_THREADS 4

enum kind { SPIN, TICKET, MUTEX };

struct shared {
	enum kind kind;
	ws_spinlock_t spin;
	ws_ticketlock_t ticket;
	ws_mutex_t mutex;
	long iters;
	long counter;		/* plain: protected by the lock */
	int inside;		/* plain: must be 0 on entry */
	int violations;		/* atomic */
	int bad_marks;		/* atomic */
};

static void lock_k(struct shared *s)
{
	switch (s->kind) {
	case SPIN:	ws_spinlock_lock(&s->spin); break;
	case TICKET:	ws_ticketlock_lock(&s->ticket); break;
	case MUTEX:	ws_mutex_lock(&s->mutex); break;
	}
}

static void unlock_k(struct shared *s)
{
	switch (s->kind) {
	case SPIN:	ws_spinlock_unlock(&s->spin); break;
	case TICKET:	ws_ticketlock_unlock(&s->ticket); break;
	case MUTEX:	ws_mutex_unlock(&s->mutex); break;
	}
}

static void *contend(void *arg)
{
	struct shared *s = arg;
	long i;

	for (i = 0; i < s->iters; i++) {
		lock_k(s);
		if (ws_critical_depth() != 1)
			__atomic_fetch_add(&s->bad_marks, 1, __ATOMIC_RELAXED);
		if (s->inside++)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		s->counter++;
		if (i % 64 == 0)
			sched_yield();	/* get preempted while holding */
		s->inside--;
		unlock_k(s);
		if (ws_critical_depth() != 0)
			__atomic_fetch_add(&s->bad_marks, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void run_contention(struct __test_metadata *_metadata, enum kind k)
{
	static struct shared s;
	pthread_t th[NR_THREADS];
	int i;

	memset(&s, 0, sizeof(s));
	s.kind = k;
	/* A ticket lock hands over in FIFO order even to a preempted waiter:
	 * with more threads than CPUs a handover can cost a time slice. */
	s.iters = wt_test_scaled(k == TICKET ? 5000 : 20000);
	for (i = 0; i < NR_THREADS; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, contend, &s));
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, s.violations);
	EXPECT_EQ(0, s.bad_marks);
	EXPECT_EQ(s.iters * NR_THREADS, s.counter);
}

TEST(spinlock_mutual_exclusion_under_contention) { run_contention(_metadata, SPIN); }
TEST(ticketlock_mutual_exclusion_under_contention) { run_contention(_metadata, TICKET); }
TEST(mutex_mutual_exclusion_under_contention) { run_contention(_metadata, MUTEX); }

TEST(trylock_fails_while_held_and_marks_only_on_success)
{
	ws_spinlock_t sl = WS_SPINLOCK_INIT;
	ws_ticketlock_t tl = WS_TICKETLOCK_INIT;
	ws_mutex_t m = WS_MUTEX_INIT;

	ASSERT_TRUE(ws_spinlock_trylock(&sl));
	ASSERT_FALSE(ws_spinlock_trylock(&sl));
	ASSERT_TRUE(ws_ticketlock_trylock(&tl));
	ASSERT_FALSE(ws_ticketlock_trylock(&tl));
	ASSERT_TRUE(ws_mutex_trylock(&m));
	ASSERT_FALSE(ws_mutex_trylock(&m));
	EXPECT_EQ(3, ws_critical_depth());
	ws_mutex_unlock(&m);
	ws_ticketlock_unlock(&tl);
	ws_spinlock_unlock(&sl);
	EXPECT_EQ(0, ws_critical_depth());
	EXPECT_TRUE(ws_ticketlock_trylock(&tl));
	ws_ticketlock_unlock(&tl);
}

TEST(critical_sections_nest_and_count)
{
	uint64_t c0 = ws_thread_slot()->cs_count;

	ws_critical_enter();
	ws_critical_enter();
	EXPECT_EQ(2, ws_critical_depth());
	ws_critical_exit();
	EXPECT_EQ(1, ws_critical_depth());
	ws_critical_exit();
	EXPECT_EQ(0, ws_critical_depth());
	ws_critical_exit();			/* unbalanced: stays at 0 */
	EXPECT_EQ(0, ws_critical_depth());
	EXPECT_EQ(c0 + 2, ws_thread_slot()->cs_count);
}

/* --------------------------------------------------------- ticket FIFO */

#define FIFO_WAITERS 6

struct fifo {
	ws_ticketlock_t l;
	int order[FIFO_WAITERS];
	int pos;
	const struct ws_hint_slot *slot[FIFO_WAITERS];
	pid_t tid[FIFO_WAITERS];
};

struct fifo_arg {
	struct fifo *f;
	int id;
};

static void *fifo_waiter(void *p)
{
	struct fifo_arg *a = p;

	__atomic_store_n(&a->f->tid[a->id], (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	__atomic_store_n(&a->f->slot[a->id], ws_thread_slot(), __ATOMIC_RELEASE);
	ws_ticketlock_lock(&a->f->l);
	a->f->order[a->f->pos++] = a->id;
	ws_ticketlock_unlock(&a->f->l);
	return NULL;
}

static uint32_t slot_depth(struct fifo *f, int i)
{
	return __atomic_load_n(&__atomic_load_n(&f->slot[i], __ATOMIC_ACQUIRE)->cs_depth,
			       __ATOMIC_RELAXED);
}

TEST(ticketlock_serves_in_arrival_order_records_and_marks_its_waiters)
{
	static struct fifo f;
	struct fifo_arg args[FIFO_WAITERS];
	pthread_t th[FIFO_WAITERS];
	uint64_t t0;
	int i;

	memset(&f, 0, sizeof(f));
	ws_ticketlock_lock(&f.l);
	/* Ticket 0 is ours. */
	EXPECT_EQ((uint64_t)syscall(SYS_gettid), f.l.who[0]);
	for (i = 0; i < FIFO_WAITERS; i++) {
		uint32_t t = (uint32_t)i + 1;

		t0 = wt_test_now_ns();
		args[i] = (struct fifo_arg){ &f, i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, fifo_waiter, &args[i]));
		/* Start the next one only once this one holds its ticket
		 * and has said so in who[]. */
		while (__atomic_load_n(&f.l.next, __ATOMIC_ACQUIRE) != t + 1 ||
		       __atomic_load_n(&f.l.who[t % WS_TICKET_WHO], __ATOMIC_RELAXED) >> 32 != t) {
			ASSERT_LT(wt_test_now_ns() - t0, 10000000000ull) TH_LOG("waiter %d never queued", i);
			usleep(100);
		}
		EXPECT_EQ((uint64_t)t << 32 | (uint32_t)__atomic_load_n(&f.tid[i], __ATOMIC_RELAXED),
			  __atomic_load_n(&f.l.who[t % WS_TICKET_WHO], __ATOMIC_RELAXED));
		/* A queued waiter is marked as on the critical path. */
		EXPECT_EQ(1, slot_depth(&f, i));
	}
	ws_ticketlock_unlock(&f.l);
	for (i = 0; i < FIFO_WAITERS; i++)
		pthread_join(th[i], NULL);
	ASSERT_EQ(FIFO_WAITERS, f.pos);
	for (i = 0; i < FIFO_WAITERS; i++)
		EXPECT_EQ(i, f.order[i]);
	/* The waiters saw owner stuck (we held the lock for milliseconds), so
	 * one yielded towards the owner of a ticket (helped = that ticket + 1;
	 * later stalls may have overwritten ours), and whoever parked has
	 * unparked. */
	EXPECT_GE(f.l.helped, 1);
	EXPECT_LE(f.l.helped, FIFO_WAITERS + 1);
	EXPECT_EQ(0, f.l.parked);
	EXPECT_EQ(FIFO_WAITERS + 1, f.l.owner);
}

TEST(ticketlock_trylock_records_its_ticket)
{
	ws_ticketlock_t l = WS_TICKETLOCK_INIT;
	uint64_t me = (uint64_t)syscall(SYS_gettid);

	ASSERT_TRUE(ws_ticketlock_trylock(&l));
	EXPECT_EQ(me, l.who[0]);
	ws_ticketlock_unlock(&l);
	ws_ticketlock_lock(&l);
	EXPECT_EQ(1ull << 32 | me, l.who[1]);
	ws_ticketlock_unlock(&l);
}

/*
 * More threads than CPUs, holders that sleep inside: the queue stalls
 * (owner stuck far longer than the stall threshold) and its waiters are
 * descheduled while holding tickets, so the stall path runs: waiters yield
 * towards the stalled thread, park, arrivals unpark them. Exclusion and
 * the count must hold, every ticket must be served, and nothing must stay
 * parked.
 */
struct stall {
	ws_ticketlock_t l;
	pthread_barrier_t go;	/* all threads start together */
	long iters;
	long counter;		/* plain: protected by the lock */
	int inside;		/* plain */
	int violations;		/* atomic */
};

static void *stall_contend(void *arg)
{
	struct stall *s = arg;
	long i;

	pthread_barrier_wait(&s->go);
	for (i = 0; i < s->iters; i++) {
		ws_ticketlock_lock(&s->l);
		if (s->inside++)
			__atomic_fetch_add(&s->violations, 1, __ATOMIC_RELAXED);
		s->counter++;
		if (i % 16 == 0)
			usleep(200);	/* far beyond the stall threshold */
		s->inside--;
		ws_ticketlock_unlock(&s->l);
	}
	return NULL;
}

TEST(ticketlock_exclusive_when_oversubscribed_and_stalling)
{
	static struct stall s;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int n = (int)(ncpu < 2 ? 8 : 4 * ncpu), i;
	pthread_t th[64];

	if (n > 64)
		n = 64;
	memset(&s, 0, sizeof(s));
	/* At least 10 sleeps per thread, and a common start: in the TSan
	 * build (4% of 1000 iterations) on a loaded host, each thread was
	 * done before the next one was created, so nothing ever waited. */
	s.iters = wt_test_scaled(1000);
	if (s.iters < 160)
		s.iters = 160;
	ASSERT_EQ(0, pthread_barrier_init(&s.go, NULL, n));
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, stall_contend, &s));
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&s.go);
	EXPECT_EQ(0, s.violations);
	EXPECT_EQ(s.iters * n, s.counter);
	EXPECT_EQ((uint32_t)(s.iters * n), s.l.owner);
	EXPECT_EQ(s.l.next, s.l.owner);
	EXPECT_NE(0, s.l.helped) TH_LOG("no waiter ever yielded towards a stalled owner");
	EXPECT_EQ(0, s.l.parked);
}

/* --------------------------------------------------------- mutex sleeps */

struct park {
	ws_mutex_t m;
	pid_t tid;
	int acquired;
};

static void *park_waiter(void *p)
{
	struct park *k = p;

	__atomic_store_n(&k->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	ws_mutex_lock(&k->m);
	__atomic_store_n(&k->acquired, 1, __ATOMIC_RELEASE);
	ws_mutex_unlock(&k->m);
	return NULL;
}

static char thread_state(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (!p || !(p = strrchr(buf, ')')))
		return '?';
	return p[2];
}

TEST(mutex_waiter_sleeps_in_the_kernel_and_is_woken)
{
	static struct park k;
	pthread_t th;
	uint64_t t0;
	char st = '?';

	memset(&k, 0, sizeof(k));
	ws_mutex_lock(&k.m);
	ASSERT_EQ(0, pthread_create(&th, NULL, park_waiter, &k));
	/* The waiter spins ~20 us, then marks the mutex contended and sleeps. */
	t0 = wt_test_now_ns();
	while (__atomic_load_n(&k.m.state, __ATOMIC_ACQUIRE) != 2 ||
	       (st = thread_state(__atomic_load_n(&k.tid, __ATOMIC_ACQUIRE))) != 'S') {
		ASSERT_LT(wt_test_now_ns() - t0, 10000000000ull)
			TH_LOG("waiter not asleep after 10 s: state %u, thread %c", k.m.state, st);
		usleep(1000);
	}
	EXPECT_EQ(0, __atomic_load_n(&k.acquired, __ATOMIC_ACQUIRE));
	ws_mutex_unlock(&k.m);
	pthread_join(th, NULL);
	EXPECT_EQ(1, k.acquired);
	EXPECT_EQ(0, k.m.state);
}

/* --------------------------------------------------------- registration */

TEST(register_without_scheduler_fails_cleanly_and_changes_nothing)
{
	const struct ws_hint_slot *before = ws_thread_slot();
	int r;

	setenv("WSCHED_HINT_SOCKET", "/nonexistent/wsched.sock", 1);
	r = ws_thread_register();
	unsetenv("WSCHED_HINT_SOCKET");
	EXPECT_EQ(-ENOENT, r);
	EXPECT_FALSE(ws_thread_registered());
	EXPECT_EQ(before, ws_thread_slot());
	ws_thread_unregister();		/* no-op */
	ws_critical_enter();
	EXPECT_EQ(1, ws_critical_depth());
	ws_critical_exit();
}

TEST(cost_of_critical_enter_exit_unregistered)
{
	long n = wt_test_scaled(20000000), i;
	uint64_t t0, t1;

	t0 = wt_test_now_ns();
	for (i = 0; i < n; i++) {
		ws_critical_enter();
		__asm__ __volatile__("" ::: "memory");
		ws_critical_exit();
	}
	t1 = wt_test_now_ns();
	EXPECT_EQ(0, ws_critical_depth());
	TH_LOG("ws_critical_enter+exit, private slot: %.2f ns per pair (%ld pairs)",
	       (double)(t1 - t0) / n, n);
}

TEST_HARNESS_MAIN
