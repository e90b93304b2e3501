/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client side of scx_wsched's hint registration (Documentation/abi.md)
 * spoken by hand, as a hostile or curious process would: for the tests
 * that need to see the loader's answer itself, or to hold an array without
 * libwsched. Needs -I userspace/include (wsched/hint.h).
 */
#ifndef __WSCHED_TESTS_HINT_CLIENT_H
#define __WSCHED_TESTS_HINT_CLIENT_H

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "wsched/hint.h"

/*
 * Read the loader's answer on @sock into *@hello and the descriptor it
 * carried into *@fd (-1: none). Returns what recvmsg() returned.
 */
static inline ssize_t wt_hint_answer(int sock, struct ws_hint_hello *hello, int *fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { hello, sizeof(*hello) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	ssize_t n;

	memset(hello, 0, sizeof(*hello));
	*fd = -1;
	n = recvmsg(sock, &msg, 0);
	for (c = n > 0 ? CMSG_FIRSTHDR(&msg) : NULL; c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	return n;
}

/* A socket connected to the default hint socket, or -errno. */
static inline int wt_hint_connect(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX, .sun_path = WS_HINT_SOCK_PATH };
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), err;

	if (s < 0)
		return -errno;
	if (connect(s, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		close(s);
		return err;
	}
	return s;
}

/* The length of a mapped slot array: whole pages. */
static inline unsigned long wt_hint_map_len(void)
{
	unsigned long page = (unsigned long)sysconf(_SC_PAGESIZE);

	return ((unsigned long)WS_HINT_NR_SLOTS * WS_HINT_SLOT_SIZE + page - 1) / page * page;
}

/* Map the array the loader sent as @fd (closed here), or NULL. */
static inline struct ws_hint_slot *wt_hint_map(int fd)
{
	void *m;

	if (fd < 0)
		return NULL;
	m = mmap(NULL, WS_HINT_NR_SLOTS * WS_HINT_SLOT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* Register this process and return its mapped array, or NULL; the
 * connection stays open (the registration lasts as long as it). */
static inline struct ws_hint_slot *wt_hint_raw_register(void)
{
	struct ws_hint_hello hello;
	int s = wt_hint_connect(), fd;

	if (s < 0)
		return NULL;
	if (wt_hint_answer(s, &hello, &fd) != sizeof(hello)) {
		close(s);
		return NULL;
	}
	return wt_hint_map(fd);
}

#endif /* __WSCHED_TESTS_HINT_CLIENT_H */
