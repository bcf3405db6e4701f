//! `ninfer bench linear`: the table's shape, its JSON and CSV forms, refused options and
//! the absent ggml peer. Tiny shapes and a 1 ms budget keep these quick; speed itself is
//! never asserted.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `ninfer bench linear ARGS` in `dir` with `NINFER_GGML_DIR` unset, or set to `ggml`.
fn bench(args: &[&str], dir: &Path, ggml: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ninfer"));
    c.args(["bench", "linear"]).args(args).current_dir(dir);
    match ggml {
        Some(g) => c.env("NINFER_GGML_DIR", g),
        None => c.env_remove("NINFER_GGML_DIR"),
    };
    c.output().expect("running ninfer")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh scratch directory (no .cache/ggml in it).
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ninfer-bench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The repository's ggml build, if scripts/build-ggml.sh made one.
fn ggml_build() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.cache/ggml/lib");
    d.join("libggml-cpu.so").exists().then_some(d)
}

const TINY: [&str; 6] = ["--shapes", "256x256", "--budget-ms", "1", "--bw-mib", "8"];

const HEADER: [&str; 11] = [
    "format",
    "N x K",
    "M",
    "t",
    "ms",
    "GMAC/s",
    "W GB/s",
    "of BW",
    "cpu GMAC/s",
    "ggml GMAC/s",
    "ratio",
];

/// The table's data rows as cells (columns are separated by at least two spaces), after
/// checking the header and the rule under it.
fn table_rows(out: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = out.lines().collect();
    let h = lines
        .iter()
        .position(|l| l.starts_with("format "))
        .unwrap_or_else(|| panic!("no table header in\n{out}"));
    let cells = |l: &str| -> Vec<String> {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect()
    };
    assert_eq!(cells(lines[h]), HEADER, "{out}");
    assert!(
        lines[h + 1].chars().all(|c| c == '-') && lines[h + 1].len() == lines[h].len(),
        "{out}"
    );
    lines[h + 2..]
        .iter()
        .take_while(|l| !l.is_empty())
        .filter(|l| !l.starts_with("  ")) // a row group's verdict
        .map(|l| {
            let c = cells(l);
            assert_eq!(c.len(), HEADER.len(), "row {l:?}");
            c
        })
        .collect()
}

/// The header's machine line: `cpu: MODEL (FLAGS); ISA TIER; threads T; YYYY-MM-DD HH:MM:SS UTC`.
fn machine_line(out: &str, threads: &str) {
    let l = out
        .lines()
        .find(|l| l.starts_with("cpu: "))
        .unwrap_or_else(|| panic!("no cpu line in\n{out}"));
    let (model, rest) = l["cpu: ".len()..].split_once(" (").expect(l);
    assert!(!model.is_empty(), "{l}");
    let (flags, rest) = rest.split_once("); ISA ").expect(l);
    if std::arch::is_x86_feature_detected!("avx2") {
        assert!(flags.split(' ').any(|f| f == "avx2"), "{l}");
    }
    let (isa, rest) = rest.split_once("; threads ").expect(l);
    assert!(
        ["scalar", "avx2", "avxvnni", "avx512"].contains(&isa),
        "{l}"
    );
    let (t, date) = rest.split_once("; ").expect(l);
    assert_eq!(t, threads, "{l}");
    utc_date(date);
}

/// `YYYY-MM-DD HH:MM:SS UTC`, in this century.
fn utc_date(d: &str) {
    let b = d.as_bytes();
    assert_eq!(b.len(), 23, "{d}");
    assert!(d.starts_with("20") && d.ends_with(" UTC"), "{d}");
    for (i, c) in b[..19].iter().enumerate() {
        match i {
            4 | 7 => assert_eq!(*c, b'-', "{d}"),
            10 => assert_eq!(*c, b' ', "{d}"),
            13 | 16 => assert_eq!(*c, b':', "{d}"),
            _ => assert!(c.is_ascii_digit(), "{d}"),
        }
    }
}

