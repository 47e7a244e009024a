//! Fuzzing without nightly (`cargo fuzz` needs it): seeded, mutation-based fuzzing of the two
//! parsers that read untrusted input, the `.npy` reader ([`HostArray::parse_npy`]) and the
//! case parser ([`OpCall::parse`], [`CaseFile::load`]), and of a parsed case run end to end
//! on the CPU with random small inputs. Every input must give a value or a typed error with a
//! message: never a panic, never an allocation beyond what the input holds.
//!
//! By default each target runs for a short time (CI: `.ci/run` runs this file with
//! `GRADOPS_FUZZ_SECS=3`). Longer runs:
//!
//! ```sh
//! GRADOPS_FUZZ_SECS=600 GRADOPS_FUZZ_SEED=$RANDOM cargo test --release --test fuzz_inputs -- --nocapture
//! ```
//!
//! `GRADOPS_FUZZ_SECS` is the time per target (default 1), `GRADOPS_FUZZ_SEED` the seed (the
//! failing input is printed, with the seed and iteration, so any failure reproduces).

#[path = "../../tests/common/mod.rs"]
mod common;
use common::Rng;
use gradops::Layout;
use gradops_cli::case::{CaseFile, OpCall};
use gradops_cli::HostArray;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

fn budget() -> Duration {
    let secs: f64 = std::env::var("GRADOPS_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    Duration::from_secs_f64(secs)
}

fn seed() -> u64 {
    std::env::var("GRADOPS_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed)
}

/// Runs `body(rng, iteration)` until the time budget is spent (at least 200 iterations).
fn fuzz(name: &str, mut body: impl FnMut(&mut Rng, usize)) {
    let (start, limit) = (Instant::now(), budget());
    let mut rng = Rng::new(seed() ^ name.len() as u64);
    let mut i = 0;
    while i < 200 || start.elapsed() < limit {
        body(&mut rng, i);
        i += 1;
    }
    println!(
        "{name}: {i} inputs in {:.1} s (seed {}), no panic",
        start.elapsed().as_secs_f64(),
        seed()
    );
}

/// Runs `f`, failing the test with `input` shown if it panics.
fn no_panic<R>(what: &str, input: &dyn Fn() -> String, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => panic!("{what} panicked on input:\n{}", input()),
    }
}

// ------------------------------------------------------------------ .npy ----

fn npy_bytes(a: &HostArray) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("gradops-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("seed.npy");
    a.write_npy(&p).unwrap();
    std::fs::read(&p).unwrap()
}

fn npy_seeds() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for shape in [
        vec![2, 3],
        vec![1, 2, 2, 1],
        vec![0, 3, 1, 1],
        vec![],
        vec![5],
    ] {
        let n: usize = shape.iter().product();
        let data: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 1.0).collect();
        let a = HostArray::new(shape, data);
        for dt in [
            gradops::DType::F16,
            gradops::DType::F32,
            gradops::DType::F64,
        ] {
            v.push(npy_bytes(&a.cast(dt)));
        }
    }
    v
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    ",",
    "'",
    ":",
    "{",
    "}",
    " ",
    "\n",
    "0",
    "1",
    "-1",
    "99999999999999999999",
    "18446744073709551615",
    "4294967296",
    "<f4",
    "<f8",
    "<f2",
    ">f4",
    "<i8",
    "|b1",
    "True",
    "False",
    "'descr'",
    "'shape'",
    "'fortran_order'",
    "(1,)",
    "()",
    "(0,)",
];

fn mutate(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.range(1, 4) {
        let len = b.len();
        match rng.range(0, 7) {
            0 if len > 0 => {
                let i = rng.range(0, len - 1);
                b[i] ^= 1 << rng.range(0, 7);
            }
            1 if len > 0 => {
                let i = rng.range(0, len - 1);
                b[i] = *rng.pick(&[0u8, 0xff, b'9', b'(', b')', b',', b'\'', b' ', b'-']);
            }
            2 => b.truncate(rng.range(0, len)),
            3 => {
                let i = rng.range(0, len);
                let t = rng.pick(TOKENS).as_bytes().to_vec();
                b.splice(i..i, t);
            }
            4 if len > 1 => {
                let i = rng.range(0, len - 1);
                let j = rng.range(i, (i + 8).min(len));
                b.drain(i..j);
            }
            5 => {
                // Rewrite the shape tuple in the header.
                let text = String::from_utf8_lossy(&b).to_string();
                if let (Some(s), Some(e)) = (text.find("'shape': ("), text.find("), }")) {
                    if s < e {
                        let dims: Vec<String> = (0..rng.range(0, 5))
                            .map(|_| {
                                rng.pick(&[
                                    "0",
                                    "1",
                                    "3",
                                    "65536",
                                    "4294967297",
                                    "18446744073709551615",
                                ])
                                .to_string()
                            })
                            .collect();
                        let new = format!("'shape': ({},", dims.join(","));
                        b = format!("{}{}{}", &text[..s], new, &text[e..]).into_bytes();
                    }
                }
            }
            _ => {
                let extra = rng.range(0, 16);
                b.extend((0..extra).map(|_| rng.next_u64() as u8));
            }
        }
    }
    b
}

