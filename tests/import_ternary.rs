//! import_encoded of ternary checkpoints: GGUF TQ2_0 and TQ1_0 → t2_g128_fp16.
//!
//! Oracles: gguf-py's `gguf.quants.dequantize` (an implementation independent of this
//! library, bit-identical to ggml's `dequantize_row_tq*`) in the fixtures written by
//! scripts/fixtures/convert_fixtures.py must come back word for word from the library's
//! decode of the imported planes; each group's scale word must be its block's `d` read
//! plainly here; and the refusals are predicted from the t2 rules of the spec (§3.2: codes
//! −1, 0, +1; §6.1: a scale is +0 or finite non-zero, never −0; +0 only over zero codes).

mod common;
use common::MutBytes;

use ninfer::decode::decode_row;
use ninfer::formats::import::{GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, import_gguf_ternary};
use ninfer::layouts::{plane_sizes, row_split};
use ninfer::{Format, Layout, Status, WeightView};
use std::path::PathBuf;

const T2: Format = Format::T2_G128Fp16;

fn block_bytes(ty: u32) -> usize {
    if ty == GGML_TYPE_TQ2_0 { 66 } else { 54 }
}

/// (blocks, expected f32 words) of a fixture [rows, cols].
fn fixture(name: &str, ty: u32, rows: usize, cols: usize) -> (Vec<u8>, Vec<u32>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/convert")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| {
        panic!("{path:?}: {e} (run python3 scripts/fixtures/convert_fixtures.py)")
    });
    let nb = rows * cols / 256 * block_bytes(ty);
    assert_eq!(bytes.len(), nb + rows * cols * 4, "{name}");
    let expected = bytes[nb..]
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    (bytes[..nb].to_vec(), expected)
}

fn import(ty: u32, blocks: &[u8], rows: usize, cols: usize) -> Result<[Vec<u8>; 3], ninfer::Error> {
    let sizes = plane_sizes(T2, Layout::RowSplitK128_V1, rows, cols)?;
    let mut p = sizes.map(|n| vec![0xA5u8; n]);
    let [a, b, c] = &mut p;
    import_gguf_ternary(ty, blocks, rows, cols, [a, b, c]).inspect_err(|_| {
        assert!(
            p.iter().flatten().all(|&b| b == 0xA5),
            "a plane was written on error"
        );
    })?;
    Ok(p)
}

fn view(p: &[Vec<u8>; 3], rows: usize, cols: usize) -> WeightView<'_> {
    WeightView::new(
        T2,
        Layout::RowSplitK128_V1,
        rows,
        cols,
        [&p[0], &p[1], &p[2]],
    )
    .unwrap()
}

#[test]
fn gguf_py_ternary_tensors_decode_word_for_word() {
    for (name, ty, rows, cols) in [
        ("tq2_0.bin", GGML_TYPE_TQ2_0, 4, 512),
        ("tq1_0.bin", GGML_TYPE_TQ1_0, 3, 768),
    ] {
        let (blocks, expected) = fixture(name, ty, rows, cols);
        let p = import(ty, &blocks, rows, cols).unwrap();
        let v = view(&p, rows, cols);
        ninfer::validate::validate(&v).unwrap();
        let mut out = vec![0f32; cols];
        for r in 0..rows {
            decode_row(&v, r as u64, &mut out).unwrap();
            for (k, (&o, &e)) in out.iter().zip(&expected[r * cols..]).enumerate() {
                assert_eq!(
                    o.to_bits(),
                    e,
                    "{name} row {r} col {k}: {o} vs {}",
                    f32::from_bits(e)
                );
            }
        }
        // Scales: both groups of a block carry its d word unchanged; codes are ternary.
        let (codes, scales) = row_split::unpack(&v).unwrap();
        assert!(codes.iter().all(|&q| (-1..=1).contains(&q)));
        let bb = block_bytes(ty);
        for (b, blk) in blocks.chunks_exact(bb).enumerate() {
            let d = u16::from_le_bytes([blk[bb - 2], blk[bb - 1]]);
            assert_eq!(
                [scales[2 * b], scales[2 * b + 1]],
                [d, d],
                "{name} block {b}"
            );
        }
        // The fixtures hold every scale class t2 admits: negative, subnormal, +0.
        assert!(
            scales.iter().any(|&s| s & 0x8000 != 0),
            "{name}: no negative d"
        );
        assert!(
            scales.iter().any(|&s| s != 0 && s & 0x7C00 == 0),
            "{name}: no subnormal d"
        );
        println!("{name}: {} values equal gguf-py's", rows * cols);
    }
}

