//! Dependencies point inward (docs/architecture.md, *Layout*): what ships
//! (`crates/`, `functions/`) never needs what stands in for AWS on one
//! machine (`local/`: the emulators, the private servers) or what only
//! tests use (`testing/`). Only the `sluice` CLI (`crates/sluice`) may
//! depend on `local/`, for `sluice dev` and `sluice demo`.
//!
//! The check reads each shipping crate's normal and build dependencies
//! (`[dev-dependencies]` are free: tests and benchmarks may start private
//! servers) and resolves each to its folder, through the root manifest's
//! `[workspace.dependencies]` or its own `path`. A shipping crate other
//! than the CLI may depend only on shipping crates other than the CLI, so
//! none reaches `local/` or `testing/` through another either.

use sluice_tests::template::root;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The crate that may depend on `local/`.
const CLI: &str = "crates/sluice";

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `path` without `.` and `..`, relative to the repository root.
fn normalise(path: &Path) -> String {
    let mut parts: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                parts.pop();
            }
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
            _ => {}
        }
    }
    parts.join("/")
}

/// The value of `key = "…"` in a dependency's specification, if any.
fn string_value<'a>(spec: &'a str, key: &str) -> Option<&'a str> {
    let (_, rest) = spec.split_once(&format!("{key} = \""))?;
    rest.split_once('"').map(|(value, _)| value)
}

/// Each dependency a manifest lists in its `[dependencies]` and
/// `[build-dependencies]` tables (also per target, and as
/// `[dependencies.<name>]` tables), with the text that specifies it.
fn normal_dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut dependencies = Vec::new();
    for table in manifest.split("\n[").skip(1) {
        let (head, body) = table.split_once('\n').unwrap_or((table, ""));
        let head = head.trim().trim_end_matches(']');
        let head = head.rsplit_once("'.").map_or(head, |(_, rest)| rest);
        let body = body.lines().filter(|l| !l.trim_start().starts_with('#'));
        if let Some(name) = head.strip_prefix("dependencies.").or_else(|| head.strip_prefix("build-dependencies.")) {
            dependencies.push((name.to_owned(), body.collect::<Vec<_>>().join("\n")));
        } else if head == "dependencies" || head == "build-dependencies" {
            for line in body.filter(|l| l.contains('=')) {
                let key = line.split(['=', '.']).next().unwrap_or_default().trim();
                dependencies.push((key.to_owned(), line.to_owned()));
            }
        }
    }
    dependencies
}

/// The root manifest's `[workspace.dependencies]` that are path
/// dependencies: name to folder.
fn workspace_paths(root: &Path) -> BTreeMap<String, String> {
    let manifest = read(&root.join("Cargo.toml"));
    let table = manifest.split("[workspace.dependencies]").nth(1).expect("[workspace.dependencies]");
    let table = table.split("\n[").next().unwrap_or_default();
    table
        .lines()
        .filter_map(|line| {
            let (name, spec) = line.split_once('=')?;
            Some((name.trim().to_owned(), normalise(Path::new(string_value(spec, "path")?))))
        })
        .collect()
}

/// The shipping crates: the folders of `crates/` and `functions/` with a
/// manifest, relative to the root.
fn shipping_crates(root: &Path) -> Vec<String> {
    let mut crates = Vec::new();
    for group in ["crates", "functions"] {
        for entry in fs::read_dir(root.join(group)).unwrap() {
            let dir = entry.unwrap().path();
            if dir.join("Cargo.toml").exists() {
                crates.push(format!("{group}/{}", dir.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    crates.sort();
    crates
}

/// What is wrong with `crate_dir`'s normal dependencies, one line each.
fn problems(root: &Path, workspace: &BTreeMap<String, String>, crate_dir: &str) -> Vec<String> {
    let manifest = read(&root.join(crate_dir).join("Cargo.toml"));
    let mut problems = Vec::new();
    for (name, spec) in normal_dependencies(&manifest) {
        let folder = match string_value(&spec, "path") {
            Some(path) => normalise(&PathBuf::from(crate_dir).join(path)),
            None if spec.contains("workspace = true") || spec.contains("workspace=true") => {
                workspace.get(&name).cloned().unwrap_or_default()
            }
            None => String::new(),
        };
        if folder.is_empty() {
            continue; // from a registry
        }
        let shipping = (folder.starts_with("crates/") || folder.starts_with("functions/")) && folder != CLI;
        let allowed = shipping || (crate_dir == CLI && folder.starts_with("local/"));
        if !allowed {
            problems.push(format!("{crate_dir} depends on {name} ({folder}) outside [dev-dependencies]"));
        }
    }
    problems
}

#[test]
fn only_the_cli_depends_on_local_and_nothing_that_ships_on_testing() {
    let root = root();
    let workspace = workspace_paths(root);
    let crates = shipping_crates(root);
    assert!(crates.len() > 10, "too few crates found: {crates:?}");
    let problems: Vec<String> = crates.iter().flat_map(|c| problems(root, &workspace, c)).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_private_servers_are_a_local_crate_the_check_covers() {
    let workspace = workspace_paths(root());
    assert_eq!(workspace.get("sluice-private-servers").map(String::as_str), Some("local/private-servers"));
}

#[test]
fn a_dependency_on_local_or_testing_is_found_in_every_form() {
    let workspace = workspace_paths(root());
    let manifests = [
        "[dependencies]\nsluice-private-servers.workspace = true\n",
        "[dependencies]\nsluice-private-servers = { workspace = true, features = [\"postgres\"] }\n",
        "[dependencies]\nservers = { path = \"../../local/private-servers\" }\n",
        "[build-dependencies]\nsluice-testkit.workspace = true\n",
        "[target.'cfg(unix)'.dependencies]\nsluice-sandbox.workspace = true\n",
        "[dependencies.sluice-dev-stack]\nworkspace = true\n",
        "[dependencies]\nsluice = { path = \"../sluice\" }\n",
    ];
    let dir = std::env::temp_dir().join(format!("sluice-local-deps-{}", std::process::id()));
    for (i, manifest) in manifests.iter().enumerate() {
        let crate_dir = dir.join(format!("crates/c{i}"));
        fs::create_dir_all(&crate_dir).unwrap();
        fs::write(crate_dir.join("Cargo.toml"), format!("[package]\nname = \"c{i}\"\n\n{manifest}")).unwrap();
        let found = problems(&dir, &workspace, &format!("crates/c{i}"));
        assert_eq!(found.len(), 1, "{manifest}: {found:?}");
    }
    let cli = dir.join(CLI);
    fs::create_dir_all(&cli).unwrap();
    fs::write(
        cli.join("Cargo.toml"),
        "[package]\nname = \"sluice\"\n\n[dependencies]\nsluice-dev-stack.workspace = true\n",
    )
    .unwrap();
    assert_eq!(problems(&dir, &workspace, CLI), Vec::<String>::new(), "the CLI may use local/");
    let dev_only = "[package]\nname = \"c\"\n\n[dev-dependencies]\nsluice-private-servers.workspace = true\n";
    fs::write(dir.join("crates/c0/Cargo.toml"), dev_only).unwrap();
    assert_eq!(problems(&dir, &workspace, "crates/c0"), Vec::<String>::new(), "tests may use local/");
    fs::remove_dir_all(&dir).unwrap();
}
