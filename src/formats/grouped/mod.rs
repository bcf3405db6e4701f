//! Grouped signed-integer formats (spec §3.2, §4–§7): q2_g64_fp16, q4_g64_fp16, q5_g64_fp16,
//! q6_g64_fp16, q8_g32_fp16 and t2_g128_fp16.
//!
//! The *logical* representation of an `[N, K]` weight is one signed code per element
//! (`i8`, row-major, N × K) and one binary16 scale word per group (`u16` bit pattern,
//! row-major, N × ceil(K / G)); group g of row n covers columns `[g·G, min((g+1)·G, K))`.
//! The represented weight is `binary32(s32 * binary32(q))` (§6.2, [`dequantize_value`]):
//! the scale is a signed multiplier, never divided by and never taken in absolute value.
//!
//! Physical storage is the `row_split_k128_v1` layout (`crate::layouts::row_split`,
//! docs/layouts.md). Encoders: [`absmax`] (§7.2, canonical reference) and [`search`] (§7.3).

pub mod absmax;
pub mod encode;
pub mod search;

pub use encode::{Method, Options, Provenance, quantize};

use crate::error::{Error, Result};
use crate::registry::{Category, Format};

/// The facts of one grouped scheme, read from the registry (one source of truth).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheme {
    /// The format.
    pub format: Format,
    /// Logical code width b in bits (2, 4, 5, 6 or 8).
    pub bits: u32,
    /// Group size G along K.
    pub group: usize,
    /// Smallest legal signed code.
    pub qmin: i32,
    /// Largest legal signed code.
    pub qmax: i32,
    /// §7.2's scale denominator (qmax for q4/q5/q6/q8), 0 when the reference encoders
    /// refuse the format (q2, t2).
    pub encoder_qmax: i32,
}

impl Scheme {
    /// The scheme of a grouped format; [`Error::Internal`] for any other category.
    pub fn of(format: Format) -> Result<Scheme> {
        let info = format.info();
        if info.category != Category::GroupedInt {
            return Err(Error::Internal(format!("{format} is not a grouped format")));
        }
        Ok(Scheme {
            format,
            bits: info.code_bits,
            group: info.block_values as usize,
            qmin: info.code_min as i32,
            qmax: info.code_max as i32,
            encoder_qmax: info.qmax,
        })
    }

    /// Number of logical groups per row, ceil(K / G).
    pub fn groups(&self, cols: usize) -> usize {
        cols.div_ceil(self.group)
    }

    /// Whether this is q2_g64_fp16 (offset codes, wider scale rules, §3.2).
    pub fn is_q2(&self) -> bool {
        self.format == Format::Q2_G64Fp16
    }

    /// The signed code of a stored b-bit word `u` (only its low b bits are read): Q2's offset
    /// code `u - 1`; otherwise two's complement of width b (§5).
    #[inline]
    pub fn code_from_word(&self, u: u8) -> i8 {
        let mask = ((1u16 << self.bits) - 1) as u8;
        let u = u & mask;
        if self.is_q2() {
            u as i8 - 1
        } else {
            let shift = 8 - self.bits;
            ((u << shift) as i8) >> shift
        }
    }

    /// The stored b-bit word of a signed code (inverse of [`Scheme::code_from_word`] on the
    /// legal interval).
    #[inline]
    pub fn word_from_code(&self, q: i8) -> u8 {
        let mask = ((1u16 << self.bits) - 1) as u8;
        if self.is_q2() {
            (q + 1) as u8 & mask
        } else {
            q as u8 & mask
        }
    }

    /// The scale-word rule of §6.1 (Q2: §3.2). `Err` carries the reason.
    pub fn check_scale(&self, scale: u16) -> std::result::Result<(), &'static str> {
        if scale & 0x7c00 == 0x7c00 {
            return Err(if scale & 0x03ff == 0 {
                "scale is infinite"
            } else {
                "scale is NaN"
            });
        }
        if scale == 0x8000 && !self.is_q2() {
            return Err("scale is negative zero");
        }
        Ok(())
    }

    /// Checks one logical group: the scale rule, every code inside [qmin, qmax], and (except
    /// Q2) a positive-zero scale only with all-zero codes. `Err` carries the reason.
    pub fn check_group(&self, scale: u16, codes: &[i8]) -> std::result::Result<(), String> {
        self.check_scale(scale).map_err(str::to_owned)?;
        if let Some((i, q)) = codes
            .iter()
            .enumerate()
            .find(|&(_, &q)| (q as i32) < self.qmin || (q as i32) > self.qmax)
        {
            return Err(format!(
                "code {q} at position {i} of the group is outside [{}, {}]",
                self.qmin, self.qmax
            ));
        }
        if scale == 0
            && !self.is_q2()
            && let Some(i) = codes.iter().position(|&q| q != 0)
        {
            return Err(format!(
                "scale is +0 but code at position {i} of the group is {}",
                codes[i]
            ));
        }
        Ok(())
    }
}

