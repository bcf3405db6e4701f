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
    #[allow(clippy::too_many_arguments)]
    fn ninfer_linear_forward_rows(
        h: *const Handle,
        x: *const c_void,
        x_bytes: usize,
        x_dtype: u32,
        m: u64,
        k: u64,
        ldx: u64,
        bias: *const f32,
        bias_len: usize,
        n0: u64,
        n1: u64,
        y: *mut c_void,
        y_bytes: usize,
        y_dtype: u32,
        ldy: u64,
    ) -> Status;
    fn ninfer_linear_free(h: *mut Handle);
    fn ninfer_linear_set_activation(h: *mut Handle, activation: u32) -> Status;
    fn ninfer_linear_activation_supported(
        format: u32,
        layout: u32,
        activation: u32,
        device: u32,
    ) -> Status;
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
        // CUDA: supported when compiled in (tests/cuda_c.rs has the table).
        assert_eq!(
            ninfer_linear_supported(q8, gl, 0, 0, 1) == Status::Ok,
            ninfer::cuda::compiled()
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
        // CUDA: no device here, or no CUDA support in this build.
        if ninfer::cuda::device_count().map_or(true, |n| n == 0) {
            assert_eq!(ninfer_linear_prepare(&v, 1, &mut h), Status::NoDevice);
        }
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

/// The activation profile through C: the support query, refusals (unknown number, Exact on
/// GGUF, Q8_1 on bf16, K % 32 ≠ 0, NULL), the setting unchanged on error, and a q8_1
/// product through C equal bit for bit to the Rust API's.
#[test]
fn c_activation_profile() {
    use ninfer::Layout;
    use ninfer::linear::Activation;
    let (q4, rs) = (Format::Q4_G64Fp16 as u32, Layout::RowSplitK128_V1 as u32);
    let (q8, gl) = (
        Format::GgufQ8_0 as u32,
        Format::GgufQ8_0.info().layout as u32,
    );
    let (bf, cl) = (Format::Bf16 as u32, Layout::ContiguousLeV1 as u32);
    unsafe {
        assert_eq!(ninfer_linear_activation_supported(q4, rs, 1, 0), Status::Ok);
        assert_eq!(ninfer_linear_activation_supported(q4, rs, 0, 0), Status::Ok);
        assert_eq!(ninfer_linear_activation_supported(q8, gl, 1, 0), Status::Ok);
        assert_eq!(
            ninfer_linear_activation_supported(q8, gl, 0, 0),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_activation_supported(bf, cl, 1, 0),
            Status::Unsupported
        );
        assert_eq!(
            ninfer_linear_activation_supported(q4, rs, 1, 1) == Status::Ok,
            ninfer::cuda::compiled()
        );
        assert_eq!(
            ninfer_linear_activation_supported(q4, rs, 3, 0),
            Status::InvalidArgument
        );
        assert_eq!(
            ninfer_linear_activation_supported(q4, rs, 1, 9),
            Status::InvalidArgument
        );
        assert_eq!(
            ninfer_linear_activation_supported(999, rs, 1, 0),
            Status::UnknownFormat
        );
        assert_eq!(
            ninfer_linear_activation_supported(q4, cl, 1, 0),
            Status::IncompatibleLayout
        );
    }
    // A q4_g64 weight, K = 96 (32·3) and K = 200 (not a multiple of 32).
    let planes = |n: usize, k: usize| -> Vec<Vec<u8>> {
        let sizes = ninfer::layouts::plane_sizes(Format::Q4_G64Fp16, Layout::RowSplitK128_V1, n, k)
            .unwrap();
        let codes: Vec<i8> = (0..n * k).map(|i| (i * 7 % 15) as i8 - 7).collect();
        let scales: Vec<u16> = (0..n * k.div_ceil(64))
            .map(|i| half::f16::from_f32(0.01 * (i % 5 + 1) as f32).to_bits())
            .collect();
        let mut p: Vec<Vec<u8>> = sizes.iter().map(|&l| vec![0u8; l]).collect();
        let [a, b, c] = &mut p[..] else {
            unreachable!()
        };
        ninfer::layouts::row_split::pack(Format::Q4_G64Fp16, n, k, &codes, &scales, [a, b, c])
            .unwrap();
        p
    };
    let cview = |n: usize, k: usize, p: &[Vec<u8>]| View {
        format: q4,
        layout: rs,
        rows: n as u64,
        cols: k as u64,
        planes: [0, 1, 2].map(|i| Bytes {
            ptr: if p[i].is_empty() {
                std::ptr::null()
            } else {
                p[i].as_ptr()
            },
            len: p[i].len(),
        }),
    };
    let (n, k) = (5usize, 96usize);
    let p = planes(n, k);
    let v = cview(n, k, &p);
    let x: Vec<f32> = (0..2 * k).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut y = vec![0f32; 2 * n];
    unsafe {
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
        assert_eq!(
            ninfer_linear_set_activation(std::ptr::null_mut(), 1),
            Status::NullPointer
        );
        assert_eq!(ninfer_linear_set_activation(h, 3), Status::InvalidArgument);
        assert_eq!(ninfer_linear_set_activation(h, 2), Status::Unsupported);
        assert_eq!(ninfer_linear_set_activation(h, 1), Status::Ok);
        let st = ninfer_linear_forward(
            h,
            x.as_ptr().cast(),
            x.len() * 4,
            0,
            2,
            k as u64,
            std::ptr::null(),
            0,
            y.as_mut_ptr().cast(),
            y.len() * 4,
            0,
        );
        assert_eq!(st, Status::Ok);
        ninfer_linear_free(h);
    }
    let rv = WeightView::new(
        Format::Q4_G64Fp16,
        Layout::RowSplitK128_V1,
        n,
        k,
        [&p[0], &p[1], &p[2]],
    )
    .unwrap();
    let mut w = PreparedWeight::new(rv).unwrap();
    w.set_activation(Activation::Q8_1).unwrap();
    let mut want = vec![0f32; 2 * n];
    w.forward_f32(&x, 2, None, &mut want).unwrap();
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&y), bits(&want));
    // The exact profile gives other bits (x is not quantized).
    w.set_activation(Activation::Exact).unwrap();
    w.forward_f32(&x, 2, None, &mut want).unwrap();
    assert_ne!(bits(&y), bits(&want));

    // K = 200: BAD_SHAPE; GGUF: Exact refused; both leave the handle usable.
    let p = planes(3, 200);
    let v = cview(3, 200, &p);
    let w8: Vec<u8> = (0..3 * 64 / 32 * 34)
        .map(|i| {
            if i % 34 == 1 {
                0x20
            } else {
                (i * 37 % 251) as u8
            }
        })
        .collect();
    let g = view(Format::GgufQ8_0, 3, 64, &w8);
    unsafe {
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
        assert_eq!(ninfer_linear_set_activation(h, 1), Status::BadShape);
        assert_eq!(ninfer_linear_set_activation(h, 0), Status::Ok);
        ninfer_linear_free(h);
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(ninfer_linear_prepare(&g, 0, &mut h), Status::Ok);
        assert_eq!(ninfer_linear_set_activation(h, 0), Status::Unsupported);
        assert_eq!(ninfer_linear_set_activation(h, 1), Status::Ok);
        ninfer_linear_free(h);
    }
}

