//! Bad input gets a typed error naming the op, the argument and the values — never a panic.
//! Zero-sized dimensions are valid and give empty or all-zero results.

use gradops::{
    conv2d_backprop_filter, conv2d_backprop_filter_into, conv2d_backprop_input, max_pool_grad,
    max_pool_grad_with_argmax, resize_grad, resize_grad_into, Conv2dAttrs, Error, FilterRef,
    Layout, MaxPoolAttrs, Padding, ResizeAttrs, ResizeMode, TensorRef,
};
use gradops_cli::array::HostArray;
use gradops_cli::case::OpCall;
use serde_json::json;
use std::collections::BTreeMap;

fn arr(shape: &[usize]) -> HostArray {
    let n: usize = shape.iter().product();
    HostArray::new(
        shape.to_vec(),
        (0..n)
            .map(|i| (i as f32 * 0.37).sin())
            .collect::<Vec<f32>>(),
    )
}

/// Runs a case through the dispatcher and returns the error message (panics if it succeeds).
fn case_err(op: &str, attrs: serde_json::Value, inputs: &[(&str, HostArray)]) -> String {
    let inputs: BTreeMap<String, HostArray> = inputs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    match OpCall::parse(op, Some(&attrs)).and_then(|c| c.run_cpu(Layout::Nhwc, &inputs)) {
        Ok(out) => panic!("{op} {attrs}: expected an error, got shape {:?}", out.shape),
        Err(e) => e.to_string(),
    }
}

fn has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "message {msg:?} lacks {p:?}");
    }
}

#[test]
fn resize_grad_errors() {
    let lin = json!({"mode": "linear"});
    has(
        &case_err(
            "resize_grad",
            lin.clone(),
            &[("dy", arr(&[1, 4, 4])), ("x", arr(&[1, 2, 2, 1]))],
        ),
        &["resize_grad", "`dy`", "rank 3"],
    );
    has(
        &case_err(
            "resize_grad",
            lin.clone(),
            &[("dy", arr(&[1, 4, 4, 2])), ("x", arr(&[1, 2, 2, 3]))],
        ),
        &["resize_grad", "dy", "C=2", "C=3"],
    );
    has(
        &case_err(
            "resize_grad",
            lin.clone(),
            &[("dy", arr(&[2, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
        ),
        &["N=2", "N=1"],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "cubic"}),
            &[("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
        ),
        &["resize_grad", "mode", "\"cubic\""],
    );
    has(
        &case_err(
            "resize_grad",
            json!({}),
            &[("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
        ),
        &["resize_grad", "mode", "required"],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "linear", "coordinate_transformation_mode": "half"}),
            &[("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
        ),
        &["coordinate_transformation_mode", "\"half\""],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "nearest", "nearest_mode": "up"}),
            &[("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
        ),
        &["nearest_mode", "\"up\""],
    );
    let xs = [("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))];
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "linear", "scales": [1, 2, 2]}),
            &xs,
        ),
        &["scales", "length 3"],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "linear", "scales": [2, 1, 2, 2]}),
            &xs,
        ),
        &["scales", "batch and channel"],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "linear", "scales": [-2, 2]}),
            &xs,
        ),
        &["scales", "> 0", "-2"],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "linear", "scales": [0, 2]}),
            &xs,
        ),
        &["scales", "> 0"],
    );
    has(
        &case_err(
            "resize_grad",
            json!({"mode": "linear", "scales": [3, 2]}),
            &xs,
        ),
        &["scales", "imply output 6x4", "4x4"],
    );
    // Element counts that overflow usize, and axes too long for the u32 tables.
    let big = usize::MAX / 4;
    let err = resize_grad(
        TensorRef::new(&[0.0f32; 4], [1, 1, 2, 2], Layout::Nchw),
        [1, 1, big, big],
        &ResizeAttrs::new(ResizeMode::Linear),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Overflow { .. }), "{err}");
    let err = resize_grad(
        TensorRef::new(&[0.0f32; 4], [1, 1, 2, 2], Layout::Nchw),
        [1, 1, 1 << 33, 1],
        &ResizeAttrs::new(ResizeMode::Linear),
    )
    .unwrap_err();
    assert!(matches!(err, Error::Overflow { .. }), "{err}");
    // A buffer shorter than its shape.
    let err = resize_grad(
        TensorRef::new(&[0.0f32; 3], [1, 1, 2, 2], Layout::Nchw),
        [1, 1, 1, 1],
        &ResizeAttrs::new(ResizeMode::Linear),
    )
    .unwrap_err();
    has(
        &err.to_string(),
        &["resize_grad", "`dy`", "holds 3", "needs 4"],
    );
    let mut dx = [0.0f32; 2];
    let err = resize_grad_into(
        TensorRef::new(&[0.0f32; 4], [1, 1, 2, 2], Layout::Nchw),
        [1, 1, 1, 1],
        &ResizeAttrs::new(ResizeMode::Linear),
        &mut dx,
    )
    .unwrap_err();
    has(&err.to_string(), &["`dx`", "holds 2", "needs 1"]);
}

