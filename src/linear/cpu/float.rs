//! f32 dot products of weight rows with activation rows: bf16 / fp32 weight words, or rows
//! already decoded to f32 (every other decodable format).
//!
//! Evaluation order (the same bits on every path): element k of the row accumulates into
//! lane `k mod 8` of one eight-lane accumulator by a fused multiply-add,
//! `acc[k mod 8] ← fma(w_k, x_k, acc[k mod 8])`, in increasing k; the eight lanes are then
//! summed by [`super::tree8`]. Independent outputs (a tile of up to 4 weight rows × 2
//! activation rows) run side by side, which gives the AVX2 path its parallelism and reuses
//! each loaded weight vector across activation rows and each activation vector across
//! weight rows.

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
    /// q4_g64_fp16 in row_split_k128_v1: `codes` = the row's plane-0 bytes (element k is
    /// nibble k mod 2 of byte k/2, low nibble first, 4-bit two's complement), `scales` =
    /// its binary16 scales (one per 64 values); `k` = K. Value: `f32(scale) · code` (§6.2,
    /// exact).
    Q4 {
        codes: &'a [u8],
        scales: &'a [u8],
        k: usize,
    },
    /// q8_g32_fp16 in row_split_k128_v1: byte k is the code (i8), one binary16 scale per 32.
    Q8 {
        codes: &'a [u8],
        scales: &'a [u8],
        k: usize,
    },
    /// fp8_e4m3fn_row_bf16 / _fp16: the row's K E4M3FN code bytes and its multiplier's
    /// exact f32 value. Value: `binary32(e4m3fn(c) · scale)` (§3.4).
    Fp8 { codes: &'a [u8], scale: f32 },
    /// nvfp4: the row's E2M1 code bytes (element k is nibble k mod 2 of byte k/2, low
    /// first), its K/16 block scales already decoded from E4M3FN (`sf`), and its source's
    /// FP32 divisor `d`. Value: `binary32(binary32(e2m1(c) · sf) / d)` (§3.3).
    Nvfp4 {
        codes: &'a [u8],
        sf: &'a [f32],
        d: f32,
    },
}

/// The binary16 word at `b[2i..2i + 2]` as f32 (exact).
#[inline(always)]
fn f16_word(b: &[u8], i: usize) -> f32 {
    half::f16::from_bits(u16::from_le_bytes([b[2 * i], b[2 * i + 1]])).to_f32()
}

impl WRow<'_> {
    fn len(&self) -> usize {
        match self {
            WRow::Bf16Le(b) => b.len() / 2,
            WRow::F32Le(b) => b.len() / 4,
            WRow::F32(v) => v.len(),
            WRow::Q4 { k, .. } | WRow::Q8 { k, .. } => *k,
            WRow::Fp8 { codes, .. } => codes.len(),
            WRow::Nvfp4 { codes, .. } => 2 * codes.len(),
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
            WRow::Q4 { codes, scales, .. } => {
                let nib = (codes[k / 2] >> (4 * (k % 2))) & 0x0F;
                f16_word(scales, k / 64) * ((nib ^ 8) as i32 - 8) as f32
            }
            WRow::Q8 { codes, scales, .. } => f16_word(scales, k / 32) * (codes[k] as i8) as f32,
            WRow::Fp8 { codes, scale } => crate::words::e4m3fn::decode(codes[k]) * scale,
            WRow::Nvfp4 { codes, sf, d } => {
                crate::words::e2m1::decode(codes[k / 2] >> (4 * (k % 2))) * sf[k / 16] / d
            }
        }
    }
}

/// `out[i·m + r] = Σ_k w[i]_k · x[r·K + k]` for every weight row i (all of one kind and
/// length K) and activation row r (`x.len() == m · K`), in the order of the module docs.
pub(crate) fn dot_rows(isa: Isa, w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32]) {
    debug_assert_eq!(out.len(), w.len() * m);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects Isa::Avx2 only after run-time detection.
        Isa::Avx2 => unsafe { avx2::dot_rows(w, x, m, out) },
        _ => {
            let k = w.first().map_or(0, |r| r.len());
            for (i, wr) in w.iter().enumerate() {
                for r in 0..m {
                    let mut acc = [0f32; 8];
                    accumulate_scalar(wr, &x[r * k..(r + 1) * k], 0, &mut acc);
                    out[i * m + r] = tree8(acc);
                }
            }
        }
    }
}

