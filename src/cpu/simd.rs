//! The CPU's SIMD level, capped by `GRADOPS_CPU_SIMD`, and the hot element-wise loops compiled
//! per level ([`simd_fn!`]). Plain multiply then add (no FMA contraction), so every variant of
//! these loops gives bit-identical results; the register-tile kernels that take a vector width
//! from the level ([`avx2`], [`avx512`], [`Arch`]) sum in their own orders.

use crate::dtype::{Accum, DType, Element};

/// Environment variable that caps the SIMD level of gradops' own CPU kernels: `avx512bf16`
/// (the default: the best the CPU has), `avx512` (AVX-512 without the AVX512_BF16 kernels, as
/// oneDNN's `avx512_core` below `avx512_core_bf16`), `avx2` (AVX2+FMA even where AVX-512 is
/// present) or `scalar` (the baseline build, no dispatched SIMD). A level above the CPU's is the CPU's; any other
/// value is ignored. Read once per process, like oneDNN's `ONEDNN_MAX_CPU_ISA`. On aarch64,
/// `scalar` turns NEON off and the x86 names leave it on. The `gemm` crate, behind the general
/// CPU conv paths' products, picks its own level (it has no cap).
pub const CPU_SIMD_ENV: &str = "GRADOPS_CPU_SIMD";

/// A SIMD level gradops' CPU kernels are compiled for. `#[non_exhaustive]`: later CPUs add
/// levels (AVX512_FP16, SVE) without a breaking release; a `match` needs a `_` arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum SimdLevel {
    /// The baseline build (SSE2 on x86-64): no dispatched SIMD.
    Scalar,
    /// x86-64-v3: AVX2, FMA, BMI1/2, F16C (8 f32 lanes).
    Avx2,
    /// x86-64-v4: AVX-512 F/BW/CD/DQ/VL on top of x86-64-v3 (16 f32 lanes).
    Avx512,
    /// x86-64-v4 with AVX512_BF16: as [`SimdLevel::Avx512`], and the bf16 conv kernels
    /// multiply bf16 pairs with `vdpbf16ps` instead of widening to the f32 kernels.
    Avx512Bf16,
    /// aarch64 NEON.
    Neon,
}

impl SimdLevel {
    /// The name `GRADOPS_CPU_SIMD` takes.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Scalar => "scalar",
            SimdLevel::Avx2 => "avx2",
            SimdLevel::Avx512 => "avx512",
            SimdLevel::Avx512Bf16 => "avx512bf16",
            SimdLevel::Neon => "neon",
        }
    }

    /// The level `GRADOPS_CPU_SIMD=value` names, if any (`neon` is not a cap: NEON is on
    /// unless `scalar` is asked for).
    pub fn from_cap(value: &str) -> Option<SimdLevel> {
        match value.trim().to_ascii_lowercase().as_str() {
            "scalar" => Some(SimdLevel::Scalar),
            "avx2" => Some(SimdLevel::Avx2),
            "avx512" => Some(SimdLevel::Avx512),
            "avx512bf16" => Some(SimdLevel::Avx512Bf16),
            _ => None,
        }
    }

    /// This (detected) level under `cap`.
    pub fn capped(self, cap: Option<SimdLevel>) -> SimdLevel {
        match (self, cap) {
            (_, None) => self,
            (SimdLevel::Neon, Some(SimdLevel::Scalar)) => SimdLevel::Scalar,
            (SimdLevel::Neon, Some(_)) => SimdLevel::Neon,
            (d, Some(c)) => d.min(c),
        }
    }
}

impl std::fmt::Display for SimdLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The best level this CPU has (what the kernels run at without a cap).
pub fn detected_simd_level() -> SimdLevel {
    #[cfg(target_arch = "x86_64")]
    {
        if pulp::x86::V4::try_new().is_some() {
            if crate::cpu::bf16_dot::V4Bf16::try_new().is_some() {
                return SimdLevel::Avx512Bf16;
            }
            return SimdLevel::Avx512;
        }
        if pulp::x86::V3::try_new().is_some() {
            return SimdLevel::Avx2;
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            return SimdLevel::Neon;
        }
    }
    SimdLevel::Scalar
}

/// What `GRADOPS_CPU_SIMD` says now: its raw value (if set) and the level it names (if any).
/// The kernels' level was fixed by the value at their first use ([`simd_level`]); a later
/// change of the variable shows here only.
pub fn simd_cap() -> (Option<String>, Option<SimdLevel>) {
    let raw = std::env::var(CPU_SIMD_ENV).ok();
    let level = raw.as_deref().and_then(SimdLevel::from_cap);
    (raw, level)
}

/// The level gradops' CPU kernels run at: the detected one under the `GRADOPS_CPU_SIMD` cap
/// (read on first use).
pub fn simd_level() -> SimdLevel {
    Arch::new().level
}

