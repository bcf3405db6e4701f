//! grouped_search (spec §7.3): an importance-weighted search over candidate scales that
//! keeps the §7.2 result unless a candidate is strictly better.
//!
//! For a non-zero group with values x, importance weights imp (1 when absent) and a stored
//! candidate scale word s, codes are chosen by §7.2's reciprocal multiply
//! ([`super::absmax`]) and the error is
//!
//! ```text
//! E(s) = Σ_k imp[k] · (x[k] − binary32(s32 · q[k]))²
//! ```
//!
//! evaluated in binary64 as four lane sums L_j = Σ_{k ≡ j mod 4} t_k, each in increasing
//! k, combined as `(L_0 + L_1) + (L_2 + L_3)` (t_k = `(imp[k] · d) · d`, `d = x[k] − ŵ[k]`);
//! the fixed order makes the result reproducible and lets the sums use vector lanes.
//!
//! i.e. the error of the *represented* weights (§6.2). Candidates, evaluated in this order
//! (the first strictly smallest error wins; ties keep the earlier one, so §7.2's result is
//! kept unless something is strictly better):
//!
//! 1. the §7.2 result itself;
//! 2. `m · amax / qmax` for the 25 multiples m = 0.70, 0.72, …, 1.18;
//! 3. `m · extreme / qmin` for the same multiples, where `extreme` is the group's first
//!    value of largest magnitude (maps it onto the most negative code; negative when
//!    `extreme > 0`);
//! 4. `2^j · amax / qmax` for j = −2, −1, 1;
//! 5. the binary16 neighbours (±1, ±2 units in the last place of the magnitude) of the §7.2
//!    scale word;
//! 6. the weighted least-squares scale `Σ imp·x·q / Σ imp·q²` of the §7.2 codes, and its
//!    ±1-ulp binary16 neighbours;
//! 7. the weighted least-squares scale of the codes of the best candidate so far, and its
//!    ±1-ulp neighbours.
//!
//! Every computed candidate is a binary32 value (multiples and quotients rounded to
//! binary32), rounded to binary16 with RNE as in §7.2, a non-zero value rounding to zero is
//! rescued as the minimum subnormal of its sign, and a candidate rounding to infinity is
//! skipped. Negative candidates take part only with `negative_scales`. All-zero groups
//! keep +0 and zero codes. The result is reproducible: each group is independent of thread
//! count and row order.

use super::Scheme;
use super::absmax::{amax, codes_for_scale};
use half::f16;

/// The identifier of this candidate set, recorded in provenance (bump when it changes).
///
/// cbindgen:ignore
pub const PARAMETERS_VERSION: u32 = 1;

/// The weighted squared error term of one element.
#[inline(always)]
fn term(s32: f32, v: f32, q: i8, w: f64) -> f64 {
    let d = v as f64 - (s32 * q as f32) as f64;
    w * d * d
}

/// Adds the terms of elements `[from, to)` to the lane sums (element k into lane k mod 4,
/// in increasing k); `from` is a multiple of 4.
#[inline(always)]
fn add_terms(
    lanes: &mut [f64; 4],
    s32: f32,
    x: &[f32],
    codes: &[i8],
    imp: Option<&[f32]>,
    from: usize,
    to: usize,
) {
    let (x, codes) = (&x[from..to], &codes[from..to]);
    let mut xs = x.chunks_exact(4);
    let mut qs = codes.chunks_exact(4);
    match imp {
        Some(imp) => {
            let imp = &imp[from..to];
            let mut is = imp.chunks_exact(4);
            for ((xv, qv), iv) in (&mut xs).zip(&mut qs).zip(&mut is) {
                for j in 0..4 {
                    lanes[j] += term(s32, xv[j], qv[j], iv[j] as f64);
                }
            }
            let r = is.remainder();
            for (j, (&v, &q)) in xs.remainder().iter().zip(qs.remainder()).enumerate() {
                lanes[j] += term(s32, v, q, r[j] as f64);
            }
        }
        None => {
            for (xv, qv) in (&mut xs).zip(&mut qs) {
                for j in 0..4 {
                    lanes[j] += term(s32, xv[j], qv[j], 1.0);
                }
            }
            for (j, (&v, &q)) in xs.remainder().iter().zip(qs.remainder()).enumerate() {
                lanes[j] += term(s32, v, q, 1.0);
            }
        }
    }
}

