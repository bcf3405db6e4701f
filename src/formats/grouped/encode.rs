//! The grouped encoders' driver: source widening, row parallelism, row_split_k128_v1
//! output, provenance. The arithmetic lives in [`super::absmax`] and [`super::search`].

use super::absmax::{self, GroupError};
use super::{Scheme, search};
use crate::error::{Error, Result, mul};
use crate::formats::float_source::FloatSource;
use crate::isa::Isa;
use crate::layouts::MAX_PLANES;
use crate::layouts::row_split::{pack_codes, pack_scales, padded_k, row_plane_bytes};
use crate::registry::{Format, Layout};
use crate::threads;

/// A conversion method (C: `NINFER_QUANTIZE_METHOD_*`, a `uint32_t`).
///
/// cbindgen:ignore
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `grouped_absmax` (§7.2): the canonical reference encoder.
    GroupedAbsmax = 0,
    /// `grouped_search` (§7.3).
    GroupedSearch = 1,
}

impl Method {
    /// The method with this number, or [`Error::InvalidArgument`].
    pub fn from_u32(v: u32) -> Result<Method> {
        match v {
            0 => Ok(Method::GroupedAbsmax),
            1 => Ok(Method::GroupedSearch),
            _ => Err(Error::InvalidArgument(format!(
                "unknown quantize method {v}"
            ))),
        }
    }

    /// The method's name: `grouped_absmax`, `grouped_search`.
    pub fn name(self) -> &'static str {
        match self {
            Method::GroupedAbsmax => "grouped_absmax",
            Method::GroupedSearch => "grouped_search",
        }
    }
}

/// Encoder options.
#[derive(Clone, Copy, Debug)]
pub struct Options<'a> {
    /// The method.
    pub method: Method,
    /// grouped_search only: one finite, non-negative weight per input column (K values);
    /// `None` weighs every column 1.
    pub importance: Option<&'a [f32]>,
    /// grouped_search only: let negative candidate scales compete.
    pub negative_scales: bool,
}

/// cbindgen:ignore
impl Options<'_> {
    /// grouped_absmax.
    pub const ABSMAX: Options<'static> = Options {
        method: Method::GroupedAbsmax,
        importance: None,
        negative_scales: false,
    };
}

/// What the encoder did, for the artifact's conversion provenance (§7.3, §8).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Provenance {
    /// The method used.
    pub method: Method,
    /// Whether negative scales could compete (grouped_search).
    pub negative_scales: bool,
    /// Whether an importance vector weighted the search.
    pub importance: bool,
    /// grouped_search's candidate-set version ([`search::PARAMETERS_VERSION`]); 0 for absmax.
    pub parameters_version: u32,
    /// Logical groups encoded (rows × ceil(K/G)).
    pub groups: u64,
    /// Groups whose source was all zero (+0 scale).
    pub zero_groups: u64,
    /// Groups whose §7.2 scale is 0x0001, the smallest subnormal: the underflow rescue, or
    /// a raw scale that rounded there itself (both mean the group sits at binary16's floor).
    pub rescued_groups: u64,
    /// Groups where grouped_search replaced the §7.2 result (0 for absmax).
    pub improved_groups: u64,
    /// Σ of the §7.2 results' weighted squared errors (grouped_search; 0 for absmax).
    pub absmax_error: f64,
    /// Σ of the chosen results' weighted squared errors (grouped_search; 0 for absmax).
    pub error: f64,
}

#[derive(Default, Clone, Copy)]
struct RowStats {
    zero: u64,
    rescued: u64,
    improved: u64,
    absmax_error: f64,
    error: f64,
}

