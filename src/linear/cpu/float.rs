//! f32 dot products of weight rows with f32 activation rows: bf16 / fp32 words, grouped
//! signed-integer codes (q2/t2/q4/q5/q6/q8, row_split_k128_v1), E4M3FN row-scaled codes,
//! nvfp4 codes — all read in place — or rows already decoded to f32 (every other decodable
//! format).
//!
//! **Values.** Every path multiplies the weight's exact decoded value (the format's
//! decoding equation in binary32: `f32(scale)·code`, `e4m3fn(c)·s32`,
//! `(e2m1(c)·sf)/d_w`) by x as f32 — except in the fp8 and nvfp4 scaled orders below,
//! which multiply exact pre-images of those values and apply the row's factor once per
//! output; activations are never quantized.
//!
//! **Evaluation order** (the same bits on every path): element k of the row accumulates
//! into lane `k mod 8` of one eight-lane accumulator by a fused multiply-add,
//! `acc[k mod 8] ← fma(w_k, x_k, acc[k mod 8])`, in increasing k; the eight lanes are then
//! summed by [`super::tree8`]. The AVX2 path ([`super::float_avx2`]) turns 32 codes at a
//! time into values (one group scale or one nvfp4 block table per chunk) and runs up to 4
//! weight rows side by side sharing each activation load; the AVX-512 path
//! ([`super::float_avx512`], the grouped kinds, nvfp4 and fp8 in the scaled order, q2 / t2
//! / fp8 only where [`all_512`] holds; other kinds run the AVX2 one)
//! holds two rows' accumulators in one 512-bit register, the activation's 8 values
//! broadcast into both halves. Since every lane still sees its elements in increasing k, both return the
//! scalar path's bits.
//!
//! **fp8 scaled order.** An fp8 row (multiplier s) meets an activation row x in the scaled
//! order when |s| < 2¹¹⁹ ([`fp8_scaled_row`]) and x has only finite elements, nonzero ones
//! of magnitude ≥ 2⁻¹⁰⁹, K ≤ 2²⁴ and K·max|x| ≤ 2¹²⁶ ([`fp8_scaled_x`], once per activation
//! row and forward): the values are `h_k = e4m3fn(c_k)·2⁻⁸` (exact; what F16C gives from
//! the code's bits), accumulated in the order above into T, and the output is
//! `binary32(T·F)` with `F = 256·s` (one multiply per output instead of one per element).
//! Otherwise the values are `w_k = binary32(e4m3fn(c_k)·s)` as everywhere else. The choice
//! depends on the output's own weight row and activation row only, so it is fixed per
//! output. It meets `linear_f32acc_v1` (u = 2⁻²⁴):
//! 1. w_k = e4m3fn(c_k)·s exactly (see [`fp8_scaled_row`]), so Σ w·x = F·Σ h·x and
//!    Σ|w·x| = |F|·Σ|h·x|.
//! 2. Every h_k is a multiple of 2⁻¹⁷ and every x_k is 0 or a multiple of 2⁻¹³² (the ulp
//!    of |x| ≥ 2⁻¹⁰⁹), so the exact result of each fma `h·x + acc` and of each lane sum is
//!    a multiple of 2⁻¹⁴⁹: below 2⁻¹²⁶ it is representable (no rounding at all), above it
//!    rounds with relative error ≤ u. Partial sums stay below (1 + u)ⁿ·1.75·K·max|x| <
//!    2¹²⁸ (|h| ≤ 448/256), so nothing overflows. Each product meets at most
//!    n = ⌈K/8⌉ + 3 roundings: |T − Σ h·x| ≤ γₙ·Σ|h·x|.
//! 3. `binary32(T·F)` adds a relative u, or an absolute 2⁻¹⁵⁰ if subnormal:
//!    |y − Σ w·x| ≤ γₙ₊₁·Σ|w·x| + 2⁻¹⁵⁰ ≤ (K + 8)·2⁻²³·Σ|w·x| + (K + 8)·2⁻¹⁴⁹, as
//!    γₙ₊₁ ≤ 2(n + 1)u when (n + 1)u ≤ ½ (K ≤ 2²⁴) and n + 1 ≤ K + 8. (An output beyond
//!    the binary32 range overflows in either order.)
//!
//! Without the activation condition, an h·x below 2⁻¹²⁶ may round by 2⁻¹⁵⁰, i.e. by
//! F·2⁻¹⁵⁰ in y, beyond the criterion's absolute term when F > 2, and h·x exceeds w·x by
//! 1/F (overflow when s is tiny and x huge); without the row condition, w_k or F would
//! overflow. A NaN word gives h = NaN, hence a NaN output, in both orders.
//!
//! **nvfp4 scaled order**, the same idea: a row whose divisor has 2⁻¹¹⁵ ≤ |d| ≤ 2¹¹⁶
//! ([`nvfp4_scaled_row`]) meets an activation row with only finite elements, nonzero ones
//! of magnitude ≥ 2⁻¹¹⁶, K ≤ 2²⁴ and K·max|x| ≤ 2¹¹⁶ ([`nvfp4_scaled_x`]) with the values
//! `v_k = ±binary32(|e2m1(c_k)|·sf)` (exact: at most 6 significant bits, magnitudes in
//! [2⁻¹⁰, 2688]) accumulated as above into T, and the output `binary32(T / d)` (one divide
//! per output instead of one per block and table). Otherwise the values
//! `w_k = ±binary32(binary32(|e2m1|·sf) / d)`. Against the decoded weights w_k:
//! 1. |v_k/d| lies in [2⁻¹²⁶, 2¹²⁷): w_k is normal and |w_k − v_k/d| ≤ u·|v_k/d|, so
//!    |Σ (v/d)·x − Σ w·x| ≤ u·Σ|v·x|/|d| ≤ u/(1 − u)·Σ|w·x|.
//! 2. v_k is a multiple of 2⁻¹⁰ and x_k of 2⁻¹³⁹ (|x| ≥ 2⁻¹¹⁶): as for fp8, every fma and
//!    lane sum is exact or rounds by a relative u, nothing overflows (partial sums below
//!    1.01·2688·K·max|x| < 2¹²⁸), |T − Σ v·x| ≤ γₙ·Σ|v·x|, n = ⌈K/8⌉ + 3.
//! 3. `binary32(T / d)` adds a relative u or an absolute 2⁻¹⁵⁰: in all,
//!    |y − Σ w·x| ≤ (γₙ₊₁ + u)/(1 − u)·Σ|w·x| + 2⁻¹⁵⁰ ≤ 2(n + 2)u·Σ|w·x| + 2⁻¹⁵⁰, within
//!    the criterion since n + 2 ≤ K + 8.
//!
//! A NaN scale gives NaN values, hence a NaN output, in both orders.

