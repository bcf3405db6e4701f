//! The bad-input catalogue: one case per refusal class of the C ABI and per validity rule of
//! the spec (docs/layouts.md for the layout rules), each called through the C symbols and
//! checking three things: the status, the message (what it names), and an output canary
//! that must come back untouched (nothing is written unless the status is OK).
//!
//! The hostile-file cases of the CLI's GGUF and safetensors readers live with the CLI,
//! since its readers are not part of the library: the unit tests of `cli/src/gguf.rs`,
//! `cli/src/tensor.rs` and `cli/src/st.rs`, and `cli/tests/cli.rs` and
//! `cli/tests/safetensors.rs` end to end (docs/gguf.md lists what they refuse).

mod common;
use common::*;

use ninfer::{Format, Layout, Status};
use std::ffi::{c_char, c_void};

unsafe extern "C" {
    fn ninfer_weight_view_check(view: *const View) -> u32;
    fn ninfer_decode_row_as(view: *const View, row: u64, dtype: u32, out: *mut u8, n: usize)
    -> u32;
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
    fn ninfer_layout_plane_sizes(
        format: u32,
        layout: u32,
        rows: u64,
        cols: u64,
        out_sizes: *mut usize,
        out_len: usize,
    ) -> u32;
    fn ninfer_format_from_ggml_type(ggml_type: u32, out_format: *mut u32) -> u32;
    fn ninfer_format_lookup(name: *const c_char, out_format: *mut u32) -> u32;
    fn ninfer_quantize_grouped(
        format: u32,
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        options: *const QuantizeOptions,
        planes: *const MutBytes,
        provenance: *mut u8,
    ) -> u32;
    fn ninfer_fp8_row_maxabs(
        format: u32,
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        planes: *const MutBytes,
    ) -> u32;
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
    fn ninfer_import_gguf(view: *const View, target_format: u32, planes: *const MutBytes) -> u32;
    fn ninfer_linear_prepare(view: *const View, device: u32, out: *mut *mut c_void) -> u32;
    fn ninfer_linear_shape(h: *const c_void, rows: *mut u64, cols: *mut u64) -> u32;
    fn ninfer_linear_free(h: *mut c_void);
}

/// `ninfer_quantize_options`.
#[repr(C)]
struct QuantizeOptions {
    method: u32,
    negative_scales: u32,
    importance: *const f32,
    importance_len: usize,
}

/// The byte every output buffer starts with; a refused call must leave it everywhere.
const CANARY: u8 = 0xA5;
/// The f32 canary word (0xA5A5A5A5, a finite negative number no decoder produces here).
const CANARY_F32: u32 = 0xA5A5_A5A5;

fn last_error() -> String {
    let mut buf = vec![0u8; 1024];
    let n = unsafe { ninfer_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(1023));
    String::from_utf8(buf).unwrap()
}

/// Asserts the status of a call and that its message names every word of `names`.
#[track_caller]
fn refused(st: u32, want: Status, names: &[&str]) {
    let msg = last_error();
    let got = Status::from_u32(st).unwrap_or_else(|| panic!("unknown status {st}: {msg}"));
    assert_eq!(got, want, "message: {msg}");
    for n in names {
        assert!(msg.contains(n), "message {msg:?} does not name {n:?}");
    }
}

#[track_caller]
fn untouched(buf: &[u8]) {
    assert!(
        buf.iter().all(|&b| b == CANARY),
        "a refused call wrote its output"
    );
}

#[track_caller]
fn untouched_f32(buf: &[f32]) {
    assert!(
        buf.iter().all(|v| v.to_bits() == CANARY_F32),
        "a refused call wrote its output"
    );
}

fn canary_f32(n: usize) -> Vec<f32> {
    vec![f32::from_bits(CANARY_F32); n]
}

/// A view of `format` in its registered layout over `planes`.
fn view(format: Format, rows: u64, cols: u64, planes: &[Vec<u8>]) -> View {
    let mut v = View {
        format: format as u32,
        layout: format.info().layout as u32,
        rows,
        cols,
        planes: [Bytes::NONE; 3],
    };
    for (i, p) in planes.iter().enumerate() {
        if !p.is_empty() {
            v.planes[i] = Bytes::of(p);
        }
    }
    v
}

/// 2 rows × 64 values of gguf_q8_0, d = 1.0, codes 1.
fn q8_0() -> Vec<Vec<u8>> {
    let mut p = Vec::new();
    for _ in 0..4 {
        p.extend_from_slice(&0x3C00u16.to_le_bytes());
        p.extend_from_slice(&[1u8; 32]);
    }
    vec![p]
}

