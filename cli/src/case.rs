//! The `gradops run` case format (SPEC.md): parse an op call from JSON attributes and run it on
//! host arrays. The CLI and the conformance tests both go through [`OpCall`].

use crate::array::{ArrayElement, HostArray};
use gradops::dtype::{DType, Element};
use gradops::error::{Error, Result};
use gradops::geometry::{DimRounding, Padding, ResizeAttrs, ResizeMode, ResizePlan, WindowAttrs};
use gradops::ops::conv2d::{Conv2dAttrs, F32Precision, FilterLayout, FilterRef};
use gradops::ops::max_pool::MaxPoolAttrs;
use gradops::tensor::{rank4, Layout, Tensor, TensorRef};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A parsed op call: which op, with typed attributes. Input arrays are passed separately.
#[derive(Debug, Clone, PartialEq)]
pub enum OpCall {
    /// `resize_grad`, `resize_bilinear_grad`, `resize_nearest_neighbor_grad` (inputs `dy`, `x`).
    ResizeGrad {
        /// Op name, for errors.
        op: &'static str,
        /// ONNX-form attributes.
        attrs: ResizeAttrs,
    },
    /// `resize`, `resize_bilinear`, `resize_nearest_neighbor` forward (input `x`).
    Resize {
        /// Op name.
        op: &'static str,
        /// ONNX-form attributes.
        attrs: ResizeAttrs,
        /// Output `[h, w]`.
        size: [usize; 2],
    },
    /// `conv2d_backprop_input` (inputs `dy`, `filter`).
    Conv2dBackpropInput {
        /// Attributes.
        attrs: Conv2dAttrs,
        /// Shape of `dx`, in the layout.
        input_shape: [usize; 4],
    },
    /// `conv2d_backprop_filter` (inputs `x`, `dy`; output `dw`).
    Conv2dBackpropFilter {
        /// Attributes (`filter_layout` says the order of `filter_shape` and `dw`).
        attrs: Conv2dAttrs,
        /// Shape of `dw`, in the filter layout.
        filter_shape: [usize; 4],
    },
    /// `conv2d` forward (inputs `x`, `filter`).
    Conv2d {
        /// Attributes.
        attrs: Conv2dAttrs,
    },
    /// `max_pool_grad` (inputs `dy`, `x`, optional `y`).
    MaxPoolGrad {
        /// Attributes.
        attrs: MaxPoolAttrs,
    },
    /// `max_pool` forward (input `x`).
    MaxPool {
        /// Attributes.
        attrs: MaxPoolAttrs,
    },
}

/// The op names the case format accepts.
pub const OP_NAMES: [&str; 11] = [
    "resize_grad",
    "resize_bilinear_grad",
    "resize_nearest_neighbor_grad",
    "conv2d_backprop_input",
    "conv2d_backprop_filter",
    "max_pool_grad",
    "resize",
    "resize_bilinear",
    "resize_nearest_neighbor",
    "conv2d",
    "max_pool",
];

struct Attrs<'a> {
    op: &'static str,
    map: Option<&'a serde_json::Map<String, Value>>,
}

