//! `ninfer bench linear`: the throughput of `y = x · Wᵀ` (the library's `linear`) on this
//! machine, per format, thread count, batch size M and weight shape N × K, next to this
//! machine's read bandwidth and ggml's own `vec_dot` measured in the same run, with the
//! verdicts of the performance targets (docs/linear.md, "Performance"):
//!
//! - ≥ 1.2× ggml's `vec_dot` for GGUF types while the weight fits in L3 (4096 × 4096);
//! - ≥ 90% of the measured read bandwidth at M = 1 when it does not (16384 × 4096);
//! - the native formats at least as fast per weight byte (weight GB/s) as ggml's best GGUF
//!   type in the same configuration: the grouped formats and nvfp4 with the q8_1 profile,
//!   fp8_e4m3fn_row_* with the exact one.
//!
//! Weights are random valid payloads ([`payload`]); x is a fixed f32 pattern; y is f32.
//! Each figure is the best of several runs ([`measure::best`]); ggml's runs alternate with
//! ninfer's ([`measure::best_interleaved`]) so that a slow spell of a shared machine
//! disturbs both sides of a ratio alike: compare ratios, measured in one run. Progress goes to stderr, the results ([`report`]: table,
//! JSON or CSV) to stdout. ggml is loaded at run time by [`ggml`].

pub mod ggml;
mod measure;
mod payload;
mod report;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use clap::builder::TypedValueParser as _;
use indicatif::{ProgressBar, ProgressStyle};
use ninfer::linear::{self, Activation, Device, Isa, PreparedWeight, supported};
use ninfer::registry::FORMATS;
use ninfer::{Dtype, Format, Layout, WeightView};
use report::{Row, RunInfo, csv, group_verdicts, json, summary, table_header, table_row};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Options of `ninfer bench linear`.
#[derive(Args, Debug)]
pub struct LinearArgs {
    /// Only formats whose name contains one of these substrings (comma-separated, e.g.
    /// `q4_k,bf16`); default: every format `linear` supports.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    formats: Vec<String>,
    /// Thread counts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2",
          value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    threads: Vec<usize>,
    /// Batch sizes M, rows of x (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,32",
          value_parser = clap::value_parser!(u32).range(1..=65536).map(|v| v as usize))]
    m: Vec<usize>,
    /// Weight shapes N x K (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NxK",
          default_value = "4096x4096,16384x4096", value_parser = parse_shape)]
    shapes: Vec<(usize, usize)>,
    /// Activation profiles to measure (comma-separated): `exact` (x as given), `q8_1` (x
    /// quantized to q8_1 blocks) and/or `q8_K` (x quantized to q8_K blocks, the GGUF
    /// k-quants and 256-value i-quants only). A format runs each profile it supports, and a
    /// note names each one it does not; GGUF types always run their default q8_1 profile,
    /// once, and q8_K too when it is asked for. A row is labelled with the bare format
    /// name for the format's default profile (exact, or q8_1 for a GGUF type) and
    /// `<format>+q8_1` or `<format>+q8_K` for any other.
    #[arg(long, value_delimiter = ',', value_name = "A,B", default_values = ["exact"],
          value_parser = parse_activation)]
    activation: Vec<Activation>,
    /// 4096 x 4096 only (the shape that fits in L3).
    #[arg(long, conflicts_with = "shapes")]
    quick: bool,
    /// Directory of ggml's libggml-base.so and libggml-cpu.so (scripts/build-ggml.sh);
    /// default $NINFER_GGML_DIR, else .cache/ggml/lib under the current directory.
    #[arg(long, value_name = "DIR")]
    ggml: Option<PathBuf>,
    /// Print the results as one JSON document (at the end) instead of the table.
    #[arg(long, conflicts_with = "csv")]
    json: bool,
    /// Print the results as CSV, a header and one line per row (at the end).
    #[arg(long)]
    csv: bool,
    /// Skip the read-bandwidth measurement (fraction columns print "-").
    #[arg(long)]
    no_bw: bool,
    /// Size of the read-bandwidth buffer in MiB (well beyond L3).
    #[arg(long, default_value_t = 512, hide = true,
          value_parser = clap::value_parser!(u32).range(1..=65536).map(|v| v as usize))]
    bw_mib: usize,
    /// CPU instruction set tier (`scalar`, `avx2`, `avxvnni`, `avx512`); default: the best
    /// this machine has.
    #[arg(long, value_parser = parse_isa)]
    isa: Option<Isa>,
    /// Time budget of one measurement in milliseconds (at least 3 runs each).
    #[arg(long, default_value_t = 500, value_name = "MS")]
    budget_ms: u64,
}

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    /// An aligned table, streamed row by row, with target verdicts.
    Table,
    /// One JSON document at the end.
    Json,
    /// A header line and one line per row, at the end.
    Csv,
}

