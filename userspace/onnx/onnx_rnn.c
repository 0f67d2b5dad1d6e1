// SPDX-License-Identifier: MIT
/*
 * LSTM, unrolled over its (static) sequence into the nodes it is made
 * of, each imported as any node is: the input projection of every step
 * at once (one MatMul and the biases), then per step the recurrent
 * MatMul, the gates (views of one Split), their activations and the cell
 * and hidden state updates. Forward, reverse and bidirectional, with
 * peepholes, and batch first (layout 1) as transposes around it. GRU and
 * RNN alike. Every activation function ONNX names for them, with its
 * alpha and beta (Affine and ScaledTanh, which are no operators, as the
 * products they are), clip on the gates' inputs and LSTM's
 * input_forget (f = 1 - i).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "onnx.h"

/* Steps an LSTM unrolls into at most (a dozen ops each). */
#define OX_MAX_STEPS	1024

static npurt_status emit1(struct ox_imp *im, const char *op, const char *a, const char *out)
{
	const char *ins[1] = { a };

	return ox_emit(im, op, ins, 1, out, NULL);
}

static npurt_status emit2(struct ox_imp *im, const char *op, const char *a, const char *b,
			  const char *out)
{
	const char *ins[2] = { a, b };

	return ox_emit(im, op, ins, 2, out, NULL);
}

/* Split(x, sizes) along `axis` into outs (named already), as ox_emit() imports. */
static npurt_status emit_split(struct ox_imp *im, const char *x, const char *sizes, int64_t axis,
			       char **outs, size_t nout)
{
	Onnx__AttributeProto ax, *attrs[1] = { &ax };
	Onnx__NodeProto nd = ONNX__NODE_PROTO__INIT;
	const Onnx__NodeProto *was = im->node;
	const char *ins[2] = { x, sizes };
	int64_t opset = im->opset;
	npurt_status st;

	ox_attr_ints(&ax, "axis", &axis, 1, false);
	nd.op_type = (char *)"Split";
	nd.name = was ? was->name : NULL;
	nd.input = (char **)ins;
	nd.n_input = 2;
	nd.output = outs;
	nd.n_output = nout;
	nd.attribute = attrs;
	nd.n_attribute = 1;
	im->opset = 13;
	st = ox_node(im, &nd);
	im->opset = opset;
	im->node = was;
	return st;
}

/* x[k] along axis 0 (a view: one index), into `out`. */
static npurt_status pick(struct ox_imp *im, const char *x, int64_t k, ox_name out)
{
	Onnx__AttributeProto ax;
	int64_t zero = 0;
	ox_name idx;
	const char *ins[2] = { x, idx };
	npurt_status st = ox_int_const(im, &k, 1, true, idx);

	if (st)
		return st;
	ox_attr_ints(&ax, "axis", &zero, 1, false);
	return ox_emit(im, "Gather", ins, 2, ox_tmp_name(im, out, sizeof(ox_name), "lstm"), &ax);
}

/* x with dimensions of 1 put at `axes`, into `out` (named already). */
static npurt_status unsqueeze(struct ox_imp *im, const char *x, const int64_t *axes, int n,
			      const char *out)
{
	ox_name an;
	npurt_status st = ox_int_const(im, axes, n, false, an);

	return st ? st : emit2(im, "Unsqueeze", x, an, out);
}

enum rnn_kind { RNN_LSTM, RNN_GRU, RNN_RNN };

/* An activation function of a recurrent op, by ONNX's name, with its parameters. */
struct rnn_act {
	const char *name;
	float alpha, beta;
};

struct lstm {
	const Onnx__NodeProto *n;
	enum rnn_kind kind;
	int gates;			/* 4, 3, 1 */
	struct rnn_act act[2][3];	/* per direction: f, g, h (LSTM), f, g (GRU), f (RNN) */
	float clip;			/* of the gates' inputs; 0: none */
	bool input_forget;		/* LSTM: f = 1 - i */
	int64_t steps, hidden, batch;
	bool batch_first;		/* layout 1 */
	ox_name x;			/* [steps, batch, input] */
	ox_name h0, c0;			/* initial states [dirs, batch, hidden], or "" */
};

