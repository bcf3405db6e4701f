//! `ninfer_weight_view`: the C image of [`crate::WeightView`].

use super::boundary::{bytes, call, req};
use crate::error::{Result, Status, to_usize};
use crate::layouts::MAX_PLANES;
use crate::registry::{Format, Layout};
use crate::view::WeightView;

/// The number of plane slots in a `ninfer_weight_view`.
pub const NINFER_MAX_PLANES: usize = 3;

// The C constant is a literal (a header macro must not depend on an unprefixed name).
const _: () = assert!(NINFER_MAX_PLANES == MAX_PLANES);

/// A borrowed byte range: `len` bytes at `ptr`. `ptr` may be NULL only when `len` is 0.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_bytes {
    /// First byte (no alignment required).
    pub ptr: *const u8,
    /// Length in bytes.
    pub len: usize,
}

/// A borrowed descriptor of one persistent tensor: its format, its layout, its logical
/// shape `[rows, cols]` (cols is K, the quantization axis) and the byte planes the layout
/// defines. The library never keeps the pointers past the call that receives the view.
///
/// Planes per layout (unused slots: length 0, conventionally `{NULL, 0}`: their pointer is
/// not read); exact lengths come from
/// `ninfer_layout_plane_sizes`:
/// - `contiguous_le_v1`: `planes[0]` = little-endian words, row-major.
/// - `gguf_blocks_v1`: `planes[0]` = rows × (K / block_values) ggml blocks, row-major.
/// - `row_split_k128_v1`: `planes[0]` = low code bits, `planes[1]` = high code bits (q5,
///   q6), `planes[2]` = binary16 scales (docs/layouts.md).
/// - `block_scale_k16_m128x4_v1`: `planes[0]` = E2M1 codes, `planes[1]` = swizzled E4M3FN
///   scales, `planes[2]` = FP32 divisors.
/// - `row_scale_v1`: `planes[0]` = E4M3FN codes, `planes[1]` = BF16 row scales.
/// - `row_interleaved_v1`: `planes[0]` = rows of (binary16 scale, K codes).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ninfer_weight_view {
    /// `NINFER_FORMAT_*`.
    pub format: u32,
    /// `NINFER_LAYOUT_*`.
    pub layout: u32,
    /// Logical rows (N), positive.
    pub rows: u64,
    /// Logical columns (K), positive.
    pub cols: u64,
    /// The layout's byte planes.
    pub planes: [ninfer_bytes; NINFER_MAX_PLANES],
}

/// Builds a checked [`WeightView`] from a C view pointer.
///
/// # Safety
/// `view` must be NULL or point to a valid `ninfer_weight_view` whose planes satisfy
/// [`bytes`]'s contract for `'a`.
pub(crate) unsafe fn from_c<'a>(view: *const ninfer_weight_view) -> Result<WeightView<'a>> {
    let v = unsafe { req(view, "view") }?;
    let format = Format::from_u32(v.format)?;
    let layout = Layout::from_u32(v.layout)?;
    let rows = to_usize(v.rows, "rows")?;
    let cols = to_usize(v.cols, "cols")?;
    let names = crate::layouts::plane_names(layout);
    let mut planes: [&[u8]; MAX_PLANES] = [&[]; MAX_PLANES];
    for (i, p) in v.planes.iter().enumerate() {
        let what = names.get(i).copied().unwrap_or("unused plane");
        planes[i] = unsafe { bytes(p.ptr, p.len, what) }?;
    }
    WeightView::new(format, layout, rows, cols, planes)
}

/// Checks a view's structure without reading its payload: known format and layout, a
/// registered pair, a legal shape, and every plane exactly as long as the layout requires.
///
/// Errors: `NULL_POINTER`, `UNKNOWN_FORMAT`, `UNKNOWN_LAYOUT`, `INCOMPATIBLE_LAYOUT`,
/// `BAD_SHAPE`, `SIZE_MISMATCH` (naming the plane), `OVERFLOW`, `UNSUPPORTED`.
///
/// # Safety
/// `view` must point to a valid view whose plane pointers are readable for their lengths.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ninfer_weight_view_check(view: *const ninfer_weight_view) -> Status {
    call(|| unsafe { from_c(view) }.map(|_| ()))
}
