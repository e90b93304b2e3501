// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * llc_internal.h - the last-level cache a CPU sits behind, read from sysfs.
 *
 * One reader for the library (pool.c: the victims a thief tries first) and
 * for the scx_wsched loader (bpf/scx_wsched.c: the BPF topology tables),
 * which includes this file through the include path bpf/bpf.mk gives it.
 * Static inline, so that it is no symbol of libwsched.so and needs no
 * object of its own in the loader; never installed. The library's dual
 * licence lets the GPL-2.0 loader include it.
 *
 * What each caller does without cache information is its own: the pool
 * leaves such a CPU out of its cache-first victim choice, the loader falls
 * back to the CPU's physical package.
 */
#ifndef WS_LLC_INTERNAL_H
#define WS_LLC_INTERNAL_H

#include <stdio.h>

/* The caches read per CPU: /sys/devices/system/cpu/cpuN/cache/indexM for M
 * below this, or up to the first M whose level cannot be read. */
#define WS_LLC_MAX_INDEX	16

/*
 * The number sysfs file @path starts with, into *@v: 1; 0 if it starts with
 * none; -1 if it cannot be opened. A shared_cpu_list ("0-3,8-11") starts
 * with its first CPU, so no line of it is read beyond that.
 */
static inline int ws_sysfs_first_int(const char *path, int *v)
{
	FILE *f = fopen(path, "re");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%d", v) == 1;
	fclose(f);
	return n;
}

/*
 * The LLC of @cpu: the highest-level cache that lists it (of caches at the
 * same level, the lowest index), named by the first CPU of its
 * shared_cpu_list, so that the CPUs sharing it get the same number. -1
 * without cache information: no cache directory, or no level with a
 * readable list. The walk stops at the first index without a level file;
 * an index whose level or list does not start with a non-negative number
 * is passed over.
 */
static inline int ws_cpu_llc(int cpu)
{
	int idx, n, level, first, best_level = -1, llc = -1;
	char path[256];

	for (idx = 0; idx < WS_LLC_MAX_INDEX; idx++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/level",
			 cpu, idx);
		n = ws_sysfs_first_int(path, &level);
		if (n < 0)
			break;
		if (!n || level <= best_level)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list", cpu, idx);
		if (ws_sysfs_first_int(path, &first) == 1 && first >= 0) {
			best_level = level;
			llc = first;
		}
	}
	return llc;
}

#endif /* WS_LLC_INTERNAL_H */
