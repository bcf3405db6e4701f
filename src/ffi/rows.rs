//! Row slices and gathers (whole rows copied byte for byte).

use super::boundary::{call, check_out_ptr, in_slice, out_slice, write};
use super::view::{from_c, ninfer_weight_view};
use crate::error::Status;
use crate::rows;

/// Copies rows `start .. start + count` of `view` into `out`: the payload of a
/// `[count, cols]` tensor of the same format and layout (for contiguous_le_v1,
/// gguf_blocks_v1 and row_interleaved_v1 simply the rows' bytes; for row_split_k128_v1 and
/// row_scale_v1 each plane's rows, the planes back to back in plane order, each as long as
/// `ninfer_layout_plane_sizes` gives for `count` rows). Nothing is decoded or
/// renormalized. `count = 0` copies nothing.
///
/// On success `*out_written` (may be NULL) receives the number of bytes written.
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `OVERFLOW` when
/// `start + count` overflows, `ROW_OUT_OF_RANGE` when `start + count > rows`,
/// `BUFFER_TOO_SMALL` when `out_len` is less than the result, `NULL_POINTER` for a NULL
/// `out` with non-zero `out_len`, `MISALIGNED` for an `out_written` not aligned to its
/// type (checked before any row is copied), `UNSUPPORTED` for block_scale_k16_m128x4_v1
/// (its scale plane is swizzled in 128-row tiles: a row subset is not a byte subset).
/// Nothing is written unless the status is OK.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `out` must have `out_len` writable bytes not
/// overlapping the view's planes; `out_written` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_rows_copy(
    view: *const ninfer_weight_view,
    start: u64,
    count: u64,
    out: *mut u8,
    out_len: usize,
    out_written: *mut usize,
) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        let out = unsafe { out_slice(out, out_len, "out") }?;
        check_out_ptr(out_written, true, "out_written")?;
        let n = rows::copy_rows(&v, start, count, out)?;
        if !out_written.is_null() {
            unsafe { write(out_written, n, "out_written") }?;
        }
        Ok(())
    })
}

/// Copies rows `indices[0 .. n_indices]` of `view` (any order, repeats allowed) into `out`:
/// the payload of a `[n_indices, cols]` tensor of the same format and layout (byte layout
/// as `ninfer_rows_copy`). Nothing is decoded or renormalized.
///
/// On success `*out_written` (may be NULL) receives the number of bytes written.
///
/// Errors: the structural errors of `ninfer_weight_view_check`, `INDEX_OUT_OF_RANGE` for
/// the first entry `>= rows` (the message names its position; checked after the sizes, so
/// a short `out` is `BUFFER_TOO_SMALL` whatever the indices), `BUFFER_TOO_SMALL`,
/// `NULL_POINTER` for a NULL `indices` or `out` with a non-zero length, `MISALIGNED` for
/// an `indices` not aligned to 8 bytes or an `out_written` not aligned to its type
/// (checked before any row is copied), `OVERFLOW` when `n_indices` × 8 or the result size
/// overflows, `UNSUPPORTED` as for `ninfer_rows_copy`. Nothing is written unless the
/// status is OK.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `indices` must have `n_indices` readable
/// `uint64_t`; `out` must have `out_len` writable bytes not overlapping the view's planes;
/// `out_written` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_rows_gather(
    view: *const ninfer_weight_view,
    indices: *const u64,
    n_indices: usize,
    out: *mut u8,
    out_len: usize,
    out_written: *mut usize,
) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        let indices = unsafe { in_slice(indices, n_indices, "indices") }?;
        let out = unsafe { out_slice(out, out_len, "out") }?;
        check_out_ptr(out_written, true, "out_written")?;
        let n = rows::gather_rows(&v, indices, out)?;
        if !out_written.is_null() {
            unsafe { write(out_written, n, "out_written") }?;
        }
        Ok(())
    })
}
