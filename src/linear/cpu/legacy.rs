//! GGUF legacy-block family against q8_1 activations: Q8_0, Q4_0, Q5_0, Q2_0, IQ4_NL and
//! IQ4_XS (one binary16 scale per block or super-block, integer codes, no separate min).
//! The scalar reference order lives here; `legacy_avx2` reproduces its bits.
//!
//! # Evaluation order (fixed per output)
//!
//! The weight row is walked in 32-value blocks b = 0 .. K/32, aligned with the q8_1
//! activation blocks (Q2_0's 64-value block is blocks 2i and 2i+1, sharing its d; IQ4_XS's
//! 256-value super-block is eight blocks sharing d, each with its own 6-bit scale). Block b
//! gives:
//!
//! - `T_b` = Σ_e `sc_b·q_e·x_e` over its 32 values, an EXACT integer: `q_e` the signed code
//!   value (Q8_0 the byte; Q4_0 nibble − 8; Q5_0 5-bit code − 16; Q2_0 2-bit code − 1;
//!   IQ4_NL / IQ4_XS `kvalues_iq4nl[nibble]`), `sc_b` the integer block factor (IQ4_XS:
//!   `ls − 32`, else 1), `x_e` the q8_1 codes. |T_b| ≤ 32·32·127·127 < 2²⁴, so `T_b` is
//!   exact in binary32 too;
//! - `D_b` = `d_w(b)·dx_b`, the weight's binary16 scale times the activation block's
//!   binary16 scale (exact in binary32);
//! - `acc[b mod 8] ← fma(D_b, T_b, acc[b mod 8])`, eight FP32 accumulators from +0.
//!
//! The result is `tree8(acc)` (the shared lane tree). How `T_b` is computed does not
//! matter (it is exact): the AVX2 path uses unsigned codes and subtracts `offset·Σx` with
//! the activation block's exact code sum, and reduces eight blocks' sums in one vector.
//! Nothing depends on the thread count, M, the activation row's position or how many
//! weight rows share a pass.

use super::engine::{AMX_GROUP, ROW_GROUP};
use super::{Isa, tree8};
use crate::formats::gguf::blocks::{BlockType, iq4_nl, iq4_xs, q2_0, q4_0, q5_0, q8_0};
use crate::formats::gguf::grids::KVALUES_IQ4NL;
use crate::formats::gguf::{f16_at, u32_at};
use crate::linear::q8_1::{Row, Rows};
use crate::registry::Format;

/// The legacy block types with a dedicated kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Legacy {
    Q8_0,
    Q4_0,
    Q5_0,
    Q2_0,
    Iq4Nl,
    Iq4Xs,
}

impl Legacy {
    /// The legacy kernel for `format`, if it is one of the family.
    pub(crate) fn of(format: Format) -> Option<Legacy> {
        Some(match format {
            Format::GgufQ8_0 => Legacy::Q8_0,
            Format::GgufQ4_0 => Legacy::Q4_0,
            Format::GgufQ5_0 => Legacy::Q5_0,
            Format::GgufQ2_0 => Legacy::Q2_0,
            Format::GgufIq4Nl => Legacy::Iq4Nl,
            Format::GgufIq4Xs => Legacy::Iq4Xs,
            _ => return None,
        })
    }

    /// The block descriptor.
    pub(crate) const fn block(self) -> &'static BlockType {
        match self {
            Legacy::Q8_0 => &q8_0::BLOCK,
            Legacy::Q4_0 => &q4_0::BLOCK,
            Legacy::Q5_0 => &q5_0::BLOCK,
            Legacy::Q2_0 => &q2_0::BLOCK,
            Legacy::Iq4Nl => &iq4_nl::BLOCK,
            Legacy::Iq4Xs => &iq4_xs::BLOCK,
        }
    }

    /// Bytes per weight block.
    // Read by the AVX2 kernels only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) const fn block_bytes(self) -> usize {
        self.block().bytes
    }

    /// 32-value (q8_1) blocks per weight block.
    // Read by the AVX2 kernels only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) const fn sub_blocks(self) -> usize {
        self.block().values / 32
    }

    /// Whole weight blocks needed for `nb` 32-value blocks (`nb` is a multiple of
    /// [`Legacy::sub_blocks`] for a valid view).
    // Read by the AVX2 kernels only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub(crate) const fn row_bytes(self, nb: usize) -> usize {
        nb / self.sub_blocks() * self.block_bytes()
    }
}

