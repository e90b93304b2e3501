/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched cgroups: cpu.weight, flattened, and the state of cpu.max. Every cgroup with the cpu
 * controller (the root included) has a slot in wsched_cgroups; the share
 * timer (in scx_wsched_quota.bpf.h: cg_refresh() every CG_PERIOD_NS while
 * more than one cgroup has work or a quota exists) computes from the runnable tasks' weights, which ops.runnable and
 * ops.quiescent count per cgroup and CPU, each cgroup's share of the
 * machine as under the kernel's group scheduling: at every level, a
 * cgroup with runnable work shares its parent's share with its siblings
 * that have work, by cpu.weight, and a cgroup's own tasks (the root's:
 * kernel threads and whatever runs there) take part as entities of their
 * own weights. A task's share of the machine is then
 *   hw(its cgroup) x weight(task) / sum(its cgroup),
 * sum: its cgroup's own runnable weight plus its children's with work.
 * Normalised so that the runnable tasks' weights keep their total, that is
 * an effective weight factor x weight(task), with
 *   factor = total runnable weight x hw / sum,
 * one number per cgroup, 1 where all is in one cgroup. A run is charged
 * its vtime divided by the factor (cg_scale()); everything else about
 * fairness (scx_wsched_vtime.bpf.h) compares those vtimes unchanged, so a
 * cgroup's tasks get its share on every CPU and the steals for balance
 * spread it across CPUs, as they spread nice weights.
 *
 * Races: the counts are per CPU, each written only under that CPU's rq
 * lock (the task's, task_cpu_of()), and summed by the timer without it;
 * a refresh that reads one a wakeup old sets the shares a wakeup off until
 * the next. Slots are taken and freed by ops.cgroup_init and
 * ops.cgroup_exit, which the kernel serialises (cgroup_mutex); the timer
 * skips a free slot, and one taken while it runs is counted from the next
 * refresh. A slot freed by ops.cgroup_exit is marked dead in its
 * cgroup's storage first: a task still in that cgroup (an exiting one) is
 * counted nowhere and charged at the root's factor, and a freed slot is
 * taken again only after every other (cg_next goes round), with its
 * counts zeroed.
 *
 * cpu.max is kept here as state (the budget, the throttle: cg_consume(),
 * cg_throttled()), which the ops and the quota fragment act on.
 *
 * What an operator reads (the loader's --stats and --monitor, bpftool):
 * each slot's CPU time, its own tasks' and its descendants', as cpu.stat
 * counts it (cg_charge() per CPU at every tick and stop, summed by each
 * refresh into usage_ns), and its weight, quota and throttled time.
 */
#ifndef __SCX_WSCHED_CGROUP_BPF_H
#define __SCX_WSCHED_CGROUP_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched.h"
#include "scx_wsched_compat.bpf.h"
#include "scx_wsched_cpu.bpf.h"
#include "scx_wsched_stats.bpf.h"

#define CG_FX_ONE		(1U << WSCHED_CG_FX_SHIFT)
#define CG_HW_ONE		(1ULL << WSCHED_CG_HW_SHIFT)
#define CG_FX_MIN		(CG_FX_ONE >> 10)	/* shares differ by at most 2^20 */
#define CG_FX_MAX		(CG_FX_ONE << 10)
#define CG_PERIOD_NS		(4 * 1000 * 1000ULL)	/* refresh while cgroups compete */
#define CG_PERIOD_IDLE_NS	(50 * 1000 * 1000ULL)	/* ... while at most one has work */
#define CG_DEAD			(-1)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, WSCHED_MAX_CGROUPS);
	__type(key, u32);
	__type(value, struct wsched_cgroup);
} wsched_cgroups SEC(".maps");

/* Per slot and CPU, each written under that CPU's rq lock: the summed
 * weight of the slot's runnable tasks there, and the CPU time its own
 * tasks ran there (the root's are in ws_cpu.root_runnable and .root_used:
 * no helper call for them). */
struct cg_cpu {
	s64 runnable;
	u64 used;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WSCHED_MAX_CGROUPS);
	__type(key, u32);
	__type(value, struct cg_cpu);
} cg_cpus SEC(".maps");

/* cg_refresh()'s sums of the CPU time of each slot's subtree, published
 * whole to wsched_cgroup.usage_ns so that a reader never sees one half
 * summed. */
static u64 cg_usage_sum[WSCHED_MAX_CGROUPS];

/* A cgroup's slot (CG_DEAD once ops.cgroup_exit freed it). */
struct cg_link {
	s32 slot;
};

struct {
	__uint(type, BPF_MAP_TYPE_CGRP_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cg_link);
} cg_links SEC(".maps");

