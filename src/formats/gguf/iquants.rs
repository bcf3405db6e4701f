//! The i-quants: grid-coded 256-value super-blocks (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
//! IQ3_XXS, IQ3_S) and the non-linear 4-bit codes (IQ4_NL's 32-value block, IQ4_XS).
//!
//! A grid index selects 4 or 8 magnitudes from one of ggml's tables ([`super::grids`]);
//! signs come from separate bits, IQ2_XXS/IQ2_XS/IQ3_XXS through `ksigns_iq2xs` (7 stored
//! bits, the 8th is parity). Every product is evaluated in ggml's order in f32, the sign as
//! a multiplication by ±1 as ggml writes it (the compiler may turn it into a sign flip, which
//! differs only in the sign of a NaN).

use super::blocks::{iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_nl, iq4_xs};
use super::grids::{
    IQ1M_DELTA, IQ1S_DELTA, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
    KMASK_IQ2XS, KSIGNS_IQ2XS, KVALUES_IQ4NL,
};
use super::{f16_at, u16_at, u32_at};

/// ±1 for element j of a sign byte (bit set → negative).
#[inline(always)]
fn sign(signs: u8, j: usize) -> f32 {
    if signs & KMASK_IQ2XS[j] != 0 {
        -1.0
    } else {
        1.0
    }
}

/// Writes `y[j] = db · grid[j] · ±1` for the 8 magnitudes of a grid point.
#[inline(always)]
fn put8(y: &mut [f32], db: f32, grid: u64, signs: u8) {
    let g = grid.to_le_bytes();
    for j in 0..8 {
        y[j] = db * g[j] as f32 * sign(signs, j);
    }
}

/// `block_iq2_xxs` ([`iq2_xxs`]). Each 32-value group g uses 8 bytes at qs + 8g: four grid
/// indices (bytes 0..4) and a u32 whose top 4 bits are the group scale s and whose 7-bit
/// fields 7l are the sign indices of the four 8-value runs; `db = d·(0.5 + s)·0.25`,
/// `y = db·grid·±1`.
pub(super) fn dequantize_iq2_xxs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq2_xxs::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq2_xxs::D.at);
        for (q, y) in iq2_xxs::QS
            .of(b)
            .chunks_exact(8)
            .zip(y.chunks_exact_mut(32))
        {
            let aux = u32_at(q, 4);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                put8(y, db, IQ2XXS_GRID[q[l] as usize], signs);
            }
        }
    }
}

/// `block_iq2_xs` ([`iq2_xs`]). Each u16 of qs codes one
/// 8-value run: a 9-bit grid index and a 7-bit sign index. Group g (32 values) has two
/// 4-bit scales in scales[g] (low nibble: runs 0-1, high: runs 2-3);
/// `db = d·(0.5 + s)·0.25`, `y = db·grid·±1`.
pub(super) fn dequantize_iq2_xs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq2_xs::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq2_xs::D.at);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = iq2_xs::SCALES.of(b)[g];
            let db = [
                d * (0.5 + (sc & 0x0F) as f32) * 0.25,
                d * (0.5 + (sc >> 4) as f32) * 0.25,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let q = u16_at(b, iq2_xs::QS.at + 8 * g + 2 * l);
                let signs = KSIGNS_IQ2XS[(q >> 9) as usize];
                put8(y, db[l / 2], IQ2XS_GRID[(q & 511) as usize], signs);
            }
        }
    }
}

/// `block_iq2_s` ([`iq2_s`]). Run r = 4g + l (8 values) has grid index
/// `qs[r] | ((qh[g] >> 2l) & 3) << 8` and explicit sign byte signs[r]; scales as IQ2_XS;
/// `y = db·grid·±1`.
pub(super) fn dequantize_iq2_s(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq2_s::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq2_s::D.at);
        let (qs, signs) = (iq2_s::QS.of(b), iq2_s::SIGNS.of(b));
        let (qh, scales) = (iq2_s::QH.of(b), iq2_s::SCALES.of(b));
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let db = [
                d * (0.5 + (scales[g] & 0x0F) as f32) * 0.25,
                d * (0.5 + (scales[g] >> 4) as f32) * 0.25,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let r = 4 * g + l;
                let idx = qs[r] as usize | ((((qh[g] >> (2 * l)) & 3) as usize) << 8);
                put8(y, db[l / 2], IQ2S_GRID[idx], signs[r]);
            }
        }
    }
}

/// `block_iq3_xxs` ([`iq3_xxs`]): 64 grid indices (4 values each), then eight u32 (one per
/// 32-value group) holding the scale s in the top 4 bits and four 7-bit sign indices;
/// `db = d·(0.5 + s)·0.5`, `y = db·grid·±1`.
pub(super) fn dequantize_iq3_xxs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq3_xxs::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq3_xxs::D.at);
        let qs = iq3_xxs::QS.of(b);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let aux = u32_at(b, iq3_xxs::SCALES_AND_SIGNS.at + 4 * g);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                let g1 = IQ3XXS_GRID[qs[8 * g + 2 * l] as usize] as u64;
                let g2 = IQ3XXS_GRID[qs[8 * g + 2 * l + 1] as usize] as u64;
                put8(y, db, g1 | (g2 << 32), signs);
            }
        }
    }
}

