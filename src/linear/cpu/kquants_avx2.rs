//! The 256-bit x86 k-quant kernels, in exactly the order of [`super::kquants`]'s module
//! docs: one source ([`kernels!`]) compiled per tier — [`avx2`] (AVX2 + FMA + F16C) and
//! [`avxvnni`] (256-bit VEX `vpdpbusd`, which Q3_K..Q6_K use for the block sums: the same
//! exact integers in the same lanes, so the same bits). The AVX-512 tier has its own
//! 512-bit kernels (`kquants_avx512`), which share this file's header decoders; the
//! 256-bit tile kernel (`kquants_tile_avx2`) takes its codes ([`K::codes`]) and header
//! decoders from here too.
//!
//! Per super-block and weight row, the header (scales, mins, d, dmin) is decoded once with
//! vector ops. The codes are taken UNSIGNED (Q2_K 0..3, Q3_K 0..7 = q + 4, Q4_K 0..15,
//! Q5_K 0..31, Q6_K 0..63 = q + 32) so `vpmaddubsw` needs no sign transfer; the offsets
//! come back exactly through the activation's half-block sums Σx16 (`q8_1::Row::sum16`):
//!
//! - block j: `vpmaddubsw(u, x)` (i16 pairs). Each 128-bit half of a block is one
//!   16-value group (one per-16 scale). Two levels of horizontal adds over the 8 blocks
//!   leave, per half, lane k = group sum of block J+k (J = 0, 4): for Q2_K..Q5_K in i16
//!   (`vphaddw`; a lane then sums 8 products, ≤ 8·31·127 = 31496 < 2¹⁵; with one
//!   activation row Q3_K's first level and Q2_K's second are two `vpmaddwd` by ones and a
//!   `vpackssdw` instead, the same lanes: [`K::PACK1`]), then ONE
//!   `vpmaddwd` per 4 blocks, with the per-16 scales (Q2_K, Q3_K; the scale vectors are
//!   built once per super-block by one `vpshufb` of the scale bytes) or with ones (Q4_K,
//!   Q5_K); Q6_K's pairs (≤ 16002) cannot be added in i16, so it takes `vpmaddwd` with ones
//!   per block, `vphaddd` twice and ONE `vpmulld` by the i32 scales per 4 blocks. No
//!   per-block scale shuffles. On the VNNI tiers Q3_K..Q6_K take Q6_K's route with
//!   `vpdpbusd` (four products per i32 lane) in place of `vpmaddubsw` + `vpmaddwd`: Q3_K
//!   multiplies by its i16 scale pairs sign-extended to i32 (`vpsrad` 16), Q4_K and Q5_K
//!   need no multiplication before the per-32 scales; Q2_K keeps the i16 route (measured
//!   faster);
//! - the two 128-bit halves are added so lane j holds block j's sum (the integer sums are
//!   exact, so how they are grouped does not change the bits), and ONE convert + ONE fma
//!   per super-block serves 8 blocks;
//! - Q4_K/Q5_K multiply lane j by the 6-bit scale (`vpmulld`); Q3_K/Q6_K subtract
//!   `vpmaddwd(k·sc16, Σx16)` (k = 4, 32); the mins are `vpmaddwd(m16, Σx16)`;
//! - `acc ← fma(d·dx, S, acc)`, `accm ← fma(dmin·dx, M, accm)` with the 8 activation
//!   scales dx of the super-block loaded as one vector (d·dx exact).
//!
//! Bounds (no i16 saturation; q8_1 codes are in [−127, 127]): a `vpmaddubsw` pair is at
//! most 2·63·127 = 16002 < 2¹⁵ (Q6_K; smaller codes for the others); the i16 sums of 8
//! products are ≤ 8·31·127 = 31496 (Q5_K; Q2_K..Q4_K less); `vpmaddwd` of such sums with
//! a scale |sc| ≤ 32 (Q2_K, Q3_K) or 1 stays far below 2³¹, and Q6_K's group sums times
//! |sc| ≤ 128 are ≤ 16·63·127·128 < 2²⁴; `k·sc16` fits i16 (|32·sc| ≤ 4096) and
//! `vpmaddwd(k·sc16, Σx16)` ≤ 2·4096·2032 < 2³¹; every S_j, M_j is < 2²⁴ in magnitude
//! (module docs of `kquants`), so the converts are exact.
//!
//! A pass is RW weight rows × RX activation rows. M = 1 runs one weight row per pass: 2 and
//! 4 interleaved rows (sharing each activation load) measured equal with the matrix in
//! L1/L2 but up to 2.5× slower with it in L3 on this Zen 3; re-measured with the prefetch
//! below, 2 rows are still 10–25% slower (in L3 and beyond). With M > 1 one unpacked weight
//! row meets up to four activation rows.
//!
//! Each super-block step prefetches (`prefetcht1`) the same super-block [`PF_ROWS`] weight
//! rows further on: rows are consecutive in the plane and only a few KiB long, too short
//! for the hardware prefetcher to pick up each new row stream in time. It pays beyond L3
//! and is neutral in L3, where the kernel is bound by its instruction count.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::kquants::{Kq, finish_m256};
use crate::formats::gguf::blocks::{q2_k, q3_k, q4_k, q5_k, q6_k};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// A super-block's header, decoded once per weight row.
#[derive(Clone, Copy)]
pub(super) struct Hdr {
    /// d and dmin broadcast.
    d: __m256,
    dmin: __m256,
    /// The scales of blocks 0..4 (`s03`) and 4..8 (`s47`) as [`quad`] applies them: Q2_K,
    /// Q3_K: i16 lanes 2k, 2k+1 = sc[2(J+k)] in the low 128 bits, sc[2(J+k)+1] in the high;
    /// Q6_K: i32 lane k = sc[2(J+k)], lane 4+k = sc[2(J+k)+1]; Q4_K, Q5_K: `s03` holds the 8
    /// per-32 scales as i32, applied after the reduction.
    s03: __m256i,
    s47: __m256i,
    /// The 16 per-16 coefficients of Σx16: mins (Q2_K, Q4_K, Q5_K) or k·sc (Q3_K, Q6_K).
    c16: __m256i,
}

