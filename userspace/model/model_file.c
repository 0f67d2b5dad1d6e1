// SPDX-License-Identifier: MIT
/*
 * Model files: reading, checking and writing them (model_file.h,
 * Documentation/model-format.rst). A file is someone else's bytes: every
 * size, offset, index and count is checked before it is used, so a
 * truncated, corrupted or hostile file gives EINVAL and a reason, never a
 * read out of bounds, and nothing of it reaches the device unchecked.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_file.h"
#include "npu_opcheck.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model files are little-endian and read in place: a big-endian host needs swaps"
#endif

int mf_fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return EINVAL;
}

/* ---- CRC-32 (the polynomial of zlib and PNG, reflected) ---------------- */

uint32_t mf_crc32(const void *data, size_t len)
{
	static uint32_t table[256];
	static int ready;
	const uint8_t *p = data;
	uint32_t crc = 0xffffffffu;

	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
		__atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
	}
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

/* ---- tensors ----------------------------------------------------------- */

/* A model's dtypes are the op library's. */
_Static_assert((int)NPUM_F32 == (int)NPU_DT_F32 && (int)NPUM_F16 == (int)NPU_DT_F16 &&
	       (int)NPUM_BF16 == (int)NPU_DT_BF16 && (int)NPUM_F64 == (int)NPU_DT_F64 &&
	       (int)NPUM_I8 == (int)NPU_DT_I8 && (int)NPUM_I64 == (int)NPU_DT_I64 &&
	       (int)NPUM_BOOL == (int)NPU_DT_BOOL && NPUM_BOOL + 1 == NPU_DT_COUNT,
	       "model and op library dtypes");

unsigned int mf_dtype_size(uint32_t dtype)
{
	return (unsigned int)npu_dtype_size(dtype);
}

uint64_t mf_extent(const struct npum_tensor *t)
{
	uint64_t last = 0;
	unsigned int es = mf_dtype_size(t->dtype);

	if (!es || !t->ndim || t->ndim > NPUM_MAX_DIMS)
		return 0;
	for (unsigned int k = 0; k < t->ndim; k++) {
		if (!t->shape[k] || t->shape[k] > NPUM_MAX_TENSOR_BYTES ||
		    t->stride[k] > NPUM_MAX_TENSOR_BYTES)
			return 0;
		last += (t->shape[k] - 1) * t->stride[k];
		if (last > NPUM_MAX_TENSOR_BYTES)
			return 0;
	}
	return (last + 1) * es;
}

bool mf_dense(const struct npum_tensor *t)
{
	uint64_t want = 1;

	for (int k = (int)t->ndim - 1; k >= 0; k--) {
		if (t->stride[k] != want)
			return false;
		want *= t->shape[k];
	}
	return true;
}

static const char *tname(const struct mf_model *m, uint32_t i)
{
	static __thread char buf[48];
	const char *n = i < m->ntensors && m->tensors[i].name < m->strings_len ?
			m->strings + m->tensors[i].name : "";

	if (*n)
		return n;
	snprintf(buf, sizeof(buf), "#%u", i);
	return buf;
}

