//! `row_split_k128_v1`: the storage layout of the grouped signed-integer formats
//! (definition and worked example: docs/layouts.md).
//!
//! A rank-2 `[N, K]` weight is stored with K padded to `Kpad = ceil(K / 128) · 128` in three
//! planes, each holding N equal, contiguous, row-ordered byte ranges:
//!
//! | plane | name | per row | contents |
//! |---|---|---|---|
//! | 0 | `codes` | Kpad · lo / 8 bytes | the low `lo` bits of every stored code word: lo = 2 (q2, t2), 4 (q4, q5, q6), 8 (q8) |
//! | 1 | `high_bits` | Kpad · (b − 4) / 8 bytes | q5: bit 4 of each word; q6: bits 5..4; empty otherwise |
//! | 2 | `scales` | 2 · Kpad / G bytes | binary16 scale words, little-endian, group order |
//!
//! Within a byte, element k of the row occupies the bits `[(k mod m)·w, (k mod m)·w + w)` of
//! byte `floor(k / m)`, where w is the field width and m = 8 / w (earlier elements in less
//! significant bits). Canonical padding: every element k in `[K, Kpad)` holds the logical code
//! 0 (stored word 0, except q2 whose zero code is word 0b01), and every group starting at or
//! past K has scale +0 (0x0000). Sizes depend on (format, N, K) only.

use crate::error::{Error, Result, mul, try_filled};
use crate::formats::grouped::Scheme;
use crate::layouts::{MAX_PLANES, PlaneSizes};
use crate::registry::Format;

/// The K padding multiple.
///
/// cbindgen:ignore
pub const K_ALIGN: usize = 128;

/// `ceil(K / 128) · 128`, or [`Error::Overflow`].
pub fn padded_k(cols: usize) -> Result<usize> {
    cols.div_ceil(K_ALIGN)
        .checked_mul(K_ALIGN)
        .filter(|&v| v <= isize::MAX as usize)
        .ok_or_else(|| Error::Overflow(format!("K = {cols} padded to 128")))
}

/// Width in bits of a code's low field (plane 0) and high field (plane 1).
fn field_bits(s: &Scheme) -> (u32, u32) {
    match s.bits {
        2 => (2, 0),
        4 => (4, 0),
        5 => (4, 1),
        6 => (4, 2),
        8 => (8, 0),
        b => unreachable!("no grouped format has {b}-bit codes"),
    }
}

/// Byte length of one row in each plane.
pub fn row_plane_bytes(format: Format, cols: usize) -> Result<PlaneSizes> {
    let s = Scheme::of(format)?;
    let kp = padded_k(cols)?;
    let (lo, hi) = field_bits(&s);
    Ok([kp / 8 * lo as usize, kp / 8 * hi as usize, kp / s.group * 2])
}

/// The byte length of each plane for `rows × cols` (positive dimensions checked by the
/// caller, `crate::layouts::plane_sizes`).
pub fn plane_sizes(format: Format, rows: usize, cols: usize) -> Result<PlaneSizes> {
    let per_row = row_plane_bytes(format, cols)?;
    let mut out = [0; MAX_PLANES];
    for (o, b) in out.iter_mut().zip(per_row) {
        *o = mul(rows, b, "plane bytes")?;
    }
    Ok(out)
}

/// Packs one row of Kpad codes (padding included: `codes.len()` is Kpad) into its code
/// and high-bit plane rows (lengths [`row_plane_bytes`]). Codes are not checked here.
#[inline(always)]
pub(crate) fn pack_codes(s: &Scheme, codes: &[i8], lo: &mut [u8], hi: &mut [u8]) {
    match s.bits {
        8 => {
            for (o, &q) in lo.iter_mut().zip(codes) {
                *o = q as u8;
            }
        }
        4..=6 => {
            // The low nibble of a two's-complement i8 is the low nibble of the b-bit word.
            for (o, c) in lo.iter_mut().zip(codes.chunks_exact(2)) {
                *o = (c[0] as u8 & 0x0f) | ((c[1] as u8) << 4);
            }
            if s.bits == 5 {
                for (o, c) in hi.iter_mut().zip(codes.chunks_exact(8)) {
                    // Bit 4 of byte i to bit i: isolate each byte's bit as its LSB, then one
                    // multiply sums byte i's bit into bit 56 + i (no carries: one bit per
                    // column), and the top byte is the packed plane byte.
                    let x = u64::from_le_bytes([
                        c[0] as u8, c[1] as u8, c[2] as u8, c[3] as u8, c[4] as u8, c[5] as u8,
                        c[6] as u8, c[7] as u8,
                    ]);
                    *o = (((x >> 4) & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080)
                        >> 56) as u8;
                }
            } else if s.bits == 6 {
                for (o, c) in hi.iter_mut().zip(codes.chunks_exact(4)) {
                    *o = c
                        .iter()
                        .enumerate()
                        .fold(0, |b, (i, &q)| b | (((q as u8 >> 4) & 3) << (2 * i)));
                }
            }
        }
        _ => {
            for (o, c) in lo.iter_mut().zip(codes.chunks_exact(4)) {
                *o = c
                    .iter()
                    .enumerate()
                    .fold(0, |b, (i, &q)| b | (s.word_from_code(q) << (2 * i)));
            }
        }
    }
}