#[test]
fn tf_resize_errors() {
    for op in ["resize_bilinear_grad", "resize_nearest_neighbor_grad"] {
        let m = case_err(
            op,
            json!({"align_corners": true, "half_pixel_centers": true}),
            &[("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
        );
        has(&m, &[op, "half_pixel_centers", "align_corners"]);
        has(
            &case_err(
                op,
                json!({"align_corners": "yes"}),
                &[("dy", arr(&[1, 4, 4, 1])), ("x", arr(&[1, 2, 2, 1]))],
            ),
            &[op, "align_corners", "\"yes\""],
        );
    }
}

#[test]
fn conv2d_backprop_input_errors() {
    let op = "conv2d_backprop_input";
    let f = arr(&[3, 3, 2, 4]);
    let ok = json!({"input_shape": [1, 5, 5, 2], "strides": [1, 1], "padding": "SAME"});
    has(
        &case_err(
            op,
            ok.clone(),
            &[("dy", arr(&[1, 4, 4, 4])), ("filter", f.clone())],
        ),
        &[op, "dy", "computed output size 5 x 5", "got 4 x 4"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("dy", arr(&[2, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "batch 2", "batch 1"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("dy", arr(&[1, 5, 5, 3])), ("filter", f.clone())],
        ),
        &[op, "3 channels", "4 output channels"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 3], "padding": "SAME"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "filter", "input channels 3", "2"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 6], "padding": "SAME"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "not divisible by groups 3"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 2], "strides": [0, 1], "padding": "SAME"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "strides", "0"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 2], "dilations": [1, 0], "padding": "SAME"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "dilations"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 2], "padding": [[-1, 0], [0, 0]]}),
            &[("dy", arr(&[1, 2, 3, 4])), ("filter", f.clone())],
        ),
        &[op, "padding", "-1"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 2], "padding": [[1.2, 1.2], [0, 0]]}),
            &[("dy", arr(&[1, 2, 3, 4])), ("filter", f.clone())],
        ),
        &[op, "padding", "1.2"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 2], "padding": "FULL"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "padding", "FULL"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 1, 1, 2], "padding": "VALID"}),
            &[("dy", arr(&[1, 1, 1, 4])), ("filter", f.clone())],
        ),
        &[op, "padding", "negative"],
    );
    has(
        &case_err(
            op,
            json!({"input_shape": [1, 5, 5, 2], "padding": "SAME", "dim_rounding_mode": "ceil"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "dim_rounding_mode"],
    );
    has(
        &case_err(
            op,
            json!({"padding": "SAME"}),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", f.clone())],
        ),
        &[op, "input_shape", "required"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("dy", arr(&[1, 5, 5, 4])), ("filter", arr(&[3, 3, 2]))],
        ),
        &[op, "`filter`", "rank 3"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[
                ("dy", arr(&[1, 5, 5, 4])),
                ("filter", f.cast(gradops::DType::F64)),
            ],
        ),
        &[op, "filter", "f64", "f32"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[
                ("dy", arr(&[1, 5, 5, 4]).cast(gradops::DType::BF16)),
                ("filter", f.clone()),
            ],
        ),
        &[op, "filter", "bf16", "f32"],
    );
    has(
        &case_err(op, ok, &[("dy", arr(&[1, 5, 5, 4]))]),
        &[op, "filter", "missing"],
    );
    // Typed API: overflowing input_shape.
    let e = conv2d_backprop_input(
        TensorRef::new(&[0.0f32; 4], [1, 1, 1, 4], Layout::Nhwc),
        FilterRef::new(&[0.0f32; 8], [1, 1, 2, 4]),
        [usize::MAX / 2, 4, 4, 2],
        &Conv2dAttrs::default(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Overflow { .. }), "{e}");
}