/// Encodes a `rows × cols` source into the `row_split_k128_v1` planes of `format`.
///
/// Rows are encoded in parallel, on the library's threads (the default thread count:
/// `RAYON_NUM_THREADS`, else the logical CPUs; on the calling thread alone when no other
/// thread can be started). A first pass checks every row for the failures an
/// encoding can have; `planes` are written only after it passed, so on error they keep
/// their previous contents. The result is
/// identical for any thread count. Errors (the lowest failing row is reported; within a row
/// a non-finite value is reported before a scale overflow):
/// [`Error::Unsupported`] for a format grouped_absmax/grouped_search refuse (q2_g64_fp16,
/// t2_g128_fp16) or a non-grouped format; [`Error::BadShape`]; [`Error::SizeMismatch`] for a
/// source or plane of the wrong length; [`Error::InvalidArgument`] for an importance vector of
/// the wrong length, with a negative or non-finite weight, or given to grouped_absmax (as is
/// `negative_scales`); [`Error::NonFiniteSource`] (row, column);
/// [`Error::ScaleOverflow`] (row, group).
pub fn quantize(
    format: Format,
    src: FloatSource<'_>,
    rows: usize,
    cols: usize,
    opts: &Options<'_>,
    planes: [&mut [u8]; MAX_PLANES],
) -> Result<Provenance> {
    let s = check_target(format)?;
    // Shape errors first, as before: plane lengths are checked after the source's.
    crate::layouts::plane_sizes(format, Layout::RowSplitK128_V1, rows, cols)?;
    let n = mul(rows, cols, "rows × K")?;
    if src.len() != n {
        return Err(Error::SizeMismatch {
            unit: "values",
            plane: "source",
            expected: n,
            actual: src.len(),
        });
    }
    let lens = planes.each_ref().map(|p| p.len());
    crate::layouts::check_plane_lens(format, Layout::RowSplitK128_V1, rows, cols, lens)?;
    check_options(opts, cols)?;
    let per = row_plane_bytes(format, cols)?;
    let kp = padded_k(cols)?;
    let kernel = Isa::detect();
    // Pass 1: every failure an encoding can have (non-finite value, scale overflow) is
    // found before anything is written; the lowest failing row is reported.
    let first_error = threads::first_error(
        rows,
        || vec![0f32; cols],
        |buf, r| check_row(kernel, &s, &src, r, cols, buf).err(),
    );
    if let Some(e) = first_error {
        return Err(e);
    }
    // Pass 2: encode straight into the caller's planes.
    let [p0, p1, p2] = planes;
    let mut rows_out: Vec<[&mut [u8]; 3]> = split_rows(p0, per[0], rows)
        .into_iter()
        .zip(split_rows(p1, per[1], rows))
        .zip(split_rows(p2, per[2], rows))
        .map(|((a, b), c)| [a, b, c])
        .collect();
    let results: Vec<Result<RowStats>> = threads::map_slice(
        &mut rows_out,
        || Scratch::new(cols, kp),
        |scr, r, out| {
            let out = out.each_mut().map(|p| &mut **p);
            encode_row(kernel, &s, &src, r, cols, opts, scr, out)
        },
    );
    let mut stats = Vec::with_capacity(rows);
    for r in results {
        // Pass 1 proved every row encodable: an error here is a bug.
        stats.push(r.map_err(|e| Error::Internal(format!("row passed its check: {e}")))?);
    }
    let mut prov = Provenance {
        method: opts.method,
        negative_scales: opts.negative_scales,
        importance: opts.importance.is_some(),
        parameters_version: match opts.method {
            Method::GroupedAbsmax => 0,
            Method::GroupedSearch => search::PARAMETERS_VERSION,
        },
        groups: (rows * s.groups(cols)) as u64,
        zero_groups: 0,
        rescued_groups: 0,
        improved_groups: 0,
        absmax_error: 0.0,
        error: 0.0,
    };
    for st in stats {
        prov.zero_groups += st.zero;
        prov.rescued_groups += st.rescued;
        prov.improved_groups += st.improved;
        prov.absmax_error += st.absmax_error;
        prov.error += st.error;
    }
    Ok(prov)
}

