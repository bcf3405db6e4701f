//! q8_K: the activation blocks of the opt-in `q8_K` profile of the GGUF k-quants and
//! 256-value i-quants ([`crate::linear::Activation::Q8K`], docs/linear.md).
//!
//! One block holds 256 consecutive activation values of one row of x as a binary32 scale
//! `d`, 256 signed 8-bit codes and 16 sums of 16 codes (ggml's `block_q8_K`, 292 bytes:
//! `d@0` (f32), `qs[256]@4`, `bsums[16]@260` (i16)). The arithmetic is ggml's
//! `quantize_row_q8_K_ref`, all in binary32, per 256 values:
//!
//! - `max` = the first value of largest magnitude, `amax = |max|`;
//! - `amax = 0`: every code 0, `d = 0`;
//! - else `iscale = −127 / max`, `q_j = min(127, round_half_even(iscale · x_j))`,
//!   `d = 1 / iscale`; `bsums[i] = Σ_{j<16} q_{16i+j}`.
//!
//! The represented activation is `x̂_j = d · q_j` as a real number (exact in binary64, not
//! in binary32: d has 24 significant bits); that is the value the product multiplies and
//! the value its oracle uses.
//!
//! Where ggml's behaviour is undefined or accidental (documented in docs/linear.md): a
//! block with a non-finite value gets `d = NaN`, zero codes and sums, so every output it
//! touches is NaN; when `iscale` overflows (|max| < 127/f32::MAX) the codes are 0 and
//! `d = 1/iscale = ∓0`, so x̂ = 0; a zero block's `bsums` are written as 0 (ggml leaves
//! them unwritten).

use super::plane::Plane;
use crate::error::{Result, mul};

/// Values per q8_K block (ggml's `QK_K`).
pub const QK_K: usize = 256;
/// Bytes per ggml `block_q8_K`.
pub const BLOCK_Q8_K_BYTES: usize = 292;

/// One quantized block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Block {
    pub qs: [i8; QK_K],
    /// The scale d (binary32).
    pub d: f32,
    /// Σ q over each 16 codes (exact).
    pub bsums: [i16; 16],
}

/// Quantizes 256 values to one q8_K block (ggml's arithmetic, see the module docs).
pub(crate) fn quantize_block(x: &[f32]) -> Block {
    debug_assert_eq!(x.len(), QK_K);
    let mut b = Block {
        qs: [0; QK_K],
        d: 0.0,
        bsums: [0; 16],
    };
    if x.iter().any(|v| !v.is_finite()) {
        b.d = f32::NAN;
        return b;
    }
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        return b;
    }
    let iscale = -127.0 / max;
    b.d = 1.0 / iscale;
    if !iscale.is_finite() {
        return b;
    }
    for (q, &v) in b.qs.iter_mut().zip(x) {
        // |iscale·v| ≤ 127·(1 + 2⁻²³): the rounded value is in [−127, 128).
        *q = (iscale * v).round_ties_even().min(127.0) as i8;
    }
    for (s, c) in b.bsums.iter_mut().zip(b.qs.chunks_exact(16)) {
        *s = c.iter().map(|&q| q as i16).sum();
    }
    b
}

/// Quantizes one activation row to ggml `block_q8_K` bytes (292 per 256 values), exactly
/// as the q8_K products do internally (module docs).
///
/// Longer outputs are accepted (only the prefix is written).
///
/// Errors (nothing written): [`Error::BadShape`](crate::error::Error::BadShape) when
/// `x.len()` is not a positive multiple of 256,
/// [`Error::BufferTooSmall`](crate::error::Error::BufferTooSmall) when `out` is shorter
/// than `x.len() / 256 × 292` bytes.
pub fn quantize_row_q8_k(x: &[f32], out: &mut [u8]) -> Result<()> {
    let what = "q8_K blocks (bytes)";
    super::q8_1::check_row("q8_K", QK_K, BLOCK_Q8_K_BYTES, x.len(), out.len(), what)?;
    for (xb, ob) in x
        .chunks_exact(QK_K)
        .zip(out.chunks_exact_mut(BLOCK_Q8_K_BYTES))
    {
        let b = quantize_block(xb);
        ob[0..4].copy_from_slice(&b.d.to_le_bytes());
        for (o, q) in ob[4..260].iter_mut().zip(b.qs) {
            *o = q as u8;
        }
        for (o, s) in ob[260..].chunks_exact_mut(2).zip(b.bsums) {
            o.copy_from_slice(&s.to_le_bytes());
        }
    }
    Ok(())
}

