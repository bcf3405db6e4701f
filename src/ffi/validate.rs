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
/// row-major order is written: `*out_row` = the row, `*out_block` = the block (GGUF) or
/// group index within that row. Either pointer may be NULL to skip it. On any other status
/// neither is written.
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
            if (ptr as usize) % align_of::<u64>() != 0 {
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
