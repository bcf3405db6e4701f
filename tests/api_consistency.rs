//! Consistency of the C API's messages and error locations (tester report, v0.1):
//! byte units and expected sizes in SIZE_MISMATCH messages, `UINT64_MAX` locations for
//! whole-row / per-matrix fields and layout padding (never printed as a number), and the
//! element alignment `ninfer_decode_row_as` requires. Oracles: sizes worked out by hand.

mod common;
use common::*;

use ninfer::{Format, Layout};
use std::ffi::c_void;

unsafe extern "C" {
    fn ninfer_quantize_grouped(
        format: u32,
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        options: *const c_void,
        planes: *const MutBytes,
        provenance: *mut c_void,
    ) -> u32;
    fn ninfer_nvfp4_quantize(
        format: u32,
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        sources: u64,
        planes: *const MutBytes,
    ) -> u32;
    fn ninfer_decode_row_as(
        view: *const View,
        row: u64,
        dtype: u32,
        out: *mut u8,
        out_bytes: usize,
    ) -> u32;
}

const SIZE_MISMATCH: u32 = 9;
const INVALID_ENCODING: u32 = 15;
const SCALE_OVERFLOW: u32 = 17;
const MISALIGNED: u32 = 2;
const NONE: u64 = u64::MAX;

fn last_error() -> String {
    let mut buf = vec![0u8; 512];
    let n = unsafe { ninfer_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(511));
    String::from_utf8(buf).unwrap()
}

fn mut_planes(p: &mut [Vec<u8>; 3]) -> [MutBytes; 3] {
    let [a, b, c] = p;
    [a, b, c].map(|v| MutBytes {
        ptr: if v.is_empty() {
            std::ptr::null_mut()
        } else {
            v.as_mut_ptr()
        },
        len: v.len(),
    })
}

fn view(format: Format, layout: Layout, rows: u64, cols: u64, planes: &[Vec<u8>; 3]) -> View {
    View {
        format: format as u32,
        layout: layout as u32,
        rows,
        cols,
        planes: [0, 1, 2].map(|i| Bytes {
            ptr: if planes[i].is_empty() {
                std::ptr::null()
            } else {
                planes[i].as_ptr()
            },
            len: planes[i].len(),
        }),
    }
}

fn planes_for(format: Format, layout: Layout, rows: usize, cols: usize) -> [Vec<u8>; 3] {
    ninfer::layouts::plane_sizes(format, layout, rows, cols)
        .unwrap()
        .map(|n| vec![0u8; n])
}

/// q4, 2 × 100 f32 = 800 bytes: wrong byte lengths are reported in bytes with 800 expected.
#[test]
fn source_size_mismatch_is_in_bytes_with_the_right_expected_size() {
    let src = vec![0.5f32; 201];
    let mut p = planes_for(Format::Q4_G64Fp16, Layout::RowSplitK128_V1, 2, 100);
    let mp = mut_planes(&mut p);
    let run = |bytes: usize| unsafe {
        ninfer_quantize_grouped(
            Format::Q4_G64Fp16 as u32,
            src.as_ptr().cast(),
            bytes,
            0,
            2,
            100,
            std::ptr::null(),
            mp.as_ptr(),
            std::ptr::null_mut(),
        )
    };
    for (bytes, want) in [
        (799, "source: 799 bytes given, 800 bytes expected"),
        (804, "source: 804 bytes given, 800 bytes expected"),
        (796, "source: 796 bytes given, 800 bytes expected"),
    ] {
        assert_eq!(run(bytes), SIZE_MISMATCH, "{bytes}");
        assert_eq!(last_error(), want);
    }
    assert_eq!(run(800), 0);
    // A plane of the wrong length: bytes too (q4 codes plane of 2 × 128 K: 2 × 64 bytes).
    let mut short = p.clone();
    short[0].pop();
    let mp = mut_planes(&mut short);
    let st = unsafe {
        ninfer_quantize_grouped(
            Format::Q4_G64Fp16 as u32,
            src.as_ptr().cast(),
            800,
            0,
            2,
            100,
            std::ptr::null(),
            mp.as_ptr(),
            std::ptr::null_mut(),
        )
    };
    assert_eq!(st, SIZE_MISMATCH);
    let msg = last_error();
    assert!(
        msg.ends_with("127 bytes given, 128 bytes expected"),
        "{msg}"
    );
}

/// The Rust API counts elements and says so.
#[test]
fn element_counts_say_values() {
    let src = [0f32; 5];
    let e = ninfer::formats::float_source::FloatSource::F32(&src)
        .check_shape(2, 3)
        .unwrap_err();
    assert_eq!(e.to_string(), "source: 5 values given, 6 values expected");
}

