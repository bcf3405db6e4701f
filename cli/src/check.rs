//! The checks `verify` runs on a decodable tensor besides decoding it:
//!
//! - **linear**: `y = x · Wᵀ` by the library's [`PreparedWeight`] on every CPU instruction
//!   set this machine runs ([`Isa::ALL`]) and on CUDA device 0 when there is one, compared
//!   output by output with an f64 oracle computed here, plainly, from the decoded rows,
//!   under the named criterion `linear_f32acc_v1` (docs/linear.md, "Checking a product");
//!   and the paths compared with each other word for word (they are documented to give the
//!   same bits), as are M = 1 and the first row of M = 5.
//! - **checksums**: the decoded values against reference checksums recorded by an
//!   independent decoder (PyPI `gguf`'s dequantizer for the built-in sample), as FNV-1a 64
//!   of the values' little-endian f32 words in row order.

use ninfer::linear::{self, Activation, Device, Isa, PreparedWeight};
use ninfer::{Dtype, Format, WeightView};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// The activation rows: M = 1 (the first row) and M = 5.
pub const MS: [usize; 2] = [1, 5];
const M_MAX: usize = 5;
/// At most this many rows of a tensor go through the products (evenly spaced, first and
/// last included); the others are still validated and decoded.
pub const MAX_ROWS: usize = 256;
/// Weights with longer rows are not put through the products (the oracle holds M × K
/// activations in f64).
pub const MAX_K: usize = 1 << 20;
/// The seed of x.
pub const SEED: u64 = 0x6E69_6E66_6572_0001;

