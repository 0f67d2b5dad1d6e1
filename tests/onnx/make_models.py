#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Real ONNX models for the device tests, built with Debian's python3-onnx.

    make_models.py OUTDIR
    make_models.py --corpus DIR     (the ONNX fuzzer's seeds, kept in tests/fuzz)

Writes, for each model NAME, OUTDIR/NAME.onnx, the input OUTDIR/NAME.in
(raw, in the model's input type; its shape in OUTDIR/NAME.onnx.dims, JSON)
and the output numpy computes from it in float64, OUTDIR/NAME.out (float32,
raw). Weights and inputs come from
numpy.random.RandomState(0) per model, so the files are the same on every
machine.

  mlp            [1,784]: Gemm 784x512 + Relu, Gemm 512x512 + Relu, Gemm 512x10,
                 Softmax (weights [out, in], transB as PyTorch exports them)
  transformer13  one encoder block, [1,128,256], 4 heads: Q/K/V MatMul + bias,
                 heads by Reshape/Transpose, QK^T / 8, Softmax, x V, merge,
                 projection, residual, LayerNorm decomposed (opset 13), FFN
                 256->1024 with erf GELU, residual, LayerNorm
  transformer17  the same with LayerNormalization (opset 17)
  resnet_mini    [1,3,64,64]: Conv + BatchNorm + Relu blocks with residual Adds,
                 a stride-2 downsample, GlobalAveragePool, Flatten, Gemm
  picked_column  [4,6]: ArgMax into a scalar index, Where, Gather of that column
  mlp_bf16       the MLP in bfloat16 (opset 14), transformer17_f16 and
                 resnet_mini_f16 in float16: weights, inputs and numpy's copies
                 of them rounded alike, every activation half precision
  video_cnn      [1,2,5,9,8]: Conv 3-D (every dimension its own kernel, stride,
                 dilation and pads) + bias + Relu, MaxPool 3-D, AveragePool 3-D
                 without the padding, Pad reflect and edge, Unsqueeze to 6-D
  transformer_dyn  an encoder block over ["batch", "seq", 64], 4 heads, its head
                 split shaped by Shape/Gather/Concat of the input; inputs and
                 outputs for each (batch, seq) of DYN_SHAPES as
                 transformer_dyn.BxS.in and .out
  data_dependent x [n], k [1]: 2 x[x > 0] by NonZero and Gather, and its
                 top min(k, count) by TopK (the session tests' staged model;
                 they compute what it should give)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from math import erf


def rounded(a, dt):
    """a (float32) as a tensor of dt holds it: float16 and bfloat16 round to
    nearest even, so numpy's reference starts from the values the device has."""
    a = np.asarray(a, np.float32)
    if dt == TensorProto.FLOAT16:
        return a.astype(np.float16).astype(np.float32)
    if dt == TensorProto.BFLOAT16:
        u = a.view(np.uint32).astype(np.uint64)
        u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000
        return u.astype(np.uint32).view(np.float32)
    return a


def raw(a, dt):
    """The bytes of float array a as a tensor of dt (FLOAT, FLOAT16, BFLOAT16)."""
    a = rounded(a, dt)
    if dt == TensorProto.FLOAT16:
        return a.astype(np.float16).tobytes()
    if dt == TensorProto.BFLOAT16:
        return (a.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return a.tobytes()


class Builder:
    """A graph under construction. dt is its real type: every float tensor,
    weight and constant is stored as dt, and f32() rounds numpy's copies the
    same way."""

    def __init__(self, seed, dt=TensorProto.FLOAT):
        self.rng = np.random.RandomState(seed)
        self.nodes, self.inits, self.n, self.dt = [], [], 0, dt

    def f32(self, a):
        return rounded(a, self.dt)

    def name(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def const(self, value, base="c", dt=None):
        nm, dt = self.name(base), dt or self.dt
        a = np.asarray(value)
        if a.dtype == np.float32 and dt != TensorProto.FLOAT:
            self.inits.append(helper.make_tensor(nm, dt, a.shape, raw(a, dt), raw=True))
        else:
            self.inits.append(numpy_helper.from_array(a, nm))
        return nm

    def weight(self, *shape, scale=None):
        fan_in = shape[-1] if len(shape) == 2 else int(np.prod(shape[1:]))
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        return self.f32(self.rng.standard_normal(shape) * s)

    def node(self, op, inputs, n_out=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=outs[0], **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, name, x_name, x_shape, y, y_shape, opset):
        g = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(x_name, self.dt, x_shape)],
            [helper.make_tensor_value_info(y, self.dt, y_shape)],
            self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                              producer_name="npu tests/onnx/make_models.py")
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        return m


def softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x, g, b, eps=1e-5):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / np.sqrt(2.0)))


def mlp(dt=TensorProto.FLOAT, opset=13):
    b = Builder(0, dt)
    x = b.f32(b.rng.standard_normal((1, 784)))
    dims = [784, 512, 512, 10]
    h, ref = "x", x.astype(np.float64)
    for k in range(3):
        w = b.weight(dims[k + 1], dims[k])
        bias = b.f32(b.rng.standard_normal(dims[k + 1]) * 0.1)
        h = b.node("Gemm", [h, b.const(w, "w"), b.const(bias, "b")], transB=1)
        ref = ref @ w.T.astype(np.float64) + bias
        if k < 2:
            h = b.node("Relu", [h])
            ref = np.maximum(ref, 0)
    y = b.node("Softmax", [h], axis=-1)
    ref = softmax(ref)
    return b.model("mlp", "x", [1, 784], y, [1, 10], opset), x, ref


def dynamic_quantize(x):
    """DynamicQuantizeLinear in float32, step by step as the importer
    lowers it (and as ONNX defines it): (u8 values, scale, zero point)."""
    f = np.float32
    lo, hi = min(f(0), f(x.min())), max(f(0), f(x.max()))
    scale = f(f(hi - lo) / f(255))
    zp = f(np.clip(np.round(f(-lo) / scale), 0, 255))
    q = np.clip(np.round((x / scale).astype(np.float32)) + zp, 0, 255)
    return q.astype(np.uint8), scale, zp


def mlp_int8():
    """A two-layer MLP quantized dynamically, as onnxruntime's
    quantize_dynamic exports one: DynamicQuantizeLinear on the activations,
    MatMulInteger on int8 weights with a zero point per column, the int32
    product scaled back to float. Each output sums 784 or 512 products of
    8-bit integers: past what float32 holds exactly, so it runs on the
    device's integer GEMM. The reference quantizes the same way in float32
    and takes the product exactly."""
    b = Builder(3)
    x = b.f32(b.rng.standard_normal((4, 784)))
    h, ref = "x", x
    for k, (n_in, n_out) in enumerate(((784, 512), (512, 10))):
        w = b.rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
        lo, hi = w.min(0), w.max(0)
        ws = ((hi - lo) / 255).astype(np.float32)
        wz = np.clip(np.round(-128 - lo / ws), -128, 127).astype(np.int8)
        wq = np.clip(np.round(w / ws) + wz, -128, 127).astype(np.int8)
        xq, xs, xz = b.node("DynamicQuantizeLinear", [h], n_out=3)
        p = b.node("MatMulInteger", [xq, b.const(wq, "w"), xz, b.const(wz, "wz")])
        f = b.node("Cast", [p], to=TensorProto.FLOAT)
        h = b.node("Mul", [f, b.node("Mul", [xs, b.const(ws, "ws")])])
        rq, rs, rz = dynamic_quantize(ref)
        acc = (rq.astype(np.int64) - np.int64(rz)) @ (wq.astype(np.int64) - wz.astype(np.int64))
        ref = acc.astype(np.float32) * (rs * ws)
        if k == 0:
            h = b.node("Relu", [h])
            ref = np.maximum(ref, 0)
    return b.model("mlp_int8", "x", [4, 784], h, [4, 10], 13), x, ref


def quantize_weights(w, axis_len):
    """int8 weights with a scale and zero point per output channel (axis 0),
    asymmetric: (values, scales, zero points)."""
    flat = w.reshape(axis_len, -1)
    lo, hi = np.minimum(flat.min(1), 0), np.maximum(flat.max(1), 0)
    ws = ((hi - lo) / 255).astype(np.float32)
    wz = np.clip(np.round(-128 - lo / ws), -128, 127).astype(np.int8)
    shape = (axis_len,) + (1,) * (w.ndim - 1)
    wq = np.clip(np.round(w / ws.reshape(shape)) + wz.reshape(shape), -128, 127)
    return wq.astype(np.int8), ws, wz


