//! `ninfer bench linear`: the throughput of `y = x · Wᵀ` (the library's `linear`) on this
//! machine, per format, thread count, batch size M and weight shape N × K, next to this
//! machine's read bandwidth and ggml's own `vec_dot` measured in the same run, with the
//! verdicts of issue 6's targets:
//!
//! - ≥ 1.2× ggml's `vec_dot` for GGUF types while the weight fits in L3 (4096 × 4096);
//! - ≥ 90% of the measured read bandwidth at M = 1 when it does not (16384 × 4096);
//! - the native formats q4_g64_fp16, q8_g32_fp16, fp8_e4m3fn_row_* and nvfp4 at least as
//!   fast per weight byte (weight GB/s) as ggml's best GGUF type in the same configuration.
//!
//! Weights are random valid payloads ([`payload`]); x is a fixed f32 pattern; y is f32.
//! Each figure is the best of several runs ([`measure::best`]): on a shared machine compare
//! ratios measured in one run. Progress goes to stderr, the results to stdout.

pub mod ggml;
mod measure;
mod payload;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use clap::builder::TypedValueParser as _;
use indicatif::{ProgressBar, ProgressStyle};
use measure::Best;
use ninfer::linear::{Device, PreparedWeight, supported};
use ninfer::registry::FORMATS;
use ninfer::{Dtype, Format, Layout, WeightView};
use std::collections::BTreeMap;
use std::fmt::Write as _;
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
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2],
          value_parser = clap::value_parser!(u16).range(1..=1024).map(usize::from))]
    threads: Vec<usize>,
    /// Batch sizes M, rows of x (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 32],
          value_parser = clap::value_parser!(u32).range(1..=65536).map(|v| v as usize))]
    m: Vec<usize>,
    /// Weight shapes N x K (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NxK",
          default_values = ["4096x4096", "16384x4096"], value_parser = parse_shape)]
    shapes: Vec<(usize, usize)>,
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

/// One measured configuration.
#[derive(Clone, Debug)]
struct Row {
    format: Format,
    n: usize,
    k: usize,
    m: usize,
    threads: usize,
    /// Bytes of all the weight's planes.
    wbytes: usize,
    ninfer: Best,
    ggml: Option<Best>,
    /// Measured read bandwidth for this thread count, GB/s.
    bw: Option<f64>,
    /// Whether the weight is larger than L3.
    beyond_l3: bool,
}

impl Row {
    fn macs(&self) -> f64 {
        (self.m * self.n * self.k) as f64
    }
    fn gmac(&self) -> f64 {
        self.macs() / self.ninfer.wall / 1e9
    }
    /// GMAC/s over the calling thread's CPU time: with one thread the work runs there, so
    /// this excludes time lost to other processes.
    fn cpu_gmac(&self) -> Option<f64> {
        (self.threads == 1).then(|| self.macs() / self.ninfer.cpu / 1e9)
    }
    fn weight_gbs(&self) -> f64 {
        self.wbytes as f64 / self.ninfer.wall / 1e9
    }
    fn bw_fraction(&self) -> Option<f64> {
        self.bw.map(|b| self.weight_gbs() / b)
    }
    fn ggml_gmac(&self) -> Option<f64> {
        self.ggml.map(|g| self.macs() / g.wall / 1e9)
    }
    fn ggml_weight_gbs(&self) -> Option<f64> {
        self.ggml.map(|g| self.wbytes as f64 / g.wall / 1e9)
    }
    fn ratio(&self) -> Option<f64> {
        self.ggml.map(|g| g.wall / self.ninfer.wall)
    }
    /// Target 1: ≥ 1.2× ggml, for GGUF types in L3 (beyond it both are memory-bound).
    fn ggml_target(&self) -> Option<bool> {
        (!self.beyond_l3).then_some(())?;
        self.ratio().map(|r| r >= 1.2)
    }
    /// Target 2: ≥ 90% of the read bandwidth at M = 1 beyond L3 (at larger M the product
    /// is compute-bound by design).
    fn bw_target(&self) -> Option<bool> {
        (self.beyond_l3 && self.m == 1).then_some(())?;
        self.bw_fraction().map(|f| f >= 0.9)
    }
    fn label(&self) -> String {
        format!(
            "{} {}x{} M={} t={}",
            self.format.name(),
            self.n,
            self.k,
            self.m,
            self.threads
        )
    }
}

/// The native formats issue 6's third target names: q4_g64, q8_g32, fp8 rows, nvfp4.
fn is_native(f: Format) -> bool {
    matches!(
        f,
        Format::Q4_G64Fp16
            | Format::Q8_G32Fp16
            | Format::Fp8E4m3fnRowBf16
            | Format::Fp8E4m3fnRowFp16
            | Format::Nvfp4
    )
}

