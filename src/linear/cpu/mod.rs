//! CPU kernels of `linear`: per-family dot products, each with a portable scalar reference
//! and x86 paths that return the same bits on every tier of [`Isa`] (the evaluation order is
//! fixed per family and written down next to each kernel; docs/linear.md).
//!
//! - [`float`] (AVX2: `float_avx2`, AVX-512: `float_avx512`): bf16 / fp32 words, grouped codes, E4M3FN and nvfp4
//!   codes read in place (and any decodable format, through a decoded f32 row) against f32
//!   activations.
//! - [`gguf`]: which family kernel a gguf_* block type runs on, all against q8_1
//!   activations: [`legacy`] (Q8_0, Q4_0, Q5_0, Q2_0, IQ4_NL, IQ4_XS), [`kquants`]
//!   (Q2_K..Q6_K), [`iquants`] (IQ1/IQ2/IQ3 grid types).
//! - [`gguf_q8k`]: the k-quants and 256-value i-quants against q8_K activations (the
//!   opt-in `Activation::Q8K` profile).
//! - [`grouped_q8`] (AVX2: `grouped_q8_avx2`, AVX-512: `grouped_q8_avx512`): the grouped formats against q8_1 activations
//!   (the opt-in `Activation::Q8_1` profile).
//! - [`nvfp4_q8`] (x86: `nvfp4_q8_avx2`, every tier): nvfp4 against q8_1 activations (the same opt-in
//!   profile).
//! - With several activation rows on the AVX-512 tier: `legacy_tile_avx512`,
//!   `kquants_tile_avx512`, `grouped_tile_avx512` and `nvfp4_tile_avx512`, one or two sets
//!   of four weight rows against groups of four activation rows interleaved once per
//!   forward (`Rows::arrange_quads`), one 512-bit lane per (weight row, activation row) pair
//!   of a set, each activation broadcast serving both sets (the engine hands them eight
//!   weight rows per call); each
//!   family's dispatcher takes them from a per-type row count on (same bits; Q2_K has
//!   none: `kquants_avx512`'s group-major pass kernel is faster at every M). On the
//!   256-bit tiers `kquants_tile_avx2` does the same for Q3_K–Q6_K, two weight rows per
//!   256-bit vector.
//! - On the AVX-512 tier of a CPU with AMX-INT8 (`Cpu::amx_int8`): `kquants_amx`,
//!   `legacy_amx`, `grouped_amx` and `iquants_avx2::avx512::dot_row_group_amx`, the
//!   k-quants, the legacy types but Q2_0, the grouped formats against q8_1 and the signed
//!   i-quant grids from 16 activation rows, 16 weight rows against groups of
//!   16 activation rows interleaved once per forward (`Rows::arrange_groups`), the block
//!   sums from `tdpbusd` (`amx`: the tile configuration and the instructions as inline
//!   assembly).

/// The pass shapes of the x86 block kernels (legacy, grouped, nvfp4 against q8_1), shared
/// by each family's row-group entry: with one activation row `x0` (GEMV), the weight rows
/// in runs `wr` of `R` = 1..=4 rows that share each activation load (`$rows`; any number
/// of weight rows, four at a time); with several, each weight row `w` meets up to four
/// activation rows `xc` (`C` of them) at a time (`$tile`). Both write their results into
/// `res[..R]` / `res[..C]`, copied out in row-of-W-major order. `R` and `C` are consts in
/// `$rows` / `$tile`, so each shape is its own monomorphized pass. The caller checks the
/// bounds and that `xs` is not empty.
#[cfg(target_arch = "x86_64")]
macro_rules! passes {
    ($ws:expr, $xs:expr, $out:expr, $res:ident,
     rows |$R:ident, $wr:ident, $x0:ident| $rows:expr,
     tile |$C:ident, $w:ident, $xc:ident| $tile:expr $(,)?) => {{
        let (ws, xs, out) = ($ws, $xs, $out);
        let m = xs.len();
        assert!(m > 0 && out.len() == ws.len() * m);
        let mut $res = [0f32; 4];
        if m == 1 {
            let $x0 = &xs[0];
            for ($wr, o) in ws.chunks(4).zip(out.chunks_mut(4)) {
                match $wr.len() {
                    4 => {
                        const $R: usize = 4;
                        $rows
                    }
                    3 => {
                        const $R: usize = 3;
                        $rows
                    }
                    2 => {
                        const $R: usize = 2;
                        $rows
                    }
                    _ => {
                        const $R: usize = 1;
                        $rows
                    }
                }
                o.copy_from_slice(&$res[..o.len()]);
            }
        } else {
            for ($w, o) in ws.iter().zip(out.chunks_exact_mut(m)) {
                for ($xc, o) in xs.chunks(4).zip(o.chunks_mut(4)) {
                    match $xc.len() {
                        4 => {
                            const $C: usize = 4;
                            $tile
                        }
                        3 => {
                            const $C: usize = 3;
                            $tile
                        }
                        2 => {
                            const $C: usize = 2;
                            $tile
                        }
                        _ => {
                            const $C: usize = 1;
                            $tile
                        }
                    }
                    o.copy_from_slice(&$res[..o.len()]);
                }
            }
        }
    }};
}

