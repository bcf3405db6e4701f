//! `linear` throughput on this machine: per format, 4096 × 4096 (fits in L3) and
//! 16384 × 4096 (beyond L3), M = 1 and 32, 1 and 2 threads; GMAC/s, weight GB/s and the
//! fraction of this machine's read bandwidth, measured in the same run.
//!
//! For the GGUF types, ggml's own CPU `vec_dot` (with its activation quantization, from a
//! build made by `scripts/build-ggml.sh` or `$NINFER_GGML_DIR`) is timed on the same weights
//! in the same run: `ggml GMAC/s` and `ratio` = ninfer / ggml (speed only, never an oracle).
//!
//! `cargo bench --bench linear [-- FILTER...]` (FILTER: substrings of format names, e.g.
//! `q4_k bf16`; `quick` = 4096 × 4096 only). Best of several runs; the machine is shared,
//! so compare ratios within one run.

#[path = "peer/ggml.rs"]
mod ggml;

use ninfer::linear::PreparedWeight;
use ninfer::{Format, Layout, WeightView};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// CPU time of the calling thread in seconds (immune to other processes' load).
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Seconds (wall, calling thread's CPU) of the best of several runs of `f`, stopping after
/// ~`budget`.
fn best2(budget: Duration, mut f: impl FnMut()) -> (f64, f64) {
    let start = Instant::now();
    let (mut best, mut best_cpu) = (f64::INFINITY, f64::INFINITY);
    let mut runs = 0;
    while runs < 3 || (start.elapsed() < budget && runs < 50) {
        let (t, c) = (Instant::now(), thread_cpu());
        f();
        best = best.min(t.elapsed().as_secs_f64());
        best_cpu = best_cpu.min(thread_cpu() - c);
        runs += 1;
    }
    (best, best_cpu)
}

fn best(budget: Duration, f: impl FnMut()) -> f64 {
    best2(budget, f).0
}

/// Read bandwidth in GB/s over a 512 MiB buffer with `threads` threads (sum of u64 words).
fn read_bandwidth(buf: &[u64], threads: usize) -> f64 {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let t = best(Duration::from_secs(2), || {
        let s: u64 = pool.install(|| {
            buf.par_chunks(buf.len() / threads)
                .map(|c| {
                    let mut a = [0u64; 8];
                    for w in c.chunks_exact(8) {
                        for i in 0..8 {
                            a[i] = a[i].wrapping_add(w[i]);
                        }
                    }
                    a.iter().fold(0u64, |x, y| x.wrapping_add(*y))
                })
                .reduce(|| 0, |a, b| a.wrapping_add(b))
        });
        black_box(s);
    });
    (buf.len() * 8) as f64 / t / 1e9
}

/// Random planes with finite, moderate scales (codes random but legal).
fn planes(format: Format, n: usize, k: usize) -> Vec<Vec<u8>> {
    let info = format.info();
    let layout = info.layout;
    let sizes = ninfer::layouts::plane_sizes(format, layout, n, k).unwrap();
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut p: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&len| (0..len).map(|_| next() as u8).collect())
        .collect();
    let scale = half::f16::from_f32(0.01).to_bits().to_le_bytes();
    match layout {
        Layout::ContiguousLeV1 => match format {
            Format::Bf16 => p[0]
                .chunks_exact_mut(2)
                .for_each(|c| c[1] = 0x3C | (c[1] & 0x81)),
            _ => p[0]
                .chunks_exact_mut(4)
                .for_each(|c| c[3] = 0x3C | (c[3] & 0x81)),
        },
        Layout::GgufBlocksV1 => {
            let fields: &[usize] = match format {
                Format::GgufQ2_K => &[80, 82],
                Format::GgufQ3_K => &[108],
                Format::GgufQ4_K | Format::GgufQ5_K => &[0, 2],
                Format::GgufQ6_K => &[208],
                Format::GgufIq1M => &[],
                _ => &[0],
            };
            for b in p[0].chunks_exact_mut(info.block_bytes as usize) {
                for &at in fields {
                    b[at..at + 2].copy_from_slice(&scale);
                }
                if format == Format::GgufIq1M {
                    b[55] = (b[55] & 0x0F) | 0x30;
                }
            }
        }
        Layout::RowSplitK128_V1 => {
            let span = (info.code_max - info.code_min + 1) as u64;
            let codes: Vec<i8> = (0..n * k)
                .map(|_| (info.code_min + (next() % span) as i64) as i8)
                .collect();
            let scales =
                vec![u16::from_le_bytes(scale); n * k.div_ceil(info.block_values as usize)];
            let [a, b, c] = &mut p[..] else {
                unreachable!()
            };
            ninfer::layouts::row_split::pack(format, n, k, &codes, &scales, [a, b, c]).unwrap();
        }
        Layout::BlockScaleK16_M128x4_V1 => {
            p[1].iter_mut().for_each(|v| *v &= 0x7E);
            p[2].chunks_exact_mut(4)
                .for_each(|d| d.copy_from_slice(&1f32.to_le_bytes()));
        }
        Layout::RowScaleV1 => {
            p[0].iter_mut()
                .filter(|c| **c & 0x7F == 0x7F)
                .for_each(|c| *c ^= 1);
            let bf = half::bf16::from_f32(0.01).to_bits().to_le_bytes();
            p[1].chunks_exact_mut(2)
                .for_each(|c| c.copy_from_slice(&bf));
        }
        Layout::RowInterleavedV1 => {
            let stride = p[0].len() / n;
            for rec in p[0].chunks_exact_mut(stride) {
                rec[0..2].copy_from_slice(&scale);
                rec[2..]
                    .iter_mut()
                    .filter(|c| **c & 0x7F == 0x7F)
                    .for_each(|c| *c ^= 1);
            }
        }
    }
    p
}

