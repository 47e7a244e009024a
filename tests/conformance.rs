//! Upstream conformance vectors (TensorFlow.js, TensorFlow, ONNX Runtime test suites, translated
//! by tests/data/convert_conformance.py) run through the same case dispatcher as `gradops run`.
//! Each case runs in its own dtype (f32) and again widened to f64; error cases must be rejected
//! with an error, never a panic. In bf16 ([`run_bf16`]) each case must be rejected as upstream
//! says or give upstream's shape, within the SPEC's bf16 tolerance of the f64 run on the same
//! bf16-rounded inputs (upstream's own tolerances are for f32).

use gradops::{DType, Layout};
use gradops_cli::array::HostArray;
use gradops_cli::case::OpCall;
use serde_json::Value;
use std::collections::BTreeMap;

/// Every case of the upstream set (`conformance.json`) and of TensorFlow's generated
/// `conv2d_backprop_filter` answers (`conv2d_backprop_filter_tf.json`).
fn cases() -> Vec<Value> {
    let mut all = Vec::new();
    for file in ["conformance.json", "conv2d_backprop_filter_tf.json"] {
        let path = format!("{}/tests/data/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["untranslated"].as_array().map(Vec::len),
            Some(0),
            "untranslated upstream cases in {file}"
        );
        all.extend(v["cases"].as_array().unwrap().iter().cloned());
    }
    all
}

fn num(v: &Value) -> f64 {
    match v {
        Value::String(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            o => panic!("bad number {o}"),
        },
        v => v.as_f64().unwrap(),
    }
}

fn array(v: &Value, dtype: DType) -> HostArray {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f64> = v["data"].as_array().unwrap().iter().map(num).collect();
    HostArray::new(shape, data).cast(dtype)
}