/// splitmix64: the deterministic generator of x.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// x [M_MAX, K]: x[m, j] uniform in [−1, 1) on a 2⁻²³ grid, from splitmix64 of the seed,
/// m and j (the same values for a given (m, j) whatever K is).
pub fn activations(k: usize) -> Vec<f32> {
    (0..M_MAX * k)
        .map(|i| {
            let (m, j) = ((i / k) as u64, (i % k) as u64);
            let r = splitmix64(SEED ^ (m << 40) ^ j);
            (r >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// Where products can run on this machine.
pub struct Devices {
    /// The CPU instruction sets this machine runs, the portable reference first.
    pub isas: Vec<Isa>,
    /// CUDA device 0's description, or why there is none.
    pub cuda: Result<String, String>,
}

impl Devices {
    pub fn probe() -> Devices {
        let isas = Isa::ALL.iter().copied().filter(|i| i.available()).collect();
        let cuda = match ninfer::cuda::device_count() {
            Err(e) => Err(e.to_string()),
            Ok(0) => Err("the NVIDIA driver reports no GPU".into()),
            Ok(_) => match ninfer::cuda::device_properties(0) {
                Ok(p) => Ok(format!(
                    "{} (sm_{}{})",
                    p.name, p.compute_capability.0, p.compute_capability.1
                )),
                Err(e) => Err(e.to_string()),
            },
        };
        Devices { isas, cuda }
    }

    /// `scalar, avx2; CUDA: NVIDIA H200 (sm_90)` or `…; CUDA: not present (reason)`.
    pub fn describe(&self) -> String {
        let isas: Vec<&str> = self.isas.iter().map(|i| i.name()).collect();
        match &self.cuda {
            Ok(d) => format!("CPU {}; CUDA: {d}", isas.join(", ")),
            Err(why) => format!("CPU {}; CUDA: not present ({why})", isas.join(", ")),
        }
    }
}

/// What the linear check of one tensor found.
pub enum Linear {
    /// Not checked, and not a failure: why (no registered format, invalid payload, no
    /// kernel; empty for a tensor that is not a matrix).
    Skipped(String),
    /// Checked.
    Checked(LinearReport),
}

pub struct LinearReport {
    /// Rows of W that went through the products, of N.
    pub rows: usize,
    pub n: usize,
    /// Activation profiles checked (`q8_1` for GGUF; `exact`, and `q8_1` where the format
    /// has the opt-in profile).
    pub profiles: Vec<Activation>,
    /// The paths that ran (`scalar`, `avx2`, `cuda`).
    pub paths: Vec<String>,
    /// Outputs compared with the oracle (every path, every M).
    pub outputs: usize,
    /// The largest |y − ref| / tol over every path, profile and M (0 when every output is
    /// exact; NaN-for-NaN outputs count as 0).
    pub worst: f64,
    /// Whether every path gave the same words (and M = 1 the words of row 0 of M = 5).
    pub identical: bool,
    /// What went wrong, one line each (empty: passed).
    pub failures: Vec<String>,
    /// Paths that could not run this format, with the reason (not failures).
    pub notes: Vec<String>,
}

impl Linear {
    /// The `linear` cell of a table: `256 of 4096 rows: 0.0021` (the worst |y − ref| / tol).
    pub fn cell(&self) -> String {
        match self {
            Linear::Skipped(why) if why.is_empty() => "-".into(),
            Linear::Skipped(why) => format!("- ({why})"),
            Linear::Checked(r) => {
                let mut rows = if r.rows == r.n {
                    crate::table::counted(r.n as u64, "row")
                } else {
                    format!("{} of {}", r.rows, crate::table::counted(r.n as u64, "row"))
                };
                if r.profiles.len() > 1 {
                    let p: Vec<&str> = r.profiles.iter().map(|p| p.name()).collect();
                    rows = format!("{rows} ({})", p.join("+"));
                }
                let verdict = if r.failures.is_empty() {
                    format!("{:.1e}", r.worst)
                } else {
                    "FAILED".into()
                };
                format!("{rows}: {verdict}")
            }
        }
    }

    /// The `paths` cell: `scalar=avx2` when every path gave the same words.
    pub fn paths_cell(&self) -> String {
        match self {
            Linear::Skipped(_) => "-".into(),
            Linear::Checked(r) if r.identical => r.paths.join("="),
            Linear::Checked(r) => format!("{} DIFFER", r.paths.join("/")),
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self, Linear::Checked(r) if !r.failures.is_empty())
    }
}

/// The rows that go through the products: all when N ≤ [`MAX_ROWS`], else MAX_ROWS
/// evenly spaced (the first and the last included).
pub fn row_subset(n: usize) -> Vec<u64> {
    if n <= MAX_ROWS {
        return (0..n as u64).collect();
    }
    (0..MAX_ROWS)
        .map(|i| (i * (n - 1) / (MAX_ROWS - 1)) as u64)
        .collect()
}

/// The byte range of the codes in one block of the GGUF types whose decoding is a
/// difference of two terms, `w = d·sc·q − dmin·m` (ggml's block_q2_K, block_q4_K,
/// block_q5_K): with the codes zeroed a block decodes to its min term `−dmin·m` alone.
fn code_bytes(format: Format) -> Option<std::ops::Range<usize>> {
    use ninfer::formats::gguf::blocks::{q2_k, q4_k, q5_k};
    match format {
        Format::GgufQ2_K => Some(q2_k::QS.range()),
        Format::GgufQ4_K => Some(q4_k::QS.range()),
        // qh and qs, adjacent
        Format::GgufQ5_K => Some(q5_k::QH.at..q5_k::QS.end()),
        _ => None,
    }
}

/// The products' W: the whole view, or the selected rows gathered into a new payload
/// (`owned` keeps its bytes) when the layout allows it.
fn selected<'a>(
    view: &WeightView<'a>,
    rows: &[u64],
    owned: &'a mut Vec<u8>,
) -> ninfer::Result<WeightView<'a>> {
    let (f, l, k) = (view.format(), view.layout(), view.cols());
    owned.resize(ninfer::rows::rows_bytes(view, rows.len())?, 0);
    ninfer::rows::gather_rows(view, rows, owned)?;
    let sizes = ninfer::layouts::plane_sizes(f, l, rows.len(), k)?;
    let mut planes: [&[u8]; ninfer::layouts::MAX_PLANES] = [&[]; ninfer::layouts::MAX_PLANES];
    let mut rest: &[u8] = owned;
    for (p, &s) in planes.iter_mut().zip(&sizes) {
        let (a, b) = rest.split_at(s);
        *p = a;
        rest = b;
    }
    WeightView::new(f, l, rows.len(), k, planes)
}

/// The f64 oracle of one activation row v against decoded rows `w` [S, K]:
/// (Σ_k w·v, Σ_k |w·v|) summed in k order, Σ|·| over the two terms of the decoding equation
/// when `w0` (the min terms) is given (one row per task; the order within a row is fixed).
fn oracle(w: &[f32], w0: Option<&[f32]>, v: &[f64], k: usize) -> Vec<(f64, f64)> {
    w.par_chunks_exact(k)
        .enumerate()
        .map(|(r, row)| {
            let (mut y, mut s) = (0f64, 0f64);
            for (j, (&wv, &xv)) in row.iter().zip(v).enumerate() {
                let p = wv as f64 * xv;
                y += p;
                s += match w0 {
                    Some(w0) => {
                        let m = w0[r * k + j] as f64;
                        ((wv as f64 - m) * xv).abs() + (m * xv).abs()
                    }
                    None => p.abs(),
                };
            }
            (y, s)
        })
        .collect()
}

/// Whether `y` meets the criterion against `(ref, Σ|·|)`; the ratio |y − ref| / tol.
fn within(y: f32, r: f64, s: f64, k: usize) -> (bool, f64) {
    if r.is_nan() {
        return (y.is_nan(), 0.0);
    }
    if r.is_infinite() {
        return (y as f64 == r, 0.0);
    }
    let tol = linear::tolerance(k, s, r, Dtype::F32);
    let err = (y as f64 - r).abs();
    // NaN err (y NaN) fails.
    (err <= tol, if tol > 0.0 { err / tol } else { 0.0 })
}

/// Two outputs are the same words (any NaN matches any NaN: a NaN's payload is not part
/// of the documented result).
fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The first output where `a` and `b` differ, as text.
fn first_difference(a: &[f32], b: &[f32], n: usize) -> Option<String> {
    let i = a.iter().zip(b).position(|(&x, &y)| !same(x, y))?;
    Some(format!(
        "y[{}, {}] = {:e} (0x{:08x}) vs {:e} (0x{:08x})",
        i / n,
        i % n,
        a[i],
        a[i].to_bits(),
        b[i],
        b[i].to_bits()
    ))
}

/// Decodes row r of a tensor into `out[..K]`.
pub type DecodeRow<'a> = dyn Fn(usize, &mut [f32]) -> Result<(), ninfer::Error> + 'a;

/// Checks `linear` on `view` (N × K) on every path of `devices`; `decode` gives a decoded
/// row of the tensor (the oracle's weights).
pub fn linear(view: &WeightView<'_>, decode: &DecodeRow<'_>, devices: &Devices) -> Linear {
    let (format, layout) = (view.format(), view.layout());
    let (n, k) = (view.rows(), view.cols());
    if !linear::supported(format, layout, Dtype::F32, Dtype::F32, Device::Cpu) {
        return Linear::Skipped(format!("no linear kernel for {format} in {layout}"));
    }
    if k > MAX_K {
        return Linear::Skipped(format!("K = {k} is above the check's {MAX_K}"));
    }
    let mut report = LinearReport {
        rows: n,
        n,
        profiles: Vec::new(),
        paths: Vec::new(),
        outputs: 0,
        worst: 0.0,
        identical: true,
        failures: Vec::new(),
        notes: Vec::new(),
    };
    // W for the products: a gathered subset when N is large (every layout whose rows are
    // contiguous; otherwise all rows, and the oracle still only on the subset).
    let subset = row_subset(n);
    let mut owned = Vec::new();
    let (w_view, w_rows): (WeightView<'_>, Vec<usize>) = if subset.len() == n {
        (*view, (0..n).collect())
    } else {
        match selected(view, &subset, &mut owned) {
            Ok(v) => (v, (0..subset.len()).collect()),
            Err(_) => (*view, subset.iter().map(|&r| r as usize).collect()),
        }
    };
    let s = subset.len();
    report.rows = s;
    // The oracle's weights: the decoded rows of the subset, and for the two-term types the
    // min terms (the same rows with their codes zeroed, decoded).
    let mut w = vec![0f32; s * k];
    for (i, &r) in subset.iter().enumerate() {
        if let Err(e) = decode(r as usize, &mut w[i * k..(i + 1) * k]) {
            return Linear::Skipped(format!("row {r} does not decode: {e}"));
        }
    }
    let w0 = code_bytes(format).and_then(|codes| {
        let mut z = Vec::new();
        let zv = selected(view, &subset, &mut z).ok()?;
        let bb = format.info().block_bytes as usize;
        let mut zeroed = zv.plane(0).to_vec();
        for b in zeroed.chunks_exact_mut(bb) {
            b[codes.clone()].fill(0);
        }
        let zv = WeightView::single(format, s, k, &zeroed).ok()?;
        let mut out = vec![0f32; s * k];
        for r in 0..s {
            ninfer::decode::decode_row(&zv, r as u64, &mut out[r * k..(r + 1) * k]).ok()?;
        }
        Some(out)
    });
    if code_bytes(format).is_some() && w0.is_none() {
        report
            .failures
            .push("the min terms of the rows do not decode".into());
        return Linear::Checked(report);
    }
    let x = activations(k);
    let gguf = format.name().starts_with("gguf_");
    let mut profiles = vec![if gguf {
        Activation::Q8_1
    } else {
        Activation::Exact
    }];
    if !gguf
        && k % 32 == 0
        && linear::supported_activation(format, layout, Activation::Q8_1, Device::Cpu)
    {
        profiles.push(Activation::Q8_1);
    }
    // Paths: every instruction set, then CUDA.
    let mut paths: Vec<(String, Option<Isa>)> = devices
        .isas
        .iter()
        .map(|&i| (i.name().to_owned(), Some(i)))
        .collect();
    if devices.cuda.is_ok() {
        paths.push(("cuda".into(), None));
    }
    for &profile in &profiles {
        let tag = if profiles.len() > 1 {
            format!(" ({} activations)", profile.name())
        } else {
            String::new()
        };
        // The activation values the product multiplies, in f64.
        let mut v = vec![0f64; M_MAX * k];
        for m in 0..M_MAX {
            let xm = &x[m * k..(m + 1) * k];
            let vm = &mut v[m * k..(m + 1) * k];
            match profile {
                Activation::Q8_1 => {
                    let mut xhat = vec![0f32; k];
                    if let Err(e) = ninfer::reference::quantize_row_q8_1(xm, &mut [], &mut xhat) {
                        report.failures.push(format!("q8_1 values of x{tag}: {e}"));
                        return Linear::Checked(report);
                    }
                    for (o, &q) in vm.iter_mut().zip(&xhat) {
                        *o = q as f64;
                    }
                }
                Activation::Q8K => {
                    use ninfer::linear::q8_k::{BLOCK_Q8_K_BYTES, QK_K, quantize_row_q8_k};
                    let mut blocks = vec![0u8; k / QK_K * BLOCK_Q8_K_BYTES];
                    if let Err(e) = quantize_row_q8_k(xm, &mut blocks) {
                        report.failures.push(format!("q8_K values of x{tag}: {e}"));
                        return Linear::Checked(report);
                    }
                    // x̂ = d·q, exact in f64.
                    for (vb, b) in vm.chunks_mut(QK_K).zip(blocks.chunks(BLOCK_Q8_K_BYTES)) {
                        let d = f32::from_le_bytes(b[..4].try_into().unwrap()) as f64;
                        for (o, &q) in vb.iter_mut().zip(&b[4..260]) {
                            *o = d * q as i8 as f64;
                        }
                    }
                }
                Activation::Exact => {
                    for (o, &q) in vm.iter_mut().zip(xm) {
                        *o = q as f64;
                    }
                }
            }
        }
        let refs: Vec<Vec<(f64, f64)>> = (0..M_MAX)
            .map(|m| oracle(&w, w0.as_deref(), &v[m * k..(m + 1) * k], k))
            .collect();
        // y of the first path that ran, per M: every other path must give its words.
        let mut first: Vec<Option<(String, Vec<f32>)>> = vec![None; MS.len()];
        for (name, isa) in &paths {
            let prepared = match isa {
                Some(_) => PreparedWeight::new(w_view),
                None => PreparedWeight::on_cuda(w_view, 0),
            };
            let mut p = match prepared {
                Ok(p) => p,
                Err(e) if isa.is_none() => {
                    report.notes.push(format!("cuda: {e}"));
                    continue;
                }
                Err(e) => {
                    report.failures.push(format!("{name}: prepare: {e}"));
                    continue;
                }
            };
            let set = match isa {
                Some(i) => p.set_isa(*i),
                None => Ok(()),
            }
            .and_then(|()| p.set_activation(profile));
            if let Err(e) = set {
                if isa.is_none() && e.status() == ninfer::Status::Unsupported {
                    report.notes.push(format!("cuda{tag}: {e}"));
                } else {
                    report.failures.push(format!("{name}{tag}: {e}"));
                }
                continue;
            }
            if !report.paths.contains(name) {
                report.paths.push(name.clone());
            }
            let wn = w_view.rows();
            for (mi, &m) in MS.iter().enumerate() {
                let mut y = vec![0f32; m * wn];
                if let Err(e) = p.forward_f32(&x[..m * k], m, None, &mut y) {
                    report
                        .failures
                        .push(format!("{name}{tag} M = {m}: forward: {e}"));
                    continue;
                }
                let mut bad = 0usize;
                let mut shown = None;
                for mm in 0..m {
                    for (i, &r) in w_rows.iter().enumerate() {
                        let got = y[mm * wn + r];
                        let (rf, sa) = refs[mm][i];
                        let (ok, ratio) = within(got, rf, sa, k);
                        report.outputs += 1;
                        // An output outside the tolerance without a finite ratio above 1 (a
                        // NaN or infinite y, or a non-finite oracle missed) counts as
                        // infinitely far.
                        let ratio = if ok || ratio > 1.0 {
                            ratio
                        } else {
                            f64::INFINITY
                        };
                        if ratio > report.worst {
                            report.worst = ratio;
                        }
                        if !ok {
                            bad += 1;
                            shown.get_or_insert_with(|| {
                                format!(
                                    "y[{mm}, row {}] = {got:e}, oracle {rf:e}, |error| {:e} > tolerance {:e}",
                                    subset[i],
                                    (got as f64 - rf).abs(),
                                    linear::tolerance(k, sa, rf, Dtype::F32)
                                )
                            });
                        }
                    }
                }
                if let Some(s) = shown {
                    report.failures.push(format!(
                        "{name}{tag} M = {m}: {bad} of {} outputs outside linear_f32acc_v1, first {s}",
                        m * w_rows.len()
                    ));
                }
                match &first[mi] {
                    None => first[mi] = Some((name.clone(), y)),
                    Some((fname, fy)) => {
                        if let Some(d) = first_difference(&y, fy, wn) {
                            report.identical = false;
                            report.failures.push(format!(
                                "{name}{tag} M = {m}: not bit-identical to {fname}: {d}"
                            ));
                        }
                    }
                }
            }
        }
        // M = 1 gives the words of row 0 of M = 5 (any M, the same bits per row).
        if let (Some((_, y1)), Some((name, y5))) = (&first[0], &first[1])
            && let Some(d) = first_difference(y1, &y5[..y1.len()], w_view.rows())
        {
            report.identical = false;
            report.failures.push(format!(
                "{name}{tag}: M = 1 differs from row 0 of M = 5: {d}"
            ));
        }
    }
    report.profiles = profiles;
    Linear::Checked(report)
}

/// FNV-1a 64 over the little-endian f32 words of values, fed in row order.
pub struct Fnv1a64(u64);

impl Default for Fnv1a64 {
    fn default() -> Self {
        Fnv1a64(0xCBF2_9CE4_8422_2325)
    }
}

impl Fnv1a64 {
    pub fn update(&mut self, values: &[f32]) {
        for v in values {
            for b in v.to_bits().to_le_bytes() {
                self.0 ^= b as u64;
                self.0 = self.0.wrapping_mul(0x0000_0100_0000_01B3);
            }
        }
    }

    pub fn value(&self) -> u64 {
        self.0
    }
}

/// One tensor's line of a checksum list.
pub struct Expected {
    /// The type column: the GGUF ggml type name (Q4_0, F32, …), or for a safetensors
    /// tensor its ninfer format name or dtype.
    pub ty: String,
    pub values: u64,
    pub hash: u64,
    /// Who computed it.
    pub oracle: String,
}

/// Reference checksums of a file's tensors, by name.
pub struct Checksums {
    /// Where the list came from (printed).
    pub source: String,
    pub tensors: BTreeMap<String, Expected>,
}

/// The reference checksums of the built-in sample, recorded with gguf-py when the sample
/// was made (scripts/fixtures/sample_checksums.py).
pub static SAMPLE_CHECKSUMS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/data/sample.checksums"
));

