//! nvfp4 (block_scale_k16_m128x4_v1) against q8_1 activations: the opt-in
//! [`Activation::Q8_1`](crate::linear::Activation) compute profile (docs/linear.md). The
//! scalar reference order lives here; `nvfp4_q8_avx2` reproduces its bits.
//!
//! # Values
//!
//! The weight is `w_k = binary32(binary32(e2m1(c_k)·sf_b) / d_w)` (§3.3; `sf_b` the E4M3FN
//! scale of 16-value block b, `d_w` the row's source divisor), the activation the q8_1 value
//! `x̂_k = dx_j·q_k` (block j = k/32). Twice an E2M1 value is an integer in [−12, 12]
//! (`2·e2m1` of the words 0..7 = 0, 1, 2, 3, 4, 6, 8, 12; bit 3 negates), so per 16-value
//! block the product splits into an exact integer sum and one scale product.
//!
//! # Evaluation order (fixed per output)
//!
//! K is a multiple of 32. A weight row is **fast** when its divisor is finite and > 0, all
//! its scale words are valid (0x00..=0x7E) and every nonzero weight magnitude it can
//! represent is a normal finite binary32: `0.5·sf_min / d_w ≥ 2⁻¹²⁶` and
//! `6·sf_max / d_w ≤ 2¹²⁷` over its nonzero scales (checked per row and forward in f64,
//! exactly; [`fast`]). Every payload a production quantizer writes (d_w = 2688 / amax) is
//! fast unless amax is near the ends of binary32. For a fast row, blocks b = 0 .. K/16:
//!
//! - `S_b = Σ_k 2·e2m1(c_k)·q_k` over the block's 16 values, an EXACT integer
//!   (|S_b| ≤ 16·12·127 = 24384);
//! - `C_b = sf_b · (dx_j / 2)` (j = b/2, the q8_1 block holding block b): exact in binary32
//!   (a 4-bit times an 11-bit significand, magnitudes in [2⁻³⁴, 1.5·2²³]);
//! - `acc[b mod 8] ← fma(C_b, S_b, acc[b mod 8])`, eight FP32 accumulators from +0;
//!
//! and the output is `binary32(tree8(acc) / d_w)` (one division per output).
//!
//! Criterion: Σ_b C_b·S_b = d_w·Σ_k (e2m1·sf/d_w)·x̂_k exactly; the lane sums and the tree
//! add at most (K/128 + 3) roundings of 2⁻²⁴ relative to Σ|C_b·S_b|, the division one more
//! (or 2⁻¹⁵⁰ absolute when the output is subnormal), and the decoded weights the oracle uses
//! differ from `e2m1·sf/d_w` by at most 2⁻²⁴ relative (they are normal: that is what
//! "fast" guarantees). Together well inside `(K + 8)·2⁻²³·Σ|w·x̂| + (K + 8)·2⁻¹⁴⁹`.
//! (A subnormal or infinite decoded weight would break that: its rounding error is not
//! relative, e.g. 0 where `e2m1·sf/d_w` is 2⁻¹⁵¹, Inf where it is 2¹²⁸.)
//!
//! Every other row (extreme divisors, and payloads that break §3.3: negative or NaN scale
//! words, a divisor ≤ 0 or non-finite) runs the **exact-weight** order: the decoded weights
//! of the exact profile, `±binary32(binary32(|e2m1(c)|·sf) / d_w)` with their arithmetic
//! meaning (NaN words as NaN, the code's sign last), times `x̂_k = dx_j·q_k` (exact),
//! `acc[k mod 8] ← fma(w_k, x̂_k, acc[k mod 8])` in increasing k, `tree8(acc)` — the exact
//! profile's plain f32 order with x̂ for x, so such a row gives what the exact profile's
//! plain order gives on x̂, NaN and Inf included. (The exact profile runs a row in its
//! scaled order instead when 2⁻¹¹⁵ ≤ |d_w| ≤ 2¹¹⁶, cpu::float docs: an invalid payload with
//! such a divisor — a negative scale word, a negative d_w — gives other rounding there.)
//! No payload is refused (§8: products do not validate; run `validate` first on untrusted
//! payloads).
//!
//! The x86 paths compute `S_b` with unsigned weights `u = 2·e2m1 + 12 ∈ [0, 24]`
//! (`vpmaddubsw` on AVX2, `vpdpbusd` on the VNNI tiers), remove `12·Σq` with the
//! activation's exact 16-value code sums, and form `C_b` as `(sf_b/256)·(128·dx_j)` (the same exact value); the exact-weight order
//! runs in scalar code on every instruction set.

