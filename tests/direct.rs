//! §3.1 direct words against independent oracles: the explicit fp32 → bf16 RNE conversion
//! against ml_dtypes (fixture from scripts/fixtures/grouped_direct_fixtures.py), and exact
//! little-endian round trips through the public API.

use ninfer::formats::direct::{self, Words};
use ninfer::{Format, Status, WeightView, decode::decode_row};

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/grouped")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("missing fixture {}: {e}", p.display()))
}

#[test]
fn fp32_to_bf16_rne_matches_ml_dtypes() {
    let d = fixture("direct_fp32_to_bf16.bin");
    assert_eq!(&d[..4], b"NDB1");
    let n = u32::from_le_bytes(d[4..8].try_into().unwrap()) as usize;
    assert!(n > 3000);
    let mut compared = 0;
    for rec in d[8..].chunks_exact(6).take(n) {
        let w = u32::from_le_bytes(rec[..4].try_into().unwrap());
        let b = u16::from_le_bytes(rec[4..6].try_into().unwrap());
        assert_eq!(direct::fp32_to_bf16_rne(w), b, "fp32 word {w:#010x}");
        compared += 1;
    }
    assert_eq!(compared, n);
    println!("fp32→bf16 RNE: {compared} words compared bit for bit with ml_dtypes");
}

#[test]
fn fp32_words_round_trip_through_a_view() {
    // Every NaN class, both zeros, subnormals, the extrema.
    let words: Vec<u32> = vec![
        0,
        0x8000_0000,
        1,
        0x8000_0001,
        0x007f_ffff,
        0x0080_0000,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7f80_0001,
        0x7fbf_ffff,
        0x7fc0_0000,
        0xffc0_0001,
        0xffff_ffff,
        0x3eaa_aaab,
    ];
    let mut bytes = vec![0u8; words.len() * 4];
    direct::encode_le(Format::Fp32, Words::Fp32(&words), &mut bytes).unwrap();
    for (i, w) in words.iter().enumerate() {
        assert_eq!(bytes[4 * i..4 * i + 4], w.to_le_bytes());
    }
    let view = WeightView::single(Format::Fp32, 2, 8, &bytes).unwrap();
    let mut out = [0f32; 8];
    for r in 0..2 {
        decode_row(&view, r, &mut out).unwrap();
        for (k, v) in out.iter().enumerate() {
            assert_eq!(v.to_bits(), words[r as usize * 8 + k]);
        }
    }
}

#[test]
fn bf16_all_words_through_a_view() {
    let words: Vec<u16> = (0..=u16::MAX).collect();
    let mut bytes = vec![0u8; words.len() * 2];
    direct::encode_le(Format::Bf16, Words::Bf16(&words), &mut bytes).unwrap();
    let view = WeightView::single(Format::Bf16, 256, 256, &bytes).unwrap();
    let mut out = vec![0f32; 256];
    let mut n = 0;
    for r in 0..256u64 {
        decode_row(&view, r, &mut out).unwrap();
        for (k, v) in out.iter().enumerate() {
            assert_eq!(v.to_bits(), ((r as u32) * 256 + k as u32) << 16);
            n += 1;
        }
    }
    let mut back = vec![0u16; words.len()];
    direct::decode_bf16_words(&bytes, &mut back).unwrap();
    assert_eq!(back, words);
    println!("bf16: {n} words decoded exactly");
}

#[test]
fn int32_words_are_refused_as_f32_but_round_trip_as_words() {
    let words = [i32::MIN, i32::MAX, -1, 0];
    let mut bytes = [0u8; 16];
    direct::encode_le(Format::Int32, Words::Int32(&words), &mut bytes).unwrap();
    let view = WeightView::single(Format::Int32, 1, 4, &bytes).unwrap();
    let mut out = [0f32; 4];
    assert_eq!(
        decode_row(&view, 0, &mut out).unwrap_err().status(),
        Status::Unsupported
    );
    let mut back = [0i32; 4];
    direct::decode_int32_words(&bytes, &mut back).unwrap();
    assert_eq!(back, words);
}