/// The scheme of an encoder target, or [`Error::Unsupported`] (q2, t2, non-grouped).
fn check_target(format: Format) -> Result<Scheme> {
    if format.info().category != crate::Category::GroupedInt {
        return Err(Error::Unsupported(format!(
            "{format} is not a grouped signed-integer format: grouped_absmax and \
             grouped_search encode q4_g64_fp16, q5_g64_fp16, q6_g64_fp16 and q8_g32_fp16"
        )));
    }
    let s = Scheme::of(format)?;
    if s.encoder_qmax <= 0 {
        return Err(Error::Unsupported(format!(
            "grouped_absmax and grouped_search refuse the {format} target (spec §2, §7.2): \
             import its codes and scales instead"
        )));
    }
    Ok(s)
}

fn check_options(opts: &Options<'_>, cols: usize) -> Result<()> {
    if opts.method == Method::GroupedAbsmax && (opts.importance.is_some() || opts.negative_scales) {
        return Err(Error::InvalidArgument(
            "importance and negative_scales apply to grouped_search only".into(),
        ));
    }
    if let Some(imp) = opts.importance {
        if imp.len() != cols {
            return Err(Error::InvalidArgument(format!(
                "importance has {} weights, K = {cols} needed",
                imp.len()
            )));
        }
        if let Some((k, w)) = imp
            .iter()
            .enumerate()
            .find(|&(_, w)| !w.is_finite() || *w < 0.0)
        {
            return Err(Error::InvalidArgument(format!(
                "importance weight {k} is {w}: weights must be finite and non-negative"
            )));
        }
    }
    Ok(())
}

/// `rows` consecutive `per`-byte row slices of `p` (empty slices when `per` is 0).
fn split_rows(p: &mut [u8], per: usize, rows: usize) -> Vec<&mut [u8]> {
    if per == 0 {
        (0..rows).map(|_| <&mut [u8]>::default()).collect()
    } else {
        p.chunks_exact_mut(per).collect()
    }
}

/// Per-thread buffers.
struct Scratch {
    x: Vec<f32>,
    codes: Vec<i8>,
    scales: Vec<u16>,
    tmp: Vec<i8>,
}

impl Scratch {
    fn new(cols: usize, kp: usize) -> Scratch {
        Scratch {
            x: vec![0.0; cols],
            codes: vec![0; kp],
            scales: vec![0; cols.div_ceil(32)],
            tmp: vec![0; 128],
        }
    }
}