// ---------------------------------------------------------------------------------------
// Refusal classes of the C boundary.

#[test]
fn null_pointers() {
    let mut out = canary_f32(64);
    let st = unsafe { ninfer_decode_row(std::ptr::null(), 0, out.as_mut_ptr(), 64) };
    refused(st, Status::NullPointer, &["view"]);
    // A plane pointer that is NULL with a non-zero length.
    let p = q8_0();
    let mut v = view(Format::GgufQ8_0, 2, 64, &p);
    v.planes[0].ptr = std::ptr::null();
    let st = unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) };
    refused(st, Status::NullPointer, &[]);
    // NULL out with a non-zero length.
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let st = unsafe { ninfer_decode_row(&v, 0, std::ptr::null_mut(), 64) };
    refused(st, Status::NullPointer, &["out"]);
    untouched_f32(&out);
}

#[test]
fn misaligned_pointers() {
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut bytes = vec![CANARY; 4 * 64 + 4];
    let at = bytes.as_mut_ptr().align_offset(4) + 1; // 4-byte aligned + 1
    let st = unsafe { ninfer_decode_row_as(&v, 0, 0, bytes.as_mut_ptr().add(at), 256) };
    refused(st, Status::Misaligned, &["out"]);
    untouched(&bytes);
}

#[test]
fn invalid_arguments() {
    // grouped_absmax takes no negative_scales flag, and 2 is no flag at all.
    let src = vec![1.0f32; 128];
    let (mut codes, mut scales) = (vec![CANARY; 64], vec![CANARY; 4]);
    let planes = [
        MutBytes::of(&mut codes),
        MutBytes::NONE,
        MutBytes::of(&mut scales),
    ];
    let opts = QuantizeOptions {
        method: 0,
        negative_scales: 2,
        importance: std::ptr::null(),
        importance_len: 0,
    };
    let mut prov = vec![CANARY; 128];
    let st = unsafe {
        ninfer_quantize_grouped(
            Format::Q4_G64Fp16 as u32,
            src.as_ptr().cast(),
            512,
            0,
            1,
            128,
            &opts,
            planes.as_ptr(),
            prov.as_mut_ptr().add(prov.as_ptr().align_offset(8)),
        )
    };
    refused(st, Status::InvalidArgument, &["negative_scales"]);
    untouched(&codes);
    untouched(&scales);
    untouched(&prov);
}

#[test]
fn unknown_format_layout_and_incompatible_pairs() {
    let p = q8_0();
    let mut out = canary_f32(64);
    let mut v = view(Format::GgufQ8_0, 2, 64, &p);
    v.format = 999;
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) },
        Status::UnknownFormat,
        &["999"],
    );
    let mut v = view(Format::GgufQ8_0, 2, 64, &p);
    v.layout = 77;
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) },
        Status::UnknownLayout,
        &["77"],
    );
    let mut v = view(Format::GgufQ8_0, 2, 64, &p);
    v.layout = Layout::ContiguousLeV1 as u32;
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) },
        Status::IncompatibleLayout,
        &["gguf_q8_0", "contiguous_le_v1"],
    );
    untouched_f32(&out);
    let mut f = CANARY as u32;
    refused(
        unsafe { ninfer_format_lookup(c"q4_g64".as_ptr(), &mut f) },
        Status::UnknownFormat,
        &["q4_g64"],
    );
    assert_eq!(f, CANARY as u32);
}

#[test]
fn unregistered_ggml_types() {
    let mut f = CANARY as u32;
    refused(
        unsafe { ninfer_format_from_ggml_type(3, &mut f) },
        Status::UnregisteredType,
        &["Q4_1"],
    );
    assert_eq!(f, CANARY as u32);
}

#[test]
fn bad_shapes() {
    let mut sizes = [usize::from_ne_bytes([CANARY; 8]); 3];
    for (rows, cols) in [(0, 64), (2, 0)] {
        let st = unsafe {
            ninfer_layout_plane_sizes(
                Format::GgufQ8_0 as u32,
                Layout::GgufBlocksV1 as u32,
                rows,
                cols,
                sizes.as_mut_ptr(),
                3,
            )
        };
        refused(st, Status::BadShape, &["positive"]);
    }
    // K not a multiple of the block.
    let st = unsafe {
        ninfer_layout_plane_sizes(
            Format::GgufQ8_0 as u32,
            Layout::GgufBlocksV1 as u32,
            2,
            48,
            sizes.as_mut_ptr(),
            3,
        )
    };
    refused(st, Status::BadShape, &["48"]);
    assert!(
        sizes
            .iter()
            .all(|&s| s == usize::from_ne_bytes([CANARY; 8]))
    );
    // A view with a zero dimension.
    let p = q8_0();
    let mut out = canary_f32(64);
    let v = view(Format::GgufQ8_0, 0, 64, &p);
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) },
        Status::BadShape,
        &["positive"],
    );
    untouched_f32(&out);
}

