//! `import_encoded` of GGUF blocks into native grouped planes.

use super::boundary::{bytes, call, float_source, in_slice, out_slice};
use super::quantize::ninfer_mut_bytes;
use super::view::{from_c, ninfer_weight_view};
use crate::error::{Status, to_usize};
use crate::formats::import;
use crate::registry::Format;
use std::ffi::c_void;

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

/// `weight_scale` rule of the ternary safetensors imports: value = code / weight_scale
/// (transformers' `BitLinear`, the packed `bitnet-b1.58-2B-4T` checkpoint).
pub const NINFER_TERNARY_SCALE_DIVIDE: u32 = 0;
/// `weight_scale` rule of the ternary safetensors imports: value = code × weight_scale
/// (transformers' `AutoBitLinear`, offline quantization).
pub const NINFER_TERNARY_SCALE_MULTIPLY: u32 = 1;

fn scale_rule(rule: u32) -> crate::error::Result<import::TernaryScaleRule> {
    match rule {
        NINFER_TERNARY_SCALE_DIVIDE => Ok(import::TernaryScaleRule::Divide),
        NINFER_TERNARY_SCALE_MULTIPLY => Ok(import::TernaryScaleRule::Multiply),
        _ => Err(crate::error::Error::InvalidArgument(format!(
            "scale_rule {rule}: expected NINFER_TERNARY_SCALE_DIVIDE (0) or NINFER_TERNARY_SCALE_MULTIPLY (1)"
        ))),
    }
}

/// Imports a BitNet b1.58 weight packed as transformers' `integrations/bitnet.py`
/// (`pack_weights` / `unpack_weights`) packs it into the `row_split_k128_v1` planes of
/// `NINFER_FORMAT_T2_G128_FP16`, without rounding (spec §2 `import_encoded`, §3.2).
///
/// - `packed`, `packed_len`: the `U8` tensor `[rows / 4, cols]`, row-major; with P = rows /
///   4, weight row n, column k is bits `2i..2i+1` (i = n / P) of byte `[n mod P, k]`, an
///   offset word u with code u − 1. No alignment required.
/// - `weight_scale`: the checkpoint's per-tensor scale, widened exactly to binary32;
///   `scale_rule`: `NINFER_TERNARY_SCALE_DIVIDE` (value = code / weight_scale) or
///   `NINFER_TERNARY_SCALE_MULTIPLY` (value = code × weight_scale). Every group's scale word
///   is binary16(1 / weight_scale) or binary16(weight_scale), which must be exact.
/// - `planes`: 3 `ninfer_mut_bytes` (`codes`, `high_bits` = `{NULL, 0}`, `scales`) sized by
///   `ninfer_layout_plane_sizes(NINFER_FORMAT_T2_G128_FP16, NINFER_LAYOUT_ROW_SPLIT_K128_V1,
///   rows, cols)`.
///
/// Errors: `NULL_POINTER`; `BAD_SHAPE` (zero rows or cols, cols not a multiple of 128, rows
/// not a multiple of 4); `SIZE_MISMATCH` (`packed_len` or a plane); `INVALID_ARGUMENT`
/// (unknown `scale_rule`; a NaN, infinite or zero scale, or one not exact in binary16 under
/// its rule); `INVALID_ENCODING` (a 2-bit word 3, naming row and 128-value group);
/// `OVERFLOW`; `OUT_OF_MEMORY`. Nothing is written on error.
///
/// # Safety
/// `packed` must point to `packed_len` readable bytes; `planes` must point to 3
/// `ninfer_mut_bytes` whose ranges are writable and overlap neither each other nor `packed`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_import_bitnet_packed(
    packed: *const u8,
    packed_len: usize,
    rows: u64,
    cols: u64,
    weight_scale: f32,
    scale_rule: u32,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        let b = unsafe { bytes(packed, packed_len, "packed") }?;
        let rule = self::scale_rule(scale_rule)?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let p = unsafe { in_slice(planes, 3, "planes") }?;
        let names = ["codes", "high_bits", "scales"];
        let [a, b2, c] = [0, 1, 2].map(|i| unsafe { out_slice(p[i].ptr, p[i].len, names[i]) });
        import::import_ternary_safetensors(
            import::TernaryCodes::Packed(b),
            Some((weight_scale, rule)),
            rows,
            cols,
            [a?, b2?, c?],
        )
    })
}

/// Imports a ternary weight stored one word per value into the `row_split_k128_v1` planes
/// of `NINFER_FORMAT_T2_G128_FP16`, without rounding (spec §2 `import_encoded`, §3.2).
///
/// - `src`, `src_bytes`, `src_dtype`: `rows × cols` words of `NINFER_DTYPE_F32` (4-byte
///   aligned), `_BF16` or `_F16` (2-byte aligned), native-endian, row-major.
/// - `has_scale` 1: the words are codes, each exactly −1, ±0 or +1, and `weight_scale` /
///   `scale_rule` apply as in `ninfer_import_bitnet_packed`. `has_scale` 0: the words are
///   the represented weights; every 128-value group must hold only −s, ±0 and +s for one s
///   exactly representable in binary16, which becomes the group's scale word (+0 for an
///   all-zero group); `weight_scale` and `scale_rule` are ignored.
/// - `planes`: as in `ninfer_import_bitnet_packed`.
///
/// Errors: `NULL_POINTER`, `MISALIGNED`, `UNKNOWN_DTYPE`; `BAD_SHAPE` (zero rows or cols,
/// cols not a multiple of 128); `SIZE_MISMATCH`; `INVALID_ARGUMENT` (`has_scale` not 0/1,
/// unknown `scale_rule`, a scale that is NaN, infinite, zero or not exact in binary16);
/// `INVALID_ENCODING` naming row and 128-value group (a code other than −1/0/+1; without a
/// scale a NaN/infinite value, mixed magnitudes, or a magnitude not exact in binary16);
/// `OVERFLOW`; `OUT_OF_MEMORY`. Nothing is written on error.
///
/// # Safety
/// `src` must point to `src_bytes` readable bytes; `planes` must point to 3
/// `ninfer_mut_bytes` whose ranges are writable and overlap neither each other nor `src`.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ninfer_import_ternary_values(
    src: *const c_void,
    src_bytes: usize,
    src_dtype: u32,
    rows: u64,
    cols: u64,
    has_scale: u32,
    weight_scale: f32,
    scale_rule: u32,
    planes: *const ninfer_mut_bytes,
) -> Status {
    call(|| {
        crate::dtype::Dtype::from_u32(src_dtype)?;
        let scale = match has_scale {
            0 => None,
            1 => Some((weight_scale, self::scale_rule(scale_rule)?)),
            v => {
                return Err(crate::error::Error::InvalidArgument(format!(
                    "has_scale {v}: expected 0 or 1"
                )));
            }
        };
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let src = unsafe { float_source(src, src_bytes, src_dtype, rows, cols) }?;
        let p = unsafe { in_slice(planes, 3, "planes") }?;
        let names = ["codes", "high_bits", "scales"];
        let [a, b2, c] = [0, 1, 2].map(|i| unsafe { out_slice(p[i].ptr, p[i].len, names[i]) });
        import::import_ternary_safetensors(
            import::TernaryCodes::Values(src),
            scale,
            rows,
            cols,
            [a?, b2?, c?],
        )
    })
}
