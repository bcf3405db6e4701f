//! `inspect`, `verify` and `decode` on a safetensors file holding ninfer-encoded tensors
//! (docs/safetensors.md) and plain data.

use crate::cmd::verify::{activation, dot};
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
    println!("{label}");
    let encoded = file
        .entries
        .iter()
        .filter(|e| matches!(e, Entry::Encoded(_)))
        .count();
    println!(
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
    println!("\ntensors");
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
    );
    println!(
        "\n{} entries: {encoded} encoded, {} plain, {broken} malformed",
        file.entries.len(),
        file.entries.len() - encoded - broken
    );
    Ok(broken == 0)
}

/// Decodes all rows: (values, non-finite count, Σy for x[i] = sin(0.1·i)).
fn check_rows(rows: &Rows<'_>) -> Result<(Vec<f32>, u64, f64), String> {
    let (n, k) = (rows.rows(), rows.k());
    if n == 0 || k == 0 {
        // An empty tensor.
        return Ok((Vec::new(), 0, 0.0));
    }
    let mut out = vec![0f32; n * k];
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

pub fn verify(file: &StFile, label: &str) -> Result<bool> {
    rayon::broadcast(|_| ());
    let start = Instant::now();
    println!(
        "verify {label}: safetensors, {} entries, {} bytes, {} threads",
        file.entries.len(),
        count(file.bytes().len() as u64),
        rayon::current_num_threads()
    );
    let mut rows_out = Vec::new();
    let mut failures = Vec::new();
    let (mut enc_n, mut data_n, mut skipped) = (0, 0, 0);
    let mut decode_secs = 0f64;
    let mut values = 0u64;
    for e in &file.entries {
        let (name, kind, shape, rows) = match e {
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
                        (&t.name, kind, t.desc.shape_text(), Rows::View(v))
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
                        format!("{} (direct data)", st::dtype_name(p.dtype)),
                        format!("{:?}", p.shape),
                        r,
                    )
                }
            },
        };
        let t0 = Instant::now();
        match check_rows(&rows) {
            Err(m) => {
                failures.push(format!("  {name}  {kind}  {m}"));
                rows_out.push(vec![
                    name.clone(),
                    kind,
                    shape,
                    String::new(),
                    String::new(),
                    String::new(),
                    "FAILED".into(),
                ]);
            }
            Ok((v, nf, sy)) => {
                decode_secs += t0.elapsed().as_secs_f64();
                values += v.len() as u64;
                let failed = failures
                    .iter()
                    .any(|f| f.starts_with(&format!("  {name}  ")));
                rows_out.push(vec![
                    name.clone(),
                    kind,
                    shape,
                    count(v.len() as u64),
                    nf.to_string(),
                    format!("{sy:.6}"),
                    if failed { "FAILED" } else { "ok" }.into(),
                ]);
            }
        }
    }
    println!();
    table::print(
        &[
            "tensor",
            "format",
            "shape",
            "values",
            "non-finite",
            "Σy (f64, x[i]=sin(0.1·i))",
            "",
        ],
        &[false, false, false, true, true, true, false],
        &rows_out,
    );
    if !failures.is_empty() {
        println!("\nFAILED ({}):", failures.len());
        for f in &failures {
            println!("{f}");
        }
    }
    println!(
        "\n{} entries: {enc_n} encoded tensors validated and decoded, {data_n} direct data, {skipped} not decodable dtypes, {} failed; {} values in {:.3} s, {:.3} s in all",
        file.entries.len(),
        failures.len(),
        count(values),
        decode_secs,
        start.elapsed().as_secs_f64()
    );
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
