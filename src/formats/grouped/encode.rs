//! The grouped encoders' driver: source widening, row parallelism, row_split_k128_v1
//! output, provenance. The arithmetic lives in [`super::absmax`] and [`super::search`].

use super::absmax::{self, GroupError};
use super::{Scheme, search};
use crate::error::{Error, Result, mul};
use crate::layouts::row_split::{pack_codes, pack_scales, padded_k, row_plane_bytes};
use crate::layouts::{MAX_PLANES, plane_name};
use crate::registry::{Format, Layout};
use rayon::prelude::*;

/// A dense row-major `[rows, cols]` source (native-endian host values).
#[derive(Clone, Copy, Debug)]
pub enum Source<'a> {
    /// binary32 values (used unchanged).
    F32(&'a [f32]),
    /// bfloat16 words (widened exactly to binary32).
    Bf16(&'a [u16]),
    /// binary16 words (widened exactly to binary32).
    F16(&'a [u16]),
}

impl Source<'_> {
    fn len(&self) -> usize {
        match self {
            Source::F32(v) => v.len(),
            Source::Bf16(v) | Source::F16(v) => v.len(),
        }
    }

    /// Widens `out.len()` values starting at `start` to binary32 (§7.1: finite bf16 and
    /// binary16 convert exactly); returns the offset of the first non-finite value.
    fn widen(&self, start: usize, out: &mut [f32]) -> Option<usize> {
        let n = out.len();
        match self {
            Source::F32(v) => out.copy_from_slice(&v[start..start + n]),
            Source::Bf16(v) => {
                for (o, &w) in out.iter_mut().zip(&v[start..start + n]) {
                    *o = f32::from_bits((w as u32) << 16);
                }
            }
            Source::F16(v) => {
                for (o, &w) in out.iter_mut().zip(&v[start..start + n]) {
                    *o = half::f16::from_bits(w).to_f32();
                }
            }
        }
        // Finite ⇔ exponent field not all ones.
        out.iter()
            .position(|v| v.to_bits() & 0x7f80_0000 == 0x7f80_0000)
    }
}

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
    /// Groups whose §7.2 scale needed the 0x0001 underflow rescue.
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
/// Rows are encoded in parallel (rayon) into temporaries; `planes` are written only when
/// every row succeeded, so on error they keep their previous contents. The result is
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
    src: Source<'_>,
    rows: usize,
    cols: usize,
    opts: &Options<'_>,
    planes: [&mut [u8]; MAX_PLANES],
) -> Result<Provenance> {
    let s = check_target(format)?;
    let sizes = crate::layouts::plane_sizes(format, Layout::RowSplitK128_V1, rows, cols)?;
    let n = mul(rows, cols, "rows × K")?;
    if src.len() != n {
        return Err(Error::SizeMismatch {
            plane: "source",
            expected: n,
            actual: src.len(),
        });
    }
    for (i, (p, &want)) in planes.iter().zip(&sizes).enumerate() {
        if p.len() != want {
            return Err(Error::SizeMismatch {
                plane: plane_name(Layout::RowSplitK128_V1, i),
                expected: want,
                actual: p.len(),
            });
        }
    }
    check_options(opts, cols)?;
    let mut tmp: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
    let per = row_plane_bytes(format, cols)?;
    let stats = {
        let [t0, t1, t2] = &mut tmp[..] else {
            unreachable!()
        };
        let rows_out: Vec<[&mut [u8]; 3]> = split_rows(t0, per[0], rows)
            .into_iter()
            .zip(split_rows(t1, per[1], rows))
            .zip(split_rows(t2, per[2], rows))
            .map(|((a, b), c)| [a, b, c])
            .collect();
        let kp = padded_k(cols)?;
        let results: Vec<Result<RowStats>> = rows_out
            .into_par_iter()
            .enumerate()
            .map_init(
                || Scratch::new(cols, kp),
                |scr, (r, out)| encode_row(&s, &src, r, cols, opts, scr, out),
            )
            .collect();
        let mut stats = Vec::with_capacity(rows);
        for r in results {
            stats.push(r?);
        }
        stats
    };
    for (p, t) in planes.into_iter().zip(&tmp) {
        p.copy_from_slice(t);
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

fn encode_row(
    s: &Scheme,
    src: &Source<'_>,
    r: usize,
    cols: usize,
    opts: &Options<'_>,
    scr: &mut Scratch,
    [lo, hi, sc]: [&mut [u8]; 3],
) -> Result<RowStats> {
    if let Some(c) = src.widen(r * cols, &mut scr.x) {
        return Err(Error::NonFiniteSource {
            row: r as u64,
            col: c as u64,
        });
    }
    let ng = s.groups(cols);
    let mut st = RowStats::default();
    let search = opts.method == Method::GroupedSearch;
    for g in 0..ng {
        let (a, b) = (g * s.group, ((g + 1) * s.group).min(cols));
        let x = &scr.x[a..b];
        let codes = &mut scr.codes[a..b];
        let mut scale = absmax::quantize_group(s, x, codes).map_err(|e| match e {
            GroupError::ScaleOverflow => Error::ScaleOverflow {
                row: r as u64,
                group: g as u64,
            },
        })?;
        match scale {
            0 => st.zero += 1,
            1 => st.rescued += 1,
            _ => {}
        }
        if search {
            let imp = opts.importance.map(|i| &i[a..b]);
            let res =
                search::search_group(s, x, imp, opts.negative_scales, scale, codes, &mut scr.tmp);
            if res.scale != scale || res.error < res.absmax_error {
                st.improved += 1;
            }
            scale = res.scale;
            st.absmax_error += res.absmax_error;
            st.error += res.error;
        }
        scr.scales[g] = scale;
    }
    scr.codes[cols..].fill(0);
    pack_codes(s, &scr.codes, lo, hi);
    pack_scales(&scr.scales[..ng], sc);
    Ok(st)
}