/// The capped level with the instruction-set tokens it allows, built once per process:
/// dispatching is then a copy and a branch, cheap enough for short loops.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arch {
    level: SimdLevel,
    #[cfg(target_arch = "x86_64")]
    v3: Option<pulp::x86::V3>,
    #[cfg(target_arch = "x86_64")]
    v4: Option<pulp::x86::V4>,
    #[cfg(not(target_arch = "x86_64"))]
    native: pulp::Arch,
}

/// The process's [`Arch`], fixed by its first use or by [`set_max_simd_level`].
static ARCH: std::sync::OnceLock<Arch> = std::sync::OnceLock::new();

/// Caps the SIMD level of gradops' CPU kernels from code, as `GRADOPS_CPU_SIMD` does from the
/// environment (which it overrides), like oneDNN's `dnnl_set_max_cpu_isa`: only before the
/// level is fixed, by the first CPU op, [`simd_level`] or an earlier call. Returns the level
/// the kernels will run at (the CPU's under `cap`; `Avx512Bf16` and `Neon` cap nothing). Calling
/// it after the level is fixed returns that level if `cap` would give the same, else an
/// [`Error::Attr`](crate::Error::Attr) naming both.
pub fn set_max_simd_level(cap: SimdLevel) -> crate::Result<SimdLevel> {
    let want = Arch::with_cap(Some(cap));
    let fixed = *ARCH.get_or_init(|| want);
    if fixed.level == want.level {
        Ok(fixed.level)
    } else {
        Err(crate::Error::attr(
            "set_max_simd_level",
            "cap",
            format!(
                "the CPU kernels' SIMD level is already fixed at {} (by a CPU op, simd_level() \
                 or an earlier call, {CPU_SIMD_ENV} read then); cap {cap} would give {}: call \
                 this before any CPU op",
                fixed.level, want.level
            ),
        ))
    }
}

impl Arch {
    /// The process's capped level.
    pub(crate) fn new() -> Arch {
        *ARCH.get_or_init(|| Arch::with_cap(simd_cap().1))
    }

    /// The CPU's level under `cap`, with its tokens.
    fn with_cap(cap: Option<SimdLevel>) -> Arch {
        let level = detected_simd_level().capped(cap);
        Arch {
            level,
            #[cfg(target_arch = "x86_64")]
            v3: pulp::x86::V3::try_new().filter(|_| level >= SimdLevel::Avx2),
            #[cfg(target_arch = "x86_64")]
            v4: pulp::x86::V4::try_new().filter(|_| level >= SimdLevel::Avx512),
            #[cfg(not(target_arch = "x86_64"))]
            native: pulp::Arch::new(),
        }
    }

    /// Runs `op` compiled for this level.
    #[inline(always)]
    pub(crate) fn dispatch<Op: pulp::WithSimd>(self, op: Op) -> Op::Output {
        use pulp::Simd;
        #[cfg(target_arch = "x86_64")]
        {
            // The trait's `vectorize` (the tokens' inherent one takes a closure).
            if let Some(simd) = self.v4 {
                return <pulp::x86::V4 as Simd>::vectorize(simd, op);
            }
            if let Some(simd) = self.v3 {
                return <pulp::x86::V3 as Simd>::vectorize(simd, op);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        if self.level != SimdLevel::Scalar {
            return self.native.dispatch(op);
        }
        <pulp::Scalar as Simd>::vectorize(pulp::Scalar::new(), op)
    }
}

/// The AVX2+FMA token where the capped level has it (x86-64-v3 kernels run only then).
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx2() -> Option<pulp::x86::V3> {
    Arch::new().v3
}

/// The AVX-512 token where the capped level has it.
#[cfg(target_arch = "x86_64")]
pub(crate) fn avx512() -> Option<pulp::x86::V4> {
    Arch::new().v4
}

/// Whether the capped level allows the AVX512_BF16 kernels (the CPU has them only then).
#[cfg(target_arch = "x86_64")]
pub(crate) fn bf16_dot_allowed() -> bool {
    Arch::new().level == SimdLevel::Avx512Bf16
}

/// Whether the capped level has AVX2+FMA (false off x86-64).
#[cfg(test)]
pub(crate) fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        avx2().is_some()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// A function compiled once per SIMD level and run at the capped one ([`Arch::dispatch`]):
/// the body becomes a `pulp::WithSimd` op, inlined into each level's `#[target_feature]`
/// wrapper, so the compiler vectorises it for that level. Parameters are identifiers or tuple
/// patterns of identifiers; generics take at most one bound each.
macro_rules! simd_fn {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident $(<$($g:ident $(: $b:path)?),* $(,)?>)? (
            $($arg:tt : $ty:ty),* $(,)?
        ) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$meta])*
        $vis fn $name $(<$($g $(: $b)?),*>)? ($($arg: $ty),*) $(-> $ret)? {
            struct Op<Args>(Args);
            impl $(<$($g $(: $b)?),*>)? pulp::WithSimd for Op<($($ty,)*)> {
                type Output = $crate::cpu::simd::simd_fn!(@ret $($ret)?);
                #[inline(always)]
                fn with_simd<SimdLevel_: pulp::Simd>(self, _: SimdLevel_) -> Self::Output {
                    let ($($arg,)*) = self.0;
                    $body
                }
            }
            $crate::cpu::simd::Arch::new().dispatch(Op(($($arg,)*)))
        }
    };
    (@ret) => { () };
    (@ret $ret:ty) => { $ret };
}
pub(crate) use simd_fn;