#[test]
fn size_mismatches() {
    let mut p = q8_0();
    p[0].pop();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut out = canary_f32(64);
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) },
        Status::SizeMismatch,
        &["135"],
    );
    refused(
        unsafe { ninfer_weight_view_check(&v) },
        Status::SizeMismatch,
        &["135"],
    );
    // A used slot past the layout's planes.
    let p = q8_0();
    let extra = vec![0u8; 4];
    let mut v = view(Format::GgufQ8_0, 2, 64, &p);
    v.planes[2] = Bytes::of(&extra);
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 64) },
        Status::SizeMismatch,
        &[],
    );
    untouched_f32(&out);
}

#[test]
fn overflows() {
    let mut sizes = [usize::from_ne_bytes([CANARY; 8]); 3];
    let st = unsafe {
        ninfer_layout_plane_sizes(
            Format::Fp32 as u32,
            Layout::ContiguousLeV1 as u32,
            1 << 62,
            1 << 62,
            sizes.as_mut_ptr(),
            3,
        )
    };
    refused(st, Status::Overflow, &[]);
    assert!(
        sizes
            .iter()
            .all(|&s| s == usize::from_ne_bytes([CANARY; 8]))
    );
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut out = vec![CANARY; 136];
    let mut w = usize::from_ne_bytes([CANARY; 8]);
    let st = unsafe { ninfer_rows_copy(&v, u64::MAX, 2, out.as_mut_ptr(), 136, &mut w) };
    refused(st, Status::Overflow, &["row range"]);
    untouched(&out);
    assert_eq!(w, usize::from_ne_bytes([CANARY; 8]));
}

#[test]
fn rows_and_indices_out_of_range() {
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut out = canary_f32(64);
    refused(
        unsafe { ninfer_decode_row(&v, 2, out.as_mut_ptr(), 64) },
        Status::RowOutOfRange,
        &["2"],
    );
    untouched_f32(&out);
    let mut bytes = vec![CANARY; 136];
    let mut w = usize::from_ne_bytes([CANARY; 8]);
    let st =
        unsafe { ninfer_rows_gather(&v, [0u64, 9].as_ptr(), 2, bytes.as_mut_ptr(), 136, &mut w) };
    refused(st, Status::IndexOutOfRange, &["9"]);
    untouched(&bytes);
    assert_eq!(w, usize::from_ne_bytes([CANARY; 8]));
}

#[test]
fn buffers_too_small() {
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut out = canary_f32(64);
    refused(
        unsafe { ninfer_decode_row(&v, 0, out.as_mut_ptr(), 63) },
        Status::BufferTooSmall,
        &["64", "63"],
    );
    untouched_f32(&out);
}

#[test]
fn unsupported_operations() {
    // Row copies of the swizzled nvfp4 layout (a row subset is not a byte subset).
    let planes = vec![vec![0u8; 16], vec![0u8; 512], 1.0f32.to_le_bytes().to_vec()];
    let v = view(Format::Nvfp4, 2, 16, &planes);
    let mut out = vec![CANARY; 1024];
    let mut w = usize::from_ne_bytes([CANARY; 8]);
    let st = unsafe { ninfer_rows_copy(&v, 0, 1, out.as_mut_ptr(), 1024, &mut w) };
    refused(st, Status::Unsupported, &["block_scale_k16_m128x4_v1"]);
    untouched(&out);
    assert_eq!(w, usize::from_ne_bytes([CANARY; 8]));
}

#[test]
fn non_finite_sources_and_overflowing_scales() {
    let mut src = vec![1.0f32; 256];
    src[128 + 5] = f32::NAN;
    let (mut codes, mut scales) = (vec![CANARY; 128], vec![CANARY; 8]);
    let planes = [
        MutBytes::of(&mut codes),
        MutBytes::NONE,
        MutBytes::of(&mut scales),
    ];
    let st = unsafe {
        ninfer_quantize_grouped(
            Format::Q4_G64Fp16 as u32,
            src.as_ptr().cast(),
            1024,
            0,
            2,
            128,
            std::ptr::null(),
            planes.as_ptr(),
            std::ptr::null_mut(),
        )
    };
    refused(st, Status::NonFiniteSource, &["row 1", "column 5"]);
    untouched(&codes);
    untouched(&scales);
    // fp8 with binary16 row scales: max|x| / 448 above 65504 cannot be stored.
    let src = [1.0e38f32; 16];
    let mut rows = vec![CANARY; 2 + 16];
    let planes = [MutBytes::of(&mut rows), MutBytes::NONE, MutBytes::NONE];
    let st = unsafe {
        ninfer_fp8_row_maxabs(
            Format::Fp8E4m3fnRowFp16 as u32,
            src.as_ptr().cast(),
            64,
            0,
            1,
            16,
            planes.as_ptr(),
        )
    };
    refused(st, Status::ScaleOverflow, &["row 0"]);
    untouched(&rows);
}

