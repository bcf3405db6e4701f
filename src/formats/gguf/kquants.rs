//! The 256-value k-quant super-blocks.

use super::f16_at;

/// The 6-bit scale and min of sub-block `j` (0..8) from the 12 packed bytes of Q4_K/Q5_K:
/// sub-blocks 0..4 keep theirs in the low 6 bits of bytes j and j+4; sub-blocks 4..8 take
/// their low 4 bits from byte j+4 and their high 2 bits from the top of bytes j-4 and j.
#[inline(always)]
pub(crate) fn scale_min_k4(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    }
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`, 144 bytes. Each 64-value
/// chunk c uses qs[32c..32c+32]: its first 32 values are the low nibbles with sub-block 2c,
/// the next 32 the high nibbles with sub-block 2c+1; `y = (d·sc)·q − (dmin·m)`.
pub(super) fn dequantize_q4_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(144).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        let dmin = f16_at(b, 2);
        let scales = &b[4..16];
        for c in 0..4 {
            let qs = &b[16 + 32 * c..48 + 32 * c];
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

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }`, 210 bytes. Each
/// 128-value half h uses ql[64h..], qh[32h..], scales[8h..]; value l + 32i (i = 0..4) of the
/// half combines a nibble of ql with two bits of qh, minus 32, times scales[l/16 + 2i];
/// `y = (d·sc)·q` evaluated left to right in f32, as ggml does.
pub(super) fn dequantize_q6_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(210).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 208);
        for h in 0..2 {
            let ql = &b[64 * h..64 * h + 64];
            let qh = &b[128 + 32 * h..128 + 32 * h + 32];
            let sc = &b[192 + 8 * h..192 + 8 * h + 8];
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

/// `block_q2_K { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin; }`, 84 bytes. Sixteen 16-value
/// sub-blocks, each with a 4-bit scale (low nibble) and 4-bit min (high nibble) of
/// scales[s]. Each 128-value half h uses qs[32h..32h+32]: the 2-bit codes at shift 2i give
/// values 32i..32i+32 of the half (sub-blocks 8h+2i and 8h+2i+1);
/// `y = (d·sc)·q − (dmin·m)`.
pub(super) fn dequantize_q2_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(84).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 80);
        let dmin = f16_at(b, 82);
        for h in 0..2 {
            let qs = &b[16 + 32 * h..48 + 32 * h];
            for i in 0..4 {
                for half in 0..2 {
                    let sc = b[8 * h + 2 * i + half];
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

/// The sixteen 6-bit Q3_K scales from their 12 packed bytes: the low nibble of scale s is
/// nibble s / 8 of byte s % 8, its high 2 bits are bits 2·(s / 4) of byte 8 + s % 4.
#[inline(always)]
pub(super) fn q3_k_scales(s: &[u8]) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        let lo = (s[i % 8] >> (4 * (i / 8))) & 0x0F;
        let hi = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
        *o = (lo | (hi << 4)) as i8 - 32;
    }
    out
}

/// `block_q3_K { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d; }`, 110 bytes. Codes as
/// Q2_K (2 bits at shift 2i of qs[32h + l]); the third bit of value 128h + 32i + l is bit
/// 4h + i of hmask[l], and a CLEAR bit subtracts 4; sixteen signed 6-bit scales (minus 32);
/// `y = (d·sc)·q`.
pub(super) fn dequantize_q3_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(110).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 108);
        let hmask = &b[0..32];
        let scales = q3_k_scales(&b[96..108]);
        for h in 0..2 {
            let qs = &b[32 + 32 * h..64 + 32 * h];
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

/// `block_q5_K { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]; }`, 176 bytes.
/// As Q4_K, plus a fifth bit: value 64c + l (low nibble) takes bit 2c of qh[l], value
/// 64c + 32 + l (high nibble) bit 2c + 1; `y = (d·sc)·q − (dmin·m)`.
pub(super) fn dequantize_q5_k(blocks: &[u8], out: &mut [f32]) {
    for (b, y) in blocks.chunks_exact(176).zip(out.chunks_exact_mut(256)) {
        let d = f16_at(b, 0);
        let dmin = f16_at(b, 2);
        let scales = &b[4..16];
        let qh = &b[16..48];
        for c in 0..4 {
            let qs = &b[48 + 32 * c..80 + 32 * c];
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
