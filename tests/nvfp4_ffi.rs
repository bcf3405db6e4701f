//! The C exports of nvfp4, called through their C symbols.

mod common;
use common::*;

use std::ffi::c_void;

/// Output plane entries from `(buffer, length)` pairs (length may be shorter than the buffer).
fn planes(p: [(&mut [u8], usize); 3]) -> [MutBytes; 3] {
    p.map(|(b, len)| MutBytes {
        ptr: b.as_mut_ptr(),
        len,
    })
}

unsafe extern "C" {
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
    fn ninfer_nvfp4_validate(view: *const View) -> u32;
    fn ninfer_nvfp4_pack_scales(
        rows: u64,
        k_blocks: u64,
        linear: *const u8,
        linear_len: usize,
        out: *mut u8,
        out_len: usize,
    ) -> u32;
    fn ninfer_nvfp4_unpack_scales(
        rows: u64,
        k_blocks: u64,
        swizzled: *const u8,
        swizzled_len: usize,
        out: *mut u8,
        out_len: usize,
    ) -> u32;
}

const NVFP4: u32 = 9;
const BLOCK_SCALE: u32 = 2;

#[test]
fn quantize_validate_decode_through_c() {
    // Two stacked sources of one row each: amax 6 and 3.
    let mut src = [0u16; 32];
    src[0] = 0x40C0; // bf16 6.0
    src[16] = 0x4040; // bf16 3.0
    src[17] = 0xBFC0; // bf16 -1.5
    let (mut codes, mut scales, mut divs) = ([0u8; 16], [0u8; 512], [0u8; 8]);
    let st = unsafe {
        ninfer_nvfp4_quantize(
            NVFP4,
            src.as_ptr().cast(),
            32 * 2,
            1,
            2,
            16,
            2,
            planes([(&mut codes, 16), (&mut scales, 512), (&mut divs, 8)]).as_ptr(),
        )
    };
    assert_eq!(st, 0);
    assert_eq!(f32::from_le_bytes(divs[..4].try_into().unwrap()), 448.0);
    assert_eq!(f32::from_le_bytes(divs[4..].try_into().unwrap()), 896.0);
    assert_eq!((scales[0], scales[16]), (0x7E, 0x7E));
    let mut view = View {
        format: NVFP4,
        layout: BLOCK_SCALE,
        rows: 2,
        cols: 16,
        planes: [
            Bytes {
                ptr: codes.as_ptr(),
                len: 16,
            },
            Bytes {
                ptr: scales.as_ptr(),
                len: 512,
            },
            Bytes {
                ptr: divs.as_ptr(),
                len: 8,
            },
        ],
    };
    assert_eq!(unsafe { ninfer_nvfp4_validate(&view) }, 0);
    let mut out = [0f32; 16];
    assert_eq!(
        unsafe { ninfer_decode_row(&view, 1, out.as_mut_ptr(), 16) },
        0
    );
    assert_eq!(&out[..2], &[3.0, -1.5]);
    // Three divisors do not divide two rows: BAD_SHAPE (8).
    view.planes[2].len = 12;
    let twelve = [0u8; 12];
    view.planes[2].ptr = twelve.as_ptr();
    assert_eq!(unsafe { ninfer_nvfp4_validate(&view) }, 8);
    // A -0 block scale: INVALID_ENCODING (15).
    view.planes[2] = Bytes {
        ptr: divs.as_ptr(),
        len: 8,
    };
    scales[16] = 0x80;
    view.planes[1].ptr = scales.as_ptr();
    assert_eq!(unsafe { ninfer_nvfp4_validate(&view) }, 15);
    // K = 8: BAD_SHAPE from the quantizer.
    let st = unsafe {
        ninfer_nvfp4_quantize(
            NVFP4,
            src.as_ptr().cast(),
            32 * 2,
            1,
            4,
            8,
            1,
            planes([(&mut codes, 16), (&mut scales, 512), (&mut divs, 4)]).as_ptr(),
        )
    };
    assert_eq!(st, 8);
}

#[test]
fn pack_unpack_through_c() {
    let lin: Vec<u8> = (0..130 * 5).map(|i| (i % 251) as u8 + 1).collect();
    let mut sw = vec![0u8; 2048];
    let st =
        unsafe { ninfer_nvfp4_pack_scales(130, 5, lin.as_ptr(), lin.len(), sw.as_mut_ptr(), 2048) };
    assert_eq!(st, 0);
    assert_eq!(sw[1552], lin[129 * 5 + 4]); // (129, 4) → 1552
    assert_eq!(sw[21], lin[33 * 5 + 1]); // (33, 1) → 21
    let mut back = vec![0u8; lin.len()];
    let st = unsafe {
        ninfer_nvfp4_unpack_scales(130, 5, sw.as_ptr(), 2048, back.as_mut_ptr(), back.len())
    };
    assert_eq!(st, 0);
    assert_eq!(back, lin);
    // SIZE_MISMATCH (9).
    let st =
        unsafe { ninfer_nvfp4_pack_scales(130, 5, lin.as_ptr(), lin.len(), sw.as_mut_ptr(), 2047) };
    assert_eq!(st, 9);
}

#[test]
fn quantize_conventions_match_grouped() {
    let src = [0x3F80u16; 32]; // bf16 1.0, 2 × 16
    let (mut codes, mut scales, mut divs) = ([0u8; 16], [0u8; 512], [0u8; 4]);
    let mut run = |format: u32, bytes: usize| unsafe {
        ninfer_nvfp4_quantize(
            format,
            src.as_ptr().cast(),
            bytes,
            1,
            2,
            16,
            1,
            planes([(&mut codes, 16), (&mut scales, 512), (&mut divs, 4)]).as_ptr(),
        )
    };
    assert_eq!(run(NVFP4, 64), 0);
    // src_bytes is in bytes: 63 is not whole bf16 values, 32 is the value count.
    assert_eq!(run(NVFP4, 63), 9);
    assert_eq!(run(NVFP4, 32), 9);
    // Another format: INVALID_ARGUMENT (3); an unknown one: UNKNOWN_FORMAT (4).
    assert_eq!(run(10, 64), 3);
    assert_eq!(run(999, 64), 4);
}