#[test]
fn conv2d_backprop_filter_errors() {
    let op = "conv2d_backprop_filter";
    let x = arr(&[1, 5, 5, 2]);
    let ok = json!({"filter_shape": [3, 3, 2, 4], "strides": [1, 1], "padding": "SAME"});
    has(
        &case_err(
            op,
            ok.clone(),
            &[("x", x.clone()), ("dy", arr(&[1, 4, 4, 4]))],
        ),
        &[
            op,
            "dy",
            "computed output size 5 x 5",
            "from x [1, 5, 5, 2]",
            "got 4 x 4",
        ],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("x", x.clone()), ("dy", arr(&[2, 5, 5, 4]))],
        ),
        &[op, "dy", "batch 2", "x's batch 1"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("x", x.clone()), ("dy", arr(&[1, 5, 5, 3]))],
        ),
        &[op, "dy", "3 channels", "4 output channels"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("x", arr(&[1, 5, 5, 3])), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "`filter_shape`", "input channels 3", "2"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("x", arr(&[1, 5, 5, 6])), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "`filter_shape`", "not divisible by groups 3"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [3, 3, 2, 4], "strides": [1, 0], "padding": "SAME"}),
            &[("x", x.clone()), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "strides", "0"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [3, 3, 2, 4], "dilations": [0, 1], "padding": "SAME"}),
            &[("x", x.clone()), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "dilations"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [3, 3, 2, 4], "padding": [[-1, 0], [0, 0]]}),
            &[("x", x.clone()), ("dy", arr(&[1, 2, 3, 4]))],
        ),
        &[op, "padding", "-1"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [7, 3, 2, 4], "padding": "VALID"}),
            &[("x", x.clone()), ("dy", arr(&[1, 1, 3, 4]))],
        ),
        &[op, "padding", "negative"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [3, 3, 2, 4], "padding": "VALID", "dim_rounding_mode": "ceil"}),
            &[("x", x.clone()), ("dy", arr(&[1, 3, 3, 4]))],
        ),
        &[op, "dim_rounding_mode"],
    );
    has(
        &case_err(
            op,
            json!({"padding": "SAME"}),
            &[("x", x.clone()), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "filter_shape", "required"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [3, 3, 2], "padding": "SAME"}),
            &[("x", x.clone()), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "filter_shape"],
    );
    has(
        &case_err(
            op,
            json!({"filter_shape": [3, 3, 2, 4], "filter_layout": "IOHW", "padding": "SAME"}),
            &[("x", x.clone()), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "filter_layout", "IOHW"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[("x", arr(&[1, 5, 5])), ("dy", arr(&[1, 5, 5, 4]))],
        ),
        &[op, "`x`", "rank 3"],
    );
    has(
        &case_err(
            op,
            ok.clone(),
            &[
                ("x", x.cast(gradops::DType::F64)),
                ("dy", arr(&[1, 5, 5, 4])),
            ],
        ),
        &[op, "x", "f64", "f32"],
    );
    has(
        &case_err(op, ok, &[("dy", arr(&[1, 5, 5, 4]))]),
        &[op, "x", "missing"],
    );
    // Typed API: layouts differ, wrong buffer lengths, overflowing filter_shape.
    let (xs, dys) = (vec![0.0f32; 50], vec![0.0f32; 100]);
    let attrs = Conv2dAttrs::default().padding(Padding::Same);
    let e = conv2d_backprop_filter(
        TensorRef::new(&xs, [1, 5, 5, 2], Layout::Nhwc),
        TensorRef::new(&dys, [1, 4, 5, 5], Layout::Nchw),
        [3, 3, 2, 4],
        &attrs,
    )
    .unwrap_err()
    .to_string();
    has(&e, &[op, "dy", "layout NCHW", "NHWC"]);
    let e = conv2d_backprop_filter(
        TensorRef::new(&xs[..49], [1, 5, 5, 2], Layout::Nhwc),
        TensorRef::new(&dys, [1, 5, 5, 4], Layout::Nhwc),
        [3, 3, 2, 4],
        &attrs,
    )
    .unwrap_err()
    .to_string();
    has(&e, &[op, "`x`", "49", "50"]);
    let mut dw = vec![f32::NAN; 71];
    let e = conv2d_backprop_filter_into(
        TensorRef::new(&xs, [1, 5, 5, 2], Layout::Nhwc),
        TensorRef::new(&dys, [1, 5, 5, 4], Layout::Nhwc),
        [3, 3, 2, 4],
        &attrs,
        &mut dw,
    )
    .unwrap_err()
    .to_string();
    has(&e, &[op, "`dw`", "71", "72"]);
    assert!(dw.iter().all(|v| v.is_nan()), "dw written on an error");
    let e = conv2d_backprop_filter(
        TensorRef::new(&xs, [1, 5, 5, 2], Layout::Nhwc),
        TensorRef::new(&dys, [1, 5, 5, 4], Layout::Nhwc),
        [usize::MAX / 2, 3, 2, 4],
        &Conv2dAttrs::default(),
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::Overflow { .. } | Error::Attr { .. }),
        "{e}"
    );
}

