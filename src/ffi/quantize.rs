//! Grouped encoders: `ninfer_quantize_grouped` (grouped_absmax §7.2, grouped_search §7.3).

use super::boundary::{call, float_source, in_slice, mut_planes, write};
use crate::dtype::Dtype;
use crate::error::{Error, Result, Status, to_usize};
use crate::formats::grouped::{Method, Options, Provenance, quantize};
use crate::registry::Format;
use std::ffi::c_void;

/// `grouped_absmax`: the canonical reference encoder of spec §7.2 (bit-exact).
pub const NINFER_QUANTIZE_METHOD_GROUPED_ABSMAX: u32 = 0;
/// `grouped_search`: the importance-weighted scale search of spec §7.3.
pub const NINFER_QUANTIZE_METHOD_GROUPED_SEARCH: u32 = 1;

// The C constants are the Rust method numbers.
const _: () = assert!(NINFER_QUANTIZE_METHOD_GROUPED_ABSMAX == Method::GroupedAbsmax as u32);
const _: () = assert!(NINFER_QUANTIZE_METHOD_GROUPED_SEARCH == Method::GroupedSearch as u32);

/// A caller-owned writable byte range: `len` bytes at `ptr`. `ptr` may be NULL only when
/// `len` is 0.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_mut_bytes {
    /// First byte (no alignment required).
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
}

/// Options of `ninfer_quantize_grouped`. A NULL options pointer means grouped_absmax.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_quantize_options {
    /// `NINFER_QUANTIZE_METHOD_*`.
    pub method: u32,
    /// grouped_search only: 1 lets negative candidate scales compete, 0 does not. Must be 0
    /// for grouped_absmax; other values are refused.
    pub negative_scales: u32,
    /// grouped_search only: one finite, non-negative weight per input column (`cols`
    /// floats, 4-byte aligned), e.g. an activation importance vector; NULL weighs every
    /// column 1. Must be NULL for grouped_absmax.
    pub importance: *const f32,
    /// Number of floats at `importance` (`cols`, or 0 with NULL).
    pub importance_len: usize,
}

/// Conversion provenance written by `ninfer_quantize_grouped`: what to record with the
/// artifact (method identity and numerical parameters, spec §7.3/§8) plus counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ninfer_quantize_provenance {
    /// `NINFER_QUANTIZE_METHOD_*` used.
    pub method: u32,
    /// 1 when negative scales could compete (grouped_search), else 0.
    pub negative_scales: u32,
    /// 1 when an importance vector weighted the search, else 0.
    pub importance: u32,
    /// grouped_search's candidate-set version (1 = the set documented for
    /// `ninfer::formats::grouped::search`); 0 for grouped_absmax.
    pub parameters_version: u32,
    /// Logical groups encoded: rows × ceil(cols / G).
    pub groups: u64,
    /// Groups whose source values were all zero (stored scale +0).
    pub zero_groups: u64,
    /// Groups whose §7.2 scale is 0x0001 (the underflow rescue, or a raw scale that rounded
    /// there itself: the group sits at binary16's floor).
    pub rescued_groups: u64,
    /// Groups where grouped_search replaced the §7.2 result (0 for grouped_absmax).
    pub improved_groups: u64,
    /// grouped_search: Σ over groups of the §7.2 result's importance-weighted squared error
    /// (binary64); 0 for grouped_absmax.
    pub absmax_error: f64,
    /// grouped_search: the same sum for the stored result (≤ `absmax_error`).
    pub error: f64,
}

impl From<Provenance> for ninfer_quantize_provenance {
    fn from(p: Provenance) -> Self {
        ninfer_quantize_provenance {
            method: p.method as u32,
            negative_scales: p.negative_scales as u32,
            importance: p.importance as u32,
            parameters_version: p.parameters_version,
            groups: p.groups,
            zero_groups: p.zero_groups,
            rescued_groups: p.rescued_groups,
            improved_groups: p.improved_groups,
            absmax_error: p.absmax_error,
            error: p.error,
        }
    }
}

