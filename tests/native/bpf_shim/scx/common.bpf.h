/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A userspace stand-in for the kernel's scx/common.bpf.h, so that the
 * scheduler's policy fragments (bpf/scx_wsched_*.bpf.h) compile and run
 * natively in tests/native/scx_wsched_arith_test.c. Found before the real
 * header by its -I; nothing from the kernel's headers is used.
 *
 * It gives the fragments just what they use: the types, kernel structs
 * with only the fields read (struct task_struct, struct rq), and the
 * helpers and kfuncs as functions over a fake machine the test sets up:
 * a clock (shim_now), a deque head and a length per CPU (shim_dsq_head[],
 * shim_dsq_len[]), and records of what the code asked for (kicks, slices
 * set, timers started). A map is a plain array per map (shim_lookup()),
 * the libbpf map-definition macros made into a struct whose member types
 * give its value size and length, as they do for BTF.
 *
 * What a kfunc would refuse (a bad CPU, a NULL task) the fakes do not
 * check: the tests call the fragments' functions as the ops do.
 */
#ifndef __WS_BPF_SHIM_COMMON_BPF_H
#define __WS_BPF_SHIM_COMMON_BPF_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;

#ifndef __always_inline		/* glibc's sys/cdefs.h has one */
#define __always_inline	inline __attribute__((always_inline))
#endif
#define __ksym
#define __weak		__attribute__((weak))
#define SEC(name)
#define __uint(name, val)	int (*name)[val]
#define __type(name, val)	typeof(val) *name
#define barrier_var(v)	__asm__ __volatile__("" : "+r"(v))
#define barrier()	__asm__ __volatile__("" ::: "memory")
#define __noinline	__attribute__((noinline))

enum {
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_CGRP_STORAGE = 32,
};
#define BPF_F_NO_PREALLOC		1
#define BPF_LOCAL_STORAGE_GET_F_CREATE	1

/* The scx enums the fragments name, with the kernel's values where a
 * value matters to the test (none does: they are compared and passed). */
enum scx_dsq_id_flags { SCX_DSQ_LOCAL = 0x8000000000000002LL };
enum scx_kick_flags { SCX_KICK_IDLE = 1, SCX_KICK_PREEMPT = 2 };
enum scx_ent_flags { SCX_TASK_QUEUED = 1 };
enum scx_dsq_iter_flags { SCX_DSQ_ITER_REV = 1 };
enum scx_wake_flags { SCX_WAKE_SYNC = 4 };
enum scx_enq_flags { SCX_ENQ_WAKEUP = 1 };
enum scx_rq_flags { SCX_RQ_ONLINE = 1, SCX_RQ_IN_DISPATCH = 4 };

/* CO-RE: the shim is its own kernel, where everything exists. */
#define bpf_core_enum_value(type, v)		(v)
#define bpf_core_enum_value_exists(type, v)	1
#define bpf_core_field_exists(f)		1
#define bpf_ksym_exists(sym)			((const void *)(sym) != NULL)

struct cpumask { u64 bits[8]; };	/* 512 CPUs */

struct kernfs_node { u64 id; };
struct cgroup {
	int level;
	struct kernfs_node *kn;
	struct cgroup *parent;		/* the shim's own: bpf_cgroup_ancestor() */
	void *storage;			/* the shim's own: bpf_cgrp_storage_get() */
};
struct task_group { struct { struct cgroup *cgroup; } css; };

struct task_struct {
	s32 pid;
	struct task_group *sched_task_group;
	s32 tgid;
	u32 flags;
	s32 on_rq;
	s32 nr_cpus_allowed;
	const struct cpumask *cpus_ptr;
	unsigned long nvcsw;
	unsigned long nivcsw;
	char comm[16];
	struct { u32 cpu; } thread_info;
	struct { u64 sum_exec_runtime; u64 exec_start; } se;
	struct { u64 dsq_vtime; u64 slice; u32 weight; u32 flags;
		 struct scx_dispatch_q *dsq; } scx;
};

/* The deque a queued task is on (p->scx.dsq), by its id. */
struct scx_dispatch_q { u64 id; };
#define BPF_CORE_READ(src, field)	((src)->field)

