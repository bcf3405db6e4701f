//! The two layouts of the row-scaled FP8 formats (spec §3.4; docs/layouts.md):
//!
//! - `row_scale_v1` (fp8_e4m3fn_row_bf16): plane 0 `codes` = N × K E4M3FN bytes,
//!   row-major; plane 1 `scales` = N BF16 words, little-endian, in row order.
//! - `row_interleaved_v1` (fp8_e4m3fn_row_fp16): plane 0 `rows` = N records of K + 2 bytes,
//!   each the row's binary16 scale (little-endian) followed by its K codes. No padding and
//!   no alignment: record n starts at byte n × (K + 2).

use crate::error::{Error, Result, mul};
use crate::layouts::PlaneSizes;
use crate::registry::Layout;
use crate::view::WeightView;

/// Bytes of one `row_interleaved_v1` record: the 2-byte scale then K codes.
pub fn interleaved_stride(cols: usize) -> Result<usize> {
    cols.checked_add(2)
        .ok_or_else(|| Error::Overflow(format!("row record: K = {cols} + 2")))
}

/// Plane sizes of a `rows × cols` tensor in `layout` (one of the two above).
pub(crate) fn plane_sizes(layout: Layout, rows: usize, cols: usize) -> Result<PlaneSizes> {
    match layout {
        Layout::RowScaleV1 => Ok([
            mul(rows, cols, "codes bytes")?,
            mul(rows, 2, "scales bytes")?,
            0,
        ]),
        Layout::RowInterleavedV1 => Ok([mul(rows, interleaved_stride(cols)?, "rows bytes")?, 0, 0]),
        other => Err(Error::Internal(format!("{other} is not an fp8 row layout"))),
    }
}

/// One row of a row-scaled FP8 view: its 16-bit scale word and its K code bytes.
///
/// The view must be of layout `row_scale_v1` or `row_interleaved_v1` and `row < rows`
/// (callers check with [`WeightView::check_row`]).
pub fn row_parts<'a>(view: &WeightView<'a>, row: usize) -> (u16, &'a [u8]) {
    match view.layout() {
        Layout::RowInterleavedV1 => {
            let rec = view.row_bytes(0, row);
            (u16::from_le_bytes([rec[0], rec[1]]), &rec[2..])
        }
        _ => {
            let s = view.row_bytes(1, row);
            (u16::from_le_bytes([s[0], s[1]]), view.row_bytes(0, row))
        }
    }
}

/// The mutable planes of a row-scaled FP8 tensor, split per row: calls `f(row, scale,
/// codes)` for every row in parallel, where `scale` is the row's 2-byte little-endian
/// scale slot and `codes` its K code bytes. `planes` must already have their exact sizes.
pub(crate) fn for_each_row_mut<F>(layout: Layout, cols: usize, planes: [&mut [u8]; 2], f: F)
where
    F: Fn(usize, &mut [u8], &mut [u8]) + Sync + Send,
{
    let [p0, p1] = planes;
    let mut rows: Vec<(&mut [u8], &mut [u8])> = match layout {
        Layout::RowInterleavedV1 => p0.chunks_mut(cols + 2).map(|r| r.split_at_mut(2)).collect(),
        _ => p1.chunks_mut(2).zip(p0.chunks_mut(cols)).collect(),
    };
    crate::threads::map_slice(&mut rows, || (), |_, r, (s, c)| f(r, s, c));
}