#[test]
fn unknown_dtypes() {
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut out = vec![CANARY; 256];
    let st = unsafe { ninfer_decode_row_as(&v, 0, 7, out.as_mut_ptr(), 256) };
    refused(st, Status::UnknownDtype, &["7"]);
    untouched(&out);
}

/// Encoders, packers and the GGUF import: a refusal found late (a source value, a source
/// count, a block of the input) still leaves every output plane as it was.
#[test]
fn encoders_packers_and_import_write_nothing_on_refusal() {
    // q2_g64_fp16 has no floating-point encoder (spec §2, §7).
    let src = vec![1.0f32; 128];
    let (mut codes, mut scales) = (vec![CANARY; 32], vec![CANARY; 4]);
    let planes = [
        MutBytes::of(&mut codes),
        MutBytes::NONE,
        MutBytes::of(&mut scales),
    ];
    let st = unsafe {
        ninfer_quantize_grouped(
            Format::Q2_G64Fp16 as u32,
            src.as_ptr().cast(),
            512,
            0,
            1,
            128,
            std::ptr::null(),
            planes.as_ptr(),
            std::ptr::null_mut(),
        )
    };
    refused(st, Status::Unsupported, &["q2_g64_fp16"]);
    untouched(&codes);
    untouched(&scales);
    // nvfp4: 3 stacked sources do not divide 2 rows.
    let src = [1.0f32; 32];
    let (mut c, mut sc, mut d) = (vec![CANARY; 16], vec![CANARY; 512], vec![CANARY; 12]);
    let planes = [
        MutBytes::of(&mut c),
        MutBytes::of(&mut sc),
        MutBytes::of(&mut d),
    ];
    let st = unsafe {
        ninfer_nvfp4_quantize(
            Format::Nvfp4 as u32,
            src.as_ptr().cast(),
            128,
            0,
            2,
            16,
            3,
            planes.as_ptr(),
        )
    };
    refused(st, Status::BadShape, &["3"]);
    untouched(&c);
    untouched(&sc);
    untouched(&d);
    // fp8 pack: one scale word short.
    let codes_in = [0x38u8; 32];
    let mut out = vec![CANARY; 32];
    let mut sc = vec![CANARY; 4];
    let planes = [
        MutBytes::of(&mut out),
        MutBytes::of(&mut sc),
        MutBytes::NONE,
    ];
    let st = unsafe {
        ninfer_fp8_row_pack(
            Format::Fp8E4m3fnRowBf16 as u32,
            2,
            16,
            codes_in.as_ptr(),
            32,
            [0x3F80u16].as_ptr(),
            1,
            planes.as_ptr(),
        )
    };
    refused(st, Status::SizeMismatch, &["scale"]);
    untouched(&out);
    untouched(&sc);
    // GGUF Q8_0 → q8_g32_fp16: a code -128 in row 1, block 1 breaks the target's rules.
    let mut p = q8_0();
    p[0][3 * 34 + 2 + 7] = 0x80;
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let (mut c, mut sc) = (vec![CANARY; 256], vec![CANARY; 16]);
    let planes = [MutBytes::of(&mut c), MutBytes::NONE, MutBytes::of(&mut sc)];
    let st = unsafe { ninfer_import_gguf(&v, Format::Q8_G32Fp16 as u32, planes.as_ptr()) };
    refused(st, Status::InvalidEncoding, &["row 1"]);
    untouched(&c);
    untouched(&sc);
    // The same planes take the valid payload.
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let planes = [MutBytes::of(&mut c), MutBytes::NONE, MutBytes::of(&mut sc)];
    let st = unsafe { ninfer_import_gguf(&v, Format::Q8_G32Fp16 as u32, planes.as_ptr()) };
    assert_eq!(st, 0, "{}", last_error());
}

// ---------------------------------------------------------------------------------------
// Every export checks all its arguments before writing any output.

