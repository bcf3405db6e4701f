//! Row-scaled FP8 (spec §3.4): the fp8_row_maxabs encoder and the payload validator.

use super::boundary::{call, float_source, in_slice, mut_planes, out_slice, unused_plane};
use super::quantize::ninfer_mut_bytes;
use super::view::{from_c, ninfer_weight_view};
use crate::error::{Status, to_usize};
use crate::formats::fp8_row;
use crate::registry::Format;
use std::ffi::c_void;

/// Quantizes a row-major `rows × cols` source with the `fp8_row_maxabs` method into the
/// planes of `format` (`NINFER_FORMAT_FP8_E4M3FN_ROW_BF16` or `..._ROW_FP16`). Same
/// argument conventions as `ninfer_quantize_grouped`.
///
/// `src` holds rows × cols elements of `src_dtype` (`NINFER_DTYPE_*`, native-endian,
/// aligned to the element size); `src_bytes` is its length in BYTES and must be exactly
/// rows × cols × element size. Every value is first rounded to BF16;
/// per row the scale is binary32(max|x| / 448) rounded to the scale type (binary16: zero
/// rescued to 2^-24, overflow refused; BF16: raised to at least 2^-126), codes are
/// E4M3FN(RNE(clamp(x · binary32(1 / scale), ±448))); all-zero rows store +0 scale and
/// codes. Exact rules: `docs/layouts.md` and spec §3.4.
///
/// `planes`: an array of `NINFER_MAX_PLANES` (3) `ninfer_mut_bytes`, lengths exactly as
/// `ninfer_layout_plane_sizes` gives for the format's layout:
/// - bf16 (`row_scale_v1`): `planes[0]` = rows × cols codes, `planes[1]` = rows BF16 LE
///   scales, `planes[2]` unused;
/// - fp16 (`row_interleaved_v1`): `planes[0]` = rows × (2 + cols) bytes, each row its
///   binary16 LE scale then its codes; `planes[1]` and `planes[2]` unused.
///
/// Unused entries must be `{NULL, 0}` (a non-zero length is `SIZE_MISMATCH`).
///
/// Errors: `INVALID_ARGUMENT` (not an fp8 row format), `UNKNOWN_FORMAT`, `UNKNOWN_DTYPE`,
/// `BAD_SHAPE`, `SIZE_MISMATCH` (source in bytes, or a plane), `NULL_POINTER`, `MISALIGNED`,
/// `OVERFLOW`, `NON_FINITE_SOURCE` (a value not finite after BF16 rounding; message has row
/// and column), `SCALE_OVERFLOW` (binary16 scale rounds to infinity; message has the row),
/// `UNSUPPORTED` (FTZ/DAZ active). Nothing is written unless the status is OK.
///
/// # Safety
/// `src` must have `src_bytes` readable bytes; `planes` must point to 3 `ninfer_mut_bytes`
/// whose ranges are writable and overlap neither `src` nor each other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_fp8_row_maxabs(
    format: u32,
    src: *const c_void,
    src_bytes: usize,
    src_dtype: u32,
    rows: u64,
    cols: u64,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let src = unsafe { float_source(src, src_bytes, src_dtype, rows, cols) }?;
        let [p0, p1, p2] = unsafe { mut_planes(planes, PLANE_NAMES) }?;
        unused_plane(p2, PLANE_NAMES[2])?;
        fp8_row::fp8_row_maxabs(format, src, rows, cols, [p0, p1])
    })
}

/// Names of the `planes` entries of the fp8 row functions in messages.
const PLANE_NAMES: [&str; 3] = ["planes[0]", "planes[1]", "planes[2]"];

/// Checks every row of a row-scaled FP8 view against §3.4: no NaN code (0x7F, 0xFF); a
/// row scale with sign bit zero that is finite (+0 and subnormals accepted; −0, negative,
/// infinite and NaN refused); a +0 scale only with signed-zero codes (0x00, 0x80).
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `INVALID_ARGUMENT` for a
/// view of another format, `INVALID_ENCODING` naming the lowest bad row and its column
/// (or the row scale).
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_fp8_row_validate(view: *const ninfer_weight_view) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        fp8_row::validate(&v)
    })
}

/// Lays out logical FP8 words in the planes of `format`: `codes` = rows × cols E4M3FN
/// words row-major (`codes_len` bytes), `scales` = rows 16-bit scale words (native
/// `uint16_t`: BF16 or binary16 bits; `scales_len` counts words). Words are copied
/// unchanged, not validated: follow with `ninfer_fp8_row_validate` on the result.
///
/// `planes`: `NINFER_MAX_PLANES` entries as for `ninfer_fp8_row_maxabs` (`..._ROW_BF16`:
/// `planes[0]` codes, `planes[1]` BF16 LE scales; `..._ROW_FP16`: `planes[0]` interleaved
/// rows; unused entries `{NULL, 0}`).
///
/// Errors: `INVALID_ARGUMENT`, `UNKNOWN_FORMAT`, `BAD_SHAPE`, `SIZE_MISMATCH`,
/// `NULL_POINTER`, `MISALIGNED`, `OVERFLOW`. Nothing is written unless the status is OK.
///
/// # Safety
/// Every pointer valid for its length; `planes` as for `ninfer_fp8_row_maxabs`, not
/// overlapping the inputs.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_fp8_row_pack(
    format: u32,
    rows: u64,
    cols: u64,
    codes: *const u8,
    codes_len: usize,
    scales: *const u16,
    scales_len: usize,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let codes = unsafe { in_slice(codes, codes_len, "codes") }?;
        let scales = unsafe { in_slice(scales, scales_len, "scales") }?;
        let [p0, p1, p2] = unsafe { mut_planes(planes, PLANE_NAMES) }?;
        unused_plane(p2, PLANE_NAMES[2])?;
        fp8_row::pack(format, rows, cols, codes, scales, [p0, p1])
    })
}

/// The inverse of `ninfer_fp8_row_pack`: copies the logical words of a row-scaled FP8 view
/// into `codes` (rows × cols, row-major) and `scales` (rows 16-bit words), unchanged.
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `INVALID_ARGUMENT` (another
/// format), `SIZE_MISMATCH`, `NULL_POINTER`, `MISALIGNED`.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; outputs writable for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_fp8_row_unpack(
    view: *const ninfer_weight_view,
    codes: *mut u8,
    codes_len: usize,
    scales: *mut u16,
    scales_len: usize,
) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        let codes = unsafe { out_slice(codes, codes_len, "codes") }?;
        let scales = unsafe { out_slice(scales, scales_len, "scales") }?;
        fp8_row::unpack(&v, codes, scales)
    })
}
