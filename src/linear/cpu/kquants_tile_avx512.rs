//! The AVX-512 tile kernel of the k-quants (Q3_K–Q6_K) for several activation rows: up to
//! two sets of four weight rows against every group of four activation rows, one 512-bit
//! lane per (weight row, activation row) pair of a set, as the legacy family's tile kernel
//! ([`super::legacy_tile_avx512`]); each activation chunk's broadcast serves both sets.
//! Same bits as [`super::kquants`]'s order: only the way the exact sums `S_j` and `M_j` are
//! formed differs.
//!
//! Measured on an AMD Zen 4 (one thread, 4096², M = 32, GMAC/s) against one set of four
//! rows per call: Q6_K 58 → 69, Q3_K 49 → 59; with the next super-block of every row
//! prefetched into L1 at the start of each (whose loads otherwise stalled the iteration:
//! the core cannot run that far ahead), Q6_K 80, Q3_K 81, Q5_K 79–82 (a distance of two
//! super-blocks measured 1–5% slower; the scales spread from bytes by `vpshufb` rather
//! than converted one by one measured even). The thresholds below stay: there, at M = 8
//! and 16, Q4_K and Q5_K's pass kernels still ran 70–84 against the tile's 50–70.
//!
//! Per super-block each weight row's unsigned codes come from the 512-bit kernels'
//! unpacking ([`K::codes`], natural value order), and per 32-value sub-block j they are
//! spread to the lanes: for 4-value chunk c, one vector whose 128-bit lane a repeats the
//! chunk's codes of weight row a (`vpermt2d`). Against the four-row interleaved activation
//! chunks ([`Rows::arrange_quads`](crate::linear::q8_1::Rows::arrange_quads)), four
//! `vpdpbusd` give each lane's exact `Σ u·x` over a 16-value half (`t_lo`, `t_hi`); then,
//! all exact in f32 (every product and partial sum an integer below 2²⁴):
//!
//! - Q3_K, Q6_K (per-16 scales): `S_j = sc_lo·(t_lo − OFF·Σx16_lo) + sc_hi·(t_hi −
//!   OFF·Σx16_hi)` (OFF: Q3_K 4, Q6_K 32);
//! - Q4_K, Q5_K (per-32): `S_j = sc_j·(t_lo + t_hi)`, `M_j = m_j·Σx`;
//! - `acc[j] ← fma(d·dx, S_j, acc[j])`, `accm[j] ← fma(dmin·dx, M_j, accm[j])` per lane,
//!   and the shared tree of `acc[j] − accm[j]` (or of `acc`).

use super::kquants::Kq;
use super::kquants_avx512::{K, Q3K, Q4K, Q5K, Q6K};
use super::tile_avx512::{self, MAX_GROUPS, pair_rows, spread, spread_chunks, store, tree};
use crate::formats::gguf::blocks::{q3_k, q4_k, q5_k, q6_k, scale_min_k4};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// Activation rows from which a row group of `kq` takes this kernel: below it the pass
/// kernels of `kquants_avx512`, which unpack each super-block once per pass of up to four
/// activation rows and need no lane spreading, measured faster (Xeon with AVX-512, one
/// thread, 4096²): Q6_K even at M = 8; Q3_K, group-major, 20% faster at 8, equal at 16,
/// 7–28% slower from 32 on; Q4_K and Q5_K, chunk-major, 5–30% faster up to M = 16, Q4_K
/// also at 32 and equal at 64, Q5_K equal at 32 and 12% slower at 64. Q2_K has none: its
/// group-major pass kernel measured 7–35% faster at every M up to 64.
pub(super) const fn min_m(kq: Kq) -> Option<usize> {
    match kq {
        Kq::Q6K => Some(8),
        Kq::Q3K => Some(16),
        Kq::Q5K => Some(32),
        Kq::Q4K => Some(48),
        Kq::Q2K => None,
    }
}

