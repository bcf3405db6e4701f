//! vec_dot of the grid-coded GGUF i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
//! IQ1_M) against q8_1 activations: the scalar reference order (the x86 tiers, AVX2 and the
//! VNNI ones, in `iquants_avx2`: identical bits).
//!
//! Every type is a 256-value super-block with one binary16 scale `d`, split in eight 32-value
//! groups g that line up with the q8_1 blocks b = 8·sb + g of the activation row. Each
//! weight value is an exact integer `w` times a per-super-block float `d·c` (c a power of
//! two):
//!
//! | type | w (per value) | c |
//! |---|---|---|
//! | IQ2_XXS, IQ2_XS, IQ2_S | (2s+1) · grid · ±1 | 1/8 |
//! | IQ3_XXS | (2s+1) · grid · ±1 | 1/4 |
//! | IQ3_S | (2s+1) · grid · ±1 | 1 |
//! | IQ1_S, IQ1_M | (2s+1) · (8·grid ± 1) | 1/8 |
//!
//! (s the 4-bit or 3-bit scale of the value's group or 16-value half). These are the
//! decoders' values exactly: `d·(0.5+s)·0.25·grid` = `d/8·(2s+1)·grid` with every step exact in
//! binary32, and IQ1's `d·(2s+1)·(grid ± 1/8)` = `d/8·(2s+1)·(8·grid ± 1)`: the ±1/8 delta
//! becomes the odd integer 8·grid ± 1 by scaling the codes by 8 (the 1/8 moves into c).
//!
//! With the activation block's codes x and scale dx, per super-block sb and group g:
//!
//! - `T_g = Σ_{e<32} w_e·x_e`, an exact integer (|T_g| ≤ 32·127·31·62 < 2²⁴);
//! - `acc[g] ← fma((d·c)·dx_b, T_g, acc[g])` (`(d·c)·dx_b` is exact: a product of two
//!   binary16 and a power of two);
//! - result: `tree8(acc)`.
//!
//! So each output rounds once per 256 values in each of the 8 lanes plus the 3-level tree.

use super::engine::{AMX_GROUP, ROW_GROUP};
use super::{Isa, tree8};
use crate::formats::gguf::blocks::{
    BlockType, iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs,
};
use crate::formats::gguf::grids::{
    IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KMASK_IQ2XS,
    KSIGNS_IQ2XS,
};
use crate::formats::gguf::{f16_at, u16_at, u32_at};
use crate::linear::q8_1::Row;
use crate::registry::Format;

/// The i-quant types with a dedicated vec_dot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IqKind {
    Iq2Xxs,
    Iq2Xs,
    Iq2S,
    Iq3Xxs,
    Iq3S,
    Iq1S,
    Iq1M,
}

impl IqKind {
    /// The dedicated kernel for `format`, if it is one of these i-quants.
    pub(crate) fn of(format: Format) -> Option<IqKind> {
        Some(match format {
            Format::GgufIq2Xxs => IqKind::Iq2Xxs,
            Format::GgufIq2Xs => IqKind::Iq2Xs,
            Format::GgufIq2S => IqKind::Iq2S,
            Format::GgufIq3Xxs => IqKind::Iq3Xxs,
            Format::GgufIq3S => IqKind::Iq3S,
            Format::GgufIq1S => IqKind::Iq1S,
            Format::GgufIq1M => IqKind::Iq1M,
            _ => return None,
        })
    }

    /// The block descriptor.
    pub(crate) const fn block(self) -> &'static BlockType {
        match self {
            IqKind::Iq2Xxs => &iq2_xxs::BLOCK,
            IqKind::Iq2Xs => &iq2_xs::BLOCK,
            IqKind::Iq2S => &iq2_s::BLOCK,
            IqKind::Iq3Xxs => &iq3_xxs::BLOCK,
            IqKind::Iq3S => &iq3_s::BLOCK,
            IqKind::Iq1S => &iq1_s::BLOCK,
            IqKind::Iq1M => &iq1_m::BLOCK,
        }
    }

    /// Bytes per 256-value super-block.
    pub(crate) const fn block_bytes(self) -> usize {
        self.block().bytes
    }

    /// Whether the AVX-512 tier has an AMX kernel for the type: the signed grids (not IQ1_S
    /// and IQ1_M).
    pub(crate) const fn amx(self) -> bool {
        !matches!(self, IqKind::Iq1S | IqKind::Iq1M)
    }
}