#[test]
fn max_pool_grad_errors() {
    let op = "max_pool_grad";
    let a = json!({"ksize": [2, 2], "strides": [2, 2], "padding": "VALID"});
    has(
        &case_err(
            op,
            a.clone(),
            &[("dy", arr(&[1, 3, 3, 1])), ("x", arr(&[1, 4, 4, 1]))],
        ),
        &[op, "dy", "[1, 3, 3, 1]", "[1, 2, 2, 1]"],
    );
    has(
        &case_err(
            op,
            a.clone(),
            &[
                ("dy", arr(&[1, 2, 2, 1])),
                ("x", arr(&[1, 4, 4, 1])),
                ("y", arr(&[1, 2, 3, 1])),
            ],
        ),
        &[op, "`y`", "[1, 2, 3, 1]"],
    );
    has(
        &case_err(
            op,
            json!({"ksize": [2, 2], "padding": [[2, 0], [0, 0]]}),
            &[("dy", arr(&[1, 2, 2, 1])), ("x", arr(&[1, 4, 4, 1]))],
        ),
        &[op, "padding", "smaller than the window"],
    );
    has(
        &case_err(
            op,
            json!({"ksize": [0, 2]}),
            &[("dy", arr(&[1, 2, 2, 1])), ("x", arr(&[1, 4, 4, 1]))],
        ),
        &[op, "ksize", "[0, 2]"],
    );
    has(
        &case_err(
            op,
            json!({"strides": [1, 1]}),
            &[("dy", arr(&[1, 2, 2, 1])), ("x", arr(&[1, 4, 4, 1]))],
        ),
        &[op, "ksize", "required"],
    );
    has(
        &case_err(
            op,
            json!({"ksize": [2, 2], "dilations": [2, 2]}),
            &[("dy", arr(&[1, 2, 2, 1])), ("x", arr(&[1, 4, 4, 1]))],
        ),
        &[op, "dilations"],
    );
    has(
        &case_err(op, a, &[("dy", arr(&[1, 2, 2, 1])), ("x", arr(&[4, 4, 1]))]),
        &[op, "`x`", "rank 3"],
    );
    // Typed API: mismatched layouts, argmax out of its window's plane.
    let x = [1.0f32, 2.0, 3.0, 4.0];
    let e = max_pool_grad(
        TensorRef::new(&[1.0f32], [1, 1, 1, 1], Layout::Nchw),
        TensorRef::new(&x, [1, 2, 2, 1], Layout::Nhwc),
        None,
        &MaxPoolAttrs::new([2, 2]),
    )
    .unwrap_err();
    has(&e.to_string(), &["layout NCHW", "NHWC"]);
    let a = MaxPoolAttrs::new([2, 2])
        .strides([2, 2])
        .padding(Padding::Valid);
    // NHWC, 2 or 3 channels (the channel test masks or divides): index 1 is in range but
    // belongs to channel 1, not window 0's channel 0; the other windows name their own cell 0.
    for c in [2usize, 3] {
        let mut dx = vec![0.0f32; 4 * c];
        let argmax: Vec<i64> = (0..c as i64).map(|k| if k == 0 { 1 } else { k }).collect();
        let e = gradops::max_pool_grad_with_argmax_into(
            TensorRef::new(&vec![1.0f32; c], [1, 1, 1, c], Layout::Nhwc),
            &argmax,
            [1, 2, 2, c],
            &a,
            &mut dx,
        )
        .unwrap_err();
        has(
            &e.to_string(),
            &["argmax", "index 1 at position 0", "channel 0"],
        );
        assert!(
            dx.iter().all(|v| v.is_nan()),
            "a rejected call must not leave dx looking valid: {dx:?}"
        );
    }
    for bad in [4i64, -2, 1 << 40] {
        let e = max_pool_grad_with_argmax(
            TensorRef::new(&[1.0f32], [1, 1, 1, 1], Layout::Nhwc),
            &[bad],
            [1, 2, 2, 1],
            &a,
        )
        .unwrap_err();
        has(
            &e.to_string(),
            &["max_pool_grad_with_argmax", "argmax", &bad.to_string()],
        );
    }
}

