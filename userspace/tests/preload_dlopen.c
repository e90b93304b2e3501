// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * preload_test's dlopen scenario, a program not linked with libgomp: open
 * a plugin that uses OpenMP locks, check that the preload marks them, close
 * it, and check that libgomp stayed mapped (the preload keeps the addresses
 * it resolved) and that a second open works the same. Prints "ok" or
 * "FAIL: ..." and exits 0 or 1. usage: preload_dlopen PLUGIN.so
 */
#include <dlfcn.h>
#include <stdio.h>

#include "wsched/hint.h"

static const struct ws_hint_slot *(*slot_fn)(void);

static unsigned depth(void)
{
	return slot_fn()->cs_depth;
}

static int once(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	int (*fn)(unsigned (*)(void));
	int r;

	if (!h) {
		printf("FAIL: dlopen %s: %s\n", path, dlerror());
		return -1;
	}
	fn = (int (*)(unsigned (*)(void)))dlsym(h, "plugin_lock_depth");
	r = fn ? fn(depth) : -1;
	dlclose(h);
	return r;
}

int main(int argc, char **argv)
{
	int r;

	slot_fn = (const struct ws_hint_slot *(*)(void))dlsym(RTLD_DEFAULT, "wsched_preload_slot");
	if (argc != 2 || !slot_fn) {
		printf("FAIL: usage: preload_dlopen PLUGIN.so, under the preload\n");
		return 1;
	}
	if (dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
		printf("FAIL: libgomp is loaded before the plugin\n");
		return 1;
	}
	r = once(argv[1]);
	if (r != 10) {
		printf("FAIL: first open: depth in/out %d (want 10)\n", r);
		return 1;
	}
	if (!dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
		printf("FAIL: libgomp was unloaded with the plugin; the preload's addresses dangle\n");
		return 1;
	}
	r = once(argv[1]);
	if (r != 10) {
		printf("FAIL: second open: depth in/out %d (want 10)\n", r);
		return 1;
	}
	printf("ok\n");
	return 0;
}
