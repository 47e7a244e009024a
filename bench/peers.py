#!/usr/bin/env python3
"""Time PyTorch's and TensorFlow's CPU backward ops on the SPEC's CPU workloads W1-W6.

f32, 2 threads by default, random inputs. Each peer runs in its own subprocess (so the two
frameworks' thread pools and OpenMP runtimes never share a process). Per op: warm-up calls,
then timed calls (each call timed on its own with perf_counter) until about --target-s seconds
are spent; median/min/max are reported.

    bench/setup.sh                                   # venv + PyTorch + TensorFlow (PyPI)
    bench/.venv/bin/python bench/peers.py            # full run, table on stdout
    bench/.venv/bin/python bench/peers.py --quick --json /tmp/peers.json
    bench/.venv/bin/python bench/peers.py --gradops-json /tmp/gradops.json
    bench/.venv/bin/python bench/peers.py \\
        --gradops-cmd "target/release/gradops bench --device cpu --json /tmp/g.json"

See bench/README.md for what each peer op is and where it differs from the SPEC.
"""

import argparse
import json
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
}

# The SPEC's own "best peer" column, printed for context in the comparison.
SPEC_BEST = {
    "W1": "17.3 ms (TF)", "W2": "10.0 ms (TF)", "W3": "8.8 ms (TF)", "W4": "8.5 ms (TF)",
    "W5": "4.6 ms (TF)", "W6": "27.2 ms recompute / 1.9 ms stored (PyTorch)",
}


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
            dy = fmt(torch.from_numpy(rand(rng, dy_shape)))
            out_size, in_size = list(dy_shape[2:]), list(x_shape)

            if out:
                gi = fmt(torch.empty(x_shape))

                def fn(dy=dy, o=out_size, i=in_size, gi=gi):
                    return aten.upsample_bilinear2d_backward.grad_input(dy, o, i, False,
                                                                        grad_input=gi)
            else:
                def fn(dy=dy, o=out_size, i=in_size):
                    return aten.upsample_bilinear2d_backward(dy, o, i, False)

            cases.append((wid, "aten.upsample_bilinear2d_backward(align_corners=False)"
                          + (" out=" if out else ""), layout, None, fn))
        elif wid == "W3":
            dy = fmt(torch.from_numpy(rand(rng, dy_shape)))
            out_size, in_size = list(dy_shape[2:]), list(x_shape)

            if out:
                gi = fmt(torch.empty(x_shape))

                def fn(dy=dy, o=out_size, i=in_size, gi=gi):
                    return aten.upsample_nearest2d_backward.grad_input(dy, o, i, grad_input=gi)
            else:
                def fn(dy=dy, o=out_size, i=in_size):
                    return aten.upsample_nearest2d_backward(dy, o, i)

            cases.append((wid, "aten.upsample_nearest2d_backward" + (" out=" if out else ""),
                          layout, None, fn))
        elif wid in ("W4", "W5"):
            k, s = w["k"], w["stride"]
            n, ci, h, wd = x_shape
            co = dy_shape[1]
            _, top, bot = same_pads(h, k, s)
            weight = fmt(torch.from_numpy(rand(rng, (co, ci, k, k))))
            dy = fmt(torch.from_numpy(rand(rng, dy_shape)))
            if top == bot:
                pad, x = [top, top], fmt(torch.from_numpy(rand(rng, x_shape)))
                note = f"padding={top}"
            elif exact:
                # TF SAME puts the odd pixel after: pad=0 on an input one larger at the end
                # gives exactly TF's taps; dx is 1 row/col larger (the pad cells), sliced off.
                pad = [top, top]
                x = fmt(torch.from_numpy(rand(rng, (n, ci, h + bot - top, wd + bot - top))))
                note = f"padding={top}, input {h + bot - top}x{wd + bot - top} (exact SAME)"
            else:
                # Symmetric padding=1: same output size, same FLOPs and traffic, but every tap
                # is one pixel off TF SAME (which pads 0 top/left, 1 bottom/right).
                pad, x = [bot, bot], fmt(torch.from_numpy(rand(rng, x_shape)))
                note = f"padding={bot} (symmetric; TF SAME is {top} top, {bot} bottom)"
            mask = [True, False, False]

            def fn(dy=dy, x=x, weight=weight, s=s, pad=pad):
                return aten.convolution_backward(dy, x, weight, None, [s, s], pad, [1, 1],
                                                 False, [0, 0], 1, mask)[0]

            cases.append((wid, f"aten.convolution_backward(mask=[T,F,F], {note})", layout,
                          None, fn))
        elif wid == "W6":
            k, s = w["k"], w["stride"]
            n, c, h, wd = x_shape
            _, top, bot = same_pads(h, k, s)
            x = torch.from_numpy(rand(rng, x_shape))
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
            dy = fmt(torch.from_numpy(rand(rng, tuple(y.shape))))
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


