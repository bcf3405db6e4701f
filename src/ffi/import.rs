//! `import_encoded` of GGUF blocks into native grouped planes.

use super::boundary::{bytes, call, in_slice, out_slice};
use super::quantize::ninfer_mut_bytes;
use super::view::{from_c, ninfer_weight_view};
use crate::error::{Status, to_usize};
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

/// Imports a ternary GGUF tensor, TQ1_0 (`ggml_type` 34) or TQ2_0 (35), into the
/// `row_split_k128_v1` planes of `NINFER_FORMAT_T2_G128_FP16`, moving codes and scales
/// without rounding (spec §2 `import_encoded`, §3.2): each 256-value block's binary16 `d`
/// word becomes the scale word of both 128-value groups it covers, unchanged; codes map to
/// −1, 0, +1 exactly, so every decoded value equals ggml's dequantized `d × code`.
///
/// - `blocks`, `blocks_len`: the tensor's data as in the GGUF file, `rows × cols / 256`
///   consecutive ggml blocks (TQ1_0: 54 bytes = `qs[48]`, `qh[4]`, `d`; TQ2_0: 66 bytes =
///   `qs[64]`, `d`; `d` little-endian binary16), row-major `[rows, cols]`, `cols` being
///   GGUF's `ne[0]`. No alignment required.
/// - `planes`: 3 `ninfer_mut_bytes` (`codes`, `high_bits` = `{NULL, 0}`, `scales`), each
///   exactly as long as `ninfer_layout_plane_sizes(NINFER_FORMAT_T2_G128_FP16,
///   NINFER_LAYOUT_ROW_SPLIT_K128_V1, rows, cols)` gives.
///
/// Errors: `NULL_POINTER`; `UNREGISTERED_TYPE` (another ggml type); `BAD_SHAPE` (zero rows
/// or cols, or cols not a multiple of 256: nothing is requantized to fit); `SIZE_MISMATCH`
/// (`blocks_len` or a plane, naming it); `OVERFLOW`; `INVALID_ENCODING` when a block breaks
/// t2_g128_fp16's rules (a TQ2_0 2-bit word 3, i.e. value +2; a NaN, infinite or −0 `d`;
/// a +0 `d` over a non-zero code), the message naming the row, the t2 group (as "block")
/// and the GGUF block; `OUT_OF_MEMORY` (temporaries of rows × cols bytes). Nothing is
/// written on error.
///
/// # Safety
/// `blocks` must point to `blocks_len` readable bytes; `planes` must point to 3
/// `ninfer_mut_bytes` whose ranges are writable and overlap neither each other nor
/// `blocks`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_import_gguf_ternary(
    ggml_type: u32,
    blocks: *const u8,
    blocks_len: usize,
    rows: u64,
    cols: u64,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        let b = unsafe { bytes(blocks, blocks_len, "blocks") }?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let p = unsafe { in_slice(planes, 3, "planes") }?;
        let names = ["codes", "high_bits", "scales"];
        let [a, b2, c] = [0, 1, 2].map(|i| unsafe { out_slice(p[i].ptr, p[i].len, names[i]) });
        import::import_gguf_ternary(ggml_type, b, rows, cols, [a?, b2?, c?])
    })
}
