//! E4M3FN: the 8-bit float of FP8 weights and NVFP4 block scales (spec §3.3).
//!
//! Sign bit 7, exponent `e` in bits 6:3 (bias 7), fraction `m` in bits 2:0:
//!
//! | word | value |
//! |---|---|
//! | `e == 0, m == 0` | signed zero |
//! | `e == 0, m != 0` | `(-1)^s · m · 2^-9` (subnormal; smallest 2^-9) |
//! | `1 <= e <= 15`, except `e == 15, m == 7` | `(-1)^s · (1 + m/8) · 2^(e-7)` (largest 448 = `0x7E`) |
//! | `0x7F`, `0xFF` | NaN (there are no infinities) |
//!
//! Every finite word is exactly representable in binary32, so [`decode`] is exact.

/// The largest finite magnitude, 448 (`0x7E`).
pub const MAX: f32 = 448.0;
/// The positive NaN word.
pub const NAN_POS: u8 = 0x7F;
/// The negative NaN word.
pub const NAN_NEG: u8 = 0xFF;
/// The word of +448.
pub const MAX_WORD: u8 = 0x7E;

/// What an encoder does with a value whose magnitude rounds above 448.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Saturation {
    /// Clamp to ±448 (`0x7E` / `0xFE`), infinities included: CUDA's `__NV_SATFINITE`, the
    /// policy of every producer in this crate.
    Finite,
    /// Overflow (|x| > 464, the midpoint above 448, and ±Inf) gives the NaN word of the
    /// value's sign: the OCP FP8 non-saturating mode (and `ml_dtypes`' cast).
    NonSaturating,
}

const fn decode_const(w: u8) -> f32 {
    let e = ((w >> 3) & 0xF) as i32;
    let m = (w & 7) as u32;
    let neg = w & 0x80 != 0;
    let mag: f32 = if e == 15 && m == 7 {
        f32::NAN
    } else if e == 0 {
        // m · 2^-9: both factors and the product are exact in binary32.
        m as f32 / 512.0
    } else {
        // (8 + m) · 2^(e - 10): an integer below 16 times a power of two, exact.
        f32::from_bits((((e + 120) as u32) << 23) | (m << 20))
    };
    if neg { -mag } else { mag }
}

const fn build_table() -> [f32; 256] {
    let mut t = [0f32; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = decode_const(i as u8);
        i += 1;
    }
    t
}

/// The exact binary32 value of every E4M3FN word, indexed by the word. The NaN words give
/// the binary32 quiet NaN of their sign (`0x7FC00000` / `0xFFC00000`).
pub static TABLE: [f32; 256] = build_table();

/// The exact binary32 value of word `w` (NaN for `0x7F` and `0xFF`).
#[inline]
pub fn decode(w: u8) -> f32 {
    TABLE[w as usize]
}

/// Whether `w` is one of the two NaN words.
#[inline]
pub fn is_nan(w: u8) -> bool {
    w & 0x7F == 0x7F
}

/// Rounds binary32 `x` to the nearest E4M3FN word, ties to even, with the given overflow
/// policy.
///
/// - Zeros keep their sign (`-0.0` → `0x80`); magnitudes at most 2^-10 (half the smallest
///   subnormal) round to the signed zero, 2^-10 itself being a tie to even.
/// - Binary32 subnormals are handled exactly (no flush-to-zero; they all round to zero).
/// - NaN gives the NaN word with the input's sign bit (`0x7F` or `0xFF`) under both
///   policies: no producer in this crate ever passes one (sources are checked finite).
pub fn encode(x: f32, sat: Saturation) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let ab = bits & 0x7FFF_FFFF;
    if ab > 0x7F80_0000 {
        return sign | NAN_POS;
    }
    let mag = magnitude(ab);
    if mag > MAX_WORD as u32 {
        return match sat {
            Saturation::Finite => sign | MAX_WORD,
            Saturation::NonSaturating => sign | NAN_POS,
        };
    }
    sign | mag as u8
}

/// The RNE magnitude word of a non-NaN |x| (binary32 bits `ab`), before saturation: may
/// exceed 0x7E (up to 1080 for infinity). Branch-free, so the encoders' loops vectorize.
#[inline(always)]
fn magnitude(ab: u32) -> u32 {
    let a = f32::from_bits(ab);
    // Below 2^-6 the quantum is 2^-9: adding 2^14 (whose ulp is 2^-9) rounds a to it with
    // the hardware's ties-to-even, and the ulp count above 2^14 is the word (8 = 2^-6 is
    // word 0x08, the smallest normal, as well).
    let sub = (a + 16384.0).to_bits().wrapping_sub(0x4680_0000);
    // Normal: keep 3 fraction bits, rounding the 20 dropped bits to nearest-even; a carry
    // bumps the exponent, which is the right next word. Rebias 127 → 7: 120 << 3 = 960.
    let norm = ((ab + 0x7_FFFF + ((ab >> 20) & 1)) >> 20).wrapping_sub(960);
    if a < 0.015625 { sub } else { norm }
}

