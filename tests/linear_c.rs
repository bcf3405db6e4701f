//! The C exports of `linear`: statuses for bad input (NULL pointers, unknown codes, short
//! buffers, mismatched K), nothing written on error, free(NULL), and a product through the
//! C path equal bit for bit to the Rust API's.

mod common;
use common::*;

use ninfer::linear::PreparedWeight;
use ninfer::{Format, Status, WeightView};
use std::ffi::c_void;

#[repr(C)]
struct Handle {
    _private: [u8; 0],
}

unsafe extern "C" {
    fn ninfer_linear_supported(format: u32, layout: u32, x: u32, y: u32, device: u32) -> Status;
    fn ninfer_linear_prepare(view: *const View, device: u32, out: *mut *mut Handle) -> Status;
    fn ninfer_linear_set_threads(h: *mut Handle, threads: u32) -> Status;
    fn ninfer_linear_shape(h: *const Handle, rows: *mut u64, cols: *mut u64) -> Status;
    #[allow(clippy::too_many_arguments)]
    fn ninfer_linear_forward(
        h: *const Handle,
        x: *const c_void,
        x_bytes: usize,
        x_dtype: u32,
        m: u64,
        k: u64,
        bias: *const f32,
        bias_len: usize,
        y: *mut c_void,
        y_bytes: usize,
        y_dtype: u32,
    ) -> Status;
    fn ninfer_linear_free(h: *mut Handle);
}

const EMPTY: Bytes = Bytes {
    ptr: std::ptr::null(),
    len: 0,
};

fn view(format: Format, rows: u64, cols: u64, w: &[u8]) -> View {
    View {
        format: format as u32,
        layout: format.info().layout as u32,
        rows,
        cols,
        planes: [
            Bytes {
                ptr: w.as_ptr(),
                len: w.len(),
            },
            EMPTY,
            EMPTY,
        ],
    }
}

