//! Tiles of M: a CPU product takes x 64 rows at a time, and the bits of every output
//! are those of its row alone, on either side of every tile boundary, for every supported
//! format and activation profile, each instruction set and thread count, f32 and bf16 x.

mod common;
use common::isas;
use common::random::{Rng, random_planes};
use ninfer::linear::{self, Activation, Device, PreparedWeight};
use ninfer::{Dtype, Format, Layout, WeightView};

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

/// Activation rows crossing two tile boundaries (64, 128), some of them outside the
/// range the fp8 / nvfp4 scaled orders accept (a huge and a subnormal value), so a tile
/// mixes both kinds of rows.
fn activations(m: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    let mut x: Vec<f32> = (0..m * k).map(|_| rng.unit()).collect();
    for r in 0..m {
        match r % 5 {
            1 => x[r * k] = 1.0e30,
            3 => x[r * k + 1] = 1.0e-40,
            _ => {}
        }
    }
    x
}

#[test]
// Runs every supported format × profile × instruction set (the scalar path included)
// natively; too slow for the aarch64 job's qemu debug build.
#[cfg_attr(
    not(target_arch = "x86_64"),
    ignore = "run natively on x86-64, scalar path included"
)]
fn tiles_of_m_keep_every_row_bit_identical_to_the_row_alone() {
    let mut rng = Rng(77);
    let (n, m) = (21usize, 150usize);
    let mut cases = 0;
    for i in 0..Format::COUNT as u32 {
        let format = Format::from_u32(i).unwrap();
        let info = format.info();
        let layout = info.layout;
        if !linear::supported(format, layout, Dtype::F32, Dtype::F32, Device::Cpu) {
            continue;
        }
        let k = match layout {
            Layout::GgufBlocksV1 => 2 * info.block_values.max(32) as usize,
            Layout::BlockScaleK16_M128x4_V1 => 96,
            _ => 128,
        };
        let planes = random_planes(format, n, k, &mut rng);
        let view =
            WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let x = activations(m, k, &mut rng);
        let xb: Vec<u8> = x
            .iter()
            .flat_map(|v| half::bf16::from_f32(*v).to_bits().to_ne_bytes())
            .collect();
        let xbf: Vec<f32> = x
            .iter()
            .map(|v| half::bf16::from_f32(*v).to_f32())
            .collect();
        for activation in [Activation::Exact, Activation::Q8_1] {
            if !linear::supported_activation(format, layout, activation, Device::Cpu)
                || (activation == Activation::Q8_1 && k % 32 != 0)
            {
                continue;
            }
            let mut want: Option<Vec<u32>> = None;
            for isa in isas() {
                for threads in [1, 2] {
                    let mut w = PreparedWeight::new(view).unwrap();
                    w.set_activation(activation).unwrap();
                    w.set_isa(isa).unwrap();
                    w.set_threads(threads).unwrap();
                    let what = format!("{format} {activation:?} {isa:?} t{threads}");
                    let mut y = vec![0f32; m * n];
                    w.forward_f32(&x, m, None, &mut y).unwrap();
                    let alone = |xs: &[f32], r: usize| {
                        let mut y1 = vec![0f32; n];
                        w.forward_f32(&xs[r * k..(r + 1) * k], 1, None, &mut y1)
                            .unwrap();
                        bits(&y1)
                    };
                    if want.is_none() {
                        // Every row alone (the reference, once per case).
                        let mut all = Vec::with_capacity(m * n);
                        for r in 0..m {
                            all.extend(alone(&x, r));
                        }
                        want = Some(all);
                    }
                    let want = want.as_ref().unwrap();
                    for r in 0..m {
                        assert_eq!(
                            bits(&y[r * n..(r + 1) * n]),
                            want[r * n..(r + 1) * n],
                            "{what}: row {r} of M = {m} differs from the row alone"
                        );
                    }
                    // bf16 x and outputs: the bits of the f32 path on the bf16 values.
                    let mut yb = vec![0u8; m * n * 2];
                    w.forward(&xb, Dtype::Bf16, m, k, None, &mut yb, Dtype::Bf16)
                        .unwrap();
                    let mut yf = vec![0f32; m * n];
                    w.forward_f32(&xbf, m, None, &mut yf).unwrap();
                    for (i, o) in yb.chunks_exact(2).enumerate() {
                        let got = u16::from_ne_bytes([o[0], o[1]]);
                        let exp = half::bf16::from_f32(yf[i]).to_bits();
                        assert!(
                            got == exp || (yf[i].is_nan() && half::bf16::from_bits(got).is_nan()),
                            "{what}: bf16 output {i}"
                        );
                    }
                    cases += 1;
                }
            }
        }
    }
    println!("{cases} (format, profile, isa, threads) cases, M = {m} in tiles of 64");
    assert!(cases >= 20);
}
