//! GPU tests: parity of every CUDA op with the CPU path, determinism (two runs bitwise
//! equal) and stream ordering (dependent launches queued without host synchronisation,
//! on one stream and across two). Without a usable GPU each test prints why it skipped
//! (`cargo test -- --nocapture` shows it; GRADOPS_REQUIRE_GPU=1 turns a skip into a
//! failure, for the GPU machine's scripts/gpu-check.sh).

#[cfg(not(gradops_cuda))]
#[test]
fn cuda_tests_skipped_module_not_wired() {
    let msg = "SKIPPED cuda tests: gradops::cuda is not wired into src/lib.rs yet";
    eprintln!("{msg}");
    println!("{msg}");
}

#[cfg(gradops_cuda)]
mod gpu {
    use gradops::cuda::{self, DeviceTensorMut, DeviceTensorRef};
    use gradops::geometry::{CoordinateTransform, NearestMode, ResizeMode};
    use gradops::{
        bf16, f16, Conv2dAttrs, Element, FilterLayout, FilterRef, Layout, MaxPoolAttrs, Padding,
        ResizeAttrs, TensorRef,
    };

    fn gpu_or_skip(test: &str) -> bool {
        match cuda::probe() {
            Ok(info) => {
                eprintln!(
                    "{test}: running on {} (sm_{}{})",
                    info.name, info.compute_capability.0, info.compute_capability.1
                );
                true
            }
            Err(e) => {
                let msg = format!("SKIPPED {test}: {e}");
                assert!(
                    std::env::var("GRADOPS_REQUIRE_GPU").as_deref() != Ok("1"),
                    "GRADOPS_REQUIRE_GPU=1 but {msg}"
                );
                eprintln!("{msg}");
                println!("{msg}");
                false
            }
        }
    }

    struct Rng(u64);
    impl Rng {
        fn f(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        }
        fn vec<T: Element>(&mut self, n: usize) -> Vec<T> {
            (0..n).map(|_| T::from_f64(self.f())).collect()
        }
    }

    fn tol<T: Element>() -> f64 {
        match T::SUFFIX {
            "f16" => 2e-3,
            "bf16" => 1e-2,
            "f32" => 1e-5,
            _ => 1e-10,
        }
    }

    fn rel<T: Element>(a: &[T], b: &[T]) -> f64 {
        assert_eq!(a.len(), b.len());
        let (mut num, mut den) = (0.0, 0.0);
        for (x, y) in a.iter().zip(b) {
            let (x, y) = (x.to_f64(), y.to_f64());
            num += (x - y) * (x - y);
            den += y * y;
        }
        if den == 0.0 {
            num.sqrt()
        } else {
            (num / den).sqrt()
        }
    }

    fn bits<T: Element>(v: &[T]) -> Vec<u64> {
        v.iter().map(|x| x.to_f64().to_bits()).collect()
    }

    fn resize_case<T: Element>(layout: Layout, mode: ResizeMode, ctm: CoordinateTransform) {
        resize_case_at::<T>(layout, mode, ctm, (2, 3, 7, 9), (13, 5));
    }

    /// Grad of the resize (n, c, hi, wi) -> (ho, wo) on the GPU against the CPU path,
    /// twice, bitwise equal.
    fn resize_case_at<T: Element>(
        layout: Layout,
        mode: ResizeMode,
        ctm: CoordinateTransform,
        (n, c, hi, wi): (usize, usize, usize, usize),
        (ho, wo): (usize, usize),
    ) {
        let mut rng = Rng(7 + (hi * 31 + wo) as u64);
        let (xs, dys) = match layout {
            Layout::Nchw => ([n, c, hi, wi], [n, c, ho, wo]),
            Layout::Nhwc => ([n, hi, wi, c], [n, ho, wo, c]),
        };
        let attrs = ResizeAttrs::new(mode)
            .coordinate_transformation_mode(ctm)
            .nearest_mode(NearestMode::RoundPreferFloor);
        let dy: Vec<T> = rng.vec(n * c * ho * wo);
        let plan =
            gradops::ops::resize::plan_resize_grad::<T>("resize_grad", dys, xs, layout, &attrs)
                .unwrap();
        let mut cpu = vec![T::default(); n * c * hi * wi];
        gradops::ops::resize::run_plan_cpu("resize_grad", &plan, layout, &dy, &mut cpu).unwrap();
        let mut g1 = vec![T::default(); cpu.len()];
        let mut g2 = vec![T::default(); cpu.len()];
        cuda::host::run_resize_plan("resize_grad", &plan, layout, &dy, &mut g1).unwrap();
        cuda::host::run_resize_plan("resize_grad", &plan, layout, &dy, &mut g2).unwrap();
        let e = rel(&g1, &cpu);
        let kernel = cuda::resize_grad_kernel::<T>(dys, xs, layout, &attrs).unwrap();
        assert!(
            e <= tol::<T>(),
            "resize_grad {} {layout:?} {mode:?} {ctm:?} {xs:?} <- {dys:?} ({kernel}): rel err {e:e}",
            T::SUFFIX
        );
        assert_eq!(bits(&g1), bits(&g2), "resize_grad not deterministic");
    }