/// A TQ2_0 block of one repeated code word u (0..=3) and scale d.
fn tq2(u: u8, d: u16) -> Vec<u8> {
    let mut b = vec![u * 0x55; 64];
    b.extend_from_slice(&d.to_le_bytes());
    b
}

/// A TQ1_0 block whose every digit is 1 (code 0). ggml packs five digits dᵢ as
/// ⌈(81d₀ + 27d₁ + 9d₂ + 3d₃ + d₄)·256 / 243⌉: all ones (121) give byte 128 in `qs`; the
/// four `qh` digits (81 + 27 + 9 + 3 = 120) give byte 127.
fn tq1_zero_codes(d: u16) -> Vec<u8> {
    let mut b = vec![128u8; 48];
    b.extend_from_slice(&[127u8; 4]);
    b.extend_from_slice(&d.to_le_bytes());
    b
}

#[test]
fn hand_made_blocks_and_refusals() {
    // Hand-worked: TQ2_0 word 2 is code +1, word 0 is −1, word 1 is 0.
    for (u, q) in [(0u8, -1.0f32), (1, 0.0), (2, 1.0)] {
        let p = import(GGML_TYPE_TQ2_0, &tq2(u, 0xB800), 1, 256).unwrap();
        let mut out = [0f32; 256];
        decode_row(&view(&p, 1, 256), 0, &mut out).unwrap();
        assert!(out.iter().all(|&x| x == -0.5 * q), "u={u}: {:?}", &out[..4]);
    }
    // TQ1_0's all-ones digits are value 0 under any legal scale, +0 included.
    for d in [0x0000u16, 0x3C00, 0x8001] {
        let p = import(GGML_TYPE_TQ1_0, &tq1_zero_codes(d), 1, 256).unwrap();
        let (codes, scales) = row_split::unpack(&view(&p, 1, 256)).unwrap();
        assert!(codes.iter().all(|&q| q == 0));
        assert_eq!(scales, [d, d]);
    }
    let refused = |ty, blocks: &[u8], rows, cols, status: Status, words: &[&str]| {
        let e = import(ty, blocks, rows, cols).unwrap_err();
        assert_eq!(e.status(), status, "{e}");
        for w in words {
            assert!(e.to_string().contains(w), "{e:?} lacks {w:?}");
        }
    };
    // A 2-bit word 3 (value +2) is not ternary: refused, never clamped. Element 200 sits
    // in the second 128-value half, so the t2 group is 1.
    let mut b = tq2(1, 0x3C00);
    b[32 + 8] = (b[32 + 8] & !(3 << 4)) | (3 << 4); // c = 1, l = 2, m = 8 → element 200
    refused(
        GGML_TYPE_TQ2_0,
        &b,
        1,
        256,
        Status::InvalidEncoding,
        &["row 0, block 1", "element 200", "word 3"],
    );
    // Non-finite and −0 scales.
    for (d, what) in [
        (0x7E00u16, "NaN or infinite"),
        (0x7C00, "NaN or infinite"),
        (0xFC00, "NaN or infinite"),
        (0x8000, "−0"),
    ] {
        refused(
            GGML_TYPE_TQ2_0,
            &tq2(2, d),
            1,
            256,
            Status::InvalidEncoding,
            &[what],
        );
        refused(
            GGML_TYPE_TQ1_0,
            &tq1_zero_codes(d),
            1,
            256,
            Status::InvalidEncoding,
            &[what],
        );
    }
    // +0 over a non-zero code (in the second row's first block).
    let two = [tq2(1, 0x3C00), tq2(2, 0x0000)].concat();
    let e = import(GGML_TYPE_TQ2_0, &two, 2, 256).unwrap_err();
    assert_eq!(e.status(), Status::InvalidEncoding);
    assert!(
        e.to_string().contains("row 1, block 0") && e.to_string().contains("+0"),
        "{e}"
    );
    // The message says what such a block is: a d that underflowed binary16, whose values
    // ggml reads as ±0, which t2 cannot hold.
    assert!(
        e.to_string().contains(
            "TQ2_0 block 0 of the row: scale d = +0 with non-zero codes (a block whose values \
             underflow binary16; ggml reads them as ±0"
        ),
        "{e}"
    );
    // Shapes: K must be whole 256-value blocks; nothing is requantized to fit.
    for cols in [128, 384] {
        refused(
            GGML_TYPE_TQ2_0,
            &tq2(1, 0x3C00),
            1,
            cols,
            Status::BadShape,
            &["multiple of 256"],
        );
    }
    for (rows, cols) in [(0, 256), (1, 0)] {
        let sizes = [0usize; 3].map(|_| vec![0u8; 0]);
        let [mut a, mut b, mut c] = sizes;
        let e = import_gguf_ternary(GGML_TYPE_TQ2_0, &[], rows, cols, [&mut a, &mut b, &mut c])
            .unwrap_err();
        assert_eq!(e.status(), Status::BadShape, "{e}");
    }
    refused(
        GGML_TYPE_TQ2_0,
        &tq2(1, 0x3C00),
        0,
        256,
        Status::BadShape,
        &[],
    );
    // The blocks must be exactly rows × cols / 256 blocks.
    refused(
        GGML_TYPE_TQ2_0,
        &tq2(1, 0x3C00)[..65],
        1,
        256,
        Status::SizeMismatch,
        &["blocks"],
    );
    refused(
        GGML_TYPE_TQ1_0,
        &tq2(1, 0x3C00),
        1,
        256,
        Status::SizeMismatch,
        &["blocks"],
    );
    // Only TQ1_0 and TQ2_0.
    refused(
        8,
        &tq2(1, 0x3C00),
        1,
        256,
        Status::UnregisteredType,
        &[
            "ggml type Q8_0 (8) is not ternary",
            "TQ1_0 (34) and TQ2_0 (35)",
        ],
    );
    // A plane of the wrong length.
    let sizes = plane_sizes(T2, Layout::RowSplitK128_V1, 1, 256).unwrap();
    let (mut a, mut c) = (vec![0u8; sizes[0] + 1], vec![0u8; sizes[2]]);
    let e = import_gguf_ternary(
        GGML_TYPE_TQ2_0,
        &tq2(1, 0x3C00),
        1,
        256,
        [&mut a, &mut [], &mut c],
    )
    .unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch, "{e}");
}