fn number(s: &str) -> f64 {
    s.parse()
        .unwrap_or_else(|_| panic!("{s:?} is not a number"))
}

#[test]
fn one_format_one_thread_prints_a_well_formed_table() {
    let dir = scratch("table");
    let o = bench(
        &[
            TINY.as_slice(),
            &["--formats", "bf16", "--m", "1", "--threads", "1"],
        ]
        .concat(),
        &dir,
        None,
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(
        out.contains("read bandwidth (best 8 MiB chunk of 8 MiB): 1 thread "),
        "{out}"
    );
    machine_line(&out, "1");
    let rows = table_rows(&out);
    // "bf16" is a substring of two formats.
    let names: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["bf16", "fp8_e4m3fn_row_bf16"], "{out}");
    for r in &rows {
        assert_eq!(r[1..4], ["256x256", "1", "1"], "{r:?}");
        for c in [4, 5, 6, 8] {
            assert!(number(&r[c]) > 0.0, "{r:?}");
        }
        assert!(r[7].ends_with('%'), "{r:?}");
        // No GGUF type: no ggml figure.
        assert_eq!(r[9..], ["-", "-"], "{r:?}");
    }
    assert!(out.contains("targets in this run"), "{out}");
}

#[test]
fn without_ggml_its_columns_are_dashes_and_a_line_says_how_to_build_it() {
    let dir = scratch("noggml");
    let empty = scratch("noggml-lib");
    for ggml in [None, Some(empty.as_path())] {
        let o = bench(
            &[TINY.as_slice(), &["--formats", "q8_0", "--no-bw"]].concat(),
            &dir,
            ggml,
        );
        let out = stdout(&o);
        assert!(o.status.success(), "{out}{}", stderr(&o));
        let note = out
            .lines()
            .find(|l| l.starts_with("ggml: not loaded"))
            .unwrap_or_else(|| panic!("no ggml note in\n{out}"));
        assert!(note.contains("scripts/build-ggml.sh"), "{note}");
        let rows = table_rows(&out);
        // M ∈ {1, 32} × threads ∈ {1, 2}.
        assert_eq!(rows.len(), 4, "{out}");
        for r in &rows {
            assert_eq!(r[0], "gguf_q8_0");
            assert_eq!(r[7], "-", "--no-bw: {r:?}");
            assert_eq!(r[9..], ["-", "-"], "{r:?}");
            assert_eq!(
                r[8] == "-",
                r[3] == "2",
                "thread CPU only for one thread: {r:?}"
            );
        }
    }
}

