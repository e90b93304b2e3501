// SPDX-License-Identifier: GPL-2.0
/*
 * scx_wsched_arith_test: the scheduler's policy arithmetic, run natively.
 * The fragments bpf/scx_wsched_{compat,tunables,cpu,cgroup,vtime,steal,
 * slice,preempt,quota,yield,worker}.bpf.h are compiled as they are, over
 * tests/native/bpf_shim/ (a fake scx/common.bpf.h: kernel structs with the
 * fields read, kfuncs over a fake machine), with the tunables writable
 * (WS_TUNABLE) and the hint side replaced by a few answers
 * (fake_in_section, fake_graces, fake_reg_tgid's thieves). So the bounds of
 * vtime, where a waking or moved task is placed, vtime_now's advance, the
 * balance gap, the slice cuts, the tick period and the rate bound of
 * wakeup preemption, the cgroups' shares (a tree of fake cgroups) and what
 * worker preference reads of another CPU's run at any switch point are
 * checked at their edges (wraparound included)
 * without booting a guest; the guest suites check what they do to tasks.
 */
#define WS_TUNABLE volatile
#include <scx/common.bpf.h>	/* the shim */
#include "scx_wsched.h"

/* The hint side, as the fragments below see it: every task is inside a
 * critical section or none is (fake_in_section), and a run-cut timer's
 * grace is granted while fake_graces lasts. */
#define __SCX_WSCHED_HINT_BPF_H
static bool fake_in_section;
static int fake_graces;
static u64 grace_ns = WSCHED_GRACE_US_DFL * 1000ULL;
static __always_inline bool hints_live(void)
{
	return fake_in_section;
}
static __always_inline bool hint_in_section(struct task_struct *p)
{
	(void)p;
	return fake_in_section;
}
static __always_inline bool hint_cut_grace(struct task_struct *p)
{
	(void)p;
	if (!fake_in_section || fake_graces <= 0)
		return false;
	fake_graces--;
	return true;
}

#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_tunables.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_cgroup.bpf.h"
#include "scx_wsched_vtime.bpf.h"
#include "scx_wsched_steal.bpf.h"
#include "scx_wsched_slice.bpf.h"
#include "scx_wsched_preempt.bpf.h"
#include "scx_wsched_quota.bpf.h"

/*
 * For the thieves and workers: one registered process, whose slot array
 * (fake_slots) names a thread as an idle thief by its pid in the initial
 * PID namespace, as a process's own array can name any pid; the real
 * lookup there takes the pid as it is (ns_tid_of_pid()). A thread is a
 * worker if no slot names it.
 */
#include <wsched/hint.h>
#define FAKE_SLOTS 4
static u32 fake_reg_tgid;		/* the registered process, 0: none */
static u32 fake_thief_pid[FAKE_SLOTS];
static __always_inline bool hints_live_for(struct task_struct *p)
{
	return fake_reg_tgid && (u32)p->tgid == fake_reg_tgid;
}
static __always_inline void *hint_proc_slots(struct task_struct *p)
{
	return hints_live_for(p) ? fake_thief_pid : NULL;
}
static __always_inline bool hint_pid_is_idle_thief(void *slots, struct task_struct *p, u32 pid)
{
	unsigned int i;

	(void)p;
	for (i = 0; pid && i < FAKE_SLOTS; i++)
		if (((u32 *)slots)[i] == pid)
			return true;
	return false;
}
static __always_inline void *hint_idle_thief_slots(struct task_struct *p)
{
	void *slots = hint_proc_slots(p);

	return slots && hint_pid_is_idle_thief(slots, p, p->pid) ? slots : NULL;
}
static __always_inline bool hint_task_is_idle_thief(struct task_struct *p)
{
	return hint_idle_thief_slots(p) != NULL;
}
static __always_inline bool hint_task_is_worker_in(void *slots, struct task_struct *p)
{
	return !hint_pid_is_idle_thief(slots, p, p->pid);
}
static __always_inline bool hint_yield_to_all(struct task_struct *p)
{
	(void)p;
	return false;
}

/*
 * Another CPU's context switch at any point of a fragment's reads: before
 * the switch_at'th access of the yield and worker fragments to CPU
 * switch_cpu's context (a cpu_ctx() or a cpu_run_id()), the run there
 * ends and switch_to's starts, as ops.stopping and ops.running write
 * them. 0: no switch.
 */
static s32 switch_cpu;
static unsigned int switch_at, switch_seen;
static struct task_struct *switch_to;
static void switch_maybe(s32 cpu)
{
	if (!switch_at || cpu != switch_cpu || ++switch_seen != switch_at)
		return;
	cpu_run_end(cpu);
	cpu_run_start(cpu, switch_to);
	(cpu_ctx)(cpu)->cur_start = shim_now;
}
static struct ws_cpu *switching_cpu_ctx(s32 cpu)
{
	switch_maybe(cpu);
	return (cpu_ctx)(cpu);
}
static u64 switching_cpu_run_id(s32 cpu)
{
	switch_maybe(cpu);
	return (cpu_run_id)(cpu);
}
#define cpu_ctx(cpu) switching_cpu_ctx(cpu)
#define cpu_run_id(cpu) switching_cpu_run_id(cpu)
#include "scx_wsched_yield.bpf.h"
#include "scx_wsched_worker.bpf.h"
#undef cpu_ctx
#undef cpu_run_id

#include "kselftest_harness.h"

/* ------------------------------------------------------------ the fake machine */
u64 shim_now, shim_jiffies;
u32 shim_prandom;
struct task_struct *shim_dsq_head[SHIM_CPUS];
s32 shim_dsq_len[SHIM_CPUS];
bool shim_dsq_pinned[SHIM_CPUS];
s32 shim_idle_cpu = -1;
s32 shim_this_cpu;
struct task_struct *shim_current;
unsigned int shim_nr_kicks;
s32 shim_last_kick_cpu = -1;
u64 shim_parked_dsq;
u64 shim_last_kick_flags;
struct task_struct *shim_task_by_pid;
/* Defining it makes the preempt count "exist" (bpf_ksym_exists()). */
int __preempt_count;

static struct rq *shim_rq;	/* what scx_bpf_locked_rq() returns */
struct rq *scx_bpf_locked_rq___compat(void)
{
	return shim_rq;
}

struct shim_map {
	const void *map;
	void *data;
};
static struct shim_map shim_maps[16];

void *shim_lookup(const void *map, size_t value_size, u32 nr, u32 key)
{
	unsigned int i;

	if (key >= nr)
		return NULL;
	for (i = 0; i < 16 && shim_maps[i].map; i++)
		if (shim_maps[i].map == map)
			break;
	if (i == 16)
		abort();
	if (!shim_maps[i].map) {
		shim_maps[i].map = map;
		shim_maps[i].data = calloc(nr, value_size);
		if (!shim_maps[i].data)
			abort();
	}
	return (char *)shim_maps[i].data + (size_t)key * value_size;
}

#define SLICE	(20 * 1000 * 1000ULL)	/* the default base slice */
#define US	1000ULL
#define MS	(1000 * 1000ULL)

