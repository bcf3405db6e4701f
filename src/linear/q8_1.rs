//! q8_1: the activation blocks of GGUF products (spec, paragraph after §3.4).
//!
//! One block holds 32 consecutive activation values of one row of x as a binary16 scale `d`,
//! a binary16 sum `s` and 32 signed 8-bit codes (ggml's `block_q8_1`, 36 bytes:
//! `d@0, s@2, qs[32]@4`). The arithmetic is ggml's `quantize_row_q8_1_ref`, all in binary32:
//!
//! - `amax = max |x_j|`, `d = amax / 127`, `id = 1 / d` (0 when `d = 0`);
//! - `q_j = roundf(x_j · id)` (round half away from zero);
//! - stored `d` = binary16(d) rounded to nearest even (the reciprocal uses the unrounded d);
//! - stored `s` = binary16(binary32(Σq) · d).
//!
//! The represented activation is `x̂_j = f32(stored d) · q_j`, exact in binary32. That is
//! the value a GGUF product multiplies, and the value its oracle uses.
//!
//! Two choices where ggml's behaviour is undefined or accidental (documented in
//! docs/linear.md): a block with a non-finite value gets `d = s = NaN` and zero codes, so
//! every output it touches is NaN; when `1/d` overflows (amax < 127·2⁻¹²⁸) the codes are 0
//! (the stored `d` is then 0 anyway, so `x̂` is unchanged).
//!
//! The kernels keep, next to the codes, the exact integer sum Σq of each block instead of
//! reading `s`: `s` is a rounded copy of `d·Σq`, and the exact
//! sums keep the product within the named criterion without the 2⁻¹¹ error of `s`.

use super::plane::Plane;
use crate::error::{Error, Result, mul};
use crate::isa::Isa;

/// Values per q8_1 block.
pub const QK8_1: usize = 32;
/// Bytes per ggml `block_q8_1`.
pub const BLOCK_Q8_1_BYTES: usize = 36;

/// One quantized block: codes, the binary16 scale and sum words, and the integer sums.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Block {
    pub qs: [i8; QK8_1],
    /// binary16 bits of the stored scale.
    pub d_bits: u16,
    /// binary16 bits of the stored sum.
    pub s_bits: u16,
    /// Σ q over the 32 codes (exact).
    pub sum: i32,
}

/// Quantizes 32 values to one q8_1 block (ggml's arithmetic, see the module docs).
pub(crate) fn quantize_block(x: &[f32]) -> Block {
    debug_assert_eq!(x.len(), QK8_1);
    let mut qs = [0i8; QK8_1];
    if x.iter().any(|v| !v.is_finite()) {
        let nan = half::f16::NAN.to_bits();
        return Block {
            qs,
            d_bits: nan,
            s_bits: nan,
            sum: 0,
        };
    }
    // Values are finite here: a plain comparison (no fmaxf call) gives the same maximum.
    let amax = x
        .iter()
        .fold(0f32, |a, v| if v.abs() > a { v.abs() } else { a });
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    let mut sum = 0i32;
    if id.is_finite() {
        for (q, &v) in qs.iter_mut().zip(x) {
            // roundf (half away from zero) without a libm call: truncate, then step away
            // from zero when the dropped fraction is ≥ 1/2. |v·id| ≤ 127 + a few ulps, so
            // the cast is exact and `s − t` is exact (Sterbenz).
            let s = v * id;
            let t = s as i32;
            let f = s - t as f32;
            *q = (t + (f >= 0.5) as i32 - (f <= -0.5) as i32) as i8;
            sum += *q as i32;
        }
    }
    Block {
        qs,
        d_bits: half::f16::from_f32(d).to_bits(),
        s_bits: half::f16::from_f32(sum as f32 * d).to_bits(),
        sum,
    }
}

/// The argument checks of a row quantizer (`name`: the block type in messages) to blocks of
/// `block` values and `block_bytes` bytes: [`Error::BadShape`] unless `x_len` is a positive
/// multiple of `block`, [`Error::BufferTooSmall`] (`what`: the output) unless `out_len`
/// holds the row's blocks.
pub(crate) fn check_row(
    name: &str,
    block: usize,
    block_bytes: usize,
    x_len: usize,
    out_len: usize,
    what: &'static str,
) -> Result<()> {
    if x_len == 0 || !x_len.is_multiple_of(block) {
        return Err(Error::BadShape(format!(
            "{name}: {x_len} values is not a positive multiple of {block}"
        )));
    }
    let needed = x_len / block * block_bytes;
    if out_len < needed {
        return Err(Error::BufferTooSmall {
            what,
            needed,
            actual: out_len,
        });
    }
    Ok(())
}

