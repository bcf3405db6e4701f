//! Random valid weight payloads for the benchmark: legal codes and finite, moderate scales
//! in every plane of the format's layout (the kernels' speed does not depend on the
//! values, but a NaN or Inf scale could take slow paths and a decoded-path format refuses
//! an invalid encoding). Grouped formats are packed from legal logical codes by the
//! library's own layout codec (`layouts::row_split::pack`), nvfp4 is encoded from random
//! values by the library's `nvfp4_quantize`; every payload is checked with `validate`
//! before it is timed.

use ninfer::formats::float_source::FloatSource;
use ninfer::formats::gguf::blocks;
use ninfer::formats::nvfp4;
use ninfer::{Format, Layout, WeightView};

/// xorshift64: fast, deterministic filler.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn fill(&mut self, buf: &mut [u8]) {
        let mut chunks = buf.chunks_exact_mut(8);
        for c in &mut chunks {
            c.copy_from_slice(&self.next().to_le_bytes());
        }
        let tail = chunks.into_remainder();
        let last = self.next().to_le_bytes();
        tail.copy_from_slice(&last[..tail.len()]);
    }
}

/// The planes of a random valid N × K payload of `format` in its registered layout.
pub fn planes(format: Format, n: usize, k: usize) -> ninfer::Result<[Vec<u8>; 3]> {
    let info = format.info();
    let layout = info.layout;
    let sizes = ninfer::layouts::plane_sizes(format, layout, n, k)?;
    let mut rng = Rng(0x1234_5678_9abc_def0);
    let mut p = sizes.map(|len| vec![0u8; len]);
    for plane in p.iter_mut() {
        rng.fill(plane);
    }
    let f16 = half::f16::from_f32(0.01).to_bits().to_le_bytes();
    match layout {
        // Top byte 0x3C/0x3D (either sign): finite values with magnitude in [2⁻⁷, 2⁻⁵).
        Layout::ContiguousLeV1 => {
            let word = if format == Format::Bf16 { 2 } else { 4 };
            p[0].chunks_exact_mut(word)
                .for_each(|c| c[word - 1] = 0x3C | (c[word - 1] & 0x81));
        }
        Layout::GgufBlocksV1 => {
            // The binary16 super-block/block scales (d, and dmin where the type has one);
            // every other byte is a legal code or sub-scale.
            let block = blocks::block_type(format).expect("a GGUF block type");
            for b in p[0].chunks_exact_mut(block.bytes) {
                for f in block.f16_fields() {
                    b[f.range()].copy_from_slice(&f16);
                }
                if format == Format::GgufIq1M {
                    // IQ1_M's binary16 super-scale is spread over the top nibbles of its
                    // four u16 sub-scale words; the last byte's holds its sign and top
                    // exponent bits: 0x3 keeps it finite.
                    let last = &mut b[blocks::iq1_m::SCALES.end() - 1];
                    *last = (*last & 0x0F) | 0x30;
                }
            }
        }
        Layout::RowSplitK128_V1 => {
            let span = (info.code_max - info.code_min + 1) as u64;
            let codes: Vec<i8> = (0..n * k)
                .map(|_| (info.code_min + (rng.next() % span) as i64) as i8)
                .collect();
            let scales = vec![u16::from_le_bytes(f16); n * k.div_ceil(info.block_values as usize)];
            let [a, b, c] = &mut p;
            ninfer::layouts::row_split::pack(format, n, k, &codes, &scales, [a, b, c])?;
        }
        Layout::BlockScaleK16_M128x4_V1 => {
            // The library's encoder (nvfp4_quantize) on random values in [-1, 1): it also
            // writes the swizzled layout's zero padding.
            let x: Vec<f32> = (0..n * k)
                .map(|_| (rng.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0)
                .collect();
            let [a, b, c] = &mut p;
            nvfp4::nvfp4_quantize(FloatSource::F32(&x), n, k, 1, [a, b, c])?;
        }
        Layout::RowScaleV1 => {
            // E4M3FN codes without the NaN words (0x7F, 0xFF); bf16 row scales.
            p[0].iter_mut()
                .filter(|c| **c & 0x7F == 0x7F)
                .for_each(|c| *c ^= 1);
            let bf = half::bf16::from_f32(0.01).to_bits().to_le_bytes();
            p[1].chunks_exact_mut(2)
                .for_each(|c| c.copy_from_slice(&bf));
        }
        Layout::RowInterleavedV1 => {
            // Per row: a binary16 scale, then the row's E4M3FN codes.
            let stride = p[0].len() / n.max(1);
            for rec in p[0].chunks_exact_mut(stride.max(1)) {
                rec[0..2].copy_from_slice(&f16);
                rec[2..]
                    .iter_mut()
                    .filter(|c| **c & 0x7F == 0x7F)
                    .for_each(|c| *c ^= 1);
            }
        }
    }
    let view = WeightView::new(format, layout, n, k, [&p[0], &p[1], &p[2]])?;
    ninfer::validate::validate(&view)?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use ninfer::Dtype;
    use ninfer::linear::{Device, supported};
    use ninfer::registry::FORMATS;

    #[test]
    fn every_supported_format_gets_a_valid_payload() {
        let mut n = 0;
        for info in FORMATS {
            let f = info.format;
            if supported(f, info.layout, Dtype::F32, Dtype::F32, Device::Cpu) {
                super::planes(f, 5, 512).unwrap_or_else(|e| panic!("{}: {e}", f.name()));
                n += 1;
            }
        }
        assert!(n >= 29, "{n} formats");
    }
}