/* Every test starts from the loader's defaults on an 8-CPU machine. */
static void machine_reset(void)
{
	slice_ns = WSCHED_SLICE_US_DFL * US;
	min_slice_ns = WSCHED_SLICE_US_DFL * US / 4;
	lat_slice_ns = WSCHED_SLICE_LAT_US_DFL * US;
	wake_preempt_ns = WSCHED_WAKE_PREEMPT_US_DFL * US;
	slice_end_timer = true;
	loader_tgid = 0;
	nr_cpus = 8;
	nr_llcs = 1;
	vtime_now = 1000 * SLICE;
	vtime_now_at = 0;
	lat_any_at = 0;
	tick_gap_ns = tick_base_ns = tick_base_j = 0;
	memset(ws_cpus, 0, sizeof(ws_cpus));
	memset(queued_mask, 0, sizeof(queued_mask));
	memset(shim_dsq_head, 0, sizeof(shim_dsq_head));
	memset(shim_dsq_len, 0, sizeof(shim_dsq_len));
	memset(shim_dsq_pinned, 0, sizeof(shim_dsq_pinned));
	shim_now = 5000 * SLICE;
	shim_jiffies = 0;
	shim_prandom = 0;
	shim_idle_cpu = -1;
	shim_this_cpu = 0;
	shim_current = NULL;
	shim_nr_kicks = 0;
	shim_last_kick_cpu = -1;
	__preempt_count = 0;
	shim_rq = NULL;
	fake_in_section = false;
	fake_graces = 0;
	shim_task_by_pid = NULL;
	fake_reg_tgid = 0;
	memset(fake_thief_pid, 0, sizeof(fake_thief_pid));
}

static struct task_struct task(s32 pid, u64 vtime)
{
	struct task_struct p = { .pid = pid, .tgid = pid, .nr_cpus_allowed = 8 };

	p.scx.dsq_vtime = vtime;
	p.scx.weight = 100;
	return p;
}

/* A run of @p that ops.running started on @cpu, as the fragments see it. */
static void run_on(s32 cpu, struct task_struct *p, struct rq *rq)
{
	cpu_run_start(cpu, p);
	cpu_ctx(cpu)->cur_sum = p->se.sum_exec_runtime;
	p->thread_info.cpu = cpu;
	if (rq) {
		rq->cpu = cpu;
		rq->curr = p;
	}
}

/* @cpu with a deque head and a run in progress (@rq's) at these vtimes. */
static void cpu_with(s32 cpu, struct task_struct *head, u64 head_vt, struct task_struct *hog,
		     u64 hog_vt, struct rq *rq)
{
	*head = task(20, head_vt);
	*hog = task(30, hog_vt);
	shim_dsq_head[cpu] = head;
	run_on(cpu, hog, rq);
}

/* ------------------------------------------------------------ vtime bounds */

/* No vtime counts as more than LAG_SLICES behind or LEAD_SLICES ahead of
 * vtime_now; within those it is kept as it is. */
TEST(vtime_is_bounded_to_lag_and_lead)
{
	machine_reset();
	EXPECT_EQ(vtime_now - LAG_SLICES * SLICE, vtime_floor(0));
	EXPECT_EQ(vtime_now - LAG_SLICES * SLICE, vtime_clamp(vtime_now - LAG_SLICES * SLICE - 1));
	EXPECT_EQ(vtime_now - LAG_SLICES * SLICE, vtime_clamp(vtime_now - LAG_SLICES * SLICE));
	EXPECT_EQ(vtime_now - 3, vtime_clamp(vtime_now - 3));
	EXPECT_EQ(vtime_now + 3, vtime_clamp(vtime_now + 3));
	EXPECT_EQ(vtime_now + LEAD_SLICES * SLICE, vtime_clamp(vtime_now + LEAD_SLICES * SLICE));
	EXPECT_EQ(vtime_now + LEAD_SLICES * SLICE, vtime_clamp(vtime_now + LEAD_SLICES * SLICE + 1));
	EXPECT_EQ(vtime_now + LEAD_SLICES * SLICE, vtime_clamp(vtime_now + 1000 * SLICE));
	/* The floor leaves a task ahead alone. */
	EXPECT_EQ(vtime_now + 1000 * SLICE, vtime_floor(vtime_now + 1000 * SLICE));
}

/* The bounds hold across the wrap of the 64-bit vtime, both ways. */
TEST(vtime_bounds_hold_across_wraparound)
{
	machine_reset();
	vtime_now = 5;		/* just past the wrap: the floor is below 0 */
	EXPECT_EQ(5 - LAG_SLICES * SLICE, vtime_clamp(UINT64_MAX - LAG_SLICES * SLICE * 2));
	EXPECT_EQ(UINT64_MAX, vtime_clamp(UINT64_MAX));	/* 6 behind: kept */
	vtime_now = UINT64_MAX - 5;	/* the ceiling is past the wrap */
	EXPECT_EQ(UINT64_MAX - 5 + LEAD_SLICES * SLICE, vtime_clamp(LEAD_SLICES * SLICE * 2));
	EXPECT_EQ(3, vtime_clamp(3));			/* 9 ahead: kept */
}

/* The slice length scales the bounds. */
TEST(vtime_bounds_follow_the_base_slice)
{
	machine_reset();
	slice_ns = 100 * US;
	EXPECT_EQ(vtime_now - LAG_SLICES * 100 * US, vtime_clamp(0));
	EXPECT_EQ(vtime_now + LEAD_SLICES * 100 * US, vtime_clamp(UINT64_MAX / 4 + vtime_now));
}

/* ------------------------------------------------------------ vtime_now */

/* vtime_now never moves back, and a task behind it reads no clock. */
TEST(vtime_now_never_moves_back)
{
	machine_reset();
	vtime_now_at = 7;
	vtime_now_advance(vtime_now - 1, SLICE);
	EXPECT_EQ(1000 * SLICE, vtime_now);
	vtime_now_advance(vtime_now, SLICE);
	EXPECT_EQ(1000 * SLICE, vtime_now);
	EXPECT_EQ(7, vtime_now_at);
}

/* It moves to the run's start when the run and the wall time allow. */
TEST(vtime_now_follows_a_run_start)
{
	u64 start;

	machine_reset();
	start = vtime_now;
	vtime_now_at = shim_now - SLICE;
	vtime_now_advance(start + SLICE / 2, SLICE);
	EXPECT_EQ(start + SLICE / 2, vtime_now);
	EXPECT_EQ(shim_now, vtime_now_at);
}

/* It moves by at most the run's CPU time... */
TEST(vtime_now_moves_by_at_most_the_run)
{
	u64 start;

	machine_reset();
	start = vtime_now;
	vtime_now_at = shim_now - 100 * SLICE;
	vtime_now_advance(start + 40 * SLICE, 3 * MS);
	EXPECT_EQ(start + 3 * MS, vtime_now);
}

/* ... and by at most a slice plus the wall time since its last move. */
TEST(vtime_now_moves_by_at_most_a_slice_and_the_wall_time)
{
	u64 start;

	machine_reset();
	start = vtime_now;
	vtime_now_at = shim_now;
	vtime_now_advance(start + 40 * SLICE, 100 * SLICE);
	EXPECT_EQ(start + SLICE, vtime_now);
	shim_now += 2 * MS;
	vtime_now_advance(start + 40 * SLICE, 100 * SLICE);
	EXPECT_EQ(start + 2 * SLICE + 2 * MS, vtime_now);
	/* A clock read behind the last advance adds no wall time. */
	vtime_now_at = shim_now + 10 * SLICE;
	vtime_now_advance(start + 40 * SLICE, 100 * SLICE);
	EXPECT_EQ(start + 3 * SLICE + 2 * MS, vtime_now);
}

/* Across the wrap it still moves forward, never to a "smaller" value. */
TEST(vtime_now_advances_across_wraparound)
{
	machine_reset();
	vtime_now = UINT64_MAX - 10;
	vtime_now_at = shim_now - SLICE;
	vtime_now_advance(5, SLICE);
	EXPECT_EQ(5, vtime_now);
	vtime_now_advance(UINT64_MAX - 20, SLICE);	/* behind: ignored */
	EXPECT_EQ(5, vtime_now);
}

/* ------------------------------------------------------------ charges */

/* The run so far counts 100/weight times over, and only for the run that
 * ops.running recorded on the task's CPU. */