/// Encodes row `r` on tier `isa`. Every tier runs the same Rust row code (IEEE operations
/// in the same order, no contraction), compiled for its features, and its chunk kernel for
/// the leading whole chunks of 8 groups; the results are bit-identical. `isa` must be
/// available on this machine (the callers pass [`Isa::detect`] or a tested tier).
#[allow(clippy::too_many_arguments)]
fn encode_row(
    isa: Isa,
    s: &Scheme,
    src: &FloatSource<'_>,
    r: usize,
    cols: usize,
    opts: &Options<'_>,
    scr: &mut Scratch,
    out: [&mut [u8]; 3],
) -> Result<RowStats> {
    assert!(isa.available(), "{} is not available", isa.name());
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the machine runs the AVX-512 tier (asserted above).
        Isa::Avx512 => unsafe { encode_row_avx512(s, src, r, cols, opts, scr, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the machine runs the AVX2 tier (asserted above).
        Isa::Avx2 | Isa::AvxVnni => unsafe { encode_row_avx2(s, src, r, cols, opts, scr, out) },
        _ => encode_row_impl(s, src, r, cols, opts, scr, out, Chunk::None),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
unsafe fn encode_row_avx2(
    s: &Scheme,
    src: &FloatSource<'_>,
    r: usize,
    cols: usize,
    opts: &Options<'_>,
    scr: &mut Scratch,
    out: [&mut [u8]; 3],
) -> Result<RowStats> {
    encode_row_impl(s, src, r, cols, opts, scr, out, Chunk::Avx2)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
unsafe fn encode_row_avx512(
    s: &Scheme,
    src: &FloatSource<'_>,
    r: usize,
    cols: usize,
    opts: &Options<'_>,
    scr: &mut Scratch,
    out: [&mut [u8]; 3],
) -> Result<RowStats> {
    encode_row_impl(s, src, r, cols, opts, scr, out, Chunk::Avx512)
}

/// Which chunk kernel encodes a row's leading whole chunks of 8 groups.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// None: the scalar path encodes every group.
    None,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// `chunks`: the chunk kernel that may encode the leading groups (only one the machine
/// runs).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn encode_row_impl(
    s: &Scheme,
    src: &FloatSource<'_>,
    r: usize,
    cols: usize,
    opts: &Options<'_>,
    scr: &mut Scratch,
    [lo, hi, sc]: [&mut [u8]; 3],
    chunks: Chunk,
) -> Result<RowStats> {
    let Scratch {
        x: xbuf,
        codes: cbuf,
        scales,
        tmp,
    } = scr;
    let xr = src.row(r, cols, xbuf);
    let ng = s.groups(cols);
    let mut st = RowStats::default();
    let search = opts.method == Method::GroupedSearch;
    // Leading whole chunks of 8 groups go straight into the planes; the rest (and any
    // failing chunk, which the scalar loop reports) by the scalar path below.
    let (g0, zero, rescued) = match chunks {
        _ if search => (0, 0, 0),
        // SAFETY: `Chunk::Avx2` is only passed by `encode_row_avx2`, run when the machine
        // runs the AVX2 tier.
        #[cfg(target_arch = "x86_64")]
        Chunk::Avx2 => {
            let d = unsafe { absmax::avx2::encode_chunks(s, xr, lo, hi, sc) };
            (d.groups, d.zero, d.rescued)
        }
        // SAFETY: `Chunk::Avx512` is only passed by `encode_row_avx512`, run when the
        // machine runs the AVX-512 tier.
        #[cfg(target_arch = "x86_64")]
        Chunk::Avx512 => {
            let d = unsafe { absmax::avx512::encode_chunks(s, xr, lo, hi, sc) };
            (d.groups, d.zero, d.rescued)
        }
        Chunk::None => (0, 0, 0),
    };
    st.zero += zero;
    st.rescued += rescued;
    for (g, slot) in scales[..ng].iter_mut().enumerate().skip(g0) {
        let (a, b) = (g * s.group, ((g + 1) * s.group).min(cols));
        let x = &xr[a..b];
        let codes = &mut cbuf[a..b];
        let mut scale = match absmax::quantize_group(s, x, codes) {
            Ok(v) => v,
            Err(e) => return Err(row_error(xr, r, g, e)),
        };
        match scale {
            0 => st.zero += 1,
            1 => st.rescued += 1,
            _ => {}
        }
        if search {
            let imp = opts.importance.map(|i| &i[a..b]);
            let res = search::search_group(s, x, imp, opts.negative_scales, scale, codes, tmp);
            if res.scale != scale || res.error < res.absmax_error {
                st.improved += 1;
            }
            scale = res.scale;
            st.absmax_error += res.absmax_error;
            st.error += res.error;
        }
        *slot = scale;
    }
    cbuf[cols..].fill(0);
    // The first c0 columns (a multiple of 128) are packed already: c0 / 8 times the field
    // widths (a plane row holds Kpad / 8 times its field width in bytes).
    let c0 = g0 * s.group;
    let eighths = cbuf.len() / 8;
    let (wl, wh) = match eighths {
        0 => (0, 0),
        e => (lo.len() / e, hi.len() / e),
    };
    pack_codes(
        s,
        &cbuf[c0..],
        &mut lo[c0 / 8 * wl..],
        &mut hi[c0 / 8 * wh..],
    );
    pack_scales(&scales[g0..ng], &mut sc[g0 * 2..]);
    Ok(st)
}

/// Pass 1 of [`quantize`]: whether row `r` can be encoded (finite values, finite scales).
///
/// Scale overflow is monotone in a group's amax, so one integer max over the row decides
/// both conditions; only a failing row is examined group by group.
fn check_row(
    isa: Isa,
    s: &Scheme,
    src: &FloatSource<'_>,
    r: usize,
    cols: usize,
    buf: &mut [f32],
) -> Result<()> {
    if !absmax::subnormals_preserved() {
        return Err(Error::Unsupported(
            "this thread flushes subnormals to zero (FTZ/DAZ): the grouped encoders need \
             the default IEEE environment (spec §7.2)"
                .into(),
        ));
    }
    let xr = src.row(r, cols, buf);
    let m = match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the callers pass a tier the machine runs.
        Isa::Avx512 => unsafe { amax_bits_avx512(xr) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the callers pass a tier the machine runs.
        Isa::Avx2 | Isa::AvxVnni => unsafe { amax_bits_avx2(xr) },
        _ => absmax::amax_bits(xr),
    };
    let ok = m <= 0x7f7f_ffff && (m == 0 || absmax::scale_for_amax(s, f32::from_bits(m)).is_ok());
    if ok {
        return Ok(());
    }
    for (g, x) in xr.chunks(s.group).enumerate() {
        let m = absmax::amax_bits(x);
        let e = if m > 0x7f7f_ffff {
            GroupError::NonFinite
        } else if m != 0 && absmax::scale_for_amax(s, f32::from_bits(m)).is_err() {
            GroupError::ScaleOverflow
        } else {
            continue;
        };
        return Err(row_error(xr, r, g, e));
    }
    Err(Error::Internal(
        "row check disagrees with its groups".into(),
    ))
}

/// [`absmax::amax_bits`] compiled for the AVX2 tier.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn amax_bits_avx2(x: &[f32]) -> u32 {
    absmax::amax_bits(x)
}

/// [`absmax::amax_bits`] compiled for the AVX-512 tier (512-bit integer maxima).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c,avx512f,avx512bw,avx512vl")]
unsafe fn amax_bits_avx512(x: &[f32]) -> u32 {
    absmax::amax_bits(x)
}

/// The error of a row whose group `g` failed: a non-finite value anywhere in the row is
/// reported first (its lowest column), else the scale overflow of group `g`.
#[cold]
fn row_error(x: &[f32], r: usize, g: usize, _e: GroupError) -> Error {
    match x.iter().position(|v| !v.is_finite()) {
        Some(c) => Error::NonFiniteSource {
            row: r as u64,
            col: c as u64,
        },
        None => Error::ScaleOverflow {
            row: r as u64,
            group: g as u64,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Groups built to hit every branch of the AVX2 chunk kernel: magnitudes across the
    /// whole binary32 range (binary16 subnormal scales, the 0x0001 rescue, scale overflow
    /// near 65504 · qmax), all-zero groups of ±0, exact ties (power-of-two scales, values
    /// (k + 1/2) · scale), and rows with a NaN or an infinity in some chunk. Every row is
    /// encoded on every tier; planes, statistics and errors must agree with the scalar tier.
    #[test]
    fn chunk_kernel_matches_portable_on_edge_groups_every_tier() {
        let tiers = Isa::tested();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let (mut compared, mut failed) = (0usize, 0usize);
        for f in [
            Format::Q4_G64Fp16,
            Format::Q5_G64Fp16,
            Format::Q6_G64Fp16,
            Format::Q8_G32Fp16,
        ] {
            let s = Scheme::of(f).unwrap();
            let qm = s.encoder_qmax as f32;
            for cols in [8 * s.group, 16 * s.group + 40, 24 * s.group] {
                let rows = 48;
                let mut x = vec![0f32; rows * cols];
                for (r, row) in x.chunks_mut(cols).enumerate() {
                    for grp in row.chunks_mut(s.group) {
                        let kind = match next() % 10 {
                            5 if next() % 4 != 0 => 6,
                            k => k,
                        };
                        for v in grp.iter_mut() {
                            let h = next();
                            let sign = if h & 1 == 1 { -1.0 } else { 1.0 };
                            let u = (h >> 11) as f32 / (1u64 << 53) as f32;
                            *v = sign
                                * match kind {
                                    0 => 0.0,
                                    // Any exponent from subnormal to 2^15.
                                    1 => f32::from_bits((h >> 32) as u32 % 0x4700_0000),
                                    // Rescue and binary16-subnormal scales.
                                    2 => u * qm * 2f32.powi(-(24 + (h % 8) as i32)),
                                    3 => u * qm * 2f32.powi(-14 - (h % 12) as i32),
                                    // Ties: power-of-two scale, half-integral quotients.
                                    4 => ((h % (2 * qm as u64 + 1)) as f32 * 0.5) * 2f32.powi(-3),
                                    // Around the overflow boundary.
                                    5 => (65504.0 + 32.0 * u) * qm,
                                    _ => (u - 0.5) * 2f32.powi((h % 40) as i32 - 20),
                                };
                        }
                        if kind == 4 {
                            grp[0] = qm * 2f32.powi(-3); // amax = qmax · 2^-3: scale 2^-3
                        }
                    }
                    match r % 16 {
                        7 => row[(next() as usize) % cols] = f32::NAN,
                        11 => row[(next() as usize) % cols] = f32::NEG_INFINITY,
                        _ => {}
                    }
                }
                let per = row_plane_bytes(f, cols).unwrap();
                let kp = padded_k(cols).unwrap();
                for r in 0..rows {
                    let mut res = Vec::new();
                    for &kern in &tiers {
                        let mut scr = Scratch::new(cols, kp);
                        let mut p = per.map(|n| vec![0xa5u8; n]);
                        let [a, b, c] = &mut p;
                        let st = encode_row(
                            kern,
                            &s,
                            &FloatSource::F32(&x),
                            r,
                            cols,
                            &Options::ABSMAX,
                            &mut scr,
                            [a, b, c],
                        )
                        .map(|st| (st.zero, st.rescued));
                        // A failing row's partial output is never used (pass 1 refuses
                        // it first): only its error is compared.
                        res.push((st.clone(), st.map(|_| p)));
                    }
                    for (t, other) in tiers.iter().zip(&res).skip(1) {
                        assert_eq!(&res[0], other, "{f} K = {cols} row {r}: {t:?}");
                    }
                    compared += 1;
                    failed += usize::from(res[0].0.is_err());
                }
            }
        }
        eprintln!("{compared} rows compared (scalar vs {tiers:?}), {failed} refused");
        assert!(failed > 0 && failed < compared);
    }

    #[test]
    fn every_tier_agrees_with_scalar() {
        let tiers = Isa::tested();
        let cols = 1000;
        let rows = 8;
        // Values spanning many binades, ties, zeros, negatives.
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| {
                let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
                let v = (h as f32 / 16_777_216.0 - 0.5) * 2f32.powi((i / 64 % 40) as i32 - 30);
                if i % 17 == 0 {
                    (i % 15) as f32 - 7.5
                } else {
                    v
                }
            })
            .collect();
        for f in [
            Format::Q4_G64Fp16,
            Format::Q5_G64Fp16,
            Format::Q6_G64Fp16,
            Format::Q8_G32Fp16,
        ] {
            let s = Scheme::of(f).unwrap();
            let per = row_plane_bytes(f, cols).unwrap();
            let kp = padded_k(cols).unwrap();
            for opts in [
                Options::ABSMAX,
                Options {
                    method: Method::GroupedSearch,
                    importance: None,
                    negative_scales: true,
                },
            ] {
                let mut outs = Vec::new();
                for &kern in &tiers {
                    let mut scr = Scratch::new(cols, kp);
                    let mut p = per.map(|n| vec![0u8; n * rows]);
                    for r in 0..rows {
                        let [a, b, c] = &mut p;
                        let o = [
                            &mut a[r * per[0]..(r + 1) * per[0]],
                            &mut b[r * per[1]..(r + 1) * per[1]],
                            &mut c[r * per[2]..(r + 1) * per[2]],
                        ];
                        encode_row(kern, &s, &FloatSource::F32(&x), r, cols, &opts, &mut scr, o)
                            .unwrap();
                    }
                    outs.push(p);
                }
                for (t, other) in tiers.iter().zip(&outs).skip(1) {
                    assert_eq!(&outs[0], other, "{f} {t:?} vs scalar");
                }
            }
        }
    }

    /// Single-thread throughput of the encoders on every tier (MB/s of f32 source, best of
    /// 5), for the record: `RAYON_NUM_THREADS=1 cargo test --release --lib
    /// encoder_tier_throughput -- --ignored --nocapture` (the fp8 and nvfp4 encoders run on
    /// the library's default thread count, which that variable sets).
    #[test]
    #[ignore]
    fn encoder_tier_throughput() {
        use crate::formats::{fp8_row, nvfp4};
        let (rows, cols) = (1024, 4096);
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let x: Vec<f32> = (0..rows * cols)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
            })
            .collect();
        eprintln!("threads: {}", crate::threads::default_threads());
        let mb = (rows * cols * 4) as f64 / 1e6;
        let best = |f: &mut dyn FnMut()| {
            (0..5)
                .map(|_| {
                    let t = std::time::Instant::now();
                    f();
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        for isa in Isa::tested() {
            let mut line = format!("{:>8}:", isa.name());
            for f in [Format::Q4_G64Fp16, Format::Q8_G32Fp16] {
                let s = Scheme::of(f).unwrap();
                let per = row_plane_bytes(f, cols).unwrap();
                let mut scr = Scratch::new(cols, padded_k(cols).unwrap());
                let mut p = per.map(|n| vec![0u8; n]);
                let t = best(&mut || {
                    for r in 0..rows {
                        let [a, b, c] = &mut p;
                        let src = FloatSource::F32(&x);
                        check_row(isa, &s, &src, r, cols, &mut scr.x).unwrap();
                        encode_row(
                            isa,
                            &s,
                            &src,
                            r,
                            cols,
                            &Options::ABSMAX,
                            &mut scr,
                            [a, b, c],
                        )
                        .unwrap();
                    }
                });
                line += &format!("  {f} {:6.0} MB/s", mb / t);
            }
            let fmt = Format::Fp8E4m3fnRowBf16;
            let lens = crate::layouts::plane_sizes(fmt, fmt.info().layout, rows, cols).unwrap();
            let mut p = [vec![0u8; lens[0]], vec![0u8; lens[1]]];
            let t = best(&mut || {
                let [a, b] = &mut p;
                let src = FloatSource::F32(&x);
                fp8_row::fp8_row_maxabs_on(isa, fmt, src, rows, cols, [a, b]).unwrap();
            });
            line += &format!("  fp8_row_maxabs {:6.0} MB/s", mb / t);
            let fmt = Format::Nvfp4;
            let lens = crate::layouts::plane_sizes(fmt, fmt.info().layout, rows, cols).unwrap();
            let mut p = lens.map(|n| vec![0u8; n]);
            let t = best(&mut || {
                let [a, b, c] = &mut p;
                let src = FloatSource::F32(&x);
                nvfp4::nvfp4_quantize_on(isa, src, rows, cols, 1, [a, b, c]).unwrap();
            });
            line += &format!("  nvfp4_quantize {:6.0} MB/s", mb / t);
            eprintln!("{line}");
        }
    }
}
