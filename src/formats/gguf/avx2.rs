//! The AVX2 tier of the GGUF dequantizers ([`Isa::Avx2`](crate::isa::Isa::Avx2) and
//! above): the value stores of [`gguf_kernels`] at 256 bits, and its expansion for AVX2 +
//! F16C.
//!
//! # Safety
//! Every function here requires AVX2 and F16C; callers go through `dequantizer`, whose
//! caller checks that the machine runs the AVX2 tier. Stores go through slices indexed to
//! the length they write.

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

gguf_kernels!("avx2,f16c");

/// 8 i8 codes (low 8 bytes of `q`) as f32.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn cvt8(q: __m128i) -> __m256 {
    // SAFETY: AVX2 is enabled (module doc); every access is to whole blocks in bounds.
    unsafe { _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)) }
}

/// The four 8-code quarters of 32 i8 codes.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn quarters(q: __m256i) -> [__m256; 4] {
    // SAFETY: AVX2 is enabled (module doc); every access is to whole blocks in bounds.
    unsafe {
        let lo = _mm256_castsi256_si128(q);
        let hi = _mm256_extracti128_si256::<1>(q);
        [
            cvt8(lo),
            cvt8(_mm_srli_si128::<8>(lo)),
            cvt8(hi),
            cvt8(_mm_srli_si128::<8>(hi)),
        ]
    }
}

/// `y[j] = q[j] · d` for 32 i8 codes, codes 0..16 scaled by `d0`, 16..32 by `d1`.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn store_scaled(y: &mut [f32], q: __m256i, d0: f32, d1: f32) {
    // SAFETY: AVX2 is enabled (module doc); every access is to whole blocks in bounds.
    unsafe {
        let (d0, d1) = (_mm256_set1_ps(d0), _mm256_set1_ps(d1));
        let y = &mut y[..32];
        let p = y.as_mut_ptr();
        let [a, b, c, e] = quarters(q);
        // SAFETY: `y` holds 32 floats.
        unsafe {
            _mm256_storeu_ps(p, _mm256_mul_ps(d0, a));
            _mm256_storeu_ps(p.add(8), _mm256_mul_ps(d0, b));
            _mm256_storeu_ps(p.add(16), _mm256_mul_ps(d1, c));
            _mm256_storeu_ps(p.add(24), _mm256_mul_ps(d1, e));
        }
    }
}

/// `y[j] = d · q[j] − m` for 32 codes, (d0, m0) for codes 0..16 and (d1, m1) for 16..32.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn store_affine(y: &mut [f32], q: __m256i, d0: f32, m0: f32, d1: f32, m1: f32) {
    // SAFETY: AVX2 is enabled (module doc); every access is to whole blocks in bounds.
    unsafe {
        let (d0, m0) = (_mm256_set1_ps(d0), _mm256_set1_ps(m0));
        let (d1, m1) = (_mm256_set1_ps(d1), _mm256_set1_ps(m1));
        let y = &mut y[..32];
        let p = y.as_mut_ptr();
        let [a, b, c, e] = quarters(q);
        // SAFETY: `y` holds 32 floats.
        unsafe {
            _mm256_storeu_ps(p, _mm256_sub_ps(_mm256_mul_ps(d0, a), m0));
            _mm256_storeu_ps(p.add(8), _mm256_sub_ps(_mm256_mul_ps(d0, b), m0));
            _mm256_storeu_ps(p.add(16), _mm256_sub_ps(_mm256_mul_ps(d1, c), m1));
            _mm256_storeu_ps(p.add(24), _mm256_sub_ps(_mm256_mul_ps(d1, e), m1));
        }
    }
}

/// `y[j] = q[j] · d` for the 32 i8 codes at `q`, widened straight from memory.
///
/// # Safety
/// AVX2; `q` readable for 32 bytes, `y` writable for 32 floats.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn q8_block(q: *const u8, y: *mut f32, d: f32) {
    // SAFETY: the caller's contract; 8-byte loads and 8-float stores within those bounds.
    unsafe {
        let d = _mm256_set1_ps(d);
        for k in 0..4 {
            let c = _mm256_cvtepi8_epi32(_mm_loadl_epi64(q.add(8 * k).cast()));
            _mm256_storeu_ps(y.add(8 * k), _mm256_mul_ps(d, _mm256_cvtepi32_ps(c)));
        }
    }
}