/// One k-quant type.
pub(super) trait K {
    const KQ: Kq;
    /// Scales per 32 values, applied after the reduction.
    const PER32: bool;
    /// `vpmaddubsw` pairs too large to add in i16 (Q6_K): reduced in i32, scaled by
    /// `vpmulld`.
    const WIDE: bool = false;
    /// Whether the VNNI tiers form the block sums with `vpdpbusd` (else as the AVX2 tier).
    const DPBUSD: bool = true;
    /// With one activation row, whether the first (`PACK1`) or second (`PACK2`) level of
    /// i16 horizontal adds is [`hadd16`] instead of `vphaddw`: the same i16 lanes, with the
    /// work moved from the shuffle pipes to the multiply pipes; measured per type on Zen 3
    /// (Q3_K's first level +7%, Q2_K's second +3%; slower for the other types and with
    /// several activation rows, where the multiply pipes are busier).
    const PACK1: bool = false;
    const PACK2: bool = false;
    /// # Safety
    /// AVX2/FMA/F16C available; `b` points at a whole super-block.
    unsafe fn header(b: *const u8) -> Hdr;
    /// The unsigned codes of 32-value block `J` (0..8).
    ///
    /// # Safety
    /// As [`K::header`].
    unsafe fn codes<const J: usize>(b: *const u8) -> __m256i;
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn load(p: *const u8) -> __m256i {
    // SAFETY: the caller's 32 readable bytes.
    unsafe { _mm256_loadu_si256(p.cast()) }
}

/// The binary16 at `p` as f32 broadcast (exact).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn f16x8(p: *const u8) -> __m256 {
    // SAFETY: two readable bytes at p.
    let bits = unsafe { std::ptr::read_unaligned(p.cast::<u16>()) };
    _mm256_broadcastss_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
}