static int check_tensor(const struct mf_model *m, uint32_t i, char *why, size_t len)
{
	const struct npum_tensor *t = &m->tensors[i];
	uint64_t ext;

	if (t->name >= m->strings_len)
		return mf_fail(why, len, "tensor %u: name outside the strings", i);
	if (t->flags || t->reserved)
		return mf_fail(why, len, "tensor %s: reserved fields set", tname(m, i));
	if (!mf_dtype_size(t->dtype))
		return mf_fail(why, len, "tensor %s: unknown dtype %u", tname(m, i), t->dtype);
	if (!t->ndim || t->ndim > NPUM_MAX_DIMS)
		return mf_fail(why, len, "tensor %s: %u dimensions (1 to %d)", tname(m, i), t->ndim,
			    NPUM_MAX_DIMS);
	for (unsigned int k = t->ndim; k < NPUM_MAX_DIMS; k++)
		if (t->shape[k] || t->stride[k])
			return mf_fail(why, len, "tensor %s: dimension %u past ndim set", tname(m, i), k);
	ext = mf_extent(t);
	if (!ext)
		return mf_fail(why, len, "tensor %s: a zero or oversized dimension (over %llu bytes)",
			    tname(m, i), (unsigned long long)NPUM_MAX_TENSOR_BYTES);
	if (t->bytes != ext)
		return mf_fail(why, len, "tensor %s: %llu bytes, but its shape and strides span %llu",
			    tname(m, i), (unsigned long long)t->bytes, (unsigned long long)ext);
	switch (t->segment) {
	case NPUM_SEG_WEIGHTS:
		if (t->base || t->offset > m->plan.weights_bytes ||
		    t->bytes > m->plan.weights_bytes - t->offset)
			return mf_fail(why, len, "tensor %s: outside the weights (%llu bytes)",
				    tname(m, i), (unsigned long long)m->plan.weights_bytes);
		break;
	case NPUM_SEG_FMAP:
		if (t->base || t->offset % NPUM_ALIGN || t->offset > m->plan.fmap_bytes ||
		    t->bytes > m->plan.fmap_bytes - t->offset)
			return mf_fail(why, len, "tensor %s: outside the feature-map plan (%llu bytes)",
				    tname(m, i), (unsigned long long)m->plan.fmap_bytes);
		if (!mf_dense(t))
			return mf_fail(why, len, "tensor %s: a feature map must be dense", tname(m, i));
		break;
	case NPUM_SEG_IO:
		if (t->base >= m->plan.inputs + m->plan.outputs || m->io[t->base].tensor != i ||
		    t->offset)
			return mf_fail(why, len, "tensor %s: I/O %u does not name it", tname(m, i),
				    t->base);
		if (!mf_dense(t))
			return mf_fail(why, len, "tensor %s: an input or output must be dense",
				    tname(m, i));
		break;
	case NPUM_SEG_VIEW: {
		const struct npum_tensor *b;

		if (t->base >= i)
			return mf_fail(why, len, "tensor %s: a view of a later tensor", tname(m, i));
		b = &m->tensors[t->base];
		if (b->segment == NPUM_SEG_VIEW)
			return mf_fail(why, len, "tensor %s: a view of a view", tname(m, i));
		/* Its dtype may be another than its base's: the bytes are read as its. */
		if (t->offset % mf_dtype_size(t->dtype))
			return mf_fail(why, len, "tensor %s: offset %llu is not a multiple of its element",
				    tname(m, i), (unsigned long long)t->offset);
		if (t->offset > b->bytes || t->bytes > b->bytes - t->offset)
			return mf_fail(why, len, "tensor %s: runs past %s", tname(m, i),
				    tname(m, t->base));
		break;
	}
	default:
		return mf_fail(why, len, "tensor %s: unknown segment %u", tname(m, i), t->segment);
	}
	return 0;
}

/* ---- ops --------------------------------------------------------------- */

static const struct npum_tensor *op_tensor(const struct mf_model *m, uint32_t i)
{
	return i < m->ntensors ? &m->tensors[i] : NULL;
}

/* May the model write it: not a weight, not an input. */
static bool writable(const struct mf_model *m, const struct npum_tensor *t)
{
	const struct npum_tensor *b = mf_base(m, t);

	if (b->segment == NPUM_SEG_WEIGHTS)
		return false;
	return b->segment != NPUM_SEG_IO || m->io[b->base].flags & NPUM_IO_OUTPUT;
}

unsigned int mf_perm(const struct npum_op *op, unsigned int k)
{
	return k < 4 ? op->perm[k] : op->perm_hi[k - 4];
}

void mf_window_args(const struct npum_op *op, struct npu_op *a)
{
	for (int k = 0; k < 2; k++) {
		a->win.kernel[k] = op->window[k];
		a->win.stride[k] = op->window[2 + k];
		a->win.dilation[k] = op->window[4 + k];
	}
	for (int k = 0; k < 4; k++)
		a->win.pad[k] = op->window[6 + k];
	a->win.group = op->kernel == NPU_OP_CONV2D ? op->value : 0;
	a->win.flags = op->flags;
	a->win_d.kernel = op->window_d[0];
	a->win_d.stride = op->window_d[1];
	a->win_d.dilation = op->window_d[2];
	a->win_d.pad[0] = op->window_d[3];
	a->win_d.pad[1] = op->window_d[4];
}

