// SPDX-License-Identifier: LGPL-2.1-only OR BSD-2-Clause
/*
 * The wsched benchmark kernels, written once. bench_c.c includes this file
 * twice: with BK_SPAWN/BK_SYNC mapped to ws_spawn/ws_sync (the wsched
 * runtime), and with BK_SPAWN mapped to a plain call and BK_SYNC to nothing
 * (the serial runtime): the same C code, compiled with the same flags.
 *
 * The includer defines: K(name) (suffixes names), BK_W (type of the worker
 * argument), BK_TASK (frame type), BK_SPAWN(w, t, fn, arg), BK_SYNC(w, t),
 * BK_PFOR(w, lo, hi, grain, body, arg).
 */

/* ---------------------------------------------------------------- fib */
struct K(fibarg) {
	int n, cutoff;
	long r;
};

/*
 * Spawning at every level (the default, CUTOFF 1). Kept apart from the
 * cutoff variant below on purpose: a cutoff read and copied at every level
 * and a call at every leaf made gcc's serial fib(35) 2-3x slower (0.066-
 * 0.093 s against 0.025), which inflated the serial baseline that the
 * wsched/serial ratio is measured against.
 */
static int K(fib_task)(BK_W w, void *arg)
{
	struct K(fibarg) *f = arg, a, b;
	BK_TASK t;

	if (f->n < 2) {
		f->r = f->n;
		return 0;
	}
	a.n = f->n - 1;
	b.n = f->n - 2;
	BK_SPAWN(w, &t, K(fib_task), &a);
	K(fib_task)(w, &b);
	BK_SYNC(w, &t);
	f->r = a.r + b.r;
	return 0;
}

/* CUTOFF > 1: fib(n <= CUTOFF) by serial recursion (a coarse grain). */
static int K(fib_cut_task)(BK_W w, void *arg)
{
	struct K(fibarg) *f = arg, a, b;
	BK_TASK t;

	if (f->n <= f->cutoff) {
		f->r = fib_serial(f->n);
		return 0;
	}
	a.n = f->n - 1;
	b.n = f->n - 2;
	a.cutoff = b.cutoff = f->cutoff;
	BK_SPAWN(w, &t, K(fib_cut_task), &a);
	K(fib_cut_task)(w, &b);
	BK_SYNC(w, &t);
	f->r = a.r + b.r;
	return 0;
}

/* ---------------------------------------------------------------- nqueens */
struct K(nqarg) {
	uint32_t mask, cols, d1, d2;
	int row, cutoff;
	long r;
};

static int K(nq_task)(BK_W w, void *arg)
{
	struct K(nqarg) *q = arg, sub[32];
	BK_TASK t[32];
	uint32_t avail;
	int k = 0;

	if (q->row >= q->cutoff) {
		q->r = nq_serial_bits(q->mask, q->cols, q->d1, q->d2);
		return 0;
	}
	avail = q->mask & ~(q->cols | q->d1 | q->d2);
	while (avail) {
		uint32_t bit = avail & -avail;

		avail &= avail - 1;
		sub[k].mask = q->mask;
		sub[k].cols = q->cols | bit;
		sub[k].d1 = ((q->d1 | bit) << 1) & q->mask;
		sub[k].d2 = (q->d2 | bit) >> 1;
		sub[k].row = q->row + 1;
		sub[k].cutoff = q->cutoff;
		BK_SPAWN(w, &t[k], K(nq_task), &sub[k]);
		k++;
	}
	q->r = 0;
	while (k--) {
		BK_SYNC(w, &t[k]);
		q->r += sub[k].r;
	}
	return 0;
}

/* ---------------------------------------------------------------- uts */
struct K(utsarg) {
	const struct uts_params *u;
	uint64_t state;
	int lo, hi;		/* children range, for wide nodes */
	long count;
};

static int K(uts_node)(BK_W w, void *arg);

/* Children [lo, hi) of a wide node (the root), split in halves. */
static int K(uts_range)(BK_W w, void *arg)
{
	struct K(utsarg) *a = arg;

	if (a->hi - a->lo == 1) {
		struct K(utsarg) c = { a->u, uts_hash(a->state + (uint64_t)a->lo + 1), 0, 0, 0 };

		K(uts_node)(w, &c);
		a->count = c.count;
	} else {
		int mid = a->lo + (a->hi - a->lo) / 2;
		struct K(utsarg) l = { a->u, a->state, a->lo, mid, 0 };
		struct K(utsarg) r = { a->u, a->state, mid, a->hi, 0 };
		BK_TASK t;

		BK_SPAWN(w, &t, K(uts_range), &l);
		K(uts_range)(w, &r);
		BK_SYNC(w, &t);
		a->count = l.count + r.count;
	}
	return 0;
}

