//! Encoding validation of a payload (spec §2 "structural checks" are done by
//! [`WeightView::new`]; this goes further and reads the payload).
//!
//! A view that validates decodes to the values its format defines, with no NaN or infinite
//! scale. Decoding never requires validation: it is a pure function of the bytes.

use crate::error::{Error, Result};
use crate::formats::gguf;
use crate::registry::Category;
use crate::view::WeightView;

/// Checks every encoding rule of the view's format over the whole payload.
///
/// - direct formats (bf16, fp32, int32): always `Ok` — every word is a legal logical word
///   (spec §3.1; whether non-finite words are allowed is a tensor-level constraint).
/// - gguf_*: every binary16 scale field finite ([`gguf::validate`]).
/// - other categories: [`Error::Unsupported`] until their validators exist (never a silent
///   `Ok`).
///
/// Errors: [`Error::InvalidEncoding`] with the row and block (or group) of the first
/// offending location, in row-major order.
pub fn validate(view: &WeightView<'_>) -> Result<()> {
    let format = view.format();
    match format.info().category {
        Category::DirectFloat | Category::DirectInt => Ok(()),
        Category::GgufBlock => gguf::validate(view),
        _ => Err(Error::Unsupported(format!(
            "validating {format} is not implemented yet"
        ))),
    }
}