/// `ninfer_linear_forward` through C on an f32 / bf16 / f16 x buffer (y f32).
fn c_forward(h: *const Handle, x: &[u8], dtype: u32, m: usize, k: usize, n: usize) -> Vec<f32> {
    let mut y = vec![0f32; m * n];
    // SAFETY: a live handle; buffers of the stated lengths.
    let st = unsafe {
        ninfer_linear_forward(
            h,
            x.as_ptr().cast(),
            x.len(),
            dtype,
            m as u64,
            k as u64,
            std::ptr::null(),
            0,
            y.as_mut_ptr().cast(),
            y.len() * 4,
            0,
        )
    };
    assert_eq!(st, Status::Ok);
    y
}

/// nvfp4 through C: `ninfer_linear_set_activation(Q8_1)` with K a multiple of 16 but not
/// of 32 is BAD_SHAPE before and after a forward, twice, and leaves the exact profile in
/// place (the same bits as the Rust API's exact product); with K = 64 it may be set twice
/// after an exact forward and switched back (each forward the Rust API's bits). bf16 and
/// f16 activations holding NaN and ±Inf on nvfp4 and fp8 weights: NaN, +Inf and −Inf
/// exactly where the f64 product of the decoded weights with x has them (the fp8 / nvfp4
/// scaled orders must leave such rows to the plain order), finite values bit for bit those
/// of the f32 x.
#[test]
fn c_nvfp4_activation_setting_and_non_finite_activations() {
    use ninfer::linear::Activation;
    use ninfer::{Layout, decode};
    let n = 5;
    let nv = |k: usize| -> Vec<Vec<u8>> {
        let sizes =
            ninfer::layouts::plane_sizes(Format::Nvfp4, Layout::BlockScaleK16_M128x4_V1, n, k)
                .unwrap();
        let mut p: Vec<Vec<u8>> = sizes
            .iter()
            .map(|&l| (0..l).map(|i| (i * 29 % 251) as u8).collect())
            .collect();
        p[1].iter_mut().for_each(|s| *s %= 0x60); // valid, moderate scales
        p[2] = 1.25f32.to_le_bytes().to_vec();
        p
    };
    let cv = |format: Format, layout: Layout, k: usize, p: &[Vec<u8>]| View {
        format: format as u32,
        layout: layout as u32,
        rows: n as u64,
        cols: k as u64,
        planes: [0, 1, 2].map(|i| Bytes {
            ptr: if p[i].is_empty() {
                std::ptr::null()
            } else {
                p[i].as_ptr()
            },
            len: p[i].len(),
        }),
    };
    let f32_bytes = |x: &[f32]| -> Vec<u8> { x.iter().flat_map(|v| v.to_ne_bytes()).collect() };
    let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
    let lay = Layout::BlockScaleK16_M128x4_V1;
    for k in [48usize, 64] {
        let p = nv(k);
        let v = cv(Format::Nvfp4, lay, k, &p);
        let rv = WeightView::new(Format::Nvfp4, lay, n, k, [&p[0], &p[1], &p[2]]).unwrap();
        let x: Vec<f32> = (0..2 * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let rust = |act: Activation| {
            let mut w = PreparedWeight::new(rv).unwrap();
            w.set_activation(act).unwrap();
            let mut y = vec![0f32; 2 * n];
            w.forward_f32(&x, 2, None, &mut y).unwrap();
            y
        };
        let exact = rust(Activation::Exact);
        let mut h: *mut Handle = std::ptr::null_mut();
        // SAFETY: the view's planes outlive the handle; the handle is freed once.
        unsafe {
            assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
            let want_q8 = if k % 32 == 0 {
                Status::Ok
            } else {
                Status::BadShape
            };
            assert_eq!(ninfer_linear_set_activation(h, 1), want_q8);
            if k % 32 != 0 {
                let y = c_forward(h, &f32_bytes(&x), 0, 2, k, n);
                assert_eq!(bits(&y), bits(&exact), "K={k}: exact profile kept");
                assert_eq!(ninfer_linear_set_activation(h, 1), Status::BadShape);
                assert_eq!(ninfer_linear_set_activation(h, 1), Status::BadShape);
                let y = c_forward(h, &f32_bytes(&x), 0, 2, k, n);
                assert_eq!(bits(&y), bits(&exact), "K={k}: exact profile kept");
            } else {
                let q8 = rust(Activation::Q8_1);
                assert_ne!(bits(&q8), bits(&exact));
                assert_eq!(ninfer_linear_set_activation(h, 0), Status::Ok);
                let y = c_forward(h, &f32_bytes(&x), 0, 2, k, n);
                assert_eq!(bits(&y), bits(&exact), "K={k} exact");
                assert_eq!(ninfer_linear_set_activation(h, 1), Status::Ok);
                assert_eq!(ninfer_linear_set_activation(h, 1), Status::Ok);
                let y = c_forward(h, &f32_bytes(&x), 0, 2, k, n);
                assert_eq!(bits(&y), bits(&q8), "K={k} q8_1 (set twice)");
                assert_eq!(ninfer_linear_set_activation(h, 0), Status::Ok);
                let y = c_forward(h, &f32_bytes(&x), 0, 2, k, n);
                assert_eq!(bits(&y), bits(&exact), "K={k} back to exact");
            }
            ninfer_linear_free(h);
        }
    }

    // Non-finite bf16 / f16 activations on nvfp4 (K = 64) and fp8 (K = 40) weights.
    let k = 64;
    let p = nv(k);
    let fp8_codes: Vec<u8> = (0..n * 40).map(|i| (i * 37 % 251) as u8 & 0xBF).collect();
    let fp8_scales: Vec<u8> = (0..n)
        .flat_map(|r| [0x3F80u16, 0x3C00][r % 2].to_le_bytes())
        .collect();
    let fp8_planes = vec![fp8_codes, fp8_scales, Vec::new()];
    let mut checked = 0;
    for (format, layout, k, planes) in [
        (Format::Nvfp4, lay, k, &p),
        (
            Format::Fp8E4m3fnRowBf16,
            Layout::RowScaleV1,
            40,
            &fp8_planes,
        ),
    ] {
        let v = cv(format, layout, k, planes);
        let rv =
            WeightView::new(format, layout, n, k, [&planes[0], &planes[1], &planes[2]]).unwrap();
        let mut wd = vec![0f32; n * k];
        for r in 0..n {
            decode::decode_row(&rv, r as u64, &mut wd[r * k..(r + 1) * k]).unwrap();
        }
        // Row 0 ordinary, 1 one NaN, 2 one +Inf, 3 +Inf and −Inf, 4 one −Inf (values exact
        // in bf16 and f16).
        let m = 5;
        let mut x: Vec<f32> = (0..m * k)
            .map(|i| ((i * 13 % 64) as f32 - 32.0) / 16.0)
            .collect();
        x[k + 7] = f32::NAN;
        x[2 * k + 3] = f32::INFINITY;
        x[3 * k + 1] = f32::INFINITY;
        x[3 * k + k - 1] = f32::NEG_INFINITY;
        x[4 * k + 9] = f32::NEG_INFINITY;
        let mut w = PreparedWeight::new(rv).unwrap();
        w.set_threads(1).unwrap();
        let mut want = vec![0f32; m * n];
        w.forward_f32(&x, m, None, &mut want).unwrap();
        let mut h: *mut Handle = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe { assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok) };
        for (dtype, code) in [(ninfer::Dtype::Bf16, 1u32), (ninfer::Dtype::F16, 2)] {
            assert_eq!(ninfer::Dtype::from_u32(code).unwrap(), dtype);
            let xb: Vec<u8> = x
                .iter()
                .flat_map(|&v| match dtype {
                    ninfer::Dtype::Bf16 => half::bf16::from_f32(v).to_bits().to_ne_bytes(),
                    _ => half::f16::from_f32(v).to_bits().to_ne_bytes(),
                })
                .collect();
            let y = c_forward(h, &xb, code, m, k, n);
            for i in 0..m {
                for r in 0..n {
                    let yref: f64 = (0..k)
                        .map(|j| wd[r * k + j] as f64 * x[i * k + j] as f64)
                        .sum();
                    let (got, what) = (
                        y[i * n + r],
                        format!("{format} {dtype:?} x row {i} w row {r}"),
                    );
                    if yref.is_nan() {
                        assert!(got.is_nan(), "{what}: {got}, expected NaN");
                    } else if yref.is_infinite() {
                        assert_eq!(got as f64, yref, "{what}");
                    } else {
                        assert_eq!(got.to_bits(), want[i * n + r].to_bits(), "{what}");
                    }
                    checked += 1;
                }
            }
            assert!(y[n..].iter().any(|v| v.is_nan()) && y.iter().any(|v| v.is_infinite()));
        }
        // SAFETY: freed once.
        unsafe { ninfer_linear_free(h) };
    }
    println!("non-finite bf16/f16 activations through C: {checked} outputs");
}

