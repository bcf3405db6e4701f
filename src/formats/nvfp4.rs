//! §3.3 nvfp4: E2M1 codes, one E4M3FN block scale per 16 K-values and one FP32 weight
//! divisor per stacked source matrix, in layout `block_scale_k16_m128x4_v1`
//! ([`crate::layouts::block_scale`]); validation, exact decoding and a quantizer.
//!
//! Represented weight (spec §3.3), evaluated as
//! `binary32(binary32(e2m1(c) · e4m3fn(s)) / d_w)`: the inner product of a 2-bit and a
//! 4-bit significand is always exact (its smallest unit 0.5 · 2^-9 is far above 2^-149), so
//! this is the exact quotient rounded once to nearest-even.

use crate::error::{Error, Location, Result, mul};
use crate::formats::float_source::FloatSource;
use crate::isa::{Isa, on_tier};
use crate::layouts::block_scale::{self as layout, BLOCK, DIVISORS_PLANE};
use crate::registry::{Format, Layout};
use crate::threads;
use crate::view::WeightView;
use crate::words::{e2m1, e4m3fn};

/// The whole-row / whole-source "block" of an error location.
const WHOLE: u64 = crate::error::Location::NONE;

/// `2688 = 448 · 6`: the divisor numerator that maps a matrix's amax onto the largest
/// E4M3FN scale times the largest E2M1 code.
pub const DIVISOR_NUMERATOR: f32 = 2688.0;

fn is_nvfp4(view: &WeightView<'_>) -> Result<()> {
    if view.format() != Format::Nvfp4 || view.layout() != Layout::BlockScaleK16_M128x4_V1 {
        return Err(Error::InvalidArgument(format!(
            "{} / {} is not an nvfp4 view",
            view.format(),
            view.layout()
        )));
    }
    Ok(())
}

/// The divisor words of an nvfp4 view, as little-endian binary32 bit patterns.
pub fn divisor_bits<'a>(view: &WeightView<'a>) -> impl Iterator<Item = u32> + 'a {
    view.plane(DIVISORS_PLANE)
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// The number of stacked sources (divisors) of an nvfp4 view.
pub fn divisor_count(view: &WeightView<'_>) -> usize {
    view.plane(DIVISORS_PLANE).len() / 4
}

/// Rows per stacked source: N / divisors.
pub fn rows_per_source(view: &WeightView<'_>) -> usize {
    view.rows() / divisor_count(view)
}