struct rq {
	s32 cpu;
	struct task_struct *curr;
	struct task_struct *idle;
	u64 clock_task;
	struct { u64 flags; } scx;
};

struct bpf_timer { u64 armed_ns; void *callback; };

/* Wraparound-safe comparison of two clock or vtime values. */
static inline bool time_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/* What the kernel's p->scx.weight makes of a run: 100 is nice 0. */
static inline u64 scale_by_task_weight_inverse(const struct task_struct *p, u64 v)
{
	return v * 100 / p->scx.weight;
}

#define bpf_for(i, start, end)	for ((i) = (start); (i) < (end); (i)++)

/* The fake machine (defined in the test). */
#define SHIM_CPUS	64
extern u64 shim_now;				/* scx_bpf_now(), bpf_ktime_get_ns() */
extern u64 shim_jiffies;
extern u32 shim_prandom;			/* the next bpf_get_prandom_u32() */
extern struct task_struct *shim_dsq_head[SHIM_CPUS];	/* per deque, or NULL */
extern s32 shim_dsq_len[SHIM_CPUS];
extern bool shim_dsq_pinned[SHIM_CPUS];	/* no task there may move */
extern s32 shim_idle_cpu;			/* scx_bpf_pick_idle_cpu(), -1: none */
extern s32 shim_this_cpu;
extern struct task_struct *shim_current;
extern int shim_preempt_count;
extern unsigned int shim_nr_kicks;		/* scx_bpf_kick_cpu() calls */
extern s32 shim_last_kick_cpu;
extern u64 shim_last_kick_flags;
extern struct task_struct *shim_task_by_pid;	/* bpf_task_from_pid() finds it alone */

static inline u64 scx_bpf_now(void) { return shim_now; }
static inline u64 bpf_ktime_get_ns(void) { return shim_now; }
static inline u64 bpf_jiffies64(void) { return shim_jiffies; }
static inline u32 bpf_get_prandom_u32(void) { return shim_prandom; }
static inline s32 bpf_get_smp_processor_id(void) { return shim_this_cpu; }
static inline struct task_struct *bpf_get_current_task_btf(void) { return shim_current; }
static inline s32 scx_bpf_task_cpu(const struct task_struct *p) { return p->thread_info.cpu; }

static inline struct task_struct *__COMPAT_scx_bpf_dsq_peek(u64 dsq)
{
	return dsq < SHIM_CPUS ? shim_dsq_head[dsq] : NULL;
}

static inline s32 scx_bpf_dsq_nr_queued(u64 dsq)
{
	return dsq < SHIM_CPUS ? shim_dsq_len[dsq] : 0;
}

static inline bool scx_bpf_dsq_move_to_local(u64 dsq, u64 flags)
{
	(void)flags;
	if (dsq >= SHIM_CPUS || shim_dsq_len[dsq] <= 0 || shim_dsq_pinned[dsq])
		return false;
	shim_dsq_len[dsq]--;
	return true;
}

static inline void scx_bpf_task_set_dsq_vtime(struct task_struct *p, u64 vt)
{
	p->scx.dsq_vtime = vt;
}

static inline void scx_bpf_task_set_slice(struct task_struct *p, u64 slice)
{
	p->scx.slice = slice;
}

static inline struct task_struct *bpf_task_from_pid(s32 pid)
{
	return shim_task_by_pid && shim_task_by_pid->pid == pid ? shim_task_by_pid : NULL;
}

static inline void bpf_task_release(struct task_struct *p) { (void)p; }

static inline void scx_bpf_kick_cpu(s32 cpu, u64 flags)
{
	shim_nr_kicks++;
	shim_last_kick_cpu = cpu;
	shim_last_kick_flags = flags;
}

static inline s32 scx_bpf_pick_idle_cpu(const struct cpumask *mask, u64 flags)
{
	(void)mask;
	(void)flags;
	return shim_idle_cpu;
}

static inline bool bpf_cpumask_test_cpu(u32 cpu, const struct cpumask *mask)
{
	return cpu < 512 && (mask->bits[cpu / 64] >> (cpu % 64) & 1);
}

