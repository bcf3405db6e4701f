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

/// Logical direct words of one type, in logical order (host integers: the layout owns the
/// byte order). The variant names the word type, so encoding a slice of one type as another
/// format is an error, never a silent conversion (spec §3.1: conversions are explicit).
#[derive(Clone, Copy, Debug)]
pub enum Words<'a> {
    /// bf16 words (bit patterns).
    Bf16(&'a [u16]),
    /// binary32 words (bit patterns; `f32::to_bits` keeps NaN payloads exactly).
    Fp32(&'a [u32]),
    /// int32 values.
    Int32(&'a [i32]),
}

impl Words<'_> {
    /// The direct format these words belong to.
    pub fn format(&self) -> Format {
        match self {
            Words::Bf16(_) => Format::Bf16,
            Words::Fp32(_) => Format::Fp32,
            Words::Int32(_) => Format::Int32,
        }
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        match self {
            Words::Bf16(w) => w.len(),
            Words::Fp32(w) => w.len(),
            Words::Int32(w) => w.len(),
        }
    }

    /// Whether there are no words.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn check_len(what: &'static str, needed: usize, actual: usize) -> Result<()> {
    if needed != actual {
        return Err(Error::SizeMismatch {
            unit: "bytes",
            plane: what,
            expected: needed,
            actual,
        });
    }
    Ok(())
}

/// Encodes logical words of `format` into `contiguous_le_v1` bytes: word i at bytes
/// `[i·w, (i+1)·w)`, least significant byte first, on every host. Every word is written
/// unchanged (NaN payloads, signalling bits, signed zeros included).
///
/// Errors: [`Error::InvalidArgument`] when `words` are of another type than `format` (an
/// implicit cross-type encoding, refused: convert first with [`fp32_to_bf16_rne`] or
/// [`int32_from_i64`]); [`Error::SizeMismatch`] unless `out.len()` is exactly
/// `words.len() × w`. Nothing is written on error.
pub fn encode_le(format: Format, words: Words<'_>, out: &mut [u8]) -> Result<()> {
    if words.format() != format {
        return Err(Error::InvalidArgument(format!(
            "{} words cannot be stored as {format}: conversions between direct types are \
             explicit (fp32_to_bf16_rne, int32_from_i64)",
            words.format()
        )));
    }
    match words {
        Words::Bf16(w) => {
            check_len("contiguous_le_v1 plane", w.len() * 2, out.len())?;
            for (o, v) in out.chunks_exact_mut(2).zip(w) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
        Words::Fp32(w) => {
            check_len("contiguous_le_v1 plane", w.len() * 4, out.len())?;
            for (o, v) in out.chunks_exact_mut(4).zip(w) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
        Words::Int32(w) => {
            check_len("contiguous_le_v1 plane", w.len() * 4, out.len())?;
            for (o, v) in out.chunks_exact_mut(4).zip(w) {
                o.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    Ok(())
}

/// Decodes `contiguous_le_v1` bf16 bytes into logical words (exact).
/// Errors: [`Error::SizeMismatch`] unless `bytes.len() == 2 × out.len()`.
pub fn decode_bf16_words(bytes: &[u8], out: &mut [u16]) -> Result<()> {
    check_len("contiguous_le_v1 plane", out.len() * 2, bytes.len())?;
    for (o, w) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *o = u16::from_le_bytes([w[0], w[1]]);
    }
    Ok(())
}

/// Decodes `contiguous_le_v1` fp32 bytes into logical words (bit patterns, exact).
/// Errors: [`Error::SizeMismatch`] unless `bytes.len() == 4 × out.len()`.
pub fn decode_fp32_words(bytes: &[u8], out: &mut [u32]) -> Result<()> {
    check_len("contiguous_le_v1 plane", out.len() * 4, bytes.len())?;
    for (o, w) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *o = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    }
    Ok(())
}

/// Decodes `contiguous_le_v1` int32 bytes into values (two's complement, exact).
/// Errors: [`Error::SizeMismatch`] unless `bytes.len() == 4 × out.len()`.
pub fn decode_int32_words(bytes: &[u8], out: &mut [i32]) -> Result<()> {
    check_len("contiguous_le_v1 plane", out.len() * 4, bytes.len())?;
    for (o, w) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *o = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
    }
    Ok(())
}

/// The exact binary32 image of a bf16 word: the word in the high 16 bits, 16 zero low bits
/// (spec §3.1). Every word, NaN payloads included, keeps its bits.
#[inline]
pub fn bf16_to_fp32(word: u16) -> u32 {
    (word as u32) << 16
}

/// The explicit fp32 → bf16 conversion `fp32_to_bf16_rne`: round to nearest, ties to even,
/// on the 16 discarded low bits.
///
/// - Finite values round to nearest-even; values beyond the largest bf16 round to ±Inf
///   exactly as RNE dictates (e.g. `f32::MAX` → +Inf), and subnormals round like any other
///   value (no flush to zero); signed zeros keep their sign.
/// - ±Inf stay ±Inf.
/// - NaN policy: a NaN becomes the **quiet** NaN with the same sign and the top 7 payload bits
///   of the source (bits 22..16), with the quiet bit (bf16 bit 6) forced on. The low 16
///   payload bits are dropped, never rounded (rounding a NaN could carry into the exponent),
///   and forcing the quiet bit keeps a NaN whose kept payload bits are zero from becoming Inf.
///   A quiet NaN whose low 16 bits are zero therefore converts to the bf16 word equal to its
///   high half.
#[inline]
pub fn fp32_to_bf16_rne(word: u32) -> u16 {
    if word & 0x7fff_ffff > 0x7f80_0000 {
        return ((word >> 16) as u16) | 0x0040;
    }
    let round = 0x7fff + ((word >> 16) & 1);
    // No overflow: word ≤ 0xff80_0000 here, and adding < 2^16 stays below 2^32.
    ((word + round) >> 16) as u16
}

/// The named range policy of an int32 value conversion (spec §3.1: the recipe defines it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Int32Range {
    /// `int32_exact`: a value outside [-2^31, 2^31 - 1] is refused ([`Error::InvalidArgument`]).
    Exact,
    /// `int32_saturate`: a value outside the interval becomes its nearest endpoint.
    Saturate,
}

/// The explicit int64 → int32 value conversion under `policy` (e.g. for I64 index tensors).
///
/// Errors: [`Error::InvalidArgument`] naming the value when it is out of range under
/// [`Int32Range::Exact`].
pub fn int32_from_i64(value: i64, policy: Int32Range) -> Result<i32> {
    match (i32::try_from(value), policy) {
        (Ok(v), _) => Ok(v),
        (Err(_), Int32Range::Saturate) => Ok(if value < 0 { i32::MIN } else { i32::MAX }),
        (Err(_), Int32Range::Exact) => Err(Error::InvalidArgument(format!(
            "{value} is outside the int32 interval [-2147483648, 2147483647] (policy int32_exact)"
        ))),
    }
}

/// The explicit binary32 → int32 value conversion: only integral values convert (no
/// rounding); the range policy applies to integral values outside the interval.
///
/// Errors: [`Error::InvalidArgument`] for NaN, ±Inf, a non-integral value, or (under
/// [`Int32Range::Exact`]) an integral value out of range.
pub fn int32_from_f32(value: f32, policy: Int32Range) -> Result<i32> {
    if !value.is_finite() || value.fract() != 0.0 {
        return Err(Error::InvalidArgument(format!(
            "{value} is not an integral binary32 value"
        )));
    }
    // `as i64` saturates only beyond ±2^63, which lies outside int32 either way.
    int32_from_i64(value as i64, policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_every_word_round_trips() {
        let words: Vec<u16> = (0..=u16::MAX).collect();
        let mut bytes = vec![0u8; words.len() * 2];
        encode_le(Format::Bf16, Words::Bf16(&words), &mut bytes).unwrap();
        assert_eq!(&bytes[2..4], &[1, 0]); // little-endian on every host
        let mut back = vec![0u16; words.len()];
        decode_bf16_words(&bytes, &mut back).unwrap();
        assert_eq!(words, back);
        let mut f = vec![0f32; words.len()];
        decode_row(Format::Bf16, &bytes, &mut f).unwrap();
        for (w, v) in words.iter().zip(&f) {
            assert_eq!(v.to_bits(), (*w as u32) << 16);
        }
    }

    #[test]
    fn fp32_representative_words_round_trip() {
        let words = [
            0x0000_0000u32, // +0
            0x8000_0000,    // -0
            0x0000_0001,    // min subnormal 2^-149
            0x807f_ffff,    // largest negative subnormal
            0x0080_0000,    // min normal
            0x7f7f_ffff,    // max finite
            0x7f80_0000,    // +Inf
            0xff80_0000,    // -Inf
            0x7fc0_0000,    // quiet NaN
            0x7f80_0001,    // signalling NaN, payload 1
            0xffbf_ffff,    // negative signalling NaN, full payload
            0x7fc1_2345,    // quiet NaN with payload
            0x3f80_0000,    // 1.0
        ];
        let mut bytes = vec![0u8; words.len() * 4];
        encode_le(Format::Fp32, Words::Fp32(&words), &mut bytes).unwrap();
        assert_eq!(&bytes[8..12], &[1, 0, 0, 0]);
        let mut back = vec![0u32; words.len()];
        decode_fp32_words(&bytes, &mut back).unwrap();
        assert_eq!(words.as_slice(), back);
        let mut f = vec![0f32; words.len()];
        decode_row(Format::Fp32, &bytes, &mut f).unwrap();
        for (w, v) in words.iter().zip(&f) {
            assert_eq!(v.to_bits(), *w);
        }
    }

    #[test]
    fn int32_extrema_round_trip() {
        let words = [i32::MIN, -1, 0, 1, i32::MAX, 0x1234_5678];
        let mut bytes = vec![0u8; words.len() * 4];
        encode_le(Format::Int32, Words::Int32(&words), &mut bytes).unwrap();
        assert_eq!(&bytes[0..4], &[0, 0, 0, 0x80]);
        assert_eq!(&bytes[4..8], &[0xff; 4]);
        assert_eq!(&bytes[20..24], &[0x78, 0x56, 0x34, 0x12]);
        let mut back = vec![0i32; words.len()];
        decode_int32_words(&bytes, &mut back).unwrap();
        assert_eq!(words.as_slice(), back);
    }

    #[test]
    fn implicit_cross_type_encoding_is_refused() {
        let mut out = [0xaau8; 8];
        let e = encode_le(Format::Bf16, Words::Fp32(&[0x3f80_0000, 0]), &mut out).unwrap_err();
        assert_eq!(e.status(), crate::Status::InvalidArgument);
        let e = encode_le(Format::Int32, Words::Fp32(&[0x3f80_0000, 0]), &mut out).unwrap_err();
        assert_eq!(e.status(), crate::Status::InvalidArgument);
        let e = encode_le(Format::Fp32, Words::Int32(&[1, 2]), &mut out).unwrap_err();
        assert_eq!(e.status(), crate::Status::InvalidArgument);
        assert_eq!(out, [0xaa; 8]);
        let e = encode_le(Format::Fp32, Words::Fp32(&[1]), &mut out).unwrap_err();
        assert_eq!(e.status(), crate::Status::SizeMismatch);
    }

    #[test]
    fn fp32_to_bf16_rne_hand_worked() {
        assert_eq!(fp32_to_bf16_rne(0x3f80_0000), 0x3f80); // 1.0
        assert_eq!(fp32_to_bf16_rne(0x3f80_8000), 0x3f80); // tie, even stays
        assert_eq!(fp32_to_bf16_rne(0x3f81_8000), 0x3f82); // tie, odd rounds up
        assert_eq!(fp32_to_bf16_rne(0x3f80_8001), 0x3f81); // above the tie
        assert_eq!(fp32_to_bf16_rne(0xbf80_7fff), 0xbf80); // below the tie, negative
        assert_eq!(fp32_to_bf16_rne(0x8000_0000), 0x8000); // -0 keeps its sign
        assert_eq!(fp32_to_bf16_rne(0x0000_8000), 0x0000); // subnormal tie → even (0)
        assert_eq!(fp32_to_bf16_rne(0x0001_8000), 0x0002); // subnormal tie → even (2)
        assert_eq!(fp32_to_bf16_rne(0x7f7f_ffff), 0x7f80); // max finite → +Inf (RNE)
        assert_eq!(fp32_to_bf16_rne(0xff80_0000), 0xff80); // -Inf
        assert_eq!(fp32_to_bf16_rne(0x7f80_0001), 0x7fc0); // sNaN, low payload → quiet NaN
        assert_eq!(fp32_to_bf16_rne(0xff81_0000), 0xffc1); // sNaN payload kept, quietened
        assert_eq!(fp32_to_bf16_rne(0x7fc1_ffff), 0x7fc1); // payload truncated, not rounded
    }

    #[test]
    fn int32_policies() {
        assert_eq!(int32_from_i64(-2147483648, Int32Range::Exact), Ok(i32::MIN));
        assert_eq!(int32_from_i64(2147483647, Int32Range::Exact), Ok(i32::MAX));
        assert!(int32_from_i64(2147483648, Int32Range::Exact).is_err());
        assert!(int32_from_i64(-2147483649, Int32Range::Exact).is_err());
        assert_eq!(int32_from_i64(1 << 40, Int32Range::Saturate), Ok(i32::MAX));
        assert_eq!(
            int32_from_i64(-(1 << 40), Int32Range::Saturate),
            Ok(i32::MIN)
        );
        assert_eq!(int32_from_f32(-3.0, Int32Range::Exact), Ok(-3));
        assert!(int32_from_f32(0.5, Int32Range::Exact).is_err());
        assert!(int32_from_f32(f32::NAN, Int32Range::Saturate).is_err());
        assert_eq!(int32_from_f32(3e9, Int32Range::Saturate), Ok(i32::MAX));
        assert!(int32_from_f32(3e9, Int32Range::Exact).is_err());
    }
}
