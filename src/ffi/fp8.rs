//! Row-scaled FP8 (spec §3.4): the fp8_row_maxabs encoder and the payload validator.

use super::boundary::{call, in_slice, out_slice};
use super::view::{from_c, ninfer_weight_view};
use crate::dtype::Dtype;
use crate::error::{Result, Status, to_usize};
use crate::formats::float_source::FloatSource;
use crate::formats::fp8_row;
use crate::registry::Format;
use std::ffi::c_void;

/// A [`FloatSource`] from a C `(dtype, pointer, element count)` triple.
///
/// # Safety
/// When non-NULL, `src` must point to `len` readable elements of `dtype`, valid for `'a`.
pub(crate) unsafe fn float_source<'a>(
    dtype: u32,
    src: *const c_void,
    len: usize,
) -> Result<FloatSource<'a>> {
    Ok(match Dtype::from_u32(dtype)? {
        Dtype::F32 => FloatSource::F32(unsafe { in_slice(src.cast::<f32>(), len, "src") }?),
        Dtype::Bf16 => FloatSource::Bf16(unsafe { in_slice(src.cast::<u16>(), len, "src") }?),
        Dtype::F16 => FloatSource::F16(unsafe { in_slice(src.cast::<u16>(), len, "src") }?),
    })
}

/// Quantizes a row-major `rows × cols` source with the `fp8_row_maxabs` method into the
/// planes of `format` (`NINFER_FORMAT_FP8_E4M3FN_ROW_BF16` or `..._ROW_FP16`).
///
/// `src` holds `src_len` = rows × cols elements of `src_dtype` (`NINFER_DTYPE_*`,
/// native-endian, aligned to the element size). Every value is first rounded to BF16;
/// per row the scale is binary32(max|x| / 448) rounded to the scale type (binary16: zero
/// rescued to 2^-24, overflow refused; BF16: raised to at least 2^-126), codes are
/// E4M3FN(RNE(clamp(x · binary32(1 / scale), ±448))); all-zero rows store +0 scale and
/// codes. Exact rules: `docs/layouts.md` and spec §3.4.
///
/// Output planes, lengths exactly as `ninfer_layout_plane_sizes` gives:
/// - bf16 (`row_scale_v1`): `plane0` = rows × cols codes, `plane1` = rows BF16 LE scales;
/// - fp16 (`row_interleaved_v1`): `plane0` = rows × (2 + cols) bytes, each row its
///   binary16 LE scale then its codes; `plane1` must be `{NULL, 0}`.
///
/// Errors: `INVALID_ARGUMENT` (not an fp8 row format), `UNKNOWN_FORMAT`, `UNKNOWN_DTYPE`,
/// `BAD_SHAPE`, `SIZE_MISMATCH` (source or a plane), `NULL_POINTER`, `MISALIGNED`,
/// `OVERFLOW`, `NON_FINITE_SOURCE` (a value not finite after BF16 rounding; message has row
/// and column), `SCALE_OVERFLOW` (binary16 scale rounds to infinity; message has the row).
/// Nothing is written unless the status is OK.
///
/// # Safety
/// `src` must have `src_len` readable elements; `plane0`/`plane1` their lengths in
/// writable bytes, not overlapping `src` or each other.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_fp8_row_maxabs(
    format: u32,
    src_dtype: u32,
    src: *const c_void,
    src_len: usize,
    rows: u64,
    cols: u64,
    plane0: *mut u8,
    plane0_len: usize,
    plane1: *mut u8,
    plane1_len: usize,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let src = unsafe { float_source(src_dtype, src, src_len) }?;
        let p0 = unsafe { out_slice(plane0, plane0_len, "plane0") }?;
        let p1 = unsafe { out_slice(plane1, plane1_len, "plane1") }?;
        fp8_row::fp8_row_maxabs(format, src, rows, cols, [p0, p1])
    })
}

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

/// Lays out logical FP8 words in the planes of `format` (`..._ROW_BF16` → `plane0` codes,
/// `plane1` BF16 LE scales; `..._ROW_FP16` → `plane0` interleaved rows, `plane1` empty):
/// `codes` = rows × cols E4M3FN words row-major, `scales` = rows 16-bit scale words
/// (native `uint16_t`: BF16 or binary16 bits). Words are copied unchanged, not validated:
/// follow with `ninfer_fp8_row_validate` on the result.
///
/// Errors: `INVALID_ARGUMENT`, `UNKNOWN_FORMAT`, `BAD_SHAPE`, `SIZE_MISMATCH`,
/// `NULL_POINTER`, `MISALIGNED`, `OVERFLOW`. Nothing is written unless the status is OK.
///
/// # Safety
/// Every pointer valid for its length; outputs writable and not overlapping the inputs.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_fp8_row_pack(
    format: u32,
    rows: u64,
    cols: u64,
    codes: *const u8,
    codes_len: usize,
    scales: *const u16,
    scales_len: usize,
    plane0: *mut u8,
    plane0_len: usize,
    plane1: *mut u8,
    plane1_len: usize,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let codes = unsafe { in_slice(codes, codes_len, "codes") }?;
        let scales = unsafe { in_slice(scales, scales_len, "scales") }?;
        let p0 = unsafe { out_slice(plane0, plane0_len, "plane0") }?;
        let p1 = unsafe { out_slice(plane1, plane1_len, "plane1") }?;
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
