//! The i-quants: grid-coded 256-value super-blocks (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S,
//! IQ3_XXS, IQ3_S) and the non-linear 4-bit codes (IQ4_NL's 32-value block, IQ4_XS).
//!
//! A grid index selects 4 or 8 magnitudes from one of ggml's tables ([`super::grids`]);
//! signs come from separate bits, IQ2_XXS/IQ2_XS/IQ3_XXS through `ksigns_iq2xs` (7 stored
//! bits, the 8th is parity). Every product is evaluated in ggml's order in f32, the sign as
//! a multiplication by ±1 as ggml writes it (the compiler may turn it into a sign flip, which
//! differs only in the sign of a NaN).

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

/// `block_iq2_xxs { f16 d; u16 qs[32]; }`, 66 bytes. Each 32-value group g uses 8 bytes at
/// 2 + 8g: four grid indices (bytes 0..4) and a u32 whose top 4 bits are the group scale s
/// and whose 7-bit fields 7l are the sign indices of the four 8-value runs;
/// `db = d·(0.5 + s)·0.25`, `y = db·grid·±1`.
pub(super) fn dequantize_iq2_xxs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(66).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let q = &b[2 + 8 * g..10 + 8 * g];
            let aux = u32_at(q, 4);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                put8(y, db, IQ2XXS_GRID[q[l] as usize], signs);
            }
        }
    }
}

/// `block_iq2_xs { f16 d; u16 qs[32]; u8 scales[8]; }`, 74 bytes. Each u16 of qs codes one
/// 8-value run: a 9-bit grid index and a 7-bit sign index. Group g (32 values) has two
/// 4-bit scales in scales[g] (low nibble: runs 0-1, high: runs 2-3);
/// `db = d·(0.5 + s)·0.25`, `y = db·grid·±1`.
pub(super) fn dequantize_iq2_xs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(74).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = b[66 + g];
            let db = [
                d * (0.5 + (sc & 0x0F) as f32) * 0.25,
                d * (0.5 + (sc >> 4) as f32) * 0.25,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let q = u16_at(b, 2 + 8 * g + 2 * l);
                let signs = KSIGNS_IQ2XS[(q >> 9) as usize];
                put8(y, db[l / 2], IQ2XS_GRID[(q & 511) as usize], signs);
            }
        }
    }
}

/// `block_iq2_s { f16 d; u8 qs[64]; u8 qh[8]; u8 scales[8]; }`, 82 bytes. Run r = 4g + l
/// (8 values) has grid index `qs[r] | ((qh[g] >> 2l) & 3) << 8` and explicit sign byte
/// qs[32 + r]; scales as IQ2_XS; `y = db·grid·±1`.
pub(super) fn dequantize_iq2_s(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(82).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        let (qs, signs, qh, scales) = (&b[2..34], &b[34..66], &b[66..74], &b[74..82]);
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

/// `block_iq3_xxs { f16 d; u8 qs[96]; }`, 98 bytes: 64 grid indices (4 values each), then
/// eight u32 (one per 32-value group) holding the scale s in the top 4 bits and four 7-bit
/// sign indices; `db = d·(0.5 + s)·0.5`, `y = db·grid·±1`.
pub(super) fn dequantize_iq3_xxs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(98).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let aux = u32_at(b, 66 + 4 * g);
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let signs = KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                let g1 = IQ3XXS_GRID[b[2 + 8 * g + 2 * l] as usize] as u64;
                let g2 = IQ3XXS_GRID[b[3 + 8 * g + 2 * l] as usize] as u64;
                put8(y, db, g1 | (g2 << 32), signs);
            }
        }
    }
}

/// `block_iq3_s { f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]; }`, 110 bytes.
/// Run r = 4g + l (8 values) uses two 9-bit grid indices `qs[2r] | bit 2l of qh[g] << 8`
/// and `qs[2r+1] | bit 2l+1 of qh[g] << 8`, and sign byte signs[r]; group g's scale is the
/// nibble g % 2 of scales[g / 2]; `db = d·(1 + 2s)`, `y = db·grid·±1`.
pub(super) fn dequantize_iq3_s(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(110).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        let (qs, qh, signs, scales) = (&b[2..66], &b[66..74], &b[74..106], &b[106..110]);
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

/// `block_iq1_s { f16 d; u8 qs[32]; u16 qh[8]; }`, 50 bytes. Group g (32 values) reads
/// qh[g]: bits 3l..3l+3 are the high bits of run l's 11-bit grid index (low byte qs[4g+l]),
/// bits 12..15 the scale s (3 bits), bit 15 the delta's sign; `y = d·(2s+1)·(grid ± IQ1S_DELTA)`.
pub(super) fn dequantize_iq1_s(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(50).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let qh = u16_at(b, 34 + 2 * g);
            let dl = d * (2 * ((qh >> 12) & 7) as i32 + 1) as f32;
            let delta = signed_delta(IQ1S_DELTA, qh as u32, 15);
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let idx = b[2 + 4 * g + l] as usize | ((((qh >> (3 * l)) & 7) as usize) << 8);
                put8_iq1(y, dl, IQ1S_GRID[idx], delta);
            }
        }
    }
}

