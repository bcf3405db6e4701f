//! §3.1 direct scalar formats (bf16, fp32, int32) in `contiguous_le_v1`: one little-endian
//! word per element, rows in order.

use crate::error::{Error, Result};
use crate::registry::Format;

/// Decodes one row of little-endian direct words into f32, exactly.
///
/// `bytes` holds `out.len()` words. bf16 expands by appending 16 zero bits (every word,
/// NaN payloads and signalling bits included, maps to the binary32 word with the same
/// high half); fp32 words are copied bit for bit. int32 has no exact f32 image and is
/// refused with [`Error::Unsupported`]: read its words directly.
pub fn decode_row(format: Format, bytes: &[u8], out: &mut [f32]) -> Result<()> {
    match format {
        Format::Bf16 => {
            debug_assert_eq!(bytes.len(), out.len() * 2);
            for (o, w) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f32::from_bits((u16::from_le_bytes([w[0], w[1]]) as u32) << 16);
            }
            Ok(())
        }
        Format::Fp32 => {
            debug_assert_eq!(bytes.len(), out.len() * 4);
            for (o, w) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_bits(u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            }
            Ok(())
        }
        Format::Int32 => Err(Error::Unsupported(
            "int32 words have no exact f32 value; read the words directly".into(),
        )),
        other => Err(Error::Internal(format!("{other} is not a direct format"))),
    }
}