static int K(uts_node)(BK_W w, void *arg)
{
	struct K(utsarg) *a = arg, sub[16];
	const struct uts_params *u = a->u;
	uint64_t x = a->state;
	BK_TASK t[16];
	int i, n;

	for (i = 0; i < u->g; i++)		/* the node's work */
		x = uts_hash(x);
	n = uts_hash(a->state ^ 0x5bd1e995u) < u->q_threshold ? u->m : 0;
	__asm__ __volatile__("" : : "r"(x));	/* keep the work */
	a->count = 1;
	for (i = 0; i < n; i++) {
		sub[i] = (struct K(utsarg)){ u, uts_hash(a->state + (uint64_t)i + 1), 0, 0, 0 };
		BK_SPAWN(w, &t[i], K(uts_node), &sub[i]);
	}
	while (n--) {
		BK_SYNC(w, &t[n]);
		a->count += sub[n].count;
	}
	return 0;
}

static int K(uts_root)(BK_W w, void *arg)
{
	struct K(utsarg) *a = arg;
	struct K(utsarg) r = { a->u, a->state, 0, a->u->b0, 0 };

	K(uts_range)(w, &r);
	a->count = 1 + r.count;
	return 0;
}

/* ---------------------------------------------------------------- sort */
struct K(mergearg) {
	const int *a, *b;
	long na, nb, cutoff;
	int *out;
};

static int K(merge_task)(BK_W w, void *arg)
{
	struct K(mergearg) *m = arg;
	const int *a = m->a, *b = m->b;
	long na = m->na, nb = m->nb, ma, lo, hi;

	if (na + nb <= m->cutoff) {
		merge_serial(a, na, b, nb, m->out);
		return 0;
	}
	if (na < nb) {
		const int *tp = a; long tn = na;

		a = b; na = nb; b = tp; nb = tn;
	}
	ma = na / 2;
	for (lo = 0, hi = nb; lo < hi;) {	/* first b[i] >= a[ma] */
		long mid = lo + (hi - lo) / 2;

		if (b[mid] < a[ma])
			lo = mid + 1;
		else
			hi = mid;
	}
	{
		struct K(mergearg) l = { a, b, ma, lo, m->cutoff, m->out };
		struct K(mergearg) r = { a + ma, b + lo, na - ma, nb - lo, m->cutoff,
					 m->out + ma + lo };
		BK_TASK t;

		BK_SPAWN(w, &t, K(merge_task), &l);
		K(merge_task)(w, &r);
		BK_SYNC(w, &t);
	}
	return 0;
}

struct K(sortarg) {
	int *a, *tmp;
	long n, cutoff;
	int to_tmp;		/* result in tmp instead of a */
};

static int K(sort_task)(BK_W w, void *arg)
{
	struct K(sortarg) *s = arg;
	long h = s->n / 2;

	if (s->n <= s->cutoff) {
		sort_leaf(s->a, s->tmp, s->n);
		if (s->to_tmp)
			memcpy(s->tmp, s->a, sizeof(int) * (size_t)s->n);
		return 0;
	}
	{
		struct K(sortarg) l = { s->a, s->tmp, h, s->cutoff, !s->to_tmp };
		struct K(sortarg) r = { s->a + h, s->tmp + h, s->n - h, s->cutoff, !s->to_tmp };
		const int *src = s->to_tmp ? s->a : s->tmp;
		struct K(mergearg) m = { src, src + h, h, s->n - h, s->cutoff,
					 s->to_tmp ? s->tmp : s->a };
		BK_TASK t;

		BK_SPAWN(w, &t, K(sort_task), &l);
		K(sort_task)(w, &r);
		BK_SYNC(w, &t);
		K(merge_task)(w, &m);
	}
	return 0;
}

/* ---------------------------------------------------------------- matmul */
struct K(mmarg) {
	const double *A, *B;
	double *C;
	int n, grain;
};

static int K(mm_rows)(BK_W w, long lo, long hi, void *arg)
{
	struct K(mmarg) *m = arg;

	matmul_rows(m->A, m->B, m->C, m->n, (int)lo, (int)hi);
	return 0;
}

static int K(mm_task)(BK_W w, void *arg)
{
	struct K(mmarg) *m = arg;

	return BK_PFOR(w, 0, m->n, m->grain, K(mm_rows), m);
}
