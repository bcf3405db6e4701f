//! fp8_e4m3fn_row_* read in place: both orders, both layouts, invalid words.

use super::*;

/// fp8 outputs (bits) written plainly from cpu::float's two orders, independently of
/// the kernels and of their condition functions: y[r·n + i] for weight row i and
/// activation row r.
fn fp8_plain(view: &WeightView<'_>, x: &[f32], m: usize) -> Vec<u32> {
    let (n, k) = (view.rows(), view.cols());
    let mut y = vec![0u32; m * n];
    for i in 0..n {
        let (word, codes) = layouts::fp8_row::row_parts(view, i);
        let s = crate::formats::fp8_row::scale_value(view.format(), word);
        for r in 0..m {
            let xr = &x[r * k..(r + 1) * k];
            let max = xr.iter().fold(0f64, |a, v| a.max(v.abs() as f64));
            let scaled = (s.abs() as f64) < 2f64.powi(119)
                && xr.iter().all(|v| v.is_finite())
                && xr
                    .iter()
                    .all(|&v| v == 0.0 || v.abs() as f64 >= 2f64.powi(-109))
                && k as f64 * max <= 2f64.powi(126);
            let mut acc = [0f32; 8];
            for j in 0..k {
                let v = crate::words::e4m3fn::decode(codes[j]);
                let w = if scaled { v / 256.0 } else { v * s };
                acc[j % 8] = w.mul_add(xr[j], acc[j % 8]);
            }
            let t = crate::linear::cpu::tree8(acc);
            y[r * n + i] = if scaled { t * (256.0 * s) } else { t }.to_bits();
        }
    }
    y
}

/// The in-place fp8 row kernel gives the bits of its order written plainly (scalar and
/// AVX2, batched and single rows), both layouts.
#[test]
fn fp8_row_kernel_matches_its_order_written_plainly() {
    for (format, k) in [
        (Format::Fp8E4m3fnRowBf16, 77),
        (Format::Fp8E4m3fnRowFp16, 301),
    ] {
        let (n, m) = (5, 3);
        let layout = format.info().layout;
        let sizes = layouts::plane_sizes(format, layout, n, k).unwrap();
        let mut p: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&l| (0..l).map(|i| ((i * 7919 + 11) % 251) as u8).collect())
            .collect();
        let code = |c: &mut u8| {
            if *c & 0x7F == 0x7F {
                *c ^= 1
            }
        };
        if layout == Layout::RowScaleV1 {
            p[0].iter_mut().for_each(code);
            for (i, s) in p[1].chunks_exact_mut(2).enumerate() {
                let v = half::bf16::from_f32(0.002 * (i + 1) as f32);
                s.copy_from_slice(&v.to_bits().to_le_bytes());
            }
        } else {
            let stride = p[0].len() / n;
            for (i, rec) in p[0].chunks_exact_mut(stride).enumerate() {
                let v = half::f16::from_f32(0.002 * (i + 1) as f32);
                rec[..2].copy_from_slice(&v.to_bits().to_le_bytes());
                rec[2..2 + k].iter_mut().for_each(code);
                rec[2 + k..].iter_mut().for_each(|b| *b = 0);
            }
        }
        let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
            .collect();
        let mut w = PreparedWeight::new(view).unwrap();
        assert_eq!(*w.cpu_kernel(), Kernel::Fp8Row);
        let run = |w: &PreparedWeight<'_>| {
            let mut y = vec![0f32; m * n];
            w.forward_f32(&x, m, None, &mut y).unwrap();
            y.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        let mut results = grouped_runs(&mut w, &x, m);
        for isa in Isa::tested() {
            w.set_isa(isa).unwrap();
            results.push(run(&w));
        }
        let plain = fp8_plain(&view, &x, m);
        assert!(results.iter().all(|r| *r == plain), "{format} K={k}");
    }
}
/// The in-place fp8 kernel on E4M3FN NaN words (invalid, computed as NaN) and extreme
/// row scales: the same bits on every path; valid rows also match the decoded path.
#[test]
fn fp8_row_kernel_agrees_on_nan_words_and_extreme_scales() {
    for format in [Format::Fp8E4m3fnRowBf16, Format::Fp8E4m3fnRowFp16] {
        let (n, k, m) = (6, 100, 5);
        let layout = format.info().layout;
        let sizes = layouts::plane_sizes(format, layout, n, k).unwrap();
        let mut p: Vec<Vec<u8>> = sizes.iter().map(|&l| vec![0u8; l]).collect();
        // Scales: the largest finite, the smallest subnormal, 1, 0.01 (bf16 / binary16).
        let scales: [u16; 6] = if format == Format::Fp8E4m3fnRowBf16 {
            [0x7F7F, 0x0001, 0x3F80, 0x3C24, 0x7F7F, 0x3F80]
        } else {
            [0x7BFF, 0x0001, 0x3C00, 0x211F, 0x7BFF, 0x3C00]
        };
        // Rows 4 and 5 hold a NaN word (one in the short-form chunk test, one in the tail).
        let code = |r: usize, j: usize| -> u8 {
            match (r, j) {
                (4, 40) => 0x7F,
                (5, 97) => 0xFF,
                _ => {
                    let c = ((r * k + j) * 7919 % 256) as u8;
                    if c & 0x7F == 0x7F { c ^ 1 } else { c }
                }
            }
        };
        if layout == Layout::RowScaleV1 {
            for r in 0..n {
                for j in 0..k {
                    p[0][r * k + j] = code(r, j);
                }
                p[1][2 * r..2 * r + 2].copy_from_slice(&scales[r].to_le_bytes());
            }
        } else {
            let stride = p[0].len() / n;
            for (r, rec) in p[0].chunks_exact_mut(stride).enumerate() {
                rec[..2].copy_from_slice(&scales[r].to_le_bytes());
                for j in 0..k {
                    rec[2 + j] = code(r, j);
                }
            }
        }
        let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
            .collect();
        let mut w = PreparedWeight::new(view).unwrap();
        assert_eq!(*w.cpu_kernel(), Kernel::Fp8Row);
        let results = grouped_runs(&mut w, &x, m);
        // Where several NaNs meet (a NaN word, Inf − Inf), which one an fma passes on
        // depends on its operand order, an instruction-selection detail: NaN outputs
        // are compared as NaN, every other output bit for bit.
        let canon = |r: &Vec<u32>| -> Vec<u32> {
            r.iter()
                .map(|&b| {
                    if f32::from_bits(b).is_nan() {
                        0x7FC0_0000
                    } else {
                        b
                    }
                })
                .collect()
        };
        let results: Vec<Vec<u32>> = results.iter().map(canon).collect();
        assert!(results.windows(2).all(|r| r[0] == r[1]), "{format}");
        // Rows 4 and 5 hold a NaN word; rows 1..3 have small scales (finite outputs).
        for r in 1..n {
            for i in 0..m {
                let y = f32::from_bits(results[0][i * n + r]);
                assert_eq!(y.is_nan(), r >= 4, "{format} row {r}: {y}");
                assert_eq!(y.is_finite(), r < 4, "{format} row {r}: {y}");
            }
        }
        // Every row against its order written plainly (the largest bf16 scale takes the
        // multiply-per-element order, the others the scaled one).
        assert_eq!(results[0], canon(&fp8_plain(&view, &x, m)), "{format}");
    }
}
