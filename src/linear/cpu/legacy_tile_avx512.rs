//! The AVX-512 tile kernel of the legacy family (Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS) for
//! several activation rows: up to two sets of four weight rows against every group of four
//! activation rows, one 512-bit lane per (weight row, activation row) pair of a set, so no
//! lane ever needs a horizontal reduction; each activation chunk's broadcast serves both
//! sets (Zen 4, one thread, 4096², against one set per call: M = 32 Q8_0 75 → 99 GMAC/s,
//! Q4_0, Q5_0 and IQ4_NL 83–86 → 107–108, IQ4_XS 78 → 98; M = 4 and 8 1.1–1.3×). Same bits as [`super::legacy`]'s order: only the way the exact
//! block sums `T_b` are formed differs.
//!
//! Lane `4a + j` of every vector belongs to weight row a and activation row j of the group
//! (`tile_avx512`). Per block b the four weight rows are unpacked (`u = q + OFFSET`,
//! natural value order) and spread: for 4-value chunk c, one vector whose 128-bit lane a
//! repeats the chunk's codes of weight row a, beside the lanes' weight scales (and IQ4_XS's
//! `ls − 32`). These stay in registers while every activation group goes by; each group's
//! chunk c (interleaved once per forward,
//! [`Rows::arrange_quads`](crate::linear::q8_1::Rows::arrange_quads)) is 16 bytes,
//! broadcast to the four 128-bit lanes by the load. So a block is eight `vpdpbusd` of a
//! weight vector and a broadcast activation chunk: sixteen exact sums `Σ u·x`; minus
//! `OFFSET·Σx` (the activation block sums, a shift) it is `T_b / sc_b`, converted exactly
//! (|T_b| < 2²⁴) and, for IQ4_XS, multiplied by `sc_b` (exact). Then
//! `acc[b mod 8] ← fma(d_w·dx_b, T_b, acc[b mod 8])` in each lane, and the shared tree:
//! the reference's operations on the reference's values.

use super::legacy::Legacy;
use super::tile_avx512::{self, MAX_GROUPS, pair_rows, spread, spread_chunks, store, tree};
use crate::formats::gguf::blocks::{iq4_nl, iq4_xs, q4_0, q5_0, q8_0};
use crate::formats::gguf::grids::KVALUES_IQ4NL;
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// Activation rows from which a row group takes this kernel (fewer rows run the pair kernels
/// of `legacy_avx2`, whose weight unpacking per pass costs less than an expansion).
pub(super) const MIN_M: usize = 4;

