//! Compiles tests/c/fp8_nvfp4.c against include/ninfer.h as strict C99, links it against
//! the libninfer.so cargo built, and runs it (its hand-worked values are its oracle).

use std::path::{Path, PathBuf};
use std::process::Command;

fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed:\n{text}");
    text
}

#[test]
fn c99_fp8_nvfp4_program_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir();
    assert!(
        lib.join("libninfer.so").exists(),
        "libninfer.so not built in {lib:?} (run cargo build first)"
    );
    let tmp = std::env::temp_dir().join(format!("ninfer-fp8-c-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let staged = tmp.join("lib");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::copy(lib.join("libninfer.so"), staged.join("libninfer.so.0")).unwrap();
    let _ = std::fs::remove_file(staged.join("libninfer.so"));
    std::os::unix::fs::symlink("libninfer.so.0", staged.join("libninfer.so")).unwrap();
    let exe = tmp.join("fp8_nvfp4");
    run(Command::new("cc")
        .args(["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root.join("include"))
        .arg(root.join("tests/c/fp8_nvfp4.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&staged)
        .arg("-lninfer")
        .arg(format!("-Wl,-rpath,{}", staged.display())));
    let text = run(&mut Command::new(&exe));
    print!("{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
    let _ = std::fs::remove_dir_all(&tmp);
}
