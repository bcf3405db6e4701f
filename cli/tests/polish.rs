//! Command-line behaviour a user meets first: a closed pipe ends the command quietly,
//! `verify --brief` groups refusals by type, help text shows defaults as they are typed and
//! speaks of targets (no tracker numbers), files written by `quantize` get the usual mode,
//! and shapes print in one notation.

use safetensors::{Dtype, tensor::TensorView};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;
use common::ninfer;

fn scratch(name: &str) -> PathBuf {
    common::scratch("polish", name)
}

/// `ninfer ARGS` writing into a pipe whose reader is already gone: it must not panic
/// (Rust's default: "failed printing to stdout", exit 101) but end quietly.
fn run_into_closed_pipe(args: &[&str]) -> Output {
    let mut fds = [0i32; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe { libc::close(fds[0]) };
    // SAFETY: fds[1] is a fresh descriptor this process owns; Stdio takes it over.
    let stdout = unsafe { <Stdio as std::os::fd::FromRawFd>::from_raw_fd(fds[1]) };
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .expect("running ninfer")
}

#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt as _;
    for args in [
        &["inspect"][..],
        &["verify"],
        &["verify", "--brief"],
        &["formats"],
    ] {
        let o = run_into_closed_pipe(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert_ne!(o.status.code(), Some(101), "{args:?}: {err}");
        assert!(
            o.status.signal() == Some(libc::SIGPIPE) || o.status.success(),
            "{args:?}: {:?}",
            o.status
        );
    }
}

/// A GGUF v3 file with the given (name, ggml type, block bytes) tensors, each one block of
/// 32 values ([1, 32]), no metadata.
fn gguf_with(tensors: &[(&str, u32, usize)]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((tensors.len() as u64).to_le_bytes());
    b.extend(0u64.to_le_bytes());
    let mut offset = 0u64;
    for (name, ty, bytes) in tensors {
        b.extend((name.len() as u64).to_le_bytes());
        b.extend(name.as_bytes());
        b.extend(2u32.to_le_bytes());
        b.extend(32u64.to_le_bytes());
        b.extend(1u64.to_le_bytes());
        b.extend(ty.to_le_bytes());
        b.extend(offset.to_le_bytes());
        offset += (*bytes as u64).next_multiple_of(32);
    }
    b.resize(b.len().next_multiple_of(32), 0);
    for (_, _, bytes) in tensors {
        let start = b.len();
        b.resize(start + bytes.next_multiple_of(32), 0);
    }
    b
}

#[test]
fn verify_brief_prints_one_line_per_refused_type() {
    let dir = scratch("brief");
    let mut tensors: Vec<(String, u32, usize)> = (0..5)
        .map(|i| (format!("blk.{i}.q4_1.weight"), 3, 20)) // Q4_1: 20-byte blocks
        .collect();
    tensors.extend((0..2).map(|i| (format!("blk.{i}.q8_1.weight"), 9, 36))); // Q8_1
    tensors.push(("ok.weight".into(), 8, 34)); // Q8_0, decodes
    let spec: Vec<(&str, u32, usize)> = tensors
        .iter()
        .map(|(n, t, b)| (n.as_str(), *t, *b))
        .collect();
    let path = dir.join("refusals.gguf");
    std::fs::write(&path, gguf_with(&spec)).unwrap();
    let o = ninfer(&["verify", "--brief", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    let section: Vec<&str> = out
        .split("refused (7):\n")
        .nth(1)
        .unwrap_or_else(|| panic!("no refusal section:\n{out}"))
        .lines()
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(section.len(), 2, "{out}");
    assert!(
        section[0].contains("Q4_1") && section[0].contains("5 tensors"),
        "{out}"
    );
    assert!(
        section[1].contains("Q8_1") && section[1].contains("2 tensors"),
        "{out}"
    );
    assert!(
        section.iter().all(|l| l.contains("UNREGISTERED_TYPE")),
        "{out}"
    );
    // Without --brief every refused tensor keeps its own line.
    let o = ninfer(&["verify", path.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(out.matches("UNREGISTERED_TYPE —").count(), 7, "{out}");
}

#[test]
fn help_shows_defaults_as_typed_and_no_tracker_numbers() {
    let mut pages = Vec::new();
    for args in [
        &["--help"][..],
        &["inspect", "--help"],
        &["decode", "--help"],
        &["verify", "--help"],
        &["quantize", "--help"],
        &["import", "--help"],
        &["formats", "--help"],
        &["bench", "--help"],
        &["bench", "linear", "--help"],
    ] {
        let o = ninfer(args);
        assert!(o.status.success(), "{args:?}");
        pages.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    let all = pages.join("\n");
    assert!(!all.to_lowercase().contains("issue"), "{all}");
    let bench = pages.last().unwrap();
    for default in [
        "[default: 1,2]",
        "[default: 1,32]",
        "[default: 4096x4096,16384x4096]",
    ] {
        assert!(bench.contains(default), "{default} missing:\n{bench}");
    }
    // The defaults as typed parse back to the same values.
    let o = ninfer(&["bench", "linear", "--threads", "0"]);
    assert!(!o.status.success());
}

#[test]
fn quantize_writes_files_with_the_usual_mode() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = scratch("mode");
    let input = small_st(&dir);
    let out = dir.join("out.safetensors");
    let o = quantize_q8_g32(&input, &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // What a plain File::create gives in this process (0666 less the umask).
    let probe = dir.join("probe");
    std::fs::File::create(&probe).unwrap();
    let want = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
    let got = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(got, want, "{got:o} != {want:o}");
    assert!(want & 0o044 != 0, "umask hides group/other read: {want:o}");
    shapes_print_in_one_notation(&out, &dir);
}

/// Both readers print `[rows, cols]` (outermost first) for a matrix.
fn shapes_print_in_one_notation(st_file: &Path, _dir: &Path) {
    let o = ninfer(&["inspect", st_file.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("[4, 64]"), "{out}");
    let o = ninfer(&["inspect"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("[64, 576]") && !out.contains('×'), "{out}");
}

/// A small safetensors file with one F32 [4, 64] tensor "w".
fn small_st(dir: &Path) -> PathBuf {
    let values: Vec<f32> = (0..4 * 64).map(|i| (i as f32 * 0.37).sin()).collect();
    st_of(dir, "in.safetensors", &values)
}

/// `dir/name`, a safetensors file of one F32 [4, 64] tensor `w` holding `values`.
fn st_of(dir: &Path, name: &str, values: &[f32]) -> PathBuf {
    let path = dir.join(name);
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let view = TensorView::new(Dtype::F32, vec![4, 64], &bytes).unwrap();
    safetensors::serialize_to_file(vec![("w".to_string(), view)], None, &path).unwrap();
    path
}

/// `ninfer quantize INPUT --format q8_g32_fp16 --out OUT`.
fn quantize_q8_g32(input: &Path, out: &Path) -> Output {
    ninfer(&[
        "quantize",
        input.to_str().unwrap(),
        "--format",
        "q8_g32_fp16",
        "--out",
        out.to_str().unwrap(),
    ])
}

#[test]
fn decode_refuses_to_overwrite_its_input() {
    let dir = scratch("decode-out");
    let gguf = dir.join("s.gguf");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/sample.gguf"),
        &gguf,
    )
    .unwrap();
    let st = small_st(&dir);
    for (file, tensor) in [(&gguf, "smollm2.q8_0"), (&st, "w")] {
        let before = std::fs::read(file).unwrap();
        let f = file.to_str().unwrap();
        let o = ninfer(&["decode", f, "--tensor", tensor, "--out", f]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains("is the input file"), "{err}");
        assert_eq!(std::fs::read(file).unwrap(), before, "{f} changed");
    }
}

/// An output in a directory that does not exist is refused before any work; a run whose
/// every candidate the encoder refused says so.
#[test]
fn quantize_checks_its_output_first_and_names_refusals() {
    let dir = scratch("quantize-out");
    let st = small_st(&dir);
    let o = quantize_q8_g32(&st, &dir.join("no-such-dir/q.safetensors"));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no directory"), "{err}");
    assert!(!err.contains(".tmp"), "{err}");
    // A NaN makes the encoder refuse the only matrix.
    let mut values = vec![0f32; 4 * 64];
    values[0] = f32::NAN;
    let input = st_of(&dir, "nan.safetensors", &values);
    let out = dir.join("q.safetensors");
    let o = quantize_q8_g32(&input, &out);
    let text = stdout_of(&o);
    assert!(
        text.contains("no tensor encoded: every candidate was refused"),
        "{text}"
    );
    assert!(!out.exists());
}

/// `ninfer ARGS > /dev/full`: a failed write to stdout is an error (exit 2), not a panic.
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    let dir = scratch("full");
    let st = small_st(&dir);
    let out = dir.join("q.safetensors");
    let quantize = [
        "quantize",
        st.to_str().unwrap(),
        "--format",
        "q8_g32_fp16",
        "--out",
        out.to_str().unwrap(),
    ];
    for args in [
        &["inspect"][..],
        &["verify"],
        &["verify", "--brief"],
        &["formats"],
        &["inspect", st.to_str().unwrap()],
        &quantize,
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_ninfer"))
            .args(args)
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("ninfer: writing to stdout"), "{args:?}: {err}");
    }
}

fn stdout_of(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn verify_that_checked_nothing_does_not_pass() {
    let dir = scratch("nothing");
    // Only a Q4_1 tensor (no decoder), and no tensors at all.
    for (name, spec, why) in [
        (
            "q4_1.gguf",
            &[("a.weight", 3u32, 20usize)][..],
            "no tensor could be decoded: 1 tensor refused",
        ),
        ("empty.gguf", &[], "the file has no tensors"),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, gguf_with(spec)).unwrap();
        let o = ninfer(&["verify", path.to_str().unwrap()]);
        let out = stdout_of(&o);
        assert_eq!(o.status.code(), Some(1), "{out}");
        assert!(
            out.contains(&format!("verify: nothing checked ({why})")),
            "{out}"
        );
        assert!(!out.contains("bit-identical"), "{out}");
        assert!(out.contains("linear: no weight checked"), "{out}");
    }
    // A safetensors file whose only tensor has no decodable dtype.
    let ints = dir.join("ints.safetensors");
    let words = [0u8; 16];
    let view = TensorView::new(Dtype::I64, vec![2], &words).unwrap();
    safetensors::serialize_to_file(vec![("ids".to_string(), view)], None, &ints).unwrap();
    let o = ninfer(&["verify", ints.to_str().unwrap()]);
    let out = stdout_of(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("verify: nothing checked (no tensor could be decoded: 1 entry without"),
        "{out}"
    );
    // Refused tensors beside a decoded one still pass, the refusals listed.
    let path = dir.join("mixed.gguf");
    std::fs::write(
        &path,
        gguf_with(&[("a.weight", 3, 20), ("ok.weight", 8, 34)]),
    )
    .unwrap();
    let o = ninfer(&["verify", path.to_str().unwrap()]);
    let out = stdout_of(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("refused (1):"), "{out}");
    assert!(out.contains("2 tensors: 1 decoded, 1 refused"), "{out}");
}

#[test]
fn an_explicit_checksum_list_covers_every_tensor_and_its_type() {
    let dir = scratch("list");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data");
    let list = std::fs::read_to_string(root.join("sample.checksums")).unwrap();
    let sample = root.join("sample.gguf");
    // minilm.q4_0 left out; minilm.q5_0 claimed to be Q4_0.
    let edited: String = list
        .lines()
        .filter(|l| !l.starts_with("minilm.q4_0 "))
        .map(|l| match l.strip_prefix("minilm.q5_0 Q5_0 ") {
            Some(rest) => format!("minilm.q5_0 Q4_0 {rest}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    let path = dir.join("edited.checksums");
    std::fs::write(&path, edited).unwrap();
    let o = ninfer(&[
        "verify",
        sample.to_str().unwrap(),
        "--checksums",
        path.to_str().unwrap(),
    ]);
    let out = stdout_of(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains("  minilm.q4_0  gguf_q4_0  checksum: not in the checksum list"),
        "{out}"
    );
    assert!(
        out.contains(
            "  minilm.q5_0  gguf_q5_0  checksum: the list says type Q4_0, the file's is Q5_0"
        ),
        "{out}"
    );
    assert!(
        out.contains("22 matched, 1 mismatched, 1 not in the list, 0 not in the file"),
        "{out}"
    );
    assert!(out.contains("verify: FAILED (2 tensors"), "{out}");
    // A list without sources prints no empty "()".
    let empty = dir.join("empty.checksums");
    std::fs::write(&empty, "# nothing\n").unwrap();
    let o = ninfer(&[
        "verify",
        sample.to_str().unwrap(),
        "--checksums",
        empty.to_str().unwrap(),
    ]);
    let out = stdout_of(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(!out.contains("()"), "{out}");
}

#[test]
fn verify_counts_speak_plainly() {
    let dir = scratch("plain");
    let st = small_st(&dir);
    let q = dir.join("q.safetensors");
    let o = ninfer(&[
        "quantize",
        st.to_str().unwrap(),
        "--format",
        "q8_g32_fp16",
        "--out",
        q.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    // One scale word (the first binary16 of the scales plane) becomes NaN.
    let mut bytes = std::fs::read(&q).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let at = 8 + n + header["w.scales"]["data_offsets"][0].as_u64().unwrap() as usize;
    bytes[at..at + 2].copy_from_slice(&0x7E00u16.to_le_bytes());
    let nan = dir.join("st_nan.safetensors");
    std::fs::write(&nan, &bytes).unwrap();
    let o = ninfer(&["verify", nan.to_str().unwrap()]);
    let out = stdout_of(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert_eq!(out.matches("scale is NaN").count(), 1, "{out}");
    assert!(out.contains("FAILED (1):"), "{out}");
    assert!(out.contains("verify: FAILED (1 tensor,"), "{out}");
    assert!(out.contains("1 entry: 1 encoded tensor"), "{out}");
    // A decode too short to time gives no rate.
    let path = dir.join("one.gguf");
    std::fs::write(&path, gguf_with(&[("ok.weight", 8, 34)])).unwrap();
    let o = ninfer(&["verify", path.to_str().unwrap()]);
    let out = stdout_of(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("\n1 tensor: 1 decoded"), "{out}");
    assert!(out.contains("1 tensor validated"), "{out}");
    assert!(!out.contains("0.000 s ("), "{out}");
    let per_type = out
        .lines()
        .find(|l| l.starts_with("Q8_0 (gguf_q8_0)"))
        .unwrap_or_else(|| panic!("{out}"));
    let cells: Vec<&str> = per_type.split_whitespace().collect();
    assert_eq!(
        cells[6], "-",
        "a rate from an unmeasurable time: {per_type}"
    );
    assert!(
        !out.contains(" 1 failures") && !out.contains(" 1 tensors"),
        "{out}"
    );
}

#[test]
fn unreadable_inputs_say_what_they_are() {
    let dir = scratch("inputs");
    let err_of = |args: &[&str]| {
        let o = ninfer(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let d = dir.to_str().unwrap();
    let e = err_of(&["verify", d]);
    assert!(e.contains(&format!("{d} is a directory")), "{e}");
    let e = err_of(&["inspect", "/dev/null"]);
    assert!(e.contains("/dev/null is not a regular file"), "{e}");
    // A text file given as an importance matrix.
    let st = small_st(&dir);
    let text = dir.join("notes.txt");
    std::fs::write(&text, "hello world, these are notes\n").unwrap();
    let out = dir.join("o.safetensors");
    let e = err_of(&[
        "quantize",
        st.to_str().unwrap(),
        "--format",
        "q8_g32_fp16",
        "--method",
        "search",
        "--imatrix",
        text.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(e.contains("not an importance matrix"), "{e}");
    // A GGUF magic with one letter changed.
    let mut bytes = gguf_with(&[("ok.weight", 8, 34)]);
    bytes[3] = b'X';
    let bad = dir.join("bad.gguf");
    std::fs::write(&bad, &bytes).unwrap();
    let e = err_of(&["verify", bad.to_str().unwrap()]);
    assert!(e.contains("magic \"GGUX\" (0x47475558)"), "{e}");
    // A safetensors file cut short inside its data.
    let whole = std::fs::read(&st).unwrap();
    let cut = dir.join("cut.safetensors");
    std::fs::write(&cut, &whole[..whole.len() - 100]).unwrap();
    let e = err_of(&["verify", cut.to_str().unwrap()]);
    assert!(
        e.contains("truncated safetensors file: the header's tensors end at byte"),
        "{e}"
    );
}

/// A GGUF v3 file of F32 tensors (name, ne, values), no metadata.
fn gguf_f32(tensors: &[(&str, &[u64], Vec<f32>)]) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend(3u32.to_le_bytes());
    b.extend((tensors.len() as u64).to_le_bytes());
    b.extend(0u64.to_le_bytes());
    let mut offset = 0u64;
    for (name, ne, v) in tensors {
        b.extend((name.len() as u64).to_le_bytes());
        b.extend(name.as_bytes());
        b.extend((ne.len() as u32).to_le_bytes());
        for d in *ne {
            b.extend(d.to_le_bytes());
        }
        b.extend(0u32.to_le_bytes());
        b.extend(offset.to_le_bytes());
        offset += (v.len() as u64 * 4).next_multiple_of(32);
    }
    b.resize(b.len().next_multiple_of(32), 0);
    for (_, _, v) in tensors {
        for x in v {
            b.extend(x.to_le_bytes());
        }
        b.resize(b.len().next_multiple_of(32), 0);
    }
    b
}

#[test]
fn an_imatrix_that_weighs_nothing_says_so() {
    let dir = scratch("imatrix");
    let st = small_st(&dir); // "w": [4, 64]
    let out = dir.join("o.safetensors");
    let run = |imatrix: &Path| {
        ninfer(&[
            "quantize",
            st.to_str().unwrap(),
            "--format",
            "q4_g64_fp16",
            "--method",
            "search",
            "--imatrix",
            imatrix.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    // Entries for another model's tensors: a warning, exit 1, nothing written.
    let other = dir.join("other.gguf");
    std::fs::write(
        &other,
        gguf_f32(&[
            ("blk.0.x.weight.in_sum2", &[64, 1], vec![1.0; 64]),
            ("blk.0.x.weight.counts", &[1, 1], vec![4.0]),
        ]),
    )
    .unwrap();
    let o = run(&other);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("none of the 1 entry of") && err.contains("was it made for another model?"),
        "{err}"
    );
    assert!(!out.exists());
    // An entry whose count is 0 measured nothing: searched unweighted and recorded so.
    let zero = dir.join("zero.gguf");
    std::fs::write(
        &zero,
        gguf_f32(&[
            ("w.in_sum2", &[64, 1], vec![0.0; 64]),
            ("w.counts", &[1, 1], vec![0.0]),
        ]),
    )
    .unwrap();
    let o = run(&zero);
    let text = stdout_of(&o);
    assert!(o.status.success(), "{text}");
    let bytes = std::fs::read(&out).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    let prov = header["__metadata__"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(k, _)| k.contains("provenance") && k.ends_with("w"))
        .map(|(_, v)| v.as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("{header}"));
    assert!(
        prov.contains("importance=false") && prov.contains("imatrix_entry_uniform=w"),
        "{prov}"
    );
    assert!(!prov.contains("imatrix_entry=w"), "{prov}");
    assert!(text.contains("counts are all 0"), "{text}");
}