/// Activation rows from which a row group takes the AMX kernel, where the CPU has AMX.
pub(super) const AMX_MIN_M: usize = 16;

/// Whether `m` activation rows of `kind` on `isa` take the AMX kernel (the AVX-512 tier on
/// a CPU with AMX-INT8, [`IqKind::amx`] types, from [`AMX_MIN_M`] rows): the rows are then
/// interleaved in groups of 16 ([`prepare`]) and the engine passes 16 weight rows per call.
pub(crate) fn amx_rows(isa: Isa, kind: IqKind, m: usize) -> bool {
    isa == Isa::Avx512 && crate::isa::Cpu::get().amx_int8 && kind.amx() && m >= AMX_MIN_M
}

/// Weight rows the engine hands each call with `m` > 1 activation rows of `kind` on `isa`:
/// 16 where they take the AMX kernel ([`amx_rows`]), else 4.
pub(crate) fn rows_per_call(isa: Isa, kind: IqKind, m: usize) -> usize {
    if amx_rows(isa, kind, m) {
        AMX_GROUP
    } else {
        ROW_GROUP
    }
}

/// Activation rows as the kernel on `isa` reads them: interleaved in groups of 16 where
/// [`amx_rows`] holds, else as quantized.
pub(crate) fn prepare(
    isa: Isa,
    kind: IqKind,
    rows: crate::linear::q8_1::Rows,
) -> crate::linear::q8_1::Rows {
    #[cfg(target_arch = "x86_64")]
    if amx_rows(isa, kind, rows.rows()) {
        let mut rows = rows;
        rows.arrange_groups(super::amx::WIDTH, false);
        return rows;
    }
    let _ = (isa, kind); // elsewhere the kernels read the codes as quantized
    rows
}

/// `d·c` of the super-block `blk` (module docs' table).
pub(super) fn scale(kind: IqKind, blk: &[u8]) -> f32 {
    match kind {
        IqKind::Iq2Xxs | IqKind::Iq2Xs | IqKind::Iq2S | IqKind::Iq1S => f16_at(blk, 0) * 0.125,
        IqKind::Iq3Xxs => f16_at(blk, 0) * 0.25,
        IqKind::Iq3S => f16_at(blk, 0),
        IqKind::Iq1M => half::f16::from_bits(iq1_m::super_scale_bits(blk)).to_f32() * 0.125,
    }
}

/// Writes `w[j] = sc · grid[j] · ±1` (sign bit j of `signs` set → negative).
fn put8(w: &mut [i32], sc: i32, grid: u64, signs: u8) {
    for (j, (o, g)) in w.iter_mut().zip(grid.to_le_bytes()).enumerate() {
        let s = if signs & KMASK_IQ2XS[j] != 0 { -1 } else { 1 };
        *o = sc * g as i32 * s;
    }
}

/// Writes `w[j] = sc · (8·grid[j] + delta)` for an IQ1 grid point (i8 values −1, 0, 1).
fn put8_iq1(w: &mut [i32], sc: i32, grid: u64, delta: i32) {
    for (o, g) in w.iter_mut().zip(grid.to_le_bytes()) {
        *o = sc * (8 * g as i8 as i32 + delta);
    }
}

