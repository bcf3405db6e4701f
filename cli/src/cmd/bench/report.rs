//! The results of `ninfer bench linear`: rows, the performance targets per row, the table with
//! its verdict lines and summary, and the JSON and CSV forms.

use super::measure::Best;
use ninfer::Format;
use ninfer::linear::Activation;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One measured configuration.
#[derive(Clone, Debug)]
pub struct Row {
    pub format: Format,
    /// The activation profile the product ran with.
    pub activation: Activation,
    pub n: usize,
    pub k: usize,
    pub m: usize,
    pub threads: usize,
    /// Bytes of all the weight's planes.
    pub wbytes: usize,
    pub ninfer: Best,
    pub ggml: Option<Best>,
    /// Measured read bandwidth for this thread count, GB/s.
    pub bw: Option<f64>,
    /// Whether the weight is larger than L3.
    pub beyond_l3: bool,
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
    /// The format's name, suffixed `+q8_1` when a non-GGUF format ran with q8_1
    /// activations (GGUF products always do by default), `+q8_K` with q8_K activations.
    pub fn name(&self) -> String {
        let gguf = self.format.info().layout == ninfer::Layout::GgufBlocksV1;
        match self.activation {
            Activation::Q8_1 if !gguf => format!("{}+q8_1", self.format.name()),
            Activation::Q8K => format!("{}+q8_K", self.format.name()),
            _ => self.format.name().into(),
        }
    }
    fn label(&self) -> String {
        format!(
            "{} {}x{} M={} t={}",
            self.name(),
            self.n,
            self.k,
            self.m,
            self.threads
        )
    }
}

/// The rows the native-format target applies to: the grouped formats (q2_g64, t2_g128,
/// q4_g64, q5_g64, q6_g64, q8_g32) and nvfp4 with the q8_1 profile, fp8 rows with their
/// exact one.
fn is_native(r: &Row) -> bool {
    match r.format {
        Format::Q2_G64Fp16
        | Format::T2_G128Fp16
        | Format::Q4_G64Fp16
        | Format::Q5_G64Fp16
        | Format::Q6_G64Fp16
        | Format::Q8_G32Fp16
        | Format::Nvfp4 => r.activation == Activation::Q8_1,
        Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => r.activation == Activation::Exact,
        _ => false,
    }
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
            is_native(r)
                .then(|| best.get(&(r.n, r.k, r.m, r.threads)))
                .flatten()
                .map(|&(g, f)| (r.weight_gbs() / g, f))
        })
        .collect()
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

pub fn table_header() -> String {
    let h: Vec<String> = COLUMNS.iter().map(|(h, _)| h.to_string()).collect();
    let line = table_line(&h);
    format!("{line}\n{}", "-".repeat(line.chars().count()))
}

pub fn table_row(r: &Row) -> String {
    table_line(&[
        r.name(),
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

pub fn percent(v: f64) -> String {
    format!("{:.0}%", 100.0 * v)
}

/// The verdict lines of one row group (a format at one shape): targets 1 and 2.
pub fn group_verdicts(rows: &[Row]) -> Vec<String> {
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
pub fn summary(rows: &[Row]) -> Vec<String> {
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
        ("activation", r.activation.name().into(), true),
    ]
}

/// A CSV field, quoted where it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

/// The run-wide fields every CSV line repeats (JSON holds them once, at the top).
fn run_fields(info: &RunInfo) -> [(&'static str, String, bool); 4] {
    [
        ("isa", info.isa.clone(), true),
        ("cpu_model", info.cpu_model.clone(), true),
        ("cpu_flags", info.cpu_flags.join(" "), true),
        ("date_utc", info.date.clone(), true),
    ]
}

pub fn csv(rows: &[Row], info: &RunInfo) -> String {
    let native = native_targets(rows);
    let mut out = String::new();
    for (i, (r, t)) in rows.iter().zip(&native).enumerate() {
        let mut f = fields(r, *t);
        f.extend(run_fields(info));
        if i == 0 {
            out.push_str(&f.iter().map(|x| x.0).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        let vals: Vec<String> = f
            .iter()
            .map(|x| {
                if x.1 == "null" {
                    String::new()
                } else {
                    csv_field(&x.1)
                }
            })
            .collect();
        out.push_str(&vals.join(","));
        out.push('\n');
    }
    out
}

pub fn json(rows: &[Row], context: &RunInfo) -> String {
    let native = native_targets(rows);
    let mut out = String::from("{\n");
    for (k, v, _) in run_fields(context) {
        let _ = writeln!(out, "  \"{k}\": {},", json_str(&v));
    }
    let threads: Vec<String> = context.threads.iter().map(usize::to_string).collect();
    let _ = writeln!(out, "  \"threads\": [{}],", threads.join(", "));
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
pub struct RunInfo {
    /// The ISA tier the products ran on.
    pub isa: String,
    /// The CPU's model name ("unknown" where not reported).
    pub cpu_model: String,
    /// The CPU's SIMD features among those the library uses, /proc/cpuinfo names.
    pub cpu_flags: Vec<&'static str>,
    /// The thread counts measured, ascending.
    pub threads: Vec<usize>,
    /// When the run started, `YYYY-MM-DD HH:MM:SS UTC`.
    pub date: String,
    pub l3: Option<usize>,
    /// Read bandwidth per thread count, GB/s.
    pub bw: BTreeMap<usize, f64>,
    pub ggml_dir: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ninfer::Format;

    fn row(format: Format, m: usize, wall: f64, ggml: Option<f64>, beyond: bool) -> Row {
        Row {
            format,
            activation: Activation::Exact,
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
        // Native: q4_g64 (q8_1 profile) at 100 B/s against ggml's best GGUF at 50 B/s (q4_0)
        // and 25 B/s; the exact profile of q4_g64 and bf16 have no such target.
        let q8_1 = |mut r: Row| {
            r.activation = Activation::Q8_1;
            r
        };
        let rows = [
            row(Format::GgufQ4_0, 1, 1.0, Some(2.0), false),
            row(Format::GgufQ8_0, 1, 1.0, Some(4.0), false),
            q8_1(row(Format::Q4_G64Fp16, 1, 1.0, None, false)),
            row(Format::Bf16, 1, 1.0, None, false),
            row(Format::Q4_G64Fp16, 1, 1.0, None, false),
        ];
        let t = native_targets(&rows);
        assert_eq!(t[2], Some((2.0, Format::GgufQ4_0)));
        assert_eq!(t[3], None);
        assert_eq!(t[4], None);
        let info = RunInfo {
            isa: "avx2".into(),
            cpu_model: "Some CPU, 8-Core".into(),
            cpu_flags: vec!["avx2", "fma"],
            threads: vec![1],
            date: "2024-02-29 13:45:07 UTC".into(),
            l3: None,
            bw: BTreeMap::new(),
            ggml_dir: None,
        };
        let c = csv(&rows, &info);
        assert!(c.lines().count() == 6);
        assert!(
            c.lines()
                .nth(1)
                .unwrap()
                .ends_with(",avx2,\"Some CPU, 8-Core\",avx2 fma,2024-02-29 13:45:07 UTC"),
            "{c}"
        );
    }
}