static u32 cg_slots_end;	/* every slot in use is below it */
static u32 cg_next = 1;		/* where the search for a free slot starts */
static u32 cg_max_level;	/* the deepest level with a slot */
static u32 cg_quotas;		/* slots with a cpu.max quota */
/* a throttled slot lost its quota: release it (volatile: a static the
 * compiler sees set only to 0 and 1 it would shrink to a byte, which the
 * BTF of .bss, a u32, would not describe) */
static volatile u32 cg_release_due;

/* The deque where the tasks of throttled cgroup @slot wait. */
#define CG_DSQ(slot)		((1ULL << 32) + (u32)(slot))

static __always_inline struct wsched_cgroup *cg_at(s32 slot)
{
	u32 key = slot;

	return bpf_map_lookup_elem(&wsched_cgroups, &key);
}

/*
 * The slot of @p's cgroup (of the cpu controller: the task group's), 0 for
 * the root, without a lookup for a task of the root, CG_DEAD where that
 * cgroup is being removed or has none.
 */
static __always_inline s32 cg_task_slot(struct task_struct *p)
{
	struct task_group *tg = p->sched_task_group;
	struct cgroup *cgrp;
	struct cg_link *l;

	/* an autogroup's task group has no cgroup: the root's (tg_cgrp()) */
	if (!tg || !(cgrp = tg->css.cgroup) || !cgrp->level)
		return 0;
	l = bpf_cgrp_storage_get(&cg_links, cgrp, 0, 0);
	return l ? l->slot : CG_DEAD;
}

/* The factor a run in @slot is charged by, 1 where there is none. */
static __always_inline u32 cg_slot_factor(s32 slot)
{
	struct wsched_cgroup *cg;

	if (slot < 0 || !(cg = cg_at(slot)) || !cg->factor)
		return CG_FX_ONE;
	return cg->factor;
}

/* @vt, a run's vtime at weight 100/weight, at the share factor @factor. */
static __always_inline u64 cg_scale(u64 vt, u32 factor)
{
	if (factor == CG_FX_ONE || !factor)
		return vt;
	if (vt >= 1ULL << 46)	/* hours: no product overflows */
		vt = 1ULL << 46;
	return vt * CG_FX_ONE / factor;
}

/* ops.runnable (@w = the weight) and ops.quiescent (-weight) of @p. */
static __always_inline void cg_count(struct task_struct *p, s64 w)
{
	s32 cpu = task_cpu_of(p), slot;
	struct cg_cpu *cc;

	if (cpu < 0 || (u32)cpu >= nr_cpus)
		return;
	slot = cg_task_slot(p);
	if (!slot) {
		cpu_ctx(cpu)->root_runnable += w;
		return;
	}
	if (slot < 0)
		return;
	cc = bpf_map_lookup_percpu_elem(&cg_cpus, &slot, cpu);
	if (cc)
		cc->runnable += w;
}

/*
 * The CPU time of the run on @cpu since it was last charged (its
 * se.sum_exec_runtime is now @sum) to its cgroup's CPU time there, from
 * ops.tick and ops.stopping of that run (under @cpu's rq lock); the
 * quotas on its path too (cg_consume()).
 */
static __always_inline void cg_consume(s32 slot, u64 ran);

static __always_inline void cg_charge(s32 cpu, u64 sum)
{
	struct ws_cpu *c = cpu_ctx(cpu);
	struct cg_cpu *cc;
	s32 slot = c->cur_slot;
	u64 ran;

	if (sum <= c->cur_charged)
		return;
	ran = sum - c->cur_charged;
	c->cur_charged = sum;
	if (!slot) {
		c->root_used += ran;
		return;
	}
	if (slot < 0)
		return;
	cc = bpf_map_lookup_percpu_elem(&cg_cpus, &slot, cpu);
	if (cc)
		cc->used += ran;
	cg_consume(slot, ran);
}

/* Summed runnable weight of @slot's own tasks over the CPUs; their CPU
 * time in *@used. */
static __always_inline u64 cg_own(u32 slot, u64 *used)
{
	struct cg_cpu *cc;
	s64 sum = 0;
	u64 ran = 0;
	u32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		if (!slot) {
			sum += cpu_ctx(cpu)->root_runnable;
			ran += cpu_ctx(cpu)->root_used;
			continue;
		}
		cc = bpf_map_lookup_percpu_elem(&cg_cpus, &slot, cpu);
		if (cc) {
			sum += cc->runnable;
			ran += cc->used;
		}
	}
	*used = ran;
	return sum > 0 ? sum : 0;
}

