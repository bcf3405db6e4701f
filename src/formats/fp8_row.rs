//! §3.4 row-scaled FP8 weights: `fp8_e4m3fn_row_bf16` (layout `row_scale_v1`) and
//! `fp8_e4m3fn_row_fp16` (layout `row_interleaved_v1`), their validation, exact decoding,
//! and the `fp8_row_maxabs` encoder.
//!
//! Every logical weight is one E4M3FN code `c[n,k]`; every row one multiplier `s[n]` (BF16
//! or binary16). The represented weight is `binary32(c32 · s32)` with both factors expanded
//! exactly. Plane byte order: [`crate::layouts::fp8_row`].

use crate::error::{Error, Result};
use crate::formats::float_source::FloatSource;
use crate::isa::{Isa, on_tier};
use crate::layouts::{self, fp8_row as layout};
use crate::registry::{Format, Layout};
use crate::threads;
use crate::view::WeightView;
use crate::words::e4m3fn;
use half::{bf16, f16};

/// The whole-row "block" of an error location (the rule concerns the row scale).
const WHOLE_ROW: u64 = crate::error::Location::NONE;

fn is_fp8_row(format: Format) -> Result<()> {
    match format {
        Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => Ok(()),
        other => Err(Error::InvalidArgument(format!(
            "{other} is not a row-scaled FP8 format"
        ))),
    }
}

/// The exact binary32 value of a row-scale word of `format` (BF16 for
/// fp8_e4m3fn_row_bf16, binary16 for fp8_e4m3fn_row_fp16).
#[inline]
pub fn scale_value(format: Format, bits: u16) -> f32 {
    match format {
        Format::Fp8E4m3fnRowFp16 => f16::from_bits(bits).to_f32(),
        _ => f32::from_bits((bits as u32) << 16),
    }
}

/// Checks one row against §3.4: the scale has sign bit zero and is finite (positive zero
/// and subnormals allowed; −0, ±Inf, NaN and negative values refused); no code is a NaN
/// word (0x7F, 0xFF); a positive-zero scale admits only the signed-zero codes 0x00 and
/// 0x80.
///
/// Errors: [`Error::InvalidEncoding`] at (`row`, `u64::MAX`) for the scale and at
/// (`row`, column) for a code.
pub fn check_row(format: Format, row: u64, scale: u16, codes: &[u8]) -> Result<()> {
    let (exp_mask, name) = match format {
        Format::Fp8E4m3fnRowFp16 => (0x7C00u16, "binary16"),
        _ => (0x7F80u16, "BF16"),
    };
    if scale & 0x8000 != 0 {
        return Err(Error::encoding(
            row,
            WHOLE_ROW,
            format!("{name} row scale {scale:#06x} has its sign bit set (negative or -0)"),
        ));
    }
    if scale & exp_mask == exp_mask {
        return Err(Error::encoding(
            row,
            WHOLE_ROW,
            format!("{name} row scale {scale:#06x} is infinite or NaN"),
        ));
    }
    let zero_scale = scale == 0;
    // Fast path (vectorizes): no NaN word, and no nonzero magnitude under a zero scale.
    let bad = |c: &u8| c & 0x7F == 0x7F || (zero_scale && c & 0x7F != 0);
    if !codes.iter().fold(false, |acc, c| acc | bad(c)) {
        return Ok(());
    }
    for (k, &c) in codes.iter().enumerate() {
        if e4m3fn::is_nan(c) {
            return Err(Error::encoding(
                row,
                k as u64,
                format!("code {c:#04x} at column {k} is an E4M3FN NaN word"),
            ));
        }
        if zero_scale && c & 0x7F != 0 {
            return Err(Error::encoding(
                row,
                k as u64,
                format!("code {c:#04x} at column {k} is not a signed zero in a zero-scale row"),
            ));
        }
    }
    Ok(())
}

/// Validates every row of a row-scaled FP8 view ([`check_row`]); the error reported is the
/// one of the lowest failing row.
pub fn validate(view: &WeightView<'_>) -> Result<()> {
    is_fp8_row(view.format())?;
    let format = view.format();
    threads::first_error(
        view.rows(),
        || (),
        |_, r| {
            let (s, codes) = layout::row_parts(view, r);
            check_row(format, r as u64, s, codes).err()
        },
    )
    .map_or(Ok(()), Err)
}