/// The q8_K image of M activation rows, split in planes the kernels read directly.
#[derive(Default)]
pub(crate) struct Rows {
    /// Values per row (K, a multiple of 256).
    pub k: usize,
    /// M × K codes.
    pub qs: Plane<i8>,
    /// M × K/256 scales d.
    pub d: Plane<f32>,
    /// M × K/16 sums of 16 codes.
    pub bsums: Plane<i16>,
}

/// One row of [`Rows`].
#[derive(Clone, Copy)]
pub(crate) struct Row<'a> {
    pub qs: &'a [i8],
    pub d: &'a [f32],
    pub bsums: &'a [i16],
}

impl Row<'_> {
    /// A row of no blocks.
    pub const EMPTY: Row<'static> = Row {
        qs: &[],
        d: &[],
        bsums: &[],
    };
}

impl Rows {
    /// Quantizes `m` rows of `k` values (`x.len() == m·k`, k a multiple of 256).
    #[cfg(test)]
    pub fn quantize(x: &[f32], m: usize, k: usize) -> Rows {
        let mut rows = Rows::with_capacity(m, k).expect("q8_K rows");
        rows.quantize_into(x, m);
        rows
    }

    /// Empty rows of `k` values with room for `m` rows, allocated fallibly (a product's
    /// activation tile, reused tile after tile). Errors:
    /// [`Error::OutOfMemory`](crate::error::Error::OutOfMemory),
    /// [`Error::Overflow`](crate::error::Error::Overflow).
    pub fn with_capacity(m: usize, k: usize) -> Result<Rows> {
        let mk = mul(m, k, "q8_K codes")?;
        Ok(Rows {
            k,
            qs: Plane::with_capacity(mk, "q8_K activation codes")?,
            d: Plane::with_capacity(mk / QK_K, "q8_K activation scales")?,
            bsums: Plane::with_capacity(mk / 16, "q8_K 16-code sums")?,
        })
    }