/// Quantizes one activation row to ggml `block_q8_1` bytes (36 per 32 values), exactly as
/// the GGUF products do internally (module docs).
///
/// Errors: [`Error::BadShape`] when `x.len()` is not a positive multiple of 32,
/// [`Error::BufferTooSmall`] when `out` is shorter than `x.len() / 32 × 36` bytes.
pub fn quantize_row_q8_1(x: &[f32], out: &mut [u8]) -> Result<()> {
    check_row(
        "q8_1",
        QK8_1,
        BLOCK_Q8_1_BYTES,
        x.len(),
        out.len(),
        "q8_1 blocks",
    )?;
    for (xb, ob) in x
        .chunks_exact(QK8_1)
        .zip(out.chunks_exact_mut(BLOCK_Q8_1_BYTES))
    {
        let b = quantize_block(xb);
        ob[0..2].copy_from_slice(&b.d_bits.to_le_bytes());
        ob[2..4].copy_from_slice(&b.s_bits.to_le_bytes());
        for (o, q) in ob[4..].iter_mut().zip(b.qs) {
            *o = q as u8;
        }
    }
    Ok(())
}

/// The q8_1 image of M activation rows, split in planes the kernels read directly.
#[derive(Default)]
pub(crate) struct Rows {
    /// Values per row (K, a multiple of 32).
    pub k: usize,
    /// M × K codes.
    pub qs: Plane<i8>,
    /// M × K/32 stored scales as f32 (exact).
    pub d: Plane<f32>,
    /// M × K/32 exact block sums Σq.
    pub sum: Plane<i32>,
    /// M × K/16 exact half-block sums Σq over 16 codes (|Σ| ≤ 16·127, so i16): the
    /// k-quant kernels' min and offset terms per 16-value sub-block.
    pub sum16: Plane<i16>,
    /// M × K/8 exact sums Σq over 8 codes (|Σ| ≤ 8·127, so i16): the IQ1_M kernel's
    /// per-run delta terms.
    pub sum8: Plane<i16>,
    /// Empty, or the codes with every whole run of a row (a block pair or four blocks) rearranged for a kernel
    /// ([`Rows::arrange_pairs`]).
    pub pairs: Plane<i8>,
    /// Empty, or |`pairs`|.
    pub pairs_abs: Plane<i8>,
    /// Empty, or per 256 values the 16 half-block sums [`Rows::sum16`] times a type's code
    /// offset, as i32 in the lane order of a kernel's per-16 sums
    /// ([`Rows::arrange_offsets`]).
    pub offsets: Plane<i32>,
    /// Rows per interleaved group ([`Rows::arrange_groups`]: 4, or 16 for the AMX tiles);
    /// 0 while the planes below are empty.
    pub width: usize,
    /// Empty, or the codes of each group of W = [`Rows::width`] rows (Wg .. Wg + W; a last
    /// partial group padded with zero rows) interleaved 4 bytes at a time: for group g and
    /// 4-value chunk c, the 4·W bytes at `(W·K + 64)·g + 4W·c` are chunk c of rows Wg,
    /// Wg + 1, .., Wg + W − 1 ([`Rows::arrange_groups`]; each group is followed by 64 bytes
    /// of padding, [`QuadStrides`]).
    pub quads: Plane<i8>,
    /// Empty, or [`Rows::d`] interleaved the same way: group g, block b at
    /// `(W·K/32 + 16)·g + W·b`.
    pub quad_d: Plane<f32>,
    /// Empty, or [`Rows::sum`] interleaved as [`Rows::quad_d`].
    pub quad_sum: Plane<i32>,
    /// Empty, or [`Rows::sum16`] (as i32) interleaved the same way: group g, 16-value half
    /// h at `(2W·K/32 + 16)·g + W·h`.
    pub quad_sum16: Plane<i32>,
}