/*
 * Direction d's recurrent weights transposed into rt (H R^T), and every
 * step's input product into xw (X W^T, [steps, batch, gates x hidden]).
 */
static npurt_status project(struct ox_imp *im, const struct lstm *l, int64_t d, ox_name rt,
			    ox_name xw)
{
	int64_t perm[2] = { 1, 0 };
	Onnx__AttributeProto pa;
	ox_name w, r, wt;
	npurt_status st;

	ox_attr_ints(&pa, "perm", perm, 2, true);
	st = pick(im, l->n->input[1], d, w);
	if (!st)
		st = ox_emit(im, "Transpose", (const char *const[]){ w }, 1,
			  ox_tmp_name(im, wt, sizeof(wt), "rnn"), &pa);
	if (!st)
		st = pick(im, l->n->input[2], d, r);
	if (!st)
		st = ox_emit(im, "Transpose", (const char *const[]){ r }, 1,
			  ox_tmp_name(im, rt, sizeof(ox_name), "rnn"), &pa);
	if (!st)
		st = emit2(im, "MatMul", l->x, wt, ox_tmp_name(im, xw, sizeof(ox_name), "rnn"));
	return st;
}

/* Direction d's biases B, into Wb and Rb (gates x hidden each). */
static npurt_status biases(struct ox_imp *im, const struct lstm *l, int64_t d, ox_name wb,
			   ox_name rb)
{
	int64_t two[2] = { l->gates * l->hidden, l->gates * l->hidden };
	char *outs[2] = { wb, rb };
	ox_name b, sizes;
	npurt_status st = pick(im, l->n->input[3], d, b);

	if (!st)
		st = ox_int_const(im, two, 2, false, sizes);
	ox_tmp_name(im, wb, sizeof(ox_name), "rnn");
	ox_tmp_name(im, rb, sizeof(ox_name), "rnn");
	return st ? st : emit_split(im, b, sizes, 0, outs, 2);
}

/* gate += p * cell, the gate's name made the sum's. */
static npurt_status peek(struct ox_imp *im, ox_name gate, const char *p, const char *cell)
{
	ox_name pc, sum;
	npurt_status st = emit2(im, "Mul", p, cell, ox_tmp_name(im, pc, sizeof(pc), "lstm"));

	if (!st)
		st = emit2(im, "Add", gate, pc, ox_tmp_name(im, sum, sizeof(sum), "lstm"));
	if (!st)
		memcpy(gate, sum, sizeof(sum));
	return st;
}

/* A float attribute for ox_emit_attrs(). */
static void attr_f(Onnx__AttributeProto *a, const char *name, float v)
{
	*a = (Onnx__AttributeProto)ONNX__ATTRIBUTE_PROTO__INIT;
	a->name = (char *)name;
	a->has_type = 1;
	a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	a->has_f = 1;
	a->f = v;
}

/* x times a constant v, of x's type. */
static npurt_status scale(struct ox_imp *im, const char *op, const char *x, double v, ox_name out)
{
	ox_name c;

	if (!ox_scalar_named(im, ox_find(im, x)->type, v, c))
		return npurt_last_status();
	return emit2(im, op, x, c, ox_tmp_name(im, out, sizeof(ox_name), "rnn"));
}