/// Target 3 for every native row: its weight GB/s over the best ggml weight GB/s of a GGUF
/// type in the same (N, K, M, threads), with that type; `None` where no GGUF type was
/// measured with ggml in that configuration.
fn native_targets(rows: &[Row]) -> Vec<Option<(f64, Format)>> {
    let mut best: BTreeMap<(usize, usize, usize, usize), (f64, Format)> = BTreeMap::new();
    for r in rows {
        if let Some(g) = r.ggml_weight_gbs() {
            let e = best
                .entry((r.n, r.k, r.m, r.threads))
                .or_insert((g, r.format));
            if g > e.0 {
                *e = (g, r.format);
            }
        }
    }
    rows.iter()
        .map(|r| {
            is_native(r.format)
                .then(|| best.get(&(r.n, r.k, r.m, r.threads)))
                .flatten()
                .map(|&(g, f)| (r.weight_gbs() / g, f))
        })
        .collect()
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

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), percent)
}

/// Column headers of the table and their widths.
const COLUMNS: [(&str, usize); 11] = [
    ("format", 19),
    ("N x K", 11),
    ("M", 3),
    ("t", 2),
    ("ms", 9),
    ("GMAC/s", 7),
    ("W GB/s", 7),
    ("of BW", 6),
    ("cpu GMAC/s", 10),
    ("ggml GMAC/s", 11),
    ("ratio", 6),
];

fn table_line(cells: &[String]) -> String {
    let mut s = String::new();
    for (i, (c, (_, w))) in cells.iter().zip(COLUMNS).enumerate() {
        if i == 0 {
            let _ = write!(s, "{c:<w$}");
        } else {
            let _ = write!(s, "  {c:>w$}");
        }
    }
    s
}

fn table_header() -> String {
    let h: Vec<String> = COLUMNS.iter().map(|(h, _)| h.to_string()).collect();
    let line = table_line(&h);
    format!("{line}\n{}", "-".repeat(line.chars().count()))
}

fn table_row(r: &Row) -> String {
    table_line(&[
        r.format.name().into(),
        format!("{}x{}", r.n, r.k),
        r.m.to_string(),
        r.threads.to_string(),
        format!("{:.3}", r.ninfer.wall * 1e3),
        format!("{:.2}", r.gmac()),
        format!("{:.2}", r.weight_gbs()),
        pct(r.bw_fraction()),
        fmt_opt(r.cpu_gmac(), 2),
        fmt_opt(r.ggml_gmac(), 2),
        fmt_opt(r.ratio(), 2),
    ])
}

/// "ok" or "MISS" with how many rows meet the target and the observed range.
fn verdict(name: &str, results: &[(bool, f64)], unit: impl Fn(f64) -> String) -> Option<String> {
    if results.is_empty() {
        return None;
    }
    let met = results.iter().filter(|r| r.0).count();
    let lo = results.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
    let hi = results
        .iter()
        .map(|r| r.1)
        .fold(f64::NEG_INFINITY, f64::max);
    let range = if results.len() == 1 {
        unit(lo)
    } else {
        format!("{}–{}", unit(lo), unit(hi))
    };
    Some(format!(
        "{name}: {}, {met} of {} rows ({range})",
        if met == results.len() { "ok" } else { "MISS" },
        results.len(),
    ))
}

fn times(v: f64) -> String {
    format!("{v:.2}×")
}

fn percent(v: f64) -> String {
    format!("{:.0}%", 100.0 * v)
}

/// The verdict lines of one row group (a format at one shape): targets 1 and 2.
fn group_verdicts(rows: &[Row]) -> Vec<String> {
    let t1: Vec<(bool, f64)> = rows
        .iter()
        .filter_map(|r| Some((r.ggml_target()?, r.ratio()?)))
        .collect();
    let t2: Vec<(bool, f64)> = rows
        .iter()
        .filter_map(|r| Some((r.bw_target()?, r.bw_fraction()?)))
        .collect();
    [
        verdict("target ≥ 1.2× ggml (in L3)", &t1, times),
        verdict("target ≥ 90% of read BW (beyond L3, M = 1)", &t2, percent),
    ]
    .into_iter()
    .flatten()
    .map(|v| {
        format!(
            "  {} {}x{}: {v}",
            rows[0].format.name(),
            rows[0].n,
            rows[0].k
        )
    })
    .collect()
}