/* factor = total x hw / sum, in CG_FX_ONE units, without overflow. */
static __always_inline u32 cg_factor(u64 total, u64 hw, u64 sum)
{
	u64 f;

	if (!sum || !hw)
		return CG_FX_ONE;
	if (total < 1ULL << 32)
		f = (total * hw / sum) >> (WSCHED_CG_HW_SHIFT - WSCHED_CG_FX_SHIFT);
	else
		f = (hw >> (WSCHED_CG_HW_SHIFT - WSCHED_CG_FX_SHIFT)) * total / sum;
	if (f < CG_FX_MIN)
		return CG_FX_MIN;
	return f > CG_FX_MAX ? CG_FX_MAX : f;
}

static u64 cg_total;		/* summed runnable weight, for cg_refresh() */

/*
 * The weight @cg competes with among its siblings: cpu.weight, or 1 for a
 * cgroup marked cpu.idle, as the kernel's SCHED_IDLE groups get its least
 * weight: it runs where its siblings leave CPU time, and gets about 1/101
 * beside a sibling of weight 100 (2% or so after the lead cap, as a
 * SCHED_IDLE task).
 */
static __always_inline u32 cg_weight(const struct wsched_cgroup *cg)
{
	return cg->idle ? 1 : cg->weight;
}

/*
 * The three passes of cg_refresh(), one slot each, verified once each as
 * global functions (in one loop over levels and slots the verifier's
 * paths multiply past its limit).
 */
__noinline int cg_pass_own(u32 s)
{
	struct wsched_cgroup *cg = cg_at(s);
	u64 used;

	if (!cg || (s && !cg->id) || s >= WSCHED_MAX_CGROUPS)
		return 0;
	cg->own = cg_own(s, &used);
	cg_usage_sum[s] = used + cg->usage_gone;
	cg->sum = cg->own;
	cg->active = cg->own > 0;
	cg_total += cg->own;
	return cg->own > 0;
}

__noinline int cg_pass_up(u32 s, u32 level)
{
	struct wsched_cgroup *cg = cg_at(s), *pc;

	if (!s || !cg || !cg->id || cg->level != level || !(pc = cg_at(cg->parent)))
		return 0;
	if (s < WSCHED_MAX_CGROUPS && (u32)cg->parent < WSCHED_MAX_CGROUPS)
		cg_usage_sum[cg->parent] += cg_usage_sum[s];
	if (!cg->active)
		return 0;
	pc->sum += cg_weight(cg);
	pc->active = 1;
	return 0;
}

__noinline int cg_pass_down(u32 s, u32 level)
{
	struct wsched_cgroup *cg = cg_at(s), *pc;

	if (!s || !cg || !cg->id || cg->level != level || !(pc = cg_at(cg->parent)))
		return 0;
	if (s < WSCHED_MAX_CGROUPS && cg_usage_sum[s] > cg->usage_ns)
		cg->usage_ns = cg_usage_sum[s];
	cg->limited = cg->quota_ns || pc->limited;
	if (!cg->active || !pc->sum)
		return 0;
	cg->hw = pc->hw * cg_weight(cg) / pc->sum;
	if (cg->own)
		cg->factor = cg_factor(cg_total, cg->hw, cg->sum);
	return 0;
}

/*
 * The shares, from the counts: which cgroups have work (from the deepest
 * level up), each active cgroup's hw (from the root down), each one's
 * factor. Returns how many cgroups have runnable tasks of their own.
 */
static __always_inline u32 cg_refresh(void)
{
	u32 end = cg_slots_end, maxl = cg_max_level, s, i, nr_own = 0;
	struct wsched_cgroup *root;

	if (end > WSCHED_MAX_CGROUPS)
		end = WSCHED_MAX_CGROUPS;
	if (maxl > WSCHED_MAX_CG_LEVEL)
		maxl = WSCHED_MAX_CG_LEVEL;
	cg_total = 0;
	bpf_for(s, 0, end)
		nr_own += cg_pass_own(s);
	bpf_for(i, 0, maxl)
		bpf_for(s, 1, end)
			cg_pass_up(s, maxl - i);
	if ((root = cg_at(0))) {
		if (cg_usage_sum[0] > root->usage_ns)
			root->usage_ns = cg_usage_sum[0];
		root->hw = CG_HW_ONE;
		root->factor = cg_factor(cg_total, root->hw, root->sum);
	}
	bpf_for(i, 1, maxl + 1)
		bpf_for(s, 1, end)
			cg_pass_down(s, i);
	STAT_INC(nr_cg_refreshes);
	return nr_own;
}

