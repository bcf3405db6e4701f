//! nvfp4 read in place: both orders, stacked sources.

use super::*;

/// nvfp4 outputs (bits) written plainly from cpu::float's two orders (the scaled one
/// unless `plain`), independently of the kernels and their condition functions:
/// y[r·n + i] for weight row i and activation row r.
fn nvfp4_plain(view: &WeightView<'_>, x: &[f32], m: usize, plain: bool) -> Vec<u32> {
    let (n, k) = (view.rows(), view.cols());
    let nkb = k / 16;
    let per = crate::formats::nvfp4::rows_per_source(view);
    let mut y = vec![0u32; m * n];
    for i in 0..n {
        let codes = view.row_bytes(0, i);
        let sf: Vec<f32> = (0..nkb)
            .map(|b| {
                let at = crate::layouts::block_scale::offset(i, b, nkb);
                crate::words::e4m3fn::decode(view.plane(1)[at])
            })
            .collect();
        let dw = &view.plane(2)[4 * (i / per)..4 * (i / per) + 4];
        let d = f32::from_le_bytes([dw[0], dw[1], dw[2], dw[3]]);
        for r in 0..m {
            let xr = &x[r * k..(r + 1) * k];
            let max = xr.iter().fold(0f64, |a, v| a.max(v.abs() as f64));
            let scaled = !plain
                && (2f64.powi(-115)..=2f64.powi(116)).contains(&(d.abs() as f64))
                && xr.iter().all(|v| v.is_finite())
                && xr
                    .iter()
                    .all(|&v| v == 0.0 || v.abs() as f64 >= 2f64.powi(-116))
                && k as f64 * max <= 2f64.powi(116);
            let mut acc = [0f32; 8];
            for j in 0..k {
                let c = codes[j / 2] >> (4 * (j % 2));
                let mag = crate::words::e2m1::MAGNITUDES[(c & 7) as usize] * sf[j / 16];
                let mag = if scaled { mag } else { mag / d };
                let w = if c & 8 != 0 { -mag } else { mag };
                acc[j % 8] = w.mul_add(xr[j], acc[j % 8]);
            }
            let t = crate::linear::cpu::tree8(acc);
            y[r * n + i] = if scaled { t / d } else { t }.to_bits();
        }
    }
    y
}

/// The in-place nvfp4 kernel gives the bits of its order written plainly (scalar and
/// AVX2, batched and single rows), with two stacked sources (two divisors) and rows
/// beyond one swizzle tile; where the plain order applies it is the decoded path's.
#[test]
fn nvfp4_kernel_matches_its_order_written_plainly() {
    let pow2 = |e: i32| f32::from_bits(((e + 127) as u32) << 23);
    let (n, k, m) = (130, 80, 5);
    let layout = Layout::BlockScaleK16_M128x4_V1;
    // Divisor pairs (two stacked sources): moderate; 2¹¹⁶ / 2¹¹⁷ (either side of the
    // scaled order's bound; the smallest E4M3FN magnitudes divided by them are normal /
    // subnormal); tiny (quotients overflow to Inf); huge with 2⁻¹²⁶ (subnormal
    // quotients).
    for ds in [
        [0.75f32, 1.625],
        [pow2(116), pow2(117)],
        [f32::from_bits(1 << 9), 1e-30], // 2⁻¹⁴⁰ (subnormal)
        [3e38, pow2(-126)],
    ] {
        let sizes = layouts::plane_sizes(Format::Nvfp4, layout, n, k).unwrap();
        let mut p: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&l| (0..l).map(|i| ((i * 7919 + 5) % 253) as u8).collect())
            .collect();
        // Valid scales (sign clear, no NaN word), subnormal E4M3FN ones included.
        p[1].iter_mut().for_each(|s| *s &= 0x7E);
        p[2] = ds.iter().flat_map(|d| d.to_le_bytes()).collect();
        let view = WeightView::new(Format::Nvfp4, layout, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
            .collect();
        let mut w = PreparedWeight::new(view).unwrap();
        assert_eq!(*w.cpu_kernel(), Kernel::Nvfp4);
        let results = grouped_runs(&mut w, &x, m);
        let want = nvfp4_plain(&view, &x, m, false);
        assert!(results.iter().all(|r| *r == want), "divisors {ds:?}");
        *w.cpu_kernel() = Kernel::Decoded;
        let results = grouped_runs(&mut w, &x, m);
        let want = nvfp4_plain(&view, &x, m, true);
        assert!(
            results.iter().all(|r| *r == want),
            "decoded, divisors {ds:?}"
        );
    }
}