    #[test]
    fn gpu_resize_grad_parity_determinism_or_skipped() {
        if !gpu_or_skip("gpu_resize_grad_parity_determinism_or_skipped") {
            return;
        }
        for layout in [Layout::Nchw, Layout::Nhwc] {
            for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
                for ctm in [
                    CoordinateTransform::HalfPixel,
                    CoordinateTransform::AlignCorners,
                    CoordinateTransform::Asymmetric,
                ] {
                    resize_case::<f16>(layout, mode, ctm);
                    resize_case::<bf16>(layout, mode, ctm);
                    resize_case::<f32>(layout, mode, ctm);
                    resize_case::<f64>(layout, mode, ctm);
                }
            }
        }
    }

    /// Planes with several tiles of `resize_tile` in both directions, 2x and 4x up and
    /// down (the tile height shrinks with the source span), and one plan the tiled kernel
    /// cannot take (a 1-row output from 4000 source rows: `resize_gather` runs it).
    #[test]
    fn gpu_resize_tiles_parity_or_skipped() {
        if !gpu_or_skip("gpu_resize_tiles_parity_or_skipped") {
            return;
        }
        let shapes = [
            ((2, 3, 40, 70), (80, 140)),
            ((1, 5, 128, 96), (64, 48)),
            ((1, 2, 256, 300), (64, 75)),
            ((2, 37, 33, 21), (97, 7)),
        ];
        let ctms = [
            CoordinateTransform::HalfPixel,
            CoordinateTransform::AlignCorners,
            CoordinateTransform::PytorchHalfPixel,
        ];
        for (k, &(x, y)) in shapes.iter().enumerate() {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
                    let ctm = ctms[k % ctms.len()];
                    resize_case_at::<f16>(layout, mode, ctm, x, y);
                    resize_case_at::<bf16>(layout, mode, ctm, x, y);
                    resize_case_at::<f32>(layout, mode, ctm, x, y);
                    resize_case_at::<f64>(layout, mode, ctm, x, y);
                }
            }
        }
        // Every output row gathers all 4000 source rows: no tile height fits.
        let (xs, dys) = ([1, 2, 1, 3], [1, 2, 4000, 3]);
        let attrs = ResizeAttrs::new(ResizeMode::Linear);
        let k = cuda::resize_grad_kernel::<f32>(dys, xs, Layout::Nchw, &attrs).unwrap();
        assert_eq!(k, "resize_gather_f32");
        resize_case_at::<f32>(
            Layout::Nchw,
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            (1, 2, 1, 3),
            (4000, 3),
        );
        let k = cuda::resize_grad_kernel::<f32>(
            [8, 64, 256, 256],
            [8, 64, 128, 128],
            Layout::Nchw,
            &attrs,
        )
        .unwrap();
        assert_eq!(k, "resize_tile_f32");
        // Nearest gradients by integer factors run the box kernel (W3's op); the parity
        // cases below include boxes with 16-byte vectors (2x, c and widths multiples of
        // the vector) and scalar ones, in both layouts.
        let nearest = ResizeAttrs::new(ResizeMode::Nearest)
            .coordinate_transformation_mode(CoordinateTransform::Asymmetric)
            .nearest_mode(NearestMode::Floor);
        let k = cuda::resize_grad_kernel::<f16>(
            [8, 64, 256, 256],
            [8, 64, 128, 128],
            Layout::Nchw,
            &nearest,
        )
        .unwrap();
        assert_eq!(k, "resize_box_f16");
        let k = cuda::resize_grad_kernel::<bf16>(
            [8, 64, 256, 256],
            [8, 64, 128, 128],
            Layout::Nchw,
            &nearest,
        )
        .unwrap();
        assert_eq!(k, "resize_box_bf16");
        for (x, y) in [
            ((2, 8, 12, 16), (24, 32)),
            ((1, 3, 5, 7), (10, 14)),
            ((1, 5, 9, 3), (18, 3)),
        ] {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                let (m, c) = (ResizeMode::Nearest, CoordinateTransform::Asymmetric);
                resize_case_at::<f16>(layout, m, c, x, y);
                resize_case_at::<bf16>(layout, m, c, x, y);
                resize_case_at::<f32>(layout, m, c, x, y);
                resize_case_at::<f64>(layout, m, c, x, y);
            }
        }
    }

    fn conv_case<T: Element>(layout: Layout, stride: usize, groups: usize) {
        let mut rng = Rng(11);
        let (n, ci, h, w, co, k) = (2, 6 * groups, 11, 10, 4 * groups, 3);
        let xs = match layout {
            Layout::Nchw => [n, ci, h, w],
            Layout::Nhwc => [n, h, w, ci],
        };
        let attrs = Conv2dAttrs::default()
            .strides([stride, stride])
            .padding(Padding::Same);
        let wv: Vec<T> = rng.vec(k * k * (ci / groups) * co);
        let fshape = [k, k, ci / groups, co];
        let x: Vec<T> = rng.vec(n * ci * h * w);
        let y_cpu = gradops::conv2d(
            TensorRef::new(&x, xs, layout),
            FilterRef::new(&wv, fshape),
            &attrs,
        )
        .unwrap();
        let y_gpu = cuda::host::conv2d(
            TensorRef::new(&x, xs, layout),
            FilterRef::new(&wv, fshape),
            &attrs,
        )
        .unwrap();
        assert!(
            rel(&y_gpu.data, &y_cpu.data) <= tol::<T>(),
            "conv2d {} {layout:?} s{stride} g{groups}",
            T::SUFFIX
        );
        let dy: Vec<T> = rng.vec(y_cpu.data.len());
        let dyt = TensorRef::new(&dy, y_cpu.shape, layout);
        let dx_cpu =
            gradops::conv2d_backprop_input(dyt, FilterRef::new(&wv, fshape), xs, &attrs).unwrap();
        let d1 = cuda::host::conv2d_backprop_input(dyt, FilterRef::new(&wv, fshape), xs, &attrs)
            .unwrap();
        let d2 = cuda::host::conv2d_backprop_input(dyt, FilterRef::new(&wv, fshape), xs, &attrs)
            .unwrap();
        let e = rel(&d1.data, &dx_cpu.data);
        assert!(
            e <= tol::<T>(),
            "conv2d_backprop_input {} {layout:?} s{stride} g{groups}: {e:e}",
            T::SUFFIX
        );
        assert_eq!(
            bits(&d1.data),
            bits(&d2.data),
            "conv2d_backprop_input not deterministic"
        );
        // The same filter stored OIHW, read in place by the device kernels.
        let cig = ci / groups;
        let mut oihw = vec![T::default(); wv.len()];
        for (i, v) in wv.iter().enumerate() {
            // HWIO index ((ky * k + kx) * cig + c) * co + o
            let (o, c, kx, ky) = (i % co, i / co % cig, i / co / cig % k, i / co / cig / k);
            oihw[((o * cig + c) * k + ky) * k + kx] = *v;
        }
        let oshape = [co, ci / groups, k, k];
        let oattrs = attrs.filter_layout(FilterLayout::Oihw);
        let y_o = cuda::host::conv2d(
            TensorRef::new(&x, xs, layout),
            FilterRef::new(&oihw, oshape),
            &oattrs,
        )
        .unwrap();
        assert_eq!(bits(&y_o.data), bits(&y_gpu.data), "conv2d OIHW vs HWIO");
        let d_o =
            cuda::host::conv2d_backprop_input(dyt, FilterRef::new(&oihw, oshape), xs, &oattrs)
                .unwrap();
        assert_eq!(
            bits(&d_o.data),
            bits(&d1.data),
            "conv2d_backprop_input OIHW vs HWIO"
        );
    }

    #[test]
    fn gpu_conv2d_parity_determinism_or_skipped() {
        if !gpu_or_skip("gpu_conv2d_parity_determinism_or_skipped") {
            return;
        }
        for layout in [Layout::Nchw, Layout::Nhwc] {
            for (s, g) in [(1, 1), (2, 1), (2, 2)] {
                conv_case::<f16>(layout, s, g);
                conv_case::<bf16>(layout, s, g);
                conv_case::<f32>(layout, s, g);
                conv_case::<f64>(layout, s, g);
            }
        }
    }

    /// One conv geometry through conv2d and conv2d_backprop_input on the GPU against the
    /// CPU path, bitwise equal across two runs. On compute_80+ devices f16/bf16 run the
    /// tensor-core kernels (conv2d_*_tc_*), elsewhere the FFMA ones; both meet the dtype's
    /// tolerance.
    #[allow(clippy::too_many_arguments)]
    fn conv_geometry_case<T: Element>(
        layout: Layout,
        fl: FilterLayout,
        (n, cig, cog, groups): (usize, usize, usize, usize),
        (h, w): (usize, usize),
        (kh, kw): (usize, usize),
        stride: [usize; 2],
        dil: [usize; 2],
        padding: Padding,
        seed: u64,
    ) {
        let mut rng = Rng(seed);
        let (ci, co) = (cig * groups, cog * groups);
        let xs = match layout {
            Layout::Nchw => [n, ci, h, w],
            Layout::Nhwc => [n, h, w, ci],
        };
        let fshape = match fl {
            FilterLayout::Hwio => [kh, kw, cig, co],
            FilterLayout::Oihw => [co, cig, kh, kw],
        };
        let attrs = Conv2dAttrs::default()
            .strides(stride)
            .dilations(dil)
            .padding(padding)
            .filter_layout(fl);
        let what = format!(
            "{} {layout:?} {fl:?} n{n} ci{ci} co{co} g{groups} {h}x{w} k{kh}x{kw} s{stride:?} \
             d{dil:?} {padding:?}",
            T::SUFFIX
        );
        let wv: Vec<T> = rng.vec(kh * kw * cig * co);
        let x: Vec<T> = rng.vec(n * ci * h * w);
        let xt = TensorRef::new(&x, xs, layout);
        let y_cpu = gradops::conv2d(xt, FilterRef::new(&wv, fshape), &attrs).unwrap();
        let y1 = cuda::host::conv2d(xt, FilterRef::new(&wv, fshape), &attrs).unwrap();
        let y2 = cuda::host::conv2d(xt, FilterRef::new(&wv, fshape), &attrs).unwrap();
        let e = rel(&y1.data, &y_cpu.data);
        assert!(e <= tol::<T>(), "conv2d {what}: {e:e}");
        assert_eq!(
            bits(&y1.data),
            bits(&y2.data),
            "conv2d {what}: not deterministic"
        );
        let dy: Vec<T> = rng.vec(y_cpu.data.len());
        let dyt = TensorRef::new(&dy, y_cpu.shape, layout);
        let want =
            gradops::conv2d_backprop_input(dyt, FilterRef::new(&wv, fshape), xs, &attrs).unwrap();
        let d1 = cuda::host::conv2d_backprop_input(dyt, FilterRef::new(&wv, fshape), xs, &attrs)
            .unwrap();
        let d2 = cuda::host::conv2d_backprop_input(dyt, FilterRef::new(&wv, fshape), xs, &attrs)
            .unwrap();
        let e = rel(&d1.data, &want.data);
        assert!(e <= tol::<T>(), "conv2d_backprop_input {what}: {e:e}");
        assert_eq!(
            bits(&d1.data),
            bits(&d2.data),
            "conv2d_backprop_input {what}: not deterministic"
        );
    }

    /// The TF32 allowance (`Conv2dAttrs::f32_precision = Tf32`): f32 conv2d and
    /// conv2d_backprop_input within the TF32 tolerance (relative L2 2e-3) of the exact CPU
    /// path and bitwise deterministic; on compute_80+ (plain TF32 on the tensor cores) they
    /// miss f32's 1e-5, so the allowance demonstrably took effect; on compute_75 they equal
    /// the exact call bit for bit (no TF32 there). conv2d_backprop_filter and f64 ignore it
    /// (bitwise equal to the exact call).
    #[test]
    fn gpu_conv2d_tf32_or_skipped() {
        if !gpu_or_skip("gpu_conv2d_tf32_or_skipped") {
            return;
        }
        use gradops::F32Precision;
        const TF32_TOL: f64 = 2e-3;
        let info = cuda::probe().unwrap();
        let arch = cuda::arch_for(info.compute_capability).unwrap();
        let tc = arch >= cuda::CONV_TENSOR_CORE_ARCH;
        eprintln!(
            "f32 TF32 conv on compute_{arch}: {}",
            if tc {
                "plain TF32 tensor cores"
            } else {
                "exact FFMA"
            }
        );
        let mut rng = Rng(0x7f32);
        for (i, &((n, cig, cog, groups), (h, w), (kh, kw), stride, padding)) in [
            ((2, 64, 64, 1), (16, 16), (3, 3), [1, 1], Padding::Same),
            ((2, 64, 128, 1), (15, 17), (3, 3), [2, 2], Padding::Same),
            ((1, 24, 40, 2), (13, 11), (3, 2), [3, 1], Padding::Valid),
            ((1, 5, 70, 1), (9, 10), (1, 1), [1, 1], Padding::Valid),
        ]
        .iter()
        .enumerate()
        {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                let fl = if i % 2 == 0 {
                    FilterLayout::Hwio
                } else {
                    FilterLayout::Oihw
                };
                let (ci, co) = (cig * groups, cog * groups);
                let xs = match layout {
                    Layout::Nchw => [n, ci, h, w],
                    Layout::Nhwc => [n, h, w, ci],
                };
                let fshape = match fl {
                    FilterLayout::Hwio => [kh, kw, cig, co],
                    FilterLayout::Oihw => [co, cig, kh, kw],
                };
                let exact = Conv2dAttrs::default()
                    .strides(stride)
                    .padding(padding)
                    .filter_layout(fl);
                let tf32 = exact.f32_precision(F32Precision::Tf32);
                let what = format!(
                    "{layout:?} {fl:?} n{n} ci{ci} co{co} g{groups} {h}x{w} k{kh}x{kw} s{stride:?}"
                );
                let wv: Vec<f32> = rng.vec(kh * kw * cig * co);
                let x: Vec<f32> = rng.vec(n * ci * h * w);
                let f = FilterRef::new(&wv, fshape);
                let xt = TensorRef::new(&x, xs, layout);
                let y_cpu = gradops::conv2d(xt, f, &exact).unwrap();
                let dy: Vec<f32> = rng.vec(y_cpu.data.len());
                let dyt = TensorRef::new(&dy, y_cpu.shape, layout);
                let dx_cpu = gradops::conv2d_backprop_input(dyt, f, xs, &exact).unwrap();
                // The CPU path ignores the allowance.
                assert_eq!(
                    bits(&gradops::conv2d(xt, f, &tf32).unwrap().data),
                    bits(&y_cpu.data),
                    "cpu conv2d {what}"
                );
                let runs = |attrs: &Conv2dAttrs| {
                    (
                        cuda::host::conv2d(xt, f, attrs).unwrap().data,
                        cuda::host::conv2d_backprop_input(dyt, f, xs, attrs)
                            .unwrap()
                            .data,
                    )
                };
                let (y1, d1) = runs(&tf32);
                let (y2, d2) = runs(&tf32);
                let (ye, de) = runs(&exact);
                for (op, got, again, ex, want) in [
                    ("conv2d", &y1, &y2, &ye, &y_cpu.data),
                    ("conv2d_backprop_input", &d1, &d2, &de, &dx_cpu.data),
                ] {
                    let e = rel(got, want);
                    eprintln!("tf32 {op} {what}: relative L2 {e:e}");
                    assert!(e <= TF32_TOL, "tf32 {op} {what}: {e:e} > {TF32_TOL:e}");
                    assert_eq!(
                        bits(got),
                        bits(again),
                        "tf32 {op} {what}: not deterministic"
                    );
                    if tc {
                        assert!(
                            e > 1e-5,
                            "tf32 {op} {what}: {e:e} within 1e-5: TF32 did not run"
                        );
                    } else {
                        assert_eq!(
                            bits(got),
                            bits(ex),
                            "tf32 {op} {what}: compute_{arch} must stay exact"
                        );
                    }
                }
                // conv2d_backprop_filter has no TF32 path: the allowance changes nothing.
                let dw = |attrs: &Conv2dAttrs| {
                    cuda::host::conv2d_backprop_filter(xt, dyt, fshape, attrs)
                        .unwrap()
                        .data
                };
                assert_eq!(
                    bits(&dw(&tf32)),
                    bits(&dw(&exact)),
                    "conv2d_backprop_filter {what}"
                );
                // f64 ignores it.
                let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
                let w64: Vec<f64> = wv.iter().map(|&v| f64::from(v)).collect();
                let x64t = TensorRef::new(&x64, xs, layout);
                let f64r = FilterRef::new(&w64, fshape);
                assert_eq!(
                    bits(&cuda::host::conv2d(x64t, f64r, &tf32).unwrap().data),
                    bits(&cuda::host::conv2d(x64t, f64r, &exact).unwrap().data),
                    "f64 conv2d {what}"
                );
            }
        }
    }

    /// (n, cig, cog, groups), (h, w), (kh, kw), strides, dilations, padding.
    type ConvGeometry = (
        (usize, usize, usize, usize),
        (usize, usize),
        (usize, usize),
        [usize; 2],
        [usize; 2],
        Padding,
    );

    /// Every dtype, layout, filter layout, stride (1-3), dilation and group count through the
    /// GPU conv forward and backward-data (the tensor-core kernels for f16/bf16 on
    /// compute_80+), with channel counts on the 16-byte cp.async path (multiples of 8) and
    /// off it, past one 64-channel tile, and with several pixel tiles per phase.
    #[test]
    fn gpu_conv2d_every_geometry_or_skipped() {
        if !gpu_or_skip("gpu_conv2d_every_geometry_or_skipped") {
            return;
        }
        let info = cuda::probe().unwrap();
        let arch = cuda::arch_for(info.compute_capability).unwrap();
        for d in ["f16", "bf16", "f32", "f64"] {
            eprintln!(
                "conv {d} on compute_{arch}: {}",
                if cuda::conv_uses_tensor_cores(d, arch) {
                    "tensor core"
                } else {
                    "simt"
                }
            );
        }
        let geometries: &[ConvGeometry] = &[
            (
                (2, 64, 64, 1),
                (16, 16),
                (3, 3),
                [1, 1],
                [1, 1],
                Padding::Same,
            ),
            (
                (2, 64, 128, 1),
                (15, 17),
                (3, 3),
                [2, 2],
                [1, 1],
                Padding::Same,
            ),
            (
                (1, 24, 40, 2),
                (13, 11),
                (3, 3),
                [3, 3],
                [1, 1],
                Padding::Valid,
            ),
            (
                (1, 16, 16, 3),
                (12, 12),
                (3, 2),
                [1, 2],
                [2, 2],
                Padding::Same,
            ),
            (
                (2, 5, 7, 1),
                (9, 10),
                (2, 3),
                [2, 3],
                [2, 1],
                Padding::Explicit([[1, 2], [0, 1]]),
            ),
            (
                (1, 72, 70, 1),
                (7, 9),
                (1, 1),
                [1, 1],
                [1, 1],
                Padding::Valid,
            ),
            (
                (1, 3, 8, 2),
                (10, 9),
                (5, 5),
                [3, 2],
                [1, 2],
                Padding::Explicit([[2, 2], [1, 0]]),
            ),
        ];
        for (i, &(ch, hw, k, s, dil, pad)) in geometries.iter().enumerate() {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                for fl in [FilterLayout::Hwio, FilterLayout::Oihw] {
                    let seed = 100 + i as u64;
                    conv_geometry_case::<f16>(layout, fl, ch, hw, k, s, dil, pad, seed);
                    conv_geometry_case::<bf16>(layout, fl, ch, hw, k, s, dil, pad, seed);
                    conv_geometry_case::<f32>(layout, fl, ch, hw, k, s, dil, pad, seed);
                    conv_geometry_case::<f64>(layout, fl, ch, hw, k, s, dil, pad, seed);
                }
            }
        }
    }

    /// conv2d_backprop_filter on the GPU (host mirror) against the CPU path, and bitwise
    /// equal across two runs. `big` has many reduction splits.
    #[allow(clippy::too_many_arguments)]
    fn filter_case<T: Element>(
        layout: Layout,
        fl: gradops::FilterLayout,
        stride: usize,
        dil: usize,
        groups: usize,
        big: bool,
    ) {
        let mut rng = Rng(23);
        // The big case's rows (32) and planes whole 16-byte runs in every type: NCHW's
        // tensor-core partial sums load x and dy 16 bytes at a time (at unit stride for x).
        let (n, ci, h, w, co, k): (usize, usize, usize, usize, usize, usize) = if big {
            (4, 32 * groups, 28, 32, 48 * groups, 3)
        } else {
            (2, 5 * groups, 11, 10, 3 * groups, 3)
        };
        let shape = |c: usize, h: usize, w: usize| match layout {
            Layout::Nchw => [n, c, h, w],
            Layout::Nhwc => [n, h, w, c],
        };
        let attrs = Conv2dAttrs::default()
            .strides([stride, stride])
            .dilations([dil, dil])
            .padding(Padding::Same)
            .filter_layout(fl);
        let fshape = match fl {
            gradops::FilterLayout::Hwio => [k, k, ci / groups, co],
            gradops::FilterLayout::Oihw => [co, ci / groups, k, k],
        };
        let (ho, wo) = (h.div_ceil(stride), w.div_ceil(stride));
        let x: Vec<T> = rng.vec(n * ci * h * w);
        let dy: Vec<T> = rng.vec(n * co * ho * wo);
        let (xt, dyt) = (
            TensorRef::new(&x, shape(ci, h, w), layout),
            TensorRef::new(&dy, shape(co, ho, wo), layout),
        );
        let want = gradops::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let d1 = cuda::host::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let d2 = cuda::host::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let what = format!(
            "conv2d_backprop_filter {} {layout:?} {fl:?} s{stride} d{dil} g{groups} big={big}",
            T::SUFFIX
        );
        let e = rel(&d1.data, &want.data);
        assert!(e <= tol::<T>(), "{what}: {e:e}");
        assert_eq!(bits(&d1.data), bits(&d2.data), "{what}: not deterministic");
    }

    #[test]
    fn gpu_conv2d_backprop_filter_parity_determinism_or_skipped() {
        if !gpu_or_skip("gpu_conv2d_backprop_filter_parity_determinism_or_skipped") {
            return;
        }
        use gradops::FilterLayout::{Hwio, Oihw};
        for layout in [Layout::Nchw, Layout::Nhwc] {
            for (fl, s, d, g, big) in [
                (Hwio, 1, 1, 1, false),
                (Oihw, 2, 1, 1, false),
                (Hwio, 1, 2, 2, false),
                (Oihw, 2, 1, 3, false),
                (Hwio, 1, 1, 1, true),
                (Oihw, 2, 1, 2, true),
            ] {
                filter_case::<f16>(layout, fl, s, d, g, big);
                filter_case::<gradops::bf16>(layout, fl, s, d, g, big);
                filter_case::<f32>(layout, fl, s, d, g, big);
                filter_case::<f64>(layout, fl, s, d, g, big);
            }
        }
    }

    /// The device-buffer API (f32, on a fresh stream, OIHW output, many splits) gives the
    /// host mirror's bits.
    #[test]
    fn gpu_conv2d_backprop_filter_device_api_or_skipped() {
        if !gpu_or_skip("gpu_conv2d_backprop_filter_device_api_or_skipped") {
            return;
        }
        let mut rng = Rng(29);
        let (xs, dys, fshape) = ([4, 28, 28, 64], [4, 14, 14, 32], [32, 32, 3, 3]);
        let attrs = Conv2dAttrs::default()
            .strides([2, 2])
            .padding(Padding::Same)
            .filter_layout(gradops::FilterLayout::Oihw);
        let x: Vec<f32> = rng.vec(xs.iter().product());
        let dy: Vec<f32> = rng.vec(dys.iter().product());
        let (xt, dyt) = (
            TensorRef::new(&x, xs, Layout::Nhwc),
            TensorRef::new(&dy, dys, Layout::Nhwc),
        );
        let host = cuda::host::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let cpu = gradops::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        assert!(rel(&host.data, &cpu.data) <= 1e-5);
        let s = cuda::context().unwrap().new_stream().unwrap();
        let (dx, ddy) = (s.clone_htod(&x).unwrap(), s.clone_htod(&dy).unwrap());
        let mut ddw = s.alloc_zeros::<f32>(host.data.len()).unwrap();
        cuda::conv2d_backprop_filter_into(
            &s,
            DeviceTensorRef::new(dx.as_view(), xs, Layout::Nhwc).unwrap(),
            DeviceTensorRef::new(ddy.as_view(), dys, Layout::Nhwc).unwrap(),
            &attrs,
            DeviceTensorMut::new(ddw.as_view_mut(), fshape, Layout::Nhwc).unwrap(),
        )
        .unwrap();
        let got = s.clone_dtoh(&ddw).unwrap();
        assert_eq!(bits(&got), bits(&host.data), "device API differs");
    }

    fn pool_case<T: Element>(layout: Layout) {
        let attrs = MaxPoolAttrs::new([3, 3])
            .strides([2, 2])
            .padding(Padding::Same);
        pool_case_at::<T>(layout, (2, 3, 12, 9), &attrs);
    }

    /// Forward, recomputed grad and stored-argmax grad of the pool `attrs` over
    /// (n, c, h, w) on the GPU against the CPU path.
    fn pool_case_at<T: Element>(
        layout: Layout,
        (n, c, h, w): (usize, usize, usize, usize),
        attrs: &MaxPoolAttrs,
    ) {
        let mut rng = Rng(13 + (h * 131 + w * 7 + c) as u64);
        let xs = match layout {
            Layout::Nchw => [n, c, h, w],
            Layout::Nhwc => [n, h, w, c],
        };
        let attrs = *attrs;
        // Few distinct values: ties are common, so the TF first-cell rule is exercised.
        let x: Vec<T> = rng
            .vec::<T>(n * c * h * w)
            .into_iter()
            .map(|v| T::from_f64((v.to_f64() * 4.0).round() / 4.0))
            .collect();
        let xt = TensorRef::new(&x, xs, layout);
        let (y_cpu, am_cpu) = gradops::max_pool(xt, &attrs, true).unwrap();
        let (y_gpu, am_gpu) = cuda::host::max_pool(xt, &attrs, true).unwrap();
        assert_eq!(
            bits(&y_gpu.data),
            bits(&y_cpu.data),
            "max_pool y {}",
            T::SUFFIX
        );
        assert_eq!(am_gpu, am_cpu, "max_pool argmax {}", T::SUFFIX);
        let dy: Vec<T> = rng.vec(y_cpu.data.len());
        let dyt = TensorRef::new(&dy, y_cpu.shape, layout);
        let g_cpu = gradops::max_pool_grad(dyt, xt, None, &attrs).unwrap();
        let g1 = cuda::host::max_pool_grad(dyt, xt, None, &attrs).unwrap();
        let g2 = cuda::host::max_pool_grad_with_argmax(dyt, am_gpu.as_ref().unwrap(), xs, &attrs)
            .unwrap();
        let kernel =
            cuda::max_pool_kernel::<T>(xs, layout, &attrs, cuda::PoolKernel::Grad).unwrap();
        assert!(
            rel(&g1.data, &g_cpu.data) <= tol::<T>(),
            "max_pool_grad {} {layout:?} {xs:?} ({kernel})",
            T::SUFFIX
        );
        assert_eq!(
            bits(&g1.data),
            bits(&g2.data),
            "recompute vs stored argmax differ"
        );
    }

    #[test]
    fn gpu_max_pool_parity_determinism_or_skipped() {
        if !gpu_or_skip("gpu_max_pool_parity_determinism_or_skipped") {
            return;
        }
        for layout in [Layout::Nchw, Layout::Nhwc] {
            pool_case::<f16>(layout);
            pool_case::<bf16>(layout);
            pool_case::<f32>(layout);
            pool_case::<f64>(layout);
        }
    }

    /// Images with several tiles in every direction (channel tiles in NHWC), the W6 window
    /// and larger overlapping ones, and a window too large for any tile (the generic
    /// kernels run it).
    #[test]
    fn gpu_max_pool_tiles_parity_or_skipped() {
        if !gpu_or_skip("gpu_max_pool_tiles_parity_or_skipped") {
            return;
        }
        let w6 = MaxPoolAttrs::new([3, 3])
            .strides([2, 2])
            .padding(Padding::Same);
        let big = MaxPoolAttrs::new([5, 4])
            .strides([1, 3])
            .padding(Padding::Same);
        let wide = MaxPoolAttrs::new([7, 7])
            .strides([3, 3])
            .padding(Padding::Valid);
        let cases = [
            ((2, 4, 112, 112), w6),
            ((1, 40, 30, 50), w6),
            ((1, 3, 45, 140), big),
            ((2, 5, 31, 300), wide),
        ];
        for (dims, attrs) in cases {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                pool_case_at::<f16>(layout, dims, &attrs);
                pool_case_at::<bf16>(layout, dims, &attrs);
                pool_case_at::<f32>(layout, dims, &attrs);
                pool_case_at::<f64>(layout, dims, &attrs);
            }
        }
        let huge = MaxPoolAttrs::new([90, 90])
            .strides([1, 1])
            .padding(Padding::Valid);
        let k = cuda::max_pool_kernel::<f64>(
            [1, 1, 96, 96],
            Layout::Nchw,
            &huge,
            cuda::PoolKernel::Grad,
        )
        .unwrap();
        assert_eq!(k, "max_pool_grad_f64");
        pool_case_at::<f64>(Layout::Nchw, (1, 1, 96, 96), &huge);
        let k = cuda::max_pool_kernel::<f32>(
            [32, 64, 112, 112],
            Layout::Nchw,
            &w6,
            cuda::PoolKernel::GradStored,
        )
        .unwrap();
        assert_eq!(k, "max_pool_tile_k3_grad_argmax_f32");
        let k = cuda::max_pool_kernel::<f32>(
            [32, 64, 112, 112],
            Layout::Nchw,
            &w6,
            cuda::PoolKernel::Forward,
        )
        .unwrap();
        assert_eq!(k, "max_pool_direct_k3_forward_f32");
    }

    /// resize_grad -> max_pool_grad chained on device buffers with no host sync between,
    /// first on one stream, then producer and consumer on two different streams.
    #[test]
    fn gpu_stream_ordering_or_skipped() {
        if !gpu_or_skip("gpu_stream_ordering_or_skipped") {
            return;
        }
        let ctx = cuda::context().unwrap();
        let (n, c, hi, wi, ho, wo) = (2usize, 4usize, 64usize, 48usize, 128usize, 96usize);
        let layout = Layout::Nchw;
        let attrs = ResizeAttrs::new(ResizeMode::Linear);
        let pool = MaxPoolAttrs::new([2, 2]).strides([2, 2]);
        let mut rng = Rng(17);
        let dy: Vec<f32> = rng.vec(n * c * ho * wo);
        let x: Vec<f32> = rng.vec(n * c * hi * wi);
        // CPU reference of the chain: g = resize_grad(dy); d = max_pool_grad(dy = pooled g, x)
        let plan = gradops::ops::resize::plan_resize_grad::<f32>(
            "resize_grad",
            [n, c, ho, wo],
            [n, c, hi, wi],
            layout,
            &attrs,
        )
        .unwrap();
        let mut g = vec![0f32; n * c * hi * wi];
        gradops::ops::resize::run_plan_cpu("resize_grad", &plan, layout, &dy, &mut g).unwrap();
        // Use the first quarter of g as the pool's dy ([n, c, hi/2, wi/2]).
        let pdy_len = n * c * (hi / 2) * (wi / 2);
        let want = gradops::max_pool_grad(
            TensorRef::new(&g[..pdy_len], [n, c, hi / 2, wi / 2], layout),
            TensorRef::new(&x, [n, c, hi, wi], layout),
            None,
            &pool,
        )
        .unwrap();
        for two_streams in [false, true] {
            let s1 = ctx.new_stream().unwrap();
            let s2 = if two_streams {
                ctx.new_stream().unwrap()
            } else {
                s1.clone()
            };
            let ddy = s1.clone_htod(&dy).unwrap();
            let dx_host = s1.clone_htod(&x).unwrap();
            let mut dg = s1.alloc_zeros::<f32>(g.len()).unwrap();
            let mut dout = s2.alloc_zeros::<f32>(x.len()).unwrap();
            cuda::resize_grad_into(
                &s1,
                DeviceTensorRef::new(ddy.as_view(), [n, c, ho, wo], layout).unwrap(),
                &attrs,
                DeviceTensorMut::new(dg.as_view_mut(), [n, c, hi, wi], layout).unwrap(),
            )
            .unwrap();
            // The pool's dy is an offset-free prefix view of g; x and dx whole buffers.
            cuda::max_pool_grad_into(
                &s2,
                DeviceTensorRef::new(dg.slice(0..pdy_len), [n, c, hi / 2, wi / 2], layout).unwrap(),
                DeviceTensorRef::new(dx_host.as_view(), [n, c, hi, wi], layout).unwrap(),
                None,
                &pool,
                DeviceTensorMut::new(dout.as_view_mut(), [n, c, hi, wi], layout).unwrap(),
            )
            .unwrap();
            let got = s2.clone_dtoh(&dout).unwrap();
            assert!(
                rel(&got, &want.data) <= 1e-5,
                "stream ordering (two_streams={two_streams})"
            );
        }
    }

    /// Empty inputs reaching the kernels (found by the property tests' CUDA variants on an
    /// H100: an illegal address): an empty `dy` (an output axis of size 0) or an empty batch
    /// makes every output element an empty sum. Each output is poisoned (NaN) first and must
    /// come back all zeros, as on the CPU.
    #[test]
    fn gpu_empty_inputs_zero_fill_or_skipped() {
        if !gpu_or_skip("gpu_empty_inputs_zero_fill_or_skipped") {
            return;
        }
        let st = cuda::stream().unwrap();
        let nan = |n: usize| st.clone_htod(&vec![f32::NAN; n]).unwrap();
        let zeros = |what: &str, got: Vec<f32>, want: &[f32]| {
            assert!(got.iter().all(|&v| v == 0.0), "{what}: {got:?}");
            assert_eq!(got.len(), want.len(), "{what}");
            assert!(want.iter().all(|&v| v == 0.0), "{what}: the CPU differs");
        };
        let empty = st.clone_htod(&[0.0f32]).unwrap(); // a valid allocation, viewed as 0 long
        let ev = |shape: [usize; 4], layout| {
            DeviceTensorRef::new(empty.slice(0..0), shape, layout).unwrap()
        };

        // resize_grad, nearest half_pixel ceil: x [2, 6, 5, 1] NHWC, dy [2, 4, 0, 1].
        let (xs, dys) = ([2, 6, 5, 1], [2, 4, 0, 1]);
        let attrs = ResizeAttrs::new(ResizeMode::Nearest)
            .coordinate_transformation_mode(CoordinateTransform::HalfPixel)
            .nearest_mode(NearestMode::Ceil);
        let want =
            gradops::resize_grad(TensorRef::new(&[], dys, Layout::Nhwc), xs, &attrs).unwrap();
        let mut dx = nan(60);
        cuda::resize_grad_into(
            &st,
            ev(dys, Layout::Nhwc),
            &attrs,
            DeviceTensorMut::new(dx.slice_mut(0..60), xs, Layout::Nhwc).unwrap(),
        )
        .unwrap();
        zeros("resize_grad", st.clone_dtoh(&dx).unwrap(), &want.data);

        // max_pool_grad: x [1, 2, 1, 2] NCHW, window 2x4, strides (2, 1), explicit padding
        // [[1, 1], [1, 0]], ceil rounding: dy [1, 2, 2, 0].
        let (xs, dys) = ([1, 2, 1, 2], [1, 2, 2, 0]);
        let attrs = MaxPoolAttrs::new([2, 4])
            .strides([2, 1])
            .padding(Padding::Explicit([[1, 1], [1, 0]]))
            .dim_rounding(Some(gradops::DimRounding::Ceil));
        let x = [1.0f32, -2.0, 3.0, 0.5];
        let want = gradops::max_pool_grad(
            TensorRef::new(&[], dys, Layout::Nchw),
            TensorRef::new(&x, xs, Layout::Nchw),
            None,
            &attrs,
        )
        .unwrap();
        let xd = st.clone_htod(&x).unwrap();
        let mut dx = nan(4);
        cuda::max_pool_grad_into(
            &st,
            ev(dys, Layout::Nchw),
            DeviceTensorRef::new(xd.as_view(), xs, Layout::Nchw).unwrap(),
            None,
            &attrs,
            DeviceTensorMut::new(dx.slice_mut(0..4), xs, Layout::Nchw).unwrap(),
        )
        .unwrap();
        zeros("max_pool_grad", st.clone_dtoh(&dx).unwrap(), &want.data);

        // conv2d_backprop_input and conv2d_backprop_filter with an empty batch: x [0, 3, 5, 5],
        // dy [0, 4, 5, 5], filter 3x3x3x4 (HWIO), SAME.
        let (xs, dys, fs) = ([0, 3, 5, 5], [0, 4, 5, 5], [3, 3, 3, 4]);
        let attrs = Conv2dAttrs::default().padding(Padding::Same);
        let w: Vec<f32> = Rng(5).vec(3 * 3 * 3 * 4);
        let wd = st.clone_htod(&w).unwrap();
        let want = gradops::conv2d_backprop_filter(
            TensorRef::new(&[], xs, Layout::Nchw),
            TensorRef::new(&[], dys, Layout::Nchw),
            fs,
            &attrs,
        )
        .unwrap();
        let mut dw = nan(w.len());
        cuda::conv2d_backprop_filter_into(
            &st,
            ev(xs, Layout::Nchw),
            ev(dys, Layout::Nchw),
            &attrs,
            DeviceTensorMut::new(dw.slice_mut(0..w.len()), fs, Layout::Nchw).unwrap(),
        )
        .unwrap();
        zeros(
            "conv2d_backprop_filter",
            st.clone_dtoh(&dw).unwrap(),
            &want.data,
        );
        // An empty dy with a non-empty dx: out of a 2x2 input, a VALID 3x3 window has no
        // output (dy [1, 4, 0, 0]); dx [1, 3, 2, 2] is all zeros.
        let (xs, dys) = ([1, 3, 2, 2], [1, 4, 0, 0]);
        let valid = Conv2dAttrs::default();
        let want = gradops::conv2d_backprop_input(
            TensorRef::new(&[], dys, Layout::Nchw),
            FilterRef::new(&w, fs),
            xs,
            &valid,
        )
        .unwrap();
        let mut dx = nan(12);
        cuda::conv2d_backprop_input_into(
            &st,
            ev(dys, Layout::Nchw),
            cuda::DeviceFilterRef::new(wd.as_view(), fs).unwrap(),
            &valid,
            DeviceTensorMut::new(dx.slice_mut(0..12), xs, Layout::Nchw).unwrap(),
        )
        .unwrap();
        zeros(
            "conv2d_backprop_input",
            st.clone_dtoh(&dx).unwrap(),
            &want.data,
        );
    }

    /// The device API itself: offset views (inputs and outputs inside larger, poisoned
    /// buffers, at addresses that are not 16-byte aligned), `_into` against the allocating
    /// variants, the TF resize grads, the OIHW filter, a max pool with no argmax buffer on
    /// the generic kernel, and the typed errors for a wrong length, shape or layout.
    #[test]
    fn gpu_device_api_views_and_errors_or_skipped() {
        if !gpu_or_skip("gpu_device_api_views_and_errors_or_skipped") {
            return;
        }
        let st = cuda::stream().unwrap();
        let layout = Layout::Nhwc;
        let mut rng = Rng(23);
        // resize_grad: dy [2, 16, 12, 8] -> dx [2, 8, 6, 8] (nearest 2x: the box kernel).
        let (dys, xs) = ([2, 16, 12, 8], [2, 8, 6, 8]);
        let (dyn_, xn) = (2 * 16 * 12 * 8, 2 * 8 * 6 * 8);
        let attrs = ResizeAttrs::new(ResizeMode::Nearest)
            .coordinate_transformation_mode(CoordinateTransform::Asymmetric)
            .nearest_mode(NearestMode::Floor);
        let dy: Vec<f32> = rng.vec(dyn_);
        let want = gradops::resize_grad(TensorRef::new(&dy, dys, layout), xs, &attrs).unwrap();
        let off = 3; // 12 bytes: not 16-byte aligned
        let mut padded = vec![f32::NAN; off + dyn_ + 5];
        padded[off..off + dyn_].copy_from_slice(&dy);
        let big_dy = st.clone_htod(&padded).unwrap();
        let mut big_dx = st.clone_htod(&vec![-7.0f32; off + xn + 5]).unwrap();
        let dyv = DeviceTensorRef::new(big_dy.slice(off..off + dyn_), dys, layout).unwrap();
        cuda::resize_grad_into(
            &st,
            dyv.clone(),
            &attrs,
            DeviceTensorMut::new(big_dx.slice_mut(off..off + xn), xs, layout).unwrap(),
        )
        .unwrap();
        let got = st.clone_dtoh(&big_dx).unwrap();
        let e = rel(&got[off..off + xn], &want.data);
        assert!(e <= 1e-6, "offset views: rel err {e:e}");
        assert!(
            got[..off]
                .iter()
                .chain(&got[off + xn..])
                .all(|&v| v == -7.0),
            "a write outside the output view"
        );
        let alloc = cuda::resize_grad(&st, dyv.clone(), xs, &attrs).unwrap();
        assert_eq!(alloc.shape(), xs);
        let e = rel(&alloc.to_host().unwrap().data, &want.data);
        assert!(e <= 1e-6, "allocating resize_grad: rel err {e:e}");

        // TF resize grads.
        let tf = gradops::TfResizeAttrs::default().half_pixel_centers(true);
        let want =
            gradops::resize_bilinear_grad(TensorRef::new(&dy, dys, layout), xs, &tf).unwrap();
        let got = cuda::resize_bilinear_grad(&st, dyv.clone(), xs, &tf).unwrap();
        assert!(rel(&got.to_host().unwrap().data, &want.data) <= 1e-5);
        let want = gradops::resize_nearest_neighbor_grad(TensorRef::new(&dy, dys, layout), xs, &tf)
            .unwrap();
        let got = cuda::resize_nearest_neighbor_grad(&st, dyv.clone(), xs, &tf).unwrap();
        assert!(rel(&got.to_host().unwrap().data, &want.data) <= 1e-5);

        // Errors: wrong length, wrong output shape, mismatched layout.
        let e = DeviceTensorRef::new(big_dy.slice(0..10), dys, layout).unwrap_err();
        assert!(matches!(e, gradops::Error::BufferLen { .. }), "{e}");
        // x's channels (NHWC: the last axis) differ from dy's.
        let mut dx_wrong = cuda::DeviceTensor::<f32>::zeros(&st, [2, 8, 6, 4], layout).unwrap();
        let e = cuda::resize_grad_into(&st, dyv.clone(), &attrs, dx_wrong.view_mut()).unwrap_err();
        assert!(
            matches!(
                e,
                gradops::Error::Shape {
                    op: "resize_grad",
                    arg: "dy",
                    ..
                }
            ),
            "{e}"
        );
        let mut dx_nchw = cuda::DeviceTensor::<f32>::zeros(&st, xs, Layout::Nchw).unwrap();
        let e = cuda::resize_grad_into(&st, dyv, &attrs, dx_nchw.view_mut()).unwrap_err();
        assert!(matches!(e, gradops::Error::Shape { arg: "dx", .. }), "{e}");

        // conv2d_backprop_input with an OIHW filter, _into vs allocating.
        let (n, ci, co, h, w) = (2, 5, 7, 9, 8);
        let cattrs = Conv2dAttrs::default()
            .padding(Padding::Same)
            .strides([2, 1])
            .filter_layout(FilterLayout::Oihw);
        let f: Vec<f64> = rng.vec(co * ci * 3 * 3);
        let fshape = [co, ci, 3, 3];
        let x_shape = [n, h, w, ci];
        let y_cpu = gradops::conv2d(
            TensorRef::new(&rng.vec::<f64>(n * h * w * ci), x_shape, layout),
            FilterRef::new(&f, fshape),
            &cattrs,
        )
        .unwrap();
        let dy: Vec<f64> = rng.vec(y_cpu.data.len());
        let want = gradops::conv2d_backprop_input(
            TensorRef::new(&dy, y_cpu.shape, layout),
            FilterRef::new(&f, fshape),
            x_shape,
            &cattrs,
        )
        .unwrap();
        let ddy =
            cuda::DeviceTensor::from_host(&st, TensorRef::new(&dy, y_cpu.shape, layout)).unwrap();
        let dfl = st.clone_htod(&f).unwrap();
        let filter = cuda::DeviceFilterRef::new(dfl.as_view(), fshape).unwrap();
        let got =
            cuda::conv2d_backprop_input(&st, ddy.view(), filter.clone(), x_shape, &cattrs).unwrap();
        assert!(rel(&got.to_host().unwrap().data, &want.data) <= 1e-10);
        let mut into = cuda::DeviceTensor::<f64>::zeros(&st, x_shape, layout).unwrap();
        cuda::conv2d_backprop_input_into(&st, ddy.view(), filter, &cattrs, into.view_mut())
            .unwrap();
        assert_eq!(
            bits(&into.to_host().unwrap().data),
            bits(&got.to_host().unwrap().data)
        );

        // A window too large for any tile: the generic forward, without an argmax buffer.
        let huge = MaxPoolAttrs::new([90, 90]).padding(Padding::Valid);
        let xs = [1, 1, 96, 96];
        let k = cuda::max_pool_kernel::<f64>(xs, Layout::Nchw, &huge, cuda::PoolKernel::Forward)
            .unwrap();
        assert_eq!(k, "max_pool_forward_f64");
        let xv: Vec<f64> = rng.vec(96 * 96);
        let xt = TensorRef::new(&xv, xs, Layout::Nchw);
        let (y_cpu, _) = gradops::max_pool(xt, &huge, false).unwrap();
        let dx = cuda::DeviceTensor::from_host(&st, xt).unwrap();
        let (y, am) = cuda::max_pool(&st, dx.view(), &huge, false).unwrap();
        assert!(am.is_none());
        assert_eq!(
            bits(&y.to_host().unwrap().data),
            bits(&y_cpu.data),
            "max_pool without argmax ({k})"
        );
    }

    /// The emulator's wgmma model on the hardware: emu/wgmma_probe.cu (the very kernels
    /// `emulated_wgmma_model` runs in the emulator, compiled for compute_90a by
    /// `scripts/gpu-check.sh --prebuild`, path in `GRADOPS_WGMMA_PROBE_PTX`) on an H100/H200,
    /// bit for bit against A * B + C computed here on small integers (exact in any order):
    /// one warpgroup's m64n64k16 f16/bf16 on K-major operands in the 64-byte swizzle, k 16
    /// and 32 (the second from 32 bytes into each row), B also N-major (imm-trans-b, the
    /// forward's), and m64n64k8 tf32, k 8 and 16. Every wgmma conv kernel was proven in the
    /// emulator against this model: where they fail on a GPU, this test says whether the
    /// model (descriptors, swizzle, fragments) or a kernel is wrong.
    #[test]
    fn wgmma_model_on_hardware() {
        use cuda::cudarc::driver::{LaunchConfig, PushKernelArg};
        use cuda::cudarc::nvrtc::Ptx;
        if !gpu_or_skip("wgmma_model_on_hardware") {
            return;
        }
        let cc = cuda::probe().unwrap().compute_capability;
        if cc != (9, 0) {
            println!("SKIPPED wgmma_model_on_hardware: compute capability {cc:?}, not 9.0");
            return;
        }
        let Ok(path) = std::env::var("GRADOPS_WGMMA_PROBE_PTX") else {
            println!(
                "SKIPPED wgmma_model_on_hardware: GRADOPS_WGMMA_PROBE_PTX unset (the probe's \
                 PTX, built by scripts/gpu-check.sh)"
            );
            return;
        };
        let ptx = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let st = cuda::stream().unwrap();
        let module = st.context().load_module(Ptx::from_src(ptx)).unwrap();
        let mut rng = Rng(0x5eed_0c91);
        let mut int = |lo: f64, hi: f64| (lo + (rng.f() + 1.0) / 2.0 * (hi - lo + 1.0)).floor();
        // (kernel, element bytes, k of the product, block threads, the kernel's two i32
        // arguments). The wgmma tests: k32 (two k steps) and bmn (bit 0 B N-major, bit 1 A
        // M-major, bit 2 A from registers (tf32) or, 16-bit, K-major without swizzle from a
        // row inside an 8-row group, as the halo tile reads it), one warpgroup.
        let mut cases: Vec<(&str, usize, usize, u32, i32, i32)> = Vec::new();
        for (kernel, bytes, kstep, bmns) in [
            ("emu_wgmma_test_f16", 2, 16, &[0, 1, 2, 3, 4, 5][..]),
            ("emu_wgmma_test_bf16", 2, 16, &[0, 1, 2, 3, 4, 5][..]),
            ("emu_wgmma_test_tf32", 4, 8, &[0, 4][..]),
        ] {
            for k32 in [0i32, 1] {
                for &bmn in bmns {
                    cases.push((kernel, bytes, kstep * (1 + k32 as usize), 128, k32, bmn));
                }
            }
        }
        // The warp-specialized pipeline's skeleton (emu_wgmma_pipe_test_f16: a producer warp,
        // three stages, mbarriers, as emulated_mbarrier_pipeline_model runs it): nk k32
        // steps, flags 0 (no mutation); 160 threads. A wait that never completes on the
        // hardware leaves D all NaN (its waits are bounded).
        for nk in [1i32, 3, 4, 7] {
            cases.push(("emu_wgmma_pipe_test_f16", 2, 32 * nk as usize, 160, nk, 0));
        }
        let mut runs = 0;
        for (kernel, bytes, kk, threads, arg0, arg1) in cases {
            let f = module.load_function(kernel).unwrap();
            // A [m][k], B [n][k], C [m][n]: small integers, exact in every type.
            let a: Vec<f64> = (0..64 * kk).map(|_| int(-3.0, 3.0)).collect();
            let b: Vec<f64> = (0..64 * kk).map(|_| int(-3.0, 3.0)).collect();
            let c: Vec<f32> = (0..64 * 64).map(|_| int(-8.0, 8.0) as f32).collect();
            let enc = |v: &[f64]| -> Vec<u8> {
                v.iter()
                    .flat_map(|&x| match (bytes, kernel) {
                        (4, _) => (x as f32).to_ne_bytes().to_vec(),
                        (_, "emu_wgmma_test_bf16") => {
                            bf16::from_f64(x).to_bits().to_ne_bytes().to_vec()
                        }
                        _ => f16::from_f64(x).to_bits().to_ne_bytes().to_vec(),
                    })
                    .collect()
            };
            let (da, db) = (
                st.clone_htod(&enc(&a)).unwrap(),
                st.clone_htod(&enc(&b)).unwrap(),
            );
            let dc = st.clone_htod(&c).unwrap();
            // D poisoned: an element the kernel does not write fails.
            let mut dd = st.clone_htod(&vec![f32::NAN; 64 * 64]).unwrap();
            let mut l = st.launch_builder(&f);
            l.arg(&da)
                .arg(&db)
                .arg(&dc)
                .arg(&mut dd)
                .arg(&arg0)
                .arg(&arg1);
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            // SAFETY: the kernel's parameters are four device pointers (A and B of 64 x kk
            // elements, C and D of 64 x 64 f32: the buffers above) and two i32, as
            // emu/wgmma_probe.cu declares (the pipeline's flags 0: no mutation); its block
            // size, its shared memory static.
            unsafe { l.launch(cfg) }.unwrap();
            let d = st.clone_dtoh(&dd).unwrap();
            st.synchronize().unwrap();
            for m in 0..64 {
                for n in 0..64 {
                    let want = c[m * 64 + n] as f64
                        + (0..kk).map(|k| a[m * kk + k] * b[n * kk + k]).sum::<f64>();
                    assert_eq!(
                        d[m * 64 + n] as f64,
                        want,
                        "{kernel} k={kk} ({arg0}, {arg1}): D[{m}][{n}]"
                    );
                }
            }
            runs += 1;
        }
        assert_eq!(runs, 22);
        println!(
            "wgmma_model_on_hardware: {runs} wgmma cases bit for bit on the hardware (4 of them \
             through the mbarrier pipeline)"
        );
    }
}

