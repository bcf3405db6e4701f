//! `ninfer verify [FILE.gguf]`: checks the structure of every tensor, validates its
//! encoding with the library (`ninfer::validate`: e.g. every GGUF scale field finite; an
//! invalid tensor is a failure, and is still decoded so its values can be looked at),
//! decodes every row,
//! counts non-finite values, measures decode throughput, and for every 2-D weight computes
//! the mat-vec y = W·x in f64 (x[i] = sin(0.1·i)) from the decoded rows, printing Σy so a
//! reader can compare it with an independent decoder's figure
//! (`tests/real_models.py` lists Gemma's).

use crate::gguf::GgufFile;
use crate::rows::{chunk_rows, decode_range, value_bar};
use crate::table::{self, count};
use crate::tensor::{self, Plan, Rows};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Options of `verify`.
pub struct Options {
    /// Print only the per-type table, refusals and failures.
    pub brief: bool,
}

/// What the library's encoding validation said about one tensor.
#[derive(Clone, PartialEq)]
enum Validation {
    /// Every encoding rule holds.
    Valid,
    /// The library has no validator for this format, or the data is not a registered
    /// format (F16 read as data).
    NotAvailable,
    /// A rule is broken: the library's message (row and block).
    Invalid(String),
}

fn validate(rows: &Rows<'_>) -> Validation {
    match rows {
        Rows::F16 { .. } => Validation::NotAvailable,
        // No block to break a rule.
        Rows::Empty { .. } => Validation::Valid,
        Rows::View(view) => match ninfer::validate::validate(view) {
            Ok(()) => Validation::Valid,
            Err(e) if e.status() == ninfer::Status::Unsupported => Validation::NotAvailable,
            Err(e) => Validation::Invalid(format!("{}: {e}", e.status().name())),
        },
    }
}

/// What verifying one decodable tensor found.
struct Outcome {
    validation: Validation,
    values: u64,
    non_finite: u64,
    decode: Duration,
    /// Time in validation, and in counting and the mat-vec.
    validate: Duration,
    check: Duration,
    sum_y: Option<f64>,
    error: Option<String>,
}

/// The activation of the reference mat-vec: x[i] = sin(0.1·i), in f64.
pub fn activation(k: usize) -> Vec<f64> {
    (0..k).map(|i| (0.1 * i as f64).sin()).collect()
}