    /// Quantizes `m` rows of K values (`x.len() == m·K`) into these planes, replacing what
    /// they held. Allocates only beyond the capacity the planes already have.
    pub fn quantize_into(&mut self, x: &[f32], m: usize) {
        let k = self.k;
        debug_assert_eq!(x.len(), m * k);
        debug_assert_eq!(k % QK_K, 0);
        let nb = m * k / QK_K;
        self.qs.clear();
        self.qs.resize(m * k, 0);
        self.d.clear();
        self.d.resize(nb, 0.0);
        self.bsums.clear();
        self.bsums.resize(16 * nb, 0);
        for (i, xb) in x.chunks_exact(QK_K).enumerate() {
            let b = quantize_block(xb);
            self.qs[i * QK_K..(i + 1) * QK_K].copy_from_slice(&b.qs);
            self.d[i] = b.d;
            self.bsums[16 * i..16 * i + 16].copy_from_slice(&b.bsums);
        }
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> Row<'_> {
        let nb = self.k / QK_K;
        Row {
            qs: &self.qs[i * self.k..(i + 1) * self.k],
            d: &self.d[i * nb..(i + 1) * nb],
            bsums: &self.bsums[16 * i * nb..16 * (i + 1) * nb],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// The plain equations of the module docs, written independently: the first value of
    /// largest magnitude, iscale = −127/max, round half to even, min 127, d = 1/iscale.
    fn plain(x: &[f32]) -> (f32, Vec<i8>) {
        let mut best = 0usize;
        for j in 0..x.len() {
            if x[j].abs() > x[best].abs() {
                best = j;
            }
        }
        let max = x[best];
        if max == 0.0 {
            return (0.0, vec![0; x.len()]);
        }
        let iscale = -127.0f32 / max;
        let codes = x
            .iter()
            .map(|&v| {
                let p = iscale * v;
                let f = p.floor();
                let r = if p - f > 0.5 || (p - f == 0.5 && f % 2.0 != 0.0) {
                    f + 1.0
                } else {
                    f
                };
                r.min(127.0) as i8
            })
            .collect();
        (1.0 / iscale, codes)
    }

    #[test]
    fn hand_worked_block_with_ties_and_a_negative_max() {
        // max = −127 (first of largest magnitude: the later +127 is a tie and loses):
        // iscale = −127/−127 = 1, d = 1; codes are x rounded half to even.
        let mut x = [0f32; 256];
        x[0] = 2.5; // → 2 (even)
        x[1] = -3.5; // → −4 (even)
        x[2] = -127.0; // the max → −127
        x[3] = 127.0; // → 127
        x[4] = 0.5; // → 0
        x[5] = 1.5; // → 2
        x[17] = -0.49; // → 0
        x[18] = 7.0;
        let b = quantize_block(&x);
        assert_eq!(b.d, 1.0);
        assert_eq!(&b.qs[..6], &[2, -4, -127, 127, 0, 2]);
        assert_eq!((b.qs[17], b.qs[18]), (0, 7));
        assert_eq!(b.bsums[0], 0);
        assert_eq!(b.bsums[1], 7);
        // A positive max: iscale = −127/254 = −0.5, d = −2; x = 3 → −1.5 → −2; 5 → −2.5
        // → −2; 254 → −127; −254 (a tie with the max, later) → 127.
        let mut x = [0f32; 256];
        x[0] = 3.0;
        x[1] = 5.0;
        x[2] = 254.0;
        x[3] = -254.0;
        let b = quantize_block(&x);
        assert_eq!(b.d, -2.0);
        assert_eq!(&b.qs[..4], &[-2, -2, -127, 127]);
        assert_eq!(b.bsums[0], -4);
        // A negative max of 1: iscale = 127, d = 1/127; the opposite value gives +127.
        let mut x = [0f32; 256];
        x[0] = -1.0;
        x[1] = 1.0;
        x[2] = 0.5; // 63.5 → 64 (even)
        let b = quantize_block(&x);
        assert_eq!(b.d, 1.0 / 127.0);
        assert_eq!(&b.qs[..3], &[-127, 127, 64]);
    }

    #[test]
    fn zero_tiny_and_non_finite_blocks() {
        let b = quantize_block(&[0.0; 256]);
        assert_eq!((b.d.to_bits(), b.qs, b.bsums), (0, [0; 256], [0; 16]));
        let b = quantize_block(&[-0.0; 256]);
        assert_eq!((b.d.to_bits(), b.qs), (0, [0; 256]));
        let mut x = [1.0f32; 256];
        x[200] = f32::NAN;
        let b = quantize_block(&x);
        assert!(b.d.is_nan());
        assert_eq!((b.qs, b.bsums), ([0; 256], [0; 16]));
        x[200] = f32::NEG_INFINITY;
        assert!(quantize_block(&x).d.is_nan());
        // iscale overflows: codes 0, d = 1/(−Inf) = −0.
        let b = quantize_block(&[1e-39; 256]);
        assert_eq!((b.d.to_bits(), b.qs), ((-0.0f32).to_bits(), [0; 256]));
    }

    #[test]
    fn random_blocks_match_the_plain_equations() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        for case in 0..200 {
            let scale = [1.0f32, 1e-30, 3e30, 0.01][case % 4];
            let x: Vec<f32> = (0..256)
                .map(|_| {
                    let v = (next() as f32 / u32::MAX as f32 - 0.5) * scale;
                    // Exact halves now and then: small integers over a max of 127.
                    if case % 3 == 0 {
                        (v * 254.0 / scale).round() / 2.0
                    } else {
                        v
                    }
                })
                .collect();
            let b = quantize_block(&x);
            let (d, codes) = plain(&x);
            assert_eq!(b.d.to_bits(), d.to_bits(), "case {case}");
            assert_eq!(&b.qs[..], &codes[..], "case {case}");
            for (i, s) in b.bsums.iter().enumerate() {
                let want: i32 = codes[16 * i..16 * i + 16].iter().map(|&q| q as i32).sum();
                assert_eq!(*s as i32, want);
            }
        }
    }

    #[test]
    fn bytes_and_bad_lengths() {
        let mut x = vec![0f32; 512];
        x[0] = -127.0;
        x[300] = 1.0;
        let mut out = vec![0xAAu8; 2 * BLOCK_Q8_K_BYTES];
        quantize_row_q8_k(&x, &mut out).unwrap();
        assert_eq!(&out[0..4], &1f32.to_le_bytes());
        assert_eq!(out[4], (-127i8) as u8);
        assert_eq!(&out[260..262], &(-127i16).to_le_bytes());
        let o = BLOCK_Q8_K_BYTES;
        assert_eq!(&out[o..o + 4], &(-1.0f32 / 127.0).to_le_bytes());
        assert_eq!(out[o + 4 + 44], (-127i8) as u8);
        assert_eq!(&out[o + 260 + 4..o + 262 + 4], &(-127i16).to_le_bytes());
        assert!(matches!(
            quantize_row_q8_k(&[0.0; 255], &mut out),
            Err(Error::BadShape(_))
        ));
        assert!(matches!(
            quantize_row_q8_k(&[0.0; 768], &mut out),
            Err(Error::BufferTooSmall { .. })
        ));
    }
}