/// Bit `j` of every byte moved to bit `to` (0..8), other bits cleared.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn bit_to(v: __m256i, j: usize, to: usize) -> __m256i {
    // 16-bit shifts are safe: bit `to` of each byte comes from bit j of the same byte.
    let s = if j <= to {
        _mm256_sll_epi16(v, _mm_cvtsi32_si128((to - j) as i32))
    } else {
        _mm256_srl_epi16(v, _mm_cvtsi32_si128((j - to) as i32))
    };
    _mm256_and_si256(s, _mm256_set1_epi8(1 << to))
}

/// Nibble `hi` (0 low, 1 high) of every byte.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn nibble(v: __m256i, hi: bool) -> __m256i {
    let v = if hi { _mm256_srli_epi16(v, 4) } else { v };
    _mm256_and_si256(v, _mm256_set1_epi8(0x0F))
}

/// `vphaddw(a, b)` where every pair sum fits i16 (no saturation): two `vpmaddwd` by ones
/// and one `vpackssdw` give the same lanes.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn hadd16(a: __m256i, b: __m256i) -> __m256i {
    let one = _mm256_set1_epi16(1);
    _mm256_packs_epi32(_mm256_madd_epi16(a, one), _mm256_madd_epi16(b, one))
}

/// `vpshufb` of the 16 per-16 scale bytes: sc[0], sc[0], sc[2], sc[2], .., sc[6] then
/// sc[1], sc[1], sc[3], .., sc[7] (blocks 0..4 as [`Hdr::s03`] wants them, after a widening
/// to i16); +8 for blocks 4..8.
static PAIRS03: [u8; 16] = [0, 0, 2, 2, 4, 4, 6, 6, 1, 1, 3, 3, 5, 5, 7, 7];
static PAIRS47: [u8; 16] = [8, 8, 10, 10, 12, 12, 14, 14, 9, 9, 11, 11, 13, 13, 15, 15];

/// Header of Q2_K/Q3_K from the 16 per-16 scales (signed bytes).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn per16(d: __m256, dmin: __m256, sc: __m128i, c16: __m256i) -> Hdr {
    // SAFETY: 16 readable bytes each.
    let (m03, m47) = unsafe {
        (
            _mm_loadu_si128(PAIRS03.as_ptr().cast()),
            _mm_loadu_si128(PAIRS47.as_ptr().cast()),
        )
    };
    Hdr {
        d,
        dmin,
        s03: _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc, m03)),
        s47: _mm256_cvtepi8_epi16(_mm_shuffle_epi8(sc, m47)),
        c16,
    }
}

/// `block_q2_K { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin; }`.
pub(super) struct Q2K;
impl K for Q2K {
    const KQ: Kq = Kq::Q2K;
    const PER32: bool = false;
    /// Measured 4–5% slower with `vpdpbusd` (its i16 route has the fewest shuffles).
    const DPBUSD: bool = false;
    const PACK2: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: 84 bytes at b.
        unsafe {
            let s = _mm_loadu_si128(b.add(q2_k::SCALES.at).cast());
            let m = _mm_set1_epi8(0x0F);
            let mn16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), m));
            per16(
                f16x8(b.add(q2_k::D.at)),
                f16x8(b.add(q2_k::DMIN.at)),
                _mm_and_si128(s, m),
                mn16,
            )
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn codes<const J: usize>(b: *const u8) -> __m256i {
        let j = J;
        let (h, i) = (j / 4, j % 4);
        // SAFETY: qs[32h..32h+32] lies in the block.
        let q = unsafe { load(b.add(q2_k::QS.at + 32 * h)) };
        let q = _mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * i as i32));
        _mm256_and_si256(q, _mm256_set1_epi8(3))
    }
}