simd_fn! {
    /// `acc[i] += w * x[i]`.
    pub(crate) fn axpy<A: Accum>(acc: &mut [A], w: A, x: &[A]) {
        axpy_inline(acc, w, x);
    }
}

/// [`axpy`]'s loop, for callers that are themselves compiled per SIMD level and call it on
/// short slices (where a dispatched call per slice would cost more than the loop).
#[inline(always)]
pub(crate) fn axpy_inline<A: Accum>(acc: &mut [A], w: A, x: &[A]) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = *a + w * v;
    }
}

simd_fn! {
    /// `out[i] = 0 + w * x[i]`: [`axpy`] into a zeroed `out`, the same bits (`+0` for a `-0`
    /// product), in one pass that writes `out` without reading it.
    pub(crate) fn scale_into<A: Accum>(out: &mut [A], w: A, x: &[A]) {
        scale_into_inline(out, w, x);
    }
}

/// [`scale_into`]'s loop, for callers compiled per SIMD level (as [`axpy_inline`]).
#[inline(always)]
pub(crate) fn scale_into_inline<A: Accum>(out: &mut [A], w: A, x: &[A]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o = A::zero() + w * v;
    }
}

simd_fn! {
    /// `acc[i] += w[i] * x[i]`.
    pub(crate) fn mul_add<A: Accum>(acc: &mut [A], w: &[A], x: &[A]) {
        for ((a, &w), &v) in acc.iter_mut().zip(w).zip(x) {
            *a = *a + w * v;
        }
    }
}

/// Lanes per block of [`banded`].
pub(crate) const BAND: usize = 16;

simd_fn! {
    /// Blocks of `BAND` outputs, each a dense `len[b] x BAND` weight block over the source window
    /// starting at `lo[b]`: `out[b*BAND + l] = sum_s w[off[b] + s*BAND + l] * row[lo[b] + s]`, summed
    /// in ascending `s`. Only valid for finite `row` (a zero weight times NaN is NaN).
    pub(crate) fn banded<A: Accum>(
        row: &[A],
        lo: &[u32],
        len: &[u32],
        off: &[usize],
        w: &[A],
        out: &mut [A],
    ) {
        for (b, o) in out.chunks_mut(BAND).enumerate() {
            let mut acc = [A::zero(); BAND];
            let base = lo[b] as usize;
            let ws = &w[off[b]..off[b] + len[b] as usize * BAND];
            for (s, wb) in ws.chunks_exact(BAND).enumerate() {
                let v = row[base + s];
                for (a, &wl) in acc.iter_mut().zip(wb) {
                    *a = *a + wl * v;
                }
            }
            o.copy_from_slice(&acc[..o.len()]);
        }
    }
}

simd_fn! {
    /// True when every element is finite.
    pub(crate) fn all_finite<A: Accum>(x: &[A]) -> bool {
        x.iter().fold(true, |ok, v| ok & v.is_finite())
    }
}

/// `p0[k] = src[2k]`, `p1[k] = src[2k + 1]` for the pairs of `src` (as many as both outputs
/// hold): the stride-2 phase split of a row, compiled per SIMD level (in callers built for the
/// baseline only it was a scalar loop).
pub(crate) fn deinterleave2<A: Copy>(src: &[A], p0: &mut [A], p1: &mut [A]) {
    deinterleave2_map(src, p0, p1, |v| v)
}

simd_fn! {
    /// [`deinterleave2`] with each element converted by `f` (as `Element::to_acc`) on the way.
    pub(crate) fn deinterleave2_map<S: Copy, D, F: Fn(S) -> D>(
        src: &[S],
        p0: &mut [D],
        p1: &mut [D],
        f: F,
    ) {
        // Zipped iterators: indexing kept a bounds check that blocked vectorisation.
        for ((c, a), b) in src.chunks_exact(2).zip(p0.iter_mut()).zip(p1.iter_mut()) {
            *a = f(c[0]);
            *b = f(c[1]);
        }
    }
}

simd_fn! {
    /// bf16 bit patterns widened to `f32`: the bits shifted into the high half (exact, NaNs
    /// included), so the loop vectorises, unlike `half`'s per-element conversion.
    pub(crate) fn bf16_bits_to_f32(src: &[u16], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len(), "bf16 widening: length mismatch");
        for (d, &b) in dst.iter_mut().zip(src) {
            *d = f32::from_bits(u32::from(b) << 16);
        }
    }
}

