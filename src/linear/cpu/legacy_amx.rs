//! The AMX kernel of the legacy GGUF types (Q8_0, Q4_0, Q5_0, IQ4_NL, IQ4_XS) for many
//! activation rows (the AVX-512 tier where [`Cpu::amx_int8`](crate::isa::Cpu::amx_int8)
//! holds): up to 16 weight rows against the activation rows in groups of 16, the exact
//! block sums from `tdpbusd` ([`super::amx`]), as `kquants_amx` does for the k-quants. Same
//! bits as [`super::legacy`]'s order: only the way the integer sums `T_b` are formed
//! differs.
//!
//! Per run of up to eight blocks the 16 weight rows' unsigned codes (`u = q + OFFSET`, the
//! 512-bit tile kernel's unpacking) go into a 4 KiB buffer, 32 bytes per block and 256 per
//! row, beside their binary16 scales (and IQ4_XS's `ls − 32`); tile A of block b is 16
//! rows × 32 codes, tile B the group's interleaved activation codes of the block
//! ([`Rows::arrange_groups`], 16 rows per group). C = A·B, minus `OFFSET·Σx` (the
//! activation block sums, a shift), is `T_b / sc_b` for every (weight row, activation row)
//! pair, exact; then with the 16 activation rows in the lanes of one 512-bit vector, the
//! reference's steps: `T_b` (IQ4_XS: times `sc_b`, exact), `acc[b mod 8] ← fma(d_w·dx_b,
//! T_b, acc[b mod 8])`, and the shared tree.
//!
//! [`Rows::arrange_groups`]: crate::linear::q8_1::Rows::arrange_groups

use super::amx::{self, Aligned, MAX_M, MAX_ROWS, Tiles, WIDTH, store_lanes};
use super::legacy::Legacy;
use super::legacy_tile_avx512::{KINDS, codes, offset_shift};
use super::tile_avx512::tree;
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// Activation rows from which a row group takes this kernel, where the CPU has AMX.
pub(super) const MIN_M: usize = 16;

/// Whether this kernel serves `kind` against `xs`: AMX there, a type it knows, at least
/// [`MIN_M`] rows, at most 64, interleaved in groups of 16 ([`amx::rows_ready`]).
pub(super) fn applies(kind: Legacy, xs: &[Row<'_>]) -> bool {
    kind != Legacy::Q2_0
        && amx::rows_ready(MIN_M, xs)
        && xs[0].d.len().is_multiple_of(kind.sub_blocks())
}

/// Up to 16 weight rows `ws` against the rows `xs` ([`applies`] holds): `out[i·M + r]`,
/// the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (AMX
/// usable; the interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(kind: Legacy, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert!(applies(kind, xs));
    let (m, nb) = (xs.len(), xs[0].d.len());
    assert!((1..=MAX_ROWS).contains(&ws.len()));
    assert!(ws.iter().all(|w| w.len() >= kind.row_bytes(nb)));
    assert!(out.len() >= ws.len() * m && m <= MAX_M);
    // SAFETY (each): the features and `applies` (the caller's contract); the rows hold nb
    // blocks and `out` its outputs (checked above).
    unsafe {
        match kind {
            Legacy::Q8_0 => run::<0>(ws, xs, out),
            Legacy::Q4_0 => run::<1>(ws, xs, out),
            Legacy::Q5_0 => run::<2>(ws, xs, out),
            Legacy::Iq4Nl => run::<3>(ws, xs, out),
            Legacy::Iq4Xs => run::<4>(ws, xs, out),
            Legacy::Q2_0 => unreachable!("Q2_0 has no AMX kernel (applies)"),
        }
    }
}