void mf_tensor_args(const struct npum_tensor *t, struct npu_tensor *o)
{
	o->va = 0;
	o->dtype = t->dtype;
	o->ndim = t->ndim;
	memcpy(o->shape, t->shape, sizeof(o->shape));
	memcpy(o->stride, t->stride, sizeof(o->stride));
}

void mf_kernel_args(const struct mf_model *m, const struct npum_op *op, struct npu_op *a)
{
	const struct npum_tensor *bias = op->epi_flags & NPU_OP_E_BIAS ? op_tensor(m, op->bias) : NULL;

	*a = (struct npu_op){ .op = op->kernel, .flags = op->flags, .axis = op->axis,
			      .alpha = op->alpha, .beta = op->beta, .eps = op->eps };
	for (unsigned int k = 0; k < NPUM_MAX_DIMS; k++)
		a->perm[k] = mf_perm(op, k);
	if (npu_op_kind(op->kernel) == NPU_OPK_WINDOW)
		mf_window_args(op, a);
	a->epi.flags = op->epi_flags;
	a->epi.act = op->act;
	a->epi.alpha = op->act_alpha;
	a->epi.beta = op->act_beta;
	if (bias)
		mf_tensor_args(bias, &a->epi.bias);
	mf_tensor_args(&m->tensors[op->in[0]], &a->in[0]);
	if (op->in[1] != NPUM_NONE)
		mf_tensor_args(&m->tensors[op->in[1]], &a->in[1]);
	mf_tensor_args(&m->tensors[op->out], &a->out);
}

/*
 * A kernel op by the op library's rule (npu_opcheck.h), the one the
 * device applies to its launch: the model is refused at load, never at
 * its first run.
 */
static int check_kernel(const struct mf_model *m, const struct npum_op *op, char *why, size_t len)
{
	struct npu_op a;
	char buf[256];

	if (op->epi_flags & NPU_OP_E_BIAS && !op_tensor(m, op->bias))
		return mf_fail(why, len, "epilogue: bias tensor index out of range");
	mf_kernel_args(m, op, &a);
	if (npu_op_kind(op->kernel) != NPU_OPK_NONE &&
	    (op->in[1] != NPUM_NONE) != (npu_op_inputs(&a) == 2))
		return mf_fail(why, len, "kernel: the op reads %u input%s, the model gives it %u",
			       npu_op_inputs(&a), npu_op_inputs(&a) == 1 ? "" : "s",
			       op->in[1] != NPUM_NONE ? 2 : 1);
	if (npu_op_explain(&a, buf, sizeof(buf)))
		return mf_fail(why, len, "%s", buf);
	return 0;
}