#[test]
fn unknown_op_and_bad_attr_types() {
    let e = OpCall::parse("avg_pool_grad", None)
        .unwrap_err()
        .to_string();
    has(&e, &["unknown op", "avg_pool_grad", "max_pool_grad"]);
    let e = OpCall::parse("max_pool_grad", Some(&json!([1, 2])))
        .unwrap_err()
        .to_string();
    has(&e, &["max_pool_grad", "attrs", "object"]);
}

#[test]
fn zero_sized_dimensions_are_valid() {
    let a = ResizeAttrs::new(ResizeMode::Linear);
    // Empty batch.
    let dx = resize_grad(
        TensorRef::new(&[] as &[f32], [0, 3, 4, 4], Layout::Nchw),
        [0, 3, 2, 2],
        &a,
    )
    .unwrap();
    assert!(dx.data.is_empty());
    // Empty dy spatial: nothing maps, dx is all zero (and fully written).
    let dx = resize_grad(
        TensorRef::new(&[] as &[f32], [1, 2, 0, 4], Layout::Nchw),
        [1, 2, 3, 3],
        &a,
    )
    .unwrap();
    assert_eq!(dx.data, vec![0.0; 18]);
    let dx = resize_grad(
        TensorRef::new(&[] as &[f64], [1, 0, 4, 2], Layout::Nhwc),
        [1, 3, 3, 2],
        &ResizeAttrs::new(ResizeMode::Nearest),
    )
    .unwrap();
    assert_eq!(dx.data, vec![0.0; 18]);
    // Empty x spatial.
    let dx = resize_grad(
        TensorRef::new(&[1.0f32; 4], [1, 1, 2, 2], Layout::Nchw),
        [1, 1, 0, 2],
        &a,
    )
    .unwrap();
    assert!(dx.data.is_empty());
    // Conv with no images / no output channels.
    let dx = conv2d_backprop_input(
        TensorRef::new(&[] as &[f32], [0, 4, 4, 2], Layout::Nhwc),
        FilterRef::new(&[0.5f32; 18], [3, 3, 1, 2]),
        [0, 4, 4, 1],
        &Conv2dAttrs::default().padding(Padding::Same),
    )
    .unwrap();
    assert!(dx.data.is_empty());
    let dx = conv2d_backprop_input(
        TensorRef::new(&[] as &[f32], [1, 4, 4, 0], Layout::Nhwc),
        FilterRef::new(&[] as &[f32], [3, 3, 1, 0]),
        [1, 4, 4, 1],
        &Conv2dAttrs::default().padding(Padding::Same),
    )
    .unwrap();
    assert_eq!(dx.data, vec![0.0; 16]);
    // Filter gradient: no images, an empty dy (window does not fit), a zero-sized kernel axis.
    let dw = conv2d_backprop_filter(
        TensorRef::new(&[] as &[f32], [0, 4, 4, 2], Layout::Nhwc),
        TensorRef::new(&[] as &[f32], [0, 4, 4, 3], Layout::Nhwc),
        [3, 3, 2, 3],
        &Conv2dAttrs::default().padding(Padding::Same),
    )
    .unwrap();
    assert_eq!(dw.data, vec![0.0; 54]);
    let dw = conv2d_backprop_filter(
        TensorRef::new(&[1.0f64; 8], [1, 2, 2, 2], Layout::Nchw),
        TensorRef::new(&[] as &[f64], [1, 1, 0, 2], Layout::Nchw),
        [3, 1, 2, 1],
        &Conv2dAttrs::default()
            .padding(Padding::Explicit([[0, 0], [0, 0]]))
            .strides([3, 1]),
    )
    .unwrap();
    assert_eq!(dw.data, vec![0.0; 6]);
    let dw = conv2d_backprop_filter(
        TensorRef::new(&[1.0f32; 16], [1, 4, 4, 1], Layout::Nhwc),
        TensorRef::new(&[1.0f32; 10], [1, 5, 2, 1], Layout::Nhwc),
        [0, 3, 1, 1],
        &Conv2dAttrs::default(),
    )
    .unwrap();
    assert!(dw.data.is_empty());
    // Pool with no channels.
    let dx = max_pool_grad(
        TensorRef::new(&[] as &[f32], [1, 2, 2, 0], Layout::Nhwc),
        TensorRef::new(&[] as &[f32], [1, 4, 4, 0], Layout::Nhwc),
        None,
        &MaxPoolAttrs::new([2, 2]).strides([2, 2]),
    )
    .unwrap();
    assert!(dx.data.is_empty());
}