simd_fn! {
    /// `f32` rounded to bf16 bit patterns, to nearest with ties to even (as `half::bf16::from_f32`,
    /// NaNs kept quiet), branch-free so the loop vectorises: adding `0x7FFF` plus the kept LSB
    /// carries into the kept half exactly when the dropped half is above the tie (or at it, with
    /// an odd LSB); the carry out of the largest finite value gives infinity, as it should.
    pub(crate) fn f32_to_bf16_bits(src: &[f32], dst: &mut [u16]) {
        assert_eq!(src.len(), dst.len(), "bf16 rounding: length mismatch");
        for (d, &f) in dst.iter_mut().zip(src) {
            *d = f32_to_bf16_bits_one(f);
        }
    }
}

/// [`f32_to_bf16_bits`] of one value.
#[inline(always)]
pub(crate) fn f32_to_bf16_bits_one(f: f32) -> u16 {
    let x = f.to_bits();
    let rounded = (x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16) as u16;
    let nan = ((x >> 16) | 0x0040) as u16;
    if f.is_nan() {
        nan
    } else {
        rounded
    }
}

/// [`f32_to_bf16_bits_one`] of the 8 lanes of an AVX register, in registers (for a result
/// that leaves a transpose's registers without a round trip through an f32 buffer); inlined
/// into callers compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn f32x8_to_bf16_bits(simd: pulp::x86::V3, v: core::arch::x86_64::__m256) -> [u16; 8] {
    use core::arch::x86_64::_CMP_UNORD_Q;
    let (avx, avx2) = (simd.avx, simd.avx2);
    let x = avx._mm256_castps_si256(v);
    let high = avx2._mm256_srli_epi32::<16>(x);
    let lsb = avx2._mm256_and_si256(high, avx._mm256_set1_epi32(1));
    let biased =
        avx2._mm256_add_epi32(x, avx2._mm256_add_epi32(avx._mm256_set1_epi32(0x7FFF), lsb));
    let rounded = avx2._mm256_srli_epi32::<16>(biased);
    let nan = avx2._mm256_or_si256(high, avx._mm256_set1_epi32(0x40));
    let is_nan = avx._mm256_castps_si256(avx._mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
    let bits = avx2._mm256_blendv_epi8(rounded, nan, is_nan);
    // Every lane is below 2^16: the unsigned-saturating pack keeps it; it packs within each
    // 128-bit half, so the two halves' first 64 bits are gathered.
    let packed = avx2._mm256_packus_epi32(bits, bits);
    let low = avx2._mm256_permute4x64_epi64::<0b1000>(packed);
    pulp::bytemuck::cast(avx._mm256_castsi256_si128(low))
}

/// [`f32x8_to_bf16_bits`] of the 16 lanes of an AVX-512 register (a register tile's
/// accumulators rounded as they leave it); inlined into callers compiled with AVX-512.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn f32x16_to_bf16_bits(simd: pulp::x86::V4, v: pulp::f32x16) -> [u16; 16] {
    use core::arch::x86_64::_CMP_UNORD_Q;
    let f = simd.avx512f;
    let v = pulp::bytemuck::cast(v);
    let x = f._mm512_castps_si512(v);
    let high = f._mm512_srli_epi32::<16>(x);
    let lsb = f._mm512_and_si512(high, f._mm512_set1_epi32(1));
    let biased = f._mm512_add_epi32(x, f._mm512_add_epi32(f._mm512_set1_epi32(0x7FFF), lsb));
    let rounded = f._mm512_srli_epi32::<16>(biased);
    let nan = f._mm512_or_si512(high, f._mm512_set1_epi32(0x40));
    let is_nan = f._mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
    let bits = f._mm512_mask_blend_epi32(is_nan, rounded, nan);
    // Every lane is below 2^16: the truncating narrow keeps it.
    pulp::bytemuck::cast(f._mm512_cvtepi32_epi16(bits))
}

/// An f16 bit pattern widened to `f32`: exact, the same bits as F16C's `vcvtph2ps` and
/// `half::f16::to_f32` (NaNs quieted, payload kept), branch-free so that loops over it
/// vectorise (`half` converts a single value behind a CPU feature check). Subnormals by one
/// exact float subtraction.
#[inline(always)]
pub(crate) fn f16_bits_to_f32_one(h: u16) -> f32 {
    const SHIFTED_EXP: u32 = 0x7C00 << 13;
    let h = u32::from(h);
    let o = ((h & 0x7FFF) << 13) + ((127 - 15) << 23);
    let exp = (h << 13) & SHIFTED_EXP;
    // Infinity and NaN: the exponent all ones, a NaN's quiet bit set.
    let special = (o + ((128 - 16) << 23)) | (u32::from(h & 0x3FF != 0) << 22);
    // Zero and subnormals: `1.m * 2^-14 - 2^-14`, exact.
    let subnormal = (f32::from_bits(o + (1 << 23)) - f32::from_bits(113 << 23)).to_bits();
    let bits = if exp == SHIFTED_EXP {
        special
    } else if exp == 0 {
        subnormal
    } else {
        o
    };
    f32::from_bits(bits | ((h & 0x8000) << 16))
}

