//! The grouped formats (q2/t2/q4/q5/q6/q8 in row_split_k128_v1) against q8_1 activations:
//! the opt-in [`Activation::Q8_1`](crate::linear::Activation) compute profile
//! (docs/linear.md). The scalar reference order lives here; `grouped_q8_avx2` reproduces its
//! bits for all six formats on the AVX2 and AVX-VNNI tiers, `grouped_q8_avx512` on the
//! AVX-512 tier.
//!
//! # Evaluation order (fixed per output)
//!
//! K is a multiple of 32. The weight row is walked in 32-value blocks b = 0 .. K/32,
//! aligned with the q8_1 activation blocks (a 64-value group spans blocks 2g, 2g+1, t2's
//! 128-value group four blocks). Block b gives:
//!
//! - `T_b` = Σ_e `q_e·x_e` over its 32 values, an EXACT integer: `q_e` the signed code of
//!   the stored word (its arithmetic meaning, invalid words included: q8's −128, t2's −2),
//!   `x_e` the q8_1 codes; |T_b| ≤ 32·128·127 < 2²⁴, exact in binary32 too;
//! - `D_b` = `s_g·dx_b`, the binary16 group scale of the group holding block b times the
//!   activation block's binary16 scale (exact in binary32: 11 × 11 significant bits, and
//!   exponents far inside binary32's range);
//! - `acc[b mod 8] ← fma(D_b, T_b, acc[b mod 8])`, eight FP32 accumulators from +0.
//!
//! The result is `tree8(acc)`. Padding codes and scales (past K) are never read. How `T_b`
//! is computed does not matter (it is exact): the x86 paths read q2/t2/q4/q5/q6 codes
//! unsigned (code + 1, + 2, + 8, + 16, + 32; the AVX-512 tier also q8, as code + 128) and
//! subtract that offset times Σx with the activation block's exact code sum.

use super::engine::{AMX_GROUP, ROW_GROUP};
use super::float::Grouped;
use super::{Isa, tree8};
use crate::linear::q8_1::{Row, Rows};

/// One weight row of a grouped format: its plane-0 (`codes`), plane-1 (`hi`) and plane-2
/// (`scales`, binary16 little-endian words, group order) bytes in row_split_k128_v1.
#[derive(Clone, Copy)]
pub(crate) struct GRow<'a> {
    pub codes: &'a [u8],
    pub hi: &'a [u8],
    pub scales: &'a [u8],
}

/// Whether `m` activation rows of `kind` on `isa` take the AMX kernel (the AVX-512 tier on
/// a CPU with AMX-INT8, from `grouped_amx::MIN_M` rows): the rows are then interleaved in
/// groups of 16 ([`prepare`]) and the engine passes 16 weight rows per call.
pub(crate) fn amx_rows(isa: Isa, m: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && crate::isa::Cpu::get().amx_int8 {
        return m >= super::grouped_amx::MIN_M;
    }
    let _ = (isa, m);
    false
}

/// Weight rows the engine hands each call with `m` > 1 activation rows of `kind` on `isa`:
/// 16 where they take the AMX kernel ([`amx_rows`]), 8 where they take the 512-bit tile
/// kernel (two sets of four sharing each activation load), else 4.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn rows_per_call(isa: Isa, kind: Grouped, m: usize) -> usize {
    if amx_rows(isa, m) {
        return AMX_GROUP;
    }
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && m >= super::grouped_tile_avx512::min_m(kind) {
        return super::grouped_tile_avx512::ROWS;
    }
    ROW_GROUP
}

