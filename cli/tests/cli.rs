//! End-to-end checks of the `ninfer` binary on the built-in sample (tests/data/sample.gguf,
//! made by scripts/fixtures/sample_gguf.py from SmolLM2 and all-MiniLM-L6-v2 rows).
//!
//! Exact values on real models are checked against gguf-py by tests/real_models.py; here
//! the commands' behaviour: exit codes, refusals with their status, and F32 data that must
//! come out byte for byte as stored in the file.

#[allow(dead_code)]
#[path = "../src/gguf.rs"]
mod gguf;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ninfer(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("running ninfer")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn sample_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sample.gguf")
}

/// A fresh scratch directory (not the repository, to show the sample is built in).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ninfer-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The line of the per-type table that starts with `key`.
fn type_row<'a>(out: &'a str, key: &str) -> &'a str {
    let table = out.split("\nper type\n").nth(1).expect("per-type table");
    table
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("no per-type row {key:?} in\n{table}"))
}

/// Cells of a table row (columns are separated by at least two spaces).
fn cols(row: &str) -> Vec<&str> {
    row.split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn verify_runs_on_the_built_in_sample_from_any_directory() {
    let dir = scratch("verify");
    let o = ninfer(&["verify"], &dir);
    let out = text(&o);
    assert!(o.status.success(), "verify failed:\n{out}");
    assert!(out.contains("built-in sample"), "{out}");
    assert!(out.contains(" 0 failed (0 invalid encodings);"), "{out}");
    // The sample's Q8_0, Q4_0, Q5_0, Q4_K, Q6_K tensors and the direct words decode; more
    // decode as the library grows, so only these are pinned. Columns: type, tensors, values,
    // non-finite, ms, Mvalues/s, validated, checksums, linear, result.
    for (key, tensors) in [
        ("Q8_0 (gguf_q8_0)", "2"),
        ("Q4_0 (gguf_q4_0)", "1"),
        ("Q5_0 (gguf_q5_0)", "1"),
        ("Q4_K (gguf_q4_k)", "1"),
        ("Q6_K (gguf_q6_k)", "1"),
        ("F32 (fp32)", "3"),
        ("BF16 (bf16)", "1"),
        ("F16 (data)", "1"),
    ] {
        let row = cols(type_row(&out, key));
        assert_eq!(row[0], key);
        assert_eq!(row[1], tensors, "{row:?}");
        assert_eq!(row[3], "0", "non-finite values: {row:?}");
        assert_eq!(row[6], if key == "F16 (data)" { "n/a" } else { "yes" });
        assert_eq!(row[9], "decoded", "{row:?}");
    }
    assert!(type_row(&out, "Q4_1").ends_with("UNREGISTERED_TYPE"));
    assert!(
        out.contains(
            "smollm2.blk.0.attn_q.weight  Q4_1 (unregistered)  UNREGISTERED_TYPE — ggml type Q4_1 (3)"
        ),
        "{out}"
    );
    // Every 2-D weight that decoded has a Σy figure.
    let line = out
        .lines()
        .find(|l| l.starts_with("smollm2.token_embd.weight "))
        .unwrap();
    let sum_y: f64 = line
        .split_whitespace()
        .nth_back(1)
        .unwrap()
        .parse()
        .unwrap();
    assert!(sum_y.is_finite() && sum_y != 0.0, "{line}");
    let brief = text(&ninfer(&["verify", "--brief"], &dir));
    assert!(!brief.contains("smollm2.token_embd.weight "), "{brief}");
    assert!(brief.contains("per type"), "{brief}");
}

#[test]
fn inspect_names_every_tensor_with_its_format() {
    let o = ninfer(&["inspect"], &scratch("inspect"));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("GGUF v3"), "{out}");
    assert!(out.contains("general.license"), "{out}");
    let row = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row {name} in\n{out}"))
            .to_owned()
    };
    let emb = row("smollm2.token_embd.weight");
    for cell in ["Q8_0 (8)", "gguf_q8_0", "[64, 576]", "39,168", "yes"] {
        assert!(emb.contains(cell), "{emb}");
    }
    let f16 = row("minilm.word_embeddings.f16");
    assert!(f16.contains("F16 (no registered format)") && f16.contains("yes (as data)"));
    let q41 = row("smollm2.blk.0.attn_q.weight");
    assert!(q41.contains("Q4_1 (unregistered)") && q41.contains("no (UNREGISTERED_TYPE)"));
    assert!(q41.contains("2,880"), "Q4_1 bytes: {q41}");
    // Type 42 is read from the table and mapped by the registry.
    let q2 = row("minilm.q2_0");
    assert!(q2.contains("Q2_0 (42)") && q2.contains("gguf_q2_0") && q2.contains("[8, 1536]"));
    assert!(out.contains("25 tensors:"), "{out}");
}

