//! The C exports of the row-scaled FP8 formats, called through their C symbols.

// Links the library so its `ninfer_*` symbols resolve.
use ninfer as _;
use std::ffi::c_void;

#[repr(C)]
#[derive(Clone, Copy)]
struct Bytes {
    ptr: *const u8,
    len: usize,
}

#[repr(C)]
struct View {
    format: u32,
    layout: u32,
    rows: u64,
    cols: u64,
    planes: [Bytes; 3],
}

unsafe extern "C" {
    fn ninfer_fp8_row_maxabs(
        format: u32,
        src_dtype: u32,
        src: *const c_void,
        src_len: usize,
        rows: u64,
        cols: u64,
        plane0: *mut u8,
        plane0_len: usize,
        plane1: *mut u8,
        plane1_len: usize,
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
        plane0: *mut u8,
        plane0_len: usize,
        plane1: *mut u8,
        plane1_len: usize,
    ) -> u32;
    fn ninfer_fp8_row_unpack(
        view: *const View,
        codes: *mut u8,
        codes_len: usize,
        scales: *mut u16,
        scales_len: usize,
    ) -> u32;
    fn ninfer_decode_row(view: *const View, row: u64, out: *mut f32, out_len: usize) -> u32;
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
    let st = unsafe {
        ninfer_fp8_row_maxabs(
            FP8_BF16,
            0,
            src.as_ptr().cast(),
            6,
            2,
            3,
            codes.as_mut_ptr(),
            6,
            scales.as_mut_ptr(),
            4,
        )
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
    let st = unsafe {
        ninfer_fp8_row_maxabs(
            FP8_FP16,
            0,
            src.as_ptr().cast(),
            6,
            2,
            3,
            rows.as_mut_ptr(),
            10,
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(st, 0);
    assert_eq!(rows, [0x00, 0x3C, 0x7E, 0xBC, 0x28, 0, 0, 0, 0, 0]);
    let st = unsafe {
        ninfer_fp8_row_maxabs(
            FP8_FP16,
            7,
            src.as_ptr().cast(),
            6,
            2,
            3,
            rows.as_mut_ptr(),
            10,
            std::ptr::null_mut(),
            0,
        )
    };
    assert_eq!(st, 18);
    // NULL source with a length: NULL_POINTER (1).
    let st = unsafe {
        ninfer_fp8_row_maxabs(
            FP8_FP16,
            0,
            std::ptr::null(),
            6,
            2,
            3,
            rows.as_mut_ptr(),
            10,
            std::ptr::null_mut(),
            0,
        )
    };
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
            rows.as_mut_ptr(),
            10,
            std::ptr::null_mut(),
            0,
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
