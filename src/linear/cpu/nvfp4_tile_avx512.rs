//! The AVX-512 tile kernel of nvfp4 against q8_1 activations with several activation rows:
//! up to two sets of four weight rows against every group of four activation rows, one
//! 512-bit lane per (weight row, activation row) pair of a set, as the legacy family's tile
//! kernel ([`super::legacy_tile_avx512`]); each activation chunk's broadcast serves both
//! sets (Zen 4, one thread, 4096², against one set per call: M = 32 66 → 82–83 GMAC/s,
//! M = 16 58 → 66–67, M = 8 43–44 → 46–47). Same bits as [`super::nvfp4_q8`]'s order.
//!
//! Per 32 values (one q8_1 block, two 16-value nvfp4 blocks) each weight row's codes become
//! `u = 2·e2m1 + 12` in value order and are spread to the lanes (`vpermt2d`); against the
//! four-row interleaved activation chunks
//! ([`Rows::arrange_quads`](crate::linear::q8_1::Rows::arrange_quads)) four `vpdpbusd` give
//! each block's exact `Σ u·q`; minus `12·Σq` (the 16-value code sums) it is `S_b`, exact in
//! f32 (|S_b| ≤ 24384, every step an integer below 2²⁴). `C_b = (sf_b/256)·(128·dx)` is the
//! reference's exact scale product, `acc[b mod 8] ← fma(C_b, S_b, ·)` per lane, and the
//! shared tree, divided by the row's d. A row that turns out not to be fast (its largest
//! scale word, [`fast_given_max`]) has its outputs replaced by the exact-weight order.

use super::nvfp4_q8::{NRow, exact_weights, fast_given_max, scales_span};
use super::tile_avx512::{self, MAX_GROUPS, pair_rows, spread, spread_chunks, store, tree};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// Activation rows from which a row group takes this kernel.
pub(super) const MIN_M: usize = 8;

/// Whether this kernel serves `xs`: at least [`MIN_M`] rows, at most 64, interleaved in
/// groups of four ([`tile_avx512::applies`]).
pub(super) fn applies(xs: &[Row<'_>]) -> bool {
    tile_avx512::applies(MIN_M, xs)
}

/// Weight rows per call: two sets of four.
pub(crate) const ROWS: usize = 8;

/// Up to [`ROWS`] weight rows `ws` against the rows `xs` ([`applies`] holds):
/// `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (the
/// interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(ws: &[NRow<'_>], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert!(applies(xs));
    let (m, nq) = (xs.len(), xs[0].d.len());
    let nb = 2 * nq;
    assert!((1..=ROWS).contains(&ws.len()) && out.len() >= ws.len() * m && m <= 4 * MAX_GROUPS);
    let span = scales_span(nb);
    assert!(
        ws.iter()
            .all(|w| w.codes.len() >= 8 * nb && w.scales.len() >= span)
    );
    // SAFETY: the features and `applies` (the caller's contract); the rows checked above.
    unsafe {
        if ws.len() > 4 {
            tile::<2>(ws, xs, out)
        } else {
            tile::<1>(ws, xs, out)
        }
    }
}