#[test]
fn rows_copy_and_gather_check_out_written_before_copying() {
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut out = vec![CANARY; 136];
    let mut written = [CANARY; 16];
    let bad = unsafe {
        written
            .as_mut_ptr()
            .add(written.as_ptr().align_offset(8) + 1)
    };
    let st = unsafe { ninfer_rows_copy(&v, 0, 2, out.as_mut_ptr(), 136, bad.cast()) };
    refused(st, Status::Misaligned, &["out_written"]);
    untouched(&out);
    untouched(&written);
    let st =
        unsafe { ninfer_rows_gather(&v, [1u64, 0].as_ptr(), 2, out.as_mut_ptr(), 136, bad.cast()) };
    refused(st, Status::Misaligned, &["out_written"]);
    untouched(&out);
    untouched(&written);
}

#[test]
fn linear_shape_checks_both_outputs_before_writing_either() {
    let p = q8_0();
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    let mut h: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        unsafe { ninfer_linear_prepare(&v, 0, &mut h) },
        0,
        "{}",
        last_error()
    );
    let mut rows = u64::from_ne_bytes([CANARY; 8]);
    let mut raw = [CANARY; 16];
    let cols = unsafe { raw.as_mut_ptr().add(raw.as_ptr().align_offset(8) + 1) };
    let st = unsafe { ninfer_linear_shape(h, &mut rows, cols.cast()) };
    refused(st, Status::Misaligned, &["out_cols"]);
    assert_eq!(
        rows,
        u64::from_ne_bytes([CANARY; 8]),
        "out_rows was written"
    );
    untouched(&raw);
    let st = unsafe { ninfer_linear_shape(h, &mut rows, std::ptr::null_mut()) };
    refused(st, Status::NullPointer, &["out_cols"]);
    assert_eq!(
        rows,
        u64::from_ne_bytes([CANARY; 8]),
        "out_rows was written"
    );
    let mut c = 0u64;
    assert_eq!(unsafe { ninfer_linear_shape(h, &mut rows, &mut c) }, 0);
    assert_eq!((rows, c), (2, 64));
    // A misaligned handle out-pointer: refused before anything is prepared.
    let mut slot = [CANARY; 16];
    let bad = unsafe { slot.as_mut_ptr().add(slot.as_ptr().align_offset(8) + 1) };
    let st = unsafe { ninfer_linear_prepare(&v, 0, bad.cast()) };
    refused(st, Status::Misaligned, &["out_handle"]);
    untouched(&slot);
    unsafe { ninfer_linear_free(h) };
}

/// Every export refuses a zero dimension; the nvfp4 scale swizzle too.
#[test]
fn nvfp4_scale_swizzle_refuses_zero_dimensions() {
    let lin = [0x38u8; 4];
    let mut out = vec![CANARY; 512];
    for (rows, kb) in [(0u64, 1u64), (1, 0), (0, 0)] {
        let st =
            unsafe { ninfer_nvfp4_pack_scales(rows, kb, lin.as_ptr(), 0, out.as_mut_ptr(), 0) };
        refused(st, Status::BadShape, &["positive"]);
        let st =
            unsafe { ninfer_nvfp4_unpack_scales(rows, kb, out.as_ptr(), 0, out.as_mut_ptr(), 0) };
        refused(st, Status::BadShape, &["positive"]);
        // With buffers the caller sized for one row: still the shape that is reported.
        let st =
            unsafe { ninfer_nvfp4_pack_scales(rows, kb, lin.as_ptr(), 1, out.as_mut_ptr(), 512) };
        refused(st, Status::BadShape, &["positive"]);
    }
    untouched(&out);
}

// ---------------------------------------------------------------------------------------
// The spec's validity rules: `ninfer_validate` refuses each with INVALID_ENCODING at the
// first offending (row, block) and the row decoder writes nothing for it.

/// One rule broken in row 1 of a two-row view: validate's status, message and location
/// (written only on INVALID_ENCODING), then decode_row on the bad row: refused with its
/// output untouched when `decode_refuses`, and row 0 still decodes.
#[track_caller]
fn broken_rule(v: &View, at: (u64, u64), words: &[&str], decode_refuses: bool) {
    let (mut r, mut b) = (
        u64::from_ne_bytes([CANARY; 8]),
        u64::from_ne_bytes([CANARY; 8]),
    );
    let st = unsafe { ninfer_validate(v, &mut r, &mut b) };
    refused(st, Status::InvalidEncoding, words);
    assert_eq!((r, b), at, "location");
    let k = v.cols as usize;
    let mut out = canary_f32(k);
    let st = unsafe { ninfer_decode_row(v, at.0.min(v.rows - 1), out.as_mut_ptr(), k) };
    if decode_refuses {
        refused(st, Status::InvalidEncoding, &[]);
        untouched_f32(&out);
    }
    if at.0 != 0 {
        let st = unsafe { ninfer_decode_row(v, 0, out.as_mut_ptr(), k) };
        assert_eq!(st, 0, "row 0 is valid: {}", last_error());
    }
}

