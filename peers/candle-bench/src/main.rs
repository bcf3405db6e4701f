//! Dev-only peer benchmark: ninfer's CPU GGUF products beside candle's quantized matmul
//! (`candle_core::quantized::QMatMul`) on the same weight bytes, one thread each.
//! Run it through `scripts/bench-candle.sh` (that header documents the options).
//!
//! For every GGUF block type both libraries multiply, every N × K shape and every M: the
//! same random valid blocks (legal codes, binary16 scales of 0.01) are given to
//! `PreparedWeight` (threads 1, its default q8_1 activation profile) and to candle
//! (`qtensor_from_ggml`, `RAYON_NUM_THREADS=1`); both take the same f32 x (M × K) and
//! return f32 y (M × N). They are timed alternately (ours, candle, ours, candle, ...), each
//! timing a loop of at least `--min-time` seconds, and the best per-call time of each is
//! reported as GMAC/s (M·N·K / time) with the ratio ours / candle (> 1: ours is faster).
//! The two outputs are compared as a sanity check that both were fed the same weights
//! (they quantize x differently, so this is no oracle): max_i |y_ours − y_candle| /
//! max_i |y_candle|, flagged above a loose tolerance.

use std::time::{Duration, Instant};

use candle_core::quantized::{GgmlDType, QMatMul, ggml_file::qtensor_from_ggml};
use candle_core::{Device, Module, Tensor};
use ninfer::linear::PreparedWeight;
use ninfer::{Format, Layout, WeightView};

/// The GGUF block types both libraries multiply on the CPU.
const TYPES: &[(Format, GgmlDType)] = &[
    (Format::GgufQ4_K, GgmlDType::Q4K),
    (Format::GgufQ2_K, GgmlDType::Q2K),
    (Format::GgufQ3_K, GgmlDType::Q3K),
    (Format::GgufQ5_K, GgmlDType::Q5K),
    (Format::GgufQ6_K, GgmlDType::Q6K),
    (Format::GgufQ8_0, GgmlDType::Q8_0),
    (Format::GgufQ4_0, GgmlDType::Q4_0),
    (Format::GgufQ5_0, GgmlDType::Q5_0),
];

/// Normwise relative difference above which a row is flagged (q8_1 vs candle's own
/// activation quantization differ by about 1%).
const SANITY_TOL: f64 = 0.05;

struct Args {
    shapes: Vec<(usize, usize)>,
    ms: Vec<usize>,
    formats: Vec<String>,
    rounds: usize,
    min_time: f64,
}

fn usage() -> ! {
    eprintln!(
        "usage: candle-bench [--shapes NxK,...] [--m M,...] [--formats q4_k,...] \
         [--rounds R] [--min-time SECONDS]\n\
         defaults: --shapes 4096x4096,16384x4096 --m 1,32 --rounds 5 --min-time 0.3, \
         every type"
    );
    std::process::exit(2)
}

