//! The 32-value legacy blocks: Q8_0, Q4_0, Q5_0 (and Q2_0's 64-value block).

use super::blocks::{q2_0, q4_0, q5_0, q8_0};
use super::{f16_at, u32_at};

/// `block_q8_0` ([`q8_0`]): `y[j] = qs[j] · d`.
pub(super) fn dequantize_q8_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q8_0::BYTES)
        .zip(out.chunks_exact_mut(32))
    {
        let d = f16_at(b, q8_0::D.at);
        for (yj, &q) in y.iter_mut().zip(q8_0::QS.of(b)) {
            *yj = (q as i8) as f32 * d;
        }
    }
}

/// `block_q4_0` ([`q4_0`]): element j is the low nibble of qs[j], element j+16 its high
/// nibble; `y = (q - 8) · d`.
pub(super) fn dequantize_q4_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q4_0::BYTES)
        .zip(out.chunks_exact_mut(32))
    {
        let d = f16_at(b, q4_0::D.at);
        for (j, &q) in q4_0::QS.of(b).iter().enumerate() {
            y[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
            y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }
}

/// `block_q5_0` ([`q5_0`]): nibbles as Q4_0, bit j of the little-endian u32 qh is the
/// fifth bit of element j; `y = (q - 16) · d`.
pub(super) fn dequantize_q5_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q5_0::BYTES)
        .zip(out.chunks_exact_mut(32))
    {
        let d = f16_at(b, q5_0::D.at);
        let qh = u32_at(b, q5_0::QH.at);
        for (j, &q) in q5_0::QS.of(b).iter().enumerate() {
            let h0 = ((qh >> j) & 1) << 4;
            let h1 = ((qh >> (j + 16)) & 1) << 4;
            y[j] = (((q & 0x0F) as u32 | h0) as i32 - 16) as f32 * d;
            y[j + 16] = (((q >> 4) as u32 | h1) as i32 - 16) as f32 * d;
        }
    }
}

/// `block_q2_0` ([`q2_0`]), 64 values: element j is the 2-bit code u at bits 2·(j % 4) of
/// qs[j / 4]; `y = (u − 1) · d` (u = 0..3 → −1, 0, 1, 2).
pub(super) fn dequantize_q2_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q2_0::BYTES)
        .zip(out.chunks_exact_mut(64))
    {
        let d = f16_at(b, q2_0::D.at);
        for (y4, &q) in y.chunks_exact_mut(4).zip(q2_0::QS.of(b)) {
            for (i, yj) in y4.iter_mut().enumerate() {
                *yj = (((q >> (2 * i)) & 3) as i32 - 1) as f32 * d;
            }
        }
    }
}
