//! Row slices and row gathers of a payload: whole rows copied byte for byte, nothing
//! decoded or renormalized (spec, GGUF paragraph after §3.4: "A row gather or a
//! consecutive row slice copies whole rows").
//!
//! The result is the payload of a `[count, K]` tensor of the same format and layout: each
//! plane's selected rows, the planes back to back in plane order, each plane exactly
//! `layouts::plane_sizes(format, layout, count, K)[i]` bytes. For the single-plane layouts
//! (contiguous_le_v1, gguf_blocks_v1) that is simply the rows' bytes.
//!
//! It works plane by plane for every layout whose planes all store whole rows contiguously
//! and in order ([`is_row_contiguous`]); layouts with swizzled or per-tensor planes are
//! refused with [`Error::Unsupported`] until they have their own row operation.

use crate::error::{Error, Result, mul};
use crate::layouts::MAX_PLANES;
use crate::registry::Layout;
use crate::view::WeightView;

/// Whether every plane of `layout` stores whole rows contiguously and in row order, so a
/// row operation is a copy of row ranges per plane. (Enable further layouts here once their
/// plane geometry is implemented and confirmed row-contiguous.)
pub fn is_row_contiguous(layout: Layout) -> bool {
    matches!(layout, Layout::ContiguousLeV1 | Layout::GgufBlocksV1)
}

/// Bytes per row of each plane (0 for an unused plane).
fn row_strides(view: &WeightView<'_>) -> Result<[usize; MAX_PLANES]> {
    let layout = view.layout();
    if !is_row_contiguous(layout) {
        return Err(Error::Unsupported(format!(
            "row slices and gathers of layout {layout} are not implemented yet"
        )));
    }
    let mut strides = [0; MAX_PLANES];
    for (i, s) in strides.iter_mut().enumerate() {
        let p = view.plane(i);
        *s = p.len() / view.rows();
        if *s * view.rows() != p.len() {
            return Err(Error::Internal(format!("plane {i} is not whole rows")));
        }
    }
    Ok(strides)
}

/// The bytes [`copy_rows`] / [`gather_rows`] write for `count` rows of `view`.
///
/// Errors: [`Error::Unsupported`] for a layout that is not row-contiguous,
/// [`Error::Overflow`].
pub fn rows_bytes(view: &WeightView<'_>, count: usize) -> Result<usize> {
    let strides = row_strides(view)?;
    let row: usize = strides.iter().sum();
    mul(row, count, "count × row bytes")
}

fn check_out(needed: usize, out: &[u8]) -> Result<()> {
    if out.len() < needed {
        return Err(Error::BufferTooSmall {
            what: "output rows",
            needed,
            actual: out.len(),
        });
    }
    Ok(())
}

/// Copies rows `start .. start + count` of `view` into `out` (see the module doc for the
/// byte layout) and returns the number of bytes written. `count = 0` writes nothing.
///
/// Errors: [`Error::Overflow`] when `start + count` overflows, [`Error::RowOutOfRange`]
/// when `start + count > rows`, [`Error::BufferTooSmall`] when `out` is shorter than
/// [`rows_bytes`] (a longer buffer is accepted), [`Error::Unsupported`] for a layout that
/// is not row-contiguous. Nothing is written on error.
pub fn copy_rows(view: &WeightView<'_>, start: u64, count: u64, out: &mut [u8]) -> Result<usize> {
    let end = start
        .checked_add(count)
        .ok_or_else(|| Error::Overflow(format!("row range {start} + {count}")))?;
    if end > view.rows() as u64 {
        // The first requested row that does not exist.
        return Err(Error::RowOutOfRange {
            row: start.max(view.rows() as u64),
            rows: view.rows() as u64,
        });
    }
    // Both fit in usize: they are at most rows.
    let (start, count) = (start as usize, count as usize);
    let strides = row_strides(view)?;
    let needed = rows_bytes(view, count)?;
    check_out(needed, out)?;
    let mut at = 0;
    for (i, &s) in strides.iter().enumerate() {
        let n = s * count;
        out[at..at + n].copy_from_slice(&view.plane(i)[s * start..s * start + n]);
        at += n;
    }
    Ok(needed)
}