/* out = act(x), x first clipped to [-clip, clip] when clip is set. */
static npurt_status activate(struct ox_imp *im, const struct rnn_act *a, float clip,
			     const char *x, ox_name out)
{
	Onnx__AttributeProto at[2], *ats[2] = { &at[0], &at[1] };
	const char *op = a->name;
	ox_name lo, hi, cx, t;
	npurt_status st = NPURT_OK;
	int natt = 0;

	if (clip > 0) {
		int32_t type = ox_find(im, x)->type;

		if (!ox_scalar_named(im, type, -clip, lo) || !ox_scalar_named(im, type, clip, hi))
			return npurt_last_status();
		st = ox_emit(im, "Clip", (const char *const[]){ x, lo, hi }, 3,
			     ox_tmp_name(im, cx, sizeof(cx), "rnn"), NULL);
		x = cx;
	}
	if (st)
		return st;
	if (!strcmp(op, "Affine")) {		/* alpha x + beta */
		st = scale(im, "Mul", x, a->alpha, t);
		return st ? st : scale(im, "Add", t, a->beta, out);
	}
	if (!strcmp(op, "ScaledTanh")) {	/* alpha tanh(beta x) */
		ox_name u;

		st = scale(im, "Mul", x, a->beta, t);
		if (!st)
			st = emit1(im, "Tanh", t, ox_tmp_name(im, u, sizeof(u), "rnn"));
		return st ? st : scale(im, "Mul", u, a->alpha, out);
	}
	if (!strcmp(op, "LeakyRelu") || !strcmp(op, "ThresholdedRelu") || !strcmp(op, "Elu") ||
	    !strcmp(op, "HardSigmoid"))
		attr_f(&at[natt++], "alpha", a->alpha);
	if (!strcmp(op, "HardSigmoid"))
		attr_f(&at[natt++], "beta", a->beta);
	return ox_emit_attrs(im, op, &x, 1, ox_tmp_name(im, out, sizeof(ox_name), "rnn"), ats,
			     (size_t)natt);
}

/*
 * One direction d (reverse or not): Y's steps into y[t] (each
 * [1, 1, batch, hidden]), the last hidden and cell states into h, c.
 */
static npurt_status lstm_direction(struct ox_imp *im, const struct lstm *l, int64_t d,
				   bool reverse, ox_name *y, ox_name h, ox_name c)
{
	const Onnx__NodeProto *n = l->n;
	const struct rnn_act *act = l->act[d];
	ox_name rt, xw, bw, br, bsum, sp, t1, t2, gates[4], peep[3];
	int64_t four[4], yaxes[2] = { 0, 1 };
	bool have_h = false, have_c = false, have_p = false;
	npurt_status st;

	for (int k = 0; k < 4; k++)
		four[k] = l->hidden;
	st = project(im, l, d, rt, xw);
	if (!st && n->n_input > 3 && n->input[3][0]) {	/* B: Wb and Rb, added once */
		st = biases(im, l, d, bw, br);
		if (!st)
			st = emit2(im, "Add", bw, br, ox_tmp_name(im, bsum, sizeof(bsum), "lstm"));
		if (!st)
			st = emit2(im, "Add", xw, bsum, ox_tmp_name(im, t1, sizeof(t1), "lstm"));
		if (!st)
			memcpy(xw, t1, sizeof(xw));
	}
	if (!st && l->h0[0]) {
		st = pick(im, l->h0, d, h);
		have_h = true;
	}
	if (!st && l->c0[0]) {
		st = pick(im, l->c0, d, c);
		have_c = true;
	}
	if (!st)
		st = ox_int_const(im, four, 4, false, sp);
	if (!st && n->n_input > 7 && n->input[7][0]) {	/* P: i, o, f of each channel */
		char *outs[3] = { peep[0], peep[1], peep[2] };
		ox_name three, p;

		st = pick(im, n->input[7], d, p);
		if (!st)
			st = ox_int_const(im, four, 3, false, three);
		for (int k = 0; k < 3; k++)
			ox_tmp_name(im, peep[k], sizeof(peep[k]), "lstm");
		if (!st)
			st = emit_split(im, p, three, 0, outs, 3);
		have_p = true;
	}
	for (int64_t s = 0; !st && s < l->steps; s++) {
		int64_t t = reverse ? l->steps - 1 - s : s;
		char *outs[4] = { gates[0], gates[1], gates[2], gates[3] };
		ox_name g, xt, i, o, f, cc, cn, hn;

		st = pick(im, xw, t, xt);
		if (st)
			break;
		if (have_h) {	/* gates = x_t W^T + b + h R^T */
			st = emit2(im, "MatMul", h, rt, ox_tmp_name(im, t2, sizeof(t2), "lstm"));
			if (!st)
				st = emit2(im, "Add", xt, t2, ox_tmp_name(im, g, sizeof(g), "lstm"));
		} else {
			memcpy(g, xt, sizeof(g));
		}
		for (int k = 0; k < 4; k++)	/* ONNX's order: i, o, f, c */
			ox_tmp_name(im, gates[k], sizeof(gates[k]), "lstm");
		if (!st)
			st = emit_split(im, g, sp, 1, outs, 4);
		if (!st && have_p && have_c)	/* peepholes: i and f see C before */
			st = peek(im, gates[0], peep[0], c);
		if (!st && have_p && have_c)
			st = peek(im, gates[2], peep[2], c);
		if (!st)
			st = activate(im, &act[0], l->clip, gates[0], i);
		if (!st && l->input_forget) {	/* coupled: f = 1 - i */
			ox_name one;

			st = ox_scalar_named(im, ox_find(im, i)->type, 1.0, one) ?
			     emit2(im, "Sub", one, i, ox_tmp_name(im, f, sizeof(f), "lstm")) :
			     npurt_last_status();
		} else if (!st) {
			st = activate(im, &act[0], l->clip, gates[2], f);
		}
		if (!st)
			st = activate(im, &act[1], l->clip, gates[3], cc);
		/* C = f C + i c~; H = o tanh(C) */
		if (!st)
			st = emit2(im, "Mul", i, cc, ox_tmp_name(im, cn, sizeof(cn), "lstm"));
		if (!st && have_c) {
			st = emit2(im, "Mul", f, c, ox_tmp_name(im, t1, sizeof(t1), "lstm"));
			if (!st)
				st = emit2(im, "Add", t1, cn, ox_tmp_name(im, t2, sizeof(t2), "lstm"));
			if (!st)
				memcpy(cn, t2, sizeof(cn));
		}
		if (!st && have_p)		/* and o the new one */
			st = peek(im, gates[1], peep[1], cn);
		if (!st)
			st = activate(im, &act[0], l->clip, gates[1], o);
		if (!st)
			st = activate(im, &act[2], 0, cn, t1);
		if (!st)
			st = emit2(im, "Mul", o, t1, ox_tmp_name(im, hn, sizeof(hn), "lstm"));
		if (!st)
			st = unsqueeze(im, hn, yaxes, 2, ox_tmp_name(im, y[t], sizeof(y[t]), "lstm"));
		memcpy(h, hn, sizeof(hn));
		memcpy(c, cn, sizeof(cn));
		have_h = have_c = true;
	}
	return st;
}