impl Checksums {
    /// Parses a list: `#` comments, then one line per tensor, whitespace-separated:
    /// `name ggml-type values fnv1a64-hex oracle`.
    pub fn parse(text: &str, source: &str) -> anyhow::Result<Checksums> {
        let mut tensors = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let c: Vec<&str> = line.split_whitespace().collect();
            let bad = || {
                anyhow::anyhow!(
                    "{source}, line {}: expected `name type values fnv1a64 oracle`, found {line:?}",
                    i + 1
                )
            };
            if c.len() != 5 {
                return Err(bad());
            }
            let values: u64 = c[2].parse().map_err(|_| bad())?;
            let hash = u64::from_str_radix(c[3], 16).map_err(|_| bad())?;
            let e = Expected {
                ty: c[1].to_owned(),
                values,
                hash,
                oracle: c[4].to_owned(),
            };
            if tensors.insert(c[0].to_owned(), e).is_some() {
                anyhow::bail!("{source}, line {}: tensor {:?} listed twice", i + 1, c[0]);
            }
        }
        Ok(Checksums {
            source: source.to_owned(),
            tensors,
        })
    }

    pub fn read(path: &Path) -> anyhow::Result<Checksums> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        Checksums::parse(&text, &path.display().to_string())
    }

    /// The oracles named in the list (`gguf-py`, …), comma-separated.
    pub fn oracles(&self) -> String {
        let mut o: Vec<&str> = self.tensors.values().map(|t| t.oracle.as_str()).collect();
        o.sort();
        o.dedup();
        o.join(", ")
    }
}

