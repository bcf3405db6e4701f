//! What a consumer needs to check a product against the named criterion
//! `linear_f32acc_v1` (docs/linear.md) with its own f64 oracle: the activation values a
//! product multiplies, and the element conversions of dense buffers.
//!
//! - [`quantize_row_q8_1`]: the q8_1 activation profile (every GGUF product, and the
//!   opt-in profile of the grouped formats and nvfp4): ggml's `block_q8_1` bytes of a row
//!   and the represented values x̂ (`x̂_j = f32(stored d) · q_j`), computed by the same code
//!   the products use ([`crate::linear::q8_1`]).
//! - [`quantize_row_q8_k`]: the opt-in q8_K activation profile of the GGUF k-quants and
//!   256-value i-quants: ggml's `block_q8_K` bytes of a row ([`crate::linear::q8_k`]);
//!   x̂_j = d · q_j, formed by the oracle in f64 (exact there, not in binary32).
//! - [`convert`]: f32 / bf16 / binary16 buffers into each other. Widening is exact (the
//!   `exact` profile multiplies a bf16 or f16 activation as that exact f32 value);
//!   narrowing rounds to nearest, ties to even (binary16 overflow gives ±Inf, NaN stays NaN),
//!   as a bf16 product output and a binary16 q8_1 scale are rounded.

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::formats::float_source::FloatSource;
use crate::linear::q8_1::{BLOCK_Q8_1_BYTES, QK8_1};

pub use crate::linear::q8_k::quantize_row_q8_k;

/// Quantizes one activation row `x` (K values, K a positive multiple of 32) as the q8_1
/// profile does: `blocks` (when not empty) receives K/32 ggml `block_q8_1` of 36 bytes
/// (`d` binary16 @0, `s` binary16 @2, 32 int8 codes @4, little-endian), `x_hat` (when not
/// empty) the K represented values `f32(d) · q_j` (exact in binary32; NaN for a block with a
/// non-finite value; ±Inf or NaN for a block whose amax exceeds 65504·127). Longer buffers
/// are accepted (only the prefix is written).
///
/// Errors (nothing written): [`Error::BadShape`] when K is not a positive multiple of 32,
/// [`Error::BufferTooSmall`] for a non-empty `blocks` shorter than K/32·36 bytes or a
/// non-empty `x_hat` shorter than K values, [`Error::InvalidArgument`] when both are empty.
pub fn quantize_row_q8_1(x: &[f32], blocks: &mut [u8], x_hat: &mut [f32]) -> Result<()> {
    if x.is_empty() || !x.len().is_multiple_of(QK8_1) {
        return Err(Error::BadShape(format!(
            "q8_1: {} values is not a positive multiple of 32",
            x.len()
        )));
    }
    if blocks.is_empty() && x_hat.is_empty() {
        return Err(Error::InvalidArgument(
            "q8_1: neither blocks nor x_hat requested".into(),
        ));
    }
    let nb = x.len() / QK8_1 * BLOCK_Q8_1_BYTES;
    if !blocks.is_empty() && blocks.len() < nb {
        return Err(Error::BufferTooSmall {
            what: "q8_1 blocks (bytes)",
            needed: nb,
            actual: blocks.len(),
        });
    }
    if !x_hat.is_empty() && x_hat.len() < x.len() {
        return Err(Error::BufferTooSmall {
            what: "q8_1 values x_hat (floats)",
            needed: x.len(),
            actual: x_hat.len(),
        });
    }
    // One block at a time through a 36-byte buffer: no allocation sized by K.
    let mut one = [0u8; BLOCK_Q8_1_BYTES];
    for (b, xb) in x.chunks_exact(QK8_1).enumerate() {
        crate::linear::q8_1::quantize_row_q8_1(xb, &mut one)?;
        if !blocks.is_empty() {
            blocks[b * BLOCK_Q8_1_BYTES..(b + 1) * BLOCK_Q8_1_BYTES].copy_from_slice(&one);
        }
        if !x_hat.is_empty() {
            let d = half::f16::from_bits(u16::from_le_bytes([one[0], one[1]])).to_f32();
            for (o, &q) in x_hat[b * QK8_1..(b + 1) * QK8_1].iter_mut().zip(&one[4..]) {
                *o = d * (q as i8) as f32;
            }
        }
    }
    Ok(())
}

/// Converts every element of `src` to `dst` (native-endian words of `dst_dtype`, at least
/// `src.len() × dst_dtype.size()` bytes; only that prefix is written): f32 ← bf16 / f16
/// exactly; bf16 / f16 ← f32, or between the two 16-bit types through the exact f32 value,
/// rounded to nearest, ties to even (binary16 overflow gives ±Inf; NaN stays NaN, its
/// payload truncated); a same-type conversion copies the words.
///
/// Errors (nothing written): [`Error::BufferTooSmall`], [`Error::Overflow`].
pub fn convert(src: &FloatSource<'_>, dst_dtype: Dtype, dst: &mut [u8]) -> Result<()> {
    let n = src.len();
    let needed = n
        .checked_mul(dst_dtype.size())
        .ok_or_else(|| Error::Overflow(format!("{n} values")))?;
    if dst.len() < needed {
        return Err(Error::BufferTooSmall {
            what: "converted values (bytes)",
            needed,
            actual: dst.len(),
        });
    }
    let dst = &mut dst[..needed];
    match (src, dst_dtype) {
        // Same type: the words as they are (NaN payloads included).
        (FloatSource::F32(s), Dtype::F32) => {
            for (o, v) in dst.chunks_exact_mut(4).zip(s.iter()) {
                o.copy_from_slice(&v.to_bits().to_ne_bytes());
            }
        }
        (FloatSource::Bf16(s), Dtype::Bf16) | (FloatSource::F16(s), Dtype::F16) => {
            for (o, w) in dst.chunks_exact_mut(2).zip(s.iter()) {
                o.copy_from_slice(&w.to_ne_bytes());
            }
        }
        (_, Dtype::F32) => {
            for (i, o) in dst.chunks_exact_mut(4).enumerate() {
                o.copy_from_slice(&src.get(i).to_bits().to_ne_bytes());
            }
        }
        (_, Dtype::Bf16) => {
            for (i, o) in dst.chunks_exact_mut(2).enumerate() {
                o.copy_from_slice(&half::bf16::from_f32(src.get(i)).to_bits().to_ne_bytes());
            }
        }
        (_, Dtype::F16) => {
            for (i, o) in dst.chunks_exact_mut(2).enumerate() {
                o.copy_from_slice(&half::f16::from_f32(src.get(i)).to_bits().to_ne_bytes());
            }
        }
    }
    Ok(())
}
