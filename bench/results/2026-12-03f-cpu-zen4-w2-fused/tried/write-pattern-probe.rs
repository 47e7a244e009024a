use std::time::Instant;
use std::hint::black_box;
#[inline(never)]
fn scale(d: &mut [f32], w: f32, s: &[f32]) { for (a, &b) in d.iter_mut().zip(s) { *a = w * b; } }
#[inline(never)]
fn axpy(d: &mut [f32], w: f32, s: &[f32]) { for (a, &b) in d.iter_mut().zip(s) { *a += w * b; } }
fn main() {
    let n = 8 * 64 * 256 * 256;
    let mut d = vec![1.0f32; n];
    let src = vec![0.5f32; 256*97];
    let rows: Vec<Option<usize>> = (0..256).map(|i| if i % 4 == 2 { None } else { Some((i * 97 / 256) as usize) }).collect();
    for round in 0..3 {
        let mut best = [f64::MAX; 6];
        for _ in 0..8 {
            let t = Instant::now();
            for r in d.chunks_exact_mut(256) { r.fill(0.0); black_box(&r); }
            best[0] = best[0].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { for (i, r) in p.chunks_exact_mut(256).enumerate() { match rows[i] { Some(k) => scale(r, 0.3, &src[k*256..k*256+256]), None => r.fill(0.0) } } }
            best[1] = best[1].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { for (i, r) in p.chunks_exact_mut(256).enumerate() { r.fill(0.0); if let Some(k) = rows[i] { axpy(r, 0.3, &src[k*256..k*256+256]) } } }
            best[2] = best[2].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { p.fill(0.0); for (i, r) in p.chunks_exact_mut(256).enumerate() { if let Some(k) = rows[i] { axpy(r, 0.3, &src[k*256..k*256+256]) } } }
            best[3] = best[3].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { for q in p.chunks_exact_mut(4096) { q.fill(0.0); } for (i, r) in p.chunks_exact_mut(256).enumerate() { if let Some(k) = rows[i] { axpy(r, 0.3, &src[k*256..k*256+256]) } } }
            best[4] = best[4].min(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for p in d.chunks_exact_mut(65536) { for (c, q) in p.chunks_exact_mut(4096).enumerate() { q.fill(0.0); for (i, r) in q.chunks_exact_mut(256).enumerate() { if let Some(k) = rows[c*16+i] { axpy(r, 0.3, &src[k*256..k*256+256]) } } } }
            best[5] = best[5].min(t.elapsed().as_secs_f64());
        }
        println!("round {round}: row fill {:.2} | scale-or-fill {:.2} | fill+axpy {:.2} | plane memset+axpy {:.2} | 16KB memsets then axpy {:.2} | 16KB memset+axpy interleaved {:.2}", best[0]*1e3, best[1]*1e3, best[2]*1e3, best[3]*1e3, best[4]*1e3, best[5]*1e3);
    }
}