static inline bool is_migration_disabled(const struct task_struct *p)
{
	(void)p;
	return false;
}

/* Absent in this fake kernel: bpf_ksym_exists() says so. */
extern struct rq *scx_bpf_cpu_rq(s32 cpu) __weak;
extern struct task_struct *scx_bpf_cpu_curr(s32 cpu) __weak;
extern void scx_bpf_task_set_slice___new(struct task_struct *p, u64 slice) __weak;

static inline void *bpf_this_cpu_ptr(const void *p) { return (void *)p; }

static inline long bpf_timer_init(struct bpf_timer *t, void *map, int clock)
{
	(void)map;
	(void)clock;
	memset(t, 0, sizeof(*t));
	return 0;
}

static inline long bpf_timer_set_callback(struct bpf_timer *t, void *cb)
{
	t->callback = cb;
	return 0;
}

static inline long bpf_timer_start(struct bpf_timer *t, u64 nsecs, u64 flags)
{
	(void)flags;
	t->armed_ns = nsecs;
	return 0;
}

/* One cgroup storage map: the value hangs off the cgroup. */
static inline void *bpf_cgrp_storage_get(void *map, struct cgroup *cgrp, void *v, u64 flags)
{
	(void)map;
	(void)v;
	if (!cgrp->storage && (flags & BPF_LOCAL_STORAGE_GET_F_CREATE))
		cgrp->storage = calloc(1, 64);
	return cgrp->storage;
}

static inline struct cgroup *bpf_cgroup_ancestor(struct cgroup *cgrp, int level)
{
	while (cgrp && cgrp->level > level)
		cgrp = cgrp->parent;
	return cgrp;
}

static inline void bpf_cgroup_release(struct cgroup *cgrp) { (void)cgrp; }

/* The cgroups' parked deques hold nothing in the fake machine. */
#define bpf_for_each(type, p, dsq, flags)	for ((p) = NULL; (p); )
#define BPF_FOR_EACH_ITER			NULL
static inline void scx_bpf_dsq_move_set_vtime(void *it, u64 vt) { (void)it; (void)vt; }
static inline bool scx_bpf_dsq_move_vtime(void *it, struct task_struct *p, u64 dsq, u64 fl)
{
	(void)it; (void)p; (void)dsq; (void)fl;
	return false;
}
/* The fake machine's deques move no task by a direct move. */
static inline void scx_bpf_dsq_move_set_slice(void *it, u64 slice) { (void)it; (void)slice; }
static inline bool scx_bpf_dsq_move(void *it, struct task_struct *p, u64 dsq, u64 fl)
{
	(void)it; (void)p; (void)dsq; (void)fl;
	return false;
}
extern u64 shim_parked_dsq;	/* the deque of the last scx_bpf_dsq_insert_vtime() */
static inline void scx_bpf_dsq_insert_vtime(struct task_struct *p, u64 dsq, u64 slice, u64 vt,
					    u64 fl)
{
	(void)slice; (void)fl;
	p->scx.dsq_vtime = vt;
	shim_parked_dsq = dsq;
}

/* User deques are the fake machine's own; these only succeed. */
static inline s32 scx_bpf_create_dsq(u64 dsq, s32 node) { (void)dsq; (void)node; return 0; }
static inline void scx_bpf_destroy_dsq(u64 dsq) { (void)dsq; }

/* A map's entry @key: a zeroed array per map, made on first use. */
void *shim_lookup(const void *map, size_t value_size, u32 nr, u32 key);
#define bpf_map_lookup_elem(map, key)						\
	shim_lookup((map), sizeof(*(map)->value),				\
		    sizeof(*(map)->max_entries) / sizeof(int), *(const u32 *)(key))
/* ... and CPU @cpu's copy of a per-CPU array's: SHIM_CPUS entries a key. */
#define bpf_map_lookup_percpu_elem(map, key, cpu)				\
	shim_lookup((map), sizeof(*(map)->value),				\
		    sizeof(*(map)->max_entries) / sizeof(int) * SHIM_CPUS,	\
		    *(const u32 *)(key) * SHIM_CPUS + (u32)(cpu))

#endif /* __WS_BPF_SHIM_COMMON_BPF_H */