/// Writes ceil(K/G) scale words followed by +0 for every padding group.
#[inline(always)]
pub(crate) fn pack_scales(scales: &[u16], sc: &mut [u8]) {
    sc.fill(0);
    for (o, w) in sc.chunks_exact_mut(2).zip(scales) {
        o.copy_from_slice(&w.to_le_bytes());
    }
}

/// Packs one logical row (K codes, ceil(K/G) scales, not checked here) into its three plane
/// rows, writing the canonical padding. Plane row lengths are [`row_plane_bytes`].
pub(crate) fn pack_row(
    s: &Scheme,
    codes: &[i8],
    scales: &[u16],
    padded: &mut [i8],
    [lo, hi, sc]: [&mut [u8]; MAX_PLANES],
) {
    padded[..codes.len()].copy_from_slice(codes);
    padded[codes.len()..].fill(0);
    pack_codes(s, padded, lo, hi);
    pack_scales(scales, sc);
}

/// Unpacks Kpad signed codes from a row's code and high-bit plane rows (inverse of
/// [`pack_codes`]).
#[inline(always)]
pub(crate) fn unpack_codes(s: &Scheme, lo: &[u8], hi: &[u8], codes: &mut [i8]) {
    match s.bits {
        8 => {
            for (c, &b) in codes.iter_mut().zip(lo) {
                *c = b as i8;
            }
        }
        4 => {
            // Sign-extend each nibble: shift it to the top of the byte, arithmetic shift back.
            for (c, &b) in codes.chunks_exact_mut(2).zip(lo) {
                c[0] = ((b << 4) as i8) >> 4;
                c[1] = (b as i8) >> 4;
            }
        }
        5 => {
            for ((c, l), &h) in codes.chunks_exact_mut(8).zip(lo.chunks_exact(4)).zip(hi) {
                for i in 0..8 {
                    let w = ((l[i / 2] >> (4 * (i % 2))) & 0x0f) | (((h >> i) & 1) << 4);
                    c[i] = ((w << 3) as i8) >> 3;
                }
            }
        }
        6 => {
            for ((c, l), &h) in codes.chunks_exact_mut(4).zip(lo.chunks_exact(2)).zip(hi) {
                for i in 0..4 {
                    let w = ((l[i / 2] >> (4 * (i % 2))) & 0x0f) | (((h >> (2 * i)) & 3) << 4);
                    c[i] = ((w << 2) as i8) >> 2;
                }
            }
        }
        _ => {
            for (c, &b) in codes.chunks_exact_mut(4).zip(lo) {
                for (i, ci) in c.iter_mut().enumerate() {
                    *ci = s.code_from_word(b >> (2 * i));
                }
            }
        }
    }
}

