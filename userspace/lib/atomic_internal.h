// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * The atomics shim the lock-free algorithms are written against, so that the
 * same algorithm text compiles as C11 (this file) and as C++ under the Relacy
 * model checker (userspace/tests/relacy_shim.hpp defines the same names on
 * rl::atomic). Internal to libwsched; never installed.
 *
 * WS_NO_FENCES selects the fence-free variant: every place the algorithm uses
 * a stand-alone fence is rewritten by the algorithm itself (see deque_impl.h)
 * into release/acquire/seq_cst operations. ThreadSanitizer does not model
 * atomic_thread_fence, so the TSAN build uses it.
 */
#ifndef WSCHED_ATOMIC_INTERNAL_H
#define WSCHED_ATOMIC_INTERNAL_H

#include <stdatomic.h>
#include <stdlib.h>

#if defined(__SANITIZE_THREAD__)
#define WS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WS_TSAN 1
#endif
#endif
#if defined(WS_TSAN) && !defined(WS_NO_FENCES)
#error "ThreadSanitizer does not model atomic_thread_fence: build with -DWS_NO_FENCES"
#endif

#define WS_ATOMIC(T)		_Atomic(T)
#define WS_MO_RLX		memory_order_relaxed
#define WS_MO_ACQ		memory_order_acquire
#define WS_MO_REL		memory_order_release
#define WS_MO_ACQREL		memory_order_acq_rel
#define WS_MO_SC		memory_order_seq_cst

#define ws_ld(p, mo)		atomic_load_explicit((p), mo)
#define ws_st(p, v, mo)		atomic_store_explicit((p), (v), mo)
#define ws_xchg(p, v, mo)	atomic_exchange_explicit((p), (v), mo)
#define ws_fadd(p, v, mo)	atomic_fetch_add_explicit((p), (v), mo)
#define ws_fsub(p, v, mo)	atomic_fetch_sub_explicit((p), (v), mo)
/* Strong CAS; *(e) is updated with the current value on failure. */
#define ws_cas(p, e, v, mos, mof) \
	atomic_compare_exchange_strong_explicit((p), (e), (v), mos, mof)
#define ws_fence(mo)		atomic_thread_fence(mo)
#define ws_init(p, v)		atomic_init((p), (v))

#define WS_CACHE_ALIGNED	_Alignas(64)

#define ws_likely(x)		__builtin_expect(!!(x), 1)
#define ws_unlikely(x)		__builtin_expect(!!(x), 0)

#if defined(__x86_64__) || defined(__i386__)
#define ws_cpu_relax()		__builtin_ia32_pause()
#elif defined(__aarch64__)
#define ws_cpu_relax()		__asm__ __volatile__("yield" ::: "memory")
#else
#define ws_cpu_relax()		__asm__ __volatile__("" ::: "memory")
#endif

#endif /* WSCHED_ATOMIC_INTERNAL_H */
