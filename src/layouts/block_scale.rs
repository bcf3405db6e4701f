//! `block_scale_k16_m128x4_v1`, the layout of nvfp4 (spec §3.3; docs/layouts.md):
//!
//! - plane 0 `codes`: N × K/2 bytes, row-major; element 2j of a row in the low nibble of
//!   byte j, element 2j + 1 in the high nibble.
//! - plane 1 `scales`: the E4M3FN block scales (one per 16 K-values) in the 128×4 swizzle
//!   of cuBLASLt/CUTLASS block-scaled GEMMs: rows padded to 128, K-blocks to 4, padding
//!   zero-filled. See [`offset`](crate::layouts::block_scale::offset).
//! - plane 2 `divisors`: one little-endian FP32 weight divisor per stacked source matrix,
//!   in stacking order; the count divides N and source i covers rows
//!   i × N/count .. (i + 1) × N/count.
//!
//! K must be a multiple of 16: every checkpoint and kernel of the format has whole blocks,
//! and a partial block would need a padding rule of its own.

use crate::error::{Error, Result, mul};
use crate::layouts::PlaneSizes;

/// K-values per block scale.
pub const BLOCK: usize = 16;
/// Rows per swizzle tile.
pub const TILE_ROWS: usize = 128;
/// K-blocks per swizzle tile.
pub const TILE_BLOCKS: usize = 4;
/// Bytes per swizzle tile (128 rows × 4 K-blocks).
pub const TILE_BYTES: usize = TILE_ROWS * TILE_BLOCKS;
/// The index of the divisors plane.
pub const DIVISORS_PLANE: usize = 2;

/// The K-blocks of a row of K values: K / 16, or [`Error::BadShape`] when 16 does not
/// divide K.
pub fn k_blocks(cols: usize) -> Result<usize> {
    if !cols.is_multiple_of(BLOCK) {
        return Err(Error::BadShape(format!(
            "nvfp4: K = {cols} is not a multiple of the 16-value block"
        )));
    }
    Ok(cols / BLOCK)
}

/// Bytes of the swizzled scale plane for `rows` rows of `nkb` K-blocks:
/// round_up(rows, 128) × round_up(nkb, 4).
pub fn scales_len(rows: usize, nkb: usize) -> Result<usize> {
    let r = rows.div_ceil(TILE_ROWS);
    let b = nkb.div_ceil(TILE_BLOCKS);
    mul(mul(r, b, "scale tiles")?, TILE_BYTES, "scales bytes")
}

/// The byte offset of the scale of row `m`, K-block `kb` in the swizzled plane of a tensor
/// with `nkb` K-blocks per row:
///
/// ```text
/// (m / 128) · kt · 512 + (kb / 4) · 512 + (m % 32) · 16 + ((m % 128) / 32) · 4 + kb % 4
/// ```
///
/// with kt = ceil(nkb / 4) tiles per row band. One row's 4 scales of a tile are 4
/// contiguous bytes; the 32-row quarters of a 128-row band interleave at 4-byte steps.
#[inline]
pub fn offset(m: usize, kb: usize, nkb: usize) -> usize {
    let kt = nkb.div_ceil(TILE_BLOCKS);
    (m / TILE_ROWS) * kt * TILE_BYTES
        + (kb / TILE_BLOCKS) * TILE_BYTES
        + (m % 32) * 16
        + ((m % TILE_ROWS) / 32) * 4
        + kb % TILE_BLOCKS
}

/// Plane sizes for nvfp4 `rows × cols`: codes, swizzled scales, and 4 bytes of divisors
/// (the one-source case; [`check_divisors_len`] accepts any count dividing N).
pub(crate) fn plane_sizes(rows: usize, cols: usize) -> Result<PlaneSizes> {
    let nkb = k_blocks(cols)?;
    Ok([
        mul(rows, cols / 2, "codes bytes")?,
        scales_len(rows, nkb)?,
        4,
    ])
}

/// Checks the divisors plane length: a positive multiple of 4 whose word count divides
/// `rows`. Errors: [`Error::SizeMismatch`] (empty or ragged plane), [`Error::BadShape`]
/// (count does not divide N).
pub fn check_divisors_len(rows: usize, len: usize) -> Result<()> {
    if len == 0 || !len.is_multiple_of(4) {
        return Err(Error::SizeMismatch {
            unit: "bytes",
            plane: "divisors (4 bytes per stacked source, at least one)",
            expected: 4 * (len / 4).max(1),
            actual: len,
        });
    }
    let count = len / 4;
    if !rows.is_multiple_of(count) {
        return Err(Error::BadShape(format!(
            "nvfp4: {count} divisors do not divide N = {rows} rows into equal sources"
        )));
    }
    Ok(())
}