/// Reads and validates one plane row: fills `codes` (Kpad entries, padding included) and
/// `scales` (Kpad / G entries), checks every logical group (§5–§6) and the canonical
/// padding. Errors name `row` and the group.
#[inline(always)]
pub(crate) fn unpack_row(
    s: &Scheme,
    cols: usize,
    row: usize,
    [lo, hi, sc]: [&[u8]; MAX_PLANES],
    codes: &mut [i8],
    scales: &mut [u16],
) -> Result<()> {
    let kp = codes.len();
    unpack_codes(s, lo, hi, codes);
    for (w, b) in scales.iter_mut().zip(sc.chunks_exact(2)) {
        *w = u16::from_le_bytes([b[0], b[1]]);
    }
    let ng = s.groups(cols);
    let err = |g: usize, why: String| Error::encoding(row as u64, g as u64, why);
    // Only q8 (-128) and t2 (-2) have stored words outside their interval, and both lie
    // below qmin: a group minimum decides it. The full check runs only to explain a failure.
    let needs_range = s.bits == 8 || (s.bits == 2 && !s.is_q2());
    for (g, (gc, &scale)) in codes[..cols].chunks(s.group).zip(&scales[..ng]).enumerate() {
        let bad = s.check_scale(scale).is_err()
            || (needs_range && gc.iter().fold(0i8, |m, &q| m.min(q)) < s.qmin as i8)
            || (scale == 0 && !s.is_q2() && gc.iter().fold(0u8, |a, &q| a | q as u8) != 0);
        if bad {
            s.check_group(scale, gc).map_err(|why| err(g, why))?;
        }
    }
    if let Some(k) = (cols..kp).find(|&k| codes[k] != 0) {
        return Err(err(
            k / s.group,
            format!(
                "padding column {k} (K = {cols}) holds code {} instead of 0",
                codes[k]
            ),
        ));
    }
    if let Some(g) = (ng..scales.len()).find(|&g| scales[g] != 0) {
        return Err(err(
            g,
            format!(
                "padding group {g} has scale {:#06x} instead of +0",
                scales[g]
            ),
        ));
    }
    Ok(())
}

/// The three plane rows of row `r`.
fn row_planes<'a>(view: &crate::WeightView<'a>, r: usize) -> [&'a [u8]; MAX_PLANES] {
    [
        view.row_bytes(0, r),
        view.row_bytes(1, r),
        view.row_bytes(2, r),
    ]
}

/// Packs a logical representation (codes N × K, scales N × ceil(K/G)) into the planes.
///
/// The logical words are validated first (§5–§6); nothing is written unless they are valid
/// and every plane has exactly the [`plane_sizes`] length.
///
/// Errors: [`Error::SizeMismatch`], [`Error::InvalidEncoding`] (row, group), [`Error::BadShape`].
pub fn pack(
    format: Format,
    rows: usize,
    cols: usize,
    codes: &[i8],
    scales: &[u16],
    planes: [&mut [u8]; MAX_PLANES],
) -> Result<()> {
    let lens = planes.each_ref().map(|p| p.len());
    crate::layouts::check_plane_lens(format, crate::Layout::RowSplitK128_V1, rows, cols, lens)?;
    crate::formats::grouped::validate_logical(format, rows, cols, codes, scales)?;
    let s = Scheme::of(format)?;
    let ng = s.groups(cols);
    let per = row_plane_bytes(format, cols)?;
    let [p0, p1, p2] = planes;
    let mut padded = try_filled(padded_k(cols)?, 0i8, "a padded row of codes")?;
    for r in 0..rows {
        pack_row(
            &s,
            &codes[r * cols..(r + 1) * cols],
            &scales[r * ng..(r + 1) * ng],
            &mut padded,
            [
                &mut p0[r * per[0]..(r + 1) * per[0]],
                &mut p1[r * per[1]..(r + 1) * per[1]],
                &mut p2[r * per[2]..(r + 1) * per[2]],
            ],
        );
    }
    Ok(())
}

/// The logical codes (N × K) and scales (N × ceil(K/G)) of a view, validated: every group's
/// rules (§5–§6) and the canonical padding.
///
/// Errors: [`Error::InvalidEncoding`] naming the first offending row and group,
/// [`Error::OutOfMemory`] when the N × K codes cannot be allocated.
pub fn unpack(view: &crate::WeightView<'_>) -> Result<(Vec<i8>, Vec<u16>)> {
    let s = Scheme::of(view.format())?;
    let (rows, cols) = (view.rows(), view.cols());
    let kp = padded_k(cols)?;
    let ng = s.groups(cols);
    let mut codes = try_filled(mul(rows, cols, "codes")?, 0i8, "unpacked codes")?;
    let mut scales = try_filled(mul(rows, ng, "scales")?, 0u16, "unpacked scales")?;
    let mut rc = try_filled(kp, 0i8, "a row of codes")?;
    let mut rs = try_filled(kp / s.group, 0u16, "a row of scales")?;
    for r in 0..rows {
        unpack_row(&s, cols, r, row_planes(view, r), &mut rc, &mut rs)?;
        codes[r * cols..(r + 1) * cols].copy_from_slice(&rc[..cols]);
        scales[r * ng..(r + 1) * ng].copy_from_slice(&rs[..ng]);
    }
    Ok((codes, scales))
}