/// The distance, in elements, from one group's part of each interleaved plane
/// ([`Rows::arrange_groups`]) to the next: the group's data (W·K codes; W values per block;
/// 2W half sums per block) and one cache line more, so that the groups of a tile, which a
/// kernel reads side by side, do not start at the same offset modulo 4 KiB (with K a
/// multiple of 1024 they would all fall into the same L1 sets).
#[derive(Clone, Copy)]
struct QuadStrides {
    codes: usize,
    blocks: usize,
    halves: usize,
}

impl QuadStrides {
    fn new(k: usize, width: usize) -> QuadStrides {
        let nb = k / QK8_1;
        QuadStrides {
            codes: width * k + 64,
            blocks: width * nb + 16,
            halves: 2 * width * nb + 16,
        }
    }
}

/// One row of [`Rows`].
#[derive(Clone, Copy)]
// The sums and rearranged codes serve the AVX2 kernels; the scalar ones recompute.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Row<'a> {
    pub qs: &'a [i8],
    pub d: &'a [f32],
    pub sum: &'a [i32],
    pub sum16: &'a [i16],
    pub sum8: &'a [i16],
    /// This row's part of [`Rows::pairs`] (empty when not arranged).
    pub pairs: &'a [i8],
    /// This row's part of [`Rows::pairs_abs`] (empty when not arranged).
    pub pairs_abs: &'a [i8],
    /// This row's part of [`Rows::offsets`] (empty when not arranged).
    pub offsets: &'a [i32],
    /// The group of this row in [`Rows::quads`], [`Rows::quad_d`], [`Rows::quad_sum`] and
    /// [`Rows::quad_sum16`] (empty when not arranged), and the row's place in it.
    pub quad: Quad<'a>,
}

/// `dst` = `src` (rows of `k` codes) with `dst[Np + j] = src[Np + perm[j]]` for every
/// whole run p of N codes of each row (a last partial run copied as is), reusing `dst`'s
/// capacity: the arranged planes of [`Rows::arrange_pairs`] and q8_K's `Rows::arrange`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn permute_runs<const N: usize>(
    dst: &mut Plane<i8>,
    src: &[i8],
    k: usize,
    perm: &[u8; N],
) {
    dst.clear();
    dst.extend_from_slice(src);
    for row in dst.chunks_exact_mut(k) {
        for run in row.chunks_exact_mut(N) {
            let src: [i8; N] = run.try_into().expect("N codes");
            for (o, &j) in run.iter_mut().zip(perm) {
                *o = src[j as usize];
            }
        }
    }
}

/// One group of rows of [`Rows`], interleaved ([`Rows::arrange_groups`]).
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) struct Quad<'a> {
    pub codes: &'a [i8],
    pub d: &'a [f32],
    pub sum: &'a [i32],
    pub sum16: &'a [i32],
    /// The row's place in its group.
    pub lane: usize,
    /// Rows per group (0: none).
    pub width: usize,
}

/// Whether `xs` is whole groups of `width` rows of [`Rows::arrange_groups`] in place: every
/// row of the same length, in its group's lane, beside the rest of its group (a tile kernel
/// then reads each group's interleaved planes through its first row).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn groups_ready(xs: &[Row<'_>], width: usize) -> bool {
    let Some(first) = xs.first() else {
        return false;
    };
    let (nb, w) = (first.d.len(), width);
    xs.iter().enumerate().all(|(i, x)| {
        let (q, g) = (&x.quad, &xs[i / w * w].quad);
        x.d.len() == nb
            && q.width == w
            && q.lane == i % w
            && q.codes.len() == 32 * w * nb
            && q.d.len() == w * nb
            && q.sum.len() == w * nb
            && q.sum16.len() == 2 * w * nb
            && std::ptr::eq(q.codes, g.codes)
            && std::ptr::eq(q.d, g.d)
            && std::ptr::eq(q.sum, g.sum)
            && std::ptr::eq(q.sum16, g.sum16)
    })
}

impl Quad<'_> {
    /// No group.
    pub const EMPTY: Quad<'static> = Quad {
        codes: &[],
        d: &[],
        sum: &[],
        sum16: &[],
        lane: 0,
        width: 0,
    };
}

impl Row<'_> {
    /// A row of no blocks.
    pub const EMPTY: Row<'static> = Row {
        qs: &[],
        d: &[],
        sum: &[],
        sum16: &[],
        sum8: &[],
        pairs: &[],
        pairs_abs: &[],
        offsets: &[],
        quad: Quad::EMPTY,
    };
}

