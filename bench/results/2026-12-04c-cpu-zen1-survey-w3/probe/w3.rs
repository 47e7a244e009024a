// W3 NCHW probe: dx[8*64][128][128] = 2x2 box sums of dy[8*64][256][256], one thread.
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

#[target_feature(enable = "avx2,fma")]
unsafe fn fused(src: &[f32], dst: &mut [f32], pf: usize, nt: bool) {
    for p in 0..P {
        let sp = src[p * SH * SW..].as_ptr(); let dp = dst[p * DH * DW..].as_mut_ptr();
        for i in 0..DH {
            let a = sp.add(2 * i * SW); let b = a.add(SW);
            let d = dp.add(i * DW);
            for j in (0..DW).step_by(8) {
                if pf > 0 && j % 16 == 0 { _mm_prefetch(a.add(2 * j + pf) as *const i8, _MM_HINT_T0); _mm_prefetch(b.add(2 * j + pf) as *const i8, _MM_HINT_T0); }
                let s0 = _mm256_add_ps(_mm256_loadu_ps(a.add(2 * j)), _mm256_loadu_ps(b.add(2 * j)));
                let s1 = _mm256_add_ps(_mm256_loadu_ps(a.add(2 * j + 8)), _mm256_loadu_ps(b.add(2 * j + 8)));
                let ev = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(s0, s1, 0x88)), 0xD8));
                let od = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(s0, s1, 0xDD)), 0xD8));
                let v = _mm256_add_ps(_mm256_add_ps(_mm256_setzero_ps(), ev), od);
                if nt { _mm256_stream_ps(d.add(j), v) } else { _mm256_storeu_ps(d.add(j), v) }
            }
        }
    }
    if nt { _mm_sfence(); }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn read_only(src: &[f32]) -> f32 {
    let mut acc = _mm256_setzero_ps();
    for k in (0..src.len()).step_by(8) { acc = _mm256_add_ps(acc, _mm256_loadu_ps(src.as_ptr().add(k))); }
    let mut o = [0f32; 8]; _mm256_storeu_ps(o.as_mut_ptr(), acc); o.iter().sum()
}

fn main() {
    let src: Vec<f32> = (0..P * SH * SW).map(|i| ((i * 2654435761usize) % 1000) as f32 * 0.001 - 0.5).collect();
    let mut db = vec![0f32; P * DH * DW + 8]; let mut db2 = vec![0f32; P * DH * DW + 8]; let mut row = vec![0f32; SW];
    let o1 = db.as_ptr().align_offset(32); let o2 = db2.as_ptr().align_offset(32);
    let dst = &mut db[o1..o1 + P * DH * DW]; let d2 = &mut db2[o2..o2 + P * DH * DW];
    unsafe {
        three_pass(&src, dst, &mut row);
        fused(&src, d2, 0, false);
        assert!(dst.iter().zip(d2.iter()).all(|(a, b)| a.to_bits() == b.to_bits()));
        for round in 0..4 {
            let mut line = format!("round {round}:");
            let t = |f: &mut dyn FnMut()| { let mut best = f64::MAX; for _ in 0..6 { let t0 = Instant::now(); f(); best = best.min(t0.elapsed().as_secs_f64() * 1e3); } best };
            line += &format!(" three-pass {:.2}", t(&mut || three_pass(&src, dst, &mut row)));
            line += &format!(" | fused {:.2}", t(&mut || fused(&src, d2, 0, false)));
            line += &format!(" | fused+pf512 {:.2}", t(&mut || fused(&src, d2, 512, false)));
            line += &format!(" | fused+pf1024 {:.2}", t(&mut || fused(&src, d2, 1024, false)));
            line += &format!(" | fused+nt {:.2}", t(&mut || fused(&src, d2, 0, true)));
            line += &format!(" | fused+pf512+nt {:.2}", t(&mut || fused(&src, d2, 512, true)));
            let mut s = 0.0; line += &format!(" | read-only {:.2}", t(&mut || s += read_only(&src))); std::hint::black_box(s);
            println!("{line}");
        }
    }
}
