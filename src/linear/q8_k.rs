//! q8_K: the activation blocks of the opt-in `q8_K` profile of the GGUF k-quants and
//! 256-value i-quants ([`crate::linear::Activation::Q8K`], docs/linear.md).
//!
//! One block holds 256 consecutive activation values of one row of x as a binary32 scale
//! `d`, 256 signed 8-bit codes and 16 sums of 16 codes (ggml's `block_q8_K`, 292 bytes:
//! `d@0` (f32), `qs[256]@4`, `bsums[16]@260` (i16)). The arithmetic is ggml's
//! `quantize_row_q8_K_ref`, all in binary32, per 256 values:
//!
//! - `max` = the first value of largest magnitude, `amax = |max|`;
//! - `amax = 0`: every code 0, `d = 0`;
//! - else `iscale = −127 / max`, `q_j = min(127, round_half_even(iscale · x_j))`,
//!   `d = 1 / iscale`; `bsums[i] = Σ_{j<16} q_{16i+j}`.
//!
//! The represented activation is `x̂_j = d · q_j` as a real number (exact in binary64, not
//! in binary32: d has 24 significant bits); that is the value the product multiplies and
//! the value its oracle uses.
//!
//! Where ggml's behaviour is undefined or accidental (documented in docs/linear.md): a
//! block with a non-finite value gets `d = NaN`, zero codes and sums, so every output it
//! touches is NaN; when `iscale` overflows (|max| < 127/f32::MAX) the codes are 0 and
//! `d = 1/iscale = ∓0`, so x̂ = 0; a zero block's `bsums` are written as 0 (ggml leaves
//! them unwritten).

use super::plane::Plane;
use crate::error::{Result, mul};
use crate::isa::Isa;

/// Values per q8_K block (ggml's `QK_K`).
pub const QK_K: usize = 256;
/// Bytes per ggml `block_q8_K`.
pub const BLOCK_Q8_K_BYTES: usize = 292;

/// One quantized block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Block {
    pub qs: [i8; QK_K],
    /// The scale d (binary32).
    pub d: f32,
    /// Σ q over each 16 codes (exact).
    pub bsums: [i16; 16],
}