/// `block_iq3_s` ([`iq3_s`]). Run r = 4g + l (8 values) uses two 9-bit grid indices
/// `qs[2r] | bit 2l of qh[g] << 8` and `qs[2r+1] | bit 2l+1 of qh[g] << 8`, and sign byte
/// signs[r]; group g's scale is the nibble g % 2 of scales[g / 2]; `db = d·(1 + 2s)`,
/// `y = db·grid·±1`.
pub(super) fn dequantize_iq3_s(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq3_s::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq3_s::D.at);
        let (qs, qh) = (iq3_s::QS.of(b), iq3_s::QH.of(b));
        let (signs, scales) = (iq3_s::SIGNS.of(b), iq3_s::SCALES.of(b));
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let s = (scales[g / 2] >> (4 * (g % 2))) & 0x0F;
            let db = d * (1 + 2 * s as i32) as f32;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let r = 4 * g + l;
                let i1 = qs[2 * r] as usize | ((((qh[g] >> (2 * l)) & 1) as usize) << 8);
                let i2 = qs[2 * r + 1] as usize | ((((qh[g] >> (2 * l + 1)) & 1) as usize) << 8);
                let grid = IQ3S_GRID[i1] as u64 | ((IQ3S_GRID[i2] as u64) << 32);
                put8(y, db, grid, signs[r]);
            }
        }
    }
}

/// `delta` with its sign bit taken from bit `bit` of `bits` (set → −delta), by integer
/// arithmetic: the sign bits are random in real blocks, and a branch here mispredicts.
#[inline(always)]
pub(super) fn signed_delta(delta: f32, bits: u32, bit: u32) -> f32 {
    f32::from_bits(delta.to_bits() | ((bits >> bit) & 1) << 31)
}

/// Writes `y[j] = dl · (grid[j] + delta)` for an IQ1 grid point (i8 values −1, 0, 1).
#[inline(always)]
fn put8_iq1(y: &mut [f32], dl: f32, grid: u64, delta: f32) {
    let g = grid.to_le_bytes();
    for j in 0..8 {
        y[j] = dl * (g[j] as i8 as f32 + delta);
    }
}

/// `block_iq1_s` ([`iq1_s`]). Group g (32 values) reads
/// qh[g]: bits 3l..3l+3 are the high bits of run l's 11-bit grid index (low byte qs[4g+l]),
/// bits 12..15 the scale s (3 bits), bit 15 the delta's sign; `y = d·(2s+1)·(grid ± IQ1S_DELTA)`.
pub(super) fn dequantize_iq1_s(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq1_s::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq1_s::D.at);
        let qs = iq1_s::QS.of(b);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let qh = u16_at(b, iq1_s::QH.at + 2 * g);
            let dl = d * (2 * ((qh >> 12) & 7) as i32 + 1) as f32;
            let delta = signed_delta(IQ1S_DELTA, qh as u32, 15);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let idx = qs[4 * g + l] as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
                put8_iq1(y, dl, IQ1S_GRID[idx], delta);
            }
        }
    }
}

/// `block_iq1_m` ([`iq1_m`]; the binary16 super-scale d spread over the top nibbles of the
/// four u16 scales words). Run r = 4g + l uses grid
/// index `qs[r] | (nibble l%2 of qh[2g + l/2] & 7) << 8` and the delta sign from bit 3 of
/// that nibble; the 3-bit scales of group g are at bits 6(g%2) (runs 0-1) and 6(g%2)+3
/// (runs 2-3) of word g/2; `y = d·(2s+1)·(grid ± IQ1M_DELTA)`.
pub(super) fn dequantize_iq1_m(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq1_m::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = half::f16::from_bits(iq1_m::super_scale_bits(b)).to_f32();
        let (qs, qh) = (iq1_m::QS.of(b), iq1_m::QH.of(b));
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = iq1_m::scale_word(b, g / 2);
            let shift = 6 * (g % 2);
            let dl = [
                d * (2 * ((sc >> shift) & 7) as i32 + 1) as f32,
                d * (2 * ((sc >> (shift + 3)) & 7) as i32 + 1) as f32,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let nib = qh[2 * g + l / 2] >> (4 * (l % 2));
                let idx = qs[4 * g + l] as usize | (((nib & 7) as usize) << 8);
                let delta = signed_delta(IQ1M_DELTA, nib as u32, 3);
                put8_iq1(y, dl[l / 2], IQ1S_GRID[idx], delta);
            }
        }
    }
}

/// `block_iq4_nl` ([`iq4_nl`]): element j is the low nibble of qs[j],
/// element j+16 its high nibble, each an index into `kvalues_iq4nl`; `y = d·kvalue`.
pub(super) fn dequantize_iq4_nl(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq4_nl::BYTES)
        .zip(out.chunks_exact_mut(32))
    {
        let d = f16_at(b, iq4_nl::D.at);
        for (j, &q) in iq4_nl::QS.of(b).iter().enumerate() {
            y[j] = d * KVALUES_IQ4NL[(q & 0x0F) as usize] as f32;
            y[j + 16] = d * KVALUES_IQ4NL[(q >> 4) as usize] as f32;
        }
    }
}

/// `block_iq4_xs` ([`iq4_xs`]): eight 32-value groups coded as IQ4_NL (qs[16g..16g+16])
/// with 6-bit scales s ([`iq4_xs::scale`]); `y = (d·(s − 32))·kvalue`.
pub(super) fn dequantize_iq4_xs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(iq4_xs::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, iq4_xs::D.at);
        let qs = iq4_xs::QS.of(b);
        for (g, (qs, y)) in qs.chunks_exact(16).zip(y.chunks_exact_mut(32)).enumerate() {
            let dl = d * (iq4_xs::scale(b, g) as i32 - 32) as f32;
            for j in 0..16 {
                y[j] = dl * KVALUES_IQ4NL[(qs[j] & 0x0F) as usize] as f32;
                y[j + 16] = dl * KVALUES_IQ4NL[(qs[j] >> 4) as usize] as f32;
            }
        }
    }
}
