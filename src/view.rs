//! [`WeightView`]: a borrowed, structurally checked descriptor of one persistent tensor.
//!
//! Every operation of the library (decode, validate, slice, gather, encode targets, linear)
//! consumes a view. Building one checks what can be checked without reading the payload:
//! the format/layout pair is registered, the shape is legal, and every plane has exactly the
//! length the layout computes from (format, rows, K) (spec §2, "structural checks").

use crate::error::{Error, Result};
use crate::layouts::{self, MAX_PLANES};
use crate::registry::{Format, Layout};

/// A structurally valid view of a `rows × cols` tensor (cols is the logical K).
#[derive(Clone, Copy, Debug)]
pub struct WeightView<'a> {
    format: Format,
    layout: Layout,
    rows: usize,
    cols: usize,
    planes: [&'a [u8]; MAX_PLANES],
    /// Each plane's length divided by `rows` (0 when `rows` is 0): [`WeightView::row_bytes`]'s
    /// stride, computed once so that the kernels' row gathering divides nothing.
    row_len: [usize; MAX_PLANES],
}

impl<'a> WeightView<'a> {
    /// Checks the pair, the shape and every plane's length (exact, never guessed) and
    /// returns the view. Plane meanings per layout: [`layouts::plane_names`].
    ///
    /// Errors: [`Error::IncompatibleLayout`], [`Error::BadShape`], [`Error::Overflow`],
    /// [`Error::SizeMismatch`] (naming the plane), [`Error::Unsupported`].
    pub fn new(
        format: Format,
        layout: Layout,
        rows: usize,
        cols: usize,
        planes: [&'a [u8]; MAX_PLANES],
    ) -> Result<Self> {
        layouts::check_planes(format, layout, rows, cols, &planes)?;
        let row_len = planes.map(|p| p.len().checked_div(rows).unwrap_or(0));
        Ok(WeightView {
            format,
            layout,
            rows,
            cols,
            planes,
            row_len,
        })
    }

    /// A view of a single-plane layout (contiguous_le_v1, gguf_blocks_v1).
    pub fn single(format: Format, rows: usize, cols: usize, bytes: &'a [u8]) -> Result<Self> {
        Self::new(format, format.info().layout, rows, cols, [bytes, &[], &[]])
    }

    /// The format.
    pub fn format(&self) -> Format {
        self.format
    }
    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }
    /// Logical rows (N).
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Logical columns (K).
    pub fn cols(&self) -> usize {
        self.cols
    }
    /// Plane `i` (empty when the layout does not use it).
    pub fn plane(&self, i: usize) -> &'a [u8] {
        self.planes[i]
    }
    /// All planes.
    pub fn planes(&self) -> [&'a [u8]; MAX_PLANES] {
        self.planes
    }

    /// [`Error::RowOutOfRange`] unless `row < rows`.
    pub fn check_row(&self, row: u64) -> Result<usize> {
        match usize::try_from(row) {
            Ok(r) if r < self.rows => Ok(r),
            _ => Err(Error::RowOutOfRange {
                row,
                rows: self.rows as u64,
            }),
        }
    }

    /// For a layout whose plane `plane` stores whole rows contiguously and in order (all
    /// registered layouts but the scale plane of block_scale_k16_m128x4_v1 and divisors):
    /// the bytes of one row in that plane.
    pub fn row_bytes(&self, plane: usize, row: usize) -> &'a [u8] {
        let per_row = self.row_len[plane];
        &self.planes[plane][row * per_row..(row + 1) * per_row]
    }
}
