//! The AVX-512 tier of the GGUF dequantizers ([`Isa::Avx512`](crate::isa::Isa::Avx512)):
//! the value stores of [`gguf_kernels`] at 512 bits (16 f32 per conversion, product and
//! store; grid signs applied under a lane mask), and its expansion for AVX2 + F16C +
//! AVX-512 F/BW/VL. The codes are built as in the AVX2 tier; only the widening to f32, the
//! scale products and the stores are twice as wide, with the same f32 operations.
//!
//! # Safety
//! Every function here requires AVX2, F16C and AVX-512 F/BW/VL; callers go through
//! `dequantizer`, whose caller checks that the machine runs the AVX-512 tier. Stores go
//! through slices indexed to the length they write.

// Intrinsics became safe inside `#[target_feature]` functions after our MSRV (1.85).
#![allow(unused_unsafe)]

use super::blocks::{
    iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_nl, iq4_xs, q2_0, q2_k, q3_k, q4_0,
    q4_k, q5_0, q5_k, q6_k, q8_0,
};
use super::grids::{
    IQ1M_DELTA, IQ1S_DELTA, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
    KSIGNS_IQ2XS, KVALUES_IQ4NL,
};
use super::iquants::signed_delta;
use super::{f16_at, u16_at, u32_at};
use crate::registry::Format;
use std::arch::x86_64::*;

/// A row dequantizer (same contract as the scalar ones).
type DequantizeFn = fn(&[u8], &mut [f32]);

gguf_kernels!("avx2,f16c,avx512f,avx512bw,avx512vl");

/// 16 i8 codes as f32 (exact).
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn cvt16(q: __m128i) -> __m512 {
    // SAFETY: AVX-512 F is enabled (module doc).
    unsafe { _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)) }
}

/// 16 u8 codes at `q` as f32 (exact).
///
/// # Safety
/// The tier's features; `q` readable for 16 bytes.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn cvt16_u8(q: *const u8) -> __m512 {
    // SAFETY: the caller's contract.
    unsafe { _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(q.cast()))) }
}

/// `y[j] = q[j] · d` for 32 i8 codes, codes 0..16 scaled by `d0`, 16..32 by `d1`.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn store_scaled(y: &mut [f32], q: __m256i, d0: f32, d1: f32) {
    // SAFETY: the tier's features are enabled (module doc); `y` holds 32 floats.
    unsafe {
        let y = &mut y[..32];
        let p = y.as_mut_ptr();
        let (a, b) = (
            cvt16(_mm256_castsi256_si128(q)),
            cvt16(_mm256_extracti128_si256::<1>(q)),
        );
        _mm512_storeu_ps(p, _mm512_mul_ps(_mm512_set1_ps(d0), a));
        _mm512_storeu_ps(p.add(16), _mm512_mul_ps(_mm512_set1_ps(d1), b));
    }
}

/// `y[j] = d · q[j] − m` for 32 codes, (d0, m0) for codes 0..16 and (d1, m1) for 16..32.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn store_affine(y: &mut [f32], q: __m256i, d0: f32, m0: f32, d1: f32, m1: f32) {
    // SAFETY: the tier's features are enabled (module doc); `y` holds 32 floats.
    unsafe {
        let y = &mut y[..32];
        let p = y.as_mut_ptr();
        let (a, b) = (
            cvt16(_mm256_castsi256_si128(q)),
            cvt16(_mm256_extracti128_si256::<1>(q)),
        );
        let v0 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(d0), a), _mm512_set1_ps(m0));
        let v1 = _mm512_sub_ps(_mm512_mul_ps(_mm512_set1_ps(d1), b), _mm512_set1_ps(m1));
        _mm512_storeu_ps(p, v0);
        _mm512_storeu_ps(p.add(16), v1);
    }
}

/// `y[j] = q[j] · d` for the 32 i8 codes at `q`, widened straight from memory.
///
/// # Safety
/// The tier's features; `q` readable for 32 bytes, `y` writable for 32 floats.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn q8_block(q: *const u8, y: *mut f32, d: f32) {
    // SAFETY: the caller's contract; 16-byte loads and 16-float stores within those bounds.
    unsafe {
        let d = _mm512_set1_ps(d);
        for k in 0..2 {
            let c = _mm512_cvtepi8_epi32(_mm_loadu_si128(q.add(16 * k).cast()));
            _mm512_storeu_ps(y.add(16 * k), _mm512_mul_ps(d, _mm512_cvtepi32_ps(c)));
        }
    }
}

