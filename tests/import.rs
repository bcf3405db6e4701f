//! import_encoded: GGUF Q2_0 → q2_g64_fp16 and GGUF Q8_0 → q8_g32_fp16.
//!
//! Oracles: the gguf fixtures' expected words (gguf-py for Q8_0, the spec equation
//! (u − 1)·d in numpy for Q2_0) must come back bit for bit from the imported native view;
//! the native planes' logical codes and scales must equal the block fields read plainly
//! here; and the native rules (spec §3.2, §5) are re-stated plainly to predict refusals.

mod common;
use common::{Bytes, MutBytes, View};

use ninfer::decode::decode_row;
use ninfer::formats::import::import_gguf;
use ninfer::layouts::{plane_sizes, row_split};
use ninfer::{Format, Layout, Status, WeightView};
use std::path::PathBuf;

fn fixture(name: &str, rows: usize, cols: usize, format: Format) -> (Vec<u8>, Vec<u32>) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gguf")
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let info = format.info();
    let nb = rows * cols / info.block_values as usize * info.block_bytes as usize;
    let expected = bytes[nb..]
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect();
    (bytes[..nb].to_vec(), expected)
}

/// The block fields read plainly: (scale word, signed logical codes) per block.
fn fields(format: Format, block: &[u8]) -> (u16, Vec<i8>) {
    let d = u16::from_le_bytes([block[0], block[1]]);
    let codes = match format {
        Format::GgufQ8_0 => block[2..34].iter().map(|&b| b as i8).collect(),
        _ => (0..64)
            .map(|j| ((block[2 + j / 4] >> (2 * (j % 4))) & 3) as i8 - 1)
            .collect(),
    };
    (d, codes)
}

/// Spec §5 (Q8: [-127, 127], scale +0 or finite non-zero, +0 ⇒ zero codes) and §3.2 (Q2:
/// any finite scale, any code), written out plainly.
fn legal(format: Format, d: u16, codes: &[i8]) -> bool {
    let finite = d & 0x7C00 != 0x7C00;
    match format {
        Format::GgufQ8_0 => {
            finite
                && d != 0x8000
                && codes.iter().all(|&q| q != -128)
                && (d != 0 || codes.iter().all(|&q| q == 0))
        }
        _ => finite,
    }
}

fn import(
    source: Format,
    rows: usize,
    cols: usize,
    blocks: &[u8],
) -> Result<[Vec<u8>; 3], ninfer::Error> {
    let target = ninfer::formats::import::native_target(source).unwrap();
    let sizes = plane_sizes(target, Layout::RowSplitK128_V1, rows, cols).unwrap();
    let mut p = sizes.map(|n| vec![0xA5u8; n]);
    let view = WeightView::single(source, rows, cols, blocks).unwrap();
    let [a, b, c] = &mut p;
    import_gguf(&view, target, [a, b, c])?;
    Ok(p)
}

fn check_fixture(source: Format, name: &str, rows: usize, cols: usize) -> (usize, usize) {
    let (blocks, expected) = fixture(name, rows, cols, source);
    let info = source.info();
    let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
    let target = ninfer::formats::import::native_target(source).unwrap();
    let mut compared = 0;
    let mut refused = 0;
    // Row by row, so that a refused row (random blocks may break Q8's rules) does not hide
    // the others.
    for r in 0..rows {
        let row_blocks = &blocks[r * cols / bv * bb..(r + 1) * cols / bv * bb];
        let all_legal = row_blocks.chunks_exact(bb).all(|b| {
            let (d, q) = fields(source, b);
            legal(source, d, &q)
        });
        match import(source, 1, cols, row_blocks) {
            Err(e) => {
                assert!(!all_legal, "{name} row {r}: legal row refused: {e}");
                assert_eq!(e.status(), Status::InvalidEncoding, "{name} row {r}: {e}");
                refused += 1;
            }
            Ok(planes) => {
                assert!(all_legal, "{name} row {r}: illegal row imported");
                let view = WeightView::new(
                    target,
                    Layout::RowSplitK128_V1,
                    1,
                    cols,
                    [&planes[0], &planes[1], &planes[2]],
                )
                .unwrap();
                let mut out = vec![0f32; cols];
                decode_row(&view, 0, &mut out).unwrap();
                for (k, v) in out.iter().enumerate() {
                    assert_eq!(
                        v.to_bits(),
                        expected[r * cols + k],
                        "{name} row {r} col {k}"
                    );
                }
                compared += cols;
                let (codes, scales) = row_split::unpack(&view).unwrap();
                for (b, block) in row_blocks.chunks_exact(bb).enumerate() {
                    let (d, q) = fields(source, block);
                    assert_eq!(scales[b], d, "{name} row {r} block {b}: scale word");
                    assert_eq!(
                        &codes[b * bv..(b + 1) * bv],
                        &q[..],
                        "{name} row {r} block {b}: codes"
                    );
                }
            }
        }
    }
    println!("{name}: {compared} values compared bit for bit, {refused} rows refused");
    (compared, refused)
}

