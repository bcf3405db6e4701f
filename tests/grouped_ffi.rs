//! `ninfer_quantize_grouped` through its C signature: outputs, provenance, refusals, and
//! "nothing written on error".

mod common;
use common::*;

use std::ffi::c_void;

#[repr(C)]
struct Opts {
    method: u32,
    negative_scales: u32,
    importance: *const f32,
    importance_len: usize,
}

#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct Prov {
    method: u32,
    negative_scales: u32,
    importance: u32,
    parameters_version: u32,
    groups: u64,
    zero_groups: u64,
    rescued_groups: u64,
    improved_groups: u64,
    absmax_error: f64,
    error: f64,
}

unsafe extern "C" {

    fn ninfer_quantize_grouped(
        format: u32,
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        options: *const Opts,
        planes: *const MutBytes,
        provenance: *mut Prov,
    ) -> u32;
}

const Q4: u32 = 4;
const Q6: u32 = 6;
const T2: u32 = 8;
const Q2: u32 = 3;
const F32: u32 = 0;
const F16: u32 = 2;

struct Out {
    bufs: [Vec<u8>; 3],
}

impl Out {
    fn new(format: ninfer::Format, rows: usize, cols: usize) -> Out {
        let sz = ninfer::layouts::plane_sizes(format, ninfer::Layout::RowSplitK128_V1, rows, cols)
            .unwrap();
        Out {
            bufs: sz.map(|n| vec![0xcdu8; n]),
        }
    }
    fn c(&mut self) -> [MutBytes; 3] {
        let b = &mut self.bufs;
        [0, 1, 2].map(|i| MutBytes {
            ptr: if b[i].is_empty() {
                std::ptr::null_mut()
            } else {
                b[i].as_mut_ptr()
            },
            len: b[i].len(),
        })
    }
    fn untouched(&self) -> bool {
        self.bufs.iter().flatten().all(|&b| b == 0xcd)
    }
}

fn call(
    format: u32,
    src: &[f32],
    rows: u64,
    cols: u64,
    opts: Option<&Opts>,
    out: &mut Out,
    prov: &mut Prov,
) -> u32 {
    let planes = out.c();
    unsafe {
        ninfer_quantize_grouped(
            format,
            src.as_ptr().cast(),
            std::mem::size_of_val(src),
            F32,
            rows,
            cols,
            opts.map_or(std::ptr::null(), |o| o as *const Opts),
            planes.as_ptr(),
            prov,
        )
    }
}

#[test]
fn absmax_through_c_matches_the_rust_api() {
    let (rows, cols) = (3usize, 150usize);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| (i as f32 * 0.37).sin() * 3.0)
        .collect();
    let mut out = Out::new(ninfer::Format::Q6_G64Fp16, rows, cols);
    let mut prov = Prov::default();
    assert_eq!(call(Q6, &x, 3, 150, None, &mut out, &mut prov), 0);
    let mut want = Out::new(ninfer::Format::Q6_G64Fp16, rows, cols);
    let [a, b, c] = &mut want.bufs;
    ninfer::formats::grouped::quantize(
        ninfer::Format::Q6_G64Fp16,
        ninfer::formats::float_source::FloatSource::F32(&x),
        rows,
        cols,
        &ninfer::formats::grouped::Options::ABSMAX,
        [a, b, c],
    )
    .unwrap();
    assert_eq!(out.bufs, want.bufs);
    assert_eq!(
        (prov.method, prov.groups, prov.parameters_version),
        (0, 9, 0)
    );
}

#[test]
fn search_with_importance_and_provenance() {
    let (rows, cols) = (4usize, 128usize);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 113) as f32 - 50.0)
        .collect();
    let imp: Vec<f32> = (0..cols).map(|k| 1.0 + (k % 3) as f32).collect();
    let o = Opts {
        method: 1,
        negative_scales: 1,
        importance: imp.as_ptr(),
        importance_len: imp.len(),
    };
    let mut out = Out::new(ninfer::Format::Q4_G64Fp16, rows, cols);
    let mut prov = Prov::default();
    assert_eq!(call(Q4, &x, 4, 128, Some(&o), &mut out, &mut prov), 0);
    assert_eq!(
        (
            prov.method,
            prov.negative_scales,
            prov.importance,
            prov.parameters_version
        ),
        (1, 1, 1, 1)
    );
    assert_eq!(prov.groups, 8);
    assert!(
        prov.error <= prov.absmax_error && prov.improved_groups > 0,
        "{prov:?}"
    );
    let v = ninfer::WeightView::new(
        ninfer::Format::Q4_G64Fp16,
        ninfer::Layout::RowSplitK128_V1,
        rows,
        cols,
        [&out.bufs[0], &out.bufs[1], &out.bufs[2]],
    )
    .unwrap();
    ninfer::layouts::row_split::validate(&v).unwrap();
}