#[cfg(target_arch = "x86_64")]
mod amx;
pub(crate) mod engine;
pub(crate) mod float;
#[cfg(target_arch = "x86_64")]
mod float_avx2;
#[cfg(target_arch = "x86_64")]
mod float_avx512;
pub(crate) mod gguf;
pub(crate) mod gguf_q8k;
#[cfg(target_arch = "x86_64")]
mod gguf_q8k_avx2;
#[cfg(target_arch = "x86_64")]
mod grouped_amx;
pub(crate) mod grouped_q8;
#[cfg(target_arch = "x86_64")]
mod grouped_q8_avx2;
#[cfg(target_arch = "x86_64")]
mod grouped_q8_avx512;
#[cfg(target_arch = "x86_64")]
mod grouped_tile_avx512;
pub(crate) mod iquants;
#[cfg(target_arch = "x86_64")]
mod iquants_avx2;
pub(crate) mod kquants;
#[cfg(target_arch = "x86_64")]
mod kquants_amx;
#[cfg(target_arch = "x86_64")]
mod kquants_avx2;
#[cfg(target_arch = "x86_64")]
mod kquants_avx512;
#[cfg(target_arch = "x86_64")]
mod kquants_tile_avx2;
#[cfg(target_arch = "x86_64")]
mod kquants_tile_avx512;
pub(crate) mod legacy;
#[cfg(target_arch = "x86_64")]
mod legacy_amx;
#[cfg(target_arch = "x86_64")]
mod legacy_avx2;
#[cfg(target_arch = "x86_64")]
mod legacy_tile_avx512;
pub(crate) mod nvfp4_q8;
#[cfg(target_arch = "x86_64")]
mod nvfp4_q8_avx2;
#[cfg(target_arch = "x86_64")]
mod nvfp4_tile_avx512;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(target_arch = "x86_64")]
mod tile_avx512;

pub use crate::isa::Isa;

/// Lane i of a chunk's vectors holds block `P[i]` of the chunk: what three `vphaddd` of
/// four block-pair vectors leave (the x86 legacy and grouped kernels).
#[cfg(target_arch = "x86_64")]
const P: [i32; 8] = [0, 2, 4, 6, 1, 3, 5, 7];
/// The inverse of [`P`]: block c of the chunk is lane `PINV[c]`.
#[cfg(target_arch = "x86_64")]
const PINV: [i32; 8] = [0, 4, 1, 5, 2, 6, 3, 7];

/// The result of an accumulator whose lane j is `acc[j]` of the reference: `tail` (the
/// scalar steps of the blocks past the last whole chunk, if `has_tail`) added, then
/// [`tree8`]; in registers when there is no tail.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn finish_lanes(
    acc: std::arch::x86_64::__m256,
    has_tail: bool,
    tail: impl FnOnce(&mut [f32; 8]),
) -> f32 {
    use std::arch::x86_64::*;
    if !has_tail {
        return tree8_m256(acc);
    }
    let mut a = [0f32; 8];
    // SAFETY: `a` holds 8 four-byte lanes (an unaligned store).
    unsafe { _mm256_storeu_ps(a.as_mut_ptr(), acc) };
    tail(&mut a);
    tree8(a)
}