/// The training example's GPU loop (`examples/train/gpu.rs`): device-resident steps agree with
/// the CPU loop step by step, the loss falls, and two runs are bitwise identical.
#[cfg(gradops_cuda)]
#[path = "../examples/train/model.rs"]
mod model;
#[cfg(gradops_cuda)]
#[path = "../examples/train/gpu.rs"]
mod train_gpu;

#[cfg(gradops_cuda)]
#[test]
fn training_example_gpu_matches_cpu() {
    use model::{Attrs, Config, Data, Params};
    let test = "training_example_gpu_matches_cpu";
    match gradops::cuda::probe() {
        Ok(info) => eprintln!("{test}: running on {}", info.name),
        Err(e) => {
            let msg = format!("SKIPPED {test}: {e}");
            assert!(
                std::env::var("GRADOPS_REQUIRE_GPU").as_deref() != Ok("1"),
                "GRADOPS_REQUIRE_GPU=1 but {msg}"
            );
            eprintln!("{msg}");
            println!("{msg}");
            return;
        }
    }
    let cfg = Config {
        batch: 4,
        c_in: 3,
        c_hidden: 8,
        c_out: 3,
        hw: 16,
    };
    let (steps, lr) = (20, 0.05);
    let a = Attrs::new();
    let data: Data<f32> = Data::teacher(&cfg, &a, 2).unwrap();
    let p0: Params<f32> = Params::init(&cfg, 1);
    let mut cpu = p0.clone();
    let cpu_losses: Vec<f64> = (0..steps)
        .map(|s| model::step(&cfg, &a, &mut cpu, &data.x[s % 2], &data.target[s % 2], lr).unwrap())
        .collect();
    let run = || {
        let stream = gradops::cuda::stream().unwrap();
        let mut t = train_gpu::Trainer::new(stream, cfg, &p0, &data, steps).unwrap();
        for s in 0..steps {
            t.step(s, lr as f32).unwrap();
        }
        (t.losses(steps).unwrap(), t.params().unwrap())
    };
    let (losses, p) = run();
    for (s, (g, c)) in losses.iter().zip(&cpu_losses).enumerate() {
        assert!(
            (g - c).abs() <= 1e-3 * c.abs(),
            "step {s}: GPU loss {g}, CPU loss {c}"
        );
    }
    assert!(
        losses[steps - 1] + losses[steps - 2] < 0.7 * (losses[0] + losses[1]),
        "{losses:?}"
    );
    let rel = |a: &[f32], b: &[f32]| {
        let num: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
        let den: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
        (num / den).sqrt()
    };
    assert!(rel(&p.w1, &cpu.w1) < 1e-3, "w1 {}", rel(&p.w1, &cpu.w1));
    assert!(rel(&p.w2, &cpu.w2) < 1e-3, "w2 {}", rel(&p.w2, &cpu.w2));
    let (losses2, p2) = run();
    assert_eq!(losses, losses2, "two GPU runs differ");
    assert_eq!(p.w1, p2.w1);
    assert_eq!(p.w2, p2.w2);
}