/// Whether this kernel serves `kq` against `xs`: at least [`min_m`] rows, at most 64,
/// whole super-blocks, interleaved in groups of four ([`tile_avx512::applies`]).
pub(super) fn applies(kq: Kq, xs: &[Row<'_>]) -> bool {
    min_m(kq).is_some_and(|min| tile_avx512::applies(min, xs)) && xs[0].d.len().is_multiple_of(8)
}

/// A super-block's integer scales and mins per 16-value half (Q4_K/Q5_K: each sub-block's
/// twice) as f32 (exact), and its binary16 d and dmin words.
#[inline(always)]
fn scales(kq: Kq, b: &[u8]) -> ([f32; 16], [f32; 16], u16, u16) {
    let word = |at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let (mut sc, mut m) = ([0f32; 16], [0f32; 16]);
    match kq {
        Kq::Q2K => unreachable!("Q2_K has no tile kernel (min_m)"),
        Kq::Q3K => {
            for (o, s) in sc.iter_mut().zip(q3_k::scales(q3_k::SCALES.of(b))) {
                *o = s as f32;
            }
            (sc, m, word(q3_k::D.at), 0)
        }
        Kq::Q4K | Kq::Q5K => {
            const { assert!(q4_k::SCALES.at == q5_k::SCALES.at && q4_k::D.at == q5_k::D.at) };
            const { assert!(q4_k::DMIN.at == q5_k::DMIN.at) };
            let s = q4_k::SCALES.of(b);
            for j in 0..8 {
                let (a, n) = scale_min_k4(j, s);
                (sc[2 * j], sc[2 * j + 1]) = (a as f32, a as f32);
                (m[2 * j], m[2 * j + 1]) = (n as f32, n as f32);
            }
            (sc, m, word(q4_k::D.at), word(q4_k::DMIN.at))
        }
        Kq::Q6K => {
            for (o, &s) in sc.iter_mut().zip(q6_k::SCALES.of(b)) {
                *o = s as i8 as f32;
            }
            (sc, m, word(q6_k::D.at), 0)
        }
    }
}

/// Weight rows per call: two sets of four, each activation chunk's broadcast serving both.
pub(crate) const ROWS: usize = 8;

/// Up to [`ROWS`] weight rows `ws` (whole super-blocks) against the rows `xs` ([`applies`]
/// holds): `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (the
/// interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(kq: Kq, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert!(applies(kq, xs));
    let (m, nb) = (xs.len(), xs[0].d.len());
    let bytes = nb / 8 * kq.block_bytes();
    assert!((1..=ROWS).contains(&ws.len()) && ws.iter().all(|w| w.len() >= bytes));
    assert!(out.len() >= ws.len() * m && m <= 4 * MAX_GROUPS);
    // SAFETY (each): the features and `applies` (the caller's contract); the rows hold the
    // super-blocks and `out` its outputs (checked above).
    unsafe {
        match (kq, ws.len() > 4) {
            (Kq::Q2K, _) => unreachable!("Q2_K has no tile kernel (min_m)"),
            (Kq::Q3K, false) => tile::<Q3K, 1>(ws, xs, out),
            (Kq::Q3K, true) => tile::<Q3K, 2>(ws, xs, out),
            (Kq::Q4K, false) => tile::<Q4K, 1>(ws, xs, out),
            (Kq::Q4K, true) => tile::<Q4K, 2>(ws, xs, out),
            (Kq::Q5K, false) => tile::<Q5K, 1>(ws, xs, out),
            (Kq::Q5K, true) => tile::<Q5K, 2>(ws, xs, out),
            (Kq::Q6K, false) => tile::<Q6K, 1>(ws, xs, out),
            (Kq::Q6K, true) => tile::<Q6K, 2>(ws, xs, out),
        }
    }
}