#[test]
fn c_exports_refuse_bad_input_and_match_the_rust_api() {
    let _ = ninfer::VERSION; // links the library
    let (n, k) = (5usize, 64usize);
    let w: Vec<u8> = (0..n * k / 32 * 34)
        .map(|i| {
            if i % 34 == 1 {
                0x20
            } else {
                (i * 37 % 251) as u8
            }
        })
        .collect();
    let v = view(Format::GgufQ8_0, n as u64, k as u64, &w);
    let x: Vec<f32> = (0..2 * k).map(|i| (i as f32 * 0.37).sin()).collect();
    let xp = x.as_ptr().cast::<c_void>();
    let xb = x.len() * 4;
    unsafe {
        // support query
        let q8 = Format::GgufQ8_0 as u32;
        let gl = Format::GgufQ8_0.info().layout as u32;
        assert_eq!(ninfer_linear_supported(q8, gl, 0, 0, 0), Status::Ok);
        assert_eq!(ninfer_linear_supported(q8, gl, 2, 1, 0), Status::Ok);
        assert_eq!(
            ninfer_linear_supported(q8, gl, 0, 2, 0),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_supported(q8, gl, 0, 0, 1),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_supported(q8, gl, 9, 0, 0),
            Status::UnknownDtype
        );
        assert_eq!(
            ninfer_linear_supported(q8, gl, 0, 9, 0),
            Status::UnknownDtype
        );
        assert_eq!(
            ninfer_linear_supported(q8, gl, 0, 0, 7),
            Status::InvalidArgument
        );
        assert_eq!(
            ninfer_linear_supported(999, gl, 0, 0, 0),
            Status::UnknownFormat
        );
        assert_eq!(
            ninfer_linear_supported(q8, 999, 0, 0, 0),
            Status::UnknownLayout
        );
        let i32f = Format::Int32 as u32;
        let cl = Format::Int32.info().layout as u32;
        assert_eq!(
            ninfer_linear_supported(i32f, cl, 0, 0, 0),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_supported(q8, cl, 0, 0, 0),
            Status::IncompatibleLayout
        );

        // prepare
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(
            ninfer_linear_prepare(std::ptr::null(), 0, &mut h),
            Status::NullPointer
        );
        assert_eq!(
            ninfer_linear_prepare(&v, 0, std::ptr::null_mut()),
            Status::NullPointer
        );
        assert_eq!(
            ninfer_linear_prepare(&v, 5, &mut h),
            Status::InvalidArgument
        );
        assert_eq!(ninfer_linear_prepare(&v, 1, &mut h), Status::Unsupported);
        let short = view(Format::GgufQ8_0, n as u64, k as u64, &w[..w.len() - 1]);
        assert_eq!(
            ninfer_linear_prepare(&short, 0, &mut h),
            Status::SizeMismatch
        );
        let iw = [0u8; 16];
        let iv = view(Format::Int32, 2, 2, &iw);
        assert_eq!(ninfer_linear_prepare(&iv, 0, &mut h), Status::Unsupported);
        assert!(h.is_null(), "handle written on error");
        assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
        assert!(!h.is_null());
        let (mut r, mut c) = (0u64, 0u64);
        assert_eq!(ninfer_linear_shape(h, &mut r, &mut c), Status::Ok);
        assert_eq!((r, c), (n as u64, k as u64));
        assert_eq!(ninfer_linear_set_threads(h, 2), Status::Ok);
        assert_eq!(
            ninfer_linear_set_threads(std::ptr::null_mut(), 2),
            Status::NullPointer
        );
        assert_eq!(ninfer_linear_set_threads(h, 5000), Status::InvalidArgument);

        // forward: bad input
        let mut y = vec![f32::from_bits(0x7FC0_1234); 2 * n];
        let yp = y.as_mut_ptr().cast::<c_void>();
        let yb = y.len() * 4;
        let k64 = k as u64;
        let null = std::ptr::null::<f32>();
        let f =
            |h: *const Handle,
             x: *const c_void,
             xb,
             xd,
             m,
             kk,
             b: *const f32,
             bl,
             y: *mut c_void,
             yb,
             yd| { ninfer_linear_forward(h, x, xb, xd, m, kk, b, bl, y, yb, yd) };
        assert_eq!(
            f(std::ptr::null(), xp, xb, 0, 2, k64, null, 0, yp, yb, 0),
            Status::NullPointer
        );
        assert_eq!(
            f(h, std::ptr::null(), xb, 0, 2, k64, null, 0, yp, yb, 0),
            Status::NullPointer
        );
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, null, 0, std::ptr::null_mut(), yb, 0),
            Status::NullPointer
        );
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, null, 3, yp, yb, 0),
            Status::NullPointer
        );
        assert_eq!(
            f(h, xp, xb, 0, 2, k64 + 32, null, 0, yp, yb, 0),
            Status::BadShape
        );
        assert_eq!(
            f(h, xp, xb - 4, 0, 2, k64, null, 0, yp, yb, 0),
            Status::BufferTooSmall
        );
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, null, 0, yp, yb - 1, 0),
            Status::BufferTooSmall
        );
        let bias = [0.5f32; 5];
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, bias.as_ptr(), 4, yp, yb, 0),
            Status::BufferTooSmall
        );
        assert_eq!(
            f(h, xp, xb, 7, 2, k64, null, 0, yp, yb, 0),
            Status::UnknownDtype
        );
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, null, 0, yp, yb, 7),
            Status::UnknownDtype
        );
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, null, 0, yp, yb, 2),
            Status::Unsupported
        );
        let mis = (bias.as_ptr() as *const u8).add(1).cast::<f32>();
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, mis, 4, yp, yb, 0),
            Status::Misaligned
        );
        assert!(
            y.iter().all(|v| v.to_bits() == 0x7FC0_1234),
            "y written on error"
        );
        // m = 0 with NULL buffers is a no-op
        assert_eq!(
            f(
                h,
                std::ptr::null(),
                0,
                0,
                0,
                k64,
                null,
                0,
                std::ptr::null_mut(),
                0,
                0
            ),
            Status::Ok
        );

        // forward: the C path gives the Rust API's bits
        assert_eq!(
            f(h, xp, xb, 0, 2, k64, bias.as_ptr(), 5, yp, yb, 0),
            Status::Ok
        );
        let rv = WeightView::single(Format::GgufQ8_0, n, k, &w).unwrap();
        let mut want = vec![0f32; 2 * n];
        PreparedWeight::new(rv)
            .unwrap()
            .forward_f32(&x, 2, Some(&bias), &mut want)
            .unwrap();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&y), bits(&want));

        ninfer_linear_free(h);
        ninfer_linear_free(std::ptr::null_mut());
    }
}
