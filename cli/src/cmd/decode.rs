//! `ninfer decode` (one tensor to an f32 .npy) and `ninfer dump` (decoded tensors as a
//! stream, for test harnesses that compare every value with another decoder).

use crate::gguf::GgufFile;
use crate::rows::{decode_all, value_bar};
use crate::tensor::{self, Plan, Tensor, type_name};
use anyhow::{Context, Result, bail};
use npyz::WriterBuilder;
use std::io::{BufWriter, Write};
use std::path::Path;

fn decoded(t: &Tensor<'_>) -> Result<Vec<f32>> {
    let Plan::Decode(rows) = &t.plan else {
        match &t.plan {
            Plan::Refused(s, m) | Plan::Broken(Some(s), m) => {
                bail!("{}: {} ({m})", t.info.name, s.name())
            }
            _ => bail!("{}: {}", t.info.name, plan_message(&t.plan)),
        }
    };
    let bar = value_bar(rows.rows() as u64 * rows.k() as u64);
    bar.set_message(t.info.name.clone());
    let v = decode_all(rows, &bar).map_err(|(row, e)| {
        let at = row.map_or(String::new(), |r| format!(" row {r}:"));
        anyhow::anyhow!("{}:{at} {} ({e})", t.info.name, e.status().name())
    })?;
    bar.finish_and_clear();
    Ok(v)
}

fn plan_message(p: &Plan<'_>) -> String {
    match p {
        Plan::Decode(_) => "OK".into(),
        Plan::Refused(s, m) => format!("{} ({m})", s.name()),
        Plan::Broken(s, m) => format!("{} ({m})", s.map_or("ERROR", |s| s.name())),
    }
}

/// Writes tensor `name` of `file` to `out` as a little-endian f32 .npy of its logical
/// shape (outermost dimension first).
pub fn run(file: &GgufFile, name: &str, out: &Path) -> Result<()> {
    let tensors = tensor::classify(file);
    let t = tensors
        .iter()
        .find(|t| t.info.name == name)
        .with_context(|| format!("no tensor named {name:?} (see `ninfer inspect`)"))?;
    let values = decoded(t)?;
    let f = std::fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&t.info.shape())
        .writer(BufWriter::with_capacity(1 << 20, f))
        .begin_nd()?;
    w.extend(values.iter().copied())?;
    w.finish()?;
    eprintln!(
        "{}: {} {} → {} ({} values, f32)",
        t.info.name,
        t.format_text(),
        t.info.shape_text(),
        out.display(),
        values.len()
    );
    Ok(())
}

/// Streams tensors (all, or those named) to stdout. Per tensor one header line
/// `name \t ggml_type_name \t STATUS \t n_values \t message \n`, then, when STATUS is `OK`,
/// n_values little-endian f32 words. STATUS is the library's status name for refused and
/// malformed tensors (`ERROR` when the container found the problem).
pub fn dump(file: &GgufFile, names: &[String]) -> Result<()> {
    let tensors = tensor::classify(file);
    for n in names {
        if !tensors.iter().any(|t| &t.info.name == n) {
            bail!("no tensor named {n:?}");
        }
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    for t in tensors
        .iter()
        .filter(|t| names.is_empty() || names.contains(&t.info.name))
    {
        let ty = type_name(t.info.ggml_type);
        match &t.plan {
            Plan::Decode(_) => {
                let v = decoded(t);
                match v {
                    Ok(v) => {
                        writeln!(out, "{}\t{ty}\tOK\t{}\t", t.info.name, v.len())?;
                        for x in &v {
                            out.write_all(&x.to_le_bytes())?;
                        }
                    }
                    Err(e) => writeln!(out, "{}\t{ty}\tERROR\t0\t{e:#}", t.info.name)?,
                }
            }
            p => {
                let status = p.status_name();
                let msg = match p {
                    Plan::Refused(_, m) | Plan::Broken(_, m) => m.replace(['\t', '\n'], " "),
                    Plan::Decode(_) => String::new(),
                };
                writeln!(out, "{}\t{ty}\t{status}\t0\t{msg}", t.info.name)?;
            }
        }
    }
    out.flush()?;
    Ok(())
}