/// Row `r`'s divisor d_w (that of its stacked source), as stored (no check).
pub fn row_divisor(view: &WeightView<'_>, r: usize) -> f32 {
    let src = r / rows_per_source(view);
    let d = &view.plane(DIVISORS_PLANE)[4 * src..4 * src + 4];
    f32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// Checks one E4M3FN block scale: sign bit zero and not NaN (0x00..=0x7E; +0 accepted,
/// −0 0x80, negative values and both NaN words refused).
pub fn check_scale(row: u64, block: u64, s: u8) -> Result<()> {
    if s & 0x80 != 0 {
        return Err(Error::encoding(
            row,
            block,
            format!("block scale {s:#04x} has its sign bit set (negative or -0)"),
        ));
    }
    if e4m3fn::is_nan(s) {
        return Err(Error::encoding(
            row,
            block,
            format!("block scale {s:#04x} is the E4M3FN NaN word"),
        ));
    }
    Ok(())
}

/// Checks divisor `index` (binary32 bits `bits`): finite and strictly positive. The error
/// location is the source's first row, block `u64::MAX`.
pub fn check_divisor(index: usize, first_row: usize, bits: u32) -> Result<()> {
    let d = f32::from_bits(bits);
    if !(d.is_finite() && d > 0.0) {
        return Err(Error::encoding(
            first_row as u64,
            WHOLE,
            format!(
                "weight divisor {index} (of the source starting at row {first_row}) is {d} \
                 ({bits:#010x}): it must be finite and > 0"
            ),
        ));
    }
    Ok(())
}

/// Validates an nvfp4 view: every divisor finite and > 0, every block scale of every row
/// valid ([`check_scale`]), and every padding byte of the swizzled scale plane zero (its
/// canonical content). All E2M1 codes are valid. Errors: [`Error::InvalidArgument`] (not
/// nvfp4), [`Error::InvalidEncoding`] at the first divisor, then the lowest bad row and its
/// K-block, then the first non-zero padding byte (reported at row and block
/// [`Location::NONE`], its padded row, K-block and byte offset in the message).
pub fn validate(view: &WeightView<'_>) -> Result<()> {
    is_nvfp4(view)?;
    let per = rows_per_source(view);
    for (i, b) in divisor_bits(view).enumerate() {
        check_divisor(i, i * per, b)?;
    }
    let nkb = view.cols() / BLOCK;
    let scales = view.plane(1);
    if let Some(e) = threads::first_error(
        view.rows(),
        || (),
        |_, m| {
            (0..nkb).find_map(|kb| {
                check_scale(m as u64, kb as u64, scales[layout::offset(m, kb, nkb)]).err()
            })
        },
    ) {
        return Err(e);
    }
    if let Some((m, kb)) = layout::first_nonzero_padding(scales, view.rows(), nkb) {
        // Padding belongs to no logical row or K-block: both are reported as NONE and the
        // message names the padded position instead.
        let at = layout::offset(m, kb, nkb);
        return Err(Error::encoding(
            Location::NONE,
            Location::NONE,
            format!(
                "padding byte {:#04x} of the swizzled scales (byte {at}, padded row {m}, \
                 padded K-block {kb}; the tensor has {} rows and {nkb} K-blocks) must be 0",
                scales[at],
                view.rows()
            ),
        ));
    }
    Ok(())
}

/// Decodes row `r` (already range-checked) into `out` (exactly K values) after checking the
/// row's divisor and block scales: `binary32(binary32(e2m1(c) · e4m3fn(s)) / d_w)`.
/// Nothing is written on error.
pub fn decode_row(view: &WeightView<'_>, r: usize, out: &mut [f32]) -> Result<()> {
    is_nvfp4(view)?;
    let per = rows_per_source(view);
    let src = r / per;
    let dbits = divisor_bits(view).nth(src).unwrap_or(0);
    check_divisor(src, src * per, dbits)?;
    let d = f32::from_bits(dbits);
    let nkb = view.cols() / BLOCK;
    let scales = view.plane(1);
    for kb in 0..nkb {
        check_scale(r as u64, kb as u64, scales[layout::offset(r, kb, nkb)])?;
    }
    let codes = view.row_bytes(0, r);
    decode_blocks(codes, |kb| scales[layout::offset(r, kb, nkb)], d, out);
    Ok(())
}

/// Decodes whole 16-value blocks: `out[k] = binary32(binary32(e2m1(c[k]) · sf) / d)` with
/// `sf = e4m3fn(scale(k / 16))`; `codes` holds `out.len() / 2` bytes, scales are already
/// checked. On this machine's best tier, bit-identical to [`decode_blocks_scalar`] (IEEE
/// division is correctly rounded in every lane; tested).
pub fn decode_blocks(codes: &[u8], scale: impl Fn(usize) -> u8, d: f32, out: &mut [f32]) {
    decode_blocks_on(Isa::detect(), codes, scale, d, out)
}

/// [`decode_blocks`] on tier `isa` (one the machine runs).
pub(crate) fn decode_blocks_on(
    isa: Isa,
    codes: &[u8],
    scale: impl Fn(usize) -> u8,
    d: f32,
    out: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa.avx2() && isa.available() {
        // SAFETY: the machine runs the AVX2 tier, checked just above.
        unsafe { decode_blocks_avx2(codes, scale, d, out) };
        return;
    }
    let _ = isa;
    decode_blocks_scalar(codes, scale, d, out)
}

/// The portable form of [`decode_blocks`].
pub fn decode_blocks_scalar(codes: &[u8], scale: impl Fn(usize) -> u8, d: f32, out: &mut [f32]) {
    for (kb, blk) in out.chunks_exact_mut(BLOCK).enumerate() {
        let sf = e4m3fn::decode(scale(kb));
        for (pair, &byte) in blk
            .chunks_exact_mut(2)
            .zip(&codes[kb * BLOCK / 2..(kb + 1) * BLOCK / 2])
        {
            pair[0] = e2m1::decode(byte & 0xF) * sf / d;
            pair[1] = e2m1::decode(byte >> 4) * sf / d;
        }
    }
}

/// One block per iteration: the 8 code bytes are split into 16 nibbles in element order,
/// widened to 32-bit lanes, mapped to E2M1 magnitudes by a lane permute with the sign bit
/// placed by XOR, then multiplied by the scale (exact) and divided by d (one rounding).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn decode_blocks_avx2(codes: &[u8], scale: impl Fn(usize) -> u8, d: f32, out: &mut [f32]) {
    use std::arch::x86_64::*;
    let mags = _mm256_setr_ps(0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0);
    let dv = _mm256_set1_ps(d);
    let low4 = _mm_set1_epi8(0x0F);
    let seven = _mm256_set1_epi32(7);
    let eight = _mm256_set1_epi32(8);
    let nkb = (out.len() / BLOCK).min(codes.len() / (BLOCK / 2));
    for kb in 0..nkb {
        let sf = _mm256_set1_ps(e4m3fn::decode(scale(kb)));
        // SAFETY: block kb's 8 code bytes and 16 outputs are in bounds (kb < nkb);
        // unaligned load/stores.
        unsafe {
            let b = _mm_loadl_epi64(codes.as_ptr().add(kb * 8).cast::<__m128i>());
            let lo = _mm_and_si128(b, low4);
            let hi = _mm_and_si128(_mm_srli_epi16(b, 4), low4);
            let nib = _mm_unpacklo_epi8(lo, hi); // element order: lo0 hi0 lo1 hi1 ...
            for half in 0..2 {
                let part = if half == 0 {
                    nib
                } else {
                    _mm_srli_si128(nib, 8)
                };
                let idx = _mm256_cvtepu8_epi32(part);
                let mag = _mm256_permutevar8x32_ps(mags, _mm256_and_si256(idx, seven));
                let sign = _mm256_slli_epi32(_mm256_and_si256(idx, eight), 28);
                let v = _mm256_xor_ps(mag, _mm256_castsi256_ps(sign));
                let w = _mm256_div_ps(_mm256_mul_ps(v, sf), dv);
                _mm256_storeu_ps(out.as_mut_ptr().add(kb * BLOCK + half * 8), w);
            }
        }
    }
}

