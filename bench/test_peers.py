#!/usr/bin/env python3
"""Tests of bench/peers.py's GPU mode (and bench/paired.py's gradops side) that run on a CPU-only machine.

    python3 bench/test_peers.py                 # pure-Python parts (no torch needed)
    bench/.venv/bin/python bench/test_peers.py  # plus the end-to-end --torch-device cpu flow

The end-to-end test needs torch (skipped without it) and target/release/gradops (skipped
without it): it runs `peers.py --device cuda --torch-device cpu` on scaled-down shapes with a
`--gradops-cmd` template and checks the comparison rows and the byte counts against gradops'.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
spec = importlib.util.spec_from_file_location("peers", os.path.join(HERE, "peers.py"))
peers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peers)
GRADOPS = os.path.join(ROOT, "target", "release", "gradops")


class Pure(unittest.TestCase):
    def test_time_samples_matches_gradops(self):
        calls = []

        def call():
            calls.append(1)
            return 0.001

        self.assertEqual(len(peers.time_samples(call, 7, None)), 7)
        self.assertEqual(len(calls), 8)  # one dropped warm-up with fixed reps
        calls.clear()
        s = peers.time_samples(call, None, 0.0035)
        self.assertEqual(len(s), peers.MIN_CALLS)  # adaptive: >= MIN_CALLS, two warm-ups
        self.assertEqual(len(calls), peers.MIN_CALLS + 2)
        s = peers.time_samples(call, None, 1.0, max_calls=9)
        self.assertEqual(len(s), 9)

    def test_shapes_and_bytes(self):
        x, dy, w = peers.gpu_shapes("W5", 32, 1)
        self.assertEqual((x, dy, w), ((32, 64, 56, 56), (32, 128, 28, 28), (128, 64, 3, 3)))
        x, dy, w = peers.gpu_shapes("W6", 32, 16)
        self.assertEqual((x, dy, w), ((2, 4, 112, 112), (2, 4, 56, 56), None))
        # the same figures as cli/src/bench/workloads.rs's unit test traffic_and_flops (batch 8, f32)
        x, dy, _ = peers.gpu_shapes("W6", 8, 1)
        self.assertEqual(peers.minimal_bytes("W6", "recompute", x, dy, None, "f32"),
                         8 * 64 * (56 * 56 + 2 * 112 * 112) * 4)
        self.assertEqual(peers.minimal_bytes("W6", "stored", x, dy, None, "f32"),
                         8 * 64 * (56 * 56 * 12 + 112 * 112 * 4))
        self.assertEqual(peers.minimal_bytes("W6", "forward", x, dy, None, "f32"),
                         8 * 64 * (112 * 112 * 4 + 56 * 56 * 4 + 56 * 56 * 8))

    def test_expand_gradops_cmds(self):
        t = "g bench --dtype {dtype} --layout {layout} --reps {reps} --json /o/{dtype}-{layout}.j"
        got = peers.expand_gradops_cmds(t, ["f16", "bf16", "f32"], ["NCHW", "NHWC"], 50)
        self.assertEqual([j for _, j in got], ["/o/f16-nchw.j", "/o/f16-nhwc.j",
                                               "/o/bf16-nchw.j", "/o/bf16-nhwc.j",
                                               "/o/f32-nchw.j", "/o/f32-nhwc.j"])
        self.assertIn("--reps 50", got[0][0])
        got = peers.expand_gradops_cmds("g --dtype {dtype} --json=/o/{dtype}.j", ["f64"],
                                        ["NCHW", "NHWC"], None)
        self.assertEqual(got, [("g --dtype f64 --json=/o/f64.j", "/o/f64.j")])

    def test_compare_cpu_by_dtype(self):
        # CPU mode: gradops rows of the run's dtype against the peer rows of that dtype that
        # ran; an unsupported peer row (TF without a bf16 kernel) is never the best peer.
        g = {"results": [{"workload": "W4", "dtype": "f32", "median_ms": 2.0, "op": "conv"},
                         {"workload": "W4", "dtype": "bf16", "median_ms": 4.0, "op": "conv"}]}
        p = [{"workload": "W4", "peer": "pytorch", "dtype": "bf16", "median_ms": 8.0,
              "op": "t", "layout": "NCHW"},
             {"workload": "W4", "peer": "tensorflow", "dtype": "bf16", "median_ms": None,
              "op": "tf", "layout": "NHWC", "unsupported": "no kernel"},
             {"workload": "W4", "peer": "tensorflow", "dtype": "f32", "median_ms": 3.0,
              "op": "tf", "layout": "NHWC"}]
        rows = peers.compare(g, p, "bf16")
        self.assertEqual(len(rows), 1)
        self.assertEqual((rows[0]["best_peer"], rows[0]["ratio_best_peer_over_gradops"]),
                         ("pytorch", 2.0))
        rows = peers.compare(g, p)  # f32 by default
        self.assertEqual((rows[0]["best_peer"], rows[0]["gradops_median_ms"]), ("tensorflow", 2.0))
        for r in p:
            if r["median_ms"] is not None:
                r.update(min_ms=r["median_ms"], max_ms=r["median_ms"], reps=3)
        peers.print_table(p)  # an unsupported row prints without a time

    def test_compare_rounds(self):
        # --rounds: one ratio per round from that round's medians, their median and range,
        # and the fastest calls over all rounds (best peer's fastest / gradops' fastest).
        def rnd(gmed, gmin, pmed, pmin):
            g = {"results": [{"workload": "W5", "dtype": "f32", "layout": "NHWC", "op": "conv",
                              "median_ms": gmed, "min_ms": gmin}]}
            p = [{"workload": "W5", "peer": "pytorch", "dtype": "f32", "layout": "NHWC",
                  "op": "t", "median_ms": pmed, "min_ms": pmin},
                 {"workload": "W5", "peer": "tensorflow-onednn", "dtype": "f32", "layout": "NHWC",
                  "op": "tf", "median_ms": pmed * 2, "min_ms": pmin / 2}]
            return g, p
        rows = peers.compare_rounds([rnd(2.0, 1.5, 3.0, 2.0), rnd(4.0, 1.0, 4.0, 3.0),
                                     rnd(2.0, 2.0, 1.0, 1.0)])
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["rounds"], r["ratio_min"], r["ratio_median"], r["ratio_max"]),
                         (3, 0.5, 1.0, 1.5))
        # fastest calls: TF's 0.5 ms (round 3) over gradops' 1.0 ms (round 2)
        self.assertAlmostEqual(r["ratio_fastest_calls"], 0.5)
        self.assertEqual(r["best_peers"], ["pytorch"])
        peers.print_rounds(rows)

    def test_compare_gpu(self):
        g = [{"workload": "W4", "variant": "backward", "dtype": "f32", "layout": "NCHW",
              "median_ms": 2.0, "limit_gbps": 100.0, "share_of_limit": 0.5,
              "x_shape": [2, 4, 56, 56], "dy_shape": [2, 4, 56, 56], "op": "conv"},
             {"workload": "W6", "argmax": "stored", "dtype": "f32", "layout": "NHWC",
              "median_ms": 1.0, "limit_gbps": 100.0, "x_shape": [2, 112, 112, 4],
              "dy_shape": [2, 56, 56, 4], "op": "max_pool_grad_with_argmax"},
             {"workload": "W1", "variant": "backward", "dtype": "f16", "layout": "NCHW",
              "median_ms": 1.0, "x_shape": [1, 1, 1, 1], "dy_shape": [1, 1, 1, 1]}]
        base = {"peer": "pytorch", "op": "t", "bytes": 1e8, "x_shape": [2, 4, 56, 56],
                "dy_shape": [2, 4, 56, 56]}
        p = [dict(base, workload="W4", variant="backward", dtype="f32", layout="NCHW",
                  math="tf32", median_ms=1.0, deterministic=True),
             dict(base, workload="W4", variant="backward", dtype="f32", layout="NCHW",
                  math="fp32", median_ms=4.0, deterministic=True),
             dict(base, workload="W6", variant="stored", dtype="f32", layout="NHWC",
                  median_ms=3.0, x_shape=[2, 4, 112, 112], dy_shape=[2, 4, 56, 56])]
        rows = peers.compare_gpu(g, p)
        self.assertEqual([(r["workload"], r.get("math"), r["ratio_pytorch_over_gradops"])
                          for r in rows],
                         [("W4", "tf32", 0.5), ("W4", "fp32", 2.0), ("W6", None, 3.0),
                          ("W1", None, None)])
        self.assertTrue(rows[0]["same_shapes"] and rows[2]["same_shapes"])
        self.assertAlmostEqual(rows[0]["pytorch_share_of_limit"], 1.0)  # 1e8 B in 1 ms
        p[2]["x_shape"] = [4, 4, 112, 112]
        self.assertFalse(peers.compare_gpu(g, p)[2]["same_shapes"])

    def test_compare_gpu_pairs_by_math(self):
        # `gradops bench --f32-precision tf32|exact` rows carry math: each pairs only with
        # the PyTorch row at the same TF32 setting.
        g = [{"workload": "W4", "variant": "backward", "dtype": "f32", "layout": "NCHW",
              "median_ms": 2.0, "x_shape": [1], "dy_shape": [1], "math": m}
             for m in ("tf32", "fp32")]
        p = [{"peer": "pytorch", "op": "t", "workload": "W4", "variant": "backward",
              "dtype": "f32", "layout": "NCHW", "math": m, "median_ms": ms,
              "x_shape": [1], "dy_shape": [1]} for m, ms in (("tf32", 1.0), ("fp32", 4.0))]
        rows = peers.compare_gpu(g, p)
        self.assertEqual([(r["math"], r["ratio_pytorch_over_gradops"]) for r in rows],
                         [("tf32", 0.5), ("fp32", 2.0)])


@unittest.skipUnless(importlib.util.find_spec("torch"), "torch not installed")
@unittest.skipUnless(os.path.exists(GRADOPS), "no target/release/gradops")
class EndToEnd(unittest.TestCase):
    def test_torch_cpu_flow(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "peers.json")
            tmpl = (f"{GRADOPS} bench --device cpu --dtype {{dtype}} --layout {{layout}} "
                    f"--reps {{reps}} --scale-down 16 --workload W2,W5,W6 "
                    f"--json {d}/g-{{dtype}}-{{layout}}.json")
            r = subprocess.run(
                [sys.executable, os.path.join(HERE, "peers.py"), "--device", "cuda",
                 "--torch-device", "cpu", "--batch", "8", "--scale-down", "16", "--reps", "2",
                 "--workloads", "W2,W5,W6", "--dtypes", "f32,f64", "--gradops-cmd", tmpl,
                 "--json", out], capture_output=True, text=True, cwd=ROOT)
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            with open(out) as f:
                doc = json.load(f)
            res = doc["results"]
            # f32 conv: TF32 and FP32 rows; NHWC rows only for W1-W3, W6; no errors
            self.assertEqual(sum(1 for x in res if x["workload"] == "W5"), 3)
            self.assertEqual({x["layout"] for x in res if x["workload"] == "W5"}, {"NCHW"})
            self.assertEqual(sum(1 for x in res if x["workload"] == "W6"), 12)
            self.assertFalse([x for x in res if x.get("error")])
            self.assertTrue(all(x["deterministic"] in (True, False) for x in res))
            self.assertEqual(len(doc["gradops"]), 4)
            cmp = doc["comparison"]
            matched = [c for c in cmp if c["pytorch_median_ms"] is not None]
            # every gradops row but W5 NHWC (no PyTorch NHWC conv row by default) is matched
            self.assertEqual(len(matched), len(res))
            self.assertTrue(all(c["same_shapes"] for c in matched))
            # PyTorch's minimal bytes are gradops' bytes for the same row
            by_key = {(x["workload"], x["variant"], x["dtype"], x["layout"]): x["bytes"]
                      for x in res}
            for c in matched:
                k = (c["workload"], c["variant"], c["dtype"], c["layout"])
                self.assertEqual(by_key[k], c["gradops_bytes"], k)
            self.assertIn("ratio", r.stdout)


@unittest.skipUnless(os.path.exists(GRADOPS), "no target/release/gradops")
class PairedServe(unittest.TestCase):
    """bench/paired.py's gradops side: `gradops bench --serve` answers one call per request."""

    def test_serve_calls(self):
        sys.path.insert(0, HERE)
        import paired

        a = paired.parse_args(["--gradops", GRADOPS, "--peer", "pytorch", "--layout", "nhwc",
                               "--workloads", "W5,W3,w6:Stored", "--threads", "1",
                               "--scale-down", "16"])
        self.assertEqual(a.workloads, ["W5", "W3", "W6:stored"])
        for bad in ("W6:argmax", "W9", "W9:stored"):
            with self.assertRaises(SystemExit):
                paired.parse_args(["--gradops", GRADOPS, "--peer", "pytorch",
                                   "--workloads", bad])
        g = paired.Gradops(a)
        try:
            times = [g.call(w) for w in ("W5", "W3", "W6:stored", "W6", "W5")]
            self.assertTrue(all(t > 0 for t in times), times)
            with self.assertRaises(RuntimeError):
                g.call("W4")  # not served: gradops exits with an error
        finally:
            self.assertNotEqual(g.close(), 0)


if __name__ == "__main__":
    unittest.main()
