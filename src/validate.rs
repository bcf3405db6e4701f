//! Encoding validation of a payload (spec §2 "structural checks" are done by
//! [`WeightView::new`]; this goes further and reads the payload).
//!
//! A view that validates decodes to the values its format defines, with no NaN or infinite
//! scale. Decoding never requires validation: it is a pure function of the bytes.

use crate::error::Result;
use crate::formats::{fp8_row, gguf, nvfp4};
use crate::layouts::row_split;
use crate::registry::Category;
use crate::view::WeightView;

/// Checks every encoding rule of the view's format over the whole payload.
///
/// - direct formats (bf16, fp32, int32): always `Ok` — every word is a legal logical word
///   (spec §3.1; whether non-finite words are allowed is a tensor-level constraint).
/// - gguf_*: every binary16 scale field finite ([`gguf::validate`]).
/// - grouped formats (row_split_k128_v1): group rules and canonical padding
///   ([`row_split::validate`]).
/// - fp8 row-scaled formats: [`fp8_row::validate`].
/// - nvfp4: divisors, block scales and scale-plane padding ([`nvfp4::validate`]).
///
/// Errors: [`crate::Error::InvalidEncoding`] with the row and block (or group) of the
/// first offending location, in row-major order (per each validator's documentation).
pub fn validate(view: &WeightView<'_>) -> Result<()> {
    let format = view.format();
    match format.info().category {
        Category::DirectFloat | Category::DirectInt => Ok(()),
        Category::GgufBlock => gguf::validate(view),
        Category::GroupedInt => row_split::validate(view),
        Category::RowScaledFloat => fp8_row::validate(view),
        Category::BlockScaledFloat => nvfp4::validate(view),
    }
}
