//! The 32-value legacy blocks: Q8_0, Q4_0, Q5_0 (and Q2_0's 64-value block).

use super::f16_at;

/// `block_q8_0 { f16 d; i8 qs[32]; }`, 34 bytes: `y[j] = qs[j] · d`.
pub(super) fn dequantize_q8_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(34).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(b, 0);
        for (yj, &q) in y.iter_mut().zip(&b[2..34]) {
            *yj = (q as i8) as f32 * d;
        }
    }
}

/// `block_q4_0 { f16 d; u8 qs[16]; }`, 18 bytes: element j is the low nibble of qs[j],
/// element j+16 its high nibble; `y = (q - 8) · d`.
pub(super) fn dequantize_q4_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(18).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(b, 0);
        for j in 0..16 {
            let q = b[2 + j];
            y[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
            y[j + 16] = ((q >> 4) as i32 - 8) as f32 * d;
        }
    }
}

/// `block_q5_0 { f16 d; u8 qh[4]; u8 qs[16]; }`, 22 bytes: nibbles as Q4_0, bit j of the
/// little-endian u32 qh is the fifth bit of element j; `y = (q - 16) · d`.
pub(super) fn dequantize_q5_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(22).zip(out.chunks_exact_mut(32)) {
        let d = f16_at(b, 0);
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        for j in 0..16 {
            let q = b[6 + j];
            let h0 = ((qh >> j) & 1) << 4;
            let h1 = ((qh >> (j + 16)) & 1) << 4;
            y[j] = (((q & 0x0F) as u32 | h0) as i32 - 16) as f32 * d;
            y[j + 16] = (((q >> 4) as u32 | h1) as i32 - 16) as f32 * d;
        }
    }
}

/// `block_q2_0 { f16 d; u8 qs[16]; }`, 18 bytes, 64 values: element j is the 2-bit code u
/// at bits 2·(j % 4) of qs[j / 4]; `y = (u − 1) · d` (u = 0..3 → −1, 0, 1, 2).
pub(super) fn dequantize_q2_0(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(18).zip(out.chunks_exact_mut(64)) {
        let d = f16_at(b, 0);
        for (y4, &q) in y.chunks_exact_mut(4).zip(&b[2..18]) {
            for (i, yj) in y4.iter_mut().enumerate() {
                *yj = (((q >> (2 * i)) & 3) as i32 - 1) as f32 * d;
            }
        }
    }
}