/// ggml's product on the same weights: each activation row quantized by ggml's
/// `from_float` to its `vec_dot_type`, then one `vec_dot` per (row of W, row of x); rows of
/// W split over `threads` threads. Seconds (best), or None without a peer kernel.
#[allow(clippy::too_many_arguments)]
fn ggml_time(
    dot: &ggml::Dot,
    w: &[u8],
    n: usize,
    k: usize,
    x: &[f32],
    m: usize,
    threads: usize,
    pool: &rayon::ThreadPool,
) -> f64 {
    let row_bytes = w.len() / n;
    let act_row = k / dot.act_block_values * dot.act_block_bytes;
    let mut xq = vec![0u8; m * act_row];
    let mut y = vec![0f32; m * n];
    best(Duration::from_millis(700), || {
        for (xr, qr) in x.chunks(k).zip(xq.chunks_mut(act_row)) {
            // SAFETY: from_float reads k floats and writes k / block values blocks.
            unsafe { (dot.from_float)(xr.as_ptr(), qr.as_mut_ptr().cast(), k as i64) };
        }
        let work = |(i, yc): (usize, &mut [f32])| {
            let rows = yc.len() / m;
            for (j, yr) in yc.chunks_mut(m).enumerate() {
                let r = i * rows + j;
                let wr = &w[r * row_bytes..(r + 1) * row_bytes];
                for (mi, o) in yr.iter_mut().enumerate() {
                    // SAFETY: vec_dot reads one row of K weights and K activations.
                    unsafe {
                        (dot.vec_dot)(
                            k as i32,
                            o,
                            0,
                            wr.as_ptr().cast(),
                            0,
                            xq[mi * act_row..].as_ptr().cast(),
                            0,
                            1,
                        )
                    };
                }
            }
        };
        let chunk = (n / (threads * 8)).max(1) * m;
        if threads == 1 {
            y.chunks_mut(chunk).enumerate().for_each(work);
        } else {
            pool.install(|| y.par_chunks_mut(chunk).enumerate().for_each(work));
        }
        black_box(&y);
    })
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let quick = args.iter().any(|a| a == "quick");
    let nobw = args.iter().any(|a| a == "nobw");
    let filters: Vec<&String> = args
        .iter()
        .filter(|a| *a != "quick" && *a != "nobw")
        .collect();
    // The dedicated kernels, then examples of the decoded path.
    let formats = [
        Format::Bf16,
        Format::Fp32,
        Format::GgufQ8_0,
        Format::GgufQ4_0,
        Format::GgufQ5_0,
        Format::GgufQ4_K,
        Format::GgufQ6_K,
        Format::GgufQ3_K,
        Format::GgufIq4Xs,
        Format::GgufIq4Nl,
        Format::GgufQ2_0,
        Format::Q4_G64Fp16,
        Format::Q8_G32Fp16,
        Format::Fp8E4m3fnRowBf16,
        Format::Nvfp4,
    ];
    let bw = if nobw {
        [f64::NAN; 2]
    } else {
        let mut buf = vec![1u64; 512 << 17];
        buf.iter_mut().enumerate().for_each(|(i, v)| *v = i as u64);
        [read_bandwidth(&buf, 1), read_bandwidth(&buf, 2)]
    };
    println!(
        "read bandwidth (512 MiB, best): 1 thread {:.1} GB/s, 2 threads {:.1} GB/s",
        bw[0], bw[1]
    );
    let peer = ggml::Ggml::load();
    match &peer {
        Some(g) => println!("peer: ggml vec_dot from {}", g.dir.display()),
        None => println!("peer: ggml not built (scripts/build-ggml.sh); ninfer alone"),
    }
    let pool2 = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    println!(
        "{:<19} {:>11} {:>3} {:>2} {:>9} {:>7} {:>7} {:>6} {:>8} {:>8} {:>6}",
        "format", "N x K", "M", "t", "ms", "GMAC/s", "W GB/s", "of BW", "cpu GMAC", "ggml", "ratio"
    );
    let shapes: &[(usize, usize)] = if quick {
        &[(4096, 4096)]
    } else {
        &[(4096, 4096), (16384, 4096)]
    };
    for format in formats {
        if !filters.is_empty() && !filters.iter().any(|f| format.name().contains(f.as_str())) {
            continue;
        }
        for &(n, k) in shapes {
            let p = planes(format, n, k);
            let layout = format.info().layout;
            let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
            let wbytes: usize = p.iter().map(Vec::len).sum();
            let mut w = PreparedWeight::new(view).unwrap();
            for m in std::env::var("LM")
                .map(|v| {
                    v.split(',')
                        .map(|t| t.parse().unwrap())
                        .collect::<Vec<usize>>()
                })
                .unwrap_or(vec![1, 32])
            {
                let x: Vec<f32> = (0..m * k)
                    .map(|i| ((i % 97) as f32 - 48.0) / 48.0)
                    .collect();
                let mut y = vec![0f32; m * n];
                for threads in std::env::var("LT")
                    .map(|v| {
                        v.split(',')
                            .map(|t| t.parse().unwrap())
                            .collect::<Vec<usize>>()
                    })
                    .unwrap_or(vec![1, 2])
                {
                    w.set_threads(threads).unwrap();
                    let (t, cpu) = best2(Duration::from_millis(700), || {
                        w.forward_f32(&x, m, None, &mut y).unwrap();
                        black_box(&y);
                    });
                    let gmac = (m * n * k) as f64 / t / 1e9;
                    let gbs = wbytes as f64 / t / 1e9;
                    let peer_dot = peer
                        .as_ref()
                        .filter(|_| layout == Layout::GgufBlocksV1)
                        .and_then(|g| format.info().ggml_type.and_then(|t| g.dot(t)));
                    let g = peer_dot.map(|d| {
                        (m * n * k) as f64
                            / ggml_time(&d, &p[0], n, k, &x, m, threads, &pool2)
                            / 1e9
                    });
                    println!(
                        "{:<19} {:>11} {:>3} {:>2} {:>9.3} {:>7.2} {:>7.2} {:>5.0}% {:>8} {:>8} {:>6}",
                        format.name(),
                        format!("{n}x{k}"),
                        m,
                        threads,
                        t * 1e3,
                        gmac,
                        gbs,
                        100.0 * gbs / bw[threads - 1],
                        // With one thread the work runs on this thread: its CPU time
                        // excludes time lost to other processes.
                        if threads == 1 {
                            format!("{:.2}", (m * n * k) as f64 / cpu / 1e9)
                        } else {
                            "-".into()
                        },
                        g.map_or("-".into(), |g| format!("{g:.2}")),
                        g.map_or("-".into(), |g| format!("{:.2}", gmac / g)),
                    );
                }
            }
        }
    }
}
