//! Row decoding.

use super::boundary::{call, out_slice};
use super::view::{from_c, ninfer_weight_view};
use crate::decode;
use crate::dtype::Dtype;
use crate::error::{Error, Status};
use std::ffi::c_void;

/// Decodes row `row` of `view` into `out[0 .. cols]` as f32: each value is the exact
/// represented value of its format's decoding equation (GGUF: bit-identical to ggml's
/// `dequantize_row_*`).
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `ROW_OUT_OF_RANGE`,
/// `BUFFER_TOO_SMALL` when `out_len < cols`, `MISALIGNED` (`out` not 4-byte aligned),
/// `UNSUPPORTED` for a format this build cannot decode (never a wrong value),
/// `INVALID_ENCODING` when the row breaks a rule of its format that decoding checks: a
/// grouped-format row with a NaN, ±Inf or −0 scale or non-canonical padding, an fp8 row
/// scale that is −0, negative, ±Inf or NaN (or a NaN code), an nvfp4 block scale that is
/// NaN or negative/−0 or a weight divisor that is not finite and > 0. GGUF blocks are not
/// refused: a NaN or ±Inf binary16 scale decodes to NaN/±Inf values as ggml's
/// `dequantize_row_*` does (use `ninfer_validate` to refuse them). Nothing is written
/// unless the status is OK.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `out` must have `out_len` writable floats.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_decode_row(
    view: *const ninfer_weight_view,
    row: u64,
    out: *mut f32,
    out_len: usize,
) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        let out = unsafe { out_slice(out, out_len, "out") }?;
        decode::decode_row(&v, row, out)
    })
}

/// Decodes row `row` into `out` as `dtype` (`NINFER_DTYPE_*`, native-endian): f32 as
/// `ninfer_decode_row`; bf16 and f16 rounded to nearest-even from the exact f32 value (f16
/// overflow gives ±Inf). `out_bytes` must be at least `cols × element size`, and `out`
/// must be aligned to the element size (4 bytes for f32, 2 for bf16/f16), as
/// `ninfer_decode_row` requires for `float *`.
///
/// Errors: as `ninfer_decode_row` (including `INVALID_ENCODING` for rows the decoder
/// refuses, and GGUF NaN/Inf scales decoding as ggml does), plus `UNKNOWN_DTYPE`;
/// `MISALIGNED` when `out` is not aligned to the element size; `BUFFER_TOO_SMALL` when
/// `out_bytes < cols × element size`.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `out` must have `out_bytes` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_decode_row_as(
    view: *const ninfer_weight_view,
    row: u64,
    dtype: u32,
    out: *mut u8,
    out_bytes: usize,
) -> Status {
    call(|| {
        let dtype = Dtype::from_u32(dtype)?;
        let v = unsafe { from_c(view) }?;
        // The element type's natural alignment, as for `float *` in ninfer_decode_row.
        if !(out as usize).is_multiple_of(dtype.size()) {
            return Err(Error::Misaligned("out", dtype.size()));
        }
        let out = unsafe { out_slice(out, out_bytes, "out") }?;
        decode::decode_row_as(&v, row, dtype, out)
    })
}

/// Decodes rows `first .. first + count` of `view` into `out`, row after row, as `out_dtype`
/// (`NINFER_DTYPE_F32`, `_BF16` or `_F16`, native-endian): the bulk form of
/// `ninfer_decode_row_as` (ggml's `to_float` over a slice of a tensor). Row `first + i`
/// starts at element `i × cols`; every value is exactly what `ninfer_decode_row_as` gives
/// for its row. `out_bytes` must be at least `count × cols × element size` (4 for f32, 2
/// for bf16/f16; only that prefix is written) and `out` aligned to the element size.
/// `count = 0` decodes nothing and succeeds. The payload is read only, so several threads
/// may decode disjoint (or the same) row ranges of one view at once.
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `UNKNOWN_DTYPE`,
/// `OVERFLOW` when `first + count` or the output size overflows, `ROW_OUT_OF_RANGE` when
/// `first + count > rows`, `BUFFER_TOO_SMALL`, `MISALIGNED`, `NULL_POINTER` (NULL `out`
/// with a non-zero `out_bytes`), `UNSUPPORTED` for a format this build cannot decode,
/// `INVALID_ENCODING` for the lowest row the decoder refuses (the rules listed at
/// `ninfer_decode_row`; grouped, fp8 and nvfp4 rows of the range are all checked before
/// any is written). Nothing is written unless the status is OK.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `out` must have `out_bytes` writable bytes
/// that do not overlap the view's planes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_decode_rows(
    view: *const ninfer_weight_view,
    first: u64,
    count: u64,
    out: *mut c_void,
    out_bytes: usize,
    out_dtype: u32,
) -> Status {
    call(|| {
        let dtype = Dtype::from_u32(out_dtype)?;
        let v = unsafe { from_c(view) }?;
        let size = dtype.size();
        if out.is_null() && out_bytes != 0 {
            return Err(Error::NullPointer("out"));
        }
        if !(out as usize).is_multiple_of(size) {
            return Err(Error::Misaligned("out", size));
        }
        // A trailing partial element is not usable; it is never written.
        let len = out_bytes / size;
        match dtype {
            Dtype::F32 => {
                let out = unsafe { out_slice(out.cast::<f32>(), len, "out") }?;
                decode::decode_rows(&v, first, count, out)
            }
            Dtype::Bf16 | Dtype::F16 => {
                let out = unsafe { out_slice(out.cast::<u16>(), len, "out") }?;
                decode::decode_rows_words(&v, first, count, dtype, out)
            }
        }
    })
}