#[test]
fn q8_0_imports_exactly() {
    let (n, refused) = check_fixture(Format::GgufQ8_0, "gguf_q8_0_real.bin", 4, 512);
    assert_eq!((n, refused), (4 * 512, 0));
    // Random blocks mostly break Q8's rules (a -128 byte, a -0 or non-finite d): every
    // refusal was predicted above. Made legal block by block, they import and decode to
    // the spec's q · d (§6.2) computed here.
    let (mut blocks, _) = fixture("gguf_q8_0_random.bin", 8, 256, Format::GgufQ8_0);
    for b in blocks.chunks_exact_mut(34) {
        let d = u16::from_le_bytes([b[0], b[1]]);
        if d & 0x7C00 == 0x7C00 || d == 0x8000 {
            b[..2].copy_from_slice(&0x3555u16.to_le_bytes());
        }
        let zero = u16::from_le_bytes([b[0], b[1]]) == 0;
        for q in &mut b[2..] {
            if *q == 0x80 || zero {
                *q = if zero { 0 } else { 0x81 };
            }
        }
    }
    let planes = import(Format::GgufQ8_0, 8, 256, &blocks).unwrap();
    let view = WeightView::new(
        Format::Q8_G32Fp16,
        Layout::RowSplitK128_V1,
        8,
        256,
        [&planes[0], &planes[1], &planes[2]],
    )
    .unwrap();
    let mut out = vec![0f32; 256];
    for r in 0..8 {
        decode_row(&view, r, &mut out).unwrap();
        for (k, v) in out.iter().enumerate() {
            let b = &blocks[(r as usize * 8 + k / 32) * 34..];
            let d = half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
            assert_eq!(v.to_bits(), (d * (b[2 + k % 32] as i8) as f32).to_bits());
        }
    }
}

#[test]
fn q2_0_imports_exactly() {
    let (n, refused) = check_fixture(Format::GgufQ2_0, "gguf_q2_0_real.bin", 5, 512);
    assert_eq!((n, refused), (5 * 512, 0));
    let (n, refused) = check_fixture(Format::GgufQ2_0, "gguf_q2_0_random.bin", 8, 256);
    assert_eq!((n, refused), (8 * 256, 0));
}

fn q8_block(d: u16, codes: [i8; 32]) -> Vec<u8> {
    let mut b = d.to_le_bytes().to_vec();
    b.extend(codes.iter().map(|&q| q as u8));
    b
}

#[test]
fn q8_0_blocks_breaking_native_rules_are_refused_with_row_and_block() {
    let good = q8_block(0x3C00, [3; 32]);
    let mut bad_code = [5i8; 32];
    bad_code[7] = -128;
    for (bad, why) in [
        (q8_block(0x3C00, bad_code), "code -128"),
        (q8_block(0x8000, [1; 32]), "negative zero scale"),
        (q8_block(0x8000, [0; 32]), "negative zero scale, zero codes"),
        (q8_block(0x7C00, [1; 32]), "infinite scale"),
        (q8_block(0x7E01, [1; 32]), "NaN scale"),
        (
            q8_block(
                0x0000,
                [
                    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                    0, 0, 0, 0, 0, 0,
                ],
            ),
            "+0 scale, non-zero code",
        ),
    ] {
        // Rows 0 and 1, two blocks each; the bad block is row 1, block 1.
        let blocks = [good.clone(), good.clone(), good.clone(), bad].concat();
        let e = import(Format::GgufQ8_0, 2, 64, &blocks).unwrap_err();
        assert_eq!(e.status(), Status::InvalidEncoding, "{why}: {e}");
        assert!(e.to_string().contains("row 1, block 1"), "{why}: {e}");
    }
    // Legal edge cases import: +0 scale with zero codes, negative and subnormal scales, ±127.
    let mut edge = [0i8; 32];
    edge[0] = 127;
    edge[1] = -127;
    let blocks = [
        q8_block(0x0000, [0; 32]),
        q8_block(0x8001, edge),
        q8_block(0x0001, edge),
        q8_block(0xFBFF, edge),
    ]
    .concat();
    import(Format::GgufQ8_0, 2, 64, &blocks).unwrap();
}