/* A free slot, searched from cg_next on, or -1. */
static __always_inline s32 cg_slot_take(void)
{
	struct wsched_cgroup *cg;
	u32 i, s;

	bpf_for(i, 1, WSCHED_MAX_CGROUPS) {
		s = (cg_next + i - 1) % WSCHED_MAX_CGROUPS;
		if (!s || !(cg = cg_at(s)) || cg->id)
			continue;
		cg_next = s + 1;
		return s;
	}
	return -1;
}

/*
 * ops.cgroup_init: a slot for @cgrp, under its parent's; one without a
 * free slot or deeper than WSCHED_MAX_CG_LEVEL is linked to its parent's
 * slot and scheduled as part of it. Never fails: a failure would refuse
 * the cgroup's creation, or the scheduler's load.
 */
static __always_inline void cg_set_quota(struct wsched_cgroup *cg, u64 period_us, u64 quota_us,
					 u64 burst_us);

static __always_inline void cg_init(struct cgroup *cgrp, u32 weight, u64 period_us,
				    u64 quota_us, u64 burst_us)
{
	struct wsched_cgroup *cg;
	struct cg_link *l, *pl;
	struct cgroup *parent;
	struct cg_cpu *cc;
	s32 slot, pslot = 0;
	u32 level = cgrp->level, cpu;

	l = bpf_cgrp_storage_get(&cg_links, cgrp, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!l) {
		STAT_INC(nr_cgroups_flattened);
		return;
	}
	if (!level) {
		l->slot = 0;
		if ((cg = cg_at(0))) {
			cg->id = cgrp->kn->id;
			cg->parent = -1;
			cg->weight = weight;
			cg->factor = CG_FX_ONE;
		}
		if (!cg_slots_end)
			cg_slots_end = 1;
		return;
	}
	if ((parent = bpf_cgroup_ancestor(cgrp, level - 1))) {
		pl = bpf_cgrp_storage_get(&cg_links, parent, 0, 0);
		if (pl && pl->slot > 0)
			pslot = pl->slot;
		bpf_cgroup_release(parent);
	}
	slot = level <= WSCHED_MAX_CG_LEVEL ? cg_slot_take() : -1;
	if (slot < 0 || !(cg = cg_at(slot))) {
		l->slot = pslot;
		STAT_INC(nr_cgroups_flattened);
		return;
	}
	bpf_for(cpu, 0, nr_cpus) {
		cc = bpf_map_lookup_percpu_elem(&cg_cpus, &slot, cpu);
		if (cc) {
			cc->runnable = 0;
			cc->used = 0;
		}
	}
	if (scx_bpf_create_dsq(CG_DSQ(slot), -1)) {
		l->slot = pslot;
		STAT_INC(nr_cgroups_flattened);
		return;
	}
	__builtin_memset(cg, 0, sizeof(*cg));
	cg->parent = pslot;
	cg->level = level;
	cg->weight = weight;
	cg->factor = CG_FX_ONE;
	if (pslot > 0) {
		struct wsched_cgroup *pc = cg_at(pslot);

		cg->limited = pc && pc->limited;
	}
	cg_set_quota(cg, period_us, quota_us, burst_us);
	if (level > cg_max_level)
		cg_max_level = level;
	if ((u32)slot >= cg_slots_end)
		cg_slots_end = slot + 1;
	l->slot = slot;
	/* last: the timer reads a slot whose id is set (BPF has no fence; a
	 * weakly ordered CPU may show it half set, to one refresh) */
	barrier();
	cg->id = cgrp->kn->id;
}

/* ops.cgroup_exit: @cgrp's own slot is freed (a parent's it was linked to
 * is not); its CPU time stays in its parent's, as in cpu.stat (what it ran
 * since the last refresh is lost). */
static __always_inline void cg_exit(struct cgroup *cgrp)
{
	struct wsched_cgroup *cg, *pc;
	struct cg_link *l;

	if (!cgrp->level || !(l = bpf_cgrp_storage_get(&cg_links, cgrp, 0, 0)))
		return;
	if (l->slot > 0 && (cg = cg_at(l->slot)) && cg->id == cgrp->kn->id) {
		scx_bpf_destroy_dsq(CG_DSQ(l->slot));
		l->slot = CG_DEAD;
		if (cg->quota_ns && cg_quotas)
			cg_quotas--;
		cg->id = 0;
		/* after: a refresh that sees it in the parent no longer adds
		 * the freed slot's own */
		barrier();
		if ((pc = cg_at(cg->parent)))
			__sync_fetch_and_add(&pc->usage_gone, cg->usage_ns);
	}
}