def conv_int(xq, xz, wq, wz, stride, pad, group):
    """ConvInteger exactly: (x - xz) conv (w - wz) in int64, the padding
    holding xz (so it adds nothing)."""
    x = np.pad(xq.astype(np.int64) - np.int64(xz), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    w = wq.astype(np.int64) - wz.astype(np.int64).reshape(-1, 1, 1, 1)
    n, c, hh, ww = x.shape
    o, cg, kh, kw = w.shape
    ho, wo = (hh - kh) // stride + 1, (ww - kw) // stride + 1
    out = np.zeros((n, o, ho, wo), np.int64)
    og = o // group
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * cg:(g + 1) * cg, i:i + stride * ho:stride, j:j + stride * wo:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    return out


def cnn_int8():
    """Two quantized convolutions as quantize_dynamic exports them:
    DynamicQuantizeLinear, ConvInteger with int8 weights. The first has
    288 products a sum (past what float32 holds exactly for bytes) and a
    zero point per output channel; the second is grouped, strided and
    symmetric. The reference quantizes the same way in float32 and sums
    exactly."""
    b = Builder(5)
    x = b.f32(b.rng.standard_normal((1, 32, 10, 10)))
    h, ref = "x", x
    for cin, cout, stride, group, sym in ((32, 16, 1, 1, False), (16, 8, 2, 2, True)):
        w = b.rng.standard_normal((cout, cin // group, 3, 3)) / np.sqrt(cin * 9 / group)
        wq, ws, wz = quantize_weights(w, cout)
        if sym:
            wq = np.clip(np.round(w / ws.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
            wz = np.zeros(cout, np.int8)
        xq, xs, xz = b.node("DynamicQuantizeLinear", [h], n_out=3)
        p = b.node("ConvInteger", [xq, b.const(wq, "w"), xz, b.const(wz, "wz")],
                   pads=[1, 1, 1, 1], strides=[stride, stride], group=group)
        f = b.node("Cast", [p], to=TensorProto.FLOAT)
        h = b.node("Mul", [f, b.node("Mul", [xs, b.const(ws.reshape(1, -1, 1, 1), "ws")])])
        h = b.node("Relu", [h])
        rq, rs, rz = dynamic_quantize(ref)
        acc = conv_int(rq, rz, wq, wz, stride, 1, group)
        ref = np.maximum(acc.astype(np.float32) * (rs * ws.reshape(1, -1, 1, 1)), 0)
    return b.model("cnn_int8", "x", [1, 32, 10, 10], h, [1, 8, 5, 5], 13), x, ref


def cnn_qdq():
    """A small CNN as static quantization (onnxruntime's QDQ format) exports
    it: x quantized once (uint8), then each Conv and the final MatMul
    between DequantizeLinear and QuantizeLinear nodes -- int8 weights per
    output channel (symmetric, zero point 0) or per tensor, int32 biases at
    scale xs ws -- the first Conv's Relu before its QuantizeLinear, and a
    Reshape between QuantizeLinear/DequantizeLinear pairs; the Relu's
    output zero point is 16, so saturation alone would not do its work; the
    second Conv's DequantizeLinear is read by a ReduceMax too, added to
    the output, so it must stay. The importer
    fuses the three groups into integer ops; the reference computes them
    as such in float64: each sum exact, scaled by xs ws / ys, rounded
    half to even."""
    b = Builder(11)
    u8, i8, i32 = TensorProto.UINT8, TensorProto.INT8, TensorProto.INT32
    x = b.f32(b.rng.standard_normal((1, 8, 12, 12)))
    scale = lambda v: b.const(np.array(v, np.float32), "s")
    zero = lambda v, t: b.const(np.array(v, {u8: np.uint8, i8: np.int8}[t]), "z")

    def q(name, s, z):
        return b.node("QuantizeLinear", [name, scale(s), zero(z, u8)])

    def dq(name, s, z, t=u8, axis=None):
        attrs = {} if axis is None else {"axis": axis}
        zc = zero(z, t) if t != i32 else b.const(np.asarray(z, np.int32), "z")
        return b.node("DequantizeLinear", [name, scale(s) if np.ndim(s) == 0 else
                                           b.const(np.asarray(s, np.float32), "s"), zc], **attrs)

    def requant(acc, k, zy, relu=False):
        y = acc.astype(np.float64) * k
        y = np.maximum(y, 0) if relu else y
        return np.clip(np.round(y) + zy, 0, 255)     # numpy rounds half to even

    s0, z0 = np.float32(0.025), 128
    xq_ref = np.clip(np.round(x.astype(np.float32) / s0) + z0, 0, 255)
    h = q("x", s0, z0)
    hq, hs, hz = xq_ref, s0, z0
    layers = ((8, 16, 1, True, True), (16, 16, 2, False, False))
    side = None
    for cin, cout, stride, per_channel, relu in layers:
        w = b.rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)
        if per_channel:
            ws = (np.abs(w).reshape(cout, -1).max(1) / 127).astype(np.float32)
        else:
            ws = np.float32(np.abs(w).max() / 127)
        wq = np.clip(np.round(w / np.reshape(ws, (-1, 1, 1, 1))), -127, 127).astype(np.int8)
        bias = b.rng.standard_normal(cout) * 0.1
        bs = (np.float32(hs) * np.broadcast_to(ws, (cout,))).astype(np.float32)
        bq = np.round(bias / bs).astype(np.int32)
        wdq = dq(b.const(wq, "w"), ws, np.zeros(cout if per_channel else (), np.int8), i8,
                 0 if per_channel else None)
        bdq = dq(b.const(bq, "b"), bs, np.zeros(cout, np.int32), i32, 0)
        d = dq(h, hs, hz)
        if stride == 2:     # this DequantizeLinear is read by a ReduceMax too: it stays
            side = b.node("ReduceMax", [d], keepdims=0)
            side_ref = ((hq - hz) * np.float64(hs)).max()
        c = b.node("Conv", [d, wdq, bdq], pads=[1, 1, 1, 1], strides=[stride, stride])
        if relu:
            c = b.node("Relu", [c])
        # the Relu's zero point above 0: it is the Relu that keeps y >= 0 there
        ys, yz = np.float32(0.05 if relu else 0.04), 16 if relu else 128
        h = q(c, ys, yz)
        acc = conv_int(hq.astype(np.int64), hz, wq, np.zeros(cout, np.int64), stride, 1, 1)
        acc = acc + bq.reshape(1, -1, 1, 1)
        k = (np.float32(hs) * np.reshape(ws, (1, -1, 1, 1)).astype(np.float32)) / ys
        hq, hs, hz = requant(acc, k.astype(np.float64), yz, relu), ys, yz
    # flatten between a DQ and a Q, then a MatMul with weights per column
    n_in, n_out = 16 * 6 * 6, 10
    flat = q(b.node("Reshape", [dq(h, hs, hz), b.const(np.array([1, n_in], np.int64), "shape")]),
             hs, hz)
    w = b.rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)
    ws = (np.abs(w).max(0) / 127).astype(np.float32)
    wq = np.clip(np.round(w / ws), -127, 127).astype(np.int8)
    m = b.node("MatMul", [dq(flat, hs, hz), dq(b.const(wq, "w"), ws, np.zeros(n_out, np.int8),
                                                i8, 1)])
    ys, yz = np.float32(0.1), 128
    out = b.node("Add", [b.node("DequantizeLinear", [q(m, ys, yz), scale(ys), zero(yz, u8)]),
                         side])
    acc = (hq.reshape(1, -1).astype(np.int64) - hz) @ wq.astype(np.int64)
    yq = requant(acc, (np.float32(hs) * ws / ys).astype(np.float64), yz)
    ref = (yq - yz) * np.float64(ys) + side_ref
    return b.model("cnn_qdq", "x", [1, 8, 12, 12], out, [1, n_out], 13), x, ref


def transformer(opset, dt=TensorProto.FLOAT):
    b = Builder(0, dt)
    s, d, heads, ff = 128, 256, 4, 1024
    dh = d // heads
    x = b.f32(b.rng.standard_normal((1, s, d)))
    xr = x.astype(np.float64)

    def linear(inp, ref, n_in, n_out):
        w = b.weight(n_in, n_out, scale=1.0 / np.sqrt(n_in))
        bias = b.f32(b.rng.standard_normal(n_out) * 0.02)
        out = b.node("Add", [b.node("MatMul", [inp, b.const(w, "w")]), b.const(bias, "b")])
        return out, ref @ w.astype(np.float64) + bias

    def norm(inp, ref):
        g = b.f32(1 + 0.1 * b.rng.standard_normal(d))
        beta = b.f32(0.1 * b.rng.standard_normal(d))
        if opset >= 17:
            out = b.node("LayerNormalization", [inp, b.const(g, "g"), b.const(beta, "beta")],
                         axis=-1, epsilon=1e-5)
        else:
            mean = b.node("ReduceMean", [inp], axes=[-1])
            dev = b.node("Sub", [inp, mean])
            var = b.node("ReduceMean", [b.node("Pow", [dev, b.const(np.float32(2), "two")])],
                         axes=[-1])
            sd = b.node("Sqrt", [b.node("Add", [var, b.const(np.float32(1e-5), "eps")])])
            out = b.node("Add", [b.node("Mul", [b.node("Div", [dev, sd]), b.const(g, "g")]),
                                 b.const(beta, "beta")])
        return out, layernorm(ref, g, beta)

    def heads_of(t, transpose_k=False):
        r = b.node("Reshape", [t, b.const(np.array([1, s, heads, dh], np.int64), "shape")])
        return b.node("Transpose", [r], perm=[0, 2, 3, 1] if transpose_k else [0, 2, 1, 3])

    q, qr = linear("x", xr, d, d)
    k, kr = linear("x", xr, d, d)
    v, vr = linear("x", xr, d, d)
    sc = b.node("Div", [b.node("MatMul", [heads_of(q), heads_of(k, True)]),
                        b.const(np.float32(np.sqrt(dh)), "scale")])
    p = b.node("Softmax", [sc], axis=-1)
    ctx = b.node("MatMul", [p, heads_of(v)])
    ctx = b.node("Transpose", [ctx], perm=[0, 2, 1, 3])
    ctx = b.node("Reshape", [ctx, b.const(np.array([1, s, d], np.int64), "shape")])
    split = lambda t: t.reshape(1, s, heads, dh).transpose(0, 2, 1, 3)
    pr = softmax(split(qr) @ split(kr).transpose(0, 1, 3, 2) / np.sqrt(dh))
    ctxr = (pr @ split(vr)).transpose(0, 2, 1, 3).reshape(1, s, d)
    o, orr = linear(ctx, ctxr, d, d)
    h, hr = norm(b.node("Add", ["x", o]), xr + orr)
    f, fr = linear(h, hr, d, ff)
    # erf GELU as exporters write it: 0.5 x (1 + erf(x / sqrt 2))
    e = b.node("Erf", [b.node("Div", [f, b.const(np.float32(np.sqrt(2.0)), "sqrt2")])])
    g = b.node("Mul", [b.node("Mul", [f, b.node("Add", [e, b.const(np.float32(1), "one")])]),
                       b.const(np.float32(0.5), "half")])
    f2, f2r = linear(g, gelu(fr), ff, d)
    y, yr = norm(b.node("Add", [h, f2]), hr + f2r)
    return b.model("transformer%d" % opset, "x", [1, s, d], y, [1, s, d], opset), x, yr


def conv2d(x, w, bias, stride, pad):
    n, c, hh, ww = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = (hh + 2 * pad - kh) // stride + 1, (ww + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out + bias.reshape(1, -1, 1, 1)


def resnet_mini(dt=TensorProto.FLOAT):
    b = Builder(0, dt)
    x = b.f32(b.rng.standard_normal((1, 3, 64, 64)))

    def conv_bn(inp, ref, cin, cout, k, stride, relu):
        w = b.weight(cout, cin, k, k, scale=np.sqrt(2.0 / (cin * k * k)))
        bias = np.zeros(cout, np.float32)
        scale = b.f32(1 + 0.1 * b.rng.standard_normal(cout))
        shift = b.f32(0.1 * b.rng.standard_normal(cout))
        mean = b.f32(0.1 * b.rng.standard_normal(cout))
        var = b.f32(1 + 0.1 * np.abs(b.rng.standard_normal(cout)))
        pad = k // 2
        c = b.node("Conv", [inp, b.const(w, "w"), b.const(bias, "b")], kernel_shape=[k, k],
                   strides=[stride, stride], pads=[pad] * 4)
        out = b.node("BatchNormalization", [c, b.const(scale, "s"), b.const(shift, "sh"),
                                            b.const(mean, "m"), b.const(var, "v")],
                     epsilon=1e-5)
        r = conv2d(ref, w.astype(np.float64), bias, stride, pad)
        sh = lambda a: a.reshape(1, -1, 1, 1)
        r = (r - sh(mean)) / np.sqrt(sh(var) + 1e-5) * sh(scale) + sh(shift)
        if relu:
            out, r = b.node("Relu", [out]), np.maximum(r, 0)
        return out, r

    h, hr = conv_bn("x", x.astype(np.float64), 3, 32, 3, 1, True)
    for _ in range(3):
        a, ar = conv_bn(h, hr, 32, 32, 3, 1, True)
        a, ar = conv_bn(a, ar, 32, 32, 3, 1, False)
        h, hr = b.node("Relu", [b.node("Add", [a, h])]), np.maximum(ar + hr, 0)
    a, ar = conv_bn(h, hr, 32, 64, 3, 2, True)
    a, ar = conv_bn(a, ar, 64, 64, 3, 1, False)
    p, pr = conv_bn(h, hr, 32, 64, 1, 2, False)
    h, hr = b.node("Relu", [b.node("Add", [a, p])]), np.maximum(ar + pr, 0)
    g = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    gr = hr.mean(axis=(2, 3))
    w = b.weight(10, 64)
    bias = b.f32(0.1 * b.rng.standard_normal(10))
    y = b.node("Gemm", [g, b.const(w, "w"), b.const(bias, "b")], transB=1)
    return b.model("resnet_mini", "x", [1, 3, 64, 64], y, [1, 10], 13), x, gr @ w.T + bias


def resnet_mini_qdq():
    """resnet_mini as static quantization (QDQ) exports it, the batch norms
    folded into the convolutions: x quantized to uint8; every Conv between
    DequantizeLinear and QuantizeLinear, its weights int8 per output
    channel (symmetric), its bias int32 at scale xs ws, its Relu before the
    QuantizeLinear; the residual Adds, the pooling and the last Gemm in
    float between DequantizeLinear and QuantizeLinear. Scales come from the
    float model's own activations on this input (max |value| over 127, or
    255 after a Relu). The reference runs the same integer pipeline: each
    convolution's sum exact, cast to float32, its bias added, scaled by
    float32 xs ws / ys, rounded half to even; the float parts in float32."""
    b = Builder(0)
    f32 = np.float32
    x = b.f32(b.rng.standard_normal((1, 3, 64, 64)))
    scale = lambda v: b.const(np.array(v, f32), "s")
    zero = lambda v: b.const(np.array(v, np.uint8), "z")

    def qparams(v, relu):
        return (f32(np.abs(v).max() / 255), 0) if relu else (f32(np.abs(v).max() / 127), 128)

    def quant(v, s, z):         # QuantizeLinear in float32: x / s, half to even
        return np.clip(np.round(v.astype(f32) / f32(s)) + z, 0, 255)

    def deq(q, s, z):
        return ((q - z).astype(f32) * f32(s)).astype(f32)

    def q_node(name, s, z):
        return b.node("QuantizeLinear", [name, scale(s), zero(z)])

    def dq_node(name, s, z):
        return b.node("DequantizeLinear", [name, scale(s), zero(z)])

    def conv(inp, cin, cout, k, stride, relu):
        """inp = (name of its uint8 tensor, values, scale, zero point); the
        float model's folded weights give both the scales and the codes."""
        name, q, s, z = inp
        w = b.weight(cout, cin, k, k, scale=np.sqrt(2.0 / (cin * k * k)))
        a = b.f32(1 + 0.1 * b.rng.standard_normal(cout)) / np.sqrt(
            b.f32(1 + 0.1 * np.abs(b.rng.standard_normal(cout))) + 1e-5)
        shift = b.f32(0.1 * b.rng.standard_normal(cout))
        wf, bias = w * a.reshape(-1, 1, 1, 1), shift
        ws = (np.abs(wf).reshape(cout, -1).max(1) / 127).astype(f32)
        wq = np.clip(np.round(wf / ws.reshape(-1, 1, 1, 1)), -127, 127).astype(np.int8)
        bs = (f32(s) * ws).astype(f32)
        bq = np.round(bias / bs).astype(np.int32)
        pad = k // 2
        acc = conv_int(q.astype(np.int64), z, wq, np.zeros(cout, np.int64), stride, pad, 1)
        pf = acc.astype(f32) + bq.astype(f32).reshape(1, -1, 1, 1)
        yf = pf.astype(np.float64) * bs.astype(np.float64).reshape(1, -1, 1, 1)
        ys, yz = qparams(np.maximum(yf, 0) if relu else yf, relu)
        k_ = ((f32(s) * ws).astype(f32) / f32(ys)).astype(f32).reshape(1, -1, 1, 1)
        y = (pf * k_).astype(f32)
        y = np.maximum(y, 0) if relu else y
        yq = np.clip(np.round(y) + yz, 0, 255)
        wn = b.node("DequantizeLinear", [b.const(wq, "w"), b.const(ws, "ws"),
                                         b.const(np.zeros(cout, np.int8), "wz")], axis=0)
        bn = b.node("DequantizeLinear", [b.const(bq, "b"), b.const(bs, "bs"),
                                         b.const(np.zeros(cout, np.int32), "bz")], axis=0)
        c = b.node("Conv", [dq_node(name, s, z), wn, bn], kernel_shape=[k, k],
                   strides=[stride, stride], pads=[pad] * 4)
        if relu:
            c = b.node("Relu", [c])
        return q_node(c, ys, yz), yq, ys, yz

    def add_relu(p, r):
        v = np.maximum(deq(p[1], p[2], p[3]) + deq(r[1], r[2], r[3]), 0)
        s, z = qparams(v, True)
        n = b.node("Relu", [b.node("Add", [dq_node(p[0], p[2], p[3]), dq_node(r[0], r[2], r[3])])])
        return q_node(n, s, z), quant(v, s, z), s, z

    s0, z0 = qparams(x, False)
    h = (q_node("x", s0, z0), quant(x, s0, z0), s0, z0)
    h = conv(h, 3, 32, 3, 1, True)
    for _ in range(3):
        a = conv(conv(h, 32, 32, 3, 1, True), 32, 32, 3, 1, False)
        h = add_relu(a, h)
    a = conv(conv(h, 32, 64, 3, 2, True), 64, 64, 3, 1, False)
    h = add_relu(a, conv(h, 32, 64, 1, 2, False))
    g = b.node("Flatten", [b.node("GlobalAveragePool", [dq_node(h[0], h[2], h[3])])])
    gr = deq(h[1], h[2], h[3]).astype(np.float64).mean(axis=(2, 3))
    w = b.weight(10, 64)
    bias = b.f32(0.1 * b.rng.standard_normal(10))
    y = b.node("Gemm", [g, b.const(w, "w"), b.const(bias, "b")], transB=1)
    return b.model("resnet_mini_qdq", "x", [1, 3, 64, 64], y, [1, 10], 13), x, gr @ w.T + bias


def dynamic():
    """A model whose input has a symbolic batch dimension: no static shape."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "dynamic",
                          [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def unsupported():
    """A model with an op the device has no mapping for (Unique: its
    outputs' size depends on the values), after one it has."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])
    v = helper.make_tensor_value_info("v", TensorProto.FLOAT, ["u"])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, ["u"])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                           helper.make_node("Unique", ["r"], ["v", "i"], name="uniq")],
                          "unsupported", [x], [v, i])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def legacy_refused():
    """Opset-6 nodes that have no opset-7 meaning here: an Add of unequal
    shapes without broadcast=1, a BatchNormalization in training
    (is_test=0). Each refusal names its node, op and reason."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3])
    b = numpy_helper.from_array(np.ones([3], np.float32), "b")
    add = helper.make_graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                             helper.make_node("Add", ["r", "b"], ["y"], name="add")],
                            "legacy_add", [x], [y], [b])
    p = [numpy_helper.from_array(np.ones([2], np.float32), n) for n in "smbv"]
    bn = helper.make_graph([helper.make_node("BatchNormalization", ["x", "s", "m", "b", "v"],
                                             ["y"], name="bn", is_test=0)],
                           "legacy_bn", [x], [y], p)
    models = []
    for g in (add, bn):
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 6)])
        m.ir_version = 3
        models.append(m)
    return models


def legacy_ops():
    """Opset 6, as PyTorch exported until 2018: a conv bias added with
    broadcast=1 at axis 1 (lined up with the channels, not the last
    dimension), a per-channel PRelu slope, a suffix-aligned Mul and a
    BatchNormalization with is_test=1."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    bias, slope = b.weight(3, scale=1.0), np.abs(b.weight(3, scale=0.5))
    row = b.weight(5, scale=1.0)
    s, sh = (1 + 0.1 * b.rng.standard_normal(3)), 0.1 * b.rng.standard_normal(3)
    m, v = 0.1 * b.rng.standard_normal(3), 1 + 0.1 * np.abs(b.rng.standard_normal(3))
    s, sh, m, v = (a.astype(np.float32) for a in (s, sh, m, v))
    y = b.node("Add", ["x", b.const(bias, "bias")], broadcast=1, axis=1)
    y = b.node("PRelu", [y, b.const(slope, "slope")])
    y = b.node("Mul", [y, b.const(row, "row")], broadcast=1)
    y = b.node("BatchNormalization", [y, b.const(s, "s"), b.const(sh, "sh"), b.const(m, "m"),
                                      b.const(v, "v")], is_test=1, epsilon=1e-3)
    c = lambda a: a.astype(np.float64).reshape(1, -1, 1, 1)
    ref = x.astype(np.float64) + c(bias)
    ref = np.where(ref > 0, ref, ref * c(slope)) * row.astype(np.float64)
    ref = (ref - c(m)) / np.sqrt(c(v) + 1e-3) * c(s) + c(sh)
    return b.model("legacy_ops", "x", [2, 3, 4, 5], y, [2, 3, 4, 5], 6), x, ref


def int_shapes():
    """Shape arithmetic through int32, as exporters write it (Shape, Cast
    to int32, Slice, Concat, Cast back to int64, Reshape), and a constant
    that wraps casting to int8 (300 -> 44), all folded on the host."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 3, 4)).astype(np.float32)
    shp = b.node("Cast", [b.node("Shape", ["x"])], to=TensorProto.INT32)
    head = b.node("Slice", [shp, b.const(np.array([0], np.int32), "s"),
                            b.const(np.array([1], np.int32), "e")])
    shp = b.node("Concat", [head, b.const(np.array([-1], np.int32), "rest")], axis=0)
    y = b.node("Reshape", ["x", b.node("Cast", [shp], to=TensorProto.INT64)])
    k = b.node("Cast", [b.node("Cast", [b.const(np.array(300, np.int64), "k")],
                                to=TensorProto.INT8)], to=TensorProto.FLOAT)
    y = b.node("Add", [b.node("Relu", [y]), k])
    ref = np.maximum(x.astype(np.float64).reshape(2, 12), 0) + 44
    return b.model("int_shapes", "x", [2, 3, 4], y, [2, 12], 13), x, ref


def shape_if():
    """An If on a condition computed from the static shape (as exporters
    write `if x.shape[0] > 1:`): folded at import, its then_branch (with
    an initializer of its own) inlined. The branch applies Relu to h, an
    outer GEMM's output the outer graph reads again after the If, so the
    Relu must not fuse into that GEMM."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 3)).astype(np.float32)
    w = b.weight(3, 3, scale=1.0)
    h = b.node("MatMul", ["x", b.const(w, "w")])
    n0 = b.node("Gather", [b.node("Shape", ["x"]), b.const(np.array(0, np.int64), "i")])
    cond = b.node("Greater", [n0, b.const(np.array(1, np.int64), "one")])
    two = numpy_helper.from_array(np.array(2, np.float32), "two")
    then = helper.make_graph([helper.make_node("Relu", [h], ["r"], name="relu"),
                              helper.make_node("Mul", ["r", "two"], ["t"], name="twice")],
                             "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT,
                                                                        [2, 3])], [two])
    other = helper.make_graph([helper.make_node("Neg", [h], ["e"], name="neg")], "else", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    y = b.node("If", [cond], then_branch=then, else_branch=other)
    y = b.node("Add", [y, h])
    hr = x.astype(np.float64) @ w.astype(np.float64)
    ref = np.maximum(hr, 0) * 2 + hr
    return b.model("shape_if", "x", [2, 3], y, [2, 3], 13), x, ref


def if_computed():
    """An If whose condition the device computes and whose then_branch
    gathers by values it computes: a select would run it on data it was
    not meant for, so it is refused, saying so."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, "m"])
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    then = helper.make_graph(
        [helper.make_node("ArgMax", ["x"], ["i"], axis=1, keepdims=1),
         helper.make_node("GatherElements", ["x", "i"], ["t"], axis=1, name="pick")],
        "t", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 1])])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
                           helper.make_node("Greater", ["s", "zero"], ["c"], name="positive"),
                           helper.make_node("If", ["c"], ["y"], name="branch",
                                            then_branch=then, else_branch=other)],
                          "if_computed", [x], [y], [zero])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def if_select(positive):
    """An If on a value the device computes, as a wake-word model runs its
    verifier only when its detector fires: y = x > 0 summed ? relu(x W) + 1
    : -x. It runs as a select of both branches; the data makes the
    condition true (if_select) or false (if_select_neg)."""
    b = Builder(3)
    x = b.rng.standard_normal((2, 3)).astype(np.float32)
    x = np.abs(x) if positive else -np.abs(x)
    w = b.weight(3, 3)
    then = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["r"]),
         helper.make_node("Add", ["r", "one"], ["t"])], "t",
        [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.float32(1), "one")])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "e", [],
                              [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, 3])])
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
                           helper.make_node("Greater", ["s", "zero"], ["c"], name="positive"),
                           helper.make_node("If", ["c"], ["y"], name="verify",
                                            then_branch=then, else_branch=other)],
                          "if_select", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [zero])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    xr = x.astype(np.float64)
    ref = np.maximum(xr @ w.astype(np.float64), 0) + 1 if positive else -xr
    return m, x, ref


def loop_scan():
    """A Loop and a Scan as exporters write them, unrolled at import. The
    Loop's trip count comes from x's shape (4) but its condition ends it
    after 3 iterations; each subtracts xs[i] from a decaying sum on the
    device and collects tanh of it. The Scan walks x backwards and x's
    transpose along axis 1 at once, and stacks its outputs reversed along
    axis 1. One output mixes all of them: scans @ ys + h + sum(relu(xs)).
    The body reads xs = 1.5 x from the graph around it, which a Relu right
    after reads too: it may not be fused into xs's Mul in place."""
    rng = np.random.RandomState(5)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    n = helper.make_node
    vi = helper.make_tensor_value_info
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    body = helper.make_graph(
        [n("Gather", ["xs", "i"], ["row"], axis=0), n("Neg", ["row"], ["r"]),
         n("Mul", ["acc", "half"], ["decayed"]), n("Add", ["decayed", "r"], ["acc_out"]),
         n("Less", ["i", "two"], ["c_out"]), n("Tanh", ["acc_out"], ["collected"])],
        "loop_body", [vi("i", i64, []), vi("c", b, []), vi("acc", f, [3])],
        [vi("c_out", b, []), vi("acc_out", f, [3]), vi("collected", f, [3])],
        [numpy_helper.from_array(np.float32(0.5), "half"),
         numpy_helper.from_array(np.array(2, np.int64), "two")])
    scan_body = helper.make_graph(
        [n("Mul", ["a", "bt"], ["ab"]), n("Add", ["h", "ab"], ["h_out"]),
         n("Sigmoid", ["h_out"], ["y"])],
        "scan_body", [vi("h", f, [3]), vi("a", f, [3]), vi("bt", f, [3])],
        [vi("h_out", f, [3]), vi("y", f, [3])])
    g = helper.make_graph(
        [n("Shape", ["x"], ["shape"]), n("Gather", ["shape", "zero"], ["rows"], axis=0),
         n("Mul", ["x", "scale"], ["xs"]), n("Relu", ["xs"], ["xr"]),
         n("ReduceSum", ["xr"], ["rs"], keepdims=0),
         n("Loop", ["rows", "yes", "acc0"], ["accf", "scans"], name="decay", body=body),
         n("Transpose", ["x"], ["xt"], perm=[1, 0]),
         n("Scan", ["accf", "x", "xt"], ["h", "ys"], name="walk", body=scan_body,
           num_scan_inputs=2, scan_input_axes=[0, 1], scan_input_directions=[1, 0],
           scan_output_axes=[1], scan_output_directions=[1]),
         n("MatMul", ["scans", "ys"], ["mm"]), n("Unsqueeze", ["h", "one"], ["hc"]),
         n("Add", ["mm", "hc"], ["mh"]), n("Add", ["mh", "rs"], ["out"])],
        "loop_scan", [vi("x", f, [4, 3])], [vi("out", f, [3, 4])],
        [numpy_helper.from_array(np.array(0, np.int64), "zero"),
         numpy_helper.from_array(np.array(True), "yes"),
         numpy_helper.from_array(np.zeros(3, np.float32), "acc0"),
         numpy_helper.from_array(np.array([1], np.int64), "one"),
         numpy_helper.from_array(np.float32(1.5), "scale")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    xr = x.astype(np.float64)
    acc, scans = np.zeros(3), []
    for i in range(3):
        acc = acc * 0.5 - 1.5 * xr[i]
        scans.append(np.tanh(acc))
    h, ys = acc, []
    for t in range(4):
        h = h + xr[3 - t] * xr.T[:, t]
        ys.append(1 / (1 + np.exp(-h)))
    ys = np.stack(ys[::-1], axis=1)
    return m, x, np.stack(scans) @ ys + h[:, None] + np.maximum(1.5 * xr, 0).sum()


def loop_forever():
    """A Loop with no trip count whose condition its body passes through
    unchanged (true): it would never end, and is refused once unrolled
    past the importer's limit, quickly."""
    vi = helper.make_tensor_value_info
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    body = helper.make_graph([helper.make_node("Identity", ["v"], ["v_out"])], "body",
                             [vi("i", i64, []), vi("c", b, []), vi("v", f, [2])],
                             [vi("c", b, []), vi("v_out", f, [2])])
    g = helper.make_graph([helper.make_node("Loop", ["", "yes", "x"], ["y"], name="spin",
                                            body=body)],
                          "loop_forever", [vi("x", f, [2])], [vi("y", f, [2])],
                          [numpy_helper.from_array(np.array(True), "yes")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def loop_refused(computed):
    """Loops the importer refuses, saying why and where: one whose trip
    count the device computes (the sum of x, cast), as the device runs a
    static task list; one of two iterations whose body holds an op the
    device lacks, named with its iteration."""
    n = helper.make_node
    vi = helper.make_tensor_value_info
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    step = [] if computed else [n("Unique", ["v"], ["u", "idx"], name="uniq", sorted=1)]
    body = helper.make_graph([n("Identity", ["c"], ["c_out"])] + step +
                             [n("Neg", ["v"], ["v_out"])],
                             "body", [vi("i", i64, []), vi("c", b, []), vi("v", f, [2, 3])],
                             [vi("c_out", b, []), vi("v_out", f, [2, 3])])
    first = [n("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
             n("Cast", ["s"], ["m"], name="count", to=i64)] if computed else []
    g = helper.make_graph(first + [n("Loop", ["m", "", "x"], ["y"], name="repeat", body=body)],
                          "loop_refused", [vi("x", f, [2, 3])], [vi("y", f, [2, 3])],
                          [] if computed else [numpy_helper.from_array(np.array(2, np.int64), "m")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def pinned():
    """Symbolic batch and sequence dimensions, as exporters leave them: a
    linear layer and a Relu over [batch, seq, 4]. The data is for batch 2,
    seq 3, as the test pins them."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 3, 4)).astype(np.float32)
    w = b.weight(4, 5)
    y = b.node("Relu", [b.node("MatMul", ["x", b.const(w, "w")])])
    ref = np.maximum(x.astype(np.float64) @ w.astype(np.float64), 0)
    return b.model("pinned", "x", ["batch", "seq", 4], y, ["batch", "seq", 5], 13), x, ref


def pinned_value():
    """A model branching on a sample rate it takes as an input (as voice
    activity detectors do): with the rate's value pinned the If folds and
    its branch inlines; the data is for sr = 16000 (Relu)."""
    rng = np.random.RandomState(0)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    k = numpy_helper.from_array(np.array(16000, np.int64), "k16")
    br = lambda op, o: helper.make_graph([helper.make_node(op, ["x"], [o])], o, [],
                                         [helper.make_tensor_value_info(o, TensorProto.FLOAT,
                                                                        [2, 3])])
    g = helper.make_graph([helper.make_node("Equal", ["sr", "k16"], ["is16"], name="is16k"),
                           helper.make_node("If", ["is16"], ["y"], name="by_rate",
                                            then_branch=br("Relu", "t"),
                                            else_branch=br("Neg", "e"))],
                          "pinned_value",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
                           helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [k])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m, x, np.maximum(x.astype(np.float64), 0)


def reflect_wide():
    """A reflect Pad wider than copies are worth (as an STFT pads audio):
    80 positions along one dimension, 2 along another."""
    b = Builder(0)
    x = b.rng.standard_normal((3, 100)).astype(np.float32)
    y = b.node("Pad", ["x", b.const(np.array([1, 40, 1, 40], np.int64), "pads")], mode="reflect")
    ref = np.pad(x.astype(np.float64), ((1, 1), (40, 40)), mode="reflect")
    return b.model("reflect_wide", "x", [3, 100], y, [5, 180], 13), x, ref


def lstm():
    """An LSTM of 2 steps with biases and initial states, every output read
    (Y, Y_h and Y_c), as one. Batch 1, as streaming audio models run: the
    recurrent product's bias-like add then fuses into its GEMM, where an
    activation once fused too, over all four gates at once."""
    b = Builder(0)
    S, B, I, H = 2, 1, 64, 64
    x = b.rng.standard_normal((S, B, I)).astype(np.float32)
    w, r = b.weight(1, 4 * H, I), b.weight(1, 4 * H, H)
    bias = b.f32(0.1 * b.rng.standard_normal((1, 8 * H)))
    h0, c0 = (b.f32(0.5 * b.rng.standard_normal((1, B, H))) for _ in range(2))
    y, yh, yc = b.node("LSTM", ["x", b.const(w, "W"), b.const(r, "R"), b.const(bias, "B"), "",
                                b.const(h0, "h0"), b.const(c0, "c0")], n_out=3, hidden_size=H)
    flat = lambda t, n: b.node("Reshape", [t, b.const(np.array([n, H], np.int64), "s")])
    out = b.node("Concat", [flat(y, S * B), flat(yh, B), flat(yc, B)], axis=0)
    sig = lambda v: 1 / (1 + np.exp(-v))
    w64, r64, b64 = (a.astype(np.float64)[0] for a in (w, r, bias))
    h, c, ys = h0.astype(np.float64)[0], c0.astype(np.float64)[0], []
    for t in range(S):
        g = x[t].astype(np.float64) @ w64.T + h @ r64.T + b64[:4 * H] + b64[4 * H:]
        i, o, f, cc = sig(g[:, :H]), sig(g[:, H:2 * H]), sig(g[:, 2 * H:3 * H]), np.tanh(g[:, 3 * H:])
        c = f * c + i * cc
        h = o * np.tanh(c)
        ys.append(h)
    ref = np.concatenate([np.concatenate(ys), h, c])
    return b.model("lstm", "x", [S, B, I], out, [(S + 2) * B, H], 14), x, ref


def gru():
    """A GRU of 3 steps as PyTorch exports one (linear_before_reset=1), with
    biases, its sequence and last state read (as one)."""
    b = Builder(0)
    S, B, I, H = 3, 2, 4, 5
    x = b.rng.standard_normal((S, B, I)).astype(np.float32)
    w, r = b.weight(1, 3 * H, I), b.weight(1, 3 * H, H)
    bias = b.f32(0.1 * b.rng.standard_normal((1, 6 * H)))
    y, yh = b.node("GRU", ["x", b.const(w, "W"), b.const(r, "R"), b.const(bias, "B")],
                   n_out=2, hidden_size=H, linear_before_reset=1)
    flat = lambda t, n: b.node("Reshape", [t, b.const(np.array([n, H], np.int64), "s")])
    out = b.node("Concat", [flat(y, S * B), flat(yh, B)], axis=0)
    sig = lambda v: 1 / (1 + np.exp(-v))
    w64, r64, b64 = (a.astype(np.float64)[0] for a in (w, r, bias))
    wb, rb = b64[:3 * H], b64[3 * H:]
    h, ys = np.zeros((B, H)), []
    for t in range(S):
        gx = x[t].astype(np.float64) @ w64.T + wb
        gh = h @ r64.T + rb
        z = sig(gx[:, :H] + gh[:, :H])
        rr = sig(gx[:, H:2 * H] + gh[:, H:2 * H])
        cand = np.tanh(gx[:, 2 * H:] + rr * gh[:, 2 * H:])
        h = (1 - z) * cand + z * h
        ys.append(h)
    ref = np.concatenate([np.concatenate(ys), h])
    return b.model("gru", "x", [S, B, I], out, [(S + 1) * B, H], 14), x, ref


def rnn_acts():
    """Recurrent ops with every activation function ONNX names for them
    (alpha and beta taken in order by the functions that read one), clip
    and LSTM's input_forget: an LSTM (HardSigmoid, LeakyRelu, Softsign;
    clip 1.5, f = 1 - i), a reverse GRU (HardSigmoid, Elu), a
    bidirectional RNN (ScaledTanh, Softplus) and one (ThresholdedRelu,
    Affine) after it, then Relu; their sequences and last states, as one."""
    b = Builder(3)
    S, B, I, H = 3, 2, 4, 5
    x = b.rng.standard_normal((S, B, I)).astype(np.float32)
    sig = lambda v: 1 / (1 + np.exp(-v))
    fn = {
        "HardSigmoid": lambda v, a, c: np.clip(a * v + c, 0, 1),
        "LeakyRelu": lambda v, a, c: np.where(v >= 0, v, a * v),
        "Softsign": lambda v, a, c: v / (1 + np.abs(v)),
        "Elu": lambda v, a, c: np.where(v >= 0, v, a * (np.exp(v) - 1)),
        "ScaledTanh": lambda v, a, c: a * np.tanh(c * v),
        "Softplus": lambda v, a, c: np.log1p(np.exp(v)),
        "ThresholdedRelu": lambda v, a, c: np.where(v > a, v, 0),
        "Affine": lambda v, a, c: a * v + c,
        "Relu": lambda v, a, c: np.maximum(v, 0),
    }
    f64 = lambda a: a.astype(np.float64)
    flat = lambda t, n: b.node("Reshape", [t, b.const(np.array([n, H], np.int64), "s")])

    def weights(dirs, gates, inp, scale):
        w, r = b.weight(dirs, gates * H, inp, scale=scale), b.weight(dirs, gates * H, H, scale=scale)
        return w, r, b.f32(0.1 * b.rng.standard_normal((dirs, 2 * gates * H)))

    # LSTM: gates i, o, f, c; clip on every gate's input; f = 1 - i
    acts, alphas, betas, clip = ["HardSigmoid", "LeakyRelu", "Softsign"], [0.3, 0.05], [0.4], 1.5
    w, r, bias = weights(1, 4, I, 1.2)
    y1, h1, c1 = b.node("LSTM", ["x", b.const(w, "W"), b.const(r, "R"), b.const(bias, "B")],
                        n_out=3, hidden_size=H, activations=acts, activation_alpha=alphas,
                        activation_beta=betas, clip=clip, input_forget=1)
    f = lambda v: fn["HardSigmoid"](np.clip(v, -clip, clip), 0.3, 0.4)
    g = lambda v: fn["LeakyRelu"](np.clip(v, -clip, clip), 0.05, 0)
    hh = lambda v: fn["Softsign"](v, 0, 0)
    h, c, ys = np.zeros((B, H)), np.zeros((B, H)), []
    for t in range(S):
        z = f64(x[t]) @ f64(w[0]).T + h @ f64(r[0]).T + f64(bias[0, :4 * H]) + f64(bias[0, 4 * H:])
        i, o, cc = f(z[:, :H]), f(z[:, H:2 * H]), g(z[:, 3 * H:])
        c = (1 - i) * c + i * cc
        h = o * hh(c)
        ys.append(h)
    parts = [np.concatenate(ys), h, c]
    outs = [flat(y1, S * B), flat(h1, B), flat(c1, B)]

    # GRU, reverse, linear_before_reset 0: z, r, h~
    w, r, bias = weights(1, 3, I, 1.0)
    y2, h2 = b.node("GRU", ["x", b.const(w, "W"), b.const(r, "R"), b.const(bias, "B")], n_out=2,
                    hidden_size=H, direction="reverse", activations=["HardSigmoid", "Elu"],
                    activation_alpha=[0.25, 0.9], activation_beta=[0.45])
    w64, r64, b64 = f64(w[0]), f64(r[0]), f64(bias[0])
    h, ys = np.zeros((B, H)), [None] * S
    for t in reversed(range(S)):
        gx = f64(x[t]) @ w64.T + b64[:3 * H]
        z = fn["HardSigmoid"](gx[:, :H] + h @ r64[:H].T + b64[3 * H:4 * H], 0.25, 0.45)
        rr = fn["HardSigmoid"](gx[:, H:2 * H] + h @ r64[H:2 * H].T + b64[4 * H:5 * H], 0.25, 0.45)
        cand = fn["Elu"](gx[:, 2 * H:] + (rr * h) @ r64[2 * H:].T + b64[5 * H:], 0.9, 0)
        h = (1 - z) * cand + z * h
        ys[t] = h
    parts += [np.concatenate(ys), h]
    outs += [flat(y2, S * B), flat(h2, B)]

    # RNNs, bidirectional: forward with the first function, reverse with the second
    def rnn(acts, alphas, betas, pairs, inp, xin, x64):
        w, r, bias = weights(2, 1, inp, 1.0)
        y, yh = b.node("RNN", [xin, b.const(w, "W"), b.const(r, "R"), b.const(bias, "B")], n_out=2,
                       hidden_size=H, direction="bidirectional", activations=acts,
                       activation_alpha=alphas, activation_beta=betas)
        ys = np.zeros((S, 2, B, H))
        last = []
        for d in range(2):
            h = np.zeros((B, H))
            for t in (range(S) if d == 0 else reversed(range(S))):
                v = x64[t] @ f64(w[d]).T + h @ f64(r[d]).T + f64(bias[d, :H]) + f64(bias[d, H:])
                h = fn[acts[d]](v, *pairs[d])
                ys[t, d] = h
            last.append(h)
        return y, yh, ys, np.stack(last)

    y3, h3, ys3, last3 = rnn(["ScaledTanh", "Softplus"], [0.8], [0.6], [(0.8, 0.6), (0, 0)], I,
                             "x", f64(x))
    # the second reads the first's forward sequence: Y [S, 2, B, H] -> [S, B, H]
    fwd = b.node("Squeeze", [b.node("Slice", [y3, b.const(np.array([0], np.int64), "st"),
                                              b.const(np.array([1], np.int64), "en"),
                                              b.const(np.array([1], np.int64), "ax")]),
                             b.const(np.array([1], np.int64), "ax")])
    y4, h4, ys4, last4 = rnn(["ThresholdedRelu", "Affine"], [0.1, 0.5], [0.2], [(0.1, 0), (0.5, 0.2)],
                             H, fwd, ys3[:, 0])
    y5 = b.node("Relu", [y4])
    parts += [ys3.reshape(-1, H), last3.reshape(-1, H), np.maximum(ys4, 0).reshape(-1, H),
              last4.reshape(-1, H)]
    outs += [flat(y3, S * 2 * B), flat(h3, 2 * B), flat(y5, S * 2 * B), flat(h4, 2 * B)]
    out = b.node("Concat", outs, axis=0)
    ref = np.concatenate(parts)
    return b.model("rnn_acts", "x", [S, B, I], out, list(ref.shape), 14), x, ref


def trilu():
    """Lower and upper triangles of a batch of float matrices (Trilu, opset 14)."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 5, 4)).astype(np.float32)
    lo = b.node("Trilu", ["x", b.const(np.array(-1, np.int64), "k")], upper=0)
    up = b.node("Trilu", ["x", b.const(np.array(2, np.int64), "k")], upper=1)
    y = b.node("Add", [lo, up])
    ref = np.tril(x.astype(np.float64), -1) + np.triu(x.astype(np.float64), 2)
    return b.model("trilu", "x", [2, 5, 4], y, [2, 5, 4], 14), x, ref


def relu_bn():
    """A BatchNormalization that follows no Conv: folded to a scale and shift."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 3, 5, 5)).astype(np.float32)
    s, sh = (1 + 0.1 * b.rng.standard_normal(3)), 0.1 * b.rng.standard_normal(3)
    m, v = 0.1 * b.rng.standard_normal(3), 1 + 0.1 * np.abs(b.rng.standard_normal(3))
    s, sh, m, v = (a.astype(np.float32) for a in (s, sh, m, v))
    y = b.node("BatchNormalization", [b.node("Relu", ["x"]), b.const(s, "s"), b.const(sh, "sh"),
                                      b.const(m, "m"), b.const(v, "v")], epsilon=0.5)
    c = lambda a: a.astype(np.float64).reshape(1, -1, 1, 1)
    ref = (np.maximum(x, 0) - c(m)) / np.sqrt(c(v) + 0.5) * c(s) + c(sh)
    return b.model("relu_bn", "x", [2, 3, 5, 5], y, [2, 3, 5, 5], 13), x, ref


def layernorm_written_out():
    """Layer normalizations as PyTorch exports nn.LayerNorm below opset 17:
    ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, with the Constant
    nodes of 2 and eps between them. The first (then Mul, Add: its affine
    part) becomes one LAYERNORM; the second does not, as its centred values
    are read again after it."""
    b = Builder(0)
    x = b.rng.standard_normal((3, 7, 40)).astype(np.float32) * 3 + 1
    g = (1 + 0.1 * b.rng.standard_normal(40)).astype(np.float32)
    sh = (0.1 * b.rng.standard_normal(40)).astype(np.float32)

    def written_out(v, eps):
        m = b.node("ReduceMean", [v], axes=[-1])
        d = b.node("Sub", [v, m])
        two = b.node("Constant", [], value=numpy_helper.from_array(np.array(2, np.float32)))
        p = b.node("Pow", [d, two])
        var = b.node("ReduceMean", [p], axes=[-1])
        e = b.node("Constant", [], value=numpy_helper.from_array(np.array(eps, np.float32)))
        return d, b.node("Div", [d, b.node("Sqrt", [b.node("Add", [var, e])])])

    _, n1 = written_out("x", 1e-5)
    a = b.node("Add", [b.node("Mul", [n1, b.const(g, "g")]), b.const(sh, "sh")])
    d2, n2 = written_out(a, 1e-3)
    y = b.node("Add", [n2, b.node("Mul", [d2, b.const(np.array(0.5, np.float32), "half")])])

    def ref_ln(v, eps):
        m = v.mean(-1, keepdims=True)
        return v - m, (v - m) / np.sqrt(((v - m) ** 2).mean(-1, keepdims=True) + eps)

    _, r1 = ref_ln(x.astype(np.float64), 1e-5)
    ra = r1 * g + sh
    rd2, r2 = ref_ln(ra, 1e-3)
    return b.model("layernorm_written_out", "x", [3, 7, 40], y, [3, 7, 40], 13), x, r2 + 0.5 * rd2


def picked_column():
    """Computed indices: the column whose sum is largest (ReduceSum, ArgMax into a
    scalar int64), gathered (Gather of a computed scalar index) from |x| made by
    Greater, Neg and Where (bool and int64 tensors on the device)."""
    b = Builder(0)
    x = b.rng.standard_normal((4, 6)).astype(np.float32)
    s = b.node("ReduceSum", ["x", b.const(np.array([0], np.int64), "axes")], keepdims=0)
    i = b.node("ArgMax", [s], axis=0, keepdims=0)
    zero = b.const(np.array(0, np.float32), "zero")
    a = b.node("Where", [b.node("Greater", ["x", zero]), "x", b.node("Neg", ["x"])])
    y = b.node("Gather", [a, i], axis=1)
    xd = x.astype(np.float64)
    ref = np.abs(xd)[:, int(np.argmax(x.sum(axis=0)))]
    return b.model("picked_column", "x", [4, 6], y, [4], 13), x, ref


def half_folds():
    """Constants folded in float16 and bfloat16 round as ONNX computes them: each
    product of two half-precision constants to its type, so subtracting the
    rounded product (give or take an ulp) leaves 0 or an ulp, which a Cast to
    float and a scale make large enough to see next to x."""
    b = Builder(0)
    x = b.rng.standard_normal((2, 8)).astype(np.float32)
    y, ref = "x", x.astype(np.float64)
    for dt, bits, scale in ((TensorProto.FLOAT16, 11, 4096.0), (TensorProto.BFLOAT16, 8, 256.0)):
        p, q = (rounded(b.rng.uniform(0.5, 1.0, (2, 8)), dt) for _ in range(2))
        exact = rounded(p * q, dt)              # in [0.25, 1): an ulp is 2^-bits or less
        ulp = np.where(exact < 0.5, 2.0 ** -(bits + 1), 2.0 ** -bits).astype(np.float32)
        off = b.rng.randint(-1, 2, (2, 8)).astype(np.float32)
        r = rounded(exact + off * ulp, dt)
        d = b.node("Sub", [b.node("Mul", [b.const(p, "p", dt), b.const(q, "q", dt)]),
                           b.const(r, "r", dt)])
        d = b.node("Mul", [b.node("Cast", [d], to=TensorProto.FLOAT),
                           b.const(np.array(scale, np.float32), "scale")])
        y = b.node("Add", [y, d])
        ref = ref + (exact.astype(np.float64) - r) * scale
    return b.model("half_folds", "x", [2, 8], y, [2, 8], 13), x, ref


def pad_f16():
    """A constant Pad of a float16 image (opset 11: the value as an input), the
    value rounded to float16 and repeated through every padded element."""
    b = Builder(0, TensorProto.FLOAT16)
    x = b.f32(b.rng.standard_normal((1, 2, 3, 4)))
    pads = np.array([0, 0, 1, 2, 0, 0, 1, 1], np.int64)
    y = b.node("Pad", ["x", b.const(pads, "pads"), b.const(np.array(0.3, np.float32), "v")],
               mode="constant")
    ref = np.pad(x, [(0, 0), (0, 0), (1, 1), (2, 1)], constant_values=b.f32(0.3))
    return b.model("pad_f16", "x", [1, 2, 3, 4], y, [1, 2, 5, 7], 11), x, ref


def shared_conv():
    """A Conv output read by two activations (neither may fuse into the Conv),
    a Gemm + bias + Relu, a MatMul + Add and a GELU with the wrong constant: what
    fuses and what must not."""
    b = Builder(0)
    x = b.rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    w, bias = b.weight(4, 3, 3, 3), b.weight(4)
    c = b.node("Conv", ["x", b.const(w, "w"), b.const(bias, "b")], pads=[1, 1, 1, 1])
    y = b.node("Add", [b.node("Relu", [c]), b.node("Sigmoid", [c])])
    f = b.node("Flatten", [y], axis=1)
    g1, g1b = b.weight(144, 8), b.weight(8)
    h = b.node("Relu", [b.node("Gemm", [f, b.const(g1, "g1"), b.const(g1b, "g1b")])])
    m2, m2b = b.weight(8, 5), b.weight(5)
    z = b.node("Add", [b.node("MatMul", [h, b.const(m2, "m2")]), b.const(m2b, "m2b")])
    # the erf GELU's five nodes, but halved once more: no GELU
    e = b.node("Erf", [b.node("Div", [z, b.const(np.array(np.sqrt(2), np.float32), "sqrt2")])])
    e = b.node("Add", [e, b.const(np.array(1, np.float32), "one")])
    q = b.node("Mul", [b.node("Mul", [z, e]), b.const(np.array(0.25, np.float32), "quarter")])
    cv = conv2d(x.astype(np.float64), w.astype(np.float64), bias.astype(np.float64), 1, 1)
    yr = np.maximum(cv, 0) + 1 / (1 + np.exp(-cv))
    hr = np.maximum(yr.reshape(1, -1) @ g1.astype(np.float64) + g1b, 0)
    ref = gelu(hr @ m2.astype(np.float64) + m2b) * 0.5
    return b.model("shared_conv", "x", [1, 3, 6, 6], q, [1, 5], 13), x, ref


def windows3d(xp, k, st, dl, out):
    """Each tap (i, j, l) of a 3-D window over padded xp: its strided patch."""
    for t in np.ndindex(*k):
        sl = tuple(slice(t[d] * dl[d], t[d] * dl[d] + st[d] * (out[d] - 1) + 1, st[d])
                   for d in range(3))
        yield t, xp[(slice(None), slice(None)) + sl]


def video_cnn():
    """3-D windows whose dimensions all differ (a swap of any two shows), on
    5-D and 6-D tensors."""
    b = Builder(0)
    x = b.rng.standard_normal((1, 2, 5, 9, 8)).astype(np.float32)
    w, bias = b.weight(3, 2, 3, 2, 3), b.weight(3)
    k, st, dl, p0, p1 = (3, 2, 3), (1, 2, 1), (1, 1, 2), (1, 0, 1), (0, 1, 2)
    c = b.node("Relu", [b.node("Conv", ["x", b.const(w, "w"), b.const(bias, "b")],
                               kernel_shape=list(k), strides=list(st), dilations=list(dl),
                               pads=list(p0 + p1))])
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0)) + tuple(zip(p0, p1)))
    out = [(xp.shape[2 + d] - dl[d] * (k[d] - 1) - 1) // st[d] + 1 for d in range(3)]
    cr = np.zeros([1, 3] + out)
    for t, patch in windows3d(xp, k, st, dl, out):
        cr += np.einsum("ncdhw,oc->nodhw", patch, w[(slice(None), slice(None)) + t])
    cr = np.maximum(cr + bias.reshape(1, -1, 1, 1, 1), 0)
    # MaxPool: kernel [2, 3, 1], strides [1, 1, 2], no padding
    mk, ms = (2, 3, 1), (1, 1, 2)
    m = b.node("MaxPool", [c], kernel_shape=list(mk), strides=list(ms))
    mo = [(cr.shape[2 + d] - mk[d]) // ms[d] + 1 for d in range(3)]
    mr = np.max([p for _, p in windows3d(cr, mk, ms, (1, 1, 1), mo)], axis=0)
    # AveragePool: kernel [1, 2, 2], pads [0, 1, 0] / [0, 0, 1], padding not counted
    ak, ap0, ap1 = (1, 2, 2), (0, 1, 0), (0, 0, 1)
    a = b.node("AveragePool", [m], kernel_shape=list(ak), pads=list(ap0 + ap1))
    mp = np.pad(mr, ((0, 0), (0, 0)) + tuple(zip(ap0, ap1)), constant_values=np.nan)
    ao = [mp.shape[2 + d] - ak[d] + 1 for d in range(3)]
    ar = np.nanmean([p for _, p in windows3d(mp, ak, (1, 1, 1), (1, 1, 1), ao)], axis=0)
    # Pad reflect on the rows, edge on the depth, then a 6-D view of it
    r = b.node("Pad", [a, b.const(np.array([0, 0, 0, 1, 0, 0, 0, 0, 2, 0], np.int64),
                                  "pads")], mode="reflect")
    e = b.node("Pad", [r, b.const(np.array([0, 0, 1, 0, 0, 0, 0, 2, 0, 0], np.int64),
                                  "pads")], mode="edge")
    y = b.node("Unsqueeze", [e, b.const(np.array([3], np.int64), "axes")])
    rr = np.pad(ar, ((0, 0), (0, 0), (0, 0), (1, 2), (0, 0)), mode="reflect")
    er = np.pad(rr, ((0, 0), (0, 0), (1, 2), (0, 0), (0, 0)), mode="edge")
    ref = er[:, :, :, None]
    return (b.model("video_cnn", "x", list(x.shape), y, list(ref.shape), 13), x, ref)


def einsum_chain():
    """Einsum as attention code writes it, in float: a batched product
    (bij,bjk->bik), a contraction with a vector (bik,k->bi), a per-batch
    inner product of two operands (bi,bi->b) and a transpose with an
    implicit output (ba, sorted: ab)."""
    b = Builder(4)
    x = b.f32(b.rng.standard_normal((2, 3, 4)))
    w = b.weight(2, 4, 5)
    v = b.f32(b.rng.standard_normal(5))
    y1 = b.node("Einsum", ["x", b.const(w, "w")], equation="bij,bjk->bik")
    y2 = b.node("Einsum", [y1, b.const(v, "v")], equation="bik,k->bi")
    y3 = b.node("Einsum", [y2, y2], equation="bi,bi->b")
    y = b.node("Einsum", [b.node("Unsqueeze", [y3, b.const(np.array([0], np.int64), "ax")])],
               equation="ba")
    r1 = np.einsum("bij,bjk->bik", x.astype(np.float64), w.astype(np.float64))
    r2 = np.einsum("bik,k->bi", r1, v.astype(np.float64))
    ref = np.einsum("bi,bi->b", r2, r2)[None, :].T
    return b.model("einsum_chain", "x", [2, 3, 4], y, [2, 1], 13), x, ref


def maxpool_indices():
    """MaxPool's Indices over two images of three channels (ONNX counts
    them over the whole input, n and c included), a window past the
    bottom and right edges; as float through a Cast, for the comparison."""
    b = Builder(6)
    x = b.f32(b.rng.standard_normal((2, 3, 5, 5)))
    y, i = b.node("MaxPool", ["x"], n_out=2, kernel_shape=[2, 2], strides=[2, 2],
                  pads=[0, 0, 1, 1])
    out = b.node("Cast", [i], to=TensorProto.FLOAT)
    ref = np.zeros((2, 3, 3, 3))
    for n in range(2):
        for c in range(3):
            for oh in range(3):
                for ow in range(3):
                    best, at = -np.inf, 0
                    for kh in range(2):
                        for kw in range(2):
                            h, w = oh * 2 + kh, ow * 2 + kw
                            if h < 5 and w < 5 and x[n, c, h, w] > best:
                                best, at = x[n, c, h, w], ((n * 3 + c) * 5 + h) * 5 + w
                    ref[n, c, oh, ow] = at
    return b.model("maxpool_indices", "x", [2, 3, 5, 5], out, [2, 3, 3, 3], 13), x, ref


def topk_inf():
    """TopK over masked logits (-inf where masked), as attention code has
    them: the masked positions still come last, in order, not the largest
    again. Its indices, as float through a Cast, for the comparison."""
    x = np.array([[5, -np.inf, 3, -np.inf, 4], [-np.inf, -np.inf, 1, 2, -np.inf]], np.float32)
    b = Builder(7)
    v, i = b.node("TopK", ["x", b.const(np.array([4], np.int64), "k")], n_out=2, axis=1)
    out = b.node("Cast", [i], to=TensorProto.FLOAT)
    ref = np.array([[0, 4, 2, 1], [3, 2, 0, 1]], np.float64)
    return b.model("topk_inf", "x", [2, 5], out, [2, 4], 13), x, ref


def data_dependent():
    """Shapes that wait for values a run computes, as detection and
    retrieval post-processing has them: the positive elements of x
    (NonZero), doubled, and the top min(k, count) of them (a TopK whose k
    the graph computes). A session runs it in three stages: before
    NonZero, up to the TopK, the TopK. The constant 2 is a Constant node
    ahead of the first cut, read after it."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    vi = helper.make_tensor_value_info
    const = lambda name, a: helper.make_node("Constant", [], [name], name=name,
                                             value=numpy_helper.from_array(a, name + "_v"))
    g = helper.make_graph(
        [const("zero", np.array(0, np.float32)), const("two", np.array(2, np.float32)),
         helper.make_node("Greater", ["x", "zero"], ["pos"], name="positive"),
         helper.make_node("NonZero", ["pos"], ["where"], name="where"),
         helper.make_node("Reshape", ["where", "flat"], ["idx"], name="idx"),
         helper.make_node("Gather", ["x", "idx"], ["sel"], name="select"),
         helper.make_node("Mul", ["sel", "two"], ["picked"], name="double"),
         helper.make_node("Shape", ["picked"], ["count"], name="count"),
         helper.make_node("Min", ["k", "count"], ["kk"], name="clip_k"),
         helper.make_node("TopK", ["picked", "kk"], ["top", "top_i"], name="top")],
        "data_dependent", [vi("x", f, ["n"]), vi("k", i64, [1])],
        [vi("picked", f, ["m"]), vi("top", f, ["kk"]), vi("top_i", i64, ["kk"])],
        [numpy_helper.from_array(np.array([-1], np.int64), "flat")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def nonzero_kinds():
    """Two NonZero a session handles apart: nonzero_const's is of a constant
    mask (folded at import: no stage, the positions it picks of x doubled);
    nonzero_any_rank's x has no declared shape, so runs bring it at any
    rank, and the stage before the NonZero is made for each rank."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    vi = helper.make_tensor_value_info
    mask = numpy_helper.from_array(np.array([0, 1, 1, 0, 1], np.int64), "mask")
    shape = numpy_helper.from_array(np.array([-1], np.int64), "flat")
    g1 = helper.make_graph(
        [helper.make_node("NonZero", ["mask"], ["where"], name="where"),
         helper.make_node("Reshape", ["where", "flat"], ["idx"], name="idx"),
         helper.make_node("Gather", ["x", "idx"], ["sel"], name="select"),
         helper.make_node("Add", ["sel", "sel"], ["y"], name="double")],
        "nonzero_const", [vi("x", f, ["n"])], [vi("y", f, [3])], [mask, shape])
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    g2 = helper.make_graph(
        [helper.make_node("Greater", ["x", "zero"], ["pos"], name="positive"),
         helper.make_node("NonZero", ["pos"], ["where"], name="where"),
         helper.make_node("Cast", ["where"], ["y"], name="as_float", to=f)],
        "nonzero_any_rank", [vi("x", f, None)], [vi("y", f, ["r", "m"])], [zero])
    out = []
    for g in (g1, g2):
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        if g is g1:     # onnx 1.12's checker wants an input's shape, which ONNX leaves optional
            onnx.checker.check_model(m, full_check=True)
        out.append(m)
    return out


def if_same_names():
    """An If on a computed condition whose branches both call their output
    "y1": a select imports both, and the second is refused by name."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    zero = numpy_helper.from_array(np.array(0, np.float32), "zero")
    br = lambda op: helper.make_graph([helper.make_node(op, ["x"], ["y1"])], op, [],
                                      [helper.make_tensor_value_info("y1", TensorProto.FLOAT,
                                                                     [2, 3])])
    g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
                           helper.make_node("Greater", ["s", "zero"], ["c"], name="positive"),
                           helper.make_node("If", ["c"], ["y"], name="same",
                                            then_branch=br("Relu"), else_branch=br("Neg"))],
                          "if_same_names", [x],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], [zero])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


# (batch, sequence length) at which the tests run transformer_dyn.
DYN_SHAPES = ((1, 8), (1, 16), (2, 24), (1, 48), (1, 100))


def transformer_dyn():
    """One encoder block with a symbolic batch and sequence length, as
    exporters write one: the head split's Reshape takes its shape from
    Shape -> Gather -> Unsqueeze -> Concat of the input. Returns the model
    and, per DYN_SHAPES entry, an input and numpy's output."""
    b = Builder(5)
    d, heads, ff = 64, 4, 256
    dh = d // heads
    i64 = lambda v: b.const(np.array(v, np.int64), "i")

    def linear(inp, n_in, n_out):
        w = b.weight(n_in, n_out)
        bias = b.f32(b.rng.standard_normal(n_out) * 0.02)
        out = b.node("Add", [b.node("MatMul", [inp, b.const(w, "w")]), b.const(bias, "b")])
        return out, (lambda r: r @ w.astype(np.float64) + bias)

    def norm(inp):
        g = b.f32(1 + 0.1 * b.rng.standard_normal(d))
        beta = b.f32(0.1 * b.rng.standard_normal(d))
        out = b.node("LayerNormalization", [inp, b.const(g, "g"), b.const(beta, "beta")],
                     axis=-1, epsilon=1e-5)
        return out, (lambda r: layernorm(r, g, beta))

    shape = b.node("Shape", ["x"])
    dim = lambda k: b.node("Unsqueeze", [b.node("Gather", [shape, i64(k)], axis=0), i64([0])])
    bn, sq = dim(0), dim(1)
    split_shape = b.node("Concat", [bn, sq, i64([heads]), i64([dh])], axis=0)
    merge_shape = b.node("Concat", [bn, sq, i64([d])], axis=0)

    def heads_of(t, perm):
        return b.node("Transpose", [b.node("Reshape", [t, split_shape])], perm=perm)

    q, qf = linear("x", d, d)
    k, kf = linear("x", d, d)
    v, vf = linear("x", d, d)
    sc = b.node("Div", [b.node("MatMul", [heads_of(q, [0, 2, 1, 3]), heads_of(k, [0, 2, 3, 1])]),
                        b.const(np.float32(np.sqrt(dh)), "scale")])
    ctx = b.node("MatMul", [b.node("Softmax", [sc], axis=-1), heads_of(v, [0, 2, 1, 3])])
    ctx = b.node("Reshape", [b.node("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_shape])
    o, of = linear(ctx, d, d)
    h, hf = norm(b.node("Add", ["x", o]))
    f, ff1 = linear(h, d, ff)
    e = b.node("Erf", [b.node("Div", [f, b.const(np.float32(np.sqrt(2.0)), "sqrt2")])])
    g = b.node("Mul", [b.node("Mul", [f, b.node("Add", [e, b.const(np.float32(1), "one")])]),
                       b.const(np.float32(0.5), "half")])
    f2, ff2 = linear(g, ff, d)
    y, yf = norm(b.node("Add", [h, f2]))
    model = b.model("transformer_dyn", "x", ["batch", "seq", d], y, ["batch", "seq", d], 17)

    def ref(x):
        xr = x.astype(np.float64)
        n, s = x.shape[:2]
        split = lambda t: t.reshape(n, s, heads, dh).transpose(0, 2, 1, 3)
        p = softmax(split(qf(xr)) @ split(kf(xr)).transpose(0, 1, 3, 2) / np.sqrt(dh))
        c = (p @ split(vf(xr))).transpose(0, 2, 1, 3).reshape(n, s, d)
        hr = hf(xr + of(c))
        return yf(hr + ff2(gelu(ff1(hr))))

    runs = []
    for n, s in DYN_SHAPES:
        x = b.f32(b.rng.standard_normal((n, s, d)))
        runs.append(((n, s), x, ref(x)))
    return model, runs


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    onnx.save(dynamic(), os.path.join(out, "dynamic.onnx"))
    onnx.save(unsupported(), os.path.join(out, "unsupported.onnx"))
    onnx.save(if_computed(), os.path.join(out, "if_computed.onnx"))
    onnx.save(if_same_names(), os.path.join(out, "if_same_names.onnx"))
    onnx.save(loop_refused(True), os.path.join(out, "loop_computed.onnx"))
    onnx.save(loop_refused(False), os.path.join(out, "loop_unsupported_body.onnx"))
    onnx.save(loop_forever(), os.path.join(out, "loop_forever.onnx"))
    onnx.save(data_dependent(), os.path.join(out, "data_dependent.onnx"))
    for name, model in zip(("nonzero_const", "nonzero_any_rank"), nonzero_kinds()):
        onnx.save(model, os.path.join(out, name + ".onnx"))
    model, runs = transformer_dyn()
    onnx.save(model, os.path.join(out, "transformer_dyn.onnx"))
    for (n, s), x, ref in runs:
        x.tofile(os.path.join(out, "transformer_dyn.%dx%d.in" % (n, s)))
        np.asarray(ref, np.float32).tofile(os.path.join(out, "transformer_dyn.%dx%d.out" % (n, s)))
    for name, model in zip(("legacy_add", "legacy_bn"), legacy_refused()):
        onnx.save(model, os.path.join(out, name + ".onnx"))
    half, bf16 = TensorProto.FLOAT16, TensorProto.BFLOAT16
    for name, make in (("mlp", mlp), ("transformer13", lambda: transformer(13)),
                       ("transformer17", lambda: transformer(17)),
                       ("resnet_mini", resnet_mini), ("trilu", trilu),
                       ("legacy_ops", legacy_ops), ("int_shapes", int_shapes),
                       ("shape_if", shape_if), ("pinned", pinned),
                       ("pinned_value", pinned_value), ("reflect_wide", reflect_wide),
                       ("lstm", lstm), ("gru", gru), ("rnn_acts", rnn_acts),
                       ("einsum_chain", einsum_chain), ("maxpool_indices", maxpool_indices),
                       ("topk_inf", topk_inf),
                       ("if_select", lambda: if_select(True)),
                       ("if_select_neg", lambda: if_select(False)),
                       ("loop_scan", loop_scan),
                       ("relu_bn", relu_bn), ("picked_column", picked_column),
                       ("layernorm_written_out", layernorm_written_out),
                       ("shared_conv", shared_conv), ("video_cnn", video_cnn),
                       ("half_folds", half_folds), ("pad_f16", pad_f16),
                       ("mlp_bf16", lambda: mlp(bf16, 14)), ("mlp_int8", mlp_int8),
                       ("cnn_int8", cnn_int8), ("cnn_qdq", cnn_qdq),
                       ("resnet_mini_qdq", resnet_mini_qdq),
                       ("transformer17_f16", lambda: transformer(17, half)),
                       ("resnet_mini_f16", lambda: resnet_mini(half))):
        model, x, ref = make()
        dt = model.graph.input[0].type.tensor_type.elem_type
        onnx.save(model, os.path.join(out, name + ".onnx"))
        with open(os.path.join(out, name + ".in"), "wb") as f:
            f.write(raw(x, dt))
        with open(os.path.join(out, name + ".onnx.dims"), "w") as f:
            f.write("[%s]\n" % ", ".join(str(d) for d in x.shape))
        np.asarray(ref, np.float32).tofile(os.path.join(out, name + ".out"))




def corpus(out):
    """Small models of the ops the importer maps: the ONNX fuzzer's seeds."""
    os.makedirs(out, exist_ok=True)
    rng = np.random.RandomState(1)
    f = TensorProto.FLOAT

    def one(name, nodes, ins, outs, inits=(), opset=13):
        g = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(n, f, s) for n, s in ins],
                              [helper.make_tensor_value_info(n, f, s) for n, s in outs],
                              [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.checker.check_model(m, full_check=True)
        onnx.save(m, os.path.join(out, name + ".onnx"))

    # A session's stages (onnx_stages.c) cut at NonZero and a computed TopK k.
    onnx.save(data_dependent(), os.path.join(out, "data_dependent.onnx"))
    w = lambda *s: rng.standard_normal(s).astype(np.float32)
    n = helper.make_node
    one("add_bcast", [n("Add", ["a", "b"], ["y"])], [("a", [2, 3, 4]), ("b", [4])], [("y", [2, 3, 4])])
    one("gemm", [n("Gemm", ["a", "w", "c"], ["y"], transB=1, alpha=0.5, beta=2.0)],
        [("a", [3, 5])], [("y", [3, 2])], [("w", w(2, 5)), ("c", w(2))])
    one("matmul_batch", [n("MatMul", ["a", "b"], ["y"])], [("a", [2, 3, 4]), ("b", [4, 5])],
        [("y", [2, 3, 5])])
    one("softmax_axis", [n("Softmax", ["x"], ["y"], axis=1)], [("x", [2, 3, 4])], [("y", [2, 3, 4])])
    one("reduce", [n("ReduceMax", ["x"], ["y"], axes=[0, 2], keepdims=0)], [("x", [2, 3, 4])],
        [("y", [3])])
    one("reshape_transpose", [n("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
                              n("Reshape", ["t", "s"], ["y"])],
        [("x", [2, 3, 4])], [("y", [6, 4])], [("s", np.array([6, -1], np.int64))])
    one("slice_concat", [n("Slice", ["x", "st", "en", "ax"], ["s"]),
                         n("Concat", ["s", "x"], ["y"], axis=1)],
        [("x", [2, 4])], [("y", [2, 6])],
        [("st", np.array([1], np.int64)), ("en", np.array([3], np.int64)),
         ("ax", np.array([1], np.int64))])
    one("layernorm", [n("LayerNormalization", ["x", "g", "b"], ["y"], axis=-1)], [("x", [2, 8])],
        [("y", [2, 8])], [("g", w(8)), ("b", w(8))], opset=17)
    one("batchnorm", [n("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])],
        [("x", [1, 3, 2, 2])], [("y", [1, 3, 2, 2])],
        [("s", w(3)), ("b", w(3)), ("m", w(3)), ("v", np.abs(w(3)) + 1)])
    # The Conv + BatchNormalization fold when the value table is full (64:
    # 63 initializers and the input): its new weight grows the table.
    one("conv_bn_at_table_growth",
        [n("Conv", ["x", "cw"], ["c"]), n("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"])],
        [("x", [1, 2, 3, 3])], [("y", [1, 3, 3, 3])],
        [("cw", w(3, 2, 1, 1)), ("s", w(3)), ("b", w(3)), ("m", w(3)), ("v", np.abs(w(3)) + 1)]
        + [("unused%d" % k, w(1)) for k in range(58)])
    one("clip_pad", [n("Clip", ["x", "lo", "hi"], ["c"]), n("Pad", ["c", "p"], ["y"])],
        [("x", [2, 2])], [("y", [4, 4])],
        [("lo", np.float32(-0.5)), ("hi", np.float32(0.5)), ("p", np.array([1, 1, 1, 1], np.int64))])
    one("windows", [n("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], group=2),
                    n("MaxPool", ["c"], ["p"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                    n("DepthToSpace", ["p"], ["y"], blocksize=2, mode="CRD")],
        [("x", [1, 4, 5, 5])], [("y", [1, 1, 6, 6])], [("w", w(4, 2, 3, 3)), ("b", w(4))])
    one("tile_trilu", [n("Tile", ["x", "r"], ["t"]), n("Trilu", ["t", "k"], ["y"], upper=0)],
        [("x", [2, 3])], [("y", [4, 3])],
        [("r", np.array([2, 1], np.int64)), ("k", np.array(1, np.int64))], opset=14)
    one("shape_fold", [n("Shape", ["x"], ["s"]), n("Gather", ["s", "i"], ["d"]),
                       n("Unsqueeze", ["d", "ax"], ["u"]),
                       n("Concat", ["u", "m"], ["ns"], axis=0), n("Reshape", ["x", "ns"], ["y"])],
        [("x", [2, 3, 4])], [("y", [2, 12])],
        [("i", np.array(0, np.int64)), ("ax", np.array([0], np.int64)),
         ("m", np.array([-1], np.int64))])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--corpus"]:
        corpus(sys.argv[2])
    else:
        main()
