//! E2M1 words against PyPI `ml_dtypes` (fixtures from scripts/fixtures/fp8_words.py): all
//! 16 decoded values and RNE saturating encoding (NaN inputs excluded: see words/e2m1.rs).

use ninfer::words::e2m1;

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/data/nvfp4/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!("fixture {path} missing ({e}): run scripts/fixtures/fp8_words.py")
    })
}

#[test]
fn decode_all_16_words() {
    let data = fixture("e2m1_decode.bin");
    assert_eq!(data.len(), 16 * 4);
    for (w, b) in data.chunks_exact(4).enumerate() {
        let want = u32::from_le_bytes(b.try_into().unwrap());
        assert_eq!(e2m1::decode(w as u8).to_bits(), want, "word {w:#x}");
    }
    println!("e2m1 decode: 16 words compared by bits");
}

#[test]
fn encode_matches_ml_dtypes() {
    let data = fixture("e2m1_encode.bin");
    assert_eq!(data.len() % 5, 0);
    let n = data.len() / 5;
    assert!(n > 2000);
    for r in data.chunks_exact(5) {
        let x = f32::from_bits(u32::from_le_bytes(r[..4].try_into().unwrap()));
        assert_eq!(e2m1::encode(x), r[4], "{x:e} ({:#010x})", x.to_bits());
    }
    println!("e2m1 encode: {n} inputs compared by word");
}
