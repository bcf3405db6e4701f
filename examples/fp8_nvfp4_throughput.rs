//! Rough single-process throughput of the FP8 row and NVFP4 codecs (not a test: numbers
//! depend on the machine). `cargo run --release --example fp8_nvfp4_throughput`.

use ninfer::formats::float_source::FloatSource;
use ninfer::formats::{fp8_row, nvfp4};
use ninfer::layouts::plane_sizes;
use ninfer::{Format, WeightView, decode};
use std::time::Instant;

fn main() {
    let (rows, cols) = (2048usize, 4096usize);
    let src: Vec<f32> = (0..rows * cols)
        .map(|i| ((i as f32) * 0.618).sin() * (1.0 + (i % 97) as f32 / 10.0))
        .collect();
    let n = (rows * cols) as f64;
    for format in [
        Format::Fp8E4m3fnRowBf16,
        Format::Fp8E4m3fnRowFp16,
        Format::Nvfp4,
    ] {
        let layout = format.info().layout;
        let sizes = plane_sizes(format, layout, rows, cols).unwrap();
        let mut p = sizes.map(|s| vec![0u8; s]);
        let t = Instant::now();
        let reps = 3;
        // Encoders: mean of 3 (rayon over all cores).
        for _ in 0..reps {
            let [a, b, c] = &mut p;
            if format == Format::Nvfp4 {
                nvfp4::nvfp4_quantize(FloatSource::F32(&src), rows, cols, 1, [a, b, c]).unwrap();
            } else {
                fp8_row::fp8_row_maxabs(format, FloatSource::F32(&src), rows, cols, [a, b])
                    .unwrap();
            }
        }
        let enc = t.elapsed().as_secs_f64() / reps as f64;
        let v = WeightView::new(format, layout, rows, cols, [&p[0], &p[1], &p[2]]).unwrap();
        let mut out = vec![0f32; cols];
        // Best of 5: the figures are for an otherwise idle core.
        let best = |f: &mut dyn FnMut()| {
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min)
        };
        let dec = best(&mut || {
            for r in 0..rows {
                decode::decode_row(&v, r as u64, &mut out).unwrap();
            }
        });
        let val = best(&mut || match format {
            Format::Nvfp4 => nvfp4::validate(&v).unwrap(),
            _ => fp8_row::validate(&v).unwrap(),
        });
        println!(
            "{format:>22}: encode {:7.1} Mvalues/s (rayon), decode_row {:7.1} Mvalues/s (1 thread), validate {:7.1} Mvalues/s",
            n / enc / 1e6,
            n / dec / 1e6,
            n / val / 1e6
        );
    }
}
