//! `inspect`, `verify` and `decode` on a safetensors file holding ninfer-encoded tensors
//! (docs/safetensors.md) and plain data.

use crate::check::{self, Devices, Fnv1a64, Linear, Sum};
use crate::cmd::verify::{Options, activation, dot};
use crate::rows::{chunk_rows, decode_range};
use crate::st::{self, Entry, Plain, StFile};
use crate::table::{self, count};
use crate::tensor::Rows;
use anyhow::{Context, Result, bail};
use ninfer::{Format, WeightView};
use npyz::WriterBuilder;
use rayon::prelude::*;
use safetensors::Dtype;
use std::io::BufWriter;
use std::path::Path;
use std::time::Instant;

/// The rows of a plain F32/BF16/F16 tensor (1-D as one row; more dimensions as
/// [prod(outer), last]), read through the library's fp32/bf16 codecs (F16 by `half`).
fn plain_rows<'a>(file: &'a StFile, p: &Plain) -> Option<Result<Rows<'a>, ninfer::Error>> {
    let k = *p.shape.last().unwrap_or(&1);
    let rows = p.shape.iter().rev().skip(1).product::<usize>();
    let bytes = file.data(p);
    let decoded = matches!(p.dtype, Dtype::F32 | Dtype::BF16 | Dtype::F16);
    if decoded && (rows == 0 || k == 0) {
        // A zero dimension (valid safetensors): an empty tensor, nothing to decode.
        return Some(Ok(Rows::Empty { k }));
    }
    Some(match p.dtype {
        Dtype::F32 => WeightView::single(Format::Fp32, rows, k, bytes).map(Rows::View),
        Dtype::BF16 => WeightView::single(Format::Bf16, rows, k, bytes).map(Rows::View),
        Dtype::F16 => Ok(Rows::F16 { bytes, rows, k }),
        _ => return None,
    })
}

fn enc_bytes(e: &st::Encoded) -> usize {
    StFile::plane_bytes(e)
}