/// The run's summary: per target, rows meeting it and the worst row.
fn summary(rows: &[Row]) -> Vec<String> {
    let native = native_targets(rows);
    let mut out = vec!["targets in this run (rows meeting them; worst row):".to_owned()];
    let mut line = |name: &str, hits: Vec<(bool, f64, String)>, unit: &dyn Fn(f64) -> String| {
        let worst = hits.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        out.push(match worst {
            None => format!("  {name}: not evaluated in this run"),
            Some(w) => format!(
                "  {name}: {} of {} ({}: {})",
                hits.iter().filter(|h| h.0).count(),
                hits.len(),
                w.2,
                unit(w.1)
            ),
        });
    };
    line(
        "≥ 1.2× ggml vec_dot, GGUF types in L3",
        rows.iter()
            .filter_map(|r| Some((r.ggml_target()?, r.ratio()?, r.label())))
            .collect(),
        &times,
    );
    line(
        "≥ 90% of read bandwidth beyond L3, M = 1",
        rows.iter()
            .filter_map(|r| Some((r.bw_target()?, r.bw_fraction()?, r.label())))
            .collect(),
        &percent,
    );
    line(
        "native formats per weight byte ≥ ggml's best GGUF type",
        rows.iter()
            .zip(&native)
            .filter_map(|(r, t)| {
                let (v, f) = (*t)?;
                Some((v >= 1.0, v, format!("{} vs ggml {}", r.label(), f.name())))
            })
            .collect(),
        &times,
    );
    out
}

/// A JSON number, or null.
fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.6}"),
        _ => "null".into(),
    }
}

fn json_bool(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "true",
        Some(false) => "false",
        None => "null",
    }
}

