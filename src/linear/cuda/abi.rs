//! The weight descriptor the CUDA kernels read (`nf_weight` in `kernels/nf_blocks.cuh`):
//! where each plane starts and how a row is addressed in it, filled from a view's layout.
//! The same descriptor, with host pointers, drives the kernels' host build in the tests.

use crate::error::{Error, Result};
use crate::layouts::{self, block_scale};
use crate::registry::{Category, Format, Layout};
#[cfg(test)]
use crate::view::WeightView;

/// `struct nf_weight` (field for field; `#[repr(C)]`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct NfWeight {
    /// Plane start addresses (device or host), null for planes the layout does not have.
    pub plane: [u64; 3],
    /// Bytes per row in each row-major plane (0 otherwise).
    pub stride: [u64; 3],
    pub rows: i32,
    pub cols: i32,
    /// nvfp4: rows per stacked source.
    pub rows_per_source: i32,
    /// nvfp4: K-blocks (16 values) per row.
    pub nkb: i32,
    /// fp8: 1 for row_interleaved_v1.
    pub interleaved: i32,
}

impl NfWeight {
    /// The descriptor of an `n × k` weight of `format` in `layout` whose planes (of the
    /// byte lengths `lens`, as a view checked them) start at `base[i]` (host or device
    /// addresses). Errors: [`Error::Unsupported`] for N or K beyond `i32` (the kernels index
    /// rows and columns with 32-bit integers).
    pub(crate) fn new(
        format: Format,
        layout: Layout,
        n: usize,
        k: usize,
        lens: [usize; 3],
        base: [u64; 3],
    ) -> Result<NfWeight> {
        let (rows, cols) = match (i32::try_from(n), i32::try_from(k)) {
            (Ok(r), Ok(c)) => (r, c),
            _ => {
                return Err(Error::Unsupported(format!(
                    "linear on CUDA: N = {n}, K = {k} (at most 2³¹ − 1 each)"
                )));
            }
        };
        let sizes = layouts::plane_sizes(format, layout, n, k)?;
        let mut stride = [0u64; 3];
        for (s, &len) in stride.iter_mut().zip(&sizes) {
            *s = (len / n) as u64;
        }
        let (mut rows_per_source, mut nkb) = (0, 0);
        if format.info().category == Category::BlockScaledFloat {
            // Only the codes plane is row-major; scales are swizzled, divisors per source
            // (the divisor plane's length, checked by the view, says how many).
            stride[1] = 0;
            stride[2] = 0;
            rows_per_source = (n / (lens[2] / 4).max(1)) as i32;
            nkb = block_scale::k_blocks(k)? as i32;
        }
        let interleaved = (layout == Layout::RowInterleavedV1) as i32;
        let mut plane = [0u64; 3];
        for (p, (&b, &len)) in plane.iter_mut().zip(base.iter().zip(&lens)) {
            *p = if len > 0 { b } else { 0 };
        }
        Ok(NfWeight {
            plane,
            stride,
            rows,
            cols,
            rows_per_source,
            nkb,
            interleaved,
        })
    }

    /// The descriptor of `view` over its own host planes.
    #[cfg(test)]
    pub(crate) fn host(view: &WeightView<'_>) -> Result<NfWeight> {
        let base = [0, 1, 2].map(|i| view.plane(i).as_ptr() as u64);
        let lens = [0, 1, 2].map(|i| view.plane(i).len());
        NfWeight::new(
            view.format(),
            view.layout(),
            view.rows(),
            view.cols(),
            lens,
            base,
        )
    }
}