fn check_linear(rows: usize, nkb: usize, linear: usize, swizzled: usize) -> Result<()> {
    // The rule of every other entry point (`layouts::plane_sizes`): no zero dimension.
    if rows == 0 || nkb == 0 {
        return Err(Error::BadShape(format!(
            "nvfp4 scales [{rows}, {nkb}] (rows, K-blocks): both dimensions must be positive"
        )));
    }
    let want_lin = mul(rows, nkb, "linear scales")?;
    if linear != want_lin {
        return Err(Error::SizeMismatch {
            unit: "bytes",
            plane: "linear scales",
            expected: want_lin,
            actual: linear,
        });
    }
    let want_sw = scales_len(rows, nkb)?;
    if swizzled != want_sw {
        return Err(Error::SizeMismatch {
            unit: "bytes",
            plane: "scales",
            expected: want_sw,
            actual: swizzled,
        });
    }
    Ok(())
}

/// Swizzles linear row-major scales `[rows, nkb]` (the form checkpoints store) into the
/// 128×4 layout, zero-filling the padding. `out` must be exactly [`scales_len`] bytes.
///
/// Errors: [`Error::BadShape`] when `rows` or `nkb` is 0, [`Error::SizeMismatch`] naming
/// the wrong buffer, [`Error::Overflow`]. Nothing is written on error.
pub fn pack_scales(rows: usize, nkb: usize, linear: &[u8], out: &mut [u8]) -> Result<()> {
    check_linear(rows, nkb, linear.len(), out.len())?;
    out.fill(0);
    for m in 0..rows {
        for (kb, &s) in linear[m * nkb..(m + 1) * nkb].iter().enumerate() {
            out[offset(m, kb, nkb)] = s;
        }
    }
    Ok(())
}

/// The inverse of [`pack_scales`]: reads the `[rows, nkb]` logical scales out of a swizzled
/// plane (padding ignored). `out` must be exactly rows × nkb bytes. Errors as for
/// [`pack_scales`].
pub fn unpack_scales(rows: usize, nkb: usize, swizzled: &[u8], out: &mut [u8]) -> Result<()> {
    check_linear(rows, nkb, out.len(), swizzled.len())?;
    for m in 0..rows {
        for (kb, o) in out[m * nkb..(m + 1) * nkb].iter_mut().enumerate() {
            *o = swizzled[offset(m, kb, nkb)];
        }
    }
    Ok(())
}

/// Reads row `m`'s `out.len()` scales (all its K-blocks) from a swizzled plane.
pub fn row_scales(swizzled: &[u8], m: usize, out: &mut [u8]) {
    let nkb = out.len();
    for (kb, o) in out.iter_mut().enumerate() {
        *o = swizzled[offset(m, kb, nkb)];
    }
}

/// The first non-zero padding byte of a swizzled plane for `rows × nkb`, as (padded row,
/// K-block), if any. The layout's canonical padding is zero (0x7F would read as NaN).
pub fn first_nonzero_padding(swizzled: &[u8], rows: usize, nkb: usize) -> Option<(usize, usize)> {
    let prow = rows.div_ceil(TILE_ROWS) * TILE_ROWS;
    let pkb = nkb.div_ceil(TILE_BLOCKS) * TILE_BLOCKS;
    for m in 0..prow {
        let kb0 = if m < rows { nkb } else { 0 };
        for kb in kb0..pkb {
            if swizzled[offset(m, kb, nkb)] != 0 {
                return Some((m, kb));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_offsets_of_the_reference() {
        // M = 130, K = 80: nkb = 5, 2048 bytes.
        assert_eq!(scales_len(130, 5).unwrap(), 2048);
        let cases = [
            ((0, 0), 0),
            ((0, 3), 3),
            ((1, 0), 16),
            ((31, 0), 496),
            ((32, 0), 4),
            ((33, 1), 21),
            ((127, 3), 511),
            ((0, 4), 512),
            ((5, 4), 592),
            ((128, 0), 1024),
            ((129, 4), 1552),
        ];
        for ((m, kb), off) in cases {
            assert_eq!(offset(m, kb, 5), off, "({m}, {kb})");
        }
        // nvmath-python, a 128 × 128 operand: nkb = 8.
        assert_eq!(offset(5, 2, 8), 82);
        assert_eq!(offset(5, 5, 8), 593);
    }

    #[test]
    fn offsets_are_a_bijection_onto_the_padded_plane() {
        for (rows, nkb) in [(1usize, 1usize), (130, 5), (300, 17), (256, 8)] {
            let prow = rows.div_ceil(128) * 128;
            let pkb = nkb.div_ceil(4) * 4;
            let len = scales_len(rows, nkb).unwrap();
            assert_eq!(len, prow * pkb);
            let mut seen = vec![false; len];
            for m in 0..prow {
                for kb in 0..pkb {
                    let o = offset(m, kb, nkb);
                    assert!(!seen[o]);
                    seen[o] = true;
                }
            }
        }
    }

    #[test]
    fn divisors_plane_lengths() {
        assert!(check_divisors_len(6, 4).is_ok());
        assert!(check_divisors_len(6, 12).is_ok());
        assert!(check_divisors_len(6, 24).is_ok());
        assert!(matches!(
            check_divisors_len(6, 0),
            Err(Error::SizeMismatch { .. })
        ));
        assert!(matches!(
            check_divisors_len(6, 6),
            Err(Error::SizeMismatch { .. })
        ));
        assert!(matches!(check_divisors_len(6, 16), Err(Error::BadShape(_))));
        assert!(matches!(check_divisors_len(6, 28), Err(Error::BadShape(_))));
    }
}
