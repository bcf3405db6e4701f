//! What a consumer needs to check a product: the q8_1 and q8_K activation quantizers and
//! the dense element conversions.

use super::boundary::{call, in_slice, out_slice};
use crate::dtype::Dtype;
use crate::error::{Error, Status};
use crate::formats::float_source::FloatSource;
use crate::reference;
use std::ffi::c_void;

/// Quantizes one activation row as the q8_1 activation profile does (every GGUF product,
/// and `NINFER_ACTIVATION_Q8_1` on the grouped formats and nvfp4): ggml's
/// `quantize_row_q8_1_ref` arithmetic, computed by the code the products use, so that a
/// consumer's f64 oracle can use the values the product multiplies (docs/linear.md, "Checking
/// a product").
///
/// - `x`, `k`: K f32 values (4-byte aligned), K a positive multiple of 32.
/// - `blocks`, `blocks_len`: NULL and 0 to skip, else at least K/32 × 36 bytes receiving
///   ggml `block_q8_1`s: binary16 `d` at byte 0, binary16 `s` at byte 2 (little-endian),
///   32 int8 codes `q` at bytes 4..36.
/// - `x_hat`, `x_hat_len`: NULL and 0 to skip, else at least K floats (4-byte aligned)
///   receiving the represented values `x̂_j = f32(d) · q_j` (exact in binary32). A block
///   with a non-finite value gives NaN values; a block whose max |x| exceeds 65504·127 has
///   an infinite `d` (±Inf where q ≠ 0, NaN where q = 0).
///
/// Longer buffers are accepted; only the prefix is written.
///
/// Errors: `BAD_SHAPE` (K not a positive multiple of 32), `INVALID_ARGUMENT` (both outputs
/// skipped), `BUFFER_TOO_SMALL`, `NULL_POINTER` (NULL with a non-zero length),
/// `MISALIGNED`, `OVERFLOW`. Nothing is written unless the status is OK.
///
/// # Safety
/// `x` must have `k` readable floats; `blocks` `blocks_len` writable bytes and `x_hat`
/// `x_hat_len` writable floats, neither overlapping `x` nor each other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_quantize_row_q8_1(
    x: *const f32,
    k: usize,
    blocks: *mut u8,
    blocks_len: usize,
    x_hat: *mut f32,
    x_hat_len: usize,
) -> Status {
    call(|| {
        let x = unsafe { in_slice(x, k, "x") }?;
        let blocks = unsafe { out_slice(blocks, blocks_len, "blocks") }?;
        let x_hat = unsafe { out_slice(x_hat, x_hat_len, "x_hat") }?;
        reference::quantize_row_q8_1(x, blocks, x_hat)
    })
}

/// Quantizes one activation row as the opt-in q8_K activation profile does
/// (`NINFER_ACTIVATION_Q8_K` on the GGUF k-quants and 256-value i-quants): ggml's
/// `quantize_row_q8_K_ref` arithmetic, computed by the code the products use, so that a
/// consumer's f64 oracle can use the values the product multiplies (docs/linear.md, "Checking
/// a product").
///
/// - `x`, `k`: K f32 values (4-byte aligned), K a positive multiple of 256.
/// - `blocks`, `blocks_len`: at least K/256 × 292 bytes receiving ggml `block_q8_K`s:
///   binary32 `d` at byte 0 (little-endian), 256 int8 codes `q` at bytes 4..260, 16 int16
///   sums `bsums` at bytes 260..292 (little-endian).
///
/// The arithmetic, all in binary32, per 256 values: `max` = the first value of largest
/// magnitude (a later value of equal magnitude, of either sign, does not replace it); when
/// `max` = 0 every code is 0 and `d` = 0; else `iscale = −127 / max`,
/// `q_j = min(127, round_half_even(iscale · x_j))`, `d = 1 / iscale`;
/// `bsums[i] = Σ_{j<16} q_{16i+j}`. The represented values are `x̂_j = d · q_j` as real
/// numbers: exact in binary64, not in binary32, so an oracle forms them in f64.
///
/// Where ggml's behaviour is undefined or accidental: a block with a non-finite value gets
/// `d` = NaN and zero codes and sums (every output it touches is NaN); when `iscale`
/// overflows (|max| < 127 / FLT_MAX) the codes are 0 and `d = 1 / iscale` = ∓0 (x̂ = 0); a
/// zero block's `bsums` are 0 (ggml leaves them unwritten).
///
/// Longer buffers are accepted; only the prefix is written.
///
/// Errors: `BAD_SHAPE` (K not a positive multiple of 256), `BUFFER_TOO_SMALL`,
/// `NULL_POINTER` (NULL with a non-zero length), `MISALIGNED`, `OVERFLOW`. Nothing is
/// written unless the status is OK.
///
/// # Safety
/// `x` must have `k` readable floats and `blocks` `blocks_len` writable bytes, not
/// overlapping `x`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_quantize_row_q8_k(
    x: *const f32,
    k: usize,
    blocks: *mut u8,
    blocks_len: usize,
) -> Status {
    call(|| {
        let x = unsafe { in_slice(x, k, "x") }?;
        let blocks = unsafe { out_slice(blocks, blocks_len, "blocks") }?;
        reference::quantize_row_q8_k(x, blocks)
    })
}

