//! Timing: best of several runs (wall clock and the calling thread's CPU time), this
//! machine's read bandwidth, its L3 size, and ggml's product on the same weights.

use super::ggml::Dot;
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

/// Best (smallest) seconds of several runs of one measurement.
#[derive(Clone, Copy, Debug)]
pub struct Best {
    /// Wall clock.
    pub wall: f64,
    /// The calling thread's CPU time (the whole work when it runs on this thread).
    pub cpu: f64,
}

/// Runs `f` at least 3 times and then until `budget` has passed (at most 50 runs); the
/// minimum is the figure least disturbed by other processes.
pub fn best(budget: Duration, f: impl FnMut()) -> Best {
    let mut f = f;
    best_interleaved(budget, &mut [&mut f])[0]
}

/// [`best`] for several measurements at once, run in turn (one run of each per round) for
/// `budget` each: a slow spell of the machine (other processes, the host) then falls on
/// all of them alike, so their ratio is fairer than with one measurement after the other.
pub fn best_interleaved(budget: Duration, fs: &mut [&mut dyn FnMut()]) -> Vec<Best> {
    let budget = budget * fs.len() as u32;
    let start = Instant::now();
    let mut b = vec![
        Best {
            wall: f64::INFINITY,
            cpu: f64::INFINITY,
        };
        fs.len()
    ];
    let mut rounds = 0;
    while rounds < 3 || (start.elapsed() < budget && rounds < 50) {
        for (f, b) in fs.iter_mut().zip(&mut b) {
            let (t, c) = (Instant::now(), thread_cpu());
            f();
            b.wall = b.wall.min(t.elapsed().as_secs_f64());
            b.cpu = b.cpu.min(thread_cpu() - c);
        }
        rounds += 1;
    }
    b
}

/// A rayon pool of `threads` threads.
pub fn pool(threads: usize) -> anyhow::Result<rayon::ThreadPool> {
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?)
}

/// The wrapping sum of `c`'s words with 16 independent sums, so loads, not adds, bound
/// the loop.
fn sum_words(c: &[u64]) -> u64 {
    let mut a = [0u64; 16];
    for w in c.chunks_exact(16) {
        for i in 0..16 {
            a[i] = a[i].wrapping_add(w[i]);
        }
    }
    a.iter().fold(0u64, |x, y| x.wrapping_add(*y))
}

/// [`sum_words`] compiled for AVX2 (32-byte loads, like the library's kernels).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sum_words_avx2(c: &[u64]) -> u64 {
    sum_words(c)
}

fn sum_best(c: &[u64]) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if ninfer::linear::Isa::Avx2.available() {
        // SAFETY: AVX2 is available on this CPU (the library's detection, just above).
        return unsafe { sum_words_avx2(c) };
    }
    sum_words(c)
}

/// Read bandwidth in GB/s: `threads` threads summing the u64 words of `buf` (one share of
/// each chunk per thread). Chunks of `chunk` bytes are timed one by one and the best rate
/// is kept: a chunk at least twice L3 is cold when its turn comes, and short samples, like
/// the products' own runs, can fall between other processes' time slices on a shared
/// machine (one long sample rarely does).
pub fn read_bandwidth(
    buf: &[u64],
    threads: usize,
    chunk: usize,
    budget: Duration,
) -> anyhow::Result<f64> {
    let pool = pool(threads)?;
    let words = (chunk / 8).clamp(16, buf.len().max(16));
    let start = Instant::now();
    let mut best = f64::INFINITY; // seconds per byte
    let mut passes = 0;
    while passes < 3 || start.elapsed() < budget {
        for c in buf.chunks(words) {
            let share = c.len().div_ceil(threads).max(16);
            let t = Instant::now();
            let s: u64 = if threads == 1 {
                sum_best(c)
            } else {
                pool.install(|| {
                    c.par_chunks(share)
                        .map(sum_best)
                        .reduce(|| 0, u64::wrapping_add)
                })
            };
            black_box(s);
            best = best.min(t.elapsed().as_secs_f64() / (c.len() * 8) as f64);
        }
        passes += 1;
    }
    Ok(1.0 / best / 1e9)
}

/// The L3 (last-level) cache size in bytes from sysfs, if the kernel reports one.
pub fn l3_bytes() -> Option<usize> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index3/size").ok()?;
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let v: usize = num.parse().ok()?;
    Some(match unit {
        "K" => v << 10,
        "M" => v << 20,
        "G" => v << 30,
        _ => v,
    })
}

/// The SIMD features the library's kernels use (or report), by their /proc/cpuinfo names.
const SIMD_FLAGS: [&str; 13] = [
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512vbmi",
    "gfni",
    "avx512_fp16",
    "avx_vnni",
    "amx_int8",
];

/// The value of the first `name : value` line of /proc/cpuinfo (`None` elsewhere).
fn cpuinfo(name: &str) -> Option<String> {
    let s = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    s.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_owned())
    })
}

/// The CPU's model name (/proc/cpuinfo), or "unknown" where it is not reported.
pub fn cpu_model() -> String {
    cpuinfo("model name")
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Of [`SIMD_FLAGS`], those in `flags` (a whitespace-separated /proc/cpuinfo flags line),
/// in [`SIMD_FLAGS`] order.
fn simd_flags_in(flags: &str) -> Vec<&'static str> {
    let have: Vec<&str> = flags.split_whitespace().collect();
    SIMD_FLAGS
        .into_iter()
        .filter(|f| have.contains(f))
        .collect()
}