#[inline(always)]
fn combine(l: &[f64; 4]) -> f64 {
    (l[0] + l[1]) + (l[2] + l[3])
}

/// E(s) for a scale word and its codes (see the module docs for the summation order).
#[inline(always)]
pub fn weighted_error(scale: u16, x: &[f32], codes: &[i8], imp: Option<&[f32]>) -> f64 {
    let mut lanes = [0f64; 4];
    add_terms(
        &mut lanes,
        f16::from_bits(scale).to_f32(),
        x,
        codes,
        imp,
        0,
        x.len(),
    );
    combine(&lanes)
}

/// The stored word of a computed candidate `c`, or `None` when it cannot compete.
#[inline(always)]
fn candidate_word(c: f32, negative_scales: bool) -> Option<u16> {
    if !c.is_finite() || c == 0.0 || (c < 0.0 && !negative_scales) {
        return None;
    }
    let h = f16::from_f32(c);
    if h.is_infinite() {
        return None;
    }
    let bits = h.to_bits();
    Some(match bits & 0x7fff {
        0 => bits | 0x0001,
        _ => bits,
    })
}

/// The word `d` units in the last place away from `w` in magnitude, if it is finite non-zero.
#[inline(always)]
fn neighbour(w: u16, d: i32) -> Option<u16> {
    let m = (w & 0x7fff) as i32 + d;
    (1..=0x7bff).contains(&m).then_some((w & 0x8000) | m as u16)
}

/// `Σ imp·x·q / Σ imp·q²` rounded to binary32, if the denominator is positive.
#[inline(always)]
fn wls_scale(x: &[f32], codes: &[i8], imp: Option<&[f32]>) -> Option<f32> {
    let (mut num, mut den) = (0f64, 0f64);
    for (k, (&v, &q)) in x.iter().zip(codes).enumerate() {
        let w = imp.map_or(1.0, |i| i[k] as f64);
        num += w * v as f64 * q as f64;
        den += w * q as f64 * q as f64;
    }
    (den > 0.0).then(|| (num / den) as f32)
}

/// The outcome of one group's search.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupResult {
    /// The chosen scale word (codes are in the caller's buffer).
    pub scale: u16,
    /// E of the §7.2 result.
    pub absmax_error: f64,
    /// E of the chosen result (≤ `absmax_error`).
    pub error: f64,
}

struct Best<'a> {
    s: &'a Scheme,
    x: &'a [f32],
    imp: Option<&'a [f32]>,
    negative: bool,
    scale: u16,
    error: f64,
    codes: &'a mut [i8],
    tmp: &'a mut [i8],
}

impl Best<'_> {
    #[inline(always)]
    fn try_word(&mut self, w: u16) {
        if w & 0x8000 != 0 && !self.negative {
            return;
        }
        codes_for_scale(self.s, w, self.x, self.tmp);
        // Partial sums of non-negative terms never decrease under RNE addition (in every
        // lane and through the combination), so a candidate is abandoned as soon as a
        // partial E reaches the best error: it could not become strictly better. The result
        // is the same as the full sum's.
        let s32 = f16::from_bits(w).to_f32();
        let n = self.x.len();
        let mut lanes = [0f64; 4];
        let mut from = 0;
        let mut e = 0f64;
        while from < n {
            let to = (from + 16).min(n);
            add_terms(&mut lanes, s32, self.x, self.tmp, self.imp, from, to);
            e = combine(&lanes);
            if e >= self.error {
                return;
            }
            from = to;
        }
        if e < self.error {
            self.error = e;
            self.scale = w;
            self.codes.copy_from_slice(self.tmp);
        }
    }

    #[inline(always)]
    fn try_value(&mut self, c: f32) {
        if let Some(w) = candidate_word(c, self.negative) {
            self.try_word(w);
        }
    }

    #[inline(always)]
    fn try_with_neighbours(&mut self, c: f32) {
        if let Some(w) = candidate_word(c, self.negative) {
            self.try_word(w);
            for d in [-1, 1] {
                if let Some(n) = neighbour(w, d) {
                    self.try_word(n);
                }
            }
        }
    }
}

