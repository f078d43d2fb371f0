//! A library or binary that Cargo.toml builds without a test harness
//! (`test = false`, which spares `make test` a binary linking the whole
//! dependency tree) holds no unit tests: one added there would never run.

use sluice_tests::template::root;
use std::fs;
use std::path::{Path, PathBuf};

/// The `[lib]` or `[[bin]]` table of a manifest that says `test = false`,
/// as the sources it covers: `src/main.rs` for a binary, every other file
/// under `src/` for a library.
fn untested_sources(manifest: &str, crate_dir: &Path) -> Vec<PathBuf> {
    let mut sources = Vec::new();
    for table in manifest.split("\n[").skip(1) {
        let (head, body) = table.split_once('\n').unwrap_or((table, ""));
        let untested = body.lines().take_while(|l| !l.starts_with('[')).any(|l| l.replace(' ', "") == "test=false");
        if !untested {
            continue;
        }
        let src = crate_dir.join("src");
        match head.trim() {
            "[bin]]" => sources.push(src.join("main.rs")),
            "lib]" => sources.extend(rust_files(&src).into_iter().filter(|p| !p.ends_with("main.rs"))),
            other => panic!("test = false under [{other} in {}", crate_dir.display()),
        }
    }
    sources
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn targets_built_without_a_test_harness_hold_no_tests() {
    let root = root();
    let mut checked = 0;
    let mut offenders = Vec::new();
    for group in ["crates", "functions"] {
        for entry in fs::read_dir(root.join(group)).unwrap() {
            let crate_dir = entry.unwrap().path();
            let Ok(manifest) = fs::read_to_string(crate_dir.join("Cargo.toml")) else { continue };
            for source in untested_sources(&manifest, &crate_dir) {
                checked += 1;
                let text = fs::read_to_string(&source).unwrap();
                if text.contains("#[cfg(test)]") || text.contains("#[test]") || text.contains("#[tokio::test") {
                    offenders.push(source.display().to_string());
                }
            }
        }
    }
    assert!(checked >= 10, "the functions' main.rs at least are built without a harness; found {checked} sources");
    assert!(offenders.is_empty(), "unit tests that never run (remove `test = false` from Cargo.toml): {offenders:?}");
}

#[test]
fn a_unit_test_under_test_false_is_found() {
    let dir = std::env::temp_dir().join(format!("sluice-untested-{}", std::process::id()));
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(dir.join("src/lib.rs"), "#[cfg(test)]\nmod tests {}\n").unwrap();
    fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    let manifest = "[package]\nname = \"x\"\n\n[lib]\ntest = false\n\n[[bin]]\nname = \"x\"\ntest = false\n";
    let found = untested_sources(manifest, &dir);
    fs::remove_dir_all(&dir).unwrap();
    assert_eq!(found, vec![dir.join("src/lib.rs"), dir.join("src/main.rs")]);
}
