//! GGUF row decoding against independent oracles, bit for bit.
//!
//! Fixtures: `tests/data/gguf/` written by `scripts/fixtures/gguf_fixtures.py` (libgguf-quantized
//! all-MiniLM-L6-v2 rows and random blocks with finite fp16 fields; expected words from
//! PyPI `gguf`'s dequantizers, Q2_0 from its equation in numpy). Every registered gguf_*
//! format must have both sets: a missing fixture fails the test.

use ninfer::decode::decode_row;
use ninfer::{Category, Format, Isa, Status, WeightView};
use std::collections::BTreeMap;
use std::path::PathBuf;

struct Fixture {
    format: Format,
    set: String,
    rows: usize,
    cols: usize,
    blocks: Vec<u8>,
    expected: Vec<u32>,
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gguf")
}

fn load_fixtures() -> Vec<Fixture> {
    let dir = data_dir();
    let index = std::fs::read_to_string(dir.join("index.txt"))
        .expect("tests/data/gguf/index.txt missing: run scripts/fixtures/gguf_fixtures.py");
    let mut out = Vec::new();
    for line in index.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f.len(), 5, "bad index line {line:?}");
        let format = Format::from_name(f[0]).expect("fixture names a registered format");
        let rows: usize = f[2].parse().unwrap();
        let cols: usize = f[3].parse().unwrap();
        let bytes = std::fs::read(dir.join(f[4])).unwrap_or_else(|e| panic!("{}: {e}", f[4]));
        let info = format.info();
        let nblocks = rows * cols / info.block_values as usize;
        let nb = nblocks * info.block_bytes as usize;
        assert_eq!(bytes.len(), nb + rows * cols * 4, "{}: file size", f[4]);
        let expected = bytes[nb..]
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect();
        out.push(Fixture {
            format,
            set: f[1].to_string(),
            rows,
            cols,
            blocks: bytes[..nb].to_vec(),
            expected,
        });
    }
    out
}

fn gguf_formats() -> Vec<Format> {
    Format::all()
        .filter(|f| f.info().category == Category::GgufBlock)
        .collect()
}

