#!/usr/bin/env python3
"""Generate TensorFlow's answers for `conv2d_backprop_filter` conformance cases.

Usage:  python3 tests/data/gen_conv2d_backprop_filter.py

Needs numpy and TensorFlow (CPU is enough: `pip install tensorflow-cpu`); neither is a
dependency of the project.  Writes tests/data/conv2d_backprop_filter_tf.json next to this
script, in the schema of conformance.json (see README.md), one case per line.

Every expected `dw` is what `tf.raw_ops.Conv2DBackpropFilter` returns on the CPU:

- TF's CPU kernel runs NHWC only: NCHW cases are transposed to NHWC for the call (the
  filter gradient does not depend on the layout).
- It has no `groups`: a grouped case is one call per group (x's and dy's channel blocks),
  the per-group filters concatenated along the output channels.
- Its float64 kernel rejects dilations > 1; the float32 kernel (oneDNN) accepts them.  Dilated
  cases therefore run in float32 on inputs that are multiples of 1/4 in [-1, 1], for which
  every product and partial sum is exact in float32, so the answer is exact.  The other cases
  use random float32 inputs and TF's float64 kernel.
- `dim_rounding_mode` (a tfjs attribute) is not a TF attribute: those cases call TF with the
  bottom/right padding enlarged until its floor rule gives the same output size (the extra
  rows and columns are zero padding, so they add nothing).
- TF's CPU kernels also reject explicit padding with dilations: those cases zero-pad x and
  call TF with VALID.
- Error cases are checked to be rejected by TF too.

Every answer is also checked against a float64 loop reference of the SPEC sum carried here;
any disagreement aborts.
"""

import json
import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_PATH = os.path.join(HERE, "conv2d_backprop_filter_tf.json")
GENERATED_BY = "tests/data/gen_conv2d_backprop_filter.py"