/// [`dot_row_group`] for `KINDS[K]`.
///
/// # Safety
/// As [`dot_row_group`], whose checks hold.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn run<const K: usize>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let kind = KINDS[K];
    let (m, nb) = (xs.len(), xs[0].d.len());
    let rows = ws.len();
    let shift = _mm_cvtsi32_si128(offset_shift(kind) as i32);
    // A run's unsigned codes, 256 bytes per row (rows past `ws.len()` stay zero: their
    // outputs are never stored); the block sums C of its blocks.
    let mut buf = Aligned([0u8; MAX_ROWS * 256]);
    let mut c = Aligned([[0i32; WIDTH * MAX_ROWS]; 8]);
    // Per weight row and block of the run: d_w as f32, and the factor sc_b (IQ4_XS).
    let mut dw = [[0f32; 8]; MAX_ROWS];
    let mut fac = [[0f32; 8]; MAX_ROWS];
    // SAFETY: AMX usable (the caller's contract).
    let tiles = unsafe { Tiles::configure(32) };
    // Each run is unpacked once for every group of 16 activation rows; the accumulators
    // of all groups (at most four) stay in this frame.
    let groups = m.div_ceil(WIDTH);
    let planes = amx::group_planes(xs);
    let mut accs = [[[_mm512_setzero_ps(); 8]; MAX_ROWS]; MAX_M / WIDTH];
    for b0 in (0..nb).step_by(8) {
        let cnt = 8.min(nb - b0);
        // SAFETY (all): blocks b0 .. b0 + cnt ≤ nb of every weight row and of each group's
        // 512·nb codes and 16·nb scales and sums (the caller's checks); the buffers are the
        // sizes the tiles read and write.
        unsafe {
            for (n, w) in ws.iter().enumerate() {
                // The run two ahead, to L2.
                let ahead = w.as_ptr().wrapping_add(kind.row_bytes(b0 + 16));
                super::prefetch_l2(ahead, kind.row_bytes(8));
                let mut words = [0u16; 8];
                for i in 0..cnt {
                    let (u, word, f) = codes(kind, w.as_ptr(), b0 + i);
                    _mm256_store_si256(buf.0.as_mut_ptr().add(256 * n + 32 * i).cast(), u);
                    words[i] = word;
                    fac[n][i] = f as f32;
                }
                let d = _mm256_cvtph_ps(_mm_loadu_si128(words.as_ptr().cast()));
                _mm256_storeu_ps(dw[n].as_mut_ptr(), d);
            }
            for (&(xc, xd, xsum), acc) in planes.iter().zip(accs.iter_mut()).take(groups) {
                for i in (0..cnt).step_by(2) {
                    // An odd last block is paired with itself (its second sums unused).
                    let i1 = if i + 1 < cnt { i + 1 } else { i };
                    let a = buf.0.as_ptr();
                    let (c0, c1) = c.0.split_at_mut(i + 1);
                    tiles.block_sums2(
                        [a.add(32 * i), a.add(32 * i1)],
                        256,
                        [xc.add(512 * (b0 + i)), xc.add(512 * (b0 + i1))],
                        [c0[i].as_mut_ptr(), c1[0].as_mut_ptr()],
                    );
                }
                let mut off = [_mm512_setzero_si512(); 8];
                let mut dx = [_mm512_setzero_ps(); 8];
                for i in 0..cnt {
                    let s = _mm512_loadu_si512(xsum.add(WIDTH * (b0 + i)).cast());
                    off[i] = _mm512_sll_epi32(s, shift);
                    dx[i] = _mm512_loadu_ps(xd.add(WIDTH * (b0 + i)));
                }
                for n in 0..rows {
                    for i in 0..cnt {
                        let v = _mm512_load_si512(c.0[i].as_ptr().add(WIDTH * n).cast());
                        let mut t = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, off[i]));
                        if kind == Legacy::Iq4Xs {
                            t = _mm512_mul_ps(t, _mm512_set1_ps(fac[n][i]));
                        }
                        let d = _mm512_mul_ps(_mm512_set1_ps(dw[n][i]), dx[i]);
                        acc[n][i] = _mm512_fmadd_ps(d, t, acc[n][i]);
                    }
                }
            }
        }
    }
    for (g, acc) in accs.iter().enumerate().take(groups) {
        for (n, a) in acc.iter().enumerate().take(rows) {
            store_lanes(out, &tree(a, None), n, m, g);
        }
    }
    drop(tiles);
}