/// Whether `m` activation rows of `kind` on `isa` take the AMX kernel (the AVX-512 tier on
/// a CPU with AMX-INT8, from `legacy_amx::MIN_M` rows; every type but Q2_0): the rows are
/// then interleaved in groups of 16 ([`prepare`]) and the engine hands the kernel up to 16
/// weight rows a call.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn amx_rows(isa: Isa, kind: Legacy, m: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && crate::isa::Cpu::get().amx_int8 {
        return kind != Legacy::Q2_0 && m >= super::legacy_amx::MIN_M;
    }
    false
}

/// Weight rows the engine hands each call with `m` > 1 activation rows of `kind` on `isa`:
/// 16 where they take the AMX kernel ([`amx_rows`]), 8 where they take the 512-bit tile
/// kernel (two sets of four sharing each activation load), else 4.
pub(crate) fn rows_per_call(isa: Isa, kind: Legacy, m: usize) -> usize {
    if amx_rows(isa, kind, m) {
        return AMX_GROUP;
    }
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && kind != Legacy::Q2_0 && m >= super::legacy_tile_avx512::MIN_M {
        return super::legacy_tile_avx512::ROWS;
    }
    ROW_GROUP
}

/// Activation rows as the kernel on `isa` reads them (the AVX2 kernels read each block
/// pair's codes rearranged in the order of their weight bytes; the AMX kernel, where
/// [`amx_rows`] holds, the rows interleaved in groups of 16).
pub(crate) fn prepare(isa: Isa, kind: Legacy, rows: Rows) -> Rows {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if amx_rows(isa, kind, rows.rows()) => {
            let mut rows = rows;
            rows.arrange_groups(super::amx::WIDTH, false);
            rows
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            let mut rows = super::legacy_avx2::arrange(kind, rows);
            if rows.rows() >= super::legacy_tile_avx512::MIN_M && kind != Legacy::Q2_0 {
                rows.arrange_quads(false);
            }
            rows
        }
        #[cfg(target_arch = "x86_64")]
        isa if isa.avx2() => super::legacy_avx2::arrange(kind, rows),
        _ => {
            let _ = kind; // the scalar kernels read the codes in their natural order
            rows
        }
    }
}