def axis(inp, k, s, d, padding, which, rounding):
    """(out, pad_before, pad_after) per SPEC.md's conv geometry."""
    ke = (k - 1) * d + 1
    if padding == "VALID":
        return -(-(inp - ke + 1) // s), 0, 0
    if padding == "SAME":
        out = -(-inp // s)
        need = max(0, (out - 1) * s + ke - inp)
        return out, need // 2, need - need // 2
    b, a = padding[which]
    num = inp + b + a - ke + s
    if rounding in (None, "floor"):
        out = num // s
    elif rounding == "ceil":
        out = -(-num // s)
    else:  # round half up
        out = num // s + (1 if 2 * (num % s) >= s else 0)
    return out, b, a


def ref_filter(x, dy, k, groups, strides, dil, pads):
    """float64 SPEC sum; x [N,H,W,Ci], dy [N,Ho,Wo,Co] (NHWC), dw HWIO."""
    n, h, w, ci = x.shape
    _, ho, wo, co = dy.shape
    cig, cog = ci // groups, co // groups
    dw = np.zeros((k[0], k[1], cig, co))
    for ky in range(k[0]):
        for kx in range(k[1]):
            for oy in range(ho):
                y = oy * strides[0] - pads[0] + ky * dil[0]
                if y < 0 or y >= h:
                    continue
                for ox in range(wo):
                    xx = ox * strides[1] - pads[1] + kx * dil[1]
                    if xx < 0 or xx >= w:
                        continue
                    for g in range(groups):
                        xv = x[:, y, xx, g * cig:(g + 1) * cig]  # [N, cig]
                        dv = dy[:, oy, ox, g * cog:(g + 1) * cog]  # [N, cog]
                        dw[ky, kx, :, g * cog:(g + 1) * cog] += xv.T @ dv
    return dw


def tf_filter(x, dy, k, groups, strides, dil, tf_pad, dtype):
    """TF's Conv2DBackpropFilter (NHWC), one call per group."""
    ci, co = x.shape[3], dy.shape[3]
    cig, cog = ci // groups, co // groups
    parts = []
    for g in range(groups):
        kw = dict(
            input=tf.constant(x[..., g * cig:(g + 1) * cig], dtype=dtype),
            filter_sizes=[k[0], k[1], cig, cog],
            out_backprop=tf.constant(dy[..., g * cog:(g + 1) * cog], dtype=dtype),
            strides=[1, strides[0], strides[1], 1],
            dilations=[1, dil[0], dil[1], 1],
            data_format="NHWC",
        )
        if isinstance(tf_pad, str):
            kw["padding"] = tf_pad
        elif dil != [1, 1]:
            # TF's CPU kernels reject EXPLICIT with dilations: pad x with zeros, run VALID.
            (t, b), (l, r) = tf_pad
            kw["input"] = tf.pad(kw["input"], [[0, 0], [t, b], [l, r], [0, 0]])
            kw["padding"] = "VALID"
        else:
            (t, b), (l, r) = tf_pad
            kw["padding"] = "EXPLICIT"
            kw["explicit_paddings"] = [0, 0, t, b, l, r, 0, 0]
        parts.append(tf.raw_ops.Conv2DBackpropFilter(**kw).numpy().astype(np.float64))
    return np.concatenate(parts, axis=3)


def to_layout(a_nhwc, layout):
    return a_nhwc if layout == "NHWC" else a_nhwc.transpose(0, 3, 1, 2)


def make_case(idx, rng, c):
    layout, fl = c["layout"], c.get("filter_layout", "HWIO")
    n, h, w, cig, cog, groups = c["n"], c["h"], c["w"], c["cig"], c["cog"], c.get("groups", 1)
    k, s, d = c["k"], c.get("s", [1, 1]), c.get("d", [1, 1])
    padding, rounding = c["padding"], c.get("rounding")
    ci, co = cig * groups, cog * groups
    (ho, pt, pb), (wo, pl, pr) = (
        axis(h, k[0], s[0], d[0], padding, 0, rounding),
        axis(w, k[1], s[1], d[1], padding, 1, rounding),
    )
    exact = d != [1, 1]
    if exact:
        x = rng.integers(-4, 5, size=(n, h, w, ci)) / 4.0
        dy = rng.integers(-4, 5, size=(n, ho, wo, co)) / 4.0
    else:
        x = rng.uniform(-1, 1, size=(n, h, w, ci)).astype(np.float32).astype(np.float64)
        dy = rng.uniform(-1, 1, size=(n, ho, wo, co)).astype(np.float32).astype(np.float64)
    tf_pad = padding
    if rounding is not None:
        # TF's floor rule with bottom/right padding enlarged to reach the rounded size.
        ke = [(k[i] - 1) * d[i] + 1 for i in range(2)]
        tf_pad = [[pt, max(pb, (ho - 1) * s[0] + ke[0] - h - pt)],
                  [pl, max(pr, (wo - 1) * s[1] + ke[1] - w - pl)]]
    hwio_shape = [k[0], k[1], cig, co]
    want = ref_filter(x, dy, k, groups, s, d, [pt, pl])
    if c.get("error"):
        bad_dy = np.zeros((n, ho + 1, wo, co))
        try:
            tf_filter(x, bad_dy, k, groups, s, d, tf_pad, tf.float64)
        except tf.errors.InvalidArgumentError:
            pass
        else:
            sys.exit(f"case {idx}: TF accepted a dy of the wrong size")
        dy = bad_dy
        got = None
    else:
        got = tf_filter(x, dy, k, groups, s, d, tf_pad, tf.float32 if exact else tf.float64)
        err = np.abs(got - want).max() if got.size else 0.0
        if err > (0.0 if exact else 1e-9):
            sys.exit(f"case {idx}: TF and the float64 reference differ by {err}")
    fshape = hwio_shape if fl == "HWIO" else [co, cig, k[0], k[1]]
    attrs = {
        "filter_shape": fshape,
        "strides": s,
        "dilations": d,
        "padding": padding,
        "dim_rounding_mode": rounding,
    }
    if fl == "OIHW":
        attrs["filter_layout"] = "OIHW"
    xs, dys = to_layout(x, layout), to_layout(dy, layout)
    expected = None
    if got is not None:
        out = got if fl == "HWIO" else got.transpose(3, 2, 0, 1)
        expected = {"shape": list(out.shape), "data": [float(v) for v in out.ravel()]}
    origin = "tf.raw_ops.Conv2DBackpropFilter CPU " + ("float32 (exact inputs)" if exact else "float64")
    notes = []
    if groups > 1:
        notes.append(f"{groups} groups: one TF call per group")
    if layout == "NCHW":
        notes.append("TF ran on the NHWC transpose")
    if d != [1, 1] and not isinstance(padding, str):
        notes.append("explicit padding with dilation: TF ran VALID on x zero-padded")
    if rounding is not None:
        notes.append(f"dim_rounding_mode {rounding}: TF ran with padding {tf_pad}")
    return {
        "id": f"conv2d_backprop_filter/tf{idx:03d}",
        "source": f"tensorflow {tf.__version__}: tf.raw_ops.Conv2DBackpropFilter",
        "source_file": "gen_conv2d_backprop_filter.py",
        "kind": "backward",
        "op": "conv2d_backprop_filter",
        "layout": layout,
        "attrs": attrs,
        "inputs": {
            "x": {"shape": list(xs.shape), "dtype": "float32", "data": [float(v) for v in xs.ravel()]},
            "dy": {"shape": list(dys.shape), "dtype": "float32", "data": [float(v) for v in dys.ravel()]},
        },
        "expected": expected,
        "expected_error": "dy spatial size does not match the computed output size (TF: Conv2DBackpropFilter: Size of out_backprop doesn't match computed)" if got is None else None,
        "expected_origin": origin,
        "level": "kernel",
        # f32 runs sum up to a few hundred products of magnitude <= 1.
        "tolerance": 1e-4,
        "tolerance_kind": "allclose",
        "rtol": 1e-5,
        "tolerance_upstream": None,
        "notes": "; ".join(notes),
    }


def configs():
    base = [
        # (k, s, d, padding, groups, cig, cog, h, w, n, rounding)
        ([3, 3], [1, 1], [1, 1], "SAME", 1, 3, 4, 6, 6, 2, None),
        ([3, 3], [1, 1], [1, 1], "VALID", 1, 2, 3, 7, 5, 1, None),
        ([3, 3], [2, 2], [1, 1], "SAME", 1, 3, 2, 7, 8, 2, None),
        ([3, 3], [2, 2], [1, 1], "VALID", 1, 2, 2, 9, 7, 1, None),
        ([1, 1], [1, 1], [1, 1], "VALID", 1, 4, 3, 5, 5, 2, None),
        ([1, 1], [2, 2], [1, 1], "SAME", 1, 3, 5, 6, 5, 1, None),
        ([2, 3], [1, 2], [1, 1], "SAME", 1, 2, 3, 5, 7, 2, None),
        ([5, 5], [1, 1], [1, 1], "SAME", 1, 2, 2, 6, 6, 1, None),
        ([3, 2], [3, 1], [1, 1], "VALID", 1, 3, 2, 8, 6, 1, None),
        ([3, 3], [1, 1], [1, 1], [[1, 1], [1, 1]], 1, 2, 3, 5, 5, 2, None),
        ([3, 3], [2, 2], [1, 1], [[0, 2], [1, 0]], 1, 3, 2, 7, 6, 1, None),
        ([4, 4], [2, 2], [1, 1], [[1, 2], [2, 1]], 1, 2, 2, 7, 7, 1, None),
        ([3, 3], [2, 2], [1, 1], [[1, 0], [1, 0]], 1, 2, 3, 6, 6, 1, "ceil"),
        ([3, 3], [3, 3], [1, 1], [[1, 1], [0, 0]], 1, 2, 2, 8, 7, 1, "round"),
        ([3, 3], [1, 1], [2, 2], "SAME", 1, 2, 3, 7, 7, 1, None),
        ([3, 3], [1, 1], [2, 1], "VALID", 1, 3, 2, 8, 6, 2, None),
        ([2, 2], [1, 1], [3, 2], "SAME", 1, 2, 2, 7, 6, 1, None),
        ([3, 3], [1, 1], [2, 2], [[2, 2], [1, 3]], 1, 2, 2, 6, 6, 1, None),
        ([3, 3], [1, 1], [1, 1], "SAME", 2, 2, 3, 6, 6, 2, None),
        ([3, 3], [2, 2], [1, 1], "VALID", 2, 3, 2, 7, 7, 1, None),
        ([3, 3], [1, 1], [1, 1], "SAME", 4, 1, 1, 5, 6, 1, None),  # depthwise
        ([1, 1], [1, 1], [1, 1], "VALID", 3, 2, 2, 4, 4, 2, None),
        ([3, 3], [2, 1], [1, 1], [[1, 1], [0, 2]], 2, 2, 2, 7, 5, 1, None),
        ([3, 3], [1, 1], [2, 2], "SAME", 2, 2, 2, 7, 7, 1, None),
    ]
    out = []
    for i, (k, s, d, p, g, cig, cog, h, w, n, r) in enumerate(base):
        for j, (layout, fl) in enumerate([("NHWC", "HWIO"), ("NCHW", "OIHW") if i % 2 else ("NCHW", "HWIO")]):
            out.append(dict(k=k, s=s, d=d, padding=p, groups=g, cig=cig, cog=cog, h=h, w=w, n=n,
                            rounding=r, layout=layout, filter_layout=fl if j else ("OIHW" if i % 3 == 0 else "HWIO")))
    # Error cases: dy one row too tall.
    out.append(dict(k=[3, 3], s=[1, 1], padding="SAME", cig=2, cog=2, h=5, w=5, n=1, layout="NHWC", error=True))
    out.append(dict(k=[3, 3], s=[2, 2], padding="VALID", cig=2, cog=2, h=7, w=7, n=1, layout="NCHW", error=True))
    return out


def main():
    rng = np.random.default_rng(20261126)
    cases = [make_case(i + 1, rng, c) for i, c in enumerate(configs())]
    with open(OUT_PATH, "w") as f:
        f.write('{"generated_by":' + json.dumps(GENERATED_BY) + ',"cases":[\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in cases))
        f.write('\n],"untranslated":[]}\n')
    print(f"wrote {len(cases)} cases to {OUT_PATH}")


if __name__ == "__main__":
    main()