/* y = x R^T[k] (+ Rb[k]): one recurrent product of a GRU gate. */
static npurt_status recur(struct ox_imp *im, const char *x, const char *rt, const char *rb,
			  ox_name y)
{
	ox_name t;
	npurt_status st = emit2(im, "MatMul", x, rt, ox_tmp_name(im, t, sizeof(t), "rnn"));

	if (!st && rb)
		return emit2(im, "Add", t, rb, ox_tmp_name(im, y, sizeof(ox_name), "rnn"));
	if (!st)
		memcpy(y, t, sizeof(t));
	return st;
}

/* out = act(x + h): a gate from its input's and its state's products. */
static npurt_status gate(struct ox_imp *im, const struct lstm *l, const struct rnn_act *act,
			 const char *x, const char *h, ox_name out)
{
	ox_name sum;
	npurt_status st = emit2(im, "Add", x, h, ox_tmp_name(im, sum, sizeof(sum), "rnn"));

	return st ? st : activate(im, act, l->clip, sum, out);
}

/*
 * A direction of a GRU (gates z, r, h: H' = h~ + z (H - h~)) or an RNN
 * (H' = tanh(x W^T + H R^T + b)), as lstm_direction. Without an initial
 * state the first step reads zeros.
 */
static npurt_status gru_direction(struct ox_imp *im, const struct lstm *l, int64_t d,
				  bool reverse, ox_name *y, ox_name h)
{
	const Onnx__NodeProto *n = l->n;
	int64_t H = l->hidden, yaxes[2] = { 0, 1 };
	int64_t split3[3] = { H, H, H };
	ox_name rt, xw, bw, br, s3, t1, rts[3], rbs[3];
	bool lbr = ox_attr_i(n, "linear_before_reset", 0) != 0, have_b = false;
	npurt_status st;

	st = project(im, l, d, rt, xw);
	if (!st)
		st = ox_int_const(im, split3, 3, false, s3);
	if (!st && n->n_input > 3 && n->input[3][0]) {	/* Wb into the inputs' product */
		st = biases(im, l, d, bw, br);
		if (!st)
			st = emit2(im, "Add", xw, bw, ox_tmp_name(im, t1, sizeof(t1), "rnn"));
		if (!st)
			memcpy(xw, t1, sizeof(xw));
		have_b = true;
	}
	if (!st && l->kind == RNN_GRU) {	/* R^T and Rb of each gate apart */
		char *outs[3] = { rts[0], rts[1], rts[2] }, *bouts[3] = { rbs[0], rbs[1], rbs[2] };

		for (int k = 0; k < 3; k++) {
			ox_tmp_name(im, rts[k], sizeof(rts[k]), "rnn");
			ox_tmp_name(im, rbs[k], sizeof(rbs[k]), "rnn");
		}
		st = emit_split(im, rt, s3, 1, outs, 3);
		if (!st && have_b)
			st = emit_split(im, br, s3, 0, bouts, 3);
	}
	if (!st && l->h0[0]) {
		st = pick(im, l->h0, d, h);
	} else if (!st) {		/* zeros */
		int64_t dims[2] = { l->batch, H };

		if (!ox_new_const(im, ox_tmp_name(im, h, sizeof(ox_name), "rnn"),
				  ox_find(im, l->x)->type, 2, dims))
			st = npurt_last_status();
	}
	for (int64_t s = 0; !st && s < l->steps; s++) {
		int64_t t = reverse ? l->steps - 1 - s : s;
		ox_name xt, hn, xs[3], hz, hr, z, rg, hh, cand, dd, e;
		char *outs[3] = { xs[0], xs[1], xs[2] };

		st = pick(im, xw, t, xt);
		if (!st && l->kind == RNN_RNN) {
			st = recur(im, h, rt, have_b ? br : NULL, hh);
			if (!st)
				st = gate(im, l, &l->act[d][0], xt, hh, hn);
		} else if (!st) {
			for (int k = 0; k < 3; k++)
				ox_tmp_name(im, xs[k], sizeof(xs[k]), "rnn");
			st = emit_split(im, xt, s3, 1, outs, 3);
			if (!st)
				st = recur(im, h, rts[0], have_b ? rbs[0] : NULL, hz);
			if (!st)
				st = recur(im, h, rts[1], have_b ? rbs[1] : NULL, hr);
			if (!st)
				st = gate(im, l, &l->act[d][0], xs[0], hz, z);
			if (!st)
				st = gate(im, l, &l->act[d][0], xs[1], hr, rg);
			if (!st && lbr) {	/* r (H Rh^T + Rbh) */
				st = recur(im, h, rts[2], have_b ? rbs[2] : NULL, hh);
				if (!st)
					st = emit2(im, "Mul", rg, hh, ox_tmp_name(im, t1, sizeof(t1), "rnn"));
			} else if (!st) {	/* (r H) Rh^T + Rbh */
				st = emit2(im, "Mul", rg, h, ox_tmp_name(im, hh, sizeof(hh), "rnn"));
				if (!st)
					st = recur(im, hh, rts[2], have_b ? rbs[2] : NULL, t1);
			}
			if (!st)
				st = gate(im, l, &l->act[d][1], xs[2], t1, cand);
			if (!st)
				st = emit2(im, "Sub", h, cand, ox_tmp_name(im, dd, sizeof(dd), "rnn"));
			if (!st)
				st = emit2(im, "Mul", z, dd, ox_tmp_name(im, e, sizeof(e), "rnn"));
			if (!st)
				st = emit2(im, "Add", cand, e, ox_tmp_name(im, hn, sizeof(hn), "rnn"));
		}
		if (!st)
			st = unsqueeze(im, hn, yaxes, 2, ox_tmp_name(im, y[t], sizeof(y[t]), "rnn"));
		memcpy(h, hn, sizeof(hn));
	}
	return st;
}

