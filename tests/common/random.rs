//! Random weights for the linear tests: every format's planes with finite, moderate scale
//! fields (codes random; the decoders define their values).

use ninfer::{Format, Layout};

pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    /// A finite binary16 scale: mostly normal, some subnormal, zero and negative.
    pub fn f16_scale(&mut self) -> [u8; 2] {
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
pub fn random_weight(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
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
pub fn random_planes(format: Format, n: usize, k: usize, rng: &mut Rng) -> Vec<Vec<u8>> {
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
                    let v = if rng.next().is_multiple_of(2) { v } else { -v };
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