/// What comparing one tensor's decoded values with the list found.
#[derive(Clone)]
pub enum Sum {
    /// No list.
    None,
    /// A list was given and the tensor is not in it (a failure: an explicit list covers
    /// every decoded tensor).
    Unlisted,
    /// Equal, with the oracle's name.
    Matched(String),
    /// Different: the message.
    Mismatch(String),
}

impl Sum {
    pub fn cell(&self) -> String {
        match self {
            Sum::None => "-".into(),
            Sum::Matched(o) => format!("= {o}"),
            Sum::Mismatch(_) => "MISMATCH".into(),
            Sum::Unlisted => "NOT LISTED".into(),
        }
    }

    /// Whether the comparison failed (a mismatch, or a tensor the list lacks).
    pub fn failed(&self) -> bool {
        matches!(self, Sum::Mismatch(_) | Sum::Unlisted)
    }

    /// The failure message, if the comparison failed.
    pub fn failure(&self) -> Option<String> {
        match self {
            Sum::Mismatch(m) => Some(m.clone()),
            Sum::Unlisted => Some("not in the checksum list".into()),
            _ => None,
        }
    }
}

/// The list's entry for a tensor: `None` without a list, `Some(None)` when the list lacks
/// the tensor.
pub fn entry<'a>(list: Option<&'a Checksums>, name: &str) -> Option<Option<&'a Expected>> {
    list.map(|l| l.tensors.get(name))
}