/* The slot @cgrp owns (not one it is flattened into), or NULL. */
static __always_inline struct wsched_cgroup *cg_own_slot(struct cgroup *cgrp)
{
	struct wsched_cgroup *cg;
	struct cg_link *l;
	s32 slot = 0;

	if (cgrp->level) {
		if (!(l = bpf_cgrp_storage_get(&cg_links, cgrp, 0, 0)) || l->slot <= 0)
			return NULL;
		slot = l->slot;
	}
	cg = cg_at(slot);
	return cg && cg->id == cgrp->kn->id ? cg : NULL;
}

/* ops.cgroup_set_idle (6.19 and later), and cpu.idle at ops.cgroup_init. */
static __always_inline void cg_set_idle(struct cgroup *cgrp, bool idle)
{
	struct wsched_cgroup *cg = cg_own_slot(cgrp);

	if (cgrp->level && cg)
		cg->idle = idle;
}

/* ops.cgroup_set_weight. */
static __always_inline void cg_set_weight(struct cgroup *cgrp, u32 weight)
{
	struct wsched_cgroup *cg = cg_own_slot(cgrp);

	if (cg)
		cg->weight = weight;
}

/*
 * cpu.max "max" comes as a quota of ~0 (RUNTIME_INF); anything past a day
 * a period is as good as none. The burst is what may be saved from idle
 * periods on top of a period's quota, as the kernel documents it.
 */
#define CG_QUOTA_NONE_US	(86400ULL * 1000 * 1000)

static __always_inline void cg_set_quota(struct wsched_cgroup *cg, u64 period_us, u64 quota_us,
					 u64 burst_us)
{
	bool had = cg->quota_ns;

	if (!period_us || quota_us >= CG_QUOTA_NONE_US) {
		cg->quota_ns = 0;
		if (had && cg_quotas)
			cg_quotas--;
		/* its parked tasks wait for the quota pass, which runs while
		 * a quota exists: this may have been the last */
		if (cg->throttled_at)
			cg_release_due = 1;
		return;
	}
	cg->period_ns = period_us * 1000;
	cg->quota_ns = quota_us * 1000;
	cg->burst_ns = burst_us < CG_QUOTA_NONE_US ? burst_us * 1000 : 0;
	if (!had) {
		cg->budget = cg->quota_ns;
		cg->period_end = scx_bpf_now() + cg->period_ns;
		cg->limited = 1;
		cg_quotas++;
	}
}

/* ops.cgroup_set_bandwidth (the kernels that have it: 6.17 and later). */
static __always_inline void cg_set_bandwidth(struct cgroup *cgrp, u64 period_us, u64 quota_us,
					     u64 burst_us)
{
	struct wsched_cgroup *cg = cg_own_slot(cgrp);

	if (cgrp->level && cg)
		cg_set_quota(cg, period_us, quota_us, burst_us);
}

/*
 * The outermost throttled cgroup on the path of @slot (a task's), or -1:
 * the task must wait for that cgroup's next period. Without a quota
 * anywhere, no lookup.
 */
static __always_inline s32 cg_throttled(s32 slot)
{
	struct wsched_cgroup *cg;
	s32 found = -1;
	u32 i;

	if (!cg_quotas || slot <= 0 || !(cg = cg_at(slot)) || !cg->limited)
		return -1;
	bpf_for(i, 0, WSCHED_MAX_CG_LEVEL + 1) {
		if (slot <= 0 || !(cg = cg_at(slot)))
			break;
		if (cg->throttled_at)
			found = slot;
		slot = cg->parent;
	}
	return found;
}

/* ... for @p's cgroup, with no cgroup storage lookup while no quota exists. */
static __always_inline s32 cg_task_throttled(struct task_struct *p)
{
	return cg_quotas ? cg_throttled(cg_task_slot(p)) : -1;
}

/* Charges @ran ns of CPU time to every quota on @slot's path, and throttles
 * the cgroups whose budget it used up (atomically: every CPU charges). */
static __always_inline void cg_consume(s32 slot, u64 ran)
{
	struct wsched_cgroup *cg;
	u32 i;

	if (!cg_quotas || !ran || slot <= 0 || !(cg = cg_at(slot)) || !cg->limited)
		return;
	bpf_for(i, 0, WSCHED_MAX_CG_LEVEL + 1) {
		if (slot <= 0 || !(cg = cg_at(slot)))
			break;
		if (cg->quota_ns &&
		    __sync_fetch_and_add(&cg->budget, -(s64)ran) <= (s64)ran && !cg->throttled_at) {
			cg->throttled_at = scx_bpf_now() ?: 1;
			cg->nr_throttled++;
		}
		slot = cg->parent;
	}
}

#endif /* __SCX_WSCHED_CGROUP_BPF_H */