impl<'a> Attrs<'a> {
    fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(name)).filter(|v| !v.is_null())
    }

    fn err(&self, arg: &'static str, msg: String) -> Error {
        Error::attr(self.op, arg, msg)
    }

    fn string(&self, arg: &'static str) -> Result<Option<&'a str>> {
        match self.get(arg) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(v) => Err(self.err(arg, format!("must be a string, got {v}"))),
        }
    }

    fn parse<T: std::str::FromStr<Err = String>>(&self, arg: &'static str) -> Result<Option<T>> {
        self.string(arg)?
            .map(|s| s.parse::<T>().map_err(|e| self.err(arg, e)))
            .transpose()
    }

    fn boolean(&self, arg: &'static str) -> Result<bool> {
        match self.get(arg) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(self.err(arg, format!("must be true or false, got {v}"))),
        }
    }

    fn index(&self, arg: &'static str, v: &Value) -> Result<usize> {
        match v.as_u64() {
            Some(u) => {
                usize::try_from(u).map_err(|_| self.err(arg, format!("value {u} is too large")))
            }
            None => Err(self.err(
                arg,
                format!("values must be non-negative integers, got {v}"),
            )),
        }
    }

    fn ints<const N: usize>(&self, arg: &'static str) -> Result<Option<[usize; N]>> {
        let Some(v) = self.get(arg) else {
            return Ok(None);
        };
        let list = match v {
            Value::Array(a) if a.len() == N => a,
            Value::Number(_) if N == 2 => return Ok(Some([self.index(arg, v)?; N])),
            _ => {
                return Err(self.err(
                    arg,
                    format!("must be a list of {N} non-negative integers, got {v}"),
                ))
            }
        };
        let mut out = [0usize; N];
        for (o, x) in out.iter_mut().zip(list) {
            *o = self.index(arg, x)?;
        }
        Ok(Some(out))
    }

    fn floats(&self, arg: &'static str) -> Result<Option<Vec<f64>>> {
        let Some(v) = self.get(arg) else {
            return Ok(None);
        };
        let Value::Array(a) = v else {
            return Err(self.err(arg, format!("must be a list of numbers, got {v}")));
        };
        a.iter()
            .map(|x| {
                x.as_f64()
                    .ok_or_else(|| self.err(arg, format!("must be a list of numbers, got {v}")))
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    fn padding(&self) -> Result<Padding> {
        let Some(v) = self.get("padding") else {
            return Ok(Padding::Valid);
        };
        if let Value::String(s) = v {
            return match s.to_ascii_uppercase().as_str() {
                "SAME" => Ok(Padding::Same),
                "VALID" => Ok(Padding::Valid),
                _ => Err(self.err(
                    "padding",
                    format!(
                        "must be \"SAME\", \"VALID\" or [[top, bottom], [left, right]], got {v}"
                    ),
                )),
            };
        }
        let bad = || {
            self.err("padding", format!("explicit padding must be [[top, bottom], [left, right]] of non-negative integers, got {v}"))
        };
        let rows = v.as_array().filter(|r| r.len() == 2).ok_or_else(bad)?;
        let mut p = [[0usize; 2]; 2];
        for (pr, r) in p.iter_mut().zip(rows) {
            let r = r.as_array().filter(|r| r.len() == 2).ok_or_else(bad)?;
            for (x, e) in pr.iter_mut().zip(r) {
                *x = e
                    .as_u64()
                    .and_then(|u| usize::try_from(u).ok())
                    .ok_or_else(bad)?;
            }
        }
        Ok(Padding::Explicit(p))
    }

    fn window(&self) -> Result<WindowAttrs> {
        Ok(WindowAttrs {
            strides: self.ints::<2>("strides")?.unwrap_or([1, 1]),
            dilations: self.ints::<2>("dilations")?.unwrap_or([1, 1]),
            padding: self.padding()?,
            dim_rounding: self.parse::<DimRounding>("dim_rounding_mode")?,
        })
    }

    fn tf_resize(&self, mode: ResizeMode) -> Result<ResizeAttrs> {
        ResizeAttrs::from_tf(
            self.op,
            mode,
            self.boolean("align_corners")?,
            self.boolean("half_pixel_centers")?,
        )
    }
}

impl OpCall {
    /// Parses an op name and its attribute object (`null` or absent attributes take defaults).
    pub fn parse(op: &str, attrs: Option<&Value>) -> Result<Self> {
        let op: &'static str =
            OP_NAMES
                .iter()
                .copied()
                .find(|&n| n == op)
                .ok_or_else(|| Error::Case {
                    path: String::new(),
                    msg: format!(
                        "unknown op {op:?} (expected one of: {})",
                        OP_NAMES.join(", ")
                    ),
                })?;
        let map = match attrs {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m),
            Some(v) => {
                return Err(Error::attr(
                    op,
                    "attrs",
                    format!("must be an object, got {v}"),
                ))
            }
        };
        let a = Attrs { op, map };
        let size = || -> Result<[usize; 2]> {
            a.ints::<2>("size")?
                .ok_or_else(|| a.err("size", "is required: [height, width]".into()))
        };
        Ok(match op {
            "resize_grad" | "resize" => {
                let mode: ResizeMode = a.parse("mode")?.ok_or_else(|| {
                    a.err("mode", "is required: \"linear\" or \"nearest\"".into())
                })?;
                let mut r = ResizeAttrs::new(mode)
                    .coordinate_transformation_mode(
                        a.parse("coordinate_transformation_mode")?
                            .unwrap_or_default(),
                    )
                    .nearest_mode(a.parse("nearest_mode")?.unwrap_or_default());
                if let Some(s) = a.floats("scales")? {
                    r = r.with_onnx_scales(op, &s)?;
                }
                if op == "resize" {
                    OpCall::Resize {
                        op,
                        attrs: r,
                        size: size()?,
                    }
                } else {
                    OpCall::ResizeGrad { op, attrs: r }
                }
            }
            "resize_bilinear_grad" => OpCall::ResizeGrad {
                op,
                attrs: a.tf_resize(ResizeMode::Linear)?,
            },
            "resize_nearest_neighbor_grad" => OpCall::ResizeGrad {
                op,
                attrs: a.tf_resize(ResizeMode::Nearest)?,
            },
            "resize_bilinear" => OpCall::Resize {
                op,
                attrs: a.tf_resize(ResizeMode::Linear)?,
                size: size()?,
            },
            "resize_nearest_neighbor" => OpCall::Resize {
                op,
                attrs: a.tf_resize(ResizeMode::Nearest)?,
                size: size()?,
            },
            "conv2d_backprop_input" | "conv2d_backprop_filter" | "conv2d" => {
                let filter_layout = match a.string("filter_layout")? {
                    None | Some("HWIO") => FilterLayout::Hwio,
                    Some("OIHW") => FilterLayout::Oihw,
                    Some(o) => {
                        return Err(a.err(
                            "filter_layout",
                            format!("must be \"HWIO\" or \"OIHW\", got {o:?}"),
                        ))
                    }
                };
                let f32_precision = match a.string("f32_precision")? {
                    None | Some("exact") => F32Precision::Exact,
                    Some("tf32") => F32Precision::Tf32,
                    Some(o) => {
                        return Err(a.err(
                            "f32_precision",
                            format!("must be \"exact\" or \"tf32\", got {o:?}"),
                        ))
                    }
                };
                let attrs = Conv2dAttrs {
                    window: a.window()?,
                    filter_layout,
                    f32_precision,
                };
                if op == "conv2d" {
                    OpCall::Conv2d { attrs }
                } else if op == "conv2d_backprop_filter" {
                    let filter_shape = a.ints::<4>("filter_shape")?.ok_or_else(|| {
                        a.err(
                            "filter_shape",
                            "is required: 4 integers in the filter layout".into(),
                        )
                    })?;
                    OpCall::Conv2dBackpropFilter {
                        attrs,
                        filter_shape,
                    }
                } else {
                    let input_shape = a.ints::<4>("input_shape")?.ok_or_else(|| {
                        a.err(
                            "input_shape",
                            "is required: 4 integers in the layout".into(),
                        )
                    })?;
                    OpCall::Conv2dBackpropInput { attrs, input_shape }
                }
            }
            "max_pool_grad" | "max_pool" => {
                let ksize = a
                    .ints::<2>("ksize")?
                    .ok_or_else(|| a.err("ksize", "is required: [kh, kw]".into()))?;
                let attrs = MaxPoolAttrs {
                    ksize,
                    window: a.window()?,
                };
                if op == "max_pool" {
                    OpCall::MaxPool { attrs }
                } else {
                    OpCall::MaxPoolGrad { attrs }
                }
            }
            _ => unreachable!("OP_NAMES covers every arm"),
        })
    }

    /// The op's name.
    pub fn op(&self) -> &'static str {
        match self {
            OpCall::ResizeGrad { op, .. } | OpCall::Resize { op, .. } => op,
            OpCall::Conv2dBackpropInput { .. } => "conv2d_backprop_input",
            OpCall::Conv2dBackpropFilter { .. } => "conv2d_backprop_filter",
            OpCall::Conv2d { .. } => "conv2d",
            OpCall::MaxPoolGrad { .. } => "max_pool_grad",
            OpCall::MaxPool { .. } => "max_pool",
        }
    }

    /// The input whose dtype the output takes (`dy` for backward ops, `x` for forwards).
    pub fn primary_input(&self) -> &'static str {
        match self {
            OpCall::Resize { .. } | OpCall::Conv2d { .. } | OpCall::MaxPool { .. } => "x",
            _ => "dy",
        }
    }

    /// Runs the call on the CPU. The output has the primary input's dtype.
    pub fn run_cpu(
        &self,
        layout: Layout,
        inputs: &BTreeMap<String, HostArray>,
    ) -> Result<HostArray> {
        self.run(Device::Cpu, layout, inputs)
    }

    /// Runs the call on `device` (for CUDA: upload, launch, download, through
    /// [`gradops::cuda::host`]). The output has the primary input's dtype.
    pub fn run(
        &self,
        device: Device,
        layout: Layout,
        inputs: &BTreeMap<String, HostArray>,
    ) -> Result<HostArray> {
        let op = self.op();
        let primary = input(op, inputs, self.primary_input())?;
        match (device, primary.dtype()) {
            (Device::Cpu, DType::F16) => self.run_typed::<half::f16, Cpu>(layout, inputs),
            (Device::Cpu, DType::BF16) => self.run_typed::<half::bf16, Cpu>(layout, inputs),
            (Device::Cpu, DType::F32) => self.run_typed::<f32, Cpu>(layout, inputs),
            (Device::Cpu, DType::F64) => self.run_typed::<f64, Cpu>(layout, inputs),
            (Device::Cuda, DType::F16) => self.run_typed::<half::f16, Cuda>(layout, inputs),
            (Device::Cuda, DType::BF16) => self.run_typed::<half::bf16, Cuda>(layout, inputs),
            (Device::Cuda, DType::F32) => self.run_typed::<f32, Cuda>(layout, inputs),
            (Device::Cuda, DType::F64) => self.run_typed::<f64, Cuda>(layout, inputs),
        }
    }

    fn run_typed<T: ArrayElement, B: Backend>(
        &self,
        layout: Layout,
        inputs: &BTreeMap<String, HostArray>,
    ) -> Result<HostArray> {
        let op = self.op();
        let t = |name: &'static str| tensor::<T>(op, inputs, name, layout);
        let out = match self {
            OpCall::ResizeGrad { attrs, .. } => {
                let dy = t("dy")?;
                let x = shape4(op, inputs, "x")?;
                dy.check_len(op, "dy")?;
                let plan =
                    gradops::ops::resize::plan_resize_grad::<T>(op, dy.shape, x, layout, attrs)?;
                let mut dx = gradops::Tensor::<T>::zeros_checked(op, "x", x, layout)?;
                B::resize(op, &plan, layout, dy.data, &mut dx.data)?;
                dx
            }
            OpCall::Resize { attrs, size, .. } => {
                let x = t("x")?;
                x.check_len(op, "x")?;
                let plan =
                    gradops::ops::resize::plan_resize::<T>(op, x.shape, *size, layout, attrs)?;
                let mut y = gradops::Tensor::<T>::zeros_checked(
                    op,
                    "size",
                    layout.shape(plan.dst),
                    layout,
                )?;
                B::resize(op, &plan, layout, x.data, &mut y.data)?;
                y
            }
            OpCall::Conv2dBackpropInput { attrs, input_shape } => {
                let (f, fshape) = same_dtype::<T>(op, inputs, "filter", "dy")?;
                B::conv2d_backprop_input(t("dy")?, FilterRef::new(f, fshape), *input_shape, attrs)?
            }
            OpCall::Conv2dBackpropFilter {
                attrs,
                filter_shape,
            } => {
                let (x, xs) = same_dtype::<T>(op, inputs, "x", "dy")?;
                B::conv2d_backprop_filter(
                    TensorRef::new(x, xs, layout),
                    t("dy")?,
                    *filter_shape,
                    attrs,
                )?
            }
            OpCall::Conv2d { attrs } => {
                let (f, fshape) = same_dtype::<T>(op, inputs, "filter", "x")?;
                B::conv2d(t("x")?, FilterRef::new(f, fshape), attrs)?
            }
            OpCall::MaxPoolGrad { attrs } => {
                let (x, xs) = same_dtype::<T>(op, inputs, "x", "dy")?;
                let y = match inputs.get("y") {
                    None => None,
                    Some(_) => {
                        let (y, ys) = same_dtype::<T>(op, inputs, "y", "dy")?;
                        Some(TensorRef::new(y, ys, layout))
                    }
                };
                B::max_pool_grad(t("dy")?, TensorRef::new(x, xs, layout), y, attrs)?
            }
            OpCall::MaxPool { attrs } => B::max_pool(t("x")?, attrs)?,
        };
        Ok(HostArray::new(out.shape.to_vec(), out.data))
    }
}

