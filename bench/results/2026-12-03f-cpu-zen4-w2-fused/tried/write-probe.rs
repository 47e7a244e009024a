use std::time::Instant;
use std::arch::x86_64::*;
#[target_feature(enable = "avx2")]
unsafe fn nt_plane(d: &mut [f32], s: &[f32]) {
    let p = d.as_mut_ptr();
    let head = ((32 - (p as usize % 32)) % 32) / 4;
    for i in 0..head { d[i] = s[i]; }
    let p = p.add(head);
    for i in (0..(d.len()-head)/8*8).step_by(8) {
        _mm256_stream_ps(p.add(i), _mm256_loadu_ps(s.as_ptr().add(i % s.len())));
    }
    _mm_sfence();
}
fn main() {
    let n = 8 * 64 * 256 * 256;
    let mut d = vec![1.0f32; n];
    let src = vec![0.5f32; 65536];
    for round in 0..3 {
        let mut best = [f64::MAX; 5];
        for _ in 0..10 {
            let t = Instant::now();
            for r in d.chunks_exact_mut(256) { for (a, &b) in r.iter_mut().zip(&src) { *a = b * 2.0; } }
            best[0] = best[0].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { p.fill(0.0); }
            best[1] = best[1].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { p.copy_from_slice(std::hint::black_box(&src)); }
            best[2] = best[2].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { unsafe { nt_plane(p, &src) } }
            best[3] = best[3].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(1024) { p.copy_from_slice(std::hint::black_box(&src[..1024])); }
            best[4] = best[4].min(t.elapsed().as_secs_f64());
        }
        println!("round {round}: row write {:.2} ms, plane memset {:.2}, plane memcpy {:.2}, NT stores {:.2}, 4KB memcpy {:.2}", best[0]*1e3, best[1]*1e3, best[2]*1e3, best[3]*1e3, best[4]*1e3);
    }
}
