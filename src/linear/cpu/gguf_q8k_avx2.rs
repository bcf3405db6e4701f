//! AVX2 kernels of Q4_K and Q6_K against q8_K activations, in exactly the order of
//! [`super::gguf_q8k`]'s module docs (every tier past Scalar runs them: AVX2 + FMA is part
//! of each).
//!
//! Only the exact integers S_sb and M_sb are formed differently from the scalar path:
//!
//! - Q4_K: per pair of 32-value sub-blocks, the 32 code bytes give both sub-blocks' codes
//!   (low and high nibbles, unsigned 0..15); `vpmaddubsw` with the activation codes gives
//!   i16 pairs (≤ 2·15·127), `vpmaddwd` by the sub-block's 6-bit scale sums them to i32
//!   (≤ 32·15·127·63 per sub-block); M_sb = Σ_j m_j·(bsums_{2j} + bsums_{2j+1}).
//! - Q6_K: per 32 values, the unsigned 6-bit code q + 32 (low nibble from `ql`, two high bits
//!   from `qh`, placed with 16-bit shifts and byte masks); `vpmaddubsw` pairs ≤ 2·63·127 =
//!   16002 < 2¹⁵; `vpmaddwd` by the per-16 scales (the low 128-bit half of a vector holds
//!   values 0..15, the high half 16..31); the offset 32·Σ_i sc_i·bsums_i
//!   (`vpmaddwd` of the sign-extended scales with `bsums`) is subtracted.
//!
//! The i32 lanes are summed exactly (|S_sb| < 2³¹), so the lane grouping does not change the
//! integer, and the f32 steps are the scalar path's: one conversion and one fma per term and
//! super-block.

use super::gguf_q8k::finish;
use super::kquants::Kq;
use crate::formats::gguf::scale_min_k4;
use crate::linear::q8_k::{QK_K, Row};
use std::arch::x86_64::*;

pub(crate) mod avx2 {
    use super::*;