/// fp8 row scale −0 at row 2: out_block = UINT64_MAX, the message says "row 2 (...)".
#[test]
fn row_scale_errors_have_no_block_number() {
    let (rows, cols) = (4usize, 3usize);
    let mut p = planes_for(Format::Fp8E4m3fnRowBf16, Layout::RowScaleV1, rows, cols);
    for r in 0..rows {
        p[1][2 * r..2 * r + 2].copy_from_slice(&0x3F80u16.to_le_bytes());
    }
    p[1][4..6].copy_from_slice(&0x8000u16.to_le_bytes()); // row 2: −0
    let v = view(Format::Fp8E4m3fnRowBf16, Layout::RowScaleV1, 4, 3, &p);
    let (mut r, mut b) = (0u64, 0u64);
    assert_eq!(
        unsafe { ninfer_validate(&v, &mut r, &mut b) },
        INVALID_ENCODING
    );
    assert_eq!((r, b), (2, NONE));
    let msg = last_error();
    assert!(msg.starts_with("invalid encoding at row 2 ("), "{msg}");
    assert!(!msg.contains("18446744073709551615"), "{msg}");
}

/// nvfp4: a NaN divisor, non-zero scale padding of a 4-row tensor, and a divisor overflow.
#[test]
fn nvfp4_whole_matrix_and_padding_locations() {
    let (rows, cols) = (4usize, 16usize);
    let mut p = planes_for(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, rows, cols);
    p[2] = 1.0f32.to_le_bytes().to_vec();
    let v = view(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, 4, 16, &p);
    let (mut r, mut b) = (7u64, 7u64);
    assert_eq!(unsafe { ninfer_validate(&v, &mut r, &mut b) }, 0);

    // Padding row 127 (offset (127 % 32) · 16 + (127 / 32) · 4 = 508).
    p[1][508] = 0x38;
    let v = view(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, 4, 16, &p);
    assert_eq!(
        unsafe { ninfer_validate(&v, &mut r, &mut b) },
        INVALID_ENCODING
    );
    assert_eq!((r, b), (NONE, NONE));
    let msg = last_error();
    assert!(
        msg.contains("padded row 127") && msg.contains("byte 508"),
        "{msg}"
    );
    assert!(!msg.contains("18446744073709551615"), "{msg}");
    p[1][508] = 0;

    // A NaN divisor: the first row of its source, no block.
    p[2] = f32::NAN.to_le_bytes().to_vec();
    let v = view(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, 4, 16, &p);
    assert_eq!(
        unsafe { ninfer_validate(&v, &mut r, &mut b) },
        INVALID_ENCODING
    );
    assert_eq!((r, b), (0, NONE));
    let msg = last_error();
    assert!(msg.contains("weight divisor 0"), "{msg}");
    assert!(!msg.contains("18446744073709551615"), "{msg}");

    // amax = 2^-149: d_w = 2688 / amax is not finite: SCALE_OVERFLOW without a group number.
    let src = vec![f32::from_bits(1); rows * cols];
    let mut q = planes_for(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, rows, cols);
    q[2] = vec![0u8; 4];
    let mp = mut_planes(&mut q);
    let st = unsafe {
        ninfer_nvfp4_quantize(
            Format::Nvfp4 as u32,
            src.as_ptr().cast(),
            4 * src.len(),
            0,
            4,
            16,
            1,
            mp.as_ptr(),
        )
    };
    assert_eq!(st, SCALE_OVERFLOW);
    let msg = last_error();
    assert!(msg.contains("row 0 ("), "{msg}");
    assert!(!msg.contains("18446744073709551615"), "{msg}");
}

/// `ninfer_decode_row_as` requires the element type's alignment, like `ninfer_decode_row`.
#[test]
fn decode_row_as_requires_element_alignment() {
    let (rows, cols) = (1usize, 32usize);
    let p = [vec![0u8; 34], vec![], vec![]];
    let v = view(
        Format::GgufQ8_0,
        Layout::GgufBlocksV1,
        rows as u64,
        cols as u64,
        &p,
    );
    let mut buf = vec![0u32; 40]; // 4-byte aligned storage
    let base: *mut u8 = buf.as_mut_ptr().cast();
    for (dtype, size) in [(0u32, 4usize), (1, 2), (2, 2)] {
        let need = cols * size;
        let st = unsafe { ninfer_decode_row_as(&v, 0, dtype, base, need) };
        assert_eq!(st, 0, "dtype {dtype} aligned");
        let st = unsafe { ninfer_decode_row_as(&v, 0, dtype, base.add(1), need) };
        assert_eq!(st, MISALIGNED, "dtype {dtype} at +1");
        let msg = last_error();
        assert!(msg.contains(&format!("{size} bytes")), "{msg}");
    }
    // bf16 at +2 is aligned for its element type.
    let st = unsafe { ninfer_decode_row_as(&v, 0, 1, base.add(2), 64) };
    assert_eq!(st, 0);
}
