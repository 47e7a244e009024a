//! temporary: crate W3 NCHW call vs plain three passes, same process, alternating.
use gradops::{resize_grad_into, Layout, NearestMode, ResizeAttrs, ResizeMode, TensorRef, CoordinateTransform};
use std::arch::x86_64::*;
use std::time::Instant;
const P: usize = 8 * 64; const SH: usize = 256; const SW: usize = 256; const DH: usize = 128; const DW: usize = 128;
#[target_feature(enable = "avx2,fma")]
unsafe fn three_pass(src: &[f32], dst: &mut [f32], row: &mut [f32]) {
    for p in 0..P {
        let sp = &src[p * SH * SW..]; let dp = &mut dst[p * DH * DW..];
        for i in 0..DH {
            let a = &sp[2 * i * SW..]; let b = &sp[(2 * i + 1) * SW..];
            for k in (0..SW).step_by(8) { _mm256_storeu_ps(row.as_mut_ptr().add(k), _mm256_mul_ps(_mm256_set1_ps(1.0), _mm256_loadu_ps(a.as_ptr().add(k)))); }
            for k in (0..SW).step_by(8) { let r = _mm256_loadu_ps(row.as_ptr().add(k)); _mm256_storeu_ps(row.as_mut_ptr().add(k), _mm256_add_ps(r, _mm256_mul_ps(_mm256_set1_ps(1.0), _mm256_loadu_ps(b.as_ptr().add(k))))); }
            let d = dp[i * DW..].as_mut_ptr();
            for j in (0..DW).step_by(8) {
                let s0 = _mm256_loadu_ps(row.as_ptr().add(2 * j)); let s1 = _mm256_loadu_ps(row.as_ptr().add(2 * j + 8));
                let ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(s0, s1, 0x88)), 0xD8));
                let od = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(s0, s1, 0xDD)), 0xD8));
                _mm256_storeu_ps(d.add(j), _mm256_add_ps(_mm256_add_ps(_mm256_setzero_ps(), ev), od));
            }
        }
    }
}
fn med(v: &mut Vec<f64>) -> f64 { v.sort_by(|a, b| a.partial_cmp(b).unwrap()); v[v.len() / 2] }
fn main() {
    let src: Vec<f32> = (0..P * SH * SW).map(|i| ((i * 2654435761usize) % 1000) as f32 * 0.001 - 0.5).collect();
    let mut d1 = vec![0f32; P * DH * DW]; let mut d2 = vec![0f32; P * DH * DW]; let mut row = vec![0f32; SW];
    let attrs = ResizeAttrs::new(ResizeMode::Nearest).coordinate_transformation_mode(CoordinateTransform::Asymmetric).nearest_mode(NearestMode::Floor);
    let (mut a, mut b) = (vec![], vec![]);
    for it in 0..24 {
        let t0 = Instant::now();
        resize_grad_into(TensorRef::new(&src, [8, 64, 256, 256], Layout::Nchw), [8, 64, 128, 128], &attrs, &mut d1).unwrap();
        let ta = t0.elapsed().as_secs_f64() * 1e3;
        let t0 = Instant::now();
        unsafe { three_pass(&src, &mut d2, &mut row) };
        let tb = t0.elapsed().as_secs_f64() * 1e3;
        if it >= 4 { a.push(ta); b.push(tb); }
    }
    assert!(d1.iter().zip(&d2).all(|(x, y)| x.to_bits() == y.to_bits()));
    println!("crate median {:.2} min {:.2} | three-pass median {:.2} min {:.2}", med(&mut a), a[0], med(&mut b), b[0]);
}