#[track_caller]
fn valid(v: &View) {
    let (mut r, mut b) = (
        u64::from_ne_bytes([CANARY; 8]),
        u64::from_ne_bytes([CANARY; 8]),
    );
    let st = unsafe { ninfer_validate(v, &mut r, &mut b) };
    assert_eq!(st, 0, "{}", last_error());
    assert_eq!(
        (r, b),
        (
            u64::from_ne_bytes([CANARY; 8]),
            u64::from_ne_bytes([CANARY; 8])
        )
    );
}

/// A valid two-row row_split_k128_v1 payload of `format` with K = `k` (≤ 128): codes 1
/// (word 0b10 for q2, whose code 1 is word 2), scale 1.0 on every logical group, canonical
/// padding. Returns the planes and the bytes per row of each.
fn row_split(format: Format, k: usize) -> (Vec<Vec<u8>>, [usize; 3]) {
    let (w, high, g) = match format {
        Format::Q2_G64Fp16 => (2, 0, 64),
        Format::T2_G128Fp16 => (2, 0, 128),
        Format::Q4_G64Fp16 => (4, 0, 64),
        Format::Q5_G64Fp16 => (4, 1, 64),
        Format::Q6_G64Fp16 => (4, 2, 64),
        Format::Q8_G32Fp16 => (8, 0, 32),
        _ => unreachable!(),
    };
    let per = [128 * w / 8, 128 * high / 8, 2 * 128 / g];
    let word = |i: usize| -> u8 {
        match (format, i < k) {
            (Format::Q2_G64Fp16, true) => 2,
            (Format::Q2_G64Fp16, false) => 1,
            (_, true) => 1,
            (_, false) => 0,
        }
    };
    let mut codes = vec![0u8; per[0]];
    for i in 0..128 {
        let m = 8 / w;
        codes[i / m] |= word(i) << ((i % m) * w);
    }
    let mut scales = vec![0u8; per[2]];
    for grp in 0..k.div_ceil(g) {
        scales[2 * grp..2 * grp + 2].copy_from_slice(&0x3C00u16.to_le_bytes());
    }
    let two = |p: &[u8]| [p, p].concat();
    (vec![two(&codes), vec![0u8; 2 * per[1]], two(&scales)], per)
}

fn set_u16(p: &mut [u8], at: usize, w: u16) {
    p[at..at + 2].copy_from_slice(&w.to_le_bytes());
}

#[test]
fn grouped_scales_must_be_finite_and_not_negative_zero() {
    for format in [
        Format::Q4_G64Fp16,
        Format::Q5_G64Fp16,
        Format::Q6_G64Fp16,
        Format::Q8_G32Fp16,
        Format::T2_G128Fp16,
    ] {
        let (good, per) = row_split(format, 128);
        valid(&view(format, 2, 128, &good));
        for bad in [0x8000u16, 0x7C00, 0xFC00, 0x7E00, 0xFE01] {
            let mut p = good.clone();
            // Row 1, group 0.
            set_u16(&mut p[2], per[2], bad);
            broken_rule(&view(format, 2, 128, &p), (1, 0), &["row 1"], true);
        }
        // A negative, finite scale is an ordinary multiplier.
        let mut p = good.clone();
        set_u16(&mut p[2], per[2], 0xBC00);
        valid(&view(format, 2, 128, &p));
    }
}

#[test]
fn a_positive_zero_grouped_scale_needs_zero_codes() {
    for format in [Format::Q4_G64Fp16, Format::Q8_G32Fp16, Format::T2_G128Fp16] {
        let (mut p, per) = row_split(format, 128);
        set_u16(&mut p[2], per[2], 0x0000);
        broken_rule(&view(format, 2, 128, &p), (1, 0), &["row 1"], true);
    }
    // q2: every finite scale is valid, both zeros included, with any codes.
    for s in [0x0000u16, 0x8000] {
        let (mut p, per) = row_split(Format::Q2_G64Fp16, 128);
        set_u16(&mut p[2], per[2], s);
        valid(&view(Format::Q2_G64Fp16, 2, 128, &p));
    }
}

#[test]
fn q2_scales_must_be_finite() {
    for bad in [0x7C00u16, 0xFC00, 0x7E00] {
        let (mut p, per) = row_split(Format::Q2_G64Fp16, 128);
        set_u16(&mut p[2], per[2] + 2, bad); // row 1, group 1
        broken_rule(
            &view(Format::Q2_G64Fp16, 2, 128, &p),
            (1, 1),
            &["row 1"],
            true,
        );
    }
}

