//! The C exports of the row-scaled FP8 formats, called through their C symbols.

mod common;
use common::*;

use std::ffi::c_void;

/// The 3 output plane entries, unused ones `{NULL, 0}`.
fn planes(p0: &mut [u8], p1: Option<&mut [u8]>) -> [MutBytes; 3] {
    let none = MutBytes {
        ptr: std::ptr::null_mut(),
        len: 0,
    };
    let mb = |p: &mut [u8]| MutBytes {
        ptr: p.as_mut_ptr(),
        len: p.len(),
    };
    [mb(p0), p1.map_or(none, mb), none]
}

unsafe extern "C" {
    fn ninfer_fp8_row_maxabs(
        format: u32,
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        planes: *const MutBytes,
    ) -> u32;
    fn ninfer_fp8_row_validate(view: *const View) -> u32;
    fn ninfer_fp8_row_pack(
        format: u32,
        rows: u64,
        cols: u64,
        codes: *const u8,
        codes_len: usize,
        scales: *const u16,
        scales_len: usize,
        planes: *const MutBytes,
    ) -> u32;
    fn ninfer_fp8_row_unpack(
        view: *const View,
        codes: *mut u8,
        codes_len: usize,
        scales: *mut u16,
        scales_len: usize,
    ) -> u32;
}

const FP8_BF16: u32 = 10;
const FP8_FP16: u32 = 11;
const ROW_SCALE: u32 = 3;
const ROW_INTERLEAVED: u32 = 4;
const EMPTY: Bytes = Bytes {
    ptr: std::ptr::null(),
    len: 0,
};

#[test]
fn encode_validate_decode_through_c() {
    let src = [448.0f32, -1.5, 0.25, 0.0, 0.0, 0.0];
    let mut codes = [0u8; 6];
    let mut scales = [0u8; 4];
    let pl = planes(&mut codes, Some(&mut scales));
    let st = unsafe {
        ninfer_fp8_row_maxabs(FP8_BF16, src.as_ptr().cast(), 6 * 4, 0, 2, 3, pl.as_ptr())
    };
    assert_eq!(st, 0);
    assert_eq!(codes, [0x7E, 0xBC, 0x28, 0, 0, 0]);
    assert_eq!(scales, [0x80, 0x3F, 0, 0]);
    let mut view = View {
        format: FP8_BF16,
        layout: ROW_SCALE,
        rows: 2,
        cols: 3,
        planes: [
            Bytes {
                ptr: codes.as_ptr(),
                len: 6,
            },
            Bytes {
                ptr: scales.as_ptr(),
                len: 4,
            },
            EMPTY,
        ],
    };
    assert_eq!(unsafe { ninfer_fp8_row_validate(&view) }, 0);
    let mut out = [0f32; 3];
    assert_eq!(
        unsafe { ninfer_decode_row(&view, 0, out.as_mut_ptr(), 3) },
        0
    );
    assert_eq!(out, [448.0, -1.5, 0.25]);
    // A NaN code: INVALID_ENCODING (15) from both.
    codes[1] = 0x7F;
    view.planes[0].ptr = codes.as_ptr();
    assert_eq!(unsafe { ninfer_fp8_row_validate(&view) }, 15);
    assert_eq!(
        unsafe { ninfer_decode_row(&view, 0, out.as_mut_ptr(), 3) },
        15
    );
    // Wrong layout for the format: INCOMPATIBLE_LAYOUT (6).
    view.layout = ROW_INTERLEAVED;
    assert_eq!(unsafe { ninfer_fp8_row_validate(&view) }, 6);

    // fp16 interleaved; plane1 must be empty; bad dtype refused (UNKNOWN_DTYPE 18).
    let mut rows = [0u8; 2 * 5];
    let pl = planes(&mut rows, None);
    let st = unsafe {
        ninfer_fp8_row_maxabs(FP8_FP16, src.as_ptr().cast(), 6 * 4, 0, 2, 3, pl.as_ptr())
    };
    assert_eq!(st, 0);
    assert_eq!(rows, [0x00, 0x3C, 0x7E, 0xBC, 0x28, 0, 0, 0, 0, 0]);
    let st = unsafe {
        ninfer_fp8_row_maxabs(FP8_FP16, src.as_ptr().cast(), 6 * 4, 7, 2, 3, pl.as_ptr())
    };
    assert_eq!(st, 18);
    // NULL source with a length: NULL_POINTER (1).
    let st =
        unsafe { ninfer_fp8_row_maxabs(FP8_FP16, std::ptr::null(), 6 * 4, 0, 2, 3, pl.as_ptr()) };
    assert_eq!(st, 1);
}

