// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * hint_internal.h - what hint.c offers the rest of libwsched beyond the
 * public wsched/thread.h.
 */
#ifndef WS_HINT_INTERNAL_H
#define WS_HINT_INTERNAL_H

/* Map this process's hint slots without registering the caller: 0 when
 * scx_wsched serves hints to this process, else -errno (as for
 * ws_thread_register). Used to choose a pool's yield path (yield.c). */
int _ws_hint_connect(void);

#endif /* WS_HINT_INTERNAL_H */