/// Dot product of a decoded row with `x` in f64: four partial sums over i mod 4 (a fixed
/// order, so the figure does not depend on threads), added at the end.
pub fn dot(row: &[f32], x: &[f64]) -> f64 {
    let mut acc = [0f64; 4];
    let (rw, rx) = (row.chunks_exact(4), x.chunks_exact(4));
    let (tw, tx) = (rw.remainder(), rx.remainder());
    for (w, x) in rw.zip(rx) {
        for l in 0..4 {
            acc[l] += w[l] as f64 * x[l];
        }
    }
    let tail: f64 = tw.iter().zip(tx).map(|(&w, &x)| w as f64 * x).sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// Returns whether every decodable tensor verified (the process exit status).
pub fn run(file: &GgufFile, label: &str, opts: &Options) -> anyhow::Result<bool> {
    // Start the thread pool before anything is timed.
    rayon::broadcast(|_| ());
    let start = Instant::now();
    let tensors = tensor::classify(file);
    println!(
        "verify {label}: GGUF v{}, {} tensors, {} bytes, {} threads",
        file.version,
        tensors.len(),
        count(file.bytes().len() as u64),
        rayon::current_num_threads()
    );
    let total: u64 = tensors
        .iter()
        .filter_map(|t| match &t.plan {
            Plan::Decode(r) => Some(r.rows() as u64 * r.k() as u64),
            _ => None,
        })
        .sum();
    let max_k = tensors
        .iter()
        .filter_map(|t| match &t.plan {
            Plan::Decode(r) => Some(r.k()),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    let x = activation(max_k);
    let bar = value_bar(total);
    let mut outcomes: Vec<Option<Outcome>> = Vec::with_capacity(tensors.len());
    let mut buf: Vec<f32> = Vec::new();
    for t in &tensors {
        let Plan::Decode(rows) = &t.plan else {
            outcomes.push(None);
            continue;
        };
        bar.set_message(t.info.name.clone());
        let (n, k) = (rows.rows(), rows.k());
        let step = chunk_rows(k, 1 << 21);
        buf.resize(step.min(n) * k, 0.0);
        let two_d = t.info.dims.len() == 2;
        let t0 = Instant::now();
        let validation = validate(rows);
        let mut o = Outcome {
            validation,
            values: (n * k) as u64,
            non_finite: 0,
            decode: Duration::ZERO,
            validate: t0.elapsed(),
            check: Duration::ZERO,
            sum_y: two_d.then_some(0.0),
            error: None,
        };
        let mut y: Vec<f64> = Vec::with_capacity(if two_d { n } else { 0 });
        let mut r0 = 0;
        while r0 < n {
            let m = step.min(n - r0);
            let chunk = &mut buf[..m * k];
            let t0 = Instant::now();
            let res = decode_range(rows, r0, chunk);
            o.decode += t0.elapsed();
            if let Err((row, e)) = res {
                o.error = Some(format!("row {row}: {}: {e}", e.status().name()));
                break;
            }
            let t1 = Instant::now();
            o.non_finite += chunk
                .par_chunks(k)
                .map(|r| r.iter().filter(|v| !v.is_finite()).count() as u64)
                .sum::<u64>();
            if two_d {
                y.par_extend(chunk.par_chunks(k).map(|r| dot(r, &x[..k])));
            }
            o.check += t1.elapsed();
            bar.inc(chunk.len() as u64);
            r0 += m;
        }
        if o.error.is_none() {
            // Summed in row order, so the figure does not depend on the thread count.
            // `+ 0.0` so that an all-zero product prints 0, not -0.
            o.sum_y = o.sum_y.map(|_| y.iter().sum::<f64>() + 0.0);
        } else {
            o.sum_y = None;
        }
        outcomes.push(Some(o));
    }
    bar.finish_and_clear();
    let elapsed = start.elapsed();

    if !opts.brief {
        let rows: Vec<Vec<String>> = tensors
            .iter()
            .zip(&outcomes)
            .filter_map(|(t, o)| {
                let o = o.as_ref()?;
                Some(vec![
                    t.info.name.clone(),
                    t.format_text(),
                    t.info.shape_text(),
                    count(o.values),
                    o.non_finite.to_string(),
                    o.sum_y.map(|s| format!("{s:.6}")).unwrap_or_default(),
                    if o.error.is_some() || matches!(o.validation, Validation::Invalid(_)) {
                        "FAILED"
                    } else {
                        "ok"
                    }
                    .into(),
                ])
            })
            .collect();
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
            &rows,
        );
    }

    // Refusals and failures, each named.
    let refused: Vec<_> = tensors
        .iter()
        .filter(|t| matches!(t.plan, Plan::Refused(..)))
        .collect();
    if !refused.is_empty() {
        println!("\nrefused ({}):", refused.len());
        if opts.brief {
            for line in refused_by_type(&refused) {
                println!("{line}");
            }
        } else {
            for t in &refused {
                if let Plan::Refused(s, m) = &t.plan {
                    println!("  {}  {}  {} — {m}", t.info.name, t.format_text(), s.name());
                }
            }
        }
    }
    let mut failures = Vec::new();
    let mut failed_tensors = 0;
    for (t, o) in tensors.iter().zip(&outcomes) {
        let before = failures.len();
        match (&t.plan, o) {
            (Plan::Broken(s, m), _) => failures.push(format!(
                "  {}  {}  {} — {m}",
                t.info.name,
                t.format_text(),
                s.map_or("ERROR", |s| s.name())
            )),
            (_, Some(o)) => {
                if let Validation::Invalid(m) = &o.validation {
                    failures.push(format!("  {}  {}  {m}", t.info.name, t.format_text()));
                }
                if let Some(e) = &o.error {
                    failures.push(format!("  {}  {}  {e}", t.info.name, t.format_text()));
                }
            }
            _ => {}
        }
        failed_tensors += usize::from(failures.len() > before);
    }
    if !failures.is_empty() {
        println!("\nFAILED ({failed_tensors}):");
        for f in &failures {
            println!("{f}");
        }
    }

    // Per-type table.
    #[derive(Default)]
    struct Agg {
        tensors: u64,
        values: u64,
        non_finite: u64,
        decode: Duration,
        status: String,
        /// Tensors validated, without a validator, and invalid.
        valid: u64,
        not_available: u64,
        invalid: u64,
    }
    let mut by_type: BTreeMap<(u32, String), Agg> = BTreeMap::new();
    for (t, o) in tensors.iter().zip(&outcomes) {
        let a = by_type.entry((t.info.ggml_type, t.type_key())).or_default();
        a.tensors += 1;
        a.values += t.values().unwrap_or(0);
        if let Some(o) = o {
            a.non_finite += o.non_finite;
            a.decode += o.decode;
            match o.validation {
                Validation::Valid => a.valid += 1,
                Validation::NotAvailable => a.not_available += 1,
                Validation::Invalid(_) => a.invalid += 1,
            }
        }
        let s = match (&t.plan, o) {
            (
                Plan::Decode(_),
                Some(Outcome {
                    error: None,
                    validation: Validation::Valid | Validation::NotAvailable,
                    ..
                }),
            ) => "decoded",
            (Plan::Decode(_), _) => "FAILED",
            (Plan::Broken(..), _) => "FAILED",
            (p, _) => p.status_name(),
        };
        if a.status.is_empty() {
            a.status = s.into();
        } else if !a.status.split(", ").any(|x| x == s) {
            a.status = format!("{}, {s}", a.status);
        }
    }
    let rows: Vec<Vec<String>> = by_type
        .iter()
        .map(|((_, key), a)| {
            let decoded = a.status.contains("decoded");
            let secs = a.decode.as_secs_f64();
            vec![
                key.clone(),
                a.tensors.to_string(),
                count(a.values),
                if decoded {
                    a.non_finite.to_string()
                } else {
                    "-".into()
                },
                if decoded {
                    format!("{:.1}", secs * 1e3)
                } else {
                    "-".into()
                },
                if decoded && secs > 0.0 {
                    format!("{:.1}", a.values as f64 / secs / 1e6)
                } else {
                    "-".into()
                },
                match (a.valid, a.not_available, a.invalid) {
                    (0, 0, 0) => "-".to_owned(),
                    (_, 0, 0) => "yes".to_owned(),
                    (0, _, 0) => "n/a".to_owned(),
                    (_, _, 0) => format!("{} of {}", a.valid, a.valid + a.not_available),
                    (_, _, bad) => format!("{bad} INVALID"),
                },
                a.status.clone(),
            ]
        })
        .collect();
    println!("\nper type");
    table::print(
        &[
            "type",
            "tensors",
            "values",
            "non-finite",
            "decode ms",
            "Mvalues/s",
            "validated",
            "result",
        ],
        &[false, true, true, true, true, true, false, false],
        &rows,
    );

    // Each tensor is counted once: decoded (and not invalid), refused, or failed (broken,
    // invalid, or a decode error), so the three add up to the tensor count.
    let decoded = outcomes
        .iter()
        .filter(|o| {
            matches!(o, Some(Outcome { error: None, validation, .. })
                if !matches!(validation, Validation::Invalid(_)))
        })
        .count();
    let failed = failed_tensors;
    debug_assert_eq!(decoded + refused.len() + failed, tensors.len());
    let invalid = outcomes
        .iter()
        .flatten()
        .filter(|o| matches!(o.validation, Validation::Invalid(_)))
        .count();
    let values: u64 = outcomes
        .iter()
        .flatten()
        .filter(|o| o.error.is_none())
        .map(|o| o.values)
        .sum();
    // `+ 0.0`: an empty f64 sum is -0.0, which would print as "-0.000".
    let secs = |f: fn(&Outcome) -> Duration| -> f64 {
        outcomes
            .iter()
            .flatten()
            .map(|o| f(o).as_secs_f64())
            .sum::<f64>()
            + 0.0
    };
    let decode_secs = secs(|o| o.decode);
    println!(
        "\n{} tensors: {decoded} decoded, {} refused, {} failed ({invalid} invalid encodings); {} values decoded in {:.3} s ({:.1} Mvalues/s), {:.3} s in all (validation {:.3} s, counts and mat-vec {:.3} s)",
        tensors.len(),
        refused.len(),
        failed,
        count(values),
        decode_secs,
        if decode_secs > 0.0 {
            values as f64 / decode_secs / 1e6
        } else {
            0.0
        },
        elapsed.as_secs_f64(),
        secs(|o| o.validate),
        secs(|o| o.check),
    );
    Ok(failures.is_empty())
}

/// `--brief`'s refusals: one line per (type, status) in order of first appearance, with
/// the count and the first tensor's name and message, instead of one line per tensor.
fn refused_by_type(refused: &[&tensor::Tensor<'_>]) -> Vec<String> {
    let mut groups: Vec<(String, &'static str, usize, &str, &str)> = Vec::new();
    for t in refused {
        if let Plan::Refused(s, m) = &t.plan {
            let ty = t.format_text();
            match groups.iter_mut().find(|g| g.0 == ty && g.1 == s.name()) {
                Some(g) => g.2 += 1,
                None => groups.push((ty, s.name(), 1, t.info.name.as_str(), m.as_str())),
            }
        }
    }
    groups
        .into_iter()
        .map(|(ty, status, n, first, m)| {
            let tensors = if n == 1 { "tensor" } else { "tensors" };
            format!("  {ty}  {status}  {n} {tensors} (first: {first}) — {m}")
        })
        .collect()
}
