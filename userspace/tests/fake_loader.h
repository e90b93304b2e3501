// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * fake_loader.h - scx_wsched's registration protocol (Documentation/abi.md)
 * served from a thread of a test: a BPF array for each connection, as the
 * loader creates it (bpf(2), so the test runs as root), without any
 * scheduler reading it. Test-only; used by ws_hint_test and preload_test.
 * `array` chooses what is sent instead, for the tests of what the library
 * refuses.
 *
 * fake_start() listens on a socket in a fresh private directory and sets
 * WSCHED_HINT_SOCKET to it; every connection gets the hello and its own
 * array, and stays open. The arrays of the first FAKE_KEPT connections are
 * kept mapped in slots[] for the test to read and write; nr counts all.
 * With silent set, connections are accepted and never answered. With
 * delay_ms set, each answer comes that late; with ack set too, a client's
 * WS_HINT_ASK_ACK is acknowledged first (the loader does so at once).
 */
#ifndef WSCHED_FAKE_LOADER_H
#define WSCHED_FAKE_LOADER_H

#include <linux/bpf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "wsched/hint.h"

#define FAKE_MAP_LEN	(WS_HINT_NR_SLOTS * WS_HINT_SLOT_SIZE)
#define FAKE_KEPT	4

enum fake_array {
	FAKE_BPF,		/* what the loader sends */
	FAKE_BPF_SHORT,		/* a BPF array with half the slots */
	FAKE_MEMFD,		/* a memfd of the right size */
};

/* An mmapable BPF array of @entries slots, or -1 (errno set). */
static int fake_bpf_array(uint32_t entries)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = sizeof(uint32_t);
	attr.value_size = WS_HINT_SLOT_SIZE;
	attr.max_entries = entries;
	attr.map_flags = BPF_F_MMAPABLE;
	return (int)syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
}

static int fake_array_fd(enum fake_array kind)
{
	int fd;

	switch (kind) {
	case FAKE_BPF_SHORT:
		return fake_bpf_array(WS_HINT_NR_SLOTS / 2);
	case FAKE_MEMFD:
		fd = memfd_create("slots", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, FAKE_MAP_LEN)) {
			close(fd);
			fd = -1;
		}
		return fd;
	default:
		return fake_bpf_array(WS_HINT_NR_SLOTS);
	}
}

struct fake_loader {
	char dir[64], path[128];
	int lfd;
	pthread_t th;
	struct ws_hint_hello hello;		/* what it sends */
	struct ws_hint_slot *slots[FAKE_KEPT];	/* the first connections' arrays */
	int nr;					/* connections served */
	bool silent;				/* accept, never answer */
	int delay_ms;				/* answer that late */
	bool ack;				/* acknowledge WS_HINT_ASK_ACK */
	enum fake_array array;			/* what it sends */
};

static void *fake_serve(void *arg)
{
	struct fake_loader *f = arg;

	for (;;) {
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { &f->hello, sizeof(f->hello) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
				      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
		struct cmsghdr *c;
		enum fake_array kind;
		int s = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC), fd, n;

		if (s < 0)
			return NULL;
		/* The connection stays open as long as the client's: it is
		 * the client's registration. */
		if (__atomic_load_n(&f->silent, __ATOMIC_RELAXED))
			continue;
		if (__atomic_load_n(&f->ack, __ATOMIC_RELAXED)) {
			struct ws_hint_hello ack = { .abi_version = f->hello.abi_version };
			unsigned char b = 0;

			if (recv(s, &b, 1, 0) == 1 && b == WS_HINT_ASK_ACK)
				send(s, &ack, sizeof(ack), MSG_NOSIGNAL);
		}
		if (__atomic_load_n(&f->delay_ms, __ATOMIC_RELAXED))
			usleep(__atomic_load_n(&f->delay_ms, __ATOMIC_RELAXED) * 1000);
		memset(cbuf, 0, sizeof(cbuf));		/* cmsg padding too */
		c = CMSG_FIRSTHDR(&msg);
		kind = __atomic_load_n(&f->array, __ATOMIC_RELAXED);
		fd = fake_array_fd(kind);
		if (fd < 0)
			return NULL;
		n = f->nr;
		if (n < FAKE_KEPT && kind == FAKE_BPF)
			f->slots[n] = mmap(NULL, FAKE_MAP_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
					   fd, 0);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
		/* release: the test reads slots[n] after it sees nr > n. */
		__atomic_store_n(&f->nr, n + 1, __ATOMIC_RELEASE);
		sendmsg(s, &msg, MSG_NOSIGNAL);
		close(fd);
	}
}

static int fake_start(struct fake_loader *f, uint32_t version)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };

	int probe = fake_bpf_array(1);

	/* Fail here, not in the serving thread, without BPF (root). */
	if (probe < 0)
		return -1;
	close(probe);
	memset(f, 0, sizeof(*f));
	f->hello = (struct ws_hint_hello){ version, WS_HINT_NR_SLOTS, WS_HINT_SLOT_SIZE, 0 };
	strcpy(f->dir, "/tmp/wsched_fake_loader.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/sock", f->dir);
	strcpy(addr.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(f->lfd, 64))
		return -1;
	setenv("WSCHED_HINT_SOCKET", f->path, 1);
	return pthread_create(&f->th, NULL, fake_serve, f);
}

static void fake_stop(struct fake_loader *f)
{
	shutdown(f->lfd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->lfd);
	unlink(f->path);
	rmdir(f->dir);
	unsetenv("WSCHED_HINT_SOCKET");
}

#endif /* WSCHED_FAKE_LOADER_H */
