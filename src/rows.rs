//! Row slices and row gathers of a payload: whole rows copied byte for byte, nothing
//! decoded or renormalized (spec, GGUF paragraph after §3.4: "A row gather or a
//! consecutive row slice copies whole rows").
//!
//! The result is the payload of a `[count, K]` tensor of the same format and layout: each
//! plane's selected rows, the planes back to back in plane order, each plane exactly
//! `layouts::plane_sizes(format, layout, count, K)[i]` bytes. For the single-plane layouts
//! (contiguous_le_v1, gguf_blocks_v1, row_interleaved_v1) that is simply the rows' bytes;
//! for row_split_k128_v1 the rows' codes, then high bits, then scales (each with its
//! row's canonical K padding); for row_scale_v1 the rows' codes, then their scales.
//!
//! It works plane by plane for every layout whose planes all store whole rows contiguously
//! and in order ([`is_row_contiguous`]); layouts with swizzled or per-tensor planes are
//! refused with [`Error::Unsupported`] until they have their own row operation.

use crate::error::{Error, Result, mul};
use crate::layouts::{self, MAX_PLANES};
use crate::registry::Layout;
use crate::view::WeightView;

/// Whether every plane of `layout` stores whole rows contiguously and in row order, so a
/// row operation is a copy of row ranges per plane: every layout but
/// block_scale_k16_m128x4_v1 (its scale plane is swizzled in 128-row tiles and its divisors
/// belong to stacked sources, so a row subset is not a byte subset).
pub fn is_row_contiguous(layout: Layout) -> bool {
    !matches!(layout, Layout::BlockScaleK16_M128x4_V1)
}

/// Bytes per row of each plane (0 for an unused plane).
fn row_strides(view: &WeightView<'_>) -> Result<[usize; MAX_PLANES]> {
    let layout = view.layout();
    if !is_row_contiguous(layout) {
        return Err(Error::Unsupported(format!(
            "row slices and gathers of layout {layout} are not implemented yet"
        )));
    }
    // A one-row tensor's planes are each row's bytes; the view's planes must be exactly
    // `rows` of them (checked, so a layout that pads or tiles rows is never sliced wrongly).
    let strides = layouts::plane_sizes(view.format(), layout, 1, view.cols())?;
    for (i, &s) in strides.iter().enumerate() {
        if s.checked_mul(view.rows()) != Some(view.plane(i).len()) {
            return Err(Error::Internal(format!(
                "plane {i} of {layout} is not {} rows of {s} bytes",
                view.rows()
            )));
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

    /// Every row-contiguous multi-plane layout: the gathered planes are the source rows'
    /// bytes plane by plane, form a valid view, and each gathered row decodes exactly as
    /// its source row (or is refused alike).
    #[test]
    fn multi_plane_layouts_gather_plane_by_plane() {
        use crate::registry::compatible;
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut byte = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        };
        for layout in [
            Layout::RowSplitK128_V1,
            Layout::RowScaleV1,
            Layout::RowInterleavedV1,
        ] {
            for format in Format::all().filter(|&f| compatible(f, layout)) {
                let (rows, cols) = (5, 200);
                let sizes = layouts::plane_sizes(format, layout, rows, cols).unwrap();
                let planes: Vec<Vec<u8>> = sizes
                    .iter()
                    .map(|&n| (0..n).map(|_| byte() & 0x3F).collect())
                    .collect();
                let v = WeightView::new(
                    format,
                    layout,
                    rows,
                    cols,
                    [&planes[0], &planes[1], &planes[2]],
                )
                .unwrap();
                let idx = [4u64, 0, 2, 2];
                let mut out = vec![0u8; rows_bytes(&v, idx.len()).unwrap()];
                gather_rows(&v, &idx, &mut out).unwrap();
                let got = layouts::plane_sizes(format, layout, idx.len(), cols).unwrap();
                let mut at = 0;
                let mut parts: Vec<&[u8]> = Vec::new();
                for (p, &n) in got.iter().enumerate() {
                    let per = sizes[p] / rows;
                    let part = &out[at..at + n];
                    for (j, &r) in idx.iter().enumerate() {
                        let r = r as usize;
                        assert_eq!(
                            &part[j * per..(j + 1) * per],
                            &planes[p][r * per..(r + 1) * per],
                            "{format} {layout} plane {p}"
                        );
                    }
                    parts.push(part);
                    at += n;
                }
                assert_eq!(at, out.len());
                let g = WeightView::new(
                    format,
                    layout,
                    idx.len(),
                    cols,
                    [parts[0], parts[1], parts[2]],
                )
                .unwrap();
                for (j, &r) in idx.iter().enumerate() {
                    let (mut a, mut b) = (vec![0f32; cols], vec![0f32; cols]);
                    let ra = crate::decode::decode_row(&v, r, &mut a).map_err(|e| e.status());
                    let rb =
                        crate::decode::decode_row(&g, j as u64, &mut b).map_err(|e| e.status());
                    assert_eq!(ra, rb, "{format} {layout}");
                    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a), bits(&b), "{format} {layout} row {r}");
                }
            }
        }
    }

    #[test]
    fn block_scale_layout_is_refused() {
        let layout = Layout::BlockScaleK16_M128x4_V1;
        let f = Format::all()
            .find(|&f| crate::registry::compatible(f, layout))
            .unwrap();
        let planes: Vec<Vec<u8>> = layouts::plane_sizes(f, layout, 2, 64)
            .unwrap()
            .iter()
            .map(|&n| vec![0; n])
            .collect();
        let v = WeightView::new(f, layout, 2, 64, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let e = copy_rows(&v, 0, 1, &mut [0u8; 1024]).unwrap_err();
        assert_eq!(e.status(), crate::error::Status::Unsupported);
        let e = gather_rows(&v, &[1], &mut [0u8; 1024]).unwrap_err();
        assert_eq!(e.status(), crate::error::Status::Unsupported);
        assert!(!is_row_contiguous(layout));
    }
}