    /// Up to four weight rows against every q8_K row (`out` row of W major), Q4_K or Q6_K.
    ///
    /// # Safety
    /// The CPU must support AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn dot_row_group(kq: Kq, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
        let m = xs.len();
        for (w, o) in ws.iter().zip(out.chunks_exact_mut(m.max(1))) {
            for (x, o) in xs.iter().zip(o.iter_mut()) {
                *o = match kq {
                    Kq::Q4K => row_q4_k(w, x),
                    _ => row_q6_k(w, x),
                };
            }
        }
    }

    /// The exact sum of the eight i32 lanes.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum(v: __m256i) -> i32 {
        let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        _mm_cvtsi128_si32(s)
    }

    /// The two binary16 words at `b[at..at + 4]` as f32 (exact; F16C).
    #[target_feature(enable = "avx2,fma,f16c")]
    fn f16x2(b: &[u8], at: usize) -> (f32, f32) {
        let w = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let v = _mm_cvtph_ps(_mm_cvtsi32_si128(w as i32));
        (_mm_cvtss_f32(v), _mm_cvtss_f32(_mm_movehdup_ps(v)))
    }

    /// 32 bytes at `p[at..at + 32]` (bounds checked).
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load(p: &[u8], at: usize) -> __m256i {
        let s = &p[at..at + 32];
        // SAFETY: `s` is 32 readable bytes; unaligned load.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// [`load`] of 32 activation codes.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load_x(p: &[i8], at: usize) -> __m256i {
        let s = &p[at..at + 32];
        // SAFETY: as in `load`.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// 16 i16 at `p[at..at + 16]`.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn load_i16(p: &[i16], at: usize) -> __m256i {
        let s = &p[at..at + 16];
        // SAFETY: `s` is 16 readable i16 (32 bytes); unaligned load.
        unsafe { _mm256_loadu_si256(s.as_ptr().cast()) }
    }

    /// One Q4_K row against one q8_K row.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn row_q4_k(w: &[u8], x: &Row<'_>) -> f32 {
        let (mut acc, mut accm) = (0f32, 0f32);
        let low = _mm256_set1_epi8(0x0F);
        for (sb, blk) in w.chunks_exact(144).take(x.d.len()).enumerate() {
            let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
            let bs = &x.bsums[16 * sb..16 * sb + 16];
            let mut s = _mm256_setzero_si256();
            let mut mi = 0i32;
            for p in 0..4 {
                let (sc0, m0) = scale_min_k4(2 * p, &blk[4..16]);
                let (sc1, m1) = scale_min_k4(2 * p + 1, &blk[4..16]);
                let q = load(blk, 16 + 32 * p);
                let lo = _mm256_and_si256(q, low);
                let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), low);
                let p0 = _mm256_maddubs_epi16(lo, load_x(xq, 64 * p));
                let p1 = _mm256_maddubs_epi16(hi, load_x(xq, 64 * p + 32));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p0, _mm256_set1_epi16(sc0 as i16)));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p1, _mm256_set1_epi16(sc1 as i16)));
                mi += m0 as i32 * (bs[4 * p] as i32 + bs[4 * p + 1] as i32)
                    + m1 as i32 * (bs[4 * p + 2] as i32 + bs[4 * p + 3] as i32);
            }
            let dx = x.d[sb];
            let (d, dmin) = f16x2(blk, 0);
            acc = (d * dx).mul_add(hsum(s) as f32, acc);
            accm = (dmin * dx).mul_add(mi as f32, accm);
        }
        finish(true, acc, accm)
    }

    /// One Q6_K row against one q8_K row.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn row_q6_k(w: &[u8], x: &Row<'_>) -> f32 {
        let mut acc = 0f32;
        let low = _mm256_set1_epi8(0x0F);
        let two = _mm256_set1_epi8(0x30);
        for (sb, blk) in w.chunks_exact(210).take(x.d.len()).enumerate() {
            let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
            let sc = &blk[192..208];
            // SAFETY: `sc` is 16 readable bytes; unaligned load.
            let sc8 = unsafe { _mm_loadu_si128(sc.as_ptr().cast()) };
            let sc16 = _mm256_cvtepi8_epi16(sc8);
            // The −32 offset: 32·Σ_i sc_i·bsums_i.
            let off = _mm256_madd_epi16(sc16, load_i16(x.bsums, 16 * sb));
            let mut s = _mm256_slli_epi32::<5>(_mm256_sub_epi32(_mm256_setzero_si256(), off));
            for h in 0..2 {
                let a = load(blk, 64 * h);
                let b = load(blk, 64 * h + 32);
                let qh = load(blk, 128 + 32 * h);
                let codes = [
                    _mm256_or_si256(
                        _mm256_and_si256(a, low),
                        _mm256_and_si256(_mm256_slli_epi16::<4>(qh), two),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(b, low),
                        _mm256_and_si256(_mm256_slli_epi16::<2>(qh), two),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16::<4>(a), low),
                        _mm256_and_si256(qh, two),
                    ),
                    _mm256_or_si256(
                        _mm256_and_si256(_mm256_srli_epi16::<4>(b), low),
                        _mm256_and_si256(_mm256_srli_epi16::<2>(qh), two),
                    ),
                ];
                for (i, q) in codes.into_iter().enumerate() {
                    let v = 128 * h + 32 * i;
                    let p = _mm256_maddubs_epi16(q, load_x(xq, v));
                    let scv = _mm256_setr_m128i(
                        _mm_set1_epi16(sc[v / 16] as i8 as i16),
                        _mm_set1_epi16(sc[v / 16 + 1] as i8 as i16),
                    );
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, scv));
                }
            }
            // d is the block's last word: read it with the word before it.
            let (_, d) = f16x2(blk, 206);
            acc = (d * x.d[sb]).mul_add(hsum(s) as f32, acc);
        }
        finish(false, acc, 0.0)
    }
}
