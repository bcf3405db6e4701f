//! The grouped formats read in place (row_split_k128_v1), exact activations.

use super::*;

/// Planes of a row_split_k128_v1 weight from logical codes (N × K) and scale words
/// (N × ceil(K/G)), packed by the layout codec without validation (so invalid words can
/// be tested too).
fn row_split_planes(
    format: Format,
    n: usize,
    k: usize,
    codes: &[i8],
    scales: &[u16],
) -> Vec<Vec<u8>> {
    let s = crate::formats::grouped::Scheme::of(format).unwrap();
    let per = layouts::row_split::row_plane_bytes(format, k).unwrap();
    let kp = layouts::row_split::padded_k(k).unwrap();
    let ng = k.div_ceil(s.group);
    let mut p: Vec<Vec<u8>> = per.iter().map(|&l| vec![0u8; l * n]).collect();
    let mut padded = vec![0i8; kp];
    for r in 0..n {
        let [a, b, c] = &mut p[..] else {
            unreachable!()
        };
        layouts::row_split::pack_row(
            &s,
            &codes[r * k..(r + 1) * k],
            &scales[r * ng..(r + 1) * ng],
            &mut padded,
            [
                &mut a[r * per[0]..(r + 1) * per[0]],
                &mut b[r * per[1]..(r + 1) * per[1]],
                &mut c[r * per[2]..(r + 1) * per[2]],
            ],
        );
    }
    p
}

const GROUPED: [Format; 6] = [
    Format::Q2_G64Fp16,
    Format::T2_G128Fp16,
    Format::Q4_G64Fp16,
    Format::Q5_G64Fp16,
    Format::Q6_G64Fp16,
    Format::Q8_G32Fp16,
];

/// The in-place grouped kernels (q2, t2, q4, q5, q6, q8) give the decoded path's bits on
/// valid payloads (same values, same order): every code word, K with a partial last
/// group, K % 32 ≠ 0 (scalar tail after the 32-value steps), several groups, N not a
/// multiple of 4; extreme scales (±65504, the subnormal 2⁻²⁴, negative, q2's −0).
#[test]
fn row_split_kernels_match_the_decoded_path_bitwise() {
    for format in GROUPED {
        for k in [8, 40, 200, 256, 1029] {
            let (n, m) = (7, 5);
            let info = format.info();
            let span = (info.code_max - info.code_min + 1) as usize;
            let codes: Vec<i8> = (0..n * k)
                .map(|i| (info.code_min + ((i * 7919 + 13) % span) as i64) as i8)
                .collect();
            let g = info.block_values as usize;
            let specials = [0x7BFFu16, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x0400];
            let scales: Vec<u16> = (0..n * k.div_ceil(g))
                .map(|i| match i % 5 {
                    0 => specials[(i / 5) % specials.len()],
                    1 if format == Format::Q2_G64Fp16 => 0x8000,
                    _ => half::f16::from_f32(
                        0.003 * (1 + i % 11) as f32 * if i % 3 == 0 { -1.0 } else { 1.0 },
                    )
                    .to_bits(),
                })
                .collect();
            let p = row_split_planes(format, n, k, &codes, &scales);
            let view =
                WeightView::new(format, Layout::RowSplitK128_V1, n, k, [&p[0], &p[1], &p[2]])
                    .unwrap();
            let x: Vec<f32> = (0..m * k)
                .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
                .collect();
            let mut w = PreparedWeight::new(view).unwrap();
            assert!(matches!(*w.cpu_kernel(), Kernel::RowSplit(_)));
            let mut results = grouped_runs(&mut w, &x, m);
            *w.cpu_kernel() = Kernel::Decoded;
            results.extend(grouped_runs(&mut w, &x, m));
            assert!(results.windows(2).all(|r| r[0] == r[1]), "{format} K={k}");
        }
    }
}

/// Words outside the valid language (Inf / NaN scales, q8's −128, t2's −2, non-zero
/// padding codes) are computed with their arithmetic meaning, identically on every path
/// (scalar, AVX2, batched, single row); padding never reaches the result.
#[test]
fn row_split_kernels_agree_on_invalid_words() {
    for format in GROUPED {
        let (n, k, m) = (6, 200, 4);
        let info = format.info();
        let g = info.block_values as usize;
        let span = 1usize << info.code_bits;
        let scheme = crate::formats::grouped::Scheme::of(format).unwrap();
        let codes: Vec<i8> = (0..n * k)
            .map(|i| scheme.code_from_word(((i * 37 + 3) % span) as u8))
            .collect();
        let scales: Vec<u16> = (0..n * k.div_ceil(g))
            .map(|i| match i % 7 {
                0 if i / 7 % 3 == 1 => 0x7C00,
                0 if i / 7 % 3 == 2 => 0xFE01,
                _ => half::f16::from_f32(0.01 * (i % 5) as f32 - 0.02).to_bits(),
            })
            .collect();
        let mut p = row_split_planes(format, n, k, &codes, &scales);
        // Non-zero padding codes and scales: outside the logical tensor, never read as
        // values (x has no element there).
        let per = layouts::row_split::row_plane_bytes(format, k).unwrap();
        for r in 0..n {
            let last = &mut p[0][r * per[0]..(r + 1) * per[0]];
            *last.last_mut().unwrap() = 0xFF;
            let sc = &mut p[2][r * per[2]..(r + 1) * per[2]];
            let at = sc.len() - 2;
            if at >= 2 * k.div_ceil(g) {
                sc[at..].copy_from_slice(&0x7E00u16.to_le_bytes());
            }
        }
        let view =
            WeightView::new(format, Layout::RowSplitK128_V1, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        let x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 17.0)
            .collect();
        let mut w = PreparedWeight::new(view).unwrap();
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
        // Rows whose groups are all finite give finite outputs; a NaN or Inf scale
        // gives NaN (codes of both signs meet x of both signs) or ±Inf.
        let ng = k.div_ceil(g);
        for r in 0..n {
            let finite = scales[r * ng..(r + 1) * ng]
                .iter()
                .all(|s| s & 0x7C00 != 0x7C00);
            for i in 0..m {
                let y = f32::from_bits(results[0][i * n + r]);
                assert_eq!(y.is_finite(), finite, "{format} row {r}: {y}");
            }
        }
    }
}
