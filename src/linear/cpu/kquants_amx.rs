//! The AMX kernels of the k-quants but Q2_K for many activation rows (the AVX-512 tier
//! where [`Cpu::amx_int8`](crate::isa::Cpu::amx_int8) holds): up to 16 weight rows against
//! the activation rows in groups of 16, the exact block or half-block sums from `tdpbusd`
//! ([`super::amx`]). Same bits as [`super::kquants`]'s order: only the way the integer
//! sums are formed differs.
//!
//! Per super-block the 16 weight rows' unsigned codes are unpacked once per pass of
//! [`PASS_GROUPS`] activation groups ([`K::codes`], natural value order) into a 4 KiB
//! buffer, 256 bytes per row (the super-block two ahead prefetched to L2): tile A
//! of sub-block j is its bytes 32j .. 32j + 32 of each row (Q3_K, Q6_K: two tiles of 16,
//! one per half). Tile B is the group's interleaved activation codes of the block
//! ([`Rows::arrange_groups`], 16 rows per group: its 512 bytes, or each half's 256).
//! C[n][m] = Σ u·x over the sub-block or half, exact; then, in f32 with lanes m (every
//! product exact: each integer below 2²⁴), per weight row n and sub-block j, the
//! reference's steps lane by lane:
//!
//! - Q4_K, Q5_K ([`tile`]): `acc[j] ← fma(d·dx, S·sc_j, acc[j])`, `accm[j] ← fma(dmin·dx,
//!   Σx·m_j, accm[j])`, and at the end the shared tree of `acc[j] − accm[j]`;
//! - Q3_K, Q6_K ([`halves`]): the per-16 scales and the codes' offset applied to the two
//!   half sums, then `acc[j] ← fma(d·dx, S_j, acc[j])` and the tree of `acc`.
//!
//! [`Rows::arrange_groups`]: crate::linear::q8_1::Rows::arrange_groups

use super::amx::{self, Aligned, MAX_M, MAX_ROWS, Tiles, WIDTH, store_lanes};
use super::kquants::Kq;
use super::kquants_avx512::{Hdr, K, Q2K, Q3K, Q4K, Q5K, Q6K};
use super::tile_avx512::tree;
use crate::linear::q8_1::Row;
use std::arch::x86_64::*;

/// Activation rows from which a row group of `kq` takes this kernel, where the CPU has AMX.
pub(super) const fn min_m(kq: Kq) -> Option<usize> {
    match kq {
        Kq::Q2K | Kq::Q3K | Kq::Q4K | Kq::Q5K | Kq::Q6K => Some(16),
    }
}

/// Activation groups of [`WIDTH`] rows that share one unpacking of the weight codes: each
/// super-block is unpacked once per pass of this many groups, whose accumulators (16 KiB per
/// group) stay in the frame: about 55 KiB with two. Four measured 12–15% slower for Q4_K
/// at M = 64 and 128 on an Intel Xeon (their accumulators outgrow L1) and would outgrow
/// small thread stacks.
const PASS_GROUPS: usize = 2;

/// Whether this kernel serves `kq` against `xs`: AMX there, at least [`min_m`] rows, at
/// most 64, whole super-blocks, interleaved in groups of 16 ([`amx::rows_ready`]).
pub(super) fn applies(kq: Kq, xs: &[Row<'_>]) -> bool {
    min_m(kq).is_some_and(|min| amx::rows_ready(min, xs)) && xs[0].d.len().is_multiple_of(8)
}

/// Up to 16 weight rows `ws` (whole super-blocks) against the rows `xs` ([`applies`]
/// holds): `out[i·M + r]`, the reference's bits.
///
/// # Safety
/// The AVX-512 tier's features (F/BW/VL/VNNI, with AVX2, FMA, F16C); [`applies`] holds (AMX
/// usable; the interleaved planes read through each group's first row are there).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) unsafe fn dot_row_group(kq: Kq, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert!(applies(kq, xs));
    let (m, nb) = (xs.len(), xs[0].d.len());
    let bytes = nb / 8 * kq.block_bytes();
    assert!((1..=MAX_ROWS).contains(&ws.len()) && ws.iter().all(|w| w.len() >= bytes));
    assert!(out.len() >= ws.len() * m && m <= MAX_M);
    // SAFETY (each): the features and `applies` (the caller's contract); the rows hold the
    // super-blocks and `out` its outputs (checked above).
    unsafe {
        match kq {
            Kq::Q4K => tile::<Q4K>(ws, xs, out),
            Kq::Q5K => tile::<Q5K>(ws, xs, out),
            Kq::Q3K => halves::<Q3K>(ws, xs, out),
            Kq::Q6K => halves::<Q6K>(ws, xs, out),
            Kq::Q2K => halves::<Q2K>(ws, xs, out),
        }
    }
}