/// `gradops::candle` on candle's CUDA device: needs gradops' `candle-cuda` feature (candle's
/// `cuda`, which links the CUDA libraries: such a binary starts only where they are).
#[cfg(not(feature = "candle-cuda"))]
#[test]
fn candle_cuda_tests_skipped_feature_off() {
    let msg = "SKIPPED candle CUDA tests: built without the `candle-cuda` feature \
               (cargo test --release --features candle-cuda --test cuda_ops, on a machine \
               with the CUDA libraries)";
    eprintln!("{msg}");
    println!("{msg}");
}

#[cfg(feature = "candle-cuda")]
mod candle_gpu {
    //! candle's autograd through each `gradops::candle` function on `Device::new_cuda(0)`
    //! against the same on candle's CPU device (the CPU path is checked bitwise against
    //! gradops and by finite differences in tests/candle.rs): forward and every gradient
    //! within the SPEC tolerance of the dtype, and two CUDA runs bitwise equal.

    use candle_core::{DType, Device, Tensor, Var};
    use gradops::geometry::{CoordinateTransform as Ct, NearestMode as Nm, ResizeMode};
    use gradops::{Conv2dAttrs, MaxPoolAttrs, Padding, ResizeAttrs};

    type R<T> = candle_core::Result<T>;

    fn cuda_or_skip(test: &str) -> Option<Device> {
        let dev = gradops::cuda::probe()
            .map_err(|e| e.to_string())
            .and_then(|_| Device::new_cuda(0).map_err(|e| e.to_string()));
        match dev {
            Ok(d) => Some(d),
            Err(e) => {
                let msg = format!("SKIPPED {test}: {e}");
                assert!(
                    std::env::var("GRADOPS_REQUIRE_GPU").as_deref() != Ok("1"),
                    "GRADOPS_REQUIRE_GPU=1 but {msg}"
                );
                eprintln!("{msg}");
                println!("{msg}");
                None
            }
        }
    }

