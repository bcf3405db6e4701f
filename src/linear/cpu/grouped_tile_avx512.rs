//! The AVX-512 tile kernel of the grouped formats against q8_1 activations with several
//! activation rows: up to two sets of four weight rows against every group of four
//! activation rows, one 512-bit lane per (weight row, activation row) pair of a set, as the
//! legacy family's tile kernel ([`super::legacy_tile_avx512`]); each activation chunk's
//! broadcast serves both sets (Zen 4, one thread, 4096², against one set per call: M = 32
//! q2 83–84 → 91–102 GMAC/s, q4 78–82 → 97–100, q6 76–79 → 95–98, q8 64–77 → 75–98, t2
//! 83–85 → 97–107; M = 16 1.07–1.3×). Same bits as [`super::grouped_q8`]'s order: only
//! the way the exact block sums `T_b` are formed differs.
//!
//! Per run of four blocks each weight row is unpacked by the 512-bit kernels' own code
//! ([`Kernel::unpack_run`]: 128 unsigned codes in the order their activations were
//! arranged in, natural for q8), and the activation rows were interleaved in groups of four
//! from that same arrangement
//! ([`Rows::arrange_quads`](crate::linear::q8_1::Rows::arrange_quads)). Every 4-code chunk
//! of a run lies inside one block ([`chunks`] lists each block's eight), so a block is
//! eight `vpdpbusd` of a spread weight chunk (128-bit lane a: weight row a, `vpermt2d`) and
//! a broadcast activation chunk: sixteen exact `Σ u·x`, minus the offset times the block's
//! `Σx`, converted exactly (|T_b| < 2²⁴); then `acc[b mod 8] ← fma(s_g·dx_b, T_b, ·)` per
//! lane and the shared tree.

use super::float::Grouped;
use super::grouped_q8::{GRow, check_rows};
use super::grouped_q8_avx512::{Kernel, Q2, Q4, Q5, Q6, Q8, T2};
use super::tile_avx512::{self, MAX_GROUPS, spread, spread_chunk, store, tree};
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// Activation rows from which a row group of `kind` takes this kernel: below it the pair
/// kernels of `grouped_q8_avx512` (each weight run unpacked once per pass of up to four
/// activation rows, no lane spreading) measured faster (Xeon with AVX-512, one thread,
/// 4096²: q8 from M = 12 on, the others from 16).
pub(super) const fn min_m(kind: Grouped) -> usize {
    match kind {
        Grouped::Q8 => 12,
        _ => 16,
    }
}

/// The fewest rows any format takes this kernel from (the rows are interleaved from here).
pub(super) const MIN_M: usize = 12;

/// Whether this kernel serves `kind` against `xs`: at least [`min_m`] rows, at most 64,
/// whole runs of four blocks, interleaved in groups of four ([`tile_avx512::applies`]).
pub(super) fn applies(kind: Grouped, xs: &[Row<'_>]) -> bool {
    tile_avx512::applies(min_m(kind), xs) && xs[0].d.len().is_multiple_of(4)
}

/// The chunks (4 codes each, 0..32) of each block of a run in the arranged order of `kind`
/// (`grouped_q8_avx512`'s arrangements): q8 natural, block q = chunks 8q .. 8q + 8; q4, q5,
/// q6 (code byte 64h + 16q + i of block q) chunks 16h + 4q + (0..4); q2, t2 (byte 64z +
/// 32h + 8q + i) chunks 16z + 8h + 2q + (0, 1).
pub(super) const fn chunks(kind: Grouped) -> [[usize; 8]; 4] {
    let mut out = [[0usize; 8]; 4];
    let mut q = 0;
    while q < 4 {
        let mut n = 0;
        let mut c = 0;
        while c < 32 {
            let block = match kind {
                Grouped::Q8 => c / 8,
                Grouped::Q4 | Grouped::Q5 | Grouped::Q6 => (c % 16) / 4,
                Grouped::Q2 | Grouped::T2 => (c % 8) / 2,
            };
            if block == q {
                out[q][n] = c;
                n += 1;
            }
            c += 1;
        }
        q += 1;
    }
    out
}

/// Weight rows per call: two sets of four.
pub(crate) const ROWS: usize = 8;

/// Up to [`ROWS`] weight rows `ws` against the rows `xs` ([`applies`] holds, `xs` prepared
/// with the arrangement of `kind`): `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (the
/// interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(
    kind: Grouped,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    debug_assert!(applies(kind, xs));
    let m = xs.len();
    assert!((1..=ROWS).contains(&ws.len()) && out.len() >= ws.len() * m && m <= 4 * MAX_GROUPS);
    // SAFETY (each): the features (the caller's contract); `tile` checks the rows.
    unsafe {
        match (kind, ws.len() > 4) {
            (Grouped::Q2, false) => tile::<Q2, 1>(kind, ws, xs, out),
            (Grouped::Q2, true) => tile::<Q2, 2>(kind, ws, xs, out),
            (Grouped::T2, false) => tile::<T2, 1>(kind, ws, xs, out),
            (Grouped::T2, true) => tile::<T2, 2>(kind, ws, xs, out),
            (Grouped::Q4, false) => tile::<Q4, 1>(kind, ws, xs, out),
            (Grouped::Q4, true) => tile::<Q4, 2>(kind, ws, xs, out),
            (Grouped::Q5, false) => tile::<Q5, 1>(kind, ws, xs, out),
            (Grouped::Q5, true) => tile::<Q5, 2>(kind, ws, xs, out),
            (Grouped::Q6, false) => tile::<Q6, 1>(kind, ws, xs, out),
            (Grouped::Q6, true) => tile::<Q6, 2>(kind, ws, xs, out),
            (Grouped::Q8, false) => tile::<Q8, 1>(kind, ws, xs, out),
            (Grouped::Q8, true) => tile::<Q8, 2>(kind, ws, xs, out),
        }
    }
}