/// `exact`, `q8_1` or `q8_K` (also spelled `q8_k`).
fn parse_activation(s: &str) -> Result<Activation, String> {
    match s {
        "exact" => Ok(Activation::Exact),
        "q8_1" => Ok(Activation::Q8_1),
        "q8_K" | "q8_k" => Ok(Activation::Q8K),
        _ => Err(format!("unknown activation {s:?} (exact, q8_1 or q8_K)")),
    }
}

/// A tier of `Isa::ALL` by name.
fn parse_isa(s: &str) -> Result<Isa, String> {
    Isa::ALL.into_iter().find(|i| i.name() == s).ok_or_else(|| {
        let names: Vec<_> = Isa::ALL.iter().map(|i| i.name()).collect();
        format!("unknown ISA {s:?} ({})", names.join(", "))
    })
}

/// `NxK` (or `N×K`) with N, K ≥ 1 and N·K ≤ 2³².
fn parse_shape(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{s:?}: expected NxK, e.g. 4096x4096");
    let (n, k) = s.split_once(['x', 'X', '×']).ok_or_else(bad)?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    if n == 0 || k == 0 {
        return Err(format!("{s:?}: N and K must be at least 1"));
    }
    if n.checked_mul(k).is_none_or(|v| v > 1 << 32) {
        return Err(format!("{s:?}: more than 2^32 weights"));
    }
    Ok((n, k))
}

/// Every format `linear` supports on the CPU with f32 activations and outputs, in registry
/// order, filtered by substrings (each must name at least one supported format).
fn select_formats(filters: &[String]) -> Result<Vec<Format>> {
    let all: Vec<Format> = FORMATS
        .iter()
        .filter(|i| supported(i.format, i.layout, Dtype::F32, Dtype::F32, Device::Cpu))
        .map(|i| i.format)
        .collect();
    let names = || all.iter().map(|f| f.name()).collect::<Vec<_>>().join(", ");
    for f in filters {
        if f.is_empty() {
            bail!("--formats: empty name");
        }
        if !all.iter().any(|a| a.name().contains(f.as_str())) {
            bail!(
                "--formats: no format with a linear kernel matches {f:?} (formats: {})",
                names()
            );
        }
    }
    Ok(all
        .into_iter()
        .filter(|a| filters.is_empty() || filters.iter().any(|f| a.name().contains(f.as_str())))
        .collect())
}