/// Block b's exact integer sum `T_b` against the activation codes `xq` (32 values), and the
/// weight scale `d_w(b)` (module docs).
pub(crate) fn block_total(kind: Legacy, w: &[u8], b: usize, xq: &[i8]) -> (i32, f32) {
    let mut q = [0i32; 32];
    let (sc, d) = match kind {
        Legacy::Q8_0 => {
            let blk = &w[q8_0::BYTES * b..q8_0::BYTES * (b + 1)];
            for (o, &c) in q.iter_mut().zip(q8_0::QS.of(blk)) {
                *o = c as i8 as i32;
            }
            (1, f16_at(blk, q8_0::D.at))
        }
        Legacy::Q4_0 | Legacy::Iq4Nl => {
            // Q4_0 and IQ4_NL share { f16 d; u8 qs[16]; }: value e < 16 is the low nibble
            // of qs[e], value e ≥ 16 the high nibble of qs[e − 16].
            const { assert!(q4_0::QS.at == iq4_nl::QS.at && q4_0::BYTES == iq4_nl::BYTES) };
            let blk = &w[q4_0::BYTES * b..q4_0::BYTES * (b + 1)];
            for (e, &c) in q4_0::QS.of(blk).iter().enumerate() {
                let (lo, hi) = ((c & 0x0F) as usize, (c >> 4) as usize);
                (q[e], q[e + 16]) = if kind == Legacy::Q4_0 {
                    (lo as i32 - 8, hi as i32 - 8)
                } else {
                    (KVALUES_IQ4NL[lo] as i32, KVALUES_IQ4NL[hi] as i32)
                };
            }
            (1, f16_at(blk, q4_0::D.at))
        }
        Legacy::Q5_0 => {
            // Nibbles as Q4_0, bit e of the u32 qh is bit 4 of value e.
            let blk = &w[q5_0::BYTES * b..q5_0::BYTES * (b + 1)];
            let qh = u32_at(blk, q5_0::QH.at);
            for (e, &c) in q5_0::QS.of(blk).iter().enumerate() {
                let lo = (c & 0x0F) as u32 | ((qh >> e) & 1) << 4;
                let hi = (c >> 4) as u32 | ((qh >> (e + 16)) & 1) << 4;
                (q[e], q[e + 16]) = (lo as i32 - 16, hi as i32 - 16);
            }
            (1, f16_at(blk, q5_0::D.at))
        }
        Legacy::Q2_0 => {
            // 64 values: value j is bits 2(j%4).. of qs[j/4]; this block is half b % 2.
            let blk = &w[q2_0::BYTES * (b / 2)..q2_0::BYTES * (b / 2 + 1)];
            let qs = q2_0::QS.of(blk);
            for (e, o) in q.iter_mut().enumerate() {
                let j = 32 * (b % 2) + e;
                *o = ((qs[j / 4] >> (2 * (j % 4))) & 3) as i32 - 1;
            }
            (1, f16_at(blk, q2_0::D.at))
        }
        Legacy::Iq4Xs => {
            // Sub-block j = b % 8 is IQ4_NL-coded in qs[16j..16j+16], with the 6-bit scale
            // `iq4_xs::scale`, factor ls − 32.
            let (sb, j) = (b / 8, b % 8);
            let blk = &w[iq4_xs::BYTES * sb..iq4_xs::BYTES * (sb + 1)];
            let ls = iq4_xs::scale(blk, j);
            for (e, &c) in iq4_xs::QS.of(blk)[16 * j..16 * j + 16].iter().enumerate() {
                q[e] = KVALUES_IQ4NL[(c & 0x0F) as usize] as i32;
                q[e + 16] = KVALUES_IQ4NL[(c >> 4) as usize] as i32;
            }
            (ls as i32 - 32, f16_at(blk, iq4_xs::D.at))
        }
    };
    let s: i32 = q.iter().zip(xq).map(|(&q, &x)| q * x as i32).sum();
    (sc * s, d)
}

/// `acc[b mod 8] ← fma(d_w·dx, T, acc[b mod 8])` for blocks `from .. to` (the scalar
/// reference step, also the AVX2 path's tail).
pub(super) fn blocks_scalar(
    kind: Legacy,
    w: &[u8],
    x: &Row<'_>,
    from: usize,
    to: usize,
    acc: &mut [f32; 8],
) {
    for b in from..to {
        let (t, d) = block_total(kind, w, b, &x.qs[32 * b..32 * b + 32]);
        let a = &mut acc[b % 8];
        *a = (d * x.d[b]).mul_add(t as f32, *a);
    }
}