/// [`dot_row_group`] for the format `K`, with `S` sets of four weight rows (1 or 2).
///
/// # Safety
/// As [`dot_row_group`]; `ws.len() <= 4·S`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<K: Kernel, const S: usize>(
    kind: Grouped,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    // Every pointer read below stays inside these.
    check_rows(kind, ws, xs, K::BLOCK_BYTES, K::HI_BYTES, false);
    let (m, nb) = (xs.len(), xs[0].d.len());
    let groups = m.div_ceil(4);
    let ch = chunks(kind);
    // A missing weight row repeats row 0; its lanes are never stored.
    let wr: [&GRow<'_>; 8] = std::array::from_fn(|a| ws.get(a).unwrap_or(&ws[0]));
    let mut acc = [[[_mm512_setzero_ps(); 8]; S]; MAX_GROUPS];
    let quads = tile_avx512::quads(xs);
    let shift = _mm_cvtsi32_si128(K::OFFSET_LOG2);
    for r in 0..nb / 4 {
        let b0 = 4 * r;
        // SAFETY: the run's codes, plane-1 bytes and scales lie in every row (checked).
        unsafe {
            let run = |w: &GRow<'_>| K::unpack_run(w.codes.as_ptr(), w.hi.as_ptr(), b0);
            let mut u = [[_mm512_setzero_si512(); 2]; 8];
            for a in 0..4 * S {
                u[a] = run(wr[a]);
            }
            // Segment s (chunks 8s .. 8s + 8) of rows a, a + 1.
            let seg = |s: usize, a: usize| {
                let (x, y) = (u[a][s / 2], u[a + 1][s / 2]);
                if s.is_multiple_of(2) {
                    _mm512_shuffle_i64x2::<0b0100_0100>(x, y)
                } else {
                    _mm512_shuffle_i64x2::<0b1110_1110>(x, y)
                }
            };
            // Per set: each segment of its rows 0, 1 and of its rows 2, 3.
            let mut lohi = [[(_mm512_setzero_si512(), _mm512_setzero_si512()); 4]; S];
            for (q, lohi) in lohi.iter_mut().enumerate() {
                for (s, lohi) in lohi.iter_mut().enumerate() {
                    *lohi = (seg(s, 4 * q), seg(s, 4 * q + 2));
                }
            }
            for (p, chq) in ch.iter().enumerate() {
                let b = b0 + p;
                let g = 32 * b / kind.group();
                let word = |w: &GRow<'_>| {
                    u16::from_le_bytes([w.scales[2 * g], w.scales[2 * g + 1]]) as i16
                };
                let mut w = [[_mm512_setzero_si512(); 8]; S];
                let mut dw = [_mm512_setzero_ps(); S];
                for q in 0..S {
                    for (k, w) in w[q].iter_mut().enumerate() {
                        let c = chq[k];
                        let (lo, hi) = lohi[q][c / 8];
                        *w = spread_chunk(lo, hi, c % 8);
                    }
                    let h = |a: usize| word(wr[4 * q + a]);
                    dw[q] = spread(_mm_cvtph_ps(_mm_setr_epi16(
                        h(0),
                        h(1),
                        h(2),
                        h(3),
                        0,
                        0,
                        0,
                        0,
                    )));
                }
                for (acc, &(xc, xd, xsum, _)) in acc.iter_mut().zip(&quads).take(groups) {
                    let mut t = [[_mm512_setzero_si512(); 2]; S];
                    for k in 0..8 {
                        let x = _mm512_broadcast_i32x4(_mm_loadu_si128(
                            xc.add(16 * (32 * r + chq[k])).cast(),
                        ));
                        for q in 0..S {
                            t[q][k % 2] = _mm512_dpbusd_epi32(t[q][k % 2], w[q][k], x);
                        }
                    }
                    let s = _mm512_broadcast_i32x4(_mm_loadu_si128(xsum.add(4 * b).cast()));
                    let off = _mm512_sll_epi32(s, shift);
                    let dx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd.add(4 * b)));
                    let l = b % 8;
                    for q in 0..S {
                        let t = _mm512_sub_epi32(_mm512_add_epi32(t[q][0], t[q][1]), off);
                        let p = _mm512_mul_ps(dw[q], dx);
                        acc[q][l] = _mm512_fmadd_ps(p, _mm512_cvtepi32_ps(t), acc[q][l]);
                    }
                }
            }
        }
    }
    for q in 0..S {
        let rows = ws.len().saturating_sub(4 * q).min(4);
        let out = &mut out[4 * q * m..];
        for (g, a) in acc.iter().enumerate().take(groups) {
            store(&tree(&a[q], None), g, rows, m, out, |_, _, v| v);
        }
    }
}