/// Copies rows `indices[0], indices[1], …` of `view` (any order, repeats allowed) into
/// `out`, as the payload of a `[indices.len(), K]` tensor (see the module doc), and returns
/// the number of bytes written.
///
/// Errors: [`Error::IndexOutOfRange`] naming the first entry `>= rows` (checked before
/// anything is written), [`Error::BufferTooSmall`], [`Error::Overflow`],
/// [`Error::Unsupported`] for a layout that is not row-contiguous. Nothing is written on
/// error.
pub fn gather_rows(view: &WeightView<'_>, indices: &[u64], out: &mut [u8]) -> Result<usize> {
    let rows = view.rows() as u64;
    if let Some((position, &index)) = indices.iter().enumerate().find(|(_, i)| **i >= rows) {
        return Err(Error::IndexOutOfRange {
            position,
            index,
            rows,
        });
    }
    let strides = row_strides(view)?;
    let needed = rows_bytes(view, indices.len())?;
    check_out(needed, out)?;
    let mut at = 0;
    for (i, &s) in strides.iter().enumerate() {
        if s == 0 {
            continue;
        }
        let plane = view.plane(i);
        for &r in indices {
            let r = r as usize;
            out[at..at + s].copy_from_slice(&plane[s * r..s * r + s]);
            at += s;
        }
    }
    Ok(needed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Format;

    fn payload() -> Vec<u8> {
        // 4 rows × 2 Q8_0 blocks (68 bytes per row), each byte names its row.
        (0..4 * 68)
            .map(|i| (i / 68) as u8 * 10 + (i % 7) as u8)
            .collect()
    }

    #[test]
    fn slices_and_gathers_copy_whole_rows() {
        let p = payload();
        let v = WeightView::single(Format::GgufQ8_0, 4, 64, &p).unwrap();
        let mut out = vec![0xAA; 3 * 68 + 5];
        assert_eq!(copy_rows(&v, 1, 2, &mut out).unwrap(), 136);
        assert_eq!(&out[..136], &p[68..204]);
        assert_eq!(out[136], 0xAA);
        assert_eq!(gather_rows(&v, &[3, 0, 3], &mut out).unwrap(), 204);
        assert_eq!(&out[..68], &p[204..272]);
        assert_eq!(&out[68..136], &p[..68]);
        assert_eq!(&out[136..204], &p[204..272]);
        // The result is itself a valid [count, K] view.
        assert!(WeightView::single(Format::GgufQ8_0, 3, 64, &out[..204]).is_ok());
        assert_eq!(copy_rows(&v, 4, 0, &mut []).unwrap(), 0);
        assert_eq!(gather_rows(&v, &[], &mut []).unwrap(), 0);
    }

    #[test]
    fn refused_inputs_write_nothing() {
        let p = payload();
        let v = WeightView::single(Format::GgufQ8_0, 4, 64, &p).unwrap();
        let mut out = vec![0xAA; 4 * 68];
        let st = |r: Result<usize>| r.unwrap_err().status();
        use crate::error::Status::*;
        assert_eq!(st(copy_rows(&v, 3, 2, &mut out)), RowOutOfRange);
        assert_eq!(st(copy_rows(&v, 5, 0, &mut out)), RowOutOfRange);
        assert_eq!(st(copy_rows(&v, u64::MAX, 2, &mut out)), Overflow);
        assert_eq!(st(copy_rows(&v, 0, 2, &mut out[..135])), BufferTooSmall);
        assert_eq!(st(gather_rows(&v, &[0, 4], &mut out)), IndexOutOfRange);
        assert_eq!(
            st(gather_rows(&v, &[0, 1], &mut out[..100])),
            BufferTooSmall
        );
        assert!(out.iter().all(|&b| b == 0xAA));
    }
}