/*
 * The activation functions ONNX's recurrent ops take: whether each reads
 * an alpha and a beta, and their defaults (those of the operators of the
 * same name; Affine and ScaledTanh as onnxruntime has them).
 */
static const struct {
	const char *name;
	bool alpha, beta;
	float dalpha, dbeta;
} rnn_funcs[] = {
	{ "Relu", false, false, 0, 0 }, { "Tanh", false, false, 0, 0 },
	{ "Sigmoid", false, false, 0, 0 }, { "Softsign", false, false, 0, 0 },
	{ "Softplus", false, false, 0, 0 },
	{ "Affine", true, true, 1.0f, 0.0f }, { "LeakyRelu", true, false, 0.01f, 0 },
	{ "ThresholdedRelu", true, false, 1.0f, 0 }, { "ScaledTanh", true, true, 1.0f, 1.0f },
	{ "HardSigmoid", true, true, 0.2f, 0.5f }, { "Elu", true, false, 1.0f, 0 },
};

/*
 * The node's activations, each direction's f, g, h: its own, or the
 * defaults. activation_alpha and activation_beta are taken in order by
 * the functions that read one.
 */
static npurt_status rnn_acts(struct ox_imp *im, const Onnx__NodeProto *n, struct lstm *l,
			     int dirs)
{
	static const char *const defaults[][3] = {
		[RNN_LSTM] = { "Sigmoid", "Tanh", "Tanh" }, [RNN_GRU] = { "Sigmoid", "Tanh" },
		[RNN_RNN] = { "Tanh" },
	};
	const Onnx__AttributeProto *a = ox_attr(n, "activations");
	const Onnx__AttributeProto *al = ox_attr(n, "activation_alpha");
	const Onnx__AttributeProto *be = ox_attr(n, "activation_beta");
	size_t per = l->kind == RNN_LSTM ? 3 : l->kind == RNN_GRU ? 2 : 1, na = 0, nb = 0;

	if (a && a->n_strings != per * (size_t)dirs)
		return ox_fail(im, NPURT_ERR_INVALID, "%zu activations, want %zu", a->n_strings,
			       per * (size_t)dirs);
	for (size_t k = 0; k < per * (size_t)dirs; k++) {
		struct rnn_act *act = &l->act[k / per][k % per];
		size_t f;

		for (f = 0; f < sizeof(rnn_funcs) / sizeof(rnn_funcs[0]); f++)
			if (a ? a->strings[k].len == strlen(rnn_funcs[f].name) &&
				!strncasecmp((const char *)a->strings[k].data, rnn_funcs[f].name,
					     a->strings[k].len) :
			    !strcmp(rnn_funcs[f].name, defaults[l->kind][k % per]))
				break;
		if (f == sizeof(rnn_funcs) / sizeof(rnn_funcs[0]))
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "activation %zu (\"%.*s\") is none "
				       "ONNX defines for recurrent ops", k,
				       (int)(a->strings[k].len > 32 ? 32 : a->strings[k].len),
				       (const char *)a->strings[k].data);
		act->name = rnn_funcs[f].name;
		act->alpha = rnn_funcs[f].dalpha;
		act->beta = rnn_funcs[f].dbeta;
		if (rnn_funcs[f].alpha && al && na < al->n_floats)
			act->alpha = al->floats[na++];
		if (rnn_funcs[f].beta && be && nb < be->n_floats)
			act->beta = be->floats[nb++];
	}
	l->clip = ox_attr_f(n, "clip", 0);
	if (ox_attr(n, "clip") && !(l->clip > 0))
		return ox_fail(im, NPURT_ERR_INVALID, "clip %g: a positive threshold", l->clip);
	l->input_forget = ox_attr_i(n, "input_forget", 0) != 0;
	return NPURT_OK;
}