/// Quantizes a dense row-major `[rows, cols]` source into the `row_split_k128_v1` planes of
/// a grouped format (q4_g64_fp16, q5_g64_fp16, q6_g64_fp16, q8_g32_fp16).
///
/// - `src`, `src_bytes`, `src_dtype`: `rows × cols` values of `NINFER_DTYPE_F32` (4-byte
///   aligned), `_BF16` or `_F16` (2-byte aligned), native-endian; `src_bytes` must be exactly
///   `rows × cols × element size`. bf16/f16 widen exactly to binary32 (spec §7.1).
/// - `options`: NULL for grouped_absmax, else see `ninfer_quantize_options`.
/// - `planes`: an array of 3 `ninfer_mut_bytes`, the output planes `codes`, `high_bits`,
///   `scales` (docs/layouts.md), each exactly as long as `ninfer_layout_plane_sizes` gives
///   for (format, `NINFER_LAYOUT_ROW_SPLIT_K128_V1`, rows, cols); `high_bits` is `{NULL, 0}`
///   except for q5/q6. K is padded to a multiple of 128 with canonical zero padding.
/// - `provenance`: NULL, or receives the method, its parameters and counters.
///
/// Rows are encoded in parallel, on the calling thread and a pool the library keeps for the
/// process (the default thread count: `RAYON_NUM_THREADS`, else the logical CPUs; when no
/// thread can be started, on the calling thread alone, with the same output).
/// A first pass checks every row for the failures an encoding can have (non-finite values,
/// overflowing scales); the planes and `*provenance` are written only after it passed, so on
/// error they keep their contents. The output does not depend on the thread count.
/// The encoders need the default floating-point environment (round to nearest, IEEE
/// subnormals): a thread that flushes subnormals (FTZ/DAZ) is refused with `UNSUPPORTED`.
///
/// Errors: `NULL_POINTER`, `MISALIGNED`, `UNKNOWN_FORMAT`, `UNKNOWN_DTYPE`,
/// `UNSUPPORTED` (q2_g64_fp16 and t2_g128_fp16 targets are refused by spec §2/§7; non-grouped
/// formats; FTZ/DAZ active), `BAD_SHAPE` (zero rows or cols), `SIZE_MISMATCH` (source or plane length,
/// naming it), `OVERFLOW`, `INVALID_ARGUMENT` (unknown method, a flag other than 0/1,
/// importance of the wrong length or with a negative/non-finite weight, or options grouped_absmax
/// does not take), `NON_FINITE_SOURCE` (NaN/±Inf; the message names row and column; the
/// lowest such row is reported), `SCALE_OVERFLOW` (amax / qmax rounds to binary16 infinity;
/// names row and group).
///
/// # Safety
/// `src` must point to `src_bytes` readable bytes; `options` NULL or valid, its importance
/// pointer valid for `importance_len` floats; `planes` must point to 3 `ninfer_mut_bytes`
/// whose ranges are writable, and no range may overlap another or the inputs;
/// `provenance` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_quantize_grouped(
    format: u32,
    src: *const c_void,
    src_bytes: usize,
    src_dtype: u32,
    rows: u64,
    cols: u64,
    options: *const ninfer_quantize_options,
    planes: *const ninfer_mut_bytes,
    provenance: *mut ninfer_quantize_provenance,
) -> Status {
    call(|| {
        let format = Format::from_u32(format)?;
        // An unknown dtype is reported before any shape or length error.
        Dtype::from_u32(src_dtype)?;
        let rows = to_usize(rows, "rows")?;
        let cols = to_usize(cols, "cols")?;
        let opts = match options.is_null() {
            true => Options::ABSMAX,
            false => {
                let o = unsafe { super::boundary::req(options, "options") }?;
                let importance = match o.importance.is_null() && o.importance_len == 0 {
                    true => None,
                    false => {
                        Some(unsafe { in_slice(o.importance, o.importance_len, "importance") }?)
                    }
                };
                Options {
                    method: Method::from_u32(o.method)?,
                    importance,
                    negative_scales: flag(o.negative_scales, "negative_scales")?,
                }
            }
        };
        // Checked in bytes here so that the message counts what the caller passed.
        let src = unsafe { float_source(src, src_bytes, src_dtype, rows, cols) }?;
        // Checked before encoding so that nothing is written when it is unusable.
        if !(provenance as usize).is_multiple_of(align_of::<ninfer_quantize_provenance>()) {
            return Err(Error::Misaligned(
                "provenance",
                align_of::<ninfer_quantize_provenance>(),
            ));
        }
        let planes = unsafe { mut_planes(planes, PLANE_NAMES) }?;
        let prov = quantize(format, src, rows, cols, &opts, planes)?;
        if !provenance.is_null() {
            unsafe { write(provenance, prov.into(), "provenance") }?;
        }
        Ok(())
    })
}

const PLANE_NAMES: [&str; 3] = ["codes", "high_bits", "scales"];

/// A C boolean flag: 0 or 1, anything else refused.
fn flag(v: u32, what: &str) -> Result<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Error::InvalidArgument(format!(
            "{what} must be 0 or 1, not {v}"
        ))),
    }
}
