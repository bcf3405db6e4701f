//! `ninfer_quantize_row_q8_1`, `ninfer_quantize_row_q8_k` and `ninfer_convert` through the
//! C ABI.
//!
//! Oracles: the q8_1 blocks of the numpy re-derivation of ggml's `quantize_row_q8_1_ref`
//! (tests/data/linear/q8_1.*, scripts/fixtures/linear_fixtures.py), their x̂ = f32(d)·q
//! computed here from the blocks' words with a plain binary16 decoder; q8_K blocks worked by
//! hand (ggml's `quantize_row_q8_K_ref`); the plain IEEE rounding algorithms of tests/common
//! for the conversions; hand-worked values.

mod common;

use common::{bf16_rne, f16_rne, ninfer_last_error_message};
use ninfer::Status;
use std::ffi::c_void;
use std::path::PathBuf;

unsafe extern "C" {
    fn ninfer_quantize_row_q8_1(
        x: *const f32,
        k: usize,
        blocks: *mut u8,
        blocks_len: usize,
        x_hat: *mut f32,
        x_hat_len: usize,
    ) -> u32;
    fn ninfer_quantize_row_q8_k(x: *const f32, k: usize, blocks: *mut u8, blocks_len: usize)
    -> u32;
    fn ninfer_convert(
        src: *const c_void,
        src_bytes: usize,
        src_dtype: u32,
        dst: *mut c_void,
        dst_bytes: usize,
        dst_dtype: u32,
    ) -> u32;
}

fn data(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/linear")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"))
}

/// A binary16 word's value, from its fields (f64; NaN for NaN words).
fn f16_value(w: u16) -> f64 {
    let sign = if w & 0x8000 != 0 { -1.0 } else { 1.0 };
    let e = ((w >> 10) & 0x1F) as i32;
    let m = (w & 0x3FF) as f64;
    sign * match e {
        0 => m * 2f64.powi(-24),
        31 if m == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + m / 1024.0) * 2f64.powi(e - 15),
    }
}

#[test]
fn q8_1_blocks_and_values_match_the_numpy_rederivation() {
    let x: Vec<f32> = data("q8_1.f32")
        .chunks_exact(4)
        .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    let want = data("q8_1.blocks");
    let k = x.len();
    let mut blocks = vec![0u8; k / 32 * 36];
    let mut x_hat = vec![0f32; k];
    let st = unsafe {
        ninfer_quantize_row_q8_1(
            x.as_ptr(),
            k,
            blocks.as_mut_ptr(),
            blocks.len(),
            x_hat.as_mut_ptr(),
            k,
        )
    };
    assert_eq!(st, 0);
    assert_eq!(blocks, want);
    let mut nan_blocks = 0;
    for (b, blk) in want.chunks_exact(36).enumerate() {
        let d = f16_value(u16::from_le_bytes([blk[0], blk[1]]));
        for j in 0..32 {
            let q = blk[4 + j] as i8 as f64;
            let expect = d * q;
            let got = x_hat[b * 32 + j];
            if expect.is_nan() {
                assert!(got.is_nan(), "block {b} value {j}");
                nan_blocks += (j == 0) as usize;
            } else {
                assert_eq!(got as f64, expect, "block {b} value {j}");
                assert_eq!(got, expect as f32, "block {b} value {j}: not exact");
            }
        }
    }
    assert!(nan_blocks > 0, "the fixture has its non-finite blocks");
    // Either output alone gives the same words.
    let mut only = vec![0f32; k];
    let st = unsafe {
        ninfer_quantize_row_q8_1(x.as_ptr(), k, std::ptr::null_mut(), 0, only.as_mut_ptr(), k)
    };
    assert_eq!(st, 0);
    assert!(
        only.iter()
            .zip(&x_hat)
            .all(|(a, b)| a.to_bits() == b.to_bits())
    );
}

#[test]
fn q8_1_refusals_write_nothing() {
    let x = vec![1.0f32; 64];
    let mut blocks = vec![0xA5u8; 72];
    let mut x_hat = vec![42.0f32; 64];
    let cases: [(usize, usize, usize, Status); 5] = [
        (63, 72, 64, Status::BadShape),
        (0, 72, 64, Status::BadShape),
        (64, 71, 64, Status::BufferTooSmall),
        (64, 72, 63, Status::BufferTooSmall),
        (64, 0, 0, Status::InvalidArgument),
    ];
    for (k, nb, nx, want) in cases {
        let st = unsafe {
            ninfer_quantize_row_q8_1(
                x.as_ptr(),
                k,
                if nb == 0 {
                    std::ptr::null_mut()
                } else {
                    blocks.as_mut_ptr()
                },
                nb,
                if nx == 0 {
                    std::ptr::null_mut()
                } else {
                    x_hat.as_mut_ptr()
                },
                nx,
            )
        };
        assert_eq!(st, want as u32, "k {k} blocks {nb} x_hat {nx}");
        assert!(blocks.iter().all(|&b| b == 0xA5) && x_hat.iter().all(|&v| v == 42.0));
    }
    let st = unsafe {
        ninfer_quantize_row_q8_1(
            x.as_ptr(),
            64,
            std::ptr::null_mut(),
            72,
            x_hat.as_mut_ptr(),
            64,
        )
    };
    assert_eq!(st, Status::NullPointer as u32);
}