TEST(current_vtime_charges_the_recorded_run_by_weight)
{
	struct task_struct p;

	machine_reset();
	p = task(10, vtime_now);
	p.se.sum_exec_runtime = 50 * MS;
	run_on(3, &p, NULL);
	p.se.sum_exec_runtime += 4 * MS;
	EXPECT_EQ(vtime_now + 4 * MS, current_vtime(&p));
	p.scx.weight = 200;
	EXPECT_EQ(vtime_now + 2 * MS, current_vtime(&p));
	p.scx.weight = 50;
	EXPECT_EQ(vtime_now + 8 * MS, current_vtime(&p));
	cpu_ctx(3)->cur_id = 11;		/* another run: nothing added */
	EXPECT_EQ(vtime_now, current_vtime(&p));
	cpu_run_start(3, &p);
	p.thread_info.cpu = nr_cpus;		/* a CPU out of range */
	EXPECT_EQ(vtime_now, current_vtime(&p));
	/* The result is floored like every vtime. */
	p.thread_info.cpu = 3;
	p.scx.dsq_vtime = 0;
	EXPECT_EQ(vtime_now - LAG_SLICES * SLICE, current_vtime(&p));
}

/* A CPU-bound task (a base slice of run per voluntary sleep) is stolen for
 * balance at min_slice(), any other at a base slice. */
TEST(balance_gap_by_cpu_boundness)
{
	struct task_struct p;

	machine_reset();
	p = task(10, 0);
	p.nvcsw = 3;
	p.se.sum_exec_runtime = 4 * SLICE;
	EXPECT_TRUE(cpu_bound(&p));
	EXPECT_EQ(SLICE / 4, balance_gap(&p));
	p.se.sum_exec_runtime = 4 * SLICE - 1;
	EXPECT_FALSE(cpu_bound(&p));
	EXPECT_EQ(SLICE, balance_gap(&p));
}

/* --slice-min-us 0, or above the base slice, means no cut. */
TEST(min_slice_is_never_above_the_base_slice)
{
	machine_reset();
	EXPECT_EQ(SLICE / 4, min_slice());
	min_slice_ns = 0;
	EXPECT_EQ(SLICE, min_slice());
	min_slice_ns = SLICE + 1;
	EXPECT_EQ(SLICE, min_slice());
	min_slice_ns = SLICE;
	EXPECT_EQ(SLICE, min_slice());
}

/* ------------------------------------------------------------ placement */

/* A waking task keeps at most one base slice of credit against vtime_now;
 * one that ran recently, or is ahead, is not moved. */
TEST(wakee_keeps_at_most_a_slice_of_credit)
{
	struct task_struct p;

	machine_reset();
	p = task(10, vtime_now - 10 * SLICE);
	wake_credit(&p, 1, NULL, false);
	EXPECT_EQ(vtime_now - SLICE, p.scx.dsq_vtime);
	p.scx.dsq_vtime = vtime_now - SLICE / 2;
	wake_credit(&p, 1, NULL, false);
	EXPECT_EQ(vtime_now - SLICE / 2, p.scx.dsq_vtime);
	p.scx.dsq_vtime = vtime_now + 5 * SLICE;
	wake_credit(&p, 1, NULL, false);
	EXPECT_EQ(vtime_now + 5 * SLICE, p.scx.dsq_vtime);
}

/* On a crowded CPU whose head lags vtime_now, a wakee goes no further than
 * a slice behind that head, not behind every laggard's lag. */
TEST(wakee_goes_a_slice_behind_a_lagging_head)
{
	struct task_struct p, head;

	machine_reset();
	head = task(20, vtime_now - 10 * SLICE);
	shim_dsq_head[1] = &head;
	p = task(10, vtime_now - 15 * SLICE);
	wake_credit(&p, 1, NULL, false);
	EXPECT_EQ(head.scx.dsq_vtime + SLICE, p.scx.dsq_vtime);
	/* A head within two slices of vtime_now changes nothing. */
	head.scx.dsq_vtime = vtime_now - SLICE;
	p.scx.dsq_vtime = vtime_now - 15 * SLICE;
	wake_credit(&p, 1, NULL, false);
	EXPECT_EQ(vtime_now - SLICE, p.scx.dsq_vtime);
}

/* A task woken from an interrupt is placed just before the CPU's earliest
 * task: the deque's head or the run in progress, whichever is earlier. */
TEST(interrupt_wakee_goes_just_before_the_cpus_earliest_task)
{
	struct task_struct p, head, hog;
	struct rq rq = { 0 };

	machine_reset();
	cpu_with(2, &head, vtime_now - 6 * SLICE, &hog, vtime_now - 8 * SLICE, &rq);
	p = task(10, vtime_now - 15 * SLICE);
	wake_credit(&p, 2, &rq, true);
	EXPECT_EQ(hog.scx.dsq_vtime - 1, p.scx.dsq_vtime);
	/* The run is not the one recorded: only the head counts. */
	cpu_run_end(2);
	p.scx.dsq_vtime = vtime_now - 15 * SLICE;
	wake_credit(&p, 2, &rq, true);
	EXPECT_EQ(head.scx.dsq_vtime - 1, p.scx.dsq_vtime);
	/* Nothing earlier than vtime_now less a slice: that bound. */
	shim_dsq_head[2] = NULL;
	p.scx.dsq_vtime = vtime_now - 15 * SLICE;
	wake_credit(&p, 2, &rq, true);
	EXPECT_EQ(vtime_now - SLICE, p.scx.dsq_vtime);
}

/* A task that slept at least TIMED_SLEEP_NS, woken by a task rather than
 * an interrupt, keeps no credit against vtime_now. */
TEST(task_woken_after_waiting_for_time_keeps_no_credit)
{
	struct task_struct p;
	struct rq rq = { 0 };

	machine_reset();
	rq.cpu = 1;
	rq.clock_task = 10 * SLICE;
	p = task(10, vtime_now - 10 * SLICE);
	p.se.exec_start = rq.clock_task - TIMED_SLEEP_NS;
	EXPECT_TRUE(waited_for_time(&p, &rq, false));
	wake_credit(&p, 1, &rq, false);
	EXPECT_EQ(vtime_now, p.scx.dsq_vtime);
	/* Slept a little less: the usual slice of credit. */
	p.scx.dsq_vtime = vtime_now - 10 * SLICE;
	p.se.exec_start = rq.clock_task - TIMED_SLEEP_NS + 1;
	EXPECT_FALSE(waited_for_time(&p, &rq, false));
	wake_credit(&p, 1, &rq, false);
	EXPECT_EQ(vtime_now - SLICE, p.scx.dsq_vtime);
}

/* Such a wakee goes just before its CPU's running task, but not when that
 * task is its waker: woken by the task running on its own CPU, it is
 * placed by the deque's head alone. */
TEST(task_woken_on_its_wakers_cpu_not_placed_by_the_waker)
{
	struct task_struct p, head, waker;
	struct rq rq = { 0 };

	machine_reset();
	cpu_with(2, &head, vtime_now + SLICE, &waker, vtime_now - SLICE / 2, &rq);
	rq.clock_task = 10 * SLICE;
	p = task(10, vtime_now - SLICE / 4);
	p.se.exec_start = rq.clock_task - TIMED_SLEEP_NS;
	/* Woken from another CPU: just before the running task, which here
	 * keeps the wakee where it was. */
	shim_this_cpu = 1;
	wake_credit(&p, 2, &rq, false);
	EXPECT_EQ(vtime_now - SLICE / 4, p.scx.dsq_vtime);
	p.scx.dsq_vtime = vtime_now - 2 * SLICE;
	wake_credit(&p, 2, &rq, false);
	EXPECT_EQ(waker.scx.dsq_vtime - 1, p.scx.dsq_vtime);
	/* By the running task itself: no credit against vtime_now. */
	shim_this_cpu = 2;
	p.scx.dsq_vtime = vtime_now - SLICE / 4;
	wake_credit(&p, 2, &rq, false);
	EXPECT_EQ(vtime_now, p.scx.dsq_vtime);
	/* ... nor later than just before the head. */
	head.scx.dsq_vtime = vtime_now - SLICE / 8;
	p.scx.dsq_vtime = vtime_now - SLICE / 4;
	wake_credit(&p, 2, &rq, false);
	EXPECT_EQ(head.scx.dsq_vtime - 1, p.scx.dsq_vtime);
	/* An interrupt on that CPU: the running task is not a waker. */
	waker.scx.dsq_vtime = vtime_now - 3 * SLICE;
	p.scx.dsq_vtime = vtime_now - 5 * SLICE;
	wake_credit(&p, 2, &rq, true);
	EXPECT_EQ(waker.scx.dsq_vtime - 1, p.scx.dsq_vtime);
	shim_this_cpu = 0;
}