use super::engine::ROW_GROUP;
use super::{Isa, tree8};
use crate::layouts::block_scale::{TILE_BLOCKS, TILE_BYTES};
use crate::linear::q8_1::{Row, Rows};
use crate::words::{e2m1, e4m3fn};

/// One nvfp4 weight row: its K/2 code bytes (element 2i in the low nibble of byte i), the
/// swizzled scale plane from the row's first word on (block b's word at
/// `(b / 4)·TILE_BYTES + b % 4`: 4 contiguous words per 128×4 tile), and its source's
/// divisor.
#[derive(Clone, Copy)]
pub(crate) struct NRow<'a> {
    pub codes: &'a [u8],
    pub scales: &'a [u8],
    pub d: f32,
}

impl NRow<'_> {
    /// The E4M3FN scale word of block b.
    #[inline]
    pub(super) fn word(&self, b: usize) -> u8 {
        self.scales[b / TILE_BLOCKS * TILE_BYTES + b % TILE_BLOCKS]
    }
}

/// Bytes of the scale plane a row of `nb` blocks spans from its first word.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // AVX2 path only
pub(super) fn scales_span(nb: usize) -> usize {
    match nb {
        0 => 0,
        _ => (nb - 1) / TILE_BLOCKS * TILE_BYTES + (nb - 1) % TILE_BLOCKS + 1,
    }
}

/// `2·e2m1(c)` for every code word c (an integer in [−12, 12]; 0x8 is 0).
pub(super) const TWICE: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Whether row `w` of `nb` blocks runs the fast order (module docs): d finite and > 0,
/// every scale word valid, and every nonzero weight magnitude `e2m1·sf/d` in
/// [2⁻¹²⁶, 2¹²⁷].
pub(crate) fn fast(w: &NRow<'_>, nb: usize) -> bool {
    let (mut max, mut min1) = (0u8, u8::MAX);
    for b in 0..nb {
        let s = w.word(b);
        max = max.max(s);
        min1 = min1.min(s.wrapping_sub(1));
    }
    fast_range(max, min1, w.d)
}

/// [`fast`] for row `w` of `nb` blocks given `max` ≥ its largest scale word: with
/// `2688·2⁻¹²⁷ ≤ d ≤ 2¹¹⁶` every valid row is fast (0.5·2⁻⁹/d ≥ 2⁻¹²⁶ and 6·448/d ≤ 2¹²⁷
/// for all scales), so `max ≤ 0x7E` decides; otherwise the row's words are scanned.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // AVX2 path only
#[inline]
pub(super) fn fast_given_max(w: &NRow<'_>, max: u8, nb: usize) -> bool {
    let (lo, hi) = (21.0 * 2f32.powi(-120), 2f32.powi(116));
    if (lo..=hi).contains(&w.d) && max <= e4m3fn::MAX_WORD {
        true
    } else {
        fast(w, nb)
    }
}

/// [`fast`] from the row's largest scale word `max` and its smallest nonzero word minus one
/// `min1` (a zero word wraps to 0xFF, so it never counts), and its divisor `d`.
pub(super) fn fast_range(max: u8, min1: u8, d: f32) -> bool {
    if !(d.is_finite() && d > 0.0) {
        return false;
    }
    // Valid words (0x00..=0x7E) are ordered like their values: the extremes are the
    // largest word and the smallest nonzero one.
    if max > e4m3fn::MAX_WORD {
        return false;
    }
    if max == 0 {
        return true; // every weight is 0 / d = 0
    }
    let (lo, hi) = (e4m3fn::decode(min1 + 1) as f64, e4m3fn::decode(max) as f64);
    let d = d as f64;
    // All exact in f64: products of short significands and powers of two.
    0.5 * lo >= 2f64.powi(-126) * d && 6.0 * hi <= 2f64.powi(127) * d
}

/// Weight rows the engine hands each call with `m` > 1 activation rows on `isa`: 8 where
/// they take the 512-bit tile kernel (two sets of four sharing each activation load), else 4.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
pub(crate) fn rows_per_call(isa: Isa, m: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    if isa == Isa::Avx512 && m >= super::nvfp4_tile_avx512::MIN_M {
        return super::nvfp4_tile_avx512::ROWS;
    }
    ROW_GROUP
}

