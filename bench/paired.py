#!/usr/bin/env python3
"""Paired CPU timing: gradops and one peer called in turn, one call each, so that both are timed
in the same moments of a shared machine.

`bench/peers.py --rounds` alternates whole runs (seconds each); on a VM whose speed drifts
over seconds (the project's 2-core VMs: a call's time doubles and halves with the host's
load) a round can still catch one side in a slow spell and the other in a fast one. Here
`gradops bench --serve` keeps gradops' inputs and output in a child process and runs one
call per request; this process runs the peer's op (the very call peers.py times, built by
its `torch_cases` / `tf_cases`) between them, alternating which goes first. Each pair gives
one ratio, peer time / gradops time (above 1: gradops faster); the median of the pairs'
ratios is the figure, beside both sides' medians and fastest calls.

    bench/.venv/bin/python bench/paired.py --gradops target/release/gradops \\
        --peer pytorch --layout nhwc --workloads W4,W5 --threads 1 --pairs 150 --json OUT.json

The peer: `pytorch` (NHWC rows with `channels_last`, as peers.py --torch-channels-last),
`tensorflow-onednn` (TensorFlow with TF_ENABLE_ONEDNN_OPTS=1, NHWC whatever --layout is, as
in peers.py), or `gradops` with `--baseline BIN`: another gradops build served the same way,
an A/B of two versions (ratio above 1: --gradops faster than the baseline).
RAYON_NUM_THREADS of the gradops children and the peer's thread pools are all --threads;
PyTorch runs with OMP_WAIT_POLICY=PASSIVE unless the environment sets it (see peer_calls).

A workload is an id (its first row: W6's is max_pool_grad with the argmax recomputed, while
PyTorch's first and only W6 row takes stored indices) or `ID:VARIANT` for one row of it on
both sides: `W6:stored` pairs gradops' max_pool_grad_with_argmax with PyTorch's
max_pool2d_with_indices_backward or TensorFlow's MaxPoolGradWithArgmax.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (the peer ops, exactly as peers.py times them)

PEERS = ("pytorch", "tensorflow-onednn", "gradops")
# A row of a workload, `ID:VARIANT`, as `gradops bench`'s JSON names it; a bare id is its first
# row (W6: recompute). The peer's case for `ID:VARIANT` is the one peers.py tags with that
# argmax kind (`stored`, `recompute`; untagged cases are `backward`).
VARIANTS = ("backward", "recompute", "stored", "forward")


def canon_row(name):
    """`w6:Stored` -> `W6:stored`."""
    wid, sep, variant = name.strip().partition(":")
    return peers.canon_workload(wid) + (sep + variant.strip().lower() if sep else "")


def base_id(row):
    """`W6:stored` -> `W6`."""
    return row.partition(":")[0]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gradops", required=True, metavar="BIN", help="the gradops binary")
    p.add_argument("--peer", choices=PEERS, required=True)
    p.add_argument("--baseline", metavar="BIN", help="--peer gradops: the other gradops binary")
    p.add_argument("--layout", choices=("nchw", "nhwc"), default="nchw")
    p.add_argument("--workloads", default="W4,W5", help="comma list (default W4,W5)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtype", choices=peers.CPU_DTYPES, default="f32",
                   help="element type of both sides (default f32)")
    p.add_argument("--pairs", type=int, default=100, help="timed pairs per workload")
    p.add_argument("--warmup", type=int, default=5, help="untimed pairs first (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scale-down", type=int, default=1, metavar="N",
                   help="gradops --scale-down (tests only: the peer keeps the SPEC's shapes)")
    p.add_argument("--torch-out", action="store_true",
                   help="--peer pytorch: W1/W2/W3/W6 write into a preallocated dx, as gradops "
                        "does (peers.py --torch-out)")
    p.add_argument("--json", metavar="PATH", help="write every call's time and the summary")
    a = p.parse_args(argv)
    a.workloads = [canon_row(w) for w in a.workloads.split(",") if w.strip()]
    bad = [w for w in a.workloads if base_id(w) not in peers.WORKLOADS
           or w.partition(":")[2] not in ("",) + VARIANTS]
    if bad:
        p.error(f"unknown workload(s) {bad} (an id, or ID:VARIANT with a variant of {VARIANTS})")
    if (a.peer == "gradops") != bool(a.baseline):
        p.error("--baseline BIN goes with --peer gradops (and only with it)")
    if a.pairs < 1 or a.threads < 1:
        p.error("--pairs and --threads must be at least 1")
    return a


def peer_calls(a):
    """{workload: (op description, layout, the peer's call)} for the requested workloads."""
    ids = list(dict.fromkeys(base_id(w) for w in a.workloads))
    argv = ["--workloads", ",".join(ids), "--threads", str(a.threads), "--seed", str(a.seed),
            "--dtype", a.dtype]
    if not any(w.endswith(":stored") for w in a.workloads):
        argv.append("--no-tf-argmax")
    if a.peer == "pytorch" and a.layout == "nhwc":
        argv.append("--torch-channels-last")
    if a.torch_out:
        argv.append("--torch-out")
    pa = peers.parse_args(argv)
    if a.peer == "pytorch":
        # PyTorch's OpenMP workers spin after each call (OMP_WAIT_POLICY unset: ACTIVE), and
        # on a 2-core machine the spinning took the cores of the gradops call that came next
        # (W5 NHWC at two threads: 0.62x paired against 1.01x with PASSIVE, the PyTorch
        # calls' median 8.74 against 9.32 ms). Idle gaps between calls were no cure: idle
        # vCPUs slowed both sides' next call (PyTorch median 14.4 ms with 50 ms gaps). So the
        # workers sleep when idle, set before torch loads; an explicit setting is kept.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        cases = peers.torch_cases(pa)
    else:
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1"  # before TensorFlow loads
        cases = peers.tf_cases(pa)
    out = {}
    for row in a.workloads:
        wid, _, variant = row.partition(":")
        found = [(op, layout, fn) for w, op, layout, tag, fn in cases
                 if w == wid and (not variant or (tag or "backward") == variant)]
        if not found:
            have = sorted({tag or "backward" for w, _, _, tag, _ in cases if w == wid})
            raise SystemExit(f"{a.peer} has no {row} case (its {wid} rows: {have})")
        out[row] = found[0]  # a bare id: the peer's first row (W6: TF recompute, PyTorch stored)
    return out


class Gradops:
    """`gradops bench --serve`: one call per request."""

    def __init__(self, a, binary=None):
        cmd = [binary or a.gradops, "bench", "--device", "cpu", "--dtype", a.dtype,
               "--layout", a.layout,
               "--workload", ",".join(dict.fromkeys(base_id(w) for w in a.workloads)),
               "--serve"]
        if a.scale_down != 1:
            cmd += ["--scale-down", str(a.scale_down)]
        env = dict(os.environ, RAYON_NUM_THREADS=str(a.threads))
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  bufsize=1, env=env)

    def call(self, wid):
        self.p.stdin.write(wid + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"gradops --serve ended (exit {self.p.wait()}): {self.cmd}")
        got, ms = line.split()
        if got != wid:
            raise RuntimeError(f"gradops --serve answered {line!r} to {wid}")
        return float(ms)

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:  # it has already exited (an error it printed)
            pass
        return self.p.wait()


def timed_here(fn):
    """A call of a peer op, returning its time in ms."""
    def call():
        t = time.perf_counter()
        r = fn()
        ms = (time.perf_counter() - t) * 1e3
        del r
        return ms
    return call


def quartiles(v):
    s = sorted(v)
    return s[len(s) // 4], statistics.median(s), s[(3 * len(s)) // 4]


def run(a):
    import gc

    g = Gradops(a)
    base = None
    if a.peer == "gradops":
        base = Gradops(a, a.baseline)
        # The baseline times its own calls, as the gradops side does.
        calls = {w: (f"gradops bench --serve ({a.baseline})", a.layout.upper(),
                     lambda w=w: base.call(w)) for w in a.workloads}
    else:
        calls = {w: (op, layout, timed_here(fn)) for w, (op, layout, fn) in peer_calls(a).items()}
    rows = []
    try:
        for wid in a.workloads:
            op, peer_layout, peer = calls[wid]
            gt, pt = [], []
            gc.disable()
            for i in range(a.warmup + a.pairs):
                if i % 2:
                    x, y = g.call(wid), peer()
                else:
                    y, x = peer(), g.call(wid)
                if i >= a.warmup:
                    gt.append(x)
                    pt.append(y)
            gc.enable()
            ratios = [p / q for p, q in zip(pt, gt)]
            r25, rmed, r75 = quartiles(ratios)
            row = dict(workload=wid, dtype=a.dtype, layout=a.layout.upper(), peer=a.peer, peer_op=op,
                       peer_layout=peer_layout, threads=a.threads, pairs=a.pairs,
                       gradops_median_ms=statistics.median(gt), gradops_min_ms=min(gt),
                       peer_median_ms=statistics.median(pt), peer_min_ms=min(pt),
                       paired_ratio_median=rmed, paired_ratio_p25=r25, paired_ratio_p75=r75,
                       gradops_ms=gt, peer_ms=pt)
            rows.append(row)
            print(f"{wid} {a.dtype} {a.layout.upper()} {a.threads}t vs {a.peer} ({peer_layout}): "
                  f"paired ratio {rmed:.3f} (p25 {r25:.3f}, p75 {r75:.3f}, {a.pairs} pairs); "
                  f"gradops median {row['gradops_median_ms']:.2f} min {row['gradops_min_ms']:.2f}"
                  f" ms, {a.peer} median {row['peer_median_ms']:.2f} min "
                  f"{row['peer_min_ms']:.2f} ms", flush=True)
    finally:
        rc = g.close()
        if base is not None:
            rc = rc or base.close()
    if rc != 0:
        raise RuntimeError(f"gradops --serve exited {rc}")
    return rows


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    load_before = os.getloadavg()
    rows = run(a)
    doc = {"machine": peers.machine_info(), "command": sys.argv,
           "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
           "loadavg_before": [round(x, 2) for x in load_before],
           "loadavg_after": [round(x, 2) for x in os.getloadavg()],
           "note": "ratio = peer ms / gradops ms per pair (above 1: gradops faster)",
           "results": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {a.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
