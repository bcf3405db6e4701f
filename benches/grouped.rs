//! Grouped formats (spec §4–§7): single-thread grouped_absmax throughput on f32 input and
//! row decode throughput for q4/q5/q6/q8 on a 4096 × 4096 matrix of Gaussian-like values,
//! in Gvalues/s (best of 5). When the benchmark peer is built (`scripts/build-ggml.sh`),
//! ggml's scalar `quantize_row_q4_0_ref` (its Q4_0 `from_float_ref`) runs on the same values:
//! the reference point for an encoder (target: grouped_absmax ≥ 1 Gvalue/s/core,
//! about 2× that).
//!
//! `cargo bench --bench grouped`; `NINFER_BENCH_N=1024` for a quicker run.

use ninfer::decode::decode_row;
use ninfer::formats::float_source::FloatSource;
use ninfer::formats::grouped::{Options, quantize};
use ninfer::layouts::plane_sizes;
use ninfer::{Format, Layout, WeightView};
use std::time::Instant;

#[path = "../cli/src/cmd/bench/ggml.rs"]
mod ggml;

fn best_of<F: FnMut()>(runs: usize, mut f: F) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let n: usize = std::env::var("NINFER_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4096);
    let (rows, cols) = (n, 4096usize);
    // Sum of uniforms: a cheap, deterministic bell-shaped source with varied group maxima.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let src: Vec<f32> = (0..rows * cols)
        .map(|_| (uniform() + uniform() + uniform()) * 0.02)
        .collect();
    let values = (rows * cols) as f64;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    println!("grouped formats, single thread, [{rows}, {cols}] f32 source, Gvalues/s (best of 5)");
    println!("{:<14} {:>10} {:>10}", "format", "absmax", "decode");
    for format in [
        Format::Q4_G64Fp16,
        Format::Q5_G64Fp16,
        Format::Q6_G64Fp16,
        Format::Q8_G32Fp16,
    ] {
        let sizes = plane_sizes(format, Layout::RowSplitK128_V1, rows, cols).unwrap();
        let mut planes = sizes.map(|s| vec![0u8; s]);
        let t_enc = pool.install(|| {
            best_of(5, || {
                let [a, b, c] = &mut planes;
                quantize(
                    format,
                    FloatSource::F32(&src),
                    rows,
                    cols,
                    &Options::ABSMAX,
                    [a, b, c],
                )
                .unwrap();
            })
        });
        let view = WeightView::new(
            format,
            Layout::RowSplitK128_V1,
            rows,
            cols,
            [&planes[0], &planes[1], &planes[2]],
        )
        .unwrap();
        let mut out = vec![0f32; cols];
        let t_dec = best_of(5, || {
            for r in 0..rows {
                decode_row(&view, r as u64, &mut out).unwrap();
            }
        });
        println!(
            "{:<14} {:>10.3} {:>10.3}",
            format.name(),
            values / t_enc / 1e9,
            values / t_dec / 1e9
        );
    }
    match ggml::Ggml::load(&ggml::default_dir()).ok() {
        Some(g) => match g.quantize_ref(2) {
            Some(q4_0_ref) => {
                let mut dst = vec![0u8; rows * cols / 32 * 18];
                let t = best_of(5, || {
                    for r in 0..rows {
                        // SAFETY: one source row of `cols` f32 into cols / 32 Q4_0 blocks.
                        unsafe {
                            q4_0_ref(
                                src[r * cols..].as_ptr(),
                                dst[r * (cols / 32) * 18..].as_mut_ptr().cast(),
                                cols as i64,
                            )
                        };
                    }
                });
                println!(
                    "ggml quantize_row_q4_0_ref (peer, {}): {:.3} Gvalues/s",
                    g.dir.display(),
                    values / t / 1e9
                );
            }
            None => println!("ggml loaded but has no Q4_0 from_float_ref"),
        },
        None => println!("ggml peer not built (scripts/build-ggml.sh): ninfer figures only"),
    }
}