#[test]
fn codes_outside_the_legal_interval() {
    // q8: the byte 0x80 (-128); row 1, element 40 (group 1).
    let (mut p, per) = row_split(Format::Q8_G32Fp16, 128);
    p[0][per[0] + 40] = 0x80;
    broken_rule(
        &view(Format::Q8_G32Fp16, 2, 128, &p),
        (1, 1),
        &["row 1"],
        true,
    );
    // t2: the word 0b10 (-2); row 1, element 5 (byte 1, bits 2..3).
    let (mut p, per) = row_split(Format::T2_G128Fp16, 128);
    p[0][per[0] + 1] = (p[0][per[0] + 1] & !0b1100) | 0b1000;
    broken_rule(
        &view(Format::T2_G128Fp16, 2, 128, &p),
        (1, 0),
        &["row 1"],
        true,
    );
}

#[test]
fn row_split_padding_is_canonical() {
    // K = 64: elements 64..127 and group 1 (q4) are padding.
    let (good, per) = row_split(Format::Q4_G64Fp16, 64);
    valid(&view(Format::Q4_G64Fp16, 2, 64, &good));
    let mut p = good.clone();
    p[0][per[0] + 40] = 0x01; // row 1, element 80: a padding code 1
    broken_rule(
        &view(Format::Q4_G64Fp16, 2, 64, &p),
        (1, 1),
        &["padding"],
        true,
    );
    let mut p = good.clone();
    set_u16(&mut p[2], per[2] + 2, 0x3C00); // row 1, padding group 1 with scale 1.0
    broken_rule(
        &view(Format::Q4_G64Fp16, 2, 64, &p),
        (1, 1),
        &["padding"],
        true,
    );
    // q2 padding is the word 0b01: a zero byte there is a code -1.
    let (good, per) = row_split(Format::Q2_G64Fp16, 64);
    valid(&view(Format::Q2_G64Fp16, 2, 64, &good));
    let mut p = good;
    p[0][per[0] + 20] = 0x00;
    broken_rule(
        &view(Format::Q2_G64Fp16, 2, 64, &p),
        (1, 1),
        &["padding"],
        true,
    );
}

/// Two rows of fp8_e4m3fn_row_bf16, K = 16: codes 0x38 (1.0), scales 1.0.
fn fp8_bf16() -> Vec<Vec<u8>> {
    vec![vec![0x38u8; 32], [0x3F80u16.to_le_bytes(); 2].concat()]
}

/// Two rows of fp8_e4m3fn_row_fp16, K = 16: per row the binary16 scale 1.0 then 16 codes.
fn fp8_fp16() -> Vec<Vec<u8>> {
    let row = [&0x3C00u16.to_le_bytes()[..], &[0x38u8; 16]].concat();
    vec![[row.clone(), row].concat()]
}

#[test]
fn fp8_codes_must_not_be_nan() {
    for code in [0x7Fu8, 0xFF] {
        let mut p = fp8_bf16();
        p[0][16 + 3] = code;
        broken_rule(
            &view(Format::Fp8E4m3fnRowBf16, 2, 16, &p),
            (1, 3),
            &["row 1"],
            true,
        );
        let mut p = fp8_fp16();
        p[0][18 + 2 + 3] = code;
        broken_rule(
            &view(Format::Fp8E4m3fnRowFp16, 2, 16, &p),
            (1, 3),
            &["row 1"],
            true,
        );
    }
}

#[test]
fn fp8_row_scales_must_be_finite_with_sign_bit_zero() {
    // −0, negative, +Inf, NaN; the per-row scale has no block: UINT64_MAX.
    for bad in [0x8000u16, 0xBF80, 0x7F80, 0x7FC0] {
        let mut p = fp8_bf16();
        set_u16(&mut p[1], 2, bad);
        broken_rule(
            &view(Format::Fp8E4m3fnRowBf16, 2, 16, &p),
            (1, u64::MAX),
            &["row 1"],
            true,
        );
    }
    for bad in [0x8000u16, 0xBC00, 0x7C00, 0x7E00] {
        let mut p = fp8_fp16();
        set_u16(&mut p[0], 18, bad);
        broken_rule(
            &view(Format::Fp8E4m3fnRowFp16, 2, 16, &p),
            (1, u64::MAX),
            &["row 1"],
            true,
        );
    }
    // +0 and subnormal scales are valid (with signed-zero codes for +0).
    let mut p = fp8_bf16();
    set_u16(&mut p[1], 2, 0x0001);
    valid(&view(Format::Fp8E4m3fnRowBf16, 2, 16, &p));
}

