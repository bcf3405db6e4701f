//! Row decoding to dense values, for every format and layout (dispatch only: the
//! arithmetic lives in each format's module).

use crate::dtype::Dtype;
use crate::error::{Error, Result};
use crate::formats::{direct, fp8_row, gguf, nvfp4};
use crate::registry::Category;
use crate::view::WeightView;

/// Decodes row `row` of `view` into `out` (exactly K = `view.cols()` values), each the
/// exact represented value of its format's decoding equation, as binary32.
///
/// Errors: [`Error::RowOutOfRange`], [`Error::BufferTooSmall`] when `out.len() < K` (a
/// longer buffer is accepted; only its first K values are written),
/// [`Error::Unsupported`] for a format this build cannot decode. Nothing is written on error.
pub fn decode_row(view: &WeightView<'_>, row: u64, out: &mut [f32]) -> Result<()> {
    let r = view.check_row(row)?;
    let k = view.cols();
    if out.len() < k {
        return Err(Error::BufferTooSmall {
            what: "output row (floats)",
            needed: k,
            actual: out.len(),
        });
    }
    let out = &mut out[..k];
    let format = view.format();
    match format.info().category {
        Category::DirectFloat | Category::DirectInt => {
            direct::decode_row(format, view.row_bytes(0, r), out)
        }
        Category::GgufBlock => gguf::dequantize(format, view.row_bytes(0, r), out),
        Category::GroupedInt => crate::layouts::row_split::decode_row(view, r, out),
        Category::RowScaledFloat => fp8_row::decode_row(view, r, out),
        Category::BlockScaledFloat => nvfp4::decode_row(view, r, out),
    }
}

/// Whether [`decode_row`] is implemented for the view's format in this build.
pub fn is_decodable(view: &WeightView<'_>) -> bool {
    is_decodable_format(view.format())
}

/// Whether [`decode_row`] is implemented for `format` in this build (in every layout the
/// format has).
pub fn is_decodable_format(format: crate::registry::Format) -> bool {
    match format.info().category {
        Category::DirectInt => false,
        Category::GgufBlock => gguf::is_decodable(format),
        Category::DirectFloat
        | Category::GroupedInt
        | Category::RowScaledFloat
        | Category::BlockScaledFloat => true,
    }
}

/// Decodes row `row` into `out` as `dtype` (native-endian words): f32 is [`decode_row`];
/// bf16 and f16 are rounded from the exact f32 value with round-to-nearest-even (f16
/// overflows to ±Inf, NaN stays NaN). `out` must hold at least K × `dtype.size()` bytes.
pub fn decode_row_as(view: &WeightView<'_>, row: u64, dtype: Dtype, out: &mut [u8]) -> Result<()> {
    let k = view.cols();
    let needed = k
        .checked_mul(dtype.size())
        .ok_or_else(|| Error::Overflow("K".into()))?;
    if out.len() < needed {
        return Err(Error::BufferTooSmall {
            what: "output row (bytes)",
            needed,
            actual: out.len(),
        });
    }
    let mut tmp = scratch_row(k)?;
    decode_row(view, row, &mut tmp)?;
    match dtype {
        Dtype::F32 => {
            for (o, v) in out.chunks_exact_mut(4).zip(&tmp) {
                o.copy_from_slice(&v.to_ne_bytes());
            }
        }
        Dtype::Bf16 => {
            for (o, v) in out.chunks_exact_mut(2).zip(&tmp) {
                o.copy_from_slice(&half::bf16::from_f32(*v).to_bits().to_ne_bytes());
            }
        }
        Dtype::F16 => {
            for (o, v) in out.chunks_exact_mut(2).zip(&tmp) {
                o.copy_from_slice(&half::f16::from_f32(*v).to_bits().to_ne_bytes());
            }
        }
    }
    Ok(())
}

/// Whether decoding can refuse a row of this view's format (a rule its decoder checks):
/// grouped, row-scaled FP8 and nvfp4 rows can be refused; direct and GGUF rows cannot.
fn rows_can_be_refused(view: &WeightView<'_>) -> bool {
    matches!(
        view.format().info().category,
        Category::GroupedInt | Category::RowScaledFloat | Category::BlockScaledFloat
    )
}

/// A zeroed scratch row of `k` floats, allocated fallibly (`k` comes from the caller's
/// view): [`Error::OutOfMemory`] when the allocator refuses it.
fn scratch_row(k: usize) -> Result<Vec<f32>> {
    crate::error::try_filled(k, 0f32, "a decoded row")
}