/// One `block_q8_K` from its fields (d binary32 @0, 256 int8 codes @4, 16 int16 sums @260,
/// little-endian), the sums added up here.
fn q8_k_block(d: f32, codes: &[(usize, i8)]) -> Vec<u8> {
    let mut q = [0i8; 256];
    for &(j, c) in codes {
        q[j] = c;
    }
    let mut b = d.to_le_bytes().to_vec();
    b.extend(q.iter().map(|&c| c as u8));
    for s in q.chunks_exact(16) {
        b.extend(s.iter().map(|&c| c as i16).sum::<i16>().to_le_bytes());
    }
    assert_eq!(b.len(), 292);
    b
}

fn last_error() -> String {
    let mut buf = vec![0u8; 1024];
    let n = unsafe { ninfer_last_error_message(buf.as_mut_ptr().cast(), buf.len()) };
    buf.truncate(n.min(1023));
    String::from_utf8(buf).unwrap()
}

#[test]
fn q8_k_blocks_match_hand_worked_values() {
    let mut x = vec![0f32; 4 * 256];
    // Block 0: max = −127, the first of largest magnitude (the later +127 does not replace
    // it): iscale = −127/−127 = 1, d = 1; codes are x rounded half to even.
    x[..6].copy_from_slice(&[2.5, -3.5, -127.0, 127.0, 0.5, 1.5]);
    x[17] = -0.49;
    x[18] = 7.0;
    // Block 1: max = 254 (positive): iscale = −0.5, d = −2; 3 → −1.5 → −2 and 5 → −2.5 → −2
    // (ties to even), 254 → −127, the later −254 → 127.
    x[256..260].copy_from_slice(&[3.0, 5.0, 254.0, -254.0]);
    x[256 + 40] = 100.0; // → −50
    // Block 2: all zero: d = 0, every code and sum 0. Block 3: a NaN: d = NaN, codes 0.
    x[3 * 256 + 9] = f32::NAN;
    x[3 * 256 + 10] = 1.0;
    let mut want = q8_k_block(
        1.0,
        &[(0, 2), (1, -4), (2, -127), (3, 127), (5, 2), (18, 7)],
    );
    want.extend(q8_k_block(
        -2.0,
        &[(0, -2), (1, -2), (2, -127), (3, 127), (40, -50)],
    ));
    want.extend(q8_k_block(0.0, &[]));
    want.extend(q8_k_block(f32::NAN, &[]));
    // Longer output: only the prefix is written.
    let mut got = vec![0xA5u8; 4 * 292 + 3];
    let st = unsafe { ninfer_quantize_row_q8_k(x.as_ptr(), x.len(), got.as_mut_ptr(), got.len()) };
    assert_eq!(st, 0);
    assert_eq!(&got[..4 * 292], &want[..]);
    assert_eq!(&got[4 * 292..], &[0xA5; 3]);
    // The sums as stored: block 0's first 16 codes add to 2 − 4 − 127 + 127 + 2 = 0, its
    // second to 7; block 1's first to −4.
    assert_eq!(&got[260..264], &[0, 0, 7, 0]);
    assert_eq!(&got[292 + 260..292 + 262], &(-4i16).to_le_bytes());
}

#[test]
fn q8_k_blocks_match_the_rust_quantizer() {
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let k = 40 * 256;
    let x: Vec<f32> = (0..k)
        .map(|i| next() * [1.0f32, 1e-30, 3e30, 0.01, 1e-40][i / 256 % 5])
        .collect();
    let mut want = vec![0u8; k / 256 * 292];
    ninfer::linear::q8_k::quantize_row_q8_k(&x, &mut want).unwrap();
    let mut got = vec![0u8; want.len()];
    let st = unsafe { ninfer_quantize_row_q8_k(x.as_ptr(), k, got.as_mut_ptr(), got.len()) };
    assert_eq!(st, 0);
    assert_eq!(got, want);
}

