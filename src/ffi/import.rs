//! `import_encoded` of GGUF blocks into native grouped planes.

use super::boundary::{call, in_slice, out_slice};
use super::quantize::ninfer_mut_bytes;
use super::view::{from_c, ninfer_weight_view};
use crate::error::Status;
use crate::formats::import;
use crate::registry::Format;

/// Imports a `gguf_q2_0` or `gguf_q8_0` view into the `row_split_k128_v1` planes of
/// `target_format` (`NINFER_FORMAT_Q2_G64_FP16` or `NINFER_FORMAT_Q8_G32_FP16`
/// respectively), moving every code and binary16 scale word without rounding, negating
/// or canonicalizing (spec §2 `import_encoded`, §3.2). One GGUF block becomes one native
/// group.
///
/// - `planes`: 3 `ninfer_mut_bytes` (`codes`, `high_bits` = `{NULL, 0}`, `scales`), each
///   exactly as long as `ninfer_layout_plane_sizes(target_format,
///   NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols)` gives; K is padded to a multiple of 128
///   with canonical zero padding.
///
/// Errors: the view's structural errors; `UNSUPPORTED` for any other (source, target) pair;
/// `SIZE_MISMATCH` (naming the plane); `INVALID_ENCODING` when a block breaks the target's
/// rules (Q8_0: code −128, a −0/Inf/NaN scale, a +0 scale with non-zero codes; Q2_0: an
/// Inf/NaN scale), the message naming the row and block. Nothing is written on error.
///
/// # Safety
/// `view` as for `ninfer_weight_view_check`; `planes` must point to 3 `ninfer_mut_bytes`
/// whose ranges are writable and overlap neither each other nor the view's planes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_import_gguf(
    view: *const ninfer_weight_view,
    target_format: u32,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        let v = unsafe { from_c(view) }?;
        let target = Format::from_u32(target_format)?;
        let p = unsafe { in_slice(planes, 3, "planes") }?;
        let names = ["codes", "high_bits", "scales"];
        let [a, b, c] = [0, 1, 2].map(|i| unsafe { out_slice(p[i].ptr, p[i].len, names[i]) });
        import::import_gguf(&v, target, [a?, b?, c?])
    })
}