/// Super-block `sb` of every row of `ws`: its unsigned codes into `codes`, 256 bytes per
/// row in value order, and `scales(n, header)` for row n.
///
/// # Safety
/// As [`dot_row_group`]; `sb` one of the rows' super-blocks.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn unpack<U: K>(
    ws: &[&[u8]],
    sb: usize,
    codes: &mut Aligned<[u8; MAX_ROWS * 256]>,
    mut scales: impl FnMut(usize, &Hdr),
) {
    let bb = U::KQ.block_bytes();
    for (n, w) in ws.iter().enumerate() {
        // SAFETY: super-block sb lies in the row (the caller's contract); row n's 256 bytes
        // lie in `codes` (n < MAX_ROWS, checked by `dot_row_group`), 64-byte aligned.
        unsafe {
            let b = w.as_ptr().add(bb * sb);
            super::prefetch_l2(b.wrapping_add(2 * bb), bb);
            let h = U::header(b);
            for (p, v) in U::codes(b).iter().enumerate() {
                _mm512_store_si512(codes.0.as_mut_ptr().add(256 * n + 64 * p).cast(), *v);
            }
            scales(n, &h);
        }
    }
}

/// d and dmin of a Q2_K, Q4_K or Q5_K header (lanes 0 and 8 of `dd`).
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn d_dmin(h: &Hdr) -> [f32; 2] {
    let mut d = [0f32; 16];
    // SAFETY: 16 writable floats.
    unsafe { _mm512_storeu_ps(d.as_mut_ptr(), h.dd) };
    [d[0], d[8]]
}

/// [`dot_row_group`] for Q4_K and Q5_K (per-32 scales and mins).
///
/// # Safety
/// As [`dot_row_group`], whose checks hold.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn tile<U: K>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let (m, nb) = (xs.len(), xs[0].d.len());
    let rows = ws.len();
    // Weight codes, 256 per row (rows past `ws.len()` stay zero: their outputs are never
    // stored); the block sums C of the super-block's eight sub-blocks.
    let mut codes = Aligned([0u8; MAX_ROWS * 256]);
    let mut c = Aligned([[0i32; WIDTH * MAX_ROWS]; 8]);
    // Per weight row: the eight scales (lanes 0..8) and dmin times the eight mins (8..16)
    // as f32, and d.
    let mut sc = Aligned([[0f32; 16]; MAX_ROWS]);
    let mut dd = [0f32; MAX_ROWS];
    // SAFETY: AMX usable (the caller's contract).
    let tiles = unsafe { Tiles::configure(32) };
    let groups = m.div_ceil(WIDTH);
    for first in (0..groups).step_by(PASS_GROUPS) {
        let pass = first..groups.min(first + PASS_GROUPS);
        let mut acc = [[[_mm512_setzero_ps(); 8]; MAX_ROWS]; PASS_GROUPS];
        let mut accm = [[[_mm512_setzero_ps(); 8]; MAX_ROWS]; PASS_GROUPS];
        for sb in 0..nb / 8 {
            // SAFETY (all): super-block sb of every weight row, block 8·sb + j < nb of each
            // group's 512·nb codes and 16·nb scales and sums (the caller's checks); the
            // buffers are the sizes the tiles read and write.
            unsafe {
                unpack::<U>(ws, sb, &mut codes, |n, h| {
                    // Lanes 8..16: dmin·m_j, exact (an 11-bit binary16 significand times a
                    // 6-bit integer).
                    let v = _mm512_cvtepi32_ps(h.sc);
                    _mm512_store_ps(sc.0[n].as_mut_ptr(), _mm512_mask_mul_ps(v, 0xff00, v, h.dd));
                    dd[n] = d_dmin(h)[0];
                });
                for (g, (acc, accm)) in pass.clone().zip(acc.iter_mut().zip(accm.iter_mut())) {
                    let q = &xs[WIDTH * g].quad;
                    let (xc, xd, xsum) = (q.codes.as_ptr(), q.d.as_ptr(), q.sum.as_ptr());
                    for j in (0..8).step_by(2) {
                        let t = 8 * sb + j;
                        let a = codes.0.as_ptr();
                        tiles.block_sums2(
                            [a.add(32 * j), a.add(32 * (j + 1))],
                            256,
                            [xc.add(512 * t), xc.add(512 * (t + 1))],
                            [c.0[j].as_mut_ptr(), c.0[j + 1].as_mut_ptr()],
                        );
                    }
                    // Per block: dx, and dx·Σx (exact: an 11-bit significand times an
                    // integer below 2¹²).
                    let mut dx = [_mm512_setzero_ps(); 8];
                    let mut px = [_mm512_setzero_ps(); 8];
                    for j in 0..8 {
                        let t = 8 * sb + j;
                        dx[j] = _mm512_loadu_ps(xd.add(WIDTH * t));
                        let sx = _mm512_cvtepi32_ps(_mm512_loadu_si512(xsum.add(WIDTH * t).cast()));
                        px[j] = _mm512_mul_ps(dx[j], sx);
                    }
                    for n in 0..rows {
                        let d = _mm512_set1_ps(dd[n]);
                        for j in 0..8 {
                            let s = _mm512_cvtepi32_ps(_mm512_load_si512(
                                c.0[j].as_ptr().add(WIDTH * n).cast(),
                            ));
                            let s = _mm512_mul_ps(s, _mm512_set1_ps(sc.0[n][j]));
                            acc[n][j] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx[j]), s, acc[n][j]);
                            // (dmin·m_j)·(dx·Σx) is the exact product (dmin·dx)·(Σx·m_j) of
                            // the reference, so the fma rounds the same real number.
                            accm[n][j] =
                                _mm512_fmadd_ps(_mm512_set1_ps(sc.0[n][8 + j]), px[j], accm[n][j]);
                        }
                    }
                }
            }
        }
        for (g, (acc, accm)) in pass.zip(acc.iter().zip(accm.iter())) {
            for n in 0..rows {
                let a: [__m512; 8] = std::array::from_fn(|j| _mm512_sub_ps(acc[n][j], accm[n][j]));
                store_lanes(out, &tree(&a, None), n, m, g);
            }
        }
    }
    drop(tiles);
}