impl Rows {
    /// Quantizes `m` rows of `k` values (`x.len() == m·k`, k a multiple of 32).
    #[cfg(test)]
    pub fn quantize(x: &[f32], m: usize, k: usize) -> Rows {
        let mut rows = Rows::with_capacity(m, k, false, 0).expect("q8_1 rows");
        rows.quantize_into(x, m, Isa::Scalar);
        rows
    }

    /// Empty rows of `k` values with room for `m` rows (with `arranged`, their
    /// [`Rows::arrange_pairs`] planes; with `width` > 0, their [`Rows::arrange_groups`]
    /// planes in groups of that many rows), allocated fallibly: the temporaries of a
    /// product's activation tile, reused tile after tile without allocating again.
    ///
    /// Errors: [`Error::OutOfMemory`], [`Error::Overflow`].
    pub fn with_capacity(m: usize, k: usize, arranged: bool, width: usize) -> Result<Rows> {
        let mk = mul(m, k, "q8_1 codes")?;
        let nb = mk / QK8_1;
        let planes = if arranged { mk } else { 0 };
        // The interleaved planes: whole groups of `width` rows, the last one padded.
        let (quad_codes, quad_blocks, quad_halves) = if width > 0 {
            let (groups, s) = (m.div_ceil(width), QuadStrides::new(k, width));
            (
                mul(groups, s.codes, "q8_1 interleaved codes")?,
                mul(groups, s.blocks, "q8_1 interleaved scales")?,
                mul(groups, s.halves, "q8_1 interleaved half sums")?,
            )
        } else {
            (0, 0, 0)
        };
        Ok(Rows {
            k,
            width: 0,
            qs: Plane::with_capacity(mk, "q8_1 activation codes")?,
            d: Plane::with_capacity(nb, "q8_1 activation scales")?,
            sum: Plane::with_capacity(nb, "q8_1 block sums")?,
            sum16: Plane::with_capacity(
                mul(2, nb, "q8_1 half-block sums")?,
                "q8_1 half-block sums",
            )?,
            sum8: Plane::with_capacity(mul(4, nb, "q8_1 8-value sums")?, "q8_1 8-value sums")?,
            pairs: Plane::with_capacity(planes, "q8_1 rearranged codes")?,
            pairs_abs: Plane::with_capacity(planes, "q8_1 rearranged |codes|")?,
            offsets: Plane::with_capacity(
                if arranged {
                    mul(2, nb, "q8_1 offsets")?
                } else {
                    0
                },
                "q8_1 arranged offsets",
            )?,
            quads: Plane::with_capacity(quad_codes, "q8_1 interleaved codes")?,
            quad_d: Plane::with_capacity(quad_blocks, "q8_1 interleaved scales")?,
            quad_sum: Plane::with_capacity(quad_blocks, "q8_1 interleaved sums")?,
            quad_sum16: Plane::with_capacity(quad_halves, "q8_1 interleaved half sums")?,
        })
    }

    /// Quantizes `m` rows of K values (`x.len() == m·K`) into these planes, replacing what
    /// they held (and clearing the arranged planes), on tier `isa` (one this machine has;
    /// every tier gives the same planes). Allocates only beyond the capacity the planes
    /// already have.
    pub fn quantize_into(&mut self, x: &[f32], m: usize, isa: Isa) {
        let k = self.k;
        debug_assert_eq!(x.len(), m * k);
        debug_assert_eq!(k % QK8_1, 0);
        let nb = m * k / QK8_1;
        self.qs.clear();
        self.qs.resize(m * k, 0);
        self.d.clear();
        self.d.resize(nb, 0.0);
        self.sum.clear();
        self.sum.resize(nb, 0);
        self.sum16.clear();
        self.sum16.resize(2 * nb, 0);
        self.sum8.clear();
        self.sum8.resize(4 * nb, 0);
        self.pairs.clear();
        self.pairs_abs.clear();
        self.offsets.clear();
        self.width = 0;
        self.quads.clear();
        self.quad_d.clear();
        self.quad_sum.clear();
        self.quad_sum16.clear();
        #[cfg(target_arch = "x86_64")]
        if isa.avx2() {
            debug_assert!(isa.available());
            // SAFETY: AVX2, FMA and F16C are there (every tier but the scalar one requires
            // them, and `isa` is one of this machine's tiers).
            unsafe { avx2::quantize_blocks(&x[..nb * QK8_1], self) };
            return;
        }
        let _ = isa;
        for (i, xb) in x.chunks_exact(QK8_1).enumerate() {
            self.put(i, &quantize_block(xb));
        }
    }