/// Q3_K's 16 signed 6-bit scales (bytes, sub-block order) of the super-block at `b`.
///
/// # Safety
/// A whole Q3_K super-block at `b`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn q3_scales(b: *const u8) -> __m128i {
    // SAFETY: scales[12] lies in the block.
    let (a, hb) = unsafe {
        (
            std::ptr::read_unaligned(b.add(q3_k::SCALES.at).cast::<u64>()),
            std::ptr::read_unaligned(b.add(q3_k::SCALES.at + 8).cast::<u32>()),
        )
    };
    let two = |s: u32| ((hb >> s) & 0x0303_0303) as u64;
    let lo = 0x0F0F_0F0F_0F0F_0F0Fu64;
    let s0 = (a & lo) | ((two(0) | two(2) << 32) << 4);
    let s1 = ((a >> 4) & lo) | ((two(4) | two(6) << 32) << 4);
    _mm_sub_epi8(_mm_set_epi64x(s1 as i64, s0 as i64), _mm_set1_epi8(32))
}

/// `block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d; }`: u = q + 4.
pub(super) struct Q3K;
impl K for Q3K {
    const KQ: Kq = Kq::Q3K;
    const PACK1: bool = true;
    const PER32: bool = false;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: 110 bytes at b.
        unsafe {
            let s = q3_scales(b);
            let sc16 = _mm256_cvtepi8_epi16(s);
            let d = f16x8(b.add(q3_k::D.at));
            per16(d, d, s, _mm256_slli_epi16(sc16, 2))
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn codes<const J: usize>(b: *const u8) -> __m256i {
        let j = J;
        let (h, i) = (j / 4, j % 4);
        // SAFETY: qs[32h..] and hmask[0..32] lie in the block.
        let (q, hm) = unsafe {
            (
                load(b.add(q3_k::QS.at + 32 * h)),
                load(b.add(q3_k::HMASK.at)),
            )
        };
        let q = _mm256_srl_epi16(q, _mm_cvtsi32_si128(2 * i as i32));
        let q = _mm256_and_si256(q, _mm256_set1_epi8(3));
        _mm256_or_si256(q, bit_to(hm, j, 2))
    }
}

/// Header of Q4_K/Q5_K from their first 16 bytes (d, dmin, scales[12]), in 128-bit
/// 32-bit lanes: L0 = bytes 0..4, L1 = 4..8, L2 = 8..12 of the scales. Sub-blocks 0..4
/// keep their 6-bit scale (min) in L0 (L1); sub-blocks 4..8 take the low 4 bits from the
/// low (high) nibbles of L2 and the high 2 bits from the tops of L0 (L1).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn header_k4(b: *const u8) -> Hdr {
    // SAFETY: the 16 bytes d, dmin, scales[12] at b.
    let v = unsafe { _mm_loadu_si128(b.cast()) };
    let scmn = scmn_k4(v);
    let dd = _mm_cvtph_ps(v);
    Hdr {
        d: _mm256_broadcastss_ps(dd),
        dmin: _mm256_broadcastss_ps(_mm_movehdup_ps(dd)),
        s03: _mm256_cvtepu8_epi32(scmn),
        s47: _mm256_setzero_si256(),
        // Each min serves both 16-value halves of its sub-block.
        c16: _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(scmn, scmn)),
    }
}