// Index loops mirror the lane equations of the module docs.
#![allow(clippy::needless_range_loop)]

use super::{Isa, tree8};

/// The code layout of a grouped format in row_split_k128_v1 (spec §4–§6, docs/layouts.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grouped {
    /// q2_g64_fp16: 2-bit words u in plane 0 (4 per byte), code `u − 1`.
    Q2,
    /// t2_g128_fp16: 2-bit two's-complement words in plane 0.
    T2,
    /// q4_g64_fp16: 4-bit two's-complement words in plane 0 (2 per byte).
    Q4,
    /// q5_g64_fp16: low 4 bits in plane 0, bit 4 in plane 1 (8 per byte).
    Q5,
    /// q6_g64_fp16: low 4 bits in plane 0, bits 5..4 in plane 1 (4 per byte).
    Q6,
    /// q8_g32_fp16: one i8 per byte in plane 0.
    Q8,
}

impl Grouped {
    /// The code reader of a grouped format.
    pub(crate) fn of(format: crate::registry::Format) -> Option<Grouped> {
        use crate::registry::Format;
        Some(match format {
            Format::Q2_G64Fp16 => Grouped::Q2,
            Format::T2_G128Fp16 => Grouped::T2,
            Format::Q4_G64Fp16 => Grouped::Q4,
            Format::Q5_G64Fp16 => Grouped::Q5,
            Format::Q6_G64Fp16 => Grouped::Q6,
            Format::Q8_G32Fp16 => Grouped::Q8,
            _ => return None,
        })
    }

