//! The AVX-512 tile kernel of the k-quants (Q3_K–Q6_K) for several activation rows: four
//! weight rows against every group of four activation rows, one 512-bit lane per (weight
//! row, activation row) pair, as the legacy family's tile kernel
//! ([`super::legacy_tile_avx512`]). Same bits as [`super::kquants`]'s order: only the way
//! the exact sums `S_j` and `M_j` are formed differs.
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

/// Up to four weight rows `ws` (whole super-blocks) against the rows `xs` ([`applies`]
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
    assert!((1..=4).contains(&ws.len()) && ws.iter().all(|w| w.len() >= bytes));
    assert!(out.len() >= ws.len() * m && m <= 4 * MAX_GROUPS);
    // SAFETY (each): the features and `applies` (the caller's contract); the rows hold the
    // super-blocks and `out` its outputs (checked above).
    unsafe {
        match kq {
            Kq::Q2K => unreachable!("Q2_K has no tile kernel (min_m)"),
            Kq::Q3K => tile::<Q3K>(ws, xs, out),
            Kq::Q4K => tile::<Q4K>(ws, xs, out),
            Kq::Q5K => tile::<Q5K>(ws, xs, out),
            Kq::Q6K => tile::<Q6K>(ws, xs, out),
        }
    }
}

/// [`dot_row_group`] for the type `U`.
///
/// # Safety
/// As [`dot_row_group`], whose checks hold.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<U: K>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
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
    let row = |a: usize| ws.get(a).unwrap_or(&ws[0]).as_ptr();
    let wp = [row(0), row(1), row(2), row(3)];
    let mut acc = [[_mm512_setzero_ps(); 8]; MAX_GROUPS];
    let mut accm = [[_mm512_setzero_ps(); 8]; MAX_GROUPS];
    let quads = tile_avx512::quads(xs);
    let mut codes = [[_mm512_setzero_si512(); 4]; 4];
    let (mut sc_t, mut m_t) = ([[0f32; 4]; 16], [[0f32; 4]; 16]);
    for sb in 0..nb / 8 {
        // SAFETY: super-block sb of every weight row (the caller's checks).
        let (dw, dmw) = unsafe {
            let mut words = [0u16; 8];
            for a in 0..4 {
                let blk = wp[a].add(bb * sb);
                codes[a] = U::codes(blk);
                let (sc, mn, d, dmin) = scales(kq, std::slice::from_raw_parts(blk, bb));
                for h in 0..16 {
                    (sc_t[h][a], m_t[h][a]) = (sc[h], mn[h]);
                }
                (words[a], words[4 + a]) = (d, dmin);
            }
            let dd = _mm_cvtph_ps(_mm_loadu_si128(words.as_ptr().cast()));
            let dm = _mm_cvtph_ps(_mm_srli_si128::<8>(_mm_loadu_si128(words.as_ptr().cast())));
            (spread(dd), spread(dm))
        };
        for j in 0..8 {
            let t = 8 * sb + j;
            // SAFETY: sub-block j of the four rows' 256 codes; block t < nb of every group's
            // 128·nb codes, 4·nb scales and sums and 8·nb half sums (the caller's checks).
            unsafe {
                let half = |a: usize| {
                    _mm256_loadu_si256(codes[a].as_ptr().cast::<u8>().add(32 * j).cast())
                };
                let (lo, hi) = pair_rows([half(0), half(1), half(2), half(3)]);
                let w = spread_chunks(lo, hi);
                let load4 = |v: &[f32; 4]| spread(_mm_loadu_ps(v.as_ptr()));
                let (sc_lo, sc_hi) = (load4(&sc_t[2 * j]), load4(&sc_t[2 * j + 1]));
                let m_lo = load4(&m_t[2 * j]);
                for g in 0..groups {
                    let (xc, xd, xsum, xsum16) = quads[g];
                    let mut tl = [_mm512_setzero_si512(); 2];
                    for c in 0..8 {
                        let x = _mm512_broadcast_i32x4(_mm_loadu_si128(
                            xc.add(16 * (8 * t + c)).cast(),
                        ));
                        tl[c / 4] = _mm512_dpbusd_epi32(tl[c / 4], w[c], x);
                    }
                    let bcast = |p: *const i32| _mm512_broadcast_i32x4(_mm_loadu_si128(p.cast()));
                    let dx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd.add(4 * t)));
                    let (s_lo, s_hi) = (bcast(xsum16.add(8 * t)), bcast(xsum16.add(8 * t + 4)));
                    let s = if per16 {
                        let (mut t_lo, mut t_hi) = (tl[0], tl[1]);
                        if has_offset {
                            t_lo = _mm512_sub_epi32(t_lo, _mm512_sll_epi32(s_lo, offset));
                            t_hi = _mm512_sub_epi32(t_hi, _mm512_sll_epi32(s_hi, offset));
                        }
                        let p = _mm512_mul_ps(_mm512_cvtepi32_ps(t_lo), sc_lo);
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(t_hi), sc_hi, p)
                    } else {
                        _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(tl[0], tl[1])), sc_lo)
                    };
                    acc[g][j] = _mm512_fmadd_ps(_mm512_mul_ps(dw, dx), s, acc[g][j]);
                    if kq.has_min() {
                        // Q4_K, Q5_K: the sub-block's min times Σx.
                        let mj = _mm512_mul_ps(m_lo, _mm512_cvtepi32_ps(bcast(xsum.add(4 * t))));
                        accm[g][j] = _mm512_fmadd_ps(_mm512_mul_ps(dmw, dx), mj, accm[g][j]);
                    }
                }
            }
        }
    }
    for g in 0..groups {
        let a: [__m512; 8] = if kq.has_min() {
            std::array::from_fn(|j| _mm512_sub_ps(acc[g][j], accm[g][j]))
        } else {
            acc[g]
        };
        store(&tree(&a, None), g, ws.len(), m, out, |_, _, v| v);
    }
}