fn last_message() -> String {
    let mut buf = vec![0u8; 1024];
    // SAFETY: buf has 1024 writable bytes.
    let len = unsafe { ninfer_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(len.min(1023));
    String::from_utf8(buf).unwrap()
}

/// `ninfer_linear_forward_rows` through C: statuses and messages for bad ranges, strides,
/// short, NULL and misaligned buffers with y untouched; a handle set to 1 thread shared by
/// four threads that each write a range of one strided y at once gives the whole call's
/// bits and leaves the gaps of y untouched.
#[test]
fn c_forward_rows_errors_and_concurrent_ranges() {
    let (n, k, m) = (13usize, 64usize, 5usize);
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
    let (ldx, ldy) = (k + 4, n + 3);
    let x: Vec<f32> = (0..(m - 1) * ldx + k)
        .map(|i| {
            if i % ldx < k {
                (i as f32 * 0.37).sin()
            } else {
                f32::NAN
            }
        })
        .collect();
    let packed: Vec<f32> = (0..m * k).map(|i| x[i / k * ldx + i % k]).collect();
    let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
    const CANARY: u32 = 0x7FC0_1234;
    let y_len = (m - 1) * ldy + n;
    unsafe {
        let mut h: *mut Handle = std::ptr::null_mut();
        assert_eq!(ninfer_linear_prepare(&v, 0, &mut h), Status::Ok);
        assert_eq!(ninfer_linear_set_threads(h, 1), Status::Ok);
        let mut whole = vec![0f32; m * n];
        assert_eq!(
            ninfer_linear_forward(
                h,
                packed.as_ptr().cast(),
                packed.len() * 4,
                0,
                m as u64,
                k as u64,
                bias.as_ptr(),
                n,
                whole.as_mut_ptr().cast(),
                whole.len() * 4,
                0,
            ),
            Status::Ok
        );
        let mut y = vec![f32::from_bits(CANARY); y_len + 2];
        #[allow(clippy::type_complexity)]
        let call = |x: *const c_void,
                    xb: usize,
                    ldx: usize,
                    b: *const f32,
                    bl: usize,
                    (n0, n1): (u64, u64),
                    y: *mut c_void,
                    yb: usize,
                    yd: u32,
                    ldy: usize| {
            ninfer_linear_forward_rows(
                h, x, xb, 0, m as u64, k as u64, ldx as u64, b, bl, n0, n1, y, yb, yd, ldy as u64,
            )
        };
        let xp = x.as_ptr().cast::<c_void>();
        let xb = x.len() * 4;
        let yp = y.as_mut_ptr().cast::<c_void>();
        let yb = y_len * 4;
        let bp = bias.as_ptr();
        let untouched = |y: &[f32]| y.iter().all(|v| v.to_bits() == CANARY);
        let expect = |st: Status, want: Status, words: &str, y: &[f32]| {
            assert_eq!(st, want, "{words}: {}", last_message());
            assert!(
                last_message().contains(words),
                "{want:?}: message {:?} lacks {words:?}",
                last_message()
            );
            assert!(untouched(y), "{want:?}: y written on error");
        };
        let null = std::ptr::null::<f32>();
        let st = call(xp, xb, ldx, bp, n, (4, 2), yp, yb, 0, ldy);
        expect(st, Status::InvalidArgument, "n0 = 4 > n1 = 2", &y);
        let st = call(xp, xb, ldx, bp, n, (4, 14), yp, yb, 0, 14);
        expect(st, Status::RowOutOfRange, "n1 = 14 is beyond N = 13", &y);
        let st = call(xp, xb, k - 1, bp, n, (0, 4), yp, yb, 0, ldy);
        expect(st, Status::BadShape, "ldx", &y);
        let st = call(xp, xb, ldx, bp, n, (0, 4), yp, yb, 0, 3);
        expect(st, Status::BadShape, "ldy = 3", &y);
        let st = call(xp, xb - 1, ldx, bp, n, (0, 4), yp, yb, 0, ldy);
        expect(st, Status::BufferTooSmall, "x (bytes): buffer holds", &y);
        let st = call(xp, xb, ldx, bp, n, (0, n as u64), yp, yb - 4, 0, ldy);
        expect(st, Status::BufferTooSmall, "y (bytes): buffer holds", &y);
        let st = call(xp, xb, ldx, bp, 3, (0, 4), yp, yb, 0, ldy);
        expect(st, Status::BufferTooSmall, "bias", &y);
        let st = call(
            xp,
            xb,
            ldx,
            bp.cast::<u8>().add(1).cast(),
            4,
            (0, 4),
            yp,
            yb,
            0,
            ldy,
        );
        expect(st, Status::Misaligned, "bias", &y);
        let st = call(std::ptr::null(), xb, ldx, null, 0, (0, 4), yp, yb, 0, ldy);
        expect(st, Status::NullPointer, "x", &y);
        let st = call(
            xp,
            xb,
            ldx,
            null,
            0,
            (0, 4),
            std::ptr::null_mut(),
            yb,
            0,
            ldy,
        );
        expect(st, Status::NullPointer, "y", &y);
        // A NULL handle is just that: no length is involved.
        let st = ninfer_linear_forward_rows(
            std::ptr::null(),
            xp,
            xb,
            0,
            m as u64,
            k as u64,
            ldx as u64,
            bp,
            n,
            0,
            4,
            yp,
            yb,
            0,
            ldy as u64,
        );
        expect(st, Status::NullPointer, "handle is NULL", &y);
        assert!(!last_message().contains("length"), "{}", last_message());
        let st = call(xp, xb, ldx, null, 0, (0, 4), yp, yb, 2, ldy);
        expect(st, Status::Unsupported, "f16", &y);
        let st = call(xp, xb, ldx, null, 0, (0, 4), yp, yb, 9, ldy);
        expect(st, Status::UnknownDtype, "9", &y);
        // One row: its strides are never used, whatever their value.
        let mut one = vec![0f32; n];
        let st = ninfer_linear_forward_rows(
            h,
            packed.as_ptr().cast(),
            k * 4,
            0,
            1,
            k as u64,
            u64::MAX,
            bp,
            n,
            0,
            n as u64,
            one.as_mut_ptr().cast(),
            n * 4,
            0,
            u64::MAX,
        );
        assert_eq!(st, Status::Ok, "{}", last_message());
        assert!(
            one.iter()
                .zip(&whole[..n])
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        let st = ninfer_linear_forward_rows(
            std::ptr::null(),
            xp,
            xb,
            0,
            m as u64,
            k as u64,
            ldx as u64,
            null,
            0,
            0,
            4,
            yp,
            yb,
            0,
            ldy as u64,
        );
        expect(st, Status::NullPointer, "handle", &y);
        // m = 0 and empty ranges: OK, nothing written, NULL buffers allowed with m = 0.
        assert_eq!(
            ninfer_linear_forward_rows(
                h,
                std::ptr::null(),
                0,
                0,
                0,
                k as u64,
                ldx as u64,
                null,
                0,
                0,
                4,
                std::ptr::null_mut(),
                0,
                0,
                ldy as u64,
            ),
            Status::Ok
        );
        assert_eq!(call(xp, xb, ldx, bp, n, (7, 7), yp, yb, 0, ldy), Status::Ok);
        assert!(untouched(&y));

        // Four threads, one range each, into one strided y at once.
        let (hp, ypa, bpa, xpa) = (h as usize, yp as usize, bp as usize, xp as usize);
        std::thread::scope(|s| {
            for (n0, n1) in [(0u64, 1u64), (1, 6), (6, 6), (6, 13)] {
                s.spawn(move || {
                    let st = ninfer_linear_forward_rows(
                        hp as *const Handle,
                        xpa as *const c_void,
                        xb,
                        0,
                        m as u64,
                        k as u64,
                        ldx as u64,
                        bpa as *const f32,
                        n,
                        n0,
                        n1,
                        ypa as *mut c_void,
                        yb,
                        0,
                        ldy as u64,
                    );
                    assert_eq!(st, Status::Ok);
                });
            }
        });
        for (i, v) in y.iter().enumerate() {
            let (r, c) = (i / ldy, i % ldy);
            if r < m && c < n {
                assert_eq!(v.to_bits(), whole[r * n + c].to_bits(), "y[{r}, {c}]");
            } else {
                assert_eq!(v.to_bits(), CANARY, "gap element {i} written");
            }
        }
        ninfer_linear_free(h);
    }
}