/// `f` rounded to an f16 bit pattern, to nearest with ties to even: the same bits as F16C's
/// `vcvtps2ph` and `half::f16::from_f32` (NaNs quiet with their payload's top bits, overflow
/// to infinity), branch-free as [`f16_bits_to_f32_one`]. Normal results round by adding
/// `0xFFF` plus the kept LSB below the kept bits (the carry may reach infinity, as it should);
/// subnormal ones by one float addition of 0.5, whose ulp is the f16 subnormal spacing.
#[inline(always)]
pub(crate) fn f32_to_f16_bits_one(f: f32) -> u16 {
    const F16_OVERFLOW: u32 = (127 + 16) << 23;
    const F16_MIN_NORMAL: u32 = (127 - 14) << 23;
    const HALF: u32 = 126 << 23;
    let x = f.to_bits();
    let a = x & 0x7FFF_FFFF;
    let nan = 0x7E00 | ((a & 0x007F_FFFF) >> 13);
    let subnormal = (f32::from_bits(a) + f32::from_bits(HALF))
        .to_bits()
        .wrapping_sub(HALF);
    let normal = a
        .wrapping_sub((127 - 15) << 23)
        .wrapping_add(0xFFF + ((a >> 13) & 1))
        >> 13;
    let bits = if a > 0x7F80_0000 {
        nan
    } else if a >= F16_OVERFLOW {
        0x7C00
    } else if a < F16_MIN_NORMAL {
        subnormal
    } else {
        normal
    };
    (bits | ((x >> 16) & 0x8000)) as u16
}

simd_fn! {
    /// f16 bit patterns widened to `f32` by [`BlockConvert`]'s `vcvtph2ps`, where the level
    /// has AVX-512 (`half`'s slice conversion calls F16C eight elements at a time, uninlined:
    /// W1 NHWC f16 1.68x, one thread, Zen 5); the same bits. False (nothing written)
    /// elsewhere: there `half`'s calls beat the portable form, which ran 0.80x-1.02x of them
    /// capped at AVX2.
    pub(crate) fn f16_bits_to_f32_avx512(src: &[u16], dst: &mut [f32]) -> bool {
        assert_eq!(src.len(), dst.len(), "f16 widening: length mismatch");
        let cvt = BlockConvert::new();
        cvt.has_avx512() && {
            cvt.f16_widen(src, dst);
            true
        }
    }
}

simd_fn! {
    /// `f32` rounded to f16 bit patterns by [`BlockConvert`]'s `vcvtps2ph`, where the level
    /// has AVX-512; false (nothing written) elsewhere, as [`f16_bits_to_f32_avx512`].
    pub(crate) fn f32_to_f16_bits_avx512(src: &[f32], dst: &mut [u16]) -> bool {
        assert_eq!(src.len(), dst.len(), "f16 rounding: length mismatch");
        let cvt = BlockConvert::new();
        cvt.has_avx512() && {
            cvt.f16_round(src, dst);
            true
        }
    }
}

/// Element conversions for kernels compiled per SIMD level that widen their inputs and round
/// their outputs a block at a time in the inner loop (no staged copy of the tensor), with the
/// instruction-set token looked up once (per call) rather than per block. f16 by `vcvtph2ps`
/// / `vcvtps2ph` sixteen at a time where the level has AVX-512 (tails by the branch-free
/// [`f16_bits_to_f32_one`] / [`f32_to_f16_bits_one`]); without AVX-512 `axpy` takes those
/// branch-free forms and `widen` / `round` take `half`'s slice conversions; bf16 by its shift
/// and its rounding add; f32 and f64 as they are. The same bits as `Element::slice_to_acc` /
/// `slice_from_acc`.
#[derive(Clone, Copy)]
pub(crate) struct BlockConvert {
    #[cfg(target_arch = "x86_64")]
    v4: Option<pulp::x86::V4>,
}

/// `acc[k] += w * src[k]` for f16 `src`, sixteen at a time by `vcvtph2ps`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn f16_axpy_avx512(simd: pulp::x86::V4, acc: &mut [f32], w: f32, src: &[u16]) {
    use core::arch::x86_64::__m256i;
    use pulp::bytemuck::cast;
    let (a, _) = acc.as_chunks_mut::<16>();
    let (s, _) = src.as_chunks::<16>();
    for (a, s) in a.iter_mut().zip(s) {
        let v: [f32; 16] = cast(simd.avx512f._mm512_cvtph_ps(cast::<_, __m256i>(*s)));
        for (a, v) in a.iter_mut().zip(v) {
            *a += w * v;
        }
    }
}

impl BlockConvert {
    pub(crate) fn new() -> BlockConvert {
        BlockConvert {
            #[cfg(target_arch = "x86_64")]
            v4: avx512(),
        }
    }