/* Over random placements: a wakee is never moved earlier than its own
 * vtime, and never later than vtime_now unless it was there already. */
TEST(wake_credit_only_moves_a_wakee_later_and_never_past_vtime_now)
{
	struct task_struct p, head, hog;
	struct rq rq = { 0 };
	unsigned int seed = 1, i;
	u64 before, after, lim;

	machine_reset();
	/* Vtimes from 20 slices behind vtime_now to 12 ahead, in half slices. */
#define NEAR_NOW()	(vtime_now + (u64)(((s64)(rand_r(&seed) % 64) - 40) * (s64)(SLICE / 2)))
	for (i = 0; i < 100000; i++) {
		vtime_now = ((u64)rand_r(&seed) << 40) ^ (u64)rand_r(&seed) * SLICE;
		cpu_with(1, &head, NEAR_NOW(), &hog, NEAR_NOW(), &rq);
		if (rand_r(&seed) % 2)
			shim_dsq_head[1] = NULL;
		rq.clock_task = 100 * SLICE;
		p = task(10, NEAR_NOW());
		p.se.exec_start = rq.clock_task - rand_r(&seed) % (2 * TIMED_SLEEP_NS);
		before = p.scx.dsq_vtime;
		wake_credit(&p, 1, rand_r(&seed) % 2 ? &rq : NULL, rand_r(&seed) % 2);
		after = p.scx.dsq_vtime;
		ASSERT_FALSE(time_before(after, before));
		lim = time_before(before, vtime_now) ? vtime_now : before;
		ASSERT_FALSE(time_before(lim, after));
	}
#undef NEAR_NOW
}

/* A task the kernel moves to another CPU loses its lag against that CPU's
 * earliest task and keeps its lead. */
TEST(moved_task_keeps_no_lag_against_its_new_cpu)
{
	struct task_struct p, head, hog;
	struct rq rq = { 0 };

	machine_reset();
	cpu_with(4, &head, vtime_now - 3 * SLICE, &hog, vtime_now - 4 * SLICE, &rq);
	p = task(10, vtime_now - 12 * SLICE);
	migrate_place(&p, 4, &rq);
	EXPECT_EQ(hog.scx.dsq_vtime, p.scx.dsq_vtime);
	p.scx.dsq_vtime = vtime_now - 12 * SLICE;
	migrate_place(&p, 4, NULL);		/* no rq: the head only */
	EXPECT_EQ(head.scx.dsq_vtime, p.scx.dsq_vtime);
	shim_dsq_head[4] = NULL;		/* an empty CPU: vtime_now less a slice */
	p.scx.dsq_vtime = vtime_now - 12 * SLICE;
	migrate_place(&p, 4, NULL);
	EXPECT_EQ(vtime_now - SLICE, p.scx.dsq_vtime);
	p.scx.dsq_vtime = vtime_now + 7 * SLICE;	/* a lead is kept */
	migrate_place(&p, 4, &rq);
	EXPECT_EQ(vtime_now + 7 * SLICE, p.scx.dsq_vtime);
}

/* A new task goes level with the earliest task of the CPU it first joins
 * where that is earlier than where it would go (the floor included), and
 * never later. */
TEST(new_task_goes_level_with_the_cpus_earliest_task)
{
	struct task_struct head, hog;
	struct rq rq = { 0 };
	u64 placed0 = stats()->nr_fork_placed, floor;

	machine_reset();
	floor = vtime_now - LAG_SLICES * SLICE;
	cpu_with(4, &head, floor - 3 * SLICE, &hog, floor - 4 * SLICE, &rq);
	EXPECT_EQ(hog.scx.dsq_vtime, fork_place(4, &rq, vtime_floor(vtime_now)));
	EXPECT_EQ(head.scx.dsq_vtime, fork_place(4, NULL, vtime_now));	/* no rq: the head only */
	EXPECT_EQ(placed0 + 2, stats()->nr_fork_placed);
	shim_dsq_head[4] = NULL;		/* an empty CPU: where it was */
	EXPECT_EQ(vtime_now, fork_place(4, NULL, vtime_now));
	/* CPU tasks ahead of it: never later */
	cpu_with(5, &head, vtime_now + 3 * SLICE, &hog, vtime_now + 2 * SLICE, &rq);
	EXPECT_EQ(vtime_now, fork_place(5, &rq, vtime_now));
	EXPECT_EQ(placed0 + 2, stats()->nr_fork_placed);
}

/* ------------------------------------------------------------ the rate bound */

/* WAKE_KICK_BURST switches conform at once; the next waits one period. */
TEST(rate_bound_allows_a_burst_then_one_a_period)
{
	u64 now;
	int i;

	machine_reset();
	now = shim_now;
	for (i = 0; i < WAKE_KICK_BURST; i++) {
		ASSERT_EQ(0, kick_wait(1, now));
		kick_charge(1, now);
	}
	EXPECT_EQ(WAKE_KICK_PERIOD_NS, kick_wait(1, now));
	EXPECT_EQ(WAKE_KICK_PERIOD_NS / 2, kick_wait(1, now + WAKE_KICK_PERIOD_NS / 2));
	EXPECT_EQ(0, kick_wait(1, now + WAKE_KICK_PERIOD_NS));
	/* Another CPU has a bound of its own. */
	EXPECT_EQ(0, kick_wait(2, now));
}

/* Idle time refills the burst but never beyond it. */
TEST(rate_bound_burst_does_not_accumulate)
{
	u64 now;
	int i, n = 0;

	machine_reset();
	now = shim_now;
	kick_charge(1, now);
	now += 1000 * WAKE_KICK_PERIOD_NS;
	while (!kick_wait(1, now) && n < 100) {
		kick_charge(1, now);
		n++;
	}
	EXPECT_EQ(WAKE_KICK_BURST, n);
	for (i = 0; i < 3; i++)
		EXPECT_NE(0, kick_wait(1, now));
}

/* Taking every switch the bound allows, at random times, no window of t
 * holds more than WAKE_KICK_BURST + t / period of them. */
TEST(rate_bound_holds_over_random_arrivals)
{
	static u64 at[200000];
	unsigned int seed = 7, n = 0, i, j;
	u64 now, w;

	machine_reset();
	now = UINT64_MAX - 50 * WAKE_KICK_PERIOD_NS;	/* across the wrap, too */
	for (i = 0; i < 400000 && n < 200000; i++) {
		now += rand_r(&seed) % (WAKE_KICK_PERIOD_NS / 2);
		if (kick_wait(1, now))
			continue;
		kick_charge(1, now);
		at[n++] = now;
	}
	ASSERT_GT(n, 1000);
	for (i = 0; i < n; i += 97) {
		for (j = i; j < n && at[j] - at[i] <= 20 * WAKE_KICK_PERIOD_NS; j++)
			;
		w = 20;
		ASSERT_LE(j - i, WAKE_KICK_BURST + w) TH_LOG("window at %u: %u switches", i, j - i);
	}
}