int mf_op_check(const struct mf_model *m, const struct npum_op *op, char *why, size_t len)
{
	const struct npum_tensor *a = op_tensor(m, op->in[0]);
	const struct npum_tensor *b = op->in[1] == NPUM_NONE ? NULL : op_tensor(m, op->in[1]);
	const struct npum_tensor *o = op_tensor(m, op->out);

	if (op->type != NPUM_OP_KERNEL || npu_op_kind(op->kernel) != NPU_OPK_WINDOW) {
		for (unsigned int k = 0; k < sizeof(op->window) / sizeof(op->window[0]); k++)
			if (op->window[k])
				return mf_fail(why, len, "window fields set on an op without a window");
		for (unsigned int k = 0; k < 5; k++)
			if (op->window_d[k])
				return mf_fail(why, len, "window fields set on an op without a window");
	}
	if (op->reserved2)
		return mf_fail(why, len, "reserved op field set");
	if ((op->type != NPUM_OP_KERNEL &&
	     (op->bias || op->act || op->epi_flags || op->act_alpha || op->act_beta)) ||
	    (!(op->epi_flags & NPU_OP_E_BIAS) && op->bias))
		return mf_fail(why, len, "epilogue fields set on an op without one");
	switch (op->type) {
	case NPUM_OP_SIGNAL:
	case NPUM_OP_WAIT:
		if (op->event >= m->plan.events)
			return mf_fail(why, len, "event %u of %u", op->event, m->plan.events);
		return 0;
	case NPUM_OP_FILL:
		if (!o || op->in[0] != NPUM_NONE || op->in[1] != NPUM_NONE)
			return mf_fail(why, len, "fill: an output and no input");
		if (!mf_dense(o) || o->bytes % 4)
			return mf_fail(why, len, "fill: a dense output of whole 32-bit words");
		break;
	case NPUM_OP_COPY:
		if (!a || !o || op->in[1] != NPUM_NONE)
			return mf_fail(why, len, "copy: one input and an output");
		if (!mf_dense(a) || !mf_dense(o) || a->bytes != o->bytes)
			return mf_fail(why, len, "copy: dense tensors of the same size");
		break;
	case NPUM_OP_KERNEL:
		if (!a || !o || (op->in[1] != NPUM_NONE && !b))
			return mf_fail(why, len, "kernel: tensor index out of range");
		if (op->block_dim > 64)
			return mf_fail(why, len, "kernel: block_dim %u over 64", op->block_dim);
		if (check_kernel(m, op, why, len))
			return EINVAL;
		break;
	default:
		return mf_fail(why, len, "unknown op type %u", op->type);
	}
	if (!writable(m, o))
		return mf_fail(why, len, "writes %s, which is %s", tname(m, op->out),
			    mf_base(m, o)->segment == NPUM_SEG_WEIGHTS ? "a weight" : "an input");
	return 0;
}

/* ---- the whole model ----------------------------------------------------- */

static int check_io(const struct mf_model *m, char *why, size_t len)
{
	uint32_t n = m->plan.inputs + m->plan.outputs;

	for (uint32_t i = 0; i < n; i++) {
		const struct npum_io *io = &m->io[i];
		bool out = i >= m->plan.inputs;

		if (io->tensor >= m->ntensors || m->tensors[io->tensor].segment != NPUM_SEG_IO ||
		    m->tensors[io->tensor].base != i)
			return mf_fail(why, len, "I/O %u: its tensor %u is not it", i, io->tensor);
		if (io->flags != (out ? NPUM_IO_OUTPUT : 0))
			return mf_fail(why, len, "I/O %u: %s, among the %s", i,
				    io->flags & NPUM_IO_OUTPUT ? "an output" : "an input",
				    out ? "outputs" : "inputs");
		for (uint32_t k = 0; k < i; k++)
			if (!strcmp(m->strings + m->tensors[m->io[k].tensor].name,
				    m->strings + m->tensors[io->tensor].name))
				return mf_fail(why, len, "I/O %u and %u are both called \"%s\"", k, i,
					    m->strings + m->tensors[io->tensor].name);
	}
	return 0;
}

/* Events: each signalled once and waited for once, on another stream. */
static int check_events(const struct mf_model *m, char *why, size_t len)
{
	uint32_t ne = m->plan.events;
	int32_t *sig = malloc((ne ? ne : 1) * sizeof(*sig)), *wait;
	int ret = 0;

	wait = malloc((ne ? ne : 1) * sizeof(*wait));
	if (!sig || !wait) {
		free(sig);
		free(wait);
		return ENOMEM;
	}
	for (uint32_t e = 0; e < ne; e++)
		sig[e] = wait[e] = -1;
	for (uint32_t s = 0; s < m->plan.streams && !ret; s++) {
		const struct npum_stream *st = &m->streams[s];

		for (uint32_t i = st->first_op; i < st->first_op + st->op_count && !ret; i++) {
			const struct npum_op *op = &m->ops[i];
			int32_t *slot = op->type == NPUM_OP_SIGNAL ? sig :
					op->type == NPUM_OP_WAIT ? wait : NULL;

			if (!slot)
				continue;
			if (slot[op->event] >= 0)
				ret = mf_fail(why, len, "event %u %s twice", op->event,
					   slot == sig ? "signalled" : "waited for");
			slot[op->event] = (int32_t)s;
		}
	}
	for (uint32_t e = 0; e < ne && !ret; e++) {
		if (sig[e] < 0 || wait[e] < 0)
			ret = mf_fail(why, len, "event %u is never %s", e, sig[e] < 0 ? "signalled" :
				   "waited for");
		else if (sig[e] == wait[e])
			ret = mf_fail(why, len, "event %u is signalled and waited for on stream %d", e,
				   sig[e]);
	}
	free(sig);
	free(wait);
	return ret;
}

