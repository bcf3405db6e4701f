//! AVX2 kernels of the k-quants against q8_K activations (the grid i-quants and IQ4_XS run
//! `iquants_avx2`'s tiers), in exactly
//! the order of [`super::gguf_q8k`]'s module docs (every tier past Scalar runs them: AVX2 +
//! FMA is part of each).
//!
//! Only the exact integers S_sb and M_sb are formed differently from the scalar path:
//!
//! - Q2_K: per 128 values, the 32 code bytes give four 32-value chunks (bit pairs 2i);
//!   `vpmaddubsw` with the activation codes gives i16 pairs (≤ 2·3·127), `vpmaddwd` by the
//!   4-bit scales (chunk i: scales 2i and 2i + 1 of the 128 values' eight) sums them to i32;
//!   M_sb = Σ_s m_s·bsums_s.
//! - Q3_K: the unsigned code u = low 2 bits + 4·hmask bit (0..7, the value u − 4),
//!   `vpmaddubsw` pairs ≤ 2·7·127, `vpmaddwd` by the signed 6-bit scales; the offset
//!   4·Σ_s sc_s·bsums_s is subtracted.
//! - Q4_K and Q5_K: per pair of 32-value sub-blocks, the 32 code bytes give both
//!   sub-blocks' codes (low and high nibbles; Q5_K adds its qh bit as bit 4, unsigned
//!   0..31); `vpmaddubsw` pairs (≤ 2·31·127), `vpmaddwd` by the sub-block's 6-bit scale
//!   (≤ 32·31·127·63 per sub-block); M_sb = Σ_j m_j·(bsums_{2j} + bsums_{2j+1}).
//! - Q6_K: per 32 values, the unsigned 6-bit code q + 32 (low nibble from `ql`, two high bits
//!   from `qh`, placed with 16-bit shifts and byte masks); `vpmaddubsw` pairs ≤ 2·63·127 =
//!   16002 < 2¹⁵; `vpmaddwd` by the per-16 scales (the low 128-bit half of a vector holds
//!   values 0..15, the high half 16..31); the offset 32·Σ_i sc_i·bsums_i
//!   (`vpmaddwd` of the sign-extended scales with `bsums`) is subtracted.
//!
//! Every activation code lies in −127..=127 (q8_K never writes −128), so `vpsignb` never
//! overflows. The i32 lanes are summed exactly (|S_sb| < 2³¹), so the lane grouping does not
//! change the integer, and the f32 steps are the scalar path's: one conversion and one fma
//! per term and super-block.

use super::gguf_q8k::{KindK, finish};
use super::iquants_avx2::hsum_i32;
use super::kquants::Kq;
use crate::formats::gguf::blocks::{q2_k, q3_k, q4_k, q5_k, q6_k};
use crate::linear::q8_k::{QK_K, Row};
use std::arch::x86_64::*;

/// Whether the x86 kernels below compute `kind` (else the scalar order runs).
pub(crate) fn covers(kind: KindK) -> bool {
    matches!(kind, KindK::K(_))
}

pub(crate) mod avx2 {
    use super::*;

