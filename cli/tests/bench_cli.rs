//! `gradops bench` end to end on shrunken workloads (hidden `--scale-down`): the table is
//! printed, the JSON has the documented keys, bad options fail cleanly.

use std::path::PathBuf;
use std::process::Command;

fn gradops() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gradops"))
}

fn tmp(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{name}", std::process::id()))
}

#[test]
fn bench_w1_w6_json() {
    let json = tmp("bench.json");
    let out = gradops()
        .args([
            "bench",
            "--workload",
            "W1,W6",
            "--reps",
            "1",
            "--scale-down",
            "16",
        ])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stdout.contains("resize_grad_f32 (linear, half_pixel)"),
        "{stdout}"
    );
    assert!(stdout.contains("max_pool_grad_with_argmax_f32"), "{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
        .unwrap_or_else(|e| panic!("bad JSON: {e}"));
    let device = v["device"].as_str().expect("device");
    if device == "cpu" {
        assert!(stderr.contains("CUDA not used"), "{stderr}");
    }
    assert!(v["limit_gbps"].as_f64().unwrap() > 0.0);
    let results = v["results"].as_array().expect("results");
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["workload"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["W1", "W6", "W6", "W6"]);
    for r in results {
        for key in ["op", "dtype", "layout"] {
            assert!(r[key].is_string(), "{key} in {r}");
        }
        for key in ["median_ms", "min_ms", "max_ms", "gbps", "share_of_limit"] {
            assert!(r[key].as_f64().is_some_and(|x| x > 0.0), "{key} in {r}");
        }
        assert_eq!(r["calls"].as_u64(), Some(1));
        assert_eq!(r["dtype"], "f32");
        assert_eq!(r["layout"], "NCHW");
        assert!(r.get("gflops").is_none(), "no gflops outside conv: {r}");
    }
    assert_eq!(results[0]["x_shape"], serde_json::json!([1, 4, 128, 128]));
    assert_eq!(results[1]["argmax"], "recompute");
    assert_eq!(results[2]["argmax"], "stored");
    assert!(results[2]["op"].as_str().unwrap().contains("argmax"));
    let variants: Vec<&str> = results
        .iter()
        .map(|r| r["variant"].as_str().unwrap())
        .collect();
    assert_eq!(variants, ["backward", "recompute", "stored", "forward"]);
    assert!(results[3].get("argmax").is_none(), "{}", results[3]);
    assert!(results[3]["op"].as_str().unwrap().starts_with("max_pool ("));
    assert_eq!(v["layout"], "NCHW");
    std::fs::remove_file(&json).ok();
}

#[test]
fn bench_conv_reports_gflops() {
    let json = tmp("conv.json");
    let out = gradops()
        .args([
            "bench",
            "--device",
            "cpu",
            "--dtype",
            "f64",
            "--workload",
            "w5",
        ])
        .args(["--reps", "2", "--scale-down", "8", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let r = &v["results"][0];
    assert_eq!(r["workload"], "W5");
    assert_eq!(r["dtype"], "f64");
    assert_eq!(r["calls"].as_u64(), Some(2));
    assert!(r["gflops"].as_f64().is_some_and(|g| g > 0.0), "{r}");
    assert_eq!(r["dy_shape"], serde_json::json!([1, 16, 28, 28]));
    std::fs::remove_file(&json).ok();
}

#[test]
fn bench_layout_nhwc_json() {
    let json = tmp("nhwc.json");
    let out = gradops()
        .args([
            "bench",
            "--device",
            "cpu",
            "--layout",
            "nhwc",
            "--workload",
            "W2,W6",
        ])
        .args(["--reps", "1", "--scale-down", "16", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("layout NHWC"), "{stdout}");
    assert!(stdout.contains("max_pool_f32 (3x3, s2, SAME)"), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["layout"], "NHWC");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    for r in results {
        assert_eq!(r["layout"], "NHWC", "{r}");
        assert_eq!(r["limit_gbps"], v["limit_gbps"], "{r}");
        assert!(r["bytes"].as_u64().is_some_and(|b| b > 0), "{r}");
    }
    assert_eq!(results[0]["x_shape"], serde_json::json!([1, 256, 256, 4]));
    assert_eq!(results[3]["variant"], "forward");
    std::fs::remove_file(&json).ok();

    let out = gradops()
        .args([
            "bench", "--device", "cpu", "--layout", "nhcw", "--reps", "1",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nhcw") && !err.contains("panicked"), "{err}");
}

#[test]
fn bench_bad_options_fail_cleanly() {
    let out = gradops()
        .args(["bench", "--workload", "W9", "--reps", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("W9") && !err.contains("panicked"), "{err}");

    let out = gradops()
        .args([
            "bench",
            "--device",
            "cuda",
            "--workload",
            "W1",
            "--reps",
            "1",
        ])
        .args(["--scale-down", "64"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert!(err.contains("CUDA unavailable"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