#[test]
fn pack_unpack_through_c() {
    let codes = [0x38u8, 0xBC, 0x28, 0x00, 0x80, 0x00];
    let scales = [0x2000u16, 0x0000];
    let mut rows = [0u8; 10];
    let st = unsafe {
        ninfer_fp8_row_pack(
            FP8_FP16,
            2,
            3,
            codes.as_ptr(),
            6,
            scales.as_ptr(),
            2,
            planes(&mut rows, None).as_ptr(),
        )
    };
    assert_eq!(st, 0);
    assert_eq!(
        rows,
        [0x00, 0x20, 0x38, 0xBC, 0x28, 0x00, 0x00, 0x00, 0x80, 0x00]
    );
    let view = View {
        format: FP8_FP16,
        layout: ROW_INTERLEAVED,
        rows: 2,
        cols: 3,
        planes: [
            Bytes {
                ptr: rows.as_ptr(),
                len: 10,
            },
            EMPTY,
            EMPTY,
        ],
    };
    let (mut c2, mut s2) = ([0u8; 6], [0u16; 2]);
    let st = unsafe { ninfer_fp8_row_unpack(&view, c2.as_mut_ptr(), 6, s2.as_mut_ptr(), 2) };
    assert_eq!(st, 0);
    assert_eq!((c2, s2), (codes, scales));
    // Too short an output: SIZE_MISMATCH (9).
    let st = unsafe { ninfer_fp8_row_unpack(&view, c2.as_mut_ptr(), 5, s2.as_mut_ptr(), 2) };
    assert_eq!(st, 9);
}

#[test]
fn maxabs_source_length_in_bytes() {
    let src = [1.0f32; 6];
    let mut codes = [0u8; 6];
    let mut scales = [0u8; 4];
    let pl = planes(&mut codes, Some(&mut scales));
    // 23 bytes is not a whole number of f32: SIZE_MISMATCH (9); 20 bytes: too short.
    for n in [23, 20, 28] {
        let st = unsafe {
            ninfer_fp8_row_maxabs(FP8_BF16, src.as_ptr().cast(), n, 0, 2, 3, pl.as_ptr())
        };
        assert_eq!(st, 9, "src_bytes {n}");
    }
    // An unused plane entry with a length: SIZE_MISMATCH.
    let mut extra = [0u8; 1];
    let mut pl = planes(&mut codes, Some(&mut scales));
    pl[2] = MutBytes {
        ptr: extra.as_mut_ptr(),
        len: 1,
    };
    let st =
        unsafe { ninfer_fp8_row_maxabs(FP8_BF16, src.as_ptr().cast(), 24, 0, 2, 3, pl.as_ptr()) };
    assert_eq!(st, 9);
    // NULL planes array: NULL_POINTER.
    let st = unsafe {
        ninfer_fp8_row_maxabs(FP8_BF16, src.as_ptr().cast(), 24, 0, 2, 3, std::ptr::null())
    };
    assert_eq!(st, 1);
    // bf16 source: 2 bytes per value.
    let bf = [0x3F80u16; 6];
    let pl = planes(&mut codes, Some(&mut scales));
    let st =
        unsafe { ninfer_fp8_row_maxabs(FP8_BF16, bf.as_ptr().cast(), 12, 1, 2, 3, pl.as_ptr()) };
    assert_eq!(st, 0);
    assert_eq!(codes, [0x7E; 6]);
}
