//! Format and layout lookups (spec §1–§2).

use super::boundary::{c_str, call, out_slice, write};
use crate::error::Status;
use crate::layouts;
use crate::registry::{Format, Layout, check_compatible};
use std::ffi::c_char;

/// Everything the registry knows about one format (spec §1). Filled by
/// `ninfer_format_get_info`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_format_info {
    /// The format's number (`NINFER_FORMAT_*`).
    pub format: u32,
    /// Canonical name: a static NUL-terminated string.
    pub name: *const c_char,
    /// `NINFER_CATEGORY_*`.
    pub category: u32,
    /// Logical code (word) width in bits; 0 for GGUF blocks.
    pub code_bits: u32,
    /// Values per group / block (1 for direct and row-scaled formats).
    pub block_values: u32,
    /// Logical bytes per group / block including its scale (GGUF: sizeof(block_*)).
    pub block_bytes: u32,
    /// `NINFER_SCALE_TYPE_*`.
    pub scale_type: u32,
    /// The registered layout (`NINFER_LAYOUT_*`).
    pub layout: u32,
    /// Smallest legal signed code (grouped formats, int32), else 0.
    pub code_min: i64,
    /// Largest legal signed code (grouped formats, int32), else 0.
    pub code_max: i64,
    /// grouped_absmax's scale denominator (spec §7.2), 0 where it refuses the format.
    pub qmax: i32,
    /// ggml type id with bit-identical data, or -1.
    pub ggml_type: i32,
    /// Ideal logical bits per weight for full blocks (spec §1; exact: a dyadic rational).
    pub bits_per_weight: f64,
}

/// The number of registered formats. Format numbers are `0 .. ninfer_format_count() - 1`.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_format_count() -> u32 {
    Format::COUNT as u32
}

/// The format number at registry index `index` into `*out_format`.
///
/// Errors: `NINFER_STATUS_UNKNOWN_FORMAT` when `index >= ninfer_format_count()`,
/// `NINFER_STATUS_NULL_POINTER`.
///
/// # Safety
/// `out_format` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_format_at(index: u32, out_format: *mut u32) -> Status {
    call(|| {
        let f = Format::from_u32(index)?;
        unsafe { write(out_format, f as u32, "out_format") }
    })
}

/// Looks a format up by its exact canonical name (e.g. `"q4_g64_fp16"`, `"gguf_q4_k"`).
/// Abbreviations and other spellings (`"Q4"`, `"q4_g64"`, `"Q4_K"`) are unknown.
///
/// Errors: `NINFER_STATUS_UNKNOWN_FORMAT`, `NINFER_STATUS_NULL_POINTER`.
///
/// # Safety
/// `name` must be NUL-terminated; `out_format` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_format_lookup(name: *const c_char, out_format: *mut u32) -> Status {
    call(|| {
        let name = unsafe { c_str(name, "name") }?;
        let f = Format::from_name(name)?;
        unsafe { write(out_format, f as u32, "out_format") }
    })
}

/// The format whose data is bit-identical to a GGUF tensor of ggml type `ggml_type`: the
/// 18 gguf_* types, F32 → fp32, BF16 → bf16, I32 → int32.
///
/// Errors: `NINFER_STATUS_UNREGISTERED_TYPE` for every other type (F16, Q4_1, Q8_K,
/// TQ1_0, MXFP4, ...), with the type's ggml name in the message.
///
/// # Safety
/// `out_format` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_format_from_ggml_type(
    ggml_type: u32,
    out_format: *mut u32,
) -> Status {
    call(|| {
        let f = Format::from_ggml_type(ggml_type)?;
        unsafe { write(out_format, f as u32, "out_format") }
    })
}

/// The canonical name of a format as a static string, or NULL for an unknown number.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_format_name(format: u32) -> *const c_char {
    Format::from_u32(format).map_or(std::ptr::null(), |f| f.info().cname.as_ptr())
}