/* A charge at a later time (a cut's end) moves the bound from then on. */
TEST(rate_bound_charges_a_cut_at_its_end)
{
	u64 now;
	int i;

	machine_reset();
	now = shim_now;
	for (i = 0; i < WAKE_KICK_BURST; i++)
		kick_charge(1, now + 5 * WAKE_KICK_PERIOD_NS);
	EXPECT_EQ(5 * WAKE_KICK_PERIOD_NS + WAKE_KICK_PERIOD_NS, kick_wait(1, now));
}

/* ------------------------------------------------------------ wakeup preemption */

/* @hog at @vt, @ran into a run on CPU 1 (@rq), brought up to date now. */
static void hog_running(struct task_struct *hog, u64 vt, u64 ran, struct rq *rq)
{
	*hog = task(30, vt);
	hog->se.sum_exec_runtime = 10 * SLICE;	/* no sleep yet: CPU-bound */
	run_on(1, hog, rq);
	hog->se.sum_exec_runtime += ran;
	rq->clock_task = 200 * SLICE;
	hog->se.exec_start = rq->clock_task;
}

/* A stream of interrupt wakees earlier than a hog preempts it at most
 * WAKE_KICK_BURST times at once; then the run's end waits for the bound,
 * by a timer, and is charged where it falls. */
TEST(interrupt_wakees_preempt_a_hog_within_the_rate_bound)
{
	struct task_struct p, hog;
	struct rq rq = { 0 };
	struct wake_cut *wc;
	u32 key = 1;
	int i;

	machine_reset();
	hog_running(&hog, vtime_now + 4 * SLICE, 10 * MS, &rq);
	p = task(10, vtime_now);
	for (i = 0; i < WAKE_KICK_BURST; i++) {
		wake_preempt(&p, 1, &rq, false, true, p.scx.dsq_vtime);
		ASSERT_EQ(i + 1, shim_nr_kicks);
		ASSERT_EQ(WS_KICK_PREEMPT, shim_last_kick_flags);
		ASSERT_EQ(p.pid, cpu_ctx(1)->wake_kicked);
	}
	wake_preempt(&p, 1, &rq, false, true, p.scx.dsq_vtime);
	EXPECT_EQ(WAKE_KICK_BURST, shim_nr_kicks);
	wc = bpf_map_lookup_elem(&wake_cuts, &key);
	ASSERT_NE(NULL, wc);
	EXPECT_EQ(WAKE_KICK_PERIOD_NS, wc->timer.armed_ns);
	EXPECT_EQ(hog.pid, wc->pid);
	/* A run inside a critical section is not kicked at once: its timer
	 * is armed to fire now, and its kick decides on the grace. */
	machine_reset();
	hog_running(&hog, vtime_now + 4 * SLICE, 10 * MS, &rq);
	fake_in_section = true;
	wc->pid = 0;
	wake_preempt(&p, 1, &rq, false, true, p.scx.dsq_vtime);
	EXPECT_EQ(0, shim_nr_kicks);
	EXPECT_EQ(0, wc->timer.armed_ns);
	EXPECT_EQ(hog.pid, wc->pid);
}

/*
 * A run-cut timer that finds its run inside a critical section grants the
 * grace first and fires again at its end; then (the grace used) it kicks
 * the same run. A run that ended meanwhile is not kicked.
 */
TEST(run_cut_in_a_section_waits_for_the_grace_once)
{
	struct task_struct hog, p;
	struct rq rq = { 0 };
	struct wake_cut *wc;
	u32 key = 1;

	machine_reset();
	hog_running(&hog, vtime_now + 4 * SLICE, 10 * MS, &rq);
	shim_task_by_pid = &hog;
	shim_dsq_len[1] = 1;
	wc = bpf_map_lookup_elem(&wake_cuts, &key);
	ASSERT_NE(NULL, wc);
	wc->pid = 0;
	fake_in_section = true;
	fake_graces = 1;
	ASSERT_TRUE(run_cut_start(wc, 1, &hog, 0));
	EXPECT_FALSE(run_cut_kick(1, wc));
	EXPECT_EQ(0, shim_nr_kicks);
	EXPECT_EQ(grace_ns, wc->timer.armed_ns);
	EXPECT_EQ(hog.pid, wc->pid);
	EXPECT_TRUE(run_cut_kick(1, wc));
	EXPECT_EQ(1, shim_nr_kicks);
	EXPECT_EQ(WS_KICK_PREEMPT, shim_last_kick_flags);
	EXPECT_EQ(0, wc->pid);
	/* Granted, then the run ended (its library yielded): no kick. */
	fake_graces = 1;
	ASSERT_TRUE(run_cut_start(wc, 1, &hog, 0));
	EXPECT_FALSE(run_cut_kick(1, wc));
	p = task(31, vtime_now);
	run_on(1, &p, &rq);
	EXPECT_FALSE(run_cut_kick(1, wc));
	EXPECT_EQ(1, shim_nr_kicks);
	/* Outside a section a timer kicks at once. */
	fake_in_section = false;
	hog_running(&hog, vtime_now + 4 * SLICE, 10 * MS, &rq);
	ASSERT_TRUE(run_cut_start(wc, 1, &hog, 0));
	EXPECT_TRUE(run_cut_kick(1, wc));
	EXPECT_EQ(2, shim_nr_kicks);
}

/* A wakee not earlier than the run, or behind the deque's head, waits. */
TEST(wakee_later_than_the_run_or_the_head_does_not_preempt)
{
	struct task_struct p, hog, head;
	struct rq rq = { 0 };

	machine_reset();
	hog_running(&hog, vtime_now, 10 * MS, &rq);
	p = task(10, vtime_now + 10 * MS);	/* ahead of the hog's run so far */
	wake_preempt(&p, 1, &rq, false, true, p.scx.dsq_vtime);
	EXPECT_EQ(0, shim_nr_kicks);
	head = task(20, vtime_now - SLICE);
	shim_dsq_head[1] = &head;
	p.scx.dsq_vtime = vtime_now;
	wake_preempt(&p, 1, &rq, false, true, p.scx.dsq_vtime);
	EXPECT_EQ(0, shim_nr_kicks);
	shim_dsq_head[1] = NULL;
	wake_preempt(&p, 1, &rq, false, true, p.scx.dsq_vtime);
	EXPECT_EQ(1, shim_nr_kicks);
}

/* Each option drives one mechanism: --slice-lat-us sets neither the rate
 * bound's period nor the run a wakee of another CPU's task must leave a
 * hog, and the experimental wake-preempt-us not the sleep that counts as
 * a wait for time. */
TEST(options_drive_one_mechanism_each)
{
	struct task_struct p, hog;
	struct rq rq = { 0 };
	struct wake_cut *wc;
	u32 key = 1;
	int i;

	machine_reset();
	lat_slice_ns = 200 * US;
	wake_preempt_ns = 5 * MS;
	for (i = 0; i < WAKE_KICK_BURST; i++)
		kick_charge(1, shim_now);
	EXPECT_EQ(WAKE_KICK_PERIOD_NS, kick_wait(1, shim_now));
	rq.clock_task = 10 * SLICE;
	p = task(10, vtime_now);
	p.se.exec_start = rq.clock_task - TIMED_SLEEP_NS;
	EXPECT_TRUE(waited_for_time(&p, &rq, false));

	/* A CPU-bound hog 600 us into its run, a wakee of another CPU's
	 * task: its run ends at WAKE_XCPU_RUN_NS, by a timer, not now. */
	machine_reset();
	lat_slice_ns = 200 * US;
	hog_running(&hog, vtime_now + SLICE, 600 * US, &rq);
	p = task(10, vtime_now);
	p.se.exec_start = rq.clock_task - MS;
	wake_preempt(&p, 1, &rq, false, false, p.scx.dsq_vtime);
	EXPECT_EQ(0, shim_nr_kicks);
	wc = bpf_map_lookup_elem(&wake_cuts, &key);
	ASSERT_NE(NULL, wc);
	EXPECT_EQ(WAKE_XCPU_RUN_NS - 600 * US, wc->timer.armed_ns);
}