/// The 32 integer weights of group g of super-block `blk` (the block layouts are those of
/// `formats::gguf::iquants`).
pub(super) fn group(kind: IqKind, blk: &[u8], g: usize) -> [i32; 32] {
    let mut w = [0i32; 32];
    match kind {
        IqKind::Iq2Xxs => {
            // qs[8g..8g+4]: grid indices; u32 at 8g+4: scale (top 4 bits), 4 × 7-bit signs.
            let q = &iq2_xxs::QS.of(blk)[8 * g..8 * g + 8];
            let aux = u32_at(q, 4);
            let sc = 2 * (aux >> 28) as i32 + 1;
            for l in 0..4 {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                put8(&mut w[8 * l..], sc, IQ2XXS_GRID[q[l] as usize], signs);
            }
        }
        IqKind::Iq2Xs => {
            // u16 per run: 9-bit grid index, 7-bit sign index; scales[g]: a nibble per half.
            let s = iq2_xs::SCALES.of(blk)[g];
            for l in 0..4 {
                let q = u16_at(blk, iq2_xs::QS.at + 8 * g + 2 * l);
                let sc = 2 * ((s >> (4 * (l / 2))) & 15) as i32 + 1;
                let signs = KSIGNS_IQ2XS[(q >> 9) as usize];
                put8(&mut w[8 * l..], sc, IQ2XS_GRID[(q & 511) as usize], signs);
            }
        }
        IqKind::Iq2S => {
            let (qs, signs) = (iq2_s::QS.of(blk), iq2_s::SIGNS.of(blk));
            let (qh, scales) = (iq2_s::QH.of(blk), iq2_s::SCALES.of(blk));
            for l in 0..4 {
                let r = 4 * g + l;
                let idx = qs[r] as usize | ((((qh[g] >> (2 * l)) & 3) as usize) << 8);
                let sc = 2 * ((scales[g] >> (4 * (l / 2))) & 15) as i32 + 1;
                put8(&mut w[8 * l..], sc, IQ2S_GRID[idx], signs[r]);
            }
        }
        IqKind::Iq3Xxs => {
            let aux = u32_at(blk, iq3_xxs::SCALES_AND_SIGNS.at + 4 * g);
            let sc = 2 * (aux >> 28) as i32 + 1;
            let qs = iq3_xxs::QS.of(blk);
            for l in 0..4 {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                let g1 = IQ3XXS_GRID[qs[8 * g + 2 * l] as usize] as u64;
                let g2 = IQ3XXS_GRID[qs[8 * g + 2 * l + 1] as usize] as u64;
                put8(&mut w[8 * l..], sc, g1 | (g2 << 32), signs);
            }
        }
        IqKind::Iq3S => {
            let (qs, qh) = (iq3_s::QS.of(blk), iq3_s::QH.of(blk));
            let (signs, scales) = (iq3_s::SIGNS.of(blk), iq3_s::SCALES.of(blk));
            let sc = 2 * ((scales[g / 2] >> (4 * (g % 2))) & 15) as i32 + 1;
            for l in 0..4 {
                let r = 4 * g + l;
                let i1 = qs[2 * r] as usize | ((((qh[g] >> (2 * l)) & 1) as usize) << 8);
                let i2 = qs[2 * r + 1] as usize | ((((qh[g] >> (2 * l + 1)) & 1) as usize) << 8);
                let grid = IQ3S_GRID[i1] as u64 | ((IQ3S_GRID[i2] as u64) << 32);
                put8(&mut w[8 * l..], sc, grid, signs[r]);
            }
        }
        IqKind::Iq1S => {
            // qh[g]: 3 high index bits per run, the 3-bit scale at 12, the delta's sign at 15.
            let qh = u16_at(blk, iq1_s::QH.at + 2 * g);
            let sc = 2 * ((qh >> 12) & 7) as i32 + 1;
            let delta = if qh & 0x8000 != 0 { -1 } else { 1 };
            for l in 0..4 {
                let idx =
                    iq1_s::QS.of(blk)[4 * g + l] as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
                put8_iq1(&mut w[8 * l..], sc, IQ1S_GRID[idx], delta);
            }
        }
        IqKind::Iq1M => {
            // Run l: nibble l%2 of qh[2g + l/2] (3 high index bits, delta sign at bit 3);
            // 3-bit scales of the two halves at 6(g%2) and 6(g%2)+3 of scales word g/2.
            let sw = iq1_m::scale_word(blk, g / 2);
            let (qs, qh) = (iq1_m::QS.of(blk), iq1_m::QH.of(blk));
            for l in 0..4 {
                let nib = qh[2 * g + l / 2] >> (4 * (l % 2));
                let idx = qs[4 * g + l] as usize | (((nib & 7) as usize) << 8);
                let delta = if nib & 8 != 0 { -1 } else { 1 };
                let sc = 2 * ((sw >> (6 * (g % 2) + 3 * (l / 2))) & 7) as i32 + 1;
                put8_iq1(&mut w[8 * l..], sc, IQ1S_GRID[idx], delta);
            }
        }
    }
    w
}