/// The activation profiles each format runs (formats left with none are dropped), and a
/// note for each profile asked for that a format does not take. GGUF types always run
/// their default q8_1 profile (for `exact` too, which they lack), and q8_K when asked for.
fn plan(formats: &[Format], asked: &[Activation]) -> (Vec<(Format, Vec<Activation>)>, Vec<String>) {
    let mut wanted: Vec<Activation> = Vec::new();
    for &a in asked {
        if !wanted.contains(&a) {
            wanted.push(a);
        }
    }
    let (mut runs, mut notes) = (Vec::new(), Vec::new());
    for &format in formats {
        let layout = format.info().layout;
        let gguf = layout == Layout::GgufBlocksV1;
        let takes = |a| linear::supported_activation(format, layout, a, Device::Cpu);
        let mut acts: Vec<Activation> = if gguf {
            vec![Activation::Q8_1]
        } else {
            Vec::new()
        };
        for &a in &wanted {
            if takes(a) {
                if !acts.contains(&a) {
                    acts.push(a);
                }
            } else if !(gguf && a == Activation::Exact) {
                let supported: Vec<&str> = [Activation::Exact, Activation::Q8_1, Activation::Q8K]
                    .into_iter()
                    .filter(|&a| takes(a))
                    .map(Activation::name)
                    .collect();
                notes.push(format!(
                    "{} does not take the {} activation (supported: {}){}",
                    format.name(),
                    a.name(),
                    supported.join(", "),
                    if gguf && !wanted.contains(&Activation::Q8_1) {
                        "; its default q8_1 row runs"
                    } else {
                        ""
                    }
                ));
            }
        }
        if !acts.is_empty() {
            runs.push((format, acts));
        }
    }
    (runs, notes)
}

/// Writes `s` to stdout; when stdout is gone (`| head`), the run stops quietly; when it
/// cannot be written (a full disk), with the error and exit status 2.
fn emit(s: &str) {
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("ninfer: {:#}", crate::stdout_error(e));
        std::process::exit(2);
    }
}

/// Prints on stdout; in table mode lines appear as they are measured, without tearing the
/// progress bar.
struct Printer {
    bar: ProgressBar,
    output: Output,
}

impl Printer {
    fn line(&self, s: &str) {
        if self.output == Output::Table {
            self.bar.suspend(|| emit(&format!("{s}\n")));
        }
    }
}

/// The peer: an explicit `--ggml` must load; the default location may be absent, and then
/// the second value is the line saying how to get it.
fn load_peer(dir: Option<&Path>) -> Result<(Option<ggml::Ggml>, Option<String>)> {
    if let Some(dir) = dir {
        let g = ggml::Ggml::load(dir).map_err(|e| anyhow!("--ggml {}: {e}", dir.display()))?;
        return Ok((Some(g), None));
    }
    Ok(match ggml::Ggml::load(&ggml::default_dir()) {
        Ok(g) => (Some(g), None),
        Err(e) => (
            None,
            Some(format!(
                "ggml: not loaded ({e}), its columns print \"-\"; get it with scripts/build-ggml.sh (run from the repository), or pass --ggml DIR / set NINFER_GGML_DIR"
            )),
        ),
    })
}

/// What stays fixed during a run.
struct Setup<'a> {
    args: &'a LinearArgs,
    ms: Vec<usize>,
    threads: Vec<usize>,
    budget: Duration,
    peer: Option<ggml::Ggml>,
    /// Pools for ggml's side, per thread count ≥ 2.
    pools: BTreeMap<usize, rayon::ThreadPool>,
    /// Weights larger than this are beyond L3.
    l3_limit: usize,
    /// Bytes per timed sample of the read-bandwidth measurement.
    bw_chunk: usize,
    info: RunInfo,
}

/// The lines above the table: run settings, machine, bandwidth, peer, notes.
fn preamble(s: &Setup<'_>, notes: &[String], out: &Printer) {
    out.line(&format!(
        "ninfer bench linear: y = x · Wᵀ, f32 x and y; best of ≥ 3 runs in ~{} ms each; L3 {}",
        s.args.budget_ms,
        s.info
            .l3
            .map_or("unknown (taken as 32 MiB)".into(), |v| format!(
                "{} MiB",
                v >> 20
            ))
    ));
    let i = &s.info;
    let threads: Vec<String> = i.threads.iter().map(usize::to_string).collect();
    out.line(&format!(
        "cpu: {} ({}); ISA {}; threads {}; {}",
        i.cpu_model,
        if i.cpu_flags.is_empty() {
            "no AVX2/AVX-512 flags".into()
        } else {
            i.cpu_flags.join(" ")
        },
        i.isa,
        threads.join(","),
        i.date
    ));
    if s.info.bw.is_empty() {
        out.line("read bandwidth: not measured (--no-bw)");
    } else {
        let per: Vec<String> = s
            .info
            .bw
            .iter()
            .map(|(t, b)| format!("{t} thread{} {b:.1} GB/s", if *t == 1 { "" } else { "s" }))
            .collect();
        out.line(&format!(
            "read bandwidth (best {} MiB chunk of {} MiB): {}",
            s.bw_chunk.min(s.args.bw_mib << 20) >> 20,
            s.args.bw_mib,
            per.join(", ")
        ));
    }
    if let Some(g) = &s.peer {
        out.line(&format!(
            "peer: ggml vec_dot (with its own activation quantization) from {}",
            g.dir.display()
        ));
    }
    for note in notes {
        if out.output == Output::Table {
            out.line(note);
        } else {
            out.bar.suspend(|| eprintln!("ninfer: {note}"));
        }
    }
    out.line("");
    out.line(&table_header());
}