/// Quantizes 256 values to one q8_K block (ggml's arithmetic, see the module docs).
pub(crate) fn quantize_block(x: &[f32]) -> Block {
    debug_assert_eq!(x.len(), QK_K);
    let mut b = Block {
        qs: [0; QK_K],
        d: 0.0,
        bsums: [0; 16],
    };
    if x.iter().any(|v| !v.is_finite()) {
        b.d = f32::NAN;
        return b;
    }
    let (mut max, mut amax) = (0f32, 0f32);
    for &v in x {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax == 0.0 {
        return b;
    }
    let iscale = -127.0 / max;
    b.d = 1.0 / iscale;
    if !iscale.is_finite() {
        return b;
    }
    for (q, &v) in b.qs.iter_mut().zip(x) {
        // |iscale·v| ≤ 127·(1 + 2⁻²³): the rounded value is in [−127, 128).
        *q = (iscale * v).round_ties_even().min(127.0) as i8;
    }
    for (s, c) in b.bsums.iter_mut().zip(b.qs.chunks_exact(16)) {
        *s = c.iter().map(|&q| q as i16).sum();
    }
    b
}

/// Quantizes one activation row to ggml `block_q8_K` bytes (292 per 256 values), exactly
/// as the q8_K products do internally (module docs).
///
/// Longer outputs are accepted (only the prefix is written).
///
/// Errors (nothing written): [`Error::BadShape`](crate::error::Error::BadShape) when
/// `x.len()` is not a positive multiple of 256,
/// [`Error::BufferTooSmall`](crate::error::Error::BufferTooSmall) when `out` is shorter
/// than `x.len() / 256 × 292` bytes.
pub fn quantize_row_q8_k(x: &[f32], out: &mut [u8]) -> Result<()> {
    let what = "q8_K blocks (bytes)";
    super::q8_1::check_row("q8_K", QK_K, BLOCK_Q8_K_BYTES, x.len(), out.len(), what)?;
    for (xb, ob) in x
        .chunks_exact(QK_K)
        .zip(out.chunks_exact_mut(BLOCK_Q8_K_BYTES))
    {
        let b = quantize_block(xb);
        ob[0..4].copy_from_slice(&b.d.to_le_bytes());
        for (o, q) in ob[4..260].iter_mut().zip(b.qs) {
            *o = q as u8;
        }
        for (o, s) in ob[260..].chunks_exact_mut(2).zip(b.bsums) {
            o.copy_from_slice(&s.to_le_bytes());
        }
    }
    Ok(())
}

/// The q8_K image of M activation rows, split in planes the kernels read directly.
#[derive(Default)]
pub(crate) struct Rows {
    /// Values per row (K, a multiple of 256).
    pub k: usize,
    /// M × K codes.
    pub qs: Plane<i8>,
    /// M × K/256 scales d.
    pub d: Plane<f32>,
    /// M × K/16 sums of 16 codes.
    pub bsums: Plane<i16>,
    /// M × K/32 sums of 32 codes (the IQ1 kernels' grid offset, IQ4_XS's code offset on
    /// the VNNI tiers).
    pub sum32: Plane<i32>,
    /// M × K/8 sums of 8 codes (IQ1_M's per-run deltas).
    pub sum8: Plane<i16>,
    /// Empty, or [`Rows::qs`] with each super-block's codes in the order of a kernel's
    /// weight vectors ([`Rows::arrange`]).
    pub arranged: Plane<i8>,
}

/// One row of [`Rows`].
#[derive(Clone, Copy)]
pub(crate) struct Row<'a> {
    pub qs: &'a [i8],
    pub d: &'a [f32],
    pub bsums: &'a [i16],
    /// Read by the x86 i-quant kernels only.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub sum32: &'a [i32],
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub sum8: &'a [i16],
    /// This row's part of [`Rows::arranged`] (empty when not arranged).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub arranged: &'a [i8],
}

impl Row<'_> {
    /// A row of no blocks.
    pub const EMPTY: Row<'static> = Row {
        qs: &[],
        d: &[],
        bsums: &[],
        sum32: &[],
        sum8: &[],
        arranged: &[],
    };
}

impl Rows {
    /// Quantizes `m` rows of `k` values (`x.len() == m·k`, k a multiple of 256).
    #[cfg(test)]
    pub fn quantize(x: &[f32], m: usize, k: usize) -> Rows {
        let mut rows = Rows::with_capacity(m, k, false).expect("q8_K rows");
        rows.quantize_into(x, m, Isa::Scalar);
        rows
    }

    /// Empty rows of `k` values with room for `m` rows (and with `arranged` for
    /// [`Rows::arrange`]), allocated fallibly (a product's activation tile, reused tile
    /// after tile). Errors: [`Error::OutOfMemory`](crate::error::Error::OutOfMemory),
    /// [`Error::Overflow`](crate::error::Error::Overflow).
    pub fn with_capacity(m: usize, k: usize, arranged: bool) -> Result<Rows> {
        let mk = mul(m, k, "q8_K codes")?;
        Ok(Rows {
            arranged: Plane::with_capacity(
                if arranged { mk } else { 0 },
                "q8_K arranged activation codes",
            )?,
            k,
            qs: Plane::with_capacity(mk, "q8_K activation codes")?,
            d: Plane::with_capacity(mk / QK_K, "q8_K activation scales")?,
            bsums: Plane::with_capacity(mk / 16, "q8_K 16-code sums")?,
            sum32: Plane::with_capacity(mk / 32, "q8_K 32-code sums")?,
            sum8: Plane::with_capacity(mk / 8, "q8_K 8-code sums")?,
        })
    }

