#!/usr/bin/env python3
"""Time PyTorch's and TensorFlow's CPU backward ops on the SPEC's CPU workloads W1-W8 (and
the forward conv2d rows W4f, W5f).

f32 (or --dtype bf16|f16), 2 threads by default, random inputs. Each peer runs in its own subprocess (so the two
frameworks' thread pools and OpenMP runtimes never share a process); TensorFlow runs twice, at
its default and as `tensorflow-onednn` with TF_ENABLE_ONEDNN_OPTS=1 (its default leaves oneDNN
off on CPUs without AVX512-VNNI and the like), so the best peer is the faster of the two. Per op: warm-up calls,
then timed calls (each call timed on its own with perf_counter) until about --target-s seconds
are spent; median/min/max are reported.

    bench/setup.sh                                   # venv + PyTorch + TensorFlow (PyPI)
    bench/.venv/bin/python bench/peers.py            # full run, table on stdout
    bench/.venv/bin/python bench/peers.py --quick --json /tmp/peers.json
    bench/.venv/bin/python bench/peers.py --gradops-json /tmp/gradops.json
    bench/.venv/bin/python bench/peers.py \\
        --gradops-cmd "target/release/gradops bench --device cpu --json /tmp/g.json"

GPU mode (--device cuda): PyTorch's CUDA ops (cuDNN for conv) at batch 32 in f16/f32/f64,
NCHW and NHWC, timed with the protocol of `gradops bench --device cuda` (CUDA events around
each call, a 256 MiB clear queued before it, 3 untimed calls, median), side by side with
gradops' JSON (one file per dtype/layout, or a --gradops-cmd template run per dtype/layout):

    python3 bench/peers.py --device cuda --json /tmp/peers-gpu.json --gradops-cmd \
        "target/release/gradops bench --device cuda --dtype {dtype} --layout {layout} \
         --reps {reps} --json /tmp/gradops-{dtype}-{layout}.json"

See bench/README.md for what each peer op is and where it differs from the SPEC.
"""

import argparse
import json
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

# ---------------------------------------------------------------------------------------------
# Workloads (SPEC "Benchmark workloads", CPU rows). Shapes are NCHW.

# CPU peers, each in its own process (run_peer): tensorflow-onednn is TensorFlow with
# TF_ENABLE_ONEDNN_OPTS=1, since TensorFlow leaves oneDNN off on CPUs without AVX512-VNNI
# and similar (the project's Zen 3 VMs), where its default is the slower Eigen kernels.
CPU_PEERS = ("pytorch", "tensorflow", "tensorflow-onednn")

WORKLOADS = {
    "W1": dict(op="resize_grad linear half_pixel", x=(8, 64, 128, 128), dy=(8, 64, 256, 256)),
    "W2": dict(op="resize_grad linear half_pixel", x=(8, 64, 256, 256), dy=(8, 64, 97, 97)),
    "W3": dict(op="resize_grad nearest asymmetric floor", x=(8, 64, 128, 128), dy=(8, 64, 256, 256)),
    "W4": dict(op="conv2d_backprop_input 3x3 s1 SAME", x=(8, 64, 56, 56), dy=(8, 64, 56, 56),
               k=3, stride=1),
    "W5": dict(op="conv2d_backprop_input 3x3 s2 SAME", x=(8, 64, 56, 56), dy=(8, 128, 28, 28),
               k=3, stride=2),
    "W6": dict(op="max_pool_grad 3x3 s2 SAME", x=(8, 64, 112, 112), dy=(8, 64, 56, 56),
               k=3, stride=2),
    # The weight gradients (conv2d_backprop_filter) of W4 and W5.
    "W7": dict(op="conv2d_backprop_filter 3x3 s1 SAME", x=(8, 64, 56, 56), dy=(8, 64, 56, 56),
               k=3, stride=1),
    "W8": dict(op="conv2d_backprop_filter 3x3 s2 SAME", x=(8, 64, 56, 56), dy=(8, 128, 28, 28),
               k=3, stride=2),
    # The forward conv2d of W4 and W5 (dy is y's shape).
    "W4f": dict(op="conv2d 3x3 s1 SAME", x=(8, 64, 56, 56), dy=(8, 64, 56, 56), k=3, stride=1),
    "W5f": dict(op="conv2d 3x3 s2 SAME", x=(8, 64, 56, 56), dy=(8, 128, 28, 28), k=3, stride=2),
}
CONV_INPUT, CONV_FILTER, CONV_FWD = ("W4", "W5"), ("W7", "W8"), ("W4f", "W5f")

# The SPEC's own "best peer" column, printed for context in the comparison.
SPEC_BEST = {
    "W1": "17.3 ms (TF)", "W2": "10.0 ms (TF)", "W3": "8.8 ms (TF)", "W4": "8.5 ms (TF)",
    "W5": "4.6 ms (TF)", "W6": "27.2 ms recompute / 1.9 ms stored (PyTorch)",
    "W7": "(none given)", "W8": "(none given)", "W4f": "(none given)", "W5f": "(none given)",
}


def canon_workload(name):
    """`w4f` -> `W4f`: the id's case as in WORKLOADS (upper-case W, lower-case suffix)."""
    n = name.strip()
    return n[:1].upper() + n[1:].lower()


def same_pads(n, k, s):
    """TF SAME padding for one axis: (out, top, bottom), the extra pixel goes after."""
    out = -(-n // s)
    need = max(0, (out - 1) * s + k - n)
    return out, need // 2, need - need // 2


# ---------------------------------------------------------------------------------------------
# Timing


def time_op(fn, warmup, target_s, min_reps, max_reps):
    """Warm up, then time calls one at a time. Returns dict of ms stats."""
    import gc

    for _ in range(warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-6)
    reps = int(min(max_reps, max(min_reps, round(target_s / one))))
    times = []
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for _ in range(reps):
            t = time.perf_counter()
            r = fn()
            times.append(time.perf_counter() - t)
            del r
    finally:
        if gc_was:
            gc.enable()
    ms = [t * 1e3 for t in times]
    return dict(median_ms=statistics.median(ms), min_ms=min(ms), max_ms=max(ms), reps=reps)


def rand(rng, shape):
    import numpy as np

    return rng.standard_normal(shape, dtype=np.float32)


# ---------------------------------------------------------------------------------------------
# PyTorch worker


def torch_cases(args):
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(args.threads)
    except RuntimeError:
        pass
    aten = torch.ops.aten
    rng = np.random.default_rng(args.seed)
    cases = []
    dt = CPU_TORCH_DTYPES[args.dtype](torch)

    def tensor(a):
        # drawn in f32 (as gradops' inputs), then rounded once to the element type
        return torch.from_numpy(a).to(dt)

    exact = args.torch_exact_same
    chl = args.torch_channels_last
    out = args.torch_out

    def fmt(t):
        return t.contiguous(memory_format=torch.channels_last) if chl else t.contiguous()

    # channels_last is NHWC in memory (logical shape stays NCHW).
    layout = "NHWC" if chl else "NCHW"

    for wid in args.workloads:
        w = WORKLOADS[wid]
        x_shape, dy_shape = w["x"], w["dy"]
        if wid in ("W1", "W2"):
            dy = fmt(tensor(rand(rng, dy_shape)))
            out_size, in_size = list(dy_shape[2:]), list(x_shape)

            if out:
                gi = fmt(torch.empty(x_shape, dtype=dt))

                def fn(dy=dy, o=out_size, i=in_size, gi=gi):
                    return aten.upsample_bilinear2d_backward.grad_input(dy, o, i, False,
                                                                        grad_input=gi)
            else:
                def fn(dy=dy, o=out_size, i=in_size):
                    return aten.upsample_bilinear2d_backward(dy, o, i, False)

            cases.append((wid, "aten.upsample_bilinear2d_backward(align_corners=False)"
                          + (" out=" if out else ""), layout, None, fn))
        elif wid == "W3":
            dy = fmt(tensor(rand(rng, dy_shape)))
            out_size, in_size = list(dy_shape[2:]), list(x_shape)

            if out:
                gi = fmt(torch.empty(x_shape, dtype=dt))

                def fn(dy=dy, o=out_size, i=in_size, gi=gi):
                    return aten.upsample_nearest2d_backward.grad_input(dy, o, i, grad_input=gi)
            else:
                def fn(dy=dy, o=out_size, i=in_size):
                    return aten.upsample_nearest2d_backward(dy, o, i)

            cases.append((wid, "aten.upsample_nearest2d_backward" + (" out=" if out else ""),
                          layout, None, fn))
        elif wid in CONV_INPUT + CONV_FILTER:
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            co = dy_shape[1]
            _, top, bot = same_pads(h, k, s)
            weight = fmt(tensor(rand(rng, (co, ci, k, k))))
            dy = fmt(tensor(rand(rng, dy_shape)))
            if top == bot:
                pad, x = [top, top], fmt(tensor(rand(rng, x_shape)))
                note = f"padding={top}"
            elif exact:
                # TF SAME puts the odd pixel after: pad=0 on an input one larger at the end
                # gives exactly TF's taps; dx is 1 row/col larger (the pad cells), sliced off.
                pad = [top, top]
                x = fmt(tensor(rand(rng, (n, ci, h + bot - top, wd + bot - top))))
                note = f"padding={top}, input {h + bot - top}x{wd + bot - top} (exact SAME)"
            else:
                # Symmetric padding=1: same output size, same FLOPs and traffic, but every tap
                # is one pixel off TF SAME (which pads 0 top/left, 1 bottom/right).
                pad, x = [bot, bot], fmt(tensor(rand(rng, x_shape)))
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"
            # W4/W5: the input gradient; W7/W8: the weight gradient.
            which = 0 if wid in CONV_INPUT else 1
            mask = [which == 0, which == 1, False]

            def fn(dy=dy, x=x, weight=weight, s=s, pad=pad, mask=mask, which=which):
                return aten.convolution_backward(dy, x, weight, None, [s, s], pad, [1, 1],
                                                 False, [0, 0], 1, mask)[which]

            fn.f64 = lambda dy=dy, x=x, weight=weight, s=s, pad=pad, mask=mask, which=which: \
                aten.convolution_backward(dy.double(), x.double(), weight.double(), None, [s, s],
                                          pad, [1, 1], False, [0, 0], 1, mask)[which]

            m = "[T,F,F]" if which == 0 else "[F,T,F]"
            cases.append((wid, f"aten.convolution_backward(mask={m}, {note})", layout,
                          None, fn))
        elif wid in CONV_FWD:
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            co = dy_shape[1]
            _, top, bot = same_pads(h, k, s)
            weight = fmt(tensor(rand(rng, (co, ci, k, k))))
            if top == bot:
                pad, xin, note = [top, top], x_shape, f"padding={top}"
            elif exact:
                pad, xin = [top, top], (n, ci, h + bot - top, wd + bot - top)
                note = f"padding={top}, input {xin[2]}x{xin[3]} (exact SAME)"
            else:
                pad, xin = [bot, bot], x_shape
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"
            x = fmt(tensor(rand(rng, xin)))

            def fn(x=x, weight=weight, s=s, pad=pad):
                return aten.convolution(x, weight, None, [s, s], pad, [1, 1], False, [0, 0], 1)

            fn.f64 = lambda x=x, weight=weight, s=s, pad=pad: aten.convolution(
                x.double(), weight.double(), None, [s, s], pad, [1, 1], False, [0, 0], 1)

            cases.append((wid, f"aten.convolution({note})", layout, None, fn))
        elif wid == "W6":
            k, s = w["k"], w["stride"]
            n, c, h, wd = x_shape
            _, top, bot = same_pads(h, k, s)
            x = tensor(rand(rng, x_shape))
            if exact:
                x = torch.nn.functional.pad(x, (0, bot - top, 0, bot - top),
                                            value=float("-inf"))
                pad = [top, top]
                note = f"padding={top} on x padded with -inf to {h + bot - top} (exact SAME)"
            else:
                pad = [bot, bot]
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"
            x = fmt(x)
            y, idx = aten.max_pool2d_with_indices(x, [k, k], [s, s], pad, [1, 1], False)
            dy = fmt(tensor(rand(rng, tuple(y.shape))))
            assert tuple(dy.shape) == tuple(dy_shape), (dy.shape, dy_shape)

            if out:
                gi = torch.empty_like(x)

                def fn(dy=dy, x=x, idx=idx, k=k, s=s, pad=pad, gi=gi):
                    return aten.max_pool2d_with_indices_backward.grad_input(
                        dy, x, [k, k], [s, s], pad, [1, 1], False, idx, grad_input=gi)
            else:
                def fn(dy=dy, x=x, idx=idx, k=k, s=s, pad=pad):
                    return aten.max_pool2d_with_indices_backward(dy, x, [k, k], [s, s], pad,
                                                                 [1, 1], False, idx)

            cases.append((wid, f"aten.max_pool2d_with_indices_backward({note})"
                          + (" out=" if out else ""), layout, "stored", fn))
    return cases


# CPU mode's element types: f32 (the SPEC's CPU workloads), bf16 and f16 (the half types
# the peers' CPU kernels register, where they do; gradops bench --dtype bf16|f16).
CPU_DTYPES = ("f32", "bf16", "f16")
CPU_TORCH_DTYPES = {"f32": lambda torch: torch.float32, "bf16": lambda torch: torch.bfloat16,
                    "f16": lambda torch: torch.float16}


def unsupported(err):
    """A case whose setup failed (e.g. TF has no CPU kernel for the dtype): timing it raises,
    and run_worker records the row as unsupported with the reason."""
    msg = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}" if str(err) \
        else type(err).__name__

    def fn():
        raise RuntimeError(msg)

    return fn