/// The values of weight row `w` as f32 (`out.len()` = K): exactly the values the dot
/// kernels multiply, on every instruction set.
pub(crate) fn materialize(isa: Isa, w: &WRow<'_>, out: &mut [f32]) {
    debug_assert_eq!(out.len(), w.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects Isa::Avx2 only after run-time detection.
        Isa::Avx2 => unsafe { avx2::materialize(w, out) },
        _ => {
            for (k, o) in out.iter_mut().enumerate() {
                *o = w.get(k);
            }
        }
    }
}

/// The reference order, one element at a time from `start` (accumulator given).
#[inline]
fn accumulate_scalar(w: &WRow<'_>, x: &[f32], start: usize, acc: &mut [f32; 8]) {
    for (k, &xk) in x.iter().enumerate().skip(start) {
        acc[k % 8] = w.get(k).mul_add(xk, acc[k % 8]);
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{WRow, accumulate_scalar};
    use crate::linear::cpu::tree8;
    use std::arch::x86_64::*;

    /// A weight row's 8-value loads, monomorphized per word type. `P` is what a row needs
    /// (its plane pointers), taken once per tile.
    trait Load {
        type P: Copy;
        fn ptr(w: &WRow<'_>) -> Self::P;
        /// # Safety
        /// `k + 8 <= K`, k a multiple of 8; AVX2 available.
        unsafe fn load8(p: Self::P, k: usize) -> __m256;
    }
    struct Bf16;
    struct F32;
    struct Q4;
    struct Q8;
    struct Fp8;
    struct Nvfp4;
    fn bytes_ptr(w: &WRow<'_>) -> *const u8 {
        match w {
            WRow::Bf16Le(b) | WRow::F32Le(b) => b.as_ptr(),
            WRow::F32(v) => v.as_ptr().cast(),
            WRow::Q4 { codes, .. }
            | WRow::Q8 { codes, .. }
            | WRow::Fp8 { codes, .. }
            | WRow::Nvfp4 { codes, .. } => codes.as_ptr(),
        }
    }
    fn planes_ptr(w: &WRow<'_>) -> (*const u8, *const u8) {
        match w {
            WRow::Q4 { codes, scales, .. } | WRow::Q8 { codes, scales, .. } => {
                (codes.as_ptr(), scales.as_ptr())
            }
            other => (bytes_ptr(other), std::ptr::null()),
        }
    }
    impl Load for Bf16 {
        type P = *const u8;
        fn ptr(w: &WRow<'_>) -> *const u8 {
            bytes_ptr(w)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load8(p: *const u8, k: usize) -> __m256 {
            // SAFETY: 16 bytes in bounds (caller).
            let h = unsafe { _mm_loadu_si128(p.add(2 * k).cast()) };
            _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
        }
    }
    impl Load for F32 {
        type P = *const u8;
        fn ptr(w: &WRow<'_>) -> *const u8 {
            bytes_ptr(w)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load8(p: *const u8, k: usize) -> __m256 {
            // SAFETY: 32 bytes in bounds (caller).
            unsafe { _mm256_loadu_ps(p.add(4 * k).cast()) }
        }
    }
    /// The binary16 scale word `i` of a scales plane, broadcast (exact).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn scale8(s: *const u8, i: usize) -> __m256 {
        // SAFETY: word i is in the row's scales (caller).
        let w = unsafe { std::ptr::read_unaligned(s.add(2 * i).cast::<u16>()) };
        _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(u16::from_le(w) as i32)))
    }
    impl Load for Q4 {
        type P = (*const u8, *const u8);
        fn ptr(w: &WRow<'_>) -> Self::P {
            planes_ptr(w)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load8((c, s): Self::P, k: usize) -> __m256 {
            // SAFETY: the 4 code bytes of elements k..k+8 and their scale (caller).
            unsafe {
                let v = _mm_cvtsi32_si128(std::ptr::read_unaligned(c.add(k / 2).cast::<i32>()));
                let m = _mm_set1_epi8(0x0F);
                let lo = _mm_and_si128(v, m);
                let hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
                // Element order: low nibble of byte 0, high nibble of byte 0, ...
                let q = _mm_unpacklo_epi8(lo, hi);
                let e8 = _mm_set1_epi8(8);
                let q = _mm_sub_epi8(_mm_xor_si128(q, e8), e8);
                let f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
                _mm256_mul_ps(scale8(s, k / 64), f)
            }
        }
    }
    impl Load for Q8 {
        type P = (*const u8, *const u8);
        fn ptr(w: &WRow<'_>) -> Self::P {
            planes_ptr(w)
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load8((c, s): Self::P, k: usize) -> __m256 {
            // SAFETY: the 8 code bytes of elements k..k+8 and their scale (caller).
            unsafe {
                let q = _mm_loadl_epi64(c.add(k).cast());
                let f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q));
                _mm256_mul_ps(scale8(s, k / 32), f)
            }
        }
    }

    /// # Safety
    /// AVX2, FMA and F16C available; every row of `w` has the same kind and length K and
    /// `x.len() == m · K`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot_rows(w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32]) {
        // SAFETY (all calls): the caller's contract.
        unsafe {
            match w.first() {
                Some(WRow::Bf16Le(_)) => tiles::<Bf16>(w, x, m, out),
                Some(WRow::Q4 { .. }) => tiles::<Q4>(w, x, m, out),
                Some(WRow::Q8 { .. }) => tiles::<Q8>(w, x, m, out),
                Some(WRow::Fp8 { .. }) => tiles::<Fp8>(w, x, m, out),
                Some(WRow::Nvfp4 { .. }) => tiles::<Nvfp4>(w, x, m, out),
                Some(_) => tiles::<F32>(w, x, m, out),
                None => {}
            }
        }
    }

    impl Load for Fp8 {
        /// Codes, then the two f32 factors whose product with value/256 gives w: (256·s, 1)
        /// when 256·s is finite (one rounding, as `e4m3fn(c)·s`), else (256, s).
        type P = (*const u8, f32, f32);
        fn ptr(w: &WRow<'_>) -> Self::P {
            match w {
                WRow::Fp8 { codes, scale } if (256.0 * scale).is_finite() => {
                    (codes.as_ptr(), 256.0 * scale, 1.0)
                }
                WRow::Fp8 { codes, scale } => (codes.as_ptr(), 256.0, *scale),
                other => (bytes_ptr(other), 1.0, 1.0),
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load8((c, s1, s2): Self::P, k: usize) -> __m256 {
            // SAFETY: the 8 code bytes of elements k..k+8 (caller).
            let c16 = _mm_cvtepu8_epi16(unsafe { _mm_loadl_epi64(c.add(k).cast()) });
            let v = _mm256_mul_ps(e4m3fn8_div256(c16), _mm256_set1_ps(s1));
            if s2 == 1.0 {
                v
            } else {
                _mm256_mul_ps(v, _mm256_set1_ps(s2))
            }
        }
    }

    /// Eight 4-bit codes from 4 bytes at `c` (element j = nibble j mod 2 of byte j/2, low
    /// first), one per i32 lane.
    ///
    /// # Safety
    /// 4 readable bytes at `c`.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn nibbles8(c: *const u8) -> __m256i {
        // SAFETY: 4 bytes (caller).
        let v = _mm_cvtsi32_si128(unsafe { std::ptr::read_unaligned(c.cast::<i32>()) });
        let m = _mm_set1_epi8(0x0F);
        let lo = _mm_and_si128(v, m);
        let hi = _mm_and_si128(_mm_srli_epi16(v, 4), m);
        _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi))
    }

    impl Load for Nvfp4 {
        type P = (*const u8, *const f32, f32);
        fn ptr(w: &WRow<'_>) -> Self::P {
            match w {
                WRow::Nvfp4 { codes, sf, d } => (codes.as_ptr(), sf.as_ptr(), *d),
                other => (bytes_ptr(other), std::ptr::null(), 1.0),
            }
        }
        #[inline]
        #[target_feature(enable = "avx2,fma,f16c")]
        unsafe fn load8((c, sf, d): Self::P, k: usize) -> __m256 {
            // SAFETY: the 4 code bytes of elements k..k+8 and their block's scale (caller).
            let (n, s) = unsafe { (nibbles8(c.add(k / 2)), *sf.add(k / 16)) };
            // E2M1 magnitudes by the low 3 bits, sign from bit 3 (exact: ±table value).
            let table = _mm256_setr_ps(0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);
            let mag = _mm256_permutevar8x32_ps(table, n);
            let sign = _mm256_slli_epi32(_mm256_and_si256(n, _mm256_set1_epi32(8)), 28);
            let v = _mm256_xor_ps(mag, _mm256_castsi256_ps(sign));
            _mm256_div_ps(_mm256_mul_ps(v, _mm256_set1_ps(s)), _mm256_set1_ps(d))
        }
    }

    /// Eight E4M3FN words (one per u16 lane) as `2⁻⁸ ×` their exact f32 values: the
    /// word's 7 magnitude bits placed at binary16 bit 7 form the binary16 of value / 256
    /// (normal and subnormal alike, since both biases differ by 8), converted by F16C
    /// without any subnormal assist. NaN words give the binary16 quiet NaN of their sign,
    /// i.e. `words::e4m3fn::TABLE`'s f32 NaN bits; the caller multiplies by 256 (folded
    /// into the row multiplier when that is exact).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) fn e4m3fn8_div256(c16: __m128i) -> __m256 {
        let mag = _mm_and_si128(c16, _mm_set1_epi16(0x7F));
        let sign = _mm_slli_epi16(_mm_and_si128(c16, _mm_set1_epi16(0x80)), 8);
        let nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7F));
        let h = _mm_andnot_si128(nan, _mm_slli_epi16(mag, 7));
        let h = _mm_or_si128(h, _mm_and_si128(nan, _mm_set1_epi16(0x7E00)));
        _mm256_cvtph_ps(_mm_or_si128(h, sign))
    }

    #[cfg(test)]
    #[test]
    fn e4m3fn8_matches_the_word_table_for_all_256_words() {
        if !crate::linear::Isa::Avx2.available() {
            return;
        }
        for base in (0..256).step_by(8) {
            let mut out = [0f32; 8];
            // SAFETY: AVX2 checked above; 8 writable floats.
            unsafe {
                let ci = _mm256_setr_epi32(
                    base,
                    base + 1,
                    base + 2,
                    base + 3,
                    base + 4,
                    base + 5,
                    base + 6,
                    base + 7,
                );
                let c16 = _mm256_castsi256_si128(_mm256_packus_epi32(ci, ci));
                let c16 = _mm_unpacklo_epi64(
                    c16,
                    _mm256_extracti128_si256::<1>(_mm256_packus_epi32(ci, ci)),
                );
                let v = _mm256_mul_ps(e4m3fn8_div256(c16), _mm256_set1_ps(256.0));
                _mm256_storeu_ps(out.as_mut_ptr(), v);
            }
            for (i, o) in out.iter().enumerate() {
                let want = crate::words::e4m3fn::decode((base as usize + i) as u8);
                assert_eq!(
                    o.to_bits(),
                    want.to_bits(),
                    "word {:#04x}",
                    base as usize + i
                );
            }
        }
    }

    /// # Safety
    /// AVX2, FMA and F16C available; `out.len()` = K of `w`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn materialize(w: &WRow<'_>, out: &mut [f32]) {
        // SAFETY (all calls): the caller's contract.
        unsafe {
            match w {
                WRow::Bf16Le(_) => values::<Bf16>(w, out),
                WRow::Q4 { .. } => values::<Q4>(w, out),
                WRow::Q8 { .. } => values::<Q8>(w, out),
                WRow::Fp8 { .. } => values::<Fp8>(w, out),
                WRow::Nvfp4 { .. } => values::<Nvfp4>(w, out),
                _ => values::<F32>(w, out),
            }
        }
    }

    /// # Safety
    /// As [`materialize`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn values<L: Load>(w: &WRow<'_>, out: &mut [f32]) {
        let k = out.len();
        let p = L::ptr(w);
        let mut kk = 0;
        while kk + 8 <= k {
            // SAFETY: kk + 8 <= K values in the row and in out.
            unsafe { _mm256_storeu_ps(out.as_mut_ptr().add(kk), L::load8(p, kk)) };
            kk += 8;
        }
        for (j, o) in out.iter_mut().enumerate().skip(kk) {
            *o = w.get(j);
        }
    }

    /// Tiles of up to 4 weight rows × 2 activation rows.
    ///
    /// # Safety
    /// As [`dot_rows`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tiles<L: Load>(w: &[WRow<'_>], x: &[f32], m: usize, out: &mut [f32]) {
        let mut i = 0;
        while i < w.len() {
            let rw = (w.len() - i).min(4);
            let mut r = 0;
            while r < m {
                let rx = (m - r).min(2);
                // SAFETY: the caller's contract.
                unsafe {
                    match (rw, rx) {
                        (4, 2) => tile::<L, 4, 2>(&w[i..], x, r, m, out, i),
                        (4, 1) => tile::<L, 4, 1>(&w[i..], x, r, m, out, i),
                        (3, 2) => tile::<L, 3, 2>(&w[i..], x, r, m, out, i),
                        (3, 1) => tile::<L, 3, 1>(&w[i..], x, r, m, out, i),
                        (2, 2) => tile::<L, 2, 2>(&w[i..], x, r, m, out, i),
                        (2, 1) => tile::<L, 2, 1>(&w[i..], x, r, m, out, i),
                        (1, 2) => tile::<L, 1, 2>(&w[i..], x, r, m, out, i),
                        _ => tile::<L, 1, 1>(&w[i..], x, r, m, out, i),
                    }
                }
                r += rx;
            }
            i += rw;
        }
    }

    /// Weight rows `w[0..RW]` × activation rows `r0..r0+RX` into `out[(i0+i)·m + r]`.
    ///
    /// # Safety
    /// As [`dot_rows`]; RW rows in `w`, RX rows from r0 in x.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn tile<L: Load, const RW: usize, const RX: usize>(
        w: &[WRow<'_>],
        x: &[f32],
        r0: usize,
        m: usize,
        out: &mut [f32],
        i0: usize,
    ) {
        let k = w[0].len();
        let wp: [L::P; RW] = std::array::from_fn(|i| L::ptr(&w[i]));
        let mut xp = [std::ptr::null::<f32>(); RX];
        for r in 0..RX {
            xp[r] = x[(r0 + r) * k..].as_ptr();
        }
        let mut acc = [[_mm256_setzero_ps(); RX]; RW];
        let mut kk = 0;
        while kk + 8 <= k {
            let mut xv = [_mm256_setzero_ps(); RX];
            for r in 0..RX {
                // SAFETY: kk + 8 <= K values in each activation row.
                xv[r] = unsafe { _mm256_loadu_ps(xp[r].add(kk)) };
            }
            for i in 0..RW {
                // SAFETY: kk + 8 <= K values in each weight row.
                let wv = unsafe { L::load8(wp[i], kk) };
                for r in 0..RX {
                    acc[i][r] = _mm256_fmadd_ps(wv, xv[r], acc[i][r]);
                }
            }
            kk += 8;
        }
        for i in 0..RW {
            for r in 0..RX {
                let mut a = [0f32; 8];
                // SAFETY: 8 writable floats.
                unsafe { _mm256_storeu_ps(a.as_mut_ptr(), acc[i][r]) };
                let xr = &x[(r0 + r) * k..(r0 + r + 1) * k];
                accumulate_scalar(&w[i], xr, kk, &mut a);
                out[(i0 + i) * m + r0 + r] = tree8(a);
            }
        }
    }
}