pub fn inspect(file: &StFile, label: &str) -> Result<bool> {
    outln!("{label}");
    let encoded = file
        .entries
        .iter()
        .filter(|e| matches!(e, Entry::Encoded(_)))
        .count();
    outln!(
        "safetensors, {} bytes, {} metadata entries, {} entries ({encoded} ninfer-encoded), container {}",
        count(file.bytes().len() as u64),
        file.metadata.len(),
        file.entries.len(),
        file.metadata
            .get(st::FILE_KEY)
            .map(String::as_str)
            .unwrap_or("(no `ninfer` key: plain safetensors)")
    );
    let mut broken = 0;
    let rows: Vec<Vec<String>> = file
        .entries
        .iter()
        .map(|e| match e {
            Entry::Encoded(t) => {
                let n = (t.desc.rows * t.desc.cols) as f64;
                let b = enc_bytes(t);
                let ok = match file.view(t) {
                    Ok(_) => "yes".to_owned(),
                    Err(e) => {
                        broken += 1;
                        format!("no: {} ({e})", e.status().name())
                    }
                };
                vec![
                    t.name.clone(),
                    t.desc.format.to_string(),
                    t.desc.layout.name().to_owned(),
                    t.desc.shape_text(),
                    count(b as u64),
                    format!("{:.4}", b as f64 * 8.0 / n),
                    ok,
                    t.provenance.clone().unwrap_or_default(),
                ]
            }
            Entry::Plain(p) => vec![
                p.name.clone(),
                format!("{} (plain)", st::dtype_name(p.dtype)),
                String::new(),
                format!("{:?}", p.shape),
                count(file.data(p).len() as u64),
                String::new(),
                if plain_rows(file, p).is_some() {
                    "yes (as data)".into()
                } else {
                    "no".into()
                },
                String::new(),
            ],
            Entry::Broken { name, message } => {
                broken += 1;
                vec![
                    name.clone(),
                    "?".into(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    format!("no: {message}"),
                    String::new(),
                ]
            }
        })
        .collect();
    outln!("\ntensors");
    table::print(
        &[
            "tensor",
            "format",
            "layout",
            "shape",
            "bytes",
            "bits/weight",
            "decodable",
            "provenance",
        ],
        &[false, false, false, false, true, true, false, false],
        &rows,
    )?;
    outln!(
        "\n{} entries: {encoded} encoded, {} plain, {broken} malformed",
        file.entries.len(),
        file.entries.len() - encoded - broken
    );
    Ok(broken == 0)
}

/// Decodes all rows: (values, non-finite count, Σy for x\[i\] = sin(0.1·i)).
fn check_rows(rows: &Rows<'_>) -> Result<(Vec<f32>, u64, f64), String> {
    let (n, k) = (rows.rows(), rows.k());
    if n == 0 || k == 0 {
        // An empty tensor.
        return Ok((Vec::new(), 0, 0.0));
    }
    let mut out = crate::alloc::zeroed(n * k, "the decoded values").map_err(|e| e.to_string())?;
    let step = chunk_rows(k, 1 << 22) * k;
    for (c, chunk) in out.chunks_mut(step).enumerate() {
        decode_range(rows, c * (step / k), chunk)
            .map_err(|(r, e)| format!("row {r}: {}: {e}", e.status().name()))?;
    }
    let nf = out.par_iter().filter(|v| !v.is_finite()).count() as u64;
    let x = activation(k);
    let y: Vec<f64> = out.par_chunks(k).map(|r| dot(r, &x)).collect();
    Ok((out, nf, y.iter().sum()))
}

pub fn verify(file: &StFile, label: &str, opts: &Options) -> Result<bool> {
    rayon::broadcast(|_| ());
    let start = Instant::now();
    outln!(
        "verify {label}: safetensors, {}, {} bytes, {} threads",
        table::counted(file.entries.len() as u64, "entry"),
        count(file.bytes().len() as u64),
        rayon::current_num_threads()
    );
    let devices = Devices::probe();
    outln!(
        "linear: y = x·Wᵀ on {}; x seeded (splitmix64, seed 0x{:016x}), M = {} and {}, f32 outputs; \
         against an f64 oracle from the decoded rows (q8_1 activations: of the values x̂ of x), \
         criterion linear_f32acc_v1; at most {} rows per weight (evenly spaced)",
        devices.describe(),
        check::SEED,
        check::MS[0],
        check::MS[1],
        check::MAX_ROWS
    );
    if let Some(c) = &opts.checksums {
        outln!(
            "checksums: {} in {} (FNV-1a 64 of the f32 words{}); every decoded tensor must be listed",
            table::counted(c.tensors.len() as u64, "tensor"),
            c.source,
            match c.oracles() {
                o if o.is_empty() => String::new(),
                o => format!(", from {o}"),
            }
        );
    }
    let mut reports: Vec<check::LinearReport> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let (mut matched, mut mismatched, mut unlisted) = (0usize, 0usize, 0usize);
    let mut rows_out = Vec::new();
    let mut failures = Vec::new();
    let (mut enc_n, mut data_n, mut skipped) = (0, 0, 0);
    let mut decode_secs = 0f64;
    let mut values = 0u64;
    for e in &file.entries {
        let (name, ty, kind, shape, rows, two_d) = match e {
            Entry::Broken { name, message } => {
                failures.push(format!("  {name}  {message}"));
                continue;
            }
            Entry::Encoded(t) => {
                let kind = format!("{} ({})", t.desc.format, t.desc.layout.name());
                match file.view(t) {
                    Err(err) => {
                        failures.push(format!("  {}  {}: {err}", t.name, err.status().name()));
                        continue;
                    }
                    Ok(v) => {
                        if let Err(err) = ninfer::validate::validate(&v) {
                            // Still decoded below so its values can be looked at.
                            failures.push(format!(
                                "  {}  {kind}  {}: {err}",
                                t.name,
                                err.status().name()
                            ));
                        }
                        enc_n += 1;
                        (
                            &t.name,
                            t.desc.format.to_string(),
                            kind,
                            t.desc.shape_text(),
                            Rows::View(v),
                            true,
                        )
                    }
                }
            }
            Entry::Plain(p) => match plain_rows(file, p) {
                None => {
                    skipped += 1;
                    continue;
                }
                Some(Err(err)) => {
                    failures.push(format!("  {}  {}: {err}", p.name, err.status().name()));
                    continue;
                }
                Some(Ok(r)) => {
                    data_n += 1;
                    (
                        &p.name,
                        st::dtype_name(p.dtype),
                        format!("{} (direct data)", st::dtype_name(p.dtype)),
                        format!("{:?}", p.shape),
                        r,
                        p.shape.len() == 2,
                    )
                }
            },
        };
        let t0 = Instant::now();
        match check_rows(&rows) {
            Err(m) => {
                // An invalid encoding the decoder refuses too: one failure, not two.
                if !failures
                    .iter()
                    .any(|f| f.starts_with(&format!("  {name}  ")))
                {
                    failures.push(format!("  {name}  {kind}  {m}"));
                }
                rows_out.push(vec![
                    name.clone(),
                    kind,
                    shape,
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    "FAILED".into(),
                ]);
            }
            Ok((v, nf, sy)) => {
                decode_secs += t0.elapsed().as_secs_f64();
                values += v.len() as u64;
                seen.push(name.clone());
                let entry = check::entry(opts.checksums.as_ref(), name);
                let mut hash = Fnv1a64::default();
                hash.update(&v);
                let sum = check::compare(entry, &ty, v.len() as u64, &hash);
                match &sum {
                    Sum::Matched(_) => matched += 1,
                    Sum::Mismatch(_) => mismatched += 1,
                    Sum::Unlisted => unlisted += 1,
                    Sum::None => {}
                }
                if let Some(m) = sum.failure() {
                    failures.push(format!("  {name}  {kind}  checksum: {m}"));
                }
                let invalid = failures
                    .iter()
                    .any(|f| f.starts_with(&format!("  {name}  ")));
                let lin = match &rows {
                    Rows::View(view) if two_d && !invalid && !v.is_empty() => {
                        let k = view.cols();
                        let decoded = |r: usize, out: &mut [f32]| {
                            out[..k].copy_from_slice(&v[r * k..(r + 1) * k]);
                            Ok(())
                        };
                        check::linear(view, &decoded, &devices)
                    }
                    _ => Linear::Skipped(String::new()),
                };
                let (lin_cell, paths_cell) = (lin.cell(), lin.paths_cell());
                if let Linear::Checked(r) = lin {
                    if !r.notes.is_empty() {
                        notes.push(format!("  {name}  {}", r.notes.join("; ")));
                    }
                    for f in &r.failures {
                        failures.push(format!("  {name}  {kind}  linear: {f}"));
                    }
                    reports.push(r);
                }
                let failed = failures
                    .iter()
                    .any(|f| f.starts_with(&format!("  {name}  ")));
                rows_out.push(vec![
                    name.clone(),
                    kind,
                    shape,
                    count(v.len() as u64),
                    nf.to_string(),
                    sum.cell(),
                    lin_cell,
                    paths_cell,
                    format!("{sy:.6}"),
                    if failed { "FAILED" } else { "ok" }.into(),
                ]);
            }
        }
    }
    if !opts.brief {
        outln!();
        table::print(
            &[
                "tensor",
                "format",
                "shape",
                "values",
                "non-finite",
                "checksum",
                "linear: rows, worst |y−ref|/tol",
                "paths",
                "Σy (f64, x[i]=sin(0.1·i))",
                "",
            ],
            &[
                false, false, false, true, true, false, false, false, true, false,
            ],
            &rows_out,
        )?;
    }
    if !notes.is_empty() && !opts.brief {
        outln!("\nlinear not run on every path ({}):", notes.len());
        for n in &notes {
            outln!("{n}");
        }
    }
    for n in opts.checksums.iter().flat_map(|c| c.tensors.keys()) {
        if !seen.contains(n) {
            failures.push(format!(
                "  {n}  listed in the reference checksums but not decoded from the file"
            ));
        }
    }
    // Failed tensors: each counted once, whatever number of messages it has.
    let mut failed_names: Vec<&str> = failures
        .iter()
        .filter_map(|f| f.trim_start().split("  ").next())
        .collect();
    failed_names.sort_unstable();
    failed_names.dedup();
    let failed = failed_names.len();
    if !failures.is_empty() {
        outln!("\nFAILED ({failed}):");
        for f in &failures {
            outln!("{f}");
        }
    }
    outln!(
        "\n{}: {enc_n} encoded {} validated and decoded, {data_n} direct data, {skipped} not decodable {}, {failed} failed; {} in {}, {:.3} s in all",
        table::counted(file.entries.len() as u64, "entry"),
        table::plural(enc_n as u64, "tensor"),
        table::plural(skipped as u64, "dtype"),
        table::counted(values, "value"),
        crate::cmd::verify::decode_time(values, decode_secs),
        start.elapsed().as_secs_f64()
    );
    let refs: Vec<&check::LinearReport> = reports.iter().collect();
    let checksums = match &opts.checksums {
        Some(c) => format!(
            "checksums: {matched} matched, {mismatched} mismatched, {unlisted} not in the list{}",
            crate::cmd::verify::oracles_note(c)
        ),
        None => "checksums: none".to_owned(),
    };
    outln!(
        "checks: {checksums}; {}",
        check::linear_summary(&refs, &devices)
    );
    if !failures.is_empty() {
        outln!(
            "verify: FAILED ({}, see FAILED above)",
            table::counted(failed as u64, "tensor")
        );
    } else if enc_n + data_n == 0 {
        // A self-test that compared nothing does not pass.
        let why = if file.entries.is_empty() {
            "the file has no tensors".to_owned()
        } else {
            format!(
                "no tensor could be decoded: {} without a decodable dtype or ninfer format",
                table::counted(file.entries.len() as u64, "entry")
            )
        };
        outln!("verify: nothing checked ({why})");
        return Ok(false);
    } else {
        outln!("verify: passed");
    }
    Ok(failures.is_empty())
}

pub fn decode(file: &StFile, name: &str, out: &Path) -> Result<()> {
    let e = file
        .entries
        .iter()
        .find(|e| e.name() == name)
        .with_context(|| format!("no tensor named {name:?} (see `ninfer inspect`)"))?;
    let (rows, shape, kind): (Rows<'_>, Vec<u64>, String) = match e {
        Entry::Broken { message, .. } => bail!("{name}: {message}"),
        Entry::Encoded(t) => {
            let v = file
                .view(t)
                .map_err(|e| anyhow::anyhow!("{name}: {}: {e}", e.status().name()))?;
            (
                Rows::View(v),
                vec![t.desc.rows as u64, t.desc.cols as u64],
                t.desc.format.to_string(),
            )
        }
        Entry::Plain(p) => match plain_rows(file, p) {
            None => bail!(
                "{name}: dtype {} is not decoded (F32, BF16, F16 and ninfer tensors are)",
                st::dtype_name(p.dtype)
            ),
            Some(r) => (
                r.map_err(|e| anyhow::anyhow!("{name}: {}: {e}", e.status().name()))?,
                p.shape.iter().map(|&d| d as u64).collect(),
                st::dtype_name(p.dtype),
            ),
        },
    };
    let (values, _, _) = check_rows(&rows).map_err(|m| anyhow::anyhow!("{name}: {m}"))?;
    let f = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(BufWriter::with_capacity(1 << 20, f))
        .begin_nd()?;
    w.extend(values.iter().copied())?;
    w.finish()?;
    eprintln!(
        "{name}: {kind} {shape:?} → {} ({} values, f32)",
        out.display(),
        values.len()
    );
    Ok(())
}