/// Decodes every fixture row through `WeightView` + `decode_row` and compares bit patterns.
#[test]
fn decode_matches_oracle_bit_for_bit() {
    let fixtures = load_fixtures();
    let mut counts: BTreeMap<(&str, String), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for fx in &fixtures {
        let view = WeightView::single(fx.format, fx.rows, fx.cols, &fx.blocks).unwrap();
        let mut row = vec![0f32; fx.cols];
        for r in 0..fx.rows {
            decode_row(&view, r as u64, &mut row)
                .unwrap_or_else(|e| panic!("{} {} row {r}: {e}", fx.format, fx.set));
            let exp = &fx.expected[r * fx.cols..(r + 1) * fx.cols];
            for (c, (got, &want)) in row.iter().zip(exp).enumerate() {
                if got.to_bits() != want {
                    failures.push(format!(
                        "{} {} row {r} col {c}: got {:#010x} ({}), want {want:#010x} ({})",
                        fx.format,
                        fx.set,
                        got.to_bits(),
                        got,
                        f32::from_bits(want)
                    ));
                }
            }
            *counts
                .entry((fx.format.name(), fx.set.clone()))
                .or_default() += fx.cols;
        }
    }
    for ((name, set), n) in &counts {
        println!("{name:>14} {set:>6}: {n} values compared");
    }
    println!("total: {} values", counts.values().sum::<usize>());
    for f in gguf_formats() {
        for set in ["real", "random"] {
            assert!(
                counts.contains_key(&(f.name(), set.to_string())),
                "fixture missing for {f} {set}"
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches, first: {:#?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
}

/// Every gguf_* format now decodes.
#[test]
fn every_gguf_format_is_decodable() {
    for f in gguf_formats() {
        assert!(ninfer::formats::gguf::is_decodable(f), "{f}");
    }
}

#[test]
fn bad_shapes_and_sizes_are_refused() {
    let bytes = vec![0u8; 18 * 4];
    // K not a multiple of the block's values.
    let e = WeightView::single(Format::GgufQ4_0, 2, 48, &bytes).unwrap_err();
    assert_eq!(e.status(), Status::BadShape);
    // Short payload.
    let e = WeightView::single(Format::GgufQ4_0, 2, 64, &bytes[..71]).unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
    // Long payload.
    let long = vec![0u8; 73];
    let e = WeightView::single(Format::GgufQ4_0, 2, 64, &long).unwrap_err();
    assert_eq!(e.status(), Status::SizeMismatch);
    // rows × row bytes overflows.
    let e = WeightView::single(Format::GgufQ4_0, usize::MAX / 2, 64, &bytes).unwrap_err();
    assert_eq!(e.status(), Status::Overflow);
    // Row out of range and a short output row.
    let v = WeightView::single(Format::GgufQ4_0, 2, 64, &bytes).unwrap();
    let mut out = vec![0f32; 64];
    assert_eq!(
        decode_row(&v, 2, &mut out).unwrap_err().status(),
        Status::RowOutOfRange
    );
    assert_eq!(
        decode_row(&v, 0, &mut out[..63]).unwrap_err().status(),
        Status::BufferTooSmall
    );
}

/// The tiers this machine runs; each one it lacks is named on stderr (skipped visibly).
fn tested_tiers() -> Vec<Isa> {
    for isa in Isa::ALL.into_iter().filter(|i| !i.available()) {
        eprintln!(
            "note: no {} on this machine, its tier is not tested",
            isa.name()
        );
    }
    Isa::tiers().collect()
}

/// Every tier this machine runs gives the oracle's bits on every fixture, whole payload at
/// once.
#[test]
fn every_tier_matches_oracle() {
    use ninfer::formats::gguf::dequantize_with;
    let fixtures = load_fixtures();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let tiers = tested_tiers();
    for &kernel in &tiers {
        for fx in &fixtures {
            let mut out = vec![0f32; fx.rows * fx.cols];
            if let Err(e) = dequantize_with(kernel, fx.format, &fx.blocks, &mut out) {
                panic!("{kernel:?} {}: {e}", fx.format);
            }
            for (i, (got, &want)) in out.iter().zip(&fx.expected).enumerate() {
                assert_eq!(
                    got.to_bits(),
                    want,
                    "{kernel:?} {} {} value {i}",
                    fx.format,
                    fx.set
                );
            }
            *counts
                .entry(format!("{kernel:?} {}", fx.format))
                .or_default() += out.len();
        }
    }
    for (k, n) in &counts {
        println!("{k:>22}: {n} values");
    }
    for isa in tiers {
        for f in gguf_formats() {
            assert!(
                counts.contains_key(&format!("{isa:?} {f}")),
                "no {isa:?} {f}"
            );
        }
    }
    // A tier the machine lacks is refused with a status, never run.
    for isa in Isa::ALL.into_iter().filter(|i| !i.available()) {
        let fx = &fixtures[0];
        let mut out = vec![0f32; fx.rows * fx.cols];
        let e = ninfer::formats::gguf::dequantize_with(isa, fx.format, &fx.blocks, &mut out)
            .unwrap_err();
        assert_eq!(e.status(), Status::Unsupported);
    }
}

/// Every tier agrees with the scalar one bit for bit on random blocks whose scales include
/// NaN, ±Inf, subnormals and zeros (outside the oracle's finite domain, decoding is still
/// a pure function of the bytes and must not depend on the code path).
#[test]
fn every_tier_agrees_on_non_finite_scales() {
    use ninfer::formats::gguf::dequantize_with;
    let tiers = tested_tiers();
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let specials = [
        0x7C00u16, 0xFC00, 0x7E00, 0xFE01, 0x0001, 0x8000, 0x7BFF, 0x3C00,
    ];
    for f in gguf_formats() {
        let info = f.info();
        let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
        // 8-block groups and a tail (the Q8_0 kernels convert 8 scales at a time).
        let nblocks = 67;
        let mut blocks: Vec<u8> = (0..nblocks * bb).map(|_| next() as u8).collect();
        for (i, b) in blocks.chunks_exact_mut(bb).enumerate() {
            // Overwrite every 2-byte-aligned fp16 candidate field with specials sometimes.
            let at = match f {
                Format::GgufQ2_K => 80,
                Format::GgufQ3_K => 108,
                Format::GgufQ6_K => 208,
                Format::GgufIq1M => 48,
                _ => 0,
            };
            let h = specials[i % specials.len()];
            b[at..at + 2].copy_from_slice(&h.to_le_bytes());
        }
        let mut a = vec![0f32; nblocks * bv];
        dequantize_with(Isa::Scalar, f, &blocks, &mut a).unwrap();
        for &isa in &tiers {
            let mut b = vec![0f32; nblocks * bv];
            dequantize_with(isa, f, &blocks, &mut b).unwrap();
            for (i, (x, y)) in a.iter().zip(&b).enumerate() {
                assert_eq!(x.to_bits(), y.to_bits(), "{isa:?} {f} value {i}");
            }
        }
    }
}

/// Row slices and gathers of every fixture decode to exactly the source rows' oracle words
/// (whole rows copied, nothing renormalized), and validate.
#[test]
fn sliced_and_gathered_rows_decode_to_the_source_rows() {
    use ninfer::rows::{copy_rows, gather_rows, rows_bytes};
    let mut compared = 0usize;
    for fx in load_fixtures() {
        let view = WeightView::single(fx.format, fx.rows, fx.cols, &fx.blocks).unwrap();
        ninfer::validate::validate(&view).unwrap();
        let n = fx.rows as u64;
        // Reversed, with a repeat; and the middle rows as a slice.
        let gather: Vec<u64> = (0..n).rev().chain([0, n - 1]).collect();
        let slice = (1u64, n - 2);
        let mut g = vec![0u8; rows_bytes(&view, gather.len()).unwrap()];
        assert_eq!(gather_rows(&view, &gather, &mut g).unwrap(), g.len());
        let mut s = vec![0u8; rows_bytes(&view, slice.1 as usize).unwrap()];
        assert_eq!(copy_rows(&view, slice.0, slice.1, &mut s).unwrap(), s.len());
        let slice_rows: Vec<u64> = (slice.0..slice.0 + slice.1).collect();
        for (payload, source) in [(&g, &gather), (&s, &slice_rows)] {
            let v = WeightView::single(fx.format, source.len(), fx.cols, payload).unwrap();
            ninfer::validate::validate(&v).unwrap();
            let mut row = vec![0f32; fx.cols];
            for (i, &src) in source.iter().enumerate() {
                decode_row(&v, i as u64, &mut row).unwrap();
                let exp = &fx.expected[src as usize * fx.cols..(src as usize + 1) * fx.cols];
                for (c, (got, &want)) in row.iter().zip(exp).enumerate() {
                    assert_eq!(got.to_bits(), want, "{} row {src} col {c}", fx.format);
                }
                compared += fx.cols;
            }
        }
    }
    println!("{compared} values compared through slices and gathers");
}

/// Poisoning any binary16 field of any block (offsets from ggml's block
/// structs, ggml-common.h) is reported at that row and block, and that block's
/// values are indeed non-finite when decoded.
#[test]
fn validate_locates_every_poisoned_scale_field() {
    use ninfer::Location;
    // (format, byte offsets of d/dmin); IQ1_M's scale is spread (handled below).
    let fields: &[(Format, &[usize])] = &[
        (Format::GgufQ8_0, &[0]),
        (Format::GgufQ4_0, &[0]),
        (Format::GgufQ5_0, &[0]),
        (Format::GgufQ2_0, &[0]),
        (Format::GgufQ2_K, &[80, 82]),
        (Format::GgufQ3_K, &[108]),
        (Format::GgufQ4_K, &[0, 2]),
        (Format::GgufQ5_K, &[0, 2]),
        (Format::GgufQ6_K, &[208]),
        (Format::GgufIq2Xxs, &[0]),
        (Format::GgufIq2Xs, &[0]),
        (Format::GgufIq3Xxs, &[0]),
        (Format::GgufIq1S, &[0]),
        (Format::GgufIq4Nl, &[0]),
        (Format::GgufIq3S, &[0]),
        (Format::GgufIq2S, &[0]),
        (Format::GgufIq4Xs, &[0]),
        (Format::GgufIq1M, &[]),
    ];
    assert_eq!(fields.len(), gguf_formats().len());
    let mut checked = 0;
    for fx in load_fixtures().iter().filter(|f| f.set == "real") {
        let info = fx.format.info();
        let (bv, bb) = (info.block_values as usize, info.block_bytes as usize);
        let per_row = fx.cols / bv;
        let (row, blk) = (fx.rows - 1, per_row - 1);
        let at = (row * per_row + blk) * bb;
        let offsets = fields.iter().find(|(f, _)| *f == fx.format).unwrap().1;
        // Each poison: (byte offset within the block, little-endian bytes to OR/write).
        let mut poisons: Vec<Vec<(usize, u8)>> = offsets
            .iter()
            .flat_map(|&o| {
                [
                    vec![(o, 0x00), (o + 1, 0x7C)],
                    vec![(o, 0x01), (o + 1, 0xFE)],
                ]
            })
            .collect();
        if fx.format == Format::GgufIq1M {
            // Super-scale 0x7C00: top nibbles of scales words 2 and 3 = 0xC, 0x7, others 0.
            poisons.push(vec![(49, 0), (51, 0), (53, 0xC0), (55, 0x70)]);
        }
        for poison in poisons {
            let mut p = fx.blocks.clone();
            for &(o, v) in &poison {
                if fx.format == Format::GgufIq1M {
                    p[at + o] = (p[at + o] & 0x0F) | v;
                } else {
                    p[at + o] = v;
                }
            }
            let v = WeightView::single(fx.format, fx.rows, fx.cols, &p).unwrap();
            match ninfer::validate::validate(&v) {
                Err(ninfer::Error::InvalidEncoding { at, .. }) => assert_eq!(
                    at,
                    Location {
                        row: row as u64,
                        block: blk as u64
                    },
                    "{}",
                    fx.format
                ),
                other => panic!("{}: {other:?}", fx.format),
            }
            let mut out = vec![0f32; fx.cols];
            decode_row(&v, row as u64, &mut out).unwrap();
            assert!(
                out[blk * bv..].iter().any(|x| !x.is_finite()),
                "{}: poisoned block decodes finite",
                fx.format
            );
            checked += 1;
        }
    }
    println!("{checked} poisoned fields located");
}