# The instruction-set caps a run may set (bench/cpu_rounds.sh's ISA=avx2 sets all four):
# recorded with each peer's versions, so a capped run says so in its JSON.
ISA_CAP_VARS = ("GRADOPS_CPU_SIMD", "ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY",
                "MKL_ENABLE_INSTRUCTIONS")


def isa_caps():
    return {k: os.environ[k] for k in ISA_CAP_VARS if k in os.environ}


def torch_versions():
    import torch

    return {
        "torch": torch.__version__,
        "torch_parallel_backend": "OpenMP" if "OpenMP" in torch.__config__.parallel_info()
        else "other",
        "torch_mkldnn": bool(torch.backends.mkldnn.is_available()),
        "torch_num_threads": torch.get_num_threads(),
        "isa_caps": isa_caps(),
    }


# ---------------------------------------------------------------------------------------------
# TensorFlow worker


def tf_cases(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    raw = tf.raw_ops
    rng = np.random.default_rng(args.seed)
    cases = []
    dt = {"f32": tf.float32, "bf16": tf.bfloat16, "f16": tf.float16}[args.dtype]

    def nhwc(a, dtype=None):
        t = tf.constant(np.ascontiguousarray(a.transpose(0, 2, 3, 1)))
        return tf.cast(t, dtype or dt)

    def f64(t):
        return tf.cast(t, tf.float64)

    for wid in args.workloads:
        w = WORKLOADS[wid]
        x_shape, dy_shape = w["x"], w["dy"]
        if wid in ("W1", "W2", "W3"):
            # ResizeBilinearGrad's grads input is float32 whatever T is (the op's signature):
            # in bf16/f16 only original_image and dx are bf16/f16.
            dy = nhwc(rand(rng, dy_shape), tf.float32 if wid != "W3" else None)
            x = nhwc(rand(rng, x_shape))
            if wid == "W3":
                size = tf.constant([x_shape[2], x_shape[3]], tf.int32)

                def fn(dy=dy, size=size):
                    return raw.ResizeNearestNeighborGrad(grads=dy, size=size, align_corners=False,
                                                         half_pixel_centers=False)

                op = "ResizeNearestNeighborGrad(align_corners=False, half_pixel_centers=False)"
            else:
                def fn(dy=dy, x=x):
                    return raw.ResizeBilinearGrad(grads=dy, original_image=x, align_corners=False,
                                                  half_pixel_centers=True)

                op = "ResizeBilinearGrad(align_corners=False, half_pixel_centers=True)"
            cases.append((wid, op, "NHWC", None, fn))
        elif wid in ("W4", "W5"):
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            co = dy_shape[1]
            filt = tf.cast(tf.constant(rand(rng, (k, k, ci, co))), dt)  # HWIO
            dy = nhwc(rand(rng, dy_shape))
            isz = tf.constant([n, h, wd, ci], tf.int32)

            def fn(dy=dy, filt=filt, isz=isz, s=s, cast=lambda t: t):
                return raw.Conv2DBackpropInput(input_sizes=isz, filter=cast(filt),
                                               out_backprop=cast(dy), strides=[1, s, s, 1],
                                               padding="SAME", data_format="NHWC")

            fn.f64 = lambda fn=fn: fn(cast=f64)

            cases.append((wid, "Conv2DBackpropInput(padding=SAME)", "NHWC", None, fn))
        elif wid in CONV_FILTER:
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            co = dy_shape[1]
            x = nhwc(rand(rng, x_shape))
            dy = nhwc(rand(rng, dy_shape))
            fsz = tf.constant([k, k, ci, co], tf.int32)  # HWIO

            def fn(x=x, dy=dy, fsz=fsz, s=s, cast=lambda t: t):
                return raw.Conv2DBackpropFilter(input=cast(x), filter_sizes=fsz,
                                                out_backprop=cast(dy), strides=[1, s, s, 1],
                                                padding="SAME", data_format="NHWC")

            fn.f64 = lambda fn=fn: fn(cast=f64)

            cases.append((wid, "Conv2DBackpropFilter(padding=SAME)", "NHWC", None, fn))
        elif wid in CONV_FWD:
            k, s = w["k"], w["stride"]
            ci, co = x_shape[1], dy_shape[1]
            x = nhwc(rand(rng, x_shape))
            filt = tf.cast(tf.constant(rand(rng, (k, k, ci, co))), dt)  # HWIO

            def fn(x=x, filt=filt, s=s, cast=lambda t: t):
                return raw.Conv2D(input=cast(x), filter=cast(filt), strides=[1, s, s, 1],
                                  padding="SAME", data_format="NHWC")

            fn.f64 = lambda fn=fn: fn(cast=f64)

            cases.append((wid, "Conv2D(padding=SAME)", "NHWC", None, fn))
        elif wid == "W6":
            k, s = w["k"], w["stride"]
            x = nhwc(rand(rng, x_shape))
            ks, st = [1, k, k, 1], [1, s, s, 1]
            y = tf.nn.max_pool2d(x, ks, st, "SAME")
            dy = tf.cast(tf.constant(rng.standard_normal(tuple(y.shape), dtype=np.float32)), dt)
            assert tuple(y.shape) == (dy_shape[0], dy_shape[2], dy_shape[3], dy_shape[1])

            def fn(dy=dy, x=x, y=y):
                return raw.MaxPoolGrad(orig_input=x, orig_output=y, grad=dy, ksize=ks,
                                       strides=st, padding="SAME")

            cases.append((wid, "MaxPoolGrad(padding=SAME)", "NHWC", "recompute", fn))
            if not args.no_tf_argmax:
                try:
                    _, am = raw.MaxPoolWithArgmax(input=x, ksize=ks, strides=st,
                                                  padding="SAME", include_batch_in_index=True)

                    def fn2(dy=dy, x=x, am=am):
                        return raw.MaxPoolGradWithArgmax(input=x, grad=dy, argmax=am, ksize=ks,
                                                         strides=st, padding="SAME",
                                                         include_batch_in_index=True)
                except Exception as e:  # no CPU kernel for this dtype: say so in the row
                    fn2 = unsupported(e)

                cases.append((wid, "MaxPoolGradWithArgmax(padding=SAME)", "NHWC", "stored",
                              fn2))
    return cases


def tf_versions():
    import tensorflow as tf

    v = {"tensorflow": tf.__version__,
         "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
         "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
         "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset)"),
         "isa_caps": isa_caps()}
    try:
        from tensorflow.python.util import _pywrap_util_port

        v["tf_onednn_enabled"] = bool(_pywrap_util_port.IsMklEnabled())
    except Exception:  # pragma: no cover - private API
        pass
    return v


