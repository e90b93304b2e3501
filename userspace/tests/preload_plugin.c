// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * A plugin that uses OpenMP locks, for preload_test's dlopen scenario: the
 * program that opens it is not linked with libgomp, so libgomp comes and
 * (without the preload's pinning) goes with the plugin.
 */
#include <omp.h>

int plugin_lock_depth(unsigned (*depth)(void));

/* The caller's section depth while it holds an omp lock, then after. */
int plugin_lock_depth(unsigned (*depth)(void))
{
	omp_lock_t l;
	int in, out;

	omp_init_lock(&l);
	omp_set_lock(&l);
	in = (int)depth();
	omp_unset_lock(&l);
	out = (int)depth();
	omp_destroy_lock(&l);
	return in * 10 + out;
}
