// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * The thin C++ shim that lets Relacy (relacy-dev) model-check the deques: it
 * maps the atomics names deque_impl.h is written against (see
 * userspace/lib/atomic_internal.h for the C11 mapping), and those of
 * wsched/wdeque_impl.h (GCC builtins by default), onto rl::atomic, whose
 * every operation Relacy intercepts, and buffer allocation onto Relacy's
 * tracked new/delete so that a thief touching a freed buffer is reported.
 */
#ifndef WSCHED_RELACY_SHIM_HPP
#define WSCHED_RELACY_SHIM_HPP

#include <stdint.h>
#include <relacy/relacy.hpp>

#define WS_ATOMIC(T)		rl::atomic<T>
#define WS_CACHE_ALIGNED
#define WS_MO_RLX		rl::mo_relaxed, $
#define WS_MO_ACQ		rl::mo_acquire, $
#define WS_MO_REL		rl::mo_release, $
#define WS_MO_ACQREL		rl::mo_acq_rel, $
#define WS_MO_SC		rl::mo_seq_cst, $

#define ws_ld(p, mo)		((p)->load(mo))
#define ws_st(p, v, mo)		((p)->store((v), mo))
#define ws_xchg(p, v, mo)	((p)->exchange((v), mo))
#define ws_fadd(p, v, mo)	((p)->fetch_add((v), mo))
#define ws_fsub(p, v, mo)	((p)->fetch_sub((v), mo))
#define ws_cas(p, e, v, mos, mof) ((p)->compare_exchange_strong(*(e), (v), mos, mof))
#define ws_fence(mo)		rl::atomic_thread_fence(mo)
#define ws_init(p, v)		((p)->store((v), rl::mo_relaxed, $))
#define ws_likely(x)		(x)
#define ws_unlikely(x)		(x)

/* The same for the runtime's split deque (wsched/wdeque_impl.h), whose
 * macros carry their own prefix because the header is also included by the
 * library's public headers. */
#define _WS_WDQ_SHIM
#define _WS_WDQ_ATOMIC(T)		rl::atomic<T>
#define _WS_WDQ_RLX			rl::mo_relaxed, $
#define _WS_WDQ_ACQ			rl::mo_acquire, $
#define _WS_WDQ_REL			rl::mo_release, $
#define _WS_WDQ_SC			rl::mo_seq_cst, $
#define _ws_wdq_ld(p, mo)		((p)->load(mo))
#define _ws_wdq_st(p, v, mo)		((p)->store((v), mo))
#define _ws_wdq_xchg(p, v, mo)		((p)->exchange((v), mo))
#define _ws_wdq_or(p, v, mo)		((p)->fetch_or((v), mo))
#define _ws_wdq_cas(p, e, v, mos, mof)	((p)->compare_exchange_strong(*(e), (v), mos, mof))
#define _ws_wdq_likely(x)		(x)
#define _ws_wdq_unlikely(x)		(x)

/* Instantiate the deque algorithm inside namespace NS (so that variants with
 * different settings can live in one program). */
#define WS_RELACY_DEQUE_ALLOCATORS						\
	struct ws_deque_buf;							\
	static ws_deque_buf *ws__buf_alloc(int64_t cap);			\
	static void ws__buf_free(ws_deque_buf *a);

/* Relacy's delete proxy does not handle arrays: slots live in one object
 * (models use at most WS_RELACY_MAX_CAP slots). */
#define WS_RELACY_MAX_CAP 16
struct ws_relacy_slots {
	rl::atomic<void *> s[WS_RELACY_MAX_CAP];
};

#define WS_RELACY_DEQUE_ALLOCATORS_DEF						\
	static ws_deque_buf *ws__buf_alloc(int64_t cap)				\
	{									\
		ws_deque_buf *a;						\
		ws_relacy_slots *s;						\
		if (cap > WS_RELACY_MAX_CAP)					\
			return 0;						\
		a = (ws_deque_buf *)rl::rl_malloc(sizeof(*a), $);		\
		s = (ws_relacy_slots *)rl::rl_malloc(sizeof(*s), $);		\
		::new (s) ws_relacy_slots;					\
		a->cap = cap;							\
		a->next = 0;							\
		a->slot = s->s;							\
		for (int64_t i = 0; i < cap; i++)				\
			a->slot[i].store(0, rl::mo_relaxed, $);			\
		return a;							\
	}									\
	static void ws__buf_free(ws_deque_buf *a)				\
	{									\
		ws_relacy_slots *s = reinterpret_cast<ws_relacy_slots *>(a->slot); \
		s->~ws_relacy_slots();						\
		rl::rl_free(s, $);						\
		rl::rl_free(a, $);						\
	}

#endif