/// Measures one row group, a format at one shape: every M and thread count.
fn measure_group(
    s: &Setup<'_>,
    format: Format,
    activation: Activation,
    (n, k): (usize, usize),
    out: &Printer,
) -> Result<Vec<Row>> {
    let name = format.name();
    out.bar.set_message(format!("{name} {n}x{k}: payload"));
    let p = payload::planes(format, n, k).with_context(|| format!("payload of {name} {n}x{k}"))?;
    let layout = format.info().layout;
    let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]])?;
    let wbytes: usize = p.iter().map(Vec::len).sum();
    // One prepared weight per thread count (each owns its pool; the planes are shared).
    let mut ws = Vec::new();
    for &t in &s.threads {
        let mut w = PreparedWeight::new(view)?;
        w.set_activation(activation)?;
        w.set_threads(t)?;
        if let Some(isa) = s.args.isa {
            w.set_isa(isa)?;
        }
        ws.push(w);
    }
    let dot = s
        .peer
        .as_ref()
        .filter(|_| layout == Layout::GgufBlocksV1)
        .and_then(|g| format.info().ggml_type.and_then(|t| g.dot(t)));
    let mut rows = Vec::new();
    for &m in &s.ms {
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i % 97) as f32 - 48.0) / 48.0)
            .collect();
        let mut y = vec![0f32; m * n];
        for (&t, w) in s.threads.iter().zip(&ws) {
            out.bar.set_message(format!("{name} {n}x{k} M={m} t={t}"));
            let mut err = None;
            let mut run = || {
                if let Err(e) = w.forward_f32(&x, m, None, &mut y) {
                    err = Some(e);
                }
                black_box(&y);
            };
            // ggml's runs alternate with ours, so a slow spell of the machine hits both.
            let mut peer = dot
                .as_ref()
                .map(|d| measure::ggml(d, &p[0], n, k, &x, m, s.pools.get(&t)));
            let (ninfer, ggml) = match peer.as_mut() {
                Some(g) => {
                    let b = measure::best_interleaved(s.budget, &mut [&mut run, g]);
                    (b[0], Some(b[1]))
                }
                None => (measure::best(s.budget, run), None),
            };
            if let Some(e) = err {
                return Err(e).with_context(|| format!("forward of {name} {n}x{k} M={m} t={t}"));
            }
            let row = Row {
                format,
                activation,
                n,
                k,
                m,
                threads: t,
                wbytes,
                ninfer,
                ggml,
                bw: s.info.bw.get(&t).copied(),
                beyond_l3: wbytes > s.l3_limit,
            };
            out.line(&table_row(&row));
            rows.push(row);
            out.bar.inc(1);
        }
    }
    for v in group_verdicts(&rows) {
        out.line(&v);
    }
    Ok(rows)
}

