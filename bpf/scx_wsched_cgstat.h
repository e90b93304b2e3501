/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The loader's per-cgroup figures (scx_wsched_cgstat.c): from the BPF map
 * wsched_cgroups, each interval's busiest cgroups by CPU time, with their
 * cpu.weight, cpu.max and throttled time, for --stats and --monitor.
 *
 * cg_report_sample() reads every slot and keeps what it read; the rows it
 * returns are the cgroups (the root left out) that used CPU time or were
 * throttled since the sample before, the busiest first. The first sample
 * after cg_report_new(.., @since) counts from zero at @since (the
 * scheduler's load), or with @since 0 is only the baseline. Paths are the
 * cgroups' under the cgroup2 mount (@root, or with NULL the first in
 * /proc/self/mounts), found by their ids (inode numbers); one removed
 * since reads as "#<id>". Single-threaded.
 */
#ifndef __SCX_WSCHED_CGSTAT_H
#define __SCX_WSCHED_CGSTAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#include "scx_wsched.h"

#define CG_REPORT_MAX_DFL	5	/* --cgroups */
#define CG_PATH_MAX		256

struct cg_row {
	__u64 id;
	int slot;		/* its slot in wsched_cgroups */
	char path[CG_PATH_MAX];
	double cpus;		/* CPUs used over the interval */
	double throttled;	/* fraction of the interval throttled, 0..1 */
	struct wsched_cgroup cg;	/* the slot as read */
};

struct cg_report;

struct cg_report *cg_report_new(const char *root, double since);
void cg_report_free(struct cg_report *r);

/*
 * Reads the slots of map @fd (NULL slot values: none) at @now seconds
 * (CLOCK_MONOTONIC), and fills @rows with at most @max of the interval's
 * busiest. Returns how many, or -1 if the map cannot be read.
 */
int cg_report_sample(struct cg_report *r, int fd, double now, struct cg_row *rows, size_t max);

/* From an array of slots as the map holds them (the unit test's way in). */
int cg_report_slots(struct cg_report *r, const struct wsched_cgroup *slots, size_t nr,
		    double now, struct cg_row *rows, size_t max);

/* The rows as `,"cgroups":[...]` (a member of the caller's JSON object). */
void cg_report_json(FILE *f, const struct cg_row *rows, int nr);
/* ... as one line of key=value pairs each (--stats). */
void cg_report_pairs(FILE *f, const struct cg_row *rows, int nr);
/* ... as a table under a --monitor line. */
void cg_report_table(FILE *f, const struct cg_row *rows, int nr);

#endif /* __SCX_WSCHED_CGSTAT_H */
