//! E4M3FN words against PyPI `ml_dtypes` (fixtures from scripts/fixtures/fp8_words.py):
//! all 256 decoded values and RNE encoding under both saturation policies.

use ninfer::words::e4m3fn::{self, Saturation};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/fp8/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!("fixture {path} missing ({e}): run scripts/fixtures/fp8_words.py")
    })
}

#[test]
fn decode_all_256_words() {
    let data = fixture("e4m3fn_decode.bin");
    assert_eq!(data.len(), 256 * 4);
    let mut nan = 0;
    for (w, b) in data.chunks_exact(4).enumerate() {
        let want = f32::from_bits(u32::from_le_bytes(b.try_into().unwrap()));
        let got = e4m3fn::decode(w as u8);
        if want.is_nan() {
            // Only the class and sign of a NaN word are defined.
            assert!(got.is_nan() && got.is_sign_negative() == want.is_sign_negative());
            nan += 1;
        } else {
            assert_eq!(got.to_bits(), want.to_bits(), "word {w:#04x}");
        }
    }
    assert_eq!(nan, 2);
    println!("e4m3fn decode: 256 words compared by bits (2 NaN by class and sign)");
}

#[test]
fn encode_matches_ml_dtypes() {
    let data = fixture("e4m3fn_encode.bin");
    assert_eq!(data.len() % 6, 0);
    let n = data.len() / 6;
    assert!(n > 5000);
    for r in data.chunks_exact(6) {
        let x = f32::from_bits(u32::from_le_bytes(r[..4].try_into().unwrap()));
        assert_eq!(
            e4m3fn::encode(x, Saturation::Finite),
            r[4],
            "satfinite {x:e} ({:#010x})",
            x.to_bits()
        );
        assert_eq!(
            e4m3fn::encode(x, Saturation::NonSaturating),
            r[5],
            "non-saturating {x:e} ({:#010x})",
            x.to_bits()
        );
    }
    println!("e4m3fn encode: {n} inputs x 2 policies compared by word");
}