/// This CPU's [`SIMD_FLAGS`] (none where /proc/cpuinfo has no flags line).
pub fn simd_flags() -> Vec<&'static str> {
    simd_flags_in(&cpuinfo("flags").unwrap_or_default())
}

/// The proleptic Gregorian (year, month 1–12, day 1–31) of `days` since 1970-01-01
/// (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // [0, 365], from March 1
    let mp = (5 * doy + 2) / 153; // [0, 11], March = 0
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `secs` since the Unix epoch as `YYYY-MM-DD HH:MM:SS UTC`.
fn utc(secs: i64) -> String {
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let s = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02} UTC",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// The current date and time, `YYYY-MM-DD HH:MM:SS UTC`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    utc(secs)
}

/// ggml's product on the same weights, one call per run, to be timed like ninfer's: each
/// activation row quantized by ggml's `from_float` to its `vec_dot_type`, then one
/// `vec_dot` per (row of W, row of x); rows of W split over `pool`'s threads (`None`: the
/// calling thread). `w` holds N rows of ggml blocks for K values each.
pub fn ggml<'a>(
    dot: &'a Dot,
    w: &'a [u8],
    n: usize,
    k: usize,
    x: &'a [f32],
    m: usize,
    pool: Option<&'a rayon::ThreadPool>,
) -> impl FnMut() + 'a {
    let row_bytes = w.len() / n;
    let act_row = k / dot.act_block_values * dot.act_block_bytes;
    let mut xq = vec![0u8; m * act_row];
    let mut y = vec![0f32; m * n];
    let threads = pool.map_or(1, rayon::ThreadPool::current_num_threads);
    move || {
        for (xr, qr) in x.chunks(k).zip(xq.chunks_mut(act_row)) {
            // SAFETY: from_float reads k floats and writes k / block values blocks, the
            // length of qr.
            unsafe { (dot.from_float)(xr.as_ptr(), qr.as_mut_ptr().cast(), k as i64) };
        }
        let xq = &xq;
        // y is row-of-W major here (m outputs per row of W): only the timing matters.
        // Chunks of `rows` rows of W (the last may be shorter).
        let rows = (n / (threads * 8)).max(1);
        let work = |(i, yc): (usize, &mut [f32])| {
            for (j, yr) in yc.chunks_mut(m).enumerate() {
                let r = i * rows + j;
                let wr = &w[r * row_bytes..(r + 1) * row_bytes];
                for (mi, o) in yr.iter_mut().enumerate() {
                    // SAFETY: vec_dot reads one row of K weights (row_bytes) and one
                    // quantized activation row (act_row bytes from mi · act_row).
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
        let chunk = rows * m;
        match pool {
            None => y.chunks_mut(chunk).enumerate().for_each(work),
            Some(p) => p.install(|| y.par_chunks_mut(chunk).enumerate().for_each(work)),
        }
        black_box(&y);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn best_runs_at_least_three_times() {
        let mut runs = 0;
        let b = super::best(std::time::Duration::ZERO, || runs += 1);
        assert_eq!(runs, 3);
        assert!(b.wall >= 0.0 && b.cpu >= 0.0);
    }

    #[test]
    fn interleaved_runs_alternate() {
        let order = std::cell::RefCell::new(Vec::new());
        let mut a = || order.borrow_mut().push('a');
        let mut b = || order.borrow_mut().push('b');
        let r = super::best_interleaved(std::time::Duration::ZERO, &mut [&mut a, &mut b]);
        assert_eq!(r.len(), 2);
        assert_eq!(order.into_inner().iter().collect::<String>(), "ababab");
    }

    #[test]
    fn utc_dates_by_hand() {
        use super::{civil_from_days, utc};
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        // 1970..2000: 30 · 365 + 7 leap days (1972..1996) = 10957; + Jan 31 + Feb 29.
        assert_eq!(civil_from_days(10_957), (2000, 1, 1));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        // 1970..2024: 54 · 365 + 13 leap days (1972..2020) = 19723; + Jan 31 + 28.
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
        assert_eq!(civil_from_days(19_783), (2024, 3, 1));
        // 1970..2100: 130 · 365 + 32 leap days (1972..2096; 2100 is not one) = 47482;
        // + Jan 31 + Feb 28.
        assert_eq!(civil_from_days(47_541), (2100, 3, 1));
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        // 2024-02-29 is day 19782: 19782 · 86400 = 1709164800, + 13:45:07.
        assert_eq!(
            utc(1_709_164_800 + 13 * 3600 + 45 * 60 + 7),
            "2024-02-29 13:45:07 UTC"
        );
        assert_eq!(utc(-1), "1969-12-31 23:59:59 UTC");
    }

    #[test]
    fn simd_flags_keep_the_listed_ones_in_order() {
        let line = "fpu sse2 avx_vnni avx512vl fma avx2 avx512_vnni avx512vbmi2 f16c avx512f";
        assert_eq!(
            super::simd_flags_in(line),
            [
                "avx2",
                "fma",
                "f16c",
                "avx512f",
                "avx512vl",
                "avx512_vnni",
                "avx_vnni"
            ]
        );
        assert!(super::simd_flags_in("").is_empty());
    }
}