/// Activation rows as the kernel on `isa` reads them (the AVX2 kernels read each block
/// pair's codes rearranged in the order of their weight bytes; the AMX kernel, where
/// [`amx_rows`] holds, the rows interleaved in groups of 16).
pub(crate) fn prepare(isa: Isa, kind: Grouped, rows: Rows) -> Rows {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if amx_rows(isa, rows.rows()) => super::grouped_amx::prepare(kind, rows),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if rows.rows() >= super::grouped_tile_avx512::MIN_M => {
            super::grouped_q8_avx512::arrange_with_quads(kind, rows)
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => super::grouped_q8_avx512::arrange(kind, rows),
        #[cfg(target_arch = "x86_64")]
        isa if isa.avx2() => super::grouped_q8_avx2::arrange(kind, rows),
        _ => {
            let _ = kind; // the scalar kernels read the codes in their natural order
            rows
        }
    }
}

/// The binary16 scale of the group holding block b, as f32 (exact).
#[inline]
pub(super) fn block_scale(kind: Grouped, w: &GRow<'_>, b: usize) -> f32 {
    let g = 32 * b / kind.group();
    half::f16::from_bits(u16::from_le_bytes([w.scales[2 * g], w.scales[2 * g + 1]])).to_f32()
}

/// Block b's exact integer sum `T_b` against the activation codes `xq` (32 values).
pub(crate) fn block_total(kind: Grouped, w: &GRow<'_>, b: usize, xq: &[i8]) -> i32 {
    (0..32)
        .map(|e| kind.code(w.codes, w.hi, 32 * b + e) * xq[e] as i32)
        .sum()
}

/// `acc[b mod 8] ← fma(s_g·dx_b, T_b, acc[b mod 8])` for blocks `from .. to` (the scalar
/// reference step, also the AVX2 path's tail).
pub(super) fn blocks_scalar(
    kind: Grouped,
    w: &GRow<'_>,
    x: &Row<'_>,
    from: usize,
    to: usize,
    acc: &mut [f32; 8],
) {
    for b in from..to {
        let t = block_total(kind, w, b, &x.qs[32 * b..32 * b + 32]);
        let a = &mut acc[b % 8];
        *a = (block_scale(kind, w, b) * x.d[b]).mul_add(t as f32, *a);
    }
}

/// The x86 kernels' bounds checks (every pointer they read stays inside these): each of
/// `xs` holds the same K/32 blocks, with `arranged` its rearranged codes of every whole
/// chunk of eight blocks; each of `ws` holds `block_bytes` (`hi_bytes`) plane-0 (plane-1)
/// bytes per block and the scales of its groups. Panics otherwise.
#[cfg(target_arch = "x86_64")]
pub(super) fn check_rows(
    kind: Grouped,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    block_bytes: usize,
    hi_bytes: usize,
    arranged: bool,
) {
    let nb = xs.first().map_or(0, |x| x.d.len());
    for x in xs {
        assert!(x.d.len() == nb && x.qs.len() >= 32 * nb && x.sum.len() >= nb);
        assert!(!arranged || x.pairs.len() >= 32 * (nb / 8 * 8));
    }
    assert!(ws.iter().all(|w| w.codes.len() >= block_bytes * nb
        && w.hi.len() >= hi_bytes * nb
        && w.scales.len() >= 2 * (32 * nb).div_ceil(kind.group())));
}

/// Prefetches (into L2) the planes of the chunk at block b of the row `R` rows after `w`
/// (rows are consecutive in each plane, `first` being any row of the same length): a row
/// is only a few KiB, too short for the hardware prefetcher to follow four of them.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn prefetch_next<const R: usize>(
    w: &GRow<'_>,
    first: GRow<'_>,
    b: usize,
    block_bytes: usize,
    hi_bytes: usize,
    chunk_scale_bytes: usize,
) {
    use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
    let codes = w
        .codes
        .as_ptr()
        .wrapping_add(block_bytes * b + R * first.codes.len());
    let mut o = 0;
    while o < 8 * block_bytes {
        // SAFETY: a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(codes.wrapping_add(o).cast()) };
        o += 64;
    }
    let scales = w
        .scales
        .as_ptr()
        .wrapping_add(chunk_scale_bytes * (b / 8) + R * first.scales.len());
    // SAFETY: as above.
    unsafe { _mm_prefetch::<_MM_HINT_T1>(scales.cast()) };
    if hi_bytes > 0 {
        let hi =
            w.hi.as_ptr()
                .wrapping_add(hi_bytes * b + R * first.hi.len());
        // SAFETY: as above.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(hi.cast()) };
    }
}

