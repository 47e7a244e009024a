//! `gradops run` end to end on case files written by the test, for all five backward ops, and
//! the failure contract: non-zero exit, one stderr line naming op and argument, nothing written.

#[path = "../../tests/common/mod.rs"]
mod common;
use common::Rng;
use gradops::Layout;
use gradops_cli::array::HostArray;
use gradops_cli::case::OpCall;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn gradops(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gradops"))
        .args(args)
        .output()
        .unwrap()
}

fn random(rng: &mut Rng, shape: &[usize]) -> HostArray {
    HostArray::new(shape.to_vec(), rng.vec(shape.iter().product()))
}

/// Writes the inputs and a case file, runs the CLI, and compares with the library call.
fn roundtrip(
    name: &str,
    op: &str,
    layout: &str,
    attrs: serde_json::Value,
    inputs: Vec<(&str, HostArray)>,
) {
    let d = dir(name);
    let mut files = serde_json::Map::new();
    for (k, a) in &inputs {
        a.write_npy(&d.join(format!("{k}.npy"))).unwrap();
        files.insert(k.to_string(), json!(format!("{k}.npy")));
    }
    let case = json!({"op": op, "layout": layout, "attrs": attrs, "inputs": files, "output": "out/dx.npy", "comment": "ignored"});
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::fs::write(d.join("case.json"), case.to_string()).unwrap();
    let o = gradops(&[
        "run",
        d.join("case.json").to_str().unwrap(),
        "--device",
        "cpu",
    ]);
    assert!(
        o.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let got = HostArray::read_npy(&d.join("out/dx.npy")).unwrap();
    let map: BTreeMap<String, HostArray> = inputs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let want = OpCall::parse(op, Some(&attrs))
        .unwrap()
        .run_cpu(layout.parse::<Layout>().unwrap(), &map)
        .unwrap();
    assert_eq!(got, want, "{name}");
    assert_eq!(
        got.dtype(),
        map["dy"].dtype(),
        "{name}: output dtype must be dy's"
    );
}

#[test]
fn run_every_backward_op() {
    let mut rng = Rng::new(5);
    let dy = random(&mut rng, &[2, 3, 8, 6]);
    let x = random(&mut rng, &[2, 3, 4, 3]);
    roundtrip(
        "resize_grad",
        "resize_grad",
        "NCHW",
        json!({"mode": "linear", "coordinate_transformation_mode": "half_pixel", "scales": null}),
        vec![("dy", dy.clone()), ("x", x.clone())],
    );
    roundtrip(
        "resize_grad_f16",
        "resize_grad",
        "NCHW",
        json!({"mode": "nearest", "scales": [1, 1, 2, 2]}),
        vec![("dy", dy.cast(gradops::DType::F16)), ("x", x.clone())],
    );
    let dy = random(&mut rng, &[1, 7, 5, 2]);
    let x = random(&mut rng, &[1, 3, 4, 2]);
    roundtrip(
        "bilinear",
        "resize_bilinear_grad",
        "NHWC",
        json!({"half_pixel_centers": true}),
        vec![("dy", dy.clone()), ("x", x.clone())],
    );
    roundtrip(
        "nearest",
        "resize_nearest_neighbor_grad",
        "NHWC",
        json!({"align_corners": true}),
        vec![("dy", dy.cast(gradops::DType::F64)), ("x", x)],
    );
    let dy = random(&mut rng, &[2, 3, 3, 4]);
    let w = random(&mut rng, &[3, 3, 2, 4]);
    roundtrip(
        "conv",
        "conv2d_backprop_input",
        "NHWC",
        json!({"input_shape": [2, 5, 6, 2], "strides": [2, 2], "padding": "SAME"}),
        vec![("dy", dy), ("filter", w)],
    );
    let x = random(&mut rng, &[2, 5, 6, 2]);
    let dy = random(&mut rng, &[2, 3, 3, 4]);
    roundtrip(
        "filter",
        "conv2d_backprop_filter",
        "NHWC",
        json!({"filter_shape": [4, 2, 3, 3], "filter_layout": "OIHW", "strides": [2, 2], "padding": "SAME"}),
        vec![("dy", dy), ("x", x)],
    );
    let x = random(&mut rng, &[1, 2, 7, 7]);
    let dy = random(&mut rng, &[1, 2, 4, 4]);
    roundtrip(
        "pool",
        "max_pool_grad",
        "NCHW",
        json!({"ksize": [3, 3], "strides": [2, 2], "padding": "SAME"}),
        vec![("dy", dy), ("x", x)],
    );
}

/// `"dtype": "bf16"` end to end through `gradops run`: `<f4` inputs rounded to bf16 on load,
/// the op run in bf16, the output `<f4` holding bf16 values, within the SPEC's bf16 tolerance
/// of the f64 op on the same rounded inputs, and bitwise the library's bf16 call.
#[test]
fn bf16_case_runs_end_to_end() {
    use gradops::DType;
    let mut rng = Rng::new(21);
    let f32s = |rng: &mut Rng, shape: &[usize]| random(rng, shape).cast(DType::F32);
    // (op, layout, attrs, inputs)
    type Case<'a> = (
        &'a str,
        &'a str,
        serde_json::Value,
        Vec<(&'a str, HostArray)>,
    );
    let cases: Vec<Case> = vec![
        (
            "resize_grad",
            "NCHW",
            json!({"mode": "linear", "coordinate_transformation_mode": "half_pixel"}),
            vec![
                ("dy", f32s(&mut rng, &[2, 3, 9, 7])),
                ("x", f32s(&mut rng, &[2, 3, 4, 5])),
            ],
        ),
        (
            "conv2d_backprop_input",
            "NHWC",
            json!({"input_shape": [2, 5, 6, 3], "strides": [2, 2], "padding": "SAME"}),
            vec![
                ("dy", f32s(&mut rng, &[2, 3, 3, 4])),
                ("filter", f32s(&mut rng, &[3, 3, 3, 4])),
            ],
        ),
        (
            "max_pool_grad",
            "NCHW",
            json!({"ksize": [3, 3], "strides": [2, 2], "padding": "SAME"}),
            vec![
                ("dy", f32s(&mut rng, &[1, 2, 4, 4])),
                ("x", f32s(&mut rng, &[1, 2, 7, 7])),
            ],
        ),
    ];
    for (op, layout, attrs, inputs) in cases {
        let d = dir(&format!("bf16-{op}"));
        let mut files = serde_json::Map::new();
        for (k, a) in &inputs {
            a.write_npy(&d.join(format!("{k}.npy"))).unwrap();
            files.insert(k.to_string(), json!(format!("{k}.npy")));
        }
        let case = json!({"op": op, "layout": layout, "dtype": "bf16", "attrs": attrs, "inputs": files, "output": "dx.npy"});
        std::fs::write(d.join("case.json"), case.to_string()).unwrap();
        let o = gradops(&["run", d.join("case.json").to_str().unwrap()]);
        assert!(
            o.status.success(),
            "{op}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got = HostArray::read_npy(&d.join("dx.npy")).unwrap();
        assert_eq!(got.dtype(), DType::F32, "{op}: the output is <f4");
        let got = got.to_f64_vec();
        for v in &got {
            let b = gradops::bf16::from_f64(*v);
            assert_eq!(b.to_f64(), *v, "{op}: {v} is not a bf16 value");
        }
        let layout: Layout = layout.parse().unwrap();
        let call = OpCall::parse(op, Some(&attrs)).unwrap();
        let as_type = |t: DType| -> BTreeMap<String, HostArray> {
            inputs
                .iter()
                .map(|(k, v)| (k.to_string(), v.cast(DType::BF16).cast(t)))
                .collect()
        };
        let lib = call.run_cpu(layout, &as_type(DType::BF16)).unwrap();
        assert_eq!(lib.dtype(), DType::BF16);
        assert_eq!(got, lib.to_f64_vec(), "{op}: CLI and library differ");
        let exact = call.run_cpu(layout, &as_type(DType::F64)).unwrap();
        let e = common::rel_err(&got, &exact.to_f64_vec());
        assert!(e <= 1e-2, "{op}: relative L2 error {e:e} > 1e-2");
        assert!(e > 0.0, "{op}: bf16 rounding should show");
    }
}

#[test]
fn reads_a_hand_written_npy() {
    // An '<f2' file built byte by byte (NumPy format 1.0), independent of the writer.
    let d = dir("handmade");
    let header = "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 1, 2, 2), }";
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
    bytes.extend_from_slice(h.as_bytes());
    for v in [1.0f32, 2.0, 3.0, 4.0] {
        bytes.extend_from_slice(&gradops::f16::from_f32(v).to_bits().to_le_bytes());
    }
    std::fs::write(d.join("dy.npy"), &bytes).unwrap();
    HostArray::new(vec![1, 1, 1, 1], vec![0.0f32])
        .write_npy(&d.join("x.npy"))
        .unwrap();
    std::fs::write(d.join("c.json"), json!({"op": "resize_grad", "attrs": {"mode": "linear"}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"}).to_string()).unwrap();
    let o = gradops(&["run", d.join("c.json").to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dx = HostArray::read_npy(&d.join("dx.npy")).unwrap();
    assert_eq!(dx.shape, vec![1, 1, 1, 1]);
    assert_eq!(dx.to_f64_vec(), vec![10.0]); // a 1x1 input receives all of dy
    assert_eq!(dx.dtype(), gradops::DType::F16);
}

#[test]
fn invalid_case_fails_cleanly_and_writes_nothing() {
    let d = dir("invalid");
    let mut rng = Rng::new(9);
    random(&mut rng, &[1, 4, 4, 3])
        .write_npy(&d.join("dy.npy"))
        .unwrap();
    random(&mut rng, &[1, 2, 2, 2])
        .write_npy(&d.join("x.npy"))
        .unwrap();
    let cases = [
        (
            json!({"op": "resize_grad", "attrs": {"mode": "linear"}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"}),
            vec!["resize_grad", "dy"],
        ),
        (
            json!({"op": "resize_grad", "attrs": {"mode": "bicubic"}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"}),
            vec!["resize_grad", "mode", "bicubic"],
        ),
        (
            json!({"op": "max_pool_grad", "attrs": {"ksize": [2, 2]}, "inputs": {"dy": "dy.npy", "x": "missing.npy"}, "output": "dx.npy"}),
            vec!["missing.npy"],
        ),
        (
            json!({"op": "resize_grad", "attrs": {"mode": "linear"}, "inputs": {"dy": "dy.npy"}, "output": "dx.npy"}),
            vec!["resize_grad", "x", "missing"],
        ),
        (
            json!({"op": "warp_grad", "inputs": {}, "output": "dx.npy"}),
            vec!["unknown op", "warp_grad"],
        ),
        // The case-level "dtype" key takes "bf16" only, and then only <f4 inputs.
        (
            json!({"op": "resize_grad", "dtype": "f16", "attrs": {"mode": "linear"}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"}),
            vec!["resize_grad", "dtype", "\"f16\"", "bf16"],
        ),
        (
            json!({"op": "max_pool_grad", "dtype": 16, "attrs": {"ksize": [2, 2]}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"}),
            vec!["max_pool_grad", "dtype", "16"],
        ),
        (
            // dy.npy is <f8 here.
            json!({"op": "resize_grad", "dtype": "bf16", "attrs": {"mode": "linear"}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"}),
            vec!["resize_grad", "dtype", "<f4", "\"dy\"", "f64"],
        ),
    ];
    for (i, (case, words)) in cases.iter().enumerate() {
        let p = d.join(format!("case{i}.json"));
        std::fs::write(&p, case.to_string()).unwrap();
        let o = gradops(&["run", p.to_str().unwrap()]);
        assert!(!o.status.success(), "case {i} should fail");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "one line on stderr, got {err:?}"
        );
        assert!(!err.contains("panicked"), "{err}");
        for w in words {
            assert!(err.contains(w), "case {i}: {err:?} lacks {w:?}");
        }
        assert!(!d.join("dx.npy").exists(), "case {i} wrote an output");
    }
    std::fs::write(d.join("bad.json"), "{not json").unwrap();
    let o = gradops(&["run", d.join("bad.json").to_str().unwrap()]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("invalid JSON"));
}

#[test]
fn info_reports_build_and_devices() {
    let o = gradops(&["info"]);
    assert!(o.status.success());
    let s = String::from_utf8_lossy(&o.stdout);
    for w in [
        "gradops",
        "f16",
        "bf16",
        "f32",
        "f64",
        "resize_grad",
        "max_pool_grad",
    ] {
        assert!(s.contains(w), "info lacks {w}: {s}");
    }
    // The PTX images, and which one each op's kernels come from (on this device, or per
    // image without one).
    let build = gradops::cuda::build_info();
    if build.kernels_compiled {
        for a in build.archs {
            let w = format!("compute_{a}");
            assert!(s.contains(&w), "info lacks {w}: {s}");
        }
        for w in ["conv2d_backprop_input", "simt"] {
            assert!(s.contains(w), "info lacks {w}: {s}");
        }
    }
}

#[test]
fn info_reports_the_cpu_simd_level_and_its_cap() {
    let info = |cap: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_gradops"));
        c.arg("info").env_remove(gradops::CPU_SIMD_ENV);
        if let Some(v) = cap {
            c.env(gradops::CPU_SIMD_ENV, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success());
        let s = String::from_utf8_lossy(&o.stdout).into_owned();
        s.lines()
            .find(|l| l.starts_with("cpu: "))
            .unwrap_or_else(|| panic!("info has no cpu line: {s}"))
            .to_string()
    };
    let detected = gradops::detected_simd_level();
    let plain = info(None);
    assert!(plain.ends_with(&format!("SIMD {detected}")), "{plain}");
    let scalar = info(Some("scalar"));
    assert!(scalar.contains("SIMD scalar ("), "{scalar}");
    if detected != gradops::SimdLevel::Scalar {
        assert!(
            scalar.contains(&format!("the CPU has {detected}; GRADOPS_CPU_SIMD=scalar")),
            "{scalar}"
        );
    }
    let bogus = info(Some("sse9"));
    assert!(
        bogus.contains(&format!(
            "SIMD {detected} (GRADOPS_CPU_SIMD=\"sse9\" is not a level"
        )),
        "{bogus}"
    );
}

#[test]
fn run_on_cuda_matches_cpu_or_fails_with_the_reason() {
    let d = dir("cuda");
    let mut rng = Rng::new(12);
    random(&mut rng, &[1, 2, 9, 7])
        .write_npy(&d.join("dy.npy"))
        .unwrap();
    random(&mut rng, &[1, 2, 4, 5])
        .write_npy(&d.join("x.npy"))
        .unwrap();
    let case = json!({"op": "resize_grad", "layout": "NCHW", "attrs": {"mode": "linear"}, "inputs": {"dy": "dy.npy", "x": "x.npy"}, "output": "dx.npy"});
    std::fs::write(d.join("c.json"), case.to_string()).unwrap();
    let o = gradops(&[
        "run",
        d.join("c.json").to_str().unwrap(),
        "--device",
        "cuda",
    ]);
    match gradops::cuda::probe() {
        Ok(dev) => {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let gpu = HostArray::read_npy(&d.join("dx.npy")).unwrap().to_f64_vec();
            std::fs::remove_file(d.join("dx.npy")).unwrap();
            assert!(gradops(&["run", d.join("c.json").to_str().unwrap()])
                .status
                .success());
            let cpu = HostArray::read_npy(&d.join("dx.npy")).unwrap().to_f64_vec();
            assert!(
                common::rel_err(&gpu, &cpu) <= 1e-5,
                "GPU ({dev}) and CPU differ"
            );
        }
        Err(reason) => {
            println!("SKIPPED GPU parity of `gradops run --device cuda`: {reason}");
            assert!(!o.status.success());
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(err.contains("CUDA unavailable"), "{err}");
            assert!(!d.join("dx.npy").exists());
        }
    }
}
