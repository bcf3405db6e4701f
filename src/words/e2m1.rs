//! E2M1: the 4-bit float code of NVFP4 (spec §3.3).
//!
//! Sign bit 3, exponent bits 2:1, mantissa bit 0. Magnitudes of words 0..7:
//! 0, 0.5, 1, 1.5, 2, 3, 4, 6. Every one of the 16 words is valid, `0x0` and `0x8` being
//! positive and negative zero; there is no infinity and no NaN.

/// The magnitudes of words 0..7.
pub const MAGNITUDES: [f32; 8] = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0];

/// The largest magnitude, 6.
pub const MAX: f32 = 6.0;

const fn build_table() -> [f32; 16] {
    let mut t = [0f32; 16];
    let mut i = 0;
    while i < 16 {
        let m = MAGNITUDES[i & 7];
        t[i] = if i & 8 != 0 { -m } else { m };
        i += 1;
    }
    t
}

/// The exact binary32 value of every E2M1 word, indexed by the word (`0x8` is `-0.0`).
pub static TABLE: [f32; 16] = build_table();

/// The exact binary32 value of the low 4 bits of `w`.
#[inline]
pub fn decode(w: u8) -> f32 {
    TABLE[(w & 0xF) as usize]
}

/// Rounds binary32 `x` to the nearest E2M1 word, ties to even, saturating at ±6
/// (infinities give ±6): the only policy, since the format has no overflow word.
///
/// Zeros keep their sign. The ties go to the even word: 0.25 → 0, 0.75 → 1, 1.25 → 1,
/// 1.75 → 2, 2.5 → 2, 3.5 → 4, 5 → 4. NaN, which E2M1 cannot hold, gives the signed zero
/// of the NaN's sign bit (`0x0` or `0x8`); no producer in this crate passes one.
#[inline(always)]
pub fn encode(x: f32) -> u8 {
    let sign = ((x.to_bits() >> 28) & 8) as u8;
    let a = x.abs();
    // Decision points are the midpoints between neighbours; at a midpoint the word with
    // mantissa bit 0 (even) wins, hence the alternating > / >=. Counting the thresholds
    // passed is branch-free; a NaN passes none.
    let mag = (a > 0.25) as u8
        + (a >= 0.75) as u8
        + (a > 1.25) as u8
        + (a >= 1.75) as u8
        + (a > 2.5) as u8
        + (a >= 3.5) as u8
        + (a > 5.0) as u8;
    sign | mag
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_and_round_trip() {
        assert_eq!(TABLE[8].to_bits(), 0x8000_0000);
        assert_eq!(TABLE[15], -6.0);
        for w in 0..16u8 {
            assert_eq!(encode(decode(w)), w);
        }
    }

    #[test]
    fn ties_to_even() {
        let cases = [
            (0.25, 0),
            (0.75, 2),
            (1.25, 2),
            (1.75, 4),
            (2.5, 4),
            (3.5, 6),
            (5.0, 6),
        ];
        for (x, w) in cases {
            assert_eq!(encode(x), w, "{x}");
            assert_eq!(encode(-x), 8 | w, "-{x}");
            let below = f32::from_bits(x.to_bits() - 1);
            let above = f32::from_bits(x.to_bits() + 1);
            assert!(decode(encode(below)) < x, "below {x}");
            assert!(decode(encode(above)) > x, "above {x}");
        }
        assert_eq!(encode(7.0), 7);
        assert_eq!(encode(f32::INFINITY), 7);
        assert_eq!(encode(f32::NEG_INFINITY), 15);
        assert_eq!(encode(f32::NAN), 0);
        assert_eq!(encode(-f32::NAN), 8);
        assert_eq!(encode(-0.0), 8);
        assert_eq!(encode(f32::from_bits(1)), 0);
    }
}