/// Validates every row of a view (group rules and canonical padding).
///
/// Errors: [`Error::InvalidEncoding`] naming the first offending row and group.
pub fn validate(view: &crate::WeightView<'_>) -> Result<()> {
    let s = Scheme::of(view.format())?;
    let kp = padded_k(view.cols())?;
    let mut rc = try_filled(kp, 0i8, "a row of codes")?;
    let mut rs = try_filled(kp / s.group, 0u16, "a row of scales")?;
    for r in 0..view.rows() {
        unpack_row(&s, view.cols(), r, row_planes(view, r), &mut rc, &mut rs)?;
    }
    Ok(())
}

/// Decodes row `row` of a view into `out` (K values) by §6.2, after validating the row
/// (a row breaking a rule is refused, never decoded to a wrong value).
pub fn decode_row(view: &crate::WeightView<'_>, row: usize, out: &mut [f32]) -> Result<()> {
    let s = Scheme::of(view.format())?;
    let cols = view.cols();
    let kp = padded_k(cols)?;
    let mut rc = try_filled(kp, 0i8, "a row of codes")?;
    let mut rs = try_filled(kp / s.group, 0u16, "a row of scales")?;
    let planes = row_planes(view, row);
    // The same code compiled for the machine's tier (identical IEEE operations, so
    // identical results; tested on every tier).
    let isa = crate::isa::Isa::detect();
    crate::isa::on_tier!(isa, || decode_row_impl(
        &s, cols, row, planes, &mut rc, &mut rs, out
    ))
}

#[inline(always)]
fn decode_row_impl(
    s: &Scheme,
    cols: usize,
    row: usize,
    planes: [&[u8]; MAX_PLANES],
    rc: &mut [i8],
    rs: &mut [u16],
    out: &mut [f32],
) -> Result<()> {
    unpack_row(s, cols, row, planes, rc, rs)?;
    crate::formats::grouped::dequantize_row_logical(
        s,
        &rc[..cols],
        &rs[..s.groups(cols)],
        &mut out[..cols],
    );
    Ok(())
}