/// The weight divisor of a source matrix whose largest magnitude is `amax`:
/// `binary32(2688 / amax)`, or 1 for an all-zero source.
pub fn weight_divisor(amax: f32) -> f32 {
    if amax > 0.0 {
        DIVISOR_NUMERATOR / amax
    } else {
        1.0
    }
}

/// One 16-value block of the production algorithm: from the block's max |x| and the
/// source's divisor, the scale word and the FP32 multiplier applied to its values.
///
/// ```text
/// s   = e4m3fn_rne_satfinite(d_w · (bmax / 6))
/// sf  = e4m3fn(s)
/// inv = sf != 0 ? 1 / (sf · (1 / d_w)) : 0
/// ```
/// every operation one binary32 rounding to nearest-even.
#[inline]
pub fn block_scale(bmax: f32, d_w: f32) -> (u8, f32) {
    let s = e4m3fn::encode_satfinite(d_w * (bmax / 6.0));
    let sf = e4m3fn::decode(s);
    let inv = if sf != 0.0 {
        1.0 / (sf * (1.0 / d_w))
    } else {
        0.0
    };
    (s, inv)
}

/// The NVFP4 quantizer (the spec has none; this is the production algorithm of
/// TensorRT-LLM / vLLM / compressed-tensors with exact binary32 arithmetic, so CPU and GPU
/// reproductions agree bit for bit).
///
/// `src` is a row-major `rows × cols` matrix made of `sources` stacked source matrices of
/// `rows / sources` rows each (`sources` ≥ 1 must divide `rows`; 16 must divide `cols`).
/// Per source: `amax = max |x|` over its rows, `d_w = binary32(2688 / amax)` (1 if amax is
/// 0). Per 16-value block: [`block_scale`] from the block's max |x|, then each code
/// `e2m1_rne_satfinite(binary32(x · inv))`. Source values are used exactly (f32 as is,
/// bf16/f16 expanded); nothing is rounded to BF16 first.
///
/// `planes` are the three planes of `block_scale_k16_m128x4_v1`, exactly sized: codes
/// `rows × cols/2`, swizzled scales ([`layout::scales_len`]; padding written as 0),
/// divisors `4 · sources` (little-endian binary32).
///
/// Errors (nothing written): [`Error::BadShape`] (shape, K % 16, sources ∤ rows),
/// [`Error::SizeMismatch`], [`Error::NonFiniteSource`] (lowest row, then column),
/// [`Error::ScaleOverflow`] when a source's amax is so small that `d_w` is infinite
/// (amax < 2688 / f32::MAX; reported at the source's first row, group `u64::MAX`) or a
/// block's `inv` overflows binary32 (possible only when amax < 4e-33 and the block is
/// far smaller than amax; at that row and K-block).
pub fn nvfp4_quantize(
    src: FloatSource<'_>,
    rows: usize,
    cols: usize,
    sources: usize,
    planes: [&mut [u8]; 3],
) -> Result<()> {
    nvfp4_quantize_on(Isa::detect(), src, rows, cols, sources, planes)
}

