//! One core's `vdpbf16ps` and f32 FMA peak: 24 independent accumulators each, 20M rounds,
//! three times; 64 flops per `vdpbf16ps` (16 lanes, two products and two adds), 32 per FMA.
//! A measurement program kept beside its output (`output.txt`), not part of the crate.
use core::arch::x86_64::*;
pulp::simd_type! {
    pub struct V4Bf16 {
        pub avx512f: "avx512f",
        pub avx512bw: "avx512bw",
        pub avx512vl: "avx512vl",
        pub avx512bf16: "avx512bf16",
        pub fma: "fma",
    }
}
// SAFETY (both helpers): called only inside `V4Bf16::vectorize`, after `try_new` found
// avx512f, avx512bw, avx512vl, avx512bf16 and fma; the transmutes are between 64-byte vectors.
#[inline(always)]
fn dot(acc: pulp::f32x16, a: pulp::u32x16, b: pulp::u32x16) -> pulp::f32x16 {
    unsafe { core::mem::transmute(_mm512_dpbf16_ps(core::mem::transmute(acc), core::mem::transmute::<_, __m512bh>(a), core::mem::transmute::<_, __m512bh>(b))) }
}
#[inline(always)]
fn fma(acc: pulp::f32x16, a: pulp::f32x16, b: pulp::f32x16) -> pulp::f32x16 {
    unsafe { core::mem::transmute(_mm512_fmadd_ps(core::mem::transmute(a), core::mem::transmute(b), core::mem::transmute(acc))) }
}
fn main() {
    let v4 = pulp::x86::V4::try_new().unwrap();
    let bf = V4Bf16::try_new().unwrap();
    let iters = 20_000_000usize;
    for _ in 0..3 {
    let t = std::time::Instant::now();
    let r = bf.vectorize(#[inline(always)] || {
        let a = v4.splat_u32x16(std::hint::black_box(0x3f80_4000));
        let b = v4.splat_u32x16(std::hint::black_box(0x0040_0080));
        let mut acc = [v4.splat_f32x16(0.0); 24];
        for _ in 0..iters { for k in 0..24 { acc[k] = dot(acc[k], a, b); } }
        let mut s = acc[0]; for k in 1..24 { s = v4.add_f32x16(s, acc[k]); } s
    });
    let dt = t.elapsed().as_secs_f64();
    println!("dpbf16: {:.1} GFLOP/s ({:?})", iters as f64 * 24.0 * 64.0 / dt / 1e9, r.0);
    let t = std::time::Instant::now();
    let r = bf.vectorize(#[inline(always)] || {
        let a = v4.splat_f32x16(std::hint::black_box(1.0));
        let b = v4.splat_f32x16(std::hint::black_box(1e-30));
        let mut acc = [v4.splat_f32x16(0.0); 24];
        for _ in 0..iters { for k in 0..24 { acc[k] = fma(acc[k], a, b); } }
        let mut s = acc[0]; for k in 1..24 { s = v4.add_f32x16(s, acc[k]); } s
    });
    let dt = t.elapsed().as_secs_f64();
    println!("fma: {:.1} GFLOP/s ({:?})", iters as f64 * 24.0 * 32.0 / dt / 1e9, r.0);
    }
}
