//! nvfp4 (spec §3.3): the quantizer, the payload validator and the scale swizzle.

use super::boundary::{bytes, call, float_source, mut_planes, out_slice};
use super::quantize::ninfer_mut_bytes;
use super::view::{from_c, ninfer_weight_view};
use crate::error::{Error, Status, to_usize};
use crate::formats::nvfp4;
use crate::layouts::block_scale;
use crate::registry::Format;
use std::ffi::c_void;

/// Quantizes a row-major `rows × cols` source made of `sources` stacked matrices (each
/// `rows / sources` rows) to nvfp4 in `block_scale_k16_m128x4_v1`. Same argument
/// conventions as `ninfer_quantize_grouped`.
///
/// `format` must be `NINFER_FORMAT_NVFP4`. `src` holds rows × cols elements of `src_dtype`
/// (`NINFER_DTYPE_*`, native-endian, aligned); `src_bytes` is its length in BYTES and must
/// be exactly rows × cols × element size. Per source, `d_w = binary32(2688 / amax)` (1 for
/// an all-zero source); per 16-value block, with binary32 round-to-nearest-even at every
/// step: `s = E4M3FN_satfinite(d_w · (bmax / 6))`, `inv = s ? 1 / (e4m3(s) · (1 / d_w)) : 0`,
/// codes `E2M1_satfinite(x · inv)` (the production algorithm, reproducible bit for bit).
///
/// `planes`: `NINFER_MAX_PLANES` (3) `ninfer_mut_bytes`, all used: `planes[0]` codes =
/// rows × cols/2 bytes (element 2j in the low nibble); `planes[1]` = the swizzled E4M3FN
/// scale plane (`ninfer_layout_plane_sizes` plane 1; padding written as 0); `planes[2]`
/// divisors = 4 × `sources` bytes, little-endian binary32, in stacking order.
///
/// Errors: `INVALID_ARGUMENT` (`format` not nvfp4), `UNKNOWN_FORMAT`, `BAD_SHAPE` (a zero
/// dimension, cols not a multiple of 16, `sources` 0 or not dividing rows),
/// `SIZE_MISMATCH` (source in bytes, or a plane), `UNKNOWN_DTYPE`, `NULL_POINTER`,
/// `MISALIGNED`, `OVERFLOW`, `NON_FINITE_SOURCE` (row, column), `SCALE_OVERFLOW` (a source
/// whose amax is so small that `d_w` or a block's `inv` is not finite in binary32),
/// `UNSUPPORTED` (FTZ/DAZ active). Nothing is written unless the status is OK.
///
/// # Safety
/// `src` must have `src_bytes` readable bytes; `planes` must point to 3 `ninfer_mut_bytes`
/// whose ranges are writable and overlap neither `src` nor each other.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_nvfp4_quantize(
    format: u32,
    src: *const c_void,
    src_bytes: usize,
    src_dtype: u32,
    rows: u64,
    cols: u64,
    sources: u64,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        if format != Format::Nvfp4 {
            return Err(Error::InvalidArgument(format!(
                "ninfer_nvfp4_quantize encodes nvfp4, not {format}"
            )));
        }
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let sources = to_usize(sources, "sources")?;
        let src = unsafe { float_source(src, src_bytes, src_dtype, rows, cols) }?;
        let planes = unsafe { mut_planes(planes, ["codes", "scales", "divisors"]) }?;
        nvfp4::nvfp4_quantize(src, rows, cols, sources, planes)
    })
}

/// Checks an nvfp4 view against §3.3 and its layout: every divisor finite and > 0; every
/// block scale with sign bit zero and not NaN (0x00..0x7E; −0 0x80 refused); every padding
/// byte of the swizzled scale plane zero. The divisor count (planes[2].len / 4) must divide
/// rows (checked with the view).
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `INVALID_ARGUMENT` for a
/// view of another format, `INVALID_ENCODING` (first divisor, else lowest row and K-block,
/// else first padding byte).
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_nvfp4_validate(view: *const ninfer_weight_view) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        nvfp4::validate(&v)
    })
}

/// Swizzles linear row-major E4M3FN block scales `[rows, k_blocks]` (as checkpoints store
/// them; k_blocks = K / 16) into the 128×4 layout of `block_scale_k16_m128x4_v1`: byte
/// `(m/128)·kt·512 + (kb/4)·512 + (m%32)·16 + ((m%128)/32)·4 + kb%4` with
/// kt = ceil(k_blocks/4); padding zero-filled. `out_len` must be
/// round_up(rows,128) × round_up(k_blocks,4). Words are copied, never checked or changed.
///
/// Errors: `BAD_SHAPE` (`rows` or `k_blocks` 0, as every export refuses a zero
/// dimension), `SIZE_MISMATCH` (`linear_len` ≠ rows × k_blocks, or `out_len`),
/// `NULL_POINTER`, `OVERFLOW`. Nothing is written unless the status is OK.
///
/// # Safety
/// `linear` readable for `linear_len` bytes; `out` writable for `out_len`, not overlapping.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_nvfp4_pack_scales(
    rows: u64,
    k_blocks: u64,
    linear: *const u8,
    linear_len: usize,
    out: *mut u8,
    out_len: usize,
) -> Status {
    call(|| {
        let rows = to_usize(rows, "rows")?;
        let nkb = to_usize(k_blocks, "k_blocks")?;
        let lin = unsafe { bytes(linear, linear_len, "linear") }?;
        let out = unsafe { out_slice(out, out_len, "out") }?;
        block_scale::pack_scales(rows, nkb, lin, out)
    })
}

/// The inverse of `ninfer_nvfp4_pack_scales`: extracts the linear `[rows, k_blocks]`
/// scales from a swizzled plane (padding ignored).
///
/// Errors: `BAD_SHAPE` (`rows` or `k_blocks` 0), `SIZE_MISMATCH`, `NULL_POINTER`,
/// `OVERFLOW`. Nothing is written unless the status is OK.
///
/// # Safety
/// `swizzled` readable for `swizzled_len` bytes; `out` writable for `out_len`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_nvfp4_unpack_scales(
    rows: u64,
    k_blocks: u64,
    swizzled: *const u8,
    swizzled_len: usize,
    out: *mut u8,
    out_len: usize,
) -> Status {
    call(|| {
        let rows = to_usize(rows, "rows")?;
        let nkb = to_usize(k_blocks, "k_blocks")?;
        let sw = unsafe { bytes(swizzled, swizzled_len, "swizzled") }?;
        let out = unsafe { out_slice(out, out_len, "out") }?;
        block_scale::unpack_scales(rows, nkb, sw, out)
    })
}