/// Activation rows as the kernel on `isa` reads them (the AVX2 kernel reads each 64-value
/// pair of q8_1 blocks as [even elements, odd elements], the order of the code nibbles).
pub(crate) fn prepare(isa: Isa, rows: Rows) -> Rows {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => {
            let mut rows = super::nvfp4_q8_avx2::avx512::arrange(rows);
            if rows.rows() >= super::nvfp4_tile_avx512::MIN_M {
                rows.arrange_quads(false);
            }
            rows
        }
        #[cfg(target_arch = "x86_64")]
        isa if isa.avx2() => super::nvfp4_q8_avx2::arrange(rows),
        _ => rows,
    }
}

/// Block b's exact `S_b = Σ 2·e2m1(c)·q` against the activation codes `xq` (16 values).
#[inline]
pub(super) fn block_total(codes: &[u8], b: usize, xq: &[i8]) -> i32 {
    (0..16)
        .map(|e| {
            let byte = codes[8 * b + e / 2];
            let c = (byte >> (4 * (e % 2))) & 0x0F;
            TWICE[c as usize] as i32 * xq[e] as i32
        })
        .sum()
}

/// `acc[b mod 8] ← fma(sf_b·(dx_j/2), S_b, acc[b mod 8])` for blocks `from .. to` of a fast
/// row (the scalar reference step, also the AVX2 path's tail).
pub(super) fn blocks_scalar(w: &NRow<'_>, x: &Row<'_>, from: usize, to: usize, acc: &mut [f32; 8]) {
    for b in from..to {
        let s = block_total(w.codes, b, &x.qs[16 * b..16 * b + 16]);
        let c = e4m3fn::decode(w.word(b)) * (0.5 * x.d[b / 2]);
        let a = &mut acc[b % 8];
        *a = c.mul_add(s as f32, *a);
    }
}

/// The exact-weight order of a row that is not fast (module docs): the exact profile's
/// weights times x̂, one element at a time.
pub(super) fn exact_weights(w: &NRow<'_>, x: &Row<'_>) -> f32 {
    let mut acc = [0f32; 8];
    let mut sf = 0f32;
    for (k, &q) in x.qs.iter().enumerate() {
        if k % 16 == 0 {
            sf = e4m3fn::decode(w.word(k / 16));
        }
        let c = w.codes[k / 2] >> (4 * (k % 2));
        let mag = e2m1::MAGNITUDES[(c & 7) as usize] * sf / w.d;
        let wk = f32::from_bits(mag.to_bits() ^ (((c & 8) as u32) << 28));
        let xk = x.d[k / 32] * q as f32;
        acc[k % 8] = wk.mul_add(xk, acc[k % 8]);
    }
    tree8(acc)
}

/// One fast row against one activation row in the reference order.
fn fast_scalar(w: &NRow<'_>, x: &Row<'_>) -> f32 {
    let mut acc = [0f32; 8];
    blocks_scalar(w, x, 0, 2 * x.d.len(), &mut acc);
    tree8(acc) / w.d
}

/// Up to 16 weight rows `ws` against every q8_1 row `xs`: `out[i·M + r]` = the product of
/// `ws[i]` with `xs[r]` (row of W major), in the order of the module docs.
///
/// Each `ws[i]` holds K/2 code bytes and the scales of K/16 blocks, K = 32·`xs[r].d.len()`.
pub(crate) fn dot_row_group(isa: Isa, ws: &[NRow<'_>], xs: &[Row<'_>], out: &mut [f32]) {
    dot_row_group_in(isa, true, ws, xs, out)
}