fn parse_args() -> Args {
    let mut a = Args {
        shapes: vec![(4096, 4096), (16384, 4096)],
        ms: vec![1, 32],
        formats: Vec::new(),
        rounds: 5,
        min_time: 0.3,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let v = it.next().unwrap_or_else(|| usage());
        let list = || v.split(',').map(str::to_owned).collect::<Vec<_>>();
        match flag.as_str() {
            "--shapes" => {
                a.shapes = list()
                    .iter()
                    .map(|s| {
                        let (n, k) = s.split_once('x').unwrap_or_else(|| usage());
                        (
                            n.parse().unwrap_or_else(|_| usage()),
                            k.parse().unwrap_or_else(|_| usage()),
                        )
                    })
                    .collect()
            }
            "--m" => {
                a.ms = list()
                    .iter()
                    .map(|s| s.parse().unwrap_or_else(|_| usage()))
                    .collect()
            }
            "--formats" => a.formats = list(),
            "--rounds" => a.rounds = v.parse().unwrap_or_else(|_| usage()),
            "--min-time" => a.min_time = v.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    a
}

/// xorshift64: fast, deterministic filler.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Random valid GGUF blocks of `format` for an N × K weight: random bytes with every
/// binary16 super-block/block scale (d, and dmin where the type has one) set to 0.01, as
/// the `ninfer bench linear` payloads; checked with the library's validator.
fn weight_bytes(format: Format, n: usize, k: usize) -> Vec<u8> {
    let info = format.info();
    let bb = info.block_bytes as usize;
    let len = n * k / info.block_values as usize * bb;
    let mut rng = Rng(0x1234_5678_9abc_def0);
    let mut w: Vec<u8> = (0..len.div_ceil(8))
        .flat_map(|_| rng.next().to_le_bytes())
        .take(len)
        .collect();
    let fields: &[usize] = match format {
        Format::GgufQ2_K => &[80, 82],
        Format::GgufQ3_K => &[108],
        Format::GgufQ4_K | Format::GgufQ5_K => &[0, 2],
        Format::GgufQ6_K => &[208],
        _ => &[0],
    };
    let d = half::f16::from_f32(0.01).to_le_bytes();
    for b in w.chunks_exact_mut(bb) {
        for &at in fields {
            b[at..at + 2].copy_from_slice(&d);
        }
    }
    let view =
        WeightView::new(format, Layout::GgufBlocksV1, n, k, [&w, &[], &[]]).expect("weight view");
    ninfer::validate::validate(&view).expect("valid payload");
    w
}

/// Best seconds per call over `rounds` alternating loops of at least `min_time` s each.
fn bench_pair(
    rounds: usize,
    min_time: f64,
    ours: &mut dyn FnMut(),
    theirs: &mut dyn FnMut(),
) -> (f64, f64) {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        let mut calls = 0u32;
        while start.elapsed() < Duration::from_secs_f64(min_time) {
            f();
            calls += 1;
        }
        start.elapsed().as_secs_f64() / f64::from(calls)
    };
    let (mut a, mut b) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..rounds {
        a = a.min(time(ours));
        b = b.min(time(theirs));
    }
    (a, b)
}

fn cpu_summary() -> (String, String) {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |name: &str| {
        info.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_owned())
            .unwrap_or_else(|| "?".into())
    };
    let flags: Vec<String> = field("flags")
        .split_whitespace()
        .filter(|f| {
            ["avx", "fma", "f16c", "amx"]
                .iter()
                .any(|p| f.starts_with(p))
        })
        .map(str::to_owned)
        .collect();
    (field("model name"), flags.join(" "))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let (model, flags) = cpu_summary();
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_default();
    if threads != "1" {
        eprintln!("warning: RAYON_NUM_THREADS={threads:?}: candle is timed with its default pool");
    }
    println!("cpu: {model}");
    println!("flags: {flags}");
    println!(
        "threads: ninfer 1 (set_threads), candle {} (RAYON_NUM_THREADS)",
        candle_core::utils::get_num_threads()
    );
    println!(
        "timing: best of {} alternating loops of >= {} s each; GMAC/s = M*N*K / time; \
         ratio = ours / candle (> 1: ours faster); reldiff = max|y_ours - y_candle| / max|y_candle|",
        args.rounds, args.min_time
    );
    println!(
        "{:<10} {:>12} {:>4} {:>10} {:>12} {:>13} {:>7} {:>9}",
        "format", "N x K", "M", "isa", "ours GMAC/s", "candle GMAC/s", "ratio", "reldiff"
    );
    let mut flagged = 0;
    for &(format, dtype) in TYPES {
        let name = format.name();
        let short = name.trim_start_matches("gguf_");
        if !args.formats.is_empty() && !args.formats.iter().any(|f| f == name || f == short) {
            continue;
        }
        for &(n, k) in &args.shapes {
            let w = weight_bytes(format, n, k);
            let view = WeightView::new(format, Layout::GgufBlocksV1, n, k, [&w, &[], &[]])?;
            let mut ours = PreparedWeight::new(view)?;
            ours.set_threads(1)?;
            let qmm =
                QMatMul::from_qtensor(qtensor_from_ggml(dtype, &w, vec![n, k], &Device::Cpu)?)?;
            for &m in &args.ms {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ m as u64);
                let x: Vec<f32> = (0..m * k)
                    .map(|_| (rng.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
                    .collect();
                let xt = Tensor::from_slice(&x, (m, k), &Device::Cpu)?;
                let mut y = vec![0f32; m * n];
                // Warm-up (candle packs its tiles on the first call) and the sanity check.
                ours.forward_f32(&x, m, None, &mut y)?;
                let yc: Vec<f32> = qmm.forward(&xt)?.flatten_all()?.to_vec1()?;
                let scale = yc.iter().fold(0f64, |a, &v| a.max(f64::from(v).abs()));
                let diff = y.iter().zip(&yc).fold(0f64, |a, (&p, &q)| {
                    a.max((f64::from(p) - f64::from(q)).abs())
                });
                let rel = diff / scale.max(f64::MIN_POSITIVE);
                let (t_ours, t_candle) = bench_pair(
                    args.rounds,
                    args.min_time,
                    &mut || {
                        ours.forward_f32(&x, m, None, &mut y)
                            .expect("ninfer forward")
                    },
                    &mut || {
                        std::hint::black_box(qmm.forward(&xt).expect("candle forward"));
                    },
                );
                let macs = (m * n * k) as f64 * 1e-9;
                let bad = rel.is_nan() || rel > SANITY_TOL;
                flagged += usize::from(bad);
                println!(
                    "{:<10} {:>12} {:>4} {:>10} {:>12.2} {:>13.2} {:>7.2} {:>9.2e}{}",
                    short,
                    format!("{n}x{k}"),
                    m,
                    format!("{:?}", ours.isa().expect("a CPU weight")),
                    macs / t_ours,
                    macs / t_candle,
                    t_candle / t_ours,
                    rel,
                    if bad { "  MISMATCH" } else { "" }
                );
            }
        }
    }
    if flagged > 0 {
        return Err(format!("{flagged} rows disagree beyond {SANITY_TOL}").into());
    }
    Ok(())
}