/// The 8 6-bit scales (bytes 0..8) and the 8 mins (bytes 8..16) of the Q4_K/Q5_K header
/// `v` (d, dmin, scales[12]), as [`header_k4`] decodes them.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn scmn_k4(v: __m128i) -> __m128i {
    let s = _mm_srli_si128(v, 4);
    let lo = _mm_and_si128(s, _mm_set1_epi8(0x3F));
    let l2 = _mm_shuffle_epi32(s, 0b1010_1010);
    let l2 = _mm_and_si128(
        _mm_srlv_epi32(l2, _mm_set_epi32(0, 0, 4, 0)),
        _mm_set1_epi8(0x0F),
    );
    let top = _mm_and_si128(_mm_srli_epi32(s, 2), _mm_set1_epi8(0x30));
    let hi = _mm_or_si128(l2, top);
    _mm_unpacklo_epi32(lo, hi)
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`.
pub(super) struct Q4K;
impl K for Q4K {
    const KQ: Kq = Kq::Q4K;
    const PER32: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: the caller's contract.
        unsafe { header_k4(b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn codes<const J: usize>(b: *const u8) -> __m256i {
        let j = J;
        // SAFETY: qs[32(j/2)..] lies in the block.
        nibble(
            unsafe { load(b.add(q4_k::QS.at + 32 * (j / 2))) },
            j % 2 == 1,
        )
    }
}

/// `block_q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }`.
pub(super) struct Q5K;
impl K for Q5K {
    const KQ: Kq = Kq::Q5K;
    const PER32: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: the caller's contract.
        unsafe { header_k4(b) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn codes<const J: usize>(b: *const u8) -> __m256i {
        let j = J;
        // SAFETY: qs[32(j/2)..] and qh lie in the block.
        let (q, qh) = unsafe {
            (
                load(b.add(q5_k::QS.at + 32 * (j / 2))),
                load(b.add(q5_k::QH.at)),
            )
        };
        _mm256_or_si256(nibble(q, j % 2 == 1), bit_to(qh, j, 4))
    }
}

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }`: u = q + 32.
pub(super) struct Q6K;
impl K for Q6K {
    const KQ: Kq = Kq::Q6K;
    const PER32: bool = false;
    const WIDE: bool = true;
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn header(b: *const u8) -> Hdr {
        // SAFETY: 210 bytes at b.
        unsafe {
            let sc = _mm_loadu_si128(b.add(q6_k::SCALES.at).cast());
            let d = f16x8(b.add(q6_k::D.at));
            // sc[0], sc[2], .., sc[6], sc[1], sc[3], .., sc[7], then the same + 8.
            let m = _mm_set_epi8(15, 13, 11, 9, 14, 12, 10, 8, 7, 5, 3, 1, 6, 4, 2, 0);
            let v = _mm_shuffle_epi8(sc, m);
            Hdr {
                d,
                dmin: d,
                s03: _mm256_cvtepi8_epi32(v),
                s47: _mm256_cvtepi8_epi32(_mm_srli_si128(v, 8)),
                c16: _mm256_slli_epi16(_mm256_cvtepi8_epi16(sc), 5),
            }
        }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn codes<const J: usize>(b: *const u8) -> __m256i {
        let j = J;
        let (h, i) = (j / 4, j % 4);
        // SAFETY: ql[64h + 32(i%2)..] and qh[32h..] lie in the block.
        let (ql, qh) = unsafe {
            (
                load(b.add(64 * h + 32 * (i % 2))),
                load(b.add(128 + 32 * h)),
            )
        };
        let hi = match i {
            0 => _mm256_slli_epi16(qh, 4),
            1 => _mm256_slli_epi16(qh, 2),
            2 => qh,
            _ => _mm256_srli_epi16(qh, 2),
        };
        // Bits 4..6 of each byte come from bits 2i..2i+2 of the same byte.
        let hi = _mm256_and_si256(hi, _mm256_set1_epi8(0x30));
        _mm256_or_si256(nibble(ql, i >= 2), hi)
    }
}

/// How many weight rows ahead the kernel prefetches: beyond L3 (16384 × 4096, M = 1) 2
/// measured best (1: ~5–10% slower, 3 and 4: equal or slower); in L3 it is neutral.
const PF_ROWS: usize = 2;

/// The kernels of one tier, compiled for its features `$feat` (a string literal); the
/// calling module defines `VNNI` (whether `sum4` is one instruction) and `sum4(u, s)`, the
/// exact i32 sums of each 4-byte group of u8 × i8 products (adjacent pair sums fit i16).
macro_rules! kernels {
    ($feat:tt) => {
        /// Blocks J and J1 = J+1 of super-block `sb` for every (weight row, activation row), one
        /// horizontal-add level merged, no scale yet: per 128-bit half, i16 lanes 0..4 are block
        /// J's and 4..8 block J+1's (sums of `vpmaddubsw` pairs); Q6_K (and Q4_K, Q5_K on a VNNI
        /// tier): i32 lanes 0,1 and 2,3 (sums of `sum4`).
        ///
        /// # Safety
        /// As [`pass`]; super-block `sb` lies in every row.
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn pair<U: K, const RW: usize, const RX: usize, const J: usize, const J1: usize>(
            w: &[*const u8; RW],
            x: &[*const i8; RX],
        ) -> [[__m256i; RX]; RW] {
            let mut out = [[_mm256_setzero_si256(); RX]; RW];
            // SAFETY: blocks J, J+1 of the super-block at w[i] and of the activations at x[r].
            unsafe {
                // Plain loops, no closures: a closure would not inherit the target features.
                let (mut x0, mut x1) = ([_mm256_setzero_si256(); RX], [_mm256_setzero_si256(); RX]);
                for r in 0..RX {
                    x0[r] = load(x[r].add(32 * J).cast());
                    x1[r] = load(x[r].add(32 * J + 32).cast());
                }
                for i in 0..RW {
                    let (u0, u1) = (U::codes::<J>(w[i]), U::codes::<J1>(w[i]));
                    for r in 0..RX {
                        out[i][r] = if U::WIDE || (VNNI && U::DPBUSD) {
                            _mm256_hadd_epi32(sum4(u0, x0[r]), sum4(u1, x1[r]))
                        } else {
                            let v0 = _mm256_maddubs_epi16(u0, x0[r]);
                            let v1 = _mm256_maddubs_epi16(u1, x1[r]);
                            if U::PACK1 && RX == 1 {
                                hadd16(v0, v1)
                            } else {
                                _mm256_hadd_epi16(v0, v1)
                            }
                        };
                    }
                }
            }
            out
        }

        /// Blocks J..J+4 from two [`pair`] results: per 128-bit half, i32 lane k = block J+k's
        /// half sum, times its per-16 scale `sc` ([`Hdr::s03`] or [`Hdr::s47`]; not for Q4_K/Q5_K).
        /// The integer sums are exact: every tier gives the same lanes.
        #[inline]
        #[target_feature(enable = $feat)]
        fn quad<U: K>(a: __m256i, b: __m256i, sc: __m256i) -> __m256i {
            if U::WIDE {
                _mm256_mullo_epi32(_mm256_hadd_epi32(a, b), sc)
            } else if VNNI && U::DPBUSD && U::PER32 {
                _mm256_hadd_epi32(a, b)
            } else if VNNI && U::DPBUSD {
                // Q2_K, Q3_K: the i16 scale pairs of `sc` sign-extended to one i32 lane each
                // (lane k = sc[2(J+k)], lane 4+k = sc[2(J+k)+1], as Q6_K's); the half sums
                // times |sc| ≤ 32 stay far below 2³¹.
                _mm256_mullo_epi32(_mm256_hadd_epi32(a, b), _mm256_srai_epi32(sc, 16))
            } else {
                quad16::<U>(_mm256_hadd_epi16(a, b), sc)
            }
        }

        /// [`quad`]'s i16 route after its second level of horizontal adds `h`.
        #[inline]
        #[target_feature(enable = $feat)]
        fn quad16<U: K>(h: __m256i, sc: __m256i) -> __m256i {
            // Each i16 lane is now a sum of 8 products |u·x| ≤ 31·127 (Q5_K): ≤ 31496 < 2¹⁵;
            // the scaled pair sums stay far below 2³¹.
            let sc = if U::PER32 { _mm256_set1_epi16(1) } else { sc };
            _mm256_madd_epi16(h, sc)
        }

        /// # Safety
        /// The features `$feat` available; every row of `ws` holds the super-blocks of every row of
        /// `xs` (whole super-blocks, K a multiple of 256); `out.len() == ws.len() · xs.len()`.
        #[target_feature(enable = $feat)]
        pub(in crate::linear::cpu) unsafe fn dot_row_group(
            kq: Kq,
            ws: &[&[u8]],
            xs: &[Row<'_>],
            out: &mut [f32],
        ) {
            // SAFETY (all calls): the caller's contract.
            unsafe {
                match kq {
                    Kq::Q2K => group::<Q2K>(ws, xs, out),
                    Kq::Q3K => group::<Q3K>(ws, xs, out),
                    Kq::Q4K => group::<Q4K>(ws, xs, out),
                    Kq::Q5K => group::<Q5K>(ws, xs, out),
                    Kq::Q6K => group::<Q6K>(ws, xs, out),
                }
            }
        }

        /// Splits the (weight rows × activation rows) grid into passes of at most four pairs.
        ///
        /// # Safety
        /// As [`dot_row_group`].
        #[inline]
        #[target_feature(enable = $feat)]
        unsafe fn group<U: K>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
            let m = xs.len();
            // SAFETY (all calls): the caller's contract.
            unsafe {
                if m == 1 {
                    // One weight row per pass: measured faster at M = 1 than 2 or 4 interleaved
                    // row streams when the matrix comes from L3 (equal when it sits in L1/L2).
                    for (w, o) in ws.iter().zip(out.iter_mut()) {
                        pass::<U, 1, 1>(std::slice::from_ref(w), xs, std::slice::from_mut(o), 1);
                    }
                    return;
                }
                for (i, w) in ws.iter().enumerate() {
                    let w = std::slice::from_ref(w);
                    let o = &mut out[i * m..(i + 1) * m];
                    let mut r = 0;
                    while r + 4 <= m {
                        pass::<U, 1, 4>(w, &xs[r..r + 4], &mut o[r..r + 4], 4);
                        r += 4;
                    }
                    match m - r {
                        3 => pass::<U, 1, 3>(w, &xs[r..], &mut o[r..], 3),
                        2 => pass::<U, 1, 2>(w, &xs[r..], &mut o[r..], 2),
                        1 => pass::<U, 1, 1>(w, &xs[r..], &mut o[r..], 1),
                        _ => {}
                    }
                }
            }
        }

        /// RW weight rows against RX activation rows: `out[i·stride + r]`.
        ///
        /// # Safety
        /// As [`dot_row_group`], with `ws.len() == RW`, `xs.len() == RX`.
        #[inline(never)]
        #[target_feature(enable = $feat)]
        unsafe fn pass<U: K, const RW: usize, const RX: usize>(
            ws: &[&[u8]],
            xs: &[Row<'_>],
            out: &mut [f32],
            stride: usize,
        ) {
            let bb = U::KQ.block_bytes();
            let nsb = xs[0].d.len() / 8;
            let pf = PF_ROWS * nsb * bb;
            // One up-front check per row: the pointer reads below stay in bounds.
            let wp: [*const u8; RW] = std::array::from_fn(|i| {
                assert!(ws[i].len() >= nsb * bb);
                ws[i].as_ptr()
            });
            for x in xs {
                assert!(
                    x.qs.len() >= 256 * nsb && x.d.len() >= 8 * nsb && x.sum16.len() >= 16 * nsb
                );
            }
            let xq: [*const i8; RX] = std::array::from_fn(|r| xs[r].qs.as_ptr());
            let xd: [*const f32; RX] = std::array::from_fn(|r| xs[r].d.as_ptr());
            let xs16: [*const i16; RX] = std::array::from_fn(|r| xs[r].sum16.as_ptr());
            let mut acc = [[_mm256_setzero_ps(); RX]; RW];
            let mut accm = [[_mm256_setzero_ps(); RX]; RW];
            for sb in 0..nsb {
                // SAFETY (all): super-block sb lies in every weight row and every activation row.
                unsafe {
                    let mut w = wp;
                    let mut x = xq;
                    let mut dx = [_mm256_setzero_ps(); RX];
                    let mut s16 = [_mm256_setzero_si256(); RX];
                    for r in 0..RX {
                        x[r] = xq[r].add(256 * sb);
                        dx[r] = _mm256_loadu_ps(xd[r].add(8 * sb));
                        s16[r] = _mm256_loadu_si256(xs16[r].add(16 * sb).cast());
                    }
                    let mut h = [U::header(w[0].add(bb * sb)); RW];
                    for i in 0..RW {
                        w[i] = wp[i].add(bb * sb);
                        // The same super-block of a row further on (rows are consecutive in the
                        // plane): a row is only a few KiB, too short for the hardware prefetcher.
                        let ahead = w[i].wrapping_add(pf);
                        let mut o = 0;
                        while o < bb {
                            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(o).cast());
                            o += 64;
                        }
                        h[i] = U::header(w[i]);
                    }
                    // Lane j of `s[i][r]` = block j's sum (pairwise merge tree, then the two halves).
                    let packed2 = U::PACK2 && RX == 1 && !U::WIDE && !(VNNI && U::DPBUSD);
                    let p0 = pair::<U, RW, RX, 0, 1>(&w, &x);
                    let p1 = pair::<U, RW, RX, 2, 3>(&w, &x);
                    let mut a = p0;
                    for i in 0..RW {
                        for r in 0..RX {
                            a[i][r] = if packed2 {
                                quad16::<U>(hadd16(p0[i][r], p1[i][r]), h[i].s03)
                            } else {
                                quad::<U>(p0[i][r], p1[i][r], h[i].s03)
                            };
                        }
                    }
                    let p2 = pair::<U, RW, RX, 4, 5>(&w, &x);
                    let p3 = pair::<U, RW, RX, 6, 7>(&w, &x);
                    for i in 0..RW {
                        for r in 0..RX {
                            // a = [blocks 0..4 over lanes 0..4 | over lanes 4..8], b: blocks 4..8.
                            let b = if packed2 {
                                quad16::<U>(hadd16(p2[i][r], p3[i][r]), h[i].s47)
                            } else {
                                quad::<U>(p2[i][r], p3[i][r], h[i].s47)
                            };
                            let s = _mm256_add_epi32(
                                _mm256_blend_epi32(a[i][r], b, 0xF0),
                                _mm256_permute2x128_si256(a[i][r], b, 0x21),
                            );
                            let t = _mm256_madd_epi16(h[i].c16, s16[r]);
                            let s = match U::KQ {
                                Kq::Q4K | Kq::Q5K => _mm256_mullo_epi32(h[i].s03, s),
                                Kq::Q3K | Kq::Q6K => _mm256_sub_epi32(s, t),
                                Kq::Q2K => s,
                            };
                            let ds = _mm256_mul_ps(h[i].d, dx[r]);
                            acc[i][r] = _mm256_fmadd_ps(ds, _mm256_cvtepi32_ps(s), acc[i][r]);
                            if U::KQ.has_min() {
                                let dm = _mm256_mul_ps(h[i].dmin, dx[r]);
                                accm[i][r] = _mm256_fmadd_ps(dm, _mm256_cvtepi32_ps(t), accm[i][r]);
                            }
                        }
                    }
                }
            }
            for i in 0..RW {
                for r in 0..RX {
                    out[i * stride + r] = finish_m256(U::KQ, acc[i][r], accm[i][r]);
                }
            }
        }
    };
}

/// The AVX2 tier: `sum4` = `vpmaddwd(vpmaddubsw(u, s), 1)`.
pub(super) mod avx2 {
    use super::*;

    const VNNI: bool = false;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn sum4(u: __m256i, s: __m256i) -> __m256i {
        _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1))
    }

    kernels!("avx2,fma,f16c");
}

/// The AVX-VNNI tier: `sum4` = 256-bit VEX `vpdpbusd`.
pub(super) mod avxvnni {
    use super::*;

    const VNNI: bool = true;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avxvnni")]
    fn sum4(u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s)
    }

    kernels!("avx2,fma,f16c,avxvnni");
}