/// Up to 16 consecutive weight rows `ws` against every q8_1 row
/// `xs`: `out[i·M + r]` = the product of `ws[i]` with `xs[r]` (row of W major). Each output
/// has the bits of the module docs' order whatever the instruction set and grouping.
pub(crate) fn dot_row_group(isa: Isa, kind: IqKind, ws: &[&[u8]], xs: &[Row<'_>], out: &mut [f32]) {
    dot_row_group_in(
        isa,
        Form::of(isa, crate::isa::Cpu::get(), kind),
        kind,
        ws,
        xs,
        out,
    )
}

/// How the AVX-512 tier's i-quant kernels form their groups: a speed choice per CPU, the
/// same bits in every form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// Each group's grid entries by broadcast loads and blends, 256-bit `vpdpbusd`.
    Blend,
    /// At M = 1, two groups per 512-bit `vpdpbusd`: pays where
    /// [`Cpu::wide_pipes`](crate::isa::Cpu::wide_pipes) holds, and for IQ2_XS where
    /// [`Cpu::zen4`](crate::isa::Cpu::zen4) does.
    Wide,
    /// Each group's grid entries by one gather, for the types where that measured faster
    /// (IQ3_XXS, IQ3_S, IQ2_S, IQ1_S, IQ1_M), and IQ2_XS's by blends kept as blends: pays
    /// where [`Cpu::fast_gathers`](crate::isa::Cpu::fast_gathers) holds.
    Gather,
}

impl Form {
    /// The form the tier `isa` runs fastest on this CPU for `kind` (measured on the AVX-512
    /// tier; the other tiers run [`Form::Blend`], though they can run the gather form too).
    pub(super) fn of(isa: Isa, cpu: &crate::isa::Cpu, kind: IqKind) -> Form {
        if isa != Isa::Avx512 {
            Form::Blend
        } else if cpu.wide_pipes || (cpu.zen4 && kind == IqKind::Iq2Xs) {
            Form::Wide
        } else if cpu.fast_gathers {
            Form::Gather
        } else {
            Form::Blend
        }
    }

    /// Every form (the tests run each).
    #[cfg(test)]
    pub(super) const ALL: [Form; 3] = [Form::Blend, Form::Wide, Form::Gather];
}

