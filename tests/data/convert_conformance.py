#!/usr/bin/env python3
"""Translate the shared conformance vectors into the SPEC's `gradops run` case format.

Usage:  python3 tests/data/convert_conformance.py [SRC_DIR]

SRC_DIR defaults to ../../../shared/conformance relative to this file (the shared folder
beside the repository).  Reads upstream_cases.json, derived_quirk_cases.json and
ort_resize_grad_cases.json and writes tests/data/conformance.json next to this script.
Standard library only.

Besides the translation itself the script carries a small float64 reference of the SPEC
semantics (resize grads, conv2d_backprop_input, max_pool_grad and the forward ops).  Every
translated case is run through it: a case with expected data must match it, an error case
must be rejected by it.  Where an upstream expectation contradicts the SPEC, the case is
rewritten explicitly in SPEC_OVERRIDES below (the SPEC wins); any other disagreement aborts
the script.  Nothing is dropped silently: what cannot be translated lands in "untranslated".
"""

import json
import math
import os
import re
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "conformance"))
OUT_PATH = os.path.join(HERE, "conformance.json")
GENERATED_BY = "tests/data/convert_conformance.py"

# upstream op -> (SPEC op, kind)
OP_MAP = {
    "resize_bilinear_grad": ("resize_bilinear_grad", "backward"),
    "resize_nearest_grad": ("resize_nearest_neighbor_grad", "backward"),
    "resize_nearest_neighbor_grad": ("resize_nearest_neighbor_grad", "backward"),
    "resize_grad": ("resize_grad", "backward"),
    "conv2d_backprop_input": ("conv2d_backprop_input", "backward"),
    "max_pool_grad": ("max_pool_grad", "backward"),
    "forward_resize_bilinear": ("resize_bilinear", "forward"),
    "forward_resize_nearest": ("resize_nearest_neighbor", "forward"),
    "forward_conv2d": ("conv2d", "forward"),
    "forward_max_pool": ("max_pool", "forward"),
}

# upstream input name -> SPEC input name, per SPEC op
INPUT_MAP = {
    "resize_bilinear_grad": {"dy": "dy", "images": "x", "x": "x"},
    "resize_nearest_neighbor_grad": {"dy": "dy", "images": "x", "x": "x"},
    "resize_grad": {"dy": "dy", "x": "x", "images": "x"},
    "conv2d_backprop_input": {"dy": "dy", "filter": "filter"},
    "max_pool_grad": {"dy": "dy", "input": "x", "x": "x", "output": "y", "y": "y"},
    "resize_bilinear": {"images": "x", "x": "x"},
    "resize_nearest_neighbor": {"images": "x", "x": "x"},
    "conv2d": {"x": "x", "filter": "filter"},
    "max_pool": {"x": "x"},
}

FLOAT_DTYPES = ("float16", "float32", "float64")

# Cases whose upstream expectation contradicts the SPEC.  Each entry turns the case into
# what the SPEC demands; the upstream expectation is kept under "upstream_expected".
SPEC_OVERRIDES = {
    "conv2d_backprop_input/011": {
        "expected_error": "dy spatial size 8 x 8 does not match the computed output size 4 x 4 "
                          "(TF: Conv2DBackpropInput: Size of out_backprop doesn't match computed)",
        "reason": "SPEC (Errors, as TF): dy's spatial size must equal the computed out (4x4 for a "
                  "4x4 input, stride 1, SAME); tfjs does not validate and crops an 8x8 dy "
                  "(SPEC 'Known tfjs divergences': a larger dy is silently cropped).",
    },
    "forward_max_pool/010": {
        "expected_error": "explicit padding 1 is not smaller than the 1x1 window",
        "reason": "SPEC max pool: explicit pads must be smaller than the window; numeric pad 1 "
                  "with a 1x1 window violates that (upstream asserts only the tfjs shape).",
    },
    "forward_max_pool/023": {
        "expected_error": "explicit padding 1 is not smaller than the 1x1 window",
        "reason": "SPEC max pool: explicit pads must be smaller than the window (pad 1, 1x1 "
                  "window). The upstream data [1..12] is also not TF's answer even ignoring that: "
                  "it comes from the tfjs CPU shortcut that returns x unchanged for a 1x1 filter "
                  "whenever in shape == out shape, ignoring stride 2 and pad 1 (the windows at "
                  "-1 are all padding; only window (1,1) sees x[:,1,1,:] = 10,11,12).",
    },
    "quirk/numeric_pad_nonsquare_filter_outshape": {
        "expected_error": "explicit padding 1 is not smaller than the 1x3 window (height 1)",
        "reason": "SPEC max pool: explicit pads must be smaller than the window; numeric pad 1 "
                  "gives top/bottom pad 1 >= window height 1. Without that rule the TF-correct "
                  "output shape would be [1,5,3,1] (tfjs says [1,5,5,1]).",
    },
}


