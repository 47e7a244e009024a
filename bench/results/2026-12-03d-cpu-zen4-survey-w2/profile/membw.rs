// Throwaway probe (2026-12-03): one thread writing 134 MB (W2's dx) a 1 KB row at a time with
// plain stores, against one memset per 256 KB plane. `rustc -O membw.rs && ./membw`.
use std::time::Instant;
fn main() {
    let n = 8 * 64 * 256 * 256;
    let mut d = vec![1.0f32; n];
    let src = vec![0.5f32; 1024];
    for round in 0..3 {
        let mut best = [f64::MAX; 4];
        for _ in 0..10 {
            let t = Instant::now();
            for r in d.chunks_exact_mut(256) { r.fill(0.0); }
            best[0] = best[0].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for r in d.chunks_exact_mut(256) { for (a, &b) in r.iter_mut().zip(&src) { *a = b * 2.0; } }
            best[1] = best[1].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { p.fill(0.0); }
            best[2] = best[2].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let s: f32 = d.iter().sum();
            std::hint::black_box(s);
            best[3] = best[3].min(t.elapsed().as_secs_f64());
        }
        println!("round {round}: row fill {:.2} ms, row write {:.2} ms, plane memset {:.2} ms, read {:.2} ms", best[0]*1e3, best[1]*1e3, best[2]*1e3, best[3]*1e3);
    }
}