/// Whether this kernel serves `kind` against `xs`: a type it knows, at least [`MIN_M`]
/// rows, at most 64, interleaved in groups of four ([`tile_avx512::applies`]).
pub(super) fn applies(kind: Legacy, xs: &[Row<'_>]) -> bool {
    tile_avx512::applies(MIN_M, xs)
        && kind != Legacy::Q2_0
        && xs[0].d.len().is_multiple_of(kind.sub_blocks())
}

/// The unsigned codes of block b of the weight row at `w` in value order, its binary16
/// scale word, and its integer factor.
///
/// # Safety
/// The tier's features; block b (for IQ4_XS its super-block) lies in the row.
#[inline(always)]
pub(super) unsafe fn codes(kind: Legacy, w: *const u8, b: usize) -> (__m256i, u16, i32) {
    // SAFETY: every read is inside block b (the caller's contract), at the descriptors'
    // offsets.
    unsafe {
        let nibbles = |qs: *const u8| {
            let v = _mm_loadu_si128(qs.cast());
            let m = _mm_set1_epi8(0x0F);
            _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m))
        };
        let iq4 = |n: __m256i| {
            // kvalues + 128 (u8): the offset 128 keeps them unsigned.
            let t = _mm_loadu_si128(KV_U8.as_ptr().cast());
            _mm256_shuffle_epi8(_mm256_set_m128i(t, t), n)
        };
        let word = |p: *const u8| u16::from_le_bytes([*p, *p.add(1)]);
        match kind {
            Legacy::Q8_0 => {
                let blk = w.add(q8_0::BYTES * b);
                let q = _mm256_loadu_si256(blk.add(q8_0::QS.at).cast());
                let u = _mm256_xor_si256(q, _mm256_set1_epi8(-128));
                (u, word(blk.add(q8_0::D.at)), 1)
            }
            Legacy::Q4_0 => {
                let blk = w.add(q4_0::BYTES * b);
                (nibbles(blk.add(q4_0::QS.at)), word(blk.add(q4_0::D.at)), 1)
            }
            Legacy::Iq4Nl => {
                let blk = w.add(iq4_nl::BYTES * b);
                (
                    iq4(nibbles(blk.add(iq4_nl::QS.at))),
                    word(blk.add(iq4_nl::D.at)),
                    1,
                )
            }
            Legacy::Q5_0 => {
                let blk = w.add(q5_0::BYTES * b);
                let qh = u32::from_le_bytes(*blk.add(q5_0::QH.at).cast::<[u8; 4]>());
                let fifth = _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10));
                let u = _mm256_or_si256(nibbles(blk.add(q5_0::QS.at)), fifth);
                (u, word(blk.add(q5_0::D.at)), 1)
            }
            Legacy::Iq4Xs => {
                let (sb, j) = (b / 8, b % 8);
                let blk = w.add(iq4_xs::BYTES * sb);
                let ls = iq4_xs::scale(std::slice::from_raw_parts(blk, iq4_xs::BYTES), j);
                let u = iq4(nibbles(blk.add(iq4_xs::QS.at + 16 * j)));
                (u, word(blk.add(iq4_xs::D.at)), ls as i32 - 32)
            }
            Legacy::Q2_0 => unreachable!("Q2_0 does not take the tile kernel"),
        }
    }
}

/// `KVALUES_IQ4NL[i] + 128`.
static KV_U8: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = (KVALUES_IQ4NL[i] as i16 + 128) as u8;
        i += 1;
    }
    t
};

/// The code offset of `kind` as a shift: `OFFSET = 1 << shift` (8, 16 or 128).
pub(super) const fn offset_shift(kind: Legacy) -> u32 {
    match kind {
        Legacy::Q4_0 => 3,
        Legacy::Q5_0 => 4,
        _ => 7,
    }
}

/// The kinds of this kernel as const parameters (one loop per type, its unpacking inlined
/// with no branch on the type).
pub(super) const KINDS: [Legacy; 5] = [
    Legacy::Q8_0,
    Legacy::Q4_0,
    Legacy::Q5_0,
    Legacy::Iq4Nl,
    Legacy::Iq4Xs,
];

/// Weight rows per call: two sets of four, each activation chunk's broadcast serving both.
pub(crate) const ROWS: usize = 8;

/// Up to [`ROWS`] weight rows `ws` against the rows `xs` ([`applies`] holds):
/// `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (the
/// interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(kind: Legacy, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert!(applies(kind, xs));
    let (m, nb) = (xs.len(), xs[0].d.len());
    assert!((1..=ROWS).contains(&ws.len()) && ws.iter().all(|w| w.len() >= kind.row_bytes(nb)));
    assert!(out.len() >= ws.len() * m && m <= 4 * MAX_GROUPS);
    // SAFETY (each): the features and `applies` (the caller's contract); the rows hold nb
    // blocks and `out` its outputs (checked above).
    unsafe {
        match (kind, ws.len() > 4) {
            (Legacy::Q8_0, false) => tile::<0, 1>(ws, xs, out),
            (Legacy::Q8_0, true) => tile::<0, 2>(ws, xs, out),
            (Legacy::Q4_0, false) => tile::<1, 1>(ws, xs, out),
            (Legacy::Q4_0, true) => tile::<1, 2>(ws, xs, out),
            (Legacy::Q5_0, false) => tile::<2, 1>(ws, xs, out),
            (Legacy::Q5_0, true) => tile::<2, 2>(ws, xs, out),
            (Legacy::Iq4Nl, false) => tile::<3, 1>(ws, xs, out),
            (Legacy::Iq4Nl, true) => tile::<3, 2>(ws, xs, out),
            (Legacy::Iq4Xs, false) => tile::<4, 1>(ws, xs, out),
            (Legacy::Iq4Xs, true) => tile::<4, 2>(ws, xs, out),
            (Legacy::Q2_0, _) => unreachable!("Q2_0 does not take the tile kernel"),
        }
    }
}