/* What of an LSTM, GRU or RNN maps: refused, with the reason, otherwise. */
static npurt_status lstm_check(struct ox_imp *im, const Onnx__NodeProto *n, struct lstm *l,
			       int *dirs)
{
	npurt_status st;
	struct ox_val *x = ox_in(im, n, 0), *w = ox_in(im, n, 1), *r = ox_in(im, n, 2);
	struct ox_val *sl = n->n_input > 4 ? ox_in(im, n, 4) : NULL;
	char buf[32];
	const char *dir = ox_attr_s(n, "direction", "forward", buf, sizeof(buf));

	l->kind = !strcmp(n->op_type, "GRU") ? RNN_GRU : !strcmp(n->op_type, "RNN") ? RNN_RNN :
		  RNN_LSTM;
	l->gates = l->kind == RNN_LSTM ? 4 : l->kind == RNN_GRU ? 3 : 1;
	*dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	if (strcmp(dir, "forward") && strcmp(dir, "reverse") && *dirs != 2)
		return ox_fail(im, NPURT_ERR_INVALID, "direction \"%s\"", dir);
	st = rnn_acts(im, n, l, *dirs);
	if (st)
		return st;
	if (!x || !w || !r || x->ndim != 3 || w->ndim != 3 || r->ndim != 3)
		return ox_fail(im, NPURT_ERR_INVALID, "X, W and R of rank 3 wanted");
	l->n = n;
	l->batch_first = ox_attr_i(n, "layout", 0) != 0;
	l->steps = x->dims[l->batch_first ? 1 : 0];
	l->hidden = r->dims[2];
	l->batch = x->dims[l->batch_first ? 0 : 1];
	if (w->dims[0] != *dirs || r->dims[0] != *dirs || w->dims[1] != l->gates * l->hidden ||
	    r->dims[1] != l->gates * l->hidden || w->dims[2] != x->dims[2] ||
	    ox_attr_i(n, "hidden_size", l->hidden) != l->hidden)
		return ox_fail(im, NPURT_ERR_INVALID, "W, R and hidden_size disagree");
	if (l->steps < 1 || l->steps > OX_MAX_STEPS)
		return ox_fail(im, NPURT_ERR_UNSUPPORTED, "%lld steps: at most %d unroll",
			       (long long)l->steps, OX_MAX_STEPS);
	if (sl) {	/* only lengths that are the whole sequence */
		if (!sl->is_const)
			return ox_fail(im, NPURT_ERR_UNSUPPORTED, "sequence_lens computed");
		for (uint64_t k = 0; k < ox_count(sl); k++)
			if (ox_geti(sl, k) != l->steps)
				return ox_fail(im, NPURT_ERR_UNSUPPORTED, "sequence_lens shorter than "
					       "the sequence");
	}
	return NPURT_OK;
}