    /// Quantizes `m` rows of K values (`x.len() == m·K`) into these planes, replacing what
    /// they held, on tier `isa` (one this machine has; every tier gives the same planes).
    /// Allocates only beyond the capacity the planes already have.
    pub fn quantize_into(&mut self, x: &[f32], m: usize, isa: Isa) {
        let k = self.k;
        debug_assert_eq!(x.len(), m * k);
        debug_assert_eq!(k % QK_K, 0);
        let nb = m * k / QK_K;
        self.arranged.clear();
        self.qs.clear();
        self.qs.resize(m * k, 0);
        self.d.clear();
        self.d.resize(nb, 0.0);
        self.bsums.clear();
        self.bsums.resize(16 * nb, 0);
        self.sum32.clear();
        self.sum32.resize(8 * nb, 0);
        self.sum8.clear();
        self.sum8.resize(32 * nb, 0);
        #[cfg(target_arch = "x86_64")]
        if isa.avx2() {
            debug_assert!(isa.available());
            // SAFETY: AVX2, FMA and F16C are there (every tier but the scalar one requires
            // them, and `isa` is one of this machine's tiers).
            unsafe { avx2::quantize_blocks(&x[..nb * QK_K], self) };
            return;
        }
        let _ = isa;
        for (i, xb) in x.chunks_exact(QK_K).enumerate() {
            self.put(i, &quantize_block(xb));
        }
    }

    /// Block `i` of the planes from its quantized block `b`.
    fn put(&mut self, i: usize, b: &Block) {
        self.qs[i * QK_K..(i + 1) * QK_K].copy_from_slice(&b.qs);
        self.d[i] = b.d;
        self.bsums[16 * i..16 * i + 16].copy_from_slice(&b.bsums);
        for (c, q) in b.qs.chunks_exact(32).enumerate() {
            self.sum32[8 * i + c] = q.iter().map(|&v| v as i32).sum();
        }
        for (r, q) in b.qs.chunks_exact(8).enumerate() {
            self.sum8[32 * i + r] = q.iter().map(|&v| v as i16).sum();
        }
    }

    /// Fills [`Rows::arranged`]: `arranged[256s + i] = qs[256s + order[i]]` for every
    /// super-block s. Computed once per forward for kernels that read a super-block's
    /// codes in the order of their weight vectors.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn arrange(&mut self, order: &[u8; QK_K]) {
        crate::linear::q8_1::permute_runs(&mut self.arranged, &self.qs, self.k, order);
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> Row<'_> {
        let nb = self.k / QK_K;
        Row {
            arranged: self
                .arranged
                .get(i * self.k..(i + 1) * self.k)
                .unwrap_or(&[]),
            qs: &self.qs[i * self.k..(i + 1) * self.k],
            d: &self.d[i * nb..(i + 1) * nb],
            bsums: &self.bsums[16 * i * nb..16 * (i + 1) * nb],
            sum32: &self.sum32[8 * i * nb..8 * (i + 1) * nb],
            sum8: &self.sum8[32 * i * nb..32 * (i + 1) * nb],
        }
    }
}