int mf_check(const struct mf_model *m, char *why, size_t len)
{
	const struct npum_plan *p = &m->plan;
	struct mf_order *order;
	uint32_t next = 0;
	int ret;

	if (p->flags || p->reserved[0] || p->reserved[1] || p->reserved[2])
		return mf_fail(why, len, "plan: reserved fields set");
	if (!p->streams || p->streams > NPUM_MAX_STREAMS)
		return mf_fail(why, len, "plan: %u streams (1 to %d)", p->streams, NPUM_MAX_STREAMS);
	if (p->inputs + (uint64_t)p->outputs > NPUM_MAX_IO || !p->outputs)
		return mf_fail(why, len, "plan: %u inputs and %u outputs (at least one output, %d in all)",
			    p->inputs, p->outputs, NPUM_MAX_IO);
	if (p->weights_bytes > NPUM_MAX_SEGMENT || p->fmap_bytes > NPUM_MAX_SEGMENT ||
	    p->fmap_sum > (NPUM_MAX_SEGMENT << 8) || p->fmap_peak > p->fmap_sum)
		return mf_fail(why, len, "plan: sizes out of range");
	if (p->events > NPUM_MAX_OPS)
		return mf_fail(why, len, "plan: %u events", p->events);
	if (!m->strings_len || m->strings[0] || m->strings[m->strings_len - 1])
		return mf_fail(why, len, "strings: must start and end with a NUL");
	if (!m->ntensors || m->ntensors > NPUM_MAX_TENSORS || !m->nops || m->nops > NPUM_MAX_OPS)
		return mf_fail(why, len, "%u tensors and %u ops (1 to %d of each)", m->ntensors, m->nops,
			    NPUM_MAX_OPS);
	ret = check_io(m, why, len);
	for (uint32_t i = 0; i < m->ntensors && !ret; i++)
		ret = check_tensor(m, i, why, len);
	for (uint32_t s = 0; s < p->streams && !ret; s++) {
		const struct npum_stream *st = &m->streams[s];

		if (st->flags || st->reserved || st->first_op != next || !st->op_count ||
		    st->op_count > m->nops - next)
			ret = mf_fail(why, len, "stream %u: its ops must follow the previous stream's", s);
		next += st->op_count;
	}
	if (!ret && next != m->nops)
		ret = mf_fail(why, len, "%u ops belong to no stream", m->nops - next);
	for (uint32_t i = 0; i < m->nops && !ret; i++) {
		char r[160];

		if (mf_op_check(m, &m->ops[i], r, sizeof(r)))
			ret = mf_fail(why, len, "op %u: %s", i, r);
	}
	if (!ret)
		ret = check_events(m, why, len);
	if (ret)
		return ret;
	ret = mf_order_make(m, &order, why, len);
	if (ret)
		return ret;
	ret = mf_plan_verify(m, order, why, len);
	mf_order_free(order);
	return ret;
}

/* ---- reading -------------------------------------------------------------- */

struct sec_spec {
	uint32_t type;
	size_t rec;		/* record size; 1 for blobs */
	const char *name;
};

