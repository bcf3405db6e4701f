//! `ninfer_decode_rows` through the C ABI: a row range decoded in one call.
//!
//! Oracles: the gguf fixtures' expected f32 words (from gguf-py's dequantizers) for every
//! row range, and for bf16/f16 outputs those words rounded by the plain IEEE algorithms of
//! tests/common; hand-made grouped rows for the refusals (nothing written on any error).

mod common;

use common::{Bytes, View, bf16_rne, f16_rne};
use ninfer::{Format, Status};
use std::ffi::c_void;
use std::path::PathBuf;

unsafe extern "C" {
    fn ninfer_decode_rows(
        view: *const View,
        first: u64,
        count: u64,
        out: *mut c_void,
        out_bytes: usize,
        out_dtype: u32,
    ) -> u32;
}

const F32: u32 = 0;
const BF16: u32 = 1;
const F16: u32 = 2;

fn decode_rows(view: &View, first: u64, count: u64, out: &mut [u8], dtype: u32) -> u32 {
    unsafe {
        ninfer_decode_rows(
            view,
            first,
            count,
            out.as_mut_ptr().cast(),
            out.len(),
            dtype,
        )
    }
}

/// A byte buffer aligned to 4 (a Vec<u32> viewed as bytes).
fn aligned(bytes: usize, fill: u8) -> Vec<u32> {
    vec![u32::from_ne_bytes([fill; 4]); bytes.div_ceil(4)]
}

fn as_bytes(v: &mut [u32]) -> &mut [u8] {
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), v.len() * 4) }
}

#[test]
fn every_gguf_fixture_and_row_range_matches_gguf_py() {
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
        let expected: Vec<u32> = bytes[nb..]
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        let view = View {
            format: format as u32,
            layout: 5, // gguf_blocks_v1
            rows: rows as u64,
            cols: cols as u64,
            planes: [Bytes::of(&bytes[..nb]), Bytes::NONE, Bytes::NONE],
        };
        // Every (first, count) with count ≥ 1: the whole tensor, single rows, the tail.
        for first in 0..rows {
            for count in 1..=rows - first {
                let n = count * cols;
                let mut out = aligned(n * 4, 0xA5);
                assert_eq!(
                    decode_rows(&view, first as u64, count as u64, as_bytes(&mut out), F32),
                    0
                );
                let want = &expected[first * cols..first * cols + n];
                assert!(out[..n] == *want, "{line}: rows {first}+{count} f32");
                compared += n;
            }
        }
        for (dtype, oracle) in [(BF16, bf16_rne as fn(f32) -> u16), (F16, f16_rne)] {
            let mut out = aligned(rows * cols * 2, 0xA5);
            assert_eq!(
                decode_rows(&view, 0, rows as u64, as_bytes(&mut out), dtype),
                0
            );
            let words: Vec<u16> = as_bytes(&mut out)
                .chunks_exact(2)
                .map(|w| u16::from_ne_bytes([w[0], w[1]]))
                .collect();
            for (i, &e) in expected.iter().enumerate() {
                let e = f32::from_bits(e);
                if e.is_finite() {
                    assert_eq!(words[i], oracle(e), "{line} dtype {dtype} value {i}: {e:e}");
                    compared += 1;
                }
            }
        }
    }
    assert!(compared > 100_000, "{compared}");
}

/// Four rows of q8_g32_fp16, K = 128, made by hand in row_split_k128_v1: codes plane
/// (128 bytes per row, code = (r + k) mod 7 − 3), no high bits, scales plane (4 groups ×
/// binary16 per row: 1.0, 0.5, 2.0, 0.25).
fn q8_rows() -> (Vec<u8>, Vec<u8>) {
    let mut codes = vec![0u8; 4 * 128];
    for r in 0..4 {
        for k in 0..128 {
            codes[r * 128 + k] = (((r + k) % 7) as i8 - 3) as u8;
        }
    }
    let mut scales = vec![0u8; 4 * 8];
    for r in 0..4 {
        for (g, s) in [0x3C00u16, 0x3800, 0x4000, 0x3400].iter().enumerate() {
            scales[r * 8 + 2 * g..r * 8 + 2 * g + 2].copy_from_slice(&s.to_le_bytes());
        }
    }
    (codes, scales)
}

fn q8_view<'a>(codes: &'a [u8], scales: &'a [u8]) -> View {
    View {
        format: Format::Q8_G32Fp16 as u32,
        layout: 1, // row_split_k128_v1
        rows: 4,
        cols: 128,
        planes: [Bytes::of(codes), Bytes::NONE, Bytes::of(scales)],
    }
}

#[test]
fn grouped_rows_hand_worked() {
    let (codes, scales) = q8_rows();
    let view = q8_view(&codes, &scales);
    let mut out = aligned(4 * 128 * 4, 0);
    assert_eq!(decode_rows(&view, 0, 4, as_bytes(&mut out), F32), 0);
    for r in 0..4 {
        for k in 0..128 {
            let code = ((r + k) % 7) as f32 - 3.0;
            let scale = [1.0, 0.5, 2.0, 0.25][k / 32];
            assert_eq!(
                f32::from_bits(out[r * 128 + k]),
                code * scale,
                "row {r} col {k}"
            );
        }
    }
}

#[test]
fn refusals_write_nothing() {
    let (codes, mut scales) = q8_rows();
    // Row 2, group 1: +Inf scale; decoding refuses the row.
    scales[2 * 8 + 2..2 * 8 + 4].copy_from_slice(&0x7C00u16.to_le_bytes());
    let view = q8_view(&codes, &scales);
    let canary = 0xA5A5_A5A5u32;
    let cases: [(u64, u64, usize, u32, Status); 6] = [
        (0, 4, 4 * 128 * 4, F32, Status::InvalidEncoding),
        (1, 3, 3 * 128 * 2, BF16, Status::InvalidEncoding),
        (3, 2, 2 * 128 * 4, F32, Status::RowOutOfRange),
        (u64::MAX, 2, 64, F32, Status::Overflow),
        (0, 2, 2 * 128 * 4 - 1, F32, Status::BufferTooSmall),
        (0, 1, 128 * 4, 7, Status::UnknownDtype),
    ];
    for (first, count, bytes, dtype, want) in cases {
        let mut out = aligned(bytes, 0xA5);
        let st = decode_rows(&view, first, count, &mut as_bytes(&mut out)[..bytes], dtype);
        assert_eq!(st, want as u32, "rows {first}+{count} dtype {dtype}");
        assert!(
            out.iter().all(|&w| w == canary),
            "rows {first}+{count}: output written"
        );
    }
    // The rows before the refused one decode; count 0 decodes nothing.
    let mut out = aligned(2 * 128 * 4, 0xA5);
    assert_eq!(decode_rows(&view, 0, 2, as_bytes(&mut out), F32), 0);
    let st = unsafe { ninfer_decode_rows(&view, 4, 0, std::ptr::null_mut(), 0, F32) };
    assert_eq!(st, 0);
    // Misaligned output, NULL output with a length.
    let mut out = aligned(128 * 4 + 4, 0xA5);
    let b = as_bytes(&mut out);
    assert_eq!(
        decode_rows(&view, 0, 1, &mut b[1..128 * 4 + 1], F32),
        Status::Misaligned as u32
    );
    let st = unsafe { ninfer_decode_rows(&view, 0, 1, std::ptr::null_mut(), 512, F32) };
    assert_eq!(st, Status::NullPointer as u32);
}
