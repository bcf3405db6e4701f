//! grouped_absmax (spec §7.2): the canonical reference encoder of q4_g64_fp16, q5_g64_fp16,
//! q6_g64_fp16 and q8_g32_fp16.
//!
//! For one group of finite binary32 values x (all arithmetic binary32 / binary16, RNE):
//!
//! ```text
//! amax = max |x|;  amax == +0  →  scale +0, codes 0
//! raw32   = round_f32(amax / qmax)           qmax, not |qmin|: 7, 15, 31, 127
//! scale16 = round_f16(raw32);  +0 → 0x0001   (underflow rescue);  Inf → SCALE_OVERFLOW
//! inv32   = round_f32(1 / scale32)
//! code    = clamp(round_ties_even(round_f32(x · inv32)), qmin, qmax)
//! ```
//!
//! The reciprocal multiply is normative: `x / scale32` can round to a different code.

use super::Scheme;

#[cfg(target_arch = "x86_64")]
#[macro_use]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;

/// Why a group could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// `round_f16(amax / qmax)` is infinite.
    ScaleOverflow,
    /// A value is NaN or infinite (the caller locates it).
    NonFinite,
}

pub use crate::fpenv::subnormals_preserved;

/// 1.5 · 2^23 (bits 0x4B40_0000): for |v| ≤ 2^22, `v + RNE_MAGIC` lies in [2^23, 2^24)
/// where the binary32 spacing is 1, so the addition rounds v to an integer with the
/// round-to-nearest-even mode, and that integer is the sum's bit pattern minus the
/// constant's: `roundeven` without a libm call or a float → int conversion.
const RNE_MAGIC: f32 = 12_582_912.0;
const RNE_MAGIC_BITS: i32 = 0x4B40_0000;

/// `round_to_integral_ties_to_even(v)` then clamp to `[qmin, qmax]` (§7.2: the clamp comes
/// after the rounding). Clamping v to ±256 first changes nothing: every legal interval lies
/// inside it, so a value beyond it clamps to the same endpoint either way, and the clamp
/// keeps v inside the magic constant's exact range. v is never NaN (finite sources).
#[inline(always)]
pub(crate) fn round_clamp(v: f32, qmin: i32, qmax: i32) -> i8 {
    let v = if v > 256.0 { 256.0 } else { v };
    let v = if v < -256.0 { -256.0 } else { v };
    let r = ((v + RNE_MAGIC).to_bits() as i32).wrapping_sub(RNE_MAGIC_BITS);
    r.clamp(qmin, qmax) as i8
}

/// The §7.2 code selection for a given stored scale word: `inv32 = round_f32(1 / s32)`,
/// `code = clamp(rne(round_f32(x · inv32)))`. The scale must be finite and non-zero (either
/// sign: grouped_search reuses this for negative candidates).
#[inline(always)]
pub(crate) fn codes_for_scale(s: &Scheme, scale: u16, x: &[f32], codes: &mut [i8]) {
    let s32 = half::f16::from_bits(scale).to_f32();
    let inv = 1.0f32 / s32;
    let (lo, hi) = (s.qmin, s.qmax);
    for (c, &v) in codes.iter_mut().zip(x) {
        *c = round_clamp(v * inv, lo, hi);
    }
}

/// The bit pattern of the largest magnitude of a group: for non-negative binary32 values
/// the integer order of the bit patterns is the numeric order, so this is an integer max
/// (which vectorizes). +0 for an all-zero group (-0 included); above 0x7F7F_FFFF when some
/// value is NaN or infinite.
#[inline(always)]
pub(crate) fn amax_bits(x: &[f32]) -> u32 {
    x.iter().fold(0u32, |m, v| m.max(v.to_bits() & 0x7fff_ffff))
}

/// The largest magnitude of a group of finite values.
#[inline(always)]
pub(crate) fn amax(x: &[f32]) -> f32 {
    f32::from_bits(amax_bits(x))
}

/// The §7.2 scale word of a group with maximum magnitude `amax` > 0 (finite).
#[inline(always)]
pub(crate) fn scale_for_amax(s: &Scheme, amax: f32) -> Result<u16, GroupError> {
    let raw = amax / s.encoder_qmax as f32;
    let h = half::f16::from_f32(raw);
    if h.is_infinite() {
        return Err(GroupError::ScaleOverflow);
    }
    let bits = h.to_bits();
    // raw > 0, so a zero result is +0: the minimum-subnormal rescue.
    Ok(if bits == 0 { 0x0001 } else { bits })
}

