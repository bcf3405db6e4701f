//! `ninfer verify [FILE.gguf]`: a self-test of the library on the file and this machine.
//! It checks the structure of every tensor, validates its encoding with the library
//! (`ninfer::validate`: e.g. every GGUF scale field finite; an invalid tensor is a failure,
//! and is still decoded so its values can be looked at), decodes every row, counts
//! non-finite values and measures decode throughput. Then it compares:
//!
//! - the decoded values with reference checksums recorded by an independent decoder, when
//!   there are any (the built-in sample's, from gguf-py; `--checksums LIST`);
//! - for every 2-D weight, `linear` on every CPU instruction set and on CUDA against an f64
//!   oracle computed from the decoded rows, and the paths with each other word for word
//!   ([`crate::check`]).
//!
//! It also prints Σy of y = W·x in f64 (x\[i\] = sin(0.1·i)) from the decoded rows, a figure
//! a reader can compare with an independent decoder's (`tests/real_models.py` lists
//! Gemma's). Any failed comparison makes the exit status non-zero.

use crate::check::{self, Checksums, Devices, Fnv1a64, Linear, Sum};
use crate::gguf::GgufFile;
use crate::rows::{chunk_rows, decode_range, value_bar};
use crate::table::{self, count};
use crate::tensor::{self, Plan, Rows};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Options of `verify`.
pub struct Options {
    /// Print only the per-type table, refusals, failures and the summary.
    pub brief: bool,
    /// Reference checksums of the decoded values, when there are any.
    pub checksums: Option<Checksums>,
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
    /// The decoded values against the reference checksums.
    sum: Sum,
    /// `linear` against the f64 oracle, and its time.
    linear: Linear,
    linear_time: Duration,
}

impl Outcome {
    /// Whether any check failed.
    fn failed(&self) -> bool {
        self.error.is_some()
            || matches!(self.validation, Validation::Invalid(_))
            || self.sum.failed()
            || self.linear.failed()
    }
}