# Above this relative L2 distance from its own f64 result, a peer's f32 conv is not plain f32
# arithmetic (the SPEC's f32 tolerance; plain f32 sits near 1e-7, a bf16 or TF32 math mode
# near 1e-3): its time is not comparable with gradops' exact f32 and the table says so.
F32_REL_L2 = 1e-5


def rel_l2_vs_f64(fn, dtype):
    """The case's result against the same op on the same inputs in f64 (conv rows): whether
    the peer computed in its element type's arithmetic or a reduced-precision math mode
    (oneDNN's fpmath mode, TF32, bf16 products). Untimed, once, after the timing."""
    import numpy as np

    def arr(t):
        if hasattr(t, "detach"):  # torch
            return t.detach().double().numpy()
        return np.asarray(t.numpy(), dtype=np.float64)

    got, ref = arr(fn()), arr(fn.f64())
    err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-300))
    note = "" if dtype != "f32" or err <= F32_REL_L2 else \
        f"  NOT plain f32 (over {F32_REL_L2:g}): a reduced-precision math mode?"
    print(f"      {dtype} result vs the same op in f64: relative L2 {err:.2e}{note}",
          file=sys.stderr, flush=True)
    return err


def run_worker(args):
    import numpy as np

    if args._worker == "pytorch":
        cases, versions = torch_cases(args), torch_versions
    else:
        cases, versions = tf_cases(args), tf_versions
    results = []
    for wid, op, layout, argmax, fn in cases:
        if args._worker == "pytorch" and args.torch_channels_last:
            op += " [channels_last]"
        row = {"workload": wid, "peer": args._worker, "op": op, "layout": layout,
               "dtype": args.dtype}
        if argmax:
            row["argmax"] = argmax
        try:
            r = time_op(fn, args.warmup, args.target_s, args.min_reps, args.max_reps)
        except Exception as e:  # e.g. no CPU kernel registered for bf16: a row that says so
            row.update(median_ms=None, min_ms=None, max_ms=None, reps=0,
                       unsupported=str(e).strip().splitlines()[0][:300] if str(e)
                       else type(e).__name__)
            results.append(row)
            print(f"  {wid} {args._worker:<10} unsupported in {args.dtype}: "
                  f"{row['unsupported']} ({op})", file=sys.stderr, flush=True)
            continue
        row.update(r)
        results.append(row)
        print(f"  {wid} {args._worker:<10} {r['median_ms']:9.3f} ms median "
              f"({r['reps']} reps) {op}", file=sys.stderr, flush=True)
        if getattr(fn, "f64", None):
            row["rel_l2_vs_f64"] = rel_l2_vs_f64(fn, args.dtype)
    v = versions()
    v["numpy"] = np.__version__
    with open(args._out, "w") as f:
        json.dump({"versions": v, "results": results}, f)


# ---------------------------------------------------------------------------------------------
# GPU mode (--device cuda): PyTorch CUDA rows timed with the protocol of
# `gradops bench --device cuda` (cli/src/bench/: CudaTimer, bench_cuda_typed, time_samples).

CUDA_BATCH = 32                 # SPEC: "GPU: the same shapes with batch 32" (bench.rs CUDA_BATCH)
CUDA_WARMUP_CALLS = 3           # bench.rs CUDA_WARMUP_CALLS: untimed calls before time_samples
CUDA_PAD_BYTES = 256 << 20      # bench.rs CUDA_PAD_BYTES: cleared before each timed call
MIN_CALLS, MAX_CALLS = 5, 10_000  # bench.rs MIN_CALLS / MAX_CALLS (adaptive mode only)
GPU_DEFAULT_REPS, GPU_QUICK_REPS = 100, 20
GPU_DTYPES = ("f16", "bf16", "f32", "f64")
GRADOPS_DTYPES = ("f16", "bf16", "f32", "f64")   # what `gradops bench --dtype` accepts
DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8}
NHWC_DEFAULT = ("W1", "W2", "W3", "W6")


