//! The generic decoded path against the dedicated kernels.

use super::*;

/// The generic decoded path (how formats without a dedicated kernel run) on formats
/// that also have one: bf16 through decode_row gives the bf16 kernel's bits (same
/// order, exact decode); GGUF through decode_row + x̂ stays within twice the criterion
/// of the dedicated vec_dot.
#[test]
fn decoded_paths_agree_with_dedicated_kernels() {
    let (n, k, m) = (7, 512, 3);
    let x: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 250.0)
        .collect();
    for format in [
        Format::Bf16,
        Format::GgufQ8_0,
        Format::GgufQ4_K,
        Format::GgufQ6_K,
    ] {
        let wb = weight(format, n, k);
        let view = WeightView::single(format, n, k, &wb).unwrap();
        let mut w = PreparedWeight::new(view).unwrap();
        let mut y = vec![0f32; m * n];
        w.forward_f32(&x, m, None, &mut y).unwrap();
        *w.cpu_kernel() = if format == Format::Bf16 {
            Kernel::Decoded
        } else {
            Kernel::GgufDecoded
        };
        for isa in Isa::tested() {
            w.set_isa(isa).unwrap();
            let mut yd = vec![0f32; m * n];
            w.forward_f32(&x, m, None, &mut yd).unwrap();
            if format == Format::Bf16 {
                assert_eq!(
                    y.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    yd.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                );
            } else {
                let q = q8_1::Rows::quantize(&x, m, k).dequantized();
                let mut wd = vec![0f32; k];
                for r in 0..n {
                    decode::decode_row(&view, r as u64, &mut wd).unwrap();
                    for i in 0..m {
                        let s: f64 = (0..k)
                            .map(|j| (wd[j] as f64 * q[i * k + j] as f64).abs())
                            .sum();
                        let tol = 2.0 * tolerance(k, s, 0.0, Dtype::F32);
                        let (a, b) = (y[i * n + r], yd[i * n + r]);
                        assert!(((a - b) as f64).abs() <= tol, "{format}: {a} vs {b}");
                    }
                }
            }
        }
    }
}