/// One row of pass 1 of [`nvfp4_quantize`]: the block maxima `bm` of row `x` and the row's
/// maximum (`x` finite). Inlined into each tier's copy ([`on_tier`]).
#[inline(always)]
fn block_maxima(x: &[f32], bm: &mut [f32]) -> f32 {
    let mut rmax = 0f32;
    for (m, blk) in bm.iter_mut().zip(x.chunks_exact(BLOCK)) {
        *m = blk.iter().fold(0f32, |a, x| a.max(x.abs()));
        rmax = rmax.max(*m);
    }
    rmax
}

/// One row of pass 3 of [`nvfp4_quantize`]: the E2M1 codes of row `x` (two a byte, the
/// earlier in the low nibble) with block multipliers `inv`. Inlined into each tier's copy
/// ([`on_tier`]).
#[inline(always)]
fn row_codes(x: &[f32], inv: impl Fn(usize) -> f32, out: &mut [u8]) {
    for (kb, (o, x)) in out
        .chunks_exact_mut(BLOCK / 2)
        .zip(x.chunks_exact(BLOCK))
        .enumerate()
    {
        let inv = inv(kb);
        for (byte, pair) in o.iter_mut().zip(x.chunks_exact(2)) {
            *byte = e2m1::encode(pair[0] * inv) | (e2m1::encode(pair[1] * inv) << 4);
        }
    }
}