/// Searches one group whose §7.2 result is `(scale, codes)` (codes updated in place; `tmp`
/// is scratch of the same length). `imp`, when given, has one weight per value of `x`.
#[inline(always)]
pub fn search_group(
    s: &Scheme,
    x: &[f32],
    imp: Option<&[f32]>,
    negative_scales: bool,
    scale: u16,
    codes: &mut [i8],
    tmp: &mut [i8],
) -> GroupResult {
    let e0 = weighted_error(scale, x, codes, imp);
    let m = amax(x);
    if m == 0.0 {
        return GroupResult {
            scale,
            absmax_error: e0,
            error: e0,
        };
    }
    let qmax = s.encoder_qmax as f32;
    let qmin = s.qmin as f32;
    let base = m / qmax;
    let extreme = x.iter().copied().find(|v| v.abs() == m).unwrap_or(m);
    let full = extreme / qmin;
    let wls0 = wls_scale(x, codes, imp);
    let tmp = &mut tmp[..x.len()];
    let mut b = Best {
        s,
        x,
        imp,
        negative: negative_scales,
        scale,
        error: e0,
        codes,
        tmp,
    };
    for i in 0..25 {
        let mul = (70 + 2 * i) as f32 / 100.0;
        b.try_value(mul * base);
    }
    for i in 0..25 {
        let mul = (70 + 2 * i) as f32 / 100.0;
        b.try_value(mul * full);
    }
    for p in [0.25f32, 0.5, 2.0] {
        b.try_value(p * base);
    }
    for d in [-2, -1, 1, 2] {
        if let Some(n) = neighbour(scale, d) {
            b.try_word(n);
        }
    }
    if let Some(c) = wls0 {
        b.try_with_neighbours(c);
    }
    if let Some(c) = wls_scale(b.x, b.codes, imp) {
        b.try_with_neighbours(c);
    }
    GroupResult {
        scale: b.scale,
        absmax_error: e0,
        error: b.error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Format;

    #[test]
    fn full_range_negative_scale_wins_only_when_enabled() {
        // A group dominated by one positive value: with a negative scale it lands on -8.
        let s = Scheme::of(Format::Q4_G64Fp16).unwrap();
        let x: Vec<f32> = (0..64)
            .map(|i| if i == 0 { 8.0 } else { (i % 8) as f32 })
            .collect();
        let mut c = vec![0i8; 64];
        let sc = super::super::absmax::quantize_group(&s, &x, &mut c).unwrap();
        let mut tmp = vec![0i8; 64];
        let mut c1 = c.clone();
        let r = search_group(&s, &x, None, false, sc, &mut c1, &mut tmp);
        assert!(r.error <= r.absmax_error);
        assert_eq!(r.scale & 0x8000, 0);
        let mut c2 = c.clone();
        let r2 = search_group(&s, &x, None, true, sc, &mut c2, &mut tmp);
        assert_eq!(r2.error, 0.0, "scale -1 represents every value exactly");
        assert_eq!(r2.scale, 0xbc00);
        assert_eq!(c2[0], -8);
        assert!(s.check_group(r2.scale, &c2).is_ok());
    }

    #[test]
    fn exact_group_keeps_absmax() {
        let s = Scheme::of(Format::Q8_G32Fp16).unwrap();
        let x: Vec<f32> = (0..32).map(|i| i as f32 - 16.0).collect();
        let mut c = vec![0i8; 32];
        let sc = super::super::absmax::quantize_group(&s, &x, &mut c).unwrap();
        let before = c.clone();
        let mut tmp = vec![0i8; 32];
        let r = search_group(&s, &x, None, true, sc, &mut c, &mut tmp);
        // 16/127 is not exact, so the search may improve; never worse, always valid.
        assert!(r.error <= r.absmax_error);
        if r.error == r.absmax_error {
            assert_eq!((r.scale, c), (sc, before));
        }
    }
}
