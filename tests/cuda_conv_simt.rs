//! GPU test (skips without one) of the opt-out `GRADOPS_CUDA_CONV_TC=simt`: f32 and f64
//! conv2d, conv2d_backprop_input and conv2d_backprop_filter run the simt (FFMA) kernels on
//! every device, compute_80+ included (where the default runs them on the tensor cores,
//! covered by `tests/cuda_ops.rs`), while f16/bf16 stay on the tensor cores; each is checked
//! against the CPU path at SPEC's tolerance (f32 1e-5, f64 1e-10) and bitwise across two
//! runs. A separate test binary, so the variable (read once per process) is set before any
//! CUDA call.

#[cfg(not(gradops_cuda))]
#[test]
fn cuda_conv_simt_skipped_no_kernels() {
    let msg = "SKIPPED cuda_conv_simt: this build has no CUDA kernels (no nvcc)";
    assert!(
        std::env::var("GRADOPS_REQUIRE_GPU").as_deref() != Ok("1"),
        "GRADOPS_REQUIRE_GPU=1 but {msg}"
    );
    eprintln!("{msg}");
    println!("{msg}");
}

#[cfg(gradops_cuda)]
mod gpu {
    use gradops::cuda;
    use gradops::{Conv2dAttrs, Element, FilterLayout, FilterRef, Layout, Padding, TensorRef};

    fn rel<T: Element>(a: &[T], b: &[T]) -> f64 {
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

    fn random<T: Element>(n: usize, seed: &mut u64) -> Vec<T> {
        (0..n)
            .map(|_| {
                *seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                T::from_f64(((*seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
            })
            .collect()
    }

    /// (n, cig, cog, groups), (h, w), (kh, kw), strides, dilations, padding.
    type Geometry = (
        (usize, usize, usize, usize),
        (usize, usize),
        (usize, usize),
        [usize; 2],
        [usize; 2],
        Padding,
    );

    fn case<T: Element>(layout: Layout, fl: FilterLayout, g: Geometry, tol: f64, seed: u64) {
        let ((n, cig, cog, groups), (h, w), (kh, kw), s, d, pad) = g;
        let mut seed = seed;
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
            .strides(s)
            .dilations(d)
            .padding(pad)
            .filter_layout(fl);
        let what = format!("{} {layout:?} {fl:?} {g:?}", T::SUFFIX);
        let wv: Vec<T> = random(kh * kw * cig * co, &mut seed);
        let x: Vec<T> = random(n * ci * h * w, &mut seed);
        let xt = TensorRef::new(&x, xs, layout);
        let f = || FilterRef::new(&wv, fshape);
        let want = gradops::conv2d(xt, f(), &attrs).unwrap();
        let y1 = cuda::host::conv2d(xt, f(), &attrs).unwrap();
        let y2 = cuda::host::conv2d(xt, f(), &attrs).unwrap();
        let e = rel(&y1.data, &want.data);
        assert!(e <= tol, "conv2d {what}: {e:e}");
        assert_eq!(
            bits(&y1.data),
            bits(&y2.data),
            "conv2d {what}: not deterministic"
        );
        let dy: Vec<T> = random(want.data.len(), &mut seed);
        let dyt = TensorRef::new(&dy, want.shape, layout);
        let want = gradops::conv2d_backprop_input(dyt, f(), xs, &attrs).unwrap();
        let d1 = cuda::host::conv2d_backprop_input(dyt, f(), xs, &attrs).unwrap();
        let d2 = cuda::host::conv2d_backprop_input(dyt, f(), xs, &attrs).unwrap();
        let e = rel(&d1.data, &want.data);
        assert!(e <= tol, "conv2d_backprop_input {what}: {e:e}");
        assert_eq!(
            bits(&d1.data),
            bits(&d2.data),
            "conv2d_backprop_input {what}"
        );
        // The filter gradient (conv2d_backprop_filter_partial_*, FFMA, in both layouts).
        let want = gradops::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let w1 = cuda::host::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let w2 = cuda::host::conv2d_backprop_filter(xt, dyt, fshape, &attrs).unwrap();
        let e = rel(&w1.data, &want.data);
        assert!(e <= tol, "conv2d_backprop_filter {what}: {e:e}");
        assert_eq!(
            bits(&w1.data),
            bits(&w2.data),
            "conv2d_backprop_filter {what}"
        );
    }

    #[test]
    fn gpu_conv2d_simt_f32_f64_or_skipped() {
        std::env::set_var(cuda::CONV_TENSOR_CORE_ENV, "simt");
        assert!(!cuda::conv_tensor_cores_for_all_dtypes());
        let info = match cuda::probe() {
            Ok(i) => i,
            Err(e) => {
                let msg = format!("SKIPPED gpu_conv2d_simt_f32_f64_or_skipped: {e}");
                assert!(
                    std::env::var("GRADOPS_REQUIRE_GPU").as_deref() != Ok("1"),
                    "GRADOPS_REQUIRE_GPU=1 but {msg}"
                );
                eprintln!("{msg}");
                println!("{msg}");
                return;
            }
        };
        let arch = cuda::arch_for(info.compute_capability).unwrap();
        for d in ["f32", "f64"] {
            assert!(
                !cuda::conv_uses_tensor_cores(d, arch),
                "{d} conv on compute_{arch} with simt: not the FFMA kernels"
            );
        }
        for d in ["f16", "bf16"] {
            assert_eq!(
                cuda::conv_uses_tensor_cores(d, arch),
                arch >= cuda::CONV_TENSOR_CORE_ARCH,
                "{d} conv on compute_{arch} with simt"
            );
        }
        eprintln!(
            "f32/f64 conv on compute_{arch} ({}): simt (GRADOPS_CUDA_CONV_TC=simt)",
            info.name
        );
        let geometries: &[Geometry] = &[
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
        ];
        for (i, &g) in geometries.iter().enumerate() {
            for layout in [Layout::Nchw, Layout::Nhwc] {
                for fl in [FilterLayout::Hwio, FilterLayout::Oihw] {
                    case::<f32>(layout, fl, g, 1e-5, 7 + i as u64);
                    case::<f64>(layout, fl, g, 1e-10, 7 + i as u64);
                }
            }
        }
    }
}