/// Copies rows `indices` (any order, repeats allowed) of `view` into `out` planes sized for
/// `indices.len()` rows: each row is a plain byte copy in every plane (no decoding). A
/// consecutive slice is the special case `indices = start..end`.
///
/// Errors: [`Error::IndexOutOfRange`], [`Error::SizeMismatch`] for an output plane of the
/// wrong length. Nothing is written on error.
pub fn gather_rows(
    view: &crate::WeightView<'_>,
    indices: &[u64],
    out: [&mut [u8]; MAX_PLANES],
) -> Result<()> {
    let rows = view.rows() as u64;
    if let Some((position, &index)) = indices.iter().enumerate().find(|&(_, &i)| i >= rows) {
        return Err(Error::IndexOutOfRange {
            position,
            index,
            rows,
        });
    }
    let per = row_plane_bytes(view.format(), view.cols())?;
    for (i, (o, &b)) in out.iter().zip(&per).enumerate() {
        let n = mul(indices.len(), b, "gathered plane")?;
        if o.len() != n {
            return Err(Error::SizeMismatch {
                unit: "bytes",
                plane: crate::layouts::plane_name(crate::Layout::RowSplitK128_V1, i),
                expected: n,
                actual: o.len(),
            });
        }
    }
    for (p, o) in out.into_iter().enumerate() {
        if per[p] == 0 {
            continue;
        }
        for (dst, &i) in o.chunks_exact_mut(per[p]).zip(indices) {
            dst.copy_from_slice(view.row_bytes(p, i as usize));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Layout, Status, WeightView};

    /// Packs one row of `codes` (K = codes.len()) with the given scales, returning the planes.
    fn pack1(f: Format, codes: &[i8], scales: &[u16]) -> [Vec<u8>; 3] {
        let sz = plane_sizes(f, 1, codes.len()).unwrap();
        let mut p = sz.map(|n| vec![0xeeu8; n]);
        let [a, b, c] = &mut p;
        pack(f, 1, codes.len(), codes, scales, [a, b, c]).unwrap();
        p
    }

    #[test]
    fn encoded_size_geometry() {
        // (format, K) -> per-row bytes of codes, high_bits, scales.
        let cases = [
            (Format::Q4_G64Fp16, 1, [64, 0, 4]),
            (Format::Q4_G64Fp16, 128, [64, 0, 4]),
            (Format::Q4_G64Fp16, 129, [128, 0, 8]),
            (Format::Q5_G64Fp16, 384, [192, 48, 12]),
            (Format::Q6_G64Fp16, 200, [128, 64, 8]),
            (Format::Q8_G32Fp16, 100, [128, 0, 8]),
            (Format::Q2_G64Fp16, 256, [64, 0, 8]),
            (Format::T2_G128Fp16, 130, [64, 0, 4]),
        ];
        for (f, k, per) in cases {
            assert_eq!(row_plane_bytes(f, k).unwrap(), per, "{f} K={k}");
            let n = 3;
            assert_eq!(
                crate::layouts::plane_sizes(f, Layout::RowSplitK128_V1, n, k).unwrap(),
                per.map(|b| b * n)
            );
        }
        assert_eq!(
            crate::layouts::plane_sizes(Format::Q4_G64Fp16, Layout::RowSplitK128_V1, 0, 64)
                .unwrap_err()
                .status(),
            Status::BadShape
        );
    }

    #[test]
    fn plane_bit_order_worked_examples() {
        // q4: [-8, 7, -1] -> nibbles 8, 7, f; earlier element in the low nibble.
        let p = pack1(Format::Q4_G64Fp16, &[-8, 7, -1], &[0x3c00]);
        assert_eq!(&p[0][..3], &[0x78, 0x0f, 0x00]);
        assert!(p[0][2..].iter().all(|&b| b == 0));
        assert!(p[1].is_empty());
        assert_eq!(p[2], [0x00, 0x3c, 0x00, 0x00]);
        // q5: [-16, 15, -1] -> words 0x10, 0x0f, 0x1f.
        let p = pack1(Format::Q5_G64Fp16, &[-16, 15, -1], &[0x3c00]);
        assert_eq!(&p[0][..2], &[0xf0, 0x0f]);
        assert_eq!(p[1][0], 0x05);
        assert_eq!((p[0].len(), p[1].len(), p[2].len()), (64, 16, 4));
        // q6: [-32, 31, -1, 5] -> words 0x20, 0x1f, 0x3f, 0x05; high pairs 2, 1, 3, 0.
        let p = pack1(Format::Q6_G64Fp16, &[-32, 31, -1, 5], &[0xb800]);
        assert_eq!(&p[0][..2], &[0xf0, 0x5f]);
        assert_eq!(p[1][0], 0x36);
        assert_eq!(&p[2][..2], &[0x00, 0xb8]);
        // q8: bytes are the two's-complement words.
        let p = pack1(Format::Q8_G32Fp16, &[-127, 127, 0, -1], &[0x0001]);
        assert_eq!(&p[0][..4], &[0x81, 0x7f, 0x00, 0xff]);
        assert_eq!(p[2].len(), 8);
        assert_eq!(&p[2][..4], &[0x01, 0x00, 0x00, 0x00]);
        // q2: offset words u = q + 1; padding is code 0 = word 0b01.
        let p = pack1(Format::Q2_G64Fp16, &[-1, 2, 0], &[0x8000]);
        assert_eq!(p[0][0], 0x5c);
        assert!(p[0][1..].iter().all(|&b| b == 0x55));
        assert_eq!(p[2], [0x00, 0x80, 0x00, 0x00]);
        // t2: [-1, 1, 0, -1] -> words 3, 1, 0, 3.
        let p = pack1(Format::T2_G128Fp16, &[-1, 1, 0, -1], &[0x3c00]);
        assert_eq!(p[0][0], 0xc7);
        assert!(p[0][1..].iter().all(|&b| b == 0));
    }

    #[test]
    fn round_trip_every_code_and_partial_k() {
        for f in [
            Format::Q2_G64Fp16,
            Format::Q4_G64Fp16,
            Format::Q5_G64Fp16,
            Format::Q6_G64Fp16,
            Format::Q8_G32Fp16,
            Format::T2_G128Fp16,
        ] {
            let s = Scheme::of(f).unwrap();
            for k in [1usize, 63, 64, 127, 128, 129, 300] {
                let rows = 3;
                let span = (s.qmax - s.qmin + 1) as usize;
                let codes: Vec<i8> = (0..rows * k)
                    .map(|i| (s.qmin + ((i * 7 + i / 5) % span) as i32) as i8)
                    .collect();
                let ng = s.groups(k);
                let scales: Vec<u16> = (0..rows * ng).map(|i| 0x3c00 + i as u16).collect();
                let sz = plane_sizes(f, rows, k).unwrap();
                let mut p = sz.map(|n| vec![0u8; n]);
                let [a, b, c] = &mut p;
                pack(f, rows, k, &codes, &scales, [a, b, c]).unwrap();
                let v = WeightView::new(f, Layout::RowSplitK128_V1, rows, k, [&p[0], &p[1], &p[2]])
                    .unwrap();
                let (c2, s2) = unpack(&v).unwrap();
                assert_eq!(c2, codes, "{f} K={k}");
                assert_eq!(s2, scales, "{f} K={k}");
                let mut out = vec![0f32; k];
                for r in 0..rows {
                    crate::decode::decode_row(&v, r as u64, &mut out).unwrap();
                    for (j, o) in out.iter().enumerate() {
                        let q = codes[r * k + j] as f32;
                        let sc = half::f16::from_bits(scales[r * ng + j / s.group]).to_f32();
                        assert_eq!(o.to_bits(), (sc * q).to_bits());
                    }
                }
            }
        }
    }

    #[test]
    fn portable_decode_equals_every_tier() {
        for f in [
            Format::Q2_G64Fp16,
            Format::Q4_G64Fp16,
            Format::Q5_G64Fp16,
            Format::Q6_G64Fp16,
            Format::Q8_G32Fp16,
            Format::T2_G128Fp16,
        ] {
            let s = Scheme::of(f).unwrap();
            let k = 777;
            let span = (s.qmax - s.qmin + 1) as usize;
            let codes: Vec<i8> = (0..k)
                .map(|i| (s.qmin + ((i * 31 + i / 3) % span) as i32) as i8)
                .collect();
            let scales: Vec<u16> = (0..s.groups(k))
                .map(|g| [0x3c00u16, 0xb555, 0x0001, 0x8001, 0x7bff][g % 5])
                .collect();
            let p = pack1(f, &codes, &scales);
            let v =
                WeightView::new(f, Layout::RowSplitK128_V1, 1, k, [&p[0], &p[1], &p[2]]).unwrap();
            let mut a = vec![0f32; k];
            decode_row(&v, 0, &mut a).unwrap();
            let kp = padded_k(k).unwrap();
            for isa in crate::isa::Isa::tested() {
                let mut b = vec![0f32; k];
                let (mut rc, mut rs) = (vec![0i8; kp], vec![0u16; kp / s.group]);
                let planes = row_planes(&v, 0);
                crate::isa::on_tier!(isa, || decode_row_impl(
                    &s, k, 0, planes, &mut rc, &mut rs, &mut b
                ))
                .unwrap();
                assert_eq!(
                    a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    b.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{f} {isa:?}"
                );
            }
        }
    }

    #[test]
    fn non_canonical_padding_is_refused() {
        let f = Format::Q4_G64Fp16;
        let mut p = pack1(f, &[1; 70], &[0x3c00, 0x3c00]);
        let view = |p: &[Vec<u8>; 3]| {
            let v =
                WeightView::new(f, Layout::RowSplitK128_V1, 1, 70, [&p[0], &p[1], &p[2]]).unwrap();
            validate(&v)
        };
        assert!(view(&p).is_ok());
        p[0][40] = 0x10; // column 81: padding of the partial group 1
        let e = view(&p).unwrap_err();
        assert_eq!(e.status(), Status::InvalidEncoding);
        assert!(e.to_string().contains("row 0, block 1"), "{e}");
        p[0][40] = 0;
        p[2][3] = 0x3c; // scale of group 1 is logical: fine
        assert!(view(&p).is_ok());
        let mut p = pack1(f, &[1; 60], &[0x3c00]);
        p[2][2] = 0x01; // padded group 1 must have scale +0
        let v = WeightView::new(f, Layout::RowSplitK128_V1, 1, 60, [&p[0], &p[1], &p[2]]).unwrap();
        let e = validate(&v).unwrap_err();
        assert!(e.to_string().contains("padding group 1"), "{e}");
        let mut out = [0f32; 60];
        assert_eq!(
            crate::decode::decode_row(&v, 0, &mut out)
                .unwrap_err()
                .status(),
            Status::InvalidEncoding
        );
        // Q2 padding is word 0b01; a zero byte there is a code -1.
        let mut p = pack1(Format::Q2_G64Fp16, &[0; 3], &[0x3c00]);
        p[0][10] = 0;
        let v = WeightView::new(
            Format::Q2_G64Fp16,
            Layout::RowSplitK128_V1,
            1,
            3,
            [&p[0], &p[1], &p[2]],
        )
        .unwrap();
        assert!(
            validate(&v)
                .unwrap_err()
                .to_string()
                .contains("padding column 40")
        );
    }

    #[test]
    fn illegal_stored_words_are_refused() {
        let mut p = pack1(Format::Q8_G32Fp16, &[0; 32], &[0x3c00]);
        p[0][5] = 0x80;
        let v = WeightView::new(
            Format::Q8_G32Fp16,
            Layout::RowSplitK128_V1,
            1,
            32,
            [&p[0], &p[1], &p[2]],
        )
        .unwrap();
        assert!(validate(&v).unwrap_err().to_string().contains("-128"));
        let mut p = pack1(Format::T2_G128Fp16, &[0; 5], &[0x3c00]);
        p[0][0] = 0b10;
        let v = WeightView::new(
            Format::T2_G128Fp16,
            Layout::RowSplitK128_V1,
            1,
            5,
            [&p[0], &p[1], &p[2]],
        )
        .unwrap();
        assert!(validate(&v).unwrap_err().to_string().contains("code -2"));
        // pack refuses illegal logical codes before writing anything.
        let sz = plane_sizes(Format::Q8_G32Fp16, 1, 2).unwrap();
        let mut q = sz.map(|n| vec![0xeeu8; n]);
        let [a, b, c] = &mut q;
        let e = pack(Format::Q8_G32Fp16, 1, 2, &[-128, 0], &[0x3c00], [a, b, c]).unwrap_err();
        assert_eq!(e.status(), Status::InvalidEncoding);
        assert!(q[0].iter().all(|&b| b == 0xee));
    }

    #[test]
    fn row_slices_and_gathers_are_byte_copies() {
        let f = Format::Q6_G64Fp16;
        let (rows, k) = (5, 200);
        let codes: Vec<i8> = (0..rows * k).map(|i| ((i * 13) % 64) as i8 - 32).collect();
        let scales: Vec<u16> = (0..rows * 4).map(|i| 0x3000 + i as u16).collect();
        let sz = plane_sizes(f, rows, k).unwrap();
        let mut p = sz.map(|n| vec![0u8; n]);
        let [a, b, c] = &mut p;
        pack(f, rows, k, &codes, &scales, [a, b, c]).unwrap();
        let v =
            WeightView::new(f, Layout::RowSplitK128_V1, rows, k, [&p[0], &p[1], &p[2]]).unwrap();
        let idx = [4u64, 0, 0, 2];
        let gs = plane_sizes(f, idx.len(), k).unwrap();
        let mut g = gs.map(|n| vec![0u8; n]);
        let [a, b, c] = &mut g;
        gather_rows(&v, &idx, [a, b, c]).unwrap();
        let gv = WeightView::new(
            f,
            Layout::RowSplitK128_V1,
            idx.len(),
            k,
            [&g[0], &g[1], &g[2]],
        )
        .unwrap();
        let (gc, gsc) = unpack(&gv).unwrap();
        for (j, &i) in idx.iter().enumerate() {
            let i = i as usize;
            assert_eq!(&gc[j * k..(j + 1) * k], &codes[i * k..(i + 1) * k]);
            assert_eq!(&gsc[j * 4..(j + 1) * 4], &scales[i * 4..(i + 1) * 4]);
        }
        // A consecutive row slice is the contiguous byte range of each plane.
        let per = row_plane_bytes(f, k).unwrap();
        let sl: [&[u8]; 3] = std::array::from_fn(|pl| &p[pl][per[pl]..per[pl] * 3]);
        let sv = WeightView::new(f, Layout::RowSplitK128_V1, 2, k, sl).unwrap();
        let (sc, _) = unpack(&sv).unwrap();
        assert_eq!(sc, &codes[k..3 * k]);
        let e = gather_rows(&v, &[5], [&mut [], &mut [], &mut []]).unwrap_err();
        assert_eq!(e.status(), Status::IndexOutOfRange);
    }
}
