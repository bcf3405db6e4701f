//! import_encoded of ternary safetensors checkpoints (BitNet b1.58): transformers' packed
//! uint8 codes, or one word per weight, → t2_g128_fp16.
//!
//! Oracles: the packing is written here plainly from its description (transformers'
//! `integrations/bitnet.py`: row n of `[N, K]` is the 2-bit field n / (N/4) of packed row
//! n mod (N/4), holding code + 1), and the expected values are code / s, code × s or the
//! given values computed here in binary64; refusals are predicted from the exactness rule
//! (one binary16 scale word per 128-value group) and t2's code domain (spec §3.2, §6.1).
//! On every refusal the planes keep their contents.

mod common;
use common::MutBytes;

use ninfer::decode::decode_row;
use ninfer::formats::float_source::FloatSource;
use ninfer::formats::import::{TernaryCodes, TernaryScaleRule, import_ternary_safetensors};
use ninfer::layouts::plane_sizes;
use ninfer::{Format, Layout, Status, WeightView};

const T2: Format = Format::T2_G128Fp16;

/// Codes of a small deterministic pattern, [rows, cols].
fn pattern(rows: usize, cols: usize) -> Vec<i8> {
    (0..rows * cols)
        .map(|i| ((i * 7 + i / cols * 5) % 3) as i8 - 1)
        .collect()
}

fn pack(codes: &[i8], rows: usize, cols: usize) -> Vec<u8> {
    let p = rows / 4;
    let mut out = vec![0u8; p * cols];
    for n in 0..rows {
        for k in 0..cols {
            out[(n % p) * cols + k] |= ((codes[n * cols + k] + 1) as u8) << (2 * (n / p));
        }
    }
    out
}