/// Converts `src_bytes / element size` values of `src_dtype` at `src` into `dst_dtype` at
/// `dst` (`NINFER_DTYPE_F32`, `_BF16`, `_F16`; native-endian; each buffer aligned to its
/// element size): widening (bf16 or binary16 to f32) is exact; narrowing (f32 to bf16 or
/// binary16, and between the two 16-bit types through the exact f32 value) rounds to
/// nearest, ties to even, binary16 overflow giving ±Inf and NaN staying NaN; the same type
/// copies the words. These are the conversions of the criterion's recipe: a bf16 or f16
/// activation as the exact f32 value the `exact` profile multiplies, a bf16 product output
/// back to f32, binary16 words (q8_1 `d`, grouped scales) to f32.
///
/// `dst_bytes` must be at least the value count × the destination element size; only that
/// prefix is written.
///
/// Errors: `UNKNOWN_DTYPE`, `SIZE_MISMATCH` (`src_bytes` not a multiple of the source
/// element size), `BUFFER_TOO_SMALL`, `NULL_POINTER`, `MISALIGNED`, `OVERFLOW`. Nothing is
/// written unless the status is OK.
///
/// # Safety
/// `src` must have `src_bytes` readable bytes and `dst` `dst_bytes` writable bytes; the
/// two must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_convert(
    src: *const c_void,
    src_bytes: usize,
    src_dtype: u32,
    dst: *mut c_void,
    dst_bytes: usize,
    dst_dtype: u32,
) -> Status {
    call(|| {
        let from = Dtype::from_u32(src_dtype)?;
        let to = Dtype::from_u32(dst_dtype)?;
        if !src_bytes.is_multiple_of(from.size()) {
            return Err(Error::SizeMismatch {
                plane: if from.size() == 4 {
                    "source (whole 4-byte elements)"
                } else {
                    "source (whole 2-byte elements)"
                },
                unit: "bytes",
                expected: src_bytes / from.size() * from.size(),
                actual: src_bytes,
            });
        }
        let n = src_bytes / from.size();
        let src = match from {
            Dtype::F32 => FloatSource::F32(unsafe { in_slice(src.cast::<f32>(), n, "src") }?),
            Dtype::Bf16 => FloatSource::Bf16(unsafe { in_slice(src.cast::<u16>(), n, "src") }?),
            Dtype::F16 => FloatSource::F16(unsafe { in_slice(src.cast::<u16>(), n, "src") }?),
        };
        if !(dst as usize).is_multiple_of(to.size()) {
            return Err(Error::Misaligned("dst", to.size()));
        }
        let dst = unsafe { out_slice(dst.cast::<u8>(), dst_bytes, "dst") }?;
        reference::convert(&src, to, dst)
    })
}