/// The binary16 super-scale of an IQ1_M block: nibble w of its bits is the top nibble of
/// the u16 scales word w (bytes 48 + 2w, little-endian).
#[inline(always)]
pub(super) fn iq1_m_scale_bits(b: &[u8]) -> u16 {
    let sc = |w: usize| u16_at(b, 48 + 2 * w);
    (sc(0) >> 12) | ((sc(1) >> 8) & 0x00F0) | ((sc(2) >> 4) & 0x0F00) | (sc(3) & 0xF000)
}

/// `block_iq1_m { u8 qs[32]; u8 qh[16]; u8 scales[8]; }`, 56 bytes (the fp16 super-scale d
/// spread over the top nibbles of the four u16 scales words). Run r = 4g + l uses grid
/// index `qs[r] | (nibble l%2 of qh[2g + l/2] & 7) << 8` and the delta sign from bit 3 of
/// that nibble; the 3-bit scales of group g are at bits 6(g%2) (runs 0-1) and 6(g%2)+3
/// (runs 2-3) of word g/2; `y = d·(2s+1)·(grid ± IQ1M_DELTA)`.
pub(super) fn dequantize_iq1_m(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(56).zip(out.chunks_exact_mut(256)) {
        let d = half::f16::from_bits(iq1_m_scale_bits(b)).to_f32();
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let sc = u16_at(b, 48 + 2 * (g / 2));
            let shift = 6 * (g % 2);
            let dl = [
                d * (2 * ((sc >> shift) & 7) as i32 + 1) as f32,
                d * (2 * ((sc >> (shift + 3)) & 7) as i32 + 1) as f32,
            ];
            for (l, y) in y.chunks_exact_mut(8).enumerate() {
                let nib = b[32 + 2 * g + l / 2] >> (4 * (l % 2));
                let idx = b[4 * g + l] as usize | (((nib & 7) as usize) << 8);
                let delta = signed_delta(IQ1M_DELTA, nib as u32, 3);
                put8_iq1(y, dl[l / 2], IQ1S_GRID[idx], delta);
            }
        }
    }
}

/// `block_iq4_nl { f16 d; u8 qs[16]; }`, 18 bytes: element j is the low nibble of qs[j],
/// element j+16 its high nibble, each an index into `kvalues_iq4nl`; `y = d·kvalue`.
pub(super) fn dequantize_iq4_nl(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(b, 0);
        for j in 0..16 {
            let q = b[2 + j];
            y[j] = d * KVALUES_IQ4NL[(q & 0x0F) as usize] as f32;
            y[j + 16] = d * KVALUES_IQ4NL[(q >> 4) as usize] as f32;
        }
    }
}

/// `block_iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; }`, 136 bytes: eight
/// 32-value groups coded as IQ4_NL (qs[16g..16g+16]) with 6-bit scales: low nibble g % 2
/// of scales_l[g / 2], high 2 bits at 2g of scales_h; `y = (d·(s − 32))·kvalue`.
pub(super) fn dequantize_iq4_xs(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(136).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        let scales_h = u16_at(b, 2);
        for (g, y) in y.chunks_exact_mut(32).enumerate() {
            let lo = (b[4 + g / 2] >> (4 * (g % 2))) & 0x0F;
            let hi = ((scales_h >> (2 * g)) & 3) as u8;
            let dl = d * ((lo | (hi << 4)) as i32 - 32) as f32;
            let qs = &b[8 + 16 * g..24 + 16 * g];
            for j in 0..16 {
                y[j] = dl * KVALUES_IQ4NL[(qs[j] & 0x0F) as usize] as f32;
                y[j + 16] = dl * KVALUES_IQ4NL[(qs[j] >> 4) as usize] as f32;
            }
        }
    }
}