/// Checks the row range `first .. first + count` of `view` and that `out_len` elements
/// hold `count × K` of them; returns (first, count, count × K).
fn rows_range(
    view: &WeightView<'_>,
    first: u64,
    count: u64,
    out_len: usize,
    what: &'static str,
) -> Result<(usize, usize, usize)> {
    let end = first
        .checked_add(count)
        .ok_or_else(|| Error::Overflow(format!("row range {first} + {count}")))?;
    if end > view.rows() as u64 {
        return Err(Error::RowOutOfRange {
            row: first.max(view.rows() as u64),
            rows: view.rows() as u64,
        });
    }
    // Both fit in usize: they are at most rows.
    let (first, count) = (first as usize, count as usize);
    let needed = count
        .checked_mul(view.cols())
        .ok_or_else(|| Error::Overflow(format!("{count} rows × K = {}", view.cols())))?;
    if out_len < needed {
        return Err(Error::BufferTooSmall {
            what,
            needed,
            actual: out_len,
        });
    }
    Ok((first, count, needed))
}

/// For formats whose decoder can refuse a row (and those this build cannot decode):
/// decodes every row of the range into a scratch row first, so that a refusal is reported
/// before anything is written.
fn check_rows(view: &WeightView<'_>, first: usize, count: usize) -> Result<()> {
    if !rows_can_be_refused(view) && is_decodable(view) {
        return Ok(());
    }
    let mut tmp = scratch_row(view.cols())?;
    for r in first..first + count {
        decode_row(view, r as u64, &mut tmp)?;
    }
    Ok(())
}

/// Decodes rows `first .. first + count` of `view` into `out` as f32, row after row: row
/// `first + i` lands at `out[i·K .. (i + 1)·K]`, each value exactly what [`decode_row`]
/// gives. `out` must hold at least `count × K` values (only those are written); `count = 0`
/// decodes nothing.
///
/// Errors: [`Error::Overflow`] (`first + count` or `count × K`), [`Error::RowOutOfRange`]
/// when `first + count > rows`, [`Error::BufferTooSmall`], [`Error::Unsupported`], and
/// [`Error::InvalidEncoding`] for the lowest row the decoder refuses. Rows of formats whose
/// decoder can refuse a row (grouped, row-scaled FP8, nvfp4) are all checked in a first
/// pass, so nothing is written on error.
pub fn decode_rows(view: &WeightView<'_>, first: u64, count: u64, out: &mut [f32]) -> Result<()> {
    let (first, count, needed) = rows_range(view, first, count, out.len(), "output rows (floats)")?;
    let k = view.cols();
    if needed == 0 {
        return Ok(());
    }
    check_rows(view, first, count)?;
    for (i, o) in out[..needed].chunks_exact_mut(k).enumerate() {
        decode_row(view, (first + i) as u64, o)?;
    }
    Ok(())
}

/// [`decode_rows`] into 16-bit words: `dtype` [`Dtype::Bf16`] or [`Dtype::F16`], each word
/// rounded from the exact f32 value with round-to-nearest-even as [`decode_row_as`] does
/// (f16 overflow gives ±Inf; NaN stays NaN). `out` holds at least `count × K` words.
///
/// Errors: as [`decode_rows`], plus [`Error::InvalidArgument`] for [`Dtype::F32`] (use
/// [`decode_rows`]). Nothing is written on error.
pub fn decode_rows_words(
    view: &WeightView<'_>,
    first: u64,
    count: u64,
    dtype: Dtype,
    out: &mut [u16],
) -> Result<()> {
    if dtype == Dtype::F32 {
        return Err(Error::InvalidArgument(
            "decode_rows_words writes bf16 or f16 words, not f32".into(),
        ));
    }
    let (first, count, needed) = rows_range(view, first, count, out.len(), "output rows (words)")?;
    let k = view.cols();
    if needed == 0 {
        return Ok(());
    }
    check_rows(view, first, count)?;
    let mut tmp = scratch_row(k)?;
    for (i, o) in out[..needed].chunks_exact_mut(k).enumerate() {
        decode_row(view, (first + i) as u64, &mut tmp)?;
        match dtype {
            Dtype::Bf16 => o
                .iter_mut()
                .zip(&tmp)
                .for_each(|(o, v)| *o = half::bf16::from_f32(*v).to_bits()),
            _ => o
                .iter_mut()
                .zip(&tmp)
                .for_each(|(o, v)| *o = half::f16::from_f32(*v).to_bits()),
        }
    }
    Ok(())
}