unsafe extern "C" {
    fn ninfer_import_gguf_ternary(
        ggml_type: u32,
        blocks: *const u8,
        blocks_len: usize,
        rows: u64,
        cols: u64,
        planes: *const MutBytes,
    ) -> u32;
}

#[test]
fn c_entry_point_imports_and_refuses_without_writing() {
    let sizes = plane_sizes(T2, Layout::RowSplitK128_V1, 1, 256).unwrap();
    for (block, status) in [
        (tq2(2, 0x3C00), 0u32),
        (tq2(3, 0x3C00), Status::InvalidEncoding as u32),
    ] {
        let (mut codes, mut scales) = (vec![0xA5u8; sizes[0]], vec![0xA5u8; sizes[2]]);
        let planes = [
            MutBytes {
                ptr: codes.as_mut_ptr(),
                len: codes.len(),
            },
            MutBytes {
                ptr: std::ptr::null_mut(),
                len: 0,
            },
            MutBytes {
                ptr: scales.as_mut_ptr(),
                len: scales.len(),
            },
        ];
        // SAFETY: every pointer is valid for its length for the duration of the call.
        let st = unsafe {
            ninfer_import_gguf_ternary(
                GGML_TYPE_TQ2_0,
                block.as_ptr(),
                block.len(),
                1,
                256,
                planes.as_ptr(),
            )
        };
        assert_eq!(st, status);
        if status == 0 {
            // Code +1 is the 2-bit two's-complement word 01; the scale word 0x3C00 twice.
            assert_eq!(&scales, &[0x00, 0x3C, 0x00, 0x3C]);
            let p = [codes.clone(), vec![], scales.clone()];
            let mut out = [0f32; 256];
            decode_row(&view(&p, 1, 256), 0, &mut out).unwrap();
            assert!(out.iter().all(|&x| x == 1.0));
        } else {
            assert!(
                codes.iter().chain(&scales).all(|&b| b == 0xA5),
                "written on error"
            );
        }
        // SAFETY: NULL pointers are refused before any use.
        let st = unsafe {
            ninfer_import_gguf_ternary(
                GGML_TYPE_TQ2_0,
                block.as_ptr(),
                block.len(),
                1,
                256,
                std::ptr::null(),
            )
        };
        assert_eq!(st, Status::NullPointer as u32);
        let st = unsafe {
            ninfer_import_gguf_ternary(
                GGML_TYPE_TQ2_0,
                std::ptr::null(),
                66,
                1,
                256,
                planes.as_ptr(),
            )
        };
        assert_eq!(st, Status::NullPointer as u32);
    }
}