/// Decodes row `r` (already range-checked) into `out` (exactly K values): checks the row
/// ([`check_row`]) then writes `binary32(e4m3fn(c) · s32)`. Nothing is written on error.
pub fn decode_row(view: &WeightView<'_>, r: usize, out: &mut [f32]) -> Result<()> {
    is_fp8_row(view.format())?;
    let (s, codes) = layout::row_parts(view, r);
    check_row(view.format(), r as u64, s, codes)?;
    decode_codes(codes, scale_value(view.format(), s), out);
    Ok(())
}

/// `out[k] = binary32(e4m3fn(codes[k]) · s32)` for codes already checked (no NaN word),
/// on this machine's best tier; the result is bit-identical to [`decode_codes_scalar`]
/// (tested).
pub fn decode_codes(codes: &[u8], s32: f32, out: &mut [f32]) {
    decode_codes_on(Isa::detect(), codes, s32, out)
}

/// [`decode_codes`] on tier `isa` (one the machine runs).
pub(crate) fn decode_codes_on(isa: Isa, codes: &[u8], s32: f32, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if codes.len() >= 8 && isa.avx2() && isa.available() {
        // SAFETY: the machine runs the AVX2 tier (AVX2, F16C), checked just above.
        unsafe { decode_codes_avx2(codes, s32, out) };
        return;
    }
    let _ = isa;
    decode_codes_scalar(codes, s32, out)
}

/// The portable form of [`decode_codes`]: a table lookup and one binary32 multiply.
pub fn decode_codes_scalar(codes: &[u8], s32: f32, out: &mut [f32]) {
    for (o, &c) in out.iter_mut().zip(codes) {
        *o = e4m3fn::decode(c) * s32;
    }
}

/// Eight codes at a time: an E4M3FN word maps bit for bit onto the binary16 word of its
/// value times 2^-8 (`(w & 0x7F) << 7 | (w & 0x80) << 8`: same exponent field with bias
/// 15 instead of 7, fraction widened, subnormals onto subnormals), which F16C widens
/// exactly; × 256 is exact, so the one rounding is the final multiply by the scale, as in
/// the scalar path.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn decode_codes_avx2(codes: &[u8], s32: f32, out: &mut [f32]) {
    use std::arch::x86_64::*;
    let n = codes.len().min(out.len());
    let full = n / 8 * 8;
    let s = _mm256_set1_ps(s32);
    let k256 = _mm256_set1_ps(256.0);
    let m7f = _mm_set1_epi16(0x7F);
    let m80 = _mm_set1_epi16(0x80);
    for i in (0..full).step_by(8) {
        // SAFETY: i + 8 <= full <= codes.len() and <= out.len(); unaligned load/store.
        unsafe {
            let b = _mm_loadl_epi64(codes.as_ptr().add(i).cast::<__m128i>());
            let w = _mm_cvtepu8_epi16(b);
            let h = _mm_or_si128(
                _mm_slli_epi16(_mm_and_si128(w, m7f), 7),
                _mm_slli_epi16(_mm_and_si128(w, m80), 8),
            );
            let v = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtph_ps(h), k256), s);
            _mm256_storeu_ps(out.as_mut_ptr().add(i), v);
        }
    }
    decode_codes_scalar(&codes[full..n], s32, &mut out[full..n]);
}

/// `x` rounded to the nearest BF16 (ties to even), as an exact binary32 value. Identical
/// to `half::bf16::from_f32` for every non-NaN input (±Inf stay, finite values beyond the
/// BF16 range become ±Inf); a NaN stays a NaN (the encoder refuses both).
#[inline(always)]
fn round_bf16(x: f32) -> f32 {
    let b = x.to_bits();
    // No u32 overflow: the largest non-NaN pattern is 0xFF80_0000. A select, not a
    // branch, keeps the loop vectorizable.
    let r = f32::from_bits((b.wrapping_add(0x7FFF + ((b >> 16) & 1))) & 0xFFFF_0000);
    if x.is_nan() { x } else { r }
}