def torch_versions():
    import torch

    return {
        "torch": torch.__version__,
        "torch_parallel_backend": "OpenMP" if "OpenMP" in torch.__config__.parallel_info()
        else "other",
        "torch_mkldnn": bool(torch.backends.mkldnn.is_available()),
        "torch_num_threads": torch.get_num_threads(),
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

    def nhwc(a):
        return tf.constant(np.ascontiguousarray(a.transpose(0, 2, 3, 1)))

    for wid in args.workloads:
        w = WORKLOADS[wid]
        x_shape, dy_shape = w["x"], w["dy"]
        if wid in ("W1", "W2", "W3"):
            dy = nhwc(rand(rng, dy_shape))
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
            filt = tf.constant(rand(rng, (k, k, ci, co)))  # HWIO
            dy = nhwc(rand(rng, dy_shape))
            isz = tf.constant([n, h, wd, ci], tf.int32)

            def fn(dy=dy, filt=filt, isz=isz, s=s):
                return raw.Conv2DBackpropInput(input_sizes=isz, filter=filt, out_backprop=dy,
                                               strides=[1, s, s, 1], padding="SAME",
                                               data_format="NHWC")

            cases.append((wid, "Conv2DBackpropInput(padding=SAME)", "NHWC", None, fn))
        elif wid == "W6":
            k, s = w["k"], w["stride"]
            x = nhwc(rand(rng, x_shape))
            ks, st = [1, k, k, 1], [1, s, s, 1]
            y = tf.nn.max_pool2d(x, ks, st, "SAME")
            dy = tf.constant(rng.standard_normal(tuple(y.shape), dtype=np.float32))
            assert tuple(y.shape) == (dy_shape[0], dy_shape[2], dy_shape[3], dy_shape[1])

            def fn(dy=dy, x=x, y=y):
                return raw.MaxPoolGrad(orig_input=x, orig_output=y, grad=dy, ksize=ks,
                                       strides=st, padding="SAME")

            cases.append((wid, "MaxPoolGrad(padding=SAME)", "NHWC", "recompute", fn))
            if not args.no_tf_argmax:
                _, am = raw.MaxPoolWithArgmax(input=x, ksize=ks, strides=st, padding="SAME",
                                              include_batch_in_index=True)

                def fn2(dy=dy, x=x, am=am):
                    return raw.MaxPoolGradWithArgmax(input=x, grad=dy, argmax=am, ksize=ks,
                                                     strides=st, padding="SAME",
                                                     include_batch_in_index=True)

                cases.append((wid, "MaxPoolGradWithArgmax(padding=SAME)", "NHWC", "stored",
                              fn2))
    return cases


def tf_versions():
    import tensorflow as tf

    v = {"tensorflow": tf.__version__,
         "tf_intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
         "tf_inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
         "TF_ENABLE_ONEDNN_OPTS": os.environ.get("TF_ENABLE_ONEDNN_OPTS", "(unset)")}
    try:
        from tensorflow.python.util import _pywrap_util_port

        v["tf_onednn_enabled"] = bool(_pywrap_util_port.IsMklEnabled())
    except Exception:  # pragma: no cover - private API
        pass
    return v


def run_worker(args):
    import numpy as np

    if args._worker == "pytorch":
        cases, versions = torch_cases(args), torch_versions
    else:
        cases, versions = tf_cases(args), tf_versions
    results = []
    for wid, op, layout, argmax, fn in cases:
        r = time_op(fn, args.warmup, args.target_s, args.min_reps, args.max_reps)
        if args._worker == "pytorch" and args.torch_channels_last:
            op += " [channels_last]"
        row = {"workload": wid, "peer": args._worker, "op": op, "layout": layout, **r}
        if argmax:
            row["argmax"] = argmax
        results.append(row)
        print(f"  {wid} {args._worker:<10} {r['median_ms']:9.3f} ms median "
              f"({r['reps']} reps) {op}", file=sys.stderr, flush=True)
    v = versions()
    v["numpy"] = np.__version__
    with open(args._out, "w") as f:
        json.dump({"versions": v, "results": results}, f)


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
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = tmp.name
    cmd = [sys.executable, os.path.abspath(__file__), "--_worker", peer, "--_out", out,
           "--threads", str(args.threads), "--warmup", str(args.warmup),
           "--target-s", str(args.target_s), "--min-reps", str(args.min_reps),
           "--max-reps", str(args.max_reps), "--seed", str(args.seed),
           "--workloads", ",".join(args.workloads)]
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
    print(f"[{peer}] running ...", file=sys.stderr, flush=True)
    try:
        subprocess.run(cmd, env=env, check=True)
        with open(out) as f:
            return json.load(f)
    finally:
        os.unlink(out)


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
    hdr = f"{'wl':<3} {'peer':<10} {'layout':<8} {'median ms':>10} {'min ms':>9} {'max ms':>9} " \
          f"{'reps':>5}  op"
    print(hdr)
    print("-" * len(hdr))
    for r in sorted(results, key=lambda r: (r["workload"], r["peer"])):
        print(f"{r['workload']:<3} {r['peer']:<10} {r['layout']:<8} {r['median_ms']:10.3f} "
              f"{r['min_ms']:9.3f} {r['max_ms']:9.3f} {r['reps']:5d}  {r['op']}")


def argmax_kind(row):
    """For W6: 'stored' (gradient from saved indices) or 'recompute' (argmax recomputed)."""
    if row.get("workload") != "W6":
        return None
    if row.get("argmax"):
        return row["argmax"]
    op = str(row.get("op", "")).lower()
    return "stored" if ("argmax" in op or "indices" in op) else "recompute"


def compare(gradops, peer_results):
    """Per gradops row: best peer median (same W6 argmax kind), ratio best_peer/gradops."""
    rows = []
    for g in gradops.get("results", []):
        wid = g.get("workload")
        if wid not in WORKLOADS or g.get("median_ms") is None:
            continue
        if str(g.get("dtype", "f32")).lower() not in ("f32", "float32"):
            continue
        kind = argmax_kind(g)
        peers = [p for p in peer_results
                 if p["workload"] == wid and argmax_kind(p) == kind]
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


def print_comparison(rows, gradops):
    print()
    print(f"gradops vs best peer (gradops device: {gradops.get('device', '?')}; "
          f"ratio = best_peer / gradops, > 1 means gradops is faster)")
    hdr = f"{'wl':<3} {'gradops op':<34} {'layout':<6} {'gradops ms':>10} {'best peer':<11} " \
          f"{'peer ms':>9} {'ratio':>6}  SPEC best peer"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        ratio = r["ratio_best_peer_over_gradops"]
        op = str(r["gradops_op"]) + (f" [{r['argmax']}]" if r["argmax"] else "")
        print(f"{r['workload']:<3} {op[:34]:<34} {str(r['gradops_layout']):<6} "
              f"{r['gradops_median_ms']:10.3f} {r['best_peer']:<11} "
              f"{r['best_peer_median_ms']:9.3f} {ratio if ratio is not None else float('nan'):6.2f}"
              f"  {SPEC_BEST[r['workload']]}")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", metavar="PATH", help="write results as JSON to PATH")
    p.add_argument("--peers", default="pytorch,tensorflow",
                   help="comma list of peers (pytorch, tensorflow); default both")
    p.add_argument("--workloads", default="W1,W2,W3,W4,W5,W6",
                   help="comma list of workload ids; default all CPU workloads")
    p.add_argument("--threads", type=int, default=2, help="intra/inter-op threads (default 2)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1 warm-up, ~0.2 s per op, >= 3 reps (noisy)")
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
    p.add_argument("--gradops-json", metavar="PATH",
                   help="a `gradops bench --json` output to compare against")
    p.add_argument("--gradops-cmd", metavar="CMD",
                   help="shell command that runs gradops' benchmark in this same run "
                        "(e.g. 'target/release/gradops bench --device cpu --json /tmp/g.json'); "
                        "its JSON is read from --gradops-json, or from the command's --json arg")
    p.add_argument("--gradops-order", choices=["before", "after"], default="before",
                   help="run --gradops-cmd before (default) or after the peers")
    p.add_argument("--check", action="store_true",
                   help="only cross-check the peer ops' results (small N, C) and exit")
    p.add_argument("--_worker", choices=["pytorch", "tensorflow"], help=argparse.SUPPRESS)
    p.add_argument("--_out", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    q = a.quick
    a.warmup = a.warmup if a.warmup is not None else (1 if q else 5)
    a.target_s = a.target_s if a.target_s is not None else (0.2 if q else 1.5)
    a.min_reps = a.min_reps if a.min_reps is not None else (3 if q else 20)
    a.max_reps = a.max_reps if a.max_reps is not None else 2000
    a.workloads = [w.strip().upper() for w in a.workloads.split(",") if w.strip()]
    bad = [w for w in a.workloads if w not in WORKLOADS]
    if bad:
        p.error(f"unknown workload(s) {bad}; known: {sorted(WORKLOADS)}")
    a.peers = [x.strip().lower() for x in a.peers.split(",") if x.strip()]
    bad = [x for x in a.peers if x not in ("pytorch", "tensorflow")]
    if bad:
        p.error(f"unknown peer(s) {bad}; known: pytorch, tensorflow")
    if a.gradops_cmd and not a.gradops_json:
        toks = shlex.split(a.gradops_cmd)
        for i, t in enumerate(toks):
            if t == "--json" and i + 1 < len(toks):
                a.gradops_json = toks[i + 1]
            elif t.startswith("--json="):
                a.gradops_json = t.split("=", 1)[1]
        if not a.gradops_json:
            p.error("--gradops-cmd needs --gradops-json PATH (or a --json PATH in the command)")
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args._worker:
        run_worker(args)
        return 0
    if args.check:
        return run_check()

    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    load_before = os.getloadavg()
    gradops_ok = True
    if args.gradops_cmd and args.gradops_order == "before":
        gradops_ok = run_gradops_cmd(args.gradops_cmd)
    versions, results = {}, []
    for peer in args.peers:
        out = run_peer(peer, args)
        versions.update(out["versions"])
        results.extend(out["results"])
    if args.gradops_cmd and args.gradops_order == "after":
        gradops_ok = run_gradops_cmd(args.gradops_cmd)
    load_after = os.getloadavg()

    machine = machine_info()
    machine.update(started=started, loadavg_before=[round(x, 2) for x in load_before],
                   loadavg_after=[round(x, 2) for x in load_after])
    print()
    print(f"peers on {machine.get('cpu', '?')} ({machine['nproc']} cpus), "
          f"{args.threads} threads, f32; " + ", ".join(f"{k} {v}" for k, v in versions.items()
                                                      if k in ("torch", "tensorflow")))
    print(f"load average before/after: {machine['loadavg_before']} / {machine['loadavg_after']}"
          + ("  (--quick: few reps, noisy)" if args.quick else ""))
    print_table(results)

    doc = {"machine": machine, "versions": versions,
           "settings": {"threads": args.threads, "warmup": args.warmup, "target_s": args.target_s,
                        "min_reps": args.min_reps, "max_reps": args.max_reps, "seed": args.seed,
                        "quick": args.quick, "torch_exact_same": args.torch_exact_same,
                        "torch_channels_last": args.torch_channels_last,
                        "torch_out": args.torch_out, "dtype": "f32"},
           "results": results}
    if args.gradops_json and gradops_ok:
        with open(args.gradops_json) as f:
            gradops = json.load(f)
        rows = compare(gradops, results)
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