/// Up to 16 consecutive weight rows `ws` (four beyond M = 1 but where the rows are
/// interleaved for the AMX kernel, [`amx_rows`], or the tile kernel takes more,
/// [`rows_per_call`]) against every q8_1 row `xs`:
/// `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major), in the order of
/// the module docs.
///
/// Each `ws[i]` holds the planes of one row of K = 32·`xs[r].d.len()` values.
pub(crate) fn dot_row_group(
    isa: Isa,
    kind: Grouped,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    dot_row_group_in(isa, true, kind, ws, xs, out)
}

/// [`dot_row_group`], with the AVX-512 tier's GFNI unpacking of q2, t2 and q4 where `gfni` and the CPU
/// has GFNI ([`Cpu::gfni`](crate::isa::Cpu::gfni)); the same bits in either form.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn dot_row_group_in(
    isa: Isa,
    gfni: bool,
    kind: Grouped,
    ws: &[GRow<'_>],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (each tier): a prepared weight selects a tier only after run-time detection
        // of all its features (`Isa::available`), those its kernels are compiled for; GFNI
        // only where detected.
        Isa::Avx512 => unsafe {
            // Several activation rows: the AMX kernel when the rows are interleaved for it,
            // else the tile kernel (eight weight rows at a time) when they are interleaved
            // for that one, or the pair kernels (four at a time); the same bits.
            if super::grouped_amx::applies(xs) {
                super::grouped_amx::dot_row_group(kind, ws, xs, out)
            } else {
                let tile = super::grouped_tile_avx512::applies(kind, xs);
                let gfni = gfni && crate::isa::Cpu::get().gfni;
                let per = if tile {
                    super::grouped_tile_avx512::ROWS
                } else {
                    4
                };
                for (w, o) in ws.chunks(per).zip(out.chunks_mut(per * xs.len().max(1))) {
                    if tile {
                        super::grouped_tile_avx512::dot_row_group(kind, w, xs, o)
                    } else {
                        super::grouped_q8_avx512::dot_row_group(kind, gfni, w, xs, o)
                    }
                }
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::AvxVnni => unsafe {
            super::grouped_q8_avx2::avxvnni::dot_row_group(kind, ws, xs, out)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 => unsafe { super::grouped_q8_avx2::avx2::dot_row_group(kind, ws, xs, out) },
        _ => {
            for (w, o) in ws.iter().zip(out.chunks_exact_mut(xs.len().max(1))) {
                for (o, x) in o.iter_mut().zip(xs) {
                    let mut acc = [0f32; 8];
                    blocks_scalar(kind, w, x, 0, x.d.len(), &mut acc);
                    *o = tree8(acc);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::cpu::tests::{q8_1_tiers, xorshift};

    /// Hand-worked block sums and scales (codes written out from the layout).
    #[test]
    fn hand_worked_q4_and_q8_blocks() {
        let x: Vec<i8> = (0..64).map(|e| e as i8 - 32).collect();
        // q4: byte i holds elements 2i (low nibble) and 2i + 1 (high). 0x8F: element 2i is
        // −1 (0xF), element 2i + 1 is −8 (0x8). Block 1 = bytes 16..32.
        let codes = vec![0x8Fu8; 64];
        let scales = [0x00u8, 0x3C, 0x00, 0x40]; // 1.0, 2.0
        let w = GRow {
            codes: &codes,
            hi: &[],
            scales: &scales,
        };
        let want: i32 = (0..32)
            .map(|e| if e % 2 == 0 { -1 } else { -8 } * x[32 + e] as i32)
            .sum();
        assert_eq!(block_total(Grouped::Q4, &w, 1, &x[32..]), want);
        assert_eq!(block_scale(Grouped::Q4, &w, 1), 1.0); // group 0 spans blocks 0, 1
        assert_eq!(block_scale(Grouped::Q4, &w, 2), 2.0);
        // q8: one signed byte per element; 0x80 is −128.
        let mut codes = vec![0u8; 64];
        codes[32] = 0x80;
        codes[33] = 0x7F;
        let w = GRow {
            codes: &codes,
            hi: &[],
            scales: &scales,
        };
        assert_eq!(
            block_total(Grouped::Q8, &w, 1, &x[32..]),
            -128 * x[32] as i32 + 127 * x[33] as i32
        );
        assert_eq!(block_scale(Grouped::Q8, &w, 1), 2.0);
    }

    /// Every tier equals the scalar reference word for word (a NaN compares equal to any
    /// NaN: its sign and payload are not specified, docs/linear.md), for every grouped
    /// format: random codes, scale words drawn from NaN, ±Inf, subnormals, ±0 and normals,
    /// K with a tail past the last whole chunk of eight blocks, M = 1 (rows) and M > 1
    /// (tiles), groups of 1..4 weight rows.
    #[test]
    fn every_tier_equals_scalar_word_for_word() {
        crate::linear::cpu::tests::note_gfni(false);
        const SPECIAL: [u16; 10] = [
            0x7E00, 0xFE01, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x0000, 0x8000, 0x3C00, 0x7BFF,
        ];
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        // (format, plane-0 bytes, plane-1 bytes per 32-value block)
        let kinds = [
            (Grouped::Q2, 8, 0),
            (Grouped::T2, 8, 0),
            (Grouped::Q4, 16, 0),
            (Grouped::Q5, 16, 4),
            (Grouped::Q6, 16, 8),
            (Grouped::Q8, 32, 0),
        ];
        let n = 9;
        let mut cases = 0;
        for (kind, cb, hb) in kinds {
            for nb in [8usize, 12, 16, 20, 36] {
                let groups = (32 * nb).div_ceil(kind.group());
                let mut bytes = |len: usize| (0..len).map(|_| next() as u8).collect::<Vec<_>>();
                let codes = bytes(n * cb * nb);
                let hi = bytes(n * hb * nb);
                let mut scales = vec![0u8; n * 2 * groups];
                for (i, w) in scales.chunks_exact_mut(2).enumerate() {
                    let r = next();
                    // Row 0 normal scales only; the others one special word in eight.
                    let d = if i >= groups && r.is_multiple_of(8) {
                        SPECIAL[(r >> 8) as usize % SPECIAL.len()]
                    } else {
                        0x2000 + (r >> 16) as u16 % 0x1C00
                    };
                    w.copy_from_slice(&d.to_le_bytes());
                }
                let ws: Vec<GRow<'_>> = (0..n)
                    .map(|i| GRow {
                        codes: &codes[i * cb * nb..(i + 1) * cb * nb],
                        hi: &hi[i * hb * nb..(i + 1) * hb * nb],
                        scales: &scales[i * 2 * groups..(i + 1) * 2 * groups],
                    })
                    .collect();
                // The AVX-512 tier with and without its GFNI unpacking (q2, t2, q4).
                for gfni in [false, true] {
                    cases += q8_1_tiers(
                        &mut next,
                        n,
                        4,
                        32 * nb,
                        &format!("{kind:?} nb{nb} gfni {gfni}"),
                        |isa, q| prepare(isa, kind, q),
                        |isa, r, xs, out| dot_row_group_in(isa, gfni, kind, &ws[r], xs, out),
                    );
                }
            }
        }
        assert!(cases > 0);
    }

    /// The AMX kernel (where the CPU has it) against the scalar reference with up to 16
    /// weight rows per call (1, 5, 15 and 16 of 19, at both ends), activation groups of 16
    /// with remainders, runs of four blocks with a last half chunk, and K with a partial
    /// run (the pair kernels then serve the 16 rows, four at a time). The 512-bit tile
    /// kernel, which an AMX machine no longer reaches through `prepare`, runs on rows
    /// interleaved in fours by hand.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn amx_and_tile_kernels_equal_scalar_for_every_row_count() {
        if !crate::isa::Cpu::get().amx_int8 || !Isa::Avx512.available() {
            eprintln!("note: no usable AMX-INT8 on this machine, its grouped kernel is not tested");
            return;
        }
        let mut next = xorshift(0x2F0A_77C3_19D4_E6B5);
        let n = 19;
        let mut cases = [0usize; 2];
        for (kind, cb, hb) in [
            (Grouped::Q2, 8, 0),
            (Grouped::T2, 8, 0),
            (Grouped::Q4, 16, 0),
            (Grouped::Q5, 16, 4),
            (Grouped::Q6, 16, 8),
            (Grouped::Q8, 32, 0),
        ] {
            for nb in [8usize, 12, 30, 40] {
                let (k, groups) = (32 * nb, (32 * nb).div_ceil(kind.group()));
                let mut bytes = |len: usize| (0..len).map(|_| next() as u8).collect::<Vec<_>>();
                let codes = bytes(n * cb * nb);
                let hi = bytes(n * hb * nb);
                let mut scales = vec![0u8; n * 2 * groups];
                for w in scales.chunks_exact_mut(2) {
                    let d = 0x2000 + (next() >> 16) as u16 % 0x1C00;
                    w.copy_from_slice(&d.to_le_bytes());
                }
                let ws: Vec<GRow<'_>> = (0..n)
                    .map(|i| GRow {
                        codes: &codes[i * cb * nb..(i + 1) * cb * nb],
                        hi: &hi[i * hb * nb..(i + 1) * hb * nb],
                        scales: &scales[i * 2 * groups..(i + 1) * 2 * groups],
                    })
                    .collect();
                for m in [16, 17, 33, 64] {
                    let x: Vec<f32> = (0..m * k)
                        .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
                        .collect();
                    let q = Rows::quantize(&x, m, k);
                    let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                    let mut want = vec![0f32; n * m];
                    dot_row_group(Isa::Scalar, kind, &ws, &xs, &mut want);
                    assert!(amx_rows(Isa::Avx512, m));
                    let amx = prepare(Isa::Avx512, kind, Rows::quantize(&x, m, k));
                    let quads = super::super::grouped_q8_avx512::arrange_with_quads(
                        kind,
                        Rows::quantize(&x, m, k),
                    );
                    let xa: Vec<Row<'_>> = (0..m).map(|i| amx.row(i)).collect();
                    let xq: Vec<Row<'_>> = (0..m).map(|i| quads.row(i)).collect();
                    assert_eq!(super::super::grouped_amx::applies(&xa), nb % 4 == 0);
                    assert_eq!(
                        super::super::grouped_tile_avx512::applies(kind, &xq),
                        nb % 4 == 0
                    );
                    for (form, xp, widths) in [(0, &xa, &[1, 5, 15, 16][..]), (1, &xq, &[1, 4])] {
                        for &g in widths {
                            for r0 in [0, n - g] {
                                let mut got = vec![0f32; g * m];
                                let ws = &ws[r0..r0 + g];
                                dot_row_group(Isa::Avx512, kind, ws, xp, &mut got);
                                let want = &want[r0 * m..(r0 + g) * m];
                                let b =
                                    |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                                assert_eq!(
                                    b(&got),
                                    b(want),
                                    "{kind:?} form {form} nb{nb} m{m} g{g} r0{r0}"
                                );
                                cases[form] += 1;
                            }
                        }
                    }
                }
            }
        }
        println!("AMX cases {}, 512-bit tile cases {}", cases[0], cases[1]);
        assert!(cases[0] > 0 && cases[1] > 0);
    }
}