#[test]
fn fuzz_npy_reader() {
    let seeds = npy_seeds();
    for s in &seeds {
        HostArray::parse_npy(s, "seed").expect("the seeds are valid .npy files");
    }
    let (mut ok, mut err) = (0, 0);
    fuzz("fuzz_npy_reader", |rng, _| {
        let b = if rng.range(0, 20) == 0 {
            (0..rng.range(0, 200))
                .map(|_| rng.next_u64() as u8)
                .collect()
        } else {
            let seed = rng.pick(&seeds).clone();
            mutate(rng, seed)
        };
        let show = || format!("{:?}", String::from_utf8_lossy(&b));
        match no_panic("HostArray::parse_npy", &show, || {
            HostArray::parse_npy(&b, "fuzz.npy")
        }) {
            Ok(a) => {
                assert_eq!(a.len(), a.shape.iter().product::<usize>(), "{}", show());
                ok += 1;
            }
            Err(e) => {
                assert!(matches!(e, gradops::Error::Case { .. }), "{e:?}");
                assert!(!e.to_string().is_empty());
                err += 1;
            }
        }
    });
    println!("fuzz_npy_reader: {ok} parsed, {err} typed errors");
    assert!(ok > 0 && err > 0);
}

// ------------------------------------------------------------------ cases ----

const OPS: &[&str] = &[
    "resize_grad",
    "resize_bilinear_grad",
    "resize_nearest_neighbor_grad",
    "resize",
    "resize_bilinear",
    "resize_nearest_neighbor",
    "conv2d_backprop_input",
    "conv2d",
    "max_pool_grad",
    "max_pool",
    "conv2d_backprop_filter",
    "",
    "RESIZE_GRAD",
];

const ATTRS: &[&str] = &[
    "mode",
    "coordinate_transformation_mode",
    "nearest_mode",
    "scales",
    "align_corners",
    "half_pixel_centers",
    "input_shape",
    "filter_shape",
    "strides",
    "dilations",
    "padding",
    "dim_rounding_mode",
    "ksize",
    "size",
    "filter_layout",
    "groups",
];

fn small_int(rng: &mut Rng) -> Value {
    json!(*rng.pick(&[0, 1, 1, 2, 2, 3, 4]))
}

fn value(rng: &mut Rng, depth: usize) -> Value {
    match rng.range(0, if depth > 2 { 9 } else { 12 }) {
        0 => Value::Null,
        1 => json!(rng.coin()),
        2 | 3 => small_int(rng),
        4 => json!(*rng.pick(&[-1i64, -7, 1 << 40, i64::MAX])),
        5 => json!(u64::MAX),
        6 => json!(*rng.pick(&[0.5, -0.0, 1e300, 2.0, 1.5])),
        7 => json!(*rng.pick(&[
            "linear",
            "nearest",
            "SAME",
            "VALID",
            "half_pixel",
            "align_corners",
            "tf_half_pixel_for_nn",
            "floor",
            "ceil",
            "round",
            "round_prefer_ceil",
            "NCHW",
            "",
            "\u{0}",
            "same",
        ])),
        8 => {
            let n = *rng.pick(&[2, 4, 4, 4, 3]);
            Value::Array((0..n).map(|_| small_int(rng)).collect())
        }
        9 => {
            let pair = |rng: &mut Rng| json!([small_int(rng), small_int(rng)]);
            json!([pair(rng), pair(rng)])
        }
        10 => Value::Array(
            (0..rng.range(0, 5))
                .map(|_| value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.range(0, 3) {
                m.insert(rng.pick(ATTRS).to_string(), value(rng, depth + 1));
            }
            Value::Object(m)
        }
    }
}

fn attrs(rng: &mut Rng) -> Option<Value> {
    match rng.range(0, 9) {
        0 => None,
        1 => Some(value(rng, 0)),
        _ => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.range(0, 6) {
                m.insert(rng.pick(ATTRS).to_string(), value(rng, 1));
            }
            Some(Value::Object(m))
        }
    }
}

/// Every integer in `v` is small (so running the call allocates little).
fn small(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64().is_some_and(|x| x.abs() <= 16.0),
        Value::Array(a) => a.iter().all(small),
        Value::Object(m) => m.values().all(small),
        _ => true,
    }
}