/* ------------------------------------------------------------ slices */

/* A user task woken from an interrupt marks its CPU for a base slice: a
 * crowded CPU's cut is lat_slice_ns then (a run in a critical section's
 * too: its grace is the tick's), min_slice() before and after. */
TEST(interrupt_wakee_shortens_cuts_for_a_base_slice)
{
	struct task_struct p, t;

	machine_reset();
	p = task(10, 0);
	t = task(11, 0);
	EXPECT_EQ(min_slice(), lat_cut(&t, 3));
	lat_wake_note(&p, 3, false);		/* not from an interrupt */
	EXPECT_EQ(min_slice(), lat_cut(&t, 3));
	lat_wake_note(&p, 3, true);
	EXPECT_EQ(lat_slice_ns, lat_cut(&t, 3));
	EXPECT_EQ(min_slice(), lat_cut(&t, 4));	/* another CPU */
	fake_in_section = true;
	EXPECT_EQ(lat_slice_ns, lat_cut(&t, 3));
	fake_in_section = false;
	shim_now += SLICE - 1;
	EXPECT_EQ(lat_slice_ns, lat_cut(&t, 3));
	shim_now += 1;
	EXPECT_EQ(min_slice(), lat_cut(&t, 3));
	/* A kernel thread marks nothing. */
	p.flags = WS_PF_KTHREAD;
	lat_wake_note(&p, 3, true);
	EXPECT_EQ(min_slice(), lat_cut(&t, 3));
	/* Nor does anything when the shorter cut is not shorter. */
	p.flags = 0;
	lat_slice_ns = min_slice();
	lat_wake_note(&p, 5, true);
	EXPECT_EQ(0, cpu_ctx(5)->lat_wake_at);
}

/* The any-CPU mark moves only when it is LAT_ANY_STALE old. */
TEST(any_cpu_mark_moves_at_most_once_a_millisecond)
{
	struct task_struct p;
	u64 first;

	machine_reset();
	p = task(10, 0);
	lat_wake_note(&p, 1, true);
	first = lat_any_at;
	EXPECT_EQ(shim_now, first);
	shim_now += LAT_ANY_STALE - 1;
	lat_wake_note(&p, 2, true);
	EXPECT_EQ(first, lat_any_at);
	shim_now += 1;
	lat_wake_note(&p, 2, true);
	EXPECT_EQ(shim_now, lat_any_at);
}

/* The loader's own wakeups are not a timer wakee's. */
TEST(loader_is_no_interrupt_wakee)
{
	struct task_struct p;

	machine_reset();
	p = task(10, 0);
	__preempt_count = 0x00010000;		/* in a hard IRQ */
	EXPECT_TRUE(ws_irq_wakeup(&p));
	loader_tgid = 10;
	EXPECT_FALSE(ws_irq_wakeup(&p));
	__preempt_count = 0;
	loader_tgid = 0;
	EXPECT_FALSE(ws_irq_wakeup(&p));
}

/* The tick's period is learnt over TICK_LEARN_JIFFIES jiffies, and a
 * period outside [TICK_NS_MIN, TICK_NS_MAX] makes it start over. */
TEST(tick_period_is_learnt_and_checked)
{
	int i;

	machine_reset();
	shim_jiffies = 1000;
	for (i = 0; i <= TICK_LEARN_JIFFIES; i++) {
		tick_gap_learn();
		shim_jiffies++;
		shim_now += 4 * MS;
	}
	EXPECT_EQ(4 * MS, tick_gap_ns);
	machine_reset();
	shim_jiffies = 1000;
	for (i = 0; i <= TICK_LEARN_JIFFIES; i++) {
		tick_gap_learn();
		shim_jiffies++;
		shim_now += 100 * MS;		/* HZ 10: not believed */
	}
	EXPECT_EQ(0, tick_gap_ns);
	EXPECT_EQ(0, tick_base_j);
}

/* ------------------------------------------------------------ the steal mask */

/* A clear bit means nothing stealable arrived since the deque was seen
 * empty; a thief that clears it looks again. */
TEST(steal_mask_clears_only_an_empty_deque)
{
	machine_reset();
	EXPECT_TRUE(mask_empty());
	mask_set(5);
	EXPECT_TRUE(mask_test(5));
	EXPECT_FALSE(mask_empty());
	shim_dsq_len[5] = 1;			/* a task arrived meanwhile */
	mask_clear(5);
	EXPECT_TRUE(mask_test(5));
	shim_dsq_len[5] = 0;
	mask_clear(5);
	EXPECT_FALSE(mask_test(5));
	EXPECT_TRUE(mask_empty());
	/* A bit past nr_cpus' words is not looked at. */
	queued_mask[2] = 1;
	EXPECT_TRUE(mask_empty());
}

/* A steal from a deque whose tasks are all pinned marks it unstealable;
 * a clear bit skips the deque without a move. */
TEST(failed_steal_marks_the_deque_unstealable)
{
	machine_reset();
	EXPECT_FALSE(try_steal(0, 3, false));	/* bit clear: not even tried */
	mask_set(3);
	shim_dsq_len[3] = 0;
	EXPECT_FALSE(try_steal(0, 3, false));	/* empty: the bit goes */
	EXPECT_FALSE(mask_test(3));
	EXPECT_FALSE(try_steal(0, 0, false));	/* never from itself */
	EXPECT_FALSE(try_steal(0, nr_cpus, false));
	mask_set(3);
	shim_dsq_len[3] = 2;
	EXPECT_TRUE(try_steal(0, 3, false));
	EXPECT_EQ(1, shim_dsq_len[3]);
	EXPECT_EQ(0, cpu_ctx(3)->unstealable);
	shim_dsq_pinned[3] = true;
	EXPECT_FALSE(try_steal(0, 3, false));
	EXPECT_EQ(1, cpu_ctx(3)->unstealable);
	EXPECT_TRUE(mask_test(3));		/* still holds tasks */
}

/* ------------------------------------------------------------ cgroups */

static struct kernfs_node cg_kn[16];
static struct cgroup cg_tree[16];

/* Fake cgroup @i under @parent (NULL: the root, level 0), through
 * ops.cgroup_init as the kernel calls it, parents first. */
static struct cgroup *cgroup_make(int i, struct cgroup *parent, u32 weight)
{
	struct cgroup *c = &cg_tree[i];

	cg_kn[i].id = 100 + i;
	c->kn = &cg_kn[i];
	c->parent = parent;
	c->level = parent ? parent->level + 1 : 0;
	cg_init(c, weight, 100000, ~0ULL, 0);
	return c;
}

static struct task_group cg_tg[16];

/* @n runnable nice-0 tasks in @c, spread over the CPUs (ops.runnable). */
static void cgroup_fill(struct cgroup *c, int n)
{
	static struct task_struct tasks[256];
	static int used;
	int i, k = c - cg_tree;

	cg_tg[k].css.cgroup = c;
	for (i = 0; i < n && used < 256; i++, used++) {
		struct task_struct *p = &tasks[used];

		*p = task(1000 + used, 0);
		p->thread_info.cpu = used % 8;
		p->sched_task_group = &cg_tg[k];
		cg_count(p, p->scx.weight);
	}
}

static u32 factor_of(struct cgroup *c)
{
	return cg_at(((struct cg_link *)c->storage)->slot)->factor;
}