    /// Values per scale.
    pub(crate) const fn group(self) -> usize {
        match self {
            Grouped::Q8 => 32,
            Grouped::T2 => 128,
            _ => 64,
        }
    }

    /// The signed code of element k (any word is read with its arithmetic meaning: a q8
    /// 0x80 is −128, a t2 0b10 is −2).
    #[inline(always)]
    pub(crate) fn code(self, lo: &[u8], hi: &[u8], k: usize) -> i32 {
        let nib = || ((lo[k / 2] >> (4 * (k % 2))) & 0x0F) as i32;
        let two = |b: &[u8]| ((b[k / 4] >> (2 * (k % 4))) & 3) as i32;
        match self {
            Grouped::Q2 => two(lo) - 1,
            Grouped::T2 => (two(lo) << 30) >> 30,
            Grouped::Q4 => (nib() << 28) >> 28,
            Grouped::Q5 => {
                let w = nib() | ((((hi[k / 8] >> (k % 8)) & 1) as i32) << 4);
                (w << 27) >> 27
            }
            Grouped::Q6 => ((nib() | (two(hi) << 4)) << 26) >> 26,
            Grouped::Q8 => lo[k] as i8 as i32,
        }
    }
}

/// One weight row as the kernel reads it.
#[derive(Clone, Copy)]
pub(crate) enum WRow<'a> {
    /// bf16 little-endian words (2 bytes per value).
    Bf16Le(&'a [u8]),
    /// fp32 little-endian words (4 bytes per value).
    F32Le(&'a [u8]),
    /// Decoded values.
    F32(&'a [f32]),
    /// A grouped format in row_split_k128_v1: `lo` / `hi` = the row's plane-0 / plane-1
    /// bytes (Kpad values), `sf` = its first ceil(K/G) binary16 scales as f32 (exact);
    /// `k` = K. Value: `sf[k / G] · code` (§6.2, exact, one binary32 rounding).
    Grouped {
        kind: Grouped,
        lo: &'a [u8],
        hi: &'a [u8],
        sf: &'a [f32],
        k: usize,
    },
    /// fp8_e4m3fn_row_bf16 / _fp16: the row's K E4M3FN code bytes and its multiplier's
    /// exact f32 value. Value: `binary32(e4m3fn(c) · scale)` (§3.4).
    Fp8 { codes: &'a [u8], scale: f32 },
    /// fp8_e4m3fn_row_bf16 / _fp16 in the scaled order (module docs, "fp8 scaled order"):
    /// the row's K E4M3FN code bytes and `factor` = 256·s (exact). Values:
    /// `e4m3fn(c)·2⁻⁸` (exact); the row's sum is multiplied by `factor` once at the end
    /// ([`WRow::finish`]). Only for rows and activation rows that pass [`fp8_scaled_row`]
    /// and [`fp8_scaled_x`].
    Fp8Scaled { codes: &'a [u8], factor: f32 },
    /// nvfp4: the row's E2M1 code bytes (element k is nibble k mod 2 of byte k/2, low
    /// first), its K/16 block scales already decoded from E4M3FN (`sf`), and its source's
    /// FP32 divisor `d`. Value: `±binary32(binary32(|e2m1(c)|·sf) / d)`, the sign of the
    /// code applied last — for a valid payload exactly `binary32(binary32(e2m1(c)·sf) / d)`
    /// (§3.3), since negation commutes with rounding.
    Nvfp4 {
        codes: &'a [u8],
        sf: &'a [f32],
        d: f32,
    },
    /// nvfp4 in the scaled order (module docs): as [`WRow::Nvfp4`], values
    /// `±binary32(|e2m1(c)|·sf)` (exact); the row's sum is divided by `d` once at the end.
    /// Only for rows and activation rows that pass [`nvfp4_scaled_row`] and
    /// [`nvfp4_scaled_x`].
    Nvfp4Scaled {
        codes: &'a [u8],
        sf: &'a [f32],
        d: f32,
    },
}

impl WRow<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            WRow::Bf16Le(b) => b.len() / 2,
            WRow::F32Le(b) => b.len() / 4,
            WRow::F32(v) => v.len(),
            WRow::Grouped { k, .. } => *k,
            WRow::Fp8 { codes, .. } | WRow::Fp8Scaled { codes, .. } => codes.len(),
            WRow::Nvfp4 { codes, .. } | WRow::Nvfp4Scaled { codes, .. } => 2 * codes.len(),
        }
    }

    /// The value of element k (the scalar reference of every AVX2 decoder).
    #[inline(always)]
    pub(crate) fn get(&self, k: usize) -> f32 {
        match self {
            WRow::Bf16Le(b) => {
                f32::from_bits((u16::from_le_bytes([b[2 * k], b[2 * k + 1]]) as u32) << 16)
            }
            WRow::F32Le(b) => {
                f32::from_le_bytes([b[4 * k], b[4 * k + 1], b[4 * k + 2], b[4 * k + 3]])
            }
            WRow::F32(v) => v[k],
            WRow::Grouped {
                kind, lo, hi, sf, ..
            } => sf[k / kind.group()] * kind.code(lo, hi, k) as f32,
            WRow::Fp8 { codes, scale } => crate::words::e4m3fn::decode(codes[k]) * scale,
            WRow::Fp8Scaled { codes, .. } => crate::words::e4m3fn::decode(codes[k]) * (1.0 / 256.0),
            WRow::Nvfp4 { codes, sf, d } => {
                let c = codes[k / 2] >> (4 * (k % 2));
                let mag = crate::words::e2m1::MAGNITUDES[(c & 7) as usize] * sf[k / 16] / d;
                f32::from_bits(mag.to_bits() ^ (((c & 8) as u32) << 28))
            }
            WRow::Nvfp4Scaled { codes, sf, .. } => {
                let c = codes[k / 2] >> (4 * (k % 2));
                let mag = crate::words::e2m1::MAGNITUDES[(c & 7) as usize] * sf[k / 16];
                f32::from_bits(mag.to_bits() ^ (((c & 8) as u32) << 28))
            }
        }
    }
}

impl WRow<'_> {
    /// The row's output from its eight-lane sum: `y·factor` in the fp8 scaled order,
    /// `y / d` in the nvfp4 one, `y` otherwise.
    #[inline(always)]
    pub(crate) fn finish(&self, y: f32) -> f32 {
        match self {
            WRow::Fp8Scaled { factor, .. } => y * factor,
            WRow::Nvfp4Scaled { d, .. } => y / d,
            _ => y,
        }
    }
}