/*
 * Into time-major form: X [steps, batch, input] and the initial states
 * [dirs, batch, hidden], transposed from batch first (layout 1).
 */
static npurt_status lstm_inputs(struct ox_imp *im, struct lstm *l)
{
	const Onnx__NodeProto *n = l->n;
	int64_t swap[3] = { 1, 0, 2 };
	Onnx__AttributeProto pa;
	npurt_status st = NPURT_OK;

	ox_attr_ints(&pa, "perm", swap, 3, true);
	for (int k = 0; !st && k < 3; k++) {
		const char *in = (size_t)(k ? k + 4 : 0) < n->n_input ? n->input[k ? k + 4 : 0] : "";
		char *to = k == 0 ? l->x : k == 1 ? l->h0 : l->c0;

		if (!in[0]) {
			to[0] = 0;
		} else if (!l->batch_first) {
			snprintf(to, sizeof(ox_name), "%s", in);
			if (strlen(in) >= sizeof(ox_name))
				st = ox_fail(im, NPURT_ERR_UNSUPPORTED, "a name of %zu bytes",
					     strlen(in));
		} else {
			st = ox_emit(im, "Transpose", &in, 1, ox_tmp_name(im, to, sizeof(ox_name), "lstm"),
				  &pa);
		}
	}
	return st;
}

/* An output made time-major as `made`, into the node's output k (batch first: transposed). */
static npurt_status lstm_output(struct ox_imp *im, const struct lstm *l, int k, ox_name made)
{
	static int64_t y_perm[4] = { 2, 0, 1, 3 }, state_perm[3] = { 1, 0, 2 };
	Onnx__AttributeProto pa;
	const char *in = made;

	if (!l->batch_first)
		return NPURT_OK;	/* made under the output's own name */
	ox_attr_ints(&pa, "perm", k ? state_perm : y_perm, k ? 3 : 4, true);
	return ox_emit(im, "Transpose", &in, 1, l->n->output[k], &pa);
}