/// Compares a tensor of type `ty` (its decoded values, `count` of them, hashed in row order)
/// with the list's entry.
pub fn compare(entry: Option<Option<&Expected>>, ty: &str, count: u64, hash: &Fnv1a64) -> Sum {
    let Some(entry) = entry else {
        return Sum::None;
    };
    let Some(Expected {
        ty: want_ty,
        values: n,
        hash: want,
        oracle,
    }) = entry
    else {
        return Sum::Unlisted;
    };
    let got = hash.value();
    if !want_ty.eq_ignore_ascii_case(ty) {
        Sum::Mismatch(format!("the list says type {want_ty}, the file's is {ty}"))
    } else if *n != count {
        Sum::Mismatch(format!("{count} values decoded, {oracle} has {n}"))
    } else if got != *want {
        Sum::Mismatch(format!(
            "decoded values hash to fnv1a64 {got:016x}, {oracle}'s to {want:016x}"
        ))
    } else {
        Sum::Matched(oracle.clone())
    }
}

/// A one-line account of the linear checks for a summary.
pub fn linear_summary(reports: &[&LinearReport], devices: &Devices) -> String {
    let mut s = String::new();
    if reports.is_empty() {
        s.push_str("linear: no weight checked");
        if devices.cuda.is_err() {
            s.push_str("; CUDA: not present");
        }
        return s;
    }
    let outputs: usize = reports.iter().map(|r| r.outputs).sum();
    let worst = reports.iter().map(|r| r.worst).fold(0f64, f64::max);
    let failed = reports.iter().filter(|r| !r.failures.is_empty()).count();
    let identical = reports.iter().all(|r| r.identical);
    let _ = write!(
        s,
        "linear: {} {}, {} outputs compared (worst {worst:.1e} of the linear_f32acc_v1 tolerance), paths {}, {failed} failed",
        reports.len(),
        crate::table::plural(reports.len() as u64, "weight"),
        crate::table::count(outputs as u64),
        if identical {
            "bit-identical"
        } else {
            "NOT bit-identical"
        }
    );
    if devices.cuda.is_err() {
        s.push_str("; CUDA: not present");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_hashes_the_little_endian_words() {
        let mut h = Fnv1a64::default();
        assert_eq!(h.value(), 0xCBF2_9CE4_8422_2325);
        // FNV-1a 64 of the bytes "abcd" (the published algorithm, computed independently).
        h.update(&[f32::from_bits(u32::from_le_bytes(*b"abcd"))]);
        assert_eq!(h.value(), 0xFC17_9F83_EE07_24DD);
    }

    #[test]
    fn row_subsets_are_evenly_spaced_and_keep_both_ends() {
        assert_eq!(row_subset(3), vec![0, 1, 2]);
        let s = row_subset(100_000);
        assert_eq!(s.len(), MAX_ROWS);
        assert_eq!((s[0], s[MAX_ROWS - 1]), (0, 99_999));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    /// A Q8_0 weight [n, 64] from a fixed pattern: d = 1/64, codes (r·7 + j·3) mod 255 − 127.
    fn q8_0(n: usize) -> Vec<u8> {
        let mut b = Vec::new();
        for r in 0..n {
            for blk in 0..2 {
                b.extend_from_slice(&half::f16::from_f32(1.0 / 64.0).to_bits().to_le_bytes());
                for j in 0..32 {
                    b.push((((r * 7 + (blk * 32 + j) * 3) % 255) as i32 - 127) as i8 as u8);
                }
            }
        }
        b
    }

    fn devices() -> Devices {
        Devices {
            isas: Isa::ALL.iter().copied().filter(|i| i.available()).collect(),
            cuda: Err("not probed in unit tests".into()),
        }
    }

    #[test]
    fn products_pass_against_the_decoded_rows_and_fail_against_other_values() {
        for n in [5, 300] {
            let bytes = q8_0(n);
            let view = WeightView::single(Format::GgufQ8_0, n, 64, &bytes).unwrap();
            let decode =
                |r: usize, out: &mut [f32]| ninfer::decode::decode_row(&view, r as u64, out);
            let Linear::Checked(r) = linear(&view, &decode, &devices()) else {
                panic!("not checked");
            };
            assert!(r.failures.is_empty(), "{:?}", r.failures);
            assert!(r.identical);
            assert_eq!(r.rows, n.min(MAX_ROWS));
            assert_eq!(r.n, n);
            assert_eq!(r.paths.len(), devices().isas.len());
            // An oracle whose row 0 differs from the weight in one value by one code step:
            // every path fails, naming the output.
            let wrong = |r: usize, out: &mut [f32]| {
                ninfer::decode::decode_row(&view, r as u64, out)?;
                if r == 0 {
                    out[5] += 1.0 / 64.0;
                }
                Ok(())
            };
            let Linear::Checked(r) = linear(&view, &wrong, &devices()) else {
                panic!("not checked");
            };
            assert_eq!(
                r.failures.len(),
                devices().isas.len() * MS.len(),
                "{:?}",
                r.failures
            );
            assert!(
                r.failures[0].contains("outside linear_f32acc_v1, first y[0, row 0]"),
                "{:?}",
                r.failures
            );
        }
    }

    #[test]
    fn gguf_oracles_multiply_the_q8_1_values() {
        // With x instead of x̂ a correct product is outside the criterion: checked here so
        // that the oracle above is known to use x̂ (docs/linear.md, "Checking a product").
        let n = 16;
        let bytes = q8_0(n);
        let view = WeightView::single(Format::GgufQ8_0, n, 64, &bytes).unwrap();
        let mut p = PreparedWeight::new(view).unwrap();
        p.set_threads(1).unwrap();
        let x = activations(64);
        let mut y = vec![0f32; n];
        p.forward_f32(&x[..64], 1, None, &mut y).unwrap();
        let mut w = vec![0f32; n * 64];
        for r in 0..n {
            ninfer::decode::decode_row(&view, r as u64, &mut w[r * 64..(r + 1) * 64]).unwrap();
        }
        let plain: Vec<f64> = x[..64].iter().map(|&v| v as f64).collect();
        let outside = oracle(&w, None, &plain, 64)
            .iter()
            .zip(&y)
            .filter(|((rf, s), got)| !within(**got, *rf, *s, 64).0)
            .count();
        assert!(outside > n / 2, "{outside} of {n}");
    }
}
