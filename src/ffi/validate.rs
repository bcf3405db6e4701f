//! Encoding validation.

use super::boundary::call;
use super::view::{from_c, ninfer_weight_view};
use crate::error::{Error, Status};
use crate::validate;

/// Checks every encoding rule of the view's format over its whole payload (after the
/// structural checks of `ninfer_weight_view_check`): for gguf_* formats every binary16
/// scale field (d, dmin, IQ1_M's spread super-scale) must be finite; grouped, FP8
/// row-scaled and nvfp4 formats are checked by their own rules (scales, codes, canonical
/// padding, divisors); direct formats (bf16, fp32, int32) always pass.
///
/// On `NINFER_STATUS_INVALID_ENCODING` (and only then) the first offending location in
/// row-major order is written: `*out_row` = the row, `*out_block` = the block (GGUF),
/// group (grouped formats) or K-block (nvfp4) index within that row. Either pointer may be
/// NULL to skip it. On any other status neither is written. `UINT64_MAX` means "none":
/// - `*out_block == UINT64_MAX`: the broken rule concerns a field that is not per block:
///   an fp8 row scale (−0, negative, ±Inf, NaN; `*out_row` is its row) or an nvfp4 weight
///   divisor (a per-matrix field; `*out_row` is the first row of its stacked source, the
///   message names the divisor index);
/// - `*out_row == *out_block == UINT64_MAX`: non-zero layout padding that belongs to no
///   logical row (nvfp4's swizzled scale plane: padding rows ≥ rows and padding K-blocks);
///   the message names the padded row, K-block and byte offset.
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `INVALID_ENCODING`,
/// `MISALIGNED` for a misaligned `out_row` / `out_block`.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `out_row` / `out_block` NULL or writable and
/// aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_validate(
    view: *const ninfer_weight_view,
    out_row: *mut u64,
    out_block: *mut u64,
) -> Status {
    call(|| {
        for ptr in [out_row, out_block] {
            if !(ptr as usize).is_multiple_of(align_of::<u64>()) {
                return Err(Error::Misaligned("out_row/out_block", align_of::<u64>()));
            }
        }
        let v = unsafe { from_c(view) }?;
        let result = validate::validate(&v);
        if let Err(Error::InvalidEncoding { at, .. }) = &result {
            for (ptr, value) in [(out_row, at.row), (out_block, at.block)] {
                if !ptr.is_null() {
                    // SAFETY: non-NULL and aligned (checked above); writable by the
                    // caller's promise.
                    unsafe { ptr.write(value) };
                }
            }
        }
        result
    })
}
