//! The layout registry's geometry: how many byte planes each layout has, what they are
//! called, and how long each is for a logical shape (spec §2 "storage layout").
//!
//! Sizes come from (format, rows, K) alone; a reader never guesses them from a payload.
//! Each layout's byte order and packing is written down in `docs/layouts.md`.

use crate::error::{Error, Result, mul};
use crate::registry::{Format, Layout, check_compatible};

/// cbindgen:ignore
pub mod block_scale;
/// cbindgen:ignore
pub mod fp8_row;
pub mod row_split;

/// The most planes any layout has. A view carries this many `(ptr, len)` pairs; unused
/// ones are empty.
pub const MAX_PLANES: usize = 3;

/// The byte length of every plane of a `(format, layout)` tensor of `rows × cols` logical
/// values; unused planes are 0.
pub type PlaneSizes = [usize; MAX_PLANES];

/// Names of the planes a layout uses, in plane order (for messages and docs).
pub fn plane_names(layout: Layout) -> &'static [&'static str] {
    match layout {
        Layout::ContiguousLeV1 => &["words"],
        Layout::GgufBlocksV1 => &["blocks"],
        Layout::RowSplitK128_V1 => &["codes", "high_bits", "scales"],
        Layout::BlockScaleK16_M128x4_V1 => &["codes", "scales", "divisors"],
        Layout::RowScaleV1 => &["codes", "scales"],
        Layout::RowInterleavedV1 => &["rows"],
    }
}

/// The name of plane `i` of `layout`; past its last plane, `"planes[i] (unused by this
/// layout)"`.
pub fn plane_name(layout: Layout, i: usize) -> &'static str {
    const UNUSED: [&str; MAX_PLANES] = [
        "planes[0] (unused by this layout)",
        "planes[1] (unused by this layout)",
        "planes[2] (unused by this layout)",
    ];
    plane_names(layout)
        .get(i)
        .or(UNUSED.get(i))
        .copied()
        .unwrap_or("plane")
}

/// Rows and K must both be positive: every registered layout stores rank-2 [N, K] tensors
/// with positive dimensions.
fn check_dims(rows: usize, cols: usize) -> Result<()> {
    if rows == 0 || cols == 0 {
        return Err(Error::BadShape(format!(
            "shape [{rows}, {cols}]: both dimensions must be positive"
        )));
    }
    Ok(())
}

/// The byte length of each plane for a `rows × cols` tensor of `format` in `layout`.
///
/// Errors: [`Error::IncompatibleLayout`] for an unregistered pair, [`Error::BadShape`] for
/// zero dimensions or a K the format cannot hold (GGUF: K a multiple of the block's value
/// count), [`Error::Overflow`] when a size does not fit in `isize`, [`Error::Unsupported`]
/// for a layout this build does not implement.
pub fn plane_sizes(format: Format, layout: Layout, rows: usize, cols: usize) -> Result<PlaneSizes> {
    check_compatible(format, layout)?;
    check_dims(rows, cols)?;
    let info = format.info();
    match layout {
        Layout::ContiguousLeV1 => {
            let n = mul(rows, cols, "rows × K")?;
            Ok([mul(n, info.block_bytes as usize, "payload bytes")?, 0, 0])
        }
        Layout::GgufBlocksV1 => {
            let bv = info.block_values as usize;
            if !cols.is_multiple_of(bv) {
                return Err(Error::BadShape(format!(
                    "{format}: K = {cols} is not a multiple of the block's {bv} values"
                )));
            }
            let row = mul(cols / bv, info.block_bytes as usize, "row bytes")?;
            Ok([mul(rows, row, "payload bytes")?, 0, 0])
        }
        Layout::RowSplitK128_V1 => row_split::plane_sizes(format, rows, cols),
        Layout::RowScaleV1 | Layout::RowInterleavedV1 => fp8_row::plane_sizes(layout, rows, cols),
        Layout::BlockScaleK16_M128x4_V1 => block_scale::plane_sizes(rows, cols),
    }
}

/// Checks every plane's length against [`plane_sizes`] (exact equality), naming the first
/// plane that differs. One exception: the divisors plane of block_scale_k16_m128x4_v1 holds
/// one FP32 word per stacked source, a count the shape cannot know; it is accepted when it
/// holds at least one word and the count divides N ([`block_scale::check_divisors_len`]).
pub fn check_planes(
    format: Format,
    layout: Layout,
    rows: usize,
    cols: usize,
    planes: &[&[u8]; MAX_PLANES],
) -> Result<()> {
    check_plane_lens(format, layout, rows, cols, planes.map(<[u8]>::len)).map(|_| ())
}

/// [`check_planes`] on plane lengths alone (an encoder's output buffers), returning the
/// layout's [`plane_sizes`].
pub fn check_plane_lens(
    format: Format,
    layout: Layout,
    rows: usize,
    cols: usize,
    lens: [usize; MAX_PLANES],
) -> Result<PlaneSizes> {
    let sizes = plane_sizes(format, layout, rows, cols)?;
    for (i, (&expected, &actual)) in sizes.iter().zip(&lens).enumerate() {
        if layout == Layout::BlockScaleK16_M128x4_V1 && i == block_scale::DIVISORS_PLANE {
            block_scale::check_divisors_len(rows, actual)?;
            continue;
        }
        if actual != expected {
            return Err(Error::SizeMismatch {
                unit: "bytes",
                plane: plane_name(layout, i),
                expected,
                actual,
            });
        }
    }
    Ok(sizes)
}