    /// Block `i` of the planes from its quantized block `b`.
    fn put(&mut self, i: usize, b: &Block) {
        self.qs[i * QK8_1..(i + 1) * QK8_1].copy_from_slice(&b.qs);
        self.d[i] = half::f16::from_bits(b.d_bits).to_f32();
        self.sum[i] = b.sum;
        for (h, c) in b.qs.chunks_exact(16).enumerate() {
            self.sum16[2 * i + h] = c.iter().map(|&q| q as i16).sum();
        }
        for (r, c) in b.qs.chunks_exact(8).enumerate() {
            self.sum8[4 * i + r] = c.iter().map(|&q| q as i16).sum();
        }
    }

    /// The number of rows M.
    pub fn rows(&self) -> usize {
        self.qs.len().checked_div(self.k).unwrap_or(0)
    }

    /// Row `i`.
    pub fn row(&self, i: usize) -> Row<'_> {
        let nb = self.k / QK8_1;
        Row {
            qs: &self.qs[i * self.k..(i + 1) * self.k],
            d: &self.d[i * nb..(i + 1) * nb],
            sum: &self.sum[i * nb..(i + 1) * nb],
            sum16: &self.sum16[2 * i * nb..2 * (i + 1) * nb],
            sum8: &self.sum8[4 * i * nb..4 * (i + 1) * nb],
            pairs: self.pairs.get(i * self.k..(i + 1) * self.k).unwrap_or(&[]),
            pairs_abs: self
                .pairs_abs
                .get(i * self.k..(i + 1) * self.k)
                .unwrap_or(&[]),
            offsets: self
                .offsets
                .get(i * self.k / 16..(i + 1) * self.k / 16)
                .unwrap_or(&[]),
            quad: self.quad(i),
        }
    }

    /// Row `i`'s group of [`Rows::arrange_groups`] (empty when not arranged).
    fn quad(&self, i: usize) -> Quad<'_> {
        let w = self.width;
        if w == 0 {
            return Quad::EMPTY;
        }
        let (k, nb, g, s) = (self.k, self.k / QK8_1, i / w, QuadStrides::new(self.k, w));
        match (
            self.quads.get(s.codes * g..s.codes * g + w * k),
            self.quad_d.get(s.blocks * g..s.blocks * g + w * nb),
            self.quad_sum.get(s.blocks * g..s.blocks * g + w * nb),
            self.quad_sum16.get(s.halves * g..s.halves * g + 2 * w * nb),
        ) {
            (Some(codes), Some(d), Some(sum), Some(sum16)) => Quad {
                codes,
                d,
                sum,
                sum16,
                lane: i % w,
                width: w,
            },
            _ => Quad::EMPTY,
        }
    }

    /// Fills [`Rows::pairs`] with `pairs[Np + j] = qs[Np + perm[j]]` for every whole run p
    /// of N codes of each row (N = 64: a pair of 32-value blocks; 128: four blocks; a last
    /// partial run is copied as is), and with `abs` also [`Rows::pairs_abs`] = |pairs|.
    /// Computed once per forward for kernels that read a run's codes in the order of their
    /// weight bytes.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn arrange_pairs<const N: usize>(&mut self, perm: &[u8; N], abs: bool) {
        permute_runs(&mut self.pairs, &self.qs, self.k, perm);
        if abs {
            // Codes are in [−127, 127]: |q| fits i8.
            self.pairs_abs.clear();
            self.pairs_abs.resize(self.pairs.len(), 0);
            for (a, q) in self.pairs_abs.iter_mut().zip(self.pairs.iter()) {
                *a = q.abs();
            }
        }
    }

    /// Fills [`Rows::offsets`]: for each whole run of 256 values of a row, lane L of its 16
    /// i32 = `offset` · Σx16 of its half-block `order[L]` (exact: |Σx16| ≤ 16·127 and
    /// `offset` ≤ 32). Computed once per forward for a kernel that subtracts a type's code
    /// offset from its per-16 integer sums, lane by lane, before the scales.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn arrange_offsets(&mut self, order: &[u8; 16], offset: i32) {
        self.offsets.clear();
        self.offsets.resize(self.sum16.len() / 16 * 16, 0);
        for (o, run) in self
            .offsets
            .chunks_exact_mut(16)
            .zip(self.sum16.chunks_exact(16))
        {
            for (o, &h) in o.iter_mut().zip(order) {
                *o = offset * run[h as usize] as i32;
            }
        }
    }

    /// [`Rows::arrange_groups`] in groups of four rows: the AVX tile kernels' layout.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn arrange_quads(&mut self, arranged: bool) {
        self.arrange_groups(4, arranged);
    }

    /// Fills [`Rows::quads`], [`Rows::quad_d`], [`Rows::quad_sum`] and [`Rows::quad_sum16`]:
    /// the rows in groups of `width`, interleaved 4 codes (one block scale, one block sum,
    /// one half-block sum) at a time, a last partial group padded with zero rows (codes,
    /// scales and sums 0). Computed once per forward for the kernels whose vectors hold one
    /// lane per (weight row, activation row) pair (4 rows per group) or that read the codes
    /// as AMX tiles (16). With `arranged` the codes come from [`Rows::pairs`] (the order of
    /// a kernel's weight bytes, [`Rows::arrange_pairs`] already run), else from
    /// [`Rows::qs`].
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pub fn arrange_groups(&mut self, width: usize, arranged: bool) {
        let (k, nb, w) = (self.k, self.k / QK8_1, width);
        let m = self.rows();
        let (groups, s) = (m.div_ceil(w), QuadStrides::new(k, w));
        self.width = w;
        self.quads.clear();
        self.quads.resize(s.codes * groups, 0);
        self.quad_d.clear();
        self.quad_d.resize(s.blocks * groups, 0.0);
        self.quad_sum.clear();
        self.quad_sum.resize(s.blocks * groups, 0);
        self.quad_sum16.clear();
        self.quad_sum16.resize(s.halves * groups, 0);
        for i in 0..m {
            let (g, j) = (i / w, i % w);
            let src = if arranged { &self.pairs } else { &self.qs };
            let row = &src[i * k..(i + 1) * k];
            let codes = &mut self.quads[s.codes * g..s.codes * g + w * k];
            for (c, chunk) in row.chunks_exact(4).enumerate() {
                codes[4 * w * c + 4 * j..4 * w * c + 4 * j + 4].copy_from_slice(chunk);
            }
            for b in 0..nb {
                self.quad_d[s.blocks * g + w * b + j] = self.d[nb * i + b];
                self.quad_sum[s.blocks * g + w * b + j] = self.sum[nb * i + b];
            }
            for h in 0..2 * nb {
                self.quad_sum16[s.halves * g + w * h + j] = self.sum16[2 * nb * i + h] as i32;
            }
        }
    }

    /// The represented activation x̂ = d·q of all rows, as f32 (exact).
    #[cfg(test)]
    pub fn dequantized(&self) -> Vec<f32> {
        let mut out = Vec::new();
        self.dequantize_into(&mut out);
        out
    }

    /// [`Rows::dequantized`] into `out` (its contents replaced; allocates only beyond its
    /// capacity).
    pub fn dequantize_into(&self, out: &mut Vec<f32>) {
        out.clear();
        out.extend(
            self.qs
                .iter()
                .enumerate()
                .map(|(i, &q)| self.d[i / QK8_1] * q as f32),
        );
    }
}

