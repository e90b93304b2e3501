/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched's event counters: the one-entry per-CPU array wsched_stats
 * (struct wsched_stats, listed in scx_wsched.h), which the loader reads,
 * and STAT_INC() and STAT_ADD(), the ways BPF code counts an event or sums
 * an amount. Every fragment that counts includes this, in any order.
 */
#ifndef __SCX_WSCHED_STATS_BPF_H
#define __SCX_WSCHED_STATS_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct wsched_stats);
} wsched_stats SEC(".maps");

static __always_inline struct wsched_stats *stats(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&wsched_stats, &zero);
}

/* Adds one to this CPU's copy; the loader sums the copies. */
#define STAT_INC(field) do {					\
	struct wsched_stats *__s = stats();			\
	if (__s)						\
		__s->field++;					\
} while (0)

/* Adds @v to this CPU's copy of a sum. */
#define STAT_ADD(field, v) do {					\
	struct wsched_stats *__s = stats();			\
	if (__s)						\
		__s->field += (v);				\
} while (0)

#endif /* __SCX_WSCHED_STATS_BPF_H */