/// Pass 1 of the encoder for row `r` of the source (its values rounded to BF16): the scale
/// word, or the row's error. Inlined into each tier's copy ([`on_tier`]).
#[inline(always)]
fn row_scale(format: Format, src: &FloatSource<'_>, r: usize, cols: usize) -> Result<u16> {
    let row = r as u64;
    // Per chunk one vectorizable pass (max of |x| and a finiteness flag), then the slow
    // search for the column only on failure.
    let (mut amax, mut bad) = (0f32, None);
    for_row_chunks(src, r, cols, |j, xs| {
        if bad.is_some() {
            return;
        }
        let (m, finite) = xs.iter().fold((0f32, true), |(m, f), &x| {
            (m.max(x.abs()), f & x.is_finite())
        });
        if !finite {
            bad = Some(j + xs.iter().position(|x| !x.is_finite()).unwrap_or(0));
        }
        amax = amax.max(m);
    });
    if let Some(col) = bad {
        return Err(Error::NonFiniteSource {
            row,
            col: col as u64,
        });
    }
    if amax == 0.0 {
        return Ok(0);
    }
    let raw = amax / 448.0;
    let bits = match format {
        Format::Fp8E4m3fnRowFp16 => {
            let s = f16::from_f32(raw);
            if s.is_infinite() {
                return Err(Error::ScaleOverflow {
                    row,
                    group: WHOLE_ROW,
                });
            }
            if s.to_bits() == 0 {
                0x0001 // 2^-24, the smallest binary16 subnormal
            } else {
                s.to_bits()
            }
        }
        _ => {
            let s = bf16::from_f32(raw);
            if s.is_infinite() {
                return Err(Error::ScaleOverflow {
                    row,
                    group: WHOLE_ROW,
                });
            }
            // Below 2^-126 the FP32 reciprocal of a BF16 scale can overflow (1 / 2^-133 is
            // 2^133): such scales are raised to 2^-126 (0x0080), the smallest BF16 normal.
            if s.to_bits() < 0x0080 {
                0x0080
            } else {
                s.to_bits()
            }
        }
    };
    Ok(bits)
}

/// Pass 2 for row `r` of the source (BF16-rounded): the codes from the scale word (no
/// failure possible). Inlined into each tier's copy ([`on_tier`]).
#[inline(always)]
fn row_codes(format: Format, scale: u16, src: &FloatSource<'_>, r: usize, codes: &mut [u8]) {
    if scale == 0 {
        codes.fill(0);
        return;
    }
    let inv = 1.0f32 / scale_value(format, scale);
    for_row_chunks(src, r, codes.len(), |j, xs| {
        for (c, &x) in codes[j..j + xs.len()].iter_mut().zip(xs) {
            // satfinite clamps to ±448 before rounding's overflow: the spec's clamp then RNE.
            *c = e4m3fn::encode_satfinite((x * inv).clamp(-448.0, 448.0));
        }
    });
}

/// Source values the encoder converts at a time: a fixed 1 KiB stack buffer, so that no
/// scratch memory is sized by K (nothing to allocate, nothing that can fail).
const CHUNK: usize = 256;

/// Calls `f(first column, values)` over row `r` of the source (`cols` values), rounded to
/// BF16, in chunks of at most [`CHUNK`] values in column order.
#[inline(always)]
fn for_row_chunks(src: &FloatSource<'_>, r: usize, cols: usize, mut f: impl FnMut(usize, &[f32])) {
    let mut buf = [0f32; CHUNK];
    for j in (0..cols).step_by(CHUNK) {
        let b = &mut buf[..CHUNK.min(cols - j)];
        src.read_into(r * cols + j, b);
        for x in b.iter_mut() {
            *x = round_bf16(*x);
        }
        f(j, b);
    }
}

fn check_exact(
    plane: &'static str,
    unit: &'static str,
    expected: usize,
    actual: usize,
) -> Result<()> {
    if expected != actual {
        return Err(Error::SizeMismatch {
            unit,
            plane,
            expected,
            actual,
        });
    }
    Ok(())
}

