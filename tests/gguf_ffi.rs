//! The C exports for GGUF payloads (decode, validate, row slices and gathers), called
//! through their C symbols: every refused input gets its own status, and nothing is
//! written unless the status is OK.

mod common;
use common::*;

use ninfer::{Format, Layout, Status};

unsafe extern "C" {
    fn ninfer_rows_copy(
        view: *const View,
        start: u64,
        count: u64,
        out: *mut u8,
        out_len: usize,
        out_written: *mut usize,
    ) -> u32;
    fn ninfer_rows_gather(
        view: *const View,
        indices: *const u64,
        n_indices: usize,
        out: *mut u8,
        out_len: usize,
        out_written: *mut usize,
    ) -> u32;
}

const EMPTY: Bytes = Bytes {
    ptr: std::ptr::null(),
    len: 0,
};

fn view(format: Format, rows: u64, cols: u64, p: &[u8]) -> View {
    View {
        format: format as u32,
        layout: Layout::GgufBlocksV1 as u32,
        rows,
        cols,
        planes: [
            Bytes {
                ptr: p.as_ptr(),
                len: p.len(),
            },
            EMPTY,
            EMPTY,
        ],
    }
}

fn st(v: u32) -> Status {
    Status::from_u32(v).expect("a known status")
}

/// 3 rows × 2 Q8_0 blocks, d = 1.0 and codes 0..32 offset by the row.
fn q8_payload() -> Vec<u8> {
    let mut p = Vec::new();
    for r in 0..3u8 {
        for _ in 0..2 {
            p.extend_from_slice(&0x3C00u16.to_le_bytes());
            p.extend((0..32u8).map(|j| j.wrapping_add(r)));
        }
    }
    p
}

#[test]
fn decode_row_statuses() {
    let p = q8_payload();
    let mut out = vec![f32::NAN; 64];
    let v = view(Format::GgufQ8_0, 3, 64, &p);
    unsafe {
        assert_eq!(
            st(ninfer_decode_row(&v, 2, out.as_mut_ptr(), 64)),
            Status::Ok
        );
        assert_eq!(out[0], 2.0);
        assert_eq!(out[63], 33.0);
        let mut fresh = vec![-7.0f32; 64];
        let mut call =
            |v: &View, row: u64, len: usize| st(ninfer_decode_row(v, row, fresh.as_mut_ptr(), len));
        assert_eq!(call(&v, 3, 64), Status::RowOutOfRange);
        assert_eq!(call(&v, 0, 63), Status::BufferTooSmall);
        assert_eq!(
            call(&view(Format::GgufQ8_0, 3, 48, &p), 0, 64),
            Status::BadShape
        );
        assert_eq!(
            call(&view(Format::GgufQ8_0, 3, 64, &p[..p.len() - 1]), 0, 64),
            Status::SizeMismatch
        );
        assert_eq!(
            call(&view(Format::GgufQ8_0, u64::MAX / 4, 64, &p), 0, 64),
            Status::Overflow
        );
        let mut nullplane = v;
        nullplane.planes[0].ptr = std::ptr::null();
        assert_eq!(call(&nullplane, 0, 64), Status::NullPointer);
        assert_eq!(
            call(&View { format: 999, ..v }, 0, 64),
            Status::UnknownFormat
        );
        assert!(fresh.iter().all(|&x| x == -7.0), "nothing written on error");
        assert_eq!(
            st(ninfer_decode_row(&v, 0, std::ptr::null_mut(), 64)),
            Status::NullPointer
        );
        assert_eq!(
            st(ninfer_decode_row(std::ptr::null(), 0, out.as_mut_ptr(), 64)),
            Status::NullPointer
        );
    }
}

#[test]
fn validate_reports_row_and_block() {
    let mut p = q8_payload();
    let (mut r, mut b) = (77u64, 77u64);
    unsafe {
        let v = view(Format::GgufQ8_0, 3, 64, &p);
        assert_eq!(st(ninfer_validate(&v, &mut r, &mut b)), Status::Ok);
        assert_eq!((r, b), (77, 77), "written only on INVALID_ENCODING");
        // Row 2, block 1: d = -Inf.
        let at = 2 * 68 + 34;
        p[at..at + 2].copy_from_slice(&0xFC00u16.to_le_bytes());
        let v = view(Format::GgufQ8_0, 3, 64, &p);
        assert_eq!(
            st(ninfer_validate(&v, &mut r, &mut b)),
            Status::InvalidEncoding
        );
        assert_eq!((r, b), (2, 1));
        // Optional outputs.
        assert_eq!(
            st(ninfer_validate(
                &v,
                std::ptr::null_mut(),
                std::ptr::null_mut()
            )),
            Status::InvalidEncoding
        );
        // Structural errors come first and write nothing.
        let (mut r, mut b) = (5u64, 5u64);
        let bad = view(Format::GgufQ8_0, 3, 64, &p[..10]);
        assert_eq!(
            st(ninfer_validate(&bad, &mut r, &mut b)),
            Status::SizeMismatch
        );
        assert_eq!((r, b), (5, 5));
        assert_eq!(
            st(ninfer_validate(std::ptr::null(), &mut r, &mut b)),
            Status::NullPointer
        );
        // A direct format has nothing to validate.
        let words = [0u8; 16];
        let f32v = View {
            format: Format::Fp32 as u32,
            layout: Layout::ContiguousLeV1 as u32,
            rows: 2,
            cols: 2,
            planes: [
                Bytes {
                    ptr: words.as_ptr(),
                    len: 16,
                },
                EMPTY,
                EMPTY,
            ],
        };
        assert_eq!(st(ninfer_validate(&f32v, &mut r, &mut b)), Status::Ok);
    }
}