/// [`nvfp4_quantize`] on tier `isa` (one the machine runs): the same row code compiled
/// for its features ([`on_tier`]), bit-identical on every tier.
pub(crate) fn nvfp4_quantize_on(
    isa: Isa,
    src: FloatSource<'_>,
    rows: usize,
    cols: usize,
    sources: usize,
    planes: [&mut [u8]; 3],
) -> Result<()> {
    src.check_shape(rows, cols)?;
    let nkb = layout::k_blocks(cols)?;
    if sources == 0 || !rows.is_multiple_of(sources) {
        return Err(Error::BadShape(format!(
            "nvfp4: {sources} stacked sources do not divide N = {rows} rows"
        )));
    }
    let want = [
        mul(rows, cols / 2, "codes bytes")?,
        layout::scales_len(rows, nkb)?,
        mul(sources, 4, "divisors bytes")?,
    ];
    for (i, p) in planes.iter().enumerate() {
        if p.len() != want[i] {
            return Err(Error::SizeMismatch {
                unit: "bytes",
                plane: crate::layouts::plane_name(Layout::BlockScaleK16_M128x4_V1, i),
                expected: want[i],
                actual: p.len(),
            });
        }
    }
    let per = rows / sources;

    // Pass 1: per-block max |x| and per-row max, refusing non-finite values.
    let mut bmax = vec![0f32; rows * nkb];
    let mut bmax_rows: Vec<&mut [f32]> = bmax.chunks_mut(nkb).collect();
    let row_max: Vec<Result<f32>> = threads::map_slice(
        &mut bmax_rows,
        || vec![0f32; cols],
        |buf, r, bm| {
            crate::fpenv::require_subnormals("the NVFP4 quantizer")?;
            src.read_into(r * cols, buf);
            if let Some(k) = buf.iter().position(|x| !x.is_finite()) {
                return Err(Error::NonFiniteSource {
                    row: r as u64,
                    col: k as u64,
                });
            }
            Ok(on_tier!(isa, || block_maxima(buf, bm)))
        },
    );
    let row_max = row_max.into_iter().collect::<Result<Vec<f32>>>()?;
    let mut divisors = Vec::with_capacity(sources);
    for i in 0..sources {
        let amax = row_max[i * per..(i + 1) * per]
            .iter()
            .fold(0f32, |a, &b| a.max(b));
        let d = weight_divisor(amax);
        if !d.is_finite() {
            return Err(Error::ScaleOverflow {
                row: (i * per) as u64,
                group: WHOLE,
            });
        }
        divisors.push(d);
    }

    // Pass 2: block scales and multipliers.
    let mut blocks = vec![(0u8, 0f32); rows * nkb];
    threads::for_each(
        blocks.chunks_mut(nkb).zip(bmax.chunks(nkb)).enumerate(),
        || (),
        |_, (r, (out, bm))| {
            for (o, &b) in out.iter_mut().zip(bm) {
                *o = block_scale(b, divisors[r / per]);
            }
        },
    );
    if let Some(i) = blocks.iter().position(|&(_, inv)| !inv.is_finite()) {
        return Err(Error::ScaleOverflow {
            row: (i / nkb) as u64,
            group: (i % nkb) as u64,
        });
    }

    // Pass 3: write. Nothing below can fail.
    let [codes, scales, divs] = planes;
    let mut code_rows: Vec<&mut [u8]> = codes.chunks_mut(cols / 2).collect();
    threads::map_slice(
        &mut code_rows,
        || vec![0f32; cols],
        |buf, r, out| {
            src.read_into(r * cols, buf);
            let inv = |kb: usize| blocks[r * nkb + kb].1;
            on_tier!(isa, || row_codes(buf, inv, out));
        },
    );
    scales.fill(0);
    for (i, &(s, _)) in blocks.iter().enumerate() {
        scales[layout::offset(i / nkb, i % nkb, nkb)] = s;
    }
    for (o, d) in divs.chunks_exact_mut(4).zip(&divisors) {
        o.copy_from_slice(&d.to_le_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(rows: usize, cols: usize, p: [&'a [u8]; 3]) -> WeightView<'a> {
        WeightView::new(
            Format::Nvfp4,
            Layout::BlockScaleK16_M128x4_V1,
            rows,
            cols,
            p,
        )
        .unwrap()
    }

    #[test]
    fn decode_hand_worked() {
        // One row, K = 16: codes 0x1 (0.5), 0xF (-6), then 1.0 (0x2) and -0 (0x8) repeated;
        // scale 0x38 (1.0) at offset 0; d_w = 2.
        let mut codes = [0u8; 8];
        codes[0] = 0xF1;
        for c in &mut codes[1..] {
            *c = 0x82;
        }
        let mut scales = vec![0u8; 512];
        scales[0] = 0x38;
        let div = 2f32.to_le_bytes();
        let v = view(1, 16, [&codes, &scales, &div]);
        validate(&v).unwrap();
        let mut out = [0f32; 16];
        decode_row(&v, 0, &mut out).unwrap();
        assert_eq!(out[0], 0.25);
        assert_eq!(out[1], -3.0);
        assert_eq!(out[2], 0.5);
        assert_eq!(out[3].to_bits(), 0x8000_0000);
        // d_w = 3: 0.5 / 3 rounds once.
        let div3 = 3f32.to_le_bytes();
        let v = view(1, 16, [&codes, &scales, &div3]);
        decode_row(&v, 0, &mut out).unwrap();
        assert_eq!(out[0].to_bits(), (0.5f32 / 3.0).to_bits());
        assert_eq!(out[1], -2.0);
    }

    #[test]
    fn simd_decode_is_bit_identical_to_scalar_every_tier() {
        // Every code in every position, with every valid scale word, over divisors that
        // round (3, 7e-3), are tiny or huge, or subnormal.
        let codes: Vec<u8> = (0..=255u8).collect(); // 32 blocks: all byte values
        let mut n = 0;
        for d in [
            1.0f32,
            3.0,
            7e-3,
            448.0,
            2688.0 / 0.037,
            1e-30,
            3e37,
            f32::from_bits(5),
        ] {
            for s0 in 0..=0x7Eu8 {
                let scale = |kb: usize| ((s0 as usize + kb * 37) % 0x7F) as u8;
                let mut b = vec![1f32; 512];
                decode_blocks_scalar(&codes, scale, d, &mut b);
                for isa in Isa::tested() {
                    let mut a = vec![0f32; 512];
                    decode_blocks_on(isa, &codes, scale, d, &mut a);
                    for (x, y) in a.iter().zip(&b) {
                        assert_eq!(x.to_bits(), y.to_bits(), "{isa:?} d {d:e}");
                    }
                }
                n += 512;
            }
        }
        assert!(n > 500_000);
    }

    #[test]
    fn refused_payloads_and_near_misses() {
        let codes = [0u8; 16];
        let div = 1f32.to_le_bytes();
        let st = |scales: &[u8], div: &[u8]| {
            let v = view(2, 16, [&codes, scales, div]);
            validate(&v)
        };
        let mut scales = vec![0u8; 512];
        scales[16] = 0x7E; // row 1, max scale: fine
        st(&scales, &div).unwrap();
        for bad in [0x80u8, 0x7F, 0xFF, 0xB8] {
            scales[16] = bad;
            match st(&scales, &div) {
                Err(Error::InvalidEncoding { at, .. }) => assert_eq!((at.row, at.block), (1, 0)),
                other => panic!("{bad:#x}: {other:?}"),
            }
        }
        scales[16] = 0;
        // Padding: row 2 (padded) or K-block 1..3 of row 0. Padding belongs to no logical
        // row or block: reported at (NONE, NONE), the padded position in the message.
        scales[1] = 0x01;
        match st(&scales, &div) {
            Err(Error::InvalidEncoding { at, reason }) => {
                assert_eq!((at.row, at.block), (Location::NONE, Location::NONE));
                assert!(
                    reason.contains("padded row 0, padded K-block 1"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        scales[1] = 0;
        scales[32] = 0x01;
        match st(&scales, &div) {
            Err(Error::InvalidEncoding { at, reason }) => {
                assert_eq!((at.row, at.block), (Location::NONE, Location::NONE));
                assert!(
                    reason.contains("padded row 2, padded K-block 0"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        scales[32] = 0;
        for bad in [0.0f32, -0.0, -1.0, f32::INFINITY, f32::NAN] {
            let e = st(&scales, &bad.to_le_bytes()).unwrap_err();
            assert_eq!(e.status(), crate::Status::InvalidEncoding, "{bad}");
        }
        st(&scales, &f32::from_bits(1).to_le_bytes()).unwrap(); // subnormal divisor
        st(&scales, &f32::MAX.to_le_bytes()).unwrap();
        // Two sources: the second bad divisor is reported at its first row.
        let two = [1f32.to_le_bytes(), (-1f32).to_le_bytes()].concat();
        match st(&scales, &two) {
            Err(Error::InvalidEncoding { at, .. }) => assert_eq!(at.row, 1),
            other => panic!("{other:?}"),
        }
        // Decoding a row with a bad scale writes nothing.
        scales[0] = 0x80;
        let v = view(2, 16, [&codes, &scales, &div]);
        let mut out = [7f32; 16];
        assert!(decode_row(&v, 0, &mut out).is_err());
        assert_eq!(out, [7.0; 16]);
        decode_row(&v, 1, &mut out).unwrap();
    }

    #[test]
    fn quantize_hand_worked() {
        // amax = 6 → d_w = 448; the block with bmax 6 gets s = e4m3(448) = 0x7E and
        // inv = 1 / (448 · binary32(1/448)).
        let mut src = [0f32; 16];
        src[0] = 6.0;
        src[1] = -3.0;
        src[2] = 0.75; // tie → 1.0
        src[3] = 0.25; // tie → 0
        let mut codes = [0u8; 8];
        let mut scales = vec![0u8; 512];
        let mut divs = [0u8; 4];
        nvfp4_quantize(
            FloatSource::F32(&src),
            1,
            16,
            1,
            [&mut codes, &mut scales, &mut divs],
        )
        .unwrap();
        assert_eq!(f32::from_le_bytes(divs), 448.0);
        assert_eq!(scales[0], 0x7E);
        let inv = 1.0f32 / (448.0 * (1.0 / 448.0));
        assert_eq!(
            codes[0],
            e2m1::encode(6.0 * inv) | (e2m1::encode(-3.0 * inv) << 4)
        );
        assert_eq!(codes[0], 0xD7);
        assert_eq!(codes[1], 0x02);
        // All-zero: d_w = 1, zero scales and codes.
        nvfp4_quantize(
            FloatSource::F32(&[0.0; 16]),
            1,
            16,
            1,
            [&mut codes, &mut scales, &mut divs],
        )
        .unwrap();
        assert_eq!(f32::from_le_bytes(divs), 1.0);
        assert!(scales.iter().all(|&b| b == 0) && codes.iter().all(|&b| b == 0));
    }

    /// nvfp4_quantize on every tier writes the scalar tier's bytes (codes, block scales,
    /// divisors) on sources with exact E2M1 ties, zero blocks and many binades, and every
    /// tier refuses a non-finite source with the same error, writing nothing.
    #[test]
    fn quantize_every_tier_matches_scalar() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (rows, cols, sources) = (256, 96, 2);
        let mut x: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let h = next();
                match (i / 16) % 5 {
                    0 => 0.0,
                    // E2M1 midpoints times a power of two: ties once scaled.
                    1 => {
                        [0.25f32, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0][(h % 8) as usize]
                            * if h & 8 == 0 { 1.0 } else { -1.0 }
                    }
                    2 => {
                        ((h >> 11) as f32 / (1u64 << 53) as f32 - 0.5)
                            * 2f32.powi((h % 30) as i32 - 15)
                    }
                    _ => ((h >> 11) as f32 / (1u64 << 53) as f32 - 0.5) * 7.0,
                }
            })
            .collect();
        let lens = [
            rows * cols / 2,
            layout::scales_len(rows, cols / BLOCK).unwrap(),
            4 * sources,
        ];
        let run = |isa: Isa, x: &[f32]| {
            let mut p = lens.map(|n| vec![0xA5u8; n]);
            let [a, b, c] = &mut p;
            let r = nvfp4_quantize_on(isa, FloatSource::F32(x), rows, cols, sources, [a, b, c]);
            (r.map_err(|e| e.to_string()), p)
        };
        let want = run(Isa::Scalar, &x);
        assert!(want.0.is_ok(), "{:?}", want.0);
        for isa in Isa::tested() {
            assert_eq!(run(isa, &x), want, "{isa:?}");
        }
        x[77 * cols + 5] = f32::INFINITY;
        for isa in Isa::tested() {
            let (r, p) = run(isa, &x);
            assert!(r.is_err(), "{isa:?}");
            assert!(p.iter().all(|pl| pl.iter().all(|&v| v == 0xA5)), "{isa:?}");
        }
    }
}