static const struct sec_spec specs[] = {
	{ NPUM_SEC_STRINGS, 1, "strings" },
	{ NPUM_SEC_PLAN, sizeof(struct npum_plan), "plan" },
	{ NPUM_SEC_TENSORS, sizeof(struct npum_tensor), "tensors" },
	{ NPUM_SEC_IO, sizeof(struct npum_io), "I/O" },
	{ NPUM_SEC_STREAMS, sizeof(struct npum_stream), "streams" },
	{ NPUM_SEC_OPS, sizeof(struct npum_op), "ops" },
	{ NPUM_SEC_WEIGHTS, 1, "weights" },
};

#define N_SECS	(sizeof(specs) / sizeof(specs[0]))

_Static_assert(NPU_OP_E_BIAS == 1u, "npum_op_read() knows the bias flag");

/* A section's record size in this file: earlier formats' ops and tensors are shorter. */
static size_t rec_size(const struct sec_spec *spec, const struct npum_header *h)
{
	if (spec->type == NPUM_SEC_OPS && h->minor < 2)
		return h->minor ? NPUM_OP_V11_SIZE : NPUM_OP_V10_SIZE;
	if (spec->type == NPUM_SEC_TENSORS && h->minor < 2)
		return NPUM_TENSOR_V11_SIZE;
	return spec->rec;
}

/* The ops of an earlier file, in today's records: what they lack is zero. */
static struct npum_op *ops_old(const uint8_t *p, uint32_t n, size_t rec)
{
	struct npum_op *ops = calloc(n ? n : 1, sizeof(*ops));

	for (uint32_t i = 0; ops && i < n; i++)
		memcpy(&ops[i], p + (size_t)i * rec, rec);
	return ops;
}

/* The tensors of a 1.0 or 1.1 file: 4 dimensions, the rest zero. */
static struct npum_tensor *tensors_old(const uint8_t *p, uint32_t n)
{
	struct npum_tensor *t = calloc(n ? n : 1, sizeof(*t));

	for (uint32_t i = 0; t && i < n; i++) {
		const uint8_t *r = p + (size_t)i * NPUM_TENSOR_V11_SIZE;

		memcpy(&t[i], r, NPUM_TENSOR_HEAD);
		memcpy(t[i].shape, r + NPUM_TENSOR_HEAD, 4 * sizeof(uint64_t));
		memcpy(t[i].stride, r + NPUM_TENSOR_HEAD + 32, 4 * sizeof(uint64_t));
	}
	return t;
}

/*
 * Bytes no checksum covers (alignment between sections) must be zero, so
 * no change to a file goes unseen.
 */
static int check_gaps(const uint8_t *p, size_t len, const struct npum_header *h,
		      const struct npum_section *tab, char *why, size_t why_len)
{
	for (size_t at = sizeof(*h); at < len;) {
		size_t next = len;
		bool inside = false;

		if (at >= h->section_offset && at < h->section_offset + h->section_count * sizeof(*tab)) {
			at = h->section_offset + h->section_count * sizeof(*tab);
			continue;
		}
		for (uint32_t i = 0; i < h->section_count; i++) {
			if (at >= tab[i].offset && at < tab[i].offset + tab[i].size) {
				at = tab[i].offset + tab[i].size;
				inside = true;
				break;
			}
			if (tab[i].offset > at && tab[i].offset < next)
				next = tab[i].offset;
		}
		if (inside)
			continue;
		if (h->section_offset > at && h->section_offset < next)
			next = h->section_offset;
		for (; at < next; at++)
			if (p[at])
				return mf_fail(why, why_len, "byte %zu, between sections, is not zero", at);
	}
	return 0;
}

void mf_free(struct mf_model *m)
{
	free(m->strings);
	free(m->tensors);
	free(m->io);
	free(m->streams);
	free(m->ops);
	free(m->weights);
	memset(m, 0, sizeof(*m));
}