/// [`encode`] with [`Saturation::Finite`]: RNE, clamped to ±448 (NaN → NaN word of its
/// sign). Branch-free; always inlined, so that an encoder's loop can vectorize it.
#[inline(always)]
pub fn encode_satfinite(x: f32) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let ab = bits & 0x7FFF_FFFF;
    let mag = magnitude(ab).min(MAX_WORD as u32);
    let mag = if ab > 0x7F80_0000 {
        NAN_POS as u32
    } else {
        mag
    };
    sign | mag as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_words() {
        assert_eq!(decode(0x00).to_bits(), 0);
        assert_eq!(decode(0x80).to_bits(), 0x8000_0000);
        assert_eq!(decode(0x01), 2f32.powi(-9));
        assert_eq!(decode(0x07), 7.0 * 2f32.powi(-9));
        assert_eq!(decode(0x08), 2f32.powi(-6));
        assert_eq!(decode(0x38), 1.0);
        assert_eq!(decode(0x3C), 1.5);
        assert_eq!(decode(0x7E), 448.0);
        assert_eq!(decode(0xFE), -448.0);
        assert_eq!(decode(0x78), 256.0);
        assert!(decode(0x7F).is_nan() && decode(0x7F).is_sign_positive());
        assert!(decode(0xFF).is_nan() && decode(0xFF).is_sign_negative());
        assert!(is_nan(0x7F) && is_nan(0xFF) && !is_nan(0x7E) && !is_nan(0xFE));
    }

    #[test]
    fn every_finite_word_round_trips() {
        for w in 0..=255u8 {
            if !is_nan(w) {
                assert_eq!(encode_satfinite(decode(w)), w, "word {w:#04x}");
                assert_eq!(encode(decode(w), Saturation::NonSaturating), w);
            }
        }
    }

    #[test]
    fn ties_to_even_at_every_exponent() {
        // Midpoints between consecutive positive words: the even fraction wins.
        for w in 0..0x7Eu8 {
            let lo = decode(w) as f64;
            let hi = decode(w + 1) as f64;
            let mid = ((lo + hi) / 2.0) as f32;
            assert_eq!(mid as f64, (lo + hi) / 2.0, "midpoint exact");
            let even = if w & 1 == 0 { w } else { w + 1 };
            assert_eq!(encode_satfinite(mid), even, "tie {mid} between {w:#04x}..");
            assert_eq!(encode_satfinite(-mid), 0x80 | even);
            // Just off the midpoint: nearest wins.
            let below = f32::from_bits(mid.to_bits() - 1);
            let above = f32::from_bits(mid.to_bits() + 1);
            assert_eq!(encode_satfinite(below), w);
            assert_eq!(encode_satfinite(above), w + 1);
        }
    }

    /// Nearest finite word by exhaustive search (ties to the even word), saturating: the
    /// definition of RNE written plainly.
    fn nearest_by_search(x: f32) -> u8 {
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        let a = x.abs() as f64;
        let mut best = 0u8;
        for w in 1..=MAX_WORD {
            let (d, db) = (
                (decode(w) as f64 - a).abs(),
                (decode(best) as f64 - a).abs(),
            );
            if d < db || (d == db && w & 1 == 0) {
                best = w;
            }
        }
        if a > 448.0 {
            sign | MAX_WORD
        } else {
            sign | best
        }
    }

    #[test]
    fn random_values_match_exhaustive_search() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..200_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Exponents 2^-14 .. 2^10 with random fractions and signs.
            let bits = ((s as u32) & 0x807F_FFFF) | ((113 + (s >> 40) as u32 % 24) << 23);
            let x = f32::from_bits(bits);
            assert_eq!(encode_satfinite(x), nearest_by_search(x), "{x:e}");
        }
    }

    #[test]
    fn saturation_and_special_values() {
        assert_eq!(encode_satfinite(464.0), 0x7E); // tie, 448 is even
        assert_eq!(encode_satfinite(464.1), 0x7E);
        assert_eq!(encode_satfinite(1e30), 0x7E);
        assert_eq!(encode_satfinite(f32::INFINITY), 0x7E);
        assert_eq!(encode_satfinite(f32::NEG_INFINITY), 0xFE);
        assert_eq!(encode(464.0, Saturation::NonSaturating), 0x7E);
        assert_eq!(encode(464.0001, Saturation::NonSaturating), 0x7F);
        assert_eq!(encode(-f32::INFINITY, Saturation::NonSaturating), 0xFF);
        assert_eq!(encode_satfinite(f32::NAN), 0x7F);
        assert_eq!(encode_satfinite(-f32::NAN), 0xFF);
        assert_eq!(encode_satfinite(-0.0), 0x80);
        assert_eq!(encode_satfinite(2f32.powi(-10)), 0x00); // tie to zero
        assert_eq!(encode_satfinite(f32::from_bits(0x3A80_0001)), 0x01); // just above 2^-10
        assert_eq!(encode_satfinite(f32::from_bits(1)), 0x00);
        assert_eq!(encode_satfinite(-f32::from_bits(1)), 0x80);
    }
}