static double share_of(struct cgroup *c)
{
	return (double)cg_at(((struct cg_link *)c->storage)->slot)->hw / CG_HW_ONE;
}

/* The share of the machine one nice-0 task of @c gets: its effective
 * weight over all the runnable tasks' (@total of them, all nice 0). */
static double task_share(struct cgroup *c, int total)
{
	return (double)factor_of(c) / CG_FX_ONE / total;
}

#define NEAR(want, got)	EXPECT_GT(0.002, (want) > (got) ? (want) - (got) : (got) - (want)) \
	TH_LOG("want %.4f, got %.4f", (double)(want), (double)(got))

TEST(cgroup_shares_follow_sibling_weights)
{
	struct cgroup *root, *a, *b;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	a = cgroup_make(1, root, 100);
	b = cgroup_make(2, root, 300);
	cgroup_fill(a, 4);
	cgroup_fill(b, 4);
	ASSERT_EQ(2, cg_refresh());
	NEAR(0.25, share_of(a));
	NEAR(0.75, share_of(b));
	/* four tasks each: a task of a has 1/16 of the machine, of b 3/16 */
	NEAR(1.0 / 16, task_share(a, 8));
	NEAR(3.0 / 16, task_share(b, 8));
	/* a run is charged its vtime over the factor: b's 3x slower than a's */
	EXPECT_EQ(3 * cg_scale(30 * MS, factor_of(b)), cg_scale(30 * MS, factor_of(a)));
}

TEST(cgroup_with_more_tasks_gets_no_more)
{
	struct cgroup *root, *a, *b;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	a = cgroup_make(1, root, 100);
	b = cgroup_make(2, root, 100);
	cgroup_fill(a, 8);
	cgroup_fill(b, 64);
	cg_refresh();
	NEAR(0.5, 8 * task_share(a, 72));
	NEAR(0.5, 64 * task_share(b, 72));
}

/* The tree p (@wp) {p1 (@w1), p2 (@w2)}, q (@wq) under the root; the root. */
static struct cgroup *tree_pq(u32 wp, u32 wq, u32 w1, u32 w2, struct cgroup **p,
			      struct cgroup **q, struct cgroup **p1, struct cgroup **p2)
{
	struct cgroup *root;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	*p = cgroup_make(1, root, wp);
	*q = cgroup_make(2, root, wq);
	*p1 = cgroup_make(3, *p, w1);
	*p2 = cgroup_make(4, *p, w2);
	return root;
}

TEST(cgroup_shares_multiply_down_the_tree)
{
	struct cgroup *p, *p1, *p2, *q;

	tree_pq(200, 100, 100, 300, &p, &q, &p1, &p2);
	cgroup_fill(p1, 2);
	cgroup_fill(p2, 2);
	cgroup_fill(q, 2);
	cg_refresh();
	NEAR(2.0 / 3, share_of(p));
	NEAR(2.0 / 3 * 1 / 4, 2 * task_share(p1, 6));
	NEAR(2.0 / 3 * 3 / 4, 2 * task_share(p2, 6));
	NEAR(1.0 / 3, 2 * task_share(q, 6));
}

/* A sibling without runnable tasks leaves its share to the others, and
 * the root's own tasks take part by their own weights. */
TEST(cgroup_idle_sibling_leaves_its_share_and_root_tasks_count)
{
	struct cgroup *root, *p, *p1, *p2, *q;

	root = tree_pq(100, 100, 100, 300, &p, &q, &p1, &p2);
	cgroup_fill(p1, 3);
	cgroup_fill(q, 1);
	cgroup_fill(root, 2);	/* two nice-0 tasks of the root: 200 */
	cg_refresh();
	/* root: 200 own + p 100 + q 100 */
	NEAR(0.25, 3 * task_share(p1, 6));
	NEAR(0.25, task_share(q, 6));
	NEAR(0.5, 2 * task_share(root, 6));
}

TEST(cgroup_alone_keeps_the_weights_as_they_are)
{
	struct cgroup *root, *a;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	a = cgroup_make(1, root, 50);
	cgroup_fill(a, 5);
	cg_refresh();
	EXPECT_EQ(CG_FX_ONE, factor_of(a));
	EXPECT_EQ(20 * MS, cg_scale(20 * MS, factor_of(a)));
	cgroup_fill(root, 3);	/* nothing in a cgroup of its own */
	cg_refresh();
	EXPECT_NE(CG_FX_ONE, factor_of(a));
}

/* A freed slot is dead to its cgroup's exiting tasks, which are counted
 * nowhere, and is taken again only after every other, its counts zeroed. */
TEST(cgroup_removed_frees_its_slot_and_counts)
{
	struct cgroup *root, *a, *b;
	struct task_struct t = task(77, 0);
	u64 used;
	s32 slot;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	a = cgroup_make(1, root, 100);
	cgroup_fill(a, 3);
	slot = ((struct cg_link *)a->storage)->slot;
	cg_exit(a);
	EXPECT_EQ(CG_DEAD, ((struct cg_link *)a->storage)->slot);
	EXPECT_EQ(0, cg_at(slot)->id);
	cg_tg[1].css.cgroup = a;
	t.sched_task_group = &cg_tg[1];
	EXPECT_EQ(CG_DEAD, cg_task_slot(&t));
	EXPECT_EQ(CG_FX_ONE, cg_slot_factor(cg_task_slot(&t)));
	cg_count(&t, -100);	/* its quiescent: no count moves */
	EXPECT_EQ(300, cg_own(slot, &used));
	b = cgroup_make(2, root, 100);
	EXPECT_NE(slot, ((struct cg_link *)b->storage)->slot);
	cg_next = slot;		/* as after going round */
	b = cgroup_make(3, root, 100);
	EXPECT_EQ(slot, ((struct cg_link *)b->storage)->slot);
	EXPECT_EQ(0, cg_own(slot, &used));
}

/* A run of @ran ns on @cpu of a task of @c, charged at a tick and at its
 * stop, as ops.running, ops.tick and ops.stopping charge it. */
static void cgroup_run(struct cgroup *c, s32 cpu, u64 ran)
{
	struct ws_cpu *w = cpu_ctx(cpu);

	w->cur_slot = c->level ? ((struct cg_link *)c->storage)->slot : 0;
	w->cur_charged = 7 * MS;	/* its sum_exec_runtime at ops.running */
	cg_charge(cpu, 7 * MS + ran / 2);
	cg_charge(cpu, 7 * MS + ran / 2);	/* nothing ran since */
	cg_charge(cpu, 7 * MS + ran);
}

static u64 usage_of(struct cgroup *c)
{
	return cg_at(c->level ? ((struct cg_link *)c->storage)->slot : 0)->usage_ns;
}

/*
 * A cgroup's CPU time, as cpu.stat counts it: its own tasks' and its
 * descendants', on every CPU, kept in its parent's when it is removed;
 * the root's counts everything.
 */
TEST(cgroup_cpu_time_sums_up_the_tree_and_outlives_removal)
{
	struct cgroup *root, *p, *p1, *p2, *q;

	root = tree_pq(100, 100, 100, 100, &p, &q, &p1, &p2);
	cgroup_run(p1, 0, 3 * MS);
	cgroup_run(p1, 5, 4 * MS);
	cgroup_run(p2, 1, 10 * MS);
	cgroup_run(q, 2, 1 * MS);
	cgroup_run(root, 3, 2 * MS);
	cg_refresh();
	EXPECT_EQ(7 * MS, usage_of(p1));
	EXPECT_EQ(10 * MS, usage_of(p2));
	EXPECT_EQ(17 * MS, usage_of(p));
	EXPECT_EQ(1 * MS, usage_of(q));
	EXPECT_EQ(20 * MS, usage_of(root));
	cgroup_run(p2, 1, 5 * MS);
	cg_refresh();
	cg_exit(p2);
	cgroup_run(p1, 0, 1 * MS);
	cg_refresh();
	EXPECT_EQ(8 * MS, usage_of(p1));
	EXPECT_EQ(23 * MS, usage_of(p)) TH_LOG("a removed child's CPU time lost");
	EXPECT_EQ(26 * MS, usage_of(root));
}