/// Lays out logical words in the planes of `format`: `codes` = rows × cols E4M3FN words
/// (row-major), `scales` = one 16-bit scale word per row (BF16 or binary16 bits). The
/// words are copied unchanged and not validated (use [`validate`] on the result): this is
/// the layout step of an import. `planes` as for [`fp8_row_maxabs`].
///
/// Errors: [`Error::InvalidArgument`], [`Error::BadShape`], [`Error::SizeMismatch`]
/// (inputs or planes), [`Error::Overflow`]. Nothing is written on error.
pub fn pack(
    format: Format,
    rows: usize,
    cols: usize,
    codes: &[u8],
    scales: &[u16],
    planes: [&mut [u8]; 2],
) -> Result<()> {
    is_fp8_row(format)?;
    let lay = format.info().layout;
    let sizes = layouts::plane_sizes(format, lay, rows, cols)?;
    check_exact("codes", "codes", rows * cols, codes.len())?;
    check_exact("scales", "scale words", rows, scales.len())?;
    for (i, p) in planes.iter().enumerate() {
        check_exact(layouts::plane_name(lay, i), "bytes", sizes[i], p.len())?;
    }
    layout::for_each_row_mut(lay, cols, planes, |r, s, c| {
        s.copy_from_slice(&scales[r].to_le_bytes());
        c.copy_from_slice(&codes[r * cols..(r + 1) * cols]);
    });
    Ok(())
}

/// The inverse of [`pack`]: the logical words of a row-scaled FP8 view, codes row-major
/// into `codes` (rows × cols) and the row scale words into `scales` (rows). Words are
/// copied unchanged, valid or not.
///
/// Errors: [`Error::InvalidArgument`] (not an fp8 row view), [`Error::SizeMismatch`].
pub fn unpack(view: &WeightView<'_>, codes: &mut [u8], scales: &mut [u16]) -> Result<()> {
    is_fp8_row(view.format())?;
    let (rows, cols) = (view.rows(), view.cols());
    check_exact("codes", "codes", rows * cols, codes.len())?;
    check_exact("scales", "scale words", rows, scales.len())?;
    for r in 0..rows {
        let (s, c) = layout::row_parts(view, r);
        scales[r] = s;
        codes[r * cols..(r + 1) * cols].copy_from_slice(c);
    }
    Ok(())
}

/// The `fp8_row_maxabs` encoder: quantizes a row-major `rows × cols` source into the
/// planes of `format` (fp8_e4m3fn_row_bf16 → `planes = [codes, scales]` of row_scale_v1;
/// fp8_e4m3fn_row_fp16 → `planes = [rows, empty]` of row_interleaved_v1), each exactly the
/// length [`layouts::plane_sizes`] gives.
///
/// Per row, independently of any chunking (spec §3.4 paragraph on fp8_row_maxabs; all
/// arithmetic binary32 with round-to-nearest-even, no flush-to-zero):
/// 1. every source value is rounded to BF16 (RNE); a value that is not finite after that
///    rounding (NaN, ±Inf, or a finite f32 above the BF16 range) fails the encoder;
/// 2. `amax = max |x|`; an all-zero row (signed zeros included) stores scale +0 and
///    codes 0x00;
/// 3. `raw = binary32(amax / 448)`, rounded to the scale type with ties to even:
///    - binary16: a nonzero `raw` rounding to zero becomes 0x0001 (2^-24); a scale
///      rounding to infinity fails with [`Error::ScaleOverflow`];
///    - BF16 (this crate's choice, the spec is silent): a scale below 2^-126 (zero or
///      subnormal) becomes 0x0080 (2^-126), so that its FP32 reciprocal is finite; BF16
///      scales never overflow (BF16 max / 448 is finite);
/// 4. `inv = binary32(1 / s32)` of the stored scale; each code is
///    `e4m3fn_rne(clamp(binary32(x · inv), -448, 448))` (a negative value that rounds to
///    zero gives 0x80).
///
/// Nothing is written unless every row succeeds. Errors: [`Error::InvalidArgument`] (not
/// an fp8 row format), [`Error::BadShape`], [`Error::SizeMismatch`],
/// [`Error::NonFiniteSource`] and [`Error::ScaleOverflow`] of the lowest failing row.
pub fn fp8_row_maxabs(
    format: Format,
    src: FloatSource<'_>,
    rows: usize,
    cols: usize,
    planes: [&mut [u8]; 2],
) -> Result<()> {
    fp8_row_maxabs_on(Isa::detect(), format, src, rows, cols, planes)
}