/// [`dot_row_group`] for Q2_K, Q3_K and Q6_K (per-16 scales): the tiles sum each 16-value
/// half, `t_lo` and `t_hi`; then per weight row and block, lane by lane, exactly in f32
/// (every product and partial sum an integer below 2²⁴), `S_j = sc_lo·(t_lo − OFF·Σx16_lo) +
/// sc_hi·(t_hi − OFF·Σx16_hi)` (OFF: Q3_K 4, Q6_K 32, the codes' offset; Q2_K 0), `acc[j] ←
/// fma(d·dx, S_j, acc[j])`; Q2_K also `M_j = m_lo·Σx16_lo + m_hi·Σx16_hi` (its per-16 mins)
/// and `accm[j] ← fma(dmin·dx, M_j, accm[j])`; at the end the shared tree of `acc` (Q2_K:
/// of `acc[j] − accm[j]`).
///
/// # Safety
/// As [`dot_row_group`], whose checks hold.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
unsafe fn halves<U: K>(ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    let (m, nb) = (xs.len(), xs[0].d.len());
    let rows = ws.len();
    let has_min = U::KQ.has_min();
    let shift = _mm_cvtsi32_si128(match U::KQ {
        Kq::Q3K => 2,
        Kq::Q6K => 5,
        _ => 0,
    });
    // Weight codes, 256 per row (rows past `ws.len()` stay zero: their outputs are never
    // stored); the half sums of the super-block's 16 halves (h = 2j + lo/hi).
    let mut codes = Aligned([0u8; MAX_ROWS * 256]);
    let mut c = Aligned([[0i32; WIDTH * MAX_ROWS]; 16]);
    // Per weight row: the 16 per-16 scales and (Q2_K) mins as f32 (natural order), and d,
    // dmin.
    let mut sc = Aligned([[0f32; 16]; MAX_ROWS]);
    let mut mn = Aligned([[0f32; 16]; MAX_ROWS]);
    let mut dd = [[0f32; 2]; MAX_ROWS];
    // SAFETY: AMX usable (the caller's contract).
    let tiles = unsafe { Tiles::configure(16) };
    let groups = m.div_ceil(WIDTH);
    for first in (0..groups).step_by(PASS_GROUPS) {
        let pass = first..groups.min(first + PASS_GROUPS);
        let mut acc = [[[_mm512_setzero_ps(); 8]; MAX_ROWS]; PASS_GROUPS];
        let mut accm = [[[_mm512_setzero_ps(); 8]; MAX_ROWS]; PASS_GROUPS];
        for sb in 0..nb / 8 {
            // SAFETY (all): super-block sb of every weight row, block 8·sb + j < nb of each
            // group's 512·nb codes, 16·nb scales and 32·nb half sums (the caller's checks);
            // the buffers are the sizes the tiles read and write.
            unsafe {
                unpack::<U>(ws, sb, &mut codes, |n, h| {
                    _mm512_store_ps(sc.0[n].as_mut_ptr(), _mm512_cvtepi32_ps(h.scn));
                    if has_min {
                        let m = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(h.c16));
                        _mm512_store_ps(mn.0[n].as_mut_ptr(), m);
                        dd[n] = d_dmin(h);
                    } else {
                        dd[n] = [_mm256_cvtss_f32(h.d), 0.0];
                    }
                });
                for (g, (acc, accm)) in pass.clone().zip(acc.iter_mut().zip(accm.iter_mut())) {
                    let q = &xs[WIDTH * g].quad;
                    let (xc, xd, xs16) = (q.codes.as_ptr(), q.d.as_ptr(), q.sum16.as_ptr());
                    for j in 0..8 {
                        let t = 8 * sb + j;
                        let a = codes.0.as_ptr().add(32 * j);
                        let (lo, hi) = c.0.split_at_mut(2 * j + 1);
                        tiles.block_sums2(
                            [a, a.add(16)],
                            256,
                            [xc.add(512 * t), xc.add(512 * t + 256)],
                            [lo[2 * j].as_mut_ptr(), hi[0].as_mut_ptr()],
                        );
                    }
                    // The offsets OFF·Σx16 of the 16 halves (Q2_K: Σx16 as f32), and the
                    // blocks' dx.
                    let mut off = [_mm512_setzero_si512(); 16];
                    let mut s16f = [_mm512_setzero_ps(); 16];
                    for h in 0..16 {
                        let s16 = _mm512_loadu_si512(xs16.add(WIDTH * (16 * sb + h)).cast());
                        if has_min {
                            s16f[h] = _mm512_cvtepi32_ps(s16);
                        } else {
                            off[h] = _mm512_sll_epi32(s16, shift);
                        }
                    }
                    let mut dx = [_mm512_setzero_ps(); 8];
                    for (j, dx) in dx.iter_mut().enumerate() {
                        *dx = _mm512_loadu_ps(xd.add(WIDTH * (8 * sb + j)));
                    }
                    for n in 0..rows {
                        let (d, dmin) = (_mm512_set1_ps(dd[n][0]), _mm512_set1_ps(dd[n][1]));
                        for j in 0..8 {
                            let t = |h: usize| {
                                let v = _mm512_load_si512(c.0[h].as_ptr().add(WIDTH * n).cast());
                                if has_min {
                                    _mm512_cvtepi32_ps(v)
                                } else {
                                    _mm512_cvtepi32_ps(_mm512_sub_epi32(v, off[h]))
                                }
                            };
                            let p = _mm512_mul_ps(t(2 * j), _mm512_set1_ps(sc.0[n][2 * j]));
                            let s = _mm512_fmadd_ps(
                                t(2 * j + 1),
                                _mm512_set1_ps(sc.0[n][2 * j + 1]),
                                p,
                            );
                            acc[n][j] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx[j]), s, acc[n][j]);
                            if has_min {
                                let (lo, hi) = (2 * j, 2 * j + 1);
                                let p = _mm512_mul_ps(s16f[lo], _mm512_set1_ps(mn.0[n][lo]));
                                let mj = _mm512_fmadd_ps(s16f[hi], _mm512_set1_ps(mn.0[n][hi]), p);
                                accm[n][j] =
                                    _mm512_fmadd_ps(_mm512_mul_ps(dmin, dx[j]), mj, accm[n][j]);
                            }
                        }
                    }
                }
            }
        }
        for (g, (acc, accm)) in pass.zip(acc.iter().zip(accm.iter())) {
            for n in 0..rows {
                let a: [__m512; 8] = if has_min {
                    std::array::from_fn(|j| _mm512_sub_ps(acc[n][j], accm[n][j]))
                } else {
                    acc[n]
                };
                store_lanes(out, &tree(&a, None), n, m, g);
            }
        }
    }
    drop(tiles);
}