/// Runs every case of `ops` in `dtype`; returns (passed, skipped) and panics listing failures.
fn run(ops: &[&str], dtype: DType) -> (usize, usize) {
    let (mut passed, mut skipped, mut failures) = (0, 0, Vec::new());
    for c in cases()
        .iter()
        .filter(|c| ops.contains(&c["op"].as_str().unwrap()))
    {
        let id = c["id"].as_str().unwrap();
        if c.get("extra_attrs").is_some_and(|e| !e.is_null()) {
            println!(
                "SKIP {id}: needs attributes outside SPEC.md: {}",
                c["extra_attrs"]
            );
            skipped += 1;
            continue;
        }
        let layout: Layout = c["layout"].as_str().unwrap().parse().unwrap();
        let inputs: BTreeMap<String, HostArray> = c["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), array(v, dtype)))
            .collect();
        let result = OpCall::parse(c["op"].as_str().unwrap(), Some(&c["attrs"]))
            .and_then(|call| call.run_cpu(layout, &inputs));
        let expected = &c["expected"];
        match (result, expected.is_null()) {
            (Err(_), true) => passed += 1,
            (Ok(out), true) => failures.push(format!(
                "{id}: expected an error ({}), got shape {:?}",
                c["expected_error"], out.shape
            )),
            (Err(e), false) => failures.push(format!("{id}: unexpected error: {e}")),
            (Ok(out), false) => {
                let want_shape: Vec<usize> = expected["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap() as usize)
                    .collect();
                if out.shape != want_shape {
                    failures.push(format!(
                        "{id}: shape {:?}, expected {want_shape:?}",
                        out.shape
                    ));
                    continue;
                }
                if out.dtype() != dtype {
                    failures.push(format!(
                        "{id}: output dtype {}, expected {dtype}",
                        out.dtype()
                    ));
                    continue;
                }
                let Some(data) = expected["data"].as_array() else {
                    passed += 1; // upstream checks only the shape
                    continue;
                };
                let atol = c["tolerance"].as_f64().unwrap();
                let rtol = if c["tolerance_kind"] == "allclose" {
                    c["rtol"].as_f64().unwrap_or(0.0)
                } else {
                    0.0
                };
                let got = out.to_f64_vec();
                let bad: Vec<String> = got
                    .iter()
                    .zip(data.iter().map(num))
                    .enumerate()
                    .filter(|(_, (g, w))| {
                        let both_nan = g.is_nan() && w.is_nan();
                        let same_inf = g.is_infinite() && **g == *w;
                        !(both_nan || same_inf || (**g - *w).abs() <= atol + rtol * w.abs())
                    })
                    .take(3)
                    .map(|(i, (g, w))| format!("[{i}] got {g}, want {w}"))
                    .collect();
                if bad.is_empty() {
                    passed += 1;
                } else {
                    failures.push(format!("{id}: {}", bad.join("; ")));
                }
            }
        }
    }
    println!(
        "{ops:?} {dtype}: {passed} passed, {skipped} skipped (printed above), {} failed",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} conformance failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(passed > 0, "no case ran for {ops:?}");
    (passed, skipped)
}

/// The bf16 run of every case of `ops`: inputs rounded to bf16 (as the case format's
/// `"dtype": "bf16"` does), errors where upstream expects them, upstream's shapes, NaN and
/// infinities where the f64 run on the same rounded inputs has them, and relative L2 error
/// at most 1e-2 (SPEC) against that f64 run over the finite elements.
fn run_bf16(ops: &[&str]) -> usize {
    let (mut passed, mut failures) = (0, Vec::new());
    for c in cases()
        .iter()
        .filter(|c| ops.contains(&c["op"].as_str().unwrap()))
        .filter(|c| c.get("extra_attrs").is_none_or(|e| e.is_null()))
    {
        let id = c["id"].as_str().unwrap();
        let layout: Layout = c["layout"].as_str().unwrap().parse().unwrap();
        let inputs = |dtype: DType| -> BTreeMap<String, HostArray> {
            c["inputs"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), array(v, DType::BF16).cast(dtype)))
                .collect()
        };
        let call = OpCall::parse(c["op"].as_str().unwrap(), Some(&c["attrs"]));
        let run = |dtype: DType| match &call {
            Ok(call) => call.run_cpu(layout, &inputs(dtype)),
            Err(e) => Err(gradops::Error::attr("case", "attrs", e.to_string())),
        };
        let (got, exact) = (run(DType::BF16), run(DType::F64));
        let expected = &c["expected"];
        match (got, exact, expected.is_null()) {
            (Err(_), _, true) => passed += 1,
            (Ok(_), _, true) => failures.push(format!("{id}: expected an error")),
            (Err(e), _, false) => failures.push(format!("{id}: unexpected error: {e}")),
            (_, Err(e), _) => failures.push(format!("{id}: the f64 run failed: {e}")),
            (Ok(out), Ok(exact), false) => {
                let want_shape: Vec<usize> = expected["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap() as usize)
                    .collect();
                if out.shape != want_shape || out.dtype() != DType::BF16 {
                    failures.push(format!(
                        "{id}: {} {:?}, expected bf16 {want_shape:?}",
                        out.dtype(),
                        out.shape
                    ));
                    continue;
                }
                let (g, w) = (out.to_f64_vec(), exact.to_f64_vec());
                let special = g.iter().zip(&w).position(|(g, w)| {
                    (g.is_nan() != w.is_nan()) || ((g.is_infinite() || w.is_infinite()) && g != w)
                });
                if let Some(i) = special {
                    failures.push(format!("{id}: [{i}] got {}, f64 run {}", g[i], w[i]));
                    continue;
                }
                let (mut num, mut den) = (0.0, 0.0);
                for (g, w) in g.iter().zip(&w).filter(|(_, w)| w.is_finite()) {
                    num += (g - w) * (g - w);
                    den += w * w;
                }
                let e = if den == 0.0 {
                    num.sqrt()
                } else {
                    (num / den).sqrt()
                };
                if e <= 1e-2 {
                    passed += 1;
                } else {
                    failures.push(format!("{id}: relative L2 error {e:e} > 1e-2"));
                }
            }
        }
    }
    println!("{ops:?} bf16: {passed} passed, {} failed", failures.len());
    assert!(
        failures.is_empty(),
        "{} bf16 conformance failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(passed > 0, "no case ran for {ops:?}");
    passed
}

fn both(ops: &[&str]) {
    run(ops, DType::F32);
    run(ops, DType::F64);
    run_bf16(ops);
}

#[test]
fn onnx_resize_grad() {
    both(&["resize_grad"]);
}

#[test]
fn tf_resize_bilinear_grad() {
    both(&["resize_bilinear_grad"]);
}

#[test]
fn tf_resize_nearest_neighbor_grad() {
    both(&["resize_nearest_neighbor_grad"]);
}

#[test]
fn tf_conv2d_backprop_input() {
    both(&["conv2d_backprop_input"]);
}

/// TensorFlow 2.21's `Conv2DBackpropFilter` answers (tests/data/gen_conv2d_backprop_filter.py):
/// 48 cases over paddings, strides, dilations, groups, both layouts and both filter
/// layouts, plus 2 error cases.
#[test]
fn tf_conv2d_backprop_filter() {
    let (passed, _) = run(&["conv2d_backprop_filter"], DType::F32);
    assert!(passed >= 40, "only {passed} conv2d_backprop_filter cases");
    run(&["conv2d_backprop_filter"], DType::F64);
}

#[test]
fn tf_max_pool_grad() {
    both(&["max_pool_grad"]);
}

#[test]
fn forward_ops() {
    both(&[
        "resize_bilinear",
        "resize_nearest_neighbor",
        "conv2d",
        "max_pool",
    ]);
}