/// `ninfer bench linear`.
pub fn linear(args: &LinearArgs) -> Result<bool> {
    let output = if args.json {
        Output::Json
    } else if args.csv {
        Output::Csv
    } else {
        Output::Table
    };
    let (runs, act_notes) = plan(&select_formats(&args.formats)?, &args.activation);
    if runs.is_empty() {
        bail!("--activation: nothing to run ({})", act_notes.join("; "));
    }
    let shapes = if args.quick {
        vec![(4096, 4096)]
    } else {
        args.shapes.clone()
    };
    // K must suit every selected format's block size: refuse before measuring anything.
    for &(f, _) in &runs {
        for &(n, k) in &shapes {
            ninfer::layouts::plane_sizes(f, f.info().layout, n, k)
                .with_context(|| format!("--shapes {n}x{k} for {}", f.name()))?;
        }
    }
    let (mut threads, mut ms) = (args.threads.clone(), args.m.clone());
    threads.sort_unstable();
    threads.dedup();
    ms.sort_unstable();
    ms.dedup();
    let budget = Duration::from_millis(args.budget_ms);
    let (peer, peer_note) = load_peer(args.ggml.as_deref())?;

    let groups: usize = runs.iter().map(|r| r.1.len()).sum();
    let bar = ProgressBar::new((groups * shapes.len() * ms.len() * threads.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {wide_msg} [{bar:24}] {pos}/{len} ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let out = Printer {
        bar: bar.clone(),
        output,
    };

    let date = measure::utc_now();
    let l3 = measure::l3_bytes();
    let l3_limit = l3.unwrap_or(32 << 20);
    let bw_chunk = (2 * l3_limit).max(64 << 20);
    let mut bw = BTreeMap::new();
    if !args.no_bw {
        bar.set_message(format!("read bandwidth ({} MiB)", args.bw_mib));
        let mut buf = vec![0u64; args.bw_mib << 17];
        buf.iter_mut().enumerate().for_each(|(i, v)| *v = i as u64);
        // A longer budget than the rows': more samples, more chance of a quiet one.
        for &t in &threads {
            bw.insert(t, measure::read_bandwidth(&buf, t, bw_chunk, budget * 4)?);
        }
    }
    let mut pools = BTreeMap::new();
    for &t in threads.iter().filter(|&&t| t > 1) {
        pools.insert(t, measure::pool(t)?);
    }
    let ggml_dir = peer.as_ref().map(|g| g.dir.display().to_string());
    let setup = Setup {
        args,
        ms,
        threads: threads.clone(),
        budget,
        peer,
        pools,
        l3_limit,
        bw_chunk,
        info: RunInfo {
            isa: args.isa.unwrap_or_else(Isa::detect).name().to_string(),
            cpu_model: measure::cpu_model(),
            cpu_flags: measure::simd_flags(),
            threads,
            date,
            l3,
            bw,
            ggml_dir,
        },
    };
    let notes: Vec<String> = peer_note.into_iter().chain(act_notes).collect();
    preamble(&setup, &notes, &out);
    let mut rows: Vec<Row> = Vec::new();
    for (format, acts) in runs {
        for &shape in &shapes {
            for &a in &acts {
                rows.extend(measure_group(&setup, format, a, shape, &out)?);
            }
        }
    }
    bar.finish_and_clear();
    match output {
        Output::Table => {
            emit(&format!("\n{}\n", summary(&rows).join("\n")));
        }
        Output::Csv => emit(&csv(&rows, &setup.info)),
        Output::Json => emit(&json(&rows, &setup.info)),
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_and_refuse() {
        assert_eq!(parse_shape("4096x4096"), Ok((4096, 4096)));
        assert_eq!(parse_shape("16384×4096"), Ok((16384, 4096)));
        for bad in ["4096", "0x256", "ax4", "65536x65537", "4x"] {
            assert!(parse_shape(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn formats_filter_by_substring() {
        let all = select_formats(&[]).unwrap();
        assert!(all.len() >= 29 && !all.contains(&Format::Int32));
        assert_eq!(
            select_formats(&["bf16".into()]).unwrap(),
            [Format::Bf16, Format::Fp8E4m3fnRowBf16]
        );
        assert!(select_formats(&["int32".into()]).is_err());
        assert!(select_formats(&["nope".into()]).is_err());
    }
}