/* cpu.idle: the cgroup competes at weight 1, whatever its cpu.weight. */
TEST(cgroup_idle_competes_at_weight_one)
{
	struct cgroup *root, *a, *b;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	a = cgroup_make(1, root, 100);
	b = cgroup_make(2, root, 10000);
	cgroup_fill(a, 1);
	cgroup_fill(b, 1);
	cg_set_idle(b, true);
	cg_refresh();
	NEAR(1.0 / 101, share_of(b));
	NEAR(100.0 / 101, task_share(a, 2));
	cg_set_idle(b, false);
	cg_refresh();
	NEAR(10000.0 / 10100, share_of(b));
}

/*
 * cpu.max 40 ms per 100 ms with a 40 ms burst: idle periods save up to
 * quota + burst; a run past the budget throttles the cgroup, a task then
 * enqueued is parked in its deque, and a debt is paid from the next
 * periods (down to one quota), so the cgroup runs again only once a
 * period leaves it budget.
 */
TEST(quota_budget_burst_debt_and_throttle)
{
	struct cgroup *root, *a;
	struct wsched_cgroup *cg;
	struct task_struct t = task(55, 0);
	u64 q = 40 * MS;
	s32 slot;
	int i;

	machine_reset();
	root = cgroup_make(0, NULL, 100);
	a = cgroup_make(1, root, 100);
	slot = ((struct cg_link *)a->storage)->slot;
	cg = cg_at(slot);
	cg_set_bandwidth(a, 100000, 40000, 40000);
	EXPECT_EQ(1, cg_quotas);
	EXPECT_EQ((s64)q, cg->budget);
	for (i = 1; i <= 3; i++) {	/* idle periods */
		shim_now = cg->period_end;
		cg_quota_refresh();
	}
	EXPECT_EQ((s64)(2 * q), cg->budget) TH_LOG("saved beyond quota + burst");
	cg_consume(slot, 2 * q - 1);
	EXPECT_EQ(0, cg->throttled_at);
	cg_consume(slot, 5 * q);	/* a long run charged at its stop */
	EXPECT_NE(0, cg->throttled_at);
	cg_tg[1].css.cgroup = a;
	t.sched_task_group = &cg_tg[1];
	EXPECT_TRUE(cg_park(&t, 0));
	EXPECT_EQ(CG_DSQ(slot), shim_parked_dsq);
	shim_now = cg->period_end;	/* debt -5q is cut to -q, then +q: 0 */
	cg_quota_refresh();
	EXPECT_EQ(0, cg->budget);
	EXPECT_NE(0, cg->throttled_at) TH_LOG("unthrottled without budget");
	EXPECT_EQ(100 * MS, cg->throttled_ns) TH_LOG("the throttle so far not counted");
	shim_now = cg->period_end + 10 * US;
	cg_quota_refresh();
	EXPECT_EQ((s64)q, cg->budget);
	EXPECT_EQ(0, cg->throttled_at);
	EXPECT_EQ(200 * MS + 10 * US, cg->throttled_ns) TH_LOG("throttled time");
	EXPECT_FALSE(cg_park(&t, 0));
	/* cpu.max back to max: no quota, nothing limited at the next refresh */
	cg_set_bandwidth(a, 100000, ~0ULL, 0);
	EXPECT_EQ(0, cg_quotas);
	EXPECT_FALSE(cg_park(&t, 0));
}

/* Too deep: scheduled as part of the deepest ancestor with a slot. */
TEST(cgroup_too_deep_is_flattened_into_its_parent)
{
	struct cgroup *c;
	int i;

	machine_reset();
	c = cgroup_make(0, NULL, 100);
	for (i = 1; i <= WSCHED_MAX_CG_LEVEL && i < 16; i++)
		c = cgroup_make(i, c, 100);
	ASSERT_EQ(15, c->level);
	cg_max_level = WSCHED_MAX_CG_LEVEL;
	c->level = WSCHED_MAX_CG_LEVEL;		/* its child is one too deep */
	{
		static struct cgroup deep;
		static struct kernfs_node kn = { .id = 1000 };

		deep.kn = &kn;
		deep.parent = c;
		deep.level = WSCHED_MAX_CG_LEVEL + 1;
		cg_init(&deep, 100, 100000, ~0ULL, 0);
		EXPECT_EQ(((struct cg_link *)c->storage)->slot,
			  ((struct cg_link *)deep.storage)->slot);
	}
}

/* ------------------------------------------------------------ workers and thieves */

/*
 * Worker preference preempts only a thief of the worker's own process,
 * whatever another process's thread runs after it at any point of
 * prefer_worker()'s reads. The worker's process (tgid 100) names, in its
 * own slot array, a thread of another process (pid 201 of tgid 200) as an
 * idle thief; its own thread running on CPU 1 is no thief. A context
 * switch from that thread to pid 201 before each of prefer_worker()'s
 * accesses to CPU 1 in turn must never make it kick CPU 1: with pid and
 * tgid read as two words, a switch between the two reads paired tgid 100
 * with pid 201, and the forged slot had CPU 1 preempted. A genuine idle
 * thief of the process is preempted (the control).
 */
/* Two CPUs; process 100 registered, its slot array naming @thief_pid an
 * idle thief; its thread 101 (@own) running on CPU 1 past its thief
 * slice; its @worker, 102, queued on CPU 0. */
static void worker_beside(u32 thief_pid, struct task_struct *own, struct task_struct *worker,
			  const struct cpumask *all)
{
	machine_reset();
	nr_cpus = 2;
	fake_reg_tgid = 100;
	fake_thief_pid[0] = thief_pid;
	*own = task(101, vtime_now);
	own->tgid = 100;
	*worker = task(102, vtime_now);
	worker->tgid = 100;
	worker->cpus_ptr = all;
	run_on(1, own, NULL);
	cpu_ctx(1)->cur_start = shim_now - SLICE;
}

TEST(worker_preference_never_pairs_a_pid_with_another_runs_tgid)
{
	struct cpumask all;
	struct task_struct own, other, worker;
	unsigned int k, switched_late = 0;

	memset(&all, 0xff, sizeof(all));
	for (k = 0; k <= 6; k++) {
		worker_beside(201, &own, &worker, &all);	/* the forged slot */
		other = task(201, vtime_now);
		other.tgid = 200;
		switch_cpu = 1;
		switch_at = k;
		switch_seen = 0;
		switch_to = &other;
		prefer_worker(&worker, 0);
		switch_at = 0;
		if (k > 1 && switch_seen >= k)
			switched_late++;
		EXPECT_EQ(0, shim_nr_kicks) TH_LOG("switch before access %u kicked CPU %d", k,
						   shim_last_kick_cpu);
		EXPECT_EQ(0, cpu_ctx(1)->worker_target.pid);
	}
	/* A switch did come after prefer_worker() had read CPU 1's run. */
	EXPECT_LT(0, switched_late);

	/* The control: the process's own idle thief on CPU 1 is preempted. */
	worker_beside(101, &own, &worker, &all);
	prefer_worker(&worker, 0);
	EXPECT_EQ(1, shim_nr_kicks);
	EXPECT_EQ(1, shim_last_kick_cpu);
	EXPECT_EQ(WS_KICK_PREEMPT, shim_last_kick_flags);
	EXPECT_EQ(102, cpu_ctx(1)->worker_target.pid);
}

TEST_HARNESS_MAIN