#[test]
fn with_ggml_gguf_rows_carry_its_figures_and_a_verdict() {
    let Some(lib) = ggml_build() else {
        eprintln!("skipped: no ggml build (scripts/build-ggml.sh)");
        return;
    };
    let dir = scratch("ggml");
    // N = 200: ggml's side splits W into row chunks of unequal length.
    let o = bench(
        &[
            "--shapes",
            "200x256",
            "--budget-ms",
            "1",
            "--no-bw",
            "--formats",
            "q4_0",
            "--m",
            "1",
            "--threads",
            "1,2",
            "--ggml",
            lib.to_str().unwrap(),
        ],
        &dir,
        None,
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    assert!(out.contains("peer: ggml vec_dot"), "{out}");
    let rows = table_rows(&out);
    assert_eq!(rows.len(), 2, "{out}");
    for r in &rows {
        let (g, ratio) = (number(&r[9]), number(&r[10]));
        assert!(g > 0.0 && ratio > 0.0, "{rows:?}");
    }
    assert!(
        out.contains("  gguf_q4_0 200x256: target ≥ 1.2× ggml (in L3): "),
        "{out}"
    );
}

#[test]
fn json_and_csv_hold_the_same_rows() {
    let dir = scratch("json");
    let args = [
        TINY.as_slice(),
        &["--formats", "q4_g64,gguf_q4_0", "--no-bw"],
    ]
    .concat();
    let o = bench(&[args.as_slice(), &["--json"]].concat(), &dir, None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("scripts/build-ggml.sh"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 2 * 2, "{v}");
    for r in rows {
        assert!(["q4_g64_fp16", "gguf_q4_0"].contains(&r["format"].as_str().unwrap()));
        assert_eq!((r["n"].as_u64(), r["k"].as_u64()), (Some(256), Some(256)));
        assert!(r["gmac_s"].as_f64().unwrap() > 0.0);
        assert!(
            r["ggml_gmac_s"].is_null() && r["bw_fraction"].is_null(),
            "{r}"
        );
    }
    assert!(v["ggml"].is_null());
    assert!(!v["cpu_model"].as_str().unwrap().is_empty(), "{v}");
    assert!(v["cpu_flags"].is_string(), "{v}");
    assert!(v["isa"].is_string(), "{v}");
    assert_eq!(v["threads"], serde_json::json!([1, 2]), "{v}");
    utc_date(v["date_utc"].as_str().unwrap());

    let o = bench(&[args.as_slice(), &["--csv"]].concat(), &dir, None);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1 + 8, "{out}");
    let width = lines[0].split(',').count();
    assert!(lines[0].starts_with("format,n,k,m,threads,"), "{out}");
    assert!(lines.iter().all(|l| l.split(',').count() == width), "{out}");
    assert!(
        lines[0].ends_with(",activation,isa,cpu_model,cpu_flags,date_utc"),
        "{out}"
    );
    // Tolerates a quoted model name with a comma in it: the date is the last field.
    utc_date(lines[1].rsplit(',').next().unwrap());
}

#[test]
fn bad_options_are_refused_with_a_message() {
    let dir = scratch("bad");
    let missing = dir.join("no-such-dir");
    let cases: [(&[&str], &str); 11] = [
        (&["--threads", "0"], "--threads"),
        (&["--m", "0"], "--m"),
        (&["--m", "x"], "--m"),
        (&["--shapes", "4096"], "expected NxK"),
        (&["--shapes", "0x256"], "at least 1"),
        (&["--quick", "--shapes", "256x256"], "--quick"),
        (&["--json", "--csv"], "--csv"),
        (
            &["--formats", "nope"],
            "no format with a linear kernel matches \"nope\"",
        ),
        (&["--formats", "int32"], "\"int32\""),
        (
            &["--formats", "q4_k", "--shapes", "4x100"],
            "--shapes 4x100 for gguf_q4_k",
        ),
        (
            &["--ggml", missing.to_str().unwrap(), "--formats", "q8_0"],
            "--ggml",
        ),
    ];
    for (args, msg) in cases {
        let o = bench(
            &[&["--no-bw", "--budget-ms", "1"], args].concat(),
            &dir,
            None,
        );
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} accepted:\n{}", stdout(&o));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(msg), "{args:?}: {err}");
        assert!(
            !stdout(&o).contains("format "),
            "{args:?}: a table was printed"
        );
    }
}

/// `--activation q8_1,q8_K`: a GGUF k-quant gets a q8_1 row and a `+q8_K` row; a format
/// without q8_K (q8_0) only its q8_1 row; an unknown profile is refused with the names.
#[test]
fn q8k_rows_beside_q8_1() {
    let dir = scratch("q8k");
    let o = bench(
        &[
            "--shapes",
            "8x256",
            "--budget-ms",
            "1",
            "--no-bw",
            "--formats",
            "gguf_q4_k,gguf_q8_0",
            "--m",
            "1,3",
            "--threads",
            "1",
            "--activation",
            "q8_1,q8_K",
        ],
        &dir,
        None,
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let names: Vec<String> = table_rows(&out).into_iter().map(|r| r[0].clone()).collect();
    for want in ["gguf_q4_k", "gguf_q4_k+q8_K", "gguf_q8_0"] {
        assert_eq!(
            names.iter().filter(|n| *n == want).count(),
            2,
            "{want}: {out}"
        );
    }
    assert!(!names.iter().any(|n| n == "gguf_q8_0+q8_K"), "{out}");
    let o = bench(&["--no-bw", "--activation", "q8_x"], &dir, None);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("exact, q8_1 or q8_K"), "{}", stderr(&o));
}

