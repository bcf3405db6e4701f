//! Compiles every program in tests/c/ against include/ninfer.h as strict C99 (and the
//! header alone as C11, C++11 and C++17 with -pedantic -Werror), links each against the
//! libninfer.so cargo just built, and runs it. The programs' hand-worked values are their
//! oracle.

use std::path::{Path, PathBuf};
use std::process::Command;

/// target/<profile>/, where cargo puts libninfer.so next to this test's deps/ directory.
/// `cargo test` builds only the rlib, so the shared library is built here first (a no-op
/// when it is up to date).
fn lib_dir() -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    BUILD.call_once(|| {
        let mut cargo = Command::new(env!("CARGO"));
        cargo
            .args(["build", "-q", "--lib", "-p", "ninfer"])
            .current_dir(root());
        if !cfg!(debug_assertions) {
            cargo.arg("--release");
        }
        run(&mut cargo);
    });
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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

/// Every C program in tests/c/, compiled as strict C99 against the staged shared library and
/// run: each prints "N passed, 0 failed" (its hand-worked values are its oracle).
#[test]
fn c99_programs_link_the_shared_library_and_pass() {
    let lib = lib_dir();
    assert!(
        lib.join("libninfer.so").exists(),
        "libninfer.so not built in {lib:?}"
    );
    let tmp = std::env::temp_dir().join(format!("ninfer-c-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    // Stage the library as an installed one: the file under its SONAME plus the dev link.
    let staged = tmp.join("lib");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::copy(lib.join("libninfer.so"), staged.join("libninfer.so.0")).unwrap();
    let _ = std::fs::remove_file(staged.join("libninfer.so"));
    std::os::unix::fs::symlink("libninfer.so.0", staged.join("libninfer.so")).unwrap();
    let mut programs: Vec<PathBuf> = std::fs::read_dir(root().join("tests/c"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    programs.sort();
    assert!(programs.len() >= 2, "C programs missing: {programs:?}");
    for src in &programs {
        let exe = tmp.join(src.file_stem().unwrap());
        run(Command::new("cc")
            .args(["-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(root().join("include"))
            .arg(src)
            .arg("-o")
            .arg(&exe)
            .arg("-L")
            .arg(&staged)
            .arg("-lninfer")
            .arg(format!("-Wl,-rpath,{}", staged.display())));
        let text = run(&mut Command::new(&exe));
        print!("{}: {text}", src.display());
        assert!(
            text.contains(" passed, 0 failed"),
            "{}: {text}",
            src.display()
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}

#[test]
fn header_compiles_as_c11_cpp11_and_cpp17() {
    let tmp = std::env::temp_dir().join(format!("ninfer-h-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for (compiler, std, ext) in [
        ("cc", "-std=c11", "c"),
        ("c++", "-std=c++11", "cpp"),
        ("c++", "-std=c++17", "cpp"),
    ] {
        let src = tmp.join(format!("inc.{ext}"));
        std::fs::write(&src, "#include \"ninfer.h\"\nint main(void) { return ninfer_format_count() == 30 ? 0 : 1; }\n").unwrap();
        run(Command::new(compiler)
            .args([
                std,
                "-pedantic",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-fsyntax-only",
                "-I",
            ])
            .arg(root().join("include"))
            .arg(&src));
    }
}

#[test]
fn shared_library_has_soname_and_exports_only_ninfer_symbols() {
    let so = lib_dir().join("libninfer.so");
    let dynamic = run(Command::new("readelf").arg("-d").arg(&so));
    assert!(
        dynamic.contains("[libninfer.so.0]"),
        "SONAME missing:\n{dynamic}"
    );
    let syms = run(Command::new("nm").args(["-D", "--defined-only"]).arg(&so));
    let exported: Vec<&str> = syms
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            matches!(kind, "T" | "D" | "B" | "R").then_some(name)
        })
        .collect();
    assert!(exported.contains(&"ninfer_decode_row"));
    let foreign: Vec<&&str> = exported
        .iter()
        .filter(|s| !s.starts_with("ninfer_"))
        .collect();
    assert!(
        foreign.is_empty(),
        "non-ninfer symbols exported: {foreign:?}"
    );
}
