#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""tests/zoo/inputs.py MODEL.onnx DIR NAME [PIN...]: the inputs a zoo model
runs on, for onnxruntime (reference.js) and the device (tests/onnx/zoo.c).

Reads the model's inputs with Debian's python3-onnx, applies the pins of
tests/zoo/models (shape:INPUT=AxB, dim:NAME=N, value:INPUT=V,...), draws
each free input from a generator seeded by NAME (normal, scale 0.5: audio
and normalized images are of that size) and writes DIR/NAME.in.K, raw
little-endian, and DIR/NAME.io, a line per input:

    in K DTYPE DIMS FILE NAME      the device's input K (of those left)
    const DTYPE DIMS V,... NAME    a value pin: onnxruntime gets it as an
                                   input, the device has it as a constant

DIMS is AxBxC ("-" for a scalar). NAME, last, may hold spaces.
"""
import sys
import zlib

import numpy as np
import onnx

TYPES = {onnx.TensorProto.FLOAT: ("float32", np.float32),
         onnx.TensorProto.INT64: ("int64", np.int64)}


def main():
    model, out, name, pins = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    shapes, dims, values = {}, {}, {}
    for p in pins:
        kind, _, spec = p.partition(":")
        key, _, val = spec.rpartition("=")
        if kind == "shape":
            shapes[key] = [int(d) for d in val.split("x")] if val else []
        elif kind == "dim":
            dims[key] = int(val)
        elif kind == "value":
            values[key] = val
        else:
            sys.exit("inputs.py: pin %r" % p)
    m = onnx.load(model, load_external_data=False)
    inits = {i.name for i in m.graph.initializer}
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    lines, k = [], 0
    for vi in (i for i in m.graph.input if i.name not in inits):
        t = vi.type.tensor_type
        if t.elem_type not in TYPES:
            sys.exit("inputs.py: %s: input %s of type %d" % (name, vi.name, t.elem_type))
        tname, dt = TYPES[t.elem_type]
        shape = shapes.get(vi.name)
        if shape is None:
            shape = [d.dim_value if d.HasField("dim_value") else dims[d.dim_param]
                     for d in t.shape.dim]
        txt = "x".join(str(d) for d in shape) or "-"
        if vi.name in values:
            lines.append("const %s %s %s %s" % (tname, txt, values[vi.name], vi.name))
            continue
        if dt != np.float32:
            sys.exit("inputs.py: %s: input %s is %s: pin its value" % (name, vi.name, tname))
        f = "%s.in.%d" % (name, k)
        (rng.standard_normal(shape) * 0.5).astype(dt).tofile("%s/%s" % (out, f))
        lines.append("in %d %s %s %s %s" % (k, tname, txt, f, vi.name))
        k += 1
    with open("%s/%s.io" % (out, name), "w") as io:
        io.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