#[test]
fn refusals_write_nothing() {
    let x = vec![1f32; 256];
    let mut prov = Prov {
        groups: 777,
        ..Default::default()
    };
    let mut out = Out::new(ninfer::Format::Q4_G64Fp16, 2, 128);
    // Status numbers: 14 UNSUPPORTED, 16 NON_FINITE_SOURCE, 17 SCALE_OVERFLOW, 9 SIZE_MISMATCH,
    // 3 INVALID_ARGUMENT, 8 BAD_SHAPE, 4 UNKNOWN_FORMAT, 1 NULL_POINTER.
    for f in [Q2, T2] {
        let mut o = Out::new(ninfer::Format::from_u32(f).unwrap(), 2, 128);
        assert_eq!(call(f, &x, 2, 128, None, &mut o, &mut prov), 14);
        assert!(o.untouched());
    }
    let mut nan = x.clone();
    nan[200] = f32::NAN;
    assert_eq!(call(Q4, &nan, 2, 128, None, &mut out, &mut prov), 16);
    let mut big = x.clone();
    big[5] = 1e9;
    assert_eq!(call(Q4, &big, 2, 128, None, &mut out, &mut prov), 17);
    assert_eq!(call(Q4, &x[..200], 2, 128, None, &mut out, &mut prov), 9);
    assert_eq!(call(Q4, &x, 0, 128, None, &mut out, &mut prov), 8);
    assert_eq!(call(99, &x, 2, 128, None, &mut out, &mut prov), 4);
    let bad_method = Opts {
        method: 7,
        negative_scales: 0,
        importance: std::ptr::null(),
        importance_len: 0,
    };
    assert_eq!(
        call(Q4, &x, 2, 128, Some(&bad_method), &mut out, &mut prov),
        3
    );
    let bad_flag = Opts {
        method: 1,
        negative_scales: 2,
        importance: std::ptr::null(),
        importance_len: 0,
    };
    assert_eq!(
        call(Q4, &x, 2, 128, Some(&bad_flag), &mut out, &mut prov),
        3
    );
    let null_imp = Opts {
        method: 1,
        negative_scales: 0,
        importance: std::ptr::null(),
        importance_len: 128,
    };
    assert_eq!(
        call(Q4, &x, 2, 128, Some(&null_imp), &mut out, &mut prov),
        1
    );
    // A wrong plane length.
    let mut short = Out::new(ninfer::Format::Q4_G64Fp16, 1, 128);
    assert_eq!(call(Q4, &x, 2, 128, None, &mut short, &mut prov), 9);
    assert!(short.untouched());
    // NULL planes array.
    let st = unsafe {
        ninfer_quantize_grouped(
            Q4,
            x.as_ptr().cast(),
            1024,
            F32,
            2,
            128,
            std::ptr::null(),
            std::ptr::null(),
            &mut prov,
        )
    };
    assert_eq!(st, 1);
    // Misaligned f32 source.
    let bytes = vec![0u8; 1025];
    let planes = out.c();
    let st = unsafe {
        ninfer_quantize_grouped(
            Q4,
            bytes.as_ptr().add(1).cast(),
            1024,
            F32,
            2,
            128,
            std::ptr::null(),
            planes.as_ptr(),
            &mut prov,
        )
    };
    assert_eq!(st, 2);
    assert!(out.untouched());
    assert_eq!(prov.groups, 777, "provenance written on error");
}

#[test]
fn f16_source_widens_exactly() {
    // binary16 words 1.0, -2.5, 0x0001 (min subnormal) ...: same planes as their f32 values.
    let words: Vec<u16> = (0..64)
        .map(|i| [0x3c00u16, 0xc100, 0x0001, 0x7bff][i % 4])
        .collect();
    let vals: Vec<f32> = words
        .iter()
        .map(|&w| half::f16::from_bits(w).to_f32())
        .collect();
    let mut a = Out::new(ninfer::Format::Q4_G64Fp16, 1, 64);
    let mut b = Out::new(ninfer::Format::Q4_G64Fp16, 1, 64);
    let mut prov = Prov::default();
    let planes = a.c();
    let st = unsafe {
        ninfer_quantize_grouped(
            Q4,
            words.as_ptr().cast(),
            128,
            F16,
            1,
            64,
            std::ptr::null(),
            planes.as_ptr(),
            &mut prov,
        )
    };
    assert_eq!(st, 0);
    assert_eq!(call(Q4, &vals, 1, 64, None, &mut b, &mut prov), 0);
    assert_eq!(a.bufs, b.bufs);
}

#[test]
fn quantize_then_decode_through_c() {
    // Every group (the partial one too) has amax 3.5 = 7 · 0.5 and multiples of 0.5: exact.
    let (rows, cols) = (2usize, 70usize);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i % cols % 8) as f32 - 7.0) * 0.5)
        .collect();
    let mut out = Out::new(ninfer::Format::Q4_G64Fp16, rows, cols);
    let mut prov = Prov::default();
    assert_eq!(call(Q4, &x, 2, 70, None, &mut out, &mut prov), 0);
    let b = &out.bufs;
    let view = View {
        format: Q4,
        layout: 1,
        rows: 2,
        cols: 70,
        planes: [0, 1, 2].map(|i| Bytes {
            ptr: if b[i].is_empty() {
                std::ptr::null()
            } else {
                b[i].as_ptr()
            },
            len: b[i].len(),
        }),
    };
    let mut row = vec![0f32; cols];
    for r in 0..2 {
        assert_eq!(
            unsafe { ninfer_decode_row(&view, r, row.as_mut_ptr(), cols) },
            0
        );
        assert_eq!(&row[..], &x[r as usize * cols..(r as usize + 1) * cols]);
    }
    // A corrupted padding nibble is refused (INVALID_ENCODING = 15), nothing written.
    let mut bad = out.bufs[0].clone();
    bad[40] = 0x10;
    let mut v2 = view;
    v2.planes[0].ptr = bad.as_ptr();
    row.fill(9.0);
    assert_eq!(
        unsafe { ninfer_decode_row(&v2, 0, row.as_mut_ptr(), cols) },
        15
    );
    assert!(row.iter().all(|&v| v == 9.0));
}