    /// Whether the level has AVX-512 (the f16 conversions' fast form).
    pub(crate) fn has_avx512(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return self.v4.is_some();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// `acc[k] += w * src[k]` with `src` widened in registers on the way (no staged block):
    /// [`axpy_inline`]'s sums. Lengths must match.
    #[inline(always)]
    pub(crate) fn axpy<T: Element>(self, acc: &mut [T::Acc], w: T::Acc, src: &[T]) {
        if let Some(s) = T::as_acc_slice(src) {
            return axpy_inline(acc, w, s);
        }
        if let (Ok(bits), Some(acc), Some(&w)) = (
            bytemuck::try_cast_slice::<T, u16>(src),
            T::Acc::as_f32_mut(acc),
            T::Acc::as_f32(std::slice::from_ref(&w)).and_then(|w| w.first()),
        ) {
            match T::DTYPE {
                DType::F16 => {
                    let mut done = 0;
                    #[cfg(target_arch = "x86_64")]
                    if let Some(simd) = self.v4 {
                        done = acc.len().min(bits.len()) / 16 * 16;
                        f16_axpy_avx512(simd, &mut acc[..done], w, &bits[..done]);
                    }
                    for (a, &b) in acc[done..].iter_mut().zip(&bits[done..]) {
                        *a += w * f16_bits_to_f32_one(b);
                    }
                    return;
                }
                DType::BF16 => {
                    for (a, &b) in acc.iter_mut().zip(bits) {
                        *a += w * f32::from_bits(u32::from(b) << 16);
                    }
                    return;
                }
                _ => {}
            }
        }
        for (a, &v) in acc.iter_mut().zip(src) {
            *a = *a + w * v.to_acc();
        }
    }

    /// [`axpy`](Self::axpy) into a fixed-size block (`N` a multiple of 16; `src` as long),
    /// whose sums stay in registers: on slices the f16 path's run-time tail kept the block in
    /// memory, each term's add waiting on the last one's store (seen in the profile of W1
    /// NHWC f16).
    #[inline(always)]
    pub(crate) fn axpy_block<T: Element, const N: usize>(
        self,
        acc: &mut [T::Acc; N],
        w: T::Acc,
        src: &[T],
    ) {
        const {
            assert!(
                N.is_multiple_of(16),
                "axpy_block: N must be a multiple of 16"
            )
        };
        // The type test first, a constant: the other types' sums stay as `axpy` has them.
        #[cfg(target_arch = "x86_64")]
        if T::DTYPE == DType::F16 {
            if let (Some(simd), Ok(bits), Some(acc), Some(&w)) = (
                self.v4,
                bytemuck::try_cast_slice::<T, u16>(src),
                T::Acc::as_f32_mut(acc),
                T::Acc::as_f32(std::slice::from_ref(&w)).and_then(|w| w.first()),
            ) {
                f16_axpy_avx512(simd, acc, w, bits);
                return;
            }
        }
        self.axpy(acc, w, src);
    }

    /// `dst = src` widened. Lengths must match. f16 without AVX-512 takes `half`'s slice
    /// conversion (see [`f16_bits_to_f32_avx512`]).
    #[inline(always)]
    pub(crate) fn widen<T: Element>(self, src: &[T], dst: &mut [T::Acc]) {
        if let Some(s) = T::as_acc_slice(src) {
            dst.copy_from_slice(s);
            return;
        }
        let f16 = T::DTYPE == DType::F16 && self.has_avx512();
        let bf16 = T::DTYPE == DType::BF16;
        if let (Some(d), true) = (T::Acc::as_f32_mut(dst), f16 || bf16) {
            if let Ok(bits) = bytemuck::try_cast_slice::<T, u16>(src) {
                if f16 {
                    self.f16_widen(bits, d);
                } else {
                    for (d, &b) in d.iter_mut().zip(bits) {
                        *d = f32::from_bits(u32::from(b) << 16);
                    }
                }
                return;
            }
        }
        T::slice_to_acc(src, dst);
    }

    /// `dst = src` rounded. Lengths must match. f16 without AVX-512 takes `half`'s slice
    /// conversion, as [`widen`](Self::widen).
    #[inline(always)]
    pub(crate) fn round<T: Element>(self, src: &[T::Acc], dst: &mut [T]) {
        if let Some(d) = T::as_acc_slice_mut(dst) {
            d.copy_from_slice(src);
            return;
        }
        let f16 = T::DTYPE == DType::F16 && self.has_avx512();
        let bf16 = T::DTYPE == DType::BF16;
        if let (Some(s), true) = (T::Acc::as_f32(src), f16 || bf16) {
            if let Ok(bits) = bytemuck::try_cast_slice_mut::<T, u16>(dst) {
                if f16 {
                    self.f16_round(s, bits);
                } else {
                    for (d, &f) in bits.iter_mut().zip(s) {
                        *d = f32_to_bf16_bits_one(f);
                    }
                }
                return;
            }
        }
        T::slice_from_acc(src, dst);
    }

    #[inline(always)]
    fn f16_widen(self, src: &[u16], dst: &mut [f32]) {
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = self.v4 {
            use core::arch::x86_64::__m256i;
            use pulp::bytemuck::cast;
            let (s, _) = src.as_chunks::<16>();
            let (d, _) = dst.as_chunks_mut::<16>();
            for (d, s) in d.iter_mut().zip(s) {
                *d = cast(simd.avx512f._mm512_cvtph_ps(cast::<_, __m256i>(*s)));
            }
            done = s.len().min(d.len()) * 16;
        }
        for (d, &b) in dst[done..].iter_mut().zip(&src[done..]) {
            *d = f16_bits_to_f32_one(b);
        }
    }

    #[inline(always)]
    fn f16_round(self, src: &[f32], dst: &mut [u16]) {
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = self.v4 {
            use core::arch::x86_64::{__m512, _MM_FROUND_NO_EXC, _MM_FROUND_TO_NEAREST_INT};
            use pulp::bytemuck::cast;
            const NEAREST: i32 = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
            let (s, _) = src.as_chunks::<16>();
            let (d, _) = dst.as_chunks_mut::<16>();
            for (d, s) in d.iter_mut().zip(s) {
                *d = cast(
                    simd.avx512f
                        ._mm512_cvtps_ph::<NEAREST>(cast::<_, __m512>(*s)),
                );
            }
            done = s.len().min(d.len()) * 16;
        }
        for (d, &f) in dst[done..].iter_mut().zip(&src[done..]) {
            *d = f32_to_f16_bits_one(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `scale_into` gives the bits of a zero fill and one `axpy`, signed zeros, subnormals and
    /// non-finite values included.
    #[test]
    fn scale_into_is_a_zeroed_axpy() {
        let x: Vec<f32> = [
            -0.0,
            0.0,
            1e-40,
            -1e-40,
            3.5,
            -2.25,
            f32::INFINITY,
            f32::NAN,
        ]
        .iter()
        .cycle()
        .take(37)
        .enumerate()
        .map(|(i, &v)| v * (1.0 + i as f32 / 64.0))
        .collect();
        for w in [0.0f32, -0.0, 0.75, -1.0, 1e-30] {
            let mut want = vec![0.0f32; x.len()];
            axpy(&mut want, w, &x);
            let mut got = vec![f32::NAN; x.len()];
            scale_into(&mut got, w, &x);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "w = {w}");
        }
    }

    /// [`f32x8_to_bf16_bits`] and [`f32x16_to_bf16_bits`] give [`f32_to_bf16_bits_one`]'s
    /// bits: ties both ways, the carry to infinity, infinities, NaNs of either sign with
    /// payloads in either half, subnormals and zeros, then random patterns.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bf16_rounding_in_registers_matches_the_scalar() {
        let Some(simd) = avx2() else {
            println!("skipped: no AVX2 on this CPU");
            return;
        };
        let mut bits: Vec<u32> = vec![
            0x3F80_8000,
            0x3F81_8000,
            0x3F80_8001,
            0x3F80_7FFF,
            0x7F7F_FFFF,
            0xFF7F_8000,
            0x7F80_0000,
            0xFF80_0000,
            0x7F80_0001,
            0x7FC0_0000,
            0xFFC0_0000,
            0x7FBF_FFFF,
            0xFF80_8000,
            0x7F81_0000,
            0x0000_0001,
            0x8000_FFFF,
            0x0000_8000,
            0x0001_8000,
            0x0000_0000,
            0x8000_0000,
        ];
        let mut seed = 0x2545_F491_u32;
        bits.extend((0..4000).map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        }));
        for chunk in bits.chunks_exact(8) {
            let v: [f32; 8] = std::array::from_fn(|i| f32::from_bits(chunk[i]));
            let got = simd.vectorize(|| f32x8_to_bf16_bits(simd, pulp::bytemuck::cast(v)));
            let want = v.map(f32_to_bf16_bits_one);
            assert_eq!(got, want, "{chunk:08x?}");
        }
        let Some(v4) = avx512() else {
            println!("skipped the 16 lanes: no AVX-512 on this CPU");
            return;
        };
        for chunk in bits.chunks_exact(16) {
            let v: [f32; 16] = std::array::from_fn(|i| f32::from_bits(chunk[i]));
            let got = v4.vectorize(|| f32x16_to_bf16_bits(v4, pulp::bytemuck::cast(v)));
            let want = v.map(f32_to_bf16_bits_one);
            assert_eq!(got, want, "{chunk:08x?}");
        }
    }