#[test]
fn q2_0_keeps_every_finite_scale_and_code() {
    // -0 and +0 scales with non-zero codes are legal Q2 (spec §3.2); Inf and NaN are not.
    let mk = |d: u16| {
        let mut b = d.to_le_bytes().to_vec();
        b.extend((0..16).map(|i| (i * 37 % 256) as u8));
        b
    };
    let planes = import(Format::GgufQ2_0, 1, 128, &[mk(0x8000), mk(0x0000)].concat()).unwrap();
    assert_eq!(
        &planes[2][..4],
        &[0x00, 0x80, 0x00, 0x00],
        "scale words moved unchanged"
    );
    for d in [0x7C00u16, 0xFC00, 0x7E00] {
        let e = import(Format::GgufQ2_0, 1, 128, &[mk(0x3C00), mk(d)].concat()).unwrap_err();
        assert_eq!(e.status(), Status::InvalidEncoding);
        assert!(e.to_string().contains("row 0, block 1"), "{e}");
    }
}

#[test]
fn only_the_two_exact_imports_exist_and_planes_are_checked() {
    let blocks = q8_block(0x3C00, [1; 32]);
    let view = WeightView::single(Format::GgufQ8_0, 1, 32, &blocks).unwrap();
    let sizes = plane_sizes(Format::Q8_G32Fp16, Layout::RowSplitK128_V1, 1, 32).unwrap();
    let mut p = sizes.map(|n| vec![0u8; n]);
    let [a, b, c] = &mut p;
    for target in [
        Format::Q2_G64Fp16,
        Format::Q4_G64Fp16,
        Format::GgufQ8_0,
        Format::Fp32,
    ] {
        let e = import_gguf(&view, target, [a, b, c]).unwrap_err();
        assert_eq!(e.status(), Status::Unsupported, "{target}");
    }
    let mut short = vec![0u8; sizes[0] - 1];
    let e = import_gguf(&view, Format::Q8_G32Fp16, [&mut short, b, c]).unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
    let q4 = vec![0u8; 18];
    let v4 = WeightView::single(Format::GgufQ4_0, 1, 32, &q4).unwrap();
    assert_eq!(
        import_gguf(&v4, Format::Q4_G64Fp16, [a, b, c])
            .unwrap_err()
            .status(),
        Status::Unsupported
    );
}

unsafe extern "C" {
    fn ninfer_import_gguf(view: *const View, target: u32, planes: *const MutBytes) -> u32;
}

#[test]
fn c_entry_point_imports_and_refuses_without_writing() {
    let none = || Bytes {
        ptr: std::ptr::null(),
        len: 0,
    };
    let mut bad = [1i8; 32];
    bad[0] = -128;
    for (block, status) in [
        (q8_block(0x3C00, [2; 32]), 0u32),
        (q8_block(0x3C00, bad), Status::InvalidEncoding as u32),
    ] {
        let view = View {
            format: Format::GgufQ8_0 as u32,
            layout: Layout::GgufBlocksV1 as u32,
            rows: 1,
            cols: 32,
            planes: [
                Bytes {
                    ptr: block.as_ptr(),
                    len: block.len(),
                },
                none(),
                none(),
            ],
        };
        let sizes = plane_sizes(Format::Q8_G32Fp16, Layout::RowSplitK128_V1, 1, 32).unwrap();
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
        let st = unsafe { ninfer_import_gguf(&view, Format::Q8_G32Fp16 as u32, planes.as_ptr()) };
        assert_eq!(st, status);
        if status == 0 {
            assert_eq!(&codes[..32], &[2u8; 32]);
            assert_eq!(&scales[..2], &[0x00, 0x3C]);
        } else {
            assert!(
                codes.iter().chain(&scales).all(|&b| b == 0xA5),
                "written on error"
            );
        }
        // SAFETY: NULL planes pointer is refused before any use.
        let st = unsafe { ninfer_import_gguf(&view, Format::Q8_G32Fp16 as u32, std::ptr::null()) };
        assert_eq!(st, Status::NullPointer as u32);
    }
}