/// `out[i·m + r] = Σ_k w[i]_k · x[r·K + k]` for every weight row i (all of one kind and
/// length K) and activation row r (`x.len() == m · K`), in the order of the module docs.
/// On the AVX-512 tier, `all_512` runs the 512-bit kernel for every row kind it has, else
/// only for those measured faster there on cores with two 512-bit ports ([`all_512`]);
/// the bits are the same.
pub(crate) fn dot_rows(
    isa: Isa,
    all_512: bool,
    w: &[WRow<'_>],
    x: &[f32],
    m: usize,
    out: &mut [f32],
) {
    debug_assert_eq!(out.len(), w.len() * m);
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects Isa::Avx512 (AVX-512 F/BW/VL on top of AVX2,
        // FMA and F16C) only after run-time detection.
        Isa::Avx512 => unsafe { super::float_avx512::dot_rows(w, x, m, out, all_512) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects a tier above Isa::Scalar (each requiring AVX2,
        // FMA and F16C) only after run-time detection.
        isa if isa.avx2() => unsafe { super::float_avx2::dot_rows(w, x, m, out, false) },
        _ => {
            let _ = all_512;
            let k = w.first().map_or(0, |r| r.len());
            for (i, wr) in w.iter().enumerate() {
                for r in 0..m {
                    let mut acc = [0f32; 8];
                    accumulate_scalar(wr, &x[r * k..(r + 1) * k], 0, &mut acc);
                    out[i * m + r] = wr.finish(tree8(acc));
                }
            }
        }
    }
}

/// Whether the AVX-512 tier runs its 512-bit kernel for every row kind it has (the
/// default of [`dot_rows`]'s `all_512`): on cores with four 512-bit pipes
/// ([`Cpu::wide_pipes`](crate::isa::Cpu::wide_pipes), AMD Zen 5), where each measured
/// faster than the AVX2 code. On an Intel Xeon with AMX (two 512-bit ports, 512-bit
/// shuffles on one) the q2 / t2 rows and the fp8 rows in the scaled order measured 5–18%
/// slower in 512 bits than in the AVX2 code at M = 1 (one thread, 4096² and 16384 × 4096),
/// q8 even and q4 / q5 / q6 and nvfp4 1.2–1.9× faster, so on every other AVX-512 CPU
/// (Intel, and AMD Zen 4, where the AVX2 code measured 1.12–1.30× faster: q2 20.8 against
/// 16.3 GMAC/s, t2 21.4 against 16.5, fp8 12.8 against 11.4, M = 1, 4096², one thread) the
/// q2 / t2 / fp8 rows run the AVX2 code.
pub(crate) fn all_512() -> bool {
    crate::isa::Cpu::get().wide_pipes
}

/// The values of weight row `w` as f32 (`out.len()` = K): exactly the values the dot
/// kernels multiply, on every instruction set.
pub(crate) fn materialize(isa: Isa, w: &WRow<'_>, out: &mut [f32]) {
    debug_assert_eq!(out.len(), w.len());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects a tier above Isa::Scalar (each requiring AVX2,
        // FMA and F16C) only after run-time detection.
        isa if isa.avx2() => unsafe { super::float_avx2::materialize(w, out) },
        _ => {
            for (k, o) in out.iter_mut().enumerate() {
                *o = w.get(k);
            }
        }
    }
}

/// `out[g]` = the binary16 word at `words[2g..2g + 2]` (little-endian) as f32, exact
/// (`words.len() >= 2·out.len()`).
pub(crate) fn f16_words_to_f32(isa: Isa, words: &[u8], out: &mut [f32]) {
    assert!(words.len() >= 2 * out.len());
    // The words the AVX2 path converted (it leaves a tail to the loop below).
    let done = match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prepared weight selects a tier above Isa::Scalar (each requiring AVX2,
        // FMA and F16C) only after run-time detection; the
        // lengths are checked above.
        isa if isa.avx2() => unsafe { super::float_avx2::f16_words_to_f32(words, out) },
        _ => 0,
    };
    for (o, w) in out.iter_mut().zip(words.chunks_exact(2)).skip(done) {
        *o = half::f16::from_bits(u16::from_le_bytes([w[0], w[1]])).to_f32();
    }
}

/// Rows `first..first + out.len() / nkb`'s nvfp4 block scales as f32, exact, in block
/// order (`out` = rows × nkb, row-major), read from the swizzled scale plane `plane`
/// (layout block_scale_k16_m128x4_v1; word (m, kb) at [`block_scale::offset`]). NaN words
/// give `words::e4m3fn::TABLE`'s NaN bits on every path.
///
/// Panics when `nkb` is 0, does not divide `out.len()`, or a row's words lie past the
/// plane.
pub(crate) fn nvfp4_block_scales(
    isa: Isa,
    plane: &[u8],
    first: usize,
    nkb: usize,
    out: &mut [f32],
) {
    use crate::layouts::block_scale::{self, TILE_BLOCKS, TILE_BYTES};
    assert!(nkb > 0 && out.len().is_multiple_of(nkb));
    let rows = out.len() / nkb;
    let mut i = 0;
    while i < rows {
        let row = first + i;
        // Row `row`'s words lie between its first and its last one's tile (every word of a
        // row's whole tiles, padding included, sits at or below the last tile's row slot).
        let base = block_scale::offset(row, 0, nkb);
        let last = base + (nkb - 1) / TILE_BLOCKS * TILE_BYTES;
        // Four rows from a multiple of 4 (one 32-row stripe, their 16-byte lines
        // contiguous in every tile, 64 bytes from 4·stripe below the first row's word) at
        // once where the tier has a quad pass.
        let stripe = (row % block_scale::TILE_ROWS) / 32;
        let quad = row.is_multiple_of(4) && i + 4 <= rows && isa == Isa::Avx512;
        let (take, end) = if quad {
            (4, last - 4 * stripe + 64)
        } else {
            (1, last + TILE_BLOCKS)
        };
        assert!(end <= plane.len(), "scale plane too short");
        let o = &mut out[i * nkb..(i + take) * nkb];
        // The blocks of each row the vector paths converted (they leave a tail to the loop
        // below).
        let done = match isa {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: a prepared weight selects Isa::Avx512 (AVX-512 F/BW/VL on top of
            // AVX2, FMA and F16C) only after run-time detection; the rows' 64 bytes of
            // every whole tile up to the last lie in the plane (checked above).
            Isa::Avx512 if quad => unsafe {
                let lines = plane.as_ptr().add(base - 4 * stripe);
                super::float_avx512::nvfp4_quad_scales(lines, stripe, nkb, o)
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for AVX2, FMA and F16C; the 4 bytes of every tile of the
            // row lie in the plane (checked above).
            isa if isa.avx2() => unsafe {
                super::float_avx2::nvfp4_row_scales(plane.as_ptr().add(base), o)
            },
            _ => 0,
        };
        for (j, o) in o.chunks_exact_mut(nkb).enumerate() {
            for (kb, s) in o.iter_mut().enumerate().skip(done) {
                *s = crate::words::e4m3fn::decode(plane[block_scale::offset(row + j, kb, nkb)]);
            }
        }
        i += take;
    }
}

/// Whether a row with multiplier `scale` (its exact f32 value) may run in the fp8 scaled
/// order: |s| < 2¹¹⁹, so that 256·s is exact and finite and every weight `e4m3fn(c)·s` is
/// exact in binary32 (at most 12 significant bits, a multiple of 2⁻¹⁴² — the bf16
/// granularity 2⁻¹³³ times E4M3FN's 2⁻⁹ — and below 448·2¹¹⁹ < 2¹²⁸). Every binary16
/// multiplier passes; huge, Inf and NaN bf16 multipliers keep the multiply-per-element
/// order.
pub(crate) fn fp8_scaled_row(scale: f32) -> bool {
    scale.abs() < f32::from_bits((127 + 119) << 23)
}

/// Whether an activation row may meet fp8 rows in the scaled order: every element finite,
/// every nonzero |x| ≥ 2⁻¹⁰⁹, K ≤ 2²⁴ and K·max|x| ≤ 2¹²⁶ (checked once per activation
/// row and forward; the proof is in the module docs).
pub(crate) fn fp8_scaled_x(x: &[f32]) -> bool {
    scaled_x(x, -109, 126)
}

/// Whether an nvfp4 row with divisor `d` may run in the nvfp4 scaled order:
/// 2⁻¹¹⁵ ≤ |d| ≤ 2¹¹⁶, so that every decoded weight `binary32(v/d)` (|v| in [2⁻¹⁰, 2688])
/// is a normal number, within one rounding of v/d.
pub(crate) fn nvfp4_scaled_row(d: f32) -> bool {
    (2f32.powi(-115)..=2f32.powi(116)).contains(&d.abs())
}

/// Whether an activation row may meet nvfp4 rows in the scaled order: every element
/// finite, every nonzero |x| ≥ 2⁻¹¹⁶, K ≤ 2²⁴ and K·max|x| ≤ 2¹¹⁶.
pub(crate) fn nvfp4_scaled_x(x: &[f32]) -> bool {
    scaled_x(x, -116, 116)
}

/// Every element finite, every nonzero |x| ≥ 2^tiny, K ≤ 2²⁴ and K·max|x| ≤ 2^sum.
fn scaled_x(x: &[f32], tiny: i32, sum: i32) -> bool {
    let tiny = 2f32.powi(tiny).to_bits();
    let (mut max, mut small) = (0u32, false);
    for v in x {
        let a = v.to_bits() & 0x7FFF_FFFF;
        max = max.max(a);
        small |= a != 0 && a < tiny;
    }
    // NaN words compare above Inf's.
    max < f32::INFINITY.to_bits()
        && !small
        && x.len() <= 1 << 24
        && x.len() as f64 * f32::from_bits(max) as f64 <= 2f64.powi(sum)
}

/// The reference order, one element at a time from `start` (accumulator given).
#[inline]
pub(crate) fn accumulate_scalar(w: &WRow<'_>, x: &[f32], start: usize, acc: &mut [f32; 8]) {
    for (k, &xk) in x.iter().enumerate().skip(start) {
        acc[k % 8] = w.get(k).mul_add(xk, acc[k % 8]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::grouped::Scheme;
    use crate::registry::Format;

    /// Each row's f32 block scales equal the spec's E4M3FN equation written plainly for the
    /// word at the block_scale_k16_m128x4_v1 offset (also written plainly), bit for bit
    /// (NaN words: the binary32 quiet NaN of their sign), on every tier: every byte value
    /// among the words, K-block counts below, at and past one step of each tier (an 8-tile
    /// gather of one row; on AVX-512, 4 tiles of four rows of one stripe) with and without
    /// a partial last tile, rows starting inside a 32-row stripe and crossing 128-row
    /// bands.
    #[test]
    fn nvfp4_block_scales_are_the_words_at_their_swizzled_offsets() {
        let e4m3fn = |w: u8| -> u32 {
            let (sign, e, m) = (w >> 7, (w >> 3) & 15, (w & 7) as f64);
            if w & 0x7F == 0x7F {
                return 0x7FC0_0000 | (sign as u32) << 31;
            }
            let mag = if e == 0 {
                m * 2f64.powi(-9)
            } else {
                (1.0 + m / 8.0) * 2f64.powi(e as i32 - 7)
            };
            ((if sign == 1 { -mag } else { mag }) as f32).to_bits()
        };
        let offset = |m: usize, kb: usize, nkb: usize| {
            let tiles = nkb.div_ceil(4);
            (m / 128) * tiles * 512 + (kb / 4) * 512 + (m % 32) * 16 + (m % 128) / 32 * 4 + kb % 4
        };
        for (rows, nkb, first, count) in [
            (300usize, 17usize, 5usize, 150usize),
            (256, 64, 64, 130),
            (130, 67, 0, 130),
            (40, 1, 3, 37),
            (200, 130, 31, 9),
            (129, 256, 120, 9),
            (8, 33, 0, 8),
        ] {
            let len = crate::layouts::block_scale::scales_len(rows, nkb).unwrap();
            let plane: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
            for isa in Isa::tested() {
                let mut out = vec![f32::NAN; count * nkb];
                nvfp4_block_scales(isa, &plane, first, nkb, &mut out);
                for i in 0..count {
                    for kb in 0..nkb {
                        let w = plane[offset(first + i, kb, nkb)];
                        assert_eq!(
                            out[i * nkb + kb].to_bits(),
                            e4m3fn(w),
                            "{isa:?} nkb {nkb} row {} block {kb} word {w:#04x}",
                            first + i
                        );
                    }
                }
            }
        }
    }

    /// The code reader gives the layout codec's codes for every word of every grouped
    /// format (the codec is the oracle: it is tested against the spec's packing).
    #[test]
    fn grouped_codes_match_the_layout_codec() {
        for (kind, format) in [
            (Grouped::Q2, Format::Q2_G64Fp16),
            (Grouped::T2, Format::T2_G128Fp16),
            (Grouped::Q4, Format::Q4_G64Fp16),
            (Grouped::Q5, Format::Q5_G64Fp16),
            (Grouped::Q6, Format::Q6_G64Fp16),
            (Grouped::Q8, Format::Q8_G32Fp16),
        ] {
            let s = Scheme::of(format).unwrap();
            assert_eq!(s.group, kind.group());
            let kp = 256;
            let span = 1i32 << s.bits;
            // Every word of the width (t2's −2 and q8's −128 included).
            let codes: Vec<i8> = (0..kp)
                .map(|i| s.code_from_word(((i * 37 + 5) as i32 % span) as u8))
                .collect();
            let sizes = crate::layouts::row_split::row_plane_bytes(format, kp).unwrap();
            let (mut lo, mut hi) = (vec![0u8; sizes[0]], vec![0u8; sizes[1]]);
            crate::layouts::row_split::pack_codes(&s, &codes, &mut lo, &mut hi);
            for (k, &q) in codes.iter().enumerate() {
                assert_eq!(kind.code(&lo, &hi, k), q as i32, "{format} k={k}");
            }
        }
    }
}
