//! Tiles of M: a CPU product takes x 64 rows at a time, and the bits of every output
//! are those of its row alone, on either side of every tile boundary, for every supported
//! format and activation profile, each instruction set and thread count, f32 and bf16 x.

use ninfer::linear::{self, Activation, Device, Isa, PreparedWeight};
use ninfer::{Dtype, Format, Layout, WeightView};

fn isas() -> Vec<Isa> {
    [Isa::Scalar, Isa::Avx2]
        .into_iter()
        .filter(|i| i.available())
        .collect()
}

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

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    /// A finite binary16 scale: mostly normal, some subnormal, zero and negative.
    fn f16_scale(&mut self) -> [u8; 2] {
        let v = match self.next() % 16 {
            0 => 0.0,
            1 => 3e-7 * self.unit(),
            2 => -0.01 * self.unit().abs(),
            _ => 0.02 * self.unit(),
        };
        half::f16::from_f32(v).to_bits().to_le_bytes()
    }
}

/// Random valid weight bytes for an n × k matrix of `format`.
fn random_weight(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
    let info = format.info();
    match format {
        Format::Fp32 => (0..n * k)
            .flat_map(|_| (rng.unit() * 3.0).to_le_bytes())
            .collect(),
        Format::Bf16 => (0..n * k)
            .flat_map(|_| (((rng.unit() * 3.0).to_bits() >> 16) as u16).to_le_bytes())
            .collect(),
        _ => {
            let bb = info.block_bytes as usize;
            let nb = n * k / info.block_values as usize;
            let mut w: Vec<u8> = (0..nb * bb).map(|_| rng.next() as u8).collect();
            let fields: &[usize] = match format {
                Format::GgufQ2_K => &[80, 82],
                Format::GgufQ3_K => &[108],
                Format::GgufQ4_K | Format::GgufQ5_K => &[0, 2],
                Format::GgufQ6_K => &[208],
                _ => &[0],
            };
            for b in 0..nb {
                for &at in fields {
                    let s = rng.f16_scale();
                    w[b * bb + at..b * bb + at + 2].copy_from_slice(&s);
                }
            }
            w
        }
    }
}

/// Random planes for any format, with every scale field set to a finite moderate value so
/// that products stay finite (codes are random; decode_row defines their values).
fn random_planes(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
    let layout = format.info().layout;
    let sizes = ninfer::layouts::plane_sizes(format, layout, n, k).unwrap();
    let mut p: Vec<Vec<u8>> = sizes
        .iter()
        .map(|&len| (0..len).map(|_| rng.next() as u8).collect())
        .collect();
    let f16 = |rng: &mut Rng| rng.f16_scale();
    match layout {
        Layout::ContiguousLeV1 => return vec![random_weight(format, n, k, rng), vec![], vec![]],
        Layout::GgufBlocksV1 => {
            let info = format.info();
            let bb = info.block_bytes as usize;
            let fields: &[usize] = match format {
                Format::GgufQ2_K => &[80, 82],
                Format::GgufQ3_K => &[108],
                Format::GgufQ4_K | Format::GgufQ5_K => &[0, 2],
                Format::GgufQ6_K => &[208],
                Format::GgufIq1M => &[],
                _ => &[0],
            };
            for blk in p[0].chunks_exact_mut(bb) {
                for &at in fields {
                    blk[at..at + 2].copy_from_slice(&f16(rng));
                }
                if format == Format::GgufIq1M {
                    // The super-scale's exponent lives in the top nibble of byte 55: 0x3_
                    // keeps it finite.
                    blk[55] = (blk[55] & 0x0F) | 0x30;
                }
            }
        }
        Layout::RowSplitK128_V1 => {
            // Legal logical codes and non-zero finite scales, packed by the layout codec.
            let info = format.info();
            let span = (info.code_max - info.code_min + 1) as u64;
            let codes: Vec<i8> = (0..n * k)
                .map(|_| (info.code_min + (rng.next() % span) as i64) as i8)
                .collect();
            let g = info.block_values as usize;
            let scales: Vec<u16> = (0..n * k.div_ceil(g))
                .map(|_| {
                    let v = 0.001 + 0.02 * rng.unit().abs();
                    let v = if rng.next() % 2 == 0 { v } else { -v };
                    half::f16::from_f32(v).to_bits()
                })
                .collect();
            let [a, b, c] = &mut p[..] else {
                unreachable!()
            };
            ninfer::layouts::row_split::pack(format, n, k, &codes, &scales, [a, b, c]).unwrap();
        }
        Layout::BlockScaleK16_M128x4_V1 => {
            for s in p[1].iter_mut() {
                *s &= 0x7E; // non-negative, never the NaN word 0x7F
            }
            for d in p[2].chunks_exact_mut(4) {
                d.copy_from_slice(&(0.75f32 + rng.unit().abs()).to_le_bytes());
            }
        }
        Layout::RowScaleV1 => {
            for c in p[0].iter_mut() {
                if *c & 0x7F == 0x7F {
                    *c ^= 1;
                }
            }
            for s in p[1].chunks_exact_mut(2) {
                let v = half::bf16::from_f32(0.001 + 0.01 * rng.unit().abs());
                s.copy_from_slice(&v.to_bits().to_le_bytes());
            }
        }
        Layout::RowInterleavedV1 => {
            let stride = p[0].len() / n;
            for rec in p[0].chunks_exact_mut(stride) {
                let v = half::f16::from_f32(0.001 + 0.01 * rng.unit().abs());
                rec[0..2].copy_from_slice(&v.to_bits().to_le_bytes());
                for c in rec[2..].iter_mut() {
                    if *c & 0x7F == 0x7F {
                        *c ^= 1;
                    }
                }
            }
        }
    }
    p
}