def gpu_shapes(wid, batch, scale_down):
    """Logical NCHW shapes (x, dy, weight OIHW or None) of a workload at `batch`, batch and
    channels divided by `scale_down` (at least 1) exactly as `gradops bench --scale-down`."""
    w = WORKLOADS[wid]
    s = max(1, scale_down)
    n = max(1, batch // s)
    c = max(1, w["x"][1] // s)
    x = (n, c) + tuple(w["x"][2:])
    if "k" in w and wid in CONV_INPUT + CONV_FILTER + CONV_FWD:
        co = max(1, w["dy"][1] // s)
        return x, (n, co) + tuple(w["dy"][2:]), (co, c, w["k"], w["k"])
    return x, (n, c) + tuple(w["dy"][2:]), None


def minimal_bytes(wid, variant, x, dy, weight, dtype):
    """Minimal traffic of one call, as `Workload::traffic` in cli/src/bench/workloads.rs (SPEC shapes; i64
    argmax)."""
    e = DTYPE_BYTES[dtype]
    num = lambda s: math.prod(s)  # noqa: E731
    if variant == "forward":
        return num(x) * e + num(dy) * e + num(dy) * 8
    b = num(dy) * e + num(x) * e
    if weight is not None:
        b += num(weight) * e
    if variant == "recompute":
        b += num(x) * e
    elif variant == "stored":
        b += num(dy) * 8
    return b


def time_samples(timed_call, reps, target_s, max_calls=MAX_CALLS):
    """bench.rs `time_samples`: warm-up (one timed call, two when adaptive; dropped), then
    `reps` calls, or (reps None) calls until `target_s` of timed time is spent (at least
    MIN_CALLS, at most max_calls). Returns the per-call seconds."""
    timed_call()
    if reps is None:
        timed_call()
    samples, spent = [], 0.0
    while True:
        if reps is not None:
            enough = len(samples) >= max(reps, 1)
        else:
            enough = len(samples) >= max_calls or (len(samples) >= MIN_CALLS
                                                   and spent >= target_s)
        if enough:
            return samples
        dt = timed_call()
        spent += dt
        samples.append(dt)


class EventTimer:
    """bench.rs `CudaTimer`: queue a clear of a `pad_bytes` buffer (outside the events: the
    GPU is busy with it while the host launches the call, and it evicts L2), record the start
    event, queue the call, record the end event, wait for it, return the GPU seconds between
    the two events. With `host=True` (the --torch-device cpu test path) the same steps with
    perf_counter instead of events."""

    def __init__(self, torch, device, pad_bytes, host):
        self.torch, self.host = torch, host
        self.pad = torch.empty(pad_bytes, dtype=torch.uint8, device=device)
        self.pad.zero_()
        if not host:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def time(self, fn):
        self.pad.zero_()
        if self.host:
            t = time.perf_counter()
            r = fn()
            dt = time.perf_counter() - t
            del r
            return dt
        self.start.record()
        r = fn()
        self.end.record()
        self.end.synchronize()
        del r  # freed (stream-ordered) after the end event, outside the timing
        return self.start.elapsed_time(self.end) / 1e3


def set_tf32(torch, on):
    """PyTorch's legacy TF32 switches (both; `cudnn.allow_tf32` is what conv uses). Returns
    what PyTorch reports afterwards."""
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    state = {"cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
             "cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32)}
    try:  # the newer fp32_precision API (2.9+), for the record only
        state["cudnn.conv.fp32_precision"] = str(torch.backends.cudnn.conv.fp32_precision)
    except Exception:
        pass
    return state


def deterministic_check(torch, fn, sync):
    """Does `fn` run under torch.use_deterministic_algorithms(True)? (True / False, and the
    first line of PyTorch's error when it refuses.) The previous setting is restored."""
    prev = torch.are_deterministic_algorithms_enabled()
    prev_warn = torch.is_deterministic_algorithms_warn_only_enabled()
    try:
        torch.use_deterministic_algorithms(True)
        r = fn()
        sync()
        del r
        return True, None
    except RuntimeError as e:
        return False, str(e).strip().splitlines()[0][:200]
    finally:
        torch.use_deterministic_algorithms(prev, warn_only=prev_warn)


def gpu_cases(torch, args, device, dtype_name, layout):
    """Yields (workload, variant, op text, math, x, dy, weight shapes, make) per row: `make()`
    builds the inputs on the device and returns the call (a closure); `math` is 'tf32' or
    'fp32' for f32 conv, else None. Shapes are the SPEC shapes (NCHW logical)."""
    aten = torch.ops.aten
    dt = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32,
          "f64": torch.float64}[dtype_name]
    chl = layout == "NHWC"
    exact = args.torch_exact_same
    out = args.torch_out
    gen = torch.Generator(device=device)

    def fmt(t):
        return t.contiguous(memory_format=torch.channels_last) if chl else t.contiguous()

    def rnd(shape, seed):
        # uniform in [-1, 1) like gradops' inputs, drawn in f32 and rounded to the dtype
        gen.manual_seed(args.seed * 1000 + seed)
        t = torch.rand(shape, generator=gen, device=device, dtype=torch.float32)
        return fmt((t * 2 - 1).to(dt))

    wls = [w for w in args.workloads if layout == "NCHW" or w in args.nhwc_workloads]
    for wid in wls:
        w = WORKLOADS[wid]
        x_shape, dy_shape, wshape = gpu_shapes(wid, args.batch, args.scale_down)
        if wid in ("W1", "W2", "W3"):
            out_size, in_size = list(dy_shape[2:]), list(x_shape)
            bil = wid != "W3"

            def make(dy_shape=dy_shape, x_shape=x_shape, o=out_size, i=in_size, bil=bil):
                dy = rnd(dy_shape, 1)
                gi = fmt(torch.empty(x_shape, dtype=dt, device=device)) if out else None
                if bil and out:
                    return lambda: aten.upsample_bilinear2d_backward.grad_input(
                        dy, o, i, False, grad_input=gi)
                if bil:
                    return lambda: aten.upsample_bilinear2d_backward(dy, o, i, False)
                if out:
                    return lambda: aten.upsample_nearest2d_backward.grad_input(
                        dy, o, i, grad_input=gi)
                return lambda: aten.upsample_nearest2d_backward(dy, o, i)

            op = ("aten.upsample_bilinear2d_backward(align_corners=False)" if bil
                  else "aten.upsample_nearest2d_backward")
            yield wid, "backward", op + (" out=" if out else ""), None, x_shape, dy_shape, \
                None, make
        elif wid in CONV_INPUT + CONV_FILTER:
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            _, top, bot = same_pads(h, k, s)
            if top == bot:
                pad, xin, note = [top, top], x_shape, f"padding={top}"
            elif exact:
                pad = [top, top]
                xin = (n, ci, h + bot - top, wd + bot - top)
                note = f"padding={top}, input {xin[2]}x{xin[3]} (exact SAME)"
            else:
                pad, xin = [bot, bot], x_shape
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"

            # W4/W5: the input gradient; W7/W8: the weight gradient.
            which = 0 if wid in CONV_INPUT else 1

            def make(dy_shape=dy_shape, xin=xin, wshape=wshape, s=s, pad=pad, which=which):
                dy, x, weight = rnd(dy_shape, 1), rnd(xin, 3), rnd(wshape, 2)  # all in layout
                mask = [which == 0, which == 1, False]

                def fn():
                    return aten.convolution_backward(dy, x, weight, None, [s, s], pad, [1, 1],
                                                     False, [0, 0], 1, mask)[which]
                try:  # which backend PyTorch picks (cuDNN expected on the GPU), for the record
                    fn.info = {"conv_backend": str(torch._C._select_conv_backend(
                        x, weight, None, [s, s], pad, [1, 1], False, [0, 0], 1, None))}
                except Exception as e:
                    fn.info = {"conv_backend": f"unknown ({type(e).__name__})"}
                return fn

            op = f"aten.convolution_backward(mask={'[T,F,F]' if which == 0 else '[F,T,F]'}, {note})"
            maths = ("tf32", "fp32") if dtype_name == "f32" else (None,)
            for m in maths:
                yield wid, "backward", op, m, x_shape, dy_shape, wshape, make
        elif wid in CONV_FWD:
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            _, top, bot = same_pads(h, k, s)
            if top == bot:
                pad, xin, note = [top, top], x_shape, f"padding={top}"
            elif exact:
                pad = [top, top]
                xin = (n, ci, h + bot - top, wd + bot - top)
                note = f"padding={top}, input {xin[2]}x{xin[3]} (exact SAME)"
            else:
                pad, xin = [bot, bot], x_shape
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"

            def make(xin=xin, wshape=wshape, s=s, pad=pad):
                x, weight = rnd(xin, 3), rnd(wshape, 2)  # both in layout

                def fn():
                    return aten.convolution(x, weight, None, [s, s], pad, [1, 1], False,
                                            [0, 0], 1)
                try:  # which backend PyTorch picks (cuDNN expected on the GPU), for the record
                    fn.info = {"conv_backend": str(torch._C._select_conv_backend(
                        x, weight, None, [s, s], pad, [1, 1], False, [0, 0], 1, None))}
                except Exception as e:
                    fn.info = {"conv_backend": f"unknown ({type(e).__name__})"}
                return fn

            maths = ("tf32", "fp32") if dtype_name == "f32" else (None,)
            for m in maths:
                yield wid, "backward", f"aten.convolution({note})", m, x_shape, dy_shape, \
                    wshape, make
        elif wid == "W6":
            k, s = w["k"], w["stride"]
            n, c, h, wd = x_shape
            _, top, bot = same_pads(h, k, s)
            if exact:
                pad = [top, top]
                note = f"padding={top} on x padded with -inf to {h + bot - top} (exact SAME)"
            else:
                pad = [bot, bot]
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"
            ks, st = [k, k], [s, s]

            def inputs(x_shape=x_shape, dy_shape=dy_shape, pad=pad):
                x = rnd(x_shape, 3)
                if exact and bot != top:
                    x = fmt(torch.nn.functional.pad(x, (0, bot - top, 0, bot - top),
                                                    value=float("-inf")))
                y, idx = aten.max_pool2d_with_indices(x, ks, st, pad, [1, 1], False)
                assert tuple(y.shape) == tuple(dy_shape), (tuple(y.shape), dy_shape)
                dy = rnd(dy_shape, 1)
                return x, dy, idx

            def make_stored(pad=pad):
                x, dy, idx = inputs()
                gi = torch.empty_like(x) if out else None
                if out:
                    return lambda: aten.max_pool2d_with_indices_backward.grad_input(
                        dy, x, ks, st, pad, [1, 1], False, idx, grad_input=gi)
                return lambda: aten.max_pool2d_with_indices_backward(dy, x, ks, st, pad,
                                                                     [1, 1], False, idx)

            def make_recompute(pad=pad):
                x, dy, _ = inputs()

                def fn():
                    _, idx = aten.max_pool2d_with_indices(x, ks, st, pad, [1, 1], False)
                    return aten.max_pool2d_with_indices_backward(dy, x, ks, st, pad, [1, 1],
                                                                 False, idx)
                return fn

            def make_forward(pad=pad):
                x, _, _ = inputs()
                return lambda: aten.max_pool2d_with_indices(x, ks, st, pad, [1, 1], False)

            yield wid, "recompute", ("aten.max_pool2d_with_indices + "
                                     f"max_pool2d_with_indices_backward({note})"), None, \
                x_shape, dy_shape, None, make_recompute
            yield wid, "stored", (f"aten.max_pool2d_with_indices_backward({note}), indices "
                                  "from the forward (not timed)" + (" out=" if out else "")), \
                None, x_shape, dy_shape, None, make_stored
            yield wid, "forward", f"aten.max_pool2d_with_indices({note})", None, x_shape, \
                dy_shape, None, make_forward


def run_gpu_worker(args):
    """The PyTorch GPU rows, in this (sub)process; writes {"versions", "results"} to _out."""
    import torch

    host = args.torch_device == "cpu"
    if host:
        device = torch.device("cpu")
        torch.set_num_threads(args.threads)
        sync = lambda: None  # noqa: E731
    else:
        if not torch.cuda.is_available():
            raise SystemExit("peers.py --device cuda: torch.cuda.is_available() is False "
                             f"(torch {torch.__version__}, built for CUDA {torch.version.cuda})")
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        sync = torch.cuda.synchronize
    torch.backends.cudnn.benchmark = True
    default_tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    pad_bytes = max(CUDA_PAD_BYTES // max(1, args.scale_down), 16 << 20)
    timer = EventTimer(torch, device, pad_bytes, host)
    results = []
    import gc

    for dtype_name in args.dtypes:
        for layout in args.layouts:
            for wid, variant, op, m, x_shape, dy_shape, wshape, make in \
                    gpu_cases(torch, args, device, dtype_name, layout):
                row = {"workload": wid, "peer": "pytorch", "device": str(device),
                       "variant": variant, "dtype": dtype_name, "layout": layout, "op": op,
                       "math": m, "x_shape": list(x_shape), "dy_shape": list(dy_shape),
                       "weight_shape": list(wshape) if wshape else None,
                       "bytes": minimal_bytes(wid, variant, x_shape, dy_shape, wshape,
                                              dtype_name)}
                label = f"{wid} {variant:<9} {dtype_name:<4} {layout} {m or '':<4}"
                fn = None
                try:
                    if m is not None:
                        row["tf32_state"] = set_tf32(torch, m == "tf32")
                    fn = make()
                    row.update(getattr(fn, "info", {}))
                    sync()
                    for _ in range(CUDA_WARMUP_CALLS):
                        fn()
                    gc_was = gc.isenabled()
                    gc.disable()
                    try:
                        samples = time_samples(lambda: timer.time(fn), args.reps, args.target_s,
                                               args.max_reps)
                    finally:
                        if gc_was:
                            gc.enable()
                    ms = [t * 1e3 for t in samples]
                    med = statistics.median(ms)
                    row.update(median_ms=med, min_ms=min(ms), max_ms=max(ms), reps=len(ms),
                               gbps=row["bytes"] / (med / 1e3) / 1e9)
                    det, why = deterministic_check(torch, fn, sync)
                    row["deterministic"] = det
                    if why:
                        row["deterministic_error"] = why
                    print(f"  {label} {med:9.4f} ms median ({len(ms)} reps) "
                          f"det={'yes' if det else 'no'}  {op}", file=sys.stderr, flush=True)
                except Exception as e:  # one failing op must not lose the other rows
                    row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
                    print(f"  {label} FAILED: {row['error']}", file=sys.stderr, flush=True)
                finally:
                    if m is not None:
                        torch.backends.cuda.matmul.allow_tf32 = default_tf32[0]
                        torch.backends.cudnn.allow_tf32 = default_tf32[1]
                    fn = None
                    sync()
                results.append(row)
    v = {"torch": torch.__version__, "torch_device": str(device),
         "cudnn_benchmark": True,
         "default_tf32": {"cuda.matmul.allow_tf32": bool(default_tf32[0]),
                          "cudnn.allow_tf32": bool(default_tf32[1])}}
    try:  # GPU mode does not need numpy; record it when present
        import numpy as np

        v["numpy"] = np.__version__
    except ImportError:
        pass
    if host:
        v["timer"] = "host perf_counter (--torch-device cpu test path; not a GPU figure)"
    else:
        p = torch.cuda.get_device_properties(device)
        v.update(timer="CUDA events (torch.cuda.Event(enable_timing=True))",
                 cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                 gpu=torch.cuda.get_device_name(device),
                 gpu_capability=list(torch.cuda.get_device_capability(device)),
                 gpu_mem_gib=round(p.total_memory / 2**30, 1),
                 gpu_sm_count=p.multi_processor_count)
    with open(args._out, "w") as f:
        json.dump({"versions": v, "results": results}, f)


def gradops_variant(row):
    """A gradops JSON row's variant (older files have no `variant`: derive it)."""
    if row.get("variant"):
        return row["variant"]
    if row.get("workload") == "W6":
        return argmax_kind(row)
    return "backward"


def compare_gpu(gradops_rows, peer_results):
    """Per gradops row, every PyTorch row with the same workload, variant, dtype and layout
    (two for f32 conv: TF32 and FP32): ratio = PyTorch / gradops median. A gradops row that
    says its `math` (f32 conv rows of `gradops bench --f32-precision exact|tf32`) pairs only
    with the PyTorch row of the same math (exact with TF32 off, tf32 with TF32 allowed);
    older rows without it pair with both."""
    rows = []
    for g in gradops_rows:
        wid = g.get("workload")
        if wid not in WORKLOADS or g.get("median_ms") is None:
            continue
        key = (wid, gradops_variant(g), str(g.get("dtype")).lower(),
               str(g.get("layout", "NCHW")).upper())
        peers = [p for p in peer_results
                 if (p["workload"], p["variant"], p["dtype"], p["layout"]) == key
                 and (not g.get("math") or p.get("math") in (None, g["math"]))]
        gm = float(g["median_ms"])
        limit = g.get("limit_gbps") or g.get("_report_limit_gbps")
        share = g.get("share_of_limit")
        base = {"workload": wid, "variant": key[1], "dtype": key[2], "layout": key[3],
                "gradops_op": g.get("op"), "gradops_median_ms": gm,
                "gradops_bytes": g.get("bytes"), "limit_gbps": limit,
                "gradops_share_of_limit": share}
        if not peers:
            rows.append(dict(base, pytorch_median_ms=None, ratio_pytorch_over_gradops=None,
                             math=None, pytorch_op=None, pytorch_share_of_limit=None,
                             pytorch_deterministic=None))
            continue
        for p in peers:
            pm = p.get("median_ms")
            # PyTorch shapes are logical NCHW; gradops writes them in its layout's order
            xs, ds = p["x_shape"], p["dy_shape"]
            if key[3] == "NHWC":
                xs, ds = [xs[0], xs[2], xs[3], xs[1]], [ds[0], ds[2], ds[3], ds[1]]
            same = (list(g.get("x_shape") or []) == xs and list(g.get("dy_shape") or []) == ds)
            pshare = None
            if pm and limit and p.get("bytes"):
                pshare = p["bytes"] / (pm / 1e3) / 1e9 / limit
            rows.append(dict(base, math=p.get("math"), pytorch_op=p["op"],
                             pytorch_median_ms=pm,
                             ratio_pytorch_over_gradops=(pm / gm if pm and gm > 0 else None),
                             pytorch_share_of_limit=pshare,
                             pytorch_deterministic=p.get("deterministic"),
                             pytorch_error=p.get("error"), same_shapes=same))
    return rows


def fnum(v, fmt):
    return format(v, fmt) if isinstance(v, (int, float)) else "-"


def print_gpu_table(results):
    hdr = (f"{'wl':<3} {'variant':<9} {'dtype':<5} {'layout':<6} {'math':<4} {'median ms':>10} "
           f"{'min ms':>9} {'max ms':>9} {'reps':>5} {'GB/s':>8} {'det':>4}  op")
    print(hdr)
    print("-" * len(hdr))
    for r in results:
        det = {True: "yes", False: "no"}.get(r.get("deterministic"), "-")
        line = (f"{r['workload']:<3} {r['variant']:<9} {r['dtype']:<5} {r['layout']:<6} "
                f"{r.get('math') or '':<4} {fnum(r.get('median_ms'), '10.4f'):>10} "
                f"{fnum(r.get('min_ms'), '9.4f'):>9} {fnum(r.get('max_ms'), '9.4f'):>9} "
                f"{fnum(r.get('reps'), '5d'):>5} {fnum(r.get('gbps'), '8.1f'):>8} {det:>4}  "
                f"{r['op']}")
        if r.get("error"):
            line += f"  ERROR {r['error']}"
        print(line)


def pct(share):
    return f"{share * 100:.1f}%" if isinstance(share, (int, float)) else "-"


def print_gpu_comparison(rows, sources):
    print()
    print("gradops vs PyTorch, same card (ratio = PyTorch / gradops, > 1 means gradops is "
          "faster; % copy = share of gradops' measured copy bandwidth)")
    for s in sources:
        print(f"  gradops {s.get('dtype')} {s.get('layout')}: {s.get('source')} "
              f"({s.get('device_name')}, limit {fnum(s.get('limit_gbps'), '.1f')} GB/s, "
              f"batch {s.get('batch')}, scale-down {s.get('scale_down')})")
    hdr = (f"{'wl':<3} {'variant':<9} {'dtype':<5} {'layout':<6} {'math':<4} "
           f"{'gradops ms':>10} {'torch ms':>9} {'ratio':>6} {'gradops %copy':>13} "
           f"{'torch %copy':>11} {'torch det':>9}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        det = {True: "yes", False: "no"}.get(r.get("pytorch_deterministic"), "-")
        warn = "  SHAPES DIFFER" if r.get("same_shapes") is False else ""
        print(f"{r['workload']:<3} {r['variant']:<9} {r['dtype']:<5} {r['layout']:<6} "
              f"{r.get('math') or '':<4} {fnum(r['gradops_median_ms'], '10.4f'):>10} "
              f"{fnum(r.get('pytorch_median_ms'), '9.4f'):>9} "
              f"{fnum(r.get('ratio_pytorch_over_gradops'), '6.2f'):>6} "
              f"{pct(r.get('gradops_share_of_limit')):>13} "
              f"{pct(r.get('pytorch_share_of_limit')):>11} {det:>9}{warn}")


def expand_gradops_cmds(template, dtypes, layouts, reps):
    """--gradops-cmd in GPU mode: the template once per dtype gradops knows ({dtype}) and per
    layout ({layout}); a placeholder it lacks is not expanded over. Returns [(cmd, json)]."""
    ds = [d for d in dtypes if d in GRADOPS_DTYPES] if "{dtype}" in template else [None]
    ls = layouts if "{layout}" in template else [None]
    out, seen = [], set()
    for d in ds:
        for lay in ls:
            cmd = template
            if d:
                cmd = cmd.replace("{dtype}", d)
            if lay:
                cmd = cmd.replace("{layout}", lay.lower())
            cmd = cmd.replace("{reps}", str(reps if reps is not None else GPU_DEFAULT_REPS))
            if cmd in seen:
                continue
            seen.add(cmd)
            out.append((cmd, json_arg(cmd)))
    return out


def json_arg(cmd):
    toks = shlex.split(cmd)
    for i, t in enumerate(toks):
        if t == "--json" and i + 1 < len(toks):
            return toks[i + 1]
        if t.startswith("--json="):
            return t.split("=", 1)[1]
    return None


def load_gradops(paths):
    """Reads gradops bench JSON files; returns (rows, sources). Each row gets its report's
    dtype/layout/limit where the row lacks them (older files)."""
    rows, sources = [], []
    for path in paths:
        with open(path) as f:
            rep = json.load(f)
        for r in rep.get("results", []):
            r = dict(r)
            r.setdefault("dtype", rep.get("dtype"))
            r.setdefault("layout", rep.get("layout", "NCHW"))
            r["_report_limit_gbps"] = rep.get("limit_gbps")
            r["_source"] = path
            rows.append(r)
        sources.append({"source": path, "device": rep.get("device"),
                        "device_name": rep.get("device_name"), "dtype": rep.get("dtype"),
                        "layout": rep.get("layout", "NCHW"), "batch": rep.get("batch"),
                        "scale_down": rep.get("scale_down"),
                        "limit_gbps": rep.get("limit_gbps"),
                        "limit_source": rep.get("limit_source")})
    return rows, sources


def main_gpu(args):
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    t0 = time.perf_counter()
    cmds = []
    if args.gradops_cmd:
        cmds = expand_gradops_cmds(args.gradops_cmd, args.dtypes, args.layouts, args.reps)
        missing = [c for c, j in cmds if not j]
        if missing:
            print(f"peers.py: --gradops-cmd needs a --json PATH in the command: {missing[0]}",
                  file=sys.stderr)
            return 2
    gradops_ok = True
    if cmds and args.gradops_order == "before":
        gradops_ok = all([run_gradops_cmd(c) for c, _ in cmds])
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    cmd = [sys.executable, os.path.abspath(__file__), "--_worker", "pytorch-gpu",
           "--_out", out] + args._argv
    print(f"[pytorch {args.torch_device}] running ...", file=sys.stderr, flush=True)
    try:
        subprocess.run(cmd, check=True)
        with open(out) as f:
            peer = json.load(f)
    finally:
        os.unlink(out)
    if cmds and args.gradops_order == "after":
        gradops_ok = all([run_gradops_cmd(c) for c, _ in cmds]) and gradops_ok
    versions, results = peer["versions"], peer["results"]
    machine = machine_info()
    machine.update(started=started, wall_s=round(time.perf_counter() - t0, 1))
    print()
    print(f"PyTorch {versions.get('torch')} on {versions.get('gpu', versions.get('torch_device'))}"
          f"; cuDNN {versions.get('cudnn', '-')}; batch {args.batch}"
          + (f" (batch and channels scaled down by {args.scale_down})"
             if args.scale_down > 1 else "")
          + f"; timer: {versions.get('timer')}")
    reps = f"{args.reps} timed calls" if args.reps is not None else \
        f"adaptive ({args.target_s} s of timed calls, {MIN_CALLS}..{args.max_reps})"
    print(f"protocol: {CUDA_WARMUP_CALLS} untimed calls, then warm-up and {reps}; each timed "
          f"call between two events, after a {max(CUDA_PAD_BYTES // args.scale_down, 16 << 20) >> 20}"
          " MiB clear; median")
    print_gpu_table(results)
    doc = {"mode": "cuda", "machine": machine, "versions": versions,
           "settings": {"device": "cuda", "torch_device": args.torch_device,
                        "batch": args.batch, "scale_down": args.scale_down,
                        "dtypes": args.dtypes, "layouts": args.layouts,
                        "workloads": args.workloads, "nhwc_workloads": args.nhwc_workloads,
                        "reps": args.reps, "target_s": args.target_s if args.reps is None
                        else None, "cuda_warmup_calls": CUDA_WARMUP_CALLS,
                        "pad_bytes": max(CUDA_PAD_BYTES // args.scale_down, 16 << 20),
                        "seed": args.seed, "quick": args.quick,
                        "torch_exact_same": args.torch_exact_same, "torch_out": args.torch_out},
           "results": results}
    # (path, command that wrote it) for every gradops file: --gradops-json ones first
    files = [(p, None) for p in args.gradops_json or []]
    files += [(j, c) for c, j in cmds if j not in (args.gradops_json or [])]
    if files and gradops_ok:
        grows, sources = load_gradops([p for p, _ in files])
        batch = max(1, args.batch // args.scale_down)
        for s, (_, c) in zip(sources, files):
            s["command"] = c
            if s["device"] != "cuda" and args.torch_device == "cuda":
                print(f"peers.py: warning: {s['source']} is a gradops run on "
                      f"{s['device']}, not cuda", file=sys.stderr)
            if s.get("batch") not in (None, batch):
                print(f"peers.py: warning: {s['source']} has batch {s.get('batch')}, PyTorch "
                      f"ran batch {batch}: shapes differ", file=sys.stderr)
        rows = compare_gpu(grows, results)
        print_gpu_comparison(rows, sources)
        doc["gradops"] = sources
        doc["comparison"] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"\nwrote {args.json}", file=sys.stderr)
    print(f"peers.py: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    failed = [r for r in results if r.get("error")]
    return 0 if gradops_ok and not (failed and args.torch_device == "cuda") else 1


# ---------------------------------------------------------------------------------------------
# --check: do the peer ops compute the SPEC's gradients? (small N and C, the workloads' H/W)


def run_check():
    """Cross-check PyTorch against TensorFlow (the SPEC's reference) in one process."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf
    import torch

    aten, raw = torch.ops.aten, tf.raw_ops
    rng = np.random.default_rng(1)
    n, c = 2, 3
    ok = True

    def r(*s):
        return rng.standard_normal(s, dtype=np.float32)

    def to_nhwc(a):
        return tf.constant(np.ascontiguousarray(a.transpose(0, 2, 3, 1)))

    def from_nhwc(t):
        return t.numpy().transpose(0, 3, 1, 2)

    def report(name, pt, ref, expect_equal=True):
        nonlocal ok
        err = float(np.linalg.norm(pt - ref) / np.linalg.norm(ref))
        good = (err < 1e-5) == expect_equal
        ok &= good
        print(f"  {name:<62} rel err {err:9.2e}  "
              f"{'ok' if good else 'UNEXPECTED'}{'' if expect_equal else ' (differs, as stated)'}")

    for wid in ("W1", "W2"):
        (_, _, hi, wi), (_, _, ho, wo) = WORKLOADS[wid]["x"], WORKLOADS[wid]["dy"]
        dy = r(n, c, ho, wo)
        pt = aten.upsample_bilinear2d_backward(torch.from_numpy(dy), [ho, wo], [n, c, hi, wi],
                                               False).numpy()
        tt = from_nhwc(raw.ResizeBilinearGrad(grads=to_nhwc(dy), original_image=to_nhwc(
            r(n, c, hi, wi)), align_corners=False, half_pixel_centers=True))
        report(f"{wid} upsample_bilinear2d_backward vs ResizeBilinearGrad", pt, tt)
    (_, _, hi, wi), (_, _, ho, wo) = WORKLOADS["W3"]["x"], WORKLOADS["W3"]["dy"]
    dy = r(n, c, ho, wo)
    pt = aten.upsample_nearest2d_backward(torch.from_numpy(dy), [ho, wo], [n, c, hi, wi]).numpy()
    tt = from_nhwc(raw.ResizeNearestNeighborGrad(grads=to_nhwc(dy), size=[hi, wi],
                                                 align_corners=False, half_pixel_centers=False))
    report("W3 upsample_nearest2d_backward vs ResizeNearestNeighborGrad", pt, tt)
    for wid in ("W4", "W5"):
        w = WORKLOADS[wid]
        k, s, (_, _, h, wd) = w["k"], w["stride"], w["x"]
        out, top, bot = same_pads(h, k, s)
        co = c + 2
        dy, filt = r(n, co, out, out), r(co, c, k, k)
        tt = from_nhwc(raw.Conv2DBackpropInput(
            input_sizes=[n, h, wd, c], filter=tf.constant(filt.transpose(2, 3, 1, 0)),
            out_backprop=to_nhwc(dy), strides=[1, s, s, 1], padding="SAME"))

        def conv_bwd(pad, extra):
            x = torch.zeros(n, c, h + extra, wd + extra)
            return aten.convolution_backward(torch.from_numpy(dy), x, torch.from_numpy(filt), None,
                                             [s, s], [pad, pad], [1, 1], False, [0, 0], 1,
                                             [True, False, False])[0].numpy()[:, :, :h, :wd]

        report(f"{wid} convolution_backward padding={bot} vs Conv2DBackpropInput SAME",
               conv_bwd(bot, 0), tt, expect_equal=(top == bot))
        if top != bot:
            report(f"{wid} convolution_backward exact SAME vs Conv2DBackpropInput",
                   conv_bwd(top, bot - top), tt)
    w = WORKLOADS["W6"]
    k, s, (_, _, h, wd) = w["k"], w["stride"], w["x"]
    _, top, bot = same_pads(h, k, s)
    x = r(n, c, h, wd)
    xt = to_nhwc(x)
    ks, st = [1, k, k, 1], [1, s, s, 1]
    y = tf.nn.max_pool2d(xt, ks, st, "SAME")
    dyt = tf.constant(rng.standard_normal(tuple(y.shape), dtype=np.float32))
    tt = from_nhwc(raw.MaxPoolGrad(orig_input=xt, orig_output=y, grad=dyt, ksize=ks, strides=st,
                                   padding="SAME"))
    _, am = raw.MaxPoolWithArgmax(input=xt, ksize=ks, strides=st, padding="SAME",
                                  include_batch_in_index=True)
    ta = from_nhwc(raw.MaxPoolGradWithArgmax(input=xt, grad=dyt, argmax=am, ksize=ks, strides=st,
                                             padding="SAME", include_batch_in_index=True))
    report("W6 MaxPoolGradWithArgmax vs MaxPoolGrad", ta, tt)
    dyp = torch.from_numpy(np.ascontiguousarray(dyt.numpy().transpose(0, 3, 1, 2)))

    def pool_bwd(xx, pad):
        _, idx = aten.max_pool2d_with_indices(xx, [k, k], [s, s], [pad, pad], [1, 1], False)
        return aten.max_pool2d_with_indices_backward(dyp, xx, [k, k], [s, s], [pad, pad], [1, 1],
                                                     False, idx).numpy()[:, :, :h, :wd]

    xs = torch.from_numpy(x)
    report(f"W6 max_pool2d_with_indices_backward padding={bot} vs MaxPoolGrad",
           pool_bwd(xs, bot), tt, expect_equal=(top == bot))
    if top != bot:
        xp = torch.nn.functional.pad(xs, (0, bot - top, 0, bot - top), value=float("-inf"))
        report("W6 max_pool2d_with_indices_backward exact SAME vs MaxPoolGrad",
               pool_bwd(xp, top), tt)
    print("check: " + ("all as expected" if ok else "SOME UNEXPECTED"))
    return 0 if ok else 1


# ---------------------------------------------------------------------------------------------
# Driver


def machine_info():
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "nproc": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            info["mem_gib"] = round(kb / 2**20, 1)
    except OSError:
        pass
    return info


def run_peer(peer, args):
    """One peer in its own process: its results and versions. `tensorflow-onednn` is the
    TensorFlow worker with TF_ENABLE_ONEDNN_OPTS=1 (set before TensorFlow loads), its rows
    named after it."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    worker = "tensorflow" if peer == "tensorflow-onednn" else peer
    cmd = [sys.executable, os.path.abspath(__file__), "--_worker", worker, "--_out", out,
           "--threads", str(args.threads), "--warmup", str(args.warmup),
           "--target-s", str(args.target_s), "--min-reps", str(args.min_reps),
           "--max-reps", str(args.max_reps), "--seed", str(args.seed),
           "--workloads", ",".join(args.workloads), "--dtype", args.dtype]
    if args.torch_exact_same:
        cmd.append("--torch-exact-same")
    if args.torch_channels_last:
        cmd.append("--torch-channels-last")
    if args.torch_out:
        cmd.append("--torch-out")
    if args.no_tf_argmax:
        cmd.append("--no-tf-argmax")
    env = dict(os.environ)
    t = str(args.threads)
    env.update(OMP_NUM_THREADS=t, MKL_NUM_THREADS=t)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if peer == "tensorflow-onednn":
        env["TF_ENABLE_ONEDNN_OPTS"] = "1"
    print(f"[{peer}] running ...", file=sys.stderr, flush=True)
    try:
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            doc = json.load(f)
    finally:
        os.unlink(out)
    if peer != worker:
        for r in doc["results"]:
            r["peer"] = peer
        # Its versions (oneDNN on or not) beside, not over, the plain TensorFlow run's.
        doc["versions"] = {peer: doc["versions"]}
    return doc


def run_gradops_cmd(cmd):
    print(f"[gradops] $ {cmd}", file=sys.stderr, flush=True)
    t = time.perf_counter()
    rc = subprocess.run(cmd, shell=True).returncode
    dt = time.perf_counter() - t
    if rc != 0:
        print(f"[gradops] FAILED with exit status {rc} after {dt:.1f} s; no comparison",
              file=sys.stderr, flush=True)
        return False
    print(f"[gradops] done in {dt:.1f} s", file=sys.stderr, flush=True)
    return True


def print_table(results):
    hdr = f"{'wl':<3} {'peer':<17} {'layout':<8} {'median ms':>10} {'min ms':>9} {'max ms':>9} " \
          f"{'reps':>5}  op"
    print(hdr)
    print("-" * len(hdr))
    for r in sorted(results, key=lambda r: (r["workload"], r["peer"])):
        if r.get("median_ms") is None:
            print(f"{r['workload']:<3} {r['peer']:<17} {r['layout']:<8} "
                  f"{'unsupported in ' + str(r.get('dtype')):>40}  {r['op']}: "
                  f"{r.get('unsupported', '')}")
            continue
        err = r.get("rel_l2_vs_f64")
        prec = "" if err is None else f"  [vs f64: {err:.1e}" + (
            ", NOT plain f32]" if r.get("dtype", "f32") == "f32" and err > F32_REL_L2 else "]")
        print(f"{r['workload']:<3} {r['peer']:<17} {r['layout']:<8} {r['median_ms']:10.3f} "
              f"{r['min_ms']:9.3f} {r['max_ms']:9.3f} {r['reps']:5d}  {r['op']}{prec}")


def argmax_kind(row):
    """For W6: 'stored' (gradient from saved indices) or 'recompute' (argmax recomputed)."""
    if row.get("workload") != "W6":
        return None
    if row.get("variant") == "forward":  # gradops' forward max_pool row: no CPU peer row
        return "forward"
    if row.get("argmax"):
        return row["argmax"]
    op = str(row.get("op", "")).lower()
    return "stored" if ("argmax" in op or "indices" in op) else "recompute"


def compare(gradops, peer_results, dtype="f32"):
    """Per gradops row of `dtype`: best peer median among the peer rows of that dtype that ran
    (same W6 argmax kind), ratio best_peer/gradops."""
    rows = []
    names = {"f32": ("f32", "float32"), "bf16": ("bf16", "bfloat16"),
             "f16": ("f16", "float16")}[dtype]
    for g in gradops.get("results", []):
        wid = g.get("workload")
        if wid not in WORKLOADS or g.get("median_ms") is None:
            continue
        if str(g.get("dtype", "f32")).lower() not in names:
            continue
        kind = argmax_kind(g)
        peers = [p for p in peer_results
                 if p["workload"] == wid and argmax_kind(p) == kind
                 and p.get("median_ms") is not None and p.get("dtype", "f32") == dtype]
        if not peers:
            continue
        best = min(peers, key=lambda p: p["median_ms"])
        gm = float(g["median_ms"])
        rows.append({"workload": wid, "gradops_op": g.get("op"), "gradops_layout": g.get("layout"),
                     "gradops_median_ms": gm, "best_peer": best["peer"],
                     "best_peer_op": best["op"], "best_peer_layout": best["layout"],
                     "best_peer_median_ms": best["median_ms"],
                     "ratio_best_peer_over_gradops": best["median_ms"] / gm if gm > 0 else None,
                     "argmax": kind})
    return rows


def compare_rounds(round_docs, dtype="f32"):
    """`--rounds`: per gradops row, the best-peer ratio of each round (medians of that round:
    gradops and the peers ran minutes apart at most, so a noisy host weighs on both alike),
    their median and range, and the ratio of the fastest calls over all rounds (best peer's
    fastest / gradops' fastest)."""
    per = {}
    for rnd, (gradops, peer_results) in enumerate(round_docs, 1):
        for row in compare(gradops, peer_results, dtype):
            key = (row["workload"], row["gradops_layout"], row["argmax"])
            g = next(x for x in gradops["results"]
                     if x.get("workload") == row["workload"]
                     and x.get("layout") == row["gradops_layout"]
                     and argmax_kind(x) == row["argmax"] and x.get("median_ms") is not None)
            peer_min = min(p["min_ms"] for p in peer_results
                           if p["workload"] == row["workload"] and argmax_kind(p) == row["argmax"]
                           and p.get("min_ms") is not None and p.get("dtype", "f32") == dtype)
            per.setdefault(key, []).append(dict(row, round=rnd, gradops_min_ms=g.get("min_ms"),
                                                best_peer_min_ms=peer_min))
    rows = []
    for (wid, layout, kind), rs in per.items():
        ratios = sorted(r["ratio_best_peer_over_gradops"] for r in rs)
        gmins = [r["gradops_min_ms"] for r in rs if r["gradops_min_ms"] is not None]
        fastest = (min(r["best_peer_min_ms"] for r in rs) / min(gmins)) if gmins else None
        rows.append({"workload": wid, "gradops_layout": layout, "argmax": kind,
                     "rounds": len(rs), "per_round": rs,
                     "ratio_median": statistics.median(ratios),
                     "ratio_min": ratios[0], "ratio_max": ratios[-1],
                     "ratio_fastest_calls": fastest,
                     "best_peers": sorted({r["best_peer"] for r in rs})})
    return rows


def print_table_head(title, hdr):
    print()
    print(title)
    print(hdr)
    print("-" * len(hdr))


def print_rounds(rows):
    print_table_head("gradops vs best peer over rounds (ratio = best_peer / gradops per round, "
                     "medians; > 1 means gradops is faster)",
                     f"{'wl':<4} {'layout':<6} {'rounds':>6} {'median':>7} {'range':>12} "
                     f"{'fastest':>8}  best peers")
    for r in rows:
        fc = r["ratio_fastest_calls"]
        print(f"{r['workload']:<4} {str(r['gradops_layout']):<6} {r['rounds']:6d} "
              f"{r['ratio_median']:7.2f} {r['ratio_min']:5.2f}-{r['ratio_max']:<6.2f} "
              f"{fc if fc is not None else float('nan'):8.2f}  {', '.join(r['best_peers'])}")


def print_comparison(rows, gradops):
    print_table_head(f"gradops vs best peer (gradops device: {gradops.get('device', '?')}; "
                     f"ratio = best_peer / gradops, > 1 means gradops is faster)",
                     f"{'wl':<3} {'gradops op':<34} {'layout':<6} {'gradops ms':>10} "
                     f"{'best peer':<17} {'peer ms':>9} {'ratio':>6}  SPEC best peer")
    for r in rows:
        ratio = r["ratio_best_peer_over_gradops"]
        op = str(r["gradops_op"]) + (f" [{r['argmax']}]" if r["argmax"] else "")
        print(f"{r['workload']:<3} {op[:34]:<34} {str(r['gradops_layout']):<6} "
              f"{r['gradops_median_ms']:10.3f} {r['best_peer']:<17} "
              f"{r['best_peer_median_ms']:9.3f} {ratio if ratio is not None else float('nan'):6.2f}"
              f"  {SPEC_BEST[r['workload']]}")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", metavar="PATH", help="write results as JSON to PATH")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                   help="cpu (default): PyTorch and TensorFlow CPU ops, f32, batch 8; cuda: "
                        "PyTorch CUDA ops at batch 32 with gradops' CUDA timing protocol "
                        "(see bench/README.md, 'GPU mode')")
    p.add_argument("--dtype", choices=CPU_DTYPES, default="f32",
                   help="CPU mode: element type of every tensor (default f32; bf16/f16: "
                        "PyTorch torch.bfloat16/float16, TensorFlow tf.bfloat16/float16 where "
                        "its CPU op has a kernel for it, else the row says unsupported; compare "
                        "with `gradops bench --device cpu --dtype bf16|f16`)")
    p.add_argument("--peers", default=",".join(CPU_PEERS),
                   help="comma list of peers (pytorch, tensorflow, tensorflow-onednn: "
                        "TensorFlow in a process with TF_ENABLE_ONEDNN_OPTS=1, its oneDNN "
                        "kernels on where the CPU would leave them off); default all three")
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5,W6,W7,W8,W4f,W5f",
                   help="comma list of workload ids; default all CPU workloads")
    p.add_argument("--threads", type=int, default=2, help="intra/inter-op threads (default 2)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 warm-up, ~0.2 s per op, >= 3 reps (noisy); with "
                        "--device cuda: 20 timed calls per row instead of 100")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls (default 5)")
    p.add_argument("--target-s", type=float, default=None,
                   help="seconds of timed calls per op (default 1.5)")
    p.add_argument("--min-reps", type=int, default=None, help="default 20")
    p.add_argument("--max-reps", type=int, default=None, help="default 2000")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--torch-exact-same", action="store_true",
                   help="PyTorch W5/W6: reproduce TF SAME exactly (input padded by one at the "
                        "end, padding 0) instead of symmetric padding=1")
    p.add_argument("--torch-channels-last", action="store_true",
                   help="PyTorch: use channels_last memory format (NHWC in memory)")
    p.add_argument("--torch-out", action="store_true",
                   help="PyTorch W1/W2/W3/W6: write into a preallocated dx (the ops' "
                        ".grad_input overloads) instead of allocating one per call; conv has "
                        "no native out kernel and still allocates")
    p.add_argument("--no-tf-argmax", action="store_true",
                   help="skip the extra TF MaxPoolGradWithArgmax row for W6")
    p.add_argument("--gradops-json", metavar="PATH", action="append",
                   help="a `gradops bench --json` output to compare against (repeatable: "
                        "one file per gradops dtype/layout run in GPU mode)")
    p.add_argument("--gradops-cmd", metavar="CMD",
                   help="shell command that runs gradops' benchmark in this same run "
                        "(e.g. 'target/release/gradops bench --device cpu --json /tmp/g.json'); "
                        "its JSON is read from --gradops-json, or from the command's --json arg. "
                        "GPU mode: a template run once per dtype and layout, with {dtype}, "
                        "{layout} and {reps} replaced; its JSON from its --json")
    p.add_argument("--rounds", type=int, default=1, metavar="N",
                   help="CPU: run gradops (--gradops-cmd) and the peers N times in turn and "
                        "compare round by round (for noisy machines; default 1)")
    p.add_argument("--gradops-order", choices=["before", "after"], default="before",
                   help="run --gradops-cmd before (default) or after the peers")
    g = p.add_argument_group("GPU mode (--device cuda)")
    g.add_argument("--dtypes", default="f16,f32,f64",
                   help="comma list of f16, bf16, f32, f64 (default f16,f32,f64)")
    g.add_argument("--layouts", default="nchw,nhwc",
                   help="comma list of nchw, nhwc (NHWC = channels_last; default both)")
    g.add_argument("--nhwc-workloads", default=",".join(NHWC_DEFAULT),
                   help="workloads that also get NHWC rows (default W1,W2,W3,W6)")
    g.add_argument("--reps", type=int, default=None,
                   help=f"timed calls per row (default {GPU_DEFAULT_REPS}; --quick "
                        f"{GPU_QUICK_REPS}); pass the same --reps to gradops bench. With "
                        "--target-s instead: adaptive, as gradops bench without --reps")
    g.add_argument("--batch", type=int, default=CUDA_BATCH, help="batch (default 32)")
    g.add_argument("--scale-down", type=int, default=1, metavar="N",
                   help="divide batch and channels by N, as gradops bench --scale-down "
                        "(smoke tests)")
    g.add_argument("--torch-device", choices=["cuda", "cpu"], default="cuda",
                   help="testing only: 'cpu' runs the GPU-mode code with CPU tensors and a "
                        "host timer (no GPU figures); use with --scale-down")
    p.add_argument("--check", action="store_true",
                   help="only cross-check the peer ops' results (small N, C) and exit")
    p.add_argument("--_worker", choices=["pytorch", "tensorflow", "pytorch-gpu"],
                   help=argparse.SUPPRESS)
    p.add_argument("--_out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    q = a.quick
    a._argv = [t for t in argv]
    if a.device == "cuda":
        return gpu_args(p, a)
    a.warmup = a.warmup if a.warmup is not None else (1 if q else 5)
    a.target_s = a.target_s if a.target_s is not None else (0.2 if q else 1.5)
    a.min_reps = a.min_reps if a.min_reps is not None else (3 if q else 20)
    a.max_reps = a.max_reps if a.max_reps is not None else 2000
    a.workloads = [canon_workload(w) for w in a.workloads.split(",") if w.strip()]
    bad = [w for w in a.workloads if w not in WORKLOADS]
    if bad:
        p.error(f"unknown workload(s) {bad}; known: {sorted(WORKLOADS)}")
    a.peers = [x.strip().lower() for x in a.peers.split(",") if x.strip()]
    bad = [x for x in a.peers if x not in CPU_PEERS]
    if bad:
        p.error(f"unknown peer(s) {bad}; known: {', '.join(CPU_PEERS)}")
    if a.gradops_json and len(a.gradops_json) > 1:
        p.error("CPU mode compares with one --gradops-json file (several: --device cuda)")
    a.gradops_json = a.gradops_json[0] if a.gradops_json else None
    if a.rounds < 1:
        p.error("--rounds must be at least 1")
    if a.rounds > 1 and not a.gradops_cmd:
        p.error("--rounds needs --gradops-cmd (gradops runs in every round)")
    if a.gradops_cmd and not a.gradops_json:
        a.gradops_json = json_arg(a.gradops_cmd)
        if not a.gradops_json:
            p.error("--gradops-cmd needs --gradops-json PATH (or a --json PATH in the command)")
    return a


def gpu_args(p, a):
    """Validates the GPU-mode options (--device cuda)."""
    def split(v):
        return [x.strip() for x in v.split(",") if x.strip()]

    a.dtypes = [d.lower() for d in split(a.dtypes)]
    bad = [d for d in a.dtypes if d not in GPU_DTYPES]
    if bad or not a.dtypes:
        p.error(f"unknown dtype(s) {bad}; known: {', '.join(GPU_DTYPES)}")
    a.layouts = [x.upper() for x in split(a.layouts)]
    bad = [x for x in a.layouts if x not in ("NCHW", "NHWC")]
    if bad or not a.layouts:
        p.error(f"unknown layout(s) {bad}; known: nchw, nhwc")
    a.workloads = [canon_workload(w) for w in a.workloads.split(",") if w.strip()]
    a.nhwc_workloads = [canon_workload(w) for w in split(a.nhwc_workloads)]
    bad = [w for w in a.workloads + a.nhwc_workloads if w not in WORKLOADS]
    if bad:
        p.error(f"unknown workload(s) {bad}; known: {sorted(WORKLOADS)}")
    if a.batch < 1 or a.scale_down < 1:
        p.error("--batch and --scale-down must be at least 1")
    if a.reps is not None and a.reps < 1:
        p.error("--reps must be at least 1")
    if a.reps is None and a.target_s is None:
        a.reps = GPU_QUICK_REPS if a.quick else GPU_DEFAULT_REPS
    a.max_reps = a.max_reps if a.max_reps is not None else MAX_CALLS
    if a.peers != ",".join(CPU_PEERS) and a.peers.strip().lower() != "pytorch":
        p.error("--device cuda times PyTorch only")
    if a.gradops_cmd and len(a.dtypes) > 1 and "{dtype}" not in a.gradops_cmd:
        p.error("--gradops-cmd with several --dtypes needs {dtype} in the command (gradops "
                "bench takes one --dtype per run)")
    if a.gradops_cmd and len(a.layouts) > 1 and "{layout}" not in a.gradops_cmd:
        print("peers.py: note: --gradops-cmd has no {layout}: gradops runs in its default "
              "layout (NCHW) only", file=sys.stderr)
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args._worker == "pytorch-gpu":
        run_gpu_worker(args)
        return 0
    if args._worker:
        run_worker(args)
        return 0
    if args.device == "cuda":
        return main_gpu(args)
    if args.check:
        return run_check()

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_before = os.getloadavg()
    gradops_ok = True
    versions, results, round_docs = {}, [], []
    for rnd in range(args.rounds):
        if args.rounds > 1:
            print(f"[round {rnd + 1}/{args.rounds}]", file=sys.stderr, flush=True)
        if args.gradops_cmd and args.gradops_order == "before":
            gradops_ok = run_gradops_cmd(args.gradops_cmd) and gradops_ok
        round_results = []
        for peer in args.peers:
            out = run_peer(peer, args)
            versions.update(out["versions"])
            round_results.extend(out["results"])
        if args.gradops_cmd and args.gradops_order == "after":
            gradops_ok = run_gradops_cmd(args.gradops_cmd) and gradops_ok
        for r in round_results:
            r["round"] = rnd + 1
        results.extend(round_results)
        if args.rounds > 1 and args.gradops_json and gradops_ok:
            with open(args.gradops_json) as f:
                round_docs.append((json.load(f), round_results))
    load_after = os.getloadavg()

    machine = machine_info()
    machine.update(started=started, loadavg_before=[round(x, 2) for x in load_before],
                   loadavg_after=[round(x, 2) for x in load_after])
    print()
    print(f"peers on {machine.get('cpu', '?')} ({machine['nproc']} cpus), "
          f"{args.threads} threads, {args.dtype}; " + ", ".join(f"{k} {v}" for k, v in versions.items()
                                                      if k in ("torch", "tensorflow")))
    print(f"load average before/after: {machine['loadavg_before']} / {machine['loadavg_after']}"
          + ("  (--quick: few reps, noisy)" if args.quick else ""))
    print_table(results)

    doc = {"machine": machine, "versions": versions,
           "settings": {"threads": args.threads, "warmup": args.warmup, "target_s": args.target_s,
                        "min_reps": args.min_reps, "max_reps": args.max_reps, "seed": args.seed,
                        "quick": args.quick, "torch_exact_same": args.torch_exact_same,
                        "torch_channels_last": args.torch_channels_last,
                        "torch_out": args.torch_out, "dtype": args.dtype},
           "results": results}
    if args.gradops_json and gradops_ok and round_docs:
        rows = compare_rounds(round_docs, args.dtype)
        print_rounds(rows)
        doc["gradops"] = {"source": args.gradops_json, "command": args.gradops_cmd,
                          "order": args.gradops_order if args.gradops_cmd else None,
                          "device": round_docs[0][0].get("device"),
                          "rounds": [g for g, _ in round_docs]}
        doc["comparison"] = rows
    elif args.gradops_json and gradops_ok:
        with open(args.gradops_json) as f:
            gradops = json.load(f)
        rows = compare(gradops, results, args.dtype)
        print_comparison(rows, gradops)
        doc["gradops"] = {"source": args.gradops_json, "command": args.gradops_cmd,
                          "order": args.gradops_order if args.gradops_cmd else None,
                          "device": gradops.get("device"),
                          "limit_gbps": gradops.get("limit_gbps")}
        doc["comparison"] = rows
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"\nwrote {args.json}", file=sys.stderr)
    return 0 if gradops_ok else 1


if __name__ == "__main__":
    sys.exit(main())