static void *dup_bytes(const uint8_t *p, size_t n)
{
	void *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

int mf_parse(const void *data, size_t len, struct mf_model *m, char *why, size_t why_len)
{
	const uint8_t *p = data;
	const struct npum_section *found[N_SECS] = { 0 };
	struct npum_header h;
	struct npum_section *tab;
	int ret;

	memset(m, 0, sizeof(*m));
	if (!data || len < sizeof(h))
		return mf_fail(why, why_len, "%zu bytes: shorter than a header", len);
	memcpy(&h, p, sizeof(h));
	if (memcmp(h.magic, NPUM_MAGIC, sizeof(h.magic)))
		return mf_fail(why, why_len, "not a model file (bad magic)");
	if (h.major != NPUM_MAJOR)
		return mf_fail(why, why_len, "format version %u.%u; this reader takes %d.x", h.major,
			    h.minor, NPUM_MAJOR);
	if (h.header_size != sizeof(h) || h.section_size != sizeof(struct npum_section))
		return mf_fail(why, why_len, "header or section size %u/%u; expected %zu/%zu",
			    h.header_size, h.section_size, sizeof(h), sizeof(struct npum_section));
	if (h.file_size != len)
		return mf_fail(why, why_len, "the file says %llu bytes, it has %zu (truncated?)",
			    (unsigned long long)h.file_size, len);
	{
		uint32_t crc = h.header_crc;

		h.header_crc = 0;
		if (mf_crc32(&h, sizeof(h)) != crc)
			return mf_fail(why, why_len, "header checksum mismatch");
	}
	if (h.flags)
		return mf_fail(why, why_len, "header flags %#x unknown", h.flags);
	for (unsigned int i = 0; i < sizeof(h.reserved); i++)
		if (h.reserved[i])
			return mf_fail(why, why_len, "header: reserved bytes set");
	if (!h.section_count || h.section_count > 64 || h.section_offset < sizeof(h) ||
	    h.section_offset > len || (uint64_t)h.section_count * sizeof(*tab) > len - h.section_offset)
		return mf_fail(why, why_len, "section table out of the file");
	if (mf_crc32(p + h.section_offset, h.section_count * sizeof(*tab)) != h.table_crc)
		return mf_fail(why, why_len, "section table checksum mismatch");
	tab = (struct npum_section *)malloc(h.section_count * sizeof(*tab));
	if (!tab)
		return ENOMEM;
	memcpy(tab, p + h.section_offset, h.section_count * sizeof(*tab));
	ret = 0;
	for (uint32_t i = 0; i < h.section_count && !ret; i++) {
		const struct npum_section *s = &tab[i];
		unsigned int k;

		if (s->offset < sizeof(h) || s->offset > len || s->size > len - s->offset)
			ret = mf_fail(why, why_len, "section %u: outside the file", i);
		else if (s->offset < h.section_offset + h.section_count * sizeof(*tab) &&
			 h.section_offset < s->offset + s->size)
			ret = mf_fail(why, why_len, "section %u: overlaps the section table", i);
		for (uint32_t j = 0; j < i && !ret; j++)
			if (s->offset < tab[j].offset + tab[j].size &&
			    tab[j].offset < s->offset + s->size && s->size && tab[j].size)
				ret = mf_fail(why, why_len, "sections %u and %u overlap", j, i);
		if (ret)
			break;
		for (k = 0; k < N_SECS && specs[k].type != s->type; k++)
			;
		if (k == N_SECS) {
			if (!(s->flags & NPUM_SECF_OPTIONAL))
				ret = mf_fail(why, why_len, "section %u: unknown type %u", i, s->type);
			continue;
		}
		if (s->flags & ~NPUM_SECF_OPTIONAL)
			ret = mf_fail(why, why_len, "%s section: unknown flags", specs[k].name);
		else if (found[k])
			ret = mf_fail(why, why_len, "two %s sections", specs[k].name);
		else if (s->size % rec_size(&specs[k], &h) ||
			 s->count != (specs[k].rec > 1 ? s->size / rec_size(&specs[k], &h) : 0))
			ret = mf_fail(why, why_len, "%s section: %llu bytes for %u records",
				   specs[k].name, (unsigned long long)s->size, s->count);
		else if (mf_crc32(p + s->offset, s->size) != s->crc)
			ret = mf_fail(why, why_len, "%s section: checksum mismatch (corrupted)",
				   specs[k].name);
		found[k] = s;
	}
	for (unsigned int k = 0; k < N_SECS && !ret; k++)
		if (!found[k])
			ret = mf_fail(why, why_len, "no %s section", specs[k].name);
	if (!ret)
		ret = check_gaps(p, len, &h, tab, why, why_len);
	if (ret)
		goto out;
	if (found[1]->count != 1) {
		ret = mf_fail(why, why_len, "plan section: %u plans", found[1]->count);
		goto out;
	}
	memcpy(&m->plan, p + found[1]->offset, sizeof(m->plan));
	if (found[4]->count != m->plan.streams ||
	    found[3]->count != m->plan.inputs + (uint64_t)m->plan.outputs ||
	    found[6]->size != m->plan.weights_bytes) {
		ret = mf_fail(why, why_len, "the plan's counts (%u streams, %u I/O, %llu weight bytes) "
			   "disagree with its sections", m->plan.streams,
			   m->plan.inputs + m->plan.outputs, (unsigned long long)m->plan.weights_bytes);
		goto out;
	}
	m->strings_len = found[0]->size;
	m->ntensors = found[2]->count;
	m->nops = found[5]->count;
	m->strings = dup_bytes(p + found[0]->offset, found[0]->size);
	m->tensors = h.minor >= 2 ? dup_bytes(p + found[2]->offset, found[2]->size) :
		     tensors_old(p + found[2]->offset, m->ntensors);
	m->io = dup_bytes(p + found[3]->offset, found[3]->size);
	m->streams = dup_bytes(p + found[4]->offset, found[4]->size);
	m->ops = h.minor >= 2 ? dup_bytes(p + found[5]->offset, found[5]->size) :
		 ops_old(p + found[5]->offset, m->nops, rec_size(&specs[5], &h));
	m->weights = dup_bytes(p + found[6]->offset, found[6]->size);
	if (!m->strings || !m->tensors || !m->io || !m->streams || !m->ops || !m->weights) {
		ret = ENOMEM;
		goto out;
	}
	ret = mf_check(m, why, why_len);
out:
	free(tab);
	if (ret)
		mf_free(m);
	return ret;
}

/* ---- writing -------------------------------------------------------------- */

int mf_serialize(const struct mf_model *m, void **data, size_t *len)
{
	const void *src[N_SECS] = { m->strings, &m->plan, m->tensors, m->io, m->streams, m->ops,
				    m->weights };
	size_t size[N_SECS] = {
		m->strings_len, sizeof(m->plan), m->ntensors * sizeof(*m->tensors),
		(m->plan.inputs + m->plan.outputs) * sizeof(*m->io),
		m->plan.streams * sizeof(*m->streams), m->nops * sizeof(*m->ops),
		m->plan.weights_bytes,
	};
	struct npum_header h = { .major = NPUM_MAJOR, .minor = NPUM_MINOR,
				 .header_size = sizeof(h),
				 .section_count = N_SECS,
				 .section_size = sizeof(struct npum_section) };
	struct npum_section tab[N_SECS];
	uint64_t at;
	uint8_t *out;

	memcpy(h.magic, NPUM_MAGIC, sizeof(h.magic));
	h.section_offset = sizeof(h);
	at = sizeof(h) + sizeof(tab);
	for (unsigned int k = 0; k < N_SECS; k++) {
		/* Sections 8-aligned, so a reader may map them in place. */
		at = (at + 7) & ~7ull;
		tab[k] = (struct npum_section){ .type = specs[k].type, .offset = at,
						.size = size[k],
						.count = specs[k].rec > 1 ?
							 (uint32_t)(size[k] / specs[k].rec) : 0,
						.crc = mf_crc32(src[k], size[k]) };
		at += size[k];
	}
	h.file_size = at;
	h.table_crc = mf_crc32(tab, sizeof(tab));
	h.header_crc = mf_crc32(&h, sizeof(h));
	out = calloc(1, at);
	if (!out)
		return ENOMEM;
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), tab, sizeof(tab));
	for (unsigned int k = 0; k < N_SECS; k++)
		if (size[k])
			memcpy(out + tab[k].offset, src[k], size[k]);
	*data = out;
	*len = at;
	return 0;
}