#[test]
fn formats_lists_the_registry() {
    let out = text(&ninfer(&["formats"], &scratch("formats")));
    assert!(out.contains("30 formats."), "{out}");
    let q4k = out.lines().find(|l| l.starts_with("gguf_q4_k ")).unwrap();
    for cell in ["256", "144", "4.5", "12 (Q4_K)", "gguf_blocks_v1"] {
        assert!(q4k.contains(cell), "{q4k}");
    }
}

/// Parses a version-1 .npy: (descr, shape, payload).
fn read_npy(bytes: &[u8]) -> (String, String, &[u8]) {
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + len]).unwrap();
    let field = |k: &str| {
        let at = header.find(k).unwrap() + k.len();
        let rest = header[at..].trim_start_matches([':', ' ', '\'']);
        let end = if rest.starts_with('(') {
            rest.find(')').unwrap() + 1
        } else {
            rest.find('\'').unwrap()
        };
        rest[..end].to_owned()
    };
    (field("'descr'"), field("'shape'"), &bytes[start + len..])
}

#[test]
fn decode_writes_f32_npy_and_refuses_unregistered_types() {
    let dir = scratch("decode");
    let sample = sample_path();
    let file = std::fs::read(&sample)
        .expect("tests/data/sample.gguf (run scripts/fixtures/sample_gguf.py)");
    let out = dir.join("f32.npy");
    let o = ninfer(
        &[
            "decode",
            sample.to_str().unwrap(),
            "--tensor",
            "minilm.word_embeddings.f32",
            "--out",
            out.to_str().unwrap(),
        ],
        &dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let npy = std::fs::read(&out).unwrap();
    let (descr, shape, payload) = read_npy(&npy);
    assert_eq!(descr, "<f4");
    // npyz writes the trailing comma of a Python tuple: "(8, 384, )".
    assert_eq!(shape.replace(", )", ")"), "(8, 384)");
    assert_eq!(payload.len(), 8 * 384 * 4);
    // F32 words are copied: the payload is the tensor's bytes in the file, verbatim.
    assert!(
        file.windows(payload.len()).any(|w| w == payload),
        "decoded F32 payload not found verbatim in the file"
    );

    let q8 = dir.join("q8.npy");
    let o = ninfer(
        &[
            "decode",
            sample.to_str().unwrap(),
            "--tensor",
            "smollm2.token_embd.weight",
            "--out",
            q8.to_str().unwrap(),
        ],
        &dir,
    );
    assert!(o.status.success());
    let npy = std::fs::read(&q8).unwrap();
    let (_, shape, payload) = read_npy(&npy);
    assert_eq!(
        (shape.replace(", )", ")").as_str(), payload.len()),
        ("(64, 576)", 64 * 576 * 4)
    );

    let o = ninfer(
        &[
            "decode",
            sample.to_str().unwrap(),
            "--tensor",
            "smollm2.blk.0.attn_q.weight",
            "--out",
            dir.join("q41.npy").to_str().unwrap(),
        ],
        &dir,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("UNREGISTERED_TYPE") && err.contains("Q4_1"),
        "{err}"
    );
    assert!(!dir.join("q41.npy").exists(), "no output on refusal");

    let o = ninfer(
        &[
            "decode",
            sample.to_str().unwrap(),
            "--tensor",
            "no.such.tensor",
            "--out",
            dir.join("x.npy").to_str().unwrap(),
        ],
        &dir,
    );
    assert!(!o.status.success());
}

#[test]
fn dump_streams_headers_and_words() {
    let dir = scratch("dump");
    let sample = sample_path();
    let o = ninfer(
        &[
            "dump",
            sample.to_str().unwrap(),
            "--tensor",
            "minilm.embeddings.LayerNorm.weight",
            "--tensor",
            "smollm2.blk.0.attn_q.weight",
        ],
        &dir,
    );
    assert!(o.status.success());
    // Tensors come in file order: the Q4_1 one first, refused, with no words.
    let s = &o.stdout;
    let nl = s.iter().position(|&b| b == b'\n').unwrap();
    let head = std::str::from_utf8(&s[..nl]).unwrap();
    assert!(
        head.starts_with("smollm2.blk.0.attn_q.weight\tQ4_1\tUNREGISTERED_TYPE\t0\t"),
        "{head}"
    );
    let rest = &s[nl + 1..];
    let nl = rest.iter().position(|&b| b == b'\n').unwrap();
    let head = std::str::from_utf8(&rest[..nl]).unwrap();
    assert_eq!(head, "minilm.embeddings.LayerNorm.weight\tF32\tOK\t384\t");
    let words = &rest[nl + 1..];
    assert_eq!(words.len(), 384 * 4);
    // F32 words come out as stored.
    let file = std::fs::read(sample_path()).unwrap();
    assert!(file.windows(words.len()).any(|w| w == words));
}

#[test]
fn malformed_files_fail_with_a_message_and_a_non_zero_status() {
    let dir = scratch("malformed");
    let file = std::fs::read(sample_path()).unwrap();
    // Truncated data: the last tensor runs past the end; verify reports it and fails.
    let cut = dir.join("cut.gguf");
    std::fs::write(&cut, &file[..file.len() - 1000]).unwrap();
    let o = ninfer(&["verify", cut.to_str().unwrap()], &dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("FAILED (1)") && out.contains("minilm.q2_0"),
        "{out}"
    );
    assert!(out.contains("truncated"), "{out}");
    // Not GGUF at all.
    let junk = dir.join("junk.gguf");
    std::fs::write(&junk, b"definitely not a gguf file").unwrap();
    let o = ninfer(&["inspect", junk.to_str().unwrap()], &dir);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a GGUF file"));
    // Missing file.
    let o = ninfer(
        &["verify", dir.join("missing.gguf").to_str().unwrap()],
        &dir,
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_non_finite_scale_fails_validation_but_the_tensor_is_still_decoded() {
    let dir = scratch("nan");
    let sample = sample_path();
    let f = gguf::GgufFile::open(&sample).unwrap();
    let t = f.tensor("smollm2.token_embd.weight").unwrap();
    let at = (f.data_start + t.offset) as usize;
    let mut bytes = std::fs::read(&sample).unwrap();
    // Block 0 of row 0: its binary16 scale d becomes a NaN (0x7E00).
    bytes[at..at + 2].copy_from_slice(&0x7E00u16.to_le_bytes());
    let bad = dir.join("nan.gguf");
    std::fs::write(&bad, &bytes).unwrap();
    let o = ninfer(&["verify", bad.to_str().unwrap()], &dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("(1 invalid encoding)"), "{out}");
    assert!(
        out.contains("smollm2.token_embd.weight  gguf_q8_0  INVALID_ENCODING")
            && out.contains("row 0, block 0"),
        "{out}"
    );
    // Decoding stays a pure function of the bytes: the block's 32 values are NaN.
    let line = out
        .lines()
        .find(|l| l.starts_with("smollm2.token_embd.weight "))
        .unwrap();
    let c = cols(line);
    assert_eq!(
        (c[4], c[6], c[9]),
        ("32", "- (invalid encoding)", "FAILED"),
        "{line}"
    );
    let row = cols(type_row(&out, "Q8_0 (gguf_q8_0)"));
    assert_eq!((row[3], row[6]), ("32", "1 INVALID"), "{row:?}");
}

/// The `N tensors: A decoded, B refused, C failed` counts of a verify summary.
fn summary_counts(out: &str) -> [usize; 4] {
    let line = out
        .lines()
        .find(|l| l.contains(" tensors: ") && l.contains(" decoded, "))
        .unwrap_or_else(|| panic!("no summary in\n{out}"));
    let num = |s: &str| {
        s.trim()
            .split(' ')
            .next()
            .unwrap()
            .parse::<usize>()
            .unwrap()
    };
    let (n, rest) = line.split_once(" tensors: ").unwrap();
    let parts: Vec<&str> = rest.split(", ").collect();
    [num(n), num(parts[0]), num(parts[1]), num(parts[2])]
}

/// Sets the ggml type id of tensor `name` in a GGUF image (header: name, n_dims, dims, type).
fn set_type(bytes: &mut [u8], name: &str, ty: u32) {
    let mut key = (name.len() as u64).to_le_bytes().to_vec();
    key.extend_from_slice(name.as_bytes());
    let at = bytes
        .windows(key.len())
        .position(|w| w == key.as_slice())
        .expect("tensor name in header")
        + key.len();
    let n_dims = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let t = at + 4 + 8 * n_dims;
    bytes[t..t + 4].copy_from_slice(&ty.to_le_bytes());
}

#[test]
fn verify_counts_each_tensor_once_and_never_prints_negative_zero() {
    let dir = scratch("counts");
    let sample = sample_path();
    let f = gguf::GgufFile::open(&sample).unwrap();
    let t = f.tensor("smollm2.token_embd.weight").unwrap();
    let at = (f.data_start + t.offset) as usize;
    let mut bytes = std::fs::read(&sample).unwrap();
    bytes[at..at + 2].copy_from_slice(&0x7E00u16.to_le_bytes());
    let bad = dir.join("nan.gguf");
    std::fs::write(&bad, &bytes).unwrap();
    let o = ninfer(&["verify", bad.to_str().unwrap()], &dir);
    let out = text(&o);
    let [n, decoded, refused, failed] = summary_counts(&out);
    assert_eq!(failed, 1, "{out}");
    assert_eq!(decoded + refused + failed, n, "{out}");
    assert!(out.contains("FAILED (1):"), "{out}");
    assert!(!out.contains("-0.000"), "{out}");
    // The clean sample: everything adds up too, and no negative zero anywhere.
    let o = ninfer(&["verify", sample.to_str().unwrap()], &dir);
    let out = text(&o);
    let [n, decoded, refused, failed] = summary_counts(&out);
    assert_eq!((failed, decoded + refused), (0, n), "{out}");
    assert!(!out.contains("-0.0"), "{out}");
}

#[test]
fn a_type_id_unknown_to_ggml_makes_the_file_malformed() {
    let dir = scratch("unknown-type");
    let sample = sample_path();
    let f = gguf::GgufFile::open(&sample).unwrap();
    let name = f
        .tensors
        .iter()
        .find(|t| t.ggml_type == 3)
        .map(|t| t.name.clone())
        .expect("a Q4_1 tensor in the sample");
    // Q4_1 (3) is a clean refusal: the sample verifies.
    let o = ninfer(&["verify", sample.to_str().unwrap()], &dir);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // 9999 is no ggml type at all: the file is malformed (ggml and gguf-py refuse it
    // whole, and without the type no later tensor can be located).
    let mut bytes = std::fs::read(&sample).unwrap();
    set_type(&mut bytes, &name, 9999);
    let bad = dir.join("t9999.gguf");
    std::fs::write(&bad, &bytes).unwrap();
    for cmd in ["verify", "inspect"] {
        let o = ninfer(&[cmd, bad.to_str().unwrap()], &dir);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("tensor {name:?}")) && err.contains("not a ggml type"),
            "{err}"
        );
    }
}

/// Writes a GGUF image into `dir` and runs `ninfer cmd` on it.
fn run_on(dir: &Path, file: &str, bytes: &[u8], args: &[&str]) -> Output {
    let p = dir.join(file);
    std::fs::write(&p, bytes).unwrap();
    let mut a: Vec<&str> = args.to_vec();
    a.insert(1, p.to_str().unwrap());
    ninfer(&a, dir)
}

#[test]
fn hostile_headers_are_refused_with_a_message() {
    use gguf::testing::Image;
    let dir = scratch("hostile");
    let u32v = 32u32.to_le_bytes();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "count",
            {
                let mut b = Image::default().tensor("w", &[8], 0, 32).bytes();
                b[8..16].copy_from_slice(&(1u64 << 62).to_le_bytes());
                b
            },
            "the header claims",
        ),
        (
            "emptykey",
            Image::default().kv("", 4, &u32v).bytes(),
            "empty key",
        ),
        (
            "dupkey",
            Image::default().kv("a", 4, &u32v).kv("a", 4, &u32v).bytes(),
            "duplicate metadata key \"a\"",
        ),
        (
            "align",
            Image::default()
                .kv("general.alignment", 10, &32u64.to_le_bytes())
                .bytes(),
            "general.alignment must be a u32",
        ),
        (
            "dupname",
            Image::default()
                .tensor("w", &[8], 0, 32)
                .tensor("w", &[8], 0, 32)
                .bytes(),
            "duplicate tensor name \"w\"",
        ),
        (
            "alias",
            Image::default()
                .tensor("w", &[8], 0, 32)
                .tensor_at("v", &[8], 0, 32, 0)
                .bytes(),
            "tensor \"v\": data offset 0, expected 32",
        ),
    ];
    for (name, bytes, msg) in &cases {
        for cmd in ["inspect", "verify"] {
            let o = run_on(&dir, &format!("{name}.gguf"), bytes, &[cmd]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{name} {cmd}: {err}");
            assert!(err.contains(msg), "{name} {cmd}: {err}");
        }
    }
}