    fn tol(dt: DType) -> f64 {
        match dt {
            DType::F16 => 2e-3,
            DType::BF16 => 1e-2,
            DType::F32 => 1e-5,
            _ => 1e-10,
        }
    }

    fn host(t: &Tensor) -> Vec<f64> {
        t.to_device(&Device::Cpu)
            .unwrap()
            .to_dtype(DType::F64)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f64>()
            .unwrap()
    }

    fn rel(got: &Tensor, want: &Tensor) -> f64 {
        assert_eq!(got.dims(), want.dims());
        let (a, b) = (host(got), host(want));
        let num: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        let den: f64 = b.iter().map(|y| y * y).sum();
        if den == 0.0 {
            num.sqrt()
        } else {
            (num / den).sqrt()
        }
    }

    fn random(shape: &[usize], seed: u64, dt: DType, dev: &Device) -> R<Tensor> {
        let n: usize = shape.iter().product();
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let v: Vec<f64> = (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
            })
            .collect();
        Tensor::from_vec(v, shape, &Device::Cpu)?
            .to_dtype(dt)?
            .to_device(dev)
    }

    /// `f(inputs)`, and the gradient of `sum(f * r)` for each input, on `dev`.
    fn run(
        inputs: &[&Tensor],
        r: &Tensor,
        dev: &Device,
        f: &dyn Fn(&[Tensor]) -> R<Tensor>,
    ) -> R<(Tensor, Vec<Tensor>)> {
        let vars: Vec<Var> = inputs
            .iter()
            .map(|t| Var::from_tensor(&t.to_device(dev)?))
            .collect::<R<_>>()?;
        let ts: Vec<Tensor> = vars.iter().map(|v| v.as_tensor().clone()).collect();
        let y = f(&ts)?;
        let grads = y.mul(&r.to_device(dev)?)?.sum_all()?.backward()?;
        let gs = vars
            .iter()
            .map(|v| grads.get(v).expect("gradient").clone())
            .collect();
        Ok((y, gs))
    }

    /// CUDA against CPU within the dtype's tolerance, and two CUDA runs bitwise equal.
    fn parity(
        name: &str,
        dev: &Device,
        inputs: &[&Tensor],
        r: &Tensor,
        f: &dyn Fn(&[Tensor]) -> R<Tensor>,
    ) -> R<()> {
        let dt = inputs[0].dtype();
        let (yc, gc) = run(inputs, r, &Device::Cpu, f)?;
        let (yg, gg) = run(inputs, r, dev, f)?;
        let (yg2, gg2) = run(inputs, r, dev, f)?;
        let e = rel(&yg, &yc);
        assert!(e <= tol(dt), "{name} {dt:?}: forward rel err {e}");
        assert_eq!(host(&yg), host(&yg2), "{name}: forward not deterministic");
        for (i, ((a, b), c)) in gg.iter().zip(&gc).zip(&gg2).enumerate() {
            let e = rel(a, b);
            assert!(e <= tol(dt), "{name} {dt:?}: gradient {i} rel err {e}");
            assert_eq!(host(a), host(c), "{name}: gradient {i} not deterministic");
        }
        Ok(())
    }

    const DTYPES: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];

    #[test]
    fn candle_cuda_resize_every_mode() -> R<()> {
        let Some(dev) = cuda_or_skip("candle_cuda_resize_every_mode") else {
            return Ok(());
        };
        for dt in DTYPES {
            for (i, ctm) in [
                Ct::HalfPixel,
                Ct::PytorchHalfPixel,
                Ct::AlignCorners,
                Ct::Asymmetric,
                Ct::TfHalfPixelForNn,
            ]
            .into_iter()
            .enumerate()
            {
                for (mode, nm) in [
                    (ResizeMode::Linear, Nm::RoundPreferFloor),
                    (ResizeMode::Nearest, Nm::RoundPreferCeil),
                    (ResizeMode::Nearest, Nm::Floor),
                ] {
                    let attrs = ResizeAttrs::new(mode)
                        .coordinate_transformation_mode(ctm)
                        .nearest_mode(nm);
                    let x = random(&[2, 3, 9, 14], i as u64, dt, &Device::Cpu)?;
                    let r = random(&[2, 3, 13, 5], 100 + i as u64, dt, &Device::Cpu)?;
                    parity("resize", &dev, &[&x], &r, &|t| {
                        gradops::candle::interpolate(&t[0], (13, 5), &attrs)
                    })?;
                }
            }
        }
        Ok(())
    }

    #[test]
    fn candle_cuda_max_pool() -> R<()> {
        let Some(dev) = cuda_or_skip("candle_cuda_max_pool") else {
            return Ok(());
        };
        for dt in DTYPES {
            for attrs in [
                MaxPoolAttrs::new([3, 3])
                    .strides([2, 2])
                    .padding(Padding::Explicit([[1, 1], [1, 1]])),
                MaxPoolAttrs::new([2, 2]).strides([2, 2]),
                MaxPoolAttrs::new([3, 2])
                    .strides([1, 3])
                    .padding(Padding::Same),
            ] {
                let x = random(&[2, 3, 17, 12], 1, dt, &Device::Cpu)?;
                let ys = gradops::candle::max_pool2d(&x, &attrs)?.dims().to_vec();
                let r = random(&ys, 2, dt, &Device::Cpu)?;
                parity("max_pool", &dev, &[&x], &r, &|t| {
                    gradops::candle::max_pool2d(&t[0], &attrs)
                })?;
            }
        }
        Ok(())
    }

    #[test]
    fn candle_cuda_conv2d() -> R<()> {
        let Some(dev) = cuda_or_skip("candle_cuda_conv2d") else {
            return Ok(());
        };
        for dt in DTYPES {
            for (attrs, ws) in [
                (gradops::candle::oihw().strides([2, 2]), [4, 3, 3, 3]),
                (
                    gradops::candle::oihw()
                        .padding(Padding::Same)
                        .dilations([2, 1]),
                    [6, 1, 3, 2],
                ),
                (
                    Conv2dAttrs::default()
                        .strides([1, 2])
                        .padding(Padding::Explicit([[1, 0], [2, 1]])),
                    [3, 3, 3, 4],
                ),
            ] {
                let x = random(&[2, 3, 5, 6], 3, dt, &Device::Cpu)?;
                let w = random(&ws, 4, dt, &Device::Cpu)?;
                let ys = gradops::candle::conv2d(&x, &w, &attrs)?.dims().to_vec();
                let r = random(&ys, 5, dt, &Device::Cpu)?;
                parity("conv2d", &dev, &[&x, &w], &r, &|t| {
                    gradops::candle::conv2d(&t[0], &t[1], &attrs)
                })?;
            }
        }
        Ok(())
    }

    #[test]
    fn candle_cuda_offset_views_and_strided_inputs() -> R<()> {
        let Some(dev) = cuda_or_skip("candle_cuda_offset_views_and_strided_inputs") else {
            return Ok(());
        };
        // A batch slice (an offset view of candle's buffer) and a transpose.
        let big = random(&[3, 2, 8, 8], 6, DType::F32, &dev)?;
        let slice = big.narrow(0, 1, 2)?;
        let a = gradops::candle::upsample_bilinear2d(&slice, (11, 5), true)?;
        let b = gradops::candle::upsample_bilinear2d(&slice.copy()?, (11, 5), true)?;
        assert_eq!(host(&a), host(&b));
        let t = big.transpose(2, 3)?;
        let a = gradops::candle::max_pool2d(&t, &MaxPoolAttrs::new([3, 3]).strides([2, 2]))?;
        let b = gradops::candle::max_pool2d(
            &t.contiguous()?,
            &MaxPoolAttrs::new([3, 3]).strides([2, 2]),
        )?;
        assert_eq!(host(&a), host(&b));
        Ok(())
    }
}