/// Stores the 8 floats of `v` at `y` as two 128-bit halves: in the Q4_K and Q5_K loops this
/// measured 3–6% faster than one 256-bit store on the benchmark machine (Zen 3).
///
/// # Safety
/// AVX2; `y` writable for 8 floats.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn store_halves(y: *mut f32, v: __m256) {
    // SAFETY: the caller's contract.
    unsafe {
        _mm_storeu_ps(y, _mm256_castps256_ps128(v));
        _mm_storeu_ps(y.add(4), _mm256_extractf128_ps::<1>(v));
    }
}

/// Stores `d1·lo − m1` at `y` and `d2·hi − m2` at `y + 32` (8 floats each).
///
/// # Safety
/// AVX2; `y` writable for 40 floats.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn store_pair(y: *mut f32, lo: __m256i, hi: __m256i, s: &[f32; 16], j: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        let (d1, m1) = (_mm256_set1_ps(s[j]), _mm256_set1_ps(s[8 + j]));
        let (d2, m2) = (_mm256_set1_ps(s[j + 1]), _mm256_set1_ps(s[9 + j]));
        let lo = _mm256_sub_ps(_mm256_mul_ps(d1, _mm256_cvtepi32_ps(lo)), m1);
        let hi = _mm256_sub_ps(_mm256_mul_ps(d2, _mm256_cvtepi32_ps(hi)), m2);
        store_halves(y, lo);
        store_halves(y.add(32), hi);
    }
}

/// `y[j] = (db · grid[j]) · ±1` for the 8 unsigned magnitudes of a grid point, as the
/// scalar `put8` (sign bit j of `signs` set → −1).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn grid8(y: &mut [f32], db: __m256, grid: u64, signs: u8) {
    // SAFETY: AVX2 is enabled (module doc); every access is to whole blocks in bounds.
    unsafe {
        let y = &mut y[..8];
        let g = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(grid as i64)));
        let bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
        let neg = _mm256_cmpeq_epi32(
            _mm256_and_si256(_mm256_set1_epi32(signs as i32), bits),
            bits,
        );
        let s = _mm256_blendv_ps(
            _mm256_set1_ps(1.0),
            _mm256_set1_ps(-1.0),
            _mm256_castsi256_ps(neg),
        );
        // SAFETY: `y` holds 8 floats.
        unsafe { _mm256_storeu_ps(y.as_mut_ptr(), _mm256_mul_ps(_mm256_mul_ps(db, g), s)) }
    }
}

/// `y[j] = dl · (grid[j] + delta)` for an IQ1 grid point (i8 values), as the scalar code.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn grid8_iq1(y: &mut [f32], dl: __m256, grid: u64, delta: __m256) {
    // SAFETY: AVX2 is enabled (module doc); every access is to whole blocks in bounds.
    unsafe {
        let y = &mut y[..8];
        let g = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_cvtsi64_si128(grid as i64)));
        // SAFETY: `y` holds 8 floats.
        unsafe { _mm256_storeu_ps(y.as_mut_ptr(), _mm256_mul_ps(dl, _mm256_add_ps(g, delta))) }
    }
}

/// The 64 values of 32 Q4_K code bytes at `q` into `y`: low nibbles `s[j]·q − s[8 + j]`,
/// then high nibbles `s[j + 1]·q − s[9 + j]`. In i32 lanes loaded straight from 8 code
/// bytes (`vpmovzxbd`): both nibbles of a byte come out with one mask or shift each.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn q4_k_chunk(y: &mut [f32], q: &[u8], s: &[f32; 16], j: usize) {
    // SAFETY: AVX2 is enabled (module doc); the slices are indexed to their lengths.
    unsafe {
        let (y, q) = (&mut y[..64], &q[..32]);
        let m4 = _mm256_set1_epi32(0x0F);
        for l in 0..4 {
            // SAFETY: `q` holds 32 bytes.
            let x = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(q.as_ptr().add(8 * l).cast()) });
            let (lo, hi) = (_mm256_and_si256(x, m4), _mm256_srli_epi32::<4>(x));
            // SAFETY: `y` holds 64 floats: 8 l + 40 <= 64.
            unsafe { store_pair(y.as_mut_ptr().add(8 * l), lo, hi, s, j) }
        }
    }
}