fn run(
    codes: TernaryCodes<'_>,
    scale: Option<(f32, TernaryScaleRule)>,
    rows: usize,
    cols: usize,
) -> Result<Vec<f32>, ninfer::Error> {
    let sizes = plane_sizes(T2, Layout::RowSplitK128_V1, rows, cols)?;
    let mut p = sizes.map(|n| vec![0xA5u8; n]);
    {
        let [a, b, c] = &mut p;
        import_ternary_safetensors(codes, scale, rows, cols, [a, b, c]).inspect_err(|_| {
            assert!(
                p.iter().flatten().all(|&b| b == 0xA5),
                "a plane was written on error"
            );
        })?;
    }
    let v = WeightView::new(
        T2,
        Layout::RowSplitK128_V1,
        rows,
        cols,
        [&p[0], &p[1], &p[2]],
    )?;
    ninfer::validate::validate(&v)?;
    let mut out = vec![0f32; rows * cols];
    for (r, row) in out.chunks_exact_mut(cols).enumerate() {
        decode_row(&v, r as u64, row)?;
    }
    Ok(out)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn packed_codes_decode_to_code_over_or_times_scale() {
    let (rows, cols) = (8, 256);
    let q = pattern(rows, cols);
    let packed = pack(&q, rows, cols);
    for (s, rule) in [
        (0.25f32, TernaryScaleRule::Divide),
        (-2.0, TernaryScaleRule::Divide),
        (2f32.powi(-14), TernaryScaleRule::Divide),
        (0.3125, TernaryScaleRule::Multiply),
        (-3.0, TernaryScaleRule::Multiply),
        (2f32.powi(-24), TernaryScaleRule::Multiply),
    ] {
        let got = run(TernaryCodes::Packed(&packed), Some((s, rule)), rows, cols).unwrap();
        let want: Vec<f32> = q
            .iter()
            .map(|&c| match rule {
                TernaryScaleRule::Divide => (c as f64 / s as f64) as f32,
                TernaryScaleRule::Multiply => (c as f64 * s as f64) as f32,
            })
            .collect();
        assert_eq!(bits(&got), bits(&want), "{s} {rule:?}");
    }
    // A scale whose rule has no exact binary16 word is refused.
    for (s, rule) in [
        (3.0f32, TernaryScaleRule::Divide),
        (2f32.powi(-16), TernaryScaleRule::Divide),
        (0.1, TernaryScaleRule::Multiply),
        (65536.0, TernaryScaleRule::Multiply),
        (f32::NAN, TernaryScaleRule::Multiply),
        (f32::INFINITY, TernaryScaleRule::Divide),
        (0.0, TernaryScaleRule::Multiply),
    ] {
        let e = run(TernaryCodes::Packed(&packed), Some((s, rule)), rows, cols).unwrap_err();
        assert_eq!(e.status(), Status::InvalidArgument, "{s} {rule:?}: {e}");
        assert!(e.to_string().contains("weight_scale"), "{e}");
    }
    // No scale, a word 3, bad shapes, wrong length.
    let e = run(TernaryCodes::Packed(&packed), None, rows, cols).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    let mut bad = packed.clone();
    bad[cols + 130] |= 3 << 2; // packed row 1, field 1: weight row 2 + 1 = 3, group 1
    let one = Some((1.0, TernaryScaleRule::Divide));
    let e = run(TernaryCodes::Packed(&bad), one, rows, cols).unwrap_err();
    assert_eq!(e.status(), Status::InvalidEncoding);
    assert!(e.to_string().contains("row 3, block 1"), "{e}");
    for (r, c, len) in [(8, 192, 8 * 192 / 4), (6, 256, 6 * 256 / 4), (0, 256, 0)] {
        let e = run(TernaryCodes::Packed(&vec![0x55; len]), one, r, c).unwrap_err();
        assert_eq!(e.status(), Status::BadShape, "{r}x{c}: {e}");
    }
    let e = run(TernaryCodes::Packed(&packed[1..]), one, rows, cols).unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
}

#[test]
fn values_with_and_without_scale() {
    let (rows, cols) = (2, 256);
    let q = pattern(rows, cols);
    // Codes as BF16 words, value = code × 0.5.
    let words: Vec<u16> = q
        .iter()
        .map(|&c| ((c as f32).to_bits() >> 16) as u16)
        .collect();
    let got = run(
        TernaryCodes::Values(FloatSource::Bf16(&words)),
        Some((0.5, TernaryScaleRule::Multiply)),
        rows,
        cols,
    )
    .unwrap();
    let want: Vec<f32> = q.iter().map(|&c| c as f32 * 0.5).collect();
    assert_eq!(bits(&got), bits(&want));
    // ±s per group (s differs per group, one group all zero), as F32 and F16.
    let s = [0.375f32, 2f32.powi(-20), 0.0, 1024.0];
    let vals: Vec<f32> = q
        .iter()
        .enumerate()
        .map(|(i, &c)| c as f32 * s[i / 128])
        .collect();
    let got = run(
        TernaryCodes::Values(FloatSource::F32(&vals)),
        None,
        rows,
        cols,
    )
    .unwrap();
    assert_eq!(
        bits(&got),
        bits(&vals.iter().map(|v| v + 0.0).collect::<Vec<_>>())
    );
    let h: Vec<u16> = vals
        .iter()
        .map(|&v| half::f16::from_f32(v).to_bits())
        .collect();
    let got = run(TernaryCodes::Values(FloatSource::F16(&h)), None, rows, cols).unwrap();
    assert_eq!(
        bits(&got),
        bits(&vals.iter().map(|v| v + 0.0).collect::<Vec<_>>())
    );
    // Refusals: a code 2, mixed magnitudes, a magnitude not in binary16, a NaN value.
    let mut c2 = q.iter().map(|&c| c as f32).collect::<Vec<f32>>();
    c2[300] = 2.0;
    let one = Some((1.0, TernaryScaleRule::Divide));
    let e = run(TernaryCodes::Values(FloatSource::F32(&c2)), one, rows, cols).unwrap_err();
    assert_eq!(e.status(), Status::InvalidEncoding);
    assert!(e.to_string().contains("row 1, block 0: column 44"), "{e}");
    for (i, v, why) in [
        (5usize, 0.1875f32, "neither 0 nor"),
        (5, f32::NAN, "neither 0 nor"),
        (5, f32::INFINITY, "not exactly a binary16 value"),
    ] {
        let mut bad = vals.clone();
        bad[i] = v;
        let e = run(
            TernaryCodes::Values(FloatSource::F32(&bad)),
            None,
            rows,
            cols,
        )
        .unwrap_err();
        assert_eq!(e.status(), Status::InvalidEncoding, "{v}: {e}");
        assert!(e.to_string().contains(why), "{e}");
    }
    let tiny: Vec<f32> = q.iter().map(|&c| c as f32 * 2f32.powi(-30)).collect();
    let e = run(
        TernaryCodes::Values(FloatSource::F32(&tiny)),
        None,
        rows,
        cols,
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::InvalidEncoding);
    let e = run(
        TernaryCodes::Values(FloatSource::F32(&vals[1..])),
        None,
        rows,
        cols,
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
}

unsafe extern "C" {
    fn ninfer_import_bitnet_packed(
        packed: *const u8,
        packed_len: usize,
        rows: u64,
        cols: u64,
        weight_scale: f32,
        scale_rule: u32,
        planes: *const MutBytes,
    ) -> u32;
    fn ninfer_import_ternary_values(
        src: *const std::ffi::c_void,
        src_bytes: usize,
        src_dtype: u32,
        rows: u64,
        cols: u64,
        has_scale: u32,
        weight_scale: f32,
        scale_rule: u32,
        planes: *const MutBytes,
    ) -> u32;
}

#[test]
fn c_entry_points_import_and_refuse_without_writing() {
    let (rows, cols) = (4usize, 128usize);
    let q = pattern(rows, cols);
    let packed = pack(&q, rows, cols);
    let sizes = plane_sizes(T2, Layout::RowSplitK128_V1, rows, cols).unwrap();
    let fresh = || (vec![0xA5u8; sizes[0]], vec![0xA5u8; sizes[2]]);
    let planes = |a: &mut Vec<u8>, c: &mut Vec<u8>| {
        [
            MutBytes {
                ptr: a.as_mut_ptr(),
                len: a.len(),
            },
            MutBytes {
                ptr: std::ptr::null_mut(),
                len: 0,
            },
            MutBytes {
                ptr: c.as_mut_ptr(),
                len: c.len(),
            },
        ]
    };
    // Packed, divide by 0.5: every scale word is binary16(2) = 0x4000.
    let (mut a, mut c) = fresh();
    let p = planes(&mut a, &mut c);
    // SAFETY: every pointer is valid for its length for the duration of the call.
    let st = unsafe {
        ninfer_import_bitnet_packed(packed.as_ptr(), packed.len(), 4, 128, 0.5, 0, p.as_ptr())
    };
    assert_eq!(st, 0);
    assert_eq!(c, [0x00, 0x40].repeat(rows));
    // Unknown rule, inexact scale, NULL: refused, nothing written.
    for (rule, s, want) in [
        (2u32, 0.5f32, Status::InvalidArgument),
        (0, 3.0, Status::InvalidArgument),
    ] {
        let (mut a, mut c) = fresh();
        let p = planes(&mut a, &mut c);
        // SAFETY: as above.
        let st = unsafe {
            ninfer_import_bitnet_packed(packed.as_ptr(), packed.len(), 4, 128, s, rule, p.as_ptr())
        };
        assert_eq!(st, want as u32);
        assert!(a.iter().chain(&c).all(|&b| b == 0xA5));
    }
    // SAFETY: NULL is refused before use.
    let st = unsafe {
        ninfer_import_bitnet_packed(
            packed.as_ptr(),
            packed.len(),
            4,
            128,
            0.5,
            0,
            std::ptr::null(),
        )
    };
    assert_eq!(st, Status::NullPointer as u32);
    // Values: BF16 codes (dtype 1) × 4 under multiply; F32 ±s without a scale.
    let words: Vec<u16> = q
        .iter()
        .map(|&c| ((c as f32).to_bits() >> 16) as u16)
        .collect();
    let (mut a, mut c) = fresh();
    let p = planes(&mut a, &mut c);
    // SAFETY: as above.
    let st = unsafe {
        ninfer_import_ternary_values(
            words.as_ptr().cast(),
            words.len() * 2,
            1,
            4,
            128,
            1,
            4.0,
            1,
            p.as_ptr(),
        )
    };
    assert_eq!(st, 0);
    assert_eq!(c, [0x00, 0x44].repeat(rows));
    let vals: Vec<f32> = q.iter().map(|&c| c as f32 * 0.75).collect();
    for (has, want) in [(0u32, 0u32), (2, Status::InvalidArgument as u32)] {
        let (mut a, mut c) = fresh();
        let p = planes(&mut a, &mut c);
        // SAFETY: as above.
        let st = unsafe {
            ninfer_import_ternary_values(
                vals.as_ptr().cast(),
                vals.len() * 4,
                0,
                4,
                128,
                has,
                0.0,
                0,
                p.as_ptr(),
            )
        };
        assert_eq!(st, want);
        if want == 0 {
            assert_eq!(c, [0x00, 0x3A].repeat(rows));
        } else {
            assert!(a.iter().chain(&c).all(|&b| b == 0xA5));
        }
    }
}