/// [`dot_row_group`] for `KINDS[K]`, with `S` sets of four weight rows (1 or 2).
///
/// # Safety
/// As [`dot_row_group`], whose checks hold; `ws.len() <= 4·S`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<const K: usize, const S: usize>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let kind = KINDS[K];
    let (m, nb) = (xs.len(), xs[0].d.len());
    let groups = m.div_ceil(4);
    // A missing weight row repeats row 0; its lanes are never stored.
    let wp: [*const u8; 8] = std::array::from_fn(|a| ws.get(a).unwrap_or(&ws[0]).as_ptr());
    let shift = _mm_cvtsi32_si128(offset_shift(kind) as i32);
    let mut acc = [[[_mm512_setzero_ps(); 8]; S]; MAX_GROUPS];
    let quads = tile_avx512::quads(xs);
    for b in 0..nb {
        // SAFETY: block b < nb of every weight row and of every group's 128·nb codes and
        // 4·nb scales and sums (the caller's checks).
        unsafe {
            // Block b of each set's four weight rows, expanded to the lanes (module docs).
            let mut w = [[_mm512_setzero_si512(); 8]; S];
            let (mut dw, mut f) = ([_mm512_setzero_ps(); S], [_mm512_setzero_ps(); S]);
            for q in 0..S {
                let p = &wp[4 * q..];
                let r = [
                    codes(kind, p[0], b),
                    codes(kind, p[1], b),
                    codes(kind, p[2], b),
                    codes(kind, p[3], b),
                ];
                let (lo, hi) = pair_rows([r[0].0, r[1].0, r[2].0, r[3].0]);
                w[q] = spread_chunks(lo, hi);
                let h = |a: usize| r[a].1 as i16;
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
                f[q] = spread(_mm_cvtepi32_ps(_mm_setr_epi32(
                    r[0].2, r[1].2, r[2].2, r[3].2,
                )));
            }
            let l = b % 8;
            for (acc, &(xc, xd, xsum, _)) in acc.iter_mut().zip(&quads).take(groups) {
                // Two chains of four per set (vpdpbusd's latency), added exactly.
                let mut t = [[_mm512_setzero_si512(); 2]; S];
                for c in 0..8 {
                    let x =
                        _mm512_broadcast_i32x4(_mm_loadu_si128(xc.add(16 * (8 * b + c)).cast()));
                    for q in 0..S {
                        t[q][c % 2] = _mm512_dpbusd_epi32(t[q][c % 2], w[q][c], x);
                    }
                }
                let s = _mm512_broadcast_i32x4(_mm_loadu_si128(xsum.add(4 * b).cast()));
                let off = _mm512_sll_epi32(s, shift);
                let dx = _mm512_broadcast_f32x4(_mm_loadu_ps(xd.add(4 * b)));
                for q in 0..S {
                    let t = _mm512_sub_epi32(_mm512_add_epi32(t[q][0], t[q][1]), off);
                    let mut tf = _mm512_cvtepi32_ps(t);
                    if kind == Legacy::Iq4Xs {
                        tf = _mm512_mul_ps(tf, f[q]);
                    }
                    acc[q][l] = _mm512_fmadd_ps(_mm512_mul_ps(dw[q], dx), tf, acc[q][l]);
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