/// [`dot_row_group`] with `S` sets of four weight rows (1 or 2).
///
/// # Safety
/// As [`dot_row_group`], whose checks hold; `ws.len() <= 4·S`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<const S: usize>(ws: &[NRow<'_>], xs: &[Row<'_>], out: &mut [f32]) {
    let (m, nq) = (xs.len(), xs[0].d.len());
    let nb = 2 * nq;
    let groups = m.div_ceil(4);
    // A missing weight row repeats row 0; its lanes are never stored.
    let wr: [&NRow<'_>; 8] = std::array::from_fn(|a| ws.get(a).unwrap_or(&ws[0]));
    // u = 2·e2m1(c) + 12 for every code word c.
    let table = _mm256_broadcastsi128_si256(_mm_setr_epi8(
        12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0,
    ));
    let mut acc = [[[_mm512_setzero_ps(); 8]; S]; MAX_GROUPS];
    let quads = tile_avx512::quads(xs);
    let mut max = [0u8; 8];
    for j in 0..nq {
        // SAFETY: q8_1 block j < nq: 16 code bytes of every weight row and the scale words
        // of blocks 2j, 2j + 1 (checked); the groups' 128·nq codes, 4·nq scales and 8·nq
        // half sums ([`applies`]).
        unsafe {
            let codes = |w: &NRow<'_>| {
                let v = _mm_loadu_si128(w.codes.as_ptr().add(16 * j).cast());
                let m = _mm_set1_epi8(0x0F);
                let (lo, hi) = (
                    _mm_and_si128(v, m),
                    _mm_and_si128(_mm_srli_epi16::<4>(v), m),
                );
                // Element 2i is the low nibble of byte i: value order interleaves them.
                let c = _mm256_set_m128i(_mm_unpackhi_epi8(lo, hi), _mm_unpacklo_epi8(lo, hi));
                _mm256_shuffle_epi8(table, c)
            };
            let mut w = [[_mm512_setzero_si512(); 8]; S];
            for (q, w) in w.iter_mut().enumerate() {
                let r = &wr[4 * q..];
                let (lo, hi) = pair_rows([codes(r[0]), codes(r[1]), codes(r[2]), codes(r[3])]);
                *w = spread_chunks(lo, hi);
            }
            // sf/256 per lane: a valid E4M3FN word shifted left by 7 is the binary16 of its
            // value / 256 (exact; invalid words make the row not fast, replaced below).
            let mut sf = [[_mm512_setzero_ps(); 2]; S];
            for (q, sf) in sf.iter_mut().enumerate() {
                let mut words = [0u16; 8];
                for a in 0..4 {
                    let r = wr[4 * q + a];
                    let (w0, w1) = (r.word(2 * j), r.word(2 * j + 1));
                    max[4 * q + a] = max[4 * q + a].max(w0).max(w1);
                    (words[a], words[4 + a]) = ((w0 as u16) << 7, (w1 as u16) << 7);
                }
                let v = _mm_loadu_si128(words.as_ptr().cast());
                *sf = [
                    spread(_mm_cvtph_ps(v)),
                    spread(_mm_cvtph_ps(_mm_srli_si128::<8>(v))),
                ];
            }
            let (l0, l1) = ((2 * j) % 8, (2 * j + 1) % 8);
            for (acc, &(xc, xd, _, xsum16)) in acc.iter_mut().zip(&quads).take(groups) {
                let mut t = [[_mm512_setzero_si512(); 2]; S];
                for c in 0..8 {
                    let x =
                        _mm512_broadcast_i32x4(_mm_loadu_si128(xc.add(16 * (8 * j + c)).cast()));
                    for q in 0..S {
                        t[q][c / 4] = _mm512_dpbusd_epi32(t[q][c / 4], w[q][c], x);
                    }
                }
                let s = |h: usize| {
                    _mm512_cvtepi32_ps(_mm512_broadcast_i32x4(_mm_loadu_si128(
                        xsum16.add(4 * (2 * j + h)).cast(),
                    )))
                };
                let (x0, x1) = (s(0), s(1));
                let twelve = _mm512_set1_ps(12.0);
                // Exact: dx is a binary16 value, 128·dx < 2²⁴.
                let dx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd.add(4 * j)));
                let dx = _mm512_mul_ps(dx, _mm512_set1_ps(128.0));
                for q in 0..S {
                    let s0 = _mm512_fnmadd_ps(twelve, x0, _mm512_cvtepi32_ps(t[q][0]));
                    let s1 = _mm512_fnmadd_ps(twelve, x1, _mm512_cvtepi32_ps(t[q][1]));
                    let a = &mut acc[q];
                    a[l0] = _mm512_fmadd_ps(_mm512_mul_ps(sf[q][0], dx), s0, a[l0]);
                    a[l1] = _mm512_fmadd_ps(_mm512_mul_ps(sf[q][1], dx), s1, a[l1]);
                }
            }
        }
    }
    let fast: [bool; 8] = std::array::from_fn(|a| fast_given_max(wr[a], max[a], nb));
    for q in 0..S {
        let rows = ws.len().saturating_sub(4 * q).min(4);
        let out = &mut out[4 * q * m..];
        let r = |a: usize| wr[4 * q + a];
        let d = spread(_mm_setr_ps(r(0).d, r(1).d, r(2).d, r(3).d));
        // Divided by d; a row that is not fast takes the exact-weight order.
        for (g, a) in acc.iter().enumerate().take(groups) {
            store(&tree(&a[q], Some(d)), g, rows, m, out, |i, row, v| {
                if fast[4 * q + i] {
                    v
                } else {
                    exact_weights(&ws[4 * q + i], &xs[row])
                }
            });
        }
    }
}