fn random_input(rng: &mut Rng) -> HostArray {
    let rank = *rng.pick(&[4, 4, 4, 4, 3]);
    let shape: Vec<usize> = (0..rank).map(|_| rng.range(0, 4)).collect();
    let n = shape.iter().product();
    let a = HostArray::new(shape, rng.vec(n));
    match rng.range(0, 7) {
        0 => a.cast(gradops::DType::F16),
        1 => a.cast(gradops::DType::F64),
        2 => a.cast(gradops::DType::BF16),
        _ => a,
    }
}

#[test]
fn fuzz_case_parser_and_run() {
    let (mut parsed, mut ran, mut run_err) = (0, 0, 0);
    fuzz("fuzz_case_parser_and_run", |rng, _| {
        let op = *rng.pick(OPS);
        let a = attrs(rng);
        let show = || {
            format!(
                "op {op:?} attrs {}",
                a.as_ref().map_or("none".into(), |v| v.to_string())
            )
        };
        let call = match no_panic("OpCall::parse", &show, || OpCall::parse(op, a.as_ref())) {
            Ok(c) => c,
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{}", show());
                return;
            }
        };
        parsed += 1;
        if !a.as_ref().is_none_or(small) {
            return;
        }
        let mut inputs = BTreeMap::new();
        for name in ["dy", "x", "y", "filter"] {
            if rng.range(0, 5) > 0 {
                inputs.insert(name.to_string(), random_input(rng));
            }
        }
        let layout = *rng.pick(&[Layout::Nchw, Layout::Nhwc]);
        let show_all = || {
            format!(
                "{} layout {layout} inputs {:?}",
                show(),
                inputs
                    .iter()
                    .map(|(k, v)| (k, &v.shape))
                    .collect::<Vec<_>>()
            )
        };
        match no_panic("OpCall::run_cpu", &show_all, || {
            call.run_cpu(layout, &inputs)
        }) {
            Ok(_) => ran += 1,
            Err(e) => {
                assert!(!e.to_string().is_empty(), "{}", show_all());
                run_err += 1;
            }
        }
    });
    println!("fuzz_case_parser_and_run: {parsed} parsed, {ran} ran, {run_err} run errors");
    assert!(parsed > 0 && ran > 0 && run_err > 0);
}

/// Whole case files: mutated JSON text through `CaseFile::load` (and its `.npy` inputs).
#[test]
fn fuzz_case_files() {
    let dir = std::env::temp_dir().join(format!("gradops-fuzz-case-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let x = HostArray::new(vec![1, 2, 2, 1], vec![1.0f32, 2.0, 3.0, 4.0]);
    x.write_npy(&dir.join("x.npy")).unwrap();
    let seeds: Vec<String> = [
        json!({"op": "max_pool_grad", "attrs": {"ksize": [2, 2], "strides": [1, 1], "padding": "VALID"}, "inputs": {"dy": "x.npy", "x": "x.npy"}, "output": "o.npy"}),
        json!({"op": "resize_grad", "layout": "NCHW", "attrs": {"mode": "linear", "scales": null}, "inputs": {"dy": "x.npy", "x": "x.npy"}, "output": "o.npy"}),
        json!({"op": "conv2d_backprop_input", "attrs": {"input_shape": [1, 2, 2, 1], "padding": [[0, 0], [1, 1]], "dim_rounding_mode": "ceil"}, "inputs": {"dy": "x.npy", "filter": "x.npy"}, "output": "o.npy"}),
        json!({"op": "max_pool_grad", "dtype": "bf16", "attrs": {"ksize": [2, 2]}, "inputs": {"dy": "x.npy", "x": "x.npy"}, "output": "o.npy"}),
        json!({"op": "conv2d_backprop_filter", "attrs": {"filter_shape": [1, 1, 1, 1], "padding": "SAME"}, "inputs": {"x": "x.npy", "dy": "x.npy"}, "output": "o.npy"}),
    ]
    .iter()
    .map(|v| v.to_string())
    .collect();
    let path = dir.join("case.json");
    let (mut ok, mut err) = (0, 0);
    fuzz("fuzz_case_files", |rng, _| {
        let seed = rng.pick(&seeds).clone().into_bytes();
        let text = mutate(rng, seed);
        std::fs::write(&path, &text).unwrap();
        let show = || format!("{:?}", String::from_utf8_lossy(&text));
        let r = no_panic("CaseFile::load", &show, || {
            CaseFile::load(&path).and_then(|c| c.read_inputs().map(|i| (c, i)))
        });
        match r {
            Ok((c, inputs)) => {
                ok += 1;
                let small_attrs =
                    serde_json::from_slice::<Value>(&text).is_ok_and(|v| small(&v["attrs"]));
                if small_attrs {
                    let _ = no_panic("run_cpu", &show, || c.call.run_cpu(c.layout, &inputs));
                }
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                err += 1;
            }
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    println!("fuzz_case_files: {ok} loaded, {err} typed errors");
    assert!(ok > 0 && err > 0);
}