/// The §6.2 reconstruction `binary32(s32 * binary32(q))` of one element.
#[inline(always)]
pub fn dequantize_value(scale: u16, code: i8) -> f32 {
    half::f16::from_bits(scale).to_f32() * code as f32
}

/// Checks the lengths of a logical representation: `codes` N × K, `scales` N × ceil(K/G).
pub(crate) fn check_logical_lengths(
    s: &Scheme,
    rows: usize,
    cols: usize,
    codes: usize,
    scales: usize,
) -> Result<()> {
    let n = crate::error::mul(rows, cols, "rows × K")?;
    if codes != n {
        return Err(Error::SizeMismatch {
            unit: "codes",
            plane: "logical codes",
            expected: n,
            actual: codes,
        });
    }
    let g = crate::error::mul(rows, s.groups(cols), "rows × groups")?;
    if scales != g {
        return Err(Error::SizeMismatch {
            unit: "scale words",
            plane: "logical scales",
            expected: g,
            actual: scales,
        });
    }
    Ok(())
}

/// Validates a logical grouped representation against every rule of §5–§6 (and §3.2 for
/// Q2, T2 and Q8): scale words, code intervals, +0 scale ⇒ zero codes.
///
/// Errors: [`Error::SizeMismatch`] for wrong lengths, [`Error::InvalidEncoding`] naming the
/// first offending row and group.
pub fn validate_logical(
    format: Format,
    rows: usize,
    cols: usize,
    codes: &[i8],
    scales: &[u16],
) -> Result<()> {
    let s = Scheme::of(format)?;
    check_logical_lengths(&s, rows, cols, codes.len(), scales.len())?;
    let ng = s.groups(cols);
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    for (r, (row, rs)) in codes.chunks(cols).zip(scales.chunks(ng)).enumerate() {
        for (g, (gc, &sc)) in row.chunks(s.group).zip(rs).enumerate() {
            s.check_group(sc, gc)
                .map_err(|why| Error::encoding(r as u64, g as u64, why))?;
        }
    }
    Ok(())
}