#[test]
fn rows_copy_statuses() {
    let p = q8_payload();
    let v = view(Format::GgufQ8_0, 3, 64, &p);
    let mut out = vec![0xAAu8; 3 * 68];
    let mut written = 0usize;
    unsafe {
        let o = out.as_mut_ptr();
        assert_eq!(
            st(ninfer_rows_copy(&v, 1, 2, o, out.len(), &mut written)),
            Status::Ok
        );
        assert_eq!(written, 136);
        assert_eq!(&out[..136], &p[68..]);
        out.fill(0xAA);
        // (status, *out_written) for one call; out_written starts at 9.
        let call = |start: u64, count: u64, ptr: *mut u8, len: usize| -> (Status, usize) {
            let mut w = 9usize;
            (st(ninfer_rows_copy(&v, start, count, ptr, len, &mut w)), w)
        };
        assert_eq!(call(2, 2, o, 204), (Status::RowOutOfRange, 9));
        assert_eq!(call(u64::MAX, 2, o, 204), (Status::Overflow, 9));
        assert_eq!(call(0, 2, o, 135), (Status::BufferTooSmall, 9));
        assert_eq!(
            call(0, 2, std::ptr::null_mut(), 136),
            (Status::NullPointer, 9)
        );
        assert!(out.iter().all(|&x| x == 0xAA));
        // Zero rows: OK, nothing copied, NULL output accepted with length 0.
        assert_eq!(call(3, 0, std::ptr::null_mut(), 0), (Status::Ok, 0));
    }
}

#[test]
fn rows_gather_statuses() {
    let p = q8_payload();
    let v = view(Format::GgufQ8_0, 3, 64, &p);
    let mut out = vec![0xAAu8; 4 * 68];
    let mut written = 0usize;
    let idx = [2u64, 0, 2, 1];
    unsafe {
        let o = out.as_mut_ptr();
        assert_eq!(
            st(ninfer_rows_gather(
                &v,
                idx.as_ptr(),
                4,
                o,
                out.len(),
                &mut written
            )),
            Status::Ok
        );
        assert_eq!(written, 272);
        assert_eq!(&out[..68], &p[136..]);
        assert_eq!(&out[68..136], &p[..68]);
        assert_eq!(&out[204..], &p[68..136]);
        out.fill(0xAA);
        written = 9;
        let bad = [0u64, 3];
        assert_eq!(
            st(ninfer_rows_gather(
                &v,
                bad.as_ptr(),
                2,
                o,
                272,
                &mut written
            )),
            Status::IndexOutOfRange
        );
        assert_eq!(
            st(ninfer_rows_gather(
                &v,
                idx.as_ptr(),
                4,
                o,
                271,
                &mut written
            )),
            Status::BufferTooSmall
        );
        assert_eq!(
            st(ninfer_rows_gather(
                &v,
                std::ptr::null(),
                4,
                o,
                272,
                &mut written
            )),
            Status::NullPointer
        );
        assert_eq!(
            st(ninfer_rows_gather(
                &v,
                idx.as_ptr(),
                4,
                std::ptr::null_mut(),
                272,
                &mut written
            )),
            Status::NullPointer
        );
        // n_indices × 8 bytes overflows: refused before the list is read.
        assert_eq!(
            st(ninfer_rows_gather(
                &v,
                idx.as_ptr(),
                usize::MAX / 4,
                o,
                272,
                &mut written
            )),
            Status::Overflow
        );
        let misaligned = (idx.as_ptr() as *const u8).add(1) as *const u64;
        assert_eq!(
            st(ninfer_rows_gather(&v, misaligned, 1, o, 272, &mut written)),
            Status::Misaligned
        );
        assert_eq!(written, 9);
        assert!(out.iter().all(|&x| x == 0xAA));
    }
}