/// [`Rows::quantize_into`] with AVX2: [`quantize_block`]'s operations on eight values per
/// instruction, the same binary32 operations in the same order per value (`v·id`, the
/// truncation, the exact remainder and its comparisons with ±½), so the same codes, sums
/// and scales.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use super::{QK8_1, Rows, quantize_block};
    use std::arch::x86_64::*;

    /// 32 codes in value order from four vectors of eight i32 codes (|q| ≤ 127, so the
    /// saturating packs are exact), and the four 8-value sums.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(in crate::linear) fn codes_and_sums(q: &[__m256i; 4]) -> (__m256i, [i32; 4]) {
        // Per 128-bit lane the packs hold 4 codes of each vector: dwords back to value order.
        let codes = _mm256_permutevar8x32_epi32(
            _mm256_packs_epi16(
                _mm256_packs_epi32(q[0], q[1]),
                _mm256_packs_epi32(q[2], q[3]),
            ),
            _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7),
        );
        // Per 128-bit lane: Σ of q[r]'s four values of that lane, r = 0..4; the two lanes
        // added: the four 8-value sums.
        let h = _mm256_hadd_epi32(_mm256_hadd_epi32(q[0], q[1]), _mm256_hadd_epi32(q[2], q[3]));
        let s8 = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256::<1>(h));
        let mut s = [0i32; 4];
        // SAFETY: 4 writable i32.
        unsafe { _mm_storeu_si128(s.as_mut_ptr().cast(), s8) };
        (codes, s)
    }

    /// Quantizes the whole blocks of `x` into the planes of `rows` (block i: codes
    /// `qs[32i..]`, `d[i]`, `sum[i]`, `sum16[2i..]`, `sum8[4i..]`), sized for them by the
    /// caller. A block with a non-finite value, or whose `1/d` overflows, takes
    /// [`quantize_block`] itself (its all-zero codes).
    ///
    /// # Safety
    /// AVX2, FMA and F16C available.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn quantize_blocks(x: &[f32], rows: &mut Rows) {
        let nb = x.len() / QK8_1;
        // One up-front check: the pointer accesses below stay in these bounds.
        assert!(
            rows.qs.len() >= QK8_1 * nb
                && rows.d.len() >= nb
                && rows.sum.len() >= nb
                && rows.sum16.len() >= 2 * nb
                && rows.sum8.len() >= 4 * nb
        );
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFF_FFFF));
        let finite_max = _mm256_set1_epi32(0x7F7F_FFFF);
        for (i, xb) in x.chunks_exact(QK8_1).enumerate() {
            // SAFETY: 32 values at xb.
            let v: [__m256; 4] =
                std::array::from_fn(|r| unsafe { _mm256_loadu_ps(xb.as_ptr().add(8 * r)) });
            let mut a = [_mm256_setzero_ps(); 4];
            let mut big = _mm256_setzero_si256();
            for r in 0..4 {
                a[r] = _mm256_and_ps(v[r], abs);
                // |bits| above the largest finite magnitude: inf or NaN.
                big = _mm256_or_si256(
                    big,
                    _mm256_cmpgt_epi32(_mm256_castps_si256(a[r]), finite_max),
                );
            }
            // The largest magnitude (the values are finite where it is used).
            let m = _mm256_max_ps(_mm256_max_ps(a[0], a[1]), _mm256_max_ps(a[2], a[3]));
            let m = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps::<1>(m));
            let m = _mm_max_ps(m, _mm_movehl_ps(m, m));
            let amax = _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
            let d = amax / 127.0;
            let id = if d != 0.0 { 1.0 / d } else { 0.0 };
            if _mm256_testz_si256(big, big) == 0 || !id.is_finite() {
                rows.put(i, &quantize_block(xb));
                continue;
            }
            let idv = _mm256_set1_ps(id);
            let point5 = _mm256_set1_ps(0.5);
            let mut q = [_mm256_setzero_si256(); 4];
            for r in 0..4 {
                let s = _mm256_mul_ps(v[r], idv);
                let t = _mm256_cvttps_epi32(s);
                let f = _mm256_sub_ps(s, _mm256_cvtepi32_ps(t));
                // Masks are −1 where true: t + (f ≥ ½) − (f ≤ −½).
                let up = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_GE_OQ>(f, point5));
                let down = _mm256_castps_si256(_mm256_cmp_ps::<_CMP_LE_OQ>(
                    f,
                    _mm256_sub_ps(_mm256_setzero_ps(), point5),
                ));
                q[r] = _mm256_add_epi32(_mm256_sub_epi32(t, up), down);
            }
            let (codes, s) = codes_and_sums(&q);
            // SAFETY: block i's 32 codes lie in the plane (checked above).
            unsafe { _mm256_storeu_si256(rows.qs.as_mut_ptr().add(QK8_1 * i).cast(), codes) };
            rows.d[i] = half::f16::from_f32(d).to_f32();
            rows.sum[i] = s[0] + s[1] + s[2] + s[3];
            rows.sum16[2 * i] = (s[0] + s[1]) as i16;
            rows.sum16[2 * i + 1] = (s[2] + s[3]) as i16;
            for (o, &v) in rows.sum8[4 * i..4 * i + 4].iter_mut().zip(&s) {
                *o = v as i16;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked_block() {
        // amax = 127 → d = 1, id = 1: codes are the rounded values (half away from zero).
        let mut x = [0f32; 32];
        x[0] = 127.0;
        x[1] = -2.5;
        x[2] = 2.5;
        x[3] = 0.49;
        x[16] = -1.5;
        let b = quantize_block(&x);
        assert_eq!(b.qs[0], 127);
        assert_eq!(b.qs[1], -3);
        assert_eq!(b.qs[2], 3);
        assert_eq!(b.qs[3], 0);
        assert_eq!(b.qs[16], -2);
        assert_eq!(b.sum, 125);
        assert_eq!(b.d_bits, 0x3C00); // 1.0
        assert_eq!(half::f16::from_bits(b.s_bits).to_f32(), 125.0);
    }

    #[test]
    fn zero_and_non_finite_blocks() {
        let b = quantize_block(&[0.0; 32]);
        assert_eq!((b.d_bits, b.s_bits, b.sum), (0, 0, 0));
        let mut x = [1.0f32; 32];
        x[5] = f32::INFINITY;
        let b = quantize_block(&x);
        assert!(half::f16::from_bits(b.d_bits).is_nan());
        assert_eq!(b.qs, [0; 32]);
        // 1/d overflows: codes 0, stored d is 0.
        let b = quantize_block(&[1e-39; 32]);
        assert_eq!((b.d_bits, b.sum), (0, 0));
    }

    /// Every tier's planes equal the scalar reference's, word for word: random values of
    /// every magnitude, exact ties at ±½ (amax 127, so id = 1), zero, subnormal and
    /// non-finite values, blocks whose 1/d overflows.
    #[test]
    fn every_tier_quantizes_as_the_scalar_reference() {
        let mut next = crate::linear::cpu::tests::xorshift(0x9E37_79B9_7F4A_7C15u64);
        let blocks = 512;
        let mut x = Vec::with_capacity(QK8_1 * blocks);
        for b in 0..blocks {
            let scale = f32::from_bits(((next() % 90) as u32 + 90) << 23); // 2^-37 .. 2^52
            for j in 0..QK8_1 {
                let r = next();
                let v = match b % 8 {
                    // Ties: amax 127 gives id = 1, so k + ½ is exact.
                    0 if j == 0 => 127.0,
                    0 => (r % 254) as f32 - 127.0 + if r & 1 == 0 { 0.5 } else { -0.5 },
                    1 => 0.0,
                    2 => {
                        f32::from_bits((r % 0x0080_0000) as u32)
                            * if r & 1 == 0 { 1.0 } else { -1.0 }
                    }
                    3 if j == 7 => [f32::INFINITY, f32::NEG_INFINITY, f32::NAN][(r % 3) as usize],
                    4 if j == 31 => f32::MAX,
                    _ => ((r >> 11) as f32 / (1u64 << 53) as f32 - 0.5) * scale,
                };
                x.push(v);
            }
        }
        let (m, k) = (4, QK8_1 * blocks / 4);
        let want = Rows::quantize(&x, m, k);
        for isa in Isa::tested() {
            let mut got = Rows::with_capacity(m, k, false, 0).unwrap();
            got.quantize_into(&x, m, isa);
            let name = isa.name();
            assert_eq!(got.qs[..], want.qs[..], "{name}: codes");
            let bits = |d: &[f32]| d.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.d), bits(&want.d), "{name}: scales");
            assert_eq!(got.sum[..], want.sum[..], "{name}: sums");
            assert_eq!(got.sum16[..], want.sum16[..], "{name}: half sums");
            assert_eq!(got.sum8[..], want.sum8[..], "{name}: 8-value sums");
        }
    }

    #[test]
    fn bad_lengths() {
        let mut out = [0u8; 36];
        assert!(matches!(
            quantize_row_q8_1(&[0.0; 31], &mut out),
            Err(Error::BadShape(_))
        ));
        assert!(matches!(
            quantize_row_q8_1(&[0.0; 64], &mut out),
            Err(Error::BufferTooSmall { .. })
        ));
    }
}
