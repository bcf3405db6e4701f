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
    let mut tmp = vec![0f32; k];
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