    #[test]
    fn cap_readings() {
        use SimdLevel::*;
        assert_eq!(SimdLevel::from_cap("avx2"), Some(Avx2));
        assert_eq!(SimdLevel::from_cap(" AVX512 "), Some(Avx512));
        assert_eq!(SimdLevel::from_cap("avx512BF16"), Some(Avx512Bf16));
        assert_eq!(SimdLevel::from_cap("Scalar"), Some(Scalar));
        for v in ["", "neon", "avx", "sse2", "avx-512", "best"] {
            assert_eq!(SimdLevel::from_cap(v), None, "{v:?}");
        }
        let table = [
            (Avx512, None, Avx512),
            (Avx512Bf16, None, Avx512Bf16),
            (Avx512Bf16, Some(Avx512), Avx512),
            (Avx512Bf16, Some(Avx2), Avx2),
            (Avx512, Some(Avx512Bf16), Avx512),
            (Avx512, Some(Avx2), Avx2),
            (Avx512, Some(Scalar), Scalar),
            (Avx2, Some(Avx512), Avx2),
            (Avx2, Some(Scalar), Scalar),
            (Scalar, Some(Avx512), Scalar),
            (Neon, Some(Avx2), Neon),
            (Neon, Some(Scalar), Scalar),
        ];
        for (detected, cap, want) in table {
            assert_eq!(detected.capped(cap), want, "{detected} under {cap:?}");
        }
        for l in [Scalar, Avx2, Avx512, Avx512Bf16] {
            assert_eq!(SimdLevel::from_cap(l.name()), Some(l));
        }
    }

