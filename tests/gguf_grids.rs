//! The i-quant tables of `ninfer::formats::gguf::grids` (generated from PyPI `gguf`'s copy)
//! against ggml's own compiled tables: `tests/data/gguf/ggml_tables.bin`, read out of PyPI
//! `libgguf`'s native module by `scripts/fixtures/gguf_grids.py --fixture`. Plus properties
//! that follow from the tables' definitions, checked by hand.

use ninfer::formats::gguf::grids::*;
use std::collections::HashMap;
use std::path::PathBuf;

fn ggml_tables() -> HashMap<String, Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gguf");
    let blob = std::fs::read(dir.join("ggml_tables.bin"))
        .expect("ggml_tables.bin missing: run scripts/fixtures/gguf_grids.py --fixture");
    let index = std::fs::read_to_string(dir.join("ggml_tables.txt")).expect("ggml_tables.txt");
    let mut out = HashMap::new();
    for line in index
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (off, len): (usize, usize) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        out.insert(f[0].to_string(), blob[off..off + len].to_vec());
    }
    out
}

fn bytes_u64(t: &[u64]) -> Vec<u8> {
    t.iter().flat_map(|w| w.to_le_bytes()).collect()
}
fn bytes_u32(t: &[u32]) -> Vec<u8> {
    t.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn tables_equal_ggml_compiled_tables() {
    let g = ggml_tables();
    let ours: Vec<(&str, Vec<u8>)> = vec![
        ("IQ2XXS_GRID", bytes_u64(&IQ2XXS_GRID)),
        ("IQ2XS_GRID", bytes_u64(&IQ2XS_GRID)),
        ("IQ2S_GRID", bytes_u64(&IQ2S_GRID)),
        ("IQ3XXS_GRID", bytes_u32(&IQ3XXS_GRID)),
        ("IQ3S_GRID", bytes_u32(&IQ3S_GRID)),
        ("IQ1S_GRID", bytes_u64(&IQ1S_GRID)),
        ("KSIGNS_IQ2XS", KSIGNS_IQ2XS.to_vec()),
        ("KMASK_IQ2XS", KMASK_IQ2XS.to_vec()),
        (
            "KVALUES_IQ4NL",
            KVALUES_IQ4NL.iter().map(|&v| v as u8).collect(),
        ),
    ];
    let mut total = 0;
    for (name, bytes) in &ours {
        let want = g
            .get(*name)
            .unwrap_or_else(|| panic!("{name} missing from ggml_tables"));
        assert_eq!(bytes.len(), want.len(), "{name}: length");
        for (i, (a, b)) in bytes.iter().zip(want).enumerate() {
            assert_eq!(a, b, "{name}: byte {i}");
        }
        println!("{name:>14}: {} bytes equal", bytes.len());
        total += bytes.len();
    }
    assert_eq!(ours.len(), g.len(), "every extracted table is compared");
    println!("total: {total} bytes");
}

#[test]
fn tables_have_their_defining_properties() {
    // ksigns: 7 stored bits + an 8th making the parity even.
    for (i, &s) in KSIGNS_IQ2XS.iter().enumerate() {
        assert_eq!(s & 127, i as u8);
        assert_eq!(s.count_ones() % 2, 0, "ksigns[{i}]");
    }
    assert_eq!(KMASK_IQ2XS, [1, 2, 4, 8, 16, 32, 64, 128]);
    assert_eq!(
        KVALUES_IQ4NL,
        [
            -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113
        ]
    );
    assert_eq!(IQ1S_DELTA, 0.125);
    assert_eq!(IQ1M_DELTA, 0.125);
    // Grid bytes come from each grid's small alphabet, and grid points are distinct.
    let check = |name: &str, words: Vec<u64>, width: usize, alphabet: &[u8]| {
        let mut seen = std::collections::HashSet::new();
        for w in &words {
            for j in 0..width {
                let b = (w >> (8 * j)) as u8;
                assert!(alphabet.contains(&b), "{name}: byte {b:#x}");
            }
            assert!(seen.insert(*w), "{name}: duplicate point {w:#x}");
        }
    };
    let iq2 = [0x08, 0x19, 0x2b];
    check("iq2xxs", IQ2XXS_GRID.to_vec(), 8, &iq2);
    check("iq2xs", IQ2XS_GRID.to_vec(), 8, &iq2);
    check("iq2s", IQ2S_GRID.to_vec(), 8, &iq2);
    let iq3xxs = [0x04, 0x0c, 0x14, 0x1c, 0x24, 0x2c, 0x34, 0x3e];
    check(
        "iq3xxs",
        IQ3XXS_GRID.iter().map(|&w| w as u64).collect(),
        4,
        &iq3xxs,
    );
    let iq3s = [1, 3, 5, 7, 9, 11, 13, 15];
    check(
        "iq3s",
        IQ3S_GRID.iter().map(|&w| w as u64).collect(),
        4,
        &iq3s,
    );
    check("iq1s", IQ1S_GRID.to_vec(), 8, &[0xff, 0x00, 0x01]);
}
