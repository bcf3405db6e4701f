//! The 256-value k-quant super-blocks.

use super::blocks::{q2_k, q3_k, q4_k, q5_k, q6_k, scale_min_k4};
use super::f16_at;

/// `block_q4_K` ([`q4_k`]). Each 64-value chunk c uses qs[32c..32c+32]: its first 32
/// values are the low nibbles with sub-block 2c, the next 32 the high nibbles with
/// sub-block 2c+1; `y = (d·sc)·q − (dmin·m)`.
pub(super) fn dequantize_q4_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q4_k::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, q4_k::D.at);
        let dmin = f16_at(b, q4_k::DMIN.at);
        let scales = q4_k::SCALES.of(b);
        for (c, qs) in q4_k::QS.of(b).chunks_exact(32).enumerate() {
            let (sc1, m1) = scale_min_k4(2 * c, scales);
            let (sc2, m2) = scale_min_k4(2 * c + 1, scales);
            let (d1, m1) = (d * sc1 as f32, dmin * m1 as f32);
            let (d2, m2) = (d * sc2 as f32, dmin * m2 as f32);
            let y = &mut y[64 * c..64 * c + 64];
            for l in 0..32 {
                y[l] = d1 * (qs[l] & 0x0F) as f32 - m1;
                y[l + 32] = d2 * (qs[l] >> 4) as f32 - m2;
            }
        }
    }
}

/// `block_q6_K` ([`q6_k`]). Each 128-value half h uses ql[64h..], qh[32h..],
/// scales[8h..]; value l + 32i (i = 0..4) of the half combines a nibble of ql with two
/// bits of qh, minus 32, times scales[l/16 + 2i]; `y = (d·sc)·q` evaluated left to right
/// in f32, as ggml does.
pub(super) fn dequantize_q6_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q6_k::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, q6_k::D.at);
        for h in 0..2 {
            let ql = &q6_k::QL.of(b)[64 * h..64 * h + 64];
            let qh = &q6_k::QH.of(b)[32 * h..32 * h + 32];
            let sc = &q6_k::SCALES.of(b)[8 * h..8 * h + 8];
            let y = &mut y[128 * h..128 * h + 128];
            for l in 0..32 {
                let is = l / 16;
                let q1 = ((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) as i32 - 32;
                let q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) as i32 - 32;
                let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i32 - 32;
                let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i32 - 32;
                y[l] = d * (sc[is] as i8) as f32 * q1 as f32;
                y[l + 32] = d * (sc[is + 2] as i8) as f32 * q2 as f32;
                y[l + 64] = d * (sc[is + 4] as i8) as f32 * q3 as f32;
                y[l + 96] = d * (sc[is + 6] as i8) as f32 * q4 as f32;
            }
        }
    }
}

/// `block_q2_K` ([`q2_k`]). Sixteen 16-value sub-blocks, each with a 4-bit scale (low
/// nibble) and 4-bit min (high nibble) of scales[s]. Each 128-value half h uses
/// qs[32h..32h+32]: the 2-bit codes at shift 2i give values 32i..32i+32 of the half
/// (sub-blocks 8h+2i and 8h+2i+1); `y = (d·sc)·q − (dmin·m)`.
pub(super) fn dequantize_q2_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q2_k::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, q2_k::D.at);
        let dmin = f16_at(b, q2_k::DMIN.at);
        let scales = q2_k::SCALES.of(b);
        for (h, qs) in q2_k::QS.of(b).chunks_exact(32).enumerate() {
            for i in 0..4 {
                for half in 0..2 {
                    let sc = scales[8 * h + 2 * i + half];
                    let dl = d * (sc & 0x0F) as f32;
                    let ml = dmin * (sc >> 4) as f32;
                    let q = &qs[16 * half..16 * half + 16];
                    let o = 128 * h + 32 * i + 16 * half;
                    for (yl, &ql) in y[o..o + 16].iter_mut().zip(q) {
                        *yl = dl * ((ql >> (2 * i)) & 3) as f32 - ml;
                    }
                }
            }
        }
    }
}

/// `block_q3_K` ([`q3_k`]). Codes as Q2_K (2 bits at shift 2i of qs[32h + l]); the third
/// bit of value 128h + 32i + l is bit 4h + i of hmask[l], and a CLEAR bit subtracts 4;
/// sixteen signed 6-bit scales ([`q3_k::scales`]); `y = (d·sc)·q`.
pub(super) fn dequantize_q3_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q3_k::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, q3_k::D.at);
        let hmask = q3_k::HMASK.of(b);
        let scales = q3_k::scales(q3_k::SCALES.of(b));
        for (h, qs) in q3_k::QS.of(b).chunks_exact(32).enumerate() {
            for i in 0..4 {
                let bit = 4 * h + i;
                for half in 0..2 {
                    let dl = d * scales[8 * h + 2 * i + half] as f32;
                    let o = 128 * h + 32 * i + 16 * half;
                    for l in 16 * half..16 * half + 16 {
                        let low = ((qs[l] >> (2 * i)) & 3) as i32;
                        let sub = if (hmask[l] >> bit) & 1 != 0 { 0 } else { 4 };
                        y[o + l - 16 * half] = dl * (low - sub) as f32;
                    }
                }
            }
        }
    }
}

/// `block_q5_K` ([`q5_k`]). As Q4_K, plus a fifth bit: value 64c + l (low nibble) takes
/// bit 2c of qh[l], value 64c + 32 + l (high nibble) bit 2c + 1; `y = (d·sc)·q − (dmin·m)`.
pub(super) fn dequantize_q5_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks
        .chunks_exact(q5_k::BYTES)
        .zip(out.chunks_exact_mut(256))
    {
        let d = f16_at(b, q5_k::D.at);
        let dmin = f16_at(b, q5_k::DMIN.at);
        let scales = q5_k::SCALES.of(b);
        let qh = q5_k::QH.of(b);
        for (c, qs) in q5_k::QS.of(b).chunks_exact(32).enumerate() {
            let (sc1, m1) = scale_min_k4(2 * c, scales);
            let (sc2, m2) = scale_min_k4(2 * c + 1, scales);
            let (d1, m1) = (d * sc1 as f32, dmin * m1 as f32);
            let (d2, m2) = (d * sc2 as f32, dmin * m2 as f32);
            let y = &mut y[64 * c..64 * c + 64];
            for l in 0..32 {
                let h1 = ((qh[l] >> (2 * c)) & 1) << 4;
                let h2 = ((qh[l] >> (2 * c + 1)) & 1) << 4;
                y[l] = d1 * ((qs[l] & 0x0F) | h1) as f32 - m1;
                y[l + 32] = d2 * ((qs[l] >> 4) | h2) as f32 - m2;
            }
        }
    }
}
