//! Encoding validation of gguf_* payloads: every binary16 field must be finite.
//!
//! Any byte pattern is a legal code in every GGUF block type; the only rule a payload can
//! break is a NaN or infinite scale (d, dmin, or IQ1_M's spread super-scale), which a GGUF
//! producer never writes and which would poison every value of its block.

use super::blocks::{Field, block_type, iq1_m};
use super::u16_at;
use crate::error::{Error, Result};
use crate::registry::Format;
use crate::view::WeightView;

#[inline(always)]
fn is_finite_f16(bits: u16) -> bool {
    bits & 0x7C00 != 0x7C00
}

/// The first non-finite binary16 field of `block` by name: its descriptor's `f16` fields
/// (`d`, `dmin`), then IQ1_M's `spread` super-scale.
fn bad_field(f16: &[Field], spread: bool, block: &[u8]) -> Option<(&'static str, u16)> {
    for f in f16 {
        let bits = u16_at(block, f.at);
        if !is_finite_f16(bits) {
            return Some((f.name, bits));
        }
    }
    if spread {
        let bits = iq1_m::super_scale_bits(block);
        if !is_finite_f16(bits) {
            return Some(("super-scale", bits));
        }
    }
    None
}

/// Checks that every block of a gguf_* view has finite binary16 scale fields (`d`, `dmin`,
/// IQ1_M's super-scale spread over its scales words), scanning rows then blocks in order.
///
/// Errors: [`Error::InvalidEncoding`] at the first offending (row, block index within the
/// row), naming the field and its bits; [`Error::Internal`] if `view` is not a GGUF format.
pub fn validate(view: &WeightView<'_>) -> Result<()> {
    let format = view.format();
    let Some(desc) = block_type(format) else {
        return Err(Error::Internal(format!("{format} is not a GGUF format")));
    };
    let f16: Vec<Field> = desc.f16_fields().collect();
    let spread = format == Format::GgufIq1M;
    for row in 0..view.rows() {
        for (i, block) in view.row_bytes(0, row).chunks_exact(desc.bytes).enumerate() {
            if let Some((name, bits)) = bad_field(&f16, spread, block) {
                return Err(Error::encoding(
                    row as u64,
                    i as u64,
                    format!("{format} block field {name} is not finite (binary16 {bits:#06x})"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Location;

    #[test]
    fn first_non_finite_scale_is_located() {
        // 3 rows × 2 blocks of Q4_K; make row 1 block 1's dmin +Inf and row 2 block 0's d NaN.
        let mut p = vec![0u8; 3 * 2 * 144];
        p[(2 + 1) * 144 + 2..(2 + 1) * 144 + 4].copy_from_slice(&0x7C00u16.to_le_bytes());
        p[4 * 144..4 * 144 + 2].copy_from_slice(&0xFE01u16.to_le_bytes());
        let v = WeightView::single(Format::GgufQ4_K, 3, 512, &p).unwrap();
        match validate(&v) {
            Err(Error::InvalidEncoding { at, reason }) => {
                assert_eq!(at, Location { row: 1, block: 1 });
                assert!(reason.contains("dmin"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Subnormal, zero, negative and max-finite scales are valid.
        let mut p = vec![0u8; 4 * 34];
        for (i, bits) in [0x0001u16, 0x8000, 0xFBFF, 0x7BFF].iter().enumerate() {
            p[34 * i..34 * i + 2].copy_from_slice(&bits.to_le_bytes());
        }
        assert!(validate(&WeightView::single(Format::GgufQ8_0, 1, 128, &p).unwrap()).is_ok());
    }

    #[test]
    fn iq1_m_spread_scale_is_checked() {
        // Super-scale 0x7C00 (+Inf): nibbles 0, 0, C, 7 in the tops of words 0..4.
        let mut b = vec![0u8; 56 * 2];
        b[56 + 48 + 5] = 0xC0; // word 2, top nibble C
        b[56 + 48 + 7] = 0x70; // word 3, top nibble 7
        let v = WeightView::single(Format::GgufIq1M, 1, 512, &b).unwrap();
        match validate(&v) {
            Err(Error::InvalidEncoding { at, reason }) => {
                assert_eq!(at, Location { row: 0, block: 1 });
                assert!(reason.contains("super-scale"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Same nibbles minus the top one: 0x0C00 is finite.
        b[56 + 48 + 7] = 0x00;
        let v = WeightView::single(Format::GgufIq1M, 1, 512, &b).unwrap();
        assert!(validate(&v).is_ok());
    }
}
