use std::arch::x86_64::*;
use std::time::Instant;
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn run(iters: usize, seed: u32) -> f32 {
    let mut acc = [_mm512_setzero_ps(); 24];
    let a: __m512bh = std::mem::transmute(_mm512_set1_epi32(seed as i32));
    let b: __m512bh = std::mem::transmute(_mm512_set1_epi32((seed ^ 0x1234) as i32));
    for _ in 0..iters {
        for k in 0..24 {
            acc[k] = _mm512_dpbf16_ps(acc[k], a, b);
        }
    }
    let mut s = _mm512_setzero_ps();
    for v in acc { s = _mm512_add_ps(s, v); }
    _mm512_reduce_add_ps(s)
}
fn main() {
    let iters = 100_000_000;
    for _ in 0..3 {
        let t = Instant::now();
        let r = unsafe { run(iters, 0x3f803f80) };
        let dt = t.elapsed().as_secs_f64();
        println!("pure {:.1} GFLOP/s ({:.3} s, {})", iters as f64 * 24.0 * 64.0 / dt / 1e9, dt, r);
    }
}
