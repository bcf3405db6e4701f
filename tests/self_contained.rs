//! The repository stands alone: every `§` reference in the product text (header, C++
//! wrapper, README, docs, bindings, sources, CLI, scripts, tests) names a section of
//! docs/formats.md, and no text points at a path outside the repository.
//!
//! Oracle: docs/formats.md's own headings (each `## §N` / `### §N.M`, and "after §3.4").

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Text files under `dir` (recursively), skipping build output, caches and binary data.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        if p.is_dir() {
            if ![
                "target",
                "data",
                ".git",
                ".cache",
                ".zig-cache",
                "zig-out",
                "build",
                "__pycache__",
            ]
            .contains(&name.as_str())
            {
                text_files(&p, out);
            }
        } else if let Ok(text) = std::fs::read_to_string(&p)
            && !text.contains('\0')
        {
            out.push(p);
        }
    }
}

fn scanned() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for d in [
        "include", "docs", "bindings", "src", "cli", "scripts", "tests", "cmake", "benches",
        "examples",
    ] {
        text_files(&root().join(d), &mut files);
    }
    for f in [
        "README.md",
        "CMakeLists.txt",
        "Cargo.toml",
        "cbindgen.toml",
        "build.rs",
    ] {
        files.push(root().join(f));
    }
    files.retain(|p| p.exists());
    assert!(files.len() > 100, "{} files", files.len());
    files
}

/// Every `§N` / `§N.M` token of `text`, with its line number.
fn section_refs(text: &str) -> Vec<(usize, String)> {
    let mut refs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        for (at, _) in line.match_indices('§') {
            let rest = line[at + '§'.len_utf8()..].trim_start();
            let num: String = rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let num = num.trim_end_matches('.').to_string();
            refs.push((i + 1, num));
        }
    }
    refs
}

#[test]
fn every_section_reference_resolves_to_docs_formats_md() {
    let formats = std::fs::read_to_string(root().join("docs/formats.md")).unwrap();
    let mut sections: Vec<String> = formats
        .lines()
        .filter(|l| l.starts_with('#'))
        .flat_map(|l| section_refs(l).into_iter().map(|(_, s)| s))
        .collect();
    sections.sort();
    sections.dedup();
    for s in [
        "1", "2", "3.1", "3.2", "3.3", "3.4", "4", "5", "6.1", "6.2", "6.3", "7.2", "9",
    ] {
        assert!(
            sections.contains(&s.to_string()),
            "docs/formats.md lacks §{s}: {sections:?}"
        );
    }
    let mut bad = Vec::new();
    let mut count = 0;
    for f in scanned() {
        let text = std::fs::read_to_string(&f).unwrap();
        if f.ends_with("tests/self_contained.rs") {
            continue;
        }
        // A bare sign (no number) names the notation, not a section.
        for (line, num) in section_refs(&text)
            .into_iter()
            .filter(|(_, n)| !n.is_empty())
        {
            count += 1;
            if !sections.contains(&num) {
                bad.push(format!(
                    "{}:{line}: §{num}",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "§ references docs/formats.md does not define:\n{}",
        bad.join("\n")
    );
    assert!(count > 200, "only {count} references found");
}

#[test]
fn no_text_points_outside_the_repository() {
    // Spelled in pieces so that this file does not match itself.
    let forbidden = [
        format!("..{}shared", '/'),
        format!("shared{}spec", '/'),
        format!("shared{}reference", '/'),
        format!("{}work{}", '/', '/'),
    ];
    let mut bad = Vec::new();
    for f in scanned() {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            for pat in &forbidden {
                if line.contains(pat.as_str()) {
                    bad.push(format!(
                        "{}:{}: {}",
                        f.strip_prefix(root()).unwrap().display(),
                        i + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "paths outside the repository:\n{}",
        bad.join("\n")
    );
}
