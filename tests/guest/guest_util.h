// SPDX-License-Identifier: GPL-2.0
/* Helpers shared by the guest tests (tests/guest/). */
#ifndef WSCHED_GUEST_UTIL_H
#define WSCHED_GUEST_UTIL_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

/* Reads the first line of a small file (sysfs, procfs) into buf, without
 * its newline. Returns 0, -errno when it cannot be opened, -EIO when empty. */
static inline int guest_read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return -errno;
	if (!fgets(buf, len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* Pins the calling thread to @cpu. Returns 0 or -errno. */
static inline int guest_pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

#endif /* WSCHED_GUEST_UTIL_H */