#[test]
fn a_positive_zero_fp8_row_scale_needs_signed_zero_codes() {
    let mut p = fp8_bf16();
    set_u16(&mut p[1], 2, 0x0000);
    p[0][16..32].fill(0x80);
    valid(&view(Format::Fp8E4m3fnRowBf16, 2, 16, &p));
    p[0][16 + 7] = 0x01;
    broken_rule(
        &view(Format::Fp8E4m3fnRowBf16, 2, 16, &p),
        (1, 7),
        &["row 1"],
        true,
    );
}

/// Two rows of nvfp4, K = 32 (two K-blocks): codes 0x22 (1.0, 1.0), block scales 0x38
/// (1.0) swizzled, one divisor 1.0.
fn nvfp4() -> Vec<Vec<u8>> {
    let mut scales = vec![0u8; 512];
    for m in 0..2 {
        for kb in 0..2 {
            scales[m * 16 + kb] = 0x38;
        }
    }
    vec![vec![0x22u8; 32], scales, 1.0f32.to_le_bytes().to_vec()]
}

#[test]
fn nvfp4_block_scales_have_sign_bit_zero_and_are_not_nan() {
    valid(&view(Format::Nvfp4, 2, 32, &nvfp4()));
    for bad in [0x80u8, 0xB8, 0x7F, 0xFF] {
        let mut p = nvfp4();
        p[1][16 + 1] = bad; // row 1, K-block 1
        broken_rule(&view(Format::Nvfp4, 2, 32, &p), (1, 1), &["row 1"], true);
    }
    // +0 is a valid block scale.
    let mut p = nvfp4();
    p[1][16 + 1] = 0x00;
    valid(&view(Format::Nvfp4, 2, 32, &p));
}

#[test]
fn nvfp4_divisors_are_finite_and_positive() {
    for bad in [0.0f32, -0.0, -1.0, f32::INFINITY, f32::NAN] {
        let mut p = nvfp4();
        p[2] = bad.to_le_bytes().to_vec();
        broken_rule(
            &view(Format::Nvfp4, 2, 32, &p),
            (0, u64::MAX),
            &["divisor"],
            true,
        );
    }
    // A divisor count that does not divide N is a shape error.
    let mut p = nvfp4();
    p[2] = [1.0f32.to_le_bytes(); 3].concat();
    let mut out = canary_f32(32);
    refused(
        unsafe { ninfer_decode_row(&view(Format::Nvfp4, 2, 32, &p), 0, out.as_mut_ptr(), 32) },
        Status::BadShape,
        &["3 divisors"],
    );
    untouched_f32(&out);
}

#[test]
fn nvfp4_scale_padding_is_zero() {
    let mut p = nvfp4();
    p[1][2] = 0x38; // row 0, padding K-block 2
    let (mut r, mut b) = (0u64, 0u64);
    let st = unsafe { ninfer_validate(&view(Format::Nvfp4, 2, 32, &p), &mut r, &mut b) };
    refused(st, Status::InvalidEncoding, &["padding"]);
    assert_eq!((r, b), (u64::MAX, u64::MAX));
}

#[test]
fn gguf_scale_fields_must_be_finite_for_validate() {
    // Q8_0 d of row 1, block 1 is NaN: validate refuses; decode gives NaN as ggml does.
    let mut p = q8_0();
    set_u16(&mut p[0], 3 * 34, 0x7E00);
    let v = view(Format::GgufQ8_0, 2, 64, &p);
    broken_rule(&v, (1, 1), &["row 1"], false);
    let mut out = canary_f32(64);
    assert_eq!(unsafe { ninfer_decode_row(&v, 1, out.as_mut_ptr(), 64) }, 0);
    assert!(out[32..].iter().all(|x| x.is_nan()) && out[..32].iter().all(|&x| x == 1.0));
    // Q4_K dmin (byte 2 of its 144-byte block) infinite.
    let mut q4k = vec![0u8; 2 * 144];
    set_u16(&mut q4k, 144 + 2, 0x7C00);
    broken_rule(
        &view(Format::GgufQ4_K, 2, 256, &[q4k]),
        (1, 0),
        &["row 1"],
        false,
    );
}

#[test]
fn direct_formats_accept_every_word() {
    // bf16 NaN, −0, ±Inf and subnormal words are valid at the format layer.
    let words: Vec<u8> = [
        0x7FC1u16, 0x8000, 0x7F80, 0xFF80, 0x0001, 0xFF81, 0x7F81, 0x3F80,
    ]
    .iter()
    .flat_map(|w| w.to_le_bytes())
    .collect();
    valid(&view(Format::Bf16, 2, 4, &[words]));
}