#[test]
fn tensors_of_every_type_are_bounds_checked() {
    use gguf::testing::Image;
    let dir = scratch("bounds");
    // The last tensor claims far more bytes than the file has: an I8 tensor of 2^40
    // values, then a truncated Q4_1 tensor (4 blocks of 20 bytes, 10 present).
    for (name, ne, ty, bytes) in [
        ("i8", vec![1u64 << 40], 24u32, "1,099,511,627,776"),
        ("q41", vec![32, 4], 3, "80"),
    ] {
        let mut b = Image::default()
            .tensor("f", &[8], 0, 32)
            .tensor(name, &ne, ty, 0)
            .bytes();
        b.extend_from_slice(&[0u8; 10]);
        let o = run_on(&dir, &format!("{name}.gguf"), &b, &["verify"]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(
            out.contains("FAILED (1)") && out.contains("truncated"),
            "{out}"
        );
        let o = run_on(&dir, &format!("{name}.gguf"), &b, &["inspect"]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        let row = out.lines().find(|l| l.starts_with(name)).unwrap();
        assert!(row.contains(bytes) && row.contains("truncated"), "{row}");
        assert!(out.contains("1 malformed"), "{out}");
    }
}

#[test]
fn tensors_with_a_zero_dimension_are_empty_tensors() {
    use gguf::testing::Image;
    let dir = scratch("empty");
    let b = Image::default()
        .tensor("e32", &[4, 0], 0, 0)
        .tensor("eq8", &[64, 0], 8, 0)
        .tensor("w", &[4, 2], 0, 32)
        .bytes();
    let o = run_on(&dir, "empty.gguf", &b, &["inspect"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("yes (empty)") && out.contains("0 malformed"),
        "{out}"
    );
    let o = run_on(&dir, "empty.gguf", &b, &["verify"]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(summary_counts(&out), [3, 3, 0, 0], "{out}");
    let npy = dir.join("e.npy");
    let o = run_on(
        &dir,
        "empty.gguf",
        &b,
        &["decode", "--tensor", "eq8", "--out", npy.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let bytes = std::fs::read(&npy).unwrap();
    let (descr, shape, payload) = read_npy(&bytes);
    assert_eq!((descr.as_str(), payload.len()), ("<f4", 0));
    assert_eq!(shape.replace(", )", ")"), "(0, 64)");
}

fn checksums_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sample.checksums")
}

/// The per-tensor row of the verify table for `name`.
fn tensor_row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    cols(
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name} in\n{out}")),
    )
}

#[test]
fn verify_compares_linear_on_every_path_and_the_sample_checksums() {
    let dir = scratch("checks");
    let o = ninfer(&["verify"], &dir);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    // What is compared with what, said up front.
    assert!(out.contains("linear: y = x·Wᵀ on CPU scalar"), "{out}");
    assert!(out.contains("criterion linear_f32acc_v1"), "{out}");
    assert!(
        out.contains("CUDA: not present (") || out.contains("CUDA: NVIDIA"),
        "{out}"
    );
    assert!(
        out.contains("checksums: 25 tensors in the built-in sample's reference list"),
        "{out}"
    );
    // Every decodable 2-D weight: its checksum matched gguf-py's (Q2_0: the numpy
    // decode of its block facts), its products checked on every path, bit-identical.
    let paths = if out.contains("on CPU scalar, avx2") {
        "scalar=avx2"
    } else {
        "scalar"
    };
    for name in [
        "smollm2.token_embd.weight",
        "minilm.q8_0",
        "minilm.q4_0",
        "minilm.q5_0",
        "minilm.q4_k",
        "minilm.q6_k",
        "minilm.word_embeddings.f32",
        "minilm.word_embeddings.bf16",
    ] {
        let row = tensor_row(&out, name);
        assert_eq!(row[5], "= gguf-py", "{row:?}");
        assert!(row[6].contains(" rows: "), "{row:?}");
        assert!(row[7].starts_with(paths), "{row:?}");
        assert_eq!(*row.last().unwrap(), "ok", "{row:?}");
    }
    assert_eq!(tensor_row(&out, "minilm.q2_0")[5], "= numpy-q2_0");
    // F16 data has no registered format: decoded and checksummed, no product.
    let row = tensor_row(&out, "minilm.word_embeddings.f16");
    assert_eq!(
        (row[5], row[6]),
        ("= gguf-py", "- (no registered format)"),
        "{row:?}"
    );
    let row = cols(type_row(&out, "Q8_0 (gguf_q8_0)"));
    assert_eq!((row[7], row[8], row[9]), ("2 matched", "2 ok", "decoded"));
    assert!(
        out.contains("checksums: 24 matched, 0 mismatched, 0 not in the list, 0 not in the file"),
        "{out}"
    );
    assert!(out.contains("paths bit-identical, 0 failed"), "{out}");
    assert!(out.trim_end().ends_with("verify: passed"), "{out}");
    // --brief keeps the per-type comparisons and the summary.
    let brief = text(&ninfer(&["verify", "--brief"], &dir));
    assert!(brief.contains("2 matched  2 ok"), "{brief}");
    assert!(
        brief.contains("checks: ") && brief.contains("verify: passed"),
        "{brief}"
    );
}

#[test]
fn a_valid_payload_with_other_values_fails_only_on_the_checksums() {
    let dir = scratch("changed");
    let sample = sample_path();
    let f = gguf::GgufFile::open(&sample).unwrap();
    let t = f.tensor("minilm.q8_0").unwrap();
    let at = (f.data_start + t.offset) as usize;
    let mut bytes = std::fs::read(&sample).unwrap();
    // Row 0, block 0: one int8 code (after the binary16 scale) changes. Every code is
    // valid, so validation passes, and the products agree with the oracle, which is
    // computed from the decoded values: only the recorded checksum sees the change.
    bytes[at + 2] ^= 0x01;
    let changed = dir.join("changed.gguf");
    std::fs::write(&changed, &bytes).unwrap();
    // A copy of the sample (its general.name) is checked with the sample's list.
    let o = ninfer(&["verify", changed.to_str().unwrap()], &dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("the file's general.name is the sample's"),
        "{out}"
    );
    assert!(
        out.contains("  minilm.q8_0  gguf_q8_0  checksum: decoded values hash to fnv1a64 "),
        "{out}"
    );
    assert!(out.contains("FAILED (1):"), "{out}");
    let row = tensor_row(&out, "minilm.q8_0");
    assert_eq!(
        (row[5], *row.last().unwrap()),
        ("MISMATCH", "FAILED"),
        "{row:?}"
    );
    assert!(
        row[6].starts_with("32 rows: ") && !row[7].contains("DIFFER"),
        "{row:?}"
    );
    assert!(!out.contains("minilm.q8_0  gguf_q8_0  linear"), "{out}");
    assert!(out.contains("checksums: 23 matched, 1 mismatched"), "{out}");
    assert!(out.contains("verify: FAILED (1 tensor,"), "{out}");
    let [_, _, _, failed] = summary_counts(&out);
    assert_eq!(failed, 1, "{out}");
    // Without the list (an empty one given instead) nothing else notices: validation,
    // decoding and the products pass; only the tensors the list lacks are failures.
    let empty = dir.join("empty.checksums");
    std::fs::write(&empty, "# no tensors\n").unwrap();
    let o = ninfer(
        &[
            "verify",
            changed.to_str().unwrap(),
            "--checksums",
            empty.to_str().unwrap(),
        ],
        &dir,
    );
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("checksums: 0 matched, 0 mismatched, 24 not in the list"),
        "{out}"
    );
    assert_eq!(
        out.matches("checksum: not in the checksum list").count(),
        24,
        "{out}"
    );
    assert!(!out.contains("linear: y["), "{out}");
    // The explicit list gives the same verdict as the built-in one.
    let list = checksums_path();
    let o = ninfer(
        &[
            "verify",
            changed.to_str().unwrap(),
            "--checksums",
            list.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("  minilm.q8_0  gguf_q8_0  checksum: "));
    // The unchanged sample named by path is recognised and checked with its own list.
    let o = ninfer(&["verify", sample.to_str().unwrap()], &dir);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("checksums: 24 matched"), "{out}");
}

#[test]
fn a_corrupted_scale_fails_validation_and_the_checksum_naming_the_tensor() {
    let dir = scratch("corrupt");
    let sample = sample_path();
    let f = gguf::GgufFile::open(&sample).unwrap();
    let t = f.tensor("minilm.q4_k").unwrap();
    let at = (f.data_start + t.offset) as usize;
    let mut bytes = std::fs::read(&sample).unwrap();
    // Row 0, super-block 0: d (binary16 @0) becomes +Inf.
    bytes[at..at + 2].copy_from_slice(&0x7C00u16.to_le_bytes());
    let bad = dir.join("corrupt.gguf");
    std::fs::write(&bad, &bytes).unwrap();
    let o = ninfer(&["verify", "--brief", bad.to_str().unwrap()], &dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("  minilm.q4_k  gguf_q4_k  INVALID_ENCODING"),
        "{out}"
    );
    assert!(
        out.contains("  minilm.q4_k  gguf_q4_k  checksum: "),
        "{out}"
    );
    assert!(out.contains("verify: FAILED"), "{out}");
}

#[test]
fn checksum_lists_are_read_strictly() {
    let dir = scratch("lists");
    let sample = sample_path();
    let s = sample.to_str().unwrap();
    // Malformed: a message and exit status 2.
    let bad = dir.join("bad.checksums");
    std::fs::write(&bad, "minilm.q8_0 Q8_0 12288 not-hex gguf-py\n").unwrap();
    let o = ninfer(&["verify", s, "--checksums", bad.to_str().unwrap()], &dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("line 1: expected `name type values fnv1a64 oracle`"),
        "{err}"
    );
    let o = ninfer(
        &[
            "verify",
            s,
            "--checksums",
            dir.join("none").to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(o.status.code(), Some(2));
    // A tensor the list names that the file lacks is a failure.
    let extra = dir.join("extra.checksums");
    let mut list = std::fs::read_to_string(checksums_path()).unwrap();
    list.push_str("no.such.tensor Q8_0 32 0123456789abcdef gguf-py\n");
    std::fs::write(&extra, list).unwrap();
    let o = ninfer(&["verify", s, "--checksums", extra.to_str().unwrap()], &dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("  no.such.tensor  listed in the reference checksums but not in the file"),
        "{out}"
    );
}