/// Profiles a format does not take get a note each; when nothing is left to run, the run
/// fails with the notes, before measuring anything.
#[test]
fn activations_a_format_lacks_are_named() {
    let dir = scratch("acts");
    let args = [
        "--shapes",
        "8x256",
        "--budget-ms",
        "1",
        "--no-bw",
        "--m",
        "1",
        "--threads",
        "1",
    ];
    // Neither bf16 nor fp8_e4m3fn_row_bf16 takes q8_K: nothing to run.
    let o = bench(
        &[
            args.as_slice(),
            &["--formats", "bf16", "--activation", "q8_K"],
        ]
        .concat(),
        &dir,
        None,
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}{}", stdout(&o));
    assert!(err.contains("nothing to run"), "{err}");
    assert!(
        err.contains("bf16 does not take the q8_K activation (supported: exact)"),
        "{err}"
    );
    assert!(!stdout(&o).contains("format "), "a table was printed");

    // gguf_q8_0 has no q8_K profile: a note, and its default q8_1 row runs; q4_g64 takes
    // q8_1 (labelled +q8_1) but not q8_K.
    let o = bench(
        &[
            args.as_slice(),
            &["--formats", "gguf_q8_0,q4_g64", "--activation", "q8_K,q8_1"],
        ]
        .concat(),
        &dir,
        None,
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    for note in [
        "q4_g64_fp16 does not take the q8_K activation (supported: exact, q8_1)",
        "gguf_q8_0 does not take the q8_K activation (supported: q8_1)",
    ] {
        assert!(out.lines().any(|l| l == note), "{note}: {out}");
    }
    let names: Vec<String> = table_rows(&out).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(names, ["q4_g64_fp16+q8_1", "gguf_q8_0"], "{out}");

    // Only q8_K asked: the GGUF note says its q8_1 row runs; in JSON the notes go to stderr.
    let o = bench(
        &[
            args.as_slice(),
            &["--formats", "gguf_q8_0", "--activation", "q8_K", "--json"],
        ]
        .concat(),
        &dir,
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "gguf_q8_0 does not take the q8_K activation (supported: q8_1); its default q8_1 row runs"
        ),
        "{}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["activation"], "q8_1", "{v}");
}

/// The help's account of row labels matches the table: bare names for a format's default
/// profile (exact; q8_1 for GGUF types), `+q8_1` / `+q8_K` for any other.
#[test]
fn help_and_row_labels_agree() {
    let dir = scratch("labels");
    let o = Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(["bench", "linear", "--help"])
        .output()
        .unwrap();
    let help = stdout(&o).split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "labelled with the bare format name for the format's default profile (exact, or \
             q8_1 for a GGUF type) and `<format>+q8_1` or `<format>+q8_K` for any other"
        ),
        "{help}"
    );
    let o = bench(
        &[
            "--shapes",
            "8x256",
            "--budget-ms",
            "1",
            "--no-bw",
            "--m",
            "1",
            "--threads",
            "1",
            "--formats",
            "gguf_q4_k,q8_g32",
            "--activation",
            "exact,q8_1,q8_K",
        ],
        &dir,
        None,
    );
    let out = stdout(&o);
    assert!(o.status.success(), "{out}{}", stderr(&o));
    let names: Vec<String> = table_rows(&out).into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(
        names,
        [
            "q8_g32_fp16",
            "q8_g32_fp16+q8_1",
            "gguf_q4_k",
            "gguf_q4_k+q8_K"
        ],
        "{out}"
    );
}