/// Where a call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Device {
    /// The CPU path.
    Cpu,
    /// The CUDA kernels on the first GPU (see [`gradops::cuda::probe`]).
    Cuda,
}

/// The host-slice entry points of one device, so the dispatch above is written once.
trait Backend {
    fn resize<T: Element>(
        op: &'static str,
        plan: &ResizePlan<T::Acc>,
        layout: Layout,
        src: &[T],
        dst: &mut [T],
    ) -> Result<()>;
    fn conv2d_backprop_input<T: Element>(
        dy: TensorRef<'_, T>,
        f: FilterRef<'_, T>,
        input_shape: [usize; 4],
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>>;
    fn conv2d_backprop_filter<T: Element>(
        x: TensorRef<'_, T>,
        dy: TensorRef<'_, T>,
        filter_shape: [usize; 4],
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>>;
    fn conv2d<T: Element>(
        x: TensorRef<'_, T>,
        f: FilterRef<'_, T>,
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>>;
    fn max_pool_grad<T: Element>(
        dy: TensorRef<'_, T>,
        x: TensorRef<'_, T>,
        y: Option<TensorRef<'_, T>>,
        a: &MaxPoolAttrs,
    ) -> Result<Tensor<T>>;
    fn max_pool<T: Element>(x: TensorRef<'_, T>, a: &MaxPoolAttrs) -> Result<Tensor<T>>;
}

struct Cpu;
struct Cuda;

impl Backend for Cpu {
    fn resize<T: Element>(
        op: &'static str,
        plan: &ResizePlan<T::Acc>,
        layout: Layout,
        src: &[T],
        dst: &mut [T],
    ) -> Result<()> {
        gradops::ops::resize::run_plan_cpu(op, plan, layout, src, dst)
    }
    fn conv2d_backprop_input<T: Element>(
        dy: TensorRef<'_, T>,
        f: FilterRef<'_, T>,
        input_shape: [usize; 4],
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>> {
        gradops::conv2d_backprop_input(dy, f, input_shape, a)
    }
    fn conv2d_backprop_filter<T: Element>(
        x: TensorRef<'_, T>,
        dy: TensorRef<'_, T>,
        filter_shape: [usize; 4],
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>> {
        gradops::conv2d_backprop_filter(x, dy, filter_shape, a)
    }
    fn conv2d<T: Element>(
        x: TensorRef<'_, T>,
        f: FilterRef<'_, T>,
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>> {
        gradops::conv2d(x, f, a)
    }
    fn max_pool_grad<T: Element>(
        dy: TensorRef<'_, T>,
        x: TensorRef<'_, T>,
        y: Option<TensorRef<'_, T>>,
        a: &MaxPoolAttrs,
    ) -> Result<Tensor<T>> {
        gradops::max_pool_grad(dy, x, y, a)
    }
    fn max_pool<T: Element>(x: TensorRef<'_, T>, a: &MaxPoolAttrs) -> Result<Tensor<T>> {
        Ok(gradops::max_pool(x, a, false)?.0)
    }
}

impl Backend for Cuda {
    fn resize<T: Element>(
        op: &'static str,
        plan: &ResizePlan<T::Acc>,
        layout: Layout,
        src: &[T],
        dst: &mut [T],
    ) -> Result<()> {
        gradops::cuda::host::run_resize_plan(op, plan, layout, src, dst)
    }
    fn conv2d_backprop_input<T: Element>(
        dy: TensorRef<'_, T>,
        f: FilterRef<'_, T>,
        input_shape: [usize; 4],
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>> {
        gradops::cuda::host::conv2d_backprop_input(dy, f, input_shape, a)
    }
    fn conv2d_backprop_filter<T: Element>(
        x: TensorRef<'_, T>,
        dy: TensorRef<'_, T>,
        filter_shape: [usize; 4],
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>> {
        gradops::cuda::host::conv2d_backprop_filter(x, dy, filter_shape, a)
    }
    fn conv2d<T: Element>(
        x: TensorRef<'_, T>,
        f: FilterRef<'_, T>,
        a: &Conv2dAttrs,
    ) -> Result<Tensor<T>> {
        gradops::cuda::host::conv2d(x, f, a)
    }
    fn max_pool_grad<T: Element>(
        dy: TensorRef<'_, T>,
        x: TensorRef<'_, T>,
        y: Option<TensorRef<'_, T>>,
        a: &MaxPoolAttrs,
    ) -> Result<Tensor<T>> {
        gradops::cuda::host::max_pool_grad(dy, x, y, a)
    }
    fn max_pool<T: Element>(x: TensorRef<'_, T>, a: &MaxPoolAttrs) -> Result<Tensor<T>> {
        Ok(gradops::cuda::host::max_pool(x, a, false)?.0)
    }
}

fn input<'a>(
    op: &'static str,
    inputs: &'a BTreeMap<String, HostArray>,
    name: &'static str,
) -> Result<&'a HostArray> {
    inputs
        .get(name)
        .ok_or_else(|| Error::shape(op, name, "is required but missing from inputs"))
}

fn shape4(
    op: &'static str,
    inputs: &BTreeMap<String, HostArray>,
    name: &'static str,
) -> Result<[usize; 4]> {
    rank4(op, name, &input(op, inputs, name)?.shape)
}

fn same_dtype<'a, T: ArrayElement>(
    op: &'static str,
    inputs: &'a BTreeMap<String, HostArray>,
    name: &'static str,
    like: &'static str,
) -> Result<(&'a [T], [usize; 4])> {
    let a = input(op, inputs, name)?;
    let shape = rank4(op, name, &a.shape)?;
    let data = T::unwrap(&a.data).ok_or_else(|| Error::Dtype {
        op,
        arg: name,
        expected: format!("{} (the dtype of {like})", T::DTYPE),
        got: a.dtype().to_string(),
    })?;
    Ok((data, shape))
}

fn tensor<'a, T: ArrayElement>(
    op: &'static str,
    inputs: &'a BTreeMap<String, HostArray>,
    name: &'static str,
    layout: Layout,
) -> Result<TensorRef<'a, T>> {
    let (data, shape) = same_dtype::<T>(op, inputs, name, name)?;
    Ok(TensorRef::new(data, shape, layout))
}

/// A parsed case file.
#[derive(Debug, Clone)]
pub struct CaseFile {
    /// The op call.
    pub call: OpCall,
    /// Layout (`NCHW` default for `resize_grad`, `NHWC` for the TF ops, as SPEC.md says).
    pub layout: Layout,
    /// Input name -> resolved `.npy` path.
    pub inputs: BTreeMap<String, PathBuf>,
    /// The optional top-level `"dtype"` key: `Some(DType::BF16)` for `"dtype": "bf16"`
    /// (`.npy` has no bf16: the `<f4` inputs are rounded to bf16 on load, the op runs in
    /// bf16 and the output is written as `<f4` holding the bf16 values). `None`: the inputs'
    /// own dtypes.
    pub dtype: Option<DType>,
    /// Resolved output path.
    pub output: PathBuf,
}

impl CaseFile {
    /// Reads and parses `path`; relative paths inside resolve against its folder.
    pub fn load(path: &Path) -> Result<Self> {
        let p = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: p.clone(),
            source,
        })?;
        let bad = |msg: String| Error::Case {
            path: p.clone(),
            msg,
        };
        let v: Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("invalid JSON: {e}")))?;
        let op = v
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing string key \"op\"".into()))?;
        let call = OpCall::parse(op, v.get("attrs")).map_err(|e| match e {
            Error::Case { msg, .. } => bad(msg),
            e => e,
        })?;
        let layout = match v.get("layout") {
            None | Some(Value::Null) => match call {
                OpCall::ResizeGrad {
                    op: "resize_grad", ..
                }
                | OpCall::Resize { op: "resize", .. } => Layout::Nchw,
                _ => Layout::Nhwc,
            },
            Some(Value::String(s)) => s
                .parse::<Layout>()
                .map_err(|e| Error::attr(call.op(), "layout", e))?,
            Some(o) => {
                return Err(Error::attr(
                    call.op(),
                    "layout",
                    format!("must be \"NCHW\" or \"NHWC\", got {o}"),
                ))
            }
        };
        let dtype = match v.get("dtype") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.parse::<DType>() == Ok(DType::BF16) => Some(DType::BF16),
            Some(o) => {
                return Err(Error::attr(
                    call.op(),
                    "dtype",
                    format!(
                        "must be \"bf16\" (the one element type .npy lacks; the others come \
                         from the input files), got {o}"
                    ),
                ))
            }
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let ins = v
            .get("inputs")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("missing object key \"inputs\"".into()))?;
        let mut inputs = BTreeMap::new();
        for (k, f) in ins {
            let f = f
                .as_str()
                .ok_or_else(|| bad(format!("input {k:?} must be a file name, got {f}")))?;
            inputs.insert(k.clone(), dir.join(f));
        }
        let out = v
            .get("output")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("missing string key \"output\"".into()))?;
        Ok(CaseFile {
            call,
            layout,
            inputs,
            dtype,
            output: dir.join(out),
        })
    }

    /// Reads the inputs. With `"dtype": "bf16"` every input must be `<f4`; each is rounded
    /// to bf16 (to nearest, ties to even).
    pub fn read_inputs(&self) -> Result<BTreeMap<String, HostArray>> {
        self.inputs
            .iter()
            .map(|(k, p)| {
                let a = HostArray::read_npy(p)?;
                let a = match self.dtype {
                    None => a,
                    Some(want) if a.dtype() == DType::F32 => a.cast(want),
                    Some(want) => {
                        return Err(Error::attr(
                            self.call.op(),
                            "dtype",
                            format!(
                                "\"{want}\" takes <f4 inputs (rounded to {want} on load); input \
                                 {k:?} ({}) is {}",
                                p.display(),
                                a.dtype()
                            ),
                        ))
                    }
                };
                Ok((k.clone(), a))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::OP_NAMES;

    /// Every op `gradops run` dispatches has a CUDA kernel family (moved here from the
    /// library's `cuda::images` tests with the case runner).
    #[test]
    fn every_case_op_has_cuda_kernels() {
        for op in OP_NAMES {
            assert!(
                gradops::cuda::OP_KERNELS.iter().any(|k| k.0 == op),
                "{op} missing from OP_KERNELS"
            );
        }
    }

    /// `"f32_precision"`: absent and `"exact"` are exact, `"tf32"` the TF32 allowance, on
    /// every conv op; anything else names the op, the attribute and the value.
    #[test]
    fn conv_f32_precision_attribute() {
        use super::OpCall;
        use gradops::F32Precision;
        use serde_json::json;
        let prec = |c: OpCall| match c {
            OpCall::Conv2d { attrs }
            | OpCall::Conv2dBackpropInput { attrs, .. }
            | OpCall::Conv2dBackpropFilter { attrs, .. } => attrs.f32_precision,
            _ => panic!("not a conv call"),
        };
        let base = json!({"input_shape": [1, 1, 3, 3], "filter_shape": [1, 1, 1, 1]});
        for op in ["conv2d", "conv2d_backprop_input", "conv2d_backprop_filter"] {
            for (v, want) in [
                (None, F32Precision::Exact),
                (Some("exact"), F32Precision::Exact),
                (Some("tf32"), F32Precision::Tf32),
            ] {
                let mut a = base.clone();
                if let Some(v) = v {
                    a["f32_precision"] = json!(v);
                }
                assert_eq!(
                    prec(OpCall::parse(op, Some(&a)).unwrap()),
                    want,
                    "{op} {v:?}"
                );
            }
            let mut a = base.clone();
            a["f32_precision"] = json!("fp16");
            let e = OpCall::parse(op, Some(&a)).unwrap_err().to_string();
            for w in [op, "f32_precision", "fp16", "tf32"] {
                assert!(e.contains(w), "{e:?} lacks {w:?}");
            }
        }
    }
}
