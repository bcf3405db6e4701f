//! f32 dot products of one weight row with activation rows: bf16 / fp32 weight words, or a
//! row already decoded to f32 (every other decodable format).
//!
//! Evaluation order (the same bits on every path): element k of the row accumulates into
//! lane `k mod 8` of accumulator `(k / 8) mod 4` by a fused multiply-add,
//! `acc ← fma(w_k, x_k, acc)`, in increasing k; then `s[l] = (acc0[l] + acc1[l]) +
//! (acc2[l] + acc3[l])` and the eight lanes are summed by [`super::tree8`].

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::{Isa, tree8};

/// One weight row as the kernel reads it.
#[derive(Clone, Copy)]
pub(crate) enum WRow<'a> {
    /// bf16 little-endian words (2 bytes per value).
    Bf16Le(&'a [u8]),
    /// fp32 little-endian words (4 bytes per value).
    F32Le(&'a [u8]),
    /// Decoded values.
    F32(&'a [f32]),
}

impl WRow<'_> {
    fn len(&self) -> usize {
        match self {
            WRow::Bf16Le(b) => b.len() / 2,
            WRow::F32Le(b) => b.len() / 4,
            WRow::F32(v) => v.len(),
        }
    }

    #[inline(always)]
    fn get(&self, k: usize) -> f32 {
        match self {
            WRow::Bf16Le(b) => {
                f32::from_bits((u16::from_le_bytes([b[2 * k], b[2 * k + 1]]) as u32) << 16)
            }
            WRow::F32Le(b) => {
                f32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]])
            }
            WRow::F32(v) => v[k],
        }
    }
}

/// `out[r] = Σ_k w_k · x[r·K + k]` for every activation row r (K = the row's length,
/// `x.len() == out.len() · K`), in the order of the module docs.
pub(crate) fn dot_rows(isa: Isa, w: WRow<'_>, x: &[f32], out: &mut [f32]) {
    let k = w.len();
    debug_assert_eq!(x.len(), out.len() * k);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects Isa::Avx2 only after run-time detection.
        Isa::Avx2 => unsafe { avx2::dot_rows(w, x, out) },
        _ => {
            for (o, xr) in out.iter_mut().zip(x.chunks_exact(k.max(1))) {
                *o = dot_scalar(&w, xr);
            }
        }
    }
}

/// The lanes' final reduction (shared by both paths).
#[inline]
fn finish(acc: &[[f32; 8]; 4]) -> f32 {
    let mut s = [0f32; 8];
    for l in 0..8 {
        s[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
    }
    tree8(s)
}

/// The reference order, one element at a time from `start` (accumulators given).
#[inline]
fn accumulate_scalar(w: &WRow<'_>, x: &[f32], start: usize, acc: &mut [[f32; 8]; 4]) {
    for (k, &xk) in x.iter().enumerate().skip(start) {
        let a = &mut acc[(k / 8) % 4][k % 8];
        *a = w.get(k).mul_add(xk, *a);
    }
}

fn dot_scalar(w: &WRow<'_>, x: &[f32]) -> f32 {
    let mut acc = [[0f32; 8]; 4];
    accumulate_scalar(w, x, 0, &mut acc);
    finish(&acc)
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{WRow, accumulate_scalar, finish};
    use std::arch::x86_64::*;

    /// Eight weights starting at element k.
    ///
    /// # Safety
    /// `k + 8 <= w.len()`; AVX2 available.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn load8(w: &WRow<'_>, k: usize) -> __m256 {
        // SAFETY: k + 8 values are in bounds (caller); unaligned loads.
        unsafe {
            match w {
                WRow::Bf16Le(b) => {
                    let h = _mm_loadu_si128(b.as_ptr().add(2 * k).cast());
                    _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
                }
                WRow::F32Le(b) => _mm256_loadu_ps(b.as_ptr().add(4 * k).cast()),
                WRow::F32(v) => _mm256_loadu_ps(v.as_ptr().add(k)),
            }
        }
    }

    /// Rows of `x` in pairs (sharing each weight load), then a last single row.
    ///
    /// # Safety
    /// AVX2, FMA and F16C must be available.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot_rows(w: WRow<'_>, x: &[f32], out: &mut [f32]) {
        let k = w.len();
        let mut r = 0;
        while r + 2 <= out.len() {
            let (x0, x1) = (&x[r * k..(r + 1) * k], &x[(r + 1) * k..(r + 2) * k]);
            // SAFETY: features enabled by the caller's contract.
            let [a, b] = unsafe { dot2(&w, x0, x1) };
            out[r] = a;
            out[r + 1] = b;
            r += 2;
        }
        if r < out.len() {
            // SAFETY: as above.
            out[r] = unsafe { dot1(&w, &x[r * k..(r + 1) * k]) };
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn store(v: [__m256; 4]) -> [[f32; 8]; 4] {
        let mut a = [[0f32; 8]; 4];
        for (o, v) in a.iter_mut().zip(v) {
            // SAFETY: 8 writable floats.
            unsafe { _mm256_storeu_ps(o.as_mut_ptr(), v) };
        }
        a
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot1(w: &WRow<'_>, x: &[f32]) -> f32 {
        let k = x.len();
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= k {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: i + 32 <= k for both rows.
                unsafe {
                    let wv = load8(w, i + 8 * j);
                    *a = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x.as_ptr().add(i + 8 * j)), *a);
                }
            }
            i += 32;
        }
        let mut a = store(acc);
        accumulate_scalar(w, x, i, &mut a);
        finish(&a)
    }

    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn dot2(w: &WRow<'_>, x0: &[f32], x1: &[f32]) -> [f32; 2] {
        let k = x0.len();
        let mut acc0 = [_mm256_setzero_ps(); 4];
        let mut acc1 = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        while i + 32 <= k {
            for j in 0..4 {
                // SAFETY: i + 32 <= k for the weight row and both activation rows.
                unsafe {
                    let wv = load8(w, i + 8 * j);
                    acc0[j] =
                        _mm256_fmadd_ps(wv, _mm256_loadu_ps(x0.as_ptr().add(i + 8 * j)), acc0[j]);
                    acc1[j] =
                        _mm256_fmadd_ps(wv, _mm256_loadu_ps(x1.as_ptr().add(i + 8 * j)), acc1[j]);
                }
            }
            i += 32;
        }
        let (mut a0, mut a1) = (store(acc0), store(acc1));
        accumulate_scalar(w, x0, i, &mut a0);
        accumulate_scalar(w, x1, i, &mut a1);
        [finish(&a0), finish(&a1)]
    }
}