/// [`finish_lanes`] of a chunked pass's accumulator (lane `PINV[c]` is block c of the
/// chunk), its lanes first put back in block order.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
fn finish_unpermuted(
    acc: std::arch::x86_64::__m256,
    has_tail: bool,
    tail: impl FnOnce(&mut [f32; 8]),
) -> f32 {
    use std::arch::x86_64::*;
    // SAFETY: `PINV` holds 8 four-byte lanes (an unaligned load).
    let pinv = unsafe { _mm256_loadu_si256(PINV.as_ptr().cast()) };
    finish_lanes(_mm256_permutevar8x32_ps(acc, pinv), has_tail, tail)
}

/// The sums of two chunks' blocks whose products lie in two i32 lanes each (block j of
/// chunk c in lanes 2j, 2j + 1 of `s[c]`): the pairs gathered by two `vpermt2d` and added,
/// lanes 0..8 chunk 0's block sums, 8..16 chunk 1's.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn pair_sums(
    s0: std::arch::x86_64::__m512i,
    s1: std::arch::x86_64::__m512i,
) -> std::arch::x86_64::__m512i {
    use std::arch::x86_64::*;
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    _mm512_add_epi32(
        _mm512_permutex2var_epi32(s0, even, s1),
        _mm512_permutex2var_epi32(s0, odd, s1),
    )
}

/// [`tree8`] of the eight lanes of `v`, in registers: the same additions in the same order
/// (256 → 128 → 64 → 32 halving), so the same bits, without the round trip through memory
/// (a lane store and narrower reloads, which stall store forwarding).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx")]
fn tree8_m256(v: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    // t[i] = a[i] + a[i + 4]
    let t = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    // u[i] = t[i] + t[i + 2] (lanes 0, 1)
    let u = _mm_add_ps(t, _mm_movehl_ps(t, t));
    // u[0] + u[1]
    _mm_cvtss_f32(_mm_add_ss(u, _mm_movehdup_ps(u)))
}

/// `acc ← fma(d[8..16], t[8..16], fma(d[0..8], t[0..8], acc))`: the steps of two chunks
/// (lanes 0..8 the first, 8..16 the second), in block order.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn fma2(
    d: std::arch::x86_64::__m512,
    t: std::arch::x86_64::__m512i,
    acc: std::arch::x86_64::__m256,
) -> std::arch::x86_64::__m256 {
    use std::arch::x86_64::*;
    let t = _mm512_cvtepi32_ps(t);
    let acc = _mm256_fmadd_ps(_mm512_castps512_ps256(d), _mm512_castps512_ps256(t), acc);
    // The high halves (AVX-512 F: as 64-bit lanes).
    let hi = |v: __m512| _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v)));
    _mm256_fmadd_ps(hi(d), hi(t), acc)
}

/// Prefetches (to L2) the `len` bytes from `at`: weight bytes a kernel reads a little
/// later. Prefetching an address past the plane is harmless, so the pointer is only
/// computed (`wrapping_add` by the caller), never read.
#[cfg(target_arch = "x86_64")]
#[inline]
fn prefetch_l2(at: *const u8, len: usize) {
    use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
    for o in (0..len).step_by(64) {
        // SAFETY: a prefetch reads no memory (an unsafe function in older Rust releases).
        #[allow(unused_unsafe)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T1>(at.wrapping_add(o).cast())
        };
    }
}

/// Sums eight lanes in the fixed tree every kernel uses: `t[i] = a[i] + a[i+4]`,
/// `u[i] = t[i] + t[i+2]`, `u[0] + u[1]` (the order of AVX2's 256 → 128 → 64 → 32 halving).
#[inline]
pub(crate) fn tree8(a: [f32; 8]) -> f32 {
    let t = [a[0] + a[4], a[1] + a[5], a[2] + a[6], a[3] + a[7]];
    let u = [t[0] + t[2], t[1] + t[3]];
    u[0] + u[1]
}