/// `y[j] = d · q[j] − m` for the 32 u8 codes of `q`.
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn store_affine_u8(y: &mut [f32], q: &[u8], d: f32, m: f32) {
    // SAFETY: AVX2 is enabled (module doc); the slices are indexed to their lengths.
    unsafe {
        let (y, q) = (&mut y[..32], &q[..32]);
        let (d, m) = (_mm256_set1_ps(d), _mm256_set1_ps(m));
        for l in 0..4 {
            // SAFETY: `q` holds 32 bytes.
            let x = _mm256_cvtepu8_epi32(unsafe { _mm_loadl_epi64(q.as_ptr().add(8 * l).cast()) });
            let v = _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(x)), m);
            // SAFETY: `y` holds 32 floats.
            unsafe { store_halves(y.as_mut_ptr().add(8 * l), v) }
        }
    }
}

/// Two grid points (`(grid, signs)`) into `y[..16]` ([`grid8`] each).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn grid16(y: &mut [f32], db: f32, a: (u64, u8), b: (u64, u8)) {
    // SAFETY: AVX2 is enabled (module doc).
    unsafe {
        let db = _mm256_set1_ps(db);
        grid8(&mut y[..8], db, a.0, a.1);
        grid8(&mut y[8..16], db, b.0, b.1);
    }
}

/// Two IQ1 grid points (`(grid, delta)`) into `y[..16]` ([`grid8_iq1`] each).
#[target_feature(enable = "avx2,f16c")]
#[inline]
unsafe fn grid16_iq1(y: &mut [f32], dl: f32, a: (u64, f32), b: (u64, f32)) {
    // SAFETY: AVX2 is enabled (module doc).
    unsafe {
        let dl = _mm256_set1_ps(dl);
        grid8_iq1(&mut y[..8], dl, a.0, _mm256_set1_ps(a.1));
        grid8_iq1(&mut y[8..16], dl, b.0, _mm256_set1_ps(b.1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The F16C widening used for block scales equals `f16_at` on every binary16 word.
    fn available() -> bool {
        crate::isa::Isa::Avx2.available()
    }

    #[test]
    fn f16c_widening_matches_f16_at() {
        if !available() {
            return;
        }
        for w in 0..=u16::MAX {
            let b = w.to_le_bytes();
            // SAFETY: F16C was detected just above.
            let v = unsafe { _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(w as i32))) };
            assert_eq!(
                v.to_bits(),
                f16_at(&b, 0).to_bits(),
                "binary16 word {w:#06x}"
            );
        }
    }

    /// Q8_0 on every prefix of the gguf-py fixture's blocks (8-block groups plus every tail
    /// length) gives the oracle's words, on every tier.
    #[test]
    fn q8_0_group_and_tail_match_oracle_every_tier() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/gguf/gguf_q8_0_random.bin"
        );
        let data = std::fs::read(path).expect("fixture missing: run scripts/fixtures");
        // 8 rows × 256 values: 64 blocks of 34 bytes, then the expected f32 words.
        let (blocks, words) = data.split_at(64 * 34);
        let expected: Vec<u32> = words
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        assert_eq!(expected.len(), 64 * 32);
        for isa in crate::isa::Isa::tested() {
            for n in 0..=64 {
                let mut out = vec![0f32; 32 * n];
                super::super::dequantize_with(isa, Format::GgufQ8_0, &blocks[..34 * n], &mut out)
                    .unwrap();
                for (i, (y, &e)) in out.iter().zip(&expected).enumerate() {
                    assert_eq!(y.to_bits(), e, "{isa:?}: {n} blocks, value {i}");
                }
            }
        }
    }
}