/// Up to 16 consecutive weight rows `ws` (four beyond M = 1 but where the rows are
/// interleaved for the AMX kernel, [`amx_rows`], or the tile kernel takes more,
/// [`rows_per_call`]) against every q8_1 row `xs`:
/// `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major), in the order of
/// the module docs.
///
/// Each `ws[i]` holds at least the whole blocks of one row (K = 32·`xs[r].d.len()`).
pub(crate) fn dot_row_group(isa: Isa, kind: Legacy, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (each tier): a prepared weight selects a tier only after run-time detection
        // of all its features (`Isa::available`), those its kernels are compiled for.
        Isa::Avx512 => unsafe {
            // Several activation rows: the tile kernel when the rows are interleaved for it,
            // else the pair kernels; the same bits.
            if super::legacy_amx::applies(kind, xs) {
                super::legacy_amx::dot_row_group(kind, ws, xs, out)
            } else if super::legacy_tile_avx512::applies(kind, xs) {
                super::legacy_tile_avx512::dot_row_group(kind, ws, xs, out)
            } else {
                super::legacy_avx2::avx512::dot_row_group(kind, ws, xs, out)
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::AvxVnni => unsafe { super::legacy_avx2::avxvnni::dot_row_group(kind, ws, xs, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 => unsafe { super::legacy_avx2::avx2::dot_row_group(kind, ws, xs, out) },
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

    fn f16(v: f32) -> [u8; 2] {
        half::f16::from_f32(v).to_bits().to_le_bytes()
    }

    /// Hand-worked block sums (codes written out from the block layouts).
    #[test]
    fn hand_worked_block_totals() {
        let x: Vec<i8> = (0..32).map(|e| e as i8 - 16).collect(); // −16 .. 15
        let sx: i32 = x.iter().map(|&v| v as i32).sum(); // −16
        // Q4_0: every byte 0x9A → low nibble 10 (value 2), high 9 (value 1).
        let mut w = vec![0u8; 18];
        w[0..2].copy_from_slice(&f16(0.5));
        w[2..].fill(0x9A);
        let want = 2 * x[..16].iter().map(|&v| v as i32).sum::<i32>()
            + x[16..].iter().map(|&v| v as i32).sum::<i32>();
        assert_eq!(block_total(Legacy::Q4_0, &w, 0, &x), (want, 0.5));
        // IQ4_NL: the same bytes pick kvalues[10] = 25 and kvalues[9] = 13.
        let want = 25 * x[..16].iter().map(|&v| v as i32).sum::<i32>()
            + 13 * x[16..].iter().map(|&v| v as i32).sum::<i32>();
        assert_eq!(block_total(Legacy::Iq4Nl, &w, 0, &x).0, want);
        // Q5_0: all nibbles 0 → values −16, except value 0 whose qh bit sets bit 4 → 0.
        let mut w = vec![0u8; 22];
        w[2..6].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            block_total(Legacy::Q5_0, &w, 0, &x).0,
            -16 * sx + 16 * x[0] as i32
        );
        // Q2_0: byte 0 = 0b11_10_01_00 → values 0..3 are −1, 0, 1, 2; others code 0 → −1.
        // Half 1 (block 1) starts at byte 8.
        let mut w = vec![0u8; 18];
        w[2] = 0b1110_0100;
        w[10] = 0b1111_1111; // values 32..35 = 2
        let want = -sx + (x[1] as i32) + 2 * x[2] as i32 + 3 * x[3] as i32;
        assert_eq!(block_total(Legacy::Q2_0, &w, 0, &x).0, want);
        let want = -sx + 3 * x[..4].iter().map(|&v| v as i32).sum::<i32>();
        assert_eq!(block_total(Legacy::Q2_0, &w, 1, &x).0, want);
        // IQ4_XS: sub-block 3 has ls = nibble 3 of scales_l (0x5) | bits 6..7 of
        // scales_h (0b10) << 4 = 37 → factor 5; its codes all 0x88 → kvalues[8] = 1.
        let mut w = vec![0u8; 136];
        w[0..2].copy_from_slice(&f16(2.0));
        w[2..4].copy_from_slice(&(0b10u16 << 6).to_le_bytes());
        w[4..8].copy_from_slice(&(0x5u32 << 12).to_le_bytes());
        w[8 + 48..8 + 64].fill(0x88);
        assert_eq!(block_total(Legacy::Iq4Xs, &w, 3, &x), (5 * sx, 2.0));
        // Q8_0: codes −128 .. are bytes.
        let mut w = vec![0u8; 34];
        w[2] = 0x80; // −128
        w[3] = 0x7F;
        assert_eq!(
            block_total(Legacy::Q8_0, &w, 0, &x).0,
            -128 * x[0] as i32 + 127 * x[1] as i32
        );
    }

    /// Every tier equals the scalar reference word for word (NaN where it is NaN): random codes, scale words
    /// drawn from NaN, ±Inf, subnormals, ±0 and normals, K with a tail past the last whole
    /// chunk of eight blocks where the type allows one, M = 1 (rows) and M > 1 (tiles),
    /// groups of 1..8 weight rows (the 512-bit tile kernel's two sets of four).
    #[test]
    fn every_tier_equals_scalar_word_for_word() {
        const SPECIAL: [u16; 10] = [
            0x7E00, 0xFE01, 0x7C00, 0xFC00, 0x0001, 0x83FF, 0x0000, 0x8000, 0x3C00, 0x7BFF,
        ];
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        let kinds = [
            Legacy::Q8_0,
            Legacy::Q4_0,
            Legacy::Q5_0,
            Legacy::Q2_0,
            Legacy::Iq4Nl,
            Legacy::Iq4Xs,
        ];
        let n = 9;
        let mut cases = 0;
        for kind in kinds {
            let sb = kind.sub_blocks();
            for nb in [8, 16, 24, 29, 30, 38]
                .into_iter()
                .filter(|nb| nb % sb == 0)
            {
                let (bb, rb) = (kind.block_bytes(), kind.row_bytes(nb));
                let mut w: Vec<u8> = (0..n * rb).map(|_| next() as u8).collect();
                for (i, blk) in w.chunks_exact_mut(bb).enumerate() {
                    let r = next();
                    // Row 0 normal scales only; the others one special word in eight.
                    let d = if i * bb >= rb && r.is_multiple_of(8) {
                        SPECIAL[(r >> 8) as usize % SPECIAL.len()]
                    } else {
                        0x2000 + (r >> 16) as u16 % 0x1C00
                    };
                    blk[..2].copy_from_slice(&d.to_le_bytes());
                }
                let ws: Vec<&[u8]> = w.chunks_exact(rb).collect();
                cases += q8_1_tiers(
                    &mut next,
                    n,
                    8,
                    32 * nb,
                    &format!("{kind:?} nb{nb}"),
                    |isa, q| prepare(isa, kind, q),
                    |isa, r, xs, out| dot_row_group(isa, kind, &ws[r], xs, out),
                );
            }
        }
        assert!(cases > 0);
    }

    /// The AMX kernel (where the CPU has it) against the scalar reference with up to 16
    /// weight rows per call (1, 5, 15 and 16 of 19, at both ends), activation groups of 16
    /// with remainders, and runs of blocks with a partial last one.
    #[test]
    fn amx_kernel_equals_scalar_for_every_row_count() {
        if !crate::isa::Cpu::get().amx_int8 || !Isa::Avx512.available() {
            eprintln!("note: no usable AMX-INT8 on this machine, its legacy kernel is not tested");
            return;
        }
        let mut next = xorshift(0x51_7CC1_B727_220A);
        let n = 19;
        let mut cases = 0;
        for kind in [
            Legacy::Q8_0,
            Legacy::Q4_0,
            Legacy::Q5_0,
            Legacy::Iq4Nl,
            Legacy::Iq4Xs,
        ] {
            for nb in [8, 29, 40]
                .into_iter()
                .filter(|nb| nb % kind.sub_blocks() == 0)
            {
                let (bb, rb, k) = (kind.block_bytes(), kind.row_bytes(nb), 32 * nb);
                let mut w: Vec<u8> = (0..n * rb).map(|_| next() as u8).collect();
                for blk in w.chunks_exact_mut(bb) {
                    let d = 0x2000 + (next() >> 16) as u16 % 0x1C00;
                    blk[..2].copy_from_slice(&d.to_le_bytes());
                }
                let ws: Vec<&[u8]> = w.chunks_exact(rb).collect();
                for m in [16, 17, 33, 64] {
                    let x: Vec<f32> = (0..m * k)
                        .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
                        .collect();
                    let q = Rows::quantize(&x, m, k);
                    let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                    let mut want = vec![0f32; n * m];
                    dot_row_group(Isa::Scalar, kind, &ws, &xs, &mut want);
                    assert!(amx_rows(Isa::Avx512, kind, m));
                    let qp = prepare(Isa::Avx512, kind, Rows::quantize(&x, m, k));
                    let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                    for g in [1, 5, 15, 16] {
                        for r0 in [0, n - g] {
                            let mut got = vec![0f32; g * m];
                            dot_row_group(Isa::Avx512, kind, &ws[r0..r0 + g], &xp, &mut got);
                            let want = &want[r0 * m..(r0 + g) * m];
                            let b = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                            assert_eq!(b(&got), b(want), "{kind:?} nb{nb} m{m} g{g} r0{r0}");
                            cases += 1;
                        }
                    }
                }
            }
        }
        println!("legacy AMX cases: {cases}");
        assert!(cases > 0);
    }
}