/// [`dot_row_group`] in the form `form` (same bits in each; only the AVX-512 tier has the
/// two-group form, every x86 tier the gather form).
fn dot_row_group_in(
    isa: Isa,
    form: Form,
    kind: IqKind,
    ws: &[&[u8]],
    xs: &[Row<'_>],
    out: &mut [f32],
) {
    debug_assert_eq!(ws.len() * xs.len(), out.len());
    #[cfg(not(target_arch = "x86_64"))]
    let _ = form; // only the AVX-512 tier has several forms
    #[cfg(target_arch = "x86_64")]
    let bmi1 = crate::isa::Cpu::get().bmi1;
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (each tier): a prepared weight selects a tier only after run-time detection
        // of all its features (`Isa::available`); BMI1 is checked here (else the reference
        // runs: same bits); the AMX kernel runs only where `amx_applies` holds (AMX usable,
        // the rows interleaved for it).
        Isa::Avx512 if bmi1 => unsafe {
            use super::iquants_avx2::avx512;
            if avx512::amx_applies(kind, xs) {
                avx512::dot_row_group_amx(kind, ws, xs, out, form)
            } else {
                avx512::dot_row_group(kind, ws, xs, out, form)
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::AvxVnni if bmi1 => unsafe {
            super::iquants_avx2::avxvnni::dot_row_group(kind, ws, xs, out, form)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 if bmi1 => unsafe {
            super::iquants_avx2::avx2::dot_row_group(kind, ws, xs, out, form)
        },
        _ => {
            for (w, o) in ws.iter().zip(out.chunks_exact_mut(xs.len().max(1))) {
                for (o, x) in o.iter_mut().zip(xs) {
                    *o = dot_one(kind, w, x);
                }
            }
        }
    }
}

/// The reference order of the module docs.
pub(super) fn dot_one(kind: IqKind, w: &[u8], x: &Row<'_>) -> f32 {
    let bb = kind.block_bytes();
    let mut acc = [0f32; 8];
    for (sb, blk) in w.chunks_exact(bb).take(x.d.len() / 8).enumerate() {
        let dc = scale(kind, blk);
        for (g, a) in acc.iter_mut().enumerate() {
            let b = 8 * sb + g;
            let wq = group(kind, blk, g);
            let t: i32 = wq
                .iter()
                .zip(&x.qs[32 * b..32 * b + 32])
                .map(|(&w, &x)| w * x as i32)
                .sum();
            *a = (dc * x.d[b]).mul_add(t as f32, *a);
        }
    }
    tree8(acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::q8_1::Rows;

    const ALL: [IqKind; 7] = [
        IqKind::Iq2Xxs,
        IqKind::Iq2Xs,
        IqKind::Iq2S,
        IqKind::Iq3Xxs,
        IqKind::Iq3S,
        IqKind::Iq1S,
        IqKind::Iq1M,
    ];

    /// Every tier returns the scalar reference's words, for every type, M ∈ {1, 2, 3, 5},
    /// K of 1, 3 and 8 super-blocks and 1..4-row weight groups: random payloads (every code,
    /// scale and sign field drawn; the bytes all 0xFF in one row: the largest scales and
    /// every sign negative) against activations whose codes reach ±127 in every block.
    #[test]
    fn every_tier_equals_scalar_word_for_word() {
        let mut s = 0x9E3779B97F4A7C15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for kind in ALL {
            let bb = kind.block_bytes();
            for k in [256, 768, 2048] {
                let n = 5;
                let mut w: Vec<u8> = (0..n * k / 256 * bb).map(|_| next() as u8).collect();
                let rb = k / 256 * bb;
                w[rb..2 * rb].fill(0xFF);
                put_scales(kind, &mut w);
                let rows: Vec<&[u8]> = w.chunks_exact(rb).collect();
                for m in [1, 2, 3, 5] {
                    let x: Vec<f32> = (0..m * k)
                        .map(|i| match i % 5 {
                            0 => 1.0,
                            1 => -1.0,
                            _ => (next() % 255) as f32 / 127.0 - 1.0,
                        })
                        .collect();
                    let q = Rows::quantize(&x, m, k);
                    let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                    let mut want = vec![0f32; n * m];
                    dot_row_group(Isa::Scalar, kind, &rows, &xs, &mut want);
                    assert!(want.iter().all(|v| v.is_finite()));
                    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                    // Every form of the AVX-512 tier, whichever this CPU prefers.
                    for (isa, form) in Isa::tested()
                        .into_iter()
                        .flat_map(|i| Form::ALL.map(|f| (i, f)))
                    {
                        for g in 1..=4 {
                            for r0 in [0, n - g] {
                                let mut got = vec![0f32; g * m];
                                let ws = &rows[r0..r0 + g];
                                dot_row_group_in(isa, form, kind, ws, &xs, &mut got);
                                assert_eq!(
                                    bits(&got),
                                    bits(&want[r0 * m..(r0 + g) * m]),
                                    "{kind:?} {isa:?} {form:?} k{k} m{m} g{g} r{r0}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The integer weights times d·c are the decoder's values, bit for bit, on random
    /// super-blocks of every type.
    #[test]
    fn integer_weights_times_scale_are_the_decoded_values() {
        let mut s = 0x2545F4914F6CDD1Du64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for kind in [
            IqKind::Iq2Xxs,
            IqKind::Iq2Xs,
            IqKind::Iq2S,
            IqKind::Iq3Xxs,
            IqKind::Iq3S,
            IqKind::Iq1S,
            IqKind::Iq1M,
        ] {
            let format = kind.block().format;
            assert_eq!(IqKind::of(format), Some(kind));
            let bb = kind.block_bytes();
            for _ in 0..200 {
                let mut blk: Vec<u8> = (0..bb).map(|_| next() as u8).collect();
                if kind == IqKind::Iq1M {
                    blk[iq1_m::BYTES - 1] = (blk[iq1_m::BYTES - 1] & 0x0F) | 0x30;
                } else {
                    blk[0..2].copy_from_slice(&half::f16::from_f32(0.01).to_bits().to_le_bytes());
                }
                let mut want = vec![0f32; 256];
                crate::formats::gguf::dequantize(format, &blk, &mut want).unwrap();
                let dc = scale(kind, &blk);
                for g in 0..8 {
                    let wq = group(kind, &blk, g);
                    for e in 0..32 {
                        let got = dc * wq[e] as f32;
                        assert_eq!(
                            got.to_bits(),
                            want[32 * g + e].to_bits(),
                            "{format} g{g} e{e}"
                        );
                    }
                }
            }
        }
    }

    /// The AMX kernel (where the CPU has it) against the scalar reference with up to 16
    /// weight rows per call (1, 5, 15 and 16 of 19, at both ends), activation groups of 16
    /// with remainders, in every form; the types without one keep their kernels at 16 rows.
    /// Writes the super-scales 1, −0.5, 3e-3, 0.02 (binary16, in turn) into every
    /// super-block of `w`: IQ1_M's in the top nibbles of its four scales words, the other
    /// types' in bytes 0..2.
    fn put_scales(kind: IqKind, w: &mut [u8]) {
        for (i, blk) in w.chunks_exact_mut(kind.block_bytes()).enumerate() {
            let d = half::f16::from_f32([1.0f32, -0.5, 3e-3, 0.02][i % 4]).to_bits();
            if kind == IqKind::Iq1M {
                for j in 0..4 {
                    let at = 49 + 2 * j;
                    blk[at] = (blk[at] & 0x0F) | ((((d >> (4 * j)) & 15) as u8) << 4);
                }
            } else {
                blk[0..2].copy_from_slice(&d.to_le_bytes());
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn amx_kernel_equals_scalar_for_every_row_count() {
        if !crate::isa::Cpu::get().amx_int8 || !Isa::Avx512.available() {
            eprintln!("note: no usable AMX-INT8 on this machine, its i-quant kernel is not tested");
            return;
        }
        let mut s = 0x3C6E_F372_FE94_F82Bu64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let n = 19;
        let mut cases = 0;
        for kind in ALL {
            let bb = kind.block_bytes();
            for k in [256, 2048] {
                let rb = k / 256 * bb;
                let mut w: Vec<u8> = (0..n * rb).map(|_| next() as u8).collect();
                put_scales(kind, &mut w);
                let ws: Vec<&[u8]> = w.chunks_exact(rb).collect();
                for m in [16, 17, 33, 64] {
                    let x: Vec<f32> = (0..m * k)
                        .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
                        .collect();
                    let q = Rows::quantize(&x, m, k);
                    let xs: Vec<Row<'_>> = (0..m).map(|i| q.row(i)).collect();
                    let mut want = vec![0f32; n * m];
                    dot_row_group(Isa::Scalar, kind, &ws, &xs, &mut want);
                    assert_eq!(amx_rows(Isa::Avx512, kind, m), kind.amx());
                    let qp = prepare(Isa::Avx512, kind, Rows::quantize(&x, m, k));
                    let xp: Vec<Row<'_>> = (0..m).map(|i| qp.row(i)).collect();
                    // The AMX kernel is the one under test where the type has one.
                    let amx = super::super::iquants_avx2::avx512::amx_applies(kind, &xp);
                    assert_eq!(amx, kind.amx());
                    for form in Form::ALL {
                        for g in [1, 5, 15, 16] {
                            for r0 in [0, n - g] {
                                let mut got = vec![0f32; g * m];
                                let ws = &ws[r0..r0 + g];
                                dot_row_group_in(Isa::Avx512, form, kind, ws, &xp, &mut got);
                                let want = &want[r0 * m..(r0 + g) * m];
                                let b =
                                    |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                                assert_eq!(
                                    b(&got),
                                    b(want),
                                    "{kind:?} {form:?} k{k} m{m} g{g} r0{r0}"
                                );
                                cases += 1;
                            }
                        }
                    }
                }
            }
        }
        println!("i-quant AMX cases: {cases}");
        assert!(cases > 0);
    }
}