/// Encodes one logical group (`codes.len() == x.len()` ≤ G; a partial last group passes
/// only its logical values). Returns the scale word.
///
/// The scheme must be one grouped_absmax accepts (`encoder_qmax > 0`).
#[inline(always)]
pub fn quantize_group(s: &Scheme, x: &[f32], codes: &mut [i8]) -> Result<u16, GroupError> {
    debug_assert!(s.encoder_qmax > 0);
    let m = amax_bits(x);
    if m > 0x7f7f_ffff {
        return Err(GroupError::NonFinite);
    }
    if m == 0 {
        codes.fill(0);
        return Ok(0);
    }
    let scale = scale_for_amax(s, f32::from_bits(m))?;
    codes_for_scale(s, scale, x, codes);
    Ok(scale)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Format;

    fn q4() -> Scheme {
        Scheme::of(Format::Q4_G64Fp16).unwrap()
    }

    #[test]
    fn integral_rounding_examples() {
        // §7.2: ±0.5 → 0, ±1.5 → ±2, ±2.5 → ±2.
        let cases = [
            (0.5, 0),
            (-0.5, 0),
            (1.5, 2),
            (-1.5, -2),
            (2.5, 2),
            (-2.5, -2),
            (3.49, 3),
            (-7.5, -8),
            (7.5, 7),
            (100.0, 7),
            (-100.0, -8),
        ];
        for (v, q) in cases {
            assert_eq!(round_clamp(v, -8, 7), q, "{v}");
        }
        assert_eq!(round_clamp(-127.5, -127, 127), -127);
        assert_eq!(round_clamp(-200.0, -127, 127), -127);
        assert_eq!(round_clamp(f32::MAX, -127, 127), 127);
        assert_eq!(round_clamp(-0.0, -127, 127), 0);
    }

    #[test]
    fn default_environment_keeps_subnormals() {
        assert!(subnormals_preserved());
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    #[allow(deprecated)] // _mm_getcsr/_mm_setcsr: exactly what a caller enabling FTZ does
    fn flush_to_zero_is_detected() {
        use std::arch::x86_64::{_mm_getcsr, _mm_setcsr};
        let seen = std::thread::spawn(|| {
            // SAFETY: MXCSR of this short-lived test thread only; restored before returning.
            unsafe {
                let old = _mm_getcsr();
                _mm_setcsr(old | 0x8040); // FTZ | DAZ
                let ok = subnormals_preserved();
                _mm_setcsr(old);
                ok
            }
        })
        .join()
        .unwrap();
        assert!(!seen);
    }

    #[test]
    fn hand_worked_group() {
        // amax = 7 → raw 1.0 → scale 0x3c00; codes are x rounded to even.
        let x = [7.0, -7.0, 0.5, 1.5, -2.5, 3.0, -0.0, 6.5];
        let mut c = [0i8; 8];
        assert_eq!(quantize_group(&q4(), &x, &mut c), Ok(0x3c00));
        assert_eq!(c, [7, -7, 0, 2, -2, 3, 0, 6]);
    }

    #[test]
    fn non_finite_group() {
        let mut c = [0i8; 3];
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(
                quantize_group(&q4(), &[1.0, bad, 2.0], &mut c),
                Err(GroupError::NonFinite)
            );
        }
    }

    #[test]
    fn all_zero_group_is_positive_zero() {
        let mut c = [5i8; 4];
        assert_eq!(
            quantize_group(&q4(), &[0.0, -0.0, 0.0, -0.0], &mut c),
            Ok(0)
        );
        assert_eq!(c, [0; 4]);
    }

    #[test]
    fn underflow_rescue() {
        // amax = 2^-149 (min binary32 subnormal): raw rounds to binary16 +0 → 0x0001.
        let x = [f32::from_bits(1), 0.0];
        let mut c = [9i8; 2];
        assert_eq!(quantize_group(&q4(), &x, &mut c), Ok(0x0001));
        assert_eq!(c, [0, 0]);
        // amax = 7 · 2^-26: raw = 2^-26 → rounds to +0 in binary16 → rescued;
        // x · 2^24 = 7/4 = 1.75 → 2.
        let x = [7.0 * 2f32.powi(-26)];
        let mut c = [0i8; 1];
        assert_eq!(quantize_group(&q4(), &x, &mut c), Ok(0x0001));
        assert_eq!(c, [2]);
    }

    #[test]
    fn scale_overflow() {
        // raw = amax / 7 ≥ 65520 rounds to binary16 infinity.
        let mut c = [0i8; 1];
        assert_eq!(
            quantize_group(&q4(), &[65520.0 * 7.0], &mut c),
            Err(GroupError::ScaleOverflow)
        );
        // Just below the rounding boundary: 65504 (max finite).
        assert_eq!(quantize_group(&q4(), &[65519.0 * 7.0], &mut c), Ok(0x7bff));
    }

    #[test]
    fn q8_never_emits_minus_128() {
        let s = Scheme::of(Format::Q8_G32Fp16).unwrap();
        // A subnormal scale rounds down by a third: x · inv ≈ -189, clamped to -127.
        let x = [-127.0 * 1.4 * 2f32.powi(-24), 1e-7];
        let mut c = [0i8; 2];
        assert_eq!(quantize_group(&s, &x, &mut c), Ok(0x0001));
        assert_eq!(c[0], -127);
    }
}