/* Where output k is made: its own name, or (batch first) one to transpose from. */
static const char *lstm_made(struct ox_imp *im, const struct lstm *l, int k, ox_name buf)
{
	if (!l->batch_first)
		return l->n->output[k];
	return ox_tmp_name(im, buf, sizeof(ox_name), "lstm");
}

npurt_status ox_op_rnn(struct ox_imp *im, const Onnx__NodeProto *n)
{
	ox_name (*y)[2] = NULL, h[2], c[2], yd[2], made;
	int64_t zero = 0, one = 1;
	struct lstm l = { 0 };
	char buf[32];
	const char *dir = ox_attr_s(n, "direction", "forward", buf, sizeof(buf));
	int dirs;
	npurt_status st = lstm_check(im, n, &l, &dirs);

	if (st)
		return st;
	y = calloc((size_t)l.steps, sizeof(*y));
	if (!y)
		return ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
	im->unrolling++;
	st = lstm_inputs(im, &l);
	for (int d = 0; !st && d < dirs; d++) {
		ox_name *yt = calloc((size_t)l.steps, sizeof(*yt));

		if (!yt) {
			st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
			break;
		}
		if (l.kind == RNN_LSTM)
			st = lstm_direction(im, &l, d, d == 1 || !strcmp(dir, "reverse"), yt, h[d],
					    c[d]);
		else
			st = gru_direction(im, &l, d, d == 1 || !strcmp(dir, "reverse"), yt, h[d]);
		for (int64_t t = 0; t < l.steps; t++)
			memcpy(y[t][d], yt[t], sizeof(ox_name));
		free(yt);
	}
	/* Y [steps, dirs, batch, hidden]: each step's directions, then the steps */
	if (!st && n->n_output > 0 && n->output[0][0]) {
		const char **parts = calloc((size_t)l.steps, sizeof(*parts));
		ox_name *joined = calloc((size_t)l.steps, sizeof(*joined));
		Onnx__AttributeProto ax;

		if (!parts || !joined)
			st = ox_fail(im, NPURT_ERR_NO_MEMORY, "out of host memory");
		for (int64_t t = 0; !st && t < l.steps; t++) {
			const char *two[2] = { y[t][0], y[t][1] };

			ox_attr_ints(&ax, "axis", &one, 1, false);
			if (dirs == 2) {
				st = ox_emit(im, "Concat", two, 2,
					  ox_tmp_name(im, joined[t], sizeof(joined[t]), "lstm"), &ax);
				parts[t] = joined[t];
			} else {
				parts[t] = y[t][0];
			}
		}
		ox_attr_ints(&ax, "axis", &zero, 1, false);
		if (!st) {
			const char *out = lstm_made(im, &l, 0, made);

			st = l.steps == 1 ? emit1(im, "Identity", parts[0], out) :
			     ox_emit(im, "Concat", parts, (size_t)l.steps, out, &ax);
		}
		if (!st)
			st = lstm_output(im, &l, 0, made);
		free(parts);
		free(joined);
	}
	/* Y_h, Y_c [dirs, batch, hidden] */
	for (int k = 1; !st && k < (l.kind == RNN_LSTM ? 3 : 2) && (size_t)k < n->n_output; k++) {
		Onnx__AttributeProto ax;
		const char *two[2], *out;

		if (!n->output[k][0])
			continue;
		out = lstm_made(im, &l, k, made);
		for (int d = 0; !st && d < dirs; d++)
			st = unsqueeze(im, k == 1 ? h[d] : c[d], &zero, 1,
				       dirs == 1 ? out : ox_tmp_name(im, yd[d], sizeof(yd[d]), "lstm"));
		ox_attr_ints(&ax, "axis", &zero, 1, false);
		two[0] = yd[0];
		two[1] = yd[1];
		if (!st && dirs == 2)
			st = ox_emit(im, "Concat", two, 2, out, &ax);
		if (!st)
			st = lstm_output(im, &l, k, made);
	}
	im->unrolling--;
	free(y);
	return st;
}