/// [`dot_row_group`] for the type `U`, with `S` sets of four weight rows (1 or 2).
///
/// # Safety
/// As [`dot_row_group`], whose checks hold; `ws.len() <= 4·S`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<U: K, const S: usize>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let kq = U::KQ;
    let bb = kq.block_bytes();
    let (m, nb) = (xs.len(), xs[0].d.len());
    let groups = m.div_ceil(4);
    let per16 = matches!(kq, Kq::Q2K | Kq::Q3K | Kq::Q6K);
    let offset = _mm_cvtsi32_si128(match kq {
        Kq::Q3K => 2,
        Kq::Q6K => 5,
        _ => 0,
    });
    let has_offset = matches!(kq, Kq::Q3K | Kq::Q6K);
    // A missing weight row repeats row 0; its lanes are never stored.
    let wp: [*const u8; 8] = std::array::from_fn(|a| ws.get(a).unwrap_or(&ws[0]).as_ptr());
    let mut acc = [[[_mm512_setzero_ps(); 8]; MAX_GROUPS]; S];
    let mut accm = [[[_mm512_setzero_ps(); 8]; MAX_GROUPS]; S];
    let quads = tile_avx512::quads(xs);
    let mut codes = [[_mm512_setzero_si512(); 4]; 8];
    let (mut sc_t, mut m_t) = ([[0f32; 8]; 16], [[0f32; 8]; 16]);
    for sb in 0..nb / 8 {
        // The next super-block of every row, into L1 while this one runs: its loads come
        // first in a long iteration, too far ahead for the core to overlap them otherwise.
        for &p in &wp[..4 * S] {
            let next = p.wrapping_add(bb * (sb + 1));
            for line in (0..bb + 63).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(line.min(bb - 1)).cast());
            }
        }
        // SAFETY: super-block sb of every weight row (the caller's checks).
        let (dw, dmw): ([__m512; S], [__m512; S]) = unsafe {
            let mut words = [0u16; 16];
            for a in 0..4 * S {
                let blk = wp[a].add(bb * sb);
                codes[a] = U::codes(blk);
                let (sc, mn, d, dmin) = scales(kq, std::slice::from_raw_parts(blk, bb));
                for h in 0..16 {
                    (sc_t[h][a], m_t[h][a]) = (sc[h], mn[h]);
                }
                (words[a], words[8 + a]) = (d, dmin);
            }
            let dd = _mm256_cvtph_ps(_mm_loadu_si128(words.as_ptr().cast()));
            let dm = _mm256_cvtph_ps(_mm_loadu_si128(words.as_ptr().add(8).cast()));
            let (mut dw, mut dmw) = ([_mm512_setzero_ps(); S], [_mm512_setzero_ps(); S]);
            for q in 0..S {
                (dw[q], dmw[q]) = (spread(quarter(dd, q)), spread(quarter(dm, q)));
            }
            (dw, dmw)
        };
        for j in 0..8 {
            let t = 8 * sb + j;
            // SAFETY: sub-block j of the rows' 256 codes; block t < nb of every group's
            // 128·nb codes, 4·nb scales and sums and 8·nb half sums (the caller's checks).
            unsafe {
                let half = |a: usize| {
                    _mm256_loadu_si256(codes[a].as_ptr().cast::<u8>().add(32 * j).cast())
                };
                let load4 = |v: &[f32; 8], q: usize| spread(_mm_loadu_ps(v.as_ptr().add(4 * q)));
                let mut w = [[_mm512_setzero_si512(); 8]; S];
                let (mut sc_lo, mut sc_hi) = ([_mm512_setzero_ps(); S], [_mm512_setzero_ps(); S]);
                let mut m_lo = [_mm512_setzero_ps(); S];
                for q in 0..S {
                    let a = 4 * q;
                    let (lo, hi) = pair_rows([half(a), half(a + 1), half(a + 2), half(a + 3)]);
                    w[q] = spread_chunks(lo, hi);
                    sc_lo[q] = load4(&sc_t[2 * j], q);
                    sc_hi[q] = load4(&sc_t[2 * j + 1], q);
                    m_lo[q] = load4(&m_t[2 * j], q);
                }
                for g in 0..groups {
                    let (xc, xd, xsum, xsum16) = quads[g];
                    let mut tl = [[_mm512_setzero_si512(); 2]; S];
                    for c in 0..8 {
                        let x = _mm512_broadcast_i32x4(_mm_loadu_si128(
                            xc.add(16 * (8 * t + c)).cast(),
                        ));
                        for q in 0..S {
                            tl[q][c / 4] = _mm512_dpbusd_epi32(tl[q][c / 4], w[q][c], x);
                        }
                    }
                    let bcast = |p: *const i32| _mm512_broadcast_i32x4(_mm_loadu_si128(p.cast()));
                    let dx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd.add(4 * t)));
                    let (s_lo, s_hi) = (bcast(xsum16.add(8 * t)), bcast(xsum16.add(8 * t + 4)));
                    let sx = if kq.has_min() {
                        _mm512_cvtepi32_ps(bcast(xsum.add(4 * t)))
                    } else {
                        _mm512_setzero_ps()
                    };
                    for q in 0..S {
                        let s = if per16 {
                            let (mut t_lo, mut t_hi) = (tl[q][0], tl[q][1]);
                            if has_offset {
                                t_lo = _mm512_sub_epi32(t_lo, _mm512_sll_epi32(s_lo, offset));
                                t_hi = _mm512_sub_epi32(t_hi, _mm512_sll_epi32(s_hi, offset));
                            }
                            let p = _mm512_mul_ps(_mm512_cvtepi32_ps(t_lo), sc_lo[q]);
                            _mm512_fmadd_ps(_mm512_cvtepi32_ps(t_hi), sc_hi[q], p)
                        } else {
                            let t = _mm512_add_epi32(tl[q][0], tl[q][1]);
                            _mm512_mul_ps(_mm512_cvtepi32_ps(t), sc_lo[q])
                        };
                        acc[q][g][j] = _mm512_fmadd_ps(_mm512_mul_ps(dw[q], dx), s, acc[q][g][j]);
                        if kq.has_min() {
                            // Q4_K, Q5_K: the sub-block's min times Σx.
                            let mj = _mm512_mul_ps(m_lo[q], sx);
                            accm[q][g][j] =
                                _mm512_fmadd_ps(_mm512_mul_ps(dmw[q], dx), mj, accm[q][g][j]);
                        }
                    }
                }
            }
        }
    }
    for q in 0..S {
        let rows = ws.len().saturating_sub(4 * q).min(4);
        let out = &mut out[4 * q * m..];
        for g in 0..groups {
            let a: [__m512; 8] = if kq.has_min() {
                std::array::from_fn(|j| _mm512_sub_ps(acc[q][g][j], accm[q][g][j]))
            } else {
                acc[q][g]
            };
            store(&tree(&a, None), g, rows, m, out, |_, _, v| v);
        }
    }
}

/// Lanes 4q..4q + 4 of `v` (q < 2).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn quarter(v: __m256, q: usize) -> __m128 {
    if q == 0 {
        _mm256_castps256_ps128(v)
    } else {
        _mm256_extractf128_ps::<1>(v)
    }
}