/// Fills `*out_info` with the registry's facts about `format`.
///
/// Errors: `NINFER_STATUS_UNKNOWN_FORMAT`, `NINFER_STATUS_NULL_POINTER`.
///
/// # Safety
/// `out_info` must be writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_format_get_info(
    format: u32,
    out_info: *mut ninfer_format_info,
) -> Status {
    call(|| {
        let i = Format::from_u32(format)?.info();
        let info = ninfer_format_info {
            format: i.format as u32,
            name: i.cname.as_ptr(),
            category: i.category as u32,
            code_bits: i.code_bits,
            block_values: i.block_values,
            block_bytes: i.block_bytes,
            scale_type: i.scale as u32,
            layout: i.layout as u32,
            code_min: i.code_min,
            code_max: i.code_max,
            qmax: i.qmax,
            ggml_type: i.ggml_type.map_or(-1, |t| t as i32),
            bits_per_weight: i.bits_per_weight,
        };
        unsafe { write(out_info, info, "out_info") }
    })
}

/// The number of registered layouts. Layout numbers are `0 .. ninfer_layout_count() - 1`.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_layout_count() -> u32 {
    Layout::COUNT as u32
}

/// Looks a layout up by its exact name (e.g. `"row_split_k128_v1"`).
///
/// Errors: `NINFER_STATUS_UNKNOWN_LAYOUT`, `NINFER_STATUS_NULL_POINTER`.
///
/// # Safety
/// `name` must be NUL-terminated; `out_layout` writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_layout_lookup(name: *const c_char, out_layout: *mut u32) -> Status {
    call(|| {
        let name = unsafe { c_str(name, "name") }?;
        let l = Layout::from_name(name)?;
        unsafe { write(out_layout, l as u32, "out_layout") }
    })
}

/// The name of a layout as a static string, or NULL for an unknown number.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_layout_name(layout: u32) -> *const c_char {
    Layout::from_u32(layout).map_or(std::ptr::null(), |l| l.cname().as_ptr())
}

/// `NINFER_STATUS_OK` when `format` may be stored in `layout`; otherwise
/// `NINFER_STATUS_INCOMPATIBLE_LAYOUT`, `NINFER_STATUS_UNKNOWN_FORMAT` or
/// `NINFER_STATUS_UNKNOWN_LAYOUT`.
#[unsafe(no_mangle)]
pub extern "C" fn ninfer_format_layout_compatible(format: u32, layout: u32) -> Status {
    call(|| check_compatible(Format::from_u32(format)?, Layout::from_u32(layout)?))
}

/// The byte length of each plane of a `rows × cols` tensor of `format` in `layout`, written
/// to `out_sizes[0 .. NINFER_MAX_PLANES]` (unused planes are 0). Sizes depend on
/// (format, layout, rows, cols) alone; use them to allocate encoder outputs and to check
/// payloads before building a `ninfer_weight_view`.
///
/// Errors: `UNKNOWN_FORMAT`, `UNKNOWN_LAYOUT`, `INCOMPATIBLE_LAYOUT`, `BAD_SHAPE` (a zero
/// dimension, or K not legal for the format), `OVERFLOW`, `BUFFER_TOO_SMALL` when
/// `out_len < NINFER_MAX_PLANES`, `UNSUPPORTED`.
///
/// # Safety
/// `out_sizes` must have `out_len` writable elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_layout_plane_sizes(
    format: u32,
    layout: u32,
    rows: u64,
    cols: u64,
    out_sizes: *mut usize,
    out_len: usize,
) -> Status {
    call(|| {
        let (format, layout) = (Format::from_u32(format)?, Layout::from_u32(layout)?);
        let rows = crate::error::to_usize(rows, "rows")?;
        let cols = crate::error::to_usize(cols, "cols")?;
        let out = unsafe { out_slice(out_sizes, out_len, "out_sizes") }?;
        if out.len() < layouts::MAX_PLANES {
            return Err(crate::Error::BufferTooSmall {
                what: "out_sizes (entries)",
                needed: layouts::MAX_PLANES,
                actual: out.len(),
            });
        }
        let sizes = layouts::plane_sizes(format, layout, rows, cols)?;
        out[..layouts::MAX_PLANES].copy_from_slice(&sizes);
        Ok(())
    })
}
