//! What the CLI's integration tests share: running the built `ninfer`, its output as text,
//! per-test scratch folders and the conversion fixtures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the built `ninfer` with `args` in the current folder.
pub fn ninfer(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ninfer"))
        .args(args)
        .output()
        .expect("running ninfer")
}

/// stdout, then stderr, as text (for assertion messages and `contains` checks).
pub fn out_text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A fresh folder `ninfer-{suite}-{name}-{pid}` under the temporary folder.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ninfer-{suite}-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The path of fixture `name` in tests/data/convert, which `script` writes.
pub fn convert_data(name: &str, script: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/convert")
        .join(name);
    assert!(p.exists(), "{p:?} missing: run python3 {script}");
    p.to_str().unwrap().to_owned()
}

/// A path as an argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}