# Informative notes added to a case (no change to what it expects).
EXTRA_NOTES = {
    "conv2d_backprop_input/017": "Still an error under the SPEC, for a different reason than tfjs "
                                 "gives: the SPEC allows groups (Ci 2 / filter in-channels 1 = 2 "
                                 "groups), but filter out-channels 3 is not a multiple of 2 and dy "
                                 "has 2 channels, not 3.",
    "conv2d_backprop_input/014": "SPEC: dim_rounding_mode only accompanies explicit (integer) padding.",
    "conv2d_backprop_input/015": "SPEC: dim_rounding_mode only accompanies explicit (integer) padding.",
}


class Untranslatable(Exception):
    pass


class SpecError(Exception):
    """Raised by the reference for inputs the SPEC says must be rejected."""


# ----------------------------------------------------------------------------------------
# small helpers

def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_int(v):
    return is_num(v) and float(v).is_integer()


NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def to_float(v):
    if isinstance(v, str):
        if v not in NONFINITE:
            raise ValueError("bad number string %r" % v)
        return NONFINITE[v]
    if not is_num(v):
        raise ValueError("bad number %r" % (v,))
    return float(v)


def norm_data(data):
    """JSON data list: numbers as floats, non-finite kept as the strings upstream uses."""
    if data is None:
        return None
    out = []
    for v in data:
        if isinstance(v, str):
            if v not in NONFINITE:
                raise Untranslatable("unknown number string %r" % v)
            out.append(v)
        elif is_num(v):
            f = float(v)
            if math.isnan(f):
                out.append("NaN")
            elif math.isinf(f):
                out.append("Infinity" if f > 0 else "-Infinity")
            elif f.is_integer() and abs(f) < 2 ** 53:
                out.append(int(f))  # compact: 4 rather than 4.0
            else:
                out.append(f)
        else:
            raise Untranslatable("non-numeric data value %r" % (v,))
    return out


def pair(v, what):
    if is_num(v):
        return [v, v]
    if isinstance(v, list) and len(v) == 2 and all(is_num(x) for x in v):
        return list(v)
    raise Untranslatable("%s %r is neither a number nor a pair" % (what, v))