fn json_str(s: &str) -> String {
    let mut o = String::from('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// The per-row fields of the JSON and CSV outputs, in order.
fn fields(r: &Row, native: Option<(f64, Format)>) -> Vec<(&'static str, String, bool)> {
    // (name, value, is a string)
    vec![
        ("format", r.format.name().into(), true),
        ("n", r.n.to_string(), false),
        ("k", r.k.to_string(), false),
        ("m", r.m.to_string(), false),
        ("threads", r.threads.to_string(), false),
        ("weight_bytes", r.wbytes.to_string(), false),
        ("ms", json_num(Some(r.ninfer.wall * 1e3)), false),
        ("gmac_s", json_num(Some(r.gmac())), false),
        ("weight_gb_s", json_num(Some(r.weight_gbs())), false),
        ("bw_fraction", json_num(r.bw_fraction()), false),
        ("cpu_gmac_s", json_num(r.cpu_gmac()), false),
        ("ggml_gmac_s", json_num(r.ggml_gmac()), false),
        ("ratio", json_num(r.ratio()), false),
        ("beyond_l3", r.beyond_l3.to_string(), false),
        ("meets_ggml_1_2x", json_bool(r.ggml_target()).into(), false),
        ("meets_bw_90", json_bool(r.bw_target()).into(), false),
        ("native_vs_best_ggml", json_num(native.map(|t| t.0)), false),
        (
            "meets_native",
            json_bool(native.map(|t| t.0 >= 1.0)).into(),
            false,
        ),
    ]
}

fn csv(rows: &[Row]) -> String {
    let native = native_targets(rows);
    let mut out = String::new();
    for (i, (r, t)) in rows.iter().zip(&native).enumerate() {
        let f = fields(r, *t);
        if i == 0 {
            out.push_str(&f.iter().map(|x| x.0).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        let vals: Vec<&str> = f
            .iter()
            .map(|x| if x.1 == "null" { "" } else { x.1.as_str() })
            .collect();
        out.push_str(&vals.join(","));
        out.push('\n');
    }
    out
}

fn json(rows: &[Row], context: &RunInfo) -> String {
    let native = native_targets(rows);
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"isa\": {},", json_str(&context.isa));
    let _ = writeln!(
        out,
        "  \"l3_bytes\": {},",
        context.l3.map_or("null".into(), |v| v.to_string())
    );
    let bw: Vec<String> = context
        .bw
        .iter()
        .map(|(t, b)| format!("\"{t}\": {}", json_num(Some(*b))))
        .collect();
    let _ = writeln!(out, "  \"read_bandwidth_gb_s\": {{{}}},", bw.join(", "));
    let _ = writeln!(
        out,
        "  \"ggml\": {},",
        context.ggml_dir.as_deref().map_or("null".into(), json_str)
    );
    out.push_str("  \"rows\": [");
    for (i, (r, t)) in rows.iter().zip(&native).enumerate() {
        let f: Vec<String> = fields(r, *t)
            .into_iter()
            .map(|(k, v, s)| format!("\"{k}\": {}", if s { json_str(&v) } else { v }))
            .collect();
        let _ = write!(
            out,
            "{}\n    {{{}}}",
            if i == 0 { "" } else { "," },
            f.join(", ")
        );
    }
    out.push_str("\n  ]\n}\n");
    out
}

/// What the run measured besides the rows.
struct RunInfo {
    isa: String,
    l3: Option<usize>,
    /// Read bandwidth per thread count, GB/s.
    bw: BTreeMap<usize, f64>,
    ggml_dir: Option<String>,
}

/// Writes `s` to stdout; when stdout is gone (`| head`), the run stops quietly.
fn emit(s: &str) {
    let mut o = std::io::stdout().lock();
    if o.write_all(s.as_bytes()).and_then(|()| o.flush()).is_err() {
        std::process::exit(0);
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

/// The lines above the table: run settings, bandwidth, peer.
fn preamble(s: &Setup<'_>, peer_note: Option<&str>, out: &Printer) {
    out.line(&format!(
        "ninfer bench linear: y = x · Wᵀ, f32 x and y; best of ≥ 3 runs in ~{} ms each; ISA {}; L3 {}",
        s.args.budget_ms,
        s.info.isa,
        s.info
            .l3
            .map_or("unknown (taken as 32 MiB)".into(), |v| format!("{} MiB", v >> 20))
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
    if let Some(note) = peer_note {
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
        w.set_threads(t)?;
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
            let ninfer = measure::best(s.budget, || {
                if let Err(e) = w.forward_f32(&x, m, None, &mut y) {
                    err = Some(e);
                }
                black_box(&y);
            });
            if let Some(e) = err {
                return Err(e).with_context(|| format!("forward of {name} {n}x{k} M={m} t={t}"));
            }
            let ggml = dot
                .as_ref()
                .map(|d| measure::ggml(d, &p[0], n, k, &x, m, s.pools.get(&t), s.budget));
            let row = Row {
                format,
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
    let formats = select_formats(&args.formats)?;
    let shapes = if args.quick {
        vec![(4096, 4096)]
    } else {
        args.shapes.clone()
    };
    // K must suit every selected format's block size: refuse before measuring anything.
    for &f in &formats {
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

    let bar = ProgressBar::new((formats.len() * shapes.len() * ms.len() * threads.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {wide_msg} [{bar:24}] {pos}/{len} ETA {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    let out = Printer {
        bar: bar.clone(),
        output,
    };

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
        threads,
        budget,
        peer,
        pools,
        l3_limit,
        bw_chunk,
        info: RunInfo {
            isa: format!("{:?}", ninfer::linear::Isa::detect()).to_lowercase(),
            l3,
            bw,
            ggml_dir,
        },
    };
    preamble(&setup, peer_note.as_deref(), &out);
    let mut rows: Vec<Row> = Vec::new();
    for &format in &formats {
        for &shape in &shapes {
            rows.extend(measure_group(&setup, format, shape, &out)?);
        }
    }
    bar.finish_and_clear();
    match output {
        Output::Table => {
            emit(&format!("\n{}\n", summary(&rows).join("\n")));
        }
        Output::Csv => emit(&csv(&rows)),
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

    fn row(format: Format, m: usize, wall: f64, ggml: Option<f64>, beyond: bool) -> Row {
        Row {
            format,
            n: 4,
            k: 8,
            m,
            threads: 1,
            wbytes: 100,
            ninfer: Best { wall, cpu: wall },
            ggml: ggml.map(|g| Best { wall: g, cpu: g }),
            bw: Some(100.0 / 1e9 / 2.0), // 100 bytes in 2 s
            beyond_l3: beyond,
        }
    }

    #[test]
    fn targets() {
        // ninfer 1 s, ggml 1.2 s: exactly 1.2×.
        let r = row(Format::GgufQ4_K, 1, 1.0, Some(1.2), false);
        assert_eq!(r.ratio(), Some(1.2));
        assert_eq!(r.ggml_target(), Some(true));
        assert_eq!(r.bw_target(), None);
        let r = row(Format::GgufQ4_K, 1, 1.0, Some(1.1), false);
        assert_eq!(r.ggml_target(), Some(false));
        // Beyond L3 at M = 1: weight 100 B/s against 50 B/s of bandwidth.
        let r = row(Format::Bf16, 1, 1.0, None, true);
        assert_eq!(r.bw_fraction(), Some(2.0));
        assert_eq!(r.bw_target(), Some(true));
        assert_eq!(row(Format::Bf16, 32, 1.0, None, true).bw_target(), None);
        // Native: q4_g64 at 100 B/s against ggml's best GGUF at 50 B/s (q4_0) and 25 B/s.
        let rows = [
            row(Format::GgufQ4_0, 1, 1.0, Some(2.0), false),
            row(Format::GgufQ8_0, 1, 1.0, Some(4.0), false),
            row(Format::Q4_G64Fp16, 1, 1.0, None, false),
            row(Format::Bf16, 1, 1.0, None, false),
        ];
        let t = native_targets(&rows);
        assert_eq!(t[2], Some((2.0, Format::GgufQ4_0)));
        assert_eq!(t[3], None);
        assert!(csv(&rows).lines().count() == 5);
    }
}
