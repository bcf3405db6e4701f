//! `ninfer quantize IN --format FMT --out OUT.safetensors`: encodes every selected 2-D
//! F32/BF16/F16 tensor of a safetensors or GGUF file with the library's encoder for FMT and
//! writes the planes (docs/safetensors.md), with a per-tensor error report.
//!
//! Everything else is copied through unchanged: tensors not selected by `--tensors`,
//! tensors that are not 2-D or not F32/BF16/F16, and tensors the encoder refuses (reported
//! with the library's status and message; the exit status is then 1). A GGUF tensor keeps
//! its name; its shape is GGUF's `ne` reversed (`[rows, K]`); GGUF blocks of a registered
//! gguf_* format are copied as that format's `gguf_blocks_v1` tensor. GGUF metadata is not
//! carried (safetensors metadata holds strings only).

use crate::alloc::zeroed;
use crate::imatrix::Imatrix;
use crate::input::{Item, Source};
use crate::st::{self, Descriptor, Writer};
use crate::table::{self, count};
use anyhow::{Result, bail};
use ninfer::formats::float_source::FloatSource;
use ninfer::formats::grouped::{self, Method, Options};
use ninfer::formats::{fp8_row, nvfp4};
use ninfer::{Category, Format, WeightView, layouts};
use rayon::prelude::*;
use safetensors::Dtype;
use std::path::Path;
use std::time::Instant;

/// `--method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// grouped_absmax (grouped formats); fp8_row_maxabs and the nvfp4 quantizer are
    /// absmax-style too and are used with this default.
    Absmax,
    /// grouped_search (grouped formats only).
    Search,
}

/// The grouped_search parameters given on the command line.
#[derive(Debug, Default)]
pub struct SearchArgs {
    /// `--negative-scales`: negative candidate scales compete (spec §7.3).
    pub negative_scales: bool,
    /// `--imatrix`: a llama.cpp importance matrix; a weight with an entry of its name is
    /// searched with that entry's per-input-channel importance.
    pub imatrix: Option<Imatrix>,
}

/// The encoder for a target format, or why the target is refused.
pub fn check_target(format: Format, method: MethodArg, search: &SearchArgs) -> Result<()> {
    if search.negative_scales && method != MethodArg::Search {
        bail!("--negative-scales is a grouped_search parameter: it needs --method search");
    }
    if search.imatrix.is_some() && method != MethodArg::Search {
        bail!("--imatrix weights grouped_search's error: it needs --method search");
    }
    let info = format.info();
    let ok = match info.category {
        Category::GroupedInt => info.qmax > 0,
        Category::RowScaledFloat | Category::BlockScaledFloat => {
            if method == MethodArg::Search {
                bail!(
                    "--method search is grouped_search, for q4_g64_fp16, q5_g64_fp16, \
                     q6_g64_fp16 and q8_g32_fp16 only; {format} has one encoder \
                     (use the default --method absmax)"
                );
            }
            true
        }
        _ => false,
    };
    if !ok {
        bail!(
            "{format} cannot be a quantize target: {}. Targets: q4_g64_fp16, q5_g64_fp16, \
             q6_g64_fp16, q8_g32_fp16 (grouped_absmax / grouped_search), \
             fp8_e4m3fn_row_bf16, fp8_e4m3fn_row_fp16 (fp8_row_maxabs), nvfp4",
            match info.category {
                Category::GroupedInt =>
                    "the reference encoders refuse it (spec §2, §7.2); import its codes and scales instead",
                Category::GgufBlock =>
                    "gguf_* formats are GGUF blocks kept byte for byte, not made here",
                _ => "direct formats are stored as plain safetensors data",
            }
        );
    }
    Ok(())
}

