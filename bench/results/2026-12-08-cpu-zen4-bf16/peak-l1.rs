use std::arch::x86_64::*;
use std::time::Instant;
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn run(iters: usize, a: &[u32], b: &[u32], nb: usize) -> f32 {
    let mut acc = [_mm512_setzero_ps(); 24];
    for i in 0..iters {
        let wv0 = _mm512_loadu_si512(b.as_ptr().add((i % nb) * 64) as *const _);
        let wv1 = _mm512_loadu_si512(b.as_ptr().add((i % nb) * 64 + 16) as *const _);
        let wv2 = _mm512_loadu_si512(b.as_ptr().add((i % nb) * 64 + 32) as *const _);
        let wv3 = _mm512_loadu_si512(b.as_ptr().add((i % nb) * 64 + 48) as *const _);
        for r in 0..6 {
            let av = _mm512_set1_epi32(*a.get_unchecked((i & 255) * 8 + r) as i32);
            acc[r*4] = _mm512_dpbf16_ps(acc[r*4], std::mem::transmute(av), std::mem::transmute(wv0));
            acc[r*4+1] = _mm512_dpbf16_ps(acc[r*4+1], std::mem::transmute(av), std::mem::transmute(wv1));
            acc[r*4+2] = _mm512_dpbf16_ps(acc[r*4+2], std::mem::transmute(av), std::mem::transmute(wv2));
            acc[r*4+3] = _mm512_dpbf16_ps(acc[r*4+3], std::mem::transmute(av), std::mem::transmute(wv3));
        }
    }
    let mut s = _mm512_setzero_ps();
    for v in acc { s = _mm512_add_ps(s, v); }
    _mm512_reduce_add_ps(s)
}
fn main() {
    let a = vec![0x3f803f80u32; 4096];
    let nb: usize = std::env::args().nth(1).unwrap().parse().unwrap(); let b = vec![0x3f803f80u32; nb * 64];
    let iters = 200_000_000;
    for _ in 0..3 {
        let t = Instant::now();
        let r = unsafe { run(iters, &a, &b, nb) };
        let dt = t.elapsed().as_secs_f64();
        let flops = iters as f64 * 24.0 * 64.0;
        println!("{:.1} GFLOP/s ({:.3} s, {})", flops / dt / 1e9, dt, r);
    }
}