    /// Weight rows against every q8_K row (`out` row of W major), for a kind
    /// [`covers`] accepts.
    ///
    /// # Safety
    /// The CPU must support AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(crate) unsafe fn dot_row_group(kind: KindK, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
        let m = xs.len();
        for (w, o) in ws.iter().zip(out.chunks_exact_mut(m.max(1))) {
            for (x, o) in xs.iter().zip(o.iter_mut()) {
                *o = match kind {
                    KindK::K(Kq::Q2K) => row_q2_k(w, x),
                    KindK::K(Kq::Q3K) => row_q3_k(w, x),
                    KindK::K(Kq::Q4K) => row_q45_k::<false>(w, x),
                    KindK::K(Kq::Q5K) => row_q45_k::<true>(w, x),
                    KindK::K(Kq::Q6K) => row_q6_k(w, x),
                    _ => unreachable!("no AVX2 q8_K kernel for {kind:?}"),
                };
            }
        }
    }

    /// The exact sum of the eight i32 lanes.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum(v: __m256i) -> i32 {
        // SAFETY: AVX2 (this function's features).
        unsafe { hsum_i32(v) }
    }

    /// The exact sums of the eight i32 lanes of `a` and of `b`, reduced together.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn hsum2(a: __m256i, b: __m256i) -> (i32, i32) {
        // Per 128-bit half: [a0+a1, a2+a3, b0+b1, b2+b3].
        let h = _mm256_hadd_epi32(a, b);
        let h = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
        // [Σa, Σb, Σa, Σb].
        let h = _mm_hadd_epi32(h, h);
        (_mm_cvtsi128_si32(h), _mm_extract_epi32::<1>(h))
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

    /// `vpshufb` masks that broadcast 16-bit word j (0..8) of each 128-bit half to the
    /// whole half.
    const fn word_mask(j: u8) -> [u8; 32] {
        let mut m = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            m[i] = 2 * j + (i % 2) as u8;
            i += 1;
        }
        m
    }
    const WORD: [[u8; 32]; 8] = [
        word_mask(0),
        word_mask(1),
        word_mask(2),
        word_mask(3),
        word_mask(4),
        word_mask(5),
        word_mask(6),
        word_mask(7),
    ];

    /// [`WORD`]`[j]` as a vector.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn word(j: usize) -> __m256i {
        // SAFETY: `WORD[j]` is 32 readable bytes; unaligned load.
        unsafe { _mm256_loadu_si256(WORD[j].as_ptr().cast()) }
    }

    /// Q4_K's eight 6-bit scales and mins (`scale_min_k4` of j = 0..8) as bytes of two
    /// u64, from the 12 scale bytes read as three little-endian u32 words.
    #[inline(always)]
    fn q4_k_scales(s: &[u8]) -> (u64, u64) {
        let w = |i: usize| u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
        let (w0, w1, w2) = (w(0), w(1), w(2));
        let sc_lo = w0 & 0x3F3F_3F3F;
        let m_lo = w1 & 0x3F3F_3F3F;
        let sc_hi = (w2 & 0x0F0F_0F0F) | (((w0 >> 6) & 0x0303_0303) << 4);
        let m_hi = ((w2 >> 4) & 0x0F0F_0F0F) | (((w1 >> 6) & 0x0303_0303) << 4);
        (
            sc_lo as u64 | (sc_hi as u64) << 32,
            m_lo as u64 | (m_hi as u64) << 32,
        )
    }

    /// The i16 scale vector of a 32-value chunk whose 16 `vpmaddubsw` pairs take scale
    /// `2i` of `half` (both 128-bit halves hold the same eight i16 scales) in the low half
    /// (values 0..15) and scale `2i + 1` in the high half (values 16..31).
    #[target_feature(enable = "avx2,fma,f16c")]
    fn pair_scales(half: __m256i, i: usize) -> __m256i {
        _mm256_blend_epi32::<0xF0>(
            _mm256_shuffle_epi8(half, word(2 * i)),
            _mm256_shuffle_epi8(half, word(2 * i + 1)),
        )
    }

    /// 128-bit half `h` of `v` in both halves.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn both_halves(v: __m256i, h: usize) -> __m256i {
        _mm256_broadcastsi128_si256(if h == 0 {
            _mm256_castsi256_si128(v)
        } else {
            _mm256_extracti128_si256::<1>(v)
        })
    }

    /// One Q2_K row against one q8_K row: per 128 values h, the 32 code bytes hold four
    /// 32-value chunks (bit pairs 2i); `vpmaddubsw` pairs ≤ 2·3·127, `vpmaddwd` by the
    /// 4-bit scales (chunk i: scales 8h + 2i and 8h + 2i + 1); M_sb = Σ_s m_s·bsums_s.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn row_q2_k(w: &[u8], x: &Row<'_>) -> f32 {
        let (mut acc, mut accm) = (0f32, 0f32);
        let three = _mm256_set1_epi8(3);
        for (sb, blk) in w.chunks_exact(q2_k::BYTES).take(x.d.len()).enumerate() {
            let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
            let sc = q2_k::SCALES.of(blk);
            // SAFETY: `sc` is 16 readable bytes; unaligned load.
            let sc8 = unsafe { _mm_loadu_si128(sc.as_ptr().cast()) };
            let sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(sc8, _mm_set1_epi8(0x0F)));
            let m16 =
                _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(sc8), _mm_set1_epi8(0x0F)));
            let mi = _mm256_madd_epi16(m16, load_i16(x.bsums, 16 * sb));
            let mut s = _mm256_setzero_si256();
            for h in 0..2 {
                let q = load(blk, q2_k::QS.at + 32 * h);
                let half = both_halves(sc16, h);
                let mut q = q;
                for i in 0..4 {
                    let c = _mm256_and_si256(q, three);
                    q = _mm256_srli_epi16::<2>(q);
                    let p = _mm256_maddubs_epi16(c, load_x(xq, 128 * h + 32 * i));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, pair_scales(half, i)));
                }
            }
            let dx = x.d[sb];
            let (d, dmin) = f16x2(blk, q2_k::D.at);
            let (si, mi) = hsum2(s, mi);
            acc = (d * dx).mul_add(si as f32, acc);
            accm = (dmin * dx).mul_add(mi as f32, accm);
        }
        finish(true, acc, accm)
    }

    /// Q3_K's sixteen 6-bit scales (before the − 32) as bytes of two u64: the low nibbles
    /// of bytes 0..8 (scales 0..8) and their high nibbles (8..16), the 2-bit fields of
    /// bytes 8..12 on top.
    #[inline(always)]
    fn q3_k_scales(s: &[u8]) -> (u64, u64) {
        let lo = u64::from_le_bytes(std::array::from_fn(|i| s[i]));
        let aux = u32::from_le_bytes([s[8], s[9], s[10], s[11]]) as u64;
        let two = |sh: u32| (aux >> sh) & 0x0303_0303;
        let hi0 = two(0) | two(2) << 32;
        let hi1 = two(4) | two(6) << 32;
        (
            (lo & 0x0F0F_0F0F_0F0F_0F0F) | hi0 << 4,
            ((lo >> 4) & 0x0F0F_0F0F_0F0F_0F0F) | hi1 << 4,
        )
    }

    /// One Q3_K row against one q8_K row: the unsigned code u = low 2 bits | hmask bit · 4
    /// (0..7; the value is u − 4), `vpmaddubsw` pairs ≤ 2·7·127, `vpmaddwd` by the signed
    /// scales; the offset 4·Σ_s sc_s·bsums_s is subtracted.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn row_q3_k(w: &[u8], x: &Row<'_>) -> f32 {
        let mut acc = 0f32;
        let three = _mm256_set1_epi8(3);
        let four = _mm256_set1_epi8(4);
        for (sb, blk) in w.chunks_exact(q3_k::BYTES).take(x.d.len()).enumerate() {
            let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
            let (s0, s1) = q3_k_scales(q3_k::SCALES.of(blk));
            let sc8 = _mm_set_epi64x(s1 as i64, s0 as i64);
            let sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(sc8), _mm256_set1_epi16(32));
            let off = _mm256_madd_epi16(sc16, load_i16(x.bsums, 16 * sb));
            let mut s = _mm256_slli_epi32::<2>(_mm256_sub_epi32(_mm256_setzero_si256(), off));
            let hm = load(blk, q3_k::HMASK.at);
            for h in 0..2 {
                let mut q = load(blk, q3_k::QS.at + 32 * h);
                let half = both_halves(sc16, h);
                for i in 0..4 {
                    let bit = _mm256_set1_epi8(1 << (4 * h + i));
                    let hb =
                        _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), four);
                    let c = _mm256_or_si256(_mm256_and_si256(q, three), hb);
                    q = _mm256_srli_epi16::<2>(q);
                    let p = _mm256_maddubs_epi16(c, load_x(xq, 128 * h + 32 * i));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, pair_scales(half, i)));
                }
            }
            let (_, d) = f16x2(blk, q3_k::D.at - 2);
            acc = (d * x.d[sb]).mul_add(hsum(s) as f32, acc);
        }
        finish(false, acc, 0.0)
    }

    /// One Q4_K (`FIVE` false) or Q5_K row against one q8_K row.
    #[target_feature(enable = "avx2,fma,f16c")]
    fn row_q45_k<const FIVE: bool>(w: &[u8], x: &Row<'_>) -> f32 {
        let (mut acc, mut accm) = (0f32, 0f32);
        let low = _mm256_set1_epi8(0x0F);
        let bit4 = _mm256_set1_epi8(0x10);
        let bb = if FIVE { q5_k::BYTES } else { q4_k::BYTES };
        let qs_at = if FIVE { q5_k::QS.at } else { q4_k::QS.at };
        for (sb, blk) in w.chunks_exact(bb).take(x.d.len()).enumerate() {
            let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
            let (sc, mn) = q4_k_scales(q4_k::SCALES.of(blk));
            // The 8 scales as i16 in both 128-bit halves; the mins once per value pair of
            // `bsums` ([m0, m0, m1, m1, …]).
            let sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(sc as i64)));
            let m16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(mn as i64));
            let m16 = _mm256_setr_m128i(_mm_unpacklo_epi16(m16, m16), _mm_unpackhi_epi16(m16, m16));
            let mi = _mm256_madd_epi16(m16, load_i16(x.bsums, 16 * sb));
            // Q5_K: bit j of qh[l] is bit 4 of sub-block j's code l; shifted down by 2 per
            // pair of sub-blocks (16-bit shifts: the bits read stay in their byte).
            let mut qh = if FIVE {
                load(blk, q5_k::QH.at)
            } else {
                _mm256_setzero_si256()
            };
            let mut s = _mm256_setzero_si256();
            for p in 0..4 {
                let q = load(blk, qs_at + 32 * p);
                let mut lo = _mm256_and_si256(q, low);
                let mut hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), low);
                if FIVE {
                    lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16::<4>(qh), bit4));
                    hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16::<3>(qh), bit4));
                    qh = _mm256_srli_epi16::<2>(qh);
                }
                let p0 = _mm256_maddubs_epi16(lo, load_x(xq, 64 * p));
                let p1 = _mm256_maddubs_epi16(hi, load_x(xq, 64 * p + 32));
                let s0 = _mm256_shuffle_epi8(sc16, word(2 * p));
                let s1 = _mm256_shuffle_epi8(sc16, word(2 * p + 1));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p0, s0));
                s = _mm256_add_epi32(s, _mm256_madd_epi16(p1, s1));
            }
            let dx = x.d[sb];
            let (d, dmin) = f16x2(blk, q4_k::D.at);
            let (si, mi) = hsum2(s, mi);
            acc = (d * dx).mul_add(si as f32, acc);
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
        for (sb, blk) in w.chunks_exact(q6_k::BYTES).take(x.d.len()).enumerate() {
            let xq = &x.qs[QK_K * sb..QK_K * sb + QK_K];
            let sc = q6_k::SCALES.of(blk);
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
                // Scales 8h..8h+8 as i16 in both halves; chunk i takes word 2i in the low
                // half (values 0..15) and 2i + 1 in the high half (16..31).
                let half = both_halves(sc16, h);
                for (i, q) in codes.into_iter().enumerate() {
                    let p = _mm256_maddubs_epi16(q, load_x(xq, 128 * h + 32 * i));
                    s = _mm256_add_epi32(s, _mm256_madd_epi16(p, pair_scales(half, i)));
                }
            }
            // d is the block's last word: read it with the word before it.
            let (_, d) = f16x2(blk, 206);
            acc = (d * x.d[sb]).mul_add(hsum(s) as f32, acc);
        }
        finish(false, acc, 0.0)
    }
}