/// Dequantizes one logical row (§6.2): `codes` K codes, `scales` ceil(K/G) words, `out` K
/// values. Lengths are the caller's contract (checked in debug builds).
#[inline(always)]
pub fn dequantize_row_logical(s: &Scheme, codes: &[i8], scales: &[u16], out: &mut [f32]) {
    debug_assert_eq!(codes.len(), out.len());
    debug_assert_eq!(scales.len(), s.groups(codes.len()));
    for ((gc, go), &sc) in codes
        .chunks(s.group)
        .zip(out.chunks_mut(s.group))
        .zip(scales)
    {
        let s32 = half::f16::from_bits(sc).to_f32();
        for (o, &q) in go.iter_mut().zip(gc) {
            *o = s32 * q as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sch(f: Format) -> Scheme {
        Scheme::of(f).unwrap()
    }

    #[test]
    fn words_and_codes() {
        let q4 = sch(Format::Q4_G64Fp16);
        assert_eq!(q4.code_from_word(0x8), -8);
        assert_eq!(q4.code_from_word(0x7), 7);
        assert_eq!(q4.code_from_word(0xf), -1);
        assert_eq!(q4.word_from_code(-8), 0x8);
        let q5 = sch(Format::Q5_G64Fp16);
        assert_eq!(q5.code_from_word(0x10), -16);
        assert_eq!(q5.code_from_word(0x0f), 15);
        let q6 = sch(Format::Q6_G64Fp16);
        assert_eq!(q6.code_from_word(0x20), -32);
        assert_eq!(q6.word_from_code(-1), 0x3f);
        let q8 = sch(Format::Q8_G32Fp16);
        assert_eq!(q8.code_from_word(0x80), -128);
        assert_eq!(q8.code_from_word(0x81), -127);
        let q2 = sch(Format::Q2_G64Fp16);
        assert_eq!(
            (0..4).map(|u| q2.code_from_word(u)).collect::<Vec<_>>(),
            [-1, 0, 1, 2]
        );
        assert_eq!(q2.word_from_code(0), 1);
        let t2 = sch(Format::T2_G128Fp16);
        assert_eq!(
            (0..4).map(|u| t2.code_from_word(u)).collect::<Vec<_>>(),
            [0, 1, -2, -1]
        );
        for f in [Format::Q4_G64Fp16, Format::Q5_G64Fp16, Format::Q6_G64Fp16] {
            let s = sch(f);
            for q in s.qmin..=s.qmax {
                assert_eq!(s.code_from_word(s.word_from_code(q as i8)) as i32, q);
            }
        }
    }

    #[test]
    fn scale_rules_refused_and_near_misses_accepted() {
        let q4 = sch(Format::Q4_G64Fp16);
        assert!(q4.check_scale(0x0000).is_ok()); // +0
        assert!(q4.check_scale(0x8000).is_err()); // -0
        assert!(q4.check_scale(0x8001).is_ok()); // -min subnormal
        assert!(q4.check_scale(0x0001).is_ok()); // min subnormal
        assert!(q4.check_scale(0x7bff).is_ok()); // max finite
        assert!(q4.check_scale(0xfbff).is_ok()); // -max finite
        assert!(q4.check_scale(0x7c00).is_err()); // +Inf
        assert!(q4.check_scale(0xfc00).is_err()); // -Inf
        assert!(q4.check_scale(0x7e00).is_err()); // NaN
        assert!(q4.check_scale(0xfc01).is_err()); // NaN
        let q2 = sch(Format::Q2_G64Fp16);
        assert!(q2.check_scale(0x8000).is_ok());
        assert!(q2.check_scale(0x7c00).is_err());
        assert!(q2.check_scale(0x7c01).is_err());
    }

    #[test]
    fn group_rules_refused_and_near_misses_accepted() {
        let q8 = sch(Format::Q8_G32Fp16);
        assert!(q8.check_group(0x3c00, &[-127, 127]).is_ok());
        assert!(q8.check_group(0x3c00, &[-128]).is_err());
        let t2 = sch(Format::T2_G128Fp16);
        assert!(t2.check_group(0x3c00, &[-1, 0, 1]).is_ok());
        assert!(t2.check_group(0x3c00, &[-2]).is_err());
        let q4 = sch(Format::Q4_G64Fp16);
        assert!(q4.check_group(0x3c00, &[-8, 7]).is_ok());
        assert!(q4.check_group(0x3c00, &[8]).is_err());
        assert!(q4.check_group(0x3c00, &[-9]).is_err());
        // +0 scale ⇒ zero codes; the converse is not required.
        assert!(q4.check_group(0x0000, &[0, 0]).is_ok());
        assert!(q4.check_group(0x0000, &[0, 1]).is_err());
        assert!(q4.check_group(0x3c00, &[0, 0]).is_ok());
        assert!(q4.check_group(0xbc00, &[0, -8]).is_ok()); // negative scale is ordinary
        // Q2: any code under any zero scale.
        let q2 = sch(Format::Q2_G64Fp16);
        assert!(q2.check_group(0x0000, &[-1, 2]).is_ok());
        assert!(q2.check_group(0x8000, &[1]).is_ok());
        assert!(q2.check_group(0x3c00, &[3]).is_err());
        assert!(q2.check_group(0x3c00, &[-2]).is_err());
    }

    #[test]
    fn dequantize_is_a_signed_multiply() {
        // -0.5 × -8 = 4; 2^-24 × 7; -1 × 0 = -0.
        assert_eq!(dequantize_value(0xb800, -8), 4.0);
        assert_eq!(dequantize_value(0x0001, 7), 7.0 * 2f32.powi(-24));
        assert_eq!(dequantize_value(0xbc00, 0).to_bits(), 0x8000_0000);
        assert_eq!(
            dequantize_value(0x3555, 3),
            3.0 * half::f16::from_bits(0x3555).to_f32()
        );
    }

    #[test]
    fn validate_logical_names_row_and_group() {
        let (rows, cols) = (2, 70); // 2 groups per row for q4, the last partial
        let mut codes = vec![0i8; rows * cols];
        let mut scales = vec![0x3c00u16; rows * 2];
        validate_logical(Format::Q4_G64Fp16, rows, cols, &codes, &scales).unwrap();
        codes[cols + 65] = 9;
        let e = validate_logical(Format::Q4_G64Fp16, rows, cols, &codes, &scales).unwrap_err();
        assert_eq!(
            e,
            Error::encoding(1, 1, "code 9 at position 1 of the group is outside [-8, 7]")
        );
        codes[cols + 65] = 0;
        scales[1] = 0x8000;
        let e = validate_logical(Format::Q4_G64Fp16, rows, cols, &codes, &scales).unwrap_err();
        assert_eq!(e, Error::encoding(0, 1, "scale is negative zero"));
        let e = validate_logical(Format::Q4_G64Fp16, rows, cols, &codes, &scales[1..]).unwrap_err();
        assert_eq!(e.status(), crate::Status::SizeMismatch);
    }
}
