// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * Exported wrappers around the deque algorithm in deque_impl.h.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "wsched/deque.h"
#include "atomic_internal.h"

struct ws_deque_buf;
static struct ws_deque_buf *ws__buf_alloc(int64_t cap);
static void ws__buf_free(struct ws_deque_buf *a);

#define WS_DQ_NOMEM (-ENOMEM)
#include "deque_impl.h"

static struct ws_deque_buf *ws__buf_alloc(int64_t cap)
{
	/* calloc: every slot starts as a valid NULL pointer (a stale thief may
	 * read one; it then loses its CAS). */
	struct ws_deque_buf *a = calloc(1, sizeof(*a) + (size_t)cap * sizeof(a->slot[0]));

	if (!a)
		return NULL;
	a->cap = cap;
	a->slot = (WS_ATOMIC(void *) *)(a + 1);
	return a;
}

static void ws__buf_free(struct ws_deque_buf *a)
{
	free(a);
}

struct ws_deque *ws_deque_create(size_t min_capacity)
{
	struct ws_deque *dq;
	int64_t cap = WS_DQ_MIN_CAP;

	if (min_capacity > (size_t)WS_DQ_MAX_CAP) {
		errno = EINVAL;
		return NULL;
	}
	while ((size_t)cap < min_capacity)
		cap *= 2;
	dq = aligned_alloc(64, sizeof(*dq));
	if (!dq) {
		errno = ENOMEM;
		return NULL;
	}
	if (ws__dq_init(dq, cap)) {
		free(dq);
		errno = ENOMEM;
		return NULL;
	}
	return dq;
}

void ws_deque_destroy(struct ws_deque *dq)
{
	if (!dq)
		return;
	ws__dq_fini(dq);
	free(dq);
}

int ws_deque_push(struct ws_deque *dq, void *item)
{
	return ws__dq_push(dq, item);
}

bool ws_deque_pop(struct ws_deque *dq, void **item)
{
	return ws__dq_pop(dq, item);
}

enum ws_steal_result ws_deque_steal(struct ws_deque *dq, void **item)
{
	return (enum ws_steal_result)ws__dq_steal(dq, item);
}

size_t ws_deque_steal_batch(struct ws_deque *dq, void **items, size_t max)
{
	size_t want = (size_t)((ws__dq_size(dq) + 1) / 2), n = 0;

	if (want == 0)
		want = 1;
	if (want > max)
		want = max;
	while (n < want && ws__dq_steal(dq, &items[n]) == WS_STEAL_OK)
		n++;
	return n;
}

size_t ws_deque_size(const struct ws_deque *dq)
{
	return (size_t)ws__dq_size((struct ws_deque *)dq);
}

void ws_deque_get_stats(const struct ws_deque *cdq, struct ws_deque_stats *st)
{
	struct ws_deque *dq = (struct ws_deque *)cdq;

	st->nr_grows = ws_ld(&dq->nr_grows, WS_MO_RLX);
	st->nr_shrinks = ws_ld(&dq->nr_shrinks, WS_MO_RLX);
	st->nr_retired = ws_ld(&dq->nr_retired, WS_MO_RLX);
	st->nr_freed = ws_ld(&dq->nr_freed, WS_MO_RLX);
	st->capacity = (size_t)ws_ld(&dq->cur_cap, WS_MO_RLX);
}