/// Checks `--imatrix` against the matrices that will be searched, before anything is
/// written: an entry of a matrix's name that does not fit it (K, an expert bank) is an
/// error (exit 2); a file none of whose entries names one of them (made for another
/// model?) is reported on stderr and gives `false` (exit 1).
fn check_imatrix(m: &Imatrix, items: &[Item<'_>], filter: Option<&str>) -> Result<bool> {
    let mut matched = 0usize;
    let mut misfits = Vec::new();
    for item in items {
        let Item::Plain(p) = item else { continue };
        let (&[_, cols], true, true) = (
            p.shape.as_slice(),
            filter.is_none_or(|f| p.name.contains(f)),
            matches!(p.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16),
        ) else {
            continue;
        };
        if m.entries.contains_key(&p.name) {
            matched += 1;
            if let Err(why) = m.importance(&p.name, cols) {
                misfits.push(why);
            }
        }
    }
    if !misfits.is_empty() {
        bail!(
            "--imatrix {}: {} (nothing written)",
            m.path,
            misfits.join("; ")
        );
    }
    if matched == 0 {
        eprintln!(
            "ninfer: none of the {} of {} matched a tensor of the input (a 2-D F32/BF16/F16 \
             matrix{} that would be searched); was it made for another model? Nothing written.",
            table::counted(m.entries.len() as u64, "entry"),
            m.path,
            if filter.is_some() {
                " selected by --tensors"
            } else {
                ""
            }
        );
        return Ok(false);
    }
    Ok(true)
}

/// The planes and provenance of one encoded tensor, or the library's refusal.
fn encode(
    format: Format,
    method: MethodArg,
    search: &SearchArgs,
    (importance, uniform_entry): (Option<(&str, &[f32])>, Option<&str>),
    dtype: Dtype,
    bytes: &[u8],
    (rows, cols): (usize, usize),
) -> Result<([Vec<u8>; 3], String), ninfer::Error> {
    let sizes = layouts::plane_sizes(format, format.info().layout, rows, cols)?;
    let mut planes = [
        zeroed(sizes[0], "plane 0")?,
        zeroed(sizes[1], "plane 1")?,
        zeroed(sizes[2], "plane 2")?,
    ];
    // The planes' words are copied out of the (possibly unaligned) file bytes first.
    let (f32s, u16s): (Vec<f32>, Vec<u16>) = match dtype {
        Dtype::F32 => (st::widen(dtype, bytes).unwrap_or(Ok(vec![]))?, vec![]),
        _ => (
            vec![],
            st::words(bytes, "the 16-bit words", u16::from_le_bytes)?,
        ),
    };
    let fsrc = match dtype {
        Dtype::F32 => FloatSource::F32(&f32s),
        Dtype::BF16 => FloatSource::Bf16(&u16s),
        _ => FloatSource::F16(&u16s),
    };
    let src_name = st::dtype_name(dtype);
    let prov = match format.info().category {
        Category::GroupedInt => {
            let opts = Options {
                method: match method {
                    MethodArg::Absmax => Method::GroupedAbsmax,
                    MethodArg::Search => Method::GroupedSearch,
                },
                importance: importance.map(|(_, v)| v),
                negative_scales: search.negative_scales,
            };
            let [p0, p1, p2] = &mut planes;
            let p = grouped::quantize(format, fsrc, rows, cols, &opts, [p0, p1, p2])?;
            let source = match (importance, &search.imatrix) {
                (Some((entry, _)), Some(m)) => {
                    format!(
                        ";imatrix={};imatrix_entry={}",
                        st::provenance_value(&m.path),
                        st::provenance_value(entry)
                    )
                }
                // An entry whose counts are all 0 measured nothing: searched unweighted
                // (importance=false), the entry named as such.
                (None, Some(m)) => match uniform_entry {
                    Some(entry) => {
                        format!(
                            ";imatrix={};imatrix_entry_uniform={}",
                            st::provenance_value(&m.path),
                            st::provenance_value(entry)
                        )
                    }
                    None => String::new(),
                },
                _ => String::new(),
            };
            format!(
                "method={};parameters_version={};negative_scales={};importance={}{source};source_dtype={src_name}",
                p.method.name(),
                p.parameters_version,
                p.negative_scales,
                p.importance
            )
        }
        Category::RowScaledFloat => {
            let [p0, p1, _] = &mut planes;
            fp8_row::fp8_row_maxabs(format, fsrc, rows, cols, [p0, p1])?;
            format!("method=fp8_row_maxabs;source_dtype={src_name}")
        }
        _ => {
            let [p0, p1, p2] = &mut planes;
            *p2 = vec![0u8; 4];
            nvfp4::nvfp4_quantize(fsrc, rows, cols, 1, [p0, p1, p2])?;
            format!("method=nvfp4_quantize;sources=1;source_dtype={src_name}")
        }
    };
    Ok((planes, prov))
}

/// Error of the decoded planes against the source: (max |d - x|, RMS(d - x), RMS(x)).
pub fn errors(view: &WeightView<'_>, src: &[f32]) -> Result<(f64, f64, f64), ninfer::Error> {
    let k = view.cols();
    let per_row: Vec<Result<(f64, f64, f64), ninfer::Error>> = src
        .par_chunks(k)
        .enumerate()
        .map_init(
            || vec![0f32; k],
            |buf, (r, x)| {
                ninfer::decode::decode_row(view, r as u64, buf)?;
                let mut m = 0f64;
                let (mut se, mut sx) = (0f64, 0f64);
                for (&d, &x) in buf.iter().zip(x) {
                    let e = (d as f64 - x as f64).abs();
                    m = m.max(e);
                    se += e * e;
                    sx += x as f64 * x as f64;
                }
                Ok((m, se, sx))
            },
        )
        .collect();
    let (mut m, mut se, mut sx) = (0f64, 0f64, 0f64);
    for r in per_row {
        let (a, b, c) = r?;
        m = m.max(a);
        se += b;
        sx += c;
    }
    let n = src.len() as f64;
    Ok((m, (se / n).sqrt(), (sx / n).sqrt()))
}

/// The importance-weighted squared error of decoded planes against the source, spec
/// §7.3's `E = Σ_k imp[k] · (x[k] − ŵ[k])²` summed over every group: each group in
/// binary64 as four lane sums (element k of the group into lane k mod 4, in increasing k)
/// combined as `(L0 + L1) + (L2 + L3)`, exactly as grouped_search evaluates a candidate;
/// then groups in increasing k and rows in increasing order. Because grouped_search keeps
/// the §7.2 result unless a candidate's group error is strictly smaller and rounded
/// addition is monotone, the total of a search with `imp` never exceeds the total of
/// grouped_absmax's planes under the same `imp`.
pub fn weighted_error(
    view: &WeightView<'_>,
    src: &[f32],
    imp: &[f32],
    group: usize,
) -> Result<f64, ninfer::Error> {
    let k = view.cols();
    let per_row: Vec<Result<f64, ninfer::Error>> = src
        .par_chunks(k)
        .enumerate()
        .map_init(
            || vec![0f32; k],
            |buf, (r, x)| {
                ninfer::decode::decode_row(view, r as u64, buf)?;
                let mut row = 0f64;
                for start in (0..k).step_by(group.max(1)) {
                    let end = (start + group).min(k);
                    let mut lanes = [0f64; 4];
                    for i in start..end {
                        let d = x[i] as f64 - buf[i] as f64;
                        lanes[(i - start) % 4] += imp[i] as f64 * d * d;
                    }
                    row += (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
                }
                Ok(row)
            },
        )
        .collect();
    let mut total = 0f64;
    for r in per_row {
        total += r?;
    }
    Ok(total)
}

/// The weighted error (see [`weighted_error`]) of `format`'s encoding of a source by
/// `method` without the importance vector steering it (grouped_search with
/// `negative_scales` as given; grouped_absmax ignores it), measured with `imp`.
#[allow(clippy::too_many_arguments)]
fn weighted_error_of(
    format: Format,
    method: MethodArg,
    negative_scales: bool,
    imp: &[f32],
    dtype: Dtype,
    bytes: &[u8],
    src: &[f32],
    (rows, cols): (usize, usize),
) -> Result<f64, ninfer::Error> {
    let plain = SearchArgs {
        negative_scales: negative_scales && method == MethodArg::Search,
        imatrix: None,
    };
    let (planes, _) = encode(
        format,
        method,
        &plain,
        (None, None),
        dtype,
        bytes,
        (rows, cols),
    )?;
    let view = WeightView::new(
        format,
        format.info().layout,
        rows,
        cols,
        [&planes[0], &planes[1], &planes[2]],
    )?;
    weighted_error(&view, src, imp, format.info().block_values as usize)
}

/// Returns Ok(false) when a selected tensor was refused or nothing was encoded.
pub fn run(
    input: &Path,
    format: Format,
    method: MethodArg,
    search: &SearchArgs,
    out: &Path,
    filter: Option<&str>,
) -> Result<bool> {
    check_target(format, method, search)?;
    let source = Source::open(input)?;
    crate::input::check_out(input, out)?;
    let items = source.items()?;
    if let Some(m) = &search.imatrix
        && !check_imatrix(m, &items, filter)?
    {
        return Ok(false);
    }
    if let Some(Item::Ternary {
        name, ggml_type, ..
    }) = items.iter().find(|i| matches!(i, Item::Ternary { .. }))
    {
        bail!(
            "{name} is a ternary GGUF tensor ({}): `ninfer import` moves TQ1_0/TQ2_0 \
             tensors into t2_g128_fp16 without rounding (nothing written)",
            ninfer::registry::ggml_type_name(*ggml_type).unwrap_or("?")
        );
    }
    rayon::broadcast(|_| ());
    let start = Instant::now();
    let mut w = Writer::default();
    if let Source::St(file) = &source {
        for (k, v) in &file.metadata {
            if k != st::FILE_KEY {
                w.meta(k.clone(), v.clone())?;
            }
        }
    }
    let mut rows_out: Vec<Vec<String>> = Vec::new();
    let mut refusals: Vec<String> = Vec::new();
    let mut unweighted: Vec<String> = Vec::new();
    // Per weighted tensor: name, E of absmax, of search without and with importance.
    let mut gains: Vec<(String, f64, f64, f64)> = Vec::new();
    let mut uniform: Vec<String> = Vec::new();
    let mut encoded = 0usize;
    let (mut all_se, mut all_sx, mut all_n) = (0f64, 0f64, 0f64);
    let mut encode_secs = 0f64;
    let mut encoded_bytes = 0usize;
    for item in items {
        let p = match item {
            Item::Plain(p) => p,
            Item::Copied { name, desc, planes } => {
                // Already encoded: copied through with its descriptor.
                let names = layouts::plane_names(desc.layout);
                for (i, plane) in planes.iter().enumerate() {
                    if i < names.len() && !(plane.is_empty() && names[i] != "divisors") {
                        w.plain(
                            &format!("{name}.{}", names[i]),
                            Dtype::U8,
                            &[plane.len()],
                            plane,
                        )?;
                    }
                }
                rows_out.push(vec![
                    name.clone(),
                    desc.shape_text(),
                    desc.format.to_string(),
                    "copied (already encoded)".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            }
            // Refused before the loop.
            Item::Ternary { .. } => continue,
            Item::GgufBlocks {
                name,
                desc,
                blocks,
                shape,
            } => {
                // GGUF blocks of a registered gguf_* format: kept byte for byte (spec §2
                // import_encoded), described as that format's gguf_blocks_v1 tensor.
                let note = match shape.len() {
                    0..=2 => "copied (GGUF blocks)".to_owned(),
                    _ => format!("copied (GGUF blocks, {shape:?} as [N, K])"),
                };
                w.encoded(
                    &name,
                    desc,
                    [blocks.to_vec(), vec![], vec![]],
                    format!(
                        "method=import_encoded;scheme=gguf;source={}",
                        st::provenance_value(&name)
                    ),
                )?;
                rows_out.push(vec![
                    name.clone(),
                    desc.shape_text(),
                    desc.format.to_string(),
                    note,
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ]);
                continue;
            }
        };
        let data = p.data;
        let shape_text = format!("{:?}", p.shape);
        let mut copy = |why: String, rows_out: &mut Vec<Vec<String>>| -> Result<()> {
            w.plain(&p.name, p.dtype, &p.shape, data)?;
            rows_out.push(vec![
                p.name.clone(),
                shape_text.clone(),
                st::dtype_name(p.dtype),
                why,
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            Ok(())
        };
        let selected = filter.is_none_or(|f| p.name.contains(f));
        let float = matches!(p.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16);
        if !selected {
            copy("copied (not selected)".into(), &mut rows_out)?;
            continue;
        }
        if !float {
            copy(
                format!("copied ({} is not F32/BF16/F16)", st::dtype_name(p.dtype)),
                &mut rows_out,
            )?;
            continue;
        }
        let &[rows, cols] = p.shape.as_slice() else {
            copy(
                format!("copied ({}-D, not a [N, K] matrix)", p.shape.len()),
                &mut rows_out,
            )?;
            continue;
        };
        let importance = match search.imatrix.as_ref().map(|m| m.importance(&p.name, cols)) {
            None | Some(Ok(None)) => None,
            Some(Ok(Some(v))) => Some((p.name.as_str(), v)),
            Some(Err(why)) => {
                refusals.push(format!("  {}  INVALID_ARGUMENT — {why}", p.name));
                copy("REFUSED (imatrix), copied".into(), &mut rows_out)?;
                continue;
            }
        };
        if search.imatrix.is_some()
            && importance.is_none()
            && !search
                .imatrix
                .as_ref()
                .is_some_and(|m| m.entries.contains_key(&p.name))
        {
            unweighted.push(p.name.clone());
        }
        let t0 = Instant::now();
        let uniform_entry = search
            .imatrix
            .as_ref()
            .and_then(|m| m.entries.get(&p.name))
            .filter(|e| e.uniform)
            .map(|_| p.name.as_str());
        if uniform_entry.is_some() {
            uniform.push(p.name.clone());
        }
        let res = encode(
            format,
            method,
            search,
            (importance, uniform_entry),
            p.dtype,
            data,
            (rows, cols),
        );
        let secs = t0.elapsed().as_secs_f64();
        let (planes, prov) = match res {
            Ok(x) => x,
            Err(err) => {
                let status = err.status().name();
                refusals.push(format!("  {}  {status} — {err}", p.name));
                copy(format!("REFUSED {status}, copied"), &mut rows_out)?;
                continue;
            }
        };
        encode_secs += secs;
        let desc = Descriptor {
            format,
            layout: format.info().layout,
            rows,
            cols,
        };
        let bytes: usize = planes.iter().map(Vec::len).sum();
        let src = st::widen(p.dtype, data).expect("float dtype")?;
        let view = WeightView::new(
            format,
            desc.layout,
            rows,
            cols,
            [&planes[0], &planes[1], &planes[2]],
        )?;
        ninfer::validate::validate(&view)
            .map_err(|e| anyhow::anyhow!("{}: the encoder's output is invalid: {e}", p.name))?;
        let (max, rms, rms_src) = errors(&view, &src)?;
        if let (Some((_, imp)), Category::GroupedInt) = (importance, format.info().category) {
            // What the importance bought: the same weighted error for grouped_absmax's and
            // an unweighted search's planes of this tensor.
            let g = format.info().block_values as usize;
            let with = weighted_error(&view, &src, imp, g)?;
            let of = |m| {
                weighted_error_of(
                    format,
                    m,
                    search.negative_scales,
                    imp,
                    p.dtype,
                    data,
                    &src,
                    (rows, cols),
                )
            };
            gains.push((
                p.name.clone(),
                of(MethodArg::Absmax)?,
                of(MethodArg::Search)?,
                with,
            ));
        }
        let n = (rows * cols) as f64;
        all_se += rms * rms * n;
        all_sx += rms_src * rms_src * n;
        all_n += n;
        encoded += 1;
        encoded_bytes += bytes;
        rows_out.push(vec![
            p.name.clone(),
            shape_text,
            st::dtype_name(p.dtype),
            "encoded".into(),
            format!("{:.4}", bytes as f64 * 8.0 / n),
            format!("{max:.3e}"),
            format!("{rms:.3e}"),
            if rms_src > 0.0 {
                format!("{:.4}", rms / rms_src)
            } else {
                "-".into()
            },
            format!("{:.1}", secs * 1e3),
        ]);
        w.encoded(&p.name, desc, planes, prov)?;
    }
    outln!(
        "quantize {} → {} as {format} ({})",
        input.display(),
        out.display(),
        match (format.info().category, method) {
            (Category::GroupedInt, MethodArg::Absmax) => "grouped_absmax",
            (Category::GroupedInt, MethodArg::Search) if search.negative_scales =>
                "grouped_search, negative scales",
            (Category::GroupedInt, MethodArg::Search) => "grouped_search",
            (Category::RowScaledFloat, _) => "fp8_row_maxabs",
            _ => "nvfp4_quantize, one source per tensor",
        }
    );
    outln!();
    table::print(
        &[
            "tensor",
            "shape",
            "dtype",
            "status",
            "bits/weight",
            "max |err|",
            "RMS err",
            "RMS err / RMS",
            "encode ms",
        ],
        &[false, false, false, false, true, true, true, true, true],
        &rows_out,
    )?;
    if let Some(m) = &search.imatrix {
        outln!(
            "\nimportance matrix {} ({}, {} entries): {} searched matrices without an entry of their name weigh every channel 1{}",
            m.path,
            m.form,
            m.entries.len(),
            unweighted.len(),
            match unweighted.is_empty() {
                true => String::new(),
                false => format!(" ({})", unweighted.join(", ")),
            }
        );
        if !uniform.is_empty() {
            outln!(
                "{} with an entry whose counts are all 0 (never exercised, every channel 1): searched without importance ({})",
                table::counted(uniform.len() as u64, "matrix").replace("matrixs", "matrices"),
                uniform.join(", ")
            );
        }
    }
    if !gains.is_empty() {
        outln!(
            "\nimportance-weighted squared error Σ imp·(decoded − source)² of each weighted tensor \
             (grouped_search's error, summed over groups), by how the planes were chosen; \
             the search with importance never exceeds absmax:\n"
        );
        let ratio = |a: f64, b: f64| match b > 0.0 {
            true => format!("{:.4}", a / b),
            false => "-".into(),
        };
        let rows: Vec<Vec<String>> = gains
            .iter()
            .map(|(n, abs, plain, with)| {
                vec![
                    n.clone(),
                    format!("{abs:.6e}"),
                    format!("{plain:.6e}"),
                    format!("{with:.6e}"),
                    ratio(*with, *abs),
                    ratio(*with, *plain),
                ]
            })
            .collect();
        table::print(
            &[
                "tensor",
                "absmax",
                "search",
                "search + importance",
                "/ absmax",
                "/ search",
            ],
            &[false, true, true, true, true, true],
            &rows,
        )?;
    }
    if !refusals.is_empty() {
        outln!(
            "\nrefused ({}; by the encoder, or an --imatrix entry that does not fit), copied through unchanged:",
            refusals.len()
        );
        for r in &refusals {
            outln!("{r}");
        }
    }
    if encoded == 0 {
        let why = if refusals.is_empty() {
            "nothing selected is a 2-D F32/BF16/F16 matrix"
        } else {
            "every candidate was refused (above)"
        };
        outln!("\nno tensor encoded: {why}; {} not written", out.display());
        return Ok(false);
    }
    let tensors = w.len();
    w.write(out)?;
    outln!(
        "\n{} encoded ({} bytes of planes), {} refused; RMS error over all encoded values {:.4e} ({:.4} of their RMS); encode {:.3} s, {:.3} s in all; wrote {} ({} safetensors {})",
        table::counted(encoded as u64, "tensor"),
        count(encoded_bytes as u64),
        refusals.len(),
        (all_se / all_n).sqrt(),
        (all_se / all_sx.max(f64::MIN_POSITIVE)).sqrt(),
        encode_secs,
        start.elapsed().as_secs_f64(),
        out.display(),
        count(tensors as u64),
        table::plural(tensors as u64, "tensor")
    );
    Ok(refusals.is_empty())
}