    /// Run by [`the_cap_reaches_the_dispatch`] in a child process with `GRADOPS_CPU_SIMD` set
    /// (read once per process): the tokens the kernels take match the capped level.
    #[test]
    #[ignore = "run by the_cap_reaches_the_dispatch in a child process"]
    fn child_dispatch_under_cap() {
        let (raw, cap) = simd_cap();
        let want = detected_simd_level().capped(cap);
        assert_eq!(simd_level(), want, "{CPU_SIMD_ENV}={raw:?}");
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(avx512().is_some(), want >= SimdLevel::Avx512);
            assert_eq!(
                crate::cpu::bf16_dot::Bf16Dot::new().is_some(),
                want == SimdLevel::Avx512Bf16
            );
            assert_eq!(avx2().is_some(), want >= SimdLevel::Avx2);
        }
        // Which level a `simd_fn!` body ran at: its `Simd` type's f32 lane count.
        struct Lanes;
        impl pulp::WithSimd for Lanes {
            type Output = usize;
            #[inline(always)]
            fn with_simd<S: pulp::Simd>(self, _: S) -> usize {
                std::mem::size_of::<S::f32s>() / 4
            }
        }
        let lanes = Arch::new().dispatch(Lanes);
        let want_lanes = match want {
            SimdLevel::Scalar => 1,
            SimdLevel::Avx2 => 8,
            SimdLevel::Avx512 | SimdLevel::Avx512Bf16 => 16,
            SimdLevel::Neon => 4,
        };
        assert_eq!(lanes, want_lanes, "{CPU_SIMD_ENV}={raw:?}: level {want}");
        println!("child: {CPU_SIMD_ENV}={raw:?} -> {want}, {lanes} f32 lanes");
    }

    /// Run by [`set_max_simd_level_before_and_after_first_use`] in a child process: the code
    /// cap wins over the environment's before first use, and is refused once the level is
    /// fixed (unless it would give the same level).
    #[test]
    #[ignore = "run by set_max_simd_level_before_and_after_first_use in a child process"]
    fn child_set_max_simd_level() {
        let detected = detected_simd_level();
        let want = detected.capped(Some(SimdLevel::Avx2));
        assert_eq!(set_max_simd_level(SimdLevel::Avx2).unwrap(), want);
        assert_eq!(simd_level(), want);
        assert_eq!(
            set_max_simd_level(SimdLevel::Avx2).unwrap(),
            want,
            "same cap again"
        );
        let scalar = set_max_simd_level(SimdLevel::Scalar);
        if want == SimdLevel::Scalar {
            assert_eq!(scalar.unwrap(), SimdLevel::Scalar);
        } else {
            let msg = scalar.unwrap_err().to_string();
            assert!(
                msg.starts_with("set_max_simd_level: attribute `cap`: ")
                    && msg.contains(&format!("already fixed at {want}"))
                    && msg.contains("cap scalar would give scalar"),
                "{msg}"
            );
        }
        println!("child: set_max_simd_level(avx2) -> {want}");
    }

    #[test]
    fn set_max_simd_level_before_and_after_first_use() {
        let exe = std::env::current_exe().expect("the test binary's path");
        // The environment says avx512 (or nothing): the code's avx2 cap wins.
        for env in [Some("avx512"), None] {
            let mut c = std::process::Command::new(&exe);
            c.args([
                "--exact",
                "cpu::simd::tests::child_set_max_simd_level",
                "--ignored",
                "--nocapture",
            ]);
            match env {
                Some(v) => c.env(CPU_SIMD_ENV, v),
                None => c.env_remove(CPU_SIMD_ENV),
            };
            let out = c.output().expect("the child test runs");
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && text.contains("1 passed"),
                "{env:?}:\n{text}"
            );
        }
    }

    #[test]
    fn the_cap_reaches_the_dispatch() {
        let exe = std::env::current_exe().expect("the test binary's path");
        for value in ["scalar", "avx2", "AVX512", "avx512bf16", "sse9", ""] {
            let out = std::process::Command::new(&exe)
                .args([
                    "--exact",
                    "cpu::simd::tests::child_dispatch_under_cap",
                    "--ignored",
                    "--nocapture",
                ])
                .env(CPU_SIMD_ENV, value)
                .output()
                .expect("the child test runs");
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{CPU_SIMD_ENV}={value:?}:\n{text}");
            assert!(
                text.contains("1 passed"),
                "{CPU_SIMD_ENV}={value:?}: the child test did not run:\n{text}"
            );
        }
    }
}