#[test]
fn q8_k_refusals_write_nothing() {
    let x = vec![1.0f32; 512];
    let mut blocks = vec![0xA5u8; 2 * 292];
    let cases: [(usize, usize, Status, &str); 4] = [
        (255, 584, Status::BadShape, "256"),
        (0, 584, Status::BadShape, "256"),
        (512, 583, Status::BufferTooSmall, "584"),
        (512, 0, Status::BufferTooSmall, "584"),
    ];
    for (k, nb, want, says) in cases {
        let p = if nb == 0 {
            std::ptr::null_mut()
        } else {
            blocks.as_mut_ptr()
        };
        let st = unsafe { ninfer_quantize_row_q8_k(x.as_ptr(), k, p, nb) };
        assert_eq!(st, want as u32, "k {k} blocks {nb}");
        let msg = last_error();
        assert!(msg.contains(says), "k {k} blocks {nb}: {msg}");
        assert!(blocks.iter().all(|&b| b == 0xA5));
    }
    let st = unsafe { ninfer_quantize_row_q8_k(x.as_ptr(), 512, std::ptr::null_mut(), 584) };
    assert_eq!(st, Status::NullPointer as u32);
    let st = unsafe { ninfer_quantize_row_q8_k(std::ptr::null(), 512, blocks.as_mut_ptr(), 584) };
    assert_eq!(st, Status::NullPointer as u32);
    assert!(blocks.iter().all(|&b| b == 0xA5));
}

fn convert(src: &[u8], from: u32, dst: &mut [u8], to: u32) -> u32 {
    unsafe {
        ninfer_convert(
            src.as_ptr().cast(),
            src.len(),
            from,
            dst.as_mut_ptr().cast(),
            dst.len(),
            to,
        )
    }
}

#[test]
fn conversions_match_the_plain_rounding_oracles() {
    // Every bf16 and every binary16 word widened, then f32 values narrowed: a sweep of bit
    // patterns over the whole finite range plus the edges.
    let words: Vec<u16> = (0..=u16::MAX).collect();
    let wb: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
    let mut out = vec![0u32; 65536];
    let ob = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<u8>(), 65536 * 4) };
    assert_eq!(convert(&wb, 1, ob, 0), 0);
    for (&w, &o) in words.iter().zip(&out) {
        let want = (w as u32) << 16;
        let nan = f32::from_bits(want).is_nan();
        assert!(
            o == want || (nan && f32::from_bits(o).is_nan()),
            "bf16 {w:#06x}"
        );
    }
    assert_eq!(convert(&wb, 2, ob, 0), 0);
    for (&w, &o) in words.iter().zip(&out) {
        let want = f16_value(w);
        let got = f32::from_bits(o) as f64;
        assert!(
            got == want || (want.is_nan() && got.is_nan()),
            "f16 {w:#06x}"
        );
    }
    let mut xs: Vec<f32> = (0..200_000u32)
        .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761) & 0x7F7F_FFFF))
        .collect();
    xs.extend([
        0.0,
        -0.0,
        65520.0,
        65519.99,
        -65504.0,
        2f32.powi(-25),
        f32::MIN_POSITIVE,
    ]);
    let xb: Vec<u8> = xs.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let mut h = vec![0u16; xs.len()];
    let hb = unsafe { std::slice::from_raw_parts_mut(h.as_mut_ptr().cast::<u8>(), h.len() * 2) };
    for (to, oracle) in [(1u32, bf16_rne as fn(f32) -> u16), (2, f16_rne)] {
        assert_eq!(convert(&xb, 0, hb, to), 0);
        let hv = unsafe { std::slice::from_raw_parts(hb.as_ptr().cast::<u16>(), xs.len()) };
        for (&x, &got) in xs.iter().zip(hv) {
            assert_eq!(got, oracle(x), "{x:e} to dtype {to}");
        }
    }
    // Non-finite values, by hand.
    let special: Vec<u8> = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let mut s = [0u8; 6];
    assert_eq!(convert(&special, 0, &mut s, 2), 0);
    let s16: Vec<u16> = s
        .chunks(2)
        .map(|c| u16::from_ne_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(&s16[..2], &[0x7C00, 0xFC00]);
    assert!(s16[2] & 0x7C00 == 0x7C00 && s16[2] & 0x3FF != 0);
}

#[test]
fn conversion_refusals_write_nothing() {
    let src_words = [0u32; 3]; // 4-byte aligned zeros
    let src = unsafe { std::slice::from_raw_parts(src_words.as_ptr().cast::<u8>(), 12) };
    let mut dst = vec![0xA5A5_A5A5u32; 4];
    let db = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), 16) };
    assert_eq!(convert(&src[..3], 1, db, 0), Status::SizeMismatch as u32);
    assert_eq!(
        convert(&src[..6], 1, &mut db[..11], 0),
        Status::BufferTooSmall as u32
    );
    assert_eq!(convert(src, 7, db, 0), Status::UnknownDtype as u32);
    assert_eq!(convert(src, 0, db, 9), Status::UnknownDtype as u32);
    assert_eq!(
        convert(&src[..8], 1, &mut db[1..], 1),
        Status::Misaligned as u32
    );
    assert!(dst.iter().all(|&w| w == 0xA5A5_A5A5));
}