/// [`fp8_row_maxabs`] on tier `isa` (one the machine runs): the same row code compiled for
/// its features ([`on_tier`]), bit-identical on every tier.
pub(crate) fn fp8_row_maxabs_on(
    isa: Isa,
    format: Format,
    src: FloatSource<'_>,
    rows: usize,
    cols: usize,
    planes: [&mut [u8]; 2],
) -> Result<()> {
    is_fp8_row(format)?;
    src.check_shape(rows, cols)?;
    let lay = format.info().layout;
    layouts::check_plane_lens(
        format,
        lay,
        rows,
        cols,
        [planes[0].len(), planes[1].len(), 0],
    )?;
    let scales: Vec<Result<u16>> = threads::map_rows(
        rows,
        || (),
        |_, r| {
            crate::fpenv::require_subnormals("fp8_row_maxabs")?;
            on_tier!(isa, || row_scale(format, &src, r, cols))
        },
    );
    let scales = scales.into_iter().collect::<Result<Vec<u16>>>()?;
    layout::for_each_row_mut(lay, cols, planes, |r, s, codes| {
        s.copy_from_slice(&scales[r].to_le_bytes());
        on_tier!(isa, || row_codes(format, scales[r], &src, r, codes));
    });
    debug_assert!(matches!(lay, Layout::RowScaleV1 | Layout::RowInterleavedV1));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(format: Format, rows: usize, cols: usize, p: [&'a [u8]; 2]) -> WeightView<'a> {
        WeightView::new(format, format.info().layout, rows, cols, [p[0], p[1], &[]]).unwrap()
    }

    #[test]
    fn decode_hand_worked_bf16_rows() {
        // Row 0: scale 0.5 (BF16 0x3F00), codes 1.0 (0x38), -1.5 (0xBC), 448 (0x7E).
        // Row 1: scale +0, codes +0 and -0.
        let codes = [0x38, 0xBC, 0x7E, 0x00, 0x80, 0x00];
        let scales = [0x00, 0x3F, 0x00, 0x00];
        let v = view(Format::Fp8E4m3fnRowBf16, 2, 3, [&codes, &scales]);
        let mut out = [0f32; 3];
        decode_row(&v, 0, &mut out).unwrap();
        assert_eq!(out, [0.5, -0.75, 224.0]);
        decode_row(&v, 1, &mut out).unwrap();
        assert_eq!(out.map(f32::to_bits), [0, 0x8000_0000, 0]);
        validate(&v).unwrap();
    }

    #[test]
    fn decode_hand_worked_fp16_interleaved() {
        // K = 2; row 0: scale 2^-24 (0x0001), codes 0x08 (2^-6), 0x01 (2^-9):
        // 2^-30 and 2^-33, exact in binary32.
        let rows = [0x01, 0x00, 0x08, 0x01, 0x00, 0x3C, 0x38, 0xC0];
        let v = view(Format::Fp8E4m3fnRowFp16, 2, 2, [&rows, &[]]);
        let mut out = [0f32; 2];
        decode_row(&v, 0, &mut out).unwrap();
        assert_eq!(out, [2f32.powi(-30), 2f32.powi(-33)]);
        decode_row(&v, 1, &mut out).unwrap();
        assert_eq!(out, [1.0, -2.0]);
    }

    #[test]
    fn refused_rows_and_near_misses() {
        let f = Format::Fp8E4m3fnRowBf16;
        let h = Format::Fp8E4m3fnRowFp16;
        let bad = |fmt, s, c: &[u8]| match check_row(fmt, 7, s, c) {
            Err(Error::InvalidEncoding { at, .. }) => (at.row, at.block),
            other => panic!("{other:?}"),
        };
        assert_eq!(bad(f, 0x3F80, &[0, 0x7F]), (7, 1));
        assert_eq!(bad(f, 0x3F80, &[0xFF]), (7, 0));
        assert_eq!(bad(f, 0x8000, &[0]), (7, u64::MAX)); // -0
        assert_eq!(bad(f, 0xBF80, &[0]), (7, u64::MAX)); // -1
        assert_eq!(bad(f, 0x7F80, &[0]), (7, u64::MAX)); // +Inf
        assert_eq!(bad(f, 0x7FC0, &[0]), (7, u64::MAX)); // NaN
        assert_eq!(bad(f, 0x0000, &[0x80, 0x01]), (7, 1)); // zero scale, nonzero code
        assert_eq!(bad(h, 0x7C00, &[0]), (7, u64::MAX));
        assert_eq!(bad(h, 0x8000, &[0]), (7, u64::MAX));
        assert_eq!(bad(h, 0x0000, &[0x7E]), (7, 0));
        // Near misses.
        check_row(f, 0, 0x0001, &[0x7E, 0xFE]).unwrap(); // subnormal scale, max codes
        check_row(f, 0, 0x7F7F, &[0x7E]).unwrap(); // largest finite BF16
        check_row(f, 0, 0x0000, &[0x00, 0x80]).unwrap();
        check_row(h, 0, 0x7BFF, &[0x7E]).unwrap();
        check_row(h, 0, 0x0001, &[0xFE]).unwrap();
        // 0x7C00 is finite for BF16 (a normal number), only infinite for binary16.
        check_row(f, 0, 0x7C00, &[0x01]).unwrap();
        // decode refuses and writes nothing.
        let codes = [0x38, 0x7F];
        let scales = [0x80, 0x3F];
        let v = view(f, 1, 2, [&codes, &scales]);
        let mut out = [9f32; 2];
        assert_eq!(
            decode_row(&v, 0, &mut out).unwrap_err().status(),
            crate::Status::InvalidEncoding
        );
        assert_eq!(out, [9.0; 2]);
        assert!(validate(&v).is_err());
    }

    #[test]
    fn pack_unpack_round_trip_every_word() {
        // Every code word and a spread of scale words (valid or not: layout only).
        let (rows, cols) = (37, 7);
        let codes: Vec<u8> = (0..rows * cols).map(|i| (i * 7 % 256) as u8).collect();
        let scales: Vec<u16> = (0..rows).map(|i| (i as u16).wrapping_mul(1777)).collect();
        for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
            let lay = format.info().layout;
            let sizes = layouts::plane_sizes(format, lay, rows, cols).unwrap();
            let (mut p0, mut p1) = (vec![0u8; sizes[0]], vec![0u8; sizes[1]]);
            pack(format, rows, cols, &codes, &scales, [&mut p0, &mut p1]).unwrap();
            let v = WeightView::new(format, lay, rows, cols, [&p0, &p1, &[]]).unwrap();
            let (mut c2, mut s2) = (vec![0u8; codes.len()], vec![0u16; rows]);
            unpack(&v, &mut c2, &mut s2).unwrap();
            assert_eq!((c2, s2), (codes.clone(), scales.clone()));
            // The byte order of the docs: row 1's scale then codes.
            if format == Format::Fp8E4m3fnRowFp16 {
                assert_eq!(&p0[9..11], &scales[1].to_le_bytes());
                assert_eq!(&p0[11..18], &codes[7..14]);
            } else {
                assert_eq!(&p1[2..4], &scales[1].to_le_bytes());
            }
            let e = pack(format, rows, cols, &codes[1..], &scales, [&mut p0, &mut p1]);
            assert_eq!(e.unwrap_err().status(), crate::Status::SizeMismatch);
        }
    }

    #[test]
    fn simd_decode_is_bit_identical_to_scalar_every_tier() {
        let codes: Vec<u8> = (0..=255u8).filter(|&c| !e4m3fn::is_nan(c)).collect();
        let mut scales: Vec<f32> = [0x0000u16, 0x0001, 0x0080, 0x3F80, 0x7F7F, 0x3C00, 0x0055]
            .iter()
            .map(|&b| scale_value(Format::Fp8E4m3fnRowBf16, b))
            .collect();
        scales.extend(
            [0x0001u16, 0x03FF, 0x3C00, 0x7BFF, 0x2000]
                .iter()
                .map(|&b| scale_value(Format::Fp8E4m3fnRowFp16, b)),
        );
        let mut n = 0;
        for &s in &scales {
            for len in [codes.len(), 7, 8, 9, 17] {
                let c = &codes[codes.len() - len..];
                let mut b = vec![1f32; len];
                decode_codes_scalar(c, s, &mut b);
                for isa in Isa::tested() {
                    let mut a = vec![0f32; len];
                    decode_codes_on(isa, c, s, &mut a);
                    for (x, y) in a.iter().zip(&b) {
                        assert_eq!(x.to_bits(), y.to_bits(), "{isa:?} scale {s:e}");
                    }
                }
                n += len;
            }
        }
        assert!(n > 3000);
    }

    /// Rows longer than the encoder's chunk: the max |x| and the first non-finite column
    /// are found in any chunk, and every chunk's codes are written.
    #[test]
    fn rows_longer_than_a_chunk() {
        let cols = 2 * CHUNK + 88;
        let mut x: Vec<f32> = (0..cols).map(|j| (j % 7) as f32 - 3.0).collect();
        x[cols - 1] = 448.0; // amax in the last chunk: scale exactly 1.0
        let mut codes = vec![0u8; cols];
        let mut scales = vec![0u8; 2];
        fp8_row_maxabs(
            Format::Fp8E4m3fnRowBf16,
            FloatSource::F32(&x),
            1,
            cols,
            [&mut codes, &mut scales],
        )
        .unwrap();
        assert_eq!(u16::from_le_bytes([scales[0], scales[1]]), 0x3F80);
        for (j, (&c, &v)) in codes.iter().zip(&x).enumerate() {
            assert_eq!(c, e4m3fn::encode_satfinite(v), "column {j}");
        }
        x[CHUNK + 5] = f32::NAN;
        x[2 * CHUNK + 1] = f32::INFINITY;
        let e = fp8_row_maxabs(
            Format::Fp8E4m3fnRowBf16,
            FloatSource::F32(&x),
            1,
            cols,
            [&mut codes, &mut scales],
        )
        .unwrap_err();
        assert_eq!(
            e,
            Error::NonFiniteSource {
                row: 0,
                col: CHUNK as u64 + 5
            }
        );
    }

    #[test]
    fn round_bf16_matches_half() {
        let mut x = 0x1234_5678u32;
        let check = |b: u32| {
            let v = f32::from_bits(b);
            let h = bf16::from_f32(v).to_f32();
            let r = round_bf16(v);
            if v.is_nan() {
                assert!(r.is_nan());
            } else {
                assert_eq!(r.to_bits(), h.to_bits(), "{b:#010x}");
            }
        };
        for _ in 0..1_000_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            check(x);
        }
        for b in [
            0,
            0x8000_0000,
            0x7F7F_FFFF,
            0x7F7F_8000,
            0x7F7F_7FFF,
            0x0000_8000,
            0x0001_8000,
        ] {
            check(b);
            check(b | 0x8000_0000);
        }
        for hi in 0..=0xFFFFu32 {
            check((hi << 16) | 0x8000); // every tie
        }
    }

    #[test]
    fn maxabs_hand_worked() {
        // amax 448 → scale 1.0; values exact in E4M3FN.
        let src = [448.0f32, -1.5, 0.0, -0.0, 0.0, 0.0, 0.0, 0.0];
        let (mut codes, mut scales) = ([0u8; 8], [0u8; 4]);
        fp8_row_maxabs(
            Format::Fp8E4m3fnRowBf16,
            FloatSource::F32(&src),
            2,
            4,
            [&mut codes, &mut scales],
        )
        .unwrap();
        assert_eq!(scales, [0x80, 0x3F, 0, 0]);
        assert_eq!(codes, [0x7E, 0xBC, 0x00, 0x80, 0, 0, 0, 0]);
        // fp16: tiny row → rescue 2^-24; huge row → overflow refused.
        let mut rows = [0u8; 2 * 3];
        fp8_row_maxabs(
            Format::Fp8E4m3fnRowFp16,
            FloatSource::F32(&[1e-30, -0.0]),
            2,
            1,
            [&mut rows, &mut []],
        )
        .unwrap();
        assert_eq!(rows, [0x01, 0x00, 0x00, 0x00, 0x00, 0x00]);
        let e = fp8_row_maxabs(
            Format::Fp8E4m3fnRowFp16,
            FloatSource::F32(&[1.0, 3e7]),
            2,
            1,
            [&mut rows, &mut []],
        );
        assert_eq!(
            e,
            Err(Error::ScaleOverflow {
                row: 1,
                group: u64::MAX
            })
        );
        assert_eq!(rows, [0x01, 0x00, 0x00, 0x00, 0x00, 0x00]); // untouched
        let e = fp8_row_maxabs(
            Format::Fp8E4m3fnRowFp16,
            FloatSource::F32(&[1.0, f32::NAN]),
            2,
            1,
            [&mut rows, &mut []],
        );
        assert_eq!(e, Err(Error::NonFiniteSource { row: 1, col: 0 }));
        // A finite f32 above the BF16 range rounds to Inf: refused.
        let e = fp8_row_maxabs(
            Format::Fp8E4m3fnRowBf16,
            FloatSource::F32(&[f32::MAX]),
            1,
            1,
            [&mut [0u8; 1], &mut [0u8; 2]],
        );
        assert_eq!(e, Err(Error::NonFiniteSource { row: 0, col: 0 }));
        // BF16 floor: a row of 2^-130 gets scale 2^-126 and code 2^-4.
        let (mut c, mut s) = ([0u8; 1], [0u8; 2]);
        fp8_row_maxabs(
            Format::Fp8E4m3fnRowBf16,
            FloatSource::F32(&[f32::from_bits(1 << 19)]), // 2^-130
            1,
            1,
            [&mut c, &mut s],
        )
        .unwrap();
        assert_eq!(u16::from_le_bytes(s), 0x0080);
        assert_eq!(e4m3fn::decode(c[0]), 0.0625);
    }

    /// fp8_row_maxabs on every tier writes the scalar tier's bytes (codes and scale words)
    /// on sources across the binary32 range (ties, subnormals, zero rows, overflowing
    /// binary16 scales), and every tier refuses a failing source with the same error,
    /// writing nothing.
    #[test]
    fn maxabs_every_tier_matches_scalar() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (rows, cols) = (24, 300);
        let mut x: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let h = next();
                match (i / cols) % 6 {
                    0 => 0.0,
                    // Any finite pattern below 2^23 (a finite binary16 scale).
                    1 => f32::from_bits(((h as u32) % 0x4B00_0000) | (h >> 63 << 31) as u32),
                    // Exact multiples of a power-of-two scale: ties of the E4M3FN rounding.
                    2 => ((h % 1793) as f32 - 896.0) * 0.25,
                    3 => f32::from_bits((h as u32) % 0x0080_0000), // subnormals
                    _ => ((h >> 11) as f32 / (1u64 << 53) as f32 - 0.5) * 1e3,
                }
            })
            .collect();
        for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
            let lens = layouts::plane_sizes(format, format.info().layout, rows, cols).unwrap();
            let run = |isa: Isa, x: &[f32]| {
                let mut p = [vec![0xA5u8; lens[0]], vec![0x5Au8; lens[1]]];
                let [a, b] = &mut p;
                let r = fp8_row_maxabs_on(isa, format, FloatSource::F32(x), rows, cols, [a, b]);
                (r.map_err(|e| e.to_string()), p)
            };
            let want = run(Isa::Scalar, &x);
            assert!(want.0.is_ok(), "{format}: {:?}", want.0);
            for isa in Isa::tested() {
                assert_eq!(run(isa, &x), want, "{format} {isa:?}");
            }
        }
        // A scale overflow (fp16: amax / 448 ≥ 65520) and a NaN: refused, nothing written.
        x[5 * cols + 7] = 3.0e7;
        let mut bad = x.clone();
        bad[9 * cols + 3] = f32::NAN;
        for (format, src) in [
            (Format::Fp8E4m3fnRowFp16, &x),
            (Format::Fp8E4m3fnRowBf16, &bad),
        ] {
            let lens = layouts::plane_sizes(format, format.info().layout, rows, cols).unwrap();
            for isa in Isa::tested() {
                let mut p = [vec![0xA5u8; lens[0]], vec![0x5Au8; lens[1]]];
                let [a, b] = &mut p;
                let r = fp8_row_maxabs_on(isa, format, FloatSource::F32(src), rows, cols, [a, b]);
                assert!(r.is_err(), "{format} {isa:?}");
                assert!(p[0].iter().all(|&v| v == 0xA5) && p[1].iter().all(|&v| v == 0x5A));
            }
        }
    }
}
