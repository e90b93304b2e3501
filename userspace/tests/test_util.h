// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * Helpers shared by the libwsched tests. Test helpers are named wt_, their
 * macros WT_ (the library's own names are ws_, its macros WS_); the fake
 * loader's fake_.
 *
 * Sizes of the long tests scale with WSCHED_TEST_SCALE (percent, default
 * WT_TEST_SCALE_DEFAULT: 100 in the normal build, smaller in the TSAN build;
 * the valgrind wrapper sets it in the environment).
 */
#ifndef WSCHED_TEST_UTIL_H
#define WSCHED_TEST_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* The harness kills a test after 30 s; stress runs (bigger WSCHED_TEST_SCALE)
 * need longer. Include this file after kselftest_harness.h. */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300
#endif

#ifndef WT_TEST_SCALE_DEFAULT
#define WT_TEST_SCALE_DEFAULT 100
#endif

static inline long wt_test_scaled(long n)
{
	const char *s = getenv("WSCHED_TEST_SCALE");
	long pct = s ? strtol(s, NULL, 10) : WT_TEST_SCALE_DEFAULT;
	long r;

	if (pct <= 0)
		pct = WT_TEST_SCALE_DEFAULT;
	r = n / 100 * pct;
	return r > 0 ? r : 1;
}

static inline uint64_t wt_test_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* splitmix64: a tiny deterministic PRNG for test inputs. */
static inline uint64_t wt_test_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#endif