/// [`dot_row_group`], on the AVX-512 tier with the GFNI and VBMI unpacking where `gfni` and
/// the CPU has both ([`Cpu::gfni`](crate::isa::Cpu::gfni),
/// [`Cpu::avx512vbmi`](crate::isa::Cpu::avx512vbmi)); the same bits in either form.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn dot_row_group_in(isa: Isa, gfni: bool, ws: &[NRow<'_>], xs: &[Row<'_>], out: &mut [f32]) {
    let m = xs.len();
    debug_assert_eq!(ws.len() * m, out.len());
    let Some(x0) = xs.first() else {
        return;
    };
    let nb = 2 * x0.d.len();
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY (each tier): a prepared weight selects a tier only after run-time detection
        // of all its features (`Isa::available`), those its kernel is compiled for (the
        // kernel checks the lengths); the GFNI/VBMI instance only where both are detected.
        Isa::Avx512 => unsafe {
            // Several activation rows: the tile kernel when the rows are interleaved for it,
            // else the pair kernels; the same bits.
            let cpu = crate::isa::Cpu::get();
            if super::nvfp4_tile_avx512::applies(xs) {
                super::nvfp4_tile_avx512::dot_row_group(ws, xs, out)
            } else if gfni && cpu.gfni && cpu.avx512vbmi {
                super::nvfp4_q8_avx2::avx512::gfni::dot_row_group(ws, xs, out)
            } else {
                super::nvfp4_q8_avx2::avx512::dot_row_group(ws, xs, out)
            }
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::AvxVnni => unsafe { super::nvfp4_q8_avx2::avxvnni::dot_row_group(ws, xs, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 => unsafe { super::nvfp4_q8_avx2::avx2::dot_row_group(ws, xs, out) },
        _ => {
            for (w, o) in ws.iter().zip(out.chunks_exact_mut(m)) {
                let f = fast(w, nb);
                for (o, x) in o.iter_mut().zip(xs) {
                    *o = if f {
                        fast_scalar(w, x)
                    } else {
                        exact_weights(w, x)
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linear::cpu::tests::{q8_1_tiers, xorshift};

    /// `TWICE` is twice the E2M1 table (the decoder's constants are the oracle).
    #[test]
    fn twice_is_two_e2m1() {
        for c in 0..16u8 {
            assert_eq!(TWICE[c as usize] as f32, 2.0 * e2m1::decode(c), "{c:#x}");
        }
    }

    /// A hand-worked block sum: byte 0x7F = element 2i code 0xF (−6), element 2i + 1 code
    /// 0x7 (+6); doubled: −12, +12.
    #[test]
    fn hand_worked_block_total() {
        let codes = [0x7Fu8; 16];
        let x: Vec<i8> = (0..32).map(|e| e as i8 - 10).collect();
        let want: i32 = (0..16)
            .map(|e| if e % 2 == 0 { -12 } else { 12 } * x[16 + e] as i32)
            .sum();
        assert_eq!(block_total(&codes, 1, &x[16..]), want);
    }

    /// The fast-row bounds at their edges.
    #[test]
    fn fast_row_bounds() {
        let pow2 = |e: i32| 2f32.powi(e);
        let row = |words: &'static [u8], d: f32| {
            let r = NRow {
                codes: &[],
                scales: words,
                d,
            };
            fast(&r, words.len())
        };
        // Smallest scale 2⁻⁹ (word 0x01): 0.5·2⁻⁹/d ≥ 2⁻¹²⁶ ⇔ d ≤ 2¹¹⁶.
        assert!(row(&[0x01, 0x00], pow2(116)));
        assert!(!row(&[0x01, 0x00], pow2(117)));
        // Largest 448 (0x7E): 6·448/d ≤ 2¹²⁷ ⇔ d ≥ 2688·2⁻¹²⁷.
        assert!(row(&[0x7E], 2688.0 * pow2(-127)));
        assert!(!row(&[0x7E], 2687.0 * pow2(-127)));
        // All-zero scales: any valid divisor.
        assert!(row(&[0, 0], f32::MAX));
        // Invalid words or divisors.
        assert!(!row(&[0x7F], 1.0));
        assert!(!row(&[0x80], 1.0));
        assert!(!row(&[0x38], 0.0));
        assert!(!row(&[0x38], -1.0));
        assert!(!row(&[0x38], f32::NAN));
        assert!(!row(&[0x38], f32::INFINITY));
    }

    /// The shortcut of `fast_given_max` agrees with `fast` on every divisor class (both
    /// ends of its range and beyond) and word set, given the row's largest word.
    #[test]
    fn fast_given_max_agrees_with_fast() {
        let ds = [
            1.0,
            2f32.powi(116),
            2f32.powi(117),
            2688.0 * 2f32.powi(-127),
            2687.0 * 2f32.powi(-127),
            3e38,
            f32::from_bits(1),
            0.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
        ];
        let sets: [&[u8]; 6] = [
            &[0x01, 0x7E],
            &[0x00, 0x00],
            &[0x38, 0x00, 0x01],
            &[0x7F, 0x38],
            &[0x80, 0x38],
            &[0x50, 0x7E],
        ];
        for d in ds {
            for words in sets {
                let w = NRow {
                    codes: &[],
                    scales: words,
                    d,
                };
                let max = words.iter().copied().max().unwrap();
                assert_eq!(fast_given_max(&w, max, words.len()), fast(&w, words.len()));
            }
        }
    }

    /// Every tier equals the scalar reference word for word (a NaN compares equal to any
    /// NaN: its sign and payload are not specified, docs/linear.md): random codes, E4M3FN
    /// scale words drawn from NaN (0x7F, 0xFF), negative, subnormal, ±0, the largest and
    /// normal words, divisors from the fast range and beyond it (extreme, 0, negative, NaN,
    /// Inf), K with a tail past the last whole chunk of eight blocks, M = 1 (rows) and
    /// M > 1 (tiles), groups of 1..4 weight rows.
    #[test]
    fn every_tier_equals_scalar_word_for_word() {
        const SPECIAL: [u8; 10] = [0x7F, 0xFF, 0x80, 0x81, 0x01, 0x07, 0x00, 0x7E, 0xB8, 0x08];
        let divisors = [
            1.0,
            2688.0 / 3.5,
            2f32.powi(117),
            2687.0 * 2f32.powi(-127),
            0.0,
            -1.0,
            f32::NAN,
            f32::INFINITY,
        ];
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15);
        let n = 9;
        let mut cases = 0;
        // K = 16·nb: nb 16-value blocks, a tail of 2, 4 or 6 past the whole chunks.
        for nb in [8, 10, 12, 16, 22, 38] {
            let span = scales_span(nb);
            let codes: Vec<u8> = (0..n * 8 * nb).map(|_| next() as u8).collect();
            let mut scales: Vec<u8> = (0..n * span).map(|_| next() as u8).collect();
            for r in 0..n {
                for b in 0..nb {
                    let v = next();
                    // Rows 0 and 1 valid normal words only; the others one special in four.
                    scales[r * span + b / TILE_BLOCKS * TILE_BYTES + b % TILE_BLOCKS] =
                        if r >= 2 && v.is_multiple_of(4) {
                            SPECIAL[(v >> 8) as usize % SPECIAL.len()]
                        } else {
                            0x20 + (v >> 16) as u8 % 0x40
                        };
                }
            }
            let ws: Vec<NRow<'_>> = (0..n)
                .map(|r| NRow {
                    codes: &codes[r * 8 * nb..(r + 1) * 8 * nb],
                    scales: &scales[r * span..(r + 1) * span],
                    d: if r == 0 {
                        1.0
                    } else {
                        divisors[(next() >> 8) as usize % divisors.len()]
                    },
                })
                .collect();
            // The AVX-512 tier with and without its GFNI/VBMI unpacking.
            for gfni in [false, true] {
                cases += q8_1_tiers(
                    &mut next,
                    n,
                    8,
                    16 * nb,
                    &format!("nb{nb} gfni {gfni}"),
                    prepare,
                    |isa, r, xs, out| dot_row_group_in(isa, gfni, &ws[r], xs, out),
                );
            }
        }
        assert!(cases > 0);
    }

    /// As above with the scale words read in place from one swizzled plane, as a prepared
    /// weight reads them: four consecutive rows of a 32-row stripe lie 16 bytes apart (the
    /// AVX-512 tier then reads their words at once: rows 0..4), rows 30..34 cross a stripe
    /// (each row's words on its own), 34 rows, two tiles of blocks and a tail.
    #[test]
    fn every_tier_equals_scalar_on_a_swizzled_plane() {
        crate::linear::cpu::tests::note_gfni(true);
        use crate::layouts::block_scale::{offset, scales_len};
        let mut next = xorshift(0x2545_F491_4F6C_DD1D);
        let n = 34;
        let mut cases = 0;
        for nb in [8, 16, 22] {
            let codes: Vec<u8> = (0..n * 8 * nb).map(|_| next() as u8).collect();
            let mut plane = vec![0u8; scales_len(n, nb).unwrap()];
            for r in 0..n {
                for b in 0..nb {
                    let v = next();
                    // Valid normal words; row 2 one NaN word (a row that is not fast).
                    plane[offset(r, b, nb)] = if r == 2 && b == nb - 1 {
                        0x7F
                    } else {
                        0x20 + (v >> 16) as u8 % 0x40
                    };
                }
            }
            let ws: Vec<NRow<'_>> = (0..n)
                .map(|r| NRow {
                    codes: &codes[r * 8 * nb..(r + 1) * 8 * nb],
                    scales: &plane[offset(r, 0, nb)..],
                    d: [1.0, 0.75, 3.5][r % 3],
                })
                .collect();
            for gfni in [false, true] {
                cases += q8_1_tiers(
                    &mut next,
                    n,
                    8,
                    16 * nb,
                    &format!("swizzled nb{nb} gfni {gfni}"),
                    prepare,
                    |isa, r, xs, out| dot_row_group_in(isa, gfni, &ws[r], xs, out),
                );
            }
        }
        assert!(cases > 0);
    }
}
