//! Test weights for the CUDA kernels' tests (host build and device): random planes of every
//! format with mostly finite scales and the edge divisors of nvfp4's orders.

use crate::layouts;
use crate::registry::{Category, Format, Layout};

pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
    pub(crate) fn f16_scale(&mut self) -> [u8; 2] {
        let v = match self.next() % 16 {
            0 => 0.0,
            1 => 3e-7 * self.unit(),
            2 => -0.01 * self.unit().abs(),
            _ => 0.02 * self.unit(),
        };
        half::f16::from_f32(v).to_bits().to_le_bytes()
    }
}

/// Random planes of an `n × k` weight of `format` in `layout`: random code bytes, mostly
/// finite scales (some zero, subnormal, negative where the format allows them), random
/// divisors (one per source; some outside the fast and scaled ranges).
pub(crate) fn payload(
    format: Format,
    layout: Layout,
    n: usize,
    k: usize,
    rng: &mut Rng,
) -> [Vec<u8>; 3] {
    let sizes = layouts::plane_sizes(format, layout, n, k).unwrap();
    let mut p = sizes.map(|len| (0..len).map(|_| rng.next() as u8).collect::<Vec<u8>>());
    let info = format.info();
    match info.category {
        Category::DirectFloat => {
            for (i, w) in p[0].chunks_exact_mut(info.block_bytes as usize).enumerate() {
                let v = rng.unit() * if i % 61 == 0 { 1e30 } else { 3.0 };
                let bytes = v.to_le_bytes();
                let nb = w.len();
                w.copy_from_slice(&bytes[4 - nb..]);
            }
        }
        Category::GroupedInt => {
            for w in p[2].chunks_exact_mut(2) {
                w.copy_from_slice(&rng.f16_scale());
            }
        }
        Category::RowScaledFloat => {
            let scale = |rng: &mut Rng| -> [u8; 2] {
                let v = (rng.unit().abs() + 0.01)
                    * if rng.next().is_multiple_of(9) {
                        1e-30
                    } else {
                        0.01
                    };
                match format {
                    Format::Fp8E4m3fnRowFp16 => half::f16::from_f32(v.max(1e-4)).to_bits(),
                    _ => half::bf16::from_f32(v).to_bits(),
                }
                .to_le_bytes()
            };
            if layout == Layout::RowInterleavedV1 {
                for rec in p[0].chunks_exact_mut(k + 2) {
                    rec[..2].copy_from_slice(&scale(rng));
                }
            } else {
                for w in p[1].chunks_exact_mut(2) {
                    w.copy_from_slice(&scale(rng));
                }
            }
        }
        Category::BlockScaledFloat => {
            for (i, w) in p[1].iter_mut().enumerate() {
                *w = if i % 211 == 5 { 0x7F } else { *w & 0x7F };
            }
            // One divisor per row (a stack of N sources): typical ones, and the edges of
            // the scaled order (2⁻¹¹⁵, 2¹¹⁶) and of the q8_1 block order (2¹¹⁶ with the
            // smallest scale word 0x01: 0.5·2⁻⁹/d = 2⁻¹²⁶ exactly), and a tiny one.
            p[2] = (0..n)
                .flat_map(|i| {
                    let v: f32 = match i % 9 {
                        3 => 1e-37,
                        5 => 2f32.powi(116),
                        7 => 2f32.powi(-115),
                        _ => 2688.0 / (rng.unit().abs() + 0.1),
                    };
                    v.to_le_bytes()
                })
                .collect();
            let nkb = k / 16;
            for r in (5..n).step_by(9) {
                p[1][layouts::block_scale::offset(r, 0, nkb)] = 0x01;
            }
        }
        Category::GgufBlock => {
            let block = crate::formats::gguf::blocks::block_type(format).expect("a GGUF type");
            // IQ1_M has no d (its scale is spread over its scales words): its first two
            // bytes, codes, take a scale word as the others' d.
            let mut fields: Vec<_> = block.f16_fields().map(|f| f.at).collect();
            if fields.is_empty() {
                fields.push(0);
            }
            for blk in p[0].chunks_exact_mut(block.bytes) {
                for &at in &fields {
                    blk[at..at + 2].copy_from_slice(&rng.f16_scale());
                }
            }
        }
        Category::DirectInt => {}
    }
    p
}

/// `payload`, made decodable for the grouped formats (whose decoder checks every group):
/// q4..q8 encoded from random values, t2 with its one illegal word (−2) cleared and nonzero
/// scales (its padding columns, K not a multiple of 128, still hold random codes); nvfp4
/// and fp8 without the E4M3FN NaN words.
pub(crate) fn valid_payload(
    format: Format,
    layout: Layout,
    n: usize,
    k: usize,
    rng: &mut Rng,
) -> [Vec<u8>; 3] {
    use crate::formats::float_source::FloatSource;
    use crate::formats::grouped::encode::{Options, quantize};
    let mut p = payload(format, layout, n, k, rng);
    match format {
        Format::Q4_G64Fp16 | Format::Q5_G64Fp16 | Format::Q6_G64Fp16 | Format::Q8_G32Fp16 => {
            let src: Vec<f32> = (0..n * k)
                .map(|i| rng.unit() * if i % 300 < 64 { 0.0 } else { 1.0 })
                .collect();
            let [a, b, c] = &mut p;
            quantize(
                format,
                FloatSource::F32(&src),
                n,
                k,
                &Options::ABSMAX,
                [a, b, c],
            )
            .unwrap();
        }
        Format::T2_G128Fp16 => {
            for b in &mut p[0] {
                for i in 0..4 {
                    if (*b >> (2 * i)) & 3 == 2 {
                        *b &= !(3 << (2 * i));
                    }
                }
            }
            for w in p[2].chunks_exact_mut(2) {
                if w == [0, 0] || w == [0, 0x80] {
                    w.copy_from_slice(&0x3c00u16.to_le_bytes());
                }
            }
        }
        Format::Fp8E4m3fnRowBf16 | Format::Fp8E4m3fnRowFp16 => {
            // The E4M3FN NaN words are not valid codes.
            let skip = if layout == Layout::RowInterleavedV1 {
                2
            } else {
                0
            };
            let rec = p[0].len() / n;
            for r in p[0].chunks_exact_mut(rec) {
                for c in &mut r[skip..] {
                    if *c & 0x7F == 0x7F {
                        *c &= 0xFE;
                    }
                }
            }
        }
        Format::Nvfp4 => {
            for w in &mut p[1] {
                if *w == 0x7F {
                    *w = 0x7E; // the E4M3FN NaN word is not a valid block scale
                }
            }
        }
        _ => {}
    }
    p
}

/// Equal bits, or both NaN (a NaN's sign and payload are not specified: docs/linear.md).
pub(crate) fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}