/// `conv2d_into`: a `y` of the wrong length names the op, the argument and both lengths,
/// and writes nothing; the right length is fully written (poisoned first).
#[test]
fn conv2d_into_buffer_errors() {
    let xs = vec![0.5f32; 50];
    let w = vec![0.25f32; 72];
    let attrs = Conv2dAttrs::default().padding(Padding::Same);
    let mut y = vec![f32::NAN; 99];
    let e = gradops::conv2d_into(
        TensorRef::new(&xs, [1, 5, 5, 2], Layout::Nhwc),
        FilterRef::new(&w, [3, 3, 2, 4]),
        &attrs,
        &mut y,
    )
    .unwrap_err()
    .to_string();
    has(&e, &["conv2d", "`y`", "99", "100"]);
    assert!(y.iter().all(|v| v.is_nan()), "y written on an error");
    let mut y = vec![f32::NAN; 100];
    gradops::conv2d_into(
        TensorRef::new(&xs, [1, 5, 5, 2], Layout::Nhwc),
        FilterRef::new(&w, [3, 3, 2, 4]),
        &attrs,
        &mut y,
    )
    .unwrap();
    // The centre pixel sees 9 taps x 2 channels of 0.5 * 0.25.
    assert_eq!(y[(2 * 5 + 2) * 4], 2.25);
    assert!(y.iter().all(|v| v.is_finite()));
}
