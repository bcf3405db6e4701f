//! `decode_row_as`: bf16 and f16 outputs are the exact f32 decode rounded to nearest-even.
//!
//! Oracle: the gguf fixtures' expected f32 words (from gguf-py) rounded by the plain
//! algorithms of tests/common (written from the IEEE definitions, independent of the `half` crate the
//! library uses), compared word for word.

mod common;

use common::{bf16_rne, f16_rne};
use ninfer::decode::decode_row_as;
use ninfer::{Dtype, Format, Status, WeightView};
use std::path::PathBuf;

#[test]
fn plain_rounding_oracles_agree_with_hand_values() {
    assert_eq!(f16_rne(1.0), 0x3C00);
    assert_eq!(f16_rne(65504.0), 0x7BFF);
    assert_eq!(f16_rne(65519.99), 0x7BFF);
    assert_eq!(f16_rne(65520.0), 0x7C00); // tie between 65504 and 2^16 goes to even (Inf)
    assert_eq!(f16_rne(2f32.powi(-24)), 0x0001);
    assert_eq!(f16_rne(2f32.powi(-25)), 0x0000); // half the smallest subnormal: tie to 0
    assert_eq!(f16_rne(-(1.0 + 2f32.powi(-10))), 0xBC01);
    assert_eq!(f16_rne(1.0 + 2f32.powi(-11)), 0x3C00); // tie, even mantissa kept
    assert_eq!(bf16_rne(1.0), 0x3F80);
    assert_eq!(bf16_rne(f32::from_bits(0x3F80_8000)), 0x3F80); // tie to even
    assert_eq!(bf16_rne(f32::from_bits(0x3F81_8000)), 0x3F82);
    assert_eq!(bf16_rne(-f32::from_bits(0x0000_0001)), 0x8000);
}

#[test]
fn bf16_and_f16_outputs_are_rne_of_the_exact_f32() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gguf");
    let index = std::fs::read_to_string(dir.join("index.txt")).expect("gguf fixtures missing");
    let mut compared = 0usize;
    for line in index
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let format = Format::from_name(f[0]).unwrap();
        let (rows, cols): (usize, usize) = (f[2].parse().unwrap(), f[3].parse().unwrap());
        let bytes = std::fs::read(dir.join(f[4])).unwrap();
        let info = format.info();
        let nb = rows * cols / info.block_values as usize * info.block_bytes as usize;
        let expected: Vec<f32> = bytes[nb..]
            .chunks_exact(4)
            .map(|w| f32::from_bits(u32::from_le_bytes(w.try_into().unwrap())))
            .collect();
        let view = WeightView::single(format, rows, cols, &bytes[..nb]).unwrap();
        let mut out = vec![0u8; cols * 2];
        for r in 0..rows {
            let exp = &expected[r * cols..(r + 1) * cols];
            for (dtype, oracle) in [
                (Dtype::Bf16, bf16_rne as fn(f32) -> u16),
                (Dtype::F16, f16_rne),
            ] {
                decode_row_as(&view, r as u64, dtype, &mut out).unwrap();
                for (k, (w, &e)) in out.chunks_exact(2).zip(exp).enumerate() {
                    let got = u16::from_ne_bytes([w[0], w[1]]);
                    assert_eq!(
                        got,
                        oracle(e),
                        "{} {} row {r} col {k} {dtype:?}: {e:e}",
                        f[0],
                        f[1]
                    );
                }
                compared += cols;
            }
            // f32 output is the decode itself.
            let mut out32 = vec![0u8; cols * 4];
            decode_row_as(&view, r as u64, Dtype::F32, &mut out32).unwrap();
            for (w, &e) in out32.chunks_exact(4).zip(exp) {
                assert_eq!(u32::from_ne_bytes(w.try_into().unwrap()), e.to_bits());
            }
        }
    }
    println!("{compared} bf16/f16 words compared");
    assert!(compared > 100_000);
}

#[test]
fn short_output_and_unknown_dtype_are_refused() {
    let blocks = [0u8; 34];
    let view = WeightView::single(Format::GgufQ8_0, 1, 32, &blocks).unwrap();
    let mut out = vec![0u8; 63];
    let e = decode_row_as(&view, 0, Dtype::F16, &mut out).unwrap_err();
    assert_eq!(e.status(), Status::BufferTooSmall);
    assert_eq!(
        Dtype::from_u32(3).unwrap_err().status(),
        Status::UnknownDtype
    );
}