/// The activation of the reference mat-vec: x\[i\] = sin(0.1·i), in f64.
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
    outln!(
        "verify {label}: GGUF v{}, {}, {} bytes, {} threads",
        file.version,
        table::counted(tensors.len() as u64, "tensor"),
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
    let devices = Devices::probe();
    outln!(
        "linear: y = x·Wᵀ on {}; x seeded (splitmix64, seed 0x{:016x}), M = {} and {}, f32 outputs; \
         against an f64 oracle from the decoded rows (GGUF: of the q8_1 values x̂ of x), criterion \
         linear_f32acc_v1; at most {} rows per weight (evenly spaced)",
        devices.describe(),
        check::SEED,
        check::MS[0],
        check::MS[1],
        check::MAX_ROWS
    );
    match &opts.checksums {
        Some(c) => outln!(
            "checksums: {} in {} (FNV-1a 64 of the f32 words{}); every decoded tensor must be listed",
            table::counted(c.tensors.len() as u64, "tensor"),
            c.source,
            match c.oracles() {
                o if o.is_empty() => String::new(),
                o => format!(", from {o}"),
            }
        ),
        None => outln!(
            "checksums: none for this file (`--checksums LIST` compares the decoded values with a list)"
        ),
    }
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
            sum: Sum::None,
            linear: Linear::Skipped(String::new()),
            linear_time: Duration::ZERO,
        };
        let entry = check::entry(opts.checksums.as_ref(), &t.info.name);
        let mut hash = Fnv1a64::default();
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
            if matches!(entry, Some(Some(_))) {
                hash.update(chunk);
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
            o.sum = check::compare(entry, &tensor::type_name(t.info.ggml_type), o.values, &hash);
            o.linear = match rows {
                _ if !two_d => Linear::Skipped(String::new()),
                _ if matches!(o.validation, Validation::Invalid(_)) => {
                    Linear::Skipped("invalid encoding".into())
                }
                Rows::View(view) => {
                    let t2 = Instant::now();
                    let l = check::linear(view, &|r, out| rows.decode(r, out), &devices);
                    o.linear_time = t2.elapsed();
                    l
                }
                _ => Linear::Skipped("no registered format".into()),
            };
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
                    o.sum.cell(),
                    o.linear.cell(),
                    o.linear.paths_cell(),
                    o.sum_y.map(|s| format!("{s:.6}")).unwrap_or_default(),
                    if o.failed() { "FAILED" } else { "ok" }.into(),
                ])
            })
            .collect();
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
            &rows,
        )?;
    }

    // Paths a product could not run on (e.g. no CUDA kernel for a format): not failures.
    let notes: Vec<String> = tensors
        .iter()
        .zip(&outcomes)
        .filter_map(|(t, o)| match &o.as_ref()?.linear {
            Linear::Checked(r) if !r.notes.is_empty() => {
                Some(format!("  {}  {}", t.info.name, r.notes.join("; ")))
            }
            _ => None,
        })
        .collect();
    if !notes.is_empty() && !opts.brief {
        outln!("\nlinear not run on every path ({}):", notes.len());
        for n in &notes {
            outln!("{n}");
        }
    }

    // Refusals and failures, each named.
    let refused: Vec<_> = tensors
        .iter()
        .filter(|t| matches!(t.plan, Plan::Refused(..)))
        .collect();
    if !refused.is_empty() {
        outln!("\nrefused ({}):", refused.len());
        if opts.brief {
            for line in refused_by_type(&refused) {
                outln!("{line}");
            }
        } else {
            for t in &refused {
                if let Plan::Refused(s, m) = &t.plan {
                    outln!("  {}  {}  {} — {m}", t.info.name, t.format_text(), s.name());
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
                if let Some(m) = o.sum.failure() {
                    failures.push(format!(
                        "  {}  {}  checksum: {m}",
                        t.info.name,
                        t.format_text()
                    ));
                }
                if let Linear::Checked(r) = &o.linear {
                    for f in &r.failures {
                        failures.push(format!(
                            "  {}  {}  linear: {f}",
                            t.info.name,
                            t.format_text()
                        ));
                    }
                }
            }
            _ => {}
        }
        failed_tensors += usize::from(failures.len() > before);
    }
    // Tensors the checksum list names that the file does not have.
    let missing: Vec<&String> = opts
        .checksums
        .iter()
        .flat_map(|c| c.tensors.keys())
        .filter(|n| !tensors.iter().any(|t| &t.info.name == *n))
        .collect();
    if !failures.is_empty() || !missing.is_empty() {
        outln!("\nFAILED ({}):", failed_tensors + missing.len());
        for f in &failures {
            outln!("{f}");
        }
        for n in &missing {
            outln!("  {n}  listed in the reference checksums but not in the file");
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
        /// Checksums matched and mismatched; linear checks passed and failed.
        sums: (u64, u64, u64),
        linear: (u64, u64),
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
            match o.sum {
                Sum::Matched(_) => a.sums.0 += 1,
                Sum::Mismatch(_) => a.sums.1 += 1,
                Sum::Unlisted => a.sums.2 += 1,
                Sum::None => {}
            }
            match &o.linear {
                Linear::Checked(_) if o.linear.failed() => a.linear.1 += 1,
                Linear::Checked(_) => a.linear.0 += 1,
                Linear::Skipped(_) => {}
            }
        }
        let s = match (&t.plan, o) {
            (Plan::Decode(_), Some(o)) if !o.failed() => "decoded",
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
                // A rate only when the time is measurable (a millisecond or more).
                if decoded && secs >= 1e-3 {
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
                match a.sums {
                    (0, 0, 0) => "-".to_owned(),
                    (ok, 0, 0) => format!("{ok} matched"),
                    (_, 0, unlisted) => format!("{unlisted} NOT LISTED"),
                    (_, bad, _) => format!("{bad} MISMATCH"),
                },
                match a.linear {
                    (0, 0) => "-".to_owned(),
                    (ok, 0) => format!("{ok} ok"),
                    (_, bad) => format!("{bad} FAILED"),
                },
                a.status.clone(),
            ]
        })
        .collect();
    outln!("\nper type");
    table::print(
        &[
            "type",
            "tensors",
            "values",
            "non-finite",
            "decode ms",
            "Mvalues/s",
            "validated",
            "checksums",
            "linear",
            "result",
        ],
        &[
            false, true, true, true, true, true, false, false, false, false,
        ],
        &rows,
    )?;

    // Each tensor is counted once: decoded (and not invalid), refused, or failed (broken,
    // invalid, or a decode error), so the three add up to the tensor count.
    let decoded = outcomes.iter().flatten().filter(|o| !o.failed()).count();
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
    outln!(
        "\n{}: {decoded} decoded, {} refused, {} failed ({invalid} invalid {}); {} decoded in {}, {:.3} s in all (validation {:.3} s, counts and mat-vec {:.3} s, linear {:.3} s)",
        table::counted(tensors.len() as u64, "tensor"),
        refused.len(),
        failed,
        table::plural(invalid as u64, "encoding"),
        table::counted(values, "value"),
        decode_time(values, decode_secs),
        elapsed.as_secs_f64(),
        secs(|o| o.validate),
        secs(|o| o.check),
        secs(|o| o.linear_time),
    );
    // What was compared with what.
    let validated = outcomes
        .iter()
        .flatten()
        .filter(|o| o.validation == Validation::Valid)
        .count();
    let sums: Vec<&Sum> = outcomes.iter().flatten().map(|o| &o.sum).collect();
    let matched = sums.iter().filter(|s| matches!(s, Sum::Matched(_))).count();
    let mismatched = sums
        .iter()
        .filter(|s| matches!(s, Sum::Mismatch(_)))
        .count();
    let unlisted: Vec<&str> = tensors
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| matches!(o, Some(o) if matches!(o.sum, Sum::Unlisted)))
        .map(|(t, _)| t.info.name.as_str())
        .collect();
    let reports: Vec<&check::LinearReport> = outcomes
        .iter()
        .flatten()
        .filter_map(|o| match &o.linear {
            Linear::Checked(r) => Some(r),
            Linear::Skipped(_) => None,
        })
        .collect();
    let checksums = match &opts.checksums {
        Some(c) => format!(
            "checksums: {matched} matched, {mismatched} mismatched, {} not in the list, {} not in the file{}",
            unlisted.len(),
            missing.len(),
            oracles_note(c)
        ),
        None => "checksums: none".to_owned(),
    };
    outln!(
        "checks: {} validated; {checksums}; {}",
        table::counted(validated as u64, "tensor"),
        check::linear_summary(&reports, &devices)
    );
    let ok = failures.is_empty() && missing.is_empty();
    // A self-test that compared nothing does not pass.
    let checked = outcomes.iter().flatten().count();
    if !ok {
        outln!(
            "verify: FAILED ({}, see FAILED above)",
            table::counted((failed_tensors + missing.len()) as u64, "tensor")
        );
    } else if checked == 0 {
        let why = if tensors.is_empty() {
            "the file has no tensors".to_owned()
        } else {
            format!(
                "no tensor could be decoded: {} refused",
                table::counted(refused.len() as u64, "tensor")
            )
        };
        outln!("verify: nothing checked ({why})");
        return Ok(false);
    } else {
        outln!("verify: passed");
    }
    Ok(ok)
}

/// " (oracle, …)" after a list's counts, or nothing when the list names no oracle.
pub fn oracles_note(c: &Checksums) -> String {
    let o = c.oracles();
    if o.is_empty() {
        String::new()
    } else {
        format!(" ({o})")
    }
}

/// "1.234 s (56.7 Mvalues/s)": the throughput only when the time is long enough to mean
/// something (a millisecond or more).
pub fn decode_time(values: u64, secs: f64) -> String {
    if secs >= 1e-3 {
        format!("{secs:.3} s ({:.1} Mvalues/s)", values as f64 / secs / 1e6)
    } else {
        format!("{:.0} µs", secs * 1e6)
    }
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