/// The 64 values of 32 Q4_K code bytes at `q` into `y`: low nibbles `s[j]·q − s[8 + j]`,
/// then high nibbles `s[j + 1]·q − s[9 + j]`, from i32 lanes of 16 code bytes.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn q4_k_chunk(y: &mut [f32], q: &[u8], s: &[f32; 16], j: usize) {
    // SAFETY: the tier's features are enabled (module doc); `y` holds 64 floats, `q` 32
    // bytes (both indexed to those lengths).
    unsafe {
        let (y, q) = (&mut y[..64], &q[..32]);
        let m4 = _mm512_set1_epi32(0x0F);
        let (d1, m1) = (_mm512_set1_ps(s[j]), _mm512_set1_ps(s[8 + j]));
        let (d2, m2) = (_mm512_set1_ps(s[j + 1]), _mm512_set1_ps(s[9 + j]));
        for h in 0..2 {
            let x = _mm512_cvtepu8_epi32(_mm_loadu_si128(q.as_ptr().add(16 * h).cast()));
            let lo = _mm512_cvtepi32_ps(_mm512_and_si512(x, m4));
            let hi = _mm512_cvtepi32_ps(_mm512_srli_epi32::<4>(x));
            let p = y.as_mut_ptr().add(16 * h);
            _mm512_storeu_ps(p, _mm512_sub_ps(_mm512_mul_ps(d1, lo), m1));
            _mm512_storeu_ps(p.add(32), _mm512_sub_ps(_mm512_mul_ps(d2, hi), m2));
        }
    }
}

/// `y[j] = d · q[j] − m` for the 32 u8 codes of `q`.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn store_affine_u8(y: &mut [f32], q: &[u8], d: f32, m: f32) {
    // SAFETY: the tier's features are enabled (module doc); `y` holds 32 floats, `q` 32
    // bytes (both indexed to those lengths).
    unsafe {
        let (y, q) = (&mut y[..32], &q[..32]);
        let (d, m) = (_mm512_set1_ps(d), _mm512_set1_ps(m));
        for h in 0..2 {
            let v = _mm512_sub_ps(_mm512_mul_ps(d, cvt16_u8(q.as_ptr().add(16 * h))), m);
            _mm512_storeu_ps(y.as_mut_ptr().add(16 * h), v);
        }
    }
}

/// `y[j] = (db · grid[j]) · ±1` for two grid points `a`, `b` (`(grid, signs)`: 8 unsigned
/// magnitudes, sign bit j set → −1), as the scalar `put8`: the product by −1.0 is taken
/// under a lane mask (a product by +1.0 is the identity, NaN included).
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn grid16(y: &mut [f32], db: f32, a: (u64, u8), b: (u64, u8)) {
    // SAFETY: the tier's features are enabled (module doc); `y` holds 16 floats.
    unsafe {
        let y = &mut y[..16];
        let g = _mm512_cvtepu8_epi32(_mm_set_epi64x(b.0 as i64, a.0 as i64));
        let v = _mm512_mul_ps(_mm512_set1_ps(db), _mm512_cvtepi32_ps(g));
        let neg = u16::from(a.1) | (u16::from(b.1) << 8);
        let v = _mm512_mask_mul_ps(v, neg, v, _mm512_set1_ps(-1.0));
        _mm512_storeu_ps(y.as_mut_ptr(), v);
    }
}

/// `y[j] = dl · (grid[j] + delta)` for two IQ1 grid points `a`, `b` (`(grid, delta)`, i8
/// values), as the scalar code.
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
#[inline]
unsafe fn grid16_iq1(y: &mut [f32], dl: f32, a: (u64, f32), b: (u64, f32)) {
    // SAFETY: the tier's features are enabled (module doc); `y` holds 16 floats.
    unsafe {
        let y = &mut y[..16];
        let g = _mm512_cvtepi8_epi32(_mm_set_epi64x(b.0 as i64, a.0 as i64));
        let delta = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(a.1), _mm512_set1_ps(b.1));
        let v = _mm512_mul_ps(
            _mm512_set1_ps(dl),
            _mm512_add_ps(_mm512_cvtepi32_ps(g), delta),
        );
        _mm512_storeu_ps(y.as_mut_ptr(), v);
    }
}