def intify(v):
    """ints stay ints in JSON (1 not 1.0) where they are integral; fractions stay fractions."""
    if isinstance(v, list):
        return [intify(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def tfjs_padding(pad, layout):
    """tfjs `pad` -> SPEC padding.  Non-integer / negative values are kept (error cases)."""
    if isinstance(pad, str):
        p = pad.lower()
        if p == "same":
            return "SAME"
        if p == "valid":
            return "VALID"
        raise Untranslatable("unknown pad string %r" % pad)
    if is_num(pad):
        return [[pad, pad], [pad, pad]]
    if isinstance(pad, list) and len(pad) == 4 and all(isinstance(r, list) and len(r) == 2 for r in pad):
        if layout == "NHWC":
            outer, hw = [pad[0], pad[3]], [pad[1], pad[2]]
        else:
            outer, hw = [pad[0], pad[1]], [pad[2], pad[3]]
        if any(x != 0 for r in outer for x in r):
            raise Untranslatable("explicit pad %r pads batch or channel dims" % (pad,))
        return [list(hw[0]), list(hw[1])]
    raise Untranslatable("unrecognised pad %r" % (pad,))


def tf_hw(vec, data_format, what):
    """TF 4-vector attribute (strides, dilations, ksize) in data_format order -> [h, w]."""
    if len(vec) != 4:
        raise Untranslatable("tf %s %r is not a 4-vector" % (what, vec))
    if data_format == "NCHW":
        return [vec[2], vec[3]]
    return [vec[1], vec[2]]


def tf_padding(tfa, data_format):
    p = tfa.get("padding")
    if p in ("SAME", "VALID"):
        return p
    if p == "EXPLICIT":
        e = tfa["explicit_paddings"]
        if len(e) != 8:
            raise Untranslatable("explicit_paddings %r is not 8 long" % (e,))
        if data_format == "NCHW":
            return [[e[4], e[5]], [e[6], e[7]]]
        return [[e[2], e[3]], [e[4], e[5]]]
    raise Untranslatable("unknown tf padding %r" % (p,))


def spatial(shape, layout):
    return (shape[1], shape[2]) if layout == "NHWC" else (shape[2], shape[3])


def norm_tolerance(case):
    """-> (tolerance, tolerance_kind, rtol or None, upstream text or None)"""
    tol = case.get("tolerance")
    text = case.get("tolerance_kind")
    if tol is None:
        raise Untranslatable("no tolerance")
    if text is None:
        return tol, "abs", None, None
    low = text.lower()
    if low.startswith("abs"):
        return tol, "abs", None, text
    if "allclose" in low:
        m_at = re.search(r"atol=([0-9.eE+-]+)", text)
        m_rt = re.search(r"rtol=([0-9.eE+-]+)", text)
        if not (m_at and m_rt):
            raise Untranslatable("cannot parse tolerance text %r" % text)
        atol, rtol = float(m_at.group(1)), float(m_rt.group(1))
        assert abs(atol - tol) <= 1e-12 * max(1.0, tol), (case["id"], atol, tol)
        return tol, "allclose", rtol, text
    raise Untranslatable("unknown tolerance kind %r" % text)


# ----------------------------------------------------------------------------------------
# translation

def translate_attrs(c, op, layout, inputs_src):
    a = c.get("attrs") or {}
    tfa = c.get("tf_attrs") or None
    used = set()
    attrs, extra = {}, {}

    def take(k, default=None):
        used.add(k)
        return a.get(k, default)

    if op in ("resize_bilinear_grad", "resize_nearest_neighbor_grad", "resize_bilinear",
              "resize_nearest_neighbor"):
        ac, hp = take("alignCorners", False), take("halfPixelCenters", False)
        if not isinstance(ac, bool) or not isinstance(hp, bool):
            raise Untranslatable("alignCorners/halfPixelCenters not booleans")
        attrs["align_corners"], attrs["half_pixel_centers"] = ac, hp
        size = take("size")
        if op.endswith("_grad"):
            dy = inputs_src["dy"]["shape"]
            if size is not None and list(size) != list(spatial(dy, layout)):
                raise Untranslatable("size %r differs from dy's spatial dims %r" % (size, dy))
        else:
            if size is None or len(size) != 2:
                raise Untranslatable("forward resize without a 2-element size")
            attrs["size"] = list(size)
    elif op == "resize_grad":
        for k in ("mode", "coordinate_transformation_mode"):
            if k not in a:
                raise Untranslatable("resize_grad without %s" % k)
            attrs[k] = take(k)
        if "nearest_mode" in a:
            attrs["nearest_mode"] = take("nearest_mode")
        attrs["scales"] = take("scales")
    elif op in ("conv2d_backprop_input", "conv2d"):
        df = take("dataFormat", layout)
        if df != layout:
            raise Untranslatable("dataFormat %r differs from layout %r" % (df, layout))
        if op == "conv2d_backprop_input":
            attrs["input_shape"] = list(take("inputShape"))
        attrs["strides"] = pair(take("strides"), "strides")
        dil = take("dilations")
        if dil is None and tfa and "dilations" in tfa:
            dil = tf_hw(tfa["dilations"], tfa.get("data_format", "NHWC"), "dilations")
        attrs["dilations"] = pair(dil if dil is not None else 1, "dilations")
        attrs["padding"] = tfjs_padding(take("pad"), layout)
        attrs["dim_rounding_mode"] = take("dimRoundingMode")
    elif op in ("max_pool_grad", "max_pool"):
        attrs["ksize"] = pair(take("filterSize"), "filterSize")
        attrs["strides"] = pair(take("strides"), "strides")
        attrs["padding"] = tfjs_padding(take("pad"), layout)
        attrs["dim_rounding_mode"] = take("dimRoundingMode")
        dil = take("dilations")
        if dil is not None and pair(dil, "dilations") != [1, 1]:
            extra["dilations"] = pair(dil, "dilations")
    else:
        raise Untranslatable("no attribute translation for %s" % op)

    for k in a:
        if k not in used:
            raise Untranslatable("unhandled attribute %r" % k)
    if "dim_rounding_mode" in attrs and attrs["dim_rounding_mode"] not in (None, "floor", "round", "ceil"):
        raise Untranslatable("dimRoundingMode %r" % attrs["dim_rounding_mode"])

    # Cross-check against the TF op's own attributes where a case has them.
    if tfa:
        df = tfa.get("data_format", "NHWC")
        if df != layout:
            raise Untranslatable("tf data_format %r differs from layout %r" % (df, layout))
        if "strides" in tfa:
            assert tf_hw(tfa["strides"], df, "strides") == attrs["strides"], (c["id"], "strides")
            assert tfa["strides"][0] == 1 and tfa["strides"][1 if df == "NCHW" else 3] == 1, c["id"]
        if "padding" in tfa:
            assert tf_padding(tfa, df) == attrs["padding"], (c["id"], "padding", tfa, attrs["padding"])
        if "dilations" in tfa:
            assert tf_hw(tfa["dilations"], df, "dilations") == attrs["dilations"], (c["id"], "dilations")
        if "ksize" in tfa:
            assert tf_hw(tfa["ksize"], df, "ksize") == attrs["ksize"], (c["id"], "ksize")
        sizes = tfa.get("input_sizes", tfa.get("output_shape"))
        if sizes is not None:
            if len(sizes) == 4:
                assert list(sizes) == attrs["input_shape"], (c["id"], "input_sizes")
            else:  # TF accepts [H, W]
                assert list(sizes) == list(spatial(attrs["input_shape"], layout)), (c["id"], "input_sizes")
    return attrs, extra


def translate_inputs(c, op):
    imap = INPUT_MAP[op]
    out, notes = {}, []
    for name, t in c["inputs"].items():
        if name not in imap:
            raise Untranslatable("unknown input %r for %s" % (name, op))
        dtype = t.get("dtype")
        if dtype is None:
            dtype = "float32"  # tfjs default; the quirk file gives no dtype
        if dtype not in FLOAT_DTYPES:
            if dtype in ("int32",) and op in ("resize_bilinear", "resize_nearest_neighbor") \
                    and all(is_int(v) and abs(v) < 2 ** 24 for v in t["data"]):
                notes.append("input %s was %s upstream; converted to float32 (values exact; TF "
                             "ResizeBilinear computes and returns float32 for integer images)"
                             % (name, dtype))
                dtype = "float32"
            else:
                raise Untranslatable("input %s has dtype %s" % (name, dtype))
        out[imap[name]] = {"shape": list(t["shape"]), "dtype": dtype, "data": norm_data(t["data"])}
    return out, notes


def translate_case(c, source_file):
    up_op = c["op"]
    if up_op not in OP_MAP:
        raise Untranslatable("unknown op %r" % up_op)
    op, kind = OP_MAP[up_op]
    layout = c.get("layout")
    if layout not in ("NHWC", "NCHW"):
        raise Untranslatable("layout %r" % (layout,))
    attrs, extra = translate_attrs(c, op, layout, c["inputs"])
    inputs, in_notes = translate_inputs(c, op)

    is_quirk = source_file == "derived_quirk_cases.json"
    notes = []
    expected, expected_error = c.get("expected"), c.get("expected_error")
    if is_quirk:
        if "tf_expected" in c:
            expected = c["tf_expected"]
            origin = "derived (TF's answer)"
        elif "kernel_expected" in c:
            expected = c["kernel_expected"]
            origin = "derived (kernel answer with the attribute honoured; TF semantics)"
        elif "correct_out_shape" in c:
            expected = {"shape": c["correct_out_shape"], "data": None}
            origin = "derived (shape only)"
        else:
            raise Untranslatable("quirk case without tf_expected/kernel_expected/correct_out_shape")
        notes.append("tfjs diverges: " + c.get("notes", ""))
        notes.append("tfjs-cpu 4.22 gives " + json.dumps(c.get("tfjs_cpu_4_22"), separators=(",", ":")))
        tol, tol_kind, rtol, tol_text = 1e-4, "abs", None, None
        notes.append("tolerance chosen here (no upstream tolerance)")
    else:
        origin = c.get("expected_origin")
        if c.get("notes"):
            notes.append(c["notes"])
        if c.get("notes_output"):
            notes.append(c["notes_output"])
        tol, tol_kind, rtol, tol_text = norm_tolerance(c)
    notes.extend(in_notes)
    if extra:
        notes.append("extra_attrs %s cannot be expressed in the SPEC case format; a runner that "
                     "does not implement them must skip this case" % json.dumps(extra))

    if expected is not None:
        expected = {"shape": list(expected["shape"]), "data": norm_data(expected.get("data"))}

    src = c.get("source") or ("%s (a derived tfjs-vs-TF divergence case, not an upstream test)"
                              % source_file)
    case = {
        "id": c["id"],
        "source": src,
        "source_file": source_file,
        "kind": kind,
        "op": op,
        "layout": layout,
        "attrs": attrs,
    }
    if extra:
        case["extra_attrs"] = extra
    case["inputs"] = inputs
    case["expected"] = expected
    case["expected_error"] = expected_error
    case["tolerance"] = tol
    case["tolerance_kind"] = tol_kind
    if rtol is not None:
        case["rtol"] = rtol
    case["tolerance_upstream"] = tol_text
    if origin:
        case["expected_origin"] = origin
    if c.get("level"):
        case["level"] = c["level"]

    if c["id"] in EXTRA_NOTES:
        notes.append(EXTRA_NOTES[c["id"]])
    ov = SPEC_OVERRIDES.get(c["id"])
    if ov:
        case["upstream_expected"] = case["expected"]
        case["expected"] = None
        case["expected_error"] = ov["expected_error"]
        case["spec_override"] = ov["reason"]
        notes.append("SPEC override: " + ov["reason"])
    case["notes"] = " | ".join(n for n in notes if n)
    return case


# ----------------------------------------------------------------------------------------
# float64 reference of the SPEC semantics (used only to check the data)

def dims(shape, layout):
    """-> (N, C, H, W) and an index function (n, c, h, w) -> flat index."""
    if len(shape) != 4:
        raise SpecError("rank %d != 4" % len(shape))
    if layout == "NHWC":
        N, H, W, C = shape
        return (N, C, H, W), (lambda n, c, h, w: ((n * H + h) * W + w) * C + c)
    N, C, H, W = shape
    return (N, C, H, W), (lambda n, c, h, w: ((n * C + c) * H + h) * W + w)


def make_shape(N, C, H, W, layout):
    return [N, H, W, C] if layout == "NHWC" else [N, C, H, W]


def round_mode(x, mode):
    if mode == "round_prefer_floor":
        return math.ceil(x - 0.5)
    if mode == "round_prefer_ceil":
        return math.floor(x + 0.5)
    if mode == "floor":
        return math.floor(x)
    if mode == "ceil":
        return math.ceil(x)
    raise SpecError("nearest_mode %r" % mode)


def resize_axis(n_in, n_out, mode, ctm, nearest_mode, scale):
    """per output index: list of (input index, weight)."""
    if ctm == "align_corners":
        r = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        r = 1.0 / scale if scale is not None else n_in / n_out
    res = []
    for o in range(n_out):
        if ctm == "half_pixel":
            s = r * (o + 0.5) - 0.5
        elif ctm == "pytorch_half_pixel":
            s = r * (o + 0.5) - 0.5 if n_out > 1 else 0.0
        elif ctm in ("align_corners", "asymmetric"):
            s = r * o
        elif ctm == "tf_half_pixel_for_nn":
            s = r * (o + 0.5)
        else:
            raise SpecError("coordinate_transformation_mode %r" % ctm)
        if mode == "linear":
            s = max(s, 0.0)
            i0 = min(int(math.floor(s)), n_in - 1)
            i1 = min(i0 + 1, n_in - 1)
            l1 = s - math.floor(s)
            res.append([(i0, 1.0 - l1), (i1, l1)])
        elif mode == "nearest":
            i = min(max(round_mode(s, nearest_mode), 0), n_in - 1)
            res.append([(i, 1.0)])
        else:
            raise SpecError("mode %r" % mode)
    return res


def tf_resize_params(op, attrs):
    ac, hp = attrs.get("align_corners", False), attrs.get("half_pixel_centers", False)
    if ac and hp:
        raise SpecError("align_corners and half_pixel_centers both true")
    if "bilinear" in op:
        ctm = "align_corners" if ac else ("half_pixel" if hp else "asymmetric")
        return "linear", ctm, None
    if ac:
        return "nearest", "align_corners", "round_prefer_ceil"
    return "nearest", ("tf_half_pixel_for_nn" if hp else "asymmetric"), "floor"


def ref_resize(case, vals):
    op, layout, attrs = case["op"], case["layout"], case["attrs"]
    if op == "resize_grad":
        mode = attrs["mode"]
        ctm = attrs.get("coordinate_transformation_mode", "half_pixel")
        nm = attrs.get("nearest_mode", "round_prefer_floor")
    else:
        mode, ctm, nm = tf_resize_params(op, attrs)
    x = case["inputs"]["x"]
    (N, C, Hi, Wi), xi = dims(x["shape"], layout)
    backward = case["kind"] == "backward"
    if backward:
        (Nd, Cd, Ho, Wo), di = dims(case["inputs"]["dy"]["shape"], layout)
        if (Nd, Cd) != (N, C):
            raise SpecError("dy N/C differ from x")
    else:
        Ho, Wo = attrs["size"]
        di = dims(make_shape(N, C, Ho, Wo, layout), layout)[1]
    sh = sw = None
    scales = attrs.get("scales") if op == "resize_grad" else None
    if scales is not None:
        if len(scales) == 4:
            if scales[0] != 1 or scales[1] != 1:
                raise SpecError("scales[0..2] must be 1")
            sh, sw = scales[2], scales[3]
        elif len(scales) == 2:
            sh, sw = scales
        else:
            raise SpecError("scales length")
        if not all(math.isfinite(s) and s > 0 for s in (sh, sw)):
            raise SpecError("scales not positive finite")
        if Ho != math.floor(Hi * sh) or Wo != math.floor(Wi * sw):
            raise SpecError("dy size inconsistent with scales")
    ry = resize_axis(Hi, Ho, mode, ctm, nm, sh)
    rx = resize_axis(Wi, Wo, mode, ctm, nm, sw)
    if backward:
        dy = vals["dy"]
        out = [0.0] * prod(x["shape"])
        for n in range(N):
            for c in range(C):
                for oy in range(Ho):
                    for ox in range(Wo):
                        g = dy[di(n, c, oy, ox)]
                        for iy, wy in ry[oy]:
                            for ix, wx in rx[ox]:
                                out[xi(n, c, iy, ix)] += g * wy * wx
        return list(x["shape"]), out
    xs = vals["x"]
    oshape = make_shape(N, C, Ho, Wo, layout)
    out = [0.0] * prod(oshape)
    for n in range(N):
        for c in range(C):
            for oy in range(Ho):
                for ox in range(Wo):
                    out[di(n, c, oy, ox)] = sum(xs[xi(n, c, iy, ix)] * wy * wx
                                                for iy, wy in ry[oy] for ix, wx in rx[ox])
    return oshape, out


def out_geometry(n_in, k, s, d, padding, axis, rounding):
    """-> (out, pad_before) per SPEC geometry; raises SpecError on bad attributes."""
    ke = (k - 1) * d + 1
    if padding == "VALID":
        if rounding is not None:
            raise SpecError("dim_rounding_mode needs explicit padding")
        return math.ceil((n_in - ke + 1) / s), 0
    if padding == "SAME":
        if rounding is not None:
            raise SpecError("dim_rounding_mode needs explicit padding")
        out = math.ceil(n_in / s)
        need = max(0, (out - 1) * s + ke - n_in)
        return out, need // 2
    t, b = padding[axis]
    if not (is_int(t) and is_int(b)):
        raise SpecError("non-integer padding %r" % ([t, b],))
    t, b = int(t), int(b)
    if t < 0 or b < 0:
        raise SpecError("negative padding")
    v = (n_in + t + b - ke) / s + 1
    if rounding is None:
        out = math.floor((n_in + t + b - ke) / s) + 1
    elif rounding == "floor":
        out = math.floor(v)
    elif rounding == "ceil":
        out = math.ceil(v)
    elif rounding == "round":
        out = math.floor(v + 0.5)
    else:
        raise SpecError("dim_rounding_mode %r" % rounding)
    return out, t


def check_padding_shape(padding):
    if padding in ("SAME", "VALID"):
        return
    if not (isinstance(padding, list) and len(padding) == 2 and all(isinstance(p, list) and len(p) == 2 for p in padding)):
        raise SpecError("padding %r" % (padding,))


def check_pos_pairs(attrs, keys):
    for k in keys:
        v = attrs.get(k, [1, 1])
        if len(v) != 2 or not all(is_int(x) and x > 0 for x in v):
            raise SpecError("%s %r must be positive integers" % (k, v))


def ref_conv(case, vals):
    layout, attrs, kind = case["layout"], case["attrs"], case["kind"]
    check_pos_pairs(attrs, ("strides", "dilations"))
    check_padding_shape(attrs["padding"])
    f = case["inputs"]["filter"]
    if len(f["shape"]) != 4:
        raise SpecError("filter rank != 4")
    kh, kw, cif, co = f["shape"]
    (sh, sw), (dh, dw) = attrs["strides"], attrs.get("dilations", [1, 1])
    rnd = attrs.get("dim_rounding_mode")
    if kind == "backward":
        xshape = attrs["input_shape"]
        (N, Ci, H, W), xi = dims(xshape, layout)
    else:
        xshape = case["inputs"]["x"]["shape"]
        (N, Ci, H, W), xi = dims(xshape, layout)
    if cif <= 0 or Ci % cif:
        raise SpecError("Ci %d not a multiple of filter in-channels %d" % (Ci, cif))
    G = Ci // cif
    if co % G:
        raise SpecError("Co %d not a multiple of groups %d" % (co, G))
    cog = co // G
    Ho, top = out_geometry(H, kh, sh, dh, attrs["padding"], 0, rnd)
    Wo, left = out_geometry(W, kw, sw, dw, attrs["padding"], 1, rnd)
    if Ho < 0 or Wo < 0:
        raise SpecError("negative output size")
    wv = vals["filter"]
    widx = lambda ky, kx, c2, o: ((ky * kw + kx) * cif + c2) * co + o
    if kind == "backward":
        (Nd, Cd, Hd, Wd), di = dims(case["inputs"]["dy"]["shape"], layout)
        if Nd != N:
            raise SpecError("batch mismatch")
        if Cd != co:
            raise SpecError("dy channels %d != filter out-channels %d" % (Cd, co))
        if (Hd, Wd) != (Ho, Wo):
            raise SpecError("dy spatial %dx%d != computed %dx%d" % (Hd, Wd, Ho, Wo))
        dy = vals["dy"]
        out = [0.0] * prod(xshape)
        for n in range(N):
            for o in range(co):
                g = o // cog
                for oy in range(Ho):
                    for ox in range(Wo):
                        v = dy[di(n, o, oy, ox)]
                        for ky in range(kh):
                            y = oy * sh - top + ky * dh
                            if y < 0 or y >= H:
                                continue
                            for kx in range(kw):
                                xx = ox * sw - left + kx * dw
                                if xx < 0 or xx >= W:
                                    continue
                                for c2 in range(cif):
                                    out[xi(n, g * cif + c2, y, xx)] += v * wv[widx(ky, kx, c2, o)]
        return list(xshape), out
    oshape = make_shape(N, co, Ho, Wo, layout)
    oi = dims(oshape, layout)[1]
    xs = vals["x"]
    out = [0.0] * prod(oshape)
    for n in range(N):
        for o in range(co):
            g = o // cog
            for oy in range(Ho):
                for ox in range(Wo):
                    acc = 0.0
                    for ky in range(kh):
                        y = oy * sh - top + ky * dh
                        if y < 0 or y >= H:
                            continue
                        for kx in range(kw):
                            xx = ox * sw - left + kx * dw
                            if xx < 0 or xx >= W:
                                continue
                            for c2 in range(cif):
                                acc += xs[xi(n, g * cif + c2, y, xx)] * wv[widx(ky, kx, c2, o)]
                    out[oi(n, o, oy, ox)] = acc
    return oshape, out


def ref_pool(case, vals):
    layout, attrs, kind = case["layout"], case["attrs"], case["kind"]
    check_pos_pairs(attrs, ("ksize", "strides"))
    check_padding_shape(attrs["padding"])
    dil = case.get("extra_attrs", {}).get("dilations", [1, 1])
    (kh, kw), (sh, sw), (dh, dw) = attrs["ksize"], attrs["strides"], dil
    rnd = attrs.get("dim_rounding_mode")
    xshape = case["inputs"]["x"]["shape"]
    (N, C, H, W), xi = dims(xshape, layout)
    Ho, top = out_geometry(H, kh, sh, dh, attrs["padding"], 0, rnd)
    Wo, left = out_geometry(W, kw, sw, dw, attrs["padding"], 1, rnd)
    if isinstance(attrs["padding"], list):
        (t, b), (l, r) = attrs["padding"]
        if not (t < kh and b < kh and l < kw and r < kw):
            raise SpecError("explicit padding %r not smaller than the window %r" % (attrs["padding"], [kh, kw]))
    if Ho < 0 or Wo < 0:
        raise SpecError("negative output size")
    xs = vals["x"]

    def argmax(n, c, oy, ox):
        best = None
        for ky in range(kh):
            y = oy * sh - top + ky * dh
            if y < 0 or y >= H:
                continue
            for kx in range(kw):
                xx = ox * sw - left + kx * dw
                if xx < 0 or xx >= W:
                    continue
                i = xi(n, c, y, xx)
                if best is None or xs[i] > xs[best]:
                    best = i
        return best

    if kind == "backward":
        dshape = case["inputs"]["dy"]["shape"]
        (Nd, Cd, Hd, Wd), di = dims(dshape, layout)
        if (Nd, Cd, Hd, Wd) != (N, C, Ho, Wo):
            raise SpecError("dy shape %r != expected %r" % (dshape, make_shape(N, C, Ho, Wo, layout)))
        if "y" in case["inputs"] and case["inputs"]["y"]["shape"] != dshape:
            raise SpecError("y shape differs from dy")
        dy = vals["dy"]
        out = [0.0] * prod(xshape)
        for n in range(N):
            for c in range(C):
                for oy in range(Ho):
                    for ox in range(Wo):
                        a = argmax(n, c, oy, ox)
                        if a is not None:
                            out[a] += dy[di(n, c, oy, ox)]
        return list(xshape), out
    oshape = make_shape(N, C, Ho, Wo, layout)
    oi = dims(oshape, layout)[1]
    out = [0.0] * prod(oshape)
    for n in range(N):
        for c in range(C):
            for oy in range(Ho):
                for ox in range(Wo):
                    a = argmax(n, c, oy, ox)
                    out[oi(n, c, oy, ox)] = xs[a] if a is not None else -math.inf
    return oshape, out


def reference(case):
    vals = {}
    for k, t in case["inputs"].items():
        if len(t["data"]) != prod(t["shape"]):
            raise SpecError("input %s data length" % k)
        vals[k] = [to_float(v) for v in t["data"]]
    op = case["op"]
    if op.startswith("resize"):
        return ref_resize(case, vals)
    if op.startswith("conv2d"):
        return ref_conv(case, vals)
    if op.startswith("max_pool"):
        return ref_pool(case, vals)
    raise AssertionError(op)


def close(r, e, case):
    if math.isnan(e) or math.isnan(r):
        return math.isnan(e) and math.isnan(r)
    if math.isinf(e) or math.isinf(r):
        return r == e
    # generous on purpose: this catches semantic differences, not rounding.
    return abs(r - e) <= case["tolerance"] + case.get("rtol", 0.0) * abs(e) + 1e-5 * abs(e)


# ----------------------------------------------------------------------------------------
# sanity checks

def sanity(case):
    cid = case["id"]
    assert case["kind"] in ("backward", "forward"), cid
    assert case["layout"] in ("NHWC", "NCHW"), cid
    for k, t in case["inputs"].items():
        assert t["dtype"] in FLOAT_DTYPES, (cid, k, t["dtype"])
        assert len(t["data"]) == prod(t["shape"]), (cid, k, "data length %d != prod%r" % (len(t["data"]), t["shape"]))
    is_err = case["expected_error"] is not None
    assert is_err == (case["expected"] is None), (cid, "exactly one of expected / expected_error")
    if case["kind"] == "backward" and not is_err:
        e = case["expected"]
        assert e["data"] is not None, (cid, "backward case without expected data")
        assert len(e["data"]) == prod(e["shape"]), (cid, "expected length %d != prod%r" % (len(e["data"]), e["shape"]))
        op, ins = case["op"], case["inputs"]
        for need in {"resize_grad": ("dy", "x"), "resize_bilinear_grad": ("dy", "x"),
                     "resize_nearest_neighbor_grad": ("dy", "x"),
                     "conv2d_backprop_input": ("dy", "filter"), "max_pool_grad": ("dy", "x")}[op]:
            assert need in ins, (cid, "missing input", need)
        if op in ("resize_grad", "resize_bilinear_grad", "resize_nearest_neighbor_grad", "max_pool_grad"):
            assert e["shape"] == ins["x"]["shape"], (cid, "expected shape != x shape")
        if op == "conv2d_backprop_input":
            assert e["shape"] == case["attrs"]["input_shape"], (cid, "expected shape != input_shape")
    if case["kind"] == "forward" and not is_err and case["expected"]["data"] is not None:
        e = case["expected"]
        assert len(e["data"]) == prod(e["shape"]), (cid, "expected length")


def verify_against_reference(case):
    """-> short status string; raises AssertionError on a disagreement."""
    cid = case["id"]
    is_err = case["expected"] is None
    try:
        shape, out = reference(case)
    except SpecError as err:
        assert is_err, "%s: reference rejects a case that has expected data: %s" % (cid, err)
        return "rejected (%s)" % err
    assert not is_err, "%s: error case (%s) accepted by the SPEC reference" % (cid, case["expected_error"])
    e = case["expected"]
    assert shape == e["shape"], "%s: reference shape %r != expected %r" % (cid, shape, e["shape"])
    if e["data"] is None:
        return "shape only"
    bad = [(i, r, to_float(x)) for i, (r, x) in enumerate(zip(out, e["data"])) if not close(r, to_float(x), case)]
    assert not bad, "%s: %d values differ from the SPEC reference, first %r" % (cid, len(bad), bad[:3])
    return "match"


# ----------------------------------------------------------------------------------------

def load(path):
    with open(path) as fh:
        d = json.load(fh)
    return d["cases"] if isinstance(d, dict) else d


def main(argv):
    src = os.path.abspath(argv[1]) if len(argv) > 1 else DEFAULT_SRC
    files = ["upstream_cases.json", "derived_quirk_cases.json", "ort_resize_grad_cases.json"]
    cases, untranslated, seen = [], [], set()
    n_in = Counter()
    for fname in files:
        for c in load(os.path.join(src, fname)):
            n_in[fname] += 1
            cid = c.get("id")
            if fname == "derived_quirk_cases.json" and not cid.startswith("quirk/"):
                cid = c["id"] = "quirk/" + cid
            if fname == "ort_resize_grad_cases.json" and not cid.startswith("ort/"):
                cid = c["id"] = "ort/" + cid
            assert cid not in seen, "duplicate id %s" % cid
            seen.add(cid)
            try:
                cases.append(translate_case(c, fname))
            except Untranslatable as err:
                untranslated.append({"id": cid, "source_file": fname, "reason": str(err)})

    assert not (set(SPEC_OVERRIDES) - {c["id"] for c in cases}), "stale SPEC_OVERRIDES entries"
    statuses = {}
    for case in cases:
        sanity(case)
        statuses[case["id"]] = verify_against_reference(case)

    for case in cases:
        case["attrs"] = intify(case["attrs"])
        if "extra_attrs" in case:
            case["extra_attrs"] = intify(case["extra_attrs"])
    head = json.dumps({"generated_by": GENERATED_BY}, separators=(",", ":"))[:-1]
    body = ",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in cases)
    unt = ",\n".join(json.dumps(u, separators=(",", ":")) for u in untranslated)
    text = head + ',"cases":[\n' + body + '\n],"untranslated":[' + ("\n" + unt + "\n" if unt else "") + "]}\n"
    json.loads(text)  # must parse
    with open(OUT_PATH, "w") as fh:
        fh.write(text)

    # summary
    print("read:", dict(n_in), "from", src)
    print("wrote %d cases (%d untranslated) to %s" % (len(cases), len(untranslated), OUT_PATH))
    per = Counter((c["kind"], c["op"]) for c in cases)
    errs = Counter((c["kind"], c["op"]) for c in cases if c["expected_error"] is not None)
    shape_only = Counter((c["kind"], c["op"]) for c in cases if c["expected"] is not None and c["expected"]["data"] is None)
    print("%-9s %-30s %6s %6s %10s" % ("kind", "op", "cases", "errors", "shape-only"))
    for k in sorted(per):
        print("%-9s %-30s %6d %6d %10d" % (k[0], k[1], per[k], errs[k], shape_only[k]))
    print("by source file:", dict(Counter(c["source_file"] for c in cases)))
    print("error cases:")
    for c in cases:
        if c["expected_error"] is not None:
            print("  %-45s %s" % (c["id"], c["expected_error"][:90]))
    print("SPEC overrides (upstream expectation replaced):")
    for c in cases:
        if "spec_override" in c:
            print("  %s" % c["id"])
    print("cases with extra_attrs (not expressible in the SPEC):")
    for c in cases:
        if "extra_attrs" in c:
            print("  %s %s" % (c["id"], json.dumps(c["extra_attrs"])))
    print("reference check:", dict(Counter(s.split(" ")[0] for s in statuses.values())))
    print("untranslated / dropped:", untranslated if untranslated else "none")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
