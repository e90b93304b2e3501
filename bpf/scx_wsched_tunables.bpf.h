/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_wsched's tunables: the rodata the loader writes before load from
 * its options (scx_wsched(8) says which are an operator's and which are
 * for experiments), with the defaults of scx_wsched.h. Every fragment that
 * uses one includes this; the hint fragment's own (grace_ns,
 * hint_observe) are in scx_wsched_hint.bpf.h, the topology in
 * scx_wsched_cpu.bpf.h.
 *
 * WS_TUNABLE is const volatile, which puts them in .rodata, so the
 * verifier drops every path a value rules out; the native tests of the
 * policy arithmetic define it as volatile to set them between cases.
 */
#ifndef __SCX_WSCHED_TUNABLES_BPF_H
#define __SCX_WSCHED_TUNABLES_BPF_H

#include <scx/common.bpf.h>
#include "scx_wsched.h"

#ifndef WS_TUNABLE
#define WS_TUNABLE const volatile
#endif

WS_TUNABLE u64 slice_ns = WSCHED_SLICE_US_DFL * 1000ULL;
WS_TUNABLE u64 min_slice_ns = WSCHED_SLICE_US_DFL * 1000ULL / 4;
/* --experimental wake-preempt-us: how long a task runs before a waking task earlier in
 * vtime may preempt it (0: never; wake_preempt()). */
WS_TUNABLE u64 wake_preempt_ns = WSCHED_WAKE_PREEMPT_US_DFL * 1000ULL;
/* --slice-lat-us: what a crowded CPU cuts slices down to while a task woken
 * from an interrupt was queued there lately (lat_cut()); min_slice(): none. */
WS_TUNABLE u64 lat_slice_ns = WSCHED_SLICE_LAT_US_DFL * 1000ULL;
WS_TUNABLE bool slice_end_timer = true;	/* not --experimental no-slice-timer: slice_ends */
/*
 * The loader's process id in the kernel's (initial) PID namespace, 0 where
 * it cannot tell: a wakeup of the scheduler's own loader is never counted
 * as woken from an interrupt (ws_irq_wakeup()).
 */
WS_TUNABLE u32 loader_tgid;

/* --slice-min-us: what a crowded CPU cuts slices down to (the loader's
 * default is 1/4 of the base slice, at least 100 us; never above it). */
static __always_inline u64 min_slice(void)
{
	return min_slice_ns && min_slice_ns <= slice_ns ? min_slice_ns : slice_ns;
}

#endif /* __SCX_WSCHED_TUNABLES_BPF_H */