/// [`Rows::quantize_into`] with AVX2: [`quantize_block`]'s binary32 operations eight values
/// per instruction (`iscale·x`, rounding half to even, the minimum with 127), so the same
/// codes, scales and sums.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{QK_K, Rows, quantize_block};
    use crate::linear::q8_1::avx2::codes_and_sums;
    use std::arch::x86_64::*;

    /// Quantizes the whole blocks of `x` into the planes of `rows` (block i: codes
    /// `qs[256i..]`, `d[i]`, `bsums[16i..]`, `sum32[8i..]`, `sum8[32i..]`), sized for them by the caller. A block with a
    /// non-finite value, all zeros, or an overflowing `iscale` takes [`quantize_block`]
    /// itself.
    ///
    /// # Safety
    /// AVX2, FMA and F16C available.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn quantize_blocks(x: &[f32], rows: &mut Rows) {
        let nb = x.len() / QK_K;
        // One up-front check: the pointer accesses below stay in these bounds.
        assert!(rows.qs.len() >= QK_K * nb && rows.d.len() >= nb && rows.bsums.len() >= 16 * nb);
        assert!(rows.sum32.len() >= 8 * nb && rows.sum8.len() >= 32 * nb);
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFF_FFFF));
        let finite_max = _mm256_set1_epi32(0x7F7F_FFFF);
        for (i, xb) in x.chunks_exact(QK_K).enumerate() {
            let p = xb.as_ptr();
            // SAFETY (loads): 256 values at p.
            let load = |r: usize| unsafe { _mm256_loadu_ps(p.add(8 * r)) };
            let (mut m, mut big) = (_mm256_setzero_ps(), _mm256_setzero_si256());
            for r in 0..QK_K / 8 {
                let a = _mm256_and_ps(load(r), abs);
                m = _mm256_max_ps(m, a);
                // |bits| above the largest finite magnitude: inf or NaN.
                big = _mm256_or_si256(big, _mm256_cmpgt_epi32(_mm256_castps_si256(a), finite_max));
            }
            let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m));
            let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
            let amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
            if _mm256_testz_si256(big, big) == 0 || amax == 0.0 {
                rows.put(i, &quantize_block(xb));
                continue;
            }
            // The first value of that magnitude.
            let av = _mm256_set1_ps(amax);
            let mut first = 0;
            for r in 0..QK_K / 8 {
                let hit = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_EQ_OQ>(
                    _mm256_and_ps(load(r), abs),
                    av,
                ));
                if hit != 0 {
                    first = 8 * r + hit.trailing_zeros() as usize;
                    break;
                }
            }
            let iscale = -127.0 / xb[first];
            if !iscale.is_finite() {
                rows.put(i, &quantize_block(xb));
                continue;
            }
            let (isv, top) = (_mm256_set1_ps(iscale), _mm256_set1_ps(127.0));
            for c in 0..QK_K / 32 {
                let mut q = [_mm256_setzero_si256(); 4];
                for (j, q) in q.iter_mut().enumerate() {
                    let s = _mm256_mul_ps(isv, load(4 * c + j));
                    let s = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(s);
                    // An integer in [−127, 127]: the conversion is exact.
                    *q = _mm256_cvtps_epi32(_mm256_min_ps(s, top));
                }
                let (codes, s) = codes_and_sums(&q);
                // SAFETY: codes 32c .. 32c + 32 of block i lie in the plane (checked above).
                unsafe {
                    _mm256_storeu_si256(rows.qs.as_mut_ptr().add(QK_K * i + 32 * c).cast(), codes)
                };
                rows.bsums[16 * i + 2 * c] = (s[0] + s[1]) as i16;
                rows.bsums[16 * i + 2 * c + 1] = (s[2] + s[3]) as i16;
                rows.sum32[8 * i + c] = s.iter().sum();
                for (o, &v) in rows.sum8[32 * i + 4 * c..32 * i + 4 * c + 4]
                    .iter_mut()
                    .zip(&s)
                {
                    *o = v as i16;
                }
            }
            rows.d[i] = 1.0 / iscale;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    /// The plain equations of the module docs, written independently: the first value of
    /// largest magnitude, iscale = −127/max, round half to even, min 127, d = 1/iscale.
    fn plain(x: &[f32]) -> (f32, Vec<i8>) {
        let mut best = 0usize;
        for j in 0..x.len() {
            if x[j].abs() > x[best].abs() {
                best = j;
            }
        }
        let max = x[best];
        if max == 0.0 {
            return (0.0, vec![0; x.len()]);
        }
        let iscale = -127.0f32 / max;
        let codes = x
            .iter()
            .map(|&v| {
                let p = iscale * v;
                let f = p.floor();
                let r = if p - f > 0.5 || (p - f == 0.5 && f % 2.0 != 0.0) {
                    f + 1.0
                } else {
                    f
                };
                r.min(127.0) as i8
            })
            .collect();
        (1.0 / iscale, codes)
    }

    /// Every tier's planes equal the scalar reference's, word for word: random values of
    /// every magnitude, exact ties at ±½ (max −127, so iscale = 1), equal magnitudes of
    /// both signs, zero, subnormal and non-finite values, blocks whose iscale overflows.
    #[test]
    fn every_tier_quantizes_as_the_scalar_reference() {
        let mut next = crate::linear::cpu::tests::xorshift(0x2545_F491_4F6C_DD1Du64);
        let blocks = 96;
        let mut x = Vec::with_capacity(QK_K * blocks);
        for b in 0..blocks {
            let scale = f32::from_bits(((next() % 90) as u32 + 90) << 23); // 2^-37 .. 2^52
            let tie_max = 37 + (next() % 200) as usize;
            for j in 0..QK_K {
                let r = next();
                let v = match b % 8 {
                    0 if j == tie_max => -127.0,
                    0 => (r % 254) as f32 - 127.0 + if r & 1 == 0 { 0.5 } else { -0.5 },
                    1 => 0.0,
                    2 => {
                        f32::from_bits((r % 0x0080_0000) as u32)
                            * if r & 1 == 0 { 1.0 } else { -1.0 }
                    }
                    3 if j == 200 => [f32::INFINITY, f32::NEG_INFINITY, f32::NAN][(r % 3) as usize],
                    4 if j % 61 == 3 => {
                        if r & 1 == 0 {
                            3.0
                        } else {
                            -3.0
                        }
                    }
                    4 => ((r % 5) as f32 - 2.0) * 0.75,
                    _ => ((r >> 11) as f32 / (1u64 << 53) as f32 - 0.5) * scale,
                };
                x.push(v);
            }
        }
        let (m, k) = (3, QK_K * blocks / 3);
        let want = Rows::quantize(&x, m, k);
        let sums = |n: usize| -> Vec<i32> {
            want.qs
                .chunks_exact(n)
                .map(|c| c.iter().map(|&v| v as i32).sum())
                .collect()
        };
        assert_eq!(want.sum32[..], sums(32)[..]);
        let sum8: Vec<i32> = want.sum8.iter().map(|&v| v as i32).collect();
        assert_eq!(sum8, sums(8));
        for isa in Isa::tested() {
            let mut got = Rows::with_capacity(m, k, false).unwrap();
            got.quantize_into(&x, m, isa);
            let name = isa.name();
            assert_eq!(got.qs[..], want.qs[..], "{name}: codes");
            let bits = |d: &[f32]| d.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.d), bits(&want.d), "{name}: scales");
            assert_eq!(got.bsums[..], want.bsums[..], "{name}: sums");
            assert_eq!(got.sum32[..], want.sum32[..], "{name}: 32-code sums");
            assert_eq!(got.sum8[..], want.sum8[..], "{name}: 8-code sums");
        }
    }

    #[test]
    fn hand_worked_block_with_ties_and_a_negative_max() {
        // max = −127 (first of largest magnitude: the later +127 is a tie and loses):
        // iscale = −127/−127 = 1, d = 1; codes are x rounded half to even.
        let mut x = [0f32; 256];
        x[0] = 2.5; // → 2 (even)
        x[1] = -3.5; // → −4 (even)
        x[2] = -127.0; // the max → −127
        x[3] = 127.0; // → 127
        x[4] = 0.5; // → 0
        x[5] = 1.5; // → 2
        x[17] = -0.49; // → 0
        x[18] = 7.0;
        let b = quantize_block(&x);
        assert_eq!(b.d, 1.0);
        assert_eq!(&b.qs[..6], &[2, -4, -127, 127, 0, 2]);
        assert_eq!((b.qs[17], b.qs[18]), (0, 7));
        assert_eq!(b.bsums[0], 0);
        assert_eq!(b.bsums[1], 7);
        // A positive max: iscale = −127/254 = −0.5, d = −2; x = 3 → −1.5 → −2; 5 → −2.5
        // → −2; 254 → −127; −254 (a tie with the max, later) → 127.
        let mut x = [0f32; 256];
        x[0] = 3.0;
        x[1] = 5.0;
        x[2] = 254.0;
        x[3] = -254.0;
        let b = quantize_block(&x);
        assert_eq!(b.d, -2.0);
        assert_eq!(&b.qs[..4], &[-2, -2, -127, 127]);
        assert_eq!(b.bsums[0], -4);
        // A negative max of 1: iscale = 127, d = 1/127; the opposite value gives +127.
        let mut x = [0f32; 256];
        x[0] = -1.0;
        x[1] = 1.0;
        x[2] = 0.5; // 63.5 → 64 (even)
        let b = quantize_block(&x);
        assert_eq!(b.d, 1.0 / 127.0);
        assert_eq!(&b.qs[..3], &[-127, 127, 64]);
    }

    #[test]
    fn zero_tiny_and_non_finite_blocks() {
        let b = quantize_block(&[0.0; 256]);
        assert_eq!((b.d.to_bits(), b.qs, b.bsums), (0, [0; 256], [0; 16]));
        let b = quantize_block(&[-0.0; 256]);
        assert_eq!((b.d.to_bits(), b.qs), (0, [0; 256]));
        let mut x = [1.0f32; 256];
        x[200] = f32::NAN;
        let b = quantize_block(&x);
        assert!(b.d.is_nan());
        assert_eq!((b.qs, b.bsums), ([0; 256], [0; 16]));
        x[200] = f32::NEG_INFINITY;
        assert!(quantize_block(&x).d.is_nan());
        // iscale overflows: codes 0, d = 1/(−Inf) = −0.
        let b = quantize_block(&[1e-39; 256]);
        assert_eq!((b.d.to_bits(), b.qs), ((-0.0f32).to_bits(), [0; 256]));
    }

    #[test]
    fn random_blocks_match_the_plain_equations() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32
        };
        for case in 0..200 {
            let scale = [1.0f32, 1e-30, 3e30, 0.01][case % 4];
            let x: Vec<f32> = (0..256)
                .map(|_| {
                    let v = (next() as f32 / u32::MAX as f32 - 0.5) * scale;
                    // Exact halves now and then: small integers over a max of 127.
                    if case % 3 == 0 {
                        (v * 254.0 / scale).round() / 2.0
                    } else {
                        v
                    }
                })
                .collect();
            let b = quantize_block(&x);
            let (d, codes) = plain(&x);
            assert_eq!(b.d.to_bits(), d.to_bits(), "case {case}");
            assert_eq!(&b.qs[..], &codes[..], "case {case}");
            for (i, s) in b.bsums.iter().enumerate() {
                let want: i32 = codes[16 * i..16 * i + 16].iter().map(|&q| q as i32).sum();
                assert_eq!(*s as i32, want);
            }
        }
    }

    #[test]
    fn bytes_and_bad_lengths() {
        let mut x = vec![0f32; 512];
        x[0] = -127.0;
        x[300] = 1.0;
        let mut out = vec![0xAAu8; 2 * BLOCK_Q8_K_BYTES];
        quantize_row_q8_k(&x, &mut out).unwrap();
        assert_eq!(&out[0..4], &1f32.to_le_bytes());
        assert_eq!(out[4], (-127i8) as u8);
        assert_eq!(&out[260..262], &(-127i16).to_le_bytes());
        let o = BLOCK_Q8_K_BYTES;
        assert_eq!(&out[o..o + 4], &(-1.0f32 / 127.0).to_le_bytes());
        assert_eq!(out[o + 4 + 44], (-127i8) as u8);
        assert_eq!(&out[o + 260 + 4..o + 262 + 4], &(-127i16).to_le_bytes());
        assert!(matches!(
            quantize_row_q8_k(&[0.0; 255], &mut out),
            Err(Error::BadShape(_))
        ));
        assert!(matches!(
            quantize_row_q8_k(&[0.0; 768], &mut out),
            Err(Error::BufferTooSmall { .. })
        ));
    }
}
